/*
 * semaphore_wait.c - names, integer calls and the subscriber wait loop
 * shared by semaphore.c, psemaphore.c and latch.c (see semaphore_wait.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "semaphore_wait.h"

#define RLK_SYNC_POLL_NS (100LL * 1000000LL)    /* retry period while the subscriber is down */
#define RLK_NS_PER_MS 1000000LL

/* ---------------------------------------------------------------- names */

static char *rlk_sync_concat(const char *a, const char *b, const char *c, const char *d)
{
    size_t len = strlen(a) + strlen(b) + strlen(c) + strlen(d) + 1;
    char *s = malloc(len);

    if (s)
        snprintf(s, len, "%s%s%s%s", a, b, c, d);
    return s;
}

char *rlk_sync_prefix_name(const char *prefix, const char *name)
{
    if (strchr(name, '{'))
        return rlk_sync_concat(prefix, ":", name, "");
    return rlk_sync_concat(prefix, ":{", name, "}");
}

char *rlk_sync_suffix_name(const char *name, const char *suffix)
{
    if (strchr(name, '{'))
        return rlk_sync_concat(name, ":", suffix, "");
    return rlk_sync_concat("{", name, "}:", suffix);
}

char *rlk_sync_braced_name(const char *prefix, const char *name)
{
    return rlk_sync_concat(prefix, "{", name, "}");
}

/* ---------------------------------------------------------------- calls */

int rlk_sync_check_range(rlk_client *c, const char *what, const char *name, const char *field,
                         long long v, long long lo, long long hi)
{
    if (v >= lo && v <= hi)
        return RLK_OK;
    return rlk_set_error(c, RLK_ERR_ARG, "%s %s: %s %lld is not in %lld..%lld", what, name, field,
                         v, lo, hi);
}

int rlk_sync_eval_int(rlk_client *c, const char *script, int nkeys, const char *const *keys,
                      int nargs, const char *const *args, const size_t *arglens, long long *out)
{
    redisReply *r = NULL;
    int rc = rlk_evalv(c, script, nkeys, keys, NULL, nargs, args, arglens, &r);

    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER)
        *out = r->integer;
    else
        rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: reply of type %d, expected an integer",
                           script, keys[0], r->type);
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- waiting */

long long rlk_sync_deadline(long long start_ns, long long wait_ms)
{
    if (wait_ms < 0)
        return -1;
    if (wait_ms > RLK_SYNC_NUM_MAX)
        wait_ms = RLK_SYNC_NUM_MAX;
    return start_ns + wait_ms * RLK_NS_PER_MS;
}

/* How long to sleep after a failed attempt: the attempt's hint (nothing
 * publishes when a permit expires), the poll period while the subscriber
 * is down, and the caller's deadline; -1: until a message. */
static long long rlk_sync_sleep_until(long long hint_ms, int sub_down, long long deadline)
{
    long long now = rlk_rt_now_ns();
    long long until = -1;

    if (hint_ms >= 0)
        until = now + (hint_ms + 1) * RLK_NS_PER_MS;  /* + 1: the expiry is at a whole ms */
    if (sub_down)
        until = rlk_rt_until_min(until, now + RLK_SYNC_POLL_NS);
    return rlk_rt_until_min(until, deadline);
}

/* While the subscriber cannot reach the server either, a connection error
 * of an attempt is taken for an outage and ridden out (polling) for up to
 * the connect timeout. Returns 1 to keep waiting. */
static int rlk_sync_outage(const rlk_sync_waiter *w, int rc, int ready, long long *outage_start)
{
    long long now = rlk_rt_now_ns();

    if (!w->ride_out || rc != RLK_ERR_IO || ready != RLK_SUB_DOWN) {
        *outage_start = 0;
        return 0;
    }
    if (*outage_start == 0)
        *outage_start = now;
    return now - *outage_start < (long long)w->c->connect_timeout_ms * RLK_NS_PER_MS;
}

static int rlk_sync_loop(const rlk_sync_waiter *w, rlk_sub_chan *ch, long long deadline)
{
    rlk_sub *sub = w->rt->sub;
    long long outage_start = 0;

    for (;;) {
        unsigned long long mark;
        long long hint = -1, until;
        int ready, rc;

        ready = rlk_sub_ready(sub, ch, deadline, &mark);
        if (ready == RLK_SUB_TIMEOUT)
            return RLK_ERR_BUSY;
        rc = w->attempt(w->arg, &hint);
        if (rlk_sync_outage(w, rc, ready, &outage_start)) {
            rc = RLK_ERR_BUSY;
            hint = -1;      /* the poll period bounds the sleep */
        }
        if (rc != RLK_ERR_BUSY)
            return rc;
        until = rlk_sync_sleep_until(hint, ready == RLK_SUB_DOWN, deadline);
        if (deadline >= 0 && rlk_rt_now_ns() >= deadline)
            return RLK_ERR_BUSY;
        if (rlk_sub_wait(sub, ch, mark, until) == RLK_SUB_TIMEOUT && until == deadline)
            return RLK_ERR_BUSY;
    }
}

int rlk_sync_wait(const rlk_sync_waiter *w, long long deadline_ns)
{
    rlk_sub_chan *ch;
    int rc = rlk_sub_join(w->rt->sub, w->channel, &ch);

    if (rc != RLK_OK)
        return rc;
    rc = rlk_sync_loop(w, ch, deadline_ns);
    if (rc != RLK_ERR_BUSY && w->pass_on)  /* an error must not swallow a permit either */
        rlk_sub_poke(w->rt->sub, ch);
    rlk_sub_leave(w->rt->sub, ch);
    return rc;
}
