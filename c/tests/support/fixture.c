/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fixture.c - start, stop, restart and pause real redis-servers for tests.
 * See fixture.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "fixture.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <arpa/inet.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define FX_MAX_SERVERS 32
#define FX_READY_TIMEOUT_MS 10000
#define FX_STOP_TIMEOUT_MS 5000
#define FX_START_ATTEMPTS 20
#define FX_PORT_LOW 20000
#define FX_PORT_SPAN 12000 /* below Linux's default ephemeral range (32768+) */

/* ------------------------------------------------------------ registry */

/* A copy of what cleanup needs, so that a server struct that went out of
 * scope (a test that returned early) can still be cleaned up. */
typedef struct fx_entry {
    volatile pid_t pid;
    pid_t owner; /* the process that started it: only it cleans up */
    int used;
    char dir[RLK_FX_PATH_MAX];
    char log_path[RLK_FX_PATH_MAX];
    char sock_path[RLK_FX_PATH_MAX];
    char conf_path[RLK_FX_PATH_MAX];
} fx_entry;

static fx_entry fx_registry[FX_MAX_SERVERS];
static int fx_cleanup_installed;

/* Signals whose default action ends the process. The crash signals are
 * also taken over from a handler already installed (a sanitizer's, say),
 * which is called after the cleanup; the others only when at SIG_DFL, so a
 * program that handles or ignores them (SIGPIPE, SIGTERM) keeps doing so. */
static const struct {
    int sig;
    int chain; /* 1: take over from an installed handler and call it */
} fx_fatal_signals[] = {
    {SIGINT, 0},  {SIGTERM, 0}, {SIGHUP, 0}, {SIGQUIT, 0}, {SIGPIPE, 0},
    {SIGABRT, 1}, {SIGSEGV, 1}, {SIGBUS, 1}, {SIGFPE, 1},  {SIGILL, 1},
};
#define FX_NSIGNALS (sizeof fx_fatal_signals / sizeof fx_fatal_signals[0])
static struct sigaction fx_old_actions[FX_NSIGNALS];

/* A forked child inherits a copy of its parent's entries; they are not its own. */
static int fx_entry_mine(const fx_entry *e)
{
    return e->used && e->owner == getpid();
}

static fx_entry *fx_registry_find(const char *dir)
{
    for (int i = 0; i < FX_MAX_SERVERS; i++) {
        if (fx_entry_mine(&fx_registry[i]) && strcmp(fx_registry[i].dir, dir) == 0)
            return &fx_registry[i];
    }
    return NULL;
}

static int fx_registry_add(const rlk_fx_server *s)
{
    for (int i = 0; i < FX_MAX_SERVERS; i++) {
        fx_entry *e = &fx_registry[i];
        if (e->used)
            continue;
        memcpy(e->dir, s->dir, sizeof e->dir);
        memcpy(e->log_path, s->log_path, sizeof e->log_path);
        memcpy(e->sock_path, s->sock_path, sizeof e->sock_path);
        memcpy(e->conf_path, s->conf_path, sizeof e->conf_path);
        e->pid = 0;
        e->owner = getpid();
        e->used = 1;
        return 0;
    }
    fprintf(stderr, "fixture: more than %d servers at once\n", FX_MAX_SERVERS);
    return -1;
}

static void fx_registry_set_pid(const char *dir, pid_t pid)
{
    fx_entry *e = fx_registry_find(dir);
    if (e)
        e->pid = pid;
}

static void fx_registry_remove(const char *dir)
{
    fx_entry *e = fx_registry_find(dir);
    if (e) {
        e->used = 0;
        e->pid = 0;
    }
}

/* Only async-signal-safe calls: kill, waitpid, unlink, rmdir. */
static void fx_cleanup_from_signal(void)
{
    for (int i = 0; i < FX_MAX_SERVERS; i++) {
        fx_entry *e = &fx_registry[i];
        if (!fx_entry_mine(e))
            continue;
        if (e->pid > 0) {
            kill(e->pid, SIGKILL);
            waitpid(e->pid, NULL, 0);
        }
        unlink(e->log_path);
        if (e->sock_path[0])
            unlink(e->sock_path);
        if (e->conf_path[0])
            unlink(e->conf_path);
        rmdir(e->dir);
        e->pid = 0;
        e->used = 0;
    }
}

static void fx_signal_handler(int sig, siginfo_t *info, void *uctx)
{
    const struct sigaction *old = NULL;

    fx_cleanup_from_signal();
    for (size_t i = 0; i < FX_NSIGNALS; i++)
        if (fx_fatal_signals[i].sig == sig)
            old = &fx_old_actions[i];
    if (old && (old->sa_flags & SA_SIGINFO)) {
        sigaction(sig, old, NULL);
        old->sa_sigaction(sig, info, uctx);
        return;
    }
    if (old && old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN) {
        sigaction(sig, old, NULL);
        old->sa_handler(sig);
        return;
    }
    signal(sig, SIG_DFL);
    raise(sig); /* delivered when the handler returns: the default action */
}

