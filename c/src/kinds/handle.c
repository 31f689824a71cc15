/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.c - what the kinds' public functions share (handle.h), the one
 * blocking driver of the lock kinds' rows among it.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "kinds/acq.h"
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

/* One copy for every call (noclone): each lock call runs it twice, acquire and release. */
__attribute__((noclone)) int rlk_handle_evalt(const rlk_fam_base *b, const rlk_proto_call *pc,
                                              const char *opt, const rlk_proto_argvals *vals,
                                              size_t ntail, const char *const *tail,
                                              const size_t *lens, long long *out, redisReply **r)
{
    rlk_proto_argvals v = {0};
    rlk_proto_built pb;
    redisReply *reply = NULL;
    const char *argbuf[RLK_PROTO_ARGS + 4], **args = NULL;
    size_t lenbuf[RLK_PROTO_ARGS + 4], *alens = NULL, n;
    int rc = RLK_ERR_NOMEM, few = ntail <= 4;   /* the ARGV fit on the stack */

    if (vals)
        v = *vals;
    if (!v.publish)
        v.publish = rlk_publish_arg(b->c);
    if (rlk_proto_build_with(pc, opt, b->keys_of, b->key, b->name, &v, &pb) == 0 &&
        (args = few ? argbuf : malloc(((size_t)pb.nargs + ntail + 1) * sizeof *args)) &&
        (alens = few ? lenbuf : malloc(((size_t)pb.nargs + ntail + 1) * sizeof *alens))) {
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
    if (!few) {
        free(args);
        free(alens);
    }
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

/* rlk_fam_undo_fn of an rlk_handle_acq (arg): gives back one hold, an acquisition the registry
 * could not record, one too few replicas acknowledged, or one the caller was never told of,
 * with the kind's release for the same owner and lease; while a->undo is set, one of that row
 * (a write attempt's doubted read, rlk_acq_act.reads) with its release. */
static int rlk_handle_undo(void *arg)
{
    rlk_handle_acq *a = arg;
    rlk_handle_rel rel = {a->b, a->undo ? a->undo : a->row, a->v.secret};
    int rc, outcome = a->release && !a->undo
                      ? a->release(a->handle, a->owner, a->lease_ms, &rc)
                      : rlk_handle_released(&rel, a->owner, a->lease_ms, &rc);

    return rlk_fam_undone(outcome, rc);
}

/* The record of an acquisition (sent at sent_ns): the holds beyond it that this thread's
 * doubt of the same hold turns out to have left (runtime/fam_settle.h rlk_fam_doubt_read, by
 * the one settle rule) given back too, beyond those the caller names. */
static int rlk_handle_record(rlk_handle_acq *a, long long sent_ns, int beyond)
{
    long long before, now;

    if (rlk_fam_doubt_read(a->b->rt, &a->h, &before, &now))
        beyond = rlk_acq_settle_rule(before, now, 1).give_back;
    return rlk_fam_record(a->b->rt, &a->h, a->lease_ms, a->watchdog, sent_ns, a->m.token, beyond,
                          rlk_handle_undo, a);
}

/* The machine's END x of a call of the hold h: its error (its message recorded), the call kept
 * as this thread's doubt when the machine says so. */
static int rlk_handle_end(rlk_client *c, const rlk_hold_spec *h, const rlk_acq_act *x)
{
    if (x->keep_doubt)
        rlk_fam_doubt_keep_last(c, h);
    return x->msg[0] ? rlk_set_error(c, x->err, "%s", x->msg) : x->err;
}

/* The blocking interpreter of the machine's action x (kinds/acq.h) but SEND and WAIT: RLK_OK
 * (recorded), or the error of its END (its message recorded). */
static int rlk_handle_act(rlk_handle_acq *a, rlk_acq_act *x)
{
    if (x->is == RLK_ACQ_GIVE_BACK && x->reads) {
        rlk_hold_spec h = a->h;

        h.kind = (a->undo = a->row->reads)->hold;
        rlk_fam_give_back(a->b->rt, &h, x->n, rlk_handle_undo, a);
        a->undo = NULL;
        x->is = RLK_ACQ_SEND;
        return RLK_OK;
    }
    if (x->is == RLK_ACQ_GIVE_BACK) {
        rlk_fam_give_back(a->b->rt, &a->h, a->m.adopt ? 0 : x->n, rlk_handle_undo, a);
        if (!a->m.adopt)
            x->is = x->retry ? RLK_ACQ_SEND : RLK_ACQ_END;
    }
    if (x->is == RLK_ACQ_RECORD || (x->is == RLK_ACQ_GIVE_BACK && a->m.adopt))
        return rlk_handle_record(a, a->m.start_ms * RLK_NS_PER_MS, x->n);
    return x->is == RLK_ACQ_END ? rlk_handle_end(a->b->c, &a->h, x) : RLK_OK;
}

/* The read-back the machine's READ x asks for once the connection is fenced (settled RLK_OK):
 * its call with v (a value list's ntail values after its ARGV), or HGET of the holder's field;
 * the call's error kept. RLK_OK with its reply in *r, else the error that left it unread. */
static int rlk_handle_read(const rlk_fam_base *b, const rlk_acq_act *x,
                           const rlk_proto_argvals *v, size_t ntail, const char *const *tail,
                           int settled, redisReply **r)
{
    const char *argv[3] = {"HGET", b->name, x->field};
    rlk_fam_err e;

    if (settled != RLK_OK)
        return settled;
    rlk_fam_err_keep(b->c, &e);
    settled = x->call ? rlk_handle_evalt(b, &(rlk_proto_call){x->call, x->args}, NULL, v, ntail,
                                         tail, NULL, NULL, r)
                      : rlk_command(b->c, 3, argv, NULL, r);
    rlk_fam_err_put(b->c, &e, settled);
    return settled;
}

/* A call of b whose reply was lost (rel: a release), the machine q: 0 when the reply was not
 * lost (the call's error stands). Else 1 and x the machine's action once the connection is
 * fenced and the read-back it asks for made (or could not be). */
static int rlk_handle_read_back(const rlk_fam_base *b, rlk_acq *q, int rel,
                                size_t ntail, const char *const *tail, rlk_acq_act *x)
{
    rlk_proto_argvals v = {.owner = q->owner, .lease_ms = q->lease_ms};
    redisReply *r = NULL;
    int settled;

    if (!rlk_fam_lost_fence(b, &settled))
        return 0;
    rlk_acq_lost(q, rel, x);
    if (rlk_handle_read(b, x, &v, ntail, tail, settled, &r) == RLK_OK)
        rlk_acq_read(q, r, rlk_clock_now_ns() / RLK_NS_PER_MS, rlk_errstr(b->c), x);
    else
        rlk_acq_unknown(q, rlk_errstr(b->c), x);
    if (r)
        freeReplyObject(r);
    return 1;
}

int rlk_handle_lost(rlk_handle_acq *a, int rc, long long sent, rlk_acq_act *x)
{
    a->m.start_ms = sent / RLK_NS_PER_MS;
    a->m.known = rlk_wd_count_as(a->b->rt->wd, a->h.kind, a->b->name, a->owner);
    (void)rc;
    return rlk_handle_read_back(a->b, &a->m, 0, a->ntail, a->tail, x);
}

int rlk_handle_acq_start(rlk_handle_acq *a, void *handle, const rlk_fam_base *b,
                         const char *owner_fn, const rlk_proto *row, long long lease_ms,
                         rlk_fam_release_fn release)
{
    int rc;

    memset(a, 0, offsetof(rlk_handle_acq, owner));  /* owner: 1 KB, written by its id */
    a->owner[0] = '\0';
    a->start_ns = rlk_clock_now_ns();
    a->handle = handle;
    a->release = release;
    a->b = b;
    a->row = row;
    a->q = b->q;
    a->settle = rlk_handle_lost;
    rc = rlk_fam_lease(b->c, row->what, b->name, lease_ms, &a->lease_ms, &a->watchdog);
    if (rc != RLK_OK)
        return rc;
    return rlk_handle_owner(b, a->owner, sizeof a->owner, owner_fn);
}

/* The in-process handoff of an unlock: wakes the head of the local queue. */
typedef struct rlk_handle_handoff {
    rlk_lq *q;
    int poked;
} rlk_handle_handoff;

static void rlk_handle_poke(void *arg)
{
    rlk_handle_handoff *h = arg;

    rlk_lq_poke(h->q);
    h->poked = 1;
}

/* Releases the holds the server still counts of the owner after the last one the registry
 * knew of was released: STILL_HELD (RLK_OK) when some stay (their outcome unknown again: kept
 * as a doubt), else RELEASED or NOT_OWNER. */
static int rlk_handle_rest(rlk_handle_rel *rel, rlk_hold_spec *h, long long lease)
{
    int outcome = RLK_REL_STILL_HELD, rc;
    rlk_fam_err e;

    rlk_fam_err_keep(rel->b->c, &e);
    for (int i = 0; i < RLK_ACQ_GIVE_BACK_MAX && outcome == RLK_REL_STILL_HELD; i++) {
        outcome = rlk_handle_released(rel, h->owner, lease, &rc);
        if (outcome != RLK_REL_ERROR)
            RLK_RT_COUNT(rel->b->rt, lost_given_back);
    }
    if (outcome == RLK_REL_ERROR) {
        rlk_fam_doubt_keep_lost(rel->b->c, h);
        outcome = RLK_REL_STILL_HELD;
    } else if (outcome == RLK_REL_NOT_OWNER) {
        outcome = RLK_REL_RELEASED;     /* the rest went meanwhile (its lease): gone all the same */
    }
    rlk_fam_err_put(rel->b->c, &e, RLK_OK);
    return outcome;
}

int rlk_handle_rel_settle(const rlk_fam_base *b, rlk_acq *q, rlk_hold_spec *h, size_t ntail,
                          const char *const *tail, rlk_fam_release_fn release, void *arg,
                          long long lease, int outcome, int *rc)
{
    rlk_acq_act x;

    for (int again = 0; outcome == RLK_REL_ERROR && again < 2; again++) {
        if (!rlk_handle_read_back(b, q, 1, ntail, tail, &x))
            break;
        if (x.is == RLK_ACQ_SEND) {
            outcome = release(arg, h->owner, lease, rc);    /* it did not run */
            continue;
        }
        *rc = rlk_handle_end(b->c, h, &x);
        return x.err == RLK_OK ? (int)x.value : RLK_REL_ERROR;
    }
    return outcome;
}

int rlk_handle_unlock(rlk_fam_base *b, const rlk_proto *row, const char *what,
                      const char *owner_fn, rlk_lq *q, const char *secret)
{
    rlk_handle_rel rel = {b, row, secret};
    char owner[RLK_OWNER_MAX + 1];
    rlk_handle_handoff ho = {q, 0};
    rlk_hold_spec h = {.kind = row->hold, .name = b->name, .owner = owner};
    rlk_wd_ticket t;
    rlk_acq m;
    rlk_acq_act x;
    long long lease;
    int rc, outcome;

    if ((rc = rlk_handle_owner(b, owner, sizeof owner, owner_fn)) != RLK_OK)
        return rc;
    rlk_acq_init(&m, row, b->name, owner, rlk_fam_id_given(&b->id),
                 rlk_wd_count_as(b->rt->wd, row->hold, b->name, owner));
    m.counters = &b->rt->counters;
    /* Out of the watchdog's registry before the release is sent. */
    lease = rlk_wd_release_begin_as(b->rt->wd, row->hold, b->name, owner, &t);
    /* The last local hold: the local head is woken as soon as the release is written, so that
     * its acquire follows the release on the server without waiting for this thread to read
     * the reply. */
    if (q && t.removed)
        rlk_conn_after_write(rlk_handle_poke, &ho);
    outcome = rlk_handle_released(&rel, owner, lease, &rc);
    rlk_conn_after_write(NULL, NULL);
    outcome = rlk_handle_rel_settle(b, &m, &h, 0, NULL, rlk_handle_released, &rel, lease, outcome,
                                    &rc);
    /* The last hold this client knew of, and the server still counts more: holds nobody was
     * told of (kinds/acq.h rlk_acq_rest). Released too, as the machine says; the caller's own
     * release did run, whatever happens to these. */
    if (outcome == RLK_REL_STILL_HELD && t.removed &&
        rlk_acq_rest(&m, rlk_fam_doubt_take(b->c, row->hold, b->name, owner)))
        outcome = rlk_handle_rest(&rel, &h, lease);
    if (outcome == RLK_REL_ERROR && rc == RLK_ERR_SCRIPT && t.removed &&
        rlk_fam_acl_refused(b->c)) {
        char op[RLK_ERRSTR_MAX], field[RLK_OWNER_MAX + 8];

        snprintf(op, sizeof op, "unlock %s%s%s", what, *what ? " " : "", b->name);
        rlk_fam_count_field(h.kind, owner, field, sizeof field);
        rc = rlk_fam_acl_after(b, op, field, "released",
                               "the lock is still held and expires with its lease");
        outcome = rc == RLK_ERR_NOTIFY ? RLK_REL_RELEASED : RLK_REL_ERROR;
    }
    rlk_wd_release_end(b->rt->wd, &t, outcome);
    if (outcome == RLK_REL_RELEASED && q && !ho.poked)
        rlk_lq_poke(q);
    if (outcome == RLK_REL_NOT_OWNER && rlk_acq_not_held(&m, &x))
        rc = rlk_handle_end(b->c, NULL, &x);
    return rc;
}

/* ---------------------------------------------------------------- the driver */

/* A waiter that takes held grants names its wait (a->ticket.wait) in its attempts and its
 * give-up: held:<wait>. */
static void rlk_handle_name_wait(rlk_handle_acq *a)
{
    a->v.held = rlk_names_held_arg(a->held, sizeof a->held, a->ticket.wait);
}

/* The waiter took its row's held_grants row (rlk_acq_take_held): its attempts, its give-up,
 * and (the reentrant lock's datum, kinds/lock.c) the release of the hold it gets. */
static void rlk_handle_held_row(rlk_handle_acq *a)
{
    rlk_handle_name_wait(a);
    a->row = a->m.row;
    a->acquire = (rlk_proto_call){a->row->acquire, a->row->acquire_args};
    if (a->note_data)
        a->v.delay_ms = RLK_LOCK_DATA_WAITED;
}

/* rlk_wait_attempt_fn of rlk_handle_drive. RLK_OK: acquired (recorded in the
 * registry). RLK_ERR_BUSY: held against it, *ttl the holder's PTTL (-1:
 * none), a reservation's (a->reserved), or RLK_WAIT_RECHECK (-3: first in the
 * queue behind another ticket's reservation); no error recorded. Else an error. */
static int rlk_handle_attempt(void *arg, long long *ttl)
{
    rlk_handle_acq *a = arg;
    const rlk_fam_base *b = a->b;
    long long sent;
    redisReply *r = NULL;
    rlk_acq_act x;
    int rc, k, held = a->ticket.took_held;

    rlk_acq_act_clear(&x, RLK_ACQ_SEND);
    a->tl.rx_ns = a->ticket.rx_ns;      /* what woke this attempt, if anything */
    a->tl.woken_ns = a->ticket.woken_ns;
    a->ticket.rx_ns = a->ticket.woken_ns = 0;
    a->reserved = 0;
    if (a->ticket.took_held) {
        /* Woken by a held grant: the lock is in this owner's name since the release, which
         * came after the last attempt (sent at sent_ns, replied busy): its lease counts from
         * it. */
        a->ticket.took_held = 0;
        a->tl.claim_sent_ns = a->tl.claim_done_ns = rlk_clock_now_ns();
        rlk_acq_held(&a->m, a->sent_ns / RLK_NS_PER_MS, rlk_clock_now_ns() / RLK_NS_PER_MS,
                     &x);
        if ((rc = rlk_handle_act(a, &x)) != RLK_OK)
            return rc;
    }
    while (x.is == RLK_ACQ_SEND) {
        if (x.ticket) { /* its old ticket left the queue: a grant of it, read or not, is stale */
            rlk_sub_ticket_redraw(b->rt->sub, &a->ticket, x.ticket, rlk_names_wait_id());
            rlk_handle_name_wait(a);
        }
        a->m.ticket = a->v.ticket = rlk_wait_ticket_arg(&a->ticket, a->m.queued);  /* 0: none */
        /* Its first attempt with a wake ticket may take the row that takes held grants, and
         * keeps it (its give-up, the hold's release) */
        if (rlk_acq_take_held(&a->m, a->v.ticket))
            rlk_handle_held_row(a);
        if (!a->quiet)
            RLK_RT_COUNT(b->rt, acquire_calls);
        a->m.prev_sent_ms = a->sent_ns / RLK_NS_PER_MS;
        a->tl.claim_sent_ns = a->sent_ns = sent = rlk_clock_now_ns();
        rc = rlk_handle_evalt(b, &a->acquire, a->row->opt_keys, &a->v, a->ntail, a->tail, NULL,
                              NULL, &r);
        a->tl.claim_done_ns = rlk_clock_now_ns();
        /* a refusal this thread's doubt (runtime/fam_settle.h) may explain: taken */
        k = rc == RLK_ERR_SCRIPT ? rlk_acq_doubt_kind(&a->m, rlk_errstr(b->c), a->row->reads ?
                                   rlk_wd_count_as(b->rt->wd, a->row->reads->hold, b->name,
                                                   a->owner) : 0) : -1;
        a->m.doubt = k >= 0 && rlk_fam_doubt_take(b->c, k, b->name, a->owner);
        if (rc != RLK_OK && rc != RLK_ERR_SCRIPT) {
            if (!a->settle(a, rc, sent, &x))
                return rc;
        } else
            rlk_acq_reply(&a->m, rc, rlk_errstr(b->c), r, sent / RLK_NS_PER_MS, &x);
        if (r)
            freeReplyObject(r);
        r = NULL;
        if ((rc = rlk_handle_act(a, &x)) != RLK_OK)
            return rc;
    }
    a->wide = x.wide;
    a->reserved = x.reserved;
    if (x.is == RLK_ACQ_WAIT) {
        *ttl = x.ttl;
        if (a->v.ticket)
            rlk_lq_note_first(a->q, a->wide);
        return RLK_ERR_BUSY;
    }
    /* Taken at once: nobody to wait for, no hint. Not a held grant, which went to the first in
     * the queue (the hint its last attempt left stands: the next head joins early). */
    if (!held && a->ticket.ticket && a->v.ticket >= 0)
        rlk_lq_note_first(a->q, 0);
    /* The hold's datum, by the acquisition that made the entry only (a re-entry keeps the
     * hold's) */
    if (a->note_data)
        rlk_wd_set_kind_data(b->rt->wd, a->h.kind, b->name, a->owner, a->v.delay_ms);
    return RLK_OK;
}

/* A wait that ran out: RLK_ERR_BUSY, recorded. */
static int rlk_handle_busy(rlk_handle_acq *a)
{
    rlk_acq_act x;

    rlk_acq_busy(&a->m, (rlk_clock_now_ns() - a->start_ns) / RLK_NS_PER_MS, &x);
    return rlk_handle_act(a, &x);
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
    a->ticket.ticket = rlk_acq_ticket(rlk_client_counts_exact(b->c), b->rt->uuid);
    /* A held grant must name it; a holder id the application gave (rlk_lock_set_owner, a
     * nested rlk lock) takes none: a process that shares it and drew the same ticket on the same
     * wake channel would take the other's grant for its own */
    a->ticket.owner = a->m.given ? NULL : a->owner;
    a->ticket.wait = rlk_names_wait_id();
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
        return rlk_set_error(b->c, rc, "%s %s: out of resources for a waiter", a->row->what,
                             b->name);
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
    rlk_acq_act x;
    char *own = NULL;
    int rc = RLK_OK, first, wait = a->spin_max_ms > 0 ? RLK_PROTO_WAIT_SPIN : row->wait;

    a->v.lease_ms = a->lease_ms;
    a->v.owner = a->owner;
    if (!a->acquire.script)
        a->acquire = (rlk_proto_call){row->acquire, row->acquire_args};
    a->h = (rlk_hold_spec){row->hold, b->name, a->owner, 0, {NULL}, b->channel, row->renew,
                           /* a queued waiter waits elsewhere: its channel does not linger */
                           row->wait == RLK_PROTO_WAIT_QUEUE || row->wait == RLK_PROTO_WAIT_SPIN};
    rlk_proto_keys_init(&ks, b->keys_of, b->name);  /* the renew KEYS: made with the handle */
    a->h.nkeys = rlk_proto_keys_list_with(&ks, b->key, row->renew_keys, a->h.keys,
                                          RLK_HOLD_KEYS_MAX);
    rlk_proto_keys_free(&ks);
    if (row->flags & RLK_PROTO_VALUES)
        a->h.channel = NULL;    /* every release in the group publishes there, and each would
                                   make the watchdog renew this entry at once */
    a->reentry = rlk_wd_holds_as(b->rt->wd, row->hold, b->name, a->owner);
    rlk_acq_init(&a->m, row, b->name, a->owner, rlk_fam_id_given(&b->id), a->reentry);
    a->m.counters = &b->rt->counters;
    a->m.ttl_cap = a->ttl_cap;
    a->m.lease_ms = a->lease_ms;
    a->m.value = a->v.value;
    a->m.again_by_ms = wait_ms < 0 ? LLONG_MAX : a->start_ns / RLK_NS_PER_MS + wait_ms;
    if (a->reentry && (row->flags & RLK_PROTO_ONE_HOLD))
        rlk_wd_token_of(b->rt->wd, row->hold, b->name, a->owner, &a->m.token);
    if (rlk_acq_begin(&a->m, a->m.token, &x) == RLK_ACQ_END)
        return rlk_handle_act(a, &x);
    if (wait == RLK_PROTO_WAIT_SPIN) {
        a->h.channel = NULL;        /* no SUBSCRIBE, holding either */
        rc = rlk_spin_acquire(b->rt, row->what, b->name, rlk_handle_attempt, a, a->start_ns,
                              wait_ms, a->spin_initial_ms, a->spin_max_ms);
        return rc == RLK_ERR_BUSY ? rlk_handle_busy(a) : rc;
    }
    rlk_wait_init_lock(&w, b, row->what, rlk_handle_attempt, a);
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
            return rlk_set_error(b->c, RLK_ERR_NOMEM, "%s %s: out of memory", row->what, b->name);
        w.channel = own;
        w.pre_join = 1;
        rlk_wait_pre_join(&w);
    }
    if (rc == RLK_OK)
        rc = rlk_wait_acquire(&w, a->start_ns, wait_ms, first);
    free(own);
    if (rc != RLK_OK && rlk_acq_cancel(&a->m, &x)) {
        /* best effort: else the claim window or a fair waiter's keep-alive drops it */
        a->v.ticket = a->ticket.ticket;
        rlk_handle_cancel(b, &(rlk_proto_call){x.call, x.args}, x.keys, &a->v,
                          x.ttl * RLK_NS_PER_MS);
    }
    return rc == RLK_ERR_BUSY ? rlk_handle_busy(a) : rc;
}

int rlk_handle_sem_attempt(const rlk_fam_base *b, rlk_acq_sem *q, rlk_sem_queue_try *t,
                           const rlk_proto_call *pc, rlk_proto_argvals v, size_t ntail,
                           const char *const *tail, const size_t *lens, long long *bound_ms,
                           rlk_fam_undo_fn undo, void *arg)
{
    redisReply *r = NULL;
    rlk_acq_act x;
    int rc, settled;

    *bound_ms = -1;
    v.ticket = rlk_wait_ticket_arg(&t->tk, t->queued);  /* 0: does not queue */
    rc = rlk_handle_evalt(b, pc, NULL, &v, ntail, tail, lens, NULL, &r);
    if (rc != RLK_OK && v.ticket)
        t->queued = 1;  /* it may have run: a retry looks before queueing, the give-up cancels */
    if (rc == RLK_OK || !rlk_fam_lost_fence(b, &settled)) {
        rlk_acq_sem_reply(q, rc, rlk_errstr(b->c), r, &x);
    } else if (rlk_acq_sem_lost(q, rc, rlk_errstr(b->c), &x) == RLK_ACQ_READ) {
        settled = rlk_handle_read(b, &x, &v, 0, NULL, settled, &r);
        rlk_acq_sem_read(q, settled == RLK_OK ? r : NULL, rlk_errstr(b->c), &x);
    }
    if (r)
        freeReplyObject(r);
    t->wide = x.is == RLK_ACQ_WAIT && x.wide;
    if (x.is == RLK_ACQ_RECORD) {
        t->queued = 0;
        return rlk_fam_acks_acquired(b->c, "acquire", b->name, undo, arg);
    }
    if (x.is != RLK_ACQ_WAIT)
        return rlk_handle_end(b->c, NULL, &x);
    if (v.ticket)
        t->queued = 1;
    *bound_ms = x.ttl == -3 ? RLK_WAIT_RECHECK : x.ttl;
    return RLK_ERR_BUSY;
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
    rlk_proto_call pc = {row->force, row->force_args};
    const char *const tail[] = {"named"};   /* after the row's ARGV: its strings stay static */
    int rc;

    rlk_wd_forget_name(b->rt->wd, b->name);
    rc = rlk_handle_evalt(b, &pc, opt, &v, named ? 1 : 0, tail, NULL, NULL, &r);
    return rlk_fam_force_done(b, rc, r, q, released);
}

void rlk_handle_cancel(const rlk_fam_base *b, const rlk_proto_call *pc, const char *opt,
                       const rlk_proto_argvals *vals, long long bound_ns)
{
    redisReply *r = NULL;
    long long limit = rlk_time_limit_enter(rlk_clock_now_ns() + bound_ns);
    rlk_fam_err e;
    int rc, settled = RLK_OK;

    rlk_fam_err_keep(b->c, &e);
    rc = rlk_handle_evalt(b, pc, opt, vals, 0, NULL, NULL, NULL, &r);
    rlk_time_limit_leave(limit);
    if (rlk_acq_cancel_again(rc, 1)) {
        /* Once more, within its bound and a fence's: after a lost reply only once the first
         * has run or never will (kinds/acq.h rlk_acq_cancel_again). */
        limit = rlk_time_limit_enter(rlk_clock_now_ns() + bound_ns +
                                     ((long long)b->c->connect_timeout_ms +
                                      b->c->command_timeout_ms) * RLK_NS_PER_MS);
        if (!rlk_fam_lost_fence(b, &settled) || settled == RLK_OK)
            rc = rlk_handle_evalt(b, pc, opt, vals, 0, NULL, NULL, NULL, &r);
        rlk_time_limit_leave(limit);
    }
    if (rc == RLK_OK)
        freeReplyObject(r);
    else
        rlk_fam_err_put(b->c, &e, RLK_OK);
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
