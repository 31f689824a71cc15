/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spin.c - waiting without pub/sub (spin.h).
 */
#include <stdatomic.h>

#include "client/clock.h"
#include "client/error.h"
#include "client/random.h"
#include "runtime/spin.h"

long long rlk_spin_next(long long prev_ms, int fails, long long initial_ms, long long max_ms)
{
    long long next;

    if (prev_ms <= 0)
        next = initial_ms;
    else if (prev_ms >= max_ms)
        return max_ms;
    else {
        /* Jitter: a small random addition that grows with the failures, so that waiters that
         * failed together do not attempt together again. */
        next = prev_ms * 2 + (fails > 1 ? (long long)rlk_random_below((unsigned)fails) : 0);
    }
    return next < max_ms ? next : max_ms;
}

/* Sleeps ms, in slices of at most 50 ms so that rlk_interrupt_waits ends it soon. */
static void rlk_spin_sleep(const rlk_rt *rt, long long ms)
{
    while (ms > 0 && !atomic_load(&rt->interrupted)) {
        long long slice = ms < 50 ? ms : 50;
        rlk_clock_sleep_ns(slice * RLK_NS_PER_MS);
        ms -= slice;
    }
}

int rlk_spin_acquire(rlk_rt *rt, const char *what, const char *name, rlk_wait_attempt_fn attempt,
                     void *arg, long long start_ns, long long wait_ms, long long initial_ms,
                     long long max_ms)
{
    long long deadline = rlk_wait_deadline(start_ns, wait_ms), sleep_ms = 0;
    int fails = 0;

    for (;;) {
        long long bound = -1, now, left;
        int rc = attempt(arg, &bound);

        /* An outage is ridden out to the deadline, as a pub/sub wait does: its error then. */
        if (rc != RLK_ERR_BUSY && rc != RLK_ERR_IO && rc != RLK_ERR_TIMEOUT &&
            rc != RLK_ERR_UNSETTLED)
            return rc;
        now = rlk_clock_now_ns();
        if (wait_ms == 0 || (deadline >= 0 && now >= deadline))
            return rc;
        sleep_ms = rlk_spin_next(sleep_ms, ++fails, initial_ms, max_ms);
        left = sleep_ms;
        if (rc == RLK_ERR_BUSY && bound >= 0 && bound < left)
            left = bound > 0 ? bound : 1;       /* the holder's lease ends first */
        if (deadline >= 0 && (deadline - now) / 1000000LL + 1 < left)
            left = (deadline - now) / 1000000LL + 1;
        rlk_spin_sleep(rt, left);
        if (atomic_load(&rt->interrupted))
            return rlk_set_error(rt->c, RLK_ERR_INTERRUPTED, "%s %s: wait interrupted", what,
                                 name);
    }
}
