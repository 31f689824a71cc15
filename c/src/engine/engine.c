/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine.c - the engine of the non-blocking API (engine.h): the handlers'
 * entry and exit, the connections (the dial thread, the set-up, the fence
 * of the previous connection after a drop), the sweep and the I/O, and the
 * small accessors the kinds' requests use. docs/async-internals.md
 * describes it and its other files.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/cluster.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/native.h"
#include "client/random.h"
#include "client/ref.h"
#include "client/scripts.h"
#include "client/slot.h"
#include "client/topo.h"
#include "client/transport.h"
#include "engine/engine.h"
#include "engine/ae_state.h"
#include "engine/ae_call.h"
#include "engine/ae_pubsub.h"
#include "engine/ae_route.h"
#include "engine/ae_timer.h"

/* ---------------------------------------------------------------- the client's life */

rlk_async *rlk_ae_new(rlk_client *c, rlk_rt_counters *counters, int borrowed)
{
    rlk_async *ac = calloc(1, sizeof *ac);
    int routed;

    if (!ac)
        return NULL;
    ac->armed = -2;
    ac->c = c;
    ac->counters = counters;
    ac->linger_ms = borrowed ? 0 : AE_LINGER_MS;    /* the blocking subscriber lingers itself */
    ac->cref = calloc(1, sizeof *ac->cref);
    routed = !c->fatal && ae_routed(ac);
    if (!ac->cref || (!routed && ae_route_setup(ac, 0) != RLK_OK)) {
        free(ac->cref);
        free(ac->nodes[0]);
        free(ac);
        return NULL;
    }
    pthread_mutex_init(&ac->cref->mu, NULL);
    pthread_cond_init(&ac->cref->cv, NULL);
    ac->cref->refs = 1;
    ac->cref->borrowed = borrowed;
    ac->cref->c = c;
    /* A cluster's seeds are the first nodes; the map (CLUSTER SLOTS) names the masters. */
    if (c->fatal) {
        ac->fatal = c->fatal;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "%s", c->fatal_msg);
    } else if (routed && ae_route_setup(ac, 1) != RLK_OK) {
        ac->fatal = RLK_ERR_NOMEM;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "out of memory");
    } else if (routed && !ac->nnodes) {
        ac->fatal = RLK_ERR_URL;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "redis+cluster://: no seed node");
    }
    if (c->pubsub_opt != RLK_PUBSUB_AUTO)
        ac->pubsub = c->pubsub_opt;
    else if (!ae_routed(ac))
        ac->pubsub = RLK_PUBSUB_GLOBAL;     /* one server (or sentinel): as the blocking client */
    if (rlk_random_uuid(ac->uuid) != 0 && !ac->fatal) {
        ac->fatal = RLK_ERR_IO;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "no random source for the client uuid");
    }
    return ac;
}

int rlk_async_attach(rlk_async *ac, const rlk_async_hooks *hooks)
{
    if (!ac || !hooks || !hooks->attach || !hooks->watch || !hooks->detach || !hooks->set_timer ||
        !hooks->cleanup || ac->attached || ac->closing)
        return RLK_ERR_ARG;
    ac->hooks = *hooks;
    ac->attached = 1;
    ae_enter(ac);
    ae_conns_attach(ac);
    ae_chans_up(ac);
    ae_leave(ac);
    return RLK_OK;
}

int rlk_ae_close_begin(rlk_async *ac)
{
    rlk_ae_call *call;

    if (!ac || ac->closing)
        return -1;
    ac->depth++;
    ac->closing = 1;
    /* Calls first: their kinds complete their requests with the error. */
    for (int i = 0; i < ac->nnodes; i++)
        ae_route_calls_fail(ac, ac->nodes[i], RLK_ERR_CLOSED, "the async client is being freed", 1);
    while ((call = ae_callq_pop(&ac->parked)))
        ae_call_end(ac, call, RLK_ERR_CLOSED, NULL, "the async client is being freed", 0);
    /* Every request ends now, callbacks included (a request made by one of
     * them ends with RLK_ERR_CLOSED at once, and is delivered here too). */
    for (;;) {
        for (rlk_async_req *r = ac->reqs; r; r = r->next)
            rlk_ae_complete(r, RLK_ERR_CLOSED, 0, NULL, "the async client was freed");
        if (!ac->qhead)
            break;
        ae_deliver(ac);
    }
    return 0;
}

