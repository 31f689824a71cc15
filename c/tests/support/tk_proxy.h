/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tk_proxy.h - a loopback TCP proxy that can partition its clients from the
 * server: the network cut of a pulled cable, for tests.
 *
 * It listens on 127.0.0.1 (a free port the kernel picks) and forwards every
 * accepted connection to 127.0.0.1:target, in one thread of its own (a poll
 * loop, woken by a pipe on every change; no sleeps).
 *
 *   pass  bytes flow both ways.
 *   cut   nothing moves: the proxy reads and writes nothing on any
 *         connection, so the bytes either side sends wait, unread, in the
 *         proxy's sockets (or in its buffer); connections stay open; new
 *         connections are accepted but not linked to the server. No RST, no
 *         FIN: client and server see silence. Once tk_proxy_cut returns,
 *         no byte moves until tk_proxy_heal.
 *   mute  the connections open now pass what their clients send, and what the server replies
 *         is read and dropped (the lost replies of requests that ran); a connection accepted
 *         later passes both ways. Not undone by a heal.
 *   heal  back to pass: the held bytes are delivered, none is dropped (as
 *         TCP delivers them when a partition ends before it gives up), and
 *         the connections accepted during the cut are linked to the server
 *         then. A connection its client closed during the cut delivers what
 *         it sent, then its end.
 */
#ifndef RLK_TK_PROXY_H
#define RLK_TK_PROXY_H

typedef struct tk_proxy tk_proxy;

/* A proxy to 127.0.0.1:target_port, passing. NULL on failure. */
tk_proxy *tk_proxy_start(int target_port);
/* Its port on 127.0.0.1. */
int tk_proxy_port(const tk_proxy *p);
void tk_proxy_cut(tk_proxy *p);
void tk_proxy_heal(tk_proxy *p);
void tk_proxy_mute(tk_proxy *p);
/* Connections open now (accepted, not yet closed); accepted while cut, in all. */
int tk_proxy_open(tk_proxy *p);
int tk_proxy_accepted_cut(tk_proxy *p);
/* Stops the thread (joined) and closes every connection. */
void tk_proxy_stop(tk_proxy *p);

/* A blocking TCP connection to 127.0.0.1:port; -1 on failure. */
int tk_tcp_connect(int port);

#endif /* RLK_TK_PROXY_H */
