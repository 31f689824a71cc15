/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk-bench: lock workloads against a real redis-server, one JSON line per
 * run (schema peers-bench/1, see /work/shared/bench-schema.md and
 * docs/performance.md). This file: setup (scripts, keys, identities), the
 * run, and the report.
 */
#include <hiredis/hiredis.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <sys/resource.h>

#ifdef RLK_BENCH_HAVE_ASYNC
#include "bench_async.h"
#endif
#include "bench_clock.h"
#include "bench_dial.h"
#include "bench_driver.h"
#include "bench_json.h"
#include "bench_kinds.h"
#include "bench_opts.h"
#include "bench_run.h"
#include "bench_stats.h"

#ifndef RLK_BENCH_SCRIPTS_DIR
#define RLK_BENCH_SCRIPTS_DIR "scripts"
#endif

#if defined(__clang__)
#define RLK_BENCH_COMPILER "clang " __clang_version__
#elif defined(__GNUC__)
#define RLK_BENCH_COMPILER "gcc " __VERSION__
#else
#define RLK_BENCH_COMPILER "unknown compiler"
#endif

#define RLK_BENCH_LEASE_MS "30000"
#define RLK_BENCH_KEYLEN 512

/* Everything main sets up, shared read-only with the contenders. */
typedef struct rlk_bench_setup {
    rlk_bench_opts o;
    const rlk_bench_driver *d;
    rlk_bench_script acquire;
    rlk_bench_script release;
    rlk_bench_target t;
    char url[300];
    char uuid[37];
    char (*keys)[RLK_BENCH_KEYLEN];
    char (*channels)[RLK_BENCH_KEYLEN + 32];
    char (*owners)[64];
    char (*waiters)[RLK_BENCH_KEYLEN + 32];
    char (*grants)[RLK_BENCH_KEYLEN + 32];
    rlk_bench_identity *ids;
    rlk_bench_summary rtt;      /* PING round trips measured before the run */
    rlk_bench_summary rtt_held; /* W2: PINGs each sent right after sleeping the hold */
    int held_pings;             /* how many of those (0: none, not W2) */
    rlk_bench_summary pub_held; /* W2: a PUBLISH sent right after sleeping the hold, to its
                                   message read on a second connection */
    int held_publishes;         /* how many of those (0: none, not W2) */
    double cpu_s;               /* the client's CPU (user + system, this process and its
                                   --procs children) over the run */
} rlk_bench_setup;

#define RLK_BENCH_RTT_PINGS 200
/* W2's PINGs after a hold: 100 (0.1 s at the default 1 ms hold), fewer for a hold over 5 ms so
 * that they add about half a second to a run (one, a hold's time, for a hold over 250 ms);
 * rtt_after_hold_us.n says how many. */
#define RLK_BENCH_HELD_PINGS 100
#define RLK_BENCH_HELD_BUDGET_MS 500

static void rlk_bench_die(int code, const char *msg)
{
    fprintf(stderr, "rlk-bench: %s\n", msg);
    exit(code);
}

/* ------------------------------------------------------------ driver */

static const rlk_bench_driver *rlk_bench_pick_driver(const rlk_bench_opts *o)
{
    if (o->baseline && o->fair)
        rlk_bench_die(2, "--lock fair applies to the rlk variant only");
    if (o->spin && (o->baseline || o->api_async))
        rlk_bench_die(2, "--lock spin applies to the rlk variant's blocking API only");
    if (o->kind && o->baseline)
        rlk_bench_die(2, "--lock rwlock-write, semaphore, psemaphore, fastmulti and multilock "
                      "apply to the rlk variant only");
    if ((o->kind || o->fair || o->spin) && o->workload == 1 && !o->w1_lock)
        rlk_bench_die(2, "--lock in W1 needs --w1-lock (rlk_evalv runs the reentrant lock's "
                      "scripts)");
    if (o->watchdog &&
        (o->kind == RLK_BENCH_KIND_SEMAPHORE || o->kind == RLK_BENCH_KIND_PSEMAPHORE))
        rlk_bench_die(2, "--watchdog: the semaphores take no watchdog lease");
    if (o->kind && o->api_async)
        rlk_bench_die(2, "--lock rwlock-write, semaphore, psemaphore, fastmulti and multilock "
                      "apply to --api blocking only (the async API's requests for them are not "
                      "measured)");
    if (!o->baseline && o->setnx)
        rlk_bench_die(2, "--lock setnx applies to --baseline only");
    if (o->setnx)
        return &rlk_bench_setnx_driver;
    if (o->baseline && (o->metrics_out != NULL || o->no_metrics))
        rlk_bench_die(2, "--metrics-out and --no-metrics apply to the rlk variant only");
    if (o->baseline)
        return &rlk_bench_baseline_driver;
    if (o->scripts_dir != NULL)
        rlk_bench_die(2, "--scripts-dir applies to --baseline only (rlk uses its own set)");
#ifdef RLK_BENCH_HAVE_ASYNC
    if (o->api_async)
        return &rlk_bench_async_driver;
#else
    if (o->api_async || o->workload == 3)
        rlk_bench_die(2, "--api async and --workload pending need the library's async engine "
                         "(rlk_async.h), which this build lacks");
#endif
#ifdef RLK_BENCH_HAVE_LIB
    if (o->workload == 2 && !rlk_bench_rlk_w2_available())
        rlk_bench_die(2, "W2 needs the lock runtime (not built yet)");
    return &rlk_bench_rlk_driver;
#else
    if (o->workload == 2)
        rlk_bench_die(2, "W2 needs the lock runtime (not built yet)");
    rlk_bench_die(2, "the rlk variant needs the rlk library, which this build of rlk-bench "
                     "lacks (not built yet); use --baseline");
    return NULL;
#endif
}

