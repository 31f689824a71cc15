/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nem_check.c - see nem_check.h.
 */
#include "nem_check.h"
#include "holdlog.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const nem_rule_names[NEM_RULES] = {"overlap", "permits", "dup-token", "dup-term",
                                               "token-back", "fenced-write", "resource-order",
                                               "size", "early-open", "bad-line"};

#define NEM_NAMES 64
#define NEM_NAME_LEN 96
#define NEM_SHOW 3          /* violations shown per rule when verbose */

#define NEM_MULTI 8         /* names in one A line (a faster MultiLock's values) */

typedef struct acq {
    int pid, thr, seq, name, kind, has_end;
    int owner;                  /* the holder id's label (an A line's 10th field); -1: none */
    char how;
    long long sent, start, lease_ms, value, end;
    long long renewed;          /* the latest end of a renewal's lease (N lines); 0: none */
} acq;

typedef struct renewal {
    int pid, thr;
    long long sent, lease_ms;
} renewal;

typedef struct sizel {
    int name;
    long long size;
} sizel;

typedef struct endl {
    int pid, thr, seq;
    char how;
    long long end;
} endl_;

typedef struct wrec {
    int pid, thr, seq, res;
    char out;
    long long token, sent, done;
} wrec;

typedef struct rent {
    int res;
    long long idx, token;
} rent;

typedef struct latchl {
    int pid, thr, name;
    char out;                   /* D: A counted, U unknown; O: 'O' */
    long long sent, done;
} latchl;

typedef struct logs {
    char names[NEM_NAMES][NEM_NAME_LEN];
    int nnames;
    char owners[NEM_NAMES][NEM_NAME_LEN];   /* holder id labels: holds of one are one holder */
    int nowners;
    long long limit[NEM_NAMES];     /* P lines; -1: none */
    acq *a;
    size_t na, ca;
    endl_ *e;
    size_t ne, ce;
    wrec *w;
    size_t nw, cw;
    rent *r;
    size_t nr, cr;
    renewal *n;
    size_t nn, cn;
    sizel *c;
    size_t nc, cc;
    long unknown[NEM_NAMES];        /* U lines: calls on a count nobody can settle */
    long long count[NEM_NAMES];     /* K lines: a latch's count; -1: none */
    latchl *d, *o;                  /* D and O lines */
    size_t nd, cd, no, co;
    long bad;
} logs;

#define PUSH(arr, n, cap, item)                                                  \
    do {                                                                         \
        if ((n) == (cap)) {                                                      \
            size_t c_ = (cap) ? (cap) * 2 : 256;                                 \
            void *m_ = realloc((arr), c_ * sizeof *(arr));                       \
            if (!m_) {                                                           \
                L->bad++;                                                        \
                break;                                                           \
            }                                                                    \
            (arr) = m_;                                                          \
            (cap) = c_;                                                          \
        }                                                                        \
        (arr)[(n)++] = (item);                                                   \
    } while (0)

static int intern(logs *L, const char *name)
{
    for (int i = 0; i < L->nnames; i++)
        if (strcmp(L->names[i], name) == 0)
            return i;
    if (L->nnames == NEM_NAMES)
        return -1;
    snprintf(L->names[L->nnames], NEM_NAME_LEN, "%s", name);
    L->limit[L->nnames] = -1;
    L->count[L->nnames] = -1;
    return L->nnames++;
}

/* The index of a holder id label (an A line's 10th field), or -1. */
static int intern_owner(logs *L, const char *owner)
{
    for (int i = 0; i < L->nowners; i++)
        if (strcmp(L->owners[i], owner) == 0)
            return i;
    if (L->nowners == NEM_NAMES)
        return -1;
    snprintf(L->owners[L->nowners], NEM_NAME_LEN, "%s", owner);
    return L->nowners++;
}

