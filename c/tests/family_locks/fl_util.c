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

/* ---------------------------------------------------------------- hold records */

int fl_log_write(const char *path, const fl_rec *recs, size_t n)
{
    FILE *f = fopen(path, "wb");
    size_t w;

    if (!f)
        return -1;
    w = n ? fwrite(recs, sizeof *recs, n, f) : 0;
    return (fclose(f) == 0 && w == n) ? 0 : -1;
}

size_t fl_log_read(const char *path, fl_rec **recs, size_t *n)
{
    FILE *f = fopen(path, "rb");
    size_t got = 0;
    fl_rec r;

    while (f && fread(&r, sizeof r, 1, f) == 1) {
        fl_rec *grown = realloc(*recs, (*n + 1) * sizeof **recs);

        if (!grown)
            break;
        *recs = grown;
        (*recs)[(*n)++] = r;
        got++;
    }
    if (f)
        fclose(f);
    unlink(path);
    return got;
}

static int fl_cmp_acq(const void *a, const void *b)
{
    const fl_rec *x = a, *y = b;

    return (x->acq_ns > y->acq_ns) - (x->acq_ns < y->acq_ns);
}

void fl_sort(fl_rec *recs, size_t n)
{
    qsort(recs, n, sizeof *recs, fl_cmp_acq);
}

static int fl_overlap(const fl_rec *a, const fl_rec *b)
{
    return a->acq_ns < b->rel_ns && b->acq_ns < a->rel_ns;
}

int fl_exclusive_overlaps(const fl_rec *recs, size_t n, int (*exclusive)(const fl_rec *))
{
    int found = 0;

    /* Sorted by acquisition: only later holds that start before a hold ends
     * can overlap it. */
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n && recs[j].acq_ns < recs[i].rel_ns; j++) {
            if (!exclusive(&recs[i]) && !exclusive(&recs[j]))
                continue;
            if (!fl_overlap(&recs[i], &recs[j]))
                continue;
            if (found < 5)
                fprintf(stderr, "  overlap: pid %d/%d (kind %d) [%.3f, %.3f] ms and pid %d/%d "
                        "(kind %d) [%.3f, %.3f] ms\n", recs[i].pid, recs[i].thread, recs[i].kind,
                        recs[i].acq_ns / 1e6, recs[i].rel_ns / 1e6, recs[j].pid, recs[j].thread,
                        recs[j].kind, recs[j].acq_ns / 1e6, recs[j].rel_ns / 1e6);
            found++;
        }
    }
    return found;
}

typedef struct fl_edge {
    long long at;
    int delta;
} fl_edge;

static int fl_cmp_edge(const void *a, const void *b)
{
    const fl_edge *x = a, *y = b;

    if (x->at != y->at)
        return (x->at > y->at) - (x->at < y->at);
    return x->delta - y->delta;     /* a release before an acquisition at the same instant */
}

int fl_max_concurrency(const fl_rec *recs, size_t n, int (*counted)(const fl_rec *))
{
    fl_edge *e = calloc(2 * n + 1, sizeof *e);
    size_t m = 0;
    int cur = 0, max = 0;

    if (!e)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!counted(&recs[i]))
            continue;
        e[m].at = recs[i].acq_ns;
        e[m++].delta = 1;
        e[m].at = recs[i].rel_ns;
        e[m++].delta = -1;
    }
    qsort(e, m, sizeof *e, fl_cmp_edge);
    for (size_t i = 0; i < m; i++) {
        cur += e[i].delta;
        if (cur > max)
            max = cur;
    }
    free(e);
    return max;
}

/* ---------------------------------------------------------------- lost-lock recorder */

void fl_lost_init(fl_lost *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    rt_latch_init(&g->fired);
}

void fl_lost_destroy(fl_lost *g)
{
    rt_latch_destroy(&g->fired);
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
    rt_latch_add(&g->fired, 1);
}

void fl_lost_install(rlk_client *c, fl_lost *g)
{
    rlk_set_lost_callback(c, fl_on_lost_plain, g);
    rlk_set_lost_kind_callback(c, fl_on_lost_kind, g);
}

/* ---------------------------------------------------------------- probes */

long long fl_int(const rlk_fx_server *s, const char *fmt, ...)
{
    redisContext *ctx = rlk_fx_connect(s);
    redisReply *r = NULL;
    long long v = -999;
    va_list ap;

    if (!ctx)
        return v;
    va_start(ap, fmt);
    r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        v = -1;
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
    return v;
}

long long fl_server_ms(const rlk_fx_server *s)
{
    redisReply *r = rlk_fx_command(s, "TIME");
    long long ms = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    if (r)
        freeReplyObject(r);
    return ms;
}

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

void fl_say(const char *fmt, ...)
{
    va_list ap;

    flockfile(stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
    funlockfile(stdout);
}

const char *fl_stall_note(rt_stall *s)
{
    return rt_stall_max_gap_ms(s) > RT_STALL_MS ? " - a scheduling stall, not a lock bug" : "";
}
