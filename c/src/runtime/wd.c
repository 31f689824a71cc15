/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd.c - the watchdog thread, one per client (started with its first entry; connection CLIENT
 * SETNAME rlk-wd): it renews the lease-less holds of the registry (wd_reg.c; the record's wd)
 * and the kept entries every lease/3, each through its kind's task (wd.h), batched as the task
 * says. docs/runtime.md "The watchdog" states the rules.
 *
 * Race-freedom with unlock (docs/runtime.md has the argument): the thread marks a renewal's
 * entries in flight under wd->mu and clears the mark only after its reply (or failure); the
 * last unlock waits, under wd->mu, until its entry is not in flight and takes it out of the
 * registry before its release is sent, and nothing renews an entry out of the registry. So no
 * renewal of an entry runs after its release.
 *
 * Outcomes per entry: rlk_renew_verdict (wd_rule.h). A hold dropped as lost is never renewed
 * again and stays marked lost until its owner acquires it again; reports go outside wd->mu.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/pool.h"
#include "client/scripts.h"
#include "client/topo.h"
#include "client/transport.h"
#include "engine/metrics.h"
#include "engine/thread.h"
#include "runtime/wd_t.h"

#define RLK_WD_NAME "rlk-wd"

/* ---------------------------------------------------------------- the thread: renewing */

static void rlk_wd_disconnect(rlk_wd *wd)
{
    rlk_transport_free(wd->ctx);    /* NULL: nothing */
    wd->ctx = NULL;
}

/* The round's timeout (docs/runtime.md "Timeout"): its shortest period (100 ms at least), never
 * past the moment its first entry would be declared lost (10 ms at least), nor the command
 * timeout; a slower renewal is retried, not waited for. */
static long long rlk_wd_timeout_ms(const rlk_wd *wd)
{
    long long ms = wd->round_period_ns / RLK_NS_PER_MS;

    if (ms < 100)
        ms = 100;
    if (wd->round_limit_ns / RLK_NS_PER_MS < ms)     /* past due: the 10 ms below */
        ms = wd->round_limit_ns / RLK_NS_PER_MS;
    if (ms < 10)
        ms = 10;
    if (ms > wd->c->command_timeout_ms)
        ms = wd->c->command_timeout_ms;
    return ms;
}

/* The watchdog connection (CLIENT SETNAME rlk-wd, and lib-name, lib-ver), opened again when not
 * usable, with the round's timeout. */
static int rlk_wd_connect(rlk_wd *wd)
{
    long long ms = rlk_wd_timeout_ms(wd), previous;
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)(ms % 1000) * 1000};
    int rc = RLK_OK, fresh = !wd->ctx || !rlk_conn_usable(wd->c, wd->ctx);

    if (fresh) {
        rlk_wd_disconnect(wd);
        /* The round's timeout bounds the connect too: a TLS handshake (or an AUTH)
         * with a hung server must not outlast the leases being renewed. */
        previous = rlk_time_limit_enter(rlk_clock_now_ns() + ms * RLK_NS_PER_MS);
        rc = rlk_conn_open(wd->c, &wd->ctx);
        rlk_time_limit_leave(previous);
    }
    if (rc == RLK_OK && redisSetTimeout(wd->ctx, tv) != REDIS_OK)
        rc = rlk_set_ctx_error(wd->c, wd->ctx, "watchdog connect");
    if (rc == RLK_OK && fresh)
        rc = rlk_conn_setname(wd->c, wd->ctx, RLK_WD_NAME);
    if (rc != RLK_OK)
        rlk_wd_disconnect(wd);
    return rc;
}

/* One call of task for batch[i..i+m): its outcomes into results[i..i+m). counted: the call
 * counts in renew_calls / renew_errors (a fallback's calls do not). The connection is closed
 * after a connection error (reopened on the next round), and the round's other calls are
 * skipped (their entries count as failed renewals). */
