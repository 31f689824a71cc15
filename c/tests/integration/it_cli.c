/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli.c - the rlk command-line tool, run as a child process against
 * fixture servers: --help outputs, scripts list/load/verify, eval, and the
 * documented exit codes (0 ok, 2 usage/bad input, 3 connection/auth,
 * 4 error reply, 5 scripts missing).
 *
 * Usage: it_cli PATH_TO_RLK [BUNDLE_DIR]
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "fixture.h"

#include <rlk.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define CLI_TIMEOUT_MS 20000
#define EXIT_USAGE 2
#define EXIT_CONNECT 3
#define EXIT_REPLY 4
#define EXIT_SCRIPTS 5

static const char *cli_path;
static const char *bundle_dir;
static rlk_fx_server server;
static char url[128];
static char outdir[] = "/tmp/rlk-it-cli-XXXXXX";

typedef struct cli_result {
    int status; /* exit code; 128 + signal; -1 when it could not run */
    char *out;
    char *err;
} cli_result;

/* ------------------------------------------------------------ running rlk */

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long size;

    if (!f)
        return strdup("");
    fseek(f, 0, SEEK_END);
    size = ftell(f);
    rewind(f);
    buf = malloc((size_t)size + 1);
    if (buf) {
        size_t n = fread(buf, 1, (size_t)size, f);
        buf[n] = '\0';
    }
    fclose(f);
    return buf ? buf : strdup("");
}

static void cli_child(char *const argv[], const char *env_url, const char *out,
                      const char *err)
{
    int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int fe = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    if (fo < 0 || fe < 0)
        _exit(126);
    dup2(fo, STDOUT_FILENO);
    dup2(fe, STDERR_FILENO);
    close(fo);
    close(fe);
    if (env_url)
        setenv("RLK_URL", env_url, 1);
    else
        unsetenv("RLK_URL"); /* never fall back to a real 127.0.0.1:6379 */
    execv(cli_path, argv);
    _exit(127);
}

static int cli_wait(pid_t pid)
{
    long long deadline = rlk_fx_now_ms() + CLI_TIMEOUT_MS;
    int status;
    pid_t r;

    while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "  rlk did not finish in %d ms; killed\n", CLI_TIMEOUT_MS);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        rlk_fx_sleep_ms(2);
    }
    if (r < 0)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* Runs rlk with the NULL-terminated args (argv[0] is added). env_url: the
 * $RLK_URL to set, or NULL to unset it. */
static cli_result run_env(const char *env_url, const char *const *args)
{
    char *argv[32];
    char out[256], err[256];
    cli_result res = {-1, NULL, NULL};
    int n = 0;
    pid_t pid;

    argv[n++] = (char *)cli_path;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = (char *)args[i];
    argv[n] = NULL;
    snprintf(out, sizeof out, "%s/stdout", outdir);
    snprintf(err, sizeof err, "%s/stderr", outdir);
    fflush(NULL);
    pid = fork();
    if (pid == 0)
        cli_child(argv, env_url, out, err);
    if (pid > 0)
        res.status = cli_wait(pid);
    res.out = slurp(out);
    res.err = slurp(err);
    unlink(out);
    unlink(err);
    return res;
}

#define RUN(...) run_env(NULL, (const char *const[]){__VA_ARGS__, NULL})

static void cli_free(cli_result *r)
{
    free(r->out);
    free(r->err);
}

/* Checks the exit status; shows the output when it differs. */
static int expect_status(const cli_result *r, int want, const char *what)
{
    return CHECKF(r->status == want, "%s: exit %d, expected %d\n    stdout: %s\n    stderr: %s",
                  what, r->status, want, r->out, r->err);
}

/* A failing command says "rlk: <message>" on one line of stderr. */
static void expect_one_line_error(const cli_result *r, const char *what)
{
    const char *nl = strchr(r->err, '\n');
    CHECKF(strncmp(r->err, "rlk: ", 5) == 0, "%s: stderr does not start with \"rlk: \": %s", what,
           r->err);
    CHECKF(nl != NULL && nl[1] == '\0', "%s: error is not one line: %s", what, r->err);
}

