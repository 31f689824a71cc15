/*
 * fairlock.c - the fair lock API (rlk_fairlock_*): Redisson's RFairLock on
 * fair/{acquire,release,cancel,renew,force_release} (docs/locks/fair.md).
 *
 * The queue lives in Redis (redisson_lock_queue:{name}, deadlines in
 * redisson_lock_timeout:{name}): the first acquire that does not get the
 * lock puts the owner at the tail, and retries keep its place. A waiter
 * sleeps on its own channel redisson_lock__channel:{name}:<owner>, which
 * only the release (or a cancel, or a force unlock) that makes it the next
 * holder publishes to, at most until the wait its last attempt was told
 * (the holder's PTTL at the head, the deadline of the one ahead behind it)
 * and, unlike Redisson, at most half a thread wait time: deadlines move up
 * by a thread wait time whenever someone ahead acquires, so a waiter behind
 * a dead one would otherwise wake at its own (moved) deadline and be
 * dropped as stale. A waiter that gives up calls fair/cancel. No
 * process-wide local queue: the server's queue orders every thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_internal.h"

#define RLK_FAIR_CHANNEL_PREFIX "redisson_lock__channel"

struct rlk_fairlock {
    rlk_client *c;
    rlk_rt *rt;
    char *name;
    char *queue;                /* redisson_lock_queue:{name} */
    char *timeouts;             /* redisson_lock_timeout:{name} */
    char *channel;              /* redisson_lock__channel:{name}; a waiter's is <channel>:<owner> */
    rlk_fam_id id;
    pthread_mutex_t mu;         /* guards thread_wait */
    long long thread_wait;      /* <= 0: Redisson's rule */
};

/* One call's view. */
typedef struct rlk_fair_acq {
    rlk_fairlock *f;
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
    long long wait_ms;          /* the thread wait time this call queues with */
} rlk_fair_acq;

/* ---------------------------------------------------------------- handles */

static int rlk_fair_alloc_names(rlk_fairlock *f, const char *name)
{
    f->name = strdup(name);
    f->queue = rlk_fam_prefix_name("redisson_lock_queue", name);
    f->timeouts = rlk_fam_prefix_name("redisson_lock_timeout", name);
    f->channel = rlk_fam_prefix_name(RLK_FAIR_CHANNEL_PREFIX, name);
    return f->name && f->queue && f->timeouts && f->channel;
}

rlk_fairlock *rlk_fairlock_new(rlk_client *c, const char *name)
{
    rlk_fairlock *f;

    if (!c)
        return NULL;
    if (!name || !*name) {
        rlk_set_error(c, RLK_ERR_ARG, "rlk_fairlock_new: the lock name must not be empty");
        return NULL;
    }
    f = calloc(1, sizeof *f);
    if (!f || !(f->rt = rlk_rt_get(c))) {
        free(f);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_fairlock_new %s: out of memory", name);
        return NULL;
    }
    f->c = c;
    rlk_fam_id_init(&f->id);
    pthread_mutex_init(&f->mu, NULL);
    if (!rlk_fair_alloc_names(f, name)) {
        rlk_fairlock_free(f);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_fairlock_new %s: out of memory", name);
        return NULL;
    }
    return f;
}

void rlk_fairlock_free(rlk_fairlock *f)
{
    if (!f)
        return;
    rlk_fam_id_destroy(&f->id);
    pthread_mutex_destroy(&f->mu);
    free(f->channel);
    free(f->timeouts);
    free(f->queue);
    free(f->name);
    free(f);
}

const char *rlk_fairlock_name(const rlk_fairlock *f)
{
    return f ? f->name : NULL;
}

const char *rlk_fairlock_queue_name(const rlk_fairlock *f)
{
    return f ? f->queue : NULL;
}

const char *rlk_fairlock_timeout_name(const rlk_fairlock *f)
{
    return f ? f->timeouts : NULL;
}

int rlk_fairlock_set_owner(rlk_fairlock *f, const char *owner)
{
    if (!f)
        return RLK_ERR_ARG;
    return rlk_fam_id_set(f->c, &f->id, owner, 0, "rlk_fairlock_set_owner");
}

