/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * acq.c - the one acquisition machine (acq.h): every reaction to an outcome of a lock kind's
 * acquire or release, and every message of those outcomes, once.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds/acq.h"
#include "kinds/names.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"
#include "runtime/wd.h"

#define RLK_ACQ_COUNT(q, f) do { if ((q)->counters) RLK_COUNT((q)->counters, f); } while (0)

void rlk_acq_init(rlk_acq *q, const rlk_proto *row, const char *name, const char *owner,
                  int given, long long known)
{
    *q = (rlk_acq){.row = row, .name = name, .owner = owner, .given = given, .known = known};
}

static int rlk_acq_is(rlk_acq_act *a, int is)
{
    a->is = is;
    return is;
}

/* END err, the message formatted (fmt NULL: the call's own error kept). */
static int rlk_acq_end(rlk_acq_act *a, int err, const char *fmt, ...)
{
    va_list ap;

    a->err = err;
    a->msg[0] = '\0';
    if (fmt) {
        va_start(ap, fmt);
        vsnprintf(a->msg, sizeof a->msg, fmt, ap);
        va_end(ap);
    }
    return rlk_acq_is(a, RLK_ACQ_END);
}

static int rlk_acq_reentry(const rlk_acq *q, rlk_acq_act *a)
{
    return rlk_acq_end(a, RLK_ERR_REENTRY, "%s %s: already held by %s; not acquired again",
                       q->row->what, q->name, q->owner);
}

int rlk_acq_value(const rlk_proto *row, const char *name, const char *value, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    if (!value || strlen(value) > row->value_max)
        return rlk_acq_end(a, RLK_ERR_ARG, value ? "%s %s: value longer than %zu bytes"
                           : "%s %s: a value is required", row->what, name, row->value_max);
    return RLK_ACQ_SEND;
}

int rlk_acq_begin(rlk_acq *q, long long token, rlk_acq_act *a)
{
    if (q->value && rlk_acq_value(q->row, q->name, q->value, a) == RLK_ACQ_END)
        return RLK_ACQ_END;
    rlk_acq_act_clear(a, 0);
    /* A hold this client records: refused before any I/O (it would only be refused by the
     * script, or wait behind itself); or, one hold only, its token with nothing sent (a second
     * hold would count twice in the client but once on the server). */
    if (q->known > 0 && (q->row->flags & RLK_PROTO_NON_REENTRANT))
        return rlk_acq_reentry(q, a);
    if (q->known > 0 && (q->row->flags & RLK_PROTO_ONE_HOLD)) {
        a->value = q->token = token;
        return rlk_acq_end(a, RLK_OK, NULL);
    }
    a->wait = q->row->wait;
    a->channel = q->row->wait_channel;
    return rlk_acq_is(a, RLK_ACQ_SEND);
}

int rlk_acq_cancel(const rlk_acq *q, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    a->call = q->queued ? q->row->cancel : NULL;
    a->args = q->row->cancel_args;
    a->keys = q->row->cancel_keys;
    /* A fair waiter's keep-alive drops it within a third of its thread wait otherwise; others
     * are skipped when their reservation's claim window runs out. */
    a->ttl = q->row->wait == RLK_PROTO_WAIT_FAIR ? 300 : RLK_FAM_CANCEL_NS / 1000000;
    return a->call != NULL;
}

int rlk_acq_cancel_again(int rc, int sends)
{
    return sends == 1 && (rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT);
}

/* The acquire carried a ticket, or is a fair row's: it may have queued the caller. */
static void rlk_acq_queues(rlk_acq *q)
{
    q->queued |= q->ticket != 0 || q->row->wait == RLK_PROTO_WAIT_FAIR;
}

long long rlk_acq_left(const rlk_acq *q, int rc, int outcome, long long left, long long count)
{
    const int values = (q->row->flags & RLK_PROTO_VALUES) != 0;

    if (count < 0)
        return !values;
    if (left < 0)
        left = count > 1 && (outcome == RLK_REL_STILL_HELD ||
                             (values && outcome == RLK_REL_RELEASED)) ? count - 1 : 0;
    if (rc == RLK_OK && left > 0)
        return left;
    return (rc == RLK_OK || rc == RLK_ERR_UNSETTLED) && !(values && outcome == RLK_REL_NOT_OWNER)
           ? 0 : -1;
}

