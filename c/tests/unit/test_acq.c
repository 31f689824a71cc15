/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The one acquisition machine (kinds/acq.h), as test_proto.c tests the readers: every row of
 * every lock kind taken through each outcome with canned replies and no server (the begin
 * held and not, acquired, busy, first in the queue, in its lock-delay, reserved, the refusals,
 * a reply of another shape, a lost acquire that ran / did not run / had no lease left / left
 * holds beyond it, a shared holder id, an unreadable read-back, a lost release), and the two
 * settle rules and the ticket choice on their own, and one campaign of the election through
 * each. unit_test_acq_control builds this program with one transition of acq.c planted wrong (a
 * lost release of a hold the client did not record, read back gone, sent again instead of
 * settled as released) and must fail; so must unit_test_acq_control_sem and _elect (a lost
 * acquire that did not run ended at once instead of sent again within the call's wait).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kinds/acq.h"
#include "kinds/elect.h"
#include "kinds/fairlock.h"
#include "kinds/fastmulti.h"
#include "kinds/fenced.h"
#include "kinds/lock.h"
#include "kinds/rwlock.h"

static const rlk_proto *const rows[] = {
    &rlk_lock_row, &rlk_lock_spin_row, &rlk_lock_delay_row, &rlk_lock_nr_row, &rlk_fairlock_row,
    &rlk_fairlock_nr_row, &rlk_fenced_row, &rlk_rwlock_read_row, &rlk_rwlock_write_row,
    &rlk_elect_row, &rlk_fastmulti_row,
};
#define NROWS (sizeof rows / sizeof rows[0])

static rlk_rt_counters counters;
static long long again_by;     /* each machine's again_by_ms (mk) */

/* Canned replies. */
static redisReply nil = {.type = REDIS_REPLY_NIL};
static redisReply ints[8];
static redisReply str[4];
static char strbuf[4][8];

static redisReply *i(long long v)
{
    static int next;
    redisReply *r = &ints[next++ % 8];

    *r = (redisReply){.type = REDIS_REPLY_INTEGER, .integer = v};
    return r;
}

static redisReply *s(long long v)
{
    static int next;
    int k = next++ % 4;

    snprintf(strbuf[k], sizeof strbuf[k], "%lld", v);
    str[k] = (redisReply){.type = REDIS_REPLY_STRING, .str = strbuf[k],
                          .len = strlen(strbuf[k])};
    return &str[k];
}

static redisReply *arr(size_t n, redisReply **e)
{
    static redisReply a[4];
    static int next;
    redisReply *r = &a[next++ % 4];

    *r = (redisReply){.type = REDIS_REPLY_ARRAY, .elements = n, .element = e};
    return r;
}

static int token_row(const rlk_proto *k)
{
    return (k->flags & RLK_PROTO_TOKEN) != 0;
}

static void mk(rlk_acq *q, const rlk_proto *k, int given, long long known)
{
    rlk_acq_init(q, k, "res", "uuid:1", given, known);
    q->counters = &counters;
    q->lease_ms = 10000;
    q->again_by_ms = again_by;
}

/* ------------------------------------------------------------ begin and reply */

static void walk_begin(const rlk_proto *k)
{
    rlk_acq q;
    rlk_acq_act a;

    mk(&q, k, 0, 0);
    CHECKF(rlk_acq_begin(&q, 0, &a) == RLK_ACQ_SEND, "%s: not held: send", k->acquire);
    /* a value longer than the row takes (a row without one takes none): refused, nothing sent */
    q.value = "xy";
    rlk_acq_begin(&q, 0, &a);
    CHECKF(k->value_max ? a.is == RLK_ACQ_SEND
                        : a.is == RLK_ACQ_END && a.err == RLK_ERR_ARG &&
                          strstr(a.msg, "value longer than 0 bytes") != NULL,
           "%s: a value: is %d", k->acquire, a.is);
    mk(&q, k, 0, 1);
    rlk_acq_begin(&q, 42, &a);
    if (k->flags & RLK_PROTO_NON_REENTRANT) {
        CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_REENTRY, "%s: held: refused", k->acquire);
        CHECK_STR_CONTAINS(a.msg, "not acquired again");
    } else if (k->flags & RLK_PROTO_ONE_HOLD) {
        CHECKF(a.is == RLK_ACQ_END && a.err == RLK_OK && a.value == 42 && q.token == 42,
               "%s: held: its token, nothing sent", k->acquire);
    } else {
        CHECKF(a.is == RLK_ACQ_SEND, "%s: a re-entry is sent", k->acquire);
    }
}

