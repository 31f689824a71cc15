/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fastmulti.c - the faster MultiLock API (rlk_fastmulti_*): Redisson's
 * RedissonFasterMultiLock (getMultiLock(group, values)) on scripts/fastmulti/.
 * Many values of one group live in ONE hash `group` and are taken and
 * released, all or none, by ONE script call: field <value> -> holder,
 * <value>:<holder>:expire_time -> epoch ms, <value>:<holder>:lock_count ->
 * count; channel redisson_lock__channel:{group}, message 0 on a release
 * (docs/locks/fastmulti.md).
 *
 * Holds are recorded in the client's registry as (RLK_KIND_LOCK, group,
 * owner): one entry per holder and group, renewed by this file's task
 * (fastmulti/renew extends every live value the holder has in the group).
 * So the entry's count is the number of this holder's acquisitions in the
 * group, whichever values they took, and the release maps the script's
 * reply onto that: a release of some values while this client counts other
 * acquisitions in the group is "still held" for the registry. A handle also
 * counts its own acquisitions per holder id: an unlock through a handle that
 * took nothing for the caller's id must not take the registry entry of
 * another set of values the same holder has in the group (it would no
 * longer be renewed), so it leaves the registry alone unless the script
 * says it did release something.
 *
 * Waiting: every waiter subscribes to the group's channel and attempts on
 * each message (the waiters of one group wait for different values, so a
 * release wakes them all: no local queue, no one-permit wake-up).
 *
 * A lost reply of an acquire or a release is settled before anything is
 * reported by the machine of kinds/acq.h, as on the loop (async/a_lock.c):
 * its read-back is the row's fastmulti/counts, the count it left
 * rlk_acq_values_count's, exact when the registry's count is made of this
 * handle's acquisitions only. An acquire that cannot be told is
 * RLK_ERR_UNSETTLED: if it ran, its values run out with their lease, never
 * renewed.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/error.h"
#include "kinds/acq.h"
#include "kinds/fastmulti.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/rt.h"
#include "runtime/wd.h"

/* A holder id and how many acquisitions of this handle it has not released. */
typedef struct rlk_fastmulti_took {
    char *owner;
    long long count;
} rlk_fastmulti_took;

struct rlk_fastmulti {
    rlk_fam_base b;             /* name: the group; channel: redisson_lock__channel:{group} */
    char **values;              /* one block (kinds/acq.h rlk_proto_values_take) */
    size_t n;
    pthread_mutex_t mu;         /* took */
    rlk_fastmulti_took *took;
    size_t ntook;
};

/* Every message on the group's channel wakes every waiter of this client. */
static int rlk_fastmulti_meaning(const char *payload, size_t len, long long *head, long long *next)
{
    (void)payload;
    (void)len;
    (void)head;
    (void)next;
    return RLK_SUB_MSG_ALL;
}

static const rlk_sub_rule rlk_fastmulti_sub_rule = {rlk_fastmulti_meaning};

/* The watchdog's task: fastmulti/renew (group; lease, owner), one call per entry
 * (the non-blocking API's row renews with it too). */
const rlk_renew_task rlk_fastmulti_renew_task = {
    "fastmulti/renew", RLK_RENEW_ALONE, rlk_renew_build_one, rlk_renew_reply_one, NULL
};

/* The faster MultiLock's row (kinds/proto.h, docs/locks/fastmulti.md): the values of one group
 * in one hash, taken and released all or none by one call (the values after the named ARGV);
 * waiters on the group's channel, every message a wake-up (waiters of a group wait for
 * different values), bounded by the TTL a refusal returns. One hold (kind lock, name the
 * group) per owner, fastmulti/renew. */
const rlk_proto rlk_fastmulti_row = {
    .what = "faster MultiLock", .hold = RLK_KIND_LOCK, .names = "fastmulti",
    .acquire = "fastmulti/acquire", .acquire_args = "lease_ms owner",
    .release = "fastmulti/release", .release_args = "owner lease_ms publish",
    .force = "fastmulti/force_release", .force_args = "publish", .wait_channel = "channel",
    .wait = RLK_PROTO_WAIT_CHANNEL, .flags = RLK_PROTO_VALUES, .renew = &rlk_fastmulti_renew_task,
    .renew_keys = "group", .grants = &rlk_fastmulti_sub_rule, .held = "fastmulti/counts",
    .held_args = "owner", .busy = "a value held by another holder"};
