/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_route.c - the async engine's cluster routing (ae_route.h): its nodes
 * under the indexes of the slot map (client/slotmap.h, asked with CLUSTER
 * SLOTS on the loop), a call routed to the master of its slot, parked
 * while the map (or the pub/sub mode) is not known or after a "not now"
 * answer, MOVED and ASK followed, and the calls of a dropped connection
 * routed again. docs/async-internals.md describes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client/client.h"
#include "client/random.h"
#include "client/slotmap.h"
#include "client/topo.h"
#include "client/transport.h"
#include "client/url.h"
#include "engine/engine.h"
#include "engine/ae_state.h"
#include "engine/ae_pubsub.h"
#include "engine/ae_route.h"

static void ae_park_fire(rlk_async *ac, void *arg);

/* The map's hook (client/slotmap.h): the node of a new map index; host NULL: the one server's
 * node (the URL's address). */
static int ae_node_new(void *arg, int idx, const char *host, int port)
{
    rlk_async *ac = arg;
    ae_node *n;

    if (idx >= AE_MAX_NODES || idx != ac->nnodes || !(n = calloc(1, sizeof *n)))
        return -1;
    if (host && !(n->host = strdup(host))) {
        free(n);
        return -1;
    }
    n->port = port;
    if (host)
        rlk_url_host_port(n->addr, sizeof n->addr, host, port);
    n->cmd.node = n->sub.node = n;
    n->sub.is_sub = 1;
    ac->nodes[ac->nnodes++] = n;
    return 0;
}

int ae_route_setup(rlk_async *ac, int routed)
{
    rlk_slotmap_init(&ac->map, ae_node_new, ac);
    if (!routed)
        return ae_node_new(ac, 0, NULL, 0) ? RLK_ERR_NOMEM : RLK_OK;
    for (int i = 0; i < ac->c->url.nseeds; i++)
        if (rlk_slotmap_node(&ac->map, ac->c->url.seeds[i].host, ac->c->url.seeds[i].port) < 0)
            return RLK_ERR_NOMEM;
    return RLK_OK;
}

ae_node *ae_route_slot_node(rlk_async *ac, int slot)
{
    int idx = ac->map.loaded ? rlk_slotmap_owner(&ac->map, slot) : -1;

    return idx >= 0 ? ac->nodes[idx] : NULL;
}

/* Arms the park timer for the earliest parked call with a backoff. */
static void ae_park_arm(rlk_async *ac)
{
    long long first = -1, now = rlk_ae_now_ms();

    /* (Calls parked for the map are routed when it comes, not by the timer.) */
    for (rlk_ae_call *c = ac->parked.head; c; c = c->next)
        if ((c->rt->fail_rc || c->rt->not_before) && (first < 0 || c->rt->not_before < first))
            first = c->rt->not_before;
    if (first < 0 || ac->closing)
        return;
    if (ac->park_timer) {
        if (ac->park_timer->at <= (first > now ? first : now))
            return;
        rlk_ae_timer_del(ac->park_timer);
    }
    ac->park_timer = rlk_ae_timer_add(ac, first > now ? first - now : 0, ae_park_fire, NULL);
}

void ae_route_park(rlk_async *ac, rlk_ae_call *call, long long delay_ms)
{
    call->rt->not_before = delay_ms > 0 ? rlk_ae_now_ms() + delay_ms : 0;
    ae_callq_push(&ac->parked, call);
    ae_park_arm(ac);
}

/* Routes the parked calls that are due (all of them once the map is known). */
static void ae_route_park_run(rlk_async *ac)
{
    ae_callq q = ac->parked;
    long long now = rlk_ae_now_ms();
    rlk_ae_call *call;

    memset(&ac->parked, 0, sizeof ac->parked);
    while ((call = ae_callq_pop(&q))) {
        if (ac->closing) {
            ae_callq_push(&ac->parked, call);
            continue;
        }
        if (call->rt->fail_rc)
            ae_call_end(ac, call, call->rt->fail_rc, NULL, call->rt->last_err, 0);
        else if (call->rt->not_before > now)
            ae_callq_push(&ac->parked, call);
        else
            ae_route_call(ac, call);
    }
    ae_park_arm(ac);
}

static void ae_park_fire(rlk_async *ac, void *arg)
{
    (void)arg;
    ac->park_timer = NULL;
    ae_route_park_run(ac);
}

/* The call's backoff now; the next one doubles, up to AE_CL_BACKOFF_MAX_MS. */
static long long ae_route_backoff(rlk_ae_call *call)
{
    long long b = call->rt->backoff;

    call->rt->backoff = b * 2 > AE_CL_BACKOFF_MAX_MS ? AE_CL_BACKOFF_MAX_MS : b * 2;
    return b;
}

/* A call that did not run is routed again after its backoff, from scratch
 * (no ASKING; NOSCRIPT is the next node's own); why is kept for the
 * message of its timeout. */
