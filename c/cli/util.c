/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.c - the CLI's shared helpers: error lines, exit codes, option values,
 * connecting.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

const char *rlk_cli_global_url;

static void rlk_cli_vmessage(const char *fmt, va_list ap)
{
    fputs("rlk: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

int rlk_cli_fail(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rlk_cli_vmessage(fmt, ap);
    va_end(ap);
    return code;
}

int rlk_cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    fputs("rlk: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'rlk %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
    return RLK_EXIT_USAGE;
}

int rlk_cli_exit_code(int err)
{
    switch (err) {
    case RLK_OK:
        return RLK_EXIT_OK;
    case RLK_ERR_BUSY:
        return RLK_EXIT_NOT_ACQUIRED;
    case RLK_ERR_URL:
    case RLK_ERR_ARG:
    case RLK_ERR_UPGRADE:
    case RLK_ERR_BUNDLE:
    case RLK_ERR_NOSUCHSCRIPT:
        return RLK_EXIT_USAGE;
    case RLK_ERR_IO:
    case RLK_ERR_TIMEOUT:
    case RLK_ERR_AUTH:
        return RLK_EXIT_CONNECT;
    case RLK_ERR_SHA:
        return RLK_EXIT_SCRIPTS;
    default:    /* SCRIPT, SERVER, PROTOCOL, NOMEM, NOT_OWNER, LOST */
        return RLK_EXIT_REPLY;
    }
}

int rlk_cli_is_help(const char *arg)
{
    return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0;
}

int rlk_cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                      const char **value)
{
    size_t n = strlen(name);
    const char *arg = argv[*i];

    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        *i += 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        rlk_cli_usage(cmd, "option %s needs a value", name);
        return -1;
    }
    *value = argv[*i + 1];
    *i += 2;
    return 1;
}

rlk_client *rlk_cli_connect(const char *url, const char *bundle_dir, int no_preload,
                            int *exit_code)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url ? url : rlk_cli_global_url;
    o.bundle_dir = bundle_dir;
    o.no_preload = no_preload;
    o.pool_size = 1;
    c = rlk_connect(&o);
    if (!c) {
        *exit_code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        return NULL;
    }
    if (rlk_err(c) != RLK_OK) {
        *exit_code = rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "%s", rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    *exit_code = RLK_EXIT_OK;
    return c;
}
