/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * holdlog.c - see holdlog.h.
 */
#include "holdlog.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

long long tk_mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------- writing */

int tk_holdlog_open(const char *path)
{
    return open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
}

static int tk_write_line(int fd, const char *line, int len)
{
    return len > 0 && write(fd, line, (size_t)len) == (ssize_t)len ? 0 : -1;
}

int tk_hold_begin(int fd, int thread, int seq, int kind, long long sent_ns, long long start_ns,
                  long long value)
{
    char line[160];
    int len = snprintf(line, sizeof line, "B %d %d %d %c %lld %lld %lld\n", (int)getpid(), thread,
                       seq, kind, sent_ns, start_ns, value);

    return tk_write_line(fd, line, len);
}

int tk_hold_end(int fd, int thread, int seq, long long end_ns)
{
    char line[96];
    int len = snprintf(line, sizeof line, "E %d %d %d %lld\n", (int)getpid(), thread, seq, end_ns);

    return tk_write_line(fd, line, len);
}

int tk_hold_write(int fd, const tk_hold *h)
{
    char line[200];
    int len = snprintf(line, sizeof line, "H %d %d %d %c %lld %lld %lld %lld\n",
                       h->pid ? h->pid : (int)getpid(), h->thread, h->seq, h->kind, h->sent_ns,
                       h->start_ns, h->end_ns, h->value);

    return tk_write_line(fd, line, len);
}

size_t tk_holds_compact(tk_hold *holds, size_t n)
{
    size_t k = 0;

    for (size_t i = 0; i < n; i++)
        if (holds[i].pid != 0)
            holds[k++] = holds[i];
    return k;
}

int tk_holds_save(const char *path, const tk_hold *holds, size_t n)
{
    int fd = tk_holdlog_open(path), rc = 0;

    if (fd < 0)
        return -1;
    for (size_t i = 0; i < n && rc == 0; i++)
        rc = tk_hold_write(fd, &holds[i]);
    if (close(fd) != 0)
        rc = -1;
    return rc;
}

/* ---------------------------------------------------------------- reading */

typedef struct tk_event {
    char type;              /* 'B', 'E' or 'H' */
    tk_hold h;              /* E: end_ns only */
} tk_event;

typedef struct tk_events {
    tk_event *ev;
    size_t n, cap;
    int bad;
} tk_events;

static int tk_events_push(tk_events *es, const tk_event *e)
{
    if (es->n == es->cap) {
        size_t cap = es->cap ? es->cap * 2 : 256;
        tk_event *more = realloc(es->ev, cap * sizeof *more);

        if (!more)
            return -1;
        es->ev = more;
        es->cap = cap;
    }
    es->ev[es->n++] = *e;
    return 0;
}

static void tk_parse_line(tk_events *es, const char *line)
{
    tk_event e;
    char kind = 0;
    int ok = 0;

    memset(&e, 0, sizeof e);
    e.type = line[0];
    switch (line[0]) {
    case 'B':
        ok = sscanf(line, "B %d %d %d %c %lld %lld %lld", &e.h.pid, &e.h.thread, &e.h.seq, &kind,
                    &e.h.sent_ns, &e.h.start_ns, &e.h.value) == 7;
        break;
    case 'E':
        ok = sscanf(line, "E %d %d %d %lld", &e.h.pid, &e.h.thread, &e.h.seq, &e.h.end_ns) == 4;
        break;
    case 'H':
        ok = sscanf(line, "H %d %d %d %c %lld %lld %lld %lld", &e.h.pid, &e.h.thread, &e.h.seq,
                    &kind, &e.h.sent_ns, &e.h.start_ns, &e.h.end_ns, &e.h.value) == 8;
        break;
    case '\0':
    case '#':
        return;     /* empty line, comment */
    default:
        break;
    }
    e.h.kind = kind;
    if (ok && e.type != 'E' && !strchr("XWRS", kind))
        ok = 0;
    if (!ok || tk_events_push(es, &e) != 0)
        es->bad++;
}

static void tk_parse_text(tk_events *es, const char *text)
{
    char line[256];

    while (*text) {
        size_t len = strcspn(text, "\n");

        if (len < sizeof line) {
            memcpy(line, text, len);
            line[len] = '\0';
            tk_parse_line(es, line);
        } else {
            es->bad++;
        }
        text += len;
        if (*text == '\n')
            text++;
    }
}

