/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.c - the building of a kind's call from its row or call (the rows
 * live with their kinds), and the pure readers of the kinds' replies
 * (proto.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "client/scripts.h"
#include "kinds/fastmulti.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam_hold.h"

int rlk_proto_keeps(const rlk_proto *held, const rlk_proto *k)
{
    return held->hold == k->hold && strcmp(held->acquire, k->acquire) == 0 &&
           !(held->flags & RLK_PROTO_VALUES) && !(k->flags & RLK_PROTO_VALUES);
}

int rlk_proto_releases(const rlk_proto *held, const rlk_proto *k)
{
    return held != k && !(held->flags & RLK_PROTO_VALUES) == !(k->flags & RLK_PROTO_VALUES);
}

/* ---------------------------------------------------------------- building a call */

void rlk_proto_keys_init(rlk_proto_keys *ks, const char *names, const char *name)
{
    memset(ks, 0, sizeof *ks);
    ks->names = rlk_names_kind_find(names);
    ks->name = name;
}

void rlk_proto_keys_free(rlk_proto_keys *ks)
{
    for (int i = 0; i < ks->n; i++)
        free(ks->key[i]);
    ks->n = 0;
}

/* The key roles the rows' scripts name (their headers' "-- KEYS[i]: <role>"), but "lock",
 * the name itself, by proto.h's RLK_PROTO_KEY_*; kinds/names.c builds each (rlk_names_key). */
static const char *const rlk_proto_roles[RLK_PROTO_NROLES] = {
    [RLK_PROTO_KEY_CHANNEL] = "channel", [RLK_PROTO_KEY_WAITERS] = "waiters",
    [RLK_PROTO_KEY_GRANT] = "grant", [RLK_PROTO_KEY_QUEUE] = "queue",
    [RLK_PROTO_KEY_TIMEOUTS] = "timeouts", [RLK_PROTO_KEY_TOKEN] = "token",
    [RLK_PROTO_KEY_PREFIX] = "prefix", [RLK_PROTO_KEY_STATE] = "state",
    [RLK_PROTO_KEY_LOCK_CHANNEL] = "lock_channel", [RLK_PROTO_KEY_DELAY] = "delay",
    [RLK_PROTO_KEY_GROUP] = "group", [RLK_PROTO_KEY_WHO] = "who",
};

_Static_assert(RLK_PROTO_NROLES <= RLK_FAM_KEYS, "a handle keeps a key of every role");

/* The key of role (len bytes) from have (NULL: none) or built into ks. */
static const char *rlk_proto_keys_of(rlk_proto_keys *ks, char *const *have, const char *role,
                                     size_t len)
{
    int unknown;
    unsigned char r = 0;
    char *key;

    if ((len == 4 && memcmp(role, "lock", 4) == 0) ||
        (len == 9 && memcmp(role, "semaphore", 9) == 0) ||
        (len == 5 && memcmp(role, "latch", 5) == 0))
        return ks->name;    /* the lock hash (the semaphore, the latch) is the name itself */
    while (r < RLK_PROTO_NROLES &&
           (strlen(rlk_proto_roles[r]) != len || memcmp(rlk_proto_roles[r], role, len) != 0))
        r++;
    if (r == RLK_PROTO_NROLES)
        return NULL;        /* a role no row uses */
    if (have && have[r])
        return have[r];
    for (int i = 0; i < ks->n; i++)
        if (ks->role[i] == r)
            return ks->key[i];
    if (!ks->name || ks->n == RLK_PROTO_ROLES ||
        !(key = rlk_names_key(ks->names, rlk_proto_roles[r], ks->name, &unknown)))
        return NULL;
    ks->role[ks->n] = r;
    ks->key[ks->n] = key;
    return ks->key[ks->n++];
}

const char *rlk_proto_keys_get(rlk_proto_keys *ks, const char *role)
{
    return rlk_proto_keys_of(ks, NULL, role, strlen(role));
}

int rlk_proto_keys_list_with(rlk_proto_keys *ks, char *const *have, const char *roles,
                             const char **out, int max)
{
    int n = 0;

    if (!roles)
        return -1;
    while (*roles) {
        size_t len = strcspn(roles, " ");

        if (len && (n == max || !(out[n++] = rlk_proto_keys_of(ks, have, roles, len))))
            return -1;
        roles += len;
        roles += strspn(roles, " ");
    }
    return n;
}

int rlk_proto_keys_list(rlk_proto_keys *ks, const char *roles, const char **out, int max)
{
    return rlk_proto_keys_list_with(ks, NULL, roles, out, max);
}

/* v in decimal, as "%lld" writes it, at the end of buf (24 bytes); where it starts. */
static const char *rlk_proto_num(char *buf, long long v)
{
    unsigned long long u = v < 0 ? 0ULL - (unsigned long long)v : (unsigned long long)v;
    char *p = buf + 23;

    *p = '\0';
    do
        *--p = (char)('0' + u % 10);
    while ((u /= 10) != 0);
    if (v < 0)
        *--p = '-';
    return p;
}

int rlk_proto_args(const char *names, const rlk_proto_argvals *vals, rlk_proto_argv *out)
{
    const char *dflt[RLK_PROTO_ARGS];   /* a name marked "?": the value the script takes for it */
    int n = 0;

    while (names && *names) {
        size_t len = strcspn(names, " ");
        int opt = len > 1 && names[len - 1] == '?';
        const char *v = NULL;

        len -= (size_t)opt;

#define RLK_PROTO_IS(s) (len == sizeof(s) - 1 && memcmp(names, s, len) == 0)
        if (RLK_PROTO_IS("lease_ms"))
            v = rlk_proto_num(out->lease, vals->lease_ms);
        else if (RLK_PROTO_IS("owner"))
            v = vals->owner;
        else if (RLK_PROTO_IS("ticket"))
            v = rlk_proto_num(out->ticket, vals->ticket);
        else if (RLK_PROTO_IS("claim_ms"))
            v = RLK_FAM_CLAIM_MS_STR;
        else if (RLK_PROTO_IS("publish"))
            v = vals->publish;
        else if (RLK_PROTO_IS("wait_ms"))
            v = rlk_proto_num(out->wait, vals->wait_ms ? vals->wait_ms
                                                       : (long long)RLK_FAIR_THREAD_WAIT_MS);
        else if (RLK_PROTO_IS("mode"))
            v = vals->mode ? vals->mode : "any";
        else if (RLK_PROTO_IS("value"))
            v = vals->value ? vals->value : "";
        else if (RLK_PROTO_IS("term") || RLK_PROTO_IS("token"))
            v = rlk_proto_num(out->term, vals->term);
        else if (RLK_PROTO_IS("delay_ms"))
            v = rlk_proto_num(out->delay, vals->delay_ms);
        else if (RLK_PROTO_IS("secret"))
            v = vals->secret ? vals->secret : "";
        else if (RLK_PROTO_IS("named"))
            v = "named";
        else if (RLK_PROTO_IS("first"))
            v = "first";
        else if (RLK_PROTO_IS("held"))
            v = "held";
        else if (RLK_PROTO_IS("n"))
            v = rlk_proto_num(out->n, vals->n);
        else if (RLK_PROTO_IS("ttl"))
            v = rlk_proto_num(out->ttl, vals->ttl_ms);
        else if (RLK_PROTO_IS("id"))
            v = (const char *)vals->id;
        if (!v || n == RLK_PROTO_ARGS)
            return -1;
        out->len[n] = RLK_PROTO_IS("id") ? vals->idlen : strlen(v);
        dflt[n] = !opt                     ? NULL
                  : RLK_PROTO_IS("ticket")   ? "0"
                  : RLK_PROTO_IS("claim_ms") ? RLK_FAM_CLAIM_MS_STR
                  : RLK_PROTO_IS("publish")  ? "publish"
                                             : NULL;
#undef RLK_PROTO_IS
        out->v[n++] = v;
        names += len + (size_t)opt;
        names += strspn(names, " ");
    }
    /* The optional names at the end are left out while each has its default (a script's short
     * form: scripts/reentrant/'s acquire and release). */
    while (n > 0 && dflt[n - 1] && strcmp(out->v[n - 1], dflt[n - 1]) == 0)
        n--;
    return n;
}

int rlk_proto_build_with(const rlk_proto_call *pc, const char *opt, const char *have_of,
                         char *const *have, const char *name, const rlk_proto_argvals *vals,
                         rlk_proto_built *b)
{
    char kind[32];
    size_t klen = strcspn(pc->script, "/");
    int no = 0;

    if (klen >= sizeof kind)
        klen = sizeof kind - 1;
    memcpy(kind, pc->script, klen);
    kind[klen] = '\0';
    if (!have_of || strcmp(have_of, kind) != 0)
        have = NULL;        /* made by another kind's names: the channel may differ */
    rlk_proto_keys_init(&b->ks, kind, name);
    b->nkeys = rlk_proto_keys_list_with(&b->ks, have, rlk_script_key_roles(pc->script),
                                        b->keys, RLK_PROTO_KEYS);
    if (opt && b->nkeys >= 0 &&
        (no = rlk_proto_keys_list_with(&b->ks, have, opt, b->keys + b->nkeys,
                                       RLK_PROTO_KEYS - b->nkeys)) >= 0)
        b->nkeys += no;
    b->nargs = rlk_proto_args(pc->args, vals, &b->av);
    return b->nkeys < 0 || no < 0 || b->nargs < 0 ? -1 : 0;
}

int rlk_proto_build(const rlk_proto_call *pc, const char *name, const rlk_proto_argvals *vals,
                    rlk_proto_built *b)
{
    return rlk_proto_build_with(pc, NULL, NULL, NULL, name, vals, b);
}

void rlk_proto_built_free(rlk_proto_built *b)
{
    rlk_proto_keys_free(&b->ks);
}

/* ---------------------------------------------------------------- reading a reply */

static int rlk_proto_is(rlk_proto_outcome *o, int is, long long value, int first)
{
    memset(o, 0, sizeof *o);
    o->is = is;
    o->value = value;
    o->first = first;
    return is;
}

static int rlk_proto_bad(const redisReply *r, rlk_proto_outcome *o)
{
    rlk_proto_is(o, RLK_PROTO_BAD, 0, 0);
    o->type = r->type;
    return RLK_PROTO_BAD;
}

/* An array of n integers. */
static int rlk_proto_ints(const redisReply *r, size_t n)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != n)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return 0;
    return 1;
}

