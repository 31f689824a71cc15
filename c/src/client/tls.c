/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.c - TLS connections on OpenSSL 3, read and written by the thread that
 * uses the connection (tls.h).
 *
 * A session is found from its redisContext through the private pointer of
 * the context's reply reader (hiredis's redisReaderSetPrivdata, which the
 * default reply functions never read): the lookup on every read and write
 * takes no lock, and a plain connection never holds one.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "rlk.h"
#include "client/clock.h"
#include "client/ref.h"
#include "client/tls.h"
#include "client/url.h"

struct rlk_tls {
    SSL_CTX *ctx;
    int insecure;
    char *sni;
    pthread_mutex_t mu;
    int refs;                   /* 1 for rlk_tls_free, 1 per open session */
    atomic_int live;            /* open sessions */
    atomic_ullong handshakes;
    rlk_tls_peer last;
};

struct rlk_tls_conn {
    rlk_tls *t;
    SSL *ssl;
    int fd;
    redisContext *owner;        /* the context whose reader points here; NULL: not bound */
    short want_read, want_write;    /* what the last blocked read / write waits for */
};

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

/* 1 when an OpenSSL call's result says it failed; its reason is then in why. */
static int rlk_tls_failed(int result, char *why, size_t len)
{
    if (result == 1)
        return 0;
    rlk_tls_reason(why, len);
    return 1;
}

/* A failed step of rlk_tls_load: the message in err, RLK_ERR_TLS. */
#define RLK_TLS_FAIL(...) (snprintf(err, len, __VA_ARGS__), RLK_ERR_TLS)
#define RLK_TLS_WHY(call) rlk_tls_failed((call), why, sizeof why)

static int rlk_tls_load(rlk_tls *t, const rlk_tls_config *cfg, char *err, size_t len)
{
    char why[200] = "";

    if (cfg->cacert && rlk_tls_readable("--cacert", cfg->cacert, 0, err, len))
        return RLK_ERR_TLS;
    if (cfg->cacertdir && rlk_tls_readable("--cacertdir", cfg->cacertdir, 1, err, len))
        return RLK_ERR_TLS;
    if ((cfg->cacert || cfg->cacertdir) &&
        RLK_TLS_WHY(SSL_CTX_load_verify_locations(t->ctx, cfg->cacert, cfg->cacertdir)))
        return RLK_TLS_FAIL("TLS: cannot load the CA certificates of %s: %s",
                            cfg->cacert ? cfg->cacert : cfg->cacertdir, why);
    if (!cfg->cacert && !cfg->cacertdir && RLK_TLS_WHY(SSL_CTX_set_default_verify_paths(t->ctx)))
        return RLK_TLS_FAIL("TLS: cannot load the system's CA certificates: %s", why);
    if (!cfg->cert != !cfg->key)
        return RLK_TLS_FAIL("TLS: %s without %s: a client certificate needs both",
                            cfg->cert ? "--cert" : "--key", cfg->cert ? "--key" : "--cert");
    if (!cfg->cert)
        return cfg->key_password_file ? RLK_TLS_FAIL("TLS: --key-password-file without --key")
                                      : RLK_OK;
    if (rlk_tls_readable("--cert", cfg->cert, 0, err, len) ||
        rlk_tls_readable("--key", cfg->key, 0, err, len) ||
        (cfg->key_password_file &&
         rlk_tls_readable("--key-password-file", cfg->key_password_file, 0, err, len)))
        return RLK_ERR_TLS;
    if (RLK_TLS_WHY(SSL_CTX_use_certificate_chain_file(t->ctx, cfg->cert)))
        return RLK_TLS_FAIL("TLS: --cert %s: not a PEM certificate (%s)", cfg->cert, why);
    if (rlk_tls_key_encrypted(cfg->key) && !cfg->key_password_file)
        return RLK_TLS_FAIL("TLS: --key %s is encrypted: give its pass phrase with "
                            "--key-password-file FILE", cfg->key);
    SSL_CTX_set_default_passwd_cb(t->ctx, rlk_tls_pass_cb);
    SSL_CTX_set_default_passwd_cb_userdata(t->ctx, (void *)cfg->key_password_file);
    if (RLK_TLS_WHY(SSL_CTX_use_PrivateKey_file(t->ctx, cfg->key, SSL_FILETYPE_PEM)) &&
        !strstr(why, "mismatch"))
        return RLK_TLS_FAIL("TLS: --key %s: cannot read the private key (%s%s)", cfg->key, why,
                            cfg->key_password_file ? "; wrong pass phrase?" : "");
    SSL_CTX_set_default_passwd_cb_userdata(t->ctx, NULL);
    /* A key of another certificate: found by the load ("mismatch") or by the check. */
    if (strstr(why, "mismatch") || RLK_TLS_WHY(SSL_CTX_check_private_key(t->ctx)))
        return RLK_TLS_FAIL("TLS: --key %s does not belong to --cert %s", cfg->key, cfg->cert);
    return RLK_OK;
}

