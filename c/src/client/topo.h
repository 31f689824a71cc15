/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.h - the topology of a client (topo.c): one server, a master found
 * through sentinels, or a Redis Cluster. As hiredis varies its event loops
 * by a small struct of hooks (async.h and the files of adapters/), rlk varies its
 * topology by the operations below, one variant per file:
 *
 *   rlk_topo_standalone   topo.c      redis://, rediss://, unix sockets
 *   rlk_topo_sentinel     sentinel.c  redis+sentinel://, rediss+sentinel://
 *   rlk_topo_cluster      cluster.c   redis+cluster://, rediss+cluster://
 *
 * rlk_connect picks one from the URL (c->topo, never changed after) and
 * every layer above asks it: the pool, rlk_evalv and rlk_command, the
 * runtime's dedicated connections, RedLock, the CLI. Only sentinel.c and
 * cluster.c read c->sentinel / c->cluster. The transport (transport.h)
 * sits under every variant: it dials, the variant chooses where to.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_TOPO_H
#define RLK_TOPO_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "rlk.h"
#include "client/pool.h"

#define RLK_TOPO_ANY_SLOT (-1)      /* a call with no key: anywhere (any master) */
#define RLK_TOPO_BAD_SLOT (-2)      /* keys in several slots: refused, error recorded */

/* rlk_topo.flags */
#define RLK_TOPO_ROUTED 1u          /* calls go to one of several masters by their key's slot,
                                       through per-node pools: no one connection serves every
                                       key (a thread with a connection of its own renews
                                       through rlk_topo_evalv instead) */
#define RLK_TOPO_RESOLVES 2u        /* the address to dial is found by round trips (sentinels):
                                       a dial may block beyond the connect timeout */

/* The readonly_hint of the variants that do not follow a master (standalone,
 * cluster). */
#define RLK_TOPO_REPLICA_HINT \
    " (a replica: point rlk at the master, or at the sentinels with redis+sentinel://)"

typedef struct rlk_topo {
    const char *name;               /* "standalone", "sentinel", "cluster" (messages, tests) */
    unsigned flags;                 /* RLK_TOPO_* */
    const char *readonly_hint;      /* added to a READONLY reply's message (conn.c) */

    /* rlk_connect, after the URL and the pool: the variant's state; a
     * failure is fatal (msg says why). NULL: nothing to set up. */
    int (*setup)(rlk_client *c, const rlk_options *o, char *msg, size_t len);
    /* rlk_connect, last: the first connection (and the call mode and the
     * scripts unless no_preload). Errors are recorded, never fatal. */
    void (*connect)(rlk_client *c);
    /* Frees the variant's state (rlk_free, after the runtime). NULL: none. */
    void (*free)(rlk_client *c);

    /* The slot a script call on keys goes to: RLK_TOPO_ANY_SLOT, a slot,
     * or RLK_TOPO_BAD_SLOT with RLK_ERR_ARG recorded. NULL: not routed. */
    int (*script_slot)(rlk_client *c, const char *what, int nkeys, const char *const *keys,
                       const size_t *keylens);
    /* The slot of a plain command (its first key). NULL: not routed. */
    int (*command_slot)(int argc, const char *const *argv, const size_t *lens);
    /* Runs op for slot with the retry rule of the variant (pool.h's, and
     * the redirects of cluster.h). s (may be NULL) is the script the call
     * runs, for a refusal before sending it (a writing script on a
     * replica, role.h). Errors are recorded on c. */
    int (*run)(rlk_client *c, int slot, const rlk_script_info *s, rlk_conn_op op, void *arg,
               int idempotent, redisReply **reply);
    /* A refusal that the variant may cure (READONLY: the sentinels may
     * name another master now): 1 when the call may be sent again, 0 to
     * report it. NULL: never. */
    int (*refused)(rlk_client *c, int err);

    /* A dedicated connection (conn.h rlk_conn_open) to where calls go (a
     * routed variant: some node, the next one each time). */
    int (*open)(rlk_client *c, redisContext **out);
    /* 1 when an open connection no longer goes where calls must go (a
     * demoted master). NULL: never. */
    int (*stale)(rlk_client *c, const redisContext *ctx);
    /* Before a renewal round (the watchdog): make sure the address is
     * current. NULL: nothing to do. The thread's error is kept. */
    void (*check)(rlk_client *c);
    /* How many times the address calls go to has changed (the sentinels
     * named another master): a connection made before a change may go to
     * the wrong server (the async engine drops those); *last_ns (may be
     * NULL) gets the time of the last one. NULL: never. */
    unsigned long long (*moves)(rlk_client *c, long long *last_ns);

    /* The clients that hold the scripts, one per master (c itself when
     * there is one master); at most max; they belong to c. */
    int (*masters)(rlk_client *c, rlk_client **out, int max);
    /* RLK_PUBSUB_AUTO's answer: RLK_PUBSUB_GLOBAL / _SHARDED, or 0 when
     * not known yet (ask again). NULL: global. */
    int (*pubsub_auto)(rlk_client *c);
} rlk_topo;