/* 1 when the line containing `unique` also has `word` as a whole
 * (whitespace-separated) word. */
static int line_has_words(const char *text, const char *unique, const char *word)
{
    const char *hit = strstr(text, unique), *start, *end, *p;
    size_t n = strlen(word);

    if (!hit)
        return 0;
    start = hit;
    while (start > text && start[-1] != '\n')
        start--;
    end = strchr(hit, '\n');
    if (!end)
        end = hit + strlen(hit);
    for (p = start; p + n <= end; p++) {
        if (strncmp(p, word, n) == 0 && (p == start || p[-1] == ' ' || p[-1] == '\t') &&
            (p + n == end || p[n] == ' ' || p[n] == '\t'))
            return 1;
    }
    return 0;
}

/* Lines that carry the SHA-1 of an embedded script (a header line does not). */
static int count_lines_with_sha(const char *s)
{
    int n = 0;

    while (*s) {
        const char *nl = strchr(s, '\n');
        size_t len = nl ? (size_t)(nl - s) : strlen(s);
        for (size_t i = 0; i < rlk_embedded_count(); i++) {
            const char *hit = strstr(s, rlk_embedded_at(i)->sha1);
            if (hit && hit < s + len) {
                n++;
                break;
            }
        }
        s += len + (nl ? 1 : 0);
    }
    return n;
}

static void server_cmd(const char *cmd)
{
    redisReply *r = rlk_fx_command(&server, cmd);
    CHECKF(r && r->type != REDIS_REPLY_ERROR, "%s", cmd);
    if (r)
        freeReplyObject(r);
}

/* How many embedded scripts the server holds (SCRIPT EXISTS by SHA-1). */
static long server_holds(void)
{
    long held = 0;
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        redisReply *r = rlk_fx_command(&server, "SCRIPT EXISTS %s", rlk_embedded_at(i)->sha1);
        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
            held += r->element[0]->integer == 1;
        if (r)
            freeReplyObject(r);
    }
    return held;
}

/* ------------------------------------------------------------ tests */

static void test_help_and_version(void)
{
    cli_result r = RUN("--help");

    expect_status(&r, 0, "rlk --help");
    CHECK_STR_CONTAINS(r.out, "usage: rlk");
    CHECK_STR_CONTAINS(r.out, "scripts");
    CHECK_STR_CONTAINS(r.out, "eval");
    CHECK_STR_CONTAINS(r.out, "--url");
    CHECK_STR_CONTAINS(r.out, "Exit codes");
    for (int code = 0; code <= 5; code++) {
        char line[8];
        snprintf(line, sizeof line, "  %d  ", code);
        CHECKF(strstr(r.out, line) != NULL, "--help does not document exit code %d", code);
    }
    CHECK_STR_EQ(r.err, "");
    cli_free(&r);

    r = RUN("scripts", "--help");
    expect_status(&r, 0, "rlk scripts --help");
    CHECK_STR_CONTAINS(r.out, "list");
    CHECK_STR_CONTAINS(r.out, "load");
    CHECK_STR_CONTAINS(r.out, "verify");
    CHECK_STR_CONTAINS(r.out, "--bundle");
    cli_free(&r);

    r = RUN("eval", "--help");
    expect_status(&r, 0, "rlk eval --help");
    CHECK_STR_CONTAINS(r.out, "--key");
    CHECK_STR_CONTAINS(r.out, "--arg");
    cli_free(&r);

    r = RUN("--version");
    expect_status(&r, 0, "rlk --version");
    CHECK_STR_CONTAINS(r.out, RLK_VERSION);
    cli_free(&r);
}

