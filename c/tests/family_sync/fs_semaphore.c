/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fs_semaphore.c - the semaphore (rlk_semaphore_*) against a real
 * redis-server:
 *   - every call and its replies, argument checks, a wrong-typed key, the
 *     channel names;
 *   - Redisson 4.7's newer calls: release_if_exists (never re-creates a
 *     missing or expired key), try_set_permits_ttl, expire / clear_expire /
 *     ttl on the count key only, and a release_if_exists that serves a
 *     waiter; bad input refused with nothing changed;
 *   - waits: woken by a release (bounded latency), running out, several
 *     waiting threads of one process all served by one release;
 *   - the invariant across processes: 6 processes x 3 threads take 1 or 2
 *     of 4 permits, hold them a moment and log it; the peak of permits held
 *     at once, computed from the merged log, never exceeds 4;
 *   - a killed holder: its permits stay taken (nothing expires them) until
 *     someone releases them; a waiter is then served;
 *   - the queue: waiters are served in arrival order, one release
 *     each; a waiter whose wait runs out leaves the queue; a waiter killed
 *     while queued is skipped by the release that reaches it (its grant has
 *     no subscriber) and the next one is served at once; a waiter's entry
 *     enters the queue only once it can hear its grant: with waiter B's
 *     subscriber refused by the server, the release serves the waiter
 *     heading the queue (A), and B the next release.
 *
 * Child modes (argv[1]): contend URL NAME THREADS ITERS LOG | hold URL NAME N
 * | wait URL NAME.
 */
#include "check.h"
#include "holdlog.h"
#include "tk_util.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

#define LATENCY_MS 250      /* bound on a wake-up, with room for scheduling noise */

/* ------------------------------------------------------------ child: contend */

typedef struct contend {
    rlk_semaphore *sem;
    int iters;
    int log_fd;
    int errors;
} contend;

static void contend_one(contend *ct, int idx, int seq, unsigned *seed)
{
    long long permits = 1 + (long long)(tk_rand(seed) % 2), sent = rlk_fx_now_ns();

    if (rlk_semaphore_try_acquire(ct->sem, permits, 20000) != RLK_OK) {
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
        return;
    }
    tk_hold_begin(ct->log_fd, idx, seq, TK_HOLD_PERMITS, sent, rlk_fx_now_ns(), permits);
    tk_spin_ns(200000 + (long long)(tk_rand(seed) % 600000));
    tk_hold_end(ct->log_fd, idx, seq, rlk_fx_now_ns());
    if (rlk_semaphore_release(ct->sem, permits, NULL) != RLK_OK)
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
}

static void *contend_main(void *arg)
{
    tk_thread_arg *a = arg;
    contend *ct = a->ctx;
    unsigned seed = (unsigned)getpid() * 7919u + (unsigned)a->idx;

    for (int i = 0; i < ct->iters; i++)
        contend_one(ct, a->idx, i, &seed);
    return NULL;
}

static int child_contend(const char *curl, const char *name, int threads, int iters,
                         const char *log)
{
    rlk_client *c = tk_connect(curl, 0, threads);
    contend ct = {0};

    if (!c || threads > 8 || !(ct.sem = rlk_semaphore_new(c, name)))
        return 2;
    ct.iters = iters;
    ct.log_fd = tk_holdlog_open(log);
    if (ct.log_fd < 0)
        return 2;
    if (tk_child_go_threads(threads, contend_main, &ct) != 0)
        return 2;
    close(ct.log_fd);
    tk_say("done %d", ct.errors);
    rlk_semaphore_free(ct.sem);
    rlk_free(c);
    return 0;
}

/* ------------------------------------------------------------ child: hold (killed) */

static int child_hold(const char *curl, const char *name, long long permits)
{
    rlk_client *c = tk_connect(curl, 0, 1);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, name) : NULL;
    char buf[16];

    if (!s || rlk_semaphore_try_acquire(s, permits, 5000) != RLK_OK)
        return 2;
    tk_say("held");
    while (read(STDIN_FILENO, buf, sizeof buf) > 0) {
        /* hold until killed */
    }
    return 0;
}

/* ------------------------------------------------------------ child: wait (killed) */

static int child_wait(const char *curl, const char *name)
{
    rlk_client *c = tk_connect(curl, 0, 1);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, name) : NULL;

    if (!s)
        return 2;
    tk_say("waiting");
    return rlk_semaphore_try_acquire(s, 1, 60000) == RLK_OK ? 0 : 1;
}

