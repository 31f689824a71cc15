/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_elect.c - leader election on the loop (rlk_async_elect_*, rlk_async.h;
 * docs/elect.md, "Async"), on the blocking election's scripts and layout
 * (kinds/elect.c).
 *
 * The campaign and the resign are lock requests of the election's row
 * (a_kind.h rlk_elect_row: elect/campaign, elect/resign): a leader is a
 * fenced hold of the client's table whose token is its term, renewed by the
 * watchdog with fenced/renew and reported lost through the client's lost
 * callback at the blocking watchdog's deadline; candidates wait on the
 * lock's channel, which elect/resign publishes on. A leadership whose lease
 * has passed (kinds/elect.h rlk_elect_lease_passed, the blocking API's rule:
 * a fixed lease's end, or a watchdog lease no renewal extended in time) is
 * not the caller's: the term refuses it, a campaign asks the server again.
 * The proclaim is one
 * elect/proclaim call (a_once.h) with the term the table records. The observer
 * subscribes to the election's channel, reads elect/leader once subscribed
 * (the reply read by kinds/elect.h rlk_elect_info_read), and reads again on
 * every message and at the leader's lease end (an expiry publishes
 * nothing) until the leadership differs from what the caller knew.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/scripts.h"
#include "kinds/acq.h"
#include "kinds/elect.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "runtime/rt.h"
#include "engine/engine.h"
#include "engine/ae_wd.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_hold.h"
#include "async/a_lock.h"
#include "async/a_once.h"

/* An observer. */
typedef struct ael {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    char *name;
    rlk_async_elect_fn efn;         /* the caller's callback */
    void *eprivdata;
    rlk_elect_info known;           /* what the caller knows (a copy; holder NULL: nothing) */
    rlk_elect_info info;            /* the last read */
    long long timeout_ms;
    rlk_a_wait w;                   /* the read in flight, its retry (the next read), the
                                       listener on the election's channel, the deadline
                                       (a_common.h) */
} ael;

static void ael_free_state(rlk_async_req *r, void *state)
{
    ael *a = state;

    (void)r;
    rlk_a_wait_quiet(&a->w);
    rlk_ae_call_forget(a->w.call);
    rlk_elect_info_clear(&a->known);
    rlk_elect_info_clear(&a->info);
    free(a->name);
}

/* ---------------------------------------------------------------- campaign, resign, term */

/* The leadership of task recorded in ac's table (NULL: none); *passed: 1 when its lease has
 * passed by now (a fixed lease's record is gone then already: rlk_a_hold_find). */
static rlk_a_hold *ael_hold(rlk_async *ac, const char *name, unsigned long long task,
                            int *passed)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_a_hold *h;

    rlk_ae_owner(ac, task, owner, sizeof owner);
    h = rlk_a_hold_find(ac, rlk_elect_row.hold, name, owner);
    *passed = h && h->wd && rlk_elect_lease_passed(rlk_ae_now_ms(), rlk_ae_wd_lease_end(h->wd));
    return h;
}

rlk_async_req *rlk_async_elect_campaign(rlk_async *ac, const char *name, unsigned long long task,
                                        const char *value, long long wait_ms, long long lease_ms,
                                        rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.value = value ? value : ""};
    rlk_a_hold *h;
    int passed;

    /* A leadership whose lease has passed: forgotten (not released), so that the campaign
     * asks the server rather than answer the old term with nothing sent. */
    if (ac && name && (h = ael_hold(ac, name, task, &passed)) && passed)
        rlk_a_hold_drop(ac, h);

    return rlk_a_lock_acquire(ac, &rlk_elect_row, "rlk_async_elect_campaign", name, task,
                              wait_ms, lease_ms, &o, fn, privdata);
}

rlk_async_req *rlk_async_elect_resign(rlk_async *ac, const char *name, unsigned long long task,
                                      rlk_async_fn fn, void *privdata)
{
    return rlk_a_lock_release(ac, &rlk_elect_row, "rlk_async_elect_resign", name, task, NULL, fn,
                              privdata);
}

