/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_util.c - see fl_util.h.
 */
#include "fl_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- lost-lock recorder */

void fl_lost_init(fl_lost *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    tk_latch_init(&g->fired);
}

void fl_lost_destroy(fl_lost *g)
{
    tk_latch_destroy(&g->fired);
    pthread_mutex_destroy(&g->mu);
}

static void fl_on_lost_plain(const char *name, const char *owner, int reason, void *ud)
{
    fl_lost *g = ud;

    (void)name;
    (void)owner;
    (void)reason;
    pthread_mutex_lock(&g->mu);
    g->plain_count++;
    pthread_mutex_unlock(&g->mu);
}

static void fl_on_lost_kind(int kind, const char *name, const char *owner, int reason, void *ud)
{
    fl_lost *g = ud;

    pthread_mutex_lock(&g->mu);
    g->count++;
    g->kind = kind;
    g->reason = reason;
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->owner, sizeof g->owner, "%s", owner);
    pthread_mutex_unlock(&g->mu);
    tk_latch_add(&g->fired, 1);
}

void fl_lost_install(rlk_client *c, fl_lost *g)
{
    rlk_set_lost_callback(c, fl_on_lost_plain, g);
    rlk_set_lost_kind_callback(c, fl_on_lost_kind, g);
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
    char dir[] = "/tmp/rlk-fl-XXXXXX", line[128];
    tk_child *kids = calloc((size_t)procs, sizeof *kids);
    long long t0;

    memset(run, 0, sizeof *run);
    if (!kids || mkdtemp(dir) == NULL) {
        free(kids);
        return -1;
    }
    run->spawned = tk_children_spawn_contend(kids, procs, url, threads, iters, dir);
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
    run->rep = tk_holds_check(run->recs, run->n, 1);
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
