/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elect.c - leader election (rlk_elect_*, docs/elect.md) on the fenced
 * lock's layout: the lock hash `name` (field <owner> -> 1 while it leads),
 * redisson_lock_token:{name} (the last token: a term is a fencing token),
 * the record {name}:elect (value, term, holder) and the change channel
 * rlk_elect__channel:{name}. scripts/elect/{campaign,proclaim,resign,leader}.
 *
 * A leader is a fenced-lock hold in the client's registry (RLK_KIND_FENCED,
 * its token the term): the watchdog renews it with elect/renew, which names
 * the term (another process with the same holder id may lead in a later
 * one), and reports it lost through the lost-lock callbacks. A leadership
 * whose lease has passed by this client's clock (a fixed lease, or a
 * watchdog lease no renewal extended in time) is not the caller's any more:
 * rlk_elect_term refuses it and a campaign asks the server again. Candidates wait as the fenced
 * lock's waiters do (runtime/wait.c, redisson_lock__channel:{name}, which
 * elect/resign publishes on). Observers wait on the change channel, and at
 * the leader's lease end too (an expiry is not published).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/clock.h"
#include "client/error.h"
#include "client/random.h"
#include "kinds/elect.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/rt.h"
#include "runtime/sub.h"
#include "runtime/wait.h"
#include "runtime/wd.h"

struct rlk_elect {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name} (candidates wait there);
                                   keys: the token redisson_lock_token:{name}, the state
                                   {name}:elect, the channel rlk_elect__channel:{name}; q: the
                                   local queue of name */
    char secret[33];            /* this handle's incarnation: 16 random bytes in hex, stored with
                                   its leadership; elect/campaign adopts a live leadership of the
                                   same holder id only with it */
};

/* The leader's renewal (both watchdogs, runtime/wd.c and engine/ae_wd.c): elect/renew, KEYS
 * the lock and its token key, ARGV lease, owner and the hold's token - its term. fenced/renew
 * checked the holder id alone, so a leader paused past its lease renewed the leadership its
 * own id won again in another process (a pod name campaigning twice) and never heard it had
 * lost; elect/renew replies 0 then: RLK_LOST_GONE. */
static int rlk_elect_renew_build(const rlk_renew_item *items, int m, const char *lease,
                                 const char **keys, int *nkeys, const char **args, size_t *lens)
{
    int n = rlk_renew_build_one(items, m, lease, keys, nkeys, args, lens);

    args[n] = items[0].token;
    return n + 1;
}

const rlk_renew_task rlk_elect_renew_task = {
    "elect/renew", RLK_RENEW_ALONE, rlk_elect_renew_build, rlk_renew_reply_one, NULL
};

/* The election's row (kinds/proto.h, docs/elect.md) on the fenced lock's layout: a leader is
 * a fenced hold whose token is its term, renewed with elect/renew; candidates wait on the
 * lock's channel, which elect/resign publishes on. Forced as the fenced lock it is. */
const rlk_proto rlk_elect_row = {
    .what = "election", .hold = RLK_KIND_FENCED, .names = "elect", .acquire = "elect/campaign",
    .acquire_args = "lease_ms owner value publish secret", .release = "elect/resign",
    .release_args = "owner lease_ms publish secret", .wait_channel = "lock_channel",
    .wait = RLK_PROTO_WAIT_CHANNEL, .flags = RLK_PROTO_TOKEN | RLK_PROTO_ONE_HOLD,
    .renew = &rlk_elect_renew_task, .renew_keys = "lock token", .value_max = RLK_ELECT_VALUE_MAX,
    .held = "fenced/held", .held_args = "owner", .busy = "another candidate leads"};
const rlk_proto_call rlk_elect_proclaim_call = {"elect/proclaim",
                                                "owner term value publish secret"};
const rlk_proto_call rlk_elect_leader_call = {"elect/leader", ""};

static const rlk_fam_kind rlk_elect_kind = {
    "rlk_elect_new", "election", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, NULL
};

/* ---------------------------------------------------------------- handles */

static atomic_ullong rlk_elect_handles;

