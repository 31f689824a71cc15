/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_tls.c - what only TLS has, against TLS-only redis-servers
 * the fixture starts with the certificates of $RLK_TEST_TLS (tools/tls-certs,
 * made at test time).
 *
 *   it_tls errors RLK   every bad certificate, key and option: the documented
 *                       code and one line, within the connect timeout, the
 *                       OpenSSL error queue left empty; --sni, --insecure,
 *                       mutual TLS with plain and encrypted keys, the CLI
 *                       (lock over rediss://, exit codes, --verbose, check)
 *   it_tls faults RLK   handshakes counted against connections, a connection
 *                       cut in the middle of a reply, a server killed and
 *                       restarted, no thread per connection
 *
 * Exit 77 (skipped) without $RLK_TEST_TLS.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <openssl/err.h>

#include <hiredis/hiredis.h>
#include <rlk.h>

#include "check.h"
#include "fixture.h"
#include "tk_proxy.h"
#include "tk_util.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/tls.h"
#include "client/transport.h"

#define CONNECT_MS 1500
/* A failure must come within the connect timeout; the slack is for a loaded machine. */
#define WITHIN_MS (CONNECT_MS + 3000)

static const char *rlk_bin;
static const char *demo_bin;    /* faults: rlk-demo, or NULL */
static int child_keeps_ca;      /* run_rlk: pass $RLK_TLS_CACERT on (the demo takes no --cacert) */
static char tls_dir[RLK_FX_PATH_MAX];

/* DIR/name, one stable string per name (the options keep the pointers). */
static const char *tls_file(const char *name)
{
    static char buf[32][RLK_FX_PATH_MAX + 64];
    static int used;

    for (int i = 0; i < used; i++) {
        const char *slash = strrchr(buf[i], '/');

        if (slash && strcmp(slash + 1, name) == 0)
            return buf[i];
    }
    if (used == 32)
        abort();
    snprintf(buf[used], sizeof buf[0], "%s/%s", tls_dir, name);
    return buf[used++];
}

typedef struct tls_opts {
    const char *cacert, *cert, *key, *pass, *sni;
    int insecure;
} tls_opts;

/* A client on url with the given TLS settings (nothing from the environment:
 * the fixture's $RLK_TLS_CACERT is unset by main). */
static rlk_client *tls_connect(const char *url, const tls_opts *t)
{
    rlk_options o;

    rlk_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = CONNECT_MS;
    o.command_timeout_ms = 5000;
    o.pool_size = 2;
    if (t) {
        o.tls_cacert = t->cacert;
        o.tls_cert = t->cert;
        o.tls_key = t->key;
        o.tls_key_password_file = t->pass;
        o.tls_sni = t->sni;
        o.tls_insecure = t->insecure;
    }
    return rlk_connect(&o);
}

static int client_works(rlk_client *c, const char *name)
{
    rlk_lock *l = rlk_lock_new(c, name);
    int ok = l && rlk_lock_try_lock(l, 0, 5000) == RLK_OK && rlk_lock_unlock(l) == RLK_OK;

    if (!ok)
        fprintf(stderr, "    %s: %s\n", name, rlk_errstr(c));
    rlk_lock_free(l);
    return ok;
}

/* The OpenSSL error queue of this thread is empty (nothing to poison the next
 * connection made on it). */
static void check_err_queue(const char *what)
{
    unsigned long e = ERR_peek_error();

    CHECKF(e == 0, "%s: OpenSSL error left on the thread's queue: %s", what,
           e ? ERR_reason_error_string(e) : "");
    ERR_clear_error();
}

/* Connects with t and expects error code want with a message containing
 * every one of the NULL-terminated words, within WITHIN_MS. */
static void expect_refused(const char *what, const char *url, const tls_opts *t, int want,
                           const char *const *words)
{
    long long t0 = rlk_fx_now_ms(), ms;
    rlk_client *c = tls_connect(url, t);

    ms = rlk_fx_now_ms() - t0;
    if (!CHECK(c != NULL))
        return;
    CHECKF(rlk_err(c) == want, "%s: %s (%s), expected %s", what, rlk_strerror(rlk_err(c)),
           rlk_errstr(c), rlk_strerror(want));
    for (int i = 0; words && words[i]; i++)
        CHECKF(strstr(rlk_errstr(c), words[i]) != NULL, "%s: the message does not say \"%s\": %s",
               what, words[i], rlk_errstr(c));
    CHECKF(!strchr(rlk_errstr(c), '\n'), "%s: more than one line: %s", what, rlk_errstr(c));
    CHECKF(ms < WITHIN_MS, "%s: took %lld ms (connect timeout %d ms)", what, ms, CONNECT_MS);
    printf("    %-44s %-14s %4lld ms  %s\n", what, rlk_strerror(rlk_err(c)), ms, rlk_errstr(c));
    rlk_free(c);
    check_err_queue(what);
}

#define WORDS(...) ((const char *const[]){__VA_ARGS__, NULL})

static int start_tls(rlk_fx_server *s, const char *cert, int auth_clients)
{
    rlk_fx_config cfg;

    rlk_fx_config_init(&cfg);
    cfg.tls = 1;
    cfg.tls_cert = cert;
    cfg.tls_auth_clients = auth_clients;
    return rlk_fx_start(s, &cfg);
}

static void url_of(const rlk_fx_server *s, const char *scheme, char *buf, size_t len)
{
    snprintf(buf, len, "%s://127.0.0.1:%d", scheme, s->port);
}

/* tls.c directly: a context of its own that trusts the test CA (*own) and one session to s
 * (*conn on socket *fd). 0, or -1 with the reason on stderr. */
static int dial_own(const rlk_fx_server *s, rlk_tls **own, rlk_tls_conn **conn, int *fd)
{
    rlk_tls_config cfg;
    char err[256];

    memset(&cfg, 0, sizeof cfg);
    cfg.cacert = tls_file("ca.crt");
    *own = NULL;
    if (rlk_tls_new(&cfg, own, err, sizeof err) != RLK_OK ||
        rlk_tls_dial(*own, "127.0.0.1", s->port, rlk_clock_now_ns() + 5000 * RLK_NS_PER_MS,
                     conn, fd, err, sizeof err) != RLK_OK) {
        fprintf(stderr, "    dial: %s\n", err);
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- errors */

static void test_good_and_peer(void)
{
    rlk_fx_server s;
    rlk_client *c;
    rlk_tls_peer p;
    char url[128];
    tls_opts t = {.cacert = tls_file("ca.crt")};

    REQUIRE(start_tls(&s, NULL, 0) == 0);
    url_of(&s, "rediss", url, sizeof url);
    c = tls_connect(url, &t);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "connect %s: %s", url, rlk_errstr(c));
    CHECK(client_works(c, "tls:good"));
    CHECK_STR_PREFIX(rlk_client_url(c), "rediss://127.0.0.1:");
    REQUIRE(c->tls != NULL);
    rlk_tls_last_peer(c->tls, &p);
    CHECK_INT_EQ(p.known, 1);
    CHECK_INT_EQ(p.verified, 1);
    CHECKF(strcmp(p.protocol, "TLSv1.3") == 0 || strcmp(p.protocol, "TLSv1.2") == 0,
           "protocol %s", p.protocol);
    CHECKF(p.days_left >= 28 && p.days_left <= 30, "days left %ld (tools/tls-certs: 30)",
           p.days_left);
    CHECK_STR_CONTAINS(p.issuer, "rlk test CA");
    printf("    peer %s: %s %s, %s, %ld days left\n", p.addr, p.protocol, p.cipher, p.subject,
           p.days_left);
    rlk_free(c);

    /* The CA as a hashed directory. */
    {
        rlk_options o;

        rlk_options_init(&o);
        o.url = url;
        o.tls_cacertdir = tls_file("cadir");
        c = rlk_connect(&o);
        REQUIRE(c != NULL);
        CHECKF(rlk_err(c) == RLK_OK, "--cacertdir: %s", rlk_errstr(c));
        CHECK(client_works(c, "tls:cadir"));
        rlk_free(c);
    }
    /* --tls turns a redis:// URL into its TLS form. */
    {
        rlk_options o;

        rlk_options_init(&o);
        url_of(&s, "redis", url, sizeof url);
        o.url = url;
        o.tls = 1;
        o.tls_cacert = tls_file("ca.crt");
        c = rlk_connect(&o);
        REQUIRE(c != NULL);
        CHECKF(rlk_err(c) == RLK_OK, "redis:// + tls: %s", rlk_errstr(c));
        CHECK_STR_PREFIX(rlk_client_url(c), "rediss://");
        rlk_free(c);
    }
    check_err_queue("good connections");
    rlk_fx_stop(&s);
}

static void test_bad_server_certificates(void)
{
    rlk_fx_server expired, wrongname, untrusted;
    char url[128];
    tls_opts t = {.cacert = tls_file("ca.crt")};
    rlk_client *c;

    REQUIRE(start_tls(&expired, "expired", 0) == 0);
    REQUIRE(start_tls(&wrongname, "wrongname", 0) == 0);
    REQUIRE(start_tls(&untrusted, "untrusted", 0) == 0);

    url_of(&expired, "rediss", url, sizeof url);
    expect_refused("expired certificate", url, &t, RLK_ERR_IO,
                   WORDS("TLS", "not trusted", "expired"));
    url_of(&untrusted, "rediss", url, sizeof url);
    expect_refused("unknown CA", url, &t, RLK_ERR_IO, WORDS("TLS", "not trusted", "--cacert"));
    {
        tls_opts none = {0};   /* the system store does not know the test CA */

        expect_refused("unknown CA (system store)", url, &none, RLK_ERR_IO,
                       WORDS("TLS", "not trusted"));
    }
    url_of(&wrongname, "rediss", url, sizeof url);
    expect_refused("name mismatch", url, &t, RLK_ERR_IO, WORDS("does not name 127.0.0.1", "--sni"));

    /* The name the certificate has, given with --sni: verified, works. */
    {
        tls_opts sni = {.cacert = tls_file("ca.crt"), .sni = "other.example"};

        c = tls_connect(url, &sni);
        REQUIRE(c != NULL);
        CHECKF(rlk_err(c) == RLK_OK, "--sni other.example: %s", rlk_errstr(c));
        CHECK(client_works(c, "tls:sni"));
        rlk_free(c);
        check_err_queue("--sni");
    }
    /* --insecure: no check, and the peer says so. */
    {
        tls_opts ins = {.insecure = 1};
        rlk_tls_peer p;

        c = tls_connect(url, &ins);
        REQUIRE(c != NULL);
        CHECKF(rlk_err(c) == RLK_OK, "--insecure: %s", rlk_errstr(c));
        CHECK(client_works(c, "tls:insecure"));
        rlk_tls_last_peer(c->tls, &p);
        CHECK_INT_EQ(p.verified, 0);
        rlk_free(c);
    }
    /* After the failures, a good connection on the same thread. */
    {
        rlk_fx_server good;

        REQUIRE(start_tls(&good, NULL, 0) == 0);
        url_of(&good, "rediss", url, sizeof url);
        c = tls_connect(url, &t);
        REQUIRE(c != NULL);
        CHECKF(rlk_err(c) == RLK_OK, "good after bad: %s", rlk_errstr(c));
        CHECK(client_works(c, "tls:after"));
        rlk_free(c);
        rlk_fx_stop(&good);
    }
    rlk_fx_stop(&expired);
    rlk_fx_stop(&wrongname);
    rlk_fx_stop(&untrusted);
}

static void test_client_certificates(void)
{
    rlk_fx_server s;
    char url[128], wrongpass[RLK_FX_PATH_MAX + 64];
    rlk_client *c;
    tls_opts none = {.cacert = tls_file("ca.crt")};
    tls_opts good = {.cacert = tls_file("ca.crt"), .cert = tls_file("client.crt"),
                     .key = tls_file("client.key")};
    tls_opts enc = {.cacert = tls_file("ca.crt"), .cert = tls_file("client.crt"),
                    .key = tls_file("client-enc.key"), .pass = tls_file("client-enc.pass")};
    FILE *f;

    REQUIRE(start_tls(&s, NULL, 1) == 0);
    url_of(&s, "rediss", url, sizeof url);
    expect_refused("no client certificate", url, &none, RLK_ERR_IO,
                   WORDS("client certificate", "--cert"));
    {
        tls_opts foreign = {.cacert = tls_file("ca.crt"), .cert = tls_file("untrusted.crt"),
                            .key = tls_file("untrusted.key")};

        expect_refused("client certificate of another CA", url, &foreign, RLK_ERR_IO,
                       WORDS("TLS", "client certificate"));
    }
    c = tls_connect(url, &good);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "mutual TLS: %s", rlk_errstr(c));
    CHECK(client_works(c, "tls:mtls"));
    rlk_free(c);

    c = tls_connect(url, &enc);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "mutual TLS, encrypted key: %s", rlk_errstr(c));
    CHECK(client_works(c, "tls:mtls-enc"));
    rlk_free(c);

    /* Bad files: RLK_ERR_TLS before any connection. */
    {
        tls_opts t = enc;

        t.pass = NULL;
        expect_refused("encrypted key, no pass phrase", url, &t, RLK_ERR_TLS,
                       WORDS("is encrypted", "--key-password-file"));
        snprintf(wrongpass, sizeof wrongpass, "%s/wrong.pass", tls_dir);
        f = fopen(wrongpass, "w");
        REQUIRE(f != NULL);
        fputs("not-the-pass-phrase\n", f);
        fclose(f);
        t.pass = wrongpass;
        expect_refused("encrypted key, wrong pass phrase", url, &t, RLK_ERR_TLS,
                       WORDS("--key", "wrong pass phrase"));
        t = good;
        t.key = tls_file("server.key");
        expect_refused("key of another certificate", url, &t, RLK_ERR_TLS,
                       WORDS("does not belong to --cert"));
        t = good;
        t.key = NULL;
        expect_refused("--cert without --key", url, &t, RLK_ERR_TLS, WORDS("--cert without --key"));
        t = good;
        t.cert = tls_file("no-such.crt");
        expect_refused("unreadable --cert", url, &t, RLK_ERR_TLS, WORDS("--cert", "no-such.crt"));
        t = good;
        t.cert = tls_file("ca.srl");
        expect_refused("--cert not PEM", url, &t, RLK_ERR_TLS, WORDS("not a PEM certificate"));
        t = none;
        t.cacert = tls_file("no-such-ca.crt");
        expect_refused("unreadable --cacert", url, &t, RLK_ERR_TLS, WORDS("--cacert"));
    }
    rlk_fx_stop(&s);
}

