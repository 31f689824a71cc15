/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * util.c - the CLI's shared helpers: error lines, exit codes, option values,
 * connecting.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "client/client.h"
#include "client/error.h"
#include "client/slot.h"
#include "client/tls.h"
#include "client/url.h"

const char *rlk_cli_global_url;
rlk_cli_globals rlk_cli_g;
const char *rlk_cli_cmd_name;
int rlk_cli_cmd_argc;

/* The variables that carry a credential or say where one is, as rlk found them (NULL: not
 * set). They are taken out of rlk's environment at start, so that a command rlk runs does not
 * inherit them (--keep-env puts them back), and rlk reads them from here. */
enum { RLK_CLI_CRED_PASSWORD, RLK_CLI_CRED_AUTH, RLK_CLI_CRED_PASSWORD_FILE, RLK_CLI_CRED_CERT,
       RLK_CLI_CRED_KEY, RLK_CLI_CRED_KEY_PASSWORD_FILE, RLK_CLI_CRED_N };
static const char *const rlk_cli_cred_names[RLK_CLI_CRED_N] = {
    "RLK_PASSWORD", "REDISCLI_AUTH", "RLK_PASSWORD_FILE", "RLK_TLS_CERT", "RLK_TLS_KEY",
    "RLK_TLS_KEY_PASSWORD_FILE",
};
static char *rlk_cli_cred_env[RLK_CLI_CRED_N];
static char *rlk_cli_env_url;
static int rlk_cli_env_url_set;

/* ---------------------------------------------------------------- terminal-safe text */

