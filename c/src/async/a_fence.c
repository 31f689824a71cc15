/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_fence.c - rlk_async_fence_write (rlk_async.h): a fenced write on data in
 * Redis as a request, on the blocking call's checks, script and refusal
 * (kinds/fence.h) through the engine's script call (engine.h): routed by the
 * fence key's slot on a cluster, a READONLY of a demoted master sent again
 * to the master the sentinels name (ae_call.c), as rlk_fence_write's pool
 * does. A call that never went out is sent again within the request's budget;
 * a reply that was lost is not: the write may have run, and the request ends
 * RLK_ERR_IO, as the blocking call returns it (never accepted, never
 * refused). The outcome is counted (runtime/metrics.h, rlk_metrics_fence)
 * as the blocking call counts it.
 *
 * rlk_async_fence_claim: fence/check on each fence in turn (rlk_fence_claim
 * as a request). A check is idempotent, so a lost reply is sent again within
 * the budget; a refusal ends the claim with RLK_ERR_FENCED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/error.h"
#include "kinds/fence.h"
#include "runtime/metrics.h"
#include "async/engine.h"
#include "async/a_common.h"

#define AFE_RETRY_MS 20     /* after a call that never went out */

typedef struct afe {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    rlk_ae_call *call;              /* the write in flight, or NULL */
    rlk_ae_timer *retry;            /* the next send of a write that never went out, or NULL */
    rlk_fence_call fc;              /* the script, keys and arguments (kinds/fence.h) */
    char *fence, *data;             /* the keys, copied: fc.keys point here */
    char **args;                    /* the caller's arguments, copied: fc.argv[1..] point here */
    int nargs;
    rlk_async_fence_fn fn;
    void *privdata;
    redisReply *reply;              /* the accepted write's reply, kept for the callback */
} afe;

static void afe_free_state(rlk_async_req *r, void *state)
{
    afe *a = state;

    (void)r;
    if (a->reply)
        freeReplyObject(a->reply);
    rlk_ae_call_forget(a->call);
    rlk_ae_timer_del(a->retry);
    rlk_fence_call_free(&a->fc);
    for (int i = 0; a->args && i < a->nargs; i++)
        free(a->args[i]);
    free(a->args);
    free(a->fence);
    free(a->data);
}

/* A write once sent decides: a cancel does not end the request early. */
static void afe_cancel_hook(rlk_async_req *r, void *state)
{
    (void)r;
    (void)state;
}

/* The request's own callback: the caller's, with the write's reply. */
static void afe_deliver(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    afe *a = privdata;

    a->fn(ac, r, r->err == RLK_OK ? a->reply : NULL, a->privdata);
}

/* A copy of r (freeReplyObject frees it), or NULL: out of memory. */
static redisReply *afe_copy(const redisReply *r)
{
    redisReply *c = calloc(1, sizeof *c);

    if (!c)
        return NULL;
    c->type = r->type;
    c->integer = r->integer;
    if (r->str) {
        c->len = r->len;
        if (!(c->str = malloc(r->len + 1))) {
            free(c);
            return NULL;
        }
        memcpy(c->str, r->str, r->len);
        c->str[r->len] = '\0';
    }
    if (r->element && r->elements > 0) {
        if (!(c->element = calloc(r->elements, sizeof *c->element))) {
            freeReplyObject(c);
            return NULL;
        }
        c->elements = r->elements;
        for (size_t i = 0; i < r->elements; i++)
            if (!(c->element[i] = afe_copy(r->element[i]))) {
                freeReplyObject(c);
                return NULL;
            }
    }
    return c;
}

/* Ends the request with rc, counted as the blocking call counts it. */
static void afe_end(afe *a, int rc, long long value, const char *msg)
{
    rlk_metrics_fence(rlk_ae_counters(a->h.ac), a->fence, rc);
    if (rc == RLK_OK)
        rlk_ae_complete(a->h.r, RLK_OK, 0, NULL, NULL);
    else
        rlk_ae_complete(a->h.r, rc, value, NULL, "%s", msg);
}

/* Sends the write: first, and again from its retry timer (arg: the request's state). */
static void afe_send(rlk_async *ac, void *arg);

