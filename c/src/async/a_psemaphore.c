/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_psemaphore.c - rlk_async_psemaphore_acquire / _release (rlk_async.h)
 * through the engine (engine.h), on the blocking API's scripts, keys,
 * channel and queue (kinds/psemaphore.c): psemaphore/acquire with one new
 * 16-byte random id (stored raw, given to the caller as 32 hex digits),
 * psemaphore/release by id. One permit per request, always with a lease
 * (no keeper). A waiter queues with the blocking waiters and the async
 * semaphore's (a_semq.h); besides the wake-ups of the queue, the earliest
 * held permit's expiry (which publishes nothing; the first waiter is told
 * when: {-1, ms}) makes it attempt again.
 *
 * What follows an attempt's reply is the machine's (kinds/acq.h rlk_acq_sem,
 * a_semq.c interprets it), as for the blocking call: a lost reply is read
 * back by the id (psemaphore/lease_time), and a retry reuses the id (and
 * passes -ticket: the lost call may have queued it), so RLK_HELD (an id held
 * already) then proves the lost call ran: acquired. docs/async-internals.md
 * describes it.
 */

#include "client/client.h"
#include "client/random.h"
#include "kinds/psemaphore.h"
#include "engine/engine.h"
#include "async/a_common.h"
#include "async/a_semq.h"

typedef struct aps {
    rlk_a_semq q;                   /* the first member: the request, its queue, the call in
                                       flight, the end (a_semq.h) */
    unsigned char raw[RLK_PSEM_RAW_ID_MAX];
    size_t rawlen;
    char hex[RLK_PERMIT_ID_SIZE];
    int io_failed;                  /* a release's reply was lost: it may have run */
} aps;

static void aps_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr, int lost,
                      void *arg);

/* ---------------------------------------------------------------- the calls */

/* psemaphore/release of the request's id; one that could not be queued ends the request (the
 * client is being freed, or out of memory). */
static void aps_release(aps *a)
{
    rlk_proto_argvals v = {.id = a->raw, .idlen = a->rawlen};

    if (rlk_a_semq_send(&a->q, &rlk_psem_release_call, &v, RLK_A_SEMQ_REL, aps_reply))
        rlk_a_semq_finish(&a->q, rlk_ae_closing(a->q.h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, "%s",
                          rlk_ae_closing(a->q.h.ac) ? "the async client was freed"
                                                    : "out of memory");
}

/* A release's reply (nothing to quiet: it never waits): no reply (never written, or lost),
 * the same release again within the budget. */
static void aps_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr, int lost,
                      void *arg)
{
    aps *a = arg;

    (void)ac;
    a->q.w.call = NULL;
    a->q.cw = RLK_A_SEMQ_NONE;
    if (rlk_ae_req_done(a->q.h.r))
        return;
    if (rc == RLK_ERR_IO && lost)
        a->io_failed = 1;
    if (rc == RLK_ERR_CLOSED || (rc == RLK_ERR_IO && !rlk_a_semq_in_budget(&a->q)))
        rlk_a_semq_finish(&a->q, rc == RLK_ERR_IO && a->io_failed ? RLK_ERR_UNSETTLED : rc, "%s",
                          errstr);
    else if (rc == RLK_ERR_IO)
        aps_release(a);
    else if (rc != RLK_OK)
        rlk_a_semq_finish(&a->q, rc, "%s", errstr);
    else if (r->type != REDIS_REPLY_INTEGER)
        rlk_a_semq_finish(&a->q, RLK_ERR_PROTOCOL, "release %s: psemaphore/release replied type "
                          "%d", a->q.name, r->type);
    else if (r->integer >= 1 || a->io_failed)
        /* After a lost reply, 0 means the lost call released it (or it had expired):
         * the permit is not held either way; value 0 says which could not be told. */
        rlk_ae_complete(a->q.h.r, RLK_OK, r->integer >= 1 ? 1 : 0, NULL, NULL);
    else
        rlk_ae_complete(a->q.h.r, RLK_ERR_NOT_OWNER, 0, NULL, "release %s: the permit was not "
                        "held (expired, released already or never acquired)", a->q.name);
}

/* ---------------------------------------------------------------- the requests */

/* A request of the semaphore name for the public call who whose state is set up: 0, or 1
 * when it is completed. */
static int aps_begin(aps *a, const char *who, const char *name, long long wait_ms)
{
    if (rlk_a_semq_begin(&a->q, who, name))
        return 1;
    a->q.release = &rlk_psem_release_call;
    a->q.result = a->hex;
    a->q.id = a->raw;
    return rlk_a_semq_init(&a->q, who, name, 1, wait_ms, "acquire", &rlk_psem_acquire_call, 1);
}

rlk_async_req *rlk_async_psemaphore_acquire(rlk_async *ac, const char *name, long long wait_ms,
                                            long long lease_ms, rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_psemaphore_acquire";
    aps *a = RLK_A_SEMQ_NEW(ac, aps, fn, privdata);

    if (!a || aps_begin(a, who, name, wait_ms))
        return a ? a->q.h.r : NULL;
    rlk_ae_req_metric(a->q.h.r, RLK_MKIND_PSEMAPHORE, name);
    if (rlk_a_common_range(a->q.h.r, who, name, "wait_ms", wait_ms, -1, RLK_NUM_MAX) ||
        rlk_a_common_range(a->q.h.r, who, name, "lease_ms", lease_ms, 1, RLK_NUM_MAX))
        return a->q.h.r;
    a->rawlen = RLK_PSEM_NEW_ID_BYTES;
    if (rlk_random_bytes(a->raw, a->rawlen) != 0) {
        rlk_ae_complete(a->q.h.r, RLK_ERR_IO, 0, NULL,
                        "%s %s: no random source for permit ids", who, name);
        return a->q.h.r;
    }
    rlk_hex(a->hex, a->raw, a->rawlen);
    a->q.idlen = a->rawlen;
    a->q.lease_ms = lease_ms;
    rlk_a_semq_start(&a->q, who);
    return a->q.h.r;
}

rlk_async_req *rlk_async_psemaphore_release(rlk_async *ac, const char *name, const char *id,
                                            rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_psemaphore_release";
    aps *a = RLK_A_SEMQ_NEW(ac, aps, fn, privdata);
    char msg[RLK_ERRSTR_MAX];

    if (!a || aps_begin(a, who, name, 0))
        return a ? a->q.h.r : NULL;
    if (rlk_psem_parse_id(who, name, id, a->raw, &a->rawlen, msg,
                          sizeof msg) != RLK_OK) {
        rlk_ae_complete(a->q.h.r, RLK_ERR_ARG, 0, NULL, "%s", msg);
        return a->q.h.r;
    }
    aps_release(a);
    return a->q.h.r;
}
