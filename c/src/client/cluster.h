/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.h - Redis Cluster routing (cluster.c), for a client opened with a
 * redis+cluster:// URL (docs/cluster.md).
 *
 * The client keeps the slot map (CLUSTER SLOTS; slotmap.h) and one node client per
 * node it has seen: a small rlk_client of its own (pool, fences, errors)
 * sharing the parent's script set, address-per-node messages and options.
 * Node clients live until the parent is freed, so a lost-reply note that
 * names one (rlk_lost_conn.via) stays valid.
 *
 * Every routed call runs on the master of its slot, through that node's
 * pool (rlk_pool_run), and follows:
 *   MOVED  - the slot's owner is updated (and the whole map refreshed, at
 *            most every RLK_CLUSTER_REFRESH_MS), then the call is retried;
 *   ASK    - ASKING + the call on the target, the map unchanged;
 *   TRYAGAIN, CLUSTERDOWN, LOADING, BUSY, MASTERDOWN - retried with a
 *            backoff (5 ms doubling to 200 ms);
 *   a connection error before the request was written - the map is
 *            refreshed and the call retried (a failover).
 * All of these are "did not run" answers. A request that was written and
 * lost its reply is never retried here: the lost-reply note is moved to
 * the parent (with via) for the caller to settle. Retries keep within the
 * thread's time limit (pool.h), else within the command timeout.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_CLUSTER_H
#define RLK_CLUSTER_H

#include <hiredis/hiredis.h>

#include "rlk.h"
#include "client/pool.h"
#include "client/slotmap.h"
#include "client/topo.h"

#define RLK_CLUSTER_MAX_NODES RLK_SLOTMAP_MAX_NODES
#define RLK_CLUSTER_REFRESH_MS 100      /* full map refreshes at most this often */
#define RLK_CLUSTER_ANY_SLOT RLK_TOPO_ANY_SLOT  /* a call with no key: any master */
#define RLK_CLUSTER_BAD_SLOT RLK_TOPO_BAD_SLOT  /* keys in several slots (rlk_cluster_keys_slot) */

typedef struct rlk_cluster rlk_cluster;

/* The cluster variant of the topology (topo.h): rlk_connect picks it for a
 * cluster URL. Its calls are routed (RLK_TOPO_ROUTED) by the functions
 * below; its node clients are standalone clients (rlk_topo_standalone). */
extern const struct rlk_topo rlk_topo_cluster;

/* From rlk_connect: the node clients of the URL's seeds. */
int rlk_cluster_setup(rlk_client *c, char *msg, size_t len);
/* From rlk_connect: fetches the slot map and loads the scripts on every
 * master (unless no_preload). Errors are recorded on c (not fatal: the next
 * call tries again). */
int rlk_cluster_connect(rlk_client *c);
void rlk_cluster_free(rlk_client *c);

/* op on the master of slot (RLK_CLUSTER_ANY_SLOT: any master), with the
 * redirect and retry rules above. Errors are recorded on c. */
int rlk_cluster_run(rlk_client *c, int slot, rlk_conn_op op, void *arg, int idempotent,
                    redisReply **reply);

/* The slot every one of keys hashes to; when they differ (naming what), a
 * call that Redis would refuse with
 * CROSSSLOT is refused before any round trip: RLK_CLUSTER_BAD_SLOT with
 * RLK_ERR_ARG recorded. RLK_CLUSTER_ANY_SLOT when nkeys is 0. */
int rlk_cluster_keys_slot(rlk_client *c, const char *what, int nkeys, const char *const *keys,
                          const size_t *keylens);
/* The slot argv routes by (its first key, argv[1]), or RLK_CLUSTER_ANY_SLOT
 * for a command without a key (CLIENT, SCRIPT, INFO, PING, ...). */
int rlk_cluster_command_slot(int argc, const char *const *argv, const size_t *lens);

/* A dedicated connection (rlk_conn_open) to some node, the one after the
 * last one handed out first, so that a subscriber whose node died goes on
 * with another. *addr (may be NULL, 300 bytes) gets its address. */
int rlk_cluster_conn_open(rlk_client *c, redisContext **out, char *addr);
/* A dedicated connection to the master of slot. */
int rlk_cluster_conn_open_slot(rlk_client *c, int slot, redisContext **out, char *addr);

/* The node clients of the current masters (refreshing the map first),
 * for per-master script loading and checking; at most max, returns how
 * many. They belong to c. */
int rlk_cluster_masters(rlk_client *c, rlk_client **out, int max);

/* For a subscriber: a -MOVED reply to SSUBSCRIBE (its text) gives the slot
 * to the node it names, as a redirected call would; anything else, or a
 * sunsubscribe push (the slot migrated away), refreshes the map (at most
 * every RLK_CLUSTER_REFRESH_MS). */
void rlk_cluster_redirected(rlk_client *c, const char *err);

/* The cluster's master of slot as "host:port" into buf; -1 when unknown. */
int rlk_cluster_owner_addr(rlk_client *c, int slot, char *buf, size_t len);
/* The Redis major version of the cluster's nodes (INFO server of one
 * master, asked once); 0 when unknown. */
int rlk_cluster_redis_major(rlk_client *c);

#endif /* RLK_CLUSTER_H */