int rlk_acq_reply(rlk_acq *q, int rc, const char *errstr, const redisReply *r, long long sent_ms,
                  rlk_acq_act *a)
{
    const int refused = rc != RLK_OK ? rlk_proto_refusal(errstr) : 0;
    rlk_proto_outcome o;

    rlk_acq_act_clear(a, 0);
    if ((refused == RLK_ERR_REENTRY || (refused == RLK_ERR_UPGRADE && q->row->reads)) &&
        q->doubt && !q->again) {
        /* The server counts a hold of this owner that the client does not (it was checked
         * before any I/O, or for a write no read is recorded): this thread's last unsettled
         * call was of this hold, or of a read of the same lock (an acquire reported
         * RLK_ERR_UNSETTLED that ran after all, or a release that never will), one the caller
         * was told it did not get or gave up. Given back, then acquired anew. */
        q->again = 1;
        a->n = a->retry = 1;
        a->reads = refused == RLK_ERR_UPGRADE;
        return rlk_acq_is(a, RLK_ACQ_GIVE_BACK);
    }
    if (refused == RLK_ERR_UPGRADE)
        return rlk_acq_end(a, RLK_ERR_UPGRADE, "%s %s: %s holds a read of it; release every read "
                           "before taking the write lock (no upgrade)", q->row->what, q->name,
                           q->owner);
    if (refused == RLK_ERR_REENTRY)
        return rlk_acq_reentry(q, a);
    if (rc != RLK_OK)
        return rlk_acq_end(a, rc, NULL);
    /* nil (a token row: {token}) acquired; an integer the wait; {wait, 1}: first in the queue;
     * {wait, first, 1}: free, in its lock-delay; a reader's {grant PTTL, 0}: the free lock is
     * reserved for a writer, its claim window the bound */
    switch (rlk_proto_read_acquire(r, (q->row->flags & RLK_PROTO_TOKEN) != 0, &o)) {
    case RLK_PROTO_ACQUIRED:
        q->token = o.value;
        q->start_ms = sent_ms;
        q->queued = 0;
        return rlk_acq_is(a, RLK_ACQ_RECORD);
    case RLK_PROTO_BUSY:
        if (o.value == -4 && (q->row->flags & RLK_PROTO_GRANTS) && q->ticket) {
            /* Neither queued nor recorded (its held grant lapsed, it was passed over, or its
             * first call never ran): not queued again with that ticket, whose held grant's
             * message may still come, stale. A new one, as a new waiter, at once. */
            q->queued = 0;
            a->ticket = rlk_names_wake_redraw(q->ticket < 0 ? -q->ticket : q->ticket);
            return rlk_acq_is(a, RLK_ACQ_SEND);
        }
        rlk_acq_queues(q);
        a->wait = q->row->wait;
        if (o.in_delay)
            RLK_ACQ_COUNT(q, delay_refusals);
        a->ttl = o.value;
        a->wide = o.first || o.value == -3;
        a->reserved = r->type == REDIS_REPLY_ARRAY && !o.first &&
                      q->row->wait == RLK_PROTO_WAIT_CHANNEL;
        if (q->ttl_cap > 0 && (a->ttl < 0 || a->ttl > q->ttl_cap))
            a->ttl = q->ttl_cap;
        return rlk_acq_is(a, RLK_ACQ_WAIT);
    default:
        return rlk_acq_end(a, RLK_ERR_PROTOCOL, "%s %s: %s replied type %d", q->row->what,
                           q->name, q->row->acquire, r->type);
    }
}

int rlk_acq_take_held(rlk_acq *q, long long ticket)
{
    if (!ticket || !q->row->held_grants || q->given || !rlk_names_ticket_wakes(ticket))
        return 0;
    q->row = q->row->held_grants;
    return 1;
}

