/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wait.c - the one wait loop of every kind that waits for a release:
 * the reentrant, fenced, fair and read-write locks, the semaphores and the
 * count-down latch. Join the channel on the client's subscriber (behind the
 * process-wide local queue when the kind has one), wait until subscribed,
 * attempt, sleep on the channel's permit or wake-all bounded by the
 * attempt's own bound (a holder's TTL, a permit's expiry) and the caller's
 * deadline, again; poll while the subscriber is down. docs/runtime.md
 * describes the algorithm and why no wake-up is lost.
 */
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "runtime/fam.h"
#include "runtime/lq.h"
#include "runtime/rt.h"
#include "runtime/sub.h"
#include "runtime/wait.h"

#define RLK_WAIT_POLL_NS (100LL * 1000000LL)    /* retry period while the subscriber is down */

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

/* While the subscriber cannot reach the server either, a connection error
 * of an attempt is taken for an outage and ridden out (polling) for up to
 * the connect timeout, so a waiter survives a server restart. Returns 1 to
 * keep waiting. */
static int rlk_wait_outage(const rlk_waiter *w, int rc, int ready, long long *outage_start)
{
    long long now = rlk_clock_now_ns();

    if (!w->ride_out || rc != RLK_ERR_IO || ready != RLK_SUB_DOWN) {
        *outage_start = 0;
        return 0;
    }
    if (*outage_start == 0)
        *outage_start = now;
    return now - *outage_start < (long long)w->rt->c->connect_timeout_ms * RLK_NS_PER_MS;
}

/* On a joined channel: ready, attempt, sleep; until the attempt succeeds
 * (RLK_OK), fails (its error) or the deadline passes (RLK_ERR_BUSY). */
static int rlk_wait_loop(const rlk_waiter *w, rlk_sub_chan *ch, long long deadline)
{
    rlk_sub *sub = w->rt->sub;
    long long outage_start = 0;

    for (;;) {
        unsigned long long mark;
        long long bound = -1, until;
        int ready, by_bound, rc;

        ready = rlk_sub_ready(sub, ch, deadline, &mark);
        if (ready == RLK_SUB_TIMEOUT)
            return RLK_ERR_BUSY;
        rc = w->attempt(w->arg, &bound);
        if (rlk_wait_outage(w, rc, ready, &outage_start)) {
            rc = RLK_ERR_BUSY;
            bound = -1;         /* the poll period bounds the sleep */
        }
        if (rc != RLK_ERR_BUSY)
            return rc;
        until = rlk_wait_sleep_until(bound, ready == RLK_SUB_DOWN, deadline, &by_bound);
        if (deadline >= 0 && rlk_clock_now_ns() >= deadline)
            return RLK_ERR_BUSY;    /* no sleep, no attempt past the caller's deadline */
        if (rlk_sub_wait(sub, ch, mark, until) == RLK_SUB_TIMEOUT) {
            if (by_bound && w->count_ttl)
                RLK_RT_COUNT(w->rt, ttl_wakeups);
            if (until == deadline)
                return RLK_ERR_BUSY;
        }
    }
}

/* Joins w->channel (node: as the head of w->q), runs the loop, passes a
 * permit on when asked, and leaves the queue, then the channel. */
static int rlk_wait_subscribed(const rlk_waiter *w, rlk_lq_node *node, long long deadline)
{
    rlk_sub *sub = w->rt->sub;
    rlk_sub_chan *ch;
    int rc = rlk_sub_join(sub, w->channel, &ch);

    if (rc != RLK_OK) {
        if (node)
            rlk_lq_leave(w->q, node);
        return rc;
    }
    if (node)
        rlk_lq_set_sub(w->q, node, sub, ch);
    rc = rlk_wait_loop(w, ch, deadline);
    if (rc != RLK_ERR_BUSY && w->pass_on)   /* an error must not swallow a permit either */
        rlk_sub_poke(sub, ch);
    if (node)
        rlk_lq_leave(w->q, node);   /* first: the next head may share the subscription */
    rlk_sub_leave(sub, ch);
    return rc;
}

int rlk_wait(const rlk_waiter *w, long long deadline_ns)
{
    rlk_lq_node node;
    int rc;

    if (!w->q)
        return rlk_wait_subscribed(w, NULL, deadline_ns);
    rc = rlk_lq_enter(w->q, &node, deadline_ns);
    if (rc == RLK_ERR_NOMEM)
        return rlk_set_error(w->rt->c, rc, "%s %s: out of resources for a waiter", w->what,
                             w->name);
    if (rc != RLK_OK)
        return rc;      /* RLK_ERR_BUSY: the deadline passed before this thread was head */
    return rlk_wait_subscribed(w, &node, deadline_ns);
}

int rlk_wait_acquire(const rlk_waiter *w, long long start_ns, long long wait_ms, int first)
{
    long long bound = -1;
    int rc;

    if (first) {
        rc = w->attempt(w->arg, &bound);
        if (rc != RLK_ERR_BUSY || wait_ms == 0)
            return rc;
    }
    return rlk_wait(w, rlk_wait_deadline(start_ns, wait_ms));
}
