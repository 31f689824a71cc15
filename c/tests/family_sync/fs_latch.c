/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fs_latch.c - the count-down latch (rlk_latch_*) against a real
 * redis-server:
 *   - every call and its replies, argument checks, a wrong-typed key, the
 *     channel name;
 *   - await: open already, running out, woken by delete, not woken for
 *     good by a stray message ("1", or a "0" while the count is above 0),
 *     several threads of one process all released by one count_down;
 *   - Redisson's channel for every name ({ in it or not): a raw subscriber on
 *     redisson_countdownlatch__channel__{NAME} hears rlk's messages, and a
 *     count-down done with raw commands in Redisson's layout wakes rlk's await;
 *   - a time to live (rlk_latch_expire, clear_expire, ttl): the calls and
 *     their checks; an await that began before the TTL was set returns
 *     RLK_OK when it runs out (nothing is published then: the awaiter
 *     bounds its sleep by the TTL, woken by expire's "1" to read it);
 *   - the invariant across processes: 4 processes x 3 threads await a
 *     latch of 5; each records when it was released; every release comes
 *     after the last count_down was sent (none earlier, none missing) and
 *     within a bounded latency after its reply.
 *
 * Child mode (argv[1]): await URL NAME THREADS.
 */
#include "check.h"
#include "holdlog.h"
#include "tk_util.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

#define LATENCY_MS 250      /* bound on a wake-up, with room for scheduling noise */

/* ------------------------------------------------------------ awaiting threads */

typedef struct awaiter {
    rlk_latch *latch;
    long long timeout_ms;
    int idx;
    int rc;
    long long done_ns;
    tk_latch *done;
    int say;                /* child: print "rel IDX RC NS" when released */
} awaiter;

static void *awaiter_main(void *arg)
{
    awaiter *a = arg;

    a->rc = rlk_latch_await(a->latch, a->timeout_ms);
    a->done_ns = rlk_fx_now_ns();
    if (a->say)
        tk_say("rel %d %d %lld", a->idx, a->rc, a->done_ns);
    if (a->done)
        tk_latch_add(a->done, 1);
    return NULL;
}

static int child_await(const char *curl, const char *name, int threads)
{
    rlk_client *c = tk_connect(curl, 0, threads);
    rlk_latch *l = c ? rlk_latch_new(c, name) : NULL;
    awaiter a[8];
    pthread_t t[8];
    char line[32];

    if (!l || threads > 8)
        return 2;
    tk_say("ready");
    if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0)
        return 2;
    for (int i = 0; i < threads; i++) {
        a[i] = (awaiter){l, 20000, i, -1, 0, NULL, 1};
        pthread_create(&t[i], NULL, awaiter_main, &a[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    rlk_latch_free(l);
    rlk_free(c);
    return 0;
}

static int child_main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "await") == 0)
        return child_await(argv[2], argv[3], atoi(argv[4]));
    fprintf(stderr, "fs_latch: unknown child mode\n");
    return 2;
}

/* ------------------------------------------------------------ calls */

static long long count_of(rlk_latch *l)
{
    long long n = -999;

    CHECK_INT_EQ(rlk_latch_count(l, &n), RLK_OK);
    return n;
}