int rlk_fairlock_owner(const rlk_fairlock *f, char *buf, size_t len)
{
    rlk_fairlock *m = (rlk_fairlock *)f;    /* the id's mutex only */

    if (!f)
        return RLK_ERR_ARG;
    return rlk_fam_id_get(m->c, m->rt, &m->id, buf, len, "rlk_fairlock_owner");
}

int rlk_fairlock_set_thread_wait(rlk_fairlock *f, long long ms)
{
    if (!f)
        return RLK_ERR_ARG;
    if (ms > RLK_LEASE_MAX_MS)
        return rlk_set_error(f->c, RLK_ERR_ARG,
                             "fair lock %s: thread wait %lld ms is above %lld ms", f->name, ms,
                             RLK_LEASE_MAX_MS);
    pthread_mutex_lock(&f->mu);
    f->thread_wait = ms > 0 ? ms : 0;
    pthread_mutex_unlock(&f->mu);
    return RLK_OK;
}

/* The thread wait time of a call waiting wait_ms. */
static long long rlk_fair_thread_wait(rlk_fairlock *f, long long wait_ms)
{
    long long ms;

    pthread_mutex_lock(&f->mu);
    ms = f->thread_wait;
    pthread_mutex_unlock(&f->mu);
    if (ms > 0)
        return ms;
    if (wait_ms > 0)
        return wait_ms > RLK_LEASE_MAX_MS ? RLK_LEASE_MAX_MS : wait_ms;
    return RLK_FAIR_THREAD_WAIT_MS;
}

/* ---------------------------------------------------------------- script calls */

static int rlk_fair_acq_init(rlk_fairlock *f, long long wait_ms, long long lease_ms,
                             rlk_fair_acq *a)
{
    int rc = rlk_fam_lease(f->c, "fair lock", f->name, lease_ms, &a->lease_ms, &a->watchdog);

    if (rc != RLK_OK)
        return rc;
    a->f = f;
    a->wait_ms = rlk_fair_thread_wait(f, wait_ms);
    return rlk_fairlock_owner(f, a->owner, sizeof a->owner);
}

static void rlk_fair_spec(const rlk_fairlock *f, const char *owner, rlk_hold_spec *h)
{
    memset(h, 0, sizeof *h);
    h->kind = RLK_KIND_FAIR;
    h->name = f->name;
    h->owner = owner;
    h->nkeys = 3;               /* fair/renew: lock, queue, timeouts */
    h->keys[0] = f->name;
    h->keys[1] = f->queue;
    h->keys[2] = f->timeouts;
}

static int rlk_fair_release_call(rlk_fairlock *f, const char *owner, long long lease, int *rc_out)
{
    const char *keys[4] = {f->name, f->queue, f->timeouts, f->channel};
    char lease_s[24];
    const char *args[2] = {owner, lease_s};
    redisReply *r = NULL;
    int outcome = RLK_REL_ERROR;

    snprintf(lease_s, sizeof lease_s, "%lld", lease);
    *rc_out = rlk_evalv(f->c, "fair/release", 4, keys, NULL, 2, args, NULL, &r);
    if (*rc_out == RLK_OK) {
        outcome = rlk_fam_release_outcome(f->c, f->name, r);
        freeReplyObject(r);
        if (outcome == RLK_REL_ERROR)
            *rc_out = RLK_ERR_PROTOCOL;
    }
    return outcome;
}

/* Leaves the queue (best effort), keeping the calling thread's last error. */
static void rlk_fair_cancel(const rlk_fair_acq *a)
{
    rlk_fairlock *f = a->f;
    const char *keys[4] = {f->name, f->queue, f->timeouts, f->channel};
    char wait_s[24], saved[RLK_ERRSTR_MAX];
    const char *args[2] = {a->owner, wait_s};
    redisReply *r = NULL;
    int err = rlk_err(f->c);

    snprintf(saved, sizeof saved, "%s", rlk_errstr(f->c));
    snprintf(wait_s, sizeof wait_s, "%lld", a->wait_ms);
    if (rlk_evalv(f->c, "fair/cancel", 4, keys, NULL, 2, args, NULL, &r) == RLK_OK)
        freeReplyObject(r);
    else
        rlk_set_error(f->c, err, "%s", saved);
}