int rlk_async_elect_term(rlk_async *ac, const char *name, unsigned long long task,
                         long long *term)
{
    rlk_a_hold *h;
    int passed;

    if (!ac || !name || !*name || !term)
        return RLK_ERR_ARG;
    h = ael_hold(ac, name, task, &passed);
    *term = h && !passed ? h->token : 0;
    return h && !passed ? RLK_OK : RLK_ERR_NOT_OWNER;
}

/* ---------------------------------------------------------------- proclaim */

rlk_async_req *rlk_async_elect_proclaim(rlk_async *ac, const char *name, unsigned long long task,
                                        const char *value, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r = rlk_a_once_start(ac, "rlk_async_elect_proclaim", "election", -1, name, fn,
                                        privdata);
    char owner[RLK_OWNER_MAX + 1];
    rlk_proto_argvals v = {.owner = owner, .value = value};
    rlk_acq_act x;

    if (!r || rlk_ae_req_done(r))
        return r;
    if (rlk_acq_value(&rlk_elect_row, name, value, &x) == RLK_ACQ_END) {
        rlk_ae_complete(r, x.err, 0, NULL, "%s", x.msg);
        return r;
    }
    rlk_ae_owner(ac, task, owner, sizeof owner);
    if (rlk_async_elect_term(ac, name, task, &v.term) != RLK_OK) {
        rlk_ae_complete(r, RLK_ERR_NOT_OWNER, 0, NULL, RLK_ELECT_NOT_LEADING, name, owner);
        return r;
    }
    v.secret = rlk_async_uuid(ac);      /* the secret its campaign stored */
    /* elect/proclaim may run twice (the same value in the same term; the second publishes
     * again): a lost reply is sent again within the budget. */
    rlk_a_once_call(r, &rlk_elect_proclaim_call, &v, NULL,
                    RLK_A_ONCE_LEADS | RLK_A_ONCE_REPEAT | RLK_A_ONCE_CANCEL);
    return r;
}

/* ---------------------------------------------------------------- observe */

static void ael_read_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                           int lost, void *arg);

/* Ends the request: RLK_OK with the observer's read (value: its term), or
 * err with "election <name>: " and what fmt formats. */
