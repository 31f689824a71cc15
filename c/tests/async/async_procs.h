/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_procs.h - several processes on one lock, for the async suites on one
 * server (async_cases.c: mutex_procs, kill_holder) and on a Redis Cluster
 * (async_cluster.c: procs, kill_holder). Everything takes the URL, so the
 * same code runs on redis://, rediss://, redis+cluster:// and
 * rediss+cluster://.
 *
 * ap_contend() forks async and blocking processes (separate processes, one
 * client each, never threads) that lock and unlock one name of one kind
 * (RLK_KIND_LOCK, RLK_KIND_FAIR or RLK_KIND_WRITE: the write side of the
 * read-write lock; or the non-reentrant lock and fair lock, or the spin
 * lock: the variant), each hold stamped on CLOCK_MONOTONIC into a hold log
 * (holdlog.h) and held AP_HOLD_NS (busy) so that an overlap would show.
 * The parent merges the logs and checks them: the report's conflicts must
 * be 0; handoffs counts the consecutive holds (in start order) of which one
 * is an async process's and the other a blocking one's.
 *
 * ap_holder_start() forks a child that takes a lock (with a lease, or the
 * watchdog) and holds it until it is killed.
 */
#ifndef RLK_TEST_ASYNC_PROCS_H
#define RLK_TEST_ASYNC_PROCS_H

#include <sys/types.h>

#include "holdlog.h"

#define AP_TASKS 4                  /* tasks of each async process */
#define AP_HOLD_NS 1000000LL        /* each hold lasts this long */

#define AP_PLAIN 0                  /* rlk_async_lock; rlk_lock, rlk_fairlock, rlk_rwlock */
#define AP_NR 1                     /* rlk_async_lock_nr; rlk_nrlock, rlk_fairlock non-reentrant */
#define AP_SPIN 2                   /* rlk_async_lock_spin; rlk_lock with rlk_lock_set_spin */

typedef struct ap_run {
    const char *url;
    int kind;                       /* RLK_KIND_LOCK, RLK_KIND_FAIR, RLK_KIND_WRITE */
    int variant;                    /* AP_PLAIN, AP_NR (LOCK, FAIR), AP_SPIN (LOCK) */
    const char *name;
    int async_procs;                /* processes with AP_TASKS tasks each on one loop */
    int blocking_procs;             /* processes with one blocking client */
    int iters;                      /* per async task; a blocking process does 2 * iters */
    long long wait_ms;              /* each acquire's wait */
    int cmd_timeout_ms;             /* the clients' command timeout */
} ap_run;

typedef struct ap_result {
    tk_hold_report rep;             /* of the merged logs (rep.holds, rep.conflicts) */
    long handoffs;                  /* async <-> blocking, consecutive holds */
    int expected;                   /* holds there would be if every acquire succeeded */
    int child_failures;             /* children that did not exit 0 */
    int bad_lines;                  /* malformed log lines */
} ap_result;

/* Runs the processes, waits for them (each bounded by its own loop's time),
 * merges and checks the logs. 0, or -1 when it could not start them. */
int ap_contend(const ap_run *run, ap_result *out);

/* Forks a child that locks name (kind, task 1; lease_ms > 0, or -1 with
 * its client's watchdog of watchdog_ms), says so on a pipe, then runs its
 * loop (renewing) until it is killed (at most 120 s; it dies with its
 * parent). Returns the child's pid once it holds the lock (bounded: 15 s),
 * or -1. */
pid_t ap_holder_start(const char *url, int kind, const char *name, long long lease_ms,
                      long long watchdog_ms);

#endif /* RLK_TEST_ASYNC_PROCS_H */
