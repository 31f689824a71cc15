/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_multilock.c - rlk_async_multilock_lock / _unlock (rlk_async.h): n
 * reentrant locks of this client held by one task, all or none, taken one
 * at a time by rlk_async_lock requests (a_lock.c) on the blocking
 * MultiLock's attempt rules (multi/multilock.h) and released (last first) by
 * rlk_async_unlock ones. Every failure, timeout or cancellation releases what
 * was taken before the callback is called: never one left held after it
 * reports anything but RLK_OK. docs/async-internals.md describes it.
 *
 * A member request's privdata is a small link (not the MultiLock's state):
 * when the client is freed, the MultiLock request may be delivered (and
 * freed) before its member's callback, which then finds the link empty.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds/lock.h"
#include "multi/multilock.h"
#include "runtime/rt.h"
#include "engine/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"

enum { AML_ACQUIRING, AML_RENEWING, AML_RELEASING, AML_UNLOCKING };

typedef struct aml aml;

typedef struct aml_link {
    aml *m;                     /* NULL once the MultiLock request is gone */
} aml_link;

struct aml {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    int n;
    char **names;
    unsigned long long task;
    rlk_multilock_plan p;           /* the attempt rules' (multi/multilock.h) */
    int phase;                      /* AML_* */
    int k;                          /* the member being taken (0..k-1 are held) / renewed /
                                       released */
    int released;                   /* unlock: members released */
    rlk_async_req *sub;             /* the member request in flight */
    aml_link *link;
    rlk_ae_call *call;              /* reentrant/renew in flight */
    rlk_ae_timer *kick;             /* a cancel acted on from the next turn */
    int cancelled;
    int end_err;                    /* what the request ends with after the release */
    char end_msg[256];
};

static void aml_next(aml *m);

static void aml_free_state(rlk_async_req *r, void *state)
{
    aml *m = state;

    (void)r;
    if (m->link)
        m->link->m = NULL;      /* the member's callback frees it */
    rlk_ae_call_forget(m->call);
    rlk_ae_timer_del(m->kick);
    for (int i = 0; i < m->n && m->names; i++)
        free(m->names[i]);
    free(m->names);
}

/* A member request's callback: back to the MultiLock, if it is still there. */
static void aml_sub_done(rlk_async *ac, const rlk_async_result *res, void *p);

static int aml_sub_start(aml *m, int lock, long long wait_ms)
{
    aml_link *l = calloc(1, sizeof *l);

    if (!l)
        return -1;
    l->m = m;
    m->link = l;
    m->sub = lock ? rlk_async_lock(m->h.ac, RLK_KIND_LOCK, m->names[m->k], m->task, wait_ms,
                                   m->p.acq_lease, aml_sub_done, l)
                  : rlk_async_unlock(m->h.ac, RLK_KIND_LOCK, m->names[m->k], m->task,
                                     aml_sub_done, l);
    if (!m->sub) {
        free(l);
        m->link = NULL;
        return -1;
    }
    return 0;
}

/* Ends the request with err and the message fmt formats (cut to fit; the
 * first failure's) once what was taken is released. */
static void aml_fail(aml *m, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void aml_fail(aml *m, int err, const char *fmt, ...)
{
    va_list ap;

    if (!m->end_err) {
        m->end_err = err;
        va_start(ap, fmt);
        vsnprintf(m->end_msg, sizeof m->end_msg, fmt, ap);
        va_end(ap);
    }
    if (rlk_ae_closing(m->h.ac)) {
        rlk_ae_complete(m->h.r, RLK_ERR_CLOSED, 0, NULL, "the async client was freed");
        return;
    }
    /* Members 0..k-1 are held while acquiring, all while renewing: released last first. */
    m->k = (m->phase == AML_RENEWING ? m->n : m->k) - 1;
    m->phase = AML_RELEASING;
    aml_next(m);
}

/* A new attempt from the first member. */
static void aml_attempt(aml *m)
{
    m->phase = AML_ACQUIRING;
    m->k = 0;
    rlk_multilock_attempt(&m->p, rlk_ae_now_ms());
    aml_next(m);
}

static void aml_renew_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                            int lost, void *arg)
{
    aml *m = arg;

    rlk_a_unused(2, ac, lost);
    m->call = NULL;
    if (rlk_ae_req_done(m->h.r))
        return;
    if (rc == RLK_OK && reply->type == REDIS_REPLY_INTEGER && reply->integer == 1) {
        m->k++;
        aml_next(m);
    } else if (m->cancelled) {
        aml_fail(m, RLK_ERR_CANCELLED, "cancelled");
    } else if (rc != RLK_OK) {
        aml_fail(m, rc, "multilock member %d (%s): %s", m->k, m->names[m->k], errstr);
    } else {    /* gone before all were held: a new attempt, as the blocking MultiLock's */
        aml_fail(m, RLK_ERR_LOST, "multilock member %d (%s): gone before all members were held",
                 m->k, m->names[m->k]);
    }
}