size_t rlk_cli_escape(char *dst, size_t cap, const char *s, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t j = 0;

    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        size_t n = 0;

        if (c == '\n' || c == '\r' || c == '\t') {
            esc[n++] = '\\';
            esc[n++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else if (c < 0x20 || c == 0x7f) {
            esc[n++] = '\\';
            esc[n++] = 'x';
            esc[n++] = hex[c >> 4];
            esc[n++] = hex[c & 15];
        } else if (c == 0xc2 && i + 1 < len && (unsigned char)s[i + 1] >= 0x80 &&
                   (unsigned char)s[i + 1] <= 0x9f) {
            unsigned char c1 = (unsigned char)s[++i];   /* a C1 control (U+0080..U+009F) */

            memcpy(esc, "\\u00", 4);
            n = 4;
            esc[n++] = hex[c1 >> 4];
            esc[n++] = hex[c1 & 15];
        } else {
            esc[n++] = (char)c;
        }
        for (size_t k = 0; k < n; k++, j++)
            if (j + 1 < cap)
                dst[j] = esc[k];
    }
    if (cap)
        dst[j < cap ? j : cap - 1] = '\0';
    return j;
}

/* Rotating per-thread buffers, so that one printf may show several strings. Kept under a
 * pthread key whose destructor frees them when a thread ends (rlk lock's wait reporter prints
 * from its own thread). */
#define RLK_CLI_SHOW_SLOTS 8
typedef struct rlk_cli_show_slots {
    struct { char *buf; size_t cap; } slot[RLK_CLI_SHOW_SLOTS];
    unsigned next;
} rlk_cli_show_slots;

static pthread_key_t rlk_cli_show_key;
static pthread_once_t rlk_cli_show_once = PTHREAD_ONCE_INIT;

static void rlk_cli_show_free(void *p)
{
    rlk_cli_show_slots *t = p;

    for (int i = 0; i < RLK_CLI_SHOW_SLOTS; i++)
        free(t->slot[i].buf);
    free(t);
}

static void rlk_cli_show_init(void)
{
    (void)pthread_key_create(&rlk_cli_show_key, rlk_cli_show_free);
}

const char *rlk_cli_shown(const char *s, size_t len)
{
    rlk_cli_show_slots *t;
    unsigned k;
    size_t need;

    if (!s)
        return "(null)";
    pthread_once(&rlk_cli_show_once, rlk_cli_show_init);
    t = pthread_getspecific(rlk_cli_show_key);
    if (!t) {
        if (!(t = calloc(1, sizeof *t)))
            return "?";
        if (pthread_setspecific(rlk_cli_show_key, t) != 0) {
            free(t);
            return "?";
        }
    }
    k = t->next++ % RLK_CLI_SHOW_SLOTS;
    need = rlk_cli_escape(NULL, 0, s, len) + 1;
    if (need > t->slot[k].cap) {
        char *grown = realloc(t->slot[k].buf, need);

        if (!grown)
            return "?";
        t->slot[k].buf = grown;
        t->slot[k].cap = need;
    }
    rlk_cli_escape(t->slot[k].buf, need, s, len);
    return t->slot[k].buf;
}

const char *rlk_cli_show(const char *s)
{
    return rlk_cli_shown(s, s ? strlen(s) : 0);
}

void rlk_cli_vsay(FILE *out, const char *prefix, const char *fmt, va_list ap)
{
    char buf[2048], *big = NULL;
    const char *text = buf;
    va_list again;
    int n;

    va_copy(again, ap);
    n = vsnprintf(buf, sizeof buf, fmt, ap);
    if (n >= (int)sizeof buf && (big = malloc((size_t)n + 1)) != NULL) {
        vsnprintf(big, (size_t)n + 1, fmt, again);
        text = big;
    }
    va_end(again);
    fprintf(out, "%s%s", prefix, rlk_cli_shown(text, n < 0 ? 0 : strlen(text)));
    free(big);
}

void rlk_cli_say(FILE *out, const char *prefix, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rlk_cli_vsay(out, prefix, fmt, ap);
    va_end(ap);
}

/* A server that wants a password and was given none answers NOAUTH (Redis 6+: "NOAUTH
 * Authentication required."), one that refuses the password WRONGPASS: the message says where
 * rlk takes one from. The library ends such messages with where it takes one from
 * (client/error.h: the URL, rlk_options.password); rlk's sources take that hint's place. */
static const char rlk_cli_noauth_hint[] =
    " (the server wants a password: give it in the URL, redis://:PASSWORD@HOST:PORT, or with "
    "--password-file FILE, $RLK_PASSWORD_FILE or $RLK_PASSWORD)";
static const char rlk_cli_wrongpass_hint[] =
    " (the server refused the user and password: the URL's, or when it has none, "
    "--password-file FILE, $RLK_PASSWORD_FILE or $RLK_PASSWORD)";

/* Cuts the library's hint out of text; 1 when it was there. */
static int rlk_cli_cut(char *text, const char *hint)
{
    char *at = strstr(text, hint);

    if (!at)
        return 0;
    memmove(at, at + strlen(hint), strlen(at + strlen(hint)) + 1);
    return 1;
}

static void rlk_cli_vmessage(const char *fmt, va_list ap)
{
    char probe[2048];
    const char *hint = NULL;
    va_list again;
    int n;

    va_copy(again, ap);
    n = vsnprintf(probe, sizeof probe, fmt, again);
    va_end(again);
    if (n >= 0 && n < (int)sizeof probe) {
        if (rlk_cli_cut(probe, RLK_NOAUTH_HINT))
            hint = rlk_cli_noauth_hint;
        else if (rlk_cli_cut(probe, RLK_WRONGPASS_HINT))
            hint = rlk_cli_wrongpass_hint;
    }
    if (hint) {
        rlk_cli_say(stderr, "rlk: ", "%s", probe);
    } else {
        rlk_cli_vsay(stderr, "rlk: ", fmt, ap);
        if (strstr(probe, "NOAUTH ") || strstr(probe, "NOAUTH:"))
            hint = rlk_cli_noauth_hint;
    }
    if (hint)
        fputs(hint, stderr);
    fputc('\n', stderr);
}

int rlk_cli_fail(int code, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rlk_cli_vmessage(fmt, ap);
    va_end(ap);
    return code;
}

int rlk_cli_usage(const char *cmd, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    rlk_cli_vsay(stderr, "rlk: ", fmt, ap);
    va_end(ap);
    fprintf(stderr, " (see 'rlk %s%s--help')\n", cmd ? cmd : "", cmd ? " " : "");
    return RLK_EXIT_USAGE;
}

int rlk_cli_unknown_option(const char *cmd, const char *arg)
{
    static const struct { const char *opts[5]; const char *hint; } habits[] = {
        /* flock(1) */
        {{"-s", "--shared"}, "rlk is not flock; a shared lock is --read (rlk lock --read NAME)"},
        {{"-x", "-e", "--exclusive"}, "rlk is not flock; the lock is exclusive by default "
                                      "(--write for the write side of a read-write lock)"},
        {{"--timeout"}, "rlk is not flock; the wait bound is -w SECONDS (--wait)"},
        {{"--nonblock", "--nb"}, "rlk is not flock; no waiting is -n (--no-wait)"},
        {{"-c", "--command"}, "rlk is not flock; the command goes after '--': "
                              "rlk lock NAME -- sh -c 'COMMAND'"},
        {{"-u", "--unlock"}, "rlk is not flock; a lock is released when its command ends "
                             "(rlk unlock --force NAME takes it away)"},
        {{"-o", "--close"}, "rlk is not flock; the command never inherits rlk's connections"},
        /* redis-cli(1) */
        {{"-p", "-s", "-u", "-n", "--port"}, "rlk is not redis-cli; the server is --url "
                                       "redis://HOST:PORT/DB or unix:///PATH"},
        {{"-a", "--pass", "--user", "--askpass"}, "give the password with --password-file FILE, "
                                                  "$RLK_PASSWORD or $REDISCLI_AUTH"},
    };
    int locking = cmd && (strcmp(cmd, "lock") == 0 || strcmp(cmd, "semaphore") == 0);

    for (size_t k = 0; k < sizeof habits / sizeof habits[0]; k++) {
        /* flock's habits where a lock is taken; redis-cli's everywhere (-s: flock's there) */
        if (k < 7 && !locking)
            continue;
        for (int j = 0; j < 5 && habits[k].opts[j]; j++) {
            size_t n = strlen(habits[k].opts[j]);

            if (strncmp(arg, habits[k].opts[j], n) == 0 && (arg[n] == '\0' || arg[n] == '='))
                return rlk_cli_usage(cmd, "unknown option '%s': %s", arg, habits[k].hint);
        }
    }
    return rlk_cli_usage(cmd, "unknown option '%s'", arg);
}

int rlk_cli_exit_code(int err)
{
    switch (err) {
    case RLK_OK:
        return RLK_EXIT_OK;
    case RLK_ERR_BUSY:
        return RLK_EXIT_NOT_ACQUIRED;
    case RLK_ERR_URL:
    case RLK_ERR_TLS:           /* unusable TLS files or options: nothing was tried */
    case RLK_ERR_ARG:
    case RLK_ERR_UPGRADE:
    case RLK_ERR_REENTRY:       /* a non-reentrant lock asked for again by its holder */
    case RLK_ERR_BUNDLE:
    case RLK_ERR_NOSUCHSCRIPT:
        return RLK_EXIT_USAGE;
    case RLK_ERR_IO:
    case RLK_ERR_TIMEOUT:
    case RLK_ERR_AUTH:
    case RLK_ERR_UNSETTLED:     /* the server went out of reach with a call in flight */
        return RLK_EXIT_CONNECT;
    case RLK_ERR_SHA:
        return RLK_EXIT_SCRIPTS;
    case RLK_ERR_READONLY:
        return RLK_EXIT_READONLY;
    case RLK_ERR_NOREPLICAS:
        return RLK_EXIT_NOREPLICAS;
    default:    /* SCRIPT, SERVER, PROTOCOL, NOMEM, NOT_OWNER, LOST */
        return RLK_EXIT_REPLY;
    }
}

int rlk_cli_is_help(const char *arg)
{
    const char *cmd = rlk_cli_cmd_name ? rlk_cli_cmd_name : "COMMAND";

    if (strcmp(arg, "--help") != 0 && strcmp(arg, "-h") != 0)
        return 0;
    if (rlk_cli_cmd_argc == 2)
        return 1;
    if (strcmp(arg, "-h") == 0)
        rlk_cli_fail(RLK_EXIT_USAGE, "-h means --help and goes alone (rlk %s -h); the server is "
                     "given with --url redis://HOST[:PORT], not -h HOST", cmd);
    else
        rlk_cli_fail(RLK_EXIT_USAGE, "--help goes alone: rlk %s --help", cmd);
    exit(RLK_EXIT_USAGE);
}

/* ---------------------------------------------------------------- global options */

static char *rlk_cli_take_env(const char *name)
{
    const char *v = getenv(name);
    char *copy = v ? strdup(v) : NULL;

    unsetenv(name);
    return copy;
}

void rlk_cli_env_take(void)
{
    rlk_url u;
    char err[200];

    rlk_cli_env_url_set = getenv("RLK_URL") != NULL;
    rlk_cli_env_url = rlk_cli_take_env("RLK_URL");
    for (int k = 0; k < RLK_CLI_CRED_N; k++)
        rlk_cli_cred_env[k] = rlk_cli_take_env(rlk_cli_cred_names[k]);
    /* The command may still find the server (a nested rlk lock), never the password. */
    if (rlk_cli_env_url && *rlk_cli_env_url &&
        rlk_url_parse(rlk_cli_env_url, &u, err, sizeof err) == 0) {
        char *pub = rlk_url_without_password(&u);

        if (pub)
            setenv("RLK_URL", pub, 1);
        free(pub);
    }
    if (rlk_cli_env_url && *rlk_cli_env_url)
        rlk_url_free(&u);
}

static void rlk_cli_keep_env(void)
{
    if (rlk_cli_env_url)
        setenv("RLK_URL", rlk_cli_env_url, 1);
    for (int k = 0; k < RLK_CLI_CRED_N; k++)
        if (rlk_cli_cred_env[k])
            setenv(rlk_cli_cred_names[k], rlk_cli_cred_env[k], 1);
}

/* A credential variable's value as rlk found it, when set and not empty. */
static const char *rlk_cli_cred(int k)
{
    return rlk_cli_cred_env[k] && *rlk_cli_cred_env[k] ? rlk_cli_cred_env[k] : NULL;
}

/* --min-replicas N (0..1000) and --min-replicas-timeout MS (1..3600000): 1 matched, 0 not,
 * -1 usage error printed. */
static int rlk_cli_replica_opt(const char *cmd, int argc, char **argv, int *i)
{
    static const struct { const char *name; long long lo, hi; } opts[2] = {
        {"--min-replicas", 0, 1000}, {"--min-replicas-timeout", 1, 3600000},
    };
    const char *text = NULL;

    for (int k = 0; k < 2; k++) {
        int got = rlk_cli_opt_value(cmd, argc, argv, i, opts[k].name, &text);
        char *end = NULL;
        long long v;

        if (got <= 0) {
            if (got < 0)
                return -1;
            continue;
        }
        errno = 0;
        v = strtoll(text, &end, 10);
        if (!*text || *end || errno || v < opts[k].lo || v > opts[k].hi) {
            rlk_cli_usage(cmd, "%s: '%s' is not a whole number from %lld to %lld", opts[k].name,
                          text, opts[k].lo, opts[k].hi);
            return -1;
        }
        if (k == 0)
            rlk_cli_g.min_replicas = (int)v;
        else
            rlk_cli_g.min_replicas_timeout_ms = (int)v;
        return 1;
    }
    return 0;
}

/* The TLS options that take a value, named as redis-cli names them: 1 matched, 0 not,
 * -1 usage error printed. */
static int rlk_cli_tls_opt(const char *cmd, int argc, char **argv, int *i)
{
    const struct { const char *name; const char **to; } opts[] = {
        {"--cacert", &rlk_cli_g.cacert}, {"--cacertdir", &rlk_cli_g.cacertdir},
        {"--cert", &rlk_cli_g.cert}, {"--key", &rlk_cli_g.key},
        {"--key-password-file", &rlk_cli_g.key_password_file}, {"--sni", &rlk_cli_g.sni},
    };

    for (size_t k = 0; k < sizeof opts / sizeof opts[0]; k++) {
        int got = rlk_cli_opt_value(cmd, argc, argv, i, opts[k].name, opts[k].to);

        if (got != 0)
            return got;
    }
    return 0;
}

int rlk_cli_global_opt(const char *cmd, int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    int got;

    if (strcmp(arg, "--version") == 0) {
        /* as `rlk --version`, also after a command's name (rlk lock x --version): nothing runs */
        rlk_cli_version();
        exit(RLK_EXIT_OK);
    }
    if (strcmp(arg, "--keep-env") == 0) {
        rlk_cli_g.keep_env = 1;
        rlk_cli_keep_env();
        (*i)++;
        return 1;
    }
    if (strcmp(arg, "--verbose") == 0) {
        rlk_cli_g.verbose = 1;
        (*i)++;
        return 1;
    }
    if (strcmp(arg, "--functions") == 0 || strcmp(arg, "--no-functions") == 0) {
        rlk_cli_g.functions = arg[2] == 'f' ? RLK_FUNCTIONS_ON : RLK_FUNCTIONS_OFF;
        (*i)++;
        return 1;
    }
    if (strcmp(arg, "--tls") == 0 || strcmp(arg, "--insecure") == 0) {
        *(arg[2] == 't' ? &rlk_cli_g.tls : &rlk_cli_g.insecure) = 1;
        (*i)++;
        return 1;
    }
    if ((got = rlk_cli_replica_opt(cmd, argc, argv, i)) != 0)
        return got;
    if ((got = rlk_cli_tls_opt(cmd, argc, argv, i)) != 0)
        return got;
    got = rlk_cli_opt_value(cmd, argc, argv, i, "--url-file", &rlk_cli_g.url_file);
    if (got == 0)
        got = rlk_cli_opt_value(cmd, argc, argv, i, "--password-file", &rlk_cli_g.password_file);
    if (got == 0)
        got = rlk_cli_opt_value(cmd, argc, argv, i, "--pubsub", &rlk_cli_g.pubsub);
    if (got == 1 && rlk_cli_g.pubsub && rlk_cli_pubsub_mode(rlk_cli_g.pubsub) < 0) {
        rlk_cli_usage(cmd, "--pubsub takes auto, global or sharded, not '%s'", rlk_cli_g.pubsub);
        return -1;
    }
    return got;
}

int rlk_cli_pubsub_mode(const char *s)
{
    if (!s || !*s || strcmp(s, "auto") == 0)
        return RLK_PUBSUB_AUTO;
    if (strcmp(s, "global") == 0)
        return RLK_PUBSUB_GLOBAL;
    if (strcmp(s, "sharded") == 0)
        return RLK_PUBSUB_SHARDED;
    return -1;
}

void rlk_cli_verbose(const char *fmt, ...)
{
    va_list ap;

    if (!rlk_cli_g.verbose)
        return;
    va_start(ap, fmt);
    rlk_cli_vmessage(fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------- credentials */

#define RLK_CLI_SECRET_MAX 4096

/* Reads the one line of a --url-file / --password-file (a trailing "\n" or "\r\n"
 * taken off) into a static buffer. NULL after a one-line error. The content is
 * never printed. */
static const char *rlk_cli_read_line_file(const char *opt, const char *path, int private,
                                          char *buf, size_t len)
{
    struct stat st;
    ssize_t n;
    size_t got = 0;
    int fd;

    if (path[0] == '\0')
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s: empty file name", opt), NULL;
    if ((fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY)) < 0)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s %s: %s", opt, path, strerror(errno)), NULL;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s %s: not a regular file", opt, path), NULL;
    }
    if (private && (st.st_mode & S_IROTH)) {
        close(fd);
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s %s: readable by every user; make it private "
                            "(chmod o-r %s)", opt, path, path), NULL;
    }
    while (got < len && (n = read(fd, buf + got, len - got)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            close(fd);
            return rlk_cli_fail(RLK_EXIT_USAGE, "%s %s: %s", opt, path, strerror(errno)), NULL;
        }
        got += (size_t)n;
    }
    close(fd);
    if (got >= len)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s %s: longer than %d bytes", opt, path,
                            RLK_CLI_SECRET_MAX), NULL;
    if (got > 0 && buf[got - 1] == '\n')
        got--;
    if (got > 0 && buf[got - 1] == '\r')
        got--;
    buf[got] = '\0';
    if (got == 0)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s %s: empty file", opt, path), NULL;
    if (memchr(buf, '\n', got) || strlen(buf) != got)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s %s: more than one line (the file holds one "
                            "value only)", opt, path), NULL;
    return buf;
}

