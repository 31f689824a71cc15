/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.c - the building of a kind's call from its row or call (the rows
 * live with their kinds), and the pure readers of the kinds' replies
 * (proto.h).
 */
#include <stdatomic.h>
#include <stdint.h>
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

/* The index of the word s (len bytes) in table[0..n); -1: none (the roles' and ARGV names'). */
static int rlk_proto_index(const char *const *table, int n, const char *s, size_t len)
{
    for (int i = 0; i < n; i++)
        if (strlen(table[i]) == len && memcmp(table[i], s, len) == 0)
            return i;
    return -1;
}

/* The role index of role (len bytes): RLK_PROTO_KEY_*, RLK_PROTO_NROLES for the name itself
 * ("lock", "semaphore", "latch": the lock hash is the name), -1 for a role no row uses. */
static int rlk_proto_role_of(const char *role, size_t len)
{
    static const char *const name_itself[] = {"lock", "semaphore", "latch"};

    if (rlk_proto_index(name_itself, 3, role, len) >= 0)
        return RLK_PROTO_NROLES;
    return rlk_proto_index(rlk_proto_roles, RLK_PROTO_NROLES, role, len);
}

/* The roles (space-separated) as indexes into out (at most max); their number, or -1 (an unknown
 * role, too many). */
static int rlk_proto_roles_of(const char *roles, unsigned char *out, int max)
{
    int n = 0, r;

    if (!roles)
        return -1;
    while (*roles) {
        size_t len = strcspn(roles, " ");

        if (len && (n == max || (r = rlk_proto_role_of(roles, len)) < 0))
            return -1;
        if (len)
            out[n++] = (unsigned char)r;
        roles += len;
        roles += strspn(roles, " ");
    }
    return n;
}

/* The key of role index r from have (NULL: none) or built into ks; NULL: out of memory. */
static const char *rlk_proto_keys_of(rlk_proto_keys *ks, char *const *have, int r)
{
    int unknown;
    char *key;

    if (r == RLK_PROTO_NROLES)
        return ks->name;
    if (have && have[r])
        return have[r];
    for (int i = 0; i < ks->n; i++)
        if (ks->role[i] == r)
            return ks->key[i];
    if (!ks->name || ks->n == RLK_PROTO_ROLES ||
        !(key = rlk_names_key(ks->names, rlk_proto_roles[r], ks->name, &unknown)))
        return NULL;
    ks->role[ks->n] = (unsigned char)r;
    ks->key[ks->n] = key;
    return ks->key[ks->n++];
}

/* The keys of the role indexes roles[0..n) into out; n, or -1 (out of memory). */
static int rlk_proto_keys_by(rlk_proto_keys *ks, char *const *have, const unsigned char *roles,
                             int n, const char **out)
{
    for (int i = 0; i < n; i++)
        if (!(out[i] = rlk_proto_keys_of(ks, have, roles[i])))
            return -1;
    return n;
}

const char *rlk_proto_keys_get(rlk_proto_keys *ks, const char *role)
{
    int r = rlk_proto_role_of(role, strlen(role));

    return r < 0 ? NULL : rlk_proto_keys_of(ks, NULL, r);
}