static int tk_cmp_event(const void *a, const void *b)
{
    const tk_event *x = a, *y = b;

    if (x->h.pid != y->h.pid)
        return x->h.pid < y->h.pid ? -1 : 1;
    if (x->h.thread != y->h.thread)
        return x->h.thread < y->h.thread ? -1 : 1;
    if (x->h.seq != y->h.seq)
        return x->h.seq < y->h.seq ? -1 : 1;
    return (x->type > y->type) - (x->type < y->type);  /* 'B' < 'E' < 'H' */
}

static size_t tk_pair(tk_events *es, long long open_extra_ns, tk_hold **holds, size_t *n, int *bad)
{
    size_t added = 0;
    tk_hold *grown = es->n ? realloc(*holds, (*n + es->n) * sizeof *grown) : *holds;

    if (es->n && !grown) {
        es->bad += (int)es->n;
        es->n = 0;
    } else {
        *holds = grown;
    }
    qsort(es->ev, es->n, sizeof *es->ev, tk_cmp_event);
    for (size_t i = 0; i < es->n; i++) {
        const tk_event *a = &es->ev[i], *r = i + 1 < es->n ? &es->ev[i + 1] : NULL;
        tk_hold *h = &(*holds)[*n];

        if (a->type == 'E') {
            es->bad++;      /* an end without its begin */
            continue;
        }
        *h = a->h;
        h->open = 0;
        if (a->type == 'B') {
            if (r && r->type == 'E' && r->h.pid == a->h.pid && r->h.thread == a->h.thread &&
                r->h.seq == a->h.seq) {
                h->end_ns = r->h.end_ns;
                i++;
            } else {
                long long from = a->h.sent_ns ? a->h.sent_ns : a->h.start_ns;

                h->open = 1;
                h->end_ns = open_extra_ns < 0 ? LLONG_MAX : from + open_extra_ns;
            }
        }
        (*n)++;
        added++;
    }
    if (bad)
        *bad += es->bad;
    free(es->ev);
    return added;
}

size_t tk_holds_parse(const char *text, long long open_extra_ns, tk_hold **holds, size_t *n,
                      int *bad)
{
    tk_events es = {0};

    tk_parse_text(&es, text ? text : "");
    return tk_pair(&es, open_extra_ns, holds, n, bad);
}

size_t tk_holds_read(const char *const *paths, int npaths, long long open_extra_ns,
                     tk_hold **holds, size_t *n, int *bad)
{
    tk_events es = {0};

    for (int i = 0; i < npaths; i++) {
        FILE *f = fopen(paths[i], "r");
        char line[256];

        while (f && fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            tk_parse_line(&es, line);
        }
        if (f)
            fclose(f);
    }
    return tk_pair(&es, open_extra_ns, holds, n, bad);
}

size_t tk_holds_take(const char *path, tk_hold **holds, size_t *n, int *bad)
{
    const char *paths[1] = {path};
    size_t got = tk_holds_read(paths, 1, -1, holds, n, bad);

    unlink(path);
    return got;
}

static int tk_cmp_start(const void *a, const void *b)
{
    const tk_hold *x = a, *y = b;

    if (x->start_ns != y->start_ns)
        return (x->start_ns > y->start_ns) - (x->start_ns < y->start_ns);
    return (x->end_ns > y->end_ns) - (x->end_ns < y->end_ns);
}

void tk_holds_sort(tk_hold *holds, size_t n)
{
    if (n)
        qsort(holds, n, sizeof *holds, tk_cmp_start);
}

/* ---------------------------------------------------------------- checking */

typedef struct tk_edge {
    long long at;
    int delta;              /* +1 / -1 */
    int kind;
    long long permits;
} tk_edge;

static int tk_cmp_edge(const void *a, const void *b)
{
    const tk_edge *x = a, *y = b;

    if (x->at != y->at)
        return (x->at > y->at) - (x->at < y->at);
    return x->delta - y->delta;     /* an end before a start at the same instant */
}

static int tk_exclusive(const tk_hold *h)
{
    return h->kind == TK_HOLD_EXCL || h->kind == TK_HOLD_WRITE;
}