/* The URL to use and where it came from (given: where url came from when the caller
 * knows, NULL for a command's --url). NULL after an error. */
static const char *rlk_cli_pick_url(const char *url, const char *given, const char **from)
{
    static char file_url[RLK_CLI_SECRET_MAX + 1];
    static const char *file_read;

    if (url && given) {
        *from = given;      /* a member's URL of --all or --redlock */
        return url;
    }
    if (!url)
        url = rlk_cli_global_url;
    if (url && rlk_cli_g.url_file)
        return rlk_cli_fail(RLK_EXIT_USAGE, "--url and --url-file exclude each other"), NULL;
    if (url) {
        *from = "--url";
        return url;
    }
    if (rlk_cli_g.url_file) {
        *from = "--url-file";
        if (!file_read)
            file_read = rlk_cli_read_line_file("--url-file", rlk_cli_g.url_file, 0, file_url,
                                               sizeof file_url);
        return file_read;
    }
    if (rlk_cli_env_url_set && (!rlk_cli_env_url || !*rlk_cli_env_url))
        return rlk_cli_fail(RLK_EXIT_USAGE, "bad url: $RLK_URL is set but empty (unset it for "
                            "%s, or give --url)", RLK_DEFAULT_URL), NULL;
    if (rlk_cli_env_url) {
        *from = "$RLK_URL";
        return rlk_cli_env_url;
    }
    *from = "the default";
    return RLK_DEFAULT_URL;
}

