/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi_multilock.c - MultiLock (rlk_multilock_*) against 3 real
 * redis-servers: all-or-nothing acquisition, the global member order, leases
 * and watchdog renewal, a busy member (fails after the wait, or is awaited),
 * a member whose server is down, two MultiLocks over the same members in
 * opposite order, fixed owners, and unlock reporting a lost member. After
 * every failed attempt no member key of ours is left on any server.
 */
#include "check.h"
#include "multi_util.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define NSERVERS 3
#define WATCHDOG_LEASE_MS 900

static mu_set S;

/* Members used by most tests: a on 0, b on 1, c on 2, d on 0 again. */
static const struct {
    int server;
    const char *name;
} members[] = {{0, "ml-a"}, {1, "ml-b"}, {2, "ml-c"}, {0, "ml-d"}};
#define NMEMBERS 4

/* ---------------------------------------------------------------- helpers */

static rlk_multilock *ml_new(void)
{
    rlk_multilock *m = rlk_multilock_new();

    if (!m)
        return NULL;
    for (int i = 0; i < NMEMBERS; i++) {
        if (rlk_multilock_add(m, S.c[members[i].server], members[i].name) != RLK_OK) {
            fprintf(stderr, "add: %s\n", rlk_multilock_errstr(m));
            rlk_multilock_free(m);
            return NULL;
        }
    }
    return m;
}

static void reset(void)
{
    CHECKF(mu_set_reset(&S) == 0, "servers could not be restarted / flushed");
}

/* How many member keys exist (servers that are down are skipped). */
static int keys_left(void)
{
    int left = 0;

    for (int i = 0; i < NMEMBERS; i++) {
        const rlk_fx_server *srv = &S.srv[members[i].server];

        if (srv->pid > 0 && tk_key_exists(srv, members[i].name) == 1)
            left++;
    }
    return left;
}

static long long hlen(int server, const char *key)
{
    redisReply *r = rlk_fx_command(&S.srv[server], "HLEN %s", key);
    long long n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;

    if (r)
        freeReplyObject(r);
    return n;
}

static int member_index(const char *name)
{
    for (int i = 0; i < NMEMBERS; i++)
        if (strcmp(members[i].name, name) == 0)
            return i;
    return -1;
}

static void show(rlk_multilock *m, int rc)
{
    fprintf(stderr, "    -> %s (member %d): %s\n", rlk_strerror(rc),
            rlk_multilock_failed_member(m), rlk_multilock_errstr(m));
}

/* ---------------------------------------------------------------- basics */

static void ml_acquire_unlock(void)
{
    rlk_multilock *m = ml_new();
    char owner[128];
    int rc;

    REQUIRE(m != NULL);
    CHECK_INT_EQ(rlk_multilock_count(m), NMEMBERS);
    CHECK_STR_EQ(rlk_multilock_member_name(m, 1), "ml-b");
    CHECK_STR_EQ(rlk_multilock_member_url(m, 2), rlk_client_url(S.c[2]));
    CHECK(rlk_multilock_member_client(m, 3) == S.c[0]);
    CHECK(rlk_multilock_member_name(m, NMEMBERS) == NULL);
    rc = rlk_multilock_try_lock(m, 0, 5000);
    if (rc != RLK_OK)
        show(m, rc);
    REQUIRE_INT_EQ(rc, RLK_OK);
    CHECK_INT_EQ(rlk_multilock_failed_member(m), -1);
    for (int i = 0; i < NMEMBERS; i++) {
        const rlk_fx_server *srv = &S.srv[members[i].server];
        redisReply *r;
        long long pttl = mu_pttl(srv, members[i].name);

        /* The holder id of the member's client (its uuid) and this thread. */
        REQUIRE(rlk_lock_owner(rlk_multilock_member_lock(m, i), owner, sizeof owner) == RLK_OK);
        CHECK_STR_PREFIX(owner, rlk_client_uuid(S.c[members[i].server]));
        r = rlk_fx_command(srv, "HGET %s %s", members[i].name, owner);

        CHECKF(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0,
               "member %d not held by %s", i, owner);
        if (r)
            freeReplyObject(r);
        CHECKF(pttl > 4000 && pttl <= 5000, "member %d pttl %lld", i, pttl);
    }
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_OK);
    CHECK_INT_EQ(keys_left(), 0);
    /* Unlocking again: every member reports it is not held. */
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_ERR_NOT_OWNER);
    CHECK(rlk_multilock_failed_member(m) >= 0);
    rlk_multilock_free(m);
}