rlk_elect *rlk_elect_new(rlk_client *c, const char *name)
{
    rlk_elect *e = rlk_handle_new(c, name, sizeof *e, &rlk_elect_kind, RLK_HANDLE_QUEUE_NAME,
                                  "elect", "token state channel lock_channel");
    char owner[RLK_UUID_LEN + 32];

    if (!e)
        return NULL;
    /* A candidate is the handle, not a thread (as etcd's session): campaign in one
     * thread, resign in another. "<client uuid>:elect-<n>". */
    snprintf(owner, sizeof owner, "%s:elect-%llu", e->b.rt->uuid,
             (unsigned long long)atomic_fetch_add(&rlk_elect_handles, 1) + 1);
    if (rlk_fam_id_set(c, &e->b.id, owner, 0, "rlk_elect_new") != RLK_OK ||
        (rlk_random_hex(e->secret, (sizeof e->secret - 1) / 2) != 0 &&
         rlk_set_error(c, RLK_ERR_IO, "rlk_elect_new: no random bytes for the handle's secret"))) {
        rlk_fam_free(e);
        return NULL;
    }
    atomic_store(&e->b.id.given, 0);    /* made here, for this handle alone */
    return e;
}

void rlk_elect_free(rlk_elect *e)
{
    rlk_fam_free(e);
}

const char *rlk_elect_name(const rlk_elect *e)
{
    return e ? e->b.name : NULL;
}

const char *rlk_elect_state_name(const rlk_elect *e)
{
    return e ? e->b.key[RLK_PROTO_KEY_STATE] : NULL;
}

const char *rlk_elect_channel(const rlk_elect *e)
{
    return e ? e->b.key[RLK_PROTO_KEY_CHANNEL] : NULL;
}

int rlk_elect_set_owner(rlk_elect *e, const char *owner)
{
    return e ? rlk_fam_id_set(e->b.c, &e->b.id, owner, 0, "rlk_elect_set_owner") : RLK_ERR_ARG;
}

