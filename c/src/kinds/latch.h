/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * latch.h - what latch.c tells beyond the public API: its calls
 * (kinds/proto.h), run by both APIs.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_LATCH_H
#define RLK_KINDS_LATCH_H

#include "kinds/proto.h"

/* What an await that ran out says: "latch NAME: " this " after N ms" (kinds/acq.h
 * rlk_acq_waited, both APIs). */
#define RLK_LATCH_BUSY "count still above 0"

extern const rlk_proto_call rlk_latch_count_call, rlk_latch_count_down_call,
    rlk_latch_try_set_count_call;

#endif /* RLK_KINDS_LATCH_H */