int rlk_proto_read_acquire(const redisReply *r, int token, rlk_proto_outcome *o)
{
    if (!token && r->type == REDIS_REPLY_ARRAY && (r->elements == 2 || r->elements == 3) &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER &&
        (r->element[1]->integer == 1 || r->element[1]->integer == 0)) {
        rlk_proto_is(o, RLK_PROTO_BUSY, r->element[0]->integer, r->element[1]->integer == 1);
        o->in_delay = r->elements == 3;
        return RLK_PROTO_BUSY;
    }
    if (token && rlk_proto_ints(r, 1) && r->element[0]->integer > 0)
        return rlk_proto_is(o, RLK_PROTO_ACQUIRED, r->element[0]->integer, 0);
    if (!token && r->type == REDIS_REPLY_NIL)
        return rlk_proto_is(o, RLK_PROTO_ACQUIRED, 0, 0);
    if (r->type == REDIS_REPLY_INTEGER)
        return rlk_proto_is(o, RLK_PROTO_BUSY, r->integer, 0);
    return rlk_proto_bad(r, o);
}

int rlk_proto_read_sem(const redisReply *r, rlk_proto_outcome *o)
{
    if (r->type == REDIS_REPLY_NIL)
        return rlk_proto_is(o, RLK_PROTO_ACQUIRED, 0, 0);
    if (r->type == REDIS_REPLY_INTEGER)
        return rlk_proto_is(o, RLK_PROTO_BUSY, r->integer, 0);
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER)
        return rlk_proto_is(o, RLK_PROTO_BUSY, r->element[0]->integer, 1);
    return rlk_proto_bad(r, o);
}

