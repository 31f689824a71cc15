/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_basic.c - the reentrant lock API on one redis-server, one process:
 * holder ids, reentrancy (hold_count), unlock by a non-owner, try_lock
 * with wait 0 and a short wait, leases, force unlock, fixed owners, a wait
 * woken by the unlock message, local FIFO fairness, argument errors.
 */
#include "check.h"
#include "tk_util.h"
#include "client/client.h"
#include "runtime/lq.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ helpers */

typedef struct holder {
    rlk_lock *lock;
    long long lease_ms;
    tk_latch held;          /* 1: locked */
    tk_latch release;       /* 1: unlock now */
    int rc_lock, rc_unlock;
} holder;

static void *holder_main(void *arg)
{
    holder *h = arg;

    h->rc_lock = rlk_lock_lock(h->lock, h->lease_ms);
    tk_latch_add(&h->held, 1);
    tk_latch_wait(&h->release, 1, 30000);
    h->rc_unlock = h->rc_lock == RLK_OK ? rlk_lock_unlock(h->lock) : -1;
    return NULL;
}

/* Starts a thread that takes l and holds it until holder_release. */
static int holder_start(holder *h, pthread_t *t, rlk_lock *l, long long lease_ms)
{
    memset(h, 0, sizeof *h);
    h->lock = l;
    h->lease_ms = lease_ms;
    tk_latch_init(&h->held);
    tk_latch_init(&h->release);
    pthread_create(t, NULL, holder_main, h);
    return tk_latch_wait(&h->held, 1, 10000) == 1 && h->rc_lock == RLK_OK ? 0 : -1;
}

static void holder_finish(holder *h, pthread_t t)
{
    tk_latch_add(&h->release, 1);
    pthread_join(t, NULL);
    tk_latch_destroy(&h->held);
    tk_latch_destroy(&h->release);
}

/* ------------------------------------------------------------ tests */

static void test_owner_ids(void)
{
    rlk_client *a = tk_connect(url, 0, 2), *b = tk_connect(url, 0, 2);
    rlk_lock *l;
    char owner[128], expect[128];
    const char *uuid;

    REQUIRE(a && b);
    uuid = rlk_client_uuid(a);
    CHECK_INT_EQ(strlen(uuid), 36);
    CHECK(uuid[8] == '-' && uuid[13] == '-' && uuid[18] == '-' && uuid[23] == '-');
    CHECK(uuid[14] == '4');                             /* version 4 */
    CHECK(strchr("89ab", uuid[19]) != NULL);            /* variant 10xx */
    CHECK(strcmp(uuid, rlk_client_uuid(b)) != 0);
    l = rlk_lock_new(a, "rt:owner");
    REQUIRE(l);
    CHECK_STR_EQ(rlk_lock_name(l), "rt:owner");
    CHECK_INT_EQ(rlk_lock_owner(l, owner, sizeof owner), RLK_OK);
    snprintf(expect, sizeof expect, "%s:%ld", uuid, (long)gettid());
    CHECK_STR_EQ(owner, expect);
    CHECK_INT_EQ(rlk_lock_owner(l, owner, 10), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_set_owner(l, "job-7"), RLK_OK);
    CHECK_INT_EQ(rlk_lock_owner(l, owner, sizeof owner), RLK_OK);
    CHECK_STR_EQ(owner, "job-7");
    CHECK_INT_EQ(rlk_lock_set_owner(l, ""), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_set_owner(l, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_lock_owner(l, owner, sizeof owner), RLK_OK);
    CHECK_STR_EQ(owner, expect);
    rlk_lock_free(l);
    rlk_free(a);
    rlk_free(b);
}

static void test_reentrancy(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_lock *l;
    long long n = -1, ttl = -9;
    int locked = -1, held = -1;

    REQUIRE(c);
    l = rlk_lock_new(c, "rt:reentrant");
    REQUIRE(l);
    CHECK_INT_EQ(rlk_lock_hold_count(l, &n), RLK_OK);
    CHECK_INT_EQ(n, 0);
    CHECK_INT_EQ(rlk_lock_remaining_ttl(l, &ttl), RLK_OK);
    CHECK_INT_EQ(ttl, -2);
    for (int i = 1; i <= 3; i++) {
        CHECK_INT_EQ(rlk_lock_lock(l, 10000), RLK_OK);
        CHECK_INT_EQ(rlk_lock_hold_count(l, &n), RLK_OK);
        CHECK_INT_EQ(n, i);
    }
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 10000), RLK_OK);     /* re-entry with wait 0 */
    CHECK_INT_EQ(rlk_lock_hold_count(l, &n), RLK_OK);
    CHECK_INT_EQ(n, 4);
    CHECK_INT_EQ(rlk_lock_remaining_ttl(l, &ttl), RLK_OK);
    CHECK(ttl > 0 && ttl <= 10000);
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    for (int i = 3; i >= 0; i--) {
        CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
        CHECK_INT_EQ(rlk_lock_hold_count(l, &n), RLK_OK);
        CHECK_INT_EQ(n, i);
    }
    CHECK_INT_EQ(rlk_lock_is_locked(l, &locked), RLK_OK);
    CHECK_INT_EQ(locked, 0);
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_NOT_OWNER);
    CHECK_STR_CONTAINS(rlk_errstr(c), "not held");
    rlk_lock_free(l);
    rlk_free(c);
}

