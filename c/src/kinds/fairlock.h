/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fairlock.h - what fairlock.c tells beyond the public API: its watchdog task, run by
 * both renewal drivers (runtime/wd.c, engine/ae_wd.c), and the operator's queue clear
 * (rlk unlock --queue).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_FAIRLOCK_H
#define RLK_KINDS_FAIRLOCK_H

#include "kinds/proto.h"

/* One fair/renew call per lock (KEYS: name, queue, timeouts; ARGV: lease, owner). */
extern const rlk_renew_task rlk_fairlock_renew_task;
/* Its rows (kinds/proto.h): the fair lock, the non-reentrant fair lock. */
extern const rlk_proto rlk_fairlock_row, rlk_fairlock_nr_row;

/* fair/clear_queue: empties f's queue and its deadlines (dead waiters included) and wakes each
 * waiter that was in it (0 on its own channel, with the client's publish command), in one
 * script; *waiters (may be NULL) how many there were. A lock, queue or timeouts key of another
 * type: RLK_ERR_SCRIPT (RLK_WRONGTYPE), nothing deleted. */
int rlk_fairlock_clear_queue(rlk_fairlock *f, long long *waiters);

#endif /* RLK_KINDS_FAIRLOCK_H */