static int child_main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "wait") == 0)
        return child_wait(argv[2], argv[3]);
    if (argc == 7 && strcmp(argv[1], "contend") == 0)
        return child_contend(argv[2], argv[3], atoi(argv[4]), atoi(argv[5]), argv[6]);
    if (argc == 5 && strcmp(argv[1], "hold") == 0)
        return child_hold(argv[2], argv[3], atoll(argv[4]));
    fprintf(stderr, "fs_semaphore: unknown child mode\n");
    return 2;
}

/* ------------------------------------------------------------ helpers */

typedef struct bg_acquire {
    rlk_semaphore *sem;
    long long permits, wait_ms;
    int rc;
    long long done_ms;
    tk_latch *done;
} bg_acquire;

static void *bg_acquire_main(void *arg)
{
    bg_acquire *b = arg;

    b->rc = rlk_semaphore_try_acquire(b->sem, b->permits, b->wait_ms);
    b->done_ms = rlk_fx_now_ms();
    tk_latch_add(b->done, 1);
    return NULL;
}

static long long available(rlk_semaphore *s)
{
    long long n = -999;

    CHECK_INT_EQ(rlk_semaphore_available(s, &n), RLK_OK);
    return n;
}

/* ------------------------------------------------------------ calls */

static void test_calls(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_semaphore *s, *tagged;
    long long n = -1;
    int set = -1;

    REQUIRE(c);
    s = rlk_semaphore_new(c, "fs:calls");
    tagged = rlk_semaphore_new(c, "a{fs}b");
    REQUIRE(s && tagged);
    CHECK_STR_EQ(rlk_semaphore_name(s), "fs:calls");
    CHECK_STR_EQ(rlk_semaphore_channel(s), "redisson_sc:{fs:calls}");
    CHECK_STR_EQ(rlk_semaphore_channel(tagged), "redisson_sc:a{fs}b");
    CHECK(rlk_semaphore_new(c, "") == NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);

    CHECK_INT_EQ(available(s), 0);                                  /* no key */
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 0), RLK_ERR_BUSY);
    CHECK_STR_CONTAINS(rlk_errstr(c), "not available");
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, 3, &set), RLK_OK);
    CHECK_INT_EQ(set, 1);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, 5, &set), RLK_OK);
    CHECK_INT_EQ(set, 0);
    CHECK_INT_EQ(available(s), 3);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 2, 0), RLK_OK);
    CHECK_INT_EQ(available(s), 1);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 2, 0), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_semaphore_acquire(s, 1), RLK_OK);
    CHECK_INT_EQ(rlk_semaphore_release(s, 3, &n), RLK_OK);
    CHECK_INT_EQ(n, 3);
    CHECK_INT_EQ(rlk_semaphore_add_permits(s, -5, &n), RLK_OK);
    CHECK_INT_EQ(n, -2);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 0), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_semaphore_drain(s, &n), RLK_OK);
    CHECK_INT_EQ(n, -2);
    CHECK_INT_EQ(available(s), 0);
    CHECK_INT_EQ(rlk_semaphore_add_permits(s, 4, &n), RLK_OK);
    CHECK_INT_EQ(n, 4);
    CHECK_INT_EQ(rlk_semaphore_drain(s, &n), RLK_OK);
    CHECK_INT_EQ(n, 4);

    /* Arguments are checked before any I/O. */
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 0, 0), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "permits 0 is not in 1..");
    CHECK_INT_EQ(rlk_semaphore_release(s, -1, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, -1, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_semaphore_add_permits(s, 1000000000001LL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(NULL, 1, 0), RLK_ERR_ARG);

    /* The script's refusals come through as RLK_ERR_SCRIPT. */
    CHECK(tk_command_ok(&srv, "DEL fs:calls") == 0);
    CHECK(tk_command_ok(&srv, "HSET fs:calls f v") == 0);
    CHECK_INT_EQ(rlk_semaphore_available(s, &n), RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(rlk_errstr(c), "RLK_WRONGTYPE");
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 1000), RLK_ERR_SCRIPT);
    CHECK(tk_command_ok(&srv, "DEL fs:calls") == 0);

    rlk_semaphore_free(tagged);
    rlk_semaphore_free(s);
    rlk_free(c);
}

