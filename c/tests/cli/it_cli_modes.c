/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_modes.c - `rlk lock --read | --write | --fair | --fenced` and
 * `rlk semaphore` against one fixture server: help and usage errors of the
 * new modes, mutual exclusion with concurrent invocations (writers, fair
 * and fenced holders one at a time; readers together; a semaphore with n
 * permits up to n at once), the fair lock's first-come-first-served order,
 * increasing fencing tokens, exit codes when not acquired, the command's
 * environment, and nested invocations (re-entry; a reader cannot upgrade).
 *
 * Usage: it_cli_modes PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "json_mini.h"

#include <rlk.h>

#include <ctype.h>
#include <unistd.h>

#define CONCURRENT 4

static rlk_fx_server server;
static char url[128];

/* ---------------------------------------------------------------- helpers */

/* Runs args, expects exit 2, one error line containing needle. */
static void expect_usage(const char *const *args, const char *needle)
{
    cli_result r = cli_run(args);
    char what[200];

    snprintf(what, sizeof what, "rlk %s %s %s ...", args[0], args[1] ? args[1] : "",
             args[1] && args[2] ? args[2] : "");
    expect_status(&r, 2, what);
    expect_one_line_error(&r, what);
    CHECKF(strstr(r.err, needle) != NULL, "%s: stderr lacks \"%s\": %s", what, needle, r.err);
    cli_result_free(&r);
}

#define USAGE(needle, ...) expect_usage((const char *const[]){__VA_ARGS__, NULL}, needle)

/* The value of KEY in `env` output (malloc'd; "" when absent). */
static char *env_value(const char *env, const char *key)
{
    size_t n = strlen(key);
    const char *line = env;

    while (line && *line) {
        if (strncmp(line, key, n) == 0 && line[n] == '=') {
            const char *v = line + n + 1;

            return strndup(v, strcspn(v, "\n"));
        }
        line = strchr(line, '\n');
        line = line ? line + 1 : NULL;
    }
    return strdup("");
}

static int is_holder_id(const char *s)
{
    size_t n = strlen(s);

    if (n < 38 || s[36] != ':')
        return 0;
    for (size_t k = 0; k < 36; k++)
        if (!(isxdigit((unsigned char)s[k]) || s[k] == '-'))
            return 0;
    for (size_t k = 37; k < n; k++)
        if (!isdigit((unsigned char)s[k]))
            return 0;
    return 1;
}

static int is_hex(const char *s, size_t len)
{
    if (strlen(s) != len)
        return 0;
    for (size_t k = 0; k < len; k++)
        if (!isxdigit((unsigned char)s[k]))
            return 0;
    return 1;
}

/* 1 when GET key answers the string want. */
static int fx_get_is(const char *key, const char *want)
{
    redisReply *r = rlk_fx_command(&server, "GET %s", key);
    int same = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, want) == 0;

    if (r)
        freeReplyObject(r);
    return same;
}

/* A concurrency run: n copies of `rlk ARGS... -- sh -c SCRIPT`, the hold log checked. */
static tk_hold_report run_logged(int n, const char *const *lead, const char *script,
                                 const char *log)
{
    const char *args[24];
    tk_hold_report e;
    char *text;
    int k = 0, bad = 0;

    for (; lead[k] && k < 20; k++)
        args[k] = lead[k];
    args[k++] = "--";
    args[k++] = "sh";
    args[k++] = "-c";
    args[k++] = script;
    args[k] = NULL;
    run_many(n, args, lead[1] ? lead[1] : lead[0]);
    e = cli_holds_check(log, &bad);
    text = cli_slurp(log);
    CHECKF(bad == 0 && e.open == 0 && e.holds == (size_t)n,
           "%s: hold log malformed or missing (%zu holds, %zu open):\n%s", lead[0], e.holds,
           e.open, text);
    free(text);
    return e;
}

/* ---------------------------------------------------------------- help and usage */

