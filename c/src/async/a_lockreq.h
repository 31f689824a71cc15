/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_lockreq.h - one request of the lock kinds (a_lockreq.c), what a_lock.c
 * drives: its state (the row, the name's keys, the hold's owner, the call
 * in flight and what it is, the settling of a lost reply), the form of its
 * script calls, its message and its end (leaving the server's queue first
 * when it may be in it).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_LOCKREQ_H
#define RLK_A_LOCKREQ_H

#include "rlk_async.h"
#include "async/a_common.h"
#include "async/a_kind.h"

/* What the request is (op), and what its call in flight is (cw). */
enum { ALK_LOCK, ALK_UNLOCK, ALK_FORCE };
enum { CW_NONE, CW_ATTEMPT, CW_READ_ACQ, CW_CANCEL, CW_UNDO, CW_RELEASE, CW_READ_REL, CW_FORCE,
       CW_GIVE_BACK };

typedef struct rlk_a_lockreq {
    rlk_a_head h;                   /* ac, r, start: the first member (a_common.h) */
    const rlk_proto *k;            /* the row (a_kind.h) */
    int op;                         /* ALK_* */
    unsigned long long task;
    char *name;
    char *owner;                    /* <uuid>:<task> */
    char *value;                    /* the value argument (the election's); NULL: none */
    char **values;                  /* RLK_PROTO_VALUES: the values (one block); NULL: none */
    rlk_proto_keys keys;                /* the name's keys, built once per role by the row's names */
    const char *channel;            /* the waiters' channel (one of keys) */
    char *wake;                     /* RLK_PROTO_WAIT_QUEUE: <channel>:rlk:<cid>, the grants */
    char *own;                      /* RLK_PROTO_WAIT_FAIR: the waiter's channel <channel>:<owner> */
    long long token;                /* RLK_PROTO_TOKEN: the token of the acquisition */
    long long lease_ms;
    int watchdog;
    long long wait_ms;
    long long delay_ms;             /* a row with the lock-delay's key: its delay */
    int spin_initial, spin_max, spin_prev;  /* RLK_PROTO_WAIT_SPIN: the back-off (ms, <= 60000) */
    int spin_fails;
    long long sent;                 /* monotonic ms: the last attempt was made (its lease's start) */
    long long read_at;              /* monotonic ms: a token row's read-back was made */
    long long ticket;               /* 0: no place in the queue (single try, or not yet) */
    int queued;                     /* an attempt with the ticket may have queued it */
    int waiter;                     /* waits (wait_ms != 0, not a re-entry) */
    rlk_ae_call *call;
    int cw;                         /* what the call in flight is: CW_* */
    long long known;                /* the hold count before the call (settling) */
    int give_back;                  /* a settled lost reply's holds to give back, then: */
    int adopt;                      /* 1: adopt one hold; 0: end with ending and end_msg */
    rlk_ae_timer *retry, *deadline;
    rlk_ae_sub *s_wake, *s_wide;
    int again;                      /* woken while a call was in flight */
    int ending;                     /* RLK_ERR_BUSY / RLK_ERR_CANCELLED: end at the next chance */
    int end_err;                    /* the error to complete with once the cancel is back */
    char *end_msg;                  /* the message to end with (heap, set when ending; NULL before) */
    int end_msg_oom;                /* setting it ran out of memory */
} rlk_a_lockreq;

/* Sends script with the request's keys (its header's roles) and the args named: the call in
 * flight is then a->call, what it is a->cw = cw; 0. -1: not sent (out of memory, closing, or a
 * row that does not fit its script; fn is not called; a->cw CW_NONE). */
int rlk_a_lockreq_send(rlk_a_lockreq *a, int cw, const char *script, const char *argnames,
                       long long lease, long long ticket, rlk_ae_reply_fn fn);
/* The message to end with, on the heap, set only when a request ends; and its text. */
void rlk_a_lockreq_set_msg(rlk_a_lockreq *a, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
const char *rlk_a_lockreq_msg_str(const rlk_a_lockreq *a);
void rlk_a_lockreq_quiet(rlk_a_lockreq *a);         /* stops listening and timing (ending) */
void rlk_a_lockreq_call_back(rlk_a_lockreq *a);     /* the call in flight is back: none is now */
/* How long it keeps trying through lost replies and reconnects: its wait, then two command
 * timeouts and a connect. */
long long rlk_a_lockreq_budget(const rlk_a_lockreq *a);
/* Ends it with err (no hold), leaving the server's queue first when it may be in it (the
 * row's cancel); _busy: RLK_ERR_BUSY, or RLK_ERR_CANCELLED when it was cancelled. */
void rlk_a_lockreq_end(rlk_a_lockreq *a, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void rlk_a_lockreq_end_busy(rlk_a_lockreq *a);
/* The reply to the call in flight came (call and cw cleared): 1 when the client is being
 * freed, the request ended with it. */
int rlk_a_lockreq_replied(rlk_a_lockreq *a, int rc, const char *errstr);
void rlk_a_lockreq_bind(rlk_a_lockreq *a, const rlk_proto *k);  /* keys by k's names kind */
/* A request of row k (NULL: an unknown kind, RLK_ERR_ARG) for name, checked as every request
 * is; NULL when out of memory. On a bad argument the request is completed already. */
rlk_a_lockreq *rlk_a_lockreq_new(rlk_async *ac, int op, const rlk_proto *k, const char *who,
                                 const char *name, unsigned long long task, rlk_async_fn fn,
                                 void *privdata);

#endif /* RLK_A_LOCKREQ_H */
