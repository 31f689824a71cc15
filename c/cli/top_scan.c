/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top_scan.c - rlk top's table of rows and steps 1 to 3 of a refresh (top.h):
 * SCAN of every node, the strings of a page read, the lock channels' subscribers.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "client/client.h"
#include "client/cluster.h"
#include "client/slot.h"
#include "client/topo.h"
#include "client/transport.h"
#include "kind_mark.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "top.h"

/* ---------------------------------------------------------------- the table */

unsigned long long rlk_top_hash(const char *s, size_t len)
{
    return rlk_hash(RLK_HASH_INIT, s, len);
}

static void top_row_free(rlk_top_row *r)
{
    if (!r)
        return;
    free(r->name);
    free(r->holders);
    free(r->values);
    if (r->hreply)
        freeReplyObject(r->hreply);
    if (r->fqreply)
        freeReplyObject(r->fqreply);
    free(r);
}

void rlk_top_table_free(rlk_top_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        top_row_free(t->slot[i]);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

rlk_top_row *rlk_top_find(rlk_top_table *t, const char *name, size_t len)
{
    if (!t->cap)
        return NULL;
    for (size_t i = rlk_top_hash(name, len) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        rlk_top_row *r = t->slot[i];

        if (!r)
            return NULL;
        if (strlen(r->name) == len && memcmp(r->name, name, len) == 0)
            return r;
    }
}

static int top_grow(rlk_top_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    rlk_top_row **s = calloc(cap, sizeof *s);

    if (!s)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        rlk_top_row *r = t->slot[i];
        size_t j;

        if (!r)
            continue;
        for (j = rlk_top_hash(r->name, strlen(r->name)) & (cap - 1); s[j];
             j = (j + 1) & (cap - 1)) {
        }
        s[j] = r;
    }
    free(t->slot);
    t->slot = s;
    t->cap = cap;
    return 0;
}

/* The row of name, made when new (NULL: out of memory). */
static rlk_top_row *top_get(rlk_top_table *t, const char *name, size_t len, int node)
{
    rlk_top_row *r = rlk_top_find(t, name, len);
    size_t i;

    if (r)
        return r;
    if ((t->n + 1) * 2 > t->cap && top_grow(t) != 0)
        return NULL;
    if (!(r = calloc(1, sizeof *r)) || !(r->name = strndup(name, len))) {
        free(r);
        return NULL;
    }
    r->node = node;
    r->ttl_ms = -3;
    r->permit_holders = -1;
    for (i = rlk_top_hash(name, len) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1)) {
    }
    t->slot[i] = r;
    t->n++;
    return r;
}

/* ---------------------------------------------------------------- names */

/* "{X}" -> X when X has no brace; else NULL (the name kept its own tag). */
static const char *top_unbrace(const char *s, size_t len, size_t *out)
{
    if (len >= 3 && s[0] == '{' && s[len - 1] == '}' && !memchr(s + 1, '{', len - 2) &&
        !memchr(s + 1, '}', len - 2)) {
        *out = len - 2;
        return s + 1;
    }
    return NULL;
}

/* A base name under a prefix ("redisson_lock_queue:" + "{N}" or a tagged N). */
static const char *top_after_prefix(const char *key, size_t len, const char *prefix, size_t *blen)
{
    size_t p = strlen(prefix);
    const char *b;

    if (len <= p || memcmp(key, prefix, p) != 0)
        return NULL;
    if ((b = top_unbrace(key + p, len - p, blen)))
        return b;
    *blen = len - p;
    return memchr(key + p, '{', len - p) ? key + p : NULL;
}

/* A base name before a suffix ("{N}" or a tagged N + ":rlk_waiters"). */
static const char *top_before_suffix(const char *key, size_t len, const char *suffix,
                                     size_t *blen)
{
    size_t s = strlen(suffix);
    const char *b;

    if (len <= s || memcmp(key + len - s, suffix, s) != 0)
        return NULL;
    if ((b = top_unbrace(key, len - s, blen)))
        return b;
    *blen = len - s;
    return memchr(key, '{', len - s) ? key : NULL;
}