static void parse_line(logs *L, const char *line)
{
    char name[NEM_NAME_LEN], k = 0, c = 0;
    int ok = 0;

    switch (line[0]) {
    case 'A': {
        acq a;
        char *save = NULL, *one, owner[NEM_NAME_LEN];
        int m = 0, got;

        memset(&a, 0, sizeof a);
        got = sscanf(line, "A %d %d %d %95s %c %lld %lld %lld %lld %95s", &a.pid, &a.thr, &a.seq,
                     name, &k, &a.sent, &a.start, &a.lease_ms, &a.value, owner);
        ok = (got == 9 || got == 10) && k && strchr("XLSRW", k);
        a.kind = k;
        a.owner = got == 10 ? intern_owner(L, owner) : -1;
        ok = ok && (got == 9 || a.owner >= 0);
        /* name,name,...: one hold of each (the values a faster MultiLock took at once) */
        for (one = ok ? strtok_r(name, ",", &save) : NULL; ok && one;
             one = strtok_r(NULL, ",", &save)) {
            ok = ++m <= NEM_MULTI && (a.name = intern(L, one)) >= 0;
            if (ok)
                PUSH(L->a, L->na, L->ca, a);
        }
        ok = ok && m > 0;
        break;
    }
    case 'N': {
        renewal n;

        ok = sscanf(line, "N %d %d %lld %lld", &n.pid, &n.thr, &n.sent, &n.lease_ms) == 4 &&
             n.lease_ms > 0;
        if (ok)
            PUSH(L->n, L->nn, L->cn, n);
        break;
    }
    case 'C': {
        sizel z;

        ok = sscanf(line, "C %95s %lld", name, &z.size) == 2 && (z.name = intern(L, name)) >= 0;
        if (ok)
            PUSH(L->c, L->nc, L->cc, z);
        break;
    }
    case 'U': {
        int pid, thr, i;

        ok = sscanf(line, "U %d %d %95s", &pid, &thr, name) == 3 && (i = intern(L, name)) >= 0;
        if (ok)
            L->unknown[i]++;
        break;
    }
    case 'E': {
        endl_ e;

        ok = sscanf(line, "E %d %d %d %lld %c", &e.pid, &e.thr, &e.seq, &e.end, &c) == 5;
        e.how = c;
        if (ok)
            PUSH(L->e, L->ne, L->ce, e);
        break;
    }
    case 'W': {
        wrec w;

        ok = sscanf(line, "W %d %d %d %95s %lld %lld %lld %c", &w.pid, &w.thr, &w.seq, name,
                    &w.token, &w.sent, &w.done, &c) == 8 && strchr("AFU", c) &&
             (w.res = intern(L, name)) >= 0;
        w.out = c;
        if (ok)
            PUSH(L->w, L->nw, L->cw, w);
        break;
    }
    case 'R': {
        rent r;

        ok = sscanf(line, "R %95s %lld %lld", name, &r.idx, &r.token) == 3 &&
             (r.res = intern(L, name)) >= 0;
        if (ok)
            PUSH(L->r, L->nr, L->cr, r);
        break;
    }
    case 'P': {
        long long n;
        int i;

        ok = sscanf(line, "P %95s %lld", name, &n) == 2 && (i = intern(L, name)) >= 0;
        if (ok)
            L->limit[i] = n;
        break;
    }
    case 'K': {
        long long n;
        int i;

        ok = sscanf(line, "K %95s %lld", name, &n) == 2 && n > 0 && (i = intern(L, name)) >= 0;
        if (ok)
            L->count[i] = n;
        break;
    }
    case 'D':
    case 'O': {
        latchl d;

        memset(&d, 0, sizeof d);
        if (line[0] == 'D') {
            ok = sscanf(line, "D %d %d %95s %lld %lld %c", &d.pid, &d.thr, name, &d.sent,
                        &d.done, &c) == 6 && strchr("AU", c) && (d.name = intern(L, name)) >= 0;
            d.out = c;
            if (ok)
                PUSH(L->d, L->nd, L->cd, d);
        } else {
            ok = sscanf(line, "O %d %d %95s %lld %lld", &d.pid, &d.thr, name, &d.sent,
                        &d.done) == 5 && (d.name = intern(L, name)) >= 0;
            d.out = 'O';
            if (ok)
                PUSH(L->o, L->no, L->co, d);
        }
        break;
    }
    case '#':
    case '\0':
        return;
    default:
        break;
    }
    if (!ok) {
        L->bad++;
        fprintf(stderr, "  bad line: %.120s\n", line);
    }
}

