/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_semq.c - an async semaphore waiter's side of the server's waiter queue
 * (a_semq.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "kinds/acq.h"
#include "kinds/names.h"
#include "kinds/sem_queue.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "engine/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_semq.h"

static void rlk_a_semq_end(rlk_a_semq *q, int err);
static void rlk_a_semq_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                             int lost, void *arg);

/* rlk_a_wait_fn: the wait ran out. */
static void rlk_a_semq_timeout(void *arg)
{
    rlk_a_semq_end(arg, RLK_ERR_BUSY);
}

/* The next attempt's ticket argument: 0 (none yet: a single try that does
 * not queue), t (may join the queue), -t (may be queued already). */
static long long rlk_a_semq_arg(const rlk_a_semq *q)
{
    return q->queued ? -q->w.ticket : q->w.ticket;
}

/* The waiter's attempt (rlk_a_wait_fn): the kind's acquire with the queue's ticket argument,
 * its reply the machine's (rlk_a_semq_reply). */
static void rlk_a_semq_attempt(void *arg)
{
    rlk_a_semq *q = arg;
    rlk_proto_argvals v = {.n = q->permits, .lease_ms = q->lease_ms, .ticket = rlk_a_semq_arg(q),
                           .id = q->id, .idlen = q->idlen};

    q->w.again = 0;
    if (rlk_a_semq_send(q, q->acquire, &v, RLK_A_SEMQ_ATTEMPT, rlk_a_semq_reply))
        rlk_a_semq_finish(q, rlk_ae_closing(q->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM,
                          "%s %s: %s", q->m.what, q->name,
                          rlk_ae_closing(q->h.ac) ? "client freed" : "out of memory");
}

int rlk_a_semq_init(rlk_a_semq *q, const char *who, const char *name, long long permits,
                    long long wait_ms, const char *busy, const rlk_proto_call *acquire, int ids)
{
    rlk_a_wait_init(&q->w, &q->h, q, rlk_a_semq_attempt, rlk_a_semq_timeout);
    q->acquire = acquire;
    q->w.rule = &rlk_sem_queue_sub_rule;
    q->permits = permits;
    q->wait_ms = wait_ms;
    q->busy = busy;
    q->name = strdup(name);
    q->channel = rlk_fam_prefix_name(RLK_NAMES_CH_SEMAPHORE, name);
    if (q->channel)
        q->w.grants = q->wake = rlk_names_wake_channel(q->channel,
                                                       rlk_names_wake_cid(rlk_async_uuid(q->h.ac)));
    q->m = (rlk_acq_sem){"semaphore", q->name, acquire->script, permits, ids,
                         .counters = rlk_ae_counters(q->h.ac)};
    if (q->name && q->channel && q->wake)
        return 0;
    rlk_ae_complete(q->h.r, RLK_ERR_NOMEM, 0, NULL, "%s %s: out of memory", who, name);
    return 1;
}

static void rlk_a_semq_free(rlk_async_req *r, void *state)
{
    rlk_a_semq *q = state;

    (void)r;
    rlk_a_wait_quiet(&q->w);
    rlk_ae_call_forget(q->w.call);
    rlk_a_common_free(3, q->name, q->channel, q->wake);
}

static void rlk_a_semq_cancel(rlk_async_req *r, void *state)
{
    rlk_a_semq *q = state;

    (void)r;
    if (q->cw == RLK_A_SEMQ_UNDO || q->cw == RLK_A_SEMQ_CANCEL || q->cw == RLK_A_SEMQ_REL)
        return;     /* giving permits back, leaving the queue or releasing, already */
    q->w.ending = RLK_ERR_CANCELLED;
    if (q->w.call)
        return;     /* the call in flight decides (permits taken are given back) */
    rlk_a_semq_end(q, RLK_ERR_CANCELLED);
}

int rlk_a_semq_begin(rlk_a_semq *q, const char *who, const char *name)
{
    return rlk_a_common_begin(q->h.r, rlk_a_semq_cancel, rlk_a_semq_free, who, name);
}

int rlk_a_semq_in_budget(const rlk_a_semq *q)
{
    return rlk_a_common_elapsed(&q->h) <= rlk_a_common_budget(q->h.ac, q->wait_ms);
}

int rlk_a_semq_send(rlk_a_semq *q, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                    int cw, rlk_ae_reply_fn fn)
{
    rlk_ae_timer_del(q->w.retry);
    q->w.retry = NULL;
    q->w.call = rlk_a_kind_call(q->h.ac, pc, q->name, vals, NULL, fn, q);
    q->cw = q->w.call ? cw : RLK_A_SEMQ_NONE;
    return q->w.call ? 0 : -1;
}

void rlk_a_semq_start(rlk_a_semq *q, const char *who)
{
    /* The wake channel (where grants come) and a bounded wait's deadline, before the first
     * attempt: the confirmation of a subscription attempts again, so a grant published after
     * an attempt that fails is not missed. Nothing for a single try. */
    if (q->wait_ms != 0 && rlk_a_wait_listen(&q->w, q->wake, q->wait_ms))
        rlk_ae_complete(q->h.r, RLK_ERR_NOMEM, 0, NULL, "%s %s: out of memory", who, q->name);
    else
        q->w.go(q);
}

/* An attempt did not get the permits. Its ticket, when it had one, may be
 * queued now. A single try, or a request that is ending, ends
 * (rlk_a_semq_end: RLK_ERR_CANCELLED when cancelled, else RLK_ERR_BUSY).
 * Else: first, in the queue (or first behind a reservation: wait -3), hears
 * the semaphore's channel, else not; wait is -3 behind another's
 * reservation, ms >= 0 until permits may come back by themselves, or -1.
 * Without a ticket yet (the fast try failed) it draws one and attempts once
 * its wake channel is subscribed. The next attempt: now when woken during
 * the call, else in at most the keepalive (1 s). */
static void rlk_a_semq_busy(rlk_a_semq *q, long long wait, int first)
{
    int queue;

    if (q->w.ticket)
        q->queued = 1;
    if (q->wait_ms == 0 || q->w.ending) {
        rlk_a_semq_end(q, q->w.ending == RLK_ERR_CANCELLED ? RLK_ERR_CANCELLED : RLK_ERR_BUSY);
        return;
    }
    /* A queue only where a grant's reach is counted (rlk_ae_counts_exact); without one the
     * waiter is woken by every count on the semaphore's channel, as a Redisson waiter (it
     * respects reservations). */
    queue = q->w.ticket || rlk_ae_counts_exact(q->h.ac);
    /* First in the queue (or behind a reservation): the semaphore's channel too (a Redisson
     * release grants nobody); else not, or every release's count would wake this waiter. */
    rlk_a_wait_wide(&q->w, first || wait == -3 || !queue, q->channel);
    rlk_a_wait_busy(&q->w, queue ? rlk_names_wake_ticket(rlk_names_wake_cid(
                                       rlk_async_uuid(q->h.ac))) : 0, wait);
}

static void rlk_a_semq_cancel_reply(rlk_async *ac, int rc, const redisReply *reply,
                                    const char *errstr, int lost, void *arg)
{
    rlk_a_semq *q = arg;
    rlk_proto_argvals v = {.n = q->permits, .ticket = q->w.ticket};

    rlk_a_unused(4, ac, reply, errstr, lost);
    q->w.call = NULL;
    q->cw = RLK_A_SEMQ_NONE;
    /* once more: the engine fences a lost one's connection first */
    if (rlk_acq_cancel_again(rc, q->cancels) && !rlk_ae_closing(q->h.ac) &&
        !rlk_a_semq_send(q, &rlk_sem_queue_cancel_call, &v, RLK_A_SEMQ_CANCEL,
                         rlk_a_semq_cancel_reply)) {
        q->cancels++;
        return;
    }
    rlk_ae_complete(q->h.r, q->end_err, 0, NULL, "%s", q->end_msg);
}

void rlk_a_semq_finish(rlk_a_semq *q, int err, const char *fmt, ...)
{
    rlk_proto_argvals v = {.n = q->permits, .ticket = q->w.ticket};
    int queued = q->queued;
    va_list ap;

    rlk_a_wait_quiet(&q->w);
    va_start(ap, fmt);
    vsnprintf(q->end_msg, sizeof q->end_msg, fmt, ap);
    va_end(ap);
    q->end_err = err;
    q->queued = 0;
    if (!queued || !q->w.ticket || rlk_ae_closing(q->h.ac) ||
        rlk_a_semq_send(q, &rlk_sem_queue_cancel_call, &v, RLK_A_SEMQ_CANCEL,
                        rlk_a_semq_cancel_reply))
        rlk_ae_complete(q->h.r, err, 0, NULL, "%s", q->end_msg);
    else
        q->cancels = 1;
}

/* rlk_a_semq_finish with RLK_ERR_CANCELLED ("cancelled") or RLK_ERR_BUSY (the machine's
 * message, kinds/acq.h rlk_acq_sem_busy). */
static void rlk_a_semq_end(rlk_a_semq *q, int err)
{
    rlk_acq_act x;

    rlk_acq_sem_busy(q->busy, q->name, q->permits, rlk_a_common_elapsed(&q->h), &x);
    rlk_a_semq_finish(q, err, "%s", err == RLK_ERR_CANCELLED ? "cancelled" : x.msg);
}

static void rlk_a_semq_act(rlk_a_semq *q, rlk_acq_act *x);
static int rlk_a_semq_give_back(rlk_a_semq *q);

static void rlk_a_semq_undo_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                                  int lost, void *arg)
{
    rlk_a_semq *q = arg;

    (void)r;
    q->w.call = NULL;
    if (rc == RLK_ERR_IO && !lost && !rlk_ae_closing(ac) && rlk_a_semq_in_budget(q) &&
        rlk_a_semq_give_back(q) == 0)
        return;     /* never written: once more */
    q->cw = RLK_A_SEMQ_NONE;
    if (rc == RLK_OK)
        rlk_ae_complete(q->h.r, RLK_ERR_CANCELLED, 0, NULL, "cancelled");
    else
        rlk_ae_complete(q->h.r, RLK_ERR_UNSETTLED, 0, NULL, "%s %s: cancelled after %lld "
                        "permit(s) were taken; giving them back failed%s: %s", q->m.what,
                        q->name, q->permits, lost ? " (reply lost: it may have run)" : "", errstr);
}