static void tk_peaks(const tk_hold *holds, size_t n, tk_hold_report *r)
{
    tk_edge *e = calloc(2 * n + 1, sizeof *e);
    int cur = 0, readers = 0;
    long long permits = 0;

    if (!e) {
        r->peak = r->peak_readers = -1;
        r->peak_permits = -1;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        e[2 * i] = (tk_edge){holds[i].start_ns, 1, holds[i].kind, holds[i].value};
        e[2 * i + 1] = (tk_edge){holds[i].end_ns, -1, holds[i].kind, holds[i].value};
    }
    qsort(e, 2 * n, sizeof *e, tk_cmp_edge);
    for (size_t i = 0; i < 2 * n; i++) {
        cur += e[i].delta;
        if (e[i].kind == TK_HOLD_READ)
            readers += e[i].delta;
        if (e[i].kind == TK_HOLD_PERMITS)
            permits += e[i].delta * e[i].permits;
        if (cur > r->peak)
            r->peak = cur;
        if (readers > r->peak_readers)
            r->peak_readers = readers;
        if (permits > r->peak_permits)
            r->peak_permits = permits;
    }
    free(e);
}

tk_hold_report tk_holds_check(tk_hold *holds, size_t n, int verbose)
{
    tk_hold_report r;
    long long prev_value = 0;
    int have_prev = 0;

    memset(&r, 0, sizeof r);
    r.holds = n;
    tk_holds_sort(holds, n);
    for (size_t i = 0; i < n; i++) {
        const tk_hold *a = &holds[i];

        if (a->open)
            r.open++;
        else if (a->end_ns - a->start_ns > r.longest_ns)
            r.longest_ns = a->end_ns - a->start_ns;
        /* Sorted by start: only later holds that start before a ends can overlap it. */
        for (size_t j = i + 1; j < n && holds[j].start_ns < a->end_ns; j++) {
            const tk_hold *b = &holds[j];

            if (!tk_exclusive(a) && !tk_exclusive(b))
                continue;
            if (!(b->start_ns < a->end_ns && a->start_ns < b->end_ns))
                continue;
            if (verbose && r.conflicts < 5)
                fprintf(stderr, "  overlap: pid %d/%d (%c) [%.3f, %.3f] ms and pid %d/%d (%c) "
                        "[%.3f, %.3f] ms\n", a->pid, a->thread, a->kind, a->start_ns / 1e6,
                        a->end_ns / 1e6, b->pid, b->thread, b->kind, b->start_ns / 1e6,
                        b->end_ns / 1e6);
            r.conflicts++;
        }
        if (a->value != 0 && a->kind != TK_HOLD_PERMITS) {
            if (have_prev && a->value <= prev_value) {
                if (verbose && r.regressions < 5)
                    fprintf(stderr, "  token regression: pid %d/%d got %lld after %lld\n", a->pid,
                            a->thread, a->value, prev_value);
                r.regressions++;
            }
            prev_value = a->value;
            have_prev = 1;
        }
    }
    tk_peaks(holds, n, &r);
    return r;
}

const char *tk_hold_report_str(const tk_hold_report *r, char *buf, size_t len)
{
    snprintf(buf, len, "%zu holds (%zu open), %ld conflicts, %ld token regressions, peak %d "
             "(readers %d, permits %lld)", r->holds, r->open, r->conflicts, r->regressions, r->peak,
             r->peak_readers, r->peak_permits);
    return buf;
}

/* ---------------------------------------------------------------- from sh */

int tk_holdlog_main(int argc, char **argv)
{
    int fd, rc, id;
    long long now;

    if (argc < 2 || strcmp(argv[1], "--tk-hold") != 0)
        return -1;
    if ((argc != 6 && argc != 7) || strlen(argv[3]) != 1 || !strchr("XWRS", argv[3][0])) {
        fprintf(stderr, "usage: %s --tk-hold LOG X|W|R|S begin|end ID [VALUE]\n", argv[0]);
        return 1;
    }
    now = tk_mono_ns();
    id = atoi(argv[5]);
    fd = tk_holdlog_open(argv[2]);
    if (fd < 0)
        return 1;
    if (strcmp(argv[4], "begin") == 0) {
        char line[160];
        long long value = argc == 7 ? atoll(argv[6]) : argv[3][0] == TK_HOLD_PERMITS ? 1 : 0;
        int len = snprintf(line, sizeof line, "B %d 0 0 %c 0 %lld %lld\n", id, argv[3][0], now,
                           value);

        rc = tk_write_line(fd, line, len);
    } else if (strcmp(argv[4], "end") == 0) {
        char line[96];
        int len = snprintf(line, sizeof line, "E %d 0 0 %lld\n", id, now);

        rc = tk_write_line(fd, line, len);
    } else {
        rc = -1;
    }
    close(fd);
    return rc == 0 ? 0 : 1;
}
