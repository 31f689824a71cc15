/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_lockdelay.c - the reentrant lock's lock-delay (rlk_lock_set_delay,
 * `rlk lock --lock-delay`) against a real redis-server, with a paused
 * holder: a child process holds the lock with a renewed lease (its
 * client's watchdog lease WD_LEASE) and is stopped with SIGSTOP, so its
 * lease runs out on the server with no release. The order of events is
 * asserted (the lock key gone, the delay key there, the waiter still
 * waiting), and times only as bounds with room (SLACK) for the polls:
 *   - with the delay (holder and waiter): once the lock key is gone the
 *     delay key is still there and the waiter still waits; it gets the lock
 *     no earlier than DELAY after the lock key went;
 *   - the control, without the delay: the waiter gets the lock at lease
 *     end, earlier than the delay case allows (the same bound fails);
 *   - a released lock is taken at once, with the delay and without (no
 *     delay key left behind);
 *   - a force unlock ends a running delay: the waiter gets it at once; so
 *     does one through a handle without the option (a force unlock is a
 *     release, whoever asks), and rlk unlock --force;
 *   - a hold keeps the lock-delay of its first acquisition: a re-entry
 *     through a handle without the option refreshes the delay key and the
 *     last release (whichever handle) deletes it; a re-entry through a
 *     handle with the option of a hold taken without writes none, nor does
 *     one with another delay change it;
 *   - the metrics count the attempts a delay refused (not those a holder
 *     refused), and the exposition shows them;
 *   - the watchdog renews NBATCH holds with a delay in one renew_many call a
 *     round (the server's PEXPIRE count: two per hold per call) and refreshes
 *     each delay key with its lock;
 *   - the CLI (the rlk binary in $RLK_TEST_CLI): rlk lock --lock-delay, its
 *     refusal with another kind, and the paused holder again: an rlk lock
 *     stopped with SIGSTOP past its lease keeps the next rlk lock
 *     --lock-delay out for the delay.
 *
 * Child modes (argv[1]): hold URL NAME DELAY_MS; stamp FILE (appends
 * "<CLOCK_MONOTONIC ms>\n" to FILE: the command an rlk lock runs).
 */
#include "check.h"
#include "fl_util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WD_LEASE 1000       /* the paused holder's renewed lease */
#define DELAY 3000          /* the lock-delay */
#define SLACK 250           /* what a 5 ms poll on fresh connections may lag behind */

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ children */

/* Holds NAME (renewed lease, with the delay when delay > 0), says "held <owner>";
 * "release" on stdin unlocks it ("released <rc>"). */
static int child_hold(const char *curl, const char *name, long long delay)
{
    rlk_client *c = tk_connect(curl, WD_LEASE, 2);
    rlk_lock *l;
    char line[64], owner[256];

    if (!c || !(l = rlk_lock_new(c, name)))
        return 2;
    if ((delay > 0 && rlk_lock_set_delay(l, delay) != RLK_OK) || rlk_lock_lock(l, 0) != RLK_OK) {
        fprintf(stderr, "hold: %s\n", rlk_errstr(c));
        return 2;
    }
    if (rlk_lock_owner(l, owner, sizeof owner) != RLK_OK)
        return 2;
    tk_say("held %s", owner);
    while (fgets(line, sizeof line, stdin))
        if (strncmp(line, "release", 7) == 0)
            tk_say("released %d", rlk_lock_unlock(l));
    rlk_lock_free(l);
    rlk_free(c);
    return 0;
}

static int child_stamp(const char *path)
{
    FILE *f = fopen(path, "a");

    if (!f)
        return 2;
    fprintf(f, "%lld\n", rlk_fx_now_ms());
    return fclose(f) == 0 ? 0 : 2;
}

static int child_main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "hold") == 0)
        return child_hold(argv[2], argv[3], atoll(argv[4]));
    if (argc == 3 && strcmp(argv[1], "stamp") == 0)
        return child_stamp(argv[2]);
    fprintf(stderr, "fl_lockdelay: unknown child mode\n");
    return 2;
}

/* ------------------------------------------------------------ a waiter */

typedef struct waiter {
    rlk_lock *lock;
    int rc;
    long long at_ms;
    tk_latch done;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;

    w->rc = rlk_lock_try_lock(w->lock, 20000, 10000);
    w->at_ms = rlk_fx_now_ms();
    tk_latch_add(&w->done, 1);
    return NULL;
}

