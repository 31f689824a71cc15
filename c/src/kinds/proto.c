/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.c - each kind's protocol as data, the building of a call from it,
 * and the pure readers of the kinds' replies (proto.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "client/scripts.h"
#include "kinds/elect.h"
#include "kinds/fairlock.h"
#include "kinds/fastmulti.h"
#include "kinds/fenced.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "kinds/rwlock.h"
#include "runtime/fam_hold.h"

/* rlk_async_lock's kinds, by RLK_KIND_*. */
static const rlk_proto rlk_proto_kinds[] = {
    [RLK_KIND_LOCK] = {
        "lock", RLK_KIND_LOCK, "reentrant",
        "reentrant/acquire", "lease_ms owner ticket",
        "reentrant/release", "owner lease_ms claim_ms publish",
        "reentrant/cancel", "ticket claim_ms publish",
        "reentrant/force_release", "publish",
        "channel", RLK_PROTO_WAIT_QUEUE, 0, "", &rlk_lock_renew_task, "lock", 0, NULL, NULL, NULL},
    [RLK_KIND_FAIR] = {
        "lock", RLK_KIND_FAIR, "fair",
        "fair/acquire", "lease_ms owner wait_ms",
        "fair/release", "owner lease_ms publish",
        "fair/cancel", "owner publish",
        "fair/force_release", "publish",
        "channel", RLK_PROTO_WAIT_FAIR, 0, "", &rlk_fairlock_renew_task, "lock queue timeouts",
            0, NULL,
        NULL, NULL},
    [RLK_KIND_FENCED] = {
        "lock", RLK_KIND_FENCED, "fenced",
        "fenced/acquire", "lease_ms owner",
        "fenced/release", "owner lease_ms publish",
        NULL, NULL,
        "reentrant/force_release", "publish",
        "channel", RLK_PROTO_WAIT_CHANNEL, RLK_PROTO_TOKEN, "", &rlk_fenced_renew_task,
            "lock token", 0,
        NULL, "fenced/held", "owner"},
    [RLK_KIND_READ] = {
        "lock", RLK_KIND_READ, "rwlock",
        "rwlock/read_acquire", "lease_ms owner",
        "rwlock/read_release", "owner claim_ms publish",
        NULL, NULL,
        "rwlock/force_release", "mode claim_ms publish",
        "channel", RLK_PROTO_WAIT_CHANNEL, 0, "", &rlk_rwlock_renew_readers, "lock prefix", 0, NULL,
        NULL, NULL},
    [RLK_KIND_WRITE] = {
        "lock", RLK_KIND_WRITE, "rwlock",
        "rwlock/write_acquire", "lease_ms owner ticket",
        "rwlock/write_release", "owner lease_ms claim_ms publish",
        "rwlock/cancel", "ticket claim_ms publish",
        "rwlock/force_release", "mode claim_ms publish",
        "channel", RLK_PROTO_WAIT_QUEUE, 0, ":write", &rlk_rwlock_renew_writer, "lock", 0, NULL,
        NULL, NULL},
};

/* rlk_async_lock_nr's: Redisson's non-reentrant lock (kinds/nrlock.c: held and renewed as
 * the reentrant lock) and non-reentrant fair lock (fair/nonreentrant_acquire). */
static const rlk_proto rlk_proto_nrlock = {
    "non-reentrant lock", RLK_KIND_LOCK, "nonreentrant",
    "nonreentrant/acquire", "lease_ms owner",
    "nonreentrant/release", "owner lease_ms publish",
    NULL, NULL,
    "reentrant/force_release", "publish",
    "channel", RLK_PROTO_WAIT_CHANNEL, RLK_PROTO_NON_REENTRANT, "", &rlk_lock_renew_task,
    "lock", 0, NULL,
    NULL, NULL};

static const rlk_proto rlk_proto_nrfair = {
    "non-reentrant fair lock", RLK_KIND_FAIR, "fair",
    "fair/nonreentrant_acquire", "lease_ms owner wait_ms",
    "fair/release", "owner lease_ms publish",
    "fair/cancel", "owner publish",
    "fair/force_release", "publish",
    "channel", RLK_PROTO_WAIT_FAIR, RLK_PROTO_NON_REENTRANT, "", &rlk_fairlock_renew_task,
    "lock queue timeouts", 0, NULL, NULL, NULL};

