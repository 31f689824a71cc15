/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool.h - the client's connection pool (pool.c): slots handed out to one
 * thread at a time, made ready (reconnect, reload scripts) on checkout, and
 * the retry rule of one operation.
 *
 * Pool connections are handed out by rlk_pool_checkout() and returned by
 * rlk_pool_checkin(); the slots are guarded by the client's pool_mu.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_POOL_H
#define RLK_POOL_H

#include <hiredis/hiredis.h>

#include "rlk.h"

/* One pool slot. ctx == NULL: not connected (never yet, or dropped). */
typedef struct rlk_slot {
    redisContext *ctx;
    int busy;           /* checked out by a thread */
    int dropped;        /* had a connection that was dropped: reload scripts on reconnect */
} rlk_slot;

/* Blocks until a slot is free and returns it, busy. Never returns NULL. */
rlk_slot *rlk_pool_checkout(rlk_client *c);
void rlk_pool_checkin(rlk_client *c, rlk_slot *slot);

/* Makes slot->ctx usable: drops it when rlk_conn_alive says it is broken,
 * connects when there is none, and after a reconnect (a slot that had a
 * connection before) reloads the scripts unless no_preload. */
int rlk_slot_ready(rlk_client *c, rlk_slot *slot);
/* Closes slot->ctx after a connection error. */
void rlk_slot_drop(rlk_slot *slot);

/* One operation on a connection, for rlk_pool_run. Returns an rlk code;
 * sets *written as rlk_conn_command does. */
typedef int (*rlk_conn_op)(rlk_client *c, redisContext *ctx, void *arg,
                           redisReply **reply, int *written);

/* Checks out a slot, makes it ready and runs op on it, with the client's
 * retry rule: after a connection error the connection is dropped, and the
 * operation is tried once more on a new connection when it is known not to
 * have run (connect refused/reset, connection found closed before the
 * write, write failed) or when idempotent is nonzero. No retry after a
 * timeout. Returns op's result. */
int rlk_pool_run(rlk_client *c, rlk_conn_op op, void *arg, int idempotent,
                 redisReply **reply);

/* A per-thread time limit (CLOCK_MONOTONIC ns, 0: none) that cuts the
 * connect and command timeouts of every call the thread makes through a
 * pool: a wait of wait_ms ends on time even against a server that stopped
 * answering. rlk_time_limit_enter sets the earlier of the current limit and
 * until_ns (0: keeps the current) and returns the previous one for
 * rlk_time_limit_leave. */
long long rlk_time_limit_enter(long long until_ns);
void rlk_time_limit_leave(long long previous);
/* base cut to what is left of the limit (at least 1 ms); 0 when there is no
 * limit or base is shorter, 1 when cut, -1 when the limit has passed. */
int rlk_time_limit_tv(struct timeval base, struct timeval *out);

#endif /* RLK_POOL_H */
