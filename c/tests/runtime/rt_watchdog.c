/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_watchdog.c - the watchdog: it keeps a lease-less lock alive for many
 * leases, renews many locks per call, keeps a reentrant hold until the last
 * unlock, never renews a released lock (unlock racing renewals), and
 * reports a lost lock once: RLK_LOST_GONE when the key was deleted behind
 * its back, RLK_LOST_EXPIRED when renewals failed until the lease ran out;
 * messages on the lock channel (the force-unlock listener's nudges) only
 * renew at once, even while the holder unlocks and re-locks.
 */
#include "check.h"
#include "tk_util.h"
#include "runtime/rt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;
static tk_srv_stall srv_stall;     /* the server's side: see test_unlock_races_renewals */

static long long pttl(const char *key)
{
    long long v = tk_int(&srv, "PTTL %s", key);

    return v == -999 ? -3 : v;
}

static const char *stall_note(void)
{
    return tk_stall_max_gap_ms(&stall) > TK_STALL_MS ? " - a scheduling stall, not a watchdog bug"
                                                     : "";
}

/* This process's longest scheduling gap plus the server's longest PING round
 * trip since both were reset: the two add up (a renewal sent late by a
 * stalled client, then read late by a stalled server). */
static long long stall_ms(void)
{
    return tk_stall_max_gap_ms(&stall) + tk_srv_stall_max_ms(&srv_stall);
}

static void stall_reset(void)
{
    tk_stall_reset(&stall);
    tk_srv_stall_reset(&srv_stall);
}

/* ------------------------------------------------------------ tests */

#define LEASE_ALIVE 400
#define ALIVE_TRIES 3

/* One observation of a watchdog hold for 5 leases (+ a third): the key must never be missing.
 * Returns the probes that found it missing; *renewals: the renewal calls made meanwhile. */
static long long keep_alive_once(rlk_client *c, rlk_lock *l, long long *renewals)
{
    rlk_runtime_stats st;
    long long t0, min_ttl = LEASE_ALIVE, probes = 0, misses = 0;
    unsigned long long before;

    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    before = st.renew_calls;
    if (rlk_lock_lock(l, 0) != RLK_OK) {
        CHECKF(0, "lock: %s", rlk_errstr(c));
        return -1;
    }
    t0 = rlk_fx_now_ms();
    stall_reset();
    while (rlk_fx_now_ms() - t0 < 5 * LEASE_ALIVE + LEASE_ALIVE / 3) {
        long long v = pttl("wd:alive");
        int held = 0;

        probes++;
        if (v <= 0 || rlk_lock_is_held_by_me(l, &held) != RLK_OK || !held)
            misses++;
        else if (v < min_ttl)
            min_ttl = v;
        rlk_fx_sleep_ms(20);    /* the observation interval */
    }
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    *renewals = (long long)(st.renew_calls - before);
    printf("  watchdog: %lld probes over %lld ms (5 leases of %d ms), lowest PTTL %lld ms, "
           "%lld renewals, %lld missing, stalls %lld ms\n", probes, rlk_fx_now_ms() - t0,
           LEASE_ALIVE, min_ttl, *renewals, misses, stall_ms());
    return misses;
}

/* A renewal every third of the lease keeps the key through any stall shorter than two thirds
 * of it. A stall of this process plus the server's longer than that (measured: 380 ms here under
 * two whole suites) can let the key expire whatever the watchdog does: such an observation is
 * made again (ALIVE_TRIES in all); a key missing without one fails at once. */
static void test_keeps_alive_five_leases(void)
{
    rlk_client *c = tk_connect(url, LEASE_ALIVE, 2);
    tk_lost_rec g;
    rlk_lock *l;
    long long misses = 1, renewals = 0;
    int tries = 0;

    REQUIRE(c);
    tk_lost_init(&g);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    l = rlk_lock_new(c, "wd:alive");
    REQUIRE(l);
    while (misses > 0 && tries++ < ALIVE_TRIES) {
        int lost = tk_latch_get(&g.fired);

        misses = keep_alive_once(c, l, &renewals);
        if (misses <= 0)
            break;
        CHECKF(stall_ms() >= 2 * LEASE_ALIVE / 3, "the lock was missing at %lld probes with "
               "stalls of %lld ms only (max scheduling gap %lld ms%s)", misses, stall_ms(),
               tk_stall_max_gap_ms(&stall), stall_note());
        if (stall_ms() < 2 * LEASE_ALIVE / 3)
            break;
        printf("  a stall of %lld ms spoiled this observation: again\n", stall_ms());
        /* The hold ended with the stall (its loss is reported): unlocked, or already gone. */
        (void)rlk_lock_unlock(l);
        CHECK(tk_latch_wait(&g.fired, lost + 1, 3000) > lost);
    }
    CHECKF(misses == 0, "the lock was missing in %d observation(s) of %d", tries, ALIVE_TRIES);
    CHECK(renewals >= 10);
    if (misses == 0)
        CHECK_INT_EQ(tk_latch_get(&g.fired), tries - 1);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, "wd:alive"), 0);
    /* Released: no renewal brings it back, nothing more is reported lost. */
    rlk_fx_sleep_ms(2 * LEASE_ALIVE / 3);
    CHECK_INT_EQ(tk_key_exists(&srv, "wd:alive"), 0);
    CHECK_INT_EQ(tk_latch_get(&g.fired), tries - 1);
    rlk_lock_free(l);
    rlk_free(c);
    tk_lost_destroy(&g);
}

