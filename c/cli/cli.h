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

#include <stdarg.h>
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
    RLK_EXIT_CHECK_ERRORS = 8,  /* rlk check: errors (a server not fit for locks) */
    RLK_EXIT_READONLY = 9,      /* the server is a replica (READONLY, MASTERDOWN, ROLE) */
    RLK_EXIT_NOREPLICAS = 10,   /* too few replicas acknowledged (--min-replicas, NOREPLICAS) */
    RLK_EXIT_FENCED = 11        /* rlk fence: the token is below the fence's highest */
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
extern const rlk_cli_command rlk_cmd_elect;
extern const rlk_cli_command rlk_cmd_semaphore;
extern const rlk_cli_command rlk_cmd_latch;
extern const rlk_cli_command rlk_cmd_inspect;
extern const rlk_cli_command rlk_cmd_top;
extern const rlk_cli_command rlk_cmd_unlock;
extern const rlk_cli_command rlk_cmd_check;
extern const rlk_cli_command rlk_cmd_functions;
extern const rlk_cli_command rlk_cmd_fence;
extern const rlk_cli_command rlk_cmd_fastmulti;

/* Global --url (NULL when not given); commands may override it with their own --url. */
extern const char *rlk_cli_global_url;

/* The options every command takes, before the command or after it (rlk_cli_global_opt). */
typedef struct rlk_cli_globals {
    const char *url_file;       /* --url-file FILE: the URL, read from FILE */
    const char *password_file;  /* --password-file FILE: the AUTH password, read from FILE */
    int keep_env;               /* --keep-env: pass RLK_URL, RLK_PASSWORD, REDISCLI_AUTH on */
    int verbose;                /* --verbose: connect info and waiting reports on stderr */
    int functions;              /* --functions / --no-functions: rlk_options.functions */
    const char *pubsub;         /* --pubsub MODE (else $RLK_PUBSUB): auto, global or sharded */
    int min_replicas;           /* --min-replicas N: rlk_options.min_replicas */
    int min_replicas_timeout_ms; /* --min-replicas-timeout MS: rlk_options.min_replicas_timeout_ms */
    int tls;                    /* --tls: any redis* URL over TLS (rlk_options.tls) */
    const char *cacert;         /* --cacert FILE */
    const char *cacertdir;      /* --cacertdir DIR */
    const char *cert;           /* --cert FILE: client certificate */
    const char *key;            /* --key FILE: its private key */
    const char *key_password_file; /* --key-password-file FILE */
    const char *sni;            /* --sni NAME */
    int insecure;               /* --insecure: no certificate or name check (said on stderr) */
} rlk_cli_globals;
extern rlk_cli_globals rlk_cli_g;

/* The command being run ("lock"; NULL before one is found) and how many words it has
 * (argv[0] = its name included): a -h/--help is help only as its only word. */
extern const char *rlk_cli_cmd_name;
extern int rlk_cli_cmd_argc;

/* Prints `rlk --version`'s two lines (also for --version after a command's name). */
void rlk_cli_version(void);

/* Where `cmake --install` puts README.md and docs/ (the help's "docs/X.md" is DOCDIR/docs/X.md). */
#ifndef RLK_DOCDIR
#define RLK_DOCDIR "/usr/local/share/doc/rlk"
#endif
#ifndef RLK_DOCDIR_REL
#define RLK_DOCDIR_REL "share/doc/rlk"      /* relative to the prefix (bin/..) */
#endif

/* Called first in main, before any thread: saves $RLK_URL and the credential variables
 * ($RLK_PASSWORD, $REDISCLI_AUTH, $RLK_PASSWORD_FILE, $RLK_TLS_CERT, $RLK_TLS_KEY,
 * $RLK_TLS_KEY_PASSWORD_FILE), and takes them out of rlk's environment, so that a command rlk
 * runs does not inherit a credential. RLK_URL is put back without its password (a command
 * gets the URL rlk uses: rlk_cli_pass_on_env); --keep-env puts the originals back. */
void rlk_cli_env_take(void);

/* What a command rlk runs gets in its environment, so that a nested rlk reaches the same
 * server the same way: RLK_URL = the URL this rlk uses (url: a command's --url, as for
 * rlk_cli_conn_options; with_url 0: none), without its password; the TLS options given
 * (RLK_TLS, RLK_TLS_CACERT, RLK_TLS_CACERTDIR, RLK_TLS_SNI, RLK_TLS_INSECURE; files as absolute
 * paths). With --keep-env also the URL's password and where the credentials are
 * (RLK_PASSWORD_FILE, RLK_TLS_CERT, RLK_TLS_KEY, RLK_TLS_KEY_PASSWORD_FILE); without it those
 * are not passed on, as the password is not. A NULL-terminated list of "KEY=VALUE" (free with
 * rlk_cli_env_list_free), NULL when out of memory. */
char **rlk_cli_pass_on_env(const char *url, int with_url);
void rlk_cli_env_list_free(char **list);

/* --url-file, --password-file, --pubsub, --keep-env, --verbose, --functions, --no-functions,
 * --min-replicas, --min-replicas-timeout at argv[*i]: 1 matched (*i advanced), 0 not, -1
 * usage error printed. Call during parsing only (it may
 * change the environment: no thread may run yet). */
