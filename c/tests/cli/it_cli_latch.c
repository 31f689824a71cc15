/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_latch.c - `rlk latch NAME set | count-down | await | count` against
 * a fixture server: outputs and exit codes, an await proven waiting
 * (subscribed to the latch channel) and released by count-downs from other
 * processes, await timing out, usage errors; expire / clear-expire / ttl
 * (outputs, exits, an await released when the TTL runs out).
 *
 * Usage: it_cli_latch PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#include <sys/wait.h>

static rlk_fx_server server;
static char url[128];

static void expect_out(const char *const *args, int code, const char *out, const char *err)
{
    cli_result r = cli_run(args);

    expect_status(&r, code, args[2] ? args[2] : args[1]);
    CHECK_STR_EQ(r.out, out);
    CHECK_STR_EQ(r.err, err);
    cli_result_free(&r);
}

#define OUT(code, out, err, ...) \
    expect_out((const char *const[]){__VA_ARGS__, NULL}, code, out, err)

static void test_set_count_down(void)
{
    OUT(0, "0\n", "", "latch", "l1", "count");
    OUT(0, "", "", "latch", "l1", "set", "2");
    OUT(1, "", "rlk: latch l1: armed already (count 2); not changed\n", "latch", "l1", "set", "5");
    OUT(0, "2\n", "", "latch", "l1", "count");
    OUT(0, "1\n", "", "latch", "l1", "count-down");
    OUT(0, "0\n", "", "latch", "l1", "count-down");
    OUT(0, "0\n", "", "latch", "l1", "count-down");    /* open: stays open */
    OUT(0, "", "", "latch", "l1", "await", "-w", "0");  /* open: at once */
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "l1"), 0);
    /* Options after the action, --url anywhere. */
    OUT(0, "", "", "latch", "--url", url, "l2", "set", "3");
    OUT(0, "3\n", "", "latch", "l2", "count", "--url", url);
}

/* Bounded poll until channel has a subscriber: 0, or -1. */
static int wait_subscribed(const char *channel, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    while (tk_numsub(&server, channel) < 1) {
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

/* An await subscribed before the count-downs, woken by the last one. */
static void test_await_released(void)
{
    long long t0;
    cli_proc p;
    cli_result r;
    int st;

    OUT(0, "", "", "latch", "l3", "set", "2");
    REQUIRE(START(&p, "latch", "l3", "await", "-w", "20") == 0);
    CHECKF(wait_subscribed("redisson_countdownlatch__channel__{l3}", 10000) == 0,
           "rlk latch await never subscribed to the latch channel");
    OUT(0, "1\n", "", "latch", "l3", "count-down");
    CHECKF(waitpid(p.pid, NULL, WNOHANG) == 0, "await ended while the count was 1");
    t0 = rlk_fx_now_ms();
    OUT(0, "0\n", "", "latch", "l3", "count-down");
    st = cli_wait(&p, 10000);
    r = cli_collect(&p, st, rlk_fx_now_ms() - t0);
    expect_status(&r, 0, "await released by the count-down");
    CHECK_STR_EQ(r.err, "");
    CHECK_STR_EQ(r.out, "");
    CHECKF(r.ms < 5000, "await ended %lld ms after the last count-down", r.ms);
    cli_result_free(&r);
}

static void test_await_timeout(void)
{
    cli_result r;

    OUT(0, "", "", "latch", "l4", "set", "2");
    r = RUN("latch", "l4", "await", "-w", "0.3");
    expect_status(&r, 1, "await, still armed");
    CHECK_STR_EQ(r.err, "rlk: latch l4: still armed after 0.3 s (count 2)\n");
    CHECKF(r.ms >= 300 && r.ms < 5000, "await -w 0.3 took %lld ms", r.ms);
    cli_result_free(&r);
    r = RUN("latch", "l4", "await", "--wait=0.1", "-E", "7");
    expect_status(&r, 7, "await -E 7");
    cli_result_free(&r);
}

/* expire, clear-expire, ttl: outputs and exits; an await asleep before the TTL was set ends
 * with exit 0 once it runs out. */
static void test_expiry(void)
{
    long long t0;
    cli_proc p;
    cli_result r;
    int st;

    OUT(0, "-2\n", "", "latch", "l5", "ttl");
    OUT(1, "", "rlk: latch l5: open (not armed); nothing changed\n", "latch", "l5", "expire", "5");
    OUT(0, "", "", "latch", "l5", "set", "2");
    OUT(0, "-1\n", "", "latch", "l5", "ttl");
    OUT(1, "", "rlk: latch l5: it has no time to live; nothing changed\n", "latch", "l5",
        "clear-expire");
    OUT(0, "", "", "latch", "l5", "expire", "60");
    CHECK(tk_int(&server, "PTTL %s", "l5") > 50000);
    OUT(0, "", "", "latch", "l5", "clear-expire");
    CHECK_INT_EQ(tk_int(&server, "PTTL %s", "l5"), -1);

    REQUIRE(START(&p, "latch", "l5", "await", "-w", "20") == 0);
    CHECKF(wait_subscribed("redisson_countdownlatch__channel__{l5}", 10000) == 0,
           "rlk latch await never subscribed to the latch channel");
    t0 = rlk_fx_now_ms();
    OUT(0, "", "", "latch", "l5", "expire", "0.3");
    st = cli_wait(&p, 10000);
    r = cli_collect(&p, st, rlk_fx_now_ms() - t0);
    expect_status(&r, 0, "await released by the latch's TTL");
    CHECK_STR_EQ(r.err, "");
    CHECKF(r.ms < 5000, "await ended %lld ms after expire 0.3", r.ms);
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "l5"), 0);
}