/* Acquisition order: server address, then name, whatever the add order. */
static void ml_global_order(void)
{
    rlk_multilock *m = ml_new();
    int seen[NMEMBERS] = {0};

    REQUIRE(m != NULL);
    for (int k = 0; k < NMEMBERS; k++) {
        int i = rlk_multilock_order_at(m, k);

        REQUIRE(i >= 0 && i < NMEMBERS);
        seen[i]++;
        if (k > 0) {
            int j = rlk_multilock_order_at(m, k - 1);
            int d = strcmp(rlk_multilock_member_url(m, j), rlk_multilock_member_url(m, i));

            CHECKF(d < 0 || (d == 0 && strcmp(rlk_multilock_member_name(m, j),
                                              rlk_multilock_member_name(m, i)) < 0),
                   "member %d is taken before member %d", j, i);
        }
    }
    for (int i = 0; i < NMEMBERS; i++)
        CHECK_INT_EQ(seen[i], 1);
    CHECK_INT_EQ(rlk_multilock_order_at(m, NMEMBERS), -1);
    rlk_multilock_free(m);
}

static void ml_bad_arguments(void)
{
    rlk_multilock *m = rlk_multilock_new();
    char url[128];
    rlk_client *again;

    REQUIRE(m != NULL);
    CHECK_INT_EQ(rlk_multilock_try_lock(m, 0, 1000), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_multilock_add(m, NULL, "x"), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_multilock_add(m, S.c[0], ""), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_multilock_add(m, S.c[0], "ml-a"), RLK_OK);
    CHECK_INT_EQ(rlk_multilock_add(m, S.c[0], "ml-a"), RLK_ERR_ARG);
    /* Another client of the same server: the same lock, refused too. */
    REQUIRE(rlk_fx_url(&S.srv[0], -1, url, sizeof url) == 0);
    again = rlk_connect_url(url);
    REQUIRE(again != NULL);
    CHECK_INT_EQ(rlk_multilock_add(m, again, "ml-a"), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_multilock_errstr(m), "member 0 already");
    CHECK_INT_EQ(rlk_multilock_count(m), 1);
    CHECK_INT_EQ(rlk_multilock_set_owner(m, ""), RLK_ERR_ARG);
    rlk_multilock_free(m);
    rlk_free(again);
}

/* ---------------------------------------------------------------- leases */

/* With a wait, members are taken with 2 x the attempt budget (here 2 x 5000
 * ms), then set to the lease once all are held. */
static void ml_lease_after_wait(void)
{
    rlk_multilock *m = ml_new();
    int rc;

    REQUIRE(m != NULL);
    rc = rlk_multilock_try_lock(m, 5000, 3000);
    REQUIRE_INT_EQ(rc, RLK_OK);
    for (int i = 0; i < NMEMBERS; i++) {
        long long pttl = mu_pttl(&S.srv[members[i].server], members[i].name);

        CHECKF(pttl > 2000 && pttl <= 3000, "member %d pttl %lld, expected the 3000 ms lease", i,
               pttl);
    }
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_OK);
    CHECK_INT_EQ(keys_left(), 0);
    rlk_multilock_free(m);
}

