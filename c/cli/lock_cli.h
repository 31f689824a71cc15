/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_cli.h - what the lock commands share (`rlk lock` in all its modes,
 * `rlk semaphore`, `rlk latch`, `rlk inspect`, `rlk unlock`): connecting
 * with a watchdog lease, option and number parsing, JSON strings, and the
 * mode-independent way of running a command while something is held
 * ("hold": lock_hold.c, lock_child.c, lock_watch.c).
 *
 * A mode (lock_single.c, lock_multi.c, lock_redlock.c, cmd_semaphore.c)
 * opens a session (the descriptors rlk inherited, the lost-report pipe),
 * connects, acquires, describes what it holds in an rlk_lc_hold (a name
 * for messages, the command's environment, a deadline, an optional renew
 * step, the release) and calls rlk_lc_hold_run, which runs the command and
 * returns the exit code. Kill-on-loss, signal forwarding and exit codes are
 * therefore the same in every mode.
 */
#ifndef RLK_LOCK_CLI_H
#define RLK_LOCK_CLI_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/types.h>

#include "cli.h"

/* ---------------------------------------------------------------- lock_util.c */

/* rlk_cli_connect with a watchdog lease (<= 0: the library's default) and
 * scripts loaded on first use. url NULL: the global --url, then $RLK_URL.
 * NULL after printing the error (*exit_code set). */
rlk_client *rlk_lc_connect(const char *url, long long watchdog_lease_ms, int *exit_code);
/* The same with the library's lost margin (rlk_options.lost_margin_ms): a
 * hold whose renewals fail is reported lost that long before its lease,
 * counted from the last successful renewal's send, can run out. */
rlk_client *rlk_lc_connect_margin(const char *url, long long watchdog_lease_ms,
                                  long long lost_margin_ms, int *exit_code);

/* The same for a URL from elsewhere than --url (from: "--redlock", "an --all member"; NULL:
 * --url), said by --verbose. */
rlk_client *rlk_lc_connect_from(const char *url, const char *from, long long watchdog_lease_ms,
                                long long lost_margin_ms, int *exit_code);

/* An RLK_ERR_NOREPLICAS message of the library (e) as an operator reads it: what was done
 * instead of the C call's name, an --all member by its name instead of its index. */
void rlk_lc_replicas_text(const char *e, char *buf, size_t len);

/* A semaphore's or latch's key (kind: "semaphore", "latch") holds an integer count or is
 * absent: -1; else the other actions' refusal ("<what>: RLK_WRONGTYPE <kind> key holds a
 * string that is not an integer count"), exit 4. For the read-only actions whose script
 * reads no value (ttl). A WRONGTYPE of another type is left to the script. */
int rlk_lc_count_key_check(rlk_client *c, const char *key, const char *what, const char *kind);

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
/* A whole number in min..max (at most 10^12). */
int rlk_lc_parse_count(const char *cmd, const char *opt, const char *text, long long min,
                       long long max, long long *out);

/* "0.25", "2", "1.5" from milliseconds, for messages. */
void rlk_lc_format_seconds(long long ms, char *buf, size_t len);

/* CLOCK_MONOTONIC in nanoseconds. */
long long rlk_lc_now_ns(void);

/* A JSON string literal of s (len bytes), escaped. */
void rlk_lc_json_string(FILE *out, const char *s, size_t len);

/* ---------------------------------------------------------------- common options */

