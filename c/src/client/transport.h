/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.h - the one way a client dials a server (transport.c): plain
 * TCP, a unix socket, or TLS (tls.h) for rediss:// URLs. Every connection
 * of the library (pool, subscriber, watchdog, lease keeper, cluster nodes,
 * sentinels and the master they name, RedLock's servers) is opened here,
 * so a transport is added in one place and the layers above see a blocking
 * redisContext whichever it is.
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
 * set (plain TCP or unix: the caller classifies it, rlk_set_ctx_error), or
 * *out is NULL and the code (RLK_ERR_IO, RLK_ERR_TIMEOUT, RLK_ERR_NOMEM) comes
 * with one line in why ("TLS 10.0.0.5:6380: the server's certificate ...").
 * errno is kept for the pool's retry rule (a refused connect). */
int rlk_transport_dial(const rlk_client *c, const char *host, int port, struct timeval tv,
                       redisContext **out, char *why, size_t len);

/* The non-blocking form, for a caller that completes the connect in its own
 * poll loop (RedLock's parallel calls): the URL's own address, plain TCP or
 * unix only (a TLS handshake, or an address the sentinels give, is dialled
 * blocking: topo.h rlk_topo_dial_blocks). RLK_OK: *out is connecting (its
 * err may already be set: the caller classifies it); RLK_ERR_NOMEM. */
int rlk_transport_dial_nonblock(const rlk_client *c, redisContext **out);

/* 1 when the client's connections are TLS. */
int rlk_transport_is_tls(const rlk_client *c);

/* Sets up the client's transport from its URL and options (rlk_connect):
 * RLK_OK, or RLK_ERR_TLS / RLK_ERR_URL / RLK_ERR_NOMEM with one line in msg. */
int rlk_transport_setup(rlk_client *c, const rlk_options *o, char *msg, size_t len);

#endif /* RLK_TRANSPORT_H */
