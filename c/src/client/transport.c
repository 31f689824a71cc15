/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.c - dialling and I/O (transport.h): plain TCP and unix sockets
 * through hiredis, TLS through tls.c on the same redisContext.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "client/client_t.h"
#include "client/clock.h"
#include "client/tls.h"
#include "client/transport.h"
#include "client/url.h"

/* ---------------------------------------------------------------- I/O */

int rlk_transport_peer(const redisContext *ctx)
{
    rlk_tls_conn *conn = rlk_tls_conn_of(ctx);
    struct pollfd p;
    char b;
    ssize_t n;
    int rc;

    if (conn && rlk_tls_conn_pending(conn))
        return RLK_PEER_DATA;       /* the session holds bytes: a record, not the socket's end */
    p.fd = ctx->fd;
    p.events = POLLIN;
    p.revents = 0;
    do {
        rc = poll(&p, 1, 0);
    } while (rc < 0 && errno == EINTR);
    if (rc == 0)
        return RLK_PEER_OPEN;
    if (rc < 0 || (p.revents & (POLLERR | POLLNVAL)))
        return RLK_PEER_CLOSED;
    do {
        n = recv(ctx->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    } while (n < 0 && errno == EINTR);
    if (n > 0)
        return RLK_PEER_DATA;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return (p.revents & POLLHUP) ? RLK_PEER_CLOSED : RLK_PEER_OPEN;
    return RLK_PEER_CLOSED;         /* end of file, or an error (a reset) */
}

/* hiredis's error: the code, and errstr from errno's text or msg. */
static void rlk_transport_error(redisContext *ctx, int type, const char *msg)
{
    int saved = errno;

    ctx->err = type;
    if (msg && *msg)
        snprintf(ctx->errstr, sizeof ctx->errstr, "%s", msg);
    else
        snprintf(ctx->errstr, sizeof ctx->errstr, "%s", strerror(saved));
    errno = saved;
}

int rlk_transport_write(redisContext *ctx, int *done)
{
    rlk_tls_conn *conn = rlk_tls_conn_of(ctx);
    size_t len;

    if (ctx->err)
        return REDIS_ERR;
    len = ctx->obuf ? sdslen(ctx->obuf) : 0;
    if (len > 0) {
        char why[128] = "";
        /* Neither write raises SIGPIPE (MSG_NOSIGNAL, where hiredis's write(2) would; a TLS
         * session sends with it too, tls.c's write BIO): a request needs no signal mask
         * (client/conn.c). */
        ssize_t n = conn ? rlk_tls_conn_write(conn, ctx->obuf, len > INT_MAX ? INT_MAX : (int)len,
                                              why, sizeof why)
                         : send(ctx->fd, ctx->obuf, len, MSG_NOSIGNAL);

        if (n < 0) {
            if (!((errno == EAGAIN && !(ctx->flags & REDIS_BLOCK)) || errno == EINTR)) {
                rlk_transport_error(ctx, REDIS_ERR_IO, errno == EAGAIN ? NULL : why);
                return REDIS_ERR;
            }
        } else if ((size_t)n == len) {
            sdsfree(ctx->obuf);
            ctx->obuf = sdsempty();
        } else {
            sdsrange(ctx->obuf, n, -1);
        }
    }
    if (done)
        *done = !ctx->obuf || sdslen(ctx->obuf) == 0;
    return REDIS_OK;
}

int rlk_transport_flush(redisContext *ctx)
{
    int done = 0;

    while (!done) {
        errno = 0;
        if (rlk_transport_write(ctx, &done) != REDIS_OK)
            return REDIS_ERR;
    }
    return REDIS_OK;
}

int rlk_transport_read(redisContext *ctx)
{
    rlk_tls_conn *conn = rlk_tls_conn_of(ctx);
    char buf[16 * 1024];
    int block;

    if (!conn)
        return redisBufferRead(ctx);
    if (ctx->err)
        return REDIS_ERR;
    block = (ctx->flags & REDIS_BLOCK) != 0;
    for (int first = 1;; first = 0) {
        char why[128] = "";
        int n = rlk_tls_conn_read(conn, buf, (int)sizeof buf, why, sizeof why);

        if (n == 0) {
            /* After bytes of this call, a blocking context sees the end at its
             * next read, as over TCP (the session keeps reporting it); a
             * non-blocking one now, with what came before it fed (its loop
             * may not report the socket again). */
            if (!first && block)
                return REDIS_OK;
            rlk_transport_error(ctx, REDIS_ERR_EOF, "Server closed the connection");
            return REDIS_ERR;
        }
        if (n < 0) {
            /* Later rounds only take what the session already has. */
            if (!first || errno == EINTR || (errno == EAGAIN && !block))
                return REDIS_OK;
            rlk_transport_error(ctx, REDIS_ERR_IO, errno == EAGAIN ? NULL : why);
            return REDIS_ERR;
        }
        if (redisReaderFeed(ctx->reader, buf, (size_t)n) != REDIS_OK) {
            rlk_transport_error(ctx, ctx->reader->err, ctx->reader->errstr);
            return REDIS_ERR;
        }
        /* Blocking: what arrived, and what the session holds decrypted.
         * Non-blocking: until the socket has no more (an edge-triggered
         * loop, or a level-triggered one blind to the session's buffer,
         * would otherwise leave a reply unread). */
        if (block && rlk_tls_conn_pending(conn) == 0)
            return REDIS_OK;
    }
}

int rlk_transport_get_reply(redisContext *ctx, void **reply)
{
    void *aux = NULL;

    if (!rlk_tls_conn_of(ctx))
        return redisGetReply(ctx, reply);
    if (redisGetReplyFromReader(ctx, &aux) == REDIS_ERR)
        return REDIS_ERR;
    if (!aux && (ctx->flags & REDIS_BLOCK)) {
        if (rlk_transport_flush(ctx) != REDIS_OK)
            return REDIS_ERR;
        do {
            if (rlk_transport_read(ctx) == REDIS_ERR ||
                redisGetReplyFromReader(ctx, &aux) == REDIS_ERR)
                return REDIS_ERR;
        } while (!aux);
    }
    if (reply)
        *reply = aux;
    else
        freeReplyObject(aux);
    return REDIS_OK;
}

void *rlk_transport_command(redisContext *ctx, const char *format, ...)
{
    va_list ap;
    void *reply = NULL;
    int rc;

    va_start(ap, format);
    rc = redisvAppendCommand(ctx, format, ap);
    va_end(ap);
    if (rc != REDIS_OK || rlk_transport_get_reply(ctx, &reply) != REDIS_OK)
        return NULL;
    return reply;
}

void rlk_transport_free(redisContext *ctx)
{
    if (!ctx)
        return;
    rlk_tls_conn_close(rlk_tls_conn_of(ctx), !ctx->err);
    redisFree(ctx);
}

short rlk_transport_want(const redisContext *ctx)
{
    rlk_tls_conn *conn = ctx ? rlk_tls_conn_of(ctx) : NULL;

    if (!conn)
        return 0;
    return (short)((rlk_tls_conn_want(conn, 1) & POLLOUT) | (rlk_tls_conn_want(conn, 0) & POLLIN));
}

int rlk_transport_dial(const rlk_client *c, const char *host, int port, struct timeval tv,
                       redisContext **out, char *why, size_t len)
{
    long long tv_ns = (long long)tv.tv_sec * 1000000000LL + (long long)tv.tv_usec * 1000LL;
    long long deadline = rlk_clock_now_ns() + (tv_ns > 0 ? tv_ns : 1000LL * RLK_NS_PER_MS);
    redisContext *ctx;
    rlk_tls_conn *conn;
    int rc;

    *out = NULL;
    if (why && len)
        why[0] = '\0';
    if (!host && !c->url.is_unix) {
        host = c->url.host;
        port = c->url.port;
    }
    errno = 0;
    ctx = host ? redisConnectWithTimeout(host, port, tv) : redisConnectUnixWithTimeout(c->url.path, tv);
    if (!ctx) {
        snprintf(why, len, "out of memory");
        return RLK_ERR_NOMEM;
    }
    *out = ctx;
    if (ctx->err)
        return RLK_ERR_IO;
    if (host) {
        int saved = errno;

        (void)redisEnableKeepAlive(ctx);
        ctx->err = 0;       /* keep-alive is a nicety: never fail a connection on it */
        ctx->errstr[0] = '\0';
        errno = saved;
    }
    if (c->tls && host) {       /* the handshake on the TCP connection, within tv too */
        if ((rc = rlk_tls_handshake(c->tls, ctx->fd, host, port, deadline, &conn, why, len)) !=
            RLK_OK) {
            int saved = errno;

            redisFree(ctx);
            *out = NULL;
            errno = saved;
            return rc;
        }
        rlk_tls_conn_bind(conn, ctx);
    }
    return RLK_OK;
}

int rlk_transport_dial_nonblock(const rlk_client *c, redisContext **out)
{
    *out = c->url.is_unix ? redisConnectUnixNonBlock(c->url.path)
                          : redisConnectNonBlock(c->url.host, c->url.port);
    return *out ? RLK_OK : RLK_ERR_NOMEM;
}

const char *rlk_transport_addr(const redisContext *ctx, char *buf, size_t len)
{
    if (ctx && ctx->connection_type == REDIS_CONN_UNIX && ctx->unix_sock.path)
        snprintf(buf, len, "%s", ctx->unix_sock.path);
    else if (ctx && ctx->connection_type == REDIS_CONN_TCP && ctx->tcp.host)
        rlk_url_host_port(buf, len, ctx->tcp.host, ctx->tcp.port);
    else
        return NULL;
    return buf;
}

/* ---------------------------------------------------------------- setup */

static const char *rlk_opt_or_env(const char *opt, const char *env)
{
    const char *v;

    if (opt)
        return opt;
    v = getenv(env);
    return v && *v ? v : NULL;
}

static int rlk_env_on(const char *env)
{
    const char *v = getenv(env);

    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "no") != 0 && strcmp(v, "false") != 0;
}

