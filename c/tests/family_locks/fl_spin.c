/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_spin.c - the reentrant lock waiting by back-off (rlk_lock_set_spin)
 * against a real redis-server:
 *   - holders and waiters issue no SUBSCRIBE (INFO commandstats: the
 *     server's count of SUBSCRIBE, SSUBSCRIBE and PSUBSCRIBE calls stays
 *     0; PUBSUB NUMSUB of the lock's channel 0); the control: a pub/sub
 *     waiter on the same server raises that count, so the probe sees one;
 *   - a waiter takes the lock soon after the release (within a back-off
 *     step), and by the holder's lease at the latest whatever the back-off;
 *   - a wait runs out (RLK_ERR_BUSY) after its wait; bad bounds refused;
 *   - the invariant: 6 processes x 3 threads, every one spinning, acquire
 *     and release one lock: 0 overlaps, and still no SUBSCRIBE.
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

/* The server's SUBSCRIBE + SSUBSCRIBE + PSUBSCRIBE calls so far (INFO commandstats), -1 on error. */
static long long subscribe_calls(void)
{
    static const char *const cmds[] = {"cmdstat_subscribe:calls=", "cmdstat_ssubscribe:calls=",
                                       "cmdstat_psubscribe:calls="};
    redisReply *r = rlk_fx_command(&srv, "INFO commandstats");
    long long n = 0;

    if (!r || r->type != REDIS_REPLY_STRING) {     /* hiredis 0.14: RESP2 only */
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        const char *p = strstr(r->str, cmds[k]);

        if (p)
            n += atoll(p + strlen(cmds[k]));
    }
    freeReplyObject(r);
    return n;
}

/* ------------------------------------------------------------ child: contend */

/* Every thread of a child spins (back-off 1..16 ms): no pub/sub. */
static void *contend_make(rlk_client *c)
{
    rlk_lock *l = rlk_lock_new(c, "sp:contend");

    if (l && rlk_lock_set_spin(l, 1, 16) != RLK_OK) {
        rlk_lock_free(l);
        l = NULL;
    }
    return l;
}

static int contend_acquire(void *lock, long long lease_ms, long long *value)
{
    (void)value;
    return rlk_lock_lock(lock, lease_ms);
}

static int contend_release(void *lock)
{
    return rlk_lock_unlock(lock);
}

static void contend_free(void *lock)
{
    rlk_lock_free(lock);
}

static const fl_contender contender = {"fl_spin", contend_make, contend_acquire, NULL,
                                       contend_release, contend_free};

/* ------------------------------------------------------------ bounds */

static void test_bounds(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_lock *l;

    REQUIRE(c);
    l = rlk_lock_new(c, "sp:args");
    REQUIRE(l);
    CHECK_INT_EQ(rlk_lock_set_spin(NULL, 1, 2), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_set_spin(l, -1, 5), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_set_spin(l, 10, 5), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_set_spin(l, 1, 60001), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "sp:args");
    CHECK_INT_EQ(rlk_lock_set_spin(l, 0, 0), RLK_OK);      /* pub/sub */
    CHECK_INT_EQ(rlk_lock_set_spin(l, 0, 500), RLK_OK);    /* 1..500 */
    CHECK_INT_EQ(rlk_lock_set_spin(l, 200, 0), RLK_OK);    /* 200..200 */
    rlk_lock_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ no SUBSCRIBE */

typedef struct bg_lock {
    rlk_lock *lock;
    long long wait_ms;
    int rc;
    long long at_ms;
    tk_latch done;
} bg_lock;

static void *bg_lock_main(void *arg)
{
    bg_lock *b = arg;

    b->rc = rlk_lock_try_lock(b->lock, b->wait_ms, 0);
    b->at_ms = rlk_fx_now_ms();
    tk_latch_add(&b->done, 1);
    return NULL;
}

/* Bounded poll until c's client made at least n acquire attempts (its metrics): 0, or -1. */
static int wait_attempts(rlk_client *c, unsigned long long n, long long timeout_ms)
{
    long long end = rlk_fx_now_ms() + timeout_ms;
    rlk_metrics m;

    while (rlk_fx_now_ms() < end) {
        if (rlk_metrics_get(c, &m) == RLK_OK && m.acquire_calls >= n)
            return 0;
        rlk_fx_sleep_ms(2);
    }
    return -1;
}

/* holder holds its lock; a background waiter (on waiter_c) asks for it and fails attempts
 * until the holder releases. Returns the ms from the release to the waiter's acquisition. */
static long long handoff(rlk_lock *holder, rlk_lock *waiter, rlk_client *waiter_c)
{
    bg_lock b = {0};
    rlk_metrics m;
    unsigned long long before = 0;
    long long at;
    pthread_t t;

    if (rlk_metrics_get(waiter_c, &m) == RLK_OK)
        before = m.acquire_calls;
    b.lock = waiter;
    b.wait_ms = 10000;
    tk_latch_init(&b.done);
    pthread_create(&t, NULL, bg_lock_main, &b);
    CHECK(wait_attempts(waiter_c, before + 3, 5000) == 0);     /* failed twice, still asking */
    CHECK_INT_EQ(tk_latch_get(&b.done), 0);
    tk_stall_reset(&stall);
    at = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_lock_unlock(holder), RLK_OK);
    tk_latch_wait(&b.done, 1, 10000);
    pthread_join(t, NULL);
    CHECK_INT_EQ(b.rc, RLK_OK);
    at = b.at_ms - at;
    CHECK_INT_EQ(rlk_lock_unlock(waiter), RLK_OK);
    tk_latch_destroy(&b.done);
    return at;
}

static void test_no_subscribe(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_lock *a, *b, *ps;
    long long subs0, subs1, subs2, ms, t0;
    redisReply *r;

    REQUIRE(c && c2);
    subs0 = subscribe_calls();
    REQUIRE(subs0 >= 0);
    a = rlk_lock_new(c, "sp:door");
    b = rlk_lock_new(c2, "sp:door");
    REQUIRE(a && b);
    REQUIRE_INT_EQ(rlk_lock_set_spin(a, 1, 32), RLK_OK);
    REQUIRE_INT_EQ(rlk_lock_set_spin(b, 1, 32), RLK_OK);
    REQUIRE_INT_EQ(rlk_lock_set_owner(b, "sp-waiter"), RLK_OK);    /* unlocked from here */
    /* Watchdog holds (no lease): the hold joins no channel either. */
    REQUIRE_INT_EQ(rlk_lock_lock(a, 0), RLK_OK);
    ms = handoff(a, b, c2);
    printf("  spinning waiter acquired %lld ms after the release (back-off 1..32 ms)\n", ms);
    CHECKF(ms <= 32 + 500, "acquired %lld ms after the release (max scheduling gap %lld ms%s)", ms,
           tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    /* Re-entry works as for any rlk_lock. */
    CHECK_INT_EQ(rlk_lock_lock(a, 0), RLK_OK);
    CHECK_INT_EQ(rlk_lock_lock(a, 0), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(a), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(a), RLK_OK);
    /* A wait that runs out. */
    REQUIRE_INT_EQ(rlk_lock_lock(a, 0), RLK_OK);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_lock_try_lock(b, 300, 0), RLK_ERR_BUSY);
    ms = rlk_fx_now_ms() - t0;
    CHECKF(ms >= 295 && ms < 3000, "a 300 ms wait ended after %lld ms", ms);
    CHECK_INT_EQ(rlk_lock_unlock(a), RLK_OK);
    subs1 = subscribe_calls();
    r = rlk_fx_command(&srv, "PUBSUB NUMSUB %s", "redisson_lock__channel:{sp:door}");
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
          r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer == 0);
    if (r)
        freeReplyObject(r);
    printf("  SUBSCRIBE calls: %lld before, %lld after the spinning holds and waits\n", subs0,
           subs1);
    CHECK_INT_EQ(subs1, subs0);
    /* Control: a pub/sub waiter on the same server is seen by the probe. */
    ps = rlk_lock_new(c2, "sp:door");
    REQUIRE(ps);
    REQUIRE_INT_EQ(rlk_lock_set_owner(ps, "ps-waiter"), RLK_OK);
    REQUIRE_INT_EQ(rlk_lock_lock(a, 0), RLK_OK);
    (void)handoff(a, ps, c2);
    subs2 = subscribe_calls();
    printf("  control: %lld SUBSCRIBE calls after a pub/sub waiter\n", subs2);
    CHECKF(subs2 > subs1, "the pub/sub waiter's SUBSCRIBE not seen (%lld, %lld)", subs1, subs2);
    rlk_lock_free(ps);
    rlk_lock_free(b);
    rlk_lock_free(a);
    rlk_free(c);
    rlk_free(c2);
}

