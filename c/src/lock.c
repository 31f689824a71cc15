/*
 * lock.c - the reentrant lock API (rlk_lock_*): Redisson's RLock on
 * reentrant/{acquire,release,force_release}, waiting through the client's
 * subscriber and the process-wide local queue, lease-less holds renewed by
 * the client's watchdog. docs/runtime.md describes the algorithm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_internal.h"

#define RLK_CHANNEL_PREFIX "redisson_lock__channel"
#define RLK_LEASE_MAX 1000000000000LL
#define RLK_POLL_NS (100LL * 1000000LL)     /* retry period while the subscriber is down */

struct rlk_lock {
    rlk_client *c;
    rlk_rt *rt;
    char *name;
    char *channel;              /* redisson_lock__channel:{name} */
    rlk_lq *q;
    pthread_mutex_t mu;         /* guards fixed_owner */
    char *fixed_owner;          /* NULL: per-thread holder ids */
};

/* One call's view: who asks, for how long. */
typedef struct rlk_acq {
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
} rlk_acq;

/* ---------------------------------------------------------------- handles */

/* Redisson's prefixName: "redisson_lock__channel:{name}", or without the
 * braces when the name already carries a hash tag. */
static char *rlk_channel_of(const char *name)
{
    return rlk_fam_prefix_name(RLK_CHANNEL_PREFIX, name);
}

rlk_lock *rlk_lock_new(rlk_client *c, const char *name)
{
    rlk_lock *l;

    if (!c)
        return NULL;
    if (!name || !*name) {
        rlk_set_error(c, RLK_ERR_ARG, "rlk_lock_new: the lock name must not be empty");
        return NULL;
    }
    l = calloc(1, sizeof *l);
    if (!l || !(l->rt = rlk_rt_get(c))) {
        free(l);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_lock_new %s: out of memory", name);
        return NULL;
    }
    l->c = c;
    l->name = strdup(name);
    l->channel = rlk_channel_of(name);
    l->q = rlk_lq_get(c->addr, c->url.db, name);
    pthread_mutex_init(&l->mu, NULL);
    if (!l->name || !l->channel || !l->q) {
        rlk_lock_free(l);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_lock_new %s: out of memory", name);
        return NULL;
    }
    return l;
}

void rlk_lock_free(rlk_lock *l)
{
    if (!l)
        return;
    rlk_lq_put(l->q);
    pthread_mutex_destroy(&l->mu);
    free(l->fixed_owner);
    free(l->channel);
    free(l->name);
    free(l);
}

const char *rlk_lock_name(const rlk_lock *l)
{
    return l ? l->name : NULL;
}

int rlk_lock_set_owner(rlk_lock *l, const char *owner)
{
    char *copy = NULL;

    if (!l)
        return RLK_ERR_ARG;
    if (owner) {
        size_t len = strlen(owner);

        if (len < 1 || len > RLK_OWNER_MAX)
            return rlk_set_error(l->c, RLK_ERR_ARG, "rlk_lock_set_owner: owner must be 1..%d bytes",
                                 RLK_OWNER_MAX);
        if (!(copy = strdup(owner)))
            return rlk_set_error(l->c, RLK_ERR_NOMEM, "rlk_lock_set_owner: out of memory");
    }
    pthread_mutex_lock(&l->mu);
    free(l->fixed_owner);
    l->fixed_owner = copy;
    pthread_mutex_unlock(&l->mu);
    return RLK_OK;
}

int rlk_lock_owner(const rlk_lock *l, char *buf, size_t len)
{
    rlk_lock *m = (rlk_lock *)l;    /* the mutex only */
    int rc = RLK_OK;

    if (!l || !buf || len == 0)
        return RLK_ERR_ARG;
    pthread_mutex_lock(&m->mu);
    if (l->fixed_owner) {
        if ((size_t)snprintf(buf, len, "%s", l->fixed_owner) >= len)
            rc = RLK_ERR_ARG;
    } else {
        rc = rlk_rt_thread_owner(l->rt, buf, len);
    }
    pthread_mutex_unlock(&m->mu);
    if (rc != RLK_OK)
        return rlk_set_error(l->c, rc, "rlk_lock_owner: buffer of %zu bytes too short", len);
    return RLK_OK;
}

/* ---------------------------------------------------------------- one acquire attempt */

