/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_lock.c - rlk_async_lock / _unlock / _force_unlock (rlk_async.h) through
 * the engine (engine.h). The reentrant lock runs the blocking API's scripts
 * and protocol (kinds/lock.c, docs/runtime.md): reentrant/acquire with a
 * ticket in the server's queue, grants on this client's wake channel
 * redisson_lock__channel:{name}:rlk:<cid>, the lock's own channel while the
 * waiter is first in the queue ({wait, 1}) or behind a reservation (-3),
 * waits bounded by the TTL a failed attempt returns and a keepalive,
 * reentrant/cancel when a queued waiter gives up, the watchdog for
 * lease-less holds. A lost reply is settled by reading the holder's field
 * back after the engine has fenced the connection it went out on.
 * The read-write lock's writers wait the same way (rwlock/write_acquire with
 * a ticket, grants on redisson_rwlock:{name}:rlk:<cid>, rwlock/cancel), in
 * the same server queue as the blocking API's writers; its readers on the
 * lock's channel and their attempts' bounds.
 * docs/async-internals.md describes it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/scripts.h"
#include "kinds/fairlock.h"
#include "kinds/fenced.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "kinds/rwlock.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "async/engine.h"
#include "async/ae_wd.h"
#include "async/a_common.h"
#include "async/a_lock.h"

#define ALK_KEEPALIVE_MS 1000       /* a queued waiter attempts at least this often */
#define ALK_RETRY_MS 20             /* after a call that never went out */
#define ALK_RECHECK_MS (RLK_FAM_CLAIM_MS + 5)

/* ---------------------------------------------------------------- the table of holds */

/* One hold of this client: (kind, name, owner) and its count. */
typedef struct alk_hold {
    struct alk_hold *next;
    int kind;
    char *name;
    char *owner;
    long long count;
    long long lease_ms;             /* the lease of the last acquisition */
    rlk_ae_hold *wd;                /* the watchdog's, lease-less holds; else NULL */
    long long acquired_ns;          /* the count went from 0 to 1 (the hold metric) */
} alk_hold;

#define ALK_BUCKETS 4096

typedef struct alk_table {
    alk_hold *b[ALK_BUCKETS];
} alk_table;

static void *alk_table_make(void)
{
    return calloc(1, sizeof(alk_table));
}

static void alk_table_destroy(void *p)
{
    alk_table *t = p;

    for (size_t i = 0; i < ALK_BUCKETS; i++) {
        alk_hold *h = t->b[i], *next;

        for (; h; h = next) {
            next = h->next;
            free(h->name);
            free(h->owner);
            free(h);
        }
    }
    free(t);
}

static size_t alk_hash(int kind, const char *name, const char *owner)
{
    size_t h = 1469598103934665603ULL ^ (size_t)kind;

    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ULL;
    for (; *owner; owner++)
        h = (h ^ (unsigned char)*owner) * 1099511628211ULL;
    return h & (ALK_BUCKETS - 1);
}

static alk_table *alk_tab(rlk_async *ac)
{
    return rlk_ae_kind_data(ac, RLK_AE_SLOT_LOCK, alk_table_make, alk_table_destroy);
}

static alk_hold *alk_find(rlk_async *ac, int kind, const char *name, const char *owner)
{
    alk_table *t = alk_tab(ac);

    if (!t)
        return NULL;
    for (alk_hold *h = t->b[alk_hash(kind, name, owner)]; h; h = h->next)
        if (h->kind == kind && strcmp(h->name, name) == 0 && strcmp(h->owner, owner) == 0)
            return h;
    return NULL;
}

static alk_hold *alk_get(rlk_async *ac, int kind, const char *name, const char *owner)
{
    alk_table *t = alk_tab(ac);
    alk_hold *h = alk_find(ac, kind, name, owner);
    size_t i;

    if (h || !t)
        return h;
    if (!(h = calloc(1, sizeof *h)) || !(h->name = strdup(name)) || !(h->owner = strdup(owner))) {
        if (h)
            free(h->name);
        free(h);
        return NULL;
    }
    h->kind = kind;
    i = alk_hash(kind, name, owner);
    h->next = t->b[i];
    t->b[i] = h;
    return h;
}

/* Drops h from the table (and from the watchdog). */
static void alk_drop(rlk_async *ac, alk_hold *h)
{
    alk_table *t = alk_tab(ac);
    alk_hold **p;

    if (!h || !t)
        return;
    for (p = &t->b[alk_hash(h->kind, h->name, h->owner)]; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            break;
        }
    rlk_ae_wd_del(h->wd);
    if (h->count > 0)
        rlk_metrics_hold(rlk_ae_counters(ac), h->name, h->acquired_ns);
    free(h->name);
    free(h->owner);
    free(h);
}

/* The watchdog found h's lock gone: forget it (never re-created). */
static void alk_hold_lost(rlk_async *ac, rlk_ae_hold *wd, void *arg)
{
    alk_hold *h = arg;

    (void)wd;
    h->wd = NULL;   /* the engine frees its own */
    alk_drop(ac, h);
}

long long rlk_a_lock_count(rlk_async *ac, int kind, const char *name, unsigned long long task)
{
    char owner[RLK_OWNER_MAX + 1];
    alk_hold *h;

    if (!ac || !name)
        return 0;
    rlk_ae_owner(ac, task, owner, sizeof owner);
    h = alk_find(ac, kind, name, owner);
    return h ? h->count : 0;
}

