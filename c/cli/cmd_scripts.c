/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_scripts.c - rlk scripts list | load | verify
 */
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "cli.h"
#include "client/client.h"
#include "client/cluster.h"
#include "client/topo.h"

typedef struct scripts_opts {
    const char *sub;
    const char *url;
    const char *bundle;
    int json;
    int allow_modified;
} scripts_opts;

/* Returns -1 on success (keep going) or an exit code. */
static int scripts_parse(int argc, char **argv, scripts_opts *o)
{
    for (int i = 1; i < argc;) {
        int got = rlk_cli_opt_value("scripts", argc, argv, &i, "--url", &o->url);

        if (got == 0)
            got = rlk_cli_opt_value("scripts", argc, argv, &i, "--bundle", &o->bundle);
        if (got == 0)
            got = rlk_cli_global_opt("scripts", argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(rlk_cli_help_scripts, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--allow-modified") == 0)
            o->allow_modified = 1;
        else if (argv[i][0] == '-')
            return rlk_cli_unknown_option("scripts", argv[i]);
        else if (o->sub)
            return rlk_cli_usage("scripts", "unexpected argument '%s'", argv[i]);
        else
            o->sub = argv[i];
        i++;
    }
    if (!o->sub)
        return rlk_cli_usage("scripts", "missing subcommand: list, load or verify");
    if (o->allow_modified && !o->bundle)
        return rlk_cli_usage("scripts", "--allow-modified goes with --bundle DIR");
    return -1;
}

static void json_string(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

static void print_keys(FILE *out, int numkeys)
{
    if (numkeys < 0)
        fprintf(out, "%-5s", "n");
    else
        fprintf(out, "%-5d", numkeys);
}

static void list_text(const rlk_script_set *set)
{
    size_t w = 4;

    for (size_t i = 0; i < set->count; i++)
        if (strlen(set->items[i].name) > w)
            w = strlen(set->items[i].name);
    printf("%-*s  %-7s  %-5s  %s\n", (int)w, "NAME", "VERSION", "KEYS", "SHA1");
    for (size_t i = 0; i < set->count; i++) {
        const rlk_script_info *s = &set->items[i];

        printf("%-*s  %-7d  ", (int)w, s->name, s->version);
        print_keys(stdout, s->numkeys);
        printf("  %s\n", s->sha1);
    }
}

static void list_json(const rlk_script_set *set)
{
    printf("[");
    for (size_t i = 0; i < set->count; i++) {
        const rlk_script_info *s = &set->items[i];

        printf("%s\n  {\"name\": ", i ? "," : "");
        json_string(stdout, s->name);
        printf(", \"version\": %d, \"numkeys\": %d, \"sha1\": \"%s\"}", s->version, s->numkeys,
               s->sha1);
    }
    printf("%s]\n", set->count ? "\n" : "");
}

static int scripts_list(const scripts_opts *o)
{
    rlk_script_set set;
    char err[RLK_ERRSTR_MAX];

    if (o->bundle) {
        int rc = rlk_bundle_read(o->bundle, &set, err, sizeof err);

        if (rc != RLK_OK)
            return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", err);
    } else {
        rlk_script_set_embedded(&set);
    }
    if (o->json)
        list_json(&set);
    else
        list_text(&set);
    rlk_script_set_free(&set);
    return RLK_EXIT_OK;
}

/* ---------------------------------------------------------------- the bundle vs the release */

/* What a bundle script is, compared with the scripts built into rlk. */
enum { REL_SAME = 0, REL_CHANGED, REL_ADDED };

static const char *const rel_words[] = {"release", "changed", "added"};

/* Compares every script of a bundle with the embedded table (the SHA-1s this release was built
 * with) by name; rel[i] gets the bundle's script i's REL_*. Prints one line per difference
 * (changed, added, removed) and a summary; returns the number of differences. */
static size_t bundle_vs_release(const char *dir, const rlk_script_set *bundle, int *rel,
                                int allow)
{
    rlk_script_set release;
    const char *tag = allow ? "warning: " : "";
    size_t changed = 0, added = 0, removed = 0;

    rlk_script_set_embedded(&release);
    for (size_t i = 0; i < bundle->count; i++) {
        const rlk_script_info *b = &bundle->items[i];
        const rlk_script_info *r = rlk_script_set_find(&release, b->name);

        rel[i] = REL_SAME;
        if (!r) {
            rel[i] = REL_ADDED;
            added++;
            rlk_cli_fail(0, "%sbundle %s: %s (version %d) is not a script of rlk %s", tag, dir,
                         b->name, b->version, RLK_VERSION);
        } else if (r->version != b->version || strcmp(r->sha1, b->sha1) != 0) {
            rel[i] = REL_CHANGED;
            changed++;
            if (r->version != b->version)
                rlk_cli_fail(0, "%sbundle %s: %s is version %d, rlk %s has version %d "
                             "(SHA-1 %s, not %s)", tag, dir, b->name, b->version, RLK_VERSION,
                             r->version, b->sha1, r->sha1);
            else
                rlk_cli_fail(0, "%sbundle %s: %s (version %d) was modified: SHA-1 %s, rlk %s "
                             "was built with %s", tag, dir, b->name, b->version, b->sha1,
                             RLK_VERSION, r->sha1);
        }
    }
    for (size_t i = 0; i < release.count; i++) {
        if (rlk_script_set_find(bundle, release.items[i].name))
            continue;
        removed++;
        rlk_cli_fail(0, "%sbundle %s: %s (version %d) of rlk %s is missing from the bundle", tag,
                     dir, release.items[i].name, release.items[i].version, RLK_VERSION);
    }
    if (changed + added + removed) {
        char other[96] = "";

        if (!bundle->rlk_version[0])
            snprintf(other, sizeof other, "; its manifest names no rlk version");
        else if (strcmp(bundle->rlk_version, RLK_VERSION) != 0)
            snprintf(other, sizeof other, "; its manifest says rlk %.40s", bundle->rlk_version);
        rlk_cli_fail(0, "%sbundle %s differs from the scripts of rlk %s (%zu changed, %zu added, "
                     "%zu removed%s)%s", tag, dir, RLK_VERSION, changed, added, removed, other,
                     allow ? "" : "; refused (--allow-modified to use it anyway)");
    }
    return changed + added + removed;
}

/* Reads and checks a bundle before any connection: RLK_EXIT_OK with rel filled (the caller
 * frees it), or an exit code. */
static int bundle_check(const scripts_opts *o, int **rel_out)
{
    rlk_script_set set;
    char err[RLK_ERRSTR_MAX];
    int rc = rlk_bundle_read(o->bundle, &set, err, sizeof err);
    int *rel;
    size_t diffs;

    *rel_out = NULL;
    if (rc != RLK_OK)
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", err);
    rel = calloc(set.count ? set.count : 1, sizeof *rel);
    if (!rel) {
        rlk_script_set_free(&set);
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    }
    diffs = bundle_vs_release(o->bundle, &set, rel, o->allow_modified);
    rlk_script_set_free(&set);
    if (diffs && !o->allow_modified) {
        free(rel);
        return RLK_EXIT_SCRIPTS;
    }
    *rel_out = rel;
    return RLK_EXIT_OK;
}

/* Connects with the bundle checked by bundle_check (or the embedded scripts); a bundle that
 * changed between the check and the connection is refused. */
static rlk_client *scripts_connect(const scripts_opts *o, int **rel, int *code)
{
    rlk_client *c;

    *rel = NULL;
    if (o->bundle && (*code = bundle_check(o, rel)) != RLK_EXIT_OK)
        return NULL;
    c = rlk_cli_connect(o->url, o->bundle, 1, code);
    if (!c) {
        free(*rel);
        *rel = NULL;
        return NULL;
    }
    if (o->bundle) {
        rlk_script_set again;
        char err[RLK_ERRSTR_MAX];
        int same = rlk_bundle_read(o->bundle, &again, err, sizeof err) == RLK_OK &&
                   again.count == rlk_script_count(c);

        for (size_t i = 0; same && i < again.count; i++)
            same = strcmp(again.items[i].sha1, rlk_script_at(c, i)->sha1) == 0;
        if (again.count)
            rlk_script_set_free(&again);
        if (!same) {
            *code = rlk_cli_fail(RLK_EXIT_USAGE, "bundle %s changed while rlk read it", o->bundle);
            free(*rel);
            *rel = NULL;
            rlk_free(c);
            return NULL;
        }
    }
    return c;
}

/* ---------------------------------------------------------------- on a cluster: per master */

/* Loads on every master: one line per master. */
static int scripts_load_cluster(rlk_client *c)
{
    rlk_client *m[RLK_CLUSTER_MAX_NODES];
    int n = rlk_topo_masters(c, m, RLK_CLUSTER_MAX_NODES), code = RLK_EXIT_OK;

    if (n == 0)
        return rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "no master known: %s", rlk_errstr(c));
    for (int k = 0; k < n; k++) {
        int rc = rlk_load_scripts(m[k]);

        if (rc == RLK_OK)
            printf("loaded  %zu scripts  on %s\n", rlk_script_count(c), m[k]->addr);
        else
            code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(m[k]));
    }
    return code;
}

/* SCRIPT EXISTS on every master: one line (or JSON object) per master with
 * the names of the missing scripts. */
static int scripts_verify_cluster(rlk_client *c, int json)
{
    rlk_client *m[RLK_CLUSTER_MAX_NODES];
    int n = rlk_topo_masters(c, m, RLK_CLUSTER_MAX_NODES), code = RLK_EXIT_OK;
    size_t count = rlk_script_count(c), missing_all = 0;
    int *present = calloc(count ? count : 1, sizeof *present);

    if (!present)
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    if (n == 0) {
        free(present);
        return rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "no master known: %s", rlk_errstr(c));
    }
    printf("%s", json ? "[" : "");
    for (int k = 0; k < n; k++) {
        int rc = rlk_verify_scripts(m[k], present), first = 1;
        size_t missing = 0;

        if (rc != RLK_OK) {
            code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(m[k]));
            continue;
        }
        for (size_t i = 0; i < count; i++)
            missing += !present[i];
        missing_all += missing;
        if (json) {
            printf("%s\n  {\"node\": \"%s\", \"scripts\": %zu, \"present\": %zu, "
                   "\"missing\": [", k ? "," : "", m[k]->addr, count, count - missing);
        } else {
            printf("%-7s  %zu/%zu  %s", missing ? "MISSING" : "present", count - missing, count,
                   m[k]->addr);
        }
        for (size_t i = 0; i < count; i++) {
            if (present[i])
                continue;
            if (json)
                printf("%s", first ? "" : ", "), json_string(stdout, rlk_script_at(c, i)->name);
            else
                printf("%s%s", first ? "  missing: " : " ", rlk_script_at(c, i)->name);
            first = 0;
        }
        printf("%s", json ? "]}" : "\n");
    }
    printf("%s", json ? "\n]\n" : "");
    free(present);
    if (code == RLK_EXIT_OK && missing_all)
        code = rlk_cli_fail(RLK_EXIT_SCRIPTS, "%zu scripts missing over %d masters of %s (run "
                            "'rlk scripts load')", missing_all, n, rlk_client_url(c));
    return code;
}

