/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_lock.c - the lock kinds' requests (a_lock.h) through the engine
 * (engine.h): the blocking API's scripts and protocol (kinds/lock.c,
 * docs/runtime.md), each kind a kinds/proto row: the reentrant lock's
 * ticket in the server's queue, grants on this client's wake channel
 * redisson_lock__channel:{name}:rlk:<cid>, the lock's own channel while the
 * waiter is first in the queue ({wait, 1}) or behind a reservation (-3),
 * waits bounded by the TTL a failed attempt returns and a keepalive, the
 * row's cancel when a queued waiter gives up; the other rows' ways of
 * waiting (rlk_proto.wait), tokens, refused re-entries and value lists
 * (a_elect.c, a_fastmulti.c). The watchdog renews lease-less holds with
 * the kind's task. A lost reply is settled by reading the holder's field
 * back after the engine has fenced the connection it went out on.
 * docs/async-internals.md describes it.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/scripts.h"
#include "kinds/acq.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/rt.h"
#include "runtime/spin.h"
#include "engine/engine.h"
#include "engine/ae_wd.h"
#include "async/a_common.h"
#include "async/a_kind.h"
#include "async/a_hold.h"
#include "async/a_lock.h"

typedef struct rlk_a_lockreq {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    const rlk_proto *k;             /* the row (a_kind.h) */
    char *name;
    char *owner;                    /* <uuid>:<task> */
    char *value;                    /* the value argument (the election's); NULL: none */
    char **values;                  /* RLK_PROTO_VALUES: the values (one block); NULL: none */
    rlk_proto_keys keys;            /* the name's keys, built once per role by the row's names */
    const char *channel;            /* the waiters' channel (one of keys) */
    char *mine;                     /* its own channel: RLK_PROTO_WAIT_QUEUE's wake channel
                                       <channel>:rlk:<cid> (the grants), _FAIR's
                                       <channel>:<owner>; NULL: none (a plain ticket's waiter
                                       hears its grants on the lock's channel) */
    long long ticket;               /* RLK_PROTO_WAIT_QUEUE: the ticket it queues with once the
                                       fast try failed (kinds/acq.h rlk_acq_ticket) */
    rlk_acq m;                      /* the machine (kinds/acq.h): what follows each outcome */
    long long lease_ms;
    long long wait_ms;
    long long delay_ms;             /* a row with the lock-delay's key: its delay */
    const rlk_proto *give_row;      /* whose release gives them back (a doubted read's) */
    rlk_a_wait w;                   /* its wake-ups (a_common.h): the call in flight, its
                                       listener on its own channel (else the lock's), the
                                       lock's channel while first (_QUEUE), its ticket (0: no
                                       place in the queue: a single try, or not yet) */
    char *end_msg;                  /* the message to end with (heap, made at the end: a pending
                                       request stays small; NULL: out of memory) */
    int acquire;                    /* an acquisition (its releases undo a grant); 0: an unlock
                                       or a force unlock */
    int watchdog;
    int spin_initial, spin_max, spin_prev;  /* RLK_PROTO_WAIT_SPIN: the back-off (ms, <= 60000) */
    int spin_fails;
    int waiter;                     /* waits (wait_ms != 0, not a re-entry) */
    int give_back;                  /* a settled lost reply's holds to give back, then adopt
                                       (m.adopt), send again (give_again: a doubt's) or end
                                       with ending and end_msg */
    int give_again;
    int rest;                       /* an unlock releasing the holds the server counts beyond
                                       the client's last (kinds/acq.h rlk_acq_rest) */
    int cw;                         /* ALK_*: what the call in flight is */
    int cancels;                    /* the give-up's sends (kinds/acq.h rlk_acq_cancel_again) */
    int end_err;                    /* the error to complete with once the cancel is back */
} rlk_a_lockreq;

/* ---------------------------------------------------------------- the request */

/* What the call in flight is (rlk_a_lockreq.cw): its reply goes to alk_reply. */
enum { ALK_ACQUIRE, ALK_READ, ALK_GIVE_BACK, ALK_RELEASE, ALK_FORCE, ALK_CANCEL };

static void alk_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr, int lost,
                      void *arg);

/* Sends script with the args named (kinds/proto.h's call, its KEYS the header's roles, then
 * the row's optional ones but for a cancel, a value list's values after its ARGV) as the call
 * in flight, a->w.call, of kind cw: 0. -1: not sent (out of memory, closing). */
static int alk_send(rlk_a_lockreq *a, const char *script, const char *argnames,
                    long long lease, long long ticket, int cw)
{
    char held[RLK_NAMES_HELD_ARG_LEN];
    rlk_proto_argvals v = {.lease_ms = lease, .owner = a->owner, .ticket = ticket,
                           .value = a->value, .delay_ms = a->delay_ms,
                           .secret = rlk_async_uuid(a->h.ac)};

    /* a waiter that takes held grants names its wait in its attempts and its give-up */
    if ((a->k->flags & RLK_PROTO_GRANTS) && (cw == ALK_ACQUIRE || cw == ALK_CANCEL))
        v.held = rlk_names_held_arg(held, sizeof held, a->w.wait);

    a->w.call = rlk_a_kind_callo(a->h.ac, &(rlk_proto_call){script, argnames},
                                cw == ALK_CANCEL ? a->k->cancel_keys : a->k->opt_keys, a->name, &v,
                                a->values, alk_reply, a);
    a->cw = cw;
    return a->w.call ? 0 : -1;
}