static void test_help(void)
{
    cli_result r = RUN("lock", "--help");

    expect_status(&r, 0, "lock --help");
    CHECK_STR_CONTAINS(r.out, "--read, --write");
    CHECK_STR_CONTAINS(r.out, "--fair");
    CHECK_STR_CONTAINS(r.out, "--fenced");
    CHECK_STR_CONTAINS(r.out, "--all MEMBER...");
    CHECK_STR_CONTAINS(r.out, "--redlock URLS");
    CHECK_STR_CONTAINS(r.out, "RLK_FENCE_TOKEN");
    cli_result_free(&r);

    r = RUN("semaphore", "--help");
    expect_status(&r, 0, "semaphore --help");
    CHECK_STR_PREFIX(r.out, "usage: rlk semaphore NAME --permits N");
    cli_result_free(&r);

    r = RUN("help", "latch");
    expect_status(&r, 0, "help latch");
    CHECK_STR_PREFIX(r.out, "usage: rlk latch NAME set COUNT");
    cli_result_free(&r);

    r = RUN("--help");
    expect_status(&r, 0, "--help");
    CHECK_STR_CONTAINS(r.out, "  semaphore ");
    CHECK_STR_CONTAINS(r.out, "  latch ");
    CHECK_STR_CONTAINS(r.out, "6  lock lost while the command ran");
    cli_result_free(&r);
}

static void test_usage_errors(void)
{
    const char *ran = cli_path("usage.ran");
    char touch[500];

    snprintf(touch, sizeof touch, "touch %s", ran);
    USAGE("--read and --write exclude each other", "lock", "--read", "--write", "u", "--",
          "sh", "-c", touch);
    USAGE("--fair and --redlock exclude each other", "lock", "--fair", "--redlock",
          "redis://127.0.0.1:1", "u", "--", "sh", "-c", touch);
    USAGE("several locks: --all", "lock", "--fenced", "u", "v", "--", "sh", "-c", touch);
    USAGE("--all needs at least one lock NAME", "lock", "--all", "--", "sh", "-c", touch);
    USAGE("is a URL without a lock name", "lock", "--all", "a", "redis://127.0.0.1:1", "--",
          "sh", "-c", touch);
    USAGE("the lock name after '#' is empty", "lock", "--all", "redis://127.0.0.1:1#", "--",
          "sh", "-c", touch);
    USAGE("option --redlock needs a value", "lock", "u", "--redlock");
    USAGE("--redlock needs the servers' URLs", "lock", "--redlock=", "u", "--", "sh", "-c",
          touch);
    USAGE("an empty URL", "lock", "--redlock", "redis://127.0.0.1:1,,redis://127.0.0.1:2", "u",
          "--", "sh", "-c", touch);
    USAGE("is listed twice", "lock", "--redlock", "redis://127.0.0.1:1,redis://127.0.0.1:1", "u",
          "--", "sh", "-c", touch);
    USAGE("--url does not go with --redlock", "lock", "--redlock", "redis://127.0.0.1:1",
          "--url", "redis://127.0.0.1:2", "u", "--", "sh", "-c", touch);
    USAGE("(rlk lock --write u -- COMMAND...)", "lock", "--write", "u");
    USAGE("(rlk semaphore s --permits 2 -- COMMAND...)", "semaphore", "s", "--permits", "2");
    USAGE("missing --permits N", "semaphore", "s", "--", "sh", "-c", touch);
    USAGE("option --permits needs a whole number", "semaphore", "s", "--permits", "0", "--", "true");
    USAGE("--take 3 is more than the 2 permits", "semaphore", "s", "--permits", "2", "--take", "3",
          "--", "true");
    USAGE("--no-wait and -w exclude each other", "semaphore", "s", "--permits", "2", "--no-wait", "-w",
          "1", "--", "true");
    USAGE("missing the semaphore NAME", "semaphore", "--permits", "2", "--", "true");
    USAGE("missing '--'", "semaphore", "s", "--permits", "2");
    /* The range named is the one that holds: a renewed lease under 250 ms is refused. */
    USAGE("option --watchdog-lease needs a whole number in 250..1000000000000, not '0'", "lock",
          "u", "--watchdog-lease", "0", "--", "true");
    USAGE("option --watchdog-lease needs a whole number in 250..", "semaphore", "s", "--permits",
          "2", "--watchdog-lease", "249", "--", "true");
    CHECKF(access(ran, F_OK) != 0, "a usage error ran the command");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "u"), 0);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "s"), 0);
}

