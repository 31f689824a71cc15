/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_faults.c - safety under faults, through the C API:
 *   - a force unlock (by another client) reaches a holder within a round
 *     trip: its watchdog hold listens on the lock's channel, renews at once
 *     on a message and reports RLK_LOST_GONE - for the reentrant lock, the
 *     write and read sides of a read-write lock, the fenced lock and the fair
 *     lock (fair/force_release v4 tells the holders on the lock channel; v3
 *     woke only the head waiter, and the holder learned at its next renewal:
 *     the renewal period is 10 s here);
 *   - a young hold (forced right after its acquire, before its channel is joined: a hold joins
 *     it only once it has lived RLK_WD_JOIN_MS) is told within RLK_WD_JOIN_MS x 2 of its
 *     acquire plus two round trips (the SUBSCRIBE, then a renewal that finds it gone), not at
 *     its next renewal; and holds that live less than that send no SUBSCRIBE at all;
 *   - rlk_options.lost_margin_ms: with renewals failing (the server hangs),
 *     RLK_LOST_EXPIRED fires lost_margin_ms before (last successful renewal
 *     sent) + lease, not after it.
 */
#include "check.h"
#include "tk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/wd.h"

#define FORCE_BOUND_MS 500      /* a round trip, with room for scheduling noise */

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ force unlock */

enum { K_LOCK, K_WRITE, K_READ, K_FENCED, K_FAIR };

typedef struct holder {
    rlk_lock *l;
    rlk_rwlock *rw;
    rlk_fenced *f;
    rlk_fairlock *fa;
} holder;

static int take(rlk_client *c, int k, const char *name, holder *h)
{
    long long token;

    memset(h, 0, sizeof *h);
    switch (k) {
    case K_LOCK:
        return (h->l = rlk_lock_new(c, name)) ? rlk_lock_lock(h->l, 0) : -1;
    case K_WRITE:
    case K_READ:
        return (h->rw = rlk_rwlock_new(c, name))
                   ? rlk_rwlock_try_lock(h->rw, k == K_WRITE ? RLK_RW_WRITE : RLK_RW_READ, -1, 0)
                   : -1;
    case K_FAIR:
        return (h->fa = rlk_fairlock_new(c, name)) ? rlk_fairlock_try_lock(h->fa, -1, 0) : -1;
    default:
        return (h->f = rlk_fenced_new(c, name)) ? rlk_fenced_try_lock(h->f, -1, 0, &token) : -1;
    }
}

static void drop(holder *h)
{
    rlk_lock_free(h->l);
    rlk_rwlock_free(h->rw);
    rlk_fenced_free(h->f);
    rlk_fairlock_free(h->fa);
}

static int force(rlk_client *c, int k, const char *name)
{
    holder h;
    int released = 0, rc;

    memset(&h, 0, sizeof h);
    if (k == K_LOCK)
        rc = (h.l = rlk_lock_new(c, name)) ? rlk_lock_force_unlock(h.l, &released) : -1;
    else if (k == K_FENCED)
        rc = (h.f = rlk_fenced_new(c, name)) ? rlk_fenced_force_unlock(h.f, &released) : -1;
    else if (k == K_FAIR)
        rc = (h.fa = rlk_fairlock_new(c, name)) ? rlk_fairlock_force_unlock(h.fa, &released) : -1;
    else
        rc = (h.rw = rlk_rwlock_new(c, name)) ? rlk_rwlock_force_unlock(h.rw, RLK_RW_ANY, &released)
                                              : -1;
    drop(&h);
    return rc == RLK_OK && released ? 0 : -1;
}

