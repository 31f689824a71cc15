/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock.c - the reentrant lock API (rlk_lock_*): Redisson's RLock on
 * reentrant/{acquire,release,force_release}, waiting through the client's
 * subscriber and the process-wide local queue, lease-less holds renewed by
 * the client's watchdog. docs/runtime.md describes the algorithm. With a
 * lock-delay (rlk_lock_set_delay) every script call also names the delay key
 * {name}:rlk_delay (the scripts' last KEYS entry), and the watchdog's
 * reentrant/renew_many batches refresh that key with its lock. A hold keeps
 * the delay of its first acquisition (the registry keeps it: rlk_wd_kind_data_of)
 * through its re-entries and releases, whichever handle makes them; a force
 * unlock is a release: it always ends a delay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/pool.h"
#include "client/random.h"
#include "client/topo.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/lq.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "runtime/spin.h"
#include "runtime/wait.h"
#include "runtime/wd.h"
#include "kinds/lock.h"

struct rlk_lock {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name}; keys: {name}:rlk_waiters
                                   (the server's queue of tickets), {name}:rlk_next (the ticket a
                                   release reserved the lock for), {name}:rlk_delay */
    rlk_lq *q;
    rlk_fam_id id;
    char *wake;                 /* redisson_lock__channel:{name}:rlk:<cid>: this client's wake
                                   channel, where a release grants the lock to its tickets */
    long long cid;              /* 32768..65535, from the client's uuid: tickets are
                                   cid * 1024 + r, at least 2^25 (lib/hand_over) */
    long long spin_initial_ms;  /* rlk_lock_set_spin: > 0, wait by back-off (runtime/spin.h), */
    long long spin_max_ms;      /* never subscribing; 0: pub/sub */
    long long delay_ms;         /* rlk_lock_set_delay: > 0, lock-delay; 0: off */
};

#define RLK_LOCK_KEEPALIVE_MS 1000  /* a queued waiter attempts at least this often */

/* One call's view: who asks, for how long, and its place in the queue. */
typedef struct rlk_acq {
    rlk_lock *l;
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
    rlk_sub_ticket ticket;      /* ticket.ticket 0: a single try, never queued */
    int queued;                 /* an attempt put the ticket in the queue */
    int wide;                   /* the last attempt said: first in the queue (or reserved and
                                   taken meanwhile, or -3): listen on the lock's channel too */
    rlk_lock_timeline tl;       /* the last attempt's timeline */
    int spin;                   /* a spinning wait: its hold joins no channel either */
    long long delay_ms;         /* its lock-delay: the hold's for a re-entry, else the handle's */
} rlk_acq;

static _Thread_local rlk_lock_timeline rlk_lock_tl;    /* the thread's last acquisition */

void rlk_lock_last_timeline(rlk_lock_timeline *out)
{
    *out = rlk_lock_tl;
}

/* rlk_fam_kind.fini: what the handle holds beyond its base: the local
 * queue's reference, the holder id, and its wake channel. */
static void rlk_lock_fini(void *handle)
{
    rlk_lock *l = handle;

    rlk_lq_put(l->q);
    rlk_fam_id_destroy(&l->id);
    free(l->wake);
}

static const rlk_fam_kind rlk_lock_kind = {
    "rlk_lock_new", "lock", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, rlk_lock_fini
};

/* The reentrant lock's channel rule (runtime/sub.h): "0" wakes one; a grant
 * (reentrant/release, reentrant/cancel: the decimal head * 2^26 + next,
 * head >= 1, 8 to 16 digits) names the first and second tickets of the
 * server's queue; anything else wakes every waiter. */
static int rlk_lock_meaning(const char *payload, size_t len, long long *head, long long *next)
{
    unsigned long long x;
    int kind = rlk_sub_grant_number(payload, len, &x);

    if (kind != RLK_SUB_MSG_GRANT)
        return kind;
    if (x < (unsigned long long)RLK_NAMES_GRANT_SHIFT)
        return RLK_SUB_MSG_ALL;
    *head = (long long)(x / RLK_NAMES_GRANT_SHIFT);
    *next = (long long)(x % RLK_NAMES_GRANT_SHIFT);
    return RLK_SUB_MSG_GRANT;
}