/* ---------------------------------------------------------------- mutual exclusion */

static void test_writers_one_at_a_time(void)
{
    const char *log = cli_path("w.events");
    char script[600];
    tk_hold_report e;

    /* The sleep is the time spent inside the lock, not a synchronisation. */
    cli_hold_script(script, sizeof script, log, 'W', NULL, "sleep 0.05");
    e = run_logged(CONCURRENT, (const char *const[]){"lock", "--write", "rw1", "-w", "30", NULL},
                   script, log);
    CHECKF(e.peak == 1 && e.conflicts == 0, "writers overlapped (%d at once)", e.peak);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "rw1"), 0);
}

/* Every reader waits inside until all have started: only readers that hold
 * the lock together get past the barrier in time. */
static void test_readers_together(void)
{
    const char *log = cli_path("r.events");
    char barrier[300], script[900];
    tk_hold_report e;

    cli_hold_barrier(barrier, sizeof barrier, log, CONCURRENT);
    cli_hold_script(script, sizeof script, log, 'R', NULL, barrier);
    e = run_logged(CONCURRENT, (const char *const[]){"lock", "--read", "rw2", "-w", "30", NULL},
                   script, log);
    CHECKF(e.peak_readers == CONCURRENT, "readers did not hold the lock together (%d at most)",
           e.peak_readers);
}

static void test_readers_and_writers(void)
{
    const char *log = cli_path("rw.events");
    char rs[600], ws[600];
    cli_proc p[6];
    tk_hold_report e;
    char *text;
    int bad = 0;

    cli_hold_script(rs, sizeof rs, log, 'R', NULL, "sleep 0.03");
    cli_hold_script(ws, sizeof ws, log, 'W', NULL, "sleep 0.03");
    for (int k = 0; k < 6; k++)
        REQUIRE(START(&p[k], "lock", k % 2 ? "--read" : "--write", "rw3", "-w", "30", "--", "sh",
                      "-c", k % 2 ? rs : ws) == 0);
    for (int k = 0; k < 6; k++) {
        int st = cli_wait(&p[k], CLI_TIMEOUT_MS);
        cli_result r = cli_collect(&p[k], st, 0);

        expect_status(&r, 0, "readers and writers");
        cli_result_free(&r);
    }
    e = cli_holds_check(log, &bad);
    text = cli_slurp(log);
    CHECKF(bad == 0 && e.open == 0 && e.holds == 6 && e.conflicts == 0,
           "a writer shared the lock, or holds are missing:\n%s", text);
    free(text);
}

static void test_fair_one_at_a_time(void)
{
    const char *log = cli_path("f.events");
    char script[600];
    tk_hold_report e;

    cli_hold_script(script, sizeof script, log, 'X', NULL, "sleep 0.05");
    e = run_logged(CONCURRENT, (const char *const[]){"lock", "--fair", "fair1", "-w", "30", NULL},
                   script, log);
    CHECKF(e.peak == 1 && e.conflicts == 0, "fair holders overlapped (%d at once)", e.peak);
}

/* A parked holder, then waiters B, C, D each proven queued before the next
 * starts: they run in that order. */
