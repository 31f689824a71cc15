/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd_rule.c - the watchdog's pure rules (wd_rule.h says which): no thread, no I/O,
 * no clock of their own, so both renewal drivers, the watchdog thread (wd.c)
 * and the non-blocking API's (engine/ae_wd.c), follow one rule set. Times are
 * in any one unit (ns in wd.c, ms in the async driver).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "client/slot.h"
#include "engine/wd_rule.h"

rlk_renewed_fn rlk_renewed_hook;

static int rlk_renew_result_of(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
        return (int)r->integer;
    return -1;
}

int rlk_renew_build_one(const rlk_renew_item *items, int m, const char *lease, const char **keys,
                        int *nkeys, const char **args, size_t *lens)
{
    (void)m;
    (void)lens;
    for (int k = 0; k < items[0].nkeys; k++)
        keys[k] = items[0].keys[k];
    *nkeys = items[0].nkeys;
    args[0] = lease;
    args[1] = items[0].owner;
    return 2;
}

int rlk_renew_build_token(const rlk_renew_item *items, int m, const char *lease,
                          const char **keys, int *nkeys, const char **args, size_t *lens)
{
    int n = rlk_renew_build_one(items, m, lease, keys, nkeys, args, lens);

    if (strcmp(items[0].token, "0") != 0)
        args[n++] = items[0].token;
    return n;
}

int rlk_renew_token_moved(const rlk_renew_id *d, const char *named)
{
    return strcmp(d->token, named) != 0;
}

int rlk_renew_reply_one(int rc, const redisReply *r, int m, int *results)
{
    (void)m;
    if (rc == RLK_OK)
        results[0] = rlk_renew_result_of(r);
    else
        results[0] = rc == RLK_ERR_SCRIPT ? 0 : -1;
    return 0;
}

void rlk_renew_spread(int rc, const redisReply *r, int m, int *results)
{
    if (rc != RLK_OK || r->type != REDIS_REPLY_ARRAY || r->elements != (size_t)m)
        return;
    for (int k = 0; k < m; k++)
        results[k] = rlk_renew_result_of(r->element[k]);
}

int rlk_renew_id_set(rlk_renew_id *d, int kind, const rlk_renew_task *task, const char *name,
                     const char *owner, int nkeys, const char *const *keys)
{
    int ok;

    d->kind = kind;
    d->task = task;
    d->name = strdup(name);
    d->owner = strdup(owner);
    d->keys[0] = d->name;
    d->nkeys = 1;
    rlk_renew_id_token(d, 0);
    ok = d->name && d->owner;
    for (int i = 1; ok && i < nkeys && i < RLK_HOLD_KEYS_MAX; i++) {
        ok = (d->keys[i] = strdup(keys[i])) != NULL;
        d->nkeys += ok;
    }
    d->slot = ok ? rlk_key_slot(name, strlen(name)) : 0;
    if (!ok)
        rlk_renew_id_free(d);
    return ok ? 0 : -1;
}

void rlk_renew_id_free(rlk_renew_id *d)
{
    for (int i = 1; i < d->nkeys; i++)     /* keys[0] is name */
        free(d->keys[i]);
    free(d->name);
    free(d->owner);
    memset(d, 0, sizeof *d);
}

void rlk_renew_id_item(const rlk_renew_id *d, const void *arg, rlk_renew_item *it)
{
    it->name = d->name;
    it->owner = d->owner;
    it->nkeys = d->nkeys;
    it->keys = (const char *const *)d->keys;
    it->arg = arg;
    it->token = d->token;
}

void rlk_renew_id_token(rlk_renew_id *d, long long token)
{
    snprintf(d->token, sizeof d->token, "%lld", token);
}

int rlk_renew_same_call(const rlk_renew_id *a, const rlk_renew_id *b, int routed)
{
    if (!a->task || a->task != b->task)
        return 0;
    switch (a->task->group) {
    case RLK_RENEW_SLOT:
        return !routed || a->slot == b->slot;   /* a cluster: never mix slots (CROSSSLOT) */
    case RLK_RENEW_NAME:
        return strcmp(a->name, b->name) == 0;
    default:
        return 0;
    }
}

long long rlk_renew_lost_after(long long lease, long long margin)
{
    if (margin <= 0)
        return lease;
    return margin < lease ? lease - margin : 0;     /* the margin, at most the lease */
}

int rlk_renew_expired(long long now, long long last_ok, long long lost_after)
{
    return now - last_ok >= lost_after;
}

int rlk_renew_verdict(int result, long long now, long long last_ok, long long lost_after)
{
    if (result == 1)
        return RLK_RENEW_RENEWED;
    if (result == 0)
        return RLK_RENEW_GONE;
    return rlk_renew_expired(now, last_ok, lost_after) ? RLK_RENEW_EXPIRED : RLK_RENEW_RETRY;
}

long long rlk_renew_retry_at(long long now, long long period, long long last_ok,
                             long long lost_after, long long min_step)
{
    long long at = now + period;

    if (last_ok + lost_after < at)
        at = last_ok + lost_after;
    return at < now + min_step ? now + min_step : at;
}
