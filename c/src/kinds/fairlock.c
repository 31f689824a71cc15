/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fairlock.c - the fair lock API (rlk_fairlock_*): Redisson's RFairLock on
 * fair/{acquire,release,cancel,renew,force_release}, and clear_queue for rlk
 * unlock --queue (docs/locks/fair.md).
 *
 * The queue lives in Redis (redisson_lock_queue:{name}, deadlines in
 * redisson_lock_timeout:{name}): the first acquire that does not get the
 * lock puts the owner at the tail, and retries keep its place. A waiter
 * sleeps on its own channel redisson_lock__channel:{name}:<owner>, which
 * only the release (or a cancel, or a force unlock) that makes it the next
 * holder publishes to, at most until the wait its last attempt was told
 * (the holder's PTTL at the head, the head's deadline behind it) and at
 * most a third of its keep-alive (the "thread wait time"): every attempt
 * moves its deadline to now + keep-alive, and the scripts drop any waiter
 * whose deadline passed, so a waiter that died leaves the queue at most a
 * keep-alive after its last attempt. A waiter that gives up (its wait ran
 * out, an error, rlk_interrupt_waits) calls fair/cancel. No process-wide
 * local queue: the server's queue orders every thread.
 */
#include <stdatomic.h>

#include "client/error.h"
#include "kinds/fairlock.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"

struct rlk_fairlock {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name}; a waiter's is
                                   <channel>:<owner>; keys: the queue redisson_lock_queue:{name},
                                   the timeouts redisson_lock_timeout:{name} */
    _Atomic long long thread_wait;      /* <= 0: RLK_FAIR_THREAD_WAIT_MS */
    int non_reentrant;          /* rlk_fairlock_set_non_reentrant: fair/nonreentrant_acquire */
};

static const rlk_fam_kind rlk_fair_kind = {
    "rlk_fairlock_new", "lock", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, NULL
};

/* The watchdog's task for fair locks (runtime/wd.h): one fair/renew call
 * per lock (KEYS: name, queue, timeouts; ARGV: lease, owner). */
const rlk_renew_task rlk_fairlock_renew_task = {
    "fair/renew", RLK_RENEW_ALONE, rlk_renew_build_one, rlk_renew_reply_one, NULL
};

/* The fair lock's rows (kinds/proto.h): reentrant, and Redisson's non-reentrant fair lock. */
#define RLK_FAIR_ROW                                                                              \
    .hold = RLK_KIND_FAIR, .names = "fair", .acquire_args = "lease_ms owner wait_ms",            \
    .release = "fair/release", .release_args = "owner lease_ms publish", .cancel = "fair/cancel", \
    .cancel_args = "owner publish", .force = "fair/force_release", .force_args = "publish",     \
    .wait_channel = "channel", .wait = RLK_PROTO_WAIT_FAIR, .renew = &rlk_fairlock_renew_task,  \
    .renew_keys = "lock queue timeouts", .busy = "not this owner's turn"

const rlk_proto rlk_fairlock_row = {RLK_FAIR_ROW, .what = "fair lock",
                                    .acquire = "fair/acquire"};

const rlk_proto rlk_fairlock_nr_row = {RLK_FAIR_ROW, .what = "non-reentrant fair lock",
                                       .acquire = "fair/nonreentrant_acquire",
                                       .flags = RLK_PROTO_NON_REENTRANT};

/* ---------------------------------------------------------------- handles */

rlk_fairlock *rlk_fairlock_new(rlk_client *c, const char *name)
{
    return rlk_handle_new(c, name, sizeof(rlk_fairlock), &rlk_fair_kind, 0,
                          "fair", "channel queue timeouts");
}

void rlk_fairlock_free(rlk_fairlock *f)
{
    rlk_fam_free(f);
}

const char *rlk_fairlock_name(const rlk_fairlock *f)
{
    return f ? f->b.name : NULL;
}

const char *rlk_fairlock_queue_name(const rlk_fairlock *f)
{
    return f ? f->b.key[RLK_PROTO_KEY_QUEUE] : NULL;
}

const char *rlk_fairlock_timeout_name(const rlk_fairlock *f)
{
    return f ? f->b.key[RLK_PROTO_KEY_TIMEOUTS] : NULL;
}

int rlk_fairlock_set_owner(rlk_fairlock *f, const char *owner)
{
    return f ? rlk_fam_id_set(f->b.c, &f->b.id, owner, 0, "rlk_fairlock_set_owner") : RLK_ERR_ARG;
}

int rlk_fairlock_owner(const rlk_fairlock *f, char *buf, size_t len)
{
    return f ? rlk_handle_owner(&f->b, buf, len, "rlk_fairlock_owner") : RLK_ERR_ARG;
}