static void fx_atexit(void)
{
    rlk_fx_stop_all(); /* only this process's own servers */
}

static void fx_install_cleanup(void)
{
    struct sigaction sa;

    if (fx_cleanup_installed)
        return;
    fx_cleanup_installed = 1;
    atexit(fx_atexit);
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = fx_signal_handler;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < FX_NSIGNALS; i++) {
        struct sigaction *old = &fx_old_actions[i];
        int is_default;
        if (sigaction(fx_fatal_signals[i].sig, NULL, old) != 0)
            continue;
        is_default = !(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL;
        if (is_default || (fx_fatal_signals[i].chain && old->sa_handler != SIG_IGN))
            sigaction(fx_fatal_signals[i].sig, &sa, NULL);
    }
}

/* ------------------------------------------------------------ time */

long long rlk_fx_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

long long rlk_fx_now_ms(void)
{
    return rlk_fx_now_ns() / 1000000LL;
}

void rlk_fx_sleep_ms(long ms)
{
    struct timespec ts;
    ts.tv_sec = ms / 1000;
    ts.tv_nsec = (ms % 1000) * 1000000L;
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

/* ------------------------------------------------------------ helpers */

#ifndef RLK_FX_REDIS_SERVER
#define RLK_FX_REDIS_SERVER "redis-server"
#endif
#ifndef RLK_FX_REDIS_CLI
#define RLK_FX_REDIS_CLI "redis-cli"
#endif
#ifndef RLK_FX_VALKEY_SERVER
#define RLK_FX_VALKEY_SERVER "valkey-server"
#endif
#ifndef RLK_FX_VALKEY_CLI
#define RLK_FX_VALKEY_CLI "valkey-cli"
#endif
/* Where tools/bootstrap builds the servers Debian 12 has no package for (docs/servers.md). */
#ifndef RLK_FX_SERVERS_DIR
#define RLK_FX_SERVERS_DIR "/var/cache/rlk-servers"
#endif

/* The servers of the test matrix: $RLK_TEST_SERVER's value, the family (the server's own
 * name, which INFO and `rlk check` report), the environment variables that name its binaries,
 * and, for those built by tools/bootstrap, the link under the servers directory. */
typedef struct fx_server_def {
    const char *name, *family, *server_env, *cli_env, *server, *cli, *built;
} fx_server_def;

static const fx_server_def fx_servers[] = {
    {"redis", "redis", "RLK_REDIS_SERVER", "RLK_REDIS_CLI", RLK_FX_REDIS_SERVER, RLK_FX_REDIS_CLI, NULL},
    {"valkey", "valkey", "RLK_VALKEY_SERVER", "RLK_VALKEY_CLI", RLK_FX_VALKEY_SERVER, RLK_FX_VALKEY_CLI,
     NULL},
    {"redis8", "redis", "RLK_REDIS8_SERVER", "RLK_REDIS8_CLI", "redis-server", "redis-cli", "redis8"},
    {"valkey9", "valkey", "RLK_VALKEY9_SERVER", "RLK_VALKEY9_CLI", "valkey-server", "valkey-cli",
     "valkey9"},
};

static const fx_server_def *fx_server_def_get(void)
{
    const char *k = getenv("RLK_TEST_SERVER");
    size_t i;

    if (!k || !k[0])
        return &fx_servers[0];
    for (i = 0; i < sizeof fx_servers / sizeof fx_servers[0]; i++)
        if (strcmp(k, fx_servers[i].name) == 0)
            return &fx_servers[i];
    fprintf(stderr, "fixture: RLK_TEST_SERVER must be redis, valkey, redis8 or valkey9, not \"%s\"\n", k);
    exit(2);
}

/* $env when set and not empty; else, for a built server, DIR/LINK/bin/PROG with DIR
 * $RLK_SERVERS_DIR or the build's RLK_FX_SERVERS_DIR; else the build's path. slot (0 the
 * server, 1 the cli) keeps each built path in a buffer of its own, so a returned pointer stays
 * valid. */
static const char *fx_binary_of(const char *env, const char *built, const char *prog, int slot)
{
    static char paths[2][RLK_FX_PATH_MAX];
    const char *v = getenv(env), *dir;

    if (v && v[0])
        return v;
    if (!built)
        return prog;
    dir = getenv("RLK_SERVERS_DIR");
    if (!dir || !dir[0])
        dir = RLK_FX_SERVERS_DIR;
    snprintf(paths[slot], RLK_FX_PATH_MAX, "%s/%s/bin/%s", dir, built, prog);
    return paths[slot];
}

const char *rlk_fx_server_kind(void)
{
    return fx_server_def_get()->family;
}

const char *rlk_fx_server_name(void)
{
    return fx_server_def_get()->name;
}

int rlk_fx_is_valkey(void)
{
    return strcmp(rlk_fx_server_kind(), "valkey") == 0;
}

const char *rlk_fx_redis_server_path(void)
{
    const fx_server_def *d = fx_server_def_get();

    return fx_binary_of(d->server_env, d->built, d->server, 0);
}

const char *rlk_fx_redis_cli_path(void)
{
    const fx_server_def *d = fx_server_def_get();

    return fx_binary_of(d->cli_env, d->built, d->cli, 1);
}

/* 1 when path names an executable file, directly (a '/' in it) or on $PATH. */
static int fx_executable(const char *path)
{
    const char *dirs = getenv("PATH");
    char full[1024];

    if (strchr(path, '/'))
        return access(path, X_OK) == 0;
    while (dirs && *dirs) {
        size_t n = strcspn(dirs, ":");

        if (snprintf(full, sizeof full, "%.*s/%s", (int)n, n ? dirs : ".", path)
                < (int)sizeof full && access(full, X_OK) == 0)
            return 1;
        dirs += n;
        if (*dirs == ':')
            dirs++;
    }
    return 0;
}

void rlk_fx_require_server(void)
{
    static int checked;
    const char *server, *cli;

    if (checked)
        return;
    server = rlk_fx_redis_server_path();
    cli = rlk_fx_redis_cli_path();
    if (strcmp(rlk_fx_server_name(), "redis") != 0 && (!fx_executable(server) || !fx_executable(cli))) {
        fprintf(stderr, "SKIP: RLK_TEST_SERVER=%s but %s is not installed (tools/bootstrap "
                "installs Valkey 8 from bookworm-backports and builds redis8 and valkey9 from "
                "Debian's source packages: docs/servers.md)\n", rlk_fx_server_name(),
                fx_executable(server) ? cli : server);
        fflush(stderr);
        exit(RLK_FX_SKIP);
    }
    checked = 1;
    fprintf(stderr, "fixture: server under test: %s (%s)\n", rlk_fx_server_name(), server);
}

static unsigned long fx_random(void)
{
    static unsigned long state;
    if (state == 0)
        state = ((unsigned long)getpid() << 16) ^ (unsigned long)rlk_fx_now_ns() ^ 0x9e3779b9UL;
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return state;
}

static int fx_port_is_free(int port)
{
    struct sockaddr_in addr;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int ok;

    if (fd < 0)
        return 0;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_port = htons((unsigned short)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ok = bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
    close(fd);
    return ok;
}

int rlk_fx_free_port(void)
{
    for (int i = 0; i < 200; i++) {
        int port = FX_PORT_LOW + (int)(fx_random() % FX_PORT_SPAN);
        if (fx_port_is_free(port))
            return port;
    }
    fprintf(stderr, "fixture: no free loopback port found\n");
    return -1;
}

int rlk_fx_refused_port(void)
{
    for (int i = 0; i < 200; i++) {
        int port = FX_PORT_LOW + (int)(fx_random() % FX_PORT_SPAN);
        struct sockaddr_in addr;
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (fd < 0)
            break;
        memset(&addr, 0, sizeof addr);
        addr.sin_family = AF_INET;
        addr.sin_port = htons((unsigned short)port);
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0)
            return port; /* fd stays open (bound, not listening) until the process exits */
        close(fd);
    }
    fprintf(stderr, "fixture: no loopback port could be held\n");
    return -1;
}

static void fx_print_log_tail(const rlk_fx_server *s)
{
    char buf[2048];
    FILE *f = fopen(s->log_path, "r");
    size_t n;

    if (!f)
        return;
    if (fseek(f, 0, SEEK_END) == 0) {
        long size = ftell(f);
        if (size > (long)sizeof buf - 1)
            fseek(f, size - (long)sizeof buf + 1, SEEK_SET);
        else
            fseek(f, 0, SEEK_SET);
    }
    n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    fprintf(stderr, "fixture: --- tail of %s ---\n%s\nfixture: --- end of log ---\n",
            s->log_path, buf);
}

static int fx_log_contains(const rlk_fx_server *s, const char *needle)
{
    char line[1024];
    int found = 0;
    FILE *f = fopen(s->log_path, "r");

    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, needle) != NULL;
    fclose(f);
    return found;
}

