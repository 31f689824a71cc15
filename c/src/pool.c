/*
 * pool.c - the client's connections: pool_size slots, checked out by one
 * thread at a time (mutex + condition variable), connected lazily, and the
 * retry rule shared by every call (see rlk_pool_run and docs/c-api.md).
 *
 * The mutex only guards the busy flags: connecting and every round trip
 * happen outside it, so a thread never waits behind another thread's I/O
 * while a slot is free.
 */
#include "rlk_internal.h"

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
        redisFree(slot->ctx);
        slot->ctx = NULL;
        slot->dropped = 1;
    }
}

int rlk_slot_ready(rlk_client *c, rlk_slot *slot)
{
    int rc;

    if (slot->ctx && rlk_conn_alive(slot->ctx))
        return RLK_OK;
    rlk_slot_drop(slot);   /* closed by the server while idle, or broken */
    rc = rlk_conn_open(c, &slot->ctx);
    if (rc != RLK_OK)
        return rc;
    rc = rlk_slot_identify(c, slot);
    if (rc != RLK_OK) {
        rlk_slot_drop(slot);
        return rc;
    }
    if (slot->dropped && !c->no_preload) {
        /* A reconnect: the server may have restarted with an empty script cache. */
        rc = rlk_conn_load_all(c, slot->ctx);
        if (rc != RLK_OK) {
            if (slot->ctx->err)
                rlk_slot_drop(slot);
            return rc;
        }
    }
    slot->dropped = 0;
    return RLK_OK;
}

static int rlk_is_conn_error(int rc)
{
    return rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_PROTOCOL;
}

int rlk_pool_run(rlk_client *c, rlk_conn_op op, void *arg, int idempotent, redisReply **reply)
{
    rlk_slot *slot;
    int rc = RLK_OK;

    *reply = NULL;
    if (c->fatal)
        return rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
    slot = rlk_pool_checkout(c);
    rlk_pool_note_lost(c, NULL);
    for (int attempt = 0; attempt < 2; attempt++) {
        int written = 0;

        rc = rlk_slot_ready(c, slot);
        if (rc == RLK_OK)
            rc = op(c, slot->ctx, arg, reply, &written);
        if (!rlk_is_conn_error(rc))
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
    if (!rlk_is_conn_error(rc))
        rlk_pool_note_lost(c, NULL);
    rlk_pool_checkin(c, slot);
    return rc;
}
