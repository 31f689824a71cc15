/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.h - recording the public metrics (rlk.h, rlk_metrics_*) into a
 * client's counters (counters.h) (metrics.c). Recording
 * is relaxed atomic additions on the caller's thread: no lock, no
 * allocation; with recording off (rlk_metrics_set_enabled) one relaxed
 * load. Reading them (rlk_metrics_get, the exposition) is exposition.c's.
 * docs/observability.md says what each metric means.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_METRICS_H
#define RLK_METRICS_H

#include "engine/counters.h"

/* One acquisition call under way (rlk_metrics_begin .. rlk_metrics_end). */
typedef struct rlk_metrics_call {
    rlk_rt_counters *k;     /* NULL: not recorded */
    long long start_ns;
} rlk_metrics_call;

/* Counts a call as waiting from now (k may be NULL: a bad handle). */
void rlk_metrics_begin(rlk_rt_counters *k, rlk_metrics_call *mc);
/* Ends it: its result (from rc), the wait histogram when it acquired, the
 * watched name's cells. Returns rc. */
int rlk_metrics_end(rlk_metrics_call *mc, int kind, const char *name, int rc);
/* A lock held since acquired_ns was released (its last hold). */
void rlk_metrics_hold(rlk_rt_counters *k, const char *name, long long acquired_ns);
/* An attempt of a wait acquired after sleeping; woke_ns > 0: the sleep
 * before it was ended by a message at woke_ns (a handoff). */
void rlk_metrics_acquired_waiting(rlk_rt_counters *k, long long woke_ns);
/* A fenced write on fence (its fence key) ended with rc: RLK_OK counts
 * accepted, RLK_ERR_FENCED refused (enum rlk_fence_result), in the totals
 * and in the watched name fence's cells; any other rc is not counted. Both
 * APIs call it (kinds/fence.c, async/a_fence.c). */
void rlk_metrics_fence(rlk_rt_counters *k, const char *fence, int rc);
/* The watched name's cells (rlk_metrics_watch), or NULL (nothing watched:
 * one acquire load). */
rlk_rt_name *rlk_metrics_name(rlk_rt_counters *k, const char *name);

#endif /* RLK_METRICS_H */
