/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tls.h - TLS to Redis on OpenSSL 3 (tls.c), for hiredis 0.14.1, which has
 * none.
 *
 * The shape: rlk_tls_dial() connects a TCP socket, runs the TLS handshake
 * and checks the server's certificate (all within the caller's deadline),
 * then hands back one end of a socket pair. A pump thread owned by the
 * connection moves bytes between the other end and the TLS connection. The
 * caller wraps its end in a plain blocking redisContext (redisConnectFd), so
 * every layer above (timeouts, poll(), the subscriber, lost replies) sees a
 * connection that behaves as a TCP one: a reply is readable when the server's
 * record has been decrypted, and when the server (or CLIENT KILL) closes the
 * TLS connection the pump closes its end and the context reads EOF.
 *
 * When the context is freed (redisFree closes its end) the pump reads EOF,
 * sends close_notify, frees the SSL object and the TCP socket, and ends.
 * rlk_tls_free waits (bounded) for the pumps of its connections to end and
 * joins their threads, so no thread of a freed client keeps running (a
 * program may fork after rlk_free: a pump thread still exiting inside
 * OpenSSL could leave the child a lock nobody releases).
 *
 * One rlk_tls per client: the SSL_CTX (CA, client certificate) is built
 * once by rlk_tls_new; node clients of a cluster share their parent's.
 * Every OpenSSL call leaves the calling thread's error queue empty.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_TLS_H
#define RLK_TLS_H

#include <stddef.h>

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
/* Waits up to 2 s for the pumps of closed connections to end, then frees.
 * NULL is fine. */
void rlk_tls_free(rlk_tls *t);

/* Connects to host:port and runs the handshake, the checks and one PING
 * (a server that refuses the client's certificate says so only after a
 * TLS 1.3 handshake) before deadline_ns (CLOCK_MONOTONIC). *fd_out: a
 * blocking, close-on-exec stream socket for redisConnectFd. RLK_OK;
 * RLK_ERR_IO (refused, TLS refused, certificate not trusted, name
 * mismatch), RLK_ERR_TIMEOUT (connect or handshake past the deadline) or
 * RLK_ERR_NOMEM, with one line in err. errno is kept for the classification
 * of a refused connect. */
int rlk_tls_dial(rlk_tls *t, const char *host, int port, long long deadline_ns, int *fd_out,
                 char *err, size_t errlen);

/* 1 when the server has closed the TLS connection whose caller's end is fd
 * (its TCP peer hung up) or the connection is over, even if the pump has
 * not yet passed the end on: a caller checks it before writing a request, as
 * a poll() of a TCP socket shows a closed peer at once. 0: open. */
int rlk_tls_peer_closed(rlk_tls *t, int fd);

/* The last handshake's findings. */
void rlk_tls_last_peer(rlk_tls *t, rlk_tls_peer *out);
/* Handshakes completed so far and pumps running now (tests count them). */
unsigned long long rlk_tls_handshakes(rlk_tls *t);
int rlk_tls_live_pumps(rlk_tls *t);

#endif /* RLK_TLS_H */
