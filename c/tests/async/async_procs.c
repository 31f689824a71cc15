/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_procs.c - several processes on one lock (async_procs.h), shared by
 * async_cases.c and async_cluster.c.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aloop.h"
#include "async_procs.h"
#include "check.h"
#include "holdlog.h"
#include "rlk.h"
#include "rlk_async.h"
#include "tk_util.h"

#define AP_MAX_PROCS 8
#define AP_HOLDER_MAX_S 120       /* a holder child lives at most this long */
#define AP_HOLDER_START_MS 15000  /* and says it holds the lock within this */
#define AP_START_MS 30000         /* contenders connect within this */

typedef struct ap_task {
    const ap_run *run;
    rlk_async *ac;
    int fd;
    unsigned long long task;
    int iter;
    int seq;
    int fails;
    char name[192];         /* run->name, or with own_names a name of its own */
} ap_task;

/* The name a task (or a blocking process: task 0) locks: run->name, or
 * with own_names one of its own in the same slot. */
static void ap_task_name(const ap_run *run, unsigned long long task, char *buf, size_t len)
{
    if (run->own_names)     /* a tagged name keeps its tag; another is wrapped as rlk does */
        snprintf(buf, len, strchr(run->name, '{') ? "%s:own%d.%llu" : "{%s}:own%d.%llu",
                 run->name, (int)getpid(), task);
    else
        snprintf(buf, len, "%s", run->name);
}

static void ap_step(ap_task *t);

static void ap_unlocked(rlk_async *ac, const rlk_async_result *r, void *p)
{
    ap_task *t = p;

    (void)ac;
    if (r->err != RLK_OK) {
        fprintf(stderr, "ap: async release of %s: %d %s\n", t->name, r->err,
                r->errstr ? r->errstr : "");
        t->fails++;
    }
    t->iter++;
    ap_step(t);
}

static void ap_locked(rlk_async *ac, const rlk_async_result *r, void *p)
{
    ap_task *t = p;
    long long s;

    if (r->err != RLK_OK) {
        fprintf(stderr, "ap: async acquire of %s: %d %s\n", t->name, r->err,
                r->errstr ? r->errstr : "");
        t->fails++;
        t->iter++;
        ap_step(t);
        return;
    }
    s = tk_mono_ns();
    tk_hold_begin(t->fd, (int)t->task, t->seq, TK_HOLD_EXCL, 0, s, 0);
    tk_spin_ns(AP_HOLD_NS);
    tk_hold_end(t->fd, (int)t->task, t->seq++, tk_mono_ns());
    rlk_async_unlock(ac, t->run->kind, t->name, t->task, ap_unlocked, t);
}

static void ap_step(ap_task *t)
{
    if (t->iter >= t->run->iters)
        return;
    if (t->run->variant == AP_NR)
        rlk_async_lock_nr(t->ac, t->run->kind, t->name, t->task, t->run->wait_ms, 10000,
                          ap_locked, t);
    else if (t->run->variant == AP_SPIN)
        rlk_async_lock_spin(t->ac, t->name, t->task, t->run->wait_ms, 10000, 1, 32, ap_locked, t);
    else
        rlk_async_lock(t->ac, t->run->kind, t->name, t->task, t->run->wait_ms, 10000, ap_locked,
                       t);
}

static int ap_all_done(void *p)
{
    ap_task *ts = p;

    for (int i = 0; i < AP_TASKS; i++)
        if (ts[i].iter < ts[i].run->iters)
            return 0;
    return 1;
}

static int ap_open(const char *url, long long watchdog_ms, int cmd_timeout_ms, aloop **l,
                   rlk_async **ac)
{
    ap_cl c = {NULL, NULL};
    int rc = ap_cl_open(&c, url, watchdog_ms, 0, cmd_timeout_ms);

    *l = c.l;
    *ac = c.ac;
    return rc;
}

/* The start line: a child says it is connected (one byte on ready), then
 * waits for the parent to close go (EOF), so that all contend together;
 * bounded by AP_START_MS. 0, or -1. */
static int ap_ready_go(int ready, int go)
{
    struct pollfd pf = {.fd = go, .events = POLLIN};
    char ch = 'R';

    if (write(ready, &ch, 1) != 1)
        return -1;
    if (poll(&pf, 1, AP_START_MS) != 1 || read(go, &ch, 1) != 0)
        return -1;
    return 0;
}