static int rlk_acq_init(rlk_lock *l, long long lease_ms, rlk_acq *a)
{
    if (lease_ms > RLK_LEASE_MAX)
        return rlk_set_error(l->c, RLK_ERR_ARG, "lock %s: lease %lld ms is above %lld ms",
                             l->name, lease_ms, RLK_LEASE_MAX);
    a->watchdog = lease_ms <= 0;
    a->lease_ms = a->watchdog ? l->c->watchdog_lease_ms : lease_ms;
    if (a->lease_ms > RLK_LEASE_MAX)
        a->lease_ms = RLK_LEASE_MAX;
    return rlk_lock_owner(l, a->owner, sizeof a->owner);
}

/* Best effort: gives back a hold the registry could not record. */
static void rlk_lock_undo(rlk_lock *l, const rlk_acq *a)
{
    const char *keys[2] = {l->name, l->channel};
    char lease[24];
    const char *args[2] = {a->owner, lease};
    redisReply *r = NULL;

    snprintf(lease, sizeof lease, "%lld", a->lease_ms);
    if (rlk_evalv(l->c, "reentrant/release", 2, keys, NULL, 2, args, NULL, &r) == RLK_OK)
        freeReplyObject(r);
}

/* RLK_OK: acquired (recorded in the registry). RLK_ERR_BUSY: held by
 * another, *ttl is its PTTL (-1: none); no error recorded. Else an error. */
static int rlk_lock_attempt(rlk_lock *l, const rlk_acq *a, long long *ttl)
{
    const char *keys[1] = {l->name};
    char lease[24];
    const char *args[2] = {lease, a->owner};
    long long sent = rlk_rt_now_ns();
    redisReply *r = NULL;
    int rc;

    snprintf(lease, sizeof lease, "%lld", a->lease_ms);
    RLK_RT_COUNT(l->rt, acquire_calls);
    rc = rlk_evalv(l->c, "reentrant/acquire", 1, keys, NULL, 2, args, NULL, &r);
    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_NIL) {
        rc = rlk_wd_acquired(l->rt->wd, l->name, a->owner, a->lease_ms, a->watchdog, sent);
        if (rc != RLK_OK)
            rlk_lock_undo(l, a);
        else
            RLK_RT_COUNT(l->rt, acquired);
    } else if (r->type == REDIS_REPLY_INTEGER) {
        *ttl = r->integer;
        rc = RLK_ERR_BUSY;
    } else {
        rc = rlk_set_error(l->c, RLK_ERR_PROTOCOL, "lock %s: reentrant/acquire replied type %d",
                           l->name, r->type);
    }
    freeReplyObject(r);
    return rc;
}

static int rlk_lock_busy(rlk_lock *l, long long start_ns)
{
    return rlk_set_error(l->c, RLK_ERR_BUSY, "lock %s: held by another holder after %lld ms",
                         l->name, (rlk_rt_now_ns() - start_ns) / 1000000LL);
}

/* ---------------------------------------------------------------- waiting */

/* How long to sleep after a failed attempt: the holder's TTL (a lock that
 * expires wakes nobody), the poll period while the subscriber is down, and
 * the caller's deadline. *by_ttl tells whether the TTL is the bound. */
static long long rlk_lock_sleep_until(long long ttl, int sub_down, long long deadline,
                                      int *by_ttl)
{
    long long now = rlk_rt_now_ns();
    long long until = ttl >= 0 ? now + (ttl > 0 ? ttl : 1) * 1000000LL : -1;

    *by_ttl = ttl >= 0;
    if (sub_down && (until < 0 || now + RLK_POLL_NS < until)) {
        until = now + RLK_POLL_NS;
        *by_ttl = 0;
    }
    if (deadline >= 0 && (until < 0 || deadline <= until)) {
        until = deadline;
        *by_ttl = 0;
    }
    return until;
}

/* While the subscriber cannot reach the server either, a connection error
 * of a retry is taken for an outage and ridden out (polling) for up to the
 * connect timeout, so a waiter survives a server restart. Returns 1 to
 * keep waiting. */
static int rlk_lock_outage(rlk_lock *l, int rc, int ready, long long *outage_start)
{
    long long now = rlk_rt_now_ns();

    if (rc != RLK_ERR_IO || ready != RLK_SUB_DOWN) {
        *outage_start = 0;
        return 0;
    }
    if (*outage_start == 0)
        *outage_start = now;
    return now - *outage_start < (long long)l->c->connect_timeout_ms * 1000000LL;
}

/* The head of the local queue: subscribed; retries until acquired, an
 * error, or the deadline (RLK_ERR_BUSY, no error recorded). */
