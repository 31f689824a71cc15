/*
 * it_cli_kinds.c - `rlk semaphore -n` against an existing
 * semaphore (refused when it differs, --resize adjusts), --take larger than
 * the real size refused at once, and a semaphore's name refused by
 * `rlk latch` and a latch's name by `rlk semaphore` (the {NAME}:rlk_kind
 * marker, and the {NAME}:timeout sign for a semaphore rlk did not make);
 * the actions `rlk semaphore NAME acquired | set-permits N | lease-time ID |
 * release ID | expire SECONDS | clear-expire | ttl`: outputs, exits, and
 * bad input refused (exit 2, one line) with nothing changed.
 *
 * Usage: it_cli_kinds PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <unistd.h>

#include "cli_check.h"

#include <rlk.h>

static rlk_fx_server server;
static char url[128];

static char *get_str(const char *key)
{
    redisReply *r = rlk_fx_command(&server, "GET %s", key);
    char *s = strdup(r && r->type == REDIS_REPLY_STRING ? r->str : "(nil)");

    if (r)
        freeReplyObject(r);
    return s;
}

static void expect_key(const char *key, const char *want)
{
    char *got = get_str(key);

    CHECKF(strcmp(got, want) == 0, "GET %s: '%s', expected '%s'", key, got, want);
    free(got);
}

static void expect_refused(const char *const *args, const char *what, const char *needle)
{
    cli_result r = cli_run(args);

    expect_status(&r, 2, what);
    expect_one_line_error(&r, what);
    CHECKF(strstr(r.err, needle) != NULL, "%s: no '%s' in: %s", what, needle, r.err);
    CHECKF(r.ms < 5000, "%s: took %lld ms: not refused at once", what, r.ms);
    cli_result_free(&r);
}

#define REFUSED(what, needle, ...) \
    expect_refused((const char *const[]){__VA_ARGS__, NULL}, what, needle)

static void expect_ok(const char *const *args, const char *what)
{
    cli_result r = cli_run(args);

    expect_status(&r, 0, what);
    cli_result_free(&r);
}

#define OK(what, ...) expect_ok((const char *const[]){__VA_ARGS__, NULL}, what)

/* Starts `rlk ARGS... -- sh -c 'touch FLAG; sleep 1.5'` and waits until it holds. */
/* The holder's command holds until hold_finish creates <flag>.stop (bounded: 60 s), so
 * the checks made meanwhile see it held however slowly they run. */
static char hold_stop[420];

static void hold_start(cli_proc *p, const char *flag, const char *const *args)
{
    const char *argv[16];
    char cmd[1000];
    int n = 0;

    snprintf(hold_stop, sizeof hold_stop, "%s.stop", flag);
    (void)unlink(hold_stop);
    snprintf(cmd, sizeof cmd, "touch %s; n=0; while [ ! -e %s ] && [ $n -lt 600 ]; do "
             "sleep 0.1; n=$((n+1)); done", flag, hold_stop);
    for (; args[n] && n < 11; n++)
        argv[n] = args[n];
    argv[n++] = "--";
    argv[n++] = "sh";
    argv[n++] = "-c";
    argv[n++] = cmd;
    argv[n] = NULL;
    REQUIRE(cli_start(p, argv) == 0);
    REQUIREF(cli_wait_file(flag, 10000) == 0, "the holder did not start");
}

static void hold_finish(cli_proc *p, const char *what)
{
    FILE *f = fopen(hold_stop, "w");
    int st;

    if (f)
        fclose(f);
    CHECKF(f != NULL, "%s: cannot create %s", what, hold_stop);
    st = cli_wait(p, CLI_TIMEOUT_MS);
    cli_result r = cli_collect(p, st, 0);

    expect_status(&r, 0, what);
    cli_result_free(&r);
}