static void rlk_wd_call(rlk_wd *wd, const rlk_renew_task *task, int i, int m, int counted)
{
    const rlk_script_info *s = rlk_script_find(wd->c, task->script);
    int nkeys = 0, nargs, rc, each;
    redisReply *r = NULL;
    char lease[24];

    /* The entries of one call share their lease: one kind, one registry. */
    snprintf(lease, sizeof lease, "%lld", wd->batch[i]->renew_ms);
    for (int k = 0; k < m; k++) {
        rlk_renew_id_item(&wd->batch[i + k]->id, wd->batch[i + k]->arg, &wd->items[k]);
        wd->results[i + k] = -1;
    }
    memset(wd->lens, 0, RLK_WD_CALL_ARGS_MAX * sizeof *wd->lens);
    nargs = task->build(wd->items, m, lease, wd->keys, &nkeys, wd->args, wd->lens);
    for (int k = 0; k < nargs; k++)
        if (wd->lens[k] == 0)
            wd->lens[k] = strlen(wd->args[k]);
    if (counted)
        RLK_COUNT(wd->counters, renew_calls);
    if (wd->conn_failed) {
        rc = RLK_ERR_IO;
    } else if (!s) {
        rc = rlk_set_error(wd->c, RLK_ERR_NOSUCHSCRIPT, "no script named '%s'", task->script);
    } else if (rlk_topo_routed(wd->c)) {    /* by the first key: one node's trouble spares others */
        rc = rlk_topo_evalv(wd->c, s, nkeys, wd->keys, NULL, nargs, wd->args, wd->lens, &r,
                            rlk_wd_timeout_ms(wd));
    } else {
        rc = rlk_wd_connect(wd);
        if (rc == RLK_OK)
            rc = rlk_conn_evalv(wd->c, wd->ctx, s, nkeys, wd->keys, NULL, nargs, wd->args,
                                wd->lens, &r, NULL);
        if (rlk_pool_conn_error(rc) || (wd->ctx && wd->ctx->err)) {
            rlk_wd_disconnect(wd);
            wd->conn_failed = 1;
        }
    }
    /* Renewed, but fewer replicas than min_replicas acknowledged: counted, not undone. */
    if (rc == RLK_OK && rlk_conn_acks_short(NULL))
        RLK_COUNT(wd->counters, renew_unacked);
    each = task->reply(rc, r, m, &wd->results[i]);
    if (counted && rc != RLK_OK)
        RLK_COUNT(wd->counters, renew_errors);
    if (r)
        freeReplyObject(r);
    if (each && task->fallback)
        for (int k = 0; k < m; k++)
            rlk_wd_call(wd, task->fallback, i + k, 1, 0);
}

/* Renews batch[0..n); results[i]: 1 renewed, 0 gone, -1 error. Each entry goes in one call of
 * its task, grouped as the task says: the batch is reordered so a call's entries are adjacent. */
static void rlk_wd_renew(rlk_wd *wd, int n)
{
    int routed = rlk_topo_routed(wd->c);

    rlk_topo_check(wd->c);     /* never renew on a master the sentinels no longer name */
    wd->conn_failed = 0;
    wd->round_limit_ns = LLONG_MAX;
    wd->round_period_ns = LLONG_MAX;
    for (int i = 0; i < n; i++) {
        const rlk_hold *e = wd->batch[i];
        long long left = e->last_ok_ns + e->lost_after_ns - rlk_clock_now_ns();

        if (left < wd->round_limit_ns)
            wd->round_limit_ns = left;
        if (e->period_ns < wd->round_period_ns)
            wd->round_period_ns = e->period_ns;
        wd->results[i] = -1;    /* no task: not renewed (an error) */
    }
    for (int i = 0, m; i < n; i += m) {
        m = 1;
        for (int j = i + 1; j < n; j++) {
            if (rlk_renew_same_call(&wd->batch[i]->id, &wd->batch[j]->id, routed)) {
                rlk_hold *e = wd->batch[j];

                wd->batch[j] = wd->batch[i + m];
                wd->batch[i + m++] = e;
            }
        }
        if (wd->batch[i]->id.task)
            rlk_wd_call(wd, wd->batch[i]->id.task, i, m, 1);
    }
}

