/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_util.c - see fl_util.h.
 */
#include "fl_util.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- a waiter on a thread */

static void *fl_waiter_main(void *arg)
{
    fl_waiter *w = arg;

    w->rc = w->acquire(w->lock);
    w->at_ms = rlk_fx_now_ms();
    tk_latch_add(&w->done, 1);
    return NULL;
}

int fl_waiter_start(fl_waiter *w, int (*acquire)(void *lock), void *lock)
{
    memset(w, 0, sizeof *w);
    w->acquire = acquire;
    w->lock = lock;
    w->rc = -1;
    tk_latch_init(&w->done);
    if (pthread_create(&w->thread, NULL, fl_waiter_main, w) != 0) {
        tk_latch_destroy(&w->done);
        return -1;
    }
    return 0;
}

long long fl_waiter_woken(fl_waiter *w, const rlk_fx_server *srv, const char *channel,
                          tk_stall *stall, int (*release)(void *holder), void *holder,
                          int *release_rc)
{
    int listening = tk_wait_numsub(srv, channel, 1, 5000) == 0, early = tk_latch_get(&w->done);
    long long t_release, took;
    int done;

    tk_stall_reset(stall);
    t_release = rlk_fx_now_ms();
    *release_rc = release(holder);
    done = tk_latch_wait(&w->done, 1, 10000) == 1;
    pthread_join(w->thread, NULL);
    tk_latch_destroy(&w->done);
    took = w->at_ms - t_release;
    printf("  waiter acquired %lld ms after the release (max scheduling gap %lld ms)\n", took,
           tk_stall_max_gap_ms(stall));
    if (!listening || early)
        return -1;
    return done ? took : -2;
}

/* ---------------------------------------------------------------- a program's start */

int fl_suite_begin(const char *name, rlk_fx_server *srv, char *url, size_t len, tk_stall *stall,
                   char *self, size_t self_len)
{
    ssize_t n;

    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    n = readlink("/proc/self/exe", self, self_len - 1);
    self[n > 0 ? n : 0] = '\0';
    return tk_suite_start(name, srv, url, len, stall);
}

/* ---------------------------------------------------------------- probes */

int fl_wait_lindex(const rlk_fx_server *s, const char *key, long index, const char *value,
                   long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;

    do {
        redisReply *r = rlk_fx_command(s, "LINDEX %s %ld", key, index);
        int same = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, value) == 0;

        if (r)
            freeReplyObject(r);
        if (same)
            return 0;
        rlk_fx_sleep_ms(2);
    } while (rlk_fx_now_ms() < until);
    return -1;
}

/* ---------------------------------------------------------------- contention run: child */

typedef struct fl_contend_ctx {
    const fl_contender *k;
    void *lock;
    int iters;
    tk_hold *recs;              /* iters per thread */
    int errors;
} fl_contend_ctx;

static void fl_contend_once(fl_contend_ctx *ct, int idx, int i, unsigned *seed)
{
    tk_hold *r = &ct->recs[idx * ct->iters + i];
    long long lease = (i + idx) % 2 ? 5000 : 0;     /* half leased, half watchdog */
    long long value = 0;
    int failed = 0;

    if (ct->k->acquire(ct->lock, lease, &value) != RLK_OK) {
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
        return;
    }
    r->start_ns = rlk_fx_now_ns();
    if (ct->k->while_held)
        failed = ct->k->while_held(ct->lock, i, lease, value);
    tk_spin_ns(20000 + (long long)(tk_rand(seed) % 60000));
    r->end_ns = rlk_fx_now_ns();
    r->value = value;
    r->pid = (int)getpid();
    r->thread = idx;
    r->seq = i;
    r->kind = TK_HOLD_EXCL;
    if (ct->k->release(ct->lock) != RLK_OK)
        failed++;
    if (failed)
        __atomic_add_fetch(&ct->errors, failed, __ATOMIC_RELAXED);
}

static void *fl_contend_main(void *arg)
{
    tk_thread_arg *a = arg;
    fl_contend_ctx *ct = a->ctx;
    unsigned seed = (unsigned)getpid() * 31u + (unsigned)a->idx;

    for (int i = 0; i < ct->iters; i++)
        fl_contend_once(ct, a->idx, i, &seed);
    return NULL;
}

