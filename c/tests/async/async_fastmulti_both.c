/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_fastmulti_both.c - the faster MultiLock's lost replies settled by one rule on both
 * APIs: the same scripted scenario, against one real redis-server, through the blocking API
 * (rlk_fastmulti_*) and through the loop (rlk_async_fastmulti_*), must end the same way
 * (the call's result, the count the client keeps, the server's lock_count, and which lost-reply
 * counters moved).
 *
 *   release_ran     values a and b held twice by one holder, only through this list; a release
 *                   whose reply is lost after it ran (DEBUG SLEEP: it runs when the server
 *                   wakes, its connection gone): every value counts one less, which settles it
 *                   as run (the client's count is exact: made only of this list): RLK_OK,
 *                   held once here and on the server, nothing unsettled;
 *   release_not_run the same hold, a release that never ran (CLIENT PAUSE): every value still
 *                   at 2: settled as not run, sent once more: held once;
 *   reentry_ran     held once; a re-entry whose reply is lost after it ran: adopted, held
 *                   twice here and on the server.
 *
 *   rlk_async_fastmulti_both_<loop> <case>|all
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fixture.h"
#include "aloop.h"
#include "async_procs.h"
#include "rlk.h"
#include "rlk_async.h"
#include "runtime/rt.h"
#include "runtime/wd.h"

#define CMD_TIMEOUT_MS 300
#define SLEEP_MS 1000       /* past the command timeout: the reply is lost */

static rlk_fx_server srv;
static char url[512];

static const char *const ab[] = {"a", "b"};

/* How one API's scenario ended. */
typedef struct outcome {
    int err;                /* the lost call's result */
    long long held;         /* the client's count of the hold after it */
    long long server;       /* a's lock_count of the holder on the server */
    unsigned long long lost, adopted, not_run, unsettled;   /* the counters' moves */
} outcome;

static long long lock_count(const char *g, const char *value, const char *owner)
{
    redisReply *r = rlk_fx_command(&srv, "HGET %s %s:%s:lock_count", g, value, owner);
    long long n = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    if (r)
        freeReplyObject(r);
    return n;
}

static void moved(outcome *o, const rlk_metrics *m0, const rlk_metrics *m)
{
    o->lost = m->lost_replies - m0->lost_replies;
    o->adopted = m->lost_adopted - m0->lost_adopted;
    o->not_run = m->lost_not_run - m0->lost_not_run;
    o->unsettled = m->lost_unsettled - m0->lost_unsettled;
}

enum { REL_RAN, REL_NOT_RUN, REENTRY_RAN };

/* Holds ab in g (twice; once for REENTRY_RAN), then the lost call of scenario sc. */
static void lost_call(int sc, redisContext **sleeper)
{
    if (sc == REL_NOT_RUN)
        REQUIRE(rlk_fx_client_pause(&srv, SLEEP_MS) == 0);
    else
        REQUIRE((*sleeper = rlk_fx_sleep_begin(&srv, SLEEP_MS)) != NULL);
}

static void lost_done(int sc, redisContext *sleeper)
{
    if (sc != REL_NOT_RUN)
        rlk_fx_sleep_end(sleeper);
}

/* The scenario through the blocking API. */
static void blocking(int sc, const char *g, outcome *po)
{
    outcome o = {0};
    rlk_options opt;
    rlk_client *c;
    rlk_fastmulti *m;
    rlk_metrics m0, m1;
    redisContext *sleeper = NULL;
    char owner[RLK_OWNER_MAX + 1];

    rlk_options_init(&opt);
    opt.url = url;
    opt.command_timeout_ms = CMD_TIMEOUT_MS;
    opt.pool_size = 2;
    REQUIRE((c = rlk_connect(&opt)) != NULL && rlk_err(c) == RLK_OK);
    REQUIRE((m = rlk_fastmulti_new(c, g, ab, 2)) != NULL);
    REQUIRE(rlk_fastmulti_owner(m, owner, sizeof owner) == RLK_OK);
    REQUIRE(rlk_fastmulti_try_lock(m, 0, 30000) == RLK_OK);
    if (sc != REENTRY_RAN)
        REQUIRE(rlk_fastmulti_try_lock(m, 0, 30000) == RLK_OK);
    REQUIRE(rlk_metrics_get(c, &m0) == RLK_OK);
    lost_call(sc, &sleeper);
    o.err = sc == REENTRY_RAN ? rlk_fastmulti_try_lock(m, 10000, 30000) : rlk_fastmulti_unlock(m);
    lost_done(sc, sleeper);
    if (o.err != RLK_OK)
        printf("  blocking: %s: %s\n", rlk_strerror(o.err), rlk_errstr(c));
    REQUIRE(rlk_metrics_get(c, &m1) == RLK_OK);
    moved(&o, &m0, &m1);
    o.held = rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner);
    o.server = lock_count(g, "a", owner);
    REQUIRE(rlk_fastmulti_force_unlock(m, NULL) == RLK_OK);
    rlk_fastmulti_free(m);
    rlk_free(c);
    *po = o;
}