static void test_wrong_transport(void)
{
    rlk_fx_server tls, plain;
    rlk_fx_config cfg;
    char url[RLK_FX_PATH_MAX + 16];
    tls_opts t = {.cacert = tls_file("ca.crt")};

    REQUIRE(start_tls(&tls, NULL, 0) == 0);
    rlk_fx_config_init(&cfg);
    cfg.tls = -1;
    cfg.unixsocket = 1;
    REQUIRE(rlk_fx_start(&plain, &cfg) == 0);

    url_of(&plain, "rediss", url, sizeof url);
    /* A plain Redis port reads the ClientHello as an inline command that never
     * ends: no answer, so the connect timeout ends it, with the hint. */
    expect_refused("plain-TCP server behind rediss://", url, &t, RLK_ERR_TIMEOUT,
                   WORDS("no answer to the handshake", "plain-TCP port", "redis://"));
    url_of(&tls, "redis", url, sizeof url);
    expect_refused("TLS server behind redis://", url, NULL, RLK_ERR_IO, WORDS("rediss://"));
    {
        tls_opts sni = {.sni = "x.example"};

        expect_refused("--sni with a redis:// URL", url, &sni, RLK_ERR_TLS, WORDS("rediss://"));
    }
    snprintf(url, sizeof url, "unix://%s", plain.sock_path[0] ? plain.sock_path : "/nonexistent");
    expect_refused("TLS options with unix://", url, &t, RLK_ERR_TLS, WORDS("unix://"));
    rlk_fx_stop(&tls);
    rlk_fx_stop(&plain);
}

