/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_kinds.c - every lock kind on a Redis Cluster:
 * each kind (the faster MultiLock too) on names owned by each of the three masters; MultiLock with a
 * member on every master; RedLock refused; lease-less locks in many slots
 * kept by the watchdog through 5 leases (control: leased locks in the same
 * slots expire); a waiter on one shard woken by a release on another, with
 * its latency measured. One cluster for the whole program.
 */
#include "check.h"
#include "cl_util.h"
#include "cluster.h"
#include "tk_util.h"
#include "client/client.h"
#include "client/slot.h"
#include "runtime/rt.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define LEASE_MS 1500LL         /* the watchdog lease of the renewal tests */

static rlk_fx_cluster cl;
static char url[512];
static int mst[3];              /* the masters' node indexes at start */

static atomic_int lost_count;

static void on_lost(const char *name, const char *owner, int reason, void *ud)
{
    (void)ud;
    tk_say("lost: %s (%s) reason %d", name, owner, reason);
    atomic_fetch_add(&lost_count, 1);
}

/* ------------------------------------------------------------ every kind */

static void kinds_on(rlk_client *c, rlk_client *c2, int master)
{
    char n[64];

    cl_name_on(&cl, "cl:lock:", master, n, sizeof n);
    {
        rlk_lock *a = rlk_lock_new(c, n), *b = rlk_lock_new(c2, n);

        REQUIRE(a && b);
        CHECKF(rlk_lock_try_lock(a, 0, 10000) == RLK_OK, "lock %s: %s", n, rlk_errstr(c));
        CHECK_INT_EQ(rlk_lock_try_lock(b, 0, 10000), RLK_ERR_BUSY);
        CHECKF(rlk_lock_unlock(a) == RLK_OK, "%s", rlk_errstr(c));
        CHECKF(rlk_lock_try_lock(b, 0, 10000) == RLK_OK, "%s", rlk_errstr(c2));
        CHECK_INT_EQ(rlk_lock_unlock(b), RLK_OK);
        rlk_lock_free(a);
        rlk_lock_free(b);
    }
    cl_name_on(&cl, "cl:rw:", master, n, sizeof n);
    {
        rlk_rwlock *a = rlk_rwlock_new(c, n), *b = rlk_rwlock_new(c2, n);
        long long readers = 0;

        REQUIRE(a && b);
        CHECKF(rlk_rwlock_try_lock(a, RLK_RW_READ, 0, 10000) == RLK_OK, "rw %s: %s", n,
               rlk_errstr(c));
        CHECKF(rlk_rwlock_try_lock(b, RLK_RW_READ, 0, 10000) == RLK_OK, "%s", rlk_errstr(c2));
        CHECK(rlk_rwlock_reader_count(a, &readers) == RLK_OK && readers == 2);
        CHECK_INT_EQ(rlk_rwlock_try_lock(b, RLK_RW_WRITE, 0, 10000), RLK_ERR_UPGRADE);
        CHECK_INT_EQ(rlk_rwlock_unlock(a, RLK_RW_READ), RLK_OK);
        CHECK_INT_EQ(rlk_rwlock_unlock(b, RLK_RW_READ), RLK_OK);
        CHECKF(rlk_rwlock_try_lock(a, RLK_RW_WRITE, 0, 0) == RLK_OK, "%s", rlk_errstr(c));
        CHECK_INT_EQ(rlk_rwlock_unlock(a, RLK_RW_WRITE), RLK_OK);
        rlk_rwlock_free(a);
        rlk_rwlock_free(b);
    }
    cl_name_on(&cl, "cl:fair:", master, n, sizeof n);
    {
        rlk_fairlock *a = rlk_fairlock_new(c, n);
        long long q = -1;

        REQUIRE(a);
        CHECKF(rlk_fairlock_try_lock(a, 0, 10000) == RLK_OK, "fair %s: %s", n, rlk_errstr(c));
        CHECK(rlk_fairlock_queue_length(a, &q) == RLK_OK && q == 0);
        CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_OK);
        rlk_fairlock_free(a);
    }
    cl_name_on(&cl, "cl:fenced:", master, n, sizeof n);
    {
        rlk_fenced *a = rlk_fenced_new(c, n);
        long long t1 = 0, t2 = 0;

        REQUIRE(a);
        CHECKF(rlk_fenced_try_lock(a, 0, 10000, &t1) == RLK_OK, "fenced %s: %s", n,
               rlk_errstr(c));
        CHECK_INT_EQ(rlk_fenced_unlock(a), RLK_OK);
        CHECK_INT_EQ(rlk_fenced_try_lock(a, 0, 10000, &t2), RLK_OK);
        CHECKF(t2 > t1, "tokens %lld then %lld", t1, t2);
        CHECK_INT_EQ(rlk_fenced_unlock(a), RLK_OK);
        rlk_fenced_free(a);
    }
    cl_name_on(&cl, "cl:sem:", master, n, sizeof n);
    {
        rlk_semaphore *s = rlk_semaphore_new(c, n);
        int set = 0;
        long long left = -1;

        REQUIRE(s);
        CHECKF(rlk_semaphore_try_set_permits(s, 2, &set) == RLK_OK, "sem %s: %s", n,
               rlk_errstr(c));
        CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 2, 0), RLK_OK);
        CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 0), RLK_ERR_BUSY);
        CHECK_INT_EQ(rlk_semaphore_release(s, 2, &left), RLK_OK);
        CHECK(rlk_semaphore_available(s, &left) == RLK_OK && left == 2);
        rlk_semaphore_free(s);
    }
    cl_name_on(&cl, "cl:psem:", master, n, sizeof n);
    {
        rlk_psemaphore *s = rlk_psemaphore_new(c, n);
        char id[RLK_PERMIT_ID_SIZE], id2[RLK_PERMIT_ID_SIZE];
        int set = 0;

        REQUIRE(s);
        CHECKF(rlk_psemaphore_try_set_permits(s, 1, &set) == RLK_OK, "psem %s: %s", n,
               rlk_errstr(c));
        CHECKF(rlk_psemaphore_try_acquire(s, 0, 10000, id) == RLK_OK, "%s", rlk_errstr(c));
        CHECK_INT_EQ(rlk_psemaphore_try_acquire(s, 0, 10000, id2), RLK_ERR_BUSY);
        CHECK_INT_EQ(rlk_psemaphore_release(s, id), RLK_OK);
        rlk_psemaphore_free(s);
    }
    cl_name_on(&cl, "cl:latch:", master, n, sizeof n);
    {
        rlk_latch *l = rlk_latch_new(c, n);
        int set = 0;

        REQUIRE(l);
        CHECKF(rlk_latch_try_set_count(l, 1, &set) == RLK_OK && set, "latch %s: %s", n,
               rlk_errstr(c));
        CHECK_INT_EQ(rlk_latch_await(l, 0), RLK_ERR_BUSY);
        CHECK_INT_EQ(rlk_latch_count_down(l, NULL), RLK_OK);
        CHECK_INT_EQ(rlk_latch_await(l, 0), RLK_OK);
        rlk_latch_free(l);
    }
    cl_name_on(&cl, "cl:fm:", master, n, sizeof n);
    {
        const char *ab[] = {"jack", "mary"}, *bc[] = {"mary", "tom"}, *cd[] = {"tom", "ann"};
        rlk_fastmulti *a = rlk_fastmulti_new(c, n, ab, 2), *b = rlk_fastmulti_new(c2, n, bc, 2);
        rlk_fastmulti *d = rlk_fastmulti_new(c2, n, cd, 2);
        int held = 0;

        REQUIRE(a && b && d);
        CHECKF(rlk_fastmulti_try_lock(a, 0, 0) == RLK_OK, "fastmulti %s: %s", n, rlk_errstr(c));
        CHECK_INT_EQ(rlk_fastmulti_try_lock(b, 0, 10000), RLK_ERR_BUSY);
        CHECK_INT_EQ(rlk_fastmulti_try_lock(d, 0, 10000), RLK_OK);
        CHECK(rlk_fastmulti_is_held_by_me(a, &held) == RLK_OK && held);
        CHECK_INT_EQ(rlk_fastmulti_unlock(a), RLK_OK);
        CHECK_INT_EQ(rlk_fastmulti_unlock(d), RLK_OK);
        CHECKF(rlk_fastmulti_try_lock(b, 1000, 10000) == RLK_OK, "fastmulti %s: %s", n,
               rlk_errstr(c2));
        CHECK_INT_EQ(rlk_fastmulti_unlock(b), RLK_OK);
        rlk_fastmulti_free(d);
        rlk_fastmulti_free(b);
        rlk_fastmulti_free(a);
    }
}

