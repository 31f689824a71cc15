/*
 * it_cli_ops.c - credentials and the habits of redis-cli and flock users.
 *
 *   - -h / --help and --version only alone: `rlk -h HOST lock job -- cmd` is
 *     exit 2 naming --url, and runs nothing;
 *   - URL schemes are case-insensitive, rediss:// refused clearly, an empty
 *     $RLK_URL is an error;
 *   - --name for a name that starts with '-';
 *   - --verbose: connect info (password masked) and who holds the lock while
 *     rlk waits;
 *   - a password server: $RLK_PASSWORD, $REDISCLI_AUTH, --password-file,
 *     --url-file and their precedence; files that are missing, empty or
 *     readable by every user; the command's environment without credentials
 *     (and with them under --keep-env); the password never printed.
 *
 * Usage: it_cli_ops PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PASSWORD "s3cret-Pw"

static rlk_fx_server server;  /* no password */
static rlk_fx_server secure;  /* requirepass PASSWORD */
static char url[128], secure_url[128], secure_url_pw[160];

static void expect_usage(const cli_result *r, const char *what, const char *needle)
{
    expect_status(r, 2, what);
    expect_one_line_error(r, what);
    CHECKF(strstr(r->err, needle) != NULL, "%s: no '%s' in: %s", what, needle, r->err);
}

static void no_password_in(const cli_result *r, const char *what)
{
    CHECKF(strstr(r->out, PASSWORD) == NULL && strstr(r->err, PASSWORD) == NULL,
           "%s: the password was printed:\n%s%s", what, r->out, r->err);
}

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    REQUIREF(fd >= 0, "cannot create %s", path);
    REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    REQUIRE(chmod(path, mode) == 0);
}

/* ---------------------------------------------------------------- part 2 */

static void test_help_alone(void)
{
    const char *ran = cli_path("ran");
    cli_result r;

    unlink(ran);
    r = RUN("-h", "127.0.0.1", "lock", "job", "--", "touch", ran);
    expect_usage(&r, "rlk -h HOST lock", "--url");
    CHECK_STR_EQ(r.out, "");
    CHECKF(access(ran, F_OK) != 0, "rlk -h HOST lock ran the command");
    cli_result_free(&r);

    r = RUN("lock", "job", "-h", "127.0.0.1", "--", "touch", ran);
    expect_usage(&r, "rlk lock job -h HOST", "--url");
    CHECKF(access(ran, F_OK) != 0, "rlk lock job -h HOST ran the command");
    cli_result_free(&r);

    r = RUN("lock", "job", "--help", "--", "touch", ran);
    expect_usage(&r, "rlk lock job --help -- cmd", "alone");
    cli_result_free(&r);

    r = RUN("inspect", "x", "-h");
    expect_usage(&r, "rlk inspect x -h", "alone");
    cli_result_free(&r);

    r = RUN("-h");
    expect_status(&r, 0, "rlk -h");
    CHECK_STR_PREFIX(r.out, "usage: rlk");
    cli_result_free(&r);

    r = RUN("semaphore", "-h");
    expect_status(&r, 0, "rlk semaphore -h");
    CHECK_STR_PREFIX(r.out, "usage: rlk semaphore");
    cli_result_free(&r);
}

static void test_version_alone(void)
{
    cli_result r = RUN("--version");

    expect_status(&r, 0, "--version");
    CHECK_STR_PREFIX(r.out, "rlk ");
    cli_result_free(&r);

    r = RUN("--version", "lock", "job", "--", "true");
    expect_usage(&r, "--version with more", "--version");
    CHECK_STR_EQ(r.out, "");
    cli_result_free(&r);

    r = RUN("-p", "6379", "inspect", "x");
    expect_usage(&r, "redis-cli's -p", "--url");
    cli_result_free(&r);

    /* --version after a command's name prints the version (and runs nothing). */
    {
        const char *ran = cli_path("ran-version");
        const char *const *cases[] = {
            (const char *const[]){"lock", "x", "--version", NULL},
            (const char *const[]){"lock", "--version", NULL},
            (const char *const[]){"semaphore", "s", "--version", NULL},
            (const char *const[]){"top", "--version", NULL},
            (const char *const[]){"check", "--version", NULL},
            (const char *const[]){"lock", "x", "--version", "--", "touch", ran, NULL},
        };

        for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
            char what[80];

            snprintf(what, sizeof what, "rlk %s %s --version", cases[k][0],
                     strcmp(cases[k][1], "--version") ? cases[k][1] : "");
            r = cli_run(cases[k]);
            expect_status(&r, 0, what);
            CHECK_STR_PREFIX(r.out, "rlk ");
            CHECK_STR_CONTAINS(r.out, "script set ");
            cli_result_free(&r);
        }
        CHECKF(access(ran, F_OK) != 0, "rlk lock x --version -- cmd ran the command");
    }
}