static void walk_reply(const rlk_proto *k)
{
    redisReply *e2[2], *e3[3], *t1[1];
    unsigned long long delay0 = counters.delay_refusals;
    rlk_acq q;
    rlk_acq_act a;

    /* acquired: nil, a token row's {token} */
    mk(&q, k, 0, 0);
    t1[0] = i(77);
    rlk_acq_reply(&q, RLK_OK, NULL, token_row(k) ? arr(1, t1) : &nil, 500, &a);
    CHECKF(a.is == RLK_ACQ_RECORD && q.start_ms == 500 && q.token == (token_row(k) ? 77 : 0),
           "%s: acquired: record, is %d", k->acquire, a.is);
    /* a token row's nil, another row's {token}: another shape */
    mk(&q, k, 0, 0);
    rlk_acq_reply(&q, RLK_OK, NULL, token_row(k) ? &nil : arr(1, t1), 500, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_PROTOCOL, "%s: another shape", k->acquire);
    CHECK_STR_CONTAINS(a.msg, k->acquire);
    /* busy: the holder's TTL; -3 behind a reservation */
    mk(&q, k, 0, 0);
    rlk_acq_reply(&q, RLK_OK, NULL, i(1200), 500, &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.ttl == 1200 && !a.wide && !a.reserved, "%s: busy",
           k->acquire);
    rlk_acq_reply(&q, RLK_OK, NULL, i(-3), 500, &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.ttl == -3 && a.wide, "%s: behind a reservation",
           k->acquire);
    /* a busy wait capped (the fair lock's keep-alive) */
    q.ttl_cap = 100;
    rlk_acq_reply(&q, RLK_OK, NULL, i(-1), 500, &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.ttl == 100, "%s: no TTL, capped", k->acquire);
    q.ttl_cap = 0;
    /* refusals */
    rlk_acq_reply(&q, RLK_ERR_SCRIPT, "RLK_REENTRY held", NULL, 500, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_REENTRY, "%s: re-entry refused", k->acquire);
    CHECK_STR_CONTAINS(a.msg, "already held by uuid:1; not acquired again");
    q.doubt = 1;    /* this thread's doubt of the hold: given back once, then sent again */
    rlk_acq_reply(&q, RLK_ERR_SCRIPT, "RLK_REENTRY held", NULL, 500, &a);
    CHECKF(a.is == RLK_ACQ_GIVE_BACK && a.n == 1 && a.retry && !q.adopt, "%s: the doubt given "
           "back", k->acquire);
    rlk_acq_reply(&q, RLK_ERR_SCRIPT, "RLK_REENTRY held", NULL, 500, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_REENTRY, "%s: refused again: ends",
           k->acquire);
    rlk_acq_reply(&q, RLK_ERR_SCRIPT, "ERR x: RLK_UPGRADE reader", NULL, 500, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UPGRADE, "%s: upgrade refused", k->acquire);
    CHECK_STR_CONTAINS(a.msg, "no upgrade");
    /* a write refused for a read of the owner, no read recorded, this thread's doubt of a read
     * of the lock (a row with reads): that read given back once, then sent again */
    mk(&q, k, 0, 0);
    q.doubt = 1;
    rlk_acq_reply(&q, RLK_ERR_SCRIPT, "ERR x: RLK_UPGRADE reader", NULL, 500, &a);
    CHECKF(k->reads ? a.is == RLK_ACQ_GIVE_BACK && a.reads && a.n == 1 && a.retry
                    : a.is == RLK_ACQ_END && a.err == RLK_ERR_UPGRADE,
           "%s: upgrade refused, a doubt: is %d", k->acquire, a.is);
    rlk_acq_reply(&q, RLK_ERR_SCRIPT, "ERR x: RLK_UPGRADE reader", NULL, 500, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UPGRADE && !a.reads,
           "%s: upgrade refused again: ends", k->acquire);
    /* which doubt a refusal may be: the row's own for a re-entry; its read row's for an
     * upgrade while no read is recorded; none once sent again after a give-back, or for
     * another refusal */
    q.again = 1;
    CHECK_INT_EQ(rlk_acq_doubt_kind(&q, "RLK_REENTRY held", 0), -1);
    mk(&q, k, 0, 0);
    CHECK_INT_EQ(rlk_acq_doubt_kind(&q, "RLK_REENTRY held", 0), k->hold);
    CHECK_INT_EQ(rlk_acq_doubt_kind(&q, "ERR x: RLK_UPGRADE reader", 0),
                 k->reads ? k->reads->hold : -1);
    CHECK_INT_EQ(rlk_acq_doubt_kind(&q, "ERR x: RLK_UPGRADE reader", 1), -1);
    CHECK_INT_EQ(rlk_acq_doubt_kind(&q, "RLK_WRONGTYPE a string", 0), -1);
    rlk_acq_reply(&q, RLK_ERR_SCRIPT, "RLK_WRONGTYPE a string", NULL, 500, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_SCRIPT && !a.msg[0], "%s: another error, "
           "its own message", k->acquire);
    if (token_row(k))
        return;     /* a token row's scripts reply nil, {token} or an integer only */
    /* first in the queue {wait, 1}; in its lock-delay {wait, 0, 1}; reserved {grant PTTL, 0} */
    e2[0] = i(900);
    e2[1] = i(1);
    rlk_acq_reply(&q, RLK_OK, NULL, arr(2, e2), 500, &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.ttl == 900 && a.wide && !a.reserved, "%s: first",
           k->acquire);
    e3[0] = i(300);
    e3[1] = i(0);
    e3[2] = i(1);
    rlk_acq_reply(&q, RLK_OK, NULL, arr(3, e3), 500, &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.ttl == 300 && !a.wide, "%s: in the lock-delay",
           k->acquire);
    CHECKF(counters.delay_refusals == delay0 + 1, "%s: a refusal in the delay counted",
           k->acquire);
    e2[0] = i(50);
    e2[1] = i(0);
    rlk_acq_reply(&q, RLK_OK, NULL, arr(2, e2), 500, &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.reserved == (k->wait == RLK_PROTO_WAIT_CHANNEL),
           "%s: reserved for a writer: %d", k->acquire, a.reserved);
}

/* ------------------------------------------------------------ a lost acquire */

/* The read-back of a lost acquire of row k, the client knowing of known, the server counting
 * now (a token row: token and PTTL too). */
