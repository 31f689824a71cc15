/*
 * cmd_lock.c - rlk lock NAME [OPTIONS] -- COMMAND [ARGS...]
 *
 * Waits for the reentrant lock NAME, runs COMMAND while holding it (the
 * watchdog renews a lease-less hold), releases it when the command ends and
 * exits with the command's status. lock_child.c starts the command,
 * lock_watch.c runs the loop while it runs.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock_cli.h"

#define LOCK_OWNER_MAX 1100

static const char lock_usage[] =
    "usage: rlk lock NAME [-w SECONDS | -n] [-l LEASE_MS] [-E CODE] [-k SECONDS]\n"
    "                [--watchdog-lease MS] [--url URL] -- COMMAND [ARGS...]\n"
    "\n"
    "Waits for the reentrant lock NAME (Redisson's RLock layout), runs COMMAND while\n"
    "holding it, releases it when COMMAND ends, and exits with COMMAND's exit code\n"
    "(128+N when a signal N ended it). COMMAND sees RLK_LOCK_NAME and RLK_LOCK_OWNER\n"
    "(the holder id) in its environment.\n"
    "\n"
    "  -w, --wait SECONDS    wait at most this long (fractions allowed); default: forever\n"
    "  -n, --no-wait         one attempt, no waiting\n"
    "  -E, --conflict-exit-code CODE\n"
    "                        exit code when the lock stays held by another (default 1)\n"
    "  -l, --lease LEASE_MS  a fixed lease: the lock expires LEASE_MS after it was taken,\n"
    "                        and COMMAND is stopped if it still runs then; default: a\n"
    "                        watchdog lease, renewed every third of it while COMMAND runs\n"
    "  -k, --kill-after SECONDS\n"
    "                        when the lock is lost, COMMAND gets SIGTERM, then SIGKILL\n"
    "                        after this grace period (default 10)\n"
    "  --watchdog-lease MS   the watchdog lease (default 30000)\n"
    "  --url URL             the server (default: $RLK_URL, then " RLK_DEFAULT_URL ")\n"
    "\n"
    "SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to rlk are passed on to COMMAND. If the\n"
    "lock is lost while COMMAND runs (its key deleted or expired, renewals failing, a\n"
    "fixed lease running out), COMMAND is stopped as above and rlk exits 6.\n"
    "\n"
    "exit: COMMAND's code; CODE when not acquired; 2 usage; 3 connection; 4 error reply;\n"
    "      6 lock lost while COMMAND ran; 126/127 COMMAND could not be run\n"
    "\n"
    "example: rlk lock nightly-backup -w 30 -- ./backup.sh --full\n";

typedef struct lock_opts {
    const char *name;
    const char *url;
    long long wait_ms;          /* -1: forever; 0: one attempt */
    int wait_given, no_wait;
    long long lease_ms;         /* 0: watchdog lease */
    long long wd_lease_ms;      /* 0: the library's default */
    long long grace_ms;
    int conflict_code;
    char **cmd;                 /* NULL-terminated, after "--" */
} lock_opts;

/* ---------------------------------------------------------------- parsing */

/* Options with a value. 1 matched, 0 not, -1 usage error printed. */
static int lock_opt_value(int argc, char **argv, int *i, lock_opts *o)
{
    const char *v;
    int got;

    if ((got = rlk_lc_opt("lock", argc, argv, i, "-w", "--wait", &v)) > 0) {
        o->wait_given = 1;
        got = rlk_lc_parse_seconds("lock", "-w", v, &o->wait_ms) < 0 ? -1 : 1;
    }
    if (got == 0 && (got = rlk_lc_opt("lock", argc, argv, i, "-l", "--lease", &v)) > 0)
        got = rlk_lc_parse_ms("lock", "-l", v, &o->lease_ms) < 0 ? -1 : 1;
    if (got == 0 && (got = rlk_lc_opt("lock", argc, argv, i, "-E", "--conflict-exit-code", &v)) > 0)
        got = rlk_lc_parse_exit("lock", "-E", v, &o->conflict_code) < 0 ? -1 : 1;
    if (got == 0 && (got = rlk_lc_opt("lock", argc, argv, i, "-k", "--kill-after", &v)) > 0)
        got = rlk_lc_parse_seconds("lock", "-k", v, &o->grace_ms) < 0 ? -1 : 1;
    if (got == 0 && (got = rlk_lc_opt("lock", argc, argv, i, NULL, "--watchdog-lease", &v)) > 0)
        got = rlk_lc_parse_ms("lock", "--watchdog-lease", v, &o->wd_lease_ms) < 0 ? -1 : 1;
    if (got == 0)
        got = rlk_lc_opt("lock", argc, argv, i, NULL, "--url", &o->url);
    return got;
}