/* The password when the URL has none. NULL: none (or an error: *failed). */
static const char *rlk_cli_pick_password(const char **from, int *failed)
{
    static char file_pw[RLK_CLI_SECRET_MAX + 1];
    static const char *file_read;

    *failed = 0;
    if (rlk_cli_g.password_file) {
        *from = "--password-file";
        if (!file_read)
            file_read = rlk_cli_read_line_file("--password-file", rlk_cli_g.password_file, 1,
                                               file_pw, sizeof file_pw);
        *failed = file_read == NULL;
        return file_read;
    }
    if (rlk_cli_cred(RLK_CLI_CRED_PASSWORD_FILE)) {
        *from = "$RLK_PASSWORD_FILE";
        if (!file_read)
            file_read = rlk_cli_read_line_file("$RLK_PASSWORD_FILE",
                                               rlk_cli_cred(RLK_CLI_CRED_PASSWORD_FILE), 1,
                                               file_pw, sizeof file_pw);
        *failed = file_read == NULL;
        return file_read;
    }
    if (rlk_cli_cred(RLK_CLI_CRED_PASSWORD)) {
        *from = "$RLK_PASSWORD";
        return rlk_cli_cred(RLK_CLI_CRED_PASSWORD);
    }
    if (rlk_cli_cred(RLK_CLI_CRED_AUTH)) {
        *from = "$REDISCLI_AUTH";
        return rlk_cli_cred(RLK_CLI_CRED_AUTH);
    }
    *from = NULL;
    return NULL;
}

