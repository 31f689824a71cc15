/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top_read.c - rlk top's steps 4 to 6 (top.h): the details of the rows to
 * show, pipelined per node, their order, a whole refresh, and what the views
 * count.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "kinds/names.h"
#include "kinds/waitgraph.h"
#include "kind_mark.h"
#include "top.h"

/* ---------------------------------------------------------------- the holders */

/* Holders from a field/value array; 0, or -1 when the hash is no lock. */
static int top_holders(rlk_top_row *r, redisReply *all)
{
    size_t n = 0;

    free(r->holders);
    r->holders = calloc(all->elements / 2 + 1, sizeof *r->holders);
    if (!r->holders)
        return -1;
    r->mode = NULL;
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        const redisReply *f = all->element[k], *v = all->element[k + 1];
        rlk_ik_holder *h = &r->holders[n];
        int ok;

        if (f->type != REDIS_REPLY_STRING || v->type != REDIS_REPLY_STRING)
            return -1;
        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0) {
            r->mode = v->str;
            continue;
        }
        h->count = rlk_top_parse_ll(v->str, v->len, &ok);
        if (!ok || h->count <= 0)
            return -1;
        h->owner = f->str;
        h->owner_len = f->len;
        n++;
    }
    r->nholders = n;
    for (size_t k = 0; r->mode && k < n; k++) {
        rlk_ik_holder *h = &r->holders[k];
        int w = h->owner_len > 6 && memcmp(h->owner + h->owner_len - 6, ":write", 6) == 0;

        h->mode = w ? "write" : "read";
        h->owner_len -= w ? 6 : 0;
    }
    return 0;
}

/* ---------------------------------------------------------------- steps 4, 5: details */

typedef struct top_batch {
    int node;
    size_t n, cap;
    int *argc;
    const char ***argv;
    char **owned;               /* key strings to free */
    size_t nowned;
    rlk_top_row **row;              /* the row of each command */
    int *what;                  /* what each reply is for */
    int no_hrandfield;          /* HGETALL for the holders (before Redis 6.2) */
} top_batch;

enum {
    TOP_W_QUEUED, TOP_W_NEXT, TOP_W_FAIRLEN, TOP_W_TTL, TOP_W_HOLDERS, TOP_W_TOKEN, TOP_W_FAIRQ,
    TOP_W_FAIRT, TOP_W_GROUP, TOP_W_MARK
};

static void top_batch_free(top_batch *b)
{
    for (size_t i = 0; i < b->n; i++)
        free((void *)b->argv[i]);
    for (size_t i = 0; i < b->nowned; i++)
        free(b->owned[i]);
    free(b->argc);
    free(b->argv);
    free(b->owned);
    free(b->row);
    free(b->what);
    memset(b, 0, sizeof *b);
}

/* One column of the batch grown to cap entries of size bytes: the new array, or, when this
 * realloc or an earlier one (*failed) failed, the old one, unchanged, with *failed set. */
static void *top_grow(void *p, size_t cap, size_t size, int *failed)
{
    void *q = *failed ? NULL : realloc(p, cap * size);

    if (!q) {
        *failed = 1;
        return p;
    }
    return q;
}

/* Adds a command (argv copied; key, when set, is owned by the batch). */
static int top_batch_add(top_batch *b, rlk_top_row *row, int what, char *key, int argc, ...)
{
    va_list ap;
    const char **v;

    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        int failed = 0;

        b->argc = top_grow(b->argc, cap, sizeof *b->argc, &failed);
        b->argv = top_grow(b->argv, cap, sizeof *b->argv, &failed);
        b->row = top_grow(b->row, cap, sizeof *b->row, &failed);
        b->what = top_grow(b->what, cap, sizeof *b->what, &failed);
        b->owned = top_grow(b->owned, cap, sizeof *b->owned, &failed);
        if (failed) {
            free(key);
            return -1;
        }
        b->cap = cap;
    }
    if (!(v = calloc((size_t)argc, sizeof *v))) {
        free(key);
        return -1;
    }
    va_start(ap, argc);
    for (int i = 0; i < argc; i++) {
        const char *a = va_arg(ap, const char *);

        v[i] = a ? a : key;
    }
    va_end(ap);
    if (key)
        b->owned[b->nowned++] = key;
    b->argc[b->n] = argc;
    b->argv[b->n] = v;
    b->row[b->n] = row;
    b->what[b->n] = what;
    b->n++;
    return 0;
}

