/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_single.c - `rlk lock` on one lock of one server: the reentrant lock
 * (default), a read or the write lock of a read-write lock (--read,
 * --write), the fair lock (--fair), the fenced lock (--fenced), the
 * non-reentrant lock (--non-reentrant) and the reentrant lock waited for by
 * back-off instead of pub/sub (--spin); --fair --non-reentrant is the fair
 * lock whose holder asking again is refused, --lock-delay the reentrant
 * lock's lock-delay (rlk_lock_set_delay). All of them
 * wait with pub/sub (but --spin) and are renewed by the client's watchdog (or have a
 * fixed lease), so they differ only in which library calls they make: the
 * small switch functions below.
 *
 * A command run under `rlk lock` (or any holding command) that runs `rlk lock`
 * on the same name and kind again gets the same holder id (from
 * RLK_LOCK_OWNER; the nesting rule, nest.h): the inner rlk re-enters the lock
 * instead of waiting for its own parent, and a reader asking for the write
 * lock (or a non-reentrant holder for its lock) is refused at once
 * (RLK_ERR_UPGRADE, RLK_ERR_REENTRY). One that asks for the name as another
 * kind (--fenced inside a reentrant lock, a plain --fair inside --fair
 * --non-reentrant, any lock inside rlk elect or rlk fastmulti of that name)
 * is refused before it connects: it would wait for its parent for ever. A --fenced
 * re-entry hands the enclosing token down (RLK_FENCE_TOKEN,
 * rlk_fenced_set_reentry_token: fenced/reenter): it re-enters with the
 * parent's token instead of minting a newer one, which would refuse every
 * write the parent makes after the child's first; when the parent's hold is
 * gone, it acquires with a new token as usual.
 *
 * --claim FENCE (--fenced): once acquired, each FENCE is raised to the token
 * (rlk_fence_claim) before the command starts; a fence holding a newer token
 * gives the lock back and exits 11 (lock_util.c rlk_lc_claim).
 *
 * While it waits, SIGINT, SIGTERM, SIGHUP and SIGQUIT end the wait
 * (rlk_lc_sigwatch, lock_hold.c, as in every mode): a fair waiter leaves the
 * queue (fair/cancel) instead of keeping its place until its deadline, and
 * rlk exits with 128 + the signal, as the signal would have made it.
 */
#include <ctype.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "inspect.h"
#include "kind_mark.h"
#include "kinds/names.h"
#include "lock_cli.h"
#include "nest.h"
#include "runtime/rt.h"

#define SINGLE_OWNER_MAX 1100
#define SINGLE_DETAIL_MS 300    /* the queue detail of a "still held" message: at most this long */

typedef struct single_lock {
    int mode;
    rlk_client *c;
    rlk_lock *lock;
    rlk_rwlock *rw;
    rlk_fairlock *fair;
    rlk_fenced *fenced;
    rlk_nrlock *nr;             /* --non-reentrant; --spin is lock, set to spin */
    int fair_nonreentrant;      /* --fair --non-reentrant */
    long long delay_ms;         /* --lock-delay (lock, --spin); 0: none */
    const char *name;           /* the lock's name, and its holder id, while held (the check,
                                 * the fair lock's kind marker) */
    const char *owner;
    long long mark_ttl_ms;      /* the fair lock's kind marker's life (its hold's lease) */
} single_lock;

/* ---------------------------------------------------------------- the kinds */

static const char *single_kind(int mode)
{
    switch (mode) {
    case RLK_LC_READ:
        return "read";
    case RLK_LC_WRITE:
        return "write";
    case RLK_LC_FAIR:
        return "fair";
    case RLK_LC_FENCED:
        return "fenced";
    case RLK_LC_NONREENTRANT:
        return "nonreentrant";
    default:
        return "lock";
    }
}

const char *rlk_lc_single_label(int mode)
{
    switch (mode) {
    case RLK_LC_READ:
        return "read lock";
    case RLK_LC_WRITE:
        return "write lock";
    case RLK_LC_FAIR:
        return "fair lock";
    case RLK_LC_FENCED:
        return "fenced lock";
    case RLK_LC_NONREENTRANT:
        return "non-reentrant lock";
    default:
        return "lock";
    }
}

