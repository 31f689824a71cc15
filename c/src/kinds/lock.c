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
#include <stdlib.h>
#include <string.h>

#include "client/clock.h"
#include "client/error.h"
#include "kinds/handle.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/spin.h"
#include "runtime/wd.h"

struct rlk_lock {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name}; keys: {name}:rlk_waiters
                                   (the server's queue of tickets), {name}:rlk_next (the ticket a
                                   release reserved the lock for), {name}:rlk_delay; q: the local
                                   queue of name; wake: redisson_lock__channel:{name}:rlk:<cid>,
                                   this client's wake channel, where a release grants the lock
                                   to its tickets */
    long long spin_initial_ms;  /* rlk_lock_set_spin: > 0, wait by back-off (runtime/spin.h), */
    long long spin_max_ms;      /* never subscribing; 0: pub/sub */
    long long delay_ms;         /* rlk_lock_set_delay: > 0, lock-delay; 0: off */
};

static _Thread_local rlk_lock_timeline rlk_lock_tl;    /* the thread's last acquisition */

void rlk_lock_last_timeline(rlk_lock_timeline *out)
{
    *out = rlk_lock_tl;
}

static const rlk_fam_kind rlk_lock_kind = {
    "rlk_lock_new", "lock", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, NULL
};

/* The reentrant lock's channel rule (runtime/sub.h): "0" wakes one; a grant
 * (reentrant/release, reentrant/cancel: the decimal head * 2^26 + next,
 * head >= 1, 8 to 16 digits) names the first and second tickets of the
 * server's queue; a held grant (lib/hand_over_held: "<head * 2^26 + 2^25>
 * [:<wait>] <owner>", head a wake ticket, on its wake channel only) names the
 * ticket, the wait and the holder id the lock was written for (next: where
 * the wait, or without one the space, begins); anything else wakes every
 * waiter. */