static pthread_mutex_t rlk_cli_conn_mu = PTHREAD_MUTEX_INITIALIZER;
static int rlk_cli_insecure_said;

static int rlk_cli_conn_options_locked(const char *url, const char *given, rlk_options *o,
                                       int quiet)
{
    const char *url_from, *pw_from = NULL, *pw;
    char err[300], *masked;
    rlk_url u;
    int failed, in_url;

    o->functions = rlk_cli_g.functions;
    o->tls = rlk_cli_g.tls;
    o->tls_cacert = rlk_cli_g.cacert;
    o->tls_cacertdir = rlk_cli_g.cacertdir;
    o->tls_cert = rlk_cli_g.cert ? rlk_cli_g.cert : rlk_cli_cred(RLK_CLI_CRED_CERT);
    o->tls_key = rlk_cli_g.key ? rlk_cli_g.key : rlk_cli_cred(RLK_CLI_CRED_KEY);
    o->tls_key_password_file = rlk_cli_g.key_password_file
        ? rlk_cli_g.key_password_file : rlk_cli_cred(RLK_CLI_CRED_KEY_PASSWORD_FILE);
    o->tls_sni = rlk_cli_g.sni;
    o->tls_insecure = rlk_cli_g.insecure;
    o->min_replicas = rlk_cli_g.min_replicas;
    o->min_replicas_timeout_ms = rlk_cli_g.min_replicas_timeout_ms;
    if (!(o->url = rlk_cli_pick_url(url, given, &url_from)))
        return RLK_EXIT_USAGE;
    if (rlk_cli_g.pubsub) {
        o->pubsub = rlk_cli_pubsub_mode(rlk_cli_g.pubsub);
    } else if (getenv("RLK_PUBSUB")) {
        if ((o->pubsub = rlk_cli_pubsub_mode(getenv("RLK_PUBSUB"))) < 0)
            return rlk_cli_fail(RLK_EXIT_USAGE, "$RLK_PUBSUB must be auto, global or sharded, "
                                "not '%s'", getenv("RLK_PUBSUB"));
    }
    if (rlk_url_parse(o->url, &u, err, sizeof err) != 0) {
        rlk_url_free(&u);
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s (from %s)", err, url_from);
    }
    in_url = u.password != NULL;
    pw = rlk_cli_pick_password(&pw_from, &failed);
    if (failed) {
        rlk_url_free(&u);
        return RLK_EXIT_USAGE;
    }
    if (!in_url && pw) {
        o->password = pw;
        u.password = strdup("x");   /* for the masked form only */
    }
    u.tls |= rlk_cli_g.tls;
    if (!quiet && rlk_cli_g.insecure && !rlk_cli_insecure_said) {
        rlk_cli_insecure_said = 1;
        fprintf(stderr, "rlk: warning: --insecure: the server's certificate and name are not "
                "checked (anyone on the path can read and change the traffic)\n");
    }
    masked = rlk_url_masked(&u);
    if (!quiet)
        rlk_cli_verbose("connecting to %s (url from %s%s%s)", masked ? masked : "?", url_from,
                    in_url ? "; password from the url" : pw ? "; password from " : "",
                    in_url || !pw ? "" : pw_from);
    free(masked);
    rlk_url_free(&u);
    return -1;
}

