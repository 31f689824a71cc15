/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_wd.c - the async client's watchdog (ae_wd.h): the second driver of
 * the watchdog thread's rules (engine/wd_rule.c), on the loop's timer and
 * the engine's pipelined calls, through the kinds' renewal tasks.
 *
 * A hold is due every lease/3 from the send time of its last successful
 * acquire or renewal (last_ok); holds due within a quarter period are
 * renewed together. Result 1: last_ok moves to the renewal's send time.
 * 0: RLK_LOST_GONE (unless the hold's token changed while the renewal was on the wire: then
 * it is renewed again at once with the new one). Otherwise (an error, a lost reply, a call that never
 * went out) the hold is tried again a period later, and whatever is in
 * flight, once last_ok + lease - lost_margin_ms has passed it is reported
 * RLK_LOST_EXPIRED and dropped: a renewal's late reply is ignored.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "engine/ae_state.h"
#include "engine/ae_wd.h"

int rlk_ae_wd_no_deadline;

static void ae_wd_fire(rlk_async *ac, void *arg);

/* A renewal call and the token it named for each of its holds (a hold's token may change
 * while the call is on the wire: rlk_ae_wd_token). */
typedef struct ae_wd_call {
    ae_renewal b;                   /* first: the call's arg is both */
    char named[AE_RENEW_BATCH][sizeof ((rlk_renew_id *)0)->token];
} ae_wd_call;

/* The metrics, as the watchdog thread counts: a lock lost (reason
 * RLK_LOST_*), else a renewal call and whether it failed. */
static void ae_wd_count(rlk_async *ac, int reason, int failed)
{
    rlk_rt_counters *k = rlk_ae_counters(ac);

    if (!k)
        return;
    if (reason) {
        RLK_COUNT(k, locks_lost);
        if (reason == RLK_LOST_GONE)
            RLK_COUNT(k, locks_lost_gone);
        else
            RLK_COUNT(k, locks_lost_expired);
        return;
    }
    RLK_COUNT(k, renew_calls);
    if (failed)
        RLK_COUNT(k, renew_errors);
}

/* The lease a renewal sets, in ms. */
static long long ae_wd_lease(const rlk_async *ac)
{
    return ac->c->watchdog_lease_ms > 0 ? ac->c->watchdog_lease_ms : 1;
}

/* The hold's loss deadline (LLONG_MAX: none). */
static long long ae_wd_deadline(const rlk_ae_hold *h)
{
    return rlk_ae_wd_no_deadline ? LLONG_MAX : h->last_ok + h->lost_after;
}

/* When the hold needs the timer next: its renewal, or its deadline. */
static long long ae_wd_when(const rlk_ae_hold *h)
{
    long long at = ae_wd_deadline(h);

    return !h->inflight && h->next_due < at ? h->next_due : at;
}

/* The timer fires by at (sooner when set for sooner). */
static void ae_wd_want(rlk_async *ac, long long at)
{
    long long now = rlk_ae_now_ms();

    if (ac->closing || at == LLONG_MAX || (ac->renew_timer && ac->renew_timer->at <= at))
        return;
    rlk_ae_timer_del(ac->renew_timer);
    ac->renew_timer = rlk_ae_timer_add(ac, at > now ? at - now : 0, ae_wd_fire, NULL);
}

static void ae_wd_hold_free(rlk_ae_hold *h)
{
    rlk_renew_id_free(&h->id);
    free(h);
}

static void ae_wd_unref(rlk_ae_hold *h)
{
    if (--h->refs == 0 && h->removed)
        ae_wd_hold_free(h);
}

rlk_ae_hold *rlk_ae_wd_add(rlk_async *ac, int kind, const rlk_renew_task *task, const char *name,
                           int nkeys, const char *const *keys, const char *owner,
                           long long sent_ms, rlk_ae_lost_fn lost, void *arg)
{
    rlk_ae_hold *h;
    long long lease = ae_wd_lease(ac);

    if (!task || nkeys < 1 || nkeys > RLK_HOLD_KEYS_MAX || !(h = calloc(1, sizeof *h)))
        return NULL;
    if (rlk_renew_id_set(&h->id, kind, task, name, owner, nkeys, keys) != 0) {
        free(h);
        return NULL;
    }
    h->ac = ac;
    h->lost = lost;
    h->arg = arg;
    h->period = lease / 3 > 0 ? lease / 3 : 1;
    h->lost_after = rlk_renew_lost_after(lease, ac->c->lost_margin_ms);
    h->last_ok = sent_ms;
    h->next_due = sent_ms + h->period;
    AE_DLIST_PUSH(ac->holds, h);
    ac->nholds++;
    ae_wd_want(ac, ae_wd_when(h));
    return h;
}