/* The options every command that runs COMMAND shares (`rlk lock`, `rlk semaphore`). */
typedef struct rlk_lc_opts {
    const char *url;
    long long wait_ms;          /* -1: forever; 0: one attempt */
    int wait_given, no_wait;
    long long lease_ms;         /* 0: a renewed lease (watchdog, keeper, extend) */
    long long wd_lease_ms;      /* the renewed lease; 0: the default (30000) */
    long long grace_ms;         /* SIGTERM .. SIGKILL when lost; fitted to the lease */
    int grace_given;            /* -k was given */
    long long margin_ms;        /* SIGKILL this long before a lease can end (rlk_lc_fit_grace) */
    int conflict_code;          /* exit code when not acquired */
    char **cmd;                 /* NULL-terminated, after "--" */
    int stats;                  /* --stats: one line on stderr at exit (lock_stats.c) */
    int stats_json;             /* --json: that line as JSON (implies --stats) */
    int hold;                   /* --hold: no COMMAND; held until SIGINT, SIGTERM or SIGHUP */
    long long start_ns;         /* when rlk started waiting (rlk_lc_opts_init) */
    const char **claims;        /* --claim FENCE (rlk lock --fenced, rlk elect): argv's, in order */
    int nclaims;
} rlk_lc_opts;

#define RLK_LC_DEFAULT_LEASE_MS 30000LL

void rlk_lc_opts_init(rlk_lc_opts *o);

/* -w, -l, -E, -k, --watchdog-lease, --url and --no-wait (with_short_n: -n
 * too). 1 matched, 0 not, -1 usage error printed. */
int rlk_lc_common_opt(const char *cmd, int argc, char **argv, int *i, rlk_lc_opts *o,
                      int with_short_n);

/* --claim FENCE (repeatable) at argv[*i]: the fence added to o->claims. 1
 * matched, 0 not, -1 usage error printed. */
int rlk_lc_claim_opt(const char *cmd, int argc, char **argv, int *i, rlk_lc_opts *o);
void rlk_lc_claims_free(rlk_lc_opts *o);

/* Claims o->claims for token once held (rlk_fence_claim): -1 when every fence
 * now refuses a lower token (or there are none), else the exit code after a
 * message: RLK_EXIT_FENCED when a fence holds a newer token (the holder is
 * stale: the caller gives the hold back and runs nothing). */
int rlk_lc_claim(rlk_client *c, const rlk_lc_opts *o, long long token, const char *what);

/* After the options: "--" and COMMAND at argv[*i] (argc). -1 to go on, or an
 * exit code after a usage error. synopsis: "rlk lock NAME" for the hint. */
int rlk_lc_take_command(const char *cmd, int argc, char **argv, int i, rlk_lc_opts *o,
                        const char *synopsis);

/* The renewed lease in ms (wd_lease_ms, or the default). */
long long rlk_lc_renewed_lease(const rlk_lc_opts *o);

/* Fits the grace into the lease (the fixed one, else the renewed one): sets
 * margin_ms (100 ms + 1 % of the lease) and shortens grace_ms to at most
 * lease/2 - margin for a fixed lease, lease/3 - margin for a renewed one (a
 * warning when -k was given). -1 to go on, or exit 2
 * after a message when the lease is shorter than RLK_LC_MIN_LEASE_MS. */
#define RLK_LC_MIN_LEASE_MS 250LL
int rlk_lc_fit_grace(const char *cmd, rlk_lc_opts *o);

/* "lock X: still held after 2 s" / "held by another" (exit conflict_code),
 * with " (detail)" when detail is not NULL. */
int rlk_lc_not_acquired(const rlk_lc_opts *o, const char *what, const char *detail);
/* The same for a free lock kept out by its lock-delay, left_ms of it to go. */
int rlk_lc_not_acquired_delay(const rlk_lc_opts *o, const char *what, long long left_ms);

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

/* environ without any of the variables rlk sets for a command (RLK_LOCK_NAME,
 * RLK_LOCK_OWNER, RLK_LOCK_KIND, RLK_FENCE_TOKEN) and without those `ours`
 * and `more` set, with the "KEY=VALUE" entries of `ours` and then `more`
 * (NULL-terminated, borrowed; more may be NULL) first. NULL when out of
 * memory. Free with rlk_lc_env_free (frees the array only). */
char **rlk_lc_env(char *const *ours, char *const *more);
void rlk_lc_env_free(char **env);