int rlk_fairlock_set_thread_wait(rlk_fairlock *f, long long ms)
{
    if (!f)
        return RLK_ERR_ARG;
    if (ms > RLK_NUM_MAX)
        return rlk_set_error(f->b.c, RLK_ERR_ARG,
                             "fair lock %s: thread wait %lld ms is above %lld ms", f->b.name, ms,
                             RLK_NUM_MAX);
    atomic_store(&f->thread_wait, ms > 0 ? ms : 0);
    return RLK_OK;
}

/* ---------------------------------------------------------------- locking */

int rlk_fairlock_set_non_reentrant(rlk_fairlock *f, int on)
{
    if (!f)
        return RLK_ERR_ARG;
    f->non_reentrant = on != 0;
    return RLK_OK;
}

/* The row's wait (RLK_PROTO_WAIT_FAIR, kinds/handle.c rlk_handle_drive): on the owner's own
 * channel, each sleep at most the wait the attempt was told and at most a third of the
 * keep-alive; the wait bounds every connect and command of it, and a waiter that gives up
 * leaves the queue by fair/cancel (see the top). */
int rlk_fairlock_try_lock(rlk_fairlock *f, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(f ? &f->b : NULL);
    rlk_handle_acq a;
    int rc = f ? rlk_handle_acq_start(&a, f, &f->b, "rlk_fairlock_owner",
                                      f->non_reentrant ? &rlk_fairlock_nr_row : &rlk_fairlock_row,
                                      lease_ms, NULL)
               : RLK_ERR_ARG;

    if (rc == RLK_OK) {
        /* The keep-alive (thread wait time): the handle's, else the default. Not the call's
         * wait (Redisson's rule): a dead waiter must leave the queue a short, fixed time after
         * its last attempt. */
        a.v.wait_ms = atomic_load(&f->thread_wait);
        if (a.v.wait_ms <= 0)
            a.v.wait_ms = RLK_FAIR_THREAD_WAIT_MS;
        a.ttl_cap = a.v.wait_ms / 3 > 0 ? a.v.wait_ms / 3 : 1;
        rc = rlk_handle_drive(&a, wait_ms);
    }
    return rlk_handle_call_end(&hc, RLK_KIND_FAIR, rc);
}

int rlk_fairlock_lock(rlk_fairlock *f, long long lease_ms)
{
    return rlk_fairlock_try_lock(f, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

/* No local queue: the server's queue orders every thread */
int rlk_fairlock_unlock(rlk_fairlock *f)
{
    return f ? rlk_handle_unlock(&f->b, &rlk_fairlock_row, "fair lock", "rlk_fairlock_owner",
                                 NULL, NULL)
             : RLK_ERR_ARG;
}

int rlk_fairlock_force_unlock(rlk_fairlock *f, int *released)
{
    return f ? rlk_handle_force(&f->b, &rlk_fairlock_row, NULL, NULL, 0, NULL, released)
             : RLK_ERR_ARG;
}

int rlk_fairlock_force_unlock_named(rlk_fairlock *f, int *released)
{
    return f ? rlk_handle_force(&f->b, &rlk_fairlock_row, NULL, NULL, 1, NULL, released)
             : RLK_ERR_ARG;
}

/* fair/clear_queue (KEYS: lock, queue, timeouts, channel) */
int rlk_fairlock_clear_queue(rlk_fairlock *f, long long *waiters)
{
    static const rlk_proto_call clear = {"fair/clear_queue", "publish"};

    if (waiters)
        *waiters = 0;
    return f ? rlk_handle_int(&f->b, &clear, NULL, waiters) : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- queries */

int rlk_fairlock_is_locked(rlk_fairlock *f, int *locked)
{
    return rlk_fam_is_locked(f ? &f->b : NULL, locked);
}

int rlk_fairlock_is_held_by_me(rlk_fairlock *f, int *held)
{
    return rlk_fam_is_held(f ? &f->b : NULL, RLK_KIND_FAIR, "rlk_fairlock_owner", held);
}

int rlk_fairlock_lease(rlk_fairlock *f, long long *start_ns, long long *deadline_ns)
{
    return rlk_fam_held_lease(f ? &f->b : NULL, RLK_KIND_FAIR, "rlk_fairlock_owner", start_ns,
                              deadline_ns);
}

int rlk_fairlock_remaining_ttl(rlk_fairlock *f, long long *ttl_ms)
{
    return rlk_fam_remaining_ttl(f ? &f->b : NULL, ttl_ms);
}

int rlk_fairlock_hold_count(rlk_fairlock *f, long long *count)
{
    return rlk_fam_hold_count(f ? &f->b : NULL, RLK_KIND_FAIR, "rlk_fairlock_owner", count);
}

int rlk_fairlock_queue_length(rlk_fairlock *f, long long *n)
{
    const char *argv[2] = {"LLEN", NULL};

    if (!f || !n)
        return RLK_ERR_ARG;
    argv[1] = f->b.key[RLK_PROTO_KEY_QUEUE];
    return rlk_fam_query(f->b.c, f->b.name, 2, argv, 0, n);
}
