/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_stats: summaries, fairness, gap/handoff metrics and overlap
 * detection for rlk-bench. See bench_stats.h. */
#include "bench_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define RLK_BENCH_NS_PER_100MS INT64_C(100000000)

static int rlk_bench_cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a;
    int64_t y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t rlk_bench_nearest_rank(const int64_t *sorted, size_t n, unsigned pct)
{
    size_t rank;

    if (pct > 100)
        pct = 100;
    /* ceil(pct * n / 100) in integers: no rounding error at exact ranks. */
    rank = (pct * n + 99) / 100;
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

void rlk_bench_summarize(int64_t *v, size_t n, rlk_bench_summary *out)
{
    long double sum = 0;
    size_t i;

    out->n = n;
    if (n == 0) {
        out->p50 = out->p99 = out->max = out->mean = NAN;
        return;
    }
    qsort(v, n, sizeof *v, rlk_bench_cmp_i64);
    for (i = 0; i < n; i++)
        sum += v[i];
    out->p50 = (double)rlk_bench_nearest_rank(v, n, 50);
    out->p99 = (double)rlk_bench_nearest_rank(v, n, 99);
    out->max = (double)v[n - 1];
    out->mean = (double)(sum / n);
}

double rlk_bench_jain(const uint64_t *counts, size_t n)
{
    long double sum = 0, sumsq = 0;
    size_t i;

    for (i = 0; i < n; i++) {
        sum += counts[i];
        sumsq += (long double)counts[i] * counts[i];
    }
    if (n == 0 || sumsq == 0)
        return NAN;
    return (double)(sum * sum / (n * sumsq));
}

static int rlk_bench_cmp_event(const void *a, const void *b)
{
    const rlk_bench_event *x = a;
    const rlk_bench_event *y = b;

    if (x->acquire_ns != y->acquire_ns)
        return x->acquire_ns < y->acquire_ns ? -1 : 1;
    if (x->contender != y->contender)
        return x->contender < y->contender ? -1 : 1;
    return (x->release_ns > y->release_ns) - (x->release_ns < y->release_ns);
}

void rlk_bench_sort_events(rlk_bench_event *ev, size_t n)
{
    if (n > 1)
        qsort(ev, n, sizeof *ev, rlk_bench_cmp_event);
}

size_t rlk_bench_count_overlaps(const rlk_bench_event *ev, size_t n)
{
    size_t count = 0, i, j;

    /* Sorted by acquire: event j > i intersects i exactly when it was
     * acquired at or before i's release; the first j acquired later ends
     * the scan for i. */
    for (i = 0; i < n; i++)
        for (j = i + 1; j < n && ev[j].acquire_ns <= ev[i].release_ns; j++)
            count++;
    return count;
}

/* The counted acquisitions are a prefix of the sorted events. */
static size_t rlk_bench_counted(const rlk_bench_event *ev, size_t n, int64_t deadline_ns)
{
    size_t k = 0;

    while (k < n && ev[k].acquire_ns <= deadline_ns)
        k++;
    return k;
}

/* Gap, handoff, self-reacquire numbers over ev[0..k). gap and other must
 * hold k entries. */
static void rlk_bench_gaps(const rlk_bench_event *ev, size_t k, int64_t *gap,
                           int64_t *other, rlk_bench_w2_stats *out)
{
    size_t i, ng = 0, no = 0;

    for (i = 1; i < k; i++) {
        int64_t g = ev[i].acquire_ns - ev[i - 1].release_ns;
        gap[ng++] = g;
        if (ev[i].contender != ev[i - 1].contender)
            other[no++] = g;
    }
    out->gaps = ng;
    out->handoffs = no;
    out->self_reacquires = ng - no;
    out->self_reacquire_frac = ng ? (double)(ng - no) / (double)ng : NAN;
    rlk_bench_summarize(gap, ng, &out->gap);
    rlk_bench_summarize(other, no, &out->handoff_other);
}

/* Wait, hold, waits over 100 ms and per-contender counts over ev[0..k). */
static void rlk_bench_waits(const rlk_bench_event *ev, size_t k, int contenders,
                            int64_t *wait, int64_t *hold, uint64_t *per,
                            rlk_bench_w2_stats *out)
{
    size_t i;

    out->waits_over_100ms = 0;
    for (i = 0; i < k; i++) {
        wait[i] = ev[i].acquire_ns - ev[i].request_ns;
        hold[i] = ev[i].release_ns - ev[i].acquire_ns;
        if (wait[i] > RLK_BENCH_NS_PER_100MS)
            out->waits_over_100ms++;
        if (ev[i].contender >= 0 && ev[i].contender < contenders)
            per[ev[i].contender]++;
    }
    rlk_bench_summarize(wait, k, &out->wait);
    rlk_bench_summarize(hold, k, &out->hold);
    out->jain_fairness = k ? rlk_bench_jain(per, (size_t)contenders) : NAN;
}

int rlk_bench_w2_compute(rlk_bench_event *ev, size_t n, int contenders,
                         int64_t deadline_ns, rlk_bench_w2_stats *out)
{
    size_t k, cells;
    int64_t *buf;
    uint64_t *per;

    memset(out, 0, sizeof *out);
    if (contenders < 0)
        contenders = 0;
    rlk_bench_sort_events(ev, n);
    k = rlk_bench_counted(ev, n, deadline_ns);
    cells = k ? 4 * k : 1;
    buf = malloc(cells * sizeof *buf);
    per = calloc(contenders > 0 ? (size_t)contenders : 1, sizeof *per);
    if (buf == NULL || per == NULL) {
        free(buf);
        free(per);
        return -1;
    }
    out->acquisitions = k;
    rlk_bench_gaps(ev, k, buf, buf + k, out);
    rlk_bench_waits(ev, k, contenders, buf + 2 * k, buf + 3 * k, per, out);
    out->overlaps = rlk_bench_count_overlaps(ev, n);
    free(buf);
    free(per);
    return 0;
}
