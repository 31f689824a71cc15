/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * inspect.h - reading what a name holds, for `rlk inspect` and `rlk unlock`
 * (inspect_read.c): the kind of lock or synchronizer, found from the key's
 * type and its companion keys (or forced with --kind), and its state, read
 * with plain commands (a snapshot, not a transaction; nothing is written,
 * nothing reclaimed).
 */
#ifndef RLK_INSPECT_H
#define RLK_INSPECT_H

#include "lock_cli.h"

enum rlk_ik_kind {
    RLK_IK_AUTO = -1,           /* detect (the default of --kind) */
    RLK_IK_NONE = 0,            /* nothing under the name */
    RLK_IK_OTHER,               /* a key rlk does not know as a lock */
    RLK_IK_REENTRANT,
    RLK_IK_RWLOCK,
    RLK_IK_FAIR,
    RLK_IK_FENCED,
    RLK_IK_TOKEN,
    RLK_IK_SEMAPHORE,
    RLK_IK_PSEMAPHORE,
    RLK_IK_LATCH,
    RLK_IK_FASTMULTI            /* a faster-MultiLock group: one hash, a field per value */
};

/* The JSON / --kind word of a kind ("reentrant", "psemaphore"), its text label
 * ("reentrant lock", "permit-expirable semaphore"). */
const char *rlk_ik_word(int kind);
const char *rlk_ik_label(int kind);
/* The kind named by a --kind word; RLK_IK_NONE when unknown. */
int rlk_ik_from_word(const char *word);

typedef struct rlk_ik_holder {
    const char *owner;
    size_t owner_len;
    long long count;
    const char *mode;           /* rwlock: "read" or "write"; else NULL */
} rlk_ik_holder;

typedef struct rlk_ik_waiter {
    const char *owner;
    size_t owner_len;
    long long deadline_ms;      /* ms since the epoch (server clock); -1: none */
    long long deadline_in_ms;   /* from the server's now */
} rlk_ik_waiter;

/* One value of a faster-MultiLock group (docs/locks/fastmulti.md): field
 * `value` -> holder, `value:holder:expire_time`, `value:holder:lock_count`. */
typedef struct rlk_ik_value {
    const char *value;
    size_t value_len;
    const char *holder;
    size_t holder_len;
    long long count;            /* lock_count; 0: no such field */
    long long expire_ms;        /* expire_time, ms since the epoch (server clock) */
    long long expire_in_ms;     /* from the server's now; <= 0: lapsed (free to take) */
} rlk_ik_value;

#define RLK_IK_PERMITS_MAX 1000     /* permits listed (all are counted) */

typedef struct rlk_ik_view {
    const char *name;
    int kind;
    int detected;               /* 1: found by detection (not forced) */
    int marked;                 /* 1: rlk's kind marker ({NAME}:rlk_kind) names the kind */
    char type[64];              /* the Redis type (RLK_IK_OTHER) */
    const char *mode;           /* rwlock: "read", "write"; NULL: free */
    long long ttl_ms;           /* PTTL of the main key: -1 no expiry, -2 no key */
    rlk_ik_holder *holders;
    size_t nholders;
    rlk_ik_waiter *queue;       /* fair */
    size_t nqueue;
    long long fence_token;      /* fenced: the last token issued (0: none) */
    const char *token;          /* token lock */
    size_t token_len;
    long long count;            /* semaphores: available; latch: the count */
    rlk_permit_info *permits;   /* psemaphore, in expiry order */
    size_t npermits, permits_total;
    rlk_ik_value *values;       /* fastmulti, in value order */
    size_t nvalues;
    /* The reentrant lock's lock-delay ({NAME}:rlk_delay, rlk lock --lock-delay): its key and
     * PTTL (-2: no such key; read for a reentrant lock and for no key). With no holder, the
     * name is in its delay: a holder lost it without releasing it, and an rlk lock
     * --lock-delay waits for the PTTL. */
    char *delay_key;
    long long delay_ttl_ms;
    /* A fenced lock that rlk elect campaigns on ({NAME}:elect): the leader (rlk_elect_leader;
     * holder "" and the last term when nobody leads). */
    int election;
    rlk_elect_info elect;
    /* A hash of counts without a TTL (PTTL -1) found as a reentrant lock: what a lock never
     * is while held by rlk or Redisson (clearExpire leaves one), and what an application's
     * hash of counts looks like: a plain unlock --force refuses it. */
    int no_ttl_hash;
    redisReply *keep[4];        /* replies the view points into */
} rlk_ik_view;

/* Fills v for name (kind RLK_IK_AUTO: detect). RLK_OK, or an rlk error code
 * (errstr on c); RLK_ERR_ARG when a forced kind does not match the key. */
int rlk_ik_read(rlk_client *c, const char *name, int kind, rlk_ik_view *v);
void rlk_ik_free(rlk_ik_view *v);
/* The lock-delay of the reentrant lock name: *key (malloc'd, may be NULL) the delay key,
 * *ttl_ms its PTTL (-2: no key), *held 1 when the lock's key exists. RLK_OK or an error. */
int rlk_ik_lock_delay(rlk_client *c, const char *name, char **key, long long *ttl_ms, int *held);
/* The values of a faster-MultiLock group from a reply of its fields (HGETALL's, or HRANDFIELD
 * ... WITHVALUES's: field, value pairs), now the server's ms: RLK_OK with *values (in value
 * order, pointing into all; free() the array) and *n; RLK_ERR_ARG when the fields are not a
 * group's (as rlk inspect detects one); RLK_ERR_NOMEM. */
int rlk_ik_fastmulti_values(const redisReply *all, long long now, rlk_ik_value **values,
                            size_t *n);

/* The formatting `rlk inspect` and `rlk top` share (cmd_inspect.c): a holder as
 * JSON {"owner","count"[,"mode"]}, and as text "<owner>  count N[  mode]". */
void rlk_ik_json_holder(FILE *out, const rlk_ik_holder *h, int with_mode);
void rlk_ik_text_holder(char *buf, size_t len, const rlk_ik_holder *h);
/* A group's value as JSON {"value","holder","count","expire_ms","expire_in_ms","held"}. */
void rlk_ik_json_value(FILE *out, const rlk_ik_value *e);

#endif /* RLK_INSPECT_H */