static void lost(const rlk_proto *k, int given, long long known, long long now, long long token,
                 long long pttl, rlk_acq *q, rlk_acq_act *a)
{
    static redisReply *e[3], *v[2];
    const int values = (k->flags & RLK_PROTO_VALUES) != 0;
    redisReply *r;

    mk(q, k, given, known);
    rlk_acq_lost(q, 0, a);
    CHECKF(a->is == RLK_ACQ_READ, "%s: a lost reply is read back", k->acquire);
    CHECKF(a->call == (token_row(k) || values ? k->held : NULL), "%s: read back with %s",
           k->acquire, a->call ? a->call : "HGET");
    CHECKF(strcmp(a->field, k->hold == RLK_KIND_WRITE ? "uuid:1:write" : "uuid:1") == 0,
           "%s: the field %s", k->acquire, a->field);
    if (values) {
        v[0] = i(now > known ? now : 0);   /* a value free: it did not run */
        v[1] = i(now);
        r = arr(2, v);
    } else if (a->call) {
        e[0] = i(now);
        e[1] = i(token);
        e[2] = i(pttl);
        r = arr(3, e);
    } else {
        r = now ? s(now) : &nil;
    }
    rlk_acq_read(q, r, 20000, "timed out", a);
}

static void walk_lost(const rlk_proto *k)
{
    const int tok = token_row(k) && !(k->flags & RLK_PROTO_VALUES);
    rlk_rt_counters c0 = counters;
    rlk_acq q;
    rlk_acq_act a;

    /* it ran: adopted (a token row: its token, its lease from the read) */
    lost(k, 0, 0, 1, 9, 4000, &q, &a);
    CHECKF(a.is == RLK_ACQ_RECORD && q.adopt, "%s: ran: adopted, is %d", k->acquire, a.is);
    if (tok)
        CHECKF(q.token == 9 && q.start_ms == 20000 - (10000 - 4000), "%s: token %lld start %lld",
               k->acquire, q.token, q.start_ms);
    else
        CHECKF(q.start_ms == 0, "%s: the lease from the send, not the read", k->acquire);
    CHECKF(counters.lost_adopted == c0.lost_adopted + 1, "%s: adopted counted", k->acquire);
    /* it did not run: the call's error, settled, may be sent again */
    lost(k, 0, 1, 1, 9, 4000, &q, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_TIMEOUT && a.retry, "%s: did not run",
           k->acquire);
    CHECK_STR_CONTAINS(a.msg, k->flags & RLK_PROTO_VALUES
                              ? "timed out (settled: the acquire did not take the values)"
                              : "timed out (settled: the acquire did not take the lock)");
    CHECKF(counters.lost_not_run == c0.lost_not_run + 1, "%s: not run counted", k->acquire);
    /* it did not run, read within the call's wait: sent again */
    again_by = 20001;
    lost(k, 0, 1, 1, 9, 4000, &q, &a);
    again_by = 0;
    CHECKF(a.is == RLK_ACQ_SEND && a.retry, "%s: did not run, in the wait: again",
           k->acquire);
    if (tok) {
        /* it ran, no lease left (or no token): given back, not adopted */
        lost(k, 0, 0, 1, 9, 0, &q, &a);
        CHECKF(a.is == RLK_ACQ_GIVE_BACK && a.n == 1 && !q.adopt && a.err == RLK_ERR_TIMEOUT,
               "%s: no lease left: given back", k->acquire);
        CHECK_STR_CONTAINS(a.msg, "no lease left when read back: not adopted");
        lost(k, 0, 0, 1, 0, 4000, &q, &a);
        CHECKF(a.is == RLK_ACQ_GIVE_BACK && !q.adopt, "%s: no token: given back", k->acquire);
        CHECK_STR_CONTAINS(a.msg, "no token");
    }
    if (!(k->flags & RLK_PROTO_VALUES)) {
        /* it ran, and two earlier lost acquires too: one adopted, two given back */
        lost(k, 0, 1, 4, 9, 4000, &q, &a);
        CHECKF(a.is == RLK_ACQ_GIVE_BACK && a.n == 2 && q.adopt, "%s: surplus given back",
               k->acquire);
    }
    /* a shared holder id still held: unknown, nothing kept as a doubt */
    lost(k, 1, 0, 1, 9, 4000, &q, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED && !a.keep_doubt, "%s: shared id",
           k->acquire);
    CHECK_STR_CONTAINS(a.msg, "the acquire's reply cannot be read back");
    CHECK_STR_CONTAINS(a.msg, "set by the application");
    /* a shared holder id, none held: it did not run */
    lost(k, 1, 0, 0, 0, -2, &q, &a);
    CHECKF(a.is == RLK_ACQ_END && a.retry, "%s: shared id, not held: did not run", k->acquire);
    /* the read-back failed: unknown, kept as a doubt unless the id is given (or it is a value
     * list's, which a doubt's read-back of the holder's field cannot settle) */
    mk(&q, k, 0, 0);
    rlk_acq_unknown(&q, "timed out", &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED &&
           a.keep_doubt == !(k->flags & RLK_PROTO_VALUES), "%s: unknown", k->acquire);
    mk(&q, k, 1, 0);
    rlk_acq_unknown(&q, "timed out", &a);
    CHECKF(a.is == RLK_ACQ_END && !a.keep_doubt, "%s: unknown, a given id", k->acquire);
    /* a read-back of another shape */
    mk(&q, k, 0, 0);
    rlk_acq_lost(&q, 0, &a);
    rlk_acq_read(&q, i(1), 0, "timed out", &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED, "%s: unexpected read-back",
           k->acquire);
}

/* ------------------------------------------------------------ a lost release */

