/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_once.c - one script call with an integer reply as a request, or an
 * awaiter that repeats it until its integer says open (a_once.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "runtime/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_once.h"

typedef struct aon {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    char what[48];
    char *name;
    const rlk_proto_call *pc;       /* the kind's call (static) */
    rlk_proto_argvals v;            /* its ARGV's values, owner, value and id copied (publish: asked
                                       for when sent, a cluster's marker is the pointer) */
    int flags;
    char **tail;                    /* text arguments after its ARGV (one block); NULL: none */
    rlk_ae_call *call;
    rlk_ae_timer *retry;            /* the next call: after one that never went out; an
                                       awaiter's next read */
    /* an awaiter's (rlk_a_once_await) */
    const char *busy;               /* what a wait that ran out says (static); NULL: no awaiter */
    char *channel;
    long long wait_ms;              /* 0 for a request that is no awaiter */
    rlk_ae_sub *sub;
    rlk_ae_timer *deadline;
    int again;                      /* woken while a read was in flight */
    int ending;                     /* RLK_ERR_BUSY: end when the read in flight says closed */
} aon;

static void aon_quiet(aon *o)
{
    rlk_a_common_quiet(&o->retry, &o->deadline, &o->sub, NULL);
}

static void aon_free_state(rlk_async_req *r, void *state)
{
    aon *o = state;

    (void)r;
    aon_quiet(o);
    rlk_ae_call_forget(o->call);
    rlk_a_common_free(6, o->name, o->channel, o->tail, (void *)o->v.owner, (void *)o->v.value,
                      (void *)o->v.id);
}

static void aon_call(aon *o);

/* A call once sent decides: a cancel does not end the request early. An
 * awaiter (or RLK_A_ONCE_CANCEL) has nothing to undo: it ends now (a call
 * in flight is forgotten with the request). */
static void aon_cancel_hook(rlk_async_req *r, void *state)
{
    aon *o = state;

    (void)r;
    if (!(o->flags & RLK_A_ONCE_CANCEL))
        return;
    aon_quiet(o);
    rlk_ae_complete(o->h.r, RLK_ERR_CANCELLED, 0, NULL, "cancelled");
}

/* Ends the request with err (not RLK_OK): "<what> <name>: " and the text
 * fmt formats; an awaiter's RLK_ERR_BUSY: its busy text "after <ms> ms". */
static void aon_end(aon *o, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void aon_end(aon *o, int err, const char *fmt, ...)
{
    char why[RLK_ERRSTR_MAX];
    va_list ap;

    aon_quiet(o);
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (err == RLK_ERR_BUSY && o->busy)
        rlk_ae_complete(o->h.r, err, 0, NULL, "%s %s: %s after %lld ms", o->what, o->name, o->busy,
                        rlk_a_common_elapsed(&o->h));
    else
        rlk_ae_complete(o->h.r, err, 0, NULL, "%s %s: %s", o->what, o->name, why);
}

/* The retry timer, an awaiter's message ("0": open; "1": armed) or msg
 * NULL (subscribed, again): call now, or after the call in flight. */
static void aon_retry_fire(rlk_async *ac, void *arg)
{
    aon *o = arg;

    (void)ac;
    o->retry = NULL;
    if (rlk_a_common_wake(o->h.r, o->call, &o->again))
        aon_call(o);
}

static void aon_msg(rlk_async *ac, const char *channel, const char *msg, size_t len, void *arg)
{
    aon *o = arg;

    rlk_a_unused(4, ac, channel, msg, len);
    if (rlk_a_common_wake(o->h.r, o->call, &o->again))
        aon_call(o);
}

static void aon_deadline_fire(rlk_async *ac, void *arg)
{
    aon *o = arg;

    (void)ac;
    if (rlk_a_common_deadline(&o->deadline, o->call, &o->ending))
        aon_end(o, RLK_ERR_BUSY, "%s", "");
}

static void aon_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg)
{
    aon *o = arg;
    rlk_proto_outcome out;

    o->call = NULL;
    if (rlk_ae_req_done(o->h.r))
        return;     /* cancelled meanwhile (RLK_A_ONCE_CANCEL) */
    if (rc == RLK_ERR_IO && lost && (o->flags & RLK_A_ONCE_REPEAT))
        lost = 0;       /* a call that may run twice: asked again as if never sent */
    if (rc == RLK_ERR_IO && lost) {
        aon_end(o, RLK_ERR_UNSETTLED, "the reply was lost and the call may have run (it is not "
                "repeated: it must not run twice): %s", errstr);
        return;
    }
    if (rc == RLK_ERR_IO && !o->ending && (o->busy || !rlk_ae_closing(ac)) &&
        rlk_a_common_elapsed(&o->h) <= rlk_a_common_budget(ac, o->wait_ms)) {
        /* Never written (or a read's reply lost): once more in a while. */
        o->retry = rlk_ae_timer_add(ac, RLK_A_RETRY_MS, aon_retry_fire, o);
        if (o->retry)
            return;
    }
    if (rc != RLK_OK)
        aon_end(o, rc == RLK_ERR_IO && o->ending ? o->ending : rc, "%s", errstr);
    else if (reply->type != REDIS_REPLY_INTEGER)
        aon_end(o, RLK_ERR_PROTOCOL, "%s replied an unexpected shape", o->pc->script);
    else if ((o->flags & RLK_A_ONCE_HELD) && reply->integer == 0)
        aon_end(o, RLK_ERR_NOT_OWNER, "the permit is not held (expired, released or never "
                "acquired)");
    else if ((o->flags & RLK_A_ONCE_LEADS) &&
             rlk_proto_read_proclaim(reply, &out) == RLK_PROTO_REFUSED)
        aon_end(o, out.err, "%s no longer leads in term %lld", o->v.owner, o->v.term);
    else if (o->busy && reply->integer > 0 && (o->wait_ms == 0 || o->ending))
        aon_end(o, RLK_ERR_BUSY, "%s", "");
    else if (o->busy && reply->integer > 0) {
        o->retry = rlk_ae_timer_add(ac, o->again ? 0 : RLK_A_KEEPALIVE_MS, aon_retry_fire, o);
        o->again = 0;
    } else {
        aon_quiet(o);
        rlk_ae_complete(o->h.r, RLK_OK, (o->flags & RLK_A_ONCE_LEADS) ? o->v.term
                        : (o->flags & RLK_A_ONCE_BOOL) ? reply->integer == 1 : reply->integer,
                        NULL, NULL);
    }
}

static void aon_call(aon *o)
{
    rlk_ae_timer_del(o->retry);
    o->retry = NULL;
    o->call = rlk_a_kind_call(o->h.ac, o->pc, o->name, &o->v, o->tail, aon_reply, o);
    if (!o->call)
        aon_end(o, rlk_ae_closing(o->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, "%s",
                rlk_ae_closing(o->h.ac) ? "client freed" : "out of memory");
}

rlk_async_req *rlk_a_once_start(rlk_async *ac, const char *who, const char *what, int mkind,
                                const char *name, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r;
    aon *o;

    if (!(o = RLK_A_NEW(ac, aon, fn, privdata)))
        return NULL;
    r = o->h.r;
    snprintf(o->what, sizeof o->what, "%s", what);
    if (mkind >= 0)
        rlk_ae_req_metric(r, mkind, name);
    if (rlk_a_common_begin(r, aon_cancel_hook, aon_free_state, who, name))
        return r;
    if (!(o->name = strdup(name)))
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "%s: out of memory", who);
    return r;
}

rlk_async_req *rlk_a_once_new(rlk_async *ac, const char *what, const char *name,
                              rlk_async_fn fn, void *privdata)
{
    char who[64];

    snprintf(who, sizeof who, "rlk_async %s", what);
    return rlk_a_once_start(ac, who, what, -1, name, fn, privdata);
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
    o->v.owner = o->v.value = NULL;
    o->v.id = NULL;
    if ((vals->owner && !(o->v.owner = strdup(vals->owner))) ||
        (vals->value && !(o->v.value = strdup(vals->value))) ||
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

int rlk_a_once_await(rlk_async_req *r, const rlk_proto_call *pc, const char *channel,
                     long long wait_ms, const char *busy)
{
    aon *o = rlk_ae_req_state(r);

    o->pc = pc;
    o->flags = RLK_A_ONCE_BOOL | RLK_A_ONCE_REPEAT | RLK_A_ONCE_CANCEL;
    o->busy = busy;
    o->wait_ms = wait_ms;
    /* Listen before the read that finds it closed: its confirmation reads again. */
    if (!(o->channel = strdup(channel)) ||
        (wait_ms != 0 && rlk_a_common_listen(o->h.ac, o->channel, wait_ms, aon_msg,
                                             aon_deadline_fire, o, &o->sub, &o->deadline)))
        return -1;
    aon_call(o);
    return 0;
}