void rlk_ae_wd_acquired(rlk_ae_hold *h, long long sent_ms)
{
    if (!h || h->removed || sent_ms <= h->last_ok)
        return;
    h->last_ok = sent_ms;
    if (!h->inflight)
        h->next_due = sent_ms + h->period;
}

void rlk_ae_wd_token(rlk_ae_hold *h, long long token)
{
    if (h && !h->removed)
        rlk_renew_id_token(&h->id, token);  /* on the loop: no renewal is being built */
}

long long rlk_ae_wd_lease_end(const rlk_ae_hold *h)
{
    return h->last_ok + ae_wd_lease(h->ac);
}

void rlk_ae_wd_del(rlk_ae_hold *h)
{
    rlk_async *ac;

    if (!h || h->removed)
        return;
    ac = h->ac;
    h->removed = 1;
    AE_DLIST_UNLINK(ac->holds, h);
    ac->nholds--;
    if (!h->refs)
        ae_wd_hold_free(h);
}

void rlk_ae_wd_free_all(rlk_async *ac)
{
    while (ac->holds)
        rlk_ae_wd_del(ac->holds);   /* one still named by a call goes with its last reference */
}

/* Reports h lost: the kind's note, then the client's callback. */
static void ae_wd_lose(rlk_async *ac, rlk_ae_hold *h, int reason)
{
    h->refs++;      /* its id stays readable until the report is done */
    if (h->lost)
        h->lost(ac, h, h->arg);
    rlk_ae_wd_del(h);
    ae_wd_count(ac, reason, 0);
    if (ac->lost_fn && !ac->closing)
        ac->lost_fn(h->id.kind, h->id.name, h->id.owner, reason, ac->lost_ud);
    ae_wd_unref(h);
}

static void ae_wd_send(rlk_async *ac, const rlk_renew_task *task, rlk_ae_hold **hs, int m,
                       int fallback);

/* A renewal's reply (or failure): each hold's outcome by the shared rules. */
static void ae_wd_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr, int lost,
                        void *arg)
{
    ae_wd_call *call = arg;
    ae_renewal *b = &call->b;
    int results[AE_RENEW_BATCH], each;
    long long now = rlk_ae_now_ms();

    (void)errstr;
    (void)lost;
    for (int k = 0; k < b->n; k++)
        results[k] = -1;
    each = b->task->reply(rc, rc == RLK_OK ? r : NULL, b->n, results);
    if (!b->fallback)
        ae_wd_count(ac, 0, rc != RLK_OK);
    for (int k = 0; k < b->n; k++) {
        rlk_ae_hold *h = b->h[k];

        h->inflight = 0;
        if (h->removed || ac->closing) {
            ae_wd_unref(h);
            continue;
        }
        if (each && b->task->fallback) {    /* each alone, with the fallback's results */
            ae_wd_send(ac, b->task->fallback, &h, 1, 1);
            ae_wd_unref(h);
            continue;
        }
        if (results[k] == 0 && rlk_renew_token_moved(&h->id, call->named[k])) {
            h->next_due = now;      /* superseded by this client's own re-entry: renew with it */
            ae_wd_want(ac, ae_wd_when(h));
            ae_wd_unref(h);
            continue;
        }
        switch (rlk_renew_verdict(results[k], now, h->last_ok,
                                  rlk_ae_wd_no_deadline ? LLONG_MAX / 2 : h->lost_after)) {
        case RLK_RENEW_RENEWED:
            if (b->sent > h->last_ok)
                h->last_ok = b->sent;
            if (rlk_renewed_hook)
                rlk_renewed_hook(h->id.kind, h->id.name, h->id.owner, b->sent * RLK_NS_PER_MS,
                                 ae_wd_lease(ac));
            h->next_due = b->sent + h->period;
            break;
        case RLK_RENEW_GONE:
            ae_wd_lose(ac, h, RLK_LOST_GONE);
            break;
        case RLK_RENEW_EXPIRED:
            ae_wd_lose(ac, h, RLK_LOST_EXPIRED);
            break;
        default:
            h->next_due = rlk_renew_retry_at(now, h->period, h->last_ok, h->lost_after, 1);
            break;
        }
        if (!h->removed)
            ae_wd_want(ac, ae_wd_when(h));
        ae_wd_unref(h);
    }
    free(call);
}

