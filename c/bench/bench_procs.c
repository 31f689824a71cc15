/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_procs: the multi-process runner (rlk-bench --procs). One child
 * process per identity, each running one contender through rlk_bench_run
 * with its own connection or rlk_client; the parent waits until every child
 * has connected, hands all of them the same start time (absolute
 * CLOCK_MONOTONIC: one clock for every process of the machine), and reads
 * back each child's results through a pipe. See bench_run.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "bench_run.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_clock.h"

#define RLK_BENCH_PROCS_SLACK_NS (INT64_C(30) * 1000000000)  /* past deadline + grace */

/* What a child sends after "R": this, then nlat latencies and nev events. */
typedef struct rlk_bench_wire {
    uint64_t nlat;
    uint64_t nev;
    uint64_t nmetrics;       /* bytes of the driver's metrics blob, sent after the events */
    uint64_t errors;
    uint64_t giveups;
    int64_t end_ns;
    int64_t deadline_ns;
    int64_t closed_ns;
    int32_t stuck;
    int32_t unfinished;
    char last_error[RLK_BENCH_ERRLEN];
    uint64_t sub_wakeups;
    uint64_t sub_messages;
} rlk_bench_wire;

typedef struct rlk_bench_child {
    pid_t pid;
    int up;          /* child -> parent: 'R' or 'E' + message, then the results */
    int go;          /* parent -> child: t0 */
} rlk_bench_child;

