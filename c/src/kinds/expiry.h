/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * expiry.h - a time to live on an object's keys, Redisson's RExpirable
 * (expire(Duration), clearExpire(), remainTimeToLive()), for the kinds that
 * have one: the semaphore, the permit-expirable semaphore and (rlk's own)
 * the count-down latch, each on its <kind>/expire, <kind>/clear_expire and
 * <kind>/ttl scripts, which the public calls of semaphore.c,
 * psemaphore.c and latch.c forward to, and the async ones
 * (async/a_admin.c) send.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_EXPIRY_H
#define RLK_EXPIRY_H

#include "kinds/proto.h"
#include "runtime/fam.h"

/* The three calls of each kind (kinds/proto.h calls; their KEYS the
 * scripts' roles: the name, the permit-expirable semaphore's
 * {name}:timeout too, the latch's expire its channel), by kind
 * (RLK_MKIND_SEMAPHORE, _PSEMAPHORE, _LATCH, less RLK_MKIND_SEMAPHORE) and
 * RLK_EXPIRY_*. expire takes ttl_ms; the latch's publishes (an armed
 * latch's channel learns of it). */
enum { RLK_EXPIRY_SET, RLK_EXPIRY_CLEAR, RLK_EXPIRY_TTL, RLK_EXPIRY_CALLS };
#define RLK_EXPIRY_KINDS 3
extern const rlk_proto_call rlk_expiry_calls[RLK_EXPIRY_KINDS][RLK_EXPIRY_CALLS];

/* The three calls of a kind's public T_expire, T_clear_expire and T_ttl on
 * the handle whose base is b (NULL: a bad handle, RLK_ERR_ARG), kind an
 * RLK_MKIND_* of the table. *set and *cleared (may be NULL) are 0 on every
 * error, a bad handle's too. */

/* expire with ttl_ms (1..10^12, else RLK_ERR_ARG); *set: 1 when a key got
 * the TTL, 0 when none exists. Replicas as rlk_fam_acks_done. */
int rlk_expiry_set(const rlk_fam_base *b, int kind, long long ttl_ms, int *set);
/* clear_expire; *cleared: 1 when a key had a TTL. */
int rlk_expiry_clear(const rlk_fam_base *b, int kind, int *cleared);
/* ttl on the name: *ttl_ms the time to live left in ms, -1 none, -2 no key
 * (ttl_ms NULL: RLK_ERR_ARG). */
int rlk_expiry_ttl(const rlk_fam_base *b, int kind, long long *ttl_ms);

#endif /* RLK_EXPIRY_H */
