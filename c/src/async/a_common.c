/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_common.c - what the kinds' requests share on top of the engine
 * (a_common.h).
 */
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "runtime/fam.h"
#include "engine/engine.h"
#include "engine/sub_rule.h"
#include "async/a_common.h"

void *rlk_a_common_new(rlk_async *ac, size_t size, size_t head_offset, rlk_async_fn fn,
                       void *privdata)
{
    rlk_async_req *r;
    unsigned char *state;
    rlk_a_head *h;

    if (!ac || size < head_offset + sizeof *h || !(r = rlk_ae_req_new(ac, size, fn, privdata)))
        return NULL;
    state = rlk_ae_req_state(r);
    h = (rlk_a_head *)(void *)(state + head_offset);
    h->ac = ac;
    h->r = r;
    h->start = rlk_ae_now_ms();
    return state;
}

int rlk_a_common_begin(rlk_async_req *r, rlk_ae_cancel_fn cancel, rlk_ae_free_fn free_fn,
                       const char *who, const char *name)
{
    rlk_async *ac = rlk_ae_req_client(r);
    const char *msg;

    rlk_ae_req_hooks(r, cancel, free_fn);
    if (rlk_ae_req_done(r))
        return 1;   /* the client is closing */
    if (rlk_ae_fatal(ac, &msg)) {
        rlk_ae_complete(r, rlk_ae_fatal(ac, NULL), 0, NULL, "%s", msg);
        return 1;
    }
    if (who && (!name || !*name)) {
        rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "%s: a name is required", who);
        return 1;
    }
    return 0;
}

int rlk_a_common_range(rlk_async_req *r, const char *what, const char *name, const char *field,
                       long long v, long long lo, long long hi)
{
    char msg[RLK_ERRSTR_MAX];

    if (rlk_fam_range_text(msg, sizeof msg, what, name, field, v, lo, hi) == RLK_OK)
        return 0;
    rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "%s", msg);
    return 1;
}

int rlk_a_common_lock_args(rlk_async_req *r, const char *what, const char *name,
                           long long wait_ms, long long lease_ms)
{
    if (rlk_a_common_range(r, what, name, "wait_ms", wait_ms, -1, RLK_NUM_MAX) ||
        rlk_a_common_range(r, what, name, "lease_ms", lease_ms, -1, RLK_NUM_MAX))
        return 1;
    if (lease_ms == 0) {
        rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "%s%s%s: lease_ms 0 is neither -1 (the "
                        "watchdog) nor in 1..%lld", what, name ? " " : "", name ? name : "",
                        RLK_NUM_MAX);
        return 1;
    }
    return 0;
}

long long rlk_a_common_budget(rlk_async *ac, long long wait_ms)
{
    rlk_client *c = rlk_ae_client(ac);

    if (wait_ms == -1)
        return LLONG_MAX;
    if (rlk_ae_unreachable(ac))
        return wait_ms > 0 ? wait_ms : 0;   /* no server to ride out a drop of: its own wait */
    return (wait_ms > 0 ? wait_ms : 0) + 2LL * c->command_timeout_ms + c->connect_timeout_ms;
}

void rlk_a_wait_init(rlk_a_wait *w, rlk_a_head *h, void *arg, rlk_a_wait_fn go,
                     rlk_a_wait_fn timeout)
{
    w->h = h;
    w->arg = arg;
    w->go = go;
    w->timeout = timeout;
}

void rlk_a_wait_poke(rlk_a_wait *w)
{
    if (rlk_ae_req_done(w->h->r))
        return;
    if (w->call)
        w->again = 1;
    else if (!w->ticket || rlk_ae_sub_ready(w->sub))
        w->go(w->arg);
}

static void rlk_a_wait_retry_fire(rlk_async *ac, void *arg)
{
    rlk_a_wait *w = arg;

    (void)ac;
    w->retry = NULL;
    rlk_a_wait_poke(w);
}

void rlk_a_wait_retry(rlk_a_wait *w, long long ms)
{
    rlk_ae_timer_del(w->retry);
    w->retry = rlk_ae_timer_add(w->h->ac, ms > 0 ? ms : 0, rlk_a_wait_retry_fire, w);
}

