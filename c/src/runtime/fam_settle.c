/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fam_settle.c - recording an acquisition, and the lost replies of the lock family (fam_settle.h):
 * the client's count and the server's never diverge. docs/runtime.md "Lost replies" explains the
 * design and its limits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/pool.h"
#include "runtime/fam_settle.h"

/* An acquire whose lost reply could not be settled (the server stayed out
 * of reach for the whole budget): it may still run. Kept per thread (the
 * latest one) and settled at this thread's next acquisition of the same
 * (kind, name, owner), in rlk_fam_record. */
typedef struct rlk_doubt {
    uint64_t client_id;             /* 0: none */
    int kind;
    char name[512];
    char owner[RLK_OWNER_MAX + 1];
    rlk_lost_conn lc;
} rlk_doubt;

static _Thread_local rlk_doubt rlk_thread_doubt;

/* The connection of the latest lost reply this thread settled. */
static _Thread_local rlk_lost_conn rlk_thread_lost_conn;

static rlk_fam_adopt_hook_fn rlk_fam_adopt_fn;
static void *rlk_fam_adopt_arg;

void rlk_fam_adopt_hook_set(rlk_fam_adopt_hook_fn fn, void *arg)
{
    rlk_fam_adopt_fn = fn;
    rlk_fam_adopt_arg = arg;
}

void rlk_fam_adopt_hook(const char *name)
{
    if (rlk_fam_adopt_fn)
        rlk_fam_adopt_fn(name, rlk_fam_adopt_arg);
}

int rlk_fam_lost_fence(const rlk_fam_base *b, int *settled)
{
    rlk_client *c = b->c;
    rlk_lost_conn lc;
    rlk_fam_err e;
    long long budget = (long long)c->connect_timeout_ms + c->command_timeout_ms;

    if (!rlk_pool_lost_reply(c, &lc))
        return 0;
    rlk_thread_lost_conn = lc;
    rlk_fam_err_keep(c, &e);
    RLK_RT_COUNT(b->rt, lost_replies);
    *settled = rlk_pool_fence(c, &lc, budget);
    rlk_fam_err_put(c, &e, *settled);
    return 1;
}

/* After a call on b->c failed: 0 when its reply was not lost (the error stands). Else 1 and
 * *settled: RLK_OK once the lost request has run or never will, with the holder's count read
 * back into out[0] (HGET b->name field), or the error that left it unknown (recorded on c after
 * the original message). With token_key (a token kind), out[0..2] are the count, the hold's
 * token and the lock's PTTL at *read_ns, read in one call of the row's held script (keys: the
 * lock, token_key): in two round trips, another holder could take the lock in between and its
 * token be handed to the caller. */
static int rlk_fam_lost_settle(const rlk_fam_base *b, const char *field, const char *held,
                               const char *token_key, long long *out, long long *read_ns,
                               int *settled)
{
    const char *argv[3] = {"HGET", b->name, field};
    const char *keys[2] = {b->name, token_key};
    redisReply *r = NULL;
    rlk_fam_err e;

    if (!rlk_fam_lost_fence(b, settled))
        return 0;
    if (*settled != RLK_OK)
        return 1;
    rlk_fam_err_keep(b->c, &e);
    if (!token_key) {
        *settled = rlk_fam_query(b->c, b->name, 3, argv, 0, out);
    } else {
        *read_ns = rlk_clock_now_ns();
        *settled = rlk_evalv(b->c, held, 2, keys, NULL, 1, &field, NULL, &r);
        if (*settled == RLK_OK && rlk_fam_held_read(r, out) != 0)
            *settled = rlk_set_error(b->c, RLK_ERR_PROTOCOL,
                                     "%s: %s replied an unexpected shape", b->name, held);
        if (r)
            freeReplyObject(r);
    }
    rlk_fam_err_put(b->c, &e, *settled);
    return 1;
}

void rlk_fam_count_field(int kind, const char *owner, char *buf, size_t len)
{
    snprintf(buf, len, "%s%s", owner, kind == RLK_KIND_WRITE ? ":write" : "");
}

