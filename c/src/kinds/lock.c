/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - the reentrant lock API (rlk_lock_*): Redisson's RLock on
 * reentrant/{acquire,release,force_release}, waiting through the client's
 * subscriber and the process-wide local queue, lease-less holds renewed by
 * the client's watchdog. docs/runtime.md describes the algorithm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/lq.h"
#include "runtime/rt.h"
#include "runtime/wait.h"
#include "runtime/wd.h"

struct rlk_lock {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name} */
    rlk_lq *q;
    rlk_fam_id id;
};

/* One call's view: who asks, for how long. */
typedef struct rlk_acq {
    rlk_lock *l;
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
} rlk_acq;

static const rlk_fam_kind rlk_lock_kind = {
    "rlk_lock_new", "lock", "redisson_lock__channel", rlk_fam_prefix_name
};

/* ---------------------------------------------------------------- handles */

rlk_lock *rlk_lock_new(rlk_client *c, const char *name)
{
    rlk_lock *l = rlk_fam_new(c, name, sizeof *l, &rlk_lock_kind);

    if (!l)
        return NULL;
    rlk_fam_id_init(&l->id);
    l->q = rlk_lq_get(c->addr, c->url.db, name);
    if (!l->q) {
        rlk_lock_free(l);
        return rlk_fam_nomem(c, &rlk_lock_kind, name);
    }
    return l;
}

void rlk_lock_free(rlk_lock *l)
{
    if (!l)
        return;
    rlk_lq_put(l->q);
    rlk_fam_id_destroy(&l->id);
    rlk_fam_free(l);
}

const char *rlk_lock_name(const rlk_lock *l)
{
    return l ? l->b.name : NULL;
}

int rlk_lock_set_owner(rlk_lock *l, const char *owner)
{
    if (!l)
        return RLK_ERR_ARG;
    return rlk_fam_id_set(l->b.c, &l->id, owner, 0, "rlk_lock_set_owner");
}

int rlk_lock_owner(const rlk_lock *l, char *buf, size_t len)
{
    rlk_lock *m = (rlk_lock *)l;    /* the id's mutex only */
    int rc;

    if (!l || !buf || len == 0)
        return RLK_ERR_ARG;
    if ((rc = rlk_fam_id_copy(l->b.rt, &m->id, buf, len)) != RLK_OK)
        return rlk_set_error(l->b.c, rc, "rlk_lock_owner: buffer of %zu bytes too short", len);
    return RLK_OK;
}

/* ---------------------------------------------------------------- one acquire attempt */

static int rlk_acq_init(rlk_lock *l, long long lease_ms, rlk_acq *a)
{
    int rc = rlk_fam_lease(l->b.c, "lock", l->b.name, lease_ms, &a->lease_ms, &a->watchdog);

    a->l = l;
    if (rc != RLK_OK)
        return rc;
    return rlk_lock_owner(l, a->owner, sizeof a->owner);
}

/* rlk_fam_release_fn: reentrant/release. */
static int rlk_lock_release_call(void *arg, const char *owner, long long lease, int *rc)
{
    rlk_lock *l = arg;
    const char *keys[2];

    return rlk_fam_release_call(l->b.c, "reentrant/release", "reentrant/release", l->b.name,
                                rlk_fam_keys(&l->b, keys), keys, 2, owner, lease, rc);
}

/* rlk_fam_undo_fn: gives back a hold the registry could not record, or that
 * too few replicas acknowledged (the same holder's release: one hold less). */