static void rel(const rlk_proto *k, int given, long long known, long long now, rlk_acq_act *a)
{
    rlk_acq q;

    mk(&q, k, given, known);
    rlk_acq_lost(&q, 1, a);
    CHECKF(a->is == RLK_ACQ_READ && a->call == NULL, "%s: a lost release reads the field",
           k->release);
    rlk_acq_read(&q, now ? s(now) : &nil, 0, "timed out", a);
}

static void walk_release(const rlk_proto *k)
{
    rlk_acq_act a;

    if (k->flags & RLK_PROTO_VALUES)
        return;     /* a value list's release is read by its counts (kinds/fastmulti.c) */
    rel(k, 0, 1, 0, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_OK && a.value == RLK_REL_RELEASED,
           "%s: ran: released", k->release);
    rel(k, 0, 2, 1, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_OK && a.value == RLK_REL_STILL_HELD && a.n == 1,
           "%s: ran: one left", k->release);
    rel(k, 0, 1, 1, &a);
    CHECKF(a.is == RLK_ACQ_SEND, "%s: did not run: sent again", k->release);
    rel(k, 0, 3, 0, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_OK && a.value == RLK_REL_NOT_OWNER,
           "%s: gone meanwhile", k->release);
    rel(k, 0, 1, 3, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED, "%s: more than known",
           k->release);
    CHECK_STR_CONTAINS(a.msg, "the release's reply cannot be read back");
    rel(k, 1, 1, 1, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED, "%s: a given id still held",
           k->release);
    rel(k, 1, 1, 0, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_OK && a.value == RLK_REL_RELEASED,
           "%s: a given id, none left: released", k->release);
    /* a hold this client never recorded (a given id's, taken elsewhere) */
    rel(k, 1, 0, 0, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_OK && a.value == RLK_REL_RELEASED,
           "%s: not recorded, gone: released (is %d err %d)", k->release, a.is, a.err);
    rel(k, 0, 0, 1, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED, "%s: not recorded, held",
           k->release);
}

/* A wait that ran out: the row's what and why, else "held by another holder"; a release not
 * the owner's (the one writer of both APIs' messages). */
static void walk_busy(const rlk_proto *k)
{
    rlk_acq q;
    rlk_acq_act a;
    char want[200];

    mk(&q, k, 0, 0);
    rlk_acq_busy(&q, 1500, &a);
    snprintf(want, sizeof want, "%s res: %s after 1500 ms", k->what,
             k->busy ? k->busy : "held by another holder");
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_BUSY && strcmp(a.msg, want) == 0,
           "%s: busy: '%s'", k->acquire, a.msg);
    /* a release that found the hold not the owner's */
    rlk_acq_not_held(&q, &a);
    snprintf(want, sizeof want, "unlock %s res: not %s by uuid:1", k->what,
             k->flags & RLK_PROTO_VALUES ? "every value held" : "held");
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_NOT_OWNER && strcmp(a.msg, want) == 0,
           "%s: not held: '%s'", k->release, a.msg);
}

/* A waiter that gives up: the row's cancel when its acquire may have queued it, bounded (the
 * blocking driver's wait for it) by 300 ms for a fair row (a third of its keep-alive drops it
 * otherwise), else the claim window's RLK_FAM_CANCEL_NS; and the values a call carries: a value
 * list's checked and copied, none for another row (both APIs ask the machine). */
static void walk_cancel(const rlk_proto *k)
{
    const char *const ab[] = {"a", "b", NULL}, *const twice[] = {"a", "a", NULL};
    char why[128], **out = NULL;
    rlk_acq q;
    rlk_acq_act a;
    int rc;

    mk(&q, k, 0, 0);
    CHECKF(rlk_acq_cancel(&q, &a) == 0 && !a.call, "%s: not queued: no cancel", k->acquire);
    q.queued = 1;
    rc = rlk_acq_cancel(&q, &a);
    CHECKF(rc == (k->cancel != NULL) && a.call == k->cancel &&
           a.ttl == (k->wait == RLK_PROTO_WAIT_FAIR ? 300 : 200), "%s: cancel %s, bound %lld ms",
           k->acquire, a.call ? a.call : "none", a.ttl);
    rc = rlk_proto_values_take(k, ab, 2, &out, why, sizeof why);
    CHECKF(rc == RLK_OK && (k->flags & RLK_PROTO_VALUES ? out && strcmp(out[1], "b") == 0 &&
                            !out[2] : !out), "%s: values taken %d", k->acquire, rc);
    free(out);
    rc = rlk_proto_values_take(k, twice, 2, &out, why, sizeof why);
    CHECKF(k->flags & RLK_PROTO_VALUES ? rc == RLK_ERR_ARG && strstr(why, "given twice")
                                       : rc == RLK_OK && !out, "%s: a value twice: %d",
           k->acquire, rc);
}

static void test_rows(void)
{
    for (size_t n = 0; n < NROWS; n++) {
        walk_cancel(rows[n]);
        walk_busy(rows[n]);
        walk_begin(rows[n]);
        walk_reply(rows[n]);
        walk_lost(rows[n]);
        walk_release(rows[n]);
    }
}

/* ------------------------------------------------------------ the rules */

