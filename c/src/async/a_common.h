/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_common.h - what the kinds' requests (the a_*.c files) share on top of
 * the engine (engine.h): the checks every request makes first, the budget
 * and retry time of calls that never went out or lost their reply, a
 * waiter's wake-up while a call may be in flight, its next attempt and its
 * listeners, and the stop of its timers and listeners when it ends. Only
 * the logic the kinds have in common lives here; their messages and what a
 * wake-up or an end means stay in the kind's file.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_COMMON_H
#define RLK_A_COMMON_H

#include <stddef.h>

#include "rlk_async.h"
#include "runtime/fam_hold.h"
#include "engine/engine.h"

#define RLK_A_RETRY_MS 20           /* a call that never went out is sent again after this */
#define RLK_A_KEEPALIVE_MS 1000     /* a waiter attempts (or reads) at least this often */
#define RLK_A_RECHECK_MS (RLK_FAM_CLAIM_MS + 5)     /* first in a queue behind another's
                                                       reservation (-3): its claim window */

/* What every kind's request state starts with, as its first member named h
 * (a->h.ac, a->h.r, a->h.start): the client, the request, and its start
 * (monotonic ms). The head is a real member, written through its own
 * type (not a layout each kind repeats and the common code reads through
 * another type). */
typedef struct rlk_a_head {
    rlk_async *ac;
    rlk_async_req *r;
    long long start;
} rlk_a_head;

/* One more of a counter of rlk_metrics (engine/counters.h, which the user
 * includes) of the client of head, an rlk_a_head: the lost replies and their
 * outcomes, which the blocking API counts in runtime/fam_settle.c. */
#define RLK_A_COUNT(head, f) do { rlk_rt_counters *k_ = rlk_ae_counters((head).ac); \
                                  if (k_) RLK_COUNT(k_, f); } while (0)

/* A new request and its zeroed state of size bytes, whose rlk_a_head at
 * head_offset (offsetof(type, h)) is set: ac, the request, the start now.
 * Returns the state (of the kind's type: the head is one of its members,
 * written as such). NULL: no client, or out of memory (no callback will
 * come). */
void *rlk_a_common_new(rlk_async *ac, size_t size, size_t head_offset, rlk_async_fn fn,
                       void *privdata);
/* rlk_a_common_new for a state type with its member h. */
#define RLK_A_NEW(ac, type, fn, privdata) \
    rlk_a_common_new((ac), sizeof(type), offsetof(type, h), (fn), (privdata))

/* The ms since the request started (h->start). */
long long rlk_a_common_elapsed(const rlk_a_head *h);

/* v[0..n) followed by tail (NULL-terminated; NULL: none) in a new array
 * (free() it), their number in *total; NULL: out of memory. A call's
 * arguments with a list after them (the faster MultiLock's values). */
const char **rlk_a_common_join(const char *const *v, int n, char *const *tail, int *total);

/* free() of n pointers (NULL ones too): a request's strings when it is freed. */
void rlk_a_common_free(int n, ...);

/* Marks the callback parameters a kind's callback does not read, in one
 * statement (passing them is their use). */
static inline void rlk_a_unused(int n, ...)
{
    (void)n;
}

/* Sets r's hooks, then the checks every request makes before its own, in
 * this order: the client is closing (rlk_ae_req_new completed r already),
 * the client's fatal error (r completed with it), a NULL or empty name
 * (RLK_ERR_ARG "<who>: a name is required"; who NULL: no name to check).
 * Called once the kind's state is set up (the hooks may see it). 1: r is
 * completed (send nothing); 0: go on. */
int rlk_a_common_begin(rlk_async_req *r, rlk_ae_cancel_fn cancel, rlk_ae_free_fn free_fn,
                       const char *who, const char *name);

/* How long a request keeps trying through calls that never went out, lost
 * replies and reconnects: its wait (wait_ms > 0), then two command timeouts
 * and a connect; a wait without bound (-1) rides out any outage
 * (LLONG_MAX). Counted from the request's start. */
long long rlk_a_common_budget(rlk_async *ac, long long wait_ms);

/* lo <= v <= hi: 0; else r completes with RLK_ERR_ARG and the blocking
 * kinds' message (runtime/fam.h, rlk_fam_range_text: "<what> <name>:
 * <field> <v> is not in lo..hi"; name NULL: none) and 1. */
int rlk_a_common_range(rlk_async_req *r, const char *what, const char *name, const char *field,
                       long long v, long long lo, long long hi);
/* A lock's wait_ms (-1: for ever, 0: one try, 1..10^12) and lease_ms (-1:
 * the watchdog's, 1..10^12), as rlk_a_common_range: 1 when r completed. */
