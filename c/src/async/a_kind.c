/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_kind.c - the lock kinds' protocol as rows, and the building of a call
 * from a row's script (a_kind.h).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "kinds/elect.h"
#include "kinds/fairlock.h"
#include "kinds/fastmulti.h"
#include "kinds/fenced.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "kinds/rwlock.h"
#include "runtime/fam_hold.h"
#include "async/a_common.h"
#include "async/a_kind.h"

/* rlk_async_lock's kinds, by RLK_KIND_*. */
static const rlk_a_kind rlk_a_kinds[] = {
    [RLK_KIND_LOCK] = {
        "lock", RLK_KIND_LOCK, "reentrant",
        "reentrant/acquire", "lease_ms owner ticket",
        "reentrant/release", "owner lease_ms claim_ms publish",
        "reentrant/cancel", "ticket claim_ms publish",
        "reentrant/force_release", "publish",
        "channel", RLK_A_WAIT_QUEUE, 0, "", &rlk_lock_renew_task, "lock", 0, NULL, NULL, NULL},
    [RLK_KIND_FAIR] = {
        "lock", RLK_KIND_FAIR, "fair",
        "fair/acquire", "lease_ms owner wait_ms",
        "fair/release", "owner lease_ms publish",
        "fair/cancel", "owner publish",
        "fair/force_release", "publish",
        "channel", RLK_A_WAIT_FAIR, 0, "", &rlk_fairlock_renew_task, "lock queue timeouts", 0, NULL,
        NULL, NULL},
    [RLK_KIND_FENCED] = {
        "lock", RLK_KIND_FENCED, "fenced",
        "fenced/acquire", "lease_ms owner",
        "fenced/release", "owner lease_ms publish",
        NULL, NULL,
        "reentrant/force_release", "publish",
        "channel", RLK_A_WAIT_CHANNEL, RLK_A_TOKEN, "", &rlk_fenced_renew_task, "lock token", 0,
        NULL, "fenced/held", "owner"},
    [RLK_KIND_READ] = {
        "lock", RLK_KIND_READ, "rwlock",
        "rwlock/read_acquire", "lease_ms owner",
        "rwlock/read_release", "owner claim_ms publish",
        NULL, NULL,
        "rwlock/force_release", "mode claim_ms publish",
        "channel", RLK_A_WAIT_CHANNEL, 0, "", &rlk_rwlock_renew_readers, "lock prefix", 0, NULL,
        NULL, NULL},
    [RLK_KIND_WRITE] = {
        "lock", RLK_KIND_WRITE, "rwlock",
        "rwlock/write_acquire", "lease_ms owner ticket",
        "rwlock/write_release", "owner lease_ms claim_ms publish",
        "rwlock/cancel", "ticket claim_ms publish",
        "rwlock/force_release", "mode claim_ms publish",
        "channel", RLK_A_WAIT_QUEUE, 0, ":write", &rlk_rwlock_renew_writer, "lock", 0, NULL,
        NULL, NULL},
};

/* rlk_async_lock_nr's: Redisson's non-reentrant lock (kinds/nrlock.c: held and renewed as
 * the reentrant lock) and non-reentrant fair lock (fair/nonreentrant_acquire). */
static const rlk_a_kind rlk_a_kind_nrlock = {
    "non-reentrant lock", RLK_KIND_LOCK, "nonreentrant",
    "nonreentrant/acquire", "lease_ms owner",
    "nonreentrant/release", "owner lease_ms publish",
    NULL, NULL,
    "reentrant/force_release", "publish",
    "channel", RLK_A_WAIT_CHANNEL, RLK_A_NON_REENTRANT, "", &rlk_lock_renew_task, "lock", 0, NULL,
    NULL, NULL};

static const rlk_a_kind rlk_a_kind_nrfair = {
    "non-reentrant fair lock", RLK_KIND_FAIR, "fair",
    "fair/nonreentrant_acquire", "lease_ms owner wait_ms",
    "fair/release", "owner lease_ms publish",
    "fair/cancel", "owner publish",
    "fair/force_release", "publish",
    "channel", RLK_A_WAIT_FAIR, RLK_A_NON_REENTRANT, "", &rlk_fairlock_renew_task,
    "lock queue timeouts", 0, NULL, NULL, NULL};

/* rlk_async_lock_spin's: the reentrant lock's scripts, attempts that never queue (ticket 0). */
const rlk_a_kind rlk_a_kind_spin = {
    "lock", RLK_KIND_LOCK, "reentrant",
    "reentrant/acquire", "lease_ms owner ticket",
    "reentrant/release", "owner lease_ms claim_ms publish",
    NULL, NULL,
    "reentrant/force_release", "publish",
    "channel", RLK_A_WAIT_SPIN, 0, "", &rlk_lock_renew_task, "lock", 0, NULL, NULL, NULL};

