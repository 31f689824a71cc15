/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * proto.h - the shape of each kind's protocol, once, as data: for the lock
 * kinds a row (rlk_proto: acquire, release, cancel, force and held
 * read-back scripts, their ARGV by name, how waiters wait, the renew
 * task), for every other call of a kind (the semaphores', the latch's, the
 * election's proclaim and leader read, the faster MultiLock's reads) a
 * call (rlk_proto_call: its script and ARGV by name). The rows and calls
 * themselves live in their kind's file (kinds/lock.c's rlk_lock_row, ...,
 * declared in its header); proto.c calls no kind. KEYS are built from
 * the roles the script's header gives them (client/scripts.h
 * rlk_script_key_roles) by kinds/names.h rlk_names_key. The pure reply
 * readers of the kinds' scripts are here too (rlk_proto_read_*), so that
 * the blocking kinds and the async requests read a reply one way. Adding a
 * kind is adding a row in its file.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_PROTO_H
#define RLK_PROTO_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "kinds/names.h"
#include "runtime/wd.h"

/* How a kind's waiter waits. */
enum {
    RLK_PROTO_WAIT_QUEUE,   /* a ticket in the server's queue, grants on the client's wake
                               channel, the lock's channel too while first (reentrant, writers) */
    RLK_PROTO_WAIT_CHANNEL, /* the lock's channel and the holder's TTL (fenced, readers,
                               non-reentrant, election) */
    RLK_PROTO_WAIT_FAIR,    /* the fair queue: the waiter's own channel, attempts before its
                               queue deadline runs out */
    RLK_PROTO_WAIT_SPIN     /* no pub/sub: attempts with back-off (runtime/spin.h) */
};

#define RLK_PROTO_TOKEN 1           /* the acquire replies {token}: the result's value */
#define RLK_PROTO_NON_REENTRANT 2   /* the holder asking again: RLK_ERR_REENTRY, nothing counted */
#define RLK_PROTO_ONE_HOLD 4        /* the holder asking again: its token, nothing sent */
#define RLK_PROTO_VALUES 8          /* the faster MultiLock's: every call's ARGV end with the
                                       request's values; one hold per (group, owner) counts the
                                       acquisitions, whichever values; a lost reply is read back
                                       from the values' fields (kinds/acq.h's
                                       rlk_acq_values_count), never ridden out (sent
                                       again blindly, runtime/wait.h) */
#define RLK_PROTO_GRANTS 16         /* takes held grants (docs/runtime.md): a lost attempt that
                                       never arrived may find the lock granted in its name by a
                                       release after the attempt before it */

/* One lock kind's protocol. ARGV lists name each argument as the script's
 * header does, separated by spaces: lease_ms, owner, ticket, claim_ms,
 * publish, wait_ms (the fair queue's thread wait), mode ("any"), value, term
 * (token: fenced/reenter's handed token, taken from term),
 * delay_ms (the lock-delay), secret (the election's incarnation), named, n
 * (a number: permits, a count), ttl (ttl_ms), id (a permit id, raw). A name
 * ending in "?" (ticket?, claim_ms?, publish?) is left out at the end of the
 * list while it has the value the script takes in its absence (0, the claim
 * window, publish): the script's short form. */