static int rlk_lock_undo(void *arg)
{
    rlk_acq *a = arg;
    int rc, outcome = rlk_lock_release_call(a->l, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

/* rlk_wait_attempt_fn. RLK_OK: acquired (recorded in the registry).
 * RLK_ERR_BUSY: held by another, *ttl is its PTTL (-1: none); no error
 * recorded. Else an error. */
static int rlk_lock_attempt(void *arg, long long *ttl)
{
    rlk_acq *a = arg;
    rlk_lock *l = a->l;
    const char *keys[1] = {l->b.name};
    char lease[24];
    const char *args[2] = {lease, a->owner};
    rlk_hold_spec h = {RLK_KIND_LOCK, l->b.name, a->owner, 1, {l->b.name, NULL, NULL},
                       l->b.channel};
    long long sent = rlk_clock_now_ns();
    redisReply *r = NULL;
    int rc;

    snprintf(lease, sizeof lease, "%lld", a->lease_ms);
    RLK_RT_COUNT(l->b.rt, acquire_calls);
    rc = rlk_evalv(l->b.c, "reentrant/acquire", 1, keys, NULL, 2, args, NULL, &r);
    if (rc != RLK_OK)
        return rlk_fam_acquire_lost(&l->b, rc, &h, a->lease_ms, a->watchdog, sent, NULL, NULL,
                                    rlk_lock_undo, a);
    rc = rlk_fam_acquire_reply(l->b.c, "lock", l->b.name, "reentrant/acquire", r, ttl, NULL);
    freeReplyObject(r);
    if (rc == RLK_OK)
        rc = rlk_fam_record(l->b.rt, &h, a->lease_ms, a->watchdog, sent, 0, rlk_lock_undo, a);
    return rc;
}

/* ---------------------------------------------------------------- locking */

static int rlk_lock_busy(rlk_lock *l, long long start_ns)
{
    return rlk_set_error(l->b.c, RLK_ERR_BUSY, "lock %s: held by another holder after %lld ms",
                         l->b.name, (rlk_clock_now_ns() - start_ns) / 1000000LL);
}

int rlk_lock_try_lock(rlk_lock *l, long long wait_ms, long long lease_ms)
{
    long long start = rlk_clock_now_ns();
    rlk_waiter w;
    rlk_acq a;
    int rc, first;

    if (!l)
        return RLK_ERR_ARG;
    if ((rc = rlk_acq_init(l, lease_ms, &a)) != RLK_OK)
        return rc;
    /* Only the head of the local queue waits; one attempt straight away
     * when it cannot overtake a local waiter: a single try, a re-entry, or
     * nobody queued here. */
    rlk_wait_init_lock(&w, &l->b, "lock", rlk_lock_attempt, &a);
    w.q = l->q;
    first = wait_ms == 0 || rlk_wd_holds(l->b.rt->wd, l->b.name, a.owner) || !rlk_lq_busy(l->q);
    rc = rlk_wait_acquire(&w, start, wait_ms, first);
    return rc == RLK_ERR_BUSY ? rlk_lock_busy(l, start) : rc;
}

int rlk_lock_lock(rlk_lock *l, long long lease_ms)
{
    return rlk_lock_try_lock(l, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

int rlk_lock_unlock(rlk_lock *l)
{
    if (!l)
        return RLK_ERR_ARG;
    return rlk_fam_unlock(&l->b, RLK_KIND_LOCK, "", &l->id, "rlk_lock_owner", l->q,
                          rlk_lock_release_call, l);
}

int rlk_lock_force_unlock(rlk_lock *l, int *released)
{
    const char *keys[2];

    if (!l)
        return RLK_ERR_ARG;
    return rlk_fam_force_unlock(&l->b, "reentrant/force_release", rlk_fam_keys(&l->b, keys), keys,
                                0, NULL, l->q, released);
}

/* ---------------------------------------------------------------- queries */

int rlk_lock_is_locked(rlk_lock *l, int *locked)
{
    if (!l || !locked)
        return RLK_ERR_ARG;
    return rlk_fam_is_locked(&l->b, locked);
}

int rlk_lock_is_held_by_me(rlk_lock *l, int *held)
{
    if (!l || !held)
        return RLK_ERR_ARG;
    return rlk_fam_is_held(&l->b, RLK_KIND_LOCK, &l->id, "rlk_lock_owner", held);
}

int rlk_lock_hold_count(rlk_lock *l, long long *count)
{
    if (!l || !count)
        return RLK_ERR_ARG;
    return rlk_fam_hold_count(&l->b, &l->id, "rlk_lock_owner", count);
}

int rlk_lock_remaining_ttl(rlk_lock *l, long long *ttl_ms)
{
    if (!l || !ttl_ms)
        return RLK_ERR_ARG;
    return rlk_fam_remaining_ttl(&l->b, ttl_ms);
}