/* ------------------------------------------------------------ scripts */

static int rlk_bench_load_script(const rlk_bench_opts *o, rlk_bench_script *s,
                                 const char *name, char *err, size_t errlen)
{
    if (o->scripts_dir != NULL)
        return rlk_bench_script_from_dir(s, o->scripts_dir, name, err, errlen);
#ifdef RLK_BENCH_HAVE_LIB
    return rlk_bench_script_from_library(s, name, err, errlen);
#else
    return rlk_bench_script_from_dir(s, RLK_BENCH_SCRIPTS_DIR, name, err, errlen);
#endif
}

static void rlk_bench_load_scripts(rlk_bench_setup *s)
{
    char err[RLK_BENCH_ERRLEN];

    if (rlk_bench_load_script(&s->o, &s->acquire, "reentrant/acquire", err, sizeof err) != 0 ||
        rlk_bench_load_script(&s->o, &s->release, "reentrant/release", err, sizeof err) != 0)
        rlk_bench_die(1, err);
}

/* ------------------------------------------------------------ server setup */

static redisContext *rlk_bench_setup_connect(const rlk_bench_opts *o)
{
    struct timeval tv = {2, 0};
    char msg[RLK_BENCH_ERRLEN];
    redisContext *c = rlk_bench_dial(o->host, o->port, tv, msg, sizeof msg);

    if (c == NULL)
        rlk_bench_die(1, msg);
    tv.tv_sec = 5;
    redisSetTimeout(c, tv);
    return c;
}

/* SCRIPT LOAD; the server's SHA-1 must match the build's when known. */
static void rlk_bench_script_load(redisContext *c, rlk_bench_script *s)
{
    const char *argv[3] = {"SCRIPT", "LOAD", s->body};
    size_t argvlen[3] = {6, 4, s->body_len};
    redisReply *r = rlk_bench_command_argv(c, 3, argv, argvlen);
    char msg[RLK_BENCH_ERRLEN];

    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
        snprintf(msg, sizeof msg, "SCRIPT LOAD %s: %s", s->name,
                 r == NULL ? c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
        rlk_bench_die(1, msg);
    }
    if (s->sha1[0] != '\0' && strcmp(s->sha1, r->str) != 0) {
        snprintf(msg, sizeof msg, "SCRIPT LOAD %s: server SHA-1 %s, build %s", s->name,
                 r->str, s->sha1);
        rlk_bench_die(1, msg);
    }
    memcpy(s->sha1, r->str, 41);
    freeReplyObject(r);
}

/* DEL of every key the workload uses (they are all under --key-prefix). */
static void rlk_bench_del_keys(redisContext *c, const rlk_bench_setup *s)
{
    int n = s->o.workload == 1 ? s->o.clients : 1;
    int i;

    for (i = 0; i < n; i++) {
        const char *argv[2] = {"DEL", s->keys[i]};
        redisReply *r = rlk_bench_command_argv(c, 2, argv, NULL);

        if (r == NULL || r->type == REDIS_REPLY_ERROR)
            fprintf(stderr, "rlk-bench: DEL %s failed: %s\n", s->keys[i],
                    r ? r->str : c->errstr);
        if (r != NULL)
            freeReplyObject(r);
    }
}

/* The loopback round trip the numbers are read against: PINGs on the setup
 * connection (bench-run takes them off the run's commands: setup_pings). */
static void rlk_bench_measure_rtt(redisContext *c, rlk_bench_summary *out)
{
    int64_t v[RLK_BENCH_RTT_PINGS];
    int i;

    for (i = 0; i < RLK_BENCH_RTT_PINGS; i++) {
        int64_t t = rlk_bench_now_ns();
        redisReply *r = rlk_bench_command(c, "PING");

        if (r == NULL)
            rlk_bench_die(1, "PING failed on the setup connection");
        freeReplyObject(r);
        v[i] = rlk_bench_now_ns() - t;
    }
    rlk_bench_summarize(v, RLK_BENCH_RTT_PINGS, out);
}