static const struct {
    const char *text;
    int suffix;
    unsigned flag;
} top_companions[] = {
    {RLK_NAMES_QUEUE ":", 0, RLK_TOP_F_QUEUE},      {RLK_NAMES_TIMEOUTS ":", 0, RLK_TOP_F_TIMEOUT},
    {RLK_NAMES_TOKEN ":", 0, RLK_TOP_F_TOKEN},      {":" RLK_NAMES_WAITERS, 1, RLK_TOP_F_WAITERS},
    {":" RLK_NAMES_GRANT, 1, RLK_TOP_F_NEXT},       {":" RLK_NAMES_PERMITS, 1, RLK_TOP_F_PERMITS},
    {":" RLK_KM_SUFFIX_NAME, 1, RLK_TOP_F_MARK},
    {":" RLK_NAMES_WHO, 1, 0},      /* the waiters' records of held grants: not shown */
};

/* 1 when key is a companion (its base and flag set; flag 0: skipped, a
 * read-write lock's read timeout), else 0. */
static int top_companion(const char *key, size_t len, const char **base, size_t *blen,
                         unsigned *flag)
{
    if (memmem(key, len, ":" RLK_NAMES_RW_TIMEOUT ":", sizeof RLK_NAMES_RW_TIMEOUT + 1)) {
        *flag = 0;
        return 1;
    }
    for (size_t i = 0; i < sizeof top_companions / sizeof top_companions[0]; i++) {
        const char *b = top_companions[i].suffix
                            ? top_before_suffix(key, len, top_companions[i].text, blen)
                            : top_after_prefix(key, len, top_companions[i].text, blen);

        if (b) {
            *base = b;
            *flag = top_companions[i].flag;
            return 1;
        }
    }
    return 0;
}

static int top_matches(const rlk_top_state *s, const char *name)
{
    return strcmp(s->o.pattern, "*") == 0 || fnmatch(s->o.pattern, name, 0) == 0;
}

/* ---------------------------------------------------------------- I/O */

/* n commands on ctx in one round trip; replies into r[0..n) (NULL on a
 * connection error, then RLK_ERR_IO with s->err set). */
int rlk_top_pipe(rlk_top_state *s, rlk_top_node *nd, int n, int *argc, const char ***argv,
                 redisReply **r)
{
    int i;

    for (i = 0; i < n; i++)
        r[i] = NULL;
    for (i = 0; i < n; i++)
        if (redisAppendCommandArgv(nd->ctx, argc[i], argv[i], NULL) != REDIS_OK)
            break;
    for (int k = 0; k < i; k++) {
        void *rep = NULL;

        if (rlk_transport_get_reply(nd->ctx, &rep) != REDIS_OK || !rep) {
            snprintf(s->err, sizeof s->err, "%s: %s", nd->addr,
                     nd->ctx->errstr[0] ? nd->ctx->errstr : "no reply");
            for (int j = 0; j < k; j++) {
                freeReplyObject(r[j]);
                r[j] = NULL;
            }
            return RLK_ERR_IO;
        }
        r[k] = rep;
    }
    if (i < n) {
        snprintf(s->err, sizeof s->err, "%s: %s", nd->addr, nd->ctx->errstr);
        return RLK_ERR_IO;
    }
    return RLK_OK;
}

redisReply *rlk_top_cmd(rlk_top_state *s, rlk_top_node *nd, int argc, const char **argv)
{
    redisReply *r = NULL;

    if (rlk_top_pipe(s, nd, 1, &argc, &argv, &r) != RLK_OK)
        return NULL;
    return r;
}

/* The node index where name's keys are. */
int rlk_top_node_of(rlk_top_state *s, const rlk_top_row *r)
{
    char addr[300];

    if (r->node >= 0)
        return r->node;
    if (s->nnodes == 1 || !rlk_topo_routed(s->c))
        return 0;
    if (rlk_cluster_owner_addr(s->c, rlk_key_slot(r->name, strlen(r->name)), addr,
                               sizeof addr) < 0)
        return 0;
    for (int i = 0; i < s->nnodes; i++)
        if (strcmp(s->nodes[i].addr, addr) == 0)
            return i;
    return 0;
}