/* ---------------------------------------------------------------- a request */

enum { ALK_LOCK, ALK_UNLOCK, ALK_FORCE };
enum { CW_NONE, CW_ATTEMPT, CW_READ_ACQ, CW_CANCEL, CW_UNDO, CW_RELEASE, CW_READ_REL, CW_FORCE };

typedef struct alk {
    rlk_async *ac;
    rlk_async_req *r;
    int op;                         /* ALK_* */
    int kind;
    unsigned long long task;
    char *name, *waiters, *grant, *channel, *wake;
    char *token_key;                /* fenced: redisson_lock_token:{name}; else NULL */
    char *prefix;                   /* read-write: {name}, the timeout keys' prefix; else NULL */
    char *queue, *timeouts;         /* fair: redisson_lock_queue:{name}, redisson_lock_timeout:{name} */
    char *own;                      /* fair: the waiter's channel <channel>:<owner> */
    char *field;                    /* the hash field of the hold: owner, or owner:write */
    long long token;                /* fenced: the token of the acquisition */
    char *owner;                    /* <uuid>:<task> */
    long long lease_ms;
    int watchdog;
    long long wait_ms;
    long long start;                /* monotonic ms */
    long long sent;                 /* monotonic ms: the last attempt was made (its lease's start) */
    long long ticket;               /* 0: no place in the queue (single try, or not yet) */
    int queued;                     /* an attempt with the ticket may have queued it */
    int wide;                       /* listens on the lock's channel too */
    int waiter;                     /* waits (wait_ms != 0, not a re-entry) */
    rlk_ae_call *call;
    int cw;                         /* what the call in flight is: CW_* */
    long long known;                /* the hold count before the call (settling) */
    rlk_ae_timer *retry, *deadline;
    rlk_ae_sub *s_wake, *s_wide;
    int again;                      /* woken while a call was in flight */
    int ending;                     /* RLK_ERR_BUSY / RLK_ERR_CANCELLED: end at the next chance */
    int end_err;                    /* the error to complete with once the cancel is back */
    char *end_msg;                  /* the message to end with (heap, set when ending; NULL before) */
    int end_msg_oom;                /* setting it ran out of memory */
    long long first_try;            /* monotonic ms of the first try of a call (retries) */
} alk;

/* The message to end with is kept on the heap, set only when a request ends
 * (a pending request does not carry room for it). */
static void alk_set_msg(alk *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void alk_set_msg(alk *a, const char *fmt, ...)
{
    va_list ap;
    char buf[512];

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(a->end_msg);
    a->end_msg = strdup(buf);
    a->end_msg_oom = a->end_msg == NULL;
}

static const char *alk_msg_str(const alk *a)
{
    return a->end_msg ? a->end_msg : a->end_msg_oom ? "out of memory" : "";
}

static void alk_attempt(alk *a);
static void alk_poke(alk *a);
static void alk_release(alk *a, int cw);

/* Stops listening and timing (the request is ending). */
static void alk_quiet(alk *a)
{
    rlk_a_common_quiet(&a->retry, &a->deadline, &a->s_wake);
    rlk_ae_unsubscribe(a->s_wide);
    a->s_wide = NULL;
}

static void alk_free_state(rlk_async_req *r, void *state)
{
    alk *a = state;

    (void)r;
    alk_quiet(a);
    rlk_ae_call_forget(a->call);
    free(a->end_msg);
    free(a->name);
    free(a->waiters);
    free(a->grant);
    free(a->channel);
    free(a->wake);
    free(a->token_key);
    free(a->prefix);
    free(a->queue);
    free(a->timeouts);
    free(a->own);
    free(a->owner);
    free(a->field);
}

static long long alk_elapsed(const alk *a)
{
    return rlk_ae_now_ms() - a->start;
}

/* How long a request keeps trying to get an answer through lost replies and
 * reconnects: its wait, then two command timeouts and a connect. */
static long long alk_budget(const alk *a)
{
    return rlk_a_common_budget(a->ac, a->op == ALK_LOCK ? a->wait_ms : 0);
}

static void alk_cancel_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                             int lost, void *arg)
{
    alk *a = arg;

    (void)ac;
    (void)rc;
    (void)reply;
    (void)errstr;
    (void)lost;
    a->call = NULL;
    a->cw = CW_NONE;
    /* Best effort, as the blocking API: a waiter that cannot say so is skipped
     * when its reservation's claim window runs out. */
    rlk_ae_complete(a->r, a->end_err, 0, NULL, "%s", alk_msg_str(a));
}

/* Ends a lock request with err (no hold): leaves the server's queue first
 * when the waiter may be in it. */