/* rlk_async_lock_spin's: the reentrant lock's scripts, attempts that never queue (ticket 0). */
const rlk_proto rlk_proto_spin = {
    "lock", RLK_KIND_LOCK, "reentrant",
    "reentrant/acquire", "lease_ms owner ticket",
    "reentrant/release", "owner lease_ms claim_ms publish",
    NULL, NULL,
    "reentrant/force_release", "publish",
    "channel", RLK_PROTO_WAIT_SPIN, 0, "", &rlk_lock_renew_task, "lock", 0, NULL, NULL, NULL};

/* rlk_async_lock_delay's: the reentrant lock with a lock-delay (kinds/lock.c,
 * rlk_lock_set_delay): its acquire, release and force name the delay key {name}:rlk_delay
 * last, the acquire its delay_ms; its holds are renewed by the reentrant lock's task, as the
 * blocking watchdog renews them: with the other reentrant holds in one reentrant/renew_many
 * call, each delay key right after its lock (whose PX becomes lease + delay). Also
 * rlk_async_force_unlock's row for RLK_KIND_LOCK: a force unlock ends a delay. */
const rlk_proto rlk_proto_delay = {
    "lock", RLK_KIND_LOCK, "reentrant", "reentrant/acquire", "lease_ms owner ticket delay_ms",
    "reentrant/release", "owner lease_ms claim_ms publish", "reentrant/cancel",
    "ticket claim_ms publish", "reentrant/force_release", "publish", "channel",
    RLK_PROTO_WAIT_QUEUE,
    0, "", &rlk_lock_renew_task, "lock delay", 0, "delay",
    NULL, NULL};

/* The election (kinds/elect.c, docs/elect.md) on the fenced lock's layout: a leader is a
 * fenced hold whose token is its term, renewed with fenced/renew; candidates wait on the
 * lock's channel, which elect/resign publishes on. */
const rlk_proto rlk_proto_elect = {
    "election", RLK_KIND_FENCED, "elect",
    "elect/campaign", "lease_ms owner value publish secret",
    "elect/resign", "owner lease_ms publish secret",
    NULL, NULL,
    NULL, NULL,     /* forced as the fenced lock it is (rlk_async_force_unlock, RLK_KIND_FENCED) */
    "lock_channel", RLK_PROTO_WAIT_CHANNEL, RLK_PROTO_TOKEN | RLK_PROTO_ONE_HOLD, "",
    &rlk_fenced_renew_task,
    "lock token", RLK_ELECT_VALUE_MAX, NULL, "fenced/held", "owner"};

/* The faster MultiLock (kinds/fastmulti.c, docs/locks/fastmulti.md): the values of one group
 * in one hash, taken and released all or none by one call (the values after the named ARGV);
 * waiters on the group's channel, every message a wake-up (waiters of a group wait for
 * different values), bounded by the TTL a refusal returns. Held, counted and renewed as the
 * blocking kind: one hold (kind lock, name the group) per owner, fastmulti/renew. */
const rlk_proto rlk_proto_fastmulti = {
    "faster MultiLock", RLK_KIND_LOCK, "fastmulti",
    "fastmulti/acquire", "lease_ms owner",
    "fastmulti/release", "owner lease_ms publish",
    NULL, NULL,
    "fastmulti/force_release", "publish",
    "channel", RLK_PROTO_WAIT_CHANNEL, RLK_PROTO_VALUES, "", &rlk_fastmulti_renew_task, "group",
    0, NULL,
    NULL, NULL};

const rlk_proto *rlk_proto_lock(int kind)
{
    return kind >= RLK_KIND_LOCK && kind <= RLK_KIND_WRITE ? &rlk_proto_kinds[kind] : NULL;
}

/* The rows of rlk_async_force_unlock_named: rlk_async_force_unlock's (the lock-delay's row for
 * RLK_KIND_LOCK: a force unlock ends a delay), each force release given 'named' after its
 * publish argument; made once. */
static rlk_proto rlk_proto_named_rows[RLK_KIND_WRITE + 1];
static pthread_once_t rlk_proto_named_once = PTHREAD_ONCE_INIT;

static void rlk_proto_named_init(void)
{
    for (int k = RLK_KIND_LOCK; k <= RLK_KIND_WRITE; k++) {
        rlk_proto *row = &rlk_proto_named_rows[k];

        *row = k == RLK_KIND_LOCK ? rlk_proto_delay : rlk_proto_kinds[k];
        row->force_args = strcmp(row->force_args, "publish") == 0 ? "publish named"
                          : "mode claim_ms publish named";
    }
}

