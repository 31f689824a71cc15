/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_lockreq.c - one request of the lock kinds (a_lockreq.h): its making
 * and argument checks, its keys and script calls by its row, its message,
 * its end and its free. What it does with replies is a_lock.c's.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/scripts.h"
#include "runtime/rt.h"
#include "async/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_lockreq.h"

static rlk_ae_call *alk_send(rlk_a_lockreq *a, const char *script, const char *argnames,
                             long long lease, long long ticket, rlk_ae_reply_fn fn)
{
    const char *keys[RLK_PROTO_KEYS];
    rlk_proto_argvals vals = {.lease_ms = lease, .owner = a->owner, .ticket = ticket,
                              .publish = rlk_ae_publish_arg(a->h.ac), .value = a->value,
                              .delay_ms = a->delay_ms, .secret = rlk_async_uuid(a->h.ac)};
    rlk_proto_argv av;
    int nk = rlk_proto_keys_list(&a->keys, rlk_script_key_roles(script), keys, RLK_PROTO_KEYS);
    int na = rlk_proto_args(argnames, &vals, &av), no;
    const char **v;
    rlk_ae_call *call;

    /* The row's optional keys after the header's (not the cancel's: it takes none). */
    if (nk >= 0 && a->k->opt_keys && script != a->k->cancel) {
        no = rlk_proto_keys_list(&a->keys, a->k->opt_keys, keys + nk, RLK_PROTO_KEYS - nk);
        nk = no < 0 ? -1 : nk + no;
    }
    if (nk < 0 || na < 0)
        return NULL;
    if (!a->values)
        return rlk_ae_scriptv(a->h.ac, script, nk, keys, na, av.v, NULL, fn, a);
    /* RLK_PROTO_VALUES: the values after the named arguments. */
    call = (v = rlk_a_common_join(av.v, na, a->values, &na)) != NULL
           ? rlk_ae_scriptv(a->h.ac, script, nk, keys, na, v, NULL, fn, a) : NULL;
    free(v);
    return call;
}

int rlk_a_lockreq_send(rlk_a_lockreq *a, int cw, const char *script, const char *argnames,
                       long long lease, long long ticket, rlk_ae_reply_fn fn)
{
    a->call = alk_send(a, script, argnames, lease, ticket, fn);
    a->cw = a->call ? cw : CW_NONE;
    return a->call ? 0 : -1;
}

static void alk_vset_msg(rlk_a_lockreq *a, const char *fmt, va_list ap)
{
    char buf[512];

    vsnprintf(buf, sizeof buf, fmt, ap);
    free(a->end_msg);
    a->end_msg = strdup(buf);
    a->end_msg_oom = a->end_msg == NULL;
}

void rlk_a_lockreq_set_msg(rlk_a_lockreq *a, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    alk_vset_msg(a, fmt, ap);
    va_end(ap);
}

const char *rlk_a_lockreq_msg_str(const rlk_a_lockreq *a)
{
    return a->end_msg ? a->end_msg : a->end_msg_oom ? "out of memory" : "";
}

void rlk_a_lockreq_quiet(rlk_a_lockreq *a)
{
    rlk_a_common_quiet(&a->retry, &a->deadline, &a->s_wake);
    rlk_ae_unsubscribe(a->s_wide);
    a->s_wide = NULL;
}

void rlk_a_lockreq_call_back(rlk_a_lockreq *a)
{
    a->call = NULL;
    a->cw = CW_NONE;
}

static void alk_free_state(rlk_async_req *r, void *state)
{
    rlk_a_lockreq *a = state;

    (void)r;
    rlk_a_lockreq_quiet(a);
    rlk_ae_call_forget(a->call);
    rlk_a_common_free(7, a->end_msg, a->name, a->owner, a->value, a->wake, a->own, a->values);
    rlk_proto_keys_free(&a->keys);
}

long long rlk_a_lockreq_budget(const rlk_a_lockreq *a)
{
    return rlk_a_common_budget(a->h.ac, a->op == ALK_LOCK ? a->wait_ms : 0);
}

