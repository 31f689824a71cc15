/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sub.h - the client's subscriber (sub.c), on the engine's pub/sub on the
 * client's background loop (bg.h). Waiters join a channel (reference counted: SUBSCRIBE on the
 * first, UNSUBSCRIBE when the last leaves), wait until the subscription is
 * confirmed, take a mark, try their acquire, and sleep on the channel's
 * wake permit.
 *
 * Times are CLOCK_MONOTONIC nanoseconds (client/clock.h); an "until" of -1
 * means "no deadline".
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SUB_H
#define RLK_SUB_H

#include "rlk.h"
#include "engine/counters.h"
#include "engine/sub_rule.h"

typedef struct rlk_sub rlk_sub;
typedef struct rlk_sub_chan rlk_sub_chan;

/* A reentrant-lock waiter that holds a ticket in the lock's server queue
 * (reentrant/acquire). A release that reserves the lock publishes a grant
 * naming the first and second tickets, head and next (its encoding is the
 * reentrant lock's rule, kinds/lock.c), just before its "0":
 * the subscriber then wakes only the waiter whose ticket is head (granted),
 * sets the one whose ticket is next to wake claim_ns later (the head may be
 * dead: its reservation then expires and next takes the lock), and takes
 * the "0" that follows as covered (no permit). A bare "0" (Redisson, a
 * force unlock, a release with nobody queued) adds a permit as before.
 * The waiter owns the struct; its fields are guarded by the subscriber. */
typedef struct rlk_sub_ticket {
    struct rlk_sub_ticket *next;
    long long ticket;           /* 1..2^26-1 */
    const char *owner;          /* the waiter's holder id: a held grant must name it (NULL:
                                   takes none) */
    unsigned long long wait;    /* its wait's number (kinds/names.h rlk_names_wait_id): a held
                                   grant must name it too */
    long long claim_ns;         /* how long after a grant naming it second to wake */
    int granted;                /* a grant named it head, not yet taken by rlk_sub_wait */
    int held;                   /* that grant was held (RLK_SUB_MSG_HELD): the lock is the
                                   waiter's; rlk_sub_wait moves it to took_held */
    int took_held;              /* not the subscriber's: rlk_sub_wait returned on a held grant
                                   (set and read by the waiter only) */
    rlk_sub_chan *sleeps;       /* the channel rlk_sub_wait sleeps on (its lock's channel while
                                   first in the queue), woken by the grant too; NULL: none */
    long long defer_ns;         /* 0, or when to wake (named second) */
    long long rx_ns, woken_ns;  /* the handoff timeline: when the message that woke the
                                   waiter was read, and when rlk_sub_wait returned (0: none) */
    long long grant_ns;         /* when its grant was read (the subscriber's, under mu) */
    int joined;                 /* not the subscriber's: set by wait.c before each attempt, 1
                                   when the waiter's channel subscription is confirmed (read
                                   through rlk_wait_ticket_arg, runtime/wait.h) */
} rlk_sub_ticket;

enum rlk_sub_result {
    RLK_SUB_READY = 0,      /* subscribed on the live connection */
    RLK_SUB_DOWN = 1,       /* the subscriber cannot connect right now: poll */
    RLK_SUB_TIMEOUT = 2,    /* until passed */
    RLK_SUB_WOKEN = 3       /* a permit (message 0) or a wake-all (message 1, reconnect) */
};

/* A subscriber of c counting into counters (the runtime state's). No I/O. */
rlk_sub *rlk_sub_new(rlk_client *c, rlk_rt_counters *counters, const atomic_int *interrupted);
void rlk_sub_free(rlk_sub *s);
/* Registers interest in channel (starts the thread on first use). rule:
 * its messages' meaning from now on (NULL: keep the channel's, plain for a
 * new one). */
int rlk_sub_join(rlk_sub *s, const char *channel, const rlk_sub_rule *rule, rlk_sub_chan **out);
void rlk_sub_leave(rlk_sub *s, rlk_sub_chan *ch);
/* The same without lingering: the last one out unsubscribes at once (a
 * channel that would wake this client for nothing while subscribed: the
 * reentrant lock's own channel, whose "0" follows every handoff). */
