/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_lock.c - rlk lock [MODE] NAME [OPTIONS] -- COMMAND [ARGS...]
 *
 * Waits for a lock, runs COMMAND while holding it, releases it when the
 * command ends and exits with the command's status. This file parses the
 * options and picks the mode; the modes are lock_single.c (reentrant,
 * --read, --write, --fair, --fenced), lock_multi.c (--all) and
 * lock_redlock.c (--redlock); lock_hold.c runs the command for all of them.
 */
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "lock_cli.h"
#include "wait_report.h"

/* ---------------------------------------------------------------- parsing */

typedef struct lock_mode_flag {
    const char *flag;
    int mode;
} lock_mode_flag;

static const lock_mode_flag lock_mode_flags[] = {
    {"--read", RLK_LC_READ},   {"--write", RLK_LC_WRITE}, {"--fair", RLK_LC_FAIR},
    {"--fenced", RLK_LC_FENCED}, {"--all", RLK_LC_ALL},   {"--non-reentrant", RLK_LC_NONREENTRANT},
    {"--spin", RLK_LC_SPIN},   {NULL, 0},
};

/* 1 when flags a and b are --fair and --non-reentrant, in either order. */
static int lock_fair_nonreentrant(const char *a, const char *b)
{
    return (strcmp(a, "--fair") == 0 && strcmp(b, "--non-reentrant") == 0) ||
           (strcmp(a, "--non-reentrant") == 0 && strcmp(b, "--fair") == 0);
}

static int lock_set_mode(rlk_lc_lock_opts *o, const char *flag, int mode)
{
    if (o->mode_flag && strcmp(o->mode_flag, flag) != 0) {
        if (lock_fair_nonreentrant(o->mode_flag, flag) ||
            (o->fair_nonreentrant && lock_fair_nonreentrant("--fair", flag))) {
            /* The non-reentrant fair lock (rlk_fairlock_set_non_reentrant). */
            o->fair_nonreentrant = 1;
            o->mode_flag = "--fair";
            o->mode = RLK_LC_FAIR;
            return -1;
        }
        if (o->fair_nonreentrant || strcmp(flag, "--non-reentrant") == 0 ||
            strcmp(o->mode_flag, "--non-reentrant") == 0)
            return rlk_cli_usage("lock", "%s and %s exclude each other: --non-reentrant goes "
                                 "alone or with --fair", o->fair_nonreentrant ? "--non-reentrant"
                                 : o->mode_flag, flag);
        return rlk_cli_usage("lock", "%s and %s exclude each other: one kind of lock at a time",
                             o->mode_flag, flag);
    }
    o->mode_flag = flag;
    o->mode = mode;
    return -1;
}

/* A mode flag at argv[*i]: 1 (taken; *rc -1 or an exit code), 0: not one. */
static int lock_mode_arg(int argc, char **argv, int *i, rlk_lc_lock_opts *o, int *rc)
{
    const char *urls;
    int got;

    for (int k = 0; lock_mode_flags[k].flag; k++) {
        if (strcmp(argv[*i], lock_mode_flags[k].flag) == 0) {
            (*i)++;
            *rc = lock_set_mode(o, lock_mode_flags[k].flag, lock_mode_flags[k].mode);
            return 1;
        }
    }
    got = rlk_lc_opt("lock", argc, argv, i, NULL, "--redlock", &urls);
    if (got == 0)
        return 0;
    if (got < 0) {
        *rc = RLK_EXIT_USAGE;
        return 1;
    }
    o->redlock_urls = urls;
    *rc = lock_set_mode(o, "--redlock", RLK_LC_REDLOCK);
    return 1;
}

