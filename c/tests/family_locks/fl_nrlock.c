/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_nrlock.c - the non-reentrant lock (rlk_nrlock_*) against a real
 * redis-server:
 *   - a second acquisition by the holder is refused with RLK_ERR_REENTRY at
 *     once (whatever the wait), from the registry and, for a hold another
 *     client records under the same fixed id, from the script; the hold
 *     stays counted once (HGET 1) and one unlock frees it;
 *   - another holder is told busy; a Redisson holder's lock (its script on
 *     the same hash) is waited for, and its reentry rule is the same;
 *   - a waiter is woken by the release (pub/sub), not by the lease;
 *   - the watchdog renews it (reentrant/renew) and reports a deleted lock
 *     lost as kind RLK_KIND_LOCK;
 *   - the fair variant (rlk_fairlock_set_non_reentrant): the holder refused
 *     from the registry and the script, not queued; another owner queued and
 *     handed the lock by the release;
 *   - a force unlock ends the reentrant lock's lock-delay on the shared hash
 *     (a lost lock's delay key alone, or beside a held lock): the key goes
 *     and a reentrant lock with a delay takes the name at once;
 *   - the invariant: 6 processes x 3 threads acquire and release one lock;
 *     the event log has no two holds overlapping (0 overlaps).
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
    return rlk_nrlock_new(c, "nr:contend");
}

static int contend_acquire(void *lock, long long lease_ms, long long *value)
{
    (void)value;
    return rlk_nrlock_lock(lock, lease_ms);
}

/* The holder asking again is refused, and still holds it. */
static int contend_while_held(void *lock, int i, long long lease_ms, long long value)
{
    (void)value;
    return i % 8 == 0 && rlk_nrlock_try_lock(lock, 0, lease_ms) != RLK_ERR_REENTRY;
}

static int contend_release(void *lock)
{
    return rlk_nrlock_unlock(lock);
}

static void contend_free(void *lock)
{
    rlk_nrlock_free(lock);
}

static const fl_contender contender = {"fl_nrlock", contend_make, contend_acquire,
                                       contend_while_held, contend_release, contend_free};

/* ------------------------------------------------------------ re-entry */

/* RedissonNonReentrantLock.tryLockInnerAsync (Redisson 4.4.0). */
static const char redisson_acquire[] =
    "if redis.call('exists', KEYS[1]) == 0 then redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); return nil; end; "
    "if redis.call('hexists', KEYS[1], ARGV[2]) == 1 then return redis.error_reply(ARGV[3]); end; "
    "return redis.call('pttl', KEYS[1]);";

static void test_reentry_refused(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_nrlock *l, *same, *other;
    long long t0, ttl = 0;
    int held = -1, locked = -1, released = -1;

    REQUIRE(c && c2);
    CHECK(rlk_nrlock_new(c, "") == NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);
    l = rlk_nrlock_new(c, "nr:door");
    same = rlk_nrlock_new(c2, "nr:door");
    other = rlk_nrlock_new(c2, "nr:door");
    REQUIRE(l && same && other);
    CHECK_STR_EQ(rlk_nrlock_name(l), "nr:door");
    CHECK_INT_EQ(rlk_nrlock_try_lock(l, 0, 1000000000001LL), RLK_ERR_ARG);
    REQUIRE_INT_EQ(rlk_nrlock_set_owner(l, "job-7"), RLK_OK);
    REQUIRE_INT_EQ(rlk_nrlock_set_owner(same, "job-7"), RLK_OK);     /* another client */
    REQUIRE_INT_EQ(rlk_nrlock_set_owner(other, "job-8"), RLK_OK);
    CHECK_INT_EQ(rlk_nrlock_try_lock(l, 0, 20000), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "nr:door", "job-7"), 1);
    /* The registry refuses at once, a wait or not. */
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_nrlock_try_lock(l, 5000, 20000), RLK_ERR_REENTRY);
    CHECK_STR_CONTAINS(rlk_errstr(c), "nr:door");
    CHECK_INT_EQ(rlk_nrlock_lock(l, 0), RLK_ERR_REENTRY);
    CHECKF(rlk_fx_now_ms() - t0 < 2000, "refused after %lld ms", rlk_fx_now_ms() - t0);
    /* Another client with the same id: the script refuses (RLK_REENTRY). */
    CHECK_INT_EQ(rlk_nrlock_try_lock(same, 5000, 20000), RLK_ERR_REENTRY);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "nr:door", "job-7"), 1);   /* not counted */
    CHECK_INT_EQ(rlk_nrlock_try_lock(other, 0, 20000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_nrlock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_nrlock_remaining_ttl(l, &ttl), RLK_OK);
    CHECKF(ttl > 0 && ttl <= 20000, "ttl %lld", ttl);
    /* One unlock frees it: nothing was counted twice. */
    CHECK_INT_EQ(rlk_nrlock_unlock(l), RLK_OK);
    CHECK_INT_EQ(rlk_nrlock_is_locked(l, &locked), RLK_OK);
    CHECK_INT_EQ(locked, 0);
    CHECK_INT_EQ(rlk_nrlock_unlock(l), RLK_ERR_NOT_OWNER);
    /* Taken again once released; force unlock. */
    CHECK_INT_EQ(rlk_nrlock_try_lock(other, 0, 20000), RLK_OK);
    CHECK_INT_EQ(rlk_nrlock_force_unlock(l, &released), RLK_OK);
    CHECK_INT_EQ(released, 1);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "nr:door"), 0);
    /* A key of another type: the script's refusal, nothing written. */
    {
        redisReply *r = rlk_fx_command(&srv, "SET %s %s", "nr:str", "x");

        CHECK(r && r->type == REDIS_REPLY_STATUS);
        if (r)
            freeReplyObject(r);
    }
    rlk_nrlock_free(same);
    same = rlk_nrlock_new(c2, "nr:str");
    REQUIRE(same);
    CHECK_INT_EQ(rlk_nrlock_try_lock(same, 0, 5000), RLK_ERR_SCRIPT);
    CHECK_STR_CONTAINS(rlk_errstr(c2), "RLK_WRONGTYPE");
    rlk_nrlock_free(same);
    rlk_nrlock_free(other);
    rlk_nrlock_free(l);
    rlk_free(c);
    rlk_free(c2);
}