int rlk_proto_keys_list_with(rlk_proto_keys *ks, char *const *have, const char *roles,
                             const char **out, int max)
{
    unsigned char r[2 * RLK_PROTO_NROLES];
    int n = rlk_proto_roles_of(roles, r, max < 2 * RLK_PROTO_NROLES ? max : 2 * RLK_PROTO_NROLES);

    return n < 0 ? -1 : rlk_proto_keys_by(ks, have, r, n, out);
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

/* The ARGV names, by index (proto.h's list); RLK_PROTO_ARG_OPT marks a name written with "?". */
enum {
    RLK_PROTO_ARG_LEASE, RLK_PROTO_ARG_OWNER, RLK_PROTO_ARG_TICKET, RLK_PROTO_ARG_CLAIM,
    RLK_PROTO_ARG_PUBLISH, RLK_PROTO_ARG_WAIT, RLK_PROTO_ARG_MODE, RLK_PROTO_ARG_VALUE,
    RLK_PROTO_ARG_TERM, RLK_PROTO_ARG_TOKEN, RLK_PROTO_ARG_DELAY, RLK_PROTO_ARG_SECRET,
    RLK_PROTO_ARG_NAMED, RLK_PROTO_ARG_FIRST, RLK_PROTO_ARG_HELD, RLK_PROTO_ARG_N,
    RLK_PROTO_ARG_TTL, RLK_PROTO_ARG_ID, RLK_PROTO_NARGNAMES,
    RLK_PROTO_ARG_OPT = 0x80
};

static const char *const rlk_proto_argnames[RLK_PROTO_NARGNAMES] = {
    "lease_ms", "owner", "ticket", "claim_ms", "publish", "wait_ms", "mode", "value", "term",
    "token", "delay_ms", "secret", "named", "first", "held", "n", "ttl", "id",
};

/* The ARGV names (space-separated) as indexes into out (RLK_PROTO_ARGS); their number, or -1 (an
 * unknown name, too many). */
static int rlk_proto_args_of(const char *names, unsigned char *out)
{
    int n = 0;

    while (names && *names) {
        size_t len = strcspn(names, " ");
        int opt = len > 1 && names[len - 1] == '?',
            a = rlk_proto_index(rlk_proto_argnames, RLK_PROTO_NARGNAMES, names, len - (size_t)opt);

        if (a < 0 || n == RLK_PROTO_ARGS)
            return -1;
        out[n++] = (unsigned char)(a | (opt ? RLK_PROTO_ARG_OPT : 0));
        names += len;
        names += strspn(names, " ");
    }
    return n;
}

/* The ARGV of the name indexes args[0..n) into out; their number, the optional names at the end
 * left out while each has its default (a script's short form: scripts/reentrant/'s acquire and
 * release). */
static int rlk_proto_args_by(const unsigned char *args, int n, const rlk_proto_argvals *vals,
                             rlk_proto_argv *out)
{
    const char *dflt[RLK_PROTO_ARGS];   /* a name marked "?": the value the script takes for it */

    for (int i = 0; i < n; i++) {
        const char *v = NULL;

        dflt[i] = NULL;
        switch (args[i] & ~RLK_PROTO_ARG_OPT) {
        case RLK_PROTO_ARG_LEASE: v = rlk_proto_num(out->lease, vals->lease_ms); break;
        case RLK_PROTO_ARG_OWNER: v = vals->owner; break;
        case RLK_PROTO_ARG_TICKET:
            v = rlk_proto_num(out->ticket, vals->ticket);
            dflt[i] = "0";
            break;
        case RLK_PROTO_ARG_CLAIM: v = dflt[i] = RLK_FAM_CLAIM_MS_STR; break;
        case RLK_PROTO_ARG_PUBLISH:
            v = vals->publish;
            dflt[i] = "publish";
            break;
        case RLK_PROTO_ARG_WAIT:
            v = rlk_proto_num(out->wait, vals->wait_ms ? vals->wait_ms
                                                       : (long long)RLK_FAIR_THREAD_WAIT_MS);
            break;
        case RLK_PROTO_ARG_MODE: v = vals->mode ? vals->mode : "any"; break;
        case RLK_PROTO_ARG_VALUE: v = vals->value ? vals->value : ""; break;
        case RLK_PROTO_ARG_TERM:
        case RLK_PROTO_ARG_TOKEN: v = rlk_proto_num(out->term, vals->term); break;
        case RLK_PROTO_ARG_DELAY: v = rlk_proto_num(out->delay, vals->delay_ms); break;
        case RLK_PROTO_ARG_SECRET: v = vals->secret ? vals->secret : ""; break;
        case RLK_PROTO_ARG_NAMED: v = "named"; break;
        case RLK_PROTO_ARG_FIRST: v = "first"; break;
        case RLK_PROTO_ARG_HELD: v = vals->held ? vals->held : "held"; break;
        case RLK_PROTO_ARG_N: v = rlk_proto_num(out->n, vals->n); break;
        case RLK_PROTO_ARG_TTL: v = rlk_proto_num(out->ttl, vals->ttl_ms); break;
        case RLK_PROTO_ARG_ID: v = (const char *)vals->id; break;
        }
        if (!v)
            return -1;
        out->len[i] = (args[i] & ~RLK_PROTO_ARG_OPT) == RLK_PROTO_ARG_ID ? vals->idlen
                                                                          : strlen(v);
        if (!(args[i] & RLK_PROTO_ARG_OPT))
            dflt[i] = NULL;
        out->v[i] = v;
    }
    while (n > 0 && dflt[n - 1] && strcmp(out->v[n - 1], dflt[n - 1]) == 0)
        n--;
    return n;
}

int rlk_proto_args(const char *names, const rlk_proto_argvals *vals, rlk_proto_argv *out)
{
    unsigned char a[RLK_PROTO_ARGS];
    int n = rlk_proto_args_of(names, a);

    return n < 0 ? -1 : rlk_proto_args_by(a, n, vals, out);
}

/* What building a call reads from the strings of its row or call, read once. The rows' and
 * calls' strings are the kinds' static data, so the addresses of (script, args, opt) name a call
 * for the process's life: a plan, once published in rlk_proto_plans, is never changed nor freed. */
typedef struct rlk_proto_plan {
    const char *script, *args, *opt;
    const rlk_names_kind *names;    /* the names kind of the script's folder */
    char kind[32];                  /* that folder */
    unsigned char key[RLK_PROTO_KEYS], arg[RLK_PROTO_ARGS];
    int nkeys, nargs;
} rlk_proto_plan;

#define RLK_PROTO_PLANS 256     /* distinct calls made, at most (more are read every time) */
#define RLK_PROTO_PROBES 8

static _Atomic(rlk_proto_plan *) rlk_proto_plans[RLK_PROTO_PLANS];

/* Reads the strings of the call into p; 0, or -1 (an unknown role or name, too many). */
static int rlk_proto_plan_read(const rlk_proto_call *pc, const char *opt, rlk_proto_plan *p)
{
    size_t klen = strcspn(pc->script, "/");
    int no = 0;

    p->script = pc->script;
    p->args = pc->args;
    p->opt = opt;
    if (klen >= sizeof p->kind)
        klen = sizeof p->kind - 1;
    memcpy(p->kind, pc->script, klen);
    p->kind[klen] = '\0';
    p->names = rlk_names_kind_find(p->kind);
    p->nkeys = rlk_proto_roles_of(rlk_script_key_roles(pc->script), p->key, RLK_PROTO_KEYS);
    if (opt && p->nkeys >= 0 &&
        (no = rlk_proto_roles_of(opt, p->key + p->nkeys, RLK_PROTO_KEYS - p->nkeys)) >= 0)
        p->nkeys += no;
    p->nargs = rlk_proto_args_of(pc->args, p->arg);
    return p->nkeys < 0 || no < 0 || p->nargs < 0 ? -1 : 0;
}

/* The plan of the call: the published one, or one read now (published when a slot is free; else
 * in *tmp); NULL when its strings do not read. */
static const rlk_proto_plan *rlk_proto_plan_of(const rlk_proto_call *pc, const char *opt,
                                               rlk_proto_plan *tmp)
{
    uintptr_t h = ((uintptr_t)pc->script >> 3) * 31 + ((uintptr_t)pc->args >> 3) * 7 +
                  ((uintptr_t)opt >> 3);
    rlk_proto_plan *p, *mine = NULL;

    for (int i = 0; i < RLK_PROTO_PROBES; i++) {
        _Atomic(rlk_proto_plan *) *slot = &rlk_proto_plans[(h + (uintptr_t)i) % RLK_PROTO_PLANS];

        p = atomic_load_explicit(slot, memory_order_acquire);
        if (!p) {
            if (!mine) {
                if (!(mine = malloc(sizeof *mine)))
                    break;      /* read into *tmp */
                if (rlk_proto_plan_read(pc, opt, mine)) {
                    free(mine);
                    return NULL;    /* strings that do not read */
                }
            }
            if (atomic_compare_exchange_strong_explicit(slot, &p, mine, memory_order_acq_rel,
                                                        memory_order_acquire))
                return mine;
        }
        if (p->script == pc->script && p->args == pc->args && p->opt == opt) {
            free(mine);
            return p;
        }
    }
    if (mine) {     /* no slot for it: read every time */
        *tmp = *mine;
        free(mine);
        return tmp;
    }
    return rlk_proto_plan_read(pc, opt, tmp) ? NULL : tmp;
}

int rlk_proto_build_with(const rlk_proto_call *pc, const char *opt, const char *have_of,
                         char *const *have, const char *name, const rlk_proto_argvals *vals,
                         rlk_proto_built *b)
{
    rlk_proto_plan tmp;
    const rlk_proto_plan *p = rlk_proto_plan_of(pc, opt, &tmp);

    memset(&b->ks, 0, sizeof b->ks);
    b->ks.name = name;
    b->nkeys = b->nargs = -1;
    if (!p)
        return -1;
    b->ks.names = p->names;
    if (!have_of || strcmp(have_of, p->kind) != 0)
        have = NULL;        /* made by another kind's names: the channel may differ */
    b->nkeys = rlk_proto_keys_by(&b->ks, have, p->key, p->nkeys, b->keys);
    b->nargs = rlk_proto_args_by(p->arg, p->nargs, vals, &b->av);
    return b->nkeys < 0 || b->nargs < 0 ? -1 : 0;
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