typedef struct scene {
    const char *name;
    char delay_key[128], waiters_key[128], owner[256];   /* owner: the holder child's id */
    long long delay;            /* holder's and waiter's delay (0: none) */
    tk_child holder;
    rlk_client *c;
    waiter w;
    pthread_t t;
    int started;
} scene;

/* The holder child holds name; a waiter of this process queues behind it. 0, or -1. */
static int scene_start(scene *s, const char *name, long long delay)
{
    char d[24], line[250];
    const char *args[5];

    memset(s, 0, sizeof *s);
    s->name = name;
    s->delay = delay;
    snprintf(s->delay_key, sizeof s->delay_key, "{%s}:rlk_delay", name);
    snprintf(s->waiters_key, sizeof s->waiters_key, "{%s}:rlk_waiters", name);
    snprintf(d, sizeof d, "%lld", delay);
    args[0] = "hold";
    args[1] = url;
    args[2] = name;
    args[3] = d;
    args[4] = NULL;
    if (tk_child_spawn(&s->holder, args) != 0)
        return -1;
    if (tk_child_read_line(&s->holder, line, sizeof line, 15000) != 0 ||
        strncmp(line, "held ", 5) != 0)
        return -1;
    snprintf(s->owner, sizeof s->owner, "%s", line + 5);
    if (delay > 0) {
        long long pttl = tk_int(&srv, "PTTL %s", s->delay_key);

        CHECKF(pttl > WD_LEASE && pttl <= WD_LEASE + delay, "delay key PTTL %lld while held", pttl);
        CHECK_INT_EQ(tk_int(&srv, "GET %s", s->delay_key), delay);
    } else {
        CHECK_INT_EQ(tk_key_exists(&srv, s->delay_key), 0);     /* off: no key more */
    }
    if (!(s->c = tk_connect(url, 0, 2)) || !(s->w.lock = rlk_lock_new(s->c, name)))
        return -1;
    if (delay > 0 && rlk_lock_set_delay(s->w.lock, delay) != RLK_OK)
        return -1;
    if (rlk_lock_set_owner(s->w.lock, "ld-waiter:1") != RLK_OK)    /* unlocked by the main thread */
        return -1;
    tk_latch_init(&s->w.done);
    if (pthread_create(&s->t, NULL, waiter_main, &s->w) != 0)
        return -1;
    s->started = 1;
    /* Queued behind the holder, not holding. */
    CHECK(tk_wait_int_at_least(&srv, 1, 5000, "LLEN %s", s->waiters_key) == 0);
    CHECK_INT_EQ(tk_latch_get(&s->w.done), 0);
    return 0;
}

static void scene_stop(scene *s)
{
    if (s->started) {
        tk_latch_wait(&s->w.done, 1, 25000);
        pthread_join(s->t, NULL);
        if (s->w.rc == RLK_OK)
            CHECK_INT_EQ(rlk_lock_unlock(s->w.lock), RLK_OK);
        tk_latch_destroy(&s->w.done);
    }
    if (s->holder.pid > 0)
        kill(s->holder.pid, SIGCONT);   /* a stopped holder: SIGKILL ends it all the same */
    tk_child_kill(&s->holder);
    rlk_lock_free(s->w.lock);
    rlk_free(s->c);
    tk_int(&srv, "DEL %s %s", s->name, s->delay_key);
}

/* SIGSTOP the holder and poll (5 ms) until its hold is gone from the lock key (the key gone,
 * or taken by the waiter at once): that time, or -1. */
static long long scene_pause_until_gone(scene *s)
{
    long long t0 = rlk_fx_now_ms();
    int done_while_held = 0;

    CHECK(kill(s->holder.pid, SIGSTOP) == 0);
    while (rlk_fx_now_ms() - t0 < 10 * WD_LEASE + 5000) {
        int done = tk_latch_get(&s->w.done) != 0;   /* read before the probe */

        if (tk_int(&srv, "HEXISTS %s %s", s->name, s->owner) == 0)
            return rlk_fx_now_ms();
        if (done) {
            done_while_held = 1;    /* taken while the paused holder held it: a failure */
            break;
        }
        rlk_fx_sleep_ms(5);
    }
    CHECKF(0, "the paused holder's hold did not go (the waiter took the lock meanwhile: %d)",
           done_while_held);
    return -1;
}

/* ------------------------------------------------------------ paused holder */