static void alk_set_msg(rlk_a_lockreq *a, const char *fmt, ...)
{
    char buf[RLK_ACQ_MSG];      /* fmt's arguments may be a->end_msg itself */
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    free(a->end_msg);
    a->end_msg = strdup(buf);
}

static const char *alk_msg(const rlk_a_lockreq *a)
{
    return a->end_msg ? a->end_msg : "out of memory";
}

/* Completes the request with err and the message set (RLK_ERR_CANCELLED for 0). */
static void alk_complete(rlk_a_lockreq *a, int err)
{
    rlk_ae_complete(a->h.r, err ? err : RLK_ERR_CANCELLED, 0, NULL, "%s", alk_msg(a));
}

static void alk_free_state(rlk_async_req *r, void *state)
{
    rlk_a_lockreq *a = state;

    (void)r;
    rlk_a_wait_quiet(&a->w);
    rlk_ae_call_forget(a->w.call);
    rlk_a_common_free(6, a->end_msg, a->name, a->owner, a->value, a->mine, a->values);
    rlk_proto_keys_free(&a->keys);
}

/* Ends the request with err and the message set: a queued waiter leaves the queue first (the
 * machine's cancel). */
static void alk_end(rlk_a_lockreq *a, int err)
{
    rlk_acq_act x;

    rlk_a_wait_quiet(&a->w);
    a->end_err = err;
    if (!rlk_acq_cancel(&a->m, &x) || rlk_ae_closing(a->h.ac) ||
        alk_send(a, x.call, x.args, 0, a->w.ticket, ALK_CANCEL) != 0)
        alk_complete(a, err);
    else
        a->cancels++;
}

/* The wait ran out (or was cancelled). */
static void alk_end_busy(void *arg)
{
    rlk_a_lockreq *a = arg;
    const int cancelled = a->w.ending == RLK_ERR_CANCELLED;
    rlk_acq_act x;

    rlk_acq_busy(&a->m, rlk_a_common_elapsed(&a->h), &x);
    alk_set_msg(a, "%s", cancelled ? "cancelled" : x.msg);
    alk_end(a, cancelled ? RLK_ERR_CANCELLED : x.err);
}

static void alk_cancel_hook(rlk_async_req *r, void *state)
{
    rlk_a_lockreq *a = state;

    (void)r;
    if (!a->acquire)
        return;     /* an unlock is on its way: its result stands */
    a->w.ending = RLK_ERR_CANCELLED;
    if (!a->w.call)
        alk_end_busy(a);    /* else the call in flight decides (a grant is given back) */
}

static void alk_bind(rlk_a_lockreq *a, const rlk_proto *k)
{
    a->k = k;
    rlk_proto_keys_free(&a->keys);
    rlk_proto_keys_init(&a->keys, k->names, a->name);
}

/* What the machine knows of the hold h before a call: its count, and for a value list whether
 * every acquisition it counts took this list (its datum the list's print). */
static void alk_known(rlk_a_lockreq *a, const rlk_a_hold *h)
{
    a->m.known = h ? h->count : 0;
    a->m.exact = !h || (a->values &&
                        h->kind_data == rlk_acq_values_print((const char *const *)a->values));
}

/* The machine for a call of a on the hold h (NULL: none). */
static void alk_machine(rlk_a_lockreq *a, const rlk_a_hold *h)
{
    rlk_acq_init(&a->m, a->k, a->name, a->owner, 0, 0);
    a->m.counters = rlk_ae_counters(a->h.ac);
    a->m.lease_ms = a->lease_ms;
    a->m.value = a->value;
    alk_known(a, h);
}

static void alk_act(rlk_a_lockreq *a, rlk_acq_act *x);

/* One attempt: the row's acquire with the ticket (queued: -ticket). */
static void alk_attempt(void *arg)
{
    rlk_a_lockreq *a = arg;
    rlk_a_hold *h = rlk_a_hold_find(a->h.ac, a->k->hold, a->name, a->owner);

    rlk_ae_timer_del(a->w.retry);
    a->w.retry = NULL;
    alk_known(a, h);
    if (a->w.held) {
        /* A held grant: the lock is the owner's since the release, which came after the last
         * attempt (its send, m.start_ms): its lease counts from it. */
        rlk_acq_act x;

        a->w.held = 0;
        rlk_acq_held(&a->m, a->m.start_ms, rlk_ae_now_ms(), &x);
        alk_act(a, &x);
        return;
    }
    /* Its first attempt with a wake ticket takes the row that takes held grants, and keeps it
     * (its give-up, the hold's release; the same names: its keys stay) */
    if (rlk_acq_take_held(&a->m, a->w.ticket))
        a->k = a->m.row;
    a->m.prev_sent_ms = a->m.start_ms;
    a->m.start_ms = rlk_ae_now_ms();    /* the lease's start, if it takes the lock */
    a->m.ticket = a->w.ticket;
    if (alk_send(a, a->k->acquire, a->k->acquire_args, a->lease_ms,
                 a->m.queued ? -a->w.ticket : a->w.ticket, ALK_ACQUIRE) != 0) {
        alk_set_msg(a, "%s %s: %s", a->k->what, a->name,
                    rlk_ae_closing(a->h.ac) ? "client freed" : "out of memory");
        alk_end(a, rlk_ae_closing(a->h.ac) ? RLK_ERR_CLOSED : RLK_ERR_NOMEM);
    }
}