static int rlk_bench_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;

    while (len > 0) {
        ssize_t k = write(fd, p, len);

        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

/* Reads len bytes before until_ns (absolute). 0, or -1 (EOF, error, late). */
static int rlk_bench_read_all(int fd, void *buf, size_t len, int64_t until_ns)
{
    char *p = buf;

    while (len > 0) {
        struct pollfd pf = {fd, POLLIN, 0};
        int64_t left = until_ns - rlk_bench_now_ns();
        ssize_t k;

        if (left <= 0)
            return -1;
        if (poll(&pf, 1, (int)(left / 1000000) + 1) <= 0)
            continue;   /* EINTR or not yet: the loop checks the time */
        k = read(fd, p, len);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        p += k;
        len -= (size_t)k;
    }
    return 0;
}

/* ------------------------------------------------------------ child */

static void rlk_bench_child_main(const rlk_bench_opts *o, const rlk_bench_driver *d,
                                 const rlk_bench_target *t, const rlk_bench_identity *id,
                                 int up, int go)
{
    rlk_bench_opts co = *o;
    rlk_bench_run_result r;
    rlk_bench_wire w;
    char err[RLK_BENCH_ERRLEN] = "";

    co.clients = 1;
    co.procs = 0;
    co.ready_fd = up;
    co.gate_fd = go;
    if (rlk_bench_run(&co, d, t, id, &r, err, sizeof err) != 0) {
        char e = 'E';

        rlk_bench_write_all(up, &e, 1);
        rlk_bench_write_all(up, err, sizeof err);
        _exit(1);
    }
    memset(&w, 0, sizeof w);
    w.nlat = r.w[0].nlat;
    w.nev = r.w[0].nev;
    w.nmetrics = r.w[0].metrics_len;
    w.errors = r.w[0].errors;
    w.giveups = r.w[0].giveups;
    w.end_ns = r.w[0].end_ns;
    w.deadline_ns = r.deadline_ns;
    w.closed_ns = r.closed_ns;
    w.stuck = r.w[0].stuck;
    w.unfinished = r.w[0].unfinished;
    w.sub_wakeups = r.w[0].sub_wakeups;
    w.sub_messages = r.w[0].sub_messages;
    memcpy(w.last_error, r.w[0].last_error, sizeof w.last_error);
    if (rlk_bench_write_all(up, &w, sizeof w) != 0 ||
        (w.nlat && rlk_bench_write_all(up, r.w[0].lat, w.nlat * sizeof *r.w[0].lat) != 0) ||
        (w.nev && rlk_bench_write_all(up, r.w[0].ev, w.nev * sizeof *r.w[0].ev) != 0) ||
        (w.nmetrics && rlk_bench_write_all(up, r.w[0].metrics, w.nmetrics) != 0))
        _exit(1);
    _exit(0);   /* abandoned threads, if any, end here */
}

/* ------------------------------------------------------------ parent */

static void rlk_bench_stop_child(rlk_bench_child *c)
{
    if (c->pid > 0) {
        kill(c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        c->pid = 0;
    }
}

static void rlk_bench_close_child(rlk_bench_child *c)
{
    if (c->up >= 0)
        close(c->up);
    if (c->go >= 0)
        close(c->go);
    c->up = c->go = -1;
}

static int rlk_bench_fork_child(const rlk_bench_opts *o, const rlk_bench_driver *d,
                                const rlk_bench_target *t, const rlk_bench_identity *id,
                                rlk_bench_child *kids, int i)
{
    int up[2], go[2];

    if (pipe(up) != 0)
        return -1;
    if (pipe(go) != 0) {
        close(up[0]);
        close(up[1]);
        return -1;
    }
    fflush(NULL);
    kids[i].pid = fork();
    if (kids[i].pid == 0) {
        for (int k = 0; k < i; k++)
            rlk_bench_close_child(&kids[k]);
        close(up[0]);
        close(go[1]);
        rlk_bench_child_main(o, d, t, id, up[1], go[0]);
    }
    close(up[1]);
    close(go[0]);
    kids[i].up = up[0];
    kids[i].go = go[1];
    if (kids[i].pid < 0) {
        rlk_bench_close_child(&kids[i]);
        return -1;
    }
    return 0;
}

/* Reads child i's results into out->w[i]. */
static void rlk_bench_gather(rlk_bench_child *c, rlk_bench_worker_result *res,
                             rlk_bench_run_result *out, int64_t until, int w2)
{
    rlk_bench_wire w;

    memset(res, 0, sizeof *res);
    if (rlk_bench_read_all(c->up, &w, sizeof w, until) != 0) {
        rlk_bench_stop_child(c);
        res->unfinished = 1;
        res->stuck = w2;
        res->end_ns = -1;
        snprintf(res->last_error, sizeof res->last_error, "contender process sent no result");
        return;
    }
    res->lat = calloc(w.nlat ? w.nlat : 1, sizeof *res->lat);
    res->ev = calloc(w.nev ? w.nev : 1, sizeof *res->ev);
    if (!res->lat || !res->ev ||
        (w.nlat && rlk_bench_read_all(c->up, res->lat, w.nlat * sizeof *res->lat, until) != 0) ||
        (w.nev && rlk_bench_read_all(c->up, res->ev, w.nev * sizeof *res->ev, until) != 0)) {
        rlk_bench_stop_child(c);
        w.nlat = w.nev = w.nmetrics = 0;
        w.unfinished = 1;
        snprintf(w.last_error, sizeof w.last_error, "contender process: truncated result");
    }
    if (w.nmetrics && w.nmetrics <= (1u << 20) && (res->metrics = malloc(w.nmetrics)) != NULL) {
        if (rlk_bench_read_all(c->up, res->metrics, w.nmetrics, until) == 0) {
            res->metrics_len = w.nmetrics;
        } else {
            free(res->metrics);
            res->metrics = NULL;
        }
    }
    res->nlat = w.nlat;
    res->nev = w.nev;
    res->errors = w.errors;
    res->giveups = w.giveups;
    res->end_ns = w.end_ns;
    res->stuck = w.stuck;
    res->unfinished = w.unfinished;
    res->sub_wakeups = w.sub_wakeups;
    res->sub_messages = w.sub_messages;
    memcpy(res->last_error, w.last_error, sizeof res->last_error);
    if (w.deadline_ns > out->deadline_ns)
        out->deadline_ns = w.deadline_ns;
    if (w.closed_ns > out->closed_ns)
        out->closed_ns = w.closed_ns;
}

/* Waits for "R" from every child. 0, or -1 with err (a child failed). */
static int rlk_bench_wait_ready(rlk_bench_child *kids, int n, char *err, size_t errlen)
{
    int64_t until = rlk_bench_now_ns() + RLK_BENCH_PROCS_SLACK_NS;

    for (int i = 0; i < n; i++) {
        char b = 0, msg[RLK_BENCH_ERRLEN];

        if (rlk_bench_read_all(kids[i].up, &b, 1, until) != 0 || b != 'R') {
            if (b == 'E' && rlk_bench_read_all(kids[i].up, msg, sizeof msg, until) == 0)
                snprintf(err, errlen, "contender %d: %.*s", i, (int)(sizeof msg - 1), msg);
            else
                snprintf(err, errlen, "contender process %d did not start", i);
            return -1;
        }
    }
    return 0;
}

int rlk_bench_run_procs(const rlk_bench_opts *o, const rlk_bench_driver *d,
                        const rlk_bench_target *t, const rlk_bench_identity *ids,
                        rlk_bench_run_result *out, char *err, size_t errlen)
{
    int n = o->clients, forked = 0, rc = 0;
    rlk_bench_child *kids = calloc((size_t)n, sizeof *kids);
    int64_t t0, until;

    memset(out, 0, sizeof *out);
    out->w = calloc((size_t)n, sizeof *out->w);
    if (!kids || !out->w) {
        free(kids);
        free(out->w);
        out->w = NULL;
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (; forked < n; forked++) {
        kids[forked].up = kids[forked].go = -1;
        if (rlk_bench_fork_child(o, d, t, &ids[forked], kids, forked) != 0) {
            snprintf(err, errlen, "cannot start contender process %d", forked);
            rc = -1;
            break;
        }
    }
    if (rc == 0)
        rc = rlk_bench_wait_ready(kids, n, err, errlen);
    t0 = rc == 0 ? rlk_bench_now_ns() : -1;
    for (int i = 0; i < forked; i++)
        if (rlk_bench_write_all(kids[i].go, &t0, sizeof t0) != 0 && rc == 0) {
            snprintf(err, errlen, "contender process %d went away before the start", i);
            rc = -1;    /* the others run on; their results are dropped below */
        }
    until = t0 + (int64_t)((o->duration_s + o->grace_s) * 1e9) + RLK_BENCH_PROCS_SLACK_NS;
    out->n = n;
    out->t0_ns = t0;
    for (int i = 0; i < forked; i++) {
        if (rc == 0) {
            rlk_bench_gather(&kids[i], &out->w[i], out, until, o->workload == 2);
            out->stuck += out->w[i].stuck;
            out->unfinished += out->w[i].unfinished;
        }
        rlk_bench_close_child(&kids[i]);
        if (kids[i].pid > 0)
            waitpid(kids[i].pid, NULL, 0);
    }
    free(kids);
    if (rc != 0) {
        rlk_bench_run_free(out);
        return -1;
    }
    return 0;   /* the children's threads are gone with them: nothing is left running */
}
