/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop_impl.h - what the implementations of aloop.h share (aloop_poll.c,
 * aloop_libevent.c, aloop_libuv.c, aloop_libev.c): the monotonic clock the
 * timeouts are read on and aloop_run_until's loop. Included by them only,
 * after aloop.h.
 */
#ifndef RLK_TEST_ALOOP_IMPL_H
#define RLK_TEST_ALOOP_IMPL_H

#include <time.h>

#include "aloop.h"

static inline long long aloop_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* aloop_run_until on a loop whose one turn is turn(l); a turn returns
 * within the loop's 20 ms tick, so the timeout is seen. */
static inline int aloop_turn_until(aloop *l, void (*turn)(aloop *), int (*done)(void *), void *arg,
                                   long long timeout_ms)
{
    long long end = aloop_now_ms() + timeout_ms;

    for (;;) {
        if (done && done(arg))
            return 1;
        if (aloop_now_ms() >= end)
            return 0;
        turn(l);
    }
}

#endif /* RLK_TEST_ALOOP_IMPL_H */
