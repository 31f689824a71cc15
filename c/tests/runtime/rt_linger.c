/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_linger.c - a watchdog hold's channel, joined once the hold has lived RLK_WD_JOIN_MS
 * (runtime/wd.h), and its linger after the release (runtime/sub.h), through the C API against a
 * real redis-server:
 *   - a hold joins its lock's channel within 2 x RLK_WD_JOIN_MS of its acquire; a fenced lock's
 *     channel lingers after the release, as a waiter's does;
 *   - a reentrant lock's hold leaves its channel at once at its release (a contended lock would
 *     otherwise have this client hear every handoff), and the next long hold subscribes again;
 *   - a hold taken again while its channel lingers and forced at once (the message comes while
 *     no hold of the client is joined) is told within 2 x RLK_WD_JOIN_MS of the acquire and a
 *     round trip: joining a confirmed channel renews it at once;
 *   - lingering is bounded in time (rlk_sub_linger_ms) and in channels (rlk_sub_linger_max).
 * (Holds that end sooner join nothing: rt_faults.c.) The bounds are set small (or long) here
 * through the test knobs, when the build has them.
 */
#include "check.h"
#include "tk_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/sub.h"
#include "runtime/wd.h"

#define FORCE_BOUND_MS 500      /* a round trip, with room for scheduling noise */
#define LINGER_MAX 256          /* channels lingering at once: the default */

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* The bounds for the next client's subscriber (a test's clients are made after this). */
static void linger_bounds(long long ms, int max)
{
#ifdef RLK_SUB_LINGER_MAX
    rlk_sub_linger_ms = ms;
    rlk_sub_linger_max = max;
#else
    (void)ms;
    (void)max;
#endif
}

static rlk_runtime_stats stats(rlk_client *c)
{
    rlk_runtime_stats s;

    memset(&s, 0, sizeof s);
    (void)rlk_runtime_stats_get(c, &s);
    return s;
}

/* Takes l (or f) with the watchdog lease on c and holds it until the watchdog joined its
 * channel (a hold joins it once it has lived RLK_WD_JOIN_MS, and is renewed once the join is
 * confirmed: its first renewal, polled for 3 s at most); released unless keep. 0, or -1 (not
 * renewed in time, or a call failed). */
static int long_hold(rlk_client *c, rlk_lock *l, rlk_fenced *f, int keep)
{
    rlk_runtime_stats a = stats(c), b = a;
    long long token;
    int rc = l ? rlk_lock_lock(l, 0) : rlk_fenced_lock(f, 0, &token);

    for (int i = 0; rc == RLK_OK && i < 1500 && b.renew_calls == a.renew_calls; i++) {
        rlk_fx_sleep_ms(2);
        b = stats(c);
    }
    if (rc == RLK_OK && b.renew_calls == a.renew_calls)
        rc = -1;
    if (rc == RLK_OK && !keep)
        rc = l ? rlk_lock_unlock(l) : rlk_fenced_unlock(f);
    return rc;
}

/* Waits (3 s at most) until c's subscriber has read the server's confirmation of chan, and
 * leaves it lingering again. 0 once confirmed, -1 if not. */
static int wait_confirmed(rlk_client *c, const char *chan)
{
    rlk_rt *rt = rlk_rt_get(c);
    rlk_sub_chan *ch;
    unsigned long long mark;

    for (int i = 0; rt && i < 300; i++) {
        if (rlk_sub_try_join(rt->sub, chan, NULL, &ch, &mark)) {
            rlk_sub_leave(rt->sub, ch);
            return 0;
        }
        rlk_fx_sleep_ms(10);
    }
    return -1;
}

/* ------------------------------------------------------------ a hold's channel */

/* A hold joins its lock's channel once it has lived RLK_WD_JOIN_MS, by 2 x RLK_WD_JOIN_MS at
 * the latest (the watchdog thread looks a join delay after a hold was taken), and a fenced
 * lock's channel lingers after its release. */
static void test_long_hold_joins(void)
{
    const char *chan = "redisson_lock__channel:{lg:again}";
    rlk_client *c;
    rlk_fenced *l;
    long long t0, ms, token;

    linger_bounds(60000, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL && (l = rlk_fenced_new(c, "lg:again")) != NULL);
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_fenced_lock(l, 0, &token), RLK_OK);
    CHECKF(tk_wait_numsub(&srv, chan, 1, 3000) == 0, "the hold did not join its channel");
    ms = (rlk_fx_now_ns() - t0) / 1000000;
    printf("  subscribed %lld ms after the acquire (joins at %d ms)\n", ms, RLK_WD_JOIN_MS);
    CHECKF(ms < 2 * RLK_WD_JOIN_MS + FORCE_BOUND_MS, "subscribed %lld ms after the acquire "
           "(bound %d ms; longest scheduling gap %lld ms%s)", ms,
           2 * RLK_WD_JOIN_MS + FORCE_BOUND_MS, tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_fenced_unlock(l), RLK_OK);
    CHECKF(tk_numsub(&srv, chan) == 1, "the channel is not subscribed after the hold's release "
           "(it lingers)");
    rlk_fenced_free(l);
    rlk_free(c);
}

/* A reentrant lock's hold leaves its channel at its release (each handoff publishes there: a
 * lingering client would hear every one of another client's releases); the next long hold
 * subscribes again. */
