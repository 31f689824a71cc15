/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk-async-demo: one thread, one libevent loop, many lock requests. T
 * tasks share N reentrant locks (task i wants name i % N); each asks for
 * its lock with rlk_async_lock (a wait and the watchdog: no lease), holds
 * it for a loop timer's few milliseconds and unlocks it. Nothing blocks:
 * all T requests are pending at once on one rlk_async client, woken by
 * pub/sub. At the end the demo checks from its own hold records that no
 * two holds of one name overlapped and prints a summary.
 *
 *   rlk-async-demo [--url URL] [--tasks T] [--names N] [--hold-ms MS]
 *                  [--wait-ms MS] [--prefix P]
 *
 * Exit 0 when every task held its lock once and nothing overlapped; 1
 * otherwise (the reason on stderr); 2 on a usage error.
 */
#include "rlk.h"
#include "rlk_async.h"
#include "rlk_async_libevent.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One task: a request for one name, and what it saw. */
typedef struct demo_task {
    struct demo *d;
    int index;
    int name;
    struct event *hold;         /* the hold's timer */
    int64_t requested_ns;
    int64_t acquired_ns;        /* 0: never held */
    int64_t released_ns;        /* just before rlk_async_unlock was called */
    int err;                    /* the lock request's outcome */
    int done;
} demo_task;

typedef struct demo {
    struct event_base *base;
    rlk_async *ac;
    demo_task *tasks;
    char (*names)[128];
    int ntasks;
    int nnames;
    int hold_ms;
    int finished;
    int unlock_errors;
    size_t max_pending;
    char last_error[256];
} demo;