/* 1 when "--all" comes before "--" from argv[i] on. */
static int lock_all_ahead(int argc, char **argv, int i)
{
    for (; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (strcmp(argv[i], "--all") == 0)
            return 1;
    return 0;
}

static int lock_name_arg(int argc, char **argv, int *i, rlk_lc_lock_opts *o, const char *arg)
{
    if (o->nnames > 0 && o->mode != RLK_LC_ALL && !lock_all_ahead(argc, argv, *i))
        return rlk_cli_usage("lock", "unexpected argument '%s': put '--' before the command "
                             "(rlk lock NAME -- COMMAND...; several locks: --all)", arg);
    if (arg[0] == '\0')
        return rlk_cli_usage("lock", "the lock name must not be empty");
    o->names[o->nnames++] = arg;
    if (arg == argv[*i])
        (*i)++;
    return -1;
}

/* One argument before "--". -1 to go on, or an exit code. */
static int lock_arg(int argc, char **argv, int *i, rlk_lc_lock_opts *o)
{
    const char *arg = argv[*i];
    int got, rc = -1;

    if (rlk_cli_is_help(arg)) {
        fputs(rlk_cli_help_lock, stdout);
        return RLK_EXIT_OK;
    }
    if (lock_mode_arg(argc, argv, i, o, &rc))
        return rc;
    if ((got = rlk_lc_opt("lock", argc, argv, i, NULL, "--lock-delay", &arg)) != 0)
        return got < 0 || rlk_lc_parse_count("lock", "option --lock-delay", arg, 1, 1000000000000LL,
                                             &o->lock_delay_ms) < 0 ? RLK_EXIT_USAGE : -1;
    if ((got = rlk_lc_claim_opt("lock", argc, argv, i, &o->c)) != 0)
        return got < 0 ? RLK_EXIT_USAGE : -1;
    if ((got = rlk_lc_opt("lock", argc, argv, i, NULL, "--name", &arg)) != 0)
        return got < 0 ? RLK_EXIT_USAGE : lock_name_arg(argc, argv, i, o, arg);
    if (arg[0] == '-' && arg[1] != '\0') {
        got = rlk_lc_common_opt("lock", argc, argv, i, &o->c, 1);
        if (got < 0)
            return RLK_EXIT_USAGE;
        return got > 0 ? -1 : rlk_cli_unknown_option("lock", arg);
    }
    return lock_name_arg(argc, argv, i, o, arg);
}

static int lock_check(const rlk_lc_lock_opts *o)
{
    if (o->nnames == 0)
        return rlk_cli_usage("lock", o->mode == RLK_LC_ALL ? "--all needs at least one lock "
                             "NAME" : "missing the lock NAME");
    if (o->lock_delay_ms > 0 && o->mode != RLK_LC_REENTRANT && o->mode != RLK_LC_SPIN)
        return rlk_cli_usage("lock", "--lock-delay goes with the reentrant lock only (rlk lock "
                             "NAME, or --spin), not with %s", o->fair_nonreentrant
                             ? "--fair --non-reentrant" : o->mode_flag);
    if (o->c.nclaims > 0 && o->mode != RLK_LC_FENCED)
        return rlk_cli_usage("lock", "--claim goes with --fenced (a fence takes a fencing "
                             "token), not with %s", o->mode_flag ? o->mode_flag
                             : "the reentrant lock");
    if (o->mode == RLK_LC_REDLOCK && o->redlock_urls[0] == '\0')
        return rlk_cli_usage("lock", "--redlock needs the servers' URLs, separated by commas");
    if (o->mode == RLK_LC_REDLOCK && (o->c.url || rlk_cli_global_url || rlk_cli_g.url_file))
        return rlk_cli_usage("lock", "%s does not go with --redlock: list every server in "
                             "--redlock URL,URL,...", rlk_cli_g.url_file ? "--url-file" : "--url");
    return -1;
}

/* "rlk lock --write cfg" / "rlk lock --all a ..." for the hint of a missing command. */
static void lock_synopsis(const rlk_lc_lock_opts *o, char *buf, size_t len)
{
    snprintf(buf, len, "rlk lock %s%s%s%s%s%s%s", o->mode_flag ? o->mode_flag : "",
             o->mode_flag ? " " : "", o->fair_nonreentrant ? "--non-reentrant " : "",
             o->mode == RLK_LC_REDLOCK ? "URLS " : "", o->names[0],
             o->nnames > 1 ? " " : "", o->nnames > 1 ? "..." : "");
}

static int lock_parse(int argc, char **argv, rlk_lc_lock_opts *o)
{
    char synopsis[400];
    int i = 1, rc;

    while (i < argc && strcmp(argv[i], "--") != 0) {
        rc = lock_arg(argc, argv, &i, o);
        if (rc >= 0)
            return rc;
    }
    if ((rc = lock_check(o)) >= 0)
        return rc;
    lock_synopsis(o, synopsis, sizeof synopsis);
    return rlk_lc_take_command("lock", argc, argv, i, &o->c, synopsis);
}

/* ---------------------------------------------------------------- command */

/* --verbose: reports while waiting (the holders of NAME for the single-server kinds). */
static void lock_report_start(const rlk_lc_lock_opts *o)
{
    char what[RLK_LC_WHAT_MAX];
    int single = o->mode != RLK_LC_ALL && o->mode != RLK_LC_REDLOCK;

    /* Named as each mode's own messages name it (lock_multi.c, lock_redlock.c,
     * lock_single.c): "locks A, ...", "redlock NAME", "fair lock NAME". */
    if (o->mode == RLK_LC_ALL)
        snprintf(what, sizeof what, "locks %s%s", o->names[0], o->nnames > 1 ? ", ..." : "");
    else if (o->mode == RLK_LC_REDLOCK)
        snprintf(what, sizeof what, "redlock %s", o->names[0]);
    else
        snprintf(what, sizeof what, "%s %s", rlk_lc_single_label(o->mode), o->names[0]);
    rlk_wr_start(what, o->c.url, single ? o->names[0] : NULL);
}

static int lock_run(int argc, char **argv)
{
    rlk_lc_lock_opts o;
    int rc;

    memset(&o, 0, sizeof o);
    rlk_lc_opts_init(&o.c);
    o.names = calloc((size_t)argc, sizeof *o.names);
    if (!o.names)
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    rc = lock_parse(argc, argv, &o);
    if (rc < 0) {
        lock_report_start(&o);
        if (o.mode == RLK_LC_ALL)
            rc = rlk_lc_lock_all(&o);
        else if (o.mode == RLK_LC_REDLOCK)
            rc = rlk_lc_lock_redlock(&o);
        else
            rc = rlk_lc_lock_single(&o);
        rlk_wr_stop(0);
    }
    free(o.names);
    rlk_lc_claims_free(&o.c);
    return rc;
}

const rlk_cli_command rlk_cmd_lock = {
    "lock",
    "run a command while holding a lock (rlk lock [KIND] NAME -- CMD)",
    rlk_cli_help_lock,
    lock_run,
};