int rlk_tls_new(const rlk_tls_config *cfg, rlk_tls **out, char *err, size_t errlen)
{
    rlk_tls *t;
    int rc;

    *out = NULL;
    /* No atexit cleanup: a connection may still be open when the program exits. */
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
    t->refs = 1;
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

/* Drops one reference (the owner's, or a closed session's); the last frees t. */
void rlk_tls_free(rlk_tls *t)
{
    if (!t || !rlk_ref_put(&t->mu, &t->refs))
        return;
    SSL_CTX_free(t->ctx);
    pthread_mutex_destroy(&t->mu);
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
    return atomic_load(&t->handshakes);
}

int rlk_tls_live_conns(rlk_tls *t)
{
    return atomic_load(&t->live);
}

/* ---------------------------------------------------------------- the write BIO */

/* The socket's writes, as OpenSSL's socket BIO makes them but with send(2)
 * and MSG_NOSIGNAL: a write to a connection the peer has closed fails with
 * EPIPE and raises no SIGPIPE, so a request over TLS needs no signal mask
 * around it (two pthread_sigmask calls a request), as a plain connection's
 * (transport.c). Reads keep OpenSSL's socket BIO (its end-of-file rules). */
static BIO_METHOD *rlk_tls_wbio_method;
static pthread_once_t rlk_tls_wbio_once = PTHREAD_ONCE_INIT;

static int rlk_tls_wbio_write(BIO *b, const char *buf, int len)
{
    int fd = (int)(intptr_t)BIO_get_data(b);
    ssize_t n;

    BIO_clear_retry_flags(b);
    errno = 0;
    n = send(fd, buf, (size_t)len, MSG_NOSIGNAL);
    if (n <= 0 && BIO_sock_should_retry((int)n))
        BIO_set_retry_write(b);
    return (int)n;
}

static long rlk_tls_wbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)num;
    switch (cmd) {
    case BIO_CTRL_FLUSH:        /* nothing buffered */
    case BIO_CTRL_DUP:
        return 1;
    case BIO_C_GET_FD:
        if (ptr)
            *(int *)ptr = (int)(intptr_t)BIO_get_data(b);
        return (long)(intptr_t)BIO_get_data(b);
    default:
        return 0;
    }
}

static int rlk_tls_wbio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static int rlk_tls_wbio_destroy(BIO *b)
{
    BIO_set_data(b, NULL);      /* the socket is the transport's to close */
    return 1;
}

static void rlk_tls_wbio_init(void)
{
    BIO_METHOD *m = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK | BIO_TYPE_DESCRIPTOR,
                                 "rlk socket write");

    if (m && (BIO_meth_set_write(m, rlk_tls_wbio_write) != 1 ||
              BIO_meth_set_ctrl(m, rlk_tls_wbio_ctrl) != 1 ||
              BIO_meth_set_create(m, rlk_tls_wbio_create) != 1 ||
              BIO_meth_set_destroy(m, rlk_tls_wbio_destroy) != 1)) {
        BIO_meth_free(m);
        m = NULL;
    }
    ERR_clear_error();
    rlk_tls_wbio_method = m;
}

