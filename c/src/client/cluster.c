/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.c - Redis Cluster routing (see cluster.h): the slot map
 * (slotmap.h) under a mutex, one node client per node, redirects and "not
 * now" retries.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/client_t.h"
#include "client/clock.h"
#include "client/cluster.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/pool.h"
#include "client/slot.h"
#include "client/slotmap.h"
#include "client/topo.h"
#include "client/transport.h"
#include "client/url.h"

#define RLK_CLUSTER_REDIRECTS_MAX 8     /* MOVED/ASK followed per call */
#define RLK_CLUSTER_BACKOFF_MIN_MS 5
#define RLK_CLUSTER_BACKOFF_MAX_MS 200

struct rlk_cluster {
    pthread_mutex_t mu;         /* guards map, node and rr */
    rlk_slotmap map;            /* the nodes (never removed before rlk_free) and the slots */
    rlk_client *node[RLK_CLUSTER_MAX_NODES];    /* map node i's client (host:port in its url) */
    rlk_client *parent;         /* whose settings a new node client copies */
    atomic_llong refreshed_ns;  /* last full refresh; 0: never */
    unsigned rr;                /* rotation for "any node" */
    atomic_int redis_major;     /* 0: not asked yet; -1: unknown */
};

/* Node clients' ids, from RLK_CLUSTER_NODE_ID_MIN (cluster.h). */
static atomic_uint_fast64_t rlk_cluster_next_id;

/* ---------------------------------------------------------------- node clients */

/* A node client has no runtime, no state of a topology and no transport of
 * its own (the parent's): its pool and its host; the URL's credentials are
 * the parent's. */
static void rlk_node_client_free(rlk_client *n)
{
    if (!n)
        return;
    for (int i = 0; n->slots && i < n->pool_size; i++)
        rlk_transport_free(n->slots[i].ctx);
    free(n->slots);
    free(n->url.host);
    free(n->url_masked);
    pthread_cond_destroy(&n->pool_cv);
    pthread_mutex_destroy(&n->pool_mu);
    free(n);
}

static rlk_client *rlk_node_client_new(const rlk_client *c, const char *host, int port)
{
    rlk_client *n = calloc(1, sizeof *n);

    if (!n)
        return NULL;
    n->id = RLK_CLUSTER_NODE_ID_MIN + atomic_fetch_add(&rlk_cluster_next_id, 1) + 1;
    n->counters = c->counters;  /* the metrics count a cluster as one client */
    n->topo = &rlk_topo_standalone;     /* one server: the node itself */
    n->connect_tv = c->connect_tv;
    n->command_tv = c->command_tv;
    n->connect_timeout_ms = c->connect_timeout_ms;
    n->command_timeout_ms = c->command_timeout_ms;
    n->watchdog_lease_ms = c->watchdog_lease_ms;
    n->lost_margin_ms = c->lost_margin_ms;
    n->no_preload = c->no_preload;
    n->functions = c->functions;       /* each node decides FCALL or EVALSHA itself */
    n->min_replicas = c->min_replicas;  /* WAIT for the node's own replicas */
    n->min_replicas_timeout_ms = c->min_replicas_timeout_ms;
    n->tls = c->tls;            /* the parent's transport; freed with the parent */
    n->url.tls = c->url.tls;
    n->scripts = c->scripts;
    n->scripts.owned = NULL;    /* the parent's: never freed by the node */
    n->pool_size = c->pool_size;
    pthread_mutex_init(&n->pool_mu, NULL);
    pthread_cond_init(&n->pool_cv, NULL);
    n->url.host = strdup(host);
    n->url.port = port;
    n->url.user = c->url.user;          /* the parent's, freed with it */
    n->url.password = c->url.password;
    n->url.db = c->url.db;      /* SELECT on every connection (cluster-databases, Valkey 9) */
    n->slots = calloc((size_t)n->pool_size, sizeof *n->slots);
    rlk_url_address(&n->url, n->addr, sizeof n->addr);
    n->url_masked = rlk_url_masked(&n->url);
    if (!n->url.host || !n->slots || !n->url_masked) {
        rlk_node_client_free(n);
        return NULL;
    }
    return n;
}

