/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_fastmulti.c - `rlk fastmulti GROUP VALUE... -- COMMAND` against a
 * fixture server: the command runs with the values held (the group hash
 * has them, RLK_LOCK_* in its environment) and they are released after;
 * a run whose values overlap a held one is refused with -n (exit 1) and
 * waits with -w until the holder ends, one with disjoint values runs at
 * once beside it; usage errors.
 *
 * Usage: it_cli_fastmulti PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#include <sys/wait.h>

static rlk_fx_server server;
static char url[128];

static void test_runs_with_values_held(void)
{
    cli_result r = RUN("fastmulti", "seats", "a1", "a2", "--",
                       "sh", "-c", "echo \"$RLK_LOCK_NAME|$RLK_LOCK_KIND|$RLK_LOCK_VALUES\"; "
                       "[ -n \"$RLK_LOCK_OWNER\" ]");

    expect_status(&r, 0, "fastmulti seats a1 a2");
    CHECK_STR_EQ(r.out, "seats|fastmulti|a1 a2\n");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "seats"), 0);      /* released */
    r = RUN("fastmulti", "seats", "a1", "--", "sh", "-c", "exit 7");
    expect_status(&r, 7, "fastmulti exit code");
    cli_result_free(&r);
}

static void test_overlap_and_disjoint(void)
{
    const char *held = cli_path("held"), *go = cli_path("go");
    char script[600];
    cli_proc p;
    cli_result r;
    int st;

    /* The holder: says it holds, then waits (bounded) for the file go. */
    snprintf(script, sizeof script, "touch %s; i=0; while [ ! -e %s ] && [ $i -lt 400 ]; do "
             "sleep 0.025; i=$((i+1)); done", held, go);
    REQUIRE(START(&p, "fastmulti", "room", "b1", "b2", "--", "sh", "-c", script) == 0);
    CHECKF(cli_wait_file(held, 10000) == 0, "the holder never ran");
    CHECK_INT_EQ(tk_int(&server, "HEXISTS %s %s", "room", "b2"), 1);
    /* Overlapping (b2): refused at once with -n. */
    r = RUN("fastmulti", "room", "b2", "b3", "-n", "--", "true");
    expect_status(&r, 1, "fastmulti overlapping -n");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "HEXISTS %s %s", "room", "b3"), 0);  /* nothing taken */
    /* Disjoint (b3, b4): runs beside the holder. */
    r = RUN("fastmulti", "room", "b3", "b4", "-n", "--", "true");
    expect_status(&r, 0, "fastmulti disjoint -n");
    cli_result_free(&r);
    /* Overlapping with -w: waits for the holder's end. */
    {
        cli_proc w;
        int ws;

        long long deadline = rlk_fx_now_ms() + 10000;

        REQUIRE(START(&w, "fastmulti", "room", "b1", "-w", "20", "--", "true") == 0);
        /* Waiting: subscribed to the group's channel (bounded poll). */
        while (tk_numsub(&server, "redisson_lock__channel:{room}") < 1 &&
               rlk_fx_now_ms() < deadline)
            rlk_fx_sleep_ms(5);
        CHECKF(tk_numsub(&server, "redisson_lock__channel:{room}") >= 1,
               "the waiter never subscribed to the group's channel");
        CHECKF(waitpid(w.pid, NULL, WNOHANG) == 0, "the waiter ran while b1 was held");
        REQUIRE(cli_wait_file(held, 1000) == 0);
        {
            FILE *f = fopen(go, "w");

            if (f)
                fclose(f);
        }
        st = cli_wait(&p, 10000);
        r = cli_collect(&p, st, 0);
        expect_status(&r, 0, "the holder");
        cli_result_free(&r);
        ws = cli_wait(&w, 10000);
        r = cli_collect(&w, ws, 0);
        expect_status(&r, 0, "the waiter");
        cli_result_free(&r);
    }
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "room"), 0);
}

/* rlk unlock --force GROUP on a live group: every value and its holder's fields go through
 * fastmulti/force_release (the group's own force unlock, not a lock's), and the holding rlk
 * learns it at its next renewal: it stops its command and exits 6 (lock lost), well before the
 * command would have ended. */
static void test_force_unlock_group(void)
{
    const char *held = cli_path("gheld");
    char script[400];
    cli_proc p;
    cli_result r;
    long long t0;
    int st;

    /* The command runs up to 60 s: only the loss can end it sooner. */
    snprintf(script, sizeof script, "touch %s; i=0; while [ $i -lt 2400 ]; do sleep 0.025; "
             "i=$((i+1)); done", held);
    REQUIRE(START(&p, "fastmulti", "fgrp", "c1", "c2", "--watchdog-lease", "1500", "--", "sh",
                  "-c", script) == 0);
    REQUIRE(cli_wait_file(held, 10000) == 0);
    CHECK_INT_EQ(tk_int(&server, "HEXISTS %s %s", "fgrp", "c2"), 1);
    r = RUN("unlock", "--force", "fgrp");
    expect_status(&r, 0, "unlock --force on a group");
    CHECK_STR_CONTAINS(r.out, "fgrp: faster MultiLock group removed (force unlock)");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "fgrp"), 0);
    t0 = rlk_fx_now_ms();
    st = cli_wait(&p, 30000);
    r = cli_collect(&p, st, rlk_fx_now_ms() - t0);
    expect_status(&r, 6, "the group's holder after the force unlock");
    CHECKF(r.ms < 20000, "the holder learnt of it after %lld ms", r.ms);
    cli_result_free(&r);
}

static void expect_usage(const char *const *args, const char *needle)
{
    cli_result r = cli_run(args);

    expect_status(&r, 2, "usage");
    CHECKF(strstr(r.err, needle) != NULL, "stderr lacks \"%s\": %s", needle, r.err);
    cli_result_free(&r);
}

#define USAGE(needle, ...) expect_usage((const char *const[]){__VA_ARGS__, NULL}, needle)

static void test_usage(void)
{
    USAGE("missing the GROUP", "fastmulti");
    USAGE("missing the VALUEs", "fastmulti", "g", "--", "true");
    USAGE("without ':'", "fastmulti", "g", "a:b", "--", "true");
    USAGE("given twice", "fastmulti", "g", "a", "a", "--", "true");
    USAGE("missing '--'", "fastmulti", "g", "a");
    USAGE("unknown option", "fastmulti", "g", "a", "--bogus", "--", "true");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "g"), 0);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_runs_with_values_held);
    RUN_TEST(test_overlap_and_disjoint);
    RUN_TEST(test_force_unlock_group);
    RUN_TEST(test_usage);
    cli_main_end(&server, 1);
    return check_summary("it_cli_fastmulti");
}
