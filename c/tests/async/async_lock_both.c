/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_lock_both.c - a lost release of the reentrant lock settled alike on both APIs (the
 * acquisition machine's lost-release rule, kinds/acq.h, and what each driver makes of it): the
 * same scripted scenario, against one real redis-server, through the blocking API
 * (rlk_lock_unlock) and through the loop (rlk_async_unlock).
 *
 *   release_gone   the lock held twice with a 1.5 s lease; the server asleep 2 s (DEBUG
 *                  SLEEP) with the release written: its reply is lost, and when the server
 *                  wakes the lock has expired. The read-back finds no hold where the client
 *                  knew of two: gone meanwhile, RLK_ERR_NOT_OWNER on both APIs, the client's
 *                  hold forgotten, nothing left on the server.
 *
 *   rlk_async_lock_both_<loop> <case>|all
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fixture.h"
#include "aloop.h"
#include "async_procs.h"
#include "rlk.h"
#include "rlk_async.h"

#define CMD_TIMEOUT_MS 300
#define LEASE_MS 1500
#define SLEEP_MS 2000       /* past the command timeout and the lease */

static rlk_fx_server srv;
static char url[512];

typedef struct outcome {
    int err;
    char msg[512];
    long long held;         /* the client's locks_held after it */
    long long exists;       /* the lock's key on the server after it */
    unsigned long long lost;    /* lost replies counted by the release */
} outcome;

static long long exists(const char *name)
{
    redisReply *r = rlk_fx_command(&srv, "EXISTS %s", name);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    if (r)
        freeReplyObject(r);
    return n;
}

static void blocking(const char *name, outcome *o)
{
    rlk_options opt;
    rlk_client *c;
    rlk_lock *l;
    rlk_metrics m0, m;
    redisContext *x;

    rlk_options_init(&opt);
    opt.url = url;
    opt.command_timeout_ms = CMD_TIMEOUT_MS;
    opt.pool_size = 2;
    REQUIRE((c = rlk_connect(&opt)) != NULL && rlk_err(c) == RLK_OK);
    REQUIRE((l = rlk_lock_new(c, name)) != NULL);
    REQUIRE(rlk_lock_try_lock(l, 0, LEASE_MS) == RLK_OK);
    REQUIRE(rlk_lock_try_lock(l, 0, LEASE_MS) == RLK_OK);
    REQUIRE(rlk_metrics_get(c, &m0) == RLK_OK);
    REQUIRE((x = rlk_fx_sleep_begin(&srv, SLEEP_MS)) != NULL);
    o->err = rlk_lock_unlock(l);
    rlk_fx_sleep_end(x);
    snprintf(o->msg, sizeof o->msg, "%s", o->err == RLK_OK ? "" : rlk_errstr(c));
    REQUIRE(rlk_metrics_get(c, &m) == RLK_OK);
    o->held = (long long)m.locks_held;
    o->lost = m.lost_replies - m0.lost_replies;
    o->exists = exists(name);
    rlk_lock_free(l);
    rlk_free(c);
}

#define RUN(c, x, expr) do { memset(&(x), 0, sizeof(x)); AP_REQ(expr); \
                             REQUIRE(ap_wait_res(&(c), &(x), 15000)); } while (0)

static void async(const char *name, outcome *o)
{
    rlk_metrics m0, m;
    redisContext *x;
    ap_cl c;
    ap_res res;

    REQUIRE(ap_cl_open(&c, url, 0, 0, CMD_TIMEOUT_MS) == RLK_OK);
    RUN(c, res, rlk_async_lock(c.ac, RLK_KIND_LOCK, name, 1, 0, LEASE_MS, ap_on_res, &res));
    REQUIRE(res.err == RLK_OK);
    RUN(c, res, rlk_async_lock(c.ac, RLK_KIND_LOCK, name, 1, 0, LEASE_MS, ap_on_res, &res));
    REQUIRE(res.err == RLK_OK && res.value == 2);
    REQUIRE(rlk_async_metrics_get(c.ac, &m0) == RLK_OK);
    REQUIRE((x = rlk_fx_sleep_begin(&srv, SLEEP_MS)) != NULL);
    RUN(c, res, rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, 1, ap_on_res, &res));
    rlk_fx_sleep_end(x);
    o->err = res.err;
    snprintf(o->msg, sizeof o->msg, "%s", res.errstr);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    o->held = (long long)m.locks_held;
    o->lost = m.lost_replies - m0.lost_replies;
    o->exists = exists(name);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static void test_release_gone(void)
{
    outcome b = {.err = -1}, a = {.err = -1};

    blocking("alb:gone", &b);
    async("alb:gone:async", &a);
    printf("  blocking: %s %s (held %lld, key %lld, lost %llu)\n", rlk_strerror(b.err), b.msg,
           b.held, b.exists, b.lost);
    printf("  async:    %s %s (held %lld, key %lld, lost %llu)\n", rlk_strerror(a.err), a.msg,
           a.held, a.exists, a.lost);
    CHECKF(b.lost >= 1 && a.lost >= 1, "the release's reply lost: blocking %llu, async %llu",
           b.lost, a.lost);
    CHECKF(b.err == RLK_ERR_NOT_OWNER && a.err == RLK_ERR_NOT_OWNER,
           "results: blocking %s, async %s (want RLK_ERR_NOT_OWNER)", rlk_strerror(b.err),
           rlk_strerror(a.err));
    CHECKF(b.held == 0 && a.held == 0, "holds kept: blocking %lld, async %lld", b.held, a.held);
    CHECKF(b.exists == 0 && a.exists == 0, "keys left: blocking %lld, async %lld", b.exists,
           a.exists);
}

static const at_case cases[] = {
    {"release_gone", test_release_gone},
};

int main(int argc, char **argv)
{
    return AT_MAIN_DEBUG("async_lock_both", cases, argc > 1 ? argv[1] : "all", &srv, url);
}
