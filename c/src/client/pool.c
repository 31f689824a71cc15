/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool.c - the client's connections: pool_size slots, checked out by one
 * thread at a time (mutex + condition variable), connected lazily, and the
 * retry rule shared by every call (see rlk_pool_run and docs/c-api.md).
 *
 * The mutex only guards the busy flags: connecting and every round trip
 * happen outside it, so a thread never waits behind another thread's I/O
 * while a slot is free.
 */
#include "client/client_t.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/functions.h"
#include "client/pool.h"
#include "client/topo.h"
#include "client/transport.h"

rlk_slot *rlk_pool_checkout(rlk_client *c)
{
    rlk_slot *pick = NULL;

    pthread_mutex_lock(&c->pool_mu);
    for (;;) {
        /* Prefer a connected slot; take an unconnected one otherwise. */
        for (int i = 0; i < c->pool_size; i++) {
            rlk_slot *s = &c->slots[i];

            if (s->busy)
                continue;
            if (s->ctx) {
                pick = s;
                break;
            }
            if (!pick)
                pick = s;
        }
        if (pick)
            break;
        pthread_cond_wait(&c->pool_cv, &c->pool_mu);
    }
    pick->busy = 1;
    pthread_mutex_unlock(&c->pool_mu);
    return pick;
}

void rlk_pool_checkin(rlk_client *c, rlk_slot *slot)
{
    pthread_mutex_lock(&c->pool_mu);
    slot->busy = 0;
    pthread_cond_signal(&c->pool_cv);
    pthread_mutex_unlock(&c->pool_mu);
}

void rlk_slot_drop(rlk_slot *slot)
{
    if (slot->ctx) {
        rlk_transport_free(slot->ctx);
        slot->ctx = NULL;
        slot->dropped = 1;
    }
}

/* Cuts the command timeout of connection ctx to the thread's time limit
 * (ctx NULL: only checks the limit): 1 when cut (restore it after the call),
 * 0 when not, or minus RLK_ERR_TIMEOUT (recorded) when the limit has passed. */
static int rlk_pool_limit(rlk_client *c, redisContext *ctx)
{
    struct timeval tv;
    int cut = rlk_time_limit_tv(c->command_tv, &tv);

    if (cut < 0)
        return -rlk_set_error(c, RLK_ERR_TIMEOUT, "%s: time limit of the wait reached", c->addr);
    if (cut > 0 && (!ctx || redisSetTimeout(ctx, tv) != REDIS_OK))
        return 0;
    return cut;
}

int rlk_slot_ready(rlk_client *c, rlk_slot *slot)
{
    int rc, cut;

    if (slot->ctx && rlk_conn_usable(c, slot->ctx))
        return RLK_OK;
    rlk_slot_drop(slot);   /* closed by the server while idle, or broken */
    rc = rlk_conn_open(c, &slot->ctx);
    if (rc != RLK_OK) {
        if (rlk_conn_dial_failed())
            RLK_CLIENT_COUNT(c, connect_failures);
        return rc;
    }
    slot->identified = 0;   /* named by the first call on it, within that call's limit */
    if (slot->dropped)
        RLK_CLIENT_COUNT(c, reconnects);
    /* A reconnect's preload keeps to the thread's time limit too: a stopped
     * server accepts a connect. */
    cut = rlk_pool_limit(c, slot->ctx);
    if (cut < 0) {
        rlk_slot_drop(slot);
        return -cut;
    }
    if (slot->dropped && !c->no_preload && !rlk_fn_uses_fcall(c)) {
        /* A reconnect: the server may have restarted with an empty script cache. */
        rc = rlk_conn_load_all(c, slot->ctx);
        if (rc != RLK_OK) {
            if (slot->ctx->err)
                rlk_slot_drop(slot);
            return rc;
        }
    }
    if (cut > 0 && slot->ctx && !slot->ctx->err)
        (void)redisSetTimeout(slot->ctx, c->command_tv);
    slot->dropped = 0;
    return RLK_OK;
}

int rlk_pool_conn_error(int rc)
{
    return rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_PROTOCOL;
}

int rlk_pool_run(rlk_client *c, rlk_conn_op op, void *arg, int idempotent, redisReply **reply)
{
    rlk_slot *slot;
    int rc;

    *reply = NULL;
    if (c->fatal)
        return rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
    if (c->topo->flags & RLK_TOPO_ROUTED)   /* no pool of its own: a call without a key,
                                               on any master (fences use the node's own) */
        return c->topo->run(c, RLK_TOPO_ANY_SLOT, NULL, op, arg, idempotent, reply);
    if ((rc = rlk_pool_limit(c, NULL)) < 0)     /* none left: no slot taken */
        return -rc;
    slot = rlk_pool_checkout(c);
    rlk_pool_note_lost(c, NULL);
    for (int attempt = 0; attempt < 2; attempt++) {
        int written = 0, cut = 0;

        rc = rlk_slot_ready(c, slot);
        if (rc == RLK_OK && (cut = rlk_pool_limit(c, slot->ctx)) < 0)
            rc = -cut;
        if (rc == RLK_OK && !slot->identified) {
            /* Name the connection and learn its id (for fencing a lost reply)
             * in the first call on it, so that connecting costs no round trip. */
            rc = rlk_slot_identify(c, slot);
            slot->identified = rc == RLK_OK;
        }
        if (rc == RLK_OK)
            rc = op(c, slot->ctx, arg, reply, &written);
        if (cut > 0 && slot->ctx && !slot->ctx->err)
            (void)redisSetTimeout(slot->ctx, c->command_tv);
        if (rc == RLK_ERR_READONLY && attempt == 0 && c->topo->refused &&
            c->topo->refused(c, rc))
            continue;   /* refused, so not run: once more, on the master the sentinels name now */
        if (!rlk_pool_conn_error(rc))
            break;
        /* Written, then no reply: remember which connection, so that the
         * caller can settle what happened (rlk_pool_lost_reply). */
        rlk_pool_note_lost(c, written ? slot : NULL);
        if (slot->ctx && slot->ctx->err)
            rlk_slot_drop(slot);
        if (slot->ctx)
            break;  /* the connection survived the error: nothing to retry */
        /* No connection (connect failed or this one broke): retry only what
         * cannot run twice, and never after a timeout. */
        if (rc == RLK_ERR_TIMEOUT || (written && !idempotent))
            break;
    }
    if (!rlk_pool_conn_error(rc))
        rlk_pool_note_lost(c, NULL);
    rlk_pool_checkin(c, slot);
    return rc;
}

typedef struct rlk_command_op {
    const char *what;
    int argc;
    const char **argv;
    const size_t *lens;
} rlk_command_op;

static int rlk_op_one_command(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                              int *written)
{
    const rlk_command_op *o = arg;

    return rlk_conn_command(c, ctx, o->what, o->argc, o->argv, o->lens, reply, written);
}

int rlk_pool_command(rlk_client *c, const char *what, int argc, const char **argv,
                     const size_t *lens, redisReply **reply)
{
    rlk_command_op o = {what, argc, argv, lens};

    return rlk_pool_run(c, rlk_op_one_command, &o, 1, reply);
}