static int rlk_lock_wait_head(rlk_lock *l, const rlk_acq *a, rlk_sub_chan *ch, long long deadline)
{
    rlk_sub *sub = l->rt->sub;
    long long outage_start = 0;

    for (;;) {
        unsigned long long mark;
        long long ttl = -1, until;
        int ready, by_ttl, rc;

        ready = rlk_sub_ready(sub, ch, deadline, &mark);
        if (ready == RLK_SUB_TIMEOUT)
            return RLK_ERR_BUSY;
        rc = rlk_lock_attempt(l, a, &ttl);
        if (rlk_lock_outage(l, rc, ready, &outage_start))
            rc = RLK_ERR_BUSY;      /* ttl stays -1: the poll period bounds the sleep */
        if (rc != RLK_ERR_BUSY)
            return rc;
        until = rlk_lock_sleep_until(ttl, ready == RLK_SUB_DOWN, deadline, &by_ttl);
        if (until >= 0 && rlk_rt_now_ns() >= until && until == deadline)
            return RLK_ERR_BUSY;
        if (rlk_sub_wait(sub, ch, mark, until) == RLK_SUB_TIMEOUT) {
            if (by_ttl)
                RLK_RT_COUNT(l->rt, ttl_wakeups);
            if (until == deadline)
                return RLK_ERR_BUSY;
        }
    }
}

static int rlk_lock_wait(rlk_lock *l, const rlk_acq *a, long long deadline)
{
    rlk_lq_node node;
    rlk_sub_chan *ch;
    int rc = rlk_lq_enter(l->q, &node, deadline);

    if (rc == RLK_ERR_NOMEM)
        return rlk_set_error(l->c, rc, "lock %s: out of resources for a waiter", l->name);
    if (rc != RLK_OK)
        return rc;
    rc = rlk_sub_join(l->rt->sub, l->channel, &ch);
    if (rc == RLK_OK) {
        rlk_lq_set_sub(l->q, &node, l->rt->sub, ch);
        rc = rlk_lock_wait_head(l, a, ch, deadline);
        rlk_lq_leave(l->q, &node);      /* first: the next waiter may share the subscription */
        rlk_sub_leave(l->rt->sub, ch);
    } else {
        rlk_lq_leave(l->q, &node);
    }
    return rc;
}

int rlk_lock_try_lock(rlk_lock *l, long long wait_ms, long long lease_ms)
{
    long long start = rlk_rt_now_ns(), ttl = -1, deadline;
    rlk_acq a;
    int rc;

    if (!l)
        return RLK_ERR_ARG;
    if ((rc = rlk_acq_init(l, lease_ms, &a)) != RLK_OK)
        return rc;
    /* One attempt straight away when it cannot overtake a local waiter:
     * a single try, a re-entry, or nobody queued here. */
    if (wait_ms == 0 || rlk_wd_holds(l->rt->wd, l->name, a.owner) || !rlk_lq_busy(l->q)) {
        rc = rlk_lock_attempt(l, &a, &ttl);
        if (rc != RLK_ERR_BUSY)
            return rc;
        if (wait_ms == 0)
            return rlk_lock_busy(l, start);
    }
    deadline = wait_ms < 0 ? -1 : start + (wait_ms > RLK_LEASE_MAX ? RLK_LEASE_MAX : wait_ms) * 1000000LL;
    rc = rlk_lock_wait(l, &a, deadline);
    return rc == RLK_ERR_BUSY ? rlk_lock_busy(l, start) : rc;
}