int rlk_a_common_lock_args(rlk_async_req *r, const char *what, const char *name,
                           long long wait_ms, long long lease_ms);
/* A waiter's wake-ups: the member w of a request that attempts (a lock's, a
 * semaphore's) or reads (the latch's await, the election's observer) again
 * until it gets on. Its retry timer, a message on a channel it listens on
 * (on grants: only one that grants its ticket, by rule) and a
 * subscription's confirmation poke it (rlk_a_wait_poke); its deadline ends
 * it. Its hooks take arg, the request's state. */
typedef void (*rlk_a_wait_fn)(void *arg);
typedef struct rlk_a_wait {
    rlk_a_head *h;                  /* the request's head: its client and request */
    void *arg;
    rlk_a_wait_fn go;               /* attempt (or read) now */
    rlk_a_wait_fn timeout;          /* the deadline passed with no call in flight */
    const struct rlk_sub_rule *rule;    /* what a message on grants grants */
    const char *grants;             /* where grants name their ticket; NULL: none */
    rlk_ae_call *call;              /* the call in flight */
    rlk_ae_timer *retry, *deadline;
    rlk_ae_sub *sub;                /* its listener (rlk_a_wait_listen) */
    rlk_ae_sub *wide;               /* a queued waiter's second one (rlk_a_wait_wide) */
    long long ticket;               /* its place in the server's queue; 0: none */
    const char *owner;              /* its holder id: a held grant must name it (NULL: none) */
    unsigned long long wait;        /* its wait's number (kinds/names.h rlk_names_wait_id): a
                                       held grant must name it too */
    int held;                       /* a held grant named its ticket (RLK_SUB_MSG_HELD): the
                                       lock is its owner's; its next attempt sends nothing */
    int again;                      /* woken while a call was in flight */
    int ending;                     /* RLK_ERR_*: end at the next chance (the deadline's
                                       RLK_ERR_BUSY while a call was in flight; a cancel) */
} rlk_a_wait;

/* Sets w up for the request of head h whose state is arg, with its hooks. */
void rlk_a_wait_init(rlk_a_wait *w, rlk_a_head *h, void *arg, rlk_a_wait_fn go,
                     rlk_a_wait_fn timeout);

/* Something says the waiter may get on: go, unless the request has ended, a
 * call is in flight (noted in again: its reply attempts again at once rather
 * than after its keepalive, since the message may postdate it) or it holds a
 * ticket whose listener is not subscribed yet (an attempt then could queue
 * a waiter that cannot hear its grant; the confirmation pokes it). */
void rlk_a_wait_poke(rlk_a_wait *w);
/* Pokes in ms (below 0: at once, from the loop), instead of a retry armed before. */
void rlk_a_wait_retry(rlk_a_wait *w, long long ms);

/* When a waiter turned away attempts next, in ms: at once when woken while
 * its call was in flight (again, then cleared), else after ms (the wait its
 * attempt told; below 0: none), at most cap. */
long long rlk_a_wait_next(rlk_a_wait *w, long long ms, long long cap);
/* A ticketed waiter's next attempt after a busy one: without a ticket yet (the fast try
 * failed), it takes ticket (0: none, it waits without a place in the queue) and attempts once
 * subscribed (the confirmation pokes it); else again in ms (-3: behind a reservation, its
 * claim window; -1: none told), at most the keepalive, at once when woken meanwhile. */
void rlk_a_wait_busy(rlk_a_wait *w, long long ticket, long long ms);

/* The waiter's listener on channel (NULL: none, a spinning wait), then for
 * a bounded wait (wait_ms > 0) its deadline wait_ms from now. Called before
 * the first attempt: a wake-up published after that attempt is then not
 * missed (the subscription's confirmation pokes it). -1: out of memory or
 * closing (the caller completes the request); 0: done. */
int rlk_a_wait_listen(rlk_a_wait *w, const char *channel, long long wait_ms);

/* A queued waiter's second listener, on the lock's or semaphore's own
 * channel: joined while want (first in the queue, or behind a reservation),
 * left otherwise. */
void rlk_a_wait_wide(rlk_a_wait *w, int want, const char *channel);

/* Stops the waiter's timers and listeners (the request is ending, or being
 * freed). */
void rlk_a_wait_quiet(rlk_a_wait *w);

/* r ends because a call could not be sent: RLK_ERR_CLOSED "<what> <name>:
 * client freed" when the client is closing, else RLK_ERR_NOMEM "<what>
 * <name>: out of memory" (name NULL: "<what>: ..."). */
void rlk_a_common_unsent(rlk_async_req *r, const char *what, const char *name);

#endif /* RLK_A_COMMON_H */
