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
#include <sys/time.h>

#define RLK_NS_PER_MS 1000000LL

/* CLOCK_MONOTONIC in nanoseconds. */
long long rlk_clock_now_ns(void);
/* Sleeps ns (nothing when 0 or less); a signal may end it early. */
void rlk_clock_sleep_ns(long long ns);
/* The earlier of two "until" times, -1 meaning never. */
long long rlk_clock_until_min(long long a, long long b);
/* A condition variable on CLOCK_MONOTONIC. 0 or -1. */
int rlk_clock_cond_init(pthread_cond_t *cv);
/* Waits on cv until signalled or until_ns (-1: no limit). Returns 1 when
 * until_ns has passed, 0 otherwise (which may be spurious). */
int rlk_clock_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long until_ns);

/* A per-thread time limit (CLOCK_MONOTONIC ns, 0: none) that cuts the
 * connect and command timeouts of every call the thread makes through a
 * pool: a wait of wait_ms ends on time even against a server that stopped
 * answering. rlk_time_limit_enter sets the earlier of the current limit and
 * until_ns (0: keeps the current) and returns the previous one for
 * rlk_time_limit_leave. */
long long rlk_time_limit_enter(long long until_ns);
void rlk_time_limit_leave(long long previous);
/* base cut to what is left of the limit (at least 1 ms); 0 when there is no
 * limit or base is shorter, 1 when cut, -1 when the limit has passed. */
int rlk_time_limit_tv(struct timeval base, struct timeval *out);
/* What is left of the calling thread's time limit in ms (0 when passed),
 * or -1 when it has none. */
long long rlk_time_limit_left_ms(void);

#endif /* RLK_CLOCK_H */