/* The permits taken given back (semaphore/release of them, psemaphore/release of the id). */
static int rlk_a_semq_give_back(rlk_a_semq *q)
{
    rlk_proto_argvals v = {.n = q->permits, .id = q->id, .idlen = q->idlen};

    return rlk_a_semq_send(q, q->release, &v, RLK_A_SEMQ_UNDO, rlk_a_semq_undo_reply);
}

/* The loop's interpreter of the machine's action x (kinds/acq.h). */
static void rlk_a_semq_act(rlk_a_semq *q, rlk_acq_act *x)
{
    rlk_proto_argvals v = {.id = q->id, .idlen = q->idlen};

    switch (x->is) {
    case RLK_ACQ_RECORD:
        q->queued = 0;      /* its ticket left the queue with them */
        rlk_a_wait_quiet(&q->w);
        if (q->w.ending != RLK_ERR_CANCELLED)
            rlk_ae_complete(q->h.r, RLK_OK, 0, q->result, NULL);
        else if (rlk_a_semq_give_back(q))   /* cancelled while they were on their way */
            rlk_a_semq_undo_reply(q->h.ac, RLK_ERR_NOMEM, NULL, rlk_ae_closing(q->h.ac)
                                  ? "client freed" : "out of memory", 0, q);
        return;
    case RLK_ACQ_WAIT:
        rlk_a_semq_busy(q, x->ttl, x->wide);
        return;
    case RLK_ACQ_READ:
        if (rlk_a_semq_send(q, &(rlk_proto_call){x->call, x->args}, &v, RLK_A_SEMQ_READ,
                            rlk_a_semq_reply) == 0)
            return;
        rlk_acq_sem_read(&q->m, NULL, q->end_msg, x);   /* not read: attempted again */
        break;
    default:
        break;
    }
    /* a lost call that did not run, or unknown: the same ids again, even when ending (a lost
     * call that ran then says RLK_HELD, and a cancelled request gives the permit back) */
    if (x->retry && rlk_a_semq_in_budget(q))
        q->w.go(q);
    else
        rlk_a_semq_finish(q, x->retry ? RLK_ERR_UNSETTLED : x->err, "%s", x->msg);
}

