/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_kind.h - the lock kinds' protocol as rows (a_kind.c), for the lock
 * requests (a_lock.c) and the election (a_elect.c): what a kind's acquire,
 * release, cancel and force-release scripts are, the names of their ARGV,
 * how its waiters wait, how its reply is read, what renews its holds.
 * Adding a kind is adding a row.
 *
 * The pieces are the blocking kinds' own: the scripts of scripts/ by name;
 * each script's KEYS built from the roles its header gives them
 * (client/scripts.h rlk_script_key_roles) by kinds/names.h rlk_names_key;
 * its ARGV named as its header names them; the acquire reply read by
 * runtime/fam_hold.h rlk_fam_acquire_reply; grants by kinds/lock.h
 * rlk_lock_sub_rule; renewals by the kind's rlk_renew_task (runtime/wd.h).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_KIND_H
#define RLK_A_KIND_H

#include <stddef.h>

#include "async/engine.h"
#include "kinds/names.h"
#include "runtime/wd.h"

/* How a kind's waiter waits (the blocking kinds' ways, on the loop). */
enum {
    RLK_A_WAIT_QUEUE,       /* a ticket in the server's queue, grants on the client's wake
                               channel, the lock's channel too while first (reentrant, writers) */
    RLK_A_WAIT_CHANNEL,     /* the lock's channel and the holder's TTL (fenced, readers,
                               non-reentrant, election) */
    RLK_A_WAIT_FAIR,        /* the fair queue: the waiter's own channel, attempts before its
                               queue deadline runs out */
    RLK_A_WAIT_SPIN         /* no pub/sub: attempts with back-off (runtime/spin.h) */
};

#define RLK_A_TOKEN 1           /* the acquire replies {token}: the result's value */
#define RLK_A_NON_REENTRANT 2   /* the holder asking again: RLK_ERR_REENTRY, nothing counted */
#define RLK_A_ONE_HOLD 4        /* the holder asking again: its token, nothing sent */
#define RLK_A_VALUES 8          /* the faster MultiLock's: every call's ARGV end with the
                                   request's values; one hold per (group, owner) counts the
                                   acquisitions, whichever values; a lost reply is read back
                                   from the values' fields (kinds/fastmulti.h's
                                   rlk_fastmulti_lost_count) */

/* One kind's protocol. ARGV lists name each argument as the script's
 * header does, separated by spaces: lease_ms, owner, ticket, claim_ms,
 * publish, wait_ms (the fair queue's thread wait), mode ("any"), value, term,
 * delay_ms (the lock-delay), secret (the election's incarnation). */
typedef struct rlk_a_kind {
    const char *what;               /* in messages: "lock", "non-reentrant lock", ... */
    int hold;                       /* RLK_KIND_*: its holds are found, counted and reported as */
    const char *names;              /* kinds/names.h's kind: whose keys and channel */
    const char *acquire, *acquire_args;
    const char *release, *release_args;
    const char *cancel, *cancel_args;   /* a queued waiter gives up; NULL: nothing to leave */
    const char *force, *force_args;     /* the force release (rlk_async_force_unlock); NULL:
                                           forced as the public kind of its holds */
    const char *wait_channel;       /* the role of the channel its waiters listen on */
    int wait;                       /* RLK_A_WAIT_* */
    int flags;                      /* RLK_A_* */
    const char *field_suffix;       /* the hold's hash field: owner + this */
    const rlk_renew_task *renew;    /* the watchdog's task (the kind's own) */
    const char *renew_keys;         /* the roles of the task's KEYS, the name first */
    size_t value_max;               /* the longest value argument (0: none) */
    const char *opt_keys;           /* the optional KEYS its acquire, release and force scripts
                                       take after their header's roles ("delay": the
                                       lock-delay's); NULL: none */
    const char *held, *held_args;   /* RLK_A_TOKEN: the read-back of a lost acquire, replying
                                       {count, token, PTTL} in one script (fenced/held,
                                       elect/held); NULL: the holder's field (HGET) */
} rlk_a_kind;

/* rlk_async_lock's kinds: RLK_KIND_LOCK .. RLK_KIND_WRITE; NULL for another. */
const rlk_a_kind *rlk_a_kind_lock(int kind);
/* rlk_async_force_unlock_named's: rlk_async_force_unlock's row of kind
 * (RLK_KIND_LOCK .. RLK_KIND_WRITE) whose force release also passes
 * 'named' (a lock's hash without a TTL goes too); NULL for another kind. */
const rlk_a_kind *rlk_a_kind_named(int kind);
/* rlk_async_lock_nr's: the non-reentrant lock (RLK_KIND_LOCK) and fair lock
 * (RLK_KIND_FAIR); NULL for another. */