static void alk_cancel_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                             int lost, void *arg)
{
    rlk_a_lockreq *a = arg;

    rlk_a_unused(5, ac, rc, reply, errstr, lost);
    rlk_a_lockreq_call_back(a);
    /* Best effort, as the blocking API: a waiter that cannot say so is skipped
     * when its reservation's claim window runs out. */
    rlk_ae_complete(a->h.r, a->end_err, 0, NULL, "%s", rlk_a_lockreq_msg_str(a));
}

void rlk_a_lockreq_end(rlk_a_lockreq *a, int err, const char *fmt, ...)
{
    va_list ap;

    rlk_a_lockreq_quiet(a);
    va_start(ap, fmt);
    alk_vset_msg(a, fmt, ap);
    va_end(ap);
    a->end_err = err;
    if (a->queued && a->k->cancel && (a->k->wait == RLK_PROTO_WAIT_FAIR || a->ticket) &&
        !rlk_ae_closing(a->h.ac)) {
        if (rlk_a_lockreq_send(a, CW_CANCEL, a->k->cancel, a->k->cancel_args, 0, a->ticket,
                               alk_cancel_reply) == 0)
            return;
    }
    rlk_ae_complete(a->h.r, err, 0, NULL, "%s", rlk_a_lockreq_msg_str(a));
}

void rlk_a_lockreq_end_busy(rlk_a_lockreq *a)
{
    if (a->ending == RLK_ERR_CANCELLED)
        rlk_a_lockreq_end(a, RLK_ERR_CANCELLED, "cancelled");
    else
        rlk_a_lockreq_end(a, RLK_ERR_BUSY, "%s %s: held by another holder%s after %lld ms", a->k->what,
                a->name, a->delay_ms > 0 ? " (or in the lock-delay of one that lost it)" : "",
                rlk_a_common_elapsed(&a->h));
}

int rlk_a_lockreq_replied(rlk_a_lockreq *a, int rc, const char *errstr)
{
    rlk_a_lockreq_call_back(a);
    if (rc != RLK_ERR_CLOSED)
        return 0;
    rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", errstr);
    return 1;
}

static void alk_cancel_hook(rlk_async_req *r, void *state)
{
    rlk_a_lockreq *a = state;

    (void)r;
    if (a->op != ALK_LOCK)
        return;     /* an unlock is on its way: its result stands */
    a->ending = RLK_ERR_CANCELLED;
    if (a->call)
        return;     /* the call in flight decides (a grant is given back) */
    rlk_a_lockreq_end(a, RLK_ERR_CANCELLED, "cancelled");
}

void rlk_a_lockreq_bind(rlk_a_lockreq *a, const rlk_proto *k)
{
    a->k = k;
    rlk_proto_keys_free(&a->keys);
    rlk_proto_keys_init(&a->keys, k->names, a->name);
}

rlk_a_lockreq *rlk_a_lockreq_new(rlk_async *ac, int op, const rlk_proto *k, const char *who,
                                 const char *name, unsigned long long task, rlk_async_fn fn,
                                 void *privdata)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_a_lockreq *a;

    if (!(a = RLK_A_NEW(ac, rlk_a_lockreq, fn, privdata)))
        return NULL;
    a->op = op;
    a->task = task;
    a->k = k ? k : rlk_a_kind_row(RLK_KIND_LOCK);
    if (rlk_a_common_begin(a->h.r, alk_cancel_hook, alk_free_state, who, name))
        return a;
    if (!k) {
        rlk_ae_complete(a->h.r, RLK_ERR_ARG, 0, NULL, "%s %s: unknown kind", who, name);
        return a;
    }
    rlk_ae_owner(ac, task, owner, sizeof owner);
    if (!(a->name = strdup(name)) || !(a->owner = strdup(owner))) {
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s %s: out of memory", who, name);
        return a;
    }
    rlk_a_lockreq_bind(a, k);
    return a;
}
