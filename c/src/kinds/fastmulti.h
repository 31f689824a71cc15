/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastmulti.h - what the faster MultiLock (fastmulti.c) shares with the
 * non-blocking API's row of it (async/a_kind.c, async/a_lock.c): the check
 * of a value list, the watchdog's task and the rule that settles a lost
 * reply.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_FASTMULTI_H
#define RLK_KINDS_FASTMULTI_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "runtime/wd.h"

#define RLK_FASTMULTI_VALUE_MAX 1024
#define RLK_FASTMULTI_VALUES_MAX 100000

/* 0 when values[0..n) is a list the scripts accept: 1..100000 values, each
 * 1..1024 bytes without ':', none twice; else -1 and why (for "<call>
 * <group>: " + why) in buf. */
int rlk_fastmulti_values_check(const char *const *values, size_t n, char *buf, size_t len);

/* The watchdog's task: fastmulti/renew (group; lease, owner), one call per
 * (group, owner): every live value the owner has in the group. */
extern const rlk_renew_task rlk_fastmulti_renew_task;

/* A lost reply, settled (both APIs): after the connection the call went out
 * on is fenced (it has run or never will), r is the reply of HMGET group
 * values... (the values' holders) and known the owner's count of
 * acquisitions in the group before the call. The count the call left:
 *   acquire (release 0): every value owner's and known 0: it ran (1); a
 *     value not owner's: it did not (known);
 *   release (1): a value not owner's: it ran (known - 1, at least 0); every
 *     value owner's and known <= 1: it did not (known; a release that ran
 *     would have freed them).
 * -1: cannot tell: an acquire whose values were the owner's already (known
 * > 0: they may have been before the call), a release of values counted
 * more than once, or r not an HMGET reply. */
long long rlk_fastmulti_lost_count(const redisReply *r, const char *owner, long long known,
                                   int release);

#endif /* RLK_KINDS_FASTMULTI_H */