static void test_calls(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_latch *l = c ? rlk_latch_new(c, "fs:l") : NULL;
    rlk_latch *tagged = c ? rlk_latch_new(c, "a{fs}") : NULL;
    long long left = -1;
    int set = -1, deleted = -1;

    REQUIRE(l && tagged);
    CHECK_STR_EQ(rlk_latch_name(l), "fs:l");
    CHECK_STR_EQ(rlk_latch_channel(l), "redisson_countdownlatch__channel__{fs:l}");
    /* A tagged name is braced again, as Redisson does (one server: the channel's slot does
     * not matter; a cluster refuses the name, cl_basic; docs/compat.md). */
    CHECK_STR_EQ(rlk_latch_channel(tagged), "redisson_countdownlatch__channel__{a{fs}}");
    CHECK(rlk_latch_new(c, NULL) == NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);

    CHECK_INT_EQ(count_of(l), 0);
    CHECK_INT_EQ(rlk_latch_await(l, 0), RLK_OK);           /* open */
    CHECK_INT_EQ(rlk_latch_count_down(l, &left), RLK_OK);  /* open: nothing to do */
    CHECK_INT_EQ(left, 0);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 3, &set), RLK_OK);
    CHECK_INT_EQ(set, 1);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 7, &set), RLK_OK);
    CHECK_INT_EQ(set, 0);
    CHECK_INT_EQ(count_of(l), 3);
    CHECK_INT_EQ(rlk_latch_await(l, 0), RLK_ERR_BUSY);
    CHECK_STR_CONTAINS(rlk_errstr(c), "count still above 0");
    CHECK_INT_EQ(rlk_latch_count_down(l, &left), RLK_OK);
    CHECK_INT_EQ(left, 2);
    CHECK_INT_EQ(rlk_latch_count_down(l, &left), RLK_OK);
    CHECK_INT_EQ(left, 1);
    CHECK_INT_EQ(rlk_latch_count_down(l, &left), RLK_OK);
    CHECK_INT_EQ(left, 0);
    CHECK_INT_EQ(count_of(l), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "fs:l"), 0);
    CHECK_INT_EQ(rlk_latch_delete(l, &deleted), RLK_OK);
    CHECK_INT_EQ(deleted, 0);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 1, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_latch_delete(l, &deleted), RLK_OK);
    CHECK_INT_EQ(deleted, 1);

    CHECK_INT_EQ(rlk_latch_try_set_count(l, 0, NULL), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "count 0 is not in 1..");
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 1000000000001LL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_latch_count(l, NULL), RLK_ERR_ARG);
    CHECK(tk_command_ok(&srv, "LPUSH fs:l x") == 0);
    CHECK_INT_EQ(rlk_latch_count_down(l, NULL), RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(rlk_errstr(c), "RLK_WRONGTYPE");
    CHECK_INT_EQ(rlk_latch_await(l, 1000), RLK_ERR_SCRIPT);
    CHECK(tk_command_ok(&srv, "DEL fs:l") == 0);
    rlk_latch_free(tagged);
    rlk_latch_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ await in one process */

static void test_await_runs_out(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_latch *l = c ? rlk_latch_new(c, "fs:out") : NULL;
    long long t0, elapsed;

    REQUIRE(l);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 1, NULL), RLK_OK);
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_latch_await(l, 300), RLK_ERR_BUSY);
    elapsed = rlk_fx_now_ms() - t0;
    CHECKF(elapsed >= 300 && elapsed <= 300 + LATENCY_MS, "gave up after %lld ms, timeout 300 ms "
           "(longest scheduling gap %lld ms%s)", elapsed, tk_stall_max_gap_ms(&stall),
           tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_latch_delete(l, NULL), RLK_OK);
    rlk_latch_free(l);
    rlk_free(c);
}

static void test_stray_messages_and_delete(void)
{
    rlk_client *c = tk_connect(url, 0, 3);
    rlk_latch *l = c ? rlk_latch_new(c, "fs:stray") : NULL;
    const char *chan = "redisson_countdownlatch__channel__{fs:stray}";
    tk_latch done;
    awaiter a;
    pthread_t t;
    long long t_del, latency;

    REQUIRE(l);
    tk_latch_init(&done);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 2, NULL), RLK_OK);
    a = (awaiter){l, 10000, 0, -1, 0, &done, 0};
    pthread_create(&t, NULL, awaiter_main, &a);
    CHECK(tk_wait_numsub(&srv, chan, 1, 5000) == 0);
    /* Messages that do not open the latch wake the awaiter, which looks and waits on. */
    CHECK(tk_command_ok(&srv, "PUBLISH %s 1", chan) == 0);
    CHECK(tk_command_ok(&srv, "PUBLISH %s 0", chan) == 0);
    CHECK(tk_command_ok(&srv, "PUBLISH %s garbage", chan) == 0);
    CHECK_INT_EQ(rlk_latch_count_down(l, NULL), RLK_OK);           /* 2 -> 1: no message */
    CHECK_INT_EQ(tk_latch_wait(&done, 1, 200), 0);
    tk_stall_reset(&stall);
    t_del = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_latch_delete(l, NULL), RLK_OK);               /* opens it: "0" */
    tk_latch_wait(&done, 1, 10000);
    pthread_join(t, NULL);
    latency = (a.done_ns - t_del) / 1000000;
    CHECK_INT_EQ(a.rc, RLK_OK);
    CHECKF(latency <= LATENCY_MS, "released %lld ms after the delete (longest scheduling gap "
           "%lld ms%s)", latency, tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    CHECK(tk_wait_numsub_at_most(&srv, chan, 0, 5000) == 0);     /* unsubscribed */
    tk_latch_destroy(&done);
    rlk_latch_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ Redisson's channel */

/* A raw subscriber (hiredis, as a Redisson client's connection would be) on chan. */
static redisContext *raw_subscribe(const char *chan)
{
    redisContext *sub = rlk_fx_connect(&srv);
    redisReply *r;

    if (!sub)
        return NULL;
    r = redisCommand(sub, "SUBSCRIBE %s", chan);
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        redisFree(sub);
        return NULL;
    }
    freeReplyObject(r);
    redisSetTimeout(sub, (struct timeval){10, 0});
    return sub;
}

