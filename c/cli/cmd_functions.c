/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_functions.c - rlk functions load | verify | dump: the Redis 7 Functions
 * library rlk built from this release's scripts (share/rlk/functions.lua).
 */
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "cli.h"
#include "client/client.h"
#include "client/cluster.h"
#include "client/topo.h"

typedef struct functions_opts {
    const char *sub;
    const char *url;
    int replace;
    int json;
    int server;
} functions_opts;

/* Returns -1 on success (keep going) or an exit code. */
static int functions_parse(int argc, char **argv, functions_opts *o)
{
    for (int i = 1; i < argc;) {
        int got = rlk_cli_opt_value("functions", argc, argv, &i, "--url", &o->url);

        if (got == 0)
            got = rlk_cli_global_opt("functions", argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(rlk_cli_help_functions, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--replace") == 0)
            o->replace = 1;
        else if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (strcmp(argv[i], "--server") == 0)
            o->server = 1;
        else if (argv[i][0] == '-')
            return rlk_cli_unknown_option("functions", argv[i]);
        else if (o->sub)
            return rlk_cli_usage("functions", "unexpected argument '%s'", argv[i]);
        else
            o->sub = argv[i];
        i++;
    }
    if (!o->sub)
        return rlk_cli_usage("functions", "missing subcommand: load, verify or dump");
    if (o->replace && strcmp(o->sub, "load") != 0)
        return rlk_cli_usage("functions", "--replace goes with load");
    if (o->json && strcmp(o->sub, "verify") != 0)
        return rlk_cli_usage("functions", "--json goes with verify");
    if (o->server && strcmp(o->sub, "dump") != 0)
        return rlk_cli_usage("functions", "--server goes with dump");
    return -1;
}

/* Connects in EVALSHA mode (nothing is probed or loaded: the library may be missing). */
static rlk_client *functions_connect(const functions_opts *o, int *code)
{
    rlk_options opts;
    rlk_client *c;

    rlk_options_init(&opts);
    if ((*code = rlk_cli_conn_options(o->url, &opts)) >= 0)
        return NULL;
    opts.no_preload = 1;
    opts.pool_size = 1;
    opts.functions = RLK_FUNCTIONS_OFF;
    c = rlk_connect(&opts);
    if (!c) {
        *code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        return NULL;
    }
    if (rlk_err(c) != RLK_OK) {
        *code = rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "%s", rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    *code = RLK_EXIT_OK;
    return c;
}

static const char *functions_what(const rlk_functions_state *st)
{
    return !st->present ? "missing" : st->same_code ? "identical" : "different";
}

static int functions_verify(rlk_client *c, const functions_opts *o)
{
    const rlk_library_info *lib = rlk_embedded_library();
    rlk_functions_state st;
    int rc = rlk_verify_functions(c, &st);

    if (rc != RLK_OK)
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(c));
    if (o->json) {
        printf("{\"library\": \"rlk\", \"server_url\": \"%s\", \"state\": \"%s\", \"functions\": %d, "
               "\"server\": {\"release\": \"%s\", \"scripts_id\": \"%s\", \"sha1\": \"%s\"}, "
               "\"release\": {\"release\": \"%s\", \"scripts_id\": \"%s\", \"sha1\": \"%s\"}}\n",
               rlk_client_url(c), functions_what(&st), st.functions, st.release, st.scripts_id, st.sha1, lib->release,
               lib->scripts_id, lib->sha1);
    } else if (st.present) {
        printf("%-9s  rlk  %d functions  release %s  scripts %s  sha1 %s\n",
               st.same_code ? "identical" : "DIFFERENT", st.functions,
               st.release[0] ? st.release : "?", st.scripts_id[0] ? st.scripts_id : "?", st.sha1);
    } else {
        printf("MISSING    rlk\n");
    }
    if (!st.present)
        return rlk_cli_fail(RLK_EXIT_SCRIPTS, "library rlk missing on %s (run 'rlk functions load')",
                            rlk_client_url(c));
    if (!st.same_code)
        return rlk_cli_fail(RLK_EXIT_SCRIPTS, "library rlk on %s is not this release's: its code has "
                            "SHA-1 %s, rlk %s's %s (release %s, scripts %s; run 'rlk functions "
                            "load --replace')", rlk_client_url(c), st.sha1, RLK_VERSION, lib->sha1,
                            lib->release, lib->scripts_id);
    return RLK_EXIT_OK;
}

static int functions_load(rlk_client *c, const functions_opts *o)
{
    const rlk_library_info *lib = rlk_embedded_library();
    rlk_functions_state st;
    int rc = rlk_verify_functions(c, &st);

    if (rc != RLK_OK)
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(c));
    if (st.present && st.same_code) {
        printf("loaded  rlk  %s  (already there, identical)\n", lib->sha1);
        return RLK_EXIT_OK;
    }
    if (st.present && !o->replace)
        return rlk_cli_fail(RLK_EXIT_SCRIPTS, "%s already holds another library rlk (release %s, "
                            "sha1 %s); --replace loads this release's over it", rlk_client_url(c),
                            st.release[0] ? st.release : "?", st.sha1);
    rc = rlk_load_functions(c, st.present);
    if (rc != RLK_OK)
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(c));
    printf("loaded  rlk  %s  (release %s, scripts %s)\n", lib->sha1, lib->release, lib->scripts_id);
    return RLK_EXIT_OK;
}

