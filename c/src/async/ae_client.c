/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_client.c - the async client (rlk_async.h): its creation (one server,
 * or a cluster's seeds), attaching it to a loop, what it tells of itself,
 * and its end (every call and request ends with RLK_ERR_CLOSED, the
 * watchdog's holds and the kinds' data go, the loop is let go; the memory
 * when the last handler returns).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/random.h"
#include "runtime/rt.h"
#include "runtime/engine.h"
#include "runtime/ae_state.h"
#include "runtime/ae_call.h"
#include "runtime/ae_pubsub.h"
#include "runtime/ae_route.h"
#include "runtime/ae_timer.h"
#include "runtime/ae_wd.h"

const char *rlk_async_uuid(const rlk_async *ac)
{
    return ac ? ac->uuid : "";
}

size_t rlk_async_pending(const rlk_async *ac)
{
    return ac ? ac->npending : 0;
}

int rlk_async_err(const rlk_async *ac)
{
    return ac ? ac->fatal : RLK_ERR_ARG;
}

const char *rlk_async_errstr(const rlk_async *ac)
{
    return ac ? ac->fatal_msg : "";
}

const char *rlk_async_conn_errstr(const rlk_async *ac)
{
    return ac && ac->conn_err[0] ? ac->conn_err : NULL;
}

void rlk_async_set_lost_callback(rlk_async *ac, rlk_lost_kind_fn fn, void *userdata)
{
    if (!ac)
        return;
    ac->lost_fn = fn;
    ac->lost_ud = userdata;
}

rlk_async *rlk_async_new(const rlk_options *opts)
{
    rlk_async *ac = calloc(1, sizeof *ac);
    rlk_rt *rt;
    int routed;

    if (!ac)
        return NULL;
    ac->armed = -2;
    ac->c = rlk_client_prepare(opts);
    ac->cref = calloc(1, sizeof *ac->cref);
    routed = ac->c && !ac->c->fatal && ae_routed(ac);
    if (!ac->c || !ac->cref || (!routed && ae_route_setup(ac, 0) != RLK_OK)) {
        rlk_free(ac->c);
        free(ac->cref);
        free(ac->nodes[0]);
        free(ac);
        return NULL;
    }
    pthread_mutex_init(&ac->cref->mu, NULL);
    ac->cref->refs = 1;
    ac->cref->c = ac->c;
    rt = rlk_rt_get(ac->c);     /* the settings-only client's: its counters only */
    ac->counters = rt ? &rt->counters : NULL;
    /* A cluster's seeds are the first nodes; the map (CLUSTER SLOTS) names the masters. */
    if (ac->c->fatal) {
        ac->fatal = ac->c->fatal;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "%s", ac->c->fatal_msg);
    } else if (routed && ae_route_setup(ac, 1) != RLK_OK) {
        ac->fatal = RLK_ERR_NOMEM;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "out of memory");
    } else if (routed && !ac->nnodes) {
        ac->fatal = RLK_ERR_URL;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "redis+cluster://: no seed node");
    }
    if (ac->c->pubsub_opt != RLK_PUBSUB_AUTO)
        ac->pubsub = ac->c->pubsub_opt;
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

void rlk_async_free(rlk_async *ac)
{
    rlk_ae_call *call;

    if (!ac || ac->closing)
        return;
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
    rlk_ae_wd_free_all(ac);
    for (int i = 0; i < RLK_AE_SLOTS; i++)
        if (ac->kind_data[i] && ac->kind_destroy[i])
            ac->kind_destroy[i](ac->kind_data[i]);
    /* The counters go with the runtime; the client itself goes with the last dial thread. */
    ac->counters = NULL;
    rlk_rt_free(ac->c);
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

int rlk_async_metrics_watch(rlk_async *ac, const char *name)
{
    return ac ? rlk_metrics_watch(rlk_ae_client(ac), name) : RLK_ERR_ARG;
}

int rlk_async_metrics_set_enabled(rlk_async *ac, int on)
{
    return ac ? rlk_metrics_set_enabled(rlk_ae_client(ac), on) : RLK_ERR_ARG;
}
