/*
 * cmd_scripts.c - rlk scripts list | load | verify
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

typedef struct scripts_opts {
    const char *sub;
    const char *url;
    const char *bundle;
    int json;
} scripts_opts;

static const char scripts_usage[] =
    "usage: rlk scripts list   [--bundle DIR] [--json]\n"
    "       rlk scripts load   [--url URL] [--bundle DIR]\n"
    "       rlk scripts verify [--url URL] [--bundle DIR] [--json]\n"
    "\n"
    "  list    the scripts (name, version, number of KEYS, SHA-1); no server needed.\n"
    "          KEYS 'n' means a variadic number of keys.\n"
    "  load    SCRIPT LOAD every script; checks each SHA-1 the server returns.\n"
    "  verify  which scripts the server holds (SCRIPT EXISTS by SHA-1); exit 5 when any\n"
    "          is missing.\n"
    "\n"
    "  --bundle DIR  use the bundle directory DIR (manifest.tsv + <name>.lua) instead of\n"
    "                the scripts built into rlk; its files are checked against the manifest\n"
    "  --json        machine-readable output\n"
    "  --url URL     the server (default: $RLK_URL, then " RLK_DEFAULT_URL ")\n";

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
            fputs(scripts_usage, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (argv[i][0] == '-')
            return rlk_cli_usage("scripts", "unknown option '%s'", argv[i]);
        else if (o->sub)
            return rlk_cli_usage("scripts", "unexpected argument '%s'", argv[i]);
        else
            o->sub = argv[i];
        i++;
    }
    if (!o->sub)
        return rlk_cli_usage("scripts", "missing subcommand: list, load or verify");
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

static int scripts_load(const scripts_opts *o)
{
    int code, rc;
    rlk_client *c = rlk_cli_connect(o->url, o->bundle, 1, &code);

    if (!c)
        return code;
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

static void verify_print(const rlk_client *c, const int *present, int json)
{
    size_t n = rlk_script_count(c);

    if (json)
        printf("[");
    for (size_t i = 0; i < n; i++) {
        const rlk_script_info *s = rlk_script_at(c, i);

        if (json) {
            printf("%s\n  {\"name\": ", i ? "," : "");
            json_string(stdout, s->name);
            printf(", \"sha1\": \"%s\", \"present\": %s}", s->sha1, present[i] ? "true" : "false");
        } else {
            printf("%-7s  %s  %s\n", present[i] ? "present" : "MISSING", s->sha1, s->name);
        }
    }
    if (json)
        printf("%s]\n", n ? "\n" : "");
}

static int scripts_verify(const scripts_opts *o)
{
    int code, rc;
    size_t missing = 0, n;
    int *present;
    rlk_client *c = rlk_cli_connect(o->url, o->bundle, 1, &code);

    if (!c)
        return code;
    n = rlk_script_count(c);
    present = calloc(n ? n : 1, sizeof *present);
    rc = present ? rlk_verify_scripts(c, present) : RLK_ERR_NOMEM;
    if (rc != RLK_OK) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s", present ? rlk_errstr(c) : "out of memory");
    } else {
        verify_print(c, present, o->json);
        for (size_t i = 0; i < n; i++)
            missing += !present[i];
        code = RLK_EXIT_OK;
        if (missing)
            code = rlk_cli_fail(RLK_EXIT_SCRIPTS, "%zu of %zu scripts missing on %s (run 'rlk scripts load')",
                                missing, n, rlk_client_url(c));
    }
    free(present);
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
    scripts_usage,
    scripts_run,
};