static void test_url_forms(void)
{
    char upper[160];
    cli_result r;

    snprintf(upper, sizeof upper, "REDIS://127.0.0.1:%d/2", server.port);
    r = RUN("inspect", "--url", upper, "nothing");
    expect_status(&r, 1, "REDIS:// url");    /* 1: free */
    CHECK_STR_EQ(r.out, "nothing: no lock\n");
    cli_result_free(&r);

    snprintf(upper, sizeof upper, "REDIS://127.0.0.1:%d#upper-member", server.port);
    r = RUN("lock", "--all", upper, "--", "true");
    expect_status(&r, 0, "--all REDIS://...#name");
    cli_result_free(&r);

    /* TLS forms: bad TLS settings are a usage error before any connection. */
    r = RUN("inspect", "--url", "Rediss://127.0.0.1:6380", "--cacert", "/nonexistent/ca.pem", "x");
    expect_usage(&r, "Rediss:// url, unreadable --cacert", "--cacert /nonexistent/ca.pem");
    cli_result_free(&r);
    r = RUN("inspect", "--url", "unix:///tmp/rlk-none.sock", "--tls", "x");
    expect_usage(&r, "unix:// url with --tls", "unix://");
    cli_result_free(&r);
    r = RUN("inspect", "--url", "redis://127.0.0.1:6380", "--sni", "x.example", "x");
    expect_usage(&r, "redis:// url with --sni", "rediss://");
    cli_result_free(&r);

    cli_set_url("");
    r = RUN("inspect", "x");
    expect_usage(&r, "empty RLK_URL", "RLK_URL is set but empty");
    cli_result_free(&r);
    r = RUN("lock", "x", "--", "true");
    expect_usage(&r, "empty RLK_URL (lock)", "RLK_URL is set but empty");
    cli_result_free(&r);
    cli_set_url(url);
}

static void test_name_option(void)
{
    cli_result r = RUN("lock", "--name", "-dash", "--", "sh", "-c",
                       "echo \"$RLK_LOCK_NAME\" > \"$T/name\"");
    char *name;

    expect_status(&r, 0, "lock --name -dash");
    name = cli_slurp(cli_path("name"));
    CHECK_STR_EQ(name, "-dash\n");
    free(name);
    cli_result_free(&r);

    r = RUN("latch", "--name", "-l", "set", "2");
    expect_status(&r, 0, "latch --name -l set 2");
    cli_result_free(&r);
    r = RUN("latch", "count", "--name=-l");
    expect_status(&r, 0, "latch count --name=-l");
    CHECK_STR_EQ(r.out, "2\n");
    cli_result_free(&r);

    r = RUN("semaphore", "--name", "-s", "--permits", "1", "--", "true");
    expect_status(&r, 0, "semaphore --name -s");
    cli_result_free(&r);

    r = RUN("inspect", "--name", "-dash");
    expect_status(&r, 1, "inspect --name -dash");    /* 1: free */
    CHECK_STR_EQ(r.out, "-dash: no lock\n");
    cli_result_free(&r);

    r = RUN("unlock", "--force", "--name", "-dash");
    expect_status(&r, 0, "unlock --force --name -dash");
    CHECK_STR_EQ(r.out, "-dash: no lock to remove\n");
    cli_result_free(&r);

    r = RUN("lock", "a", "--name", "b", "--", "true");
    expect_usage(&r, "lock a --name b", "--");
    cli_result_free(&r);
}