/* Also the read-write lock's (kinds/rwlock.c): its releases grant writers the same way. */
const rlk_sub_rule rlk_lock_sub_rule = {rlk_lock_meaning};

/* The watchdog's task for reentrant locks (runtime/wd.h): as many per
 * reentrant/renew_many call as are due (KEYS: the names, ARGV: lease, then
 * each one's owner; one call per hash slot on a cluster). A hold with a
 * lock-delay (its renew KEYS: name, delay key) puts its delay key right
 * after its name, with an empty owner: the script refreshes the delay key's
 * PX with the lock (lease + delay). When the script refuses the batch (a key
 * of another type), each alone with reentrant/renew (KEYS as the hold's),
 * where a refusal means not our hash. */
static int rlk_lock_renew_build(const rlk_renew_item *items, int m, const char *lease,
                                const char **keys, int *nkeys, const char **args, size_t *lens)
{
    int n = 0;

    (void)lens;
    args[0] = lease;
    for (int k = 0; k < m; k++) {
        keys[n] = items[k].name;
        args[++n] = items[k].owner;
        if (items[k].nkeys == 2) {
            keys[n] = items[k].keys[1];
            args[++n] = "";
        }
    }
    *nkeys = n;
    return n + 1;
}

static int rlk_lock_renew_reply(int rc, const redisReply *r, int m, int *results)
{
    rlk_renew_spread(rc, r, m, results);
    return rc == RLK_ERR_SCRIPT;
}

static const rlk_renew_task rlk_lock_renew_alone = {
    "reentrant/renew", RLK_RENEW_ALONE, rlk_renew_build_one, rlk_renew_reply_one, NULL
};

const rlk_renew_task rlk_lock_renew_task = {
    "reentrant/renew_many", RLK_RENEW_SLOT, rlk_lock_renew_build, rlk_lock_renew_reply,
    &rlk_lock_renew_alone
};

/* ---------------------------------------------------------------- rows (kinds/proto.h) */

const rlk_proto rlk_lock_row = {
    "lock", RLK_KIND_LOCK, "reentrant",
    "reentrant/acquire", "lease_ms owner ticket",
    "reentrant/release", "owner lease_ms claim_ms publish",
    "reentrant/cancel", "ticket claim_ms publish",
    "reentrant/force_release", "publish",
    "channel", RLK_PROTO_WAIT_QUEUE, 0, "", &rlk_lock_renew_task, "lock", 0, NULL, NULL, NULL};

/* Attempts that never queue (ticket 0). */
const rlk_proto rlk_lock_spin_row = {
    "lock", RLK_KIND_LOCK, "reentrant",
    "reentrant/acquire", "lease_ms owner ticket",
    "reentrant/release", "owner lease_ms claim_ms publish",
    NULL, NULL,
    "reentrant/force_release", "publish",
    "channel", RLK_PROTO_WAIT_SPIN, 0, "", &rlk_lock_renew_task, "lock", 0, NULL, NULL, NULL};

/* With a lock-delay (rlk_lock_set_delay): its acquire, release and force name the delay key
 * {name}:rlk_delay last, the acquire its delay_ms; renewed by the reentrant lock's task, each
 * delay key right after its lock (whose PX becomes lease + delay). Also the force unlock of
 * RLK_KIND_LOCK: a force unlock ends a delay. */
const rlk_proto rlk_lock_delay_row = {
    "lock", RLK_KIND_LOCK, "reentrant", "reentrant/acquire", "lease_ms owner ticket delay_ms",
    "reentrant/release", "owner lease_ms claim_ms publish", "reentrant/cancel",
    "ticket claim_ms publish", "reentrant/force_release", "publish", "channel",
    RLK_PROTO_WAIT_QUEUE, 0, "", &rlk_lock_renew_task, "lock delay", 0, "delay", NULL, NULL};

