/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inspect_read.c - see inspect.h.
 *
 * Detection, from the key NAME's type and the companion keys Redisson
 * derives from the name (the library's handles give their names):
 *   hash with a `mode` field                         rwlock
 *   hash of counts, with redisson_lock_token:{NAME}   fenced
 *   hash of counts, with a fair queue or timeout key  fair
 *   hash of counts, {NAME}:rlk_kind=fair             fair (rlk lock --fair's marker)
 *   hash of counts                                   reentrant
 *   hash of value -> holder and value:holder:expire_time / :lock_count
 *                                                    fastmulti (a faster-MultiLock group)
 *   string holding an integer, with {NAME}:timeout   psemaphore
 *   string holding an integer, {NAME}:rlk_kind=latch latch (rlk latch's marker)
 *   string holding an integer                        semaphore (a latch looks the same)
 *   other string                                     token
 *   no key, but a fair queue / permits / a token key fair / psemaphore / fenced, free
 *   no key                                           none
 */
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "kind_mark.h"
#include "kinds/names.h"
#include "runtime/fam.h"

typedef struct ik_keys {
    char *queue;                /* redisson_lock_queue:{name} */
    char *timeout;              /* redisson_lock_timeout:{name} */
    char *fence;                /* redisson_lock_token:{name} */
    char *permits;              /* {name}:timeout */
} ik_keys;

static const struct {
    int kind;
    const char *word;
    const char *label;
} ik_names[] = {
    {RLK_IK_NONE, "none", "no lock"},
    {RLK_IK_OTHER, "other", "not a lock rlk knows"},
    {RLK_IK_REENTRANT, "reentrant", "reentrant lock"},
    {RLK_IK_RWLOCK, "rwlock", "read-write lock"},
    {RLK_IK_FAIR, "fair", "fair lock"},
    {RLK_IK_FENCED, "fenced", "fenced lock"},
    {RLK_IK_TOKEN, "token", "token lock"},
    {RLK_IK_SEMAPHORE, "semaphore", "semaphore"},
    {RLK_IK_PSEMAPHORE, "psemaphore", "permit-expirable semaphore"},
    {RLK_IK_LATCH, "latch", "count-down latch"},
    {RLK_IK_FASTMULTI, "fastmulti", "faster MultiLock group"},
};

#define IK_NKINDS (sizeof ik_names / sizeof ik_names[0])

const char *rlk_ik_word(int kind)
{
    for (size_t k = 0; k < IK_NKINDS; k++)
        if (ik_names[k].kind == kind)
            return ik_names[k].word;
    return "unknown";
}

const char *rlk_ik_label(int kind)
{
    for (size_t k = 0; k < IK_NKINDS; k++)
        if (ik_names[k].kind == kind)
            return ik_names[k].label;
    return "unknown";
}

int rlk_ik_from_word(const char *word)
{
    for (size_t k = 2; k < IK_NKINDS; k++)     /* not none, not other */
        if (strcmp(ik_names[k].word, word) == 0)
            return ik_names[k].kind;
    return RLK_IK_NONE;
}

/* ---------------------------------------------------------------- commands */

static int ik_cmd(rlk_client *c, int argc, const char *a0, const char *a1, const char *a2,
                  const char *a3, redisReply **r)
{
    const char *argv[5] = {a0, a1, a2, a3, NULL};

    *r = NULL;
    return rlk_command(c, argc, argv, NULL, r);
}

/* The key's type into buf ("none", "hash", ...). */
static int ik_type(rlk_client *c, const char *key, char *buf, size_t len)
{
    redisReply *r;
    int rc = ik_cmd(c, 2, "TYPE", key, NULL, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    snprintf(buf, len, "%s", r->type == REDIS_REPLY_STATUS ? r->str : "unknown");
    freeReplyObject(r);
    return RLK_OK;
}

static int ik_exists(rlk_client *c, const char *key, int *exists)
{
    char type[64];
    int rc = ik_type(c, key, type, sizeof type);

    *exists = rc == RLK_OK && strcmp(type, "none") != 0;
    return rc;
}

static int ik_int(rlk_client *c, int argc, const char *a0, const char *a1, long long *out)
{
    redisReply *r;
    int rc = ik_cmd(c, argc, a0, a1, NULL, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    *out = r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
    freeReplyObject(r);
    return RLK_OK;
}

/* The server's clock in ms (TIME). */
static int ik_server_ms(rlk_client *c, long long *now)
{
    redisReply *r;
    int rc = ik_cmd(c, 1, "TIME", NULL, NULL, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    *now = 0;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        *now = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    freeReplyObject(r);
    return RLK_OK;
}

/* A decimal integer (optional '-'), whole string; 0 or -1. */
static int ik_parse_int(const char *s, size_t len, long long *out)
{
    char *end;

    if (len == 0 || len > 20)
        return -1;
    *out = strtoll(s, &end, 10);
    return (size_t)(end - s) == len ? 0 : -1;
}

/* ---------------------------------------------------------------- keys */

static int ik_keys_make(rlk_client *c, const char *name, ik_keys *k)
{
    rlk_fairlock *f = rlk_fairlock_new(c, name);
    rlk_fenced *fe = rlk_fenced_new(c, name);
    rlk_psemaphore *ps = rlk_psemaphore_new(c, name);
    int rc = RLK_ERR_NOMEM;

    memset(k, 0, sizeof *k);
    if (f && fe && ps) {
        k->queue = strdup(rlk_fairlock_queue_name(f));
        k->timeout = strdup(rlk_fairlock_timeout_name(f));
        k->fence = strdup(rlk_fenced_token_name(fe));
        k->permits = strdup(rlk_psemaphore_timeouts_key(ps));
        if (k->queue && k->timeout && k->fence && k->permits)
            rc = RLK_OK;
    }
    rlk_fairlock_free(f);
    rlk_fenced_free(fe);
    rlk_psemaphore_free(ps);
    return rc;
}

static void ik_keys_free(ik_keys *k)
{
    free(k->queue);
    free(k->timeout);
    free(k->fence);
    free(k->permits);
}

static void ik_keep(rlk_ik_view *v, redisReply *r)
{
    for (size_t k = 0; k < sizeof v->keep / sizeof v->keep[0]; k++) {
        if (!v->keep[k]) {
            v->keep[k] = r;
            return;
        }
    }
    freeReplyObject(r);     /* not reached: at most 3 kept replies */
}

/* ---------------------------------------------------------------- locks (hashes) */

static int ik_has_suffix(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* A holder entry from field f = value val; 0, or -1 when val is not a count. */
static int ik_holder(rlk_ik_holder *h, const redisReply *f, const redisReply *val, int rw)
{
    if (val->type != REDIS_REPLY_STRING || ik_parse_int(val->str, val->len, &h->count) < 0 ||
        h->count <= 0)
        return -1;
    h->owner = f->str;
    h->owner_len = f->len;
    if (rw) {
        int w = ik_has_suffix(f->str, f->len, ":write");

        h->mode = w ? "write" : "read";
        h->owner_len -= w ? 6 : 0;
    }
    return 0;
}

/* Holders from HGETALL (rwlock's `mode` field aside). 0, or -1: not a lock. */
static int ik_holders(const redisReply *all, rlk_ik_view *v)
{
    int rw = v->mode != NULL;

    v->holders = calloc(all->elements / 2 + 1, sizeof *v->holders);
    if (!v->holders)
        return -1;
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        const redisReply *f = all->element[k];

        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0) {
            if (rw)
                continue;
            return -1;
        }
        if (ik_holder(&v->holders[v->nholders], f, all->element[k + 1], rw) < 0)
            return -1;
        v->nholders++;
    }
    return 0;
}

static const char *ik_mode_field(const redisReply *all)
{
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        const redisReply *f = all->element[k];

        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0)
            return all->element[k + 1]->str;
    }
    return NULL;
}

/* HGETALL + PTTL. *not_lock = 1 when the hash is not a lock of any kind. */
static int ik_read_hash(rlk_client *c, rlk_ik_view *v, int *not_lock)
{
    redisReply *all;
    int rc = ik_cmd(c, 2, "HGETALL", v->name, NULL, NULL, &all);

    *not_lock = 0;
    if (rc != RLK_OK)
        return rc;
    ik_keep(v, all);
    if (all->type != REDIS_REPLY_ARRAY)
        return RLK_ERR_PROTOCOL;
    v->mode = ik_mode_field(all);
    if (ik_holders(all, v) < 0) {
        *not_lock = 1;
        v->nholders = 0;
        return RLK_OK;
    }
    return ik_int(c, 2, "PTTL", v->name, &v->ttl_ms);
}

/* The fair lock's queue with each waiter's deadline. */
static int ik_read_queue(rlk_client *c, rlk_ik_view *v, const ik_keys *keys)
{
    const char *zrange[5] = {"ZRANGE", keys->timeout, "0", "-1", "WITHSCORES"};
    redisReply *list, *scores = NULL;
    long long now = 0;
    int rc = ik_cmd(c, 4, "LRANGE", keys->queue, "0", "-1", &list);

    if (rc != RLK_OK)
        return rc;
    ik_keep(v, list);
    if ((rc = rlk_command(c, 5, zrange, NULL, &scores)) != RLK_OK)
        return rc;
    ik_keep(v, scores);
    if ((rc = ik_server_ms(c, &now)) != RLK_OK || list->type != REDIS_REPLY_ARRAY)
        return rc;
    v->queue = calloc(list->elements + 1, sizeof *v->queue);
    if (!v->queue)
        return RLK_ERR_NOMEM;
    for (size_t k = 0; k < list->elements; k++) {
        rlk_ik_waiter *w = &v->queue[v->nqueue++];

        w->owner = list->element[k]->str;
        w->owner_len = list->element[k]->len;
        w->deadline_ms = -1;
        for (size_t j = 0; scores->type == REDIS_REPLY_ARRAY && j + 1 < scores->elements; j += 2)
            if (scores->element[j]->len == w->owner_len &&
                memcmp(scores->element[j]->str, w->owner, w->owner_len) == 0)
                w->deadline_ms = atoll(scores->element[j + 1]->str);
        w->deadline_in_ms = w->deadline_ms >= 0 ? w->deadline_ms - now : -1;
    }
    return RLK_OK;
}

/* ---------------------------------------------------------------- fastmulti groups */

/* A holder's field of a group: `value:holder:expire_time` or `:lock_count`
 * with an integer. */
static int ik_fm_aux(const redisReply *f, const redisReply *val)
{
    long long x;

    return (ik_has_suffix(f->str, f->len, ":expire_time") ||
            ik_has_suffix(f->str, f->len, ":lock_count")) &&
           val->type == REDIS_REPLY_STRING && ik_parse_int(val->str, val->len, &x) == 0;
}

typedef struct ik_fm_field {
    const redisReply *f, *val;
} ik_fm_field;

static int ik_fm_cmp_str(const char *a, size_t alen, const char *b, size_t blen)
{
    int d = memcmp(a, b, alen < blen ? alen : blen);

    return d ? d : (alen > blen) - (alen < blen);
}

static int ik_fm_cmp_field(const void *a, const void *b)
{
    const ik_fm_field *x = a, *y = b;

    return ik_fm_cmp_str(x->f->str, x->f->len, y->f->str, y->f->len);
}

static int ik_fm_cmp_value(const void *a, const void *b)
{
    const rlk_ik_value *x = a, *y = b;

    return ik_fm_cmp_str(x->value, x->value_len, y->value, y->value_len);
}

/* The integer of field `value:holder:suffix` among the sorted holders'
 * fields; -1 when there is none. buf: room for the field's name. */
static long long ik_fm_lookup(const ik_fm_field *aux, size_t naux, const rlk_ik_value *v,
                              const char *suffix, char *buf)
{
    redisReply key;
    ik_fm_field want = {&key, NULL};
    const ik_fm_field *hit;
    long long x = -1;
    int n = sprintf(buf, "%.*s:%.*s:%s", (int)v->value_len, v->value, (int)v->holder_len,
                    v->holder, suffix);

    memset(&key, 0, sizeof key);
    key.str = buf;
    key.len = (size_t)n;
    hit = bsearch(&want, aux, naux, sizeof *aux, ik_fm_cmp_field);
    if (hit && ik_parse_int(hit->val->str, hit->val->len, &x) < 0)
        x = -1;
    return x;
}

/* Each value's holder's expire_time and lock_count; the values sorted. 0;
 * 1 when a value has no expire_time (a hash of strings, not a group: rlk
 * and Redisson write one with every value); -1 out of memory. */
static int ik_fm_join(rlk_ik_view *v, ik_fm_field *aux, size_t naux, long long now)
{
    size_t most = 0;
    char *buf;

    for (size_t k = 0; k < v->nvalues; k++)
        if (v->values[k].value_len + v->values[k].holder_len > most)
            most = v->values[k].value_len + v->values[k].holder_len;
    if (!(buf = malloc(most + 32)))
        return -1;
    qsort(aux, naux, sizeof *aux, ik_fm_cmp_field);
    for (size_t k = 0; k < v->nvalues; k++) {
        rlk_ik_value *e = &v->values[k];
        long long count = ik_fm_lookup(aux, naux, e, "lock_count", buf);

        e->count = count > 0 ? count : 0;
        e->expire_ms = ik_fm_lookup(aux, naux, e, "expire_time", buf);
        e->expire_in_ms = e->expire_ms - now;
        if (e->expire_ms < 0) {
            free(buf);
            return 1;
        }
    }
    qsort(v->values, v->nvalues, sizeof *v->values, ik_fm_cmp_value);
    free(buf);
    return 0;
}

/* The group's values from its HGETALL. 0; 1 when the hash is not a group
 * (a field that is neither a value nor a holder's field, no value, or a
 * value without its holder's expire_time); -1 out of memory. */
static int ik_fm_parse(const redisReply *all, long long now, rlk_ik_view *v)
{
    size_t n = all->elements / 2, naux = 0;
    ik_fm_field *aux = calloc(n + 1, sizeof *aux);
    int rc = 1;

    free(v->values);
    v->nvalues = 0;
    if (!aux || !(v->values = calloc(n + 1, sizeof *v->values))) {
        free(aux);
        return -1;
    }
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        const redisReply *f = all->element[k], *val = all->element[k + 1];

        if (f->type != REDIS_REPLY_STRING || val->type != REDIS_REPLY_STRING)
            goto out;
        if (!memchr(f->str, ':', f->len)) {
            rlk_ik_value *e = &v->values[v->nvalues++];

            e->value = f->str;
            e->value_len = f->len;
            e->holder = val->str;
            e->holder_len = val->len;
        } else if (ik_fm_aux(f, val)) {
            aux[naux].f = f;
            aux[naux++].val = val;
        } else {
            goto out;
        }
    }
    if (v->nvalues > 0)
        rc = ik_fm_join(v, aux, naux, now);
out:
    if (rc != 0)
        v->nvalues = 0;
    free(aux);
    return rc;
}

int rlk_ik_fastmulti_values(const redisReply *all, long long now, rlk_ik_value **values,
                            size_t *n)
{
    rlk_ik_view v;
    int rc = 1;

    memset(&v, 0, sizeof v);
    if (all && all->type == REDIS_REPLY_ARRAY)
        rc = ik_fm_parse(all, now, &v);
    if (rc != 0) {
        free(v.values);
        return rc < 0 ? RLK_ERR_NOMEM : RLK_ERR_ARG;
    }
    *values = v.values;
    *n = v.nvalues;
    return RLK_OK;
}

/* A group's values, PTTL and the server's now (HGETALL read by detection, or
 * here when the kind is forced). RLK_ERR_ARG: the hash is not a group. */
static int ik_read_fastmulti(rlk_client *c, rlk_ik_view *v, const redisReply *all)
{
    redisReply *got = NULL;
    long long now = 0;
    int rc;

    if (!all) {
        if ((rc = ik_cmd(c, 2, "HGETALL", v->name, NULL, NULL, &got)) != RLK_OK)
            return rc;
        ik_keep(v, got);
        all = got;
    }
    if (all->type != REDIS_REPLY_ARRAY)
        return RLK_ERR_PROTOCOL;
    if (all->elements == 0)
        return RLK_OK;                  /* no key: a free group */
    if ((rc = ik_server_ms(c, &now)) != RLK_OK)
        return rc;
    rc = ik_fm_parse(all, now, v);
    if (rc < 0)
        return RLK_ERR_NOMEM;
    return rc > 0 ? RLK_ERR_ARG : ik_int(c, 2, "PTTL", v->name, &v->ttl_ms);
}

/* ---------------------------------------------------------------- strings */

/* GET of a key holding an integer count: *count (0 when absent); *is_int. */
static int ik_read_int(rlk_client *c, const char *key, long long *count, int *is_int)
{
    redisReply *r;
    int rc = ik_cmd(c, 2, "GET", key, NULL, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    *count = 0;
    *is_int = r->type == REDIS_REPLY_NIL ||
              (r->type == REDIS_REPLY_STRING && ik_parse_int(r->str, r->len, count) == 0);
    freeReplyObject(r);
    return RLK_OK;
}

static int ik_read_token(rlk_client *c, rlk_ik_view *v)
{
    redisReply *r;
    int rc = ik_cmd(c, 2, "GET", v->name, NULL, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    ik_keep(v, r);
    if (r->type == REDIS_REPLY_STRING) {
        v->token = r->str;
        v->token_len = r->len;
    }
    return ik_int(c, 2, "PTTL", v->name, &v->ttl_ms);
}

static int ik_read_permits(rlk_client *c, rlk_ik_view *v)
{
    rlk_psemaphore *s = rlk_psemaphore_new(c, v->name);
    size_t n = 0;
    int rc;

    if (!s)
        return rlk_err(c);
    rc = rlk_psemaphore_permits(s, NULL, 0, &v->permits_total);
    n = v->permits_total < RLK_IK_PERMITS_MAX ? v->permits_total : RLK_IK_PERMITS_MAX;
    if (rc == RLK_OK && n > 0 && !(v->permits = calloc(n, sizeof *v->permits)))
        rc = RLK_ERR_NOMEM;
    if (rc == RLK_OK && n > 0)
        rc = rlk_psemaphore_permits(s, v->permits, n, &v->permits_total);
    v->npermits = n < v->permits_total ? n : v->permits_total;
    rlk_psemaphore_free(s);
    return rc;
}

/* rlk elect's record {NAME}:elect beside a fenced lock: the election's leader into v. */
static int ik_read_election(rlk_client *c, rlk_ik_view *v)
{
    rlk_elect *e = rlk_elect_new(c, v->name);
    int rc, there = 0;

    if (!e)
        return rlk_err(c);
    rc = ik_exists(c, rlk_elect_state_name(e), &there);
    if (rc == RLK_OK && there) {
        rc = rlk_elect_leader(e, &v->elect);
        v->election = rc == RLK_OK;
    }
    rlk_elect_free(e);
    return rc;
}

/* ---------------------------------------------------------------- detection */

/* The kind marker ({NAME}:rlk_kind, kind_mark.h) of v's name: when it says one of the n marks
 * in marks, v->kind becomes that mark's kind in kinds and v is marked. */
static int ik_marked(rlk_client *c, rlk_ik_view *v, const char *const *marks, const int *kinds,
                     int n)
{
    size_t len = strlen(v->name) + 16;
    char *mark = malloc(len);
    redisReply *r = NULL;
    int rc;

    if (!mark)
        return RLK_ERR_NOMEM;
    snprintf(mark, len, "{%s}:" RLK_KM_SUFFIX_NAME, v->name);
    rc = ik_cmd(c, 2, "GET", mark, NULL, NULL, &r);
    for (int i = 0; rc == RLK_OK && r->type == REDIS_REPLY_STRING && i < n; i++) {
        if (strcmp(r->str, marks[i]) == 0) {
            v->kind = kinds[i];
            v->marked = 1;
        }
    }
    if (r)
        freeReplyObject(r);
    free(mark);
    return rc;
}

/* rlk lock --fair marks the fair lock it holds ({NAME}:rlk_kind = "fair"): with nobody queued,
 * its hash is a reentrant lock's. Asked only while NAME is there. */
static int ik_marked_fair(rlk_client *c, rlk_ik_view *v)
{
    static const char *const marks[] = {RLK_KM_FAIR};
    static const int kinds[] = {RLK_IK_FAIR};

    return ik_marked(c, v, marks, kinds, 1);
}

static int ik_detect_hash(rlk_client *c, rlk_ik_view *v, const ik_keys *keys)
{
    int rc, not_lock, fenced = 0, queue = 0, timeout = 0;

    if ((rc = ik_read_hash(c, v, &not_lock)) != RLK_OK)
        return rc;
    if (not_lock) {     /* a faster-MultiLock group, or not a lock rlk knows */
        rc = ik_read_fastmulti(c, v, v->keep[0]);
        v->kind = rc == RLK_OK ? RLK_IK_FASTMULTI : RLK_IK_OTHER;
        if (rc == RLK_ERR_ARG)
            snprintf(v->type, sizeof v->type, "hash");
        return rc == RLK_ERR_ARG ? RLK_OK : rc;
    }
    if (v->mode) {
        v->kind = RLK_IK_RWLOCK;
        return RLK_OK;
    }
    if ((rc = ik_exists(c, keys->fence, &fenced)) != RLK_OK ||
        (rc = ik_exists(c, keys->queue, &queue)) != RLK_OK ||
        (rc = ik_exists(c, keys->timeout, &timeout)) != RLK_OK)
        return rc;
    v->kind = fenced ? RLK_IK_FENCED : (queue || timeout) ? RLK_IK_FAIR : RLK_IK_REENTRANT;
    return v->kind == RLK_IK_REENTRANT ? ik_marked_fair(c, v) : RLK_OK;
}

/* rlk latch marks the latches it arms ({NAME}:rlk_kind = "latch"): such a string is a latch,
 * not a semaphore. rlk semaphore, which marks what it makes ("semaphore"), makes
 * permit-expirable semaphores: marked, one is that kind even with no permit held (no
 * {NAME}:timeout to find it by). */
static int ik_marked_latch(rlk_client *c, rlk_ik_view *v)
{
    static const char *const marks[] = {RLK_KM_LATCH, RLK_KM_SEMAPHORE};
    static const int kinds[] = {RLK_IK_LATCH, RLK_IK_PSEMAPHORE};

    return ik_marked(c, v, marks, kinds, 2);
}

static int ik_detect_string(rlk_client *c, rlk_ik_view *v, const ik_keys *keys)
{
    int rc, is_int, permits = 0;

    if ((rc = ik_read_int(c, v->name, &v->count, &is_int)) != RLK_OK)
        return rc;
    if (!is_int) {
        v->kind = RLK_IK_TOKEN;
        return RLK_OK;
    }
    if ((rc = ik_exists(c, keys->permits, &permits)) != RLK_OK)
        return rc;
    v->kind = permits ? RLK_IK_PSEMAPHORE : RLK_IK_SEMAPHORE;
    return permits ? RLK_OK : ik_marked_latch(c, v);
}

/* No key NAME: a free lock or semaphore may still have companion keys. */
static int ik_detect_none(rlk_client *c, rlk_ik_view *v, const ik_keys *keys)
{
    int rc, queue = 0, timeout = 0, permits = 0, fenced = 0;

    if ((rc = ik_exists(c, keys->queue, &queue)) != RLK_OK ||
        (rc = ik_exists(c, keys->timeout, &timeout)) != RLK_OK ||
        (rc = ik_exists(c, keys->permits, &permits)) != RLK_OK ||
        (rc = ik_exists(c, keys->fence, &fenced)) != RLK_OK)
        return rc;
    if (queue || timeout)
        v->kind = RLK_IK_FAIR;
    else if (permits)
        v->kind = RLK_IK_PSEMAPHORE;
    else if (fenced)
        v->kind = RLK_IK_FENCED;
    else
        v->kind = RLK_IK_NONE;
    return RLK_OK;
}

static int ik_detect(rlk_client *c, rlk_ik_view *v, const ik_keys *keys, const char *type)
{
    v->detected = 1;
    if (strcmp(type, "hash") == 0)
        return ik_detect_hash(c, v, keys);
    if (strcmp(type, "string") == 0)
        return ik_detect_string(c, v, keys);
    if (strcmp(type, "none") == 0)
        return ik_detect_none(c, v, keys);
    v->kind = RLK_IK_OTHER;
    snprintf(v->type, sizeof v->type, "%s", type);
    return RLK_OK;
}

/* ---------------------------------------------------------------- by kind */

static int ik_is_hash_kind(int kind)
{
    return kind == RLK_IK_REENTRANT || kind == RLK_IK_RWLOCK || kind == RLK_IK_FAIR ||
           kind == RLK_IK_FENCED;
}

/* A forced kind on a key of another type. */
static int ik_mismatch(const rlk_ik_view *v, const char *type)
{
    if (strcmp(type, "none") == 0)
        return 0;
    if (ik_is_hash_kind(v->kind) || v->kind == RLK_IK_FASTMULTI)
        return strcmp(type, "hash") != 0;
    return strcmp(type, "string") != 0;
}

/* The hash of a forced lock kind (a detected one was read already). */
static int ik_forced_hash(rlk_client *c, rlk_ik_view *v, const char *type)
{
    int not_lock = 0, rc;

    if (!v->detected && strcmp(type, "hash") == 0) {
        if ((rc = ik_read_hash(c, v, &not_lock)) != RLK_OK)
            return rc;
        if (not_lock)
            return RLK_ERR_ARG;
    }
    if (strcmp(type, "none") == 0)
        v->ttl_ms = -2;
    return RLK_OK;
}

/* The rest of each kind's state. */
static int ik_fill(rlk_client *c, rlk_ik_view *v, const ik_keys *keys, const char *type)
{
    int rc = RLK_OK, is_int = 1;

    if (ik_is_hash_kind(v->kind) && (rc = ik_forced_hash(c, v, type)) != RLK_OK)
        return rc;
    switch (v->kind) {
    case RLK_IK_FAIR:
        return ik_read_queue(c, v, keys);
    case RLK_IK_FENCED:
        rc = ik_read_int(c, keys->fence, &v->fence_token, &is_int);
        return rc == RLK_OK ? ik_read_election(c, v) : rc;
    case RLK_IK_REENTRANT:
        v->no_ttl_hash = v->ttl_ms == -1 && v->nholders > 0;
        return RLK_OK;
    case RLK_IK_TOKEN:
        return ik_read_token(c, v);
    case RLK_IK_FASTMULTI:      /* forced (a detected group is read) */
        return v->detected || strcmp(type, "hash") != 0 ? RLK_OK : ik_read_fastmulti(c, v, NULL);
    case RLK_IK_SEMAPHORE:
    case RLK_IK_PSEMAPHORE:
    case RLK_IK_LATCH:
        if ((rc = ik_read_int(c, v->name, &v->count, &is_int)) != RLK_OK)
            return rc;
        if (!is_int)
            return RLK_ERR_ARG;
        if (v->kind == RLK_IK_PSEMAPHORE)
            rc = ik_read_permits(c, v);
        return rc == RLK_OK ? ik_int(c, 2, "PTTL", v->name, &v->ttl_ms) : rc;
    default:
        return RLK_OK;
    }
}

int rlk_ik_lock_delay(rlk_client *c, const char *name, char **key, long long *ttl_ms, int *held)
{
    int rc;

    *ttl_ms = -2;
    *held = 0;
    if (!(*key = rlk_fam_suffix_name(name, RLK_NAMES_DELAY)))   /* the library's naming */
        return RLK_ERR_NOMEM;
    if ((rc = ik_int(c, 2, "PTTL", *key, ttl_ms)) != RLK_OK || *ttl_ms == -2)
        return rc;
    return ik_exists(c, name, held);
}

/* A reentrant lock's (or a free name's) lock-delay key and PTTL. */
static int ik_read_delay(rlk_client *c, rlk_ik_view *v)
{
    int held;

    if (v->kind != RLK_IK_NONE && v->kind != RLK_IK_REENTRANT)
        return RLK_OK;
    return rlk_ik_lock_delay(c, v->name, &v->delay_key, &v->delay_ttl_ms, &held);
}

int rlk_ik_read(rlk_client *c, const char *name, int kind, rlk_ik_view *v)
{
    char type[64];
    ik_keys keys;
    int rc;

    memset(v, 0, sizeof *v);
    v->name = name;
    v->kind = kind;
    v->ttl_ms = -2;
    v->delay_ttl_ms = -2;
    if ((rc = ik_keys_make(c, name, &keys)) != RLK_OK)
        return rc;
    rc = ik_type(c, name, type, sizeof type);
    if (rc == RLK_OK && kind == RLK_IK_AUTO)
        rc = ik_detect(c, v, &keys, type);
    else if (rc == RLK_OK && ik_mismatch(v, type))
        rc = RLK_ERR_ARG;
    if (rc == RLK_OK)
        rc = ik_fill(c, v, &keys, type);
    if (rc == RLK_OK)
        rc = ik_read_delay(c, v);
    if (rc == RLK_ERR_ARG)
        snprintf(v->type, sizeof v->type, "%s", type);
    ik_keys_free(&keys);
    return rc;
}

void rlk_ik_free(rlk_ik_view *v)
{
    if (v->election)
        rlk_elect_info_clear(&v->elect);
    v->election = 0;
    free(v->holders);
    free(v->queue);
    free(v->permits);
    free(v->values);
    free(v->delay_key);
    v->delay_key = NULL;
    for (size_t k = 0; k < sizeof v->keep / sizeof v->keep[0]; k++)
        if (v->keep[k])
            freeReplyObject(v->keep[k]);
    memset(v->keep, 0, sizeof v->keep);
    v->holders = NULL;
    v->queue = NULL;
    v->permits = NULL;
    v->values = NULL;
}
