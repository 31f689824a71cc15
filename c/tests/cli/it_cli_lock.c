/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_lock.c - `rlk lock` against a fixture server: help and usage
 * errors, exit codes (the command's, 128+N, 126/127, CODE when not
 * acquired with -w and with -n, 2 usage, 3 connection refused), the
 * command's environment and descriptors, and two `rlk lock` on one name
 * running their commands one after the other.
 *
 * Usage: it_cli_lock PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "json_mini.h"

#include <rlk.h>

#include <ctype.h>
#include <signal.h>
#include <unistd.h>

static rlk_fx_server server;
static char url[128];

/* ---------------------------------------------------------------- help and usage */

static void test_help(void)
{
    cli_result r = RUN("lock", "--help");

    expect_status(&r, 0, "lock --help");
    CHECK_STR_PREFIX(r.out, "usage: rlk lock NAME");
    CHECK_STR_CONTAINS(r.out, "-- COMMAND");
    CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);

    r = RUN("--help");
    expect_status(&r, 0, "--help");
    CHECK_STR_CONTAINS(r.out, "  lock ");
    CHECK_STR_CONTAINS(r.out, "  inspect ");
    CHECK_STR_CONTAINS(r.out, "  unlock ");
    CHECK_STR_CONTAINS(r.out, "6  lock lost while the command ran");
    cli_result_free(&r);

    r = RUN("help", "inspect");
    expect_status(&r, 0, "help inspect");
    CHECK_STR_PREFIX(r.out, "usage: rlk inspect NAME");
    cli_result_free(&r);

    r = RUN("unlock", "-h");
    expect_status(&r, 0, "unlock -h");
    CHECK_STR_PREFIX(r.out, "usage: rlk unlock --force NAME");
    cli_result_free(&r);
}

/* Runs args, expects exit 2, one error line containing needle, and that no command ran. */
static void expect_usage(const char *const *args, const char *needle)
{
    cli_result r = cli_run(args);
    char what[200];

    snprintf(what, sizeof what, "rlk %s %s %s ...", args[0], args[1] ? args[1] : "",
             args[1] && args[2] ? args[2] : "");
    expect_status(&r, 2, what);
    expect_one_line_error(&r, what);
    CHECKF(strstr(r.err, needle) != NULL, "%s: stderr lacks \"%s\": %s", what, needle, r.err);
    CHECKF(strstr(r.err, "--help") != NULL, "%s: no hint to --help: %s", what, r.err);
    cli_result_free(&r);
}

#define USAGE(needle, ...) expect_usage((const char *const[]){__VA_ARGS__, NULL}, needle)

static void test_usage_errors(void)
{
    const char *ran = cli_path("usage.ran");
    char touch[500];

    snprintf(touch, sizeof touch, "touch %s", ran);
    USAGE("missing the lock NAME", "lock");
    USAGE("missing '--'", "lock", "u1");
    USAGE("put '--' before the command", "lock", "u1", "sh", "-c", touch);
    USAGE("missing the command after '--'", "lock", "u1", "--");
    USAGE("missing the lock NAME", "lock", "--", "sh", "-c", touch);
    USAGE("unknown option '-x'", "lock", "u1", "-x", "--", "sh", "-c", touch);
    USAGE("unknown option '--wiat'", "lock", "u1", "--wiat", "3", "--", "sh", "-c", touch);
    USAGE("option -w needs a number of seconds", "lock", "u1", "-w", "abc", "--", "sh", "-c", touch);
    USAGE("option -w needs a number of seconds", "lock", "u1", "-w", "-1", "--", "sh", "-c", touch);
    USAGE("option -w needs a number of seconds", "lock", "u1", "-w", "1e3", "--", "sh", "-c", touch);
    USAGE("option -w needs a value", "lock", "u1", "-w");
    USAGE("option -l needs a positive whole number", "lock", "u1", "-l", "0", "--", "true");
    USAGE("option -l needs a positive whole number", "lock", "u1", "-l", "1.5", "--", "true");
    USAGE("option -E needs an exit code", "lock", "u1", "-E", "256", "--", "true");
    USAGE("option -k needs a number of seconds", "lock", "u1", "-k", "x", "--", "true");
    USAGE("-n and -w exclude each other", "lock", "u1", "-n", "-w", "1", "--", "true");
    USAGE("must not be empty", "lock", "", "--", "true");
    /* inspect and unlock say it as every other command does (not a library function's error). */
    USAGE("the lock name must not be empty", "inspect", "");
    USAGE("the lock name must not be empty", "inspect", "", "--json");
    USAGE("the lock name must not be empty", "unlock", "--force", "");
    USAGE("only 'rlk unlock --force u1' is offered", "unlock", "u1");
    USAGE("missing the lock NAME", "unlock", "--force");
    USAGE("missing the lock NAME", "inspect");
    USAGE("unexpected argument 'b'", "inspect", "a", "b");
    USAGE("unknown option '--yaml'", "inspect", "a", "--yaml");
    CHECKF(access(ran, F_OK) != 0, "a usage error ran the command");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "u1"), 0);
}