const rlk_proto_call rlk_fastmulti_held_call = {"fastmulti/held", "owner"};

static void rlk_fastmulti_fini(void *handle)
{
    rlk_fastmulti *m = handle;

    free(m->values);
    for (size_t k = 0; k < m->ntook; k++)
        free(m->took[k].owner);
    free(m->took);
    pthread_mutex_destroy(&m->mu);
}

/* Adds delta to owner's count of acquisitions through m; returns the count
 * before. A count that reaches 0 is dropped. Out of memory: the acquisition
 * is not counted (its unlock then finds it through the script). */
static long long rlk_fastmulti_took_add(rlk_fastmulti *m, const char *owner, long long delta)
{
    long long before = 0;
    size_t k;

    pthread_mutex_lock(&m->mu);
    for (k = 0; k < m->ntook && strcmp(m->took[k].owner, owner) != 0; k++)
        ;
    if (k < m->ntook) {
        before = m->took[k].count;
        if ((m->took[k].count += delta) <= 0) {
            free(m->took[k].owner);
            m->took[k] = m->took[--m->ntook];
        }
    } else if (delta > 0) {
        rlk_fastmulti_took *t = realloc(m->took, (m->ntook + 1) * sizeof *t);

        if (t) {
            m->took = t;
            if ((t[m->ntook].owner = strdup(owner)) != NULL)
                t[m->ntook++].count = delta;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return before;
}

static const rlk_fam_kind rlk_fastmulti_kind = {
    "rlk_fastmulti_new", "group", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, rlk_fastmulti_fini
};

/* ---------------------------------------------------------------- handles */

rlk_fastmulti *rlk_fastmulti_new(rlk_client *c, const char *group, const char *const *values,
                                 size_t n)
{
    char why[RLK_ERRSTR_MAX], **copy;
    rlk_fastmulti *m;

    if (rlk_proto_values_take(&rlk_fastmulti_row, values, n, &copy, why, sizeof why) ==
            RLK_ERR_ARG && c) {
        rlk_set_error(c, RLK_ERR_ARG, "rlk_fastmulti_new %s: %s", group ? group : "", why);
        return NULL;
    }
    if (!(m = rlk_fam_new(c, group, sizeof *m, &rlk_fastmulti_kind))) {
        free(copy);
        return NULL;
    }
    pthread_mutex_init(&m->mu, NULL);
    m->values = copy;
    m->n = n;
    return rlk_fam_made(m, copy && rlk_handle_keys(&m->b, "fastmulti", "group"));
}

void rlk_fastmulti_free(rlk_fastmulti *m)
{
    rlk_fam_free(m);
}

const char *rlk_fastmulti_group(const rlk_fastmulti *m)
{
    return m ? m->b.name : NULL;
}

size_t rlk_fastmulti_count(const rlk_fastmulti *m)
{
    return m ? m->n : 0;
}

const char *rlk_fastmulti_value(const rlk_fastmulti *m, size_t i)
{
    return m && i < m->n ? m->values[i] : NULL;
}

int rlk_fastmulti_set_owner(rlk_fastmulti *m, const char *owner)
{
    return m ? rlk_fam_id_set(m->b.c, &m->b.id, owner, 0, "rlk_fastmulti_set_owner") : RLK_ERR_ARG;
}

int rlk_fastmulti_owner(const rlk_fastmulti *m, char *buf, size_t len)
{
    return m ? rlk_handle_owner(&m->b, buf, len, "rlk_fastmulti_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- script calls */

/* The call pc with vals, then the values: as rlk_handle_evalt (r NULL: an integer reply into
 * *out; else the reply in *r). */
static int rlk_fastmulti_call(rlk_fastmulti *m, const rlk_proto_call *pc,
                              const rlk_proto_argvals *vals, long long *out, redisReply **r)
{
    return rlk_handle_evalt(&m->b, pc, NULL, vals, m->n, (const char *const *)m->values, NULL,
                            out, r);
}

/* fastmulti/held for owner ("" for any): the number of the values held. */
static int rlk_fastmulti_held(rlk_fastmulti *m, const char *owner, long long *count)
{
    rlk_proto_argvals v = {.owner = owner};

    return rlk_fastmulti_call(m, &rlk_fastmulti_held_call, &v, count, NULL);
}

/* fastmulti/release for owner: its enum rlk_release_outcome; *rc the call's error. */
static int rlk_fastmulti_release_call(void *arg, const char *owner, long long lease, int *rc)
{
    const rlk_proto_call release = {rlk_fastmulti_row.release, rlk_fastmulti_row.release_args};
    rlk_fastmulti *m = arg;
    rlk_proto_argvals v = {.owner = owner, .lease_ms = lease};
    redisReply *r = NULL;
    char op[RLK_ERRSTR_MAX];
    long long n = -1;
    rlk_fam_err e;
    int outcome = RLK_REL_ERROR, there;

    *rc = rlk_fastmulti_call(m, &release, &v, NULL, &r);
    if (*rc == RLK_ERR_SCRIPT && rlk_fam_acl_refused(m->b.c)) {
        /* An ACL refusal inside the script (runtime/fam_hold.h rlk_fam_acl_said): released
         * (RLK_ERR_NOTIFY in *rc) when owner holds none of the values (fastmulti/held). */
        rlk_fam_err_keep(m->b.c, &e);
        snprintf(op, sizeof op, "unlock faster MultiLock %s", m->b.name);
        there = rlk_fastmulti_held(m, owner, &n) == RLK_OK ? n > 0 : -1;
        *rc = rlk_fam_acl_said(m->b.c, op, e.msg, there, "released",
                               "values are still held and expire with their lease");
        return *rc == RLK_ERR_NOTIFY ? RLK_REL_RELEASED : RLK_REL_ERROR;
    }
    if (*rc != RLK_OK)
        return RLK_REL_ERROR;
    if (r->type == REDIS_REPLY_NIL)
        outcome = RLK_REL_NOT_OWNER;
    else if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
        outcome = r->integer == 1 ? RLK_REL_RELEASED : RLK_REL_STILL_HELD;
    else
        *rc = rlk_set_error(m->b.c, RLK_ERR_PROTOCOL, "unlock %s: fastmulti/release replied type %d",
                            m->b.name, r->type);
    freeReplyObject(r);
    if (*rc == RLK_OK && outcome != RLK_REL_NOT_OWNER)
        *rc = rlk_fam_acks_done(m->b.c, "faster MultiLock", m->b.name, "released");
    return outcome;
}

/* The driver's settle of a lost acquire (rlk_handle_acq.settle, a->handle the handle): the
 * machine's, exact when every acquisition the registry counts was this handle's (of these
 * values). */
static int rlk_fastmulti_lost(rlk_handle_acq *a, int rc, long long sent, rlk_acq_act *x)
{
    rlk_fastmulti *m = a->handle;

    a->m.exact = rlk_fastmulti_took_add(m, a->owner, 0) ==
                 rlk_wd_count_as(m->b.rt->wd, RLK_KIND_LOCK, m->b.name, a->owner);
    return rlk_handle_lost(a, rc, sent, x);
}

/* ---------------------------------------------------------------- locking */

/* Through the one blocking driver (kinds/handle.h) with the values after the acquire's ARGV
 * and this file's settle of a lost reply; an acquisition counted in took once made. Counted in
 * the metrics as a reentrant lock's. */
int rlk_fastmulti_try_lock(rlk_fastmulti *m, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(m ? &m->b : NULL);
    rlk_handle_acq a;
    int rc = m ? rlk_handle_acq_start(&a, m, &m->b, "rlk_fastmulti_owner", &rlk_fastmulti_row,
                                      lease_ms, rlk_fastmulti_release_call)
               : RLK_ERR_ARG;

    if (rc == RLK_OK) {
        a.tail = (const char *const *)m->values;
        a.ntail = m->n;
        a.settle = rlk_fastmulti_lost;
        if ((rc = rlk_handle_drive(&a, wait_ms)) == RLK_OK)
            rlk_fastmulti_took_add(m, a.owner, 1);
    }
    return rlk_handle_call_end(&hc, RLK_KIND_LOCK, rc);
}

int rlk_fastmulti_lock(rlk_fastmulti *m, long long lease_ms)
{
    return rlk_fastmulti_try_lock(m, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

int rlk_fastmulti_unlock(rlk_fastmulti *m)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_hold_spec h = {.kind = RLK_KIND_LOCK, .owner = owner};
    rlk_wd_ticket t;
    rlk_acq q;
    rlk_acq_act x;
    long long lease = 0, before, took;
    int rc, outcome, mine, wd_unused;

    if (!m)
        return RLK_ERR_ARG;
    if ((rc = rlk_fastmulti_owner(m, owner, sizeof owner)) != RLK_OK)
        return rc;
    took = rlk_fastmulti_took_add(m, owner, -1);
    mine = took > 0;
    before = rlk_wd_count_as(m->b.rt->wd, RLK_KIND_LOCK, m->b.name, owner);
    /* Taken through this handle: out of the registry (or one count less) before the release
     * is sent. Nothing taken through it for owner: the registry's entry (if any) is another
     * set's; only a release that did free something (the same values taken through another
     * handle) counts there. */
    if (mine)
        lease = rlk_wd_release_begin_as(m->b.rt->wd, RLK_KIND_LOCK, m->b.name, owner, &t);
    else
        rlk_fam_lease(m->b.c, "faster MultiLock", m->b.name, 0, &lease, &wd_unused);
    outcome = rlk_fastmulti_release_call(m, owner, lease, &rc);
    h.name = m->b.name;
    /* A lost reply settled by the machine (the same rule as the loop's) */
    rlk_acq_init(&q, &rlk_fastmulti_row, m->b.name, owner, rlk_fam_id_given(&m->b.id),
                 mine && before > 0 ? before : 1);
    q.counters = &m->b.rt->counters;
    q.exact = mine && took == before;
    outcome = rlk_handle_rel_settle(&m->b, &q, &h, m->n, (const char *const *)m->values,
                                    rlk_fastmulti_release_call, m, lease, outcome, &rc);
    if (!mine && (outcome == RLK_REL_RELEASED || outcome == RLK_REL_STILL_HELD))
        rlk_wd_release_begin_as(m->b.rt->wd, RLK_KIND_LOCK, m->b.name, owner, &t);
    /* The registry counts this holder's acquisitions in the group, whichever values: while
     * it counts more, the holder still holds the others. */
    if (mine || outcome == RLK_REL_RELEASED || outcome == RLK_REL_STILL_HELD)
        rlk_wd_release_end(m->b.rt->wd, &t, t.decremented ? RLK_REL_STILL_HELD : outcome);
    if (outcome == RLK_REL_NOT_OWNER && rlk_acq_not_held(&q, &x))
        rc = rlk_set_error(m->b.c, x.err, "%s", x.msg);
    return rc;
}

int rlk_fastmulti_force_unlock(rlk_fastmulti *m, int *released)
{
    const rlk_proto_call force = {rlk_fastmulti_row.force, rlk_fastmulti_row.force_args};
    long long n = 0;
    int rc;

    if (!m)
        return RLK_ERR_ARG;
    /* Every hold of the group in this client's registry goes: the watchdog
     * must not renew what is left of it (another value of the group held
     * by this client is then no longer renewed, and runs out with its lease). */
    rlk_wd_forget_name(m->b.rt->wd, m->b.name);
    pthread_mutex_lock(&m->mu);
    for (size_t k = 0; k < m->ntook; k++)
        free(m->took[k].owner);
    m->ntook = 0;
    pthread_mutex_unlock(&m->mu);
    rc = rlk_fastmulti_call(m, &force, NULL, &n, NULL);
    if (rc == RLK_OK && released)
        *released = n == 1;
    return rc;
}

/* ---------------------------------------------------------------- queries */

int rlk_fastmulti_is_locked(rlk_fastmulti *m, int *locked)
{
    long long n = 0;
    int rc;

    if (!m || !locked)
        return RLK_ERR_ARG;
    if ((rc = rlk_fastmulti_held(m, "", &n)) == RLK_OK)
        *locked = n > 0;
    return rc;
}

int rlk_fastmulti_is_held_by_me(rlk_fastmulti *m, int *held)
{
    char owner[RLK_OWNER_MAX + 1];
    long long n = 0;
    int rc;

    if (!m || !held)
        return RLK_ERR_ARG;
    if ((rc = rlk_fastmulti_owner(m, owner, sizeof owner)) != RLK_OK)
        return rc;
    if ((rc = rlk_fastmulti_held(m, owner, &n)) == RLK_OK)
        *held = n == (long long)m->n;
    return rc;
}
