/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.h - TLS to Redis on OpenSSL 3 (tls.c), for hiredis 0.14.1, which has
 * none.
 *
 * The shape: the transport connects a plain redisContext (hiredis's TCP
 * connect), rlk_tls_handshake() runs the TLS handshake on its socket and
 * checks the server's certificate (within the caller's deadline), leaving
 * the socket blocking again, and the transport binds the session to that
 * context (rlk_tls_conn_bind: its reader's private pointer); from then on the thread that uses the context reads
 * and writes the session itself (rlk_tls_conn_read, rlk_tls_conn_write),
 * on the real socket: no thread, no socket pair. hiredis's own read and
 * write must never touch such a context: transport.h's rlk_transport_read,
 * _write, _get_reply and _free do the I/O of every connection, hiredis's
 * for plain ones, the session's for TLS ones (found by rlk_tls_conn_of).
 *
 * A blocking context keeps hiredis's meaning of its socket timeouts
 * (redisSetTimeout sets SO_RCVTIMEO/SO_SNDTIMEO on the TCP socket: a read
 * that times out is EAGAIN, reported as a timeout); on a non-blocking one
 * (the async engine, RedLock) a call that would block says which event
 * the session waits for (rlk_tls_conn_want: a read may need the socket
 * writable, a write readable).
 *
 * One rlk_tls per client: the SSL_CTX (CA, client certificate) is built
 * once by rlk_tls_new; node clients of a cluster share their parent's. A
 * session is used by one thread at a time (its context's rule).
 * Every OpenSSL call leaves the calling thread's error queue empty.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_TLS_H
#define RLK_TLS_H

#include <stddef.h>

#include <hiredis/hiredis.h>

typedef struct rlk_tls rlk_tls;

/* What a client is asked to do (rlk_options.tls*, the CLI's --cacert ...). */
typedef struct rlk_tls_config {
    const char *cacert;         /* PEM file of trusted CAs; NULL: cacertdir, else the system store */
    const char *cacertdir;      /* directory of hashed CA certificates (c_rehash) */
    const char *cert;           /* client certificate chain (PEM), with key */
    const char *key;            /* its private key (PEM) */
    const char *key_password_file;  /* first line: the key's pass phrase */
    const char *sni;            /* server name sent and checked instead of the URL's host */
    int insecure;               /* nonzero: no certificate or name check */
} rlk_tls_config;

/* What the last handshake found, for `rlk --verbose` and `rlk check`. */
typedef struct rlk_tls_peer {
    int known;                  /* 0: no handshake yet */
    char addr[300];             /* host:port */
    char protocol[16];          /* "TLSv1.3" */
    char cipher[64];
    char subject[256];          /* the server certificate's subject, one line */
    char issuer[256];
    long days_left;             /* whole days until notAfter (negative: expired) */
    int verified;               /* 1: chain and name checked; 0: --insecure */
} rlk_tls_peer;

/* Builds the context: TLS 1.2 or newer, the CAs, the client certificate
 * and key. RLK_OK, or RLK_ERR_TLS (a file missing, unreadable, not PEM, a
 * key that does not match the certificate, an encrypted key without its
 * pass phrase) / RLK_ERR_NOMEM with one line in err. */
int rlk_tls_new(const rlk_tls_config *cfg, rlk_tls **out, char *err, size_t errlen);
/* Frees the context once the last connection made with it is closed
 * (sessions hold their own reference). NULL is fine. */
void rlk_tls_free(rlk_tls *t);

/* One TLS session on a connected socket. */
typedef struct rlk_tls_conn rlk_tls_conn;

/* Runs the handshake on tcp, a connected TCP socket to host:port (made
 * close-on-exec), the checks and one PING (a server that refuses the
 * client's certificate says so only after a TLS 1.3 handshake) before
 * deadline_ns (CLOCK_MONOTONIC). *conn_out: its session, to bind to the
 * socket's context (or to close with rlk_tls_conn_close); the socket stays
 * the caller's, blocking. RLK_OK; RLK_ERR_IO (TLS refused, certificate not
 * trusted, name mismatch), RLK_ERR_TIMEOUT (past the deadline) or
 * RLK_ERR_NOMEM, with one line in err. */
int rlk_tls_handshake(rlk_tls *t, int tcp, const char *host, int port, long long deadline_ns,
                      rlk_tls_conn **conn_out, char *err, size_t errlen);
/* The same on a TCP connection it makes first (hiredis's connect): *fd_out
 * is the socket, for redisConnectFd (tests, rlk-bench). Also RLK_ERR_IO or
 * RLK_ERR_TIMEOUT for the connect, errno kept. */
int rlk_tls_dial(rlk_tls *t, const char *host, int port, long long deadline_ns,
                 rlk_tls_conn **conn_out, int *fd_out, char *err, size_t errlen);

/* Ties conn to ctx (redisReaderSetPrivdata of its reader): rlk_tls_conn_of
 * finds it from then on, until rlk_tls_conn_close. */
void rlk_tls_conn_bind(rlk_tls_conn *conn, redisContext *ctx);
/* The session bound to ctx, NULL for a plain connection. Lock-free. */
rlk_tls_conn *rlk_tls_conn_of(const redisContext *ctx);

/* One SSL_read / SSL_write on the session (any thread that owns the
 * connection). > 0: bytes; 0 (read only): the server closed the
 * connection; -1 with errno: EAGAIN (it would block, or a blocking socket's
 * timeout passed: rlk_tls_conn_want says for what), EINTR, or another
 * errno with one line in err (a TLS failure: EPROTO). */
int rlk_tls_conn_read(rlk_tls_conn *conn, char *buf, int len, char *err, size_t errlen);
int rlk_tls_conn_write(rlk_tls_conn *conn, const char *buf, int len, char *err,
                       size_t errlen);
/* 1 when the session holds bytes the socket no longer shows (decrypted,
 * or read ahead): a poll() of the socket would not report them. */
int rlk_tls_conn_pending(const rlk_tls_conn *conn);
/* The poll events (POLLIN, POLLOUT) the last read (reading 1) or write
 * (0) that would have blocked waits for; 0 when it did not block. */
short rlk_tls_conn_want(const rlk_tls_conn *conn, int reading);

/* Ends the session: close_notify (not waited for, never blocking) when
 * clean, the SSL object freed, the binding gone. The socket stays open
 * (redisFree closes it, after). NULL is fine. */
void rlk_tls_conn_close(rlk_tls_conn *conn, int clean);

/* The last handshake's findings. */
void rlk_tls_last_peer(rlk_tls *t, rlk_tls_peer *out);
/* Handshakes completed so far and sessions open now (tests count them). */
unsigned long long rlk_tls_handshakes(rlk_tls *t);
int rlk_tls_live_conns(rlk_tls *t);

#endif /* RLK_TLS_H */
