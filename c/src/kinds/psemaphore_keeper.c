/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psemaphore_keeper.c - keeps permits of a permit-expirable semaphore
 * alive (rlk_psemaphore_keep): one thread and one connection per keeper
 * renew each permit with psemaphore/update_lease every lease/3, for code
 * that holds permits for an unknown time (the `rlk semaphore` command).
 * Redisson has no such thing for this semaphore (its permits expire or
 * live forever); it is the reentrant lock's watchdog rule applied to
 * permits:
 *   - reply 1: renewed; the lease now counts from this round's send time;
 *   - reply 0: the permit is gone (expired and reclaimed, or released by
 *     someone else): never renewed again, reported RLK_LOST_GONE;
 *   - an error: retried a period later; once lease ms have passed since
 *     the send time of the last successful renewal, the permit may have
 *     been reclaimed: reported RLK_LOST_EXPIRED, not renewed again.
 * The keeper never releases; stop it first (which joins its thread, so no
 * renewal can follow), then release the permits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/topo.h"
#include "kinds/psemaphore.h"
#include "runtime/fam.h"
#include "runtime/thread.h"


typedef struct rlk_kept {
    char *hex;                  /* the id as the caller gave it */
    unsigned char *raw;
    size_t raw_len;
    long long last_ok_ns;       /* send time of the last successful renewal */
    int lost;                   /* 0: kept; else RLK_LOST_* */
} rlk_kept;

struct rlk_psemaphore_keeper {
    rlk_psemaphore *s;          /* borrowed */
    const rlk_script_info *script;
    int n;
    rlk_kept *ids;
    long long lease_ms;
    long long period_ns;
    rlk_lost_fn fn;
    void *ud;
    pthread_t thread;
    pthread_mutex_t mu;         /* guards stop, first_lost */
    pthread_cond_t cv;
    int stop;
    int first_lost;
    redisContext *ctx;          /* the thread's own connection (NULL: reconnect) */
    long long wait_ms;          /* this renewal's reply is waited for this long */
};

/* ---------------------------------------------------------------- the connection */

static void rlk_keeper_disconnect(rlk_psemaphore_keeper *k)
{
    if (k->ctx)
        redisFree(k->ctx);
    k->ctx = NULL;
}

/* A renewal slower than a period is retried, not waited for: the timeout
 * is the period (100 ms at least), never above the command timeout; the
 * connect (a TLS handshake, an AUTH) also ends before the first kept permit
 * would be declared lost (left_ns from now, 10 ms at least), so a hung
 * server cannot delay the declaration. */
static int rlk_keeper_connect(rlk_psemaphore_keeper *k, long long left_ns)
{
    rlk_client *c = k->s->b.c;
    long long ms = k->period_ns / RLK_NS_PER_MS, conn_ms;
    struct timeval tv;
    int rc;

    if ((k->ctx && rlk_conn_usable(c, k->ctx)) || rlk_topo_routed(c))   /* routed calls */
        return RLK_OK;
    rlk_keeper_disconnect(k);
    ms = ms < 100 ? 100 : ms > c->command_timeout_ms ? c->command_timeout_ms : ms;
    conn_ms = left_ns / RLK_NS_PER_MS < ms ? left_ns / RLK_NS_PER_MS : ms;
    rlk_thread_time_limit(conn_ms < 10 ? 10 : conn_ms);   /* a hung server's AUTH too */
    rc = rlk_conn_open(c, &k->ctx);
    rlk_thread_time_limit(-1);
    if (rc != RLK_OK)
        return rc;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    if (redisSetTimeout(k->ctx, tv) != REDIS_OK) {
        rc = rlk_set_ctx_error(c, k->ctx, "keeper connect");
        rlk_keeper_disconnect(k);
    }
    return rc;
}

/* ... and never past the moment the permit would be declared lost
 * (left_ns from now; 10 ms at least): a hung server cannot delay that. */
static void rlk_keeper_bound_wait(rlk_psemaphore_keeper *k, long long left_ns)
{
    long long ms = k->period_ns / RLK_NS_PER_MS;
    struct timeval tv;

    ms = ms < 100 ? 100 : ms > k->s->b.c->command_timeout_ms ? k->s->b.c->command_timeout_ms : ms;
    if (left_ns / RLK_NS_PER_MS < ms)
        ms = left_ns / RLK_NS_PER_MS;
    if (ms < 10)
        ms = 10;
    k->wait_ms = ms;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    if (k->ctx && redisSetTimeout(k->ctx, tv) != REDIS_OK)
        rlk_keeper_disconnect(k);
}

