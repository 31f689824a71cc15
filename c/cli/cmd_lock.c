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

#include "lock_cli.h"
#include "wait_report.h"

static const char lock_usage[] =
    "usage: rlk lock NAME [OPTIONS] -- COMMAND [ARGS...]\n"
    "       rlk lock --read | --write | --fair | --fenced NAME [OPTIONS] -- COMMAND...\n"
    "       rlk lock --non-reentrant | --spin NAME [OPTIONS] -- COMMAND...\n"
    "       rlk lock --fair --non-reentrant NAME [OPTIONS] -- COMMAND...\n"
    "       rlk lock --all MEMBER... [OPTIONS] -- COMMAND...\n"
    "       rlk lock --redlock URL,URL,URL[,...] NAME [OPTIONS] -- COMMAND...\n"
    "\n"
    "Waits for the lock, runs COMMAND while holding it, releases it when COMMAND ends,\n"
    "and exits with COMMAND's exit code (128+N when a signal N ended it).\n"
    "\n"
    "Kinds of lock (Redisson's layouts; one at a time):\n"
    "  (none)                the reentrant lock NAME (RLock)\n"
    "  --read, --write       a read or the write lock of the read-write lock NAME\n"
    "                        (RReadWriteLock): many readers or one writer\n"
    "  --fair                the fair lock NAME (RFairLock): first come, first served\n"
    "  --fenced              the fenced lock NAME (RFencedLock): COMMAND gets the fencing\n"
    "                        token in RLK_FENCE_TOKEN\n"
    "  --non-reentrant       the reentrant lock's data, but its holder asking again is\n"
    "                        refused (RedissonNonReentrantLock): exit 2 at once; with\n"
    "                        --fair: the fair lock, its holder refused the same way\n"
    "                        (RedissonNonReentrantFairLock)\n"
    "  --spin                the reentrant lock NAME, waited for by polling with a\n"
    "                        back-off of 1 to 128 ms, no SUBSCRIBE (RedissonSpinLock):\n"
    "                        for servers or proxies without pub/sub\n"
    "  --all MEMBER...       every MEMBER, all or none (RedissonMultiLock); a MEMBER is\n"
    "                        NAME (on --url) or URL#NAME (URL starting redis:// or unix://)\n"
    "  --redlock URLS        NAME on every server of the comma-separated URLS, held with a\n"
    "                        majority (RedLock; extended every third of the lease)\n"
    "\n"
    "Options:\n"
    "  -w, --wait SECONDS    wait at most this long (fractions allowed); default: forever\n"
    "  -n, --no-wait         one attempt, no waiting\n"
    "  --hold                no COMMAND: hold the lock until Ctrl-C (or SIGTERM, SIGHUP),\n"
    "                        then release it and exit 0 (as etcdctl lock)\n"
    "  -E, --conflict-exit-code CODE\n"
    "                        exit code when the lock stays held by another (default 1)\n"
    "  -l, --lease LEASE_MS  a fixed lease (at least 250): the lock expires LEASE_MS after\n"
    "                        it was taken; COMMAND gets SIGTERM at LEASE_MS - grace -\n"
    "                        margin and SIGKILL margin (100 ms + 1 %) before it ends;\n"
    "                        default: a renewed lease (watchdog; --redlock: extend),\n"
    "                        renewed every third of it while COMMAND runs\n"
    "  -k, --kill-after SECONDS\n"
    "                        when the lock is lost, COMMAND gets SIGTERM, then SIGKILL\n"
    "                        after this grace period (default 10; at most half a fixed\n"
    "                        lease, a third of a renewed one, minus the margin: a longer\n"
    "                        one is shortened, with a warning)\n"
    "  --watchdog-lease MS   the renewed lease (default 30000)\n"
    "  --claim FENCE         --fenced only (repeatable): once the lock is taken, raise the\n"
    "                        fence key FENCE to this acquisition's token before COMMAND\n"
    "                        starts, so a stale holder's writes to it are refused from\n"
    "                        then on, not only after COMMAND's first write; a fence that\n"
    "                        holds a newer token: the lock is given back, exit 11\n"
    "  --lock-delay MS       the reentrant lock (and --spin) only: when a holder LOSES the\n"
    "                        lock (its lease runs out; not released), nobody using\n"
    "                        --lock-delay takes it for MS more (Chubby's and Consul's\n"
    "                        lock-delay); a release ends it at once. Give every rlk lock\n"
    "                        on NAME the same MS: others ignore it (docs/locks/reentrant.md)\n"
    "  --name NAME           the lock's name (for a name that starts with '-')\n"
    "  --url URL             the server (default: $RLK_URL, then " RLK_DEFAULT_URL ")\n"
    "  --stats               at exit, one line on stderr: how long rlk waited (from its\n"
    "                        start), held and renewed (docs/observability.md)\n"
    "  --json                that line as one JSON object (implies --stats)\n"
    "  --url-file FILE, --password-file FILE, --keep-env, --verbose\n"
    "                        as in rlk --help: credentials from files, passing them on to\n"
    "                        COMMAND, and reports on stderr while waiting\n"
    "\n"
    "COMMAND sees RLK_LOCK_NAME, RLK_LOCK_KIND (lock, read, write, fair, fenced,\n"
    "nonreentrant, multi, redlock) and RLK_LOCK_OWNER (the holder id; --redlock: the token). An rlk lock run\n"
    "by COMMAND on the same NAME and kind re-enters the lock (a reader asking for the\n"
    "write lock, or a --non-reentrant holder for its lock again, is refused at once:\n"
    "exit 2; --spin shares kind lock with the reentrant lock); a --fenced re-entry\n"
    "keeps the enclosing RLK_FENCE_TOKEN (no newer token that would fence its parent).\n"
    "\n"
    "COMMAND runs in a process group of its own and dies with rlk (SIGKILL to the group\n"
    "if rlk is killed). SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to rlk are passed on to\n"
    "COMMAND's group. If the\n"
    "lock is lost while COMMAND runs (its key deleted or expired, renewals failing, a\n"
    "fixed lease or RedLock's validity running out), COMMAND is stopped as above and rlk\n"
    "exits 6.\n"
    "\n"
    "exit: COMMAND's code; CODE when not acquired; 2 usage; 3 connection; 4 error reply;\n"
    "      6 lock lost while COMMAND ran; 11 a --claim fence holds a newer token;\n"
    "      126/127 COMMAND could not be run\n"
    "\n"
    "examples: rlk lock nightly-backup -w 30 -- ./backup.sh --full\n"
    "          rlk lock --read config -- ./render.sh\n"
    "          rlk lock --all order:42 redis://10.0.0.2:6379#stock:7 -- ./ship.sh\n"
    "          rlk lock --redlock redis://a:6379,redis://b:6379,redis://c:6379 job -- ./job\n";

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
        fputs(lock_usage, stdout);
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
    lock_usage,
    lock_run,
};