static void top_sleep_ns(long long ns)
{
    struct timespec ts = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !rlk_top_stop) {
    }
}

/* ---------------------------------------------------------------- step 2: a SCAN page */

long long rlk_top_parse_ll(const char *s, size_t len, int *ok)
{
    char buf[32], *end;
    long long v;

    *ok = 0;
    if (len == 0 || len >= sizeof buf)
        return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    v = strtoll(buf, &end, 10);
    *ok = *end == '\0';
    return v;
}


char *rlk_top_key(const char *name, const char *prefix, const char *suffix)
{
    return prefix ? rlk_fam_prefix_name(prefix, name) : rlk_fam_suffix_name(name, suffix);
}

/* The counts among strings: semaphore, psemaphore or latch. */
static int top_read_counts(rlk_top_state *s, int node, rlk_top_row **rows, size_t n)
{
    int *argc = calloc(2 * n + 1, sizeof *argc), rc = RLK_OK;
    const char ***argv = calloc(2 * n + 1, sizeof *argv);
    const char **words = calloc(4 * n + 1, sizeof *words);
    char **keys = calloc(2 * n + 1, sizeof *keys);
    redisReply **rep = calloc(2 * n + 1, sizeof *rep);

    if (!argc || !argv || !words || !keys || !rep) {
        rc = RLK_ERR_NOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        keys[2 * i] = rlk_top_key(rows[i]->name, NULL, RLK_NAMES_PERMITS);
        keys[2 * i + 1] = rlk_top_key(rows[i]->name, NULL, RLK_KM_SUFFIX_NAME);
        if (!keys[2 * i] || !keys[2 * i + 1]) {
            rc = RLK_ERR_NOMEM;
            goto out;
        }
        words[4 * i] = "ZCARD", words[4 * i + 1] = keys[2 * i];
        words[4 * i + 2] = "GET", words[4 * i + 3] = keys[2 * i + 1];
        argc[2 * i] = argc[2 * i + 1] = 2;
        argv[2 * i] = &words[4 * i];
        argv[2 * i + 1] = &words[4 * i + 2];
    }
    if ((rc = rlk_top_pipe(s, &s->nodes[node], (int)(2 * n), argc, argv, rep)) != RLK_OK)
        goto out;
    for (size_t i = 0; i < n; i++) {
        redisReply *z = rep[2 * i], *m = rep[2 * i + 1];

        rows[i]->kind = RLK_IK_SEMAPHORE;
        if (z->type == REDIS_REPLY_INTEGER && z->integer > 0) {
            rows[i]->kind = RLK_IK_PSEMAPHORE;
            rows[i]->permit_holders = z->integer;
        }
        if (m->type == REDIS_REPLY_STRING && strcmp(m->str, "latch") == 0)
            rows[i]->kind = RLK_IK_LATCH;
    }
out:
    for (size_t i = 0; rep && i < 2 * n; i++)
        if (rep[i])
            freeReplyObject(rep[i]);
    for (size_t i = 0; keys && i < 2 * n; i++)
        free(keys[i]);
    free(argc);
    free(argv);
    free(words);
    free(keys);
    free(rep);
    return rc;
}

/* The strings of one SCAN page: GETRANGE k 0 23 each; the counts among them
 * are semaphores, permit-expirable semaphores or latches (top_read_counts). */
