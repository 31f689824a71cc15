/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fence_api.c - rlk_fence_check (compare-and-remember, no I/O) and rlk_fence_write (the fenced
 * writes of scripts/fence/ by name) against a real server started by the fixture.
 *
 *   check_unit       equal passes, lower refused with RLK_ERR_FENCED and the state unchanged,
 *                    bad arguments
 *   check_threads    8 threads, tokens taken in order from a counter and used after a random
 *                    pause, each check and its write under one mutex (the atomicity the call
 *                    asks of its caller): the writes the resource kept never go back; stale ones
 *                    refused (counted, > 0). Control: the same run with the check outside the
 *                    mutex (check, pause, write) must let a lower token land after a higher one.
 *   write_ops        every op through rlk_fence_write: reply, recorded token, stale refusal with
 *                    *highest and nothing changed, bad arguments refused before any call
 *   write_with_lock  tokens from rlk_fenced_lock: the newer holder's writes pass, the older
 *                    holder's (its lease gone) are refused
 *   write_on_replica a fenced write that reaches a replica: RLK_ERR_READONLY, nothing changed
 */
#include "check.h"
#include "fixture.h"
#include "tk_util.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

static void test_check_unit(void)
{
    rlk_fence_state st = RLK_FENCE_STATE_INIT;

    CHECK_INT_EQ(st.highest, 0);
    CHECK_INT_EQ(rlk_fence_check(&st, 5), RLK_OK);
    CHECK_INT_EQ(rlk_fence_check(&st, 5), RLK_OK);          /* the same holder again */
    CHECK_INT_EQ(st.highest, 5);
    CHECK_INT_EQ(rlk_fence_check(&st, 4), RLK_ERR_FENCED);
    CHECK_INT_EQ(rlk_fence_check(&st, 1), RLK_ERR_FENCED);
    CHECK_INT_EQ(st.highest, 5);
    CHECK_INT_EQ(rlk_fence_check(&st, 7), RLK_OK);
    CHECK_INT_EQ(st.highest, 7);
    CHECK_INT_EQ(rlk_fence_check(&st, 0), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_check(NULL, 9), RLK_ERR_ARG);
    CHECK_INT_EQ(st.highest, 7);
    CHECK_INT_EQ(rlk_fence_check(&st, UINT64_MAX), RLK_OK);
    CHECK(st.highest == UINT64_MAX);
    CHECK_INT_EQ(rlk_fence_check(&st, UINT64_MAX - 1), RLK_ERR_FENCED);
    CHECK_STR_EQ(rlk_strerror(RLK_ERR_FENCED), "RLK_ERR_FENCED");
}

/* ------------------------------------------------------------ threads */

#define THREADS 8
#define PER_THREAD 300

typedef struct resource {
    pthread_mutex_t mu;
    rlk_fence_state st;
    uint64_t log[THREADS * PER_THREAD]; /* the tokens of the writes kept, in order */
    int n;
    uint64_t next_token;                /* the "lock service": tokens in issue order */
    int refused;
    int unsafe;                         /* the control: check, pause, then write */
} resource;

static void pause_us(unsigned *seed, int max_us)
{
    struct timespec ts = {0, (long)(rand_r(seed) % (unsigned)max_us) * 1000};
    nanosleep(&ts, NULL);
}

static void *writer(void *arg)
{
    resource *res = arg;
    unsigned seed = (unsigned)(uintptr_t)&seed;

    for (int i = 0; i < PER_THREAD; i++) {
        uint64_t token = __atomic_add_fetch(&res->next_token, 1, __ATOMIC_SEQ_CST);
        int rc;

        pause_us(&seed, 200); /* a holder paused between taking its token and writing */
        if (!res->unsafe) {
            pthread_mutex_lock(&res->mu);
            rc = rlk_fence_check(&res->st, token);
            if (rc == RLK_OK)
                res->log[res->n++] = token;
            else
                res->refused++;
            pthread_mutex_unlock(&res->mu);
        } else {
            pthread_mutex_lock(&res->mu);
            rc = rlk_fence_check(&res->st, token);
            pthread_mutex_unlock(&res->mu);
            pause_us(&seed, 50); /* the write is a separate step: another check runs between */
            pthread_mutex_lock(&res->mu);
            if (rc == RLK_OK)
                res->log[res->n++] = token;
            else
                res->refused++;
            pthread_mutex_unlock(&res->mu);
        }
    }
    return NULL;
}

