/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_retake.c - one client taking the same lock again and again with the watchdog's lease, as an
 * uncontended loop does, against a real redis-server. The registry keeps the record of the last
 * hold released with its watchdog entry (runtime/wd_t.h, the spare) and gives it to the next hold
 * of the same kind, name and owner; holds shorter than RLK_WD_JOIN_MS join no channel
 * (runtime/wd.h). What must hold:
 *   - a hold forced at once after many short holds is told within 2 x RLK_WD_JOIN_MS of its
 *     acquire and a round trip, not at the next renewal;
 *   - a hold taken with a fixed lease after a watchdog hold of the same lock is never renewed;
 *   - a watchdog hold after a fixed one of the same lock is renewed;
 *   - another thread's (another holder id's) watchdog hold of a lock a thread just released is
 *     renewed as its own;
 *   - a fenced lock taken again renews with the new acquisition's token.
 * Renewals are waited for by counting them (bounded polls), never by sleeping a lease.
 */
#include "check.h"
#include "tk_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/wd.h"

#define FORCE_BOUND_MS 500      /* a round trip, with room for scheduling noise */
#define LEASE 300               /* the short clients' watchdog lease: renewed every 100 ms */

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

static rlk_runtime_stats stats(rlk_client *c)
{
    rlk_runtime_stats s;

    memset(&s, 0, sizeof s);
    (void)rlk_runtime_stats_get(c, &s);
    return s;
}

/* Waits (bounded: 10 s) until c made n renewal calls more than at *from; 0, or -1. */
static int renewals(rlk_client *c, const rlk_runtime_stats *from, unsigned long long n)
{
    for (int i = 0; i < 1000; i++) {
        if (stats(c).renew_calls >= from->renew_calls + n)
            return 0;
        rlk_fx_sleep_ms(10);
    }
    return -1;
}

/* Takes and releases l with the watchdog lease n times; 0 or the first failure. */
static int pairs(rlk_lock *l, int n)
{
    int rc = RLK_OK;

    for (int i = 0; i < n && rc == RLK_OK; i++)
        if ((rc = rlk_lock_try_lock(l, 0, -1)) == RLK_OK)
            rc = rlk_lock_unlock(l);
    return rc;
}

/* ------------------------------------------------------------ after many short holds */

/* 400 short holds (none joins the lock's channel: none lives RLK_WD_JOIN_MS), then a hold forced
 * at once: it is told within 2 x RLK_WD_JOIN_MS of its acquire and a round trip (it joins the
 * channel then, and is renewed once the join is confirmed), not at its next renewal (10 s). */
static void test_force_after_batches(void)
{
    const char *chan = "redisson_lock__channel:{rt:batches}";
    rlk_client *c1, *c2;
    rlk_lock *l, *f;
    rlk_runtime_stats a, b;
    tk_lost_rec g;
    long long t_force, ms;
    int released = 0;

    tk_lost_init(&g);
    REQUIRE((c1 = tk_connect(url, 0, 1)) != NULL && (c2 = tk_connect(url, 0, 1)) != NULL);
    rlk_set_lost_callback(c1, tk_on_lost, &g);
    REQUIRE((l = rlk_lock_new(c1, "rt:batches")) && (f = rlk_lock_new(c2, "rt:batches")));
    a = stats(c1);
    CHECK_INT_EQ(pairs(l, 400), RLK_OK);
    b = stats(c1);
    printf("  400 holds: %llu SUBSCRIBE, %llu messages read\n", b.subscribes - a.subscribes,
           b.sub_messages - a.sub_messages);
    CHECK_INT_EQ(tk_numsub(&srv, chan), 0);
    tk_stall_reset(&stall);
    t_force = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, -1), RLK_OK);
    CHECK(rlk_lock_force_unlock(f, &released) == RLK_OK && released);
    ms = tk_lost_ms_after(&g, t_force, 5000);
    printf("  lost callback %lld ms after the acquire\n", ms);
    TK_CHECK_LOST_WITHIN(ms, 2 * RLK_WD_JOIN_MS + FORCE_BOUND_MS, &stall, "the acquire");
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    rlk_lock_free(l);
    rlk_lock_free(f);
    rlk_free(c1);
    rlk_free(c2);
    tk_lost_destroy(&g);
}

/* ------------------------------------------------------------ the next hold of a record */

/* A watchdog hold released, then the same lock with a fixed lease of 60 s: while another hold
 * is renewed 5 times (the watchdog's rounds go on), the fixed one is not renewed: its PTTL stays
 * far above the watchdog's lease of 300 ms, which a renewal would set. */