/* The next message on sub: 0 with its text in buf, -1 on a timeout or anything else. */
static int raw_message(redisContext *sub, const char *chan, char *buf, size_t len)
{
    void *p = NULL;
    redisReply *r;
    int rc = -1;

    if (redisGetReply(sub, &p) != REDIS_OK || !p)
        return -1;
    r = p;
    if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 && strcmp(r->element[0]->str, "message") == 0 &&
        strcmp(r->element[1]->str, chan) == 0) {
        snprintf(buf, len, "%s", r->element[2]->str);
        rc = 0;
    }
    freeReplyObject(r);
    return rc;
}

/* Both ways, for a plain name and names with a hash tag (the channel is Redisson's
 * ..._channel__{x{t}C2}, not ..._channel__x{t}C2, which rlk once published on). */
static void test_redisson_channel(void)
{
    static const char *const names[] = {"fs:rl", "x{t}C2", "{fs}rl", "a{b}c{d}"};
    rlk_client *c = tk_connect(url, 0, 2);

    REQUIRE(c);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char chan[256], msg[32] = "";
        rlk_latch *l = rlk_latch_new(c, names[i]);
        redisContext *sub;
        awaiter a;
        pthread_t t;
        tk_latch done;
        long long left = -1;

        snprintf(chan, sizeof chan, "redisson_countdownlatch__channel__{%s}", names[i]);
        REQUIREF(l != NULL, "%s: %s", names[i], rlk_errstr(c));
        CHECK_STR_EQ(rlk_latch_channel(l), chan);
        /* rlk counts down, a Redisson-style subscriber hears "1" (armed) then "0" (open). */
        sub = raw_subscribe(chan);
        REQUIREF(sub != NULL, "%s: SUBSCRIBE %s", names[i], chan);
        CHECK_INT_EQ(rlk_latch_try_set_count(l, 1, NULL), RLK_OK);
        CHECKF(raw_message(sub, chan, msg, sizeof msg) == 0 && strcmp(msg, "1") == 0,
               "%s: the subscriber on %s heard \"%s\" after try_set_count", names[i], chan, msg);
        CHECK_INT_EQ(rlk_latch_count_down(l, &left), RLK_OK);
        CHECK_INT_EQ(left, 0);
        msg[0] = '\0';
        CHECKF(raw_message(sub, chan, msg, sizeof msg) == 0 && strcmp(msg, "0") == 0,
               "%s: the subscriber on %s heard \"%s\" after count_down", names[i], chan, msg);
        redisFree(sub);
        /* Redisson's layout, by raw commands: SET NAME 1 and PUBLISH 1 (trySetCount), then
         * DECR, DEL at 0 and PUBLISH 0 on Redisson's channel (countDown). rlk's await has no
         * other way to learn the count changed (a latch's wait has no bound): it returns
         * RLK_OK only if it heard the "0", else RLK_ERR_BUSY after 20 s. */
        CHECK(tk_command_ok(&srv, "SET %s 1", names[i]) == 0);
        CHECK(tk_command_ok(&srv, "PUBLISH %s 1", chan) == 0);
        tk_latch_init(&done);
        a = (awaiter){l, 20000, 0, -1, 0, &done, 0};
        pthread_create(&t, NULL, awaiter_main, &a);
        CHECK(tk_wait_numsub(&srv, chan, 1, 10000) == 0);
        CHECK(tk_command_ok(&srv, "DECR %s", names[i]) == 0);
        CHECK(tk_command_ok(&srv, "DEL %s", names[i]) == 0);
        CHECK(tk_command_ok(&srv, "PUBLISH %s 0", chan) == 0);
        tk_latch_wait(&done, 1, 30000);
        pthread_join(t, NULL);
        CHECKF(a.rc == RLK_OK, "%s: rlk's await after a Redisson-style count-down on %s: %d (%s)",
               names[i], chan, a.rc, rlk_errstr(c));
        tk_latch_destroy(&done);
        rlk_latch_free(l);
    }
    rlk_free(c);
}

