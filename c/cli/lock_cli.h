/*
 * lock_cli.h - what `rlk lock`, `rlk inspect` and `rlk unlock` share:
 * their command entries, the "lock lost" exit code, connecting with a
 * watchdog lease, option and number parsing, JSON strings, and the parts
 * of `rlk lock` that run the command (lock_child.c, lock_watch.c).
 */
#ifndef RLK_LOCK_CLI_H
#define RLK_LOCK_CLI_H

#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"

/* The lock was lost while the command ran (also in `rlk --help`, docs/cli.md). */
#define RLK_EXIT_LOST 6

extern const rlk_cli_command rlk_cmd_lock;
extern const rlk_cli_command rlk_cmd_inspect;
extern const rlk_cli_command rlk_cmd_unlock;

/* ---------------------------------------------------------------- lock_util.c */

/* rlk_cli_connect with a watchdog lease (<= 0: the library's default) and
 * scripts loaded on first use. NULL after printing the error (*exit_code set). */
rlk_client *rlk_lc_connect(const char *url, long long watchdog_lease_ms, int *exit_code);

/* Prints "rlk: <what>: <errstr of c>" and returns the exit code for rc. */
int rlk_lc_fail(rlk_client *c, int rc, const char *what);

/* Matches argv[*i] against `-s VALUE`, `-sVALUE`, `--long VALUE` and
 * `--long=VALUE` (shortopt or longopt may be NULL). 1: matched (*value set,
 * *i advanced); 0: something else; -1: the value is missing (usage error
 * printed). */
int rlk_lc_opt(const char *cmd, int argc, char **argv, int *i, const char *shortopt,
               const char *longopt, const char **value);

/* 1 when argv[*i] is the flag shortopt or longopt (either may be NULL); *i advanced. */
int rlk_lc_flag(char **argv, int *i, const char *shortopt, const char *longopt);

/* Parsers: 0 on success; -1 after a usage error naming opt. */
/* SECONDS: decimal, fraction allowed ("2", "0.25", ".5"), at most 10^9; rounded up to ms. */
int rlk_lc_parse_seconds(const char *cmd, const char *opt, const char *text, long long *ms);
/* A positive integer number of milliseconds, at most 10^12. */
int rlk_lc_parse_ms(const char *cmd, const char *opt, const char *text, long long *ms);
/* An exit code 0..255. */
int rlk_lc_parse_exit(const char *cmd, const char *opt, const char *text, int *code);

/* "0.25", "2", "1.5" from milliseconds, for messages. */
void rlk_lc_format_seconds(long long ms, char *buf, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. */
long long rlk_lc_now_ns(void);

/* A JSON string literal of s (len bytes), escaped. */
void rlk_lc_json_string(FILE *out, const char *s, size_t len);

/* ---------------------------------------------------------------- lock_child.c */

/* The descriptors open when rlk started (inherited on purpose: they pass to
 * the command). Others the library opened (Redis sockets) must not. */
typedef struct rlk_lc_fds {
    int *fds;
    size_t count;
    int known;          /* 0: /proc/self/fd could not be read; nothing is marked */
} rlk_lc_fds;

void rlk_lc_fds_snapshot(rlk_lc_fds *s);
void rlk_lc_fds_free(rlk_lc_fds *s);
/* Sets FD_CLOEXEC on every descriptor not in the snapshot. */
void rlk_lc_fds_cloexec_new(const rlk_lc_fds *s);

/* environ without RLK_LOCK_NAME / RLK_LOCK_OWNER, plus both set to name and
 * owner. NULL when out of memory. Free with rlk_lc_env_free. */
char **rlk_lc_env(const char *name, const char *owner);
void rlk_lc_env_free(char **env);

/* fork + execvpe(argv[0], argv, env) with the signal mask child_mask in the
 * child. 0: *pid runs the command. -1: it could not be started; *err is the
 * errno (of exec, or of pipe/fork) and *exec_failed tells which; a child that
 * failed to exec has been reaped. */
int rlk_lc_spawn(char *const argv[], char *const env[], const sigset_t *child_mask, pid_t *pid,
                 int *err, int *exec_failed);

/* ---------------------------------------------------------------- lock_watch.c */

/* Runs while the command runs: forwards signals, reaps it, stops it when
 * the lock is lost (lost_fd readable: one byte per report, the rlk_lost_reason)
 * or when a fixed lease runs out. */
typedef struct rlk_lc_watch {
    /* in */
    pid_t pid;
    int sigfd;                  /* signalfd of RLK_LC_SIGNALS */
    int lost_fd;                /* read end of the lost-lock pipe */
    long long lease_deadline_ns; /* -1: none (watchdog lease) */
    long long lease_ms;         /* for the message */
    long long grace_ms;         /* SIGTERM .. SIGKILL */
    /* out */
    int status;                 /* the command's wait status */
    int lost;                   /* 1: the lock was lost and the command stopped */
    int killed;                 /* 1: SIGKILL was sent */
    char why[160];              /* why the lock was lost */
    /* private */
    int reaped;
    long long kill_deadline_ns; /* -1: no SIGKILL scheduled */
} rlk_lc_watch;

/* The signals rlk blocks while the command runs (read through signalfd):
 * SIGCHLD and the forwarded SIGINT, SIGTERM, SIGHUP, SIGQUIT. */
void rlk_lc_signal_set(sigset_t *set);

/* 0 once the command has ended (w->status); -1 on a system error (message
 * printed; the command has been killed and reaped). */
int rlk_lc_watch_run(rlk_lc_watch *w);

/* Text for a lost-lock reason byte. */
const char *rlk_lc_lost_text(int reason);

#endif /* RLK_LOCK_CLI_H */