static rlk_a_lockreq *alk_new(rlk_async *ac, int acquire, const rlk_proto *k, const char *who,
                              const char *name, unsigned long long task, rlk_async_fn fn,
                              void *privdata)
{
    char owner[RLK_OWNER_MAX + 1];
    rlk_a_lockreq *a;

    if (!(a = RLK_A_NEW(ac, rlk_a_lockreq, fn, privdata)))
        return NULL;
    rlk_a_wait_init(&a->w, &a->h, a, alk_attempt, alk_end_busy);
    a->w.rule = &rlk_lock_sub_rule;
    a->acquire = acquire;
    a->k = k ? k : rlk_a_kind_row(RLK_KIND_LOCK);
    if (rlk_a_common_begin(a->h.r, alk_cancel_hook, alk_free_state, who, name))
        return a;
    if (!k) {
        rlk_ae_complete(a->h.r, RLK_ERR_ARG, 0, NULL, "%s %s: unknown kind", who, name);
        return a;
    }
    rlk_ae_owner(ac, task, owner, sizeof owner);
    if (!(a->name = strdup(name)) || !(a->owner = strdup(owner))) {
        rlk_a_common_unsent(a->h.r, who, name);
        return a;
    }
    alk_bind(a, k);
    return a;
}

/* ---------------------------------------------------------------- the machine's actions */

/* The row's release once (an unlock, or an acquisition's undo of its grant). */
static void alk_release(rlk_a_lockreq *a)
{
    rlk_client *c = rlk_ae_client(a->h.ac);
    rlk_a_hold *h = rlk_a_hold_find(a->h.ac, a->k->hold, a->name, a->owner);

    alk_machine(a, h);
    /* The last hold: out of the loop's watchdog before its release is sent, as the blocking
     * driver takes it out of its registry (wd_reg.c), so that no renewal follows the release
     * on the wire. A value list's hold may outlive a release that finds it not held: kept. */
    if (h && h->wd && h->count <= 1 && rlk_acq_left(&a->m, 0, 0, 0, -1)) {
        rlk_ae_wd_del(h->wd);
        h->wd = NULL;
    }
    if (alk_send(a, a->k->release, a->k->release_args,
                 h && h->lease_ms > 0 ? h->lease_ms : c->watchdog_lease_ms, 0, ALK_RELEASE) != 0)
        rlk_a_common_unsent(a->h.r, a->k->what, a->name);
}

/* The lock is this task's now. */
static void alk_acquired(rlk_a_lockreq *a)
{
    rlk_a_hold *h = rlk_a_hold_get(a->h.ac, a->k->hold, a->name, a->owner);

    rlk_a_wait_quiet(&a->w);
    if (!h)
        goto nomem;     /* no room to remember it: given back rather than held blind */
    /* The hold's datum: the lock-delay (a re-entry's is the hold's), or a value list's print */
    h->kind_data = a->values ? rlk_acq_values_datum(h->kind_data, h->count,
                                                    (const char *const *)a->values)
                             : a->delay_ms;
    if (rlk_acq_adds(&a->m, h->count) && h->count++ == 0)
        h->acquired_ns = rlk_clock_now_ns();
    h->row = a->k;      /* a re-entry's is the hold's (rlk_proto_keeps) */
    h->lease_ms = a->lease_ms;
    h->lease_ns = a->watchdog ? 0 : a->m.start_ms * RLK_NS_PER_MS;
    h->token = a->m.token;
    if (a->watchdog && h->wd) {
        rlk_ae_wd_acquired(h->wd, a->m.start_ms);   /* the re-entry set the lease again */
    } else if (a->watchdog) {
        const char *k[RLK_HOLD_KEYS_MAX];
        int n = rlk_proto_keys_list(&a->keys, a->k->renew_keys, k, RLK_HOLD_KEYS_MAX);

        if (n > 0)
            h->wd = rlk_ae_wd_add(a->h.ac, a->k->hold, a->k->renew, a->name, n, k, a->owner,
                                  a->m.start_ms, rlk_a_hold_lost, h);
        if (!h->wd)
            goto nomem;     /* not renewed: given back, never held blind */
    }
    rlk_ae_wd_token(h->wd, h->token);   /* NULL (a fixed lease): nothing */
    if (a->w.ending == RLK_ERR_CANCELLED) {
        /* Cancelled while the grant was on its way: never left held. */
        alk_set_msg(a, "cancelled");
        alk_release(a);
        return;
    }
    rlk_ae_complete(a->h.r, RLK_OK, a->m.token ? a->m.token : h->count, NULL, NULL);
    return;
nomem:
    a->w.ending = RLK_ERR_NOMEM;
    alk_set_msg(a, "%s %s: out of memory", a->k->what, a->name);
    alk_release(a);
}