/* Gives ssl the socket fd: OpenSSL's socket BIO to read it, rlk's to write
 * it. 1, or 0 (out of memory; ssl keeps nothing). */
static int rlk_tls_set_fd(SSL *ssl, int fd)
{
    BIO *rbio, *wbio;

    pthread_once(&rlk_tls_wbio_once, rlk_tls_wbio_init);
    if (!rlk_tls_wbio_method)
        return 0;
    rbio = BIO_new_socket(fd, BIO_NOCLOSE);
    wbio = BIO_new(rlk_tls_wbio_method);
    if (!rbio || !wbio) {
        BIO_free(rbio);
        BIO_free(wbio);
        return 0;
    }
    BIO_set_data(wbio, (void *)(intptr_t)fd);
    SSL_set_bio(ssl, rbio, wbio);   /* ssl owns both now */
    return 1;
}

/* ---------------------------------------------------------------- dialling */

/* Waits for events on fd until the deadline: 1 ready, 0 timed out. */
static int rlk_tls_wait(int fd, short events, long long deadline_ns)
{
    struct pollfd p = {.fd = fd, .events = events};

    for (;;) {
        long long ms = (deadline_ns - rlk_clock_now_ns()) / RLK_NS_PER_MS;
        int n;

        if (ms <= 0)
            return 0;
        n = poll(&p, 1, ms > 1000000 ? 1000000 : (int)ms + 1);
        if (n > 0)
            return 1;
        if (n < 0 && errno != EINTR)
            return 1;       /* let the next call report it */
    }
}

/* O_NONBLOCK on or off: the handshake polls against its deadline, and
 * hiredis's blocking contexts rely on a blocking socket. */
static int rlk_tls_nonblock(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL);

    return fl < 0 || fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK) < 0 ? -1 : 0;
}

static int rlk_is_ip(const char *host)
{
    unsigned char buf[sizeof(struct in6_addr)];

    return inet_pton(AF_INET, host, buf) == 1 || inet_pton(AF_INET6, host, buf) == 1;
}

enum { RLK_TLS_CONNECT, RLK_TLS_WRITE, RLK_TLS_READ };

/* Runs one SSL call (op: RLK_TLS_CONNECT, or a write or read of buf) to
 * completion within the deadline: its positive result (bytes for a read or
 * write), 0 timed out, -1 failed (SSL_get_error's code in *code). */
