/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * expiry.c - a time to live on an object's keys (expiry.h): the three calls
 * of Redisson's RExpirable that the semaphores and the latch offer, on
 * their <kind>/expire, <kind>/clear_expire and <kind>/ttl scripts.
 */
#include <stdio.h>

#include "client/client.h"
#include "kinds/expiry.h"
#include "runtime/fam.h"

int rlk_expiry_set(const rlk_fam_base *b, const char *script, const char *key2, int publishes,
                   long long ttl_ms, int *set)
{
    char ttl[24];
    const char *args[2] = {ttl, NULL}, *keys[2] = {NULL, key2};
    long long n = 0;
    int rc;

    if (set)
        *set = 0;
    if (!b)
        return RLK_ERR_ARG;
    rc = rlk_fam_check_range(b->c, "expire", b->name, "ttl_ms", ttl_ms, 1, RLK_NUM_MAX);
    if (rc != RLK_OK)
        return rc;
    keys[0] = b->name;
    snprintf(ttl, sizeof ttl, "%lld", ttl_ms);
    if (publishes)
        args[1] = rlk_publish_arg(b->c);
    rc = rlk_fam_eval_int(b->c, script, key2 ? 2 : 1, keys, publishes ? 2 : 1, args, NULL, &n);
    if (rc != RLK_OK)
        return rc;
    if (set)
        *set = n == 1;
    return rlk_fam_acks_done(b->c, "expire", b->name, "done");
}

int rlk_expiry_clear(const rlk_fam_base *b, const char *script, const char *key2, int *cleared)
{
    const char *keys[2] = {NULL, key2};
    long long n = 0;
    int rc;

    if (cleared)
        *cleared = 0;
    if (!b)
        return RLK_ERR_ARG;
    keys[0] = b->name;
    rc = rlk_fam_eval_int(b->c, script, key2 ? 2 : 1, keys, 0, NULL, NULL, &n);
    if (rc != RLK_OK)
        return rc;
    if (cleared)
        *cleared = n == 1;
    return rlk_fam_acks_done(b->c, "clear_expire", b->name, "done");
}

int rlk_expiry_ttl(const rlk_fam_base *b, const char *script, long long *ttl_ms)
{
    const char *keys[1];

    if (!b || !ttl_ms)
        return RLK_ERR_ARG;
    keys[0] = b->name;
    return rlk_fam_eval_int(b->c, script, 1, keys, 0, NULL, NULL, ttl_ms);
}
