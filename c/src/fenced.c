/*
 * fenced.c - the fenced lock API (rlk_fenced_*): Redisson's RFencedLock on
 * fenced/{acquire,release,renew,token} and reentrant/force_release
 * (docs/locks/fenced.md). A reentrant lock (same hash and channel as
 * rlk_lock `name`) whose every acquisition returns a fencing token from the
 * acquire script itself.
 *
 * Waiting is lock.c's: the process-wide local queue of `name` (shared with
 * rlk_lock handles of the same name, which use the same hash), only its
 * head subscribed to redisson_lock__channel:{name} and retrying.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_internal.h"

struct rlk_fenced {
    rlk_client *c;
    rlk_rt *rt;
    char *name;
    char *channel;              /* redisson_lock__channel:{name} */
    char *token_key;            /* redisson_lock_token:{name} */
    rlk_lq *q;
    rlk_fam_id id;
};

/* One call's view. */
typedef struct rlk_fenced_acq {
    rlk_fenced *f;
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
    long long token;            /* of the acquisition, once acquired */
} rlk_fenced_acq;

/* ---------------------------------------------------------------- handles */

rlk_fenced *rlk_fenced_new(rlk_client *c, const char *name)
{
    rlk_fenced *f;

    if (!c)
        return NULL;
    if (!name || !*name) {
        rlk_set_error(c, RLK_ERR_ARG, "rlk_fenced_new: the lock name must not be empty");
        return NULL;
    }
    f = calloc(1, sizeof *f);
    if (!f || !(f->rt = rlk_rt_get(c))) {
        free(f);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_fenced_new %s: out of memory", name);
        return NULL;
    }
    f->c = c;
    rlk_fam_id_init(&f->id);
    f->name = strdup(name);
    f->channel = rlk_fam_prefix_name("redisson_lock__channel", name);
    f->token_key = rlk_fam_prefix_name("redisson_lock_token", name);
    f->q = rlk_lq_get(c->addr, c->url.db, name);
    if (!f->name || !f->channel || !f->token_key || !f->q) {
        rlk_fenced_free(f);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_fenced_new %s: out of memory", name);
        return NULL;
    }
    return f;
}

void rlk_fenced_free(rlk_fenced *f)
{
    if (!f)
        return;
    if (f->q)
        rlk_lq_put(f->q);
    rlk_fam_id_destroy(&f->id);
    free(f->token_key);
    free(f->channel);
    free(f->name);
    free(f);
}

const char *rlk_fenced_name(const rlk_fenced *f)
{
    return f ? f->name : NULL;
}

const char *rlk_fenced_token_name(const rlk_fenced *f)
{
    return f ? f->token_key : NULL;
}

int rlk_fenced_set_owner(rlk_fenced *f, const char *owner)
{
    if (!f)
        return RLK_ERR_ARG;
    return rlk_fam_id_set(f->c, &f->id, owner, 0, "rlk_fenced_set_owner");
}

int rlk_fenced_owner(const rlk_fenced *f, char *buf, size_t len)
{
    rlk_fenced *m = (rlk_fenced *)f;    /* the id's mutex only */

    if (!f)
        return RLK_ERR_ARG;
    return rlk_fam_id_get(m->c, m->rt, &m->id, buf, len, "rlk_fenced_owner");
}

/* ---------------------------------------------------------------- script calls */

static int rlk_fenced_release_call(rlk_fenced *f, const char *owner, long long lease, int *rc_out)
{
    const char *keys[3] = {f->name, f->channel, f->token_key};
    char lease_s[24];
    const char *args[2] = {owner, lease_s};
    redisReply *r = NULL;
    int outcome = RLK_REL_ERROR;

    snprintf(lease_s, sizeof lease_s, "%lld", lease);
    *rc_out = rlk_evalv(f->c, "fenced/release", 3, keys, NULL, 2, args, NULL, &r);
    if (*rc_out == RLK_OK) {
        outcome = rlk_fam_release_outcome(f->c, f->name, r);
        freeReplyObject(r);
        if (outcome == RLK_REL_ERROR)
            *rc_out = RLK_ERR_PROTOCOL;
    }
    return outcome;
}

/* The acquired reply {token}: 1 and *token, or 0 for any other shape. */
static int rlk_fenced_token_of(const redisReply *r, long long *token)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 1 ||
        r->element[0]->type != REDIS_REPLY_INTEGER || r->element[0]->integer <= 0)
        return 0;
    *token = r->element[0]->integer;
    return 1;
}

/* Records the acquisition; gives it back (best effort) when that fails. */
static int rlk_fenced_record(rlk_fenced_acq *a, long long sent)
{
    rlk_fenced *f = a->f;
    rlk_hold_spec h = {RLK_KIND_FENCED, f->name, a->owner, 2, {f->name, f->token_key, NULL}};
    int rc = rlk_wd_acquired_as(f->rt->wd, &h, a->lease_ms, a->watchdog, sent, a->token);
    int undo_rc;

    if (rc != RLK_OK)
        rlk_fenced_release_call(f, a->owner, a->lease_ms, &undo_rc);
    else
        RLK_RT_COUNT(f->rt, acquired);
    return rc;
}