/* One argument before "--". -1 to go on, or an exit code. */
static int lock_arg(int argc, char **argv, int *i, lock_opts *o)
{
    const char *arg = argv[*i];
    int got;

    if (rlk_cli_is_help(arg)) {
        fputs(lock_usage, stdout);
        return RLK_EXIT_OK;
    }
    if (rlk_lc_flag(argv, i, "-n", "--no-wait")) {
        o->no_wait = 1;
        return -1;
    }
    if (arg[0] == '-' && arg[1] != '\0') {
        got = lock_opt_value(argc, argv, i, o);
        if (got < 0)
            return RLK_EXIT_USAGE;
        return got > 0 ? -1 : rlk_cli_usage("lock", "unknown option '%s'", arg);
    }
    if (o->name)
        return rlk_cli_usage("lock", "unexpected argument '%s': put '--' before the command "
                             "(rlk lock NAME -- COMMAND...)", arg);
    if (arg[0] == '\0')
        return rlk_cli_usage("lock", "the lock name must not be empty");
    o->name = arg;
    (*i)++;
    return -1;
}

static int lock_parse(int argc, char **argv, lock_opts *o)
{
    int i = 1;

    while (i < argc && strcmp(argv[i], "--") != 0) {
        int rc = lock_arg(argc, argv, &i, o);

        if (rc >= 0)
            return rc;
    }
    if (!o->name)
        return rlk_cli_usage("lock", "missing the lock NAME");
    if (i >= argc)
        return rlk_cli_usage("lock", "missing '--' and the command to run "
                             "(rlk lock %s -- COMMAND...)", o->name);
    if (i + 1 >= argc)
        return rlk_cli_usage("lock", "missing the command after '--'");
    if (o->no_wait && o->wait_given)
        return rlk_cli_usage("lock", "-n and -w exclude each other");
    if (o->no_wait)
        o->wait_ms = 0;
    o->cmd = argv + i + 1;
    return -1;
}

/* ---------------------------------------------------------------- acquiring */

/* The lost-lock callback, on the watchdog thread: one byte into the pipe. */
typedef struct lock_lost_sink {
    const char *name;
    int fd;
} lock_lost_sink;

static void lock_lost_cb(const char *name, const char *owner, int reason, void *userdata)
{
    const lock_lost_sink *sink = userdata;
    unsigned char byte = (unsigned char)reason;

    (void)owner;
    if (strcmp(name, sink->name) != 0)
        return;
    /* Non-blocking: when the pipe is full a report is already waiting, and
     * one is all the main loop needs. */
    if (write(sink->fd, &byte, 1) < 0)
        return;
}

static int lock_acquire(rlk_lock *l, rlk_client *c, const lock_opts *o)
{
    char waited[32], what[64 + 256];
    int rc = rlk_lock_try_lock(l, o->wait_ms, o->lease_ms);

    if (rc == RLK_OK)
        return -1;
    if (rc != RLK_ERR_BUSY) {
        snprintf(what, sizeof what, "lock %s", o->name);
        return rlk_lc_fail(c, rc, what);
    }
    if (o->wait_ms == 0 && !o->wait_given)
        return rlk_cli_fail(o->conflict_code, "lock %s: held by another", o->name);
    rlk_lc_format_seconds(o->wait_ms, waited, sizeof waited);
    return rlk_cli_fail(o->conflict_code, "lock %s: still held after %s s", o->name, waited);
}

/* ---------------------------------------------------------------- running */

/* Everything the running phase owns. */
typedef struct lock_job {
    const lock_opts *o;
    rlk_lock *l;
    rlk_client *c;
    const rlk_lc_fds *inherited;
    int lost_fd;                /* read end */
    long long acquired_ns;
    char owner[LOCK_OWNER_MAX];
} lock_job;

static int lock_status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return RLK_EXIT_REPLY;
}

/* Starts the command with the signals blocked (saved in *old); -1 on success
 * (*pid set), else an exit code. */
static int lock_start(lock_job *j, const sigset_t *old, pid_t *pid)
{
    char **env = rlk_lc_env(j->o->name, j->owner);
    int err = 0, exec_failed = 0, rc;

    if (!env)
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    rlk_lc_fds_cloexec_new(j->inherited);
    rc = rlk_lc_spawn(j->o->cmd, env, old, pid, &err, &exec_failed);
    rlk_lc_env_free(env);
    if (rc == 0)
        return -1;
    if (!exec_failed)
        return rlk_cli_fail(RLK_EXIT_REPLY, "cannot start '%s': %s", j->o->cmd[0], strerror(err));
    return rlk_cli_fail(err == ENOENT ? 127 : 126, "cannot run '%s': %s", j->o->cmd[0],
                        strerror(err));
}

static int lock_watch(lock_job *j, int sigfd, pid_t pid, rlk_lc_watch *w)
{
    memset(w, 0, sizeof *w);
    w->pid = pid;
    w->sigfd = sigfd;
    w->lost_fd = j->lost_fd;
    w->lease_ms = j->o->lease_ms;
    w->lease_deadline_ns = j->o->lease_ms > 0 ? j->acquired_ns + j->o->lease_ms * 1000000LL : -1;
    w->grace_ms = j->o->grace_ms;
    return rlk_lc_watch_run(w);
}

