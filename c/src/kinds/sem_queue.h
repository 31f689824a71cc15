/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sem_queue.h - what a waiter of a semaphore kind needs for the server's
 * waiter queue (scripts/lib/sem_grant.lua, sem_claim.lua, sem_queue.lua;
 * docs/runtime.md, "The semaphores' queue"): this client's wake channel redisson_sc:{name}:rlk:<cid>, its tickets
 * (cid * 1024 + r), what a message on those channels means, the waiter's
 * set-up and the give-up's cancel (semaphore/cancel, which serves both
 * semaphores). Used by semaphore.c and psemaphore.c.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SEM_QUEUE_H
#define RLK_SEM_QUEUE_H

#include <stdatomic.h>

#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/sub.h"
#include "runtime/wait.h"

typedef struct rlk_sem_queue {
    char *wake;                 /* redisson_sc:{name}:rlk:<cid>: this client's wake channel */
    long long cid;              /* 32768..65535, from the client's uuid (as the reentrant lock) */
    atomic_uint seq;            /* the next ticket's low 10 bits: the waiters of one handle
                                   (threads of one client) never share a ticket */
} rlk_sem_queue;

/* Fills q for the semaphore kind b (its channel): 0, or -1 out of
 * memory (q then holds what was allocated: rlk_sem_queue_free it). */
int rlk_sem_queue_init(rlk_sem_queue *q, const rlk_fam_base *b);
void rlk_sem_queue_free(rlk_sem_queue *q);

/* 1 when a release can tell whether a grant on this client's wake channel
 * reached it (every pub/sub mode but global pub/sub on a cluster, where
 * PUBLISH counts one node's subscribers): then a waiter queues with a
 * ticket; else it waits without one, woken by every count on the channel. */
int rlk_sem_queue_alone(const rlk_fam_base *b);

/* A new ticket cid * 1024 + r: r counts up per handle (from a random
 * start), so the waiters of one client do not share a ticket while fewer
 * than 1024 wait. */
long long rlk_sem_queue_ticket(rlk_sem_queue *q);
/* The semaphores' wake rule (runtime/sub.h): a grant on a wake channel, the
 * decimal ticket * 2^26 (lib/sem_grant.lua), names its ticket; "0" wakes
 * one; anything else wakes every waiter. The non-blocking semaphores
 * (async/a_semq.c) read their grants with it too. */
extern const rlk_sub_rule rlk_sem_queue_sub_rule;

/* Sets w up as a waiter with ticket tk (tk->ticket != 0) of the kind b:
 * grants come on q's wake channel, b's channel is heard only while *wide
 * (the last attempt said: first in the queue); then rlk_wait_pre_join. */
void rlk_sem_queue_wait(rlk_sem_queue *q, const rlk_fam_base *b, rlk_waiter *w,
                        rlk_sub_ticket *tk, const int *wide);

/* A waiter that gives up (its wait ran out, an error, an interrupt) leaves
 * the server's queue ({name}:rlk_waiters), passing on a reservation it did
 * not claim ({name}:rlk_next): rlk_sem_queue_cancel_call with ticket and
 * permits on b's name; best effort and bounded, the caller's error kept
 * (a waiter that cannot say so is skipped when its reservation expires). */
void rlk_sem_queue_cancel(const rlk_fam_base *b, long long ticket, long long permits);
/* semaphore/cancel, both semaphores' (the async waiters' too, async/a_semq.c). */
extern const rlk_proto_call rlk_sem_queue_cancel_call;

#endif /* RLK_SEM_QUEUE_H */
