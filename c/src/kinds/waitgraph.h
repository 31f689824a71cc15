/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitgraph.h - the wait-for graph across lock names (docs/deadlock.md).
 *
 * rlk_wg_build is pure: from what the server shows per name (its holders'
 * ids, its waiters as the server keeps them) it draws who waits for whom and
 * finds the cycles. waitgraph_read.c fills its input from a server
 * (rlk_waitgraph_read, rlk.h). The accessors of the result are public (rlk.h).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_WAITGRAPH_H
#define RLK_KINDS_WAITGRAPH_H

#include <stddef.h>

#include "rlk.h"

/* How the server names a waiter. */
#define RLK_WG_THREAD 0     /* a holder id "<client uuid>:<thread id>" (the fair lock's queue) */
#define RLK_WG_CLIENT 1     /* a client's uuid only */
#define RLK_WG_TICKET 2     /* a ticket (decimal) of a ticket queue: its client's number is
                               ticket / 1024 (names.h, rlk_names_wake_cid) */

typedef struct rlk_wg_party {
    const char *id;
    int form;               /* RLK_WG_*; holders are always RLK_WG_THREAD */
} rlk_wg_party;

/* One name as the server shows it. */
typedef struct rlk_wg_name {
    const char *name;
    const char *kind;       /* "reentrant", "fair", "rwlock", ... (shown, not interpreted) */
    const rlk_wg_party *holders;
    size_t nholders;
    const rlk_wg_party *waiters;
    size_t nwaiters;
} rlk_wg_name;

/* The graph of names[0..n): one edge per (waiter, name, holder) with the
 * waiter not the holder; a ticket becomes the uuid of every holder on any of
 * the names whose client number it carries ("cid:<n>" when none does). Cycles:
 * first among waiters known by thread (by_client 0), then among clients
 * (by_client 1; a cycle whose clients a thread cycle already names is not
 * repeated). RLK_OK or RLK_ERR_NOMEM; *out freed with rlk_waitgraph_free. */
int rlk_wg_build(const rlk_wg_name *names, size_t n, rlk_waitgraph **out);

/* rlk_waitgraph_read's graph of the given names (no SCAN; names must live
 * until it returns; on a cluster each name's commands go to its slot's
 * master): for a caller that found the names itself (rlk top: the held locks
 * with waiters). A ticket's client is found among these names' holders only. */
int rlk_wg_read_names(rlk_client *c, const char *const *names, size_t n, rlk_waitgraph **out);

/* The client part of a holder id (up to its last ':'), its length. */
size_t rlk_wg_client_len(const char *id);

#endif /* RLK_KINDS_WAITGRAPH_H */
