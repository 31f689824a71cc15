/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elect_api.c - rlk_elect_* against a real server: campaign, the term,
 * proclaim and resign only by the leader, observers (rlk_elect_leader,
 * rlk_elect_wait_change: woken by a resign, by a lease running out, a
 * timeout when nothing changes), a blocked candidate woken by the resign,
 * and leadership lost (the key deleted) reported by the lost-lock callback.
 * One term per leader: a second process with the same holder id
 * (rlk_elect_set_owner "web-0") that campaigns while the first leads is not
 * elected (the campaign adopts a live leadership only with the handle's own
 * secret); it gets a new, larger term once the first resigned. Control: on
 * the scripts before the secret, the second process got RLK_OK with the
 * first's term ("both lead in term ...").
 * Nor can that second process end the live leader's term: its elect/resign
 * (and elect/proclaim) carries its own secret and is refused (RLK_ERR_NOT_OWNER),
 * the first leads on. Control: on elect/resign v2 (no secret) the second
 * process's resign got RLK_OK and deleted the first's leadership.
 */
#include "check.h"
#include "fixture.h"
#include "tk_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static rlk_client *client(long long wd_lease)
{
    rlk_options o;
    rlk_client *c;

    memset(&o, 0, sizeof o);
    o.url = url;
    o.watchdog_lease_ms = wd_lease;
    c = rlk_connect(&o);
    if (!c || rlk_err(c) != RLK_OK) {
        fprintf(stderr, "connect %s failed\n", url);
        exit(1);
    }
    return c;
}

/* ---------------------------------------------------------------- resign in a thread */

typedef struct later {
    rlk_elect *e;
    int delay_ms;
    int rc;
} later;

static void *resign_later(void *arg)
{
    later *l = arg;

    usleep((useconds_t)l->delay_ms * 1000);
    l->rc = rlk_elect_resign(l->e);
    return NULL;
}

/* ---------------------------------------------------------------- tests */

static void test_campaign_proclaim_resign(void)
{
    rlk_client *a = client(0), *b = client(0);
    rlk_elect *ea = rlk_elect_new(a, "api"), *eb = rlk_elect_new(b, "api");
    long long ta = 0, tb = 0, t = 0;
    rlk_elect_info in;
    char big[70000];

    REQUIRE(ea && eb);
    CHECK_STR_EQ(rlk_elect_state_name(ea), "{api}:elect");
    CHECK_STR_EQ(rlk_elect_channel(ea), "rlk_elect__channel:{api}");
    CHECK_INT_EQ(rlk_elect_leader(eb, &in), RLK_OK);
    CHECK(in.leader == 0 && in.term == 0 && in.ttl_ms == -2 && strcmp(in.holder, "") == 0);
    rlk_elect_info_clear(&in);

    CHECK_INT_EQ(rlk_elect_campaign(ea, "host-a", 0, 0, &ta), RLK_OK);
    CHECK(ta > 0);
    CHECK_INT_EQ(rlk_elect_campaign(eb, "host-b", 0, 0, &tb), RLK_ERR_BUSY);
    CHECK(tb == 0);
    CHECK_INT_EQ(rlk_elect_campaign(ea, "again", 0, 0, &t), RLK_OK);   /* leads: its term */
    CHECK(t == ta);
    CHECK_INT_EQ(rlk_elect_term(ea, &t), RLK_OK);
    CHECK(t == ta);
    CHECK_INT_EQ(rlk_elect_term(eb, &t), RLK_ERR_NOT_OWNER);

    CHECK_INT_EQ(rlk_elect_leader(eb, &in), RLK_OK);
    CHECK(in.leader == 1 && in.term == ta && strcmp(in.value, "host-a") == 0 && in.ttl_ms > 0);
    {
        char owner[1100];
        CHECK_INT_EQ(rlk_elect_owner(ea, owner, sizeof owner), RLK_OK);
        CHECK_STR_EQ(in.holder, owner);
    }
    rlk_elect_info_clear(&in);

    CHECK_INT_EQ(rlk_elect_proclaim(eb, "usurper"), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_elect_proclaim(ea, "host-a:9090"), RLK_OK);
    CHECK_INT_EQ(rlk_elect_leader(eb, &in), RLK_OK);
    CHECK_STR_EQ(in.value, "host-a:9090");
    rlk_elect_info_clear(&in);
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_INT_EQ(rlk_elect_proclaim(ea, big), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_elect_campaign(eb, big, 0, 0, NULL), RLK_ERR_ARG);

    CHECK_INT_EQ(rlk_elect_resign(eb), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_elect_resign(ea), RLK_OK);
    CHECK_INT_EQ(rlk_elect_term(ea, &t), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_elect_proclaim(ea, "late"), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_elect_leader(eb, &in), RLK_OK);
    CHECK(in.leader == 0 && in.term == ta);
    rlk_elect_info_clear(&in);

    CHECK_INT_EQ(rlk_elect_campaign(eb, "host-b", 0, 0, &tb), RLK_OK);
    CHECK(tb > ta);
    CHECK_INT_EQ(rlk_elect_resign(eb), RLK_OK);
    rlk_elect_free(ea);
    rlk_elect_free(eb);
    rlk_free(a);
    rlk_free(b);
}

