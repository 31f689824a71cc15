/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_nested.c - a nested rlk finds the server its parent locks on.
 *
 * `RLK_URL=A rlk --url B lock q -- sh -c 'rlk lock q -n -- ...'`: the inner rlk must re-enter
 * the lock on B, not take a second lock q on A. The command of `rlk lock` gets RLK_URL = the URL
 * rlk actually used (--url, --url-file, $RLK_URL; a Sentinel and a Cluster URL in their own
 * form), without its password; the TLS settings given as options travel as RLK_TLS_* (files as
 * absolute paths); the credentials (the URL's password, --password-file, --cert, --key) only
 * with --keep-env, as the password always has. A parent with no RLK_URL at all and only --url B
 * is the same: the inner rlk re-enters on B, not on the default 127.0.0.1:6379.
 *
 * Servers: A (plain), B (requirepass), a Sentinel set (master + replica + 3 sentinels) and a
 * Cluster (3 + 3). Under the TLS pass ($RLK_TEST_TLS) every server is TLS-only and B asks for a
 * client certificate; the test then gives the CA, the client certificate and its key as
 * options only (not as $RLK_TLS_*), so that the nested rlk reaches B only if they travel.
 *
 * Usage: it_cli_nested PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "cluster.h"
#include "sentinel.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PASSWORD "n3sted-Pw"

static rlk_fx_server a, b;
static char url_a[128], url_b[128], url_b_pw[192], url_b_pub[160];
static char tls_ca[600], tls_cert[600], tls_key[600];
static int tls;

static void write_file(const char *path, const char *text, mode_t mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

    REQUIREF(fd >= 0, "cannot create %s", path);
    REQUIRE(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
    close(fd);
    REQUIRE(chmod(path, mode) == 0);
}

/* The sh command an outer rlk lock runs: records its RLK_URL (and the TLS variables), then
 * runs `rlk [inner_opts] lock q -n -- rlk [inner_opts] inspect q --json > $T/inner.json`. */
static void nested_script(char *buf, size_t len, const char *inner_opts)
{
    snprintf(buf, len,
             "printf '%%s\\n' \"$RLK_URL\" > \"$T/url\"; "
             "env | grep -E '^(RLK_TLS|RLK_PASSWORD|REDISCLI_AUTH)' | sort > \"$T/env\"; "
             "\"$RLK_BIN\" %s lock q -n -- \"$RLK_BIN\" %s inspect q --json > \"$T/inner.json\"",
             inner_opts, inner_opts);
}

/* The outer run's args end with the script; the checks: exit 0, the child's RLK_URL, the
 * inner rlk re-entered q (count 2) on the server the outer holds it on, nothing on A. */
static void expect_nested(const cli_result *r, const char *what, const char *want_url,
                          const rlk_fx_server *holder)
{
    char *seen = cli_slurp(cli_path("url"));
    char want[700];
    json_value *j;

    expect_status(r, 0, what);
    snprintf(want, sizeof want, "%s\n", want_url);
    CHECKF(strcmp(seen, want) == 0, "%s: the command's RLK_URL is %s, expected %s", what, seen,
           want_url);
    CHECKF(strstr(seen, PASSWORD) == NULL, "%s: the password reached the command", what);
    free(seen);
    j = parse_file_json(cli_path("inner.json"));
    if (j) {
        const json_value *holders = json_get(j, "holders");
        const json_value *h0 = holders ? json_at(holders, 0) : NULL;
        char *inner = cli_slurp(cli_path("inner.json"));

        CHECKF(h0 && json_get_number(h0, "count", -1) == 2,
               "%s: the nested rlk did not re-enter the outer lock (holders: %s)", what, inner);
        free(inner);
        json_free(j);
    }
    if (holder != &a)
        CHECK_INT_EQ(tk_int(&a, "EXISTS %s", "q"), 0);
    if (holder)
        CHECK_INT_EQ(tk_int(holder, "EXISTS %s", "q"), 0);  /* released after */
    unlink(cli_path("inner.json"));
    unlink(cli_path("url"));
}

/* rlk with args, after the TLS options (--cacert, and --cert/--key when client is set) when
 * the servers are TLS-only. */
static cli_result run_tls(int client, const char *const *args)
{
    const char *argv[40];
    int n = 0;

    if (tls) {
        argv[n++] = "--cacert";
        argv[n++] = tls_ca;
        if (client) {
            argv[n++] = "--cert";
            argv[n++] = tls_cert;
            argv[n++] = "--key";
            argv[n++] = tls_key;
        }
    }
    for (int k = 0; args[k] && n < 39; k++)
        argv[n++] = args[k];
    argv[n] = NULL;
    return cli_run(argv);
}
#define RUN_TLS(client, ...) run_tls((client), (const char *const[]){__VA_ARGS__, NULL})

/* The credential options the inner rlk needs for B (without --keep-env). */
static void inner_creds(char *buf, size_t len)
{
    if (tls)
        snprintf(buf, len, "--password-file \"$T/pw\" --cert %s --key %s", tls_cert, tls_key);
    else
        snprintf(buf, len, "--password-file \"$T/pw\"");
}

static void test_url_option(void)
{
    char script[4096], creds[1300];
    cli_result r;

    inner_creds(creds, sizeof creds);
    nested_script(script, sizeof script, creds);
    setenv("RLK_URL", url_a, 1);
    cli_set_url(url_a);
    r = RUN_TLS(1, "--url", url_b_pw, "lock", "q", "--", "sh", "-c", script);
    expect_nested(&r, "RLK_URL=A rlk --url B lock q -- rlk lock q", url_b_pub, &b);
    if (tls) {
        char *env = cli_slurp(cli_path("env"));
        char want[700];

        /* The CA travels, as an absolute path; the client certificate and key do not. */
        snprintf(want, sizeof want, "RLK_TLS_CACERT=%s\n", tls_ca);
        CHECK_STR_EQ(env, want);
        free(env);
    } else {
        char *env = cli_slurp(cli_path("env"));

        CHECK_STR_EQ(env, "");
        free(env);
    }
    cli_result_free(&r);

    /* The command's own --url after the command name. */
    r = RUN_TLS(1, "lock", "q", "--url", url_b_pw, "--", "sh", "-c", script);
    expect_nested(&r, "rlk lock q --url B -- rlk lock q", url_b_pub, &b);
    cli_result_free(&r);
}

/* The parent has no RLK_URL at all, only --url B: the command gets B (the URL rlk used), so
 * the nested rlk re-enters on B, not on the default 127.0.0.1:6379. */
static void test_url_option_no_env(void)
{
    char script[4096], creds[1300];
    cli_result r;

    inner_creds(creds, sizeof creds);
    nested_script(script, sizeof script, creds);
    unsetenv("RLK_URL");
    cli_set_url(NULL);
    r = RUN_TLS(1, "--url", url_b_pw, "lock", "q", "--", "sh", "-c", script);
    expect_nested(&r, "(no RLK_URL) rlk --url B lock q -- rlk lock q", url_b_pub, &b);
    cli_result_free(&r);
    r = RUN_TLS(1, "lock", "q", "--url", url_b_pw, "--", "sh", "-c", script);
    expect_nested(&r, "(no RLK_URL) rlk lock q --url B -- rlk lock q", url_b_pub, &b);
    cli_result_free(&r);
    cli_set_url(url_a);
}

static void test_url_file(void)
{
    char script[4096], creds[1300], text[300];
    const char *file = cli_path("url.file");
    cli_result r;

    snprintf(text, sizeof text, "%s\n", url_b_pw);
    write_file(file, text, 0600);
    inner_creds(creds, sizeof creds);
    nested_script(script, sizeof script, creds);
    setenv("RLK_URL", url_a, 1);
    r = RUN_TLS(1, "--url-file", file, "lock", "q", "--", "sh", "-c", script);
    expect_nested(&r, "RLK_URL=A rlk --url-file B lock q -- rlk lock q", url_b_pub, &b);
    cli_result_free(&r);
}

/* --keep-env: the credentials travel too (the URL's password; where the password file, the
 * client certificate and key are): the inner rlk needs no option at all. */
static void test_keep_env(void)
{
    char script[4096], url_b_user[200];
    cli_result r;

    nested_script(script, sizeof script, "--keep-env");
    setenv("RLK_URL", url_a, 1);
    r = RUN_TLS(1, "--url", url_b_pw, "--keep-env", "lock", "q", "--", "sh", "-c", script);
    {
        char *seen = cli_slurp(cli_path("url"));
        char want[300];
        json_value *j;

        expect_status(&r, 0, "--keep-env --url B");
        snprintf(want, sizeof want, "%s\n", url_b_pw);
        CHECK_STR_EQ(seen, want);
        free(seen);
        j = parse_file_json(cli_path("inner.json"));
        if (j) {
            const json_value *h0 = json_at(json_get(j, "holders"), 0);

            CHECKF(h0 && json_get_number(h0, "count", -1) == 2,
                   "--keep-env: the nested rlk did not re-enter the outer lock");
            json_free(j);
        }
    }
    if (tls) {
        char *env = cli_slurp(cli_path("env"));
        char want[2000];

        snprintf(want, sizeof want, "RLK_TLS_CACERT=%s\nRLK_TLS_CERT=%s\nRLK_TLS_KEY=%s\n",
                 tls_ca, tls_cert, tls_key);
        CHECK_STR_EQ(env, want);
        free(env);
    }
    cli_result_free(&r);

    /* The password from --password-file: the command gets where it is, never the password. */
    snprintf(url_b_user, sizeof url_b_user, "%s://127.0.0.1:%d", tls ? "rediss" : "redis",
             b.port);
    r = RUN_TLS(1, "--url", url_b_user, "--password-file", cli_path("pw"), "--keep-env", "lock",
                "q", "--", "sh", "-c", script);
    expect_nested(&r, "--keep-env --password-file", url_b_user, &b);
    {
        char *env = cli_slurp(cli_path("env"));

        CHECKF(strstr(env, "RLK_PASSWORD_FILE=/") != NULL && strstr(env, PASSWORD) == NULL,
               "--keep-env --password-file: the command's environment: %s", env);
        free(env);
    }
    cli_result_free(&r);
    unsetenv("RLK_URL");
}

static void test_sentinel(void)
{
    rlk_fx_sentinel s;
    char surl[600], script[2048];
    cli_result r;
    int m;

    REQUIRE(rlk_fx_sentinel_start(&s, "nestmaster") == 0);
    snprintf(surl, sizeof surl, "%s+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/nestmaster/0",
             tls ? "rediss" : "redis", s.sentinel[0].port, s.sentinel[1].port,
             s.sentinel[2].port);
    nested_script(script, sizeof script, "");
    setenv("RLK_URL", url_a, 1);
    r = RUN_TLS(1, "--url", surl, "lock", "q", "--", "sh", "-c", script);
    m = rlk_fx_sentinel_master(&s);
    expect_nested(&r, "RLK_URL=A rlk --url redis+sentinel://... lock q", surl,
                  m >= 0 ? &s.data[m] : NULL);
    cli_result_free(&r);
    unsetenv("RLK_URL");
    rlk_fx_sentinel_stop(&s);
}

static void test_cluster(void)
{
    rlk_fx_cluster cl;
    char curl[700], script[2048];
    cli_result r;

    REQUIRE(rlk_fx_cluster_start(&cl) == 0);
    snprintf(curl, sizeof curl, "%s+cluster://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d",
             tls ? "rediss" : "redis", cl.node[0].port, cl.node[1].port, cl.node[2].port);
    nested_script(script, sizeof script, "");
    setenv("RLK_URL", url_a, 1);
    r = RUN_TLS(1, "--url", curl, "lock", "q", "--", "sh", "-c", script);
    expect_nested(&r, "RLK_URL=A rlk --url redis+cluster://... lock q", curl, NULL);
    cli_result_free(&r);
    unsetenv("RLK_URL");
    rlk_fx_cluster_stop(&cl);
}

int main(int argc, char **argv)
{
    rlk_fx_config cfg;
    int helper = tk_holdlog_main(argc, argv);

    if (helper >= 0)
        return helper;
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    unsetenv("RLK_PASSWORD");
    unsetenv("REDISCLI_AUTH");
    unsetenv("RLK_URL");
    tls = rlk_fx_tls_dir() != NULL;
    if (tls) {
        snprintf(tls_ca, sizeof tls_ca, "%s/ca.crt", rlk_fx_tls_dir());
        snprintf(tls_cert, sizeof tls_cert, "%s/client.crt", rlk_fx_tls_dir());
        snprintf(tls_key, sizeof tls_key, "%s/client.key", rlk_fx_tls_dir());
    }
    rlk_fx_config_init(&cfg);
    cfg.requirepass = PASSWORD;
    cfg.tls_auth_clients = tls;
    if (rlk_fx_start(&a, NULL) != 0 || rlk_fx_url(&a, -1, url_a, sizeof url_a) != 0 ||
        rlk_fx_start(&b, &cfg) != 0 || rlk_fx_url(&b, -1, url_b, sizeof url_b) != 0 ||
        cli_setup(argv[1], url_a) != 0)
        return 1;
    /* From here on the test passes TLS files as options only. */
    unsetenv("RLK_TLS_CACERT");
    snprintf(url_b_pw, sizeof url_b_pw, "%s://:%s@127.0.0.1:%d", tls ? "rediss" : "redis",
             PASSWORD, b.port);
    snprintf(url_b_pub, sizeof url_b_pub, "%s://127.0.0.1:%d/0", tls ? "rediss" : "redis",
             b.port);
    write_file(cli_path("pw"), PASSWORD "\n", 0600);
    RUN_TEST(test_url_option);
    RUN_TEST(test_url_option_no_env);
    RUN_TEST(test_url_file);
    RUN_TEST(test_keep_env);
    RUN_TEST(test_sentinel);
    RUN_TEST(test_cluster);
    cli_teardown();
    rlk_fx_stop(&b);
    rlk_fx_stop(&a);
    return check_summary("it_cli_nested");
}
