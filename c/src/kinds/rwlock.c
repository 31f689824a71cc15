/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rwlock.c - the read-write lock API (rlk_rwlock_*): Redisson's
 * RReadWriteLock on rwlock/{read,write}_{acquire,release}, force_release,
 * renew_readers and renew_writer (docs/locks/rwlock.md).
 *
 * Waiting readers join the lock's channel (redisson_rwlock:{name}) on their
 * client's subscriber, attempt, and sleep until a message or the bound the
 * failed attempt returned (the writer's TTL, or a writer's reservation's),
 * as Redisson does: message 0 (the last read left) is one permit per
 * process; message 1 (a write left: released or downgraded) wakes every
 * waiter, so all the readers blocked by the writer retry at once. Readers
 * have no local queue: they must be able to enter together.
 *
 * Waiting writers wait as the reentrant lock's waiters do (kinds/lock.c,
 * docs/runtime.md "Handoff across processes"): a process-wide local queue of
 * the lock's writers (keyed by the lock's channel, so apart from a reentrant
 * lock of the same name), whose head holds a ticket in the server's queue
 * {name}:rlk_waiters; a release that frees the lock reserves it for the
 * first ticket and grants it on the client's wake channel
 * redisson_rwlock:{name}:rlk:<cid>; only the first writer in the queue also
 * listens on the lock's channel (docs/locks/rwlock.md, "Waiting writers").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/random.h"
#include "client/topo.h"
#include "kinds/lock.h"
#include "kinds/rwlock.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/lq.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "runtime/wait.h"
#include "runtime/wd.h"

struct rlk_rwlock {
    rlk_fam_base b;             /* channel: redisson_rwlock:{name}; keys: the prefix {name} (of
                                   the timeout keys), {name}:rlk_waiters (the server's queue of
                                   writers' tickets), {name}:rlk_next (the ticket a release
                                   reserved the lock for) */
    rlk_fam_id id;
    rlk_lq *q;                  /* the process's waiting writers of this lock */
    char *wake;                 /* redisson_rwlock:{name}:rlk:<cid>: this client's wake channel */
    long long cid;              /* 32768..65535, from the client's uuid (as kinds/lock.c) */
};

#define RLK_RW_KEEPALIVE_MS 1000    /* a queued writer attempts at least this often */

/* One call's view: who asks for which side, for how long; a writer's place
 * in the queue. */
typedef struct rlk_rw_acq {
    rlk_rwlock *rw;
    int side;
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
    rlk_sub_ticket ticket;      /* a writer's; ticket.ticket 0: none (a reader, a single try) */
    int queued;                 /* an attempt put the ticket in the queue */
    int wide;                   /* the last attempt said: first in the queue (or -3) */
    int reserved;               /* the last attempt said: reserved for a writer ({grant PTTL, 0}):
                                   its bound is the claim window, not a holder's TTL */
} rlk_rw_acq;

/* rlk_fam_kind.fini: what the handle holds beyond its base. */
static void rlk_rwlock_fini(void *handle)
{
    rlk_rwlock *rw = handle;

    rlk_fam_id_destroy(&rw->id);
    if (rw->q)
        rlk_lq_put(rw->q);
    free(rw->wake);
}

static const rlk_fam_kind rlk_rwlock_kind = {
    "rlk_rwlock_new", "lock", RLK_NAMES_CH_RWLOCK, rlk_fam_prefix_name, rlk_rwlock_fini
};

/* The watchdog's tasks for read-write locks (runtime/wd.h): the reads of
 * one lock, every owner of this client, in one rwlock/renew_readers call
 * (KEYS: name, timeout-key prefix; ARGV: lease, the owners), where a
 * refusal means not our lock; a write alone with rwlock/renew_writer. */
static int rlk_rw_renew_build(const rlk_renew_item *items, int m, const char *lease,
                              const char **keys, int *nkeys, const char **args, size_t *lens)
{
    (void)lens;
    for (int k = 0; k < items[0].nkeys; k++)
        keys[k] = items[0].keys[k];
    *nkeys = items[0].nkeys;
    args[0] = lease;
    for (int k = 0; k < m; k++)
        args[k + 1] = items[k].owner;
    return m + 1;
}