static int top_read_page(rlk_top_state *s, int node, redisReply **cand, size_t n)
{
    int *argc = calloc(n + 1, sizeof *argc), rc = RLK_OK;
    const char ***argv = calloc(n + 1, sizeof *argv);
    const char **words = calloc(4 * n + 1, sizeof *words);
    redisReply **rep = calloc(n + 1, sizeof *rep);
    rlk_top_row **counts = calloc(n + 1, sizeof *counts);
    size_t ncount = 0, k;

    if (!argc || !argv || !words || !rep || !counts) {
        rc = RLK_ERR_NOMEM;
        goto out;
    }
    for (k = 0; k < n; k++) {
        words[4 * k] = "GETRANGE";
        words[4 * k + 1] = cand[k]->str;
        words[4 * k + 2] = "0";
        words[4 * k + 3] = "23";
        argc[k] = 4;
        argv[k] = &words[4 * k];
    }
    if ((rc = rlk_top_pipe(s, &s->nodes[node], (int)n, argc, argv, rep)) != RLK_OK)
        goto out;
    for (k = 0; k < n; k++) {
        redisReply *r = rep[k];
        long long v = 0;
        int ok = 0;
        rlk_top_row *row;

        if (r->type == REDIS_REPLY_STRING)
            v = rlk_top_parse_ll(r->str, r->len, &ok);
        if (!ok)
            continue;   /* not a count: a token or an application's string */
        if (!(row = top_get(&s->t, cand[k]->str, cand[k]->len, node))) {
            rc = RLK_ERR_NOMEM;
            goto out;
        }
        row->count = v;
        counts[ncount++] = row;
    }
    if (ncount)
        rc = top_read_counts(s, node, counts, ncount);
out:
    for (k = 0; rep && k < n; k++)
        if (rep[k])
            freeReplyObject(rep[k]);
    free(argc);
    free(argv);
    free(words);
    free(rep);
    free(counts);
    return rc;
}

/* ---------------------------------------------------------------- step 1: SCAN */

/* One pass of SCAN [MATCH P] COUNT n TYPE type: a hash is a held lock (the
 * scripts delete a lock's hash with its last holder), read only if shown; a
 * string is read (top_read_page). */
int rlk_top_scan_node(rlk_top_state *s, int node, const char *type)
{
    rlk_top_node *nd = &s->nodes[node];
    char cursor[32] = "0", count[16];
    int rc = RLK_OK, hashes = strcmp(type, "hash") == 0;

    snprintf(count, sizeof count, "%d", s->o.count);
    do {
        const char *argv[8] = {"SCAN", cursor, "COUNT", count, "TYPE", type, "MATCH",
                               s->o.pattern};
        int argc = strcmp(s->o.pattern, "*") == 0 ? 6 : 8;
        long long gap = 1000000000LL / s->o.rate, now = rlk_lc_now_ns();
        redisReply *r, **cand;
        size_t ncand = 0;

        if (nd->last_scan_ns && now - nd->last_scan_ns < gap)
            top_sleep_ns(gap - (now - nd->last_scan_ns));
        nd->last_scan_ns = rlk_lc_now_ns();
        if (rlk_top_stop)
            return RLK_ERR_INTERRUPTED;
        if (!(r = rlk_top_cmd(s, nd, argc, argv)))
            return RLK_ERR_IO;
        if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
            r->element[0]->type != REDIS_REPLY_STRING ||
            r->element[1]->type != REDIS_REPLY_ARRAY) {
            snprintf(s->err, sizeof s->err, "%s: SCAN: %s", nd->addr,
                     r->type == REDIS_REPLY_ERROR ? r->str : "unexpected reply");
            freeReplyObject(r);
            return RLK_ERR_SERVER;
        }
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        cand = calloc(r->element[1]->elements + 1, sizeof *cand);
        if (!cand) {
            freeReplyObject(r);
            return RLK_ERR_NOMEM;
        }
        for (size_t i = 0; i < r->element[1]->elements; i++) {
            redisReply *k = r->element[1]->element[i];
            const char *base = NULL;
            size_t blen = 0;
            unsigned flag = 0;

            s->scanned++;
            if (k->type != REDIS_REPLY_STRING)
                continue;
            if (top_companion(k->str, k->len, &base, &blen, &flag)) {
                char *b = flag ? strndup(base, blen) : NULL;
                rlk_top_row *row = b && top_matches(s, b) ? top_get(&s->t, b, blen, node)
                                                              : NULL;

                if (row)
                    row->flags |= flag;
                free(b);
                continue;
            }
            if (hashes) {
                rlk_top_row *row = top_get(&s->t, k->str, k->len, node);

                if (!row) {
                    rc = RLK_ERR_NOMEM;
                    break;
                }
                row->kind = RLK_IK_REENTRANT;   /* a lock hash; its kind is read if shown */
                row->hash_lock = 1;
                continue;
            }
            cand[ncand++] = k;
        }
        if (rc == RLK_OK && ncand)
            rc = top_read_page(s, node, cand, ncand);
        free(cand);
        freeReplyObject(r);
    } while (rc == RLK_OK && strcmp(cursor, "0") != 0);
    return rc;
}

