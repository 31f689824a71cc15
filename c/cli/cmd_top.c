/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_top.c - rlk top [--once] [--json] [--pattern P] [--interval S] ...
 *
 * A live view of a server's locks, read from the server alone (so it shows
 * Redisson's clients as well as rlk's: the layouts are the same,
 * docs/compat.md). One refresh, on every master:
 *   1. SCAN MATCH P COUNT n, at most --rate calls a second per node. A key
 *      whose name has a companion's shape (redisson_lock_queue:{N}, {N}:rlk_waiters,
 *      {N}:timeout, ...) marks its lock N; any other key is a candidate.
 *   2. Per SCAN page, pipelined: HRANDFIELD k 64 WITHVALUES of each candidate
 *      (a bounded read: a lock hash has a few fields; HGETALL before Redis
 *      6.2); a WRONGTYPE one is read with GETRANGE k 0 23 (a count?), and
 *      a count with ZCARD {N}:timeout and GET {N}:rlk_kind (which kind).
 *   3. PUBSUB CHANNELS / SHARDCHANNELS of the four lock channel families
 *      (only channels with a subscriber are listed), then NUMSUB of those.
 *   4. For the locks with a subscriber or a companion key: LLEN of the rlk
 *      queue and the fair queue, GET of the rlk reservation.
 *   5. For the rows shown (--limit): PTTL, the fenced token and fair keys,
 *      the head of the fair queue with its deadlines (TIME). A hash whose
 *      fields are not holder counts but a faster-MultiLock group's (values
 *      and their holders' :expire_time / :lock_count) is a fastmulti row;
 *      HGETALL when the first 64 fields read were not all of it.
 *   6. For the locks with waiters in either queue: HGETALL and LRANGE of both
 *      queues, the wait-for graph (kinds/waitgraph.h, top_deadlock.c): a
 *      cycle is printed as DEADLOCK lines, --json has "waits".
 * Nothing is written; no KEYS. A holder's age is how long this rlk top has
 * seen the same holders (0 on the first refresh).
 */
#include <errno.h>
#include <fnmatch.h>
#include <poll.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "client/client.h"
#include "client/cluster.h"
#include "client/conn.h"
#include "client/slot.h"
#include "client/topo.h"
#include "client/transport.h"
#include "inspect.h"
#include "kind_mark.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "kinds/waitgraph.h"
#include "top_deadlock.h"

static const char top_usage[] =
    "usage: rlk top [--once] [--json] [--pattern GLOB] [--interval SECONDS]\n"
    "               [--sort waiters|age|name] [--limit N] [--count N] [--rate N] [--url URL]\n"
    "\n"
    "A live view of the server's locks, semaphores and latches, read from the server\n"
    "alone (rlk's and Redisson's clients alike): holders (holder id, count, mode, TTL),\n"
    "waiters (rlk's queue and its reservation, the fair queue with deadlines), pub/sub\n"
    "subscribers per lock (PUBSUB NUMSUB), permits, expirable-permit holders, latch\n"
    "counts, faster-MultiLock groups (each value's holder in --json). On a cluster,\n"
    "every master. Keys are found with SCAN (never KEYS), COUNT and calls per second\n"
    "bounded; nothing is written.\n"
    "\n"
    "Who waits for whom across names (a waiter that holds one lock and waits for\n"
    "another): a cycle is shown as DEADLOCK lines above the table, and --json has it\n"
    "as \"waits\": {\"edges\", \"cycles\"} (docs/deadlock.md).\n"
    "\n"
    "In a terminal it refreshes like top: q quits, s changes the order.\n"
    "\n"
    "  --once          one refresh, printed, then exit\n"
    "  --json          one JSON object per refresh, one line each\n"
    "  --pattern GLOB  lock names to show (SCAN MATCH; default *)\n"
    "  --interval S    seconds between refreshes (default 2)\n"
    "  --sort ORDER    waiters (queued, then subscribers; default), age (held\n"
    "                  longest first, as seen by this rlk top), name\n"
    "  --limit N       rows shown (default: the terminal's height, 50 otherwise;\n"
    "                  --json 100); the totals count every lock\n"
    "  --count N       SCAN COUNT (default 1000, 10..10000)\n"
    "  --rate N        SCAN calls per second per node at most (default 1000)\n"
    "  --url URL       the server (default: $RLK_URL, then " RLK_DEFAULT_URL ")\n";

enum { TOP_SORT_WAITERS, TOP_SORT_AGE, TOP_SORT_NAME, TOP_SORTS };
static const char *const top_sort_words[TOP_SORTS] = {"waiters", "age", "name"};

/* Companion keys seen by SCAN. */
enum {
    TOP_F_QUEUE = 1,        /* redisson_lock_queue:{N} */
    TOP_F_TIMEOUT = 2,      /* redisson_lock_timeout:{N} */
    TOP_F_TOKEN = 4,        /* redisson_lock_token:{N} */
    TOP_F_WAITERS = 8,      /* {N}:rlk_waiters */
    TOP_F_NEXT = 16,        /* {N}:rlk_next */
    TOP_F_PERMITS = 32,     /* {N}:timeout */
    TOP_F_MARK = 64         /* {N}:rlk_kind */
};

#define TOP_FAIR_SHOWN 5
#define TOP_SAMPLE 64           /* HRANDFIELD's count: the fields a hash is first read by */
#define TOP_SAMPLE_S "64"
#define TOP_NODES_MAX 64

typedef struct top_row {
    char *name;
    int kind;                   /* RLK_IK_*; RLK_IK_NONE: companions or channels only */
    int hash_lock;              /* a hash of holder counts: reentrant, fair or fenced */
    int node;                   /* where its keys are; -1: route by slot */
    unsigned flags;
    rlk_ik_holder *holders;
    size_t nholders;
    redisReply *hreply;         /* holders (and a group's values) point into it */
    rlk_ik_value *values;       /* a faster-MultiLock group's values (RLK_IK_FASTMULTI) */
    size_t nvalues;
    int fm_more;                /* a group seen in a full HRANDFIELD sample: HGETALL it */
    const char *mode;           /* rwlock */
    long long count;            /* semaphore permits, latch count */
    long long ttl_ms;           /* -3: not read */
    long long queued;           /* {N}:rlk_waiters */
    long long fair_queued;      /* redisson_lock_queue:{N} */
    char reserved[64];          /* {N}:rlk_next: the ticket the lock is reserved for */
    long long subs;             /* pub/sub subscribers of its channels */
    long long permit_holders;   /* psemaphore: ZCARD {N}:timeout */
    rlk_ik_waiter fq[TOP_FAIR_SHOWN];
    size_t nfq;
    redisReply *fqreply;
    unsigned long long sig;     /* the holders, hashed: a change restarts the age */
    long long first_ms;         /* when this rlk top first saw these holders */
} top_row;

