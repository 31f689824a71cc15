/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_timer.h - the async engine's timer heap (ae_timer.c), as the
 * engine's handlers ask for it. Not installed; not a stable API.
 */
#ifndef RLK_AE_TIMER_H
#define RLK_AE_TIMER_H

#include "engine/ae_state.h"

/* Fires the timers that are due (each at most once per call). */
void ae_timer_run(rlk_async *ac);
/* Tells the loop when to call rlk_async_handle_timer next (0: deliveries
 * are queued; -1: no timer). */
void ae_timer_arm(rlk_async *ac);
/* With the client: every timer left, unfired. */
void ae_timer_free(rlk_async *ac);

#endif /* RLK_AE_TIMER_H */
