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
    fprintf(out,
            "\n"
            "Options (accepted before the command or after it):\n"
            "  --url URL             redis://[user[:password]@]host[:port][/db],\n"
            "                        unix:///path[?db=N], redis+cluster://host:port[,...],\n"
            "                        redis+sentinel://host:port[,...]/MASTER; rediss, rediss+\n"
            "                        cluster, rediss+sentinel: the same over TLS (default:\n"
            "                        $RLK_URL, then %s); the scheme is case-insensitive\n"
            "  --url-file FILE       read the URL from FILE (one line)\n"
            "  --password-file FILE  the AUTH password, from FILE (one line; not readable by\n"
            "                        every user); used when the URL has no password, before\n"
            "                        $RLK_PASSWORD_FILE, $RLK_PASSWORD, then $REDISCLI_AUTH\n"
            "  --keep-env            pass the credentials on to a command rlk runs: the URL's\n"
            "                        password, RLK_PASSWORD, REDISCLI_AUTH, RLK_PASSWORD_FILE,\n"
            "                        RLK_TLS_CERT, RLK_TLS_KEY, RLK_TLS_KEY_PASSWORD_FILE\n"
            "                        (default: removed; the command gets RLK_URL = the URL\n"
            "                        rlk uses, without its password, and the TLS options)\n"
            "  --functions           call the scripts as the Redis 7 Functions library rlk\n"
            "                        (FCALL / FCALL_RO; exit 5 while the server lacks this\n"
            "                        release's library: rlk functions load). Default: FCALL\n"
            "                        when the server holds it, else EVALSHA\n"
            "  --no-functions        always EVALSHA (and SCRIPT LOAD on NOSCRIPT)\n"
            "  --pubsub MODE         auto (default; also $RLK_PUBSUB): sharded pub/sub\n"
            "                        (SPUBLISH/SSUBSCRIBE) on a Redis 7 cluster, else global\n"
            "                        (PUBLISH/SUBSCRIBE); global or sharded: that one, to\n"
            "                        match Redisson's shardedSubscriptionMode\n"
            "  --min-replicas N      after every write to a lock, WAIT until N replicas\n"
            "                        acknowledge it, in the same round trip; fewer: exit 10\n"
            "                        (an acquisition is released again). Default 0: no WAIT\n"
            "  --min-replicas-timeout MS\n"
            "                        how long that WAIT waits (default 1000)\n"
            "  --verbose             say on stderr where rlk connects (password masked), what\n"
            "                        TLS verified (protocol, cipher, certificate, days left),\n"
            "                        and while waiting, who holds the lock (after 1 s, then\n"
            "                        every 10 s)\n"
            "TLS (rediss://, rediss+cluster://, rediss+sentinel://; docs/tls.md):\n"
            "  --tls                 TLS for a redis* URL too (as redis-cli --tls); also $RLK_TLS=1\n"
            "  --cacert FILE         trust the CAs of FILE (PEM) for the server's certificate\n"
            "                        (default: the system's store); $RLK_TLS_CACERT\n"
            "  --cacertdir DIR       trust the hashed CA certificates of DIR; $RLK_TLS_CACERTDIR\n"
            "  --cert FILE           client certificate (PEM), for tls-auth-clients; $RLK_TLS_CERT\n"
            "  --key FILE            its private key (PEM); $RLK_TLS_KEY\n"
            "  --key-password-file FILE\n"
            "                        the key's pass phrase (one line); $RLK_TLS_KEY_PASSWORD_FILE\n"
            "  --sni NAME            the server name to send and check instead of the URL's\n"
            "                        host; $RLK_TLS_SNI\n"
            "  --insecure            no certificate or name check (said on stderr); never in\n"
            "                        production; $RLK_TLS_INSECURE=1\n"
            "\n"
            "Exit codes:\n"
            "  0  success\n"
            "  1  lock or permit not acquired in time; latch still armed (await) or\n"
            "     armed already (set)\n"
            "  2  usage error or bad input (bad URL, unreadable credential file, unknown\n"
            "     script, bad bundle, a semaphore/latch name of the other kind)\n"
            "  3  connection, auth or timeout error\n"
            "  4  a script or the server replied an error\n"
            "  5  scripts missing or mismatched on the server (scripts load, scripts verify),\n"
            "     or a bundle that differs from this release's scripts; the library rlk\n"
            "     missing or not this release's (functions verify, --functions)\n"
            "  6  lock lost while the command ran (rlk lock, rlk semaphore)\n"
            "  7  rlk check: warnings, or checks it could not make\n"
            "  8  rlk check: errors (the server is not fit for locks)\n"
            "  9  the server is a replica (READONLY, MASTERDOWN)\n"
            "  10 too few replicas acknowledged (--min-replicas), or NOREPLICAS\n"
            "  11 rlk fence: the token is below the highest the fence accepted\n"
            "\n"
            "Documentation:\n"
            "  man rlk; README.md and docs/*.md (cli.md: every command and option, ops.md,\n"
            "  tls.md, acl.md, ...) in %s\n",
            RLK_DEFAULT_URL, rlk_cli_docdir());
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