/* "{name}w<pid>": a name in name's slot, for a child's first call (its
 * connections to that master made before the start line). */
static void ap_warm_name(const ap_run *run, char *buf, size_t len)
{
    snprintf(buf, len, "{%s}w%d", run->name, (int)getpid());
}

/* A request's outcome into an int: 1 ok, -1 an error. */
static void ap_held(rlk_async *ac, const rlk_async_result *r, void *p)
{
    (void)ac;
    *(int *)p = r->err == RLK_OK ? 1 : -1;
}

static int ap_settled(void *p)
{
    return *(int *)p != 0;
}

static int ap_async_child(const ap_run *run, const char *log, int ready, int go)
{
    aloop *l;
    rlk_async *ac;
    ap_task ts[AP_TASKS];
    int fd = tk_holdlog_open(log), fails = 0;
    /* Every acquire waits at most wait_ms and holds ~1 ms: the whole run is bounded. */
    long long bound = (long long)run->iters * (run->wait_ms + 2000) + 10000;

    char warm[160];
    int got = 0;

    if (fd < 0 || ap_open(run->url, 0, run->cmd_timeout_ms, &l, &ac) != RLK_OK)
        return 3;
    ap_warm_name(run, warm, sizeof warm);
    rlk_async_lock(ac, RLK_KIND_LOCK, warm, 1, 0, 5000, ap_held, &got);
    if (!aloop_run_until(l, ap_settled, &got, AP_START_MS) || got != 1)
        return 6;
    got = 0;
    rlk_async_unlock(ac, RLK_KIND_LOCK, warm, 1, ap_held, &got);
    if (!aloop_run_until(l, ap_settled, &got, AP_START_MS) || got != 1 || ap_ready_go(ready, go))
        return 6;
    for (int i = 0; i < AP_TASKS; i++) {
        memset(&ts[i], 0, sizeof ts[i]);
        ts[i].run = run;
        ts[i].ac = ac;
        ts[i].fd = fd;
        ts[i].task = (unsigned long long)(i + 1);
        ap_task_name(run, ts[i].task, ts[i].name, sizeof ts[i].name);
        ap_step(&ts[i]);
    }
    if (!aloop_run_until(l, ap_all_done, ts, bound))
        return 4;
    for (int i = 0; i < AP_TASKS; i++)
        fails += ts[i].fails;
    rlk_async_free(ac);
    aloop_free(l);
    return fails ? 5 : 0;
}

/* One blocking client: 2 * iters acquires of the kind. */
static int ap_blocking_child(const ap_run *run, const char *log, int ready, int go)
{
    rlk_client *c = rlk_connect_url(run->url);
    rlk_lock *lk = NULL;
    rlk_fairlock *fl = NULL;
    rlk_rwlock *rw = NULL;
    rlk_nrlock *nl = NULL;
    int fd = tk_holdlog_open(log), fails = 0;
    char warm[160], name[192];

    if (!c || fd < 0)
        return 3;
    ap_warm_name(run, warm, sizeof warm);
    if (!(lk = rlk_lock_new(c, warm)) || rlk_lock_try_lock(lk, 0, 5000) != RLK_OK ||
        rlk_lock_unlock(lk) != RLK_OK || ap_ready_go(ready, go))
        return 6;
    rlk_lock_free(lk);
    lk = NULL;
    ap_task_name(run, 0, name, sizeof name);
    if (run->kind == RLK_KIND_LOCK && run->variant == AP_NR)
        nl = rlk_nrlock_new(c, name);
    else if (run->kind == RLK_KIND_LOCK)
        lk = rlk_lock_new(c, name);
    else if (run->kind == RLK_KIND_FAIR)
        fl = rlk_fairlock_new(c, name);
    else
        rw = rlk_rwlock_new(c, name);
    if (!lk && !fl && !rw && !nl)
        return 3;
    if (lk && run->variant == AP_SPIN && rlk_lock_set_spin(lk, 1, 32) != RLK_OK)
        return 3;
    if (fl && run->variant == AP_NR && rlk_fairlock_set_non_reentrant(fl, 1) != RLK_OK)
        return 3;
    for (int i = 0; i < run->iters * 2; i++) {
        long long s;
        int rc, urc;

        rc = nl   ? rlk_nrlock_try_lock(nl, run->wait_ms, 10000)
             : lk ? rlk_lock_try_lock(lk, run->wait_ms, 10000)
             : fl ? rlk_fairlock_try_lock(fl, run->wait_ms, 10000)
                  : rlk_rwlock_try_lock(rw, RLK_RW_WRITE, run->wait_ms, 10000);
        if (rc != RLK_OK) {
            fprintf(stderr, "ap: blocking acquire of %s: %d %s\n", name, rc, rlk_errstr(c));
            fails++;
            continue;
        }
        s = tk_mono_ns();
        tk_hold_begin(fd, 99, i, TK_HOLD_EXCL, 0, s, 0);
        tk_spin_ns(AP_HOLD_NS);
        tk_hold_end(fd, 99, i, tk_mono_ns());
        urc = nl   ? rlk_nrlock_unlock(nl)
              : lk ? rlk_lock_unlock(lk)
              : fl ? rlk_fairlock_unlock(fl)
                   : rlk_rwlock_unlock(rw, RLK_RW_WRITE);
        if (urc != RLK_OK)
            fails++;
    }
    rlk_lock_free(lk);
    rlk_nrlock_free(nl);
    rlk_fairlock_free(fl);
    rlk_rwlock_free(rw);
    rlk_free(c);
    return fails ? 5 : 0;
}