/* A field of a faster-MultiLock group's shape: a value (no ':') or a
 * holder's `value:holder:expire_time` / `:lock_count`. */
static int top_fm_field(const redisReply *f)
{
    static const char *const ends[2] = {":expire_time", ":lock_count"};

    if (f->type != REDIS_REPLY_STRING)
        return 0;
    if (!memchr(f->str, ':', f->len))
        return 1;
    for (int i = 0; i < 2; i++) {
        size_t n = strlen(ends[i]);

        if (f->len > n && memcmp(f->str + f->len - n, ends[i], n) == 0)
            return 1;
    }
    return 0;
}

/* A hash that is not a lock's: a faster-MultiLock group (rlk inspect's
 * parse, inspect_read.c)? Its values (the reply kept), and as holders each
 * distinct holder of a live value with the number of its values: 0. A full
 * HRANDFIELD sample (RLK_TOP_SAMPLE fields) of a group's shape may leave values
 * out: fm_more, read whole by HGETALL (TOP_W_GROUP): 0, the reply freed.
 * -1: not a group. */
static int top_group(rlk_top_state *s, rlk_top_row *r, redisReply *rep, int what)
{
    rlk_ik_value *v = NULL;
    size_t n = 0, nh = 0;
    int shaped = rep->type == REDIS_REPLY_ARRAY;

    r->mode = NULL;     /* top_holders' reading of a value named "mode" */
    for (size_t k = 0; shaped && k + 1 < rep->elements; k += 2)
        shaped = top_fm_field(rep->element[k]);
    if (!shaped)
        return -1;
    if (what == TOP_W_HOLDERS && rep->elements >= 2 * RLK_TOP_SAMPLE) {
        r->kind = RLK_IK_FASTMULTI;
        r->fm_more = 1;
        freeReplyObject(rep);
        return 0;
    }
    if (rlk_ik_fastmulti_values(rep, s->now_ms, &v, &n) != RLK_OK)
        return -1;
    free(r->holders);
    if (!(r->holders = calloc(n + 1, sizeof *r->holders))) {
        free(v);
        return -1;
    }
    for (size_t k = 0; k < n; k++) {
        size_t j;

        if (v[k].expire_in_ms <= 0)
            continue;   /* lapsed: free to take */
        for (j = 0; j < nh && !(r->holders[j].owner_len == v[k].holder_len &&
                                memcmp(r->holders[j].owner, v[k].holder, v[k].holder_len) == 0);
             j++)
            ;
        if (j == nh) {
            r->holders[nh].owner = v[k].holder;
            r->holders[nh++].owner_len = v[k].holder_len;
        }
        r->holders[j].count++;
    }
    free(r->values);
    r->values = v;
    r->nvalues = n;
    r->nholders = nh;
    r->kind = RLK_IK_FASTMULTI;
    r->fm_more = 0;
    if (r->hreply)
        freeReplyObject(r->hreply);
    r->hreply = rep;
    return 0;
}