/* rlk_fam_attempt_fn. RLK_OK: acquired, a->token set, recorded in the
 * registry. RLK_ERR_BUSY: held by another, *ttl its PTTL (-1: none). */
static int rlk_fenced_attempt(void *arg, long long *ttl)
{
    rlk_fenced_acq *a = arg;
    rlk_fenced *f = a->f;
    const char *keys[2] = {f->name, f->token_key};
    char lease[24];
    const char *args[2] = {lease, a->owner};
    long long sent = rlk_rt_now_ns();
    redisReply *r = NULL;
    int rc;

    snprintf(lease, sizeof lease, "%lld", a->lease_ms);
    RLK_RT_COUNT(f->rt, acquire_calls);
    if ((rc = rlk_evalv(f->c, "fenced/acquire", 2, keys, NULL, 2, args, NULL, &r)) != RLK_OK)
        return rc;
    if (rlk_fenced_token_of(r, &a->token)) {
        rc = rlk_fenced_record(a, sent);
    } else if (r->type == REDIS_REPLY_INTEGER) {
        *ttl = r->integer;
        rc = RLK_ERR_BUSY;
    } else {
        rc = rlk_set_error(f->c, RLK_ERR_PROTOCOL, "fenced lock %s: fenced/acquire replied type %d",
                           f->name, r->type);
    }
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- locking */

static int rlk_fenced_busy(rlk_fenced *f, long long start_ns)
{
    return rlk_set_error(f->c, RLK_ERR_BUSY, "fenced lock %s: held by another holder after %lld ms",
                         f->name, (rlk_rt_now_ns() - start_ns) / 1000000LL);
}

/* lock.c's wait: the local queue's head subscribes and retries. */
static int rlk_fenced_wait(rlk_fenced_acq *a, long long deadline)
{
    rlk_fenced *f = a->f;
    rlk_lq_node node;
    rlk_sub_chan *ch;
    int rc = rlk_lq_enter(f->q, &node, deadline);

    if (rc == RLK_ERR_NOMEM)
        return rlk_set_error(f->c, rc, "fenced lock %s: out of resources for a waiter", f->name);
    if (rc != RLK_OK)
        return rc;
    rc = rlk_sub_join(f->rt->sub, f->channel, &ch);
    if (rc == RLK_OK) {
        rlk_lq_set_sub(f->q, &node, f->rt->sub, ch);
        rc = rlk_fam_wait(f->rt, ch, deadline, rlk_fenced_attempt, a);
        rlk_lq_leave(f->q, &node);      /* first: the next waiter may share the subscription */
        rlk_sub_leave(f->rt->sub, ch);
    } else {
        rlk_lq_leave(f->q, &node);
    }
    return rc;
}

int rlk_fenced_try_lock(rlk_fenced *f, long long wait_ms, long long lease_ms, long long *token)
{
    long long start = rlk_rt_now_ns(), ttl = -1;
    rlk_fenced_acq a;
    int rc;

    if (!f)
        return RLK_ERR_ARG;
    memset(&a, 0, sizeof a);
    a.f = f;
    rc = rlk_fam_lease(f->c, "fenced lock", f->name, lease_ms, &a.lease_ms, &a.watchdog);
    if (rc != RLK_OK || (rc = rlk_fenced_owner(f, a.owner, sizeof a.owner)) != RLK_OK)
        return rc;
    /* One attempt straight away when it cannot overtake a local waiter: a
     * single try, a re-entry, or nobody queued here. */
    rc = RLK_ERR_BUSY;
    if (wait_ms == 0 || rlk_wd_holds_as(f->rt->wd, RLK_KIND_FENCED, f->name, a.owner) ||
        !rlk_lq_busy(f->q))
        rc = rlk_fenced_attempt(&a, &ttl);
    if (rc == RLK_ERR_BUSY && wait_ms != 0)
        rc = rlk_fenced_wait(&a, rlk_fam_deadline(start, wait_ms));
    if (rc == RLK_ERR_BUSY)
        return rlk_fenced_busy(f, start);
    if (rc == RLK_OK && token)
        *token = a.token;
    return rc;
}

int rlk_fenced_lock(rlk_fenced *f, long long lease_ms, long long *token)
{
    return rlk_fenced_try_lock(f, -1, lease_ms, token);
}

/* ---------------------------------------------------------------- releasing */

int rlk_fenced_unlock(rlk_fenced *f)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_wd_ticket t;
    long long lease;
    int rc, outcome;

    if (!f)
        return RLK_ERR_ARG;
    if ((rc = rlk_fenced_owner(f, owner, sizeof owner)) != RLK_OK)
        return rc;
    /* Out of the watchdog's registry before the release is sent. */
    lease = rlk_wd_release_begin_as(f->rt->wd, RLK_KIND_FENCED, f->name, owner, &t);
    outcome = rlk_fenced_release_call(f, owner, lease, &rc);
    rlk_wd_release_end(f->rt->wd, &t, outcome);
    if (outcome == RLK_REL_RELEASED)
        rlk_lq_poke(f->q);
    if (outcome == RLK_REL_NOT_OWNER)
        rc = rlk_set_error(f->c, RLK_ERR_NOT_OWNER, "unlock fenced lock %s: not held by %s",
                           f->name, owner);
    return rc;
}