/* Lease-less members are renewed by the clients' watchdogs (lease 900 ms). */
static void ml_watchdog_renews(void)
{
    rlk_multilock *m = ml_new();
    long long until, lowest = WATCHDOG_LEASE_MS;

    REQUIRE(m != NULL);
    REQUIRE_INT_EQ(rlk_multilock_lock(m, -1), RLK_OK);
    until = rlk_fx_now_ms() + 2 * WATCHDOG_LEASE_MS;
    while (rlk_fx_now_ms() < until) {
        for (int i = 0; i < NMEMBERS; i++) {
            long long pttl = mu_pttl(&S.srv[members[i].server], members[i].name);

            if (pttl < lowest)
                lowest = pttl;
        }
        rlk_fx_sleep_ms(50);
    }
    CHECKF(lowest > 0, "a member's pttl fell to %lld while the watchdog should renew it", lowest);
    CHECK_INT_EQ(keys_left(), NMEMBERS);
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_OK);
    CHECK_INT_EQ(keys_left(), 0);
    rlk_multilock_free(m);
}

/* ---------------------------------------------------------------- busy members */

static void ml_busy_member(void)
{
    rlk_multilock *m = ml_new();
    rlk_client *other;
    rlk_lock *held;
    char url[128];
    long long t0, elapsed;
    int rc;

    REQUIRE(m != NULL);
    REQUIRE(rlk_fx_url(&S.srv[1], -1, url, sizeof url) == 0);
    other = rlk_connect_url(url);
    REQUIRE(other != NULL && rlk_err(other) == RLK_OK);
    held = rlk_lock_new(other, "ml-b");
    REQUIRE(held != NULL);
    REQUIRE_INT_EQ(rlk_lock_try_lock(held, 0, 20000), RLK_OK);

    rc = rlk_multilock_try_lock(m, 0, 5000);
    show(m, rc);
    CHECK_INT_EQ(rc, RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_multilock_failed_member(m), member_index("ml-b"));
    CHECK_STR_CONTAINS(rlk_multilock_errstr(m), "ml-b");
    CHECK_INT_EQ(keys_left(), 1);               /* only the other holder's ml-b */
    CHECK_INT_EQ(hlen(1, "ml-b"), 1);

    rlk_multilock_set_attempt_wait(m, 40);      /* budget 160 ms: several attempts */
    t0 = rlk_fx_now_ms();
    rc = rlk_multilock_try_lock(m, 500, 5000);
    elapsed = rlk_fx_now_ms() - t0;
    CHECK_INT_EQ(rc, RLK_ERR_BUSY);
    CHECKF(elapsed >= 490 && elapsed < 2500, "the 500 ms wait took %lld ms", elapsed);
    CHECK_INT_EQ(rlk_multilock_failed_member(m), member_index("ml-b"));
    CHECK_INT_EQ(keys_left(), 1);
    CHECK_INT_EQ(hlen(1, "ml-b"), 1);

    CHECK_INT_EQ(rlk_lock_unlock(held), RLK_OK);
    rlk_lock_free(held);
    rlk_free(other);
    rlk_multilock_free(m);
    reset();
}

/* The member is released by its holder while the MultiLock waits for it. */
typedef struct bg_release {
    rlk_lock *held;
    const rlk_fx_server *srv;
    int rc;
} bg_release;

static void *bg_release_main(void *arg)
{
    bg_release *b = arg;

    /* Release once the MultiLock has taken the members before ml-c and
     * subscribed to ml-c's channel (it waits there). */
    if (tk_wait_numsub(b->srv, "redisson_lock__channel:{ml-c}", 1, 3000) != 0)
        b->rc = -1;
    else
        b->rc = rlk_lock_unlock(b->held);
    return NULL;
}