/* 0, or -1 (error on the client). */
static int single_make(single_lock *l, const char *name)
{
    switch (l->mode) {
    case RLK_LC_READ:
    case RLK_LC_WRITE:
        return (l->rw = rlk_rwlock_new(l->c, name)) ? 0 : -1;
    case RLK_LC_FAIR:
        if (!(l->fair = rlk_fairlock_new(l->c, name)))
            return -1;
        return !l->fair_nonreentrant || rlk_fairlock_set_non_reentrant(l->fair, 1) == RLK_OK
               ? 0 : -1;
    case RLK_LC_FENCED:
        return (l->fenced = rlk_fenced_new(l->c, name)) ? 0 : -1;
    case RLK_LC_NONREENTRANT:
        return (l->nr = rlk_nrlock_new(l->c, name)) ? 0 : -1;
    default:
        if (!(l->lock = rlk_lock_new(l->c, name)))
            return -1;
        if (l->delay_ms > 0 && rlk_lock_set_delay(l->lock, l->delay_ms) != RLK_OK)
            return -1;
        return l->mode != RLK_LC_SPIN || rlk_lock_set_spin(l->lock, 1, 128) == RLK_OK ? 0 : -1;
    }
}

static void single_destroy(single_lock *l)
{
    rlk_rwlock_free(l->rw);
    rlk_fairlock_free(l->fair);
    rlk_fenced_free(l->fenced);
    rlk_nrlock_free(l->nr);
    rlk_lock_free(l->lock);
}

static int single_set_owner(single_lock *l, const char *owner)
{
    if (l->rw)
        return rlk_rwlock_set_owner(l->rw, owner);
    if (l->fair)
        return rlk_fairlock_set_owner(l->fair, owner);
    if (l->fenced)
        return rlk_fenced_set_owner(l->fenced, owner);
    if (l->nr)
        return rlk_nrlock_set_owner(l->nr, owner);
    return rlk_lock_set_owner(l->lock, owner);
}

static int single_owner(const single_lock *l, char *buf, size_t len)
{
    if (l->rw)
        return rlk_rwlock_owner(l->rw, buf, len);
    if (l->fair)
        return rlk_fairlock_owner(l->fair, buf, len);
    if (l->fenced)
        return rlk_fenced_owner(l->fenced, buf, len);
    if (l->nr)
        return rlk_nrlock_owner(l->nr, buf, len);
    return rlk_lock_owner(l->lock, buf, len);
}

static int single_try(single_lock *l, long long wait_ms, long long lease_ms, long long *token)
{
    switch (l->mode) {
    case RLK_LC_READ:
        return rlk_rwlock_try_lock(l->rw, RLK_RW_READ, wait_ms, lease_ms);
    case RLK_LC_WRITE:
        return rlk_rwlock_try_lock(l->rw, RLK_RW_WRITE, wait_ms, lease_ms);
    case RLK_LC_FAIR:
        return rlk_fairlock_try_lock(l->fair, wait_ms, lease_ms);
    case RLK_LC_FENCED:
        return rlk_fenced_try_lock(l->fenced, wait_ms, lease_ms, token);
    case RLK_LC_NONREENTRANT:
        return rlk_nrlock_try_lock(l->nr, wait_ms, lease_ms);
    default:
        return rlk_lock_try_lock(l->lock, wait_ms, lease_ms);
    }
}

static int single_unlock(single_lock *l)
{
    switch (l->mode) {
    case RLK_LC_READ:
        return rlk_rwlock_unlock(l->rw, RLK_RW_READ);
    case RLK_LC_WRITE:
        return rlk_rwlock_unlock(l->rw, RLK_RW_WRITE);
    case RLK_LC_FAIR:
        return rlk_fairlock_unlock(l->fair);
    case RLK_LC_FENCED:
        return rlk_fenced_unlock(l->fenced);
    case RLK_LC_NONREENTRANT:
        return rlk_nrlock_unlock(l->nr);
    default:
        return rlk_lock_unlock(l->lock);
    }
}

/* ---------------------------------------------------------------- nesting */

/* The RLK_LOCK_KIND of l (the non-reentrant fair lock has its own: a nested plain --fair must
 * not re-enter it). */
