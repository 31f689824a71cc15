/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wait.c - the one wait loop (wait.h) of every kind that waits for a
 * release: the lock kinds, the semaphores and the count-down latch.
 * docs/runtime.md describes the algorithm and why no wake-up is lost.
 */
#include <stdio.h>
#include <string.h>

#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "runtime/fam.h"
#include "runtime/fam_settle.h"
#include "runtime/lq.h"
#include "engine/metrics.h"
#include "runtime/rt.h"
#include "runtime/sub.h"
#include "runtime/wait.h"

#define RLK_WAIT_POLL_NS (100LL * 1000000LL)    /* retry period while the subscriber is down */
#define RLK_WAIT_BACKOFF_MIN_MS 50LL            /* retry after a transient failure: 50 ms, */
#define RLK_WAIT_BACKOFF_MAX_MS 1000LL          /* doubling up to 1 s */

void rlk_wait_init(rlk_waiter *w, const rlk_fam_base *b, const char *what,
                   rlk_wait_attempt_fn attempt, void *arg)
{
    memset(w, 0, sizeof *w);
    w->rt = b->rt;
    w->channel = b->channel;
    w->attempt = attempt;
    w->arg = arg;
    w->what = what;
    w->name = b->name;
}

void rlk_wait_init_lock(rlk_waiter *w, const rlk_fam_base *b, const char *what,
                        rlk_wait_attempt_fn attempt, void *arg)
{
    rlk_wait_init(w, b, what, attempt, arg);
    w->ride_out = 1;
    w->count_ttl = 1;
}

long long rlk_wait_deadline(long long start_ns, long long wait_ms)
{
    if (wait_ms < 0)
        return -1;
    if (wait_ms > RLK_NUM_MAX)
        wait_ms = RLK_NUM_MAX;
    return start_ns + wait_ms * RLK_NS_PER_MS;
}

/* How long to sleep after a failed attempt: its bound (a lock that expires,
 * a permit that expires, wakes nobody), the poll period while the
 * subscriber is down, and the caller's deadline. *by_bound tells whether
 * the attempt's bound is what ends the sleep. */
static long long rlk_wait_sleep_until(long long bound_ms, int sub_down, long long deadline,
                                      int *by_bound)
{
    long long now = rlk_clock_now_ns();
    long long until = bound_ms >= 0 ? now + (bound_ms > 0 ? bound_ms : 1) * RLK_NS_PER_MS : -1;

    *by_bound = bound_ms >= 0;
    if (sub_down && (until < 0 || now + RLK_WAIT_POLL_NS < until)) {
        until = now + RLK_WAIT_POLL_NS;
        *by_bound = 0;
    }
    if (deadline >= 0 && (until < 0 || deadline <= until)) {
        until = deadline;
        *by_bound = 0;
    }
    return until;
}

/* 1 when an attempt's failure is worth waiting out while the wait has time
 * left: a reply that says "not now" and changed nothing (LOADING while a
 * restarted server reads its AOF, BUSY behind a long script, TRYAGAIN,
 * CLUSTERDOWN, MASTERDOWN), and for kinds whose attempt is safe to repeat
 * after a lost reply (ride_out) a lost connection or a timeout: a server
 * restart or a stall. */
static int rlk_wait_transient(const rlk_waiter *w, int rc)
{
    if (rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_UNSETTLED)
        return w->ride_out;     /* an unsettled acquire is settled by the next one that runs */
    return rlk_err_is_transient_reply(w->rt->c);
}

/* RLK_ERR_INTERRUPTED (recorded) after rlk_interrupt_waits, else RLK_OK. */
static int rlk_wait_interrupted(const rlk_waiter *w)
{
    if (!atomic_load(&w->rt->interrupted))
        return RLK_OK;
    return rlk_set_error(w->rt->c, RLK_ERR_INTERRUPTED, "%s %s: wait interrupted", w->what,
                         w->name);
}

long long rlk_wait_ticket_arg(const rlk_sub_ticket *t, int queued)
{
    if (!t || !t->ticket)
        return 0;
    if (queued)
        return -t->ticket;
    return t->joined ? t->ticket : 0;
}

void rlk_wait_pre_join(rlk_waiter *w)
{
    if ((!w->ticket && !w->pre_join) ||
        !rlk_sub_try_join(w->rt->sub, w->channel, w->rule, &w->pre_ch, &w->pre_mark))
        return;
    if (w->ticket)
        rlk_sub_ticket_add(w->rt->sub, w->pre_ch, w->ticket);
    if (w->wide)    /* lingering too: the first attempt counts for it as well */
        (void)rlk_sub_try_join(w->rt->sub, w->wide_channel, w->rule, &w->pre_wch, &w->pre_wmark);
}

/* Undoes rlk_wait_pre_join when no wait follows (acquired, or no wait). */
static void rlk_wait_pre_leave(rlk_waiter *w)
{
    if (w->pre_wch) {
        rlk_sub_leave_now(w->rt->sub, w->pre_wch);
        w->pre_wch = NULL;
    }
    if (!w->pre_ch)
        return;
    if (w->ticket)
        rlk_sub_ticket_remove(w->rt->sub, w->pre_ch, w->ticket);
    rlk_sub_leave(w->rt->sub, w->pre_ch);
    w->pre_ch = NULL;
}

