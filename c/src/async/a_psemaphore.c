/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_psemaphore.c - rlk_async_psemaphore_acquire / _release (rlk_async.h)
 * through the engine (engine.h), on the blocking API's scripts, keys,
 * channel and queue (kinds/psemaphore.c): the count `name`, the permits'
 * sorted set {name}:timeout, psemaphore/acquire with one new 16-byte random
 * id (stored raw, given to the caller as 32 hex digits), psemaphore/release
 * by id. One permit per request, always with a lease (no keeper).
 *
 * A waiter queues in {name}:rlk_waiters with the blocking waiters and the
 * async semaphore's (a_semq.h, as a_semaphore.c): a fast try with ticket 0,
 * then a ticket, attempted with once its client's wake channel is
 * subscribed; a grant naming its ticket, the semaphore's channel
 * redisson_sc:{name} while it is first, the earliest held permit's expiry
 * (which publishes nothing; the first waiter is told when: {-1, ms}) and a
 * 1 s keepalive make it attempt again; semaphore/cancel takes its ticket
 * out of the queue when it ends without a permit.
 *
 * A retry after a lost reply reuses the id (and passes -ticket: the lost
 * call may have queued it), so "is held already" then proves the lost call
 * ran: acquired. docs/async-internals.md describes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/random.h"
#include "client/scripts.h"
#include "kinds/names.h"
#include "kinds/psemaphore.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "async/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_semq.h"

enum { APS_ACQUIRE, APS_RELEASE };

typedef struct aps {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    int op;
    rlk_a_semq q;                   /* the queue, the call in flight, the end (a_semq.h) */
    const char *name;               /* q.name */
    unsigned char raw[RLK_PSEM_RAW_ID_MAX];
    size_t rawlen;
    char hex[RLK_PERMIT_ID_SIZE];
    long long lease_ms;
    int io_failed;                  /* a call's reply was lost: it may have run */
} aps;

static void aps_free_state(rlk_async_req *r, void *state)
{
    aps *a = state;

    (void)r;
    rlk_a_semq_free(&a->q);
}

/* How long a request rides out lost replies and reconnects. */
static long long aps_budget(const aps *a)
{
    return rlk_a_common_budget(a->h.ac, a->op == APS_ACQUIRE ? a->q.wait_ms : 0);
}

static void aps_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg);

/* Ends the request with err (never RLK_OK) and msg (NULL: err's text):
 * rlk_a_semq_finish. */
static void aps_end(aps *a, int err, const char *msg)
{
    rlk_a_semq_finish(&a->q, err, "%s", msg ? msg : rlk_strerror(err));
}

/* ---------------------------------------------------------------- the calls */

/* A call just made (a->call) for cw: NULL, it could not be queued, and the
 * request ends (the client is being freed, or out of memory). */