static const char *single_kind_of(int mode, int fair_nonreentrant)
{
    return mode == RLK_LC_FAIR && fair_nonreentrant ? "nonreentrantfair" : single_kind(mode);
}

/* The enclosing `rlk lock --fenced`'s token (RLK_FENCE_TOKEN), for a re-entry of its hold
 * (the nesting rule found the same kind): 1..2^53-2, else 0 (none, or not a token: mint as
 * usual). */
static long long single_inherited_token(void)
{
    const char *t = getenv("RLK_FENCE_TOKEN");
    char *end;
    long long v;

    if (!t || t[0] < '1' || t[0] > '9' || strlen(t) > 16)
        return 0;
    v = strtoll(t, &end, 10);
    return *end == '\0' && v > 0 && v <= 9007199254740990LL ? v : 0;
}

/* Run by an enclosing `rlk lock` (of any lock kind, any name): this rlk's
 * waiters' tickets carry the enclosing holder's client number, so the wait-for
 * graph counts a wait here as the enclosing process's, which holds its lock
 * meanwhile (docs/deadlock.md: `rlk lock A -- rlk lock B` waiting for B while
 * another holds B and waits for A is a cycle). Before the first handle. */
static void single_share_cid(rlk_client *c)
{
    static const char *const kinds[] = {"lock", "read", "write", "fair", "nonreentrantfair",
                                        "fenced"};
    const char *kind = getenv("RLK_LOCK_KIND"), *owner = getenv("RLK_LOCK_OWNER");

    if (!kind || !owner || strlen(owner) < 4)
        return;
    for (int i = 0; i < 4; i++)
        if (!isxdigit((unsigned char)owner[i]))
            return;
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        if (strcmp(kind, kinds[k]) == 0)
            rlk_rt_share_cid(c, owner);
}

/* ---------------------------------------------------------------- holding */

static int single_release(rlk_lc_hold *h)
{
    single_lock *l = h->impl;
    int rc = single_unlock(l), exists = 1;

    /* The fair lock's kind marker (kind_mark.h) goes with the last hold: when NAME is gone. */
    if (rc == RLK_OK && l->mode == RLK_LC_FAIR && l->name) {
        const char *argv[2] = {"EXISTS", l->name};
        redisReply *r = NULL;

        if (rlk_command(l->c, 2, argv, NULL, &r) == RLK_OK && r &&
            r->type == REDIS_REPLY_INTEGER)
            exists = r->integer > 0;
        if (r)
            freeReplyObject(r);
        if (!exists)
            (void)rlk_km_unmark_if(l->c, l->name, RLK_KM_FAIR);
    }
    return rc;
}

/* The fair lock's kind marker lives a lease: renewed every third of it while the hold lasts
 * (rlk_lc_hold.upkeep), so that one left by a holder killed with -9 goes within a lease. */
static void single_mark_upkeep(rlk_lc_hold *h)
{
    single_lock *l = h->impl;

    (void)rlk_km_renew(l->c, l->name, RLK_KM_FAIR, l->mark_ttl_ms);
}

/* The library's lease of the hold (rlk_lc_hold.lease): the one clock. */
static int single_lease(rlk_lc_hold *h, long long *start_ns, long long *deadline_ns)
{
    single_lock *l = h->impl;

    switch (l->mode) {
    case RLK_LC_READ:
        return rlk_rwlock_lease(l->rw, RLK_RW_READ, start_ns, deadline_ns);
    case RLK_LC_WRITE:
        return rlk_rwlock_lease(l->rw, RLK_RW_WRITE, start_ns, deadline_ns);
    case RLK_LC_FAIR:
        return rlk_fairlock_lease(l->fair, start_ns, deadline_ns);
    case RLK_LC_FENCED:
        return rlk_fenced_lease(l->fenced, start_ns, deadline_ns);
    case RLK_LC_NONREENTRANT:
        return rlk_nrlock_lease(l->nr, start_ns, deadline_ns);
    default:
        return rlk_lock_lease(l->lock, start_ns, deadline_ns);
    }
}

/* The hold checker's question (lock_check.c), for a fixed lease: is the holder's field still
 * in the lock's hash (the write lock's "<owner>:write")? */