static void test_settle_rule(void)
{
    rlk_acq_settled d;

    d = rlk_acq_settle_rule(0, 0, 1);       /* it did not run */
    CHECK_INT_EQ(d.ran + d.adopt + d.give_back, 0);
    d = rlk_acq_settle_rule(2, 1, 1);       /* fewer than known: not run either */
    CHECK_INT_EQ(d.ran + d.adopt + d.give_back, 0);
    d = rlk_acq_settle_rule(0, 1, 1);       /* it ran: adopt, nothing beyond */
    CHECK(d.ran && d.adopt && d.give_back == 0);
    d = rlk_acq_settle_rule(1, 4, 1);       /* two earlier lost acquires ran too */
    CHECK(d.adopt && d.give_back == 2);
    d = rlk_acq_settle_rule(0, 50, 1);      /* at most 8 given back */
    CHECK_INT_EQ(d.give_back, RLK_ACQ_GIVE_BACK_MAX);
    d = rlk_acq_settle_rule(0, 3, 0);       /* ran, not adoptable: all of it given back */
    CHECK(d.ran && !d.adopt && d.give_back == 3);
}

static void test_release_rule(void)
{
    CHECK_INT_EQ(rlk_acq_release_rule(2, 2, 0), RLK_ACQ_REL_AGAIN);     /* did not run */
    CHECK_INT_EQ(rlk_acq_release_rule(2, 1, 0), RLK_ACQ_REL_RAN);
    CHECK_INT_EQ(rlk_acq_release_rule(1, 0, 0), RLK_ACQ_REL_RAN);       /* released */
    CHECK_INT_EQ(rlk_acq_release_rule(3, 0, 0), RLK_ACQ_REL_GONE);      /* lost meanwhile */
    CHECK_INT_EQ(rlk_acq_release_rule(1, 2, 0), RLK_ACQ_REL_UNKNOWN);   /* more than known */
    CHECK_INT_EQ(rlk_acq_release_rule(1, 1, 1), RLK_ACQ_REL_UNKNOWN);   /* a given id held */
    CHECK_INT_EQ(rlk_acq_release_rule(2, 0, 1), RLK_ACQ_REL_GONE);
    CHECK_INT_EQ(rlk_acq_release_rule(1, 0, 1), RLK_ACQ_REL_RAN);
    CHECK_INT_EQ(rlk_acq_release_rule(4, 1, 0), RLK_ACQ_REL_RAN);
    CHECK_INT_EQ(rlk_acq_release_rule(3, 3, 1), RLK_ACQ_REL_UNKNOWN);
    CHECK_INT_EQ(rlk_acq_release_rule(0, 0, 0), RLK_ACQ_REL_RAN);       /* not recorded: gone */
    CHECK_INT_EQ(rlk_acq_release_rule(0, 0, 1), RLK_ACQ_REL_RAN);
    CHECK_INT_EQ(rlk_acq_release_rule(0, 2, 0), RLK_ACQ_REL_UNKNOWN);
}

/* The last unlock (rlk_acq_rest): the server's count beyond the client's is released for an
 * id rlk made always, for a given one with a doubt only, for a value list never; a give-up is
 * sent once more after a transport failure of its first send only (rlk_acq_cancel_again). */
static void test_rest_and_cancel(void)
{
    rlk_acq q;

    mk(&q, &rlk_lock_row, 0, 0);
    CHECK(rlk_acq_rest(&q, 0) && rlk_acq_rest(&q, 1));
    mk(&q, &rlk_lock_row, 1, 0);                                /* a given holder id */
    CHECK(!rlk_acq_rest(&q, 0) && rlk_acq_rest(&q, 1));
    mk(&q, &rlk_fastmulti_row, 0, 0);                           /* a value list */
    CHECK(!rlk_acq_rest(&q, 0) && !rlk_acq_rest(&q, 1));
    CHECK(rlk_acq_cancel_again(RLK_ERR_IO, 1) && rlk_acq_cancel_again(RLK_ERR_TIMEOUT, 1));
    CHECK(!rlk_acq_cancel_again(RLK_ERR_IO, 2) && !rlk_acq_cancel_again(RLK_ERR_TIMEOUT, 2));
    CHECK(!rlk_acq_cancel_again(RLK_OK, 1) && !rlk_acq_cancel_again(RLK_ERR_SCRIPT, 1) &&
          !rlk_acq_cancel_again(RLK_ERR_SERVER, 1));
}

/* A value list's lost replies: exact (every acquisition counted took this list) or not, the
 * same rule on both APIs; a hold's datum the print of its one list, 0 once two were counted. */