static void test_semaphore_size(void)
{
    OK("create with -n 2", "semaphore", "s1", "--permits", "2", "--", "true");
    expect_key("s1", "2");
    expect_key("{s1}:rlk_kind", "semaphore");
    OK("the same -n again", "semaphore", "s1", "--permits", "2", "--", "true");
    REFUSED("-n 5 on a semaphore of 2", "has 2 permits", "semaphore", "s1", "--permits", "5", "--",
            "true");
    expect_key("s1", "2");
    REFUSED("-n 5 --take 3 on a semaphore of 2", "has 2 permits", "semaphore", "s1", "--permits", "5",
            "--take", "3", "--", "true");
    REFUSED("-n 2 --take 3", "--take 3", "semaphore", "s1", "--permits", "2", "--take", "3", "--",
            "true");
    expect_key("s1", "2");

    OK("--resize -n 5", "semaphore", "s1", "--permits", "5", "--resize", "--", "true");
    expect_key("s1", "5");
    OK("--resize -n 1", "semaphore", "s1", "--permits", "1", "--resize", "--", "true");
    expect_key("s1", "1");

    /* The same size through the C API. */
    {
        rlk_client *c = rlk_connect_url(url);
        rlk_psemaphore *s = c ? rlk_psemaphore_new(c, "s1") : NULL;
        long long available = -9, held = -9;

        REQUIRE(s != NULL);
        CHECK_INT_EQ(rlk_psemaphore_size(s, &available, &held), RLK_OK);
        CHECK_INT_EQ(available, 1);
        CHECK_INT_EQ(held, 0);
        rlk_psemaphore_free(s);
        rlk_free(c);
    }
}

/* A held permit counts in the size: -n 2 with one permit held is the same size, -n 3 is not. */
static void test_size_with_holder(void)
{
    cli_proc holder;

    hold_start(&holder, cli_path("kinds.held"),
               (const char *const[]){"semaphore", "s2", "--permits", "2", NULL});
    REFUSED("-n 3 with one permit held", "1 held", "semaphore", "s2", "--permits", "3", "--", "true");
    OK("-n 2 with one permit held", "semaphore", "s2", "--permits", "2", "-w", "5", "--", "true");
    hold_finish(&holder, "the holder");
    expect_key("s2", "2");
}

static void test_latch_vs_semaphore(void)
{
    cli_result r;

    OK("semaphore k1", "semaphore", "k1", "--permits", "3", "--", "true");
    REFUSED("latch count-down on a semaphore", "is a semaphore", "latch", "k1", "count-down");
    REFUSED("latch set on a semaphore", "is a semaphore", "latch", "k1", "set", "2");
    REFUSED("latch await on a semaphore", "is a semaphore", "latch", "k1", "await", "-w", "0");
    expect_key("k1", "3");

    OK("latch k2 set 2", "latch", "k2", "set", "2");
    expect_key("{k2}:rlk_kind", "latch");
    REFUSED("semaphore on a latch", "is a count-down latch", "semaphore", "k2", "--permits", "2", "--",
            "true");
    expect_key("k2", "2");
    r = RUN("inspect", "k2", "--json");
    expect_status(&r, 0, "inspect a marked latch");
    CHECK_STR_EQ(r.out, "{\"name\":\"k2\",\"kind\":\"latch\",\"count\":2,\"state\":\"held\"}\n");
    cli_result_free(&r);
    OK("count-down", "latch", "k2", "count-down");
    OK("count-down to 0", "latch", "k2", "count-down");
    expect_key("{k2}:rlk_kind", "(nil)");
    OK("semaphore on an opened latch's name", "semaphore", "k2", "--permits", "1", "--", "true");

    /* A semaphore rlk did not make (no marker), with a held permit: told by {NAME}:timeout. */
    freeReplyObject(rlk_fx_command(&server, "SET %s 1", "k3"));
    freeReplyObject(rlk_fx_command(&server, "ZADD {k3}:timeout 99999999999999 %s", "abcd"));
    REFUSED("latch count-down on a Redisson psemaphore", "is a semaphore", "latch", "k3",
            "count-down");
    expect_key("k3", "1");
    /* A plain count without any sign cannot be told: used as asked (documented). */
    freeReplyObject(rlk_fx_command(&server, "SET %s 2", "k4"));
    OK("latch count-down on an unmarked count", "latch", "k4", "count-down");
    expect_key("k4", "1");
}

/* A read-write lock's name is refused by the reentrant, fair and fenced lock (at once, not a wait
 * for the readers); the read-write kinds already refuse a plain lock's hash (RLK_WRONGTYPE). */