/* The next step of the current phase. */
static void aml_next(aml *m)
{
    if (rlk_ae_req_done(m->h.r))
        return;
    if (m->cancelled && (m->phase == AML_ACQUIRING || m->phase == AML_RENEWING)) {
        aml_fail(m, RLK_ERR_CANCELLED, "cancelled");
        return;
    }
    if (m->phase == AML_ACQUIRING && m->k < m->n) {
        if (aml_sub_start(m, 1, rlk_multilock_member_wait(&m->p, rlk_ae_now_ms())) != 0)
            aml_fail(m, RLK_ERR_NOMEM, "multilock: out of memory");
        return;
    }
    if (m->phase == AML_ACQUIRING) {    /* all held: set to the lease when taken with another */
        m->phase = AML_RENEWING;
        m->k = m->p.acq_lease != m->p.lease_ms ? 0 : m->n;
    }
    if (m->phase == AML_RENEWING) {
        char owner[RLK_OWNER_MAX + 1];
        rlk_proto_argvals v = {.lease_ms = m->p.lease_ms, .owner = owner};

        if (m->k == m->n) {
            rlk_ae_complete(m->h.r, RLK_OK, m->n, NULL, NULL);
            return;
        }
        rlk_ae_owner(m->h.ac, m->task, owner, sizeof owner);
        m->call = rlk_a_kind_call(m->h.ac, &rlk_lock_first_lease_call, m->names[m->k], &v, NULL,
                                  aml_renew_reply, m);
        if (!m->call)   /* (closing: aml_fail ends it with RLK_ERR_CLOSED) */
            aml_fail(m, RLK_ERR_NOMEM, "multilock: out of memory");
        return;
    }
    /* AML_RELEASING, AML_UNLOCKING: member k, every one tried, last first. */
    if (m->k >= 0) {
        if (aml_sub_start(m, 0, 0) != 0)
            rlk_ae_complete(m->h.r, RLK_ERR_NOMEM, m->released, NULL,
                            "multilock: out of memory while releasing member %d (%s)", m->k,
                            m->names[m->k]);
        return;
    }
    if (m->phase == AML_RELEASING) {    /* nothing of this request is held any more */
        if (!m->cancelled && rlk_multilock_again(&m->p, m->end_err, rlk_ae_now_ms())) {
            m->end_err = 0;
            aml_attempt(m);
            return;
        }
        m->end_err = rlk_multilock_end_err(m->end_err);
        if (m->cancelled && m->end_err == RLK_ERR_BUSY) {
            m->end_err = RLK_ERR_CANCELLED;
            snprintf(m->end_msg, sizeof m->end_msg, "cancelled");
        }
    }
    rlk_ae_complete(m->h.r, m->end_err, m->released, NULL, "%s", m->end_msg);
}

static void aml_sub_done(rlk_async *ac, const rlk_async_result *res, void *p)
{
    aml_link *l = p;
    aml *m = l->m;
    char msg[300];

    (void)ac;
    free(l);
    if (!m)
        return;         /* the MultiLock request is gone (the client was freed) */
    m->link = NULL;
    m->sub = NULL;
    if (rlk_ae_req_done(m->h.r))
        return;
    if (res->err == RLK_ERR_CLOSED) {
        rlk_ae_complete(m->h.r, RLK_ERR_CLOSED, 0, NULL, "the async client was freed");
        return;
    }
    if (m->phase == AML_ACQUIRING) {
        if (res->err == RLK_OK) {
            m->k++;
            aml_next(m);
        } else if (res->err == RLK_ERR_CANCELLED || m->cancelled)
            aml_fail(m, RLK_ERR_CANCELLED, "cancelled");
        else
            aml_fail(m, res->err, "multilock member %d (%s): %s", m->k, m->names[m->k],
                     res->errstr);
        return;
    }
    if (m->phase == AML_RELEASING) {
        /* Best effort: a member that cannot be released is recorded; its lease runs out. */
        if (res->err != RLK_OK && res->err != RLK_ERR_NOT_OWNER && m->end_err != RLK_ERR_UNSETTLED) {
            snprintf(msg, sizeof msg, "%s; and member %d (%s) could not be released: %s",
                     m->end_msg, m->k, m->names[m->k], res->errstr);
            snprintf(m->end_msg, sizeof m->end_msg, "%.255s", msg);
            m->end_err = res->err == RLK_ERR_CANCELLED ? m->end_err : RLK_ERR_UNSETTLED;
        }
    } else if (res->err == RLK_OK) {
        m->released++;
    } else if (!m->end_err) {
        m->end_err = res->err;
        snprintf(m->end_msg, sizeof m->end_msg, "multilock member %d (%s): %s", m->k,
                 m->names[m->k], res->errstr);
    }
    m->k--;
    aml_next(m);
}