/* Reads back after a lost reply (the engine fenced the connection it went out on first), as
 * the machine asks: the row's held script, a value list's counts, or the holder's field. */
static void alk_read_back(rlk_a_lockreq *a)
{
    rlk_acq_act x;
    const char *argv[3] = {"HGET", a->name, x.field};

    rlk_acq_lost(&a->m, a->m.rel, &x);
    a->cw = ALK_READ;
    if (x.call)
        alk_send(a, x.call, x.args, a->lease_ms, 0, ALK_READ);
    else
        a->w.call = rlk_ae_command(a->h.ac, 3, argv, alk_reply, a);
    if (!a->w.call && !rlk_ae_req_done(a->h.r))
        rlk_a_common_unsent(a->h.r, a->k->what, a->name);
}

/* A release's end (rc; its outcome, enum rlk_release_outcome, the holds left after it, or, a
 * reply, -1: the client's count less one while it counts more), the client's hold made to
 * follow it: released, gone or left to its lease (unknown), forgotten (a value list not held
 * says nothing of its other values). An unlock completes with the holds left, or
 * RLK_ERR_NOT_OWNER (a lost release settled as gone meanwhile too, as the blocking unlock). */
static void alk_released(rlk_a_lockreq *a, int rc, int outcome, long long left, const char *msg)
{
    rlk_a_hold *h = rlk_a_hold_find(a->h.ac, a->k->hold, a->name, a->owner);
    long long keep = rlk_acq_left(&a->m, rc, outcome, left, h ? h->count : 0);
    const long long lease = h && h->lease_ms > 0 ? h->lease_ms
                                                 : rlk_ae_client(a->h.ac)->watchdog_lease_ms;
    const int last = h && h->count <= 1;    /* the last hold the client counted */
    rlk_acq_act x;

    if (left < 0)
        left = keep > 0 ? keep : 0;
    if (h && keep > 0)
        h->count = keep;
    else if (h && keep == 0)
        rlk_a_hold_drop(a->h.ac, h);
    if (!a->acquire && rc == RLK_OK && outcome == RLK_REL_STILL_HELD && last && keep == 0 &&
        rlk_acq_rest(&a->m, rlk_a_hold_doubt_take(a->h.ac, a->k->hold, a->name, a->owner))) {
        /* The last hold the client counted, and the server counts more: released too, as the
         * blocking unlock does (kinds/handle.c), one release at a time (alk_rest). */
        a->rest = 1;
        a->give_back = RLK_ACQ_GIVE_BACK_MAX;
        a->lease_ms = lease;
        if (alk_send(a, a->k->release, a->k->release_args, lease, 0, ALK_GIVE_BACK) == 0)
            return;
    }
    if (a->acquire)
        alk_complete(a, a->w.ending);
    else if (rc == RLK_OK && outcome == RLK_REL_NOT_OWNER && rlk_acq_not_held(&a->m, &x))
        rlk_ae_complete(a->h.r, x.err, 0, NULL, "%s", x.msg);
    else
        rlk_ae_complete(a->h.r, rc, left > 0 ? left : outcome == RLK_REL_STILL_HELD, NULL,
                        rc == RLK_OK ? NULL : "%s", msg);
}

/* An unlock's release of the holds beyond the client's last (a->rest), outcome the last one's:
 * again while the server still counts more (at most RLK_ACQ_GIVE_BACK_MAX), then the unlock
 * completes with 0 holds left (released; not held: they went meanwhile), or 1 (still held: left
 * to their lease; an unknown outcome kept as the task's doubt). The caller's own release ran. */
static void alk_rest(rlk_a_lockreq *a, int outcome)
{
    if (outcome == RLK_REL_STILL_HELD && a->give_back > 0 &&
        alk_send(a, a->k->release, a->k->release_args, a->lease_ms, 0, ALK_GIVE_BACK) == 0)
        return;
    if (outcome == RLK_REL_ERROR)
        rlk_a_hold_doubt_keep(a->h.ac, a->k->hold, a->name, a->owner);
    rlk_ae_complete(a->h.r, RLK_OK, outcome == RLK_REL_STILL_HELD || outcome == RLK_REL_ERROR,
                    NULL, NULL);
}

/* Gives back, one release of the row's at a time (give_row: the kind's, or a doubted read's),
 * the holds a settled lost reply or a doubt found beyond the caller's (as the blocking API's
 * rlk_fam_give_back), then adopts one hold (m.adopt), sends the acquire again (give_again) or
 * ends as set. */