/* The end of a wait at its deadline: failed (the last attempt's transient
 * error, recorded) or RLK_ERR_BUSY; but RLK_ERR_UNSETTLED when an attempt
 * of this wait left its outcome unsettled and it still is (it may yet take
 * the lock: "held by another" would not be the truth). */
static int rlk_wait_give_up(const rlk_waiter *w, int failed, const char *unsettled)
{
    if (unsettled[0] && rlk_fam_doubt_pending(w->rt->c))
        return rlk_set_error(w->rt->c, RLK_ERR_UNSETTLED, "%s", unsettled);
    return failed != RLK_OK ? failed : RLK_ERR_BUSY;
}

/* On a joined channel: ready, attempt, sleep; until the attempt succeeds
 * (RLK_OK), fails (its error) or the deadline passes (RLK_ERR_BUSY). With
 * skip_first, the first attempt was made already, once subscribed
 * (w->pre_mark, w->first_bound): the loop starts with the sleep. */
static int rlk_wait_loop(const rlk_waiter *w, rlk_sub_chan *ch, rlk_sub_chan **wch,
                         long long deadline, int skip_first)
{
    char unsettled[RLK_ERRSTR_MAX] = "";    /* the message of an unsettled attempt */
    rlk_sub *sub = w->rt->sub;
    long long backoff = 0;
    long long woke_ns = 0;  /* metrics: when a message ended the last sleep (0: none) */
    int slept = 0;          /* metrics: this loop slept at least once */
    int failed = w->first_failed;    /* the transient failure of the last attempt, returned at the
                               deadline instead of RLK_ERR_BUSY (its error is recorded) */

    for (;;) {
        unsigned long long mark, wmark = 0;
        long long bound = -1, until;
        int ready, by_bound, rc, recheck, wide, keepalive;

        if ((rc = rlk_wait_interrupted(w)) != RLK_OK)
            return rc;
        if (skip_first) {
            skip_first = 0;
            ready = RLK_SUB_READY;
            mark = w->pre_mark;
            wmark = w->pre_wmark;
            bound = w->first_bound;
            rc = RLK_ERR_BUSY;
        } else {
            ready = rlk_sub_ready(sub, ch, deadline, &mark);
            if (*wch && ready == RLK_SUB_READY)     /* both subscribed before the attempt */
                ready = rlk_sub_ready(sub, *wch, deadline, &wmark);
            if ((rc = rlk_wait_interrupted(w)) != RLK_OK)
                return rc;
            if (ready == RLK_SUB_TIMEOUT)
                return rlk_wait_give_up(w, failed, unsettled);
            if (w->ticket)  /* the ticket queues only while a grant can reach this waiter */
                w->ticket->joined = ready == RLK_SUB_READY;
            rc = w->attempt(w->arg, &bound);
        }
        if (rc == RLK_OK && slept)
            rlk_metrics_acquired_waiting(&w->rt->counters, woke_ns);
        wide = w->wide && *w->wide;
        if (rc == RLK_ERR_BUSY && !wide && *wch) {
            /* Joined early on a hint, but not first after all: out again, or every
             * handoff's "0" would wake this client for nothing. */
            rlk_sub_leave_now(sub, *wch);
            *wch = NULL;
        }
        if (rc == RLK_ERR_BUSY && wide && !*wch) {
            /* First in the queue: the lock's channel too, subscribed before the next attempt
             * (a release that grants nobody is heard only there). */
            if ((rc = rlk_sub_join(sub, w->wide_channel, w->rule, wch)) != RLK_OK)
                return rc;
            continue;
        }
        recheck = rc == RLK_ERR_BUSY && bound == RLK_WAIT_RECHECK;
        if (recheck) {
            bound = w->recheck_ms;
            RLK_RT_COUNT(w->rt, rechecks);
        }
        failed = RLK_OK;
        if (rc == RLK_ERR_UNSETTLED)
            snprintf(unsettled, sizeof unsettled, "%s", rlk_errstr(w->rt->c));
        if (rc != RLK_OK && rc != RLK_ERR_BUSY && rlk_wait_transient(w, rc)) {
            failed = rc;
            backoff = backoff ? backoff * 2 : RLK_WAIT_BACKOFF_MIN_MS;
            if (backoff > RLK_WAIT_BACKOFF_MAX_MS)
                backoff = RLK_WAIT_BACKOFF_MAX_MS;
            bound = backoff;    /* keep waiting, retry after the back-off */
        } else if (rc != RLK_ERR_BUSY) {
            return rc;
        } else {
            backoff = 0;
        }
        keepalive = w->ticket && w->keepalive_ms > 0 && (bound < 0 || bound > w->keepalive_ms);
        if (keepalive)  /* a queued waiter's attempt to stay queued: not a holder's TTL */
            bound = w->keepalive_ms;
        until = rlk_wait_sleep_until(bound, ready == RLK_SUB_DOWN, deadline, &by_bound);
        if (deadline >= 0 && rlk_clock_now_ns() >= deadline)
            return rlk_wait_give_up(w, failed, unsettled);  /* no sleep, no attempt past
                                                               the caller's deadline */
        wide = wide && *wch && ready == RLK_SUB_READY;     /* sleep there: its "0" wakes */
        slept = 1;
        woke_ns = 0;
        if (rlk_sub_wait(sub, wide ? *wch : ch, wide ? wmark : mark, until, w->ticket) !=
            RLK_SUB_TIMEOUT)
            woke_ns = rlk_clock_now_ns();
        else if (!atomic_load(&w->rt->interrupted)) {
            if (by_bound && w->count_ttl && failed == RLK_OK && !recheck && !keepalive &&
                !(w->not_ttl && *w->not_ttl))
                RLK_RT_COUNT(w->rt, ttl_wakeups);
            if (until == deadline)
                return rlk_wait_give_up(w, failed, unsettled);
        }
    }
}

