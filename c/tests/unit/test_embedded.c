/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The embedded table against the expanded scripts it was built from
 * (RLK_TEST_SCRIPTS_DIR: the build's bundle directory, scripts/<kind>/<op>.lua
 * with their includes expanded by tools/expand.lua) and the manifest the build
 * wrote (RLK_TEST_MANIFEST): one entry per file, exact bytes, SHA-1 of the
 * body, header fields, order, lookup.
 */
#include <dirent.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "client/bundle.h"
#include "client/scripts.h"
#include "client/sha1.h"
#include "check.h"

#define MAX_FILES 512

static char *names[MAX_FILES];
static size_t nnames;

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n > m && strcmp(s + n - m, suffix) == 0;
}

/* Collects <kind>/<op> for every expanded <kind>/<op>.lua. */
static void scan_scripts(void)
{
    DIR *top = opendir(RLK_TEST_SCRIPTS_DIR);
    struct dirent *k;

    if (!top)
        return;
    while ((k = readdir(top)) && nnames < MAX_FILES) {
        char path[4096];
        DIR *sub;
        struct dirent *f;

        if (k->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", RLK_TEST_SCRIPTS_DIR, k->d_name);
        sub = opendir(path);
        if (!sub)
            continue;
        while ((f = readdir(sub)) && nnames < MAX_FILES) {
            char name[1024];

            if (f->d_name[0] == '.' || !has_suffix(f->d_name, ".lua"))
                continue;
            snprintf(name, sizeof name, "%s/%.*s", k->d_name, (int)(strlen(f->d_name) - 4),
                     f->d_name);
            names[nnames++] = strdup(name);
        }
        closedir(sub);
    }
    closedir(top);
    qsort(names, nnames, sizeof names[0], name_cmp);
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long n;

    if (!f)
        return NULL;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
        buf = malloc((size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
            free(buf);
            buf = NULL;
        }
        if (buf) {
            buf[n] = '\0';
            *len = (size_t)n;
        }
    }
    fclose(f);
    return buf;
}

static void test_count_matches_directory(void)
{
    CHECK(nnames > 0);
    CHECK_INT_EQ(rlk_embedded_count(), nnames);
    CHECK(rlk_embedded_at(rlk_embedded_count()) == NULL);
}

static void test_names_sorted_and_unique(void)
{
    for (size_t i = 1; i < rlk_embedded_count(); i++)
        CHECK(strcmp(rlk_embedded_at(i - 1)->name, rlk_embedded_at(i)->name) < 0);
}

static void test_bodies_are_the_files(void)
{
    for (size_t i = 0; i < nnames; i++) {
        char path[4096];
        size_t len = 0;
        char *file;
        rlk_script_set set;
        const rlk_script_info *s;

        rlk_script_set_embedded(&set);
        s = rlk_script_set_find(&set, names[i]);
        if (!CHECK(s != NULL)) {
            fprintf(stderr, "    %s.lua is not embedded\n", names[i]);
            continue;
        }
        snprintf(path, sizeof path, "%s/%s.lua", RLK_TEST_SCRIPTS_DIR, names[i]);
        file = slurp(path, &len);
        if (!CHECK(file != NULL))
            continue;
        CHECK_INT_EQ(s->body_len, len);
        CHECK(s->body_len == len && memcmp(s->body, file, len) == 0);
        CHECK_INT_EQ(s->body[s->body_len], 0);
        free(file);
    }
}

static void test_sha1_of_body(void)
{
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *s = rlk_embedded_at(i);
        char hex[41];

        rlk_sha1_hex(s->body, s->body_len, hex);
        CHECK_STR_EQ(s->sha1, hex);
    }
}

