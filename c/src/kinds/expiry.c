/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * expiry.c - a time to live on an object's keys (expiry.h): the three calls
 * of Redisson's RExpirable that the semaphores and the latch offer, on
 * their <kind>/expire, <kind>/clear_expire and <kind>/ttl scripts.
 */
#include "kinds/expiry.h"
#include "kinds/handle.h"
#include "runtime/fam.h"

const rlk_proto_call rlk_expiry_calls[RLK_EXPIRY_KINDS][RLK_EXPIRY_CALLS] = {
    {{"semaphore/expire", "ttl"}, {"semaphore/clear_expire", ""}, {"semaphore/ttl", ""}},
    {{"psemaphore/expire", "ttl"}, {"psemaphore/clear_expire", ""}, {"psemaphore/ttl", ""}},
    {{"latch/expire", "ttl publish"}, {"latch/clear_expire", ""}, {"latch/ttl", ""}},
};

#define RLK_EXPIRY_CALL(kind, call) (&rlk_expiry_calls[(kind) - RLK_MKIND_SEMAPHORE][call])

int rlk_expiry_set(const rlk_fam_base *b, int kind, long long ttl_ms, int *set)
{
    rlk_proto_argvals v = {.ttl_ms = ttl_ms};
    long long n = 0;
    int rc = b ? rlk_handle_write(b, "expire", "ttl_ms", ttl_ms, 1,
                                  RLK_EXPIRY_CALL(kind, RLK_EXPIRY_SET), &v, &n) : RLK_ERR_ARG;

    if (set)
        *set = n == 1;
    return rc;
}

int rlk_expiry_clear(const rlk_fam_base *b, int kind, int *cleared)
{
    long long n = 0;
    int rc = b ? rlk_handle_write(b, "clear_expire", NULL, 0, 0,
                                  RLK_EXPIRY_CALL(kind, RLK_EXPIRY_CLEAR), NULL, &n) : RLK_ERR_ARG;

    if (cleared)
        *cleared = n == 1;
    return rc;
}

int rlk_expiry_ttl(const rlk_fam_base *b, int kind, long long *ttl_ms)
{
    if (!b || !ttl_ms)
        return RLK_ERR_ARG;
    return rlk_handle_int(b, RLK_EXPIRY_CALL(kind, RLK_EXPIRY_TTL), NULL, ttl_ms);
}
