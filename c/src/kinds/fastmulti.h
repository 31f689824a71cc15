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

#include "kinds/proto.h"
#include "runtime/wd.h"

#define RLK_FASTMULTI_VALUE_MAX 1024
#define RLK_FASTMULTI_VALUES_MAX 100000

/* The watchdog's task: fastmulti/renew (group; lease, owner), one call per
 * (group, owner): every live value the owner has in the group. */
extern const rlk_renew_task rlk_fastmulti_renew_task;

/* A lost reply, settled (both APIs): after the connection the call went out
 * on is fenced (it has run or never will), r is the reply of
 * fastmulti/counts (owner's live lock_count of each value, 0 when owner
 * does not hold it live: free, lapsed or another's) and known the owner's
 * count of acquisitions in the group before the call (every value's count
 * was at most known then); exact when every one of those acquisitions took
 * all these values (each value's count was known: the blocking handle
 * knows it when it made them all). The count the call left:
 *   acquire (release 0): every value counted known + 1: it ran (known + 1;
 *     no value could reach that otherwise); a value at 0, or (exact) every
 *     value at known: it did not (known; had it run, the value would be
 *     owner's, unless it lapsed since and is free anyway);
 *   release (1): a value at 0, or (exact) every value at known - 1: it ran
 *     (known - 1, at least 0; a release that did not run finds a value at 0
 *     not held and changes nothing); every value at known: it did not
 *     (known; had it run, each would be one less).
 * -1: cannot tell: anything else (without exact, an acquire whose values
 * all count known may have run on values an earlier acquisition did not
 * take, and a release whose values count known - 1 may not have run), or
 * r not such a reply. */
long long rlk_fastmulti_lost_count(const redisReply *r, long long known, int exact, int release);

/* Its row (kinds/proto.h, RLK_PROTO_VALUES); its reads, ARGV ending with
 * the values. */
extern const rlk_proto rlk_fastmulti_row;
extern const rlk_proto_call rlk_fastmulti_held_call, rlk_fastmulti_counts_call;

/* A copy of values[0..n) in one block (free() frees it), NULL-terminated,
 * in *out: RLK_OK; RLK_ERR_ARG with why (for "<call> <group>: " + why) in buf
 * when they are not a list the scripts accept (1..100000 values, each 1..1024 bytes without
 * ':', none twice: nothing copied); RLK_ERR_NOMEM. */
int rlk_fastmulti_values_take(const char *const *values, size_t n, char ***out, char *buf,
                              size_t len);

#endif /* RLK_KINDS_FASTMULTI_H */