static void top_take(rlk_top_state *s, rlk_top_row *r, int what, redisReply *rep)
{
    int ok;

    switch (what) {
    case TOP_W_QUEUED:
        r->queued = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
        break;
    case TOP_W_FAIRLEN:
        r->fair_queued = rep->type == REDIS_REPLY_INTEGER ? rep->integer : 0;
        if (r->fair_queued > 0 && r->hash_lock)
            r->kind = RLK_IK_FAIR;
        break;
    case TOP_W_NEXT:
        if (rep->type == REDIS_REPLY_STRING)
            snprintf(r->reserved, sizeof r->reserved, "%.*s", (int)rep->len, rep->str);
        break;
    case TOP_W_TTL:
        r->ttl_ms = rep->type == REDIS_REPLY_INTEGER ? rep->integer : -3;
        break;
    case TOP_W_HOLDERS:
        if (rep->type == REDIS_REPLY_ERROR && strncmp(rep->str, "ERR unknown command", 19) == 0)
            s->no_hrandfield = 1;   /* before Redis 6.2: HGETALL from the next refresh on */
        if (rep->type != REDIS_REPLY_ARRAY)
            break;
        if (top_holders(r, rep) != 0) {
            r->nholders = 0;
            r->hash_lock = 0;
            if (top_group(s, r, rep, what) == 0)
                return;
            r->kind = RLK_IK_OTHER;     /* an application's hash under the pattern */
            break;
        }
        if (r->hreply)
            freeReplyObject(r->hreply);
        r->hreply = rep;
        if (r->mode) {
            r->kind = RLK_IK_RWLOCK;
            r->hash_lock = 0;
        } else if (r->flags & RLK_TOP_F_TOKEN) {
            r->kind = RLK_IK_FENCED;
        }
        return;
    case TOP_W_GROUP:
        if (top_group(s, r, rep, what) == 0)
            return;
        r->kind = RLK_IK_OTHER;
        r->nholders = 0;
        break;
    case TOP_W_TOKEN:
        if (rep->type == REDIS_REPLY_INTEGER && rep->integer > 0 && r->hash_lock)
            r->kind = RLK_IK_FENCED;
        break;
    case TOP_W_FAIRQ:
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0) {
            r->nfq = 0;
            for (size_t k = 0; k < rep->elements && r->nfq < RLK_TOP_FAIR_SHOWN; k++) {
                r->fq[r->nfq].owner = rep->element[k]->str;
                r->fq[r->nfq].owner_len = rep->element[k]->len;
                r->fq[r->nfq].deadline_ms = -1;
                r->fq[r->nfq].deadline_in_ms = -1;
                r->nfq++;
            }
            if (r->fqreply)
                freeReplyObject(r->fqreply);
            r->fqreply = rep;
            return;
        }
        break;
    case TOP_W_MARK:
        /* rlk lock --fair's kind marker (kind_mark.h), read last: a hash of counts that nothing
         * else showed to be fenced or fair (nobody queued) is the fair lock it marks, as rlk
         * inspect reads it. */
        if (rep->type == REDIS_REPLY_STRING && strcmp(rep->str, RLK_KM_FAIR) == 0 &&
            r->hash_lock && r->kind == RLK_IK_REENTRANT)
            r->kind = RLK_IK_FAIR;
        break;
    case TOP_W_FAIRT:
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 && r->hash_lock &&
            r->kind != RLK_IK_FENCED)
            r->kind = RLK_IK_FAIR;
        for (size_t j = 0; rep->type == REDIS_REPLY_ARRAY && j + 1 < rep->elements; j += 2)
            for (size_t k = 0; k < r->nfq; k++)
                if (rep->element[j]->len == r->fq[k].owner_len &&
                    memcmp(rep->element[j]->str, r->fq[k].owner, r->fq[k].owner_len) == 0) {
                    r->fq[k].deadline_ms = rlk_top_parse_ll(rep->element[j + 1]->str,
                                                        rep->element[j + 1]->len, &ok);
                    r->fq[k].deadline_in_ms = ok ? r->fq[k].deadline_ms - s->now_ms : -1;
                }
        break;
    }
    freeReplyObject(rep);
}

static int top_batch_run(rlk_top_state *s, top_batch *b)
{
    redisReply **rep;
    int rc;

    if (b->n == 0)
        return RLK_OK;
    if (!(rep = calloc(b->n, sizeof *rep)))
        return RLK_ERR_NOMEM;
    rc = rlk_top_pipe(s, &s->nodes[b->node], (int)b->n, b->argc, b->argv, rep);
    for (size_t i = 0; rc == RLK_OK && i < b->n; i++)
        top_take(s, b->row[i], b->what[i], rep[i]);
    free(rep);
    return rc;
}

