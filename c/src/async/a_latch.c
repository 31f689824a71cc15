/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_latch.c - rlk_async_latch_await (rlk_async.h; count_down and
 * try_set_count are a_admin.c's) through the engine (engine.h), on the
 * blocking API's scripts and channel (kinds/latch.c: "0" when the count
 * reaches zero or the latch is deleted, "1" when it is armed).
 *
 * An awaiter listens on that channel and reads the count (latch/count) when
 * subscribed, on every message and at least every second (a keepalive);
 * open (count <= 0) ends it RLK_OK. The engine hands every message to every
 * listener of the channel, so the blocking subscriber's "pass the wake-up
 * on" is not needed here. The read is harmless to repeat: a lost reply is
 * read again within the wait (a wait without bound rides out any outage).
 * docs/async-internals.md describes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "kinds/latch.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "async/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"

#define ALT_KEEPALIVE_MS 1000       /* an awaiter reads the count at least this often */
#define ALT_RETRY_MS 20             /* after a read whose reply did not come */

typedef struct alt_req {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    char *name, *channel;
    long long timeout_ms;
    rlk_ae_call *call;
    rlk_ae_timer *retry, *deadline;
    rlk_ae_sub *sub;
    int again;                      /* woken while a read was in flight */
    int ending;                     /* RLK_ERR_BUSY: end when the read in flight says closed */
} alt_req;

static void alt_read(alt_req *a);

static void alt_quiet(alt_req *a)
{
    rlk_a_common_quiet(&a->retry, &a->deadline, &a->sub);
}

static void alt_free_state(rlk_async_req *r, void *state)
{
    alt_req *a = state;

    (void)r;
    alt_quiet(a);
    rlk_ae_call_forget(a->call);
    rlk_a_common_free(2, a->name, a->channel);
}

static long long alt_budget(const alt_req *a)
{
    return rlk_a_common_budget(a->h.ac, a->timeout_ms);
}

/* Ends with err (RLK_OK: open). */
static void alt_end(alt_req *a, int err, const char *why)
{
    alt_quiet(a);
    if (err == RLK_ERR_BUSY)
        rlk_ae_complete(a->h.r, err, 0, NULL, "latch %s: count still above 0 after %lld ms",
                        a->name, rlk_a_common_elapsed(&a->h));
    else if (err == RLK_OK)
        rlk_ae_complete(a->h.r, RLK_OK, 0, NULL, NULL);
    else
        rlk_ae_complete(a->h.r, err, 0, NULL, "latch %s: %s", a->name, why);
}

static void alt_retry_fire(rlk_async *ac, void *arg)
{
    alt_req *a = arg;

    (void)ac;
    a->retry = NULL;
    if (rlk_a_common_wake(a->h.r, a->call, &a->again))
        alt_read(a);
}

static void alt_schedule(alt_req *a, long long ms)
{
    rlk_ae_timer_del(a->retry);
    a->retry = rlk_ae_timer_add(a->h.ac, ms, alt_retry_fire, a);
}

static void alt_count_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                            int lost, void *arg)
{
    alt_req *a = arg;

    rlk_a_unused(2, ac, lost);
    a->call = NULL;
    if (rlk_ae_req_done(a->h.r))
        return;     /* cancelled meanwhile */
    if (rc == RLK_ERR_IO) {
        /* A read: lost or never written, read again while the wait lasts. */
        if (a->ending || rlk_a_common_elapsed(&a->h) > alt_budget(a))
            alt_end(a, a->ending ? a->ending : RLK_ERR_IO, errstr);
        else
            alt_schedule(a, ALT_RETRY_MS);
        return;
    }
    if (rc != RLK_OK)
        alt_end(a, rc, errstr);
    else if (reply->type != REDIS_REPLY_INTEGER)
        alt_end(a, RLK_ERR_PROTOCOL, "latch/count replied an unexpected shape");
    else if (reply->integer <= 0)
        alt_end(a, RLK_OK, NULL);
    else if (a->timeout_ms == 0 || a->ending)
        alt_end(a, RLK_ERR_BUSY, NULL);
    else {
        alt_schedule(a, a->again ? 0 : ALT_KEEPALIVE_MS);
        a->again = 0;
    }
}

static void alt_read(alt_req *a)
{
    rlk_proto_argvals v = {0};

    rlk_ae_timer_del(a->retry);
    a->retry = NULL;
    a->call = rlk_a_kind_call(a->h.ac, &rlk_latch_count_call, a->name, &v, NULL, alt_count_reply,
                              a);
    if (!a->call)
        alt_end(a, rlk_ae_closing(a->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM,
                rlk_ae_closing(a->h.ac) ? "client freed" : "out of memory");
}

/* A message ("0": open; "1": armed) or msg NULL (subscribed, again): read. */
static void alt_msg(rlk_async *ac, const char *channel, const char *msg, size_t len, void *arg)
{
    alt_req *a = arg;

    rlk_a_unused(4, ac, channel, msg, len);
    if (rlk_a_common_wake(a->h.r, a->call, &a->again))
        alt_read(a);
}

/* Nothing to undo: a read in flight is forgotten with the request. */
static void alt_cancel_hook(rlk_async_req *r, void *state)
{
    alt_req *a = state;

    (void)r;
    alt_quiet(a);
    rlk_ae_complete(a->h.r, RLK_ERR_CANCELLED, 0, NULL, "cancelled");
}

static void alt_deadline_fire(rlk_async *ac, void *arg)
{
    alt_req *a = arg;

    (void)ac;
    if (rlk_a_common_deadline(&a->deadline, a->call, &a->ending))
        alt_end(a, RLK_ERR_BUSY, NULL);
}

rlk_async_req *rlk_async_latch_await(rlk_async *ac, const char *name, long long timeout_ms,
                                     rlk_async_fn fn, void *privdata)
{
    alt_req *a = RLK_A_NEW(ac, alt_req, fn, privdata);
    rlk_async_req *r = a ? a->h.r : NULL;

    if (!a)
        return NULL;
    a->timeout_ms = timeout_ms;
    rlk_ae_req_metric(r, RLK_MKIND_LATCH, name);
    if (rlk_a_common_begin(r, alt_cancel_hook, alt_free_state, "rlk_async_latch_await", name) ||
        rlk_a_common_range(r, "rlk_async_latch_await", name, "timeout_ms", timeout_ms, -1,
                           RLK_NUM_MAX))
        return r;
    a->name = strdup(name);
    a->channel = rlk_fam_braced_name(RLK_NAMES_CH_LATCH, name);
    /* Listen before the read that finds it armed: its confirmation reads again. */
    if (!a->name || !a->channel ||
        (timeout_ms != 0 && rlk_a_common_listen(ac, a->channel, timeout_ms, alt_msg,
                                                alt_deadline_fire, a, &a->sub, &a->deadline)))
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async_latch_await %s: out of memory",
                        name);
    else
        alt_read(a);
    return r;
}
