/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_cli.c - the rlk command on a Redis Cluster: scripts
 * load/verify per master (text and JSON), eval routed by its first key,
 * lock (every kind), semaphore, latch, inspect and unlock --force on names
 * owned by each master, --all across masters, --redlock refused; the
 * Functions library loaded and verified per master, locks in FCALL mode on
 * every master.
 * argv[1]: the rlk binary. One cluster for the whole program.
 */
#include "check.h"
#include "cl_util.h"
#include "cluster.h"
#include "tk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static rlk_fx_cluster cl;
static char url[512];
static const char *rlk_bin;
static int mst[3];

/* Runs "rlk ARGS" (a shell line; $U is the cluster URL) with stderr merged;
 * the output into out, returns the exit code (-1: did not run). */
static int run(char *out, size_t len, const char *args)
{
    char cmd[2048];
    FILE *p;
    size_t n = 0;
    int st;

    snprintf(cmd, sizeof cmd, "U='%s'; timeout 60 '%s' %s 2>&1", url, rlk_bin, args);
    p = popen(cmd, "r");
    if (!p)
        return -1;
    while (n + 1 < len && fgets(out + n, (int)(len - n), p))
        n += strlen(out + n);
    out[n] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int count_lines(const char *s, const char *prefix)
{
    int n = 0;

    for (const char *p = s; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        n += strncmp(p, prefix, strlen(prefix)) == 0;
    return n;
}

static void test_scripts(void)
{
    static char out[65536];
    redisReply *r;

    CHECK_INT_EQ(run(out, sizeof out, "scripts load --url \"$U\""), 0);
    r = rlk_fx_cluster_command(&cl, mst[1], "SCRIPT FLUSH");
    if (r)
        freeReplyObject(r);
    CHECK_INT_EQ(run(out, sizeof out, "scripts verify --url \"$U\""), 5);
    CHECKF(count_lines(out, "present") == 2 && count_lines(out, "MISSING") == 1,
           "verify after a flush of one master:\n%s", out);
    CHECK_STR_CONTAINS(out, "missing over 3 masters");
    CHECK_INT_EQ(run(out, sizeof out, "scripts load --url \"$U\""), 0);
    CHECKF(count_lines(out, "loaded") == 3, "load:\n%s", out);
    CHECK_INT_EQ(run(out, sizeof out, "scripts verify --url \"$U\""), 0);
    CHECKF(count_lines(out, "present") == 3, "verify:\n%s", out);
    CHECK_INT_EQ(run(out, sizeof out, "scripts verify --json --url \"$U\""), 0);
    CHECKF(strstr(out, "\"node\"") && strstr(out, "\"missing\": []"), "json:\n%s", out);
}

static void test_eval_and_kinds(void)
{
    static char out[16384];
    char args[512], n[64];

    for (int k = 0; k < 3; k++) {
        cl_name_on(&cl, "cli:eval:", mst[k], n, sizeof n);
        snprintf(args, sizeof args, "eval reentrant/acquire --key %s --key '{%s}:rlk_waiters' "
                 "--key '{%s}:rlk_next' --arg 30000 --arg o:1 --arg 0 --url \"$U\"", n, n, n);
        CHECKF(run(out, sizeof out, args) == 0, "eval on master %d: %s", k, out);
        snprintf(args, sizeof args, "inspect %s --url \"$U\"", n);
        CHECKF(run(out, sizeof out, args) == 0 && strstr(out, "o:1"), "inspect: %s", out);
        snprintf(args, sizeof args, "unlock --force %s --url \"$U\"", n);
        CHECKF(run(out, sizeof out, args) == 0, "unlock --force: %s", out);
        CHECKF(strstr(out, "removed") || strstr(out, "released"), "unlock --force: %s", out);
        snprintf(args, sizeof args, "lock %s --url \"$U\" -- true", n);
        CHECKF(run(out, sizeof out, args) == 0, "lock: %s", out);
        snprintf(args, sizeof args, "lock --write %s --url \"$U\" -- true", n);
        CHECKF(run(out, sizeof out, args) == 0, "lock --write: %s", out);
        cl_name_on(&cl, "cli:fair:", mst[k], n, sizeof n);
        snprintf(args, sizeof args, "lock --fair %s --url \"$U\" -- true", n);
        CHECKF(run(out, sizeof out, args) == 0, "lock --fair: %s", out);
        cl_name_on(&cl, "cli:fenced:", mst[k], n, sizeof n);
        snprintf(args, sizeof args, "lock --fenced %s --url \"$U\" -- sh -c "
                 "'test -n \"$RLK_FENCE_TOKEN\"'", n);
        CHECKF(run(out, sizeof out, args) == 0, "lock --fenced: %s", out);
        cl_name_on(&cl, "cli:sem:", mst[k], n, sizeof n);
        snprintf(args, sizeof args, "semaphore %s --permits 2 --url \"$U\" -- true", n);
        CHECKF(run(out, sizeof out, args) == 0, "semaphore: %s", out);
        cl_name_on(&cl, "cli:latch:", mst[k], n, sizeof n);
        snprintf(args, sizeof args, "latch %s set 1 --url \"$U\" && '%s' latch %s count-down "
                 "--url \"$U\" && '%s' latch %s await -w 5 --url \"$U\"", n, rlk_bin, n, rlk_bin, n);
        CHECKF(run(out, sizeof out, args) == 0, "latch: %s", out);
    }
}

/* rlk top on the cluster: every master is scanned; 30 locks spread over the slots,
 * one semaphore, one lock with a waiter's queue entry: the totals count them all. */
static void test_top(void)
{
    static char out[65536];
    char name[64], key[96];
    int per[3] = {0, 0, 0};

    for (int i = 0; i < 30; i++) {
        int k;
        redisReply *r;

        snprintf(name, sizeof name, "cli:top:%d", i);
        k = rlk_fx_cluster_key_owner(&cl, name);
        REQUIRE(k >= 0);
        r = rlk_fx_command(&cl.node[k], "HSET %s top-owner:%d 1", name, i);
        CHECK(r && r->type == REDIS_REPLY_INTEGER);
        if (r)
            freeReplyObject(r);
        for (int m = 0; m < 3; m++)
            per[m] += mst[m] == k;
    }
    CHECKF(per[0] && per[1] && per[2], "the 30 locks are not on every master: %d %d %d", per[0],
           per[1], per[2]);
    snprintf(key, sizeof key, "{cli:top:0}:rlk_waiters");
    {
        redisReply *r = rlk_fx_command(&cl.node[rlk_fx_cluster_key_owner(&cl, key)],
                                       "RPUSH %s 7", key);
        CHECK(r && r->type == REDIS_REPLY_INTEGER);
        if (r)
            freeReplyObject(r);
        r = rlk_fx_command(&cl.node[rlk_fx_cluster_key_owner(&cl, "cli:top:sem")],
                           "SET cli:top:sem 4");
        if (r)
            freeReplyObject(r);
    }
    CHECKF(run(out, sizeof out, "top --once --json --pattern 'cli:top:*' --limit 100 "
                                "--url \"$U\"") == 0, "top: %s", out);
    CHECKF(strstr(out, "\"totals\":{\"rows\":31,\"locks\":30,"), "top totals: %.600s", out);
    CHECKF(strstr(out, "\"semaphores\":1,"), "top semaphores: %.600s", out);
    CHECKF(strstr(out, "\"queued\":1,"), "top queued (rlk's queue of cli:top:0): %.600s", out);
    CHECKF(strstr(out, "\"owner\":\"top-owner:29\""), "a holder: %.600s", out);
    {
        const char *nodes = strstr(out, "\"nodes\":[");
        int commas = 0;

        for (const char *p = nodes; p && *p && *p != ']'; p++)
            commas += *p == ',';
        CHECKF(nodes && commas == 2, "top did not scan 3 masters: %.300s", out);
    }
    CHECKF(run(out, sizeof out, "top --once --pattern 'cli:top:*' --url \"$U\"") == 0 &&
           strstr(out, "(3 nodes)") && strstr(out, "cli:top:0"), "top text: %.600s", out);
}

/* A command on the master of key (hiredis format). */
static void on_owner(const char *key, const char *fmt, const char *a1, const char *a2)
{
    redisReply *r = rlk_fx_command(&cl.node[rlk_fx_cluster_key_owner(&cl, key)], fmt, a1, a2);

    CHECKF(r && r->type != REDIS_REPLY_ERROR, "%s: %s", fmt, r && r->str ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
}

/* The wait-for graph on a cluster (docs/deadlock.md): a fair-lock ABBA written as Redisson
 * writes it, the two names on two masters: rlk_waitgraph_read (every master scanned) and
 * rlk top find the cycle; with B's waiter gone (the control) one edge and no cycle. */
static void test_deadlock(void)
{
    static char out[65536];
    const char *u1 = "0c2f6a8e-1f4e-4a53-9a51-9d8e7bd0b1aa:11", *u2 = "7d3e1f00-1f4e-4a53-9a51-9d8e7bd0b1bb:22";
    char a[64], b[64], qa[96], qb[96];
    rlk_options o;
    rlk_client *c;
    rlk_waitgraph *g = NULL;

    cl_name_on(&cl, "cli:dl:a", mst[0], a, sizeof a);
    cl_name_on(&cl, "cli:dl:b", mst[1], b, sizeof b);
    snprintf(qa, sizeof qa, "redisson_lock_queue:{%s}", a);
    snprintf(qb, sizeof qb, "redisson_lock_queue:{%s}", b);
    on_owner(a, "HSET %s %s 1", a, u1);
    on_owner(qa, "RPUSH %s %s", qa, u2);
    on_owner(b, "HSET %s %s 1", b, u2);
    on_owner(qb, "RPUSH %s %s", qb, u1);
    rlk_options_init(&o);
    o.url = url;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECKF(rlk_waitgraph_read(c, "cli:dl:*", &g) == RLK_OK, "rlk_waitgraph_read: %s", rlk_errstr(c));
    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
    CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), 0);
    rlk_waitgraph_free(g);
    CHECKF(run(out, sizeof out, "top --once --json --pattern 'cli:dl:*' --url \"$U\"") == 0 &&
           strstr(out, "\"cycles\":[{\"by\":\"thread\""), "top: %.900s", out);
    CHECKF(run(out, sizeof out, "top --once --pattern 'cli:dl:*' --url \"$U\"") == 0 &&
           strstr(out, "DEADLOCK 1 of 1"), "top text: %.900s", out);
    on_owner(qb, "DEL %s%s", qb, "");
    g = NULL;
    CHECKF(rlk_waitgraph_read(c, "cli:dl:*", &g) == RLK_OK, "rlk_waitgraph_read: %s", rlk_errstr(c));
    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 1);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
    CHECKF(run(out, sizeof out, "top --once --pattern 'cli:dl:*' --url \"$U\"") == 0 &&
           !strstr(out, "DEADLOCK"), "top text (control): %.900s", out);
    rlk_free(c);
    on_owner(a, "DEL %s%s", a, "");
    on_owner(b, "DEL %s%s", b, "");
    on_owner(qa, "DEL %s%s", qa, "");
}