static void test_every_kind(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);

    REQUIRE(c && c2);
    for (int k = 0; k < 3; k++)
        kinds_on(c, c2, mst[k]);
    rlk_free(c);
    rlk_free(c2);
}

static void test_multilock_and_redlock(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_multilock *m = rlk_multilock_new();
    char n[3][64];

    REQUIRE(c && m);
    for (int k = 0; k < 3; k++) {
        cl_name_on(&cl, "cl:multi:", mst[k], n[k], sizeof n[k]);
        CHECK_INT_EQ(rlk_multilock_add(m, c, n[k]), RLK_OK);
    }
    CHECKF(rlk_multilock_try_lock(m, 0, 10000) == RLK_OK, "%s", rlk_multilock_errstr(m));
    for (int k = 0; k < 3; k++)
        CHECKF(cl_pttl(&cl, n[k]) > 0, "member %s not held on its master", n[k]);
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_OK);
    for (int k = 0; k < 3; k++)
        CHECK(cl_pttl(&cl, n[k]) == -2);
    rlk_multilock_free(m);
    {
        rlk_client *cs[1] = {c};

        CHECK(rlk_redlock_new(cs, 1, "cl:redlock", NULL) == NULL);
        CHECK_STR_CONTAINS(rlk_errstr(c), "not a Redis Cluster");
    }
    rlk_free(c);
}

