/*
 * it_cli_newkinds.c - `rlk lock --non-reentrant` and `rlk lock --spin`:
 * a nested rlk asking for the non-reentrant lock its parent holds is
 * refused at once (exit 2, one line), where the reentrant kinds re-enter;
 * another holder's non-reentrant lock (or a plain lock on the same hash)
 * is "not acquired"; --spin waits for a holder and takes the lock once it
 * is released, with no SUBSCRIBE on the server (INFO commandstats); the
 * two flags exclude each other.
 *
 * Usage: it_cli_newkinds PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "cli_check.h"

#include <rlk.h>

static rlk_fx_server server;
static char url[128];
static const char *rlk_path;

/* The server's SUBSCRIBE + SSUBSCRIBE + PSUBSCRIBE calls so far, -1 on error. */
static long long subscribe_calls(void)
{
    static const char *const cmds[] = {"cmdstat_subscribe:calls=", "cmdstat_ssubscribe:calls=",
                                       "cmdstat_psubscribe:calls="};
    redisReply *r = rlk_fx_command(&server, "INFO commandstats");
    long long n = 0;

    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        const char *p = strstr(r->str, cmds[k]);

        if (p)
            n += atoll(p + strlen(cmds[k]));
    }
    freeReplyObject(r);
    return n;
}

static cli_result run(const char *const *args)
{
    return cli_run(args);
}

#define RUNA(...) run((const char *const[]){__VA_ARGS__, NULL})

static void test_nested_refused(void)
{
    char cmd[1200];
    cli_result r;

    snprintf(cmd, sizeof cmd, "'%s' lock --non-reentrant nr1 -n -- true", rlk_path);
    r = RUNA("lock", "--non-reentrant", "nr1", "--", "sh", "-c", cmd);
    expect_status(&r, 2, "nested non-reentrant lock");
    expect_one_line_error(&r, "nested non-reentrant lock");
    CHECKF(strstr(r.err, "non-reentrant") && strstr(r.err, "refused"),
           "nested non-reentrant lock: %s", r.err);
    CHECKF(r.ms < 5000, "took %lld ms: not refused at once", r.ms);
    cli_result_free(&r);
    /* The reentrant kinds re-enter in the same nesting (the control). */
    snprintf(cmd, sizeof cmd, "'%s' lock --spin nr2 -n -- true", rlk_path);
    r = RUNA("lock", "--spin", "nr2", "--", "sh", "-c", cmd);
    expect_status(&r, 0, "nested spin lock (reentrant)");
    cli_result_free(&r);
    r = RUNA("lock", "--spin", "--non-reentrant", "nr3", "--", "true");
    expect_status(&r, 2, "--spin with --non-reentrant");
    expect_one_line_error(&r, "--spin with --non-reentrant");
    cli_result_free(&r);
}

/* A holder that runs until <flag>.stop exists (bounded: 60 s). */
static void hold_start(cli_proc *p, const char *flag, const char *kind, const char *name)
{
    char cmd[1000];
    const char *argv[8];

    snprintf(cmd, sizeof cmd, "touch %s; n=0; while [ ! -e %s.stop ] && [ $n -lt 600 ]; do "
             "sleep 0.1; n=$((n+1)); done", flag, flag);
    argv[0] = "lock";
    argv[1] = kind;
    argv[2] = name;
    argv[3] = "--";
    argv[4] = "sh";
    argv[5] = "-c";
    argv[6] = cmd;
    argv[7] = NULL;
    REQUIRE(cli_start(p, argv) == 0);
    REQUIREF(cli_wait_file(flag, 10000) == 0, "the holder did not start");
}

static void hold_finish(cli_proc *p, const char *flag)
{
    char stop[600];
    FILE *f;
    int st;

    snprintf(stop, sizeof stop, "%s.stop", flag);
    f = fopen(stop, "w");
    if (f)
        fclose(f);
    st = cli_wait(p, CLI_TIMEOUT_MS);
    cli_result r = cli_collect(p, st, 0);

    expect_status(&r, 0, "the holder");
    cli_result_free(&r);
}

static void test_busy(void)
{
    const char *flag = cli_path("nk.nr.held");
    cli_proc holder;
    cli_result r;

    hold_start(&holder, flag, "--non-reentrant", "nr4");
    r = RUNA("lock", "--non-reentrant", "nr4", "-n", "--", "true");
    expect_status(&r, 1, "another holder's non-reentrant lock");
    cli_result_free(&r);
    r = RUNA("lock", "nr4", "-n", "--", "true");
    expect_status(&r, 1, "a reentrant lock on the same hash");
    cli_result_free(&r);
    hold_finish(&holder, flag);
    r = RUNA("lock", "--non-reentrant", "nr4", "-n", "--", "true");
    expect_status(&r, 0, "free again");
    cli_result_free(&r);
}

static void test_spin_no_subscribe(void)
{
    const char *flag = cli_path("nk.spin.held"), *got = cli_path("nk.spin.got");
    const char *argv[10];
    char cmd[700];
    cli_proc holder, waiter;
    long long subs0 = subscribe_calls(), subs1;
    int st;

    REQUIRE(subs0 >= 0);
    hold_start(&holder, flag, "--spin", "sp1");
    snprintf(cmd, sizeof cmd, "touch %s", got);
    argv[0] = "lock";
    argv[1] = "--spin";
    argv[2] = "sp1";
    argv[3] = "-w";
    argv[4] = "20";
    argv[5] = "--";
    argv[6] = "sh";
    argv[7] = "-c";
    argv[8] = cmd;
    argv[9] = NULL;
    REQUIRE(cli_start(&waiter, argv) == 0);
    /* Held meanwhile: the waiter cannot have run its command. */
    CHECK(cli_wait_file(got, 300) != 0);
    hold_finish(&holder, flag);
    st = cli_wait(&waiter, CLI_TIMEOUT_MS);
    {
        cli_result r = cli_collect(&waiter, st, 0);

        expect_status(&r, 0, "the spinning waiter");
        cli_result_free(&r);
    }
    CHECK(access(got, F_OK) == 0);
    subs1 = subscribe_calls();
    printf("  SUBSCRIBE calls: %lld before, %lld after two --spin locks\n", subs0, subs1);
    CHECK_INT_EQ(subs1, subs0);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    rlk_path = argv[1];
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    RUN_TEST(test_spin_no_subscribe);   /* first: nothing subscribed on the server before it */
    RUN_TEST(test_nested_refused);
    RUN_TEST(test_busy);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_newkinds");
}
