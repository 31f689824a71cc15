/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_semq.c - an async semaphore waiter's side of the server's waiter queue
 * (a_semq.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "kinds/names.h"
#include "kinds/sem_queue.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "async/engine.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_semq.h"

#define RLK_A_SEMQ_KEEPALIVE_MS 1000            /* a waiter attempts at least this often */
#define RLK_A_SEMQ_RECHECK_MS (RLK_FAM_CLAIM_MS + 5)    /* first behind another's reservation */

int rlk_a_semq_init(rlk_a_semq *q, rlk_async *ac, const char *name, rlk_a_semq_poke_fn poke,
                    void *arg)
{
    memset(q, 0, sizeof *q);
    q->ac = ac;
    q->poke = poke;
    q->poke_arg = arg;
    q->name = strdup(name);
    q->channel = rlk_fam_prefix_name(RLK_NAMES_CH_SEMAPHORE, name);
    if (q->channel)
        q->wake = rlk_names_wake_channel(q->channel, rlk_names_wake_cid(rlk_async_uuid(ac)));
    return q->name && q->channel && q->wake ? 0 : -1;
}

void rlk_a_semq_free(rlk_a_semq *q)
{
    rlk_ae_unsubscribe(q->sub);
    rlk_ae_unsubscribe(q->s_wide);
    q->sub = q->s_wide = NULL;
    free(q->name);
    free(q->channel);
    free(q->wake);
}

void rlk_a_semq_quiet(rlk_a_semq *q, rlk_ae_timer **deadline)
{
    rlk_a_common_quiet(&q->retry, deadline, &q->sub);
    rlk_ae_unsubscribe(q->s_wide);
    q->s_wide = NULL;
}

static void rlk_a_semq_retry_fire(rlk_async *ac, void *arg)
{
    rlk_a_semq *q = arg;

    (void)ac;
    q->retry = NULL;
    q->poke(q->poke_arg);
}

void rlk_a_semq_retry(rlk_a_semq *q, long long ms)
{
    rlk_ae_timer_del(q->retry);
    q->retry = rlk_ae_timer_add(q->ac, ms > 0 ? ms : 0, rlk_a_semq_retry_fire, q);
}

void rlk_a_semq_retry_stop(rlk_a_semq *q)
{
    rlk_ae_timer_del(q->retry);
    q->retry = NULL;
}

/* A message on the wake channel (a grant, ticket * 2^26: only its own
 * counts) or on the semaphore's (a release published the count), or msg
 * NULL: subscribed (again; a grant may have been missed): poke. */
static void rlk_a_semq_msg(rlk_async *ac, const char *channel, const char *msg, size_t len,
                           void *arg)
{
    rlk_a_semq *q = arg;

    (void)ac;
    if (msg && strcmp(channel, q->wake) == 0 &&
        !rlk_sub_grants(&rlk_sem_queue_sub_rule, msg, len, q->ticket))
        return;     /* another waiter's grant */
    q->poke(q->poke_arg);
}

int rlk_a_semq_listen(rlk_a_semq *q, long long wait_ms, rlk_ae_timer_fn deadline_fn, void *arg,
                      rlk_ae_timer **deadline)
{
    if (!(q->sub = rlk_ae_subscribe(q->ac, q->wake, rlk_a_semq_msg, q)))
        return -1;
    if (wait_ms > 0)
        *deadline = rlk_ae_timer_add(q->ac, wait_ms, deadline_fn, arg);
    return 0;
}

long long rlk_a_semq_arg(const rlk_a_semq *q)
{
    return q->queued ? -q->ticket : q->ticket;
}

int rlk_a_semq_wake(const rlk_a_semq *q, const rlk_async_req *r, const rlk_ae_call *call,
                    int *again)
{
    return rlk_a_common_wake(r, call, again) && (!q->ticket || rlk_ae_sub_ready(q->sub));
}

long long rlk_a_semq_busy(rlk_a_semq *q, int waiting, long long wait, int first, int *again)
{
    int queue;

    if (q->ticket)
        q->queued = 1;
    if (!waiting)
        return RLK_A_SEMQ_END;
    /* A queue only where a grant's reach is counted (rlk_ae_counts_exact); without one the
     * waiter is woken by every count on the semaphore's channel, as a Redisson waiter (it
     * respects reservations). */
    queue = q->ticket || rlk_ae_counts_exact(q->ac);
    /* First in the queue (or behind a reservation): the semaphore's channel too (a Redisson
     * release grants nobody); else not, or every release's count would wake this waiter. */
    if ((first || wait == -3 || !queue) && !q->s_wide)
        q->s_wide = rlk_ae_subscribe(q->ac, q->channel, rlk_a_semq_msg, q);
    else if (queue && !first && wait != -3 && q->s_wide) {
        rlk_ae_unsubscribe(q->s_wide);
        q->s_wide = NULL;
    }
    if (!q->ticket && queue) {
        /* The fast try failed: take a ticket, attempt with it once subscribed. */
        q->ticket = rlk_names_wake_ticket(rlk_names_wake_cid(rlk_async_uuid(q->ac)));
        if (!rlk_ae_sub_ready(q->sub) && !*again)
            return RLK_A_SEMQ_LATER;
        *again = 0;
        return 0;
    }
    if (*again) {
        *again = 0;
        return 0;
    }
    if (wait == -3)
        return RLK_A_SEMQ_RECHECK_MS;
    return wait >= 0 && wait < RLK_A_SEMQ_KEEPALIVE_MS ? wait : RLK_A_SEMQ_KEEPALIVE_MS;
}

rlk_ae_call *rlk_a_semq_cancel(rlk_a_semq *q, long long permits, rlk_ae_reply_fn fn, void *arg)
{
    rlk_proto_argvals v = {.n = permits, .ticket = q->ticket};
    int queued = q->queued;

    q->queued = 0;
    if (!queued || !q->ticket || rlk_ae_closing(q->ac))
        return NULL;
    return rlk_a_kind_call(q->ac, &rlk_sem_queue_cancel_call, q->name, &v, NULL, fn, arg);
}

void rlk_a_semq_end(rlk_a_semq *q, rlk_ae_timer **deadline, rlk_ae_call *call)
{
    rlk_a_semq_quiet(q, deadline);
    rlk_ae_call_forget(call);
    rlk_a_semq_free(q);
}
