/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_multilock.c - rlk_async_multilock_lock / _unlock (rlk_async.h): n
 * reentrant locks of this client held by one task, all or none, built from
 * rlk_async_lock / rlk_async_unlock requests (a_lock.c) taken one at a
 * time in the order given, with the blocking MultiLock's attempt loop
 * (its rules in multi/multilock.h, Redisson's): an attempt gives each member
 * what is left of a budget of 1500 ms per member (at most the caller's wait);
 * when one stays busy, the members taken are released (last first) and a new
 * attempt starts while the wait lasts. With a lease and a wait, members are
 * taken with a longer lease and set to the lease (reentrant/renew) once all
 * are held. Every failure, timeout or cancellation releases what was taken
 * before the callback is called: never one left held after it reports
 * anything but RLK_OK. docs/async-internals.md describes it.
 *
 * A member request's privdata is a small link (not the MultiLock's state):
 * when the client is freed, the MultiLock request may be delivered (and
 * freed) before its member's callback, which then finds the link empty.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/scripts.h"
#include "kinds/lock.h"
#include "multi/multilock.h"
#include "runtime/rt.h"
#include "runtime/engine.h"
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
    long long wait_ms, lease_ms, acq_lease, budget_ms;
    long long deadline;             /* monotonic ms; -1: none */
    long long attempt_end;
    int phase;                      /* AML_* */
    int k;                          /* the member being taken / renewed / released */
    int taken;                      /* members 0..taken-1 are held by this request */
    int released;                   /* unlock: members released */
    rlk_async_req *sub;             /* the member request in flight */
    aml_link *link;
    rlk_ae_call *call;              /* reentrant/renew in flight */
    rlk_ae_timer *kick;             /* a cancel acted on from the next turn */
    int ending;                     /* RLK_ERR_CANCELLED once cancelled */
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
                                   m->acq_lease, aml_sub_done, l)
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
    m->phase = AML_RELEASING;
    m->k = m->taken - 1;
    aml_next(m);
}

/* A new attempt from the first member. */
static void aml_attempt(aml *m)
{
    m->phase = AML_ACQUIRING;
    m->k = 0;
    m->taken = 0;
    m->attempt_end = rlk_multilock_attempt_end(rlk_ae_now_ms(), m->budget_ms, m->deadline);
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
    if (m->ending == RLK_ERR_CANCELLED) {
        aml_fail(m, RLK_ERR_CANCELLED, "cancelled");
        return;
    }
    if (rc != RLK_OK) {
        aml_fail(m, rc, "multilock member %d (%s): %s", m->k, m->names[m->k], errstr);
        return;
    }
    if (!(reply->type == REDIS_REPLY_INTEGER && reply->integer == 1)) {
        /* Gone before all were held: a new attempt, as the blocking MultiLock does. */
        m->end_err = 0;
        aml_fail(m, RLK_ERR_LOST, "multilock member %d (%s): gone before all members were held",
                 m->k, m->names[m->k]);
        return;
    }
    m->k++;
    aml_next(m);
}