static void aps_sent(aps *a, int cw)
{
    a->q.cw = a->q.call ? cw : RLK_A_SEMQ_NONE;
    if (!a->q.call)
        aps_end(a, rlk_ae_closing(a->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM,
                rlk_ae_closing(a->h.ac) ? "the async client was freed" : "out of memory");
}

/* psemaphore/release of this request's id (a release, or the undo of a
 * permit a cancelled request was granted). */
static void aps_release_send(aps *a, int cw)
{
    rlk_proto_argvals v = {.id = a->raw, .idlen = a->rawlen};

    a->q.call = rlk_a_kind_call(a->h.ac, &rlk_psem_release_call, a->name, &v, NULL, aps_reply,
                                a);
    aps_sent(a, cw);
}

/* rlk_a_semq_attempt_fn: psemaphore/acquire of the request's id with the
 * queue's ticket argument. */
static void aps_attempt(void *kind)
{
    aps *a = kind;
    rlk_proto_argvals v = {.lease_ms = a->lease_ms, .ticket = rlk_a_semq_arg(&a->q),
                           .id = a->raw, .idlen = a->rawlen};

    rlk_a_semq_retry_stop(&a->q);
    a->q.again = 0;
    a->q.call = rlk_a_kind_call(a->h.ac, &rlk_psem_acquire_call, a->name, &v, NULL, aps_reply, a);
    aps_sent(a, RLK_A_SEMQ_ATTEMPT);
}

/* The permit is the request's (its ticket left the queue with it). */
static void aps_acquired(aps *a)
{
    a->q.queued = 0;
    rlk_a_semq_quiet(&a->q);
    if (a->q.ending == RLK_ERR_CANCELLED) {
        aps_release_send(a, RLK_A_SEMQ_UNDO);  /* cancelled meanwhile: give it back first */
        return;
    }
    rlk_ae_complete(a->h.r, RLK_OK, 0, a->hex, NULL);
}

static void aps_acq_reply(aps *a, int rc, const redisReply *r, const char *errstr)
{
    rlk_proto_outcome o;

    if (rc == RLK_ERR_SCRIPT && a->io_failed && strstr(errstr, "is held already")) {
        aps_acquired(a);
        return;
    }
    if (rc != RLK_OK) {
        aps_end(a, rc, errstr);
        return;
    }
    /* Not acquired. {-1, ms}: first in the queue, ms until the earliest held permit expires
     * (which publishes nothing: attempt then, +1 ms as it falls on a whole ms; -1: none
     * expires by itself); -3: first behind another's reservation; nil: queued behind
     * others (or a single try, nothing expiring); an integer: a single try's ms to expiry. */
    if (rlk_proto_read_psem(r, 1, &o) == RLK_PROTO_ACQUIRED)
        aps_acquired(a);
    else if (o.is == RLK_PROTO_BUSY && (o.first || o.value == -3 || r->type == REDIS_REPLY_NIL))
        rlk_a_semq_busy(&a->q, o.first && o.value >= 0 ? o.value + 1 : o.value, o.first);
    else if (o.is == RLK_PROTO_BUSY)
        rlk_a_semq_busy(&a->q, (o.value > 0 ? o.value : 0) + 1, 0);
    else {
        char msg[128];

        snprintf(msg, sizeof msg, "acquire %s: %s replied type %d", a->name,
                 rlk_psem_acquire_call.script, r->type);
        aps_end(a, RLK_ERR_PROTOCOL, msg);
    }
}

static void aps_rel_reply(aps *a, int cw, int rc, const redisReply *r, const char *errstr)
{
    if (rc != RLK_OK) {
        aps_end(a, rc, errstr);
        return;
    }
    if (r->type != REDIS_REPLY_INTEGER) {
        char msg[128];

        snprintf(msg, sizeof msg, "release %s: psemaphore/release replied type %d", a->name,
                 r->type);
        aps_end(a, RLK_ERR_PROTOCOL, msg);
        return;
    }
    if (cw == RLK_A_SEMQ_UNDO) {
        aps_end(a, RLK_ERR_CANCELLED, "cancelled");
        return;
    }
    rlk_a_semq_quiet(&a->q);
    if (r->integer >= 1 || a->io_failed) {
        /* After a lost reply, 0 means the lost call released it (or it had expired):
         * the permit is not held either way; value 0 says which could not be told. */
        rlk_ae_complete(a->h.r, RLK_OK, r->integer >= 1 ? 1 : 0, NULL, NULL);
        return;
    }
    rlk_ae_complete(a->h.r, RLK_ERR_NOT_OWNER, 0, NULL, "release %s: the permit was not held "
                    "(expired, released already or never acquired)", a->name);
}

static void aps_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg)
{
    aps *a = arg;
    int cw = a->q.cw;

    (void)ac;
    a->q.call = NULL;
    a->q.cw = RLK_A_SEMQ_NONE;
    if (rlk_ae_req_done(a->h.r))
        return;
    /* No reply (never written, or lost): the same call again within the budget. */
    if (rc == RLK_ERR_IO && lost) {
        a->io_failed = 1;
        if (cw == RLK_A_SEMQ_ATTEMPT && a->q.ticket)
            a->q.queued = 1;    /* it may have queued the ticket: -ticket from now on */
    }
    if (rc == RLK_ERR_CLOSED || (rc == RLK_ERR_IO && rlk_a_common_elapsed(&a->h) > aps_budget(a)))
        aps_end(a, rc == RLK_ERR_IO && a->io_failed ? RLK_ERR_UNSETTLED : rc, errstr);
    else if (rc == RLK_ERR_IO && cw == RLK_A_SEMQ_ATTEMPT)
        aps_attempt(a);     /* the same id: a lost call that ran says "is held already" */
    else if (rc == RLK_ERR_IO)
        aps_release_send(a, cw);
    else if (cw == RLK_A_SEMQ_ATTEMPT)
        aps_acq_reply(a, rc, reply, errstr);
    else
        aps_rel_reply(a, cw, rc, reply, errstr);
}