/* ------------------------------------------------------------ watchdog */

#define WD_LOCKS 24

/* Lease-less locks on WD_LOCKS names in different slots (all masters),
 * one thread: kept through 5 leases, none reported lost. Control: locks
 * with a fixed lease of LEASE_MS in the same slots have expired. */
static void test_watchdog_many_slots(void)
{
    rlk_client *c = tk_connect(url, LEASE_MS, 4);
    rlk_lock *l[WD_LOCKS], *ctl[WD_LOCKS];
    char names[WD_LOCKS][64], cnames[WD_LOCKS][80];
    int slots_seen = 0, kept = 0, ctl_gone = 0, per_master[3] = {0, 0, 0};
    long long t0;

    REQUIRE(c);
    atomic_store(&lost_count, 0);
    rlk_set_lost_callback(c, on_lost, NULL);
    for (int i = 0; i < WD_LOCKS; i++) {
        snprintf(names[i], sizeof names[i], "cl:wd:%d", i);
        snprintf(cnames[i], sizeof cnames[i], "ctl{%s}", names[i]);    /* same slot */
        l[i] = rlk_lock_new(c, names[i]);
        ctl[i] = rlk_lock_new(c, cnames[i]);
        REQUIRE(l[i] && ctl[i]);
        REQUIRE(rlk_lock_try_lock(l[i], 0, 0) == RLK_OK);
        REQUIRE(rlk_lock_try_lock(ctl[i], 0, LEASE_MS) == RLK_OK);
        for (int k = 0; k < 3; k++)
            per_master[k] += rlk_fx_cluster_key_owner(&cl, names[i]) == mst[k];
        slots_seen++;
    }
    CHECKF(per_master[0] && per_master[1] && per_master[2], "locks per master %d/%d/%d",
           per_master[0], per_master[1], per_master[2]);
    t0 = rlk_fx_now_ms();
    cl_pause_ms(5 * LEASE_MS + 200);    /* the time under test */
    for (int i = 0; i < WD_LOCKS; i++) {
        int held = 0;

        kept += cl_pttl(&cl, names[i]) > 0 && rlk_lock_is_held_by_me(l[i], &held) == RLK_OK && held;
        ctl_gone += cl_pttl(&cl, cnames[i]) == -2;
    }
    tk_say("watchdog: %d of %d lease-less locks in %d slots kept through %lld ms (5 leases); "
           "control: %d of %d leased locks expired; lost reports %d", kept, WD_LOCKS, slots_seen,
           rlk_fx_now_ms() - t0, ctl_gone, WD_LOCKS, atomic_load(&lost_count));
    CHECK_INT_EQ(kept, WD_LOCKS);
    CHECK_INT_EQ(ctl_gone, WD_LOCKS);
    CHECK_INT_EQ(atomic_load(&lost_count), 0);
    for (int i = 0; i < WD_LOCKS; i++) {
        CHECK_INT_EQ(rlk_lock_unlock(l[i]), RLK_OK);
        rlk_lock_free(l[i]);
        rlk_lock_free(ctl[i]);
    }
    rlk_free(c);
}

