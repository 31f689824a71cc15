/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * names.h - every kind's key and channel names, in one place (names.c).
 *
 * The kinds build their handles' names from the constants below (with
 * runtime/fam.h's naming rule: "prefix:{name}", "{name}:suffix", a name with
 * its own '{' keeping its tag); the CLI (rlk check, rlk top, rlk unlock)
 * asks here instead of keeping a copy: a kind's names by the role its
 * scripts' headers give each KEYS entry ("-- KEYS[2]: channel - ..."; the
 * roles of every embedded script come from client/scripts.h's
 * rlk_script_key_roles, generated at build time), the list of kinds, and
 * the channel prefixes a name can be read back from.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_NAMES_H
#define RLK_NAMES_H

#include <stddef.h>

/* Channel prefixes (Redisson's). */
#define RLK_NAMES_CH_LOCK "redisson_lock__channel"  /* reentrant, fenced, fair, nonreentrant: "<p>:{name}";
                                                       a fair waiter's: "<p>:{name}:<waiter>" */
#define RLK_NAMES_CH_RWLOCK "redisson_rwlock"       /* "<p>:{name}" */
#define RLK_NAMES_CH_SEMAPHORE "redisson_sc"        /* both semaphores: "<p>:{name}" */
#define RLK_NAMES_CH_LATCH "redisson_countdownlatch__channel__"    /* "<p>{name}", always braced */
#define RLK_NAMES_CH_ELECT "rlk_elect__channel"     /* leader election's changes: "<p>:{name}" */

/* Companion key prefixes ("<p>:{name}") and suffixes ("{name}:<s>"). */
#define RLK_NAMES_QUEUE "redisson_lock_queue"       /* the fair lock's waiter list */
#define RLK_NAMES_TIMEOUTS "redisson_lock_timeout"  /* the fair lock's waiter deadlines */
#define RLK_NAMES_TOKEN "redisson_lock_token"       /* the fenced lock's last token */
#define RLK_NAMES_WAITERS "rlk_waiters"             /* the reentrant lock's queue of tickets */
#define RLK_NAMES_GRANT "rlk_next"                  /* the reentrant lock's reserved ticket */
#define RLK_NAMES_DELAY "rlk_delay"                 /* the reentrant lock's lock-delay */
#define RLK_NAMES_WHO "rlk_who"                     /* the reentrant lock's waiters' records
                                                       (held grants) */
#define RLK_NAMES_PERMITS "timeout"                 /* the permit-expirable semaphore's permits */
#define RLK_NAMES_RW_TIMEOUT "rwlock_timeout"       /* "{name}:<owner>:rwlock_timeout:<n>" */
#define RLK_NAMES_ELECT_STATE "elect"               /* leader election's record "{name}:elect" */

/* A kind's waiters' own channels, besides the kind's channel: none; the fair lock's
 * "<channel>:<waiter>"; a ticket queue's wake channel "<channel>:rlk:<client id>" (the
 * reentrant lock, the read-write lock's writers, both semaphores). */
#define RLK_NAMES_WAKE_NONE 0
#define RLK_NAMES_WAKE_WAITER 1
#define RLK_NAMES_WAKE_TICKET 2

/* One kind: its scripts' folder and its channel. */
typedef struct rlk_names_kind {
    const char *kind;               /* scripts/<kind>/: "reentrant", "rwlock", ... */
    const char *channel_prefix;     /* one of RLK_NAMES_CH_*; NULL: no channel */
    int braced;                     /* 1: "<prefix>{name}" (the latch); 0: "<prefix>:{name}" */
    int wake;                       /* RLK_NAMES_WAKE_*: the channels a waiter listens on besides
                                       the kind's channel */
} rlk_names_kind;

/* The kinds, in a fixed order: i < rlk_names_kind_count(). */
size_t rlk_names_kind_count(void);
const rlk_names_kind *rlk_names_kind_at(size_t i);
/* The kind of a scripts/<kind>/ folder, or NULL. */
const rlk_names_kind *rlk_names_kind_find(const char *kind);