/* rlk_async_lock_delay's: the reentrant lock with a lock-delay (kinds/lock.c,
 * rlk_lock_set_delay): its acquire, release and force name the delay key {name}:rlk_delay
 * last, the acquire its delay_ms; its holds are renewed by the reentrant lock's task, as the
 * blocking watchdog renews them: with the other reentrant holds in one reentrant/renew_many
 * call, each delay key right after its lock (whose PX becomes lease + delay). Also
 * rlk_async_force_unlock's row for RLK_KIND_LOCK: a force unlock ends a delay. */
const rlk_a_kind rlk_a_kind_delay = {
    "lock", RLK_KIND_LOCK, "reentrant", "reentrant/acquire", "lease_ms owner ticket delay_ms",
    "reentrant/release", "owner lease_ms claim_ms publish", "reentrant/cancel",
    "ticket claim_ms publish", "reentrant/force_release", "publish", "channel", RLK_A_WAIT_QUEUE,
    0, "", &rlk_lock_renew_task, "lock delay", 0, "delay",
    NULL, NULL};

/* The election (kinds/elect.c, docs/elect.md) on the fenced lock's layout: a leader is a
 * fenced hold whose token is its term, renewed with fenced/renew; candidates wait on the
 * lock's channel, which elect/resign publishes on. */
const rlk_a_kind rlk_a_kind_elect = {
    "election", RLK_KIND_FENCED, "elect",
    "elect/campaign", "lease_ms owner value publish secret",
    "elect/resign", "owner lease_ms publish secret",
    NULL, NULL,
    NULL, NULL,     /* forced as the fenced lock it is (rlk_async_force_unlock, RLK_KIND_FENCED) */
    "lock_channel", RLK_A_WAIT_CHANNEL, RLK_A_TOKEN | RLK_A_ONE_HOLD, "", &rlk_fenced_renew_task,
    "lock token", RLK_ELECT_VALUE_MAX, NULL, "fenced/held", "owner"};

/* The faster MultiLock (kinds/fastmulti.c, docs/locks/fastmulti.md): the values of one group
 * in one hash, taken and released all or none by one call (the values after the named ARGV);
 * waiters on the group's channel, every message a wake-up (waiters of a group wait for
 * different values), bounded by the TTL a refusal returns. Held, counted and renewed as the
 * blocking kind: one hold (kind lock, name the group) per owner, fastmulti/renew. */
const rlk_a_kind rlk_a_kind_fastmulti = {
    "faster MultiLock", RLK_KIND_LOCK, "fastmulti",
    "fastmulti/acquire", "lease_ms owner",
    "fastmulti/release", "owner lease_ms publish",
    NULL, NULL,
    "fastmulti/force_release", "publish",
    "channel", RLK_A_WAIT_CHANNEL, RLK_A_VALUES, "", &rlk_fastmulti_renew_task, "group", 0, NULL,
    NULL, NULL};

const rlk_a_kind *rlk_a_kind_lock(int kind)
{
    return kind >= RLK_KIND_LOCK && kind <= RLK_KIND_WRITE ? &rlk_a_kinds[kind] : NULL;
}

/* The rows of rlk_async_force_unlock_named: rlk_async_force_unlock's (the lock-delay's row for
 * RLK_KIND_LOCK: a force unlock ends a delay), each force release given 'named' after its
 * publish argument; made once. */
static rlk_a_kind rlk_a_named_rows[RLK_KIND_WRITE + 1];
static pthread_once_t rlk_a_named_once = PTHREAD_ONCE_INIT;

static void rlk_a_named_init(void)
{
    for (int k = RLK_KIND_LOCK; k <= RLK_KIND_WRITE; k++) {
        rlk_a_kind *row = &rlk_a_named_rows[k];

        *row = k == RLK_KIND_LOCK ? rlk_a_kind_delay : rlk_a_kinds[k];
        row->force_args = strcmp(row->force_args, "publish") == 0 ? "publish named"
                          : "mode claim_ms publish named";
    }
}

const rlk_a_kind *rlk_a_kind_named(int kind)
{
    if (kind < RLK_KIND_LOCK || kind > RLK_KIND_WRITE)
        return NULL;
    pthread_once(&rlk_a_named_once, rlk_a_named_init);
    return &rlk_a_named_rows[kind];
}

const rlk_a_kind *rlk_a_kind_nr(int kind)
{
    return kind == RLK_KIND_LOCK ? &rlk_a_kind_nrlock
           : kind == RLK_KIND_FAIR ? &rlk_a_kind_nrfair : NULL;
}

int rlk_a_kind_keeps(const rlk_a_kind *held, const rlk_a_kind *k)
{
    return held->hold == k->hold && strcmp(held->acquire, k->acquire) == 0 &&
           !(held->flags & RLK_A_VALUES) && !(k->flags & RLK_A_VALUES);
}

/* ---------------------------------------------------------------- building a call */