/* The round trip a W2 release can reach: each PING sent right after sleeping the run's hold
 * (rlk_bench_sleep_ns, as the contenders hold), so that, like the release that ends a hold, it
 * leaves a client that slept for a server that was idle. PINGs sent back to back (above) keep
 * both sides awake and are faster on a machine whose idle CPUs sleep deeply. On the setup
 * connection; bench-run takes them off the run's commands with the others (setup_pings). */
static int rlk_bench_measure_rtt_after_hold(redisContext *c, int hold_ms, rlk_bench_summary *out)
{
    int64_t v[RLK_BENCH_HELD_PINGS];
    int n = RLK_BENCH_HELD_PINGS, i;

    if (hold_ms > 0 && n * hold_ms > RLK_BENCH_HELD_BUDGET_MS)
        n = RLK_BENCH_HELD_BUDGET_MS / hold_ms;
    if (n < 1)
        n = 1;
    for (i = 0; i < n; i++) {
        int64_t t;
        redisReply *r;

        rlk_bench_sleep_ns((int64_t)hold_ms * 1000000);
        t = rlk_bench_now_ns();
        r = rlk_bench_command(c, "PING");
        if (r == NULL)
            rlk_bench_die(1, "PING failed on the setup connection");
        freeReplyObject(r);
        v[i] = rlk_bench_now_ns() - t;
    }
    rlk_bench_summarize(v, (size_t)n, out);
    return n;
}

/* The floor of a handoff's first step, release -> message: each PUBLISH sent on the setup
 * connection right after sleeping the hold, as a release is, timed to its message read on a
 * second connection subscribed to <prefix>:floor (one thread reads both: no thread is woken
 * but the one that sent). Any release that wakes its next holder by pub/sub, script or not,
 * goes this way at least. As many as the PINGs after a hold; bench-run takes the PUBLISHes
 * and the SUBSCRIBE off the run's commands (setup_publishes). */
static int rlk_bench_measure_publish_after_hold(redisContext *c, const rlk_bench_opts *o, int n,
                                                rlk_bench_summary *out)
{
    char channel[RLK_BENCH_KEYLEN + 8];
    int64_t v[RLK_BENCH_HELD_PINGS];
    redisContext *sub = rlk_bench_setup_connect(o);
    redisReply *r;
    int i;

    snprintf(channel, sizeof channel, "%s:floor", o->key_prefix);
    r = rlk_bench_command(sub, "SUBSCRIBE %s", channel);
    if (r == NULL)
        rlk_bench_die(1, "SUBSCRIBE failed on the floor's connection");
    freeReplyObject(r);
    for (i = 0; i < n; i++) {
        int64_t t;
        void *m = NULL;

        rlk_bench_sleep_ns((int64_t)o->hold_ms * 1000000);
        t = rlk_bench_now_ns();
        if (redisAppendCommand(c, "PUBLISH %s x", channel) != REDIS_OK ||
            rlk_bench_flush(c) != REDIS_OK)
            rlk_bench_die(1, "PUBLISH failed on the setup connection");
        if (rlk_bench_get_reply(sub, &m) != REDIS_OK)
            rlk_bench_die(1, "no message on the floor's connection");
        v[i] = rlk_bench_now_ns() - t;
        freeReplyObject(m);
        if (rlk_bench_get_reply(c, &m) != REDIS_OK)
            rlk_bench_die(1, "PUBLISH failed on the setup connection");
        freeReplyObject(m);
    }
    rlk_bench_close(sub);
    rlk_bench_summarize(v, (size_t)n, out);
    return n;
}

/* ------------------------------------------------------------ identities */

static void rlk_bench_make_uuid(char out[37])
{
    unsigned char b[16];
    FILE *f = fopen("/dev/urandom", "rb");
    int i, k = 0;

    if (f == NULL || fread(b, 1, sizeof b, f) != sizeof b)
        rlk_bench_die(1, "cannot read /dev/urandom for the client uuid");
    fclose(f);
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
    for (i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            out[k++] = '-';
        k += snprintf(out + k, 3, "%02x", b[i]);
    }
    out[k] = '\0';
}

