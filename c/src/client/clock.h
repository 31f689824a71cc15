/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * clock.h - the library's one clock (clock.c): CLOCK_MONOTONIC
 * nanoseconds, "until" times, and condition variables that wait on that
 * clock (so a jump of the wall clock never shortens or stretches a wait).
 *
 * An "until" or deadline of -1 means "no deadline".
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_CLOCK_H
#define RLK_CLOCK_H

#include <pthread.h>

#define RLK_NS_PER_MS 1000000LL

/* CLOCK_MONOTONIC in nanoseconds. */
long long rlk_clock_now_ns(void);
/* The earlier of two "until" times, -1 meaning never. */
long long rlk_clock_until_min(long long a, long long b);
/* A condition variable on CLOCK_MONOTONIC. 0 or -1. */
int rlk_clock_cond_init(pthread_cond_t *cv);
/* Waits on cv until signalled or until_ns (-1: no limit). Returns 1 when
 * until_ns has passed, 0 otherwise (which may be spurious). */
int rlk_clock_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long until_ns);

#endif /* RLK_CLOCK_H */