typedef struct rlk_proto {
    const char *what;               /* in messages: "lock", "fair lock", "read lock", ... */
    int hold;                       /* RLK_KIND_*: its holds are found, counted and reported as */
    const char *names;              /* kinds/names.h's kind: whose keys and channel */
    const char *acquire, *acquire_args;
    const char *release, *release_args;
    const char *cancel, *cancel_args;   /* a queued waiter gives up; NULL: nothing to leave */
    const char *cancel_keys;        /* the optional KEYS its cancel takes after its header's
                                       roles (the held row's "who"); NULL: none */
    const char *force, *force_args;     /* the force release; NULL: forced as the public kind
                                           of its holds */
    const char *wait_channel;       /* the role of the channel its waiters listen on */
    int wait;                       /* RLK_PROTO_WAIT_* */
    int flags;                      /* RLK_PROTO_* */
    const rlk_renew_task *renew;    /* the watchdog's task (the kind's own) */
    const char *renew_keys;         /* the roles of the task's KEYS, the name first */
    size_t value_max;               /* the longest value argument (0: none) */
    const char *opt_keys;           /* the optional KEYS its acquire, release and force scripts
                                       take after their header's roles ("delay": the
                                       lock-delay's); NULL: none */
    const char *held, *held_args;   /* RLK_PROTO_TOKEN: the read-back of a lost acquire, replying
                                       {count, token, PTTL} in one script (fenced/held,
                                       elect/held); NULL: the holder's field (HGET) */
    const struct rlk_sub_rule *grants;  /* RLK_PROTO_WAIT_QUEUE: what a message on a waiter's
                                           wake channel grants (runtime/sub.h); _CHANNEL: what
                                           one on the lock's channel means (NULL: plain) */
    const char *busy;               /* a wait that ran out: why ("another candidate leads");
                                       NULL: "held by another holder" (kinds/acq.c, the one
                                       writer of both APIs' busy messages) */
    const struct rlk_proto *reads;  /* a write side's read row: the server's RLK_UPGRADE may be
                                       a read this thread's doubt left, given back with it */
    const struct rlk_proto *held_grants;    /* the row a waiter takes once it attempts with a
                                               wake ticket (kinds/names.h): it takes held grants
                                               (docs/runtime.md), and the hold it gets by waiting
                                               is released with it; NULL: none */
} rlk_proto;

/* 1 when a re-entry asked for with row k of a hold taken with row held is
 * made with the hold's row and lock-delay: both rows share the acquire
 * script (the reentrant lock's plain, spin and lock-delay rows; a kind's
 * own row), no value lists. So a hold keeps the lock-delay of its first
 * acquisition, or the lack of one, through its re-entries and its release
 * (kinds/lock.c does the same). */
int rlk_proto_keeps(const rlk_proto *held, const rlk_proto *k);
/* 1 when a release asked for with row k of a hold taken with another row held is made with
 * held's release (a non-reentrant lock's, the election's resign): never one with values for
 * one without, or back. */
int rlk_proto_releases(const rlk_proto *held, const rlk_proto *k);

/* ---------------------------------------------------------------- the other calls */

/* One script call: its KEYS are the script header's roles, built by the
 * names kind of the script's folder; its ARGV named as above. */
typedef struct rlk_proto_call {
    const char *script;
    const char *args;
} rlk_proto_call;

/* ---------------------------------------------------------------- reading a reply */

/* What a kind's reply says (rlk_proto_read_*). */
enum {
    RLK_PROTO_ACQUIRED,     /* value: the token (a token kind), or nothing */
    RLK_PROTO_BUSY,         /* value: the wait the reply tells (-3: behind a reservation);
                               first: first in the queue; in_delay: free, in its lock-delay */
    RLK_PROTO_REFUSED,      /* err: the RLK_ERR_* of the reply */
    RLK_PROTO_BAD           /* a reply of another shape (type: its type) */
};

typedef struct rlk_proto_outcome {
    int is;                 /* RLK_PROTO_ACQUIRED .. RLK_PROTO_BAD */
    long long value;
    int first, in_delay;
    int err;
    int type;
} rlk_proto_outcome;

/* A lock kind's acquire: nil (token: {token}) acquired; an integer the
 * wait; the queue shape {wait, first[, in_delay]} (the reentrant lock, the
 * read-write lock: a writer's {wait, 1}, a reader's {grant PTTL, 0}) busy.
 * Returns o->is. */
int rlk_proto_read_acquire(const redisReply *r, int token, rlk_proto_outcome *o);
/* semaphore/acquire: nil acquired; {-1, 1} first in the queue; an integer
 * the wait (-3: behind a reservation). */
