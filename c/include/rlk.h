/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk - Redis lock kit: the C harness around rlk's Lua scripts.
 *
 * One client object talks to one Redis server. It holds a small pool of
 * hiredis connections, so several threads can share it. Every script rlk
 * ships is embedded in the library (or read from a bundle directory) and is
 * called by name: EVALSHA, and on NOSCRIPT the script is loaded and the call
 * retried once. After a connection error the client reconnects, restores its
 * timeouts and database, and reloads the scripts.
 *
 * Errors: functions return an rlk error code (RLK_OK == 0). The code and a
 * one-line message of the last failed call made *by the calling thread* on a
 * client are kept on that client: rlk_err(c), rlk_errstr(c).
 *
 * Ownership: the caller owns what it creates (rlk_free, rlk_lock_free) and
 * every redisReply handed out (freeReplyObject).
 *
 * Sections, in the order of the library's layers (c/src/README.md): errors,
 * client, scripts; holders and lost locks (every lock kind); the kinds on one
 * server (reentrant, read-write, fair and fenced lock, semaphore,
 * permit-expirable semaphore, count-down latch); MultiLock and RedLock.
 */
#ifndef RLK_H
#define RLK_H

#include <stddef.h>
#include <stdint.h>
#include <hiredis/hiredis.h>

#include "rlk_export.h"