void rlk_ae_close_end(rlk_async *ac)
{
    for (int i = 0; i < RLK_AE_SLOTS; i++)
        if (ac->kind_data[i] && ac->kind_destroy[i])
            ac->kind_destroy[i](ac->kind_data[i]);
    if (ac->attached) {
        ae_conns_detach(ac);
        ac->hooks.set_timer(ac->hooks.data, -1);
        ac->hooks.cleanup(ac->hooks.data);
    }
    ac->depth--;
    if (ac->depth)
        ac->destroy_pending = 1;
    else
        ae_destroy(ac);
}

/* ---------------------------------------------------------------- small things */

rlk_client *rlk_ae_client(rlk_async *ac)
{
    return ac->c;
}

void rlk_ae_sub_name(rlk_async *ac, const char *name)
{
    ac->sub_name = name;
}

/* snprintf(buf, len, "%s:%llu", uuid, task)'s bytes without snprintf (about
 * 900 client instructions a call, two calls an async lock pair). */
void rlk_ae_owner(rlk_async *ac, unsigned long long task, char *buf, size_t len)
{
    char tmp[sizeof ac->uuid + 21], digits[20];
    size_t n = strlen(ac->uuid), d = 0;

    if (!len)
        return;
    memcpy(tmp, ac->uuid, n);
    tmp[n++] = ':';
    do
        digits[d++] = (char)('0' + task % 10);
    while ((task /= 10) > 0);
    while (d > 0)
        tmp[n++] = digits[--d];
    if (n > len - 1)
        n = len - 1;
    memcpy(buf, tmp, n);
    buf[n] = '\0';
}

int rlk_ae_counts_exact(rlk_async *ac)
{
    return rlk_topo_counts_exact(ac->c, ac->pubsub);
}

int rlk_ae_closing(rlk_async *ac)
{
    return ac->closing;
}

void *rlk_ae_kind_data(rlk_async *ac, int slot, void *(*make)(void), void (*destroy)(void *))
{
    if (slot < 0 || slot >= RLK_AE_SLOTS)
        return NULL;
    if (!ac->kind_data[slot] && make) {
        ac->kind_data[slot] = make();
        ac->kind_destroy[slot] = destroy;
    }
    return ac->kind_data[slot];
}

int rlk_ae_fatal(rlk_async *ac, const char **msg)
{
    if (msg)
        *msg = ac->fatal_msg;
    return ac->fatal;
}

int rlk_ae_unreachable(rlk_async *ac)
{
    return ac->conn_err[0] != '\0';
}

int rlk_ae_up(rlk_async *ac)
{
    return !ae_routed(ac) && AE_N0(ac)->cmd.state == AE_UP;
}

unsigned long long rlk_ae_lost_calls(const rlk_async *ac)
{
    return ac->lost_calls;
}

rlk_rt_counters *rlk_ae_counters(rlk_async *ac)
{
    return ac->counters;
}

void rlk_ae_req_metric(rlk_async_req *r, int kind, const char *name)
{
    if (r->done || r->mname || !(r->mname = strdup(name ? name : "")))
        return;
    r->mkind = kind;
    rlk_metrics_begin(rlk_ae_counters(r->ac), &r->mc);
}

int ae_routed(const rlk_async *ac)
{
    return rlk_topo_routed(ac->c);
}

/* Connection i of the client's 2 * nnodes, in node order: node i / 2's
 * command connection (i even) or its pub/sub one. */
static ae_conn *ae_conn_nth(rlk_async *ac, int i)
{
    return i % 2 ? &ac->nodes[i / 2]->sub : &ac->nodes[i / 2]->cmd;
}

/* ---------------------------------------------------------------- entry and exit of handlers */

void ae_enter(rlk_async *ac)
{
    if (ac->depth++ == 0)
        ac->turn++;
}

/* The loop watches k for events (RLK_ASYNC_*) from now on. */
static void ae_conn_watch(rlk_async *ac, ae_conn *k, int events)
{
    k->events = events;
    ac->hooks.watch(ac->hooks.data, k->handle, events);
}

/* Flushes what the connections have to write and watches for the rest. */
void ae_flush(rlk_async *ac, ae_conn *k)
{
    int want = RLK_ASYNC_READ, done = 0;

    if (!k->ctx || !k->handle || k->state == AE_CONNECTING)
        return;
    if (k->ctx->obuf && sdslen(k->ctx->obuf) > 0) {
        if (rlk_transport_write(k->ctx, &done) == REDIS_ERR) {
            ae_conn_drop(ac, k, k->ctx->errstr);
            return;
        }
        if (!done)
            want |= RLK_ASYNC_WRITE;
    }
    /* A TLS session's read that needs the socket writable (its write that
     * needs it readable is retried here after the next read). */
    if (rlk_transport_want(k->ctx) & POLLOUT)
        want |= RLK_ASYNC_WRITE;
    if (want != k->events)
        ae_conn_watch(ac, k, want);
}