static int rlk_tls_drive(SSL *ssl, int fd, long long deadline_ns, int *code, int op, char *buf,
                         int len)
{
    for (;;) {
        int r, e;

        ERR_clear_error();
        r = op == RLK_TLS_CONNECT ? SSL_connect(ssl)
            : op == RLK_TLS_WRITE ? SSL_write(ssl, buf, len) : SSL_read(ssl, buf, len);
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

/* A new session on t: what its handshake found, and its reference and counts. */
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
    t->refs++;
    t->live++;
    pthread_mutex_unlock(&t->mu);
}

int rlk_tls_handshake(rlk_tls *t, int tcp, const char *host, int port, long long deadline_ns,
                      rlk_tls_conn **conn_out, char *err, size_t errlen)
{
    char addr[300], line[256];
    const char *name = t->sni ? t->sni : host;
    int code = 0, r, handshaken;
    SSL *ssl;
    rlk_tls_conn *conn;

    *conn_out = NULL;
    rlk_url_host_port(addr, sizeof addr, host, port);
    if (fcntl(tcp, F_SETFD, FD_CLOEXEC) != 0 || rlk_tls_nonblock(tcp, 1) != 0)
        return snprintf(err, errlen, "TLS: cannot set up the connection: %s", strerror(errno)),
               RLK_ERR_IO;
    if (!(ssl = SSL_new(t->ctx)) || !rlk_tls_set_fd(ssl, tcp)) {
        ERR_clear_error();
        SSL_free(ssl);
        snprintf(err, errlen, "out of memory");
        return RLK_ERR_NOMEM;
    }
    if (!rlk_is_ip(name))
        (void)SSL_set_tlsext_host_name(ssl, name);
    if (!t->insecure && rlk_is_ip(name))
        (void)X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name);
    else if (!t->insecure)
        (void)SSL_set1_host(ssl, name);
    ERR_clear_error();
    r = rlk_tls_drive(ssl, tcp, deadline_ns, &code, RLK_TLS_CONNECT, NULL, 0);
    handshaken = r > 0;
    if (r > 0) {
        /* One round trip: a TLS 1.3 server refuses a client certificate (or
         * its absence) only after the client's handshake is done. */
        r = rlk_tls_drive(ssl, tcp, deadline_ns, &code, RLK_TLS_WRITE, "PING\r\n", 6);
        for (size_t got = 0; r > 0 && !memchr(line, '\n', got) && got < sizeof line - 1;) {
            r = rlk_tls_drive(ssl, tcp, deadline_ns, &code, RLK_TLS_READ, line + got,
                              (int)(sizeof line - 1 - got));
            if (r > 0)
                got += (size_t)r;
        }
    }
    if (r <= 0) {
        if (r == 0)
            snprintf(err, errlen, "TLS: no answer to the handshake within the connect timeout (a "
                     "plain-TCP port? use redis:// for it)");
        else
            rlk_tls_why(ssl, code, name, handshaken, SSL_get_certificate(ssl) != NULL, err, errlen);
        ERR_clear_error();
        SSL_free(ssl);
        errno = r == 0 ? ETIMEDOUT : ECONNRESET;
        return r == 0 ? RLK_ERR_TIMEOUT : RLK_ERR_IO;
    }
    /* A server that closes without close_notify (CLIENT KILL, a crash) ends
     * the connection as a plain TCP close does: end of file. */
    SSL_set_options(ssl, SSL_OP_IGNORE_UNEXPECTED_EOF);
    /* One read(2) per record instead of two (header, then body): what the
     * socket had beyond the record waits in the session, which
     * rlk_tls_conn_pending reports, and the transport's reads drain. */
    SSL_set_read_ahead(ssl, 1);
    conn = calloc(1, sizeof *conn);
    if (!conn || rlk_tls_nonblock(tcp, 0) != 0) {
        int saved = conn ? errno : ENOMEM;

        free(conn);
        SSL_free(ssl);
        snprintf(err, errlen, "TLS: cannot set up the connection: %s", strerror(saved));
        errno = saved;
        return saved == ENOMEM ? RLK_ERR_NOMEM : RLK_ERR_IO;
    }
    rlk_tls_note_peer(t, ssl, addr);
    conn->t = t;
    conn->ssl = ssl;
    conn->fd = tcp;
    *conn_out = conn;
    return RLK_OK;
}

int rlk_tls_dial(rlk_tls *t, const char *host, int port, long long deadline_ns,
                 rlk_tls_conn **conn_out, int *fd_out, char *err, size_t errlen)
{
    long long ms = (deadline_ns - rlk_clock_now_ns()) / RLK_NS_PER_MS;
    struct timeval tv = {(time_t)(ms > 0 ? ms / 1000 : 0), ms > 0 ? (ms % 1000) * 1000 : 1000};
    redisContext *ctx = redisConnectWithTimeout(host, port, tv);   /* hiredis's connect */
    int saved = ctx ? errno : ENOMEM, rc;

    *fd_out = -1;
    *conn_out = NULL;
    if (!ctx || ctx->err) {
        snprintf(err, errlen, "%s", ctx ? ctx->errstr : strerror(saved));
        rc = saved == ETIMEDOUT || (ctx && strstr(ctx->errstr, "timed out")) ? RLK_ERR_TIMEOUT
                                                                              : RLK_ERR_IO;
        redisFree(ctx);
        errno = saved;
        return rc;
    }
    (void)redisEnableKeepAlive(ctx);
    rc = rlk_tls_handshake(t, ctx->fd, host, port, deadline_ns, conn_out, err, errlen);
    if (rc == RLK_OK) {
        *fd_out = ctx->fd;
        ctx->fd = -1;       /* the caller's socket now: redisFree leaves it open */
    }
    saved = errno;
    redisFree(ctx);
    errno = saved;
    return rc;
}