static int64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void usage(FILE *out)
{
    fprintf(out,
            "usage: rlk-async-demo [--url URL] [--tasks T] [--names N] [--hold-ms MS]\n"
            "                      [--wait-ms MS] [--prefix P]\n"
            "  One thread and one libevent loop serve T tasks (default 1000) over N reentrant\n"
            "  locks P:<j> (default 50 names, prefix rlk:async-demo): each task takes its\n"
            "  lock with rlk_async_lock (wait MS, default 60000; the watchdog, no lease),\n"
            "  holds it MS ms (default 2) on a loop timer and unlocks it. Then checks that\n"
            "  no two holds of a name overlapped. URL: default $RLK_URL.\n");
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

static void task_finish(demo_task *t)
{
    t->done = 1;
    if (++t->d->finished == t->d->ntasks)
        event_base_loopbreak(t->d->base);
}

static void on_unlocked(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    demo_task *t = privdata;

    (void)ac;
    if (r->err != RLK_OK) {
        t->d->unlock_errors++;
        snprintf(t->d->last_error, sizeof t->d->last_error, "unlock %s: %s: %s",
                 t->d->names[t->name], rlk_strerror(r->err), r->errstr);
    }
    task_finish(t);
}

/* The hold is over: record, then unlock (the task id names the holder). */
static void on_hold_end(evutil_socket_t fd, short what, void *arg)
{
    demo_task *t = arg;

    (void)fd;
    (void)what;
    t->released_ns = now_ns();
    if (rlk_async_unlock(t->d->ac, RLK_KIND_LOCK, t->d->names[t->name],
                         (unsigned long long)t->index + 1, on_unlocked, t) == NULL) {
        t->d->unlock_errors++;
        snprintf(t->d->last_error, sizeof t->d->last_error, "unlock: out of memory");
        task_finish(t);
    }
}

static void on_locked(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    demo_task *t = privdata;
    struct timeval tv;

    (void)ac;
    t->err = r->err;
    if (r->err != RLK_OK) {
        snprintf(t->d->last_error, sizeof t->d->last_error, "lock %s: %s: %s",
                 t->d->names[t->name], rlk_strerror(r->err), r->errstr);
        task_finish(t);
        return;
    }
    t->acquired_ns = now_ns();
    tv.tv_sec = t->d->hold_ms / 1000;
    tv.tv_usec = (t->d->hold_ms % 1000) * 1000;
    event_add(t->hold, &tv);
}

/* The bound on the whole run: every request's wait is bounded, so this
 * only fires when something is wrong; the summary then says so. */
static void on_guard(evutil_socket_t fd, short what, void *arg)
{
    demo *d = arg;

    (void)fd;
    (void)what;
    snprintf(d->last_error, sizeof d->last_error,
             "%d of %d tasks still unfinished when the run's bound ran out", d->ntasks - d->finished,
             d->ntasks);
    event_base_loopbreak(d->base);
}

/* Samples how many requests are pending, once per 100 ms. */
static void on_sample(evutil_socket_t fd, short what, void *arg)
{
    demo *d = arg;
    size_t n = rlk_async_pending(d->ac);

    (void)fd;
    (void)what;
    if (n > d->max_pending)
        d->max_pending = n;
}

static int cmp_hold(const void *a, const void *b)
{
    const demo_task *x = *(demo_task *const *)a, *y = *(demo_task *const *)b;

    if (x->name != y->name)
        return x->name < y->name ? -1 : 1;
    return x->acquired_ns < y->acquired_ns ? -1 : x->acquired_ns > y->acquired_ns;
}

/* Holds of one name, in acquisition order, must not overlap: each starts
 * after the previous one's unlock was called. Returns the overlaps. */
static int count_overlaps(demo *d, int *held)
{
    demo_task **v = calloc((size_t)d->ntasks, sizeof *v);
    int n = 0, overlaps = 0;

    if (v == NULL)
        return -1;
    for (int i = 0; i < d->ntasks; i++)
        if (d->tasks[i].acquired_ns != 0)
            v[n++] = &d->tasks[i];
    qsort(v, (size_t)n, sizeof *v, cmp_hold);
    for (int i = 1; i < n; i++) {
        if (v[i]->name == v[i - 1]->name && v[i]->acquired_ns <= v[i - 1]->released_ns) {
            overlaps++;
            fprintf(stderr, "rlk-async-demo: OVERLAP on %s: task %d acquired %.3f ms before "
                    "task %d released\n", d->names[v[i]->name], v[i]->index,
                    (v[i - 1]->released_ns - v[i]->acquired_ns) / 1e6, v[i - 1]->index);
        }
    }
    *held = n;
    free(v);
    return overlaps;
}

int main(int argc, char **argv)
{
    const char *url = getenv("RLK_URL"), *prefix = "rlk:async-demo";
    int tasks = 1000, names = 50, hold_ms = 2, wait_ms = 60000, held = 0, overlaps, failed = 0;
    struct timeval sample_tv = {0, 100000};
    struct timeval guard_tv;
    struct event *sample, *guard;
    rlk_options opts;
    demo d;
    int64_t t0, t1;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--url") && v) {
            url = v;
        } else if (!strcmp(a, "--prefix") && v && *v && strlen(v) < 100) {
            prefix = v;
        } else if (!strcmp(a, "--tasks") && v && parse_int(v, 1, 1000000, &tasks) == 0) {
        } else if (!strcmp(a, "--names") && v && parse_int(v, 1, 1000000, &names) == 0) {
        } else if (!strcmp(a, "--hold-ms") && v && parse_int(v, 0, 10000, &hold_ms) == 0) {
        } else if (!strcmp(a, "--wait-ms") && v && parse_int(v, 1, 3600000, &wait_ms) == 0) {
        } else {
            fprintf(stderr, "rlk-async-demo: bad argument '%s' (try --help)\n", a);
            return 2;
        }
        i++;
    }
    if (names > tasks) {
        fprintf(stderr, "rlk-async-demo: --names (%d) must not exceed --tasks (%d)\n", names,
                tasks);
        return 2;
    }

    memset(&d, 0, sizeof d);
    d.ntasks = tasks;
    d.nnames = names;
    d.hold_ms = hold_ms;
    d.tasks = calloc((size_t)tasks, sizeof *d.tasks);
    d.names = calloc((size_t)names, sizeof *d.names);
    d.base = event_base_new();
    if (d.tasks == NULL || d.names == NULL || d.base == NULL) {
        fprintf(stderr, "rlk-async-demo: out of memory\n");
        return 1;
    }
    for (int j = 0; j < names; j++)
        snprintf(d.names[j], sizeof d.names[j], "%s:%d", prefix, j);

    /* The client: the same URL and options as rlk_connect; connections are
     * opened once the loop is attached. */
    rlk_options_init(&opts);
    opts.url = url;
    d.ac = rlk_async_new(&opts);
    if (d.ac == NULL || rlk_async_err(d.ac) != RLK_OK) {
        fprintf(stderr, "rlk-async-demo: %s\n", d.ac ? rlk_async_errstr(d.ac) : "out of memory");
        return 1;
    }
    if (rlk_async_libevent_attach(d.ac, d.base) != RLK_OK) {
        fprintf(stderr, "rlk-async-demo: cannot attach to the libevent loop\n");
        return 1;
    }

    /* Every request at once: task i (holder "<uuid>:<i+1>") on name i % N. */
    t0 = now_ns();
    for (int i = 0; i < tasks; i++) {
        demo_task *t = &d.tasks[i];

        t->d = &d;
        t->index = i;
        t->name = i % names;
        t->hold = evtimer_new(d.base, on_hold_end, t);
        t->requested_ns = now_ns();
        if (t->hold == NULL || rlk_async_lock(d.ac, RLK_KIND_LOCK, d.names[t->name],
                                              (unsigned long long)i + 1, wait_ms, -1, on_locked,
                                              t) == NULL) {
            fprintf(stderr, "rlk-async-demo: out of memory at task %d\n", i);
            return 1;
        }
    }
    d.max_pending = rlk_async_pending(d.ac);
    printf("rlk-async-demo: %d tasks over %d names pending on one client (%s), one thread\n",
           tasks, names, rlk_async_uuid(d.ac));
    sample = event_new(d.base, -1, EV_PERSIST, on_sample, &d);
    event_add(sample, &sample_tv);
    guard_tv.tv_sec = wait_ms / 1000 + 60 + (time_t)tasks * (hold_ms + 5) / 1000;
    guard_tv.tv_usec = 0;
    guard = evtimer_new(d.base, on_guard, &d);
    evtimer_add(guard, &guard_tv);

    /* The loop runs until the last task has unlocked (every request ends:
     * the wait is bounded by --wait-ms). */
    event_base_dispatch(d.base);
    t1 = now_ns();

    overlaps = count_overlaps(&d, &held);
    for (int i = 0; i < tasks; i++)
        if (d.tasks[i].err != RLK_OK)
            failed++;
    printf("rlk-async-demo: %d of %d tasks held their lock and released it in %.3f s "
           "(at most %zu requests pending at once); %d failed; %d unlock errors; "
           "%d overlapping holds\n",
           held, tasks, (t1 - t0) / 1e9, d.max_pending, failed, d.unlock_errors, overlaps);
    if (d.last_error[0])
        fprintf(stderr, "rlk-async-demo: last error: %s\n", d.last_error);

    event_free(sample);
    event_free(guard);
    rlk_async_free(d.ac);
    for (int i = 0; i < tasks; i++)
        if (d.tasks[i].hold)
            event_free(d.tasks[i].hold);
    event_base_free(d.base);
    free(d.tasks);
    free(d.names);
    return held == tasks && failed == 0 && d.unlock_errors == 0 && overlaps == 0 ? 0 : 1;
}