typedef struct top_table {
    top_row **slot;
    size_t cap, n;
} top_table;

typedef struct top_node {
    redisContext *ctx;
    char addr[300];
    long long last_scan_ns;
} top_node;

typedef struct top_opts {
    const char *url;
    const char *pattern;
    int once, json, sort, limit, count, rate;
    long long interval_ms;
} top_opts;

typedef struct top_state {
    top_opts o;
    rlk_client *c;
    top_node nodes[TOP_NODES_MAX];
    int nnodes;
    top_table t, old;
    int no_hrandfield;
    long long scanned;          /* keys SCAN returned */
    long long refresh_ms;
    long long now_ms;           /* the server's clock at the refresh */
    rlk_waitgraph *wg;          /* who waits for whom (docs/deadlock.md); NULL: not read */
    char err[512];
} top_state;

static volatile sig_atomic_t top_stop;

static void top_on_signal(int sig)
{
    (void)sig;
    top_stop = 1;
}

/* ---------------------------------------------------------------- the table */

static unsigned long long top_hash(const char *s, size_t len)
{
    unsigned long long h = 1469598103934665603ULL;

    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
    return h;
}

static void top_row_free(top_row *r)
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

static void top_table_free(top_table *t)
{
    for (size_t i = 0; i < t->cap; i++)
        top_row_free(t->slot[i]);
    free(t->slot);
    memset(t, 0, sizeof *t);
}

static top_row *top_find(top_table *t, const char *name, size_t len)
{
    if (!t->cap)
        return NULL;
    for (size_t i = top_hash(name, len) & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        top_row *r = t->slot[i];

        if (!r)
            return NULL;
        if (strlen(r->name) == len && memcmp(r->name, name, len) == 0)
            return r;
    }
}

static int top_grow(top_table *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    top_row **s = calloc(cap, sizeof *s);

    if (!s)
        return -1;
    for (size_t i = 0; i < t->cap; i++) {
        top_row *r = t->slot[i];
        size_t j;

        if (!r)
            continue;
        for (j = top_hash(r->name, strlen(r->name)) & (cap - 1); s[j]; j = (j + 1) & (cap - 1)) {
        }
        s[j] = r;
    }
    free(t->slot);
    t->slot = s;
    t->cap = cap;
    return 0;
}

