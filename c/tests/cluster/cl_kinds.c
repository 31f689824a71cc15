/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_kinds.c - every lock kind on a Redis Cluster (issue 8, parts 4 and 6):
 * each kind on names owned by each of the three masters; MultiLock with a
 * member on every master; RedLock refused; lease-less locks in many slots
 * kept by the watchdog through 5 leases (control: leased locks in the same
 * slots expire); a waiter on one shard woken by a release on another, with
 * its latency measured. One cluster for the whole program.
 */
#include "check.h"
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

static long long now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void name_on(const char *prefix, int master, char *buf, size_t len)
{
    for (int n = 0; n < 10000; n++) {
        snprintf(buf, len, "%s%d", prefix, n);
        if (rlk_fx_cluster_key_owner(&cl, buf) == master)
            return;
    }
    buf[0] = '\0';
}

static atomic_int lost_count;

static void on_lost(const char *name, const char *owner, int reason, void *ud)
{
    (void)ud;
    tk_say("lost: %s (%s) reason %d", name, owner, reason);
    atomic_fetch_add(&lost_count, 1);
}

/* PTTL of key on the master owning it now; -3 when it cannot be asked. */
static long long pttl(const char *key)
{
    int owner = rlk_fx_cluster_key_owner(&cl, key);
    redisReply *r = rlk_fx_cluster_command(&cl, owner, "PTTL %s", key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;

    if (r)
        freeReplyObject(r);
    return v;
}

/* ------------------------------------------------------------ every kind */

static void kinds_on(rlk_client *c, rlk_client *c2, int master)
{
    char n[64];

    name_on("cl:lock:", master, n, sizeof n);
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
    name_on("cl:rw:", master, n, sizeof n);
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
    name_on("cl:fair:", master, n, sizeof n);
    {
        rlk_fairlock *a = rlk_fairlock_new(c, n);
        long long q = -1;

        REQUIRE(a);
        CHECKF(rlk_fairlock_try_lock(a, 0, 10000) == RLK_OK, "fair %s: %s", n, rlk_errstr(c));
        CHECK(rlk_fairlock_queue_length(a, &q) == RLK_OK && q == 0);
        CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_OK);
        rlk_fairlock_free(a);
    }
    name_on("cl:fenced:", master, n, sizeof n);
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
    name_on("cl:sem:", master, n, sizeof n);
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
    name_on("cl:psem:", master, n, sizeof n);
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
    name_on("cl:latch:", master, n, sizeof n);
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
        name_on("cl:multi:", mst[k], n[k], sizeof n[k]);
        CHECK_INT_EQ(rlk_multilock_add(m, c, n[k]), RLK_OK);
    }
    CHECKF(rlk_multilock_try_lock(m, 0, 10000) == RLK_OK, "%s", rlk_multilock_errstr(m));
    for (int k = 0; k < 3; k++)
        CHECKF(pttl(n[k]) > 0, "member %s not held on its master", n[k]);
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_OK);
    for (int k = 0; k < 3; k++)
        CHECK(pttl(n[k]) == -2);
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
    t0 = now_ms();
    while (now_ms() - t0 < 5 * LEASE_MS + 200)
        nanosleep(&(struct timespec){0, 100000000L}, NULL);     /* the time under test */
    for (int i = 0; i < WD_LOCKS; i++) {
        int held = 0;

        kept += pttl(names[i]) > 0 && rlk_lock_is_held_by_me(l[i], &held) == RLK_OK && held;
        ctl_gone += pttl(cnames[i]) == -2;
    }
    tk_say("watchdog: %d of %d lease-less locks in %d slots kept through %lld ms (5 leases); "
           "control: %d of %d leased locks expired; lost reports %d", kept, WD_LOCKS, slots_seen,
           now_ms() - t0, ctl_gone, WD_LOCKS, atomic_load(&lost_count));
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
    w->got_ms = now_ms();
    if (w->rc == RLK_OK)
        rlk_lock_unlock(l);
    rlk_lock_free(l);
    return NULL;
}

/* Bounded poll until the lock's channel has a subscriber on some node
 * (PUBSUB NUMSUB of every node added). */
static int wait_subscribed(const char *name, long long timeout_ms)
{
    char ch[128];
    long long t0 = now_ms();

    snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
    while (now_ms() - t0 < timeout_ms) {
        long long subs = 0;

        for (int i = 0; i < cl.n; i++) {
            redisReply *r = rlk_fx_cluster_command(&cl, i, "PUBSUB NUMSUB %s", ch);

            if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
                subs += r->element[1]->integer;
            if (r)
                freeReplyObject(r);
        }
        if (subs > 0)
            return 0;
        nanosleep(&(struct timespec){0, 5000000L}, NULL);
    }
    return -1;
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

        name_on("cl:wake:", mst[k % 3], n, sizeof n);
        l = rlk_lock_new(h, n);
        REQUIRE(l);
        REQUIRE(rlk_lock_try_lock(l, 0, 30000) == RLK_OK);
        tk_latch_init(&w.started);
        pthread_create(&t, NULL, waiter_main, &w);
        CHECKF(wait_subscribed(n, 10000) == 0, "waiter never subscribed to %s", n);
        CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
        released = now_ms();
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
    char u1[128], u2[128];
    int n = 0;

    if (rlk_fx_cluster_start(&cl) != 0) {
        fprintf(stderr, "cl_kinds: the cluster did not start\n");
        return 1;
    }
    tk_say("cluster started in %lld ms", cl.start_ms);
    for (int i = 0; i < cl.n && n < 3; i++)
        if (rlk_fx_cluster_role(&cl, i) == 'M')
            mst[n++] = i;
    rlk_fx_cluster_url(&cl, 0, u1, sizeof u1);
    rlk_fx_cluster_url(&cl, 4, u2, sizeof u2);
    snprintf(url, sizeof url, "redis+cluster://%s,%s", u1 + 8, u2 + 8);
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