int rlk_cli_global_opt(const char *cmd, int argc, char **argv, int *i);
/* The end of the option parser of a command that prints replies (rlk eval, rlk fence): got is
 * what its own options gave argv[*i] (rlk_cli_opt_value: 0 none, > 0 taken, < 0 an error told);
 * then --url into *url, the global options, --raw / --no-raw into *raw, and -h / --help (usage
 * on stdout). -1: taken, parse on; else the exit code (RLK_EXIT_OK after the help,
 * RLK_EXIT_USAGE after a one-line error, an unknown option included). */
int rlk_cli_reply_opt(const char *cmd, int argc, char **argv, int *i, int got, const char **url,
                      int *raw, const char *usage);
/* --pubsub / $RLK_PUBSUB: "auto" (or empty), "global", "sharded" -> enum rlk_pubsub; -1 else. */
int rlk_cli_pubsub_mode(const char *s);

/* Fills the URL and password of o for url (a command's --url; NULL: the global
 * --url, --url-file, $RLK_URL, the default). The password, when the URL has none:
 * --password-file, then $RLK_PASSWORD, then $REDISCLI_AUTH. -1 on success, else an
 * exit code after a one-line error (a missing, empty or world-readable file, an
 * empty $RLK_URL, --url with --url-file). With --verbose, says where it connects. */
int rlk_cli_conn_options(const char *url, rlk_options *o);

/* The same for a URL that came from elsewhere than --url (a member of --all or
 * --redlock): from names where, for the --verbose line ("--redlock"). */
int rlk_cli_conn_options_from(const char *url, const char *from, rlk_options *o);

/* The same without the --verbose line (for a second connection). */
int rlk_cli_conn_options_quiet(const char *url, rlk_options *o);

/* Prints "rlk: <message>" to stderr when --verbose is on. */
void rlk_cli_verbose(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* --verbose: "connected to URL", and over TLS what the handshake found (protocol, cipher,
 * the server certificate's subject, days until it expires, whether it was checked). */
void rlk_cli_connected(rlk_client *c);

/* Terminal-safe text (every human output goes through these; --json has its own escaping):
 * a control character of s is shown as \n, \r, \t or \xHH, a C1 control (UTF-8 U+0080 ..
 * U+009F) as \u00HH, so that a lock name with a newline or an escape sequence cannot forge
 * lines or drive the terminal. rlk_cli_escape writes at most cap bytes (NUL included) and
 * returns the length the whole escaped text needs (dst may be NULL with cap 0). */
size_t rlk_cli_escape(char *dst, size_t cap, const char *s, size_t len);
/* s escaped, in one of 8 rotating per-thread buffers: valid until the 8th next call on the
 * thread (several may appear in one printf). */
const char *rlk_cli_show(const char *s);
const char *rlk_cli_shown(const char *s, size_t len);
/* prefix, then fmt's text escaped as a whole (no newline added). */
void rlk_cli_say(FILE *out, const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rlk_cli_vsay(FILE *out, const char *prefix, const char *fmt, va_list ap);

/* Prints "rlk: <message>" to stderr (escaped: rlk_cli_say) and returns code. */
int rlk_cli_fail(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The name rule (docs/cluster.md "Names"): -1 when name follows it, else
 * a usage error (exit 2) for command cmd. */
int rlk_cli_check_name(const char *cmd, const char *name);
/* A usage error: the message, a hint to `rlk <cmd> --help`, RLK_EXIT_USAGE. */
int rlk_cli_usage(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A usage error for an option cmd does not take (cmd NULL: before the command), with a
 * one-line hint when it is a habit of flock(1) (lock, semaphore) or redis-cli(1). */
int rlk_cli_unknown_option(const char *cmd, const char *arg);
/* The exit code for an rlk error code. */
int rlk_cli_exit_code(int rlk_err);

/* Option matching: when argv[*i] is `name VALUE` or `name=VALUE`, stores VALUE,
 * advances *i past it and returns 1; returns -1 (after a usage message) when the
 * value is missing; 0 when argv[*i] is something else. */
int rlk_cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                      const char **value);
/* 1 when arg is -h or --help and it is the command's only word (print the usage
 * and exit 0). A help word among other words (`rlk lock job -h host -- cmd`) is a
 * usage error: printed, and rlk exits 2 at once (it is only called while parsing,
 * before anything is connected or changed). 0 for any other word. */
int rlk_cli_is_help(const char *arg);

/* Connects for a command: --url, else the global --url, else $RLK_URL, else the default.
 * Scripts from bundle_dir when non-NULL. On failure prints the error and sets *exit_code;
 * returns NULL. */
rlk_client *rlk_cli_connect(const char *url, const char *bundle_dir, int no_preload,
                            int *exit_code);
/* The end of every command's connect: rlk_connect(o), then on failure the one-line error,
 * *exit_code set and NULL; else rlk_cli_connected (--verbose) and *exit_code RLK_EXIT_OK. */
rlk_client *rlk_cli_connect_opts(const rlk_options *o, int *exit_code);

/* Prints a reply the way redis-cli does: raw (one value per line) or formatted
 * ("(integer) 1", quoted strings, numbered arrays). */
void rlk_cli_print_reply(FILE *out, const redisReply *r, int raw);

#endif /* RLK_CLI_H */
