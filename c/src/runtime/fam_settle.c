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

void rlk_fam_doubt_keep_last(const rlk_client *c, const rlk_hold_spec *h)
{
    rlk_fam_doubt_keep(c, h, &rlk_thread_lost_conn);
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

int rlk_fam_doubt_read(rlk_rt *rt, const rlk_hold_spec *h, long long *before, long long *now)
{
    rlk_doubt *d = &rlk_thread_doubt;
    rlk_client *c = rt->c;
    char field[RLK_OWNER_MAX + 8];
    const char *argv[3] = {"HGET", h->name, field};
    int read = 0;
    rlk_fam_err e;

    if (!rlk_fam_doubt_matches(c, h->kind, h->name, h->owner))
        return 0;
    rlk_fam_err_keep(c, &e);
    rlk_fam_count_field(h->kind, h->owner, field, sizeof field);
    *before = rlk_wd_count_as(rt->wd, h->kind, h->name, h->owner);
    if (rlk_pool_fence(c, &d->lc, (long long)c->connect_timeout_ms + c->command_timeout_ms) ==
            RLK_OK &&
        rlk_fam_query(c, h->name, 3, argv, 0, now) == RLK_OK) {
        d->client_id = 0;   /* settled; otherwise kept for the next try */
        read = 1;
    }
    rlk_fam_err_put(c, &e, RLK_OK);
    return read;
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

/* ---------------------------------------------------------------- recording */

int rlk_fam_record(rlk_rt *rt, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                   long long sent_ns, long long token, int beyond, rlk_fam_undo_fn undo,
                   void *arg)
{
    int rc = rlk_fam_acks_acquired(rt->c, "acquire", h->name, undo, arg);

    if (rc == RLK_OK) {
        if ((rc = rlk_wd_acquired_as(rt->wd, h, lease_ms, watchdog, sent_ns, token)) != RLK_OK)
            undo(arg);
        else
            RLK_RT_COUNT(rt, acquired);
    }
    rlk_fam_give_back(rt, h, beyond, undo, arg);    /* too few replicas: not recorded */
    return rc;
}