/* Under a lock: the wait-report thread resolves too, and the files are read once. */
static int rlk_cli_conn_options_q(const char *url, const char *given, rlk_options *o,
                                  int quiet)
{
    int rc;

    pthread_mutex_lock(&rlk_cli_conn_mu);
    rc = rlk_cli_conn_options_locked(url, given, o, quiet);
    pthread_mutex_unlock(&rlk_cli_conn_mu);
    return rc;
}

int rlk_cli_conn_options(const char *url, rlk_options *o)
{
    return rlk_cli_conn_options_q(url, NULL, o, 0);
}

int rlk_cli_conn_options_from(const char *url, const char *from, rlk_options *o)
{
    return rlk_cli_conn_options_q(url, from, o, 0);
}

int rlk_cli_conn_options_quiet(const char *url, rlk_options *o)
{
    return rlk_cli_conn_options_q(url, NULL, o, 1);
}

void rlk_cli_connected(rlk_client *c)
{
    rlk_tls_peer p;

    rlk_cli_verbose("connected to %s", rlk_client_url(c));
    if (!rlk_cli_g.verbose || !c->tls)
        return;
    rlk_tls_last_peer(c->tls, &p);
    if (p.known)
        rlk_cli_verbose("TLS to %s: %s, %s; server certificate %s (issuer %s), expires in %ld "
                        "days; %s", p.addr, p.protocol, p.cipher, p.subject, p.issuer, p.days_left,
                        p.verified ? "chain and name verified" : "NOT verified (--insecure)");
}

