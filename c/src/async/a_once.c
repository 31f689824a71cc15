/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_once.c - one script call with an integer reply as a request, or an
 * awaiter that repeats it until its integer says open (a_once.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds/acq.h"
#include "engine/engine.h"
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
    rlk_a_wait w;                   /* the call in flight; its retry: the next call, after one
                                       that never went out, or an awaiter's next read; an
                                       awaiter's listener and deadline (a_common.h) */
    /* an awaiter's (rlk_a_once_await) */
    const char *busy;               /* what a wait that ran out says (static); NULL: no awaiter */
    long long wait_ms;              /* 0 for a request that is no awaiter */
} aon;

static void aon_free_state(rlk_async_req *r, void *state)
{
    aon *o = state;

    (void)r;
    rlk_a_wait_quiet(&o->w);
    rlk_ae_call_forget(o->w.call);
    rlk_a_common_free(5, o->name, o->tail, (void *)o->v.owner, (void *)o->v.value,
                      (void *)o->v.id);
}

static void aon_call(void *arg);

/* A call once sent decides: a cancel does not end the request early. An
 * awaiter (or RLK_A_ONCE_CANCEL) has nothing to undo: it ends now (a call
 * in flight is forgotten with the request). */
static void aon_cancel_hook(rlk_async_req *r, void *state)
{
    aon *o = state;

    (void)r;
    if (!(o->flags & RLK_A_ONCE_CANCEL))
        return;
    rlk_a_wait_quiet(&o->w);
    rlk_ae_complete(o->h.r, RLK_ERR_CANCELLED, 0, NULL, "cancelled");
}

/* Ends the request with err (not RLK_OK): "<what> <name>: " and the text
 * fmt formats; an awaiter's RLK_ERR_BUSY: its busy text "after <ms> ms". */
static void aon_end(aon *o, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void aon_end(aon *o, int err, const char *fmt, ...)
{
    char why[RLK_ERRSTR_MAX];
    rlk_acq_act x;
    va_list ap;

    rlk_a_wait_quiet(&o->w);
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (err == RLK_ERR_BUSY && o->busy) {
        rlk_acq_waited(o->what, o->name, o->busy, rlk_a_common_elapsed(&o->h), &x);
        rlk_ae_complete(o->h.r, err, 0, NULL, "%s", x.msg);
    } else
        rlk_ae_complete(o->h.r, err, 0, NULL, "%s %s: %s", o->what, o->name, why);
}

/* rlk_a_wait_fn: an awaiter's wait ran out. */
static void aon_timeout(void *arg)
{
    aon_end(arg, RLK_ERR_BUSY, "%s", "");
}

static void aon_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg)
{
    aon *o = arg;
    rlk_proto_outcome out;

    o->w.call = NULL;
    if (rlk_ae_req_done(o->h.r))
        return;     /* cancelled meanwhile (RLK_A_ONCE_CANCEL) */
    if (rc == RLK_ERR_IO && lost && (o->flags & RLK_A_ONCE_REPEAT))
        lost = 0;       /* a call that may run twice: asked again as if never sent */
    if (rc == RLK_ERR_IO && lost) {
        aon_end(o, RLK_ERR_UNSETTLED, "the reply was lost and the call may have run (it is not "
                "repeated: it must not run twice): %s", errstr);
        return;
    }
    if (rc == RLK_ERR_IO && !o->w.ending && (o->busy || !rlk_ae_closing(ac)) &&
        rlk_a_common_elapsed(&o->h) <= rlk_a_common_budget(ac, o->wait_ms)) {
        /* Never written (or a read's reply lost): once more in a while. */
        rlk_a_wait_retry(&o->w, RLK_A_RETRY_MS);
        if (o->w.retry)
            return;
    }
    if (rc != RLK_OK)
        aon_end(o, rc == RLK_ERR_IO && o->w.ending ? o->w.ending : rc, "%s", errstr);
    else if (reply->type != REDIS_REPLY_INTEGER)
        aon_end(o, RLK_ERR_PROTOCOL, "%s replied an unexpected shape", o->pc->script);
    else if ((o->flags & RLK_A_ONCE_HELD) && reply->integer == 0)
        aon_end(o, RLK_ERR_NOT_OWNER, "the permit is not held (expired, released or never "
                "acquired)");
    else if ((o->flags & RLK_A_ONCE_LEADS) &&
             rlk_proto_read_proclaim(reply, &out) == RLK_PROTO_REFUSED)
        aon_end(o, out.err, "%s no longer leads in term %lld", o->v.owner, o->v.term);
    else if (o->busy && reply->integer > 0 && (o->wait_ms == 0 || o->w.ending))
        aon_end(o, RLK_ERR_BUSY, "%s", "");
    else if (o->busy && reply->integer > 0)
        rlk_a_wait_retry(&o->w, rlk_a_wait_next(&o->w, -1, RLK_A_KEEPALIVE_MS));
    else {
        rlk_a_wait_quiet(&o->w);
        rlk_ae_complete(o->h.r, RLK_OK, (o->flags & RLK_A_ONCE_LEADS) ? o->v.term
                        : (o->flags & RLK_A_ONCE_BOOL) ? reply->integer == 1 : reply->integer,
                        NULL, NULL);
    }
}

/* Sends the call (rlk_a_wait_fn: an awaiter's read, on a wake-up too). */
static void aon_call(void *arg)
{
    aon *o = arg;

    rlk_ae_timer_del(o->w.retry);
    o->w.retry = NULL;
    o->w.call = rlk_a_kind_call(o->h.ac, o->pc, o->name, &o->v, o->tail, aon_reply, o);
    if (!o->w.call) {
        rlk_a_wait_quiet(&o->w);
        rlk_a_common_unsent(o->h.r, o->what, o->name);
    }
}

rlk_async_req *rlk_a_once_start(rlk_async *ac, const char *who, const char *what, int mkind,
                                const char *name, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r;
    aon *o;

    if (!(o = RLK_A_NEW(ac, aon, fn, privdata)))
        return NULL;
    r = o->h.r;
    rlk_a_wait_init(&o->w, &o->h, o, aon_call, aon_timeout);
    snprintf(o->what, sizeof o->what, "%s", what);
    if (mkind >= 0)
        rlk_ae_req_metric(r, mkind, name);
    if (rlk_a_common_begin(r, aon_cancel_hook, aon_free_state, who, name))
        return r;
    if (!(o->name = strdup(name)))
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "%s: out of memory", who);
    return r;
}

void rlk_a_once_call(rlk_async_req *r, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
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
        (vals->id && !(o->v.id = id = malloc(vals->idlen ? vals->idlen : 1)))) {
        aon_end(o, RLK_ERR_NOMEM, "out of memory");
        return;
    }
    if (id)
        memcpy(id, vals->id, vals->idlen);
    aon_call(o);
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
    if (wait_ms != 0 && rlk_a_wait_listen(&o->w, channel, wait_ms))
        return -1;
    aon_call(o);
    return 0;
}
