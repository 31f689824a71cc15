/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fam_hold.c - acquiring and releasing as the lock kinds all do it (fam_hold.h): the release
 * ordered after the registry's last renewal, force unlock, the queries of a lock hash.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/clock.h"
#include "client/error.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/lq.h"
#include "runtime/rt.h"
#include "runtime/wd.h"

/* The holder id of b's handle into owner (RLK_OWNER_MAX + 1 bytes); its mutex only is taken. */
static int rlk_fam_owner(const rlk_fam_base *b, char *owner, const char *owner_fn)
{
    return rlk_fam_id_get(b->c, b->rt, (rlk_fam_id *)&b->id, owner, RLK_OWNER_MAX + 1, owner_fn);
}

/* cmd on the lock hash, with a holder's field when field is not NULL. */
static int rlk_fam_hash_query(const rlk_fam_base *b, const char *cmd, const char *field,
                              long long nil_value, long long *out)
{
    const char *argv[3] = {cmd, b->name, field};

    return rlk_fam_query(b->c, b->name, field ? 3 : 2, argv, nil_value, out);
}

/* ---------------------------------------------------------------- releasing */

int rlk_fam_release_read(const redisReply *r)
{
    if (r->type == REDIS_REPLY_NIL)
        return RLK_REL_NOT_OWNER;
    if (r->type == REDIS_REPLY_INTEGER && r->integer >= 0 && r->integer <= 3)
        return r->integer ? RLK_REL_RELEASED : RLK_REL_STILL_HELD;  /* 2, 3: and handed over
                                                                       (3: held) */
    return RLK_REL_ERROR;
}

int rlk_fam_release_done(rlk_client *c, const char *label, const char *name, int call_rc,
                         redisReply *r, int *rc)
{
    int outcome = RLK_REL_ERROR;

    if ((*rc = call_rc) == RLK_OK) {
        if ((outcome = rlk_fam_release_read(r)) == RLK_REL_ERROR)
            *rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "unlock %s: %s replied type %d", name,
                                label, r->type);
        freeReplyObject(r);
        /* It wrote: did enough replicas see it? */
        if (outcome != RLK_REL_ERROR && outcome != RLK_REL_NOT_OWNER)
            *rc = rlk_fam_acks_done(c, "unlock", name, outcome == RLK_REL_RELEASED
                                    ? "released" : "released one hold (still held)");
    }
    return outcome;
}

int rlk_fam_undone(int outcome, int rc)
{
    if (outcome == RLK_REL_RELEASED || outcome == RLK_REL_STILL_HELD)
        return RLK_OK;
    return rc != RLK_OK ? rc : RLK_ERR_NOT_OWNER;
}

int rlk_fam_acl_refused(const rlk_client *c)
{
    const char *e = rlk_errstr(c);

    return strstr(e, "The user executing the script can't") != NULL ||
           strstr(e, "ACL failure in script") != NULL;
}

int rlk_fam_acl_said(rlk_client *c, const char *op, const char *why, int there, const char *done,
                     const char *still)
{
    if (there == 0)
        return rlk_set_error(c, RLK_ERR_NOTIFY, "%s: %s, but the unlock message was refused by "
                             "ACL (%s): waiters wake only at their TTL", op, done, why);
    return rlk_set_error(c, RLK_ERR_SCRIPT, "%s: refused by ACL (%s); %s%s%s", op, why,
                         there == 1 ? still : "whether it was ", there == 1 ? "" : done,
                         there == 1 ? "" : " is unknown (the check was refused too)");
}

int rlk_fam_acl_after(const rlk_fam_base *b, const char *op, const char *field,
                             const char *done, const char *still)
{
    long long n = 0;
    rlk_fam_err e;

    rlk_fam_err_keep(b->c, &e);
    if (rlk_fam_hash_query(b, field ? "HEXISTS" : "EXISTS", field, 0, &n) != RLK_OK)
        n = -1;     /* refused too */
    return rlk_fam_acl_said(b->c, op, e.msg, n < 0 ? -1 : n > 0, done, still);
}