static void test_not_owner(void)
{
    rlk_client *c = tk_connect(url, 0, 4), *other = tk_connect(url, 0, 2);
    rlk_lock *l, *lo;
    holder h;
    pthread_t t;
    int locked = 0;

    REQUIRE(c && other);
    l = rlk_lock_new(c, "rt:notowner");
    lo = rlk_lock_new(other, "rt:notowner");
    REQUIRE(l && lo);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_ERR_NOT_OWNER);           /* never taken */
    REQUIRE(holder_start(&h, &t, l, 20000) == 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_ERR_NOT_OWNER);           /* same client, other thread */
    CHECK_INT_EQ(rlk_lock_unlock(lo), RLK_ERR_NOT_OWNER);          /* other client */
    CHECK_INT_EQ(rlk_lock_is_locked(l, &locked), RLK_OK);
    CHECK_INT_EQ(locked, 1);                                        /* still held */
    holder_finish(&h, t);
    CHECK_INT_EQ(h.rc_unlock, RLK_OK);
    rlk_lock_free(l);
    rlk_lock_free(lo);
    rlk_free(c);
    rlk_free(other);
}

static void test_try_lock_busy(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_lock *l;
    holder h;
    pthread_t t;
    long long t0, ms;
    int rc;

    REQUIRE(c);
    l = rlk_lock_new(c, "rt:busy");
    REQUIRE(l);
    REQUIRE(holder_start(&h, &t, l, 20000) == 0);
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    rc = rlk_lock_try_lock(l, 0, 5000);
    ms = rlk_fx_now_ms() - t0;
    CHECK_INT_EQ(rc, RLK_ERR_BUSY);
    CHECK_STR_CONTAINS(rlk_errstr(c), "held by another");
    CHECKF(ms < 500, "try_lock(wait 0) took %lld ms (max scheduling gap %lld ms)", ms,
           tk_stall_max_gap_ms(&stall));
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    rc = rlk_lock_try_lock(l, 300, 5000);
    ms = rlk_fx_now_ms() - t0;
    CHECK_INT_EQ(rc, RLK_ERR_BUSY);
    CHECKF(ms >= 295, "try_lock(wait 300) gave up after %lld ms", ms);
    CHECKF(ms < 300 + 500, "try_lock(wait 300) took %lld ms (max scheduling gap %lld ms%s)", ms,
           tk_stall_max_gap_ms(&stall), tk_stall_max_gap_ms(&stall) > TK_STALL_MS ? ": a stall" : "");
    printf("  try_lock busy: wait 0 -> BUSY; wait 300 -> BUSY after %lld ms\n", ms);
    holder_finish(&h, t);
    rlk_lock_free(l);
    rlk_free(c);
}