static void alk_give_back(rlk_a_lockreq *a)
{
    rlk_acq_act x;

    if (a->give_back > 0) {
        if (alk_send(a, a->give_row->release, a->give_row->release_args, a->lease_ms, 0,
                     ALK_GIVE_BACK) == 0)
            return;
        a->give_back = 0;
    }
    if (a->m.adopt)
        alk_acquired(a);
    else if (a->give_again) {
        rlk_acq_act_clear(&x, RLK_ACQ_SEND);
        alk_act(a, &x);
    } else {
        alk_complete(a, a->w.ending);
    }
}

/* The loop's interpreter of the machine's action x (kinds/acq.h). */
static void alk_act(rlk_a_lockreq *a, rlk_acq_act *x)
{
    switch (x->is) {
    case RLK_ACQ_SEND:
        if (x->ticket) {    /* its old ticket left the queue: a grant of it, read or not, is
                               stale, even when a later redraw comes back to it */
            a->w.ticket = a->ticket = x->ticket;
            a->w.wait = rlk_names_wait_id();
            a->w.held = 0;
        }
        if (a->m.rel)
            alk_release(a);     /* a lost release that did not run */
        else if (a->w.ending)
            alk_end_busy(a);
        else
            rlk_a_wait_retry(&a->w, 0);     /* a lost acquire that did not run: again */
        return;
    case RLK_ACQ_WAIT:
        /* Not acquired: a single try, a waiter cancelled or out of time while its attempt was
         * in flight, ends (the machine counts it queued: its cancel is sent); else it waits as
         * the machine says (ttl as the acquire script said, -3: behind a reservation). */
        if (!a->waiter || a->w.ending) {
            alk_end_busy(a);
        } else if (x->wait == RLK_PROTO_WAIT_FAIR || x->wait == RLK_PROTO_WAIT_CHANNEL) {
            /* fair: queued by the script, again (keep-alive) before its deadline runs out;
             * channel: no queue, the lock's channel (subscribed from the start) and the TTL */
            rlk_a_wait_retry(&a->w, rlk_a_wait_next(&a->w, x->ttl, x->wait == RLK_PROTO_WAIT_FAIR
                                                    ? RLK_FAIR_THREAD_WAIT_MS / 3
                                                    : RLK_A_KEEPALIVE_MS));
        } else if (x->wait == RLK_PROTO_WAIT_SPIN) {
            /* The back-off (runtime/spin.h), never past the holder's TTL. */
            a->spin_prev = (int)rlk_spin_next(a->spin_prev, ++a->spin_fails, a->spin_initial,
                                              a->spin_max);
            rlk_a_wait_retry(&a->w, x->ttl >= 0 && x->ttl < a->spin_prev
                                    ? (x->ttl > 0 ? x->ttl : 1) : a->spin_prev);
        } else {
            /* First in the queue (or behind a reservation): the lock's channel too (a plain
             * ticket's waiter listens there all along); the ticket drawn when it began to
             * listen (alk_listen). */
            if (a->mine)
                rlk_a_wait_wide(&a->w, x->wide, a->channel);
            rlk_a_wait_busy(&a->w, a->ticket, x->ttl);
        }
        return;
    case RLK_ACQ_RECORD:
        alk_acquired(a);
        return;
    case RLK_ACQ_GIVE_BACK:
        a->give_back = x->n;
        a->give_again = x->retry;
        a->give_row = x->reads ? a->k->reads : a->k;
        if (!a->m.adopt && !x->retry) {
            rlk_a_wait_quiet(&a->w);
            a->w.ending = x->err;
            alk_set_msg(a, "%s", x->msg);
        }
        alk_give_back(a);
        return;
    default:
        break;
    }
    if (x->keep_doubt)
        rlk_a_hold_doubt_keep(a->h.ac, a->k->hold, a->name, a->owner);
    if (a->m.rel) {     /* a lost release settled */
        alk_released(a, x->err, (int)x->value, x->n, x->msg);
        return;
    }
    if (x->retry && a->w.ending == RLK_ERR_CANCELLED) {
        alk_end_busy(a);
        return;
    }
    if (x->err == RLK_OK) {
        rlk_ae_complete(a->h.r, RLK_OK, a->m.token, NULL, NULL);
        return;
    }
    if (x->msg[0])
        alk_set_msg(a, "%s", x->msg);
    alk_end(a, x->err);
}

/* The reply of the call in flight (rlk_ae_reply_fn, arg the request), by what it is. An
 * acquire's or a release's that was lost is read back (it may have run); a call never written is
 * sent again while the budget lasts (an acquire after a while, but cancelled; a read; a release;
 * a force release: deleting twice is harmless, value may then say 0). */