int ap_contend(const ap_run *run, ap_result *out)
{
    char dir[] = "/tmp/rlk-async-ap-XXXXXX", logs[AP_MAX_PROCS][320];
    const char *paths[AP_MAX_PROCS];
    pid_t pids[AP_MAX_PROCS];
    int np = run->async_procs + run->blocking_procs;
    tk_hold *holds = NULL;
    size_t n = 0;
    int ready[2], go[2], nready = 0;

    memset(out, 0, sizeof *out);
    if (np > AP_MAX_PROCS || !mkdtemp(dir) || pipe(ready) != 0 || pipe(go) != 0)
        return -1;
    fflush(NULL);
    for (int i = 0; i < np; i++) {
        snprintf(logs[i], sizeof logs[i], "%s/p%d.log", dir, i);
        paths[i] = logs[i];
        pids[i] = fork();
        if (pids[i] < 0)
            return -1;
        if (pids[i] == 0) {
            close(ready[0]);
            close(go[1]);
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            _exit(i < run->async_procs ? ap_async_child(run, logs[i], ready[1], go[0])
                                       : ap_blocking_child(run, logs[i], ready[1], go[0]));
        }
    }
    close(ready[1]);
    close(go[0]);
    /* Every child connected (or gone: EOF), bounded; then all start at once. */
    for (long long end = tk_mono_ns() + AP_START_MS * 1000000LL; nready < np;) {
        struct pollfd pf = {.fd = ready[0], .events = POLLIN};
        long long left = (end - tk_mono_ns()) / 1000000;
        char ch;

        if (left <= 0 || poll(&pf, 1, (int)left) != 1 || read(ready[0], &ch, 1) != 1)
            break;
        nready++;
    }
    if (nready < np)
        fprintf(stderr, "ap: %d of %d children ready\n", nready, np);
    close(ready[0]);
    close(go[1]);
    for (int i = 0; i < np; i++) {
        int st = 0;

        /* Each child ends by its own bound (its loop's, its acquires' waits). */
        waitpid(pids[i], &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "ap: child %d (%s) status %d\n", i,
                    i < run->async_procs ? "async" : "blocking", st);
            out->child_failures++;
        }
    }
    tk_holds_read(paths, np, -1, &holds, &n, &out->bad_lines);
    out->rep = tk_holds_check(holds, n, 1);     /* sorts by start */
    for (size_t i = 1; i < n; i++) {
        int a = 0, b = 0;

        for (int p = 0; p < run->async_procs; p++) {
            a |= holds[i - 1].pid == pids[p];
            b |= holds[i].pid == pids[p];
        }
        out->handoffs += a != b;
    }
    out->expected = run->async_procs * AP_TASKS * run->iters + run->blocking_procs * 2 * run->iters;
    free(holds);
    for (int i = 0; i < np; i++)
        unlink(logs[i]);
    rmdir(dir);
    return 0;
}


