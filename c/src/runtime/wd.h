/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd.h - the client's hold registry and its watchdog thread (wd_reg.c, wd.c).
 *
 * Every lock a client holds through the lock API is an entry (kind, name, owner) with a reentry
 * count; lease-less ones are renewed by the watchdog thread through their kind's task
 * (rlk_renew_task, given with each hold by the kind): the engine schedules (timer, batching per
 * hash slot or per name, the call, retry, the loss deadline, the reports), the task names the
 * script, builds a call and reads its reply, as Redisson pairs one LockRenewalScheduler with a
 * task per kind. Lost locks are reported through the hook the runtime state (rt.c) installs.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_WD_H
#define RLK_WD_H

#include "rlk.h"
#include "engine/counters.h"
#include "runtime/holds.h"
#include "runtime/sub.h"
#include "engine/wd_rule.h"

#include <hiredis/hiredis.h>

typedef struct rlk_wd rlk_wd;
typedef struct rlk_hold rlk_hold;

#define RLK_WD_BATCH_MAX 512        /* entries per renewal call */
/* A watchdog hold joins its channel (rlk_hold_spec.channel) once it has lived this long, at the
 * thread's first look after (it looks a join delay after a hold was taken at the latest), and is
 * renewed once the join is confirmed: a force unlock is heard within a round trip from then on,
 * and found within 2 x RLK_WD_JOIN_MS of the acquire plus two round trips before. A hold that
 * ends sooner (most critical sections) costs no SUBSCRIBE, no echo of its release, no
 * subscriber: a force unlock of a hold that ends within milliseconds changes nothing its holder
 * could act on. 100 ms: a hold that lives it pays for the join (a SUBSCRIBE, a renewal, later an
 * UNSUBSCRIBE: well under 1 % of its time on loopback), and the thread looks at most 10 times a
 * second for holds taken one after another. docs/runtime.md "Force unlock is noticed". */
#define RLK_WD_JOIN_MS 100
extern long long rlk_wd_join_ms;    /* RLK_WD_JOIN_MS (tests measuring renewal rounds set more) */
#define RLK_WD_CALL_KEYS_MAX RLK_RENEW_KEYS_ROOM(RLK_WD_BATCH_MAX)
#define RLK_WD_CALL_ARGS_MAX RLK_RENEW_ARGS_ROOM(RLK_WD_BATCH_MAX)

/* What identifies a hold and how to renew it. */
typedef struct rlk_hold_spec {
    int kind;                       /* enum rlk_lock_kind */
    const char *name;               /* the lock hash */
    const char *owner;
    int nkeys;                      /* the renew script's KEYS, keys[0] = name */
    const char *keys[RLK_HOLD_KEYS_MAX];
    /* The channel a force unlock publishes on (NULL: none). A watchdog
     * entry joins it once it has lived RLK_WD_JOIN_MS, until released; a message there makes
     * the watchdog renew the entry at once, which finds a removed lock gone. */
    const char *channel;
    /* How the watchdog renews it (lease-less holds); NULL: it cannot. */
    const rlk_renew_task *task;
    /* 1: its channel does not linger once the entry goes (the reentrant
     * lock: its waiters wait elsewhere, and each handoff's "0" there would
     * wake this client for nothing). 0: it lingers as a waiter's channel does. */
    int leave_now;
} rlk_hold_spec;

/* What rlk_wd_release_begin_as did, for rlk_wd_release_end (its name and owner: the caller's,
 * alive until then). */
typedef struct rlk_wd_ticket {
    rlk_holds_rec *removed;         /* taken out of the registry before the release */
    unsigned long long decremented; /* id of a record whose count was decremented, or 0 */
    int kind;
    const char *name, *owner;
} rlk_wd_ticket;

enum rlk_release_outcome {
    RLK_REL_RELEASED = 1,   /* release replied 1: the key is gone (or the write left) */
    RLK_REL_STILL_HELD = 0, /* replied 0: still held */
    RLK_REL_NOT_OWNER = -1, /* replied nil */
    RLK_REL_ERROR = -2      /* no reply: unknown */
};

/* Called from the watchdog thread (outside the registry's lock), oldest
 * first, for each lock it declared lost (reason: RLK_LOST_*). */
typedef void (*rlk_wd_report_fn)(void *ud, int kind, const char *name, const char *owner,
                                 int reason);

/* A registry of c counting into counters, reporting lost locks to
 * report(ud, ...). No I/O; the thread starts with the first watchdog hold. */
rlk_wd *rlk_wd_new(rlk_client *c, rlk_rt_counters *counters, rlk_sub *sub,
                   rlk_wd_report_fn report, void *ud);
void rlk_wd_free(rlk_wd *wd);
/* Records an acquisition (or re-entry) whose acquire was sent at sent_ns.
 * watchdog: lease-less (renewed until the last unlock). token: the fenced
 * lock's token of this acquisition (0 for other kinds). */
