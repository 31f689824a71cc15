/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.c - the library's one clock: CLOCK_MONOTONIC nanoseconds, "until"
 * times, and condition variables that wait on that clock (so a jump of the
 * wall clock never shortens or stretches a wait).
 */
#include <errno.h>
#include <sys/time.h>
#include <time.h>

#include "rlk.h"
#include "client/clock.h"

long long rlk_clock_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void rlk_clock_sleep_ns(long long ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};

    if (ns > 0)
        nanosleep(&ts, NULL);
}

long long rlk_clock_until_min(long long a, long long b)
{
    if (a < 0)
        return b;
    if (b < 0)
        return a;
    return a < b ? a : b;
}

int rlk_clock_cond_init(pthread_cond_t *cv)
{
    pthread_condattr_t attr;
    int rc;

    if (pthread_condattr_init(&attr) != 0)
        return -1;
    rc = pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    if (rc == 0)
        rc = pthread_cond_init(cv, &attr);
    pthread_condattr_destroy(&attr);
    return rc == 0 ? 0 : -1;
}

int rlk_clock_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long until_ns)
{
    struct timespec ts;

    if (until_ns < 0) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    if (rlk_clock_now_ns() >= until_ns)
        return 1;
    ts.tv_sec = (time_t)(until_ns / 1000000000LL);
    ts.tv_nsec = (long)(until_ns % 1000000000LL);
    if (pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT)
        return 1;
    return 0;
}

/* ---------------------------------------------------------------- per-thread time limits */

static _Thread_local long long rlk_tl_limit_ns;     /* 0: no limit */

long long rlk_time_limit_enter(long long until_ns)
{
    long long previous = rlk_tl_limit_ns;

    if (until_ns > 0 && (previous == 0 || until_ns < previous))
        rlk_tl_limit_ns = until_ns;
    return previous;
}

void rlk_time_limit_leave(long long previous)
{
    rlk_tl_limit_ns = previous;
}

long long rlk_time_limit_left_ms(void)
{
    long long left;

    if (rlk_tl_limit_ns == 0)
        return -1;
    left = (rlk_tl_limit_ns - rlk_clock_now_ns()) / RLK_NS_PER_MS;
    return left > 0 ? left : 0;
}

void rlk_thread_time_limit(long long ms)
{
    rlk_tl_limit_ns = ms < 0 ? 0 : rlk_clock_now_ns() + (ms > 0 ? ms : 1) * 1000000LL;
}

int rlk_time_limit_tv(struct timeval base, struct timeval *out)
{
    long long left, base_us = (long long)base.tv_sec * 1000000LL + base.tv_usec;

    if (rlk_tl_limit_ns == 0)
        return 0;
    left = (rlk_tl_limit_ns - rlk_clock_now_ns()) / 1000;
    if (left <= 0)
        return -1;
    if (left < 1000)
        left = 1000;
    if (base_us > 0 && base_us <= left)
        return 0;
    out->tv_sec = (time_t)(left / 1000000LL);
    out->tv_usec = (suseconds_t)(left % 1000000LL);
    return 1;
}
