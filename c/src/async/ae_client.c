/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_client.c - the async client (rlk_async.h): its creation on a client of
 * its own (rlk_client_prepare: settings only, and the runtime's counters),
 * what it tells of itself, and its end (the engine's close: every call and
 * request ends with RLK_ERR_CLOSED; then the watchdog's holds and the
 * runtime go; then the kinds' data, the loop is let go, and the memory when
 * the last handler returns).
 */
#include "client/client.h"
#include "runtime/rt.h"
#include "engine/engine.h"
#include "engine/ae_state.h"
#include "engine/ae_wd.h"

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
    rlk_client *c = rlk_client_prepare(opts);
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;     /* the settings-only client's: its counters only */
    rlk_async *ac = c ? rlk_ae_new(c, rt ? &rt->counters : NULL, 0) : NULL;

    if (!ac)
        rlk_free(c);
    return ac;
}

void rlk_async_free(rlk_async *ac)
{
    if (rlk_ae_close_begin(ac) != 0)
        return;
    rlk_ae_wd_free_all(ac);
    /* The counters go with the runtime; the client itself goes with the last dial thread. */
    ac->counters = NULL;
    rlk_rt_free(ac->c);
    rlk_ae_close_end(ac);
}

int rlk_async_metrics_watch(rlk_async *ac, const char *name)
{
    return ac ? rlk_metrics_watch(rlk_ae_client(ac), name) : RLK_ERR_ARG;
}

int rlk_async_metrics_set_enabled(rlk_async *ac, int on)
{
    return ac ? rlk_metrics_set_enabled(rlk_ae_client(ac), on) : RLK_ERR_ARG;
}