static void alk_end(alk *a, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void alk_end(alk *a, int err, const char *fmt, ...)
{
    va_list ap;

    alk_quiet(a);
    char buf[512];

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    alk_set_msg(a, "%s", buf);
    a->end_err = err;
    if (a->queued && a->kind == RLK_KIND_FAIR && !rlk_ae_closing(a->ac)) {
        const char *keys[4] = {a->name, a->queue, a->timeouts, a->channel};
        const char *args[2] = {a->owner, rlk_ae_publish_arg(a->ac)};

        a->call = rlk_ae_script(a->ac, "fair/cancel", 4, keys, 2, args, alk_cancel_reply, a);
        if (a->call) {
            a->cw = CW_CANCEL;
            return;
        }
    }
    if (a->queued && a->ticket && !rlk_ae_closing(a->ac)) {
        char ticket[24];
        const char *keys[4] = {a->name, a->channel, a->waiters, a->grant};
        const char *args[3] = {ticket, RLK_FAM_CLAIM_MS_STR, rlk_ae_publish_arg(a->ac)};

        snprintf(ticket, sizeof ticket, "%lld", a->ticket);
        a->call = rlk_ae_script(a->ac, a->kind == RLK_KIND_WRITE ? "rwlock/cancel"
                                : "reentrant/cancel", 4, keys, 3, args, alk_cancel_reply, a);
        if (a->call) {
            a->cw = CW_CANCEL;
            return;
        }
    }
    rlk_ae_complete(a->r, err, 0, NULL, "%s", alk_msg_str(a));
}

static void alk_end_busy(alk *a)
{
    if (a->ending == RLK_ERR_CANCELLED)
        alk_end(a, RLK_ERR_CANCELLED, "cancelled");
    else
        alk_end(a, RLK_ERR_BUSY, "lock %s: held by another holder after %lld ms", a->name,
                alk_elapsed(a));
}

/* The kind's watchdog task (the blocking kinds' own) and its KEYS after k[0], the name. */
static const rlk_renew_task *alk_renew_task(const alk *a, const char **k)
{
    switch (a->kind) {
    case RLK_KIND_READ:
        k[1] = a->prefix;
        return &rlk_rwlock_renew_readers;
    case RLK_KIND_WRITE:
        return &rlk_rwlock_renew_writer;
    case RLK_KIND_FAIR:
        k[1] = a->queue;
        k[2] = a->timeouts;
        return &rlk_fairlock_renew_task;
    case RLK_KIND_FENCED:
        k[1] = a->token_key;
        return &rlk_fenced_renew_task;
    default:
        return &rlk_lock_renew_task;
    }
}

/* The lock is this task's now. */
static void alk_acquired(alk *a)
{
    rlk_client *c = rlk_ae_client(a->ac);
    alk_hold *h = alk_get(a->ac, a->kind, a->name, a->owner);

    a->queued = 0;
    alk_quiet(a);
    if (!h) {
        /* No room to remember it: give it back rather than hold it blind. */
        a->ending = RLK_ERR_NOMEM;
        alk_set_msg(a, "lock %s: out of memory", a->name);
        alk_release(a, CW_UNDO);
        return;
    }
    if (h->count++ == 0)
        h->acquired_ns = rlk_clock_now_ns();
    h->lease_ms = a->lease_ms;
    if (a->watchdog && h->wd) {
        rlk_ae_wd_acquired(h->wd, a->sent);     /* the re-entry set the lease again */
    } else if (a->watchdog) {
        const char *k[RLK_HOLD_KEYS_MAX] = {a->name};
        const rlk_renew_task *task = alk_renew_task(a, k);

        h->wd = rlk_ae_wd_add(a->ac, a->kind, task, a->name, k[2] ? 3 : k[1] ? 2 : 1, k, a->owner,
                              a->sent, alk_hold_lost, h);
    }
    (void)c;
    if (a->ending == RLK_ERR_CANCELLED || a->ending == RLK_ERR_UNSETTLED) {
        /* Cancelled while the grant was on its way (or not reportable): never left held. */
        if (a->ending == RLK_ERR_CANCELLED)
            alk_set_msg(a, "cancelled");
        alk_release(a, CW_UNDO);
        return;
    }
    rlk_ae_complete(a->r, RLK_OK, a->kind == RLK_KIND_FENCED ? a->token : h->count, NULL, NULL);
}

/* The wait goes on: the next attempt when the TTL or the keepalive says. */
static void alk_retry_fire(rlk_async *ac, void *arg)
{
    alk *a = arg;

    (void)ac;
    a->retry = NULL;
    alk_poke(a);
}

static void alk_schedule(alk *a, long long ms)
{
    rlk_ae_timer_del(a->retry);
    a->retry = rlk_ae_timer_add(a->ac, ms > 0 ? ms : 0, alk_retry_fire, a);
}

/* A new ticket: cid * 1024 + r (the release finds the wake channel from it). */
static long long alk_new_ticket(rlk_async *ac)
{
    return rlk_names_wake_ticket(rlk_names_wake_cid(rlk_async_uuid(ac)));
}

static void alk_msg(rlk_async *ac, const char *channel, const char *msg, size_t len, void *arg);

/* Not acquired: ttl as reentrant/acquire said (-3: behind a reservation). */
static void alk_busy(alk *a, long long ttl, int first)
{
    if (a->kind == RLK_KIND_FAIR)
        a->queued = 1;      /* fair/acquire queues every caller it turns away */
    if (!a->waiter || a->ending) {
        alk_end_busy(a);
        return;
    }
    if (a->kind == RLK_KIND_FAIR) {
        /* Queued by the script: attempt again (keep-alive) before its deadline runs out. */
        long long cap = RLK_FAIR_THREAD_WAIT_MS / 3;

        a->queued = 1;
        if (a->again) {
            a->again = 0;
            alk_schedule(a, 0);
        } else
            alk_schedule(a, ttl >= 0 && ttl < cap ? ttl : cap);
        return;
    }
    if (a->kind != RLK_KIND_LOCK && a->kind != RLK_KIND_WRITE) {
        /* No queue: the lock's channel (subscribed from the start) and the TTL. */
        if (a->again) {
            a->again = 0;
            alk_schedule(a, 0);
        } else
            alk_schedule(a, ttl >= 0 && ttl < ALK_KEEPALIVE_MS ? ttl : ALK_KEEPALIVE_MS);
        return;
    }
    if (a->ticket)
        a->queued = 1;
    /* First in the queue (or behind a reservation): the lock's channel too. */
    if ((first || ttl == -3) && !a->s_wide)
        a->s_wide = rlk_ae_subscribe(a->ac, a->channel, alk_msg, a);
    else if (!first && ttl != -3 && a->s_wide) {
        rlk_ae_unsubscribe(a->s_wide);
        a->s_wide = NULL;
    }
    if (!a->ticket) {
        /* The fast try failed: take a ticket, attempt with it once subscribed. */
        a->ticket = alk_new_ticket(a->ac);
        if (rlk_ae_sub_ready(a->s_wake) || a->again) {
            a->again = 0;
            alk_poke(a);
        }
        return;
    }
    if (a->again) {
        a->again = 0;
        alk_schedule(a, 0);
        return;
    }
    if (ttl == -3)
        alk_schedule(a, ALK_RECHECK_MS);
    else
        alk_schedule(a, ttl >= 0 && ttl < ALK_KEEPALIVE_MS ? ttl : ALK_KEEPALIVE_MS);
}

static void alk_read_acq_reply(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                               int lost, void *arg);

/* The token of an adopted fenced acquisition. */
static void alk_token_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                            int lost, void *arg)
{
    alk *a = arg;

    (void)ac;
    (void)lost;
    a->call = NULL;
    a->cw = CW_NONE;
    if (rc != RLK_OK) {
        /* Held, token unknown: given back rather than reported without its token. */
        a->ending = RLK_ERR_UNSETTLED;
        alk_set_msg(a, "lock %s: acquired, but its token could not be "
                 "read after a lost reply (given back): %s", a->name, errstr);
        alk_acquired(a);
        return;
    }
    a->token = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
    alk_acquired(a);
}

