/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * expiry.h - a time to live on an object's keys, Redisson's RExpirable
 * (expire(Duration), clearExpire(), remainTimeToLive()), for the kinds that
 * have one: the semaphore, the permit-expirable semaphore and (rlk's own)
 * the count-down latch, each on its <kind>/expire, <kind>/clear_expire and
 * <kind>/ttl scripts, which the public calls of semaphore.c,
 * psemaphore_admin.c and latch.c forward to.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_EXPIRY_H
#define RLK_EXPIRY_H

#include "rlk.h"
#include "runtime/fam.h"

/* The three calls of a kind's public T_expire, T_clear_expire and T_ttl on
 * the handle whose base is b (NULL: a bad handle, RLK_ERR_ARG). key2, when
 * not NULL, is a second key after the name. *set and *cleared (may be NULL)
 * are 0 on every error, a bad handle's too. */

/* script (<kind>/expire) on keys with ttl_ms (1..10^12, else RLK_ERR_ARG)
 * and, when publishes, the client's publish argument after it; *set: 1 when
 * a key got the TTL, 0 when none exists. Replicas as rlk_fam_acks_done. */
int rlk_expiry_set(const rlk_fam_base *b, const char *script, const char *key2, int publishes,
                   long long ttl_ms, int *set);
/* script (<kind>/clear_expire) on keys; *cleared: 1 when a key had a TTL. */
int rlk_expiry_clear(const rlk_fam_base *b, const char *script, const char *key2, int *cleared);
/* script (<kind>/ttl) on the name: *ttl_ms the time to live left in ms, -1
 * none, -2 no key (ttl_ms NULL: RLK_ERR_ARG). */
int rlk_expiry_ttl(const rlk_fam_base *b, const char *script, long long *ttl_ms);

#endif /* RLK_EXPIRY_H */