#define LEASE_LOST 300

static void test_lost_when_deleted(void)
{
    rlk_client *c = tk_connect(url, LEASE_LOST, 2);
    char owner[128];
    redisReply *r;
    tk_lost_rec g;
    rlk_lock *l;
    long long t_del, waited;
    int held = -1;

    REQUIRE(c);
    tk_lost_init(&g);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    l = rlk_lock_new(c, "wd:deleted");
    REQUIRE(l);
    REQUIRE(rlk_lock_lock(l, 0) == RLK_OK);
    REQUIRE(rlk_lock_owner(l, owner, sizeof owner) == RLK_OK);
    tk_stall_reset(&stall);
    t_del = rlk_fx_now_ms();
    r = rlk_fx_command(&srv, "DEL wd:deleted");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (r)
        freeReplyObject(r);
    waited = tk_lost_ms_after(&g, t_del * 1000000, 3000);
    CHECK(waited >= 0);
    printf("  lost callback %lld ms after DEL (renewal period %d ms)\n", waited, LEASE_LOST / 3);
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    CHECK_STR_EQ(g.name, "wd:deleted");
    CHECK_STR_EQ(g.owner, owner);
    CHECKF(waited <= LEASE_LOST / 3 + 250, "told %lld ms after the DEL (max scheduling gap %lld ms%s)",
           waited, tk_stall_max_gap_ms(&stall), stall_note());
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    /* Once per lost lock, and the lock is never re-created. */
    rlk_fx_sleep_ms(LEASE_LOST);
    CHECK_INT_EQ(tk_latch_get(&g.fired), 1);
    CHECK_INT_EQ(tk_key_exists(&srv, "wd:deleted"), 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_ERR_NOT_OWNER);
    /* Taken again, it is held (and renewed) again. */
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    rlk_lock_free(l);
    rlk_free(c);
    tk_lost_destroy(&g);
}

#define LEASE_EXPIRE 600

static void test_expired_when_renewals_fail(void)
{
    rlk_fx_server s2;
    rlk_runtime_stats st;
    char url2[128];
    rlk_client *c;
    tk_lost_rec g;
    rlk_lock *l;
    long long t_crash, waited, period = LEASE_EXPIRE / 3;
    int held = -1;

    REQUIRE(rlk_fx_start(&s2, NULL) == 0);
    REQUIRE(rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    c = tk_connect(url2, LEASE_EXPIRE, 2);
    tk_lost_init(&g);
    l = c ? rlk_lock_new(c, "wd:expire") : NULL;
    if (!l) {
        CHECK(l != NULL);
        rlk_free(c);
        rlk_fx_stop(&s2);
        tk_lost_destroy(&g);
        return;
    }
    rlk_set_lost_callback(c, tk_on_lost, &g);
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    tk_stall_reset(&stall);
    t_crash = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fx_crash(&s2), 0);
    waited = tk_lost_ms_after(&g, t_crash * 1000000, 5000);
    CHECK(waited >= 0);
    printf("  lost (expired) %lld ms after the server died (lease %d ms, period %lld ms)\n",
           waited, LEASE_EXPIRE, period);
    CHECK_INT_EQ(g.reason, RLK_LOST_EXPIRED);
    CHECK_STR_EQ(g.name, "wd:expire");
    /* The last good renewal was sent at most a period before the crash; the
     * loss is declared once its lease ran out, not before. */
    CHECKF(waited >= LEASE_EXPIRE - period - 50, "declared lost %lld ms after the crash: too early",
           waited);
    CHECKF(waited <= LEASE_EXPIRE + 300, "declared lost %lld ms after the crash (max scheduling gap "
           "%lld ms%s)", waited, tk_stall_max_gap_ms(&stall), stall_note());
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);     /* no I/O: known lost */
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    CHECK(st.renew_errors >= 1);
    CHECK_INT_EQ(st.locks_lost, 1);
    rlk_lock_free(l);
    rlk_free(c);
    rlk_fx_stop(&s2);
    tk_lost_destroy(&g);
}