static void ael_end(ael *a, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void ael_end(ael *a, int err, const char *fmt, ...)
{
    char detail[RLK_ERRSTR_MAX];
    va_list ap;

    rlk_a_wait_quiet(&a->w);
    if (err == RLK_OK) {
        rlk_ae_complete(a->h.r, RLK_OK, a->info.term, NULL, NULL);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    rlk_ae_complete(a->h.r, err, 0, NULL, "election %s: %s", a->name, detail);
}

/* rlk_a_wait_fn: the wait ran out. */
static void ael_timeout(void *arg)
{
    ael *a = arg;

    ael_end(a, RLK_ERR_TIMEOUT, "no change within %lld ms", a->timeout_ms);
}

/* Sends the observer's read, elect/leader (rlk_a_wait_fn: on a wake-up too). */
static void ael_send(void *arg)
{
    ael *a = arg;

    rlk_ae_timer_del(a->w.retry);   /* the read's reply sets the next */
    a->w.retry = NULL;
    a->w.call = rlk_a_kind_call(a->h.ac, &rlk_elect_leader_call, a->name,
                                &(rlk_proto_argvals){0}, NULL, ael_read_reply, a);
    if (!a->w.call) {
        rlk_a_wait_quiet(&a->w);
        rlk_a_common_unsent(a->h.r, "election", a->name);
    }
}

/* The request's own callback: the caller's, with the leadership read. */
static void ael_deliver(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    ael *a = privdata;

    a->efn(ac, r, r->err == RLK_OK ? &a->info : NULL, a->eprivdata);
}

static void ael_read_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                           int lost, void *arg)
{
    ael *a = arg;
    long long next = -1;

    rlk_a_unused(2, ac, lost);
    a->w.call = NULL;
    if (rlk_ae_req_done(a->h.r))
        return;
    if (rc == RLK_ERR_IO && !a->w.ending &&
        (a->timeout_ms < 0 || rlk_a_common_elapsed(&a->h) <= a->timeout_ms ||
         rlk_a_common_elapsed(&a->h) <= rlk_a_common_budget(a->h.ac, 0))) {
        rlk_a_wait_retry(&a->w, RLK_A_RETRY_MS);     /* a read: harmless to repeat */
        return;
    }
    if (rc != RLK_OK) {
        ael_end(a, rc, "%s", errstr);
        return;
    }
    rlk_elect_info_clear(&a->info);
    if ((rc = rlk_elect_info_read(r, &a->info)) != RLK_OK) {
        ael_end(a, rc, "%s%s", rc == RLK_ERR_NOMEM ? "out of memory" : rlk_elect_leader_call.script,
                rc == RLK_ERR_NOMEM ? "" : " replied an unexpected shape");
        return;
    }
    if (!a->known.holder || !rlk_elect_info_same(&a->known, &a->info)) {
        ael_end(a, RLK_OK, NULL);
        return;
    }
    if (a->w.ending || a->timeout_ms == 0) {
        ael_timeout(a);
        return;
    }
    if (a->w.again) {
        a->w.again = 0;
        next = 0;
    } else if (a->info.leader && a->info.ttl_ms >= 0)
        next = a->info.ttl_ms + 1;  /* a lease that runs out publishes nothing */
    if (next >= 0)
        rlk_a_wait_retry(&a->w, next);
}

/* A copy of the caller's info (holder and value duplicated). -1: out of memory. */
static int ael_copy(rlk_elect_info *to, const rlk_elect_info *from)
{
    *to = *from;
    to->holder = strdup(from->holder ? from->holder : "");
    to->value = malloc(from->value_len + 1);
    if (!to->holder || !to->value) {
        rlk_elect_info_clear(to);
        return -1;
    }
    if (from->value_len)
        memcpy(to->value, from->value, from->value_len);
    to->value[from->value_len] = '\0';
    return 0;
}

rlk_async_req *rlk_async_elect_observe(rlk_async *ac, const char *name,
                                       const rlk_elect_info *known, long long timeout_ms,
                                       rlk_async_elect_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_elect_observe";
    ael *a;
    char *ch;

    if (!fn || !(a = RLK_A_NEW(ac, ael, ael_deliver, NULL)))
        return NULL;
    rlk_a_wait_init(&a->w, &a->h, a, ael_send, ael_timeout);
    a->efn = fn;
    a->eprivdata = privdata;
    rlk_ae_req_set_privdata(a->h.r, a);
    if (rlk_a_common_begin(a->h.r, NULL, ael_free_state, who, name) ||
        rlk_a_common_range(a->h.r, who, name, "timeout_ms", timeout_ms, -1, RLK_NUM_MAX))
        return a->h.r;
    if (!(a->name = strdup(name))) {
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "%s %s: out of memory", who, name);
        return a->h.r;
    }
    a->timeout_ms = timeout_ms;
    if (known && ael_copy(&a->known, known) != 0) {
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "election %s: out of memory", name);
        return a->h.r;
    }
    if (!known || timeout_ms == 0) {
        ael_send(a);    /* one read */
        return a->h.r;
    }
    /* Subscribed before the first read: its confirmation reads (no change is missed). */
    ch = rlk_fam_prefix_name(RLK_NAMES_CH_ELECT, name);
    if (!ch || rlk_a_wait_listen(&a->w, ch, timeout_ms) != 0)
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "election %s: out of memory", name);
    free(ch);
    return a->h.r;
}