static void test_usage_errors(void)
{
    cli_result r = RUN("frobnicate");

    expect_status(&r, EXIT_USAGE, "rlk frobnicate");
    expect_one_line_error(&r, "rlk frobnicate");
    CHECK_STR_CONTAINS(r.err, "frobnicate");
    CHECK_STR_EQ(r.out, "");
    cli_free(&r);

    r = run_env(NULL, (const char *const[]){NULL});
    expect_status(&r, EXIT_USAGE, "rlk (no command)");
    cli_free(&r);

    r = RUN("--bogus-option", "scripts", "list");
    expect_status(&r, EXIT_USAGE, "rlk --bogus-option");
    expect_one_line_error(&r, "rlk --bogus-option");
    cli_free(&r);

    r = RUN("scripts", "frob");
    expect_status(&r, EXIT_USAGE, "rlk scripts frob");
    cli_free(&r);

    r = RUN("--url", url, "eval");
    expect_status(&r, EXIT_USAGE, "rlk eval (no name)");
    cli_free(&r);

    r = RUN("--url");
    expect_status(&r, EXIT_USAGE, "rlk --url (no value)");
    cli_free(&r);
}

static void test_scripts_list(void)
{
    char refused[64];
    cli_result r;

    /* Needs no server: the URL points at a port nobody listens on. */
    snprintf(refused, sizeof refused, "redis://127.0.0.1:%d", rlk_fx_refused_port());
    r = RUN("--url", refused, "scripts", "list");
    expect_status(&r, 0, "rlk scripts list");
    CHECK_INT_EQ(count_lines_with_sha(r.out), (long long)rlk_embedded_count());
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *si = rlk_embedded_at(i);
        CHECKF(line_has_words(r.out, si->sha1, si->name), "list lacks \"%s ... %s\"", si->name,
               si->sha1);
    }
    cli_free(&r);

    r = RUN("--url", refused, "scripts", "list", "--json");
    expect_status(&r, 0, "rlk scripts list --json");
    CHECKF(r.out[0] == '[' || r.out[0] == '{', "--json output: %.60s", r.out);
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        char quoted[128];
        snprintf(quoted, sizeof quoted, "\"%s\"", rlk_embedded_at(i)->name);
        CHECKF(strstr(r.out, quoted) != NULL, "--json lacks %s", quoted);
        snprintf(quoted, sizeof quoted, "\"%s\"", rlk_embedded_at(i)->sha1);
        CHECKF(strstr(r.out, quoted) != NULL, "--json lacks %s", quoted);
    }
    cli_free(&r);
}

static void test_scripts_verify_and_load(void)
{
    long n = (long)rlk_embedded_count();
    cli_result r;

    server_cmd("SCRIPT FLUSH");
    r = RUN("--url", url, "scripts", "verify");
    expect_status(&r, EXIT_SCRIPTS, "verify before load");
    CHECK_INT_EQ(server_holds(), 0); /* verify does not load */
    cli_free(&r);

    r = RUN("--url", url, "scripts", "load");
    expect_status(&r, 0, "load");
    CHECK_INT_EQ(server_holds(), n);
    cli_free(&r);

    r = RUN("scripts", "verify", "--url", url); /* --url after the command */
    expect_status(&r, 0, "verify after load");
    for (size_t i = 0; i < rlk_embedded_count(); i++)
        CHECKF(line_has_words(r.out, rlk_embedded_at(i)->sha1, rlk_embedded_at(i)->name),
               "verify does not list %s", rlk_embedded_at(i)->name);
    cli_free(&r);

    server_cmd("SCRIPT FLUSH");
    r = RUN("--url", url, "scripts", "verify", "--bundle", bundle_dir);
    expect_status(&r, EXIT_SCRIPTS, "verify --bundle before load");
    cli_free(&r);
    r = RUN("--url", url, "scripts", "load", "--bundle", bundle_dir);
    expect_status(&r, 0, "load --bundle");
    CHECK_INT_EQ(server_holds(), n);
    cli_free(&r);
    r = RUN("--url", url, "scripts", "verify", "--bundle", bundle_dir);
    expect_status(&r, 0, "verify --bundle after load");
    cli_free(&r);

    r = RUN("--url", url, "scripts", "load", "--bundle", "/nonexistent/rlk-bundle");
    expect_status(&r, EXIT_USAGE, "load --bundle (missing directory)");
    expect_one_line_error(&r, "load --bundle (missing directory)");
    cli_free(&r);
}

