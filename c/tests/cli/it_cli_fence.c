/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_fence.c - `rlk fence OP KEY ARG...` against a fixture server:
 * writes under `rlk lock --fenced NAME` taking the token and the fence from
 * the environment the lock gives its command, --px, a negative increment,
 * `check`; a stale token (the first holder's, after a second holder wrote)
 * refused with one line and exit 11, the value unchanged (the control: the
 * same write without the check lands); usage errors (no token, no fence,
 * --px on another op, a bad token), a cross-slot key (exit 4).
 *
 * Usage: it_cli_fence PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rlk_fx_server server;
static char url[128];

/* GET key as a string into buf ("" when missing). */
static const char *get_str(const char *key, char *buf, size_t len)
{
    return tk_str(&server, buf, len, "GET %s", key);
}

static long long get_ll(const char *key)
{
    char buf[64];

    return atoll(get_str(key, buf, sizeof buf));
}

static void test_under_lock(void)
{
    char want[256], buf[64];
    long long t, pttl;
    cli_result r = RUN("lock", "--fenced", "job", "--", "sh", "-c",
                       "\"$RLK_BIN\" fence set {job}:v first --px 60000 && "
                       "\"$RLK_BIN\" fence hset {job}:h f 1 g 2 && "
                       "\"$RLK_BIN\" fence incrby {job}:n -5 && "
                       "\"$RLK_BIN\" fence check");

    expect_status(&r, 0, "rlk lock --fenced job -- rlk fence ...");
    t = get_ll("redisson_lock_token:{job}");
    CHECK(t > 0);
    snprintf(want, sizeof want, "OK\n2\n-5\n%lld\n", t);
    CHECK_STR_EQ(r.out, want);
    CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);
    CHECK_INT_EQ(get_ll("{job}:fence"), t);            /* the fence {NAME}:fence, the lock's token */
    CHECK_STR_EQ(get_str("{job}:v", buf, sizeof buf), "first");
    pttl = tk_int(&server, "PTTL %s", "{job}:v");
    CHECKF(pttl > 0 && pttl <= 60000, "--px 60000: PTTL %lld", pttl);
    CHECK_INT_EQ(tk_int(&server, "HLEN %s", "{job}:h"), 2);
}

static void test_stale_refused(void)
{
    char err[256], cmd[512], tok[32], buf[64];
    long long t1, t2;
    cli_result r;

    r = RUN("lock", "--fenced", "stale", "--", "sh", "-c", "\"$RLK_BIN\" fence set {stale}:v one");
    expect_status(&r, 0, "first holder");
    cli_result_free(&r);
    t1 = get_ll("redisson_lock_token:{stale}");
    r = RUN("lock", "--fenced", "stale", "--", "sh", "-c", "\"$RLK_BIN\" fence set {stale}:v two");
    expect_status(&r, 0, "second holder");
    cli_result_free(&r);
    t2 = get_ll("redisson_lock_token:{stale}");
    REQUIRE(t2 > t1);
    /* The first holder, late, with its token and lock name in its environment. */
    snprintf(cmd, sizeof cmd,
             "RLK_FENCE_TOKEN=%lld RLK_LOCK_NAME=stale \"$RLK_BIN\" fence set {stale}:v late", t1);
    r = RUN("lock", "--fenced", "other", "--", "sh", "-c", cmd);
    expect_status(&r, 11, "stale write through rlk fence");
    snprintf(err, sizeof err, "rlk: fenced: token %lld is below the highest accepted %lld\n", t1, t2);
    CHECK_STR_EQ(r.err, err);
    CHECK_STR_EQ(r.out, "");
    cli_result_free(&r);
    CHECK_STR_EQ(get_str("{stale}:v", buf, sizeof buf), "two");
    CHECK_INT_EQ(get_ll("{stale}:fence"), t2);
    /* --token and --fence name them outright; also refused. */
    snprintf(tok, sizeof tok, "%lld", t1);
    r = RUN("fence", "--token", tok, "--fence", "{stale}:fence", "del", "{stale}:v");
    expect_status(&r, 11, "stale del with --token");
    CHECK_STR_EQ(r.err, err);
    cli_result_free(&r);
    CHECK_STR_EQ(get_str("{stale}:v", buf, sizeof buf), "two");
    /* The control: the same late write without the check lands. */
    CHECK(tk_command_ok(&server, "SET %s %s", "{stale}:v", "late") == 0);
    CHECK_STR_EQ(get_str("{stale}:v", buf, sizeof buf), "late");
    /* The current token again is accepted (the same holder writing twice). */
    snprintf(tok, sizeof tok, "%lld", t2);
    r = RUN("fence", "--token", tok, "--fence", "{stale}:fence", "set", "{stale}:v", "three");
    expect_status(&r, 0, "current token");
    CHECK_STR_EQ(r.out, "OK\n");
    cli_result_free(&r);
}

