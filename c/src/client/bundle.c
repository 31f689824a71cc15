/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bundle.c - a bundle directory: manifest.tsv plus <name>.lua per script.
 *
 * manifest.tsv: one line per script, name<TAB>version<TAB>numkeys<TAB>sha1
 * (docs/script-contract.md); lines starting with '#' are comments, and
 * "# rlk <version>" names the rlk release the bundle was built with. Every listed file must exist and hash to the
 * manifest's SHA-1; names must be unique and made of [A-Za-z0-9_-] segments
 * joined by '/', so a name can never leave the directory.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "client/bundle.h"
#include "client/error.h"
#include "client/sha1.h"

#define RLK_BUNDLE_MAX_FILE (16u * 1024u * 1024u)
#define RLK_BUNDLE_MAX_LINE 4096

/* Reads a whole file (NUL-terminated copy); 0, or -1 with errno set. */
static int rlk_read_file(const char *path, char **out, size_t *outlen)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    char *buf = NULL;
    size_t len = 0;

    if (!f)
        return -1;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0)
        errno = EIO;
    else if ((size_t)st.st_size > RLK_BUNDLE_MAX_FILE)
        errno = EFBIG;
    else if (!(buf = malloc((size_t)st.st_size + 1)))
        errno = ENOMEM;
    else if ((len = fread(buf, 1, (size_t)st.st_size, f)) != (size_t)st.st_size || ferror(f)) {
        free(buf);
        buf = NULL;
        errno = EIO;
    }
    fclose(f);
    if (!buf)
        return -1;
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    return 0;
}

