/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fenced.c - the fenced lock API (rlk_fenced_*): Redisson's RFencedLock on
 * fenced/{acquire,release,renew,token} and reentrant/force_release
 * (docs/locks/fenced.md). A reentrant lock (same hash and channel as
 * rlk_lock `name`) whose every acquisition returns a fencing token from the
 * acquire script itself.
 *
 * Waiting is the reentrant lock's (runtime/wait.c with a local queue): the
 * process-wide local queue of `name` (shared with rlk_lock handles of the
 * same name, which use the same hash), only its head subscribed to
 * redisson_lock__channel:{name} and retrying.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/proto.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/fenced.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/lq.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "runtime/wait.h"
#include "runtime/wd.h"

struct rlk_fenced {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name}; keys: the token
                                   redisson_lock_token:{name} */
    rlk_lq *q;
    rlk_fam_id id;
    _Atomic long long reentry_token;    /* rlk_fenced_set_reentry_token; 0: none */
};

/* One call's view. */
typedef struct rlk_fenced_acq {
    rlk_fenced *f;
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
    long long token;            /* of the acquisition, once acquired */
} rlk_fenced_acq;

/* rlk_fam_kind.fini: what the handle holds beyond its base. */
static void rlk_fenced_fini(void *handle)
{
    rlk_fenced *f = handle;

    rlk_lq_put(f->q);
    rlk_fam_id_destroy(&f->id);
}

static const rlk_fam_kind rlk_fenced_kind = {
    "rlk_fenced_new", "lock", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, rlk_fenced_fini
};

/* The watchdog's task for fenced locks (runtime/wd.h): one fenced/renew
 * call per lock (KEYS: name, token key; ARGV: lease, owner). */
const rlk_renew_task rlk_fenced_renew_task = {
    "fenced/renew", RLK_RENEW_ALONE, rlk_renew_build_one, rlk_renew_reply_one, NULL
};

const rlk_proto rlk_fenced_row = {
    "lock", RLK_KIND_FENCED, "fenced",
    "fenced/acquire", "lease_ms owner",
    "fenced/release", "owner lease_ms publish",
    NULL, NULL,
    "reentrant/force_release", "publish",
    "channel", RLK_PROTO_WAIT_CHANNEL, RLK_PROTO_TOKEN, "", &rlk_fenced_renew_task,
    "lock token", 0, NULL, "fenced/held", "owner"};

/* ---------------------------------------------------------------- handles */

rlk_fenced *rlk_fenced_new(rlk_client *c, const char *name)
{
    rlk_fenced *f = rlk_fam_new(c, name, sizeof *f, &rlk_fenced_kind);

    if (!f)
        return NULL;
    rlk_fam_id_init(&f->id);
    f->q = rlk_lq_get(c->addr, c->url.db, name);
    return rlk_fam_made(f, f->q && rlk_handle_keys(&f->b, "fenced", "channel token"));
}

void rlk_fenced_free(rlk_fenced *f)
{
    rlk_fam_free(f);
}

const char *rlk_fenced_name(const rlk_fenced *f)
{
    return f ? f->b.name : NULL;
}

const char *rlk_fenced_token_name(const rlk_fenced *f)
{
    return f ? f->b.key[RLK_PROTO_KEY_TOKEN] : NULL;
}

int rlk_fenced_set_owner(rlk_fenced *f, const char *owner)
{
    return f ? rlk_fam_id_set(f->b.c, &f->id, owner, 0, "rlk_fenced_set_owner") : RLK_ERR_ARG;
}