/* ------------------------------------------------------------ waits */

static void test_wait_woken_by_release(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:wake") : NULL;
    tk_latch done;
    bg_acquire b = {0};
    pthread_t t;
    long long t_rel, latency;

    REQUIRE(s);
    tk_latch_init(&done);
    b.sem = s;
    b.permits = 2;
    b.wait_ms = 10000;
    b.done = &done;
    pthread_create(&t, NULL, bg_acquire_main, &b);
    CHECK(tk_wait_numsub(&srv, "redisson_sc:{fs:wake}", 1, 5000) == 0);
    CHECK_INT_EQ(rlk_semaphore_release(s, 1, NULL), RLK_OK);       /* 1 of 2: not enough */
    CHECK_INT_EQ(tk_latch_wait(&done, 1, 100), 0);
    tk_stall_reset(&stall);
    t_rel = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_semaphore_release(s, 1, NULL), RLK_OK);
    tk_latch_wait(&done, 1, 10000);
    pthread_join(t, NULL);
    latency = b.done_ms - t_rel;
    printf("  waiter for 2 permits: served %lld ms after the release that made them\n", latency);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECKF(latency <= LATENCY_MS, "served %lld ms after the release (bound %d ms, longest "
           "scheduling gap %lld ms%s)", latency, LATENCY_MS, tk_stall_max_gap_ms(&stall),
           tk_stall_note(&stall));
    CHECK_INT_EQ(available(s), 0);
    CHECK(tk_wait_numsub_at_most(&srv, "redisson_sc:{fs:wake}", 0, 5000) == 0); /* unsubscribed */
    tk_latch_destroy(&done);
    rlk_semaphore_free(s);
    rlk_free(c);
}

static void test_wait_runs_out(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:out") : NULL;
    long long t0, elapsed;

    REQUIRE(s);
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 300), RLK_ERR_BUSY);
    elapsed = rlk_fx_now_ms() - t0;
    CHECK_STR_CONTAINS(rlk_errstr(c), "not available after");
    CHECKF(elapsed >= 300 && elapsed <= 300 + LATENCY_MS, "gave up after %lld ms, wait 300 ms "
           "(longest scheduling gap %lld ms%s)", elapsed, tk_stall_max_gap_ms(&stall),
           tk_stall_note(&stall));
    rlk_semaphore_free(s);
    rlk_free(c);
}

#define LOCAL_WAITERS 5

static void test_local_waiters_all_served(void)
{
    rlk_client *c = tk_connect(url, 0, LOCAL_WAITERS + 1);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:local") : NULL;
    bg_acquire b[LOCAL_WAITERS];
    pthread_t t[LOCAL_WAITERS];
    tk_latch done;
    int ok = 0;

    REQUIRE(s);
    tk_latch_init(&done);
    for (int i = 0; i < LOCAL_WAITERS; i++) {
        b[i] = (bg_acquire){s, 1, 10000, -1, 0, &done};
        pthread_create(&t[i], NULL, bg_acquire_main, &b[i]);
    }
    CHECK(tk_wait_numsub(&srv, "redisson_sc:{fs:local}", 1, 5000) == 0);
    CHECK_INT_EQ(rlk_semaphore_release(s, LOCAL_WAITERS, NULL), RLK_OK);   /* one message */
    CHECK_INT_EQ(tk_latch_wait(&done, LOCAL_WAITERS, 5000), LOCAL_WAITERS);
    for (int i = 0; i < LOCAL_WAITERS; i++) {
        pthread_join(t[i], NULL);
        ok += b[i].rc == RLK_OK;
    }
    CHECK_INT_EQ(ok, LOCAL_WAITERS);
    CHECK_INT_EQ(available(s), 0);
    tk_latch_destroy(&done);
    rlk_semaphore_free(s);
    rlk_free(c);
}

/* ------------------------------------------------------------ invariant across processes */

#define PROCS 6
#define THREADS 3
#define ITERS 25
#define PERMITS 4

