/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd.h - the client's hold registry and its watchdog thread (wd.c).
 *
 * Every lock a client holds through the lock API is an entry (kind, name,
 * owner) with a reentry count; lease-less ones are renewed by the watchdog
 * thread with their kind's renew script:
 *   RLK_KIND_LOCK    reentrant/renew_many, many locks per call (KEYS: name)
 *   RLK_KIND_READ    rwlock/renew_readers, every owner of one lock per call
 *                    (KEYS: name, timeout-key prefix)
 *   RLK_KIND_WRITE   rwlock/renew_writer (KEYS: name)
 *   RLK_KIND_FAIR    fair/renew (KEYS: name, queue, timeouts)
 *   RLK_KIND_FENCED  fenced/renew (KEYS: name, token key)
 * A lock the watchdog finds lost is reported through the hook its creator
 * (the runtime state, rt.c) installs.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_WD_H
#define RLK_WD_H

#include "rlk.h"
#include "runtime/counters.h"
#include "runtime/sub.h"

typedef struct rlk_wd rlk_wd;
typedef struct rlk_hold rlk_hold;

#define RLK_HOLD_KEYS_MAX 3

/* What identifies a hold and how to renew it. */
typedef struct rlk_hold_spec {
    int kind;                       /* enum rlk_lock_kind */
    const char *name;               /* the lock hash */
    const char *owner;
    int nkeys;                      /* the renew script's KEYS, keys[0] = name */
    const char *keys[RLK_HOLD_KEYS_MAX];
    /* The channel a force unlock publishes on (NULL: none). A watchdog
     * entry stays subscribed to it while held; a message there makes the
     * watchdog renew the entry at once, which finds a removed lock gone. */
    const char *channel;
} rlk_hold_spec;

/* What rlk_wd_release_begin_as did, for rlk_wd_release_end. */
typedef struct rlk_wd_ticket {
    rlk_hold *removed;              /* taken out of the registry before the release */
    unsigned long long decremented; /* id of an entry whose count was decremented, or 0 */
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
/* 1 when (kind, name, owner) is recorded as held by this client;
 * rlk_wd_holds: of kind RLK_KIND_LOCK. */
int rlk_wd_holds_as(rlk_wd *wd, int kind, const char *name, const char *owner);
int rlk_wd_holds(rlk_wd *wd, const char *name, const char *owner);
/* The count of (kind, name, owner) in the registry: 0 when not held. */
long long rlk_wd_count_as(rlk_wd *wd, int kind, const char *name, const char *owner);
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
/* 1 when the watchdog declared (kind, name, owner) lost since it was last acquired. */
/* The subscriber's hook: a message on a held lock's channel (a force
 * unlock, or another holder's release) makes its entries due at once. */
void rlk_wd_on_message(void *wd, const char *channel, size_t len);
int rlk_wd_is_lost_as(rlk_wd *wd, int kind, const char *name, const char *owner);
/* Makes every watchdog entry due at once (the master changed: a renewal on
 * the new one finds each lock that did not carry over gone). */
void rlk_wd_nudge_all(rlk_wd *wd);

#endif /* RLK_WD_H */