/* A request made inside a handler (a callback that asks again, a timer) is
 * written at once instead of at the handler's exit: else every request of
 * the turn waits for its end, and the server for them; the connection
 * then carries one batch at a time, the server idle while the loop runs
 * the callbacks and the loop idle while the server runs the batch. One
 * write a request, as the blocking API's; nothing is dropped or ended here
 * (a write error stays on the context: ae_flush drops at the exit). */
void ae_write_now(ae_conn *k)
{
    int done = 0;

    if (k->state != AE_UP || !k->ctx || !k->handle || !k->ctx->obuf ||
        sdslen(k->ctx->obuf) == 0)
        return;
    (void)rlk_transport_write(k->ctx, &done);
}

void ae_leave(rlk_async *ac)
{
    if (ac->depth == 1 && !ac->closing) {
        ae_deliver(ac);
        for (int i = 0; i < 2 * ac->nnodes && !ac->closing; i++)
            ae_flush(ac, ae_conn_nth(ac, i));
        if (!ac->closing)
            ae_deliver(ac);     /* a drop while flushing fails calls: their kinds complete */
        ae_timer_arm(ac);       /* (not once closing) */
    }
    if (--ac->depth == 0 && ac->destroy_pending)
        ae_destroy(ac);     /* rlk_async_free ran in a handler: the client goes now */
}

/* ---------------------------------------------------------------- connections */

static void ae_conn_retry_fire(rlk_async *ac, void *arg)
{
    ae_conn *k = arg;

    k->retry = NULL;
    if (k->state != AE_DOWN)
        return;
    if (ae_routed(ac) && k->is_sub)
        ae_chans_up(ac);        /* a cluster's: opened again if a channel goes there */
    else if (!ae_routed(ac) || k->node->unsent.head)
        ae_conn_start(ac, k);   /* a cluster's command connection: when a call goes there */
}

/* Opens the connection again after a backoff (none the first time). */
static void ae_conn_schedule(rlk_async *ac, ae_conn *k)
{
    long long ms = k->fails > 1 ? ae_backoff(AE_BACKOFF_MIN_MS, AE_BACKOFF_MAX_MS, k->fails - 2)
                                : 0;

    if (!ac->closing && !k->retry)
        k->retry = rlk_ae_timer_add(ac, ms, ae_conn_retry_fire, k);
}

static void ae_dial_abandon(rlk_async *ac, ae_conn *k);

/* Lets k go from the loop: its dial abandoned, its handle detached. */
static void ae_conn_let_go(rlk_async *ac, ae_conn *k)
{
    ae_dial_abandon(ac, k);
    if (k->handle)
        ac->hooks.detach(ac->hooks.data, k->handle);
    k->handle = NULL;
}

static const char *ae_node_addr(rlk_async *ac, const ae_node *n)
{
    return n->host ? n->addr : ac->c->addr;
}

/* A command connection dropped because its set-up was refused on the loop: ae_cmd_reply drops
 * it with the client's error, as rlk_conn_check_setup_reply recorded it (RLK_ERR_AUTH: AUTH or
 * SELECT refused, with the reason and where the password comes from), not for a time-out or a
 * closed connection. */
static int ae_setup_refused(rlk_async *ac, const ae_conn *k, const char *why)
{
    return !k->is_sub && k->state == AE_SETUP && why && why == rlk_errstr(ac->c) &&
           rlk_err(ac->c) == RLK_ERR_AUTH;
}