/* The map's hook (slotmap.h): the client of a new node. cl->mu held. */
static int rlk_cluster_node_new(void *arg, int idx, const char *host, int port)
{
    rlk_cluster *cl = arg;

    return (cl->node[idx] = rlk_node_client_new(cl->parent, host, port)) != NULL ? 0 : -1;
}

/* From rlk_connect: the node clients of the URL's seeds. */
static int rlk_cl_setup(rlk_client *c, const rlk_options *o, char *msg, size_t len)
{
    rlk_cluster *cl = calloc(1, sizeof *cl);

    (void)o;
    if (!cl)
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    pthread_mutex_init(&cl->mu, NULL);
    cl->parent = c;
    rlk_slotmap_init(&cl->map, rlk_cluster_node_new, cl);
    c->cluster = cl;
    for (int i = 0; i < c->url.nseeds; i++)
        if (rlk_slotmap_node(&cl->map, c->url.seeds[i].host, c->url.seeds[i].port) < 0)
            return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    return RLK_OK;
}

static void rlk_cluster_free(rlk_client *c)
{
    rlk_cluster *cl = c->cluster;

    if (!cl)
        return;
    for (int i = 0; i < cl->map.nnodes; i++)
        rlk_node_client_free(cl->node[i]);
    rlk_slotmap_free(&cl->map);
    pthread_mutex_destroy(&cl->mu);
    free(cl);
    c->cluster = NULL;
}

/* ---------------------------------------------------------------- the slot map */

/* The node clients of the masters (at most max), and with all every other
 * node after them (seeds, replicas seen before: the ones to ask for the
 * map). They belong to c. */
static int rlk_cluster_nodes(rlk_client *c, rlk_client **out, int max, int all)
{
    rlk_cluster *cl = c->cluster;
    int n = 0;

    pthread_mutex_lock(&cl->mu);
    for (int k = 0; k < cl->map.nmasters && n < max; k++)
        out[n++] = cl->node[cl->map.master[k]];
    for (int i = 0; all && i < cl->map.nnodes; i++)
        if (!rlk_slotmap_is_master(&cl->map, i))
            out[n++] = cl->node[i];
    pthread_mutex_unlock(&cl->mu);
    return n;
}

/* Fetches the slot map from the first node that answers. Unless force, not
 * more often than RLK_CLUSTER_REFRESH_MS. */
static int rlk_cluster_refresh(rlk_client *c, int force)
{
    rlk_cluster *cl = c->cluster;
    rlk_client *cand[RLK_CLUSTER_MAX_NODES];
    const char *argv[2] = {"CLUSTER", "SLOTS"};
    int n, rc = RLK_ERR_IO;
    long long last = atomic_load(&cl->refreshed_ns);

    if (!force && last && rlk_clock_now_ns() - last < RLK_CLUSTER_REFRESH_MS * RLK_NS_PER_MS)
        return RLK_OK;
    n = rlk_cluster_nodes(c, cand, RLK_CLUSTER_MAX_NODES, 1);
    for (int i = 0; i < n; i++) {
        redisReply *r = NULL;

        rc = rlk_pool_command(cand[i], "CLUSTER SLOTS", 2, argv, NULL, &r);
        if (rc != RLK_OK) {
            rlk_set_error(c, rc, "%s", rlk_errstr(cand[i]));
            if (rc == RLK_ERR_TIMEOUT && rlk_time_limit_left_ms() == 0)
                break;
            continue;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            rc = rlk_set_reply_error(c, r, "CLUSTER SLOTS", RLK_ERR_SERVER);
        } else {
            pthread_mutex_lock(&cl->mu);
            rc = rlk_slotmap_load(&cl->map, r, cand[i]->url.host);
            if (rc != RLK_ERR_PROTOCOL)
                cl->refreshed_ns = rlk_clock_now_ns();
            pthread_mutex_unlock(&cl->mu);
            if (rc == RLK_ERR_PROTOCOL)
                rlk_set_error(c, rc, "CLUSTER SLOTS %s: unexpected reply", cand[i]->addr);
            else if (rc != RLK_OK)
                rlk_set_error(c, rc, "CLUSTER SLOTS: too many nodes or out of memory");
        }
        freeReplyObject(r);
        if (rc == RLK_OK)
            break;
    }
    return rc;
}

