/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client_t.h - struct rlk_client and its counters, on the ground floor of
 * client/: the modules below client.c (error, scripts, transport, conn,
 * pool, role, topo, sentinel, cluster, ...) read and write its fields and
 * include this header, not client.h, so that none of them depends on the
 * client module (client.c) that creates it.
 *
 * Threading rules
 *   - Everything in struct rlk_client except the pool slots is written once
 *     by rlk_connect() and read-only afterwards; the slots are guarded by
 *     pool_mu (pool.h).
 *   - rlk_set_error() records the error for the calling thread only (error.h).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_CLIENT_T_H
#define RLK_CLIENT_T_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/time.h>

#include "rlk.h"
#include "client/error.h"
#include "client/pool.h"
#include "client/scripts.h"
#include "client/url.h"

/* What the connection layer counts for the metrics (rlk_metrics_get). */
typedef struct rlk_client_counters {
    atomic_ullong reconnects;       /* pool connections opened again after a drop */
    atomic_ullong connect_failures; /* connects that failed (pool.c, the async engine) */
    atomic_ullong redirects;        /* cluster MOVED/ASK followed */
    atomic_ullong noscript_reloads; /* NOSCRIPT answered by SCRIPT LOAD */
    atomic_int no_setinfo;          /* CLIENT SETINFO refused once: not sent again (conn.h) */
} rlk_client_counters;

/* Adds one to c's counters->field (none on a client without counters). */
#define RLK_CLIENT_COUNT(c, field) \
    do { \
        if ((c)->counters) \
            atomic_fetch_add_explicit(&(c)->counters->field, 1, memory_order_relaxed); \
    } while (0)

struct rlk_client {
    uint64_t id;                    /* unique per process; keys the per-thread errors */
    int fatal;                      /* RLK_ERR_URL / _BUNDLE / _NOMEM from rlk_connect: every call fails */
    char fatal_msg[RLK_ERRSTR_MAX];

    rlk_url url;
    char *url_masked;
    char addr[300];                 /* for messages: "127.0.0.1:6379", "/tmp/redis.sock" */
    struct timeval connect_tv;
    struct timeval command_tv;
    int connect_timeout_ms;
    int command_timeout_ms;
    long long watchdog_lease_ms;
    long long lost_margin_ms;
    int no_preload;
    int functions;                  /* RLK_FUNCTIONS_AUTO / _ON / _OFF (functions.h) */
    atomic_int fn_state;            /* RLK_FN_UNKNOWN / _EVALSHA / _FCALL: the mode decided */
    int min_replicas;               /* WAIT after each writing script: 0 none (conn.h) */
    int min_replicas_timeout_ms;    /* its timeout (> 0) */

    rlk_script_set scripts;

    pthread_mutex_t pool_mu;
    pthread_cond_t pool_cv;
    rlk_slot *slots;
    int pool_size;

    const struct rlk_topo *topo;    /* standalone, sentinel or cluster (topo.h): set once by
                                       rlk_connect, asked by every layer above */
    struct rlk_cluster *cluster;    /* the cluster variant's state (cluster.c only); else NULL */
    struct rlk_sentinel *sentinel;  /* the sentinel variant's state (sentinel.c only); else NULL */
    struct rlk_tls *tls;            /* rediss:// (tls.h, transport.h): every dial is TLS; else NULL */
    int tls_owned;                  /* 1: freed with the client (a cluster node shares its parent's) */
    atomic_int role;                /* enum rlk_role_kind: what ROLE said last (role.h) */
    int pubsub_opt;                 /* rlk_options.pubsub as given */
    atomic_int pubsub;              /* resolved: RLK_PUBSUB_GLOBAL / _SHARDED; 0 (AUTO on a
                                       cluster whose version is not known yet): unresolved */
    atomic_int native_caps;         /* the server's compare commands (native.h); 0: not
                                       known, cleared by every new connection (conn.c) */

    /* For the lock runtime: its per-client state, freed first thing in
     * rlk_free (runtime/rt.c), before any connection is closed. */
    void *runtime;

    rlk_client_counters own_counters;
    rlk_client_counters *counters;  /* &own_counters; a cluster node's: its parent's */
};

#endif /* RLK_CLIENT_T_H */