static void ml_waits_for_busy_member(void)
{
    rlk_multilock *m = ml_new();
    rlk_client *other;
    bg_release b = {0};
    pthread_t t;
    char url[128];
    int rc;

    REQUIRE(m != NULL);
    REQUIRE(rlk_fx_url(&S.srv[2], -1, url, sizeof url) == 0);
    other = rlk_connect_url(url);
    REQUIRE(other != NULL && rlk_err(other) == RLK_OK);
    b.held = rlk_lock_new(other, "ml-c");
    b.srv = &S.srv[2];
    REQUIRE(b.held != NULL);
    /* A fixed holder id, so the thread below may release it. */
    REQUIRE_INT_EQ(rlk_lock_set_owner(b.held, "releaser"), RLK_OK);
    REQUIRE_INT_EQ(rlk_lock_try_lock(b.held, 0, 20000), RLK_OK);
    REQUIRE(pthread_create(&t, NULL, bg_release_main, &b) == 0);
    rc = rlk_multilock_try_lock(m, 10000, 5000);
    pthread_join(t, NULL);
    if (rc != RLK_OK)
        show(m, rc);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECK_INT_EQ(keys_left(), NMEMBERS);
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_OK);
    CHECK_INT_EQ(keys_left(), 0);
    rlk_lock_free(b.held);
    rlk_free(other);
    rlk_multilock_free(m);
    reset();
}

/* ---------------------------------------------------------------- a server down */

static void ml_member_server_down(void)
{
    rlk_multilock *m = ml_new();
    long long t0, elapsed;
    int rc;

    REQUIRE(m != NULL);
    REQUIRE(rlk_fx_crash(&S.srv[2]) == 0);
    rc = rlk_multilock_try_lock(m, 0, 5000);
    show(m, rc);
    CHECK_INT_EQ(rc, RLK_ERR_IO);
    CHECK_INT_EQ(rlk_multilock_failed_member(m), member_index("ml-c"));
    CHECK_STR_CONTAINS(rlk_multilock_errstr(m), rlk_client_url(S.c[2]));
    CHECK_INT_EQ(keys_left(), 0);
    /* With a wait: an error is not something to wait for. */
    t0 = rlk_fx_now_ms();
    rc = rlk_multilock_try_lock(m, 3000, 5000);
    elapsed = rlk_fx_now_ms() - t0;
    CHECK_INT_EQ(rc, RLK_ERR_IO);
    CHECKF(elapsed < 2500, "the failure took %lld ms", elapsed);
    CHECK_INT_EQ(keys_left(), 0);
    rlk_multilock_free(m);
    reset();
}

/* ---------------------------------------------------------------- opposite orders */

typedef struct order_worker {
    rlk_multilock *m;
    int rounds, done, failures;
    volatile int *holders;
    int overlaps;
    char first_error[256];
} order_worker;

static void *order_worker_main(void *arg)
{
    order_worker *w = arg;

    for (int i = 0; i < w->rounds; i++) {
        int rc = rlk_multilock_try_lock(w->m, 10000, 5000);

        if (rc != RLK_OK) {
            if (w->failures++ == 0)
                snprintf(w->first_error, sizeof w->first_error, "%s: %s", rlk_strerror(rc),
                         rlk_multilock_errstr(w->m));
            continue;
        }
        if (__atomic_add_fetch(w->holders, 1, __ATOMIC_SEQ_CST) != 1)
            w->overlaps++;
        __atomic_sub_fetch(w->holders, 1, __ATOMIC_SEQ_CST);
        if (rlk_multilock_unlock(w->m) != RLK_OK)
            w->failures++;
        w->done++;
    }
    return NULL;
}