int rlk_proto_read_psem(const redisReply *r, size_t n, rlk_proto_outcome *o)
{
    if (r->type == REDIS_REPLY_ARRAY && r->elements == n &&
        r->element[0]->type == REDIS_REPLY_STRING)
        return rlk_proto_is(o, RLK_PROTO_ACQUIRED, 0, 0);
    if (rlk_proto_ints(r, 2))
        return rlk_proto_is(o, RLK_PROTO_BUSY, r->element[1]->integer, 1);
    if (r->type == REDIS_REPLY_INTEGER)
        return rlk_proto_is(o, RLK_PROTO_BUSY, r->integer, 0);
    if (r->type == REDIS_REPLY_NIL)
        return rlk_proto_is(o, RLK_PROTO_BUSY, -1, 0);
    return rlk_proto_bad(r, o);
}

int rlk_proto_refusal(const char *errstr)
{
    static const struct { const char *code; int err; } refusals[] = {
        {"RLK_REENTRY", RLK_ERR_REENTRY}, {"RLK_UPGRADE", RLK_ERR_UPGRADE},
        {"RLK_HELD", RLK_PROTO_HELD},
    };

    for (size_t i = 0; errstr && i < sizeof refusals / sizeof refusals[0]; i++) {
        const char *p = strstr(errstr, refusals[i].code);
        size_t n = strlen(refusals[i].code);

        if (p && (p == errstr || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
            return refusals[i].err;
    }
    return 0;
}

int rlk_proto_read_proclaim(const redisReply *r, rlk_proto_outcome *o)
{
    if (r->type != REDIS_REPLY_INTEGER)
        return rlk_proto_bad(r, o);
    if (r->integer == 1)
        return rlk_proto_is(o, RLK_PROTO_ACQUIRED, 0, 0);
    rlk_proto_is(o, RLK_PROTO_REFUSED, 0, 0);
    o->err = RLK_ERR_NOT_OWNER;
    return RLK_PROTO_REFUSED;
}

/* A value list's value: 1..1024 bytes, no ':' (the holder's own fields are "<value>:<holder>:..."). */
int rlk_proto_values_take(const rlk_proto *row, const char *const *values, size_t n, char ***out,
                            char *buf, size_t len)
{
    size_t bytes = (n + 1) * sizeof(char *);
    char *p;

    *out = NULL;
    if (!(row->flags & RLK_PROTO_VALUES))
        return RLK_OK;
    if (n == 0 || n > RLK_FASTMULTI_VALUES_MAX || !values) {
        snprintf(buf, len, "%zu values%s (1..%d)", n, values ? "" : " at NULL",
                 RLK_FASTMULTI_VALUES_MAX);
        return RLK_ERR_ARG;
    }
    for (size_t k = 0; k < n; k++) {
        size_t vlen = values[k] ? strlen(values[k]) : 0;

        if (vlen < 1 || vlen > RLK_FASTMULTI_VALUE_MAX || strchr(values[k], ':')) {
            snprintf(buf, len, "value %zu must be 1..%d bytes without ':'", k + 1,
                     RLK_FASTMULTI_VALUE_MAX);
            return RLK_ERR_ARG;
        }
        for (size_t j = 0; j < k; j++) {
            if (strcmp(values[j], values[k]) == 0) {
                snprintf(buf, len, "value '%s' is given twice", values[k]);
                return RLK_ERR_ARG;
            }
        }
        bytes += vlen + 1;
    }
    if (!(*out = malloc(bytes)))
        return RLK_ERR_NOMEM;
    p = (char *)(*out + n + 1);
    for (size_t k = 0; k < n; k++) {
        size_t vlen = strlen(values[k]) + 1;

        (*out)[k] = memcpy(p, values[k], vlen);
        p += vlen;
    }
    (*out)[n] = NULL;
    return RLK_OK;
}