extern const rlk_topo rlk_topo_standalone;

/* ---------------------------------------------------------------- asked from above */

/* 1 when c's calls are routed per slot (RLK_TOPO_ROUTED). */
int rlk_topo_routed(const rlk_client *c);
/* 1 when a PUBLISH in pub/sub mode pubsub (RLK_PUBSUB_GLOBAL / _SHARDED; 0,
 * not resolved yet, counts as global) counts every subscriber of its
 * channel, so a release can tell whether its grant reached the waiter: c is
 * not routed, or the mode is sharded. Global pub/sub on a cluster counts
 * the subscribers of the node it ran on only. */
int rlk_topo_counts_exact(const rlk_client *c, int pubsub);
/* 1 when dialling c may block beyond its connect timeout: a TLS handshake
 * or an address found through sentinels (RedLock dials those on threads). */
int rlk_topo_dial_blocks(const rlk_client *c);
/* 1 when c's address is found by round trips (RLK_TOPO_RESOLVES: the
 * sentinels name the master, and may name another after a READONLY). */
int rlk_topo_resolves(const rlk_client *c);
/* c->topo->moves, or 0 when the variant's address never moves. */
unsigned long long rlk_topo_moves(rlk_client *c);
/* c->topo->masters: the clients of every master (c itself when there is one), at most max;
 * how many (0 or less: none known). They belong to c. */
int rlk_topo_masters(rlk_client *c, rlk_client **out, int max);
/* The watchdog's check before a round (rlk_topo.check), when the variant has one. */
void rlk_topo_check(rlk_client *c);
/* Script s by the topology's route (the pool of the one server, or the
 * slot's master), within timeout_ms when >= 0 (a thread that renews
 * through the routed pools: the watchdog, a permit keeper). */
int rlk_topo_evalv(rlk_client *c, const rlk_script_info *s, int nkeys, const char *const *keys,
                   const size_t *keylens, int nargs, const char *const *args,
                   const size_t *arglens, redisReply **reply, long long timeout_ms);

/* ---------------------------------------------------------------- for the variants */

/* The standalone variant's pieces, which sentinel.c and cluster.c reuse
 * (a sentinel client is a standalone client whose address moves; a
 * cluster's node clients are standalone clients). */
int rlk_topo_pool_run(rlk_client *c, int slot, const rlk_script_info *s, rlk_conn_op op,
                      void *arg, int idempotent, redisReply **reply);
void rlk_topo_pool_connect(rlk_client *c);
/* masters of a one-master variant: c itself. */
int rlk_topo_one_master(rlk_client *c, rlk_client **out, int max);
/* SCRIPT LOAD of every script, SCRIPT EXISTS (of one script or more)
 * into present: on one server's pool. */
int rlk_topo_load_one(rlk_client *c);
int rlk_topo_verify_one(rlk_client *c, int *present);

#endif /* RLK_TOPO_H */
