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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/pool.h"
#include "kinds/proto.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/fairlock.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "runtime/wait.h"
#include "runtime/wd.h"

#define RLK_FAIR_CANCEL_LIMIT_NS (300LL * 1000000LL)    /* a cancel after the wait: 300 ms at most */

struct rlk_fairlock {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name}; a waiter's is
                                   <channel>:<owner>; keys: the queue redisson_lock_queue:{name},
                                   the timeouts redisson_lock_timeout:{name} */
    rlk_fam_id id;
    pthread_mutex_t mu;         /* guards thread_wait */
    long long thread_wait;      /* <= 0: RLK_FAIR_THREAD_WAIT_MS */
    int non_reentrant;          /* rlk_fairlock_set_non_reentrant: fair/nonreentrant_acquire */
};

/* One call's view. */
typedef struct rlk_fair_acq {
    rlk_fairlock *f;
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
    long long wait_ms;          /* the keep-alive (thread wait time) this call queues with */
} rlk_fair_acq;

/* rlk_fam_kind.fini: what the handle holds beyond its base. */
static void rlk_fairlock_fini(void *handle)
{
    rlk_fairlock *f = handle;

    rlk_fam_id_destroy(&f->id);
    pthread_mutex_destroy(&f->mu);
}

static const rlk_fam_kind rlk_fair_kind = {
    "rlk_fairlock_new", "lock", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, rlk_fairlock_fini
};

/* The watchdog's task for fair locks (runtime/wd.h): one fair/renew call
 * per lock (KEYS: name, queue, timeouts; ARGV: lease, owner). */
const rlk_renew_task rlk_fairlock_renew_task = {
    "fair/renew", RLK_RENEW_ALONE, rlk_renew_build_one, rlk_renew_reply_one, NULL
};

/* The fair lock's rows (kinds/proto.h): reentrant, and Redisson's non-reentrant fair lock. */
const rlk_proto rlk_fairlock_row = {
    "lock", RLK_KIND_FAIR, "fair",
    "fair/acquire", "lease_ms owner wait_ms",
    "fair/release", "owner lease_ms publish",
    "fair/cancel", "owner publish",
    "fair/force_release", "publish",
    "channel", RLK_PROTO_WAIT_FAIR, 0, "", &rlk_fairlock_renew_task, "lock queue timeouts", 0,
    NULL, NULL, NULL};

const rlk_proto rlk_fairlock_nr_row = {
    "non-reentrant fair lock", RLK_KIND_FAIR, "fair",
    "fair/nonreentrant_acquire", "lease_ms owner wait_ms",
    "fair/release", "owner lease_ms publish",
    "fair/cancel", "owner publish",
    "fair/force_release", "publish",
    "channel", RLK_PROTO_WAIT_FAIR, RLK_PROTO_NON_REENTRANT, "", &rlk_fairlock_renew_task,
    "lock queue timeouts", 0, NULL, NULL, NULL};

/* ---------------------------------------------------------------- handles */

rlk_fairlock *rlk_fairlock_new(rlk_client *c, const char *name)
{
    rlk_fairlock *f = rlk_fam_new(c, name, sizeof *f, &rlk_fair_kind);

    if (!f)
        return NULL;
    rlk_fam_id_init(&f->id);
    pthread_mutex_init(&f->mu, NULL);
    return rlk_fam_made(f, rlk_handle_keys(&f->b, "fair", "channel queue timeouts"));
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
    return f ? rlk_fam_id_set(f->b.c, &f->id, owner, 0, "rlk_fairlock_set_owner") : RLK_ERR_ARG;
}

int rlk_fairlock_owner(const rlk_fairlock *f, char *buf, size_t len)
{
    return f ? rlk_handle_owner(&f->b, &f->id, buf, len, "rlk_fairlock_owner") : RLK_ERR_ARG;
}

int rlk_fairlock_set_thread_wait(rlk_fairlock *f, long long ms)
{
    if (!f)
        return RLK_ERR_ARG;
    if (ms > RLK_NUM_MAX)
        return rlk_set_error(f->b.c, RLK_ERR_ARG,
                             "fair lock %s: thread wait %lld ms is above %lld ms", f->b.name, ms,
                             RLK_NUM_MAX);
    pthread_mutex_lock(&f->mu);
    f->thread_wait = ms > 0 ? ms : 0;
    pthread_mutex_unlock(&f->mu);
    return RLK_OK;
}

