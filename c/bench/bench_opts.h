/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_opts: rlk-bench's command line (see /work/shared/bench-schema.md). */
#ifndef RLK_BENCH_OPTS_H
#define RLK_BENCH_OPTS_H

#include <stddef.h>
#include <stdio.h>

#define RLK_BENCH_MAX_CLIENTS 1024

#define RLK_BENCH_MAX_PENDING 1000000

typedef struct rlk_bench_opts {
    int workload;            /* 1 or 2; 3: pending (bench_async.h) */
    int clients;
    double duration_s;
    const char *variant;     /* NULL: "rlk" or "baseline" */
    const char *host;        /* loopback only */
    int port;
    const char *key_prefix;
    int hold_ms;
    const char *events_out;  /* W2 only; NULL: none */
    double grace_s;
    int baseline;
    const char *scripts_dir; /* NULL: the library's embedded set, else the source tree */
    int procs;               /* --procs: one process per contender (W2) or client (W1) */
    int fair;                /* --lock fair: W2 through rlk_fairlock (rlk variant only) */
    int spin;                /* --lock spin: W2 through rlk_lock waiting by back-off (rlk only) */
    int setnx;               /* --lock setnx: SET NX PX + compare-and-delete (--baseline only) */
    int kind;                /* --lock rwlock-write|semaphore|psemaphore: bench_kinds.h (W2, rlk) */
    int tls;                 /* --tls: every connection TLS (rediss:// for the library) */
    const char *cacert;      /* --cacert FILE: the CA that signed the server's certificate */
    const char *cert;        /* --cert FILE, --key FILE: a client certificate (mutual TLS) */
    const char *key;
    const char *metrics_out; /* rlk variant: the library's metrics exposition; NULL: none */
    int no_metrics;          /* --no-metrics: the library's recording off (rlk_metrics_set_enabled) */
    int api_async;           /* --api async: the rlk variant through rlk_async.h (bench_async.h) */
    int w1_lock;             /* --w1-lock, implied by --api async: W1 through the lock calls
                                (rlk_lock_try_lock wait 0 + rlk_lock_unlock) instead of rlk_evalv */
    int watchdog;            /* --watchdog: W1's lock calls take a watchdog lease (lease -1: the
                                client's watchdog_lease_ms, renewed until unlock), not 30000 ms */
    int requests;            /* --workload pending: lock requests made at once */
    int names;               /* ... on this many names */
    /* Set by the multi-process runner in each child, -1 otherwise: the
     * child reports "ready" on ready_fd and reads the common start time
     * (absolute CLOCK_MONOTONIC ns, or -1: abort) from gate_fd. */
    int ready_fd;
    int gate_fd;
} rlk_bench_opts;

/* Returns 0 when *o is ready to run, 1 when --help was asked for, -1 with a
 * message in err on a usage error. */
int rlk_bench_parse_opts(int argc, char **argv, rlk_bench_opts *o, char *err, size_t errlen);

/* Nonzero for "localhost", 127.0.0.0/8 and ::1. */
int rlk_bench_is_loopback(const char *host);

void rlk_bench_usage(FILE *f);

#endif /* RLK_BENCH_OPTS_H */