/* A hung server (SIGSTOP): renewals time out after a period, not after the
 * command timeout, so the loss is declared when the lease has run out. */
static void test_expired_when_server_hangs(void)
{
    rlk_fx_server s2;
    char url2[128];
    rlk_client *c;
    tk_lost_rec g;
    rlk_lock *l;
    long long t_pause, waited, period = LEASE_EXPIRE / 3;
    int held = -1;

    REQUIRE(rlk_fx_start(&s2, NULL) == 0);
    REQUIRE(rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    c = tk_connect(url2, LEASE_EXPIRE, 2);
    tk_lost_init(&g);
    l = c ? rlk_lock_new(c, "wd:hang") : NULL;
    if (!l) {
        CHECK(l != NULL);
        rlk_free(c);
        rlk_fx_stop(&s2);
        tk_lost_destroy(&g);
        return;
    }
    rlk_set_lost_callback(c, tk_on_lost, &g);
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    tk_stall_reset(&stall);
    t_pause = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_fx_pause(&s2), 0);
    waited = tk_lost_ms_after(&g, t_pause * 1000000, 5000);
    CHECK(waited >= 0);
    printf("  lost (expired) %lld ms after the server hung (lease %d ms, period %lld ms)\n", waited,
           LEASE_EXPIRE, period);
    CHECK_INT_EQ(g.reason, RLK_LOST_EXPIRED);
    CHECKF(waited >= LEASE_EXPIRE - period - 50, "declared lost %lld ms after the hang: too early",
           waited);
    CHECKF(waited <= LEASE_EXPIRE + period + 300, "declared lost %lld ms after the hang (max "
           "scheduling gap %lld ms%s)", waited, tk_stall_max_gap_ms(&stall), stall_note());
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_fx_resume(&s2), 0);
    rlk_lock_free(l);
    rlk_free(c);
    rlk_fx_stop(&s2);
    tk_lost_destroy(&g);
}

#define LEASE_RACE 300      /* renewals every 100 ms */
/* A cycle whose stalls reach lease - period can lose its watchdog lock for
 * real: its failures are counted as stalls, not as races. A stall is this
 * process's scheduling gap (no renewal could be sent in time) plus the
 * server's (tk_srv_stall: PING round trips): a redis-server that is not
 * scheduled for 300 ms runs the renewal and the unlock waiting in its socket
 * buffers only after it has expired the key by the wall clock, and replies
 * 0 / nil - seen at load > 10 with the client's own detector at 0-3 ms and
 * MONITOR showing acquire, then 320 ms of nothing, then renewal and unlock
 * 50 us apart on an expired key. */
#define RACE_STALL_MS (LEASE_RACE - LEASE_RACE / 3)
#define RACE_CYCLES 100

/* Unlock while renewals are on the wire: never a false "lost", and a lease
 * taken right after by the same owner (shorter than the watchdog lease) is
 * never stretched by a renewal. */
static int race_call(rlk_client *c, int rc, const char *what, int cycle)
{
    if (rc == RLK_OK)
        return 0;
    fprintf(stderr, "  cycle %d: %s: %s %s (max scheduling gap %lld ms, server round trip %lld "
            "ms, wall clock minus monotonic %lld ms)\n", cycle, what, rlk_strerror(rc),
            rlk_errstr(c), tk_stall_max_gap_ms(&stall), tk_srv_stall_max_ms(&srv_stall),
            tk_wall_offset_ms());
    return 1;
}

