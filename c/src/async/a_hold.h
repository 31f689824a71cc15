/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_hold.h - the async client's table of holds (a_hold.c): one entry per
 * (kind, name, owner) this client holds through the lock kinds' requests
 * (a_lock.h) and the election (a_elect.c): the async driver of the one
 * hold table of runtime/holds.h, which the blocking registry (runtime/wd.h)
 * drives too.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_HOLD_H
#define RLK_A_HOLD_H

#include "rlk_async.h"
#include "kinds/proto.h"
#include "runtime/holds.h"
#include "engine/ae_wd.h"

/* One hold: the record both APIs keep (runtime/holds.h). wd: its rlk_ae_hold (lease-less
 * holds; else NULL); row: the kinds/proto row it was taken with (its re-entries, release);
 * kind_data: its lock-delay; token: an RLK_PROTO_TOKEN row's (the election's term); lease_ns:
 * a fixed lease's send time (rlk_ae_now_ms() * RLK_NS_PER_MS; 0 after a lease-less one). */
typedef rlk_holds_rec rlk_a_hold;

/* The hold (kind, name, owner); NULL when none, or when its fixed lease has run out (then it
 * is forgotten). _get: made (count 0) when there is none; NULL: out of memory. */
rlk_a_hold *rlk_a_hold_find(rlk_async *ac, int kind, const char *name, const char *owner);
rlk_a_hold *rlk_a_hold_get(rlk_async *ac, int kind, const char *name, const char *owner);
void rlk_a_hold_drop(rlk_async *ac, rlk_a_hold *h);     /* and from the watchdog */
void rlk_a_hold_lost(rlk_async *ac, rlk_ae_hold *wd, void *arg);    /* the watchdog's report */
/* Drops this client's holds of name that row k's force script cleared. */
void rlk_a_hold_drop_forced(rlk_async *ac, const char *name, const rlk_proto *k);
/* The client's doubts (kinds/acq.h rlk_acq_doubt_kind): an unsettled call of (kind, name,
 * owner) that may still have left a hold, kept (out of memory: not; its lease ends it) until
 * a refusal it explains takes it (_take: 1 when there was one; kind -1: none). */
void rlk_a_hold_doubt_keep(rlk_async *ac, int kind, const char *name, const char *owner);
int rlk_a_hold_doubt_take(rlk_async *ac, int kind, const char *name, const char *owner);

/* The hold count ac's table has for (kind, name, task): 0 when none (the tests). No I/O. */
long long rlk_a_hold_count(rlk_async *ac, int kind, const char *name, unsigned long long task);

#endif /* RLK_A_HOLD_H */
