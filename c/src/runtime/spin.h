/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * spin.h - waiting without pub/sub (spin.c): attempt, sleep an exponential
 * back-off with jitter, attempt again, as Redisson's RedissonSpinLock does
 * (LockOptions.ExponentialBackOff), for servers and proxies where
 * SUBSCRIBE is not available. No subscriber, no local queue: every waiter
 * polls, so a release is noticed within one back-off step.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SPIN_H
#define RLK_SPIN_H

#include "runtime/rt.h"
#include "runtime/wait.h"

/* The back-off bounds of a spinning wait, in ms. */
#define RLK_SPIN_MAX_MS 60000LL         /* the largest max_ms accepted */
#define RLK_SPIN_DEFAULT_INITIAL_MS 1   /* Redisson's ExponentialBackOff defaults */
#define RLK_SPIN_DEFAULT_MAX_MS 128

/* The sleep after the fails-th failed attempt (fails >= 1), given the one
 * before it (0 before the first): Redisson's rule, next = prev * 2 +
 * random(0..fails-1), starting at initial_ms, at most max_ms. */
long long rlk_spin_next(long long prev_ms, int fails, long long initial_ms, long long max_ms);

/* Attempts (attempt(arg, &bound): RLK_OK, RLK_ERR_BUSY, or an error) until
 * it succeeds, an error other than a connection error or timeout, or the
 * deadline of wait_ms from start_ns (wait_ms < 0: none; 0: one attempt).
 * Sleeps rlk_spin_next between attempts, no longer than the attempt's
 * bound (a holder's TTL: the lease running out frees it) nor the deadline.
 * RLK_OK; RLK_ERR_BUSY (the deadline passed, no error recorded); a
 * connection error that lasted to the deadline; RLK_ERR_INTERRUPTED
 * (recorded as "<what> <name>: wait interrupted") after
 * rlk_interrupt_waits; or the attempt's error. */
int rlk_spin_acquire(rlk_rt *rt, const char *what, const char *name, rlk_wait_attempt_fn attempt,
                     void *arg, long long start_ns, long long wait_ms, long long initial_ms,
                     long long max_ms);

#endif /* RLK_SPIN_H */