static int single_check(rlk_lc_hold *h)
{
    const single_lock *l = h->impl;
    char field[SINGLE_OWNER_MAX + 8];
    const char *f = field;

    snprintf(field, sizeof field, "%s%s", l->owner, l->mode == RLK_LC_WRITE ? ":write" : "");
    return rlk_lc_check_fields(l->c, l->name, &f, 1, NULL);
}

/* The channel a force unlock of l's kind publishes on (malloc'd; NULL: out of memory). */
static char *single_channel(const single_lock *l)
{
    const rlk_names_kind *k = rlk_names_kind_find(l->rw ? "rwlock" : "reentrant");

    return k ? rlk_names_channel(k, l->name) : NULL;
}

static const char *single_errstr(rlk_lc_hold *h)
{
    const single_lock *l = h->impl;

    return rlk_errstr(l->c);
}

/* " (queued behind N waiters; the lock itself is free)" for a fair lock
 * whose queue, not a holder, kept this waiter out; else NULL. */
static const char *single_queue_detail(single_lock *l, char *buf, size_t len)
{
    long long n = 0;
    int locked = 1, rc;

    if (l->mode != RLK_LC_FAIR)
        return NULL;
    rlk_thread_time_limit(SINGLE_DETAIL_MS);    /* only a detail: never hang on it */
    rc = rlk_fairlock_is_locked(l->fair, &locked) != RLK_OK || locked ||
         rlk_fairlock_queue_length(l->fair, &n) != RLK_OK || n <= 0;
    rlk_thread_time_limit(-1);
    if (rc)
        return NULL;
    snprintf(buf, len, "queued behind %lld waiter%s; the lock itself is free", n,
             n == 1 ? "" : "s");
    return buf;
}

/* A reentrant lock taken with --lock-delay, refused while it is free: the ms left of its
 * delay (a holder lost it without releasing it), else -1. Bounded: only a detail. */
static long long single_delay_left(single_lock *l, const char *name)
{
    long long ttl = -2;
    char *key = NULL;
    int held = 1, rc;

    if (l->delay_ms <= 0 || !l->lock)
        return -1;
    rlk_thread_time_limit(SINGLE_DETAIL_MS);
    rc = rlk_ik_lock_delay(l->c, name, &key, &ttl, &held);
    rlk_thread_time_limit(-1);
    free(key);
    return rc == RLK_OK && !held && ttl >= 0 ? ttl : -1;
}

static void single_give_back(void *arg)
{
    single_unlock(arg);
}

/* -1 when acquired (*token set for --fenced; the signals still blocked, *mask the mask to
 * restore), else the exit code (the mask restored). */
static int single_acquire(single_lock *l, const rlk_lc_lock_opts *o, long long wait_ms,
                          const char *what, long long *token, sigset_t *mask)
{
    rlk_lc_sigwatch sw;
    char detail[128];
    long long left;
    int rc, end;

    rlk_lc_sigwatch_start(&sw, &l->c, 1);
    rc = single_try(l, wait_ms, o->c.lease_ms, token);
    *mask = sw.old;
    end = rlk_lc_sigwatch_end(&sw, rc, what, l->mode == RLK_LC_FAIR ? "; left the queue" : NULL,
                              single_give_back, l);
    if (end != -2)
        return end;
    if (rc == RLK_ERR_BUSY && (left = single_delay_left(l, o->names[0])) >= 0)
        return rlk_lc_not_acquired_delay(&o->c, what, left);
    if (rc == RLK_ERR_BUSY)
        return rlk_lc_not_acquired(&o->c, what, single_queue_detail(l, detail, sizeof detail));
    if (rc == RLK_ERR_UPGRADE)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: its holder (RLK_LOCK_OWNER of the "
                            "enclosing rlk lock) holds a read of %s, and a reader cannot "
                            "upgrade to the write lock", what, o->names[0]);
    if (rc == RLK_ERR_REENTRY)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: its holder (RLK_LOCK_OWNER of the "
                            "enclosing rlk lock) holds it already, and it is non-reentrant",
                            what);
    return rlk_lc_fail(l->c, rc, what);
}

