/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_once.c - one script call with an integer reply as a request (a_once.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "async/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_once.h"

#define AON_RETRY_MS 20     /* after a call that never went out */

typedef struct aon {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    char what[48];
    char *name;
    const rlk_proto_call *pc;       /* the kind's call (static) */
    rlk_proto_argvals v;            /* its ARGV's values, owner and id copied (publish: asked
                                       for when sent, a cluster's marker is the pointer) */
    int flags;
    char **tail;                    /* text arguments after its ARGV (one block); NULL: none */
    rlk_ae_call *call;
    rlk_ae_timer *retry;
} aon;

static void aon_free_state(rlk_async_req *r, void *state)
{
    aon *o = state;

    (void)r;
    rlk_ae_timer_del(o->retry);
    rlk_ae_call_forget(o->call);
    free(o->name);
    free(o->tail);
    free((void *)o->v.owner);
    free((void *)o->v.id);
}

static void aon_call(aon *o);

/* A call once sent decides: a cancel does not end the request early. */
static void aon_cancel_hook(rlk_async_req *r, void *state)
{
    (void)r;
    (void)state;
}

static void aon_retry_fire(rlk_async *ac, void *arg)
{
    aon *o = arg;

    (void)ac;
    o->retry = NULL;
    aon_call(o);
}

static void aon_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg)
{
    aon *o = arg;

    o->call = NULL;
    if (rc == RLK_ERR_IO && lost && (o->flags & RLK_A_ONCE_REPEAT))
        lost = 0;       /* a call that may run twice: asked again as if never sent */
    if (rc == RLK_ERR_IO && lost) {
        rlk_ae_complete(o->h.r, RLK_ERR_UNSETTLED, 0, NULL,
                        "%s %s: the reply was lost and the call may have run (it is not "
                        "repeated: it must not run twice): %s", o->what, o->name, errstr);
        return;
    }
    if (rc == RLK_ERR_IO && !rlk_ae_closing(ac) &&
        rlk_ae_now_ms() - o->h.start <= rlk_a_common_budget(ac, 0)) {
        /* Never written: once more in a while. */
        o->retry = rlk_ae_timer_add(ac, AON_RETRY_MS, aon_retry_fire, o);
        if (o->retry)
            return;
    }
    if (rc != RLK_OK) {
        rlk_ae_complete(o->h.r, rc, 0, NULL, "%s %s: %s", o->what, o->name, errstr);
        return;
    }
    if (reply->type != REDIS_REPLY_INTEGER) {
        rlk_ae_complete(o->h.r, RLK_ERR_PROTOCOL, 0, NULL, "%s %s: %s replied an unexpected shape",
                        o->what, o->name, o->pc->script);
        return;
    }
    if ((o->flags & RLK_A_ONCE_HELD) && reply->integer == 0) {
        rlk_ae_complete(o->h.r, RLK_ERR_NOT_OWNER, 0, NULL, "%s %s: the permit is not held "
                        "(expired, released or never acquired)", o->what, o->name);
        return;
    }
    rlk_ae_complete(o->h.r, RLK_OK, (o->flags & RLK_A_ONCE_BOOL) ? reply->integer == 1
                    : reply->integer, NULL, NULL);
}

static void aon_call(aon *o)
{
    o->call = rlk_a_kind_call(o->h.ac, o->pc, o->name, &o->v, o->tail, aon_reply, o);
    if (!o->call)
        rlk_ae_complete(o->h.r, rlk_ae_closing(o->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, 0, NULL,
                        "%s %s: %s", o->what, o->name,
                        rlk_ae_closing(o->h.ac) ? "client freed" : "out of memory");
}

rlk_async_req *rlk_a_once_new(rlk_async *ac, const char *what, const char *name,
                              rlk_async_fn fn, void *privdata)
{
    char who[64];
    rlk_async_req *r;
    aon *o;

    if (!(o = RLK_A_NEW(ac, aon, fn, privdata)))
        return NULL;
    r = o->h.r;
    snprintf(o->what, sizeof o->what, "%s", what);
    snprintf(who, sizeof who, "rlk_async %s", what);
    if (rlk_a_common_begin(r, aon_cancel_hook, aon_free_state, who, name))
        return r;
    if (!(o->name = strdup(name)))
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async %s: out of memory", what);
    return r;
}

int rlk_a_once_call(rlk_async_req *r, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                    char **tail, int flags)
{
    aon *o = rlk_ae_req_state(r);
    unsigned char *id = NULL;

    o->tail = tail;
    o->pc = pc;
    o->flags = flags;
    o->v = *vals;
    o->v.owner = NULL;
    o->v.id = NULL;
    if ((vals->owner && !(o->v.owner = strdup(vals->owner))) ||
        (vals->id && !(o->v.id = id = malloc(vals->idlen ? vals->idlen : 1))))
        return -1;
    if (id)
        memcpy(id, vals->id, vals->idlen);
    o->call = rlk_a_kind_call(o->h.ac, pc, o->name, &o->v, tail, aon_reply, o);
    if (!o->call && !rlk_ae_closing(o->h.ac))
        return -1;      /* it could not be built or sent: out of memory */
    if (!o->call)
        rlk_ae_complete(r, RLK_ERR_CLOSED, 0, NULL, "%s %s: client freed", o->what, o->name);
    return 0;
}
