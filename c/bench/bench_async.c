/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_async: --api async and --workload pending. See bench_async.h.
 * Built only when the library has the async engine (RLK_BENCH_HAVE_ASYNC). */
#include "bench_async.h"

#include <dirent.h>
#include <malloc.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rlk.h"
#include "rlk_async.h"
#include "rlk_async_poll.h"

#include "bench_clock.h"
#include "bench_dial.h"
#include "bench_json.h"
#include "bench_stats.h"

#define RLK_BENCH_A_LEASE_MS 30000
#define RLK_BENCH_A_BACKOFF_NS INT64_C(1000000)
#define RLK_BENCH_A_TICK_MS 50

int rlk_bench_async_available(void)
{
    return 1;
}

/* ================================================================ the poll loop
 * rlk_async_poll.h: poll() with no event library, the hooks a program with a
 * loop of its own fills in (docs/async.md, "A loop with no adapter"). */

typedef rlk_async_poll rlk_bench_loop;

static int rlk_bench_loop_attach_client(rlk_bench_loop *l, rlk_async *ac)
{
    return rlk_async_poll_attach(ac, l);
}

/* One turn: poll at most until `until` (absolute CLOCK_MONOTONIC ns) or the
 * rlk timer, dispatch ready fds, then the timer when due (ppoll: nanoseconds,
 * so a 1 ms hold is not rounded to poll()'s milliseconds). */
static void rlk_bench_loop_turn(rlk_bench_loop *l, int64_t until)
{
    int64_t wait_ns = until - rlk_bench_now_ns();

    rlk_async_poll_turn(l, wait_ns < 0 ? 0 : (long long)wait_ns);
}

/* After rlk_async_free (its cleanup marked every fd dead). */
static void rlk_bench_loop_free(rlk_bench_loop *l)
{
    rlk_async_poll_free(l);
}

/* ================================================================ the client */

static rlk_async *rlk_bench_async_client(const rlk_bench_target *t, rlk_bench_loop *loop,
                                         char *err, size_t errlen)
{
    rlk_options opts;
    rlk_async *ac;

    memset(loop, 0, sizeof *loop);      /* freed below also when the attach never ran */
    rlk_options_init(&opts);
    opts.url = t->url;
    opts.connect_timeout_ms = t->connect_timeout_ms;
    opts.command_timeout_ms = t->command_timeout_ms;
    opts.tls_cacert = rlk_bench_tls_cfg.cacert;
    opts.tls_cert = rlk_bench_tls_cfg.cert;
    opts.tls_key = rlk_bench_tls_cfg.key;
    ac = rlk_async_new(&opts);
    if (ac == NULL) {
        snprintf(err, errlen, "rlk_async_new: out of memory");
        return NULL;
    }
    if (rlk_async_err(ac) != RLK_OK || rlk_bench_loop_attach_client(loop, ac) != RLK_OK) {
        snprintf(err, errlen, "rlk_async: %s: %s", rlk_strerror(rlk_async_err(ac)),
                 rlk_async_errstr(ac));
        rlk_async_free(ac);
        rlk_bench_loop_free(loop);
        return NULL;
    }
    return ac;
}

/* One request's outcome, for a wait in the setup. */
typedef struct rlk_bench_once {
    int done;
    int err;
    char msg[RLK_BENCH_ERRLEN];
} rlk_bench_once;

static void rlk_bench_once_cb(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    rlk_bench_once *o = privdata;

    (void)ac;
    o->done = 1;
    o->err = r->err;
    snprintf(o->msg, sizeof o->msg, "%s", r->errstr ? r->errstr : "");
}

/* Connects: a force unlock of a key of the run's own (none holds it) is a
 * round trip on the command connection. 0, or -1 with err. */
static int rlk_bench_async_warm(rlk_async *ac, rlk_bench_loop *loop, const char *key,
                                const rlk_bench_target *t, char *err, size_t errlen)
{
    rlk_bench_once once = {0, 0, ""};
    int64_t end = rlk_bench_now_ns() +
                  (int64_t)(t->connect_timeout_ms + t->command_timeout_ms + 5000) * 1000000;
    char wkey[600];

    snprintf(wkey, sizeof wkey, "%s:async-warmup", key);
    if (rlk_async_force_unlock(ac, RLK_KIND_LOCK, wkey, rlk_bench_once_cb, &once) == NULL) {
        snprintf(err, errlen, "rlk_async_force_unlock: out of memory");
        return -1;
    }
    while (!once.done && rlk_bench_now_ns() < end)
        rlk_bench_loop_turn(loop, rlk_bench_now_ns() + RLK_BENCH_A_TICK_MS * 1000000LL);
    if (!once.done) {
        snprintf(err, errlen, "rlk_async: no reply to the first request within %d ms",
                 t->connect_timeout_ms + t->command_timeout_ms + 5000);
        return -1;
    }
    if (once.err != RLK_OK) {
        snprintf(err, errlen, "rlk_async: first request: %s: %s", rlk_strerror(once.err),
                 once.msg);
        return -1;
    }
    return 0;
}

/* ================================================================ W1 and W2 as tasks */

