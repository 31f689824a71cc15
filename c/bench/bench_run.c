/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_run: contender threads, start gate, deadline and grace. See
 * bench_run.h. */
#define _POSIX_C_SOURCE 200809L
#include "bench_run.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_clock.h"
#ifdef RLK_BENCH_HAVE_ASYNC
#include "bench_async.h"
#endif

#define RLK_BENCH_BACKOFF_NS INT64_C(1000000)
#define RLK_BENCH_LATE_NS INT64_C(500000000)   /* after give_up: for waiters ending then */

enum rlk_bench_phase {
    RLK_BENCH_PH_CONNECTING,
    RLK_BENCH_PH_IDLE,
    RLK_BENCH_PH_ACQUIRING,
    RLK_BENCH_PH_HOLDING,
    RLK_BENCH_PH_RELEASING,
    RLK_BENCH_PH_DONE
};

struct rlk_bench_runner;

typedef struct rlk_bench_worker {
    struct rlk_bench_runner *run;
    const rlk_bench_identity *id;
    void *st;                     /* driver state */
    pthread_t thread;
    atomic_int phase;
    pthread_mutex_t mu;           /* guards res and closed */
    int closed;                   /* results taken: record nothing more */
    rlk_bench_worker_result res;
    size_t cap_lat;
    size_t cap_ev;
    int open_ok;
    char open_err[RLK_BENCH_ERRLEN];
} rlk_bench_worker;

typedef struct rlk_bench_runner {
    const rlk_bench_opts *o;
    const rlk_bench_driver *d;
    const rlk_bench_target *t;
    pthread_mutex_t mu;           /* guards ready, done, go, abort */
    pthread_cond_t cv;            /* CLOCK_MONOTONIC */
    int ready;
    int done;
    int go;
    int abort;
    int64_t t0;                   /* absolute CLOCK_MONOTONIC ns */
    int64_t deadline;             /* absolute */
    int64_t give_up;              /* absolute: deadline + grace */
    atomic_int abandon;
    int n;
    rlk_bench_worker *w;
} rlk_bench_runner;

/* ------------------------------------------------------------ recording */

static void rlk_bench_note_error(rlk_bench_worker *w, const char *msg, int giveup)
{
    pthread_mutex_lock(&w->mu);
    if (!w->closed) {
        if (giveup)
            w->res.giveups++;
        else
            w->res.errors++;
        snprintf(w->res.last_error, sizeof w->res.last_error, "%s", msg);
    }
    pthread_mutex_unlock(&w->mu);
}

static int rlk_bench_grow(void **buf, size_t *cap, size_t n, size_t size)
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

static void rlk_bench_note_latency(rlk_bench_worker *w, int64_t ns)
{
    int ok = 1;

    pthread_mutex_lock(&w->mu);
    if (!w->closed) {
        ok = rlk_bench_grow((void **)&w->res.lat, &w->cap_lat, w->res.nlat, sizeof(int64_t)) == 0;
        if (ok)
            w->res.lat[w->res.nlat++] = ns;
    }
    pthread_mutex_unlock(&w->mu);
    if (!ok)
        rlk_bench_note_error(w, "out of memory recording a latency", 0);
}

static void rlk_bench_note_event(rlk_bench_worker *w, const rlk_bench_event *e)
{
    int ok = 1;

    pthread_mutex_lock(&w->mu);
    if (!w->closed) {
        ok = rlk_bench_grow((void **)&w->res.ev, &w->cap_ev, w->res.nev,
                            sizeof(rlk_bench_event)) == 0;
        if (ok)
            w->res.ev[w->res.nev++] = *e;
    }
    pthread_mutex_unlock(&w->mu);
    if (!ok)
        rlk_bench_note_error(w, "out of memory recording an acquisition", 0);
}

/* A waiter gave up at deadline + grace: stuck, even if its thread ends
 * before the results are taken. */
static void rlk_bench_note_stuck(rlk_bench_worker *w)
{
    pthread_mutex_lock(&w->mu);
    if (!w->closed)
        w->res.stuck = 1;
    pthread_mutex_unlock(&w->mu);
}

/* ------------------------------------------------------------ workloads */

