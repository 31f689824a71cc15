/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fk_matrix.c - keys rlk does not own (docs/cli.md, "Keys rlk does not
 * own"), from the C API: every public call of rlk.h that takes a name and
 * writes, renews, expires or deletes (each kind's try-lock, unlock, force
 * unlock and its _named variant; the spin lock, the lock-delay and the
 * non-reentrant fair lock; the faster MultiLock; the election's campaign,
 * proclaim and resign; the semaphore's, the permit-expirable semaphore's
 * (its keeper too) and the latch's writing calls, their expiry calls and the
 * latch's delete included; a MultiLock and a RedLock of one member), and the
 * async API's lock acquires, MultiLock, force unlocks and election calls,
 * against a string, a JSON string, a list, a set,
 * a sorted set, a stream, an application hash, a hash of counts, a one-field
 * hash of a word, and each other kind's live key. Each call returns the
 * documented code (RLK_ERR_SCRIPT naming RLK_WRONGTYPE; RLK_ERR_BUSY where an
 * exclusive lock's acquire meets another kind's live lock, which it waits for
 * as for a holder; RLK_ERR_NOT_OWNER where the caller holds nothing to give
 * back, before any write), none waits (every wait is 0 or bounded, and a call
 * that takes over RUN_BOUND_MS fails), and DUMP + PTTL of the key are the same
 * afterwards.
 *
 * test_named: a lock's hash without a TTL is refused by the plain force
 * unlocks (blocking and async; the key unchanged) and removed by their
 * _named variants.
 *
 * test_multilock_give_back: a MultiLock (blocking and async) whose last
 * member is foreign fails there and gives back the members it took.
 * test_redlock: a RedLock over 3 servers with the name foreign on 2 fails
 * and gives back its token; foreign on 1 it holds, extends and unlocks
 * around that key. test_keeper: a permit keeper whose semaphore's name
 * turns foreign reports the permit lost (RLK_LOST_EXPIRED), once.
 * test_elect_keys: a leader whose lock key or record turns foreign
 * proclaims and resigns in vain; a campaign meeting an application's key at
 * the record {name}:elect is refused. Each leaves every key as it was.
 *
 * Control (--control BUNDLE_DIR, ctest foreign_matrix_control, WILL_FAIL):
 * the client loads a copy of BUNDLE_DIR with shape checks taken out (plants[]):
 * reentrant/force_release's (lib/lock_shape's call replaced by nil: the force
 * unlocks on its script then delete the foreign keys), elect/campaign's
 * (lib/elect_shape: the campaigns replace the foreign records) and
 * psemaphore/update_lease's (its reclaim and type checks: the keeper renews
 * on, into the foreign name's {name}:timeout), which the matrix, test_elect_keys
 * and test_keeper must report.
 *
 * Usage: fk_matrix [--control BUNDLE_DIR]
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* ppoll: rlk_async_poll.h waits in nanoseconds */
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "fixture.h"
#include "tk_util.h"
#include "rlk.h"
#include "rlk_async.h"
#include "rlk_async_poll.h"
#include "client/sha1.h"

#define RUN_BOUND_MS 5000
#define OWNER "0b5a1e57-9d1c-4c1e-a7a3-1b2c3d4e5f60:1"

static rlk_fx_server server;
static char url[128];
static char bundle[512];    /* the control's planted bundle; "" otherwise */
static int control;

/* ---------------------------------------------------------------- keys */

enum { OWN_NONE = 0, OWN_LOCK = 1, OWN_RW = 2, OWN_GROUP = 4, OWN_COUNT = 8 };

typedef struct fixture {
    const char *what;
    const char *setup[10];      /* the command that makes it ("%s": the key) */
    long long pexpire;          /* > 0: then PEXPIRE */
    int kind;                   /* OWN_*: the live key of that kind; 0: not rlk's */
} fixture;

static const fixture fixtures[] = {
    {"a string", {"SET", "%s", "hello"}, 0, 0},
    {"a JSON string", {"SET", "%s", "{\"theme\":\"dark\",\"retries\":3}"}, 0, 0},
    {"a list", {"RPUSH", "%s", "a", "b"}, 0, 0},
    {"a set", {"SADD", "%s", "a", "b"}, 0, 0},
    {"a sorted set", {"ZADD", "%s", "1", "a", "2", "b"}, 0, 0},
    {"a stream", {"XADD", "%s", "1-1", "f", "v"}, 0, 0},
    {"an application hash", {"HSET", "%s", "name", "bob", "email", "bob@example.com"}, 0, 0},
    {"a hash of counts", {"HSET", "%s", "apples", "3", "pears", "5"}, 0, 0},
    {"a one-field hash of a word", {"HSET", "%s", "apples", "3"}, 0, 0},
    {"a live reentrant lock", {"HSET", "%s", OWNER, "1"}, 60000, OWN_LOCK},
    {"a live read-write lock", {"HSET", "%s", "mode", "read", OWNER, "1"}, 60000, OWN_RW},
    {"a live faster MultiLock group",
     {"HSET", "%s", "v1", OWNER, "v1:" OWNER ":expire_time", "99999999999999",
      "v1:" OWNER ":lock_count", "1"}, 60000, OWN_GROUP},
    {"a live semaphore", {"SET", "%s", "3"}, 0, OWN_COUNT},
};
#define NFIXTURES (sizeof fixtures / sizeof fixtures[0])

static void make(const fixture *f, const char *key)
{
    tk_make_key(&server, f->setup, sizeof f->setup / sizeof f->setup[0], key, f->pexpire);
}

/* DUMP (as bytes) and PTTL of key; *pttl -3 when unreadable. The caller frees. */
static char *dump(const char *key, size_t *len, long long *pttl)
{
    return tk_dump(&server, key, len, pttl);
}

/* ---------------------------------------------------------------- the async calls */

typedef struct aone {
    int done, err;
    char errstr[512];
} aone;

static void aone_cb(rlk_async *ac, const rlk_async_result *r, void *privdata)
{
    aone *o = privdata;

    (void)ac;
    o->done = 1;
    o->err = r->err;
    snprintf(o->errstr, sizeof o->errstr, "%s", r->errstr ? r->errstr : "");
}

static rlk_async *actx;
static rlk_async_poll apoll;

/* Turns the loop until o is done, at most RUN_BOUND_MS: its code, or -1 (still going). */
static int aone_wait(aone *o, rlk_async_req *req, char *msg, size_t len)
{
    long long deadline = rlk_fx_now_ms() + RUN_BOUND_MS;

    if (!req)
        return RLK_ERR_NOMEM;
    while (!o->done && rlk_fx_now_ms() < deadline)
        rlk_async_poll_turn(&apoll, 50LL * 1000000LL);
    if (!o->done) {
        rlk_async_cancel(req);
        while (!o->done)
            rlk_async_poll_turn(&apoll, 50LL * 1000000LL);
        snprintf(msg, len, "still going after %d ms", RUN_BOUND_MS);
        return -1;
    }
    snprintf(msg, len, "%s", o->errstr);
    return o->err;
}

/* ---------------------------------------------------------------- the calls */

/* What a call may return: its code, and its message (the script's error) in msg. */
typedef int (*call_fn)(rlk_client *c, const char *key, char *msg, size_t len);

#define MSG(c) snprintf(msg, len, "%s", rlk_errstr(c))

/* The handle kinds: a call makes its handle, runs, keeps the message, frees it. */
#define HANDLE_CALL(fname, T, newfn, freefn, expr)                                               \
    static int fname(rlk_client *c, const char *key, char *msg, size_t len)                     \
    {                                                                                            \
        T *h = newfn(c, key);                                                                    \
        int rc;                                                                                  \
                                                                                                 \
        if (!h)                                                                                  \
            return RLK_ERR_NOMEM;                                                                \
        rc = (expr);                                                                             \
        if (rc != RLK_OK)                                                                        \
            MSG(c);                                                                              \
        freefn(h);                                                                               \
        return rc;                                                                               \
    }

static int released_, set_;
static long long n_;
static char permit_[RLK_PERMIT_ID_SIZE];

HANDLE_CALL(lock_try, rlk_lock, rlk_lock_new, rlk_lock_free, rlk_lock_try_lock(h, 0, 10000))
HANDLE_CALL(lock_spin, rlk_lock, rlk_lock_new, rlk_lock_free,
            rlk_lock_set_spin(h, 1, 8) == RLK_OK ? rlk_lock_try_lock(h, 0, 10000) : -2)
HANDLE_CALL(lock_delay, rlk_lock, rlk_lock_new, rlk_lock_free,
            rlk_lock_set_delay(h, 1000) == RLK_OK ? rlk_lock_try_lock(h, 0, 10000) : -2)
HANDLE_CALL(lock_unlock, rlk_lock, rlk_lock_new, rlk_lock_free, rlk_lock_unlock(h))
HANDLE_CALL(lock_force, rlk_lock, rlk_lock_new, rlk_lock_free, rlk_lock_force_unlock(h, &released_))
HANDLE_CALL(lock_force_named, rlk_lock, rlk_lock_new, rlk_lock_free,
            rlk_lock_force_unlock_named(h, &released_))
HANDLE_CALL(rw_read, rlk_rwlock, rlk_rwlock_new, rlk_rwlock_free,
            rlk_rwlock_try_lock(h, RLK_RW_READ, 0, 10000))
HANDLE_CALL(rw_write, rlk_rwlock, rlk_rwlock_new, rlk_rwlock_free,
            rlk_rwlock_try_lock(h, RLK_RW_WRITE, 0, 10000))
HANDLE_CALL(rw_unlock, rlk_rwlock, rlk_rwlock_new, rlk_rwlock_free, rlk_rwlock_unlock(h, RLK_RW_READ))
HANDLE_CALL(rw_force, rlk_rwlock, rlk_rwlock_new, rlk_rwlock_free,
            rlk_rwlock_force_unlock(h, RLK_RW_ANY, &released_))
HANDLE_CALL(rw_force_named, rlk_rwlock, rlk_rwlock_new, rlk_rwlock_free,
            rlk_rwlock_force_unlock_named(h, RLK_RW_ANY, &released_))
HANDLE_CALL(fair_try, rlk_fairlock, rlk_fairlock_new, rlk_fairlock_free,
            rlk_fairlock_try_lock(h, 0, 10000))
HANDLE_CALL(fair_nr_try, rlk_fairlock, rlk_fairlock_new, rlk_fairlock_free,
            rlk_fairlock_set_non_reentrant(h, 1) == RLK_OK ? rlk_fairlock_try_lock(h, 0, 10000) : -2)
HANDLE_CALL(fair_unlock, rlk_fairlock, rlk_fairlock_new, rlk_fairlock_free, rlk_fairlock_unlock(h))
HANDLE_CALL(fair_force, rlk_fairlock, rlk_fairlock_new, rlk_fairlock_free,
            rlk_fairlock_force_unlock(h, &released_))
HANDLE_CALL(fair_force_named, rlk_fairlock, rlk_fairlock_new, rlk_fairlock_free,
            rlk_fairlock_force_unlock_named(h, &released_))
HANDLE_CALL(fenced_try, rlk_fenced, rlk_fenced_new, rlk_fenced_free,
            rlk_fenced_try_lock(h, 0, 10000, NULL))
HANDLE_CALL(fenced_unlock, rlk_fenced, rlk_fenced_new, rlk_fenced_free, rlk_fenced_unlock(h))
HANDLE_CALL(fenced_force, rlk_fenced, rlk_fenced_new, rlk_fenced_free,
            rlk_fenced_force_unlock(h, &released_))
HANDLE_CALL(fenced_force_named, rlk_fenced, rlk_fenced_new, rlk_fenced_free,
            rlk_fenced_force_unlock_named(h, &released_))
HANDLE_CALL(nr_try, rlk_nrlock, rlk_nrlock_new, rlk_nrlock_free, rlk_nrlock_try_lock(h, 0, 10000))
HANDLE_CALL(nr_unlock, rlk_nrlock, rlk_nrlock_new, rlk_nrlock_free, rlk_nrlock_unlock(h))
HANDLE_CALL(nr_force, rlk_nrlock, rlk_nrlock_new, rlk_nrlock_free,
            rlk_nrlock_force_unlock(h, &released_))
HANDLE_CALL(nr_force_named, rlk_nrlock, rlk_nrlock_new, rlk_nrlock_free,
            rlk_nrlock_force_unlock_named(h, &released_))
HANDLE_CALL(elect_campaign, rlk_elect, rlk_elect_new, rlk_elect_free,
            rlk_elect_campaign(h, "v", 0, 10000, NULL))
HANDLE_CALL(elect_resign, rlk_elect, rlk_elect_new, rlk_elect_free, rlk_elect_resign(h))
HANDLE_CALL(sem_try, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_try_acquire(h, 1, 0))
HANDLE_CALL(sem_release, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_release(h, 1, &n_))
HANDLE_CALL(sem_set, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_try_set_permits(h, 3, &set_))
HANDLE_CALL(sem_add, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_add_permits(h, 1, &n_))
HANDLE_CALL(sem_drain, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_drain(h, &n_))
HANDLE_CALL(sem_release_if, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_release_if_exists(h, 1, &released_))
HANDLE_CALL(sem_set_ttl, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_try_set_permits_ttl(h, 3, 10000, &set_))
HANDLE_CALL(sem_expire, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_expire(h, 10000, &set_))
HANDLE_CALL(sem_clear_expire, rlk_semaphore, rlk_semaphore_new, rlk_semaphore_free,
            rlk_semaphore_clear_expire(h, &set_))
HANDLE_CALL(psem_try, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_try_acquire(h, 0, 10000, permit_))
HANDLE_CALL(psem_set, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_try_set_permits(h, 3, &set_))
HANDLE_CALL(psem_add, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_add_permits(h, 1, &n_))
HANDLE_CALL(psem_set_permits, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_set_permits(h, 3, &n_))
HANDLE_CALL(psem_release, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_try_release(h, "0123456789abcdef", &released_))
HANDLE_CALL(psem_update, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_update_lease(h, "0123456789abcdef", 10000))
HANDLE_CALL(psem_expire, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_expire(h, 10000, &set_))
HANDLE_CALL(psem_clear_expire, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            rlk_psemaphore_clear_expire(h, &set_))
HANDLE_CALL(latch_set, rlk_latch, rlk_latch_new, rlk_latch_free, rlk_latch_try_set_count(h, 2, &set_))
HANDLE_CALL(latch_down, rlk_latch, rlk_latch_new, rlk_latch_free, rlk_latch_count_down(h, &n_))
HANDLE_CALL(latch_expire, rlk_latch, rlk_latch_new, rlk_latch_free, rlk_latch_expire(h, 10000, &set_))
HANDLE_CALL(latch_clear_expire, rlk_latch, rlk_latch_new, rlk_latch_free,
            rlk_latch_clear_expire(h, &set_))

HANDLE_CALL(latch_delete, rlk_latch, rlk_latch_new, rlk_latch_free, rlk_latch_delete(h, &set_))
HANDLE_CALL(elect_proclaim, rlk_elect, rlk_elect_new, rlk_elect_free, rlk_elect_proclaim(h, "v2"))

/* The permit keeper renews each permit once before it returns: NULL, the error on c. */
static const char *const keep_ids_[] = {"0123456789abcdef"};

static int keep_rc(rlk_client *c, rlk_psemaphore_keeper *k)
{
    if (!k)
        return rlk_err(c);
    rlk_psemaphore_keeper_stop(k);
    return RLK_OK;
}

HANDLE_CALL(psem_keep, rlk_psemaphore, rlk_psemaphore_new, rlk_psemaphore_free,
            keep_rc(c, rlk_psemaphore_keep(h, 1, keep_ids_, 10000, NULL, NULL)))

/* A MultiLock of the one member key; a RedLock of the one server. */
static int multilock_try(rlk_client *c, const char *key, char *msg, size_t len)
{
    rlk_multilock *m = rlk_multilock_new();
    int rc;

    if (!m)
        return RLK_ERR_NOMEM;
    if ((rc = rlk_multilock_add(m, c, key)) == RLK_OK)
        rc = rlk_multilock_try_lock(m, 0, 10000);
    if (rc != RLK_OK)
        snprintf(msg, len, "%s", rlk_multilock_errstr(m));
    else
        rlk_multilock_unlock(m);
    rlk_multilock_free(m);
    return rc;
}

static int redlock_try(rlk_client *c, const char *key, char *msg, size_t len)
{
    rlk_redlock *rl = rlk_redlock_new(&c, 1, key, NULL);
    int rc;

    if (!rl)
        return RLK_ERR_NOMEM;
    rc = rlk_redlock_try_lock(rl, 0, 10000, NULL);
    if (rc != RLK_OK)
        snprintf(msg, len, "%s", rlk_redlock_errstr(rl));
    else
        rlk_redlock_unlock(rl);
    rlk_redlock_free(rl);
    return rc;
}

static const char *const fm_values[] = {"v1", "v2"};

static rlk_fastmulti *fm_new(rlk_client *c, const char *key)
{
    return rlk_fastmulti_new(c, key, fm_values, 2);
}

HANDLE_CALL(fm_try, rlk_fastmulti, fm_new, rlk_fastmulti_free, rlk_fastmulti_try_lock(h, 0, 10000))
HANDLE_CALL(fm_unlock, rlk_fastmulti, fm_new, rlk_fastmulti_free, rlk_fastmulti_unlock(h))
HANDLE_CALL(fm_force, rlk_fastmulti, fm_new, rlk_fastmulti_free,
            rlk_fastmulti_force_unlock(h, &released_))

/* The async requests: one, on the test's loop. */
#define ASYNC_CALL(fname, req)                                                                   \
    static int fname(rlk_client *c, const char *key, char *msg, size_t len)                     \
    {                                                                                            \
        aone o = {0, 0, ""};                                                                     \
                                                                                                 \
        (void)c;                                                                                 \
        return aone_wait(&o, (req), msg, len);                                                   \
    }

ASYNC_CALL(a_lock, rlk_async_lock(actx, RLK_KIND_LOCK, key, 1, 0, 10000, aone_cb, &o))
ASYNC_CALL(a_fair, rlk_async_lock(actx, RLK_KIND_FAIR, key, 1, 0, 10000, aone_cb, &o))
ASYNC_CALL(a_fenced, rlk_async_lock(actx, RLK_KIND_FENCED, key, 1, 0, 10000, aone_cb, &o))
ASYNC_CALL(a_read, rlk_async_lock(actx, RLK_KIND_READ, key, 1, 0, 10000, aone_cb, &o))
ASYNC_CALL(a_write, rlk_async_lock(actx, RLK_KIND_WRITE, key, 1, 0, 10000, aone_cb, &o))
ASYNC_CALL(a_nr, rlk_async_lock_nr(actx, RLK_KIND_LOCK, key, 1, 0, 10000, aone_cb, &o))
ASYNC_CALL(a_spin, rlk_async_lock_spin(actx, key, 1, 0, 10000, 1, 8, aone_cb, &o))
ASYNC_CALL(a_delay, rlk_async_lock_delay(actx, key, 1, 0, 10000, 1000, aone_cb, &o))
ASYNC_CALL(a_fm, rlk_async_fastmulti_lock(actx, key, fm_values, 2, 1, 0, 10000, aone_cb, &o))
ASYNC_CALL(a_force_lock, rlk_async_force_unlock(actx, RLK_KIND_LOCK, key, aone_cb, &o))
ASYNC_CALL(a_force_fair, rlk_async_force_unlock(actx, RLK_KIND_FAIR, key, aone_cb, &o))
ASYNC_CALL(a_force_rw, rlk_async_force_unlock(actx, RLK_KIND_WRITE, key, aone_cb, &o))
ASYNC_CALL(a_force_named, rlk_async_force_unlock_named(actx, RLK_KIND_LOCK, key, aone_cb, &o))
ASYNC_CALL(a_force_named_rw, rlk_async_force_unlock_named(actx, RLK_KIND_READ, key, aone_cb, &o))
ASYNC_CALL(a_campaign, rlk_async_elect_campaign(actx, key, 1, "v", 0, 10000, aone_cb, &o))
ASYNC_CALL(a_proclaim, rlk_async_elect_proclaim(actx, key, 1, "v2", aone_cb, &o))
ASYNC_CALL(a_resign, rlk_async_elect_resign(actx, key, 1, aone_cb, &o))
ASYNC_CALL(a_multilock, rlk_async_multilock_lock(actx, 1, (const char *const[]){key}, 1, 0, 10000,
                                                 aone_cb, &o))

/* Expected: RLK_WRONGTYPE on every foreign key; an exclusive lock's acquire waits for
 * (RLK_ERR_BUSY at once, with wait 0) another kind's live lock with a TTL; an unlock of what
 * the caller does not hold: RLK_ERR_NOT_OWNER (the header's "not held"), or the script's
 * RLK_WRONGTYPE where its check of the key comes first; a try-set of a count that exists
 * (any string) sets nothing: RLK_OK with *set 0 (the header's "0: it exists"), or
 * RLK_WRONGTYPE; a token lock (RedLock) takes any string for another holder's token:
 * RLK_ERR_BUSY on a string, RLK_WRONGTYPE on the rest. own: the live key taken as its own kind
 * (skipped). */
enum { X_WRONGTYPE, X_NOT_OWNER, X_NOT_SET, X_TOKEN };
enum { BUSY_ON_LIVE = 1 };

typedef struct call {
    const char *what;
    call_fn fn;
    int own;                    /* OWN_*: skipped (its own kind) */
    int expect;                 /* X_* on a foreign key */
    int flags;                  /* BUSY_ON_LIVE: RLK_ERR_BUSY on another lock kind's live key */
    int plant;                  /* the control's script: reentrant/force_release */
} call;

#define EXCL OWN_LOCK, X_WRONGTYPE, BUSY_ON_LIVE
static const call calls[] = {
    {"rlk_lock_try_lock", lock_try, EXCL, 0},
    {"rlk_lock_try_lock (spin)", lock_spin, EXCL, 0},
    {"rlk_lock_try_lock (lock-delay)", lock_delay, EXCL, 0},
    {"rlk_lock_unlock", lock_unlock, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_lock_force_unlock", lock_force, OWN_LOCK, X_WRONGTYPE, 0, 1},
    {"rlk_lock_force_unlock_named", lock_force_named, OWN_LOCK, X_WRONGTYPE, 0, 1},
    {"rlk_rwlock_try_lock read", rw_read, OWN_RW, X_WRONGTYPE, 0, 0},
    {"rlk_rwlock_try_lock write", rw_write, OWN_RW, X_WRONGTYPE, 0, 0},
    {"rlk_rwlock_unlock", rw_unlock, OWN_RW, X_NOT_OWNER, 0, 0},
    {"rlk_rwlock_force_unlock", rw_force, OWN_RW, X_WRONGTYPE, 0, 0},
    {"rlk_rwlock_force_unlock_named", rw_force_named, OWN_RW, X_WRONGTYPE, 0, 0},
    {"rlk_fairlock_try_lock", fair_try, EXCL, 0},
    {"rlk_fairlock_try_lock (non-reentrant)", fair_nr_try, EXCL, 0},
    {"rlk_fairlock_unlock", fair_unlock, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_fairlock_force_unlock", fair_force, OWN_LOCK, X_WRONGTYPE, 0, 0},
    {"rlk_fairlock_force_unlock_named", fair_force_named, OWN_LOCK, X_WRONGTYPE, 0, 0},
    {"rlk_fenced_try_lock", fenced_try, EXCL, 0},
    {"rlk_fenced_unlock", fenced_unlock, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_fenced_force_unlock", fenced_force, OWN_LOCK, X_WRONGTYPE, 0, 1},
    {"rlk_fenced_force_unlock_named", fenced_force_named, OWN_LOCK, X_WRONGTYPE, 0, 1},
    {"rlk_nrlock_try_lock", nr_try, EXCL, 0},
    {"rlk_nrlock_unlock", nr_unlock, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_nrlock_force_unlock", nr_force, OWN_LOCK, X_WRONGTYPE, 0, 1},
    {"rlk_nrlock_force_unlock_named", nr_force_named, OWN_LOCK, X_WRONGTYPE, 0, 1},
    {"rlk_fastmulti_try_lock", fm_try, OWN_GROUP, X_WRONGTYPE, 0, 0},
    {"rlk_fastmulti_unlock", fm_unlock, OWN_GROUP, X_NOT_OWNER, 0, 0},
    {"rlk_fastmulti_force_unlock", fm_force, OWN_GROUP, X_WRONGTYPE, 0, 0},
    {"rlk_elect_campaign", elect_campaign, EXCL, 0},
    {"rlk_elect_resign", elect_resign, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_semaphore_try_acquire", sem_try, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_semaphore_release", sem_release, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_semaphore_try_set_permits", sem_set, OWN_COUNT, X_NOT_SET, 0, 0},
    {"rlk_semaphore_add_permits", sem_add, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_semaphore_drain", sem_drain, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_semaphore_release_if_exists", sem_release_if, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_semaphore_try_set_permits_ttl", sem_set_ttl, OWN_COUNT, X_NOT_SET, 0, 0},
    {"rlk_semaphore_expire", sem_expire, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_semaphore_clear_expire", sem_clear_expire, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_try_acquire", psem_try, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_try_set_permits", psem_set, OWN_COUNT, X_NOT_SET, 0, 0},
    {"rlk_psemaphore_add_permits", psem_add, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_set_permits", psem_set_permits, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_try_release", psem_release, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_update_lease", psem_update, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_expire", psem_expire, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_clear_expire", psem_clear_expire, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_latch_try_set_count", latch_set, OWN_COUNT, X_NOT_SET, 0, 0},
    {"rlk_latch_count_down", latch_down, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_latch_expire", latch_expire, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_latch_clear_expire", latch_clear_expire, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_latch_delete", latch_delete, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_psemaphore_keep", psem_keep, OWN_COUNT, X_WRONGTYPE, 0, 0},
    {"rlk_elect_proclaim", elect_proclaim, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_multilock_try_lock", multilock_try, EXCL, 0},
    {"rlk_redlock_try_lock", redlock_try, 0, X_TOKEN, 0, 0},
    {"rlk_async_elect_campaign", a_campaign, EXCL, 0},
    {"rlk_async_elect_proclaim", a_proclaim, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_async_elect_resign", a_resign, OWN_LOCK, X_NOT_OWNER, 0, 0},
    {"rlk_async_multilock_lock", a_multilock, EXCL, 0},
    {"rlk_async_lock RLK_KIND_LOCK", a_lock, EXCL, 0},
    {"rlk_async_lock RLK_KIND_FAIR", a_fair, EXCL, 0},
    {"rlk_async_lock RLK_KIND_FENCED", a_fenced, EXCL, 0},
    {"rlk_async_lock RLK_KIND_READ", a_read, OWN_RW, X_WRONGTYPE, 0, 0},
    {"rlk_async_lock RLK_KIND_WRITE", a_write, OWN_RW, X_WRONGTYPE, 0, 0},
    {"rlk_async_lock_nr RLK_KIND_LOCK", a_nr, EXCL, 0},
    {"rlk_async_lock_spin", a_spin, EXCL, 0},
    {"rlk_async_lock_delay", a_delay, EXCL, 0},
    {"rlk_async_fastmulti_lock", a_fm, OWN_GROUP, X_WRONGTYPE, 0, 0},
    {"rlk_async_force_unlock RLK_KIND_LOCK", a_force_lock, OWN_LOCK, X_WRONGTYPE, 0, 0},
    {"rlk_async_force_unlock RLK_KIND_FAIR", a_force_fair, OWN_LOCK, X_WRONGTYPE, 0, 0},
    {"rlk_async_force_unlock RLK_KIND_WRITE", a_force_rw, OWN_RW, X_WRONGTYPE, 0, 0},
    {"rlk_async_force_unlock_named RLK_KIND_LOCK", a_force_named, OWN_LOCK, X_WRONGTYPE, 0, 0},
    {"rlk_async_force_unlock_named RLK_KIND_READ", a_force_named_rw, OWN_RW, X_WRONGTYPE, 0, 0},
};
#define NCALLS (sizeof calls / sizeof calls[0])

/* ---------------------------------------------------------------- the control's bundle */

/* The control's plants: a script of the bundle and its shape check, replaced by a no-op of the
 * same length (the rest of the text stays in place). */
static const struct plant {
    const char *script, *check, *none;
} plants[] = {
    {"reentrant/force_release", "local found, unsure = lock_shape(lock)",
     "local found, unsure = nil, nil"},
    {"elect/campaign", "local found = elect_shape(state)", "local found = nil"},
    {"psemaphore/update_lease", "local now, bad = psem_reclaim(semaphore, timeouts, channel, publish)",
     "local now, bad = tonumber(redis.call('time')[1]) * 1000, nil"},
};

/* Plants p in the bundle: its file rewritten, its manifest line's SHA-1 made to match. */
static int plant_one(const struct plant *p)
{
    char cmd[2048], path[1024], hex[41];
    char *text = NULL, *at;
    size_t len = 0;
    FILE *f;

    snprintf(path, sizeof path, "%s/%s.lua", bundle, p->script);
    if (!(f = fopen(path, "rb")))
        return -1;
    text = malloc(1 << 20);
    if (text)
        len = fread(text, 1, (1 << 20) - 1, f);
    fclose(f);
    if (!text || !(text[len] = '\0', at = strstr(text, p->check))) {
        free(text);
        return -1;
    }
    memset(at, ' ', strlen(p->check));
    memcpy(at, p->none, strlen(p->none));
    if (!(f = fopen(path, "wb")) || fwrite(text, 1, len, f) != len) {
        if (f)
            fclose(f);
        free(text);
        return -1;
    }
    fclose(f);
    rlk_sha1_hex(text, len, hex);
    free(text);
    snprintf(cmd, sizeof cmd, "sed -i 's|^\\(%s\t[^\t]*\t[^\t]*\t\\).*|\\1%s|' '%s/manifest.tsv'",
             p->script, hex, bundle);
    return system(cmd) == 0 ? 0 : -1;
}

/* A copy of dir in a temp dir with every plant's shape check taken out: 0, or -1. */
static int plant_bundle(const char *dir)
{
    char cmd[2048];

    snprintf(bundle, sizeof bundle, "%s/planted", server.dir);
    snprintf(cmd, sizeof cmd, "cp -r '%s' '%s'", dir, bundle);
    if (system(cmd) != 0)
        return -1;
    for (size_t i = 0; i < sizeof plants / sizeof plants[0]; i++)
        if (plant_one(&plants[i]) != 0)
            return -1;
    return 0;
}

/* ---------------------------------------------------------------- the matrix */

static void test_matrix(void)
{
    rlk_options o;
    rlk_client *c;
    int n = 0, changed = 0;

    rlk_options_init(&o);
    o.url = url;
    o.bundle_dir = bundle[0] ? bundle : NULL;
    REQUIRE((c = rlk_connect(&o)) != NULL);
    REQUIRE((actx = rlk_async_new(&o)) != NULL);
    REQUIRE_INT_EQ(rlk_async_poll_attach(actx, &apoll), RLK_OK);
    for (size_t k = 0; k < NCALLS; k++) {
        const call *cl = &calls[k];

        for (size_t f = 0; f < NFIXTURES; f++) {
            const fixture *fx = &fixtures[f];
            char key[64], msg[1024] = "", *before, *after;
            size_t blen, alen;
            long long bttl, attl, t0;
            int rc, want_busy, same;

            if (fx->kind & cl->own)
                continue;
            if (control && !cl->plant)
                continue;
            snprintf(key, sizeof key, "fkm:%zu:%zu", k, f);
            make(fx, key);
            before = dump(key, &blen, &bttl);
            set_ = -1;
            t0 = rlk_fx_now_ms();
            rc = cl->fn(c, key, msg, sizeof msg);
            want_busy = (cl->flags & BUSY_ON_LIVE) && (fx->kind & (OWN_RW | OWN_GROUP));
            CHECKF(rlk_fx_now_ms() - t0 < RUN_BOUND_MS, "%s on %s: took %lld ms", cl->what,
                   fx->what, rlk_fx_now_ms() - t0);
            if (want_busy)
                CHECKF(rc == RLK_ERR_BUSY, "%s on %s: %d (%s), expected RLK_ERR_BUSY", cl->what,
                       fx->what, rc, msg);
            else if (cl->expect == X_NOT_OWNER)
                CHECKF(rc == RLK_ERR_NOT_OWNER || (rc == RLK_ERR_SCRIPT &&
                                                   strstr(msg, "RLK_WRONGTYPE")),
                       "%s on %s: %d (%s), expected RLK_ERR_NOT_OWNER or RLK_WRONGTYPE",
                       cl->what, fx->what, rc, msg);
            else if (cl->expect == X_NOT_SET)
                CHECKF((rc == RLK_OK && set_ == 0) || (rc == RLK_ERR_SCRIPT &&
                                                       strstr(msg, "RLK_WRONGTYPE")),
                       "%s on %s: %d, set %d (%s), expected nothing set or RLK_WRONGTYPE",
                       cl->what, fx->what, rc, set_, msg);
            else if (cl->expect == X_TOKEN && strcmp(fx->setup[0], "SET") == 0)
                CHECKF(rc == RLK_ERR_BUSY, "%s on %s: %d (%s), expected RLK_ERR_BUSY", cl->what,
                       fx->what, rc, msg);
            else
                CHECKF(rc == RLK_ERR_SCRIPT && strstr(msg, "RLK_WRONGTYPE"),
                       "%s on %s: %d (%s), expected RLK_ERR_SCRIPT with RLK_WRONGTYPE", cl->what,
                       fx->what, rc, msg);
            after = dump(key, &alen, &attl);
            same = before && after && blen == alen && memcmp(before, after, blen) == 0;
            CHECKF(same, "%s on %s: the key's DUMP changed (%s)", cl->what, fx->what,
                   after ? "rewritten" : "gone");
            /* A TTL only falls while the call lasts; none stays none. */
            CHECKF(bttl < 0 ? attl == bttl : (attl > 0 && attl <= bttl),
                   "%s on %s: PTTL %lld -> %lld", cl->what, fx->what, bttl, attl);
            changed += !same;
            free(before);
            free(after);
            n++;
        }
    }
    printf("  %d calls, %zu functions, %zu keys; %d keys changed\n", n, NCALLS, NFIXTURES,
           changed);
    rlk_async_free(actx);
    rlk_async_poll_free(&apoll);
    rlk_free(c);
}

/* A lock's hash without a TTL (one holder field -> count): the plain force unlocks refuse it
 * (RLK_WRONGTYPE, the key unchanged), the _named ones remove it, blocking and async. */
static void test_named(void)
{
    static const fixture persisted = {"a lock's hash without a TTL", {"HSET", "%s", "user:1", "3"},
                                      0, 0};
    static const call plain[] = {
        {"rlk_lock_force_unlock", lock_force, 0, X_WRONGTYPE, 0, 0},
        {"rlk_nrlock_force_unlock", nr_force, 0, X_WRONGTYPE, 0, 0},
        {"rlk_fairlock_force_unlock", fair_force, 0, X_WRONGTYPE, 0, 0},
        {"rlk_fenced_force_unlock", fenced_force, 0, X_WRONGTYPE, 0, 0},
        {"rlk_async_force_unlock RLK_KIND_LOCK", a_force_lock, 0, X_WRONGTYPE, 0, 0},
    };
    static const call named[] = {
        {"rlk_lock_force_unlock_named", lock_force_named, 0, 0, 0, 0},
        {"rlk_nrlock_force_unlock_named", nr_force_named, 0, 0, 0, 0},
        {"rlk_fairlock_force_unlock_named", fair_force_named, 0, 0, 0, 0},
        {"rlk_fenced_force_unlock_named", fenced_force_named, 0, 0, 0, 0},
        {"rlk_async_force_unlock_named RLK_KIND_LOCK", a_force_named, 0, 0, 0, 0},
    };
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url;
    REQUIRE((c = rlk_connect(&o)) != NULL);
    REQUIRE((actx = rlk_async_new(&o)) != NULL);
    REQUIRE_INT_EQ(rlk_async_poll_attach(actx, &apoll), RLK_OK);
    for (size_t k = 0; k < sizeof plain / sizeof plain[0]; k++) {
        char key[64], msg[1024] = "", *before, *after;
        size_t blen, alen;
        long long bttl, attl;
        int rc;

        snprintf(key, sizeof key, "fkm:named:%zu", k);
        make(&persisted, key);
        before = dump(key, &blen, &bttl);
        rc = plain[k].fn(c, key, msg, sizeof msg);
        CHECKF(rc == RLK_ERR_SCRIPT && strstr(msg, "RLK_WRONGTYPE") && strstr(msg, "without a TTL"),
               "%s: %d (%s), expected RLK_WRONGTYPE ... without a TTL", plain[k].what, rc, msg);
        after = dump(key, &alen, &attl);
        CHECKF(before && after && blen == alen && memcmp(before, after, blen) == 0 &&
               bttl == -1 && attl == -1, "%s: the key changed", plain[k].what);
        free(before);
        free(after);
        released_ = 0;
        rc = named[k].fn(c, key, msg, sizeof msg);
        CHECKF(rc == RLK_OK, "%s: %d (%s)", named[k].what, rc, msg);
        CHECKF(tk_int(&server, "EXISTS %s", key) == 0, "%s: the key is still there",
               named[k].what);
    }
    rlk_async_free(actx);
    rlk_async_poll_free(&apoll);
    rlk_free(c);
}

/* ---------------------------------------------------------------- several keys */

/* A key's DUMP and PTTL, to compare after a call. */
typedef struct snap {
    char *dump;
    size_t len;
    long long pttl;
} snap;

static void snap_take(const rlk_fx_server *srv, const char *key, snap *s)
{
    s->dump = tk_dump(srv, key, &s->len, &s->pttl);
}

/* 1 when key is as s saw it (a TTL only falls; none stays none); frees s. */
static int snap_same(const rlk_fx_server *srv, const char *key, snap *s)
{
    snap a;
    int same;

    snap_take(srv, key, &a);
    same = s->dump && a.dump && s->len == a.len && memcmp(s->dump, a.dump, s->len) == 0 &&
           (s->pttl < 0 ? a.pttl == s->pttl : (a.pttl > 0 && a.pttl <= s->pttl));
    free(s->dump);
    free(a.dump);
    s->dump = NULL;
    return same;
}

/* rc and msg are the code a member on fixture fx ends an exclusive acquisition with. */
static int excl_refused(const fixture *fx, int rc, const char *msg)
{
    if (fx->kind & (OWN_RW | OWN_GROUP))
        return rc == RLK_ERR_BUSY;
    return rc == RLK_ERR_SCRIPT && strstr(msg, "RLK_WRONGTYPE") != NULL;
}

/* MultiLock members a, b free and c on a foreign key (c last in the order of taking, blocking
 * and async): the acquisition fails as c's script refuses (RLK_WRONGTYPE; RLK_ERR_BUSY on
 * another kind's live lock), a and b are given back (no key left), c is unchanged. */
static void test_multilock_give_back(void)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url;
    REQUIRE((c = rlk_connect(&o)) != NULL);
    REQUIRE((actx = rlk_async_new(&o)) != NULL);
    REQUIRE_INT_EQ(rlk_async_poll_attach(actx, &apoll), RLK_OK);
    for (int api = 0; api < 2; api++) {
        for (size_t f = 0; f < NFIXTURES; f++) {
            const fixture *fx = &fixtures[f];
            char names[3][64], msg[1024] = "";
            const char *nv[3] = {names[0], names[1], names[2]};
            snap before;
            int rc, failed = -1;

            if (fx->kind & OWN_LOCK)
                continue;
            for (int i = 0; i < 3; i++)
                snprintf(names[i], sizeof names[i], "fkm:ml:%d:%zu:%c", api, f, 'a' + i);
            make(fx, names[2]);
            snap_take(&server, names[2], &before);
            if (api == 0) {
                rlk_multilock *m = rlk_multilock_new();

                REQUIRE(m != NULL);
                for (int i = 0; i < 3; i++)
                    REQUIRE_INT_EQ(rlk_multilock_add(m, c, names[i]), RLK_OK);
                rc = rlk_multilock_try_lock(m, 0, 10000);
                snprintf(msg, sizeof msg, "%s", rlk_multilock_errstr(m));
                failed = rlk_multilock_failed_member(m);
                if (rc == RLK_OK)
                    rlk_multilock_unlock(m);
                rlk_multilock_free(m);
            } else {
                aone a = {0, 0, ""};

                rc = aone_wait(&a, rlk_async_multilock_lock(actx, 3, nv, 1, 0, 10000, aone_cb, &a),
                               msg, sizeof msg);
                failed = 2;
            }
            CHECKF(excl_refused(fx, rc, msg) && failed == 2, "%s on %s: %d (%s), member %d",
                   api ? "rlk_async_multilock_lock" : "rlk_multilock_try_lock", fx->what, rc, msg,
                   failed);
            for (int i = 0; i < 2; i++)
                CHECKF(tk_int(&server, "EXISTS %s", names[i]) == 0,
                       "%s on %s: member %s was not given back",
                       api ? "rlk_async_multilock_lock" : "rlk_multilock_try_lock", fx->what,
                       names[i]);
            CHECKF(snap_same(&server, names[2], &before), "%s on %s: the foreign key changed",
                   api ? "rlk_async_multilock_lock" : "rlk_multilock_try_lock", fx->what);
        }
    }
    rlk_async_free(actx);
    rlk_async_poll_free(&apoll);
    rlk_free(c);
}

/* RedLock over 3 servers. The name foreign on 2 of them: no quorum, the acquisition fails
 * (RLK_WRONGTYPE; RLK_ERR_BUSY on a string, which a token lock takes for another's token), the
 * token taken on the third is given back, the foreign keys are unchanged. Foreign on 1: held by
 * the quorum; the acquire, extend and unlock leave that key unchanged. */
static void test_redlock(void)
{
    rlk_fx_server more[2];
    rlk_fx_server *srv[3] = {&server, &more[0], &more[1]};
    rlk_client *cs[3] = {NULL, NULL, NULL};

    REQUIRE(rlk_fx_start_n(more, 2, NULL) == 0);
    for (int i = 0; i < 3; i++) {
        char u[128];
        rlk_options o;

        REQUIRE(rlk_fx_url(srv[i], -1, u, sizeof u) == 0);
        rlk_options_init(&o);
        o.url = u;
        REQUIRE((cs[i] = rlk_connect(&o)) != NULL);
    }
    for (size_t f = 0; f < NFIXTURES; f++) {
        const fixture *fx = &fixtures[f];
        int string = strcmp(fx->setup[0], "SET") == 0;
        char key[64], msg[1024];
        rlk_redlock *rl;
        snap before[3];
        int rc;

        /* foreign on servers 1 and 2 */
        snprintf(key, sizeof key, "fkm:rl:maj:%zu", f);
        for (int i = 1; i < 3; i++) {
            tk_make_key(srv[i], fx->setup, 10, key, fx->pexpire);
            snap_take(srv[i], key, &before[i]);
        }
        REQUIRE((rl = rlk_redlock_new(cs, 3, key, NULL)) != NULL);
        rc = rlk_redlock_try_lock(rl, 0, 10000, NULL);
        snprintf(msg, sizeof msg, "%s", rlk_redlock_errstr(rl));
        CHECKF(string ? rc == RLK_ERR_BUSY : rc == RLK_ERR_SCRIPT && strstr(msg, "RLK_WRONGTYPE"),
               "rlk_redlock_try_lock on %s (2 of 3): %d (%s)", fx->what, rc, msg);
        CHECKF(tk_int(srv[0], "EXISTS %s", key) == 0,
               "rlk_redlock_try_lock on %s (2 of 3): the token on server 0 was not given back",
               fx->what);
        for (int i = 1; i < 3; i++)
            CHECKF(snap_same(srv[i], key, &before[i]),
                   "rlk_redlock_try_lock on %s (2 of 3): the key on server %d changed", fx->what,
                   i);
        if (rc == RLK_OK)
            rlk_redlock_unlock(rl);
        rlk_redlock_free(rl);

        /* foreign on server 2 only */
        snprintf(key, sizeof key, "fkm:rl:min:%zu", f);
        tk_make_key(srv[2], fx->setup, 10, key, fx->pexpire);
        REQUIRE((rl = rlk_redlock_new(cs, 3, key, NULL)) != NULL);
        snap_take(srv[2], key, &before[2]);
        rc = rlk_redlock_try_lock(rl, 0, 10000, NULL);
        CHECKF(rc == RLK_OK, "rlk_redlock_try_lock on %s (1 of 3): %d (%s)", fx->what, rc,
               rlk_redlock_errstr(rl));
        CHECKF(snap_same(srv[2], key, &before[2]),
               "rlk_redlock_try_lock on %s (1 of 3): the key on server 2 changed", fx->what);
        snap_take(srv[2], key, &before[2]);
        rc = rlk_redlock_extend(rl, 10000, NULL);
        CHECKF(rc == RLK_OK, "rlk_redlock_extend on %s (1 of 3): %d (%s)", fx->what, rc,
               rlk_redlock_errstr(rl));
        CHECKF(snap_same(srv[2], key, &before[2]),
               "rlk_redlock_extend on %s (1 of 3): the key on server 2 changed", fx->what);
        snap_take(srv[2], key, &before[2]);
        rc = rlk_redlock_unlock(rl);
        CHECKF(rc == RLK_OK, "rlk_redlock_unlock on %s (1 of 3): %d (%s)", fx->what, rc,
               rlk_redlock_errstr(rl));
        CHECKF(snap_same(srv[2], key, &before[2]),
               "rlk_redlock_unlock on %s (1 of 3): the key on server 2 changed", fx->what);
        for (int i = 0; i < 2; i++)
            CHECKF(tk_int(srv[i], "EXISTS %s", key) == 0,
                   "rlk_redlock_unlock on %s (1 of 3): the token on server %d is still there",
                   fx->what, i);
        rlk_redlock_free(rl);
    }
    for (int i = 0; i < 3; i++)
        rlk_free(cs[i]);
    rlk_fx_stop_n(more, 2);
}

/* ---------------------------------------------------------------- an election's keys */

/* The code a script that meets a foreign key may end a leader's call with: RLK_WRONGTYPE, or
 * RLK_ERR_NOT_OWNER (the key is not the caller's lock or record). */
static int refused(int rc, const char *msg)
{
    return rc == RLK_ERR_NOT_OWNER || (rc == RLK_ERR_SCRIPT && strstr(msg, "RLK_WRONGTYPE"));
}

/* One election call by api (0 blocking on e, 1 async for task 1) on name: 'c' campaign (fixed
 * lease 10 s, wait 0), 'p' proclaim, 'r' resign. */
static int elect_op(int api, rlk_client *c, rlk_elect *e, const char *name, int op, char *msg,
                    size_t len)
{
    aone a = {0, 0, ""};
    int rc;

    msg[0] = '\0';
    if (api == 0) {
        rc = op == 'c' ? rlk_elect_campaign(e, "v", 0, 10000, NULL)
           : op == 'p' ? rlk_elect_proclaim(e, "v2") : rlk_elect_resign(e);
        if (rc != RLK_OK)
            snprintf(msg, len, "%s", rlk_errstr(c));
        return rc;
    }
    return aone_wait(&a, op == 'c' ? rlk_async_elect_campaign(actx, name, 1, "v", 0, 10000, aone_cb, &a)
                         : op == 'p' ? rlk_async_elect_proclaim(actx, name, 1, "v2", aone_cb, &a)
                         : rlk_async_elect_resign(actx, name, 1, aone_cb, &a),
                     msg, len);
}

/* An election's keys turned foreign, both APIs: (1) a leader whose lock key or record
 * {name}:elect is replaced by an application's key proclaims and resigns: refused
 * (RLK_WRONGTYPE or RLK_ERR_NOT_OWNER), that key unchanged; (2) a campaign on a free name
 * whose record key {name}:elect is an application's: RLK_WRONGTYPE, the key unchanged and no
 * lock taken. */
static void test_elect_keys(void)
{
    static const char *const ops[] = {"campaign", "proclaim", "resign"};
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url;
    o.bundle_dir = bundle[0] ? bundle : NULL;
    REQUIRE((c = rlk_connect(&o)) != NULL);
    REQUIRE((actx = rlk_async_new(&o)) != NULL);
    REQUIRE_INT_EQ(rlk_async_poll_attach(actx, &apoll), RLK_OK);
    for (int api = 0; api < 2; api++) {
        const char *who = api ? "rlk_async_elect" : "rlk_elect";

        for (size_t f = 0; f < NFIXTURES; f++) {
            const fixture *fx = &fixtures[f];

            for (int which = 0; which < 3; which++) {
                char name[64], state[96], key[96], msg[1024];
                rlk_elect *e;
                snap before;
                int rc;

                /* which 0: the lock key replaced; 1: the record; 2: the record before a campaign */
                if (which == 0 && (fx->kind & OWN_LOCK))
                    continue;
                snprintf(name, sizeof name, "fkm:el:%d:%zu:%d", api, f, which);
                REQUIRE((e = rlk_elect_new(c, name)) != NULL);
                snprintf(state, sizeof state, "%s", rlk_elect_state_name(e));
                snprintf(key, sizeof key, "%s", which == 0 ? name : state);
                if (which < 2) {
                    rc = elect_op(api, c, e, name, 'c', msg, sizeof msg);
                    CHECKF(rc == RLK_OK, "%s campaign on %s: %d (%s)", who, name, rc, msg);
                    tk_int(&server, "DEL %s", key);
                }
                make(fx, key);
                for (int op = which < 2 ? 1 : 0; op < (which < 2 ? 3 : 1); op++) {
                    snap_take(&server, key, &before);
                    rc = elect_op(api, c, e, name, "cpr"[op], msg, sizeof msg);
                    CHECKF(which == 2 ? rc == RLK_ERR_SCRIPT && strstr(msg, "RLK_WRONGTYPE")
                                      : refused(rc, msg),
                           "%s %s with %s at %s: %d (%s)", who, ops[op], fx->what,
                           which == 0 ? "the lock key" : "the record", rc, msg);
                    CHECKF(snap_same(&server, key, &before), "%s %s with %s at %s: the key changed",
                           who, ops[op], fx->what, which == 0 ? "the lock key" : "the record");
                }
                if (which == 2)
                    CHECKF(tk_int(&server, "EXISTS %s", name) == 0,
                           "%s campaign with %s at the record: the lock was taken", who, fx->what);
                rlk_elect_free(e);
            }
        }
    }
    rlk_async_free(actx);
    rlk_async_poll_free(&apoll);
    rlk_free(c);
}

/* ---------------------------------------------------------------- the permit keeper */

typedef struct kept_lost {
    int calls, reason;
} kept_lost;

static void kept_lost_fn(const char *name, const char *owner, int reason, void *userdata)
{
    kept_lost *k = userdata;

    (void)name;
    (void)owner;
    __atomic_store_n(&k->reason, reason, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&k->calls, 1, __ATOMIC_SEQ_CST);
}

/* A permit keeper whose semaphore's name is replaced by an application's key while it keeps
 * (one per foreign key, all at once): every renewal is refused (RLK_WRONGTYPE), the keeper
 * reports its permit lost (RLK_LOST_EXPIRED: renewals failed until its lease had run out), once,
 * and neither that key nor the semaphore's {name}:timeout changes. */
static void test_keeper(void)
{
    enum { LEASE_MS = 600 };
    rlk_options o;
    rlk_client *c;
    rlk_psemaphore *s[NFIXTURES] = {NULL};
    rlk_psemaphore_keeper *k[NFIXTURES] = {NULL};
    kept_lost lost[NFIXTURES];
    snap before[NFIXTURES], tbefore[NFIXTURES];
    char names[NFIXTURES][64], tkeys[NFIXTURES][96];
    long long deadline;

    memset(lost, 0, sizeof lost);
    rlk_options_init(&o);
    o.url = url;
    o.bundle_dir = bundle[0] ? bundle : NULL;
    REQUIRE((c = rlk_connect(&o)) != NULL);
    for (size_t f = 0; f < NFIXTURES; f++) {
        char id[RLK_PERMIT_ID_SIZE];
        const char *ids[1] = {id};
        int set = 0;

        if (fixtures[f].kind & OWN_COUNT)
            continue;
        snprintf(names[f], sizeof names[f], "fkm:kp:%zu", f);
        REQUIRE((s[f] = rlk_psemaphore_new(c, names[f])) != NULL);
        snprintf(tkeys[f], sizeof tkeys[f], "%s", rlk_psemaphore_timeouts_key(s[f]));
        REQUIRE_INT_EQ(rlk_psemaphore_try_set_permits(s[f], 1, &set), RLK_OK);
        REQUIRE_INT_EQ(rlk_psemaphore_try_acquire(s[f], 0, 60000, id), RLK_OK);
        REQUIRE((k[f] = rlk_psemaphore_keep(s[f], 1, ids, LEASE_MS, kept_lost_fn, &lost[f])) != NULL);
        tk_int(&server, "DEL %s", names[f]);
        make(&fixtures[f], names[f]);
        snap_take(&server, names[f], &before[f]);
        snap_take(&server, tkeys[f], &tbefore[f]);
    }
    /* Bounded poll: each is reported within its lease of the last renewal, plus the watchdog's
     * rounds; RUN_BOUND_MS on top for a loaded machine. */
    deadline = rlk_fx_now_ms() + LEASE_MS + 2 * RUN_BOUND_MS;
    for (int all = 0; !all && rlk_fx_now_ms() < deadline;) {
        all = 1;
        for (size_t f = 0; f < NFIXTURES; f++)
            if (k[f] && rlk_psemaphore_keeper_lost(k[f]) == 0)
                all = 0;
        if (!all)
            rlk_fx_sleep_ms(10);
    }
    for (size_t f = 0; f < NFIXTURES; f++) {
        if (!k[f])
            continue;
        CHECKF(rlk_psemaphore_keeper_lost(k[f]) == RLK_LOST_EXPIRED,
               "rlk_psemaphore_keep with %s at the name: lost %d, expected RLK_LOST_EXPIRED",
               fixtures[f].what, rlk_psemaphore_keeper_lost(k[f]));
        rlk_psemaphore_keeper_stop(k[f]);
        CHECKF(__atomic_load_n(&lost[f].calls, __ATOMIC_SEQ_CST) == 1 &&
               lost[f].reason == RLK_LOST_EXPIRED,
               "rlk_psemaphore_keep with %s at the name: %d reports, reason %d", fixtures[f].what,
               lost[f].calls, lost[f].reason);
        CHECKF(snap_same(&server, names[f], &before[f]),
               "rlk_psemaphore_keep with %s at the name: the key changed", fixtures[f].what);
        CHECKF(snap_same(&server, tkeys[f], &tbefore[f]),
               "rlk_psemaphore_keep with %s at the name: %s changed", fixtures[f].what, tkeys[f]);
        rlk_psemaphore_free(s[f]);
    }
    rlk_free(c);
}

int main(int argc, char **argv)
{
    control = argc > 2 && strcmp(argv[1], "--control") == 0;
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0)
        return 1;
    if (control && plant_bundle(argv[2]) != 0) {
        fprintf(stderr, "fk_matrix: cannot plant the bundle from %s\n", argv[2]);
        rlk_fx_stop(&server);
        return 1;
    }
    RUN_TEST(test_matrix);
    if (!control) {
        RUN_TEST(test_named);
        RUN_TEST(test_multilock_give_back);
        RUN_TEST(test_redlock);
    }
    RUN_TEST(test_keeper);
    RUN_TEST(test_elect_keys);
    if (control) {
        char cmd[600];

        snprintf(cmd, sizeof cmd, "rm -rf '%s'", bundle);
        if (system(cmd) != 0)
            fprintf(stderr, "fk_matrix: could not remove %s\n", bundle);
    }
    rlk_fx_stop(&server);
    return check_summary("fk_matrix");
}