enum { TK_IDLE, TK_ACQUIRING, TK_HOLDING, TK_RELEASING, TK_DONE };

struct rlk_bench_arun;

typedef struct rlk_bench_atask {
    struct rlk_bench_arun *run;
    const rlk_bench_identity *id;
    unsigned long long task;      /* the holder's task id: index + 1 */
    rlk_bench_worker_result res;
    size_t cap_lat;
    size_t cap_ev;
    int phase;
    int64_t t1;                   /* W1: the pair's start */
    int64_t request;              /* W2: the acquisition's request, absolute */
    rlk_bench_event e;
    int64_t wake_at;              /* absolute: hold end or back-off end; -1: none */
} rlk_bench_atask;

typedef struct rlk_bench_arun {
    const rlk_bench_opts *o;
    const rlk_bench_target *t;
    rlk_async *ac;
    rlk_bench_loop loop;
    int n;
    rlk_bench_atask *tasks;
    int done;
    int closed;                   /* results taken: callbacks (CLOSED) record nothing */
    int kind;
    int64_t t0, deadline, give_up;
} rlk_bench_arun;

static int rlk_bench_agrow(void **buf, size_t *cap, size_t n, size_t size)
{
    size_t ncap;
    void *p;

    if (n < *cap)
        return 0;
    ncap = *cap ? 2 * *cap : 4096;
    p = realloc(*buf, ncap * size);
    if (p == NULL)
        return -1;
    *buf = p;
    *cap = ncap;
    return 0;
}

static void rlk_bench_atask_error(rlk_bench_atask *tk, int giveup, const char *fmt,
                                  const char *what, const rlk_async_result *r)
{
    if (giveup)
        tk->res.giveups++;
    else
        tk->res.errors++;
    snprintf(tk->res.last_error, sizeof tk->res.last_error, fmt, what,
             r ? rlk_strerror(r->err) : "", r && r->errstr ? r->errstr : "");
}

static void rlk_bench_atask_done(rlk_bench_atask *tk)
{
    tk->phase = TK_DONE;
    tk->wake_at = -1;
    tk->res.end_ns = rlk_bench_now_ns() - tk->run->t0;
    tk->run->done++;
}

static void rlk_bench_atask_backoff(rlk_bench_atask *tk)
{
    tk->phase = TK_IDLE;
    tk->wake_at = rlk_bench_now_ns() + RLK_BENCH_A_BACKOFF_NS;
}

static void rlk_bench_w1_start(rlk_bench_atask *tk);
static void rlk_bench_w2_start(rlk_bench_atask *tk);

static void rlk_bench_w1_unlocked(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    rlk_bench_atask *tk = privdata;
    int64_t t2 = rlk_bench_now_ns();

    (void)ac;
    if (tk->run->closed)
        return;
    if (r->err != RLK_OK) {
        rlk_bench_atask_error(tk, 0, "%s: %s: %s", "rlk_async_unlock", r);
        rlk_bench_atask_backoff(tk);
        return;
    }
    if (rlk_bench_agrow((void **)&tk->res.lat, &tk->cap_lat, tk->res.nlat, sizeof(int64_t)) == 0)
        tk->res.lat[tk->res.nlat++] = t2 - tk->t1;
    else
        rlk_bench_atask_error(tk, 0, "%s%s%s", "out of memory recording a latency", NULL);
    rlk_bench_w1_start(tk);
}

static void rlk_bench_w1_locked(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    rlk_bench_atask *tk = privdata;

    if (tk->run->closed)
        return;
    if (r->err != RLK_OK) {
        rlk_bench_atask_error(tk, 0, "%s: %s: %s",
                              r->err == RLK_ERR_BUSY ? "acquire: held by another owner"
                                                     : "rlk_async_lock", r);
        rlk_bench_atask_backoff(tk);
        return;
    }
    tk->phase = TK_RELEASING;
    if (rlk_async_unlock(ac, tk->run->kind, tk->id->key, tk->task, rlk_bench_w1_unlocked, tk) ==
        NULL) {
        rlk_bench_atask_error(tk, 0, "%s%s%s", "rlk_async_unlock: out of memory", NULL);
        rlk_bench_atask_done(tk);
    }
}

static void rlk_bench_w1_start(rlk_bench_atask *tk)
{
    rlk_bench_arun *run = tk->run;

    tk->wake_at = -1;
    if (rlk_bench_now_ns() >= run->deadline) {
        rlk_bench_atask_done(tk);
        return;
    }
    tk->phase = TK_ACQUIRING;
    tk->t1 = rlk_bench_now_ns();
    if (rlk_async_lock(run->ac, run->kind, tk->id->key, tk->task, 0,
                       run->t->w1_watchdog ? -1 : RLK_BENCH_A_LEASE_MS, rlk_bench_w1_locked,
                       tk) == NULL) {
        rlk_bench_atask_error(tk, 0, "%s%s%s", "rlk_async_lock: out of memory", NULL);
        rlk_bench_atask_done(tk);
    }
}

