/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_escape.c - control characters never reach the terminal raw.
 *
 * A lock name (and a holder id) with a newline and an escape sequence, seen by every human
 * output: errors (not acquired, usage), `rlk inspect`, `rlk unlock --force`, `rlk top --once`;
 * the same for `rlk semaphore` (busy, a size mismatch, --verbose, inspect), `rlk elect`
 * (--observe's holder and value, not elected) and `rlk latch` (its refusals, inspect).
 * Each shows them escaped (\n, \x1b) on the one line it is about; `--json` keeps its own JSON
 * escaping.
 *
 * Usage: it_cli_escape PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <signal.h>

static rlk_fx_server server;
static char url[128];

#define NAME "ev\033[31mil\nname"
#define SHOWN "ev\\x1b[31mil\\nname"
#define OWNER "own\033]0;title\007er:1"
#define OWNER_SHOWN "own\\x1b]0;title\\x07er:1"
#define VALUE "v\033[2J\nal"
#define VALUE_SHOWN "v\\x1b[2J\\nal"

/* No ESC or BEL byte anywhere, and each line of the output is about one thing. */
static void no_raw_controls(const cli_result *r, const char *what)
{
    CHECKF(strpbrk(r->out, "\033\007") == NULL && strpbrk(r->err, "\033\007") == NULL,
           "%s: a raw control character reached the output:\n%s%s", what, r->out, r->err);
}

/* A lock held by field, as a holder leaves it: the hash and its lease (a live lock always has a
 * TTL; a hash without one is not taken for a lock by rlk unlock --force). */
static void hset(const char *key, const char *field)
{
    redisReply *rr = rlk_fx_command(&server, "HSET %s %s 1", key, field);

    CHECKF(rr && rr->type == REDIS_REPLY_INTEGER, "HSET failed");
    freeReplyObject(rr);
    rr = rlk_fx_command(&server, "PEXPIRE %s 60000", key);
    CHECKF(rr && rr->type == REDIS_REPLY_INTEGER && rr->integer == 1, "PEXPIRE failed");
    freeReplyObject(rr);
}

static void test_inspect_free(void)
{
    cli_result r = RUN("inspect", NAME);

    expect_status(&r, 1, "inspect a free name");     /* 1: free */
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

/* r ended with status and one error line that contains shown (unless NULL); no raw control
 * character anywhere. Frees r. */
static void error_shown(cli_result r, int status, const char *what, const char *shown)
{
    expect_status(&r, status, what);
    expect_one_line_error(&r, what);
    CHECKF(!shown || strstr(r.err, shown), "%s: stderr does not say %s: %s", what, shown, r.err);
    no_raw_controls(&r, what);
    cli_result_free(&r);
}

/* r ended with 0 and stdout begins with prefix; no raw control character anywhere. Frees r. */
static void output_shown(cli_result r, const char *what, const char *prefix)
{
    expect_status(&r, 0, what);
    CHECKF(strncmp(r.out, prefix, strlen(prefix)) == 0, "%s: stdout does not begin with %s: %s",
           what, prefix, r.out);
    no_raw_controls(&r, what);
    cli_result_free(&r);
}

/* rlk semaphore: not acquired, a size mismatch, --verbose's waiting line, inspect. */
static void test_semaphore(void)
{
    cli_result r, h;
    cli_proc p;

    REQUIRE(START(&p, "semaphore", NAME, "--permits", "1", "--", "sh", "-c",
                  "touch \"$T/sem-held\"; sleep 20") == 0);
    REQUIRE(cli_wait_file(cli_path("sem-held"), 10000) == 0);
    error_shown(RUN("semaphore", NAME, "--permits", "1", "-w", "0", "--", "true"), 1,
                "semaphore, no permit free", "semaphore " SHOWN ": no permit free");
    error_shown(RUN("semaphore", NAME, "--permits", "2", "-w", "0", "--", "true"), 2,
                "semaphore, another size", "semaphore " SHOWN " has 1 permits");
    r = RUN("--verbose", "semaphore", NAME, "--permits", "1", "-w", "1", "--", "true");
    expect_status(&r, 1, "semaphore --verbose, waiting");
    CHECK_STR_CONTAINS(r.err, "semaphore " SHOWN ": waiting for ");
    no_raw_controls(&r, "semaphore --verbose, waiting");
    cli_result_free(&r);
    output_shown(RUN("inspect", NAME), "inspect a semaphore",
                 SHOWN ": permit-expirable semaphore\n");
    kill(p.pid, SIGTERM);
    h = cli_collect(&p, cli_wait(&p, 10000), 0);
    cli_result_free(&h);
    error_shown(RUN("latch", NAME, "set", "1"), 2, "latch on a semaphore's name",
                SHOWN " is a semaphore");
    tk_int(&server, "DEL %s", NAME);
    tk_int(&server, "DEL {%s}:rlk_kind", NAME);
}

/* rlk elect: --observe's line (a holder id and a value with controls, as a server may hold
 * them), and the error of a campaign that is not elected. */
static void test_elect(void)
{
    char record[64];
    redisReply *rr;
    cli_result r;

    hset(NAME, OWNER);
    tk_int(&server, "PEXPIRE %s 60000", NAME);
    snprintf(record, sizeof record, "{%s}:elect", NAME);
    rr = rlk_fx_command(&server, "HSET %s holder %s term 5 value %s", record, OWNER, VALUE);
    CHECKF(rr && rr->type == REDIS_REPLY_INTEGER, "HSET of the record failed");
    freeReplyObject(rr);
    r = RUN("elect", NAME, "--observe", "--count", "1", "--timeout", "5");
    CHECK_STR_EQ(r.out, "leader 5 " OWNER_SHOWN " " VALUE_SHOWN "\n");
    output_shown(r, "elect --observe", "leader 5 ");
    error_shown(RUN("elect", NAME, "-n", "--", "true"), 1, "elect -n, held by another",
                "election " SHOWN ": ");
    r = RUN("elect", NAME, "--observe", "--json", "--count", "1", "--timeout", "5");
    CHECK_STR_CONTAINS(r.out, "\"value\":\"v\\u001b[2J\\u000aal\"");
    output_shown(r, "elect --observe --json", "{");
    tk_int(&server, "DEL %s", NAME);
    tk_int(&server, "DEL %s", record);
}

/* rlk latch: armed already, still armed, no time to live, inspect. */
static void test_latch(void)
{
    cli_result r = RUN("latch", NAME, "set", "2");

    expect_status(&r, 0, "latch set");
    cli_result_free(&r);
    error_shown(RUN("latch", NAME, "set", "2"), 1, "latch set, armed already",
                "latch " SHOWN ": armed already");
    error_shown(RUN("latch", NAME, "await", "-w", "0.2"), 1, "latch await, still armed",
                "latch " SHOWN ": still armed");
    error_shown(RUN("latch", NAME, "clear-expire"), 1, "latch clear-expire, none", SHOWN);
    output_shown(RUN("inspect", NAME), "inspect a latch", SHOWN ": count-down latch\n");
    error_shown(RUN("semaphore", NAME, "--permits", "1", "--", "true"), 2,
                "semaphore on a latch's name", SHOWN " is a count-down latch");
    tk_int(&server, "DEL %s", NAME);
    tk_int(&server, "DEL {%s}:rlk_kind", NAME);
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
    RUN_TEST(test_semaphore);
    RUN_TEST(test_elect);
    RUN_TEST(test_latch);
    RUN_TEST(test_usage_errors);
    cli_main_end(&server, 1);
    return check_summary("it_cli_escape");
}
