/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * main.c - rlk: the command-line tool around rlk's scripts.
 *
 *   rlk [--url URL] COMMAND [ARGS...]
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "help_gen.h"

/* Every command, in the order `rlk --help` lists them. */
static const rlk_cli_command *const rlk_cli_commands[] = {
    &rlk_cmd_scripts,
    &rlk_cmd_functions,
    &rlk_cmd_eval,
    &rlk_cmd_lock,
    &rlk_cmd_fastmulti,
    &rlk_cmd_elect,
    &rlk_cmd_semaphore,
    &rlk_cmd_latch,
    &rlk_cmd_inspect,
    &rlk_cmd_top,
    &rlk_cmd_unlock,
    &rlk_cmd_check,
    &rlk_cmd_fence,
    NULL,
};

/* The installed documentation: share/doc/rlk beside this binary's bin/ when it is there (an
 * installation moved or made with --prefix), else where the build configured it. */
static const char *rlk_cli_docdir(void)
{
    static char dir[4096];
    char exe[3000];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash;
    struct stat st;

    if (n > 0) {
        exe[n] = '\0';
        if ((slash = strrchr(exe, '/')) != NULL) {
            *slash = '\0';
            snprintf(dir, sizeof dir, "%s/../%s", exe, RLK_DOCDIR_REL);
            if (stat(dir, &st) == 0 && S_ISDIR(st.st_mode)) {
                char *real = realpath(dir, NULL);

                if (real) {
                    snprintf(dir, sizeof dir, "%s", real);
                    free(real);
                }
                return dir;
            }
        }
    }
    return RLK_DOCDIR;
}

static void rlk_cli_help(FILE *out)
{
    fprintf(out,
            "usage: rlk [--url URL] COMMAND [ARGS...]\n"
            "       rlk --help | --version | help COMMAND | COMMAND --help\n"
            "       (-h and --help, --version: alone only)\n"
            "\n"
            "Runs commands under distributed locks on Redis (Redisson's layouts: reentrant,\n"
            "read-write, fair and fenced locks, MultiLock, RedLock), semaphores and latches;\n"
            "shows and force-releases them; lists, loads, verifies and calls rlk's Lua scripts.\n"
            "\n"
            "Commands:\n");
    for (int i = 0; rlk_cli_commands[i]; i++)
        fprintf(out, "  %-10s %s\n", rlk_cli_commands[i]->name, rlk_cli_commands[i]->summary);
    fputs("\n", out);
    fputs(rlk_cli_help_text, out);
    fprintf(out,
            "\n"
            "Documentation:\n"
            "  man rlk; README.md and docs/*.md (cli.md: every command and option, ops.md,\n"
            "  tls.md, acl.md, ...) in %s\n",
            rlk_cli_docdir());
}

static const rlk_cli_command *rlk_cli_find(const char *name)
{
    for (int i = 0; rlk_cli_commands[i]; i++)
        if (strcmp(rlk_cli_commands[i]->name, name) == 0)
            return rlk_cli_commands[i];
    return NULL;
}

/* rlk help [COMMAND] */
static int rlk_cli_help_command(int argc, char **argv)
{
    const rlk_cli_command *cmd;

    if (argc < 2) {
        rlk_cli_help(stdout);
        return RLK_EXIT_OK;
    }
    cmd = rlk_cli_find(argv[1]);
    if (!cmd)
        return rlk_cli_usage(NULL, "unknown command '%s'", argv[1]);
    fputs(cmd->usage, stdout);
    return RLK_EXIT_OK;
}

/* The version, and the identity of the embedded script set: the SHA-1 of its manifest lines
 * (`grep -v '^#' share/rlk/scripts/manifest.tsv | sha1sum` gives the same). */
void rlk_cli_version(void)
{
    rlk_script_set set;
    char id[41];

    rlk_script_set_embedded(&set);
    rlk_script_set_id(&set, id);
    printf("rlk %s (hiredis %d.%d.%d, %zu scripts embedded)\nscript set %s\n", RLK_VERSION,
           HIREDIS_MAJOR, HIREDIS_MINOR, HIREDIS_PATCH, rlk_embedded_count(), id);
}

int main(int argc, char **argv)
{
    int i = 1;

    rlk_cli_env_take();
    while (i < argc && argv[i][0] == '-') {
        int got;

        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            if (argc == 2) {
                rlk_cli_help(stdout);
                return RLK_EXIT_OK;
            }
            if (strcmp(argv[i], "-h") == 0)
                return rlk_cli_usage(NULL, "-h means --help and goes alone; the server is given "
                                     "with --url redis://HOST[:PORT] (rlk is not redis-cli)");
            return rlk_cli_usage(NULL, "--help goes alone (rlk --help, rlk COMMAND --help)");
        }
        if (strcmp(argv[i], "--version") == 0 || strcmp(argv[i], "-V") == 0) {
            if (argc != 2)
                return rlk_cli_usage(NULL, "%s goes alone (rlk %s)", argv[i], argv[i]);
            rlk_cli_version();
            return RLK_EXIT_OK;
        }
        got = rlk_cli_opt_value(NULL, argc, argv, &i, "--url", &rlk_cli_global_url);
        if (got == 0)
            got = rlk_cli_global_opt(NULL, argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got == 0)
            return rlk_cli_unknown_option(NULL, argv[i]);
    }
    if (i >= argc) {
        rlk_cli_help(stderr);
        return RLK_EXIT_USAGE;
    }
    if (strcmp(argv[i], "help") == 0)
        return rlk_cli_help_command(argc - i, argv + i);
    const rlk_cli_command *cmd = rlk_cli_find(argv[i]);
    if (!cmd)
        return rlk_cli_usage(NULL, "unknown command '%s'", argv[i]);
    rlk_cli_cmd_name = cmd->name;
    rlk_cli_cmd_argc = argc - i;
    return cmd->run(argc - i, argv + i);
}