/* The node client serving slot as master (any master for
 * RLK_TOPO_ANY_SLOT); with refresh, the map is fetched when the slot's
 * owner is unknown. Falls back on any known node (which redirects). */
static rlk_client *rlk_cluster_pick(rlk_client *c, int slot, int refresh)
{
    rlk_cluster *cl = c->cluster;
    rlk_client *n = NULL;
    int idx;

    pthread_mutex_lock(&cl->mu);
    if ((idx = rlk_slotmap_owner(&cl->map, slot)) >= 0)
        n = cl->node[idx];
    pthread_mutex_unlock(&cl->mu);
    if (n || !refresh)
        return n;
    (void)rlk_cluster_refresh(c, 0);
    n = rlk_cluster_pick(c, slot, 0);
    if (!n) {
        pthread_mutex_lock(&cl->mu);
        n = cl->map.nnodes ? cl->node[cl->rr++ % (unsigned)cl->map.nnodes] : NULL;
        pthread_mutex_unlock(&cl->mu);
    }
    return n;
}

/* The node clients of the current masters (refreshing the map first),
 * for per-master script loading and checking; at most max, returns how
 * many. */
static int rlk_cluster_masters(rlk_client *c, rlk_client **out, int max)
{
    (void)rlk_cluster_refresh(c, 1);
    return rlk_cluster_nodes(c, out, max, 0);
}

/* ---------------------------------------------------------------- databases */

/* 1 when a node answered SELECT with an error (rlk_conn_check_setup_reply's message): the
 * database is refused, not out of reach. */
static int rlk_cl_select_refused(rlk_client *n, int rc)
{
    return rc == RLK_ERR_AUTH && strncmp(rlk_errstr(n), "select ", 7) == 0;
}

/* A database other than 0 must be one every node has: each node known now (masters, replicas,
 * seeds) is asked once (a connection of its pool, whose set-up SELECTs it). The first refusal
 * makes the client unusable (fatal: every call fails with it, nothing runs in database 0 in its
 * place); a node out of reach is left to its first call. */
static void rlk_cl_check_db(rlk_client *c)
{
    rlk_client *all[RLK_CLUSTER_MAX_NODES];
    const char *argv[1] = {"PING"};
    int n = rlk_cluster_nodes(c, all, RLK_CLUSTER_MAX_NODES, 1);

    for (int i = 0; i < n && !c->fatal; i++) {
        redisReply *r = NULL;
        int rc = rlk_pool_command(all[i], "PING", 1, argv, NULL, &r);

        freeReplyObject(r);
        if (rlk_cl_select_refused(all[i], rc)) {
            c->fatal = rc;
            snprintf(c->fatal_msg, sizeof c->fatal_msg, "%s", rlk_errstr(all[i]));
            rlk_set_error(c, rc, "%s", c->fatal_msg);
        }
    }
}

/* From rlk_connect: fetches the slot map, checks a database other than 0
 * on every node, and loads the scripts on every master (unless no_preload).
 * Errors are recorded on c (not fatal, but for a database a node refuses:
 * the next call tries again). */