/* cmdstat_fcall calls= on master k (0 when none). */
static long long fcalls_on(int k)
{
    redisReply *r = rlk_fx_cluster_command(&cl, mst[k], "INFO commandstats");
    const char *p;
    long long n = 0;

    if (r && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, "cmdstat_fcall:calls=")))
        n = atoll(p + strlen("cmdstat_fcall:calls="));
    if (r)
        freeReplyObject(r);
    return n;
}

static void test_functions(void)
{
    static char out[16384];
    char args[512], n[64];
    long long before[3];

    CHECKF(run(out, sizeof out, "functions verify --url \"$U\"") == 5 &&
           count_lines(out, "MISSING") == 3, "verify before any load:\n%s", out);
    CHECKF(run(out, sizeof out, "functions load --url \"$U\"") == 0 &&
           count_lines(out, "loaded") == 3, "load:\n%s", out);
    CHECKF(run(out, sizeof out, "functions verify --url \"$U\"") == 0 &&
           count_lines(out, "identical") == 3, "verify:\n%s", out);
    CHECKF(run(out, sizeof out, "functions verify --json --url \"$U\"") == 0 &&
           count_lines(out, "{\"library\"") == 3, "verify --json:\n%s", out);
    for (int k = 0; k < 3; k++) {
        before[k] = fcalls_on(k);
        cl_name_on(&cl, "cli:fcall:", mst[k], n, sizeof n);
        snprintf(args, sizeof args, "lock --functions %s --url \"$U\" -- true", n);
        CHECKF(run(out, sizeof out, args) == 0, "lock --functions on master %d: %s", k, out);
        CHECKF(fcalls_on(k) >= before[k] + 2, "master %d: FCALL calls %lld -> %lld", k,
               before[k], fcalls_on(k));
    }
}