/* Step 4: the queues of every lock with a subscriber or a companion key. */
static int top_add_queues(top_batch *b, rlk_top_row *r)
{
    if (r->kind != RLK_IK_REENTRANT && r->kind != RLK_IK_NONE)
        return 0;
    if (!r->subs &&
        !(r->flags & (RLK_TOP_F_WAITERS | RLK_TOP_F_NEXT | RLK_TOP_F_QUEUE | RLK_TOP_F_TIMEOUT)))
        return 0;
    if (top_batch_add(b, r, TOP_W_QUEUED, rlk_top_key(r->name, NULL, RLK_NAMES_WAITERS), 2, "LLEN",
                      NULL) ||
        top_batch_add(b, r, TOP_W_NEXT, rlk_top_key(r->name, NULL, RLK_NAMES_GRANT), 2, "GET",
                      NULL) ||
        top_batch_add(b, r, TOP_W_FAIRLEN, rlk_top_key(r->name, RLK_NAMES_QUEUE, NULL), 2,
                      "LLEN", NULL))
        return -1;
    return 0;
}

/* rlk's queue and reservation of a shown lock that step 4 did not read. */
static int top_add_queues_always(top_batch *b, rlk_top_row *r)
{
    if (r->flags & (RLK_TOP_F_WAITERS | RLK_TOP_F_NEXT | RLK_TOP_F_QUEUE | RLK_TOP_F_TIMEOUT))
        return 0;   /* read in step 4 */
    if (top_batch_add(b, r, TOP_W_QUEUED, rlk_top_key(r->name, NULL, RLK_NAMES_WAITERS), 2, "LLEN",
                      NULL) ||
        top_batch_add(b, r, TOP_W_NEXT, rlk_top_key(r->name, NULL, RLK_NAMES_GRANT), 2, "GET",
                      NULL))
        return -1;
    return 0;
}

/* Step 5: what a shown row adds. */
static int top_add_shown(top_batch *b, rlk_top_row *r)
{
    if (r->kind != RLK_IK_NONE &&
        top_batch_add(b, r, TOP_W_TTL, strdup(r->name), 2, "PTTL", NULL))
        return -1;
    if (r->hash_lock &&
        (b->no_hrandfield
             ? top_batch_add(b, r, TOP_W_HOLDERS, strdup(r->name), 2, "HGETALL", NULL)
             : top_batch_add(b, r, TOP_W_HOLDERS, strdup(r->name), 4, "HRANDFIELD", NULL,
                             RLK_TOP_SAMPLE_S, "WITHVALUES")))
        return -1;
    if ((r->hash_lock || r->kind == RLK_IK_NONE) && !r->subs &&
        top_add_queues_always(b, r) != 0)
        return -1;
    if (r->hash_lock || r->kind == RLK_IK_NONE) {
        /* the fenced lock's token key; the fair lock's queue and deadlines */
        char *tok = rlk_top_key(r->name, RLK_NAMES_TOKEN, NULL);
        char *q = rlk_top_key(r->name, RLK_NAMES_QUEUE, NULL);
        char *t = rlk_top_key(r->name, RLK_NAMES_TIMEOUTS, NULL);

        if (!tok || !q || !t || top_batch_add(b, r, TOP_W_TOKEN, tok, 2, "EXISTS", NULL) ||
            top_batch_add(b, r, TOP_W_FAIRLEN, q, 2, "LLEN", NULL) ||
            top_batch_add(b, r, TOP_W_FAIRQ, strdup(q), 4, "LRANGE", NULL, "0", "4") ||
            top_batch_add(b, r, TOP_W_FAIRT, t, 5, "ZRANGE", NULL, "0", "-1", "WITHSCORES")) {
            return -1;
        }
    }
    /* the kind marker, after the keys above (its reply is taken after theirs) */
    if (r->hash_lock &&
        top_batch_add(b, r, TOP_W_MARK, rlk_top_key(r->name, NULL, RLK_KM_SUFFIX_NAME), 2, "GET",
                      NULL))
        return -1;
    return 0;
}

/* ---------------------------------------------------------------- sorting */

long long rlk_top_waiting(const rlk_top_row *r)
{
    return r->queued + r->fair_queued;
}

static int top_sort_mode;
static long long top_sort_now;

