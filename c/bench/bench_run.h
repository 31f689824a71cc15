/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_run: the contender threads. All contenders connect first, then
 * start together; they stop starting acquisitions at the deadline; a waiter
 * still without the lock `grace` seconds later is stuck (the driver gives up
 * then; a thread that does not return is abandoned: left running, and the
 * process exits without it) and reported.
 */
#ifndef RLK_BENCH_RUN_H
#define RLK_BENCH_RUN_H

#include <stddef.h>
#include <stdint.h>

#include "bench_driver.h"
#include "bench_opts.h"
#include "bench_stats.h"

/* What one contender did, final once rlk_bench_run returns. */
typedef struct rlk_bench_worker_result {
    int64_t *lat;            /* W1: pair latencies, ns */
    size_t nlat;
    rlk_bench_event *ev;     /* W2: acquisitions, ns since the start */
    size_t nev;
    uint64_t errors;         /* failed calls other than W2 acquires */
    uint64_t giveups;        /* W2: blocking acquires that returned without the lock */
    char last_error[RLK_BENCH_ERRLEN];
    int64_t end_ns;          /* when it finished, ns since the start; -1: abandoned */
    int stuck;               /* W2: still waiting in acquire at deadline + grace (the
                                driver gave up then, or the thread was abandoned there) */
    int unfinished;          /* abandoned anywhere (stuck included) */
    void *metrics;           /* the driver's metrics blob at the end (malloc'd), or NULL */
    size_t metrics_len;
    uint64_t sub_wakeups;    /* the driver's subscriber wake-ups at the end of its loop */
    uint64_t sub_messages;   /* ... and pub/sub messages received */
} rlk_bench_worker_result;

typedef struct rlk_bench_run_result {
    int n;
    rlk_bench_worker_result *w;   /* n entries */
    int64_t deadline_ns;          /* duration, ns since the start */
    int64_t closed_ns;            /* when results were taken, ns since the start */
    int64_t t0_ns;                /* the common start, absolute CLOCK_MONOTONIC ns */
    int stuck;
    int unfinished;
} rlk_bench_run_result;

/* Runs o->workload with one thread per identity. Returns 0 with *out
 * filled; -1 with err when a contender could not connect (nothing ran). */
int rlk_bench_run(const rlk_bench_opts *o, const rlk_bench_driver *d,
                  const rlk_bench_target *t, const rlk_bench_identity *ids,
                  rlk_bench_run_result *out, char *err, size_t errlen);

/* The same with one process per identity (fork): each child runs one
 * contender through rlk_bench_run, all start at the parent's t0, and the
 * parent gathers their results into *out (out->w[i] from child i). A child
 * that does not report by deadline + grace + 30 s is killed and counted
 * unfinished (stuck when it was in a W2 run). */
int rlk_bench_run_procs(const rlk_bench_opts *o, const rlk_bench_driver *d,
                        const rlk_bench_target *t, const rlk_bench_identity *ids,
                        rlk_bench_run_result *out, char *err, size_t errlen);

/* In a child of rlk_bench_run_procs (o->ready_fd >= 0): says "ready" and
 * reads the common start time into *t0. 0 (also when not a child: *t0
 * untouched), or -1: the run is off. */
int rlk_bench_child_gate(const rlk_bench_opts *o, int64_t *t0);

/* Frees *r. Call only when r->unfinished == 0: abandoned threads may still
 * use what the run shares with them. */
void rlk_bench_run_free(rlk_bench_run_result *r);

#endif /* RLK_BENCH_RUN_H */
