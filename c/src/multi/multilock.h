/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multilock.h - the MultiLock's attempt rules (Redisson's attempt loop),
 * pure, defined in multilock.c and followed by both MultiLocks: the
 * blocking one there and the non-blocking one (async/a_multilock.c).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_MULTI_MULTILOCK_H
#define RLK_MULTI_MULTILOCK_H

#define RLK_MULTILOCK_MS_PER_MEMBER 1500LL  /* an attempt's wait budget per member */

/* An attempt's budget in ms for n members: ms_per_member each, at most the
 * caller's wait when that is > 0. */
long long rlk_multilock_budget_ms(long long ms_per_member, int n, long long wait_ms);
/* The lease the members are taken with: with a lease and a wait, twice the
 * budget when the lease is shorter (Redisson's), so that none expires while
 * later ones are awaited; all are set to lease_ms once held when it differs. */
long long rlk_multilock_acquire_lease(long long lease_ms, long long budget_ms, long long wait_ms);
/* When an attempt that starts at now ends: now + budget, never past deadline
 * (-1: none); all three in one unit. */
long long rlk_multilock_attempt_end(long long now, long long budget, long long deadline);
/* 1 when a failed attempt (err) is followed by another: a member stayed busy
 * or was lost before all were held, the caller may wait (wait_ms != 0), and
 * deadline (-1: none; in now's unit) has not passed. */
int rlk_multilock_again(int err, long long wait_ms, long long now, long long deadline);

#endif /* RLK_MULTI_MULTILOCK_H */