/* The reply of an attempt (rlk_ae_reply_fn, arg q): one never written is sent again in a while
 * within the budget; else it, or its loss, goes to the machine, and its action is done: the
 * permits taken (the request completed with q->result, or, cancelled meanwhile, the permits
 * given back with q->release before it ends RLK_ERR_CANCELLED), a wait (its next attempt
 * by the queue's rules), a lost call's read-back, a retry with the
 * same ids within the budget, or the end with the machine's error and message. */
static void rlk_a_semq_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                             int lost, void *arg)
{
    rlk_a_semq *q = arg;
    int cw = q->cw;
    rlk_acq_act x;

    (void)ac;
    q->w.call = NULL;
    q->cw = RLK_A_SEMQ_NONE;
    if (rlk_ae_req_done(q->h.r))
        return;
    if (cw == RLK_A_SEMQ_READ && rc != RLK_ERR_CLOSED) {    /* a lost attempt's read-back */
        rlk_acq_sem_read(&q->m, rc == RLK_OK ? r : NULL, q->end_msg, &x);
        rlk_a_semq_act(q, &x);
        return;
    }
    if (rc == RLK_ERR_IO && !lost && q->w.ending) {
        rlk_a_semq_end(q, q->w.ending);     /* never written: nothing taken */
        return;
    }
    if (rc == RLK_ERR_IO && !lost && rlk_a_semq_in_budget(q)) {
        rlk_a_wait_retry(&q->w, RLK_A_RETRY_MS);    /* never written: once more in a while */
        return;
    }
    if (rc == RLK_ERR_IO && lost) {
        RLK_A_COUNT(q->h, lost_replies);
        if (q->w.ticket)
            q->queued = 1;  /* it may have queued the ticket: -ticket from now on */
        snprintf(q->end_msg, sizeof q->end_msg, "%s %s: %s", q->m.what, q->name, errstr);
        rlk_acq_sem_lost(&q->m, rc, errstr, &x);
    } else {
        rlk_acq_sem_reply(&q->m, rc, errstr, r, &x);
    }
    if (x.is == RLK_ACQ_END && !x.msg[0])
        snprintf(x.msg, sizeof x.msg, "%s %s: %s", q->m.what, q->name, errstr ? errstr : "");
    rlk_a_semq_act(q, &x);
}