/* Reads the holder's field back after a lost reply (the engine fenced the
 * connection it went out on first). */
static void alk_read_back(alk *a, int cw)
{
    const char *argv[3] = {"HGET", a->name, a->field};

    a->call = rlk_ae_command(a->ac, 3, argv, alk_read_acq_reply, a);
    a->cw = a->call ? cw : CW_NONE;
    if (!a->call && !rlk_ae_req_done(a->r))
        rlk_ae_complete(a->r, rlk_ae_closing(a->ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, 0, NULL,
                        "lock %s: could not read back a lost reply", a->name);
}

static long long alk_known(alk *a)
{
    alk_hold *h = alk_find(a->ac, a->kind, a->name, a->owner);

    return h ? h->count : 0;
}

static void alk_acquire_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                              int lost, void *arg)
{
    alk *a = arg;

    (void)ac;
    a->call = NULL;
    a->cw = CW_NONE;
    if (rc == RLK_ERR_CLOSED) {
        rlk_ae_complete(a->r, rc, 0, NULL, "%s", errstr);
        return;
    }
    if (rc == RLK_ERR_IO && lost) {
        alk_read_back(a, CW_READ_ACQ);      /* it may have run: find out */
        return;
    }
    if (rc == RLK_ERR_IO) {
        /* Never written: try again within the wait (a single try: once more in a while). */
        if (a->ending || alk_elapsed(a) > alk_budget(a)) {
            alk_end(a, RLK_ERR_IO, "%s", errstr);
            return;
        }
        alk_schedule(a, ALK_RETRY_MS);
        return;
    }
    if (rc != RLK_OK) {
        if (errstr && (strncmp(errstr, "RLK_UPGRADE", 11) == 0 || strstr(errstr, " RLK_UPGRADE")))
            rc = RLK_ERR_UPGRADE;
        alk_end(a, rc, "%s", errstr);
        return;
    }
    if (a->kind == RLK_KIND_FENCED) {
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 1 &&
            r->element[0]->type == REDIS_REPLY_INTEGER) {
            a->token = r->element[0]->integer;
            alk_acquired(a);
        } else if (r->type == REDIS_REPLY_INTEGER)
            alk_busy(a, r->integer, 0);
        else
            alk_end(a, RLK_ERR_PROTOCOL, "lock %s: fenced/acquire replied an unexpected shape",
                    a->name);
        return;
    }
    if (r->type == REDIS_REPLY_NIL) {
        alk_acquired(a);
        return;
    }
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[0]->type == REDIS_REPLY_INTEGER && r->element[1]->type == REDIS_REPLY_INTEGER &&
        (r->element[1]->integer == 1 || r->element[1]->integer == 0)) {
        /* {wait, 1}: first in the queue; a reader's {grant PTTL, 0}: the free lock is reserved
         * for a writer, wait out its claim window (readers have no queue: alk_busy) */
        alk_busy(a, r->element[0]->integer, r->element[1]->integer == 1);
        return;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        alk_busy(a, r->integer, 0);
        return;
    }
    alk_end(a, RLK_ERR_PROTOCOL, "lock %s: reentrant/acquire replied an unexpected shape",
            a->name);
}

