/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sem_queue.c - a semaphore waiter's side of the server's waiter queue
 * (sem_queue.h).
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/sem_queue.h"
#include "runtime/fam_hold.h"

#define RLK_SEMQ_KEEPALIVE_MS 1000                /* a queued waiter attempts at least this often */

const rlk_proto_call rlk_sem_queue_cancel_call = {"semaphore/cancel", "ticket n claim_ms publish"};

/* cid * 1024 + r, cid the client's (names.h rlk_names_wake_cid, as the reentrant lock's), r
 * the process's next from the start the uuid's next 4 hex digits draw (random bits, as cid's). */
static long long rlk_sem_queue_ticket(const rlk_fam_base *b)
{
    static atomic_uint seq;
    const char *u = b->rt->uuid;
    unsigned start = (unsigned)strtoul((char[5]){u[4], u[5], u[6], u[7], 0}, NULL, 16);

    return rlk_names_wake_cid(u) * 1024 + (long long)((start + atomic_fetch_add(&seq, 1)) & 1023u);
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

int rlk_sem_queue_acquire(const rlk_fam_base *b, rlk_sem_queue_try *t, long long permits,
                          rlk_wait_attempt_fn attempt, void *arg, int ride_out, long long start,
                          long long wait_ms, const char *what)
{
    rlk_proto_argvals v = {.n = permits};
    rlk_acq_act x;
    rlk_waiter w;
    int rc;

    rlk_wait_init(&w, b, "semaphore", attempt, arg);
    w.ride_out = ride_out;
    /* a ticket where a release can tell whether a grant reached its waiter */
    t->tk.ticket = wait_ms != 0 && rlk_client_counts_exact(b->c) ? rlk_sem_queue_ticket(b) : 0;
    if (t->tk.ticket) {
        t->tk.claim_ns = (RLK_FAM_CLAIM_MS + 5) * 1000000LL;
        w.rule = &rlk_sem_queue_sub_rule;
        w.ticket = &t->tk;
        w.keepalive_ms = RLK_SEMQ_KEEPALIVE_MS;
        w.recheck_ms = RLK_FAM_CLAIM_MS + 5;     /* -3: a dead grantee's reservation runs out */
        w.channel = b->wake;
        w.wide_channel = b->channel;
        w.wide = &t->wide;
        rlk_wait_pre_join(&w);
    }
    rc = rlk_wait_acquire(&w, start, wait_ms, 1);
    v.ticket = t->tk.ticket;
    if (rc != RLK_OK && t->queued)
        rlk_handle_cancel(b, &rlk_sem_queue_cancel_call, NULL, &v, RLK_FAM_CANCEL_NS);
    if (rc == RLK_ERR_BUSY) {
        rlk_acq_sem_busy(what, b->name, permits, (rlk_clock_now_ns() - start) / 1000000LL, &x);
        rc = rlk_set_error(b->c, x.err, "%s", x.msg);
    }
    return rc;
}
