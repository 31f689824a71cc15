/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_bundle.c - `rlk scripts load|verify --bundle` compare a bundle with
 * the scripts this release was built with: a tampered script (reentrant/acquire
 * with PEXPIRE turned into PERSIST, the manifest recomputed), an extra script and
 * a removed one are each named on one line and refused (exit 5, nothing loaded);
 * --allow-modified loads them with warnings; the build's own bundle passes; the
 * manifest names the rlk version; `rlk --version` shows the script set's identity.
 *
 * Usage: it_cli_bundle PATH_TO_RLK BUILD_BUNDLE_DIR
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#include <stdarg.h>
#include <string.h>

static rlk_fx_server server;
static char url[128];
static const char *build_bundle;

/* Runs a shell command (bounded by what it does: cp, sed, awk on small files); 0 on success. */
static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof cmd, fmt, ap);
    va_end(ap);
    return system(cmd) == 0 ? 0 : -1;
}

/* A fresh copy of the build's bundle at $T/<name>. */
static const char *copy_bundle(const char *name)
{
    const char *dir = cli_path(name);

    if (sh("rm -rf '%s' && cp -r '%s' '%s'", dir, build_bundle, dir) != 0)
        return NULL;
    return dir;
}

/* Rewrites the manifest's SHA-1 of script NAME from the file's bytes (what a tamperer does). */
static int rehash(const char *dir, const char *name)
{
    return sh("cd '%s' && s=$(sha1sum %s.lua | cut -c1-40) && "
              "awk -v n=%s -v s=\"$s\" 'BEGIN{FS=OFS=\"\\t\"} $1==n{$4=s} {print}' manifest.tsv "
              "> m.tmp && mv m.tmp manifest.tsv", dir, name, name);
}

static long long scripts_on_server(void)
{
    redisReply *r = rlk_fx_command(&server, "SCRIPT EXISTS %s", rlk_embedded_at(0)->sha1);
    long long n = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
        n = r->element[0]->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

static void flush_scripts(void)
{
    redisReply *r = rlk_fx_command(&server, "SCRIPT FLUSH");

    if (r)
        freeReplyObject(r);
}

/* Every line of stderr starts with "rlk: ". */
static void expect_rlk_lines(const cli_result *r, const char *what)
{
    for (const char *p = r->err; *p;) {
        const char *nl = strchr(p, '\n');

        CHECKF(strncmp(p, "rlk: ", 5) == 0, "%s: a stderr line without \"rlk: \": %s", what, p);
        if (!nl)
            break;
        p = nl + 1;
    }
}

static int count_substr(const char *s, const char *sub)
{
    int n = 0;

    for (const char *p = strstr(s, sub); p; p = strstr(p + 1, sub))
        n++;
    return n;
}

static void test_release_bundle_passes(void)
{
    cli_result r;
    char first[64];

    snprintf(first, sizeof first, "# rlk %s\n", RLK_VERSION);
    {
        char path[512];
        char *m;

        snprintf(path, sizeof path, "%s/manifest.tsv", build_bundle);
        m = cli_slurp(path);
        CHECKF(strncmp(m, first, strlen(first)) == 0, "manifest does not start with %s", first);
        free(m);
    }
    flush_scripts();
    r = RUN("scripts", "load", "--bundle", build_bundle);
    expect_status(&r, 0, "load --bundle (the build's)");
    CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);
    r = RUN("scripts", "verify", "--bundle", build_bundle);
    expect_status(&r, 0, "verify --bundle (the build's)");
    CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);
    r = RUN("scripts", "verify", "--bundle", build_bundle, "--json");
    expect_status(&r, 0, "verify --bundle --json");
    CHECK_STR_CONTAINS(r.out, "\"release\": \"release\"");
    cli_result_free(&r);
}

/* The version of script name built into the library (0: none). */
static int embedded_version(const char *name)
{
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *info = rlk_embedded_at(i);

        if (info && strcmp(info->name, name) == 0)
            return info->version;
    }
    return 0;
}