static void test_invariant_procs(void)
{
    char dir[] = "/tmp/rlk-fs-XXXXXX", logs[PROCS][300], line[64];
    const char *paths[PROCS];
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:inv") : NULL;
    tk_child kids[PROCS];
    tk_hold *holds = NULL;
    int spawned = 0, done = 0, errors = 0, bad = 0;
    long long peak, t0;
    size_t n = 0;

    REQUIRE(s && mkdtemp(dir) != NULL);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, PERMITS, NULL), RLK_OK);
    for (int p = 0; p < PROCS; p++) {
        char threads[8], iters[8];
        const char *args[] = {"contend", url, "fs:inv", threads, iters, logs[p], NULL};

        snprintf(threads, sizeof threads, "%d", THREADS);
        snprintf(iters, sizeof iters, "%d", ITERS);
        snprintf(logs[p], sizeof logs[p], "%s/log.%d", dir, p);
        paths[p] = logs[p];
        if (tk_child_spawn(&kids[p], args) != 0)
            break;
        spawned++;
    }
    CHECK_INT_EQ(spawned, PROCS);
    for (int p = 0; p < spawned; p++)
        CHECKF(tk_child_read_line(&kids[p], line, sizeof line, 15000) == 0 &&
               strcmp(line, "ready") == 0, "child %d did not get ready", p);
    t0 = rlk_fx_now_ms();
    tk_children_send(kids, spawned, "go");
    for (int p = 0; p < spawned; p++) {
        int errs = 0;

        if (tk_child_read_line(&kids[p], line, sizeof line, 40000) == 0 &&
            sscanf(line, "done %d", &errs) == 1) {
            done++;
            errors += errs;
        }
        CHECKF(tk_child_wait(&kids[p], 10000) == 0, "child %d did not exit cleanly", p);
    }
    tk_holds_read(paths, PROCS, -1, &holds, &n, &bad);
    peak = tk_holds_check(holds, n, 1).peak_permits;
    printf("  %d processes x %d threads, %zu holds of 1-2 of %d permits in %lld ms: at most %lld "
           "permits held at once\n", PROCS, THREADS, n, PERMITS, rlk_fx_now_ms() - t0, peak);
    CHECK_INT_EQ(done, PROCS);
    CHECK_INT_EQ(errors, 0);
    CHECK_INT_EQ(n, PROCS * THREADS * ITERS);
    CHECK_INT_EQ(bad, 0);
    CHECKF(peak <= PERMITS, "%lld permits held at once, only %d exist", peak, PERMITS);
    CHECKF(peak >= 2, "peak %lld: the holders never overlapped, nothing was tested", peak);
    for (size_t i = 0; i < n; i++)
        CHECKF(!holds[i].open, "hold of pid %d thread %d never released", holds[i].pid,
               holds[i].thread);
    CHECK_INT_EQ(available(s), PERMITS);
    free(holds);
    for (int p = 0; p < PROCS; p++)
        unlink(logs[p]);
    rmdir(dir);
    rlk_semaphore_free(s);
    rlk_free(c);
}

/* ------------------------------------------------------------ a killed holder */

static void test_killed_holder_leaks(void)
{
    const char *args[] = {"hold", url, "fs:kill", "2", NULL};
    rlk_client *c = tk_connect(url, 0, 3);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:kill") : NULL;
    tk_child kid;
    tk_latch done;
    bg_acquire b = {0};
    pthread_t t;
    char line[32];
    long long t_rel, latency;

    REQUIRE(s);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, 3, NULL), RLK_OK);
    REQUIRE(tk_child_spawn(&kid, args) == 0);
    if (tk_child_read_line(&kid, line, sizeof line, 15000) != 0 || strcmp(line, "held") != 0) {
        CHECK(!"the holder did not take its permits");
        tk_child_kill(&kid);
        return;
    }
    kill(kid.pid, SIGKILL);
    CHECK(tk_child_wait(&kid, 5000) != 0);
    /* Dead, and its 2 permits stay taken: nothing records or expires them. */
    CHECK_INT_EQ(available(s), 1);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 2, 300), RLK_ERR_BUSY);
    CHECK_INT_EQ(available(s), 1);
    /* A waiter for all 3 is served once someone gives the 2 back. */
    tk_latch_init(&done);
    b.sem = s;
    b.permits = 3;
    b.wait_ms = 10000;
    b.done = &done;
    pthread_create(&t, NULL, bg_acquire_main, &b);
    CHECK(tk_wait_numsub(&srv, "redisson_sc:{fs:kill}", 1, 5000) == 0);
    CHECK_INT_EQ(tk_latch_get(&done), 0);
    tk_stall_reset(&stall);
    t_rel = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_semaphore_release(s, 2, NULL), RLK_OK);
    tk_latch_wait(&done, 1, 10000);
    pthread_join(t, NULL);
    latency = b.done_ms - t_rel;
    printf("  killed holder of 2 of 3 permits: still taken after its death; a waiter for 3 was "
           "served %lld ms after another client released the 2\n", latency);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECKF(latency <= LATENCY_MS, "served after %lld ms (longest scheduling gap %lld ms%s)",
           latency, tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_semaphore_release(s, 3, NULL), RLK_OK);
    CHECK_INT_EQ(available(s), 3);
    tk_latch_destroy(&done);
    rlk_semaphore_free(s);
    rlk_free(c);
}

