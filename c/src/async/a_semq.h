/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_semq.h - an async semaphore waiter's side of the server's waiter queue
 * (docs/runtime.md, "The semaphores' queue"), shared by a_semaphore.c and
 * a_psemaphore.c as kinds/sem_queue.h is by the blocking semaphores: the
 * client's wake channel redisson_sc:{name}:rlk:<cid>,
 * tickets (cid * 1024 + r), which messages count (a grant only when it
 * names the ticket), the semaphore's channel redisson_sc:{name} heard only
 * while first, when to attempt next (keepalive, after a reservation, at
 * the time an attempt was told), the give-up's semaphore/cancel; and the
 * request's life around them: its call in flight, deadline, cancel and end.
 * What an attempt sends and what its reply means stay in the kind's file.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_SEMQ_H
#define RLK_A_SEMQ_H

#include <stddef.h>

#include "kinds/acq.h"
#include "kinds/proto.h"
#include "engine/engine.h"
#include "async/a_common.h"

/* What the call in flight of a waiter's request is (rlk_a_semq.cw). */
enum { RLK_A_SEMQ_NONE, RLK_A_SEMQ_ATTEMPT, RLK_A_SEMQ_UNDO, RLK_A_SEMQ_CANCEL, RLK_A_SEMQ_REL,
       RLK_A_SEMQ_READ };

/* A semaphore waiter's request: the kind's state (the semaphore's), or its
 * first member (the permit-expirable semaphore's; its hooks and replies take
 * the state as q): its queue and the request's calls, deadline, wake-ups
 * and end. */
typedef struct rlk_a_semq {
    rlk_a_head h;               /* ac, r, start (a_common.h) */
    rlk_a_wait w;               /* its wake-ups (a_common.h): go attempts; its listener on the
                                   wake channel (a waiter), redisson_sc:{name} while first in
                                   the queue, its ticket (0: no place in the queue: a single
                                   try, or not yet), the call in flight */
    char *name;                 /* the semaphore's key */
    char *channel;              /* redisson_sc:{name} */
    char *wake;                 /* redisson_sc:{name}:rlk:<cid>: this client's wake channel */
    const char *busy;           /* a wait that ran out ends "<busy> <name>: <permits> permit(s)
                                   not available after <ms> ms", as the blocking call's */
    long long permits;          /* what the ticket asks for (the cancel's) */
    long long wait_ms;
    int queued;                 /* an attempt with the ticket may have queued it */
    int cw;                     /* RLK_A_SEMQ_*: what the call in flight is */
    int end_err;                /* with RLK_A_SEMQ_CANCEL: how the request ends */
    int cancels;                /* the give-up's sends (kinds/acq.h rlk_acq_cancel_again) */
    char end_msg[256];
    rlk_acq_sem m;              /* the machine (kinds/acq.h): what follows an attempt's reply */
    const unsigned char *id;    /* a permit-expirable semaphore's id (the read-back's, the
                                   give-back's) */
    size_t idlen;
    const char *result;         /* the result's id (NULL: none) */
    const rlk_proto_call *acquire;  /* the kind's acquire, and its lease (a permit-expirable */
    long long lease_ms;             /* semaphore's) */
    const rlk_proto_call *release;  /* the kind's release: the give-back of permits taken by a
                                       request cancelled while they were on their way */
} rlk_a_semq;

/* A new request of ac whose state, of type, has its rlk_a_semq q first
 * (rlk_a_common_new). */
#define RLK_A_SEMQ_NEW(ac, type, fn, privdata) \
    rlk_a_common_new((ac), sizeof(type), offsetof(type, q.h), (fn), (privdata))

/* rlk_a_common_begin with q's hooks (the free of rlk_a_semq_free, the
 * cancel of rlk_a_semq_cancel): 1 when the request is completed. */
int rlk_a_semq_begin(rlk_a_semq *q, const char *who, const char *name);
/* Fills q for the semaphore name, a wait of wait_ms for permits (busy: its message's first
 * word, the blocking call's: "semaphore", "acquire";
 * acquire the kind's, its ARGV from q: permits, lease_ms, the ticket, the id; ids a
 * permit-expirable semaphore's, for the machine, kinds/acq.h rlk_acq_sem): 0; 1 when out of
 * memory (the request ends RLK_ERR_NOMEM "<who> <name>: out of memory"). */
int rlk_a_semq_init(rlk_a_semq *q, const char *who, const char *name, long long permits,
                    long long wait_ms, const char *busy, const rlk_proto_call *acquire, int ids);
/* Listens on the wake channel (a waiter) before the first attempt, which
 * the uncontended path makes without a ticket; out of memory: the request
 * ends RLK_ERR_NOMEM "<who> <name>: out of memory". */
void rlk_a_semq_start(rlk_a_semq *q, const char *who);
/* 1 while calls that never went out or lost their reply are tried again:
 * within rlk_a_common_budget of the wait. */
int rlk_a_semq_in_budget(const rlk_a_semq *q);
/* Sends the kind's call pc with vals on q's name as the call in flight
 * (cw, a RLK_A_SEMQ_*; the retry disarmed), its reply to fn with q: 0; -1 when it could not be
 * sent (q->cw RLK_A_SEMQ_NONE): the client is closing or out of memory. */
int rlk_a_semq_send(rlk_a_semq *q, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                    int cw, rlk_ae_reply_fn fn);

/* Ends the request without permits with err and the message fmt formats:
 * a ticket an attempt may have queued leaves the queue first
 * (semaphore/cancel of it for q's permits, best effort: its reply does not
 * change how the request ends; it passes on a reservation made for it). */
void rlk_a_semq_finish(rlk_a_semq *q, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* RLK_A_SEMQ_H */
