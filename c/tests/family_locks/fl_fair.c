/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_fair.c - the fair lock (rlk_fairlock_*) against a real redis-server:
 *   - basics: names, re-entry, busy answers that leave the queue (a single
 *     try and a wait that runs out both cancel), not-owner, force unlock;
 *   - a waiter sleeps on its own channel and the release wakes it there;
 *   - the watchdog renews with fair/renew and reports a deleted lock lost
 *     (kind RLK_KIND_FAIR);
 *   - FIFO: 12 waiters in 4 processes, queued one after another (each seen
 *     in the queue with LINDEX before the next starts), acquire in that
 *     order once the holder releases: 0 inversions, 0 overlaps;
 *   - killed waiters: 8 waiters (one per process, thread wait time 600 ms),
 *     3 of them SIGKILLed at random while queued; the survivors still acquire
 *     in queue order, each no later than the deadline of the dead waiters
 *     just ahead of it (their score in the timeout set before the kill, moved
 *     up a thread wait time by each acquisition ahead of them) plus half a
 *     thread wait time (a queued waiter's poll period) and scheduling slack.
 *
 * Child mode (argv[1]): waiters URL SLOTS THREAD_WAIT_MS NAME. Commands on
 * stdin: "go <slot>" starts the waiter of that slot ("owner <slot> <id>"
 * first, then "acq <slot> <rc> <seq> <acq_ns> <rel_ns>" once it held the
 * lock); "quit" joins them and exits.
 */
#include "check.h"
#include "fl_util.h"
#include "runtime/rt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ child: waiters */

#define SLOTS_MAX 8

typedef struct waiter {
    rlk_client *c;
    rlk_fairlock *lock;
    int slot;
} waiter;

/* The next value of the test's sequence counter, inside the critical section. */
static long long next_seq(rlk_client *c, const char *name)
{
    char key[160];
    const char *argv[2] = {"INCR", key};
    redisReply *r = NULL;
    long long v = -1;

    snprintf(key, sizeof key, "seq:%s", name);
    if (rlk_command(c, 2, argv, NULL, &r) == RLK_OK && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r)
        freeReplyObject(r);
    return v;
}

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    char owner[RLK_OWNER_MAX + 1];
    long long seq = 0, acq = 0, rel = 0;
    int rc;

    if (rlk_fairlock_owner(w->lock, owner, sizeof owner) != RLK_OK)
        snprintf(owner, sizeof owner, "?");
    tk_say("owner %d %s", w->slot, owner);
    rc = rlk_fairlock_try_lock(w->lock, 20000, 5000);
    if (rc == RLK_OK) {
        acq = rlk_fx_now_ns();
        seq = next_seq(w->c, rlk_fairlock_name(w->lock));
        tk_spin_ns(2000000);
        rel = rlk_fx_now_ns();
        if (rlk_fairlock_unlock(w->lock) != RLK_OK)
            rc = -1;
    } else {
        fprintf(stderr, "  waiter %d: %s\n", w->slot, rlk_errstr(w->c));
    }
    tk_say("acq %d %d %lld %lld %lld", w->slot, rc, seq, acq, rel);
    return NULL;
}

static int child_waiters(const char *curl, int slots, long long thread_wait, const char *name)
{
    rlk_client *c = tk_connect(curl, 0, slots);
    rlk_fairlock *f = c ? rlk_fairlock_new(c, name) : NULL;
    waiter w[SLOTS_MAX];
    pthread_t t[SLOTS_MAX];
    int started[SLOTS_MAX] = {0};
    char line[64];

    if (!f || slots > SLOTS_MAX || rlk_fairlock_set_thread_wait(f, thread_wait) != RLK_OK)
        return 2;
    tk_say("ready");
    while (fgets(line, sizeof line, stdin) && strncmp(line, "go ", 3) == 0) {
        int s = atoi(line + 3);

        if (s < 0 || s >= slots || started[s])
            return 2;
        w[s] = (waiter){c, f, s};
        started[s] = pthread_create(&t[s], NULL, waiter_main, &w[s]) == 0;
    }
    for (int s = 0; s < slots; s++)
        if (started[s])
            pthread_join(t[s], NULL);
    rlk_fairlock_free(f);
    rlk_free(c);
    return 0;
}