/* Redisson's non-reentrant lock (kinds/nrlock.c): held and renewed as the reentrant lock. */
const rlk_proto rlk_lock_nr_row = {
    "non-reentrant lock", RLK_KIND_LOCK, "nonreentrant",
    "nonreentrant/acquire", "lease_ms owner",
    "nonreentrant/release", "owner lease_ms publish",
    NULL, NULL,
    "reentrant/force_release", "publish",
    "channel", RLK_PROTO_WAIT_CHANNEL, RLK_PROTO_NON_REENTRANT, "", &rlk_lock_renew_task,
    "lock", 0, NULL, NULL, NULL};

const rlk_proto_call rlk_lock_renew_call = {"reentrant/renew", "lease_ms owner"};

/* ---------------------------------------------------------------- handles */

rlk_lock *rlk_lock_new(rlk_client *c, const char *name)
{
    rlk_lock *l = rlk_fam_new(c, name, sizeof *l, &rlk_lock_kind);

    if (!l)
        return NULL;
    rlk_fam_id_init(&l->id);
    l->q = rlk_lq_get(c->addr, c->url.db, name);
    /* The wake channel: the client's cid from its uuid's first 4 hex digits (two clients that
     * draw the same share a channel: a grant then wakes both subscribers, the other ignores it). */
    l->cid = rlk_names_wake_cid(l->b.rt->uuid);
    l->wake = rlk_names_wake_channel(l->b.channel, l->cid);
    return rlk_fam_made(l, l->q && l->wake &&
                           rlk_handle_keys(&l->b, "reentrant", "channel waiters grant delay"));
}

void rlk_lock_free(rlk_lock *l)
{
    rlk_fam_free(l);
}

const char *rlk_lock_name(const rlk_lock *l)
{
    return l ? l->b.name : NULL;
}

int rlk_lock_set_owner(rlk_lock *l, const char *owner)
{
    return l ? rlk_fam_id_set(l->b.c, &l->id, owner, 0, "rlk_lock_set_owner") : RLK_ERR_ARG;
}

int rlk_lock_owner(const rlk_lock *l, char *buf, size_t len)
{
    rlk_lock *m = (rlk_lock *)l;    /* the id's mutex only */
    int rc;

    if (!l || !buf || len == 0)
        return RLK_ERR_ARG;
    if ((rc = rlk_fam_id_copy(l->b.rt, &m->id, buf, len)) != RLK_OK)
        return rlk_set_error(l->b.c, rc, "rlk_lock_owner: buffer of %zu bytes too short", len);
    return RLK_OK;
}

/* ---------------------------------------------------------------- one acquire attempt */

/* 1 when a release can tell whether a grant on this client's wake channel
 * reached it: every pub/sub mode but global pub/sub on a cluster (PUBLISH
 * counts the subscribers of the node it ran on only). Otherwise the waiter
 * listens on the lock's channel as before release v4. */
static int rlk_lock_wakes_alone(rlk_lock *l)
{
    return rlk_client_counts_exact(l->b.c);
}

/* A ticket cid * 1024 + r, r in 0..1023 from a strong random source: in
 * 2^25..2^26-1, and the release finds the waiter's wake channel from it; or,
 * without a wake channel, a random ticket in 1..2^25-1 (a clash of two
 * waiters only costs a turn: the lock hash decides who holds it). */
static long long rlk_lock_new_ticket(rlk_lock *l)
{
    return rlk_lock_wakes_alone(l) ? rlk_names_wake_ticket(l->cid) : rlk_names_plain_ticket();
}

static int rlk_acq_init(rlk_lock *l, long long lease_ms, long long wait_ms, rlk_acq *a)
{
    int rc = rlk_fam_lease(l->b.c, "lock", l->b.name, lease_ms, &a->lease_ms, &a->watchdog);

    a->l = l;
    a->queued = 0;
    memset(&a->ticket, 0, sizeof a->ticket);
    a->wide = 0;
    a->spin = 0;
    a->ticket.ticket = wait_ms != 0 ? rlk_lock_new_ticket(l) : 0;
    a->ticket.claim_ns = (RLK_FAM_CLAIM_MS + 5) * 1000000LL;
    if (rc != RLK_OK || (rc = rlk_lock_owner(l, a->owner, sizeof a->owner)) != RLK_OK)
        return rc;
    /* A re-entry keeps its hold's lock-delay, or the lack of one. */
    if (!rlk_wd_kind_data_of(l->b.rt->wd, RLK_KIND_LOCK, l->b.name, a->owner, &a->delay_ms))
        a->delay_ms = l->delay_ms;
    return RLK_OK;
}

