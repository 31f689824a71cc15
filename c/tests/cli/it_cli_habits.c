/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_habits.c - what users of flock, etcdctl and redis-cli try first.
 *
 *   - flock's -s, -x, --timeout, -c, -u, --nonblock: exit 2 with a one-line hint naming rlk's
 *     spelling (not a bare "unknown option"), nothing run;
 *   - `-n` means no waiting for `lock` and for `semaphore` alike; the size of a semaphore is
 *     --permits N; the old `semaphore NAME -n N` is still the size, with a warning; the size
 *     given twice is exit 2;
 *   - `rlk lock NAME --hold`: held (inspect sees the holder) until SIGTERM or SIGHUP, exit 0,
 *     released; --hold with a command is exit 2; started with SIGINT ignored (a script's
 *     `&`), SIGINT still ends it; a --hold whose lock is forced away exits 6 naming no command;
 *   - `rlk inspect` of a semaphore that rlk semaphore made (its kind marker is there) does not
 *     say it may be a latch.
 *
 * Usage: it_cli_habits PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <signal.h>
#include <unistd.h>

static rlk_fx_server server;
static char url[128];

static void test_flock_hints(void)
{
    static const struct { const char *opt, *hint; } cases[] = {
        {"-s", "--read"}, {"-x", "exclusive by default"}, {"--timeout=5", "-w SECONDS"},
        {"-c", "-- sh -c"}, {"-u", "rlk unlock --force"}, {"--nonblock", "-n (--no-wait)"},
    };
    const char *ran = cli_path("ran-flock");

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cli_result r = RUN("lock", "job", cases[k].opt, "--", "touch", ran);

        expect_status(&r, 2, cases[k].opt);
        expect_one_line_error(&r, cases[k].opt);
        CHECK_STR_CONTAINS(r.err, "rlk is not flock");
        CHECK_STR_CONTAINS(r.err, cases[k].hint);
        cli_result_free(&r);
    }
    CHECKF(access(ran, F_OK) != 0, "a flock option ran the command");
}

static void test_semaphore_n(void)
{
    cli_result r, h;
    cli_proc p;
    const char *ready = cli_path("sem-ready");

    /* -n: no waiting, as for lock. The one permit is held: -n gives up at once. */
    REQUIRE(START(&p, "semaphore", "sn", "--permits", "1", "--", "sh", "-c",
                  "touch \"$T/sem-ready\"; sleep 20") == 0);
    REQUIRE(cli_wait_file(ready, 10000) == 0);
    r = RUN("semaphore", "sn", "--permits", "1", "-n", "--", "true");
    expect_status(&r, 1, "semaphore -n on a full semaphore");
    CHECKF(r.ms < 3000, "semaphore -n waited %lld ms", r.ms);
    cli_result_free(&r);
    /* The old -n N: still the size, with a warning. */
    r = RUN("semaphore", "sn", "-n", "1", "-w", "0", "--", "true");
    expect_status(&r, 1, "semaphore -n 1 (old spelling) on a full semaphore");
    CHECK_STR_CONTAINS(r.err, "warning: semaphore -n 1: the size is --permits 1");
    cli_result_free(&r);
    kill(p.pid, SIGTERM);
    h = cli_collect(&p, cli_wait(&p, 10000), 0);
    cli_result_free(&h);
    r = RUN("semaphore", "sn", "-n", "1", "--permits", "1", "--", "true");
    expect_status(&r, 2, "the size twice");
    CHECK_STR_CONTAINS(r.err, "the size is given already");
    cli_result_free(&r);
    r = RUN("semaphore", "sn", "-n", "--", "true");
    expect_status(&r, 2, "semaphore -n without --permits");
    CHECK_STR_CONTAINS(r.err, "missing --permits N");
    cli_result_free(&r);
}