static int child_main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "waiters") == 0)
        return child_waiters(argv[2], atoi(argv[3]), atoll(argv[4]), argv[5]);
    fprintf(stderr, "fl_fair: unknown child mode\n");
    return 2;
}

/* ------------------------------------------------------------ basics */

static void test_basics(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_fairlock *a, *b, *t;
    long long n = -1, start;
    int held = -1, released = -1;

    REQUIRE(c);
    a = rlk_fairlock_new(c, "fa:basic");
    b = rlk_fairlock_new(c, "fa:basic");
    t = rlk_fairlock_new(c, "fa:{t}x");
    REQUIRE(a && b && t);
    REQUIRE(rlk_fairlock_set_owner(a, "A") == RLK_OK && rlk_fairlock_set_owner(b, "B") == RLK_OK);
    CHECK_STR_EQ(rlk_fairlock_queue_name(a), "redisson_lock_queue:{fa:basic}");
    CHECK_STR_EQ(rlk_fairlock_timeout_name(a), "redisson_lock_timeout:{fa:basic}");
    CHECK_STR_EQ(rlk_fairlock_queue_name(t), "redisson_lock_queue:fa:{t}x");
    CHECK(rlk_fairlock_new(c, "") == NULL);
    CHECK_INT_EQ(rlk_fairlock_set_thread_wait(a, 1000000000001LL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fairlock_set_thread_wait(a, -1), RLK_OK);

    CHECK_INT_EQ(rlk_fairlock_try_lock(a, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_lock(a, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_hold_count(a, &n), RLK_OK);
    CHECK_INT_EQ(n, 2);
    CHECK_INT_EQ(rlk_fairlock_is_held_by_me(a, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);

    /* A single try and a wait that runs out: busy, and out of the queue. */
    CHECK_INT_EQ(rlk_fairlock_try_lock(b, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_fairlock_queue_length(b, &n), RLK_OK);
    CHECK_INT_EQ(n, 0);
    start = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fairlock_try_lock(b, 200, 5000), RLK_ERR_BUSY);
    CHECK(rlk_fx_now_ms() - start >= 190);
    CHECK_INT_EQ(rlk_fairlock_queue_length(b, &n), RLK_OK);
    CHECK_INT_EQ(n, 0);
    CHECK_INT_EQ(tk_int(&srv, "ZCARD %s", "redisson_lock_timeout:{fa:basic}"), 0);
    CHECK_INT_EQ(rlk_fairlock_is_held_by_me(b, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);

    CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_fairlock_is_locked(a, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);

    /* Force unlock. */
    CHECK_INT_EQ(rlk_fairlock_try_lock(a, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_remaining_ttl(a, &n), RLK_OK);
    CHECK(n > 0 && n <= 5000);
    CHECK_INT_EQ(rlk_fairlock_force_unlock(b, &released), RLK_OK);
    CHECK_INT_EQ(released, 1);
    CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_fairlock_try_lock(b, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_fairlock_unlock(b), RLK_OK);
    rlk_fairlock_free(a);
    rlk_fairlock_free(b);
    rlk_fairlock_free(t);
    rlk_free(c);
}

/* ------------------------------------------------------------ own channel */

static int fa_wait_lock(void *l)
{
    return rlk_fairlock_try_lock(l, 10000, 5000);
}

static int fa_unlock(void *l)
{
    return rlk_fairlock_unlock(l);
}

static void test_own_channel(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    rlk_fairlock *a, *b;
    fl_waiter w;
    long long woken;
    int rc = -1;

    REQUIRE(c && c2);
    a = rlk_fairlock_new(c, "fa:wake");
    b = rlk_fairlock_new(c2, "fa:wake");
    REQUIRE(a && b);
    REQUIRE(rlk_fairlock_set_owner(b, "fa-b") == RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_try_lock(a, 0, 20000), RLK_OK);
    REQUIRE(fl_waiter_start(&w, fa_wait_lock, b) == 0);
    /* It waits first in the queue, on its own channel, not the lock's. */
    CHECK(tk_wait_numsub(&srv, "redisson_lock__channel:{fa:wake}:fa-b", 1, 5000) == 0);
    CHECK(fl_wait_lindex(&srv, "redisson_lock_queue:{fa:wake}", 0, "fa-b", 5000) == 0);
    CHECK_INT_EQ(tk_numsub(&srv, "redisson_lock__channel:{fa:wake}"), 0);
    woken = fl_waiter_woken(&w, &srv, "redisson_lock__channel:{fa:wake}:fa-b", &stall, fa_unlock,
                            a, &rc);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECKF(woken >= 0 && woken <= 500, "fair waiter woken %lld ms after the release (holder's "
           "lease 20000 ms)%s", woken, tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_fairlock_unlock(b), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "LLEN %s", "redisson_lock_queue:{fa:wake}"), 0);
    rlk_fairlock_free(b);
    rlk_fairlock_free(a);
    rlk_free(c);
    rlk_free(c2);
}

/* ------------------------------------------------------------ watchdog */

#define WD_LEASE 900     /* renewed every 300 ms: a renewal has 600 ms of room on a loaded machine */

static void test_watchdog_and_lost(void)
{
    rlk_client *c = tk_connect(url, WD_LEASE, 2);
    rlk_runtime_stats st;
    rlk_fairlock *f;
    tk_lost_rec g;
    long long ttl;
    int held = -1;

    REQUIRE(c);
    tk_lost_init(&g);
    tk_lost_install(c, &g);
    f = rlk_fairlock_new(c, "fa:wd");
    REQUIRE(f);
    REQUIRE_INT_EQ(rlk_fairlock_lock(f, 0), RLK_OK);
    rlk_fx_sleep_ms(4 * WD_LEASE);      /* four leases: only renewals keep it */
    ttl = tk_int(&srv, "PTTL %s", "fa:wd");
    CHECKF(ttl > 0 && ttl <= WD_LEASE, "PTTL %lld after four leases", ttl);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    CHECKF(st.renew_calls >= 3, "%llu renewals", st.renew_calls);
    CHECK_INT_EQ(st.renew_errors, 0);
    CHECK_INT_EQ(tk_int(&srv, "DEL %s", "fa:wd"), 1);
    CHECK(tk_latch_wait(&g.fired, 1, 3000) == 1);
    CHECK_INT_EQ(g.kind, RLK_KIND_FAIR);
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    CHECK_STR_EQ(g.name, "fa:wd");
    CHECK_INT_EQ(g.plain_count, 1);
    CHECK_INT_EQ(rlk_fairlock_is_held_by_me(f, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_fairlock_unlock(f), RLK_ERR_NOT_OWNER);
    rlk_fairlock_free(f);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* ------------------------------------------------------------ queued waiters */

#define WAITERS_MAX 16

/* One queued waiter, as the parent sees it. */
typedef struct queued {
    int kid;                    /* child process */
    int slot;                   /* waiter slot in that child */
    char owner[128];
    int dead;
    long long deadline_ns;      /* dead ones: their deadline on the monotonic clock */
    int rc;
    long long seq, acq_ns, rel_ns;
} queued;

typedef struct fair_run {
    const char *name;
    char queue_key[160];
    tk_child kids[WAITERS_MAX];
    int nkids;
    queued q[WAITERS_MAX];
    int n;
} fair_run;

static int spawn_waiters(fair_run *run, int nkids, int slots, long long thread_wait)
{
    char s_slots[8], s_wait[24];
    const char *args[] = {"waiters", url, s_slots, s_wait, run->name, NULL};
    char line[64];

    snprintf(s_slots, sizeof s_slots, "%d", slots);
    snprintf(s_wait, sizeof s_wait, "%lld", thread_wait);
    snprintf(run->queue_key, sizeof run->queue_key, "redisson_lock_queue:{%s}", run->name);
    for (run->nkids = 0; run->nkids < nkids; run->nkids++) {
        tk_child *k = &run->kids[run->nkids];

        if (tk_child_spawn(k, args) != 0)
            return -1;
        if (tk_child_read_line(k, line, sizeof line, 15000) != 0 || strcmp(line, "ready") != 0)
            return -1;
    }
    return 0;
}

/* Starts waiter k (child kid, slot) and waits until it is k-th in the queue. */
static int queue_one(fair_run *run, int k, int kid, int slot)
{
    queued *w = &run->q[k];
    char cmd[32], line[256];
    int got_slot = -1;

    w->kid = kid;
    w->slot = slot;
    snprintf(cmd, sizeof cmd, "go %d", slot);
    if (tk_child_send(&run->kids[kid], cmd) != 0 ||
        tk_child_read_line(&run->kids[kid], line, sizeof line, 5000) != 0 ||
        sscanf(line, "owner %d %127s", &got_slot, w->owner) != 2 || got_slot != slot)
        return -1;
    return fl_wait_lindex(&srv, run->queue_key, k, w->owner, 5000);
}

/* Reads the "acq" line of every live waiter. */
static void collect(fair_run *run)
{
    for (int k = 0; k < run->n; k++)
        run->q[k].rc = -99;
    for (int k = 0; k < run->n; k++) {
        queued *w = &run->q[k];

        if (w->dead)
            continue;
        for (int tries = 0; tries < run->n && w->rc == -99; tries++) {
            char line[256];
            int slot = -1, rc = 0;
            long long seq = 0, acq = 0, rel = 0;

            if (tk_child_read_line(&run->kids[w->kid], line, sizeof line, 30000) != 0)
                break;
            if (sscanf(line, "acq %d %d %lld %lld %lld", &slot, &rc, &seq, &acq, &rel) != 5)
                continue;
            for (int j = 0; j < run->n; j++) {      /* a line of another slot of the same child */
                queued *o = &run->q[j];

                if (o->kid == w->kid && o->slot == slot) {
                    o->rc = rc;
                    o->seq = seq;
                    o->acq_ns = acq;
                    o->rel_ns = rel;
                }
            }
        }
    }
}

static void finish(fair_run *run)
{
    for (int p = 0; p < run->nkids; p++) {
        if (run->kids[p].pid > 0 && tk_child_send(&run->kids[p], "quit") == 0)
            CHECKF(tk_child_wait(&run->kids[p], 10000) == 0, "child %d did not exit cleanly", p);
        tk_child_kill(&run->kids[p]);
    }
}

/* Pairs of live waiters that acquired in the other order than they queued. */
static int inversions(const fair_run *run)
{
    int bad = 0;

    for (int i = 0; i < run->n; i++)
        for (int j = i + 1; j < run->n; j++)
            if (!run->q[i].dead && !run->q[j].dead && run->q[i].seq > run->q[j].seq)
                bad++;
    return bad;
}

static int live_ok(const fair_run *run)
{
    int ok = 0;

    for (int k = 0; k < run->n; k++)
        ok += !run->q[k].dead && run->q[k].rc == RLK_OK;
    return ok;
}

/* Overlapping holds of live waiters (the one checker, support/holdlog.h). */
static int overlaps(const fair_run *run)
{
    tk_hold h[WAITERS_MAX];
    size_t n = 0;

    for (int k = 0; k < run->n; k++)
        if (!run->q[k].dead)
            h[n++] = (tk_hold){.pid = run->kids[run->q[k].kid].pid, .thread = run->q[k].slot,
                               .kind = TK_HOLD_EXCL, .start_ns = run->q[k].acq_ns,
                               .end_ns = run->q[k].rel_ns, .value = run->q[k].seq};
    return (int)tk_holds_check(h, n, 1).conflicts;
}

#define FIFO_PROCS 4
#define FIFO_SLOTS 3

static void test_fifo(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_fairlock *h = c ? rlk_fairlock_new(c, "fa:fifo") : NULL;
    fair_run run;
    int queued_ok = 0, inv;
    long long t0;

    memset(&run, 0, sizeof run);
    run.name = "fa:fifo";
    REQUIRE(h);
    REQUIRE_INT_EQ(rlk_fairlock_try_lock(h, 0, 30000), RLK_OK);
    if (spawn_waiters(&run, FIFO_PROCS, FIFO_SLOTS, 0) != 0) {
        CHECK(!"cannot start the waiter processes");
        finish(&run);
        return;
    }
    /* Interleaved over the processes: k-th waiter = process k % P, slot k / P. */
    for (run.n = 0; run.n < FIFO_PROCS * FIFO_SLOTS; run.n++)
        if (queue_one(&run, run.n, run.n % FIFO_PROCS, run.n / FIFO_PROCS) == 0)
            queued_ok++;
        else
            break;
    CHECK_INT_EQ(queued_ok, FIFO_PROCS * FIFO_SLOTS);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fairlock_unlock(h), RLK_OK);
    collect(&run);
    inv = inversions(&run);
    printf("  fair FIFO: %d waiters in %d processes acquired in %lld ms; %d FIFO inversions, "
           "%d overlaps\n", live_ok(&run), FIFO_PROCS, rlk_fx_now_ms() - t0, inv, overlaps(&run));
    CHECK_INT_EQ(live_ok(&run), run.n);
    CHECK_INT_EQ(inv, 0);
    CHECK_INT_EQ(overlaps(&run), 0);
    CHECK_INT_EQ(tk_int(&srv, "LLEN %s", run.queue_key), 0);
    finish(&run);
    rlk_fairlock_free(h);
    rlk_free(c);
}

#define KILL_WAITERS 8
#define KILL_COUNT 3
#define KILL_THREAD_WAIT 600
#define KILL_HOLD_LEASE 3000    /* doubled on each new attempt */
#define KILL_ATTEMPTS 4
#define KILL_SLACK_MS (KILL_THREAD_WAIT / 2 + 400)

/* Picks KILL_COUNT distinct waiters among the first KILL_WAITERS - 1 (the
 * last one always lives, so every dead waiter has a survivor behind it). */
static void pick_victims(fair_run *run, unsigned seed)
{
    for (int picked = 0; picked < KILL_COUNT;) {
        int k = (int)(tk_rand(&seed) % (KILL_WAITERS - 1));

        if (!run->q[k].dead) {
            run->q[k].dead = 1;
            picked++;
        }
    }
}

/* Kills the victims, first reading each one's deadline (server time) and
 * converting it to the monotonic clock. */
static void kill_victims(fair_run *run)
{
    char timeouts[160];

    snprintf(timeouts, sizeof timeouts, "redisson_lock_timeout:{%s}", run->name);
    for (int k = 0; k < run->n; k++) {
        queued *w = &run->q[k];
        long long server_now, mono_now, deadline;

        if (!w->dead)
            continue;
        server_now = tk_server_ms(&srv);
        mono_now = rlk_fx_now_ns();
        deadline = tk_int(&srv, "ZSCORE %s %s", timeouts, w->owner);
        w->deadline_ns = mono_now + (deadline - server_now) * 1000000LL;
        tk_child_kill(&run->kids[w->kid]);
    }
}

/* A dead waiter's deadline when it came to matter: every live waiter ahead of
 * it moved it up by a thread wait time when it acquired (fair/acquire). */
static long long dead_deadline_ns(const fair_run *run, int k)
{
    long long moved = 0;

    for (int j = 0; j < k; j++)
        moved += !run->q[j].dead;
    return run->q[k].deadline_ns - moved * KILL_THREAD_WAIT * 1000000LL;
}

/* Survivors that acquired later than their bound: the later of the previous
 * survivor's release and the deadline of the dead waiters just ahead, plus
 * KILL_SLACK_MS (half a thread wait: the poll period of a queued waiter). */
static int late_survivors(const fair_run *run, long long released_ns)
{
    long long prev_rel = released_ns, dead_until = -1;
    int late = 0;

    for (int k = 0; k < run->n; k++) {
        const queued *w = &run->q[k];
        long long from;

        if (w->dead) {
            long long d = dead_deadline_ns(run, k);

            dead_until = d > dead_until ? d : dead_until;
            continue;
        }
        from = prev_rel > dead_until ? prev_rel : dead_until;
        printf("    waiter %d: acquired %.0f ms after the release, %.0f ms after %s\n", k,
               (w->acq_ns - released_ns) / 1e6, (w->acq_ns - from) / 1e6,
               dead_until >= 0 ? "the dead waiters' deadline" : "its turn");
        if (w->rc == RLK_OK && w->acq_ns > from + KILL_SLACK_MS * 1000000LL)
            late++;
        prev_rel = w->rel_ns;
        dead_until = -1;
    }
    return late;
}

/* One attempt at the killed-waiters scene: the waiter processes start, the
 * holder takes the lock with the given lease, KILL_WAITERS waiters queue
 * behind it and the victims die; then the holder releases. The lease only
 * has to outlast that setup, whose length this test does not control (a
 * loaded machine): 1 when the hold ran out before its release (the caller
 * tries again with a longer lease), 0 when the scene ran, -1 on a failure. */
static int killed_waiters_run(rlk_fairlock *h, fair_run *run, long long lease, unsigned seed)
{
    long long released_ns;
    int late, inv, queued_ok = 0, rc;

    memset(run, 0, sizeof *run);
    run->name = "fa:kill";
    if (spawn_waiters(run, KILL_WAITERS, 1, KILL_THREAD_WAIT) != 0) {
        CHECK(!"cannot start the waiter processes");
        return -1;
    }
    if (!CHECK_INT_EQ(rlk_fairlock_try_lock(h, 0, lease), RLK_OK))
        return -1;
    for (run->n = 0; run->n < KILL_WAITERS; run->n++)
        if (queue_one(run, run->n, run->n, 0) == 0)
            queued_ok++;
        else
            break;
    if (queued_ok < KILL_WAITERS) {
        int held = -1;

        if (rlk_fairlock_is_held_by_me(h, &held) == RLK_OK && !held)
            return 1;
        CHECK_INT_EQ(queued_ok, KILL_WAITERS);
        return -1;
    }
    pick_victims(run, seed);
    kill_victims(run);
    printf("  fair killed waiters (seed %u, hold lease %lld ms): killed", seed, lease);
    for (int k = 0; k < run->n; k++)
        if (run->q[k].dead)
            printf(" %d", k);
    printf(" of %d queued (thread wait %d ms)\n", run->n, KILL_THREAD_WAIT);
    tk_stall_reset(&stall);
    released_ns = rlk_fx_now_ns();
    rc = rlk_fairlock_unlock(h);
    if (rc == RLK_ERR_NOT_OWNER)
        return 1;
    CHECK_INT_EQ(rc, RLK_OK);
    collect(run);
    late = late_survivors(run, released_ns);
    inv = inversions(run);
    printf("  fair killed waiters: %d survivors acquired, %d FIFO inversions, %d late, %d "
           "overlaps\n", live_ok(run), inv, late, overlaps(run));
    CHECK_INT_EQ(live_ok(run), KILL_WAITERS - KILL_COUNT);
    CHECK_INT_EQ(inv, 0);
    CHECK_INT_EQ(overlaps(run), 0);
    CHECKF(late == 0, "%d survivors acquired after their bound (max scheduling gap %lld ms%s)",
           late, tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    return 0;
}

static void test_killed_waiters(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_fairlock *h = c ? rlk_fairlock_new(c, "fa:kill") : NULL;
    unsigned seed = (unsigned)time(NULL) ^ (unsigned)getpid();
    long long lease = KILL_HOLD_LEASE;
    fair_run run;
    int rc = 1;

    REQUIRE(h);
    for (int attempt = 0; attempt < KILL_ATTEMPTS && rc == 1; attempt++, lease *= 2) {
        rc = killed_waiters_run(h, &run, lease, seed);
        finish(&run);
        if (rc == 1) {
            printf("  fair killed waiters: the %lld ms hold ran out before the scene was set "
                   "(max scheduling gap %lld ms); again with a longer one\n", lease,
                   tk_stall_max_gap_ms(&stall));
            tk_int(&srv, "DEL %s", "fa:kill");
            tk_int(&srv, "DEL %s", run.queue_key);
            tk_int(&srv, "DEL %s", "redisson_lock_timeout:{fa:kill}");
        }
    }
    CHECKF(rc == 0, "no attempt set the scene within its hold (last lease %lld ms)", lease / 2);
    rlk_fairlock_free(h);
    rlk_free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child_main(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    if (tk_suite_start("fl_fair", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_basics);
    RUN_TEST(test_own_channel);
    RUN_TEST(test_watchdog_and_lost);
    RUN_TEST(test_fifo);
    RUN_TEST(test_killed_waiters);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_fair");
}