/* The keep-alive (thread wait time) of a call: the handle's, else the
 * default. Not the call's wait (Redisson's rule): a dead waiter must leave
 * the queue a short, fixed time after its last attempt. */
static long long rlk_fair_thread_wait(rlk_fairlock *f)
{
    long long ms;

    pthread_mutex_lock(&f->mu);
    ms = f->thread_wait;
    pthread_mutex_unlock(&f->mu);
    return ms > 0 ? ms : RLK_FAIR_THREAD_WAIT_MS;
}

/* ---------------------------------------------------------------- script calls */

static int rlk_fair_acq_init(rlk_fairlock *f, long long wait_ms, long long lease_ms,
                             rlk_fair_acq *a)
{
    int rc = rlk_fam_lease(f->b.c, "fair lock", f->b.name, lease_ms, &a->lease_ms, &a->watchdog);

    if (rc != RLK_OK)
        return rc;
    a->f = f;
    (void)wait_ms;
    a->wait_ms = rlk_fair_thread_wait(f);
    return rlk_fairlock_owner(f, a->owner, sizeof a->owner);
}

/* rlk_fam_release_fn: fair/release. */
static int rlk_fair_release_call(void *arg, const char *owner, long long lease, int *rc)
{
    return rlk_handle_release(&((rlk_fairlock *)arg)->b, &rlk_fairlock_row, "release", NULL,
                              owner, lease, NULL, rc);
}

/* rlk_fam_undo_fn: gives back one hold: an acquisition the registry could not
 * record, one too few replicas acknowledged, or one the caller was never told
 * of (the same holder's release: one hold less). */