/* Runs the threads; returns the number of kept writes whose token is below an earlier kept one. */
static int run_writers(resource *res, int unsafe)
{
    pthread_t t[THREADS];
    int back = 0;
    uint64_t max = 0;

    memset(res, 0, sizeof *res);
    pthread_mutex_init(&res->mu, NULL);
    res->unsafe = unsafe;
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, writer, res);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < res->n; i++) {
        if (res->log[i] < max)
            back++;
        if (res->log[i] > max)
            max = res->log[i];
    }
    pthread_mutex_destroy(&res->mu);
    return back;
}

static void test_check_threads(void)
{
    static resource res;
    int back;

    back = run_writers(&res, 0);
    printf("check_threads: %d writes kept, %d stale refused, %d kept below an earlier one\n", res.n,
           res.refused, back);
    CHECK_INT_EQ(back, 0);
    CHECK_INT_EQ(res.n + res.refused, THREADS * PER_THREAD);
    CHECK(res.refused > 0);
    back = run_writers(&res, 1);
    printf("check_threads control (check and write not one step): %d kept below an earlier one "
           "(must be > 0)\n", back);
    CHECK(back > 0);
}

/* ------------------------------------------------------------ Redis */

static redisReply *cmd(rlk_client *c, const char *a0, const char *a1, const char *a2)
{
    const char *argv[3] = {a0, a1, a2};
    redisReply *r = NULL;
    int argc = a2 ? 3 : a1 ? 2 : 1;

    if (rlk_command(c, argc, argv, NULL, &r) != RLK_OK)
        return NULL;
    return r;
}