static void rlk_cl_connect(rlk_client *c)
{
    rlk_client *m[RLK_CLUSTER_MAX_NODES];
    int n, rc = rlk_cluster_refresh(c, 1);

    if (c->url.db != 0 && (rc == RLK_OK || strncmp(rlk_errstr(c), "select ", 7) == 0))
        rlk_cl_check_db(c);     /* a seed's refusal left no map: the seeds are asked */
    if (rc != RLK_OK || c->fatal || c->no_preload)
        return;
    n = rlk_cluster_nodes(c, m, RLK_CLUSTER_MAX_NODES, 0);    /* the map just fetched */
    for (int i = 0; i < n; i++)
        if ((rc = rlk_topo_load_one(m[i])) != RLK_OK) {
            rlk_set_error(c, rc, "%s", rlk_errstr(m[i]));
            return;
        }
}

/* The node of a redirect; on MOVED the slot is given to it. */
static rlk_client *rlk_cluster_follow(rlk_client *c, int kind, int slot, const char *host,
                                      int port)
{
    rlk_cluster *cl = c->cluster;
    rlk_client *n = NULL;
    int idx;

    pthread_mutex_lock(&cl->mu);
    idx = rlk_slotmap_node(&cl->map, host, port);
    if (idx >= 0) {
        n = cl->node[idx];
        if (kind == RLK_SLOTMAP_MOVED)
            (void)rlk_slotmap_move(&cl->map, slot, idx);
    }
    pthread_mutex_unlock(&cl->mu);
    if (kind == RLK_SLOTMAP_MOVED)
        (void)rlk_cluster_refresh(c, 0);   /* more slots have probably moved */
    return n;
}

int rlk_cluster_owner_addr(rlk_client *c, int slot, char *buf, size_t len)
{
    rlk_client *n = rlk_cluster_pick(c, slot, 1);

    if (!n)
        return -1;
    snprintf(buf, len, "%s", n->addr);
    return 0;
}

/* ---------------------------------------------------------------- keys */

/* The slot every one of keys hashes to; when they differ (naming what), a
 * call that Redis would refuse with CROSSSLOT is refused before any round
 * trip: RLK_TOPO_BAD_SLOT with RLK_ERR_ARG recorded. RLK_TOPO_ANY_SLOT
 * when nkeys is 0. */
static int rlk_cluster_keys_slot(rlk_client *c, const char *what, int nkeys,
                                 const char *const *keys, const size_t *keylens)
{
    int slot = RLK_TOPO_ANY_SLOT;

    for (int i = 0; i < nkeys; i++) {
        size_t len = keylens ? keylens[i] : strlen(keys[i]);
        int s = rlk_key_slot(keys[i], len);

        if (i == 0)
            slot = s;
        else if (s != slot)
            return rlk_set_error(c, RLK_ERR_ARG,
                                 "%s: its keys hash to different cluster slots ('%.*s' %d, "
                                 "'%.*s' %d): Redis would refuse it (CROSSSLOT); see the name "
                                 "rule in docs/cluster.md", what, (int)(keylens ? keylens[0]
                                 : strlen(keys[0])), keys[0], slot, (int)len, keys[i], s),
                   RLK_TOPO_BAD_SLOT;
    }
    return slot;
}

/* Commands whose argv[1] is not a key. */
static const char *const rlk_keyless[] = {
    "CLIENT", "SCRIPT", "INFO", "PING", "ROLE", "CLUSTER", "CONFIG", "ACL", "FUNCTION",
    "COMMAND", "DBSIZE", "TIME", "ECHO", "HELLO", "AUTH", "SELECT", "MEMORY", "SLOWLOG",
    "LATENCY", "WAIT", "READONLY", "READWRITE", "ASKING", "PUBSUB", NULL,
};