static int rlk_rw_renew_reply(int rc, const redisReply *r, int m, int *results)
{
    rlk_renew_spread(rc, r, m, results);
    for (int k = 0; rc == RLK_ERR_SCRIPT && k < m; k++)
        results[k] = 0;
    return 0;
}

const rlk_renew_task rlk_rwlock_renew_readers = {
    "rwlock/renew_readers", RLK_RENEW_NAME, rlk_rw_renew_build, rlk_rw_renew_reply, NULL
};

const rlk_renew_task rlk_rwlock_renew_writer = {
    "rwlock/renew_writer", RLK_RENEW_ALONE, rlk_renew_build_one, rlk_renew_reply_one, NULL
};

/* The read and write sides' rows (kinds/proto.h). */
const rlk_proto rlk_rwlock_read_row = {
    "lock", RLK_KIND_READ, "rwlock",
    "rwlock/read_acquire", "lease_ms owner",
    "rwlock/read_release", "owner claim_ms publish",
    NULL, NULL,
    "rwlock/force_release", "mode claim_ms publish",
    "channel", RLK_PROTO_WAIT_CHANNEL, 0, "", &rlk_rwlock_renew_readers, "lock prefix", 0, NULL,
    NULL, NULL};

const rlk_proto rlk_rwlock_write_row = {
    "lock", RLK_KIND_WRITE, "rwlock",
    "rwlock/write_acquire", "lease_ms owner ticket",
    "rwlock/write_release", "owner lease_ms claim_ms publish",
    "rwlock/cancel", "ticket claim_ms publish",
    "rwlock/force_release", "mode claim_ms publish",
    "channel", RLK_PROTO_WAIT_QUEUE, 0, ":write", &rlk_rwlock_renew_writer, "lock", 0, NULL,
    NULL, NULL};

static int rlk_rw_kind(int side)
{
    return side == RLK_RW_WRITE ? RLK_KIND_WRITE : RLK_KIND_READ;
}

/* The side in errors. */
static const char *rlk_rw_what(int side)
{
    return side == RLK_RW_WRITE ? "write lock" : "read lock";
}

static int rlk_rw_check_side(rlk_rwlock *rw, int side, int any_ok, const char *what)
{
    if (side == RLK_RW_READ || side == RLK_RW_WRITE || (any_ok && side == RLK_RW_ANY))
        return RLK_OK;
    return rlk_set_error(rw->b.c, RLK_ERR_ARG,
                         "%s %s: side %d is not RLK_RW_READ or RLK_RW_WRITE%s", what, rw->b.name,
                         side, any_ok ? " or RLK_RW_ANY" : "");
}

/* ---------------------------------------------------------------- handles */

rlk_rwlock *rlk_rwlock_new(rlk_client *c, const char *name)
{
    rlk_rwlock *rw = rlk_fam_new(c, name, sizeof *rw, &rlk_rwlock_kind);

    if (!rw)
        return NULL;
    rlk_fam_id_init(&rw->id);
    rw->q = rlk_lq_get(c->addr, c->url.db, rw->b.channel);
    rw->cid = rlk_names_wake_cid(rw->b.rt->uuid);
    rw->wake = rlk_names_wake_channel(rw->b.channel, rw->cid);
    return rlk_fam_made(rw, rw->q && rw->wake &&
                            rlk_handle_keys(&rw->b, "rwlock", "channel prefix waiters grant"));
}

void rlk_rwlock_free(rlk_rwlock *rw)
{
    rlk_fam_free(rw);
}

const char *rlk_rwlock_name(const rlk_rwlock *rw)
{
    return rw ? rw->b.name : NULL;
}

const char *rlk_rwlock_channel(const rlk_rwlock *rw)
{
    return rw ? rw->b.channel : NULL;
}