/* The version and KEYS count agree with the header, read here independently. */
static void test_header_fields(void)
{
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *s = rlk_embedded_at(i);
        const char *end = strstr(s->body, "\n-- end\n");
        const char *v = strstr(s->body, "\n-- version: ");
        char first[512];
        int keys = 0, variadic = 0;

        REQUIRE(end && v && v < end);
        CHECK_INT_EQ(s->version, atoi(v + 13));
        snprintf(first, sizeof first, "-- name: %s\n", s->name);
        CHECK(strncmp(s->body, first, strlen(first)) == 0);
        for (const char *p = strstr(s->body, "\n-- KEYS["); p && p < end;
             p = strstr(p + 1, "\n-- KEYS[")) {
            const char *close = strchr(p, ']');

            if (memchr(p, '.', (size_t)(close - p)))
                variadic = 1;
            else
                keys++;
        }
        CHECK_INT_EQ(s->numkeys, variadic ? -1 : keys);
    }
}

static void test_lookup(void)
{
    rlk_script_set set;

    rlk_script_set_embedded(&set);
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *s = rlk_embedded_at(i);

        CHECK(rlk_script_set_find(&set, s->name) == s);
    }
    CHECK(rlk_script_set_find(&set, "") == NULL);
    CHECK(rlk_script_set_find(&set, NULL) == NULL);
    CHECK(rlk_script_set_find(&set, "no/such") == NULL);
    CHECK(rlk_script_set_find(&set, "zzz/zzz") == NULL);
    CHECK(rlk_script_set_find(&set, "\001") == NULL);
    if (rlk_embedded_count() > 0) {
        char longer[512];

        snprintf(longer, sizeof longer, "%s ", rlk_embedded_at(0)->name);
        CHECK(rlk_script_set_find(&set, longer) == NULL);
    }
}

/* manifest.tsv written by the build lists exactly the table, in order. */
static void test_manifest_matches_table(void)
{
    size_t len = 0, i = 0;
    char *text = slurp(RLK_TEST_MANIFEST, &len);
    char *line, *save = NULL;

    int ends_with_newline;

    REQUIRE(text != NULL);
    ends_with_newline = len > 0 && text[len - 1] == '\n';
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), i++) {
        const rlk_script_info *s = rlk_embedded_at(i);
        char want[1024];

        if (line[0] == '#') { /* "# rlk <version>" */
            CHECK_STR_EQ(line, "# rlk " RLK_VERSION);
            i--;
            continue;
        }

        if (!CHECK(s != NULL))
            break;
        snprintf(want, sizeof want, "%s\t%d\t%d\t%s", s->name, s->version, s->numkeys, s->sha1);
        CHECK_STR_EQ(line, want);
    }
    CHECK_INT_EQ(i, rlk_embedded_count());
    CHECK(ends_with_newline);
    free(text);
}

/* The build's bundle directory reads back as the embedded set. */
static void test_build_bundle_is_embedded_set(void)
{
    rlk_script_set set;
    char err[512];
    int rc = rlk_bundle_read(RLK_TEST_BUNDLE_DIR, &set, err, sizeof err);

    if (!CHECK_INT_EQ(rc, RLK_OK)) {
        fprintf(stderr, "    %s\n", err);
        return;
    }
    CHECK_INT_EQ(set.count, rlk_embedded_count());
    for (size_t i = 0; i < set.count && i < rlk_embedded_count(); i++) {
        CHECK_STR_EQ(set.items[i].name, rlk_embedded_at(i)->name);
        CHECK_STR_EQ(set.items[i].sha1, rlk_embedded_at(i)->sha1);
        CHECK_INT_EQ(set.items[i].numkeys, rlk_embedded_at(i)->numkeys);
        CHECK_INT_EQ(set.items[i].version, rlk_embedded_at(i)->version);
    }
    rlk_script_set_free(&set);
}

int main(void)
{
    scan_scripts();
    RUN_TEST(test_count_matches_directory);
    RUN_TEST(test_names_sorted_and_unique);
    RUN_TEST(test_bodies_are_the_files);
    RUN_TEST(test_sha1_of_body);
    RUN_TEST(test_header_fields);
    RUN_TEST(test_lookup);
    RUN_TEST(test_manifest_matches_table);
    RUN_TEST(test_build_bundle_is_embedded_set);
    for (size_t i = 0; i < nnames; i++)
        free(names[i]);
    return check_summary("test_embedded");
}