static void test_fair_order(void)
{
    const char *log = cli_path("order.log"), *go = cli_path("order.go");
    const char *queue = "redisson_lock_queue:{fair2}";
    char hold[500], line[3][200];
    cli_proc a, w[3];
    char *text;

    snprintf(hold, sizeof hold, "n=0; while [ ! -e %s ] && [ $n -lt 1500 ]; do sleep 0.02; "
             "n=$((n+1)); done", go);
    REQUIRE(START(&a, "lock", "--fair", "fair2", "--", "sh", "-c", hold) == 0);
    CHECK(tk_wait_int_at_least(&server, 1, 10000, "EXISTS %s", "fair2") == 0);
    for (int k = 0; k < 3; k++) {
        snprintf(line[k], sizeof line[k], "echo %c >> %s", 'B' + k, log);
        REQUIRE(START(&w[k], "lock", "--fair", "fair2", "-w", "30", "--", "sh", "-c",
                      line[k]) == 0);
        CHECKF(tk_wait_int_at_least(&server, k + 1, 10000, "LLEN %s", queue) == 0,
               "waiter %c never queued", 'B' + k);
    }
    fclose(fopen(go, "w"));
    for (int k = 0; k < 3; k++) {
        int st = cli_wait(&w[k], CLI_TIMEOUT_MS);
        cli_result r = cli_collect(&w[k], st, 0);

        expect_status(&r, 0, "fair waiter");
        cli_result_free(&r);
    }
    cli_result ra = cli_collect(&a, cli_wait(&a, CLI_TIMEOUT_MS), 0);
    expect_status(&ra, 0, "fair holder");
    cli_result_free(&ra);
    text = cli_slurp(log);
    CHECK_STR_EQ(text, "B\nC\nD\n");
    free(text);
}

/* Fenced holders one at a time, each with a larger token than the one before. */
static void test_fenced_tokens_increase(void)
{
    const char *log = cli_path("fe.events"), *tokens = cli_path("fe.tokens");
    char hold[300], script[800];
    long long prev = 0, t;
    tk_hold_report e;
    char *text, *p;
    int n = 0;

    snprintf(hold, sizeof hold, "echo \"$RLK_FENCE_TOKEN\" >> %s; sleep 0.03", tokens);
    cli_hold_script(script, sizeof script, log, 'X', "\"$RLK_FENCE_TOKEN\"", hold);
    e = run_logged(CONCURRENT,
                   (const char *const[]){"lock", "--fenced", "fenced1", "-w", "30", NULL},
                   script, log);
    CHECKF(e.peak == 1 && e.conflicts == 0 && e.regressions == 0,
           "fenced holders overlapped (%d at once) or tokens went back (%ld)", e.peak,
           e.regressions);
    text = cli_slurp(tokens);
    for (p = text; sscanf(p, "%lld", &t) == 1; n++) {
        CHECKF(t > prev, "token %lld after %lld: not increasing:\n%s", t, prev, text);
        prev = t;
        p = strchr(p, '\n');
        if (!p)
            break;
        p++;
    }
    CHECKF(n == CONCURRENT, "%d tokens:\n%s", n, text);
    free(text);
}

/* n = 2 permits, 4 holders: two wait for each other inside, never three. */
static void test_semaphore_permits(void)
{
    const char *log = cli_path("s.events");
    char barrier[300], script[900];
    tk_hold_report e;

    cli_hold_barrier(barrier, sizeof barrier, log, 2);
    cli_hold_script(script, sizeof script, log, 'S', NULL, barrier);
    e = run_logged(CONCURRENT,
                   (const char *const[]){"semaphore", "sem1", "--permits", "2", "-w", "30", NULL},
                   script, log);
    CHECKF(e.peak_permits == 2, "%lld permits held at once with 2 permits", e.peak_permits);
    CHECKF(fx_get_is("sem1", "2"), "the permits did not all come back");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "{sem1}:timeout"), 0);
}

/* ---------------------------------------------------------------- not acquired */

static void expect_busy(const char *const *args, int code, const char *message)
{
    cli_result r = cli_run(args);

    expect_status(&r, code, message);
    CHECK_STR_EQ(r.err, message);
    cli_result_free(&r);
}

#define BUSY(code, message, ...) \
    expect_busy((const char *const[]){__VA_ARGS__, NULL}, code, message)