/* ------------------------------------------------------------ the queue */

/* Starts waiter b (1 permit, wait_ms) on its thread and waits until the
 * server's queue holds want entries (it queued). */
static void start_queued(bg_acquire *b, pthread_t *t, rlk_semaphore *s, long long wait_ms,
                         tk_latch *done, const char *waiters, long long want)
{
    *b = (bg_acquire){s, 1, wait_ms, -1, 0, done};
    pthread_create(t, NULL, bg_acquire_main, b);
    CHECKF(tk_wait_int_at_least(&srv, want, 5000, "LLEN %s", waiters) == 0,
           "the waiter did not queue (%lld queued)", want);
}

static void test_queue_fifo(void)
{
    const char *waiters = "{fs:q}:rlk_waiters";
    rlk_client *c = tk_connect(url, 0, 5);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:q") : NULL;
    bg_acquire b[3];
    pthread_t t[3];
    tk_latch done;

    REQUIRE(s);
    tk_latch_init(&done);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, 0, NULL), RLK_OK);
    for (int i = 0; i < 3; i++)
        start_queued(&b[i], &t[i], s, 10000, &done, waiters, i + 1);
    for (int i = 0; i < 3; i++) {
        /* One release serves the first waiter still queued, and only it. */
        CHECK_INT_EQ(rlk_semaphore_release(s, 1, NULL), RLK_OK);
        CHECK_INT_EQ(tk_latch_wait(&done, i + 1, 5000), i + 1);
        for (int j = 0; j < 3; j++)
            CHECKF((b[j].rc == RLK_OK) == (j <= i), "after release %d waiter %d rc %d", i + 1, j,
                   b[j].rc);
    }
    for (int i = 0; i < 3; i++)
        pthread_join(t[i], NULL);
    CHECK_INT_EQ(available(s), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, waiters), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "{fs:q}:rlk_next"), 0);
    /* A waiter whose wait runs out leaves the queue. */
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 200), RLK_ERR_BUSY);
    CHECK_INT_EQ(tk_key_exists(&srv, waiters), 0);
    CHECK_INT_EQ(rlk_semaphore_release(s, 1, NULL), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, "{fs:q}:rlk_next"), 0);    /* nobody to reserve it for */
    CHECK_INT_EQ(available(s), 1);
    tk_latch_destroy(&done);
    rlk_semaphore_free(s);
    rlk_free(c);
}

/* The first-attempt window, without timing (the semaphore has no local queue: B is a client
 * of this process whose subscriber has not started): the server refuses new connections
 * while B makes its first attempt, so B cannot subscribe to its wake channel; A (subscribed
 * before) queues too. A
 * release of 1 must serve the waiter whose entry heads the queue when it runs: B when B's entry
 * is there (it cannot hear the grant: the old code, which fails here), A otherwise. B is served
 * by the next release. */