/* reentrant/release, with the delay key when the hold has a lock-delay. */
static int rlk_lock_release_delay(rlk_lock *l, long long delay_ms, const char *owner,
                                  long long lease, int *rc)
{
    return rlk_handle_release(&l->b, &rlk_lock_row, "reentrant/release",
                              delay_ms > 0 ? "delay" : NULL, owner, lease, NULL, rc);
}

/* rlk_fam_release_fn of rlk_lock_unlock: arg is one of these. */
typedef struct rlk_lock_rel {
    rlk_lock *l;
    long long delay_ms;         /* the hold's lock-delay (rlk_wd_kind_data_of) */
} rlk_lock_rel;

static int rlk_lock_release_call(void *arg, const char *owner, long long lease, int *rc)
{
    rlk_lock_rel *rel = arg;

    return rlk_lock_release_delay(rel->l, rel->delay_ms, owner, lease, rc);
}

/* A waiter that gives up leaves the server's queue (rlk_handle_cancel). */
static void rlk_lock_cancel(rlk_acq *a)
{
    rlk_proto_argvals v = {.ticket = a->ticket.ticket};

    rlk_handle_cancel(&a->l->b, &rlk_lock_row, &v, 1);
}

/* rlk_fam_undo_fn: gives back one hold: an acquisition the registry could not
 * record, one too few replicas acknowledged, or one the caller was never told
 * of (the same holder's release: one hold less). */