int rlk_fam_force_done(const rlk_fam_base *b, int rc, redisReply *r, rlk_lq *q, int *released)
{
    int gone = 0;

    if (rc == RLK_ERR_SCRIPT && rlk_fam_acl_refused(b->c)) {
        char op[RLK_ERRSTR_MAX];

        snprintf(op, sizeof op, "force unlock %s", b->name);
        rc = rlk_fam_acl_after(b, op, NULL, "removed", "the lock is still there");
        gone = rc == RLK_ERR_NOTIFY;
    } else if (rc == RLK_OK) {
        if (r->type == REDIS_REPLY_INTEGER)
            gone = r->integer == 1;
        else
            rc = rlk_set_error(b->c, RLK_ERR_PROTOCOL, "force unlock %s: reply type %d", b->name,
                               r->type);
        freeReplyObject(r);
    }
    if (released && (rc == RLK_OK || gone))    /* told only when known */
        *released = gone;
    if (gone && q)
        rlk_lq_poke(q);
    return rc;
}

/* ---------------------------------------------------------------- queries */

int rlk_fam_is_locked(const rlk_fam_base *b, int *locked)
{
    long long n = 0;
    int rc;

    if (!b || !locked)
        return RLK_ERR_ARG;
    rc = rlk_fam_hash_query(b, "EXISTS", NULL, 0, &n);
    *locked = rc == RLK_OK && n > 0;
    return rc;
}

int rlk_fam_is_held(const rlk_fam_base *b, int kind, const char *owner_fn, int *held)
{
    char owner[RLK_OWNER_MAX + 1], field[RLK_OWNER_MAX + 8];
    long long n = 0, start_ns, lease_ms, kind_data;
    int rc;

    if (!b || !held)
        return RLK_ERR_ARG;
    *held = 0;
    if ((rc = rlk_fam_owner(b, owner, owner_fn)) != RLK_OK)
        return rc;
    /* Declared lost by the watchdog (and not taken again since): not held. */
    if (rlk_wd_lease_of(b->rt->wd, kind, b->name, owner, &start_ns, &lease_ms, &kind_data) == 2)
        return RLK_OK;
    rlk_fam_count_field(kind, owner, field, sizeof field);
    rc = rlk_fam_hash_query(b, "HEXISTS", field, 0, &n);
    *held = rc == RLK_OK && n == 1;
    return rc;
}

int rlk_fam_held_lease(const rlk_fam_base *b, int kind, const char *owner_fn, long long *start_ns,
                       long long *deadline_ns)
{
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms = 0, delay_ms = 0;
    int found, rc;

    if (!b || !start_ns || !deadline_ns)
        return RLK_ERR_ARG;
    if ((rc = rlk_fam_owner(b, owner, owner_fn)) != RLK_OK)
        return rc;
    found = rlk_wd_lease_of(b->rt->wd, kind, b->name, owner, start_ns, &lease_ms, &delay_ms);
    if (!found) {
        *start_ns = *deadline_ns = 0;
        return rlk_set_error(b->c, RLK_ERR_NOT_OWNER, "%s %s: not held by %s (no lease to read)",
                             rlk_kind_name(kind), b->name, owner);
    }
    *deadline_ns = *start_ns + lease_ms * RLK_NS_PER_MS;
    if (found == 2)
        return rlk_set_error(b->c, RLK_ERR_LOST, "%s %s: declared lost (the lease it was lost "
                             "with)", rlk_kind_name(kind), b->name);
    return RLK_OK;
}

int rlk_fam_hold_count(const rlk_fam_base *b, int kind, const char *owner_fn, long long *count)
{
    char owner[RLK_OWNER_MAX + 1], field[RLK_OWNER_MAX + 8];
    int rc;

    if (!b || !count)
        return RLK_ERR_ARG;
    *count = 0;
    if ((rc = rlk_fam_owner(b, owner, owner_fn)) != RLK_OK)
        return rc;
    rlk_fam_count_field(kind, owner, field, sizeof field);
    return rlk_fam_hash_query(b, "HGET", field, 0, count);
}

int rlk_fam_remaining_ttl(const rlk_fam_base *b, long long *ttl_ms)
{
    return b && ttl_ms ? rlk_fam_hash_query(b, "PTTL", NULL, -2, ttl_ms) : RLK_ERR_ARG;
}