static void rlk_bench_w1_loop(rlk_bench_worker *w)
{
    const rlk_bench_driver *d = w->run->d;
    char err[RLK_BENCH_ERRLEN];

    while (rlk_bench_now_ns() < w->run->deadline) {
        int64_t t1 = rlk_bench_now_ns(), t2;
        rlk_bench_acq a;
        int rc = -1;

        atomic_store(&w->phase, RLK_BENCH_PH_ACQUIRING);
        a = d->try_acquire(w->st, err, sizeof err);
        if (a == RLK_BENCH_ACQ_OK) {
            atomic_store(&w->phase, RLK_BENCH_PH_RELEASING);
            rc = d->release(w->st, err, sizeof err);
        } else if (a == RLK_BENCH_ACQ_HELD) {
            snprintf(err, sizeof err, "acquire: %s is held by another owner", w->id->key);
        }
        t2 = rlk_bench_now_ns();
        atomic_store(&w->phase, RLK_BENCH_PH_IDLE);
        if (rc == 0) {
            rlk_bench_note_latency(w, t2 - t1);
        } else {
            rlk_bench_note_error(w, err, 0);
            rlk_bench_sleep_ns(RLK_BENCH_BACKOFF_NS);
        }
    }
}

/* One W2 acquisition. Returns 0 to go on, -1 when abandoned. */
static int rlk_bench_w2_once(rlk_bench_worker *w, int64_t request)
{
    rlk_bench_runner *r = w->run;
    char err[RLK_BENCH_ERRLEN];
    rlk_bench_event e;
    rlk_bench_acq a;
    int rc;

    atomic_store(&w->phase, RLK_BENCH_PH_ACQUIRING);
    a = r->d->lock(w->st, &r->abandon, r->give_up, err, sizeof err);
    e.acquire_ns = rlk_bench_now_ns() - r->t0;
    memset(e.tl, 0, sizeof e.tl);
    if (a == RLK_BENCH_ACQ_OK && r->d->timeline) {
        int64_t tl[4];

        r->d->timeline(w->st, tl);
        for (int i = 0; i < 4; i++)
            e.tl[i] = tl[i] > 0 ? tl[i] - r->t0 : 0;
    }
    if (a == RLK_BENCH_ACQ_ABANDONED) {
        rlk_bench_note_stuck(w);
        return -1;
    }
    if (a != RLK_BENCH_ACQ_OK) {
        atomic_store(&w->phase, RLK_BENCH_PH_IDLE);
        rlk_bench_note_error(w, err, 1);
        rlk_bench_sleep_ns(RLK_BENCH_BACKOFF_NS);
        return 0;
    }
    atomic_store(&w->phase, RLK_BENCH_PH_HOLDING);
    rlk_bench_sleep_ns((int64_t)r->o->hold_ms * 1000000);
    atomic_store(&w->phase, RLK_BENCH_PH_RELEASING);
    e.release_ns = rlk_bench_now_ns() - r->t0;
    rc = r->d->unlock(w->st, err, sizeof err);
    e.release_end_ns = rlk_bench_now_ns() - r->t0;
    /* Recorded after the release so that the bookkeeping (a mutex, now and
     * then a realloc) is not part of the handoff gap it measures. */
    e.request_ns = request - r->t0;
    e.contender = w->id->index;
    rlk_bench_note_event(w, &e);
    if (rc != 0)
        rlk_bench_note_error(w, err, 0);
    atomic_store(&w->phase, RLK_BENCH_PH_IDLE);
    return 0;
}

static void rlk_bench_w2_loop(rlk_bench_worker *w)
{
    for (;;) {
        int64_t request = rlk_bench_now_ns();

        if (request >= w->run->deadline || rlk_bench_w2_once(w, request) != 0)
            return;
    }
}

/* ------------------------------------------------------------ threads */

static int rlk_bench_wait_go(rlk_bench_runner *r)
{
    int abort;

    pthread_mutex_lock(&r->mu);
    r->ready++;
    pthread_cond_broadcast(&r->cv);
    while (!r->go)
        pthread_cond_wait(&r->cv, &r->mu);
    abort = r->abort;
    pthread_mutex_unlock(&r->mu);
    return abort;
}