static int rlk_lock_undo(void *arg)
{
    rlk_acq *a = arg;
    int rc, outcome = rlk_lock_release_delay(a->l, a->delay_ms, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

/* An acquisition's outcome rc: when it took the lock, its hold's lock-delay is noted in the
 * registry (by the acquisition that made the entry only: a re-entry keeps the hold's). */
static int rlk_lock_noted(rlk_acq *a, int rc)
{
    if (rc == RLK_OK)
        rlk_wd_set_kind_data(a->l->b.rt->wd, RLK_KIND_LOCK, a->l->b.name, a->owner, a->delay_ms);
    return rc;
}

/* rlk_wait_attempt_fn. RLK_OK: acquired (recorded in the registry).
 * RLK_ERR_BUSY: held by another, *ttl is its PTTL (-1: none), or
 * RLK_WAIT_RECHECK (-3: first in the queue behind another ticket's
 * reservation); no error recorded. Else an error. */
static int rlk_lock_attempt(void *arg, long long *ttl)
{
    rlk_acq *a = arg;
    rlk_lock *l = a->l;
    const rlk_proto *row = a->delay_ms > 0 ? &rlk_lock_delay_row : &rlk_lock_row;
    rlk_hold_spec h = {RLK_KIND_LOCK, l->b.name, a->owner, 1, {l->b.name, NULL, NULL},
                       a->spin ? NULL : l->b.channel,  /* spin: no SUBSCRIBE, holding either */
                       &rlk_lock_renew_task, 1};     /* its channel: no lingering */
    long long sent = rlk_clock_now_ns();
    long long targ = rlk_wait_ticket_arg(&a->ticket, a->queued);   /* 0: does not queue */
    rlk_proto_argvals v = {.lease_ms = a->lease_ms, .owner = a->owner, .ticket = targ,
                           .delay_ms = a->delay_ms};
    rlk_proto_outcome o;
    redisReply *r = NULL;
    int rc;

    RLK_RT_COUNT(l->b.rt, acquire_calls);
    a->tl.rx_ns = a->ticket.rx_ns;      /* what woke this attempt, if anything */
    a->tl.woken_ns = a->ticket.woken_ns;
    a->ticket.rx_ns = a->ticket.woken_ns = 0;
    a->tl.claim_sent_ns = sent;
    if (a->delay_ms > 0) {      /* renewed with its delay key (rlk_lock_renew_build) */
        h.nkeys = 2;
        h.keys[1] = l->b.key[RLK_PROTO_KEY_DELAY];
    }
    rc = rlk_handle_evalx(&l->b, row->acquire, row->acquire_args, row->opt_keys, &v, &r);
    a->tl.claim_done_ns = rlk_clock_now_ns();
    if (rc != RLK_OK && targ)
        a->queued = 1;      /* it may have run: the next attempt looks before it queues */
    if (rc != RLK_OK)
        return rlk_lock_noted(a, rlk_fam_acquire_lost(&l->b, rc, &h, a->lease_ms, a->watchdog,
                                                      sent, NULL, NULL, rlk_lock_undo, a));
    /* {wait, 1}: first in the queue; {wait, first, 1}: free, in its lock-delay */
    if (rlk_proto_read_acquire(r, 0, &o) == RLK_PROTO_BUSY) {
        *ttl = o.value;
        a->wide = o.first || (r->type == REDIS_REPLY_INTEGER && *ttl == RLK_WAIT_RECHECK);
        if (o.in_delay)
            RLK_RT_COUNT(l->b.rt, delay_refusals);
        rc = RLK_ERR_BUSY;
    } else {
        rc = rlk_fam_acquire_reply(l->b.c, "lock", l->b.name, "reentrant/acquire", r, ttl, NULL);
    }
    freeReplyObject(r);
    if (rc == RLK_ERR_BUSY && targ) {
        a->queued = 1;
        rlk_lq_note_first(l->q, a->wide);
    } else if (rc == RLK_OK && a->ticket.ticket && !a->queued)
        rlk_lq_note_first(l->q, 0);     /* taken at once: nobody to wait for, no hint */
    if (rc == RLK_OK)
        a->queued = 0;
    if (rc == RLK_OK)
        rc = rlk_fam_record(l->b.rt, &h, a->lease_ms, a->watchdog, sent, 0, rlk_lock_undo, a);
    return rlk_lock_noted(a, rc);
}

/* ---------------------------------------------------------------- locking */

static int rlk_lock_busy(rlk_lock *l, long long start_ns)
{
    return rlk_set_error(l->b.c, RLK_ERR_BUSY, "lock %s: held by another holder%s after %lld ms",
                         l->b.name, l->delay_ms > 0 ? " (or in the lock-delay of one that lost it)"
                         : "", (rlk_clock_now_ns() - start_ns) / 1000000LL);
}

static int rlk_lock_try_lock_run(rlk_lock *l, long long wait_ms, long long lease_ms)
{
    long long start = rlk_clock_now_ns();
    rlk_lq_node node;
    rlk_waiter w;
    rlk_acq a;
    int rc, first;

    if (!l)
        return RLK_ERR_ARG;
    if ((rc = rlk_acq_init(l, lease_ms, wait_ms, &a)) != RLK_OK)
        return rc;
    if (l->spin_max_ms > 0) {
        /* No pub/sub: attempts that never queue (ticket 0), back-off between them. */
        a.spin = 1;
        a.ticket.ticket = 0;
        rc = rlk_spin_acquire(l->b.rt, "lock", l->b.name, rlk_lock_attempt, &a, start, wait_ms,
                              l->spin_initial_ms, l->spin_max_ms);
        if (rc == RLK_OK)
            rlk_lock_tl = a.tl;
        return rc == RLK_ERR_BUSY ? rlk_lock_busy(l, start) : rc;
    }
    /* Only the head of the local queue waits; one attempt straight away
     * when it cannot overtake a local waiter: a single try, a re-entry, or
     * nobody queued here. A waiter has a ticket in the server's queue from
     * its first failed attempt made once its wake channel is subscribed
     * (rlk_wait_ticket_arg: one before that is a single try), and is woken
     * by the grant that names it (docs/runtime.md, "Who is queued when"). */
    rlk_wait_init_lock(&w, &l->b, "lock", rlk_lock_attempt, &a);
    w.q = l->q;
    w.rule = &rlk_lock_sub_rule;     /* its grants */
    w.ticket = a.ticket.ticket ? &a.ticket : NULL;
    w.keepalive_ms = RLK_LOCK_KEEPALIVE_MS;
    w.recheck_ms = RLK_FAM_CLAIM_MS + 5;   /* reentrant/acquire's -3: a dead grantee is skipped */
    /* Grants come on this client's wake channel; the lock's channel only while first in the
     * queue (docs/runtime.md, "Who a handoff wakes"). */
    w.channel = a.ticket.ticket >= RLK_NAMES_WAKE_TICKET_MIN ? l->wake : l->b.channel;
    w.wide_channel = l->b.channel;
    w.wide = a.ticket.ticket >= RLK_NAMES_WAKE_TICKET_MIN ? &a.wide : NULL;
    first = wait_ms == 0 || rlk_wd_holds_as(l->b.rt->wd, RLK_KIND_LOCK, l->b.name, a.owner);
    if (first) {
        a.ticket.ticket = 0;    /* a single try or a re-entry: never queued */
        w.ticket = NULL;
        w.channel = l->b.channel;
        w.wide = NULL;
    } else {
        /* The local queue first: only its head attempts, so only a head ever holds a ticket in
         * the server's queue (a thread queued there while asleep here would miss its grant).
         * A head that did not have to wait attempts straight away. */
        rc = rlk_lq_enter(l->q, &node, rlk_wait_deadline(start, wait_ms));
        if (rc == RLK_ERR_NOMEM)
            return rlk_set_error(l->b.c, rc, "lock %s: out of resources for a waiter", l->b.name);
        if (rc != RLK_OK)
            return rlk_lock_busy(l, start);
        w.entered = &node;
        /* Expecting to be first in the server's queue (as the last head of this process was):
         * join the lock's channel too and make the first attempt once subscribed, not twice. */
        w.wide_early = w.wide && rlk_lq_expects_first(l->q);
        first = !node.waited && !w.wide_early;
        if (first)
            rlk_wait_pre_join(&w);
    }
    memset(&a.tl, 0, sizeof a.tl);
    rc = rlk_wait_acquire(&w, start, wait_ms, first);
    if (rc == RLK_OK)
        rlk_lock_tl = a.tl;
    if (rc != RLK_OK && a.queued)
        rlk_lock_cancel(&a);
    return rc == RLK_ERR_BUSY ? rlk_lock_busy(l, start) : rc;
}

int rlk_lock_set_spin(rlk_lock *l, long long initial_ms, long long max_ms)
{
    if (!l)
        return RLK_ERR_ARG;
    if (initial_ms == 0 && max_ms == 0) {
        l->spin_initial_ms = l->spin_max_ms = 0;
        return RLK_OK;
    }
    if (initial_ms < 0 || max_ms < 0)
        return rlk_set_error(l->b.c, RLK_ERR_ARG, "rlk_lock_set_spin %s: negative back-off",
                             l->b.name);
    if (initial_ms == 0)
        initial_ms = RLK_SPIN_DEFAULT_INITIAL_MS;
    if (max_ms == 0)
        max_ms = initial_ms > RLK_SPIN_DEFAULT_MAX_MS ? initial_ms : RLK_SPIN_DEFAULT_MAX_MS;
    if (max_ms > RLK_SPIN_MAX_MS || initial_ms > max_ms)
        return rlk_set_error(l->b.c, RLK_ERR_ARG, "rlk_lock_set_spin %s: back-off %lld..%lld ms "
                             "is not within 1..%lld ms, initial at most max", l->b.name,
                             initial_ms, max_ms, RLK_SPIN_MAX_MS);
    l->spin_initial_ms = initial_ms;
    l->spin_max_ms = max_ms;
    return RLK_OK;
}

int rlk_lock_set_delay(rlk_lock *l, long long delay_ms)
{
    if (!l)
        return RLK_ERR_ARG;
    if (delay_ms < 0 || delay_ms > 1000000000000LL)
        return rlk_set_error(l->b.c, RLK_ERR_ARG, "rlk_lock_set_delay %s: delay %lld ms is not "
                             "within 0..1000000000000", l->b.name, delay_ms);
    l->delay_ms = delay_ms;
    return RLK_OK;
}

int rlk_lock_try_lock(rlk_lock *l, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(l ? &l->b : NULL);
    int rc = l ? rlk_lock_try_lock_run(l, wait_ms, lease_ms) : RLK_ERR_ARG;

    return rlk_handle_call_end(&hc, RLK_KIND_LOCK, rc);
}

int rlk_lock_lock(rlk_lock *l, long long lease_ms)
{
    return rlk_lock_try_lock(l, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

/* No local poke (no queue given): a release that finds a waiter queued
 * reserves the lock for it and its grant wakes it, in this process or
 * another; one that finds nobody queued has no local waiter to wake either
 * (a waiter queues with its first failed attempt). The release names the
 * delay key when the hold has a lock-delay (its first acquisition's), the
 * handle's when this client records no hold. */
int rlk_lock_unlock(rlk_lock *l)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_lock_rel rel = {l, 0};

    if (!l)
        return RLK_ERR_ARG;
    if (rlk_fam_id_copy(l->b.rt, &l->id, owner, sizeof owner) != RLK_OK ||
        !rlk_wd_kind_data_of(l->b.rt->wd, RLK_KIND_LOCK, l->b.name, owner, &rel.delay_ms))
        rel.delay_ms = l->delay_ms;
    return rlk_fam_unlock(&l->b, RLK_KIND_LOCK, "", &l->id, "rlk_lock_owner", NULL,
                          rlk_lock_release_call, &rel);
}

/* A force unlock is a release, not a loss: it ends a lock-delay too (reentrant/force_release
 * KEYS[3]), through any handle, with the option or without (rlk unlock --force's). */
static int rlk_lock_force(rlk_lock *l, int named, int *released)
{
    return l ? rlk_handle_force(&l->b, &rlk_lock_row, "delay", NULL, named, l->q, released)
             : RLK_ERR_ARG;
}

int rlk_lock_force_unlock(rlk_lock *l, int *released)
{
    return rlk_lock_force(l, 0, released);
}

int rlk_lock_force_unlock_named(rlk_lock *l, int *released)
{
    return rlk_lock_force(l, 1, released);
}

/* ---------------------------------------------------------------- queries */

void rlk_lock_lease_note(rlk_lock *l, long long sent_ns, long long lease_ms)
{
    char owner[RLK_OWNER_MAX + 1];

    if (rlk_fam_id_get(l->b.c, l->b.rt, &l->id, owner, sizeof owner, "rlk_lock_owner") == RLK_OK)
        rlk_wd_lease_set(l->b.rt->wd, RLK_KIND_LOCK, l->b.name, owner, sent_ns, lease_ms);
}

int rlk_lock_is_locked(rlk_lock *l, int *locked)
{
    return l && locked ? rlk_fam_is_locked(&l->b, locked) : RLK_ERR_ARG;
}

int rlk_lock_is_held_by_me(rlk_lock *l, int *held)
{
    if (!l || !held)
        return RLK_ERR_ARG;
    return rlk_fam_is_held(&l->b, RLK_KIND_LOCK, &l->id, "rlk_lock_owner", held);
}

int rlk_lock_lease(rlk_lock *l, long long *start_ns, long long *deadline_ns)
{
    if (!l || !start_ns || !deadline_ns)
        return RLK_ERR_ARG;
    return rlk_fam_held_lease(&l->b, RLK_KIND_LOCK, &l->id, "rlk_lock_owner", start_ns,
                              deadline_ns);
}

int rlk_lock_remaining_ttl(rlk_lock *l, long long *ttl_ms)
{
    return l && ttl_ms ? rlk_fam_remaining_ttl(&l->b, ttl_ms) : RLK_ERR_ARG;
}

int rlk_lock_hold_count(rlk_lock *l, long long *count)
{
    return l && count ? rlk_fam_hold_count(&l->b, &l->id, "rlk_lock_owner", count) : RLK_ERR_ARG;
}