static void test_eval(void)
{
    cli_result r;
    redisReply *v;

    server_cmd("FLUSHALL");
    r = RUN("--url", url, "eval", "token/acquire", "--key", "{it}:cli", "--arg", "tok-1",
            "--arg", "60000", "--no-raw");
    expect_status(&r, 0, "eval token/acquire");
    CHECK_STR_EQ(r.out, "(nil)\n");
    cli_free(&r);
    v = rlk_fx_command(&server, "GET {it}:cli");
    CHECK(v && v->type == REDIS_REPLY_STRING && strcmp(v->str, "tok-1") == 0);
    if (v)
        freeReplyObject(v);

    r = RUN("--url", url, "eval", "token/acquire", "--key", "{it}:cli", "--arg", "tok-2",
            "--arg", "60000", "--no-raw");
    expect_status(&r, 0, "eval token/acquire (held)");
    CHECK_STR_PREFIX(r.out, "(integer) ");
    CHECKF(atol(r.out + 10) > 50000 && atol(r.out + 10) <= 60000, "PTTL %s", r.out);
    cli_free(&r);

    /* Not on a terminal: raw values, as redis-cli prints them. */
    r = RUN("--url", url, "eval", "token/acquire", "--key", "{it}:cli", "--arg", "tok-2",
            "--arg", "60000");
    expect_status(&r, 0, "eval token/acquire (held, raw)");
    CHECKF(atol(r.out) > 50000 && atol(r.out) <= 60000 && strchr(r.out, '(') == NULL,
           "raw PTTL: %s", r.out);
    cli_free(&r);

    r = run_env(url, (const char *const[]){"eval", "token/release", "--key", "{it}:cli", "--arg",
                                           "tok-1", "--no-raw", NULL}); /* URL from $RLK_URL */
    expect_status(&r, 0, "eval token/release");
    CHECK_STR_EQ(r.out, "(integer) 1\n");
    cli_free(&r);

    r = RUN("--url", url, "eval", "reentrant/renew_many", "--key", "{it}:a", "--key", "{it}:b",
            "--arg", "1000", "--arg", "o:1", "--no-raw");
    expect_status(&r, 0, "eval reentrant/renew_many");
    CHECK_STR_EQ(r.out, "1) (integer) 0\n2) (integer) 0\n");
    cli_free(&r);
    r = RUN("--url", url, "eval", "reentrant/renew_many", "--key", "{it}:a", "--key", "{it}:b",
            "--arg", "1000", "--arg", "o:1", "--raw");
    expect_status(&r, 0, "eval reentrant/renew_many --raw");
    CHECK_STR_EQ(r.out, "0\n0\n");
    cli_free(&r);

    /* An error reply: exit 4, its text on stderr, nothing changed. */
    server_cmd("FLUSHALL");
    r = RUN("--url", url, "eval", "token/acquire", "--key", "{it}:cli", "--arg", "",
            "--arg", "60000");
    expect_status(&r, EXIT_REPLY, "eval with an empty token");
    expect_one_line_error(&r, "eval with an empty token");
    CHECK_STR_CONTAINS(r.err, "RLK_BADTOKEN");
    CHECK_STR_EQ(r.out, "");
    cli_free(&r);
    v = rlk_fx_command(&server, "DBSIZE");
    CHECK(v && v->type == REDIS_REPLY_INTEGER && v->integer == 0);
    if (v)
        freeReplyObject(v);

    /* An ARG that starts with '-' is a value, not an option. */
    r = RUN("--url", url, "eval", "token/acquire", "--key", "{it}:cli", "--arg", "tok",
            "--arg", "-5");
    expect_status(&r, EXIT_REPLY, "eval with lease -5");
    CHECK_STR_CONTAINS(r.err, "RLK_BADLEASE");
    cli_free(&r);

    r = RUN("--url", url, "eval", "no/such", "--key", "k");
    expect_status(&r, EXIT_USAGE, "eval of an unknown script");
    expect_one_line_error(&r, "eval of an unknown script");
    CHECK_STR_CONTAINS(r.err, "no/such");
    cli_free(&r);
}