static int rlk_fair_undo(void *arg)
{
    rlk_fair_acq *a = arg;
    int rc, outcome = rlk_fair_release_call(a->f, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

/* Leaves the queue (best effort), keeping the calling thread's last error. */
static void rlk_fair_cancel(const rlk_fair_acq *a)
{
    rlk_proto_argvals v = {.owner = a->owner};

    rlk_handle_cancel(&a->f->b, &rlk_fairlock_row, &v, 0);
}

static int rlk_fair_reentry(rlk_fairlock *f, const char *owner)
{
    return rlk_set_error(f->b.c, RLK_ERR_REENTRY,
                         "non-reentrant fair lock %s: already held by %s; not acquired again",
                         f->b.name, owner);
}

int rlk_fairlock_set_non_reentrant(rlk_fairlock *f, int on)
{
    if (!f)
        return RLK_ERR_ARG;
    f->non_reentrant = on != 0;
    return RLK_OK;
}

/* rlk_wait_attempt_fn. RLK_OK: acquired (recorded in the registry).
 * RLK_ERR_BUSY: queued; *ttl the wait the script told (capped, see the top).
 * RLK_ERR_REENTRY: a non-reentrant lock's holder (nothing changed). */
static int rlk_fair_attempt(void *arg, long long *ttl)
{
    rlk_fair_acq *a = arg;
    rlk_fairlock *f = a->f;
    const rlk_proto *row = f->non_reentrant ? &rlk_fairlock_nr_row : &rlk_fairlock_row;
    rlk_proto_argvals v = {.lease_ms = a->lease_ms, .owner = a->owner, .wait_ms = a->wait_ms};
    rlk_hold_spec h = {RLK_KIND_FAIR, f->b.name, a->owner, 3,       /* fair/renew's keys */
                       {f->b.name, f->b.key[RLK_PROTO_KEY_QUEUE],
                        f->b.key[RLK_PROTO_KEY_TIMEOUTS]},
                       f->b.channel,    /* fair/force_release tells the holders here */
                       &rlk_fairlock_renew_task, 0};
    long long sent = rlk_clock_now_ns(), cap = a->wait_ms / 3 > 0 ? a->wait_ms / 3 : 1;
    redisReply *r = NULL;
    int rc;

    RLK_RT_COUNT(f->b.rt, acquire_calls);
    if ((rc = rlk_handle_eval(&f->b, row->acquire, row->acquire_args, &v, &r)) != RLK_OK) {
        if (rc == RLK_ERR_SCRIPT && f->non_reentrant &&
            rlk_proto_refusal(rlk_errstr(f->b.c)) == RLK_ERR_REENTRY)
            return rlk_fair_reentry(f, a->owner);
        return rlk_fam_acquire_lost(&f->b, rc, &h, a->lease_ms, a->watchdog, sent, NULL, NULL,
                                    rlk_fair_undo, a);
    }
    rc = rlk_fam_acquire_reply(f->b.c, "fair lock", f->b.name, row->acquire, r, ttl, NULL);
    freeReplyObject(r);
    if (rc == RLK_ERR_BUSY && (*ttl < 0 || *ttl > cap))
        *ttl = cap;
    if (rc == RLK_OK)
        rc = rlk_fam_record(f->b.rt, &h, a->lease_ms, a->watchdog, sent, 0, rlk_fair_undo, a);
    return rc;
}

/* ---------------------------------------------------------------- locking */

static int rlk_fair_busy(rlk_fairlock *f, long long start_ns)
{
    return rlk_set_error(f->b.c, RLK_ERR_BUSY, "fair lock %s: not this owner's turn after %lld ms",
                         f->b.name, (rlk_clock_now_ns() - start_ns) / 1000000LL);
}

/* The waiter of a, on the owner's own channel *own (malloc'd: the caller
 * frees it), joined already when that channel is still subscribed from an
 * earlier wait of this client (it lingers): the first attempt then counts
 * as one made once subscribed, and no second attempt follows it before the
 * first sleep (no release published after it can be missed). */
static int rlk_fair_waiter(rlk_fair_acq *a, rlk_waiter *w, char **own)
{
    rlk_fairlock *f = a->f;
    size_t len = strlen(f->b.channel) + strlen(a->owner) + 2;

    if (!(*own = malloc(len)))
        return rlk_set_error(f->b.c, RLK_ERR_NOMEM, "fair lock %s: out of memory", f->b.name);
    snprintf(*own, len, "%s:%s", f->b.channel, a->owner);
    /* No local queue: the server's queue orders every thread. */
    rlk_wait_init_lock(w, &f->b, "fair lock", rlk_fair_attempt, a);
    w->channel = *own;
    w->pre_join = 1;
    rlk_wait_pre_join(w);
    return RLK_OK;
}

static int rlk_fairlock_try_lock_run(rlk_fairlock *f, long long wait_ms, long long lease_ms)
{
    long long start = rlk_clock_now_ns(), ttl = -1, limit;
    rlk_fair_acq a;
    rlk_waiter w;
    char *own = NULL;
    int rc;

    if (!f)
        return RLK_ERR_ARG;
    memset(&w, 0, sizeof w);
    if ((rc = rlk_fair_acq_init(f, wait_ms, lease_ms, &a)) != RLK_OK)
        return rc;
    if (f->non_reentrant && rlk_wd_holds_as(f->b.rt->wd, RLK_KIND_FAIR, f->b.name, a.owner))
        return rlk_fair_reentry(f, a.owner);    /* before any I/O, and before any wait */
    if (wait_ms != 0 && (rc = rlk_fair_waiter(&a, &w, &own)) != RLK_OK)
        return rc;
    /* The wait bounds every connect and command of it (rlk_wait does the
     * same for the rest): a server that stopped answering cannot make it
     * last longer. A first attempt refused for a passing reason (LOADING,
     * BUSY) is waited out like a busy lock; an unreachable server is an
     * error at once (only a wait under way rides out a lost connection). */
    limit = rlk_time_limit_enter(wait_ms > 0 ? rlk_wait_deadline(start, wait_ms) : 0);
    rc = rlk_fair_attempt(&a, &ttl);
    if (wait_ms != 0 &&
        (rc == RLK_ERR_BUSY || (rc == RLK_ERR_SERVER && rlk_err_is_transient_reply(f->b.c)))) {
        w.first_failed = rc == RLK_ERR_BUSY ? RLK_OK : rc;
        w.first_bound = ttl;
        if (rc != RLK_ERR_BUSY)
            rlk_wait_pre_leave(&w);     /* a failed first attempt: attempt again once joined */
        rc = rlk_wait(&w, rlk_wait_deadline(start, wait_ms));
    } else if (wait_ms != 0) {
        rlk_wait_pre_leave(&w);
    }
    free(own);
    rlk_time_limit_leave(limit);
    if (rc == RLK_OK || rc == RLK_ERR_SCRIPT || rc == RLK_ERR_REENTRY)
        return rc;              /* a refused script changed nothing */
    limit = rlk_time_limit_enter(rlk_clock_now_ns() + RLK_FAIR_CANCEL_LIMIT_NS);
    rlk_fair_cancel(&a);        /* best effort: else the keep-alive drops it */
    rlk_time_limit_leave(limit);
    return rc == RLK_ERR_BUSY ? rlk_fair_busy(f, start) : rc;
}

int rlk_fairlock_try_lock(rlk_fairlock *f, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(f ? &f->b : NULL);
    int rc = f ? rlk_fairlock_try_lock_run(f, wait_ms, lease_ms) : RLK_ERR_ARG;

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
    if (!f)
        return RLK_ERR_ARG;
    return rlk_fam_unlock(&f->b, RLK_KIND_FAIR, "fair lock", &f->id, "rlk_fairlock_owner", NULL,
                          rlk_fair_release_call, f);
}

static int rlk_fairlock_force(rlk_fairlock *f, int named, int *released)
{
    return f ? rlk_handle_force(&f->b, &rlk_fairlock_row, NULL, NULL, named, NULL, released)
             : RLK_ERR_ARG;
}

int rlk_fairlock_force_unlock(rlk_fairlock *f, int *released)
{
    return rlk_fairlock_force(f, 0, released);
}

int rlk_fairlock_force_unlock_named(rlk_fairlock *f, int *released)
{
    return rlk_fairlock_force(f, 1, released);
}

int rlk_fairlock_clear_queue(rlk_fairlock *f, long long *waiters)
{
    const char *keys[4], *args[1];
    long long n = 0;
    int rc;

    if (!f)
        return RLK_ERR_ARG;
    keys[0] = f->b.name;    /* fair/clear_queue's: lock, queue, timeouts, channel */
    keys[1] = f->b.key[RLK_PROTO_KEY_QUEUE];
    keys[2] = f->b.key[RLK_PROTO_KEY_TIMEOUTS];
    keys[3] = f->b.channel;
    args[0] = rlk_publish_arg(f->b.c);
    rc = rlk_fam_eval_int(f->b.c, "fair/clear_queue", 4, keys, 1, args, NULL, &n);
    if (waiters)
        *waiters = n;
    return rc;
}

/* ---------------------------------------------------------------- queries */

int rlk_fairlock_is_locked(rlk_fairlock *f, int *locked)
{
    return f && locked ? rlk_fam_is_locked(&f->b, locked) : RLK_ERR_ARG;
}

int rlk_fairlock_is_held_by_me(rlk_fairlock *f, int *held)
{
    if (!f || !held)
        return RLK_ERR_ARG;
    return rlk_fam_is_held(&f->b, RLK_KIND_FAIR, &f->id, "rlk_fairlock_owner", held);
}

int rlk_fairlock_lease(rlk_fairlock *f, long long *start_ns, long long *deadline_ns)
{
    if (!f || !start_ns || !deadline_ns)
        return RLK_ERR_ARG;
    return rlk_fam_held_lease(&f->b, RLK_KIND_FAIR, &f->id, "rlk_fairlock_owner", start_ns,
                              deadline_ns);
}

int rlk_fairlock_remaining_ttl(rlk_fairlock *f, long long *ttl_ms)
{
    return f && ttl_ms ? rlk_fam_remaining_ttl(&f->b, ttl_ms) : RLK_ERR_ARG;
}

int rlk_fairlock_hold_count(rlk_fairlock *f, long long *count)
{
    if (!f || !count)
        return RLK_ERR_ARG;
    return rlk_fam_hold_count(&f->b, &f->id, "rlk_fairlock_owner", count);
}

int rlk_fairlock_queue_length(rlk_fairlock *f, long long *n)
{
    const char *argv[2] = {"LLEN", NULL};

    if (!f || !n)
        return RLK_ERR_ARG;
    argv[1] = f->b.key[RLK_PROTO_KEY_QUEUE];
    return rlk_fam_query(f->b.c, f->b.name, 2, argv, 0, n);
}