static void test_tampered_refused(void)
{
    const char *dir = copy_bundle("tampered");
    int v = embedded_version("reentrant/acquire");
    char modified[96], bumped[160], bumped_only[96];
    cli_result r;

    REQUIRE(v > 0);
    snprintf(modified, sizeof modified, "reentrant/acquire (version %d) was modified", v);
    snprintf(bumped, sizeof bumped, "reentrant/acquire is version %d, rlk " RLK_VERSION
             " has version %d", v + 1, v);
    snprintf(bumped_only, sizeof bumped_only, "reentrant/acquire is version %d", v + 1);

    REQUIRE(dir != NULL);
    /* Every lock lives forever: the lease is never set. */
    REQUIRE(sh("sed -i 's/pexpire/persist/g' '%s/reentrant/acquire.lua'", dir) == 0);
    REQUIRE(rehash(dir, "reentrant/acquire") == 0);
    flush_scripts();
    r = RUN("scripts", "load", "--bundle", dir);
    expect_status(&r, 5, "load --bundle (tampered)");
    CHECK_STR_CONTAINS(r.err, modified);
    CHECK_STR_CONTAINS(r.err, "refused (--allow-modified");
    CHECK_INT_EQ(count_substr(r.err, "\n"), 2); /* the script's line and the summary */
    expect_rlk_lines(&r, "load --bundle (tampered)");
    CHECK_STR_EQ(r.out, "");
    cli_result_free(&r);
    CHECK_INT_EQ(scripts_on_server(), 0); /* nothing loaded */

    r = RUN("scripts", "verify", "--bundle", dir);
    expect_status(&r, 5, "verify --bundle (tampered)");
    CHECK_STR_CONTAINS(r.err, modified);
    cli_result_free(&r);

    /* A bumped version line does not launder it. */
    REQUIRE(sh("sed -i 's/^-- version: %d$/-- version: %d/' '%s/reentrant/acquire.lua' && "
               "awk 'BEGIN{FS=OFS=\"\\t\"} $1==\"reentrant/acquire\"{$2=%d} {print}' "
               "'%s/manifest.tsv' > '%s/m' && mv '%s/m' '%s/manifest.tsv'",
               v, v + 1, dir, v + 1, dir, dir, dir, dir) == 0);
    REQUIRE(rehash(dir, "reentrant/acquire") == 0);
    r = RUN("scripts", "load", "--bundle", dir);
    expect_status(&r, 5, "load --bundle (tampered, version bumped)");
    CHECK_STR_CONTAINS(r.err, bumped);
    cli_result_free(&r);

    /* --allow-modified: loaded, each difference still named (as a warning). */
    r = RUN("scripts", "load", "--bundle", dir, "--allow-modified");
    expect_status(&r, 0, "load --bundle --allow-modified");
    CHECK_STR_CONTAINS(r.err, "rlk: warning: bundle");
    CHECK_STR_CONTAINS(r.err, bumped_only);
    CHECK_STR_CONTAINS(r.out, "loaded  ");
    cli_result_free(&r);
    r = RUN("scripts", "verify", "--bundle", dir, "--allow-modified");
    expect_status(&r, 0, "verify --bundle --allow-modified");
    CHECK_STR_CONTAINS(r.out, "reentrant/acquire  changed");
    cli_result_free(&r);
    /* --allow-modified alone is a usage error. */
    r = RUN("scripts", "verify", "--allow-modified");
    expect_status(&r, 2, "--allow-modified without --bundle");
    expect_one_line_error(&r, "--allow-modified without --bundle");
    cli_result_free(&r);
}