#define LOCAL_AWAITERS 6

/* "0" gives one wake permit per client; each released thread passes it on. */
static void test_all_local_awaiters_released(void)
{
    rlk_client *c = tk_connect(url, 0, LOCAL_AWAITERS + 1);
    rlk_latch *l = c ? rlk_latch_new(c, "fs:local") : NULL;
    awaiter a[LOCAL_AWAITERS];
    pthread_t t[LOCAL_AWAITERS];
    tk_latch done;
    long long t_send, worst = 0;
    int ok = 0;

    REQUIRE(l);
    tk_latch_init(&done);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 1, NULL), RLK_OK);
    for (int i = 0; i < LOCAL_AWAITERS; i++) {
        a[i] = (awaiter){l, 10000, i, -1, 0, &done, 0};
        pthread_create(&t[i], NULL, awaiter_main, &a[i]);
    }
    CHECK(tk_wait_numsub(&srv, "redisson_countdownlatch__channel__{fs:local}", 1, 5000) == 0);
    CHECK_INT_EQ(tk_latch_wait(&done, 1, 100), 0);
    tk_stall_reset(&stall);
    t_send = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_latch_count_down(l, NULL), RLK_OK);
    CHECK_INT_EQ(tk_latch_wait(&done, LOCAL_AWAITERS, 10000), LOCAL_AWAITERS);
    for (int i = 0; i < LOCAL_AWAITERS; i++) {
        pthread_join(t[i], NULL);
        ok += a[i].rc == RLK_OK;
        if (a[i].done_ns - t_send > worst)
            worst = a[i].done_ns - t_send;
    }
    printf("  %d awaiting threads of one client: all released within %.1f ms of the count_down\n",
           LOCAL_AWAITERS, worst / 1e6);
    CHECK_INT_EQ(ok, LOCAL_AWAITERS);
    /* The permit goes from thread to thread (one wake-up and one count read each), so the
     * bound is one wake-up's per thread; a lost permit would leave a thread asleep until its
     * 10 s timeout, far above it. */
    CHECKF(worst / 1000000 <= LATENCY_MS * LOCAL_AWAITERS, "the last was released after %lld ms (longest "
           "scheduling gap %lld ms%s)", worst / 1000000, tk_stall_max_gap_ms(&stall),
           tk_stall_note(&stall));
    tk_latch_destroy(&done);
    rlk_latch_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ invariant across processes */

#define PROCS 4
#define THREADS 3
#define COUNT 5

/* 1 when some child has written something (a release) already. */
static int any_output(tk_child *kids, int n)
{
    for (int p = 0; p < n; p++) {
        struct pollfd pfd = {kids[p].out_fd, POLLIN, 0};

        if (kids[p].len > 0 || poll(&pfd, 1, 0) > 0)
            return 1;
    }
    return 0;
}

/* Counts down COUNT times; returns the send time of the last one. Before
 * each, no awaiter may have been released. */
