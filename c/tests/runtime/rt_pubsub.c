/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_pubsub.c - waiting by pub/sub: 1000 releases racing a waiter's
 * subscription with no wait falling through to the holder's TTL; CLIENT
 * KILL of the subscriber connection while threads wait (they all still
 * acquire); a wake-all message; a server restart under a waiter.
 */
#include "check.h"
#include "tk_util.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

static unsigned long long stat_of(rlk_client *c, size_t offset)
{
    rlk_runtime_stats st;

    if (rlk_runtime_stats_get(c, &st) != RLK_OK)
        return 0;
    return *(unsigned long long *)((char *)&st + offset);
}

#define STAT(c, field) stat_of((c), offsetof(rlk_runtime_stats, field))

/* ------------------------------------------------------------ release vs subscription */

#define RACE_TRIALS 1000

typedef struct race {
    rlk_lock *lw;
    tk_latch go, started, done;
    int errors;
    long long max_wait_ns;
} race;

static void *race_waiter(void *arg)
{
    race *r = arg;

    for (int i = 1; i <= RACE_TRIALS; i++) {
        long long t0, waited;

        if (tk_latch_wait(&r->go, i, 10000) < i)
            break;
        tk_latch_add(&r->started, 1);
        t0 = rlk_fx_now_ns();
        if (rlk_lock_lock(r->lw, 10000) != RLK_OK || rlk_lock_unlock(r->lw) != RLK_OK)
            r->errors++;
        waited = rlk_fx_now_ns() - t0;
        if (waited > r->max_wait_ns)
            r->max_wait_ns = waited;
        tk_latch_add(&r->done, 1);
    }
    return NULL;
}

/* The holder releases at a random moment while the waiter is joining the
 * queue, subscribing, retrying or already asleep. A release announced
 * before the SUBSCRIBE took effect is seen by the retry; one announced
 * after it is a kept permit. Either way no wait may run into the holder's
 * 10 s lease: a missed wake-up shows as a TTL wake-up and a wait of ~10 s, far
 * above the 5 s bound that leaves room for a loaded machine's stalls. */
static void test_release_races_subscription(void)
{
    rlk_client *ch = tk_connect(url, 0, 1), *cw = tk_connect(url, 0, 1);
    unsigned long long waits0, permits0;
    unsigned seed = 777;
    rlk_lock *lh;
    pthread_t t;
    race r;
    int trials = 0, errors = 0;

    REQUIRE(ch && cw);
    memset(&r, 0, sizeof r);
    lh = rlk_lock_new(ch, "ps:race");
    r.lw = rlk_lock_new(cw, "ps:race");
    REQUIRE(lh && r.lw);
    tk_latch_init(&r.go);
    tk_latch_init(&r.started);
    tk_latch_init(&r.done);
    waits0 = STAT(cw, waits);
    permits0 = STAT(cw, wake_permits);
    pthread_create(&t, NULL, race_waiter, &r);
    for (int i = 1; i <= RACE_TRIALS; i++) {
        if (rlk_lock_try_lock(lh, 0, 10000) != RLK_OK) {
            errors++;
            break;
        }
        tk_latch_add(&r.go, 1);
        if (tk_latch_wait(&r.started, i, 10000) < i)
            break;
        tk_spin_ns((long long)(tk_rand(&seed) % 400) * 1000);    /* vary the interleaving */
        errors += rlk_lock_unlock(lh) != RLK_OK;
        if (tk_latch_wait(&r.done, i, 10000) < i)
            break;
        trials++;
    }
    tk_latch_add(&r.go, RACE_TRIALS);      /* let the waiter run out if we broke off */
    pthread_join(t, NULL);
    printf("  %d trials: the waiter slept %llu times, woken by %llu permits, %llu TTL wake-ups, "
           "longest lock() %.2f ms\n", trials, STAT(cw, waits) - waits0,
           STAT(cw, wake_permits) - permits0, STAT(cw, ttl_wakeups), r.max_wait_ns / 1e6);
    CHECK_INT_EQ(trials, RACE_TRIALS);
    CHECK_INT_EQ(errors, 0);
    CHECK_INT_EQ(r.errors, 0);
    CHECK_INT_EQ(STAT(cw, ttl_wakeups), 0);
    CHECK(STAT(cw, waits) - waits0 > 0);        /* the race was really run */
    CHECKF(r.max_wait_ns < 5000000000LL, "a lock() took %.1f ms (longest scheduling gap %lld ms)",
           r.max_wait_ns / 1e6, tk_stall_max_gap_ms(&stall));
    tk_latch_destroy(&r.go);
    tk_latch_destroy(&r.started);
    tk_latch_destroy(&r.done);
    rlk_lock_free(r.lw);
    rlk_lock_free(lh);
    rlk_free(cw);
    rlk_free(ch);
}

