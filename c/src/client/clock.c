/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.c - the library's one clock: CLOCK_MONOTONIC nanoseconds, "until"
 * times, and condition variables that wait on that clock (so a jump of the
 * wall clock never shortens or stretches a wait).
 */
#include <errno.h>
#include <time.h>

#include "client/clock.h"

long long rlk_clock_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
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