static void rlk_bench_w2_unlocked(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    rlk_bench_atask *tk = privdata;
    rlk_bench_arun *run = tk->run;

    (void)ac;
    if (run->closed)
        return;
    tk->e.release_end_ns = rlk_bench_now_ns() - run->t0;
    tk->e.request_ns = tk->request - run->t0;
    tk->e.contender = tk->id->index;
    memset(tk->e.tl, 0, sizeof tk->e.tl);
    if (rlk_bench_agrow((void **)&tk->res.ev, &tk->cap_ev, tk->res.nev,
                        sizeof(rlk_bench_event)) == 0)
        tk->res.ev[tk->res.nev++] = tk->e;
    else
        rlk_bench_atask_error(tk, 0, "%s%s%s", "out of memory recording an acquisition", NULL);
    if (r->err != RLK_OK)
        rlk_bench_atask_error(tk, 0, "%s: %s: %s", "rlk_async_unlock", r);
    rlk_bench_w2_start(tk);
}

/* The hold ended (or there is none): release. */
static void rlk_bench_w2_release(rlk_bench_atask *tk)
{
    rlk_bench_arun *run = tk->run;

    tk->wake_at = -1;
    tk->phase = TK_RELEASING;
    tk->e.release_ns = rlk_bench_now_ns() - run->t0;
    if (rlk_async_unlock(run->ac, run->kind, tk->id->key, tk->task, rlk_bench_w2_unlocked, tk) ==
        NULL) {
        rlk_bench_atask_error(tk, 0, "%s%s%s", "rlk_async_unlock: out of memory", NULL);
        rlk_bench_atask_done(tk);
    }
}

static void rlk_bench_w2_locked(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    rlk_bench_atask *tk = privdata;
    rlk_bench_arun *run = tk->run;
    int64_t now = rlk_bench_now_ns();

    (void)ac;
    if (run->closed)
        return;
    tk->e.acquire_ns = now - run->t0;
    if (r->err == RLK_OK) {
        tk->phase = TK_HOLDING;
        if (run->o->hold_ms == 0)
            rlk_bench_w2_release(tk);
        else
            tk->wake_at = now + (int64_t)run->o->hold_ms * 1000000;
        return;
    }
    /* The wait ran until deadline + grace: a stuck waiter, as the threads' runner says. */
    if (r->err == RLK_ERR_BUSY ||
        (r->err == RLK_ERR_TIMEOUT && now >= run->give_up - INT64_C(1000000))) {
        tk->res.stuck = 1;
        rlk_bench_atask_done(tk);
        return;
    }
    rlk_bench_atask_error(tk, 1, "%s: %s: %s", "rlk_async_lock", r);
    rlk_bench_atask_backoff(tk);
}

static void rlk_bench_w2_start(rlk_bench_atask *tk)
{
    rlk_bench_arun *run = tk->run;
    int64_t now = rlk_bench_now_ns(), left = run->give_up - now;

    tk->wake_at = -1;
    if (now >= run->deadline) {
        rlk_bench_atask_done(tk);
        return;
    }
    tk->phase = TK_ACQUIRING;
    tk->request = now;
    if (rlk_async_lock(run->ac, run->kind, tk->id->key, tk->task,
                       left < INT64_C(1000000) ? 1 : (long long)(left / 1000000),
                       RLK_BENCH_A_LEASE_MS, rlk_bench_w2_locked, tk) == NULL) {
        rlk_bench_atask_error(tk, 0, "%s%s%s", "rlk_async_lock: out of memory", NULL);
        rlk_bench_atask_done(tk);
    }
}

/* A task's wake-up came due: the hold ended, or a back-off did. */
static void rlk_bench_atask_wake(rlk_bench_atask *tk)
{
    tk->wake_at = -1;
    if (tk->phase == TK_HOLDING)
        rlk_bench_w2_release(tk);
    else if (tk->run->o->workload == 1)
        rlk_bench_w1_start(tk);
    else
        rlk_bench_w2_start(tk);
}

/* The measured part of a run: every task started at t0, then the loop's
 * turns until every task is done or the grace is over. Not inlined, so that
 * a profiler can count this part alone (valgrind --tool=callgrind
 * --toggle-collect=rlk_bench_async_loop). */
static __attribute__((noinline)) void rlk_bench_async_loop(rlk_bench_arun *run)
{
    for (int i = 0; i < run->n; i++) {
        if (run->o->workload == 1)
            rlk_bench_w1_start(&run->tasks[i]);
        else
            rlk_bench_w2_start(&run->tasks[i]);
    }
    while (run->done < run->n) {
        int64_t now = rlk_bench_now_ns(), until = now + RLK_BENCH_A_TICK_MS * 1000000LL;

        if (now >= run->give_up)
            break;
        for (int i = 0; i < run->n; i++)
            if (run->tasks[i].wake_at >= 0 && run->tasks[i].wake_at < until)
                until = run->tasks[i].wake_at;
        if (until > run->give_up)
            until = run->give_up;
        rlk_bench_loop_turn(&run->loop, until);
        now = rlk_bench_now_ns();
        for (int i = 0; i < run->n; i++)
            if (run->tasks[i].wake_at >= 0 && run->tasks[i].wake_at <= now)
                rlk_bench_atask_wake(&run->tasks[i]);
    }
}