static void ae_route_again(rlk_async *ac, rlk_ae_call *call, const char *why)
{
    free(call->rt->last_err);
    call->rt->last_err = strdup(why);
    call->rt->asking = 0;
    call->retried = 0;
    ae_route_park(ac, call, ae_route_backoff(call));
}

void ae_route_call(rlk_async *ac, rlk_ae_call *call)
{
    ae_node *n = ac->pubsub ? ae_route_slot_node(ac, call->rt->slot) : NULL;

    if (!n) {
        /* A map without a master for the slot (the cluster is down there): after a backoff. */
        ae_route_park(ac, call, ac->map.loaded && ac->pubsub ? ae_route_backoff(call) : 0);
        ae_route_refresh(ac);
        return;
    }
    if (ae_node_submit(ac, n, call) != 0)
        ae_call_end(ac, call, RLK_ERR_NOMEM, NULL, "out of memory", 0);
}

int ae_route_refused(rlk_async *ac, ae_node *n, rlk_ae_call *call, const redisReply *r)
{
    char host[RLK_SLOTMAP_HOST_MAX];
    int slot, port, kind = rlk_slotmap_redirect(r->str, &slot, host, sizeof host, &port);
    int later = kind ? RLK_SLOTMAP_NOW : rlk_slotmap_not_now(r->str);
    long long now = rlk_ae_now_ms();

    if (kind && call->rt->redirects++ < AE_REDIRECTS_MAX) {
        int idx = rlk_slotmap_node(&ac->map, host, port);
        ae_node *to = idx >= 0 ? ac->nodes[idx] : NULL;

        if (!to)
            return 0;
        if (kind == RLK_SLOTMAP_MOVED) {
            if (rlk_slotmap_move(&ac->map, slot, idx))
                ae_chans_reroute(ac);
            ae_route_refresh(ac);          /* a failover or a finished migration moves more */
        } else
            call->rt->asking = 1;
        if (to != n)
            call->retried = 0;      /* NOSCRIPT is the new node's own */
        if (ae_node_submit(ac, to, call) != 0)
            ae_call_end(ac, call, RLK_ERR_NOMEM, NULL, "out of memory", 0);
        return 1;
    }
    if (!kind && later == RLK_SLOTMAP_NOW)
        return 0;
    /* "Not now" (a migration's keys in two places, a failover): after a backoff
     * that fits in the command timeout, maybe elsewhere. */
    if (now + call->rt->backoff >= call->issued + ac->c->command_timeout_ms)
        return 0;
    call->rt->redirects = 0;        /* ASK -> TRYAGAIN -> ASK: time bounds it now */
    ae_route_again(ac, call, r->str);
    if (later != RLK_SLOTMAP_LATER_HERE)
        ae_route_refresh(ac);
    return 1;
}

void ae_route_calls_fail(rlk_async *ac, ae_node *n, int rc, const char *why, int unsent_too)
{
    ae_callq q = n->inflight;
    rlk_ae_call *call;

    memset(&n->inflight, 0, sizeof n->inflight);
    while ((call = ae_callq_pop(&q))) {
        ac->lost_calls += call->what == AE_CALL_USER;
        ae_call_end(ac, call, rc, NULL, why, call->what == AE_CALL_USER);
    }
    if (!unsent_too && !ae_routed(ac))
        return;
    q = n->unsent;
    memset(&n->unsent, 0, sizeof n->unsent);
    while ((call = ae_callq_pop(&q))) {
        if (unsent_too || !call->rt || call->rt->pinned || ac->closing)
            ae_call_end(ac, call, rc, NULL, why, 0);
        else
            ae_route_again(ac, call, why);
    }
    if (!unsent_too && !ac->closing)
        ae_route_refresh(ac);
}

/* A call that was not written ends with rc and why on the next turn (ae_route_park_run). */
static void ae_route_fail_later(rlk_async *ac, rlk_ae_call *call, int rc, const char *why)
{
    free(call->rt->last_err);
    call->rt->last_err = strdup(why);
    call->rt->fail_rc = rc;
    call->rt->not_before = 0;
    ae_callq_push(&ac->parked, call);
}

void ae_route_setup_refused(rlk_async *ac, ae_node *n, int rc, const char *why)
{
    ae_callq q = n->unsent;
    rlk_ae_call *call;

    memset(&n->unsent, 0, sizeof n->unsent);
    while ((call = ae_callq_pop(&q))) {
        if (call->rt && !call->rt->pinned && !ac->closing)
            ae_route_fail_later(ac, call, rc, why);
        else
            ae_callq_push(&n->unsent, call);     /* the map's own asks: ae_route_calls_fail */
    }
    if (!ac->map.loaded && !ac->closing) {
        q = ac->parked;
        memset(&ac->parked, 0, sizeof ac->parked);
        while ((call = ae_callq_pop(&q))) {
            if (!call->rt->fail_rc)
                ae_route_fail_later(ac, call, rc, why);
            else
                ae_callq_push(&ac->parked, call);
        }
    }
    ae_route_calls_fail(ac, n, rc, why, 0);
    ae_park_arm(ac);
}

