/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.h - the one way a client dials a server (transport.c): plain
 * TCP, a unix socket, or TLS (tls.h) for rediss:// URLs. Every connection
 * of the library (pool, subscriber, watchdog, lease keeper, cluster nodes,
 * sentinels and the master they name, RedLock's servers) is opened here,
 * so a transport is added in one place and the layers above see a
 * redisContext whichever it is.
 *
 * The I/O of those contexts goes through the functions below, never
 * through hiredis's own read and write: for plain TCP and unix sockets
 * they are hiredis's (redisBufferRead, redisBufferWrite, redisGetReply,
 * redisFree); for TLS they read and write the connection's TLS session on
 * its socket in the calling thread (tls.h) and keep hiredis's parser: the
 * request is formatted into ctx->obuf by hiredis (redisAppendCommand*),
 * encrypted from there, and the decrypted reply is fed to ctx->reader
 * (redisReaderFeed). Their contract is hiredis's, errors included
 * (ctx->err, ctx->errstr, errno EAGAIN when a blocking socket's timeout
 * passed).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_TRANSPORT_H
#define RLK_TRANSPORT_H

#include <stddef.h>
#include <sys/time.h>

#include <hiredis/hiredis.h>

#include "rlk.h"

/* Opens a blocking connection to host:port (host NULL: the URL's own
 * address, its unix socket or host:port) within tv, TCP keep-alive on.
 * RLK_OK: *out is connected. Otherwise either *out is a context with err
 * set (the connect failed: the caller classifies it, rlk_set_ctx_error), or
 * *out is NULL and the code (RLK_ERR_IO, RLK_ERR_TIMEOUT, RLK_ERR_NOMEM) comes
 * with one line in why (the TLS handshake: "TLS: the server's certificate ...").
 * errno is kept for the pool's retry rule (a refused connect). */
int rlk_transport_dial(const rlk_client *c, const char *host, int port, struct timeval tv,
                       redisContext **out, char *why, size_t len);

/* The non-blocking form, for a caller that completes the connect in its own
 * poll loop (the async engine): the URL's own address, plain TCP or
 * unix only (a TLS handshake, or an address the sentinels give, is dialled
 * blocking: topo.h rlk_topo_dial_blocks). RLK_OK: *out is connecting (its
 * err may already be set: the caller classifies it); RLK_ERR_NOMEM. */
int rlk_transport_dial_nonblock(const rlk_client *c, redisContext **out);

/* As redisBufferWrite (a plain connection's with MSG_NOSIGNAL): writes what ctx->obuf holds (as much as the socket
 * takes on a non-blocking context); *done (may be NULL) is 1 once it is
 * empty. REDIS_OK or REDIS_ERR (ctx->err set). */
int rlk_transport_write(redisContext *ctx, int *done);
/* rlk_transport_write until ctx->obuf is empty (a blocking context), errno
 * cleared before each write. REDIS_OK or REDIS_ERR (ctx->err set). */
int rlk_transport_flush(redisContext *ctx);
/* redisBufferRead: reads what arrived into ctx's reader (blocking context:
 * waits for some, up to its timeout; non-blocking: all the socket has,
 * TLS: every whole record). REDIS_OK or REDIS_ERR (ctx->err set). */
int rlk_transport_read(redisContext *ctx);
/* redisGetReply: the next reply, writing what is pending and reading as
 * needed on a blocking context. */
int rlk_transport_get_reply(redisContext *ctx, void **reply);
/* redisCommand on a blocking context: the reply, NULL with ctx->err set. */
void *rlk_transport_command(redisContext *ctx, const char *format, ...);
/* redisFree, after the TLS session's end (close_notify when the connection
 * is still sound). NULL is fine. */
void rlk_transport_free(redisContext *ctx);
/* For a non-blocking context in a caller's poll loop: the events its TLS
 * session waits for beyond hiredis's (POLLOUT when a read needs the socket
 * writable: call rlk_transport_read when it is; POLLIN when a write needs
 * it readable: write again after the next read); 0 for a plain context. */
short rlk_transport_want(const redisContext *ctx);

/* What the peer of a connection left on it, seen without blocking and
 * without reading (a poll, then a one-byte MSG_PEEK): RLK_PEER_OPEN,
 * nothing to read; RLK_PEER_DATA, bytes wait (a reply, a TLS record, which
 * may be a close_notify, or decrypted bytes the TLS session holds: never
 * taken for a close); RLK_PEER_CLOSED, the socket reads end of file or
 * reports an error or hang-up. The check of a connection before it is used:
 * rlk_conn_alive (client/conn.h) and the async engine's write. */
enum { RLK_PEER_OPEN, RLK_PEER_DATA, RLK_PEER_CLOSED };
int rlk_transport_peer(const redisContext *ctx);

/* Where ctx is connected, "host:port" (IPv6: "[host]:port") or a socket's path, in buf; NULL
 * when ctx does not say (a context made from a socket). */
const char *rlk_transport_addr(const redisContext *ctx, char *buf, size_t len);

/* Sets up the client's transport from its URL and options (rlk_connect):
 * RLK_OK, or RLK_ERR_TLS / RLK_ERR_URL / RLK_ERR_NOMEM with one line in msg. */
int rlk_transport_setup(rlk_client *c, const rlk_options *o, char *msg, size_t len);

#endif /* RLK_TRANSPORT_H */
