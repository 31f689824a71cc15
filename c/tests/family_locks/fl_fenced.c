/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_fenced.c - the fenced lock (rlk_fenced_*) against a real redis-server:
 *   - tokens: every acquisition (re-entries too) returns a larger token from
 *     the acquire itself; rlk_fenced_token gives the caller's, last_token the
 *     server's; not-owner and busy answers; force unlock keeps the token key;
 *   - a waiter is woken by the release (pub/sub), not by the lease;
 *   - the watchdog renews the lock and its token key (fenced/renew) and
 *     reports a deleted lock lost (both callbacks, kind RLK_KIND_FENCED);
 *   - the invariant: 6 processes x 3 threads acquire and release one lock;
 *     the event log, sorted by acquisition, has strictly increasing tokens
 *     (0 regressions) and no two holds overlapping (0 overlaps).
 *
 * Child mode (argv[1]): contend URL THREADS ITERS LOGFILE.
 */
#include "check.h"
#include "fl_util.h"
#include "runtime/rt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ child: contend */

static void *contend_make(rlk_client *c)
{
    return rlk_fenced_new(c, "fe:contend");
}

static int contend_acquire(void *lock, long long lease_ms, long long *value)
{
    return rlk_fenced_lock(lock, lease_ms, value);
}

/* The caller's token is the acquisition's. */
static int contend_while_held(void *lock, int i, long long lease_ms, long long value)
{
    long long mine = 0;

    (void)i;
    (void)lease_ms;
    return rlk_fenced_token(lock, &mine) != RLK_OK || mine != value;
}

static int contend_release(void *lock)
{
    return rlk_fenced_unlock(lock);
}

static void contend_free(void *lock)
{
    rlk_fenced_free(lock);
}

static const fl_contender contender = {"fl_fenced", contend_make, contend_acquire,
                                       contend_while_held, contend_release, contend_free};

/* ------------------------------------------------------------ tokens */

static void test_tokens(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_fenced *f, *f2;
    long long t1 = 0, t2 = 0, t3 = 0, tok = -1, n = 0, ttl = 0, start;
    int held = -1, released = -1;

    REQUIRE(c && c2);
    f = rlk_fenced_new(c, "fe:basic");
    f2 = rlk_fenced_new(c2, "fe:basic");
    REQUIRE(f && f2);
    CHECK_STR_EQ(rlk_fenced_name(f), "fe:basic");
    CHECK_STR_EQ(rlk_fenced_token_name(f), "redisson_lock_token:{fe:basic}");
    CHECK_INT_EQ(rlk_fenced_last_token(f, &tok), RLK_OK);
    CHECK_INT_EQ(tok, 0);
    CHECK_INT_EQ(rlk_fenced_token(f, &tok), RLK_ERR_NOT_OWNER);

    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, 5000, &t1), RLK_OK);
    CHECK(t1 > 0);
    CHECK_INT_EQ(rlk_fenced_token(f, &tok), RLK_OK);
    CHECK_INT_EQ(tok, t1);
    CHECK_INT_EQ(rlk_fenced_last_token(f2, &tok), RLK_OK);
    CHECK_INT_EQ(tok, t1);
    /* A re-entry gets a new, larger token. */
    CHECK_INT_EQ(rlk_fenced_lock(f, 5000, &t2), RLK_OK);
    CHECKF(t2 > t1, "re-entry token %lld after %lld", t2, t1);
    CHECK_INT_EQ(rlk_fenced_hold_count(f, &n), RLK_OK);
    CHECK_INT_EQ(n, 2);
    CHECK_INT_EQ(rlk_fenced_token(f, &tok), RLK_OK);
    CHECK_INT_EQ(tok, t2);

    /* Another holder: busy at once, and after a bounded wait. */
    CHECK_INT_EQ(rlk_fenced_try_lock(f2, 0, 5000, &t3), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_err(c2), RLK_ERR_BUSY);
    start = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fenced_try_lock(f2, 150, 5000, &t3), RLK_ERR_BUSY);
    CHECK(rlk_fx_now_ms() - start >= 140);
    CHECK_INT_EQ(rlk_fenced_token(f2, &tok), RLK_ERR_NOT_OWNER);

    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);
    CHECK_INT_EQ(rlk_fenced_is_held_by_me(f, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);
    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_fenced_token(f, &tok), RLK_ERR_NOT_OWNER);

    CHECK_INT_EQ(rlk_fenced_try_lock(f2, 0, 5000, &t3), RLK_OK);
    CHECKF(t3 > t2, "next holder's token %lld after %lld", t3, t2);
    CHECK_INT_EQ(rlk_fenced_last_token(f, &tok), RLK_OK);
    CHECK_INT_EQ(tok, t3);
    CHECK_INT_EQ(rlk_fenced_is_held_by_me(f2, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_fenced_is_held_by_me(f, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_fenced_remaining_ttl(f, &ttl), RLK_OK);
    CHECK(ttl > 0 && ttl <= 5000);

    /* Force unlock: the lock goes, the token key stays. */
    CHECK_INT_EQ(rlk_fenced_force_unlock(f, &released), RLK_OK);
    CHECK_INT_EQ(released, 1);
    CHECK_INT_EQ(rlk_fenced_is_locked(f, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "redisson_lock_token:{fe:basic}"), 1);
    CHECK_INT_EQ(rlk_fenced_unlock(f2), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, 5000, &t1), RLK_OK);
    CHECK(t1 > t3);
    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);

    rlk_fenced_free(f);
    rlk_fenced_free(f2);
    rlk_free(c);
    rlk_free(c2);
}