static void *rlk_bench_worker_main(void *arg)
{
    rlk_bench_worker *w = arg;
    rlk_bench_runner *r = w->run;

    w->open_ok = r->d->open(&w->st, r->t, w->id, w->open_err, sizeof w->open_err) == 0;
    atomic_store(&w->phase, RLK_BENCH_PH_IDLE);
    if (!rlk_bench_wait_go(r) && w->open_ok) {
        if (r->o->workload == 1)
            rlk_bench_w1_loop(w);
        else
            rlk_bench_w2_loop(w);
    }
    if (w->open_ok && r->d->sub_counts) {
        uint64_t wk = 0, msg = 0;

        r->d->sub_counts(w->st, &wk, &msg);
        pthread_mutex_lock(&w->mu);
        w->res.sub_wakeups = wk;
        w->res.sub_messages = msg;
        pthread_mutex_unlock(&w->mu);
    }
    pthread_mutex_lock(&w->mu);
    if (!w->closed)
        w->res.end_ns = rlk_bench_now_ns() - r->t0;
    pthread_mutex_unlock(&w->mu);
    if (w->open_ok && r->d->metrics) {
        size_t len = r->d->metrics(w->st, NULL, 0);
        void *blob = len ? malloc(len) : NULL;

        if (blob && r->d->metrics(w->st, blob, len) == len) {
            pthread_mutex_lock(&w->mu);
            if (!w->closed) {
                w->res.metrics = blob;
                w->res.metrics_len = len;
                blob = NULL;
            }
            pthread_mutex_unlock(&w->mu);
        }
        free(blob);
    }
    if (w->open_ok)
        r->d->close(w->st);
    atomic_store(&w->phase, RLK_BENCH_PH_DONE);
    pthread_mutex_lock(&r->mu);
    r->done++;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static int rlk_bench_runner_init(rlk_bench_runner *r, const rlk_bench_opts *o,
                                 const rlk_bench_driver *d, const rlk_bench_target *t,
                                 const rlk_bench_identity *ids)
{
    pthread_condattr_t ca;
    int i;

    memset(r, 0, sizeof *r);
    r->o = o;
    r->d = d;
    r->t = t;
    r->n = o->clients;
    atomic_init(&r->abandon, 0);
    r->w = calloc((size_t)r->n, sizeof *r->w);
    if (r->w == NULL)
        return -1;
    pthread_mutex_init(&r->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&r->cv, &ca);
    pthread_condattr_destroy(&ca);
    for (i = 0; i < r->n; i++) {
        r->w[i].run = r;
        r->w[i].id = &ids[i];
        atomic_init(&r->w[i].phase, RLK_BENCH_PH_CONNECTING);
        pthread_mutex_init(&r->w[i].mu, NULL);
        r->w[i].res.end_ns = -1;
    }
    return 0;
}

/* Starts every thread and waits until all have connected (or failed to).
 * Returns the number of threads started. */
static int rlk_bench_start(rlk_bench_runner *r, char *err, size_t errlen)
{
    int i;

    for (i = 0; i < r->n; i++) {
        if (pthread_create(&r->w[i].thread, NULL, rlk_bench_worker_main, &r->w[i]) != 0) {
            snprintf(err, errlen, "cannot start contender thread %d", i);
            break;
        }
    }
    pthread_mutex_lock(&r->mu);
    while (r->ready < i)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return i;
}

static void rlk_bench_release_gate(rlk_bench_runner *r, int abort, int64_t t0)
{
    pthread_mutex_lock(&r->mu);
    r->abort = abort;
    r->t0 = t0 > 0 ? t0 : rlk_bench_now_ns();
    r->deadline = r->t0 + (int64_t)(r->o->duration_s * 1e9);
    r->give_up = r->deadline + (int64_t)(r->o->grace_s * 1e9);
    r->go = 1;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
}

static void rlk_bench_wait_until(rlk_bench_runner *r, int64_t until)
{
    struct timespec ts;

    ts.tv_sec = (time_t)(until / 1000000000);
    ts.tv_nsec = (long)(until % 1000000000);
    pthread_mutex_lock(&r->mu);
    while (r->done < r->n && rlk_bench_now_ns() < until)
        pthread_cond_timedwait(&r->cv, &r->mu, &ts);
    pthread_mutex_unlock(&r->mu);
}

/* Takes each contender's results, marking the unfinished ones. */
static void rlk_bench_collect(rlk_bench_runner *r, rlk_bench_run_result *out)
{
    int i;

    out->closed_ns = rlk_bench_now_ns() - r->t0;
    for (i = 0; i < r->n; i++) {
        rlk_bench_worker *w = &r->w[i];
        int phase;

        pthread_mutex_lock(&w->mu);
        w->closed = 1;
        phase = atomic_load(&w->phase);
        out->w[i] = w->res;
        pthread_mutex_unlock(&w->mu);
        if (phase == RLK_BENCH_PH_DONE) {
            out->stuck += out->w[i].stuck;  /* gave up at deadline + grace, then ended */
            continue;
        }
        out->w[i].unfinished = 1;
        out->w[i].stuck = phase == RLK_BENCH_PH_ACQUIRING;
        out->w[i].end_ns = -1;
        out->unfinished++;
        out->stuck += out->w[i].stuck;
    }
}

/* Where an abandoned runner stays reachable (external, so it is kept). */
void *rlk_bench_abandoned_runner;

/* Joins finished threads, detaches abandoned ones; frees the runner only
 * when nothing is left running. */
static void rlk_bench_finish(rlk_bench_runner *r, int started, const rlk_bench_run_result *out)
{
    int i;

    for (i = 0; i < started; i++) {
        if (out == NULL || !out->w[i].unfinished)
            pthread_join(r->w[i].thread, NULL);
        else
            pthread_detach(r->w[i].thread);
    }
    if (out != NULL && out->unfinished > 0) {
        /* Abandoned threads still use r: keep it, reachable, until the
         * process exits (soon), so leak checkers see it as in use. */
        rlk_bench_abandoned_runner = r;
        return;
    }
    for (i = 0; i < r->n; i++)
        pthread_mutex_destroy(&r->w[i].mu);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r->w);
    free(r);
}

