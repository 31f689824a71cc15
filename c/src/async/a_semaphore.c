/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_semaphore.c - rlk_async_semaphore_acquire (rlk_async.h; its release is
 * a_admin.c's) through the engine (engine.h), on the blocking API's scripts and protocol
 * (kinds/semaphore.c): a string key `name` holds the available permits;
 * semaphore/acquire takes them when enough are there that no other
 * waiter's reservation holds, and otherwise queues the waiter's ticket in
 * {name}:rlk_waiters, with the blocking waiters (docs/runtime.md, "The
 * semaphores' queue"); semaphore/release gives them back, reserves them for
 * the first waiter and grants it on its client's wake channel
 * redisson_sc:{name}:rlk:<cid>, then publishes the new count on
 * redisson_sc:{name}. A waiter listens on its wake channel (a grant naming
 * its ticket: attempt again), on redisson_sc:{name} too while it is first in
 * the queue, and re-checks at least every second (a keepalive). That part
 * of the waiter, shared with a_psemaphore.c, is a_semq.c's.
 *
 * Lost replies: an acquire is not repeated when its reply was lost (it may
 * have taken the permits, and repeating it could take them twice): the
 * request ends RLK_ERR_UNSETTLED, as the blocking call does not ride such
 * an outage out either; its ticket leaves the queue (semaphore/cancel), as
 * the ticket of a request that ends without permits does. A cancel that
 * finds the permits taken meanwhile gives them back (semaphore/release)
 * before the request ends RLK_ERR_CANCELLED. docs/async-internals.md
 * describes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "kinds/names.h"
#include "kinds/semaphore.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "async/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_semq.h"

#define ASM_RETRY_MS 20             /* after a call that never went out */

typedef struct asm_req {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    rlk_a_semq q;                   /* the queue, the call in flight, the end (a_semq.h) */
    const char *name;               /* q.name */
    long long n;
} asm_req;

static void asm_free_state(rlk_async_req *r, void *state)
{
    asm_req *a = state;

    (void)r;
    rlk_a_semq_free(&a->q);
}

/* How long a call that never went out is tried again: the wait, then two
 * command timeouts and a connect (a wait without bound: always). */
static long long asm_budget(const asm_req *a)
{
    return rlk_a_common_budget(a->h.ac, a->q.wait_ms);
}

static void asm_undo(asm_req *a);

static void asm_undo_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                           int lost, void *arg)
{
    asm_req *a = arg;

    (void)reply;
    a->q.call = NULL;
    if (rc == RLK_OK) {
        a->q.cw = RLK_A_SEMQ_NONE;
        rlk_ae_complete(a->h.r, RLK_ERR_CANCELLED, 0, NULL, "cancelled");
        return;
    }
    if (rc == RLK_ERR_IO && !lost && !rlk_ae_closing(ac) && rlk_a_common_elapsed(&a->h) <= asm_budget(a)) {
        asm_undo(a);    /* never written: once more */
        return;
    }
    a->q.cw = RLK_A_SEMQ_NONE;
    rlk_ae_complete(a->h.r, RLK_ERR_UNSETTLED, 0, NULL,
                    "semaphore %s: cancelled after %lld permit(s) were taken; giving them back "
                    "failed%s: %s", a->name, a->n, lost ? " (reply lost: it may have run)" : "",
                    errstr);
}

/* The permits were taken, but the request was cancelled: give them back. */
static void asm_undo(asm_req *a)
{
    rlk_proto_argvals v = {.n = a->n};

    rlk_a_semq_quiet(&a->q);
    a->q.call = rlk_a_kind_call(a->h.ac, &rlk_semaphore_release_call, a->name, &v, NULL,
                                asm_undo_reply, a);
    a->q.cw = a->q.call ? RLK_A_SEMQ_UNDO : RLK_A_SEMQ_NONE;
    if (!a->q.call)
        rlk_ae_complete(a->h.r, RLK_ERR_UNSETTLED, 0, NULL,
                        "semaphore %s: cancelled after %lld permit(s) were taken; could not give "
                        "them back (%s)", a->name, a->n,
                        rlk_ae_closing(a->h.ac) ? "client freed" : "out of memory");
}

static void asm_acquire_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                              int lost, void *arg)
{
    asm_req *a = arg;
    rlk_proto_outcome o;

    (void)ac;
    a->q.call = NULL;
    a->q.cw = RLK_A_SEMQ_NONE;
    if (rc == RLK_ERR_IO && lost) {
        if (a->q.ticket)
            a->q.queued = 1;    /* it may have run */
        rlk_a_semq_finish(&a->q, RLK_ERR_UNSETTLED,
                          "semaphore %s: the acquire's reply was lost and %lld permit(s) may have "
                          "been taken (not repeated: it could take them twice): %s", a->name,
                          a->n, errstr);
        return;
    }
    if (rc == RLK_ERR_IO && a->q.ending) {
        rlk_a_semq_end(&a->q, a->q.ending);         /* never written: nothing taken */
        return;
    }
    if (rc == RLK_ERR_IO && rlk_a_common_elapsed(&a->h) <= asm_budget(a)) {
        rlk_a_semq_retry(&a->q, ASM_RETRY_MS);      /* never written: once more in a while */
        return;
    }
    if (rc != RLK_OK) {
        rlk_a_semq_finish(&a->q, rc, "semaphore %s: %s", a->name, errstr);
        return;
    }
    if (rlk_proto_read_sem(reply, &o) == RLK_PROTO_ACQUIRED) {
        a->q.queued = 0;
        if (a->q.ending == RLK_ERR_CANCELLED) {
            asm_undo(a);        /* cancelled while they were on their way: given back */
            return;
        }
        rlk_a_semq_quiet(&a->q);
        rlk_ae_complete(a->h.r, RLK_OK, 0, NULL, NULL);
    } else if (o.is == RLK_PROTO_BUSY)
        rlk_a_semq_busy(&a->q, o.value, o.first);
    else
        rlk_a_semq_finish(&a->q, RLK_ERR_PROTOCOL, "semaphore %s: %s replied an unexpected shape",
                          a->name, rlk_semaphore_acquire_call.script);
}

