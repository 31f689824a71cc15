/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * metrics.c - recording the public metrics (metrics.h), and the names and
 * bucket bounds they are read by. It needs neither the runtime state nor the
 * hold registry (exposition.c, above them, reads the metrics), so the
 * registry records a hold's time here without a call back up.
 */
#include <math.h>
#include <string.h>

#include "client/clock.h"
#include "engine/metrics.h"

#define RLK_M_ADD(cell, n) atomic_fetch_add_explicit(&(cell), (n), memory_order_relaxed)

/* The finite bucket bounds in ns: 1-2.5-5 per decade from 100 us to 10 s,
 * then 30 s and 60 s. */
static const long long rlk_bounds_ns[RLK_METRICS_BUCKETS] = {
    100000LL,     250000LL,     500000LL,     1000000LL,     2500000LL,   5000000LL,
    10000000LL,   25000000LL,   50000000LL,   100000000LL,   250000000LL, 500000000LL,
    1000000000LL, 2500000000LL, 5000000000LL, 10000000000LL, 30000000000LL, 60000000000LL,
};

static const char *const rlk_kind_names[RLK_MKIND_COUNT] = {
    "lock", "fair", "fenced", "read", "write", "semaphore", "psemaphore", "latch",
};

static const char *const rlk_result_names[RLK_ACQ_RESULTS] = {
    "acquired", "timed_out", "refused", "error",
};

/* The lock kinds' names are the first five of the metrics'. */
const char *rlk_kind_name(int kind)
{
    return kind >= 0 && kind <= RLK_KIND_WRITE ? rlk_kind_names[kind] : "unknown";
}

const char *rlk_metrics_kind_name(int kind)
{
    return kind >= 0 && kind < RLK_MKIND_COUNT ? rlk_kind_names[kind] : "unknown";
}

const char *rlk_acquire_result_name(int result)
{
    return result >= 0 && result < RLK_ACQ_RESULTS ? rlk_result_names[result] : "unknown";
}

double rlk_metrics_bucket_bound(int i)
{
    if (i >= 0 && i < RLK_METRICS_BUCKETS)
        return (double)rlk_bounds_ns[i] / 1e9;
    return i == RLK_METRICS_BUCKETS ? INFINITY : NAN;
}

/* ---------------------------------------------------------------- recording */

static void rlk_metrics_observe(rlk_rt_hist *h, long long ns)
{
    int i = 0;

    if (ns < 0)
        ns = 0;
    while (i < RLK_METRICS_BUCKETS && ns > rlk_bounds_ns[i])
        i++;
    RLK_M_ADD(h->buckets[i], 1);
    RLK_M_ADD(h->sum_ns, (unsigned long long)ns);
}

rlk_rt_name *rlk_metrics_name(rlk_rt_counters *k, const char *name)
{
    int n = atomic_load_explicit(&k->nnames, memory_order_acquire);

    if (n == 0 || !name)
        return NULL;
    for (int i = 0; i < n; i++)
        if (strcmp(k->names[i].name, name) == 0)
            return &k->names[i];
    return NULL;
}

static int rlk_metrics_on(const rlk_rt_counters *k)
{
    return k && !atomic_load_explicit(&k->metrics_off, memory_order_relaxed);
}

/* The result class (enum rlk_acquire_result) of an acquisition's rc. */
static int rlk_metrics_result_of(int rc)
{
    switch (rc) {
    case RLK_OK:
        return RLK_ACQ_ACQUIRED;
    case RLK_ERR_BUSY:
        return RLK_ACQ_TIMED_OUT;
    case RLK_ERR_ARG:
    case RLK_ERR_UPGRADE:
    case RLK_ERR_SCRIPT:
    case RLK_ERR_NOREPLICAS:
    case RLK_ERR_INTERRUPTED:
    case RLK_ERR_NOT_OWNER:
        return RLK_ACQ_REFUSED;
    default:
        return RLK_ACQ_ERROR;
    }
}

void rlk_metrics_begin(rlk_rt_counters *k, rlk_metrics_call *mc)
{
    mc->k = rlk_metrics_on(k) ? k : NULL;
    mc->start_ns = mc->k ? rlk_clock_now_ns() : 0;
    if (mc->k)
        RLK_M_ADD(k->requests_waiting, 1);
}

int rlk_metrics_end(rlk_metrics_call *mc, int kind, const char *name, int rc)
{
    rlk_rt_counters *k = mc->k;
    int result = rlk_metrics_result_of(rc);
    long long ns;
    rlk_rt_name *nm;

    if (!k)
        return rc;
    RLK_M_ADD(k->requests_waiting, -1);
    if (kind < 0 || kind >= RLK_MKIND_COUNT)
        return rc;
    RLK_M_ADD(k->acquisitions[kind][result], 1);
    ns = rlk_clock_now_ns() - mc->start_ns;
    if (result == RLK_ACQ_ACQUIRED)
        rlk_metrics_observe(&k->wait_h, ns);
    if ((nm = rlk_metrics_name(k, name)) != NULL) {
        RLK_M_ADD(nm->acquisitions[result], 1);
        if (result == RLK_ACQ_ACQUIRED)
            rlk_metrics_observe(&nm->wait, ns);
    }
    return rc;
}

void rlk_metrics_hold(rlk_rt_counters *k, const char *name, long long acquired_ns)
{
    long long ns;
    rlk_rt_name *nm;

    if (!rlk_metrics_on(k) || acquired_ns <= 0)
        return;
    ns = rlk_clock_now_ns() - acquired_ns;
    rlk_metrics_observe(&k->hold_h, ns);
    if ((nm = rlk_metrics_name(k, name)) != NULL)
        rlk_metrics_observe(&nm->hold, ns);
}

void rlk_metrics_acquired_waiting(rlk_rt_counters *k, long long woke_ns)
{
    if (!rlk_metrics_on(k))
        return;
    RLK_M_ADD(k->acquired_after_wait, 1);
    if (woke_ns > 0) {
        RLK_M_ADD(k->handoffs, 1);
        rlk_metrics_observe(&k->handoff_h, rlk_clock_now_ns() - woke_ns);
    }
}

void rlk_metrics_fence(rlk_rt_counters *k, const char *fence, int rc)
{
    int result = rc == RLK_OK ? RLK_FENCE_ACCEPTED : rc == RLK_ERR_FENCED ? RLK_FENCE_REFUSED : -1;
    rlk_rt_name *nm;

    if (result < 0 || !rlk_metrics_on(k))
        return;
    RLK_M_ADD(k->fence_writes[result], 1);
    if ((nm = rlk_metrics_name(k, fence)) != NULL)
        RLK_M_ADD(nm->fence_writes[result], 1);
}