static void parse_text(logs *L, const char *text)
{
    char line[512];

    while (*text) {
        size_t len = strcspn(text, "\n");

        if (len < sizeof line) {
            memcpy(line, text, len);
            line[len] = '\0';
            parse_line(L, line);
        } else {
            L->bad++;
        }
        text += len;
        if (*text == '\n')
            text++;
    }
}

/* ---------------------------------------------------------------- sorting */

static int key_cmp(int p1, int t1, int s1, int p2, int t2, int s2)
{
    if (p1 != p2)
        return p1 < p2 ? -1 : 1;
    if (t1 != t2)
        return t1 < t2 ? -1 : 1;
    return (s1 > s2) - (s1 < s2);
}

static int acq_key(const void *x, const void *y)
{
    const acq *a = x, *b = y;

    return key_cmp(a->pid, a->thr, a->seq, b->pid, b->thr, b->seq);
}

/* acq_key, then the name (an A line of several names is several records of one key). */
static int acq_key_name(const void *x, const void *y)
{
    const acq *a = x, *b = y;
    int c = acq_key(a, b);

    return c ? c : (a->name > b->name) - (a->name < b->name);
}

static int renewal_key(const void *x, const void *y)
{
    const renewal *a = x, *b = y;
    int c = key_cmp(a->pid, a->thr, 0, b->pid, b->thr, 0);

    return c ? c : (a->sent > b->sent) - (a->sent < b->sent);
}

static int end_key(const void *x, const void *y)
{
    const endl_ *a = x, *b = y;

    return key_cmp(a->pid, a->thr, a->seq, b->pid, b->thr, b->seq);
}

static int cmp_ll(long long a, long long b)
{
    return (a > b) - (a < b);
}

/* Pointers to acquisitions, sorted by one field. */
static int ptr_by_value(const void *x, const void *y)
{
    const acq *a = *(const acq *const *)x, *b = *(const acq *const *)y;

    return a->value != b->value ? cmp_ll(a->value, b->value) : cmp_ll(a->start, b->start);
}

static int ptr_by_start(const void *x, const void *y)
{
    const acq *a = *(const acq *const *)x, *b = *(const acq *const *)y;

    return cmp_ll(a->start, b->start);
}

static int w_by_done(const void *x, const void *y)
{
    const wrec *a = *(const wrec *const *)x, *b = *(const wrec *const *)y;

    return cmp_ll(a->done, b->done);
}

static int r_by_idx(const void *x, const void *y)
{
    const rent *a = x, *b = y;

    return a->res != b->res ? a->res - b->res : cmp_ll(a->idx, b->idx);
}

/* ---------------------------------------------------------------- the rules */