static void test_extra_refused(void)
{
    const char *dir = copy_bundle("extra");
    cli_result r;

    REQUIRE(dir != NULL);
    REQUIRE(sh("mkdir -p '%s/evil' && printf 'return redis.call(\"flushall\")\\n' > '%s/evil/x.lua' "
               "&& printf 'evil/x\\t1\\t0\\t%%s\\n' $(sha1sum '%s/evil/x.lua' | cut -c1-40) "
               ">> '%s/manifest.tsv'", dir, dir, dir, dir) == 0);
    flush_scripts();
    r = RUN("scripts", "load", "--bundle", dir);
    expect_status(&r, 5, "load --bundle (extra script)");
    CHECK_STR_CONTAINS(r.err, "evil/x (version 1) is not a script of rlk " RLK_VERSION);
    CHECK_STR_CONTAINS(r.err, "(0 changed, 1 added, 0 removed)");
    cli_result_free(&r);
    CHECK_INT_EQ(scripts_on_server(), 0);
    r = RUN("scripts", "verify", "--bundle", dir);
    expect_status(&r, 5, "verify --bundle (extra script)");
    cli_result_free(&r);
    r = RUN("scripts", "load", "--bundle", dir, "--allow-modified");
    expect_status(&r, 0, "load --bundle --allow-modified (extra script)");
    CHECK_STR_CONTAINS(r.out, "evil/x");
    cli_result_free(&r);
}

static void test_removed_refused(void)
{
    const char *dir = copy_bundle("removed");
    cli_result r;

    REQUIRE(dir != NULL);
    REQUIRE(sh("cd '%s' && rm reentrant/release.lua && grep -v '^reentrant/release\t' manifest.tsv "
               "> m && mv m manifest.tsv", dir) == 0);
    r = RUN("scripts", "verify", "--bundle", dir);
    expect_status(&r, 5, "verify --bundle (removed script)");
    CHECK_STR_CONTAINS(r.err, "reentrant/release (version");
    CHECK_STR_CONTAINS(r.err, "is missing from the bundle");
    CHECK_STR_CONTAINS(r.err, "(0 changed, 0 added, 1 removed)");
    cli_result_free(&r);
    r = RUN("scripts", "load", "--bundle", dir);
    expect_status(&r, 5, "load --bundle (removed script)");
    cli_result_free(&r);
    /* A manifest without the version line says so. */
    REQUIRE(sh("cd '%s' && grep -v '^#' manifest.tsv > m && mv m manifest.tsv", dir) == 0);
    r = RUN("scripts", "load", "--bundle", dir);
    expect_status(&r, 5, "load --bundle (removed script, no version line)");
    CHECK_STR_CONTAINS(r.err, "its manifest names no rlk version");
    cli_result_free(&r);
    r = RUN("scripts", "load", "--bundle", dir, "--allow-modified");
    expect_status(&r, 0, "load --bundle --allow-modified (removed script)");
    cli_result_free(&r);
}

static void test_version(void)
{
    char path[512];
    cli_result r = RUN("--version");
    const char *id;

    expect_status(&r, 0, "--version");
    CHECK_STR_CONTAINS(r.out, "rlk " RLK_VERSION);
    id = strstr(r.out, "script set ");
    if (CHECKF(id != NULL, "--version shows no script set: %s", r.out)) {
        char want[41], *got;

        snprintf(path, sizeof path, "grep -v '^#' '%s/manifest.tsv' | sha1sum > '%s'",
                 build_bundle, cli_path("set.sha1"));
        REQUIRE(system(path) == 0);
        got = cli_slurp(cli_path("set.sha1"));
        snprintf(want, sizeof want, "%.40s", got);
        CHECK(strncmp(id + strlen("script set "), want, 40) == 0);
        free(got);
    }
    cli_result_free(&r);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PATH_TO_RLK BUNDLE_DIR\n", argv[0]);
        return 2;
    }
    build_bundle = argv[2];
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    RUN_TEST(test_release_bundle_passes);
    RUN_TEST(test_tampered_refused);
    RUN_TEST(test_extra_refused);
    RUN_TEST(test_removed_refused);
    RUN_TEST(test_version);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_bundle");
}