/* fork + execvpe(argv[0], argv, env) with the signal mask child_mask in the
 * child, no descriptor but keep's (and 0..2) left open across exec (marked
 * in the child: also sockets the library's threads opened meanwhile), in a process group of its own (pgid = *pid), with PR_SET_PDEATHSIG
 * SIGKILL, holding the terminal when rlk held it (rlk_lc_tty_restore takes
 * it back). 0: *pid runs the command. -1: it could not be started; *err is the
 * errno (of exec, or of pipe/fork) and *exec_failed tells which; a child that
 * failed to exec has been reaped. */
int rlk_lc_spawn(char *const argv[], char *const env[], const sigset_t *child_mask,
                 const rlk_lc_fds *keep, pid_t *pid, int *err, int *exec_failed);
void rlk_lc_tty_restore(void);

/* The guard: a process that kills the command's whole group (SIGKILL) when
 * rlk dies without stopping it first. */
typedef struct rlk_lc_guard_t {
    pid_t pid;
    int fd;             /* rlk's end of the pipe; -1: no guard */
} rlk_lc_guard_t;
/* 0, or -1 (errno; no guard: PR_SET_PDEATHSIG still kills the direct child). */
int rlk_lc_guard_start(pid_t group, rlk_lc_guard_t *g);
/* Tells the guard the command has ended and reaps it. */
void rlk_lc_guard_stop(rlk_lc_guard_t *g);

/* ---------------------------------------------------------------- lock_hold.c */

#define RLK_LC_ENV_MAX 7
#define RLK_LC_WHAT_MAX 320
#define RLK_LC_WHY_MAX 600

/* What a mode holds while the command runs. */
typedef struct rlk_lc_hold rlk_lc_hold;
struct rlk_lc_hold {
    char what[RLK_LC_WHAT_MAX];     /* "lock deploy", "write lock cfg": messages */
    char *env[RLK_LC_ENV_MAX + 1];  /* "KEY=VALUE" (owned), NULL-terminated */
    long long deadline_ns;          /* CLOCK_MONOTONIC; -1: none. Passing it = lost */
    char deadline_why[RLK_LC_WHY_MAX]; /* "its lease of 600 ms ran out" */
    /* Optional renewal from the main loop (RedLock's extend): every
     * renew_period_ns. Returns 0 (renewed; may move deadline_ns), 1 (failed,
     * retry soon: the deadline still holds) or -1 (lost; why filled). */
    long long renew_period_ns;
    int (*renew)(rlk_lc_hold *h, char *why, size_t len);
    /* The release after the command: an rlk code; RLK_ERR_NOT_OWNER means
     * it was no longer held. errstr describes a failure. */
    int (*release)(rlk_lc_hold *h);
    const char *(*errstr)(rlk_lc_hold *h);
    /* Optional: adds to why (the loss's reason) which part was lost. */
    void (*describe_loss)(rlk_lc_hold *h, char *why, size_t len);
    /* Optional: the library's lease of the hold (rlk_lock_lease and the other kinds'):
     * RLK_OK, or RLK_ERR_LOST with the lease it was lost with; the one clock both the fixed
     * lease's deadline (rlk_lc_hold_lease) and the bound after a loss count by. */
    int (*lease)(rlk_lc_hold *h, long long *start_ns, long long *deadline_ns);
    long long delay_ms;         /* the hold's lock-delay (--lock-delay); 0: none */
    void *impl;
    /* --stats (lock_stats.c): the client whose metrics count the watchdog's
     * renewals (NULL: none), and the renewals made from the main loop. */
    rlk_client *client;
    unsigned long long renewals, renewal_failures;
    /* Optional: the caller blocked the forwarded signals (rlk_lc_signal_set's, bar SIGCHLD)
     * before the wait and kept them blocked once the lock was taken, so that a signal coming
     * between the acquisition and the command's start stays pending and is forwarded to the
     * command (which is then stopped and the lock released) instead of killing rlk with the
     * lock held until its lease runs out. The mask the command starts with. */
    const sigset_t *child_mask;
    /* 1: the command gets no RLK_URL from this rlk (RedLock: no one server); the TLS
     * settings still go (rlk_cli_pass_on_env). */
    int no_server_url;
    /* Optional: whether the hold is still on the server, for holds nothing renews (a fixed
     * lease; lock_check.c): 1 held, 0 gone (deleted, force-unlocked, expired), -1 cannot tell
     * (the deadline still bounds the hold). Called from the checker's thread, on h->client, at
     * every message on check_channel (malloc'd, freed by rlk_lc_hold_free; NULL: none) and
     * every check_period_ns (0: only at messages). */
    int (*check)(rlk_lc_hold *h);
    char *check_channel;
    long long check_period_ns;
    /* Optional: upkeep from the main loop every upkeep_period_ns while the command runs and the
     * hold is not lost (the fair lock's kind marker's life, kind_mark.h); its outcome changes
     * nothing else. */
    void (*upkeep)(rlk_lc_hold *h);
    long long upkeep_period_ns;
};