int rlk_wd_acquired_as(rlk_wd *wd, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                       long long sent_ns, long long token);
/* 1 when (kind, name, owner) is recorded as held by this client. */
int rlk_wd_holds_as(rlk_wd *wd, int kind, const char *name, const char *owner);
/* The count of (kind, name, owner) in the registry: 0 when not held. */
long long rlk_wd_count_as(rlk_wd *wd, int kind, const char *name, const char *owner);
/* A hold's kind datum, which the registry stores and returns without
 * reading it (the reentrant lock's lock-delay, kinds/lock.c): set while the
 * acquisition that made the entry is its only one (count 1), so a hold keeps
 * its first acquisition's, whichever handle re-enters or releases it.
 * rlk_wd_kind_data_of: 1 and *data (0: none set) when held, else 0. */
void rlk_wd_set_kind_data(rlk_wd *wd, int kind, const char *name, const char *owner,
                          long long data);
int rlk_wd_kind_data_of(rlk_wd *wd, int kind, const char *name, const char *owner,
                        long long *data);
/* 1 when held (recorded, not declared lost), with the lease the server counts now: *lease_ms (a
 * fixed hold's latest acquisition or re-entry, or a watchdog hold's renewed lease) began no
 * earlier than *start_ns (CLOCK_MONOTONIC send time of the call that set it; an adopted lost
 * acquire's, as kinds/acq.c adopts it), and *kind_data (0: none). 2 when the watchdog
 * declared it lost (and it was not taken again since): the same for the lease it was lost with.
 * Else 0. */
int rlk_wd_lease_of(rlk_wd *wd, int kind, const char *name, const char *owner,
                    long long *start_ns, long long *lease_ms, long long *kind_data);
/* A call other than an acquisition (the MultiLock's re-expiry of its
 * members) set a fixed hold's lease to lease_ms, sent at sent_ns. */
void rlk_wd_lease_set(rlk_wd *wd, int kind, const char *name, const char *owner,
                      long long sent_ns, long long lease_ms);
/* 1 and *token when held: the token recorded by the latest acquisition. */
int rlk_wd_token_of(rlk_wd *wd, int kind, const char *name, const char *owner, long long *token);
/* The metrics' gauges: entries in the registry, and of them watchdog ones. */
void rlk_wd_gauges(rlk_wd *wd, long long *held, long long *watchdog);
/* Drops every entry of name, of every kind (force unlock deletes the hash). */
void rlk_wd_forget_name(rlk_wd *wd, const char *name);
/* Before a release: takes the entry out when this is its last hold (waiting
 * for a renewal of it on the wire), else decrements it. Returns the lease
 * to restore if the owner still holds the lock afterwards. */
long long rlk_wd_release_begin_as(rlk_wd *wd, int kind, const char *name, const char *owner,
                                  rlk_wd_ticket *t);
void rlk_wd_release_end(rlk_wd *wd, rlk_wd_ticket *t, int outcome);
/* The subscriber's hook: a message on a held lock's channel[0..len) (a force
 * unlock, or another holder's release) makes its entries due at once; channel
 * NULL: every watchdog entry (the master changed: a renewal on the new one finds
 * each lock that did not carry over gone). */
void rlk_wd_on_message(void *wd, const char *channel, size_t len);

/* Kept entries: renewals the watchdog runs for a holder other than the registry (the permit
 * keeper, kinds/psemaphore_keeper.c), with a lease of their own, renewed every lease/3 through
 * their task and declared lost by the same rules as the watchdog entries (wd_rule.h). They are
 * not locks: no registry lookup, gauge, channel or nudge sees them. */
typedef struct rlk_hold rlk_wd_kept;      /* a kept entry is an entry of its own list */
/* Called on the watchdog thread (no lock held), once, when the entry is
 * declared lost (reason: RLK_LOST_*); no I/O that waits on the watchdog. */
typedef void (*rlk_wd_lost_fn)(void *ud, int reason);
/* Keeps h (h->task renews it; its keys; h->kind and h->channel unused)
 * with lease_ms, renewed last at sent_ns; arg is what the task sees as
 * item.arg (kept alive by the caller until rlk_wd_unkeep); lost: not NULL. NULL with the
 * error recorded (out of memory, no thread). */
rlk_wd_kept *rlk_wd_keep(rlk_wd *wd, const rlk_hold_spec *h, const void *arg, long long lease_ms,
                         long long sent_ns, rlk_wd_lost_fn lost, void *ud);
/* Stops keeping k and frees it: waits until no renewal of it is on the
 * wire and no lost report is running (unless called from that report), so
 * neither follows. NULL: nothing. */
void rlk_wd_unkeep(rlk_wd *wd, rlk_wd_kept *k);

#endif /* RLK_WD_H */