static void paused(long long delay)
{
    const char *name = delay > 0 ? "ld:paused" : "ld:paused:control";
    long long gone, after;
    scene s;

    REQUIRE(scene_start(&s, name, delay) == 0);
    tk_stall_reset(&stall);
    gone = scene_pause_until_gone(&s);
    if (gone < 0) {
        scene_stop(&s);
        return;
    }
    if (delay > 0) {
        /* The lock is free, its delay key is there, the waiter still waits. */
        long long pttl = tk_int(&srv, "PTTL %s", s.delay_key);

        CHECKF(pttl > 0 && pttl <= delay, "delay key PTTL %lld after the lock key went", pttl);
        CHECK_INT_EQ(tk_key_exists(&srv, name), 0);
        CHECK_INT_EQ(tk_latch_get(&s.w.done), 0);
    }
    CHECK(tk_latch_wait(&s.w.done, 1, 20000) == 1);
    CHECK_INT_EQ(s.w.rc, RLK_OK);
    after = s.w.at_ms - gone;
    printf("  %s: the waiter got the lock %lld ms after the paused holder's key went (delay %d ms)\n",
           delay > 0 ? "lock-delay" : "control, no delay", after, DELAY);
    if (delay > 0)
        CHECKF(after >= DELAY - SLACK, "taken %lld ms after the lock key went, delay %d ms%s",
               after, DELAY, tk_stall_note(&stall));
    else    /* the control: the bound above does not hold without the delay */
        CHECKF(after < DELAY - SLACK, "taken %lld ms after the lock key went with no delay "
               "(max scheduling gap %lld ms%s)", after, tk_stall_max_gap_ms(&stall),
               tk_stall_note(&stall));
    scene_stop(&s);
}

static void test_paused_holder_delayed(void)
{
    paused(DELAY);
}

static void test_paused_holder_control(void)
{
    paused(0);
}

/* ------------------------------------------------------------ released, force unlocked */

static void released(long long delay)
{
    const char *name = delay > 0 ? "ld:released" : "ld:released:control";
    char line[64];
    long long t_rel, after;
    scene s;

    REQUIRE(scene_start(&s, name, delay) == 0);
    tk_stall_reset(&stall);
    t_rel = rlk_fx_now_ms();
    CHECK(tk_child_send(&s.holder, "release") == 0);
    CHECK(tk_child_read_line(&s.holder, line, sizeof line, 5000) == 0);
    CHECK_STR_EQ(line, "released 0");
    CHECK(tk_latch_wait(&s.w.done, 1, 10000) == 1);
    CHECK_INT_EQ(s.w.rc, RLK_OK);
    after = s.w.at_ms - t_rel;
    printf("  released%s: the waiter got the lock %lld ms after the release\n",
           delay > 0 ? " with the delay" : ", no delay", after);
    CHECKF(after < DELAY - SLACK, "taken %lld ms after the release (max scheduling gap %lld ms%s)",
           after, tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    if (delay > 0) {
        /* The key is the new holder's now: PX lease (10000) + delay. */
        long long pttl = tk_int(&srv, "PTTL %s", s.delay_key);

        CHECKF(pttl > delay, "delay key PTTL %lld: the new holder's", pttl);
    } else {
        CHECK_INT_EQ(tk_key_exists(&srv, s.delay_key), 0);
    }
    scene_stop(&s);
}

static void test_released_delayed(void)
{
    released(DELAY);
}

static void test_released_control(void)
{
    released(0);
}

static void test_force_unlock_ends_delay(void)
{
    long long gone, t_force, after;
    rlk_client *c;
    rlk_lock *f = NULL;
    int was = -1;
    scene s;

    REQUIRE(scene_start(&s, "ld:forced", DELAY) == 0);
    c = tk_connect(url, 0, 2);
    REQUIRE(c && (f = rlk_lock_new(c, "ld:forced")) != NULL);
    REQUIRE_INT_EQ(rlk_lock_set_delay(f, DELAY), RLK_OK);
    gone = scene_pause_until_gone(&s);
    CHECK(gone > 0);
    CHECK_INT_EQ(tk_key_exists(&srv, s.delay_key), 1);
    CHECK_INT_EQ(tk_latch_get(&s.w.done), 0);
    tk_stall_reset(&stall);
    t_force = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_lock_force_unlock(f, &was), RLK_OK);
    CHECK_INT_EQ(was, 0);       /* no lock was there: only its delay ended */
    CHECK(tk_latch_wait(&s.w.done, 1, 10000) == 1);
    CHECK_INT_EQ(s.w.rc, RLK_OK);
    after = s.w.at_ms - t_force;
    printf("  force unlock: the waiter got the lock %lld ms after it (%lld ms after the key went)\n",
           after, s.w.at_ms - gone);
    CHECKF(s.w.at_ms - gone < DELAY - SLACK, "taken %lld ms after the lock key went%s",
           s.w.at_ms - gone, tk_stall_note(&stall));
    rlk_lock_free(f);
    rlk_free(c);
    scene_stop(&s);
}

