/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastmulti.h - what the faster MultiLock (fastmulti.c) shares with the
 * non-blocking API's row of it (async/a_kind.c): the check of a value list
 * and the watchdog's task.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_FASTMULTI_H
#define RLK_KINDS_FASTMULTI_H

#include <stddef.h>

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

#endif /* RLK_KINDS_FASTMULTI_H */
