/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_semq.h - an async semaphore waiter's side of the server's waiter queue
 * (docs/runtime.md, "The semaphores' queue"), shared by a_semaphore.c and
 * a_psemaphore.c as kinds/sem_queue.h is by the blocking semaphores: the
 * client's wake channel redisson_sc:{name}:rlk:<cid>,
 * tickets (cid * 1024 + r), which messages count (a grant only when it
 * names the ticket), the semaphore's channel redisson_sc:{name} heard only
 * while first, when to attempt next (keepalive, after a reservation, at
 * the time an attempt was told), and the give-up's semaphore/cancel. What
 * an attempt sends and what its reply means stay in the kind's file.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_SEMQ_H
#define RLK_A_SEMQ_H

#include "async/engine.h"

#define RLK_A_SEMQ_LATER (-1)       /* rlk_a_semq_busy: the wake channel's confirmation attempts */
#define RLK_A_SEMQ_END (-2)         /* rlk_a_semq_busy: the request does not wait (on): it ends */

/* Something says the waiter should attempt (its own grant, a count on the
 * semaphore's channel while first, a subscription's confirmation). */
typedef void (*rlk_a_semq_poke_fn)(void *arg);

typedef struct rlk_a_semq {
    rlk_async *ac;
    rlk_a_semq_poke_fn poke;    /* called for the messages that count */
    void *poke_arg;
    char *name;                 /* the semaphore's key */
    char *channel;              /* redisson_sc:{name} */
    char *wake;                 /* redisson_sc:{name}:rlk:<cid>: this client's wake channel */
    long long ticket;           /* 0: no place in the queue (a single try, or not yet) */
    int queued;                 /* an attempt with the ticket may have queued it */
    rlk_ae_sub *sub;            /* the wake channel (a waiter) */
    rlk_ae_sub *s_wide;         /* redisson_sc:{name} while first in the queue */
    rlk_ae_timer *retry;        /* the next attempt (rlk_a_semq_retry): pokes */
} rlk_a_semq;

/* Fills q for the semaphore name of ac's client, its messages passed to
 * poke(arg) (NULL: q never listens, a release's keys only): 0, or -1 out of
 * memory (what was allocated stays in q: rlk_a_semq_free it). */
int rlk_a_semq_init(rlk_a_semq *q, rlk_async *ac, const char *name, rlk_a_semq_poke_fn poke,
                    void *arg);
/* Stops q's listeners and frees its names. */
void rlk_a_semq_free(rlk_a_semq *q);

/* The request is freed: rlk_a_semq_quiet, its call in flight forgotten
 * (rlk_ae_call_forget), rlk_a_semq_free. */
void rlk_a_semq_end(rlk_a_semq *q, rlk_ae_timer **deadline, rlk_ae_call *call);

/* The request is ending (or waiting no longer): stops q's retry timer, the
 * request's deadline timer and q's listeners, and sets them NULL. */
void rlk_a_semq_quiet(rlk_a_semq *q, rlk_ae_timer **deadline);
/* Pokes (q's poke) in ms (below 0: 0), instead of a retry armed before. */
void rlk_a_semq_retry(rlk_a_semq *q, long long ms);
/* Disarms q's retry: an attempt is under way. */
void rlk_a_semq_retry_stop(rlk_a_semq *q);

/* A waiter's listener on its wake channel (its messages go to q's poke)
 * and, for a bounded wait (wait_ms > 0), its deadline timer (deadline_fn,
 * arg) in *deadline; before its first attempt: a grant published after that
 * attempt is not missed. -1: out of memory or closing. */
int rlk_a_semq_listen(rlk_a_semq *q, long long wait_ms, rlk_ae_timer_fn deadline_fn, void *arg,
                      rlk_ae_timer **deadline);

/* The next attempt's ticket argument: 0 (none yet: a single try that does
 * not queue), t (may join the queue), -t (may be queued already). */
long long rlk_a_semq_arg(const rlk_a_semq *q);

/* Something says the request r may get on: 1 when it should attempt now
 * (rlk_a_common_wake: not when it has ended or a call is in flight, noted
 * in *again), and not while it holds a ticket whose wake channel is not
 * subscribed yet (an attempt then could queue a waiter that cannot hear its
 * grant; the confirmation pokes it). */
int rlk_a_semq_wake(const rlk_a_semq *q, const rlk_async_req *r, const rlk_ae_call *call,
                    int *again);

/* An attempt did not get the permits. Its ticket, when it had one, may be
 * queued now. waiting 0 (a single try, or the request is ending):
 * RLK_A_SEMQ_END. Else: first, in the queue (or first behind a
 * reservation: wait -3), hears the semaphore's channel, else not; wait is
 * -3 behind another's reservation, ms >= 0 until permits may come back by
 * themselves, or -1. Without a ticket yet (the fast try failed) it draws
 * one. *again: woken while the call was in flight (cleared here). Returns
 * the ms until the next attempt (0: now; at most the keepalive, 1 s), or
 * RLK_A_SEMQ_LATER (the wake channel's confirmation pokes it). */
long long rlk_a_semq_busy(rlk_a_semq *q, int waiting, long long wait, int first, int *again);

/* A waiter that ends without permits leaves the queue: semaphore/cancel of
 * its ticket for permits (a string), passing on a reservation made for it,
 * when an attempt may have queued it. The call (fn, arg: its reply does not
 * change how the request ends), or NULL: nothing to cancel, or it could not
 * be sent (the client is closing, out of memory). q->queued is 0 after. */
rlk_ae_call *rlk_a_semq_cancel(rlk_a_semq *q, long long permits, rlk_ae_reply_fn fn, void *arg);

#endif /* RLK_A_SEMQ_H */