static void test_bad_url(void)
{
    cli_result r = RUN("--url", "redis://127.0.0.1:notaport", "scripts", "verify");

    expect_status(&r, EXIT_USAGE, "verify with a bad URL");
    expect_one_line_error(&r, "verify with a bad URL");
    cli_free(&r);

    r = RUN("--url", "http://example.invalid/", "eval", "token/release", "--key", "k", "--arg",
            "t");
    expect_status(&r, EXIT_USAGE, "eval with a bad URL");
    cli_free(&r);

    r = run_env("redis://127.0.0.1:99999", (const char *const[]){"scripts", "load", NULL});
    expect_status(&r, EXIT_USAGE, "load with a bad $RLK_URL");
    cli_free(&r);
}

static void test_connection_errors(void)
{
    char refused[64], wrongpass[128];
    rlk_fx_config cfg;
    rlk_fx_server secured;
    cli_result r;

    snprintf(refused, sizeof refused, "redis://127.0.0.1:%d", rlk_fx_refused_port());
    r = RUN("--url", refused, "scripts", "verify");
    expect_status(&r, EXIT_CONNECT, "verify, connection refused");
    expect_one_line_error(&r, "verify, connection refused");
    cli_free(&r);
    r = RUN("--url", refused, "eval", "token/release", "--key", "k", "--arg", "t");
    expect_status(&r, EXIT_CONNECT, "eval, connection refused");
    cli_free(&r);

    rlk_fx_config_init(&cfg);
    cfg.requirepass = "s3cret";
    REQUIRE(rlk_fx_start(&secured, &cfg) == 0);
    snprintf(wrongpass, sizeof wrongpass, "%s://:wrong@127.0.0.1:%d",
             secured.tls ? "rediss" : "redis", secured.port);
    r = RUN("--url", wrongpass, "scripts", "load");
    expect_status(&r, EXIT_CONNECT, "load, wrong password");
    expect_one_line_error(&r, "load, wrong password");
    CHECKF(strstr(r.err, ":wrong@") == NULL, "the password shows in the error: %s", r.err);
    cli_free(&r);
    snprintf(wrongpass, sizeof wrongpass, "%s://:s3cret@127.0.0.1:%d",
             secured.tls ? "rediss" : "redis", secured.port);
    r = RUN("--url", wrongpass, "scripts", "load");
    expect_status(&r, 0, "load, right password");
    cli_free(&r);
    rlk_fx_stop(&secured);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: it_cli PATH_TO_RLK [BUNDLE_DIR]\n");
        return 2;
    }
    cli_path = argv[1];
    bundle_dir = argc > 2 ? argv[2] : "";
    if (access(cli_path, X_OK) != 0) {
        fprintf(stderr, "it_cli: %s is not executable\n", cli_path);
        return 1;
    }
    if (!mkdtemp(outdir) || rlk_fx_start(&server, NULL) != 0 ||
        rlk_fx_url(&server, -1, url, sizeof url) != 0) {
        fprintf(stderr, "it_cli: setup failed\n");
        return 1;
    }
    RUN_TEST(test_help_and_version);
    RUN_TEST(test_usage_errors);
    RUN_TEST(test_scripts_list);
    RUN_TEST(test_scripts_verify_and_load);
    RUN_TEST(test_eval);
    RUN_TEST(test_bad_url);
    RUN_TEST(test_connection_errors);
    rlk_fx_stop(&server);
    rmdir(outdir);
    return check_summary("it_cli");
}
