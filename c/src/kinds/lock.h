/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.h - what lock.c (rlk_lock_*) tells beyond the public API: the
 * timeline of the calling thread's last acquisition, for the benchmark's
 * per-step view of a handoff (docs/performance.md).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_LOCK_H
#define RLK_KINDS_LOCK_H

#include "engine/counters.h"
#include "kinds/proto.h"

/* CLOCK_MONOTONIC ns (client/clock.h); 0 where the step did not happen
 * (an acquisition whose first attempt took the lock was woken by nothing). */
typedef struct rlk_lock_timeline {
    long long rx_ns;            /* the message that woke the waiter read by its subscriber */
    long long woken_ns;         /* the waiting thread woke */
    long long claim_sent_ns;    /* the attempt that took the lock was written */
    long long claim_done_ns;    /* its reply was read */
} rlk_lock_timeline;

/* The calling thread's last successful rlk_lock_try_lock / rlk_lock_lock. */
void rlk_lock_last_timeline(rlk_lock_timeline *out);

/* Sets the lease of the calling thread's hold of l to lease_ms by reentrant/renew with "first"
 * (rlk_lock_first_lease_call): the MultiLock's re-expiry of its members (multi/multilock.c)
 * once all are held; rlk_lock_lease counts from its send. RLK_ERR_LOST (recorded) when the
 * hold is gone. */
int rlk_lock_first_lease(rlk_lock *l, long long lease_ms);

/* What messages on the reentrant lock's channels mean: "0" wakes one, a
 * grant (the decimal head * 2^26 + next, lib/hand_over) wakes the ticket it
 * names, anything else every waiter. The read-write lock's writers use it
 * too: their grants come from the same lib/hand_over. */
extern const rlk_sub_rule rlk_lock_sub_rule;

/* The watchdog's task for reentrant locks, run by both renewal drivers
 * (runtime/wd.c, engine/ae_wd.c): as many per reentrant/renew_many call as
 * are due (one call per hash slot on a cluster), each alone with
 * reentrant/renew when the script refuses the batch. */
extern const rlk_renew_task rlk_lock_renew_task;

/* The reentrant lock's rows (kinds/proto.h): queued, spinning, with a
 * lock-delay, and the non-reentrant lock's (kinds/nrlock.c); its renewal of
 * one hold (the MultiLock's). */
extern const rlk_proto rlk_lock_row, rlk_lock_spin_row, rlk_lock_delay_row, rlk_lock_nr_row,
    rlk_lock_held_row;
/* The row the release of a hold taken with row takes (both APIs): row itself, but for a hold
 * taken by waiting (rlk_lock_held_row) 1 of every 8 such releases of the client (c: its
 * counters; NULL: none) takes rlk_lock_row: it frees the lock as a release without held does
 * (a reservation, and "0" published), so that a Redisson waiter, which hears only "0", finds
 * the lock free at least that often while rlk's waiters keep handing it over held. */
const rlk_proto *rlk_lock_release_row(const rlk_proto *row, rlk_rt_counters *c);
extern const rlk_proto_call rlk_lock_renew_call;
/* The same script setting a first hold's lease even when shorter (a MultiLock's members, taken
 * with a longer lease while the others were awaited): reentrant/renew's ARGV first. */
extern const rlk_proto_call rlk_lock_first_lease_call;

#endif /* RLK_KINDS_LOCK_H */