static void test_hold(void)
{
    /* Ctrl-C (SIGINT), SIGTERM, SIGHUP: released, exit 0 (docs/cli.md --hold). */
    static const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
    static const char *const what[3] = {"--hold ended by SIGINT (Ctrl-C)",
                                        "--hold ended by SIGTERM", "--hold ended by SIGHUP"};

    for (int k = 0; k < 3; k++) {
        cli_proc p;
        cli_result r;
        long long end = rlk_fx_now_ms() + 10000;

        REQUIRE(START(&p, "lock", "held", "--hold") == 0);
        while (tk_int(&server, "EXISTS %s", "held") != 1 && rlk_fx_now_ms() < end)
            rlk_fx_sleep_ms(10);
        CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "held"), 1);
        r = RUN("lock", "held", "-n", "--", "true");
        expect_status(&r, 1, "lock while another holds it with --hold");
        cli_result_free(&r);
        REQUIRE(cli_wait_file(cli_path("never"), 300) != 0);   /* still held after a while */
        CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "held"), 1);
        kill(p.pid, sigs[k]);
        r = cli_collect(&p, cli_wait(&p, 10000), 0);
        expect_status(&r, 0, what[k]);
        CHECK_STR_CONTAINS(r.err, "lock held: held until Ctrl-C");
        CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "held"), 0);
        cli_result_free(&r);
    }
    {
        cli_result r = RUN("lock", "held", "--hold", "--", "true");

        expect_status(&r, 2, "--hold with a command");
        CHECK_STR_CONTAINS(r.err, "--hold takes no command");
        cli_result_free(&r);
    }
}

/* Bounded poll until the key exists: 0, or -1 after timeout_ms. */
static int wait_key(const char *key, long timeout_ms)
{
    long long end = rlk_fx_now_ms() + timeout_ms;

    while (tk_int(&server, "EXISTS %s", key) != 1) {
        if (rlk_fx_now_ms() > end)
            return -1;
        rlk_fx_sleep_ms(10);
    }
    return 0;
}

/* `rlk lock NAME --hold &` from a script: a shell without job control starts it with SIGINT
 * ignored. The Ctrl-C its message promises (SIGINT) still ends the hold: exit 0, released. */
static void test_hold_sigint_ignored(void)
{
    struct sigaction ign, old;
    cli_proc p;
    cli_result r;

    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGINT, &ign, &old);     /* inherited by the rlk started now, as from sh's & */
    REQUIRE(START(&p, "lock", "held-ign", "--hold") == 0);
    sigaction(SIGINT, &old, NULL);
    /* Holding (its message printed), not still acquiring: a signal then ends the wait. */
    CHECK_INT_EQ(cli_wait_contains(p.err_path, "held until Ctrl-C", 10000), 0);
    kill(p.pid, SIGINT);
    r = cli_collect(&p, cli_wait(&p, 5000), 0);
    expect_status(&r, 0, "--hold started with SIGINT ignored, then SIGINT");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "held-ign"), 0);
    cli_result_free(&r);
    tk_int(&server, "DEL %s", "held-ign");     /* a failed run leaves its lock */
}

/* A --hold whose lock is lost (forced away) says so, exit 6, and names no command: it had
 * none. */
static void test_hold_lost(void)
{
    cli_proc p;
    cli_result r, u;

    REQUIRE(START(&p, "lock", "held-lost", "--hold") == 0);
    CHECK_INT_EQ(wait_key("held-lost", 10000), 0);
    u = RUN("unlock", "--force", "held-lost");
    expect_status(&u, 0, "unlock --force of a --hold");
    cli_result_free(&u);
    r = cli_collect(&p, cli_wait(&p, 10000), 0);
    expect_status(&r, 6, "--hold whose lock was forced away");
    CHECK_STR_CONTAINS(r.err, "rlk: lock held-lost lost (");
    CHECK_STR_CONTAINS(r.err, "--hold ended: it is no longer held by this rlk");
    CHECKF(strstr(r.err, "command") == NULL, "a --hold's loss names a command:\n%s", r.err);
    cli_result_free(&r);
}

static void test_inspect_marked_semaphore(void)
{
    cli_result r = RUN("semaphore", "marked", "--permits", "3", "--", "true");

    expect_status(&r, 0, "semaphore run");
    cli_result_free(&r);
    r = RUN("inspect", "marked");
    expect_status(&r, 1, "inspect a marked semaphore");  /* 1: a permit is free */
    CHECK_STR_PREFIX(r.out, "marked: permit-expirable semaphore\n");  /* what rlk semaphore makes */
    CHECKF(strstr(r.out, "latch") == NULL, "inspect says a marked semaphore may be a latch:\n%s",
           r.out);
    cli_result_free(&r);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_flock_hints);
    RUN_TEST(test_semaphore_n);
    RUN_TEST(test_hold);
    RUN_TEST(test_hold_sigint_ignored);
    RUN_TEST(test_hold_lost);
    RUN_TEST(test_inspect_marked_semaphore);
    cli_main_end(&server, 1);
    return check_summary("it_cli_habits");
}
