/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sub_rule.h - the pure rules of pub/sub (sub_rule.c): no I/O, no thread, no
 * lock. Both subscribers follow them: the blocking one (sub.c) and the async
 * engine's pub/sub (ae_pubsub.c): what a reply on a pub/sub
 * connection is, the command of each mode, where a channel goes, when one is
 * wanted or confirmed, what a refusal names, what a message means.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SUB_RULE_H
#define RLK_SUB_RULE_H

#include <stddef.h>

#include <hiredis/hiredis.h>

/* What a message on a channel means: a kind's rule (as Redisson's
 * LockPubSub gives each kind's messages their meaning over one generic
 * subscriber). The subscriber acts on the meaning; the encoding is the
 * kind's (a grant's: kinds/lock.c). */
enum rlk_sub_meaning {
    RLK_SUB_MSG_ONE = 0,    /* wake one waiter: a permit (none when a grant just covered it) */
    RLK_SUB_MSG_ALL = 1,    /* wake every waiter of the channel */
    RLK_SUB_MSG_GRANT = 2,  /* a handoff: wakes the ticket waiter head, and next after its
                               claim window; the "0" that follows adds no permit */
    RLK_SUB_MSG_HELD = 3    /* a held handoff: the lock was written in the name of the ticket
                               waiter head whose holder id the message ends with (next: where
                               in the payload), who holds it on this message; no "0" follows */
};

/* A kind's rule for its channels' messages. */
typedef struct rlk_sub_rule {
    /* The meaning of payload (len bytes; NULL: not a string); with
     * RLK_SUB_MSG_GRANT, the head and next tickets it names (RLK_SUB_MSG_HELD:
     * head, and in next the offset of the holder id in payload). Called on the
     * subscriber thread with its lock held: no I/O, no waiting. */
    int (*meaning)(const char *payload, size_t len, long long *head, long long *next);
} rlk_sub_rule;

/* The rule of a channel no kind gave one: "0" wakes one, anything else all. */
extern const rlk_sub_rule rlk_sub_rule_plain;
/* For a rule's meaning function: RLK_SUB_MSG_ONE when payload is "0"; otherwise the payload as a
 * decimal number of 8 to 16 digits in *x (RLK_SUB_MSG_GRANT), or RLK_SUB_MSG_ALL when it is not one
 * (the grant messages of the ticket queues: lib/hand_over.lua, lib/sem_grant.lua). */
int rlk_sub_grant_number(const char *payload, size_t len, unsigned long long *x);
/* RLK_SUB_MSG_GRANT when payload, read by rule, is a grant whose head is ticket,
 * RLK_SUB_MSG_HELD when it is a held grant of ticket, wait and owner (owner NULL: none
 * matches), else 0 (a driver that filters its own wake channel's messages: async/a_common.c). */
int rlk_sub_grants(const rlk_sub_rule *rule, const char *payload, size_t len, long long ticket,
                   unsigned long long wait, const char *owner);
/* 1 when a held grant's payload (len bytes) names wait and owner from offset at on (its
 * meaning's next), exactly: ":<wait> <owner>" (wait 0: " <owner>", a grant that names no wait). */
int rlk_sub_held_for(const char *payload, size_t len, long long at, unsigned long long wait,
                     const char *owner);

/* What one reply on a pub/sub connection is. */
enum rlk_sub_frame_kind {
    RLK_SUB_FRAME_OTHER = 0,        /* nothing a subscriber acts on */
    RLK_SUB_FRAME_ERROR = 1,        /* an error: the answer to the oldest (S)SUBSCRIBE */
    RLK_SUB_FRAME_PONG = 2,         /* the answer to a keepalive PING */
    RLK_SUB_FRAME_MESSAGE = 3,      /* message / smessage on chan: payload */
    RLK_SUB_FRAME_SUBSCRIBE = 4,    /* subscribe / ssubscribe: the answer for chan */
    RLK_SUB_FRAME_UNSUBSCRIBE = 5   /* unsubscribe / sunsubscribe: an answer, or (sharded) the
                                       server dropping chan because its slot moved away */
};
typedef struct rlk_sub_frame {
    int kind;                       /* enum rlk_sub_frame_kind */
    int sharded;                    /* smessage, ssubscribe, sunsubscribe */
    const char *chan;               /* MESSAGE, SUBSCRIBE, UNSUBSCRIBE: the channel */
    size_t chan_len;
    const char *payload;            /* MESSAGE: the payload; NULL when not a string */
    size_t len;
} rlk_sub_frame;
/* Classifies r into *f (pointing into r) and returns f->kind. */
int rlk_sub_classify(const redisReply *r, rlk_sub_frame *f);
/* The command that subscribes (sub 1) or unsubscribes a channel in mode
 * (RLK_PUBSUB_GLOBAL: SUBSCRIBE / UNSUBSCRIBE; SHARDED: the S- forms). */
const char *rlk_sub_command(int mode, int sub);
/* 1 when each channel goes to the master of its slot (sharded on a routed
 * topology, a cluster); else every channel shares one connection. */
int rlk_sub_per_slot(int mode, int routed);
/* 1 when a channel needs a SUBSCRIBE: someone listens to it and the last
 * command sent for it was not SUBSCRIBE (after a reconnect, after the
 * server dropped it, when its slot moved). */
int rlk_sub_wanted(int listeners, int sent_subscribe);
/* 1 when a channel is subscribed: the last command sent for it was
 * SUBSCRIBE and no answer is outstanding (the server answers a channel's
 * commands in order; a message before then belongs to an older
 * subscription). */
int rlk_sub_confirmed(int sent_subscribe, int outstanding);
/* 1 when err refuses an SSUBSCRIBE with MOVED: the channel's slot, and
 * the node that owns it now, in *slot, host and *port. */
int rlk_sub_moved(const char *err, int *slot, char *host, size_t hostlen, int *port);
/* What payload means by rule (NULL: plain), with a grant's head and next. */
int rlk_sub_meaning(const rlk_sub_rule *rule, const char *payload, size_t len, long long *head,
                    long long *next);

#endif /* RLK_SUB_RULE_H */
