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

#include "kinds/semaphore.h"
#include "runtime/fam.h"
#include "engine/engine.h"
#include "async/a_common.h"
#include "async/a_semq.h"

rlk_async_req *rlk_async_semaphore_acquire(rlk_async *ac, const char *name, long long permits,
                                           long long wait_ms, rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_semaphore_acquire";
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
    q->release = &rlk_semaphore_release_call;
    if (rlk_a_semq_init(q, who, name, permits, wait_ms, "semaphore", &rlk_semaphore_acquire_call,
                        0) == 0)
        rlk_a_semq_start(q, who);
    return r;
}