static void test_unlock_races_renewals(void)
{
    rlk_client *c = tk_connect(url, LEASE_RACE, 2);
    rlk_runtime_stats st;
    unsigned seed = 12345;
    tk_lost_rec g;
    rlk_lock *l;
    int bad = 0, stretched = 0, ran_out = 0, stalled = 0, lost_in_stalls = 0;

    REQUIRE(c);
    tk_lost_init(&g);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    l = rlk_lock_new(c, "wd:race");
    REQUIRE(l);
    for (int i = 0; i < RACE_CYCLES; i++) {
        long long v, t_lock, wall0 = tk_wall_offset_ms();
        int rc, lost_before = tk_latch_get(&g.fired), bad_before = bad;

        stall_reset();
        if (race_call(c, rlk_lock_lock(l, 0), "lock (watchdog)", i)) {
            bad++;
            continue;
        }
        rlk_fx_sleep_ms((long)(tk_rand(&seed) % 121));   /* hold 0..120 ms: across renewals */
        rc = rlk_lock_unlock(l);
        /* Redis expires keys by the wall clock: a step of it (seen on these machines) ends a
         * lease early as a stall does. */
        if (stall_ms() >= RACE_STALL_MS || llabs(tk_wall_offset_ms() - wall0) > 50) {
            stalled++;      /* whatever happened to the watchdog lock, a stall explains it */
            lost_in_stalls += tk_latch_get(&g.fired) - lost_before;
            bad = bad_before;
            continue;
        }
        bad += race_call(c, rc, "unlock (watchdog)", i);
        t_lock = rlk_fx_now_ms();   /* before the request: the lease cannot start earlier */
        if (race_call(c, rlk_lock_lock(l, 100), "lock (100 ms lease)", i)) {
            bad++;
            continue;
        }
        v = pttl("wd:race");
        rlk_fx_sleep_ms(2);     /* room for a stray renewal to land */
        if (pttl("wd:race") > 100 || v > 100)
            stretched++;
        rc = rlk_lock_unlock(l);
        /* A stall of the test past the 100 ms lease lets the lock run out before the unlock:
         * NOT_OWNER is then the right answer, not a race (counted and printed apart). */
        if (rc == RLK_ERR_NOT_OWNER && rlk_fx_now_ms() - t_lock >= 100)
            ran_out++;
        else
            bad += race_call(c, rc, "unlock (100 ms lease)", i);
    }
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    printf("  %d lock/unlock cycles against %llu renewals: %d failed calls, %d leases stretched, "
           "%d lost reports, %d 100 ms leases that ran out in a stall before the unlock, %d "
           "cycles stalled >= %d ms or with a wall clock step (%d lost reports in them)\n", RACE_CYCLES, st.renew_calls,
           bad, stretched, tk_latch_get(&g.fired) - lost_in_stalls, ran_out, stalled, RACE_STALL_MS,
           lost_in_stalls);
    CHECKF(stalled <= RACE_CYCLES / 4, "%d of %d cycles stalled: the machine is too loaded for "
           "this test to say anything", stalled, RACE_CYCLES);
    CHECKF(bad == 0, "%d failed calls (max scheduling gap %lld ms%s)", bad,
           tk_stall_max_gap_ms(&stall), stall_note());
    CHECK_INT_EQ(stretched, 0);
    CHECKF(tk_latch_get(&g.fired) - lost_in_stalls == 0, "%d false lost reports (max scheduling gap %lld ms%s)",
           tk_latch_get(&g.fired) - lost_in_stalls, tk_stall_max_gap_ms(&stall), stall_note());
    CHECK(st.renew_calls > 0);
    rlk_fx_sleep_ms(2 * LEASE_RACE / 3);
    CHECK_INT_EQ(tk_key_exists(&srv, "wd:race"), 0);
    CHECK_INT_EQ(tk_latch_get(&g.fired) - lost_in_stalls, 0);
    rlk_lock_free(l);
    rlk_free(c);
    tk_lost_destroy(&g);
}

#define LEASE_REENTRY 300

