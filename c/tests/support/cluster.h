/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.h - a Redis Cluster on loopback for tests: 3 masters + 3 replicas.
 *
 * rlk_fx_cluster_start() starts six fixture servers (fixture.h) with
 * cluster-enabled yes (TMP/nodes.conf, the bus on its own free port via
 * cluster-port, cluster-node-timeout 2000 ms), runs
 *   redis-cli --cluster create 127.0.0.1:P1 ... 127.0.0.1:P6 --cluster-replicas 1 --cluster-yes
 * and returns once every node says cluster_state:ok (CLUSTER INFO) and every
 * node reports the same slot map (CLUSTER SLOTS: the same ranges, masters
 * and replicas), each master with one replica. Bounded: 30 s. Stopping
 * stops each node by PID and removes its temp dir (nodes.conf included).
 *
 * Node indexes are 0..5 in start order; which are masters changes with a
 * failover: ask rlk_fx_cluster_role(). The redis-cli binary is
 * $RLK_REDIS_CLI, else RLK_FX_REDIS_CLI (compile definition), else
 * "redis-cli" from PATH. Functions return 0 / -1 (reason on stderr) unless
 * said otherwise.
 */
#ifndef RLK_TEST_CLUSTER_H
#define RLK_TEST_CLUSTER_H

#include <stddef.h>

#include "fixture.h"

#define RLK_FX_CLUSTER_NODES 6
#define RLK_FX_CLUSTER_SLOTS 16384

typedef struct rlk_fx_cluster {
    int n;                                   /* RLK_FX_CLUSTER_NODES once started */
    rlk_fx_server node[RLK_FX_CLUSTER_NODES];
    long long start_ms;                      /* how long the start took */
    char id[RLK_FX_CLUSTER_NODES][48];       /* CLUSTER MYID of each node, read at start */
} rlk_fx_cluster;

/* Starts the six nodes and creates the cluster; on failure stops them. */
int rlk_fx_cluster_start(rlk_fx_cluster *c);

/* What rlk_fx_cluster_start_opts adds to every node. */
typedef struct rlk_fx_cluster_opts {
    int databases;      /* > 0: --cluster-databases N (Valkey 9: databases 0..N-1 in cluster
                         * mode; servers without the option fail to start); 0: the server's
                         * default (database 0 only) */
} rlk_fx_cluster_opts;

/* rlk_fx_cluster_start with options (o NULL: none). */
int rlk_fx_cluster_start_opts(rlk_fx_cluster *c, const rlk_fx_cluster_opts *o);
/* 1 when the server under test has numbered databases in cluster mode (cluster-databases,
 * Valkey 9), asked of node 0 (CONFIG GET cluster-databases); 0 when not or unknown. */
int rlk_fx_cluster_has_databases(const rlk_fx_cluster *c);
/* A cluster for a test of a database other than 0 (cl_databases.c, async_cldb.c), filled by
 * rlk_fx_cldb_start. */
typedef struct rlk_fx_cldb {
    int databases;          /* the nodes' cluster-databases; 0: the server's default */
    int has_dbs;            /* rlk_fx_cluster_has_databases: the nodes allow databases > 0 */
    int mst[3];             /* the three masters' node indexes */
    char seeds[400];        /* "redis+cluster://<seed a>,<seed b>" (rediss: a TLS-only cluster) */
    char url0[600];         /* seeds + "/0" */
    char url_db[600];       /* seeds + "/<db>" */
} rlk_fx_cldb;

/* Starts c with cluster-databases `databases` when the server under test is Valkey 9 (else its
 * default: database 0 only), says how long it took, and fills d: the seed URL of nodes seed_a
 * and seed_b, its URLs of databases 0 and db, the three masters. 0, or -1 (said on stderr under
 * prog's name; nothing left running). */
int rlk_fx_cldb_start(rlk_fx_cluster *c, rlk_fx_cldb *d, const char *prog, int databases, int db,
                      int seed_a, int seed_b);
/* An integer reply of fmt (one %s: key) in database db on the master of key; -3: none. */
long long rlk_fx_cluster_db_int(const rlk_fx_cluster *c, int db, const char *key,
                                const char *fmt);
/* The first "<prefix><n>" (n < 100000) whose slot node `master` owns (node 0's view); "" if
 * none. */
void rlk_fx_cluster_name_on(const rlk_fx_cluster *c, const char *prefix, int master, char *buf,
                            size_t len);

/* Stops every node (by PID) and removes its files. Safe to call twice. */
void rlk_fx_cluster_stop(rlk_fx_cluster *c);

/* Bounded poll until every running node says cluster_state:ok and all agree
 * on the slot map. */
int rlk_fx_cluster_wait_ok(rlk_fx_cluster *c, long timeout_ms);
/* The slot map one node reports, canonical ("0-5460:P1/P4 5461-...": ranges
 * with the master's port then its replicas' ports, sorted), into buf. */