static void force_reaches_holder(int k, const char *name, const char *channel, int want_kind)
{
    rlk_client *c1 = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    tk_lost_rec g;
    holder h;
    long long t_force, ms;

    tk_lost_init(&g);
    REQUIRE(c1 && c2);
    rlk_set_lost_kind_callback(c1, tk_on_lost_kind, &g);
    CHECK_INT_EQ(take(c1, k, name, &h), RLK_OK);
    /* The holder listens on the lock's channel while it holds. */
    CHECKF(tk_wait_numsub(&srv, channel, 1, 3000) == 0, "%s: nobody subscribed to %s while held",
           name, channel);
    tk_stall_reset(&stall);
    t_force = rlk_fx_now_ns();
    CHECK(force(c2, k, name) == 0);
    ms = tk_lost_ms_after(&g, t_force, 5000);
    CHECKF(ms >= 0, "%s: the lost callback did not fire within 5 s of the force unlock (renewal "
           "period 10 s)", name);
    printf("  %s: lost callback %lld ms after the force unlock\n", name, ms);
    CHECKF(ms >= 0 && ms < FORCE_BOUND_MS, "%s: lost callback %lld ms after the force "
           "unlock (bound %d ms; longest scheduling gap %lld ms%s)", name, ms, FORCE_BOUND_MS,
           tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    CHECK_INT_EQ(g.kind, want_kind);
    drop(&h);
    rlk_free(c1);
    rlk_free(c2);
    tk_lost_destroy(&g);
}

static void test_force_reentrant(void)
{
    force_reaches_holder(K_LOCK, "f:lock", "redisson_lock__channel:{f:lock}", RLK_KIND_LOCK);
}

static void test_force_write(void)
{
    force_reaches_holder(K_WRITE, "f:write", "redisson_rwlock:{f:write}", RLK_KIND_WRITE);
}

static void test_force_read(void)
{
    force_reaches_holder(K_READ, "f:read", "redisson_rwlock:{f:read}", RLK_KIND_READ);
}

static void test_force_fenced(void)
{
    force_reaches_holder(K_FENCED, "f:fenced", "redisson_lock__channel:{f:fenced}",
                         RLK_KIND_FENCED);
}

static void test_force_fair(void)
{
    force_reaches_holder(K_FAIR, "f:fair", "redisson_lock__channel:{f:fair}", RLK_KIND_FAIR);
}

/* A hold forced right after its acquire, from a client whose subscriber has not started yet:
 * before, its channel was joined at the acquire and the force unlock's message came before the
 * SUBSCRIBE, so it was heard by nobody and the holder learned of it at its next renewal (a third
 * of the lease, 10 s). Now the watchdog joins the channel once the hold has lived
 * RLK_WD_JOIN_MS, and renews it once the join is confirmed: the renewal finds it gone. */
static void test_force_young(void)
{
    rlk_client *c1 = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    tk_lost_rec g;
    rlk_lock *l, *f;
    long long t_acq, ms;
    int released = 0;

    tk_lost_init(&g);
    REQUIRE(c1 && c2);
    rlk_set_lost_callback(c1, tk_on_lost, &g);
    REQUIRE((l = rlk_lock_new(c1, "f:young")) && (f = rlk_lock_new(c2, "f:young")));
    CHECK_INT_EQ(rlk_lock_try_lock(f, 0, 100), RLK_OK);     /* c2 connected, its script loaded */
    CHECK_INT_EQ(rlk_lock_unlock(f), RLK_OK);
    tk_stall_reset(&stall);
    t_acq = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    CHECK(rlk_lock_force_unlock(f, &released) == RLK_OK && released);
    ms = tk_lost_ms_after(&g, t_acq, 5000);
    printf("  lost callback %lld ms after the acquire (joins at %d ms)\n", ms, RLK_WD_JOIN_MS);
    TK_CHECK_LOST_WITHIN(ms, 2 * RLK_WD_JOIN_MS + FORCE_BOUND_MS, &stall, "the acquire");
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    rlk_lock_free(l);
    rlk_lock_free(f);
    rlk_free(c1);
    rlk_free(c2);
    tk_lost_destroy(&g);
}

/* Holds that live less than RLK_WD_JOIN_MS (a watchdog lease) send no SUBSCRIBE: the client's
 * subscriber never connects, and the server sees nobody on the lock's channel. */
static void test_short_holds_no_subscribe(void)
{
    const char *chan = "redisson_lock__channel:{f:short}";
    rlk_client *c = tk_connect(url, 0, 1);
    rlk_runtime_stats st;
    rlk_lock *l;
    long long t0, ms;
    int n = 0;

    REQUIRE(c && (l = rlk_lock_new(c, "f:short")));
    t0 = rlk_fx_now_ns();
    /* Bounded: 200 holds, or as many as fit in half the delay (a stalled machine). */
    for (; n < 200 && (rlk_fx_now_ns() - t0) / 1000000 < RLK_WD_JOIN_MS / 2; n++) {
        CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
        CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    }
    ms = (rlk_fx_now_ns() - t0) / 1000000;
    memset(&st, 0, sizeof st);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    printf("  %d holds in %lld ms: %llu SUBSCRIBE, %lld subscribed on the server\n", n, ms,
           st.subscribes, tk_numsub(&srv, chan));
    CHECK(n > 0);
    CHECKF(st.subscribes == 0, "%d holds of %lld ms in all sent %llu SUBSCRIBE (want 0: none "
           "lived %d ms)", n, ms, st.subscribes, RLK_WD_JOIN_MS);
    CHECK_INT_EQ(tk_numsub(&srv, chan), 0);
    rlk_lock_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ lost margin */

#define MARGIN_LEASE 1500
#define MARGIN 700

/* The server hangs: every successful renewal was sent before t_pause, so
 * the callback must come by t_pause + lease - margin (plus the wakeup). */
static void test_lost_margin(void)
{
    rlk_fx_server s2;
    rlk_options o;
    rlk_client *c;
    rlk_lock *l;
    tk_lost_rec g;
    char url2[128];
    long long t_pause, ms;

    REQUIRE(rlk_fx_start(&s2, NULL) == 0);
    REQUIRE(rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    rlk_options_init(&o);
    o.url = url2;
    o.watchdog_lease_ms = MARGIN_LEASE;
    o.lost_margin_ms = MARGIN;
    c = rlk_connect(&o);
    tk_lost_init(&g);
    REQUIRE(c && rlk_err(c) == RLK_OK);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    l = rlk_lock_new(c, "f:margin");
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    tk_stall_reset(&stall);
    t_pause = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_fx_pause(&s2), 0);
    ms = tk_lost_ms_after(&g, t_pause, 5000);
    CHECK(ms >= 0);
    printf("  lost margin %d ms, lease %d ms: RLK_LOST_EXPIRED %lld ms after the server hung\n",
           MARGIN, MARGIN_LEASE, ms);
    CHECK_INT_EQ(g.reason, RLK_LOST_EXPIRED);
    CHECKF(ms >= 0 && ms <= MARGIN_LEASE - MARGIN + 100, "declared %lld ms after the hang: later than "
           "lease - margin = %d ms (longest scheduling gap %lld ms%s)", ms, MARGIN_LEASE - MARGIN,
           tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_fx_resume(&s2), 0);
    rlk_lock_free(l);
    rlk_free(c);
    rlk_fx_stop(&s2);
    tk_lost_destroy(&g);
}

int main(void)
{
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "rt_faults: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_force_reentrant);
    RUN_TEST(test_force_write);
    RUN_TEST(test_force_read);
    RUN_TEST(test_force_fenced);
    RUN_TEST(test_force_fair);
    RUN_TEST(test_force_young);
    RUN_TEST(test_short_holds_no_subscribe);
    RUN_TEST(test_lost_margin);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    return check_summary("rt_faults");
}