static void test_reentrant_hold_stays_renewed(void)
{
    rlk_client *c = tk_connect(url, LEASE_REENTRY, 2);
    rlk_lock *l;
    long long n = 0, t0;
    int misses = 0;

    REQUIRE(c);
    l = rlk_lock_new(c, "wd:reentry");
    REQUIRE(l);
    REQUIRE(rlk_lock_lock(l, 0) == RLK_OK);
    REQUIRE(rlk_lock_lock(l, 0) == RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);       /* one hold left */
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    while (rlk_fx_now_ms() - t0 < 3 * LEASE_REENTRY) {
        misses += pttl("wd:reentry") <= 0;
        rlk_fx_sleep_ms(20);
    }
    CHECKF(misses == 0, "the held lock vanished at %d probes (max scheduling gap %lld ms%s)", misses,
           tk_stall_max_gap_ms(&stall), stall_note());
    CHECK_INT_EQ(rlk_lock_hold_count(l, &n), RLK_OK);
    CHECK_INT_EQ(n, 1);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, "wd:reentry"), 0);
    rlk_lock_free(l);
    rlk_free(c);
}

#define LEASE_BATCH 300
#define BATCH_LOCKS 6
#define BATCH_PERIOD (LEASE_BATCH / 3)
#define BATCH_TRIES 3

/* Takes the six locks (wd:batch:0..5); *span_ms: from before the first acquire was sent to after
 * the last one's reply. RLK_OK, or the first error (the locks taken are released). */
static int batch_lock_all(rlk_lock **locks, long long *span_ms)
{
    long long t0 = rlk_fx_now_ms();

    for (int i = 0; i < BATCH_LOCKS; i++) {
        int rc = rlk_lock_lock(locks[i], 0);

        if (rc != RLK_OK) {
            while (i-- > 0)
                rlk_lock_unlock(locks[i]);
            return rc;
        }
    }
    *span_ms = rlk_fx_now_ms() - t0;
    return RLK_OK;
}

/* Six locks of one client: renewed together, one call per period. The watchdog renews in one
 * call the entries due within a quarter period of the earliest (docs/runtime.md), and an entry
 * is due a period after its acquire was sent: six acquisitions spread over more than a quarter
 * period (a loaded machine) may form up to 1 + span / (period / 4) groups, each renewed by its
 * own call. So the test takes the six again (at most BATCH_TRIES times) until they fall within
 * a quarter period, and bounds the calls by the groups its last acquisitions allow. */
static void test_many_locks_per_call(void)
{
    rlk_client *c = tk_connect(url, LEASE_BATCH, 2);
    rlk_lock *locks[BATCH_LOCKS];
    rlk_runtime_stats a, b;
    long long t0, elapsed, span = 0, groups, most;
    int misses = 0, attempts;

    /* The rounds alone: no hold joins its channel in this test's time (a join's renewal renews
     * its hold alone, runtime.md "Force unlock is noticed at once"; runtime_faults tests it). */
    rlk_wd_join_ms = 3600000;

    REQUIRE(c);
    for (int i = 0; i < BATCH_LOCKS; i++) {
        char name[32];

        snprintf(name, sizeof name, "wd:batch:%d", i);
        locks[i] = rlk_lock_new(c, name);
        REQUIRE(locks[i]);
    }
    for (attempts = 1;; attempts++) {
        REQUIRE_INT_EQ(batch_lock_all(locks, &span), RLK_OK);
        if (span < BATCH_PERIOD / 4 || attempts == BATCH_TRIES)
            break;
        for (int i = 0; i < BATCH_LOCKS; i++)
            CHECK_INT_EQ(rlk_lock_unlock(locks[i]), RLK_OK);
    }
    groups = 1 + span / (BATCH_PERIOD / 4);
    if (groups > BATCH_LOCKS)
        groups = BATCH_LOCKS;
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &a), RLK_OK);
    t0 = rlk_fx_now_ms();
    while ((elapsed = rlk_fx_now_ms() - t0) < 3 * LEASE_BATCH) {
        for (int i = 0; i < BATCH_LOCKS; i++)
            misses += pttl(rlk_lock_name(locks[i])) <= 0;
        rlk_fx_sleep_ms(25);
    }
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &b), RLK_OK);
    /* Each group is renewed once a period; one that is renewed early joins another for good. */
    most = groups * (elapsed / BATCH_PERIOD + 1) + 2;
    printf("  %d locks over %lld ms: %llu renewal calls (period %d ms; acquired within %lld ms, "
           "attempt %d: at most %lld groups, %lld calls)\n", BATCH_LOCKS, elapsed,
           b.renew_calls - a.renew_calls, BATCH_PERIOD, span, attempts, groups, most);
    CHECK_INT_EQ(misses, 0);
    CHECK(b.renew_calls - a.renew_calls >= 3);
    CHECK(b.renew_calls - a.renew_calls <= (unsigned long long)most);
    for (int i = 0; i < BATCH_LOCKS; i++) {
        CHECK_INT_EQ(rlk_lock_unlock(locks[i]), RLK_OK);
        rlk_lock_free(locks[i]);
    }
    rlk_free(c);
    rlk_wd_join_ms = RLK_WD_JOIN_MS;
}