/* ------------------------------------------------------------ subscriber killed */

#define KILL_CLIENTS 2
#define KILL_THREADS 2

typedef struct kill_waiter {
    rlk_lock *lock;
    tk_latch *done;
    int rc;
} kill_waiter;

static void *kill_waiter_main(void *arg)
{
    kill_waiter *w = arg;

    w->rc = rlk_lock_lock(w->lock, 30000);
    if (w->rc == RLK_OK)
        w->rc = rlk_lock_unlock(w->lock);
    tk_latch_add(w->done, 1);
    return NULL;
}

static void test_subscriber_killed(void)
{
    const char *channel = "redisson_lock__channel:{ps:kill}";
    rlk_client *ch = tk_connect(url, 0, 2), *cw[KILL_CLIENTS];
    kill_waiter w[KILL_CLIENTS * KILL_THREADS];
    pthread_t t[KILL_CLIENTS * KILL_THREADS];
    unsigned long long drops = 0, ttl = 0;
    tk_latch done;
    rlk_lock *lh;
    int killed1, killed2, n = KILL_CLIENTS * KILL_THREADS;

    REQUIRE(ch);
    tk_latch_init(&done);
    lh = rlk_lock_new(ch, "ps:kill");
    REQUIRE(lh);
    REQUIRE(rlk_lock_lock(lh, 30000) == RLK_OK);
    for (int i = 0; i < KILL_CLIENTS; i++) {
        cw[i] = tk_connect(url, 0, KILL_THREADS);
        REQUIRE(cw[i]);
    }
    for (int i = 0; i < n; i++) {
        w[i].lock = rlk_lock_new(cw[i % KILL_CLIENTS], "ps:kill");
        w[i].done = &done;
        REQUIRE(w[i].lock);
        pthread_create(&t[i], NULL, kill_waiter_main, &w[i]);
    }
    /* Round 1: kill while they wait; they must resubscribe. */
    CHECK(tk_wait_numsub(&srv, channel, 1, 5000) == 0);
    CHECK(tk_count_clients_named(&srv, "rlk-sub") >= 1);
    killed1 = tk_kill_clients_named(&srv, "rlk-sub");
    CHECK(killed1 >= 1);
    CHECK(tk_wait_numsub(&srv, channel, 1, 5000) == 0);
    /* Round 2: kill and release at once: the unlock message goes nowhere,
     * the reconnect wakes the waiters, their retry finds the lock free. */
    killed2 = tk_kill_clients_named(&srv, "rlk-sub");
    CHECK(killed2 >= 1);
    CHECK_INT_EQ(rlk_lock_unlock(lh), RLK_OK);
    CHECKF(tk_latch_wait(&done, n, 10000) == n, "%d of %d waiters acquired after the kills",
           tk_latch_get(&done), n);
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        CHECK_INT_EQ(w[i].rc, RLK_OK);
        rlk_lock_free(w[i].lock);
    }
    for (int i = 0; i < KILL_CLIENTS; i++) {
        drops += STAT(cw[i], sub_drops);
        ttl += STAT(cw[i], ttl_wakeups);
        rlk_free(cw[i]);
    }
    printf("  killed %d + %d subscriber connections; %llu drops seen; all %d waiters acquired\n",
           killed1, killed2, drops, n);
    CHECK(drops >= 2);
    CHECK_INT_EQ(ttl, 0);
    tk_latch_destroy(&done);
    rlk_lock_free(lh);
    rlk_free(ch);
}

/* ------------------------------------------------------------ wake-all */

