/*
 * family_wait.c - what the read-write, fair and fenced locks share: Redisson's
 * key-name derivations, a handle's holder id, lease arguments, integer
 * queries, release replies, and lock.c's wait loop for a joined channel (ready
 * -> attempt -> sleep on the channel's permit or wake-all, bounded by the
 * attempt's TTL and the caller's deadline). docs/runtime.md describes the
 * algorithm; each kind's page in docs/locks/ says how it uses it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_internal.h"

/* ---------------------------------------------------------------- names */

char *rlk_fam_prefix_name(const char *prefix, const char *name)
{
    int tagged = strchr(name, '{') != NULL;
    size_t len = strlen(prefix) + strlen(name) + 4;
    char *s = malloc(len);

    if (s)
        snprintf(s, len, tagged ? "%s:%s" : "%s:{%s}", prefix, name);
    return s;
}

char *rlk_fam_tag(const char *name)
{
    size_t len = strlen(name) + 3;
    char *s = malloc(len);

    if (s)
        snprintf(s, len, strchr(name, '{') ? "%s" : "{%s}", name);
    return s;
}

/* ---------------------------------------------------------------- holder ids */

void rlk_fam_id_init(rlk_fam_id *id)
{
    pthread_mutex_init(&id->mu, NULL);
    id->fixed = NULL;
}

void rlk_fam_id_destroy(rlk_fam_id *id)
{
    pthread_mutex_destroy(&id->mu);
    free(id->fixed);
    id->fixed = NULL;
}

static int rlk_fam_rw_owner_ok(const char *owner, size_t len)
{
    return strcmp(owner, "mode") != 0 && (len < 6 || strcmp(owner + len - 6, ":write") != 0);
}

int rlk_fam_id_set(rlk_client *c, rlk_fam_id *id, const char *owner, int rw, const char *what)
{
    char *copy = NULL;

    if (owner) {
        size_t len = strlen(owner);

        if (len < 1 || len > RLK_OWNER_MAX)
            return rlk_set_error(c, RLK_ERR_ARG, "%s: owner must be 1..%d bytes", what,
                                 RLK_OWNER_MAX);
        if (rw && !rlk_fam_rw_owner_ok(owner, len))
            return rlk_set_error(c, RLK_ERR_ARG, "%s: owner must not be 'mode' or end in ':write'",
                                 what);
        if (!(copy = strdup(owner)))
            return rlk_set_error(c, RLK_ERR_NOMEM, "%s: out of memory", what);
    }
    pthread_mutex_lock(&id->mu);
    free(id->fixed);
    id->fixed = copy;
    pthread_mutex_unlock(&id->mu);
    return RLK_OK;
}

int rlk_fam_id_get(rlk_client *c, const rlk_rt *rt, rlk_fam_id *id, char *buf, size_t len,
                   const char *what)
{
    int rc = RLK_OK;

    if (!buf || len == 0)
        return rlk_set_error(c, RLK_ERR_ARG, "%s: no buffer for the owner", what);
    pthread_mutex_lock(&id->mu);
    if (id->fixed) {
        if ((size_t)snprintf(buf, len, "%s", id->fixed) >= len)
            rc = RLK_ERR_ARG;
    } else {
        rc = rlk_rt_thread_owner(rt, buf, len);
    }
    pthread_mutex_unlock(&id->mu);
    if (rc != RLK_OK)
        return rlk_set_error(c, rc, "%s: buffer of %zu bytes too short for the owner", what, len);
    return RLK_OK;
}

/* ---------------------------------------------------------------- arguments */

int rlk_fam_lease(rlk_client *c, const char *what, const char *name, long long lease_ms,
                  long long *lease, int *watchdog)
{
    if (lease_ms > RLK_LEASE_MAX_MS)
        return rlk_set_error(c, RLK_ERR_ARG, "%s %s: lease %lld ms is above %lld ms", what, name,
                             lease_ms, RLK_LEASE_MAX_MS);
    *watchdog = lease_ms <= 0;
    *lease = *watchdog ? c->watchdog_lease_ms : lease_ms;
    if (*lease <= 0)
        *lease = RLK_DEFAULT_WATCHDOG_LEASE_MS;
    if (*lease > RLK_LEASE_MAX_MS)
        *lease = RLK_LEASE_MAX_MS;
    return RLK_OK;
}