/* A candidate blocked on the leader is woken by its resign (pub/sub), long before the 30 s
 * lease; an observer waiting for a change sees the resign, then the new leader. */
static void test_waits_woken(void)
{
    rlk_client *a = client(0), *b = client(0), *o = client(0);
    rlk_elect *ea = rlk_elect_new(a, "wk"), *eb = rlk_elect_new(b, "wk"), *eo = rlk_elect_new(o, "wk");
    rlk_elect_info cur, next;
    long long ta, tb, t0, waited;
    later l;
    pthread_t th;

    REQUIRE(ea && eb && eo);
    REQUIRE(rlk_elect_campaign(ea, "a", 0, 0, &ta) == RLK_OK);
    /* Nothing changes: a timeout. */
    REQUIRE(rlk_elect_leader(eo, &cur) == RLK_OK);
    t0 = now_ms();
    CHECK_INT_EQ(rlk_elect_wait_change(eo, &cur, 300, &next), RLK_ERR_TIMEOUT);
    waited = now_ms() - t0;
    CHECKF(waited >= 290 && waited < 3000, "a wait of 300 ms took %lld ms", waited);
    /* The observer is woken by the resign. */
    l.e = ea;
    l.delay_ms = 200;
    REQUIRE(pthread_create(&th, NULL, resign_later, &l) == 0);
    t0 = now_ms();
    CHECK_INT_EQ(rlk_elect_wait_change(eo, &cur, 10000, &next), RLK_OK);
    waited = now_ms() - t0;
    pthread_join(th, NULL);
    CHECK_INT_EQ(l.rc, RLK_OK);
    CHECKF(waited < 3000, "the observer saw the resign after %lld ms", waited);
    CHECK(next.leader == 0 && next.term == ta);
    rlk_elect_info_clear(&cur);
    cur = next;
    /* A blocked candidate is woken by a resign. */
    REQUIRE(rlk_elect_campaign(ea, "a2", 0, 0, &ta) == RLK_OK);
    l.delay_ms = 300;
    REQUIRE(pthread_create(&th, NULL, resign_later, &l) == 0);
    t0 = now_ms();
    CHECK_INT_EQ(rlk_elect_campaign(eb, "b", 20000, 0, &tb), RLK_OK);
    waited = now_ms() - t0;
    pthread_join(th, NULL);
    printf("  a blocked candidate elected %lld ms after it began (the leader resigned at 300 ms)\n",
           waited);
    CHECKF(waited >= 250 && waited < 3000, "campaign returned after %lld ms", waited);
    CHECK(tb > ta);
    CHECK_INT_EQ(rlk_elect_wait_change(eo, &cur, 5000, &next), RLK_OK);
    CHECK(next.leader == 1 && next.term == tb && strcmp(next.value, "b") == 0);
    rlk_elect_info_clear(&cur);
    rlk_elect_info_clear(&next);
    CHECK_INT_EQ(rlk_elect_resign(eb), RLK_OK);
    rlk_elect_free(ea);
    rlk_elect_free(eb);
    rlk_elect_free(eo);
    rlk_free(a);
    rlk_free(b);
    rlk_free(o);
}