int rlk_bench_run_async(const rlk_bench_opts *o, const rlk_bench_target *t,
                        const rlk_bench_identity *ids, rlk_bench_run_result *out, char *err,
                        size_t errlen)
{
    rlk_bench_arun *run = calloc(1, sizeof *run);
    int64_t t0 = 0;

    err[0] = '\0';
    memset(out, 0, sizeof *out);
    if (run == NULL || (run->tasks = calloc((size_t)o->clients, sizeof *run->tasks)) == NULL ||
        (out->w = calloc((size_t)o->clients, sizeof *out->w)) == NULL) {
        if (run)
            free(run->tasks);
        free(run);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    run->o = o;
    run->t = t;
    run->n = o->clients;
    run->kind = t->fair ? RLK_KIND_FAIR : RLK_KIND_LOCK;
    run->ac = rlk_bench_async_client(t, &run->loop, err, errlen);
    if (run->ac == NULL ||
        rlk_bench_async_warm(run->ac, &run->loop, ids[0].key, t, err, errlen) != 0 ||
        rlk_bench_child_gate(o, &t0) != 0) {
        if (run->ac != NULL) {
            if (err[0] == '\0')
                snprintf(err, errlen, "the parent called the run off");
            rlk_async_free(run->ac);
            rlk_bench_loop_free(&run->loop);
        }
        free(out->w);
        out->w = NULL;
        free(run->tasks);
        free(run);
        return -1;
    }
    run->t0 = t0 > 0 ? t0 : rlk_bench_now_ns();
    run->deadline = run->t0 + (int64_t)(o->duration_s * 1e9);
    run->give_up = run->deadline + (int64_t)(o->grace_s * 1e9);
    for (int i = 0; i < run->n; i++) {
        rlk_bench_atask *tk = &run->tasks[i];

        tk->run = run;
        tk->id = &ids[i];
        tk->task = (unsigned long long)ids[i].index + 1;
        tk->res.end_ns = -1;
        tk->wake_at = -1;
    }
    /* Every task starts at t0 (a child of --procs was told it by the gate). */
    while (rlk_bench_now_ns() < run->t0)
        rlk_bench_loop_turn(&run->loop, run->t0);
    rlk_bench_async_loop(run);
    /* Results taken: a task not done is unfinished (stuck when waiting). */
    out->n = run->n;
    out->t0_ns = run->t0;
    out->deadline_ns = run->deadline - run->t0;
    out->closed_ns = rlk_bench_now_ns() - run->t0;
    run->closed = 1;
    for (int i = 0; i < run->n; i++) {
        rlk_bench_atask *tk = &run->tasks[i];

        out->w[i] = tk->res;
        if (tk->phase != TK_DONE) {
            out->w[i].unfinished = 1;
            out->w[i].stuck = tk->phase == TK_ACQUIRING;
            out->w[i].end_ns = -1;
            out->unfinished++;
        }
        out->stuck += out->w[i].stuck;
    }
    /* Pending requests end with RLK_ERR_CLOSED here (callbacks see closed). */
    rlk_async_free(run->ac);
    rlk_bench_loop_free(&run->loop);
    free(run->tasks);
    free(run);
    /* No thread is left behind: nothing is abandoned in the threads' sense. */
    for (int i = 0; i < out->n; i++)
        out->w[i].unfinished = 0;
    out->unfinished = 0;
    return 0;
}

/* ================================================================ pending */

static long long rlk_bench_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    long long size = -1, resident = -1;

    if (f == NULL)
        return -1;
    if (fscanf(f, "%lld %lld", &size, &resident) != 2)
        resident = -1;
    fclose(f);
    return resident < 0 ? -1 : resident * sysconf(_SC_PAGESIZE);
}

static int rlk_bench_open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n - 1; /* the directory's own fd */
}