/* ---------------------------------------------------------------- the thread: bookkeeping (wd->mu held) */

/* Takes e off the thread's list and queues it last on the lost entries whose end is *tail (kept,
 * so that queueing does not walk the list), to report once wd->mu is released. A hold's entry
 * also leaves the registry, marked lost, and its channel. */
static void rlk_wd_lose(rlk_wd *wd, rlk_hold *e, int reason, rlk_hold ***tail)
{
    rlk_wd_unlink(wd, e);
    **tail = e;
    *tail = &e->next;
    wd->reporting = 1;      /* rlk_wd_unkeep waits until the reports are made */
    e->lost = reason;
    if (e->rec) {
        rlk_wd_mark(wd, e->rec);
        rlk_holds_drop(wd->table, e->rec);
        e->rec = NULL;
        rlk_hold_leave(wd, e);
    }
}

/* Joins e's channel, e having lived RLK_WD_JOIN_MS: renewed once the join is confirmed (now, if
 * it is already: a message there before the join, when no hold of this client had joined it,
 * went to nobody; else when the subscriber hears the confirmation, rlk_wd_on_message), so a
 * force unlock before the join is found by that renewal, and one after it is heard. */
static void rlk_wd_join(rlk_wd *wd, rlk_hold *e, long long now)
{
    e->join_ns = 0;
    if (rlk_sub_join_hold(wd->sub, e->channel, &e->sub_ch) == 1)
        e->next_due_ns = now;
}

/* Drops the entries past their loss deadline, failing or not (a renewal sent now could find
 * a later hold of the same holder id in another process, the lease of this one having run out
 * on the server while this process was stopped: as engine/ae_wd.c does), joins the channels of
 * those old enough, and marks those due by now (and those due within a quarter period, to renew
 * them together) in flight; *next: when the earliest of the others is due or to join (-1: none;
 * a join delay from now at most after a hold was taken since the last look, wd->fresh). Returns
 * how many it marked. */
static int rlk_wd_collect(rlk_wd *wd, long long now, long long *next, rlk_hold ***tail)
{
    int n = 0;

    *next = wd->fresh ? now + rlk_wd_join_ms * RLK_NS_PER_MS : -1;
    wd->fresh = 0;
    for (rlk_hold *e = wd->holds, *after; e; e = after) {
        after = e->next;
        if (e->inflight)
            continue;
        if (e->join_ns && e->rec && e->join_ns <= now)
            rlk_wd_join(wd, e, now);
        if (e->join_ns)
            *next = rlk_clock_until_min(*next, e->join_ns);
        if (rlk_renew_expired(now, e->last_ok_ns, e->lost_after_ns)) {
            rlk_wd_lose(wd, e, RLK_LOST_EXPIRED, tail);
        } else if (n < RLK_WD_BATCH_MAX && e->next_due_ns <= now + e->period_ns / 4) {
            e->inflight = 1;
            if (e->rec)     /* the token the renewal names: read here, under wd->mu */
                rlk_renew_id_token(&e->id, e->rec->token);
            wd->batch[n++] = e;
        } else {
            *next = rlk_clock_until_min(*next, e->next_due_ns);
        }
    }
    return n;
}

/* 1 when a renewal of e that replied 0 named a token its hold no longer has: a re-entry of
 * this client minted a newer one while the renewal was on the wire (the renewal's token, e->id's,
 * is set only in rlk_wd_collect). */
static int rlk_wd_token_moved(const rlk_hold *e, int result)
{
    char token[24];

    if (result != 0 || !e->rec)
        return 0;
    snprintf(token, sizeof token, "%lld", e->rec->token);
    return rlk_renew_token_moved(&e->id, token);
}