int rlk_fenced_force_unlock(rlk_fenced *f, int *released)
{
    const char *keys[2];
    redisReply *r = NULL;
    int rc;

    if (!f)
        return RLK_ERR_ARG;
    keys[0] = f->name;
    keys[1] = f->channel;
    rlk_wd_forget_name(f->rt->wd, f->name);
    rc = rlk_evalv(f->c, "reentrant/force_release", 2, keys, NULL, 0, NULL, NULL, &r);
    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER) {
        if (released)
            *released = r->integer == 1;
        if (r->integer == 1)
            rlk_lq_poke(f->q);
    } else {
        rc = rlk_set_error(f->c, RLK_ERR_PROTOCOL, "force unlock %s: reply type %d", f->name,
                           r->type);
    }
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- tokens */

int rlk_fenced_token(rlk_fenced *f, long long *token)
{
    char owner[RLK_OWNER_MAX + 1];
    int rc;

    if (!f || !token)
        return RLK_ERR_ARG;
    *token = 0;
    if ((rc = rlk_fenced_owner(f, owner, sizeof owner)) != RLK_OK)
        return rc;
    if (!rlk_wd_token_of(f->rt->wd, RLK_KIND_FENCED, f->name, owner, token))
        return rlk_set_error(f->c, RLK_ERR_NOT_OWNER, "fenced lock %s: no hold of %s recorded",
                             f->name, owner);
    return RLK_OK;
}

int rlk_fenced_last_token(rlk_fenced *f, long long *token)
{
    const char *keys[1];
    redisReply *r = NULL;
    int rc;

    if (!f || !token)
        return RLK_ERR_ARG;
    *token = 0;
    keys[0] = f->token_key;
    if ((rc = rlk_evalv(f->c, "fenced/token", 1, keys, NULL, 0, NULL, NULL, &r)) != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER)
        *token = r->integer;
    else
        rc = rlk_set_error(f->c, RLK_ERR_PROTOCOL, "fenced lock %s: fenced/token replied type %d",
                           f->name, r->type);
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- queries */

static int rlk_fenced_query(rlk_fenced *f, const char *cmd, int with_owner, long long nil_value,
                            long long *out)
{
    char owner[RLK_OWNER_MAX + 1];
    const char *argv[3];
    int rc;

    argv[0] = cmd;
    argv[1] = f->name;
    argv[2] = owner;
    if (with_owner && (rc = rlk_fenced_owner(f, owner, sizeof owner)) != RLK_OK)
        return rc;
    return rlk_fam_query(f->c, f->name, with_owner ? 3 : 2, argv, nil_value, out);
}

int rlk_fenced_is_locked(rlk_fenced *f, int *locked)
{
    long long n = 0;
    int rc;

    if (!f || !locked)
        return RLK_ERR_ARG;
    rc = rlk_fenced_query(f, "EXISTS", 0, 0, &n);
    *locked = rc == RLK_OK && n > 0;
    return rc;
}

int rlk_fenced_is_held_by_me(rlk_fenced *f, int *held)
{
    char owner[RLK_OWNER_MAX + 1];
    long long n = 0;
    int rc;

    if (!f || !held)
        return RLK_ERR_ARG;
    *held = 0;
    if ((rc = rlk_fenced_owner(f, owner, sizeof owner)) != RLK_OK)
        return rc;
    if (rlk_wd_is_lost_as(f->rt->wd, RLK_KIND_FENCED, f->name, owner))
        return RLK_OK;
    rc = rlk_fenced_query(f, "HEXISTS", 1, 0, &n);
    *held = rc == RLK_OK && n == 1;
    return rc;
}

int rlk_fenced_hold_count(rlk_fenced *f, long long *count)
{
    if (!f || !count)
        return RLK_ERR_ARG;
    *count = 0;
    return rlk_fenced_query(f, "HGET", 1, 0, count);
}

int rlk_fenced_remaining_ttl(rlk_fenced *f, long long *ttl_ms)
{
    if (!f || !ttl_ms)
        return RLK_ERR_ARG;
    return rlk_fenced_query(f, "PTTL", 0, -2, ttl_ms);
}
