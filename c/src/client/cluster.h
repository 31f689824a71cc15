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
#include "client/slotmap.h"
#include "client/topo.h"

#define RLK_CLUSTER_MAX_NODES RLK_SLOTMAP_MAX_NODES
#define RLK_CLUSTER_REFRESH_MS 100      /* full map refreshes at most this often */

typedef struct rlk_cluster rlk_cluster;

/* The cluster variant of the topology (topo.h): rlk_connect picks it for a
 * cluster URL. Its calls are routed (RLK_TOPO_ROUTED) by the functions of
 * cluster.c behind the table; its node clients are standalone clients
 * (rlk_topo_standalone). */
extern const struct rlk_topo rlk_topo_cluster;

/* The slot argv routes by (its first key, argv[1]), or RLK_TOPO_ANY_SLOT
 * for a command without a key (CLIENT, SCRIPT, INFO, PING, ...). */
int rlk_cluster_command_slot(int argc, const char *const *argv, const size_t *lens);
/* Node clients get ids far from the public clients' (error.c keys on them); conn.c tells a
 * node's SELECT refusal by it. */
#define RLK_CLUSTER_NODE_ID_MIN (1ULL << 62)
/* The cluster's master of slot as "host:port" into buf; -1 when unknown. */
int rlk_cluster_owner_addr(rlk_client *c, int slot, char *buf, size_t len);

#endif /* RLK_CLUSTER_H */
