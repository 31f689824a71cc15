/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Bundle directories: a good one, a missing or tampered file, malformed
 * manifest lines, unsafe names, and a client opened on a bad bundle.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client/bundle.h"
#include "client/scripts.h"
#include "client/sha1.h"
#include "check.h"

static char root[256];     /* a fresh temp dir per test */

static const char *const body_a = "-- name: k/a\n-- version: 1\n-- end\nreturn 1\n";
static const char *const body_b = "-- name: k/b\n-- version: 2\n-- end\nreturn {KEYS[1], \"\\255\"}\n";

static void write_file(const char *rel, const char *content)
{
    char path[512];
    FILE *f;

    snprintf(path, sizeof path, "%s/%s", root, rel);
    f = fopen(path, "wb");
    if (!f) {
        fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
        exit(2);
    }
    fputs(content, f);
    fclose(f);
}

static void remove_tree(void)
{
    const char *files[] = {"k/a.lua", "k/b.lua", "k/c.lua", "manifest.tsv"};
    char path[512];

    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", root, files[i]);
        unlink(path);
    }
    snprintf(path, sizeof path, "%s/k", root);
    rmdir(path);
    rmdir(root);
}

/* A good bundle with k/a and k/b, listed out of order; manifest lines may be replaced. */
static void make_bundle(const char *manifest)
{
    char path[512], sha_a[41], sha_b[41], m[1024];

    snprintf(root, sizeof root, "%s/rlk-bundle-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(root)) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        exit(2);
    }
    snprintf(path, sizeof path, "%s/k", root);
    mkdir(path, 0700);
    write_file("k/a.lua", body_a);
    write_file("k/b.lua", body_b);
    rlk_sha1_hex(body_a, strlen(body_a), sha_a);
    rlk_sha1_hex(body_b, strlen(body_b), sha_b);
    if (!manifest) {
        snprintf(m, sizeof m, "k/b\t2\t-1\t%s\nk/a\t1\t0\t%s\n", sha_b, sha_a);
        manifest = m;
    }
    write_file("manifest.tsv", manifest);
}

static int read_bundle(char *err, size_t errlen, rlk_script_set *set)
{
    return rlk_bundle_read(root, set, err, errlen);
}

static void test_good_bundle(void)
{
    rlk_script_set set;
    char err[512], sha_b[41];
    const rlk_script_info *b;

    make_bundle(NULL);
    REQUIRE_INT_EQ(read_bundle(err, sizeof err, &set), RLK_OK);
    REQUIRE_INT_EQ(set.count, 2);
    CHECK_STR_EQ(set.items[0].name, "k/a");   /* sorted by name */
    CHECK_STR_EQ(set.items[1].name, "k/b");
    b = rlk_script_set_find(&set, "k/b");
    REQUIRE(b != NULL);
    CHECK_INT_EQ(b->version, 2);
    CHECK_INT_EQ(b->numkeys, -1);
    CHECK_INT_EQ(b->body_len, strlen(body_b));
    CHECK(memcmp(b->body, body_b, b->body_len) == 0);
    rlk_sha1_hex(body_b, strlen(body_b), sha_b);
    CHECK_STR_EQ(b->sha1, sha_b);
    CHECK(rlk_script_set_find(&set, "k/c") == NULL);
    rlk_script_set_free(&set);
    CHECK(set.count == 0 && set.items == NULL);
    remove_tree();
}

static void test_manifest_without_final_newline(void)
{
    rlk_script_set set;
    char err[512], sha_a[41], m[256];

    rlk_sha1_hex(body_a, strlen(body_a), sha_a);
    snprintf(m, sizeof m, "k/a\t1\t0\t%s", sha_a);
    make_bundle(m);
    CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_OK);
    CHECK_INT_EQ(set.count, 1);
    rlk_script_set_free(&set);
    remove_tree();
}

static void test_missing_manifest(void)
{
    rlk_script_set set;
    char err[512], path[512];

    make_bundle(NULL);
    snprintf(path, sizeof path, "%s/manifest.tsv", root);
    unlink(path);
    CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(err, "cannot open manifest.tsv");
    CHECK_STR_CONTAINS(err, root);
    CHECK(set.items == NULL && set.count == 0);
    remove_tree();
}

