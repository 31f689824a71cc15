/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_fence.c - rlk_async_fence_write (rlk_async.h): a fenced write on data in
 * Redis as a request, on the blocking call's checks, script and refusal
 * (kinds/fence.h), sent as any script call of the engine. A call that never
 * went out is sent again within the request's budget; a reply that was lost
 * is not: the write may have run, and the request ends RLK_ERR_IO, as the
 * blocking call returns it (never accepted, never refused). The outcome is
 * counted as the blocking call counts it (rlk_metrics_fence).
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
#include "engine/metrics.h"
#include "engine/engine.h"
#include "async/a_common.h"

/* A fenced write, or a claim: the check of each of its fences in turn. */
typedef struct afe {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    rlk_ae_call *call;              /* the call in flight, or NULL */
    rlk_ae_timer *retry;            /* the next send of a call that never went out, or NULL */
    rlk_fence_call fc;              /* the write, or the check of fences[next] (kinds/fence.h) */
    char **fences;                  /* claim: the fences, copied; NULL for a write */
    int nfences, next;
    uint64_t token;                 /* claim: its token */
    rlk_async_fence_fn fn;          /* write: the caller's callback, and its privdata */
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
    for (int i = 0; a->fences && i < a->nfences; i++)
        free(a->fences[i]);
    free(a->fences);
}

/* A write once sent decides: a cancel does not end the request early. */
static void afe_cancel_hook(rlk_async_req *r, void *state)
{
    rlk_a_unused(2, r, state);
}

/* The write's own callback: the caller's, with the write's reply. */
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

/* Sends fc's script: first, and again from its retry timer (arg: the request's state). */
static void afe_send(rlk_async *ac, void *arg);

/* A claim: the check of fences[next] into a->fc, and sent. */
static void afe_next_check(rlk_async *ac, afe *a)
{
    char msg[RLK_ERRSTR_MAX];
    int rc;

    rlk_fence_call_free(&a->fc);
    rc = rlk_fence_call_make(&a->fc, "rlk_async_fence_claim", "check", a->fences[a->next], NULL,
                             a->token, 0, NULL, NULL, msg, sizeof msg);
    if (rc != RLK_OK)
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", msg);
    else
        afe_send(ac, a);
}

static void afe_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg)
{
    afe *a = arg;
    char msg[RLK_ERRSTR_MAX];
    uint64_t highest = 0;

    a->call = NULL;
    if (rc == RLK_ERR_IO && lost && !a->fences)
        snprintf(msg, sizeof msg, "%s %s: the reply was lost and the write may have run (it is "
                 "not repeated; repeat only what is idempotent): %s", a->fc.script,
                 a->fc.keys[0], errstr);
    else if (rc == RLK_ERR_IO && !rlk_ae_closing(ac) &&
             rlk_a_common_elapsed(&a->h) <= rlk_a_common_budget(ac, 0) &&
             (a->retry = rlk_ae_timer_add(ac, RLK_A_RETRY_MS, afe_send, a)) != NULL)
        return;     /* never written (or a claim's check, lost: a check may run twice) */
    else if (rc == RLK_ERR_SCRIPT && rlk_fence_stale(&a->fc, errstr, &highest, msg, sizeof msg))
        rc = RLK_ERR_FENCED;
    else if (rc != RLK_OK)
        snprintf(msg, sizeof msg, "%s", errstr ? errstr : rlk_strerror(rc));
    /* Counted as the blocking call counts it. */
    rlk_metrics_fence(rlk_ae_counters(ac), a->fc.keys[0], rc);
    if (rc != RLK_OK)
        rlk_ae_complete(a->h.r, rc, (long long)highest, NULL, "%s", msg);
    else if (a->fences && ++a->next < a->nfences)
        afe_next_check(ac, a);
    else if (!a->fences && !(a->reply = afe_copy(reply)))  /* the write ran: said so */
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s %s: accepted, but out of memory for "
                        "its reply", a->fc.script, a->fc.keys[0]);
    else
        rlk_ae_complete(a->h.r, RLK_OK, a->fences ? (long long)a->token : 0, NULL, NULL);
}

static void afe_send(rlk_async *ac, void *arg)
{
    afe *a = arg;

    a->retry = NULL;
    a->call = rlk_ae_scriptv(ac, a->fc.script, a->fc.nkeys, a->fc.keys, a->fc.nargs, a->fc.argv,
                             a->fc.lens, afe_reply, a);
    if (!a->call)
        rlk_a_common_unsent(a->h.r, a->fc.script, a->fc.keys[0]);
}

rlk_async_req *rlk_async_fence_write(rlk_async *ac, const char *op, const char *fence,
                                     const char *data, uint64_t token, int nargs,
                                     const char *const *args, const size_t *arglens,
                                     rlk_async_fence_fn fn, void *privdata)
{
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
    rc = rlk_fence_call_make(&a->fc, "rlk_async_fence_write", op, fence, data, token, nargs, args,
                             arglens, msg, sizeof msg);
    if (rc != RLK_OK)
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", msg);
    else
        afe_send(ac, a);
    return a->h.r;
}

rlk_async_req *rlk_async_fence_claim(rlk_async *ac, uint64_t token, int nfences,
                                     const char *const *fences, rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_fence_claim";
    char msg[RLK_ERRSTR_MAX];
    afe *a;
    int rc;

    if (!fn || !(a = RLK_A_NEW(ac, afe, fn, privdata)))
        return NULL;
    if (rlk_a_common_begin(a->h.r, afe_cancel_hook, afe_free_state, NULL, NULL))
        return a->h.r;
    if ((rc = rlk_fence_claim_args(who, token, nfences, fences, msg, sizeof msg)) != RLK_OK) {
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", msg);
        return a->h.r;
    }
    a->token = token;
    a->fences = calloc((size_t)nfences, sizeof *a->fences);
    while (a->fences && a->nfences < nfences &&
           (a->fences[a->nfences] = strdup(fences[a->nfences])))
        a->nfences++;
    if (a->nfences < nfences)
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s: out of memory", who);
    else
        afe_next_check(ac, a);
    return a->h.r;
}