void rlk_a_keys_init(rlk_a_keys *ks, const char *names, const char *name)
{
    memset(ks, 0, sizeof *ks);
    ks->names = rlk_names_kind_find(names);
    ks->name = name;
}

void rlk_a_keys_free(rlk_a_keys *ks)
{
    for (int i = 0; i < ks->n; i++)
        free(ks->key[i]);
    ks->n = 0;
}

/* The key roles the rows' scripts name (their headers' "-- KEYS[i]: <role>"), but "lock",
 * the name itself; kinds/names.c builds each (rlk_names_key). A script with a new role: a
 * line here. */
static const char *const rlk_a_roles[] = {
    "channel", "waiters", "grant", "queue", "timeouts", "token", "prefix", "state",
    "lock_channel", "delay", "group",
};

static const char *rlk_a_keys_of(rlk_a_keys *ks, const char *role, size_t len)
{
    int unknown;
    unsigned char r = 0;
    char *key;

    if (len == 4 && memcmp(role, "lock", 4) == 0)
        return ks->name;    /* the lock hash is the name itself */
    while (r < sizeof rlk_a_roles / sizeof rlk_a_roles[0] &&
           (strlen(rlk_a_roles[r]) != len || memcmp(rlk_a_roles[r], role, len) != 0))
        r++;
    if (r == sizeof rlk_a_roles / sizeof rlk_a_roles[0])
        return NULL;        /* a role no row uses */
    for (int i = 0; i < ks->n; i++)
        if (ks->role[i] == r)
            return ks->key[i];
    if (!ks->name || ks->n == RLK_A_KIND_ROLES ||
        !(key = rlk_names_key(ks->names, rlk_a_roles[r], ks->name, &unknown)))
        return NULL;
    ks->role[ks->n] = r;
    ks->key[ks->n] = key;
    return ks->key[ks->n++];
}

const char *rlk_a_keys_get(rlk_a_keys *ks, const char *role)
{
    return rlk_a_keys_of(ks, role, strlen(role));
}

int rlk_a_keys_list(rlk_a_keys *ks, const char *roles, const char **out, int max)
{
    int n = 0;

    if (!roles)
        return -1;
    while (*roles) {
        size_t len = strcspn(roles, " ");

        if (len && (n == max || !(out[n++] = rlk_a_keys_of(ks, roles, len))))
            return -1;
        roles += len;
        roles += strspn(roles, " ");
    }
    return n;
}

int rlk_a_args(const char *names, const rlk_a_argvals *vals, rlk_a_argv *out)
{
    int n = 0;

    snprintf(out->lease, sizeof out->lease, "%lld", vals->lease_ms);
    snprintf(out->ticket, sizeof out->ticket, "%lld", vals->ticket);
    snprintf(out->wait, sizeof out->wait, "%lld", (long long)RLK_FAIR_THREAD_WAIT_MS);
    snprintf(out->term, sizeof out->term, "%lld", vals->term);
    snprintf(out->delay, sizeof out->delay, "%lld", vals->delay_ms);
    while (names && *names) {
        size_t len = strcspn(names, " ");
        const char *v = NULL;

#define RLK_A_IS(s) (len == sizeof(s) - 1 && memcmp(names, s, len) == 0)
        if (RLK_A_IS("lease_ms"))
            v = out->lease;
        else if (RLK_A_IS("owner"))
            v = vals->owner;
        else if (RLK_A_IS("ticket"))
            v = out->ticket;
        else if (RLK_A_IS("claim_ms"))
            v = RLK_FAM_CLAIM_MS_STR;
        else if (RLK_A_IS("publish"))
            v = vals->publish;
        else if (RLK_A_IS("wait_ms"))
            v = out->wait;
        else if (RLK_A_IS("mode"))
            v = "any";
        else if (RLK_A_IS("value"))
            v = vals->value ? vals->value : "";
        else if (RLK_A_IS("term"))
            v = out->term;
        else if (RLK_A_IS("delay_ms"))
            v = out->delay;
        else if (RLK_A_IS("secret"))
            v = vals->secret ? vals->secret : "";
        else if (RLK_A_IS("named"))
            v = "named";
#undef RLK_A_IS
        if (!v || n == RLK_A_KIND_ARGS)
            return -1;
        out->v[n++] = v;
        names += len;
        names += strspn(names, " ");
    }
    return n;
}

/* ---------------------------------------------------------------- value lists */

int rlk_a_values_take(const char *const *values, size_t n, char ***out, char *buf, size_t len)
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

rlk_ae_call *rlk_a_values_counts(rlk_async *ac, const char *name, const char *owner,
                                 char *const *values, rlk_ae_reply_fn fn, void *arg)
{
    int argc;
    const char **v = rlk_a_common_join(&owner, 1, values, &argc);
    rlk_ae_call *call = v ? rlk_ae_script(ac, "fastmulti/counts", 1, &name, argc, v, fn, arg)
                          : NULL;

    free(v);
    return call;
}
