/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.c - what the kinds' public functions share (handle.h), the one
 * blocking driver of the lock kinds' rows among it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "runtime/lq.h"
#include "runtime/spin.h"
#include "runtime/wait.h"
#include "runtime/wd.h"

int rlk_handle_owner(const rlk_fam_base *b, char *buf, size_t len, const char *what)
{
    return rlk_fam_id_get(b->c, b->rt, (rlk_fam_id *)&b->id, buf, len, what);
}

int rlk_handle_evalt(const rlk_fam_base *b, const rlk_proto_call *pc, const char *opt,
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
    if (rlk_proto_build_with(pc, opt, b->keys_of, b->key, b->name, &v, &pb) == 0 &&
        (args = malloc(((size_t)pb.nargs + ntail + 1) * sizeof *args)) &&
        (alens = malloc(((size_t)pb.nargs + ntail + 1) * sizeof *alens))) {
        memcpy(args, pb.av.v, (size_t)pb.nargs * sizeof *args);
        memcpy(alens, pb.av.len, (size_t)pb.nargs * sizeof *alens);
        for (n = 0; n < ntail; n++) {
            args[(size_t)pb.nargs + n] = tail[n];
            alens[(size_t)pb.nargs + n] = lens ? lens[n] : strlen(tail[n]);
        }
        rc = rlk_evalv(b->c, pc->script, pb.nkeys, pb.keys, NULL, pb.nargs + (int)ntail, args,
                       alens, r ? r : &reply);
    } else
        rlk_set_error(b->c, RLK_ERR_NOMEM, "%s %s: out of memory", pc->script, b->name);
    free(args);
    free(alens);
    rlk_proto_built_free(&pb);
    if (rc == RLK_OK && !r && reply->type != REDIS_REPLY_INTEGER)
        rc = rlk_set_error(b->c, RLK_ERR_PROTOCOL, "%s %s: reply of type %d, expected an integer",
                           pc->script, b->name, reply->type);
    else if (rc == RLK_OK && out && !r)
        *out = reply->integer;
    if (reply)
        freeReplyObject(reply);
    return rc;
}

/* A release by a lock kind's row: its release script and ARGV, its optional KEYS, the
 * election's secret; read by rlk_fam_release_done, which names the script in its message. */
typedef struct rlk_handle_rel {
    const rlk_fam_base *b;
    const rlk_proto *row;
    const char *secret;
} rlk_handle_rel;

/* rlk_fam_release_fn of an rlk_handle_rel (arg). */
static int rlk_handle_released(void *arg, const char *owner, long long lease, int *rc)
{
    const rlk_handle_rel *rel = arg;
    rlk_proto_call pc = {rel->row->release, rel->row->release_args};
    rlk_proto_argvals v = {.owner = owner, .lease_ms = lease, .secret = rel->secret};
    redisReply *r = NULL;
    int call_rc = rlk_handle_evalt(rel->b, &pc, rel->row->opt_keys, &v, 0, NULL, NULL, NULL, &r);

    return rlk_fam_release_done(rel->b->c, rel->row->release, rel->b->name, call_rc, r, rc);
}

