/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * expiry.h - a time to live on an object's keys, Redisson's RExpirable
 * (expire(Duration), clearExpire(), remainTimeToLive()), for the kinds that
 * have one: the semaphore, the permit-expirable semaphore and (rlk's own)
 * the count-down latch, each on its <kind>/expire, <kind>/clear_expire and
 * <kind>/ttl scripts. Used by semaphore.c, psemaphore.c and latch.c.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_EXPIRY_H
#define RLK_EXPIRY_H

#include "runtime/fam.h"

/* <kind>/expire on keys with ttl_ms (1..10^12, else RLK_ERR_ARG) and, when
 * publishes, the client's publish argument after it; *set (may be NULL):
 * 1 when a key got the TTL, 0 when none exists. Replicas as
 * rlk_fam_acks_done. */
int rlk_expiry_set(const rlk_fam_base *b, const char *script, int nkeys, const char *const *keys,
                   int publishes, long long ttl_ms, int *set);
/* <kind>/clear_expire on keys; *cleared (may be NULL): 1 when a key had a
 * TTL. */
int rlk_expiry_clear(const rlk_fam_base *b, const char *script, int nkeys,
                     const char *const *keys, int *cleared);
/* <kind>/ttl on key: *ttl_ms the time to live left in ms, -1 none, -2 no
 * key. */
int rlk_expiry_ttl(const rlk_fam_base *b, const char *script, const char *key, long long *ttl_ms);

#endif /* RLK_EXPIRY_H */