void ae_conn_drop(rlk_async *ac, ae_conn *k, const char *why)
{
    char msg[AE_ERRSTR_MAX], refusal[AE_ERRSTR_MAX];
    int refused = ae_setup_refused(ac, k, why);
    /* The one server's command connection could not be made (refused, unreachable; its set-up
     * refused, on a dial thread or on the loop): its waiting calls end now with the cause, as
     * the blocking client's would; a request attempts again only within its own wait
     * (rlk_ae_unreachable). Not a set-up that timed out on the loop (the server answered the
     * connect: a pause or a stall, ridden out as a drop) nor where the topology finds the
     * address (the sentinels may name another master soon) or routes calls (a cluster's
     * calls wait for the map; a refused set-up ends them: ae_route_setup_refused). */
    int unmade = !k->is_sub && ((k->state != AE_UP && k->state != AE_SETUP) || refused) &&
                 !ae_routed(ac) && !rlk_topo_resolves(ac->c) && !ac->closing;

    k->peer_turn = 0;           /* the next connection is checked afresh */
    if (refused)
        snprintf(refusal, sizeof refusal, "%s", why);   /* (the client's, overwritten next) */
    snprintf(msg, sizeof msg, unmade ? "connect %s: %s" : "connection to %s lost: %s",
             ae_node_addr(ac, k->node), why ? why : "");
    if (unmade)
        snprintf(ac->conn_err, sizeof ac->conn_err, "%s", msg);
    ae_conn_let_go(ac, k);
    k->events = 0;
    rlk_transport_free(k->ctx);
    k->ctx = NULL;
    if (k->is_sub && k->state == AE_UP)
        AE_SUB_COUNT(ac, sub_drops);
    /* Again at once after a drop; after a refused set-up (a server at maxclients accepts, then
     * refuses) with the backoff of a failed connect. */
    if (k->state == AE_UP)
        k->fails = 1;
    else
        k->fails++;
    if (!k->is_sub && k->id)
        k->fence_id = k->id;    /* fence the old one before the next call */
    k->id = 0;
    k->state = AE_DOWN;
    k->setup_left = 0;
    ae_conn_schedule(ac, k);
    if (k->is_sub) {
        if (ac->nodes[ac->gsub] == k->node)
            ac->gsub = (ac->gsub + 1) % ac->nnodes;   /* cluster, global pub/sub: another node */
        ae_chans_down(ac, k);
        ae_route_refresh(ac);   /* (a cluster's) */
    } else if (refused && ae_routed(ac)) {
        ae_route_setup_refused(ac, k->node, RLK_ERR_AUTH, refusal);
    } else {
        ae_route_calls_fail(ac, k->node, RLK_ERR_IO, msg, unmade);
    }
}

/* The connect itself failed (refused, unreachable, timed out, the TLS
 * handshake): counted for a command connection (rlk_metrics.connect_failures,
 * as the blocking pool counts its own; not the blocking subscriber's), then
 * dropped. */
static void ae_conn_unmade(rlk_async *ac, ae_conn *k, const char *why)
{
    if (!k->is_sub && !ac->sub_name)
        RLK_CLIENT_COUNT(ac->c, connect_failures);
    ae_conn_drop(ac, k, why);
}

/* k's set-up is done: its channels or its calls go out. */
void ae_conn_up(rlk_async *ac, ae_conn *k)
{
    k->state = AE_UP;
    k->fails = 0;
    if (k->is_sub) {
        AE_SUB_COUNT(ac, sub_connects);
        k->rx = rlk_ae_now_ms();
        k->ping = 0;
        ae_chans_up(ac);
    } else {
        ae_cmd_up(ac, k->node);
    }
}

/* The connection is made: its set-up goes out first. A command connection
 * fences the one that broke (its lost calls have run or never will once it
 * is killed), then AUTH/SELECT, then CLIENT ID; a pub/sub one sends
 * AUTH/SELECT, then CLIENT SETNAME when the client names them, and counts
 * their replies (none: it is up). */
static void ae_conn_connected(rlk_async *ac, ae_conn *k)
{
    const char *argv[3];
    size_t lens[3];
    char db[16];
    int argc, i;

    k->state = AE_SETUP;
    k->since = rlk_ae_now_ms();
    if (!k->is_sub && k->fence_id) {
        char id[24];
        const char *kv[4] = {"CLIENT", "KILL", "ID", id};

        snprintf(id, sizeof id, "%lld", k->fence_id);
        if (ae_internal(ac, k->node, AE_CALL_KILL, 0, 4, kv, NULL) != 0)
            goto nomem;
    }
    for (i = 0; (argc = rlk_conn_setup_cmd(ac->c, i, argv, lens, db)) > 0; i++)
        if (k->is_sub ? redisAppendCommandArgv(k->ctx, argc, argv, lens) != REDIS_OK
                      : ae_internal(ac, k->node, AE_CALL_SETUP, i, argc, argv, lens) != 0)
            goto nomem;
    if (k->is_sub && ac->sub_name) {
        const char *nv[3] = {"CLIENT", "SETNAME", ac->sub_name};

        if (redisAppendCommandArgv(k->ctx, 3, nv, NULL) != REDIS_OK)
            goto nomem;
        i++;    /* its reply is the set-up's last */
    }
    if (!k->is_sub &&
        ae_internal(ac, k->node, AE_CALL_ID, 0, 2, (const char *[2]){"CLIENT", "ID"}, NULL) != 0)
        goto nomem;
    if (k->is_sub && !(k->setup_n = k->setup_left = i))
        ae_conn_up(ac, k);
    ae_flush(ac, k);
    return;
nomem:
    ae_conn_drop(ac, k, "out of memory");
}

static void ae_cref_put(ae_cref *r)
{
    int last;

    pthread_mutex_lock(&r->mu);
    last = --r->refs == 0;
    pthread_cond_broadcast(&r->cv);     /* a borrowing engine's free waits for its dials */
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    if (!r->borrowed)
        rlk_client_free(r->c);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    free(r);
}

