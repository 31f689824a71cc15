/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_clock: CLOCK_MONOTONIC in nanoseconds, and sleeping on it. */
#ifndef RLK_BENCH_CLOCK_H
#define RLK_BENCH_CLOCK_H

#include <stdint.h>

int64_t rlk_bench_now_ns(void);

/* Sleeps ns nanoseconds of CLOCK_MONOTONIC (resumes after signals). */
void rlk_bench_sleep_ns(int64_t ns);

#endif /* RLK_BENCH_CLOCK_H */