static void test_values(void)
{
    const char *ab[] = {"a", "b", NULL}, *ba[] = {"b", "a", NULL}, *abc[] = {"a", "b", "c", NULL};
    redisReply *v[2];
    rlk_acq q;
    rlk_acq_act a;

    /* a re-entry (known 1) whose acquire did not run: every value at 1 */
    for (int exact = 0; exact < 2; exact++) {
        mk(&q, &rlk_fastmulti_row, 0, 1);
        q.exact = exact;
        rlk_acq_lost(&q, 0, &a);
        CHECK(a.is == RLK_ACQ_READ && a.call == rlk_fastmulti_row.held);
        v[0] = i(1);
        v[1] = i(1);
        rlk_acq_read(&q, arr(2, v), 0, "timed out", &a);
        if (exact) {
            CHECK(a.is == RLK_ACQ_END && a.retry && a.err == RLK_ERR_TIMEOUT);
            CHECK_STR_CONTAINS(a.msg, "did not take the values");
        } else {
            CHECK(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED && !a.keep_doubt);
            CHECK_STR_CONTAINS(a.msg, "the values' counts do not tell whether the acquire ran");
        }
    }
    /* held twice, a release that ran: every value at 1 */
    for (int exact = 0; exact < 2; exact++) {
        mk(&q, &rlk_fastmulti_row, 0, 2);
        q.exact = exact;
        rlk_acq_lost(&q, 1, &a);
        CHECK(a.is == RLK_ACQ_READ && a.call == rlk_fastmulti_row.held);
        v[0] = i(1);
        v[1] = i(1);
        rlk_acq_read(&q, arr(2, v), 0, "timed out", &a);
        if (exact)
            CHECK(a.is == RLK_ACQ_END && a.err == RLK_OK && a.value == RLK_REL_STILL_HELD &&
                  a.n == 1);
        else
            CHECK(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED);
    }
    /* a lost release read back unknown: no doubt kept (a group has no holder's field) */
    mk(&q, &rlk_fastmulti_row, 0, 1);
    rlk_acq_lost(&q, 1, &a);
    rlk_acq_unknown(&q, "timed out", &a);
    CHECK(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED && !a.keep_doubt);
    /* the datum: the one list's print, order and members told apart, 0 once mixed */
    CHECK(rlk_acq_values_print(ab) != 0 && rlk_acq_values_print(ab) != rlk_acq_values_print(ba));
    CHECK(rlk_acq_values_print(ab) != rlk_acq_values_print(abc));
    CHECK(rlk_acq_values_datum(0, 0, ab) == rlk_acq_values_print(ab));
    CHECK(rlk_acq_values_datum(rlk_acq_values_print(ab), 1, ab) == rlk_acq_values_print(ab));
    CHECK_INT_EQ(rlk_acq_values_datum(rlk_acq_values_print(ab), 1, abc), 0);
    CHECK_INT_EQ(rlk_acq_values_datum(0, 2, ab), 0);
    CHECK(rlk_acq_values_datum(0, 0, abc) == rlk_acq_values_print(abc));   /* a new hold */
}

/* The semaphores' acquisitions (both APIs): a semaphore's and a permit-expirable one's, each
 * through acquired, busy (first, behind a reservation, a single try's claim window, queued),
 * another shape, an error, a lost reply (never repeated; read back: ran, did not, unknown) and
 * a lost call's RLK_HELD. */
static void walk_sem(int ids)
{
    const char *script = ids ? "psemaphore/acquire" : "semaphore/acquire";
    rlk_rt_counters c0 = counters;
    redisReply *e2[2], *one[1];
    rlk_acq_sem q;
    rlk_acq_act a;

    q = (rlk_acq_sem){"semaphore", "sem", script, 1, ids, .counters = &counters};
    /* acquired: the semaphore's nil, the permit-expirable one's {id} */
    one[0] = s(7);
    CHECK(rlk_acq_sem_reply(&q, RLK_OK, NULL, ids ? arr(1, one) : &nil, &a) == RLK_ACQ_RECORD);
    /* first in the queue {-1, 1} (the permit-expirable: {-1, ms}, the earliest expiry) */
    e2[0] = i(-1);
    e2[1] = i(ids ? 250 : 1);
    rlk_acq_sem_reply(&q, RLK_OK, NULL, arr(2, e2), &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.wide && a.ttl == (ids ? 251 : -1), "%s: first: ttl %lld",
           script, a.ttl);
    /* behind a reservation */
    rlk_acq_sem_reply(&q, RLK_OK, NULL, i(-3), &a);
    CHECKF(a.is == RLK_ACQ_WAIT && a.wide && a.ttl == -3, "%s: reserved", script);
    /* a semaphore's single try behind a reservation: its claim window; the permit-expirable
     * one's integer: ms until the earliest expiry (+1) */
    rlk_acq_sem_reply(&q, RLK_OK, NULL, i(40), &a);
    CHECKF(a.is == RLK_ACQ_WAIT && !a.wide && a.ttl == 41 - !ids, "%s: busy: ttl %lld", script,
           a.ttl);
    if (ids) {
        rlk_acq_sem_reply(&q, RLK_OK, NULL, &nil, &a);  /* queued behind others */
        CHECKF(a.is == RLK_ACQ_WAIT && !a.wide && a.ttl == -1, "%s: queued", script);
    }
    /* another shape, another error */
    rlk_acq_sem_reply(&q, RLK_OK, NULL, s(1), &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_PROTOCOL, "%s: another shape", script);
    CHECK_STR_CONTAINS(a.msg, script);
    rlk_acq_sem_reply(&q, RLK_ERR_SCRIPT, "RLK_WRONGTYPE a hash", NULL, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_SCRIPT && !a.msg[0], "%s: its own error",
           script);
    /* RLK_HELD before any lost reply: an error; after one: the lost call ran */
    rlk_acq_sem_reply(&q, RLK_ERR_SCRIPT, "RLK_HELD id", NULL, &a);
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_SCRIPT, "%s: held, nothing lost", script);
    rlk_acq_sem_lost(&q, RLK_ERR_TIMEOUT, "timed out", &a);
    if (!ids) {
        CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_UNSETTLED && !a.retry, "%s: lost: never "
               "repeated", script);
        CHECK_STR_CONTAINS(a.msg, "may have been taken (not repeated");
        CHECK(counters.lost_unsettled == c0.lost_unsettled + 1);
        return;
    }
    CHECKF(a.is == RLK_ACQ_READ && a.call && strcmp(a.call, "psemaphore/lease_time") == 0 &&
           strcmp(a.args, "id publish") == 0, "%s: lost: read back by the id", script);
    rlk_acq_sem_read(&q, i(900), "timed out", &a);
    CHECKF(a.is == RLK_ACQ_RECORD, "%s: the id held: it ran", script);
    CHECK(counters.lost_adopted == c0.lost_adopted + 1);
    rlk_acq_sem_read(&q, i(-1), "timed out", &a);
    CHECKF(a.is == RLK_ACQ_RECORD, "%s: held without a lease: it ran", script);
    rlk_acq_sem_read(&q, i(0), "timed out", &a);
    CHECKF(a.is == RLK_ACQ_END && a.retry && a.err == RLK_ERR_TIMEOUT, "%s: not held: again",
           script);
    CHECK_STR_CONTAINS(a.msg, "did not take the permits");
    rlk_acq_sem_read(&q, NULL, "timed out", &a);
    CHECKF(a.is == RLK_ACQ_END && a.retry && a.err == RLK_ERR_TIMEOUT, "%s: unknown: again",
           script);
    rlk_acq_sem_reply(&q, RLK_ERR_SCRIPT, "RLK_HELD id", NULL, &a);
    CHECKF(a.is == RLK_ACQ_RECORD, "%s: held after a lost call: it ran", script);
}