/* Runs args, expects exit 2, one error line containing needle. */
static void expect_usage(const char *const *args, const char *needle)
{
    cli_result r = cli_run(args);
    char what[200];

    snprintf(what, sizeof what, "rlk latch %s %s", args[1] ? args[1] : "",
             args[1] && args[2] ? args[2] : "");
    expect_status(&r, 2, what);
    expect_one_line_error(&r, what);
    CHECKF(strstr(r.err, needle) != NULL, "%s: stderr lacks \"%s\": %s", what, needle, r.err);
    cli_result_free(&r);
}

#define USAGE(needle, ...) expect_usage((const char *const[]){__VA_ARGS__, NULL}, needle)

static void test_usage(void)
{
    USAGE("missing the latch NAME", "latch");
    USAGE("missing the action", "latch", "u");
    USAGE("unknown action 'open'", "latch", "u", "open");
    USAGE("missing the COUNT", "latch", "u", "set");
    USAGE("set needs a whole number in 1..", "latch", "u", "set", "0");
    USAGE("set needs a whole number in 1..", "latch", "u", "set", "-3");
    USAGE("set needs a whole number in 1..", "latch", "u", "set", "x");
    USAGE("unexpected argument '4'", "latch", "u", "set", "3", "4");
    USAGE("-w applies to await only", "latch", "u", "count", "-w", "1");
    USAGE("option -w needs a number of seconds", "latch", "u", "await", "-w", "soon");
    USAGE("unknown option '--json'", "latch", "u", "count", "--json");
    USAGE("must not be empty", "latch", "", "count");
    USAGE("missing the SECONDS", "latch", "u", "expire");
    USAGE("the time to live must be at least 1 ms", "latch", "u", "expire", "0");
    USAGE("needs a number of seconds", "latch", "u", "expire", "soon");
    USAGE("unexpected argument 'x'", "latch", "u", "ttl", "x");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "u"), 0);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_set_count_down);
    RUN_TEST(test_await_released);
    RUN_TEST(test_await_timeout);
    RUN_TEST(test_expiry);
    RUN_TEST(test_usage);
    cli_main_end(&server, 1);
    return check_summary("it_cli_latch");
}
