/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_force_fixed.c - `rlk unlock --force NAME` reaches a holder with a fixed lease (-l) as
 * it reaches one with a renewed lease: its command gets SIGTERM within a few round trips, not at
 * the next periodic check of the hold nor when the fixed lease runs out.
 *
 * A fixed lease has no renewal that could find the lock gone; rlk checks the hold on the
 * server at every message on the lock's channel (a force unlock publishes one) and every third
 * of the lease (lock_check.c). Each case: `rlk ... -l 30000 NAME -- fault_child LOG
 * --exit-on-term` (it stamps "term PID NS", CLOCK_MONOTONIC, when SIGTERM comes), the force
 * unlock once the command runs, then the time from the force unlock's start to the stamp, and
 * rlk's exit 6. Without the check, the command got SIGTERM at the fixed lease's own deadline
 * (half the lease); with the check but not the channel, at its first periodic check, 10 s
 * after the acquire. The renewed lease (the default 30 s, renewed every 10 s) is measured
 * beside it, the same way.
 *
 * The bound, 3 s, is a third of the time the next periodic check or renewal would have taken:
 * the measured times (a few ms on a quiet machine) sit far below it, and so does a command of
 * a loaded machine (the force unlock is a process of its own, sanitizers slow its start: up to
 * 0.7 s seen), while a holder that missed the message is caught.
 *
 * Kinds: the reentrant lock, --spin, --non-reentrant, --read, --write, --fair,
 * --fair --non-reentrant, --fenced, rlk fastmulti, rlk elect.
 *
 * Usage: it_cli_force_fixed PATH_TO_RLK PATH_TO_FAULT_CHILD
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <stdio.h>
#include <unistd.h>

#define FORCE_BOUND_MS 3000     /* a third of the 10 s before the next check or renewal */

static rlk_fx_server server;
static char url[128];
static const char *child_bin;

/* The first "<word> PID NS" line's NS in log, or -1. */
static long long log_stamp(const char *log, const char *word)
{
    char *text = cli_slurp(log), *line = text;
    size_t len = strlen(word);
    long long ns = -1;

    while (line && *line) {
        long pid;

        if (strncmp(line, word, len) == 0 && line[len] == ' ' &&
            sscanf(line + len, " %ld %lld", &pid, &ns) == 2)
            break;
        ns = -1;
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    free(text);
    return ns;
}

/* Bounded poll until log has a "start" line: 0, or -1. */
static int wait_started(const char *log, long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;

    while (log_stamp(log, "start") < 0) {
        if (rlk_fx_now_ms() > until)
            return -1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

/* args: the rlk words before "--" (NULL-terminated); name: the key unlock --force removes. */
static void force_case(const char *label, const char *const *args, const char *name, int fixed)
{
    char log[400], what[200];
    const char *argv[24];
    long long t_force_ns, term_ns, term_ms;
    cli_proc p;
    cli_result r, u;
    int n = 0;

    snprintf(log, sizeof log, "%s.%s.log", cli_path(name), fixed ? "fixed" : "renewed");
    snprintf(what, sizeof what, "%s (%s lease)", label, fixed ? "fixed" : "renewed");
    for (int k = 0; args[k]; k++)
        argv[n++] = args[k];
    if (fixed) {
        argv[n++] = "-l";
        argv[n++] = "30000";
    }
    argv[n++] = "--";
    argv[n++] = child_bin;
    argv[n++] = log;
    argv[n++] = "--exit-on-term";
    argv[n++] = "--ms";
    argv[n++] = "20000";
    argv[n] = NULL;
    REQUIRE(cli_start(&p, argv) == 0);
    if (!CHECKF(wait_started(log, 10000) == 0, "%s: the command never started", what)) {
        r = cli_collect(&p, cli_wait(&p, 100), 0);
        cli_result_free(&r);
        return;
    }
    t_force_ns = rlk_fx_now_ns();
    u = RUN("unlock", "--force", name);
    expect_status(&u, 0, "unlock --force");
    CHECKF(strstr(u.out, "removed") != NULL, "%s: unlock --force removed nothing: %s", what, u.out);
    cli_result_free(&u);
    r = cli_collect(&p, cli_wait(&p, 20000), 0);
    expect_status(&r, 6, what);
    CHECK_STR_CONTAINS(r.err, " lost (");
    cli_result_free(&r);
    term_ns = log_stamp(log, "term");
    term_ms = term_ns > 0 ? (term_ns - t_force_ns) / 1000000 : -1;
    printf("  %s: SIGTERM %lld ms after the force unlock\n", what, term_ms);
    CHECKF(term_ns > 0 && term_ms < FORCE_BOUND_MS, "%s: the command got SIGTERM %lld ms after "
           "the force unlock (%s; bound %d ms)", what, term_ms,
           term_ns > 0 ? "too late" : "never: it ended otherwise", FORCE_BOUND_MS);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void test_lock(void)
{
    force_case("lock", ARGS("lock", "ff-lock"), "ff-lock", 0);
    force_case("lock", ARGS("lock", "ff-lock"), "ff-lock", 1);
}

static void test_spin(void)
{
    force_case("lock --spin", ARGS("lock", "--spin", "ff-spin"), "ff-spin", 1);
}

static void test_nonreentrant(void)
{
    force_case("lock --non-reentrant", ARGS("lock", "--non-reentrant", "ff-nr"), "ff-nr", 1);
}

static void test_read(void)
{
    force_case("lock --read", ARGS("lock", "--read", "ff-rd"), "ff-rd", 0);
    force_case("lock --read", ARGS("lock", "--read", "ff-rd"), "ff-rd", 1);
}

static void test_write(void)
{
    force_case("lock --write", ARGS("lock", "--write", "ff-wr"), "ff-wr", 1);
}

static void test_fair(void)
{
    force_case("lock --fair", ARGS("lock", "--fair", "ff-fair"), "ff-fair", 1);
}

static void test_fair_nonreentrant(void)
{
    force_case("lock --fair --non-reentrant", ARGS("lock", "--fair", "--non-reentrant", "ff-nrf"),
               "ff-nrf", 1);
}

static void test_fenced(void)
{
    force_case("lock --fenced", ARGS("lock", "--fenced", "ff-fen"), "ff-fen", 0);
    force_case("lock --fenced", ARGS("lock", "--fenced", "ff-fen"), "ff-fen", 1);
}

static void test_fastmulti(void)
{
    force_case("fastmulti", ARGS("fastmulti", "ff-fm", "a", "b"), "ff-fm", 0);
    force_case("fastmulti", ARGS("fastmulti", "ff-fm", "a", "b"), "ff-fm", 1);
}

static void test_elect(void)
{
    force_case("elect", ARGS("elect", "ff-el"), "ff-el", 0);
    force_case("elect", ARGS("elect", "ff-el"), "ff-el", 1);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    if (argc < 3) {
        fprintf(stderr, "usage: %s PATH_TO_RLK PATH_TO_FAULT_CHILD\n", argv[0]);
        cli_main_end(&server, 1);
        return 2;
    }
    child_bin = argv[2];
    RUN_TEST(test_lock);
    RUN_TEST(test_spin);
    RUN_TEST(test_nonreentrant);
    RUN_TEST(test_read);
    RUN_TEST(test_write);
    RUN_TEST(test_fair);
    RUN_TEST(test_fair_nonreentrant);
    RUN_TEST(test_fenced);
    RUN_TEST(test_fastmulti);
    RUN_TEST(test_elect);
    cli_main_end(&server, 1);
    return check_summary("it_cli_force_fixed");
}
