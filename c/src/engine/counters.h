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

#include "rlk.h"

/* A histogram's cells (rlk_histogram's, as atomics). */
typedef struct rlk_rt_hist {
    atomic_ullong sum_ns;
    atomic_ullong buckets[RLK_METRICS_BUCKETS + 1];
} rlk_rt_hist;

/* A watched name's cells (rlk_metrics_watch): written once before nnames
 * counts it, never moved or removed. */
typedef struct rlk_rt_name {
    char name[RLK_METRICS_NAME_SIZE];
    atomic_ullong acquisitions[RLK_ACQ_RESULTS];
    rlk_rt_hist wait, hold;
    atomic_ullong fence_writes[RLK_FENCE_RESULTS];  /* fenced writes whose fence key is name */
} rlk_rt_name;

typedef struct rlk_rt_counters {
    atomic_ullong acquire_calls, acquired;
    atomic_ullong rechecks;         /* attempts again after another ticket's claim window (-3) */
    atomic_ullong waits, wake_permits, wake_all, ttl_wakeups;
    atomic_ullong sub_connects, sub_drops, subscribes, unsubscribes;
    atomic_ullong renew_calls, renew_errors, renew_unacked, locks_lost;
    atomic_ullong lost_replies, lost_adopted, lost_not_run, lost_unsettled, lost_given_back;
    atomic_ullong held_grants;      /* acquisitions on a held grant (kinds/acq.h rlk_acq_held) */
    atomic_ullong held_turn;        /* releases of holds taken by waiting (kinds/lock.h
                                       rlk_lock_release_row: every 8th frees the lock) */
    /* The metrics (engine/metrics.h records them; rlk_metrics_get reads them). */
    atomic_int metrics_off;         /* rlk_metrics_set_enabled(c, 0) */
    atomic_ullong acquisitions[RLK_MKIND_COUNT][RLK_ACQ_RESULTS];
    atomic_ullong handoffs, acquired_after_wait;
    atomic_ullong locks_lost_gone, locks_lost_expired;
    atomic_llong requests_waiting;
    rlk_rt_hist wait_h, hold_h, handoff_h;
    atomic_int nnames;              /* names[0..nnames) are watched */
    rlk_rt_name names[RLK_METRICS_NAMES_MAX];
    atomic_ullong sub_wakeups, sub_messages;    /* subscriber reads that brought messages; messages */
    atomic_ullong fence_writes[RLK_FENCE_RESULTS];  /* fenced writes: accepted, refused */
    atomic_ullong delay_refusals;   /* reentrant acquire attempts refused by a lock-delay */
} rlk_rt_counters;

/* Adds one to counters->field (counters: an rlk_rt_counters pointer). */
#define RLK_COUNT(counters, field) atomic_fetch_add_explicit(&(counters)->field, 1, \
                                                             memory_order_relaxed)

#endif /* RLK_COUNTERS_H */