/* A Redisson holder (its script, its id) and an rlk one on the same hash. */
static void test_redisson_holder(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_nrlock *l;
    redisReply *r;

    REQUIRE(c);
    l = rlk_nrlock_new(c, "nr:mixed");
    REQUIRE(l);
    REQUIRE_INT_EQ(rlk_nrlock_set_owner(l, "rlk-a:1"), RLK_OK);
    r = rlk_fx_command(&srv, "EVAL %s 1 %s %s %s %s", redisson_acquire, "nr:mixed", "400",
                       "redisson-b:1", "NON_REENTRANT_REACQUIRE");
    CHECK(r && r->type == REDIS_REPLY_NIL);
    if (r)
        freeReplyObject(r);
    /* Busy while Redisson's holder has it; the wait ends by its lease at the latest. */
    CHECK_INT_EQ(rlk_nrlock_try_lock(l, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_nrlock_try_lock(l, 5000, 5000), RLK_OK);
    /* Redisson's script sees rlk's holder: busy for another, re-entry error for the same id. */
    r = rlk_fx_command(&srv, "EVAL %s 1 %s %s %s %s", redisson_acquire, "nr:mixed", "400",
                       "redisson-b:1", "NON_REENTRANT_REACQUIRE");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0);
    if (r)
        freeReplyObject(r);
    r = rlk_fx_command(&srv, "EVAL %s 1 %s %s %s %s", redisson_acquire, "nr:mixed", "400",
                       "rlk-a:1", "NON_REENTRANT_REACQUIRE");
    CHECK(r && r->type == REDIS_REPLY_ERROR && strstr(r->str, "NON_REENTRANT_REACQUIRE"));
    if (r)
        freeReplyObject(r);
    CHECK_INT_EQ(rlk_nrlock_unlock(l), RLK_OK);
    rlk_nrlock_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ non-reentrant fair lock */

typedef struct bg_fair {
    rlk_fairlock *lock;
    int rc;
    tk_latch done;
} bg_fair;

static void *bg_fair_main(void *arg)
{
    bg_fair *b = arg;

    b->rc = rlk_fairlock_try_lock(b->lock, 10000, 20000);
    tk_latch_add(&b->done, 1);
    return NULL;
}

static void test_fair_reentry_refused(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_fairlock *f, *same, *other;
    bg_fair b = {0};
    long long t0;
    pthread_t t;

    REQUIRE(c && c2);
    f = rlk_fairlock_new(c, "nr:fair");
    same = rlk_fairlock_new(c2, "nr:fair");
    other = rlk_fairlock_new(c2, "nr:fair");
    REQUIRE(f && same && other);
    CHECK_INT_EQ(rlk_fairlock_set_non_reentrant(NULL, 1), RLK_ERR_ARG);
    REQUIRE_INT_EQ(rlk_fairlock_set_non_reentrant(f, 1), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_set_non_reentrant(same, 1), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_set_non_reentrant(other, 1), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_set_owner(f, "fair-a"), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_set_owner(same, "fair-a"), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_set_owner(other, "fair-b"), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_try_lock(f, 0, 20000), RLK_OK);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fairlock_try_lock(f, 5000, 20000), RLK_ERR_REENTRY);  /* registry */
    CHECK_INT_EQ(rlk_fairlock_try_lock(same, 5000, 20000), RLK_ERR_REENTRY); /* script */
    CHECKF(rlk_fx_now_ms() - t0 < 2000, "refused after %lld ms", rlk_fx_now_ms() - t0);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "nr:fair", "fair-a"), 1);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "redisson_lock_queue:{nr:fair}"), 0);  /* not queued */
    /* Another owner queues, and is handed the lock by the release. */
    b.lock = other;
    tk_latch_init(&b.done);
    pthread_create(&t, NULL, bg_fair_main, &b);
    CHECK(fl_wait_lindex(&srv, "redisson_lock_queue:{nr:fair}", 0, "fair-b", 5000) == 0);
    CHECK_INT_EQ(tk_latch_get(&b.done), 0);
    CHECK_INT_EQ(rlk_fairlock_unlock(f), RLK_OK);
    CHECK(tk_latch_wait(&b.done, 1, 10000) == 1);
    pthread_join(t, NULL);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "nr:fair", "fair-b"), 1);
    CHECK_INT_EQ(rlk_fairlock_try_lock(other, 0, 20000), RLK_ERR_REENTRY);
    CHECK_INT_EQ(rlk_fairlock_unlock(other), RLK_OK);
    /* Reentrant again when switched off. */
    REQUIRE_INT_EQ(rlk_fairlock_set_non_reentrant(f, 0), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_try_lock(f, 0, 20000), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_try_lock(f, 0, 20000), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "nr:fair", "fair-a"), 2);
    CHECK_INT_EQ(rlk_fairlock_unlock(f), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_unlock(f), RLK_OK);
    tk_latch_destroy(&b.done);
    rlk_fairlock_free(other);
    rlk_fairlock_free(same);
    rlk_fairlock_free(f);
    rlk_free(c);
    rlk_free(c2);
}