static void alk_read_acq_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                               int lost, void *arg)
{
    alk *a = arg;
    long long n = 0;

    (void)ac;
    (void)lost;
    a->call = NULL;
    if (rc == RLK_ERR_CLOSED) {
        a->cw = CW_NONE;
        rlk_ae_complete(a->r, rc, 0, NULL, "%s", errstr);
        return;
    }
    if (rc != RLK_OK) {
        /* Not settled yet: read again while the budget lasts. */
        if (alk_elapsed(a) > alk_budget(a)) {
            int cw = a->cw;

            a->cw = CW_NONE;
            alk_quiet(a);
            rlk_ae_complete(a->r, RLK_ERR_UNSETTLED, 0, NULL,
                            "lock %s: a reply was lost and whether the %s ran could not be "
                            "found out: %s", a->name, cw == CW_READ_ACQ ? "acquire" : "release",
                            errstr);
            return;
        }
        alk_read_back(a, a->cw);
        return;
    }
    if (r->type == REDIS_REPLY_STRING)
        n = strtoll(r->str, NULL, 10);
    if (a->cw == CW_READ_ACQ) {
        a->cw = CW_NONE;
        if (n > a->known && a->kind == RLK_KIND_FENCED) {
            const char *argv[2] = {"GET", a->token_key};

            /* It ran: the token key holds its token (held by us since: none issued after). */
            a->call = rlk_ae_command(a->ac, 2, argv, alk_token_reply, a);
            a->cw = a->call ? CW_READ_ACQ : CW_NONE;
            if (!a->call)
                rlk_ae_complete(a->r, RLK_ERR_NOMEM, 0, NULL, "lock %s: out of memory", a->name);
            return;
        }
        if (n > a->known) {
            alk_acquired(a);        /* it ran: adopt the hold */
            return;
        }
        if (a->ticket || a->kind == RLK_KIND_FAIR)
            a->queued = 1;          /* it may have queued the caller */
        /* It did not run: not an answer yet (a single try too): attempt again. */
        if (a->ending || alk_elapsed(a) > alk_budget(a))
            alk_end_busy(a);
        else
            alk_schedule(a, 0);
        return;
    }
    /* CW_READ_REL: did the release run? */
    a->cw = CW_NONE;
    if (n < a->known) {
        alk_hold *h = alk_find(a->ac, a->kind, a->name, a->owner);

        if (h && n > 0)
            h->count = n;
        else if (h)
            alk_drop(a->ac, h);
        if (a->op == ALK_UNLOCK)
            rlk_ae_complete(a->r, RLK_OK, n, NULL, NULL);
        else
            rlk_ae_complete(a->r, a->ending ? a->ending : RLK_ERR_CANCELLED, 0, NULL, "%s",
                            alk_msg_str(a));
        return;
    }
    alk_release(a, a->op == ALK_UNLOCK ? CW_RELEASE : CW_UNDO);   /* it did not run */
}

