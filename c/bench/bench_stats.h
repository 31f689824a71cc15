/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_stats: every number rlk-bench reports is computed here, from raw
 * nanosecond samples and acquisition records, with no I/O and no clock, so
 * that c/bench/test_stats.c can check each computation on fixed inputs.
 *
 * Percentiles are nearest-rank: the p-th percentile of n sorted values is
 * the value at rank ceil(p * n / 100) (1-based), the smallest value at or
 * below which at least p percent of the values lie.
 */
#ifndef RLK_BENCH_STATS_H
#define RLK_BENCH_STATS_H

#include <stddef.h>
#include <stdint.h>

/* A summary of n samples, in the unit of the samples (rlk-bench: ns). When
 * n == 0 every other field is NAN and is printed as JSON null. */
typedef struct rlk_bench_summary {
    size_t n;
    double p50;
    double p99;
    double max;
    double mean;
} rlk_bench_summary;

/* One W2 acquisition: CLOCK_MONOTONIC ns relative to the common start.
 * request: just before acquire was called; acquire: just after it returned
 * with the lock; release: just before release was called. */
typedef struct rlk_bench_event {
    int contender;
    int64_t request_ns;
    int64_t acquire_ns;
    int64_t release_ns;
    int64_t release_end_ns;   /* the release call returned */
    int64_t tl[4];            /* the handoff timeline (bench_driver.h), ns since the start; 0: none */
} rlk_bench_event;

/* Everything W2 reports that is computed from the recorded acquisitions.
 * Only acquisitions with acquire_ns <= deadline_ns count ("acquired before
 * the deadline"); overlaps are checked over every recorded acquisition. */
typedef struct rlk_bench_w2_stats {
    size_t acquisitions;          /* acquired at or before the deadline */
    size_t gaps;                  /* acquisitions - 1 (0 when none) */
    size_t handoffs;              /* gaps where the two contenders differ */
    size_t self_reacquires;       /* gaps where the same contender acquired again */
    double self_reacquire_frac;   /* self_reacquires / gaps; NAN when gaps == 0 */
    size_t waits_over_100ms;      /* acquire - request > 100 ms */
    double jain_fairness;         /* over per-contender counts; NAN when no acquisition */
    size_t overlaps;              /* pairs of overlapping [acquire, release] intervals */
    rlk_bench_summary gap;        /* acquire[k] - release[k-1], acquisition order */
    rlk_bench_summary handoff_other; /* the same, only where contenders differ */
    rlk_bench_summary wait;       /* acquire - request */
    rlk_bench_summary hold;       /* release - acquire */
} rlk_bench_w2_stats;

/* The nearest-rank pct-th percentile (pct in 1..100) of n >= 1 sorted values. */
int64_t rlk_bench_nearest_rank(const int64_t *sorted, size_t n, unsigned pct);

/* Sorts v[0..n) ascending and fills *out (p50, p99, max, mean). */
void rlk_bench_summarize(int64_t *v, size_t n, rlk_bench_summary *out);

/* Jain's fairness index (sum x)^2 / (n * sum x^2) over n counts: 1 when all
 * are equal, 1/n when one has everything. NAN when n == 0 or all are zero. */
double rlk_bench_jain(const uint64_t *counts, size_t n);

/* Sorts ev[0..n) into acquisition order: acquire_ns, then contender, then
 * release_ns. */
void rlk_bench_sort_events(rlk_bench_event *ev, size_t n);

/* The number of pairs of events whose closed intervals [acquire_ns,
 * release_ns] intersect: each one a mutual-exclusion violation. ev must be
 * sorted by rlk_bench_sort_events. */
size_t rlk_bench_count_overlaps(const rlk_bench_event *ev, size_t n);

/* Sorts ev and computes every W2 metric for `contenders` contenders (events
 * whose contender is outside 0..contenders-1 are counted but not in Jain's
 * index). Returns 0, or -1 when out of memory (*out is then zeroed). */
int rlk_bench_w2_compute(rlk_bench_event *ev, size_t n, int contenders,
                         int64_t deadline_ns, rlk_bench_w2_stats *out);

#endif /* RLK_BENCH_STATS_H */