static void test_verbose_waiting(void)
{
    const char *held = cli_path("verbose.held");
    char hold_cmd[400];
    cli_proc holder;
    cli_result r;
    int st;

    snprintf(hold_cmd, sizeof hold_cmd, "touch %s; sleep 2.5", held);
    REQUIRE(START(&holder, "lock", "vjob", "--", "sh", "-c", hold_cmd) == 0);
    REQUIREF(cli_wait_file(held, 10000) == 0, "the holder did not start");
    r = RUN("--verbose", "lock", "vjob", "-w", "15", "--", "true");
    expect_status(&r, 0, "--verbose lock while held");
    CHECK_STR_CONTAINS(r.err, "rlk: connecting to redis://127.0.0.1:");
    CHECK_STR_CONTAINS(r.err, "rlk: lock vjob: waiting for 1 s; held by ");
    CHECK_STR_CONTAINS(r.err, "(reentrant lock, ttl ");
    CHECK_STR_CONTAINS(r.err, "rlk: lock vjob: acquired after ");
    cli_result_free(&r);
    st = cli_wait(&holder, CLI_TIMEOUT_MS);
    r = cli_collect(&holder, st, 0);
    expect_status(&r, 0, "the holder");
    cli_result_free(&r);

    /* Not waiting: no report, only the connect lines. */
    r = RUN("lock", "vjob2", "--verbose", "--", "true");
    expect_status(&r, 0, "--verbose lock, free");
    CHECKF(strstr(r.err, "waiting") == NULL, "a report without a wait: %s", r.err);
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- part 1 */

/* Runs rlk inspect on the password server with the URL secure_url (no password). */
static cli_result inspect_secure(const char *const *extra)
{
    const char *args[12] = {"inspect", "pw-key"};
    int n = 2;

    for (int k = 0; extra && extra[k] && n < 11; k++)
        args[n++] = extra[k];
    args[n] = NULL;
    return cli_run(args);
}

static void expect_auth_ok(const char *const *extra, const char *what)
{
    cli_result r = inspect_secure(extra);

    expect_status(&r, 1, what);     /* 1: free */
    CHECK_STR_EQ(r.out, "pw-key: no lock\n");
    no_password_in(&r, what);
    cli_result_free(&r);
}

static void expect_auth_refused(const char *const *extra, const char *what)
{
    cli_result r = inspect_secure(extra);

    expect_status(&r, 3, what);
    expect_one_line_error(&r, what);
    no_password_in(&r, what);
    cli_result_free(&r);
}

static void test_password_sources(void)
{
    const char *good = cli_path("pw.good"), *bad = cli_path("pw.bad");

    write_file(good, PASSWORD "\n", 0600);
    write_file(bad, "not-it\r\n", 0600);
    cli_set_url(secure_url);
    unsetenv("RLK_PASSWORD");
    unsetenv("REDISCLI_AUTH");
    expect_auth_refused(NULL, "no password at all");

    setenv("REDISCLI_AUTH", PASSWORD, 1);
    expect_auth_ok(NULL, "REDISCLI_AUTH");
    setenv("RLK_PASSWORD", "wrong", 1);
    expect_auth_refused(NULL, "RLK_PASSWORD before REDISCLI_AUTH");
    setenv("RLK_PASSWORD", PASSWORD, 1);
    setenv("REDISCLI_AUTH", "wrong", 1);
    expect_auth_ok(NULL, "RLK_PASSWORD");
    setenv("RLK_PASSWORD", "wrong", 1);
    expect_auth_ok((const char *const[]){"--password-file", good, NULL},
                   "--password-file before RLK_PASSWORD");
    expect_auth_refused((const char *const[]){"--password-file", bad, NULL},
                        "a wrong --password-file (CRLF trimmed, still wrong)");
    expect_auth_ok((const char *const[]){"--url", secure_url_pw, "--password-file", bad, NULL},
                   "the URL's password before --password-file");
    unsetenv("RLK_PASSWORD");
    unsetenv("REDISCLI_AUTH");

    /* A user without a password in the URL takes the password from elsewhere. */
    {
        char user_url[160];

        snprintf(user_url, sizeof user_url, "redis://default@127.0.0.1:%d", secure.port);
        expect_auth_ok((const char *const[]){"--url", user_url, "--password-file", good, NULL},
                       "redis://user@host with --password-file");
    }
    cli_set_url(url);
}

static void test_bad_files(void)
{
    const char *open_file = cli_path("pw.world"), *empty = cli_path("pw.empty");
    const char *two = cli_path("pw.two"), *url_file = cli_path("url.file");
    char text[200];
    cli_result r;

    write_file(open_file, PASSWORD "\n", 0644);
    write_file(empty, "\n", 0600);
    write_file(two, "a\nb\n", 0600);
    r = RUN("--password-file", open_file, "inspect", "x");
    expect_usage(&r, "world-readable password file", "readable by every user");
    no_password_in(&r, "world-readable password file");
    cli_result_free(&r);
    r = RUN("inspect", "x", "--password-file", cli_path("missing"));
    expect_usage(&r, "missing password file", "No such file");
    cli_result_free(&r);
    r = RUN("lock", "x", "--password-file", empty, "--", "true");
    expect_usage(&r, "empty password file", "empty file");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "x"), 0);
    cli_result_free(&r);
    r = RUN("inspect", "x", "--password-file", two);
    expect_usage(&r, "two-line password file", "more than one line");
    cli_result_free(&r);

    snprintf(text, sizeof text, "%s\n", secure_url_pw);
    write_file(url_file, text, 0600);
    r = RUN("inspect", "pw-key", "--url-file", url_file);
    expect_status(&r, 1, "--url-file with a password");     /* 1: free */
    CHECK_STR_EQ(r.out, "pw-key: no lock\n");
    cli_result_free(&r);
    r = RUN("--url-file", url_file, "--url", url, "inspect", "x");
    expect_usage(&r, "--url and --url-file", "exclude each other");
    cli_result_free(&r);
    r = RUN("--url-file", empty, "inspect", "x");
    expect_usage(&r, "empty --url-file", "empty file");
    cli_result_free(&r);
}

