/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sem_queue.c - a semaphore waiter's side of the server's waiter queue
 * (sem_queue.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/random.h"
#include "client/topo.h"
#include "kinds/names.h"
#include "kinds/sem_queue.h"
#include "runtime/fam_hold.h"

#define RLK_SEMQ_KEEPALIVE_MS 1000                /* a queued waiter attempts at least this often */
#define RLK_SEMQ_CANCEL_NS (200LL * 1000000LL)    /* the most a give-up's cancel may take */

int rlk_sem_queue_init(rlk_sem_queue *q, const rlk_fam_base *b)
{
    unsigned char r[2] = {0, 0};

    q->waiters = rlk_fam_suffix_name(b->name, RLK_NAMES_WAITERS);
    q->grant = rlk_fam_suffix_name(b->name, RLK_NAMES_GRANT);
    q->cid = rlk_names_wake_cid(b->rt->uuid);
    (void)rlk_random_bytes(r, sizeof r);
    atomic_init(&q->seq, (unsigned)r[0] << 8 | r[1]);
    q->wake = rlk_names_wake_channel(b->channel, q->cid);
    return q->waiters && q->grant && q->wake ? 0 : -1;
}

void rlk_sem_queue_free(rlk_sem_queue *q)
{
    free(q->waiters);
    free(q->grant);
    free(q->wake);
}

int rlk_sem_queue_alone(const rlk_fam_base *b)
{
    return rlk_client_counts_exact(b->c);
}

long long rlk_sem_queue_ticket(rlk_sem_queue *q)
{
    return q->cid * 1024 + (long long)(atomic_fetch_add(&q->seq, 1) & 1023u);
}

/* The semaphores' channel rule (runtime/sub.h): a grant on a wake channel
 * (the decimal ticket * 2^26, ticket in 2^25..2^26-1, nothing else in its
 * low 26 bits: lib/sem_grant.lua) names the ticket; "0" wakes one; anything
 * else (a count on redisson_sc:{name}) wakes every waiter. */
static int rlk_semq_meaning(const char *payload, size_t len, long long *head, long long *next)
{
    unsigned long long x;
    int kind = rlk_sub_grant_number(payload, len, &x);

    if (kind != RLK_SUB_MSG_GRANT)
        return kind;
    if (x % RLK_NAMES_GRANT_SHIFT != 0 || x / RLK_NAMES_GRANT_SHIFT < RLK_NAMES_WAKE_TICKET_MIN ||
        x / RLK_NAMES_GRANT_SHIFT >= RLK_NAMES_GRANT_SHIFT)   /* a ticket is below 2^26 */
        return RLK_SUB_MSG_ALL;
    *head = (long long)(x / RLK_NAMES_GRANT_SHIFT);
    *next = 0;
    return RLK_SUB_MSG_GRANT;
}

const rlk_sub_rule rlk_sem_queue_sub_rule = {rlk_semq_meaning};

void rlk_sem_queue_wait(rlk_sem_queue *q, const rlk_fam_base *b, rlk_waiter *w,
                        rlk_sub_ticket *tk, const int *wide)
{
    tk->claim_ns = (RLK_FAM_CLAIM_MS + 5) * 1000000LL;
    w->rule = &rlk_sem_queue_sub_rule;
    w->ticket = tk;
    w->keepalive_ms = RLK_SEMQ_KEEPALIVE_MS;
    w->recheck_ms = RLK_FAM_CLAIM_MS + 5;     /* -3: a dead grantee's reservation runs out */
    w->channel = q->wake;
    w->wide_channel = b->channel;
    w->wide = wide;
    rlk_wait_pre_join(w);
}

void rlk_sem_queue_cancel(rlk_sem_queue *q, const rlk_fam_base *b, long long ticket,
                          const char *permits)
{
    const char *keys[4] = {b->name, b->channel, q->waiters, q->grant};
    char tk[24];
    const char *args[4] = {tk, permits, RLK_FAM_CLAIM_MS_STR, rlk_publish_arg(b->c)};
    redisReply *r = NULL;
    char saved[RLK_ERRSTR_MAX];
    int err = rlk_err(b->c);
    long long limit;

    snprintf(saved, sizeof saved, "%s", rlk_errstr(b->c));
    snprintf(tk, sizeof tk, "%lld", ticket);
    limit = rlk_time_limit_enter(rlk_clock_now_ns() + RLK_SEMQ_CANCEL_NS);
    if (rlk_evalv(b->c, "semaphore/cancel", 4, keys, NULL, 4, args, NULL, &r) == RLK_OK)
        freeReplyObject(r);
    else
        rlk_set_error(b->c, err, "%s", saved);
    rlk_time_limit_leave(limit);
}