/* $RLK_FX_KEEP set: a stopped server's directory (its log) stays, for a post-mortem. */
static void fx_remove_dir(const char *dir)
{
    DIR *d;
    struct dirent *ent;
    char path[RLK_FX_PATH_MAX * 2];

    if (getenv("RLK_FX_KEEP")) {
        fprintf(stderr, "fixture: kept %s\n", dir);
        return;
    }
    d = opendir(dir);
    if (d) {
        while ((ent = readdir(d)) != NULL) {
            if (strcmp(ent->d_name, ".") == 0 || strcmp(ent->d_name, "..") == 0)
                continue;
            if (snprintf(path, sizeof path, "%s/%s", dir, ent->d_name) < (int)sizeof path)
                unlink(path);
        }
        closedir(d);
    }
    if (rmdir(dir) != 0 && errno != ENOENT)
        fprintf(stderr, "fixture: could not remove %s: %s\n", dir, strerror(errno));
}

static void fx_free_argv(rlk_fx_server *s)
{
    for (int i = 0; i < s->argc; i++) {
        free(s->argv[i]);
        s->argv[i] = NULL;
    }
    s->argc = 0;
}

static int fx_push_arg(rlk_fx_server *s, const char *arg)
{
    int max = (int)(sizeof s->argv / sizeof s->argv[0]) - 1; /* keep a NULL */
    if (s->argc >= max) {
        fprintf(stderr, "fixture: too many redis-server arguments\n");
        return -1;
    }
    s->argv[s->argc] = strdup(arg);
    if (!s->argv[s->argc])
        return -1;
    s->argc++;
    s->argv[s->argc] = NULL;
    return 0;
}

