/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fenced.h - what fenced.c tells beyond the public API: its watchdog task, run by
 * both renewal drivers (runtime/wd.c, engine/ae_wd.c).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_FENCED_H
#define RLK_KINDS_FENCED_H

#include "kinds/proto.h"

/* One fenced/renew call per lock (KEYS: name, token key; ARGV: lease, owner). */
extern const rlk_renew_task rlk_fenced_renew_task;
/* Its row (kinds/proto.h). */
extern const rlk_proto rlk_fenced_row;

#endif /* RLK_KINDS_FENCED_H */