/* One attempt: reentrant/acquire with the ticket (queued: -ticket). */
static void alk_attempt(alk *a)
{
    char lease[24], ticket[24];
    const char *keys[3] = {a->name, a->waiters, a->grant};
    const char *args[3] = {lease, a->owner, ticket};

    rlk_ae_timer_del(a->retry);
    a->retry = NULL;
    snprintf(lease, sizeof lease, "%lld", a->lease_ms);
    snprintf(ticket, sizeof ticket, "%lld", a->queued ? -a->ticket : a->ticket);
    a->known = alk_known(a);
    a->sent = rlk_ae_now_ms();
    if (a->kind == RLK_KIND_FENCED) {
        const char *fkeys[2] = {a->name, a->token_key};

        a->call = rlk_ae_script(a->ac, "fenced/acquire", 2, fkeys, 2, args, alk_acquire_reply, a);
    } else if (a->kind == RLK_KIND_FAIR) {
        const char *fkeys[3] = {a->name, a->queue, a->timeouts};
        char tw[24];
        const char *fargs[3] = {lease, a->owner, tw};

        snprintf(tw, sizeof tw, "%lld", RLK_FAIR_THREAD_WAIT_MS);
        a->call = rlk_ae_script(a->ac, "fair/acquire", 3, fkeys, 3, fargs, alk_acquire_reply, a);
    } else if (a->kind == RLK_KIND_READ) {
        const char *rkeys[3] = {a->name, a->prefix, a->grant};

        a->call = rlk_ae_script(a->ac, "rwlock/read_acquire", 3, rkeys, 2, args, alk_acquire_reply,
                                a);
    } else if (a->kind == RLK_KIND_WRITE) {
        a->call = rlk_ae_script(a->ac, "rwlock/write_acquire", 3, keys, 3, args, alk_acquire_reply,
                                a);
    } else
        a->call = rlk_ae_script(a->ac, "reentrant/acquire", 3, keys, 3, args, alk_acquire_reply, a);
    if (a->call)
        a->cw = CW_ATTEMPT;
    else
        alk_end(a, rlk_ae_closing(a->ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, "lock %s: %s",
                a->name, rlk_ae_closing(a->ac) ? "client freed" : "out of memory");
}

/* Something says the lock may be free: attempt now (or after the call in flight). */
static void alk_poke(alk *a)
{
    if (a->cw == CW_CANCEL || a->cw == CW_UNDO || !rlk_a_common_wake(a->r, a->call, &a->again))
        return;
    if (a->ticket && !rlk_ae_sub_ready(a->s_wake))
        return;     /* its subscription's confirmation pokes it */
    alk_attempt(a);
}

/* A message on the wake channel (a grant, t * 2^26) or the lock's channel;
 * msg NULL: subscribed (again): attempt, a grant may have been missed. */
static void alk_msg(rlk_async *ac, const char *channel, const char *msg, size_t len, void *arg)
{
    alk *a = arg;

    (void)ac;
    if (rlk_ae_req_done(a->r))
        return;
    if (msg && a->wake && strcmp(channel, a->wake) == 0 &&
        !rlk_sub_grants(&rlk_lock_sub_rule, msg, len, a->ticket))
        return;     /* another waiter's grant */
    alk_poke(a);
}

static void alk_deadline_fire(rlk_async *ac, void *arg)
{
    alk *a = arg;

    (void)ac;
    a->deadline = NULL;
    if (a->call) {
        a->ending = RLK_ERR_BUSY;   /* the call in flight decides */
        return;
    }
    alk_end(a, RLK_ERR_BUSY, "lock %s: held by another holder after %lld ms", a->name,
            alk_elapsed(a));
}

static void alk_cancel_hook(rlk_async_req *r, void *state)
{
    alk *a = state;

    (void)r;
    if (a->op != ALK_LOCK)
        return;     /* an unlock is on its way: its result stands */
    a->ending = RLK_ERR_CANCELLED;
    if (a->call)
        return;     /* the call in flight decides (a grant is given back) */
    alk_end(a, RLK_ERR_CANCELLED, "cancelled");
}

/* ---------------------------------------------------------------- unlock */

static void alk_release_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                              int lost, void *arg)
{
    alk *a = arg;
    int cw = a->cw;
    alk_hold *h;

    (void)ac;
    a->call = NULL;
    a->cw = CW_NONE;
    if (rc == RLK_ERR_CLOSED) {
        rlk_ae_complete(a->r, rc, 0, NULL, "%s", errstr);
        return;
    }
    if (rc == RLK_ERR_IO && lost) {
        a->cw = cw == CW_UNDO ? CW_UNDO : CW_RELEASE;
        {
            const char *argv[3] = {"HGET", a->name, a->field};

            a->call = rlk_ae_command(a->ac, 3, argv, alk_read_acq_reply, a);
            a->cw = a->call ? CW_READ_REL : CW_NONE;
            if (!a->call)
                rlk_ae_complete(a->r, RLK_ERR_UNSETTLED, 0, NULL,
                                "lock %s: the release's reply was lost", a->name);
        }
        return;
    }
    if (rc == RLK_ERR_IO) {
        if (alk_elapsed(a) > alk_budget(a)) {
            rlk_ae_complete(a->r, rc, 0, NULL, "%s", errstr);
            return;
        }
        alk_release(a, cw);     /* never written: once more */
        return;
    }
    h = alk_find(a->ac, a->kind, a->name, a->owner);
    if (rc != RLK_OK) {
        rlk_ae_complete(a->r, rc, 0, NULL, "%s", errstr);
        return;
    }
    if (r->type == REDIS_REPLY_NIL) {
        if (h)
            alk_drop(a->ac, h);     /* not held any more (lost): forget it */
        if (cw == CW_UNDO)
            rlk_ae_complete(a->r, a->ending ? a->ending : RLK_ERR_CANCELLED, 0, NULL, "%s",
                            alk_msg_str(a));
        else
            rlk_ae_complete(a->r, RLK_ERR_NOT_OWNER, 0, NULL,
                            "lock %s: not held by task %llu", a->name, a->task);
        return;
    }
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 0 && h && h->count > 1) {
        h->count--;
    } else if (h) {
        alk_drop(a->ac, h);
        h = NULL;
    }
    if (cw == CW_UNDO)
        rlk_ae_complete(a->r, a->ending ? a->ending : RLK_ERR_CANCELLED, 0, NULL, "%s",
                        alk_msg_str(a));
    else
        rlk_ae_complete(a->r, RLK_OK, h ? h->count : (r->type == REDIS_REPLY_INTEGER &&
                                                       r->integer == 0 ? 1 : 0), NULL, NULL);
}

/* reentrant/release once (an unlock, or the undo of a cancelled grant). */
static void alk_release(alk *a, int cw)
{
    rlk_client *c = rlk_ae_client(a->ac);
    alk_hold *h = alk_find(a->ac, a->kind, a->name, a->owner);
    char lease[24];
    const char *keys[4] = {a->name, a->channel, a->waiters, a->grant};
    const char *args[4] = {a->owner, lease, RLK_FAM_CLAIM_MS_STR, rlk_ae_publish_arg(a->ac)};

    snprintf(lease, sizeof lease, "%lld", h && h->lease_ms > 0 ? h->lease_ms : c->watchdog_lease_ms);
    a->known = h ? h->count : 1;
    if (a->kind == RLK_KIND_FENCED) {
        const char *fkeys[3] = {a->name, a->channel, a->token_key};
        const char *fargs[3] = {a->owner, lease, rlk_ae_publish_arg(a->ac)};

        a->call = rlk_ae_script(a->ac, "fenced/release", 3, fkeys, 3, fargs, alk_release_reply, a);
    } else if (a->kind == RLK_KIND_FAIR) {
        const char *fkeys[4] = {a->name, a->queue, a->timeouts, a->channel};
        const char *fargs[3] = {a->owner, lease, rlk_ae_publish_arg(a->ac)};

        a->call = rlk_ae_script(a->ac, "fair/release", 4, fkeys, 3, fargs, alk_release_reply, a);
    } else if (a->kind == RLK_KIND_READ || a->kind == RLK_KIND_WRITE) {
        const char *rkeys[5] = {a->name, a->channel, a->prefix, a->waiters, a->grant};
        const char *rargs[4] = {a->owner, lease, RLK_FAM_CLAIM_MS_STR, rlk_ae_publish_arg(a->ac)};

        if (a->kind == RLK_KIND_READ) {
            rargs[1] = rargs[2];    /* read_release: owner, claim window, publish */
            rargs[2] = rargs[3];
            a->call = rlk_ae_script(a->ac, "rwlock/read_release", 5, rkeys, 3, rargs,
                                    alk_release_reply, a);
        } else
            a->call = rlk_ae_script(a->ac, "rwlock/write_release", 5, rkeys, 4, rargs,
                                    alk_release_reply, a);
    } else
        a->call = rlk_ae_script(a->ac, "reentrant/release", 4, keys, 4, args, alk_release_reply, a);
    a->cw = a->call ? cw : CW_NONE;
    if (!a->call)
        rlk_ae_complete(a->r, rlk_ae_closing(a->ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM, 0, NULL,
                        "lock %s: %s", a->name, rlk_ae_closing(a->ac) ? "client freed"
                                                                     : "out of memory");
}

/* ---------------------------------------------------------------- force unlock */

static void alk_force_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                            int lost, void *arg);