/* rlk_fam_attempt_fn. RLK_OK: acquired (recorded in the registry).
 * RLK_ERR_BUSY: queued; *ttl the wait the script told (capped, see the top). */
static int rlk_fair_attempt(void *arg, long long *ttl)
{
    rlk_fair_acq *a = arg;
    rlk_fairlock *f = a->f;
    const char *keys[3] = {f->name, f->queue, f->timeouts};
    char lease[24], wait_s[24];
    const char *args[3] = {lease, a->owner, wait_s};
    long long sent = rlk_rt_now_ns(), cap = a->wait_ms / 2 > 0 ? a->wait_ms / 2 : 1;
    redisReply *r = NULL;
    rlk_hold_spec h;
    int rc, undo_rc;

    snprintf(lease, sizeof lease, "%lld", a->lease_ms);
    snprintf(wait_s, sizeof wait_s, "%lld", a->wait_ms);
    RLK_RT_COUNT(f->rt, acquire_calls);
    if ((rc = rlk_evalv(f->c, "fair/acquire", 3, keys, NULL, 3, args, NULL, &r)) != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL) {
        rlk_fair_spec(f, a->owner, &h);
        rc = rlk_wd_acquired_as(f->rt->wd, &h, a->lease_ms, a->watchdog, sent, 0);
        if (rc != RLK_OK)
            rlk_fair_release_call(f, a->owner, a->lease_ms, &undo_rc);   /* best effort */
        else
            RLK_RT_COUNT(f->rt, acquired);
    } else if (r->type == REDIS_REPLY_INTEGER) {
        *ttl = r->integer < 0 || r->integer > cap ? cap : r->integer;
        rc = RLK_ERR_BUSY;
    } else {
        rc = rlk_set_error(f->c, RLK_ERR_PROTOCOL, "fair lock %s: fair/acquire replied type %d",
                           f->name, r->type);
    }
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- locking */

static int rlk_fair_busy(rlk_fairlock *f, long long start_ns)
{
    return rlk_set_error(f->c, RLK_ERR_BUSY, "fair lock %s: not this owner's turn after %lld ms",
                         f->name, (rlk_rt_now_ns() - start_ns) / 1000000LL);
}

/* Waits on the owner's own channel until acquired, an error or the deadline. */
static int rlk_fair_wait(rlk_fair_acq *a, long long deadline)
{
    rlk_fairlock *f = a->f;
    size_t len = strlen(f->channel) + strlen(a->owner) + 2;
    char *own = malloc(len);
    rlk_sub_chan *ch;
    int rc;

    if (!own)
        return rlk_set_error(f->c, RLK_ERR_NOMEM, "fair lock %s: out of memory", f->name);
    snprintf(own, len, "%s:%s", f->channel, a->owner);
    rc = rlk_sub_join(f->rt->sub, own, &ch);
    if (rc == RLK_OK) {
        rc = rlk_fam_wait(f->rt, ch, deadline, rlk_fair_attempt, a);
        rlk_sub_leave(f->rt->sub, ch);
    }
    free(own);
    return rc;
}

int rlk_fairlock_try_lock(rlk_fairlock *f, long long wait_ms, long long lease_ms)
{
    long long start = rlk_rt_now_ns(), ttl = -1;
    rlk_fair_acq a;
    int rc;

    if (!f)
        return RLK_ERR_ARG;
    if ((rc = rlk_fair_acq_init(f, wait_ms, lease_ms, &a)) != RLK_OK)
        return rc;
    rc = rlk_fair_attempt(&a, &ttl);
    if (rc == RLK_ERR_BUSY && wait_ms != 0)
        rc = rlk_fair_wait(&a, rlk_fam_deadline(start, wait_ms));
    if (rc == RLK_OK || rc == RLK_ERR_SCRIPT)
        return rc;              /* a refused script changed nothing */
    rlk_fair_cancel(&a);
    return rc == RLK_ERR_BUSY ? rlk_fair_busy(f, start) : rc;
}

int rlk_fairlock_lock(rlk_fairlock *f, long long lease_ms)
{
    return rlk_fairlock_try_lock(f, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

int rlk_fairlock_unlock(rlk_fairlock *f)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_wd_ticket t;
    long long lease;
    int rc, outcome;

    if (!f)
        return RLK_ERR_ARG;
    if ((rc = rlk_fairlock_owner(f, owner, sizeof owner)) != RLK_OK)
        return rc;
    lease = rlk_wd_release_begin_as(f->rt->wd, RLK_KIND_FAIR, f->name, owner, &t);
    outcome = rlk_fair_release_call(f, owner, lease, &rc);
    rlk_wd_release_end(f->rt->wd, &t, outcome);
    if (outcome == RLK_REL_NOT_OWNER)
        rc = rlk_set_error(f->c, RLK_ERR_NOT_OWNER, "unlock fair lock %s: not held by %s",
                           f->name, owner);
    return rc;
}

int rlk_fairlock_force_unlock(rlk_fairlock *f, int *released)
{
    const char *keys[4];
    redisReply *r = NULL;
    int rc;

    if (!f)
        return RLK_ERR_ARG;
    keys[0] = f->name;
    keys[1] = f->queue;
    keys[2] = f->timeouts;
    keys[3] = f->channel;
    rlk_wd_forget_name(f->rt->wd, f->name);
    rc = rlk_evalv(f->c, "fair/force_release", 4, keys, NULL, 0, NULL, NULL, &r);
    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (released)
            *released = r->integer == 1;
    } else {
        rc = rlk_set_error(f->c, RLK_ERR_PROTOCOL, "force unlock %s: reply type %d", f->name,
                           r->type);
    }
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- queries */

static int rlk_fair_query2(rlk_fairlock *f, const char *cmd, const char *key, long long nil_value,
                           long long *out)
{
    const char *argv[2];

    argv[0] = cmd;
    argv[1] = key;
    return rlk_fam_query(f->c, f->name, 2, argv, nil_value, out);
}

/* HEXISTS / HGET of the caller's field. */
static int rlk_fair_query_owner(rlk_fairlock *f, const char *cmd, long long *out)
{
    char owner[RLK_OWNER_MAX + 1];
    const char *argv[3];
    int rc;

    *out = 0;
    if ((rc = rlk_fairlock_owner(f, owner, sizeof owner)) != RLK_OK)
        return rc;
    if (strcmp(cmd, "HEXISTS") == 0 && rlk_wd_is_lost_as(f->rt->wd, RLK_KIND_FAIR, f->name, owner))
        return RLK_OK;
    argv[0] = cmd;
    argv[1] = f->name;
    argv[2] = owner;
    return rlk_fam_query(f->c, f->name, 3, argv, 0, out);
}

int rlk_fairlock_is_locked(rlk_fairlock *f, int *locked)
{
    long long n = 0;
    int rc;

    if (!f || !locked)
        return RLK_ERR_ARG;
    rc = rlk_fair_query2(f, "EXISTS", f->name, 0, &n);
    *locked = rc == RLK_OK && n > 0;
    return rc;
}

int rlk_fairlock_is_held_by_me(rlk_fairlock *f, int *held)
{
    long long n = 0;
    int rc;

    if (!f || !held)
        return RLK_ERR_ARG;
    rc = rlk_fair_query_owner(f, "HEXISTS", &n);
    *held = rc == RLK_OK && n == 1;
    return rc;
}

int rlk_fairlock_hold_count(rlk_fairlock *f, long long *count)
{
    if (!f || !count)
        return RLK_ERR_ARG;
    return rlk_fair_query_owner(f, "HGET", count);
}

int rlk_fairlock_remaining_ttl(rlk_fairlock *f, long long *ttl_ms)
{
    if (!f || !ttl_ms)
        return RLK_ERR_ARG;
    return rlk_fair_query2(f, "PTTL", f->name, -2, ttl_ms);
}

int rlk_fairlock_queue_length(rlk_fairlock *f, long long *n)
{
    if (!f || !n)
        return RLK_ERR_ARG;
    return rlk_fair_query2(f, "LLEN", f->queue, 0, n);
}
