/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * expiry.h - a time to live on an object's keys, Redisson's RExpirable
 * (expire(Duration), clearExpire(), remainTimeToLive()), for the kinds that
 * have one: the semaphore, the permit-expirable semaphore and (rlk's own)
 * the count-down latch, each on its <kind>/expire, <kind>/clear_expire and
 * <kind>/ttl scripts, and the public calls on them (RLK_EXPIRY_DEF). Used by
 * semaphore.c, psemaphore_admin.c and latch.c.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_EXPIRY_H
#define RLK_EXPIRY_H

#include "rlk.h"
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

/* A parenthesised list, unwrapped (RLK_EXPIRY_DEF's key lists). */
#define RLK_EXPIRY_LIST(...) __VA_ARGS__

/* The three public calls of kind T (rlk_latch: rlk_latch_expire,
 * rlk_latch_clear_expire, rlk_latch_ttl), defined once for every kind that
 * has them (kinds/handle.h says how such a macro is used): T_expire(h,
 * ttl_ms, set) on dir "/expire" with the KEYS expire_keys and, when
 * publishes, the publish command after the TTL; T_clear_expire(h, cleared)
 * on dir "/clear_expire" with the KEYS clear_keys; T_ttl(h, ttl_ms) on dir
 * "/ttl" with the name. The key lists are parenthesised expressions of the
 * handle h, read once h is known not to be NULL. *set and *cleared (may be
 * NULL) are 0 on every error, a NULL handle's too. */
#define RLK_EXPIRY_DEF(T, dir, expire_keys, publishes, clear_keys)                                \
    int T##_expire(T *h, long long ttl_ms, int *set)                                              \
    {                                                                                             \
        if (set)                                                                                  \
            *set = 0;                                                                             \
        if (!h)                                                                                   \
            return RLK_ERR_ARG;                                                                   \
        const char *keys[] = {RLK_EXPIRY_LIST expire_keys};                                       \
                                                                                                  \
        return rlk_expiry_set(&h->b, dir "/expire", (int)(sizeof keys / sizeof keys[0]), keys,    \
                              publishes, ttl_ms, set);                                            \
    }                                                                                             \
    int T##_clear_expire(T *h, int *cleared)                                                      \
    {                                                                                             \
        if (cleared)                                                                              \
            *cleared = 0;                                                                         \
        if (!h)                                                                                   \
            return RLK_ERR_ARG;                                                                   \
        const char *keys[] = {RLK_EXPIRY_LIST clear_keys};                                        \
                                                                                                  \
        return rlk_expiry_clear(&h->b, dir "/clear_expire", (int)(sizeof keys / sizeof keys[0]),  \
                                keys, cleared);                                                   \
    }                                                                                             \
    int T##_ttl(T *h, long long *ttl_ms)                                                          \
    {                                                                                             \
        if (!h || !ttl_ms)                                                                        \
            return RLK_ERR_ARG;                                                                   \
        return rlk_expiry_ttl(&h->b, dir "/ttl", h->b.name, ttl_ms);                              \
    }

#endif /* RLK_EXPIRY_H */
