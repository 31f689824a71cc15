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

#include "kinds/proto.h"
#include "runtime/fam.h"
#include "runtime/sub.h"
#include "runtime/wait.h"

/* The semaphores' wake rule (runtime/sub.h): a grant on a wake channel, the
 * decimal ticket * 2^26 (lib/sem_grant.lua), names its ticket; "0" wakes
 * one; anything else wakes every waiter. The non-blocking semaphores
 * (async/a_semq.c) read their grants with it too. */
extern const rlk_sub_rule rlk_sem_queue_sub_rule;

/* A waiter's place in the queue across its attempts, which its kind's
 * attempt reads (the ticket argument, rlk_wait_ticket_arg) and sets. */
typedef struct rlk_sem_queue_try {
    rlk_sub_ticket tk;          /* tk.ticket 0: no place in the queue (a single try, or a
                                   cluster's global pub/sub) */
    int queued;                 /* an attempt with the ticket may have put it in the queue */
    int wide;                   /* the last attempt said: first in the queue (or -3): hear the
                                   semaphore's channel too */
} rlk_sem_queue_try;

/* Waits as rlk_wait_acquire (from start, wait_ms) for permits of the
 * semaphore kind b (its wake channel in b->wake: kinds/handle.h
 * RLK_HANDLE_WAKE) with attempt(arg) (ride_out: rlk_waiter's). A waiter
 * takes a ticket (cid * 1024 + r: r counts up in the process from a start
 * the client's uuid draws, so the waiters of one client do not share a
 * ticket while fewer than 1024 wait) where a release can tell whether a grant on this
 * client's wake channel reached it (every pub/sub mode but global pub/sub
 * on a cluster, where PUBLISH counts one node's subscribers; else it waits
 * without one, woken by every count on the channel):
 * grants come on b's wake channel, b's channel is heard only while t->wide
 * (docs/runtime.md, "The semaphores' queue"). One that gives up (its wait
 * ran out, an error, an interrupt) while t->queued leaves the server's
 * queue ({name}:rlk_waiters), passing on a reservation it did not claim
 * ({name}:rlk_next): rlk_sem_queue_cancel_call with its ticket and permits;
 * best effort and bounded, the error kept (a waiter that cannot say so is
 * skipped when its reservation expires). A wait that ran out: RLK_ERR_BUSY recorded as
 * "<what> <name>: <permits> permit(s) not available after <ms> ms". */
int rlk_sem_queue_acquire(const rlk_fam_base *b, rlk_sem_queue_try *t, long long permits,
                          rlk_wait_attempt_fn attempt, void *arg, int ride_out, long long start,
                          long long wait_ms, const char *what);
/* semaphore/cancel, both semaphores' (the async waiters' too, async/a_semq.c). */
extern const rlk_proto_call rlk_sem_queue_cancel_call;

#endif /* RLK_SEM_QUEUE_H */
