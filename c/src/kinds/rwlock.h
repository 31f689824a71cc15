/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rwlock.h - what rwlock.c tells beyond the public API: its watchdog tasks, run by
 * both renewal drivers (runtime/wd.c, engine/ae_wd.c).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_RWLOCK_H
#define RLK_KINDS_RWLOCK_H

#include "kinds/proto.h"

/* The reads of one lock, every owner of this client, in one
 * rwlock/renew_readers call (KEYS: name, timeout-key prefix; ARGV: lease,
 * the owners); a refusal means not our lock. */
extern const rlk_renew_task rlk_rwlock_renew_readers;
/* A write, alone: rwlock/renew_writer (KEYS: name; ARGV: lease, owner). */
extern const rlk_renew_task rlk_rwlock_renew_writer;
/* The read and write sides' rows (kinds/proto.h). */
extern const rlk_proto rlk_rwlock_read_row, rlk_rwlock_write_row;

#endif /* RLK_KINDS_RWLOCK_H */