static void test_not_acquired(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_rwlock *rw = c ? rlk_rwlock_new(c, "busy-rw") : NULL;
    rlk_fairlock *f = c ? rlk_fairlock_new(c, "busy-fair") : NULL;
    rlk_fenced *fe = c ? rlk_fenced_new(c, "busy-fenced") : NULL;
    rlk_psemaphore *s = c ? rlk_psemaphore_new(c, "busy-sem") : NULL;
    char id[RLK_PERMIT_ID_SIZE];
    const char *ran = cli_path("busy.ran");
    char touch[500];
    long long t0;

    REQUIRE(rw && f && fe && s);
    snprintf(touch, sizeof touch, "touch %s", ran);
    REQUIRE_INT_EQ(rlk_rwlock_try_lock(rw, RLK_RW_WRITE, 0, 20000), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_try_lock(f, 0, 20000), RLK_OK);
    REQUIRE_INT_EQ(rlk_fenced_try_lock(fe, 0, 20000, NULL), RLK_OK);
    REQUIRE_INT_EQ(rlk_psemaphore_try_set_permits(s, 1, NULL), RLK_OK);
    REQUIRE_INT_EQ(rlk_psemaphore_try_acquire(s, 0, 20000, id), RLK_OK);

    t0 = rlk_fx_now_ms();
    BUSY(9, "rlk: read lock busy-rw: still held after 0.3 s\n", "lock", "--read", "busy-rw", "-w",
         "0.3", "-E", "9", "--", "sh", "-c", touch);
    CHECKF(rlk_fx_now_ms() - t0 >= 300, "-w 0.3 returned after %lld ms", rlk_fx_now_ms() - t0);
    BUSY(1, "rlk: write lock busy-rw: held by another\n", "lock", "--write", "busy-rw", "-n",
         "--", "sh", "-c", touch);
    BUSY(1, "rlk: fair lock busy-fair: still held after 0.2 s\n", "lock", "--fair", "busy-fair",
         "-w", "0.2", "--", "sh", "-c", touch);
    BUSY(75, "rlk: fenced lock busy-fenced: held by another\n", "lock", "--fenced",
         "busy-fenced", "--no-wait", "--conflict-exit-code=75", "--", "sh", "-c", touch);
    BUSY(9, "rlk: semaphore busy-sem: no permit free after 0.3 s\n", "semaphore", "busy-sem",
         "--permits", "1", "-w", "0.3", "-E", "9", "--", "sh", "-c", touch);
    BUSY(1, "rlk: semaphore busy-sem: no permit free\n", "semaphore", "busy-sem", "--permits", "1",
         "--no-wait", "--", "sh", "-c", touch);
    CHECKF(access(ran, F_OK) != 0, "a command ran without its lock");
    /* A fair waiter that gave up left the queue. */
    CHECK_INT_EQ(tk_int(&server, "LLEN %s", "redisson_lock_queue:{busy-fair}"), 0);

    CHECK_INT_EQ(rlk_rwlock_unlock(rw, RLK_RW_WRITE), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_unlock(f), RLK_OK);
    CHECK_INT_EQ(rlk_fenced_unlock(fe), RLK_OK);
    CHECK_INT_EQ(rlk_psemaphore_release(s, id), RLK_OK);
    rlk_rwlock_free(rw);
    rlk_fairlock_free(f);
    rlk_fenced_free(fe);
    rlk_psemaphore_free(s);
    rlk_free(c);
}

/* ---------------------------------------------------------------- environment */

/* Runs `rlk ARGS -- sh -c` a script that saves its RLK_ variables and what
 * `rlk inspect --json` shows meanwhile; returns the env text (caller frees). */
static char *run_env(const char *const *lead, const char *tag, json_value **inspected)
{
    char script[700], envf[64], jsonf[64];
    const char *args[16];
    int k = 0;

    snprintf(envf, sizeof envf, "env.%s", tag);
    snprintf(jsonf, sizeof jsonf, "env.%s.json", tag);
    /* inspect's exit: 0 held, 1 free (a semaphore with permits left); either is a reading. */
    snprintf(script, sizeof script, "env | grep '^RLK_' > %s; \"$RLK_BIN\" inspect --json "
             "\"$RLK_LOCK_NAME\" > %s; [ $? -le 1 ]", cli_path(envf), cli_path(jsonf));
    for (; lead[k] && k < 10; k++)
        args[k] = lead[k];
    args[k++] = "--";
    args[k++] = "sh";
    args[k++] = "-c";
    args[k++] = script;
    args[k] = NULL;
    cli_result r = cli_run(args);
    expect_status(&r, 0, tag);
    cli_result_free(&r);
    *inspected = parse_file_json(cli_path(jsonf));
    return cli_slurp(cli_path(envf));
}