static int scripts_load(const scripts_opts *o)
{
    int code, rc, *rel;
    rlk_client *c = scripts_connect(o, &rel, &code);

    if (!c)
        return code;
    free(rel);
    if (rlk_topo_routed(c)) {
        code = scripts_load_cluster(c);
        rlk_free(c);
        return code;
    }
    rc = rlk_load_scripts(c);
    if (rc != RLK_OK) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(c));
    } else {
        for (size_t i = 0; i < rlk_script_count(c); i++)
            printf("loaded  %s  %s\n", rlk_script_at(c, i)->sha1, rlk_script_at(c, i)->name);
        code = RLK_EXIT_OK;
    }
    rlk_free(c);
    return code;
}

static void verify_print(const rlk_client *c, const int *present, const int *rel, int json)
{
    size_t n = rlk_script_count(c);

    if (json)
        printf("[");
    for (size_t i = 0; i < n; i++) {
        const rlk_script_info *s = rlk_script_at(c, i);

        if (json) {
            printf("%s\n  {\"name\": ", i ? "," : "");
            json_string(stdout, s->name);
            printf(", \"sha1\": \"%s\", \"present\": %s", s->sha1, present[i] ? "true" : "false");
            if (rel)
                printf(", \"release\": \"%s\"", rel_words[rel[i]]);
            printf("}");
        } else {
            printf("%-7s  %s  %s%s%s\n", present[i] ? "present" : "MISSING", s->sha1, s->name,
                   rel && rel[i] ? "  " : "", rel && rel[i] ? rel_words[rel[i]] : "");
        }
    }
    if (json)
        printf("%s]\n", n ? "\n" : "");
}