static void test_names_and_args(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_fenced *f;
    long long tok = 0;

    REQUIRE(c);
    CHECK(rlk_fenced_new(c, "") == NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);
    f = rlk_fenced_new(c, "fe:{tag}x");
    REQUIRE(f);
    CHECK_STR_EQ(rlk_fenced_token_name(f), "redisson_lock_token:fe:{tag}x");
    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, 1000000000001LL, &tok), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fenced_set_owner(f, ""), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fenced_set_owner(f, "job-7"), RLK_OK);
    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, 5000, &tok), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "fe:{tag}x", "job-7"), 1);
    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);
    /* A key of another type: the script's refusal, nothing written. */
    {
        redisReply *r = rlk_fx_command(&srv, "SET %s %s", "fe:str", "x");

        CHECK(r && r->type == REDIS_REPLY_STATUS);
        if (r)
            freeReplyObject(r);
    }
    rlk_fenced_free(f);
    f = rlk_fenced_new(c, "fe:str");
    REQUIRE(f);
    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, 5000, &tok), RLK_ERR_SCRIPT);
    CHECK_STR_CONTAINS(rlk_errstr(c), "RLK_WRONGTYPE");
    rlk_fenced_free(f);
    rlk_free(c);
}

/* ------------------------------------------------------------ waiting */

typedef struct fe_waiter {
    rlk_fenced *lock;
    long long token;
} fe_waiter;

static int fe_wait_lock(void *arg)
{
    fe_waiter *b = arg;

    return rlk_fenced_try_lock(b->lock, 10000, 0, &b->token);
}

static int fe_unlock(void *f)
{
    return rlk_fenced_unlock(f);
}

static void test_waiter_woken(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_fenced *f;
    fe_waiter b = {0};
    fl_waiter w;
    long long t1 = 0, woken;
    int rc = -1;

    REQUIRE(c && c2);
    f = rlk_fenced_new(c, "fe:wake");
    b.lock = rlk_fenced_new(c2, "fe:wake");
    REQUIRE(f && b.lock);
    REQUIRE(rlk_fenced_set_owner(b.lock, "fe-waiter") == RLK_OK);  /* unlocked from here */
    REQUIRE_INT_EQ(rlk_fenced_try_lock(f, 0, 20000, &t1), RLK_OK);
    REQUIRE(fl_waiter_start(&w, fe_wait_lock, &b) == 0);
    woken = fl_waiter_woken(&w, &srv, "redisson_lock__channel:{fe:wake}", &stall, fe_unlock, f,
                            &rc);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECK(b.token > t1);
    CHECKF(woken >= 0 && woken <= 500, "woken %lld ms after the release (holder's lease 20000 "
           "ms)%s", woken, tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_fenced_unlock(b.lock), RLK_OK);
    rlk_fenced_free(b.lock);
    rlk_fenced_free(f);
    rlk_free(c);
    rlk_free(c2);
}

