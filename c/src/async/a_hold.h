/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_hold.h - the async client's table of holds (a_hold.c): one entry per
 * (kind, name, owner) this client holds through the lock kinds' requests
 * (a_lock.h) and the election (a_elect.c), with its count, lease, token,
 * lock-delay and watchdog entry. The blocking API's counterpart is the
 * registry of runtime/wd.h.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_HOLD_H
#define RLK_A_HOLD_H

#include "rlk_async.h"
#include "kinds/proto.h"
#include "async/ae_wd.h"

/* One hold of this client: (kind, name, owner) and its count. */
typedef struct rlk_a_hold {
    struct rlk_a_hold *next;
    int kind;
    char *name;
    char *owner;
    long long count;
    long long lease_ms;             /* the lease of the last acquisition */
    rlk_ae_hold *wd;                /* the watchdog's, lease-less holds; else NULL */
    long long acquired_ns;          /* the count went from 0 to 1 (the hold metric) */
    const rlk_proto *row;          /* the row it was taken with (its re-entries, its release) */
    long long delay_ms;             /* its lock-delay (rlk_lock_delay_row), kept by both */
    long long token;                /* an RLK_PROTO_TOKEN row's token (the election's term) */
    long long expires_ms;           /* a fixed lease's end (monotonic ms from the acquire's send:
                                       no later than the server's); 0: the watchdog renews it */
} rlk_a_hold;

/* The hold (kind, name, owner); NULL when none, or when its fixed lease has run out (then it
 * is forgotten). _get: made (count 0) when there is none; NULL: out of memory. */
rlk_a_hold *rlk_a_hold_find(rlk_async *ac, int kind, const char *name, const char *owner);
rlk_a_hold *rlk_a_hold_get(rlk_async *ac, int kind, const char *name, const char *owner);
void rlk_a_hold_drop(rlk_async *ac, rlk_a_hold *h);     /* and from the watchdog */
void rlk_a_hold_lost(rlk_async *ac, rlk_ae_hold *wd, void *arg);    /* the watchdog's report */
/* Drops this client's holds of name that row k's force script cleared. */
void rlk_a_hold_drop_forced(rlk_async *ac, const char *name, const rlk_proto *k);
/* The hold count ac's table has for (kind, name, task): 0 when none (the tests, the
 * MultiLock requests); _token: 1 and *token (0 for a kind without) when it has a hold, else
 * 0. No I/O. */
long long rlk_a_hold_count(rlk_async *ac, int kind, const char *name, unsigned long long task);
int rlk_a_hold_token(rlk_async *ac, int kind, const char *name, unsigned long long task,
                     long long *token);

#endif /* RLK_A_HOLD_H */