static void alk_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr, int lost,
                      void *arg)
{
    rlk_a_lockreq *a = arg;
    /* calls that never went out or lost their reply are tried again while the budget lasts (an
     * unlock's wait_ms is 0) */
    const int in = rlk_a_common_elapsed(&a->h) <= rlk_a_common_budget(a->h.ac, a->wait_ms),
              again = rc == RLK_ERR_IO && in;
    char why[RLK_ACQ_MSG];
    rlk_acq_act x;

    a->w.call = NULL;
    if (a->cw == ALK_CANCEL) {  /* best effort, as the blocking API's: a waiter that cannot say
                                   so is skipped when its reservation's claim window runs out */
        if (rlk_acq_cancel_again(rc, a->cancels) && !rlk_ae_closing(ac) &&
            rlk_acq_cancel(&a->m, &x) &&
            alk_send(a, x.call, x.args, 0, a->w.ticket, ALK_CANCEL) == 0) {
            a->cancels++;   /* once more: the engine fences a lost one's connection first */
            return;
        }
        alk_complete(a, a->end_err);
        return;
    }
    if (a->cw == ALK_FORCE && again && alk_send(a, a->k->force, a->k->force_args, 0, 0,
                                                ALK_FORCE) == 0)
        return;
    if (rc == RLK_ERR_CLOSED || (rc != RLK_OK && a->cw == ALK_FORCE)) {
        rlk_ae_complete(a->h.r, rc, 0, NULL, "%s", errstr);
        return;
    }
    if (rc == RLK_ERR_IO && lost && (a->cw == ALK_ACQUIRE || a->cw == ALK_RELEASE)) {
        /* Counted and read back; if it did not run, sent again within the wait */
        RLK_A_COUNT(a->h, lost_replies);
        alk_set_msg(a, "%s", errstr);
        a->m.rel = a->cw == ALK_RELEASE;
        a->m.again_by_ms = a->wait_ms == -1 ? LLONG_MAX : a->h.start + a->wait_ms;
        alk_read_back(a);
        return;
    }
    switch (a->cw) {
    case ALK_ACQUIRE:
        if (rc == RLK_ERR_IO && a->w.ending == RLK_ERR_CANCELLED) {
            alk_end_busy(a);    /* never written: it never ran */
        } else if (again && !a->w.ending) {
            rlk_a_wait_retry(&a->w, RLK_A_RETRY_MS);
        } else {
            if (rc != RLK_OK) {
                const rlk_proto *rd = a->k->reads;
                rlk_a_hold *h = rd ? rlk_a_hold_find(ac, rd->hold, a->name, a->owner) : NULL;

                alk_set_msg(a, "%s", errstr ? errstr : "");     /* an END keeps the call's own */
                /* a refusal the task's doubt may explain: taken */
                a->m.doubt = rlk_a_hold_doubt_take(ac, rlk_acq_doubt_kind(&a->m, errstr, h ?
                                                   h->count : 0), a->name, a->owner);
            }
            rlk_acq_reply(&a->m, rc, errstr, r, a->m.start_ms, &x);
            alk_act(a, &x);
        }
        return;
    case ALK_READ:
        if (rc != RLK_OK && in) {
            alk_read_back(a);   /* not settled yet: read again while the budget lasts */
            return;
        }
        snprintf(why, sizeof why, "%s", alk_msg(a));
        if (rc != RLK_OK)
            rlk_acq_unknown(&a->m, why, &x);
        else
            rlk_acq_read(&a->m, r, rlk_ae_now_ms(), why, &x);
        if (x.is == RLK_ACQ_END && x.err != RLK_OK && !x.retry)
            rlk_a_wait_quiet(&a->w);
        alk_act(a, &x);
        return;
    case ALK_GIVE_BACK:
        rc = rc == RLK_OK ? rlk_fam_release_read(r) : RLK_REL_ERROR;
        if (rc == RLK_REL_RELEASED || rc == RLK_REL_STILL_HELD) {
            RLK_A_COUNT(a->h, lost_given_back);
            a->give_back--;
        } else
            a->give_back = 0;   /* not ours (the hold went meanwhile), or unknown: no more */
        if (a->rest)
            alk_rest(a, rc);
        else
            alk_give_back(a);
        return;
    case ALK_RELEASE:
        if (again)
            alk_release(a);
        else
            alk_released(a, rc, rc == RLK_OK ? rlk_fam_release_read(r) : RLK_REL_ERROR, -1,
                         errstr);
        return;
    default:
        /* This client's holds of the name that the script cleared: those of every kind whose
         * force unlock is the same script (the same data). */
        rlk_a_hold_drop_forced(a->h.ac, a->name, a->k);
        rlk_ae_complete(a->h.r, RLK_OK, r->type == REDIS_REPLY_INTEGER ? r->integer : 0, NULL,
                        NULL);
    }
}

/* ---------------------------------------------------------------- the requests */

/* The values of o the row's calls carry (the machine's: a value list's, checked), kept: 0; -1:
 * the request is completed (RLK_ERR_ARG, nothing sent; out of memory). */
static int alk_values(rlk_a_lockreq *a, const char *who, const rlk_a_lock_opts *o)
{
    char why[256];
    int rc;

    if ((rc = rlk_proto_values_take(a->k, o ? o->values : NULL, o ? o->nvalues : 0, &a->values,
                                  why, sizeof why)) == RLK_OK)
        return 0;
    rlk_ae_complete(a->h.r, rc, 0, NULL, "%s %s: %s", who, a->name,
                    rc == RLK_ERR_ARG ? why : "out of memory");
    return -1;
}