static int fl_child_contend(const fl_contender *k, const char *url, int threads, int iters,
                            const char *logpath)
{
    rlk_client *c = tk_connect(url, 2000, threads);
    fl_contend_ctx ct = {0};
    size_t n = 0;

    if (!c || threads > 16 || !(ct.lock = k->make(c)))
        return 2;
    ct.k = k;
    ct.iters = iters;
    ct.recs = calloc((size_t)(threads * iters), sizeof *ct.recs);
    if (!ct.recs)
        return 2;
    if (tk_child_go_threads(threads, fl_contend_main, &ct) != 0)
        return 2;
    n = tk_holds_compact(ct.recs, (size_t)(threads * iters));   /* failed ones: pid 0 */
    if (tk_holds_save(logpath, ct.recs, n) != 0)
        ct.errors++;
    tk_say("done %zu %d", n, ct.errors);
    free(ct.recs);
    k->free(ct.lock);
    rlk_free(c);
    return 0;
}

int fl_child_main(int argc, char **argv, const fl_contender *k)
{
    if (argc == 6 && strcmp(argv[1], "contend") == 0)
        return fl_child_contend(k, argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
    fprintf(stderr, "%s: unknown child mode\n", k->prog);
    return 2;
}

/* ---------------------------------------------------------------- contention run: parent */

int fl_contend(const char *url, int procs, int threads, int iters, long long done_timeout_ms,
               fl_contend_run *run)
{
    return fl_contend_mode("contend", url, procs, threads, iters, done_timeout_ms, 1, run);
}

int fl_contend_mode(const char *mode, const char *url, int procs, int threads, int iters,
                    long long done_timeout_ms, int verbose, fl_contend_run *run)
{
    char dir[] = "/tmp/rlk-fl-XXXXXX", line[128], t[16], it[16];
    const char *args[] = {mode, url, t, it, "", NULL};
    tk_child *kids = calloc((size_t)procs, sizeof *kids);
    long long t0;

    memset(run, 0, sizeof *run);
    if (!kids || mkdtemp(dir) == NULL) {
        free(kids);
        return -1;
    }
    snprintf(t, sizeof t, "%d", threads);
    snprintf(it, sizeof it, "%d", iters);
    run->spawned = tk_children_spawn(kids, procs, args, 4, dir);
    for (int p = 0; p < run->spawned; p++)
        if (tk_child_read_line(&kids[p], line, sizeof line, 15000) != 0 ||
            strcmp(line, "ready") != 0)
            run->not_ready++;
    t0 = rlk_fx_now_ms();
    tk_children_send(kids, run->spawned, "go");
    for (int p = 0; p < run->spawned; p++) {
        size_t got = 0;
        int errs = 0;

        if (tk_child_read_line(&kids[p], line, sizeof line, done_timeout_ms) == 0 &&
            sscanf(line, "done %zu %d", &got, &errs) == 2) {
            run->done++;
            run->errors += errs;
        }
        if (tk_child_wait(&kids[p], 10000) != 0)
            run->unclean++;
    }
    tk_children_take_logs(dir, run->spawned, &run->recs, &run->n, &run->bad);
    run->ms = rlk_fx_now_ms() - t0;
    rmdir(dir);
    free(kids);
    run->rep = tk_holds_check(run->recs, run->n, verbose);
    return 0;
}

/* Appends one problem to why (a "; " between problems). */
static void fl_problem(char *why, size_t len, int *count, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fl_problem(char *why, size_t len, int *count, const char *fmt, ...)
{
    size_t used = strlen(why);
    va_list ap;

    (*count)++;
    if (used > 0 && used + 2 < len) {
        memcpy(why + used, "; ", 3);
        used += 2;
    }
    if (used + 1 >= len)
        return;
    va_start(ap, fmt);
    vsnprintf(why + used, len - used, fmt, ap);
    va_end(ap);
}

int fl_contend_problems(const fl_contend_run *run, int procs, int threads, int iters, char *why,
                        size_t len)
{
    size_t want = (size_t)procs * (size_t)threads * (size_t)iters;
    int count = 0;

    why[0] = '\0';
    if (run->spawned != procs)
        fl_problem(why, len, &count, "%d of %d children started", run->spawned, procs);
    if (run->not_ready > 0)
        fl_problem(why, len, &count, "%d children did not get ready", run->not_ready);
    if (run->done != procs)
        fl_problem(why, len, &count, "%d of %d children done", run->done, procs);
    if (run->unclean > 0)
        fl_problem(why, len, &count, "%d children did not exit cleanly", run->unclean);
    if (run->errors > 0)
        fl_problem(why, len, &count, "%d errors in the children", run->errors);
    if (run->n != want)
        fl_problem(why, len, &count, "%zu holds logged, expected %zu", run->n, want);
    if (run->bad > 0)
        fl_problem(why, len, &count, "%d unreadable hold-log lines", run->bad);
    if (run->rep.conflicts > 0)
        fl_problem(why, len, &count, "%ld overlapping holds", run->rep.conflicts);
    return count;
}