static void test_missing_dir(void)
{
    rlk_script_set set;
    char err[512];

    CHECK_INT_EQ(rlk_bundle_read("/nonexistent/rlk-bundle", &set, err, sizeof err), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(err, "/nonexistent/rlk-bundle");
    CHECK_INT_EQ(rlk_bundle_read("", &set, err, sizeof err), RLK_ERR_BUNDLE);
}

static void test_missing_script_file(void)
{
    rlk_script_set set;
    char err[512], path[512];

    make_bundle(NULL);
    snprintf(path, sizeof path, "%s/k/b.lua", root);
    unlink(path);
    CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(err, "k/b.lua");
    CHECK_STR_CONTAINS(err, "No such file");
    remove_tree();
}

static void test_tampered_script_file(void)
{
    rlk_script_set set;
    char err[512];

    make_bundle(NULL);
    write_file("k/a.lua", "-- name: k/a\n-- version: 1\n-- end\nreturn 2\n");
    CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(err, "k/a.lua has SHA-1");
    CHECK_STR_CONTAINS(err, "the manifest says");
    remove_tree();
}

/* One extra byte (a trailing newline) is a different file. */
static void test_one_byte_appended(void)
{
    rlk_script_set set;
    char err[512], changed[256];

    make_bundle(NULL);
    snprintf(changed, sizeof changed, "%s\n", body_b);
    write_file("k/b.lua", changed);
    CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(err, "k/b.lua");
    remove_tree();
}

typedef struct bad_line {
    const char *line;
    const char *reason;
} bad_line;

static void test_bad_manifest_lines(void)
{
    static const bad_line cases[] = {
        {"k/a 1 0 da39a3ee5e6b4b0d3255bfef95601890afd80709\n", "expected name<TAB>"},
        {"k/a\t1\t0\n", "expected name<TAB>"},
        {"k/a\t1\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\textra\n", "expected name<TAB>"},
        {"\n", "expected name<TAB>"},
        {"k/a\t0\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "version"},
        {"k/a\tx\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "version"},
        {"k/a\t-1\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "version"},
        {"k/a\t1\t-2\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "numkeys"},
        {"k/a\t1\t1x\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "numkeys"},
        {"k/a\t1\t0\tDA39A3EE5E6B4B0D3255BFEF95601890AFD80709\n", "sha1"},
        {"k/a\t1\t0\tda39a3ee\n", "sha1"},
        {"../a\t1\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "invalid script name"},
        {"/etc/passwd\t1\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "invalid script name"},
        {"k//a\t1\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "invalid script name"},
        {"k/a.b\t1\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "invalid script name"},
        {"k/a/\t1\t0\tda39a3ee5e6b4b0d3255bfef95601890afd80709\n", "invalid script name"},
        {"", "lists no scripts"},
    };

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlk_script_set set;
        char err[512];

        make_bundle(cases[i].line);
        if (!CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_ERR_BUNDLE))
            fprintf(stderr, "    line %zu accepted\n", i);
        CHECK_STR_CONTAINS(err, cases[i].reason);
        if (cases[i].line[0])
            CHECK_STR_CONTAINS(err, "manifest.tsv:1:");
        CHECK(set.items == NULL);
        remove_tree();
    }
}

/* The line number of a bad line is reported. */
static void test_bad_line_number(void)
{
    rlk_script_set set;
    char err[512], sha_a[41], m[512];

    rlk_sha1_hex(body_a, strlen(body_a), sha_a);
    snprintf(m, sizeof m, "k/a\t1\t0\t%s\nk/b\t1\t0\tnope\n", sha_a);
    make_bundle(m);
    CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(err, "manifest.tsv:2:");
    remove_tree();
}

static void test_duplicate_name(void)
{
    rlk_script_set set;
    char err[512], sha_a[41], m[512];

    rlk_sha1_hex(body_a, strlen(body_a), sha_a);
    snprintf(m, sizeof m, "k/a\t1\t0\t%s\nk/a\t1\t0\t%s\n", sha_a, sha_a);
    make_bundle(m);
    CHECK_INT_EQ(read_bundle(err, sizeof err, &set), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(err, "lists k/a twice");
    remove_tree();
}

/* A client on a bad bundle fails with RLK_ERR_BUNDLE before any connection attempt
 * (the URL points at a port nobody listens on: the bundle error must win). */
static void test_client_on_bad_bundle(void)
{
    rlk_options o;
    rlk_client *c;
    redisReply *r;
    const char *keys[] = {"x"};

    make_bundle(NULL);
    write_file("k/a.lua", "tampered");
    rlk_options_init(&o);
    o.url = "redis://127.0.0.1:1";
    o.bundle_dir = root;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_BUNDLE);
    CHECK_STR_CONTAINS(rlk_errstr(c), "k/a.lua");
    CHECK_INT_EQ(rlk_script_count(c), 0);
    CHECK_INT_EQ(rlk_eval(c, "k/a", 1, keys, 0, NULL, &r), RLK_ERR_BUNDLE);
    rlk_free(c);
    remove_tree();
}

/* A client on a good bundle uses the bundle's set, even when the server is unreachable. */
static void test_client_on_good_bundle(void)
{
    rlk_options o;
    rlk_client *c;
    redisReply *r;

    make_bundle(NULL);
    rlk_options_init(&o);
    o.url = "redis://127.0.0.1:1";
    o.bundle_dir = root;
    o.connect_timeout_ms = 500;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_IO);
    CHECK_STR_CONTAINS(rlk_errstr(c), "connect 127.0.0.1:1: ");
    CHECK_INT_EQ(rlk_script_count(c), 2);
    CHECK_STR_EQ(rlk_script_at(c, 1)->name, "k/b");
    CHECK(rlk_script_at(c, 2) == NULL);
    CHECK(rlk_script_find(c, "k/a") != NULL);
    if (rlk_embedded_count() > 0)
        CHECK(rlk_script_find(c, rlk_embedded_at(0)->name) == NULL);
    CHECK_INT_EQ(rlk_eval(c, "reentrant/acquire", 0, NULL, 0, NULL, &r), RLK_ERR_NOSUCHSCRIPT);
    CHECK_STR_CONTAINS(rlk_errstr(c), "reentrant/acquire");
    CHECK_INT_EQ(rlk_eval(c, "k/a", 0, NULL, 0, NULL, &r), RLK_ERR_IO);
    rlk_free(c);
    remove_tree();
}

int main(void)
{
    RUN_TEST(test_good_bundle);
    RUN_TEST(test_manifest_without_final_newline);
    RUN_TEST(test_missing_manifest);
    RUN_TEST(test_missing_dir);
    RUN_TEST(test_missing_script_file);
    RUN_TEST(test_tampered_script_file);
    RUN_TEST(test_one_byte_appended);
    RUN_TEST(test_bad_manifest_lines);
    RUN_TEST(test_bad_line_number);
    RUN_TEST(test_duplicate_name);
    RUN_TEST(test_client_on_bad_bundle);
    RUN_TEST(test_client_on_good_bundle);
    return check_summary("test_bundle");
}
