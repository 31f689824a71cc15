/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fs_util.c - see fs_util.h.
 */
#include "fs_util.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---------------------------------------------------------------- event logs */

int fs_log_open(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

int fs_log_write(int fd, const fs_event *ev)
{
    return write(fd, ev, sizeof *ev) == (ssize_t)sizeof *ev ? 0 : -1;
}

static size_t fs_events_read(const char *const *paths, int npaths, fs_event **out)
{
    size_t n = 0, cap = 0;
    fs_event *evs = NULL, ev;

    for (int i = 0; i < npaths; i++) {
        FILE *f = fopen(paths[i], "rb");

        while (f && fread(&ev, sizeof ev, 1, f) == 1) {
            if (n == cap) {
                fs_event *more = realloc(evs, (cap ? cap * 2 : 256) * sizeof *evs);

                if (!more)
                    break;
                evs = more;
                cap = cap ? cap * 2 : 256;
            }
            evs[n++] = ev;
        }
        if (f)
            fclose(f);
    }
    *out = evs;
    return n;
}

static int fs_cmp_event(const void *a, const void *b)
{
    const fs_event *x = a, *y = b;

    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    if (x->thread != y->thread)
        return x->thread < y->thread ? -1 : 1;
    if (x->seq != y->seq)
        return x->seq < y->seq ? -1 : 1;
    return (x->type > y->type) - (x->type < y->type);
}

size_t fs_holds_read(const char *const *paths, int npaths, long long open_extra_ns, fs_hold **out)
{
    fs_event *evs = NULL;
    size_t n = fs_events_read(paths, npaths, &evs), k = 0;
    fs_hold *holds = n ? calloc(n, sizeof *holds) : NULL;

    *out = NULL;
    if (!holds) {
        free(evs);
        return 0;
    }
    qsort(evs, n, sizeof *evs, fs_cmp_event);
    for (size_t i = 0; i < n; i++) {
        const fs_event *a = &evs[i], *r = i + 1 < n ? &evs[i + 1] : NULL;
        fs_hold *h = &holds[k];

        if (a->type != FS_ACQ)
            continue;   /* a release without its acquire: cannot happen, ignored */
        h->pid = a->pid;
        h->thread = a->thread;
        h->permits = a->permits;
        h->sent_ns = a->t1_ns;
        h->start_ns = a->t2_ns;
        if (r && r->type == FS_REL && r->pid == a->pid && r->thread == a->thread &&
            r->seq == a->seq) {
            h->end_ns = r->t1_ns;
            i++;
        } else {
            h->open = 1;
            h->end_ns = open_extra_ns < 0 ? LLONG_MAX : a->t1_ns + open_extra_ns;
        }
        k++;
    }
    free(evs);
    *out = holds;
    return k;
}

typedef struct fs_edge {
    long long t;
    long long delta;
} fs_edge;

static int fs_cmp_edge(const void *a, const void *b)
{
    const fs_edge *x = a, *y = b;

    if (x->t != y->t)
        return x->t < y->t ? -1 : 1;
    return (x->delta > y->delta) - (x->delta < y->delta);  /* ends (negative) first */
}

long long fs_peak_permits(const fs_hold *holds, size_t n)
{
    fs_edge *e = calloc(2 * n + 1, sizeof *e);
    long long cur = 0, peak = 0;

    if (!e)
        return -1;
    for (size_t i = 0; i < n; i++) {
        e[2 * i].t = holds[i].start_ns;
        e[2 * i].delta = holds[i].permits;
        e[2 * i + 1].t = holds[i].end_ns;
        e[2 * i + 1].delta = -holds[i].permits;
    }
    qsort(e, 2 * n, sizeof *e, fs_cmp_edge);
    for (size_t i = 0; i < 2 * n; i++) {
        cur += e[i].delta;
        if (cur > peak)
            peak = cur;
    }
    free(e);
    return peak;
}

/* ---------------------------------------------------------------- server */

int fs_command(const rlk_fx_server *s, const char *fmt, ...)
{
    redisContext *ctx = rlk_fx_connect(s);
    redisReply *r = NULL;
    va_list ap;
    int rc;

    if (!ctx)
        return -1;
    va_start(ap, fmt);
    r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    rc = r && r->type != REDIS_REPLY_ERROR ? 0 : -1;
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
    return rc;
}

/* ---------------------------------------------------------------- output, notes */

void fs_say(const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n > sizeof line - 2)
        n = (int)sizeof line - 2;
    line[n++] = '\n';
    if (write(STDOUT_FILENO, line, (size_t)n) < 0) {
        /* the parent is gone: nothing to tell */
    }
}

long long fs_wall_offset_ms(void)
{
    struct timespec rt, mono;

    clock_gettime(CLOCK_REALTIME, &rt);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    return ((long long)rt.tv_sec - mono.tv_sec) * 1000LL + (rt.tv_nsec - mono.tv_nsec) / 1000000L;
}

const char *fs_stall_note(rt_stall *s)
{
    return rt_stall_max_gap_ms(s) > RT_STALL_MS ? " - a scheduling stall, not a bug" : "";
}
