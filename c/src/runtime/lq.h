/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lq.h - the process-wide local wait queues (lq.c): a FIFO of the threads
 * waiting for one lock (server address, db, lock name), across every client
 * of the process. Only its head talks to Redis; the others sleep until
 * they become head.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_LQ_H
#define RLK_LQ_H

#include <pthread.h>

#include "runtime/sub.h"

typedef struct rlk_lq rlk_lq;

typedef struct rlk_lq_node {
    struct rlk_lq_node *next;
    pthread_cond_t cv;
    int waited;             /* rlk_lq_enter slept before this node became head */
    rlk_sub *sub;           /* the head's subscription, for rlk_lq_poke (NULL: none yet) */
    rlk_sub_chan *ch;
} rlk_lq_node;

rlk_lq *rlk_lq_get(const char *addr, int db, const char *name);
void rlk_lq_put(rlk_lq *q);
/* 1 when some thread is queued. */
int rlk_lq_busy(rlk_lq *q);
/* How many threads are queued, the head included. */
int rlk_lq_waiting(rlk_lq *q);
/* Joins at the tail and sleeps until head: RLK_OK, or RLK_ERR_BUSY when
 * until passed first (the node has then left the queue). */
int rlk_lq_enter(rlk_lq *q, rlk_lq_node *n, long long until_ns);
/* The head leaves; the next node becomes head and is woken. */
void rlk_lq_leave(rlk_lq *q, rlk_lq_node *n);
/* The head n subscribed (sub, ch): from now until it leaves, a release by
 * this process pokes that channel (rlk_lq_poke). */
void rlk_lq_set_sub(rlk_lq *q, rlk_lq_node *n, rlk_sub *sub, rlk_sub_chan *ch);
/* After a release that deleted the lock: wakes the head at once instead of
 * after the unlock message's trip through its subscriber thread. */
void rlk_lq_poke(rlk_lq *q);
/* A hint shared by the heads of q (the reentrant lock): whether the last
 * attempt found its waiter first in the server's queue. A head that expects
 * to be first joins the lock's channel before its first attempt instead of
 * attempting twice (docs/runtime.md, "Who a handoff wakes"). */
void rlk_lq_note_first(rlk_lq *q, int first);
int rlk_lq_expects_first(rlk_lq *q);

#endif /* RLK_LQ_H */