static void rlk_wd_apply(rlk_wd *wd, int n, long long sent_ns, rlk_hold ***tail)
{
    long long now = rlk_clock_now_ns();

    for (int i = 0; i < n; i++) {
        rlk_hold *e = wd->batch[i];
        int verdict = rlk_renew_verdict(wd->results[i], now, e->last_ok_ns, e->lost_after_ns);

        if (rlk_wd_token_moved(e, wd->results[i])) {
            e->inflight = 0;
            e->next_due_ns = now;   /* superseded by this client's own re-entry: renew with it */
            continue;
        }
        e->inflight = 0;
        e->failing = wd->results[i] < 0;
        switch (verdict) {
        case RLK_RENEW_RENEWED:
            e->last_ok_ns = sent_ns;
            if (rlk_renewed_hook)
                rlk_renewed_hook(e->id.kind, e->id.name, e->id.owner, sent_ns, e->renew_ms);
            e->next_due_ns = e->nudged ? now : sent_ns + e->period_ns;
            e->nudged = 0;
            break;
        case RLK_RENEW_GONE:
        case RLK_RENEW_EXPIRED:
            rlk_wd_lose(wd, e, verdict == RLK_RENEW_GONE ? RLK_LOST_GONE : RLK_LOST_EXPIRED, tail);
            break;
        default:
            /* Retry a period later, but look again when the lease runs out
             * (rlk_wd_collect declares it then if no renewal got through). */
            e->next_due_ns = rlk_renew_retry_at(now, e->period_ns, e->last_ok_ns,
                                                e->lost_after_ns, RLK_NS_PER_MS);
            break;
        }
    }
    pthread_cond_broadcast(&wd->settled);
}

/* ---------------------------------------------------------------- reports */

/* Reports (outside wd->mu) the lost entries, oldest first: a kept entry to its own hook (its
 * holder frees it: rlk_wd_unkeep, maybe from that hook), a hold's through the one the runtime
 * state installed (rt.c), and frees it. */
static void rlk_wd_report(rlk_wd *wd, rlk_hold *lost)
{
    while (lost) {
        rlk_hold *e = lost;

        lost = e->next;
        if (e->lost_fn) {
            e->lost_fn(e->lost_ud, e->lost);
        } else {
            wd->report(wd->report_ud, e->id.kind, e->id.name, e->id.owner, e->lost);
            rlk_hold_free(wd, e);
        }
    }
}

/* ---------------------------------------------------------------- the thread */

static void *rlk_wd_main(void *arg)
{
    rlk_wd *wd = arg;

    pthread_mutex_lock(&wd->mu);
    while (!wd->stop) {
        rlk_hold *lost = NULL, **tail = &lost;
        long long sent_ns = rlk_clock_now_ns(), next;
        int n = rlk_wd_collect(wd, sent_ns, &next, &tail);

        if (n == 0 && !lost) {
            /* With nothing due, look again a watchdog period from now: a hold registered
             * meanwhile is due a period after its acquire was sent, not sooner, so it need
             * not wake this thread (rlk_wd_acquired_as signals only one due before then). */
            if (next < 0 && wd->lease_ms > 0)
                next = sent_ns + (wd->lease_ms * RLK_NS_PER_MS / 3 > RLK_NS_PER_MS
                                  ? wd->lease_ms * RLK_NS_PER_MS / 3 : RLK_NS_PER_MS);
            wd->waiting = 1;
            wd->wait_until_ns = next;
            rlk_clock_cond_wait_until(&wd->wake, &wd->mu, next);
            wd->waiting = 0;
            continue;
        }
        if (n > 0) {
            pthread_mutex_unlock(&wd->mu);
            rlk_wd_renew(wd, n);
            pthread_mutex_lock(&wd->mu);
            rlk_wd_apply(wd, n, sent_ns, &tail);
        }
        if (lost) {
            pthread_mutex_unlock(&wd->mu);
            rlk_wd_report(wd, lost);
            pthread_mutex_lock(&wd->mu);
            wd->reporting = 0;
            pthread_cond_broadcast(&wd->settled);
        }
    }
    pthread_mutex_unlock(&wd->mu);
    return NULL;
}