/* The holder child's lost callback: on stderr, for a failed test's post-mortem. */
static void ap_holder_lost(int kind, const char *name, const char *owner, int reason, void *ud)
{
    (void)kind;
    (void)owner;
    (void)ud;
    fprintf(stderr, "ap: the holder (pid %d) was told %s is lost, reason %d\n", (int)getpid(),
            name, reason);
}

static int ap_holder_child(const char *url, int kind, const char *name, long long lease_ms,
                           long long watchdog_ms, int fd)
{
    aloop *l;
    rlk_async *ac;
    int got = 0;
    char ch = 'L';

    if (ap_open(url, watchdog_ms, 0, &l, &ac) != RLK_OK)
        return 3;
    rlk_async_set_lost_callback(ac, ap_holder_lost, NULL);
    rlk_async_lock(ac, kind, name, 1, 0, lease_ms, ap_held, &got);
    if (!aloop_run_until(l, ap_settled, &got, 10000) || got != 1)
        return 4;
    if (write(fd, &ch, 1) != 1)
        return 5;
    /* Holds (and renews) until killed; bounded should the parent never kill it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int i = 0; i < AP_HOLDER_MAX_S; i++) {
        long long t = rlk_fx_now_ms();

        aloop_run_until(l, NULL, NULL, 1000);
        if (rlk_fx_now_ms() - t > 1500)     /* its renewals were late by as much */
            fprintf(stderr, "ap: the holder's (pid %d) loop turn of 1000 ms took %lld ms\n",
                    (int)getpid(), rlk_fx_now_ms() - t);
    }
    return 6;
}

pid_t ap_holder_start(const char *url, int kind, const char *name, long long lease_ms,
                      long long watchdog_ms)
{
    int p[2];
    pid_t pid;
    char ch = 0;
    struct pollfd pf;

    if (pipe(p) != 0)
        return -1;
    fflush(NULL);
    pid = fork();
    if (pid == 0) {
        close(p[0]);
        _exit(ap_holder_child(url, kind, name, lease_ms, watchdog_ms, p[1]));
    }
    close(p[1]);
    pf.fd = p[0];
    pf.events = POLLIN;
    if (pid > 0 &&
        (poll(&pf, 1, AP_HOLDER_START_MS) != 1 || read(p[0], &ch, 1) != 1 || ch != 'L')) {
        fprintf(stderr, "ap: the holder of %s did not say it holds it\n", name);
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        pid = -1;
    }
    close(p[0]);
    return pid;
}

/* ---------------------------------------------------------------- requests and clients */

int ap_in_call;
int ap_freed;
int ap_rule_breaks;
int ap_freed_tracked = 1;

void ap_res_note(ap_res *x, const rlk_async_result *r)
{
    if (ap_in_call || (ap_freed && ap_freed_tracked) || x->calls)
        ap_rule_breaks++;
    x->calls++;
    x->err = r->err;
    x->value = r->value;
    x->at_ms = rlk_fx_now_ms();
    snprintf(x->id, sizeof x->id, "%s", r->id ? r->id : "");
    snprintf(x->errstr, sizeof x->errstr, "%s", r->errstr ? r->errstr : "(null)");
}

void ap_on_res(rlk_async *ac, const rlk_async_result *r, void *p)
{
    (void)ac;
    ap_res_note(p, r);
}

void ap_on_info(rlk_async *ac, const rlk_async_result *r, const rlk_elect_info *info, void *p)
{
    ap_res *x = p;

    (void)ac;
    ap_res_note(x, r);
    CHECKF((r->err == RLK_OK) == (info != NULL), "info %p with err %d", (const void *)info, r->err);
    if (info) {
        x->info = *info;
        x->info.holder = strdup(info->holder);
        x->info.value = strdup(info->value);
        x->has_info = 1;
    }
}

void ap_res_clear(ap_res *x)
{
    if (x->has_info)
        rlk_elect_info_clear(&x->info);
    memset(x, 0, sizeof *x);
}

int ap_res_done(void *p)
{
    return ((ap_res *)p)->calls > 0;
}

rlk_async_req *ap_req_end(rlk_async_req *r)
{
    ap_in_call = 0;
    return r;
}

