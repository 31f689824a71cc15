/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fairlock.h - what fairlock.c tells beyond the public API: its watchdog task, run by
 * both renewal drivers (runtime/wd.c, async/ae_wd.c).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_FAIRLOCK_H
#define RLK_KINDS_FAIRLOCK_H

#include "runtime/wd.h"

/* One fair/renew call per lock (KEYS: name, queue, timeouts; ARGV: lease, owner). */
extern const rlk_renew_task rlk_fairlock_renew_task;

#endif /* RLK_KINDS_FAIRLOCK_H */