static void test_command_environment(void)
{
    char *env;
    cli_result r;

    cli_set_url(secure_url_pw);
    setenv("RLK_PASSWORD", "from-env", 1);
    setenv("REDISCLI_AUTH", "from-auth", 1);
    r = RUN("--verbose", "lock", "envjob", "--",
            "sh", "-c", "env | grep -E '^(RLK_URL|RLK_PASSWORD|REDISCLI_AUTH)=' | sort > \"$T/env\"");
    expect_status(&r, 0, "lock with credentials in the environment");
    no_password_in(&r, "lock --verbose with a URL password");
    CHECK_STR_CONTAINS(r.err, ":***@127.0.0.1:");
    env = cli_slurp(cli_path("env"));
    {
        char want[200];

        snprintf(want, sizeof want, "RLK_URL=redis://127.0.0.1:%d/0\n", secure.port);
        CHECK_STR_EQ(env, want);
    }
    free(env);
    cli_result_free(&r);

    r = RUN("lock", "envjob", "--keep-env", "--",
            "sh", "-c", "env | grep -E '^(RLK_URL|RLK_PASSWORD|REDISCLI_AUTH)=' | sort > \"$T/env\"");
    expect_status(&r, 0, "lock --keep-env");
    env = cli_slurp(cli_path("env"));
    {
        char want[400];

        snprintf(want, sizeof want, "REDISCLI_AUTH=from-auth\nRLK_PASSWORD=from-env\nRLK_URL=%s\n",
                 secure_url_pw);
        CHECK_STR_EQ(env, want);
    }
    free(env);
    cli_result_free(&r);
    unsetenv("RLK_PASSWORD");
    unsetenv("REDISCLI_AUTH");
    cli_set_url(url);
}

int main(int argc, char **argv)
{
    rlk_fx_config cfg;

    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    unsetenv("RLK_PASSWORD");
    unsetenv("REDISCLI_AUTH");
    rlk_fx_config_init(&cfg);
    cfg.requirepass = PASSWORD;
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        rlk_fx_start(&secure, &cfg) != 0 ||
        rlk_fx_url(&secure, -1, secure_url, sizeof secure_url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    snprintf(secure_url_pw, sizeof secure_url_pw, "redis://:%s@127.0.0.1:%d", PASSWORD,
             secure.port);
    RUN_TEST(test_help_alone);
    RUN_TEST(test_version_alone);
    RUN_TEST(test_url_forms);
    RUN_TEST(test_name_option);
    RUN_TEST(test_verbose_waiting);
    RUN_TEST(test_password_sources);
    RUN_TEST(test_bad_files);
    RUN_TEST(test_command_environment);
    cli_teardown();
    rlk_fx_stop(&secure);
    rlk_fx_stop(&server);
    return check_summary("it_cli_ops");
}