/* ---------------------------------------------------------------- wake-ups, deadline, cancel */

static void aps_cancel_hook(rlk_async_req *r, void *state)
{
    aps *a = state;

    (void)r;
    if (a->op == APS_ACQUIRE)   /* a release: on its way */
        rlk_a_semq_cancel(&a->q);
}

/* ---------------------------------------------------------------- the requests */

static aps *aps_new(rlk_async *ac, int op, const char *name, long long wait_ms, rlk_async_fn fn,
                    void *privdata)
{
    char busy[256];
    aps *a;

    if (!(a = RLK_A_NEW(ac, aps, fn, privdata)))
        return NULL;
    a->op = op;
    if (rlk_a_common_begin(a->h.r, aps_cancel_hook, aps_free_state, "rlk_async psemaphore", name))
        return a;
    snprintf(busy, sizeof busy, "acquire %s: no permit available", name);
    if (rlk_a_semq_init(&a->q, &a->h, name, 1, wait_ms, busy, aps_attempt, a) != 0)
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "rlk_async psemaphore %s: out of memory",
                        name);
    a->name = a->q.name;
    return a;
}

rlk_async_req *rlk_async_psemaphore_acquire(rlk_async *ac, const char *name, long long wait_ms,
                                            long long lease_ms, rlk_async_fn fn, void *privdata)
{
    aps *a = aps_new(ac, APS_ACQUIRE, name, wait_ms, fn, privdata);

    if (!a || rlk_ae_req_done(a->h.r))
        return a ? a->h.r : NULL;
    rlk_ae_req_metric(a->h.r, RLK_MKIND_PSEMAPHORE, name);
    if (rlk_a_common_range(a->h.r, "rlk_async_psemaphore_acquire", name, "wait_ms", wait_ms, -1,
                           RLK_NUM_MAX) ||
        rlk_a_common_range(a->h.r, "rlk_async_psemaphore_acquire", name, "lease_ms", lease_ms, 1,
                           RLK_NUM_MAX))
        return a->h.r;
    a->rawlen = RLK_PSEM_NEW_ID_BYTES;
    if (rlk_random_bytes(a->raw, a->rawlen) != 0) {
        rlk_ae_complete(a->h.r, RLK_ERR_IO, 0, NULL,
                        "rlk_async_psemaphore_acquire %s: no random source for permit ids", name);
        return a->h.r;
    }
    rlk_psem_hex(a->raw, a->rawlen, a->hex);
    a->lease_ms = lease_ms;
    /* Listen (on the wake channel, where grants come) before the attempt that fails: its
     * confirmation attempts again. */
    if (rlk_a_semq_listen(&a->q)) {
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL,
                        "rlk_async_psemaphore_acquire %s: out of memory", name);
        return a->h.r;
    }
    aps_attempt(a);     /* the first try: the uncontended path needs no subscription */
    return a->h.r;
}

rlk_async_req *rlk_async_psemaphore_release(rlk_async *ac, const char *name, const char *id,
                                            rlk_async_fn fn, void *privdata)
{
    aps *a = aps_new(ac, APS_RELEASE, name, 0, fn, privdata);
    char msg[RLK_ERRSTR_MAX];

    if (!a || rlk_ae_req_done(a->h.r))
        return a ? a->h.r : NULL;
    if (rlk_psem_parse_id("rlk_async_psemaphore_release", name, id, a->raw, &a->rawlen, msg,
                          sizeof msg) != RLK_OK) {
        rlk_ae_complete(a->h.r, RLK_ERR_ARG, 0, NULL, "%s", msg);
        return a->h.r;
    }
    aps_release_send(a, RLK_A_SEMQ_REL);
    return a->h.r;
}