int rlk_acq_held(rlk_acq *q, long long sent_ms, long long now_ms, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    if (q->lease_ms > 0 && now_ms - sent_ms >= q->lease_ms)
        return rlk_acq_is(a, RLK_ACQ_SEND);     /* read late: asked again, still queued */
    q->start_ms = sent_ms;
    q->queued = 0;      /* the release took its ticket out of the queue */
    RLK_ACQ_COUNT(q, held_grants);
    return rlk_acq_is(a, RLK_ACQ_RECORD);
}

int rlk_acq_doubt_kind(const rlk_acq *q, const char *errstr, long long reads)
{
    const int refused = q->again ? 0 : rlk_proto_refusal(errstr);

    if (refused == RLK_ERR_REENTRY)
        return q->row->hold;
    return refused == RLK_ERR_UPGRADE && q->row->reads && reads == 0 ? q->row->reads->hold : -1;
}

int rlk_acq_adds(const rlk_acq *q, long long count)
{
    return count == 0 || !(q->row->flags & RLK_PROTO_ONE_HOLD);
}

int rlk_acq_lost(rlk_acq *q, int rel, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    q->rel = rel;
    if (!rel)
        rlk_acq_queues(q);
    if (!rel && (q->row->flags & RLK_PROTO_GRANTS) && q->prev_sent_ms > 0 &&
        q->prev_sent_ms < q->start_ms)
        q->start_ms = q->prev_sent_ms;
    rlk_fam_count_field(q->row->hold, q->owner, a->field, sizeof a->field);
    /* A token row: the count, the hold's token and the PTTL in one read of its held script
     * (never the token of a holder that took the lock since); a value list: each value's count
     * (fastmulti/counts); else the holder's field. */
    a->call = !rel || (q->row->flags & RLK_PROTO_VALUES) ? q->row->held : NULL;
    a->args = q->row->held_args;
    return rlk_acq_is(a, RLK_ACQ_READ);
}

/* The end of a lost reply (why: its cause), one rule for both APIs (docs/c-api.md "Errors"):
 * RLK_ERR_UNSETTLED when the outcome is unknown, RLK_ERR_TIMEOUT when it is settled and the
 * call ends without it; "<what> <name>: <why> (outcome unknown|settled: <what fmt says>)". */
static int rlk_acq_lost_end(rlk_acq *q, rlk_acq_act *a, int err, const char *why,
                            const char *fmt, ...)
{
    char tail[RLK_ACQ_MSG];
    va_list ap;

    if (err == RLK_ERR_UNSETTLED)
        RLK_ACQ_COUNT(q, lost_unsettled);
    va_start(ap, fmt);
    vsnprintf(tail, sizeof tail, fmt, ap);
    va_end(ap);
    return rlk_acq_end(a, err, "%s %s: %s (%s: %s)", q->row->what, q->name, why,
                       err == RLK_ERR_UNSETTLED ? "outcome unknown" : "settled", tail);
}

int rlk_acq_waited(const char *what, const char *name, const char *busy, long long elapsed_ms,
                   rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    return rlk_acq_end(a, RLK_ERR_BUSY, "%s %s: %s after %lld ms", what, name,
                       busy ? busy : "held by another holder", elapsed_ms);
}

int rlk_acq_busy(rlk_acq *q, long long elapsed_ms, rlk_acq_act *a)
{
    return rlk_acq_waited(q->row->what, q->name, q->row->busy, elapsed_ms, a);
}

int rlk_acq_rest(const rlk_acq *q, int doubt)
{
    return !(q->row->flags & RLK_PROTO_VALUES) && (doubt || !q->given);
}

int rlk_acq_not_held(const rlk_acq *q, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    return rlk_acq_end(a, RLK_ERR_NOT_OWNER, "unlock %s %s: not %s by %s", q->row->what, q->name,
                       q->row->flags & RLK_PROTO_VALUES ? "every value held" : "held", q->owner);
}

int rlk_acq_unknown(rlk_acq *q, const char *why, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    /* It may still run: kept, but for a given id (its count is not this client's) and a value
     * list (the doubt is read back by the holder's field, which a group hash has not). */
    a->keep_doubt = !q->given && !(q->row->flags & RLK_PROTO_VALUES);
    return rlk_acq_lost_end(q, a, RLK_ERR_UNSETTLED, why, "whether the %s ran could not be found out",
                             q->rel ? "release" : "acquire");
}