void rlk_sub_leave_now(rlk_sub *s, rlk_sub_chan *ch);
/* A hold joins its lock's channel (the watchdog's, runtime/wd.h: it hears a force unlock there),
 * as rlk_sub_join with the channel's rule; it leaves it lingering as a waiter's (linger 1) or
 * at once (0, as rlk_sub_leave_now). */
int rlk_sub_join_hold(rlk_sub *s, const char *channel, rlk_sub_chan **out);
/* (Its result: 1 joined and confirmed already, 0 joined and not confirmed yet: the hook hears
 * the confirmation, as it hears every confirmation while a hold is joined; -1 not joined: out of
 * memory, or the subscriber's loop did not start.) */
void rlk_sub_leave_hold(rlk_sub *s, rlk_sub_chan *ch, int linger);
/* Waits until ch is subscribed (READY), the subscriber is down (DOWN) or
 * until passes (TIMEOUT). On READY and DOWN, *mark is set and the permits
 * received so far are dropped: the acquire attempt that follows sees every
 * release they announced. */
int rlk_sub_ready(rlk_sub *s, rlk_sub_chan *ch, long long until_ns, unsigned long long *mark);
/* Sleeps until a permit (consumed), a wake-all since mark, t's grant or
 * deferred wake (consumed; t may be NULL), or until: RLK_SUB_WOKEN or
 * RLK_SUB_TIMEOUT. */
int rlk_sub_wait(rlk_sub *s, rlk_sub_chan *ch, unsigned long long mark, long long until_ns,
                 rlk_sub_ticket *t);
/* Registers / unregisters t on the joined channel ch. */
void rlk_sub_ticket_add(rlk_sub *s, rlk_sub_chan *ch, rlk_sub_ticket *t);
void rlk_sub_ticket_remove(rlk_sub *s, rlk_sub_chan *ch, rlk_sub_ticket *t);
/* The waiter of t draws another ticket (its old one left the server's queue), and names its wait
 * anew (wait): a grant of the old ticket read so far, or read from now on, is not its, even when
 * a later redraw comes back to that ticket. */
void rlk_sub_ticket_redraw(rlk_sub *s, rlk_sub_ticket *t, long long ticket,
                           unsigned long long wait);
/* Joins channel only when it is subscribed on the live connection right
 * now (a channel a wait of this client used recently lingers subscribed
 * for RLK_SUB_LINGER_MS): 1 with *out and *mark as rlk_sub_ready would
 * give them, or 0 (not joined; no I/O, no SUBSCRIBE started). */
int rlk_sub_try_join(rlk_sub *s, const char *channel, const rlk_sub_rule *rule,
                     rlk_sub_chan **out, unsigned long long *mark);

#define RLK_SUB_LINGER_MS 1000      /* a channel stays subscribed this long after its last waiter */
#define RLK_SUB_LINGER_MAX 256      /* channels lingering at once, at most: beyond, one unsubscribes
                                       when its last waiter leaves */
/* The two bounds in force (RLK_SUB_LINGER_MS, RLK_SUB_LINGER_MAX); tests change them before the
 * client's first wait. A linger of 0: no channel lingers. */
extern long long rlk_sub_linger_ms;
extern int rlk_sub_linger_max;
/* Wakes every waiter of the subscriber (rlk_interrupt_waits): they see
 * the interrupted flag given to rlk_sub_new and return. */
void rlk_sub_interrupt(rlk_sub *s);
/* Drops the subscriber's connections to the old master (the sentinels named
 * another; done on the loop, soon): their channels' waiters wake and retry,
 * and the loop reconnects and subscribes again. */
void rlk_sub_reset(rlk_sub *s);
/* Adds a permit to a confirmed channel, as a message 0 would: the local
 * shortcut of a release made by this process (the message still comes). */
void rlk_sub_poke(rlk_sub *s, rlk_sub_chan *ch);
/* Called from the loop's thread (no subscriber lock held) with the
 * channel of every message received, and of every confirmation of a channel a hold joined
 * (rlk_sub_join_hold: a message sent before it reached nobody); NULL clears it. When this returns, no
 * call of the previous hook is running. */
typedef void (*rlk_sub_hook_fn)(void *arg, const char *channel, size_t len);
void rlk_sub_set_hook(rlk_sub *s, rlk_sub_hook_fn fn, void *arg);

#endif /* RLK_SUB_H */