int rlk_fenced_owner(const rlk_fenced *f, char *buf, size_t len)
{
    return f ? rlk_handle_owner(&f->b, &f->id, buf, len, "rlk_fenced_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- script calls */

/* rlk_fam_release_fn: fenced/release. */
static int rlk_fenced_release_call(void *arg, const char *owner, long long lease, int *rc)
{
    return rlk_handle_release(&((rlk_fenced *)arg)->b, &rlk_fenced_row, "release", NULL, owner,
                              lease, NULL, rc);
}

/* rlk_fam_undo_fn: gives back one hold: an acquisition the registry could not
 * record, one too few replicas acknowledged, or one the caller was never told
 * of (the same holder's release: one hold less). */
static int rlk_fenced_undo(void *arg)
{
    rlk_fenced_acq *a = arg;
    int rc, outcome = rlk_fenced_release_call(a->f, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

/* rlk_wait_attempt_fn. RLK_OK: acquired, a->token set, recorded in the
 * registry. RLK_ERR_BUSY: held by another, *ttl its PTTL (-1: none). */
static int rlk_fenced_attempt(void *arg, long long *ttl)
{
    rlk_fenced_acq *a = arg;
    rlk_fenced *f = a->f;
    const char *tok = f->b.key[RLK_PROTO_KEY_TOKEN], *keys[2] = {f->b.name, tok};
    char lease[24], given[24];
    const char *args[3] = {lease, a->owner, given};
    long long handed = atomic_load(&f->reentry_token);
    rlk_hold_spec h = {RLK_KIND_FENCED, f->b.name, a->owner, 2, {f->b.name, tok, NULL},
                       f->b.channel, &rlk_fenced_renew_task, 0};
    long long sent = rlk_clock_now_ns();
    redisReply *r = NULL;
    int rc;

    snprintf(lease, sizeof lease, "%lld", a->lease_ms);
    snprintf(given, sizeof given, "%lld", handed);
    RLK_RT_COUNT(f->b.rt, acquire_calls);
    /* A token handed down (rlk_fenced_set_reentry_token): fenced/reenter re-enters the
     * enclosing hold with it, or acquires as fenced/acquire when that hold is gone. */
    rc = handed > 0 ? rlk_evalv(f->b.c, "fenced/reenter", 2, keys, NULL, 3, args, NULL, &r)
                    : rlk_evalv(f->b.c, "fenced/acquire", 2, keys, NULL, 2, args, NULL, &r);
    if (rc != RLK_OK)
        return rlk_fam_acquire_lost(&f->b, rc, &h, a->lease_ms, a->watchdog, sent, tok,
                                    &a->token, rlk_fenced_undo, a);
    rc = rlk_fam_acquire_reply(f->b.c, "fenced lock", f->b.name,
                               handed > 0 ? "fenced/reenter" : "fenced/acquire", r, ttl, &a->token);
    freeReplyObject(r);
    if (rc == RLK_OK)
        rc = rlk_fam_record(f->b.rt, &h, a->lease_ms, a->watchdog, sent, a->token,
                            rlk_fenced_undo, a);
    return rc;
}

/* ---------------------------------------------------------------- locking */

static int rlk_fenced_busy(rlk_fenced *f, long long start_ns)
{
    return rlk_set_error(f->b.c, RLK_ERR_BUSY,
                         "fenced lock %s: held by another holder after %lld ms", f->b.name,
                         (rlk_clock_now_ns() - start_ns) / 1000000LL);
}

static int rlk_fenced_try_lock_run(rlk_fenced *f, long long wait_ms, long long lease_ms, long long *token)
{
    long long start = rlk_clock_now_ns();
    rlk_fenced_acq a;
    rlk_waiter w;
    int rc, first;

    if (!f)
        return RLK_ERR_ARG;
    memset(&a, 0, sizeof a);
    a.f = f;
    rc = rlk_fam_lease(f->b.c, "fenced lock", f->b.name, lease_ms, &a.lease_ms, &a.watchdog);
    if (rc != RLK_OK || (rc = rlk_fenced_owner(f, a.owner, sizeof a.owner)) != RLK_OK)
        return rc;
    /* As rlk_lock_try_lock: the local queue of `name` (shared with rlk_lock
     * handles, same hash) and its rule for the attempt straight away. */
    rlk_wait_init_lock(&w, &f->b, "fenced lock", rlk_fenced_attempt, &a);
    w.q = f->q;
    first = wait_ms == 0 || rlk_wd_holds_as(f->b.rt->wd, RLK_KIND_FENCED, f->b.name, a.owner) ||
            !rlk_lq_busy(f->q);
    rc = rlk_wait_acquire(&w, start, wait_ms, first);
    if (rc == RLK_ERR_BUSY)
        return rlk_fenced_busy(f, start);
    if (rc == RLK_OK && token)
        *token = a.token;
    return rc;
}

int rlk_fenced_try_lock(rlk_fenced *f, long long wait_ms, long long lease_ms, long long *token)
{
    rlk_handle_call hc = rlk_handle_call_begin(f ? &f->b : NULL);
    int rc = f ? rlk_fenced_try_lock_run(f, wait_ms, lease_ms, token) : RLK_ERR_ARG;

    return rlk_handle_call_end(&hc, RLK_KIND_FENCED, rc);
}

int rlk_fenced_lock(rlk_fenced *f, long long lease_ms, long long *token)
{
    return rlk_fenced_try_lock(f, -1, lease_ms, token);
}

/* ---------------------------------------------------------------- releasing */

/* The local queue of `name` told */
int rlk_fenced_unlock(rlk_fenced *f)
{
    if (!f)
        return RLK_ERR_ARG;
    return rlk_fam_unlock(&f->b, RLK_KIND_FENCED, "fenced lock", &f->id, "rlk_fenced_owner", f->q,
                          rlk_fenced_release_call, f);
}

/* Force unlocks: reentrant/force_release, as the reentrant lock's (named: a hash without a TTL
 * goes too) */
static int rlk_fenced_force(rlk_fenced *f, int named, int *released)
{
    return f ? rlk_handle_force(&f->b, &rlk_fenced_row, NULL, NULL, named, f->q, released)
             : RLK_ERR_ARG;
}

int rlk_fenced_force_unlock(rlk_fenced *f, int *released)
{
    return rlk_fenced_force(f, 0, released);
}

int rlk_fenced_force_unlock_named(rlk_fenced *f, int *released)
{
    return rlk_fenced_force(f, 1, released);
}

/* ---------------------------------------------------------------- tokens */

int rlk_fenced_set_reentry_token(rlk_fenced *f, long long token)
{
    if (!f)
        return RLK_ERR_ARG;
    if (token < 0 || token > 9007199254740990LL)
        return rlk_set_error(f->b.c, RLK_ERR_ARG, "fenced lock %s: reentry token %lld is not in "
                             "0..9007199254740990", f->b.name, token);
    atomic_store(&f->reentry_token, token);
    return RLK_OK;
}

int rlk_fenced_token(rlk_fenced *f, long long *token)
{
    if (!f || !token)
        return RLK_ERR_ARG;
    return rlk_handle_token(&f->b, &f->id, "rlk_fenced_owner", RLK_KIND_FENCED,
                            "fenced lock %s: no hold of %s recorded", token);
}

int rlk_fenced_last_token(rlk_fenced *f, long long *token)
{
    redisReply *r = NULL;
    int rc;

    if (!f || !token)
        return RLK_ERR_ARG;
    *token = 0;
    if ((rc = rlk_handle_eval(&f->b, "fenced/token", "", &(rlk_proto_argvals){0}, &r)) != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER)
        *token = r->integer;
    else
        rc = rlk_set_error(f->b.c, RLK_ERR_PROTOCOL, "fenced lock %s: fenced/token replied type %d",
                           f->b.name, r->type);
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- queries */

int rlk_fenced_is_locked(rlk_fenced *f, int *locked)
{
    return f && locked ? rlk_fam_is_locked(&f->b, locked) : RLK_ERR_ARG;
}

int rlk_fenced_is_held_by_me(rlk_fenced *f, int *held)
{
    if (!f || !held)
        return RLK_ERR_ARG;
    return rlk_fam_is_held(&f->b, RLK_KIND_FENCED, &f->id, "rlk_fenced_owner", held);
}

int rlk_fenced_lease(rlk_fenced *f, long long *start_ns, long long *deadline_ns)
{
    if (!f || !start_ns || !deadline_ns)
        return RLK_ERR_ARG;
    return rlk_fam_held_lease(&f->b, RLK_KIND_FENCED, &f->id, "rlk_fenced_owner", start_ns,
                              deadline_ns);
}

int rlk_fenced_remaining_ttl(rlk_fenced *f, long long *ttl_ms)
{
    return f && ttl_ms ? rlk_fam_remaining_ttl(&f->b, ttl_ms) : RLK_ERR_ARG;
}

int rlk_fenced_hold_count(rlk_fenced *f, long long *count)
{
    return f && count ? rlk_fam_hold_count(&f->b, &f->id, "rlk_fenced_owner", count) : RLK_ERR_ARG;
}