static void rlk_bench_make_ids(rlk_bench_setup *s)
{
    int n = s->o.clients, i;

    s->keys = calloc((size_t)n, sizeof *s->keys);
    s->channels = calloc((size_t)n, sizeof *s->channels);
    s->owners = calloc((size_t)n, sizeof *s->owners);
    s->ids = calloc((size_t)n, sizeof *s->ids);
    s->waiters = calloc((size_t)n, sizeof *s->waiters);
    s->grants = calloc((size_t)n, sizeof *s->grants);
    if (!s->keys || !s->channels || !s->owners || !s->ids || !s->waiters || !s->grants)
        rlk_bench_die(1, "out of memory");
    rlk_bench_make_uuid(s->uuid);
    for (i = 0; i < n; i++) {
        if (s->o.workload == 1)
            snprintf(s->keys[i], sizeof s->keys[i], "%s:w1:%d", s->o.key_prefix, i);
        else
            snprintf(s->keys[i], sizeof s->keys[i], "%s:w2", s->o.key_prefix);
        snprintf(s->channels[i], sizeof s->channels[i], "redisson_lock__channel:{%s}",
                 s->keys[i]);
        snprintf(s->owners[i], sizeof s->owners[i], "%s:%d", s->uuid, i);
        snprintf(s->waiters[i], sizeof s->waiters[i], "{%s}:rlk_waiters", s->keys[i]);
        snprintf(s->grants[i], sizeof s->grants[i], "{%s}:rlk_next", s->keys[i]);
        s->ids[i].waiters = s->waiters[i];
        s->ids[i].grant = s->grants[i];
        s->ids[i].index = i;
        s->ids[i].key = s->keys[i];
        s->ids[i].channel = s->channels[i];
        s->ids[i].owner = s->owners[i];
    }
}

static void rlk_bench_make_target(rlk_bench_setup *s)
{
    const char *fmt = strchr(s->o.host, ':') ? "%s://[%s]:%d" : "%s://%s:%d";

    snprintf(s->url, sizeof s->url, fmt, s->o.tls ? "rediss" : "redis", s->o.host, s->o.port);
    s->t.host = s->o.host;
    s->t.port = s->o.port;
    s->t.url = s->url;
    s->t.workload = s->o.workload;
    s->t.acquire = &s->acquire;
    s->t.release = &s->release;
    s->t.lease_ms = RLK_BENCH_LEASE_MS;
    s->t.fair = s->o.fair;
    s->t.spin = s->o.spin;
    s->t.kind = s->o.kind;
    s->t.names = s->o.names;
    s->t.no_metrics = s->o.no_metrics;
    s->t.w1_lock = s->o.w1_lock;
    s->t.w1_watchdog = s->o.watchdog;
    s->t.connect_timeout_ms = 2000;
    s->t.command_timeout_ms = 5000;
}

/* ------------------------------------------------------------ report */

static void rlk_bench_json_common(rlk_bench_json *j, const rlk_bench_setup *s)
{
    const rlk_bench_opts *o = &s->o;
    char conc[200];

    if (o->workload == 3)
        snprintf(conc, sizeof conc, "%d lock requests on %d names from %s", o->requests,
                 o->names, o->api_async ? "one thread, one rlk_async client and poll loop"
                                        : "a POSIX thread each, one rlk_client");
    else if (o->api_async && !o->procs)
        snprintf(conc, sizeof conc, "%d %s as tasks of one rlk_async client, one thread, one "
                 "poll loop", o->clients, o->workload == 1 ? "clients" : "contenders");
    else
        snprintf(conc, sizeof conc, "%d %s, one per %s, each with its own %s",
                 o->clients, o->procs ? (o->clients == 1 ? "process" : "processes (fork)")
                 : (o->clients == 1 ? "POSIX thread" : "POSIX threads"),
                 o->workload == 1 ? "client" : "contender",
                 o->baseline ? "hiredis connection"
                 : o->api_async ? "rlk_async client (poll loop)"
                 : "rlk_client (pool of 1 connection)");
    rlk_bench_json_str(j, "schema", "peers-bench/1");
    rlk_bench_json_str(j, "impl", "rlk");
    rlk_bench_json_str(j, "lib", s->d->lib);
    rlk_bench_json_str(j, "lib_version", s->d->lib_version);
    rlk_bench_json_str(j, "client_lib", "hiredis " RLK_BENCH_HIREDIS_VERSION_STR);
    rlk_bench_json_str(j, "runtime", "C11, " RLK_BENCH_COMPILER ", pthreads");
    rlk_bench_json_str(j, "workload", o->workload == 1 ? "w1" : o->workload == 2 ? "w2" : "pending");
    rlk_bench_json_str(j, "variant", o->variant ? o->variant : o->baseline ? "baseline" : "rlk");
    rlk_bench_json_str(j, "variant_desc",
                       o->workload == 3 ? "lock requests pending at once, then served"
                       : o->workload == 1 && o->w1_lock && !o->api_async && o->watchdog
                       ? "rlk_lock_try_lock (wait 0, lease -1: the watchdog's 30 s lease, renewed "
                         "until unlock) then rlk_lock_unlock on the client's own key; one "
                         "rlk_client (pool of 1) per client"
                       : o->workload == 1 && o->w1_lock && !o->api_async
                       ? "rlk_lock_try_lock (wait 0, lease 30000 ms) then rlk_lock_unlock on the "
                         "client's own key; one rlk_client (pool of 1) per client"
                       : o->workload == 1 && o->api_async && o->watchdog
                       ? "rlk_async_lock (wait 0, lease -1: the watchdog's 30 s lease, renewed "
                         "until unlock) then rlk_async_unlock on the client's own key; every "
                         "client a task of one rlk_async client driven by one thread's poll() loop"
                       : o->workload == 1 ? s->d->w1_desc : s->d->w2_desc);
    rlk_bench_json_int(j, "clients", o->clients);
    rlk_bench_json_num(j, "duration_s", o->duration_s, 3);
    rlk_bench_json_str(j, "concurrency", conc);
    rlk_bench_json_str(j, "clock", "CLOCK_MONOTONIC");
    rlk_bench_json_str(j, "mode", o->procs ? "processes" : "threads");
    rlk_bench_json_str(j, "transport", o->tls ? "tls" : "tcp");
    rlk_bench_json_str(j, "lock", o->kind ? rlk_bench_kind_name(o->kind)
                       : o->fair ? "fair" : o->spin ? "spin" : o->setnx ? "setnx" : "reentrant");
    rlk_bench_json_str(j, "api", o->baseline ? NULL : o->api_async ? "async" : "blocking");
    if (rlk_bench_kind_many(o->kind))
        rlk_bench_json_int(j, "names", o->names);
    if (o->workload == 1)
        rlk_bench_json_str(j, "w1_calls", o->baseline ? "evalsha" : o->w1_lock ? "lock" : "eval");
    if (o->workload == 1 && o->w1_lock)
        rlk_bench_json_str(j, "lease", o->watchdog ? "watchdog" : "fixed");
    rlk_bench_json_summary_us(j, "rtt_us", &s->rtt);
    if (s->held_pings > 0) {
        rlk_bench_json_summary_us(j, "rtt_after_hold_us", &s->rtt_held);
        rlk_bench_json_int(j, "after_hold_pings", s->held_pings);
    }
    if (s->held_publishes > 0) {
        rlk_bench_json_summary_us(j, "publish_after_hold_us", &s->pub_held);
        /* the floor's PUBLISHes and its one SUBSCRIBE, not the run's */
        rlk_bench_json_int(j, "setup_publishes", s->held_publishes);
    }
    /* Every PING the setup connection sent, both kinds. */
    rlk_bench_json_int(j, "setup_pings", RLK_BENCH_RTT_PINGS + s->held_pings);
}