static int rlk_bench_open_failed(rlk_bench_runner *r, int started, char *err, size_t errlen)
{
    int i;

    if (started < r->n)
        return 1;
    for (i = 0; i < r->n; i++) {
        if (!r->w[i].open_ok) {
            snprintf(err, errlen, "contender %d: %s", i, r->w[i].open_err);
            return 1;
        }
    }
    return 0;
}

/* In a child of rlk_bench_run_procs (o->ready_fd >= 0): says "ready" and
 * reads the common start time. 0 with *t0, or -1: the run is off. */
int rlk_bench_child_gate(const rlk_bench_opts *o, int64_t *t0)
{
    char ready = 'R';

    if (o->ready_fd < 0)
        return 0;
    if (write(o->ready_fd, &ready, 1) != 1 ||
        read(o->gate_fd, t0, sizeof *t0) != (ssize_t)sizeof *t0 || *t0 <= 0)
        return -1;
    return 0;
}

int rlk_bench_run(const rlk_bench_opts *o, const rlk_bench_driver *d,
                  const rlk_bench_target *t, const rlk_bench_identity *ids,
                  rlk_bench_run_result *out, char *err, size_t errlen)
{
    rlk_bench_runner *r;
    int64_t t0 = 0;
    int started;

#ifdef RLK_BENCH_HAVE_ASYNC
    if (o->api_async) /* one loop in this thread; a --procs child runs its one task here */
        return rlk_bench_run_async(o, t, ids, out, err, errlen);
#endif
    r = malloc(sizeof *r);
    memset(out, 0, sizeof *out);
    if (r == NULL || rlk_bench_runner_init(r, o, d, t, ids) != 0) {
        free(r);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    started = rlk_bench_start(r, err, errlen);
    if (rlk_bench_open_failed(r, started, err, errlen)) {
        rlk_bench_release_gate(r, 1, 0);
        rlk_bench_finish(r, started, NULL);
        return -1;
    }
    out->n = r->n;
    out->w = calloc((size_t)r->n, sizeof *out->w);
    if (out->w == NULL) {
        rlk_bench_release_gate(r, 1, 0);
        rlk_bench_finish(r, started, NULL);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (rlk_bench_child_gate(o, &t0) != 0) {
        rlk_bench_release_gate(r, 1, 0);
        rlk_bench_finish(r, started, NULL);
        snprintf(err, errlen, "the parent called the run off");
        return -1;
    }
    rlk_bench_release_gate(r, 0, t0);
    out->t0_ns = r->t0;
    out->deadline_ns = r->deadline - r->t0;
    rlk_bench_wait_until(r, r->give_up);
    atomic_store(&r->abandon, 1);
    /* A waiter bounded by give_up returns just after it (its last attempt, its cancel), then
     * writes its results (stuck, its subscriber's counts): a moment for those, so that they are
     * counted rather than raced by the copy below. At once when every contender has ended. */
    rlk_bench_wait_until(r, rlk_bench_now_ns() + RLK_BENCH_LATE_NS);
    rlk_bench_collect(r, out);
    rlk_bench_finish(r, started, out);
    return 0;
}

void rlk_bench_run_free(rlk_bench_run_result *r)
{
    int i;

    for (i = 0; i < r->n && r->w != NULL; i++) {
        free(r->w[i].lat);
        free(r->w[i].ev);
        free(r->w[i].metrics);
    }
    free(r->w);
    r->w = NULL;
    r->n = 0;
}