/* ---------------------------------------------------------------- cancel */

static void aml_kick_fire(rlk_async *ac, void *arg)
{
    aml *m = arg;

    (void)ac;
    m->kick = NULL;
    if (m->sub && m->phase == AML_ACQUIRING)
        rlk_async_cancel(m->sub);   /* its callback (cancelled, or granted) goes on from there */
}

static void aml_cancel_hook(rlk_async_req *r, void *state)
{
    aml *m = state;

    (void)r;
    if (m->phase == AML_UNLOCKING || m->cancelled)
        return;     /* an unlock goes on: its result stands */
    m->cancelled = 1;
    /* The member in flight is cancelled from the next turn (a cancel hook
     * completes no other request); whatever it ends with, the members taken
     * are released before this request completes with RLK_ERR_CANCELLED. */
    if (m->sub && m->phase == AML_ACQUIRING)
        m->kick = rlk_ae_timer_add(m->h.ac, 0, aml_kick_fire, m);
}

/* ---------------------------------------------------------------- the requests */

static aml *aml_new(rlk_async *ac, const char *what, int n, const char *const *names,
                    unsigned long long task, rlk_async_fn fn, void *privdata)
{
    aml *m;

    if (!(m = RLK_A_NEW(ac, aml, fn, privdata)))
        return NULL;
    m->task = task;
    /* No one name to check: the n names are checked below. */
    if (rlk_a_common_begin(m->h.r, aml_cancel_hook, aml_free_state, NULL, NULL))
        return m;
    if (n < 1 || !names) {
        rlk_ae_complete(m->h.r, RLK_ERR_ARG, 0, NULL, "%s: needs 1 or more names (n %d)", what, n);
        return m;
    }
    for (int i = 0; i < n; i++) {
        if (!names[i] || !*names[i]) {
            rlk_ae_complete(m->h.r, RLK_ERR_ARG, 0, NULL, "%s: name %d is %s", what, i,
                            names[i] ? "empty" : "NULL");
            return m;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(names[i], names[j]) == 0) {
                rlk_ae_complete(m->h.r, RLK_ERR_ARG, 0, NULL, "%s: name %d (%s) repeats name %d",
                                what, i, names[i], j);
                return m;
            }
    }
    m->names = calloc((size_t)n, sizeof *m->names);
    while (m->names && m->n < n && (m->names[m->n] = strdup(names[m->n])))
        m->n++;
    if (m->n < n)
        rlk_ae_complete(m->h.r, RLK_ERR_NOMEM, 0, NULL, "%s: out of memory", what);
    return m;
}

rlk_async_req *rlk_async_multilock_lock(rlk_async *ac, int n, const char *const *names,
                                        unsigned long long task, long long wait_ms,
                                        long long lease_ms, rlk_async_fn fn, void *privdata)
{
    aml *m = aml_new(ac, "rlk_async_multilock_lock", n, names, task, fn, privdata);

    if (!m || rlk_ae_req_done(m->h.r))
        return m ? m->h.r : NULL;
    if (rlk_a_common_lock_args(m->h.r, "rlk_async_multilock_lock", NULL, wait_ms, lease_ms))
        return m->h.r;
    rlk_multilock_plan_init(&m->p, RLK_MULTILOCK_MS_PER_MEMBER, n, wait_ms, lease_ms, m->h.start);
    aml_attempt(m);
    return m->h.r;
}

rlk_async_req *rlk_async_multilock_unlock(rlk_async *ac, int n, const char *const *names,
                                          unsigned long long task, rlk_async_fn fn,
                                          void *privdata)
{
    aml *m = aml_new(ac, "rlk_async_multilock_unlock", n, names, task, fn, privdata);

    if (!m || rlk_ae_req_done(m->h.r))
        return m ? m->h.r : NULL;
    m->phase = AML_UNLOCKING;
    m->k = n - 1;
    aml_next(m);
    return m->h.r;
}