#ifdef RLK_BENCH_HAVE_ASYNC
/* The common fields, for bench_async's pending report. */
static void rlk_bench_json_common_cb(rlk_bench_json *j, const void *arg)
{
    rlk_bench_json_common(j, arg);
}
#endif

/* User + system CPU of this process and of its waited-for children (--procs). */
static double rlk_bench_cpu_now(void)
{
    struct rusage self, kids;

    getrusage(RUSAGE_SELF, &self);
    getrusage(RUSAGE_CHILDREN, &kids);
    return (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec +
                    kids.ru_stime.tv_sec) +
           (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec +
                    kids.ru_stime.tv_usec) / 1e6;
}

/* Errors of all contenders, one last message, and one error per contender
 * abandoned outside a wait. */
static uint64_t rlk_bench_errors(const rlk_bench_run_result *r, int count_abandoned,
                                 const char **last)
{
    uint64_t errors = 0;
    int i;

    *last = NULL;
    for (i = 0; i < r->n; i++) {
        errors += r->w[i].errors;
        if (r->w[i].last_error[0] != '\0')
            *last = r->w[i].last_error;
        if (r->w[i].unfinished && (count_abandoned || !r->w[i].stuck)) {
            errors++;
            *last = "a contender was still inside a call at deadline + grace";
        }
    }
    return errors;
}

static void rlk_bench_report_w1(const rlk_bench_setup *s, rlk_bench_run_result *r)
{
    size_t total = 0, k = 0;
    int64_t end = 0, *lat;
    rlk_bench_summary sum;
    rlk_bench_json j;
    const char *last;
    uint64_t errors = rlk_bench_errors(r, 1, &last);
    double elapsed;
    int i;

    for (i = 0; i < r->n; i++) {
        total += r->w[i].nlat;
        if (r->w[i].end_ns > end)
            end = r->w[i].end_ns;
    }
    if (r->unfinished > 0)
        end = r->closed_ns;
    lat = malloc((total ? total : 1) * sizeof *lat);
    if (lat == NULL)
        rlk_bench_die(1, "out of memory");
    for (i = 0; i < r->n; i++) {
        memcpy(lat + k, r->w[i].lat, r->w[i].nlat * sizeof *lat);
        k += r->w[i].nlat;
    }
    rlk_bench_summarize(lat, total, &sum);
    elapsed = end / 1e9;
    rlk_bench_json_begin(&j, stdout);
    rlk_bench_json_common(&j, s);
    rlk_bench_json_int(&j, "ops", (long long)total);
    rlk_bench_json_num(&j, "elapsed_s", elapsed, 6);
    rlk_bench_json_num(&j, "ops_per_s", elapsed > 0 ? total / elapsed : 0, 1);
    rlk_bench_json_summary_us(&j, "pair_lat_us", &sum);
    rlk_bench_json_num(&j, "client_cpu_s", s->cpu_s, 3);
    rlk_bench_json_num(&j, "cpu_us_per_pair", total ? s->cpu_s * 1e6 / (double)total : NAN, 2);
    rlk_bench_json_int(&j, "errors", (long long)errors);
    rlk_bench_json_str(&j, "last_error", last);
    rlk_bench_json_end(&j);
    free(lat);
}

