/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fam_settle.h - recording an acquisition in the hold registry, the fence of a lost reply
 * and the blocking API's doubt (fam_settle.c): a lock call whose request was written and whose
 * reply was lost may have run; the connection it went out on is fenced (rlk_pool_fence: it has
 * run or never will) before the holder's count is read back, and what follows is decided by
 * the machine of kinds/acq.h. A call left unsettled is this thread's doubt, settled at its next
 * acquisition of the same hold (kinds/handle.c) or its last unlock. docs/runtime.md "Lost
 * replies".
 */
#ifndef RLK_FAM_SETTLE_H
#define RLK_FAM_SETTLE_H

#include "runtime/fam.h"
#include "runtime/rt.h"
#include "runtime/wd.h"

/* "<owner>" or "<owner>:write" (RLK_KIND_WRITE) into buf: the holder's count field of kind in
 * the lock hash. */
void rlk_fam_count_field(int kind, const char *owner, char *buf, size_t len);

/* Gives back one hold of the acquiring owner (the kind's release for the
 * same holder: one hold less): an acquisition the registry could not
 * record, one too few replicas acknowledged, or a hold the server counts
 * that the caller was never told of. RLK_OK when it did. */
typedef int (*rlk_fam_undo_fn)(void *arg);

/* Records an acquisition (acquire sent at sent_ns) in the client's registry and counts it,
 * then gives back `beyond` holds of h with undo(arg) (holds the server counts that the caller
 * was never told of). With rlk_options.min_replicas, first: an acquisition too few replicas
 * acknowledged is undone and not recorded (RLK_ERR_NOREPLICAS, rlk_fam_acks_acquired). When
 * the registry cannot take it, calls undo(arg) and returns the registry's error. */
int rlk_fam_record(rlk_rt *rt, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                   long long sent_ns, long long token, int beyond, rlk_fam_undo_fn undo,
                   void *arg);

/* When this thread has an unsettled lost call of the hold h (its doubt): fences it and reads
 * the server's count of the holder into *now, the registry's into *before: 1 (the doubt is
 * settled; kinds/acq.h's rule says what to give back); 0 when there is no such doubt or it
 * stays unsettled. */
int rlk_fam_doubt_read(rlk_rt *rt, const rlk_hold_spec *h, long long *before, long long *now);

/* After a call on b->c failed: 0 when its reply was not lost (the error
 * stands). Else 1 and *settled: RLK_OK once the lost request has run or
 * never will (rlk_pool_fence), or the error that left it unknown (recorded
 * on c after the original message). The caller then reads what tells. */
int rlk_fam_lost_fence(const rlk_fam_base *b, int *settled);

/* For tests only (the control of the one-token rule's test): when set, a
 * lost acquire of a token kind that turned out to have run calls fn(name,
 * arg) once it knows so, before its hold is adopted (kinds/acq.c, for both APIs). Set before
 * any call; NULL: nothing. */
typedef void (*rlk_fam_adopt_hook_fn)(const char *name, void *arg);
void rlk_fam_adopt_hook_set(rlk_fam_adopt_hook_fn fn, void *arg);
/* Runs the hook above, if set. */
void rlk_fam_adopt_hook(const char *name);

/* Gives back n holds of h that the server counts and the caller was never
 * told of (undo: one release each), keeping the thread's last error. A
 * give-back whose outcome is unknown is kept as this thread's doubt. */
void rlk_fam_give_back(rlk_rt *rt, const rlk_hold_spec *h, int n, rlk_fam_undo_fn undo,
                       void *arg);

/* After a release of h (one hold) failed: keeps it as this thread's doubt,
 * with the connection of its lost reply when there was one. */
void rlk_fam_doubt_keep_lost(rlk_client *c, const rlk_hold_spec *h);

/* 1 when this thread holds an unsettled lost lock call on c. */
int rlk_fam_doubt_pending(const rlk_client *c);

/* 1 (and forgets it) when this thread holds an unsettled lost acquire of
 * (kind, name, owner): a last unlock that finds the lock still held then
 * releases that hold too (the caller was told its outcome was unknown). */
int rlk_fam_doubt_take(const rlk_client *c, int kind, const char *name, const char *owner);

/* Keeps the lost call of h whose outcome stays unknown as this thread's doubt, with the
 * connection of the lost reply this thread settled last. */
void rlk_fam_doubt_keep_last(const rlk_client *c, const rlk_hold_spec *h);

#endif /* RLK_FAM_SETTLE_H */