/* The last of the loop and the thread frees the dial, and puts its share of the client. */
static void ae_dial_put(ae_dial *d)
{
    if (!rlk_ref_put(&d->mu, &d->refs))
        return;
    close(d->sv[0]);
    close(d->sv[1]);
    pthread_mutex_destroy(&d->mu);
    if (d->cref)
        ae_cref_put(d->cref);
    free(d->host);
    free(d);
}

static void *ae_dial_thread(void *arg)
{
    ae_dial *d = arg;
    rlk_client *c = d->cref->c;
    redisContext *ctx = NULL;
    int rc = RLK_OK, abandoned;

    if (d->host) {
        /* A cluster's node, by the engine's map. */
        rc = rlk_transport_dial(c, d->host, d->port, c->connect_tv, &ctx, d->why, sizeof d->why);
        d->unmade = ctx ? ctx->err != 0 : rc != RLK_ERR_NOMEM;
    } else {
        /* The one server, through the topology (client/topo.h) as RedLock dials: the master
         * the sentinels name, asked again after a READONLY. The count of the address's moves
         * before it tells a connection to an old master (ae_sn_watch_fire). */
        if (d->refresh && c->topo->refused)
            (void)c->topo->refused(c, RLK_ERR_READONLY);
        d->switches = rlk_topo_moves(c);
        if ((rc = rlk_conn_open(c, &ctx)) != RLK_OK)
            snprintf(d->why, sizeof d->why, "%s", rlk_errstr(c));
        d->unmade = rlk_conn_dial_failed();
    }

    if (rc != RLK_OK && ctx && !d->why[0])
        snprintf(d->why, sizeof d->why, "%s", ctx->errstr);
    pthread_mutex_lock(&d->mu);
    abandoned = d->abandoned;
    d->rc = rc;
    d->done = 1;
    if (!abandoned)
        d->ctx = ctx;
    pthread_mutex_unlock(&d->mu);
    if (abandoned)
        rlk_transport_free(ctx);
    else
        (void)send(d->sv[1], "d", 1, MSG_NOSIGNAL);
    ae_dial_put(d);
    return NULL;
}

/* Stops waiting for k's dial (its thread closes what it opens). */
static void ae_dial_abandon(rlk_async *ac, ae_conn *k)
{
    if (!k->dial)
        return;
    if (k->dial_handle)
        ac->hooks.detach(ac->hooks.data, k->dial_handle);
    k->dial_handle = NULL;
    pthread_mutex_lock(&k->dial->mu);
    k->dial->abandoned = 1;
    rlk_transport_free(k->dial->ctx);    /* done, not yet taken (or NULL) */
    k->dial->ctx = NULL;
    pthread_mutex_unlock(&k->dial->mu);
    ae_dial_put(k->dial);
    k->dial = NULL;
}

/* Starts a blocking dial on its own thread. 0, or -1. */
static int ae_dial_start(rlk_async *ac, ae_conn *k)
{
    ae_dial *d = calloc(1, sizeof *d);
    pthread_attr_t at;
    pthread_t th;
    int fl;

    if (!d)
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d->sv) != 0) {
        free(d);
        return -1;
    }
    fl = fcntl(d->sv[0], F_GETFL);
    (void)fcntl(d->sv[0], F_SETFL, fl | O_NONBLOCK);
    pthread_mutex_init(&d->mu, NULL);
    d->refs = 2;
    if (k->node->host) {
        d->port = k->node->port;
        if (!(d->host = strdup(k->node->host))) {
            d->refs = 1;        /* no thread: this put frees it */
            ae_dial_put(d);
            return -1;
        }
    }
    d->refresh = ac->sn_refresh;
    ac->sn_refresh = 0;
    pthread_mutex_lock(&ac->cref->mu);
    ac->cref->refs++;
    pthread_mutex_unlock(&ac->cref->mu);
    d->cref = ac->cref;
    k->dial = d;
    k->dial_handle = ac->hooks.attach(ac->hooks.data, d->sv[0]);
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (!k->dial_handle || pthread_create(&th, &at, ae_dial_thread, d) != 0) {
        pthread_attr_destroy(&at);
        d->refs = 1;            /* no thread */
        ae_dial_abandon(ac, k);
        return -1;
    }
    pthread_attr_destroy(&at);
    ac->hooks.watch(ac->hooks.data, k->dial_handle, RLK_ASYNC_READ);
    return 0;
}

/* k's connection is ctx, handed to the loop and watched for events: 0, or
 * -1 when the loop refused it (k dropped). */