static rlk_bench_event *rlk_bench_gather_events(const rlk_bench_run_result *r, size_t *n)
{
    rlk_bench_event *ev;
    size_t total = 0, k = 0;
    int i;

    for (i = 0; i < r->n; i++)
        total += r->w[i].nev;
    ev = malloc((total ? total : 1) * sizeof *ev);
    if (ev == NULL)
        rlk_bench_die(1, "out of memory");
    for (i = 0; i < r->n; i++) {
        if (r->w[i].nev == 0)
            continue; /* ev may be NULL: memcpy must not see it */
        memcpy(ev + k, r->w[i].ev, r->w[i].nev * sizeof *ev);
        k += r->w[i].nev;
    }
    *n = total;
    return ev;
}

/* A header line, then one line per acquisition with absolute CLOCK_MONOTONIC
 * times (files of several processes, or implementations, merge). */
static void rlk_bench_write_events(const rlk_bench_setup *s, const rlk_bench_event *ev, size_t n,
                                   int64_t t0)
{
    const char *path = s->o.events_out;
    FILE *f = fopen(path, "w");
    size_t i;

    if (f == NULL) {
        fprintf(stderr, "rlk-bench: cannot write %s\n", path);
        return;
    }
    fprintf(f, "# peers-bench/1 events impl=rlk variant=%s lock=%s mode=%s contenders=%d "
            "clock=CLOCK_MONOTONIC times=absolute_ns start_ns=%lld: "
            "contender,request_ns,acquire_ns,release_ns\n",
            s->o.variant ? s->o.variant : s->o.baseline ? "baseline" : "rlk",
            s->o.kind ? rlk_bench_kind_name(s->o.kind)
            : s->o.fair ? "fair" : s->o.spin ? "spin" : s->o.setnx ? "setnx" : "reentrant",
            s->o.procs ? "processes" : "threads",
            s->o.clients, (long long)t0);
    for (i = 0; i < n; i++)
        fprintf(f, "%d,%lld,%lld,%lld\n", ev[i].contender, (long long)(t0 + ev[i].request_ns),
                (long long)(t0 + ev[i].acquire_ns), (long long)(t0 + ev[i].release_ns));
    if (fclose(f) != 0)
        fprintf(stderr, "rlk-bench: error writing %s\n", path);
}

static uint64_t rlk_bench_giveups(const rlk_bench_run_result *r)
{
    uint64_t g = 0;
    int i;

    for (i = 0; i < r->n; i++)
        g += r->w[i].giveups;
    return g;
}

/* The handoff timeline: for each acquisition that took the lock
 * over from another contender and was woken by a message, the steps from
 * the previous holder's release call to this acquire's return; their p50s.
 * Events sorted in acquisition order (rlk_bench_w2_compute sorts them). */
#define RLK_BENCH_TL_STEPS 7
static const char *const rlk_bench_tl_names[RLK_BENCH_TL_STEPS] = {
    "release_to_message_us",    /* release sent .. the grantee's subscriber read the message */
    "message_to_woken_us",      /* .. the waiting thread woke */
    "woken_to_claim_sent_us",   /* .. its claim (acquire) written */
    "claim_rtt_us",             /* .. the claim's reply read */
    "claim_to_return_us",       /* .. try_lock returned (registry, bookkeeping) */
    "release_rtt_us",           /* the releaser's own unlock call */
    "handoff_us",               /* release sent .. try_lock returned */
};