static void test_wake_all_message(void)
{
    const char *channel = "redisson_lock__channel:{ps:all}";
    rlk_client *ch = tk_connect(url, 0, 2), *cw = tk_connect(url, 0, 2);
    unsigned long long calls0;
    kill_waiter w;
    tk_latch done;
    rlk_lock *lh;
    redisReply *r;
    pthread_t t;
    long long until;

    REQUIRE(ch && cw);
    tk_latch_init(&done);
    lh = rlk_lock_new(ch, "ps:all");
    w.lock = rlk_lock_new(cw, "ps:all");
    w.done = &done;
    REQUIRE(lh && w.lock);
    REQUIRE(rlk_lock_lock(lh, 30000) == RLK_OK);
    pthread_create(&t, NULL, kill_waiter_main, &w);
    CHECK(tk_wait_numsub(&srv, channel, 1, 5000) == 0);
    /* The waiter has subscribed; wait (bounded) until it is asleep. */
    until = rlk_fx_now_ms() + 5000;
    while (STAT(cw, waits) == 0 && rlk_fx_now_ms() < until)
        rlk_fx_sleep_ms(1);
    calls0 = STAT(cw, acquire_calls);
    r = rlk_fx_command(&srv, "PUBLISH %s 1", channel);
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (r)
        freeReplyObject(r);
    until = rlk_fx_now_ms() + 5000;
    while (STAT(cw, acquire_calls) == calls0 && rlk_fx_now_ms() < until)
        rlk_fx_sleep_ms(1);
    CHECK(STAT(cw, wake_all) >= 1);
    CHECK(STAT(cw, acquire_calls) > calls0);     /* it retried */
    CHECK_INT_EQ(tk_latch_get(&done), 0);        /* and is still waiting: the lock is held */
    CHECK_INT_EQ(rlk_lock_unlock(lh), RLK_OK);
    CHECK_INT_EQ(tk_latch_wait(&done, 1, 5000), 1);
    pthread_join(t, NULL);
    CHECK_INT_EQ(w.rc, RLK_OK);
    tk_latch_destroy(&done);
    rlk_lock_free(w.lock);
    rlk_lock_free(lh);
    rlk_free(cw);
    rlk_free(ch);
}

/* ------------------------------------------------------------ server restart */

static void test_server_restart_under_waiter(void)
{
    rlk_client *ch, *cw;
    rlk_fx_server s2;
    char url2[128];
    kill_waiter w;
    tk_latch done;
    rlk_lock *lh;
    pthread_t t;

    REQUIRE(rlk_fx_start(&s2, NULL) == 0);
    REQUIRE(rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    ch = tk_connect(url2, 0, 2);
    cw = tk_connect(url2, 0, 2);
    tk_latch_init(&done);
    lh = ch ? rlk_lock_new(ch, "ps:restart") : NULL;
    w.lock = cw ? rlk_lock_new(cw, "ps:restart") : NULL;
    w.done = &done;
    if (lh && w.lock && rlk_lock_lock(lh, 60000) == RLK_OK) {
        pthread_create(&t, NULL, kill_waiter_main, &w);
        CHECK(tk_wait_numsub(&s2, "redisson_lock__channel:{ps:restart}", 1, 5000) == 0);
        /* No persistence: the restarted server has no lock; the waiter's
         * subscriber reconnects, wakes it, and its retry acquires. */
        CHECK_INT_EQ(rlk_fx_restart(&s2), 0);
        CHECKF(tk_latch_wait(&done, 1, 10000) == 1, "the waiter did not acquire after the restart");
        pthread_join(t, NULL);
        CHECK_INT_EQ(w.rc, RLK_OK);
        CHECK(STAT(cw, sub_drops) >= 1);
        CHECK_INT_EQ(rlk_lock_unlock(lh), RLK_ERR_NOT_OWNER);
    } else {
        CHECK(!"setup failed");
    }
    tk_latch_destroy(&done);
    rlk_lock_free(w.lock);
    rlk_lock_free(lh);
    rlk_free(cw);
    rlk_free(ch);
    rlk_fx_stop(&s2);
}

int main(void)
{
    if (tk_suite_start("rt_pubsub", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_release_races_subscription);
    RUN_TEST(test_subscriber_killed);
    RUN_TEST(test_wake_all_message);
    RUN_TEST(test_server_restart_under_waiter);
    tk_suite_stop(&srv, &stall);
    return check_summary("rt_pubsub");
}
