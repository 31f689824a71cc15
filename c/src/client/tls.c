/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.c - TLS connections on OpenSSL 3 behind a socket pair (tls.h).
 *
 * The pump (one thread per TLS connection, every signal blocked) keeps two
 * buffers: up (from the application's end towards the server) and down
 * (decrypted bytes towards the application). It reads a side only while the
 * buffer that side fills is empty, so neither direction waits on the other:
 * a subscriber that is slow to read holds back only the server's bytes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "rlk.h"
#include "client/clock.h"
#include "client/tls.h"

#define RLK_TLS_BUF 16384
#define RLK_TLS_FREE_WAIT_MS 2000

struct rlk_tls {
    SSL_CTX *ctx;
    int insecure;
    char *sni;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int pumps;                  /* running pump threads */
    struct rlk_ended *ended;    /* pump threads that have finished their work, to join */
    struct rlk_pump *live;      /* their connections, newest first (rlk_tls_peer_closed) */
    unsigned long long handshakes;
    rlk_tls_peer last;
};

/* A pump thread that is ending: joined by the next pump's start or by
 * rlk_tls_free, so that no thread of a freed client lives on (a thread
 * still exiting inside OpenSSL or the allocator when the program forks
 * leaves the child a lock that nobody will release). */
typedef struct rlk_ended {
    pthread_t th;
    struct rlk_ended *next;
} rlk_ended;

typedef struct rlk_pump {
    rlk_tls *t;
    rlk_ended *ended;           /* given to t->ended as the thread ends */
    struct rlk_pump *next, *prev;   /* t->live, under t->mu */
    SSL *ssl;
    int tcp;                    /* non-blocking */
    int app;                    /* our end of the pair, non-blocking */
    int app_peer;               /* the caller's end (its redisContext's fd) */
    unsigned char up[RLK_TLS_BUF];
    size_t up_off, up_len;
    unsigned char down[RLK_TLS_BUF];
    size_t down_off, down_len;
} rlk_pump;

/* ---------------------------------------------------------------- errors */

/* The first queued OpenSSL error's reason ("certificate verify failed"),
 * and an empty queue afterwards. */
static void rlk_tls_reason(char *buf, size_t len)
{
    unsigned long e = ERR_get_error();
    const char *r = e ? ERR_reason_error_string(e) : NULL;

    if (r)
        snprintf(buf, len, "%s", r);
    else if (e)
        snprintf(buf, len, "OpenSSL error %lu", e);
    else
        buf[0] = '\0';
    ERR_clear_error();
}

/* ---------------------------------------------------------------- the context */

static int rlk_tls_pass_cb(char *buf, int size, int rwflag, void *u)
{
    const char *file = u;
    FILE *f;
    size_t n;

    (void)rwflag;
    if (!file || !(f = fopen(file, "r")))
        return -1;
    n = fread(buf, 1, (size_t)size - 1, f);
    fclose(f);
    buf[n] = '\0';
    n = strcspn(buf, "\r\n");
    buf[n] = '\0';
    return (int)n;
}

/* 1 when the PEM file holds an encrypted private key. */
static int rlk_tls_key_encrypted(const char *path)
{
    char line[128];
    FILE *f = fopen(path, "r");
    int enc = 0;

    if (!f)
        return 0;
    while (!enc && fgets(line, sizeof line, f))
        enc = strstr(line, "ENCRYPTED") != NULL;
    fclose(f);
    return enc;
}

static int rlk_tls_readable(const char *what, const char *path, int dir, char *err, size_t len)
{
    if (access(path, R_OK | (dir ? X_OK : 0)) == 0)
        return 0;
    snprintf(err, len, "TLS: %s %s: %s", what, path, strerror(errno));
    return -1;
}

static int rlk_tls_load(rlk_tls *t, const rlk_tls_config *cfg, char *err, size_t len)
{
    char why[200];

    if (cfg->cacert && rlk_tls_readable("--cacert", cfg->cacert, 0, err, len))
        return RLK_ERR_TLS;
    if (cfg->cacertdir && rlk_tls_readable("--cacertdir", cfg->cacertdir, 1, err, len))
        return RLK_ERR_TLS;
    if (cfg->cacert || cfg->cacertdir) {
        if (SSL_CTX_load_verify_locations(t->ctx, cfg->cacert, cfg->cacertdir) != 1) {
            rlk_tls_reason(why, sizeof why);
            snprintf(err, len, "TLS: cannot load the CA certificates of %s: %s",
                     cfg->cacert ? cfg->cacert : cfg->cacertdir, why);
            return RLK_ERR_TLS;
        }
    } else if (SSL_CTX_set_default_verify_paths(t->ctx) != 1) {
        rlk_tls_reason(why, sizeof why);
        snprintf(err, len, "TLS: cannot load the system's CA certificates: %s", why);
        return RLK_ERR_TLS;
    }
    if (!cfg->cert != !cfg->key) {
        snprintf(err, len, "TLS: %s without %s: a client certificate needs both",
                 cfg->cert ? "--cert" : "--key", cfg->cert ? "--key" : "--cert");
        return RLK_ERR_TLS;
    }
    if (!cfg->cert)
        return cfg->key_password_file
                   ? (snprintf(err, len, "TLS: --key-password-file without --key"), RLK_ERR_TLS)
                   : RLK_OK;
    if (rlk_tls_readable("--cert", cfg->cert, 0, err, len) ||
        rlk_tls_readable("--key", cfg->key, 0, err, len) ||
        (cfg->key_password_file &&
         rlk_tls_readable("--key-password-file", cfg->key_password_file, 0, err, len)))
        return RLK_ERR_TLS;
    if (SSL_CTX_use_certificate_chain_file(t->ctx, cfg->cert) != 1) {
        rlk_tls_reason(why, sizeof why);
        snprintf(err, len, "TLS: --cert %s: not a PEM certificate (%s)", cfg->cert, why);
        return RLK_ERR_TLS;
    }
    if (rlk_tls_key_encrypted(cfg->key) && !cfg->key_password_file) {
        snprintf(err, len, "TLS: --key %s is encrypted: give its pass phrase with "
                 "--key-password-file FILE", cfg->key);
        return RLK_ERR_TLS;
    }
    SSL_CTX_set_default_passwd_cb(t->ctx, rlk_tls_pass_cb);
    SSL_CTX_set_default_passwd_cb_userdata(t->ctx, (void *)cfg->key_password_file);
    if (SSL_CTX_use_PrivateKey_file(t->ctx, cfg->key, SSL_FILETYPE_PEM) != 1) {
        rlk_tls_reason(why, sizeof why);
        if (strstr(why, "mismatch"))
            snprintf(err, len, "TLS: --key %s does not belong to --cert %s", cfg->key, cfg->cert);
        else
            snprintf(err, len, "TLS: --key %s: cannot read the private key (%s%s)", cfg->key, why,
                     cfg->key_password_file ? "; wrong pass phrase?" : "");
        return RLK_ERR_TLS;
    }
    SSL_CTX_set_default_passwd_cb_userdata(t->ctx, NULL);
    if (SSL_CTX_check_private_key(t->ctx) != 1) {
        rlk_tls_reason(why, sizeof why);
        snprintf(err, len, "TLS: --key %s does not belong to --cert %s", cfg->key, cfg->cert);
        return RLK_ERR_TLS;
    }
    return RLK_OK;
}

int rlk_tls_new(const rlk_tls_config *cfg, rlk_tls **out, char *err, size_t errlen)
{
    rlk_tls *t;
    int rc;

    *out = NULL;
    /* No atexit cleanup: a pump may still be ending when the program exits. */
    if (OPENSSL_init_ssl(OPENSSL_INIT_NO_ATEXIT | OPENSSL_INIT_LOAD_SSL_STRINGS |
                         OPENSSL_INIT_LOAD_CRYPTO_STRINGS, NULL) != 1) {
        ERR_clear_error();
        snprintf(errlen ? err : NULL, errlen, "TLS: OpenSSL failed to initialise");
        return RLK_ERR_TLS;
    }
    t = calloc(1, sizeof *t);
    if (!t || !(t->ctx = SSL_CTX_new(TLS_client_method()))) {
        free(t);
        ERR_clear_error();
        snprintf(err, errlen, "out of memory");
        return RLK_ERR_NOMEM;
    }
    pthread_mutex_init(&t->mu, NULL);
    rlk_clock_cond_init(&t->cv);
    t->insecure = cfg->insecure != 0;
    SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
    SSL_CTX_set_mode(t->ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_verify(t->ctx, t->insecure ? SSL_VERIFY_NONE : SSL_VERIFY_PEER, NULL);
    if (cfg->sni && !(t->sni = strdup(cfg->sni)))
        rc = (snprintf(err, errlen, "out of memory"), RLK_ERR_NOMEM);
    else
        rc = rlk_tls_load(t, cfg, err, errlen);
    ERR_clear_error();
    if (rc != RLK_OK) {
        rlk_tls_free(t);
        return rc;
    }
    *out = t;
    return RLK_OK;
}

/* Joins the pump threads that have ended (they have left t's lists and
 * only return now: each join is short). */
static void rlk_tls_join_ended(rlk_tls *t)
{
    rlk_ended *e;

    pthread_mutex_lock(&t->mu);
    e = t->ended;
    t->ended = NULL;
    pthread_mutex_unlock(&t->mu);
    while (e) {
        rlk_ended *next = e->next;

        (void)pthread_join(e->th, NULL);
        free(e);
        e = next;
    }
}

void rlk_tls_free(rlk_tls *t)
{
    long long until;

    if (!t)
        return;
    until = rlk_clock_now_ns() + RLK_TLS_FREE_WAIT_MS * RLK_NS_PER_MS;
    pthread_mutex_lock(&t->mu);
    while (t->pumps > 0 && !rlk_clock_cond_wait_until(&t->cv, &t->mu, until))
        ;
    if (t->pumps > 0) {         /* a connection still open: its pump keeps the rest */
        pthread_mutex_unlock(&t->mu);
        rlk_tls_join_ended(t);
        SSL_CTX_free(t->ctx);   /* reference counted: the SSL objects hold their own */
        return;                 /* t itself stays for the pumps (a leak, never a crash) */
    }
    pthread_mutex_unlock(&t->mu);
    rlk_tls_join_ended(t);
    SSL_CTX_free(t->ctx);
    pthread_mutex_destroy(&t->mu);
    pthread_cond_destroy(&t->cv);
    free(t->sni);
    free(t);
}

void rlk_tls_last_peer(rlk_tls *t, rlk_tls_peer *out)
{
    pthread_mutex_lock(&t->mu);
    *out = t->last;
    pthread_mutex_unlock(&t->mu);
}

unsigned long long rlk_tls_handshakes(rlk_tls *t)
{
    unsigned long long n;

    pthread_mutex_lock(&t->mu);
    n = t->handshakes;
    pthread_mutex_unlock(&t->mu);
    return n;
}

int rlk_tls_live_pumps(rlk_tls *t)
{
    int n;

    pthread_mutex_lock(&t->mu);
    n = t->pumps;
    pthread_mutex_unlock(&t->mu);
    return n;
}

/* ---------------------------------------------------------------- dialling */

static int rlk_ms_left(long long deadline_ns)
{
    long long left = (deadline_ns - rlk_clock_now_ns()) / RLK_NS_PER_MS;

    return left <= 0 ? 0 : left > 1000000 ? 1000000 : (int)left + 1;
}

/* Waits for events on fd until the deadline: 1 ready, 0 timed out. */
static int rlk_tls_wait(int fd, short events, long long deadline_ns)
{
    struct pollfd p = {.fd = fd, .events = events};

    for (;;) {
        int ms = rlk_ms_left(deadline_ns), n;

        if (ms == 0)
            return 0;
        n = poll(&p, 1, ms);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 1;       /* let the next call report it */
    }
}

static void rlk_tls_keepalive(int fd)
{
    int on = 1, idle = 15, intvl = 5, cnt = 3;

    (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on);
    (void)setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
    (void)setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
}

/* A connected non-blocking TCP socket, or -1 with err (errno kept). */
static int rlk_tls_tcp(const char *host, int port, long long deadline_ns, int *timed_out,
                       char *err, size_t errlen)
{
    struct addrinfo hints, *res = NULL, *ai;
    char service[16];
    int fd = -1, gai, saved = 0;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(service, sizeof service, "%d", port);
    if ((gai = getaddrinfo(host, service, &hints, &res)) != 0) {
        snprintf(err, errlen, "%s", gai_strerror(gai));
        errno = 0;
        return -1;
    }
    for (ai = res; ai; ai = ai->ai_next) {
        int soerr = 0;
        socklen_t sl = sizeof soerr;

        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            saved = errno;
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
            break;
        if (errno == EINPROGRESS) {
            if (!rlk_tls_wait(fd, POLLOUT, deadline_ns)) {
                close(fd);
                fd = -1;
                *timed_out = 1;
                saved = ETIMEDOUT;
                break;
            }
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0 && soerr == 0)
                break;
            errno = soerr ? soerr : errno;
        }
        saved = errno;
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        snprintf(err, errlen, "%s", *timed_out ? "Connection timed out" : strerror(saved));
        errno = saved;
        return -1;
    }
    rlk_tls_keepalive(fd);
    return fd;
}

static int rlk_is_ip(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

/* Runs one SSL call to completion within the deadline: its positive result
 * (bytes for a read or write), 0 timed out, -1 failed (SSL_get_error's code
 * in *code). */
static int rlk_tls_drive(SSL *ssl, int fd, long long deadline_ns, int *code,
                         int (*op)(SSL *, void *), void *arg)
{
    for (;;) {
        int r, e;

        ERR_clear_error();
        r = op(ssl, arg);
        if (r > 0)
            return r;
        e = SSL_get_error(ssl, r);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
            if (!rlk_tls_wait(fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, deadline_ns))
                return 0;
            continue;
        }
        *code = e;
        return -1;
    }
}

static int rlk_op_connect(SSL *ssl, void *arg)
{
    (void)arg;
    return SSL_connect(ssl);
}

typedef struct rlk_io_arg {
    char *buf;
    int len;
} rlk_io_arg;

static int rlk_op_write(SSL *ssl, void *arg)
{
    rlk_io_arg *a = arg;

    return SSL_write(ssl, a->buf, a->len);
}

static int rlk_op_read(SSL *ssl, void *arg)
{
    rlk_io_arg *a = arg;

    return SSL_read(ssl, a->buf, a->len);
}

/* Why a handshake (or the first round trip on it) failed, in one line.
 * handshaken: the client's side of the handshake was done (the failure came
 * on the first round trip); with_cert: a client certificate was offered. */
static void rlk_tls_why(SSL *ssl, int code, const char *name, int handshaken, int with_cert,
                        char *err, size_t errlen)
{
    long v = SSL_get_verify_result(ssl);
    char reason[200];

    rlk_tls_reason(reason, sizeof reason);
    if (v != X509_V_OK && (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH))
        snprintf(err, errlen, "TLS: the server's certificate does not name %s (%s; connect by "
                 "a name the certificate has, or give it with --sni)", name,
                 X509_verify_cert_error_string(v));
    else if (v != X509_V_OK)
        snprintf(err, errlen, "TLS: the server's certificate is not trusted: %s%s",
                 X509_verify_cert_error_string(v),
                 v == X509_V_ERR_CERT_HAS_EXPIRED ? "" : " (give its CA with --cacert or --cacertdir)");
    else if (strstr(reason, "certificate required"))
        snprintf(err, errlen, "TLS: the server requires a client certificate (--cert and --key): "
                 "%s", reason);
    else if (strstr(reason, "alert") && (strstr(reason, "certificate") || strstr(reason, "unknown ca")))
        snprintf(err, errlen, "TLS: the server refused the client certificate: %s", reason);
    else if (handshaken && !reason[0] && (code == SSL_ERROR_SYSCALL || code == SSL_ERROR_ZERO_RETURN))
        /* TLS 1.3: a server that wants a client certificate (tls-auth-clients) or
         * refuses the one it got says so after the client's side is done, and its
         * alert is often lost to the reset of the closed connection. */
        snprintf(err, errlen, with_cert
                     ? "TLS: the server ended the connection right after the handshake: it "
                       "refused the client certificate (is it signed by a CA the server trusts?)"
                     : "TLS: the server ended the connection right after the handshake, as a "
                       "server that requires a client certificate does (give --cert and --key)");
    else if (strstr(reason, "wrong version number") || strstr(reason, "packet length") ||
             strstr(reason, "unexpected eof") || strstr(reason, "record layer") ||
             (code == SSL_ERROR_SYSCALL && !reason[0]) || code == SSL_ERROR_ZERO_RETURN)
        snprintf(err, errlen, "TLS: no TLS handshake: %s (is this a plain-TCP port? use "
                 "redis:// for it)", reason[0] ? reason : "the server closed the connection");
    else
        snprintf(err, errlen, "TLS: handshake failed: %s",
                 reason[0] ? reason : "the connection was closed");
}

static void rlk_tls_note_peer(rlk_tls *t, SSL *ssl, const char *addr)
{
    rlk_tls_peer p;
    X509 *cert = SSL_get1_peer_certificate(ssl);
    const char *cipher = SSL_get_cipher_name(ssl);

    memset(&p, 0, sizeof p);
    p.known = 1;
    p.verified = !t->insecure;
    snprintf(p.addr, sizeof p.addr, "%s", addr);
    snprintf(p.protocol, sizeof p.protocol, "%s", SSL_get_version(ssl));
    snprintf(p.cipher, sizeof p.cipher, "%s", cipher ? cipher : "?");
    if (cert) {
        int days = 0, secs = 0;

        X509_NAME_oneline(X509_get_subject_name(cert), p.subject, sizeof p.subject);
        X509_NAME_oneline(X509_get_issuer_name(cert), p.issuer, sizeof p.issuer);
        if (ASN1_TIME_diff(&days, &secs, NULL, X509_get0_notAfter(cert)) == 1)
            p.days_left = days - (secs < 0 ? 1 : 0);
        X509_free(cert);
    }
    ERR_clear_error();
    pthread_mutex_lock(&t->mu);
    t->last = p;
    t->handshakes++;
    pthread_mutex_unlock(&t->mu);
}

static void *rlk_pump_main(void *arg);

/* Takes p off its rlk_tls's list of live connections. */
static void rlk_pump_unlink(rlk_pump *p)
{
    rlk_tls *t = p->t;

    pthread_mutex_lock(&t->mu);
    if (p->prev)
        p->prev->next = p->next;
    else if (t->live == p)
        t->live = p->next;
    if (p->next)
        p->next->prev = p->prev;
    p->next = p->prev = NULL;
    pthread_mutex_unlock(&t->mu);
}

int rlk_tls_peer_closed(rlk_tls *t, int fd)
{
    int closed = 1;     /* no pump for fd: it ended, and so did the connection */

    pthread_mutex_lock(&t->mu);
    for (rlk_pump *p = t->live; p; p = p->next) {
        if (p->app_peer == fd) {
            struct pollfd q = {.fd = p->tcp, .events = POLLRDHUP};
            int n;

            do {
                n = poll(&q, 1, 0);
            } while (n < 0 && errno == EINTR);
            closed = n > 0 && (q.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
            break;      /* the newest with that number: an older one is ending */
        }
    }
    pthread_mutex_unlock(&t->mu);
    return closed;
}

/* Starts the pump of a finished handshake; *app_fd is the caller's end. */
static int rlk_tls_start_pump(rlk_tls *t, SSL *ssl, int tcp, int *app_fd)
{
    int sv[2], fl;
    rlk_pump *p;
    pthread_t th;
    pthread_attr_t attr;
    sigset_t all, old;
    int rc;

    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
        return -1;
    rlk_tls_join_ended(t);
    if (!(p = calloc(1, sizeof *p)) || !(p->ended = calloc(1, sizeof *p->ended))) {
        free(p);
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    fl = fcntl(sv[1], F_GETFL);
    (void)fcntl(sv[1], F_SETFL, fl | O_NONBLOCK);
    p->t = t;
    p->ssl = ssl;
    p->tcp = tcp;
    p->app = sv[1];
    p->app_peer = sv[0];
    pthread_mutex_lock(&t->mu);
    t->pumps++;
    p->next = t->live;
    if (t->live)
        t->live->prev = p;
    t->live = p;
    pthread_mutex_unlock(&t->mu);
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_JOINABLE);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);       /* the pump takes no signal */
    rc = pthread_create(&th, &attr, rlk_pump_main, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        rlk_pump_unlink(p);
        pthread_mutex_lock(&t->mu);
        t->pumps--;
        pthread_mutex_unlock(&t->mu);
        free(p->ended);
        free(p);
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    *app_fd = sv[0];
    return 0;
}

int rlk_tls_dial(rlk_tls *t, const char *host, int port, long long deadline_ns, int *fd_out,
                 char *err, size_t errlen)
{
    char addr[300], line[256];
    const char *name = t->sni ? t->sni : host;
    int timed_out = 0, tcp, code = 0, r, handshaken;
    SSL *ssl;
    rlk_io_arg io;

    *fd_out = -1;
    snprintf(addr, sizeof addr, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
    tcp = rlk_tls_tcp(host, port, deadline_ns, &timed_out, err, errlen);
    if (tcp < 0)
        return timed_out ? RLK_ERR_TIMEOUT : RLK_ERR_IO;
    if (!(ssl = SSL_new(t->ctx)) || SSL_set_fd(ssl, tcp) != 1) {
        ERR_clear_error();
        SSL_free(ssl);
        close(tcp);
        snprintf(err, errlen, "out of memory");
        return RLK_ERR_NOMEM;
    }
    if (!rlk_is_ip(name))
        (void)SSL_set_tlsext_host_name(ssl, name);
    if (!t->insecure) {
        if (rlk_is_ip(name))
            (void)X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
        else
            (void)SSL_set1_host(ssl, name);
    }
    ERR_clear_error();
    r = rlk_tls_drive(ssl, tcp, deadline_ns, &code, rlk_op_connect, NULL);
    handshaken = r > 0;
    if (r > 0) {
        /* One round trip: a TLS 1.3 server refuses a client certificate (or
         * its absence) only after the client's handshake is done. */
        io.buf = "PING\r\n";
        io.len = 6;
        r = rlk_tls_drive(ssl, tcp, deadline_ns, &code, rlk_op_write, &io);
        for (size_t got = 0; r > 0 && !memchr(line, '\n', got) && got < sizeof line - 1;) {
            io.buf = line + got;
            io.len = (int)(sizeof line - 1 - got);
            r = rlk_tls_drive(ssl, tcp, deadline_ns, &code, rlk_op_read, &io);
            if (r > 0)
                got += (size_t)r;
        }
    }
    if (r == 0) {
        snprintf(err, errlen, "TLS: no answer to the handshake within the connect timeout (a "
                 "plain-TCP port? use redis:// for it)");
        ERR_clear_error();
        SSL_free(ssl);
        close(tcp);
        errno = ETIMEDOUT;
        return RLK_ERR_TIMEOUT;
    }
    if (r < 0) {
        rlk_tls_why(ssl, code, name, handshaken, SSL_get_certificate(ssl) != NULL, err, errlen);
        ERR_clear_error();
        SSL_free(ssl);
        close(tcp);
        errno = ECONNRESET;
        return RLK_ERR_IO;
    }
    rlk_tls_note_peer(t, ssl, addr);
    if (rlk_tls_start_pump(t, ssl, tcp, fd_out) != 0) {
        SSL_free(ssl);
        close(tcp);
        snprintf(err, errlen, "TLS: cannot start the connection's thread: %s", strerror(errno));
        return RLK_ERR_NOMEM;
    }
    return RLK_OK;
}

/* ---------------------------------------------------------------- the pump */

/* One SSL_read or SSL_write; returns bytes (> 0), 0 when it must wait
 * (*want: POLLIN or POLLOUT on the TCP socket), -1 when the connection is
 * over. */
static int rlk_pump_ssl(rlk_pump *p, int writing, short *want)
{
    int r, e;

    ERR_clear_error();
    r = writing ? SSL_write(p->ssl, p->up + p->up_off, (int)p->up_len)
                : SSL_read(p->ssl, p->down, (int)sizeof p->down);
    if (r > 0)
        return r;
    e = SSL_get_error(p->ssl, r);
    ERR_clear_error();
    if (e == SSL_ERROR_WANT_READ)
        *want |= POLLIN;
    else if (e == SSL_ERROR_WANT_WRITE)
        *want |= POLLOUT;
    else
        return -1;
    return 0;
}

/* Moves what can be moved without waiting; returns -1 when a side is gone
 * (app: the context was freed; server: the TLS connection ended). */
static int rlk_pump_step(rlk_pump *p, short *tcp_ev, short *app_ev, int *server_gone)
{
    int progress = 1;

    while (progress) {
        progress = 0;
        *tcp_ev = 0;
        *app_ev = 0;
        if (p->up_len == 0) {
            ssize_t n = read(p->app, p->up, sizeof p->up);

            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
                return -1;                  /* the context was freed */
            if (n > 0) {
                p->up_off = 0;
                p->up_len = (size_t)n;
                progress = 1;
            } else {
                *app_ev |= POLLIN;
            }
        }
        if (p->up_len > 0) {
            int n = rlk_pump_ssl(p, 1, tcp_ev);

            if (n < 0) {
                *server_gone = 1;
                return -1;
            }
            if (n > 0) {
                p->up_off += (size_t)n;
                p->up_len -= (size_t)n;
                progress = 1;
            }
        }
        if (p->down_len == 0) {
            int n = rlk_pump_ssl(p, 0, tcp_ev);

            if (n < 0) {
                *server_gone = 1;
                return -1;
            }
            if (n > 0) {
                p->down_off = 0;
                p->down_len = (size_t)n;
                progress = 1;
            }
        }
        if (p->down_len > 0) {
            ssize_t n = send(p->app, p->down + p->down_off, p->down_len, MSG_NOSIGNAL);

            if (n < 0 && errno != EAGAIN && errno != EINTR)
                return -1;
            if (n > 0) {
                p->down_off += (size_t)n;
                p->down_len -= (size_t)n;
                progress = 1;
            } else {
                *app_ev |= POLLOUT;
            }
        }
    }
    return 0;
}

/* The server ended the connection: hand over what it sent, then EOF. */
static void rlk_pump_drain(rlk_pump *p)
{
    while (p->down_len > 0) {
        struct pollfd w = {.fd = p->app, .events = POLLOUT};
        ssize_t n = send(p->app, p->down + p->down_off, p->down_len, MSG_NOSIGNAL);

        if (n > 0) {
            p->down_off += (size_t)n;
            p->down_len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return;
        if (poll(&w, 1, -1) < 0 && errno != EINTR)
            return;
        if (w.revents & (POLLHUP | POLLERR))
            return;
    }
}

static void *rlk_pump_main(void *arg)
{
    rlk_pump *p = arg;
    rlk_tls *t = p->t;
    rlk_ended *ended;
    int server_gone = 0;

    for (;;) {
        short tcp_ev, app_ev;
        struct pollfd pf[2];

        if (rlk_pump_step(p, &tcp_ev, &app_ev, &server_gone) < 0)
            break;
        pf[0].fd = p->tcp;
        pf[0].events = tcp_ev;
        pf[1].fd = p->app;
        pf[1].events = app_ev;
        pf[0].revents = pf[1].revents = 0;
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            break;
        if ((pf[1].revents & (POLLERR | POLLNVAL)) ||
            ((pf[1].revents & POLLHUP) && !(pf[1].revents & POLLIN)))
            break;              /* the context is gone */
    }
    rlk_pump_unlink(p);         /* before its descriptors are closed and reused */
    if (server_gone)
        rlk_pump_drain(p);
    else
        (void)SSL_shutdown(p->ssl);     /* close_notify, not waited for */
    ERR_clear_error();
    close(p->app);
    SSL_free(p->ssl);
    close(p->tcp);
    ended = p->ended;
    free(p);
    ended->th = pthread_self();
    pthread_mutex_lock(&t->mu);
    ended->next = t->ended;
    t->ended = ended;
    t->pumps--;
    pthread_cond_broadcast(&t->cv);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}