int rlk_proto_read_sem(const redisReply *r, rlk_proto_outcome *o);
/* psemaphore/acquire of n permits: their n ids acquired; {-1, ms} first in
 * the queue, ms until the earliest held permit expires (-1: none); an
 * integer (-3: behind a reservation; else ms to the earliest expiry) or nil
 * (queued behind others) busy, value -1 for nil. */
int rlk_proto_read_psem(const redisReply *r, size_t n, rlk_proto_outcome *o);
/* elect/proclaim: 1 acquired (proclaimed), another integer refused
 * (RLK_ERR_NOT_OWNER: no longer leads in the term). */
int rlk_proto_read_proclaim(const redisReply *r, rlk_proto_outcome *o);
/* A script's refusal in its error reply (errstr: "RLK_<CODE> ...", maybe
 * after a prefix of the server's): RLK_ERR_REENTRY (RLK_REENTRY: a
 * non-reentrant lock's holder asked again), RLK_ERR_UPGRADE (RLK_UPGRADE: a
 * reader asked for the write lock), RLK_PROTO_HELD (RLK_HELD: a permit id of
 * psemaphore/acquire is held already: the caller's own lost call ran); 0 for
 * another or NULL. */
#define RLK_PROTO_HELD (-1)
int rlk_proto_refusal(const char *errstr);
/* A release script's reply: runtime/fam_hold.h rlk_fam_release_read; a token
 * kind's read-back: runtime/fam_settle.h rlk_fam_held_read. */

/* ---------------------------------------------------------------- building a call */

#define RLK_PROTO_KEYS 6            /* KEYS of one call, at most (the rwlock scripts: 5) */
#define RLK_PROTO_ARGS 5            /* ARGV of one call, at most (elect/campaign: 5) */
#define RLK_PROTO_ROLES 6           /* distinct key roles of one kind's scripts, at most */

/* The key roles the scripts' headers name ("-- KEYS[i]: <role>") but the name itself ("lock",
 * "semaphore", "latch"): indexes of proto.c's list, and of a handle's keys made once
 * (runtime/fam.h rlk_fam_base.key, kinds/handle.h rlk_handle_keys). A new role: a line in both. */
enum {
    RLK_PROTO_KEY_CHANNEL, RLK_PROTO_KEY_WAITERS, RLK_PROTO_KEY_GRANT, RLK_PROTO_KEY_QUEUE,
    RLK_PROTO_KEY_TIMEOUTS, RLK_PROTO_KEY_TOKEN, RLK_PROTO_KEY_PREFIX, RLK_PROTO_KEY_STATE,
    RLK_PROTO_KEY_LOCK_CHANNEL, RLK_PROTO_KEY_DELAY, RLK_PROTO_KEY_GROUP, RLK_PROTO_KEY_WHO,
    RLK_PROTO_NROLES
};

/* A name's keys, built once per role by the names kind (kept small: a
 * pending request carries one). */
typedef struct rlk_proto_keys {
    const rlk_names_kind *names;
    const char *name;               /* not copied; also the key of role "lock" */
    char *key[RLK_PROTO_ROLES];
    unsigned char role[RLK_PROTO_ROLES];    /* the roles built: RLK_PROTO_KEY_* */
    unsigned char n;
} rlk_proto_keys;

/* Empty keys of name (kept by the caller) by the names kind called names. */
void rlk_proto_keys_init(rlk_proto_keys *ks, const char *names, const char *name);
void rlk_proto_keys_free(rlk_proto_keys *ks);
/* The key of role; NULL: out of memory, or a role the names kind does not know. */
const char *rlk_proto_keys_get(rlk_proto_keys *ks, const char *role);
/* The keys of roles (space-separated) into out (at most max); their number,
 * or -1 (out of memory, an unknown role, too many). */
