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


/* Its row (kinds/proto.h, RLK_PROTO_VALUES); its reads, ARGV ending with
 * the values. */
extern const rlk_proto rlk_fastmulti_row;
extern const rlk_proto_call rlk_fastmulti_held_call;

#endif /* RLK_KINDS_FASTMULTI_H */