int rlk_elect_owner(const rlk_elect *e, char *buf, size_t len)
{
    return e ? rlk_handle_owner(&e->b, buf, len, "rlk_elect_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- campaign */

int rlk_elect_lease_passed(long long now, long long deadline)
{
    return now >= deadline;
}

/* 1 when owner's leadership is recorded in this client with a lease that has passed by now:
 * a fixed lease that ran out, or a watchdog lease that no renewal extended in time (the
 * watchdog declares it lost soon, or already did). The server's lease began no earlier than
 * the send time the registry keeps, so before the deadline it has not run out there. */
static int rlk_elect_passed(rlk_elect *e)
{
    long long start_ns, deadline_ns;

    if (rlk_fam_held_lease(&e->b, RLK_KIND_FENCED, "rlk_elect_owner", &start_ns,
                           &deadline_ns) != RLK_OK)
        return 0;
    return rlk_elect_lease_passed(rlk_clock_now_ns(), deadline_ns);
}

/* Already the leader in this client: its term, nothing sent (RLK_PROTO_ONE_HOLD), while its
 * lease lasts; once it has passed the record goes and the campaign asks the server (which
 * gives the same term back only to this incarnation, its lock still there). A campaign's
 * acquire is not counted in acquire_calls (a->quiet); a lost reply is settled as every token
 * kind's is (read back with the row's held script: adopted when it ran), as the async campaign
 * settles it. */
int rlk_elect_campaign(rlk_elect *e, const char *value, long long wait_ms, long long lease_ms,
                       long long *term)
{
    rlk_handle_acq a;
    int rc;

    if (term)
        *term = 0;
    if (!e)
        return RLK_ERR_ARG;
    rc = rlk_handle_acq_start(&a, e, &e->b, "rlk_elect_owner", &rlk_elect_row, lease_ms, NULL);
    if (rc == RLK_OK && rlk_elect_passed(e)) {
        rlk_wd_ticket t;

        rlk_wd_release_begin_as(e->b.rt->wd, RLK_KIND_FENCED, e->b.name, a.owner, &t);
        rlk_wd_release_end(e->b.rt->wd, &t, RLK_REL_NOT_OWNER);    /* forgotten, not released */
    }
    a.v.value = value ? value : "";
    a.v.secret = e->secret;
    a.quiet = 1;
    if (rc == RLK_OK && (rc = rlk_handle_drive(&a, wait_ms)) == RLK_OK && term)
        *term = a.m.token;
    return rc;
}

int rlk_elect_term(rlk_elect *e, long long *term)
{
    int rc;

    if (!e || !term)
        return RLK_ERR_ARG;
    rc = rlk_handle_token(&e->b, "rlk_elect_owner", RLK_KIND_FENCED, RLK_ELECT_NOT_LEADING,
                          term);
    if (rc == RLK_OK && rlk_elect_passed(e)) {
        rc = rlk_set_error(e->b.c, RLK_ERR_NOT_OWNER, "election %s: the lease of term %lld has "
                           "passed (not renewed in time, or a fixed lease that ran out)",
                           e->b.name, *term);
        *term = 0;
    }
    return rc;
}

int rlk_elect_proclaim(rlk_elect *e, const char *value)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_proto_argvals v = {.owner = owner, .value = value, .secret = e ? e->secret : NULL};
    rlk_proto_outcome o;
    redisReply *r = NULL;
    rlk_acq_act x;
    int rc;

    if (!e)
        return RLK_ERR_ARG;
    if (rlk_acq_value(&rlk_elect_row, e->b.name, value, &x) == RLK_ACQ_END)
        return rlk_set_error(e->b.c, x.err, "%s", x.msg);
    if ((rc = rlk_elect_term(e, &v.term)) != RLK_OK ||
        (rc = rlk_elect_owner(e, owner, sizeof owner)) != RLK_OK)
        return rc;
    /* only the incarnation that leads proclaims (its secret) */
    if ((rc = rlk_handle_eval(&e->b, &rlk_elect_proclaim_call, &v, &r)) != RLK_OK)
        return rc;
    if (rlk_proto_read_proclaim(r, &o) == RLK_PROTO_BAD)
        rc = rlk_set_error(e->b.c, RLK_ERR_PROTOCOL, "election %s: %s replied type %d",
                           e->b.name, rlk_elect_proclaim_call.script, r->type);
    else if (o.is == RLK_PROTO_REFUSED)
        rc = rlk_set_error(e->b.c, o.err, "election %s: %s no longer leads in term %lld",
                           e->b.name, owner, v.term);
    freeReplyObject(r);
    return rc;
}

int rlk_elect_resign(rlk_elect *e)
{
    /* elect/resign (KEYS lock, lock channel, record, change channel; ARGV owner, lease,
     * publish, the handle's secret: only the incarnation that leads resigns) */
    return e ? rlk_handle_unlock(&e->b, &rlk_elect_row, "election", "rlk_elect_owner", e->b.q,
                                 e->secret)
             : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- observing */

void rlk_elect_info_clear(rlk_elect_info *i)
{
    if (!i)
        return;
    free(i->holder);
    free(i->value);
    memset(i, 0, sizeof *i);
}

/* A string reply's bytes, NUL-terminated; its length in *len (may be NULL). */
static char *rlk_elect_dup(const redisReply *r, size_t *len)
{
    char *s = malloc(r->len + 1);

    if (s && len)
        *len = r->len;
    return s ? memcpy(s, r->str, r->len + 1) : NULL;
}

int rlk_elect_leader(rlk_elect *e, rlk_elect_info *out)
{
    redisReply *r = NULL;
    int rc;

    if (!e || !out)
        return RLK_ERR_ARG;
    memset(out, 0, sizeof *out);
    if ((rc = rlk_handle_eval(&e->b, &rlk_elect_leader_call, NULL, &r)) != RLK_OK)
        return rc;
    rc = rlk_elect_info_read(r, out);
    freeReplyObject(r);
    if (rc == RLK_ERR_PROTOCOL)
        return rlk_set_error(e->b.c, rc, "election %s: elect/leader replied an unexpected shape",
                             e->b.name);
    if (rc == RLK_ERR_NOMEM)
        return rlk_set_error(e->b.c, rc, "election %s: out of memory", e->b.name);
    return rc;
}

/* Whether two reads tell the same leadership (ttl aside). */
int rlk_elect_info_same(const rlk_elect_info *a, const rlk_elect_info *b)
{
    return a->leader == b->leader && a->term == b->term &&
           strcmp(a->holder ? a->holder : "", b->holder ? b->holder : "") == 0 &&
           a->value_len == b->value_len &&
           (a->value_len == 0 || memcmp(a->value, b->value, a->value_len) == 0);
}

int rlk_elect_wait_change(rlk_elect *e, const rlk_elect_info *known, long long timeout_ms,
                          rlk_elect_info *out)
{
    long long deadline, now, end;
    rlk_sub_chan *ch = NULL;
    rlk_sub *sub;
    int rc;

    if (!e || !known || !out)
        return RLK_ERR_ARG;
    memset(out, 0, sizeof *out);
    deadline = rlk_wait_deadline(rlk_clock_now_ns(), timeout_ms);
    sub = e->b.rt->sub;
    if ((rc = rlk_sub_join(sub, e->b.key[RLK_PROTO_KEY_CHANNEL], NULL, &ch)) != RLK_OK)
        return rc;
    for (;;) {
        unsigned long long mark = 0;
        long long until = deadline;
        int ready = rlk_sub_ready(sub, ch, deadline, &mark), away;

        if (ready == RLK_SUB_TIMEOUT) {
            rc = RLK_ERR_TIMEOUT;
            break;
        }
        /* Subscribed (or the subscriber is down): a change from now on is
         * either in this read or wakes the wait below. */
        rc = rlk_elect_leader(e, out);
        away = rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT;
        if (rc == RLK_OK ? !rlk_elect_info_same(known, out) : !away)
            break;
        now = rlk_clock_now_ns();
        /* The server out of reach (a restart, a failover, a network cut): ride it out, reading
         * again every 100 ms until the wait's deadline, as the async observer does; past it,
         * the read's error. A lease that runs out publishes nothing: wake at its end (and poll
         * every 100 ms while the subscriber is down). */
        end = away ? now + 100 * 1000000LL
              : out->leader && out->ttl_ms >= 0 ? now + (out->ttl_ms + 1) * 1000000LL : -1;
        if (ready == RLK_SUB_DOWN && (end < 0 || end > now + 100 * 1000000LL))
            end = now + 100 * 1000000LL;
        until = rlk_clock_until_min(until, end);
        rlk_elect_info_clear(out);
        if (deadline >= 0 && now >= deadline) {
            rc = away ? rc : RLK_ERR_TIMEOUT;
            break;
        }
        rlk_sub_wait(sub, ch, mark, until, NULL);
        if (atomic_load(&e->b.rt->interrupted)) {
            rc = RLK_ERR_INTERRUPTED;
            break;
        }
    }
    rlk_sub_leave(sub, ch);
    if (rc != RLK_OK && rc != RLK_ERR_TIMEOUT)
        rlk_elect_info_clear(out);
    if (rc == RLK_ERR_TIMEOUT)
        rlk_set_error(e->b.c, RLK_ERR_TIMEOUT, "election %s: no change within %lld ms", e->b.name,
                      timeout_ms);
    return rc;
}

/* ---------------------------------------------------------------- shared with async/a_elect.c */

int rlk_elect_info_read(const redisReply *r, rlk_elect_info *out)
{
    memset(out, 0, sizeof *out);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 4 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_INTEGER ||
        r->element[2]->type != REDIS_REPLY_STRING || r->element[3]->type != REDIS_REPLY_INTEGER)
        return RLK_ERR_PROTOCOL;
    out->holder = rlk_elect_dup(r->element[0], NULL);
    out->value = rlk_elect_dup(r->element[2], &out->value_len);
    out->term = r->element[1]->integer;
    out->ttl_ms = r->element[3]->integer;
    out->leader = r->element[0]->len > 0;
    if (!out->holder || !out->value) {
        rlk_elect_info_clear(out);
        return RLK_ERR_NOMEM;
    }
    return RLK_OK;
}
