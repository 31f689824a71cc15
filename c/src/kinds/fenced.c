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

#include "client/error.h"
#include "kinds/fenced.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"

struct rlk_fenced {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name}; keys: the token
                                   redisson_lock_token:{name}; q: the local queue of name */
    _Atomic long long reentry_token;    /* rlk_fenced_set_reentry_token; 0: none */
};

static const rlk_fam_kind rlk_fenced_kind = {
    "rlk_fenced_new", "lock", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, NULL
};

/* The watchdog's task for fenced locks (runtime/wd.h): one fenced/renew
 * call per lock (KEYS: name, token key; ARGV: lease, owner, the hold's token: it renews only
 * that hold, not a later one of the same holder id in another process). */
const rlk_renew_task rlk_fenced_renew_task = {
    "fenced/renew", RLK_RENEW_ALONE, rlk_renew_build_token, rlk_renew_reply_one, NULL
};

const rlk_proto rlk_fenced_row = {
    .what = "fenced lock", .hold = RLK_KIND_FENCED, .names = "fenced",
    .acquire = "fenced/acquire", .acquire_args = "lease_ms owner", .release = "fenced/release",
    .release_args = "owner lease_ms publish", .force = "reentrant/force_release",
    .force_args = "publish", .wait_channel = "channel", .wait = RLK_PROTO_WAIT_CHANNEL,
    .flags = RLK_PROTO_TOKEN, .renew = &rlk_fenced_renew_task, .renew_keys = "lock token",
    .held = "fenced/held", .held_args = "owner"};

/* ---------------------------------------------------------------- handles */

rlk_fenced *rlk_fenced_new(rlk_client *c, const char *name)
{
    return rlk_handle_new(c, name, sizeof(rlk_fenced), &rlk_fenced_kind, RLK_HANDLE_QUEUE_NAME,
                          "fenced", "channel token");
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
    return f ? rlk_fam_id_set(f->b.c, &f->b.id, owner, 0, "rlk_fenced_set_owner") : RLK_ERR_ARG;
}

int rlk_fenced_owner(const rlk_fenced *f, char *buf, size_t len)
{
    return f ? rlk_handle_owner(&f->b, buf, len, "rlk_fenced_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- locking */

/* As rlk_lock_try_lock: the local queue of `name` (shared with rlk_lock handles, same hash)
 * and its rule for the attempt straight away. A token handed down
 * (rlk_fenced_set_reentry_token): fenced/reenter re-enters the enclosing hold with it, or
 * acquires as fenced/acquire when that hold is gone. */
int rlk_fenced_try_lock(rlk_fenced *f, long long wait_ms, long long lease_ms, long long *token)
{
    rlk_handle_call hc = rlk_handle_call_begin(f ? &f->b : NULL);
    rlk_handle_acq a;
    int rc = f ? rlk_handle_acq_start(&a, f, &f->b, "rlk_fenced_owner", &rlk_fenced_row,
                                      lease_ms, NULL)
               : RLK_ERR_ARG;

    if (rc == RLK_OK && (a.v.term = atomic_load(&f->reentry_token)) > 0)
        a.acquire = (rlk_proto_call){"fenced/reenter", "lease_ms owner token"};
    if (rc == RLK_OK && (rc = rlk_handle_drive(&a, wait_ms)) == RLK_OK && token)
        *token = a.m.token;
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
    return f ? rlk_handle_unlock(&f->b, &rlk_fenced_row, "fenced lock", "rlk_fenced_owner",
                                 f->b.q, NULL)
             : RLK_ERR_ARG;
}

/* Force unlocks: reentrant/force_release, as the reentrant lock's (named: a hash without a TTL
 * goes too) */
int rlk_fenced_force_unlock(rlk_fenced *f, int *released)
{
    return f ? rlk_handle_force(&f->b, &rlk_fenced_row, NULL, NULL, 0, f->b.q, released)
             : RLK_ERR_ARG;
}

int rlk_fenced_force_unlock_named(rlk_fenced *f, int *released)
{
    return f ? rlk_handle_force(&f->b, &rlk_fenced_row, NULL, NULL, 1, f->b.q, released)
             : RLK_ERR_ARG;
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
    return rlk_handle_token(&f->b, "rlk_fenced_owner", RLK_KIND_FENCED,
                            "fenced lock %s: no hold of %s recorded", token);
}

/* fenced/token (KEYS: lock, token): the last token issued */
int rlk_fenced_last_token(rlk_fenced *f, long long *token)
{
    static const rlk_proto_call last = {"fenced/token", ""};

    if (!f || !token)
        return RLK_ERR_ARG;
    *token = 0;
    return rlk_handle_int(&f->b, &last, NULL, token);
}

/* ---------------------------------------------------------------- queries */

int rlk_fenced_is_locked(rlk_fenced *f, int *locked)
{
    return rlk_fam_is_locked(f ? &f->b : NULL, locked);
}

int rlk_fenced_is_held_by_me(rlk_fenced *f, int *held)
{
    return rlk_fam_is_held(f ? &f->b : NULL, RLK_KIND_FENCED, "rlk_fenced_owner", held);
}

int rlk_fenced_lease(rlk_fenced *f, long long *start_ns, long long *deadline_ns)
{
    return rlk_fam_held_lease(f ? &f->b : NULL, RLK_KIND_FENCED, "rlk_fenced_owner", start_ns,
                              deadline_ns);
}

int rlk_fenced_remaining_ttl(rlk_fenced *f, long long *ttl_ms)
{
    return rlk_fam_remaining_ttl(f ? &f->b : NULL, ttl_ms);
}

int rlk_fenced_hold_count(rlk_fenced *f, long long *count)
{
    return rlk_fam_hold_count(f ? &f->b : NULL, RLK_KIND_FENCED, "rlk_fenced_owner", count);
}