const rlk_proto *rlk_proto_named(int kind)
{
    if (kind < RLK_KIND_LOCK || kind > RLK_KIND_WRITE)
        return NULL;
    pthread_once(&rlk_proto_named_once, rlk_proto_named_init);
    return &rlk_proto_named_rows[kind];
}

const rlk_proto *rlk_proto_nr(int kind)
{
    return kind == RLK_KIND_LOCK ? &rlk_proto_nrlock
           : kind == RLK_KIND_FAIR ? &rlk_proto_nrfair : NULL;
}

int rlk_proto_keeps(const rlk_proto *held, const rlk_proto *k)
{
    return held->hold == k->hold && strcmp(held->acquire, k->acquire) == 0 &&
           !(held->flags & RLK_PROTO_VALUES) && !(k->flags & RLK_PROTO_VALUES);
}

/* ---------------------------------------------------------------- the other calls */

const rlk_proto_call rlk_proto_sem_acquire = {"semaphore/acquire", "n ticket claim_ms publish"};
const rlk_proto_call rlk_proto_sem_release = {"semaphore/release", "n claim_ms publish"};
const rlk_proto_call rlk_proto_sem_cancel = {"semaphore/cancel", "ticket n claim_ms publish"};
const rlk_proto_call rlk_proto_sem_release_if_exists = {"semaphore/release_if_exists",
                                                        "n claim_ms publish"};
const rlk_proto_call rlk_proto_sem_try_set_ttl = {"semaphore/try_set_permits_ttl",
                                                  "n ttl publish"};
const rlk_proto_call rlk_proto_psem_acquire = {"psemaphore/acquire",
                                               "lease_ms ticket claim_ms publish id"};
const rlk_proto_call rlk_proto_psem_release = {"psemaphore/release", "claim_ms publish id"};
const rlk_proto_call rlk_proto_psem_lease_time = {"psemaphore/lease_time", "id publish"};
const rlk_proto_call rlk_proto_psem_set_permits = {"psemaphore/set_permits", "n claim_ms publish"};
const rlk_proto_call rlk_proto_psem_acquired = {"psemaphore/acquired", "publish"};
const rlk_proto_call rlk_proto_latch_count = {"latch/count", ""};
const rlk_proto_call rlk_proto_latch_count_down = {"latch/count_down", "publish"};
const rlk_proto_call rlk_proto_latch_try_set_count = {"latch/try_set_count", "n publish"};
const rlk_proto_call rlk_proto_elect_proclaim = {"elect/proclaim",
                                                 "owner term value publish secret"};
const rlk_proto_call rlk_proto_elect_leader = {"elect/leader", ""};
const rlk_proto_call rlk_proto_fastmulti_held = {"fastmulti/held", "owner"};
const rlk_proto_call rlk_proto_fastmulti_counts = {"fastmulti/counts", "owner"};
const rlk_proto_call rlk_proto_lock_renew = {"reentrant/renew", "lease_ms owner"};

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
 * the name itself; kinds/names.c builds each (rlk_names_key). A script with a new role: a
 * line here. */
static const char *const rlk_proto_roles[] = {
    "channel", "waiters", "grant", "queue", "timeouts", "token", "prefix", "state",
    "lock_channel", "delay", "group",
};

static const char *rlk_proto_keys_of(rlk_proto_keys *ks, const char *role, size_t len)
{
    int unknown;
    unsigned char r = 0;
    char *key;

    if ((len == 4 && memcmp(role, "lock", 4) == 0) ||
        (len == 9 && memcmp(role, "semaphore", 9) == 0) ||
        (len == 5 && memcmp(role, "latch", 5) == 0))
        return ks->name;    /* the lock hash (the semaphore, the latch) is the name itself */
    while (r < sizeof rlk_proto_roles / sizeof rlk_proto_roles[0] &&
           (strlen(rlk_proto_roles[r]) != len || memcmp(rlk_proto_roles[r], role, len) != 0))
        r++;
    if (r == sizeof rlk_proto_roles / sizeof rlk_proto_roles[0])
        return NULL;        /* a role no row uses */
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
    return rlk_proto_keys_of(ks, role, strlen(role));
}

