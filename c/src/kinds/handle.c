/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.c - what the kinds' public functions share (handle.h): a holder
 * id read through a const handle, the holder id and local queue of a kind
 * whose waiters queue in the process, the head of an acquisition call and
 * its undo through the kind's release call, the message of a wait that ran
 * out, the token of a recorded hold, the metrics of a counted call, and a
 * kind's call built from its kinds/proto row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/handle.h"
#include "runtime/lq.h"
#include "runtime/wd.h"

int rlk_handle_owner(const rlk_fam_base *b, const rlk_fam_id *id, char *buf, size_t len,
                     const char *what)
{
    return rlk_fam_id_get(b->c, b->rt, (rlk_fam_id *)id, buf, len, what);
}

int rlk_handle_queue_init(rlk_client *c, rlk_fam_id *id, rlk_lq **q, const char *key)
{
    rlk_fam_id_init(id);
    *q = rlk_lq_get(c->addr, c->url.db, key);
    return *q != NULL;
}

void rlk_handle_queue_fini(rlk_fam_id *id, rlk_lq *q)
{
    rlk_lq_put(q);
    rlk_fam_id_destroy(id);
}

int rlk_handle_acq_start(rlk_handle_acq *a, void *handle, const rlk_fam_base *b, rlk_fam_id *id,
                         const char *owner_fn, const char *what, long long lease_ms,
                         rlk_fam_release_fn release)
{
    int rc;

    memset(a, 0, sizeof *a);
    a->handle = handle;
    a->release = release;
    rc = rlk_fam_lease(b->c, what, b->name, lease_ms, &a->lease_ms, &a->watchdog);
    if (rc != RLK_OK)
        return rc;
    snprintf(a->lease, sizeof a->lease, "%lld", a->lease_ms);
    return rlk_fam_id_get(b->c, b->rt, id, a->owner, sizeof a->owner, owner_fn);
}

