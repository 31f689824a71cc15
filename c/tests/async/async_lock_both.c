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
 *   doubt_nr       an unsettled acquire that ran, then the same owner's next try (the doubt
 *                  given back): the server stopped (SIGSTOP) past the settle budget while a
 *                  non-reentrant lock's single try is written: RLK_ERR_UNSETTLED; once the
 *                  server runs again the lost acquire runs too (the server counts a hold the
 *                  caller was told nothing of). The same owner's next try is refused by the
 *                  server as a re-entry: the client's doubt explains it, so the hold is given
 *                  back and taken anew: RLK_OK on both APIs, the server and the client count
 *                  one hold, one unlock frees the lock.
 *   doubt_upgrade  the same with a read of a read-write lock, then the write: the server's
 *                  RLK_UPGRADE (a read of the same id) is the doubt's read, given back: the
 *                  write RLK_OK on both, no read left.
 *
 *   rlk_async_lock_both_<loop> <case>|all
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* ---------------------------------------------------------------- doubts */

#define DOUBT_LEASE_MS 20000

/* The server's count of owner's field of name (HGET; 0: none). */
static long long server_count(const char *name, const char *owner)
{
    redisReply *r = rlk_fx_command(&srv, "HGET %s %s", name, owner);
    long long n = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    if (r)
        freeReplyObject(r);
    return n;
}

