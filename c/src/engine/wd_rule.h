/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd_rule.h - the pure rules of renewal (wd_rule.c): no I/O, no thread, no
 * lock. Both renewal drivers follow them: the watchdog thread (wd.c) and the
 * async engine's (ae_wd.c): a kind's task, the tasks' common build
 * and reply, which entries share a call, what a result means, the retry
 * time, the loss deadline.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_WD_RULE_H
#define RLK_WD_RULE_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#define RLK_HOLD_KEYS_MAX 3

/* Room for the KEYS and ARGV of one renewal call of m entries, which both
 * renewal drivers (wd.c, ae_wd.c) give a task's build: two keys
 * and two ARGV per entry at most (the reentrant lock's lock-delay adds its
 * delay key and an empty owner), and the lease. */
#define RLK_RENEW_KEYS_ROOM(m) (2 * (m) + RLK_HOLD_KEYS_MAX)
#define RLK_RENEW_ARGS_ROOM(m) (2 * (m) + 2)

/* One entry of a renewal call, as a task sees it. */
typedef struct rlk_renew_item {
    const char *name;
    const char *owner;
    int nkeys;                      /* the kind's renew KEYS: keys[0] = name */
    const char *const *keys;
    const void *arg;                /* a kept entry's (rlk_wd_keep); NULL for a hold */
    const char *token;              /* the hold's token as its driver last recorded it, in
                                       decimal ("0": none): the election's renewal names its
                                       term (kinds/elect.c) */
} rlk_renew_item;

/* How a kind's due entries share one call. */
enum rlk_renew_group {
    RLK_RENEW_ALONE = 0,            /* one call per entry */
    RLK_RENEW_SLOT = 1,             /* one call for every due entry of one hash slot (one call
                                       for all of them on a server that is not a cluster) */
    RLK_RENEW_NAME = 2              /* one call for every due entry of one name */
};

/* A kind's renewal rule: no thread, no I/O (the engine sends the call), so
 * a non-blocking driver can use the same tasks. */
typedef struct rlk_renew_task {
    const char *script;             /* the renew script */
    int group;                      /* enum rlk_renew_group */
    /* The call for items[0..m): KEYS into keys (*nkeys), ARGV into args
     * (room for RLK_RENEW_KEYS_ROOM(m) and RLK_RENEW_ARGS_ROOM(m)) and, for
     * binary ones, their lengths into lens (0: strlen); returns the number
     * of ARGV. lease: the lease in ms, as text. */
    int (*build)(const rlk_renew_item *items, int m, const char *lease, const char **keys,
                 int *nkeys, const char **args, size_t *lens);
    /* The outcome of each of the m entries from the call's rc and reply (r:
     * NULL when none) into results (1 renewed, 0 gone: not renewed again,
     * -1 unknown: retried until the loss deadline). Returns 1 to have each
     * entry renewed alone with `fallback` (results then come from it). */
    int (*reply)(int rc, const redisReply *r, int m, int *results);
    const struct rlk_renew_task *fallback;  /* NULL: none */
} rlk_renew_task;

/* What a renewal names of a watchdog entry, as both drivers' entries keep it (the thread's
 * struct rlk_hold, wd_t.h; the async rlk_ae_hold): their own copy, freed by _free. */
typedef struct rlk_renew_id {
    int kind;                       /* enum rlk_lock_kind */
    int slot;                       /* name's cluster slot: a cluster's calls never mix slots */
    const rlk_renew_task *task;     /* how the kind renews it (NULL: it cannot) */
    char *name, *owner;
    int nkeys;                      /* the renew script's KEYS; keys[0] is name */
    char *keys[RLK_HOLD_KEYS_MAX];
    char token[24];                 /* the hold's token in decimal, "0" until a driver sets it
                                       (rlk_renew_id_token) while no renewal of it is on the
                                       wire */
} rlk_renew_id;
/* Copies name, owner and keys[1..nkeys) into d (zeroed): 0, or -1 out of memory (nothing
 * kept). _item: d as a task sees it, with arg. */
int rlk_renew_id_set(rlk_renew_id *d, int kind, const rlk_renew_task *task, const char *name,
                     const char *owner, int nkeys, const char *const *keys);