/* The kind's force-release script: reentrant/force_release (reentrant and
 * fenced: one hash and channel), rwlock/force_release in any mode. 0, or -1. */
static int alk_force_send(alk *a)
{
    const char *keys[5] = {a->name, a->channel, a->prefix, a->waiters, a->grant};
    const char *args[3] = {rlk_ae_publish_arg(a->ac), NULL, NULL};

    if (a->kind == RLK_KIND_FAIR) {
        const char *fkeys[4] = {a->name, a->queue, a->timeouts, a->channel};

        a->call = rlk_ae_script(a->ac, "fair/force_release", 4, fkeys, 1, args, alk_force_reply,
                                a);
    } else if (a->kind == RLK_KIND_READ || a->kind == RLK_KIND_WRITE) {
        args[0] = "any";
        args[1] = RLK_FAM_CLAIM_MS_STR;
        args[2] = rlk_ae_publish_arg(a->ac);
        a->call = rlk_ae_script(a->ac, "rwlock/force_release", 5, keys, 3, args, alk_force_reply, a);
    } else
        a->call = rlk_ae_script(a->ac, "reentrant/force_release", 2, keys, 1, args,
                                alk_force_reply, a);
    a->cw = a->call ? CW_FORCE : CW_NONE;
    return a->call ? 0 : -1;
}

static void alk_force_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                            int lost, void *arg)
{
    alk *a = arg;
    alk_table *t;

    a->call = NULL;
    a->cw = CW_NONE;
    if (rc == RLK_ERR_IO && alk_elapsed(a) < alk_budget(a)) {
        /* Lost or never written: deleting twice is harmless (value may then say 0). */
        (void)lost;
        if (alk_force_send(a) == 0)
            return;
    }
    if (rc != RLK_OK) {
        rlk_ae_complete(a->r, rc, 0, NULL, "%s", errstr);
        return;
    }
    /* This client's holds of the name are gone. */
    if ((t = alk_tab(ac)) != NULL)
        for (size_t i = 0; i < ALK_BUCKETS; i++) {
            alk_hold *h = t->b[i], *next;

            for (; h; h = next) {
                next = h->next;
                if ((h->kind == a->kind || ((a->kind == RLK_KIND_READ || a->kind == RLK_KIND_WRITE)
                                            && (h->kind == RLK_KIND_READ ||
                                                h->kind == RLK_KIND_WRITE))) &&
                    strcmp(h->name, a->name) == 0)
                    alk_drop(ac, h);
            }
        }
    rlk_ae_complete(a->r, RLK_OK, r->type == REDIS_REPLY_INTEGER ? r->integer : 0, NULL, NULL);
}

/* ---------------------------------------------------------------- the requests */

/* A request for (kind, name): checks what every request checks; NULL when
 * out of memory. On a bad argument the request is completed already. */
static alk *alk_new(rlk_async *ac, int op, int kind, const char *name, unsigned long long task,
                    rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r;
    alk *a;

    if (!ac || !(r = rlk_ae_req_new(ac, sizeof *a, fn, privdata)))
        return NULL;
    a = rlk_ae_req_state(r);
    a->ac = ac;
    a->r = r;
    a->op = op;
    a->kind = kind;
    a->task = task;
    a->start = rlk_ae_now_ms();
    if (rlk_a_common_begin(r, alk_cancel_hook, alk_free_state, "rlk_async lock", name))
        return a;
    if (kind < RLK_KIND_LOCK || kind > RLK_KIND_WRITE) {
        rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "rlk_async lock %s: unknown kind %d", name, kind);
        return a;
    }
    a->name = strdup(name);
    a->waiters = rlk_fam_suffix_name(name, RLK_NAMES_WAITERS);
    a->grant = rlk_fam_suffix_name(name, RLK_NAMES_GRANT);
    a->channel = rlk_fam_prefix_name(kind == RLK_KIND_READ || kind == RLK_KIND_WRITE
                                     ? RLK_NAMES_CH_RWLOCK : RLK_NAMES_CH_LOCK, name);
    if ((kind == RLK_KIND_READ || kind == RLK_KIND_WRITE) && !(a->prefix = rlk_fam_tag(name))) {
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async lock %s: out of memory", name);
        return a;
    }
    if (kind == RLK_KIND_FENCED && !(a->token_key = rlk_fam_prefix_name(RLK_NAMES_TOKEN, name))) {
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async lock %s: out of memory", name);
        return a;
    }
    if (a->channel)
        a->wake = rlk_names_wake_channel(a->channel, rlk_names_wake_cid(rlk_async_uuid(ac)));
    if (!a->name || !a->waiters || !a->grant || !a->channel || !a->wake) {
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async lock %s: out of memory", name);
        return a;
    }
    {
        char owner[RLK_OWNER_MAX + 1];

        rlk_ae_owner(ac, task, owner, sizeof owner);
        a->owner = strdup(owner);
        a->field = malloc(strlen(owner) + 8);
        if (!a->owner || !a->field) {
            rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async lock %s: out of memory", name);
            return a;
        }
    }
    if (kind == RLK_KIND_FAIR) {
        a->queue = rlk_fam_prefix_name(RLK_NAMES_QUEUE, name);
        a->timeouts = rlk_fam_prefix_name(RLK_NAMES_TIMEOUTS, name);
        a->own = rlk_names_waiter_channel(name, a->owner, strlen(a->owner));
        if (!a->queue || !a->timeouts || !a->own) {
            rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "rlk_async lock %s: out of memory", name);
            return a;
        }
    }
    sprintf(a->field, "%s%s", a->owner, kind == RLK_KIND_WRITE ? ":write" : "");
    return a;
}