static long long count_down_all(rlk_latch *l, tk_child *kids, long long *reply_ns)
{
    long long sent = 0, left = -1;

    for (int i = 0; i < COUNT; i++) {
        if (i > 0)
            rlk_fx_sleep_ms(20);    /* spacing, so that an early release would show */
        CHECKF(!any_output(kids, PROCS), "an awaiter was released at count %d", COUNT - i);
        sent = rlk_fx_now_ns();
        CHECK_INT_EQ(rlk_latch_count_down(l, &left), RLK_OK);
        *reply_ns = rlk_fx_now_ns();
        CHECK_INT_EQ(left, COUNT - 1 - i);
    }
    return sent;
}

static void check_releases(tk_child *kids, long long sent, long long reply)
{
    char line[128];
    long long worst = 0;
    int got = 0, early = 0, late = 0;

    for (int p = 0; p < PROCS; p++) {
        for (int i = 0; i < THREADS; i++) {
            int idx, rc;
            long long ns;

            if (tk_child_read_line(&kids[p], line, sizeof line, 10000) != 0 ||
                sscanf(line, "rel %d %d %lld", &idx, &rc, &ns) != 3 || rc != RLK_OK)
                continue;
            got++;
            early += ns < sent;
            late += ns - reply > LATENCY_MS * 1000000LL;
            if (ns - reply > worst)
                worst = ns - reply;
        }
        CHECKF(tk_child_wait(&kids[p], 10000) == 0, "awaiter process %d did not exit cleanly", p);
    }
    printf("  %d processes x %d threads awaiting a latch of %d: %d released, none before the last "
           "count_down; the last %.1f ms after its reply\n", PROCS, THREADS, COUNT, got,
           worst / 1e6);
    CHECK_INT_EQ(got, PROCS * THREADS);
    CHECK_INT_EQ(early, 0);
    CHECKF(late == 0, "%d released more than %d ms after the count reached 0 (worst %lld ms; "
           "longest scheduling gap %lld ms%s)", late, LATENCY_MS, worst / 1000000,
           tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
}

static void test_invariant_procs(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_latch *l = c ? rlk_latch_new(c, "fs:inv") : NULL;
    tk_child kids[PROCS];
    char line[32], threads[8];
    long long sent, reply = 0;
    int spawned = 0;

    REQUIRE(l);
    snprintf(threads, sizeof threads, "%d", THREADS);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, COUNT, NULL), RLK_OK);
    for (int p = 0; p < PROCS; p++) {
        const char *args[] = {"await", url, "fs:inv", threads, NULL};

        if (tk_child_spawn(&kids[p], args) != 0)
            break;
        spawned++;
    }
    REQUIRE(spawned == PROCS);
    for (int p = 0; p < PROCS; p++)
        CHECKF(tk_child_read_line(&kids[p], line, sizeof line, 15000) == 0 &&
               strcmp(line, "ready") == 0, "child %d did not get ready", p);
    tk_children_send(kids, PROCS, "go");
    /* Every process subscribed (one subscription per client). */
    CHECK(tk_wait_numsub(&srv, "redisson_countdownlatch__channel__{fs:inv}", PROCS, 10000) == 0);
    tk_stall_reset(&stall);
    sent = count_down_all(l, kids, &reply);
    check_releases(kids, sent, reply);
    for (int p = 0; p < PROCS; p++)
        tk_child_kill(&kids[p]);
    rlk_latch_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ time to live */