void rlk_tls_conn_bind(rlk_tls_conn *conn, redisContext *ctx)
{
    conn->owner = ctx;
    redisReaderSetPrivdata(ctx->reader, conn);
}

rlk_tls_conn *rlk_tls_conn_of(const redisContext *ctx)
{
    return ctx->reader ? ctx->reader->privdata : NULL;
}

/* ---------------------------------------------------------------- I/O */

/* What SSL call result r means: bytes (> 0), 0 end of file (reads), -1
 * with errno; *want set when it would block. */
static int rlk_tls_result(rlk_tls_conn *conn, int r, short *want, char *err, size_t errlen)
{
    int e, saved = errno;
    char reason[200];

    *want = 0;
    if (r > 0)
        return r;
    e = SSL_get_error(conn->ssl, r);
    switch (e) {
    case SSL_ERROR_WANT_READ:
    case SSL_ERROR_WANT_WRITE:
        ERR_clear_error();
        *want = e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT;
        errno = saved == EINTR ? EINTR : EAGAIN;
        return -1;
    case SSL_ERROR_ZERO_RETURN:
        ERR_clear_error();
        return 0;               /* close_notify, or (IGNORE_UNEXPECTED_EOF) a plain close */
    case SSL_ERROR_SYSCALL:
        rlk_tls_reason(reason, sizeof reason);
        if (saved == 0 && !reason[0])
            return 0;
        if (saved != 0) {
            snprintf(err, errlen, "%s", strerror(saved));
            errno = saved;
            return -1;
        }
        break;
    default:
        rlk_tls_reason(reason, sizeof reason);
        break;
    }
    snprintf(err, errlen, "TLS: %s", reason[0] ? reason : "the connection failed");
    errno = EPROTO;
    return -1;
}

int rlk_tls_conn_read(rlk_tls_conn *conn, char *buf, int len, char *err, size_t errlen)
{
    ERR_clear_error();
    errno = 0;
    return rlk_tls_result(conn, SSL_read(conn->ssl, buf, len), &conn->want_read, err, errlen);
}

int rlk_tls_conn_write(rlk_tls_conn *conn, const char *buf, int len, char *err, size_t errlen)
{
    int r;

    ERR_clear_error();
    errno = 0;
    r = rlk_tls_result(conn, SSL_write(conn->ssl, buf, len), &conn->want_write, err, errlen);
    if (r == 0) {               /* a write never ends in end of file */
        snprintf(err, errlen, "%s", strerror(EPIPE));
        errno = EPIPE;
        return -1;
    }
    return r;
}

int rlk_tls_conn_pending(const rlk_tls_conn *conn)
{
    /* Decrypted bytes, or raw bytes read ahead (a record not yet opened). */
    return SSL_pending(conn->ssl) > 0 || SSL_has_pending(conn->ssl);
}

short rlk_tls_conn_want(const rlk_tls_conn *conn, int reading)
{
    return reading ? conn->want_read : conn->want_write;
}

void rlk_tls_conn_close(rlk_tls_conn *conn, int clean)
{
    rlk_tls *t;

    if (!conn)
        return;
    t = conn->t;
    if (conn->owner)
        redisReaderSetPrivdata(conn->owner->reader, NULL);
    if (clean) {
        /* close_notify, not waited for: on a non-blocking socket it never
         * waits for a server that does not read (and the write BIO's send
         * raises no SIGPIPE). */
        (void)rlk_tls_nonblock(conn->fd, 1);
        (void)SSL_shutdown(conn->ssl);
    }
    ERR_clear_error();
    SSL_free(conn->ssl);
    free(conn);
    atomic_fetch_sub(&t->live, 1);
    rlk_tls_free(t);
}