static void check_env_lock(const char *const *lead, const char *name, const char *kind,
                           const char *json_kind)
{
    json_value *j = NULL;
    char *env = run_env(lead, kind, &j);
    char *n = env_value(env, "RLK_LOCK_NAME"), *k = env_value(env, "RLK_LOCK_KIND");
    char *o = env_value(env, "RLK_LOCK_OWNER"), *t = env_value(env, "RLK_FENCE_TOKEN");

    CHECK_STR_EQ(n, name);
    CHECK_STR_EQ(k, kind);
    CHECKF(is_holder_id(o), "%s: RLK_LOCK_OWNER is not <uuid>:<thread id>: \"%s\"", kind, o);
    CHECK_STR_EQ(json_get_string(j, "kind"), json_kind);
    CHECK_STR_EQ(json_get_string(json_at(json_get(j, "holders"), 0), "owner"), o);
    if (strcmp(kind, "fenced") == 0)
        CHECKF(atoll(t) > 0 && atoll(t) == (long long)json_get_number(j, "fence_token", -1),
               "RLK_FENCE_TOKEN \"%s\" is not the lock's last token %g", t,
               json_get_number(j, "fence_token", -1));
    else
        CHECKF(strcmp(t, "") == 0, "%s: RLK_FENCE_TOKEN passed on: \"%s\"", kind, t);
    free(n);
    free(k);
    free(o);
    free(t);
    free(env);
    json_free(j);
}

static void test_environment(void)
{
    /* A stale token in rlk's own environment must not reach a non-fenced command. */
    setenv("RLK_FENCE_TOKEN", "stale", 1);
    check_env_lock((const char *const[]){"lock", "--read", "env-rw", NULL}, "env-rw", "read",
                   "rwlock");
    check_env_lock((const char *const[]){"lock", "--write", "env-rw", NULL}, "env-rw", "write",
                   "rwlock");
    check_env_lock((const char *const[]){"lock", "--fair", "env-fair", NULL}, "env-fair", "fair",
                   "fair");    /* no waiters: told by rlk lock --fair's kind marker */
    check_env_lock((const char *const[]){"lock", "--fenced", "env-fenced", NULL}, "env-fenced",
                   "fenced", "fenced");
    check_env_lock((const char *const[]){"lock", "env-plain", NULL}, "env-plain", "lock",
                   "reentrant");
    unsetenv("RLK_FENCE_TOKEN");
}

static void test_environment_semaphore(void)
{
    json_value *j = NULL;
    char *env = run_env((const char *const[]){"semaphore", "env-sem", "--permits", "3", "--take", "2",
                                              NULL}, "semaphore", &j);
    char *k = env_value(env, "RLK_LOCK_KIND"), *o = env_value(env, "RLK_LOCK_OWNER");
    const json_value *permits = json_get(j, "permits");
    char id0[40] = "", id1[40] = "";

    CHECK_STR_EQ(k, "semaphore");
    CHECKF(sscanf(o, "%39s %39s", id0, id1) == 2 && is_hex(id0, 32) && is_hex(id1, 32),
           "RLK_LOCK_OWNER is not two permit ids: \"%s\"", o);
    CHECK_STR_EQ(json_get_string(j, "kind"), "psemaphore");
    CHECK(json_get_number(j, "available", -1) == 1);
    CHECK(json_get_number(j, "held", -1) == 2);
    for (size_t i = 0; i < 2; i++) {
        const char *id = json_get_string(json_at(permits, i), "id");

        CHECKF(id && (strcmp(id, id0) == 0 || strcmp(id, id1) == 0),
               "permit %zu of inspect is not one of the command's: %s", i, id ? id : "(none)");
    }
    CHECKF(fx_get_is("env-sem", "3"), "the permits did not come back");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "{env-sem}:timeout"), 0);
    free(k);
    free(o);
    free(env);
    json_free(j);
}