/* Pushes each space-separated word of line. */
static int fx_push_words(rlk_fx_server *s, const char *line)
{
    char word[256];
    const char *p = line;

    while (*p) {
        size_t n = 0;
        while (*p == ' ')
            p++;
        while (p[n] && p[n] != ' ')
            n++;
        if (n == 0)
            break;
        if (n >= sizeof word) {
            fprintf(stderr, "fixture: argument too long in \"%s\"\n", line);
            return -1;
        }
        memcpy(word, p, n);
        word[n] = '\0';
        if (fx_push_arg(s, word) != 0)
            return -1;
        p += n;
    }
    return 0;
}

const char *rlk_fx_tls_dir(void)
{
    const char *d = getenv("RLK_TEST_TLS");

    return d && d[0] ? d : NULL;
}

/* --port 0 --tls-port P and the certificates of the TLS directory. */
static int fx_push_tls(rlk_fx_server *s, const rlk_fx_config *cfg, const char *port)
{
    const char *dir = rlk_fx_tls_dir(), *pair = cfg->tls_cert ? cfg->tls_cert : "server";
    char path[RLK_FX_PATH_MAX + 16];
    int rc = 0;

    rc |= fx_push_words(s, "--port 0 --tls-port");
    rc |= fx_push_arg(s, port);
    snprintf(path, sizeof path, "%s/%s.crt", dir, pair);
    rc |= fx_push_arg(s, "--tls-cert-file");
    rc |= fx_push_arg(s, path);
    snprintf(path, sizeof path, "%s/%s.key", dir, pair);
    rc |= fx_push_arg(s, "--tls-key-file");
    rc |= fx_push_arg(s, path);
    snprintf(path, sizeof path, "%s/ca.crt", dir);
    rc |= fx_push_arg(s, "--tls-ca-cert-file");
    rc |= fx_push_arg(s, path);
    rc |= fx_push_words(s, cfg->tls_auth_clients ? "--tls-auth-clients yes"
                                                 : "--tls-auth-clients no");
    rc |= fx_push_words(s, "--tls-replication yes");
    if (cfg->cluster)
        rc |= fx_push_words(s, "--tls-cluster yes");
    if (!cfg->unixsocket) {     /* else the test's own socket is the control one */
        rc |= fx_push_arg(s, "--unixsocket");
        rc |= fx_push_arg(s, s->ctl_path);
        rc |= fx_push_words(s, "--unixsocketperm 700");
    }
    return rc;
}

static int fx_build_argv(rlk_fx_server *s, const rlk_fx_config *cfg)
{
    char port[16];
    int rc = 0;

    fx_free_argv(s);
    snprintf(port, sizeof port, "%d", s->port);
    rc |= fx_push_arg(s, rlk_fx_redis_server_path());
    if (cfg->sentinel_conf) {
        rc |= fx_push_arg(s, s->conf_path);
        rc |= fx_push_arg(s, "--sentinel");
    }
    rc |= fx_push_words(s, "--bind 127.0.0.1");
    if (s->tls) {
        rc |= fx_push_tls(s, cfg, port);
    } else {
        rc |= fx_push_arg(s, "--port");
        rc |= fx_push_arg(s, port);
    }
    rc |= fx_push_arg(s, "--save");
    rc |= fx_push_arg(s, "");
    rc |= fx_push_words(s, "--appendonly no --daemonize no --dir");
    rc |= fx_push_arg(s, s->dir);
    if (cfg->unixsocket) {
        rc |= fx_push_arg(s, "--unixsocket");
        rc |= fx_push_arg(s, s->sock_path);
        rc |= fx_push_words(s, "--unixsocketperm 700");
    }
    if (cfg->requirepass) {
        rc |= fx_push_arg(s, "--requirepass");
        rc |= fx_push_arg(s, cfg->requirepass);
    }
    if (cfg->acl_user) {
        rc |= fx_push_arg(s, "--user");
        rc |= fx_push_words(s, cfg->acl_user);
    }
    if (cfg->cluster) {
        char bus[16], timeout[24];

        snprintf(bus, sizeof bus, "%d", s->bus_port);
        snprintf(timeout, sizeof timeout, "%ld",
                 cfg->cluster_node_timeout_ms > 0 ? cfg->cluster_node_timeout_ms : 2000);
        rc |= fx_push_words(s, "--cluster-enabled yes --cluster-config-file");
        rc |= fx_push_arg(s, s->conf_path);
        rc |= fx_push_arg(s, "--cluster-port");
        rc |= fx_push_arg(s, bus);
        rc |= fx_push_arg(s, "--cluster-node-timeout");
        rc |= fx_push_arg(s, timeout);
    }
    for (int i = 0; cfg->extra && cfg->extra[i]; i++)
        rc |= fx_push_arg(s, cfg->extra[i]);
    return rc ? -1 : 0;
}