static int functions_dump_server(rlk_client *c)
{
    char *code = NULL;
    size_t len = 0;
    int rc = rlk_server_functions_code(c, &code, &len);

    if (rc != RLK_OK)
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(c));
    if (!code)
        return rlk_cli_fail(RLK_EXIT_SCRIPTS, "library rlk missing on %s", rlk_client_url(c));
    fwrite(code, 1, len, stdout);
    free(code);
    return RLK_EXIT_OK;
}

/* On a cluster: load or verify on every master, each with its own line (or JSON object), which
 * names the master; the exit code is the last failure's. Functions live per node, like scripts. */
static int functions_cluster(rlk_client *c, const functions_opts *o)
{
    rlk_client *m[RLK_CLUSTER_MAX_NODES];
    int n = rlk_topo_masters(c, m, RLK_CLUSTER_MAX_NODES), code = RLK_EXIT_OK;

    if (n == 0)
        return rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "no master known: %s", rlk_errstr(c));
    for (int k = 0; k < n; k++) {
        int rc;

        if (!o->json)
            printf("%s:\n", m[k]->addr);
        fflush(stdout);
        rc = strcmp(o->sub, "load") == 0 ? functions_load(m[k], o) : functions_verify(m[k], o);
        if (rc != RLK_EXIT_OK)
            code = rc;
    }
    return code;
}

static int functions_run(int argc, char **argv)
{
    functions_opts o = {0};
    int code = functions_parse(argc, argv, &o);
    rlk_client *c;

    if (code >= 0)
        return code;
    if (strcmp(o.sub, "load") != 0 && strcmp(o.sub, "verify") != 0 && strcmp(o.sub, "dump") != 0)
        return rlk_cli_usage("functions", "unknown subcommand '%s': expected load, verify or dump",
                             o.sub);
    if (strcmp(o.sub, "dump") == 0 && !o.server) {
        const rlk_library_info *lib = rlk_embedded_library();

        fwrite(lib->code, 1, lib->code_len, stdout);
        return RLK_EXIT_OK;
    }
    if (!(c = functions_connect(&o, &code)))
        return code;
    if (rlk_topo_routed(c) && strcmp(o.sub, "dump") != 0)
        code = functions_cluster(c, &o);
    else if (strcmp(o.sub, "load") == 0)
        code = functions_load(c, &o);
    else if (strcmp(o.sub, "verify") == 0)
        code = functions_verify(c, &o);
    else
        code = functions_dump_server(c);    /* on a cluster: the node the call lands on */
    rlk_free(c);
    return code;
}

const rlk_cli_command rlk_cmd_functions = {
    "functions",
    "the Redis 7 Functions library (rlk functions load|verify|dump)",
    rlk_cli_help_functions,
    functions_run,
};