static void afe_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg)
{
    afe *a = arg;
    char msg[RLK_ERRSTR_MAX];
    uint64_t highest = 0;

    a->call = NULL;
    if (rc == RLK_ERR_IO && lost) {
        snprintf(msg, sizeof msg, "%s %s: the reply was lost and the write may have run (it is "
                 "not repeated; repeat only what is idempotent): %s", a->fc.script, a->fence,
                 errstr);
        afe_end(a, RLK_ERR_IO, 0, msg);
        return;
    }
    if (rc == RLK_ERR_IO && !rlk_ae_closing(ac) &&
        rlk_ae_now_ms() - a->h.start <= rlk_a_common_budget(ac, 0) &&
        (a->retry = rlk_ae_timer_add(ac, AFE_RETRY_MS, afe_send, a)) != NULL)
        return;     /* never written: once more in a while */
    if (rc == RLK_ERR_SCRIPT && rlk_fence_stale(&a->fc, errstr, &highest, msg, sizeof msg)) {
        afe_end(a, RLK_ERR_FENCED, (long long)highest, msg);
        return;
    }
    if (rc != RLK_OK) {
        afe_end(a, rc, 0, errstr ? errstr : rlk_strerror(rc));
        return;
    }
    if (!(a->reply = afe_copy(reply))) {
        /* The write ran: say so, though its reply could not be kept. */
        rlk_metrics_fence(rlk_ae_counters(a->h.ac), a->fence, RLK_OK);
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s %s: accepted, but out of memory for "
                        "its reply", a->fc.script, a->fence);
        return;
    }
    afe_end(a, RLK_OK, 0, NULL);
}

/* Sends fc's script for request r, fn(arg) to get its reply; the call, or NULL with r completed
 * (the client freed, or out of memory). Both the write and the claim send so. */
static rlk_ae_call *afe_send_call(rlk_async *ac, rlk_async_req *r, const rlk_fence_call *fc,
                                  const char *fence, rlk_ae_reply_fn fn, void *arg)
{
    int closing = rlk_ae_closing(ac);
    rlk_ae_call *call = rlk_ae_scriptv(ac, fc->script, fc->nkeys, fc->keys, fc->nargs, fc->argv,
                                       fc->lens, fn, arg);

    if (!call)
        rlk_ae_complete(r, closing ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, 0, NULL, "%s %s: %s",
                        fc->script, fence, closing ? "client freed" : "out of memory");
    return call;
}

static void afe_send(rlk_async *ac, void *arg)
{
    afe *a = arg;

    a->retry = NULL;
    a->call = afe_send_call(ac, a->h.r, &a->fc, a->fence, afe_reply, a);
}

/* Copies the caller's keys and arguments into a and points fc at them. 0, or
 * -1: out of memory. */
static int afe_keep(afe *a, const char *fence, const char *data, int nargs,
                    const char *const *args, const size_t *arglens)
{
    if (!(a->fence = strdup(fence)) || (data && !(a->data = strdup(data))))
        return -1;
    a->fc.keys[0] = a->fence;
    a->fc.keys[1] = a->data;
    if (nargs > 0 && !(a->args = calloc((size_t)nargs, sizeof *a->args)))
        return -1;
    a->nargs = nargs;
    for (int i = 0; i < nargs; i++) {
        size_t len = arglens ? arglens[i] : strlen(args[i]);

        if (!(a->args[i] = malloc(len + 1)))
            return -1;
        memcpy(a->args[i], args[i], len);
        a->args[i][len] = '\0';
        a->fc.argv[i + 1] = a->args[i];
    }
    return 0;
}

rlk_async_req *rlk_async_fence_write(rlk_async *ac, const char *op, const char *fence,
                                     const char *data, uint64_t token, int nargs,
                                     const char *const *args, const size_t *arglens,
                                     rlk_async_fence_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_fence_write";
    char msg[RLK_ERRSTR_MAX];
    afe *a;
    int rc;

    if (!fn || !(a = RLK_A_NEW(ac, afe, afe_deliver, NULL)))
        return NULL;
    a->fn = fn;
    a->privdata = privdata;
    rlk_ae_req_set_privdata(a->h.r, a);
    if (rlk_a_common_begin(a->h.r, afe_cancel_hook, afe_free_state, NULL, NULL))
        return a->h.r;
    rc = rlk_fence_call_make(&a->fc, who, op, fence, data, token, nargs, args, arglens, msg,
                             sizeof msg);
    if (rc != RLK_OK) {
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", msg);
        return a->h.r;
    }
    if (afe_keep(a, fence, data, nargs, args, arglens) != 0) {
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s: out of memory", who);
        return a->h.r;
    }
    afe_send(ac, a);
    return a->h.r;
}

