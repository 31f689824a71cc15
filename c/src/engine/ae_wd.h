/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_wd.h - the async client's watchdog (ae_wd.c): lease-less holds
 * renewed on the loop's timer through their kind's task (runtime/wd.h
 * rlk_renew_task, defined with the kind), by the watchdog thread's rules
 * (engine/wd_rule.c): the same grouping of due holds per call, the same
 * reading of replies, the same loss deadline. A hold is reported lost
 * through the kind's note and then the client's lost callback
 * (rlk_async_set_lost_callback): RLK_LOST_GONE when a renewal finds it not
 * ours, RLK_LOST_EXPIRED when no renewal got through by its deadline (the
 * send time of its last successful acquire or renewal + the watchdog
 * lease - rlk_options.lost_margin_ms), even while a renewal is still
 * unanswered.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_AE_WD_H
#define RLK_AE_WD_H

#include "engine/engine.h"
#include "engine/wd_rule.h"

typedef struct rlk_ae_hold rlk_ae_hold;

/* The kind's own note that a hold was lost (before the client's lost
 * callback): drop its record of the hold. h is freed after it returns. */
typedef void (*rlk_ae_lost_fn)(rlk_async *ac, rlk_ae_hold *h, void *arg);

/* Registers a lease-less hold (kind, name, owner) renewed with task, KEYS
 * keys[0..nkeys) (keys[0] is name; nkeys 1..RLK_HOLD_KEYS_MAX) as the
 * task's build reads them. sent_ms: rlk_ae_now_ms() when the acquire that
 * took it was sent (its lease runs from then). NULL: out of memory. */
rlk_ae_hold *rlk_ae_wd_add(rlk_async *ac, int kind, const rlk_renew_task *task, const char *name,
                           int nkeys, const char *const *keys, const char *owner,
                           long long sent_ms, rlk_ae_lost_fn lost, void *arg);
/* A re-entry sent at sent_ms set the lease again (its deadline moves on). */
void rlk_ae_wd_acquired(rlk_ae_hold *h, long long sent_ms);
/* The token its renewals name from now on (the hold's latest; an election's term). */
void rlk_ae_wd_token(rlk_ae_hold *h, long long token);
/* ms: when h's lease ends at the earliest on the server: the send time of its last renewal
 * that worked (or of the acquire) plus the watchdog lease. */
long long rlk_ae_wd_lease_end(const rlk_ae_hold *h);
/* Stops renewing (unlock); NULL ignored. */
void rlk_ae_wd_del(rlk_ae_hold *h);
/* rlk_async_free: every hold goes, unreported. */
void rlk_ae_wd_free_all(rlk_async *ac);

/* For tests only (the control of the loss deadline's test): 1 turns the
 * deadline off, as the async watchdog was before it had one. */
extern int rlk_ae_wd_no_deadline;

#endif /* RLK_AE_WD_H */
