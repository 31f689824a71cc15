/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_procs.c - several processes on one lock (async_procs.h), shared by
 * async_cases.c and async_cluster.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aloop.h"
#include "async_procs.h"
#include "holdlog.h"
#include "rlk.h"
#include "rlk_async.h"
#include "tk_util.h"

#define AP_MAX_PROCS 8
#define AP_HOLDER_MAX_S 120       /* a holder child lives at most this long */

typedef struct ap_task {
    const ap_run *run;
    rlk_async *ac;
    int fd;
    unsigned long long task;
    int iter;
    int seq;
    int fails;
} ap_task;

static void ap_step(ap_task *t);

static void ap_unlocked(rlk_async *ac, const rlk_async_result *r, void *p)
{
    ap_task *t = p;

    (void)ac;
    if (r->err != RLK_OK)
        t->fails++;
    t->iter++;
    ap_step(t);
}

static void ap_locked(rlk_async *ac, const rlk_async_result *r, void *p)
{
    ap_task *t = p;
    long long s;

    if (r->err != RLK_OK) {
        fprintf(stderr, "ap: async acquire of %s: %d %s\n", t->run->name, r->err,
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
    rlk_async_unlock(ac, t->run->kind, t->run->name, t->task, ap_unlocked, t);
}

static void ap_step(ap_task *t)
{
    if (t->iter >= t->run->iters)
        return;
    rlk_async_lock(t->ac, t->run->kind, t->run->name, t->task, t->run->wait_ms, 10000, ap_locked,
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
    rlk_options o;

    rlk_options_init(&o);
    o.url = url;
    if (watchdog_ms > 0)
        o.watchdog_lease_ms = watchdog_ms;
    if (cmd_timeout_ms > 0)
        o.command_timeout_ms = cmd_timeout_ms;
    *l = aloop_new();
    *ac = rlk_async_new(&o);
    if (!*l || !*ac)
        return -1;
    return aloop_attach(*l, *ac);
}

static int ap_async_child(const ap_run *run, const char *log)
{
    aloop *l;
    rlk_async *ac;
    ap_task ts[AP_TASKS];
    int fd = tk_holdlog_open(log), fails = 0;
    /* Every acquire waits at most wait_ms and holds ~1 ms: the whole run is bounded. */
    long long bound = (long long)run->iters * (run->wait_ms + 2000) + 10000;

    if (fd < 0 || ap_open(run->url, 0, run->cmd_timeout_ms, &l, &ac) != RLK_OK)
        return 3;
    for (int i = 0; i < AP_TASKS; i++) {
        memset(&ts[i], 0, sizeof ts[i]);
        ts[i].run = run;
        ts[i].ac = ac;
        ts[i].fd = fd;
        ts[i].task = (unsigned long long)(i + 1);
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
static int ap_blocking_child(const ap_run *run, const char *log)
{
    rlk_client *c = rlk_connect_url(run->url);
    rlk_lock *lk = NULL;
    rlk_fairlock *fl = NULL;
    rlk_rwlock *rw = NULL;
    int fd = tk_holdlog_open(log), fails = 0;

    if (!c || fd < 0)
        return 3;
    if (run->kind == RLK_KIND_LOCK)
        lk = rlk_lock_new(c, run->name);
    else if (run->kind == RLK_KIND_FAIR)
        fl = rlk_fairlock_new(c, run->name);
    else
        rw = rlk_rwlock_new(c, run->name);
    if (!lk && !fl && !rw)
        return 3;
    for (int i = 0; i < run->iters * 2; i++) {
        long long s;
        int rc, urc;

        rc = lk   ? rlk_lock_try_lock(lk, run->wait_ms, 10000)
             : fl ? rlk_fairlock_try_lock(fl, run->wait_ms, 10000)
                  : rlk_rwlock_try_lock(rw, RLK_RW_WRITE, run->wait_ms, 10000);
        if (rc != RLK_OK) {
            fprintf(stderr, "ap: blocking acquire of %s: %d %s\n", run->name, rc, rlk_errstr(c));
            fails++;
            continue;
        }
        s = tk_mono_ns();
        tk_hold_begin(fd, 99, i, TK_HOLD_EXCL, 0, s, 0);
        tk_spin_ns(AP_HOLD_NS);
        tk_hold_end(fd, 99, i, tk_mono_ns());
        urc = lk ? rlk_lock_unlock(lk) : fl ? rlk_fairlock_unlock(fl) : rlk_rwlock_unlock(rw, RLK_RW_WRITE);
        if (urc != RLK_OK)
            fails++;
    }
    rlk_lock_free(lk);
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

    memset(out, 0, sizeof *out);
    if (np > AP_MAX_PROCS || !mkdtemp(dir))
        return -1;
    fflush(NULL);
    for (int i = 0; i < np; i++) {
        snprintf(logs[i], sizeof logs[i], "%s/p%d.log", dir, i);
        paths[i] = logs[i];
        pids[i] = fork();
        if (pids[i] < 0)
            return -1;
        if (pids[i] == 0)
            _exit(i < run->async_procs ? ap_async_child(run, logs[i])
                                       : ap_blocking_child(run, logs[i]));
    }
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

static void ap_held(rlk_async *ac, const rlk_async_result *r, void *p)
{
    (void)ac;
    *(int *)p = r->err == RLK_OK ? 1 : -1;
}

static int ap_settled(void *p)
{
    return *(int *)p != 0;
}

int ap_holder_child(const char *url, int kind, const char *name, long long lease_ms,
                    long long watchdog_ms, int fd)
{
    aloop *l;
    rlk_async *ac;
    int got = 0;
    char ch = 'L';

    if (ap_open(url, watchdog_ms, 0, &l, &ac) != RLK_OK)
        return 3;
    rlk_async_lock(ac, kind, name, 1, 0, lease_ms, ap_held, &got);
    if (!aloop_run_until(l, ap_settled, &got, 10000) || got != 1)
        return 4;
    if (write(fd, &ch, 1) != 1)
        return 5;
    /* Holds (and renews) until killed; bounded should the parent never kill it. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int i = 0; i < AP_HOLDER_MAX_S; i++)
        aloop_run_until(l, NULL, NULL, 1000);
    return 6;
}