static void test_lock_on_rwlock(void)
{
    cli_proc holder;

    hold_start(&holder, cli_path("kinds.rw.held"),
               (const char *const[]){"lock", "--read", "rw1", NULL});
    REFUSED("lock on a read-write lock", "is a read-write lock", "lock", "rw1", "--", "true");
    REFUSED("fair lock on a read-write lock", "is a read-write lock", "lock", "--fair", "rw1",
            "--", "true");
    REFUSED("fenced lock on a read-write lock", "is a read-write lock", "lock", "--fenced", "rw1",
            "--", "true");
    OK("another reader", "lock", "--read", "rw1", "-n", "--", "true");
    hold_finish(&holder, "the reader");
}

/* Runs args: exit code, stdout and stderr as given. */
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

static void test_semaphore_actions(void)
{
    cli_result r;
    char id[80];

    OUT(0, "0\n", "", "semaphore", "sa", "acquired");
    OUT(0, "-2\n", "", "semaphore", "sa", "ttl");
    OUT(1, "", "rlk: semaphore sa: no such semaphore; nothing changed\n", "semaphore", "sa",
        "expire", "5");
    OUT(0, "3\n", "", "semaphore", "sa", "set-permits", "3");
    expect_key("sa", "3");
    /* A permit held by a raw ZADD (as Redisson's acquire writes one): the count goes down by
     * one, the size stays 3. */
    CHECK(tk_command_ok(&server, "DECR sa") == 0);
    CHECK(tk_command_ok(&server, "ZADD {sa}:timeout 922337203685477 %b", "\xab\xcd", (size_t)2) == 0);
    OUT(0, "1\n", "", "semaphore", "sa", "acquired");
    OUT(0, "-1\n", "", "semaphore", "sa", "lease-time", "abcd");
    OUT(0, "4\n", "", "semaphore", "sa", "set-permits", "5");
    OUT(1, "", "rlk: semaphore sa: permit 0000 is not held (expired, released or never acquired)\n",
        "semaphore", "sa", "lease-time", "0000");
    OUT(0, "", "", "semaphore", "sa", "release", "ABCD");
    OUT(1, "", "rlk: semaphore sa: that permit is not held (expired, released or never acquired); "
        "nothing changed\n", "semaphore", "sa", "release", "abcd");
    expect_key("sa", "5");
    OUT(0, "0\n", "", "semaphore", "sa", "acquired");
    OUT(0, "-1\n", "", "semaphore", "sa", "ttl");
    OUT(0, "", "", "semaphore", "sa", "expire", "60");
    r = RUN("semaphore", "sa", "ttl");
    expect_status(&r, 0, "ttl after expire 60");
    snprintf(id, sizeof id, "%s", r.out);
    CHECKF(atoll(id) > 50000 && atoll(id) <= 60000, "ttl after expire 60: %s", id);
    cli_result_free(&r);
    OUT(0, "", "", "semaphore", "sa", "clear-expire");
    OUT(1, "", "rlk: semaphore sa: it has no time to live; nothing changed\n", "semaphore", "sa",
        "clear-expire");

    /* Bad input: exit 2, one line, nothing changed. */
    REFUSED("set-permits -1", "set-permits needs a whole number in 0..", "semaphore", "sa",
            "set-permits", "-1");
    REFUSED("set-permits", "missing N", "semaphore", "sa", "set-permits");
    REFUSED("lease-time xyz", "hex", "semaphore", "sa", "lease-time", "xyz");
    REFUSED("release", "missing ID", "semaphore", "sa", "release");
    REFUSED("expire 0", "at least 1 ms", "semaphore", "sa", "expire", "0");
    REFUSED("acquired x", "unexpected argument 'x'", "semaphore", "sa", "acquired", "x");
    REFUSED("ttl --json", "unknown option '--json'", "semaphore", "sa", "ttl", "--json");
    expect_key("sa", "5");
    CHECK_INT_EQ(tk_int(&server, "PTTL %s", "sa"), -1);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    RUN_TEST(test_semaphore_size);
    RUN_TEST(test_size_with_holder);
    RUN_TEST(test_latch_vs_semaphore);
    RUN_TEST(test_lock_on_rwlock);
    RUN_TEST(test_semaphore_actions);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_kinds");
}