/* ------------------------------------------------------------ waiting */

static int nr_wait_lock(void *l)
{
    return rlk_nrlock_try_lock(l, 10000, 0);
}

static int nr_unlock(void *l)
{
    return rlk_nrlock_unlock(l);
}

static void test_waiter_woken(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_nrlock *l, *b;
    fl_waiter w;
    long long woken;
    int rc = -1;

    REQUIRE(c && c2);
    l = rlk_nrlock_new(c, "nr:wake");
    b = rlk_nrlock_new(c2, "nr:wake");
    REQUIRE(l && b);
    REQUIRE(rlk_nrlock_set_owner(b, "nr-waiter") == RLK_OK);  /* unlocked from here */
    REQUIRE_INT_EQ(rlk_nrlock_try_lock(l, 0, 20000), RLK_OK);
    REQUIRE(fl_waiter_start(&w, nr_wait_lock, b) == 0);
    woken = fl_waiter_woken(&w, &srv, "redisson_lock__channel:{nr:wake}", &stall, nr_unlock, l,
                            &rc);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECKF(woken >= 0 && woken <= 500, "woken %lld ms after the release (holder's lease 20000 "
           "ms)%s", woken, tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_nrlock_unlock(b), RLK_OK);
    rlk_nrlock_free(b);
    rlk_nrlock_free(l);
    rlk_free(c);
    rlk_free(c2);
}

/* ------------------------------------------------------------ watchdog */

#define WD_LEASE 900     /* renewed every 300 ms: a renewal has 600 ms of room on a loaded machine */