static int top_cmp(const void *pa, const void *pb)
{
    const rlk_top_row *a = *(rlk_top_row *const *)pa, *b = *(rlk_top_row *const *)pb;
    long long d;

    if (top_sort_mode == RLK_TOP_SORT_WAITERS) {
        if ((d = rlk_top_waiting(b) - rlk_top_waiting(a)) != 0)
            return d > 0 ? 1 : -1;
        if ((d = b->subs - a->subs) != 0)
            return d > 0 ? 1 : -1;
        if ((d = (long long)b->nholders - (long long)a->nholders) != 0)
            return d > 0 ? 1 : -1;
    } else if (top_sort_mode == RLK_TOP_SORT_AGE) {
        long long aa = a->hash_lock || a->kind == RLK_IK_RWLOCK ? top_sort_now - a->first_ms : -1;
        long long ab = b->hash_lock || b->kind == RLK_IK_RWLOCK ? top_sort_now - b->first_ms : -1;

        if (aa != ab)
            return ab > aa ? 1 : -1;
    }
    return strcmp(a->name, b->name);
}

/* ---------------------------------------------------------------- a refresh */

static long long top_wall_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned long long top_sig(const rlk_top_row *r)
{
    unsigned long long h = 7;

    for (size_t k = 0; k < r->nholders; k++)
        h = h * 31 + rlk_top_hash(r->holders[k].owner, r->holders[k].owner_len);
    return h;
}

static int top_server_now(rlk_top_state *s)
{
    const char *argv[1] = {"TIME"};
    redisReply *r = rlk_top_cmd(s, &s->nodes[0], 1, argv);

    s->now_ms = top_wall_ms();
    if (!r)
        return RLK_ERR_IO;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        s->now_ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return RLK_OK;
}

/* One refresh into s->t; *rows gets the rows sorted (all of them), *nrows. */
int rlk_top_refresh(rlk_top_state *s, rlk_top_row ***rows, size_t *nrows)
{
    long long t0 = rlk_lc_now_ns();
    top_batch *b = calloc((size_t)s->nnodes, sizeof *b);
    rlk_top_row **all = NULL;
    size_t n = 0, shown;
    int rc = RLK_OK;

    *rows = NULL;
    *nrows = 0;
    if (!b)
        return RLK_ERR_NOMEM;
    rlk_top_table_free(&s->old);
    s->old = s->t;
    memset(&s->t, 0, sizeof s->t);
    s->scanned = 0;
    s->err[0] = '\0';
    for (int i = 0; rc == RLK_OK && i < s->nnodes; i++)
        rc = rlk_top_scan_node(s, i, "hash");
    for (int i = 0; rc == RLK_OK && i < s->nnodes; i++)
        rc = rlk_top_scan_node(s, i, "string");
    for (int i = 0; rc == RLK_OK && i < s->nnodes; i++)
        rc = rlk_top_pubsub_node(s, i);
    if (rc == RLK_OK)
        rc = top_server_now(s);
    if (rc == RLK_OK && !(all = calloc(s->t.n + 1, sizeof *all)))
        rc = RLK_ERR_NOMEM;
    for (size_t i = 0; rc == RLK_OK && i < s->t.cap; i++) {
        rlk_top_row *r = s->t.slot[i], *old;

        if (!r || r->kind == RLK_IK_OTHER)
            continue;
        if (r->kind == RLK_IK_NONE && !r->subs &&
            !(r->flags & (RLK_TOP_F_QUEUE | RLK_TOP_F_WAITERS)))
            continue;   /* a companion alone (a latch mark, a free psemaphore's zset) */
        old = rlk_top_find(&s->old, r->name, strlen(r->name));
        r->first_ms = old && old->first_ms ? old->first_ms : s->now_ms;
        r->sig = old ? old->sig : 0;
        all[n++] = r;
    }
    for (int i = 0; i < s->nnodes; i++)
        b[i].node = i;
    for (size_t i = 0; rc == RLK_OK && i < n; i++)
        if (top_add_queues(&b[rlk_top_node_of(s, all[i])], all[i]) != 0)
            rc = RLK_ERR_NOMEM;
    for (int i = 0; i < s->nnodes; i++) {
        if (rc == RLK_OK)
            rc = top_batch_run(s, &b[i]);
        top_batch_free(&b[i]);
        b[i].node = i;
    }
    top_sort_mode = s->o.sort;
    top_sort_now = s->now_ms;
    if (rc == RLK_OK)
        qsort(all, n, sizeof *all, top_cmp);
    shown = n < (size_t)s->o.limit ? n : (size_t)s->o.limit;
    for (int i = 0; i < s->nnodes; i++)
        b[i].no_hrandfield = s->no_hrandfield;
    for (size_t i = 0; rc == RLK_OK && i < shown; i++)
        if (top_add_shown(&b[rlk_top_node_of(s, all[i])], all[i]) != 0)
            rc = RLK_ERR_NOMEM;
    for (int i = 0; i < s->nnodes; i++) {
        if (rc == RLK_OK)
            rc = top_batch_run(s, &b[i]);
        top_batch_free(&b[i]);
        b[i].node = i;
    }
    /* The faster-MultiLock groups a full sample left part of: read whole. */
    for (size_t i = 0; rc == RLK_OK && i < shown; i++)
        if (all[i]->fm_more &&
            top_batch_add(&b[rlk_top_node_of(s, all[i])], all[i], TOP_W_GROUP, strdup(all[i]->name),
                          2, "HGETALL", NULL))
            rc = RLK_ERR_NOMEM;
    for (int i = 0; i < s->nnodes; i++) {
        if (rc == RLK_OK)
            rc = top_batch_run(s, &b[i]);
        top_batch_free(&b[i]);
    }
    free(b);
    if (rc == RLK_OK) {
        size_t k = 0, cut = shown;

        for (size_t i = 0; i < n; i++) {
            if (all[i]->kind == RLK_IK_OTHER) {
                shown -= i < cut;
                continue;   /* an application's hash, found out when read */
            }
            all[k++] = all[i];
        }
        n = k;
    }
    for (size_t i = 0; rc == RLK_OK && i < shown; i++) {
        unsigned long long sig = top_sig(all[i]);

        if (all[i]->sig && all[i]->sig != sig)
            all[i]->first_ms = s->now_ms;   /* other holders than last time: a new hold */
        all[i]->sig = sig;
    }
    if (rc == RLK_OK)
        qsort(all, n, sizeof *all, top_cmp);    /* the fair queues read in step 5 count */
    s->refresh_ms = (rlk_lc_now_ns() - t0) / 1000000;
    if (rc != RLK_OK) {
        free(all);
        return rc;
    }
    *rows = all;
    *nrows = n;
    return RLK_OK;
}