rlk_async_req *rlk_async_lock(rlk_async *ac, int kind, const char *name, unsigned long long task,
                              long long wait_ms, long long lease_ms, rlk_async_fn fn,
                              void *privdata)
{
    alk *a = alk_new(ac, ALK_LOCK, kind, name, task, fn, privdata);
    rlk_client *c;

    if (!a || rlk_ae_req_done(a->r))
        return a ? a->r : NULL;
    rlk_ae_req_metric(a->r, kind, name);
    c = rlk_ae_client(ac);
    if (rlk_a_common_lock_args(a->r, "rlk_async_lock", name, wait_ms, lease_ms))
        return a->r;
    a->watchdog = lease_ms == -1;
    a->lease_ms = a->watchdog ? c->watchdog_lease_ms : lease_ms;
    a->wait_ms = wait_ms;
    /* A single try, or a re-entry: never queued (kinds/lock.c does the same). */
    a->waiter = wait_ms != 0 && !alk_find(ac, kind, name, a->owner);
    if (a->waiter) {
        /* The reentrant lock and the read-write lock's writers: the client's wake channel
         * (grants); the others: the waiter's own channel (fair) or the lock's. */
        int queues = kind == RLK_KIND_LOCK || kind == RLK_KIND_WRITE;
        const char *ch = kind == RLK_KIND_FAIR ? a->own : !queues ? a->channel : a->wake;

        if (rlk_a_common_listen(ac, ch, wait_ms, alk_msg, alk_deadline_fire, a,
                                queues ? &a->s_wake : &a->s_wide, &a->deadline)) {
            rlk_ae_complete(a->r, RLK_ERR_NOMEM, 0, NULL, "rlk_async_lock %s: out of memory", name);
            return a->r;
        }
    }
    alk_attempt(a);     /* the first try, without a ticket: the uncontended path */
    return a->r;
}

rlk_async_req *rlk_async_unlock(rlk_async *ac, int kind, const char *name, unsigned long long task,
                                rlk_async_fn fn, void *privdata)
{
    alk *a = alk_new(ac, ALK_UNLOCK, kind, name, task, fn, privdata);

    if (!a || rlk_ae_req_done(a->r))
        return a ? a->r : NULL;
    alk_release(a, CW_RELEASE);
    return a->r;
}

rlk_async_req *rlk_async_force_unlock(rlk_async *ac, int kind, const char *name,
                                      rlk_async_fn fn, void *privdata)
{
    alk *a = alk_new(ac, ALK_FORCE, kind, name, 0, fn, privdata);

    if (!a || rlk_ae_req_done(a->r))
        return a ? a->r : NULL;
    if (alk_force_send(a) != 0)
        rlk_ae_complete(a->r, RLK_ERR_NOMEM, 0, NULL, "rlk_async_force_unlock %s: out of memory",
                        name);
    return a->r;
}

/* ---------------------------------------------------------------- metrics */

int rlk_async_metrics_get(rlk_async *ac, rlk_metrics *out)
{
    alk_table *t;
    int rc;

    if (!ac || !out)
        return RLK_ERR_ARG;
    rc = rlk_metrics_get(rlk_ae_client(ac), out);
    if (rc != RLK_OK)
        return rc;
    /* The gauges: this client's table of holds (the inner client's registry is unused). */
    out->locks_held = out->watchdog_entries = 0;
    if ((t = alk_tab(ac)) != NULL)
        for (size_t i = 0; i < ALK_BUCKETS; i++)
            for (alk_hold *h = t->b[i]; h; h = h->next) {
                out->locks_held++;
                out->watchdog_entries += h->wd != NULL;
            }
    return RLK_OK;
}

int rlk_async_metrics_watch(rlk_async *ac, const char *name)
{
    return ac ? rlk_metrics_watch(rlk_ae_client(ac), name) : RLK_ERR_ARG;
}

int rlk_async_metrics_set_enabled(rlk_async *ac, int on)
{
    return ac ? rlk_metrics_set_enabled(rlk_ae_client(ac), on) : RLK_ERR_ARG;
}
