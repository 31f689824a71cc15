/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_lock.h - the lock kinds through the engine (a_lock.c): rlk_async_lock,
 * rlk_async_lock_nr, rlk_async_lock_spin, rlk_async_unlock and
 * rlk_async_force_unlock (rlk_async.h), the election's campaign and resign
 * (a_elect.c); the per-client table of holds they keep is a_hold.h. Each kind is a
 * row of a_kind.h; the requests are the same for every row.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_LOCK_H
#define RLK_A_LOCK_H

#include "rlk_async.h"
#include "async/a_kind.h"

/* What an acquisition adds to its row: the value argument (NULL: none),
 * a spinning wait's back-off bounds (RLK_PROTO_WAIT_SPIN), the lock-delay
 * (rlk_lock_delay_row's delay_ms). */
typedef struct rlk_a_lock_opts {
    const char *value;
    long long spin_initial_ms, spin_max_ms;
    long long delay_ms;
    const char *const *values;      /* an RLK_PROTO_VALUES row's values (every request of it) */
    size_t nvalues;
} rlk_a_lock_opts;

/* An acquisition of name by task with row k; who names the call in
 * argument errors. wait_ms and lease_ms as rlk_async_lock. NULL: out of
 * memory (no callback). */
rlk_async_req *rlk_a_lock_acquire(rlk_async *ac, const rlk_proto *k, const char *who,
                                  const char *name, unsigned long long task, long long wait_ms,
                                  long long lease_ms, const rlk_a_lock_opts *o, rlk_async_fn fn,
                                  void *privdata);
/* The release of task's hold of name, with the release of the row the hold
 * was taken with (k's when this client records no hold). */
rlk_async_req *rlk_a_lock_release(rlk_async *ac, const rlk_proto *k, const char *who,
                                  const char *name, unsigned long long task,
                                  const rlk_a_lock_opts *o, rlk_async_fn fn, void *privdata);
/* The force release of name with row k's force script (o: its values). */
rlk_async_req *rlk_a_lock_force(rlk_async *ac, const rlk_proto *k, const char *who,
                                const char *name, const rlk_a_lock_opts *o, rlk_async_fn fn,
                                void *privdata);

#endif /* RLK_A_LOCK_H */
