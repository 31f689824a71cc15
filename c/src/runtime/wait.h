/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wait.h - the one wait loop (wait.c): a waiter joins its channel on the
 * client's subscriber (sub.h), behind the process-wide local queue (lq.h)
 * when it has one, attempts once the subscription is confirmed, and sleeps
 * until a message, a reconnect, the attempt's bound or its deadline.
 *
 * Times are CLOCK_MONOTONIC nanoseconds (client/clock.h); a deadline of -1
 * means "no deadline".
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_WAIT_H
#define RLK_WAIT_H

#include "runtime/fam.h"
#include "runtime/lq.h"
#include "runtime/rt.h"

/* One attempt of a waiter. RLK_OK: done. RLK_ERR_BUSY (no error recorded):
 * not yet; *bound_ms is how long at most before it may succeed without any
 * message (the holder's TTL, a permit's expiry; 0 counts as 1), -1 when only
 * a message can change the outcome. Another code: an error, recorded. */
typedef int (*rlk_wait_attempt_fn)(void *arg, long long *bound_ms);

/* *bound_ms of an attempt that asks to be made again after the waiter's
 * recheck_ms: not a holder's TTL (no ttl_wakeups when it runs out). */
#define RLK_WAIT_RECHECK (-3)

/* How a kind waits (rlk_wait_init / _lock fill it). The fields after arg
 * are the differences between the kinds; each kind sets them where it
 * waits and says why. */
typedef struct rlk_waiter {
    rlk_rt *rt;
    const char *channel;
    rlk_wait_attempt_fn attempt;
    void *arg;
    rlk_lq *q;          /* the process-wide local FIFO of the lock: only its head subscribes
                           and attempts. NULL: every waiter does */
    const char *what;   /* with name: the waiter in errors ("fenced lock", name); needed with q */
    const char *name;
    int ride_out;       /* a connection error of an attempt while the subscriber is down too
                           is an outage: keep polling up to the connect timeout (only for
                           attempts that are safe to repeat after a lost reply) */
    int count_ttl;      /* a sleep that ran out on the attempt's bound counts as ttl_wakeups
                           (the bound is a lock holder's TTL) */
    const int *not_ttl; /* with count_ttl: set by the attempt when its bound is not a holder's
                           TTL (a reader behind a writer's reservation: the claim window, which
                           no message ends): no ttl_wakeups when it runs out. NULL: always is */
    int pass_on;        /* on leaving with success or an error, add a permit to the channel
                           for the next local waiter */
    int first_failed;   /* the transient failure of an attempt made before the wait (0: none):
                           returned, instead of RLK_ERR_BUSY, if no attempt runs before the
                           deadline */
    rlk_sub_ticket *ticket;     /* the reentrant lock's waiter ticket (reentrant/acquire puts it
                                   in the server's queue; NULL: none): registered on the channel
                                   so that only a grant naming it wakes this waiter */
    long long keepalive_ms;     /* with ticket: attempt at least this often (a waiter whose
                                   queue entry was lost, or two dead waiters at the head) */
    long long recheck_ms;       /* the sleep after an attempt whose bound is RLK_WAIT_RECHECK
                                   (the reentrant lock: first in the queue behind another
                                   ticket's reservation, the claim window) */
    int pre_join;               /* without ticket: rlk_wait_pre_join joins too (the fair lock:
                                   a channel of this waiter's own, so a subscription that is
                                   confirmed before the first attempt misses no wake-up) */
    rlk_sub_chan *pre_ch;       /* joined by rlk_wait_pre_join before the first attempt (the
                                   channel was subscribed already): that attempt counts as one
                                   made once subscribed, unless the local queue made it wait */
    unsigned long long pre_mark;
    long long first_bound;      /* with pre_ch: the first attempt's bound */
    rlk_lq_node *entered;       /* with q: the caller entered the local queue already (and is its
                                   head): the wait uses this node, rlk_wait_acquire leaves it when
                                   no wait follows. Only a head may hold a server ticket. */
    const char *wide_channel;   /* with wide: a second channel (the reentrant lock's own, while
                                   channel is the client's wake channel), joined once an
                                   attempt sets *wide, then attempted on and slept on instead */
    const int *wide;            /* NULL: one channel */
    rlk_sub_chan *pre_wch;      /* wide_channel joined by rlk_wait_pre_join (lingering) */
    unsigned long long pre_wmark;
    int wide_early;             /* with wide: join wide_channel before the first attempt too
                                   (the waiter expects to be first) */
    const rlk_sub_rule *rule;   /* what messages on its channels mean (sub.h; NULL: plain, "0"
                                   wakes one, anything else all): the reentrant lock's reads
                                   its grants */
} rlk_waiter;

/* The ticket argument of an attempt of a waiter with ticket t (NULL: 0), for the scripts that
 * take "0 never queue; t > 0 new waiter (tail); -t queued already": -ticket when an earlier
 * attempt may have queued it (queued), the ticket when the waiter's channel subscription is
 * confirmed (t->joined, set by rlk_wait_acquire before each attempt), else 0, a single try. So a
 * ticket is queued only once a grant on the wake channel reaches its waiter (docs/runtime.md,
 * "Who is queued when"); an attempt sent with 0 queued nothing, even when its reply was lost. */
long long rlk_wait_ticket_arg(const rlk_sub_ticket *t, int queued);

/* Before a first attempt of a waiter with a ticket: joins its channel when
 * it is subscribed already (lingering after an earlier wait) and registers
 * the ticket, so that the first attempt needs no second one after a
 * SUBSCRIBE. No I/O. */
void rlk_wait_pre_join(rlk_waiter *w);

/* A waiter on b's channel with every difference off (as a semaphore
 * waits); what names it in errors. */
void rlk_wait_init(rlk_waiter *w, const rlk_fam_base *b, const char *what,
                   rlk_wait_attempt_fn attempt, void *arg);
/* The same as a lock waits (reentrant, fenced, fair, read-write): the
 * attempt's bound is the holder's TTL (count_ttl), and outages are ridden
 * out (ride_out: an acquire repeated after a lost reply is at worst a
 * re-entry, which the release reconciles; docs/runtime.md). */
void rlk_wait_init_lock(rlk_waiter *w, const rlk_fam_base *b, const char *what,
                        rlk_wait_attempt_fn attempt, void *arg);

/* The deadline of a wait of wait_ms from start_ns: -1 (none) when wait_ms
 * < 0; wait_ms capped at 10^12. */
long long rlk_wait_deadline(long long start_ns, long long wait_ms);

/* An acquire of wait_ms from start_ns, the thread's time limit cut to its deadline (no connect
 * or command of an attempt outlasts it): with first, one attempt straight away (wait_ms == 0:
 * that is all; without first, wait_ms must not be 0), then the wait (behind the local queue when
 * w->q): join w->channel, attempt once the subscription is confirmed (no release published after
 * the attempt is missed), sleep until a message, a subscriber reconnect, the attempt's bound,
 * the 100 ms poll while the subscriber is down, or the deadline; again. RLK_OK, the attempt's
 * error, or RLK_ERR_BUSY (the deadline passed; no error recorded). */
int rlk_wait_acquire(rlk_waiter *w, long long start_ns, long long wait_ms, int first);

#endif /* RLK_WAIT_H */