/* ---------------------------------------------------------------- claim */

typedef struct afc {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    rlk_ae_call *call;              /* the check in flight, or NULL */
    rlk_ae_timer *retry;            /* the next send of a check that went wrong, or NULL */
    rlk_fence_call fc;              /* the check of fences[next] */
    uint64_t token;
    char **fences;                  /* copied */
    int nfences, next;
} afc;

static void afc_free_state(rlk_async_req *r, void *state)
{
    afc *a = state;

    (void)r;
    rlk_ae_call_forget(a->call);
    rlk_ae_timer_del(a->retry);
    rlk_fence_call_free(&a->fc);
    for (int i = 0; a->fences && i < a->nfences; i++)
        free(a->fences[i]);
    free(a->fences);
}

static void afc_send(rlk_async *ac, void *arg);

/* The check of fences[next] into a->fc, and sent. */
static void afc_next(rlk_async *ac, afc *a)
{
    char msg[RLK_ERRSTR_MAX];
    int rc;

    rlk_fence_call_free(&a->fc);
    rc = rlk_fence_call_make(&a->fc, "rlk_async_fence_claim", "check", a->fences[a->next], NULL,
                             a->token, 0, NULL, NULL, msg, sizeof msg);
    if (rc != RLK_OK) {
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", msg);
        return;
    }
    afc_send(ac, a);
}

static void afc_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg)
{
    afc *a = arg;
    char msg[RLK_ERRSTR_MAX];
    uint64_t highest = 0;

    (void)reply;
    (void)lost;
    a->call = NULL;
    if (rc == RLK_ERR_IO && !rlk_ae_closing(ac) &&
        rlk_ae_now_ms() - a->h.start <= rlk_a_common_budget(ac, 0) &&
        (a->retry = rlk_ae_timer_add(ac, AFE_RETRY_MS, afc_send, a)) != NULL)
        return;     /* never written, or lost: a check may run twice */
    if (rc == RLK_ERR_SCRIPT && rlk_fence_stale(&a->fc, errstr, &highest, msg, sizeof msg))
        rc = RLK_ERR_FENCED;
    rlk_metrics_fence(rlk_ae_counters(ac), a->fences[a->next], rc);
    if (rc == RLK_ERR_FENCED) {
        rlk_ae_complete(a->h.r, rc, (long long)highest, NULL, "%s", msg);
        return;
    }
    if (rc != RLK_OK) {
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", errstr ? errstr : rlk_strerror(rc));
        return;
    }
    if (++a->next < a->nfences)
        afc_next(ac, a);
    else
        rlk_ae_complete(a->h.r, RLK_OK, (long long)a->token, NULL, NULL);
}

static void afc_send(rlk_async *ac, void *arg)
{
    afc *a = arg;

    a->retry = NULL;
    a->call = afe_send_call(ac, a->h.r, &a->fc, a->fences[a->next], afc_reply, a);
}

rlk_async_req *rlk_async_fence_claim(rlk_async *ac, uint64_t token, int nfences,
                                     const char *const *fences, rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_fence_claim";
    char msg[RLK_ERRSTR_MAX];
    afc *a;
    int rc;

    if (!fn || !(a = RLK_A_NEW(ac, afc, fn, privdata)))
        return NULL;
    if (rlk_a_common_begin(a->h.r, afe_cancel_hook, afc_free_state, NULL, NULL))
        return a->h.r;
    if ((rc = rlk_fence_claim_args(who, token, nfences, fences, msg, sizeof msg)) != RLK_OK) {
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", msg);
        return a->h.r;
    }
    a->token = token;
    if (!(a->fences = calloc((size_t)nfences, sizeof *a->fences))) {
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s: out of memory", who);
        return a->h.r;
    }
    a->nfences = nfences;
    for (int i = 0; i < nfences; i++)
        if (!(a->fences[i] = strdup(fences[i]))) {
            rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s: out of memory", who);
            return a->h.r;
        }
    afc_next(ac, a);
    return a->h.r;
}
