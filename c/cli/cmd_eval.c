/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_eval.c - rlk eval NAME [--key K]... [--arg A]...
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "help_gen.h"
#include "cli.h"

typedef struct eval_opts {
    const char *name;
    const char *url;
    const char *bundle;
    int raw;                    /* -1: decide by isatty(stdout) */
    const char **keys, **args;
    int nkeys, nargs;
} eval_opts;

/* Returns -1 to go on, or an exit code. */
static int eval_opt(int argc, char **argv, int *i, eval_opts *o)
{
    const char *v;
    int got;

    if ((got = rlk_cli_opt_value("eval", argc, argv, i, "--key", &v)) > 0) {
        o->keys[o->nkeys++] = v;
        return -1;
    }
    if (got == 0 && (got = rlk_cli_opt_value("eval", argc, argv, i, "--arg", &v)) > 0) {
        o->args[o->nargs++] = v;
        return -1;
    }
    if (got == 0)
        got = rlk_cli_opt_value("eval", argc, argv, i, "--bundle", &o->bundle);
    return rlk_cli_reply_opt("eval", argc, argv, i, got, &o->url, &o->raw, rlk_cli_help_eval);
}

static int eval_parse(int argc, char **argv, eval_opts *o)
{
    for (int i = 1; i < argc;) {
        if (argv[i][0] == '-') {
            int rc = eval_opt(argc, argv, &i, o);

            if (rc >= 0)
                return rc;
        } else if (o->name) {
            return rlk_cli_usage("eval", "unexpected argument '%s' (use --key or --arg)", argv[i]);
        } else {
            o->name = argv[i++];
        }
    }
    if (!o->name)
        return rlk_cli_usage("eval", "missing script name");
    return -1;
}

/* Checks the name against the script set before connecting. */
static int eval_known(const eval_opts *o)
{
    rlk_script_set set;
    char err[RLK_ERRSTR_MAX];
    int rc = RLK_OK, found;

    if (o->bundle) {
        rc = rlk_bundle_read(o->bundle, &set, err, sizeof err);
        if (rc != RLK_OK)
            return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", err);
    } else {
        rlk_script_set_embedded(&set);
    }
    found = rlk_script_set_find(&set, o->name) != NULL;
    rlk_script_set_free(&set);
    if (!found)
        return rlk_cli_fail(RLK_EXIT_USAGE, "no script named '%s' (see 'rlk scripts list')",
                            o->name);
    return -1;
}

static int eval_call(const eval_opts *o)
{
    redisReply *reply = NULL;
    int code, rc;
    rlk_client *c = rlk_cli_connect(o->url, o->bundle, 1, &code);

    if (!c)
        return code;
    rc = rlk_eval(c, o->name, o->nkeys, o->keys, o->nargs, o->args, &reply);
    if (rc == RLK_ERR_SCRIPT || rc == RLK_ERR_SERVER || rc == RLK_ERR_AUTH) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s", o->name, rlk_errstr(c));
    } else if (rc != RLK_OK) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_errstr(c));
    } else {
        rlk_cli_print_reply(stdout, reply, o->raw >= 0 ? o->raw : !isatty(STDOUT_FILENO));
        freeReplyObject(reply);
        code = RLK_EXIT_OK;
    }
    rlk_free(c);
    return code;
}

static int eval_run(int argc, char **argv)
{
    eval_opts o = {NULL, NULL, NULL, -1, NULL, NULL, 0, 0};
    int rc;

    o.keys = calloc((size_t)argc, sizeof *o.keys);
    o.args = calloc((size_t)argc, sizeof *o.args);
    if (!o.keys || !o.args)
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    else if ((rc = eval_parse(argc, argv, &o)) < 0 && (rc = eval_known(&o)) < 0)
        rc = eval_call(&o);
    free(o.keys);
    free(o.args);
    return rc;
}

const rlk_cli_command rlk_cmd_eval = {
    "eval",
    "call a script by name with KEYS and ARGV (rlk eval NAME --key K --arg A)",
    rlk_cli_help_eval,
    eval_run,
};