/* An id of a read-write lock's field: not "mode", no ":write" */
int rlk_rwlock_set_owner(rlk_rwlock *rw, const char *owner)
{
    return rw ? rlk_fam_id_set(rw->b.c, &rw->id, owner, 1, "rlk_rwlock_set_owner") : RLK_ERR_ARG;
}

int rlk_rwlock_owner(const rlk_rwlock *rw, char *buf, size_t len)
{
    return rw ? rlk_handle_owner(&rw->b, &rw->id, buf, len, "rlk_rwlock_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- one acquire attempt */

/* As kinds/lock.c: 1 when a release can tell whether a grant on this
 * client's wake channel reached it (not global pub/sub on a cluster). */
static int rlk_rw_wakes_alone(rlk_rwlock *rw)
{
    return rlk_client_counts_exact(rw->b.c);
}

/* A writer's ticket, as kinds/lock.c draws them: cid * 1024 + r (>= 2^25: the
 * release finds the wake channel from it), or without a wake channel a
 * random ticket in 1..2^25-1. */
static long long rlk_rw_new_ticket(rlk_rwlock *rw)
{
    return rlk_rw_wakes_alone(rw) ? rlk_names_wake_ticket(rw->cid) : rlk_names_plain_ticket();
}

static int rlk_rw_acq_init(rlk_rwlock *rw, int side, long long lease_ms, rlk_rw_acq *a)
{
    int rc = rlk_rw_check_side(rw, side, 0, "lock");

    if (rc != RLK_OK)
        return rc;
    a->rw = rw;
    a->side = side;
    memset(&a->ticket, 0, sizeof a->ticket);
    a->ticket.claim_ns = (RLK_FAM_CLAIM_MS + 5) * 1000000LL;
    a->queued = 0;
    a->wide = 0;
    a->reserved = 0;
    rc = rlk_fam_lease(rw->b.c, "rwlock", rw->b.name, lease_ms, &a->lease_ms, &a->watchdog);
    if (rc != RLK_OK)
        return rc;
    return rlk_rwlock_owner(rw, a->owner, sizeof a->owner);
}

static void rlk_rw_spec(const rlk_rwlock *rw, int side, const char *owner, rlk_hold_spec *h)
{
    memset(h, 0, sizeof *h);
    h->kind = rlk_rw_kind(side);
    h->name = rw->b.name;
    h->owner = owner;
    h->keys[0] = rw->b.name;
    h->keys[1] = rw->b.key[RLK_PROTO_KEY_PREFIX];
    h->nkeys = side == RLK_RW_WRITE ? 1 : 2;    /* renew_writer: lock; renew_readers: + prefix */
    h->channel = rw->b.channel;
    h->task = side == RLK_RW_WRITE ? &rlk_rwlock_renew_writer : &rlk_rwlock_renew_readers;
    /* A writer's waiters wait on their wake channels: a write hold's channel does not linger
     * (each release's 1 there would wake this client for nothing); readers wait there. */
    h->leave_now = side == RLK_RW_WRITE;
}

/* Sends one release of side for owner; the reply's outcome (or ERROR). */
static int rlk_rw_release_call(rlk_rwlock *rw, int side, const char *owner, long long lease,
                               int *rc_out)
{
    return rlk_handle_release(&rw->b, side == RLK_RW_WRITE ? &rlk_rwlock_write_row
                              : &rlk_rwlock_read_row, "release", NULL, owner, lease, NULL, rc_out);
}

/* rlk_fam_release_fn of the write side. */
static int rlk_rw_release_write(void *arg, const char *owner, long long lease, int *rc)
{
    return rlk_rw_release_call(arg, RLK_RW_WRITE, owner, lease, rc);
}

/* rlk_fam_release_fn of the read side. */
static int rlk_rw_release_read(void *arg, const char *owner, long long lease, int *rc)
{
    return rlk_rw_release_call(arg, RLK_RW_READ, owner, lease, rc);
}

/* rlk_fam_undo_fn: gives back one hold: an acquisition the registry could not
 * record, one too few replicas acknowledged, or one the caller was never told
 * of (the same holder's release: one hold less). */
static int rlk_rw_undo(void *arg)
{
    const rlk_rw_acq *a = arg;
    int rc, outcome = rlk_rw_release_call(a->rw, a->side, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

/* The script's RLK_UPGRADE refusal, as the API's own error code. */
static int rlk_rw_upgrade_error(rlk_rwlock *rw, const char *owner)
{
    return rlk_set_error(rw->b.c, RLK_ERR_UPGRADE,
                         "write lock %s: %s holds a read of it; release every read before "
                         "taking the write lock (no upgrade)", rw->b.name, owner);
}

static int rlk_rw_send_acquire(rlk_rw_acq *a, long long targ, redisReply **r)
{
    const rlk_proto *row = a->side == RLK_RW_WRITE ? &rlk_rwlock_write_row : &rlk_rwlock_read_row;
    rlk_proto_argvals v = {.lease_ms = a->lease_ms, .owner = a->owner, .ticket = targ};

    RLK_RT_COUNT(a->rw->b.rt, acquire_calls);
    return rlk_handle_eval(&a->rw->b, row->acquire, row->acquire_args, &v, r);
}

/* rlk_wait_attempt_fn. RLK_OK: acquired (recorded in the registry).
 * RLK_ERR_BUSY: held against us, *ttl its PTTL (-1: none; a reader: a
 * writer's reservation's PTTL, with a->reserved set: not a holder's TTL,
 * see w.not_ttl), or RLK_WAIT_RECHECK (-3: a writer first in the queue
 * behind another ticket's reservation). */
static int rlk_rw_attempt(void *arg, long long *ttl)
{
    rlk_rw_acq *a = arg;
    rlk_rwlock *rw = a->rw;
    long long sent = rlk_clock_now_ns();
    rlk_proto_outcome o;
    redisReply *r = NULL;
    rlk_hold_spec h;
    long long targ = rlk_wait_ticket_arg(&a->ticket, a->queued);   /* 0: does not queue */
    int rc;

    a->reserved = 0;
    rc = rlk_rw_send_acquire(a, targ, &r);
    if (rc == RLK_ERR_SCRIPT && rlk_proto_refusal(rlk_errstr(rw->b.c)) == RLK_ERR_UPGRADE)
        return rlk_rw_upgrade_error(rw, a->owner);
    if (rc != RLK_OK && targ)
        a->queued = 1;      /* it may have run: the next attempt looks before it queues */
    if (rc != RLK_OK) {
        rlk_rw_spec(rw, a->side, a->owner, &h);
        return rlk_fam_acquire_lost(&rw->b, rc, &h, a->lease_ms, a->watchdog, sent, NULL, NULL,
                                    rlk_rw_undo, a);
    }
    if (rlk_proto_read_acquire(r, 0, &o) == RLK_PROTO_BUSY && r->elements == 2) {
        *ttl = o.value;
        if (o.first)
            a->wide = 1;        /* a writer's {wait, 1}: first in the writers' queue */
        else
            a->reserved = 1;    /* a reader's {grant PTTL, 0}: reserved for a writer */
        rc = RLK_ERR_BUSY;
    } else {
        rc = rlk_fam_acquire_reply(rw->b.c, rlk_rw_what(a->side), rw->b.name, "acquire", r, ttl,
                                   NULL);
        a->wide = rc == RLK_ERR_BUSY && a->ticket.ticket && *ttl == RLK_WAIT_RECHECK;
    }
    freeReplyObject(r);
    if (rc == RLK_ERR_BUSY && targ) {
        a->queued = 1;
        rlk_lq_note_first(rw->q, a->wide);
    } else if (rc == RLK_OK && a->ticket.ticket && !a->queued)
        rlk_lq_note_first(rw->q, 0);    /* taken at once: nobody to wait for, no hint */
    if (rc == RLK_OK)
        a->queued = 0;
    if (rc == RLK_OK) {
        rlk_rw_spec(rw, a->side, a->owner, &h);
        rc = rlk_fam_record(rw->b.rt, &h, a->lease_ms, a->watchdog, sent, 0, rlk_rw_undo, a);
    }
    return rc;
}

static int rlk_rw_busy(rlk_rwlock *rw, int side, long long start_ns)
{
    long long ms = (rlk_clock_now_ns() - start_ns) / 1000000LL;

    return rlk_set_error(rw->b.c, RLK_ERR_BUSY, "%s %s: held against it after %lld ms",
                         rlk_rw_what(side), rw->b.name, ms);
}

/* ---------------------------------------------------------------- locking */

/* A writer that gives up leaves the server's queue (rlk_handle_cancel). */
static void rlk_rw_cancel(rlk_rw_acq *a)
{
    rlk_proto_argvals v = {.ticket = a->ticket.ticket};

    rlk_handle_cancel(&a->rw->b, &rlk_rwlock_write_row, &v, 1);
}

/* A writer's wait: behind the process's other writers of the lock, with a
 * ticket in the server's queue, woken by the grant that names it
 * (kinds/lock.c's rlk_lock_try_lock_run, step for step). */
static int rlk_rw_write_wait(rlk_rwlock *rw, rlk_rw_acq *a, rlk_waiter *w, long long start,
                             long long wait_ms)
{
    rlk_lq_node node;
    int rc, first;

    a->ticket.ticket = rlk_rw_new_ticket(rw);
    w->q = rw->q;
    w->rule = &rlk_lock_sub_rule;   /* its grants */
    w->ticket = &a->ticket;
    w->keepalive_ms = RLK_RW_KEEPALIVE_MS;
    w->recheck_ms = RLK_FAM_CLAIM_MS + 5;  /* write_acquire's -3: a dead grantee is skipped */
    w->channel = a->ticket.ticket >= RLK_NAMES_WAKE_TICKET_MIN ? rw->wake : rw->b.channel;
    w->wide_channel = rw->b.channel;
    w->wide = a->ticket.ticket >= RLK_NAMES_WAKE_TICKET_MIN ? &a->wide : NULL;
    rc = rlk_lq_enter(rw->q, &node, rlk_wait_deadline(start, wait_ms));
    if (rc == RLK_ERR_NOMEM)
        return rlk_set_error(rw->b.c, rc, "write lock %s: out of resources for a waiter",
                             rw->b.name);
    if (rc != RLK_OK)
        return rlk_rw_busy(rw, RLK_RW_WRITE, start);
    w->entered = &node;
    w->wide_early = w->wide && rlk_lq_expects_first(rw->q);
    first = !node.waited && !w->wide_early;
    if (first)
        rlk_wait_pre_join(w);
    rc = rlk_wait_acquire(w, start, wait_ms, first);
    if (rc != RLK_OK && a->queued)
        rlk_rw_cancel(a);
    return rc == RLK_ERR_BUSY ? rlk_rw_busy(rw, RLK_RW_WRITE, start) : rc;
}

static int rlk_rwlock_try_lock_run(rlk_rwlock *rw, int side, long long wait_ms, long long lease_ms)
{
    long long start = rlk_clock_now_ns();
    rlk_waiter w;
    rlk_rw_acq a;
    int rc;

    if ((rc = rlk_rw_acq_init(rw, side, lease_ms, &a)) != RLK_OK)
        return rc;
    rlk_wait_init_lock(&w, &rw->b, rlk_rw_what(side), rlk_rw_attempt, &a);
    w.not_ttl = &a.reserved;    /* a reader that waited out a writer's claim window: no message
                                   was due, nothing died (no ttl_wakeups) */
    /* A writer that waits (not a single try, not a re-entry) queues; readers have no local
     * queue: they must be able to enter together (see the top). */
    if (side == RLK_RW_WRITE && wait_ms != 0 && !rlk_wd_holds_as(rw->b.rt->wd, RLK_KIND_WRITE, rw->b.name, a.owner))
        return rlk_rw_write_wait(rw, &a, &w, start, wait_ms);
    rc = rlk_wait_acquire(&w, start, wait_ms, 1);
    return rc == RLK_ERR_BUSY ? rlk_rw_busy(rw, side, start) : rc;
}

/* Counted in the metrics as the side's */
int rlk_rwlock_try_lock(rlk_rwlock *rw, int side, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(rw ? &rw->b : NULL);
    int rc = rw ? rlk_rwlock_try_lock_run(rw, side, wait_ms, lease_ms) : RLK_ERR_ARG;

    return rlk_handle_call_end(&hc, side == RLK_RW_WRITE ? RLK_KIND_WRITE : RLK_KIND_READ, rc);
}

int rlk_rwlock_lock(rlk_rwlock *rw, int side, long long lease_ms)
{
    return rlk_rwlock_try_lock(rw, side, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

int rlk_rwlock_unlock(rlk_rwlock *rw, int side)
{
    int rc;

    if (!rw)
        return RLK_ERR_ARG;
    if ((rc = rlk_rw_check_side(rw, side, 0, "unlock")) != RLK_OK)
        return rc;
    return rlk_fam_unlock(&rw->b, rlk_rw_kind(side), rlk_rw_what(side), &rw->id,
                          "rlk_rwlock_owner", NULL,
                          side == RLK_RW_WRITE ? rlk_rw_release_write : rlk_rw_release_read, rw);
}

static int rlk_rwlock_force(rlk_rwlock *rw, int side, int named, int *released)
{
    static const char *const modes[] = {"read", "write", "any"};
    int rc;

    if (!rw)
        return RLK_ERR_ARG;
    if ((rc = rlk_rw_check_side(rw, side, 1, "force unlock")) != RLK_OK)
        return rc;
    return rlk_handle_force(&rw->b, &rlk_rwlock_write_row, NULL, modes[side], named, NULL,
                            released);
}

int rlk_rwlock_force_unlock(rlk_rwlock *rw, int side, int *released)
{
    return rlk_rwlock_force(rw, side, 0, released);
}

int rlk_rwlock_force_unlock_named(rlk_rwlock *rw, int side, int *released)
{
    return rlk_rwlock_force(rw, side, 1, released);
}

/* ---------------------------------------------------------------- queries */

/* A read of the lock hash: HGET name field, or HGETALL name (field NULL),
 * whose reply read turns into *out. */
static int rlk_rw_hash(rlk_rwlock *rw, const char *field,
                       int (*read)(rlk_rwlock *rw, const redisReply *r, void *out), void *out)
{
    const char *argv[3] = {field ? "HGET" : "HGETALL", rw->b.name, field};
    redisReply *r = NULL;
    int rc = rlk_command(rw->b.c, field ? 3 : 2, argv, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    rc = read(rw, r, out);
    freeReplyObject(r);
    return rc;
}

/* The mode field: read, write, or none (free). */
static int rlk_rw_read_mode(rlk_rwlock *rw, const redisReply *r, void *out)
{
    int *mode = out;

    if (r->type == REDIS_REPLY_STRING && strcmp(r->str, "read") == 0)
        *mode = RLK_RW_MODE_READ;
    else if (r->type == REDIS_REPLY_STRING && strcmp(r->str, "write") == 0)
        *mode = RLK_RW_MODE_WRITE;
    else if (r->type != REDIS_REPLY_NIL)
        return rlk_set_error(rw->b.c, RLK_ERR_PROTOCOL, "rwlock %s: not a read-write lock (mode)",
                             rw->b.name);
    return RLK_OK;
}

int rlk_rwlock_mode(rlk_rwlock *rw, int *mode)
{
    if (!rw || !mode)
        return RLK_ERR_ARG;
    *mode = RLK_RW_FREE;
    return rlk_rw_hash(rw, "mode", rlk_rw_read_mode, mode);
}

/* The hash field of side for owner: "<owner>" or "<owner>:write". */
static void rlk_rw_field(int side, const char *owner, char *buf, size_t len)
{
    snprintf(buf, len, side == RLK_RW_WRITE ? "%s:write" : "%s", owner);
}

/* The calling thread's holder id into owner (RLK_OWNER_MAX + 1 bytes), for
 * side RLK_RW_READ or RLK_RW_WRITE (else RLK_ERR_ARG; what names the call). */
static int rlk_rw_side_owner(rlk_rwlock *rw, int side, const char *what, char *owner)
{
    int rc = rlk_rw_check_side(rw, side, 0, what);

    return rc != RLK_OK ? rc : rlk_rwlock_owner(rw, owner, RLK_OWNER_MAX + 1);
}

int rlk_rwlock_lease(rlk_rwlock *rw, int side, long long *start_ns, long long *deadline_ns)
{
    char owner[RLK_OWNER_MAX + 1];
    int rc;

    if (!rw || !start_ns || !deadline_ns)
        return RLK_ERR_ARG;
    if ((rc = rlk_rw_side_owner(rw, side, "lease", owner)) != RLK_OK)
        return rc;
    return rlk_fam_held_lease_of(&rw->b, rlk_rw_kind(side), owner, start_ns, deadline_ns);
}

int rlk_rwlock_hold_count(rlk_rwlock *rw, int side, long long *count)
{
    char owner[RLK_OWNER_MAX + 1], field[RLK_OWNER_MAX + 8];
    const char *argv[3];
    int rc;

    if (!rw || !count)
        return RLK_ERR_ARG;
    *count = 0;
    if ((rc = rlk_rw_side_owner(rw, side, "hold count", owner)) != RLK_OK)
        return rc;
    rlk_rw_field(side, owner, field, sizeof field);
    argv[0] = "HGET";
    argv[1] = rw->b.name;
    argv[2] = field;
    return rlk_fam_query(rw->b.c, rw->b.name, 3, argv, 0, count);
}

int rlk_rwlock_is_held_by_me(rlk_rwlock *rw, int side, int *held)
{
    char owner[RLK_OWNER_MAX + 1];
    long long n = 0;
    int rc;

    if (!rw || !held)
        return RLK_ERR_ARG;
    *held = 0;
    rc = rlk_rw_side_owner(rw, side, "is held", owner);
    if (rc != RLK_OK || rlk_wd_is_lost_as(rw->b.rt->wd, rlk_rw_kind(side), rw->b.name, owner))
        return rc;      /* a hold the watchdog lost: not held */
    rc = rlk_rwlock_hold_count(rw, side, &n);
    *held = rc == RLK_OK && n > 0;
    return rc;
}

/* A reader field: not "mode", not "<w>:write", with a positive count. */
static int rlk_rw_is_reader(const redisReply *field, const redisReply *value)
{
    if (field->type != REDIS_REPLY_STRING || value->type != REDIS_REPLY_STRING)
        return 0;
    if (strcmp(field->str, "mode") == 0)
        return 0;
    if (field->len >= 6 && strcmp(field->str + field->len - 6, ":write") == 0)
        return 0;
    return atoll(value->str) > 0;
}

/* The whole hash: how many reader fields it has. */
static int rlk_rw_read_readers(rlk_rwlock *rw, const redisReply *r, void *out)
{
    long long *owners = out;

    if (r->type != REDIS_REPLY_ARRAY)
        return rlk_set_error(rw->b.c, RLK_ERR_PROTOCOL, "HGETALL %s: reply type %d", rw->b.name,
                             r->type);
    for (size_t i = 0; i + 1 < r->elements; i += 2)
        *owners += rlk_rw_is_reader(r->element[i], r->element[i + 1]);
    return RLK_OK;
}

int rlk_rwlock_reader_count(rlk_rwlock *rw, long long *owners)
{
    if (!rw || !owners)
        return RLK_ERR_ARG;
    *owners = 0;
    return rlk_rw_hash(rw, NULL, rlk_rw_read_readers, owners);
}

int rlk_rwlock_remaining_ttl(rlk_rwlock *rw, long long *ttl_ms)
{
    return rw && ttl_ms ? rlk_fam_remaining_ttl(&rw->b, ttl_ms) : RLK_ERR_ARG;
}