/* A lock hash (held: the scripts delete it with its last holder). */
int rlk_top_is_lock(const rlk_top_row *r)
{
    return r->hash_lock || r->kind == RLK_IK_RWLOCK ||
           (r->kind == RLK_IK_FASTMULTI && r->nholders > 0);
}

/* The wait-for graph of the names with waiters in rlk's or the fair queue (read
 * with the refresh; no SCAN of its own); NULL when it could not be read ("waits":
 * null, the rest still shown). */
rlk_waitgraph *rlk_top_waits_read(rlk_client *c, rlk_top_row **rows, size_t n)
{
    const char **names = calloc(n ? n : 1, sizeof *names);
    rlk_waitgraph *g = NULL;
    size_t k = 0;

    if (!names)
        return NULL;
    for (size_t i = 0; i < n; i++)
        if (rows[i]->queued > 0 || rows[i]->fair_queued > 0)
            names[k++] = rows[i]->name;
    if (rlk_wg_read_names(c, names, k, &g) != RLK_OK)
        g = NULL;
    free(names);
    return g;
}

void rlk_top_total(rlk_top_row **rows, size_t n, rlk_top_totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        const rlk_top_row *r = rows[i];

        t->locks += rlk_top_is_lock(r);
        t->semaphores += r->kind == RLK_IK_SEMAPHORE;
        t->psemaphores += r->kind == RLK_IK_PSEMAPHORE;
        t->latches += r->kind == RLK_IK_LATCH;
        t->free_waited += r->kind == RLK_IK_NONE;
        if (r->kind == RLK_IK_PSEMAPHORE && r->permit_holders > 0)
            t->permits += r->permit_holders;
        t->queued += rlk_top_waiting(r);
        t->subs += r->subs;
    }
}

const char *rlk_top_kind_word(const rlk_top_row *r)
{
    if (r->kind == RLK_IK_NONE)
        return "free";
    return rlk_ik_word(r->kind);
}