/* The channel of kind k for name (malloc'd); NULL: none, or out of memory. */
char *rlk_names_channel(const rlk_names_kind *k, const char *name);
/* A fair lock's waiter channel "redisson_lock__channel:{name}:<waiter>"
 * (waiter: len bytes); malloc'd, NULL when out of memory. */
char *rlk_names_waiter_channel(const char *name, const char *waiter, size_t len);
/* The queues' wake channels (docs/runtime.md, "Who a handoff wakes"): a
 * client's number cid, 32768..65535, is 32768 + the first 15 bits of its
 * uuid (32 hex digits; two clients that draw the same share a channel, and
 * each ignores the other's grants); its waiters' tickets are cid * 1024 + r,
 * r in 0..1023, so a release script finds the wake channel
 * "<channel>:rlk:<ticket / 1024>" from a ticket alone. */
long long rlk_names_wake_cid(const char *uuid);
/* "<channel>:rlk:<cid>", malloc'd; NULL when out of memory. */
char *rlk_names_wake_channel(const char *channel, long long cid);
/* A new ticket of the client cid: cid * 1024 + a random r in 0..1023. */
long long rlk_names_wake_ticket(long long cid);
/* Another ticket of the same client as ticket (a wake ticket): the same cid, another r. */
long long rlk_names_wake_redraw(long long ticket);
/* A wait's number, never 0, unique in the process (a counter from a random start): a waiter that
 * takes held grants names its wait with it (held:<wait>), and a held grant's message carries it
 * back, so that a later wait of the same holder id that drew the same ticket does not take an
 * earlier wait's grant (docs/runtime.md, "Held grants"). */
unsigned long long rlk_names_wait_id(void);
/* The held grants' argument of a wait's attempts and give-up, "held:<wait>", into buf (len bytes,
 * RLK_NAMES_HELD_ARG_LEN suffices). Returns buf. */
#define RLK_NAMES_HELD_ARG_LEN 32
const char *rlk_names_held_arg(char *buf, size_t len, unsigned long long wait);
/* The queues' grant: the decimal ticket * 2^26 (the reentrant lock and the
 * read-write lock's writers add the next ticket, lib/hand_over.lua; the
 * semaphores add nothing, lib/sem_grant.lua). A ticket with a wake channel
 * (rlk_names_wake_ticket) is in 2^25..2^26-1; one without (a waiter that
 * listens on the kind's channel) is in 1..2^25-1. */
#define RLK_NAMES_GRANT_SHIFT 67108864LL        /* 2^26 */
#define RLK_NAMES_WAKE_TICKET_MIN 33554432LL    /* 2^25: the least ticket with a wake channel */
/* A ticket without a wake channel: random, in 1..2^25-1 (a clash of two
 * waiters only costs a turn: the lock's hash decides who holds it). */
long long rlk_names_plain_ticket(void);
/* Whether ticket has a wake channel (rlk_names_wake_ticket's range). */
int rlk_names_ticket_wakes(long long ticket);
/* A read-write lock reader's lease key "{name}:<owner>:rwlock_timeout:<n>";
 * malloc'd, NULL when out of memory. */
char *rlk_names_rw_timeout(const char *name, const char *owner, int n);
/* The key a script of kind k passes as KEYS for role (as its header names
 * it: lock, locks, semaphore, latch, group (the faster MultiLock), channel, queue, timeouts, token,
 * prefix, waiters, grant; the election's state and lock_channel), malloc'd; NULL: a role this table does not know
 * (*unknown = 1), or out of memory (*unknown = 0). */
char *rlk_names_key(const rlk_names_kind *k, const char *role, const char *name, int *unknown);

/* The distinct starts of the kinds' channels, separator included
 * ("redisson_lock__channel:", ..., "redisson_countdownlatch__channel__");
 * NULL for i past the last (RLK_NAMES_CHANNEL_HEADS of them). */
#define RLK_NAMES_CHANNEL_HEADS 4
const char *rlk_names_channel_head(size_t i);
/* The length of the channel prefix ch starts with, separator included
 * ("redisson_lock__channel:"), when what follows it is not empty; 0 when
 * ch is not one of the kinds' channels. */
size_t rlk_names_channel_prefix(const char *ch, size_t len);

#endif /* RLK_NAMES_H */