void rlk_renew_id_free(rlk_renew_id *d);
void rlk_renew_id_item(const rlk_renew_id *d, const void *arg, rlk_renew_item *it);
/* The token the next renewal of d names (a fenced hold's latest, an election's term). */
void rlk_renew_id_token(rlk_renew_id *d, long long token);

/* The rule most kinds share, for tasks of group RLK_RENEW_ALONE: KEYS the
 * entry's, ARGV (lease, owner); reply 1 renewed, 0 gone, a refusal by the
 * script (a key of another type) 0, anything else -1. */
int rlk_renew_build_one(const rlk_renew_item *items, int m, const char *lease, const char **keys,
                        int *nkeys, const char **args, size_t *lens);
int rlk_renew_reply_one(int rc, const redisReply *r, int m, int *results);
/* As rlk_renew_build_one, and the hold's token as a third ARGV when its driver recorded one (not
 * "0"): a renewal that names the hold it renews (fenced/renew), so a holder whose hold ran out
 * does not renew the hold its holder id took again elsewhere with a newer token. */
int rlk_renew_build_token(const rlk_renew_item *items, int m, const char *lease,
                          const char **keys, int *nkeys, const char **args, size_t *lens);
/* 1 when d's token is no longer the one a renewal named (named: its text then): the driver
 * recorded a newer one meanwhile (a re-entry of this client minted it), so a reply 0 to that
 * renewal says the named token was superseded, not that the hold is gone: renew again with the
 * new one. */
int rlk_renew_token_moved(const rlk_renew_id *d, const char *named);
/* An array reply of m integers 1/0 into results (another shape: left as is). */
void rlk_renew_spread(int rc, const redisReply *r, int m, int *results);

/* Which entries share a call: one task, and by its group the same hash
 * slot (routed: a cluster; else any) or the same name. */
int rlk_renew_same_call(const rlk_renew_id *a, const rlk_renew_id *b, int routed);

/* The loss deadline. A hold (or kept entry) is lost lost_after after the
 * send time of its last successful acquisition or renewal (last_ok), when
 * no renewal got through since: lost_after is the lease minus the client's
 * lost margin (the margin at most the lease), so the holder hears of it
 * before the lease can have run out on the server. Any one time unit. */
long long rlk_renew_lost_after(long long lease, long long margin);
/* 1 when an entry renewed last at last_ok is lost by now. */
int rlk_renew_expired(long long now, long long last_ok, long long lost_after);

/* What a renewal's result (1, 0, -1: rlk_renew_task.reply) means for its entry. */
enum rlk_renew_verdict {
    RLK_RENEW_RENEWED = 1,          /* last_ok becomes the renewal's send time */
    RLK_RENEW_GONE,                 /* not ours any more: RLK_LOST_GONE */
    RLK_RENEW_EXPIRED,              /* failed, and past its deadline: RLK_LOST_EXPIRED */
    RLK_RENEW_RETRY                 /* failed: tried again at rlk_renew_retry_at */
};
int rlk_renew_verdict(int result, long long now, long long last_ok, long long lost_after);
/* When a failed renewal is tried again: a period later, but no later than
 * the deadline, and at least min_step from now. */
long long rlk_renew_retry_at(long long now, long long period, long long last_ok,
                             long long lost_after, long long min_step);

/* A test's hook (the nemesis, c/tests/nemesis): when set, called after every renewal that
 * renewed an entry (a hold or a kept entry), by the driver that sent it - the watchdog thread
 * (wd.c, under its registry's lock) or the async client's loop (ae_wd.c) - with the
 * entry's kind, name and owner, the renewal's send time (CLOCK_MONOTONIC ns; the async driver
 * keeps ms: its ms times 10^6, never later than the send) and the lease it set (ms). It must
 * not block or call into rlk. Process-wide; NULL (the default): none. Not an API. */
typedef void (*rlk_renewed_fn)(int kind, const char *name, const char *owner, long long sent_ns,
                               long long lease_ms);
extern rlk_renewed_fn rlk_renewed_hook;

#endif /* RLK_WD_RULE_H */