/* ------------------------------------------------------------ waiters */

typedef struct waiter {
    rlk_client *c;
    const char *name;
    long long wait_ms;
    int rc;
    long long got_ms;       /* monotonic ms when acquired */
    tk_latch started;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    rlk_lock *l = rlk_lock_new(w->c, w->name);

    tk_latch_add(&w->started, 1);
    w->rc = l ? rlk_lock_try_lock(l, w->wait_ms, 10000) : -1;
    w->got_ms = rlk_fx_now_ms();
    if (w->rc == RLK_OK)
        rlk_lock_unlock(l);
    rlk_lock_free(l);
    return NULL;
}

/* A waiter (its own client, subscribed on whatever node) woken by a release
 * on each master in turn: latency from the unlock's return to the
 * acquisition, in ms. */
static void test_cross_shard_wake(void)
{
    rlk_client *h = tk_connect(url, 0, 2), *wc = tk_connect(url, 0, 2);
    long long lat[12], worst = 0, sum = 0;
    int rounds = 0;

    REQUIRE(h && wc);
    for (int k = 0; k < 12; k++) {
        char n[64];
        rlk_lock *l;
        waiter w = {.c = wc, .name = n, .wait_ms = 20000, .rc = -1};
        pthread_t t;
        long long released;

        cl_name_on(&cl, "cl:wake:", mst[k % 3], n, sizeof n);
        l = rlk_lock_new(h, n);
        REQUIRE(l);
        REQUIRE(rlk_lock_try_lock(l, 0, 30000) == RLK_OK);
        tk_latch_init(&w.started);
        pthread_create(&t, NULL, waiter_main, &w);
        CHECKF(cl_wait_subscribed(&cl, n, 10000) == 0, "waiter never subscribed to %s", n);
        CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
        released = rlk_fx_now_ms();
        pthread_join(t, NULL);
        tk_latch_destroy(&w.started);
        CHECKF(w.rc == RLK_OK, "waiter on %s: rc %d", n, w.rc);
        lat[rounds++] = w.got_ms - released;
        rlk_lock_free(l);
    }
    for (int i = 0; i < rounds; i++) {
        sum += lat[i];
        worst = lat[i] > worst ? lat[i] : worst;
    }
    tk_say("cross-shard wake (PUBLISH): %d rounds over 3 masters, mean %.1f ms, max %lld ms "
           "(lease 30000 ms: a missed wake would show as seconds)", rounds,
           rounds ? (double)sum / rounds : 0.0, worst);
    CHECKF(worst < 2000, "a waiter slept %lld ms after the release", worst);
    rlk_free(h);
    rlk_free(wc);
}

int main(void)
{
    int n;

    if (cl_start("cl_kinds", &cl, 0, 4, url, sizeof url) != 0)
        return 1;
    n = cl_masters(&cl, mst);
    if (n == 3) {
        RUN_TEST(test_every_kind);
        RUN_TEST(test_multilock_and_redlock);
        RUN_TEST(test_watchdog_many_slots);
        RUN_TEST(test_cross_shard_wake);
    } else {
        fprintf(stderr, "cl_kinds: %d masters, expected 3\n", n);
    }
    rlk_fx_cluster_stop(&cl);
    return n == 3 ? check_summary("cl_kinds") : 1;
}