/* ---------------------------------------------------------------- one round */

/* update_lease of one permit: 1 renewed, 0 gone, -1 error. */
static int rlk_keeper_renew(rlk_psemaphore_keeper *k, const rlk_kept *p)
{
    rlk_psemaphore *s = k->s;
    const char *keys[RLK_PSEM_NKEYS];
    char lease[24];
    const char *args[3] = {lease, (const char *)p->raw, rlk_publish_arg(s->b.c)};
    size_t lens[3];
    redisReply *r = NULL;
    int rc, out = -1;

    snprintf(lease, sizeof lease, "%lld", k->lease_ms);
    lens[0] = strlen(lease);
    lens[1] = p->raw_len;
    lens[2] = strlen(args[2]);
    if (rlk_topo_routed(s->b.c))
        rc = rlk_topo_evalv(s->b.c, k->script, rlk_psem_keys(s, keys), keys, NULL, 3, args, lens,
                            &r, k->wait_ms);
    else
        rc = rlk_conn_evalv(s->b.c, k->ctx, k->script, rlk_psem_keys(s, keys), keys, NULL, 3, args,
                            lens, &r, NULL);
    if (rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_PROTOCOL)
        rlk_keeper_disconnect(k);
    if (rc == RLK_OK && r->type == REDIS_REPLY_INTEGER)
        out = r->integer == 1;
    RLK_RT_COUNT(s->b.rt, renew_calls);     /* the metrics: renewals of permits too */
    if (out < 0)
        RLK_RT_COUNT(s->b.rt, renew_errors);
    if (rc == RLK_OK && rlk_conn_acks_short(NULL))     /* renewed; too few replicas saw it */
        RLK_RT_COUNT(s->b.rt, renew_unacked);
    if (r)
        freeReplyObject(r);
    return out;
}

static void rlk_keeper_lose(rlk_psemaphore_keeper *k, rlk_kept *p, int reason)
{
    p->lost = reason;
    pthread_mutex_lock(&k->mu);
    if (!k->first_lost)
        k->first_lost = reason;
    pthread_mutex_unlock(&k->mu);
    if (k->fn)
        k->fn(k->s->b.name, p->hex, reason, k->ud);
}

/* Renews every kept permit; returns when the next round is due. */
static long long rlk_keeper_round(rlk_psemaphore_keeper *k)
{
    long long sent = rlk_clock_now_ns(), next = sent + k->period_ns;
    long long margin = k->s->b.c->lost_margin_ms;
    long long lease_ns = (k->lease_ms - (margin < k->lease_ms ? margin : k->lease_ms)) *
                         RLK_NS_PER_MS;     /* declared lost this long after the last success */
    long long first_lost = k->period_ns;    /* until the first permit is declared lost (ns) */
    int connected;

    for (int i = 0; i < k->n; i++)
        if (!k->ids[i].lost && k->ids[i].last_ok_ns + lease_ns - sent < first_lost)
            first_lost = k->ids[i].last_ok_ns + lease_ns - sent;    /* may be <= 0: past */
    connected = rlk_keeper_connect(k, first_lost) == RLK_OK;

    for (int i = 0; i < k->n; i++) {
        rlk_kept *p = &k->ids[i];
        int got;

        if (p->lost)
            continue;
        rlk_keeper_bound_wait(k, p->last_ok_ns + lease_ns - rlk_clock_now_ns());
        got = connected && (k->ctx || rlk_topo_routed(k->s->b.c)) ? rlk_keeper_renew(k, p) : -1;
        if (got == 1) {
            p->last_ok_ns = sent;
        } else if (got == 0) {
            rlk_keeper_lose(k, p, RLK_LOST_GONE);
        } else if (rlk_clock_now_ns() >= p->last_ok_ns + lease_ns) {
            rlk_keeper_lose(k, p, RLK_LOST_EXPIRED);
        } else {
            next = rlk_clock_until_min(next, p->last_ok_ns + lease_ns);   /* declare it in time */
        }
    }
    return next;
}

static void *rlk_keeper_main(void *arg)
{
    rlk_psemaphore_keeper *k = arg;
    long long next = rlk_clock_now_ns() + k->period_ns;

    pthread_mutex_lock(&k->mu);
    while (!k->stop) {
        if (!rlk_clock_cond_wait_until(&k->cv, &k->mu, next) || k->stop)
            continue;
        pthread_mutex_unlock(&k->mu);
        next = rlk_keeper_round(k);
        pthread_mutex_lock(&k->mu);
    }
    pthread_mutex_unlock(&k->mu);
    rlk_keeper_disconnect(k);
    return NULL;
}