static double rlk_bench_cpu_s(void)
{
    struct rusage ru;

    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

/* One request of the pending workload: name j, served once. */
typedef struct rlk_bench_preq {
    int name;
    int64_t acquire_ns;           /* 0: not served */
    int64_t release_ns;
} rlk_bench_preq;

typedef struct rlk_bench_pend {
    const rlk_bench_opts *o;
    const rlk_bench_target *t;
    char (*keys)[300];
    rlk_bench_preq *req;
    int served;
    int failed;
    int released;                 /* unlock callbacks (async) */
    char last_error[RLK_BENCH_ERRLEN];
    pid_t child;
    int to_child;                 /* write 'R': release; close: release and exit */
    int from_child;               /* 'H': all held; 'E' + message: failed */
    /* async */
    rlk_async *ac;
    int closed;
    /* blocking */
    rlk_client *client;
    atomic_int entered;
    atomic_int finished;
    pthread_mutex_t mu;
} rlk_bench_pend;

/* The foreign holder: a blocking client in a child process holding every
 * name (a 15 min lease: longer than any settle and serve) until told to
 * release. Never returns. */
static void rlk_bench_pending_child(rlk_bench_pend *p, int in, int out)
{
    rlk_options opts;
    rlk_client *c;
    rlk_lock **locks = calloc((size_t)p->o->names, sizeof *locks);
    char msg[RLK_BENCH_ERRLEN + 1];
    char cmd;
    int j;

    rlk_options_init(&opts);
    opts.url = p->t->url;
    opts.tls_cacert = rlk_bench_tls_cfg.cacert;
    opts.tls_cert = rlk_bench_tls_cfg.cert;
    opts.tls_key = rlk_bench_tls_cfg.key;
    c = rlk_connect(&opts);
    if (locks == NULL || c == NULL || rlk_err(c) != RLK_OK) {
        snprintf(msg, sizeof msg, "Eforeign holder: connect: %s",
                 c ? rlk_errstr(c) : "out of memory");
        (void)!write(out, msg, strlen(msg));
        _exit(1);
    }
    for (j = 0; j < p->o->names; j++) {
        locks[j] = rlk_lock_new(c, p->keys[j]);
        if (locks[j] == NULL || rlk_lock_try_lock(locks[j], 0, 900000) != RLK_OK) {
            snprintf(msg, sizeof msg, "Eforeign holder: lock %s: %s", p->keys[j],
                     rlk_errstr(c));
            (void)!write(out, msg, strlen(msg));
            _exit(1);
        }
    }
    (void)!write(out, "H", 1);
    /* 'R' or the parent gone (EOF): release every name. */
    (void)!read(in, &cmd, 1);
    for (j = 0; j < p->o->names; j++) {
        (void)rlk_lock_unlock(locks[j]);
        rlk_lock_free(locks[j]);
    }
    rlk_free(c);
    _exit(0);
}

static int rlk_bench_pending_fork(rlk_bench_pend *p, char *err, size_t errlen)
{
    int down[2], up[2];
    char buf[RLK_BENCH_ERRLEN + 1];
    struct pollfd pf;
    ssize_t n;

    if (pipe(down) != 0 || pipe(up) != 0) {
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    fflush(NULL);
    p->child = fork();
    if (p->child < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        return -1;
    }
    if (p->child == 0) {
        close(down[1]);
        close(up[0]);
        rlk_bench_pending_child(p, down[0], up[1]);
    }
    close(down[0]);
    close(up[1]);
    p->to_child = down[1];
    p->from_child = up[0];
    /* 2 minutes for the holder to take every name (10,000 round trips and more). */
    pf.fd = p->from_child;
    pf.events = POLLIN;
    if (poll(&pf, 1, 120000) != 1 || (n = read(p->from_child, buf, sizeof buf - 1)) <= 0) {
        snprintf(err, errlen, "the foreign holder did not take the names within 120 s");
        return -1;
    }
    buf[n] = '\0';
    if (buf[0] != 'H') {
        snprintf(err, errlen, "%s", buf + 1);
        return -1;
    }
    return 0;
}

/* Tells the holder to release, or (kill) stops it; waits for it by PID. */
static void rlk_bench_pending_reap(rlk_bench_pend *p, int kill_it)
{
    int64_t end = rlk_bench_now_ns() + INT64_C(60) * 1000000000;

    if (p->child <= 0)
        return;
    if (kill_it)
        kill(p->child, SIGKILL);
    if (p->to_child >= 0)
        close(p->to_child);
    p->to_child = -1;
    while (waitpid(p->child, NULL, WNOHANG) == 0) {
        if (rlk_bench_now_ns() >= end) {
            kill(p->child, SIGKILL);
            waitpid(p->child, NULL, 0);
            break;
        }
        rlk_bench_sleep_ns(INT64_C(10000000));
    }
    p->child = -1;
    if (p->from_child >= 0)
        close(p->from_child);
    p->from_child = -1;
}

/* Overlaps per name: events sorted by name, then acquire; one counted for
 * each that began at or before the latest release of an earlier one of the
 * same name. */
static int rlk_bench_preq_cmp(const void *a, const void *b)
{
    const rlk_bench_preq *x = a, *y = b;

    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return x->acquire_ns < y->acquire_ns ? -1 : x->acquire_ns > y->acquire_ns;
}

static long long rlk_bench_pending_overlaps(rlk_bench_preq *req, int n)
{
    long long overlaps = 0;
    int64_t last_release = 0;
    int name = -1;

    qsort(req, (size_t)n, sizeof *req, rlk_bench_preq_cmp);
    for (int i = 0; i < n; i++) {
        if (req[i].acquire_ns == 0)
            continue;
        if (req[i].name != name) {
            name = req[i].name;
            last_release = req[i].release_ns;
            continue;
        }
        if (req[i].acquire_ns <= last_release)
            overlaps++;
        if (req[i].release_ns > last_release)
            last_release = req[i].release_ns;
    }
    return overlaps;
}

static void rlk_bench_pend_fail(rlk_bench_pend *p, const char *what, int code, const char *msg)
{
    p->failed++;
    snprintf(p->last_error, sizeof p->last_error, "%s: %s: %s", what, rlk_strerror(code),
             msg ? msg : "");
}

/* ---------------------------------------------------------------- async */

typedef struct rlk_bench_pa_ctx {
    rlk_bench_pend *p;
    rlk_bench_preq *q;
    unsigned long long task;
} rlk_bench_pa_ctx;

static void rlk_bench_pa_released(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    rlk_bench_pa_ctx *x = privdata;

    (void)ac;
    if (x->p->closed)
        return;
    x->p->released++;
    if (r->err != RLK_OK)
        rlk_bench_pend_fail(x->p, "rlk_async_unlock", r->err, r->errstr);
}

static void rlk_bench_pa_locked(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    rlk_bench_pa_ctx *x = privdata;
    rlk_bench_pend *p = x->p;

    if (p->closed)
        return;
    if (r->err != RLK_OK) {
        rlk_bench_pend_fail(p, "rlk_async_lock", r->err, r->errstr);
        p->released++;
        return;
    }
    x->q->acquire_ns = rlk_bench_now_ns();
    p->served++;
    x->q->release_ns = rlk_bench_now_ns();
    if (rlk_async_unlock(ac, RLK_KIND_LOCK, p->keys[x->q->name], x->task, rlk_bench_pa_released,
                         x) == NULL) {
        rlk_bench_pend_fail(p, "rlk_async_unlock", RLK_ERR_NOMEM, "out of memory");
        p->released++;
    }
}

/* Turns the loop (async) or waits (blocking) until the client's CPU time
 * stays flat (under 2 ms in 300 ms): every first attempt answered, every
 * waiter subscribed and asleep. Bounded by max_s. Returns the seconds it
 * took, negative when the bound was hit. */
static double rlk_bench_settle(rlk_bench_loop *loop, double max_s)
{
    int64_t start = rlk_bench_now_ns(), end = start + (int64_t)(max_s * 1e9);
    double cpu = rlk_bench_cpu_s();
    int64_t window = rlk_bench_now_ns();

    while (rlk_bench_now_ns() < end) {
        if (loop != NULL)
            rlk_bench_loop_turn(loop, rlk_bench_now_ns() + RLK_BENCH_A_TICK_MS * 1000000LL);
        else
            rlk_bench_sleep_ns(INT64_C(50000000));
        if (rlk_bench_now_ns() - window >= INT64_C(300000000)) {
            double now_cpu = rlk_bench_cpu_s();

            if (now_cpu - cpu < 0.002)
                return (rlk_bench_now_ns() - start) / 1e9;
            cpu = now_cpu;
            window = rlk_bench_now_ns();
        }
    }
    return -(rlk_bench_now_ns() - start) / 1e9;
}

typedef struct rlk_bench_pmeasure {
    long long rss_before, rss_peak;
    long long heap_before, heap_peak;   /* malloc'd bytes in use (mallinfo2) */
    int fds_before, fds_peak;
    long long pending_at_peak;
    double settle_s, serve_s, cpu_s;
    int timed_out;
} rlk_bench_pmeasure;

static int rlk_bench_pending_async(rlk_bench_pend *p, rlk_bench_pmeasure *m, char *err,
                                   size_t errlen)
{
    rlk_bench_loop loop;
    rlk_bench_pa_ctx *ctx;
    int n = p->o->requests;
    double cpu0;
    int64_t t_serve, end;

    ctx = calloc((size_t)n, sizeof *ctx);
    if (ctx == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    /* The benchmark's own records are written (resident) before the RSS is read. */
    for (int i = 0; i < n; i++) {
        ctx[i].p = p;
        ctx[i].q = &p->req[i];
        ctx[i].task = (unsigned long long)i + 1;
    }
    m->rss_before = rlk_bench_rss_bytes();
    m->heap_before = (long long)mallinfo2().uordblks;
    m->fds_before = rlk_bench_open_fds();
    cpu0 = rlk_bench_cpu_s();
    p->ac = rlk_bench_async_client(p->t, &loop, err, errlen);
    if (p->ac == NULL) {
        free(ctx);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        if (rlk_async_lock(p->ac, RLK_KIND_LOCK, p->keys[p->req[i].name], ctx[i].task, 600000,
                           RLK_BENCH_A_LEASE_MS, rlk_bench_pa_locked, &ctx[i]) == NULL) {
            rlk_bench_pend_fail(p, "rlk_async_lock", RLK_ERR_NOMEM, "out of memory");
            p->released++;
        }
    }
    m->settle_s = rlk_bench_settle(&loop, 60);
    m->rss_peak = rlk_bench_rss_bytes();
    m->heap_peak = (long long)mallinfo2().uordblks;
    m->fds_peak = rlk_bench_open_fds();
    m->pending_at_peak = (long long)rlk_async_pending(p->ac);
    /* Release every name: the holder unlocks them all, the waiters are served. */
    t_serve = rlk_bench_now_ns();
    (void)!write(p->to_child, "R", 1);
    end = t_serve + (int64_t)(p->o->grace_s + 600) * 1000000000;
    while (p->released < n && rlk_bench_now_ns() < end)
        rlk_bench_loop_turn(&loop, rlk_bench_now_ns() + RLK_BENCH_A_TICK_MS * 1000000LL);
    m->timed_out = p->released < n;
    m->serve_s = (rlk_bench_now_ns() - t_serve) / 1e9;
    m->cpu_s = rlk_bench_cpu_s() - cpu0;
    p->closed = 1;
    rlk_async_free(p->ac);
    rlk_bench_loop_free(&loop);
    p->ac = NULL;
    free(ctx);
    return 0;
}

/* ---------------------------------------------------------------- blocking */

typedef struct rlk_bench_pb_arg {
    rlk_bench_pend *p;
    rlk_bench_preq *q;
} rlk_bench_pb_arg;

static void *rlk_bench_pb_thread(void *arg)
{
    rlk_bench_pb_arg *a = arg;
    rlk_bench_pend *p = a->p;
    rlk_lock *l = rlk_lock_new(p->client, p->keys[a->q->name]);
    int rc;

    atomic_fetch_add(&p->entered, 1);
    if (l == NULL) {
        pthread_mutex_lock(&p->mu);
        rlk_bench_pend_fail(p, "rlk_lock_new", rlk_err(p->client), rlk_errstr(p->client));
        pthread_mutex_unlock(&p->mu);
        atomic_fetch_add(&p->finished, 1);
        return NULL;
    }
    rc = rlk_lock_try_lock(l, 600000, RLK_BENCH_A_LEASE_MS);
    if (rc == RLK_OK) {
        a->q->acquire_ns = rlk_bench_now_ns();
        a->q->release_ns = rlk_bench_now_ns();
        rc = rlk_lock_unlock(l);
        pthread_mutex_lock(&p->mu);
        p->served++;
        if (rc != RLK_OK)
            rlk_bench_pend_fail(p, "rlk_lock_unlock", rc, rlk_errstr(p->client));
        pthread_mutex_unlock(&p->mu);
    } else {
        pthread_mutex_lock(&p->mu);
        rlk_bench_pend_fail(p, "rlk_lock_try_lock", rc, rlk_errstr(p->client));
        pthread_mutex_unlock(&p->mu);
    }
    rlk_lock_free(l);
    atomic_fetch_add(&p->finished, 1);
    return NULL;
}

static int rlk_bench_pending_blocking(rlk_bench_pend *p, rlk_bench_pmeasure *m, char *err,
                                      size_t errlen)
{
    int n = p->o->requests, started = 0;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    rlk_bench_pb_arg *args = calloc((size_t)n, sizeof *args);
    pthread_attr_t attr;
    rlk_options opts;
    double cpu0;
    int64_t t_serve, end;

    if (th == NULL || args == NULL) {
        free(th);
        free(args);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    for (int i = 0; i < n; i++) {
        args[i].p = p;
        args[i].q = &p->req[i];
    }
    m->rss_before = rlk_bench_rss_bytes();
    m->heap_before = (long long)mallinfo2().uordblks;
    m->fds_before = rlk_bench_open_fds();
    cpu0 = rlk_bench_cpu_s();
    rlk_options_init(&opts);
    opts.url = p->t->url;
    opts.connect_timeout_ms = p->t->connect_timeout_ms;
    opts.command_timeout_ms = p->t->command_timeout_ms;
    opts.tls_cacert = rlk_bench_tls_cfg.cacert;
    opts.tls_cert = rlk_bench_tls_cfg.cert;
    opts.tls_key = rlk_bench_tls_cfg.key;
    p->client = rlk_connect(&opts);
    if (p->client == NULL || rlk_err(p->client) != RLK_OK) {
        snprintf(err, errlen, "rlk_connect: %s", p->client ? rlk_errstr(p->client) : "out of memory");
        rlk_free(p->client);
        free(th);
        free(args);
        return -1;
    }
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 128 * 1024);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&th[i], &attr, rlk_bench_pb_thread, &args[i]) != 0) {
            pthread_mutex_lock(&p->mu);
            rlk_bench_pend_fail(p, "pthread_create", RLK_ERR_NOMEM, strerror(errno));
            pthread_mutex_unlock(&p->mu);
            break;
        }
        started++;
    }
    pthread_attr_destroy(&attr);
    m->settle_s = rlk_bench_settle(NULL, 60);
    m->rss_peak = rlk_bench_rss_bytes();
    m->heap_peak = (long long)mallinfo2().uordblks;
    m->fds_peak = rlk_bench_open_fds();
    m->pending_at_peak = atomic_load(&p->entered) - atomic_load(&p->finished);
    t_serve = rlk_bench_now_ns();
    (void)!write(p->to_child, "R", 1);
    end = t_serve + (int64_t)(p->o->grace_s + 600) * 1000000000;
    while (atomic_load(&p->finished) < started && rlk_bench_now_ns() < end)
        rlk_bench_sleep_ns(INT64_C(1000000));
    m->timed_out = atomic_load(&p->finished) < started;
    m->serve_s = (rlk_bench_now_ns() - t_serve) / 1e9;
    m->cpu_s = rlk_bench_cpu_s() - cpu0;
    if (m->timed_out) {
        /* Threads still waiting use p: leave everything to the exit. */
        return 0;
    }
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    rlk_free(p->client);
    p->client = NULL;
    free(th);
    free(args);
    pthread_mutex_destroy(&p->mu);
    return 0;
}

