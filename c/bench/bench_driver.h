/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_driver: how one contender talks to Redis. rlk-bench runs the same
 * workload loops over two drivers: the baseline (raw hiredis, EVALSHA) and
 * rlk (the library). One driver state per contender, used by one thread.
 */
#ifndef RLK_BENCH_DRIVER_H
#define RLK_BENCH_DRIVER_H

#include <hiredis/hiredis.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "bench_script.h"

#define RLK_BENCH_STR2(x) #x
#define RLK_BENCH_STR(x) RLK_BENCH_STR2(x)
/* "0.14.1" */
#define RLK_BENCH_HIREDIS_VERSION_STR RLK_BENCH_STR(HIREDIS_MAJOR) "." \
    RLK_BENCH_STR(HIREDIS_MINOR) "." RLK_BENCH_STR(HIREDIS_PATCH)

/* What every contender shares. */
typedef struct rlk_bench_target {
    const char *host;
    int port;
    const char *url;                  /* redis://host:port, for the library */
    int workload;                     /* 1 or 2 */
    const rlk_bench_script *acquire;  /* reentrant/acquire */
    const rlk_bench_script *release;  /* reentrant/release */
    const char *lease_ms;             /* decimal string */
    int fair;                         /* W2 (rlk): rlk_fairlock instead of rlk_lock */
    int spin;                         /* W2 (rlk): rlk_lock_set_spin (no pub/sub) */
    int kind;                         /* W2 (rlk): another kind (bench_kinds.h), 0: none */
    int names;                        /* W2 (rlk), --lock fastmulti|multilock: names per acquisition */
    int no_metrics;                   /* rlk: rlk_metrics_set_enabled(client, 0) */
    int w1_lock;                      /* rlk W1: rlk_lock_try_lock(0) + rlk_lock_unlock, not
                                         rlk_evalv of the two scripts */
    int w1_watchdog;                  /* ... with lease -1 (the watchdog's), not lease_ms */
    int connect_timeout_ms;
    int command_timeout_ms;
} rlk_bench_target;

/* Who one contender is: its key, channel and owner id (owned by the caller,
 * alive as long as the driver state). */
typedef struct rlk_bench_identity {
    int index;
    const char *key;
    const char *channel;
    const char *owner;
    const char *waiters;    /* {key}:rlk_waiters */
    const char *grant;      /* {key}:rlk_next */
} rlk_bench_identity;

typedef enum rlk_bench_acq {
    RLK_BENCH_ACQ_OK = 0,     /* the lock is ours */
    RLK_BENCH_ACQ_HELD,       /* held by another (try_acquire only) */
    RLK_BENCH_ACQ_ERR,        /* failed; err holds why */
    RLK_BENCH_ACQ_ABANDONED   /* lock(): still waiting at deadline + grace (stuck) */
} rlk_bench_acq;

typedef struct rlk_bench_driver {
    const char *lib;          /* "rlk", "hiredis" */
    const char *lib_version;
    /* Connects and prepares one contender. 0, or -1 with err. */
    int (*open)(void **st, const rlk_bench_target *t, const rlk_bench_identity *id,
                char *err, size_t errlen);
    /* W1: one acquire script call. */
    rlk_bench_acq (*try_acquire)(void *st, char *err, size_t errlen);
    /* W1: one release script call; 0 when the lock was released. */
    int (*release)(void *st, char *err, size_t errlen);
    /* W2: blocking acquire, waiting the driver's own way. A waiter still
     * without the lock at give_up_ns (absolute CLOCK_MONOTONIC ns: deadline
     * + grace) is stuck: return ABANDONED then, or soon after *abandon
     * becomes nonzero (set at the same moment), whichever the driver can
     * observe. */
    rlk_bench_acq (*lock)(void *st, const atomic_int *abandon, int64_t give_up_ns,
                          char *err, size_t errlen);
    /* W2: release what lock() took; 0 on success. */
    int (*unlock)(void *st, char *err, size_t errlen);
    void (*close)(void *st);
    /* One-line description of each workload's calls. */
    const char *w1_desc;
    const char *w2_desc;
    /* Optional (NULL: none): the contender's metrics snapshot, an opaque
     * blob of at most len bytes into buf; returns its size (0: none). */
    size_t (*metrics)(void *st, void *buf, size_t len);
    /* Optional (NULL: not measured). After a W2 lock(): the handoff
     * timeline of that acquisition, absolute CLOCK_MONOTONIC ns, 0 where
     * unknown: [0] the wake-up message received by the subscriber, [1] the
     * waiter woken, [2] the claim (the acquire that took it) sent, [3] its
     * reply read. */
    void (*timeline)(void *st, int64_t out[4]);
    /* Optional: the contender's subscriber wake-ups (reads that brought
     * messages) and messages received so far. */
    void (*sub_counts)(void *st, uint64_t *wakeups, uint64_t *messages);
} rlk_bench_driver;

extern const rlk_bench_driver rlk_bench_baseline_driver;
extern const rlk_bench_driver rlk_bench_setnx_driver;    /* --baseline --lock setnx */

#ifdef RLK_BENCH_HAVE_LIB
extern const rlk_bench_driver rlk_bench_rlk_driver;
/* Nonzero once W2 through the library's blocking lock is implemented. */
int rlk_bench_rlk_w2_available(void);
/* The size of the rlk driver's metrics blob (an rlk_metrics). */
size_t rlk_bench_rlk_metrics_size(void);
/* Writes n contenders' metrics blobs (NULL or the wrong size: skipped) to
 * path as Prometheus text, snapshot i labelled label="<i>". 0, or -1 with
 * a message on stderr. */
int rlk_bench_rlk_write_metrics(const char *path, void *const *blobs, const size_t *sizes, int n,
                                const char *label);
#endif

#endif /* RLK_BENCH_DRIVER_H */
