/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_escape.c - control characters never reach the terminal raw.
 *
 * A lock name (and a holder id) with a newline and an escape sequence, seen by every human
 * output: errors (not acquired, usage), `rlk inspect`, `rlk unlock --force`, `rlk top --once`.
 * Each shows them escaped (\n, \x1b) on the one line it is about; `--json` keeps its own JSON
 * escaping.
 *
 * Usage: it_cli_escape PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

static rlk_fx_server server;
static char url[128];

#define NAME "ev\033[31mil\nname"
#define SHOWN "ev\\x1b[31mil\\nname"
#define OWNER "own\033]0;title\007er:1"
#define OWNER_SHOWN "own\\x1b]0;title\\x07er:1"

/* No ESC or BEL byte anywhere, and each line of the output is about one thing. */
static void no_raw_controls(const cli_result *r, const char *what)
{
    CHECKF(strpbrk(r->out, "\033\007") == NULL && strpbrk(r->err, "\033\007") == NULL,
           "%s: a raw control character reached the output:\n%s%s", what, r->out, r->err);
}

static void hset(const char *key, const char *field)
{
    redisReply *rr = rlk_fx_command(&server, "HSET %s %s 1", key, field);

    CHECKF(rr && rr->type == REDIS_REPLY_INTEGER, "HSET failed");
    freeReplyObject(rr);
}

static void test_inspect_free(void)
{
    cli_result r = RUN("inspect", NAME);

    expect_status(&r, 0, "inspect a free name");
    CHECK_STR_EQ(r.out, SHOWN ": no lock\n");
    no_raw_controls(&r, "inspect a free name");
    cli_result_free(&r);
}

static void test_held(void)
{
    cli_result r;

    hset(NAME, OWNER);
    r = RUN("lock", NAME, "-w", "0", "--", "true");
    expect_status(&r, 1, "lock a held name");
    expect_one_line_error(&r, "lock a held name");
    CHECK_STR_CONTAINS(r.err, SHOWN);
    no_raw_controls(&r, "lock a held name");
    cli_result_free(&r);

    r = RUN("inspect", NAME);
    expect_status(&r, 0, "inspect a held name");
    CHECK_STR_PREFIX(r.out, SHOWN ": reentrant lock\n");
    CHECK_STR_CONTAINS(r.out, "holder:  " OWNER_SHOWN "  count 1\n");
    no_raw_controls(&r, "inspect a held name");
    cli_result_free(&r);

    r = RUN("inspect", NAME, "--json");
    expect_status(&r, 0, "inspect --json");
    CHECK_STR_CONTAINS(r.out, "\"ev\\u001b[31mil\\u000aname\"");
    no_raw_controls(&r, "inspect --json");
    cli_result_free(&r);

    r = RUN("top", "--once", "--pattern", "ev*");
    expect_status(&r, 0, "top --once");
    CHECK_STR_CONTAINS(r.out, "ev\\x1b[31mil\\");
    CHECK_STR_CONTAINS(r.out, "own\\x1b]0;");
    no_raw_controls(&r, "top --once");
    cli_result_free(&r);

    r = RUN("--verbose", "lock", NAME, "-w", "1.5", "--", "true");
    expect_status(&r, 1, "lock --verbose, waiting");
    CHECK_STR_CONTAINS(r.err, "waiting for 1 s; held by " OWNER_SHOWN);
    no_raw_controls(&r, "lock --verbose, waiting");
    cli_result_free(&r);

    r = RUN("unlock", NAME, "--force");
    expect_status(&r, 0, "unlock --force");
    CHECK_STR_EQ(r.out, SHOWN ": lock removed (force unlock)\n");
    no_raw_controls(&r, "unlock --force");
    cli_result_free(&r);
}

static void test_usage_errors(void)
{
    cli_result r = RUN("inspect", "x", "--kind", "bad\033[2J\nkind");

    expect_status(&r, 2, "inspect --kind with controls");
    expect_one_line_error(&r, "inspect --kind with controls");
    CHECK_STR_CONTAINS(r.err, "bad\\x1b[2J\\nkind");
    no_raw_controls(&r, "inspect --kind with controls");
    cli_result_free(&r);

    r = RUN("lock", "x", "--\033[2Jbogus", "--", "true");
    expect_status(&r, 2, "an unknown option with controls");
    expect_one_line_error(&r, "an unknown option with controls");
    no_raw_controls(&r, "an unknown option with controls");
    cli_result_free(&r);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_inspect_free);
    RUN_TEST(test_held);
    RUN_TEST(test_usage_errors);
    cli_main_end(&server, 1);
    return check_summary("it_cli_escape");
}