/* rlk_a_semq_attempt_fn: semaphore/acquire with the queue's ticket argument. */
static void asm_attempt(void *kind)
{
    asm_req *a = kind;
    rlk_proto_argvals v = {.n = a->n, .ticket = rlk_a_semq_arg(&a->q)};

    rlk_a_semq_retry_stop(&a->q);
    a->q.call = rlk_a_kind_call(a->h.ac, &rlk_semaphore_acquire_call, a->name, &v, NULL,
                                asm_acquire_reply, a);
    if (a->q.call) {
        a->q.cw = RLK_A_SEMQ_ATTEMPT;
        return;
    }
    rlk_a_semq_quiet(&a->q);
    rlk_ae_complete(a->h.r, rlk_ae_closing(a->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, 0, NULL,
                    "semaphore %s: %s", a->name,
                    rlk_ae_closing(a->h.ac) ? "client freed" : "out of memory");
}

static void asm_cancel_hook(rlk_async_req *r, void *state)
{
    asm_req *a = state;

    (void)r;
    rlk_a_semq_cancel(&a->q);
}

rlk_async_req *rlk_async_semaphore_acquire(rlk_async *ac, const char *name, long long permits,
                                           long long wait_ms, rlk_async_fn fn, void *privdata)
{
    char busy[256];
    rlk_async_req *r;
    asm_req *a;

    if (!(a = RLK_A_NEW(ac, asm_req, fn, privdata)))
        return NULL;
    r = a->h.r;
    a->n = permits;
    rlk_ae_req_metric(r, RLK_MKIND_SEMAPHORE, name);
    if (rlk_a_common_begin(r, asm_cancel_hook, asm_free_state, "rlk_async_semaphore_acquire", name))
        return r;
    if (rlk_a_common_range(r, "rlk_async_semaphore_acquire", name, "permits", permits, 1,
                           RLK_NUM_MAX) ||
        rlk_a_common_range(r, "rlk_async_semaphore_acquire", name, "wait_ms", wait_ms, -1,
                           RLK_NUM_MAX))
        return r;
    snprintf(busy, sizeof busy, "semaphore %s: %lld permit(s) not available", name, permits);
    if (rlk_a_semq_init(&a->q, &a->h, name, permits, wait_ms, busy, asm_attempt, a) != 0) {
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async_semaphore_acquire %s: out of "
                        "memory", name);
        return r;
    }
    a->name = a->q.name;
    /* Listen (on the wake channel, where grants come) before the attempt that fails: its
     * confirmation attempts again. */
    if (rlk_a_semq_listen(&a->q)) {
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async_semaphore_acquire %s: out of "
                        "memory", name);
        return r;
    }
    asm_attempt(a);     /* the first try: the uncontended path needs no subscription */
    return r;
}