int rlk_transport_setup(rlk_client *c, const rlk_options *o, char *msg, size_t len)
{
    rlk_tls_config cfg;
    int given = o->tls_cacert || o->tls_cacertdir || o->tls_cert || o->tls_key ||
                o->tls_key_password_file || o->tls_sni || o->tls_insecure;
    int on = c->url.tls || o->tls || rlk_env_on("RLK_TLS");
    int rc;

    if (c->url.is_unix && (on || given))
        return snprintf(msg, len, "TLS options given with a unix:// URL (a unix socket "
                        "is not encrypted: use rediss://host:port)"), RLK_ERR_TLS;
    if (!c->url.is_unix && !on && given)
        return snprintf(msg, len, "TLS options given with a plain redis:// URL (use "
                        "rediss:// or --tls)"), RLK_ERR_TLS;
    if (c->url.is_unix || !on)
        return RLK_OK;
    c->url.tls = 1;     /* what the client shows: rediss:// */
    memset(&cfg, 0, sizeof cfg);
    cfg.cacert = rlk_opt_or_env(o->tls_cacert, "RLK_TLS_CACERT");
    cfg.cacertdir = rlk_opt_or_env(o->tls_cacertdir, "RLK_TLS_CACERTDIR");
    cfg.cert = rlk_opt_or_env(o->tls_cert, "RLK_TLS_CERT");
    cfg.key = rlk_opt_or_env(o->tls_key, "RLK_TLS_KEY");
    cfg.key_password_file = rlk_opt_or_env(o->tls_key_password_file, "RLK_TLS_KEY_PASSWORD_FILE");
    cfg.sni = rlk_opt_or_env(o->tls_sni, "RLK_TLS_SNI");
    cfg.insecure = o->tls_insecure || rlk_env_on("RLK_TLS_INSECURE");
    rc = rlk_tls_new(&cfg, &c->tls, msg, len);
    if (rc == RLK_OK)
        c->tls_owned = 1;
    return rc;
}