int rlk_lock_lock(rlk_lock *l, long long lease_ms)
{
    return rlk_lock_try_lock(l, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

static int rlk_release_outcome(rlk_lock *l, const redisReply *r)
{
    if (r->type == REDIS_REPLY_NIL)
        return RLK_REL_NOT_OWNER;
    if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
        return r->integer ? RLK_REL_RELEASED : RLK_REL_STILL_HELD;
    rlk_set_error(l->c, RLK_ERR_PROTOCOL, "unlock %s: reentrant/release replied type %d",
                  l->name, r->type);
    return RLK_REL_ERROR;
}

int rlk_lock_unlock(rlk_lock *l)
{
    const char *keys[2], *args[2];
    char owner[RLK_OWNER_MAX + 1], lease[24];
    redisReply *r = NULL;
    rlk_wd_ticket t;
    int rc, outcome = RLK_REL_ERROR;

    if (!l)
        return RLK_ERR_ARG;
    if ((rc = rlk_lock_owner(l, owner, sizeof owner)) != RLK_OK)
        return rc;
    /* Out of the watchdog's registry before the release is sent. */
    snprintf(lease, sizeof lease, "%lld", rlk_wd_release_begin(l->rt->wd, l->name, owner, &t));
    keys[0] = l->name;
    keys[1] = l->channel;
    args[0] = owner;
    args[1] = lease;
    rc = rlk_evalv(l->c, "reentrant/release", 2, keys, NULL, 2, args, NULL, &r);
    if (rc == RLK_OK) {
        outcome = rlk_release_outcome(l, r);
        freeReplyObject(r);
        if (outcome == RLK_REL_ERROR)
            rc = RLK_ERR_PROTOCOL;
    }
    rlk_wd_release_end(l->rt->wd, &t, outcome);
    if (outcome == RLK_REL_RELEASED)
        rlk_lq_poke(l->q);
    if (outcome == RLK_REL_NOT_OWNER)
        rc = rlk_set_error(l->c, RLK_ERR_NOT_OWNER, "unlock %s: not held by %s", l->name, owner);
    return rc;
}

int rlk_lock_force_unlock(rlk_lock *l, int *released)
{
    const char *keys[2];
    redisReply *r = NULL;
    int rc;

    if (!l)
        return RLK_ERR_ARG;
    keys[0] = l->name;
    keys[1] = l->channel;
    rlk_wd_forget_name(l->rt->wd, l->name);
    rc = rlk_evalv(l->c, "reentrant/force_release", 2, keys, NULL, 0, NULL, NULL, &r);
    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (released)
            *released = r->integer == 1;
        if (r->integer == 1)
            rlk_lq_poke(l->q);
    } else {
        rc = rlk_set_error(l->c, RLK_ERR_PROTOCOL, "force unlock %s: reply type %d", l->name,
                           r->type);
    }
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- queries */

/* A command whose reply must be an integer (or nil, read as nil_value). */
static int rlk_lock_query(rlk_lock *l, int argc, const char **argv, long long nil_value,
                          long long *out)
{
    redisReply *r = NULL;
    int rc = rlk_command(l->c, argc, argv, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
    } else if (r->type == REDIS_REPLY_NIL) {
        *out = nil_value;
    } else if (r->type == REDIS_REPLY_STRING) {
        char *end;

        *out = strtoll(r->str, &end, 10);
        if (end == r->str || *end)
            rc = rlk_set_error(l->c, RLK_ERR_PROTOCOL, "%s %s: not a number", argv[0], l->name);
    } else {
        rc = rlk_set_error(l->c, RLK_ERR_PROTOCOL, "%s %s: reply type %d", argv[0], l->name,
                           r->type);
    }
    freeReplyObject(r);
    return rc;
}

int rlk_lock_is_locked(rlk_lock *l, int *locked)
{
    const char *argv[2];
    long long n = 0;
    int rc;

    if (!l || !locked)
        return RLK_ERR_ARG;
    argv[0] = "EXISTS";
    argv[1] = l->name;
    rc = rlk_lock_query(l, 2, argv, 0, &n);
    *locked = rc == RLK_OK && n > 0;
    return rc;
}

int rlk_lock_is_held_by_me(rlk_lock *l, int *held)
{
    char owner[RLK_OWNER_MAX + 1];
    const char *argv[3];
    long long n = 0;
    int rc;

    if (!l || !held)
        return RLK_ERR_ARG;
    *held = 0;
    if ((rc = rlk_lock_owner(l, owner, sizeof owner)) != RLK_OK)
        return rc;
    if (rlk_wd_is_lost(l->rt->wd, l->name, owner))
        return RLK_OK;
    argv[0] = "HEXISTS";
    argv[1] = l->name;
    argv[2] = owner;
    rc = rlk_lock_query(l, 3, argv, 0, &n);
    *held = rc == RLK_OK && n == 1;
    return rc;
}

int rlk_lock_hold_count(rlk_lock *l, long long *count)
{
    char owner[RLK_OWNER_MAX + 1];
    const char *argv[3];
    int rc;

    if (!l || !count)
        return RLK_ERR_ARG;
    *count = 0;
    if ((rc = rlk_lock_owner(l, owner, sizeof owner)) != RLK_OK)
        return rc;
    argv[0] = "HGET";
    argv[1] = l->name;
    argv[2] = owner;
    return rlk_lock_query(l, 3, argv, 0, count);
}

int rlk_lock_remaining_ttl(rlk_lock *l, long long *ttl_ms)
{
    const char *argv[2];

    if (!l || !ttl_ms)
        return RLK_ERR_ARG;
    argv[0] = "PTTL";
    argv[1] = l->name;
    return rlk_lock_query(l, 2, argv, -2, ttl_ms);
}