static void test_sem(void)
{
    rlk_acq_act a;

    walk_sem(0);
    walk_sem(1);
    /* a wait that ran out (both APIs' message) */
    rlk_acq_sem_busy("semaphore", "sem", 2, 300, &a);
    CHECK(a.is == RLK_ACQ_END && a.err == RLK_ERR_BUSY);
    CHECK_STR_EQ(a.msg, "semaphore sem: 2 permit(s) not available after 300 ms");
}

/* Where a grant's reach is counted, a wake ticket; elsewhere a plain one (both APIs). */
static void test_ticket(void)
{
    const char *uuid = "0123456789abcdef0123456789abcdef";

    CHECK(rlk_names_ticket_wakes(rlk_acq_ticket(1, uuid)));
    CHECK(!rlk_names_ticket_wakes(rlk_acq_ticket(0, uuid)));
    CHECK(rlk_acq_ticket(0, uuid) > 0);
}

/* Held grants (docs/runtime.md): a reentrant lock waiter with a wake ticket takes the held
 * row, its attempts, give-up and release naming the waiters' records; a held grant read is an
 * acquisition from the last attempt's send, nothing to cancel after it; 1 of every 8 releases
 * of holds taken by waiting frees the lock instead (Redisson's waiters hear only "0"). */
static void test_held(void)
{
    const rlk_proto *k = &rlk_lock_held_row;
    rlk_proto_built b;
    rlk_proto_argvals v = {.lease_ms = 30000, .owner = "uuid:1", .ticket = -33554437};
    rlk_rt_counters c = {0};
    unsigned long long was = counters.held_grants;
    int plain = 0;
    rlk_acq q;
    rlk_acq_act a;

    CHECK(rlk_lock_row.held_grants == k && !k->held_grants && !rlk_lock_delay_row.held_grants);
    /* who takes the held row: a wake ticket, the client's own holder id, a row that has one */
    mk(&q, &rlk_lock_row, 0, 0);
    CHECK(!rlk_acq_take_held(&q, 0) && !rlk_acq_take_held(&q, 5) && q.row == &rlk_lock_row);
    CHECK(rlk_acq_take_held(&q, 33554437) && q.row == k && !rlk_acq_take_held(&q, 33554437));
    mk(&q, &rlk_lock_row, 1, 0);                                /* a given holder id */
    CHECK(!rlk_acq_take_held(&q, 33554437) && q.row == &rlk_lock_row);
    mk(&q, &rlk_lock_delay_row, 0, 0);
    CHECK(!rlk_acq_take_held(&q, 33554437) && q.row == &rlk_lock_delay_row);
    CHECK_INT_EQ(rlk_proto_build_with(&(rlk_proto_call){k->acquire, k->acquire_args},
                                      k->opt_keys, NULL, NULL, "res", &v, &b), 0);
    CHECKF(b.nkeys == 4 && strcmp(b.keys[3], "{res}:rlk_who") == 0 && b.nargs == 4 &&
           strcmp(b.av.v[2], "-33554437") == 0 && strcmp(b.av.v[3], "held") == 0,
           "held acquire: %d keys, %d args", b.nkeys, b.nargs);
    rlk_proto_built_free(&b);
    mk(&q, k, 0, 0);
    q.ticket = 33554437;
    CHECK_INT_EQ(rlk_acq_begin(&q, 0, &a), RLK_ACQ_SEND);
    rlk_acq_reply(&q, RLK_OK, NULL, i(-1), 100, &a);            /* queued behind the holder */
    CHECK(a.is == RLK_ACQ_WAIT && q.queued);
    CHECK(rlk_acq_cancel(&q, &a) && strcmp(a.call, "reentrant/cancel") == 0 &&
          strcmp(a.args, "ticket claim_ms publish held owner") == 0 &&
          strcmp(a.keys, "who") == 0);
    /* a held grant read once the lease from the last send is over: asked again, still queued */
    CHECK_INT_EQ(rlk_acq_held(&q, 250, 250 + q.lease_ms, &a), RLK_ACQ_SEND);
    CHECKF(q.queued && !a.ticket && counters.held_grants == was,
           "held grant read late: queued %d, ticket %lld", q.queued, a.ticket);
    CHECK_INT_EQ(rlk_acq_held(&q, 250, 249 + q.lease_ms, &a), RLK_ACQ_RECORD);  /* in time */
    CHECKF(q.start_ms == 250 && !q.queued && counters.held_grants == was + 1,
           "held grant: lease from %lld, queued %d", q.start_ms, q.queued);
    CHECK(!rlk_acq_cancel(&q, &a));                             /* nothing left to cancel */
    /* A lost attempt that finds the lock in its name (it ran, or a held grant came after the
     * attempt before it, which a lost one that never arrived cannot tell apart): its lease
     * from that earlier attempt; the plain row's from its own send. */
    for (int held = 0; held < 2; held++) {
        mk(&q, held ? k : &rlk_lock_row, 0, 0);
        q.prev_sent_ms = 100, q.start_ms = 300;
        rlk_acq_lost(&q, 0, &a);
        rlk_acq_read(&q, s(1), 400, "reset", &a);
        CHECKF(a.is == RLK_ACQ_RECORD && q.adopt && q.start_ms == (held ? 100 : 300),
               "%s row, lost attempt: adopted from %lld", held ? "held" : "plain", q.start_ms);
    }
    /* -4: the ticket is neither queued nor recorded (its held grant lapsed, ...): a new one of
     * the same client, sent at once as a new waiter's; never the old one again */
    mk(&q, k, 0, 0);
    q.ticket = -33554437, q.queued = 1;
    CHECK_INT_EQ(rlk_acq_reply(&q, RLK_OK, NULL, i(-4), 100, &a), RLK_ACQ_SEND);
    CHECKF(!q.queued && a.ticket / 1024 == 33554437 / 1024 && a.ticket != 33554437,
           "-4: queued %d, new ticket %lld", q.queued, a.ticket);
    CHECK(!rlk_acq_cancel(&q, &a));
    for (long long t = 33554432, n = 0; n < 3000; n++, t = rlk_names_wake_redraw(t))
        CHECK(rlk_names_wake_redraw(t) / 1024 == t / 1024 && rlk_names_wake_redraw(t) != t);
    mk(&q, &rlk_lock_row, 0, 0);
    q.ticket = 33554437;
    rlk_acq_reply(&q, RLK_OK, NULL, i(-1), 100, &a);
    CHECK(rlk_acq_cancel(&q, &a) && !a.keys);                   /* the plain row's cancel */
    for (int n = 0; n < 16; n++)
        plain += rlk_lock_release_row(k, &c) == &rlk_lock_row;
    CHECKF(plain == 2, "1 of 8 held releases frees the lock: %d of 16", plain);
    CHECK(rlk_lock_release_row(&rlk_lock_row, &c) == &rlk_lock_row);
    CHECK(rlk_lock_release_row(&rlk_lock_delay_row, &c) == &rlk_lock_delay_row);
    CHECK(rlk_lock_release_row(k, NULL) == k);
}

