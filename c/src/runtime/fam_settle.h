/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fam_settle.h - recording an acquisition in the hold registry, and lost
 * replies of the lock family (fam_settle.c): an acquisition recorded is
 * where this thread's earlier unsettled call of the same hold is settled,
 * so both live here, below fam_hold (which calls them). A lock call
 * whose request was written and whose reply was lost may have run. Before
 * anything is reported, the connection it went out on is fenced
 * (rlk_pool_fence: it has run or never will) and the holder's own count is
 * read back; docs/runtime.md "Lost replies".
 */
#ifndef RLK_FAM_SETTLE_H
#define RLK_FAM_SETTLE_H

#include <hiredis/hiredis.h>

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

/* Records an acquisition (acquire sent at sent_ns) in the client's registry
 * and counts it. With rlk_options.min_replicas, first: an acquisition too
 * few replicas acknowledged is undone and not recorded (RLK_ERR_NOREPLICAS,
 * rlk_fam_acks_acquired). When the registry cannot take it, calls undo(arg)
 * and returns the registry's error. When this thread has an unsettled lost
 * call of the same hold (rlk_fam_doubt_settle), settles it: holds the
 * server counts beyond the registry's and this acquisition are given back
 * with undo(arg), never counted (the caller was told they failed). */
int rlk_fam_record(rlk_rt *rt, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                   long long sent_ns, long long token, rlk_fam_undo_fn undo, void *arg);

/* After a call on b->c failed: 0 when its reply was not lost (the error
 * stands). Else 1 and *settled: RLK_OK once the lost request has run or
 * never will (rlk_pool_fence), or the error that left it unknown (recorded
 * on c after the original message). The caller then reads what tells. */
int rlk_fam_lost_fence(const rlk_fam_base *b, int *settled);

/* An acquire attempt of hold h that failed with rc: when its reply was
 * lost and it turns out to have run (the server counts more holds of the
 * owner than the registry), one hold is adopted, recorded as rlk_fam_record
 * does (RLK_OK), and the holds beyond it (other lost acquires of this holder
 * that ran) are given back with undo. A token kind (token_key) reads its
 * count, token (into *token) and PTTL back in one call of its row's held
 * script (held_call: fenced/held): a hold with no lease or token left is
 * given back, not adopted; an adopted one's deadline starts from that read.
 * Unsettled: RLK_ERR_UNSETTLED (the call is kept as this thread's doubt, unless
 * the id is given). Otherwise rc, its message saying what was settled. */
int rlk_fam_acquire_lost(const rlk_fam_base *b, int rc, const rlk_hold_spec *h,
                         long long lease_ms, int watchdog, long long sent_ns,
                         const char *held_call, const char *token_key, long long *token,
                         rlk_fam_undo_fn undo, void *arg);

/* The one rule of a lost acquire's reply (both APIs settle by it): once
 * fenced, the server counts now holds of the holder where the client knows
 * of known. The call ran when now > known: the caller gets one hold when
 * adoptable (a token kind whose hold had no lease or token left when read
 * is not), and the holds beyond known and that one (earlier lost acquires
 * that ran) are given back with the kind's release, at most
 * RLK_FAM_GIVE_BACK_MAX, or nobody would ever unlock them. */
#define RLK_FAM_GIVE_BACK_MAX 8
typedef struct rlk_fam_settled {
    int ran;                /* the call ran: now > known */
    int adopt;              /* 1: the caller gets one hold */
    int give_back;          /* holds to release, 0..RLK_FAM_GIVE_BACK_MAX */
} rlk_fam_settled;
rlk_fam_settled rlk_fam_settle_rule(long long known, long long now, int adoptable);

/* The one rule of a lost release's reply (both APIs settle by it): once fenced, the server
 * counts now holds of the holder where the client knew of known (> 0) before the release;
 * given: the holder id is the application's (rlk_fam_id.given: other processes may hold under
 * it). */
typedef enum rlk_fam_rel_settled {
    RLK_FAM_REL_AGAIN,      /* it did not run (now == known): send it once more */
    RLK_FAM_REL_RAN,        /* it ran (now < known): now holds are left */
    RLK_FAM_REL_GONE,       /* now == 0 where known > 1: the hold was lost meanwhile */
    RLK_FAM_REL_UNKNOWN     /* the count cannot tell (a given id still held, or now > known):
                               RLK_ERR_UNSETTLED, nothing sent again */
} rlk_fam_rel_settled;
rlk_fam_rel_settled rlk_fam_release_rule(long long known, long long now, int given);

/* A token kind's read-back of a lost acquire (fenced/held, elect/held):
 * {count, token, PTTL} into out; 0, or -1 for another shape. Pure: both
 * APIs read it with this. */
int rlk_fam_held_read(const redisReply *r, long long out[3]);

/* For tests only (the control of the one-token rule's test): when set, a
 * lost acquire of a token kind that turned out to have run calls fn(name,
 * arg) once it knows so, before its hold is adopted (both APIs: the
 * blocking settle here and the async read-back in async/a_lock.c). Set
 * before any call; NULL: nothing. */
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

/* A release of (kind, owner) that failed, the registry counting before
 * holds before it: when its reply was lost, settles it. Sets *outcome and
 * *rc = RLK_OK when the count shows it ran (or the lock is gone). Returns 1
 * when it is known not to have run (the release may be sent again), else 0.
 * An outcome left unknown is kept as this thread's doubt, as an acquire's,
 * and *rc is RLK_ERR_UNSETTLED (recorded). */
int rlk_fam_release_lost(const rlk_fam_base *b, int kind, const char *owner, long long before,
                         int *outcome, int *rc);

#endif /* RLK_FAM_SETTLE_H */