static void test_watchdog_and_lost(void)
{
    rlk_client *c = tk_connect(url, WD_LEASE, 2);
    rlk_runtime_stats st;
    rlk_nrlock *l;
    tk_lost_rec g;
    long long ttl;
    int held = -1;

    REQUIRE(c);
    tk_lost_init(&g);
    tk_lost_install(c, &g);
    l = rlk_nrlock_new(c, "nr:wd");
    REQUIRE(l);
    REQUIRE_INT_EQ(rlk_nrlock_lock(l, 0), RLK_OK);
    rlk_fx_sleep_ms(4 * WD_LEASE);      /* four leases: only renewals keep it */
    ttl = tk_int(&srv, "PTTL %s", "nr:wd");
    CHECKF(ttl > 0 && ttl <= WD_LEASE, "lock PTTL %lld after four leases", ttl);
    CHECK_INT_EQ(rlk_nrlock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    CHECKF(st.renew_calls >= 3, "%llu renewals", st.renew_calls);
    CHECK_INT_EQ(st.renew_errors, 0);

    CHECK_INT_EQ(tk_int(&srv, "DEL %s", "nr:wd"), 1);
    CHECK(tk_latch_wait(&g.fired, 1, 3000) == 1);
    CHECK_INT_EQ(g.kind, RLK_KIND_LOCK);
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    CHECK_STR_EQ(g.name, "nr:wd");
    CHECK_INT_EQ(rlk_nrlock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_nrlock_unlock(l), RLK_ERR_NOT_OWNER);
    /* Lost, so not held: it may be taken again. */
    CHECK_INT_EQ(rlk_nrlock_try_lock(l, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_nrlock_unlock(l), RLK_OK);
    rlk_nrlock_free(l);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* ------------------------------------------------------------ invariant */

#define PROCS 6
#define THREADS 3
#define ITERS 40

/* The delay key {name}:rlk_delay of a lost reentrant lock blocks a
 * reentrant lock with a delay on the same name; rlk_nrlock_force_unlock
 * ends it as rlk_lock_force_unlock does (released 0: no lock was there),
 * and deletes it with a held lock. */
static void test_force_unlock_ends_delay(void)
{
    const char *name = "nr:delayed", *key = "{nr:delayed}:rlk_delay";
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_nrlock *l = c ? rlk_nrlock_new(c, name) : NULL;
    rlk_lock *d = c ? rlk_lock_new(c, name) : NULL;
    int released = -1;

    REQUIRE(c && l && d);
    REQUIRE_INT_EQ(rlk_lock_set_delay(d, 60000), RLK_OK);
    /* a lost lock's delay alone: refused by it, then ended by the force unlock */
    REQUIRE(tk_command_ok(&srv, "SET %s %s PX %s", key, "60000", "60000") == 0);
    CHECK_INT_EQ(rlk_lock_try_lock(d, 0, 20000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_nrlock_force_unlock(l, &released), RLK_OK);
    CHECK_INT_EQ(released, 0);
    CHECK_INT_EQ(tk_key_exists(&srv, key), 0);
    CHECK_INT_EQ(rlk_lock_try_lock(d, 0, 20000), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(d), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, key), 0);      /* released: no delay */
    /* a held lock with a delay key beside it: both go */
    CHECK_INT_EQ(rlk_nrlock_try_lock(l, 0, 20000), RLK_OK);
    REQUIRE(tk_command_ok(&srv, "SET %s %s PX %s", key, "60000", "60000") == 0);
    CHECK_INT_EQ(rlk_nrlock_force_unlock(l, &released), RLK_OK);
    CHECK_INT_EQ(released, 1);
    CHECK_INT_EQ(tk_key_exists(&srv, name), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, key), 0);
    rlk_lock_free(d);
    rlk_nrlock_free(l);
    rlk_free(c);
}

static void test_invariant(void)
{
    fl_contend_run run;
    char why[512];

    REQUIRE(fl_contend(url, PROCS, THREADS, ITERS, 40000, &run) == 0);
    printf("  non-reentrant invariant: %d processes x %d threads, %zu acquisitions in %lld ms, "
           "%ld overlaps, %d errors\n", PROCS, THREADS, run.n, run.ms, run.rep.conflicts,
           run.errors);
    CHECKF(fl_contend_problems(&run, PROCS, THREADS, ITERS, why, sizeof why) == 0, "%s", why);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "nr:contend"), 0);
    free(run.recs);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return fl_child_main(argc, argv, &contender);
    signal(SIGPIPE, SIG_IGN);
    if (tk_suite_start("fl_nrlock", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_reentry_refused);
    if (!getenv("RLK_TEST_FUNCTIONS"))     /* it runs Redisson's script by EVAL */
        RUN_TEST(test_redisson_holder);
    else
        printf("- test_redisson_holder: skipped in functions mode (EVAL of Redisson's script)\n");
    RUN_TEST(test_fair_reentry_refused);
    RUN_TEST(test_waiter_woken);
    RUN_TEST(test_watchdog_and_lost);
    RUN_TEST(test_force_unlock_ends_delay);
    RUN_TEST(test_invariant);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_nrlock");
}