static int scripts_verify(const scripts_opts *o)
{
    int code, rc, *rel;
    size_t missing = 0, n;
    int *present;
    rlk_client *c = scripts_connect(o, &rel, &code);

    if (!c)
        return code;
    if (rlk_topo_routed(c)) {
        code = scripts_verify_cluster(c, o->json);
        free(rel);
        rlk_free(c);
        return code;
    }
    n = rlk_script_count(c);
    present = calloc(n ? n : 1, sizeof *present);
    rc = present ? rlk_verify_scripts(c, present) : RLK_ERR_NOMEM;
    if (rc != RLK_OK) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s", present ? rlk_errstr(c) : "out of memory");
    } else {
        verify_print(c, present, rel, o->json);
        for (size_t i = 0; i < n; i++)
            missing += !present[i];
        code = RLK_EXIT_OK;
        if (missing)
            code = rlk_cli_fail(RLK_EXIT_SCRIPTS, "%zu of %zu scripts missing on %s (run 'rlk scripts load')",
                                missing, n, rlk_client_url(c));
    }
    free(present);
    free(rel);
    rlk_free(c);
    return code;
}

static int scripts_run(int argc, char **argv)
{
    scripts_opts o = {0};
    int rc = scripts_parse(argc, argv, &o);

    if (rc >= 0)
        return rc;
    if (strcmp(o.sub, "list") == 0)
        return scripts_list(&o);
    if (strcmp(o.sub, "load") == 0)
        return scripts_load(&o);
    if (strcmp(o.sub, "verify") == 0)
        return scripts_verify(&o);
    return rlk_cli_usage("scripts", "unknown subcommand '%s': expected list, load or verify", o.sub);
}

const rlk_cli_command rlk_cmd_scripts = {
    "scripts",
    "list, load or verify the scripts (rlk scripts list|load|verify)",
    rlk_cli_help_scripts,
    scripts_run,
};