/* A force unlock through a handle without the option ends a delay too (reply 2: only the
 * delay key was there), and deletes a held lock's delay key with it. */
static void test_force_unlock_plain_handle(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_lock *plain = NULL, *d = NULL;
    int was = -1;

    REQUIRE(c && (plain = rlk_lock_new(c, "ld:forced2")) && (d = rlk_lock_new(c, "ld:forced2")));
    REQUIRE_INT_EQ(rlk_lock_set_delay(d, 60000), RLK_OK);
    CHECK(tk_command_ok(&srv, "SET %s %s PX %s", "{ld:forced2}:rlk_delay", "60000", "60000") == 0);
    CHECK_INT_EQ(rlk_lock_try_lock(d, 0, 5000), RLK_ERR_BUSY);    /* in its delay */
    CHECK_INT_EQ(rlk_lock_force_unlock(plain, &was), RLK_OK);
    CHECK_INT_EQ(was, 0);       /* no lock was there: only its delay ended */
    CHECK_INT_EQ(tk_key_exists(&srv, "{ld:forced2}:rlk_delay"), 0);
    CHECK_INT_EQ(rlk_lock_try_lock(d, 0, 5000), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, "{ld:forced2}:rlk_delay"), 1);
    was = -1;
    CHECK_INT_EQ(rlk_lock_force_unlock(plain, &was), RLK_OK);
    CHECK_INT_EQ(was, 1);
    CHECK_INT_EQ(tk_key_exists(&srv, "ld:forced2"), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "{ld:forced2}:rlk_delay"), 0);
    rlk_lock_free(d);
    rlk_lock_free(plain);
    rlk_free(c);
}

/* Two handles of one name in one thread (one owner, one hold): the hold keeps the delay its
 * first acquisition took, or the lack of one, whichever handle re-enters or releases it. */
static void test_reentry_keeps_delay(void)
{
    const char *name = "ld:reentry", *dkey = "{ld:reentry}:rlk_delay";
    rlk_client *c = tk_connect(url, WD_LEASE, 2);
    rlk_lock *plain = NULL, *d = NULL, *d2 = NULL;
    char o1[256], o2[256];
    long long pttl;

    REQUIRE(c && (plain = rlk_lock_new(c, name)) && (d = rlk_lock_new(c, name)) &&
            (d2 = rlk_lock_new(c, name)));
    REQUIRE_INT_EQ(rlk_lock_set_delay(d, DELAY), RLK_OK);
    REQUIRE_INT_EQ(rlk_lock_set_delay(d2, 2 * DELAY), RLK_OK);
    REQUIRE(rlk_lock_owner(plain, o1, sizeof o1) == RLK_OK &&
            rlk_lock_owner(d, o2, sizeof o2) == RLK_OK);
    REQUIRE(strcmp(o1, o2) == 0);
    /* Taken with the delay, re-entered without: the re-entry writes the key again (lease +
     * delay); released first through the handle with it, last through the one without. */
    REQUIRE_INT_EQ(rlk_lock_lock(d, 0), RLK_OK);
    CHECK(tk_int(&srv, "PEXPIRE %s %s", dkey, "100000") == 1);     /* far from lease + delay */
    CHECK_INT_EQ(rlk_lock_lock(plain, 0), RLK_OK);
    pttl = tk_int(&srv, "PTTL %s", dkey);
    CHECKF(pttl > DELAY && pttl <= WD_LEASE + DELAY, "delay key PTTL %lld after a plain re-entry",
           pttl);
    /* Re-entered through a handle with another delay: the hold's stays (the key's value). */
    CHECK_INT_EQ(rlk_lock_lock(d2, 0), RLK_OK);
    CHECK(tk_int(&srv, "GET %s", dkey) == DELAY);
    CHECK_INT_EQ(rlk_lock_unlock(d2), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(d), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, dkey), 1);
    rlk_fx_sleep_ms(2 * WD_LEASE);      /* renewed meanwhile, with its delay key */
    pttl = tk_int(&srv, "PTTL %s", dkey);
    CHECKF(pttl > DELAY && pttl <= WD_LEASE + DELAY, "delay key PTTL %lld after renewals", pttl);
    CHECK_INT_EQ(rlk_lock_unlock(plain), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, name), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, dkey), 0);     /* released: no delay left behind */
    /* Taken without the delay, re-entered with it: no delay key, before or after. */
    REQUIRE_INT_EQ(rlk_lock_lock(plain, 0), RLK_OK);
    CHECK_INT_EQ(rlk_lock_lock(d, 0), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, dkey), 0);
    CHECK_INT_EQ(rlk_lock_unlock(plain), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(d), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, name), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, dkey), 0);
    rlk_lock_free(d2);
    rlk_lock_free(d);
    rlk_lock_free(plain);
    rlk_free(c);
}