static void test_usage(void)
{
    cli_result r;

    r = RUN("fence", "--fence", "{u}:fence", "set", "{u}:v", "1");  /* no token */
    expect_status(&r, 2, "no token");
    expect_one_line_error(&r, "no token");
    cli_result_free(&r);
    r = RUN("fence", "--token", "5", "set", "{u}:v", "1");          /* no fence */
    expect_status(&r, 2, "no fence");
    cli_result_free(&r);
    r = RUN("fence", "--token", "0", "--fence", "{u}:fence", "set", "{u}:v", "1");
    expect_status(&r, 2, "token 0");
    cli_result_free(&r);
    r = RUN("fence", "--token", "5", "--fence", "{u}:fence", "--px", "10", "hset", "{u}:h", "f", "v");
    expect_status(&r, 2, "--px with hset");
    cli_result_free(&r);
    r = RUN("fence", "--token", "5", "--fence", "{u}:fence", "bogus", "{u}:v");
    expect_status(&r, 2, "unknown op");
    /* a usage error that names the operations, not a library function */
    expect_one_line_error(&r, "unknown op");
    CHECK_STR_CONTAINS(r.err, "rlk: unknown OP 'bogus': set, hset, del,");
    CHECKF(strstr(r.err, "rlk_") == NULL, "unknown op names an internal function: %s", r.err);
    cli_result_free(&r);
    r = RUN("fence", "--token", "5", "--fence", "{u}:fence", "bogus");   /* no KEY either */
    expect_status(&r, 2, "unknown op without a KEY");
    CHECK_STR_CONTAINS(r.err, "unknown OP 'bogus'");
    cli_result_free(&r);
    /* Too few words for the operation: a usage error before any call (was the script's
     * RLK_BADARG, exit 4). */
    {
        static const char *const few[][4] = {
            {"set", "{u}:v", NULL}, {"hset", "{u}:h", "f", NULL}, {"incrby", "{u}:n", NULL},
            {"xadd", "{u}:x", "*", "f"}, {"rpush", "{u}:l", NULL},
        };

        for (size_t k = 0; k < sizeof few / sizeof few[0]; k++) {
            r = RUN("fence", "--token", "5", "--fence", "{u}:fence", few[k][0], few[k][1],
                    few[k][2], few[k][3]);
            expect_status(&r, 2, few[k][0]);
            expect_one_line_error(&r, few[k][0]);
            CHECK_STR_CONTAINS(r.err, "missing arguments after KEY");
            cli_result_free(&r);
        }
    }
    r = RUN("fence", "--token", "5", "--fence", "{u}:fence", "del", "{u}:v", "{u}:w");
    expect_status(&r, 2, "del of two keys");
    CHECK_STR_CONTAINS(r.err, "del: too many arguments (rlk fence del KEY)");
    cli_result_free(&r);
    r = RUN("fence", "--token", "5", "--fence", "{u}:fence", "set", "u:v", "1");
    expect_status(&r, 4, "cross-slot key");
    CHECK_STR_CONTAINS(r.err, "RLK_CROSSSLOT");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_key_exists(&server, "{u}:fence"), 0);             /* nothing recorded */
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_under_lock);
    RUN_TEST(test_stale_refused);
    RUN_TEST(test_usage);
    cli_main_end(&server, 1);
    return check_summary("it_cli_fence");
}