static void test_lease_expires(void)
{
    rlk_client *c = tk_connect(url, 0, 4), *w = tk_connect(url, 0, 2);
    rlk_lock *l, *lw;
    long long t0, ms, ttl = 0;

    REQUIRE(c && w);
    l = rlk_lock_new(c, "rt:lease");
    lw = rlk_lock_new(w, "rt:lease");
    REQUIRE(l && lw);
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    REQUIRE(rlk_lock_lock(l, 300) == RLK_OK);
    CHECK_INT_EQ(rlk_lock_remaining_ttl(l, &ttl), RLK_OK);
    CHECK(ttl > 0 && ttl <= 300);
    /* Never unlocked: the waiter gets it when the lease runs out. */
    CHECK_INT_EQ(rlk_lock_try_lock(lw, 3000, 5000), RLK_OK);
    ms = rlk_fx_now_ms() - t0;
    CHECKF(ms >= 250 && ms < 300 + 400,
           "acquired %lld ms after a 300 ms lease was taken (max scheduling gap %lld ms)", ms,
           tk_stall_max_gap_ms(&stall));
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_lock_unlock(lw), RLK_OK);
    rlk_lock_free(l);
    rlk_lock_free(lw);
    rlk_free(c);
    rlk_free(w);
}

static void test_force_unlock(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_lock *l;
    int released = -1, locked = -1;

    REQUIRE(c);
    l = rlk_lock_new(c, "rt:force");
    REQUIRE(l);
    REQUIRE(rlk_lock_lock(l, 0) == RLK_OK);
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    CHECK_INT_EQ(rlk_lock_force_unlock(l, &released), RLK_OK);
    CHECK_INT_EQ(released, 1);
    CHECK_INT_EQ(rlk_lock_is_locked(l, &locked), RLK_OK);
    CHECK_INT_EQ(locked, 0);
    CHECK_INT_EQ(rlk_lock_force_unlock(l, &released), RLK_OK);
    CHECK_INT_EQ(released, 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_ERR_NOT_OWNER);
    rlk_lock_free(l);
    rlk_free(c);
}

static void *unlock_main(void *arg)
{
    return (void *)(long)rlk_lock_unlock(arg);
}

static void test_fixed_owner_handoff(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_lock *l;
    pthread_t t;
    void *ret;
    int locked = -1;

    REQUIRE(c);
    l = rlk_lock_new(c, "rt:handoff");
    REQUIRE(l);
    REQUIRE(rlk_lock_set_owner(l, "batch-job-1") == RLK_OK);
    REQUIRE(rlk_lock_lock(l, 10000) == RLK_OK);
    pthread_create(&t, NULL, unlock_main, l);      /* another thread, the same fixed owner */
    pthread_join(t, &ret);
    CHECK_INT_EQ((long)ret, RLK_OK);
    CHECK_INT_EQ(rlk_lock_is_locked(l, &locked), RLK_OK);
    CHECK_INT_EQ(locked, 0);
    rlk_lock_free(l);
    rlk_free(c);
}

typedef struct waiter {
    rlk_lock *lock;
    int rc;
    long long acquired_ms;
    tk_latch done;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;

    w->rc = rlk_lock_lock(w->lock, 10000);
    w->acquired_ms = rlk_fx_now_ms();
    if (w->rc == RLK_OK)
        rlk_lock_unlock(w->lock);
    tk_latch_add(&w->done, 1);
    return NULL;
}

static void test_wait_woken_by_unlock(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *wc = tk_connect(url, 0, 2);
    rlk_runtime_stats st;
    waiter w;
    pthread_t t;
    rlk_lock *l;
    long long t0;

    REQUIRE(c && wc);
    l = rlk_lock_new(c, "rt:wake");
    memset(&w, 0, sizeof w);
    w.lock = rlk_lock_new(wc, "rt:wake");
    REQUIRE(l && w.lock);
    tk_latch_init(&w.done);
    REQUIRE(rlk_lock_lock(l, 30000) == RLK_OK);
    pthread_create(&t, NULL, waiter_main, &w);
    CHECK(tk_wait_numsub(&srv, "redisson_lock__channel:{rt:wake}", 1, 5000) == 0);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(tk_latch_wait(&w.done, 1, 5000), 1);
    pthread_join(t, NULL);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECKF(w.acquired_ms - t0 < 1000, "the waiter took %lld ms after the unlock",
           w.acquired_ms - t0);
    CHECK_INT_EQ(rlk_runtime_stats_get(wc, &st), RLK_OK);
    CHECK_INT_EQ(st.ttl_wakeups, 0);
    /* A waiter that slept was woken by the unlock's permit. (An unlock that lands between the
     * waiter's SUBSCRIBE and its retry after it lets the retry win without a sleep.) */
    CHECKF(st.waits == 0 || st.wake_permits >= 1, "%llu sleeps, %llu wake permits", st.waits,
           st.wake_permits);
    /* The last waiter left: the channel is unsubscribed (bounded poll). */
    CHECK(tk_wait_numsub_at_most(&srv, "redisson_lock__channel:{rt:wake}", 0, 5000) == 0);
    tk_latch_destroy(&w.done);
    rlk_lock_free(w.lock);
    rlk_lock_free(l);
    rlk_free(wc);
    rlk_free(c);
}