/* ---------------------------------------------------------------- the workload */

static void rlk_bench_pending_del(redisContext *c, const rlk_bench_pend *p)
{
    int n = p->o->names;

    for (int j = 0; j < n; j++)
        redisAppendCommand(c, "DEL %s {%s}:rlk_waiters {%s}:rlk_next", p->keys[j], p->keys[j],
                           p->keys[j]);
    for (int j = 0; j < n; j++) {
        redisReply *r = NULL;

        if (rlk_bench_get_reply(c, (void **)&r) != REDIS_OK)
            break;
        freeReplyObject(r);
    }
}

int rlk_bench_pending(const rlk_bench_opts *o, const rlk_bench_target *t, redisContext *c,
                      void (*common)(struct rlk_bench_json *j, const void *arg),
                      const void *arg, char *err, size_t errlen)
{
    rlk_bench_pend p;
    rlk_bench_pmeasure m;
    rlk_bench_json j;
    int n = o->requests, rc;
    long long overlaps;

    memset(&p, 0, sizeof p);
    memset(&m, 0, sizeof m);
    p.o = o;
    p.t = t;
    p.to_child = p.from_child = -1;
    p.keys = calloc((size_t)o->names, sizeof *p.keys);
    p.req = calloc((size_t)n, sizeof *p.req);
    if (p.keys == NULL || p.req == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int k = 0; k < o->names; k++)
        snprintf(p.keys[k], sizeof p.keys[k], "%s:pending:%d", o->key_prefix, k);
    for (int i = 0; i < n; i++)
        p.req[i].name = i % o->names;
    rlk_bench_pending_del(c, &p);
    if (rlk_bench_pending_fork(&p, err, errlen) != 0) {
        rlk_bench_pending_reap(&p, 1);
        rlk_bench_pending_del(c, &p);
        return -1;
    }
    rc = o->api_async ? rlk_bench_pending_async(&p, &m, err, errlen)
                      : rlk_bench_pending_blocking(&p, &m, err, errlen);
    rlk_bench_pending_reap(&p, rc != 0);
    rlk_bench_pending_del(c, &p);
    if (rc != 0)
        return -1;
    overlaps = rlk_bench_pending_overlaps(p.req, n);
    if (overlaps > 0)
        fprintf(stderr, "rlk-bench: MUTUAL EXCLUSION VIOLATED: %lld overlapping holds\n",
                overlaps);
    rlk_bench_json_begin(&j, stdout);
    common(&j, arg);
    rlk_bench_json_int(&j, "requests", n);
    rlk_bench_json_int(&j, "names", o->names);
    rlk_bench_json_int(&j, "served", p.served);
    rlk_bench_json_int(&j, "failed", p.failed);
    rlk_bench_json_int(&j, "overlaps", overlaps);
    rlk_bench_json_int(&j, "pending_at_peak", m.pending_at_peak);
    rlk_bench_json_int(&j, "rss_before_bytes", m.rss_before);
    rlk_bench_json_int(&j, "rss_peak_bytes", m.rss_peak);
    rlk_bench_json_num(&j, "rss_bytes_per_request",
                       (double)(m.rss_peak - m.rss_before) / (double)n, 1);
    rlk_bench_json_num(&j, "heap_bytes_per_request",
                       (double)(m.heap_peak - m.heap_before) / (double)n, 1);
    rlk_bench_json_int(&j, "fds_before", m.fds_before);
    rlk_bench_json_int(&j, "fds", m.fds_peak);
    rlk_bench_json_num(&j, "settle_s", m.settle_s < 0 ? -m.settle_s : m.settle_s, 3);
    rlk_bench_json_int(&j, "settled", m.settle_s >= 0);
    rlk_bench_json_num(&j, "serve_s", m.serve_s, 3);
    rlk_bench_json_int(&j, "timed_out", m.timed_out);
    rlk_bench_json_num(&j, "client_cpu_s", m.cpu_s, 3);
    rlk_bench_json_num(&j, "cpu_us_per_request", m.cpu_s * 1e6 / n, 1);
    rlk_bench_json_str(&j, "last_error", p.last_error[0] ? p.last_error : NULL);
    rlk_bench_json_end(&j);
    if (!m.timed_out) {
        free(p.keys);
        free(p.req);
    }
    return 0;
}

const rlk_bench_driver rlk_bench_async_driver = {
    "rlk",
    RLK_VERSION,
    NULL, NULL, NULL, NULL, NULL, NULL,
    "rlk_async_lock (wait 0, lease 30000 ms) then rlk_async_unlock on the client's own key; "
    "every client a task of one rlk_async client driven by one thread's poll() loop (--procs: "
    "one rlk_async client per process)",
    "rlk_async_lock (wait = time left until deadline + grace; lease 30000 ms, no watchdog), "
    "hold by a loop timer, rlk_async_unlock; every contender a task of one rlk_async client "
    "driven by one thread's poll() loop (--procs: one rlk_async client per process)",
    NULL, NULL, NULL,
};
