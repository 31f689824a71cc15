/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_fastmulti.c - the faster MultiLock on the loop
 * (rlk_async_fastmulti_*), against a real redis-server, as
 * c/tests/family_locks/fl_fastmulti.c checks the blocking one:
 *
 *   basic           all or none, a disjoint set beside a holder, re-entry
 *                   counted, an unlock of a set not held refused (nothing
 *                   changed, the holder's values kept), force unlock;
 *   wake            a waiter in another client is woken by the release's
 *                   message (the holder's lease is far longer than the
 *                   time the waiter takes), a waiter whose wait runs out
 *                   gets RLK_ERR_BUSY and took nothing;
 *   held            is_locked and is_held count the values held (by anyone,
 *                   by a task); a bad list refused, nothing sent;
 *   watchdog        a lease-less hold is renewed past three leases, its
 *                   values' expire_time kept ahead of the server's clock;
 *   lost_expired    a lease-less holder whose server is SIGSTOPped is told
 *                   RLK_LOST_EXPIRED before its values' expire_time;
 *   lost_reply      replies lost (clients paused past the command timeout):
 *                   an acquire and a release read back and settled, a
 *                   release of a set held twice that did not run sent again;
 *   lost_lapsed     a lost acquire that never ran (clients paused) over a
 *                   lapsed hold of the same owner (its fields left): read
 *                   back as not run (the values were free), not adopted,
 *                   attempted again and taken with a live expire_time;
 *   lost_reentry    a re-entry (values held once) whose reply is lost after
 *                   it ran (DEBUG SLEEP): read back (counts one more than
 *                   the holder's) and adopted, counted 2;
 *   lost_adopt      an acquire whose reply is lost after it ran (the server
 *                   asleep past the command timeout, DEBUG SLEEP: the request
 *                   runs when it wakes, its connection gone): read back and
 *                   adopted, counted lost_replies and lost_adopted (not
 *                   lost_not_run), held once, renewed past three leases,
 *                   released to nothing on the server;
 *   args            bad arguments: one RLK_ERR_ARG each, nothing sent (no
 *                   script call counted by the server);
 *   procs           PROCS processes take random sets of 2 of NVALUES values
 *                   and log their holds (CLOCK_MONOTONIC, one log per
 *                   value): 0 overlaps on any value;
 *   procs_control   the same with a planted fault (the workers skip the
 *                   lock): must show overlaps.
 *
 *   cluster         on a 3-master + 3-replica cluster (redis+cluster://, the
 *                   fixture's cluster.h): basic, wake, watchdog, procs and
 *                   procs_control, each group read on the master that owns
 *                   its slot (the waiter subscribed through sharded pub/sub).
 *
 *   rlk_async_fastmulti_<loop> <case>|all|cluster
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cluster.h"
#include "fixture.h"
#include "holdlog.h"
#include "aloop.h"
#include "async_procs.h"
#include "rlk.h"
#include "rlk_async.h"

#define WD_LEASE 1000       /* the watchdog lease of the cases that renew */
#define PROCS 5             /* processes of the procs cases */
#define ITERS 30            /* holds each */
#define NVALUES 6           /* values of the procs cases' group */

static rlk_fx_server srv;
static char url[512];
static rlk_fx_cluster fcl;
static int on_cluster;      /* the cluster case: srv is a copy of the master that owns a group */

/* On the cluster: srv becomes (a copy of) the master that owns group's slot. */
static void at(const char *group)
{
    int o;

    if (!on_cluster)
        return;
    o = rlk_fx_cluster_key_owner(&fcl, group);
    REQUIRE(o >= 0);
    srv = fcl.node[o];
}

static long long srv_int(const char *fmt, const char *a, const char *b)
{
    return at_srv_num(&srv, fmt, a, b);
}

/* The holder of value in group ("" when none), into buf. */
static const char *holder_of(const char *group, const char *value, char *buf, size_t len)
{
    redisReply *r = rlk_fx_command(&srv, "HGET %s %s", group, value);

    snprintf(buf, len, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
    if (r)
        freeReplyObject(r);
    return buf;
}

/* The server's clock in ms. */
static long long srv_now_ms(void)
{
    redisReply *r = rlk_fx_command(&srv, "TIME");
    long long ms = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = strtoll(r->element[0]->str, NULL, 10) * 1000 +
             strtoll(r->element[1]->str, NULL, 10) / 1000;
    if (r)
        freeReplyObject(r);
    return ms;
}

/* value's expire_time in group for its holder, or -1. */
static long long expire_of(const char *group, const char *value)
{
    char h[256], field[512];

    if (!*holder_of(group, value, h, sizeof h))
        return -1;
    snprintf(field, sizeof field, "%s:%s:expire_time", value, h);
    return srv_int("HGET %s %s", group, field);
}

/* Renewed past 3.5 leases: the values a and b of group still have their
 * expire_time ahead of the server's clock. */
static void check_ahead(const char *group)
{
    long long now = srv_now_ms(), ea = expire_of(group, "a"), eb = expire_of(group, "b");

    CHECKF(ea > now && eb > now, "expire_time a %lld b %lld, server now %lld (past 3.5 leases)",
           ea, eb, now);
}

/* The script calls the server has counted (EVAL, EVALSHA, FCALL). */
static long long script_calls(void)
{
    redisReply *r = rlk_fx_command(&srv, "INFO commandstats");
    const char *names[] = {"cmdstat_evalsha:calls=", "cmdstat_eval:calls=",
                           "cmdstat_fcall:calls="};
    long long n = 0;

    for (size_t i = 0; r && r->type == REDIS_REPLY_STRING && i < 3; i++) {
        const char *p = strstr(r->str, names[i]);

        if (p)
            n += strtoll(p + strlen(names[i]), NULL, 10);
    }
    if (r)
        freeReplyObject(r);
    return n;
}

/* The subscribers of channel (PUBSUB NUMSUB), or -99. */
static long long numsub(const char *channel)
{
    redisReply *r = rlk_fx_command(&srv, on_cluster ? "PUBSUB SHARDNUMSUB %s" : "PUBSUB NUMSUB %s",
                                   channel);
    long long n = -99;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        n = r->element[1]->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

/* One request run to its end on c: its outcome in *x (zeroed first). */
#define RUN(c, x, expr) do { memset(&(x), 0, sizeof(x)); AP_REQ(expr); \
                             REQUIRE(ap_wait_res(&(c), &(x), 15000)); } while (0)

/* ---------------------------------------------------------------- cases */

static void test_basic(void)
{
    const char *g = "afm:basic";
    const char *ab[] = {"a", "b"}, *bc[] = {"b", "c"}, *cd[] = {"c", "d"}, *a[] = {"a"};
    char own[256], h[256];
    ap_cl c;
    ap_res x;

    at(g);
    REQUIRE(ap_cl_open(&c, url, 0, 0, 0) == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "lock {a,b}: %d %lld %s", x.err, x.value, x.errstr);
    snprintf(own, sizeof own, "%s:1", rlk_async_uuid(c.ac));
    CHECK_STR_EQ(holder_of(g, "a", h, sizeof h), own);
    CHECK_STR_EQ(holder_of(g, "b", h, sizeof h), own);
    /* all or none: {b,c} is refused, c not taken */
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, bc, 2, 2, 0, 30000, ap_on_res, &x));
    CHECK_INT_EQ(x.err, RLK_ERR_BUSY);
    CHECK_STR_EQ(holder_of(g, "c", h, sizeof h), "");
    /* a disjoint set beside the holder */
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, cd, 2, 2, 0, 30000, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "lock {c,d}: %d %s", x.err, x.errstr);
    /* re-entry: counted */
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 2, "re-entry: %d %lld", x.err, x.value);
    {
        char field[512];

        snprintf(field, sizeof field, "a:%s:lock_count", own);
        CHECK_INT_EQ(srv_int("HGET %s %s", g, field), 2);
    }
    /* task 2 unlocking a set it does not hold: refused, nothing changed, its {c,d} kept */
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, a, 1, 2, ap_on_res, &x));
    CHECK_INT_EQ(x.err, RLK_ERR_NOT_OWNER);
    CHECK_STR_EQ(holder_of(g, "a", h, sizeof h), own);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, cd, 2, 2, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "unlock {c,d}: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_STR_EQ(holder_of(g, "c", h, sizeof h), "");
    /* task 1: two acquisitions, two unlocks */
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "unlock 1: %d %lld", x.err, x.value);
    CHECK_STR_EQ(holder_of(g, "a", h, sizeof h), own);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "unlock 2: %d %lld", x.err, x.value);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECK_INT_EQ(x.err, RLK_ERR_NOT_OWNER);
    /* force unlock: whoever holds them; this client's hold forgotten */
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, -1, ap_on_res, &x));
    CHECK_INT_EQ(x.err, RLK_OK);
    RUN(c, x, rlk_async_fastmulti_force_unlock(c.ac, g, ab, 2, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "force: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    {
        rlk_metrics m;

        REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
        CHECK_INT_EQ((long long)m.locks_held, 0);
    }
    RUN(c, x, rlk_async_fastmulti_force_unlock(c.ac, g, ab, 2, ap_on_res, &x));
    CHECK(x.err == RLK_OK && x.value == 0);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static void test_wake(void)
{
    const char *g = "afm:wake";
    const char *abc[] = {"a", "b", "c"}, *cd[] = {"c", "d"}, *bx[] = {"b", "x"};
    ap_cl c1, c2;
    ap_res h = {0}, w = {0}, t = {0}, u = {0}, u2 = {0};
    long long t0, n;

    ap_freed_tracked = 0;
    at(g);
    REQUIRE(ap_cl_open(&c1, url, 0, 0, 0) == RLK_OK);
    REQUIRE(ap_cl_open(&c2, url, 0, 0, 0) == RLK_OK);
    AP_REQ(rlk_async_fastmulti_lock(c1.ac, g, abc, 3, 1, 0, 60000, ap_on_res, &h));
    REQUIRE(ap_wait_res(&c1, &h, 5000) && h.err == RLK_OK);
    /* c2 waits for {c,d} (up to 20 s; the holder's lease is 60 s) */
    AP_REQ(rlk_async_fastmulti_lock(c2.ac, g, cd, 2, 1, 20000, 10000, ap_on_res, &w));
    /* and another waits for {b,x} only 400 ms: runs out, takes nothing */
    AP_REQ(rlk_async_fastmulti_lock(c2.ac, g, bx, 2, 2, 400, 10000, ap_on_res, &t));
    REQUIRE(ap_wait_res(&c2, &t, 5000));
    CHECK_INT_EQ(t.err, RLK_ERR_BUSY);
    CHECK_INT_EQ(srv_int("HEXISTS %s %s", g, "x"), 0);
    CHECK_INT_EQ(w.calls, 0);
    /* subscribed to the group's channel */
    CHECK_INT_EQ(numsub("redisson_lock__channel:{afm:wake}"), 1);
    /* the release's message wakes the waiter: released right after one of its keep-alive
     * attempts (a script call counted by the server), the next would come 1 s later */
    t0 = rlk_fx_now_ms();
    n = script_calls();
    while (script_calls() == n && rlk_fx_now_ms() - t0 < 3000)
        aloop_run_until(c2.l, ap_res_done, &w, 2);
    CHECKF(script_calls() > n, "no keep-alive attempt of the waiter within 3 s");
    t0 = rlk_fx_now_ms();
    AP_REQ(rlk_async_fastmulti_unlock(c1.ac, g, abc, 3, 1, ap_on_res, &u));
    REQUIRE(ap_wait_res(&c1, &u, 5000));
    CHECK_INT_EQ(u.err, RLK_OK);
    REQUIRE(ap_wait_res(&c2, &w, 10000));
    CHECKF(w.err == RLK_OK, "waiter: %d %s", w.err, w.errstr);
    printf("  the waiter got {c,d} %lld ms after the release\n", w.at_ms - t0);
    CHECKF(w.at_ms - t0 < 500, "the waiter took %lld ms after the release (its keep-alive "
           "attempt comes after 1000 ms)", w.at_ms - t0);
    AP_REQ(rlk_async_fastmulti_unlock(c2.ac, g, cd, 2, 1, ap_on_res, &u2));
    REQUIRE(ap_wait_res(&c2, &u2, 5000));
    CHECK_INT_EQ(u2.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    ap_cl_close(&c1);
    ap_cl_close(&c2);
    ap_freed_tracked = 1;
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static void test_watchdog(void)
{
    const char *g = "afm:wd";
    const char *ab[] = {"a", "b"};
    ap_cl c;
    ap_res x;
    rlk_metrics m;

    at(g);
    REQUIRE(ap_cl_open(&c, url, WD_LEASE, 0, 0) == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, -1, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    aloop_run_until(c.l, NULL, NULL, 3 * WD_LEASE + WD_LEASE / 2);
    check_ahead(g);
    CHECKF(srv_int("PTTL %s", g, NULL) > 0, "the group has no TTL left");
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECKF(m.renewals >= 3, "renewals %llu", m.renewals);
    CHECK_INT_EQ((long long)m.watchdog_entries, 1);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECK_INT_EQ(x.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECK_INT_EQ((long long)m.watchdog_entries, 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static int lost_calls, lost_reason;
static long long lost_at;
static char lost_name[128];

static void on_lost(int kind, const char *name, const char *owner, int reason, void *ud)
{
    (void)kind;
    (void)owner;
    (void)ud;
    lost_calls++;
    lost_reason = reason;
    lost_at = rlk_fx_now_ms();
    snprintf(lost_name, sizeof lost_name, "%s", name);
}

static int lost_done(void *p)
{
    (void)p;
    return lost_calls > 0;
}

/* As async_cases' wd_expired_stop: the lease's earliest end is bounded from
 * below by the values' expire_time read (with the server's clock) just
 * before the stop; later renewals only move it on. */
static void test_lost_expired(void)
{
    const char *g = "afm:lost";
    const char *ab[] = {"a", "b"};
    const long long lease = 1500, margin = 300;
    ap_cl c;
    ap_res x;
    long long t_q, left, t_stop;
    int got;

    REQUIRE(ap_cl_open(&c, url, lease, margin, 0) == RLK_OK);
    lost_calls = 0;
    rlk_async_set_lost_callback(c.ac, on_lost, NULL);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, -1, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    aloop_run_until(c.l, NULL, NULL, 1200);     /* renewed at least twice (every 500 ms) */
    CHECK_INT_EQ(lost_calls, 0);
    t_q = rlk_fx_now_ms();
    left = expire_of(g, "a") - srv_now_ms();
    REQUIRE(left > 0);
    REQUIRE(rlk_fx_pause(&srv) == 0);
    t_stop = rlk_fx_now_ms();
    got = aloop_run_until(c.l, lost_done, NULL, lease + 3000);
    CHECK(rlk_fx_resume(&srv) == 0);
    CHECKF(got, "no lost report within %lld ms of the stop (lease %lld ms)", lease + 3000, lease);
    if (got) {
        printf("  RLK_LOST_EXPIRED %lld ms after the stop; %lld ms before the values' earliest "
               "expire_time (%lld ms left, read %lld ms before the stop)\n", lost_at - t_stop,
               t_q + left - lost_at, left, t_stop - t_q);
        CHECK_INT_EQ(lost_reason, RLK_LOST_EXPIRED);
        CHECK_STR_EQ(lost_name, g);
        CHECKF(lost_at < t_q + left, "reported at +%lld ms, the lease may end at +%lld ms",
               lost_at - t_q, left);
        CHECK_INT_EQ(lost_calls, 1);
    }
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* The queries: how many of the values anyone holds, how many a task holds. */
static void test_held(void)
{
    const char *g = "afm:held";
    const char *ab[] = {"a", "b"}, *ac[] = {"a", "c"}, *c1[] = {"c"}, *bad[] = {"a", "a"};
    ap_cl c;
    ap_res x;
    long long before;

    REQUIRE(ap_cl_open(&c, url, 0, 0, 0) == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_is_locked(c.ac, g, ab, 2, ap_on_res, &x));
    CHECK(x.err == RLK_OK && x.value == 0);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_is_locked(c.ac, g, ac, 2, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "is_locked {a,c}: %d %lld", x.err, x.value);
    RUN(c, x, rlk_async_fastmulti_is_locked(c.ac, g, c1, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "is_locked {c}: %d %lld", x.err, x.value);
    RUN(c, x, rlk_async_fastmulti_is_held(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 2, "is_held {a,b} 1: %d %lld", x.err, x.value);
    RUN(c, x, rlk_async_fastmulti_is_held(c.ac, g, ac, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "is_held {a,c} 1: %d %lld", x.err, x.value);
    RUN(c, x, rlk_async_fastmulti_is_held(c.ac, g, ab, 2, 2, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "is_held {a,b} 2: %d %lld", x.err, x.value);
    before = script_calls();
    RUN(c, x, rlk_async_fastmulti_is_held(c.ac, g, bad, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_ERR_ARG && strstr(x.errstr, "given twice"), "%d %s", x.err, x.errstr);
    RUN(c, x, rlk_async_fastmulti_is_locked(c.ac, g, ab, 0, ap_on_res, &x));
    CHECKF(x.err == RLK_ERR_ARG && strstr(x.errstr, "0 values"), "%d %s", x.err, x.errstr);
    CHECK_INT_EQ(script_calls(), before);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECK_INT_EQ(x.err, RLK_OK);
    RUN(c, x, rlk_async_fastmulti_is_locked(c.ac, g, ab, 2, ap_on_res, &x));
    CHECK(x.err == RLK_OK && x.value == 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* a's lock_count for task 1 of c, or -99. */
static long long count_of(ap_cl *c, const char *g, const char *value)
{
    char field[512];

    snprintf(field, sizeof field, "%s:%s:1:lock_count", value, rlk_async_uuid(c->ac));
    return srv_int("HGET %s %s", g, field);
}

/* Lost replies (the server's clients paused past the command timeout): an
 * acquire is read back and adopted or attempted again, counted once; a
 * release of the one acquisition is read back and ends released; a release
 * of a set held twice that did not run (every value still counted as the
 * holder's count) is sent once more: held once. */
static void test_lost_reply(void)
{
    const char *g = "afm:lostreply";
    const char *ab[] = {"a", "b"}, *other[] = {"z"};
    char own[256], h[256];
    ap_cl c;
    ap_res x;
    long long n;

    REQUIRE(ap_cl_open(&c, url, 0, 0, 400) == RLK_OK);
    snprintf(own, sizeof own, "%s:1", rlk_async_uuid(c.ac));
    RUN(c, x, rlk_async_fastmulti_force_unlock(c.ac, "afm:other", other, 1, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);   /* connected first */
    REQUIRE(rlk_fx_client_pause(&srv, 1200) == 0);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 10000, 30000, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "lost acquire: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_STR_EQ(holder_of(g, "a", h, sizeof h), own);
    CHECK_STR_EQ(holder_of(g, "b", h, sizeof h), own);
    CHECK_INT_EQ(count_of(&c, g, "a"), 1);
    REQUIRE(rlk_fx_client_pause(&srv, 1200) == 0);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "lost release: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    /* held twice: a lost release that never ran (both values still counted
     * 2, the holder's count) is settled as not run and sent once more */
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK && x.value == 2);
    REQUIRE(rlk_fx_client_pause(&srv, 1200) == 0);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "lost release held twice: %d %lld %s", x.err,
           x.value, x.errstr);
    n = count_of(&c, g, "a");
    CHECKF(n == 1, "lock_count %lld after a release that did not run, sent again", n);
    RUN(c, x, rlk_async_fastmulti_force_unlock(c.ac, g, ab, 2, ap_on_res, &x));
    CHECK_INT_EQ(x.err, RLK_OK);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* A lost acquire that ran (rlk_fx_sleep_begin: the request runs when the
 * server wakes, after the command timeout dropped its connection; the
 * engine's fence comes on a connection accepted after that): the read back
 * finds every value the task's and adopts the hold, once. */
static void test_lost_adopt(void)
{
    const char *g = "afm:adopt";
    const char *ab[] = {"a", "b"}, *other[] = {"z"};
    const long long lease = 2000;
    char own[256], h[256];
    rlk_metrics m0, m;
    redisContext *sleeper;
    ap_cl c;
    ap_res x;

    REQUIRE(ap_cl_open(&c, url, lease, 0, 300) == RLK_OK);
    snprintf(own, sizeof own, "%s:1", rlk_async_uuid(c.ac));
    /* connected first, the acquire script loaded (a NOSCRIPT reply would be what ran) */
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, "afm:other", other, 1, 1, 0, 10000, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_force_unlock(c.ac, "afm:other", other, 1, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    REQUIRE(rlk_async_metrics_get(c.ac, &m0) == RLK_OK);
    REQUIRE((sleeper = rlk_fx_sleep_begin(&srv, 1000)) != NULL);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 10000, -1, ap_on_res, &x));
    rlk_fx_sleep_end(sleeper);
    CHECKF(x.err == RLK_OK && x.value == 1, "lost acquire: %d %lld %s", x.err, x.value, x.errstr);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    printf("  lost replies %llu, adopted %llu, not run %llu, unsettled %llu\n",
           m.lost_replies - m0.lost_replies, m.lost_adopted - m0.lost_adopted,
           m.lost_not_run - m0.lost_not_run, m.lost_unsettled - m0.lost_unsettled);
    CHECKF(m.lost_replies > m0.lost_replies, "no lost reply counted");
    CHECK_INT_EQ((long long)(m.lost_adopted - m0.lost_adopted), 1);
    CHECK_INT_EQ((long long)(m.lost_not_run - m0.lost_not_run), 0);
    CHECK_STR_EQ(holder_of(g, "a", h, sizeof h), own);
    CHECK_STR_EQ(holder_of(g, "b", h, sizeof h), own);
    CHECK_INT_EQ(count_of(&c, g, "a"), 1);      /* once: not acquired again on top */
    CHECK_INT_EQ(count_of(&c, g, "b"), 1);
    CHECK_INT_EQ((long long)m.locks_held, 1);
    CHECK_INT_EQ((long long)m.watchdog_entries, 1);
    /* renewed by the watchdog as any hold */
    aloop_run_until(c.l, NULL, NULL, 3 * lease + lease / 2);
    check_ahead(g);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECKF(m.renewals - m0.renewals >= 3, "renewals %llu", m.renewals - m0.renewals);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "unlock: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECK_INT_EQ((long long)m.locks_held, 0);
    CHECK_INT_EQ((long long)m.watchdog_entries, 0);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* A lost acquire that never ran (clients paused) over this owner's lapsed
 * hold of a and b (fields left, expire_time passed: free by the scripts'
 * rule): the read-back counts them 0, so it is settled as not run (not
 * adopted) and attempted again, which takes them from 1 with a live
 * expire_time. */
static void test_lost_lapsed(void)
{
    const char *g = "afm:lapsed";
    const char *ab[] = {"a", "b"}, *other[] = {"z"};
    char own[256], past[32];
    rlk_metrics m0, m;
    redisReply *r;
    ap_cl c;
    ap_res x;

    REQUIRE(ap_cl_open(&c, url, 0, 0, 400) == RLK_OK);
    snprintf(own, sizeof own, "%s:1", rlk_async_uuid(c.ac));
    /* connected first, the acquire script loaded */
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, "afm:other", other, 1, 1, 0, 10000, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_force_unlock(c.ac, "afm:other", other, 1, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    snprintf(past, sizeof past, "%lld", srv_now_ms() - 60000);
    r = rlk_fx_command(&srv, "HSET %s a %s a:%s:expire_time %s a:%s:lock_count 1 b %s "
                       "b:%s:expire_time %s b:%s:lock_count 1", g, own, own, past, own, own, own,
                       past, own);
    REQUIRE(r && r->type == REDIS_REPLY_INTEGER && r->integer == 6);
    freeReplyObject(r);
    REQUIRE(rlk_async_metrics_get(c.ac, &m0) == RLK_OK);
    REQUIRE(rlk_fx_client_pause(&srv, 1200) == 0);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 10000, 30000, ap_on_res, &x));
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    printf("  lost replies %llu, adopted %llu, not run %llu, unsettled %llu\n",
           m.lost_replies - m0.lost_replies, m.lost_adopted - m0.lost_adopted,
           m.lost_not_run - m0.lost_not_run, m.lost_unsettled - m0.lost_unsettled);
    CHECKF(x.err == RLK_OK && x.value == 1, "lost acquire: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_INT_EQ((long long)(m.lost_adopted - m0.lost_adopted), 0);
    CHECK_INT_EQ((long long)(m.lost_not_run - m0.lost_not_run), 1);
    CHECK_INT_EQ(count_of(&c, g, "a"), 1);
    CHECK_INT_EQ(count_of(&c, g, "b"), 1);
    CHECKF(expire_of(g, "a") > srv_now_ms() && expire_of(g, "b") > srv_now_ms(),
           "expire_time a %lld b %lld: not taken again", expire_of(g, "a"), expire_of(g, "b"));
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "unlock: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* A re-entry (a and b held once) whose reply is lost after it ran
 * (rlk_fx_sleep_begin): the read-back counts every value one more than the
 * holder's count, so it ran: adopted once, counted 2 here as on the
 * server, released by two unlocks. */
static void test_lost_reentry(void)
{
    const char *g = "afm:reentry";
    const char *ab[] = {"a", "b"};
    rlk_metrics m0, m;
    redisContext *sleeper;
    ap_cl c;
    ap_res x;

    REQUIRE(ap_cl_open(&c, url, 0, 0, 300) == RLK_OK);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK && x.value == 1);
    REQUIRE(rlk_async_metrics_get(c.ac, &m0) == RLK_OK);
    REQUIRE((sleeper = rlk_fx_sleep_begin(&srv, 1000)) != NULL);
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 10000, 30000, ap_on_res, &x));
    rlk_fx_sleep_end(sleeper);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    printf("  lost replies %llu, adopted %llu, not run %llu, unsettled %llu\n",
           m.lost_replies - m0.lost_replies, m.lost_adopted - m0.lost_adopted,
           m.lost_not_run - m0.lost_not_run, m.lost_unsettled - m0.lost_unsettled);
    CHECKF(x.err == RLK_OK && x.value == 2, "lost re-entry: %d %lld %s", x.err, x.value,
           x.errstr);
    CHECKF(m.lost_replies > m0.lost_replies, "no lost reply counted");
    CHECK_INT_EQ((long long)(m.lost_adopted - m0.lost_adopted), 1);
    CHECK_INT_EQ(count_of(&c, g, "a"), 2);      /* once: not acquired again on top */
    CHECK_INT_EQ(count_of(&c, g, "b"), 2);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 1, "unlock 1: %d %lld %s", x.err, x.value, x.errstr);
    RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    CHECKF(x.err == RLK_OK && x.value == 0, "unlock 2: %d %lld %s", x.err, x.value, x.errstr);
    CHECK_INT_EQ(srv_int("EXISTS %s", g, NULL), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* One bad call: RLK_ERR_ARG with a message naming want, nothing sent. */
static void bad_call(ap_cl *c, const char *want, const char *const *values, size_t n, int op)
{
    ap_res x = {0};
    long long before = script_calls();

    if (op == 0)
        AP_REQ(rlk_async_fastmulti_lock(c->ac, "afm:args", values, n, 1, 0, 10000, ap_on_res,
                                        &x));
    else if (op == 1)
        AP_REQ(rlk_async_fastmulti_unlock(c->ac, "afm:args", values, n, 1, ap_on_res, &x));
    else
        AP_REQ(rlk_async_fastmulti_force_unlock(c->ac, "afm:args", values, n, ap_on_res, &x));
    REQUIRE(ap_wait_res(c, &x, 5000));
    CHECKF(x.err == RLK_ERR_ARG && strstr(x.errstr, want), "%s: %d %s", want, x.err, x.errstr);
    CHECK_INT_EQ(script_calls(), before);
}

static void test_args(void)
{
    const char *ok[] = {"a"}, *colon[] = {"a", "b:c"}, *twice[] = {"a", "b", "a"},
               *empty[] = {""}, *null[] = {NULL};
    char big[1100];
    const char *lng[] = {big};
    ap_cl c;
    ap_res x = {0};
    long long before;

    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    REQUIRE(ap_cl_open(&c, url, 0, 0, 0) == RLK_OK);
    bad_call(&c, "0 values", ok, 0, 0);
    bad_call(&c, "3 values at NULL", NULL, 3, 0);
    bad_call(&c, "value 2 must be", colon, 2, 0);
    bad_call(&c, "given twice", twice, 3, 0);
    bad_call(&c, "value 1 must be", empty, 1, 0);
    bad_call(&c, "value 1 must be", null, 1, 0);
    bad_call(&c, "value 1 must be", lng, 1, 0);
    bad_call(&c, "given twice", twice, 3, 1);
    bad_call(&c, "value 2 must be", colon, 2, 2);
    bad_call(&c, "0 values", ok, 0, 1);
    before = script_calls();
    AP_REQ(rlk_async_fastmulti_lock(c.ac, "afm:args", ok, 1, 1, 0, -2, ap_on_res, &x));
    REQUIRE(ap_wait_res(&c, &x, 5000));
    CHECKF(x.err == RLK_ERR_ARG && strstr(x.errstr, "lease"), "lease -2: %d %s", x.err, x.errstr);
    CHECK_INT_EQ(script_calls(), before);
    CHECK_INT_EQ(srv_int("EXISTS %s", "afm:args", NULL), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* ---------------------------------------------------------------- several processes */

static const char *const procs_values[NVALUES] = {"v0", "v1", "v2", "v3", "v4", "v5"};

/* One worker process: ITERS holds of a random pair of values, each logged
 * to both values' logs. skip: the planted fault, no lock taken. Exit 0 when
 * every acquisition it made succeeded. */
static int worker(int id, const char *dir, int skip)
{
    int fds[NVALUES];
    ap_cl c;
    int bad = 0;

    srand((unsigned)(getpid() * 7919 + id));
    for (int v = 0; v < NVALUES; v++) {
        char path[320];

        snprintf(path, sizeof path, "%s/%s.log", dir, procs_values[v]);
        if ((fds[v] = tk_holdlog_open(path)) < 0)
            return 3;
    }
    if (ap_cl_open(&c, url, 0, 0, 0) != RLK_OK)
        return 4;
    for (int i = 0; i < ITERS && !bad; i++) {
        int p = rand() % NVALUES, q = (p + 1 + rand() % (NVALUES - 1)) % NVALUES;
        const char *set[2] = {procs_values[p], procs_values[q]};
        ap_res x = {0}, u = {0};
        tk_hold h = {0};

        h.kind = TK_HOLD_EXCL;
        h.thread = id;
        h.sent_ns = tk_mono_ns();
        if (!skip) {
            AP_REQ(rlk_async_fastmulti_lock(c.ac, "afm:procs", set, 2, 1, 30000, 10000,
                                            ap_on_res, &x));
            if (!ap_wait_res(&c, &x, 35000) || x.err != RLK_OK) {
                fprintf(stderr, "worker %d: lock: %d %s\n", id, x.err, x.errstr);
                bad = 1;
                break;
            }
        }
        h.start_ns = tk_mono_ns();
        while (tk_mono_ns() - h.start_ns < 2 * AP_HOLD_NS)
            ;   /* held: busy, so that an overlap would show */
        h.end_ns = tk_mono_ns();
        for (int k = 0; k < 2; k++) {
            h.seq = i * 2 + k;
            tk_hold_write(fds[k ? q : p], &h);
        }
        if (!skip) {
            AP_REQ(rlk_async_fastmulti_unlock(c.ac, "afm:procs", set, 2, 1, ap_on_res, &u));
            if (!ap_wait_res(&c, &u, 10000) || u.err != RLK_OK) {
                fprintf(stderr, "worker %d: unlock: %d %s\n", id, u.err, u.errstr);
                bad = 1;
            }
        }
    }
    ap_cl_close(&c);
    for (int v = 0; v < NVALUES; v++)
        close(fds[v]);
    return bad;
}

static void procs(int skip)
{
    char dir[] = "/tmp/rlk-afm-XXXXXX", line[256];
    pid_t pids[PROCS];
    long conflicts = 0;
    size_t holds = 0;

    at("afm:procs");
    REQUIRE(mkdtemp(dir) != NULL);
    fflush(NULL);
    for (int i = 0; i < PROCS; i++) {
        if ((pids[i] = fork()) == 0)
            _exit(worker(i, dir, skip));
        REQUIRE(pids[i] > 0);
    }
    for (int i = 0; i < PROCS; i++) {
        int st = -1;

        waitpid(pids[i], &st, 0);
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker %d status %d", i, st);
    }
    for (int v = 0; v < NVALUES; v++) {
        char path[320];
        const char *paths[1] = {path};
        tk_hold *hs = NULL;
        size_t n = 0;
        tk_hold_report rep;

        snprintf(path, sizeof path, "%s/%s.log", dir, procs_values[v]);
        tk_holds_read(paths, 1, -1, &hs, &n, NULL);
        rep = tk_holds_check(hs, n, 0);
        printf("  %s %s: %s\n", skip ? "control (no lock)" : "faster MultiLock", procs_values[v],
               tk_hold_report_str(&rep, line, sizeof line));
        conflicts += rep.conflicts;
        holds += rep.holds;
        free(hs);
        unlink(path);
    }
    rmdir(dir);
    printf("  %s: %zu holds of %d processes, %ld overlapping pairs over the values\n",
           skip ? "control (no lock)" : "faster MultiLock", holds, PROCS, conflicts);
    CHECK_INT_EQ((long long)holds, 2LL * PROCS * ITERS);
    if (skip)
        CHECKF(conflicts > 0, "the control (no lock) showed no overlap: the run cannot show one");
    else
        CHECK_INT_EQ(conflicts, 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", "afm:procs", NULL), 0);
}

static void test_procs(void)
{
    procs(0);
}

static void test_procs_control(void)
{
    procs(1);
}

typedef struct afm_case {
    const char *name;
    void (*fn)(void);
} afm_case;

static const afm_case cases[] = {
    {"basic", test_basic},
    {"wake", test_wake},
    {"held", test_held},
    {"watchdog", test_watchdog},
    {"lost_expired", test_lost_expired},
    {"lost_reply", test_lost_reply},
    {"lost_adopt", test_lost_adopt},
    {"lost_lapsed", test_lost_lapsed},
    {"lost_reentry", test_lost_reentry},
    {"args", test_args},
    {"procs", test_procs},
    {"procs_control", test_procs_control},
};

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "all";
    static const char *const extra[] = {"--enable-debug-command", "yes", NULL};
    rlk_fx_config cfg;
    int found = 0;

    signal(SIGPIPE, SIG_IGN);
    if (strcmp(want, "cluster") == 0) {
        static const afm_case on[] = {{"basic", test_basic}, {"wake", test_wake},
                                      {"watchdog", test_watchdog}, {"procs", test_procs},
                                      {"procs_control", test_procs_control}};
        char a[128], b[128];

        if (rlk_fx_cluster_start(&fcl) != 0) {
            fprintf(stderr, "async_fastmulti: the cluster did not start\n");
            return 1;
        }
        on_cluster = 1;
        rlk_fx_cluster_url(&fcl, 0, a, sizeof a);
        rlk_fx_cluster_url(&fcl, 1, b, sizeof b);
        snprintf(url, sizeof url, "redis+cluster://%s,%s", strstr(a, "://") + 3,
                 strstr(b, "://") + 3);
        printf("async_fastmulti (%s) on %s\n", aloop_name(), url);
        for (size_t i = 0; i < sizeof on / sizeof on[0]; i++)
            check_run(on[i].name, on[i].fn);
        rlk_fx_cluster_stop(&fcl);
        return check_summary("async_fastmulti cluster");
    }
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;      /* lost_adopt's DEBUG SLEEP */
    if (rlk_fx_start(&srv, &cfg) != 0)
        return 1;
    rlk_fx_url(&srv, -1, url, sizeof url);
    printf("async_fastmulti (%s) on %s\n", aloop_name(), url);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(want, "all") != 0 && strcmp(want, cases[i].name) != 0)
            continue;
        check_run(cases[i].name, cases[i].fn);
        found++;
    }
    rlk_fx_stop(&srv);
    if (!found) {
        fprintf(stderr, "async_fastmulti (%s): no case %s\n", aloop_name(), want);
        return 2;
    }
    return check_summary("async_fastmulti");
}