static int ae_conn_attach(rlk_async *ac, ae_conn *k, redisContext *ctx, int events)
{
    k->ctx = ctx;
    if (!(k->handle = ac->hooks.attach(ac->hooks.data, ctx->fd))) {
        ae_conn_drop(ac, k, "the loop refused the file descriptor");
        return -1;
    }
    ae_conn_watch(ac, k, events);
    return 0;
}

/* The dial thread is done: its connection, made non-blocking, goes on. */
static void ae_dial_done(rlk_async *ac, ae_conn *k)
{
    ae_dial *d = k->dial;
    redisContext *ctx;
    char why[256], b;
    int rc, done, fl, unmade;

    (void)!read(d->sv[0], &b, 1);
    pthread_mutex_lock(&d->mu);
    done = d->done;
    ctx = d->ctx;
    d->ctx = NULL;
    rc = d->rc;
    unmade = d->unmade;
    snprintf(why, sizeof why, "%s", d->why);
    pthread_mutex_unlock(&d->mu);
    if (!done)
        return;
    k->switches = d->switches;
    ac->sn_ready = 1;           /* the sentinels were opened by the thread before it wrote */
    ae_dial_abandon(ac, k);     /* nothing left to take */
    if (rc != RLK_OK || !ctx) {
        rlk_transport_free(ctx);
        (unmade ? ae_conn_unmade : ae_conn_drop)(ac, k, why[0] ? why : "dial failed");
        return;
    }
    fl = fcntl(ctx->fd, F_GETFL);
    if (fl < 0 || fcntl(ctx->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        rlk_transport_free(ctx);
        ae_conn_drop(ac, k, "cannot make the connection non-blocking");
        return;
    }
    ctx->flags &= ~REDIS_BLOCK;
    if (ae_conn_attach(ac, k, ctx, RLK_ASYNC_READ) == 0)
        ae_conn_connected(ac, k);
}

/* Dials the connection: non-blocking (plain TCP or a unix socket), or on a
 * thread when the dial blocks (a TLS handshake). */
void ae_conn_start(rlk_async *ac, ae_conn *k)
{
    redisContext *ctx = NULL;
    int started;

    if (ac->closing || k->state != AE_DOWN)
        return;
    k->since = rlk_ae_now_ms();
    if (!k->is_sub) {
        k->docs_asked = 0;
        rlk_native_forget(ac->c);   /* a new connection: ask again what the server has */
    }
    if (rlk_topo_dial_blocks(ac->c))
        started = ae_dial_start(ac, k) == 0;    /* its thread hands the connection back */
    else if (k->node->host)
        started = (ctx = redisConnectNonBlock(k->node->host, k->node->port)) != NULL;
    else
        started = rlk_transport_dial_nonblock(ac->c, &ctx) == RLK_OK && ctx;
    if (!started) {
        k->fails++;
        ae_conn_schedule(ac, k);
        return;
    }
    if (ctx) {                                  /* connecting: writable once it is made */
        k->ctx = ctx;
        if (ctx->err) {
            ae_conn_unmade(ac, k, ctx->errstr);
            return;
        }
        if (ae_conn_attach(ac, k, ctx, RLK_ASYNC_WRITE) != 0)
            return;
    }
    k->state = AE_CONNECTING;
    ae_sweep_ensure(ac);
}

/* The connect finished (writable): its outcome. */
static void ae_conn_check_connect(rlk_async *ac, ae_conn *k)
{
    int err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(k->ctx->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        ae_conn_unmade(ac, k, strerror(err));
        return;
    }
    k->ctx->flags |= REDIS_CONNECTED;
    ae_conn_watch(ac, k, RLK_ASYNC_READ);
    ae_conn_connected(ac, k);
}

/* ---------------------------------------------------------------- the sweep */

/* A pub/sub connection while channels are: a PING after AE_PING_MS of silence; dropped when
 * nothing came within the command timeout after it (a half-open connection tells nothing). */
static void ae_keepalive(rlk_async *ac, ae_conn *k, long long now)
{
    if (k->ping && now - k->ping > ac->c->command_timeout_ms) {
        ae_conn_drop(ac, k, "PING unanswered within the command timeout");
    } else if (!k->ping && now - k->rx >= AE_PING_MS) {
        k->ping = now;
        if (redisAppendCommand(k->ctx, "PING") != REDIS_OK)
            ae_conn_drop(ac, k, "out of memory");
    }
}

/* Connects that take too long, and calls without a reply within the
 * command timeout (the connection is dropped: the reply is lost), and
 * calls that could not be written for as long. */
static void ae_sweep_fire(rlk_async *ac, void *arg)
{
    long long now = rlk_ae_now_ms(), tmo = ac->c->command_timeout_ms;

    (void)arg;
    ac->sweep = NULL;
    for (int i = 0; i < ac->nnodes && !ac->closing; i++) {
        ae_node *n = ac->nodes[i];

        for (int j = 2 * i; j < 2 * i + 2 && !ac->closing; j++) {
            ae_conn *k = ae_conn_nth(ac, j);

            if ((k->state == AE_CONNECTING || k->state == AE_SETUP) &&
                now - k->since > ac->c->connect_timeout_ms)
                (k->state == AE_CONNECTING ? ae_conn_unmade : ae_conn_drop)(ac, k,
                                                                            "connect timed out");
            else if (k->is_sub && k->state == AE_UP && ac->nchans)
                ae_keepalive(ac, k, now);
        }
        if (ac->closing)
            return;
        /* A redirected call was made earlier than it was written: the reply's
         * time counts from the write on a cluster. */
        if (n->inflight.head &&
            now - (n->inflight.head->rt ? n->inflight.head->rt->written : n->inflight.head->issued) >
                tmo)
            ae_conn_drop(ac, &n->cmd, "no reply within the command timeout");
        while (!ac->closing && n->cmd.state != AE_UP && n->unsent.head &&
               now - n->unsent.head->issued > tmo) {
            rlk_ae_call *call = ae_callq_pop(&n->unsent);
            char msg[AE_ERRSTR_MAX];

            snprintf(msg, sizeof msg, "no connection to %s within the command timeout (%d ms)",
                     ae_node_addr(ac, n), ac->c->command_timeout_ms);
            ae_call_end(ac, call, RLK_ERR_IO, NULL, msg, 0);
        }
    }
    if (!ac->closing && ac->nlinger)
        ae_chans_linger_end(ac);
    /* Parked calls (a cluster with no map, or "not now" answers) end at the timeout. */
    if (!ac->closing && ac->parked.head) {
        ae_callq q = ac->parked;
        rlk_ae_call *call;
        char msg[AE_ERRSTR_MAX];

        memset(&ac->parked, 0, sizeof ac->parked);
        while ((call = ae_callq_pop(&q))) {
            if (ac->closing || call->rt->fail_rc || now - call->issued <= tmo) {
                ae_callq_push(&ac->parked, call);
                continue;
            }
            snprintf(msg, sizeof msg, "cluster: slot %d not served within the command timeout "
                     "(%d ms)%s%s", call->rt->slot, ac->c->command_timeout_ms,
                     call->rt->last_err ? ": " : " (no slot map)", call->rt->last_err ? call->rt->last_err : "");
            ae_call_end(ac, call, RLK_ERR_IO, NULL, msg, 0);
        }
    }
    ae_sweep_ensure(ac);
}

/* Sentinel: a switch the follower saw drops the connections to the old
 * master (calls in flight are lost and settled; waiters resubscribe). */
void rlk_ae_follow(rlk_async *ac)
{
    if (ac->sn_ready) {
        unsigned long long n = rlk_topo_moves(ac->c);
        ae_conn *ks[2] = {&AE_N0(ac)->cmd, &AE_N0(ac)->sub};

        for (int i = 0; i < 2 && !ac->closing; i++)
            if (ks[i]->state != AE_DOWN && !ks[i]->dial && ks[i]->switches != n)
                ae_conn_drop(ac, ks[i], "the sentinels named a new master");
    }
}

static void ae_sn_watch_fire(rlk_async *ac, void *arg)
{
    (void)arg;
    ac->sn_watch = NULL;
    rlk_ae_follow(ac);
    if (!ac->closing)
        ac->sn_watch = rlk_ae_timer_add(ac, 250, ae_sn_watch_fire, NULL);
}

void ae_sweep_ensure(rlk_async *ac)
{
    int need = ac->parked.head != NULL;

    if (ac->sweep || ac->closing || !ac->attached)
        return;
    for (int i = 0; i < ac->nnodes && !need; i++) {
        ae_node *n = ac->nodes[i];

        need = n->inflight.head || n->unsent.head || n->cmd.state == AE_CONNECTING ||
               n->cmd.state == AE_SETUP || n->sub.state == AE_CONNECTING ||
               n->sub.state == AE_SETUP || (n->sub.state == AE_UP && ac->nchans);
    }
    if (need)
        ac->sweep = rlk_ae_timer_add(ac, AE_SWEEP_MS, ae_sweep_fire, NULL);
}

/* ---------------------------------------------------------------- I/O */

/* Reads what k has, handles its replies (k may be dropped). */
static void ae_conn_read(rlk_async *ac, ae_conn *k)
{
    int rc = rlk_transport_read(k->ctx);
    int msgs = 0;       /* messages read (pub/sub) */
    char why[128];

    snprintf(why, sizeof why, "%s", k->ctx->err ? k->ctx->errstr : "");
    if (k->is_sub) {
        k->rx = rlk_ae_now_ms();
        k->ping = 0;
    }
    for (;;) {
        void *reply = NULL;

        if (!k->ctx || redisReaderGetReply(k->ctx->reader, &reply) != REDIS_OK) {
            if (k->ctx)
                ae_conn_drop(ac, k, "protocol error");
            return;
        }
        if (!reply)
            break;
        if (k->is_sub)
            msgs += ae_sub_reply(ac, k, reply);
        else
            ae_cmd_reply(ac, k->node, reply);
        freeReplyObject(reply);
        if (ac->closing || !k->ctx)
            return;
    }
    if (msgs)
        AE_SUB_COUNT(ac, sub_wakeups);      /* a read that brought messages */
    if (rc != REDIS_OK)
        ae_conn_drop(ac, k, why[0] ? why : "connection closed");
    else if (!k->is_sub && ac->cmd_readonly) {
        ac->cmd_readonly = 0;
        ae_conn_drop(ac, k, "READONLY: the master was demoted, asking the sentinels");
        if (!ac->closing && k->node->sub.state != AE_DOWN)
            ae_conn_drop(ac, &k->node->sub, "the master was demoted");
    }
}

void rlk_async_handle_io(rlk_async *ac, int fd, int events)
{
    ae_conn *k = NULL, *d = NULL;

    if (!ac || ac->closing)
        return;
    for (int i = 0; i < 2 * ac->nnodes && !k && !d; i++) {
        ae_conn *c = ae_conn_nth(ac, i);

        k = c->ctx && c->ctx->fd == fd ? c : NULL;
        d = c->dial && c->dial->sv[0] == fd ? c : NULL;
    }
    if (!k && !d)
        return;
    ae_enter(ac);
    if (d)
        ae_dial_done(ac, d);
    else if ((events & RLK_ASYNC_WRITE) && k->state == AE_CONNECTING)
        ae_conn_check_connect(ac, k);
    else if ((events & RLK_ASYNC_WRITE) && k->ctx)
        ae_flush(ac, k);
    if (k && !ac->closing && k->ctx && k->state != AE_CONNECTING &&
        ((events & RLK_ASYNC_READ) ||
         ((events & RLK_ASYNC_WRITE) && (rlk_transport_want(k->ctx) & POLLOUT))))
        ae_conn_read(ac, k);
    ae_leave(ac);
}

void rlk_async_handle_timer(rlk_async *ac)
{
    if (!ac || ac->closing)
        return;
    ae_enter(ac);
    ac->armed = -1;
    ae_timer_run(ac);
    ae_leave(ac);
}

/* ---------------------------------------------------------------- the client's connections */

void ae_conns_attach(rlk_async *ac)
{
    if (ac->fatal)
        return;
    /* The blocking subscriber's client (named) makes its command connection with a call;
     * RedLock's borrowed clients make theirs now, as the async client does. */
    if (!ae_routed(ac) && !ac->sub_name)
        ae_conn_start(ac, &AE_N0(ac)->cmd);
    else
        ae_route_refresh(ac);
    if (rlk_topo_resolves(ac->c))
        ac->sn_watch = rlk_ae_timer_add(ac, 250, ae_sn_watch_fire, NULL);
}

void ae_conns_detach(rlk_async *ac)
{
    for (int i = 0; i < 2 * ac->nnodes; i++)
        ae_conn_let_go(ac, ae_conn_nth(ac, i));
}

void ae_destroy(rlk_async *ac)
{
    ae_pubsub_free(ac);
    ae_timer_free(ac);
    for (int i = 0; i < ac->nnodes; i++) {
        rlk_transport_free(ac->nodes[i]->cmd.ctx);     /* NULL: nothing */
        rlk_transport_free(ac->nodes[i]->sub.ctx);
        free(ac->nodes[i]->host);
        free(ac->nodes[i]);
    }
    rlk_slotmap_free(&ac->map);
    if (ac->cref->borrowed) {
        /* The client is the caller's once this returns: its dial threads end first (each
         * bounded by the client's connect timeout). */
        pthread_mutex_lock(&ac->cref->mu);
        while (ac->cref->refs > 1)
            pthread_cond_wait(&ac->cref->cv, &ac->cref->mu);
        pthread_mutex_unlock(&ac->cref->mu);
    }
    ae_cref_put(ac->cref);     /* an own client goes with the last dial thread */
    free(ac);
}
