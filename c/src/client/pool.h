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
    int identified;             /* rlk_slot_identify ran on ctx (first call on it) */
    long long server_id;        /* CLIENT ID of ctx on the server; 0: unknown */
    char conn_name[32];         /* its CLIENT SETNAME: "rlk-pool-<16 random hex digits>" */
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
/* 1 for the codes of a failed connection (I/O, timeout, protocol). */
int rlk_pool_conn_error(int rc);

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
/* rlk_pool_run of one idempotent command (rlk_conn_command's arguments): *reply may be an
 * error reply. */
int rlk_pool_command(rlk_client *c, const char *what, int argc, const char **argv,
                     const size_t *lens, redisReply **reply);

/* ---------------------------------------------------------------- lost replies (pool_fence.c) */

/* A pool connection whose request was written and whose reply was lost
 * (timeout, or the connection broke after the write): the request may have
 * run, may still be waiting in the server's socket buffer, or may never
 * run. docs/runtime.md "Lost replies" gives the ordering argument. */
typedef struct rlk_lost_conn {
    long long id;               /* the connection's CLIENT ID; 0: unknown (cannot be fenced) */
    char name[32];              /* its unique CLIENT SETNAME (ids restart with the server) */
    rlk_client *via;            /* the cluster node client it was on; NULL: the client's own */
} rlk_lost_conn;

/* Called by rlk_pool_run: notes (or clears, slot NULL) the calling
 * thread's lost reply on c. */
void rlk_pool_note_lost(rlk_client *c, const rlk_slot *slot);
/* Notes lc as the calling thread's lost reply on c (a cluster call's, made
 * through a node client). */
void rlk_pool_note_lost_conn(rlk_client *c, const rlk_lost_conn *lc);
/* 1 and *out when the calling thread's last pool call on c lost its reply
 * after writing its request; clears the note. 0 otherwise. */
int rlk_pool_lost_reply(rlk_client *c, rlk_lost_conn *out);
/* Names a new pool connection (CLIENT SETNAME rlk-pool-<random>) and
 * fetches its server id (CLIENT ID), pipelined in one round trip; leaves
 * server_id 0 when the server refuses either (ACL). */
int rlk_slot_identify(rlk_client *c, rlk_slot *slot);
/* Fences the lost request from another connection: CLIENT LIST ID <id>;
 * when that client is still there under our name, CLIENT KILL ID <id>.
 * Repeated (connection errors, timeouts) for up to budget_ms. Once it
 * returns RLK_OK the lost request has run or never will: Redis runs
 * commands on one thread, and a killed (or gone) client's unread or
 * unparsed input is discarded. RLK_ERR_SERVER when the id is unknown or
 * the server refuses CLIENT; a connection error when the budget ran out. */
int rlk_pool_fence(rlk_client *c, const rlk_lost_conn *lc, long long budget_ms);

#endif /* RLK_POOL_H */
