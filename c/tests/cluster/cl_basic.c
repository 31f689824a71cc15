/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_basic.c - the cluster client: redis+cluster://
 * URLs, the slot map, scripts on every master, calls routed by their first
 * key on all three masters, the client-side CROSSSLOT check, the name rule,
 * MOVED after a slot moved behind the client's back, ASK during a
 * migration. One cluster for the whole program.
 */
#include "check.h"
#include "cl_util.h"
#include "cluster.h"
#include "tk_util.h"
#include "client/client.h"
#include "client/cluster.h"
#include "client/slot.h"
#include "client/url.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rlk_fx_cluster cl;
static char url[512];           /* redis+cluster://127.0.0.1:P0,127.0.0.1:P1 */

/* ------------------------------------------------------------ tests */

static void test_url(void)
{
    rlk_url u;
    char err[256], *m;

    REQUIRE_INT_EQ(rlk_url_parse("redis+cluster://u:p%40ss@h1:7000,[::1]:7001,h3", &u, err,
                                 sizeof err), RLK_OK);
    CHECK(u.is_cluster);
    CHECK_INT_EQ(u.nseeds, 3);
    CHECK_STR_EQ(u.seeds[1].host, "::1");
    CHECK_INT_EQ(u.seeds[1].port, 7001);
    CHECK_INT_EQ(u.seeds[2].port, 6379);
    CHECK_STR_EQ(u.password, "p@ss");
    m = rlk_url_masked(&u);
    CHECK_STR_EQ(m, "redis+cluster://u:***@h1:7000,[::1]:7001,h3:6379");
    free(m);
    rlk_url_free(&u);
    CHECK_INT_EQ(rlk_url_parse("redis+cluster://h1:7000?db=1", &u, err, sizeof err), RLK_ERR_URL);
    CHECK_STR_CONTAINS(err, "no query");
    rlk_url_free(&u);
    /* A database: the nodes decide on connect (cl_databases.c). */
    CHECK_INT_EQ(rlk_url_parse("redis+cluster://h1:7000/1", &u, err, sizeof err), RLK_OK);
    CHECK_INT_EQ(u.db, 1);
    rlk_url_free(&u);
    CHECK_INT_EQ(rlk_url_parse("redis+cluster://h1:7000,,h2", &u, err, sizeof err), RLK_ERR_URL);
    rlk_url_free(&u);
    CHECK_INT_EQ(rlk_url_parse("REDIS+CLUSTER://h1", &u, err, sizeof err), RLK_OK);
    rlk_url_free(&u);
}

static void test_slots(void)
{
    CHECK_INT_EQ(rlk_crc16("123456789", 9), 0x31C3);
    CHECK_INT_EQ(rlk_key_slot("foo", 3), 12182);
    CHECK_INT_EQ(rlk_key_slot("foo{}{bar}", 10), rlk_fx_key_slot("foo{}{bar}", 10));
    CHECK_INT_EQ(rlk_key_slot("{user1000}.x", 12), rlk_key_slot("user1000", 8));
    CHECK_INT_EQ(rlk_name_check("plain", NULL, 0), 0);
    CHECK_INT_EQ(rlk_name_check("orders{42}", NULL, 0), 0);
    CHECK_INT_EQ(rlk_name_check("a}b{c}", NULL, 0), 0);
    CHECK_INT_EQ(rlk_name_check("a{b", NULL, 0), -1);
    CHECK_INT_EQ(rlk_name_check("a{}b", NULL, 0), -1);
    CHECK_INT_EQ(rlk_name_check("{}", NULL, 0), -1);
    CHECK_INT_EQ(rlk_name_check("a}b", NULL, 0), -1);
}