int rlk_handle_undo(void *arg)
{
    rlk_handle_acq *a = arg;
    int rc, outcome = a->release(a->handle, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

int rlk_handle_token(const rlk_fam_base *b, rlk_fam_id *id, const char *owner_fn, int kind,
                     const char *not_held, long long *token)
{
    char owner[RLK_OWNER_MAX + 1];
    int rc;

    *token = 0;
    if ((rc = rlk_fam_id_get(b->c, b->rt, id, owner, sizeof owner, owner_fn)) != RLK_OK)
        return rc;
    if (!rlk_wd_token_of(b->rt->wd, kind, b->name, owner, token))
        return rlk_set_error(b->c, RLK_ERR_NOT_OWNER, not_held, b->name, owner);
    return RLK_OK;
}

int rlk_handle_busy(const rlk_fam_base *b, const char *what, const char *why, long long start_ns)
{
    return rlk_set_error(b->c, RLK_ERR_BUSY, "%s %s: %s after %lld ms", what, b->name, why,
                         (rlk_clock_now_ns() - start_ns) / 1000000LL);
}

rlk_handle_call rlk_handle_call_begin(const rlk_fam_base *b)
{
    rlk_handle_call hc = {.name = b ? b->name : NULL};

    rlk_metrics_begin(b ? &b->rt->counters : NULL, &hc.mc);
    return hc;
}

int rlk_handle_call_end(rlk_handle_call *hc, int metric, int rc)
{
    return rlk_metrics_end(&hc->mc, metric, hc->name, rc);
}

int rlk_handle_keys(rlk_fam_base *b, const char *names, const char *roles)
{
    const char *out[RLK_PROTO_ROLES];
    rlk_proto_keys ks;
    int n;

    rlk_proto_keys_init(&ks, names, b->name);
    n = rlk_proto_keys_list(&ks, roles, out, RLK_PROTO_ROLES);
    for (int i = 0; i < ks.n; i++)
        b->key[ks.role[i]] = ks.key[i];     /* handed over: freed with the base */
    b->keys_of = names;
    return n >= 0;
}

int rlk_handle_evalx(const rlk_fam_base *b, const char *script, const char *args,
                     const char *opt, const rlk_proto_argvals *vals, redisReply **r)
{
    rlk_proto_call pc = {script, args};
    rlk_proto_argvals v = *vals;
    rlk_proto_built pb;
    int rc = RLK_ERR_NOMEM;

    if (!v.publish)
        v.publish = rlk_publish_arg(b->c);
    if (rlk_proto_build_with(&pc, opt, b->keys_of, b->key, b->name, &v, &pb) == 0)
        rc = rlk_evalv(b->c, script, pb.nkeys, pb.keys, NULL, pb.nargs, pb.av.v, pb.av.len, r);
    else
        rlk_set_error(b->c, RLK_ERR_NOMEM, "%s %s: out of memory", script, b->name);
    rlk_proto_built_free(&pb);
    return rc;
}

int rlk_handle_eval(const rlk_fam_base *b, const char *script, const char *args,
                    const rlk_proto_argvals *vals, redisReply **r)
{
    return rlk_handle_evalx(b, script, args, NULL, vals, r);
}

int rlk_handle_release(const rlk_fam_base *b, const rlk_proto *row, const char *label,
                       const char *opt, const char *owner, long long lease, const char *secret,
                       int *rc)
{
    rlk_proto_argvals v = {.owner = owner, .lease_ms = lease, .secret = secret};
    redisReply *r = NULL;
    int call_rc = rlk_handle_evalx(b, row->release, row->release_args, opt, &v, &r);

    return rlk_fam_release_done(b->c, label, b->name, call_rc, r, rc);
}

int rlk_handle_force(const rlk_fam_base *b, const rlk_proto *row, const char *opt,
                     const char *mode, int named, rlk_lq *q, int *released)
{
    rlk_proto_argvals v = {.mode = mode};
    redisReply *r = NULL;
    char args[64];
    int rc;

    snprintf(args, sizeof args, "%s%s", row->force_args, named ? " named" : "");
    rlk_wd_forget_name(b->rt->wd, b->name);
    rc = rlk_handle_evalx(b, row->force, args, opt, &v, &r);
    return rlk_fam_force_done(b, rc, r, q, released);
}

void rlk_handle_cancel(const rlk_fam_base *b, const rlk_proto *row, const rlk_proto_argvals *vals,
                       int bounded)
{
    char saved[RLK_ERRSTR_MAX];
    redisReply *r = NULL;
    int err = rlk_err(b->c);
    long long limit = rlk_time_limit_enter(bounded ? rlk_clock_now_ns() + RLK_FAM_CANCEL_NS : 0);

    snprintf(saved, sizeof saved, "%s", rlk_errstr(b->c));
    if (rlk_handle_eval(b, row->cancel, row->cancel_args, vals, &r) == RLK_OK)
        freeReplyObject(r);
    else
        rlk_set_error(b->c, err, "%s", saved);
    rlk_time_limit_leave(limit);
}

int rlk_handle_evalt(const rlk_fam_base *b, const rlk_proto_call *pc,
                     const rlk_proto_argvals *vals, size_t ntail, const char *const *tail,
                     const size_t *lens, long long *out, redisReply **r)
{
    rlk_proto_argvals v = {0};
    rlk_proto_built pb;
    redisReply *reply = NULL;
    const char **args = NULL;
    size_t *alens = NULL, n;
    int rc = RLK_ERR_NOMEM;

    if (vals)
        v = *vals;
    if (!v.publish)
        v.publish = rlk_publish_arg(b->c);
    if (rlk_proto_build(pc, b->name, &v, &pb) == 0 &&
        (args = malloc(((size_t)pb.nargs + ntail) * sizeof *args)) &&
        (alens = malloc(((size_t)pb.nargs + ntail) * sizeof *alens))) {
        memcpy(args, pb.av.v, (size_t)pb.nargs * sizeof *args);
        memcpy(alens, pb.av.len, (size_t)pb.nargs * sizeof *alens);
        for (n = 0; n < ntail; n++) {
            args[(size_t)pb.nargs + n] = tail[n];
            alens[(size_t)pb.nargs + n] = lens ? lens[n] : strlen(tail[n]);
        }
        rc = rlk_evalv(b->c, pc->script, pb.nkeys, pb.keys, NULL, pb.nargs + (int)ntail, args,
                       alens, out ? &reply : r);
    } else
        rlk_set_error(b->c, RLK_ERR_NOMEM, "%s %s: out of memory", pc->script, b->name);
    free(args);
    free(alens);
    rlk_proto_built_free(&pb);
    if (rc == RLK_OK && out && reply->type != REDIS_REPLY_INTEGER)
        rc = rlk_set_error(b->c, RLK_ERR_PROTOCOL, "%s %s: reply of type %d, expected an integer",
                           pc->script, b->name, reply->type);
    else if (rc == RLK_OK && out)
        *out = reply->integer;
    if (reply)
        freeReplyObject(reply);
    return rc;
}

int rlk_handle_int(const rlk_fam_base *b, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                   long long *out)
{
    long long n = 0;
    int rc = rlk_handle_evalt(b, pc, vals, 0, NULL, NULL, &n, NULL);

    if (rc == RLK_OK && out)
        *out = n;
    return rc;
}

int rlk_handle_write(const rlk_fam_base *b, const char *what, const char *field, long long v,
                     long long lo, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                     long long *out)
{
    int rc = field ? rlk_fam_check_range(b->c, what, b->name, field, v, lo, RLK_NUM_MAX) : RLK_OK;

    if (rc == RLK_OK)
        rc = rlk_handle_int(b, pc, vals, out);
    return rc == RLK_OK ? rlk_fam_acks_done(b->c, what, b->name, "done") : rc;
}
