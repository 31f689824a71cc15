/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multilock.h - the MultiLock's attempt rules (Redisson's attempt loop),
 * pure, defined in multilock.c and followed by both MultiLocks: the
 * blocking one there and the non-blocking one (async/a_multilock.c).
 * All times are in ms of the caller's monotonic clock.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_MULTI_MULTILOCK_H
#define RLK_MULTI_MULTILOCK_H

#define RLK_MULTILOCK_MS_PER_MEMBER 1500LL  /* an attempt's wait budget per member */

/* One acquisition of n members: the caller's wait and lease, and what follows from them. */
typedef struct rlk_multilock_plan {
    long long wait_ms;          /* the caller's: -1 none, 0 one try of each member */
    long long lease_ms;         /* the caller's: all are set to it once held (if not acq_lease) */
    long long budget_ms;        /* an attempt's: ms_per_member each, at most wait_ms when > 0 */
    /* The lease the members are taken with: with a lease and a wait, twice the budget when the
     * lease is shorter (Redisson's), so that none expires while later ones are awaited. */
    long long acq_lease;
    long long deadline;         /* start + wait_ms; -1: none */
    long long attempt_end;      /* the current attempt's: its start + budget, never past deadline */
} rlk_multilock_plan;

void rlk_multilock_plan_init(rlk_multilock_plan *p, long long ms_per_member, int n,
                             long long wait_ms, long long lease_ms, long long start);
/* Starts an attempt at now. */
void rlk_multilock_attempt(rlk_multilock_plan *p, long long now);
/* What the next member of the attempt may wait at now: what is left of it (none without a wait). */
long long rlk_multilock_member_wait(const rlk_multilock_plan *p, long long now);
/* 1 when a failed attempt (err) is followed by another: a member stayed busy
 * or was lost before all were held, the caller may wait, and the deadline has not passed. */
int rlk_multilock_again(const rlk_multilock_plan *p, int err, long long now);
/* What a MultiLock that stops trying ends with: RLK_ERR_BUSY for a member that stayed busy or
 * was lost before all were held, else err. */
int rlk_multilock_end_err(int err);

#endif /* RLK_MULTI_MULTILOCK_H */