/* The command's environment; 0 or -1 (out of memory). */
static int single_env(rlk_lc_hold *h, const single_lock *l, const char *name, const char *owner,
                      long long token)
{
    char tok[32];

    if (rlk_lc_hold_setenv(h, "RLK_LOCK_NAME", name) < 0 ||
        rlk_lc_hold_setenv(h, "RLK_LOCK_KIND", single_kind_of(l->mode, l->fair_nonreentrant)) < 0 ||
        rlk_lc_hold_setenv(h, "RLK_LOCK_OWNER", owner) < 0)
        return -1;
    if (l->mode != RLK_LC_FENCED)
        return 0;
    snprintf(tok, sizeof tok, "%lld", token);
    return rlk_lc_hold_setenv(h, "RLK_FENCE_TOKEN", tok);
}

static int single_hold(single_lock *l, const rlk_lc_lock_opts *o, const rlk_lc_session *s,
                       const char *owner, long long token, const sigset_t *mask)
{
    long long acquired_ns = rlk_lc_now_ns();
    rlk_lc_hold h;
    int rc;

    rlk_lc_hold_init(&h, "%s %s", rlk_lc_single_label(l->mode), o->names[0]);
    h.release = single_release;
    h.errstr = single_errstr;
    h.impl = l;
    h.client = l->c;
    h.child_mask = mask;
    h.lease = single_lease;
    h.delay_ms = l->delay_ms;
    l->name = o->names[0];
    l->owner = owner;
    /* A fair lock held with nobody queued looks like a reentrant lock: its kind marker tells
     * rlk inspect and rlk top (kind_mark.h). It lives the hold's lease: a fixed one ends the
     * hold; a renewed one is renewed here every third of it, as the watchdog renews the lock.
     * Not a condition of the hold (a user the ACL denies it). */
    if (l->mode == RLK_LC_FAIR) {
        l->mark_ttl_ms = o->c.lease_ms > 0      ? o->c.lease_ms
                         : o->c.wd_lease_ms > 0 ? o->c.wd_lease_ms
                                                : RLK_LC_DEFAULT_LEASE_MS;
        (void)rlk_km_mark_for(l->c, o->names[0], RLK_KM_FAIR, l->mark_ttl_ms);
        if (o->c.lease_ms <= 0) {
            h.upkeep = single_mark_upkeep;
            h.upkeep_period_ns = l->mark_ttl_ms / 3 * RLK_NS_PER_MS;
        }
    }
    if (o->c.lease_ms > 0) {
        rlk_lc_hold_lease(&h, acquired_ns, o->c.lease_ms);
        /* Nothing renews a fixed lease, so no renewal finds it force-unlocked or deleted: the
         * checker asks at every message on its channel and every third of the lease, as the
         * watchdog would renew it. */
        h.check = single_check;
        h.check_channel = single_channel(l);
        h.check_period_ns = o->c.lease_ms / 3 * RLK_NS_PER_MS;
    }
    /* The command gets the holder id (RLK_LOCK_OWNER), and an rlk inside it holds under it
     * too: from here on the id is given, so a lost reply of the release is not settled from
     * the server's count of it (docs/runtime.md "One holder id in several processes"). */
    if (single_set_owner(l, owner) != RLK_OK || single_env(&h, l, o->names[0], owner, token) < 0) {
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        single_unlock(l);
    } else {
        rc = rlk_lc_hold_run(&h, s, &o->c);
    }
    rlk_lc_hold_free(&h);
    return rc;
}

#define SINGLE_CONNECT_MIN_MS 1000     /* what a connect may take whatever -w says */

/* What is left of -w (wait_ms, when > 0) since t0; at least 1 ms. */
static long long single_wait_left(long long wait_ms, long long t0)
{
    if (wait_ms > 0 && (wait_ms -= (rlk_lc_now_ns() - t0) / 1000000) < 1)
        wait_ms = 1;
    return wait_ms;
}