/* Every master gets the scripts at connect; a lock on each master. */
static void test_routed(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    int m[3], present[256];
    char name[64];

    REQUIRE(c);
    REQUIRE_INT_EQ(cl_masters(&cl, m), 3);
    REQUIRE((size_t)rlk_script_count(c) <= sizeof present / sizeof present[0]);
    for (int k = 0; k < 3; k++) {
        redisReply *r = rlk_fx_cluster_command(&cl, m[k], "SCRIPT EXISTS %s",
                                               rlk_script_at(c, 0)->sha1);

        CHECKF(r && r->type == REDIS_REPLY_ARRAY && r->element[0]->integer == 1,
               "master %d has no scripts after connect", m[k]);
        if (r)
            freeReplyObject(r);
    }
    CHECK_INT_EQ(rlk_verify_scripts(c, present), RLK_OK);
    for (size_t i = 0; i < rlk_script_count(c); i++)
        CHECKF(present[i], "%s missing on a master", rlk_script_at(c, i)->name);
    for (int k = 0; k < 3; k++) {
        rlk_lock *l;
        int held = 0;

        cl_name_on(&cl, "cl:routed:", m[k], name, sizeof name);
        REQUIRE(name[0]);
        l = rlk_lock_new(c, name);
        REQUIRE(l);
        CHECKF(rlk_lock_try_lock(l, 0, 10000) == RLK_OK, "%s: %s", name, rlk_errstr(c));
        CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
        CHECK(held);
        {
            redisReply *r = rlk_fx_cluster_command(&cl, m[k], "EXISTS %s", name);

            CHECKF(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1,
                   "%s not on its master %d", name, m[k]);
            if (r)
                freeReplyObject(r);
        }
        CHECKF(rlk_lock_unlock(l) == RLK_OK, "unlock %s: %s", name, rlk_errstr(c));
        rlk_lock_free(l);
    }
    rlk_free(c);
}

/* KEYS in two slots: refused before any round trip, as RLK_ERR_ARG. */
static void test_crossslot(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    const char *keys[2] = {"cl:x:a", "cl:x:b"}, *args[2] = {"1000", "o"};
    redisReply *r = NULL;

    REQUIRE(c);
    REQUIRE(rlk_key_slot(keys[0], 6) != rlk_key_slot(keys[1], 6));
    CHECK_INT_EQ(rlk_eval(c, "reentrant/renew_many", 2, keys, 2, args, &r), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "different cluster slots");
    CHECK(r == NULL);
    rlk_free(c);
}

/* Names without a valid hash tag are refused by every kind before any write. */
static void test_name_rule(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    const char *bad[] = {"a{b", "a{}b", "{}", "x}y"};

    REQUIRE(c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECKF(rlk_lock_new(c, bad[i]) == NULL, "lock '%s' accepted", bad[i]);
        CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);
        CHECK_STR_CONTAINS(rlk_errstr(c), "hash tag");
        CHECK(rlk_latch_new(c, bad[i]) == NULL);
        CHECK(rlk_semaphore_new(c, bad[i]) == NULL);
        CHECK(rlk_rwlock_new(c, bad[i]) == NULL);
    }
    {
        /* A tagged latch name: Redisson's channel redisson_countdownlatch__channel__{NAME}
         * hashes on "cl:latch{t1", the key on "t1": refused before any call, saying why. */
        const char *name = "cl:latch{t1}", *chan = "redisson_countdownlatch__channel__{cl:latch{t1}}";
        rlk_latch *l;

        REQUIRE(rlk_key_slot(name, strlen(name)) != rlk_key_slot(chan, strlen(chan)));
        l = rlk_latch_new(c, name);
        CHECK(l == NULL);
        CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);
        CHECK_STR_CONTAINS(rlk_errstr(c), "cannot be used on a cluster");
        CHECK_STR_CONTAINS(rlk_errstr(c), chan);
        rlk_latch_free(l);
    }
    {
        /* An untagged name: key and channel share the name's slot. */
        rlk_latch *l = rlk_latch_new(c, "cl:latch");
        int set = 0;
        long long left = -1;

        REQUIRE(l);
        CHECK_STR_EQ(rlk_latch_channel(l), "redisson_countdownlatch__channel__{cl:latch}");
        CHECKF(rlk_latch_try_set_count(l, 1, &set) == RLK_OK && set, "%s", rlk_errstr(c));
        CHECKF(rlk_latch_count_down(l, &left) == RLK_OK && left == 0, "%s", rlk_errstr(c));
        rlk_latch_free(l);
    }
    rlk_free(c);
}