/* One campaign through every outcome (both APIs' rlk_elect_campaign): its term is the token
 * read in the script that elected it, a lost reply settled by fenced/held. */
static void test_elect(void)
{
    const rlk_proto *k = &rlk_elect_row;
    redisReply *t1[1], *e[3];
    rlk_acq q;
    rlk_acq_act a;

    mk(&q, k, 0, 0);
    CHECK_INT_EQ(rlk_acq_begin(&q, 0, &a), RLK_ACQ_SEND);
    rlk_acq_reply(&q, RLK_OK, NULL, i(700), 100, &a);       /* another candidate leads */
    CHECKF(a.is == RLK_ACQ_WAIT && a.ttl == 700 && !a.wide, "busy: wait its lease, is %d", a.is);
    rlk_acq_busy(&q, 900, &a);
    CHECK_STR_EQ(a.msg, "election res: another candidate leads after 900 ms");
    t1[0] = i(5);
    rlk_acq_reply(&q, RLK_OK, NULL, arr(1, t1), 100, &a);   /* elected in term 5 */
    CHECKF(a.is == RLK_ACQ_RECORD && q.token == 5, "elected: term %lld", q.token);
    mk(&q, k, 0, 1);                                         /* leading already: no call */
    CHECKF(rlk_acq_begin(&q, 5, &a) == RLK_ACQ_END && a.err == RLK_OK && a.value == 5,
           "leading: term %lld", a.value);
    /* a lost campaign, read back {count, term, PTTL} */
    again_by = 25000;
    mk(&q, k, 0, 0);
    rlk_acq_lost(&q, 0, &a);
    CHECK(a.is == RLK_ACQ_READ && a.call && strcmp(a.call, "fenced/held") == 0);
    e[0] = i(0), e[1] = i(0), e[2] = i(-2);
    rlk_acq_read(&q, arr(3, e), 20000, "timed out", &a);    /* did not run: campaign again */
    CHECKF(a.is == RLK_ACQ_SEND && a.retry, "not run: again, is %d", a.is);
    rlk_acq_read(&q, arr(3, e), 25000, "timed out", &a);    /* past the wait: its error */
    CHECKF(a.is == RLK_ACQ_END && a.err == RLK_ERR_TIMEOUT && a.retry, "not run: end, is %d",
           a.is);
    e[0] = i(1), e[1] = i(6), e[2] = i(9000);
    rlk_acq_read(&q, arr(3, e), 20000, "timed out", &a);    /* it ran: term 6 adopted */
    CHECKF(a.is == RLK_ACQ_RECORD && q.adopt && q.token == 6 && q.start_ms == 20000 - 1000,
           "ran: term %lld from %lld", q.token, q.start_ms);
    again_by = 0;
}

int main(void)
{
    RUN_TEST(test_rows);
    RUN_TEST(test_elect);
    RUN_TEST(test_settle_rule);
    RUN_TEST(test_release_rule);
    RUN_TEST(test_rest_and_cancel);
    RUN_TEST(test_ticket);
    RUN_TEST(test_held);
    RUN_TEST(test_values);
    RUN_TEST(test_sem);
    return check_summary("test_acq");
}