int rlk_proto_keys_list(rlk_proto_keys *ks, const char *roles, const char **out, int max);
/* The same, a role's key taken from have[role] (RLK_PROTO_NROLES entries, NULL: not made). */
int rlk_proto_keys_list_with(rlk_proto_keys *ks, char *const *have, const char *roles,
                             const char **out, int max);

/* The values a call's ARGV are taken from, by name. */
typedef struct rlk_proto_argvals {
    long long lease_ms;
    const char *owner;
    long long ticket;
    long long wait_ms;              /* the fair queue's thread wait; 0: RLK_FAIR_THREAD_WAIT_MS */
    const char *publish;            /* the client's publish argument */
    const char *value;              /* NULL: "" */
    long long term;                 /* the election's term; fenced/reenter's token */
    long long delay_ms;             /* the lock-delay */
    const char *secret;             /* the election's incarnation (elect/campaign, elect/resign,
                                       elect/proclaim): a blocking handle's secret, an
                                       async client's uuid; NULL: "" */
    long long n;                    /* permits, a count */
    long long ttl_ms;
    const unsigned char *id;        /* a permit id, raw (idlen bytes) */
    const char *mode;               /* rwlock/force_release's: read, write; NULL: "any" */
    const char *held;               /* held grants' acquire and cancel: held:<wait>; NULL: "held" */
    size_t idlen;
} rlk_proto_argvals;

typedef struct rlk_proto_argv {
    const char *v[RLK_PROTO_ARGS];
    size_t len[RLK_PROTO_ARGS];
    char lease[24], ticket[24], wait[24], term[24], delay[24], n[24], ttl[24];
} rlk_proto_argv;

/* The ARGV named (space-separated) into out->v and out->len; their number,
 * or -1 (an unknown name, too many). */
int rlk_proto_args(const char *names, const rlk_proto_argvals *vals, rlk_proto_argv *out);

/* A call of name built: its KEYS (by the names kind of its script's folder)
 * and ARGV. */
typedef struct rlk_proto_built {
    rlk_proto_keys ks;
    const char *keys[RLK_PROTO_KEYS];
    int nkeys, nargs;
    rlk_proto_argv av;
} rlk_proto_built;

/* 0, or -1 (out of memory, an unknown role or argument); rlk_proto_built_free
 * either way. pc's strings: as rlk_proto_build_with's. */
int rlk_proto_build(const rlk_proto_call *pc, const char *name, const rlk_proto_argvals *vals,
                    rlk_proto_built *b);
/* The strings of pc and opt name the call by their addresses: they are static (a kind's row or
 * call), never changed. Their first call reads them into a plan, kept to the process's end.
 * The same, then the roles opt (a row's opt_keys; NULL: none) after the header's; a role's
 * key taken from have[role] (RLK_PROTO_NROLES entries, NULL: not made) when have_of, the
 * names kind have was made by, is the script's folder; the others built as above. */
int rlk_proto_build_with(const rlk_proto_call *pc, const char *opt, const char *have_of,
                         char *const *have, const char *name, const rlk_proto_argvals *vals,
                         rlk_proto_built *b);
void rlk_proto_built_free(rlk_proto_built *b);

/* The values every call of row carries, checked and copied for the drivers (both APIs; the
 * machine, kinds/acq.h, allocates nothing): another row's none (RLK_OK, *out NULL); a value
 * list's (RLK_PROTO_VALUES) values[0..n) copied in one block (free() frees it),
 * NULL-terminated, in *out: RLK_OK; RLK_ERR_ARG with why (for "<call> <group>: " + why) in buf when they are not
 * a list the scripts accept (1..100000 values, each 1..1024 bytes without ':', none twice:
 * nothing copied); RLK_ERR_NOMEM. */
int rlk_proto_values_take(const rlk_proto *row, const char *const *values, size_t n, char ***out,
                            char *buf, size_t len);

#endif /* RLK_PROTO_H */