/* ---------------------------------------------------------------- exit codes */

/* rlk lock NAME -- sh -c SCRIPT: the exit code, the lock released afterwards. */
static void expect_sh_status(const char *script, int want)
{
    cli_result r = RUN("lock", "codes", "--", "sh", "-c", script);

    expect_status(&r, want, script);
    CHECKF(tk_int(&server, "EXISTS %s", "codes") == 0, "%s: the lock is still there", script);
    cli_result_free(&r);
}

static void test_exit_codes(void)
{
    cli_result r;

    expect_sh_status("exit 0", 0);
    expect_sh_status("exit 7", 7);
    expect_sh_status("exit 255", 255);
    expect_sh_status("kill -TERM $$", 128 + 15);
    expect_sh_status("kill -KILL $$", 128 + 9);
    expect_sh_status("echo out; echo err >&2; exit 3", 3);

    r = RUN("lock", "codes", "--", "sh", "-c", "echo to-stdout; echo to-stderr >&2");
    expect_status(&r, 0, "output passes through");
    CHECK_STR_EQ(r.out, "to-stdout\n");
    CHECK_STR_EQ(r.err, "to-stderr\n");
    cli_result_free(&r);

    r = RUN("lock", "codes", "--", "/nonexistent/rlk-test-command", "arg");
    expect_status(&r, 127, "a command that does not exist");
    expect_one_line_error(&r, "a command that does not exist");
    CHECK_STR_CONTAINS(r.err, "cannot run '/nonexistent/rlk-test-command'");
    cli_result_free(&r);

    r = RUN("lock", "codes", "--", "rlk-test-no-such-command-in-path");
    expect_status(&r, 127, "a command not in PATH");
    cli_result_free(&r);

    r = RUN("lock", "codes", "--", cli_dir());
    expect_status(&r, 126, "a directory as the command");
    expect_one_line_error(&r, "a directory as the command");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "codes"), 0);
}

static void test_connection_refused(void)
{
    char dead[128];
    int port = rlk_fx_refused_port();
    const char *ran = cli_path("refused.ran");
    char touch[500];
    cli_result r;

    REQUIRE(port > 0);
    snprintf(dead, sizeof dead, "redis://127.0.0.1:%d", port);
    snprintf(touch, sizeof touch, "touch %s", ran);
    cli_set_url(dead);
    r = RUN("lock", "x", "--", "sh", "-c", touch);
    expect_status(&r, 3, "lock, connection refused");
    expect_one_line_error(&r, "lock, connection refused");
    cli_result_free(&r);
    r = RUN("inspect", "x");
    expect_status(&r, 3, "inspect, connection refused");
    expect_one_line_error(&r, "inspect, connection refused");
    cli_result_free(&r);
    r = RUN("unlock", "--force", "x");
    expect_status(&r, 3, "unlock, connection refused");
    expect_one_line_error(&r, "unlock, connection refused");
    cli_result_free(&r);
    cli_set_url(url);
    /* --url after the command name overrides $RLK_URL. */
    r = RUN("lock", "x", "--url", dead, "--", "sh", "-c", touch);
    expect_status(&r, 3, "lock --url, connection refused");
    cli_result_free(&r);
    CHECKF(access(ran, F_OK) != 0, "the command ran without the lock");
}

/* A stopped server (SIGSTOP): its kernel accepts the connection, nothing answers. inspect,
 * like lock and unlock, says the connection failed (exit 3, "connect ADDR: ..."), not the name
 * of a command it never asked for (the connection's CLIENT ID handshake). 5 s each: the
 * command timeout. */