/* ---------------------------------------------------------------- step 3: pub/sub */

/* The lock name of a channel (malloc'd), or NULL. The kinds' channel
 * prefixes come from the library (kinds/names.h). */
static char *top_channel_base(const char *ch, size_t len)
{
    size_t p = rlk_names_channel_prefix(ch, len);
    const char *rest = ch + p, *close;

    if (p == 0)
        return NULL;
    len -= p;
    if (rest[0] == '{' && (close = memchr(rest, '}', len)) && close > rest + 1 &&
        !memchr(rest + 1, '{', (size_t)(close - rest - 1)))
        return strndup(rest + 1, (size_t)(close - rest - 1));  /* {N} or {N}:<owner> */
    return strndup(rest, len);
}

/* NUMSUB (or SHARDNUMSUB) of channels[0..n) on node, added to their rows. */
static int top_numsub(rlk_top_state *s, int node, const char *cmd, redisReply **ch, size_t n)
{
    for (size_t at = 0; at < n; at += 500) {
        size_t m = n - at < 500 ? n - at : 500;
        const char **argv = calloc(m + 2, sizeof *argv);
        redisReply *r;

        if (!argv)
            return RLK_ERR_NOMEM;
        argv[0] = "PUBSUB";
        argv[1] = cmd;
        for (size_t i = 0; i < m; i++)
            argv[2 + i] = ch[at + i]->str;
        r = rlk_top_cmd(s, &s->nodes[node], (int)m + 2, argv);
        free(argv);
        if (!r)
            return RLK_ERR_IO;
        for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
            redisReply *name = r->element[i], *num = r->element[i + 1];
            char *base = name->type == REDIS_REPLY_STRING ? top_channel_base(name->str, name->len)
                                                          : NULL;
            int at = rlk_topo_routed(s->c) ? -1 : node;
            rlk_top_row *row = base && top_matches(s, base)
                                   ? top_get(&s->t, base, strlen(base), at)
                                   : NULL;

            if (row && num->type == REDIS_REPLY_INTEGER)
                row->subs += num->integer;
            free(base);
        }
        freeReplyObject(r);
    }
    return RLK_OK;
}

int rlk_top_pubsub_node(rlk_top_state *s, int node)
{
    enum { H = RLK_NAMES_CHANNEL_HEADS };
    const char *argv[2 * H][3];
    const char **pv[2 * H];
    int argc[2 * H], rc;
    redisReply *rep[2 * H];
    char pats[H][64];

    for (int i = 0; i < H; i++)
        snprintf(pats[i], sizeof pats[i], "%s*", rlk_names_channel_head((size_t)i));
    for (int i = 0; i < 2 * H; i++) {
        argv[i][0] = "PUBSUB";
        argv[i][1] = i < H ? "CHANNELS" : "SHARDCHANNELS";
        argv[i][2] = pats[i % H];
        argc[i] = 3;
        pv[i] = argv[i];
    }
    if ((rc = rlk_top_pipe(s, &s->nodes[node], 2 * H, argc, pv, rep)) != RLK_OK)
        return rc;
    for (int i = 0; i < 2 * H && rc == RLK_OK; i++)
        if (rep[i]->type == REDIS_REPLY_ARRAY && rep[i]->elements > 0)
            rc = top_numsub(s, node, i < H ? "NUMSUB" : "SHARDNUMSUB", rep[i]->element,
                            rep[i]->elements);  /* SHARD*: an error before Redis 7 */
    for (int i = 0; i < 2 * H; i++)
        freeReplyObject(rep[i]);
    return rc;
}