/* Runs the command with the signals blocked; its exit code, or -2 plus *w
 * filled when it ran. */
static int lock_run_blocked(lock_job *j, const sigset_t *set, const sigset_t *old,
                            rlk_lc_watch *w)
{
    int sigfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
    pid_t pid;
    int rc;

    if (sigfd < 0)
        return rlk_cli_fail(RLK_EXIT_REPLY, "signalfd: %s", strerror(errno));
    rc = lock_start(j, old, &pid);
    if (rc < 0)
        rc = lock_watch(j, sigfd, pid, w) == 0 ? -2 : RLK_EXIT_REPLY;
    close(sigfd);
    return rc;
}

/* The release after the command; the final exit code. */
static int lock_finish(lock_job *j, const rlk_lc_watch *w)
{
    char grace[32];
    int rc = rlk_lock_unlock(j->l);

    if (w->lost) {
        rlk_lc_format_seconds(j->o->grace_ms, grace, sizeof grace);
        return rlk_cli_fail(RLK_EXIT_LOST, "lock %s lost (%s); command stopped%s%s%s", j->o->name,
                            w->why, w->killed ? " with SIGKILL after " : "",
                            w->killed ? grace : "", w->killed ? " s" : "");
    }
    if (rc == RLK_ERR_NOT_OWNER)
        return rlk_cli_fail(RLK_EXIT_LOST, "lock %s lost (no longer held when the command "
                            "ended with exit %d)", j->o->name, lock_status_code(w->status));
    if (rc != RLK_OK)
        rlk_cli_fail(RLK_EXIT_REPLY, "lock %s: release failed (%s); it expires with its lease",
                     j->o->name, rlk_errstr(j->c));
    return lock_status_code(w->status);
}

/* Holding the lock: block the signals, run, release. */
static int lock_hold(lock_job *j)
{
    sigset_t set, old;
    rlk_lc_watch w;
    int rc;

    rlk_lc_signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    rc = lock_run_blocked(j, &set, &old, &w);
    if (rc == -2)
        return lock_finish(j, &w);  /* signals stay blocked: rlk exits right after */
    if (rlk_lock_unlock(j->l) != RLK_OK)
        rlk_cli_fail(RLK_EXIT_REPLY, "lock %s: release failed (%s); it expires with its lease",
                     j->o->name, rlk_errstr(j->c));
    return rc;
}

static int lock_with_client(const lock_opts *o, rlk_client *c, const rlk_lc_fds *inherited,
                            int lost_fd)
{
    lock_job j = {o, NULL, c, inherited, lost_fd, 0, ""};
    int rc;

    j.l = rlk_lock_new(c, o->name);
    if (!j.l)
        return rlk_lc_fail(c, rlk_err(c), "lock");
    if (rlk_lock_owner(j.l, j.owner, sizeof j.owner) != RLK_OK)
        rc = rlk_lc_fail(c, rlk_err(c), "lock");
    else if ((rc = lock_acquire(j.l, c, o)) < 0) {
        j.acquired_ns = rlk_lc_now_ns();
        rc = lock_hold(&j);
    }
    rlk_lock_free(j.l);
    return rc;
}

static int lock_run_cmd(const lock_opts *o)
{
    rlk_lc_fds inherited;
    lock_lost_sink sink = {o->name, -1};
    int p[2], rc;
    rlk_client *c;

    rlk_lc_fds_snapshot(&inherited);
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        rlk_lc_fds_free(&inherited);
        return rlk_cli_fail(RLK_EXIT_REPLY, "pipe: %s", strerror(errno));
    }
    sink.fd = p[1];
    c = rlk_lc_connect(o->url, o->wd_lease_ms, &rc);
    if (c) {
        rlk_set_lost_callback(c, lock_lost_cb, &sink);
        rc = lock_with_client(o, c, &inherited, p[0]);
        rlk_free(c);    /* stops the watchdog: no callback after this */
    }
    close(p[0]);
    close(p[1]);
    rlk_lc_fds_free(&inherited);
    return rc;
}

static int lock_run(int argc, char **argv)
{
    lock_opts o;
    int rc;

    memset(&o, 0, sizeof o);
    o.wait_ms = -1;
    o.grace_ms = 10000;
    o.conflict_code = RLK_EXIT_NOT_ACQUIRED;
    rc = lock_parse(argc, argv, &o);
    if (rc >= 0)
        return rc;
    fflush(NULL);   /* nothing buffered may be written twice by the child */
    return lock_run_cmd(&o);
}

const rlk_cli_command rlk_cmd_lock = {
    "lock",
    "run a command while holding a lock (rlk lock NAME -- COMMAND...)",
    lock_usage,
    lock_run,
};