static void test_expiry_calls(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_latch *l = c ? rlk_latch_new(c, "fs:ttl") : NULL;
    long long ttl = 0;
    int set = -1, cleared = -1;

    REQUIRE(l);
    CHECK_INT_EQ(rlk_latch_ttl(l, &ttl), RLK_OK);
    CHECK_INT_EQ(ttl, -2);                                  /* open: no key */
    CHECK_INT_EQ(rlk_latch_expire(l, 60000, &set), RLK_OK);
    CHECK_INT_EQ(set, 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "fs:ttl"), 0);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 2, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_latch_ttl(l, &ttl), RLK_OK);
    CHECK_INT_EQ(ttl, -1);
    CHECK_INT_EQ(rlk_latch_expire(l, 60000, &set), RLK_OK);
    CHECK_INT_EQ(set, 1);
    CHECK_INT_EQ(rlk_latch_ttl(l, &ttl), RLK_OK);
    CHECKF(ttl > 50000 && ttl <= 60000, "ttl %lld after expire 60000", ttl);
    ttl = tk_int(&srv, "PTTL fs:ttl");
    CHECKF(ttl > 50000 && ttl <= 60000, "PTTL %lld after expire 60000", ttl);
    CHECK_INT_EQ(rlk_latch_count_down(l, NULL), RLK_OK);   /* keeps the TTL */
    CHECK(tk_int(&srv, "PTTL fs:ttl") > 50000);
    CHECK_INT_EQ(rlk_latch_clear_expire(l, &cleared), RLK_OK);
    CHECK_INT_EQ(cleared, 1);
    CHECK_INT_EQ(tk_int(&srv, "PTTL fs:ttl"), -1);
    CHECK_INT_EQ(rlk_latch_clear_expire(l, &cleared), RLK_OK);
    CHECK_INT_EQ(cleared, 0);

    /* Bad input: refused before any call, nothing changed. */
    CHECK_INT_EQ(rlk_latch_expire(l, 0, &set), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "ttl_ms 0 is not in 1..");
    CHECK_INT_EQ(rlk_latch_expire(l, 1000000000001LL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_latch_ttl(l, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(tk_int(&srv, "PTTL fs:ttl"), -1);
    CHECK_INT_EQ(count_of(l), 1);
    CHECK(tk_command_ok(&srv, "DEL fs:ttl") == 0);
    CHECK(tk_command_ok(&srv, "HSET fs:ttl f 1") == 0);
    CHECK_INT_EQ(rlk_latch_expire(l, 1000, NULL), RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(rlk_errstr(c), "RLK_WRONGTYPE");
    CHECK_INT_EQ(rlk_latch_ttl(l, &ttl), RLK_ERR_SCRIPT);
    CHECK_INT_EQ(tk_int(&srv, "PTTL fs:ttl"), -1);
    CHECK(tk_command_ok(&srv, "DEL fs:ttl") == 0);
    rlk_latch_free(l);
    rlk_free(c);
}

/* An awaiter asleep before the TTL existed (no bound, nothing will be
 * published when the key expires) still returns RLK_OK once it runs out:
 * expire's "1" wakes it, it reads the TTL and sleeps no longer. */
static void test_await_released_by_expiry(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_latch *l = c ? rlk_latch_new(c, "fs:ttlwait") : NULL;
    tk_latch done;
    awaiter a;
    pthread_t t;
    long long t0, elapsed;

    REQUIRE(l);
    tk_latch_init(&done);
    CHECK_INT_EQ(rlk_latch_try_set_count(l, 3, NULL), RLK_OK);
    a = (awaiter){l, 20000, 0, -1, 0, &done, 0};
    pthread_create(&t, NULL, awaiter_main, &a);
    CHECK_INT_EQ(tk_wait_numsub(&srv, rlk_latch_channel(l), 1, 5000), 0);  /* it is asleep */
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_latch_expire(l, 400, NULL), RLK_OK);
    CHECK_INT_EQ(tk_latch_wait(&done, 1, 10000), 1);
    pthread_join(t, NULL);
    elapsed = rlk_fx_now_ms() - t0;
    CHECK_INT_EQ(a.rc, RLK_OK);
    CHECKF(elapsed <= 400 + LATENCY_MS, "released %lld ms after a TTL of 400 ms "
           "(longest scheduling gap %lld ms%s)", elapsed, tk_stall_max_gap_ms(&stall),
           tk_stall_note(&stall));
    CHECK_INT_EQ(tk_key_exists(&srv, "fs:ttlwait"), 0);
    tk_latch_destroy(&done);
    rlk_latch_free(l);
    rlk_free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child_main(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    if (tk_suite_start("fs_latch", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_calls);
    RUN_TEST(test_await_runs_out);
    RUN_TEST(test_stray_messages_and_delete);
    RUN_TEST(test_redisson_channel);
    RUN_TEST(test_all_local_awaiters_released);
    RUN_TEST(test_expiry_calls);
    RUN_TEST(test_await_released_by_expiry);
    RUN_TEST(test_invariant_procs);
    tk_suite_stop(&srv, &stall);
    return check_summary("fs_latch");
}
