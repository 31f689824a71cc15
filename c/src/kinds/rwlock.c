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

#include "client/error.h"
#include "kinds/handle.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "kinds/rwlock.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"

struct rlk_rwlock {
    rlk_fam_base b;             /* channel: redisson_rwlock:{name}; keys: the prefix {name} (of
                                   the timeout keys), {name}:rlk_waiters (the server's queue of
                                   writers' tickets), {name}:rlk_next (the ticket a release
                                   reserved the lock for); q: the process's waiting writers of
                                   this lock; wake: redisson_rwlock:{name}:rlk:<cid>, this
                                   client's wake channel */
};

static const rlk_fam_kind rlk_rwlock_kind = {
    "rlk_rwlock_new", "lock", RLK_NAMES_CH_RWLOCK, rlk_fam_prefix_name, NULL
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

/* The read and write sides' rows (kinds/proto.h), with what both share. */
#define RLK_RW_ROW                                                                                \
    .names = "rwlock", .force = "rwlock/force_release", .force_args = "mode claim_ms publish",  \
    .wait_channel = "channel", .busy = "held against it"

const rlk_proto rlk_rwlock_read_row = {
    RLK_RW_ROW, .what = "read lock", .hold = RLK_KIND_READ, .acquire = "rwlock/read_acquire",
    .acquire_args = "lease_ms owner", .release = "rwlock/read_release",
    .release_args = "owner claim_ms publish", .wait = RLK_PROTO_WAIT_CHANNEL,
    .renew = &rlk_rwlock_renew_readers, .renew_keys = "lock prefix"};

const rlk_proto rlk_rwlock_write_row = {
    RLK_RW_ROW, .what = "write lock", .hold = RLK_KIND_WRITE, .acquire = "rwlock/write_acquire",
    .acquire_args = "lease_ms owner ticket", .release = "rwlock/write_release",
    .release_args = "owner lease_ms claim_ms publish", .cancel = "rwlock/cancel",
    .cancel_args = "ticket claim_ms publish", .wait = RLK_PROTO_WAIT_QUEUE,
    .renew = &rlk_rwlock_renew_writer, .renew_keys = "lock", .grants = &rlk_lock_sub_rule,
    .reads = &rlk_rwlock_read_row};

/* The side's row; its hold: the side's kind, RLK_KIND_WRITE or RLK_KIND_READ. */
static const rlk_proto *rlk_rw_row(int side)
{
    return side == RLK_RW_WRITE ? &rlk_rwlock_write_row : &rlk_rwlock_read_row;
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
    return rlk_handle_new(c, name, sizeof(rlk_rwlock), &rlk_rwlock_kind,
                          RLK_HANDLE_QUEUE_CHANNEL | RLK_HANDLE_WAKE, "rwlock",
                          "channel prefix waiters grant");
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
    return rw ? rlk_fam_id_set(rw->b.c, &rw->b.id, owner, 1, "rlk_rwlock_set_owner") : RLK_ERR_ARG;
}

int rlk_rwlock_owner(const rlk_rwlock *rw, char *buf, size_t len)
{
    return rw ? rlk_handle_owner(&rw->b, buf, len, "rlk_rwlock_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- locking */

/* The side's row through the one blocking driver (kinds/handle.c), counted in the metrics as
 * the side's: a writer that waits (not a single try, not a re-entry) waits as the reentrant
 * lock's waiters do, behind the process's other writers of the lock, with a ticket in the
 * server's queue; readers have no local queue: they must be able to enter together (see the
 * top). A writer that already holds a read is refused (RLK_ERR_UPGRADE). */
int rlk_rwlock_try_lock(rlk_rwlock *rw, int side, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(rw ? &rw->b : NULL);
    rlk_handle_acq a;
    int rc = rw ? rlk_rw_check_side(rw, side, 0, "lock") : RLK_ERR_ARG;

    if (rc == RLK_OK)
        rc = rlk_handle_acq_start(&a, rw, &rw->b, "rlk_rwlock_owner", rlk_rw_row(side), lease_ms,
                                  NULL);
    if (rc == RLK_OK) {
        a.q = side == RLK_RW_WRITE ? rw->b.q : NULL;
        rc = rlk_handle_drive(&a, wait_ms);
    }
    return rlk_handle_call_end(&hc, rlk_rw_row(side)->hold, rc);
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
    return rlk_handle_unlock(&rw->b, rlk_rw_row(side), rlk_rw_row(side)->what,
                             "rlk_rwlock_owner", NULL, NULL);
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

/* HGET name mode, or HGETALL name (field NULL) into *r. */
static int rlk_rw_hash(rlk_rwlock *rw, const char *field, redisReply **r)
{
    const char *argv[3] = {field ? "HGET" : "HGETALL", rw->b.name, field};

    return rlk_command(rw->b.c, field ? 3 : 2, argv, NULL, r);
}

/* The mode field: read, write, or none (free). */
int rlk_rwlock_mode(rlk_rwlock *rw, int *mode)
{
    redisReply *r = NULL;
    int rc;

    if (!rw || !mode)
        return RLK_ERR_ARG;
    *mode = RLK_RW_FREE;
    if ((rc = rlk_rw_hash(rw, "mode", &r)) != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_STRING && strcmp(r->str, "read") == 0)
        *mode = RLK_RW_MODE_READ;
    else if (r->type == REDIS_REPLY_STRING && strcmp(r->str, "write") == 0)
        *mode = RLK_RW_MODE_WRITE;
    else if (r->type != REDIS_REPLY_NIL)
        rc = rlk_set_error(rw->b.c, RLK_ERR_PROTOCOL, "rwlock %s: not a read-write lock (mode)",
                           rw->b.name);
    freeReplyObject(r);
    return rc;
}

/* The holder id's queries of side RLK_RW_READ or RLK_RW_WRITE (else RLK_ERR_ARG, what names
 * the call in it): its field is "<owner>" or "<owner>:write" (runtime/fam_hold.h) */
int rlk_rwlock_lease(rlk_rwlock *rw, int side, long long *start_ns, long long *deadline_ns)
{
    int rc;

    if (!rw || !start_ns || !deadline_ns)
        return RLK_ERR_ARG;
    if ((rc = rlk_rw_check_side(rw, side, 0, "lease")) != RLK_OK)
        return rc;
    return rlk_fam_held_lease(&rw->b, rlk_rw_row(side)->hold, "rlk_rwlock_owner", start_ns,
                              deadline_ns);
}

int rlk_rwlock_hold_count(rlk_rwlock *rw, int side, long long *count)
{
    int rc;

    if (!rw || !count)
        return RLK_ERR_ARG;
    *count = 0;
    if ((rc = rlk_rw_check_side(rw, side, 0, "hold count")) != RLK_OK)
        return rc;
    return rlk_fam_hold_count(&rw->b, rlk_rw_row(side)->hold, "rlk_rwlock_owner", count);
}

/* A hold the watchdog lost: not held */
int rlk_rwlock_is_held_by_me(rlk_rwlock *rw, int side, int *held)
{
    int rc;

    if (!rw || !held)
        return RLK_ERR_ARG;
    *held = 0;
    if ((rc = rlk_rw_check_side(rw, side, 0, "is held")) != RLK_OK)
        return rc;
    return rlk_fam_is_held(&rw->b, rlk_rw_row(side)->hold, "rlk_rwlock_owner", held);
}

/* How many reader fields the hash has: not "mode", not "<w>:write", with a positive count. */
int rlk_rwlock_reader_count(rlk_rwlock *rw, long long *owners)
{
    redisReply *r = NULL;
    int rc;

    if (!rw || !owners)
        return RLK_ERR_ARG;
    *owners = 0;
    if ((rc = rlk_rw_hash(rw, NULL, &r)) != RLK_OK)
        return rc;
    if (r->type != REDIS_REPLY_ARRAY)
        rc = rlk_set_error(rw->b.c, RLK_ERR_PROTOCOL, "HGETALL %s: reply type %d", rw->b.name,
                           r->type);
    for (size_t i = 0; rc == RLK_OK && i + 1 < r->elements; i += 2) {
        const redisReply *f = r->element[i], *v = r->element[i + 1];

        *owners += f->type == REDIS_REPLY_STRING && v->type == REDIS_REPLY_STRING &&
                   strcmp(f->str, "mode") != 0 &&
                   (f->len < 6 || strcmp(f->str + f->len - 6, ":write") != 0) && atoll(v->str) > 0;
    }
    freeReplyObject(r);
    return rc;
}

int rlk_rwlock_remaining_ttl(rlk_rwlock *rw, long long *ttl_ms)
{
    return rlk_fam_remaining_ttl(rw ? &rw->b : NULL, ttl_ms);
}