/* ------------------------------------------------------------ watchdog */

#define WD_LEASE 900     /* renewed every 300 ms: a renewal has 600 ms of room on a loaded machine */

static void test_watchdog_and_lost(void)
{
    rlk_client *c = tk_connect(url, WD_LEASE, 2);
    rlk_runtime_stats st;
    rlk_fenced *f;
    tk_lost_rec g;
    long long tok = 0, ttl, token_ttl;
    int held = -1;

    REQUIRE(c);
    tk_lost_init(&g);
    tk_lost_install(c, &g);
    f = rlk_fenced_new(c, "fe:wd");
    REQUIRE(f);
    REQUIRE_INT_EQ(rlk_fenced_lock(f, 0, &tok), RLK_OK);
    rlk_fx_sleep_ms(4 * WD_LEASE);      /* four leases: only renewals keep it */
    ttl = tk_int(&srv, "PTTL %s", "fe:wd");
    token_ttl = tk_int(&srv, "PTTL %s", "redisson_lock_token:{fe:wd}");
    CHECKF(ttl > 0 && ttl <= WD_LEASE, "lock PTTL %lld after four leases", ttl);
    CHECKF(token_ttl == -1, "token key PTTL %lld (it never expires)", token_ttl);
    CHECK_INT_EQ(rlk_fenced_is_held_by_me(f, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    CHECKF(st.renew_calls >= 3, "%llu renewals", st.renew_calls);
    CHECK_INT_EQ(st.renew_errors, 0);

    CHECK_INT_EQ(tk_int(&srv, "DEL %s", "fe:wd"), 1);
    CHECK(tk_latch_wait(&g.fired, 1, 3000) == 1);
    CHECK_INT_EQ(g.kind, RLK_KIND_FENCED);
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    CHECK_STR_EQ(g.name, "fe:wd");
    CHECK_INT_EQ(g.plain_count, 1);
    CHECK_INT_EQ(rlk_fenced_is_held_by_me(f, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_fenced_token(f, &tok), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_ERR_NOT_OWNER);
    rlk_fenced_free(f);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* ------------------------------------------------------------ invariant */

#define PROCS 6
#define THREADS 3
#define ITERS 40

static void test_invariant(void)
{
    fl_contend_run run;
    char why[512];
    long long max_token = 0, last = -1;

    REQUIRE(fl_contend(url, PROCS, THREADS, ITERS, 40000, &run) == 0);
    for (size_t i = 0; i < run.n; i++)
        if (run.recs[i].value > max_token)
            max_token = run.recs[i].value;
    {
        rlk_client *c = tk_connect(url, 0, 1);
        rlk_fenced *f = c ? rlk_fenced_new(c, "fe:contend") : NULL;

        if (f)
            rlk_fenced_last_token(f, &last);
        rlk_fenced_free(f);
        rlk_free(c);
    }
    printf("  fenced invariant: %d processes x %d threads, %zu acquisitions in %lld ms, "
           "%ld token regressions, %ld overlaps, %d errors\n", PROCS, THREADS, run.n, run.ms,
           run.rep.regressions, run.rep.conflicts, run.errors);
    CHECKF(fl_contend_problems(&run, PROCS, THREADS, ITERS, why, sizeof why) == 0, "%s", why);
    CHECK_INT_EQ(run.rep.regressions, 0);
    CHECK_INT_EQ(last, max_token);      /* the last token issued is the last holder's */
    free(run.recs);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return fl_child_main(argc, argv, &contender);
    signal(SIGPIPE, SIG_IGN);
    if (tk_suite_start("fl_fenced", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_tokens);
    RUN_TEST(test_names_and_args);
    RUN_TEST(test_waiter_woken);
    RUN_TEST(test_watchdog_and_lost);
    RUN_TEST(test_invariant);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_fenced");
}