/* 1 once the lost call has run: the server counts want of owner on name (bounded poll). */
static int ran(const char *name, const char *owner, long long want)
{
    for (long long t0 = rlk_fx_now_ms(); rlk_fx_now_ms() - t0 < 10000;) {
        if (server_count(name, owner) == want)
            return 1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

/* A settle budget of 500 ms (the blocking API's) and 700 ms (the loop's). */
static void doubt_opts(rlk_options *o)
{
    rlk_options_init(o);
    o->url = url;
    o->command_timeout_ms = 200;
    o->connect_timeout_ms = 300;
    o->pool_size = 2;
}

/* How one API's doubt case ended. */
typedef struct doubted {
    int unsettled;          /* the first call's error */
    int ran;                /* its lost call ran on the server after all */
    int err;                /* the next call's */
    char msg[512];
    long long server, client;   /* after the next call: the server's count of its hold, the
                                   client's holds (locks_held) */
    long long left;         /* the server's count of the first kind after the unlock */
} doubted;

/* The blocking API: upgrade 0, a non-reentrant lock taken twice; 1, a read then the write. */
static void doubt_blocking(const char *name, int upgrade, doubted *d)
{
    char owner[256], wfield[300];
    rlk_options o;
    rlk_client *c;
    rlk_nrlock *l = NULL;
    rlk_rwlock *rw = NULL;
    rlk_metrics m;

    doubt_opts(&o);
    REQUIRE((c = rlk_connect(&o)) != NULL && rlk_err(c) == RLK_OK);
    if (upgrade) {
        REQUIRE((rw = rlk_rwlock_new(c, name)) && rlk_rwlock_owner(rw, owner, sizeof owner) == 0);
        REQUIRE(rlk_rwlock_try_lock(rw, RLK_RW_READ, 0, DOUBT_LEASE_MS) == RLK_OK);
        REQUIRE(rlk_rwlock_unlock(rw, RLK_RW_READ) == RLK_OK);  /* connected, scripts loaded */
    } else {
        REQUIRE((l = rlk_nrlock_new(c, name)) && rlk_nrlock_owner(l, owner, sizeof owner) == 0);
        REQUIRE(rlk_nrlock_try_lock(l, 0, DOUBT_LEASE_MS) == RLK_OK);
        REQUIRE(rlk_nrlock_unlock(l) == RLK_OK);
    }
    REQUIRE(rlk_fx_pause(&srv) == 0);
    REQUIRE(rlk_fx_stopped(&srv));
    d->unsettled = upgrade ? rlk_rwlock_try_lock(rw, RLK_RW_READ, 0, DOUBT_LEASE_MS)
                           : rlk_nrlock_try_lock(l, 0, DOUBT_LEASE_MS);
    REQUIRE(rlk_fx_resume(&srv) == 0);
    d->ran = ran(name, owner, 1);
    d->err = upgrade ? rlk_rwlock_try_lock(rw, RLK_RW_WRITE, 0, DOUBT_LEASE_MS)
                     : rlk_nrlock_try_lock(l, 0, DOUBT_LEASE_MS);
    snprintf(d->msg, sizeof d->msg, "%s", d->err == RLK_OK ? "" : rlk_errstr(c));
    snprintf(wfield, sizeof wfield, "%s%s", owner, upgrade ? ":write" : "");
    d->server = server_count(name, wfield);
    REQUIRE(rlk_metrics_get(c, &m) == RLK_OK);
    d->client = (long long)m.locks_held;
    if (d->err == RLK_OK)
        CHECK_INT_EQ(upgrade ? rlk_rwlock_unlock(rw, RLK_RW_WRITE) : rlk_nrlock_unlock(l), RLK_OK);
    d->left = server_count(name, owner);
    freeReplyObject(rlk_fx_command(&srv, "DEL %s", name));
    rlk_nrlock_free(l);
    rlk_rwlock_free(rw);
    rlk_free(c);
}

/* The loop: the same, task 1. */
static void doubt_async(const char *name, int upgrade, doubted *d)
{
    const int first = upgrade ? RLK_KIND_READ : RLK_KIND_LOCK;
    const int next = upgrade ? RLK_KIND_WRITE : RLK_KIND_LOCK;
    rlk_async_req *(*lock)(rlk_async *, int, const char *, unsigned long long, long long,
                           long long, rlk_async_fn, void *) =
        upgrade ? rlk_async_lock : rlk_async_lock_nr;
    char owner[256], wfield[300];
    rlk_options o;
    rlk_metrics m;
    ap_cl c;
    ap_res res;

    doubt_opts(&o);
    REQUIRE((c.l = aloop_new()) && (c.ac = rlk_async_new(&o)) && aloop_attach(c.l, c.ac) == 0);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(c.ac));
    RUN(c, res, lock(c.ac, first, name, 1, 0, DOUBT_LEASE_MS, ap_on_res, &res));
    REQUIRE(res.err == RLK_OK);
    RUN(c, res, rlk_async_unlock(c.ac, first, name, 1, ap_on_res, &res));
    REQUIRE(res.err == RLK_OK);
    REQUIRE(rlk_fx_pause(&srv) == 0);
    REQUIRE(rlk_fx_stopped(&srv));
    RUN(c, res, lock(c.ac, first, name, 1, 0, DOUBT_LEASE_MS, ap_on_res, &res));
    d->unsettled = res.err;
    REQUIRE(rlk_fx_resume(&srv) == 0);
    d->ran = ran(name, owner, 1);
    RUN(c, res, lock(c.ac, next, name, 1, 0, DOUBT_LEASE_MS, ap_on_res, &res));
    d->err = res.err;
    snprintf(d->msg, sizeof d->msg, "%s", res.errstr);
    snprintf(wfield, sizeof wfield, "%s%s", owner, upgrade ? ":write" : "");
    d->server = server_count(name, wfield);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    d->client = (long long)m.locks_held;
    if (d->err == RLK_OK) {
        RUN(c, res, rlk_async_unlock(c.ac, next, name, 1, ap_on_res, &res));
        CHECK_INT_EQ(res.err, RLK_OK);
    }
    d->left = server_count(name, owner);
    freeReplyObject(rlk_fx_command(&srv, "DEL %s", name));
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static void doubt(const char *name, int upgrade)
{
    doubted d[2];
    char an[128];

    snprintf(an, sizeof an, "%s:async", name);
    memset(d, 0, sizeof d);
    doubt_blocking(name, upgrade, &d[0]);
    doubt_async(an, upgrade, &d[1]);
    for (int i = 0; i < 2; i++) {
        const char *api = i ? "async" : "blocking";

        printf("  %-9s first %s (ran %d), next %s %s (server %lld, client %lld; left %lld)\n",
               api, rlk_strerror(d[i].unsettled), d[i].ran, rlk_strerror(d[i].err), d[i].msg,
               d[i].server, d[i].client, d[i].left);
        CHECKF(d[i].unsettled == RLK_ERR_UNSETTLED, "%s: the first call %s, not unsettled: the "
               "case proves nothing", api, rlk_strerror(d[i].unsettled));
        CHECKF(d[i].ran, "%s: the lost call never ran: the case proves nothing", api);
        CHECKF(d[i].err == RLK_OK, "%s: the next call %s %s, not RLK_OK", api,
               rlk_strerror(d[i].err), d[i].msg);
        CHECKF(d[i].server == 1 && d[i].client == 1, "%s: the server counts %lld, the client "
               "%lld: not one hold", api, d[i].server, d[i].client);
        CHECKF(d[i].left == 0, "%s: %lld %s left after the unlock: pinned", api, d[i].left,
               upgrade ? "reads" : "holds");
    }
}

static void test_doubt_nr(void)
{
    doubt("alb:doubt:nr", 0);
}

static void test_doubt_upgrade(void)
{
    doubt("alb:doubt:up", 1);
}

static const at_case cases[] = {
    {"release_gone", test_release_gone},
    {"doubt_nr", test_doubt_nr},
    {"doubt_upgrade", test_doubt_upgrade},
};

int main(int argc, char **argv)
{
    return AT_MAIN_DEBUG("async_lock_both", cases, argc > 1 ? argv[1] : "all", &srv, url);
}
