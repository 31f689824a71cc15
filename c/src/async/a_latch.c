/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_latch.c - rlk_async_latch_await (rlk_async.h; count_down and
 * try_set_count are a_admin.c's) through the engine (engine.h), on the
 * blocking API's scripts and channel (kinds/latch.c: "0" when the count
 * reaches zero or the latch is deleted, "1" when it is armed).
 *
 * An awaiter (a_once.h) listens on that channel and reads the count
 * (latch/count) when subscribed, on every message and at least every
 * second (a keepalive); open (count <= 0) ends it RLK_OK. The engine hands
 * every message to every listener of the channel, so the blocking
 * subscriber's "pass the wake-up on" is not needed here. The read is
 * harmless to repeat: a lost reply is read again within the wait (a wait
 * without bound rides out any outage). docs/async-internals.md describes
 * it.
 */
#include <stdlib.h>

#include "kinds/latch.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "async/engine.h"
#include "async/a_common.h"
#include "async/a_once.h"

rlk_async_req *rlk_async_latch_await(rlk_async *ac, const char *name, long long timeout_ms,
                                     rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_latch_await";
    rlk_async_req *r = rlk_a_once_start(ac, who, "latch", RLK_MKIND_LATCH, name, fn, privdata);
    char *channel;

    if (!r || rlk_ae_req_done(r) ||
        rlk_a_common_range(r, who, name, "timeout_ms", timeout_ms, -1, RLK_NUM_MAX))
        return r;
    channel = rlk_fam_braced_name(RLK_NAMES_CH_LATCH, name);
    if (!channel || rlk_a_once_await(r, &rlk_latch_count_call, channel, timeout_ms,
                                     "count still above 0") != 0)
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "%s %s: out of memory", who, name);
    free(channel);
    return r;
}