static void test_set_delay_args(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_lock *l = NULL;

    REQUIRE(c && (l = rlk_lock_new(c, "ld:args")) != NULL);
    CHECK_INT_EQ(rlk_lock_set_delay(NULL, 5), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_set_delay(l, -1), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_lock_set_delay(l, 1000000000001LL), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "ld:args");
    /* Off again: the calls are the ones without the delay (no delay key written). */
    CHECK_INT_EQ(rlk_lock_set_delay(l, 500), RLK_OK);
    CHECK_INT_EQ(rlk_lock_set_delay(l, 0), RLK_OK);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 5000), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, "{ld:args}:rlk_delay"), 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    /* A single try during a delay: busy, and the message says why it may be. */
    CHECK(tk_command_ok(&srv, "SET %s %s PX %s", "{ld:args}:rlk_delay", "60000", "60000") == 0);
    CHECK_INT_EQ(rlk_lock_set_delay(l, 60000), RLK_OK);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 5000), RLK_ERR_BUSY);
    CHECK_STR_CONTAINS(rlk_errstr(c), "lock-delay");
    CHECK_INT_EQ(tk_key_exists(&srv, "ld:args"), 0);
    tk_int(&srv, "DEL %s", "{ld:args}:rlk_delay");
    rlk_lock_free(l);
    rlk_free(c);
}

/* ------------------------------------------------------------ metrics and renewals */

static void test_delay_refusals_counted(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_lock *l = NULL;
    rlk_metrics m, two;
    char text[16384];

    REQUIRE(c && (l = rlk_lock_new(c, "ld:count")) != NULL);
    REQUIRE_INT_EQ(rlk_lock_set_delay(l, 60000), RLK_OK);
    CHECK(tk_command_ok(&srv, "SET %s %s PX %s", "{ld:count}:rlk_delay", "60000", "60000") == 0);
    REQUIRE_INT_EQ(rlk_metrics_get(c, &m), RLK_OK);
    CHECK(m.delay_refusals == 0);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 5000), RLK_ERR_BUSY);
    REQUIRE_INT_EQ(rlk_metrics_get(c, &m), RLK_OK);
    CHECKF(m.delay_refusals == 2, "delay_refusals %llu, not 2", m.delay_refusals);
    /* The control: a lock held by another is refused too, but not by the delay. */
    tk_int(&srv, "DEL %s", "{ld:count}:rlk_delay");
    CHECK(tk_command_ok(&srv, "HSET %s %s 1", "ld:count", "other:1") == 0);
    CHECK(tk_command_ok(&srv, "PEXPIRE %s %s", "ld:count", "60000") == 0);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 5000), RLK_ERR_BUSY);
    REQUIRE_INT_EQ(rlk_metrics_get(c, &m), RLK_OK);
    CHECKF(m.delay_refusals == 2, "delay_refusals %llu after a holder's refusal", m.delay_refusals);
    CHECK_INT_EQ(rlk_metrics_format(&m, 1, NULL, RLK_METRICS_PROMETHEUS, text, sizeof text, NULL),
                 RLK_OK);
    CHECK_STR_CONTAINS(text, "# TYPE rlk_lock_delay_refusals_total counter\n"
                       "rlk_lock_delay_refusals_total 2\n");
    CHECK_INT_EQ(rlk_metrics_format(&m, 1, NULL, RLK_METRICS_JSON, text, sizeof text, NULL),
                 RLK_OK);
    CHECK_STR_CONTAINS(text, "\"rlk_lock_delay_refusals_total\":2");
    two = m;
    rlk_metrics_add(&two, &m);
    CHECK(two.delay_refusals == 4);
    tk_int(&srv, "DEL %s", "ld:count");
    rlk_lock_free(l);
    rlk_free(c);
}