/* ---------------------------------------------------------------- nesting */

static void test_nested(void)
{
    cli_result r;

    /* The inner rlk re-enters its parent's lock instead of waiting for it. */
    r = RUN("lock", "nest", "--", "sh", "-c",
            "\"$RLK_BIN\" lock nest -n -- sh -c '\"$RLK_BIN\" inspect --json nest' > \"$T/nest\"");
    expect_status(&r, 0, "nested rlk lock");
    cli_result_free(&r);
    char *text = cli_slurp(cli_path("nest"));
    CHECKF(strstr(text, "\"count\":2") != NULL, "the nested lock was not re-entered: %s", text);
    free(text);

    /* A reader asking for the write lock: refused at once, not a deadlock. */
    r = RUN("lock", "--read", "nest-rw", "--", "sh", "-c",
            "\"$RLK_BIN\" lock --write nest-rw -- true");
    expect_status(&r, 2, "write inside read");
    expect_one_line_error(&r, "write inside read");
    CHECK_STR_CONTAINS(r.err, "rlk: write lock nest-rw: refused");
    CHECK_STR_CONTAINS(r.err, "cannot upgrade to the write lock");
    CHECKF(r.ms < 5000, "the refusal took %lld ms", r.ms);
    cli_result_free(&r);

    /* Another kind on the parent's name (the same key under another kind's rules): refused
     * at once, before connecting, instead of waiting for its own parent for ever. */
    {
        static const char *const pairs[][3] = {
            {"", "--fenced", "fenced lock"},            /* "": the reentrant lock */
            {"--non-reentrant", "--spin", "lock"},
            {"--fenced", "--spin", "lock"},
            {"--spin", "--fair", "fair lock"},
            {"--spin", "--write", "write lock"},
        };

        for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++) {
            char inner[300], want[200], what[100];

            snprintf(inner, sizeof inner, "\"$RLK_BIN\" lock %s nest-kind -- true", pairs[k][1]);
            snprintf(what, sizeof what, "%s inside %s", pairs[k][1], pairs[k][0]);
            snprintf(want, sizeof want, "rlk: %s nest-kind: refused: the enclosing rlk lock holds "
                     "nest-kind as another kind", pairs[k][2]);
            r = pairs[k][0][0] ? RUN("lock", pairs[k][0], "nest-kind", "--", "sh", "-c", inner)
                               : RUN("lock", "nest-kind", "--", "sh", "-c", inner);
            expect_status(&r, 2, what);
            expect_one_line_error(&r, what);
            CHECK_STR_CONTAINS(r.err, want);
            CHECKF(r.ms < 5000, "%s: the refusal took %lld ms", what, r.ms);
            cli_result_free(&r);
        }
        CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "nest-kind"), 0);
    }

    /* The writer may read. */
    r = RUN("lock", "--write", "nest-rw", "--", "sh", "-c",
            "\"$RLK_BIN\" lock --read nest-rw -n -- true");
    expect_status(&r, 0, "read inside write");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "nest-rw"), 0);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_help);
    RUN_TEST(test_usage_errors);
    RUN_TEST(test_writers_one_at_a_time);
    RUN_TEST(test_readers_together);
    RUN_TEST(test_readers_and_writers);
    RUN_TEST(test_fair_one_at_a_time);
    RUN_TEST(test_fair_order);
    RUN_TEST(test_fenced_tokens_increase);
    RUN_TEST(test_semaphore_permits);
    RUN_TEST(test_not_acquired);
    RUN_TEST(test_environment);
    RUN_TEST(test_environment_semaphore);
    RUN_TEST(test_nested);
    cli_main_end(&server, 1);
    return check_summary("it_cli_modes");
}
