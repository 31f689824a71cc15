/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * counters.h - the lock runtime's counters (no .c: a struct and a macro).
 * The runtime state (rt.h) owns one set per client; the subscriber and the
 * watchdog are handed a pointer to it, and rlk_runtime_stats_get (rt.h)
 * reads it.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_COUNTERS_H
#define RLK_COUNTERS_H

#include <stdatomic.h>

typedef struct rlk_rt_counters {
    atomic_ullong acquire_calls, acquired;
    atomic_ullong waits, wake_permits, wake_all, ttl_wakeups;
    atomic_ullong sub_connects, sub_drops, subscribes, unsubscribes;
    atomic_ullong renew_calls, renew_errors, renew_unacked, locks_lost;
    atomic_ullong lost_replies, lost_adopted, lost_not_run, lost_unsettled, lost_given_back;
    atomic_ullong sub_wakeups, sub_messages;    /* subscriber reads that brought messages; messages */
} rlk_rt_counters;

/* Adds one to counters->field (counters: an rlk_rt_counters pointer). */
#define RLK_COUNT(counters, field) atomic_fetch_add_explicit(&(counters)->field, 1, \
                                                             memory_order_relaxed)

#endif /* RLK_COUNTERS_H */