static void ml_opposite_orders_no_deadlock(void)
{
    rlk_multilock *fwd = rlk_multilock_new(), *rev = rlk_multilock_new();
    order_worker w[2];
    volatile int holders = 0;
    pthread_t t[2];
    long long t0, elapsed;

    REQUIRE(fwd && rev);
    for (int i = 0; i < NMEMBERS; i++) {
        int j = NMEMBERS - 1 - i;

        REQUIRE_INT_EQ(rlk_multilock_add(fwd, S.c[members[i].server], members[i].name), RLK_OK);
        REQUIRE_INT_EQ(rlk_multilock_add(rev, S.c[members[j].server], members[j].name), RLK_OK);
    }
    /* Both take the same members in the same order. */
    for (int k = 0; k < NMEMBERS; k++)
        CHECK_STR_EQ(rlk_multilock_member_name(fwd, rlk_multilock_order_at(fwd, k)),
                     rlk_multilock_member_name(rev, rlk_multilock_order_at(rev, k)));
    memset(w, 0, sizeof w);
    w[0].m = fwd;
    w[1].m = rev;
    t0 = rlk_fx_now_ms();
    for (int i = 0; i < 2; i++) {
        w[i].rounds = 60;
        w[i].holders = &holders;
        REQUIRE(pthread_create(&t[i], NULL, order_worker_main, &w[i]) == 0);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    elapsed = rlk_fx_now_ms() - t0;
    printf("multilock opposite orders: %d + %d acquisitions in %lld ms, %d failures, "
           "%d overlaps\n", w[0].done, w[1].done, elapsed, w[0].failures + w[1].failures,
           w[0].overlaps + w[1].overlaps);
    for (int i = 0; i < 2; i++) {
        CHECKF(w[i].failures == 0, "worker %d: %d failures, first: %s", i, w[i].failures,
               w[i].first_error);
        CHECK_INT_EQ(w[i].done, 60);
        CHECK_INT_EQ(w[i].overlaps, 0);
    }
    CHECK_INT_EQ(keys_left(), 0);
    rlk_multilock_free(fwd);
    rlk_multilock_free(rev);
}

/* ---------------------------------------------------------------- owners, lost members */

typedef struct bg_unlock {
    rlk_multilock *m;
    int rc;
} bg_unlock;

static void *bg_unlock_main(void *arg)
{
    bg_unlock *b = arg;

    b->rc = rlk_multilock_unlock(b->m);
    return NULL;
}

static void ml_fixed_owner_other_thread(void)
{
    rlk_multilock *m = ml_new();
    bg_unlock b = {0};
    pthread_t t;
    redisReply *r;

    REQUIRE(m != NULL);
    REQUIRE_INT_EQ(rlk_multilock_set_owner(m, "job-42"), RLK_OK);
    REQUIRE_INT_EQ(rlk_multilock_try_lock(m, 0, 5000), RLK_OK);
    r = rlk_fx_command(&S.srv[1], "HGET ml-b job-42");
    CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0);
    if (r)
        freeReplyObject(r);
    b.m = m;
    REQUIRE(pthread_create(&t, NULL, bg_unlock_main, &b) == 0);
    pthread_join(t, NULL);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECK_INT_EQ(keys_left(), 0);
    rlk_multilock_free(m);
}

static void ml_unlock_reports_lost_member(void)
{
    rlk_multilock *m = ml_new();
    redisReply *r;

    REQUIRE(m != NULL);
    REQUIRE_INT_EQ(rlk_multilock_try_lock(m, 0, 5000), RLK_OK);
    r = rlk_fx_command(&S.srv[2], "DEL ml-c");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (r)
        freeReplyObject(r);
    CHECK_INT_EQ(rlk_multilock_unlock(m), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_multilock_failed_member(m), member_index("ml-c"));
    CHECK_INT_EQ(keys_left(), 0);               /* the others were still released */
    rlk_multilock_free(m);
}

int main(void)
{
    if (mu_set_start(&S, NSERVERS, WATCHDOG_LEASE_MS) != 0) {
        fprintf(stderr, "cannot start %d redis-servers\n", NSERVERS);
        return 1;
    }
    RUN_TEST(ml_acquire_unlock);
    RUN_TEST(ml_global_order);
    RUN_TEST(ml_bad_arguments);
    RUN_TEST(ml_lease_after_wait);
    RUN_TEST(ml_watchdog_renews);
    RUN_TEST(ml_busy_member);
    RUN_TEST(ml_waits_for_busy_member);
    RUN_TEST(ml_member_server_down);
    RUN_TEST(ml_opposite_orders_no_deadlock);
    RUN_TEST(ml_fixed_owner_other_thread);
    RUN_TEST(ml_unlock_reports_lost_member);
    mu_set_stop(&S);
    return check_summary("multi_multilock");
}