static void test_all_and_redlock(void)
{
    static char out[8192];
    char args[512], n[3][64];

    for (int k = 0; k < 3; k++)
        cl_name_on(&cl, "cli:all:", mst[k], n[k], sizeof n[k]);
    snprintf(args, sizeof args, "lock --all %s %s %s --url \"$U\" -- true", n[0], n[1], n[2]);
    CHECKF(run(out, sizeof out, args) == 0, "lock --all: %s", out);
    CHECK_INT_EQ(run(out, sizeof out, "lock 'a{b' --url \"$U\" -- true"), 2);
    CHECK_STR_CONTAINS(out, "hash tag");
    CHECK_INT_EQ(run(out, sizeof out, "unlock --force 'x}y' --url \"$U\""), 2);
    CHECK_INT_EQ(run(out, sizeof out, "inspect '{}' --url \"$U\""), 2);
    /* A tagged latch name: Redisson's channel ..._channel__{x{t}C2} is in another slot than
     * the key; refused before any write, saying why (docs/compat.md). */
    CHECK_INT_EQ(run(out, sizeof out, "latch 'x{t}C2' set 1 --url \"$U\""), 2);
    CHECK_STR_CONTAINS(out, "cannot be used on a cluster");
    CHECK_STR_CONTAINS(out, "redisson_countdownlatch__channel__{x{t}C2}");
    {
        redisReply *r = rlk_fx_cluster_command(&cl, rlk_fx_cluster_key_owner(&cl, "x{t}C2"),
                                               "EXISTS %s", "x{t}C2");
        CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
        if (r)
            freeReplyObject(r);
    }
    /* rlk check through a plain URL to a Redis 7 cluster node: one server to rlk, so PUBLISH,
     * where Redisson uses SPUBLISH: a warning with the way out. Through the cluster URL: ok. */
    {
        char plain[128], line[256];

        REQUIRE(rlk_fx_url(&cl.node[mst[0]], -1, plain, sizeof plain) == 0);
        snprintf(line, sizeof line, "check --url '%s'", plain);
        CHECK_INT_EQ(run(out, sizeof out, line), 7);
        CHECK_STR_CONTAINS(out, "warning  role");
        CHECK_STR_CONTAINS(out, "SPUBLISH");
        CHECK_STR_CONTAINS(out, "redis+cluster://");
        snprintf(line, sizeof line, "check --url '%s' --pubsub sharded", plain);
        run(out, sizeof out, line);
        CHECK_STR_CONTAINS(out, "ok       role         cluster node");
        run(out, sizeof out, "check --url \"$U\"");
        CHECK_STR_CONTAINS(out, "ok       role         cluster node");
    }
    CHECK(run(out, sizeof out, "lock --redlock \"$U\" cli:rl -- true") != 0);
    CHECKF(strstr(out, "not a Redis Cluster") != NULL, "--redlock with a cluster URL: %s", out);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: cl_cli RLK_BINARY\n");
        return 2;
    }
    rlk_bin = argv[1];
    unsetenv("RLK_URL");
    if (cl_start("cl_cli", &cl, 2, 3, url, sizeof url) != 0)
        return 1;
    if (cl_masters(&cl, mst) != 3) {
        rlk_fx_cluster_stop(&cl);
        return 1;
    }
    RUN_TEST(test_scripts);
    RUN_TEST(test_eval_and_kinds);
    RUN_TEST(test_all_and_redlock);
    RUN_TEST(test_functions);
    RUN_TEST(test_top);
    RUN_TEST(test_deadlock);
    rlk_fx_cluster_stop(&cl);
    return check_summary("cl_cli");
}