static void test_stopped_server(void)
{
    static const char *const cmds[][4] = {{"inspect", "x"}, {"unlock", "--force", "x"}};
    rlk_fx_config cfg;
    rlk_fx_server stopped;
    char u[128], want[160];

    rlk_fx_config_init(&cfg);
    cfg.tls = -1;   /* plain TCP in the TLS pass too: the first round trip is what hangs */
    REQUIRE(rlk_fx_start(&stopped, &cfg) == 0);
    rlk_fx_url(&stopped, -1, u, sizeof u);
    snprintf(want, sizeof want, "connect 127.0.0.1:%d: no answer within ", stopped.port);
    REQUIRE(kill(stopped.pid, SIGSTOP) == 0);
    cli_set_url(u);
    for (size_t k = 0; k < sizeof cmds / sizeof cmds[0]; k++) {
        cli_result r = RUN(cmds[k][0], cmds[k][1], cmds[k][2], cmds[k][3]);

        expect_status(&r, 3, cmds[k][0]);
        expect_one_line_error(&r, cmds[k][0]);
        CHECK_STR_CONTAINS(r.err, want);
        CHECKF(strstr(r.err, "CLIENT ID") == NULL, "%s names CLIENT ID: %s", cmds[k][0], r.err);
        cli_result_free(&r);
    }
    cli_set_url(url);
    kill(stopped.pid, SIGCONT);
    rlk_fx_stop(&stopped);
}

/* ---------------------------------------------------------------- environment */

static int is_owner_id(const char *s)
{
    size_t n = strcspn(s, "\n");
    size_t k;

    if (n < 38 || s[36] != ':')
        return 0;
    for (k = 0; k < 36; k++)
        if (!(isxdigit((unsigned char)s[k]) || s[k] == '-'))
            return 0;
    for (k = 37; k < n; k++)
        if (!isdigit((unsigned char)s[k]))
            return 0;
    return 1;
}

static void check_env_json(const char *owner)
{
    char *text = cli_slurp(cli_path("env.json"));
    const char *err = NULL;
    json_value *j = json_parse(text, &err);
    const json_value *h;

    CHECKF(j != NULL, "inspect --json from the command is not JSON (%s): %s", err ? err : "",
           text);
    if (j) {
        h = json_at(json_get(j, "holders"), 0);
        CHECK_STR_EQ(json_get_string(j, "kind"), "reentrant");
        CHECK_STR_EQ(json_get_string(h, "owner"), owner);
        CHECK(json_get_number(h, "count", 0) == 1);
        CHECK(json_at(json_get(j, "holders"), 1) == NULL);
        CHECKF(json_get_number(j, "ttl_ms", -9) > 0 && json_get_number(j, "ttl_ms", -9) <= 30000,
               "ttl_ms %g", json_get_number(j, "ttl_ms", -9));
    }
    json_free(j);
    free(text);
}

static void test_environment(void)
{
    const char *script =
        "printf '%s\\n' \"$RLK_LOCK_NAME\" > \"$T/env.name\"; "
        "printf '%s\\n' \"$RLK_LOCK_OWNER\" > \"$T/env.owner\"; "
        "ls -l /proc/$$/fd > \"$T/env.fds\"; "
        "\"$RLK_BIN\" inspect --json \"$RLK_LOCK_NAME\" > \"$T/env.json\"";
    cli_result r = RUN("lock", "env-lock", "--", "sh", "-c", script);
    char *name, *owner, *fds;

    expect_status(&r, 0, "environment");
    cli_result_free(&r);
    name = cli_slurp(cli_path("env.name"));
    owner = cli_slurp(cli_path("env.owner"));
    fds = cli_slurp(cli_path("env.fds"));
    CHECK_STR_EQ(name, "env-lock\n");
    if (!is_owner_id(owner))
        CHECKF(0, "RLK_LOCK_OWNER is not <uuid>:<thread id>: \"%.200s\"", owner);
    owner[strcspn(owner, "\n")] = '\0';
    check_env_json(owner);
    CHECKF(strstr(fds, "socket:") == NULL, "the command inherited a socket:\n%s", fds);
    free(name);
    free(owner);
    free(fds);
}

/* ---------------------------------------------------------------- not acquired */