/* ---------------------------------------------------------------- life cycle */

static void rlk_keeper_free(rlk_psemaphore_keeper *k)
{
    for (int i = 0; k->ids && i < k->n; i++) {
        free(k->ids[i].hex);
        free(k->ids[i].raw);
    }
    free(k->ids);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    free(k);
}

/* Copies and decodes the ids, each renewed once (now: it must be held). */
static int rlk_keeper_take(rlk_psemaphore_keeper *k, const char *const *ids)
{
    rlk_psemaphore *s = k->s;
    int rc = RLK_OK;

    for (int i = 0; i < k->n && rc == RLK_OK; i++) {
        rlk_kept *p = &k->ids[i];
        long long sent = rlk_clock_now_ns();

        p->hex = strdup(ids[i]);
        p->raw = malloc(RLK_PSEM_RAW_ID_MAX);
        if (!p->hex || !p->raw)
            return rlk_set_error(s->b.c, RLK_ERR_NOMEM, "keep %s: out of memory", s->b.name);
        rc = rlk_psem_decode_id(s, "keep", ids[i], p->raw, &p->raw_len);
        if (rc == RLK_OK)
            rc = rlk_psemaphore_update_lease(s, ids[i], k->lease_ms);
        p->last_ok_ns = sent;
    }
    return rc;
}

static rlk_psemaphore_keeper *rlk_keeper_alloc(rlk_psemaphore *s, int n, long long lease_ms)
{
    rlk_psemaphore_keeper *k = calloc(1, sizeof *k);

    if (!k)
        return NULL;
    k->ids = calloc((size_t)n, sizeof *k->ids);
    pthread_mutex_init(&k->mu, NULL);
    if (!k->ids || rlk_clock_cond_init(&k->cv) != 0) {
        free(k->ids);
        pthread_mutex_destroy(&k->mu);
        free(k);
        return NULL;
    }
    k->s = s;
    k->n = n;
    k->lease_ms = lease_ms;
    k->period_ns = lease_ms * RLK_NS_PER_MS / 3;
    return k;
}

rlk_psemaphore_keeper *rlk_psemaphore_keep(rlk_psemaphore *s, int n, const char *const *ids,
                                           long long lease_ms, rlk_lost_fn fn, void *userdata)
{
    rlk_psemaphore_keeper *k;

    if (!s)
        return NULL;
    if (!ids || rlk_fam_check_range(s->b.c, "keep", s->b.name, "permits", n, 1, RLK_PERMITS_MAX) ||
        rlk_fam_check_range(s->b.c, "keep", s->b.name, "lease_ms", lease_ms, 3, RLK_NUM_MAX)) {
        if (!ids)
            rlk_set_error(s->b.c, RLK_ERR_ARG, "keep %s: no permit ids", s->b.name);
        return NULL;
    }
    if (!(k = rlk_keeper_alloc(s, n, lease_ms))) {
        rlk_set_error(s->b.c, RLK_ERR_NOMEM, "keep %s: out of memory", s->b.name);
        return NULL;
    }
    k->fn = fn;
    k->ud = userdata;
    k->script = rlk_script_find(s->b.c, "psemaphore/update_lease");
    if (!k->script)
        rlk_set_error(s->b.c, RLK_ERR_NOSUCHSCRIPT, "keep %s: no script psemaphore/update_lease",
                      s->b.name);
    if (!k->script || rlk_keeper_take(k, ids) != RLK_OK) {
        rlk_keeper_free(k);
        return NULL;
    }
    if (rlk_thread_start(&k->thread, rlk_keeper_main, k) != 0) {
        rlk_set_error(s->b.c, RLK_ERR_NOMEM, "keep %s: cannot start the keeper thread", s->b.name);
        rlk_keeper_free(k);
        return NULL;
    }
    return k;
}

int rlk_psemaphore_keeper_lost(rlk_psemaphore_keeper *k)
{
    int lost;

    if (!k)
        return 0;
    pthread_mutex_lock(&k->mu);
    lost = k->first_lost;
    pthread_mutex_unlock(&k->mu);
    return lost;
}

void rlk_psemaphore_keeper_stop(rlk_psemaphore_keeper *k)
{
    if (!k)
        return;
    pthread_mutex_lock(&k->mu);
    k->stop = 1;
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    pthread_join(k->thread, NULL);
    rlk_keeper_free(k);
}