/* One call of task for hs[0..m) (in flight until its reply). */
static void ae_wd_send(rlk_async *ac, const rlk_renew_task *task, rlk_ae_hold **hs, int m,
                       int fallback)
{
    rlk_renew_item items[AE_RENEW_BATCH];
    const char *keys[RLK_RENEW_KEYS_ROOM(AE_RENEW_BATCH)];     /* as the watchdog thread's */
    const char *args[RLK_RENEW_ARGS_ROOM(AE_RENEW_BATCH)];
    size_t lens[RLK_RENEW_ARGS_ROOM(AE_RENEW_BATCH)] = {0};
    char lease[24];
    int nkeys = 0, nargs;
    ae_wd_call *call = calloc(1, sizeof *call);
    ae_renewal *b = call ? &call->b : NULL;

    if (!b) {       /* not sent: a failed renewal, tried again later */
        for (int k = 0; k < m; k++)
            hs[k]->next_due = rlk_renew_retry_at(rlk_ae_now_ms(), hs[k]->period, hs[k]->last_ok,
                                                 hs[k]->lost_after, 1);
        return;
    }
    snprintf(lease, sizeof lease, "%lld", ae_wd_lease(ac));
    for (int k = 0; k < m; k++) {
        rlk_renew_id_item(&hs[k]->id, NULL, &items[k]);
        memcpy(call->named[k], hs[k]->id.token, sizeof call->named[k]);
        b->h[k] = hs[k];
        hs[k]->refs++;
        hs[k]->inflight = 1;
    }
    nargs = task->build(items, m, lease, keys, &nkeys, args, lens);
    for (int k = 0; k < nargs; k++)
        if (lens[k] == 0)
            lens[k] = strlen(args[k]);
    b->task = task;
    b->n = m;
    b->fallback = fallback;
    b->sent = rlk_ae_now_ms();
    if (!rlk_ae_scriptv(ac, task->script, nkeys, keys, nargs, args, lens, ae_wd_reply, call))
        ae_wd_reply(ac, RLK_ERR_NOMEM, NULL, NULL, 0, call);  /* a failed renewal */
}

/* Holds past their deadline are lost; the due ones are renewed, grouped
 * into calls by their tasks' rule. */
static void ae_wd_fire(rlk_async *ac, void *arg)
{
    size_t total = ac->nholds, n = 0;
    rlk_ae_hold **all = total ? malloc(total * sizeof *all) : NULL, *batch[AE_RENEW_BATCH];
    char *used = total ? calloc(total, 1) : NULL;
    long long now = rlk_ae_now_ms(), at = LLONG_MAX;

    (void)arg;
    ac->renew_timer = NULL;
    if (total && (!all || !used)) {
        free(all);
        free(used);
        ae_wd_want(ac, now + 1);
        return;
    }
    for (rlk_ae_hold *h = ac->holds; h && n < total; h = h->next) {
        all[n++] = h;
        h->refs++;      /* a report may drop other holds: each stays readable */
    }
    for (size_t i = 0; i < n; i++)
        if (!all[i]->removed && !ac->closing && now >= ae_wd_deadline(all[i]))
            ae_wd_lose(ac, all[i], RLK_LOST_EXPIRED);
    for (size_t i = 0; i < n && !ac->closing; i++) {
        rlk_ae_hold *h = all[i];
        int m = 0;

        if (used[i] || h->removed || h->inflight || h->next_due > now + h->period / 4)
            continue;
        for (size_t j = i; j < n; j++) {
            rlk_ae_hold *o = all[j];

            if (used[j] || o->removed || o->inflight || o->next_due > now + o->period / 4 ||
                (j != i && !rlk_renew_same_call(&h->id, &o->id, ae_routed(ac))))
                continue;
            used[j] = 1;
            batch[m++] = o;
            if (m == AE_RENEW_BATCH) {
                ae_wd_send(ac, h->id.task, batch, m, 0);
                m = 0;
            }
        }
        if (m)
            ae_wd_send(ac, h->id.task, batch, m, 0);
    }
    for (size_t i = 0; i < n; i++)
        ae_wd_unref(all[i]);
    free(all);
    free(used);
    for (rlk_ae_hold *h = ac->holds; h; h = h->next)
        if (ae_wd_when(h) < at)
            at = ae_wd_when(h);
    ae_wd_want(ac, at);
}
