/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fam_hold.h - the parts of acquiring and releasing that the reentrant,
 * fenced, fair and read-write locks share (fam_hold.c): release replies
 * (recording in the hold registry is fam_settle.h's), force unlocks, and the queries of a lock hash whose fields are holder ids.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_FAM_HOLD_H
#define RLK_FAM_HOLD_H

#include <hiredis/hiredis.h>

#include "rlk.h"
#include "runtime/fam.h"
#include "runtime/fam_settle.h"    /* rlk_fam_record: an acquisition recorded settles doubts */
#include "runtime/lq.h"

/* A release script's reply (nil / 0 / 1 / 2: a release that handed the
 * lock over) as enum rlk_release_outcome; RLK_REL_ERROR for any other
 * reply. Pure: both APIs read a release with it. */
int rlk_fam_release_read(const redisReply *r);

/* The reentrant lock's claim window: how long a release reserves the free
 * lock for the first queued waiter (reentrant/release, reentrant/cancel). */
#define RLK_FAM_CLAIM_MS 50
#define RLK_FAM_CLAIM_MS_STR "50"

/* A queued waiter that gives up (its wait ran out, an error, an interrupt)
 * leaves the server's queue (reentrant/cancel, rwlock/cancel), passing on a
 * reservation it did not claim; best effort (a waiter that cannot say so is
 * skipped when its reservation expires), bounded by RLK_FAM_CANCEL_NS so a
 * wait's -w holds against a stopped server too. */
#define RLK_FAM_CANCEL_NS (200LL * 1000000LL)

/* A release script's reply r (freed) to call_rc, the call's result:
 * its enum rlk_release_outcome; *rc is RLK_OK or call_rc (RLK_ERR_PROTOCOL
 * recorded as "unlock <name>: <label> replied type <t>" for a reply other
 * than nil / 0 / 1 / 2; 2 is a release that handed the lock over), or
 * RLK_ERR_NOREPLICAS for a release (or a count taken down) too few
 * replicas acknowledged: done, the outcome says what, not undone. The
 * kinds build the call from their row (kinds/handle.h rlk_handle_unlock). */
int rlk_fam_release_done(rlk_client *c, const char *label, const char *name, int call_rc,
                         redisReply *r, int *rc);

/* An undo's result (rlk_fam_undo_fn) from its release's outcome and rc:
 * RLK_OK when a hold was given back; else rc, or RLK_ERR_NOT_OWNER. */
int rlk_fam_undone(int outcome, int rc);

/* Sends the kind's release for (owner, lease): its outcome and *rc as
 * rlk_fam_release_done returns and sets them. */
typedef int (*rlk_fam_release_fn)(void *arg, const char *owner, long long lease, int *rc);

/* A force unlock's reply r (freed; rc the call's result), sent once every
 * hold of b->name was forgotten in the registry (kinds/handle.h
 * rlk_handle_force): *released (may be NULL) tells whether it deleted the
 * lock, and then q (may be NULL) is poked. A refusal by ACL is read as an
 * unlock's is. */
int rlk_fam_force_done(const rlk_fam_base *b, int rc, redisReply *r, rlk_lq *q, int *released);

/* 1 when c's last error is the server's ACL refusing a command inside a script: Redis 7.0 says
 * "The user executing the script can't run this command ...", Valkey 8 (and Redis 7.2) "ACL
 * failure in script: User U has no permissions to run the 'publish' command"
 * (docs/servers.md). Redis does not roll back what the script wrote before. */
int rlk_fam_acl_refused(const rlk_client *c);

/* After such a refusal (why: its message) inside a release or force release script, which
 * publishes after its last write: what it left, there (1: still there, 0: gone, -1: unknown,
 * the check refused too), said truthfully in the error of op ("unlock <name>"): RLK_ERR_NOTIFY
 * when gone (done: "released", "removed"), else RLK_ERR_SCRIPT with still, or that whether
 * done is unknown. Returns the error. */
int rlk_fam_acl_said(rlk_client *c, const char *op, const char *why, int there, const char *done,
                     const char *still);

/* rlk_fam_acl_said after a release (field: the holder's) or force release (field NULL) of b,
 * what it left probed on b's lock hash: HEXISTS name field, or EXISTS name. */
int rlk_fam_acl_after(const rlk_fam_base *b, const char *op, const char *field, const char *done,
                      const char *still);

/* Queries of a lock hash whose fields are holder ids (reentrant, fenced,
 * fair, read-write): EXISTS; the registry's lost mark, then HEXISTS of the
 * handle's holder id's field as kind (owner_fn as for rlk_fam_unlock;
 * rlk_fam_count_field); HGET of it; PTTL (-2 when there is no key). Each of them and
 * rlk_fam_held_lease returns RLK_ERR_ARG, recording nothing, when b (a public call's NULL
 * handle) or an out-parameter is NULL. */
int rlk_fam_is_locked(const rlk_fam_base *b, int *locked);
int rlk_fam_is_held(const rlk_fam_base *b, int kind, const char *owner_fn, int *held);
int rlk_fam_hold_count(const rlk_fam_base *b, int kind, const char *owner_fn, long long *count);
int rlk_fam_remaining_ttl(const rlk_fam_base *b, long long *ttl_ms);

/* The lease the registry counts for the hold of (kind, b->name, owner), no
 * I/O (rlk_lock_lease and the other kinds' _lease): *start_ns the send time
 * of the call that set it, *deadline_ns start + its lease, both
 * CLOCK_MONOTONIC; RLK_ERR_LOST (recorded) with both set to the lease it was
 * lost with when the watchdog declared it lost; RLK_ERR_NOT_OWNER (recorded)
 * when it is not held. */
int rlk_fam_held_lease(const rlk_fam_base *b, int kind, const char *owner_fn, long long *start_ns,
                       long long *deadline_ns);

#endif /* RLK_FAM_HOLD_H */