/* t0: when the command started to connect (-w bounds the connect too). */
static int single_with_client(single_lock *l, const rlk_lc_lock_opts *o, const rlk_lc_session *s,
                              long long t0, const char *inherited)
{
    const char *name = o->names[0];
    char what[RLK_LC_WHAT_MAX], owner[SINGLE_OWNER_MAX];
    long long token = 0;
    sigset_t mask;
    long long wait_ms = o->c.wait_ms;   /* what is left of -w for the acquire */
    int rc;

    snprintf(what, sizeof what, "%s %s", rlk_lc_single_label(l->mode), name);
    single_share_cid(l->c);
    if (single_make(l, name) < 0)
        return rlk_lc_fail(l->c, rlk_err(l->c), what);
    wait_ms = single_wait_left(o->c.wait_ms, t0);   /* the connect took its share */
    if (l->mode != RLK_LC_READ && l->mode != RLK_LC_WRITE) {
        /* kind_mark.h: not a read-write lock's hash. A check, bounded so that -w
         * still bounds the whole wait (a failed check lets the acquire decide). */
        rlk_thread_time_limit(wait_ms > 0 && wait_ms < SINGLE_DETAIL_MS
                                  ? wait_ms : SINGLE_DETAIL_MS);
        rc = rlk_km_check_not_rwlock(l->c, name, what);
        rlk_thread_time_limit(-1);
        if (rc >= 0)
            return rc;
    }
    wait_ms = single_wait_left(o->c.wait_ms, t0);
    if ((inherited && single_set_owner(l, inherited) != RLK_OK) ||
        single_owner(l, owner, sizeof owner) != RLK_OK)
        return rlk_lc_fail(l->c, rlk_err(l->c), what);
    /* A --fenced re-entry: the parent's token handed down, not a newer one. */
    if (inherited && l->mode == RLK_LC_FENCED &&
        rlk_fenced_set_reentry_token(l->fenced, single_inherited_token()) != RLK_OK)
        return rlk_lc_fail(l->c, rlk_err(l->c), what);
    if ((rc = single_acquire(l, o, wait_ms, what, &token, &mask)) >= 0)
        return rc;
    /* --claim: every fence raised to the token before the command can read anything. */
    if ((rc = rlk_lc_claim(l->c, &o->c, token, what)) >= 0) {
        single_unlock(l);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
        return rc;
    }
    return single_hold(l, o, s, owner, token, &mask);
}

int rlk_lc_lock_single(const rlk_lc_lock_opts *o)
{
    rlk_lc_session s;
    rlk_lc_sink sink;
    single_lock l;
    long long t0;
    int rc;

    char what[RLK_LC_WHAT_MAX];
    rlk_nest nest;

    /* The nesting rule (nest.h): the parent's holder id for the same kind, refused before
     * connecting for another (nothing to wait for but the parent). */
    rlk_nest_find(single_kind_of(o->mode, o->fair_nonreentrant), o->names, 1, &nest);
    snprintf(what, sizeof what, "%s %s", rlk_lc_single_label(o->mode), o->names[0]);
    if (nest.found && !nest.same)
        return rlk_nest_refuse_other(what, &nest);
    if ((rc = rlk_lc_session_open(&s)) >= 0)
        return rc;
    memset(&l, 0, sizeof l);
    l.mode = o->mode;
    l.fair_nonreentrant = o->fair_nonreentrant;
    l.delay_ms = o->lock_delay_ms;
    t0 = rlk_lc_now_ns();
    /* -w bounds the whole wait, the connect included (a TLS handshake with a
     * stopped server hangs until then, where a TCP connect does not); a
     * shorter -w still leaves a handshake SINGLE_CONNECT_MIN_MS. */
    if (o->c.wait_ms > 0)
        rlk_thread_time_limit(o->c.wait_ms < SINGLE_CONNECT_MIN_MS ? SINGLE_CONNECT_MIN_MS
                                                                    : o->c.wait_ms);
    l.c = rlk_lc_connect_margin(o->c.url, o->c.wd_lease_ms, o->c.grace_ms + o->c.margin_ms,
                                &rc);
    rlk_thread_time_limit(-1);
    if (l.c) {
        sink.name = o->names[0];
        sink.fd = s.lost_wr;
        rlk_set_lost_callback(l.c, rlk_lc_lost_cb, &sink);
        rc = single_with_client(&l, o, &s, t0, nest.found ? nest.owner : NULL);
        single_destroy(&l);
        rlk_free(l.c);  /* stops the watchdog: no callback after this */
    }
    rlk_lc_session_close(&s);
    return rc;
}