int rlk_fx_cluster_slot_map(const rlk_fx_cluster *c, int node, char *buf, size_t len);

/* "redis://127.0.0.1:P1,redis://127.0.0.1:P2,..." (every node) into buf. */
int rlk_fx_cluster_urls(const rlk_fx_cluster *c, char *buf, size_t len);
/* "redis://127.0.0.1:P" of one node. */
int rlk_fx_cluster_url(const rlk_fx_cluster *c, int node, char *buf, size_t len);

/* The hash slot of a key: CRC16 (XMODEM) of the key, or of the text
 * between the first '{' and the next '}' when that is non-empty, mod 16384
 * (the cluster spec's HASH_SLOT). */
int rlk_fx_key_slot(const char *key, size_t len);
/* CRC16-CCITT (XMODEM), as the cluster spec defines it ("123456789" -> 0x31C3). */
unsigned rlk_fx_crc16(const char *buf, size_t len);

/* The node index serving slot as master, as node `ask` sees it (CLUSTER
 * SLOTS); -1 when unknown. */
int rlk_fx_cluster_slot_owner(const rlk_fx_cluster *c, int ask, int slot);
/* rlk_fx_cluster_slot_owner of the key's slot, asked of node 0 (or the first running node). */
int rlk_fx_cluster_key_owner(const rlk_fx_cluster *c, const char *key);
/* 'M' master, 'S' replica (ROLE), 0 when it cannot be asked. */
int rlk_fx_cluster_role(const rlk_fx_cluster *c, int node);
/* The index of the master node a replica follows, or of a replica of a master; -1 if none. */
int rlk_fx_cluster_master_of(const rlk_fx_cluster *c, int replica);
int rlk_fx_cluster_replica_of(const rlk_fx_cluster *c, int master);
/* CLUSTER MYID into buf (41 bytes at least). */
int rlk_fx_cluster_node_id(const rlk_fx_cluster *c, int node, char *buf, size_t len);

/* CLUSTER FAILOVER on a replica, then a bounded wait until it is a master,
 * its old master a replica (ROLE on both), and the cluster is ok and agreed
 * again. */
int rlk_fx_cluster_failover(rlk_fx_cluster *c, int replica, long timeout_ms);

/* Slot migration, step by step (as redis-cli --cluster reshard does):
 *   1. CLUSTER SETSLOT slot IMPORTING <src id>   on dst
 *   2. CLUSTER SETSLOT slot MIGRATING <dst id>   on src
 *   3. CLUSTER GETKEYSINSLOT + MIGRATE ... KEYS  on src, until none are left
 *   4. CLUSTER SETSLOT slot NODE <dst id>        on dst, src, then every other master
 * Between 2 and 4 a client sees ASK redirections for keys already moved. */
int rlk_fx_cluster_set_importing(const rlk_fx_cluster *c, int slot, int dst, int src);
int rlk_fx_cluster_set_migrating(const rlk_fx_cluster *c, int slot, int src, int dst);
/* Moves the keys of slot still on src to dst (MIGRATE, bounded batches); how many moved, or -1. */
int rlk_fx_cluster_migrate_keys(const rlk_fx_cluster *c, int slot, int src, int dst);
/* CLUSTER SETSLOT slot NODE <owner id> on owner, then on every other running master. */
int rlk_fx_cluster_set_node(const rlk_fx_cluster *c, int slot, int owner);
/* All four steps, then a bounded wait until every node maps slot to dst. */
int rlk_fx_cluster_move_slot(rlk_fx_cluster *c, int slot, int src, int dst, long timeout_ms);

/* One command to one node (fresh connection; printf-style). Caller frees. */
redisReply *rlk_fx_cluster_command(const rlk_fx_cluster *c, int node, const char *fmt, ...);
/* The same in database db: SELECT db, then the command, on one fresh connection; NULL also
 * when SELECT is refused (said on stderr). */
redisReply *rlk_fx_cluster_command_db(const rlk_fx_cluster *c, int node, int db, const char *fmt,
                                      ...);

/* Atomic slot migration (Valkey 9: CLUSTER MIGRATESLOTS): on src
 *   CLUSTER MIGRATESLOTS SLOTSRANGE slot slot NODE <dst id>
 * then a bounded poll (every 5 ms) until every running node maps slot to dst. The source
 * keeps serving the slot while its keys (of every database) are copied, pauses its writes for
 * the hand-over, then answers MOVED. A migration that ends "failed" or "cancelled" (CLUSTER
 * GETSLOTMIGRATIONS on src) returns -1 at once. states (may be NULL): the distinct states
 * GETSLOTMIGRATIONS showed on src while polling, in order, space-separated. -1 also when the
 * server has no MIGRATESLOTS (said on stderr). */
int rlk_fx_cluster_migrate_slots(rlk_fx_cluster *c, int slot, int src, int dst, long timeout_ms,
                                 char *states, size_t states_len);

#endif /* RLK_TEST_CLUSTER_H */