int ap_cl_open(ap_cl *c, const char *url, long long watchdog_ms, long long margin_ms,
               int cmd_timeout_ms)
{
    rlk_options o;

    rlk_options_init(&o);
    o.url = url;
    if (watchdog_ms > 0)
        o.watchdog_lease_ms = watchdog_ms;
    if (margin_ms > 0)
        o.lost_margin_ms = margin_ms;
    if (cmd_timeout_ms > 0)
        o.command_timeout_ms = cmd_timeout_ms;
    c->l = aloop_new();
    c->ac = rlk_async_new(&o);
    if (!c->l || !c->ac)
        return -1;
    ap_freed = 0;
    return aloop_attach(c->l, c->ac);
}

void ap_cl_close(ap_cl *c)
{
    if (c->ac) {
        rlk_async_free(c->ac);
        ap_freed = 1;
    }
    aloop_free(c->l);
    c->ac = NULL;
    c->l = NULL;
}

int ap_wait_res(ap_cl *c, ap_res *x, long long ms)
{
    return aloop_run_until(c->l, ap_res_done, x, ms);
}

long long ap_reply_int(redisReply *r)
{
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;

    if (r)
        freeReplyObject(r);
    return v;
}

long long ap_srv_int(const rlk_fx_server *srv, const char *fmt, const char *arg)
{
    return ap_reply_int(rlk_fx_command(srv, fmt, arg));
}

int ap_cluster_main(const char *prog, int argc, char **argv, rlk_fx_cluster *cl, char *url,
                    size_t len, int mst[3], const at_case *cases, size_t ncases,
                    at_check_run_fn run, at_check_summary_fn summary)
{
    int k = 0;

    signal(SIGPIPE, SIG_IGN);
    ap_freed_tracked = 0;       /* the cluster cases keep several clients open at once */
    if (rlk_fx_cluster_start(cl) != 0) {
        fprintf(stderr, "%s: the cluster did not start\n", prog);
        return 1;
    }
    at_cluster_url(cl, url, len);
    fprintf(stderr, "%s on %s\n", prog, url);
    if (rlk_fx_tls_dir() && !cl->node[0].tls) {
        fprintf(stderr, "%s: $RLK_TEST_TLS is set but the cluster is not on TLS\n", prog);
        rlk_fx_cluster_stop(cl);
        return 1;
    }
    for (int i = 0; i < cl->n && k < 3; i++)
        if (rlk_fx_cluster_role(cl, i) == 'M')
            mst[k++] = i;
    if (k != 3) {
        fprintf(stderr, "%s: %d masters\n", prog, k);
        rlk_fx_cluster_stop(cl);
        return 1;
    }
    for (size_t i = 0; i < ncases; i++) {
        int wanted = argc < 2;
        long long t;

        for (int j = 1; j < argc; j++)
            wanted |= strcmp(argv[j], cases[i].name) == 0;
        if (!wanted)
            continue;
        t = rlk_fx_now_ms();
        run(cases[i].name, cases[i].fn);
        fprintf(stderr, "  (%s: %lld ms)\n", cases[i].name, rlk_fx_now_ms() - t);
    }
    rlk_fx_cluster_stop(cl);
    return summary(prog);
}

/* ---------------------------------------------------------------- worker tasks */

static int ap_wtasks_done(void *p)
{
    const ap_wtask *ts = p;

    for (int i = 0; ts[i].step; i++)
        if (ts[i].iter < ts[i].iters)
            return 0;
    return 1;
}

int ap_tasks_child(const char *url, int cmd_timeout_ms, const char *log, int ntasks, int iters,
                   void (*step)(ap_wtask *t), long long bound_ms)
{
    ap_cl c;
    ap_wtask *ts = calloc((size_t)ntasks + 1, sizeof *ts);  /* ends with step NULL */
    int fd = tk_holdlog_open(log), fails = 0;

    if (!ts || fd < 0 || ap_cl_open(&c, url, 0, 0, cmd_timeout_ms) != RLK_OK)
        return 3;
    for (int i = 0; i < ntasks; i++) {
        ts[i].c = &c;
        ts[i].fd = fd;
        ts[i].task = (unsigned long long)(i + 1);
        ts[i].iters = iters;
        ts[i].step = step;
        step(&ts[i]);
    }
    if (!aloop_run_until(c.l, ap_wtasks_done, ts, bound_ms))
        return 4;
    for (int i = 0; i < ntasks; i++)
        fails += ts[i].fails;
    ap_cl_close(&c);
    free(ts);
    return fails ? 5 : 0;
}