#define RUN(c, x, expr) do { memset(&(x), 0, sizeof(x)); AP_REQ(expr); \
                             REQUIRE(ap_wait_res(&(c), &(x), 15000)); } while (0)

/* The same scenario through the loop. */
static void async(int sc, const char *g, outcome *po)
{
    outcome o = {0};
    rlk_metrics m0, m1;
    redisContext *sleeper = NULL;
    char owner[256];
    ap_cl c;
    ap_res x;

    REQUIRE(ap_cl_open(&c, url, 0, 0, CMD_TIMEOUT_MS) == RLK_OK);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(c.ac));
    RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    if (sc != REENTRY_RAN) {
        RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 0, 30000, ap_on_res, &x));
        REQUIRE(x.err == RLK_OK && x.value == 2);
    }
    REQUIRE(rlk_async_metrics_get(c.ac, &m0) == RLK_OK);
    lost_call(sc, &sleeper);
    if (sc == REENTRY_RAN)
        RUN(c, x, rlk_async_fastmulti_lock(c.ac, g, ab, 2, 1, 10000, 30000, ap_on_res, &x));
    else
        RUN(c, x, rlk_async_fastmulti_unlock(c.ac, g, ab, 2, 1, ap_on_res, &x));
    lost_done(sc, sleeper);
    o.err = x.err;
    if (o.err != RLK_OK)
        printf("  async: %s: %s\n", rlk_strerror(o.err), x.errstr);
    REQUIRE(rlk_async_metrics_get(c.ac, &m1) == RLK_OK);
    moved(&o, &m0, &m1);
    o.held = m1.locks_held ? x.value : 0;
    o.server = lock_count(g, "a", owner);
    RUN(c, x, rlk_async_fastmulti_force_unlock(c.ac, g, ab, 2, ap_on_res, &x));
    REQUIRE(x.err == RLK_OK);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    *po = o;
}

static void both(int sc, const char *g, int want_err, long long want_server)
{
    char ga[128];
    outcome b = {.err = -1}, a = {.err = -1};

    snprintf(ga, sizeof ga, "%s:async", g);
    blocking(sc, g, &b);
    async(sc, ga, &a);
    printf("  blocking: err %d held %lld server %lld lost %llu adopted %llu not run %llu "
           "unsettled %llu\n", b.err, b.held, b.server, b.lost, b.adopted, b.not_run, b.unsettled);
    printf("  async:    err %d held %lld server %lld lost %llu adopted %llu not run %llu "
           "unsettled %llu\n", a.err, a.held, a.server, a.lost, a.adopted, a.not_run, a.unsettled);
    CHECKF(b.err == want_err && a.err == want_err, "results: blocking %s, async %s (want %s)",
           rlk_strerror(b.err), rlk_strerror(a.err), rlk_strerror(want_err));
    CHECKF(b.server == want_server && a.server == want_server,
           "lock_count: blocking %lld, async %lld (want %lld)", b.server, a.server, want_server);
    CHECKF(b.held == a.held, "the client's count: blocking %lld, async %lld", b.held, a.held);
    CHECKF(b.lost >= 1 && a.lost >= 1, "a lost reply counted: blocking %llu, async %llu", b.lost,
           a.lost);
    CHECKF(b.adopted == a.adopted && b.not_run == a.not_run && b.unsettled == a.unsettled,
           "settled alike: adopted %llu/%llu, not run %llu/%llu, unsettled %llu/%llu",
           b.adopted, a.adopted, b.not_run, a.not_run, b.unsettled, a.unsettled);
}

static void test_release_ran(void)
{
    both(REL_RAN, "afb:relran", RLK_OK, 1);
}

static void test_release_not_run(void)
{
    both(REL_NOT_RUN, "afb:relnot", RLK_OK, 1);
}

static void test_reentry_ran(void)
{
    both(REENTRY_RAN, "afb:reentry", RLK_OK, 2);
}

static const at_case cases[] = {
    {"release_ran", test_release_ran},
    {"release_not_run", test_release_not_run},
    {"reentry_ran", test_reentry_ran},
};

int main(int argc, char **argv)
{
    return AT_MAIN_DEBUG("async_fastmulti_both", cases, argc > 1 ? argv[1] : "all", &srv, url);
}
