/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_clock: see bench_clock.h. */
#define _POSIX_C_SOURCE 200809L
#include "bench_clock.h"

#include <errno.h>
#include <time.h>

#define RLK_BENCH_NS_PER_S INT64_C(1000000000)

int64_t rlk_bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * RLK_BENCH_NS_PER_S + ts.tv_nsec;
}

void rlk_bench_sleep_ns(int64_t ns)
{
    struct timespec until;
    int64_t t;

    if (ns <= 0)
        return;
    t = rlk_bench_now_ns() + ns;
    until.tv_sec = (time_t)(t / RLK_BENCH_NS_PER_S);
    until.tv_nsec = (long)(t % RLK_BENCH_NS_PER_S);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &until, NULL) == EINTR)
        ;
}