/* A fixed lease that runs out publishes nothing: the observer still sees it at its end. */
static void test_lease_end_seen(void)
{
    rlk_client *a = client(0), *o = client(0);
    rlk_elect *ea = rlk_elect_new(a, "ls"), *eo = rlk_elect_new(o, "ls");
    rlk_elect_info cur, next;
    long long ta, t0, waited;

    REQUIRE(ea && eo);
    REQUIRE(rlk_elect_campaign(ea, "a", 0, 500, &ta) == RLK_OK);
    REQUIRE(rlk_elect_leader(eo, &cur) == RLK_OK && cur.leader == 1);
    t0 = now_ms();
    CHECK_INT_EQ(rlk_elect_wait_change(eo, &cur, 10000, &next), RLK_OK);
    waited = now_ms() - t0;
    printf("  a 500 ms lease's end seen by the observer after %lld ms\n", waited);
    CHECKF(waited >= 300 && waited < 2500, "lease end seen after %lld ms", waited);
    CHECK(next.leader == 0 && next.term == ta);
    rlk_elect_info_clear(&cur);
    rlk_elect_info_clear(&next);
    rlk_elect_free(ea);
    rlk_elect_free(eo);
    rlk_free(a);
    rlk_free(o);
}

static atomic_int lost_reason;

static void on_lost(const char *name, const char *owner, int reason, void *ud)
{
    (void)owner;
    (void)ud;
    if (strcmp(name, "gone") == 0)
        atomic_store(&lost_reason, reason);
}

/* The leader's lock deleted under it: the watchdog's next renewal reports RLK_LOST_GONE
 * through the lost-lock callback, and the leader's term, proclaim and resign are refused. */
static void test_lost_reported(void)
{
    rlk_client *a = client(900);
    rlk_elect *ea = rlk_elect_new(a, "gone");
    long long ta, t, t0;
    redisReply *r;

    REQUIRE(ea);
    rlk_set_lost_callback(a, on_lost, NULL);
    REQUIRE(rlk_elect_campaign(ea, "a", 0, 0, &ta) == RLK_OK);
    r = rlk_fx_command(&srv, "DEL gone");
    REQUIRE(r);
    freeReplyObject(r);
    t0 = now_ms();
    while (atomic_load(&lost_reason) == 0 && now_ms() - t0 < 5000)
        usleep(5000);
    printf("  lost reported %lld ms after the key was deleted (renewals every 300 ms)\n",
           now_ms() - t0);
    CHECK_INT_EQ(atomic_load(&lost_reason), RLK_LOST_GONE);
    CHECK_INT_EQ(rlk_elect_term(ea, &t), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_elect_proclaim(ea, "x"), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_elect_resign(ea), RLK_ERR_NOT_OWNER);
    rlk_elect_free(ea);
    rlk_free(a);
}

/* ---------------------------------------------------------------- one term per leader */

/* The second process (this program again, argv "campaign-as URL NAME OWNER"):
 * one campaign without waiting; prints "<rc> <term>". */
static int campaign_as(const char *u, const char *name, const char *owner)
{
    rlk_client *c = rlk_connect_url(u);
    rlk_elect *e = c ? rlk_elect_new(c, name) : NULL;
    long long term = 0;
    int rc;

    if (!e || rlk_elect_set_owner(e, owner) != RLK_OK)
        return 3;
    rc = rlk_elect_campaign(e, "second", 0, 30000, &term);
    printf("%d %lld\n", rc, term);
    fflush(stdout);
    /* the handle (and a leadership, if any) goes with the process: its lease runs out */
    return 0;
}

/* The second process's resign (argv "resign-as URL NAME OWNER"): a handle with the same
 * holder id that never led resigns; prints "<rc> 0". */
static int resign_as(const char *u, const char *name, const char *owner)
{
    rlk_client *c = rlk_connect_url(u);
    rlk_elect *e = c ? rlk_elect_new(c, name) : NULL;

    if (!e || rlk_elect_set_owner(e, owner) != RLK_OK)
        return 3;
    printf("%d 0\n", rlk_elect_resign(e));
    fflush(stdout);
    return 0;
}

/* Runs campaign_as (op "campaign-as") or resign_as ("resign-as") in a new process; *term its
 * term. The rc, or -100. */
static int second_process_op(const char *op, const char *name, const char *owner,
                             long long *term)
{
    char cmd[512], line[128];
    FILE *p;
    int rc = -100;

    snprintf(cmd, sizeof cmd, "/proc/%d/exe %s '%s' '%s' '%s'", (int)getpid(), op, url, name,
             owner);
    if (!(p = popen(cmd, "r")))
        return rc;
    if (fgets(line, sizeof line, p) && sscanf(line, "%d %lld", &rc, term) != 2)
        rc = -100;
    pclose(p);
    return rc;
}