int rlk_handle_undo(void *arg)
{
    rlk_handle_acq *a = arg;
    rlk_handle_rel rel = {a->b, a->row, a->v.secret};
    int rc, outcome = a->release ? a->release(a->handle, a->owner, a->lease_ms, &rc)
                                 : rlk_handle_released(&rel, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

/* The settle of a lost acquire (rlk_handle_acq.settle) but the faster MultiLock's: the lock
 * family's (runtime/fam_settle.h), a token kind's token read back with its count. */
static int rlk_handle_lost(rlk_handle_acq *a, int rc, long long sent)
{
    const int token = (a->row->flags & RLK_PROTO_TOKEN) != 0;

    return rlk_fam_acquire_lost(a->b, rc, &a->h, a->lease_ms, a->watchdog, sent, a->row->held,
                                token ? a->b->key[RLK_PROTO_KEY_TOKEN] : NULL,
                                token ? &a->token : NULL, rlk_handle_undo, a);
}

int rlk_handle_acq_start(rlk_handle_acq *a, void *handle, const rlk_fam_base *b,
                         const char *owner_fn, const char *what, long long lease_ms,
                         rlk_fam_release_fn release)
{
    int rc;

    memset(a, 0, sizeof *a);
    a->start_ns = rlk_clock_now_ns();
    a->handle = handle;
    a->release = release;
    a->b = b;
    a->what = what;
    a->q = b->q;
    a->settle = rlk_handle_lost;
    rc = rlk_fam_lease(b->c, what, b->name, lease_ms, &a->lease_ms, &a->watchdog);
    if (rc != RLK_OK)
        return rc;
    return rlk_handle_owner(b, a->owner, sizeof a->owner, owner_fn);
}

int rlk_handle_unlock(rlk_fam_base *b, const rlk_proto *row, const char *what,
                      const char *owner_fn, rlk_lq *q, const char *secret)
{
    rlk_handle_rel rel = {b, row, secret};

    return rlk_fam_unlock(b, row->hold, what, owner_fn, q, rlk_handle_released, &rel);
}

/* ---------------------------------------------------------------- the driver */

#define RLK_HANDLE_FAIR_CANCEL_NS (300LL * 1000000LL)  /* a fair waiter's cancel: 300 ms at most */

static int rlk_handle_reentry(const rlk_handle_acq *a)
{
    return rlk_set_error(a->b->c, RLK_ERR_REENTRY, "%s %s: already held by %s; not acquired again",
                         a->row->what, a->b->name, a->owner);
}

/* A script's refusal of attempt again (a->b's last error): RLK_OK to send the acquire once
 * more, else the error to return. */
static int rlk_handle_refused(rlk_handle_acq *a, int rc, int again)
{
    const rlk_fam_base *b = a->b;
    int err = rc == RLK_ERR_SCRIPT ? rlk_proto_refusal(rlk_errstr(b->c)) : 0;

    if (err == RLK_ERR_UPGRADE)
        return rlk_set_error(b->c, RLK_ERR_UPGRADE, "%s %s: %s holds a read of it; release every "
                             "read before taking the write lock (no upgrade)", a->what, b->name,
                             a->owner);
    if (err != RLK_ERR_REENTRY || !(a->row->flags & RLK_PROTO_NON_REENTRANT))
        return rc;
    /* The server counts a hold of this owner that the registry does not (it was checked
     * before any I/O): when this thread's last unsettled call was of this hold (an acquire
     * reported RLK_ERR_UNSETTLED that ran after all, or a release that never will), that is
     * the hold, one the caller was told it did not get or gave up. Given back, as a
     * reentrant lock's next acquisition gives back such holds, then acquired anew. */
    if (again || !rlk_fam_doubt_take(b->c, a->h.kind, b->name, a->owner))
        return rlk_handle_reentry(a);
    rlk_fam_give_back(b->rt, &a->h, 1, rlk_handle_undo, a);
    return RLK_OK;
}

/* rlk_wait_attempt_fn of rlk_handle_drive. RLK_OK: acquired (recorded in the
 * registry). RLK_ERR_BUSY: held against it, *ttl the holder's PTTL (-1:
 * none), a reservation's (a->reserved), or RLK_WAIT_RECHECK (-3: first in the
 * queue behind another ticket's reservation); no error recorded. Else an error. */
static int rlk_handle_attempt(void *arg, long long *ttl)
{
    rlk_handle_acq *a = arg;
    const rlk_fam_base *b = a->b;
    const rlk_proto *row = a->row;
    const int token = (row->flags & RLK_PROTO_TOKEN) != 0;
    long long sent;
    rlk_proto_outcome o;
    redisReply *r = NULL;
    int rc;

    a->v.ticket = rlk_wait_ticket_arg(&a->ticket, a->queued);  /* 0: does not queue */
    a->reserved = 0;
    a->tl.rx_ns = a->ticket.rx_ns;      /* what woke this attempt, if anything */
    a->tl.woken_ns = a->ticket.woken_ns;
    a->ticket.rx_ns = a->ticket.woken_ns = 0;
    for (int again = 0;; again++) {
        if (!a->quiet)
            RLK_RT_COUNT(b->rt, acquire_calls);
        a->tl.claim_sent_ns = sent = rlk_clock_now_ns();
        rc = rlk_handle_evalt(b, &a->acquire, row->opt_keys, &a->v, a->ntail, a->tail, NULL,
                              NULL, &r);
        a->tl.claim_done_ns = rlk_clock_now_ns();
        if (rc == RLK_OK || (rc = rlk_handle_refused(a, rc, again)) != RLK_OK)
            break;
    }
    if (rc == RLK_ERR_UPGRADE || rc == RLK_ERR_REENTRY)
        return rc;
    if (rc != RLK_OK) {
        if (a->v.ticket)
            a->queued = 1;  /* it may have run: the next attempt looks before it queues */
        rc = a->settle(a, rc, sent);
    } else {
        /* {wait, 1}: first in the queue; {wait, first, 1}: free, in its lock-delay; a reader's
         * {grant PTTL, 0}: the free lock reserved for a writer */
        if (rlk_proto_read_acquire(r, token, &o) == RLK_PROTO_BUSY &&
            r->type == REDIS_REPLY_ARRAY) {
            *ttl = o.value;
            a->wide = o.first;
            a->reserved = !o.first && row->wait == RLK_PROTO_WAIT_CHANNEL;
            if (o.in_delay)
                RLK_RT_COUNT(b->rt, delay_refusals);
            rc = RLK_ERR_BUSY;
        } else {
            rc = rlk_fam_acquire_reply(b->c, a->what, b->name, a->acquire.script, r, ttl,
                                       token ? &a->token : NULL);
            a->wide = rc == RLK_ERR_BUSY && *ttl == RLK_WAIT_RECHECK;
        }
        freeReplyObject(r);
        if (rc == RLK_ERR_BUSY && a->ttl_cap > 0 && (*ttl < 0 || *ttl > a->ttl_cap))
            *ttl = a->ttl_cap;
        if (rc == RLK_ERR_BUSY && a->v.ticket) {
            a->queued = 1;
            rlk_lq_note_first(a->q, a->wide);
        } else if (rc == RLK_OK && a->ticket.ticket && !a->queued)
            rlk_lq_note_first(a->q, 0);     /* taken at once: nobody to wait for, no hint */
        if (rc == RLK_OK) {
            a->queued = 0;
            rc = rlk_fam_record(b->rt, &a->h, a->lease_ms, a->watchdog, sent, a->token,
                                rlk_handle_undo, a);
        }
    }
    /* The hold's datum, by the acquisition that made the entry only (a re-entry keeps the
     * hold's) */
    if (rc == RLK_OK && a->note_data)
        rlk_wd_set_kind_data(b->rt->wd, a->h.kind, b->name, a->owner, a->v.delay_ms);
    return rc;
}

/* A wait that ran out: RLK_ERR_BUSY, recorded. */
static int rlk_handle_busy(const rlk_handle_acq *a)
{
    return rlk_set_error(a->b->c, RLK_ERR_BUSY, "%s %s: %s after %lld ms", a->what, a->b->name,
                         a->why, (rlk_clock_now_ns() - a->start_ns) / 1000000LL);
}

/* A waiter with a ticket in the server's queue (RLK_PROTO_WAIT_QUEUE: the reentrant lock,
 * the read-write lock's writers), woken by the grant that names it on this client's wake
 * channel, and listening on the lock's channel only while first in the queue
 * (docs/runtime.md, "Who is queued when", "Who a handoff wakes"); behind the local queue
 * first: only its head attempts, so only a head ever holds a ticket in the server's queue (a
 * thread queued there while asleep here would miss its grant). *first: attempt at once. */
static int rlk_handle_queue(rlk_handle_acq *a, rlk_waiter *w, rlk_lq_node *node,
                            long long deadline, int *first)
{
    const rlk_fam_base *b = a->b;
    int rc, wakes;

    /* A wake ticket, or a plain one where a grant's reach is not counted (names.h). */
    a->ticket.ticket = rlk_names_queue_ticket(rlk_client_counts_exact(b->c), b->rt->uuid);
    a->ticket.claim_ns = (RLK_FAM_CLAIM_MS + 5) * 1000000LL;
    wakes = rlk_names_ticket_wakes(a->ticket.ticket);
    w->ticket = &a->ticket;
    w->keepalive_ms = 1000;             /* a queued waiter attempts at least this often */
    w->recheck_ms = RLK_FAM_CLAIM_MS + 5;   /* the acquire's -3: a dead grantee is skipped */
    w->channel = wakes ? b->wake : b->channel;
    w->wide_channel = b->channel;
    w->wide = wakes ? &a->wide : NULL;
    rc = rlk_lq_enter(a->q, node, deadline);
    if (rc == RLK_ERR_NOMEM)
        return rlk_set_error(b->c, rc, "%s %s: out of resources for a waiter", a->what, b->name);
    if (rc != RLK_OK)
        return RLK_ERR_BUSY;
    w->entered = node;
    /* Expecting to be first in the server's queue (as the last head of this process was):
     * join the lock's channel too and make the first attempt once subscribed, not twice. */
    w->wide_early = w->wide && rlk_lq_expects_first(a->q);
    *first = !node->waited && !w->wide_early;
    if (*first)
        rlk_wait_pre_join(w);
    return RLK_OK;
}

int rlk_handle_drive(rlk_handle_acq *a, long long wait_ms)
{
    const rlk_fam_base *b = a->b;
    const rlk_proto *row = a->row;
    rlk_proto_keys ks;
    rlk_lq_node node;
    rlk_waiter w;
    char *own = NULL;
    int rc = RLK_OK, first, wait = a->spin_max_ms > 0 ? RLK_PROTO_WAIT_SPIN : row->wait;

    a->v.lease_ms = a->lease_ms;
    a->v.owner = a->owner;
    if (!a->acquire.script)
        a->acquire = (rlk_proto_call){row->acquire, row->acquire_args};
    a->h = (rlk_hold_spec){row->hold, b->name, a->owner, 0, {NULL}, b->channel, row->renew,
                           /* a queued waiter waits elsewhere: no lingering there */
                           row->wait == RLK_PROTO_WAIT_QUEUE || row->wait == RLK_PROTO_WAIT_SPIN};
    rlk_proto_keys_init(&ks, b->keys_of, b->name);  /* the renew KEYS: made with the handle */
    a->h.nkeys = rlk_proto_keys_list_with(&ks, b->key, row->renew_keys, a->h.keys,
                                          RLK_HOLD_KEYS_MAX);
    rlk_proto_keys_free(&ks);
    if (row->flags & RLK_PROTO_VALUES)
        a->h.channel = NULL;    /* every release in the group publishes there, and each would
                                   make the watchdog renew this entry at once */
    a->reentry = rlk_wd_holds_as(b->rt->wd, row->hold, b->name, a->owner);
    /* A hold this client records: refused before any I/O (it would only be refused by the
     * script, or wait behind itself); or, one hold only, its token with nothing sent (a second
     * hold would count twice in the registry but once on the server). */
    if (a->reentry && (row->flags & RLK_PROTO_NON_REENTRANT))
        return rlk_handle_reentry(a);
    if ((row->flags & RLK_PROTO_ONE_HOLD) &&
        rlk_wd_token_of(b->rt->wd, row->hold, b->name, a->owner, &a->token))
        return RLK_OK;
    if (wait == RLK_PROTO_WAIT_SPIN) {
        a->h.channel = NULL;        /* no SUBSCRIBE, holding either */
        rc = rlk_spin_acquire(b->rt, a->what, b->name, rlk_handle_attempt, a, a->start_ns,
                              wait_ms, a->spin_initial_ms, a->spin_max_ms);
        return rc == RLK_ERR_BUSY ? rlk_handle_busy(a) : rc;
    }
    rlk_wait_init_lock(&w, b, a->what, rlk_handle_attempt, a);
    if (row->grants)
        w.rule = row->grants;   /* a re-entry or single try on the lock's channel reads its
                                   grants too (a queued waiter: rlk_handle_queue) */
    w.q = a->q;
    w.ride_out = !(row->flags & RLK_PROTO_VALUES);  /* a lost acquire is not repeated blindly */
    w.not_ttl = &a->reserved;   /* a reader that waited out a writer's claim window: no message
                                   was due, nothing died (no ttl_wakeups) */
    /* Only the head of the local queue waits; one attempt straight away when it cannot
     * overtake a local waiter: a single try, a re-entry, or nobody queued here. */
    first = !a->q || wait_ms == 0 || a->reentry || !rlk_lq_busy(a->q);
    if (wait == RLK_PROTO_WAIT_QUEUE && wait_ms != 0 && !a->reentry)
        rc = rlk_handle_queue(a, &w, &node, rlk_wait_deadline(a->start_ns, wait_ms), &first);
    if (wait == RLK_PROTO_WAIT_FAIR && wait_ms != 0) {
        /* The owner's own channel, joined already when it is still subscribed from an
         * earlier wait of this client (it lingers): the first attempt then counts as one made
         * once subscribed, and no second attempt follows it before the first sleep. */
        if (!(own = rlk_names_waiter_channel(b->name, a->owner, strlen(a->owner))))
            return rlk_set_error(b->c, RLK_ERR_NOMEM, "%s %s: out of memory", a->what, b->name);
        w.channel = own;
        w.pre_join = 1;
        rlk_wait_pre_join(&w);
    }
    if (rc == RLK_OK)
        rc = rlk_wait_acquire(&w, a->start_ns, wait_ms, first);
    free(own);
    if (rc != RLK_OK && a->queued) {
        a->v.ticket = a->ticket.ticket;
        rlk_handle_cancel(b, row, &a->v, RLK_FAM_CANCEL_NS);
    } else if (wait == RLK_PROTO_WAIT_FAIR && rc != RLK_OK && rc != RLK_ERR_SCRIPT &&
               rc != RLK_ERR_REENTRY) {
        /* best effort: else the keep-alive drops it; a refused script changed nothing */
        rlk_handle_cancel(b, row, &a->v, RLK_HANDLE_FAIR_CANCEL_NS);
    }
    return rc == RLK_ERR_BUSY ? rlk_handle_busy(a) : rc;
}

int rlk_handle_token(const rlk_fam_base *b, const char *owner_fn, int kind,
                     const char *not_held, long long *token)
{
    char owner[RLK_OWNER_MAX + 1];
    int rc;

    *token = 0;
    if ((rc = rlk_handle_owner(b, owner, sizeof owner, owner_fn)) != RLK_OK)
        return rc;
    if (!rlk_wd_token_of(b->rt->wd, kind, b->name, owner, token))
        return rlk_set_error(b->c, RLK_ERR_NOT_OWNER, not_held, b->name, owner);
    return RLK_OK;
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

void *rlk_handle_new(rlk_client *c, const char *name, size_t size, const rlk_fam_kind *k,
                     int how, const char *names, const char *roles)
{
    rlk_fam_base *b = rlk_fam_new(c, name, size, k);
    int queue = how & (RLK_HANDLE_QUEUE_NAME | RLK_HANDLE_QUEUE_CHANNEL);

    if (!b)
        return NULL;
    if (queue)
        b->q = rlk_lq_get(c->addr, c->url.db, how & RLK_HANDLE_QUEUE_NAME ? name : b->channel);
    /* The wake channel: the client's cid from its uuid's first 4 hex digits (two clients that
     * draw the same share a channel: a grant then wakes both subscribers, the other ignores it). */
    if (how & RLK_HANDLE_WAKE)
        b->wake = rlk_names_wake_channel(b->channel, rlk_names_wake_cid(b->rt->uuid));
    return rlk_fam_made(b, (b->q || !queue) && (b->wake || !(how & RLK_HANDLE_WAKE)) &&
                           rlk_handle_keys(b, names, roles));
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

int rlk_handle_eval(const rlk_fam_base *b, const rlk_proto_call *pc,
                    const rlk_proto_argvals *vals, redisReply **r)
{
    return rlk_handle_evalt(b, pc, NULL, vals, 0, NULL, NULL, NULL, r);
}

int rlk_handle_force(const rlk_fam_base *b, const rlk_proto *row, const char *opt,
                     const char *mode, int named, rlk_lq *q, int *released)
{
    rlk_proto_argvals v = {.mode = mode};
    redisReply *r = NULL;
    char args[64];
    rlk_proto_call pc = {row->force, args};
    int rc;

    snprintf(args, sizeof args, "%s%s", row->force_args, named ? " named" : "");
    rlk_wd_forget_name(b->rt->wd, b->name);
    rc = rlk_handle_evalt(b, &pc, opt, &v, 0, NULL, NULL, NULL, &r);
    return rlk_fam_force_done(b, rc, r, q, released);
}

void rlk_handle_cancel(const rlk_fam_base *b, const rlk_proto *row, const rlk_proto_argvals *vals,
                       long long bound_ns)
{
    rlk_proto_call pc = {row->cancel, row->cancel_args};
    redisReply *r = NULL;
    long long limit = rlk_time_limit_enter(rlk_clock_now_ns() + bound_ns);
    rlk_fam_err e;

    rlk_fam_err_keep(b->c, &e);
    if (rlk_handle_eval(b, &pc, vals, &r) == RLK_OK)
        freeReplyObject(r);
    else
        rlk_fam_err_put(b->c, &e, RLK_OK);
    rlk_time_limit_leave(limit);
}

int rlk_handle_int(const rlk_fam_base *b, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                   long long *out)
{
    return rlk_handle_evalt(b, pc, NULL, vals, 0, NULL, NULL, out, NULL);
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