#define NBATCH 6            /* holds with a delay, renewed together */
#define BATCH_DELAY 5000

/* The watchdog's renewal calls (metrics) and the server's PEXPIREs, read
 * with no renewal call started in between; 0, or -1. */
static int renew_counts(rlk_client *c, unsigned long long *calls, long long *pexpires)
{
    for (int tries = 0; tries < 50; tries++) {
        rlk_metrics a, b;

        if (rlk_metrics_get(c, &a) != RLK_OK || (*pexpires = tk_command_calls(&srv, "pexpire")) < 0 ||
            rlk_metrics_get(c, &b) != RLK_OK)
            return -1;
        if (a.renewals == b.renewals) {
            *calls = a.renewals;
            return 0;
        }
    }
    return -1;
}

static void test_delay_renewed_in_batch(void)
{
    rlk_client *c = tk_connect(url, WD_LEASE, 2);
    rlk_lock *l[NBATCH] = {NULL};
    char name[NBATCH][32], dkey[NBATCH][48];
    unsigned long long c0 = 0, c1 = 0, calls;
    long long p0 = 0, p1 = 0, t_acq, before, deadline;

    REQUIRE(c != NULL);
    for (int k = 0; k < NBATCH; k++) {
        snprintf(name[k], sizeof name[k], "{ld:batch}:%d", k);
        snprintf(dkey[k], sizeof dkey[k], "%s:rlk_delay", name[k]);
        REQUIRE((l[k] = rlk_lock_new(c, name[k])) != NULL);
        REQUIRE_INT_EQ(rlk_lock_set_delay(l[k], BATCH_DELAY), RLK_OK);
        REQUIRE_INT_EQ(rlk_lock_lock(l[k], 0), RLK_OK);     /* renewed by the watchdog */
    }
    t_acq = rlk_fx_now_ms();
    /* Each hold joins its lock's channel once it has lived 100 ms and is then renewed alone
     * (runtime.md, "Force unlock is noticed at once"): counted from after those renewals (two
     * PEXPIREs each), the rounds renew the holds together. */
    REQUIRE(renew_counts(c, &c0, &p0) == 0);
    for (int k = 0; k < NBATCH; k++) {
        char chan[256];

        snprintf(chan, sizeof chan, "redisson_lock__channel:%s", name[k]);  /* {tag} in name */
        REQUIRE(tk_wait_numsub(&srv, chan, 1, 5000) == 0);
    }
    deadline = rlk_fx_now_ms() + 5000;
    do {
        rlk_fx_sleep_ms(10);
        REQUIRE(renew_counts(c, &c1, &p1) == 0);
    } while (p1 - p0 < 2 * NBATCH && rlk_fx_now_ms() < deadline);
    c0 = c1;
    p0 = p1;
    /* Three renewal calls at least: the holds' rounds fall together. */
    deadline = rlk_fx_now_ms() + 15000;
    do {
        rlk_fx_sleep_ms(20);
        REQUIRE(renew_counts(c, &c1, &p1) == 0);
    } while (c1 - c0 < 3 && rlk_fx_now_ms() < deadline);
    calls = c1 - c0;
    p1 -= p0;
    printf("  %d holds with a delay: %llu renewal calls, %lld PEXPIREs\n", NBATCH, calls, p1);
    REQUIRE(calls >= 3);
    /* Each call renewed every hold and its delay key (two PEXPIREs each); the last call
     * counted may not have run on the server yet. Alone, a call renews one hold. */
    CHECKF(p1 >= 2LL * NBATCH * (long long)(calls - 1) && p1 <= 2LL * NBATCH * (long long)calls,
           "%lld PEXPIREs for %llu calls of %d holds", p1, calls, NBATCH);
    before = rlk_fx_now_ms();
    for (int k = 0; k < NBATCH; k++) {
        long long d = tk_int(&srv, "PTTL %s", dkey[k]);

        /* Not refreshed, it would be at most lease + delay - (before - t_acq). */
        CHECKF(d > WD_LEASE + BATCH_DELAY - (before - t_acq) + 50 && d <= WD_LEASE + BATCH_DELAY,
               "%s: PTTL %lld, %lld ms after the locks were taken", dkey[k], d, before - t_acq);
        CHECK(tk_int(&srv, "GET %s", dkey[k]) == BATCH_DELAY);
        CHECK(tk_int(&srv, "PTTL %s", name[k]) <= WD_LEASE);
    }
    for (int k = 0; k < NBATCH; k++) {
        CHECK_INT_EQ(rlk_lock_unlock(l[k]), RLK_OK);
        CHECK_INT_EQ(tk_key_exists(&srv, dkey[k]), 0);
        rlk_lock_free(l[k]);
    }
    rlk_free(c);
}