static void rlk_bench_json_timeline(rlk_bench_json *j, const rlk_bench_event *ev, size_t n)
{
    int64_t *v[RLK_BENCH_TL_STEPS];
    size_t k = 0;
    int i;

    for (i = 0; i < RLK_BENCH_TL_STEPS; i++) {
        v[i] = malloc((n ? n : 1) * sizeof *v[i]);
        if (v[i] == NULL)
            rlk_bench_die(1, "out of memory");
    }
    for (size_t e = 1; e < n; e++) {
        const rlk_bench_event *a = &ev[e - 1], *b = &ev[e];

        if (a->contender == b->contender || b->tl[0] <= 0 || b->tl[1] <= 0 || b->tl[2] <= 0 ||
            b->tl[3] <= 0 || b->tl[0] < a->release_ns)
            continue;
        v[0][k] = b->tl[0] - a->release_ns;
        v[1][k] = b->tl[1] - b->tl[0];
        v[2][k] = b->tl[2] - b->tl[1];
        v[3][k] = b->tl[3] - b->tl[2];
        v[4][k] = b->acquire_ns - b->tl[3];
        v[5][k] = a->release_end_ns - a->release_ns;
        v[6][k] = b->acquire_ns - a->release_ns;
        k++;
    }
    rlk_bench_json_int(j, "timeline_handoffs", (long long)k);
    for (i = 0; i < RLK_BENCH_TL_STEPS; i++) {
        rlk_bench_summary sum;

        rlk_bench_summarize(v[i], k, &sum);
        rlk_bench_json_summary_us(j, rlk_bench_tl_names[i], &sum);
        free(v[i]);
    }
}

/* Subscriber wake-ups and messages of every contender (each process reports
 * its own; summed here), per handoff and per acquisition. */
static void rlk_bench_json_sub(rlk_bench_json *j, const rlk_bench_run_result *r,
                               const rlk_bench_w2_stats *st, int have)
{
    uint64_t wk = 0, msg = 0;

    for (int i = 0; i < r->n; i++) {
        wk += r->w[i].sub_wakeups;
        msg += r->w[i].sub_messages;
    }
    if (!have) {
        rlk_bench_json_num(j, "sub_wakeups_per_handoff", NAN, 3);
        rlk_bench_json_num(j, "sub_messages_per_acq", NAN, 3);
        return;
    }
    rlk_bench_json_int(j, "sub_wakeups", (long long)wk);
    rlk_bench_json_int(j, "sub_messages", (long long)msg);
    rlk_bench_json_num(j, "sub_wakeups_per_handoff",
                       st->handoffs ? (double)wk / (double)st->handoffs : NAN, 3);
    rlk_bench_json_num(j, "sub_messages_per_acq",
                       st->acquisitions ? (double)msg / (double)st->acquisitions : NAN, 3);
}

static void rlk_bench_json_w2(rlk_bench_json *j, const rlk_bench_setup *s,
                              const rlk_bench_w2_stats *st, const rlk_bench_run_result *r)
{
    double dur = s->o.duration_s;
    const char *last;
    uint64_t errors = rlk_bench_errors(r, 0, &last);

    rlk_bench_json_int(j, "contenders", s->o.clients);
    rlk_bench_json_int(j, "hold_ms", s->o.hold_ms);
    rlk_bench_json_str(j, "hold_mode", "sleep");
    rlk_bench_json_int(j, "acquisitions", (long long)st->acquisitions);
    rlk_bench_json_num(j, "acq_per_s", st->acquisitions / dur, 1);
    rlk_bench_json_summary_us(j, "gap_us", &st->gap);
    rlk_bench_json_summary_us(j, "handoff_other_us", &st->handoff_other);
    rlk_bench_json_num(j, "handoffs_per_s", st->handoffs / dur, 1);
    rlk_bench_json_num(j, "self_reacquire_frac", st->self_reacquire_frac, 4);
    rlk_bench_json_summary_us(j, "wait_us", &st->wait);
    rlk_bench_json_int(j, "waits_over_100ms", (long long)st->waits_over_100ms);
    rlk_bench_json_num(j, "jain_fairness", st->jain_fairness, 4);
    rlk_bench_json_int(j, "overlaps", (long long)st->overlaps);
    rlk_bench_json_int(j, "giveups", (long long)rlk_bench_giveups(r));
    rlk_bench_json_int(j, "stuck_at_deadline", r->stuck);
    rlk_bench_json_summary_us(j, "hold_us", &st->hold);
    rlk_bench_json_num(j, "client_cpu_s", s->cpu_s, 3);
    rlk_bench_json_num(j, "cpu_us_per_handoff",
                       st->handoffs ? s->cpu_s * 1e6 / (double)st->handoffs : NAN, 2);
    rlk_bench_json_int(j, "errors", (long long)errors);
    rlk_bench_json_str(j, "last_error", last);
}

static void rlk_bench_report_w2(const rlk_bench_setup *s, rlk_bench_run_result *r)
{
    rlk_bench_w2_stats st;
    rlk_bench_json j;
    size_t n;
    rlk_bench_event *ev = rlk_bench_gather_events(r, &n);

    if (rlk_bench_w2_compute(ev, n, s->o.clients, r->deadline_ns, &st) != 0)
        rlk_bench_die(1, "out of memory");
    if (s->o.events_out != NULL)
        rlk_bench_write_events(s, ev, n, r->t0_ns);
    if (st.overlaps > 0)
        fprintf(stderr, "rlk-bench: MUTUAL EXCLUSION VIOLATED: %zu overlapping "
                "acquisitions\n", st.overlaps);
    if (r->stuck > 0)
        fprintf(stderr, "rlk-bench: %d contender(s) still waiting %.3f s after the "
                "deadline: stuck\n", r->stuck, s->o.grace_s);
    rlk_bench_json_begin(&j, stdout);
    rlk_bench_json_common(&j, s);
    rlk_bench_json_w2(&j, s, &st, r);
    rlk_bench_json_sub(&j, r, &st, s->d->sub_counts != NULL);
    rlk_bench_json_timeline(&j, ev, n);
    rlk_bench_json_end(&j);
    free(ev);
}