static void rlk_fam_doubt_keep(const rlk_client *c, const rlk_hold_spec *h,
                               const rlk_lost_conn *lc)
{
    rlk_doubt *d = &rlk_thread_doubt;

    d->client_id = 0;
    if (strlen(h->name) >= sizeof d->name || strlen(h->owner) >= sizeof d->owner)
        return;     /* not kept: the lease resolves it (docs/runtime.md) */
    d->client_id = c->id;
    d->kind = h->kind;
    snprintf(d->name, sizeof d->name, "%s", h->name);
    snprintf(d->owner, sizeof d->owner, "%s", h->owner);
    d->lc = *lc;
}

/* A lost call of h whose outcome stays unknown: kept as this thread's doubt, counted, and the
 * recorded error, message kept, becomes RLK_ERR_UNSETTLED. */
static int rlk_fam_unsettled(const rlk_fam_base *b, const rlk_hold_spec *h)
{
    char msg[RLK_ERRSTR_MAX];

    if (!rlk_fam_id_given(&b->id))     /* a given id's count is not this process's alone */
        rlk_fam_doubt_keep(b->c, h, &rlk_thread_lost_conn);
    RLK_RT_COUNT(b->rt, lost_unsettled);
    snprintf(msg, sizeof msg, "%s", rlk_errstr(b->c));
    return rlk_set_error(b->c, RLK_ERR_UNSETTLED, "%s", msg);
}

/* A lost call whose read-back count cannot tell whether it ran: the holder id is the
 * application's (rlk_fam_id.given) and the server still counts holds of it (other processes,
 * a nested rlk or a child handed the id, may hold under it), or a release found more holds
 * than this client knew of (known). Nothing is adopted, given back or sent again, and no doubt
 * is kept: a hold the call may have left ends with its lease. Counted as unsettled;
 * RLK_ERR_UNSETTLED, the message kept. */
static int rlk_fam_shared_unknown(const rlk_fam_base *b, const char *call, long long count,
                                  long long known)
{
    char msg[RLK_ERRSTR_MAX], why[160];

    RLK_RT_COUNT(b->rt, lost_unsettled);
    snprintf(msg, sizeof msg, "%s", rlk_errstr(b->c));
    if (rlk_fam_id_given(&b->id))
        snprintf(why, sizeof why, "this holder id, which was set by the application and may be "
                 "another process's too");
    else
        snprintf(why, sizeof why, "this holder, where this client knew of %lld", known);
    return rlk_set_error(b->c, RLK_ERR_UNSETTLED, "%s (outcome unknown: the server counts %lld "
                         "hold%s of %s, so the %s's reply cannot be read back from it; nothing "
                         "adopted or sent again: a hold it left ends with its lease)",
                         msg, count, count == 1 ? "" : "s", why, call);
}

static int rlk_fam_doubt_matches(const rlk_client *c, int kind, const char *name,
                                 const char *owner)
{
    const rlk_doubt *d = &rlk_thread_doubt;

    return d->client_id != 0 && d->client_id == c->id && d->kind == kind &&
           strcmp(d->name, name) == 0 && strcmp(d->owner, owner) == 0;
}

int rlk_fam_doubt_take(const rlk_client *c, int kind, const char *name, const char *owner)
{
    if (!rlk_fam_doubt_matches(c, kind, name, owner))
        return 0;
    rlk_thread_doubt.client_id = 0;
    return 1;
}

void rlk_fam_doubt_keep_lost(rlk_client *c, const rlk_hold_spec *h)
{
    rlk_lost_conn lc = {0};

    /* Not known to have run: the server may still count more holds than
     * the registry. The doubt settles it later (next acquisition, or the
     * last unlock); without a lost reply to fence, only the last unlock. */
    (void)rlk_pool_lost_reply(c, &lc);
    rlk_fam_doubt_keep(c, h, &lc);
}

int rlk_fam_doubt_pending(const rlk_client *c)
{
    return rlk_thread_doubt.client_id != 0 && rlk_thread_doubt.client_id == c->id;
}

/* For an acquisition of h about to be recorded: when this thread holds an unsettled lost call of
 * the same hold, fences it and reads the count: the holds to give back by rlk_fam_settle_rule
 * (those beyond the registry's and this acquisition's come from the doubted call: an acquire
 * that ran, a release that never will), or -1 when there is no such doubt or it stays
 * unsettled. */