static void test_not_acquired(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_lock *l = c ? rlk_lock_new(c, "busy") : NULL;
    const char *ran = cli_path("busy.ran");
    char touch[500];
    cli_result r;

    REQUIRE(l != NULL);
    REQUIRE_INT_EQ(rlk_lock_try_lock(l, 0, 20000), RLK_OK);
    snprintf(touch, sizeof touch, "touch %s", ran);

    r = RUN("lock", "busy", "-w", "0.3", "-E", "9", "--", "sh", "-c", touch);
    expect_status(&r, 9, "-w 0.3 -E 9 on a held lock");
    CHECK_STR_EQ(r.err, "rlk: lock busy: still held after 0.3 s\n");
    CHECKF(r.ms >= 300 && r.ms < 5000, "-w 0.3 took %lld ms", r.ms);
    cli_result_free(&r);

    r = RUN("lock", "busy", "-n", "--", "sh", "-c", touch);
    expect_status(&r, 1, "-n on a held lock");
    CHECK_STR_EQ(r.err, "rlk: lock busy: held by another\n");
    cli_result_free(&r);

    r = RUN("lock", "busy", "--no-wait", "--conflict-exit-code=75", "--", "sh", "-c", touch);
    expect_status(&r, 75, "--no-wait --conflict-exit-code=75");
    cli_result_free(&r);

    r = RUN("lock", "busy", "-w0", "--", "sh", "-c", touch);
    expect_status(&r, 1, "-w0 on a held lock");
    CHECK_STR_EQ(r.err, "rlk: lock busy: still held after 0 s\n");
    cli_result_free(&r);
    CHECKF(access(ran, F_OK) != 0, "the command ran although the lock was held");

    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    r = RUN("lock", "busy", "-n", "--", "sh", "-c", touch);
    expect_status(&r, 0, "-n on a free lock");
    CHECKF(access(ran, F_OK) == 0, "the command did not run on a free lock");
    cli_result_free(&r);
    rlk_lock_free(l);
    rlk_free(c);
}

/* ---------------------------------------------------------------- one after the other */

/* A first holder parked on a file, a second one proven waiting (subscribed
 * to the lock's channel) before the first is let go. */
static void test_second_waits_for_first(void)
{
    const char *ev = cli_path("ser.events");
    char a[600], b[300];
    cli_proc pa, pb;
    char *events;
    int sa, sb;

    snprintf(a, sizeof a, "echo 'start A' >> %s; n=0; while [ ! -e %s ] && [ $n -lt 3000 ]; do "
             "sleep 0.01; n=$((n+1)); done; "
             "echo 'end A' >> %s", ev, cli_path("ser.go"), ev);
    snprintf(b, sizeof b, "echo 'start B' >> %s; echo 'end B' >> %s", ev, ev);
    REQUIRE(START(&pa, "lock", "ser", "--", "sh", "-c", a) == 0);
    CHECK(cli_wait_contains(ev, "start A", 10000) == 0);
    REQUIRE(START(&pb, "lock", "ser", "-w", "20", "--", "sh", "-c", b) == 0);
    CHECKF(fx_wait_waiter(&server, "ser", 10000) == 0, "the second rlk lock never waited");
    events = cli_slurp(ev);
    CHECK_STR_EQ(events, "start A\n");
    free(events);
    fclose(fopen(cli_path("ser.go"), "w"));
    sa = cli_wait(&pa, CLI_TIMEOUT_MS);
    sb = cli_wait(&pb, CLI_TIMEOUT_MS);
    cli_result ra = cli_collect(&pa, sa, 0), rb = cli_collect(&pb, sb, 0);
    expect_status(&ra, 0, "first holder");
    expect_status(&rb, 0, "second holder");
    cli_result_free(&ra);
    cli_result_free(&rb);
    events = cli_slurp(ev);
    CHECK_STR_EQ(events, "start A\nend A\nstart B\nend B\n");
    free(events);
}

#define SERIAL_PROCS 4

static void test_many_never_overlap(void)
{
    const char *ev = cli_path("many.events");
    char script[800];
    cli_proc p[SERIAL_PROCS];
    tk_hold_report e;
    int bad = 0;
    char *events;

    /* The sleep is the time spent inside the lock, not a synchronisation. */
    cli_hold_script(script, sizeof script, ev, 'X', NULL, "sleep 0.05");
    for (int i = 0; i < SERIAL_PROCS; i++)
        REQUIRE(START(&p[i], "lock", "many", "-w", "30", "--", "sh", "-c", script) == 0);
    for (int i = 0; i < SERIAL_PROCS; i++) {
        int st = cli_wait(&p[i], CLI_TIMEOUT_MS);
        cli_result r = cli_collect(&p[i], st, 0);

        expect_status(&r, 0, "concurrent rlk lock");
        cli_result_free(&r);
    }
    e = cli_holds_check(ev, &bad);
    events = cli_slurp(ev);
    CHECKF(bad == 0 && e.open == 0 && e.holds == SERIAL_PROCS && e.peak == 1 && e.conflicts == 0,
           "the commands overlapped or did not all run (%zu holds):\n%s", e.holds, events);
    free(events);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_help);
    RUN_TEST(test_usage_errors);
    RUN_TEST(test_exit_codes);
    RUN_TEST(test_connection_refused);
    RUN_TEST(test_stopped_server);
    RUN_TEST(test_environment);
    RUN_TEST(test_not_acquired);
    RUN_TEST(test_second_waits_for_first);
    RUN_TEST(test_many_never_overlap);
    cli_main_end(&server, 1);
    return check_summary("it_cli_lock");
}