/* A queued waiter attempts again every second to keep its place (RLK_LOCK_KEEPALIVE_MS) while
 * a holder with a long lease keeps the lock: those wake-ups are not the holder's TTL running out,
 * and ttl_wakeups (which operators alert on) stays 0. */
static void test_queued_keepalive_not_ttl(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *wc = tk_connect(url, 0, 2);
    rlk_runtime_stats st;
    long long calls0, until;
    waiter w;
    pthread_t t;
    rlk_lock *l;

    REQUIRE(c && wc);
    l = rlk_lock_new(c, "rt:keep");
    memset(&w, 0, sizeof w);
    w.lock = rlk_lock_new(wc, "rt:keep");
    REQUIRE(l && w.lock);
    tk_latch_init(&w.done);
    REQUIRE(rlk_lock_lock(l, 30000) == RLK_OK);
    calls0 = tk_script_calls(&srv);
    pthread_create(&t, NULL, waiter_main, &w);
    /* The waiter's single try, its queued attempt, then two keep-alive attempts (bounded poll
     * on the server's count: the time passing is what is tested, not a race). */
    until = rlk_fx_now_ms() + 15000;
    while (tk_script_calls(&srv) < calls0 + 4 && rlk_fx_now_ms() < until) {
        struct timespec ts = {0, 20 * 1000000L};

        nanosleep(&ts, NULL);
    }
    CHECKF(tk_script_calls(&srv) >= calls0 + 4, "%lld attempts in 15 s",
           tk_script_calls(&srv) - calls0);
    CHECK_INT_EQ(tk_latch_get(&w.done), 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(tk_latch_wait(&w.done, 1, 5000), 1);
    pthread_join(t, NULL);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECK_INT_EQ(rlk_runtime_stats_get(wc, &st), RLK_OK);
    CHECKF(st.waits >= 2, "%llu sleeps", st.waits);
    CHECK_INT_EQ(st.ttl_wakeups, 0);
    tk_latch_destroy(&w.done);
    rlk_lock_free(w.lock);
    rlk_lock_free(l);
    rlk_free(wc);
    rlk_free(c);
}

/* A name with a hash tag: Redisson's channel is "redisson_lock__channel:<name>"
 * (no extra braces). A release by another client that publishes there, as a
 * Redisson client would, wakes our waiter long before the holder's TTL. */
static void test_tagged_name_channel(void)
{
    const char *name = "rt:x{t}", *channel = "redisson_lock__channel:rt:x{t}";
    rlk_client *c = tk_connect(url, 0, 2), *wc = tk_connect(url, 0, 2);
    const char *acq_keys[] = {name, "rt:x{t}:rlk_waiters", "rt:x{t}:rlk_next"};
    const char *acq_args[] = {"30000", "java-client:1", "0"};
    /* Redisson's unlock, as it sends it: the lock deleted, then 0 (no grant). */
    const char *del[] = {"DEL", name}, *pub[] = {"PUBLISH", channel, "0"};
    rlk_runtime_stats st;
    redisReply *r = NULL;
    waiter w;
    pthread_t t;
    long long t0;

    REQUIRE(c && wc);
    memset(&w, 0, sizeof w);
    w.lock = rlk_lock_new(wc, name);
    REQUIRE(w.lock);
    tk_latch_init(&w.done);
    REQUIRE(rlk_eval(c, "reentrant/acquire", 3, acq_keys, 3, acq_args, &r) == RLK_OK);
    CHECK(r->type == REDIS_REPLY_NIL);
    freeReplyObject(r);
    pthread_create(&t, NULL, waiter_main, &w);
    CHECKF(tk_wait_numsub(&srv, channel, 1, 5000) == 0, "nobody subscribed to %s", channel);
    t0 = rlk_fx_now_ms();
    r = NULL;
    REQUIRE(rlk_command(c, 2, del, NULL, &r) == RLK_OK);
    CHECK(r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    freeReplyObject(r);
    r = NULL;
    REQUIRE(rlk_command(c, 3, pub, NULL, &r) == RLK_OK);
    freeReplyObject(r);
    CHECK_INT_EQ(tk_latch_wait(&w.done, 1, 5000), 1);
    pthread_join(t, NULL);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECKF(w.acquired_ms - t0 < 1000, "the waiter took %lld ms after the release (TTL 30 s)",
           w.acquired_ms - t0);
    CHECK_INT_EQ(rlk_runtime_stats_get(wc, &st), RLK_OK);
    CHECK_INT_EQ(st.ttl_wakeups, 0);
    tk_latch_destroy(&w.done);
    rlk_lock_free(w.lock);
    rlk_free(wc);
    rlk_free(c);
}

/* ------------------------------------------------------------ fairness */

#define FAIR_THREADS 4
#define FAIR_TOTAL 200

typedef struct fair {
    rlk_lock *locks[FAIR_THREADS];
    rlk_lq *q;                  /* the process-wide local queue of the lock (a reference) */
    pthread_mutex_t mu;
    pthread_barrier_t start;    /* every thread runs before the first acquisition */
    int total;
    int last;               /* thread of the previous acquisition */
    int count[FAIR_THREADS];
    int self_reacquires;    /* all of them */
    int contended;          /* acquisitions by a thread that saw local waiters queued at its unlock */
    int fifo_breaks;        /* ... taken before every one of those waiters had its turn */
    int errors;
} fair;

typedef struct fair_arg {
    fair *f;
    int idx;
    int waiting_at_unlock;  /* local waiters queued when this thread last unlocked */
    int total_at_unlock;    /* acquisitions counted by then */
} fair_arg;

static void *fair_main(void *arg)
{
    fair_arg *a = arg;
    fair *f = a->f;

    pthread_barrier_wait(&f->start);
    for (;;) {
        int stop;

        if (rlk_lock_lock(f->locks[a->idx], 10000) != RLK_OK) {
            __atomic_add_fetch(&f->errors, 1, __ATOMIC_RELAXED);
            return NULL;
        }
        pthread_mutex_lock(&f->mu);
        stop = f->total >= FAIR_TOTAL;
        if (!stop) {
            /* The waiters queued at this thread's last unlock were ahead of it in the local
             * queue when it asked again: each of them took the lock before it does. */
            if (a->waiting_at_unlock > 0) {
                f->contended++;
                f->fifo_breaks += f->total - a->total_at_unlock < a->waiting_at_unlock;
            }
            f->total++;
            f->count[a->idx]++;
            f->self_reacquires += f->last == a->idx;
            f->last = a->idx;
            a->total_at_unlock = f->total;  /* no acquisition until this thread unlocks */
        }
        pthread_mutex_unlock(&f->mu);
        tk_spin_ns(100000);
        a->waiting_at_unlock = rlk_lq_waiting(f->q);
        if (rlk_lock_unlock(f->locks[a->idx]) != RLK_OK)
            __atomic_add_fetch(&f->errors, 1, __ATOMIC_RELAXED);
        if (stop)
            return NULL;
    }
}

/* Threads of one process that ask again right after unlocking queue behind
 * the local waiters: a thread that unlocked while n local waiters were
 * queued takes the lock again only after n acquisitions by the others (each
 * of those waiters had its turn first). That is the rule the local queue
 * makes, and the test asserts it for every acquisition. How evenly the
 * acquisitions spread (the Jain index, printed) is not judged: a thread may
 * take the lock again when nobody was queued at its unlock, and on a loaded
 * machine the others can be descheduled between their unlock and their next
 * lock call, so the spread measures the scheduler as much as the lock (Jain
 * 0.92..1.00 seen with both CPUs kept busy; 13 of 200 self re-acquisitions
 * at load 8). */
static void test_local_fifo(void)
{
    rlk_client *clients[FAIR_THREADS];
    pthread_t t[FAIR_THREADS];
    fair_arg args[FAIR_THREADS];
    fair f;
    double sum = 0, sq = 0, jain;

    memset(&f, 0, sizeof f);
    f.last = -1;
    pthread_mutex_init(&f.mu, NULL);
    pthread_barrier_init(&f.start, NULL, FAIR_THREADS);
    for (int i = 0; i < FAIR_THREADS; i++) {
        clients[i] = tk_connect(url, 0, 1);
        REQUIRE(clients[i]);
        f.locks[i] = rlk_lock_new(clients[i], "rt:fair");
        REQUIRE(f.locks[i]);
    }
    f.q = rlk_lq_get(clients[0]->addr, clients[0]->url.db, "rt:fair");
    REQUIRE(f.q);
    for (int i = 0; i < FAIR_THREADS; i++) {
        args[i].f = &f;
        args[i].idx = i;
        args[i].waiting_at_unlock = 0;
        args[i].total_at_unlock = 0;
        pthread_create(&t[i], NULL, fair_main, &args[i]);
    }
    for (int i = 0; i < FAIR_THREADS; i++)
        pthread_join(t[i], NULL);
    for (int i = 0; i < FAIR_THREADS; i++) {
        sum += f.count[i];
        sq += (double)f.count[i] * f.count[i];
    }
    jain = sq > 0 ? sum * sum / (FAIR_THREADS * sq) : 0;
    printf("  local fifo: %d acquisitions by %d threads (%d/%d/%d/%d), jain %.3f, "
           "%d self re-acquisitions; %d after an unlock with local waiters queued, %d of them "
           "before every such waiter had its turn\n", f.total, FAIR_THREADS, f.count[0],
           f.count[1], f.count[2], f.count[3], jain, f.self_reacquires, f.contended,
           f.fifo_breaks);
    CHECK_INT_EQ(f.errors, 0);
    CHECK_INT_EQ(f.total, FAIR_TOTAL);
    CHECKF(f.contended > 0, "no thread ever unlocked with local waiters queued: nothing judged");
    CHECKF(f.fifo_breaks == 0, "%d acquisitions before the local waiters queued at the thread's "
           "unlock had their turn", f.fifo_breaks);
    rlk_lq_put(f.q);
    for (int i = 0; i < FAIR_THREADS; i++) {
        rlk_lock_free(f.locks[i]);
        rlk_free(clients[i]);
    }
    pthread_mutex_destroy(&f.mu);
    pthread_barrier_destroy(&f.start);
}

static void test_bad_arguments(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_lock *l;
    redisReply *r;
    int locked = 0;

    REQUIRE(c);
    CHECK(rlk_lock_new(c, "") == NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);
    CHECK(rlk_lock_new(c, NULL) == NULL);
    CHECK_INT_EQ(rlk_lock_try_lock(NULL, 0, 0), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_unlock(NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_is_locked(NULL, &locked), RLK_ERR_ARG);
    l = rlk_lock_new(c, "rt:bad");
    REQUIRE(l);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 1000000000001LL), RLK_ERR_ARG);
    /* A key of another type: the script refuses, nothing changes. */
    r = rlk_fx_command(&srv, "SET rt:bad x");
    if (r)
        freeReplyObject(r);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 1000), RLK_ERR_SCRIPT);
    CHECK_STR_CONTAINS(rlk_errstr(c), "RLK_WRONGTYPE");
    r = rlk_fx_command(&srv, "GET rt:bad");
    CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "x") == 0);
    if (r)
        freeReplyObject(r);
    rlk_lock_free(l);
    rlk_free(c);
}

int main(void)
{
    if (tk_suite_start("rt_basic", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_owner_ids);
    RUN_TEST(test_reentrancy);
    RUN_TEST(test_not_owner);
    RUN_TEST(test_try_lock_busy);
    RUN_TEST(test_lease_expires);
    RUN_TEST(test_force_unlock);
    RUN_TEST(test_fixed_owner_handoff);
    RUN_TEST(test_wait_woken_by_unlock);
    RUN_TEST(test_tagged_name_channel);
    RUN_TEST(test_queued_keepalive_not_ttl);
    RUN_TEST(test_local_fifo);
    RUN_TEST(test_bad_arguments);
    tk_suite_stop(&srv, &stall);
    return check_summary("rt_basic");
}
