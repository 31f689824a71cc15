/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli.h - what the rlk command's parts share.
 *
 * Adding a command: write cmd_<name>.c defining a `const rlk_cli_command
 * rlk_cmd_<name>` (name, one-line summary, usage text, run function), declare
 * it below and list it in rlk_cli_commands[] in main.c. The build picks up
 * every .c file in c/cli.
 *
 * A command's run function gets argv with argv[0] = the command name and
 * returns an exit code (RLK_EXIT_*). Use rlk_cli_fail / rlk_cli_usage for
 * errors: one line "rlk: <message>" on stderr.
 */
#ifndef RLK_CLI_H
#define RLK_CLI_H

#include <stdio.h>

#include "client/bundle.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/scripts.h"

/* Exit codes (also in `rlk --help` and docs/cli.md). */
enum rlk_exit {
    RLK_EXIT_OK = 0,
    RLK_EXIT_NOT_ACQUIRED = 1,  /* a lock was not acquired in time */
    RLK_EXIT_USAGE = 2,         /* usage error or bad input */
    RLK_EXIT_CONNECT = 3,       /* connection, auth or timeout error */
    RLK_EXIT_REPLY = 4,         /* a script or the server replied an error */
    RLK_EXIT_SCRIPTS = 5,       /* scripts missing or mismatched on the server */
    RLK_EXIT_LOST = 6,          /* the lock was lost while the command ran */
    RLK_EXIT_CHECK_WARNINGS = 7, /* rlk check: warnings (or checks it could not make) */
    RLK_EXIT_CHECK_ERRORS = 8   /* rlk check: errors (a server not fit for locks) */
};

typedef struct rlk_cli_command {
    const char *name;
    const char *summary;        /* one line for `rlk --help` */
    const char *usage;          /* full text for `rlk <name> --help` */
    int (*run)(int argc, char **argv);
} rlk_cli_command;

extern const rlk_cli_command rlk_cmd_scripts;
extern const rlk_cli_command rlk_cmd_eval;
extern const rlk_cli_command rlk_cmd_lock;
extern const rlk_cli_command rlk_cmd_semaphore;
extern const rlk_cli_command rlk_cmd_latch;
extern const rlk_cli_command rlk_cmd_inspect;
extern const rlk_cli_command rlk_cmd_unlock;
extern const rlk_cli_command rlk_cmd_check;

/* Global --url (NULL when not given); commands may override it with their own --url. */
extern const char *rlk_cli_global_url;

/* Prints "rlk: <message>" to stderr and returns code. */
int rlk_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error: the message, a hint to `rlk <cmd> --help`, RLK_EXIT_USAGE. */
int rlk_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The exit code for an rlk error code. */
int rlk_cli_exit_code(int rlk_err);

/* Option matching: when argv[*i] is `name VALUE` or `name=VALUE`, stores VALUE,
 * advances *i past it and returns 1; returns -1 (after a usage message) when the
 * value is missing; 0 when argv[*i] is something else. */
int rlk_cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                      const char **value);
int rlk_cli_is_help(const char *arg);

/* Connects for a command: --url, else the global --url, else $RLK_URL, else the default.
 * Scripts from bundle_dir when non-NULL. On failure prints the error and sets *exit_code;
 * returns NULL. */
rlk_client *rlk_cli_connect(const char *url, const char *bundle_dir, int no_preload,
                            int *exit_code);

/* Prints a reply the way redis-cli does: raw (one value per line) or formatted
 * ("(integer) 1", quoted strings, numbered arrays). */
void rlk_cli_print_reply(FILE *out, const redisReply *r, int raw);

#endif /* RLK_CLI_H */