/* The count could not attribute what the server holds: nothing adopted, given back or sent
 * again, no doubt kept; a hold the call may have left ends with its lease. */
static int rlk_acq_shared(rlk_acq *q, long long now, const char *why, rlk_acq_act *a)
{
    char whom[120];

    if (q->given)
        snprintf(whom, sizeof whom, "this holder id, which was set by the application and may "
                 "be another process's too");
    else
        snprintf(whom, sizeof whom, "this holder, where this client knew of %lld", q->known);
    return rlk_acq_lost_end(q, a, RLK_ERR_UNSETTLED, why, "the server counts %lld hold%s of %s, so the %s's reply "
                             "cannot be read back from it; nothing adopted or sent again: a hold "
                             "it left ends with its lease", now, now == 1 ? "" : "s", whom,
                             q->rel ? "release" : "acquire");
}

/* A read-back's count, and a token row's token and PTTL: 0, or -1 for another shape (a value
 * list's counts that do not tell). */
static int rlk_acq_count(const rlk_acq *q, const redisReply *r, long long out[3])
{
    if (q->row->flags & RLK_PROTO_VALUES)
        return (out[0] = rlk_acq_values_count(r, q->known, q->exact, q->rel)) < 0 ? -1 : 0;
    if (!(q->row->flags & RLK_PROTO_TOKEN) || q->rel) {
        out[0] = r->type == REDIS_REPLY_STRING ? strtoll(r->str, NULL, 10) : 0;
        return r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_NIL ? 0 : -1;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 3)    /* {count, token, PTTL} */
        return -1;
    for (int i = 0; i < 3; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return -1;
        out[i] = r->element[i]->integer;
    }
    return 0;
}

static int rlk_acq_release_read(rlk_acq *q, long long now, const char *why, rlk_acq_act *a)
{
    switch (rlk_acq_release_rule(q->known, now, q->given)) {
    case RLK_ACQ_REL_AGAIN:
        return rlk_acq_is(a, RLK_ACQ_SEND);
    case RLK_ACQ_REL_RAN:
        a->value = now > 0 ? RLK_REL_STILL_HELD : RLK_REL_RELEASED;
        a->n = (int)now;
        return rlk_acq_end(a, RLK_OK, NULL);
    case RLK_ACQ_REL_GONE:
        a->value = RLK_REL_NOT_OWNER;   /* gone meanwhile (expired, deleted) */
        return rlk_acq_end(a, RLK_OK, NULL);
    default:
        return rlk_acq_shared(q, now, why, a);
    }
}