int rlk_cli_opt_value(const char *cmd, int argc, char **argv, int *i, const char *name,
                      const char **value)
{
    size_t n = strlen(name);
    const char *arg = argv[*i];

    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        *i += 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0;
    if (*i + 1 >= argc) {
        rlk_cli_usage(cmd, "option %s needs a value", name);
        return -1;
    }
    *value = argv[*i + 1];
    *i += 2;
    return 1;
}

int rlk_cli_reply_opt(const char *cmd, int argc, char **argv, int *i, int got, const char **url,
                      int *raw, const char *usage)
{
    if (got == 0)
        got = rlk_cli_opt_value(cmd, argc, argv, i, "--url", url);
    if (got == 0)
        got = rlk_cli_global_opt(cmd, argc, argv, i);
    if (got < 0)
        return RLK_EXIT_USAGE;
    if (got > 0)
        return -1;
    if (strcmp(argv[*i], "--raw") == 0 || strcmp(argv[*i], "--no-raw") == 0) {
        *raw = strcmp(argv[*i], "--raw") == 0;
        (*i)++;
        return -1;
    }
    if (rlk_cli_is_help(argv[*i])) {
        fputs(usage, stdout);
        return RLK_EXIT_OK;
    }
    return rlk_cli_unknown_option(cmd, argv[*i]);
}