/* Messages on the lock channel while it is held and while it changes hands
 * within this client: another client's unlocks, waiters' wake-ups (0 and
 * 1), and this client's own unlock/re-lock cycles with a nudge pending
 * (the publisher never stops, so most cycles unlock with a nudge queued or
 * a nudged renewal in flight). A nudge only renews at once: never a lost
 * report, never a failed unlock, and the lock is never missing while held.
 * The renewal count proves the nudges ran (far above one per period). Each cycle holds until
 * the watchdog has joined the channel (a hold joins it once it has lived RLK_WD_JOIN_MS, and is
 * renewed once the join is confirmed: the first renewal of the hold). */
#define LEASE_MSG 300
#define MSG_CYCLES 40

typedef struct publisher {
    pthread_t thread;
    atomic_int stop;
    long long sent;
} publisher;

static void *publisher_main(void *arg)
{
    publisher *p = arg;
    redisContext *x = rlk_fx_connect(&srv);
    long long until = rlk_fx_now_ms() + 40000;      /* bounded */

    while (x && !atomic_load(&p->stop) && rlk_fx_now_ms() < until) {
        redisReply *r = redisCommand(x, "PUBLISH redisson_lock__channel:{wd:msg} %d",
                                     (int)(p->sent & 1));
        if (!r)
            break;
        freeReplyObject(r);
        p->sent++;
        if ((p->sent & 7) == 0) {
            struct timespec ts = {0, 500000};   /* pacing: ~0.5 ms every 8 messages */

            nanosleep(&ts, NULL);
        }
    }
    if (x)
        redisFree(x);
    return NULL;
}

/* 1 once c made a renewal call (polled, timeout_ms at most), else 0. */
static int renewed_since(rlk_client *c, long timeout_ms)
{
    rlk_runtime_stats a, b;

    if (rlk_runtime_stats_get(c, &a) != RLK_OK)
        return 0;
    for (long i = 0; i < timeout_ms; i += 2) {
        if (rlk_runtime_stats_get(c, &b) == RLK_OK && b.renew_calls > a.renew_calls)
            return 1;
        rlk_fx_sleep_ms(2);
    }
    return 0;
}