static void test_queue_window(void)
{
    const char *waiters = "{fs:win}:rlk_waiters";
    rlk_client *c = tk_connect(url, 0, 2), *ca = tk_connect(url, 0, 1), *cb = tk_connect(url, 0, 1);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:win") : NULL;
    rlk_semaphore *warm = c ? rlk_semaphore_new(c, "fs:warm") : NULL;
    rlk_semaphore *sa = ca ? rlk_semaphore_new(ca, "fs:win") : NULL;
    rlk_semaphore *saw = ca ? rlk_semaphore_new(ca, "fs:warm") : NULL;
    rlk_semaphore *sb = cb ? rlk_semaphore_new(cb, "fs:win") : NULL;
    bg_acquire a, aw, b;
    pthread_t ta, taw, tb;
    tk_latch done_a, done_aw, done_b;
    tk_refuse rf = {0};
    char ch[128], a_ch[128];
    long long cid_a, cid_b, head = -1, pos_a = -1, pos_b = -1;
    int refused;

    REQUIRE(s && warm && sa && saw && sb);
    cid_a = tk_uuid_cid(rlk_client_uuid(ca));
    cid_b = tk_uuid_cid(rlk_client_uuid(cb));
    if (cid_a == cid_b) {
        printf("  A and B drew the same wake channel (1 in 32768): not this run\n");
        return;
    }
    tk_latch_init(&done_a);
    tk_latch_init(&done_aw);
    tk_latch_init(&done_b);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, 0, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(warm, 0, NULL), RLK_OK);
    CHECK_INT_EQ(available(sb), 0);     /* B's pool connection open before the refusal */
    /* A's subscriber connected before the refusal: A waits on fs:warm until its wake channel
     * there is subscribed, then gets the permit released there. */
    snprintf(ch, sizeof ch, "redisson_sc:{fs:warm}:rlk:%lld", cid_a);
    snprintf(a_ch, sizeof a_ch, "redisson_sc:{fs:win}:rlk:%lld", cid_a);
    aw = (bg_acquire){saw, 1, 10000, -1, 0, &done_aw};
    pthread_create(&taw, NULL, bg_acquire_main, &aw);
    CHECK(tk_wait_numsub(&srv, ch, 1, 10000) == 0);
    CHECK_INT_EQ(rlk_semaphore_release(warm, 1, NULL), RLK_OK);
    CHECK_INT_EQ(tk_latch_wait(&done_aw, 1, 10000), 1);
    pthread_join(taw, NULL);
    CHECK_INT_EQ(aw.rc, RLK_OK);

    refused = CHECK(tk_refuse_begin(&rf, &srv) == 0);
    b = (bg_acquire){sb, 1, 20000, -1, 0, &done_b};
    pthread_create(&tb, NULL, bg_acquire_main, &b);
    /* B's subscriber tried to connect: its first attempt is over (the wait joins after it). */
    CHECK(tk_refuse_wait_rejected(&rf, 10000) == 0);
    pos_b = tk_queue_find_cid(rf.ctl, waiters, cid_b);
    a = (bg_acquire){sa, 1, 20000, -1, 0, &done_a};
    pthread_create(&ta, NULL, bg_acquire_main, &a);
    pos_a = tk_wait_queued_subscribed(rf.ctl, waiters, cid_a, a_ch, 10000);
    CHECKF(pos_a >= 0, "A's entry did not show in the queue (%lld)", pos_a);
    head = tk_ctx_int(rf.ctl, "LINDEX %s 0", waiters);     /* "<ticket> <permits>": the ticket */
    CHECK_INT_EQ(rlk_semaphore_release(s, 1, NULL), RLK_OK);     /* B still cannot subscribe */
    CHECK_INT_EQ(tk_latch_wait(&done_a, 1, 10000), 1);
    printf("  release with B unable to subscribe: B's entry at %lld, A's at %lld in the queue; "
           "A served (rc %d)\n", pos_b, pos_a, a.rc);
    CHECK_INT_EQ(a.rc, RLK_OK);
    CHECKF(head / 1024 == cid_a, "the permit went to A while B's entry (%lld) headed the queue: "
           "B was dropped as dead for a grant it could not hear", head);
    CHECK_INT_EQ(tk_latch_get(&done_b), 0);
    if (refused)
        CHECK(tk_refuse_end(&rf) == 0);
    pthread_join(ta, NULL);
    /* B subscribes, queues, and is served by the next release. */
    CHECK_INT_EQ(rlk_semaphore_release(s, 1, NULL), RLK_OK);
    CHECK_INT_EQ(tk_latch_wait(&done_b, 1, 15000), 1);
    pthread_join(tb, NULL);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECK_INT_EQ(available(s), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, waiters), 0);
    tk_latch_destroy(&done_a);
    tk_latch_destroy(&done_aw);
    tk_latch_destroy(&done_b);
    rlk_semaphore_free(sb);
    rlk_semaphore_free(saw);
    rlk_semaphore_free(sa);
    rlk_semaphore_free(warm);
    rlk_semaphore_free(s);
    rlk_free(cb);
    rlk_free(ca);
    rlk_free(c);
}