/* A slot moved behind the client's back: MOVED, followed; the map learns it. */
static void test_moved(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    int m[3], slot, dst;
    char name[64], addr[300], want[64];
    rlk_lock *l;

    REQUIRE(c);
    REQUIRE_INT_EQ(cl_masters(&cl, m), 3);
    cl_name_on(&cl, "cl:moved:", m[0], name, sizeof name);
    slot = rlk_key_slot(name, strlen(name));
    dst = m[1];
    REQUIRE(rlk_fx_cluster_move_slot(&cl, slot, m[0], dst, 15000) == 0);
    l = rlk_lock_new(c, name);
    REQUIRE(l);
    CHECKF(rlk_lock_try_lock(l, 0, 10000) == RLK_OK, "after the move: %s", rlk_errstr(c));
    CHECKF(rlk_lock_unlock(l) == RLK_OK, "%s", rlk_errstr(c));
    CHECK_INT_EQ(rlk_cluster_owner_addr(c, slot, addr, sizeof addr), 0);
    snprintf(want, sizeof want, "127.0.0.1:%d", cl.node[dst].port);
    CHECK_STR_EQ(addr, want);
    rlk_lock_free(l);
    REQUIRE(rlk_fx_cluster_move_slot(&cl, slot, dst, m[0], 15000) == 0);
    rlk_free(c);
}

typedef struct unlocker {
    rlk_lock *l;
    int rc;
    int lock;           /* 1: try_lock(l, 20 s, 20 s) instead of unlock */
} unlocker;

static void *unlock_main(void *arg)
{
    unlocker *u = arg;

    u->rc = u->lock ? rlk_lock_try_lock(u->l, 20000, 20000) : rlk_lock_unlock(u->l);
    return NULL;
}

/* During a migration (MIGRATING on the source, IMPORTING on the target,
 * the lock's key already moved) the reentrant lock's calls have several
 * keys (acquire: the lock, its waiter queue and reservation; release: those
 * and the channel), some of them missing: Redis answers ASK, then TRYAGAIN
 * on the target until the slot is handed over. A new lock and the release
 * of the moved one both retry and succeed once the migration ends. */
static void test_ask(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    int m[3], slot;
    char name[64], other[80];
    rlk_lock *l, *l2;

    REQUIRE(c);
    REQUIRE_INT_EQ(cl_masters(&cl, m), 3);
    cl_name_on(&cl, "cl:ask:", m[2], name, sizeof name);
    slot = rlk_key_slot(name, strlen(name));
    snprintf(other, sizeof other, "x{%s}", name);   /* the same slot */
    l = rlk_lock_new(c, name);
    l2 = rlk_lock_new(c, other);
    REQUIRE(l && l2);
    REQUIRE(rlk_lock_set_owner(l, "cl-ask-holder") == RLK_OK);    /* unlocked by another thread */
    REQUIRE(rlk_lock_set_owner(l2, "cl-ask-new") == RLK_OK);      /* locked by another thread */
    REQUIRE(rlk_lock_try_lock(l, 0, 20000) == RLK_OK);
    REQUIRE(rlk_fx_cluster_set_importing(&cl, slot, m[0], m[2]) == 0);
    REQUIRE(rlk_fx_cluster_set_migrating(&cl, slot, m[2], m[0]) == 0);
    CHECK(rlk_fx_cluster_migrate_keys(&cl, slot, m[2], m[0]) >= 1);
    {
        unlocker u = {l, -1, 0}, u2 = {l2, -1, 1};
        pthread_t t, t2;

        pthread_create(&t, NULL, unlock_main, &u);
        pthread_create(&t2, NULL, unlock_main, &u2);
        REQUIRE(rlk_fx_cluster_set_node(&cl, slot, m[0]) == 0);
        pthread_join(t, NULL);
        pthread_join(t2, NULL);
        CHECKF(u.rc == RLK_OK, "unlock of the moved lock: %d", u.rc);
        CHECKF(u2.rc == RLK_OK, "new lock during migration: %d", u2.rc);
    }
    CHECKF(rlk_lock_unlock(l2) == RLK_OK, "%s", rlk_errstr(c));
    REQUIRE(rlk_fx_cluster_move_slot(&cl, slot, m[0], m[2], 15000) == 0);
    rlk_lock_free(l);
    rlk_lock_free(l2);
    rlk_free(c);
}

int main(void)
{
    if (cl_start("cl_basic", &cl, 0, 3, url, sizeof url) != 0)
        return 1;
    RUN_TEST(test_url);
    RUN_TEST(test_slots);
    RUN_TEST(test_routed);
    RUN_TEST(test_crossslot);
    RUN_TEST(test_name_rule);
    RUN_TEST(test_moved);
    RUN_TEST(test_ask);
    rlk_fx_cluster_stop(&cl);
    return check_summary("cl_basic");
}