static void test_lock_hold_leaves(void)
{
    const char *chan = "redisson_lock__channel:{lg:leave}";
    rlk_client *c;
    rlk_lock *l = NULL;
    rlk_runtime_stats a, b;

    linger_bounds(60000, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL && (l = rlk_lock_new(c, "lg:leave")) != NULL);
    CHECK_INT_EQ(long_hold(c, l, NULL, 0), RLK_OK);     /* released once joined and confirmed */
    CHECKF(tk_wait_numsub_at_most(&srv, chan, 0, 3000) == 0, "the channel still subscribed "
           "3 s after the hold's release (linger 60 s)");
    a = stats(c);
    CHECK_INT_EQ(long_hold(c, l, NULL, 0), RLK_OK);
    b = stats(c);
    CHECKF(b.subscribes - a.subscribes == 1 + (b.sub_drops - a.sub_drops), "the next long hold "
           "sent %llu SUBSCRIBE (want 1: subscribed again)", b.subscribes - a.subscribes);
    rlk_lock_free(l);
    rlk_free(c);
}

/* A force unlock of a hold taken again while its channel lingers, sent at once: its message
 * comes while no hold of the client is joined, so nobody is told; the hold, joining the
 * confirmed channel, is renewed at once and finds it gone: within 2 x RLK_WD_JOIN_MS of the
 * acquire and a round trip, not at its next renewal (10 s). */

static void test_retake_force_heard(void)
{
    rlk_client *c1, *c2;
    rlk_fenced *l, *f;
    tk_lost_rec g;
    long long t_acq, ms, token;
    int released = 0;

    linger_bounds(60000, LINGER_MAX);
    tk_lost_init(&g);
    REQUIRE((c1 = tk_connect(url, 0, 1)) != NULL && (c2 = tk_connect(url, 0, 1)) != NULL);
    rlk_set_lost_callback(c1, tk_on_lost, &g);
    REQUIRE((l = rlk_fenced_new(c1, "lg:force")) && (f = rlk_fenced_new(c2, "lg:force")));
    CHECK_INT_EQ(long_hold(c1, NULL, l, 0), RLK_OK);
    CHECK(wait_confirmed(c1, "redisson_lock__channel:{lg:force}") == 0);
    /* Taken again while the channel lingers, and forced at once. */
    tk_stall_reset(&stall);
    t_acq = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_fenced_lock(l, 0, &token), RLK_OK);
    CHECK(rlk_fenced_force_unlock(f, &released) == RLK_OK && released);
    ms = tk_lost_ms_after(&g, t_acq, 5000);
    printf("  lost callback %lld ms after the acquire\n", ms);
    TK_CHECK_LOST_WITHIN(ms, 2 * RLK_WD_JOIN_MS + FORCE_BOUND_MS, &stall, "the acquire");
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    rlk_fenced_free(l);
    rlk_fenced_free(f);
    rlk_free(c1);
    rlk_free(c2);
    tk_lost_destroy(&g);
}

/* ------------------------------------------------------------ bounds */

static void test_linger_ends(void)
{
    const char *chan = "redisson_lock__channel:{lg:ends}";
    rlk_client *c;
    rlk_fenced *l = NULL;

    linger_bounds(200, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL && (l = rlk_fenced_new(c, "lg:ends")) != NULL);
    CHECK_INT_EQ(long_hold(c, NULL, l, 0), RLK_OK);
    CHECKF(tk_wait_numsub_at_most(&srv, chan, 0, 5000) == 0, "the channel still subscribed 5 s "
           "after the hold's release (linger 200 ms)");
    rlk_fenced_free(l);
    rlk_free(c);
}

static void test_linger_count_bound(void)
{
    rlk_client *c;
    rlk_fenced *l[40];
    char name[64];
    long long n = -1, token;

    linger_bounds(60000, 8);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL);
    /* 40 holds at once, each long enough to join its channel; then released. */
    for (int i = 0; i < 40; i++) {
        snprintf(name, sizeof name, "lg:many:%d", i);
        REQUIRE((l[i] = rlk_fenced_new(c, name)) != NULL);
        CHECK_INT_EQ(rlk_fenced_lock(l[i], 0, &token), RLK_OK);
    }
    for (int i = 0; i < 500 && (n = tk_numsub_matching(&srv, "*{lg:many:*")) < 40; i++)
        rlk_fx_sleep_ms(10);
    CHECKF(n == 40, "%lld of 40 holds joined their channels within 5 s", n);
    for (int i = 0; i < 40; i++) {
        CHECK_INT_EQ(rlk_fenced_unlock(l[i]), RLK_OK);
        rlk_fenced_free(l[i]);
    }
    /* The UNSUBSCRIBEs past the bound are sent on the subscriber's next turn. */
    for (int i = 0; i < 300 && (n = tk_numsub_matching(&srv, "*{lg:many:*")) > 8; i++)
        rlk_fx_sleep_ms(10);
    printf("  40 holds of 40 names: %lld channels still subscribed (bound 8)\n", n);
    CHECKF(n >= 0 && n <= 8, "%lld channels subscribed after 40 holds of 40 names were "
           "released: more than the bound of 8 lingering", n);
    rlk_free(c);
}

int main(void)
{
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "rt_linger: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_long_hold_joins);
    RUN_TEST(test_lock_hold_leaves);
    RUN_TEST(test_retake_force_heard);
    RUN_TEST(test_linger_ends);
    RUN_TEST(test_linger_count_bound);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    return check_summary("rt_linger");
}