/* Non-empty [A-Za-z0-9_-] segments joined by '/'. */
static int rlk_name_ok(const char *s)
{
    static const char seg[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-";

    for (size_t n; (n = strspn(s, seg)) > 0; s += n + 1)
        if (s[n] != '/')
            return s[n] == '\0';
    return 0;
}

/* Decimal integer in lo..hi, digits only (a leading '-' allowed when lo < 0). */
static int rlk_int_field(const char *s, long lo, long hi, int *out)
{
    const char *digits = (s[0] == '-') ? s + 1 : s;
    long v;

    if ((s[0] == '-' && lo >= 0) || !*digits || strspn(digits, "0123456789") != strlen(digits))
        return -1;
    errno = 0;
    v = strtol(s, NULL, 10);
    if (errno || v < lo || v > hi)
        return -1;
    *out = (int)v;
    return 0;
}

/* Splits a manifest line in place into exactly four tab-separated fields. */
static int rlk_split4(char *line, char *fields[4])
{
    fields[0] = line;
    for (int i = 1; i < 4; i++) {
        char *tab = strchr(fields[i - 1], '\t');

        if (!tab)
            return -1;
        *tab = '\0';
        fields[i] = tab + 1;
    }
    return strchr(fields[3], '\t') ? -1 : 0;
}

typedef struct rlk_bundle_ctx {
    const char *dir;
    rlk_script_info *items;
    size_t count, cap;
    rlk_script_set *set;        /* what is read; its rlk_version set by the manifest */
    char *err;
    size_t errlen;
} rlk_bundle_ctx;

/* The reason in b's error buffer; RLK_ERR_BUNDLE. */
#define RLK_BUNDLE_FAIL(...) (snprintf(b->err, b->errlen, __VA_ARGS__), RLK_ERR_BUNDLE)

static int rlk_bundle_line(rlk_bundle_ctx *b, char *line, int lineno)
{
    char *f[4];
    rlk_script_info *s;

    if (rlk_split4(line, f) != 0)
        return RLK_BUNDLE_FAIL("bundle %s: manifest.tsv:%d: expected name<TAB>version<TAB>numkeys<TAB>sha1",
                               b->dir, lineno);
    if (!rlk_name_ok(f[0]))
        return RLK_BUNDLE_FAIL("bundle %s: manifest.tsv:%d: invalid script name", b->dir, lineno);
    if (b->count == b->cap) {
        size_t cap = b->cap ? 2 * b->cap : 16;
        rlk_script_info *items = realloc(b->items, cap * sizeof *items);

        if (!items)
            return RLK_ERR_NOMEM;
        b->items = items;
        b->cap = cap;
    }
    s = &b->items[b->count];
    memset(s, 0, sizeof *s);
    if (rlk_int_field(f[1], 1, 1000000000L, &s->version) != 0)
        return RLK_BUNDLE_FAIL("bundle %s: manifest.tsv:%d: version must be a positive integer",
                               b->dir, lineno);
    if (rlk_int_field(f[2], -1, 1000000L, &s->numkeys) != 0)
        return RLK_BUNDLE_FAIL("bundle %s: manifest.tsv:%d: numkeys must be -1 or a count",
                               b->dir, lineno);
    if (strlen(f[3]) != 40 || strspn(f[3], "0123456789abcdef") != 40)
        return RLK_BUNDLE_FAIL("bundle %s: manifest.tsv:%d: sha1 must be 40 lowercase hex digits",
                               b->dir, lineno);
    s->name = strdup(f[0]);
    s->sha1 = strdup(f[3]);
    b->count++;
    return (s->name && s->sha1) ? RLK_OK : RLK_ERR_NOMEM;
}

static int rlk_bundle_manifest(rlk_bundle_ctx *b)
{
    char path[4096], line[RLK_BUNDLE_MAX_LINE + 2], ebuf[128];
    int lineno = 0, rc = RLK_OK;
    FILE *f;

    snprintf(path, sizeof path, "%s/manifest.tsv", b->dir);
    f = fopen(path, "r");
    if (!f)
        return RLK_BUNDLE_FAIL("bundle %s: cannot open manifest.tsv: %s", b->dir,
                               rlk_errno_str(errno, ebuf, sizeof ebuf));
    while (rc == RLK_OK && fgets(line, sizeof line, f)) {
        size_t n = strlen(line);

        lineno++;
        if (n > RLK_BUNDLE_MAX_LINE) {
            rc = RLK_BUNDLE_FAIL("bundle %s: manifest.tsv:%d: line too long", b->dir, lineno);
            break;
        }
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        if (line[0] == '#') {
            if (strncmp(line, "# rlk ", 6) == 0)
                snprintf(b->set->rlk_version, sizeof b->set->rlk_version, "%.31s", line + 6);
            continue;
        }
        rc = rlk_bundle_line(b, line, lineno);
    }
    if (rc == RLK_OK && ferror(f))
        rc = RLK_BUNDLE_FAIL("bundle %s: cannot read manifest.tsv", b->dir);
    fclose(f);
    if (rc == RLK_OK && b->count == 0)
        rc = RLK_BUNDLE_FAIL("bundle %s: manifest.tsv lists no scripts", b->dir);
    return rc;
}

static int rlk_info_cmp(const void *a, const void *b)
{
    return strcmp(((const rlk_script_info *)a)->name, ((const rlk_script_info *)b)->name);
}

/* Sorts the scripts, refuses a name listed twice, reads each body and checks its SHA-1. */
static int rlk_bundle_finish(rlk_bundle_ctx *b)
{
    char path[4096], hex[41], ebuf[128], *body;
    size_t len;

    qsort(b->items, b->count, sizeof *b->items, rlk_info_cmp);
    for (size_t i = 1; i < b->count; i++)
        if (strcmp(b->items[i - 1].name, b->items[i].name) == 0)
            return RLK_BUNDLE_FAIL("bundle %s: manifest.tsv lists %s twice", b->dir,
                                   b->items[i].name);
    for (size_t i = 0; i < b->count; i++) {
        rlk_script_info *s = &b->items[i];

        snprintf(path, sizeof path, "%s/%s.lua", b->dir, s->name);
        if (rlk_read_file(path, &body, &len) != 0)
            return errno == ENOMEM ? RLK_ERR_NOMEM
                   : RLK_BUNDLE_FAIL("bundle %s: cannot read %s.lua: %s", b->dir, s->name,
                                     rlk_errno_str(errno, ebuf, sizeof ebuf));
        s->body = body;
        s->body_len = len;
        rlk_sha1_hex(body, len, hex);
        if (strcmp(hex, s->sha1) != 0)
            return RLK_BUNDLE_FAIL("bundle %s: %s.lua has SHA-1 %s, the manifest says %s",
                                   b->dir, s->name, hex, s->sha1);
    }
    return RLK_OK;
}

int rlk_bundle_read(const char *dir, rlk_script_set *set, char *err, size_t errlen)
{
    rlk_bundle_ctx ctx = {dir, NULL, 0, 0, set, err, errlen}, *b = &ctx;
    int rc;

    memset(set, 0, sizeof *set);
    if (!dir || !*dir)
        return RLK_BUNDLE_FAIL("bundle: empty directory name");
    rc = rlk_bundle_manifest(b);
    if (rc == RLK_OK)
        rc = rlk_bundle_finish(b);
    set->owned = b->items;
    set->items = b->items;
    set->count = b->count;
    if (rc != RLK_OK) {
        if (rc == RLK_ERR_NOMEM)
            snprintf(err, errlen, "bundle %s: out of memory", dir);
        rlk_script_set_free(set);
    }
    return rc;
}