void rlk_a_wait_busy(rlk_a_wait *w, long long ticket, long long ms)
{
    if (!w->ticket && ticket) {
        w->ticket = ticket;
        if (rlk_ae_sub_ready(w->sub) || w->again) {
            w->again = 0;
            rlk_a_wait_poke(w);
        }
        return;
    }
    rlk_a_wait_retry(w, rlk_a_wait_next(w, ms == -3 ? RLK_A_RECHECK_MS : ms, RLK_A_KEEPALIVE_MS));
}

long long rlk_a_wait_next(rlk_a_wait *w, long long ms, long long cap)
{
    if (w->again) {
        w->again = 0;
        return 0;
    }
    return ms >= 0 && ms < cap ? ms : cap;
}

/* A message on a channel the waiter listens on, or msg NULL: subscribed
 * (again; a grant may have been missed). */
static void rlk_a_wait_msg(rlk_async *ac, const char *channel, const char *msg, size_t len,
                           void *arg)
{
    rlk_a_wait *w = arg;
    int grant;

    (void)ac;
    if (msg && w->grants && strcmp(channel, w->grants) == 0) {
        if (!(grant = rlk_sub_grants(w->rule, msg, len, w->ticket, w->wait, w->owner)))
            return;     /* another waiter's grant */
        w->held |= grant == RLK_SUB_MSG_HELD;
    }
    rlk_a_wait_poke(w);
}

static void rlk_a_wait_deadline_fire(rlk_async *ac, void *arg)
{
    rlk_a_wait *w = arg;

    (void)ac;
    w->deadline = NULL;
    if (!w->call)
        w->timeout(w->arg);
    else if (!w->ending)
        w->ending = RLK_ERR_BUSY;   /* the call in flight decides */
}

int rlk_a_wait_listen(rlk_a_wait *w, const char *channel, long long wait_ms)
{
    if (channel && !(w->sub = rlk_ae_subscribe(w->h->ac, channel, rlk_a_wait_msg, w)))
        return -1;
    if (wait_ms > 0 &&
        !(w->deadline = rlk_ae_timer_add(w->h->ac, wait_ms, rlk_a_wait_deadline_fire, w)))
        return -1;
    return 0;
}

void rlk_a_wait_wide(rlk_a_wait *w, int want, const char *channel)
{
    if (want && !w->wide) {
        w->wide = rlk_ae_subscribe(w->h->ac, channel, rlk_a_wait_msg, w);
    } else if (!want && w->wide) {
        rlk_ae_unsubscribe(w->wide);
        w->wide = NULL;
    }
}

void rlk_a_wait_quiet(rlk_a_wait *w)
{
    rlk_ae_timer_del(w->retry);
    rlk_ae_timer_del(w->deadline);
    rlk_ae_unsubscribe(w->sub);
    w->retry = w->deadline = NULL;
    w->sub = NULL;
    rlk_a_wait_wide(w, 0, NULL);
}

void rlk_a_common_unsent(rlk_async_req *r, const char *what, const char *name)
{
    int closing = rlk_ae_closing(rlk_ae_req_client(r));

    rlk_ae_complete(r, closing ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, 0, NULL, "%s%s%s: %s", what,
                    name ? " " : "", name ? name : "", closing ? "client freed" : "out of memory");
}

long long rlk_a_common_elapsed(const rlk_a_head *h)
{
    return rlk_ae_now_ms() - h->start;
}

void rlk_a_common_free(int n, ...)
{
    va_list ap;

    va_start(ap, n);
    while (n-- > 0)
        free(va_arg(ap, void *));
    va_end(ap);
}

const char **rlk_a_common_join(const char *const *v, int n, char *const *tail, int *total)
{
    int m = 0;
    const char **out;

    while (tail && tail[m])
        m++;
    if (!(out = malloc((size_t)(n + m + 1) * sizeof *out)))
        return NULL;
    for (int k = 0; k < n; k++)
        out[k] = v[k];
    for (int k = 0; k < m; k++)
        out[n + k] = tail[k];
    *total = n + m;
    return out;
}