/* The next step of the current phase. */
static void aml_next(aml *m)
{
    if (rlk_ae_req_done(m->h.r))
        return;
    if (m->phase == AML_ACQUIRING) {
        long long wait;

        if (m->ending == RLK_ERR_CANCELLED) {
            aml_fail(m, RLK_ERR_CANCELLED, "cancelled");
            return;
        }
        if (m->k == m->n) {    /* all held: set to the lease when taken with another */
            m->phase = AML_RENEWING;
            m->k = m->acq_lease != m->lease_ms ? 0 : m->n;
            aml_next(m);
            return;
        }
        wait = m->wait_ms == 0 ? 0 : m->attempt_end - rlk_ae_now_ms();
        if (wait < 0)
            wait = 0;
        if (aml_sub_start(m, 1, wait) != 0)
            aml_fail(m, RLK_ERR_NOMEM, "multilock: out of memory");
        return;
    }
    if (m->phase == AML_RENEWING) {
        char owner[RLK_OWNER_MAX + 1];
        rlk_proto_argvals v = {.lease_ms = m->lease_ms, .owner = owner};

        if (m->k == m->n) {
            rlk_ae_complete(m->h.r, RLK_OK, m->n, NULL, NULL);
            return;
        }
        rlk_ae_owner(m->h.ac, m->task, owner, sizeof owner);
        m->call = rlk_a_kind_call(m->h.ac, &rlk_lock_renew_call, m->names[m->k], &v, NULL,
                                  aml_renew_reply, m);
        if (!m->call)
            aml_fail(m, rlk_ae_closing(m->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, "multilock: %s",
                     rlk_ae_closing(m->h.ac) ? "the async client was freed" : "out of memory");
        return;
    }
    if (m->phase == AML_RELEASING) {
        if (m->k < 0) {
            /* Nothing of this request is held any more. */
            if (m->ending != RLK_ERR_CANCELLED &&
                rlk_multilock_again(m->end_err, m->wait_ms, rlk_ae_now_ms(), m->deadline)) {
                m->end_err = 0;
                aml_attempt(m);
                return;
            }
            if (m->ending == RLK_ERR_CANCELLED &&
                (m->end_err == RLK_ERR_BUSY || m->end_err == RLK_ERR_LOST)) {
                m->end_err = RLK_ERR_CANCELLED;
                snprintf(m->end_msg, sizeof m->end_msg, "cancelled");
            }
            if (m->end_err == RLK_ERR_LOST)
                m->end_err = RLK_ERR_BUSY;
            rlk_ae_complete(m->h.r, m->end_err, 0, NULL, "%s", m->end_msg);
            return;
        }
    } else if (m->k < 0) {  /* AML_UNLOCKING: every member, last first; all are tried */
        if (m->end_err)
            rlk_ae_complete(m->h.r, m->end_err, m->released, NULL, "%s", m->end_msg);
        else
            rlk_ae_complete(m->h.r, RLK_OK, m->released, NULL, NULL);
        return;
    }
    if (aml_sub_start(m, 0, 0) != 0)
        rlk_ae_complete(m->h.r, RLK_ERR_NOMEM, m->released, NULL,
                        "multilock: out of memory while releasing member %d (%s)", m->k,
                        m->names[m->k]);
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
    switch (m->phase) {
    case AML_ACQUIRING:
        if (res->err == RLK_OK) {
            m->taken = ++m->k;
            aml_next(m);
            return;
        }
        if (res->err == RLK_ERR_CANCELLED || m->ending == RLK_ERR_CANCELLED) {
            aml_fail(m, RLK_ERR_CANCELLED, "cancelled");
            return;
        }
        aml_fail(m, res->err, "multilock member %d (%s): %s", m->k, m->names[m->k], res->errstr);
        return;
    case AML_RELEASING:
        /* Best effort: a member that cannot be released is recorded; its lease runs out. */
        if (res->err != RLK_OK && res->err != RLK_ERR_NOT_OWNER && m->end_err != RLK_ERR_UNSETTLED) {
            snprintf(msg, sizeof msg, "%s; and member %d (%s) could not be released: %s",
                     m->end_msg, m->k, m->names[m->k], res->errstr);
            snprintf(m->end_msg, sizeof m->end_msg, "%.255s", msg);
            m->end_err = res->err == RLK_ERR_CANCELLED ? m->end_err : RLK_ERR_UNSETTLED;
        }
        m->k--;
        m->taken = m->k + 1;
        aml_next(m);
        return;
    default:    /* AML_UNLOCKING */
        if (res->err == RLK_OK)
            m->released++;
        else if (!m->end_err) {
            m->end_err = res->err;
            snprintf(m->end_msg, sizeof m->end_msg, "multilock member %d (%s): %s", m->k,
                     m->names[m->k], res->errstr);
        }
        m->k--;
        aml_next(m);
        return;
    }
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
    if (m->phase == AML_UNLOCKING || m->ending)
        return;     /* an unlock goes on: its result stands */
    m->ending = RLK_ERR_CANCELLED;
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
    m->wait_ms = wait_ms;
    m->lease_ms = lease_ms;
    m->budget_ms = rlk_multilock_budget_ms(RLK_MULTILOCK_MS_PER_MEMBER, n, wait_ms);
    m->deadline = wait_ms < 0 ? -1 : m->h.start + wait_ms;
    m->acq_lease = rlk_multilock_acquire_lease(lease_ms, m->budget_ms, wait_ms);
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