/* The waiter's channels by the way of waiting the machine's begin x says, and its listener (a
 * spinning wait: its deadline only). -1: out of memory or closing. */
static int alk_listen(rlk_a_lockreq *a, const rlk_acq_act *x)
{
    if (x->wait == RLK_PROTO_WAIT_SPIN)
        return rlk_a_wait_listen(&a->w, NULL, a->wait_ms);
    if (!(a->channel = rlk_proto_keys_get(&a->keys, x->channel)))
        return -1;
    /* Grants come on the client's wake channel, the lock's channel only while first; where a
     * grant's reach is not counted, a plain ticket's come on the lock's channel, its only one
     * (the ticket drawn as the blocking API draws it, kinds/names.h). */
    if (x->wait == RLK_PROTO_WAIT_QUEUE) {
        a->ticket = rlk_acq_ticket(rlk_ae_counts_exact(a->h.ac), rlk_async_uuid(a->h.ac));
        if (rlk_names_ticket_wakes(a->ticket) &&
            !(a->mine = rlk_names_wake_channel(a->channel,
                                               rlk_names_wake_cid(rlk_async_uuid(a->h.ac)))))
            return -1;
    } else if (x->wait == RLK_PROTO_WAIT_FAIR &&
               !(a->mine = rlk_names_waiter_channel(a->name, a->owner, strlen(a->owner)))) {
        return -1;
    }
    a->w.grants = x->wait == RLK_PROTO_WAIT_QUEUE ? a->mine : NULL;
    a->w.owner = a->owner;      /* a held grant must name it, and its wait */
    a->w.wait = rlk_names_wait_id();
    return rlk_a_wait_listen(&a->w, a->mine ? a->mine : a->channel, a->wait_ms);
}

rlk_async_req *rlk_a_lock_acquire(rlk_async *ac, const rlk_proto *k, const char *who,
                                  const char *name, unsigned long long task, long long wait_ms,
                                  long long lease_ms, const rlk_a_lock_opts *o, rlk_async_fn fn,
                                  void *privdata)
{
    rlk_a_lockreq *a = alk_new(ac, 1, k, who, name, task, fn, privdata);
    rlk_acq_act x;
    rlk_client *c;
    rlk_a_hold *held;

    if (!a || rlk_ae_req_done(a->h.r))
        return a ? a->h.r : NULL;
    rlk_ae_req_metric(a->h.r, k->hold, name);
    c = rlk_ae_client(ac);
    if (rlk_a_common_lock_args(a->h.r, who, name, wait_ms, lease_ms) || alk_values(a, who, o) ||
        (o && o->delay_ms &&
         rlk_a_common_range(a->h.r, who, name, "delay_ms", o->delay_ms, 1, RLK_NUM_MAX)))
        return a->h.r;
    if (o) {
        if (o->value && !(a->value = strdup(o->value)))
            goto nomem;
        a->spin_initial = (int)o->spin_initial_ms;  /* checked: 1..RLK_SPIN_MAX_MS */
        a->spin_max = (int)o->spin_max_ms;
        a->delay_ms = o->delay_ms;
    }
    a->watchdog = lease_ms == -1;
    a->lease_ms = a->watchdog ? c->watchdog_lease_ms : lease_ms;
    a->wait_ms = wait_ms;
    held = rlk_a_hold_find(ac, k->hold, name, a->owner);
    if (held && held->row && rlk_proto_keeps(held->row, k)) {
        alk_bind(a, held->row);     /* a re-entry keeps its hold's lock-delay, or its lack */
        a->delay_ms = held->kind_data;
    }
    alk_machine(a, held);
    if (rlk_acq_begin(&a->m, held ? held->token : 0, &x) == RLK_ACQ_END) {
        rlk_ae_complete(a->h.r, x.err, x.value, NULL, x.msg[0] ? "%s" : NULL, x.msg);
        return a->h.r;
    }
    /* A single try, or a re-entry: never queued (kinds/lock.c does the same). */
    a->waiter = wait_ms != 0 && !held;
    if (a->waiter && alk_listen(a, &x) != 0)
        goto nomem;
    /* The first try, without a ticket: the uncontended path. A waiter whose channel another
     * task keeps subscribed queues with it at once (a grant can reach it), as the blocking
     * API's first attempt does when its channel lingers (runtime/wait.h): one call, not a try
     * and then a queuing attempt. It joins as a new waiter (t, not -t: nothing counted queued
     * before its reply), as the new ticket drawn after a -4 does (alk_act). */
    if (a->ticket && rlk_ae_sub_take_ready(a->w.sub))
        a->w.ticket = a->ticket;
    alk_attempt(a);
    return a->h.r;
nomem:
    rlk_a_common_unsent(a->h.r, who, name);
    return a->h.r;
}