const rlk_a_kind *rlk_a_kind_nr(int kind);
/* rlk_async_lock_spin's: the reentrant lock without pub/sub. */
extern const rlk_a_kind rlk_a_kind_spin;
/* rlk_async_lock_delay's: the reentrant lock with a lock-delay; also the
 * force unlock of RLK_KIND_LOCK (rlk_async_force_unlock: it ends a delay). */
extern const rlk_a_kind rlk_a_kind_delay;
/* 1 when a re-entry asked for with row k of a hold taken with row held is
 * made with the hold's row and lock-delay: both rows share the acquire
 * script (the reentrant lock's plain, spin and lock-delay rows; a kind's
 * own row), no value lists. So a hold keeps the lock-delay of its first
 * acquisition, or the lack of one, through its re-entries and its release
 * (kinds/lock.c does the same). */
int rlk_a_kind_keeps(const rlk_a_kind *held, const rlk_a_kind *k);
/* The election's campaign and resign (docs/elect.md). */
extern const rlk_a_kind rlk_a_kind_elect;
/* rlk_async_fastmulti_*: the faster MultiLock (RLK_A_VALUES). */
extern const rlk_a_kind rlk_a_kind_fastmulti;

/* ---------------------------------------------------------------- building a call */

#define RLK_A_KIND_KEYS 6           /* KEYS of one call, at most (the rwlock scripts: 5) */
#define RLK_A_KIND_ARGS 5           /* ARGV of one call, at most (elect/campaign: 5) */

#define RLK_A_KIND_ROLES 6          /* distinct key roles of one kind's scripts, at most */

/* A name's keys, built once per role by the names kind (kept small: a
 * pending request carries one). */
typedef struct rlk_a_keys {
    const rlk_names_kind *names;
    const char *name;               /* not copied; also the key of role "lock" */
    char *key[RLK_A_KIND_ROLES];
    unsigned char role[RLK_A_KIND_ROLES];   /* the roles built: indexes of a_kind.c's list */
    unsigned char n;
} rlk_a_keys;

/* Empty keys of name (kept by the caller) by the names kind called names. */
void rlk_a_keys_init(rlk_a_keys *ks, const char *names, const char *name);
void rlk_a_keys_free(rlk_a_keys *ks);
/* The key of role; NULL: out of memory, or a role the names kind does not know. */
const char *rlk_a_keys_get(rlk_a_keys *ks, const char *role);
/* The keys of roles (space-separated) into out (at most max); their number,
 * or -1 (out of memory, an unknown role, too many). */
int rlk_a_keys_list(rlk_a_keys *ks, const char *roles, const char **out, int max);

/* The values a call's ARGV are taken from, by name. */
typedef struct rlk_a_argvals {
    long long lease_ms;
    const char *owner;
    long long ticket;
    const char *publish;            /* rlk_ae_publish_arg's pointer itself (engine.h) */
    const char *value;              /* NULL: "" */
    long long term;                 /* the election's term */
    long long delay_ms;             /* the lock-delay */
    const char *secret;             /* the election's incarnation (elect/campaign, elect/resign,
                                       elect/proclaim): the client's uuid, random per client;
                                       NULL: "" */
} rlk_a_argvals;

typedef struct rlk_a_argv {
    const char *v[RLK_A_KIND_ARGS];
    char lease[24], ticket[24], wait[24], term[24], delay[24];
} rlk_a_argv;

/* The ARGV named (space-separated) into out->v; their number, or -1 (an
 * unknown name, too many). */
int rlk_a_args(const char *names, const rlk_a_argvals *vals, rlk_a_argv *out);

/* ---------------------------------------------------------------- value lists (RLK_A_VALUES) */

/* A copy of values[0..n) in one block (free() frees it), NULL-terminated,
 * in *out: RLK_OK; RLK_ERR_ARG with why in buf (kinds/fastmulti.h's check:
 * nothing copied); RLK_ERR_NOMEM. */
int rlk_a_values_take(const char *const *values, size_t n, char ***out, char *buf, size_t len);
/* fastmulti/counts for owner of values in group name (a lost reply's
 * read-back: owner's live lock_count of each value, for
 * rlk_fastmulti_lost_count), fn called with its reply; NULL: out of memory
 * or the client is closing (fn is then not called). */
rlk_ae_call *rlk_a_values_counts(rlk_async *ac, const char *name, const char *owner,
                                 char *const *values, rlk_ae_reply_fn fn, void *arg);

#endif /* RLK_A_KIND_H */