int rlk_cluster_command_slot(int argc, const char *const *argv, const size_t *lens)
{
    size_t l0;

    if (argc < 2)
        return RLK_TOPO_ANY_SLOT;
    l0 = lens ? lens[0] : strlen(argv[0]);
    for (int i = 0; rlk_keyless[i]; i++)
        if (l0 == strlen(rlk_keyless[i]) && strncasecmp(argv[0], rlk_keyless[i], l0) == 0)
            return RLK_TOPO_ANY_SLOT;
    return rlk_key_slot(argv[1], lens ? lens[1] : strlen(argv[1]));
}

/* ---------------------------------------------------------------- redirects */

typedef struct rlk_asking_call {
    rlk_conn_op op;
    void *arg;
} rlk_asking_call;

/* ASKING, then the call, on one connection. */
static int rlk_op_asking(rlk_client *n, redisContext *ctx, void *arg, redisReply **reply,
                         int *written)
{
    const rlk_asking_call *a = arg;
    const char *argv[1] = {"ASKING"};
    int rc = rlk_conn_command(n, ctx, "ASKING", 1, argv, NULL, reply, NULL);

    if (rc != RLK_OK)
        return rc;
    if ((*reply)->type == REDIS_REPLY_ERROR)
        rc = rlk_set_reply_error(n, *reply, "ASKING", RLK_ERR_SERVER);
    freeReplyObject(*reply);
    *reply = NULL;
    return rc != RLK_OK ? rc : a->op(n, ctx, a->arg, reply, written);
}

/* Sleeps the backoff when it fits before deadline_ns; 0 when it does not. */
static int rlk_cluster_backoff(long long *backoff_ms, long long deadline_ns)
{
    long long ms = *backoff_ms;

    if (rlk_clock_now_ns() + ms * RLK_NS_PER_MS >= deadline_ns)
        return 0;
    rlk_clock_sleep_ns(ms * RLK_NS_PER_MS);
    *backoff_ms = ms * 2 > RLK_CLUSTER_BACKOFF_MAX_MS ? RLK_CLUSTER_BACKOFF_MAX_MS : ms * 2;
    return 1;
}

/* op on the master of slot (RLK_TOPO_ANY_SLOT: any master), with the
 * redirect and retry rules of cluster.h; no ROLE look for s: a replica
 * answers MOVED, which is followed. Errors are recorded on c. */
static int rlk_cl_run(rlk_client *c, int slot, const rlk_script_info *s, rlk_conn_op op,
                      void *arg, int idempotent, redisReply **reply)
{
    long long left = rlk_time_limit_left_ms(), backoff = RLK_CLUSTER_BACKOFF_MIN_MS;
    long long deadline = rlk_clock_now_ns() +
                         (left >= 0 ? left : c->command_timeout_ms) * RLK_NS_PER_MS;
    rlk_asking_call ask = {op, arg};
    rlk_client *asked = NULL;
    int redirects = 0, rc;

    (void)s;
    *reply = NULL;
    rlk_pool_note_lost(c, NULL);
    for (;;) {
        rlk_client *n = asked ? asked : rlk_cluster_pick(c, slot, 1);
        rlk_lost_conn lc;
        char host[RLK_SLOTMAP_HOST_MAX];
        int rslot, port, kind;

        if (!n)
            return rlk_set_error(c, RLK_ERR_IO, "cluster: no node known for slot %d", slot);
        rc = asked ? rlk_pool_run(n, rlk_op_asking, &ask, idempotent, reply)
                   : rlk_pool_run(n, op, arg, idempotent, reply);
        asked = NULL;
        if (rlk_pool_lost_reply(n, &lc)) {
            lc.via = n;
            rlk_pool_note_lost_conn(c, &lc);
            return rlk_set_error(c, rc, "%s", rlk_errstr(n));
        }
        if (rc == RLK_OK)
            return RLK_OK;
        rlk_set_error(c, rc, "%s", rlk_errstr(n));
        kind = rlk_slotmap_redirect(rlk_errstr(n), &rslot, host, sizeof host, &port);
        if (kind != RLK_SLOTMAP_NONE && redirects++ < RLK_CLUSTER_REDIRECTS_MAX) {
            rlk_client *to = rlk_cluster_follow(c, kind, rslot, host, port);

            if (to) {
                RLK_CLIENT_COUNT(c, redirects);
                asked = kind == RLK_SLOTMAP_ASK ? to : NULL;
                continue;
            }
        }
        if (!rlk_err_is_transient_reply(n) && !rlk_pool_conn_error(rc))
            return rc;
        /* "Not now" (a failover, a migration, a restart), or the node is
         * unreachable and the request was not written: later, maybe
         * elsewhere. */
        if (!rlk_cluster_backoff(&backoff, deadline))
            return rc;
        redirects = 0;  /* ASK -> TRYAGAIN -> ASK during a migration: time bounds it now */
        (void)rlk_cluster_refresh(c, 0);
    }
}