#ifdef __cplusplus
extern "C" {
#endif

#define RLK_VERSION_MAJOR 0
#define RLK_VERSION_MINOR 2
#define RLK_VERSION_PATCH 0
#define RLK_VERSION "0.2.0"

/* Error codes. Stable numbers: the CLI maps them to exit codes. */
enum rlk_error {
    RLK_OK = 0,
    RLK_ERR_IO = 1,           /* connection lost or refused (after one reconnect) */
    RLK_ERR_TIMEOUT = 2,      /* connect or command timed out */
    RLK_ERR_URL = 3,          /* malformed URL */
    RLK_ERR_AUTH = 4,         /* AUTH or SELECT refused */
    RLK_ERR_PROTOCOL = 5,     /* a reply of an unexpected shape */
    RLK_ERR_SCRIPT = 6,       /* the script replied an error; errstr is its text */
    RLK_ERR_NOSUCHSCRIPT = 7, /* no script of that name in the client's set */
    RLK_ERR_SHA = 8,          /* the server computed another SHA-1 than the build */
    RLK_ERR_BUNDLE = 9,       /* bundle directory missing, unreadable or inconsistent */
    RLK_ERR_ARG = 10,         /* bad argument to an API call */
    RLK_ERR_NOMEM = 11,       /* out of memory */
    RLK_ERR_SERVER = 12,      /* any other error reply from the server */
    RLK_ERR_NOT_OWNER = 13,   /* unlock of a lock the caller does not hold */
    RLK_ERR_BUSY = 14,        /* the lock stayed held by another until the wait ran out */
    RLK_ERR_LOST = 15,        /* the lock was lost (lease ran out or key removed) */
    RLK_ERR_UPGRADE = 16,     /* a read holder asked for the write lock of the same read-write
                                 lock (it would wait forever): release the reads first */
    RLK_ERR_INTERRUPTED = 17, /* the wait was ended by rlk_interrupt_waits (a fair waiter has
                                 left the queue) */
    RLK_ERR_NOTIFY = 18,      /* an unlock did release (the holder's field or the key is gone),
                                 but the server's ACL refused the script's PUBLISH: waiters are
                                 not woken and try again only at their TTL (docs/acl.md) */
    RLK_ERR_READONLY = 19,    /* the server is a replica: READONLY, MASTERDOWN, or its ROLE (the
                                 call was not run; docs/sentinel.md) */
    RLK_ERR_NOREPLICAS = 20,  /* too few replicas: the server's NOREPLICAS, or fewer than
                                 rlk_options.min_replicas acknowledged the write (an acquisition
                                 is rolled back; docs/sentinel.md) */
    RLK_ERR_UNSETTLED = 21,   /* a lock call's reply was lost and whether it ran could not be
                                 settled (server out of reach): it may still run. Never counted
                                 as held; a hold it left is given back at this thread's next
                                 acquisition or last unlock of that lock, else ends with its
                                 lease (docs/runtime.md "Lost replies") */
    RLK_ERR_TLS = 22,         /* the TLS settings are unusable: a CA, certificate or key file
                                 missing, unreadable or mismatched; TLS options without TLS */
    RLK_ERR_CANCELLED = 23,   /* rlk_async_cancel ended the request (rlk_async.h) */
    RLK_ERR_CLOSED = 24,      /* the async client was freed with the request pending */
    RLK_ERR_FENCED = 25,      /* a fencing check refused a token below the highest the resource
                                 accepted (rlk_fence_check, rlk_fence_write); nothing changed */
    RLK_ERR_REENTRY = 26      /* the holder of a non-reentrant lock asked for it again (rlk_nrlock_*);
                                 refused, not counted: it still holds it once */
};

/* Returns a static, one-word name for an error code ("RLK_ERR_IO"). */
RLK_API const char *rlk_strerror(int err);

/* ---------------------------------------------------------------- client */

typedef struct rlk_client rlk_client;

typedef struct rlk_options {
    const char *url;          /* redis://[user:password@]host:port[/db] or unix:///path[?db=N]
                                 or redis+sentinel://[user:password@]host:port[,host:port...]
                                 /MASTERNAME[/db] (docs/sentinel.md);
                                 NULL: $RLK_URL (set but empty: RLK_ERR_URL), then
                                 redis://127.0.0.1:6379. Scheme case-insensitive */
    int connect_timeout_ms;   /* <= 0: 2000 */
    int command_timeout_ms;   /* <= 0: 5000 */
    const char *bundle_dir;   /* NULL: the embedded scripts */
    int pool_size;            /* <= 0: 4 connections */
    long long watchdog_lease_ms; /* <= 0: 30000 */
    int no_preload;           /* nonzero: do not SCRIPT LOAD on connect (load on NOSCRIPT) */
    long long lost_margin_ms; /* <= 0: 0. A lock (or kept permit) whose renewals keep failing
                                 is declared lost (RLK_LOST_EXPIRED) lost_margin_ms before its
                                 lease, counted from the send of its last successful renewal,
                                 runs out: the time the application needs to stop using it */
    const char *password;     /* AUTH password when the URL has none (redis://host or
                                 redis://user@host); NULL: none. A password in the URL wins.
                                 Never shown: messages and rlk_client_url() mask it. The
                                 library reads no password variable: callers (the rlk CLI)
                                 take $RLK_PASSWORD / $REDISCLI_AUTH themselves. */
    int functions;            /* how scripts are called (Redis 7 Functions, the library rlk):
                                 RLK_FUNCTIONS_AUTO (0), RLK_FUNCTIONS_ON, RLK_FUNCTIONS_OFF */
    const char *sentinel_password; /* redis+sentinel://: the sentinels' AUTH password when the
                                 URL has no ?sentinel_password=; NULL: none */
    int pubsub;               /* RLK_PUBSUB_AUTO (0, the default), _GLOBAL or _SHARDED: how
                                 releases are published and waited for (docs/cluster.md) */
    int min_replicas;         /* <= 0: none. N > 0: every writing script call is followed, on
                                 its connection and in the same round trip, by WAIT N timeout;
                                 fewer acks: RLK_ERR_NOREPLICAS (docs/sentinel.md) */
    int min_replicas_timeout_ms; /* <= 0: 1000 (Redisson's slavesSyncTimeout). The WAIT's
                                 timeout, cut to 3/4 of the command timeout or the wait left */
    /* TLS (docs/tls.md). On for rediss://, rediss+cluster:// and rediss+sentinel:// URLs, or
     * for any redis* URL when tls is nonzero. Each file or name left NULL is taken from its
     * environment variable ($RLK_TLS_CACERT, ..., read only when TLS is on); a TLS option
     * given here with a unix:// URL, or with a redis:// URL and tls 0, is RLK_ERR_TLS. The
     * server's certificate is checked against tls_cacert / tls_cacertdir (else the system's
     * CA store) and must name the URL's host (or tls_sni); TLS 1.2 or newer. */
    int tls;                  /* nonzero (or $RLK_TLS=1): TLS for a redis:// URL too */
    const char *tls_cacert;   /* PEM file of the CAs to trust ($RLK_TLS_CACERT) */
    const char *tls_cacertdir; /* directory of hashed CA certificates ($RLK_TLS_CACERTDIR) */
    const char *tls_cert;     /* client certificate chain, PEM ($RLK_TLS_CERT) */
    const char *tls_key;      /* its private key, PEM ($RLK_TLS_KEY) */
    const char *tls_key_password_file; /* the key's pass phrase, first line ($RLK_TLS_KEY_PASSWORD_FILE);
                                 an encrypted key without it is RLK_ERR_TLS, never a prompt */
    const char *tls_sni;      /* server name to send and check instead of the URL's host ($RLK_TLS_SNI) */
    int tls_insecure;         /* nonzero (or $RLK_TLS_INSECURE=1): no certificate or name check */
} rlk_options;

/* rlk_options.functions. AUTO: before the first script call the client asks
 * the server FCALL_RO rlk_version 0; when the server holds the library rlk built
 * from exactly this client's scripts (same scripts id), every call is FCALL /
 * FCALL_RO rlk_<kind>_<op>, else EVALSHA. ON: always FCALL; a call fails with
 * RLK_ERR_SHA while the server lacks the library or holds another one
 * (`rlk functions load`). OFF: always EVALSHA (SCRIPT LOAD on NOSCRIPT). In
 * FCALL mode nothing is SCRIPT LOADed at connect. */
#define RLK_FUNCTIONS_AUTO 0
#define RLK_FUNCTIONS_ON 1
#define RLK_FUNCTIONS_OFF (-1)

/* rlk_options.pubsub: the publish command the scripts get and the subscribe
 * command waiters use. */
enum rlk_pubsub {
    RLK_PUBSUB_AUTO = 0,      /* SHARDED on a Redis Cluster of Redis 7 or later (Redisson 4.x's
                                 shardedSubscriptionMode AUTO), GLOBAL everywhere else */
    RLK_PUBSUB_GLOBAL = 1,    /* PUBLISH / SUBSCRIBE (a cluster forwards PUBLISH to every node) */
    RLK_PUBSUB_SHARDED = 2    /* SPUBLISH / SSUBSCRIBE (Redis 7+): only the shard owning the
                                 channel's slot hears it; on a cluster the waiters subscribe
                                 on that shard */
};

RLK_API void rlk_options_init(rlk_options *opts);

/* Parses and connects; loads every script (unless no_preload) and checks each
 * SHA-1 the server returns against the build's. Returns NULL only when out of
 * memory; otherwise check rlk_err(c): a client that failed to connect is still
 * returned so the caller can read the message, and must be freed. */
RLK_API rlk_client *rlk_connect(const rlk_options *opts);
RLK_API rlk_client *rlk_connect_url(const char *url); /* defaults for everything else */
RLK_API void rlk_free(rlk_client *c);

RLK_API int rlk_err(const rlk_client *c);
RLK_API const char *rlk_errstr(const rlk_client *c);

/* The URL the client was opened with, password masked ("redis://u:***@h:p/0"). */
RLK_API const char *rlk_client_url(const rlk_client *c);
/* The server the client talks to now, "host:port" (or the socket path): for a
 * redis+sentinel:// client the master the sentinels named last ("" when none
 * is known); *switches (may be NULL) gets how many failovers it followed. */
RLK_API void rlk_client_server(rlk_client *c, char *buf, size_t len, unsigned long long *switches);

/* RLK_PUBSUB_GLOBAL or RLK_PUBSUB_SHARDED: what the client uses (AUTO resolved: on a cluster
 * it asks one master's version once, and until that answers it uses GLOBAL). */
RLK_API int rlk_client_pubsub(rlk_client *c);

/* ---------------------------------------------------------------- scripts */

typedef struct rlk_script_info {
    const char *name;    /* "reentrant/acquire" */
    int version;
    int numkeys;         /* -1: variadic */
    const char *sha1;    /* 40 lowercase hex digits */
    const char *body;
    size_t body_len;
} rlk_script_info;

/* The set built into the library. */
RLK_API size_t rlk_embedded_count(void);
RLK_API const rlk_script_info *rlk_embedded_at(size_t i);

/* The set a client uses (embedded, or its bundle directory). */
RLK_API size_t rlk_script_count(const rlk_client *c);
RLK_API const rlk_script_info *rlk_script_at(const rlk_client *c, size_t i);
RLK_API const rlk_script_info *rlk_script_find(const rlk_client *c, const char *name);

/* SCRIPT LOAD every script; RLK_ERR_SHA if a returned SHA-1 differs. */
RLK_API int rlk_load_scripts(rlk_client *c);

/* SCRIPT EXISTS for every script; present[i] (rlk_script_count entries) is
 * set to 1 when the server holds script i. */
RLK_API int rlk_verify_scripts(rlk_client *c, int *present);

/* ---------------------------------------------------------------- functions */

/* The Redis 7 Functions library built from the embedded scripts: the bytes of
 * share/rlk/functions.lua, `#!lua name=rlk`, one function per script,
 * rlk_<kind>_<op> ('/' -> '_'), plus rlk_version. */
typedef struct rlk_library_info {
    const char *name;        /* "rlk" */
    const char *release;     /* the rlk version it was built with */
    const char *scripts_id;  /* SHA-1 of its scripts' manifest lines (rlk_version's 3rd reply) */
    const char *sha1;        /* SHA-1 of code: the library's identity */
    const char *code;
    size_t code_len;
} rlk_library_info;

RLK_API const rlk_library_info *rlk_embedded_library(void);

/* FUNCTION LOAD [REPLACE] of the embedded library. Without replace, a server
 * that already holds a library rlk refuses (RLK_ERR_SERVER, "already exists"). */
RLK_API int rlk_load_functions(rlk_client *c, int replace);

/* What the server holds under the name rlk (FUNCTION LIST LIBRARYNAME rlk
 * WITHCODE), compared with the embedded library. */
typedef struct rlk_functions_state {
    int present;             /* 1: the server has a library rlk */
    int same_code;           /* 1: its code is byte for byte the embedded library's */
    char release[32];        /* from its code's comment ("" when not found) */
    char scripts_id[41];     /* from its code ("" when not found) */
    char sha1[41];           /* SHA-1 of the server's code ("" when absent) */
    int functions;           /* number of functions it registers */
} rlk_functions_state;

RLK_API int rlk_verify_functions(rlk_client *c, rlk_functions_state *st);

/* The server's library code into *code (malloc'ed, *len bytes; NULL and 0 when
 * the server has no library rlk). The caller frees *code. */
RLK_API int rlk_server_functions_code(rlk_client *c, char **code, size_t *len);

/* 1 when c calls scripts with FCALL, 0 with EVALSHA, -1 not decided yet
 * (AUTO before its first script call). */
RLK_API int rlk_functions_active(rlk_client *c);

/* Replica acknowledgement (rlk_options.min_replicas > 0): how many replicas
 * acknowledged the calling thread's last script call (rlk_evalv, or the last
 * script of a lock call), from the WAIT sent with it; -1 when unknown (WAIT
 * refused, or its reply lost); -2 when no WAIT was sent (min_replicas 0, a
 * read-only script, no call yet). */
RLK_API int rlk_last_replica_acks(void);

/* Calls a script by name. keylens/arglens may be NULL (strlen is used).
 * RLK_OK: *reply holds the script's reply (caller frees it).
 * RLK_ERR_SCRIPT: the script replied an error; errstr holds its text, *reply is NULL. */
RLK_API int rlk_evalv(rlk_client *c, const char *name,
                      int nkeys, const char *const *keys, const size_t *keylens,
                      int nargs, const char *const *args, const size_t *arglens,
                      redisReply **reply);
RLK_API int rlk_eval(rlk_client *c, const char *name,
                     int nkeys, const char *const *keys,
                     int nargs, const char *const *args,
                     redisReply **reply);

/* Any command, argv-style, through the client's pool (reconnects like eval).
 * An error reply is returned as RLK_ERR_SERVER with the text in errstr. */
RLK_API int rlk_command(rlk_client *c, int argc, const char *const *argv,
                        const size_t *argvlen, redisReply **reply);

/* Bounds every call the calling thread makes from now on (connect and
 * command timeouts included) to end within ms (< 0: no bound). For a last
 * call that must not hang, e.g. releasing a lock known lost. The waits of
 * try_lock, acquire and await calls bound themselves by their wait. */
RLK_API void rlk_thread_time_limit(long long ms);

/* Ends every wait on c, now and later, with RLK_ERR_INTERRUPTED (a fair
 * waiter leaves the queue first; a RedLock over c stops retrying): for a
 * process that is shutting down, e.g. from a thread that received SIGTERM.
 * Does not cut a command already on the wire. Thread-safe; not
 * async-signal-safe. */
RLK_API void rlk_interrupt_waits(rlk_client *c);

/* ---------------------------------------------------------------- holders, lost locks */

/* This client's uuid (the first part of its holder ids), 36 characters. */
RLK_API const char *rlk_client_uuid(const rlk_client *c);

/* Why a lock was lost. */
enum rlk_lost_reason {
    RLK_LOST_GONE = 1,    /* a renewal found the lock no longer held by this holder */
    RLK_LOST_EXPIRED = 2  /* no renewal got through (errors, or none sent: the process was
                             stopped) until lost_margin_ms before its lease, counted from the
                             send of the last successful renewal, runs out; none is sent after
                             that: a hold of the same holder id then may be another process's */
};
/* Called from the watchdog thread, once per lost lock; must not block long.
 * When: RLK_LOST_GONE as soon as a renewal replies the holder no longer has
 * it - at once (about a round trip) after a force unlock of a reentrant,
 * read-write or fenced lock, whose channel the holder listens on while it
 * holds it; at the next renewal (a third of the lease) for a fair lock or
 * a plain DEL. RLK_LOST_EXPIRED at (send time of the last successful
 * renewal or acquire) + lease - rlk_options.lost_margin_ms: with the
 * default margin 0 the server may already have expired the lock. Only
 * lease-less (watchdog) locks are watched. */
typedef void (*rlk_lost_fn)(const char *name, const char *owner, int reason, void *userdata);
RLK_API void rlk_set_lost_callback(rlk_client *c, rlk_lost_fn fn, void *userdata);

/* The kinds of hold a client's watchdog renews (docs/runtime.md): the
 * lost-lock callbacks say which one was lost. rlk_set_lost_callback's
 * callback is called for every kind too; this one adds the kind (a thread
 * may hold both the write lock and a read of one read-write lock). */
enum rlk_lock_kind {
    RLK_KIND_LOCK = 0,      /* rlk_lock_* (reentrant) */
    RLK_KIND_FAIR = 1,      /* rlk_fairlock_* */
    RLK_KIND_FENCED = 2,    /* rlk_fenced_* */
    RLK_KIND_READ = 3,      /* rlk_rwlock_*, the read side */
    RLK_KIND_WRITE = 4      /* rlk_rwlock_*, the write side */
};
/* "lock", "fair", "fenced", "read", "write"; "unknown" otherwise. */
RLK_API const char *rlk_kind_name(int kind);
/* Called from the watchdog thread, once per lost hold, after the plain
 * callback; must not block long. NULL: none. */
typedef void (*rlk_lost_kind_fn)(int kind, const char *name, const char *owner, int reason,
                                 void *userdata);
RLK_API void rlk_set_lost_kind_callback(rlk_client *c, rlk_lost_kind_fn fn, void *userdata);

/* ---------------------------------------------------------------- metrics
 *
 * What one client's lock runtime counted since rlk_connect (docs/observability.md
 * lists every metric). Recording is a few relaxed atomic additions on the
 * calling thread: no lock, no allocation. The snapshot is a plain struct (no
 * pointers): it can be copied, summed (rlk_metrics_add) and sent between
 * processes of one build. */

/* The kinds an acquisition is counted under: RLK_KIND_* (the five locks),
 * then these. */
enum rlk_metrics_kind {
    RLK_MKIND_SEMAPHORE = 5,    /* rlk_semaphore_try_acquire / _acquire */
    RLK_MKIND_PSEMAPHORE = 6,   /* rlk_psemaphore_try_acquire(_n) / _acquire */
    RLK_MKIND_LATCH = 7,        /* rlk_latch_await */
    RLK_MKIND_COUNT = 8
};
/* "lock", "fair", "fenced", "read", "write", "semaphore", "psemaphore",
 * "latch"; "unknown" otherwise. */
RLK_API const char *rlk_metrics_kind_name(int kind);

/* How an acquisition call ended. */
enum rlk_acquire_result {
    RLK_ACQ_ACQUIRED = 0,   /* RLK_OK */
    RLK_ACQ_TIMED_OUT = 1,  /* RLK_ERR_BUSY: still held when the wait (0 included) ran out */
    RLK_ACQ_REFUSED = 2,    /* refused as asked: RLK_ERR_ARG, _UPGRADE, _SCRIPT, _NOREPLICAS,
                               _INTERRUPTED, _NOT_OWNER */
    RLK_ACQ_ERROR = 3,      /* any other error (connection, timeout, protocol, unsettled) */
    RLK_ACQ_RESULTS = 4
};
/* "acquired", "timed_out", "refused", "error"; "unknown" otherwise. */
RLK_API const char *rlk_acquire_result_name(int result);

#define RLK_METRICS_BUCKETS 18      /* finite histogram bounds; one more bucket above them */
#define RLK_METRICS_NAMES_MAX 16    /* names watched per client (rlk_metrics_watch) */
#define RLK_METRICS_NAME_SIZE 128   /* longest watched name + 1 */

/* The upper bound of bucket i (0 <= i < RLK_METRICS_BUCKETS) in seconds:
 * 0.0001 0.00025 0.0005 0.001 ... 10 30 60 (1-2.5-5 per decade, then 30
 * and 60); +Inf for i == RLK_METRICS_BUCKETS, NaN otherwise. */
RLK_API double rlk_metrics_bucket_bound(int i);

/* A histogram of durations: buckets[i] counts the observations in
 * (bound(i-1), bound(i)] (not cumulative); buckets[RLK_METRICS_BUCKETS]
 * those above the largest bound. count is their sum. */
typedef struct rlk_histogram {
    unsigned long long count;
    unsigned long long sum_ns;      /* the sum of the observations, in nanoseconds */
    unsigned long long buckets[RLK_METRICS_BUCKETS + 1];
} rlk_histogram;

/* How a fenced write (rlk_fence_write, rlk_async_fence_write) ended, as
 * counted: the calls that ended otherwise (bad arguments, a script's other
 * refusals, a lost reply, a connection error) are not counted. */
enum rlk_fence_result {
    RLK_FENCE_ACCEPTED = 0, /* RLK_OK: the token was not below the highest; the write ran */
    RLK_FENCE_REFUSED = 1,  /* RLK_ERR_FENCED: a stale token; nothing changed */
    RLK_FENCE_RESULTS = 2
};

/* The metrics of one watched name (rlk_metrics_watch), all kinds together. */
typedef struct rlk_name_metrics {
    char name[RLK_METRICS_NAME_SIZE];
    unsigned long long acquisitions[RLK_ACQ_RESULTS];
    rlk_histogram wait;             /* acquisitions that acquired */
    rlk_histogram hold;             /* locks, from acquisition to the last release */
    unsigned long long fence_writes[RLK_FENCE_RESULTS]; /* fenced writes whose fence key is name */
} rlk_name_metrics;

typedef struct rlk_metrics {
    int enabled;                    /* rlk_metrics_set_enabled; 0: the fields marked (r) stood still */
    /* Counters. */
    unsigned long long acquisitions[RLK_MKIND_COUNT][RLK_ACQ_RESULTS]; /* (r) per call */
    unsigned long long acquire_calls;       /* lock acquire round trips (attempts) */
    unsigned long long waits;               /* sleeps on a channel for a release */
    unsigned long long wake_permits;        /* ... ended by a message 0 or a grant */
    unsigned long long wake_all;            /* ... ended by a message 1 or a reconnect */
    unsigned long long ttl_wakeups;         /* ... ended by the holder's TTL running out */
    unsigned long long handoffs;            /* (r) acquisitions right after a wake-up message */
    unsigned long long acquired_after_wait; /* (r) acquisitions that slept at least once */
    unsigned long long renewals;            /* renewal round trips (watchdog, permit keeper) */
    unsigned long long renewal_failures;    /* ... that failed */
    unsigned long long renewals_unacked;    /* ... that too few replicas acknowledged */
    unsigned long long locks_lost_gone;     /* lost locks, RLK_LOST_GONE */
    unsigned long long locks_lost_expired;  /* lost locks, RLK_LOST_EXPIRED */
    unsigned long long lost_replies;        /* lock calls whose reply was lost */
    unsigned long long lost_adopted;        /* ... acquires that had run: kept */
    unsigned long long lost_not_run;        /* ... acquires that had not run */
    unsigned long long lost_unsettled;      /* ... that could not be settled */
    unsigned long long lost_given_back;     /* holds the caller was never told of, released */
    unsigned long long reconnects;          /* pool connections opened again after a drop */
    unsigned long long connect_failures;    /* connects that failed: refused, unreachable, timed
                                               out, TLS handshake (the pool's, the async
                                               client's command connection's) */
    unsigned long long redirects;           /* cluster MOVED/ASK followed */
    unsigned long long failovers;           /* sentinel master switches followed */
    unsigned long long noscript_reloads;    /* NOSCRIPT replies answered by SCRIPT LOAD */
    unsigned long long sub_connects;        /* subscriber connections opened */
    unsigned long long sub_drops;           /* subscriber connections lost */
    unsigned long long fence_writes[RLK_FENCE_RESULTS]; /* (r) fenced writes: accepted, refused */
    unsigned long long delay_refusals;      /* lock acquire attempts refused by a lock-delay
                                               (rlk_lock_set_delay: free, in its delay) */
    unsigned long long held_grants;         /* lock acquisitions on a held grant: the release
                                               wrote the lock in the waiter's name, no claim */
    /* Gauges, at the time of the snapshot. */
    long long locks_held;                   /* holds in the client's registry */
    long long watchdog_entries;             /* ... of which renewed by the watchdog */
    long long requests_waiting;             /* (r) acquisition calls under way */
    /* Histograms. (r) */
    rlk_histogram wait;                     /* acquisition calls that acquired: call to return */
    rlk_histogram hold;                     /* locks: acquisition to the release of the last hold */
    rlk_histogram handoff;                  /* wake-up message to the acquisition it led to */
    /* Watched names. */
    size_t nnames;
    rlk_name_metrics names[RLK_METRICS_NAMES_MAX];
} rlk_metrics;

/* A snapshot of c's metrics into *out. RLK_ERR_NOMEM: the runtime state
 * could not be made. Thread-safe; takes the hold registry's lock briefly
 * (the gauges). */
RLK_API int rlk_metrics_get(rlk_client *c, rlk_metrics *out);
/* Turns recording of the fields marked (r) off (0) or on (1, the default). */
RLK_API int rlk_metrics_set_enabled(rlk_client *c, int on);
/* Also counts acquisitions, waits and holds of `name` on their own (every
 * kind; the exposition labels them name="..."), and the fenced writes whose
 * fence key is `name` (rlk_name_metrics.fence_writes). Names are not watched by
 * default: an application picks the few it wants to see. Idempotent.
 * RLK_ERR_ARG: empty, RLK_METRICS_NAME_SIZE bytes or longer, or
 * RLK_METRICS_NAMES_MAX names watched already. Handles count from the next
 * call on. */
RLK_API int rlk_metrics_watch(rlk_client *c, const char *name);
/* Adds b into a (counters, gauges, histograms; watched names by name, up to
 * RLK_METRICS_NAMES_MAX): the metrics of several clients of a process. */
RLK_API void rlk_metrics_add(rlk_metrics *a, const rlk_metrics *b);

enum rlk_metrics_format {
    RLK_METRICS_PROMETHEUS = 0, /* text exposition format 0.0.4 */
    RLK_METRICS_JSON = 1        /* one object; several snapshots: an array */
};
/* Writes n snapshots m[0..n-1] in format into buf (len bytes, NUL
 * included). labels[i] (labels may be NULL, or hold NULL) is a Prometheus
 * label list added to every sample of m[i], such as process="3" (values
 * escaped by the caller); in JSON it is the object's "labels" string.
 * *needed (may be NULL) gets the size the whole text needs, NUL included.
 * RLK_OK; RLK_ERR_ARG when len is too small (buf then holds a cut, NUL
 * terminated prefix: call again with *needed bytes), or a bad argument. */
RLK_API int rlk_metrics_format(const rlk_metrics *m, size_t n, const char *const *labels, int format,
                               char *buf, size_t len, size_t *needed);

/* ---------------------------------------------------------------- wait-for graph (docs/deadlock.md) */

/* Who waits for whom across lock names, as the server shows it: an edge is a
 * waiter of a name and one of the name's holders; a cycle is a deadlock (or,
 * when by client, a possible one). */
typedef struct rlk_waitgraph rlk_waitgraph;

/* Reads the lock hashes whose names match pattern (SCAN MATCH; NULL: "*"; on
 * a cluster, every master) with their holders and waiters, and builds the
 * graph into *out (free it with rlk_waitgraph_free). RLK_OK, or the error of
 * the first command that failed. */
RLK_API int rlk_waitgraph_read(rlk_client *c, const char *pattern, rlk_waitgraph **out);
/* The held lock names read, and the edges. */
RLK_API size_t rlk_waitgraph_name_count(const rlk_waitgraph *g);
RLK_API size_t rlk_waitgraph_edge_count(const rlk_waitgraph *g);
/* Edge i: waiter waits for name (of kind) that holder holds. holder is a
 * holder id "<client uuid>:<thread id>"; waiter is one too when the server
 * keeps waiters' holder ids (*by_client 0), else the waiter's client uuid
 * (*by_client 1; "cid:<n>" when no holder carries the client number its
 * ticket gives). Any out pointer may be NULL. RLK_ERR_ARG: i out of range. */
RLK_API int rlk_waitgraph_edge(const rlk_waitgraph *g, size_t i, const char **waiter,
                               const char **name, const char **kind, const char **holder,
                               int *by_client);
/* The cycles: cycle i is rlk_waitgraph_cycle_length edges, each one's holder
 * (or its client) the next one's waiter, the last one's the first's.
 * rlk_waitgraph_cycle_edge: the index of its edge j (for
 * rlk_waitgraph_edge), or -1 out of range. by_client 1: a cycle of clients,
 * some waiter known by its client only (a deadlock when each client waits
 * from the thread that holds; docs/deadlock.md). */
RLK_API size_t rlk_waitgraph_cycle_count(const rlk_waitgraph *g);
RLK_API size_t rlk_waitgraph_cycle_length(const rlk_waitgraph *g, size_t i);
RLK_API long rlk_waitgraph_cycle_edge(const rlk_waitgraph *g, size_t i, size_t j);
RLK_API int rlk_waitgraph_cycle_by_client(const rlk_waitgraph *g, size_t i);
RLK_API void rlk_waitgraph_free(rlk_waitgraph *g);

/* ---------------------------------------------------------------- reentrant lock */

typedef struct rlk_lock rlk_lock;

/* A handle on the reentrant lock `name` (Redisson RLock layout: hash `name`,
 * field "<holder id>" -> reentry count, channel "redisson_lock__channel:{name}").
 * No I/O. The holder id is "<client uuid>:<thread id>" of the calling thread,
 * as Redisson forms it, unless rlk_lock_set_owner fixed one (for code that hands
 * a lock from one thread to another). A handle may be used by several threads.
 * An id set with *_set_owner may be another process's too: a lost reply is then
 * settled only when the server counts no hold of it, else RLK_ERR_UNSETTLED
 * (docs/runtime.md "One holder id in several processes"). */
RLK_API rlk_lock *rlk_lock_new(rlk_client *c, const char *name);
RLK_API void rlk_lock_free(rlk_lock *l);
RLK_API int rlk_lock_set_owner(rlk_lock *l, const char *owner); /* NULL: per-thread ids again */
RLK_API const char *rlk_lock_name(const rlk_lock *l);
/* The holder id the calling thread uses for this lock. */
RLK_API int rlk_lock_owner(const rlk_lock *l, char *buf, size_t len);

/* lease_ms > 0: the lock expires after lease_ms unless unlocked.
 * lease_ms <= 0: watchdog lease: the client's watchdog_lease_ms, renewed every
 *                lease/3 by the client's watchdog until unlock.
 * wait_ms < 0: wait as long as it takes; 0: one attempt; > 0: at most that long.
 * RLK_OK: acquired (or re-entered). RLK_ERR_BUSY: still held by another when
 * the wait ran out. Other codes: errors (errstr says which). */
RLK_API int rlk_lock_try_lock(rlk_lock *l, long long wait_ms, long long lease_ms);
RLK_API int rlk_lock_lock(rlk_lock *l, long long lease_ms);
/* RLK_ERR_NOT_OWNER when the caller does not hold it (lost, expired, never taken). */
RLK_API int rlk_lock_unlock(rlk_lock *l);
RLK_API int rlk_lock_force_unlock(rlk_lock *l, int *released);
/* As rlk_lock_force_unlock, for an operator who names the kind: a hash of
 * one holder field -> count without a TTL, which the shape cannot tell from
 * an application's data (docs/cli.md, "Keys rlk does not own"), goes too
 * (rlk_lock_force_unlock refuses it: RLK_ERR_SCRIPT, RLK_WRONGTYPE). The same
 * _named variant exists for the fair, fenced, non-reentrant and read-write
 * locks. Anything else that is not a lock is refused by both. */
RLK_API int rlk_lock_force_unlock_named(rlk_lock *l, int *released);
RLK_API int rlk_lock_is_locked(rlk_lock *l, int *locked);
/* False once the watchdog declared this holder's lock lost. */
RLK_API int rlk_lock_is_held_by_me(rlk_lock *l, int *held);
/* The lease this client counts for the caller's hold, no I/O, in
 * CLOCK_MONOTONIC nanoseconds: *start_ns the send time of the call that set
 * the lease the server counts now (the acquire that took or re-entered the
 * lock, the watchdog's last successful renewal, a MultiLock's re-expiry; an
 * adopted lost acquire: its send, or for a token kind the read-back's PTTL),
 * so the server began that lease no earlier; *deadline_ns = *start_ns + the
 * lease: the server cannot expire the hold before it (its clock running at
 * this one's rate; a renewal moves both). Not when the acquire returned: a
 * reply delayed by rlk_options.min_replicas's WAIT or a lost reply settled
 * later does not lengthen it. What `rlk lock` stops its command by.
 * RLK_ERR_LOST: the watchdog declared the hold lost; both are still set, to
 * the lease it was lost with (a lock-delay counts from there).
 * RLK_ERR_NOT_OWNER: not held by the caller (both 0). The same
 * call exists for the read-write (per side), fair, fenced and non-reentrant
 * locks and the MultiLock (its first member to end). */
RLK_API int rlk_lock_lease(rlk_lock *l, long long *start_ns, long long *deadline_ns);
RLK_API int rlk_lock_hold_count(rlk_lock *l, long long *count);
/* PTTL of the lock key: -2 no lock, -1 no expiry. */
RLK_API int rlk_lock_remaining_ttl(rlk_lock *l, long long *ttl_ms);

/* ---------------------------------------------------------------- read-write lock */

/* Redisson's RReadWriteLock (docs/locks/rwlock.md): hash `name` with field
 * "mode" -> read|write, "<owner>" -> its reads, "<owner>:write" -> its
 * writes; a key "{name}:<owner>:rwlock_timeout:<n>" per read; channel
 * "redisson_rwlock:{name}" (message 0, the last read left: wakes one waiter
 * per process; 1, a write left: wakes them all). Many readers or one writer;
 * the writer may also read, and keeps its reads when it lets the write lock
 * go (a downgrade, which wakes the waiting readers). One handle has both
 * sides (Redisson's readLock() / writeLock()): the side is an argument.
 * Holder ids as for rlk_lock: the calling thread's, or a fixed one. */
typedef struct rlk_rwlock rlk_rwlock;

enum rlk_rw_side {
    RLK_RW_READ = 0,
    RLK_RW_WRITE = 1,
    RLK_RW_ANY = 2              /* rlk_rwlock_force_unlock only: whatever the mode */
};
enum rlk_rw_mode {
    RLK_RW_FREE = 0,            /* no lock */
    RLK_RW_MODE_READ = 1,
    RLK_RW_MODE_WRITE = 2
};

/* No I/O. NULL on an empty name or out of memory (error on c). */
RLK_API rlk_rwlock *rlk_rwlock_new(rlk_client *c, const char *name);
RLK_API void rlk_rwlock_free(rlk_rwlock *rw);                  /* does not unlock */
RLK_API const char *rlk_rwlock_name(const rlk_rwlock *rw);
RLK_API const char *rlk_rwlock_channel(const rlk_rwlock *rw);  /* redisson_rwlock:{name} */
/* A fixed holder id (1..1024 bytes, not "mode", not ending in ":write");
 * NULL: per-thread ids again. */
RLK_API int rlk_rwlock_set_owner(rlk_rwlock *rw, const char *owner);
RLK_API int rlk_rwlock_owner(const rlk_rwlock *rw, char *buf, size_t len);

/* side RLK_RW_READ or RLK_RW_WRITE; wait_ms and lease_ms as for
 * rlk_lock_try_lock (lease_ms <= 0: the watchdog renews the hold: reads with
 * rwlock/renew_readers, the write lock with rwlock/renew_writer).
 * RLK_OK: acquired or re-entered. RLK_ERR_BUSY: the wait ran out.
 * RLK_ERR_UPGRADE (at once, whatever wait_ms): the write side asked by an
 * owner that holds a read of this lock. Other codes: errors. */
RLK_API int rlk_rwlock_try_lock(rlk_rwlock *rw, int side, long long wait_ms, long long lease_ms);
RLK_API int rlk_rwlock_lock(rlk_rwlock *rw, int side, long long lease_ms);
/* Leaves one hold of that side. RLK_ERR_NOT_OWNER when the caller has none. */
RLK_API int rlk_rwlock_unlock(rlk_rwlock *rw, int side);
/* Deletes the lock (and its reads' timeout keys) whoever holds it, when it is
 * in the mode of side (RLK_RW_ANY: any); *released (may be NULL) = 1 if so. */
RLK_API int rlk_rwlock_force_unlock(rlk_rwlock *rw, int side, int *released);
/* The same, for an operator who names the kind: a read-write lock's hash without a TTL
 * goes too (rlk_lock_force_unlock_named). */
RLK_API int rlk_rwlock_force_unlock_named(rlk_rwlock *rw, int side, int *released);
/* enum rlk_rw_mode of the lock now. */
RLK_API int rlk_rwlock_mode(rlk_rwlock *rw, int *mode);
/* False once the watchdog declared that hold of the caller lost. */
RLK_API int rlk_rwlock_is_held_by_me(rlk_rwlock *rw, int side, int *held);
/* The lease of the caller's hold of that side (rlk_lock_lease). */
RLK_API int rlk_rwlock_lease(rlk_rwlock *rw, int side, long long *start_ns,
                             long long *deadline_ns);
/* The caller's reads or writes, from Redis. */
RLK_API int rlk_rwlock_hold_count(rlk_rwlock *rw, int side, long long *count);
/* Owners holding at least one read (the writer's own reads included). */
RLK_API int rlk_rwlock_reader_count(rlk_rwlock *rw, long long *owners);
/* PTTL of the lock hash: -2 no lock, -1 no expiry. */
RLK_API int rlk_rwlock_remaining_ttl(rlk_rwlock *rw, long long *ttl_ms);

/* ---------------------------------------------------------------- fair lock */

/* Redisson's RFairLock (docs/locks/fair.md): a reentrant lock (hash `name`)
 * handed to its waiters in the order they first asked for it, across
 * processes: list redisson_lock_queue:{name} of waiting owners, sorted set
 * redisson_lock_timeout:{name} of their deadlines (server time). A waiter
 * sleeps on its own channel redisson_lock__channel:{name}:<owner>; the
 * release wakes the first waiter only. A waiting call retries at least
 * every third of the thread wait time (keep-alive), which moves its
 * deadline to now + the thread wait time. A waiter that gives up (its wait
 * ran out, an error, rlk_interrupt_waits) leaves the queue (fair/cancel);
 * one that dies is dropped once its deadline passes: at most the thread
 * wait time after its last attempt. Holder ids as for rlk_lock. */
typedef struct rlk_fairlock rlk_fairlock;

#define RLK_FAIR_THREAD_WAIT_MS 10000LL     /* rlk's keep-alive (Redisson's threadWaitTime: 300000) */

RLK_API rlk_fairlock *rlk_fairlock_new(rlk_client *c, const char *name);      /* no I/O */
RLK_API void rlk_fairlock_free(rlk_fairlock *f);                            /* does not unlock */
RLK_API const char *rlk_fairlock_name(const rlk_fairlock *f);
RLK_API const char *rlk_fairlock_queue_name(const rlk_fairlock *f);         /* redisson_lock_queue:{name} */
RLK_API const char *rlk_fairlock_timeout_name(const rlk_fairlock *f);       /* redisson_lock_timeout:{..} */
RLK_API int rlk_fairlock_set_owner(rlk_fairlock *f, const char *owner);     /* NULL: per-thread ids */
RLK_API int rlk_fairlock_owner(const rlk_fairlock *f, char *buf, size_t len);
/* The thread wait time (keep-alive, ms, up to 10^12) every call of this
 * handle queues with: a dead waiter is dropped this long after its last
 * attempt. <= 0 (the default): RLK_FAIR_THREAD_WAIT_MS. */
RLK_API int rlk_fairlock_set_thread_wait(rlk_fairlock *f, long long ms);

/* As rlk_lock_try_lock (lease_ms <= 0: renewed by the watchdog with
 * fair/renew). wait_ms == 0: one attempt that does not stay queued. */
RLK_API int rlk_fairlock_try_lock(rlk_fairlock *f, long long wait_ms, long long lease_ms);
RLK_API int rlk_fairlock_lock(rlk_fairlock *f, long long lease_ms);
RLK_API int rlk_fairlock_unlock(rlk_fairlock *f);          /* RLK_ERR_NOT_OWNER: not held */
/* Deletes the lock whoever holds it and wakes the first waiter. */
RLK_API int rlk_fairlock_force_unlock(rlk_fairlock *f, int *released);
/* The kind named: a lock's hash without a TTL goes too (rlk_lock_force_unlock_named). */
RLK_API int rlk_fairlock_force_unlock_named(rlk_fairlock *f, int *released);
RLK_API int rlk_fairlock_is_locked(rlk_fairlock *f, int *locked);
RLK_API int rlk_fairlock_is_held_by_me(rlk_fairlock *f, int *held);
RLK_API int rlk_fairlock_lease(rlk_fairlock *f, long long *start_ns, long long *deadline_ns);
RLK_API int rlk_fairlock_hold_count(rlk_fairlock *f, long long *count);
RLK_API int rlk_fairlock_remaining_ttl(rlk_fairlock *f, long long *ttl_ms);
/* Owners in the queue (LLEN; stale ones are dropped by the next script). */
RLK_API int rlk_fairlock_queue_length(rlk_fairlock *f, long long *n);

/* ---------------------------------------------------------------- fenced lock */

/* Redisson's RFencedLock (docs/locks/fenced.md): the reentrant lock's hash
 * `name` and channel, plus redisson_lock_token:{name}, the last fencing
 * token issued. Every acquisition (re-entries too) gets a token larger than
 * every token issued on the name before, from the same script call; pass it
 * to the protected resource, which rejects tokens below the highest it has
 * seen. Waits, leases, the watchdog (fenced/renew) and holder ids as for
 * rlk_lock; the process-wide local queue is the one of rlk_lock `name`. */
typedef struct rlk_fenced rlk_fenced;

RLK_API rlk_fenced *rlk_fenced_new(rlk_client *c, const char *name);    /* no I/O */
RLK_API void rlk_fenced_free(rlk_fenced *f);                          /* does not unlock */
RLK_API const char *rlk_fenced_name(const rlk_fenced *f);
RLK_API const char *rlk_fenced_token_name(const rlk_fenced *f);       /* redisson_lock_token:{name} */
RLK_API int rlk_fenced_set_owner(rlk_fenced *f, const char *owner);   /* NULL: per-thread ids */
RLK_API int rlk_fenced_owner(const rlk_fenced *f, char *buf, size_t len);

/* As rlk_lock_try_lock; on RLK_OK *token (may be NULL) is this
 * acquisition's fencing token (> 0). */
RLK_API int rlk_fenced_try_lock(rlk_fenced *f, long long wait_ms, long long lease_ms, long long *token);
RLK_API int rlk_fenced_lock(rlk_fenced *f, long long lease_ms, long long *token);
RLK_API int rlk_fenced_unlock(rlk_fenced *f);               /* RLK_ERR_NOT_OWNER: not held */
/* Deletes the lock whoever holds it (the token key stays). */
RLK_API int rlk_fenced_force_unlock(rlk_fenced *f, int *released);
/* The kind named: a lock's hash without a TTL goes too (rlk_lock_force_unlock_named). */
RLK_API int rlk_fenced_force_unlock_named(rlk_fenced *f, int *released);
/* The token of the caller's latest acquisition, while this client records
 * its hold (no I/O). RLK_ERR_NOT_OWNER: not held, unlocked, or declared lost
 * by the watchdog (a leased hold whose lease ran out still answers: the
 * resource's check is what rejects a stale token). */
RLK_API int rlk_fenced_token(rlk_fenced *f, long long *token);
/* The last token issued on the name (fenced/token; Redisson's getToken()):
 * 0 when none (never, or the token key was deleted). */
RLK_API int rlk_fenced_last_token(rlk_fenced *f, long long *token);
/* A re-entry handed down from an enclosing holder in another process (a
 * command run by `rlk lock --fenced NAME` that takes NAME again with the
 * holder id RLK_LOCK_OWNER, set by rlk_fenced_set_owner): token is the
 * enclosing hold's (RLK_FENCE_TOKEN). This handle's later acquisitions that
 * find the lock held by its owner with that token the last issued re-enter
 * it (counted on the server, released as any hold) and get that token again
 * instead of minting a newer one (fenced/reenter), so the enclosing
 * holder's writes after this one's are not refused; when the enclosing
 * hold is gone (free, or a token issued since) they acquire as usual, with
 * a new token. 0 (default): every acquisition mints. RLK_ERR_ARG: token not
 * in 0..2^53-2. docs/locks/fenced.md, "Nested holders". */
RLK_API int rlk_fenced_set_reentry_token(rlk_fenced *f, long long token);
RLK_API int rlk_fenced_is_locked(rlk_fenced *f, int *locked);
RLK_API int rlk_fenced_is_held_by_me(rlk_fenced *f, int *held);
RLK_API int rlk_fenced_lease(rlk_fenced *f, long long *start_ns, long long *deadline_ns);
RLK_API int rlk_fenced_hold_count(rlk_fenced *f, long long *count);
RLK_API int rlk_fenced_remaining_ttl(rlk_fenced *f, long long *ttl_ms);

/* ---------------------------------------------------------------- faster MultiLock */

/* Redisson's RedissonFasterMultiLock, getMultiLock(group, values)
 * (docs/locks/fastmulti.md): values of one group kept in ONE hash `group`
 * and taken, all or none, by ONE script call (field <value> -> holder,
 * <value>:<holder>:expire_time, <value>:<holder>:lock_count), channel
 * redisson_lock__channel:{group}. Each value is reentrant for its holder.
 * Values are the caller's strings, used as the hash's fields as given
 * (Redisson hashes its encoded objects first): 1..1024 bytes, no ':', none
 * twice; 1..100000 of them. Waits, leases, the watchdog, holder ids,
 * metrics and lost-lock callbacks as for rlk_lock (counted and reported as
 * kind "lock", name the group). No non-blocking (rlk_async) form. */
typedef struct rlk_fastmulti rlk_fastmulti;

/* No I/O; NULL with the error on c (bad group or values, out of memory). */
RLK_API rlk_fastmulti *rlk_fastmulti_new(rlk_client *c, const char *group,
                                         const char *const *values, size_t n);
RLK_API void rlk_fastmulti_free(rlk_fastmulti *m);                  /* does not unlock */
RLK_API const char *rlk_fastmulti_group(const rlk_fastmulti *m);
RLK_API size_t rlk_fastmulti_count(const rlk_fastmulti *m);
RLK_API const char *rlk_fastmulti_value(const rlk_fastmulti *m, size_t i);  /* NULL past the end */
RLK_API int rlk_fastmulti_set_owner(rlk_fastmulti *m, const char *owner);   /* NULL: per-thread */
RLK_API int rlk_fastmulti_owner(const rlk_fastmulti *m, char *buf, size_t len);
/* As rlk_lock_try_lock, for every value at once: RLK_ERR_BUSY when one
 * was still another's at the end of the wait (nothing taken). */
RLK_API int rlk_fastmulti_try_lock(rlk_fastmulti *m, long long wait_ms, long long lease_ms);
RLK_API int rlk_fastmulti_lock(rlk_fastmulti *m, long long lease_ms);
/* RLK_ERR_NOT_OWNER (nothing changed): a value not held by the caller. */
RLK_API int rlk_fastmulti_unlock(rlk_fastmulti *m);
/* Frees the values whoever holds them; *released: one of them was held. */
RLK_API int rlk_fastmulti_force_unlock(rlk_fastmulti *m, int *released);
RLK_API int rlk_fastmulti_is_locked(rlk_fastmulti *m, int *locked);     /* any value, anyone */
RLK_API int rlk_fastmulti_is_held_by_me(rlk_fastmulti *m, int *held);   /* every value */

/* ---------------------------------------------------------------- non-reentrant lock, spin lock */

/* Redisson's RedissonNonReentrantLock (docs/locks/nonreentrant.md): the
 * reentrant lock's hash `name` (field <owner> -> 1) and channel, but a
 * second acquisition by the holder is refused with RLK_ERR_REENTRY (at
 * once, whatever wait_ms), never counted. Waits, leases, the watchdog
 * (reentrant/renew), holder ids, metrics and lost-lock callbacks as for
 * rlk_lock (its holds are counted and reported as kind "lock"); the
 * process-wide local queue is the one of rlk_lock `name`. */
typedef struct rlk_nrlock rlk_nrlock;

RLK_API rlk_nrlock *rlk_nrlock_new(rlk_client *c, const char *name);    /* no I/O */
RLK_API void rlk_nrlock_free(rlk_nrlock *l);                          /* does not unlock */
RLK_API const char *rlk_nrlock_name(const rlk_nrlock *l);
RLK_API int rlk_nrlock_set_owner(rlk_nrlock *l, const char *owner);   /* NULL: per-thread ids */
RLK_API int rlk_nrlock_owner(const rlk_nrlock *l, char *buf, size_t len);
/* As rlk_lock_try_lock; RLK_ERR_REENTRY when the owner holds it already. */
RLK_API int rlk_nrlock_try_lock(rlk_nrlock *l, long long wait_ms, long long lease_ms);
RLK_API int rlk_nrlock_lock(rlk_nrlock *l, long long lease_ms);
RLK_API int rlk_nrlock_unlock(rlk_nrlock *l);               /* RLK_ERR_NOT_OWNER: not held */
RLK_API int rlk_nrlock_force_unlock(rlk_nrlock *l, int *released);
/* The kind named: a lock's hash without a TTL goes too (rlk_lock_force_unlock_named). */
RLK_API int rlk_nrlock_force_unlock_named(rlk_nrlock *l, int *released);
RLK_API int rlk_nrlock_is_locked(rlk_nrlock *l, int *locked);
RLK_API int rlk_nrlock_is_held_by_me(rlk_nrlock *l, int *held);
RLK_API int rlk_nrlock_lease(rlk_nrlock *l, long long *start_ns, long long *deadline_ns);
RLK_API int rlk_nrlock_remaining_ttl(rlk_nrlock *l, long long *ttl_ms);
/* Redisson's RedissonNonReentrantFairLock: on makes f's acquisitions
 * non-reentrant (fair/nonreentrant_acquire; the fair lock's data, queue
 * and FIFO order): its holder asking again gets RLK_ERR_REENTRY at once,
 * not counted. 0: reentrant again. Set it before f is used. */
RLK_API int rlk_fairlock_set_non_reentrant(rlk_fairlock *f, int on);

/* Redisson's RedissonSpinLock (docs/locks/spin.md) as a way of waiting for
 * the reentrant lock: rlk_lock_try_lock / rlk_lock_lock on l then attempt,
 * sleep an exponential back-off with jitter (from initial_ms, doubling plus
 * a random 0..failures-1 ms, up to max_ms; never past the holder's TTL or
 * the wait), and attempt again, with no SUBSCRIBE at all (its holds are
 * renewed by the watchdog without joining the lock's channel either): for
 * servers and proxies without pub/sub. Same data as any rlk_lock on name.
 * 0 for either bound: Redisson's default (1 and 128 ms); both 0: pub/sub
 * again. RLK_ERR_ARG unless 1 <= initial_ms <= max_ms <= 60000. Set it
 * before the handle is used by several threads. */
RLK_API int rlk_lock_set_spin(rlk_lock *l, long long initial_ms, long long max_ms);

/* Lock-delay, as Chubby's and Consul's session LockDelay (docs/locks/reentrant.md,
 * "Lock-delay"): a lock l's holder LOST (its lease ran out; not released) cannot be
 * taken by an rlk_lock with the delay set until delay_ms after its lease ended, so a
 * paused holder has that long to notice before the next one acts. A release
 * (rlk_lock_unlock) or a force unlock (rlk_lock_force_unlock through any handle, with
 * the delay or without) ends it at once. It is kept in the key {name}:rlk_delay (PX
 * lease + delay_ms, renewed with the lock); handles without it, and Redisson's
 * clients, ignore that key: give every client of a name the same delay. A hold keeps
 * the delay of the acquisition that took it (or none) through its re-entries and
 * releases, whichever handle makes them. 0: off (the default: no key, no command
 * more). RLK_ERR_ARG unless 0 <= delay_ms <= 10^12. Set it before the handle is used
 * by several threads. */
RLK_API int rlk_lock_set_delay(rlk_lock *l, long long delay_ms);

/* ---------------------------------------------------------------- leader election */

/* Leader election (docs/elect.md) on the fenced lock's layout: whoever holds
 * the lock `name` leads; each new leader's term is a fencing token of
 * redisson_lock_token:{name} (larger than every token issued before); the
 * record {name}:elect (value, term, holder) is written with the lock, and
 * every change is published on rlk_elect__channel:{name}. A leader is a
 * fenced hold of this client (RLK_KIND_FENCED): the watchdog renews it and
 * the lost-lock callbacks report its loss (RLK_LOST_GONE, RLK_LOST_EXPIRED). */
typedef struct rlk_elect rlk_elect;
/* What an observer reads. holder and value are malloc'd (rlk_elect_info_clear). */
typedef struct rlk_elect_info {
    int leader;         /* 1: someone leads; 0: nobody (resigned, lease ran out, never) */
    long long term;     /* the leader's term; with no leader the last term (0: never) */
    long long ttl_ms;   /* the leader's remaining lease (-1: none); -2 with no leader */
    char *holder;       /* the leader's holder id; "" with no leader */
    char *value;        /* what it proclaims; "" with no leader */
    size_t value_len;
} rlk_elect_info;

RLK_API rlk_elect *rlk_elect_new(rlk_client *c, const char *name);     /* no I/O */
RLK_API void rlk_elect_free(rlk_elect *e);                           /* does not resign */
RLK_API const char *rlk_elect_name(const rlk_elect *e);
RLK_API const char *rlk_elect_state_name(const rlk_elect *e);        /* {name}:elect */
RLK_API const char *rlk_elect_channel(const rlk_elect *e);           /* rlk_elect__channel:{name} */
RLK_API int rlk_elect_set_owner(rlk_elect *e, const char *owner);    /* default "<uuid>:elect-<n>", one per handle; NULL: per-thread ids */
RLK_API int rlk_elect_owner(const rlk_elect *e, char *buf, size_t len);
/* Campaigns with value (NULL: "", at most 65536 bytes) until elected or
 * wait_ms ran out (< 0: forever; RLK_ERR_BUSY). lease_ms <= 0: the
 * watchdog's lease, renewed while leading. *term (may be NULL): the term.
 * Already leading in this client: its term, nothing sent. */
RLK_API int rlk_elect_campaign(rlk_elect *e, const char *value, long long wait_ms,
                               long long lease_ms, long long *term);
/* The caller's term while it leads (no I/O); RLK_ERR_NOT_OWNER otherwise. */
RLK_API int rlk_elect_term(rlk_elect *e, long long *term);
/* The leader of the term replaces its value; RLK_ERR_NOT_OWNER when the
 * caller does not lead, or no longer in its term. */
RLK_API int rlk_elect_proclaim(rlk_elect *e, const char *value);
/* Steps down (the next candidate is woken); RLK_ERR_NOT_OWNER: not leading. */
RLK_API int rlk_elect_resign(rlk_elect *e);
/* The current leader, or none and the last term. */
RLK_API int rlk_elect_leader(rlk_elect *e, rlk_elect_info *out);
/* Waits until the leadership differs from known (leader, term, holder or
 * value) and reads it into *out; RLK_ERR_TIMEOUT after timeout_ms (< 0:
 * forever). A lease that runs out is seen at its end. */
RLK_API int rlk_elect_wait_change(rlk_elect *e, const rlk_elect_info *known, long long timeout_ms,
                                  rlk_elect_info *out);
RLK_API void rlk_elect_info_clear(rlk_elect_info *i);

/* ---------------------------------------------------------------- fencing checks */

/* Checks of a fencing token at the protected resource (docs/locks/fenced.md,
 * "Checking the token at the resource"): accept a token not below the
 * highest accepted so far, remember it, refuse a lower one. */

/* For a resource the application keeps itself: the highest token accepted.
 * Start from RLK_FENCE_STATE_INIT (or a value kept durably with the
 * resource). */
typedef struct rlk_fence_state {
    uint64_t highest;           /* 0: none accepted yet */
} rlk_fence_state;
#define RLK_FENCE_STATE_INIT {0}

/* Compare and remember, no I/O and no lock: RLK_OK when token >= highest
 * (highest becomes token; an equal token is the same holder again);
 * RLK_ERR_FENCED when token < highest (st unchanged); RLK_ERR_ARG when st is
 * NULL or token is 0. Atomicity is the caller's: the check and the write it
 * guards must be one step for every writer of the resource (one mutex held
 * across both, or one thread that owns the resource), and st must be kept
 * with the resource (a restart that forgets it lets stale tokens in). */
RLK_API int rlk_fence_check(rlk_fence_state *st, uint64_t token);

/* A fenced write on data in Redis, by name (scripts/fence/<op>.lua, through
 * rlk_evalv): op is one of "set", "hset", "del", "expire", "pexpire",
 * "incrby", "rpush", "lpush", "xadd", or "check" (no data key: data NULL,
 * nargs 0). fence is the fence key, data the data key, both with the same
 * {hash tag} ("{acct}:fence", "{acct}:balance"); args (arglens may be NULL)
 * are the command's arguments after the key, as the script's header says
 * (set: value [EX s|PX ms|KEEPTTL] [NX|XX] [GET]). One script call checks
 * token against the fence's highest, performs the command and records token.
 * RLK_OK: accepted; *reply (may be NULL) is the command's reply (check: the
 * highest before). RLK_ERR_FENCED: a higher token was accepted before,
 * *highest (may be NULL) holds it, nothing changed. RLK_ERR_SCRIPT: the
 * script refused the call (RLK_BADARG, RLK_CROSSSLOT, RLK_WRONGTYPE,
 * RLK_CMDERR: errstr), nothing changed. RLK_ERR_READONLY: the server is a
 * replica (a demoted master): nothing changed; through Sentinel the write
 * was sent once more to the master the sentinels name. Other errors as
 * rlk_evalv; a lost reply (RLK_ERR_IO, RLK_ERR_TIMEOUT after the write) may
 * have run: repeat only what is idempotent (set, hset, del, expire, pexpire,
 * check, xadd with an explicit id), the same token being accepted again.
 * RLK_ERR_NOREPLICAS (rlk_options.min_replicas > 0): accepted on the master
 * as RLK_OK is (*reply set, the fence raised), but fewer than min_replicas
 * replicas acknowledged it within the WAIT's timeout (rlk_last_replica_acks):
 * not undone, and a failover to a replica without it loses the write and
 * the fence's new highest. Before this version that case returned RLK_OK. */
RLK_API int rlk_fence_write(rlk_client *c, const char *op, const char *fence, const char *data,
                    uint64_t token, int nargs, const char *const *args, const size_t *arglens,
                    uint64_t *highest, redisReply **reply);

/* Claims the fences a holder will use, before it reads or writes anything
 * they guard (docs/locks/fenced.md, "Claim the fence first"): raises each of
 * the nfences fence keys (1..1024, each with its own {hash tag} or another:
 * one fence/check call each, in order, routed by its key) to token. From the
 * return on, every fence refuses a lower token: a stale holder's write is
 * refused even before this holder's first write. RLK_OK: every fence's
 * highest is token. RLK_ERR_FENCED: one of them had accepted a higher token
 * (a newer holder claimed or wrote it): *highest (may be NULL) holds it, the
 * claim stopped there (errstr names the fence); the caller is stale and must
 * not go on. RLK_ERR_ARG: no fences, an empty one, token 0 or above 2^53-2.
 * Other errors as rlk_fence_write; the claim is idempotent: on a lost reply
 * call it again. Needed when the holder reads before its first fenced write
 * (a read-modify-write) or writes to several fences. */
RLK_API int rlk_fence_claim(rlk_client *c, uint64_t token, int nfences, const char *const *fences,
                            uint64_t *highest);

/* ---------------------------------------------------------------- semaphore */

/* Redisson's RSemaphore (docs/locks/semaphore.md): a string key `name`
 * holding the available permits (no key: 0), channel "redisson_sc:{name}"
 * ("redisson_sc:name" when name has a '{'), on which a call that leaves
 * more permits than before, and above 0, publishes the new count. Nothing
 * records who holds permits: any client may release permits it never took,
 * and permits taken by a process that dies are gone until someone releases
 * them (the permit-expirable semaphore below gives them back by itself).
 * No watchdog, no lease. A handle may be used by several threads. */
typedef struct rlk_semaphore rlk_semaphore;

/* No I/O. NULL on an empty name or out of memory (error on c). */
RLK_API rlk_semaphore *rlk_semaphore_new(rlk_client *c, const char *name);
RLK_API void rlk_semaphore_free(rlk_semaphore *s);
RLK_API const char *rlk_semaphore_name(const rlk_semaphore *s);
RLK_API const char *rlk_semaphore_channel(const rlk_semaphore *s);

/* Takes permits (1..10^12) when that many are available. wait_ms < 0: as
 * long as it takes; 0: one attempt; > 0: at most that long, woken by the
 * count messages (every waiter of a client retries on each). RLK_OK:
 * taken. RLK_ERR_BUSY: not available when the wait ran out. A connection
 * error is returned at once: when the request may have run, the permits
 * may be taken, or not. A semaphore keeps no holder, so neither the library
 * nor the caller can find out: a release "to be safe" raises the count
 * above its permits when the acquire did not run, and no release leaves the
 * permits taken when it did (docs/locks/semaphore.md; the permit-expirable
 * semaphore, whose permits have ids and leases, has neither problem). */
RLK_API int rlk_semaphore_try_acquire(rlk_semaphore *s, long long permits, long long wait_ms);
RLK_API int rlk_semaphore_acquire(rlk_semaphore *s, long long permits);
/* Gives permits (1..10^12) back; *count (may be NULL) gets the new count. */
RLK_API int rlk_semaphore_release(rlk_semaphore *s, long long permits, long long *count);
/* Sets the count to permits (0..10^12) only when the semaphore has none;
 * *set (may be NULL) is 1 when it did. */
RLK_API int rlk_semaphore_try_set_permits(rlk_semaphore *s, long long permits, int *set);
/* Adds delta (-10^12..10^12; negative: reduce, the count may go below 0). */
RLK_API int rlk_semaphore_add_permits(rlk_semaphore *s, long long delta, long long *count);
/* Takes every available permit; *drained (may be NULL) gets how many (the
 * count before; a negative count is reset to 0). */
RLK_API int rlk_semaphore_drain(rlk_semaphore *s, long long *drained);
/* The available permits (0 when there is no key; may be negative). */
RLK_API int rlk_semaphore_available(rlk_semaphore *s, long long *count);
/* Gives permits (1..10^12) back only while the semaphore's key exists
 * (Redisson's releaseIfExists): a semaphore set with a time to live that
 * ran out, or deleted, is not made again. *released (may be NULL): 1 when
 * it did, 0 when there was no key (nothing changed). */
RLK_API int rlk_semaphore_release_if_exists(rlk_semaphore *s, long long permits, int *released);
/* rlk_semaphore_try_set_permits with a time to live of ttl_ms (1..10^12)
 * on the key it sets (Redisson's trySetPermits(permits, timeToLive)); an
 * existing count and its TTL are left alone. */
RLK_API int rlk_semaphore_try_set_permits_ttl(rlk_semaphore *s, long long permits, long long ttl_ms,
                                              int *set);
/* Redisson's expire(Duration), clearExpire() and remainTimeToLive() on the
 * count key (rlk's queue keys keep theirs). expire: the key now expires in
 * ttl_ms (1..10^12); *set 0 when there is no key. clear_expire: *cleared 1
 * when it had a TTL. ttl: *ttl_ms the ms left, -1 no TTL, -2 no key. */
RLK_API int rlk_semaphore_expire(rlk_semaphore *s, long long ttl_ms, int *set);
RLK_API int rlk_semaphore_clear_expire(rlk_semaphore *s, int *cleared);
RLK_API int rlk_semaphore_ttl(rlk_semaphore *s, long long *ttl_ms);

/* ---------------------------------------------------------------- permit-expirable semaphore */

/* Redisson's RPermitExpirableSemaphore (docs/locks/psemaphore.md): the
 * count key `name`, a sorted set "{name}:timeout" of the held permits
 * (member: the id's raw bytes; score: expiry on the server's clock) and
 * the channel "redisson_sc:{name}" ("name:timeout", "redisson_sc:name"
 * when name has a '{'). Every permit has an id and a lease; a permit whose
 * lease ran out goes back to the count on the next call of any kind, so a
 * holder that dies leaks nothing for longer than its lease.
 *
 * Permit ids: the API shows them as hex text (Redisson's form); new ones
 * are 16 random bytes (32 hex digits), made from the kernel's random
 * source. Calls that take an id accept 2..2048 hex digits (an even number,
 * either case), so every id Redisson or rlk stored can be named. */
typedef struct rlk_psemaphore rlk_psemaphore;

#define RLK_PERMIT_ID_SIZE 33       /* a new permit id: 32 hex digits and a NUL */
#define RLK_PERMITS_MAX 1024        /* permits per acquire / release call */

/* No I/O. NULL on an empty name or out of memory (error on c). */
RLK_API rlk_psemaphore *rlk_psemaphore_new(rlk_client *c, const char *name);
RLK_API void rlk_psemaphore_free(rlk_psemaphore *s);
RLK_API const char *rlk_psemaphore_name(const rlk_psemaphore *s);
RLK_API const char *rlk_psemaphore_timeouts_key(const rlk_psemaphore *s);
RLK_API const char *rlk_psemaphore_channel(const rlk_psemaphore *s);

/* Takes one permit with a lease of lease_ms (1..10^12; it comes back by
 * itself when the lease runs out) and writes its new id to id. wait_ms as
 * for rlk_semaphore_try_acquire; a wait is woken by the count messages and
 * bounded by the earliest expiry of a held permit (an expiry publishes
 * nothing). RLK_OK: taken. RLK_ERR_BUSY: none available when the wait ran
 * out (id is ""). */
RLK_API int rlk_psemaphore_try_acquire(rlk_psemaphore *s, long long wait_ms, long long lease_ms,
                                       char id[RLK_PERMIT_ID_SIZE]);
RLK_API int rlk_psemaphore_acquire(rlk_psemaphore *s, long long lease_ms, char id[RLK_PERMIT_ID_SIZE]);
/* n (1..RLK_PERMITS_MAX) permits at once, all or none; ids[0..n-1] get
 * their ids. */
RLK_API int rlk_psemaphore_try_acquire_n(rlk_psemaphore *s, int n, long long wait_ms, long long lease_ms,
                                         char (*ids)[RLK_PERMIT_ID_SIZE]);
/* Gives a permit back. RLK_ERR_NOT_OWNER: the id is not held - its lease
 * ran out (it went back to the count by itself), it was released already,
 * or it never existed; nothing changed. RLK_ERR_ARG: not a hex id. */
RLK_API int rlk_psemaphore_release(rlk_psemaphore *s, const char *id);
/* n ids; *released (may be NULL) gets how many were held. RLK_OK when all
 * were; RLK_ERR_NOT_OWNER when some were not (the others are released). */
RLK_API int rlk_psemaphore_release_n(rlk_psemaphore *s, int n, const char *const *ids, int *released);
/* Redisson's tryRelease(permitId): as rlk_psemaphore_release, but a
 * permit that is not held (expired, released, unknown) is RLK_OK with
 * *released 0; *released (may be NULL) 1 when it was released. */
RLK_API int rlk_psemaphore_try_release(rlk_psemaphore *s, const char *id, int *released);
/* The permit now expires lease_ms (1..10^12) from now (server clock).
 * RLK_ERR_NOT_OWNER: not held (expired, released, unknown). */
RLK_API int rlk_psemaphore_update_lease(rlk_psemaphore *s, const char *id, long long lease_ms);
/* Redisson's getLeaseTime(permitId), after giving expired permits back:
 * *ms the lease left (>= 1), or -1 for a permit without a lease (one
 * Redisson took). RLK_ERR_NOT_OWNER: not held (expired, released, unknown). */
RLK_API int rlk_psemaphore_lease_time(rlk_psemaphore *s, const char *id, long long *ms);
/* As for rlk_semaphore_*, after giving expired permits back. */
RLK_API int rlk_psemaphore_try_set_permits(rlk_psemaphore *s, long long permits, int *set);
RLK_API int rlk_psemaphore_add_permits(rlk_psemaphore *s, long long delta, long long *count);
RLK_API int rlk_psemaphore_available(rlk_psemaphore *s, long long *count);
/* Redisson's acquiredPermits(), after giving expired permits back: *held
 * the permits held. */
RLK_API int rlk_psemaphore_acquired(rlk_psemaphore *s, long long *held);
/* Redisson's setPermits(permits): after giving expired permits back, the
 * size (count + held) becomes permits (0..10^12); held permits stay held,
 * so the count (*count, may be NULL) may go below 0. A rise serves the
 * queue as a release does. */
RLK_API int rlk_psemaphore_set_permits(rlk_psemaphore *s, long long permits, long long *count);
/* expire, clear_expire and ttl as for the semaphore; expire and
 * clear_expire act on both keys, name and {name}:timeout (as Redisson);
 * ttl reads name's. */
RLK_API int rlk_psemaphore_expire(rlk_psemaphore *s, long long ttl_ms, int *set);
RLK_API int rlk_psemaphore_clear_expire(rlk_psemaphore *s, int *cleared);
RLK_API int rlk_psemaphore_ttl(rlk_psemaphore *s, long long *ttl_ms);
/* The semaphore's size in one atomic read (psemaphore/size; writes nothing, reclaims
 * nothing): *available the count (0: no key; may be negative), *held the permits in
 * {name}:timeout, expired ones included; their sum is the size. Permits Redisson's plain
 * RSemaphore took on the same name are not in {name}:timeout and not counted. */
RLK_API int rlk_psemaphore_size(rlk_psemaphore *s, long long *available, long long *held);

/* A held permit, for inspection. */
typedef struct rlk_permit_info {
    char id[2 * 1024 + 1];      /* hex */
    long long ttl_ms;           /* lease left (<= 0: expired, not yet given back); -1: none
                                   (a Redisson permit taken without a lease) */
} rlk_permit_info;
/* Reads the held permits (ZRANGE and TIME: a snapshot, not atomic; nothing
 * is reclaimed). Up to max go to out, in expiry order; *total gets the
 * number held. */
RLK_API int rlk_psemaphore_permits(rlk_psemaphore *s, rlk_permit_info *out, size_t max, size_t *total);

/* A lease keeper: renews the n permits ids (copied) with a lease of
 * lease_ms (>= 3) every lease/3, on the client's watchdog (its thread and
 * connection, as it renews lease-less locks), until stopped. Each is renewed once before this returns (NULL, error on the
 * client: RLK_ERR_NOT_OWNER when one is not held). A permit found gone is
 * reported RLK_LOST_GONE; one whose renewals failed until its lease had
 * run out since the last success, RLK_LOST_EXPIRED; either way it is not
 * renewed again. fn (may be NULL) is called from the watchdog thread, once
 * per lost permit, with (semaphore name, permit id, reason, userdata); it
 * must not block long. s must outlive the keeper. */
typedef struct rlk_psemaphore_keeper rlk_psemaphore_keeper;
RLK_API rlk_psemaphore_keeper *rlk_psemaphore_keep(rlk_psemaphore *s, int n, const char *const *ids,
                                                   long long lease_ms, rlk_lost_fn fn, void *userdata);
/* 0 while every permit is kept; else the reason of the first loss. */
RLK_API int rlk_psemaphore_keeper_lost(rlk_psemaphore_keeper *k);
/* Stops renewing (no renewal of its permits and no call of its fn runs
 * after this returns) and frees the keeper. Does not release the permits.
 * Stop every keeper of a client before rlk_free. */
RLK_API void rlk_psemaphore_keeper_stop(rlk_psemaphore_keeper *k);

/* ---------------------------------------------------------------- count-down latch */

/* Redisson's RCountDownLatch (docs/locks/latch.md): a string key `name`
 * holding the remaining count (no key: open, count 0), channel
 * "redisson_countdownlatch__channel__{name}" (braces always added): "0"
 * when the count reaches zero or the latch is deleted, "1" when it is
 * armed. A handle may be used by several threads. */
typedef struct rlk_latch rlk_latch;

/* No I/O. NULL on an empty name or out of memory (error on c), and
 * (RLK_ERR_ARG) on a cluster for a name with a hash tag whose channel
 * (braced again, as Redisson does) hashes to another slot than the key. */
RLK_API rlk_latch *rlk_latch_new(rlk_client *c, const char *name);
RLK_API void rlk_latch_free(rlk_latch *l);
RLK_API const char *rlk_latch_name(const rlk_latch *l);
RLK_API const char *rlk_latch_channel(const rlk_latch *l);

/* Arms the latch with count (1..10^12) only when it is open; *set (may be
 * NULL) is 1 when it did. */
RLK_API int rlk_latch_try_set_count(rlk_latch *l, long long count, int *set);
/* Counts down by one; *left (may be NULL) gets the count left (0: open -
 * reached now, which wakes every awaiter, or open already). */
RLK_API int rlk_latch_count_down(rlk_latch *l, long long *left);
/* The remaining count (0: open). */
RLK_API int rlk_latch_count(rlk_latch *l, long long *count);
/* Opens the latch at once (wakes every awaiter); *deleted: 1 if it was armed. */
RLK_API int rlk_latch_delete(rlk_latch *l, int *deleted);
/* A time to live on an armed latch's key (rlk's: Redisson's latch has
 * none): when ttl_ms (1..10^12) runs out the latch opens, as if deleted,
 * and its awaiters return RLK_OK (no message is published then: they bound
 * their sleep by the TTL). *set 0 when the latch is open (no key).
 * clear_expire: *cleared 1 when it had a TTL. ttl: *ttl_ms the ms left,
 * -1 none, -2 no key (open). */
RLK_API int rlk_latch_expire(rlk_latch *l, long long ttl_ms, int *set);
RLK_API int rlk_latch_clear_expire(rlk_latch *l, int *cleared);
RLK_API int rlk_latch_ttl(rlk_latch *l, long long *ttl_ms);
/* Waits until the count is 0. timeout_ms < 0: as long as it takes; 0: one
 * look; > 0: at most that long. RLK_OK: open (reached zero). RLK_ERR_BUSY:
 * still armed when the timeout ran out. Woken by the channel's "0"; every
 * awaiter of the process wakes. */
RLK_API int rlk_latch_await(rlk_latch *l, long long timeout_ms);

/* ---------------------------------------------------------------- MultiLock and RedLock */

/* MultiLock: several reentrant locks, each a (client, name) member, possibly
 * on different servers, taken all or none (Redisson's RedissonMultiLock).
 *
 * Members are taken in one global order (server address, db, then name),
 * whatever order they were added in, so two MultiLocks sharing members cannot
 * deadlock. An attempt takes the members one by one, each waiting (pub/sub)
 * at most until the attempt's budget (1500 ms per member by default) or the
 * caller's wait runs out; when one stays busy, every member already taken is
 * released and a new attempt starts, while the wait lasts. A member that
 * fails with an error (not RLK_ERR_BUSY) ends the call with that error, after
 * the same release. Lease-less members (lease_ms <= 0) are renewed by their
 * clients' watchdogs, as rlk_lock_* does. With lease_ms > 0 and a wait, the
 * members are taken with a lease of max(lease, 2 x the attempt's budget, at
 * most the wait) and set to lease_ms once all are held (so none expires while
 * later ones are awaited).
 *
 * Holder ids are the calling thread's (or the one rlk_multilock_set_owner
 * fixes). A handle is used by one thread at a time; err/errstr describe its
 * last call, and failed_member tells which member ended it. */
typedef struct rlk_multilock rlk_multilock;

RLK_API rlk_multilock *rlk_multilock_new(void);              /* NULL: out of memory */
RLK_API void rlk_multilock_free(rlk_multilock *m);          /* does not unlock */
/* Adds the lock `name` on client c (borrowed: it must outlive the handle).
 * RLK_ERR_ARG for an empty name or a member already in the set. */
RLK_API int rlk_multilock_add(rlk_multilock *m, rlk_client *c, const char *name);
/* The wait budget of one attempt is ms_per_member x members (<= 0: 1500). */
RLK_API void rlk_multilock_set_attempt_wait(rlk_multilock *m, long long ms_per_member);
/* A fixed holder id for every member (NULL: per-thread ids again). */
RLK_API int rlk_multilock_set_owner(rlk_multilock *m, const char *owner);

/* wait_ms < 0: as long as it takes; 0: one attempt without waiting; > 0: at
 * most that long. RLK_OK: every member held. RLK_ERR_BUSY: some member stayed
 * held by another until the wait ran out. Other codes: a member's error.
 * After any failure this handle holds no member. */
RLK_API int rlk_multilock_try_lock(rlk_multilock *m, long long wait_ms, long long lease_ms);
RLK_API int rlk_multilock_lock(rlk_multilock *m, long long lease_ms);
/* Releases every member (all are tried). RLK_OK, or the first member's
 * error (RLK_ERR_NOT_OWNER when its hold was lost or had expired). */
RLK_API int rlk_multilock_unlock(rlk_multilock *m);
/* The lease of the hold as a whole (rlk_lock_lease): the member whose lease
 * ends first, its start and deadline. A member not held: its error. */
RLK_API int rlk_multilock_lease(rlk_multilock *m, long long *start_ns, long long *deadline_ns);

RLK_API int rlk_multilock_count(const rlk_multilock *m);
/* Member i, in the order added (0-based); NULL when out of range. */
RLK_API const char *rlk_multilock_member_name(const rlk_multilock *m, int i);
RLK_API const char *rlk_multilock_member_url(const rlk_multilock *m, int i);   /* password masked */
RLK_API rlk_client *rlk_multilock_member_client(const rlk_multilock *m, int i);
RLK_API rlk_lock *rlk_multilock_member_lock(const rlk_multilock *m, int i);
/* The index of the member taken k-th (0-based) in the global order. */
RLK_API int rlk_multilock_order_at(const rlk_multilock *m, int k);
/* The member whose failure ended the last call, or -1. */
RLK_API int rlk_multilock_failed_member(const rlk_multilock *m);
RLK_API int rlk_multilock_err(const rlk_multilock *m);
RLK_API const char *rlk_multilock_errstr(const rlk_multilock *m);

/* RedLock over N independent servers, one client each (antirez's algorithm,
 * on the token/acquire, token/extend and token/release scripts: a string key
 * `name` holding a random 128-bit hex token, SET NX PX semantics).
 *
 * One attempt sends the acquire to every server at once (non-blocking I/O
 * multiplexed with poll(): no server waits for another), each bounded by
 * server_timeout_ms. With quorum = N/2 + 1 acquired, validity = lease -
 * elapsed - drift, drift = lease x drift_factor + drift_ms; the attempt
 * counts only with a quorum and a positive validity. Otherwise the token is
 * released on every server (in parallel; on a server that did not answer, the
 * release is pipelined behind the unanswered acquire on the same connection)
 * and, while the wait lasts, a new attempt follows after a random delay of
 * 0..retry_delay_ms (polling: no pub/sub). */
typedef struct rlk_redlock rlk_redlock;

typedef struct rlk_redlock_options {
    long long server_timeout_ms;  /* <= 0: 50; bounds each server's part of an attempt (unlock: >= 1000) */
    long long retry_delay_ms;     /* <= 0: 200; retry after uniform 0..retry_delay_ms */
    double drift_factor;          /* <= 0: 0.01 */
    long long drift_ms;           /* <= 0: 2 */
} rlk_redlock_options;

RLK_API void rlk_redlock_options_init(rlk_redlock_options *o);

/* A handle on `name` over n clients (borrowed; distinct; n >= 1; NULL opts:
 * defaults). No I/O. NULL on a bad argument or out of memory. The handle has
 * its own mutex: a thread may extend while another waits for the validity. */
RLK_API rlk_redlock *rlk_redlock_new(rlk_client *const *clients, int n, const char *name,
                                     const rlk_redlock_options *opts);
RLK_API void rlk_redlock_free(rlk_redlock *rl);                 /* does not unlock */

/* lease_ms in 1..10^12 (there is no watchdog: extend before it runs out).
 * wait_ms as for rlk_lock_try_lock. RLK_OK: held; *validity_ms (may be NULL)
 * is what is left of the lease for sure. RLK_ERR_BUSY: held elsewhere when
 * the wait ran out. RLK_ERR_TIMEOUT: a quorum answered but too late (no
 * validity left). Another code: too many servers failed with it (errstr
 * names them). A handle already holding the lock answers RLK_ERR_ARG.
 * RLK_ERR_INTERRUPTED: rlk_interrupt_waits was called on one of its clients
 * (checked before each attempt and during the pauses between them; a wait_ms
 * of 0 makes its one attempt regardless). */
RLK_API int rlk_redlock_try_lock(rlk_redlock *rl, long long wait_ms, long long lease_ms,
                                 long long *validity_ms);
RLK_API int rlk_redlock_lock(rlk_redlock *rl, long long lease_ms, long long *validity_ms);
/* Sets the lease to lease_ms on every server that still holds the token.
 * RLK_OK only when a quorum did so before the current validity ran out and
 * with a positive new validity (*validity_ms). RLK_ERR_LOST: the validity had
 * run out (less than 1 whole ms left: rlk_redlock_validity_ms 0), or the token
 * is gone from a majority; RLK_ERR_NOT_OWNER: not held. */
RLK_API int rlk_redlock_extend(rlk_redlock *rl, long long lease_ms, long long *validity_ms);
/* Releases on every server (in parallel). RLK_OK: a quorum released it;
 * RLK_ERR_NOT_OWNER: too few servers still held the token (it had expired);
 * else the servers' error. The handle no longer holds the lock either way. */
RLK_API int rlk_redlock_unlock(rlk_redlock *rl);

/* 1 while acquired and not unlocked (whatever the validity). */
RLK_API int rlk_redlock_is_held(rlk_redlock *rl);
/* The end of the validity on CLOCK_MONOTONIC, in ms (-1 when not held): the
 * lock is certainly held until then and not after, unless extended. */
RLK_API long long rlk_redlock_valid_until_ms(rlk_redlock *rl);
/* Validity left now in ms (<= 0: run out; -1 as well when not held). */
RLK_API long long rlk_redlock_validity_ms(rlk_redlock *rl);
/* The token of the current hold (33 bytes with the NUL), "" when not held. */
RLK_API int rlk_redlock_token(rlk_redlock *rl, char *buf, size_t len);
RLK_API int rlk_redlock_server_count(const rlk_redlock *rl);
RLK_API int rlk_redlock_quorum(const rlk_redlock *rl);
/* Server i's part in the last operation: RLK_OK (acquired / extended /
 * released), RLK_ERR_BUSY (acquire: held by another token), RLK_ERR_NOT_OWNER
 * (extend, release: the token was not there), or its error (RLK_ERR_IO,
 * RLK_ERR_TIMEOUT, ...). *msg (may be NULL) gets a description. */
RLK_API int rlk_redlock_server_status(rlk_redlock *rl, int i, const char **msg);
RLK_API int rlk_redlock_err(rlk_redlock *rl);
RLK_API const char *rlk_redlock_errstr(rlk_redlock *rl);

#ifdef __cplusplus
}
#endif
#endif /* RLK_H */