/* The row of name, made when new (NULL: out of memory). */
static top_row *top_get(top_table *t, const char *name, size_t len, int node)
{
    top_row *r = top_find(t, name, len);
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
    for (i = top_hash(name, len) & (t->cap - 1); t->slot[i]; i = (i + 1) & (t->cap - 1)) {
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
    {RLK_NAMES_QUEUE ":", 0, TOP_F_QUEUE},      {RLK_NAMES_TIMEOUTS ":", 0, TOP_F_TIMEOUT},
    {RLK_NAMES_TOKEN ":", 0, TOP_F_TOKEN},      {":" RLK_NAMES_WAITERS, 1, TOP_F_WAITERS},
    {":" RLK_NAMES_GRANT, 1, TOP_F_NEXT},       {":" RLK_NAMES_PERMITS, 1, TOP_F_PERMITS},
    {":" RLK_KM_SUFFIX_NAME, 1, TOP_F_MARK},
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

static int top_matches(const top_state *s, const char *name)
{
    return strcmp(s->o.pattern, "*") == 0 || fnmatch(s->o.pattern, name, 0) == 0;
}

/* ---------------------------------------------------------------- I/O */

/* n commands on ctx in one round trip; replies into r[0..n) (NULL on a
 * connection error, then RLK_ERR_IO with s->err set). */
static int top_pipe(top_state *s, top_node *nd, int n, int *argc, const char ***argv,
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

static redisReply *top_cmd(top_state *s, top_node *nd, int argc, const char **argv)
{
    redisReply *r = NULL;

    if (top_pipe(s, nd, 1, &argc, &argv, &r) != RLK_OK)
        return NULL;
    return r;
}

/* The node index where name's keys are. */
static int top_node_of(top_state *s, const top_row *r)
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

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR && !top_stop) {
    }
}

/* ---------------------------------------------------------------- step 2: a SCAN page */

static long long top_parse_ll(const char *s, size_t len, int *ok)
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

/* Holders from a field/value array; 0, or -1 when the hash is no lock. */
static int top_holders(top_row *r, redisReply *all)
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
        h->count = top_parse_ll(v->str, v->len, &ok);
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

static char *top_key(const char *name, const char *prefix, const char *suffix)
{
    return prefix ? rlk_fam_prefix_name(prefix, name) : rlk_fam_suffix_name(name, suffix);
}

/* The counts among strings: semaphore, psemaphore or latch. */
static int top_read_counts(top_state *s, int node, top_row **rows, size_t n)
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
        keys[2 * i] = top_key(rows[i]->name, NULL, RLK_NAMES_PERMITS);
        keys[2 * i + 1] = top_key(rows[i]->name, NULL, RLK_KM_SUFFIX_NAME);
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
    if ((rc = top_pipe(s, &s->nodes[node], (int)(2 * n), argc, argv, rep)) != RLK_OK)
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
static int top_read_page(top_state *s, int node, redisReply **cand, size_t n)
{
    int *argc = calloc(n + 1, sizeof *argc), rc = RLK_OK;
    const char ***argv = calloc(n + 1, sizeof *argv);
    const char **words = calloc(4 * n + 1, sizeof *words);
    redisReply **rep = calloc(n + 1, sizeof *rep);
    top_row **counts = calloc(n + 1, sizeof *counts);
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
    if ((rc = top_pipe(s, &s->nodes[node], (int)n, argc, argv, rep)) != RLK_OK)
        goto out;
    for (k = 0; k < n; k++) {
        redisReply *r = rep[k];
        long long v = 0;
        int ok = 0;
        top_row *row;

        if (r->type == REDIS_REPLY_STRING)
            v = top_parse_ll(r->str, r->len, &ok);
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
static int top_scan_node(top_state *s, int node, const char *type)
{
    top_node *nd = &s->nodes[node];
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
        if (top_stop)
            return RLK_ERR_INTERRUPTED;
        if (!(r = top_cmd(s, nd, argc, argv)))
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
                top_row *row = b && top_matches(s, b) ? top_get(&s->t, b, blen, node)
                                                              : NULL;

                if (row)
                    row->flags |= flag;
                free(b);
                continue;
            }
            if (hashes) {
                top_row *row = top_get(&s->t, k->str, k->len, node);

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
static int top_numsub(top_state *s, int node, const char *cmd, redisReply **ch, size_t n)
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
        r = top_cmd(s, &s->nodes[node], (int)m + 2, argv);
        free(argv);
        if (!r)
            return RLK_ERR_IO;
        for (size_t i = 0; r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2) {
            redisReply *name = r->element[i], *num = r->element[i + 1];
            char *base = name->type == REDIS_REPLY_STRING ? top_channel_base(name->str, name->len)
                                                          : NULL;
            top_row *row = base && top_matches(s, base)
                               ? top_get(&s->t, base, strlen(base), rlk_topo_routed(s->c) ? -1 : node)
                               : NULL;

            if (row && num->type == REDIS_REPLY_INTEGER)
                row->subs += num->integer;
            free(base);
        }
        freeReplyObject(r);
    }
    return RLK_OK;
}

static int top_pubsub_node(top_state *s, int node)
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
    if ((rc = top_pipe(s, &s->nodes[node], 2 * H, argc, pv, rep)) != RLK_OK)
        return rc;
    for (int i = 0; i < 2 * H && rc == RLK_OK; i++)
        if (rep[i]->type == REDIS_REPLY_ARRAY && rep[i]->elements > 0)
            rc = top_numsub(s, node, i < H ? "NUMSUB" : "SHARDNUMSUB", rep[i]->element,
                            rep[i]->elements);  /* SHARD*: an error before Redis 7 */
    for (int i = 0; i < 2 * H; i++)
        freeReplyObject(rep[i]);
    return rc;
}

/* ---------------------------------------------------------------- steps 4, 5: details */

typedef struct top_batch {
    int node;
    size_t n, cap;
    int *argc;
    const char ***argv;
    char **owned;               /* key strings to free */
    size_t nowned;
    top_row **row;              /* the row of each command */
    int *what;                  /* what each reply is for */
    int no_hrandfield;          /* HGETALL for the holders (before Redis 6.2) */
} top_batch;

enum {
    TOP_W_QUEUED, TOP_W_NEXT, TOP_W_FAIRLEN, TOP_W_TTL, TOP_W_HOLDERS, TOP_W_TOKEN, TOP_W_FAIRQ,
    TOP_W_FAIRT, TOP_W_GROUP
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

/* Adds a command (argv copied; key, when set, is owned by the batch). */
static int top_batch_add(top_batch *b, top_row *row, int what, char *key, int argc, ...)
{
    va_list ap;
    const char **v;

    if (b->n == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        void *p1 = realloc(b->argc, cap * sizeof *b->argc), *p2, *p3, *p4, *p5;

        if (!p1)
            return -1;
        b->argc = p1;
        if (!(p2 = realloc(b->argv, cap * sizeof *b->argv)))
            return -1;
        b->argv = p2;
        if (!(p3 = realloc(b->row, cap * sizeof *b->row)))
            return -1;
        b->row = p3;
        if (!(p4 = realloc(b->what, cap * sizeof *b->what)))
            return -1;
        b->what = p4;
        if (!(p5 = realloc(b->owned, cap * sizeof *b->owned)))
            return -1;
        b->owned = p5;
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
 * HRANDFIELD sample (TOP_SAMPLE fields) of a group's shape may leave values
 * out: fm_more, read whole by HGETALL (TOP_W_GROUP): 0, the reply freed.
 * -1: not a group. */
static int top_group(top_state *s, top_row *r, redisReply *rep, int what)
{
    rlk_ik_value *v = NULL;
    size_t n = 0, nh = 0;
    int shaped = rep->type == REDIS_REPLY_ARRAY;

    r->mode = NULL;     /* top_holders' reading of a value named "mode" */
    for (size_t k = 0; shaped && k + 1 < rep->elements; k += 2)
        shaped = top_fm_field(rep->element[k]);
    if (!shaped)
        return -1;
    if (what == TOP_W_HOLDERS && rep->elements >= 2 * TOP_SAMPLE) {
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

static void top_take(top_state *s, top_row *r, int what, redisReply *rep)
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
        } else if (r->flags & TOP_F_TOKEN) {
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
            for (size_t k = 0; k < rep->elements && r->nfq < TOP_FAIR_SHOWN; k++) {
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
    case TOP_W_FAIRT:
        if (rep->type == REDIS_REPLY_ARRAY && rep->elements > 0 && r->hash_lock &&
            r->kind != RLK_IK_FENCED)
            r->kind = RLK_IK_FAIR;
        for (size_t j = 0; rep->type == REDIS_REPLY_ARRAY && j + 1 < rep->elements; j += 2)
            for (size_t k = 0; k < r->nfq; k++)
                if (rep->element[j]->len == r->fq[k].owner_len &&
                    memcmp(rep->element[j]->str, r->fq[k].owner, r->fq[k].owner_len) == 0) {
                    r->fq[k].deadline_ms = top_parse_ll(rep->element[j + 1]->str,
                                                        rep->element[j + 1]->len, &ok);
                    r->fq[k].deadline_in_ms = ok ? r->fq[k].deadline_ms - s->now_ms : -1;
                }
        break;
    }
    freeReplyObject(rep);
}

static int top_batch_run(top_state *s, top_batch *b)
{
    redisReply **rep;
    int rc;

    if (b->n == 0)
        return RLK_OK;
    if (!(rep = calloc(b->n, sizeof *rep)))
        return RLK_ERR_NOMEM;
    rc = top_pipe(s, &s->nodes[b->node], (int)b->n, b->argc, b->argv, rep);
    for (size_t i = 0; rc == RLK_OK && i < b->n; i++)
        top_take(s, b->row[i], b->what[i], rep[i]);
    free(rep);
    return rc;
}

/* Step 4: the queues of every lock with a subscriber or a companion key. */
static int top_add_queues(top_batch *b, top_row *r)
{
    if (r->kind != RLK_IK_REENTRANT && r->kind != RLK_IK_NONE)
        return 0;
    if (!r->subs && !(r->flags & (TOP_F_WAITERS | TOP_F_NEXT | TOP_F_QUEUE | TOP_F_TIMEOUT)))
        return 0;
    if (top_batch_add(b, r, TOP_W_QUEUED, top_key(r->name, NULL, RLK_NAMES_WAITERS), 2, "LLEN",
                      NULL) ||
        top_batch_add(b, r, TOP_W_NEXT, top_key(r->name, NULL, RLK_NAMES_GRANT), 2, "GET", NULL) ||
        top_batch_add(b, r, TOP_W_FAIRLEN, top_key(r->name, RLK_NAMES_QUEUE, NULL), 2,
                      "LLEN", NULL))
        return -1;
    return 0;
}

/* rlk's queue and reservation of a shown lock that step 4 did not read. */
static int top_add_queues_always(top_batch *b, top_row *r)
{
    if (r->flags & (TOP_F_WAITERS | TOP_F_NEXT | TOP_F_QUEUE | TOP_F_TIMEOUT))
        return 0;   /* read in step 4 */
    if (top_batch_add(b, r, TOP_W_QUEUED, top_key(r->name, NULL, RLK_NAMES_WAITERS), 2, "LLEN",
                      NULL) ||
        top_batch_add(b, r, TOP_W_NEXT, top_key(r->name, NULL, RLK_NAMES_GRANT), 2, "GET", NULL))
        return -1;
    return 0;
}

/* Step 5: what a shown row adds. */
static int top_add_shown(top_batch *b, top_row *r)
{
    if (r->kind != RLK_IK_NONE &&
        top_batch_add(b, r, TOP_W_TTL, strdup(r->name), 2, "PTTL", NULL))
        return -1;
    if (r->hash_lock &&
        (b->no_hrandfield
             ? top_batch_add(b, r, TOP_W_HOLDERS, strdup(r->name), 2, "HGETALL", NULL)
             : top_batch_add(b, r, TOP_W_HOLDERS, strdup(r->name), 4, "HRANDFIELD", NULL,
                             TOP_SAMPLE_S, "WITHVALUES")))
        return -1;
    if ((r->hash_lock || r->kind == RLK_IK_NONE) && !r->subs &&
        top_add_queues_always(b, r) != 0)
        return -1;
    if (r->hash_lock || r->kind == RLK_IK_NONE) {
        /* the fenced lock's token key; the fair lock's queue and deadlines */
        char *tok = top_key(r->name, RLK_NAMES_TOKEN, NULL);
        char *q = top_key(r->name, RLK_NAMES_QUEUE, NULL);
        char *t = top_key(r->name, RLK_NAMES_TIMEOUTS, NULL);

        if (!tok || !q || !t || top_batch_add(b, r, TOP_W_TOKEN, tok, 2, "EXISTS", NULL) ||
            top_batch_add(b, r, TOP_W_FAIRLEN, q, 2, "LLEN", NULL) ||
            top_batch_add(b, r, TOP_W_FAIRQ, strdup(q), 4, "LRANGE", NULL, "0", "4") ||
            top_batch_add(b, r, TOP_W_FAIRT, t, 5, "ZRANGE", NULL, "0", "-1", "WITHSCORES")) {
            return -1;
        }
    }
    return 0;
}

/* ---------------------------------------------------------------- sorting */

static long long top_waiting(const top_row *r)
{
    return r->queued + r->fair_queued;
}

static int top_sort_mode;
static long long top_sort_now;

static int top_cmp(const void *pa, const void *pb)
{
    const top_row *a = *(top_row *const *)pa, *b = *(top_row *const *)pb;
    long long d;

    if (top_sort_mode == TOP_SORT_WAITERS) {
        if ((d = top_waiting(b) - top_waiting(a)) != 0)
            return d > 0 ? 1 : -1;
        if ((d = b->subs - a->subs) != 0)
            return d > 0 ? 1 : -1;
        if ((d = (long long)b->nholders - (long long)a->nholders) != 0)
            return d > 0 ? 1 : -1;
    } else if (top_sort_mode == TOP_SORT_AGE) {
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

static unsigned long long top_sig(const top_row *r)
{
    unsigned long long h = 7;

    for (size_t k = 0; k < r->nholders; k++)
        h = h * 31 + top_hash(r->holders[k].owner, r->holders[k].owner_len);
    return h;
}

static int top_server_now(top_state *s)
{
    const char *argv[1] = {"TIME"};
    redisReply *r = top_cmd(s, &s->nodes[0], 1, argv);

    s->now_ms = top_wall_ms();
    if (!r)
        return RLK_ERR_IO;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        s->now_ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return RLK_OK;
}

/* One refresh into s->t; *rows gets the rows sorted (all of them), *nrows. */
static int top_refresh(top_state *s, top_row ***rows, size_t *nrows)
{
    long long t0 = rlk_lc_now_ns();
    top_batch *b = calloc((size_t)s->nnodes, sizeof *b);
    top_row **all = NULL;
    size_t n = 0, shown;
    int rc = RLK_OK;

    *rows = NULL;
    *nrows = 0;
    if (!b)
        return RLK_ERR_NOMEM;
    top_table_free(&s->old);
    s->old = s->t;
    memset(&s->t, 0, sizeof s->t);
    s->scanned = 0;
    s->err[0] = '\0';
    for (int i = 0; rc == RLK_OK && i < s->nnodes; i++)
        rc = top_scan_node(s, i, "hash");
    for (int i = 0; rc == RLK_OK && i < s->nnodes; i++)
        rc = top_scan_node(s, i, "string");
    for (int i = 0; rc == RLK_OK && i < s->nnodes; i++)
        rc = top_pubsub_node(s, i);
    if (rc == RLK_OK)
        rc = top_server_now(s);
    if (rc == RLK_OK && !(all = calloc(s->t.n + 1, sizeof *all)))
        rc = RLK_ERR_NOMEM;
    for (size_t i = 0; rc == RLK_OK && i < s->t.cap; i++) {
        top_row *r = s->t.slot[i], *old;

        if (!r || r->kind == RLK_IK_OTHER)
            continue;
        if (r->kind == RLK_IK_NONE && !r->subs && !(r->flags & (TOP_F_QUEUE | TOP_F_WAITERS)))
            continue;   /* a companion alone (a latch mark, a free psemaphore's zset) */
        old = top_find(&s->old, r->name, strlen(r->name));
        r->first_ms = old && old->first_ms ? old->first_ms : s->now_ms;
        r->sig = old ? old->sig : 0;
        all[n++] = r;
    }
    for (int i = 0; i < s->nnodes; i++)
        b[i].node = i;
    for (size_t i = 0; rc == RLK_OK && i < n; i++)
        if (top_add_queues(&b[top_node_of(s, all[i])], all[i]) != 0)
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
        if (top_add_shown(&b[top_node_of(s, all[i])], all[i]) != 0)
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
            top_batch_add(&b[top_node_of(s, all[i])], all[i], TOP_W_GROUP, strdup(all[i]->name),
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

/* ---------------------------------------------------------------- output */

typedef struct top_totals {
    long long locks, semaphores, psemaphores, latches, queued, subs, permits, free_waited;
} top_totals;

/* A lock hash (held: the scripts delete it with its last holder). */
static int top_is_lock(const top_row *r)
{
    return r->hash_lock || r->kind == RLK_IK_RWLOCK ||
           (r->kind == RLK_IK_FASTMULTI && r->nholders > 0);
}

/* The wait-for graph of the names with waiters in rlk's or the fair queue (read
 * with the refresh; no SCAN of its own); NULL when it could not be read ("waits":
 * null, the rest still shown). */
static rlk_waitgraph *rlk_top_waits_read(rlk_client *c, top_row **rows, size_t n)
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

static void top_total(top_row **rows, size_t n, top_totals *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < n; i++) {
        const top_row *r = rows[i];

        t->locks += top_is_lock(r);
        t->semaphores += r->kind == RLK_IK_SEMAPHORE;
        t->psemaphores += r->kind == RLK_IK_PSEMAPHORE;
        t->latches += r->kind == RLK_IK_LATCH;
        t->free_waited += r->kind == RLK_IK_NONE;
        if (r->kind == RLK_IK_PSEMAPHORE && r->permit_holders > 0)
            t->permits += r->permit_holders;
        t->queued += top_waiting(r);
        t->subs += r->subs;
    }
}

static const char *top_kind_word(const top_row *r)
{
    if (r->kind == RLK_IK_NONE)
        return "free";
    return rlk_ik_word(r->kind);
}

static void top_print_json(top_state *s, top_row **rows, size_t n)
{
    top_totals t;
    size_t shown = n < (size_t)s->o.limit ? n : (size_t)s->o.limit;

    top_total(rows, n, &t);
    printf("{\"time_ms\":%lld,\"refresh_ms\":%lld,\"scanned\":%lld,\"nodes\":[", s->now_ms,
           s->refresh_ms, s->scanned);
    for (int i = 0; i < s->nnodes; i++) {
        fputs(i ? "," : "", stdout);
        rlk_lc_json_string(stdout, s->nodes[i].addr, strlen(s->nodes[i].addr));
    }
    printf("],\"sort\":\"%s\",\"totals\":{\"rows\":%zu,\"locks\":%lld,\"free_waited\":%lld,"
           "\"semaphores\":%lld,\"psemaphores\":%lld,\"permit_holders\":%lld,"
           "\"latches\":%lld,\"queued\":%lld,\"subscribers\":%lld},\"locks\":[",
           top_sort_words[s->o.sort], n, t.locks, t.free_waited, t.semaphores, t.psemaphores,
           t.permits, t.latches, t.queued, t.subs);
    for (size_t i = 0; i < shown; i++) {
        const top_row *r = rows[i];

        fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
        rlk_lc_json_string(stdout, r->name, strlen(r->name));
        printf(",\"kind\":\"%s\",\"holders\":[", top_kind_word(r));
        for (size_t k = 0; k < r->nholders; k++) {
            fputs(k ? "," : "", stdout);
            rlk_ik_json_holder(stdout, &r->holders[k], 1);
        }
        printf("],\"ttl_ms\":%lld,\"queued\":%lld,\"fair_queued\":%lld,\"reserved\":",
               r->ttl_ms, r->queued, r->fair_queued);
        if (r->reserved[0])
            rlk_lc_json_string(stdout, r->reserved, strlen(r->reserved));
        else
            fputs("null", stdout);
        fputs(",\"fair_queue\":[", stdout);
        for (size_t k = 0; k < r->nfq; k++) {
            fputs(k ? ",{\"owner\":" : "{\"owner\":", stdout);
            rlk_lc_json_string(stdout, r->fq[k].owner, r->fq[k].owner_len);
            printf(",\"deadline_in_ms\":%lld}", r->fq[k].deadline_in_ms);
        }
        printf("],\"subscribers\":%lld", r->subs);
        if (r->mode)
            printf(",\"mode\":\"%s\"", r->mode);
        if (r->kind == RLK_IK_SEMAPHORE || r->kind == RLK_IK_PSEMAPHORE)
            printf(",\"permits\":%lld", r->count);
        if (r->kind == RLK_IK_PSEMAPHORE)
            printf(",\"permit_holders\":%lld", r->permit_holders);
        if (r->kind == RLK_IK_LATCH)
            printf(",\"count\":%lld", r->count);
        if (r->kind == RLK_IK_FASTMULTI) {
            fputs(",\"values\":[", stdout);
            for (size_t k = 0; k < r->nvalues; k++) {
                fputs(k ? "," : "", stdout);
                rlk_ik_json_value(stdout, &r->values[k]);
            }
            fputs("]", stdout);
        }
        printf(",\"age_ms\":%lld}", top_is_lock(r) ? s->now_ms - r->first_ms : 0);
    }
    fputs("],\"waits\":", stdout);
    rlk_top_waits_json(stdout, s->wg);
    fputs("}\n", stdout);
    fflush(stdout);
}

/* The terminal's size (cols, rows); 120 x 0 when stdout is not a terminal. */
static void top_size(int *cols, int *rows)
{
    struct winsize w;

    *cols = 120;
    *rows = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) {
        *cols = w.ws_col;
        *rows = w.ws_row;
    }
}

/* The marker of a cut text: "…" in a UTF-8 locale, else "~". */
static const char *top_marker(void)
{
    static const char *m;

    if (!m) {
        const char *v = getenv("LC_ALL");

        if (!v || !*v)
            v = getenv("LC_CTYPE");
        if (!v || !*v)
            v = getenv("LANG");
        m = v && (strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") ||
                  strstr(v, "utf-8")) ? "\xe2\x80\xa6" : "~";
    }
    return m;
}

/* Columns of s (UTF-8: one per character; rlk_cli_show has made every control visible). */
static int top_width(const char *s)
{
    int w = 0;

    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

/* Appends s to out (cap bytes), padded with spaces or cut with the marker to exactly w
 * columns (w < 0: as it is). */
static void top_cell(char *out, size_t cap, const char *s, int w, int right)
{
    size_t at = strlen(out);
    int sw = top_width(s);

    if (w < 0 || sw <= w) {
        int pad = w < 0 ? 0 : w - sw;

        snprintf(out + at, cap - at, "%*s%s%*s", right ? pad : 0, "", s, right ? 0 : pad, "");
        return;
    }
    {
        int keep = w - 1, cols = 0;
        size_t i = 0;

        while (s[i] && cols < keep + 1) {
            if (((unsigned char)s[i] & 0xc0) != 0x80 && cols++ == keep)
                break;
            i++;
        }
        if (w > 0)
            snprintf(out + at, cap - at, "%.*s%s", (int)i, s, top_marker());
    }
}

/* One line of the view, cut to cols columns (no wrap, so the header never scrolls away). */
static void top_line(int cols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void top_line(int cols, const char *fmt, ...)
{
    char buf[4096], out[4200] = "";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    top_cell(out, sizeof out, buf, top_width(buf) > cols ? cols : -1, 0);
    printf("%s\n", out);
}

/* The fixed columns besides NAME and HOLDER: " %-10s " KIND (12) before HOLDER, and
 * " %8s %6s %5s %6s %5s %6s" after it (42). */
#define TOP_FIXED_COLS 54

static void top_print_text(top_state *s, top_row **rows, size_t n, int tty)
{
    top_totals t;
    size_t shown = n < (size_t)s->o.limit ? n : (size_t)s->o.limit, i;
    int cols, height, avail, namew, holderw, budget;
    time_t now = (time_t)(s->now_ms / 1000);
    struct tm tm;
    char when[16], line[4200];

    top_size(&cols, &height);
    if (!tty)
        height = 0;
    /* NAME and HOLDER share what the fixed columns leave: NAME half (8 .. 48). */
    avail = cols - TOP_FIXED_COLS;
    namew = avail / 2;
    namew = namew < 8 ? 8 : namew > 48 ? 48 : namew;
    holderw = avail - namew;
    if (holderw < 8)
        holderw = 8;
    /* Lines for the rows: the terminal's height less the 4 header and 2 footer lines, and
     * one so that the last newline does not scroll. */
    budget = height > 0 ? height - 7 : -1;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    top_total(rows, n, &t);
    if (tty)
        fputs("\033[H\033[J", stdout);
    top_line(cols, "rlk top - %s%s (%d node%s) - %s UTC - refresh %lld ms, %lld keys scanned, "
             "sort %s", s->nodes[0].addr, s->nnodes > 1 ? " ..." : "", s->nnodes,
             s->nnodes > 1 ? "s" : "", when, s->refresh_ms, s->scanned,
             top_sort_words[s->o.sort]);
    top_line(cols, "locks held %lld  free with waiters %lld  semaphores %lld  psemaphores %lld "
             "(%lld permits held)  latches %lld  queued %lld  subscribers %lld",
             t.locks, t.free_waited, t.semaphores, t.psemaphores, t.permits, t.latches,
             t.queued, t.subs);
    for (size_t k = 0, nd = rlk_top_deadlock_line(s->wg, cols, 0, line, sizeof line); k < nd;
         k++) {
        rlk_top_deadlock_line(s->wg, cols, k, line, sizeof line);
        top_line(cols, "%s", line);
        if (budget > 0)
            budget--;
    }
    top_line(cols, "%s", "");
    line[0] = '\0';
    top_cell(line, sizeof line, "NAME", namew, 0);
    top_cell(line, sizeof line, " KIND       ", -1, 0);   /* as wide as a row's " %-10s " */
    top_cell(line, sizeof line, "HOLDER", holderw, 0);
    top_line(cols, "%s %8s %6s %5s %6s %5s %6s", line, "TTL(ms)", "QUEUED", "SUBS", "COUNT",
             "MODE", "AGE(s)");
    for (i = 0; i < shown; i++) {
        const top_row *r = rows[i];
        char holder[1024] = "-", ttl[24] = "-", count[24] = "-", q[24], kind[16], age[24] = "-";
        size_t nfq = r->nfq < 3 ? r->nfq : 3;

        if (budget >= 0 && (long long)(1 + nfq) > budget)
            break;
        if (budget >= 0)
            budget -= (int)(1 + nfq);
        if (r->nholders) {
            const char *id = rlk_cli_shown(r->holders[0].owner, r->holders[0].owner_len);
            char more[24] = "";
            int idw;

            if (r->nholders > 1)
                snprintf(more, sizeof more, " +%zu", r->nholders - 1);
            /* The id is cut, never the count of the others. */
            idw = holderw - top_width(more);
            holder[0] = '\0';
            top_cell(holder, sizeof holder - sizeof more, id,
                     top_width(id) > idw ? (idw > 0 ? idw : 0) : -1, 0);
            strcat(holder, more);
        } else if (r->kind == RLK_IK_PSEMAPHORE && r->permit_holders > 0) {
            snprintf(holder, sizeof holder, "%lld permit holder%s", r->permit_holders,
                     r->permit_holders == 1 ? "" : "s");
        } else if (r->reserved[0]) {
            snprintf(holder, sizeof holder, "(reserved for ticket %s)",
                     rlk_cli_show(r->reserved));
        }
        if (r->ttl_ms >= 0)
            snprintf(ttl, sizeof ttl, "%lld", r->ttl_ms);
        else if (r->ttl_ms == -1)
            snprintf(ttl, sizeof ttl, "none");
        if (r->nholders)
            snprintf(count, sizeof count, "%lld", r->holders[0].count);
        else if (r->kind == RLK_IK_SEMAPHORE || r->kind == RLK_IK_PSEMAPHORE ||
                 r->kind == RLK_IK_LATCH)
            snprintf(count, sizeof count, "%lld", r->count);
        snprintf(q, sizeof q, "%lld", top_waiting(r));
        snprintf(kind, sizeof kind, " %-10s ", top_kind_word(r));
        line[0] = '\0';
        top_cell(line, sizeof line, rlk_cli_show(r->name), namew, 0);
        top_cell(line, sizeof line, kind, -1, 0);
        top_cell(line, sizeof line, holder, holderw, 0);
        /* AGE is a lock's: a semaphore's or a latch's row has none. */
        if (top_is_lock(r))
            snprintf(age, sizeof age, "%lld", (s->now_ms - r->first_ms) / 1000);
        top_line(cols, "%s %8s %6s %5lld %6s %5.5s %6s", line, ttl, q, r->subs, count,
                 r->mode ? rlk_cli_show(r->mode)
                 : r->nholders && r->holders[0].mode ? rlk_cli_show(r->holders[0].mode) : "-",
                 age);
        for (size_t k = 0; k < nfq; k++) {
            /* The waiter's id is cut, never its deadline. */
            char tail[64], id[1024] = "";
            const char *who = rlk_cli_shown(r->fq[k].owner, r->fq[k].owner_len);
            int idw;

            snprintf(tail, sizeof tail, "  deadline in %lld ms", r->fq[k].deadline_in_ms);
            idw = cols - namew - (int)strlen("   waiter ") - top_width(tail);
            top_cell(id, sizeof id, who, top_width(who) > idw ? (idw > 1 ? idw : 1) : -1, 0);
            top_line(cols, "%*s   waiter %s%s", namew, "", id, tail);
        }
    }
    if (n > i)
        top_line(cols, "... %zu more (%s)", n - i, i < shown ? "the terminal's height" : "--limit");
    if (tty) {
        printf("\n");
        line[0] = '\0';
        top_cell(line, sizeof line, "[q] quit  [s] sort: ", -1, 0);
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s  every %lld ms",
                 top_sort_words[s->o.sort], s->o.interval_ms);
        {
            char out[4200] = "";

            top_cell(out, sizeof out, line, top_width(line) > cols ? cols : -1, 0);
            fputs(out, stdout);     /* no newline: the last line of the screen stays */
        }
    }
    fflush(stdout);
}

/* ---------------------------------------------------------------- the terminal */

static struct termios top_saved_tio;
static int top_raw, top_alt;
static volatile sig_atomic_t top_resized;

static void top_on_winch(int sig)
{
    (void)sig;
    top_resized = 1;
}

/* Back to the normal screen (the view leaves nothing behind, as top and htop) and the
 * terminal's own mode. */
static void top_tty_restore(void)
{
    if (top_alt) {
        fputs("\033[?1049l", stdout);     /* rmcup */
        fflush(stdout);
        top_alt = 0;
    }
    if (top_raw) {
        tcsetattr(STDIN_FILENO, TCSANOW, &top_saved_tio);
        top_raw = 0;
    }
}

/* The alternate screen (smcup), keys without echo, redraw on SIGWINCH. */
static void top_tty_raw(void)
{
    struct sigaction sa;
    struct termios t;

    memset(&sa, 0, sizeof sa);
    sa.sa_handler = top_on_winch;   /* no SA_RESTART: the wait's poll returns at once */
    sigaction(SIGWINCH, &sa, NULL);
    fputs("\033[?1049h", stdout);
    fflush(stdout);
    top_alt = 1;
    atexit(top_tty_restore);
    if (!isatty(STDIN_FILENO) || tcgetattr(STDIN_FILENO, &top_saved_tio) != 0)
        return;
    t = top_saved_tio;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(STDIN_FILENO, TCSANOW, &t) == 0)
        top_raw = 1;
}

/* Waits until end_ns for a key; handles it. 0: refresh, 1: quit, 2: the terminal was
 * resized (redraw, then wait on). */
static int top_wait_key(top_state *s, long long end_ns)
{
    while (!top_stop) {
        long long left = (end_ns - rlk_lc_now_ns()) / 1000000LL;
        struct pollfd p = {STDIN_FILENO, POLLIN, 0};
        char ch;
        int got;

        if (top_resized) {
            top_resized = 0;
            return 2;
        }
        if (left <= 0)
            return 0;
        got = poll(&p, top_raw ? 1 : 0, (int)left);
        if (got <= 0)
            continue;
        if (read(STDIN_FILENO, &ch, 1) != 1)
            return 0;
        if (ch == 'q' || ch == 'Q')
            return 1;
        if (ch == 's' || ch == 'S') {
            s->o.sort = (s->o.sort + 1) % TOP_SORTS;
            return 0;   /* refresh now, in the new order */
        }
    }
    return 1;
}

/* ---------------------------------------------------------------- parsing, main */

static int top_int_opt(int argc, char **argv, int *i, const char *name, long long lo,
                       long long hi, long long *out, int *got)
{
    const char *v;
    char *end;
    int g = rlk_cli_opt_value("top", argc, argv, i, name, &v);

    if (g <= 0)
        return g;
    *got = 1;
    *out = strtoll(v, &end, 10);
    if (end == v || *end || *out < lo || *out > hi) {
        rlk_cli_usage("top", "%s: a whole number from %lld to %lld, not '%s'", name, lo, hi, v);
        return -1;
    }
    return 1;
}

static int top_parse(int argc, char **argv, top_opts *o)
{
    for (int i = 1; i < argc;) {
        const char *v = NULL;
        long long n = 0;
        int got = rlk_cli_opt_value("top", argc, argv, &i, "--url", &o->url), set = 0;

        if (got == 0 && (got = rlk_cli_opt_value("top", argc, argv, &i, "--pattern", &v)) > 0) {
            if (!v[0])
                return rlk_cli_usage("top", "--pattern must not be empty");
            o->pattern = v;
        }
        if (got == 0 && (got = rlk_cli_opt_value("top", argc, argv, &i, "--interval", &v)) > 0 &&
            rlk_lc_parse_seconds("top", "--interval", v, &o->interval_ms) != 0)
            return RLK_EXIT_USAGE;
        if (got == 0 && (got = rlk_cli_opt_value("top", argc, argv, &i, "--sort", &v)) > 0) {
            o->sort = 0;
            while (o->sort < TOP_SORTS && strcmp(top_sort_words[o->sort], v) != 0)
                o->sort++;
            if (o->sort == TOP_SORTS)
                return rlk_cli_usage("top", "--sort: waiters, age or name, not '%s'", v);
        }
        if (got == 0 && (got = top_int_opt(argc, argv, &i, "--limit", 1, 1000000, &n, &set)) > 0)
            o->limit = (int)n;
        if (got == 0 && (got = top_int_opt(argc, argv, &i, "--count", 10, 10000, &n, &set)) > 0)
            o->count = (int)n;
        if (got == 0 && (got = top_int_opt(argc, argv, &i, "--rate", 1, 100000, &n, &set)) > 0)
            o->rate = (int)n;
        if (got == 0)
            got = rlk_cli_global_opt("top", argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(top_usage, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--once") == 0)
            o->once = 1;
        else if (argv[i][0] == '-')
            return rlk_cli_unknown_option("top", argv[i]);
        else
            return rlk_cli_usage("top", "unexpected argument '%s'", argv[i]);
        i++;
    }
    if (o->interval_ms < 100)
        return rlk_cli_usage("top", "--interval: at least 0.1 s");
    return -1;
}

static int top_connect_nodes(top_state *s)
{
    rlk_client *m[TOP_NODES_MAX];
    int n = 1, rc;

    if (rlk_topo_routed(s->c)) {
        n = rlk_cluster_masters(s->c, m, TOP_NODES_MAX);
        if (n <= 0) {
            snprintf(s->err, sizeof s->err, "no cluster master known");
            return RLK_ERR_IO;
        }
    } else {
        m[0] = s->c;
    }
    for (int i = 0; i < n; i++) {
        if ((rc = rlk_conn_open(m[i], &s->nodes[i].ctx)) != RLK_OK) {
            snprintf(s->err, sizeof s->err, "%s", rlk_errstr(m[i]));
            return rc;
        }
        snprintf(s->nodes[i].addr, sizeof s->nodes[i].addr, "%s", m[i]->addr);
        s->nnodes = i + 1;
    }
    return RLK_OK;
}

static int top_run(int argc, char **argv)
{
    static top_state s;
    int rc, code, tty, limit_given;
    struct sigaction sa;

    memset(&s, 0, sizeof s);
    s.o.pattern = "*";
    s.o.interval_ms = 2000;
    s.o.count = 1000;
    s.o.rate = 1000;
    if ((rc = top_parse(argc, argv, &s.o)) >= 0)
        return rc;
    tty = isatty(STDOUT_FILENO) && !s.o.json && !s.o.once;
    limit_given = s.o.limit != 0;
    if (!s.o.limit) {
        struct winsize w;

        s.o.limit = s.o.json ? 100 : 50;
        if (tty && ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row > 8)
            s.o.limit = w.ws_row - 7;
    }
    if (!(s.c = rlk_cli_connect(s.o.url, NULL, 1, &code)))
        return code;
    if ((rc = top_connect_nodes(&s)) != RLK_OK) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "top: %s", s.err);
        goto out;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = top_on_signal;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (tty)
        top_tty_raw();
    code = RLK_EXIT_OK;
    while (!top_stop) {
        top_row **rows;
        size_t n;
        long long next_ns = rlk_lc_now_ns() + s.o.interval_ms * 1000000LL;
        int k = 0;

        rc = top_refresh(&s, &rows, &n);
        rlk_waitgraph_free(s.wg);
        s.wg = rc == RLK_OK ? rlk_top_waits_read(s.c, rows, n) : NULL;
        if (rc == RLK_ERR_INTERRUPTED)
            break;
        if (rc != RLK_OK) {
            top_tty_restore();
            code = rlk_cli_fail(rlk_cli_exit_code(rc), "top: %s", s.err[0] ? s.err : "failed");
            break;
        }
        do {
            if (k == 2 && tty && !limit_given) {
                struct winsize w;

                if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row > 8)
                    s.o.limit = w.ws_row - 7;
            }
            if (s.o.json)
                top_print_json(&s, rows, n);
            else
                top_print_text(&s, rows, n, tty);
        } while (!s.o.once && (k = top_wait_key(&s, next_ns)) == 2);
        free(rows);
        if (s.o.once || k == 1)
            break;
    }
    top_tty_restore();
out:
    rlk_waitgraph_free(s.wg);
    top_table_free(&s.t);
    top_table_free(&s.old);
    for (int i = 0; i < s.nnodes; i++)
        rlk_transport_free(s.nodes[i].ctx);
    rlk_free(s.c);
    return code;
}

const rlk_cli_command rlk_cmd_top = {
    "top",
    "a live view of the server's locks, waiters and semaphores (rlk top [--once] [--json])",
    top_usage,
    top_run,
};