/* ---------------------------------------------------------------- dedicated connections */

/* A dedicated connection (rlk_conn_open) to some node, the one after the
 * last one handed out first, so that a caller whose node died goes on with
 * another. */
static int rlk_cl_open(rlk_client *c, redisContext **out)
{
    rlk_cluster *cl = c->cluster;
    rlk_client *cand[RLK_CLUSTER_MAX_NODES];
    int n, rc = RLK_ERR_IO;
    unsigned start;

    *out = NULL;
    (void)rlk_cluster_refresh(c, 0);
    n = rlk_cluster_nodes(c, cand, RLK_CLUSTER_MAX_NODES, 1);
    pthread_mutex_lock(&cl->mu);
    start = cl->rr++;
    pthread_mutex_unlock(&cl->mu);
    for (int i = 0; i < n; i++) {
        rlk_client *node = cand[(start + (unsigned)i) % (unsigned)n];

        rc = rlk_conn_open(node, out);
        if (rc == RLK_OK)
            return RLK_OK;
        rlk_set_error(c, rc, "%s", rlk_errstr(node));
    }
    if (n == 0)
        rc = rlk_set_error(c, RLK_ERR_IO, "cluster: no node known");
    return rc;
}

/* ---------------------------------------------------------------- the topology (topo.h) */

/* Sharded pub/sub from Redis 7 on: the major version of the cluster's nodes
 * (INFO server of one master, asked once); 0 when not known yet. */
static int rlk_cl_pubsub_auto(rlk_client *c)
{
    rlk_cluster *cl = c->cluster;
    const char *argv[2] = {"INFO", "server"};
    redisReply *r = NULL;
    int major = atomic_load(&cl->redis_major), rc;

    if (!major) {
        rc = rlk_pool_command(c, "INFO", 2, argv, NULL, &r);     /* any master (rlk_cl_run) */
        major = -1;
        if (rc == RLK_OK && r->type == REDIS_REPLY_STRING) {
            const char *v = strstr(r->str, "redis_version:");

            if (v)
                major = atoi(v + 14) > 0 ? atoi(v + 14) : -1;
        }
        freeReplyObject(r);
        if (rc != RLK_OK)
            return 0;   /* ask again next time */
        atomic_store(&cl->redis_major, major);
    }
    if (major < 0)
        return 0;   /* not known */
    return major >= 7 ? RLK_PUBSUB_SHARDED : RLK_PUBSUB_GLOBAL;
}

const rlk_topo rlk_topo_cluster = {
    .name = "cluster",
    .flags = RLK_TOPO_ROUTED,
    .readonly_hint = RLK_TOPO_REPLICA_HINT,
    .setup = rlk_cl_setup,
    .connect = rlk_cl_connect,
    .free = rlk_cluster_free,
    .script_slot = rlk_cluster_keys_slot,
    .command_slot = rlk_cluster_command_slot,
    .run = rlk_cl_run,
    .open = rlk_cl_open,
    .masters = rlk_cluster_masters,
    .pubsub_auto = rlk_cl_pubsub_auto,
};