int rlk_proto_keys_list(rlk_proto_keys *ks, const char *roles, const char **out, int max)
{
    int n = 0;

    if (!roles)
        return -1;
    while (*roles) {
        size_t len = strcspn(roles, " ");

        if (len && (n == max || !(out[n++] = rlk_proto_keys_of(ks, roles, len))))
            return -1;
        roles += len;
        roles += strspn(roles, " ");
    }
    return n;
}

int rlk_proto_args(const char *names, const rlk_proto_argvals *vals, rlk_proto_argv *out)
{
    int n = 0;

    snprintf(out->lease, sizeof out->lease, "%lld", vals->lease_ms);
    snprintf(out->ticket, sizeof out->ticket, "%lld", vals->ticket);
    snprintf(out->wait, sizeof out->wait, "%lld", (long long)RLK_FAIR_THREAD_WAIT_MS);
    snprintf(out->term, sizeof out->term, "%lld", vals->term);
    snprintf(out->delay, sizeof out->delay, "%lld", vals->delay_ms);
    snprintf(out->n, sizeof out->n, "%lld", vals->n);
    snprintf(out->ttl, sizeof out->ttl, "%lld", vals->ttl_ms);
    while (names && *names) {
        size_t len = strcspn(names, " ");
        const char *v = NULL;

#define RLK_PROTO_IS(s) (len == sizeof(s) - 1 && memcmp(names, s, len) == 0)
        if (RLK_PROTO_IS("lease_ms"))
            v = out->lease;
        else if (RLK_PROTO_IS("owner"))
            v = vals->owner;
        else if (RLK_PROTO_IS("ticket"))
            v = out->ticket;
        else if (RLK_PROTO_IS("claim_ms"))
            v = RLK_FAM_CLAIM_MS_STR;
        else if (RLK_PROTO_IS("publish"))
            v = vals->publish;
        else if (RLK_PROTO_IS("wait_ms"))
            v = out->wait;
        else if (RLK_PROTO_IS("mode"))
            v = "any";
        else if (RLK_PROTO_IS("value"))
            v = vals->value ? vals->value : "";
        else if (RLK_PROTO_IS("term"))
            v = out->term;
        else if (RLK_PROTO_IS("delay_ms"))
            v = out->delay;
        else if (RLK_PROTO_IS("secret"))
            v = vals->secret ? vals->secret : "";
        else if (RLK_PROTO_IS("named"))
            v = "named";
        else if (RLK_PROTO_IS("n"))
            v = out->n;
        else if (RLK_PROTO_IS("ttl"))
            v = out->ttl;
        else if (RLK_PROTO_IS("id"))
            v = (const char *)vals->id;
        if (!v || n == RLK_PROTO_ARGS)
            return -1;
        out->len[n] = RLK_PROTO_IS("id") ? vals->idlen : strlen(v);
#undef RLK_PROTO_IS
        out->v[n++] = v;
        names += len;
        names += strspn(names, " ");
    }
    return n;
}

int rlk_proto_build(const rlk_proto_call *pc, const char *name, const rlk_proto_argvals *vals,
                    rlk_proto_built *b)
{
    char kind[32];
    size_t klen = strcspn(pc->script, "/");

    if (klen >= sizeof kind)
        klen = sizeof kind - 1;
    memcpy(kind, pc->script, klen);
    kind[klen] = '\0';
    rlk_proto_keys_init(&b->ks, kind, name);
    b->nkeys = rlk_proto_keys_list(&b->ks, rlk_script_key_roles(pc->script), b->keys,
                                   RLK_PROTO_KEYS);
    b->nargs = rlk_proto_args(pc->args, vals, &b->av);
    return b->nkeys < 0 || b->nargs < 0 ? -1 : 0;
}

void rlk_proto_built_free(rlk_proto_built *b)
{
    rlk_proto_keys_free(&b->ks);
}

/* ---------------------------------------------------------------- value lists */

int rlk_proto_values_take(const char *const *values, size_t n, char ***out, char *buf, size_t len)
{
    size_t bytes = (n + 1) * sizeof(char *);
    char *p;

    *out = NULL;
    if (rlk_fastmulti_values_check(values, n, buf, len) != 0)
        return RLK_ERR_ARG;
    for (size_t k = 0; k < n; k++)
        bytes += strlen(values[k]) + 1;
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
