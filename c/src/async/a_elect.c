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
 * lock's channel, which elect/resign publishes on. The proclaim is one
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

#include "client/client.h"
#include "client/scripts.h"
#include "kinds/elect.h"
#include "runtime/rt.h"
#include "runtime/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_hold.h"
#include "async/a_lock.h"
#include "async/a_once.h"

/* An observer. */
typedef struct ael {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    char *name;
    rlk_proto_keys keys;            /* the election's keys (names kind "elect") */
    rlk_async_elect_fn efn;         /* the caller's callback */
    void *eprivdata;
    rlk_elect_info known;           /* what the caller knows (a copy; holder NULL: nothing) */
    rlk_elect_info info;            /* the last read */
    long long timeout_ms;
    rlk_ae_call *call;
    rlk_ae_sub *sub;
    rlk_ae_timer *retry, *deadline;
    int again;                      /* a message came while a read was in flight */
    int ending;                     /* RLK_ERR_TIMEOUT once the read in flight is back */
} ael;

static void ael_free_state(rlk_async_req *r, void *state)
{
    ael *a = state;

    (void)r;
    rlk_a_common_quiet(&a->retry, &a->deadline, &a->sub, NULL);
    rlk_ae_call_forget(a->call);
    rlk_proto_keys_free(&a->keys);
    rlk_elect_info_clear(&a->known);
    rlk_elect_info_clear(&a->info);
    free(a->name);
}

/* ---------------------------------------------------------------- campaign, resign, term */

rlk_async_req *rlk_async_elect_campaign(rlk_async *ac, const char *name, unsigned long long task,
                                        const char *value, long long wait_ms, long long lease_ms,
                                        rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.value = value ? value : ""};

    return rlk_a_lock_acquire(ac, &rlk_elect_row, "rlk_async_elect_campaign", name, task,
                              wait_ms, lease_ms, &o, fn, privdata);
}

rlk_async_req *rlk_async_elect_resign(rlk_async *ac, const char *name, unsigned long long task,
                                      rlk_async_fn fn, void *privdata)
{
    return rlk_a_lock_release(ac, &rlk_elect_row, name, task, NULL, fn, privdata);
}

int rlk_async_elect_term(rlk_async *ac, const char *name, unsigned long long task,
                         long long *term)
{
    if (!ac || !name || !*name || !term)
        return RLK_ERR_ARG;
    return rlk_a_hold_token(ac, rlk_elect_row.hold, name, task, term) ? RLK_OK
                                                                         : RLK_ERR_NOT_OWNER;
}

/* ---------------------------------------------------------------- proclaim */

rlk_async_req *rlk_async_elect_proclaim(rlk_async *ac, const char *name, unsigned long long task,
                                        const char *value, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r = rlk_a_once_start(ac, "rlk_async_elect_proclaim", "election", -1, name, fn,
                                        privdata);
    char owner[RLK_OWNER_MAX + 1];
    rlk_proto_argvals v = {.owner = owner, .value = value};

    if (!r || rlk_ae_req_done(r))
        return r;
    if (!value || strlen(value) > rlk_elect_row.value_max) {
        rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "election %s: %s", name,
                        value ? "value longer than 65536 bytes" : "a value is required");
        return r;
    }
    rlk_ae_owner(ac, task, owner, sizeof owner);
    if (!rlk_a_hold_token(ac, rlk_elect_row.hold, name, task, &v.term)) {
        rlk_ae_complete(r, RLK_ERR_NOT_OWNER, 0, NULL, "election %s: %s does not lead "
                        "(never elected, resigned, or lost)", name, owner);
        return r;
    }
    v.secret = rlk_async_uuid(ac);      /* the secret its campaign stored */
    /* elect/proclaim may run twice (the same value in the same term; the second publishes
     * again): a lost reply is sent again within the budget. */
    if (rlk_a_once_call(r, &rlk_elect_proclaim_call, &v, NULL,
                        RLK_A_ONCE_LEADS | RLK_A_ONCE_REPEAT | RLK_A_ONCE_CANCEL) != 0)
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "election %s: out of memory", name);
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

    rlk_a_common_quiet(&a->retry, &a->deadline, &a->sub, NULL);
    if (err == RLK_OK) {
        rlk_ae_complete(a->h.r, RLK_OK, a->info.term, NULL, NULL);
        return;
    }
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    rlk_ae_complete(a->h.r, err, 0, NULL, "election %s: %s", a->name, detail);
}

/* Sends the observer's read, elect/leader. */
static void ael_send(ael *a)
{
    a->call = rlk_a_kind_call(a->h.ac, &rlk_elect_leader_call, a->name, &(rlk_proto_argvals){0},
                              NULL, ael_read_reply, a);
    if (!a->call)
        ael_end(a, rlk_ae_closing(a->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, "%s",
                rlk_ae_closing(a->h.ac) ? "client freed" : "out of memory");
}

/* The retry timer: the call again, unless one is in flight. */
static void ael_retry_fire(rlk_async *ac, void *arg)
{
    ael *a = arg;

    (void)ac;
    a->retry = NULL;
    if (!rlk_ae_req_done(a->h.r) && !a->call)
        ael_send(a);
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
    a->call = NULL;
    if (rlk_ae_req_done(a->h.r))
        return;
    if (rc == RLK_ERR_IO && !a->ending &&
        (a->timeout_ms < 0 || rlk_a_common_elapsed(&a->h) <= a->timeout_ms ||
         rlk_a_common_elapsed(&a->h) <= rlk_a_common_budget(a->h.ac, 0))) {
        /* A read: harmless to repeat. */
        a->retry = rlk_ae_timer_add(a->h.ac, RLK_A_RETRY_MS, ael_retry_fire, a);
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
    if (a->ending || a->timeout_ms == 0) {
        ael_end(a, RLK_ERR_TIMEOUT, "no change within %lld ms", a->timeout_ms);
        return;
    }
    if (a->again) {
        a->again = 0;
        next = 0;
    } else if (a->info.leader && a->info.ttl_ms >= 0)
        next = a->info.ttl_ms + 1;  /* a lease that runs out publishes nothing */
    rlk_ae_timer_del(a->retry);
    a->retry = next >= 0 ? rlk_ae_timer_add(a->h.ac, next, ael_retry_fire, a) : NULL;
}

/* A message on the election's channel (a change), or msg NULL: subscribed
 * (again: changes may have been missed): read now, or after the read in
 * flight. */
static void ael_msg(rlk_async *ac, const char *channel, const char *msg, size_t len, void *arg)
{
    ael *a = arg;

    rlk_a_unused(4, ac, channel, msg, len);
    if (rlk_a_common_wake(a->h.r, a->call, &a->again))
        ael_send(a);
}

static void ael_deadline_fire(rlk_async *ac, void *arg)
{
    ael *a = arg;

    (void)ac;
    if (rlk_a_common_deadline(&a->deadline, a->call, &a->ending))
        ael_end(a, RLK_ERR_TIMEOUT, "no change within %lld ms", a->timeout_ms);
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
    const char *ch;

    if (!fn || !(a = RLK_A_NEW(ac, ael, ael_deliver, NULL)))
        return NULL;
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
    rlk_proto_keys_init(&a->keys, rlk_elect_row.names, a->name);
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
    if (!(ch = rlk_proto_keys_get(&a->keys, "channel")) ||
        rlk_a_common_listen(ac, ch, timeout_ms, ael_msg, ael_deadline_fire, a, &a->sub,
                            &a->deadline) != 0)
        rlk_ae_complete(a->h.r, RLK_ERR_NOMEM, 0, NULL, "election %s: out of memory", name);
    return a->h.r;
}