/* ------------------------------------------------------------ the CLI */

static char self_exe[512];
static int run_rlk_stdout;      /* run_rlk: its stdout into err as well (else /dev/null) */

/* Runs rlk with args (NULL-terminated, after "rlk"); its stderr into err. The
 * exit status (or -1), waited for at most timeout_ms (then SIGKILL). *pid: the
 * process, when background is set (not waited for; returns 0). */
static int run_rlk(const char *rlk, const char *const *args, char *err, size_t errlen,
                   long long timeout_ms, int background, pid_t *pid)
{
    const char *argv[32];
    int p[2], n = 0, status = -1;
    long long t0 = rlk_fx_now_ms();
    size_t got = 0;
    pid_t kid;

    argv[n++] = rlk;
    for (int i = 0; args[i] && n < 31; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    if (pipe(p) != 0)
        return -1;
    if ((kid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);

        if (run_rlk_stdout)
            dup2(p[1], 1);
        else if (null >= 0)
            dup2(null, 1);      /* its stdout: not the test's output */
        dup2(background && null >= 0 ? null : p[1], 2);   /* in the background nobody reads */
        close(p[0]);
        close(p[1]);
        execv(rlk, (char *const *)argv);
        _exit(127);
    }
    close(p[1]);
    if (kid < 0) {
        close(p[0]);
        return -1;
    }
    if (pid)
        *pid = kid;
    if (background) {
        close(p[0]);
        return 0;
    }
    fcntl(p[0], F_SETFL, O_NONBLOCK);
    for (;;) {
        ssize_t k = err && got + 1 < errlen ? read(p[0], err + got, errlen - got - 1) : -1;

        if (k > 0)
            got += (size_t)k;
        if (waitpid(kid, &status, WNOHANG) == kid)
            break;
        if (rlk_fx_now_ms() - t0 > timeout_ms) {
            kill(kid, SIGKILL);
            waitpid(kid, &status, 0);
            status = -1;
            break;
        }
        rlk_fx_sleep_ms(5);
    }
    if (err && got + 1 < errlen) {
        ssize_t k = read(p[0], err + got, errlen - got - 1);

        if (k > 0)
            got += (size_t)k;
    }
    if (err)
        err[got] = '\0';
    close(p[0]);
    return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The first stamp in path (CLOCK_MONOTONIC ms), or -1. */
static long long read_stamp(const char *path)
{
    FILE *f = fopen(path, "r");
    long long v = -1;

    if (f) {
        if (fscanf(f, "%lld", &v) != 1)
            v = -1;
        fclose(f);
    }
    return v;
}

static void test_cli(void)
{
    const char *rlk = getenv("RLK_TEST_CLI");
    char err[1024], dir[] = "/tmp/rlk-ld-XXXXXX", stamp[128];
    long long gone = -1, got;
    pid_t holder = -1;
    int rc;

    if (!rlk || !*rlk) {
        printf("- test_cli: skipped (RLK_TEST_CLI does not name the rlk binary)\n");
        return;
    }
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(stamp, sizeof stamp, "%s/stamp", dir);
    {   /* Usage: a bad value, another kind: one line, exit 2. */
        const char *bad[] = {"lock", "--lock-delay", "0", "ld:cli", "--url", url, "--", "true", NULL};
        const char *fair[] = {"lock", "--fair", "--lock-delay", "500", "ld:cli", "--url", url,
                              "--", "true", NULL};
        const char *ok[] = {"lock", "--lock-delay", "500", "ld:cli", "--url", url, "--", "true",
                            NULL};

        CHECK_INT_EQ(run_rlk(rlk, bad, err, sizeof err, 10000, 0, NULL), 2);
        CHECK_STR_CONTAINS(err, "--lock-delay");
        rc = run_rlk(rlk, fair, err, sizeof err, 10000, 0, NULL);
        CHECK_INT_EQ(rc, 2);
        CHECK_STR_CONTAINS(err, "--lock-delay goes with the reentrant lock only");
        CHECKF(strchr(err, '\n') == strrchr(err, '\n'), "more than one line: %s", err);
        CHECK_INT_EQ(run_rlk(rlk, ok, err, sizeof err, 10000, 0, NULL), 0);
        CHECK_INT_EQ(tk_key_exists(&srv, "{ld:cli}:rlk_delay"), 0);     /* released: no delay */
    }
    {   /* The paused holder: an rlk lock --hold stopped (SIGSTOP) past its renewed lease. */
        const char *hold[] = {"lock", "--lock-delay", "3000", "--watchdog-lease", "1000", "--hold",
                              "ld:cli", "--url", url, NULL};
        const char *next[] = {"lock", "--lock-delay", "3000", "-w", "20", "ld:cli", "--url", url,
                              "--", self_exe, "stamp", stamp, NULL};
        long long t0 = rlk_fx_now_ms();

        CHECK(run_rlk(rlk, hold, NULL, 0, 0, 1, &holder) == 0);
        CHECK(tk_wait_int_at_least(&srv, 1, 15000, "EXISTS %s", "ld:cli") == 0);
        CHECK(tk_wait_int_at_least(&srv, 1, 15000, "EXISTS %s", "{ld:cli}:rlk_delay") == 0);
        tk_stall_reset(&stall);
        CHECK(kill(holder, SIGSTOP) == 0);
        while (tk_key_exists(&srv, "ld:cli") != 0 && rlk_fx_now_ms() - t0 < 20000)
            rlk_fx_sleep_ms(5);
        gone = rlk_fx_now_ms();
        CHECK_INT_EQ(tk_key_exists(&srv, "ld:cli"), 0);
        CHECK_INT_EQ(tk_key_exists(&srv, "{ld:cli}:rlk_delay"), 1);
        rc = run_rlk(rlk, next, err, sizeof err, 30000, 0, NULL);
        CHECKF(rc == 0, "rlk lock --lock-delay after the paused holder: exit %d: %s", rc, err);
        got = read_stamp(stamp);
        printf("  CLI: the next rlk lock ran its command %lld ms after the paused rlk's key went "
               "(delay 3000 ms)\n", got - gone);
        CHECKF(got > 0 && got - gone >= 3000 - SLACK, "command ran %lld ms after the key went%s",
               got - gone, tk_stall_note(&stall));
        kill(holder, SIGKILL);
        kill(holder, SIGCONT);
        waitpid(holder, NULL, 0);
    }
    {   /* rlk unlock --force ends a lost lock's delay (the delay key alone) and says so;
         * with nothing there it says there was no lock; exit 0 both. */
        const char *force[] = {"unlock", "--force", "ld:cli", "--url", url, NULL};

        tk_int(&srv, "DEL %s", "ld:cli");
        CHECK(tk_command_ok(&srv, "SET %s %s PX %s", "{ld:cli}:rlk_delay", "60000", "60000") == 0);
        run_rlk_stdout = 1;
        rc = run_rlk(rlk, force, err, sizeof err, 10000, 0, NULL);
        CHECKF(rc == 0, "rlk unlock --force: exit %d: %s", rc, err);
        CHECK_STR_EQ(err, "ld:cli: no lock; its lock-delay ended\n");
        CHECK_INT_EQ(tk_key_exists(&srv, "{ld:cli}:rlk_delay"), 0);
        rc = run_rlk(rlk, force, err, sizeof err, 10000, 0, NULL);
        CHECKF(rc == 0, "rlk unlock --force, nothing there: exit %d: %s", rc, err);
        CHECK_STR_EQ(err, "ld:cli: no lock to remove\n");
        run_rlk_stdout = 0;
    }
    unlink(stamp);
    rmdir(dir);
    tk_int(&srv, "DEL %s %s", "ld:cli", "{ld:cli}:rlk_delay");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child_main(argc, argv);
    if (fl_suite_begin("fl_lockdelay", &srv, url, sizeof url, &stall, self_exe, sizeof self_exe) != 0)
        return 1;
    RUN_TEST(test_set_delay_args);
    RUN_TEST(test_paused_holder_delayed);
    RUN_TEST(test_paused_holder_control);
    RUN_TEST(test_released_delayed);
    RUN_TEST(test_released_control);
    RUN_TEST(test_force_unlock_ends_delay);
    RUN_TEST(test_force_unlock_plain_handle);
    RUN_TEST(test_reentry_keeps_delay);
    RUN_TEST(test_delay_refusals_counted);
    RUN_TEST(test_delay_renewed_in_batch);
    RUN_TEST(test_cli);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_lockdelay");
}