static int second_process(const char *name, const char *owner, long long *term)
{
    return second_process_op("campaign-as", name, owner, term);
}

/* A second process with the leader's holder id cannot end (elect/resign) the live leader's
 * term: only the incarnation that leads resigns (its handle's secret). Before elect/resign
 * checked the secret, the second process's resign deleted the lock: RLK_OK, and the first no
 * longer led (its proclaim refused, a third candidate elected in its place). */
static void test_same_owner_resign(void)
{
    rlk_client *a = client(0);
    rlk_elect *e = rlk_elect_new(a, "el:same-resign");
    rlk_elect_info now;
    long long t1 = 0, t2 = 0;
    int rc;

    REQUIRE(e);
    REQUIRE(rlk_elect_set_owner(e, "web-1") == RLK_OK);
    REQUIRE(rlk_elect_campaign(e, "first", 0, 0, &t1) == RLK_OK);
    rc = second_process_op("resign-as", "el:same-resign", "web-1", &t2);
    CHECKF(rc != -100, "the second process did not answer");
    CHECKF(rc == RLK_ERR_NOT_OWNER, "the second process's resign: %d, expected RLK_ERR_NOT_OWNER "
           "(it ended the live leader's term)", rc);
    /* the first still leads, in its term, on the server too */
    memset(&now, 0, sizeof now);
    CHECK_INT_EQ(rlk_elect_leader(e, &now), RLK_OK);
    CHECKF(now.leader && now.term == t1 && now.holder && strcmp(now.holder, "web-1") == 0 &&
           now.value_len == 5 && memcmp(now.value, "first", 5) == 0,
           "after the second process's resign: leader %d term %lld (first's %lld)", now.leader,
           now.term, t1);
    rlk_elect_info_clear(&now);
    CHECK_INT_EQ(rlk_elect_proclaim(e, "first-2"), RLK_OK);
    /* nobody else is elected while it leads */
    rc = second_process("el:same-resign", "web-2", &t2);
    CHECK_INT_EQ(rc, RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_elect_resign(e), RLK_OK);
    rlk_elect_free(e);
    rlk_free(a);
}

static void test_same_owner_one_term(void)
{
    rlk_client *a = client(0);
    rlk_elect *e = rlk_elect_new(a, "el:same-owner");
    long long t1 = 0, t2 = 0, t3 = 0;
    int rc;

    REQUIRE(e);
    REQUIRE(rlk_elect_set_owner(e, "web-0") == RLK_OK);
    REQUIRE(rlk_elect_campaign(e, "first", 0, 0, &t1) == RLK_OK);
    /* the same holder id in another process, while the first leads: not elected */
    rc = second_process("el:same-owner", "web-0", &t2);
    CHECKF(rc != -100, "the second process did not answer");
    CHECKF(!(rc == RLK_OK && t2 == t1), "both lead in term %lld", t1);
    CHECKF(rc == RLK_ERR_BUSY, "second campaign: %d (term %lld), expected RLK_ERR_BUSY", rc, t2);
    /* the first still leads, in its term, and says so */
    CHECK_INT_EQ(rlk_elect_term(e, &t3), RLK_OK);
    CHECK(t3 == t1);
    CHECK_INT_EQ(rlk_elect_proclaim(e, "first-2"), RLK_OK);
    /* once it resigned, the second process is elected with a new, larger term */
    CHECK_INT_EQ(rlk_elect_resign(e), RLK_OK);
    rc = second_process("el:same-owner", "web-0", &t2);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECKF(t2 > t1, "second term %lld after %lld", t2, t1);
    rlk_elect_free(e);
    rlk_free(a);
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "campaign-as") == 0)
        return campaign_as(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "resign-as") == 0)
        return resign_as(argv[2], argv[3], argv[4]);
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0)
        return 1;
    RUN_TEST(test_campaign_proclaim_resign);
    RUN_TEST(test_waits_woken);
    RUN_TEST(test_lease_end_seen);
    RUN_TEST(test_lost_reported);
    RUN_TEST(test_same_owner_one_term);
    RUN_TEST(test_same_owner_resign);
    rlk_fx_stop(&srv);
    return check_summary("elect_api");
}