rlk_client *rlk_cli_connect(const char *url, const char *bundle_dir, int no_preload,
                            int *exit_code)
{
    rlk_options o;

    rlk_options_init(&o);
    if ((*exit_code = rlk_cli_conn_options(url, &o)) >= 0)
        return NULL;
    o.bundle_dir = bundle_dir;
    o.no_preload = no_preload;
    o.pool_size = 1;
    return rlk_cli_connect_opts(&o, exit_code);
}

rlk_client *rlk_cli_connect_opts(const rlk_options *o, int *exit_code)
{
    rlk_client *c = rlk_connect(o);

    if (!c) {
        *exit_code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        return NULL;
    }
    if (rlk_err(c) != RLK_OK) {
        *exit_code = rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "%s", rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    rlk_cli_connected(c);
    *exit_code = RLK_EXIT_OK;
    return c;
}

int rlk_cli_check_name(const char *cmd, const char *name)
{
    char why[256];

    if (!name || rlk_name_check(name, why, sizeof why) == 0)
        return -1;
    return rlk_cli_usage(cmd, "'%s': %s", name, why);
}

/* ---------------------------------------------------------------- a command's environment */

static int rlk_cli_env_add(char **list, int *n, int max, const char *key, const char *value)
{
    size_t len;

    if (!value)
        return 0;
    len = strlen(key) + strlen(value) + 2;
    if (*n >= max || !(list[*n] = malloc(len)))
        return -1;
    snprintf(list[*n], len, "%s=%s", key, value);
    (*n)++;
    return 0;
}

/* A file option's path as an absolute path (the command may change directory). */
static int rlk_cli_env_add_path(char **list, int *n, int max, const char *key, const char *path)
{
    char *abs = path ? realpath(path, NULL) : NULL;
    int rc = rlk_cli_env_add(list, n, max, key, abs ? abs : path);

    free(abs);
    return rc;
}

void rlk_cli_env_list_free(char **list)
{
    for (int k = 0; list && list[k]; k++)
        free(list[k]);
    free(list);
}

char **rlk_cli_pass_on_env(const char *url, int with_url)
{
    enum { MAX = 12 };
    char **list = calloc(MAX + 1, sizeof *list);
    int n = 0, bad = 0;

    if (!list)
        return NULL;
    if (with_url) {
        const char *from, *used;
        char err[300], *pub = NULL;
        rlk_url u;

        pthread_mutex_lock(&rlk_cli_conn_mu);
        used = rlk_cli_pick_url(url, NULL, &from);
        pthread_mutex_unlock(&rlk_cli_conn_mu);
        if (used && rlk_url_parse(used, &u, err, sizeof err) == 0)
            pub = rlk_url_without_password(&u);
        if (used)
            rlk_url_free(&u);
        bad |= rlk_cli_env_add(list, &n, MAX, "RLK_URL", rlk_cli_g.keep_env ? used : pub);
        free(pub);
    }
    /* How to reach and trust the server: always (as the URL without its password). */
    bad |= rlk_cli_env_add(list, &n, MAX, "RLK_TLS", rlk_cli_g.tls ? "1" : NULL);
    bad |= rlk_cli_env_add_path(list, &n, MAX, "RLK_TLS_CACERT", rlk_cli_g.cacert);
    bad |= rlk_cli_env_add_path(list, &n, MAX, "RLK_TLS_CACERTDIR", rlk_cli_g.cacertdir);
    bad |= rlk_cli_env_add(list, &n, MAX, "RLK_TLS_SNI", rlk_cli_g.sni);
    bad |= rlk_cli_env_add(list, &n, MAX, "RLK_TLS_INSECURE", rlk_cli_g.insecure ? "1" : NULL);
    /* Where the credentials are: with --keep-env only, as the password itself. */
    if (rlk_cli_g.keep_env) {
        bad |= rlk_cli_env_add_path(list, &n, MAX, "RLK_PASSWORD_FILE", rlk_cli_g.password_file);
        bad |= rlk_cli_env_add_path(list, &n, MAX, "RLK_TLS_CERT", rlk_cli_g.cert);
        bad |= rlk_cli_env_add_path(list, &n, MAX, "RLK_TLS_KEY", rlk_cli_g.key);
        bad |= rlk_cli_env_add_path(list, &n, MAX, "RLK_TLS_KEY_PASSWORD_FILE",
                                    rlk_cli_g.key_password_file);
    }
    if (bad) {
        rlk_cli_env_list_free(list);
        return NULL;
    }
    return list;
}