rlk_async_req *rlk_a_lock_release(rlk_async *ac, const rlk_proto *k, const char *who,
                                  const char *name, unsigned long long task,
                                  const rlk_a_lock_opts *o, rlk_async_fn fn, void *privdata)
{
    rlk_a_lockreq *a = alk_new(ac, 0, k, who, name, task, fn, privdata);
    rlk_a_hold *h;

    if (!a || rlk_ae_req_done(a->h.r) || alk_values(a, who, o))
        return a ? a->h.r : NULL;
    /* The release of the row the hold was taken with (a non-reentrant lock's, the
     * election's resign), never one with values for one without or back. */
    h = rlk_a_hold_find(ac, k->hold, name, a->owner);
    if (h && h->row && rlk_proto_releases(h->row, a->k))
        alk_bind(a, rlk_lock_release_row(h->row, rlk_ae_counters(ac)));
    alk_release(a);
    return a->h.r;
}

rlk_async_req *rlk_async_lock(rlk_async *ac, int kind, const char *name, unsigned long long task,
                              long long wait_ms, long long lease_ms, rlk_async_fn fn,
                              void *privdata)
{
    return rlk_a_lock_acquire(ac, rlk_a_kind_row(kind), "rlk_async_lock", name, task, wait_ms,
                              lease_ms, NULL, fn, privdata);
}

rlk_async_req *rlk_async_lock_nr(rlk_async *ac, int kind, const char *name, unsigned long long task,
                                 long long wait_ms, long long lease_ms, rlk_async_fn fn,
                                 void *privdata)
{
    return rlk_a_lock_acquire(ac, rlk_a_kind_nr(kind), "rlk_async_lock_nr", name, task, wait_ms,
                              lease_ms, NULL, fn, privdata);
}

rlk_async_req *rlk_async_lock_spin(rlk_async *ac, const char *name, unsigned long long task,
                                   long long wait_ms, long long lease_ms, long long initial_ms,
                                   long long max_ms, rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.spin_initial_ms = initial_ms, .spin_max_ms = max_ms};
    const rlk_proto *k = &rlk_lock_spin_row;

    /* rlk_lock_set_spin's bounds: 0 for either is Redisson's default. */
    if (o.spin_initial_ms == 0)
        o.spin_initial_ms = RLK_SPIN_DEFAULT_INITIAL_MS;
    if (o.spin_max_ms == 0)
        o.spin_max_ms = o.spin_initial_ms > RLK_SPIN_DEFAULT_MAX_MS ? o.spin_initial_ms
                                                                    : RLK_SPIN_DEFAULT_MAX_MS;
    if (initial_ms < 0 || max_ms < 0 || o.spin_max_ms > RLK_SPIN_MAX_MS ||
        o.spin_initial_ms > o.spin_max_ms)
        k = NULL;   /* completed RLK_ERR_ARG */
    return rlk_a_lock_acquire(ac, k, "rlk_async_lock_spin", name, task, wait_ms, lease_ms, &o, fn,
                              privdata);
}

rlk_async_req *rlk_async_lock_delay(rlk_async *ac, const char *name, unsigned long long task,
                                    long long wait_ms, long long lease_ms, long long delay_ms,
                                    rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.delay_ms = delay_ms};    /* 0: off, no delay key (as the blocking) */

    return rlk_a_lock_acquire(ac, delay_ms ? &rlk_lock_delay_row : rlk_a_kind_row(RLK_KIND_LOCK),
                              "rlk_async_lock_delay", name, task, wait_ms, lease_ms, &o, fn,
                              privdata);
}

rlk_async_req *rlk_async_unlock(rlk_async *ac, int kind, const char *name, unsigned long long task,
                                rlk_async_fn fn, void *privdata)
{
    return rlk_a_lock_release(ac, rlk_a_kind_row(kind), "rlk_async_unlock", name, task, NULL, fn,
                              privdata);
}

rlk_async_req *rlk_a_lock_force(rlk_async *ac, const rlk_proto *k, const char *who,
                                const char *name, const rlk_a_lock_opts *o, rlk_async_fn fn,
                                void *privdata)
{
    rlk_a_lockreq *a = alk_new(ac, 0, k, who, name, 0, fn, privdata);

    if (!a || rlk_ae_req_done(a->h.r) || alk_values(a, who, o))
        return a ? a->h.r : NULL;
    if (alk_send(a, a->k->force, a->k->force_args, 0, 0, ALK_FORCE))
        rlk_a_common_unsent(a->h.r, who, name);
    return a->h.r;
}

rlk_async_req *rlk_async_force_unlock(rlk_async *ac, int kind, const char *name,
                                      rlk_async_fn fn, void *privdata)
{
    return rlk_a_lock_force(ac, kind == RLK_KIND_LOCK ? &rlk_lock_delay_row : rlk_a_kind_row(kind),
                            "rlk_async_force_unlock", name, NULL, fn, privdata);
}

rlk_async_req *rlk_async_force_unlock_named(rlk_async *ac, int kind, const char *name,
                                            rlk_async_fn fn, void *privdata)
{
    return rlk_a_lock_force(ac, rlk_a_kind_named(kind), "rlk_async_force_unlock_named", name,
                            NULL, fn, privdata);
}
