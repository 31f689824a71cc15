/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bg.h - the blocking API's background loop (bg.c): one thread per client,
 * started on first use, that runs an engine client of its own (rlk_ae_new
 * on the client, borrowed, engine/engine.h) on a poll() loop. Other threads hand
 * it operations; each runs on the loop's thread, between two turns.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_BG_H
#define RLK_BG_H

#include "rlk.h"
#include "rlk_async.h"
#include "engine/counters.h"

typedef struct rlk_bg rlk_bg;

/* An operation, in its owner's memory: fn(ac, arg) on the loop's thread. */
typedef struct rlk_bg_op {
    struct rlk_bg_op *next;
    void (*fn)(rlk_async *ac, void *arg);
    void *arg;
    int queued;                     /* the loop's queue has it (guarded by the loop's mutex) */
} rlk_bg_op;

/* The loop of c, counting into counters; its pub/sub connections named
 * name (rlk_ae_sub_name). No thread, no I/O yet; NULL: out of memory. */
rlk_bg *rlk_bg_new(rlk_client *c, const char *name, rlk_rt_counters *counters);
/* Stops the thread (what is still queued does not run) and frees the loop,
 * its engine client included. Not from the loop's thread. */
void rlk_bg_free(rlk_bg *b);
/* Queues op to run once, soon, after what was queued before it (nothing
 * when it is queued already), starting the thread on first use: RLK_OK, or
 * the error (recorded on c) when it cannot be started. */
int rlk_bg_post(rlk_bg *b, rlk_bg_op *op);

#endif /* RLK_BG_H */