static void violation(nem_report *rep, int rule, int verbose, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void violation(nem_report *rep, int rule, int verbose, const char *fmt, ...)
{
    va_list ap;

    if (verbose && rep->count[rule] < NEM_SHOW) {
        fprintf(stderr, "  %s: ", nem_rule_names[rule]);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
    }
    rep->count[rule]++;
}

/* qsort, but never with a NULL base: an empty array (no renewals, no holds) may have none. */
static void sort_n(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    if (n > 1)
        qsort(base, n, size, cmp);
}

/* Each N line to the hold of its thread sent last before it (a thread's holds follow each
 * other, and an entry leaves the watchdog before its release is sent): renewed, the latest end
 * of a renewed lease. */
static void pair_renewals(logs *L)
{
    size_t i = 0;

    sort_n(L->n, L->nn, sizeof *L->n, renewal_key);
    for (size_t j = 0; j < L->nn; j++) {
        const renewal *r = &L->n[j];
        size_t best = (size_t)-1;

        /* L->a is in (pid, thr, seq) order; i: the first record of the renewal's thread */
        while (i < L->na && (L->a[i].pid < r->pid ||
                             (L->a[i].pid == r->pid && L->a[i].thr < r->thr)))
            i++;
        for (size_t k = i; k < L->na && L->a[k].pid == r->pid && L->a[k].thr == r->thr &&
                           L->a[k].sent <= r->sent; k++)
            best = k;
        if (best == (size_t)-1) {
            L->bad++;
            fprintf(stderr, "  bad line: a renewal without a hold before it: pid %d/%d at "
                    "%.3f ms\n", r->pid, r->thr, r->sent / 1e6);
            continue;
        }
        /* every record of that hold (several names) */
        for (size_t k = best + 1; k-- > i && acq_key(&L->a[k], &L->a[best]) == 0;)
            if (r->sent + r->lease_ms * 1000000LL > L->a[k].renewed)
                L->a[k].renewed = r->sent + r->lease_ms * 1000000LL;
    }
}

static void pair_ends(logs *L, nem_report *rep, int verbose)
{
    size_t i = 0, j = 0;

    sort_n(L->a, L->na, sizeof *L->a, acq_key_name);
    sort_n(L->e, L->ne, sizeof *L->e, end_key);
    for (size_t k = 1; k < L->na; k++)
        if (acq_key_name(&L->a[k - 1], &L->a[k]) == 0)
            violation(rep, NEM_BAD_LINE, verbose, "two A lines for pid %d/%d seq %d", L->a[k].pid,
                      L->a[k].thr, L->a[k].seq);
    while (j < L->ne) {
        int c = i < L->na ? key_cmp(L->a[i].pid, L->a[i].thr, L->a[i].seq, L->e[j].pid,
                                    L->e[j].thr, L->e[j].seq) : 1;

        if (c < 0) {
            i++;
        } else if (c > 0) {
            violation(rep, NEM_BAD_LINE, verbose, "an E line without its A: pid %d/%d seq %d",
                      L->e[j].pid, L->e[j].thr, L->e[j].seq);
            j++;
        } else {
            /* every record of the key (several names) */
            for (; i < L->na && key_cmp(L->a[i].pid, L->a[i].thr, L->a[i].seq, L->e[j].pid,
                                        L->e[j].thr, L->e[j].seq) == 0; i++) {
                L->a[i].has_end = 1;
                L->a[i].end = L->e[j].end;
                L->a[i].how = L->e[j].how;
            }
            j++;
        }
    }
    pair_renewals(L);
    for (i = 0; i < L->na; i++) {
        acq *a = &L->a[i];
        long long deadline = a->lease_ms > 0 ? a->sent + a->lease_ms * 1000000LL : LLONG_MAX;

        if (a->renewed > deadline && deadline != LLONG_MAX)
            deadline = a->renewed;

        if (!a->has_end || a->end > deadline)
            a->end = deadline;
    }
}

/* Holds of one holder id label (owner[i] >= 0) are one holder: those of a label that overlap
 * are merged into one hold [earliest start, latest end), so that only holds of different
 * holders can conflict. h[0..n) and owner[0..n) in step; returns the new n. */
static size_t merge_owners(tk_hold *h, int *owner, size_t n)
{
    size_t out = 0;
    int merged;

    do {    /* until no two holds of one label overlap (a grown hold may meet an earlier one) */
        merged = 0;
        for (size_t i = 0; i < n; i++) {
            for (size_t j = i + 1; owner[i] >= 0 && j < n; j++) {
                if (owner[j] != owner[i] || h[j].start_ns >= h[i].end_ns ||
                    h[i].start_ns >= h[j].end_ns)
                    continue;
                if (h[j].start_ns < h[i].start_ns)
                    h[i].start_ns = h[j].start_ns;
                if (h[j].end_ns > h[i].end_ns)
                    h[i].end_ns = h[j].end_ns;
                owner[j] = -2;      /* folded into h[i] */
                merged = 1;
            }
        }
    } while (merged);
    for (size_t i = 0; i < n; i++) {
        if (owner[i] == -2)
            continue;
        h[out] = h[i];
        owner[out++] = owner[i];
    }
    return out;
}

static void check_lock(logs *L, int name, nem_report *rep, int verbose)
{
    size_t n = 0, nv = 0;
    tk_hold *h = calloc(L->na + 1, sizeof *h);
    int *owner = calloc(L->na + 1, sizeof *owner);
    const acq **v = calloc(L->na + 1, sizeof *v);
    int kind = 0;
    long long *pm;

    if (!h || !v || !owner) {
        free(h);
        free(v);
        free(owner);
        rep->count[NEM_BAD_LINE]++;
        return;
    }
    for (size_t i = 0; i < L->na; i++) {
        const acq *a = &L->a[i];

        if (a->name != name)
            continue;
        kind = a->kind;
        rep->holds++;
        if (a->value > 0 && (a->kind == 'X' || a->kind == 'L'))
            v[nv++] = a;
        if (a->end <= a->start)
            continue;       /* empty: its lease had run out when the acquire returned */
        h[n].pid = a->pid;
        h[n].thread = a->thr;
        h[n].seq = a->seq;
        h[n].kind = a->kind == 'S' ? TK_HOLD_PERMITS : a->kind == 'R' ? TK_HOLD_READ
                    : a->kind == 'W' ? TK_HOLD_WRITE : TK_HOLD_EXCL;
        h[n].sent_ns = a->sent;
        h[n].start_ns = a->start;
        h[n].end_ns = a->end;
        h[n].value = a->kind == 'S' ? a->value : 0;
        owner[n] = a->owner;
        n++;
    }
    if (!kind)
        goto out;
    {
        size_t before = n;

        n = merge_owners(h, owner, n);
        rep->merged += (long)(before - n);
    }
    rep->locks++;
    {
        tk_hold_report hr = tk_holds_check(h, n, verbose);

        if (kind == 'S') {
            if (L->limit[name] >= 0 && hr.peak_permits > L->limit[name])
                violation(rep, NEM_PERMITS, verbose, "%s: %lld permits held at once, %lld exist",
                          L->names[name], hr.peak_permits, L->limit[name]);
        } else {
            for (long c = 0; c < hr.conflicts; c++)
                violation(rep, NEM_OVERLAP, 0, "%s", L->names[name]);
            if (verbose && hr.conflicts)
                fprintf(stderr, "  overlap: %s: %ld overlapping pairs\n", L->names[name],
                        hr.conflicts);
        }
    }
    /* One token per acquisition, one term per leader. */
    sort_n(v, nv, sizeof *v, ptr_by_value);
    for (size_t i = 1; i < nv; i++)
        if (v[i]->value == v[i - 1]->value)
            violation(rep, v[i]->kind == 'L' ? NEM_DUP_TERM : NEM_DUP_TOKEN, verbose,
                      "%s: %lld handed to pid %d/%d seq %d (start %.3f ms) and pid %d/%d seq %d "
                      "(start %.3f ms)", L->names[name], v[i]->value, v[i - 1]->pid,
                      v[i - 1]->thr, v[i - 1]->seq, v[i - 1]->start / 1e6, v[i]->pid, v[i]->thr,
                      v[i]->seq, v[i]->start / 1e6);
    /* Nothing goes back: an acquisition sent after another returned has a larger value. */
    sort_n(v, nv, sizeof *v, ptr_by_start);
    pm = calloc(nv + 1, sizeof *pm);
    for (size_t i = 0; pm && i < nv; i++)
        pm[i] = i && pm[i - 1] > v[i]->value ? pm[i - 1] : v[i]->value;
    for (size_t i = 0; pm && i < nv; i++) {
        size_t lo = 0, hi = nv;     /* how many returned before v[i] was sent */

        while (lo < hi) {
            size_t mid = (lo + hi) / 2;

            if (v[mid]->start < v[i]->sent)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && pm[lo - 1] > v[i]->value)
            violation(rep, NEM_TOKEN_BACK, verbose, "%s: pid %d/%d seq %d got %lld, sent at "
                      "%.3f ms after %lld had been handed out", L->names[name], v[i]->pid,
                      v[i]->thr, v[i]->seq, v[i]->value, v[i]->sent / 1e6, pm[lo - 1]);
    }
    free(pm);
out:
    free(h);
    free(owner);
    free(v);
}

static void check_resource(logs *L, int res, nem_report *rep, int verbose)
{
    const wrec **w = calloc(L->nw + 1, sizeof *w);
    long long *pm = calloc(L->nw + 1, sizeof *pm);
    size_t n = 0;

    if (!w || !pm) {
        free(w);
        free(pm);
        rep->count[NEM_BAD_LINE]++;
        return;
    }
    for (size_t i = 0; i < L->nw; i++)
        if (L->w[i].res == res && L->w[i].out == 'A')
            w[n++] = &L->w[i];
    sort_n(w, n, sizeof *w, w_by_done);
    for (size_t i = 0; i < n; i++)
        pm[i] = i && pm[i - 1] > w[i]->token ? pm[i - 1] : w[i]->token;
    for (size_t i = 0; i < n; i++) {
        size_t lo = 0, hi = n;      /* accepted writes answered before w[i] was sent */

        while (lo < hi) {
            size_t mid = (lo + hi) / 2;

            if (w[mid]->done < w[i]->sent)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo > 0 && pm[lo - 1] > w[i]->token)
            violation(rep, NEM_FENCED_WRITE, verbose, "%s: pid %d/%d seq %d's write of token "
                      "%lld accepted, sent at %.3f ms after %lld had been accepted",
                      L->names[res], w[i]->pid, w[i]->thr, w[i]->seq, w[i]->token,
                      w[i]->sent / 1e6, pm[lo - 1]);
    }
    free(w);
    free(pm);
}

static void check_all(logs *L, int verbose, nem_report *rep)
{
    memset(rep, 0, sizeof *rep);
    pair_ends(L, rep, verbose);
    for (int i = 0; i < L->nnames; i++)
        check_lock(L, i, rep, verbose);
    for (size_t i = 0; i < L->nw; i++) {
        rep->writes++;
        rep->accepted += L->w[i].out == 'A';
        rep->refused += L->w[i].out == 'F';
        rep->unknown += L->w[i].out == 'U';
    }
    {
        /* Every W line belongs to an acquisition (its pid, thread and seq). */
        for (size_t i = 0; i < L->nw; i++) {
            acq key;

            memset(&key, 0, sizeof key);
            key.pid = L->w[i].pid;
            key.thr = L->w[i].thr;
            key.seq = L->w[i].seq;
            if (!bsearch(&key, L->a, L->na, sizeof *L->a, acq_key))
                violation(rep, NEM_BAD_LINE, verbose, "a W line without its A: pid %d/%d seq %d",
                          key.pid, key.thr, key.seq);
        }
    }
    for (int i = 0; i < L->nnames; i++)
        check_resource(L, i, rep, verbose);
    sort_n(L->r, L->nr, sizeof *L->r, r_by_idx);
    for (size_t i = 0; i < L->nr; i++) {
        long long max = 0;
        size_t j = i;

        for (; j < L->nr && L->r[j].res == L->r[i].res; j++) {
            rep->resource_entries++;
            if (L->r[j].token < max)
                violation(rep, NEM_RESOURCE_ORDER, verbose, "%s: entry %lld has token %lld "
                          "after %lld", L->names[L->r[j].res], L->r[j].idx, L->r[j].token, max);
            else
                max = L->r[j].token;
        }
        i = j - 1;
    }
    /* A count-only semaphore's size at the end (C lines): its permits, less at most one for
     * each call whose outcome nobody could settle (U lines). */
    for (size_t i = 0; i < L->nc; i++) {
        const sizel *z = &L->c[i];
        long long lim = L->limit[z->name];

        if (lim < 0)
            violation(rep, NEM_BAD_LINE, verbose, "a C line for %s without its P line",
                      L->names[z->name]);
        else if (z->size > lim || z->size < lim - L->unknown[z->name])
            violation(rep, NEM_SIZE, verbose, "%s: %lld permits at the end, %lld exist (%ld calls "
                      "of unknown outcome)", L->names[z->name], z->size, lim,
                      L->unknown[z->name]);
    }
    /* A latch's await released (O) only once its count of count-downs had been sent before the
     * release was seen: each count-down runs after it is sent, and one of unknown outcome may
     * have counted. */
    rep->countdowns = (long)L->nd;
    rep->opens = (long)L->no;
    for (size_t i = 0; i < L->no; i++) {
        const latchl *o = &L->o[i];
        long long k = L->count[o->name], sent = 0;

        if (k < 0) {
            violation(rep, NEM_BAD_LINE, verbose, "an O line for %s without its K line",
                      L->names[o->name]);
            continue;
        }
        for (size_t j = 0; j < L->nd; j++)
            sent += L->d[j].name == o->name && L->d[j].sent < o->done;
        if (sent < k)
            violation(rep, NEM_EARLY_OPEN, verbose, "%s: pid %d/%d released at %lld with %lld of "
                      "its %lld count-downs sent", L->names[o->name], o->pid, o->thr, o->done,
                      sent, k);
    }
    rep->renewals = (long)L->nn;
    for (long b = 0; b < L->bad; b++)
        rep->count[NEM_BAD_LINE]++;
    free(L->a);
    free(L->e);
    free(L->w);
    free(L->r);
    free(L->n);
    free(L->c);
    free(L->d);
    free(L->o);
    free(L);
}

static logs *logs_new(void)
{
    return calloc(1, sizeof(logs));
}

void nem_check_files(const char *const *paths, int n, int verbose, nem_report *rep)
{
    logs *L = logs_new();

    memset(rep, 0, sizeof *rep);
    if (!L) {
        rep->count[NEM_BAD_LINE] = 1;
        return;
    }
    for (int i = 0; i < n; i++) {
        FILE *f = fopen(paths[i], "r");
        char line[512];

        if (!f) {
            fprintf(stderr, "  cannot read %s\n", paths[i]);
            L->bad++;
            continue;
        }
        while (fgets(line, sizeof line, f)) {
            line[strcspn(line, "\n")] = '\0';
            parse_line(L, line);
        }
        fclose(f);
    }
    check_all(L, verbose, rep);
}

void nem_check_text(const char *text, int verbose, nem_report *rep)
{
    logs *L = logs_new();

    memset(rep, 0, sizeof *rep);
    if (!L) {
        rep->count[NEM_BAD_LINE] = 1;
        return;
    }
    parse_text(L, text);
    check_all(L, verbose, rep);
}

int nem_rule_index(const char *name)
{
    for (int i = 0; i < NEM_RULES; i++)
        if (strcmp(name, nem_rule_names[i]) == 0)
            return i;
    return -1;
}

long nem_report_total(const nem_report *rep)
{
    long t = 0;

    for (int i = 0; i < NEM_RULES; i++)
        t += rep->count[i];
    return t;
}

const char *nem_report_str(const nem_report *rep, char *buf, size_t len)
{
    size_t off = (size_t)snprintf(buf, len, "%ld holds on %ld locks, %ld renewals, %ld writes "
                                  "(%ld accepted, %ld refused, %ld unknown), %ld resource "
                                  "entries, %ld holds merged into one of the same holder id, "
                                  "%ld latch count-downs and %ld releases:",
                                  rep->holds, rep->locks, rep->renewals, rep->writes,
                                  rep->accepted, rep->refused, rep->unknown,
                                  rep->resource_entries, rep->merged, rep->countdowns,
                                  rep->opens);

    for (int i = 0; i < NEM_RULES && off < len; i++)
        off += (size_t)snprintf(buf + off, len - off, " %s=%ld", nem_rule_names[i],
                                rep->count[i]);
    return buf;
}