static void test_fixed_after_watchdog(void)
{
    rlk_client *c;
    rlk_lock *l, *clock;
    rlk_runtime_stats a;
    long long ttl;

    REQUIRE((c = tk_connect(url, LEASE, 1)) != NULL);
    REQUIRE((l = rlk_lock_new(c, "rt:fixed")) && (clock = rlk_lock_new(c, "rt:fixed:clock")));
    CHECK_INT_EQ(pairs(l, 3), RLK_OK);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 60000), RLK_OK);
    CHECK_INT_EQ(rlk_lock_try_lock(clock, 0, -1), RLK_OK);
    a = stats(c);
    CHECKF(renewals(c, &a, 5) == 0, "no 5 renewals of a watchdog hold within 10 s");
    ttl = tk_int(&srv, "PTTL rt:fixed");
    printf("  fixed hold after 5 renewal rounds: PTTL %lld ms\n", ttl);
    CHECKF(ttl > 10 * LEASE, "the fixed hold's PTTL is %lld ms: the watchdog renewed it", ttl);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(clock), RLK_OK);
    rlk_lock_free(l);
    rlk_lock_free(clock);
    rlk_free(c);
}

/* A fixed hold released, then the same lock with the watchdog's lease: renewed (5 renewals,
 * more than its lease of 300 ms), still there and still the caller's. */
static void test_watchdog_after_fixed(void)
{
    rlk_client *c;
    rlk_lock *l;
    rlk_runtime_stats a;
    tk_lost_rec g;
    int held = 0;

    tk_lost_init(&g);
    REQUIRE((c = tk_connect(url, LEASE, 1)) != NULL);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    REQUIRE((l = rlk_lock_new(c, "rt:wd")) != NULL);
    for (int i = 0; i < 3; i++) {
        CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 60000), RLK_OK);
        CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    }
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, -1), RLK_OK);
    a = stats(c);
    CHECKF(renewals(c, &a, 5) == 0, "the watchdog hold taken after fixed ones of the same lock "
           "was not renewed 5 times within 10 s");
    CHECK_INT_EQ(tk_latch_get(&g.fired), 0);
    CHECK(tk_int(&srv, "PTTL rt:wd") > 0);
    CHECK(rlk_lock_is_held_by_me(l, &held) == RLK_OK && held);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    rlk_lock_free(l);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* Two threads of one client (two holder ids) take the same lock in turn with the watchdog's
 * lease: the second thread's hold is renewed as its own (a renewal naming the first thread's
 * field would find it gone and report the hold lost). */
typedef struct turn_arg {
    rlk_client *c;
    int rc, held;
} turn_arg;

static void *second_thread(void *p)
{
    turn_arg *t = p;
    rlk_lock *l = rlk_lock_new(t->c, "rt:turns");
    rlk_runtime_stats a;

    if (!l)
        return NULL;
    if ((t->rc = rlk_lock_try_lock(l, 0, -1)) == RLK_OK) {
        a = stats(t->c);
        if (renewals(t->c, &a, 5) != 0)
            t->rc = -1;
        else if (rlk_lock_is_held_by_me(l, &t->held) == RLK_OK && t->held)
            t->rc = rlk_lock_unlock(l);
    }
    rlk_lock_free(l);
    return NULL;
}

static void test_other_thread_after(void)
{
    rlk_client *c;
    rlk_lock *l;
    turn_arg t;
    tk_lost_rec g;
    pthread_t th;

    tk_lost_init(&g);
    memset(&t, 0, sizeof t);
    REQUIRE((c = tk_connect(url, LEASE, 1)) != NULL);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    REQUIRE((l = rlk_lock_new(c, "rt:turns")) != NULL);
    CHECK_INT_EQ(pairs(l, 3), RLK_OK);
    t.c = c;
    t.rc = -2;
    REQUIRE(pthread_create(&th, NULL, second_thread, &t) == 0);
    pthread_join(th, NULL);
    CHECKF(t.rc == RLK_OK && t.held, "the second thread's hold: rc %d, held %d (lost reports %d)",
           t.rc, t.held, tk_latch_get(&g.fired));
    CHECK_INT_EQ(tk_latch_get(&g.fired), 0);
    rlk_lock_free(l);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* A fenced lock taken again with the watchdog's lease: each hold has a new token, and its
 * renewals name the current one (a renewal naming an earlier token is refused: the hold lost). */
static void test_fenced_again(void)
{
    rlk_client *c;
    rlk_fenced *f;
    rlk_runtime_stats a;
    tk_lost_rec g;
    long long t1 = 0, t2 = 0;

    tk_lost_init(&g);
    REQUIRE((c = tk_connect(url, LEASE, 1)) != NULL);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    REQUIRE((f = rlk_fenced_new(c, "rt:fenced")) != NULL);
    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, -1, &t1), RLK_OK);
    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);
    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, -1, &t2), RLK_OK);
    CHECK(t2 > t1);
    a = stats(c);
    CHECKF(renewals(c, &a, 5) == 0, "the fenced hold taken again was not renewed 5 times "
           "within 10 s");
    CHECKF(tk_latch_get(&g.fired) == 0, "the fenced hold taken again was reported lost "
           "(reason %d)", g.reason);
    CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);
    rlk_fenced_free(f);
    rlk_free(c);
    tk_lost_destroy(&g);
}

int main(void)
{
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "rt_retake: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_force_after_batches);
    RUN_TEST(test_fixed_after_watchdog);
    RUN_TEST(test_watchdog_after_fixed);
    RUN_TEST(test_other_thread_after);
    RUN_TEST(test_fenced_again);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    return check_summary("rt_retake");
}
