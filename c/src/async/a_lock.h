/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_lock.h - the lock kinds through the engine (a_lock.c): rlk_async_lock,
 * rlk_async_unlock and rlk_async_force_unlock (rlk_async.h) on the blocking
 * API's scripts and protocol, and the per-client table of holds they keep.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_LOCK_H
#define RLK_A_LOCK_H

#include "rlk_async.h"

/* The hold count ac's table has for (kind, name, task): 0 when none. For
 * the tests and the MultiLock requests. */
long long rlk_a_lock_count(rlk_async *ac, int kind, const char *name, unsigned long long task);

#endif /* RLK_A_LOCK_H */