static int rlk_fam_doubt_settle(rlk_rt *rt, const rlk_hold_spec *h)
{
    rlk_doubt *d = &rlk_thread_doubt;
    rlk_client *c = rt->c;
    char field[RLK_OWNER_MAX + 8];
    const char *argv[3] = {"HGET", h->name, field};
    long long before, now = 0;
    int beyond = -1;
    rlk_fam_err e;

    if (!rlk_fam_doubt_matches(c, h->kind, h->name, h->owner))
        return -1;
    rlk_fam_err_keep(c, &e);
    rlk_fam_count_field(h->kind, h->owner, field, sizeof field);
    before = rlk_wd_count_as(rt->wd, h->kind, h->name, h->owner);
    if (rlk_pool_fence(c, &d->lc, (long long)c->connect_timeout_ms + c->command_timeout_ms) ==
            RLK_OK &&
        rlk_fam_query(c, h->name, 3, argv, 0, &now) == RLK_OK) {
        d->client_id = 0;   /* settled; otherwise kept for the next try */
        beyond = rlk_fam_settle_rule(before, now, 1).give_back;
    }
    rlk_fam_err_put(c, &e, RLK_OK);
    return beyond;
}

void rlk_fam_give_back(rlk_rt *rt, const rlk_hold_spec *h, int n, rlk_fam_undo_fn undo,
                       void *arg)
{
    rlk_fam_err e;

    if (n <= 0)
        return;
    rlk_fam_err_keep(rt->c, &e);
    for (int i = 0; i < n; i++) {
        int rc = undo(arg);

        if (rc == RLK_OK) {
            RLK_RT_COUNT(rt, lost_given_back);
            continue;
        }
        if (rc != RLK_ERR_NOT_OWNER)
            rlk_fam_doubt_keep_lost(rt->c, h);
        break;  /* not ours: the hold went meanwhile (expired, force unlock) */
    }
    rlk_fam_err_put(rt->c, &e, RLK_OK);
}

rlk_fam_settled rlk_fam_settle_rule(long long known, long long now, int adoptable)
{
    rlk_fam_settled d = {now > known, 0, 0};

    if (d.ran) {
        d.adopt = adoptable != 0;
        d.give_back = now - known - d.adopt < RLK_FAM_GIVE_BACK_MAX
                      ? (int)(now - known - d.adopt) : RLK_FAM_GIVE_BACK_MAX;
    }
    return d;
}

rlk_fam_rel_settled rlk_fam_release_rule(long long known, long long now, int given)
{
    if (now > 0 && given)
        return RLK_FAM_REL_UNKNOWN;
    if (now == known)
        return RLK_FAM_REL_AGAIN;
    if (now == 0 && known > 1)
        return RLK_FAM_REL_GONE;
    return now < known ? RLK_FAM_REL_RAN : RLK_FAM_REL_UNKNOWN;
}

int rlk_fam_held_read(const redisReply *r, long long out[3])
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)
        return -1;
    for (int i = 0; i < 3; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
        out[i] = r->element[i]->integer;
    }
    return 0;
}

/* ---------------------------------------------------------------- recording */

/* rlk_fam_record when the server is known to count `beyond` holds of h
 * beyond the registry's and this acquisition (lost acquires that ran): they
 * are given back too, unless a doubt settled now gives a fresher count. */
static int rlk_fam_record_beyond(rlk_rt *rt, const rlk_hold_spec *h, long long lease_ms,
                                 int watchdog, long long sent_ns, long long token, int beyond,
                                 rlk_fam_undo_fn undo, void *arg)
{
    int rc = rlk_fam_acks_acquired(rt->c, "acquire", h->name, undo, arg), settled;

    if (rc != RLK_OK) {
        rlk_fam_give_back(rt, h, beyond, undo, arg);
        return rc;      /* too few replicas: given back, not recorded */
    }
    /* A doubt settled now gives the fresher count of the holds to give back. */
    settled = rlk_fam_doubt_settle(rt, h);
    rc = rlk_wd_acquired_as(rt->wd, h, lease_ms, watchdog, sent_ns, token);
    if (settled >= 0)
        beyond = settled;
    if (rc != RLK_OK)
        undo(arg);
    else
        RLK_RT_COUNT(rt, acquired);
    rlk_fam_give_back(rt, h, beyond, undo, arg);
    return rc;
}

int rlk_fam_record(rlk_rt *rt, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                   long long sent_ns, long long token, rlk_fam_undo_fn undo, void *arg)
{
    return rlk_fam_record_beyond(rt, h, lease_ms, watchdog, sent_ns, token, 0, undo, arg);
}

