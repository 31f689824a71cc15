/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.h - the client object (client.c): its defaults and the calls on it
 * that are not public. struct rlk_client itself is in client_t.h (the
 * threading rules are there); the public calls on it (rlk_connect,
 * rlk_eval, ...) are in rlk.h.
 *
 * Not installed; not a stable API. The CLI and the tests use it too.
 */
#ifndef RLK_CLIENT_H
#define RLK_CLIENT_H

#include "rlk.h"
#include "client/client_t.h"

#define RLK_DEFAULT_URL "redis://127.0.0.1:6379"
#define RLK_DEFAULT_CONNECT_TIMEOUT_MS 2000
#define RLK_DEFAULT_COMMAND_TIMEOUT_MS 5000
#define RLK_DEFAULT_POOL_SIZE 4
#define RLK_DEFAULT_WATCHDOG_LEASE_MS 30000LL
#define RLK_DEFAULT_MIN_REPLICAS_TIMEOUT_MS 1000

/* A client set up from opts (URL, password, transport, script set, pool
 * slots, topology table) but not connected: no I/O at all. For the async
 * engine (engine/engine.h), which opens its own connections and uses this
 * client for its settings only. NULL when out of memory; a bad setting is
 * in c->fatal and c->fatal_msg. Freed by rlk_free. */
rlk_client *rlk_client_prepare(const rlk_options *opts);

/* The client's own part of rlk_free (runtime/rt.c, which frees the lock
 * runtime first): its topology, connections, TLS, scripts and memory. */
void rlk_client_free(rlk_client *c);

/* The publish argument of the scripts that publish (scripts/lib/publish_cmd):
 * "spublish" when the client uses sharded pub/sub (rlk_client_pubsub), else
 * "publish". Callers append it as the script's last fixed argument. */
const char *rlk_publish_arg(rlk_client *c);

/* rlk_topo_counts_exact in the pub/sub mode c uses (rlk_client_pubsub): 1
 * when a release can tell whether a grant on a waiter's wake channel
 * reached it, so waiters queue with tickets on their wake channels (the
 * reentrant lock, the read-write lock's writers, both semaphores). */
int rlk_client_counts_exact(rlk_client *c);

#endif /* RLK_CLIENT_H */