int rlk_wd_start(rlk_wd *wd)
{
    if (wd->started)
        return RLK_OK;
    if (rlk_thread_start(&wd->thread, rlk_wd_main, wd) != 0)
        return rlk_set_error(wd->c, RLK_ERR_NOMEM, "lock runtime: cannot start the watchdog thread");
    wd->started = 1;
    return RLK_OK;
}

/* ---------------------------------------------------------------- life cycle */

rlk_wd *rlk_wd_new(rlk_client *c, rlk_rt_counters *counters, rlk_sub *sub,
                   rlk_wd_report_fn report, void *ud)
{
    rlk_wd *wd = calloc(1, sizeof *wd);

    if (!wd)
        return NULL;
    wd->c = c;
    wd->counters = counters;
    wd->sub = sub;
    wd->report = report;
    wd->report_ud = ud;
    wd->lease_ms = c->watchdog_lease_ms > 0 ? c->watchdog_lease_ms : RLK_DEFAULT_WATCHDOG_LEASE_MS;
    if (wd->lease_ms > RLK_NUM_MAX)
        wd->lease_ms = RLK_NUM_MAX;
    wd->table = rlk_holds_new();
    wd->lost = rlk_holds_new();
    if (!wd->table || !wd->lost || rlk_clock_cond_init(&wd->wake) != 0) {
        rlk_holds_free(wd->table);
        rlk_holds_free(wd->lost);
        free(wd);
        return NULL;
    }
    pthread_cond_init(&wd->settled, NULL);
    pthread_mutex_init(&wd->mu, NULL);
    return wd;
}

void rlk_wd_free(rlk_wd *wd)
{
    if (!wd)
        return;
    pthread_mutex_lock(&wd->mu);
    wd->stop = 1;
    pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->mu);
    if (wd->started)
        pthread_join(wd->thread, NULL);
    rlk_wd_disconnect(wd);
    while (wd->holds) {     /* and the kept entries of keepers still running */
        rlk_hold *e = wd->holds;

        wd->holds = e->next;
        rlk_hold_free(wd, e);
    }
    rlk_holds_free(wd->table);
    rlk_holds_free(wd->lost);
    pthread_cond_destroy(&wd->wake);
    pthread_cond_destroy(&wd->settled);
    pthread_mutex_destroy(&wd->mu);
    free(wd);
}

/* ---------------------------------------------------------------- kept entries */

rlk_wd_kept *rlk_wd_keep(rlk_wd *wd, const rlk_hold_spec *h, const void *arg, long long lease_ms,
                         long long sent_ns, rlk_wd_lost_fn lost, void *ud)
{
    rlk_hold *e = NULL;

    pthread_mutex_lock(&wd->mu);
    if (rlk_wd_start(wd) == RLK_OK && !(e = rlk_hold_new(wd, h, lease_ms)))
        rlk_set_error(wd->c, RLK_ERR_NOMEM, "keep %s: out of memory", h->name);
    if (e) {
        e->arg = arg;
        e->lost_fn = lost;
        e->lost_ud = ud;
        e->last_ok_ns = sent_ns;
        e->next_due_ns = sent_ns + e->period_ns;
        pthread_cond_signal(&wd->wake);
    }
    pthread_mutex_unlock(&wd->mu);
    return e;
}

void rlk_wd_unkeep(rlk_wd *wd, rlk_wd_kept *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&wd->mu);
    /* From the watchdog thread (a lost report stopping its keeper; e exists, so the thread
     * does) nothing is in flight and its own report is the one running. */
    while (!pthread_equal(pthread_self(), wd->thread) && (e->inflight || wd->reporting))
        pthread_cond_wait(&wd->settled, &wd->mu);
    if (!e->lost)
        rlk_wd_unlink(wd, e);
    pthread_mutex_unlock(&wd->mu);
    rlk_hold_free(wd, e);
}