/* A holder that never releases: the waiter's sleep is cut to the holder's TTL. */
static void test_lease_bounds_sleep(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_lock *a, *b;
    long long t0, ms;

    REQUIRE(c && c2);
    a = rlk_lock_new(c, "sp:lease");
    b = rlk_lock_new(c2, "sp:lease");
    REQUIRE(a && b);
    REQUIRE_INT_EQ(rlk_lock_set_spin(b, 20000, 60000), RLK_OK);  /* a long back-off */
    REQUIRE_INT_EQ(rlk_lock_try_lock(a, 0, 400), RLK_OK);         /* 400 ms lease */
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_lock_try_lock(b, 10000, 5000), RLK_OK);
    ms = rlk_fx_now_ms() - t0;
    printf("  a holder with a 400 ms lease: the waiter (back-off 20 s) took it after %lld ms\n", ms);
    CHECKF(ms < 2000, "took %lld ms (max scheduling gap %lld ms%s)", ms,
           tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_lock_unlock(b), RLK_OK);
    rlk_lock_free(b);
    rlk_lock_free(a);
    rlk_free(c);
    rlk_free(c2);
}

/* ------------------------------------------------------------ invariant */

#define PROCS 6
#define THREADS 3
#define ITERS 40

static void test_invariant(void)
{
    fl_contend_run run;
    char why[512];
    long long subs0 = subscribe_calls(), subs1;

    REQUIRE(fl_contend(url, PROCS, THREADS, ITERS, 60000, &run) == 0);
    subs1 = subscribe_calls();
    printf("  spin invariant: %d processes x %d threads, %zu acquisitions in %lld ms, "
           "%ld overlaps, %d errors, %lld SUBSCRIBE calls\n", PROCS, THREADS, run.n, run.ms,
           run.rep.conflicts, run.errors, subs1 - subs0);
    CHECKF(fl_contend_problems(&run, PROCS, THREADS, ITERS, why, sizeof why) == 0, "%s", why);
    CHECK_INT_EQ(subs1, subs0);
    free(run.recs);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return fl_child_main(argc, argv, &contender);
    signal(SIGPIPE, SIG_IGN);
    if (tk_suite_start("fl_spin", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_bounds);
    RUN_TEST(test_invariant);           /* first: nothing subscribed on the server before it */
    RUN_TEST(test_no_subscribe);
    RUN_TEST(test_lease_bounds_sleep);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_spin");
}