/* The library's metrics of every contender (--metrics-out). */
static void rlk_bench_write_metrics(const rlk_bench_setup *s, const rlk_bench_run_result *r)
{
#ifdef RLK_BENCH_HAVE_LIB
    void **blobs = calloc((size_t)(r->n ? r->n : 1), sizeof *blobs);
    size_t *sizes = calloc((size_t)(r->n ? r->n : 1), sizeof *sizes);

    if (blobs == NULL || sizes == NULL)
        rlk_bench_die(1, "out of memory");
    for (int i = 0; i < r->n; i++) {
        blobs[i] = r->w[i].metrics;
        sizes[i] = r->w[i].metrics_len;
    }
    if (rlk_bench_rlk_write_metrics(s->o.metrics_out, blobs, sizes, r->n,
                                    s->o.procs ? "process" : "contender") != 0)
        fprintf(stderr, "rlk-bench: no metrics written to %s\n", s->o.metrics_out);
    free(blobs);
    free(sizes);
#else
    (void)r;
    fprintf(stderr, "rlk-bench: --metrics-out %s: this build has no rlk library\n",
            s->o.metrics_out);
#endif
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    static rlk_bench_setup s;
    char err[RLK_BENCH_ERRLEN];
    rlk_bench_run_result r;
    redisContext *c;
    double cpu0;
    int rc = rlk_bench_parse_opts(argc, argv, &s.o, err, sizeof err);

    if (rc < 0) {
        fprintf(stderr, "rlk-bench: %s (see rlk-bench --help)\n", err);
        return 2;
    }
    if (rc > 0) {
        rlk_bench_usage(stdout);
        return 0;
    }
    if (s.o.events_out != NULL && s.o.workload != 2)
        fprintf(stderr, "rlk-bench: --events-out applies to W2 only; ignored\n");
    rlk_bench_tls_cfg.on = s.o.tls;
    rlk_bench_tls_cfg.cacert = s.o.cacert;
    rlk_bench_tls_cfg.cert = s.o.cert;
    rlk_bench_tls_cfg.key = s.o.key;
    s.d = rlk_bench_pick_driver(&s.o);
    rlk_bench_load_scripts(&s);
    rlk_bench_make_ids(&s);
    rlk_bench_make_target(&s);
    c = rlk_bench_setup_connect(&s.o);
    if (s.o.baseline) {
        rlk_bench_script_load(c, &s.acquire);
        rlk_bench_script_load(c, &s.release);
    }
    rlk_bench_del_keys(c, &s);
    rlk_bench_measure_rtt(c, &s.rtt);
    if (s.o.workload == 2) {
        s.held_pings = rlk_bench_measure_rtt_after_hold(c, s.o.hold_ms, &s.rtt_held);
        s.held_publishes = rlk_bench_measure_publish_after_hold(c, &s.o, s.held_pings,
                                                                &s.pub_held);
    }
#ifdef RLK_BENCH_HAVE_ASYNC
    if (s.o.workload == 3) {
        rc = rlk_bench_pending(&s.o, &s.t, c, rlk_bench_json_common_cb, &s, err, sizeof err);
        rlk_bench_close(c);
        if (rc != 0)
            rlk_bench_die(1, err);
        return 0;
    }
#endif
    cpu0 = rlk_bench_cpu_now();
    if ((s.o.procs ? rlk_bench_run_procs : rlk_bench_run)(&s.o, s.d, &s.t, s.ids, &r, err,
                                                           sizeof err) != 0)
        rlk_bench_die(1, err);
    s.cpu_s = rlk_bench_cpu_now() - cpu0;
    if (s.o.workload == 1)
        rlk_bench_report_w1(&s, &r);
    else
        rlk_bench_report_w2(&s, &r);
    if (s.o.metrics_out != NULL)
        rlk_bench_write_metrics(&s, &r);
    rlk_bench_del_keys(c, &s);
    rlk_bench_close(c);
    if (r.unfinished > 0)
        exit(0); /* abandoned threads still use the setup; the exit ends them */
    rlk_bench_run_free(&r);
    rlk_bench_script_free(&s.acquire);
    rlk_bench_script_free(&s.release);
    free(s.keys);
    free(s.channels);
    free(s.owners);
    free(s.waiters);
    free(s.grants);
    free(s.ids);
    return 0;
}
