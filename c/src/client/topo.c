/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.c - see topo.h: the standalone variant (one server, its pool) and
 * what the layers above ask of any variant.
 */
#include <stdio.h>
#include <stdlib.h>

#include "client/client_t.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/functions.h"
#include "client/pool.h"
#include "client/role.h"
#include "client/topo.h"

/* ---------------------------------------------------------------- asked from above */

int rlk_topo_routed(const rlk_client *c)
{
    return (c->topo->flags & RLK_TOPO_ROUTED) != 0;
}

int rlk_topo_counts_exact(const rlk_client *c, int pubsub)
{
    return !rlk_topo_routed(c) || pubsub == RLK_PUBSUB_SHARDED;
}

int rlk_topo_resolves(const rlk_client *c)
{
    return (c->topo->flags & RLK_TOPO_RESOLVES) != 0;
}

unsigned long long rlk_topo_moves(rlk_client *c)
{
    return c->topo->moves ? c->topo->moves(c, NULL) : 0;
}

int rlk_topo_dial_blocks(const rlk_client *c)
{
    return (c->topo->flags & RLK_TOPO_RESOLVES) != 0 || c->tls != NULL;   /* a handshake */
}

void rlk_topo_check(rlk_client *c)
{
    if (c->topo->check)
        c->topo->check(c);
}

int rlk_topo_masters(rlk_client *c, rlk_client **out, int max)
{
    return c->topo->masters(c, out, max);
}

typedef struct rlk_eval_call {
    const rlk_script_info *script;
    int nkeys, nargs;
    const char *const *keys, *const *args;
    const size_t *keylens, *arglens;
} rlk_eval_call;

static int rlk_op_eval(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                       int *written)
{
    const rlk_eval_call *e = arg;

    return rlk_conn_evalv(c, ctx, e->script, e->nkeys, e->keys, e->keylens, e->nargs, e->args,
                          e->arglens, reply, written);
}

int rlk_topo_evalv(rlk_client *c, const rlk_script_info *s, int nkeys, const char *const *keys,
                   const size_t *keylens, int nargs, const char *const *args,
                   const size_t *arglens, redisReply **reply, long long timeout_ms)
{
    rlk_eval_call e = {s, nkeys, nargs, keys, args, keylens, arglens};
    long long prev = 0;
    int slot, rc;

    *reply = NULL;
    if (c->fatal)       /* as rlk_evalv: a client rlk_connect could not set up */
        return rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
    slot = c->topo->script_slot ? c->topo->script_slot(c, s->name, nkeys, keys, keylens)
                                : RLK_TOPO_ANY_SLOT;
    if (slot == RLK_TOPO_BAD_SLOT)
        return rlk_err(c);
    if (timeout_ms >= 0)
        prev = rlk_time_limit_enter(rlk_clock_now_ns() + timeout_ms * RLK_NS_PER_MS);
    rc = c->topo->run(c, slot, s, rlk_op_eval, &e, 0, reply);
    if (timeout_ms >= 0)
        rlk_time_limit_leave(prev);
    return rc;
}

/* ---------------------------------------------------------------- the standalone variant */

int rlk_topo_pool_run(rlk_client *c, int slot, const rlk_script_info *s, rlk_conn_op op,
                      void *arg, int idempotent, redisReply **reply)
{
    (void)slot;     /* one server holds every slot */
    *reply = NULL;
    if (s && rlk_role_refuse(c, s) != RLK_OK)
        return RLK_ERR_READONLY;
    return rlk_pool_run(c, op, arg, idempotent, reply);
}

void rlk_topo_pool_connect(rlk_client *c)
{
    rlk_slot *slot = rlk_pool_checkout(c);
    int rc = rlk_slot_ready(c, slot);

    /* FCALL or EVALSHA (functions.h); without a preload the first call decides, within
     * that call's time limit (a connect stays free of round trips). */
    if (rc == RLK_OK && !c->no_preload)
        rc = rlk_conn_fn_decide(c, slot->ctx);
    if (rc == RLK_OK && !c->no_preload && !rlk_fn_uses_fcall(c))
        rc = rlk_conn_load_all(c, slot->ctx);
    if (rc != RLK_OK && slot->ctx && slot->ctx->err)
        rlk_slot_drop(slot);
    rlk_pool_checkin(c, slot);
}

static int rlk_standalone_open(rlk_client *c, redisContext **out)
{
    return rlk_conn_open_to(c, NULL, 0, out);
}

int rlk_topo_one_master(rlk_client *c, rlk_client **out, int max)
{
    if (max < 1)
        return 0;
    out[0] = c;
    return 1;
}

/* ---------------------------------------------------------------- load, verify on one server */

static int rlk_op_load_all(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                           int *written)
{
    (void)arg;
    (void)reply;
    *written = 1;
    return rlk_conn_load_all(c, ctx);
}

int rlk_topo_load_one(rlk_client *c)
{
    redisReply *unused;

    return rlk_pool_run(c, rlk_op_load_all, NULL, 1, &unused);
}

int rlk_topo_verify_one(rlk_client *c, int *present)
{
    size_t n = c->scripts.count;
    const char **argv;
    redisReply *r;
    int rc;

    if (!(argv = malloc((n + 2) * sizeof *argv)))
        return rlk_set_error(c, RLK_ERR_NOMEM, "SCRIPT EXISTS: out of memory");
    argv[0] = "SCRIPT";
    argv[1] = "EXISTS";
    for (size_t i = 0; i < n; i++)
        argv[i + 2] = c->scripts.items[i].sha1;
    rc = rlk_pool_command(c, "SCRIPT EXISTS", (int)n + 2, argv, NULL, &r);
    free(argv);
    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR)
        rc = rlk_set_reply_error(c, r, "SCRIPT EXISTS", RLK_ERR_SERVER);
    else if (r->type != REDIS_REPLY_ARRAY || r->elements != c->scripts.count)
        rc = RLK_ERR_PROTOCOL;
    for (size_t i = 0; rc == RLK_OK && i < r->elements; i++) {
        rc = r->element[i]->type == REDIS_REPLY_INTEGER ? RLK_OK : RLK_ERR_PROTOCOL;
        present[i] = r->element[i]->integer == 1;
    }
    if (rc == RLK_ERR_PROTOCOL)
        rlk_set_error(c, rc, "SCRIPT EXISTS %s: unexpected reply", c->addr);
    freeReplyObject(r);
    return rc;
}

const rlk_topo rlk_topo_standalone = {
    .name = "standalone",
    .flags = 0,
    .readonly_hint = RLK_TOPO_REPLICA_HINT,
    .connect = rlk_topo_pool_connect,
    .run = rlk_topo_pool_run,
    .open = rlk_standalone_open,
    .masters = rlk_topo_one_master,
};
