/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_semaphore.c - rlk_async_semaphore_acquire (rlk_async.h; its release is
 * a_admin.c's) through the engine (engine.h), on the blocking API's scripts
 * and protocol (kinds/semaphore.c: the permits, the waiter queue and its
 * grants); the waiter's side of the queue, shared with a_psemaphore.c, is
 * a_semq.c's.
 *
 * What follows an attempt's reply is the machine's (kinds/acq.h rlk_acq_sem,
 * a_semq.c interprets it). Lost replies: an acquire is not repeated when its
 * reply was lost (it may have taken the permits, and repeating it could take
 * them twice): the request ends RLK_ERR_UNSETTLED, as the blocking call's
 * does; its ticket leaves the queue (semaphore/cancel), as
 * the ticket of a request that ends without permits does. A cancel that
 * finds the permits taken meanwhile gives them back (semaphore/release)
 * before the request ends RLK_ERR_CANCELLED. docs/async-internals.md
 * describes it.
 */
#include <stdio.h>

#include "kinds/semaphore.h"
#include "runtime/fam.h"
#include "engine/engine.h"
#include "async/a_common.h"
#include "async/a_semq.h"

static void asm_undo(rlk_a_semq *q);

static void asm_undo_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                           int lost, void *arg)
{
    rlk_a_semq *q = arg;

    (void)reply;
    q->w.call = NULL;
    if (rc == RLK_OK) {
        q->cw = RLK_A_SEMQ_NONE;
        rlk_ae_complete(q->h.r, RLK_ERR_CANCELLED, 0, NULL, "cancelled");
        return;
    }
    if (rc == RLK_ERR_IO && !lost && !rlk_ae_closing(ac) && rlk_a_semq_in_budget(q)) {
        asm_undo(q);    /* never written: once more */
        return;
    }
    q->cw = RLK_A_SEMQ_NONE;
    rlk_ae_complete(q->h.r, RLK_ERR_UNSETTLED, 0, NULL,
                    "semaphore %s: cancelled after %lld permit(s) were taken; giving them back "
                    "failed%s: %s", q->name, q->permits,
                    lost ? " (reply lost: it may have run)" : "", errstr);
}

/* The permits were taken, but the request was cancelled: give them back. */
static void asm_undo(rlk_a_semq *q)
{
    rlk_proto_argvals v = {.n = q->permits};

    rlk_a_wait_quiet(&q->w);
    if (rlk_a_semq_send(q, &rlk_semaphore_release_call, &v, RLK_A_SEMQ_UNDO, asm_undo_reply))
        rlk_ae_complete(q->h.r, RLK_ERR_UNSETTLED, 0, NULL,
                        "semaphore %s: cancelled after %lld permit(s) were taken; could not give "
                        "them back (%s)", q->name, q->permits,
                        rlk_ae_closing(q->h.ac) ? "client freed" : "out of memory");
}

/* The permits are the request's (the machine's RECORD). */
static void asm_taken(rlk_a_semq *q)
{
    if (rlk_a_semq_acquired(q))
        asm_undo(q);        /* cancelled while they were on their way: given back */
    else
        rlk_ae_complete(q->h.r, RLK_OK, 0, NULL, NULL);
}

/* The waiter's attempt (rlk_a_wait_fn): semaphore/acquire with the queue's ticket argument. */
static void asm_attempt(void *arg)
{
    rlk_a_semq *q = arg;
    rlk_proto_argvals v = {.n = q->permits, .ticket = rlk_a_semq_arg(q)};

    if (!rlk_a_semq_send(q, &rlk_semaphore_acquire_call, &v, RLK_A_SEMQ_ATTEMPT,
                         rlk_a_semq_reply))
        return;
    rlk_a_wait_quiet(&q->w);
    rlk_a_common_unsent(q->h.r, "semaphore", q->name);
}

rlk_async_req *rlk_async_semaphore_acquire(rlk_async *ac, const char *name, long long permits,
                                           long long wait_ms, rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_semaphore_acquire";
    char busy[256];
    rlk_async_req *r;
    rlk_a_semq *q;

    if (!(q = RLK_A_NEW(ac, rlk_a_semq, fn, privdata)))
        return NULL;
    r = q->h.r;
    rlk_ae_req_metric(r, RLK_MKIND_SEMAPHORE, name);
    if (rlk_a_semq_begin(q, who, name) ||
        rlk_a_common_range(r, who, name, "permits", permits, 1, RLK_NUM_MAX) ||
        rlk_a_common_range(r, who, name, "wait_ms", wait_ms, -1, RLK_NUM_MAX))
        return r;
    snprintf(busy, sizeof busy, "semaphore %s: %lld permit(s) not available", name, permits);
    q->taken = asm_taken;
    if (rlk_a_semq_init(q, who, name, permits, wait_ms, busy, asm_attempt,
                        rlk_semaphore_acquire_call.script, 0) == 0)
        rlk_a_semq_start(q, who);
    return r;
}