int rlk_acq_read(rlk_acq *q, const redisReply *r, long long read_ms, const char *why,
                 rlk_acq_act *a)
{
    long long held[3] = {0, 0, -2};     /* the count, and a token row's token, PTTL */
    const int token = !q->rel && (q->row->flags & RLK_PROTO_TOKEN);
    const int values = (q->row->flags & RLK_PROTO_VALUES) != 0;
    rlk_acq_settled d;

    rlk_acq_act_clear(a, 0);
    if (rlk_acq_count(q, r, held) != 0)
        return values ? rlk_acq_lost_end(q, a, RLK_ERR_UNSETTLED, why, "the values' counts do not tell whether "
                                          "the %s ran", q->rel ? "release" : "acquire")
                      : rlk_acq_lost_end(q, a, RLK_ERR_UNSETTLED, why, "the read-back of %s %s replied an "
                                          "unexpected shape", q->row->what, q->name);
    if (q->rel)
        return rlk_acq_release_read(q, held[0], why, a);
    if (held[0] > 0 && q->given)
        return rlk_acq_shared(q, held[0], why, a);
    d = rlk_acq_settle_rule(q->known, held[0], !token || (held[2] > 0 && held[1] > 0));
    if (!d.ran) {
        /* It did not run (or has not taken the lock): nothing to count; sent again (it can no
         * longer run twice) within the call's wait, else its error (a single try's: now). */
        RLK_ACQ_COUNT(q, lost_not_run);
        a->retry = 1;
        if (read_ms < q->again_by_ms)
            return rlk_acq_is(a, RLK_ACQ_SEND);
        return rlk_acq_lost_end(q, a, RLK_ERR_TIMEOUT, why, "the acquire did not take the %s",
                                values ? "values" : "lock");
    }
    a->n = d.give_back;
    if (token)
        rlk_fam_adopt_hook(q->name);
    if (!d.adopt) {
        /* It ran, but its hold had no lease left when read (or no token): never adopted past
         * its lease; what the server still counts is given back. */
        RLK_ACQ_COUNT(q, lost_not_run);
        rlk_acq_lost_end(q, a, RLK_ERR_TIMEOUT, why, "the acquire ran, but its hold had %s when "
                         "read back: not adopted", held[1] <= 0 ? "no token" : "no lease left");
        return rlk_acq_is(a, RLK_ACQ_GIVE_BACK);
    }
    if (token) {
        /* Its token, read with the count; its lease began lease - PTTL before the read. */
        q->token = held[1];
        q->start_ms = read_ms - (held[2] < q->lease_ms ? q->lease_ms - held[2] : 0);
    }
    /* It ran: the caller gets one hold (its lease from the send, q->start_ms, the driver's);
     * earlier lost acquires of this holder that ran too (within this wait, or reported
     * unsettled) are given back. */
    q->adopt = 1;
    q->queued = 0;
    RLK_ACQ_COUNT(q, lost_adopted);
    return rlk_acq_is(a, d.give_back > 0 ? RLK_ACQ_GIVE_BACK : RLK_ACQ_RECORD);
}

long long rlk_acq_values_count(const redisReply *r, long long known, int exact, int release)
{
    int all_known = 1, all_next = 1, all_prev = 1, some_free = 0;

    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements == 0)
        return -1;
    for (size_t k = 0; k < r->elements; k++) {
        const redisReply *e = r->element[k];

        if (e->type != REDIS_REPLY_INTEGER)
            return -1;
        all_known &= e->integer == known;
        all_next &= e->integer == known + 1;
        all_prev &= e->integer == known - 1;
        some_free |= e->integer == 0;
    }
    if (!release)
        return all_next ? known + 1 : some_free || (exact && all_known) ? known : -1;
    if (some_free || (exact && all_prev))
        return known > 0 ? known - 1 : 0;
    return all_known ? known : -1;
}

long long rlk_acq_values_print(const char *const *values)
{
    unsigned long long h = 14695981039346656037ULL;     /* FNV-1a, each value and its NUL */

    for (; values && *values; values++)
        for (const char *c = *values;; c++) {
            h = (h ^ (unsigned char)*c) * 1099511628211ULL;
            if (!*c)
                break;
        }
    return (long long)(h >> 1) | 1;
}

long long rlk_acq_values_datum(long long was, long long count, const char *const *values)
{
    long long print = rlk_acq_values_print(values);

    return count == 0 || was == print ? print : 0;
}

rlk_acq_settled rlk_acq_settle_rule(long long known, long long now, int adoptable)
{
    rlk_acq_settled d = {now > known, 0, 0};

    if (d.ran) {
        d.adopt = adoptable != 0;
        d.give_back = now - known - d.adopt < RLK_ACQ_GIVE_BACK_MAX
                      ? (int)(now - known - d.adopt) : RLK_ACQ_GIVE_BACK_MAX;
    }
    return d;
}

int rlk_acq_release_rule(long long known, long long now, int given)
{
    if (now > 0 && (given || known <= 0))
        return RLK_ACQ_REL_UNKNOWN;     /* a given id still held, or a hold not this client's */
    if (now == 0 && known <= 1)
        return RLK_ACQ_REL_RAN;         /* released (a hold it did not record: gone now too) */
    if (now == known)
        return RLK_ACQ_REL_AGAIN;
    if (now == 0)
        return RLK_ACQ_REL_GONE;
    return now < known ? RLK_ACQ_REL_RAN : RLK_ACQ_REL_UNKNOWN;
}