/* The wait of rlk_wait_acquire after its first attempt (wait.h), within its time limit: enters
 * w->q unless entered already, joins w->channel (as the queue's head), runs the loop, passes a
 * permit on when asked, and leaves the queue, then the channel. */
static int rlk_wait(rlk_waiter *w, long long deadline)
{
    rlk_sub *sub = w->rt->sub;
    rlk_sub_chan *ch = w->pre_ch, *wch = w->pre_ch ? w->pre_wch : NULL;
    rlk_lq_node own, *node = w->entered;   /* entered: with q only */
    int rc;

    if (w->q && !node) {
        if ((rc = rlk_lq_enter(w->q, &own, deadline)) != RLK_OK) {
            rlk_wait_pre_leave(w);
            if (rc == RLK_ERR_NOMEM)
                return rlk_set_error(w->rt->c, rc, "%s %s: out of resources for a waiter",
                                     w->what, w->name);
            return rc;  /* RLK_ERR_BUSY: the deadline passed before this thread was head */
        }
        node = &own;
    }
    if ((rc = ch ? RLK_OK : rlk_sub_join(sub, w->channel, w->rule, &ch)) != RLK_OK) {
        if (node)
            rlk_lq_leave(w->q, node);
        return rc;
    }
    if (w->ticket && !w->pre_ch)
        rlk_sub_ticket_add(sub, ch, w->ticket);
    if (w->wide && w->wide_early && !wch &&
        rlk_sub_join(sub, w->wide_channel, w->rule, &wch) != RLK_OK)
        wch = NULL;     /* joined at the attempt that says first, as without the hint */
    if (node)
        rlk_lq_set_sub(w->q, node, sub, ch);
    rc = rlk_wait_loop(w, ch, &wch, deadline, w->pre_ch && !(node && node->waited));
    if (rc != RLK_ERR_BUSY && w->pass_on)   /* an error must not swallow a permit either */
        rlk_sub_poke(sub, ch);
    if (node)
        rlk_lq_leave(w->q, node);   /* first: the next head may share the subscription */
    if (w->ticket)
        rlk_sub_ticket_remove(sub, ch, w->ticket);
    if (wch)
        rlk_sub_leave_now(sub, wch);    /* no lingering there: every handoff's "0" would wake us */
    rlk_sub_leave(sub, ch);
    return rc;
}

int rlk_wait_acquire(rlk_waiter *w, long long start_ns, long long wait_ms, int first)
{
    long long bound = -1, deadline = rlk_wait_deadline(start_ns, wait_ms);
    long long limit = rlk_time_limit_enter(wait_ms > 0 ? deadline : 0);
    int rc = RLK_ERR_BUSY;

    if (first) {
        /* A first attempt refused with LOADING, BUSY ... is waited out; a
         * server that cannot be reached at all is an error at once (only a
         * wait already under way rides out a lost connection). Made before
         * the waiter has subscribed (unless rlk_wait_pre_join found its
         * channel subscribed), it does not queue a ticket: a grant in the
         * window would reach nobody, and the waiter be dropped as dead. */
        if (w->ticket)
            w->ticket->joined = w->pre_ch != NULL;
        rc = w->attempt(w->arg, &bound);
        if (rc != RLK_ERR_BUSY &&
            (rc == RLK_OK || wait_ms == 0 || !rlk_err_is_transient_reply(w->rt->c)))
            wait_ms = 0;        /* done: rc is the answer */
    }
    if (!first || (rc != RLK_OK && wait_ms != 0)) {
        rlk_waiter again = *w;

        again.first_failed = rc != RLK_ERR_BUSY ? rc : RLK_OK;
        again.first_bound = bound;
        if (rc != RLK_ERR_BUSY)
            rlk_wait_pre_leave(&again);    /* a failed first attempt: attempt again once joined */
        rc = rlk_wait(&again, deadline);
    } else {
        rlk_wait_pre_leave(w);
        if (w->entered)
            rlk_lq_leave(w->q, w->entered);
    }
    rlk_time_limit_leave(limit);
    return rc;
}
