/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.h - what lock.c (rlk_lock_*) tells beyond the public API: the
 * timeline of the calling thread's last acquisition, for the benchmark's
 * per-step view of a handoff (docs/performance.md).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_LOCK_H
#define RLK_KINDS_LOCK_H

/* CLOCK_MONOTONIC ns (client/clock.h); 0 where the step did not happen
 * (an acquisition whose first attempt took the lock was woken by nothing). */
typedef struct rlk_lock_timeline {
    long long rx_ns;            /* the message that woke the waiter read by its subscriber */
    long long woken_ns;         /* the waiting thread woke */
    long long claim_sent_ns;    /* the attempt that took the lock was written */
    long long claim_done_ns;    /* its reply was read */
} rlk_lock_timeline;

/* The calling thread's last successful rlk_lock_try_lock / rlk_lock_lock. */
void rlk_lock_last_timeline(rlk_lock_timeline *out);

#endif /* RLK_KINDS_LOCK_H */
