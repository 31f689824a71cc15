/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_kinds.c - every lock kind on a Redis Cluster:
 * each kind (the faster MultiLock too) on names owned by each of the three masters; MultiLock with a
 * member on every master; RedLock refused; lease-less locks in many slots
 * kept by the watchdog through 5 leases (control: leased locks in the same
 * slots expire); a waiter on one shard woken by a release on another, with
 * its latency measured; the newer kinds on names owned by each master
 * (test_newer_kinds: the non-reentrant lock and fair lock, the spin lock,
 * the lock-delay, leader election, the semaphores' and the latch's newer
 * calls), each with its keys read back on the master that owns the name's
 * slot. One cluster for the whole program.
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

#define W_LOCK 0        /* rlk_lock, woken through pub/sub */
#define W_NR 1          /* rlk_nrlock, woken through pub/sub */
#define W_SPIN 2        /* rlk_lock with rlk_lock_set_spin: no pub/sub */

typedef struct waiter {
    rlk_client *c;
    const char *name;
    int variant;            /* W_LOCK, W_NR or W_SPIN */
    long long wait_ms;
    atomic_int rc;          /* -1 until it returns */
    long long got_ms;       /* monotonic ms when acquired */
    tk_latch started;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    int rc;

    tk_latch_add(&w->started, 1);
    if (w->variant == W_NR) {
        rlk_nrlock *l = rlk_nrlock_new(w->c, w->name);

        rc = l ? rlk_nrlock_try_lock(l, w->wait_ms, 10000) : -1;
        w->got_ms = rlk_fx_now_ms();
        if (rc == RLK_OK)
            rlk_nrlock_unlock(l);
        rlk_nrlock_free(l);
    } else {
        rlk_lock *l = rlk_lock_new(w->c, w->name);

        if (l && w->variant == W_SPIN && rlk_lock_set_spin(l, 2, 50) != RLK_OK)
            rc = -2;
        else
            rc = l ? rlk_lock_try_lock(l, w->wait_ms, 10000) : -1;
        w->got_ms = rlk_fx_now_ms();
        if (rc == RLK_OK)
            rlk_lock_unlock(l);
        rlk_lock_free(l);
    }
    atomic_store(&w->rc, rc);
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

/* ------------------------------------------------------------ the newer kinds */

#define DL_LEASE_MS 500LL       /* the lock-delay case's lease */
#define DL_DELAY_MS 2500LL      /* and its delay: room for a loaded machine's checks inside it */

/* A command about key sent to node `master` itself (no redirection
 * followed): its integer, or -99 (a MOVED reply when master does not own
 * key's slot, or any other reply). */
static long long int_on(int master, const char *fmt, const char *key)
{
    redisReply *r = rlk_fx_cluster_command(&cl, master, fmt, key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -99;

    if (r)
        freeReplyObject(r);
    return v;
}

/* key exists on master, which owns its slot. */
#define CHECK_ON(master, key)                                                                    \
    CHECKF(int_on((master), "EXISTS %s", (key)) == 1, "%s not on master %d (owner %d)", (key),  \
           (master), rlk_fx_cluster_key_owner(&cl, (key)))

/* Starts a waiter thread of the variant on name; returns once it runs. */
static void waiter_start(waiter *w, pthread_t *t, rlk_client *c, const char *name, int variant)
{
    *w = (waiter){.c = c, .name = name, .variant = variant, .wait_ms = 20000, .rc = -1};
    tk_latch_init(&w->started);
    pthread_create(t, NULL, waiter_main, w);
    tk_latch_wait(&w->started, 1, 10000);
}

/* The non-reentrant lock: re-entry refused at once (not counted), another
 * client busy, released, taken by the other, and a waiter (pub/sub on the
 * name's shard) woken by a release. The non-reentrant fair lock likewise
 * (re-entry refused, another busy, served after the release). */
static void nonreentrant_on(rlk_client *c, rlk_client *c2, int master)
{
    char n[64];

    cl_name_on(&cl, "cl:nr:", master, n, sizeof n);
    {
        rlk_nrlock *a = rlk_nrlock_new(c, n), *b = rlk_nrlock_new(c2, n);
        waiter w;
        pthread_t t;
        long long t0, released;

        REQUIRE(a && b);
        CHECKF(rlk_nrlock_try_lock(a, 0, 30000) == RLK_OK, "nrlock %s: %s", n, rlk_errstr(c));
        CHECK_ON(master, n);
        t0 = rlk_fx_now_ms();
        CHECK_INT_EQ(rlk_nrlock_try_lock(a, 5000, 30000), RLK_ERR_REENTRY);
        CHECKF(rlk_fx_now_ms() - t0 < 2000, "re-entry refused after %lld ms (a wait of 5000)",
               rlk_fx_now_ms() - t0);
        CHECK_INT_EQ(int_on(master, "HLEN %s", n), 1);
        {
            char owner[160];
            redisReply *r;

            REQUIRE(rlk_nrlock_owner(a, owner, sizeof owner) == RLK_OK);
            r = rlk_fx_cluster_command(&cl, master, "HGET %s %s", n, owner);
            CHECKF(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0,
                   "the holder's count after a refused re-entry: %s",
                   r && r->type == REDIS_REPLY_STRING ? r->str : "(not a string)");
            if (r)
                freeReplyObject(r);
        }
        CHECK_INT_EQ(rlk_nrlock_try_lock(b, 0, 30000), RLK_ERR_BUSY);
        CHECK_INT_EQ(rlk_nrlock_unlock(a), RLK_OK);
        CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
        CHECKF(rlk_nrlock_try_lock(b, 0, 30000) == RLK_OK, "%s", rlk_errstr(c2));
        CHECK_INT_EQ(rlk_nrlock_try_lock(a, 0, 30000), RLK_ERR_BUSY);
        CHECK_INT_EQ(rlk_nrlock_unlock(b), RLK_OK);
        /* A waiter woken by the release. */
        REQUIRE(rlk_nrlock_try_lock(a, 0, 30000) == RLK_OK);
        waiter_start(&w, &t, c2, n, W_NR);
        CHECKF(cl_wait_subscribed(&cl, n, 10000) == 0, "nr waiter never subscribed to %s", n);
        CHECK_INT_EQ(rlk_nrlock_unlock(a), RLK_OK);
        released = rlk_fx_now_ms();
        pthread_join(t, NULL);
        tk_latch_destroy(&w.started);
        CHECKF(w.rc == RLK_OK, "nr waiter on %s: rc %d", n, w.rc);
        CHECKF(w.got_ms - released < 2000, "nr waiter on %s served %lld ms after the release "
               "(lease 30000)", n, w.got_ms - released);
        CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
        rlk_nrlock_free(a);
        rlk_nrlock_free(b);
    }
    cl_name_on(&cl, "cl:nrfair:", master, n, sizeof n);
    {
        rlk_fairlock *a = rlk_fairlock_new(c, n), *b = rlk_fairlock_new(c2, n);
        long long t0;

        REQUIRE(a && b);
        REQUIRE(rlk_fairlock_set_non_reentrant(a, 1) == RLK_OK);
        REQUIRE(rlk_fairlock_set_non_reentrant(b, 1) == RLK_OK);
        CHECKF(rlk_fairlock_try_lock(a, 0, 30000) == RLK_OK, "nr fair %s: %s", n, rlk_errstr(c));
        CHECK_ON(master, n);
        t0 = rlk_fx_now_ms();
        CHECK_INT_EQ(rlk_fairlock_try_lock(a, 5000, 30000), RLK_ERR_REENTRY);
        CHECKF(rlk_fx_now_ms() - t0 < 2000, "re-entry refused after %lld ms (a wait of 5000)",
               rlk_fx_now_ms() - t0);
        CHECK_INT_EQ(rlk_fairlock_try_lock(b, 0, 30000), RLK_ERR_BUSY);
        CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_OK);
        CHECKF(rlk_fairlock_try_lock(b, 0, 30000) == RLK_OK, "%s", rlk_errstr(c2));
        CHECK_ON(master, n);
        CHECK_INT_EQ(rlk_fairlock_unlock(b), RLK_OK);
        CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
        rlk_fairlock_free(a);
        rlk_fairlock_free(b);
    }
}

/* The spin lock: a waiter with no pub/sub at all (no subscriber on any node
 * while it waits) gets the lock after the release, within its back-off. */
static void spin_on(rlk_client *c, rlk_client *c2, int master)
{
    char n[64];
    rlk_lock *a;
    waiter w;
    pthread_t t;
    long long released;

    cl_name_on(&cl, "cl:spin:", master, n, sizeof n);
    a = rlk_lock_new(c, n);
    REQUIRE(a);
    REQUIRE(rlk_lock_set_spin(a, 2, 50) == RLK_OK);
    CHECKF(rlk_lock_try_lock(a, 0, 30000) == RLK_OK, "spin %s: %s", n, rlk_errstr(c));
    CHECK_ON(master, n);
    waiter_start(&w, &t, c2, n, W_SPIN);
    cl_pause_ms(300);       /* the time under test: it waits, polling */
    CHECKF(!cl_subscribed(&cl, n), "a spin waiter on %s subscribed", n);
    CHECKF(w.rc == -1, "the spin waiter on %s returned %d while the lock was held", n, w.rc);
    CHECK_INT_EQ(rlk_lock_unlock(a), RLK_OK);
    released = rlk_fx_now_ms();
    pthread_join(t, NULL);
    tk_latch_destroy(&w.started);
    CHECKF(w.rc == RLK_OK, "spin waiter on %s: rc %d", n, w.rc);
    CHECKF(w.got_ms - released < 1000, "spin waiter on %s served %lld ms after the release "
           "(back-off at most 50 ms, lease 30000)", n, w.got_ms - released);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
    rlk_lock_free(a);
}

/* The lock-delay: a holder whose lease ran out (not released) keeps the
 * name closed to a handle with the delay until the delay after its lease
 * ended (the delay key on the name's master meanwhile); a released one
 * does not (the key deleted with the lock), nor a force-unlocked one. */
static void delay_on(rlk_client *c, rlk_client *c2, int master)
{
    char n[64], dk[96];
    rlk_lock *a, *b;
    long long t0, t1, lease_end = -1;

    cl_name_on(&cl, "cl:delay:", master, n, sizeof n);
    snprintf(dk, sizeof dk, "{%s}:rlk_delay", n);
    a = rlk_lock_new(c, n);
    b = rlk_lock_new(c2, n);
    REQUIRE(a && b);
    REQUIRE(rlk_lock_set_delay(a, DL_DELAY_MS) == RLK_OK);
    REQUIRE(rlk_lock_set_delay(b, DL_DELAY_MS) == RLK_OK);
    /* Released: no delay. */
    CHECKF(rlk_lock_try_lock(a, 0, 30000) == RLK_OK, "delay %s: %s", n, rlk_errstr(c));
    CHECK_ON(master, n);
    CHECK_ON(master, dk);
    CHECK_INT_EQ(rlk_lock_unlock(a), RLK_OK);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", dk), 0);
    CHECKF(rlk_lock_try_lock(b, 0, 30000) == RLK_OK, "after a release: %s", rlk_errstr(c2));
    CHECK_INT_EQ(rlk_lock_unlock(b), RLK_OK);
    /* Lost (the lease ran out): closed for the delay. */
    t0 = rlk_fx_now_ms();
    REQUIRE(rlk_lock_try_lock(a, 0, DL_LEASE_MS) == RLK_OK);
    CHECK_ON(master, dk);
    for (long long end = t0 + DL_LEASE_MS + 5000; rlk_fx_now_ms() < end;) {
        if (int_on(master, "EXISTS %s", n) == 0) {
            lease_end = rlk_fx_now_ms();
            break;
        }
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    }
    REQUIREF(lease_end > 0, "the lease of %s never ran out", n);
    CHECK_INT_EQ(rlk_lock_try_lock(b, 0, 30000), RLK_ERR_BUSY);
    t1 = rlk_fx_now_ms();
    CHECKF(t1 - lease_end < DL_DELAY_MS - 500, "the refusal came %lld ms after the lease ended "
           "(a stall: the check needs it inside the delay)", t1 - lease_end);
    CHECK_ON(master, dk);
    CHECKF(rlk_lock_try_lock(b, 10000, 30000) == RLK_OK, "after the delay: %s", rlk_errstr(c2));
    t1 = rlk_fx_now_ms();
    CHECKF(t1 - t0 >= DL_LEASE_MS + DL_DELAY_MS - 100, "taken %lld ms after the lost holder's "
           "acquire (lease %lld + delay %lld)", t1 - t0, DL_LEASE_MS, DL_DELAY_MS);
    CHECK_INT_EQ(rlk_lock_unlock(b), RLK_OK);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", dk), 0);
    /* A force-unlock through a handle with the delay ends it too (lock and delay key in
     * one call on the master). */
    {
        int released = 0;

        REQUIRE(rlk_lock_try_lock(a, 0, 30000) == RLK_OK);
        CHECK_ON(master, dk);
        CHECK(rlk_lock_force_unlock(b, &released) == RLK_OK && released == 1);
        CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
        CHECK_INT_EQ(int_on(master, "EXISTS %s", dk), 0);
        CHECKF(rlk_lock_try_lock(b, 0, 30000) == RLK_OK, "after a force-unlock: %s",
               rlk_errstr(c2));
        CHECK_INT_EQ(rlk_lock_unlock(b), RLK_OK);
    }
    rlk_lock_free(a);
    rlk_lock_free(b);
}

typedef struct change_waiter {
    rlk_elect *e;
    rlk_elect_info known, out;
    int rc;
    long long got_ms;
} change_waiter;

static void *change_main(void *arg)
{
    change_waiter *w = arg;

    w->rc = rlk_elect_wait_change(w->e, &w->known, 10000, &w->out);
    w->got_ms = rlk_fx_now_ms();
    return NULL;
}

/* Leader election: a campaign, its term, another candidate turned away, an
 * observer's read (leader, term, holder, value), a proclaim, a resign, and
 * the second candidate elected with a higher term; the lock, the record
 * and the token counter on the name's master. */
static void elect_on(rlk_client *c, rlk_client *c2, int master)
{
    char n[64], rec[96], tok[96], owner[160], owner2[160];
    rlk_elect *e1, *e2;
    rlk_elect_info in = {0};
    long long t1 = 0, t2 = 0, term = 0;

    cl_name_on(&cl, "cl:elect:", master, n, sizeof n);
    e1 = rlk_elect_new(c, n);
    e2 = rlk_elect_new(c2, n);
    REQUIRE(e1 && e2);
    snprintf(rec, sizeof rec, "%s", rlk_elect_state_name(e1));
    snprintf(tok, sizeof tok, "redisson_lock_token:{%s}", n);
    REQUIRE(rlk_elect_owner(e1, owner, sizeof owner) == RLK_OK);
    REQUIRE(rlk_elect_owner(e2, owner2, sizeof owner2) == RLK_OK);
    CHECKF(rlk_elect_campaign(e1, "host-a", 0, 30000, &t1) == RLK_OK, "campaign %s: %s", n,
           rlk_errstr(c));
    CHECKF(t1 > 0, "term %lld", t1);
    CHECK(rlk_elect_term(e1, &term) == RLK_OK && term == t1);
    CHECK_INT_EQ(rlk_elect_term(e2, &term), RLK_ERR_NOT_OWNER);
    CHECK_ON(master, n);
    CHECK_ON(master, rec);
    CHECK_ON(master, tok);
    CHECK_INT_EQ(rlk_elect_campaign(e2, "host-b", 0, 30000, NULL), RLK_ERR_BUSY);
    REQUIRE(rlk_elect_leader(e2, &in) == RLK_OK);
    CHECK_INT_EQ(in.leader, 1);
    CHECK_INT_EQ(in.term, t1);
    CHECK_STR_EQ(in.holder, owner);
    CHECK_STR_EQ(in.value, "host-a");
    CHECKF(in.ttl_ms > 0 && in.ttl_ms <= 30000, "leader's ttl %lld", in.ttl_ms);
    rlk_elect_info_clear(&in);
    {
        /* An observer (e2) waiting for a change, subscribed on the name's master, woken by
         * the proclaim. */
        change_waiter w = {.e = e2, .rc = -1};
        pthread_t t;
        char ch[128];
        long long said, t0 = rlk_fx_now_ms();

        snprintf(ch, sizeof ch, "%s", rlk_elect_channel(e2));
        REQUIRE(rlk_elect_leader(e2, &w.known) == RLK_OK);
        pthread_create(&t, NULL, change_main, &w);
        while (cl_shard_subscribed_on(&cl, ch) != master && rlk_fx_now_ms() - t0 < 10000)
            nanosleep(&(struct timespec){0, 5000000L}, NULL);
        CHECKF(cl_shard_subscribed_on(&cl, ch) == master, "the observer of %s subscribed on "
               "node %d, not its master %d", ch, cl_shard_subscribed_on(&cl, ch), master);
        CHECK_INT_EQ(rlk_elect_proclaim(e1, "host-a2"), RLK_OK);
        said = rlk_fx_now_ms();
        pthread_join(t, NULL);
        CHECKF(w.rc == RLK_OK, "wait_change on %s: %d", n, w.rc);
        if (w.rc == RLK_OK) {
            CHECK_STR_EQ(w.out.value, "host-a2");
            CHECK_INT_EQ(w.out.term, t1);
            CHECKF(w.got_ms - said < 2000, "the observer woke %lld ms after the proclaim",
                   w.got_ms - said);
            rlk_elect_info_clear(&w.out);
        }
        rlk_elect_info_clear(&w.known);
    }
    CHECK_INT_EQ(rlk_elect_proclaim(e2, "host-b"), RLK_ERR_NOT_OWNER);
    REQUIRE(rlk_elect_leader(e2, &in) == RLK_OK);
    CHECK_STR_EQ(in.value, "host-a2");
    CHECK_INT_EQ(in.term, t1);
    rlk_elect_info_clear(&in);
    CHECK_INT_EQ(rlk_elect_resign(e1), RLK_OK);
    CHECK_INT_EQ(rlk_elect_term(e1, &term), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
    REQUIRE(rlk_elect_leader(e2, &in) == RLK_OK);
    CHECK_INT_EQ(in.leader, 0);
    CHECK_INT_EQ(in.term, t1);
    rlk_elect_info_clear(&in);
    CHECKF(rlk_elect_campaign(e2, "host-b", 0, 30000, &t2) == RLK_OK, "campaign 2 %s: %s", n,
           rlk_errstr(c2));
    CHECKF(t2 > t1, "terms %lld then %lld", t1, t2);
    REQUIRE(rlk_elect_leader(e1, &in) == RLK_OK);
    CHECK_INT_EQ(in.leader, 1);
    CHECK_INT_EQ(in.term, t2);
    CHECK_STR_EQ(in.holder, owner2);
    CHECK_STR_EQ(in.value, "host-b");
    rlk_elect_info_clear(&in);
    CHECK_ON(master, n);
    CHECK_INT_EQ(rlk_elect_resign(e2), RLK_OK);
    rlk_elect_free(e1);
    rlk_elect_free(e2);
}

/* ttl_ms from a ttl call: 0 < ttl <= max. */
#define CHECK_TTL(call, max)                                                                     \
    do {                                                                                         \
        long long ttl_ = -9;                                                                     \
        CHECKF((call) == RLK_OK && ttl_ > 0 && ttl_ <= (max), "%s: ttl %lld", #call, ttl_);      \
    } while (0)

/* The semaphores' newer calls and expire / clear_expire / ttl on a
 * semaphore, a permit-expirable semaphore and a latch, each key read back
 * on the name's master. */
static void sem_admin_on(rlk_client *c, int master)
{
    char n[64];

    cl_name_on(&cl, "cl:sema:", master, n, sizeof n);
    {
        rlk_semaphore *s = rlk_semaphore_new(c, n);
        int done = -1;
        long long v = -9;

        REQUIRE(s);
        CHECKF(rlk_semaphore_release_if_exists(s, 1, &done) == RLK_OK && done == 0,
               "release_if_exists %s without a key: %d %s", n, done, rlk_errstr(c));
        CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
        CHECK(rlk_semaphore_try_set_permits_ttl(s, 2, 60000, &done) == RLK_OK && done == 1);
        CHECK_ON(master, n);
        v = int_on(master, "PTTL %s", n);
        CHECKF(v > 0 && v <= 60000, "PTTL %s on its master: %lld", n, v);
        CHECK(rlk_semaphore_try_set_permits_ttl(s, 5, 60000, &done) == RLK_OK && done == 0);
        CHECK_TTL(rlk_semaphore_ttl(s, &ttl_), 60000);
        CHECK(rlk_semaphore_release_if_exists(s, 1, &done) == RLK_OK && done == 1);
        CHECK(rlk_semaphore_available(s, &v) == RLK_OK && v == 3);
        CHECK(rlk_semaphore_expire(s, 30000, &done) == RLK_OK && done == 1);
        CHECK_TTL(rlk_semaphore_ttl(s, &ttl_), 30000);
        CHECK(rlk_semaphore_clear_expire(s, &done) == RLK_OK && done == 1);
        CHECK(rlk_semaphore_ttl(s, &v) == RLK_OK && v == -1);
        CHECK_INT_EQ(int_on(master, "PTTL %s", n), -1);
        rlk_semaphore_free(s);
    }
    cl_name_on(&cl, "cl:psema:", master, n, sizeof n);
    {
        rlk_psemaphore *s = rlk_psemaphore_new(c, n);
        char id[RLK_PERMIT_ID_SIZE];
        int done = -1;
        long long v = -9;

        REQUIRE(s);
        CHECK(rlk_psemaphore_try_set_permits(s, 2, &done) == RLK_OK && done == 1);
        CHECKF(rlk_psemaphore_try_acquire(s, 0, 20000, id) == RLK_OK, "psem %s: %s", n,
               rlk_errstr(c));
        CHECK_ON(master, n);
        CHECK_ON(master, rlk_psemaphore_timeouts_key(s));
        CHECK_TTL(rlk_psemaphore_lease_time(s, id, &ttl_), 20000);
        CHECK(rlk_psemaphore_acquired(s, &v) == RLK_OK && v == 1);
        CHECK(rlk_psemaphore_set_permits(s, 3, &v) == RLK_OK && v == 2);
        CHECK(rlk_psemaphore_available(s, &v) == RLK_OK && v == 2);
        CHECK(rlk_psemaphore_expire(s, 30000, &done) == RLK_OK && done == 1);
        CHECK_TTL(rlk_psemaphore_ttl(s, &ttl_), 30000);
        v = int_on(master, "PTTL %s", rlk_psemaphore_timeouts_key(s));
        CHECKF(v > 0 && v <= 30000, "PTTL %s: %lld", rlk_psemaphore_timeouts_key(s), v);
        CHECK(rlk_psemaphore_clear_expire(s, &done) == RLK_OK && done == 1);
        CHECK(rlk_psemaphore_ttl(s, &v) == RLK_OK && v == -1);
        CHECK_INT_EQ(int_on(master, "PTTL %s", rlk_psemaphore_timeouts_key(s)), -1);
        CHECK(rlk_psemaphore_try_release(s, id, &done) == RLK_OK && done == 1);
        CHECK(rlk_psemaphore_try_release(s, id, &done) == RLK_OK && done == 0);
        CHECK_INT_EQ(rlk_psemaphore_lease_time(s, id, &v), RLK_ERR_NOT_OWNER);
        CHECK(rlk_psemaphore_acquired(s, &v) == RLK_OK && v == 0);
        CHECK(rlk_psemaphore_available(s, &v) == RLK_OK && v == 3);
        rlk_psemaphore_free(s);
    }
    cl_name_on(&cl, "cl:latcha:", master, n, sizeof n);
    {
        rlk_latch *l = rlk_latch_new(c, n);
        int done = -1;
        long long v = -9;

        REQUIRE(l);
        CHECK(rlk_latch_expire(l, 30000, &done) == RLK_OK && done == 0);   /* open: no key */
        CHECK(rlk_latch_ttl(l, &v) == RLK_OK && v == -2);
        CHECK(rlk_latch_try_set_count(l, 1, &done) == RLK_OK && done == 1);
        CHECK_ON(master, n);
        CHECK(rlk_latch_expire(l, 30000, &done) == RLK_OK && done == 1);
        CHECK_TTL(rlk_latch_ttl(l, &ttl_), 30000);
        v = int_on(master, "PTTL %s", n);
        CHECKF(v > 0 && v <= 30000, "PTTL %s on its master: %lld", n, v);
        CHECK(rlk_latch_clear_expire(l, &done) == RLK_OK && done == 1);
        CHECK(rlk_latch_ttl(l, &v) == RLK_OK && v == -1);
        CHECK_INT_EQ(rlk_latch_count_down(l, NULL), RLK_OK);
        CHECK_INT_EQ(rlk_latch_await(l, 0), RLK_OK);
        CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
        rlk_latch_free(l);
    }
}

#define WD_DELAY_MS 10000LL     /* the watchdog case's lock-delay: its key's PX is lease + this */

/* Lease-less holds of the newer kinds on names of each master, one client
 * whose watchdog lease is LEASE_MS: a lock with the lock-delay (its delay
 * key renewed with it, in the same per-slot batch), a non-reentrant lock, a
 * non-reentrant fair lock, a spin lock and a leader, kept through 3 leases
 * with no lost report; each delay key's PTTL still above the delay (not
 * renewed, it would be under lease + delay - 3 leases). Control: a leased
 * lock (LEASE_MS) in each name's slot has expired meanwhile. */
static void test_newer_watchdog(void)
{
    rlk_client *c = tk_connect(url, LEASE_MS, 4), *other = tk_connect(url, 0, 2);
    rlk_lock *dl[3], *sp[3], *ctl[3];
    rlk_nrlock *nr[3];
    rlk_fairlock *fr[3];
    rlk_elect *el[3];
    char dn[3][64], dk[3][96], spn[3][64], nrn[3][64], frn[3][64], eln[3][64], ctn[3][96];
    long long t0, terms[3];

    REQUIRE(c && other);
    atomic_store(&lost_count, 0);
    rlk_set_lost_callback(c, on_lost, NULL);
    for (int k = 0; k < 3; k++) {
        cl_name_on(&cl, "cl:wdd:", mst[k], dn[k], sizeof dn[k]);
        cl_name_on(&cl, "cl:wds:", mst[k], spn[k], sizeof spn[k]);
        cl_name_on(&cl, "cl:wdn:", mst[k], nrn[k], sizeof nrn[k]);
        cl_name_on(&cl, "cl:wdf:", mst[k], frn[k], sizeof frn[k]);
        cl_name_on(&cl, "cl:wde:", mst[k], eln[k], sizeof eln[k]);
        snprintf(dk[k], sizeof dk[k], "{%s}:rlk_delay", dn[k]);
        snprintf(ctn[k], sizeof ctn[k], "ctl{%s}", dn[k]);
        dl[k] = rlk_lock_new(c, dn[k]);
        sp[k] = rlk_lock_new(c, spn[k]);
        ctl[k] = rlk_lock_new(c, ctn[k]);
        nr[k] = rlk_nrlock_new(c, nrn[k]);
        fr[k] = rlk_fairlock_new(c, frn[k]);
        el[k] = rlk_elect_new(c, eln[k]);
        REQUIRE(dl[k] && sp[k] && ctl[k] && nr[k] && fr[k] && el[k]);
        REQUIRE(rlk_lock_set_delay(dl[k], WD_DELAY_MS) == RLK_OK);
        REQUIRE(rlk_lock_set_spin(sp[k], 1, 32) == RLK_OK);
        REQUIRE(rlk_fairlock_set_non_reentrant(fr[k], 1) == RLK_OK);
        CHECKF(rlk_lock_try_lock(dl[k], 0, 0) == RLK_OK, "delay %s: %s", dn[k], rlk_errstr(c));
        CHECKF(rlk_lock_try_lock(sp[k], 0, 0) == RLK_OK, "spin %s: %s", spn[k], rlk_errstr(c));
        CHECKF(rlk_nrlock_try_lock(nr[k], 0, 0) == RLK_OK, "nr %s: %s", nrn[k], rlk_errstr(c));
        CHECKF(rlk_fairlock_try_lock(fr[k], 0, 0) == RLK_OK, "nr fair %s: %s", frn[k],
               rlk_errstr(c));
        CHECKF(rlk_elect_campaign(el[k], "wd", 0, 0, &terms[k]) == RLK_OK, "elect %s: %s",
               eln[k], rlk_errstr(c));
        CHECKF(rlk_lock_try_lock(ctl[k], 0, LEASE_MS) == RLK_OK, "control %s", ctn[k]);
    }
    t0 = rlk_fx_now_ms();
    cl_pause_ms(3 * LEASE_MS + 200);    /* the time under test */
    for (int k = 0; k < 3; k++) {
        const char *held[] = {dn[k], spn[k], nrn[k], frn[k], eln[k]};
        long long v;

        for (size_t i = 0; i < sizeof held / sizeof held[0]; i++) {
            v = int_on(mst[k], "PTTL %s", held[i]);
            CHECKF(v > 0, "%s on master %d after 3 leases: PTTL %lld", held[i], mst[k], v);
        }
        v = int_on(mst[k], "PTTL %s", dk[k]);
        CHECKF(v > WD_DELAY_MS, "delay key %s on master %d: PTTL %lld (renewed: above %lld)",
               dk[k], mst[k], v, WD_DELAY_MS);
        CHECKF(int_on(mst[k], "EXISTS %s", ctn[k]) == 0, "control: leased %s expired", ctn[k]);
        CHECK(rlk_elect_term(el[k], &v) == RLK_OK && v == terms[k]);
        /* Another client still finds them held. */
        {
            rlk_nrlock *o = rlk_nrlock_new(other, nrn[k]);

            CHECK(o && rlk_nrlock_try_lock(o, 0, 1000) == RLK_ERR_BUSY);
            rlk_nrlock_free(o);
        }
    }
    tk_say("newer kinds' watchdog: 15 lease-less holds on 3 masters through %lld ms (3 leases), "
           "lost reports %d", rlk_fx_now_ms() - t0, atomic_load(&lost_count));
    CHECK_INT_EQ(atomic_load(&lost_count), 0);
    for (int k = 0; k < 3; k++) {
        CHECK_INT_EQ(rlk_lock_unlock(dl[k]), RLK_OK);
        CHECK_INT_EQ(int_on(mst[k], "EXISTS %s", dk[k]), 0);
        CHECK_INT_EQ(rlk_lock_unlock(sp[k]), RLK_OK);
        CHECK_INT_EQ(rlk_nrlock_unlock(nr[k]), RLK_OK);
        CHECK_INT_EQ(rlk_fairlock_unlock(fr[k]), RLK_OK);
        CHECK_INT_EQ(rlk_elect_resign(el[k]), RLK_OK);
        rlk_lock_free(dl[k]);
        rlk_lock_free(sp[k]);
        rlk_lock_free(ctl[k]);
        rlk_nrlock_free(nr[k]);
        rlk_fairlock_free(fr[k]);
        rlk_elect_free(el[k]);
    }
    rlk_free(other);
    rlk_free(c);
}

static void test_newer_kinds(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);

    REQUIRE(c && c2);
    for (int k = 0; k < 3; k++) {
        nonreentrant_on(c, c2, mst[k]);
        spin_on(c, c2, mst[k]);
        delay_on(c, c2, mst[k]);
        elect_on(c, c2, mst[k]);
        sem_admin_on(c, mst[k]);
    }
    rlk_free(c);
    rlk_free(c2);
}

int main(void)
{
    int n;

    if (cl_start("cl_kinds", &cl, 0, 4, url, sizeof url) != 0)
        return 1;
    n = cl_masters(&cl, mst);
    if (n == 3) {
        RUN_TEST(test_every_kind);
        RUN_TEST(test_newer_kinds);
        RUN_TEST(test_newer_watchdog);
        RUN_TEST(test_multilock_and_redlock);
        RUN_TEST(test_watchdog_many_slots);
        RUN_TEST(test_cross_shard_wake);
    } else {
        fprintf(stderr, "cl_kinds: %d masters, expected 3\n", n);
    }
    rlk_fx_cluster_stop(&cl);
    return n == 3 ? check_summary("cl_kinds") : 1;
}