int rlk_fam_acquire_lost(const rlk_fam_base *b, int rc, const rlk_hold_spec *h,
                         long long lease_ms, int watchdog, long long sent_ns, const char *held_call,
                         const char *token_key, long long *token, rlk_fam_undo_fn undo, void *arg)
{
    char field[RLK_OWNER_MAX + 8], msg[RLK_ERRSTR_MAX];
    long long before = rlk_wd_count_as(b->rt->wd, h->kind, h->name, h->owner);
    long long held[3] = {0, 0, -2}, read_ns = 0;   /* the count, and a token kind's token, PTTL */
    rlk_fam_settled d;
    int settled;

    rlk_fam_count_field(h->kind, h->owner, field, sizeof field);
    if (!rlk_fam_lost_settle(b, field, held_call, token_key, held, &read_ns, &settled))
        return rc;
    if (settled != RLK_OK)
        return rlk_fam_unsettled(b, h);     /* it may still run */
    if (held[0] > 0 && rlk_fam_id_given(&b->id))
        return rlk_fam_shared_unknown(b, "acquire", held[0], before);
    snprintf(msg, sizeof msg, "%s", rlk_errstr(b->c));
    d = rlk_fam_settle_rule(before, held[0], !token_key || (held[2] > 0 && held[1] > 0));
    if (!d.ran) {
        /* It did not run (or has not taken the lock): nothing to count. */
        RLK_RT_COUNT(b->rt, lost_not_run);
        return rlk_set_error(b->c, rc, "%s (settled: the acquire did not take the lock)", msg);
    }
    if (token_key) {
        rlk_fam_adopt_hook(b->name);
        if (!d.adopt) {
            /* It ran, but its hold had no lease left when read (or no token): never
             * adopted past its lease; what the server still counts is given back. */
            RLK_RT_COUNT(b->rt, lost_not_run);
            rlk_fam_give_back(b->rt, h, d.give_back, undo, arg);
            return rlk_set_error(b->c, rc, "%s (settled: the acquire ran, but its hold had %s "
                                 "when read back: not adopted)", msg,
                                 held[1] <= 0 ? "no token" : "no lease left");
        }
        *token = held[1];
        /* The hold's deadline starts from the read: PTTL left at read_ns (the
         * acquire's lease, lease_ms, began lease_ms - PTTL before it). */
        sent_ns = held[2] < lease_ms ? read_ns - (lease_ms - held[2]) * RLK_NS_PER_MS : read_ns;
    }
    /* It ran: the caller gets one hold; earlier lost acquires of this holder that ran too
     * (within this wait, or reported unsettled) are given back (rlk_fam_settle_rule). */
    RLK_RT_COUNT(b->rt, lost_adopted);
    return rlk_fam_record_beyond(b->rt, h, lease_ms, watchdog, sent_ns, token ? *token : 0,
                                 d.give_back, undo, arg);
}

int rlk_fam_release_lost(const rlk_fam_base *b, int kind, const char *owner, long long before,
                         int *outcome, int *rc)
{
    char field[RLK_OWNER_MAX + 8];
    long long now = 0;
    int settled;

    rlk_fam_count_field(kind, owner, field, sizeof field);
    if (!rlk_fam_lost_settle(b, field, NULL, NULL, &now, NULL, &settled))
        return 0;
    if (settled != RLK_OK) {
        /* The server may still count the hold the registry gave up: the next acquisition (or
         * last unlock) of it reconciles. */
        *rc = rlk_fam_unsettled(b, &(rlk_hold_spec){.kind = kind, .name = b->name, .owner = owner});
        return 0;
    }
    if (before <= 0)
        return 0;   /* a hold this client did not count */
    switch (rlk_fam_release_rule(before, now, rlk_fam_id_given(&b->id))) {
    case RLK_FAM_REL_AGAIN:
        return 1;   /* it did not run: the caller may send it again */
    case RLK_FAM_REL_RAN:
        *outcome = now > 0 ? RLK_REL_STILL_HELD : RLK_REL_RELEASED;
        *rc = RLK_OK;
        return 0;
    case RLK_FAM_REL_GONE:
        *outcome = RLK_REL_NOT_OWNER;   /* gone meanwhile (expired, deleted) */
        *rc = RLK_OK;
        return 0;
    case RLK_FAM_REL_UNKNOWN:
        break;
    }
    *rc = rlk_fam_shared_unknown(b, "release", now, before);
    return 0;
}