static void test_queue_dead_waiter_skipped(void)
{
    const char *waiters = "{fs:qd}:rlk_waiters";
    const char *args[] = {"wait", url, "fs:qd", NULL};
    rlk_client *c = tk_connect(url, 0, 3);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:qd") : NULL;
    tk_child kid;
    tk_latch done;
    bg_acquire b;
    pthread_t t;
    char line[32];
    long long t_rel, latency;

    REQUIRE(s);
    tk_latch_init(&done);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, 0, NULL), RLK_OK);
    REQUIRE(tk_child_spawn(&kid, args) == 0);
    if (tk_child_read_line(&kid, line, sizeof line, 15000) != 0 || strcmp(line, "waiting") != 0 ||
        tk_wait_int_at_least(&srv, 1, 5000, "LLEN %s", waiters) != 0) {
        CHECK(!"the child did not queue");
        tk_child_kill(&kid);
        return;
    }
    kill(kid.pid, SIGKILL);     /* queued first, then gone without a cancel */
    CHECK(tk_child_wait(&kid, 5000) != 0);
    start_queued(&b, &t, s, 10000, &done, waiters, 2);
    tk_stall_reset(&stall);
    t_rel = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_semaphore_release(s, 1, NULL), RLK_OK);
    tk_latch_wait(&done, 1, 10000);
    pthread_join(t, NULL);
    latency = b.done_ms - t_rel;
    printf("  a waiter killed while first in the queue was skipped; the next one was served %lld "
           "ms after the release\n", latency);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECKF(latency <= LATENCY_MS, "served after %lld ms (longest scheduling gap %lld ms%s)",
           latency, tk_stall_max_gap_ms(&stall), tk_stall_note(&stall));
    CHECK_INT_EQ(available(s), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, waiters), 0);
    tk_latch_destroy(&done);
    rlk_semaphore_free(s);
    rlk_free(c);
}

/* ------------------------------------------------------------ Redisson 4.7's newer calls */

