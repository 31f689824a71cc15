/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * semaphore.c - the semaphore API (rlk_semaphore_*): Redisson's RSemaphore
 * on the scripts/semaphore scripts. A string key `name` holds the available
 * permits. A waiter queues "<ticket> <permits>" in {name}:rlk_waiters
 * (semaphore/acquire); a release (or add_permits) that leaves enough
 * permits for the first waiter reserves them for it ({name}:rlk_next) and
 * grants it alone on this client's wake channel redisson_sc:{name}:rlk:<cid>;
 * the count still goes out on redisson_sc:{name}, where only the first
 * waiter listens (for Redisson's releases). docs/locks/semaphore.md
 * describes the data and the API, docs/runtime.md the queue.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/expiry.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "kinds/semaphore.h"
#include "kinds/sem_queue.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/metrics.h"
#include "runtime/wait.h"

const rlk_proto_call rlk_semaphore_acquire_call = {"semaphore/acquire",
                                                  "n ticket claim_ms publish"};
const rlk_proto_call rlk_semaphore_release_call = {"semaphore/release", "n claim_ms publish"};
const rlk_proto_call rlk_semaphore_cancel_call = {"semaphore/cancel", "ticket n claim_ms publish"};
const rlk_proto_call rlk_semaphore_release_if_exists_call = {"semaphore/release_if_exists",
                                                            "n claim_ms publish"};
const rlk_proto_call rlk_semaphore_try_set_ttl_call = {"semaphore/try_set_permits_ttl",
                                                      "n ttl publish"};

struct rlk_semaphore {
    rlk_fam_base b;             /* channel: redisson_sc:{name} */
    rlk_sem_queue q;            /* the waiter queue's keys, this client's wake channel, tickets
                                   (kinds/sem_queue.h, shared with the permit-expirable one) */
};


/* rlk_fam_kind.fini: what the handle holds beyond its base. */
static void rlk_semaphore_fini(void *handle)
{
    rlk_semaphore *s = handle;

    rlk_sem_queue_free(&s->q);
}

static const rlk_fam_kind rlk_semaphore_kind = {
    "rlk_semaphore_new", "semaphore", RLK_NAMES_CH_SEMAPHORE, rlk_fam_prefix_name,
    rlk_semaphore_fini
};

/* ---------------------------------------------------------------- handles */

rlk_semaphore *rlk_semaphore_new(rlk_client *c, const char *name)
{
    rlk_semaphore *s = rlk_fam_new(c, name, sizeof(rlk_semaphore), &rlk_semaphore_kind);

    if (!s)
        return NULL;
    return rlk_fam_made(s, rlk_sem_queue_init(&s->q, &s->b) == 0 &&
                           rlk_handle_keys(&s->b, "semaphore", "channel waiters grant"));
}

void rlk_semaphore_free(rlk_semaphore *s)
{
    rlk_fam_free(s);
}

const char *rlk_semaphore_name(const rlk_semaphore *s)
{
    return s ? s->b.name : NULL;
}

const char *rlk_semaphore_channel(const rlk_semaphore *s)
{
    return s ? s->b.channel : NULL;
}

/* ---------------------------------------------------------------- acquiring */

typedef struct rlk_sem_try {
    rlk_semaphore *s;
    long long n;
    char permits[24];           /* n as text */
    rlk_sub_ticket ticket;      /* ticket.ticket 0: a single try, never queued */
    int queued;                 /* an attempt may have put the ticket in the queue */
    int wide;                   /* the last attempt said: first in the queue (or -3): hear the
                                   semaphore's channel too */
} rlk_sem_try;

/* semaphore/release of permits (the undo of an acquisition too few replicas
 * acknowledged: the count goes back up, and a queued waiter is granted). */
static int rlk_sem_release_call(rlk_semaphore *s, const char *permits, long long *count)
{
    const char *keys[4] = {s->b.name, s->b.channel, s->q.waiters, s->q.grant};
    const char *args[3] = {permits, RLK_FAM_CLAIM_MS_STR, rlk_publish_arg(s->b.c)};

    return rlk_fam_eval_int(s->b.c, "semaphore/release", 4, keys, 3, args, NULL, count);
}

/* Gives the permits of an acquisition too few replicas acknowledged back. */
static int rlk_sem_undo(void *arg)
{
    rlk_sem_try *t = arg;
    long long count = 0;

    return rlk_sem_release_call(t->s, t->permits, &count);
}

/* rlk_wait_attempt_fn: semaphore/acquire with the ticket (queued: -ticket).
 * RLK_OK: acquired. RLK_ERR_BUSY: *bound_ms -1 (a grant or a count wakes
 * it), RLK_WAIT_RECHECK (first behind another ticket's reservation), or a
 * single try's wait for a reservation's claim window. */
static int rlk_sem_attempt(void *arg, long long *bound_ms)
{
    rlk_sem_try *t = arg;
    rlk_semaphore *s = t->s;
    long long targ = rlk_wait_ticket_arg(&t->ticket, t->queued);   /* 0: does not queue */
    rlk_proto_argvals v = {.n = t->n, .ticket = targ};
    rlk_proto_outcome o;
    redisReply *r = NULL;
    int rc;

    *bound_ms = -1;
    rc = rlk_handle_eval(&s->b, rlk_semaphore_acquire_call.script, rlk_semaphore_acquire_call.args,
                         &v, &r);
    if (rc != RLK_OK) {
        if (targ)
            t->queued = 1;      /* it may have run: the give-up's cancel takes the entry out */
        return rc;
    }
    t->wide = 0;
    if (rlk_proto_read_sem(r, &o) == RLK_PROTO_ACQUIRED) {
        freeReplyObject(r);
        t->queued = 0;
        return rlk_fam_acks_acquired(s->b.c, "acquire", s->b.name, rlk_sem_undo, t);
    }
    if (o.is == RLK_PROTO_BUSY) {
        /* {-1, 1}: first in the queue; -3: first behind another ticket's reservation; a
         * single try behind a reservation: its claim window */
        t->wide = o.first || o.value == -3;
        *bound_ms = o.value == -3 ? RLK_WAIT_RECHECK : o.first || o.value < 0 ? -1 : o.value;
        rc = RLK_ERR_BUSY;
    } else {
        rc = rlk_set_error(s->b.c, RLK_ERR_PROTOCOL, "%s %s: reply of type %d",
                           rlk_semaphore_acquire_call.script, s->b.name, r->type);
    }
    freeReplyObject(r);
    if (rc == RLK_ERR_BUSY && targ)
        t->queued = 1;
    return rc;
}

static int rlk_sem_busy(rlk_semaphore *s, long long permits, long long start_ns)
{
    return rlk_set_error(s->b.c, RLK_ERR_BUSY, "semaphore %s: %lld permit(s) not available after "
                         "%lld ms", s->b.name, permits, (rlk_clock_now_ns() - start_ns) / 1000000LL);
}

static int rlk_semaphore_try_acquire_run(rlk_semaphore *s, long long permits, long long wait_ms)
{
    long long start = rlk_clock_now_ns();
    rlk_sem_try t;
    rlk_waiter w;
    int rc;

    rc = rlk_fam_check_range(s->b.c, "acquire", s->b.name, "permits", permits, 1, RLK_NUM_MAX);
    if (rc != RLK_OK)
        return rc;
    memset(&t, 0, sizeof t);
    t.s = s;
    t.n = permits;
    snprintf(t.permits, sizeof t.permits, "%lld", permits);
    t.ticket.ticket = wait_ms != 0 && rlk_sem_queue_alone(&s->b) ? rlk_sem_queue_ticket(&s->q) : 0;
    /* No outage ride-out: an acquire whose reply was lost may have taken the
     * permits, and repeating it could take them twice; the wait ends with the
     * error and its ticket leaves the queue. */
    rlk_wait_init(&w, &s->b, "semaphore", rlk_sem_attempt, &t);
    if (t.ticket.ticket) {
        /* Grants come on this client's wake channel; the semaphore's channel only while first
         * in the queue (docs/runtime.md, "The semaphores' queue"). */
        rlk_sem_queue_wait(&s->q, &s->b, &w, &t.ticket, &t.wide);
    }
    rc = rlk_wait_acquire(&w, start, wait_ms, 1);
    if (rc != RLK_OK && t.queued)
        rlk_sem_queue_cancel(&s->q, &s->b, t.ticket.ticket, t.permits);
    return rc == RLK_ERR_BUSY ? rlk_sem_busy(s, permits, start) : rc;
}

int rlk_semaphore_try_acquire(rlk_semaphore *s, long long permits, long long wait_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(s ? &s->b : NULL);
    int rc = s ? rlk_semaphore_try_acquire_run(s, permits, wait_ms) : RLK_ERR_ARG;

    return rlk_handle_call_end(&hc, RLK_MKIND_SEMAPHORE, rc);
}

int rlk_semaphore_acquire(rlk_semaphore *s, long long permits)
{
    return rlk_semaphore_try_acquire(s, permits, -1);
}

/* ---------------------------------------------------------------- counting */

/* semaphore/release or semaphore/add_permits (ARGV v, claim window,
 * publish), v checked against lo..RLK_NUM_MAX; replicas as rlk_fam_count. */
static int rlk_sem_count(rlk_semaphore *s, const char *what, const char *field, long long v,
                         long long lo, const char *script, long long *out)
{
    const char *keys[4] = {s->b.name, s->b.channel, s->q.waiters, s->q.grant};
    char num[24];
    const char *args[3] = {num, RLK_FAM_CLAIM_MS_STR, rlk_publish_arg(s->b.c)};
    long long n = 0;
    int rc = rlk_fam_check_range(s->b.c, what, s->b.name, field, v, lo, RLK_NUM_MAX);

    if (rc != RLK_OK)
        return rc;
    snprintf(num, sizeof num, "%lld", v);
    rc = rlk_fam_eval_int(s->b.c, script, 4, keys, 3, args, NULL, &n);
    if (rc == RLK_OK && out)
        *out = n;
    return rc == RLK_OK ? rlk_fam_acks_done(s->b.c, what, s->b.name, "done") : rc;
}

int rlk_semaphore_release(rlk_semaphore *s, long long permits, long long *count)
{
    if (!s)
        return RLK_ERR_ARG;
    return rlk_sem_count(s, "release", "permits", permits, 1, "semaphore/release", count);
}

int rlk_semaphore_release_if_exists(rlk_semaphore *s, long long permits, int *released)
{
    long long n = 0;
    int rc;

    if (released)
        *released = 0;
    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_sem_count(s, "release_if_exists", "permits", permits, 1,
                       "semaphore/release_if_exists", &n);
    if (released && (rc == RLK_OK || rc == RLK_ERR_NOREPLICAS))
        *released = n == 1;
    return rc;
}

int rlk_semaphore_try_set_permits(rlk_semaphore *s, long long permits, int *set)
{
    const char *keys[2];

    if (!s)
        return RLK_ERR_ARG;
    return rlk_fam_try_set_permits(&s->b, "semaphore/try_set_permits",
                                   rlk_fam_keys(&s->b, keys), keys, permits, set);
}

int rlk_semaphore_try_set_permits_ttl(rlk_semaphore *s, long long permits, long long ttl_ms,
                                     int *set)
{
    const char *keys[2];
    char num[24], ttl[24];
    const char *args[3] = {num, ttl, NULL};     /* permits, ttl_ms, publish */
    long long n = 0;
    int rc;

    if (set)
        *set = 0;
    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_fam_check_range(s->b.c, "try_set_permits", s->b.name, "permits", permits, 0,
                             RLK_NUM_MAX);
    if (rc == RLK_OK)
        rc = rlk_fam_check_range(s->b.c, "try_set_permits", s->b.name, "ttl_ms", ttl_ms, 1,
                                 RLK_NUM_MAX);
    if (rc != RLK_OK)
        return rc;
    snprintf(num, sizeof num, "%lld", permits);
    snprintf(ttl, sizeof ttl, "%lld", ttl_ms);
    args[2] = rlk_publish_arg(s->b.c);
    rc = rlk_fam_eval_int(s->b.c, "semaphore/try_set_permits_ttl", rlk_fam_keys(&s->b, keys), keys,
                          3, args, NULL, &n);
    if (rc != RLK_OK)
        return rc;
    if (set)
        *set = n == 1;
    return rlk_fam_acks_done(s->b.c, "try_set_permits", s->b.name, "done");
}

int rlk_semaphore_add_permits(rlk_semaphore *s, long long delta, long long *count)
{
    if (!s)
        return RLK_ERR_ARG;
    return rlk_sem_count(s, "add_permits", "delta", delta, -RLK_NUM_MAX, "semaphore/add_permits",
                         count);
}

/* A script on (name) without arguments and with an integer reply. */
static int rlk_sem_call1(rlk_semaphore *s, const char *script, long long *out)
{
    const char *keys[1] = {s->b.name};

    return rlk_fam_eval_int(s->b.c, script, 1, keys, 0, NULL, NULL, out);
}

int rlk_semaphore_drain(rlk_semaphore *s, long long *drained)
{
    long long n = 0;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_sem_call1(s, "semaphore/drain", &n);
    if (rc == RLK_OK && drained)
        *drained = n;
    return rc;
}

int rlk_semaphore_available(rlk_semaphore *s, long long *count)
{
    if (!s || !count)
        return RLK_ERR_ARG;
    return rlk_sem_call1(s, "semaphore/available", count);
}

/* ---------------------------------------------------------------- time to live */

/* On the name */
int rlk_semaphore_expire(rlk_semaphore *s, long long ttl_ms, int *set)
{
    return rlk_expiry_set(s ? &s->b : NULL, "semaphore/expire", NULL, 0, ttl_ms, set);
}

int rlk_semaphore_clear_expire(rlk_semaphore *s, int *cleared)
{
    return rlk_expiry_clear(s ? &s->b : NULL, "semaphore/clear_expire", NULL, cleared);
}

int rlk_semaphore_ttl(rlk_semaphore *s, long long *ttl_ms)
{
    return rlk_expiry_ttl(s ? &s->b : NULL, "semaphore/ttl", ttl_ms);
}