/* ------------------------------------------------------------ processes */

static void fx_exec_child(const rlk_fx_server *s, pid_t parent)
{
    sigset_t none;
    int fd;

#ifdef __linux__
    /* The server dies with the test, even when the test is SIGKILLed. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(126);
#else
    (void)parent;
#endif
    setpgid(0, 0); /* a terminal's ^C goes to the test, which cleans up */
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    fd = open(s->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
    if (fd >= 0) {
        dup2(fd, STDOUT_FILENO);
        dup2(fd, STDERR_FILENO);
        close(fd);
    }
    fd = open("/dev/null", O_RDONLY);
    if (fd >= 0) {
        dup2(fd, STDIN_FILENO);
        close(fd);
    }
    execvp(s->argv[0], s->argv);
    fprintf(stderr, "fixture: exec %s: %s\n", s->argv[0], strerror(errno));
    _exit(127);
}

static redisContext *fx_connect_port(const rlk_fx_server *s, const char *password)
{
    struct timeval tv = {2, 0};
    redisContext *ctx = s->tls ? redisConnectUnixWithTimeout(s->ctl_path, tv)
                               : redisConnectWithTimeout("127.0.0.1", s->port, tv);
    redisReply *r;

    if (!ctx)
        return NULL;
    if (ctx->err) {
        redisFree(ctx);
        return NULL;
    }
    redisSetTimeout(ctx, (struct timeval){5, 0});
    if (password && password[0]) {
        r = redisCommand(ctx, "AUTH %s", password);
        if (!r || r->type == REDIS_REPLY_ERROR) {
            if (r)
                freeReplyObject(r);
            redisFree(ctx);
            return NULL;
        }
        freeReplyObject(r);
    }
    return ctx;
}

/* 1: the server on s->port is ours (INFO's process_id is s->pid). */
static int fx_is_ours_and_ready(const rlk_fx_server *s)
{
    redisContext *ctx = fx_connect_port(s, s->password);
    redisReply *r;
    char want[40];
    int ok = 0;

    if (!ctx)
        return 0;
    r = redisCommand(ctx, "INFO server");
    if (r && r->type == REDIS_REPLY_STRING) {
        snprintf(want, sizeof want, "process_id:%ld\r", (long)s->pid);
        ok = strstr(r->str, want) != NULL;
    }
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
    return ok;
}

/* 0: ready; 1: the server exited because the port was taken; -1: failure. */
static int fx_wait_ready(rlk_fx_server *s)
{
    long long deadline = rlk_fx_now_ms() + FX_READY_TIMEOUT_MS;
    int status;

    while (rlk_fx_now_ms() < deadline) {
        if (waitpid(s->pid, &status, WNOHANG) == s->pid) {
            s->pid = 0;
            fx_registry_set_pid(s->dir, 0);
            if (fx_log_contains(s, "Address already in use"))
                return 1;
            fprintf(stderr, "fixture: redis-server exited during start-up (status %d)\n",
                    status);
            fx_print_log_tail(s);
            return -1;
        }
        if (fx_is_ours_and_ready(s))
            return 0;
        rlk_fx_sleep_ms(5);
    }
    fprintf(stderr, "fixture: redis-server pid %ld not answering after %d ms\n",
            (long)s->pid, FX_READY_TIMEOUT_MS);
    fx_print_log_tail(s);
    return -1;
}

static int fx_spawn(rlk_fx_server *s)
{
    pid_t parent = getpid();
    pid_t pid;

    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "fixture: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0)
        fx_exec_child(s, parent);
    s->pid = pid;
    fx_registry_set_pid(s->dir, pid);
    return 0;
}

/* Spawns and waits; 0 ready, 1 port collision, -1 failure. */
static int fx_spawn_ready(rlk_fx_server *s)
{
    int rc;

    if (fx_spawn(s) != 0)
        return -1;
    rc = fx_wait_ready(s);
    if (rc < 0 && s->pid > 0) {
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
        fx_registry_set_pid(s->dir, 0);
    }
    return rc;
}

/* Ends the process (not the temp dir): SIGTERM, bounded wait, SIGKILL. */
static int fx_terminate(rlk_fx_server *s)
{
    long long deadline;
    int rc = 0;

    if (s->pid <= 0)
        return 0;
    kill(s->pid, SIGTERM);
    kill(s->pid, SIGCONT); /* a stopped server handles SIGTERM only once running */
    deadline = rlk_fx_now_ms() + FX_STOP_TIMEOUT_MS;
    while (waitpid(s->pid, NULL, WNOHANG) == 0) {
        if (rlk_fx_now_ms() >= deadline) {
            fprintf(stderr, "fixture: redis-server pid %ld ignored SIGTERM; SIGKILL\n",
                    (long)s->pid);
            kill(s->pid, SIGKILL);
            waitpid(s->pid, NULL, 0);
            rc = -1;
            break;
        }
        rlk_fx_sleep_ms(2);
    }
    s->pid = 0;
    fx_registry_set_pid(s->dir, 0);
    return rc;
}

/* ------------------------------------------------------------ public */

void rlk_fx_config_init(rlk_fx_config *cfg)
{
    memset(cfg, 0, sizeof *cfg);
}

static int fx_make_dir(rlk_fx_server *s, const rlk_fx_config *cfg)
{
    const char *tmp = getenv("TMPDIR");
    char *made;

    if (!tmp || !tmp[0])
        tmp = "/tmp";
    if (snprintf(s->dir, sizeof s->dir, "%s/rlk-it-XXXXXX", tmp) >= (int)sizeof s->dir) {
        fprintf(stderr, "fixture: TMPDIR too long\n");
        return -1;
    }
    made = mkdtemp(s->dir);
    if (!made) {
        fprintf(stderr, "fixture: mkdtemp %s: %s\n", s->dir, strerror(errno));
        s->dir[0] = '\0';
        return -1;
    }
    if (snprintf(s->log_path, sizeof s->log_path, "%s/redis.log", s->dir)
            >= (int)sizeof s->log_path ||
        snprintf(s->sock_path, sizeof s->sock_path, "%s/redis.sock", s->dir)
            >= (int)sizeof s->sock_path ||
        strlen(s->sock_path) >= 100) {
        fprintf(stderr, "fixture: temp dir path too long: %s\n", s->dir);
        return -1;
    }
    if (!cfg->unixsocket)
        s->sock_path[0] = '\0';
    s->tls = cfg->tls > 0 || (cfg->tls == 0 && rlk_fx_tls_dir());
    s->ctl_path[0] = '\0';
    if (s->tls) {
        char ca[RLK_FX_PATH_MAX + 16];

        if (!rlk_fx_tls_dir()) {
            fprintf(stderr, "fixture: a TLS server needs $RLK_TEST_TLS (a tools/tls-certs directory)\n");
            return -1;
        }
        if (snprintf(s->ctl_path, sizeof s->ctl_path, "%s/%s", s->dir,
                     cfg->unixsocket ? "redis.sock" : "ctl.sock")
                >= (int)sizeof s->ctl_path || strlen(s->ctl_path) >= 100) {
            fprintf(stderr, "fixture: temp dir path too long: %s\n", s->dir);
            return -1;
        }
        snprintf(ca, sizeof ca, "%s/ca.crt", rlk_fx_tls_dir());
        setenv("RLK_TLS_CACERT", ca, 0);
    }
    if (cfg->cluster || cfg->sentinel_conf) {
        if (snprintf(s->conf_path, sizeof s->conf_path, "%s/%s", s->dir,
                     cfg->cluster ? "nodes.conf" : "sentinel.conf") >= (int)sizeof s->conf_path) {
            fprintf(stderr, "fixture: temp dir path too long: %s\n", s->dir);
            return -1;
        }
    }
    return 0;
}

/* The sentinel's config file, written afresh before each start attempt. */
static int fx_write_conf(const rlk_fx_server *s, const char *text)
{
    FILE *f = fopen(s->conf_path, "w");
    int ok;

    if (!f) {
        fprintf(stderr, "fixture: %s: %s\n", s->conf_path, strerror(errno));
        return -1;
    }
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int fx_start_config(rlk_fx_server *s, const rlk_fx_config *cfg)
{
    int rc = 1;

    if (cfg->requirepass)
        snprintf(s->password, sizeof s->password, "%s", cfg->requirepass);
    if (fx_make_dir(s, cfg) != 0 || fx_registry_add(s) != 0)
        return -1;
    for (int attempt = 0; attempt < FX_START_ATTEMPTS && rc == 1; attempt++) {
        unlink(s->log_path); /* a fresh log: "in use" must be this attempt's */
        if (s->conf_path[0])
            unlink(s->conf_path);
        s->port = rlk_fx_free_port();
        s->bus_port = 0;
        if (cfg->cluster) {
            for (int i = 0; i < 10 && (s->bus_port == 0 || s->bus_port == s->port); i++)
                s->bus_port = rlk_fx_free_port();
        }
        if (s->port < 0 || s->bus_port < 0 || fx_build_argv(s, cfg) != 0)
            return -1;
        if (cfg->sentinel_conf && fx_write_conf(s, cfg->sentinel_conf) != 0)
            return -1;
        rc = fx_spawn_ready(s);
    }
    if (rc == 1)
        fprintf(stderr, "fixture: every port tried was taken\n");
    return rc == 0 ? 0 : -1;
}

int rlk_fx_start(rlk_fx_server *s, const rlk_fx_config *cfg)
{
    rlk_fx_config defaults;

    if (!cfg) {
        rlk_fx_config_init(&defaults);
        cfg = &defaults;
    }
    memset(s, 0, sizeof *s);
    rlk_fx_require_server();
    fx_install_cleanup();
    if (fx_start_config(s, cfg) != 0) {
        rlk_fx_stop(s);
        return -1;
    }
    return 0;
}

int rlk_fx_start_n(rlk_fx_server *servers, int n, const rlk_fx_config *cfg)
{
    for (int i = 0; i < n; i++) {
        if (rlk_fx_start(&servers[i], cfg) != 0) {
            rlk_fx_stop_n(servers, i);
            return -1;
        }
    }
    return 0;
}

int rlk_fx_stop(rlk_fx_server *s)
{
    int rc = fx_terminate(s);

    if (s->dir[0]) {
        fx_remove_dir(s->dir);
        fx_registry_remove(s->dir);
        s->dir[0] = '\0';
    }
    fx_free_argv(s);
    return rc;
}

void rlk_fx_stop_n(rlk_fx_server *servers, int n)
{
    for (int i = 0; i < n; i++)
        rlk_fx_stop(&servers[i]);
}

void rlk_fx_stop_all(void)
{
    for (int i = 0; i < FX_MAX_SERVERS; i++) {
        fx_entry *e = &fx_registry[i];
        rlk_fx_server tmp;

        if (!fx_entry_mine(e))
            continue;
        memset(&tmp, 0, sizeof tmp);
        tmp.pid = e->pid;
        memcpy(tmp.dir, e->dir, sizeof tmp.dir);
        if (tmp.pid > 0)
            fprintf(stderr, "fixture: stopping left-over redis-server pid %ld\n",
                    (long)tmp.pid);
        rlk_fx_stop(&tmp);
    }
}

int rlk_fx_restart(rlk_fx_server *s)
{
    long long deadline;
    int rc;

    if (!s->dir[0] || s->argc == 0) {
        fprintf(stderr, "fixture: restart of a server that was never started\n");
        return -1;
    }
    fx_terminate(s);
    /* The port is ours; only a slow release of the old socket can delay it. */
    deadline = rlk_fx_now_ms() + 3000;
    do {
        rc = fx_spawn_ready(s);
        if (rc == 1)
            rlk_fx_sleep_ms(50);
    } while (rc == 1 && rlk_fx_now_ms() < deadline);
    if (rc != 0)
        fprintf(stderr, "fixture: restart on port %d failed\n", s->port);
    return rc == 0 ? 0 : -1;
}

int rlk_fx_crash(rlk_fx_server *s)
{
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
    fx_registry_set_pid(s->dir, 0);
    return 0;
}

/* Waits (WUNTRACED / WCONTINUED) until the kernel reports the new state. */
static int fx_signal_and_wait(rlk_fx_server *s, int sig, int flag)
{
    int status;

    if (s->pid <= 0 || kill(s->pid, sig) != 0)
        return -1;
    for (;;) {
        pid_t r = waitpid(s->pid, &status, flag);
        if (r == s->pid)
            return (flag == WUNTRACED ? WIFSTOPPED(status) : WIFCONTINUED(status)) ? 0 : -1;
        if (r < 0 && errno != EINTR)
            return -1;
    }
}

int rlk_fx_pause(rlk_fx_server *s)
{
    return fx_signal_and_wait(s, SIGSTOP, WUNTRACED);
}

int rlk_fx_resume(rlk_fx_server *s)
{
    return fx_signal_and_wait(s, SIGCONT, WCONTINUED);
}

int rlk_fx_stopped(const rlk_fx_server *s)
{
    char path[64], buf[512];

    snprintf(path, sizeof path, "/proc/%d/stat", (int)s->pid);
    for (long long until = rlk_fx_now_ms() + 5000; rlk_fx_now_ms() < until;) {
        FILE *f = fopen(path, "r");
        char *p = NULL;

        if (f && fgets(buf, sizeof buf, f))
            p = strrchr(buf, ')');
        if (f)
            fclose(f);
        if (p && (p[2] == 'T' || p[2] == 't'))
            return 1;
        rlk_fx_sleep_ms(2);
    }
    return 0;
}

redisContext *rlk_fx_connect(const rlk_fx_server *s)
{
    redisContext *ctx = fx_connect_port(s, s->password);
    if (!ctx)
        fprintf(stderr, "fixture: cannot connect to 127.0.0.1:%d%s\n", s->port,
                s->tls ? " (its control socket)" : "");
    return ctx;
}

redisReply *rlk_fx_vcommand(const rlk_fx_server *s, const char *fmt, va_list ap)
{
    redisContext *ctx = rlk_fx_connect(s);
    redisReply *r;

    if (!ctx)
        return NULL;
    r = redisvCommand(ctx, fmt, ap);
    redisFree(ctx);
    return r;
}

int rlk_fx_replicated(const rlk_fx_server *master, int n, long timeout_ms)
{
    redisContext *ctx = rlk_fx_connect(master);
    redisReply *r;
    int acks = -1;

    if (!ctx)
        return -1;
    r = redisCommand(ctx, "INCR rlk:fx:replicated");
    if (r && r->type == REDIS_REPLY_INTEGER) {
        freeReplyObject(r);
        r = redisCommand(ctx, "WAIT %d %ld", n, timeout_ms);
        if (r && r->type == REDIS_REPLY_INTEGER)
            acks = (int)r->integer;
    }
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
    return acks;
}

redisReply *rlk_fx_command(const rlk_fx_server *s, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    va_start(ap, fmt);
    r = rlk_fx_vcommand(s, fmt, ap);
    va_end(ap);
    return r;
}

int rlk_fx_role(const rlk_fx_server *s)
{
    redisReply *r = s->pid > 0 ? rlk_fx_command(s, "ROLE") : NULL;
    int role = 0;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
        r->element[0]->type == REDIS_REPLY_STRING)
        role = strcmp(r->element[0]->str, "master") == 0 ? 'M'
             : strcmp(r->element[0]->str, "slave") == 0 ? 'S' : 0;
    if (r)
        freeReplyObject(r);
    return role;
}

int rlk_fx_client_pause(const rlk_fx_server *s, long ms)
{
    redisReply *r = rlk_fx_command(s, "CLIENT PAUSE %ld ALL", ms);
    int ok = r && r->type == REDIS_REPLY_STATUS;

    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

redisContext *rlk_fx_sleep_begin(const rlk_fx_server *s, long ms)
{
    redisContext *probe = rlk_fx_connect(s), *x = rlk_fx_connect(s);
    redisReply *r = NULL;
    struct pollfd p;
    long long probe_id;
    int done = 0;
    char b;

    if (!probe || !x || !(r = redisCommand(probe, "CLIENT ID")) || r->type != REDIS_REPLY_INTEGER)
        goto fail;
    probe_id = r->integer;
    freeReplyObject(r);
    r = NULL;
    redisAppendCommand(x, "CLIENT KILL ID %lld", probe_id);
    redisAppendCommand(x, "DEBUG SLEEP %.3f", ms / 1000.0);
    while (!done)
        if (redisBufferWrite(x, &done) != REDIS_OK)
            goto fail;
    p.fd = probe->fd;
    p.events = POLLIN;
    if (poll(&p, 1, 10000) != 1 || read(probe->fd, &b, 1) != 0)
        goto fail;
    redisFree(probe);
    return x;
fail:
    fprintf(stderr, "rlk_fx_sleep_begin: could not put the server to sleep\n");
    if (r)
        freeReplyObject(r);
    if (probe)
        redisFree(probe);
    if (x)
        redisFree(x);
    return NULL;
}

void rlk_fx_sleep_end(redisContext *x)
{
    struct timeval tv = {10, 0};
    void *r;

    if (!x)
        return;
    redisSetTimeout(x, tv);
    for (int i = 0; i < 2; i++)
        if (redisGetReply(x, &r) == REDIS_OK)
            freeReplyObject(r);
    redisFree(x);
}

int rlk_fx_url(const rlk_fx_server *s, int db, char *buf, size_t len)
{
    const char *scheme = s->tls ? "rediss" : "redis";
    int n = db < 0 ? snprintf(buf, len, "%s://127.0.0.1:%d", scheme, s->port)
                   : snprintf(buf, len, "%s://127.0.0.1:%d/%d", scheme, s->port, db);
    return (n < 0 || (size_t)n >= len) ? -1 : 0;
}

int rlk_fx_unix_url(const rlk_fx_server *s, int db, char *buf, size_t len)
{
    int n;

    if (!s->sock_path[0])
        return -1;
    n = db < 0 ? snprintf(buf, len, "unix://%s", s->sock_path)
               : snprintf(buf, len, "unix://%s?db=%d", s->sock_path, db);
    return (n < 0 || (size_t)n >= len) ? -1 : 0;
}