static int rlk_lock_meaning(const char *payload, size_t len, long long *head, long long *next)
{
    const char *sp = payload ? memchr(payload, ' ', len) : NULL;
    size_t nlen = sp ? (size_t)(sp - payload) : len;
    const char *colon = sp ? memchr(payload, ':', nlen) : NULL;
    unsigned long long x;
    int kind;

    if (colon)
        nlen = (size_t)(colon - payload);
    kind = rlk_sub_grant_number(payload, nlen, &x);

    if (kind != RLK_SUB_MSG_GRANT || x < (unsigned long long)RLK_NAMES_GRANT_SHIFT)
        return sp || kind == RLK_SUB_MSG_GRANT ? RLK_SUB_MSG_ALL : kind;
    *head = (long long)(x / RLK_NAMES_GRANT_SHIFT);
    *next = (long long)(x % RLK_NAMES_GRANT_SHIFT);
    if (!sp)
        return RLK_SUB_MSG_GRANT;   /* a bare held value (an older release): claimed as a grant,
                                       which a held grant's owner acknowledges (it holds once) */
    if (*next != RLK_NAMES_WAKE_TICKET_MIN || !rlk_names_ticket_wakes(*head) || nlen + 1 >= len)
        return RLK_SUB_MSG_ALL;
    *next = (long long)nlen;        /* where ":<wait> <owner>" (or " <owner>") begins */
    return RLK_SUB_MSG_HELD;
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

/* What the reentrant lock's rows share: its scripts, renewed by its task (RLK_LOCK_ROW: with the
 * plain release's ARGV); RLK_LOCK_WAITS: a waiter queued in the server's queue of tickets, woken
 * by the grant that names it (RLK_LOCK_QUEUE: with the plain cancel's ARGV). */
#define RLK_LOCK_SCRIPTS                                                                          \
    .what = "lock", .hold = RLK_KIND_LOCK, .names = "reentrant", .acquire = "reentrant/acquire", \
    .release = "reentrant/release", .force = "reentrant/force_release", .force_args = "publish", \
    .wait_channel = "channel", .renew = &rlk_lock_renew_task
#define RLK_LOCK_WAITS                                                                            \
    .cancel = "reentrant/cancel", .wait = RLK_PROTO_WAIT_QUEUE, .grants = &rlk_lock_sub_rule
#define RLK_LOCK_ROW RLK_LOCK_SCRIPTS, .release_args = "owner lease_ms claim_ms? publish?"
#define RLK_LOCK_QUEUE RLK_LOCK_WAITS, .cancel_args = "ticket claim_ms publish"

/* A waiter that queues with a wake ticket takes held grants (docs/runtime.md, "Held grants"):
 * its attempts, its give-up and the release of the hold it got by waiting name the waiters'
 * records {name}:rlk_who and say held; a release that finds a waiter who takes them writes the
 * lock in its name, and that waiter holds on the grant's message, no claim sent. */
const rlk_proto rlk_lock_held_row = {
    RLK_LOCK_SCRIPTS, RLK_LOCK_WAITS, .acquire_args = "lease_ms owner ticket held",
    .release_args = "owner lease_ms claim_ms publish held",
    .cancel_args = "ticket claim_ms publish held owner", .cancel_keys = "who", .renew_keys = "lock",
    .opt_keys = "who", .flags = RLK_PROTO_GRANTS};

const rlk_proto rlk_lock_row = {RLK_LOCK_ROW, RLK_LOCK_QUEUE,
                                .acquire_args = "lease_ms owner ticket?", .renew_keys = "lock",
                                .held_grants = &rlk_lock_held_row};

/* Attempts that never queue (ticket 0). */
const rlk_proto rlk_lock_spin_row = {RLK_LOCK_ROW, .acquire_args = "lease_ms owner ticket?",
                                     .wait = RLK_PROTO_WAIT_SPIN, .renew_keys = "lock"};

/* With a lock-delay (rlk_lock_set_delay): its acquire, release and force name the delay key
 * {name}:rlk_delay last, the acquire its delay_ms; renewed by the reentrant lock's task, each
 * delay key right after its lock (whose PX becomes lease + delay). Also the force unlock of
 * RLK_KIND_LOCK: a force unlock ends a delay. */
const rlk_proto rlk_lock_delay_row = {RLK_LOCK_ROW, RLK_LOCK_QUEUE,
                                      .acquire_args = "lease_ms owner ticket delay_ms",
                                      .renew_keys = "lock delay", .opt_keys = "delay",
                                      .busy = "held by another holder (or in the lock-delay of "
                                              "one that lost it)"};

/* Redisson's non-reentrant lock (kinds/nrlock.c): held and renewed as the reentrant lock. */
const rlk_proto rlk_lock_nr_row = {
    .what = "non-reentrant lock", .hold = RLK_KIND_LOCK, .names = "nonreentrant",
    .acquire = "nonreentrant/acquire", .acquire_args = "lease_ms owner",
    .release = "nonreentrant/release", .release_args = "owner lease_ms publish",
    .force = "reentrant/force_release", .force_args = "publish", .wait_channel = "channel",
    .wait = RLK_PROTO_WAIT_CHANNEL, .flags = RLK_PROTO_NON_REENTRANT,
    .renew = &rlk_lock_renew_task, .renew_keys = "lock"};

const rlk_proto_call rlk_lock_renew_call = {"reentrant/renew", "lease_ms owner"};
const rlk_proto_call rlk_lock_first_lease_call = {"reentrant/renew", "lease_ms owner first"};

/* ---------------------------------------------------------------- handles */

rlk_lock *rlk_lock_new(rlk_client *c, const char *name)
{
    return rlk_handle_new(c, name, sizeof(rlk_lock), &rlk_lock_kind,
                          RLK_HANDLE_QUEUE_NAME | RLK_HANDLE_WAKE, "reentrant",
                          "channel waiters grant delay");
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
    return l ? rlk_fam_id_set(l->b.c, &l->b.id, owner, 0, "rlk_lock_set_owner") : RLK_ERR_ARG;
}

int rlk_lock_owner(const rlk_lock *l, char *buf, size_t len)
{
    return l ? rlk_handle_owner(&l->b, buf, len, "rlk_lock_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- locking */

/* The row's wait (kinds/handle.c rlk_handle_drive): a waiter has a ticket in the server's
 * queue from its first failed attempt made once its wake channel is subscribed
 * (rlk_wait_ticket_arg: one before that is a single try), and is woken by the grant that
 * names it (docs/runtime.md, "Who is queued when"); with a back-off (rlk_lock_set_spin), no
 * pub/sub: attempts that never queue. A re-entry keeps its hold's lock-delay, or the lack of
 * one; an acquisition notes it in the registry. */
int rlk_lock_try_lock(rlk_lock *l, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(l ? &l->b : NULL);
    rlk_handle_acq a;
    int rc = l ? rlk_handle_acq_start(&a, l, &l->b, "rlk_lock_owner", &rlk_lock_row, lease_ms,
                                      NULL)
               : RLK_ERR_ARG;

    if (rc == RLK_OK) {
        if (!rlk_wd_kind_data_of(l->b.rt->wd, RLK_KIND_LOCK, l->b.name, a.owner, &a.v.delay_ms))
            a.v.delay_ms = l->delay_ms;
        a.row = a.v.delay_ms > 0 ? &rlk_lock_delay_row : &rlk_lock_row;
        a.note_data = 1;
        a.spin_initial_ms = l->spin_initial_ms;
        a.spin_max_ms = l->spin_max_ms;
        if ((rc = rlk_handle_drive(&a, wait_ms)) == RLK_OK)
            rlk_lock_tl = a.tl;
    }
    return rlk_handle_call_end(&hc, RLK_KIND_LOCK, rc);
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

int rlk_lock_lock(rlk_lock *l, long long lease_ms)
{
    return rlk_lock_try_lock(l, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

const rlk_proto *rlk_lock_release_row(const rlk_proto *row, rlk_rt_counters *c)
{
    if (row != &rlk_lock_held_row || !c ||
        atomic_fetch_add_explicit(&c->held_turn, 1, memory_order_relaxed) % 8 != 7)
        return row;
    return &rlk_lock_row;
}

/* No local poke (no queue given): a release that finds a waiter queued
 * reserves the lock for it and its grant wakes it, in this process or
 * another; one that finds nobody queued has no local waiter to wake either
 * (a waiter queues with its first failed attempt). The release names the
 * delay key when the hold has a lock-delay (its first acquisition's), the
 * handle's when this client records no hold. */
int rlk_lock_unlock(rlk_lock *l)
{
    char owner[RLK_OWNER_MAX + 1];
    long long delay_ms;

    if (!l)
        return RLK_ERR_ARG;
    if (rlk_fam_id_copy(l->b.rt, &l->b.id, owner, sizeof owner) != RLK_OK ||
        !rlk_wd_kind_data_of(l->b.rt->wd, RLK_KIND_LOCK, l->b.name, owner, &delay_ms))
        delay_ms = l->delay_ms;
    return rlk_handle_unlock(&l->b, delay_ms > 0 ? &rlk_lock_delay_row
                                    : rlk_lock_release_row(delay_ms == RLK_LOCK_DATA_WAITED
                                                               ? &rlk_lock_held_row
                                                               : &rlk_lock_row,
                                                           &l->b.rt->counters),
                             "", "rlk_lock_owner", NULL, NULL);
}

/* A force unlock is a release, not a loss: it ends a lock-delay too (reentrant/force_release
 * KEYS[3]), through any handle, with the option or without (rlk unlock --force's). */
int rlk_lock_force_unlock(rlk_lock *l, int *released)
{
    return l ? rlk_handle_force(&l->b, &rlk_lock_row, "delay", NULL, 0, l->b.q, released)
             : RLK_ERR_ARG;
}

int rlk_lock_force_unlock_named(rlk_lock *l, int *released)
{
    return l ? rlk_handle_force(&l->b, &rlk_lock_row, "delay", NULL, 1, l->b.q, released)
             : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- queries */

int rlk_lock_first_lease(rlk_lock *l, long long lease_ms)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_proto_argvals v = {.lease_ms = lease_ms, .owner = owner};
    long long sent_ns = rlk_clock_now_ns(), renewed = 0;
    int rc = rlk_handle_owner(&l->b, owner, sizeof owner, "rlk_lock_owner");

    if (rc == RLK_OK &&
        (rc = rlk_handle_int(&l->b, &rlk_lock_first_lease_call, &v, &renewed)) == RLK_OK &&
        renewed != 1)
        rc = rlk_set_error(l->b.c, RLK_ERR_LOST, "lock %s: gone before all members were held",
                           l->b.name);
    if (rc == RLK_OK)
        rlk_wd_lease_set(l->b.rt->wd, RLK_KIND_LOCK, l->b.name, owner, sent_ns, lease_ms);
    return rc;
}

int rlk_lock_is_locked(rlk_lock *l, int *locked)
{
    return rlk_fam_is_locked(l ? &l->b : NULL, locked);
}

int rlk_lock_is_held_by_me(rlk_lock *l, int *held)
{
    return rlk_fam_is_held(l ? &l->b : NULL, RLK_KIND_LOCK, "rlk_lock_owner", held);
}

int rlk_lock_lease(rlk_lock *l, long long *start_ns, long long *deadline_ns)
{
    return rlk_fam_held_lease(l ? &l->b : NULL, RLK_KIND_LOCK, "rlk_lock_owner", start_ns,
                              deadline_ns);
}

int rlk_lock_remaining_ttl(rlk_lock *l, long long *ttl_ms)
{
    return rlk_fam_remaining_ttl(l ? &l->b : NULL, ttl_ms);
}

int rlk_lock_hold_count(rlk_lock *l, long long *count)
{
    return rlk_fam_hold_count(l ? &l->b : NULL, RLK_KIND_LOCK, "rlk_lock_owner", count);
}