static void test_messages_while_held(void)
{
    rlk_client *c = tk_connect(url, LEASE_MSG, 2);
    rlk_runtime_stats a, b;
    publisher p = {0};
    tk_lost_rec g;
    rlk_lock *l;
    int bad = 0, stalled = 0, missing = 0, lost_in_stalls = 0, joined = 0;
    unsigned seed = 777;

    REQUIRE(c);
    tk_lost_init(&g);
    rlk_set_lost_callback(c, tk_on_lost, &g);
    l = rlk_lock_new(c, "wd:msg");
    REQUIRE(l);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &a), RLK_OK);
    atomic_store(&p.stop, 0);
    REQUIRE(pthread_create(&p.thread, NULL, publisher_main, &p) == 0);
    for (int i = 0; i < MSG_CYCLES; i++) {
        int rc1, rc2, rc3, rc4, lost_before = tk_latch_get(&g.fired);
        long long v, t_cycle = rlk_fx_now_ms();

        stall_reset();
        rc1 = rlk_lock_lock(l, 0);
        rc2 = rlk_lock_lock(l, 0);      /* a re-entry: the same entry, count 2 */
        joined += renewed_since(c, 3000);
        rlk_fx_sleep_ms((long)(tk_rand(&seed) % 40));
        v = pttl("wd:msg");
        rc3 = rlk_lock_unlock(l);
        rc4 = rlk_lock_unlock(l);       /* the last hold: out of the registry, then released */
        if (stall_ms() >= RACE_STALL_MS) {
            stalled++;      /* a stall explains a loss */
            lost_in_stalls += tk_latch_get(&g.fired) - lost_before;
            continue;
        }
        missing += v <= 0;
        if (rc1 != RLK_OK || rc2 != RLK_OK || rc3 != RLK_OK || rc4 != RLK_OK)
            fprintf(stderr, "  cycle %d: PTTL %lld ms before the unlocks, the cycle took %lld ms\n",
                    i, v, rlk_fx_now_ms() - t_cycle);
        bad += race_call(c, rc1, "lock", i) + race_call(c, rc2, "re-lock", i) +
               race_call(c, rc3, "unlock (re-entry)", i) + race_call(c, rc4, "unlock (last)", i);
    }
    atomic_store(&p.stop, 1);
    pthread_join(p.thread, NULL);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &b), RLK_OK);
    printf("  %d lock/re-lock/unlock/unlock cycles under %lld messages: %llu renewals (%d "
           "cycles stalled >= %d ms), %d failed calls, %d lost reports, lock missing while held "
           "%d times\n", MSG_CYCLES, p.sent, b.renew_calls - a.renew_calls, stalled,
           RACE_STALL_MS, bad, tk_latch_get(&g.fired) - lost_in_stalls, missing);
    CHECKF(stalled <= MSG_CYCLES / 4, "%d of %d cycles stalled: the machine is too loaded for "
           "this test to say anything", stalled, MSG_CYCLES);
    CHECK(p.sent > MSG_CYCLES);
    CHECKF(joined >= MSG_CYCLES / 2, "only %d of %d holds were renewed within 3 s: the watchdog "
           "did not join their channel", joined, MSG_CYCLES);
    /* Without nudges: about one renewal per 100 ms period of holding (a few). */
    CHECKF(b.renew_calls - a.renew_calls > MSG_CYCLES / 2, "only %llu renewals: the messages "
           "did not nudge the watchdog", b.renew_calls - a.renew_calls);
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(tk_latch_get(&g.fired) - lost_in_stalls, 0);
    CHECK_INT_EQ(missing, 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "wd:msg"), 0);
    rlk_lock_free(l);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* The control of the server-side stall probe: a server stopped (SIGSTOP)
 * for 400 ms is seen as a round trip of at least that. */
static void test_server_stall_is_seen(void)
{
    long long t0, ms;

    tk_srv_stall_reset(&srv_stall);
    rlk_fx_sleep_ms(50);    /* a few probes */
    CHECKF(tk_srv_stall_max_ms(&srv_stall) < 400, "an idle server answered PING in %lld ms",
           tk_srv_stall_max_ms(&srv_stall));
    REQUIRE(rlk_fx_pause(&srv) == 0);
    t0 = rlk_fx_now_ms();
    rlk_fx_sleep_ms(400);   /* the stall being measured */
    REQUIRE(rlk_fx_resume(&srv) == 0);
    for (; rlk_fx_now_ms() - t0 < 5000 && tk_srv_stall_max_ms(&srv_stall) < 350;)
        rlk_fx_sleep_ms(5);     /* bounded poll: the probe's answer after the resume */
    ms = tk_srv_stall_max_ms(&srv_stall);
    printf("  server stopped 400 ms: longest PING round trip %lld ms\n", ms);
    /* The probe in flight may have been sent a few ms after the stop. */
    CHECKF(ms >= 350, "a 400 ms server stop measured as %lld ms", ms);
}

int main(void)
{
    if (tk_suite_start("rt_watchdog", &srv, url, sizeof url, &stall) != 0)
        return 1;
    if (tk_srv_stall_start(&srv_stall, &srv) != 0)
        return 1;
    RUN_TEST(test_keeps_alive_five_leases);
    RUN_TEST(test_lost_when_deleted);
    RUN_TEST(test_expired_when_renewals_fail);
    RUN_TEST(test_expired_when_server_hangs);
    RUN_TEST(test_unlock_races_renewals);
    RUN_TEST(test_reentrant_hold_stays_renewed);
    RUN_TEST(test_many_locks_per_call);
    RUN_TEST(test_messages_while_held);
    RUN_TEST(test_server_stall_is_seen);
    tk_srv_stall_stop(&srv_stall);
    tk_suite_stop(&srv, &stall);
    return check_summary("rt_watchdog");
}