long long rlk_acq_ticket(int counts_exact, const char *uuid)
{
    return counts_exact ? rlk_names_wake_ticket(rlk_names_wake_cid(uuid))
                        : rlk_names_plain_ticket();
}

/* ---------------------------------------------------------------- the semaphores */

/* A busy psemaphore/acquire's wait, by its reply r (rlk_proto_read_psem's o): ms + 1 until the
 * earliest held permit expires (its expiry publishes nothing; it falls on a whole ms), -3 first
 * behind another ticket's reservation, -1 none (queued behind others: a grant wakes it; or
 * nothing expires by itself). */
static long long rlk_acq_psem_wait(const redisReply *r, const rlk_proto_outcome *o)
{
    if (o->first || o->value == -3 || r->type == REDIS_REPLY_NIL)
        return o->first && o->value >= 0 ? o->value + 1 : o->value;
    return (o->value > 0 ? o->value : 0) + 1;
}

int rlk_acq_sem_reply(rlk_acq_sem *q, int rc, const char *errstr, const redisReply *r,
                      rlk_acq_act *a)
{
    rlk_proto_outcome o;

    rlk_acq_act_clear(a, 0);
    /* After a lost call, an id held already is its own (128 random bits each): it ran */
    if (rc == RLK_ERR_SCRIPT && q->lost && rlk_proto_refusal(errstr) == RLK_PROTO_HELD)
        return rlk_acq_is(a, RLK_ACQ_RECORD);
    if (rc != RLK_OK)
        return rlk_acq_end(a, rc, NULL);
    switch (q->ids ? rlk_proto_read_psem(r, (size_t)q->ids, &o) : rlk_proto_read_sem(r, &o)) {
    case RLK_PROTO_ACQUIRED:
        return rlk_acq_is(a, RLK_ACQ_RECORD);
    case RLK_PROTO_BUSY:
        /* a semaphore's: {-1, 1} first, -3 behind a reservation, a single try's claim window */
        a->ttl = q->ids ? rlk_acq_psem_wait(r, &o)
                       : o.value == -3 || !(o.first || o.value < 0) ? o.value : -1;
        a->wide = o.first || o.value == -3;
        return rlk_acq_is(a, RLK_ACQ_WAIT);
    default:
        return rlk_acq_end(a, RLK_ERR_PROTOCOL, "%s %s: %s replied type %d", q->what, q->name,
                           q->script, r->type);
    }
}

int rlk_acq_sem_lost(rlk_acq_sem *q, int rc, const char *why, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    q->lost = 1;
    q->lost_rc = rc;
    if (q->ids) {
        a->call = "psemaphore/lease_time";
        a->args = "id publish";
        return rlk_acq_is(a, RLK_ACQ_READ);
    }
    RLK_ACQ_COUNT(q, lost_unsettled);
    return rlk_acq_end(a, RLK_ERR_UNSETTLED, "%s %s: the acquire's reply was lost and %lld "
                       "permit(s) may have been taken (not repeated: it could take them twice): "
                       "%s", q->what, q->name, q->permits, why);
}

int rlk_acq_sem_busy(const char *what, const char *name, long long permits, long long elapsed_ms,
                     rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    return rlk_acq_end(a, RLK_ERR_BUSY, "%s %s: %lld permit(s) not available after %lld ms", what,
                       name, permits, elapsed_ms);
}

int rlk_acq_sem_read(rlk_acq_sem *q, const redisReply *r, const char *why, rlk_acq_act *a)
{
    rlk_acq_act_clear(a, 0);
    if (r && r->type == REDIS_REPLY_INTEGER && r->integer != 0) {
        RLK_ACQ_COUNT(q, lost_adopted);     /* its first id held: it took them all */
        return rlk_acq_is(a, RLK_ACQ_RECORD);
    }
    a->retry = 1;
    if (!r)
        return rlk_acq_end(a, q->lost_rc, "%s", why);
    RLK_ACQ_COUNT(q, lost_not_run);
    return rlk_acq_end(a, q->lost_rc, "%s (settled: the acquire did not take the permits)", why);
}
