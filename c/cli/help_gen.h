/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * help_gen.h - made by tools/gen-cli.lua from c/cli/commands.lua: do not edit. The help texts
 * of rlk (help_gen.c): the part of `rlk --help` after its list of commands (the options every
 * command takes, the exit codes and the environment) and each command's `rlk CMD --help`.
 */
#ifndef RLK_CLI_HELP_GEN_H
#define RLK_CLI_HELP_GEN_H

/* Lines ending in '\n', printed after the list of commands. */
extern const char rlk_cli_help_text[];

/* rlk CMD --help and rlk help CMD: the whole text, lines ending in '\n'. */
extern const char rlk_cli_help_scripts[];
extern const char rlk_cli_help_functions[];
extern const char rlk_cli_help_eval[];
extern const char rlk_cli_help_lock[];
extern const char rlk_cli_help_fastmulti[];
extern const char rlk_cli_help_elect[];
extern const char rlk_cli_help_semaphore[];
extern const char rlk_cli_help_latch[];
extern const char rlk_cli_help_inspect[];
extern const char rlk_cli_help_top[];
extern const char rlk_cli_help_unlock[];
extern const char rlk_cli_help_check[];
extern const char rlk_cli_help_fence[];

#endif