/* The string value of key (GET), or "" when missing; into buf. */
static const char *get(rlk_client *c, const char *key, char *buf, size_t len)
{
    redisReply *r = cmd(c, "GET", key, NULL);

    snprintf(buf, len, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
    if (r)
        freeReplyObject(r);
    return buf;
}

static long long int_reply(redisReply *r)
{
    return r && r->type == REDIS_REPLY_INTEGER ? r->integer : -999;
}

#define FENCE "{acct}:fence"
#define DATA "{acct}:data"

static void test_write_ops(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    redisReply *r = NULL, *x;
    uint64_t highest = 1;
    char buf[64];
    int rc;

    REQUIRE(c != NULL);
    x = cmd(c, "DEL", FENCE, DATA);
    if (x)
        freeReplyObject(x);

    {
        const char *a[] = {"v1", "PX", "60000"};
        rc = rlk_fence_write(c, "set", FENCE, DATA, 20, 3, a, NULL, &highest, &r);
        CHECKF(rc == RLK_OK && r && r->type == REDIS_REPLY_STATUS, "set: %s %s", rlk_strerror(rc), rlk_errstr(c));
        CHECK(highest == 0);
        if (r)
            freeReplyObject(r);
        CHECK_STR_EQ(get(c, FENCE, buf, sizeof buf), "20");
        CHECK_STR_EQ(get(c, DATA, buf, sizeof buf), "v1");
    }
    {
        const char *a[] = {"v2"};
        rc = rlk_fence_write(c, "set", FENCE, DATA, 20, 1, a, NULL, NULL, NULL); /* equal: passes */
        CHECKF(rc == RLK_OK, "set equal: %s %s", rlk_strerror(rc), rlk_errstr(c));
        CHECK_STR_EQ(get(c, DATA, buf, sizeof buf), "v2");
        a[0] = "stale";
        rc = rlk_fence_write(c, "set", FENCE, DATA, 19, 1, a, NULL, &highest, &r);
        CHECK_INT_EQ(rc, RLK_ERR_FENCED);
        CHECK(highest == 20);
        CHECK(r == NULL);
        CHECK_STR_CONTAINS(rlk_errstr(c), "RLK_FENCED 20");
        CHECK_STR_EQ(get(c, DATA, buf, sizeof buf), "v2");
        CHECK_STR_EQ(get(c, FENCE, buf, sizeof buf), "20");
    }
    {
        const char *a[] = {"5"};
        x = cmd(c, "DEL", "{acct}:n", NULL);
        if (x)
            freeReplyObject(x);
        rc = rlk_fence_write(c, "incrby", FENCE, "{acct}:n", 21, 1, a, NULL, NULL, &r);
        CHECKF(rc == RLK_OK && int_reply(r) == 5, "incrby: %s %s", rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
        rc = rlk_fence_write(c, "incrby", FENCE, "{acct}:n", 20, 1, a, NULL, &highest, NULL);
        CHECK_INT_EQ(rc, RLK_ERR_FENCED);
        CHECK(highest == 21);
        CHECK_STR_EQ(get(c, "{acct}:n", buf, sizeof buf), "5");
    }
    {
        const char *a[] = {"f", "v", "g", "w"};
        rc = rlk_fence_write(c, "hset", FENCE, "{acct}:h", 21, 4, a, NULL, NULL, &r);
        CHECKF(rc == RLK_OK && int_reply(r) == 2, "hset: %s %s", rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
    }
    {
        const char *a[] = {"a", "b"};
        rc = rlk_fence_write(c, "rpush", FENCE, "{acct}:l", 21, 2, a, NULL, NULL, &r);
        CHECKF(rc == RLK_OK && int_reply(r) == 2, "rpush: %s %s", rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
        rc = rlk_fence_write(c, "lpush", FENCE, "{acct}:l", 21, 1, a, NULL, NULL, &r);
        CHECKF(rc == RLK_OK && int_reply(r) == 3, "lpush: %s %s", rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
    }
    {
        const char *a[] = {"7-1", "f", "v"};
        size_t lens[] = {3, 1, 1};
        x = cmd(c, "DEL", "{acct}:s", NULL);
        if (x)
            freeReplyObject(x);
        rc = rlk_fence_write(c, "xadd", FENCE, "{acct}:s", 21, 3, a, lens, NULL, &r);
        CHECKF(rc == RLK_OK && r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "7-1") == 0, "xadd: %s %s",
               rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
        rc = rlk_fence_write(c, "xadd", FENCE, "{acct}:s", 22, 3, a, lens, NULL, &r); /* 7-1 again */
        CHECK_INT_EQ(rc, RLK_ERR_SCRIPT);
        CHECK_STR_PREFIX(rlk_errstr(c), "RLK_CMDERR");
        CHECK_STR_EQ(get(c, FENCE, buf, sizeof buf), "21"); /* a failed command records nothing */
    }
    {
        const char *a[] = {"100"};
        rc = rlk_fence_write(c, "expire", FENCE, DATA, 21, 1, a, NULL, NULL, &r);
        CHECKF(rc == RLK_OK && int_reply(r) == 1, "expire: %s %s", rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
        a[0] = "100000";
        rc = rlk_fence_write(c, "pexpire", FENCE, DATA, 21, 1, a, NULL, NULL, &r);
        CHECKF(rc == RLK_OK && int_reply(r) == 1, "pexpire: %s %s", rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
    }
    rc = rlk_fence_write(c, "check", FENCE, NULL, 30, 0, NULL, NULL, NULL, &r);
    CHECKF(rc == RLK_OK && int_reply(r) == 21, "check: %s %s", rlk_strerror(rc), rlk_errstr(c));
    if (r)
        freeReplyObject(r);
    rc = rlk_fence_write(c, "del", FENCE, DATA, 29, 0, NULL, NULL, &highest, NULL);
    CHECK_INT_EQ(rc, RLK_ERR_FENCED);
    CHECK(highest == 30);
    CHECK_STR_EQ(get(c, DATA, buf, sizeof buf), "v2");
    rc = rlk_fence_write(c, "del", FENCE, DATA, 30, 0, NULL, NULL, NULL, &r);
    CHECKF(rc == RLK_OK && int_reply(r) == 1, "del: %s %s", rlk_strerror(rc), rlk_errstr(c));
    if (r)
        freeReplyObject(r);

    /* Refused before any call, or by the script. */
    CHECK_INT_EQ(rlk_fence_write(c, "get", FENCE, DATA, 30, 0, NULL, NULL, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(c, NULL, FENCE, DATA, 30, 0, NULL, NULL, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(c, "del", FENCE, DATA, 0, 0, NULL, NULL, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(c, "del", FENCE, DATA, 9007199254740991ULL, 0, NULL, NULL, NULL, NULL),
                 RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(c, "del", FENCE, NULL, 30, 0, NULL, NULL, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(c, "check", FENCE, DATA, 30, 0, NULL, NULL, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(c, "set", FENCE, DATA, 30, 1, NULL, NULL, NULL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(NULL, "del", FENCE, DATA, 30, 0, NULL, NULL, NULL, NULL), RLK_ERR_ARG);
    rc = rlk_fence_write(c, "del", FENCE, "{other}:data", 30, 0, NULL, NULL, NULL, NULL);
    CHECK_INT_EQ(rc, RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(rlk_errstr(c), "RLK_CROSSSLOT");
    rc = rlk_fence_write(c, "set", FENCE, DATA, 30, 0, NULL, NULL, NULL, NULL); /* SET without a value */
    CHECK_INT_EQ(rc, RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(rlk_errstr(c), "RLK_BADARG");
    CHECK_STR_EQ(get(c, FENCE, buf, sizeof buf), "30");
    rlk_free(c);
}

static void test_write_with_lock(void)
{
    rlk_client *a = tk_connect(url, 0, 2), *b = tk_connect(url, 0, 2);
    rlk_fenced *fa = NULL, *fb = NULL;
    long long ta = 0, tb = 0;
    uint64_t highest = 0;
    const char *v[] = {"from A"};
    char buf[64];
    int released = 0, rc;

    REQUIRE(a != NULL && b != NULL);
    fa = rlk_fenced_new(a, "{ledger}");
    fb = rlk_fenced_new(b, "{ledger}");
    REQUIRE(fa && fb);
    REQUIRE_INT_EQ(rlk_fenced_lock(fa, 30000, &ta), RLK_OK);
    rc = rlk_fence_write(a, "set", "{ledger}:fence", "{ledger}:balance", (uint64_t)ta, 1, v, NULL, NULL, NULL);
    CHECKF(rc == RLK_OK, "A's write: %s %s", rlk_strerror(rc), rlk_errstr(a));
    /* A's lease is gone (as after a pause past it): B takes the lock and writes. */
    CHECK_INT_EQ(rlk_fenced_force_unlock(fb, &released), RLK_OK);
    REQUIRE_INT_EQ(rlk_fenced_lock(fb, 30000, &tb), RLK_OK);
    CHECK(tb > ta);
    v[0] = "from B";
    rc = rlk_fence_write(b, "set", "{ledger}:fence", "{ledger}:balance", (uint64_t)tb, 1, v, NULL, NULL, NULL);
    CHECKF(rc == RLK_OK, "B's write: %s %s", rlk_strerror(rc), rlk_errstr(b));
    v[0] = "late A";
    rc = rlk_fence_write(a, "set", "{ledger}:fence", "{ledger}:balance", (uint64_t)ta, 1, v, NULL, &highest, NULL);
    CHECK_INT_EQ(rc, RLK_ERR_FENCED);
    CHECK(highest == (uint64_t)tb);
    CHECK_STR_EQ(get(b, "{ledger}:balance", buf, sizeof buf), "from B");
    CHECK_INT_EQ(rlk_fenced_unlock(fb), RLK_OK);
    rlk_fenced_free(fa);
    rlk_fenced_free(fb);
    rlk_free(a);
    rlk_free(b);
}

/* A fenced write that reaches a replica (a demoted master, as after a failover, before the client
 * heard of it): the replica refuses the data command inside the script, which changes nothing;
 * rlk_fence_write says RLK_ERR_READONLY, as for any write a replica refuses (through Sentinel the
 * client follows the switch and sends it once more to the new master), not RLK_ERR_SCRIPT. */
static void test_write_on_replica(void)
{
    rlk_client *c = tk_connect(url, 0, 1);
    const char *v[] = {"on the master"};
    char buf[64];
    int port = rlk_fx_refused_port(), rc;

    REQUIRE(c != NULL && port > 0);
    rc = rlk_fence_write(c, "set", "{rep}:fence", "{rep}:data", 10, 1, v, NULL, NULL, NULL);
    REQUIREF(rc == RLK_OK, "write on the master: %s %s", rlk_strerror(rc), rlk_errstr(c));
    /* A replica of a master that is not there: it keeps its data and answers reads. */
    REQUIRE(tk_command_ok(&srv, "REPLICAOF 127.0.0.1 %d", port) == 0);
    v[0] = "on the replica";
    rc = rlk_fence_write(c, "set", "{rep}:fence", "{rep}:data", 11, 1, v, NULL, NULL, NULL);
    CHECKF(rc == RLK_ERR_READONLY, "write on the replica: %s %s (expected RLK_ERR_READONLY)", rlk_strerror(rc),
           rlk_errstr(c));
    CHECK_STR_CONTAINS(rlk_errstr(c), "READONLY");
    CHECK(tk_command_ok(&srv, "REPLICAOF NO ONE") == 0);
    CHECK_STR_EQ(get(c, "{rep}:data", buf, sizeof buf), "on the master");
    CHECK_INT_EQ(tk_int(&srv, "GET {rep}:fence"), 10);     /* the token not recorded */
    rlk_free(c);
}

int main(void)
{
    RUN_TEST(test_check_unit);
    RUN_TEST(test_check_threads);
    if (tk_suite_start("fence_api", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_write_ops);
    RUN_TEST(test_write_with_lock);
    RUN_TEST(test_write_on_replica);
    tk_suite_stop(&srv, &stall);
    return check_summary("fence_api");
}
