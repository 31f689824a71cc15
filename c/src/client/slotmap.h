/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slotmap.h - the Redis Cluster map, pure (slotmap.c): no lock, no I/O, no
 * connection. A table of the nodes seen (host, port; a node is never
 * removed), the master of each hash slot, loaded from a CLUSTER SLOTS
 * reply or moved by a MOVED redirect; the one parser of MOVED/ASK
 * redirects; and the one list of "not now" error replies (the call did not
 * run; later, maybe elsewhere).
 *
 * Its two drivers keep what goes with a node beside it, under the same
 * index: the blocking cluster variant (cluster.c) a node client, under its
 * mutex; the non-blocking engine (async/) its connections, on its loop's
 * thread. The map tells them of a new node through the hook it was given,
 * which makes that payload; a payload that cannot be made leaves the node
 * out.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SLOTMAP_H
#define RLK_SLOTMAP_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "client/slot.h"

#define RLK_SLOTMAP_MAX_NODES 255   /* owner[] keeps index + 1 in a byte */
#define RLK_SLOTMAP_HOST_MAX 256    /* a host of a redirect, with its NUL */

/* A node is new at index idx (host, port); 0: keep it, else it is left out
 * (out of memory). */
typedef int (*rlk_slotmap_new_fn)(void *arg, int idx, const char *host, int port);

typedef struct rlk_slotmap {
    char *host[RLK_SLOTMAP_MAX_NODES];
    int port[RLK_SLOTMAP_MAX_NODES];
    int nnodes;
    unsigned char owner[RLK_SLOT_COUNT];        /* node index + 1; 0: unknown */
    int master[RLK_SLOTMAP_MAX_NODES];          /* the nodes owning slots, from the map */
    int nmasters;
    int loaded;                                 /* 1 once a map was loaded */
    unsigned rr;                                /* rotation for "any master" */
    rlk_slotmap_new_fn node_new;
    void *arg;
} rlk_slotmap;

void rlk_slotmap_init(rlk_slotmap *m, rlk_slotmap_new_fn node_new, void *arg);
void rlk_slotmap_free(rlk_slotmap *m);

/* The index of node host:port, added when new (node_new is called); -1 when
 * the table is full, out of memory, or host is "" (an unknown endpoint). */
int rlk_slotmap_node(rlk_slotmap *m, const char *host, int port);
/* The master of slot: a node index, or -1 when unknown. slot < 0 (any
 * master): the next master in turn, -1 when none is known. */
int rlk_slotmap_owner(rlk_slotmap *m, int slot);
/* 1 when node idx owns slots by the map. */
int rlk_slotmap_is_master(const rlk_slotmap *m, int idx);

/* 1 when e is a CLUSTER SLOTS entry: start, end, [host, port, ...], ... with
 * 0 <= start <= end < 16384. */
int rlk_slotmap_entry_ok(const redisReply *e);
/* Loads the map of a CLUSTER SLOTS reply r asked of node asked_host (an
 * empty host in r means that node): RLK_OK; RLK_ERR_PROTOCOL, the map
 * unchanged, when r is not an array of entries; RLK_ERR_NOMEM when a node
 * could not be added (the rest is loaded). */
int rlk_slotmap_load(rlk_slotmap *m, const redisReply *r, const char *asked_host);

enum { RLK_SLOTMAP_NONE = 0, RLK_SLOTMAP_MOVED = 1, RLK_SLOTMAP_ASK = 2 };
/* The MOVED or ASK redirect in text (an error reply, at its start or after
 * ": " as rlk_set_reply_error words it): RLK_SLOTMAP_MOVED / _ASK with the
 * slot and the target (host without the brackets of an IPv6 address, at
 * most hostlen bytes with its NUL; "" for an unknown endpoint, "MOVED 1
 * :6379", which only the map can tell and rlk_slotmap_node refuses);
 * RLK_SLOTMAP_NONE for anything else. */
int rlk_slotmap_redirect(const char *text, int *slot, char *host, size_t hostlen, int *port);
/* Gives slot to node idx (a MOVED). 1 when that changed the map. */
int rlk_slotmap_move(rlk_slotmap *m, int slot, int idx);

enum { RLK_SLOTMAP_NOW = 0, RLK_SLOTMAP_LATER_HERE = 1, RLK_SLOTMAP_LATER_MAP = 2 };
/* "Not now" in text (as above): the call did not run. RLK_SLOTMAP_LATER_HERE
 * for LOADING and BUSY (the node itself, try it again), RLK_SLOTMAP_LATER_MAP
 * for TRYAGAIN, CLUSTERDOWN and MASTERDOWN (a migration or a failover: ask
 * for the map again), RLK_SLOTMAP_NOW for anything else. */
int rlk_slotmap_not_now(const char *text);

#endif /* RLK_SLOTMAP_H */