static void test_ttl_calls(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:ttl") : NULL;
    long long n = 0, ttl = 0;
    int done = -1;

    REQUIRE(s);
    /* release_if_exists: no key, nothing made. */
    CHECK_INT_EQ(rlk_semaphore_release_if_exists(s, 2, &done), RLK_OK);
    CHECK_INT_EQ(done, 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "fs:ttl"), 0);
    CHECK_INT_EQ(rlk_semaphore_ttl(s, &ttl), RLK_OK);
    CHECK_INT_EQ(ttl, -2);
    CHECK_INT_EQ(rlk_semaphore_expire(s, 1000, &done), RLK_OK);
    CHECK_INT_EQ(done, 0);

    /* try_set_permits_ttl: set once, with its TTL; a second call changes nothing. */
    CHECK_INT_EQ(rlk_semaphore_try_set_permits_ttl(s, 2, 60000, &done), RLK_OK);
    CHECK_INT_EQ(done, 1);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits_ttl(s, 5, 1000, &done), RLK_OK);
    CHECK_INT_EQ(done, 0);
    CHECK_INT_EQ(available(s), 2);
    CHECK_INT_EQ(rlk_semaphore_ttl(s, &ttl), RLK_OK);
    CHECKF(ttl > 50000 && ttl <= 60000, "ttl %lld after try_set_permits_ttl 60000", ttl);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 2, 0), RLK_OK);
    CHECK_INT_EQ(rlk_semaphore_release_if_exists(s, 2, &done), RLK_OK);
    CHECK_INT_EQ(done, 1);
    CHECK_INT_EQ(available(s), 2);
    CHECK(tk_int(&srv, "PTTL fs:ttl") > 50000);            /* kept */

    /* expire / clear_expire on the count key. */
    CHECK_INT_EQ(rlk_semaphore_clear_expire(s, &done), RLK_OK);
    CHECK_INT_EQ(done, 1);
    CHECK_INT_EQ(tk_int(&srv, "PTTL fs:ttl"), -1);
    CHECK_INT_EQ(rlk_semaphore_clear_expire(s, &done), RLK_OK);
    CHECK_INT_EQ(done, 0);
    CHECK_INT_EQ(rlk_semaphore_expire(s, 90000, &done), RLK_OK);
    CHECK_INT_EQ(done, 1);
    n = tk_int(&srv, "PTTL fs:ttl");
    CHECKF(n > 80000 && n <= 90000, "PTTL %lld after expire 90000", n);

    /* A semaphore whose TTL ran out is gone for good: release_if_exists does not make it
     * again (release would). */
    CHECK_INT_EQ(rlk_semaphore_expire(s, 50, NULL), RLK_OK);
    for (int i = 0; i < 200 && tk_key_exists(&srv, "fs:ttl") == 1; i++)
        rlk_fx_sleep_ms(5);     /* time itself is the event: a bounded poll */
    CHECK_INT_EQ(tk_key_exists(&srv, "fs:ttl"), 0);
    CHECK_INT_EQ(rlk_semaphore_release_if_exists(s, 1, &done), RLK_OK);
    CHECK_INT_EQ(done, 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "fs:ttl"), 0);

    /* Bad input: refused before any call, nothing changed. */
    CHECK_INT_EQ(rlk_semaphore_try_set_permits_ttl(s, 1, 60000, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_semaphore_release_if_exists(s, 0, &done), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "permits 0 is not in 1..");
    CHECK_INT_EQ(rlk_semaphore_try_set_permits_ttl(s, 1, 0, NULL), RLK_ERR_ARG);
    CHECK_STR_CONTAINS(rlk_errstr(c), "ttl_ms 0 is not in 1..");
    CHECK_INT_EQ(rlk_semaphore_try_set_permits_ttl(s, -1, 1000, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_semaphore_expire(s, 0, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_semaphore_expire(s, 1000000000001LL, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_semaphore_ttl(s, NULL), RLK_ERR_ARG);
    CHECK_INT_EQ(available(s), 1);
    CHECK(tk_int(&srv, "PTTL fs:ttl") > 50000);
    CHECK(tk_command_ok(&srv, "DEL fs:ttl") == 0);
    CHECK(tk_command_ok(&srv, "RPUSH fs:ttl x") == 0);
    CHECK_INT_EQ(rlk_semaphore_release_if_exists(s, 1, NULL), RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(rlk_errstr(c), "RLK_WRONGTYPE");
    CHECK_INT_EQ(rlk_semaphore_expire(s, 1000, NULL), RLK_ERR_SCRIPT);
    CHECK_INT_EQ(tk_int(&srv, "PTTL fs:ttl"), -1);
    CHECK(tk_command_ok(&srv, "DEL fs:ttl") == 0);
    rlk_semaphore_free(s);
    rlk_free(c);
}

/* A waiter queued on an existing semaphore is served by release_if_exists. */
static void test_release_if_exists_serves_waiter(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "fs:rie") : NULL;
    bg_acquire b = {0};
    tk_latch served;
    pthread_t t;
    int done = -1;

    REQUIRE(s);
    tk_latch_init(&served);
    CHECK_INT_EQ(rlk_semaphore_try_set_permits(s, 0, NULL), RLK_OK);
    b.done = &served;
    b.sem = s;
    b.permits = 1;
    b.wait_ms = 10000;
    pthread_create(&t, NULL, bg_acquire_main, &b);
    CHECK_INT_EQ(tk_wait_int_at_least(&srv, 1, 5000, "LLEN %s", "{fs:rie}:rlk_waiters"), 0);
    CHECK_INT_EQ(rlk_semaphore_release_if_exists(s, 1, &done), RLK_OK);
    CHECK_INT_EQ(done, 1);
    pthread_join(t, NULL);
    CHECK_INT_EQ(b.rc, RLK_OK);
    CHECK_INT_EQ(available(s), 0);
    CHECK(tk_command_ok(&srv, "DEL fs:rie") == 0);
    tk_latch_destroy(&served);
    rlk_semaphore_free(s);
    rlk_free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child_main(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    if (tk_suite_start("fs_semaphore", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_calls);
    RUN_TEST(test_ttl_calls);
    RUN_TEST(test_release_if_exists_serves_waiter);
    RUN_TEST(test_wait_woken_by_release);
    RUN_TEST(test_wait_runs_out);
    RUN_TEST(test_local_waiters_all_served);
    RUN_TEST(test_invariant_procs);
    RUN_TEST(test_killed_holder_leaks);
    RUN_TEST(test_queue_fifo);
    RUN_TEST(test_queue_window);
    RUN_TEST(test_queue_dead_waiter_skipped);
    tk_suite_stop(&srv, &stall);
    return check_summary("fs_semaphore");
}