/* A TCP listener that never answers: the kernel completes the TCP handshake
 * (backlog) and the TLS handshake hangs. */
static int silent_listener(int *port)
{
    struct sockaddr_in a;
    socklen_t al = sizeof a;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 16) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static void test_stalled_handshake(void)
{
    int port, fd = silent_listener(&port);
    char url[128];
    tls_opts t = {.cacert = tls_file("ca.crt")};

    REQUIRE(fd >= 0);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", port);
    expect_refused("a handshake that stalls", url, &t, RLK_ERR_TIMEOUT,
                   WORDS("no answer to the handshake within the connect timeout"));
    close(fd);
}

/* ---------------------------------------------------------------- the CLI */

typedef struct cli_out {
    int status;
    long long ms;
    char out[8192], err[8192];
} cli_out;

static void slurp_fd(int fd, char *buf, size_t len)
{
    size_t got = 0;
    ssize_t n;

    while (got + 1 < len && (n = read(fd, buf + got, len - 1 - got)) > 0)
        got += (size_t)n;
    buf[got] = '\0';
}

/* Runs rlk with args (NULL-terminated), stdout and stderr to temp files,
 * bounded by 20 s (SIGKILL after). */
static void run_rlk(cli_out *r, const char *const *args)
{
    char outp[] = "/tmp/rlk-tls-out-XXXXXX", errp[] = "/tmp/rlk-tls-err-XXXXXX";
    int of = mkstemp(outp), ef = mkstemp(errp);
    const char *argv[64];
    int n = 0;
    memset(r, 0, sizeof *r);
    r->status = -1;
    argv[n++] = rlk_bin;
    for (int i = 0; args[i] && n < 62; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    if (of < 0 || ef < 0)
        return;
    {
        long long t0 = rlk_fx_now_ms();
        pid_t pid;
        int st;

        fflush(NULL);
        pid = fork();
        if (pid == 0) {
            dup2(of, 1);
            dup2(ef, 2);
            if (!child_keeps_ca)
                unsetenv("RLK_TLS_CACERT");
            unsetenv("RLK_URL");
            execv(rlk_bin, (char *const *)argv);
            _exit(127);
        }
        while (pid > 0) {
            pid_t w = waitpid(pid, &st, WNOHANG);

            if (w == pid) {
                r->status = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
                break;
            }
            if (rlk_fx_now_ms() - t0 > 20000) {
                kill(pid, SIGKILL);
                waitpid(pid, &st, 0);
                break;
            }
            usleep(5000);
        }
        r->ms = rlk_fx_now_ms() - t0;
    }
    lseek(of, 0, SEEK_SET);
    lseek(ef, 0, SEEK_SET);
    slurp_fd(of, r->out, sizeof r->out);
    slurp_fd(ef, r->err, sizeof r->err);
    close(of);
    close(ef);
    unlink(outp);
    unlink(errp);
}

#define RLK(r, ...) run_rlk((r), (const char *const[]){__VA_ARGS__, NULL})

static int count_lines(const char *s)
{
    int n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static void expect_cli(const cli_out *r, int status, const char *what, const char *word)
{
    CHECKF(r->status == status, "%s: exit %d, expected %d\n    stdout: %s\n    stderr: %s", what,
           r->status, status, r->out, r->err);
    /* word NULL: the exit is an answer (rlk inspect's 1: free), not an error line to read. */
    if (status != 0 && word) {
        CHECKF(count_lines(r->err) == 1 && strncmp(r->err, "rlk: ", 5) == 0,
               "%s: not one 'rlk: ' line on stderr: %s", what, r->err);
        CHECKF(strstr(r->err, word) != NULL, "%s: stderr does not say \"%s\": %s", what, word,
               r->err);
        CHECKF(r->ms < WITHIN_MS + 1000, "%s: took %lld ms", what, r->ms);
    }
}

static void test_cli(void)
{
    rlk_fx_server s, wrongname, mtls;
    int port, silent = silent_listener(&port);
    char url[128], bad[128], murl[128], stall[128];
    const char *ca = tls_file("ca.crt");
    cli_out r;

    REQUIRE(silent >= 0);
    REQUIRE(start_tls(&s, NULL, 0) == 0);
    REQUIRE(start_tls(&wrongname, "wrongname", 0) == 0);
    REQUIRE(start_tls(&mtls, NULL, 1) == 0);
    url_of(&s, "rediss", url, sizeof url);
    url_of(&wrongname, "rediss", bad, sizeof bad);
    url_of(&mtls, "rediss", murl, sizeof murl);
    snprintf(stall, sizeof stall, "rediss://127.0.0.1:%d", port);

    /* The "done when": a command under a lock on a TLS-only server, checks on. */
    RLK(&r, "--url", url, "--cacert", ca, "lock", "-w", "5", "tls:cli", "--", "sh", "-c",
        "echo held-under-tls");
    expect_cli(&r, 0, "lock over rediss://", NULL);
    CHECK_STR_CONTAINS(r.out, "held-under-tls");
    CHECK_INT_EQ(tk_key_exists(&s, "tls:cli"), 0);

    RLK(&r, "--url", url, "--cacert", ca, "--verbose", "inspect", "tls:cli");
    expect_cli(&r, 1, "--verbose", NULL);     /* 1: free (released above) */
    CHECK_STR_CONTAINS(r.err, "TLS to 127.0.0.1:");
    CHECK_STR_CONTAINS(r.err, "chain and name verified");
    CHECK_STR_CONTAINS(r.err, "expires in");

    RLK(&r, "--url", bad, "--cacert", ca, "inspect", "x");
    expect_cli(&r, 3, "name mismatch", "does not name");
    RLK(&r, "--url", bad, "--insecure", "inspect", "x");
    expect_cli(&r, 1, "--insecure", NULL);    /* 1: free */
    CHECK_STR_CONTAINS(r.err, "--insecure");
    RLK(&r, "--url", murl, "--cacert", ca, "inspect", "x");
    expect_cli(&r, 3, "no client certificate", "client certificate");
    RLK(&r, "--url", murl, "--cacert", ca, "--cert", tls_file("client.crt"), "--key",
        tls_file("client-enc.key"), "--key-password-file", tls_file("client-enc.pass"),
        "lock", "tls:cli-mtls", "--", "true");
    expect_cli(&r, 0, "mutual TLS, encrypted key", NULL);
    RLK(&r, "--url", murl, "--cacert", ca, "--cert", tls_file("client.crt"), "--key",
        tls_file("client-enc.key"), "inspect", "x");
    expect_cli(&r, 2, "encrypted key without pass phrase", "--key-password-file");
    RLK(&r, "--url", stall, "--cacert", ca, "--connect-timeout", "1000", "inspect", "x");
    if (strstr(r.err, "--connect-timeout") && r.status == 2)   /* no such option: the default */
        RLK(&r, "--url", stall, "--cacert", ca, "inspect", "x");
    expect_cli(&r, 3, "stalled handshake", "handshake");
    {
        char plain[128];

        snprintf(plain, sizeof plain, "redis://127.0.0.1:%d", s.port);
        RLK(&r, "--url", plain, "inspect", "x");
        expect_cli(&r, 3, "TLS server behind redis://", "rediss://");
    }

    /* rlk check names what TLS found, and a certificate that ends within 30 days. */
    RLK(&r, "--url", url, "--cacert", ca, "check");
    CHECKF(r.status == 7, "check: exit %d (expected 7: warnings)\n%s\n%s", r.status, r.out,
           r.err);
    CHECK_STR_CONTAINS(r.out, "TLS");
    CHECK_STR_CONTAINS(r.out, "expires in");
    CHECKF(strstr(r.out, "within 30 days") != NULL, "check: no expiry warning:\n%s", r.out);
    close(silent);
    rlk_fx_stop(&s);
    rlk_fx_stop(&wrongname);
    rlk_fx_stop(&mtls);
}

/* rlk check on a server whose certificate rlk refuses (docs/tls.md, docs/ops.md "transport"):
 * an expired certificate and one for another host are a transport `error` in the report, text
 * and JSON, exit 8 - without --insecure (the report is made all the same) and with it. */
static void test_check_refused(void)
{
    rlk_fx_server expired, wrongname;
    const char *ca = tls_file("ca.crt");
    const char *const pairs[2] = {"expired", "wrongname"};
    const char *const why[2] = {"certificate has expired", "does not name 127.0.0.1"};
    rlk_fx_server *srv[2] = {&expired, &wrongname};
    cli_out r;

    REQUIRE(start_tls(&expired, "expired", 0) == 0);
    REQUIRE(start_tls(&wrongname, "wrongname", 0) == 0);
    for (int i = 0; i < 2; i++) {
        char url[128], what[160];

        url_of(srv[i], "rediss", url, sizeof url);
        snprintf(what, sizeof what, "check, %s certificate", pairs[i]);
        RLK(&r, "--url", url, "--cacert", ca, "check");
        CHECKF(r.status == 8, "%s: exit %d (expected 8: errors)\n%s\n%s", what, r.status,
               r.out, r.err);
        CHECKF(strstr(r.out, "error    transport") && strstr(r.out, why[i]),
               "%s: no transport error saying '%s':\n%s", what, why[i], r.out);
        CHECKF(strstr(r.out, "ok       server") != NULL, "%s: no report of the rest:\n%s", what,
               r.out);
        RLK(&r, "--url", url, "--cacert", ca, "check", "--json");
        CHECKF(r.status == 8, "%s --json: exit %d\n%s\n%s", what, r.status, r.out, r.err);
        CHECKF(strstr(r.out, "\"check\": \"transport\", \"level\": \"error\"") != NULL &&
               strstr(r.out, "\"result\": \"error\""),
               "%s --json: no transport error:\n%s", what, r.out);
        RLK(&r, "--url", url, "--cacert", ca, "--insecure", "check");
        CHECKF(r.status == 8 && strstr(r.out, "error    transport") && strstr(r.out, why[i]),
               "%s --insecure: exit %d, no transport error:\n%s\n%s", what, r.status, r.out,
               r.err);
    }
    rlk_fx_stop(&expired);
    rlk_fx_stop(&wrongname);
}

/* ---------------------------------------------------------------- faults */

/* Handshakes are made per connection, never per call. */
static void test_handshakes_counted(void)
{
    rlk_fx_server s;
    rlk_client *c;
    rlk_lock *l;
    char url[128];
    tls_opts t = {.cacert = tls_file("ca.crt")};
    unsigned long long warm, after;
    long long conns_before, conns_after;
    redisContext *ctl;
    redisReply *rep;

    REQUIRE(start_tls(&s, NULL, 0) == 0);
    url_of(&s, "rediss", url, sizeof url);
    ctl = rlk_fx_connect(&s);
    REQUIRE(ctl != NULL);
    rep = redisCommand(ctl, "CONFIG RESETSTAT");
    freeReplyObject(rep);
    c = tls_connect(url, &t);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    l = rlk_lock_new(c, "tls:count");
    REQUIRE(l != NULL);
    CHECK(client_works(c, "tls:count-warm"));
    warm = rlk_tls_handshakes(c->tls);
    for (int i = 0; i < 300; i++) {
        if (!CHECK(rlk_lock_try_lock(l, 0, 5000) == RLK_OK && rlk_lock_unlock(l) == RLK_OK))
            break;
    }
    after = rlk_tls_handshakes(c->tls);
    CHECKF(after == warm, "300 lock/unlock pairs made %llu new handshakes", after - warm);
    rep = redisCommand(ctl, "INFO stats");
    conns_after = -1;
    if (rep && rep->type == REDIS_REPLY_STRING) {
        const char *p = strstr(rep->str, "total_connections_received:");

        if (p)
            conns_after = atoll(p + strlen("total_connections_received:"));
    }
    freeReplyObject(rep);
    conns_before = 0;   /* the control connection came before the reset */
    CHECKF(conns_after - conns_before == (long long)after,
           "server saw %lld connections, client made %llu handshakes", conns_after - conns_before,
           after);
    printf("    300 pairs: %llu handshakes for %lld connections (pool size 2)\n", after,
           conns_after - conns_before);
    rlk_lock_free(l);
    rlk_free(c);
    redisFree(ctl);
    rlk_fx_stop(&s);
}

/* A proxy on loopback in front of one server: passes bytes both ways; when
 * armed, it passes only half of the next bytes the server sends and then
 * cuts both sides (a TLS record cut in the middle). */
typedef struct cut_proxy {
    int lfd, port, target;
    pthread_t th;
    atomic_int stop, armed, cuts, accepted, active;     /* active: pair threads running */
} cut_proxy;

typedef struct cut_pair {
    cut_proxy *p;
    int cfd, sfd;
} cut_pair;

static void *cut_pair_main(void *arg)
{
    cut_pair *pr = arg;
    cut_proxy *p = pr->p;
    char buf[16384];

    while (!atomic_load(&p->stop)) {
        struct pollfd f[2] = {{.fd = pr->cfd, .events = POLLIN}, {.fd = pr->sfd, .events = POLLIN}};
        int n = poll(f, 2, 50);
        ssize_t got;

        if (n < 0 && errno != EINTR)
            break;
        if (n <= 0)
            continue;
        if (f[0].revents) {
            got = read(pr->cfd, buf, sizeof buf);
            if (got <= 0 || write(pr->sfd, buf, (size_t)got) != got)
                break;
        }
        if (f[1].revents) {
            got = read(pr->sfd, buf, sizeof buf);
            if (got <= 0)
                break;
            if (atomic_exchange(&p->armed, 0)) {
                ssize_t half = got > 1 ? got / 2 : 1;

                if (write(pr->cfd, buf, (size_t)half) != half) {
                    /* the client is gone already: a cut all the same */
                }
                atomic_fetch_add(&p->cuts, 1);
                break;
            }
            if (write(pr->cfd, buf, (size_t)got) != got)
                break;
        }
    }
    close(pr->cfd);
    close(pr->sfd);
    free(pr);
    atomic_fetch_sub(&p->active, 1);   /* last touch of p */
    return NULL;
}

static void *cut_proxy_main(void *arg)
{
    cut_proxy *p = arg;

    while (!atomic_load(&p->stop)) {
        struct pollfd f = {.fd = p->lfd, .events = POLLIN};
        int cfd, sfd;
        cut_pair *pr;
        pthread_t th;

        if (poll(&f, 1, 50) <= 0)
            continue;
        cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (cfd < 0)
            continue;
        sfd = tk_tcp_connect(p->target);
        pr = malloc(sizeof *pr);
        if (sfd < 0 || !pr) {
            close(cfd);
            if (sfd >= 0)
                close(sfd);
            free(pr);
            continue;
        }
        pr->p = p;
        pr->cfd = cfd;
        pr->sfd = sfd;
        atomic_fetch_add(&p->accepted, 1);
        atomic_fetch_add(&p->active, 1);
        if (pthread_create(&th, NULL, cut_pair_main, pr) == 0) {
            pthread_detach(th);
        } else {
            atomic_fetch_sub(&p->active, 1);
            close(cfd), close(sfd), free(pr);
        }
    }
    return NULL;
}

static int cut_proxy_start(cut_proxy *p, int target)
{
    memset(p, 0, sizeof *p);
    p->target = target;
    p->lfd = silent_listener(&p->port);
    if (p->lfd < 0)
        return -1;
    return pthread_create(&p->th, NULL, cut_proxy_main, p) == 0 ? 0 : -1;
}

static void cut_proxy_stop(cut_proxy *p)
{
    long long until = rlk_fx_now_ms() + 5000;

    atomic_store(&p->stop, 1);
    pthread_join(p->th, NULL);
    close(p->lfd);
    while (atomic_load(&p->active) > 0 && rlk_fx_now_ms() < until)
        usleep(2000);   /* bounded: each pair thread sees stop within its 50 ms poll */
    CHECKF(atomic_load(&p->active) == 0, "proxy: %d pair threads still running",
           atomic_load(&p->active));
}

/* The owner field of our hold, read on the server: the hold count, 0 when
 * none. */
static long long held_count(const rlk_fx_server *s, const char *name, const char *owner)
{
    long long v = tk_int(s, "HGET %s %s", name, owner);

    return v < 0 ? 0 : v;
}

static void test_cut_mid_reply(void)
{
    rlk_fx_server s;
    cut_proxy px;
    rlk_client *c;
    rlk_lock *l;
    char url[128], owner[160];
    tls_opts t = {.cacert = tls_file("ca.crt")};
    int held = 0, lost = 0, rounds = 6;

    REQUIRE(start_tls(&s, NULL, 0) == 0);
    REQUIRE(cut_proxy_start(&px, s.port) == 0);
    snprintf(url, sizeof url, "rediss://127.0.0.1:%d", px.port);
    c = tls_connect(url, &t);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    l = rlk_lock_new(c, "tls:cut");
    REQUIRE(l != NULL);
    REQUIRE(rlk_lock_owner(l, owner, sizeof owner) == RLK_OK);
    CHECK(client_works(c, "tls:cut-warm"));
    for (int i = 0; i < rounds; i++) {
        int rc, cuts = atomic_load(&px.cuts);
        long long on_server;

        atomic_store(&px.armed, 1);
        rc = rlk_lock_try_lock(l, 0, 10000);
        atomic_store(&px.armed, 0);
        on_server = held_count(&s, "tls:cut", owner);
        CHECKF(atomic_load(&px.cuts) == cuts + 1, "round %d: no reply was cut", i);
        /* Whatever the call says, it matches the server: held and counted as held,
         * or an error and no hold left under our name. */
        if (rc == RLK_OK) {
            held++;
            CHECKF(on_server == 1, "round %d: RLK_OK but the server has count %lld", i, on_server);
            CHECKF(rlk_lock_unlock(l) == RLK_OK, "round %d: unlock after a cut: %s", i,
                   rlk_errstr(c));
        } else {
            lost++;
            CHECKF(rc == RLK_ERR_IO || rc == RLK_ERR_UNSETTLED || rc == RLK_ERR_TIMEOUT,
                   "round %d: %s (%s)", i, rlk_strerror(rc), rlk_errstr(c));
            CHECKF(on_server == 0 || rc == RLK_ERR_UNSETTLED,
                   "round %d: %s and the server holds it for us (count %lld)", i,
                   rlk_strerror(rc), on_server);
            if (on_server)          /* unsettled: given back at the next acquisition */
                CHECK(rlk_lock_try_lock(l, 0, 5000) == RLK_OK && rlk_lock_unlock(l) == RLK_OK);
        }
        CHECKF(held_count(&s, "tls:cut", owner) == 0, "round %d: a hold was left", i);
        check_err_queue("a cut reply");
    }
    printf("    %d replies cut in the middle of a TLS record: %d settled as held, %d as not run\n",
           rounds, held, lost);
    /* The connection is made again and works. */
    CHECK(client_works(c, "tls:cut-after"));
    rlk_lock_free(l);
    rlk_free(c);
    cut_proxy_stop(&px);
    rlk_fx_stop(&s);
}

static void test_kill_and_restart(void)
{
    rlk_fx_server s;
    rlk_client *c;
    rlk_lock *l;
    char url[128];
    tls_opts t = {.cacert = tls_file("ca.crt")};
    unsigned long long before;

    REQUIRE(start_tls(&s, NULL, 0) == 0);
    url_of(&s, "rediss", url, sizeof url);
    c = tls_connect(url, &t);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    l = rlk_lock_new(c, "tls:restart");
    CHECK(client_works(c, "tls:restart-warm"));
    before = rlk_tls_handshakes(c->tls);
    REQUIRE(rlk_fx_crash(&s) == 0);
    REQUIRE(rlk_fx_restart(&s) == 0);
    /* The first call after the restart may see the dead connection; the client
     * reconnects (a new handshake) and the next one works. */
    {
        long long until = rlk_fx_now_ms() + 10000;
        int ok = 0;

        while (!ok && rlk_fx_now_ms() < until) {
            ok = rlk_lock_try_lock(l, 0, 5000) == RLK_OK;
            if (!ok)
                usleep(20000);  /* a bounded retry of a call, not a wait for an event */
        }
        CHECKF(ok, "no lock after the restart: %s", rlk_errstr(c));
        if (ok)
            CHECK(rlk_lock_unlock(l) == RLK_OK);
    }
    CHECKF(rlk_tls_handshakes(c->tls) > before, "no new handshake after the restart");
    check_err_queue("restart");
    rlk_lock_free(l);
    rlk_free(c);
    rlk_fx_stop(&s);
}

/* A TLS connection is read and written by the thread that uses it: none of its own. */
/* The threads of this process (/proc/self/task). */
static int count_threads(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    int n = 0;

    if (!d)
        return -1;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

static void test_no_thread(void)
{
    rlk_fx_server s;
    rlk_client *c;
    char url[128];
    tls_opts t = {.cacert = tls_file("ca.crt")};
    rlk_tls *own;
    rlk_tls_conn *conn = NULL;
    redisContext *extra[3] = {NULL, NULL, NULL};
    redisReply *rep;
    char err[256];
    int fd = -1, threads, live;

    REQUIRE(start_tls(&s, NULL, 0) == 0);
    url_of(&s, "rediss", url, sizeof url);
    threads = count_threads();
    c = tls_connect(url, &t);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    CHECK(client_works(c, "tls:threads"));
    live = rlk_tls_live_conns(c->tls);
    CHECKF(live >= 1, "no TLS session counted for a live client");
    /* The caller's thread reads and writes the session: three more
     * connections, each with a round trip, add sessions and no thread (with
     * a thread per connection, as a pump design has, this fails). */
    threads = count_threads();
    for (int i = 0; i < 3; i++) {
        REQUIRE(rlk_conn_open(c, &extra[i]) == RLK_OK ||
                (fprintf(stderr, "    open: %s\n", rlk_errstr(c)), 0));
        rep = rlk_transport_command(extra[i], "PING");
        CHECKF(rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0,
               "PING over a TLS connection: %s", rep ? "unexpected reply" : extra[i]->errstr);
        if (rep)
            freeReplyObject(rep);
    }
    CHECK_INT_EQ(rlk_tls_live_conns(c->tls), live + 3);
    CHECKF(count_threads() == threads, "%d threads with three more TLS connections, %d before",
           count_threads(), threads);
    for (int i = 0; i < 3; i++)
        rlk_transport_free(extra[i]);
    CHECK_INT_EQ(rlk_tls_live_conns(c->tls), live);     /* at once: nothing to wait for */
    rlk_free(c);

    /* tls.c directly: a session counts until it is closed, and the context
     * it was made with lives until every connection made with it is closed. */
    REQUIRE(dial_own(&s, &own, &conn, &fd) == 0);
    CHECK_INT_EQ(rlk_tls_live_conns(own), 1);
    CHECK(rlk_tls_conn_write(conn, "PING\r\n", 6, err, sizeof err) == 6);
    {
        char buf[64];
        int n = rlk_tls_conn_read(conn, buf, (int)sizeof buf - 1, err, sizeof err);

        CHECKF(n == 7 && memcmp(buf, "+PONG\r\n", 7) == 0, "PING on the session: %d bytes", n);
    }
    rlk_tls_free(own);          /* before its session: the session keeps what it needs */
    rlk_tls_conn_close(conn, 1);
    close(fd);
    check_err_queue("sessions");
    rlk_fx_stop(&s);
}

/* A request's write on a TLS connection that can no longer send fails with EPIPE and raises no
 * SIGPIPE, with no signal mask around it: the session writes with send(MSG_NOSIGNAL), as a plain
 * connection does (unit/test_sigpipe.c), so a blocking request over TLS costs no pthread_sigmask
 * calls (client/conn.c sets none). With OpenSSL's own socket BIO (write(2)) the handler
 * below counts one SIGPIPE; unhandled, it would end the program. */
static volatile sig_atomic_t sigpipes;

static void count_sigpipe(int sig)
{
    (void)sig;
    sigpipes++;
}

static void test_write_raises_no_sigpipe(void)
{
    rlk_fx_server s;
    rlk_tls *own;
    rlk_tls_conn *conn = NULL;
    redisContext *ctx;
    redisReply *rep;
    struct sigaction sa, old;
    sigset_t cur, pending;
    int fd = -1, rc;

    REQUIRE(start_tls(&s, NULL, 0) == 0);
    REQUIRE(dial_own(&s, &own, &conn, &fd) == 0);
    REQUIRE((ctx = redisConnectFd(fd)) != NULL && !ctx->err);
    rlk_tls_conn_bind(conn, ctx);
    rep = rlk_transport_command(ctx, "PING");   /* the session works */
    CHECKF(rep && rep->type == REDIS_REPLY_STATUS && strcmp(rep->str, "PONG") == 0,
           "PING over the session: %s", rep ? "unexpected reply" : ctx->errstr);
    if (rep)
        freeReplyObject(rep);
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = count_sigpipe;
    sigemptyset(&sa.sa_mask);
    REQUIRE(sigaction(SIGPIPE, &sa, &old) == 0);
    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    CHECK(!sigismember(&cur, SIGPIPE));
    sigpipes = 0;
    /* This end can no longer send: the next write(2) on the socket is EPIPE. */
    REQUIRE(shutdown(fd, SHUT_WR) == 0);
    REQUIRE(redisAppendCommand(ctx, "PING") == REDIS_OK);
    rc = rlk_transport_flush(ctx);
    CHECK(rc == REDIS_ERR && ctx->err == REDIS_ERR_IO);
    CHECK_STR_CONTAINS(ctx->errstr, "Broken pipe");
    CHECKF(sigpipes == 0, "%d SIGPIPE raised by a write on a TLS connection", (int)sigpipes);
    sigpending(&pending);
    CHECK(!sigismember(&pending, SIGPIPE));
    rlk_transport_free(ctx);    /* not clean (ctx->err): no close_notify; closes fd */
    CHECKF(sigpipes == 0, "%d SIGPIPE raised by the close", (int)sigpipes);
    sigaction(SIGPIPE, &old, NULL);
    rlk_tls_free(own);
    check_err_queue("sigpipe");
    rlk_fx_stop(&s);
}

/* The demo (several processes, pub/sub waits, the watchdog) over rediss://. */
static void test_demo(void)
{
    rlk_fx_server s;
    char url[128];
    cli_out r;
    const char *saved = rlk_bin;

    if (!demo_bin) {
        printf("    skipped: no rlk-demo given\n");
        return;
    }
    REQUIRE(start_tls(&s, NULL, 0) == 0);
    url_of(&s, "rediss", url, sizeof url);
    setenv("RLK_TLS_CACERT", tls_file("ca.crt"), 1);
    rlk_bin = demo_bin;
    child_keeps_ca = 1;
    run_rlk(&r, (const char *const[]){"--url", url, "--workers", "3", "--rounds", "2",
                                      "--hold-ms", "5", NULL});
    rlk_bin = saved;
    child_keeps_ca = 0;
    unsetenv("RLK_TLS_CACERT");
    CHECKF(r.status == 0, "rlk-demo over rediss://: exit %d\n%s\n%s", r.status, r.out, r.err);
    CHECKF(strstr(r.out, "0 overlapping holds, 0 failed workers") != NULL, "rlk-demo: %s", r.out);
    rlk_fx_stop(&s);
}

int main(int argc, char **argv)
{
    const char *dir = rlk_fx_tls_dir();

    if (argc < 3) {
        fprintf(stderr, "usage: it_tls errors|faults PATH_TO_RLK [PATH_TO_RLK_DEMO]\n");
        return 2;
    }
    if (!dir) {
        printf("it_tls: skipped: $RLK_TEST_TLS is not set (ctest sets it; tools/tls-certs)\n");
        return 77;
    }
    snprintf(tls_dir, sizeof tls_dir, "%s", dir);
    rlk_bin = argv[2];
    demo_bin = argc > 3 ? argv[3] : NULL;
    unsetenv("RLK_TLS_CACERT");
    if (strcmp(argv[1], "errors") == 0) {
        RUN_TEST(test_good_and_peer);
        unsetenv("RLK_TLS_CACERT");     /* the fixture sets it for the suites */
        RUN_TEST(test_bad_server_certificates);
        RUN_TEST(test_client_certificates);
        RUN_TEST(test_wrong_transport);
        RUN_TEST(test_stalled_handshake);
        RUN_TEST(test_cli);
        RUN_TEST(test_check_refused);
    } else {
        RUN_TEST(test_handshakes_counted);
        unsetenv("RLK_TLS_CACERT");
        RUN_TEST(test_cut_mid_reply);
        RUN_TEST(test_kill_and_restart);
        RUN_TEST(test_no_thread);
        RUN_TEST(test_write_raises_no_sigpipe);
        RUN_TEST(test_demo);
    }
    return check_summary(argv[1][0] == 'e' ? "it_tls errors" : "it_tls faults");
}
