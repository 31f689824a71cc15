/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * help_gen.h - the part of `rlk --help` made from c/cli/commands.lua (help_gen.c, written by
 * tools/gen-cli.lua): the options every command takes, the exit codes and the environment.
 */
#ifndef RLK_CLI_HELP_GEN_H
#define RLK_CLI_HELP_GEN_H

/* Lines ending in '\n', printed after the list of commands. */
extern const char rlk_cli_help_text[];

#endif