long long rlk_fam_deadline(long long start_ns, long long wait_ms)
{
    if (wait_ms < 0)
        return -1;
    if (wait_ms > RLK_LEASE_MAX_MS)
        wait_ms = RLK_LEASE_MAX_MS;
    return start_ns + wait_ms * 1000000LL;
}

/* ---------------------------------------------------------------- replies */

int rlk_fam_query(rlk_client *c, const char *what, int argc, const char **argv,
                  long long nil_value, long long *out)
{
    redisReply *r = NULL;
    int rc = rlk_command(c, argc, argv, NULL, &r);

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
            rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: not a number", argv[0], what);
    } else {
        rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: reply type %d", argv[0], what, r->type);
    }
    freeReplyObject(r);
    return rc;
}

int rlk_fam_release_outcome(rlk_client *c, const char *what, const redisReply *r)
{
    if (r->type == REDIS_REPLY_NIL)
        return RLK_REL_NOT_OWNER;
    if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
        return r->integer ? RLK_REL_RELEASED : RLK_REL_STILL_HELD;
    rlk_set_error(c, RLK_ERR_PROTOCOL, "unlock %s: release replied type %d", what, r->type);
    return RLK_REL_ERROR;
}

/* ---------------------------------------------------------------- waiting */

/* How long to sleep after a failed attempt: the attempt's TTL (a lock that
 * expires wakes nobody), the poll period while the subscriber is down, and
 * the caller's deadline. *by_ttl tells whether the TTL is the bound. */
static long long rlk_fam_sleep_until(long long ttl, int sub_down, long long deadline, int *by_ttl)
{
    long long now = rlk_rt_now_ns();
    long long until = ttl >= 0 ? now + (ttl > 0 ? ttl : 1) * 1000000LL : -1;

    *by_ttl = ttl >= 0;
    if (sub_down && (until < 0 || now + RLK_FAM_POLL_NS < until)) {
        until = now + RLK_FAM_POLL_NS;
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
 * connect timeout. Returns 1 to keep waiting. */
static int rlk_fam_outage(const rlk_rt *rt, int rc, int ready, long long *outage_start)
{
    long long now = rlk_rt_now_ns();

    if (rc != RLK_ERR_IO || ready != RLK_SUB_DOWN) {
        *outage_start = 0;
        return 0;
    }
    if (*outage_start == 0)
        *outage_start = now;
    return now - *outage_start < (long long)rt->c->connect_timeout_ms * 1000000LL;
}

int rlk_fam_wait(rlk_rt *rt, rlk_sub_chan *ch, long long deadline_ns, rlk_fam_attempt_fn attempt,
                 void *arg)
{
    long long outage_start = 0;

    for (;;) {
        unsigned long long mark;
        long long ttl = -1, until;
        int ready, by_ttl, rc;

        ready = rlk_sub_ready(rt->sub, ch, deadline_ns, &mark);
        if (ready == RLK_SUB_TIMEOUT)
            return RLK_ERR_BUSY;
        rc = attempt(arg, &ttl);
        if (rlk_fam_outage(rt, rc, ready, &outage_start)) {
            rc = RLK_ERR_BUSY;
            ttl = -1;           /* the poll period bounds the sleep */
        }
        if (rc != RLK_ERR_BUSY)
            return rc;
        until = rlk_fam_sleep_until(ttl, ready == RLK_SUB_DOWN, deadline_ns, &by_ttl);
        if (until >= 0 && rlk_rt_now_ns() >= until && until == deadline_ns)
            return RLK_ERR_BUSY;
        if (rlk_sub_wait(rt->sub, ch, mark, until) == RLK_SUB_TIMEOUT) {
            if (by_ttl)
                RLK_RT_COUNT(rt, ttl_wakeups);
            if (until == deadline_ns)
                return RLK_ERR_BUSY;
        }
    }
}