/* Clears h (no deadline, no renewal) and sets `what`. */
void rlk_lc_hold_init(rlk_lc_hold *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds KEY=VALUE to the command's environment. 0, or -1 when out of memory / full. */
int rlk_lc_hold_setenv(rlk_lc_hold *h, const char *key, const char *value);
void rlk_lc_hold_free(rlk_lc_hold *h);
/* A fixed lease: lost when lease_ms have passed since acquired_ns. */
void rlk_lc_hold_fixed_lease(rlk_lc_hold *h, long long acquired_ns, long long lease_ms);
/* A fixed lease of lease_ms by the library's clock: the deadline is h->lease's (from the send
 * of the acquire that took the hold, not from when its reply came back), or, when h->lease
 * cannot tell, lease_ms from acquired_ns as rlk_lc_hold_fixed_lease. */
void rlk_lc_hold_lease(rlk_lc_hold *h, long long acquired_ns, long long lease_ms);
/* When nothing keeps another holder out any more after a loss of h reported for reason (an
 * rlk_lost_reason; 0: its fixed deadline passed): the lease's end, plus the lock-delay when h
 * has one (a holder that lost it without releasing it: the next one is kept out that long),
 * both from h->lease's start; a lock found gone (RLK_LOST_GONE) with a lock-delay: its start
 * + the delay (a force unlock sets the delay from then). -1: nothing known keeps the next
 * holder out (gone without a lock-delay), or h has no lease call. CLOCK_MONOTONIC ns. */
long long rlk_lc_hold_protected_until(rlk_lc_hold *h, int reason);

/* --stats: "rlk: stats: <what>: waited W s, held H s, renewals R (F failed)" on
 * stderr, or one JSON object with --json. acquired_ns/released_ns: 0 when
 * not acquired; exit: the exit code rlk returns. */
void rlk_lc_stats_print(const rlk_lc_opts *o, const char *what, const rlk_lc_hold *h,
                        long long acquired_ns, long long released_ns, int exit_code);

/* The state shared by a run: opened before connecting (so that the library's
 * sockets are not passed to the command). */
typedef struct rlk_lc_session {
    rlk_lc_fds inherited;
    int lost_rd;                /* the main loop reads lost reports here */
    int lost_wr;                /* callbacks write one byte (an rlk_lost_reason) */
} rlk_lc_session;

/* -1 on success, else an exit code (message printed). */
int rlk_lc_session_open(rlk_lc_session *s);
void rlk_lc_session_close(rlk_lc_session *s);

/* A lost-hold callback (rlk_lost_fn): one byte into sink->fd, when the
 * name matches sink->name (NULL: any name). Safe on any thread. */
typedef struct rlk_lc_sink {
    const char *name;
    int fd;
} rlk_lc_sink;
void rlk_lc_lost_cb(const char *name, const char *owner, int reason, void *userdata);

/* Runs o->cmd while h is held: blocks the forwarded signals, starts the
 * command with h's environment, watches it (signals, lost reports,
 * deadline, renewals), releases h when it ends and returns the exit code:
 * the command's (128+N for signal N), RLK_EXIT_LOST, 126/127 when it could
 * not be run. */
int rlk_lc_hold_run(rlk_lc_hold *h, const rlk_lc_session *s, const rlk_lc_opts *o);

/* The exit code of a wait status (128+N for signal N). */
int rlk_lc_status_code(int status);

/* Signals while waiting, the same in every mode that runs a command (lock_hold.c): from
 * rlk_lc_sigwatch_start until the command starts, SIGINT, SIGTERM, SIGHUP and SIGQUIT are
 * blocked in the calling thread and taken by a small thread (sigtimedwait) that ends the
 * clients' waits with rlk_interrupt_waits (a fair waiter leaves its queue, a RedLock stops
 * retrying). rlk_lc_sigwatch_stop ends that thread and returns the signal it took (0: none);
 * the signals stay blocked, so one coming later stays pending: rlk_lc_sigwatch_restore lets
 * it act as it would have (not acquired, or given back), or, once the hold runs, it is
 * forwarded to the command (h->child_mask = &w->old), which is stopped and the hold
 * released, instead of killing rlk by its default action while something is held. */
typedef struct rlk_lc_sigwatch {
    rlk_client *const *clients;
    int nclients;
    sigset_t set;
    sigset_t old;               /* the mask before: the command's, and the one restored */
    pthread_t thread;
    int started;
    atomic_int done;
    atomic_int sig;             /* the signal that interrupted the wait, or 0 */
} rlk_lc_sigwatch;

/* clients (borrowed until stop): those whose waits a signal ends. */
void rlk_lc_sigwatch_start(rlk_lc_sigwatch *w, rlk_client *const *clients, int nclients);
int rlk_lc_sigwatch_stop(rlk_lc_sigwatch *w);
void rlk_lc_sigwatch_restore(const rlk_lc_sigwatch *w);
/* After a wait that ended with code rc: -1 to go on and hold (acquired, no signal: the
 * signals still blocked), or 128 + the signal after restoring the mask and printing
 * "<what>: interrupted by signal N (NAME) while waiting<detail>" (a hold taken as the signal
 * came is given back with give_back(arg) first), or -2 with the mask restored: not acquired
 * for another reason, for the caller to report. */
int rlk_lc_sigwatch_end(rlk_lc_sigwatch *w, int rc, const char *what, const char *detail,
                        void (*give_back)(void *arg), void *arg);

/* ---------------------------------------------------------------- lock_check.c */

/* The lost-report byte of a hold the checker found gone (beside the library's
 * rlk_lost_reason values): counted as RLK_LOST_GONE. */
#define RLK_LC_LOST_CHECKED 64
#define RLK_LC_CHECK_FIELDS_MAX 64

/* The hold checker: a thread running h->check at every message on h->check_channel (joined
 * on h->client's subscriber) and every h->check_period_ns; a hold found gone writes
 * RLK_LC_LOST_CHECKED to the lost-report pipe once, and the thread ends. */
typedef struct rlk_lc_checker {
    rlk_lc_hold *h;
    int fd;
    struct rlk_sub *sub;
    struct rlk_sub_chan *ch;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int stop;
    int started;
} rlk_lc_checker;

/* Starts it when h has a check and a channel or a period (nothing to do otherwise: a failure
 * to start leaves the hold to its deadline, as before). The forwarded signals must be blocked
 * (the thread inherits the mask). */
void rlk_lc_checker_start(rlk_lc_checker *k, rlk_lc_hold *h, int lost_fd);
/* Stops and joins it; before the release. */
void rlk_lc_checker_stop(rlk_lc_checker *k);
/* A check on the server: want NULL: HEXISTS key fields[0] (n 1); else HMGET key fields...,
 * every one equal to want (n at most RLK_LC_CHECK_FIELDS_MAX). 1 held, 0 not, -1 error. */
int rlk_lc_check_fields(rlk_client *c, const char *key, const char *const *fields, int n,
                        const char *want);

/* ---------------------------------------------------------------- lock_watch.c */

/* Runs while the command runs: forwards signals, reaps it, stops it when
 * the hold is lost (lost_fd readable: one byte per report, the
 * rlk_lost_reason; the hold's deadline passing; its renew step failing). */
typedef struct rlk_lc_watch {
    /* in */
    pid_t pid;
    int sigfd;                  /* signalfd of RLK_LC_SIGNALS */
    int lost_fd;                /* read end of the lost-report pipe */
    rlk_lc_hold *hold;          /* deadline, renewal */
    long long grace_ms;         /* SIGTERM .. SIGKILL */
    long long margin_ms;        /* SIGKILL this long before the hold's deadline */
    /* out */
    int status;                 /* the command's wait status */
    int lost;                   /* 1: the hold was lost and the command stopped */
    int killed;                 /* 1: SIGKILL was sent */
    char why[RLK_LC_WHY_MAX];   /* why it was lost */
    /* private */
    int reaped;
    long long kill_deadline_ns; /* -1: no SIGKILL scheduled */
    long long renew_at_ns;      /* -1: no renewal */
    long long upkeep_at_ns;     /* -1: no upkeep */
} rlk_lc_watch;

/* The signals rlk blocks while the command runs (read through signalfd):
 * SIGCHLD and the forwarded SIGINT, SIGTERM, SIGHUP, SIGQUIT. */
void rlk_lc_signal_set(sigset_t *set);

/* 0 once the command has ended (w->status); -1 on a system error (message
 * printed; the command has been killed and reaped). */
int rlk_lc_watch_run(rlk_lc_watch *w);

/* Text for a lost-lock reason byte. */
const char *rlk_lc_lost_text(int reason);

/* ---------------------------------------------------------------- `rlk lock` modes */

enum rlk_lc_mode {
    RLK_LC_REENTRANT = 0,       /* default */
    RLK_LC_READ,                /* --read */
    RLK_LC_WRITE,               /* --write */
    RLK_LC_FAIR,                /* --fair */
    RLK_LC_FENCED,              /* --fenced */
    RLK_LC_ALL,                 /* --all: MultiLock */
    RLK_LC_REDLOCK,             /* --redlock URLS */
    RLK_LC_NONREENTRANT,        /* --non-reentrant */
    RLK_LC_SPIN                 /* --spin: the reentrant lock, waiting by back-off */
};

typedef struct rlk_lc_lock_opts {
    rlk_lc_opts c;
    int mode;
    const char *mode_flag;      /* "--read" ..., for messages; NULL: default */
    const char *redlock_urls;   /* --redlock: comma-separated */
    const char **names;         /* NAME (or NAME... with --all) */
    int nnames;
    int fair_nonreentrant;      /* --fair --non-reentrant: mode RLK_LC_FAIR, non-reentrant */
    long long lock_delay_ms;    /* --lock-delay MS (reentrant, --spin); 0: none */
} rlk_lc_lock_opts;

/* The label of a single-server mode in messages: "lock", "fair lock", "read lock", ... */
const char *rlk_lc_single_label(int mode);
/* Each runs `rlk lock` in its mode and returns the exit code. */
int rlk_lc_lock_single(const rlk_lc_lock_opts *o);   /* reentrant, read, write, fair, fenced,
                                                        non-reentrant, spin */
int rlk_lc_lock_all(const rlk_lc_lock_opts *o);      /* lock_multi.c */
int rlk_lc_lock_redlock(const rlk_lc_lock_opts *o);  /* lock_redlock.c */

#endif /* RLK_LOCK_CLI_H */