static void ae_refresh_fire(rlk_async *ac, void *arg)
{
    (void)arg;
    ac->refresh_timer = NULL;
    ae_route_refresh(ac);
}

/* The map could not be had: ask again (another node) after a backoff. */
static void ae_refresh_later(rlk_async *ac)
{
    long long ms = ae_backoff(AE_CL_BACKOFF_MIN_MS, AE_CL_BACKOFF_MAX_MS, ac->refresh_fails++);

    ac->rr++;
    if (!ac->refresh_timer && !ac->closing)
        ac->refresh_timer = rlk_ae_timer_add(ac, ms, ae_refresh_fire, NULL);
}

static void ae_info_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                          int lost, void *arg)
{
    (void)errstr;
    (void)lost;
    (void)arg;
    ac->info_asked = 0;
    if (ac->closing)
        return;
    if (rc == RLK_OK && r->type == REDIS_REPLY_STRING) {
        const char *v = strstr(r->str, "redis_version:");
        int major = v ? atoi(v + 14) : 0;

        /* Redisson's AUTO: sharded on a cluster of Redis 7 or later. */
        ac->pubsub = major >= 7 ? RLK_PUBSUB_SHARDED : RLK_PUBSUB_GLOBAL;
        ae_route_park_run(ac);
        ae_chans_reroute(ac);
        return;
    }
    ae_refresh_later(ac);
}

/* Asks node n something of its own (the map, its version). */
static int ae_ask_node(rlk_async *ac, ae_node *n, int argc, const char **argv, rlk_ae_reply_fn fn,
                       void *arg)
{
    rlk_ae_call *call = ae_call_new(ac, AE_CALL_USER, fn, arg);

    if (!call)
        return -1;
    call->rt->pinned = 1;
    return ae_call_send(ac, n, call, argc, argv, NULL, 0);
}

static void ae_slots_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                           int lost, void *arg)
{
    ae_node *asked = arg;
    char at[300], why[AE_ERRSTR_MAX];

    (void)lost;
    ac->refreshing = 0;
    if (ac->closing)
        return;
    /* A node that wants a password (NOAUTH) or refuses the one given: the calls waiting for
     * the map end now with its refusal, as a refused set-up's do. */
    if (rc == RLK_ERR_AUTH && !ac->map.loaded && errstr) {
        /* errstr: "command <the client's address>: <reply and hint>" (ae_cmd_reply). */
        const char *addr = rlk_transport_addr(asked->cmd.ctx, at, sizeof at);
        const char *said = strstr(errstr, ac->c->addr);

        said = said && strncmp(said + strlen(ac->c->addr), ": ", 2) == 0
                   ? said + strlen(ac->c->addr) + 2 : errstr;
        snprintf(why, sizeof why, "cluster slots on %s: %s", addr ? addr : asked->addr, said);
        ae_route_setup_refused(ac, asked, RLK_ERR_AUTH, why);
        return;
    }
    /* An empty map (no slot served yet) is asked again, as a malformed one. */
    if (rc != RLK_OK || r->type != REDIS_REPLY_ARRAY || r->elements == 0 ||
        rlk_slotmap_load(&ac->map, r, asked->host) == RLK_ERR_PROTOCOL) {
        ae_refresh_later(ac);
        return;
    }
    ac->refresh_fails = 0;
    if (!ac->pubsub && !ac->info_asked) {
        const char *iv[2] = {"INFO", "server"};

        if (ae_ask_node(ac, asked, 2, iv, ae_info_reply, asked) == 0)
            ac->info_asked = 1;
    }
    ae_route_park_run(ac);
    ae_chans_reroute(ac);
}

void ae_route_refresh(rlk_async *ac)
{
    long long now = rlk_ae_now_ms(), since = now - ac->refreshed_at;
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    ae_node *n = NULL;

    if (!ae_routed(ac) || ac->closing || !ac->attached || ac->refreshing || ac->refresh_timer ||
        !ac->nnodes || ac->fatal)
        return;
    if (ac->refreshed_at && since < AE_CL_REFRESH_MS) {
        ac->refresh_timer = rlk_ae_timer_add(ac, AE_CL_REFRESH_MS - since, ae_refresh_fire, NULL);
        return;
    }
    /* A node whose connection is up, else the next one in turn. */
    for (int i = 0; i < ac->nnodes && !n; i++) {
        ae_node *c = ac->nodes[(ac->rr + (unsigned)i) % (unsigned)ac->nnodes];

        if (c->cmd.state == AE_UP && !c->unsent.head)
            n = c;
    }
    if (!n)
        n = ac->nodes[ac->rr % (unsigned)ac->nnodes];
    ac->refreshed_at = now;
    ac->refreshing = 1;
    if (ae_ask_node(ac, n, 2, argv, ae_slots_reply, n) != 0) {
        ac->refreshing = 0;
        ae_refresh_later(ac);
    }
}
