/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_rwlock.c - the read-write lock (rlk_rwlock_*) against a real redis-server:
 *   - sides: readers share, a writer excludes everyone, the writer may read
 *     and keeps its reads when it releases the write lock (downgrade);
 *     re-entry counts, not-owner answers, argument checks, force unlock;
 *   - no upgrade: a reader asking for the write lock gets RLK_ERR_UPGRADE at
 *     once (try_lock with a wait and lock() alike), nothing changed;
 *   - the watchdog renews lease-less reads (several owners of one lock in one
 *     renew_readers call) and writers, and reports a lost read or write with
 *     its kind;
 *   - a downgrade wakes the readers waiting in other processes at once (by
 *     the message 1), not when the writer's 20 s lease would run out;
 *   - the invariant: 4 processes x 4 threads, mixed readers and writers (some
 *     writers downgrade); the event log shows no writer overlapping any other
 *     hold, and reader concurrency above 1 (the maximum is printed);
 *   - waiting writers queue by ticket: the last reader's exit reserves the
 *     lock for the waiting writer and grants it (no reader takes it in the
 *     claim window), and a writer that gives up leaves the queue;
 *   - a reader behind a writer's reservation ({name}:rlk_next, set by hand)
 *     waits it out with no TTL wake-up counted; behind a writer's lock that
 *     expires with no release, it counts one (test_reserved_not_ttl);
 *   - a writer's ticket enters the queue only once it can hear its grant
 *     (no grant goes to a waiter that cannot hear it): with writer B's
 *     subscriber refused by the server, the release goes to the writer
 *     heading the queue (A), and B after it.
 *
 * Child modes (argv[1]): contend URL THREADS ITERS LOGFILE | readers URL THREADS
 * | window URL WAIT_MS.
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

static int mode_of(rlk_rwlock *rw)
{
    int mode = -1;

    if (rlk_rwlock_mode(rw, &mode) != RLK_OK)
        return -1;
    return mode;
}

static long long count_of(rlk_rwlock *rw, int side)
{
    long long n = -1;

    if (rlk_rwlock_hold_count(rw, side, &n) != RLK_OK)
        return -1;
    return n;
}

/* ------------------------------------------------------------ child: contend */

typedef struct contend {
    rlk_client *c;
    rlk_rwlock *lock;
    int iters;
    tk_hold *recs;              /* 2 * iters per thread: a downgrade makes two */
    int errors;
} contend;

typedef struct contend_arg {
    contend *ct;
    int idx;
    int nrec;
} contend_arg;

static tk_hold *contend_rec(contend_arg *a, int kind, long long acq)
{
    tk_hold *r = &a->ct->recs[a->idx * 2 * a->ct->iters + a->nrec];

    r->start_ns = acq;
    r->pid = (int)getpid();
    r->thread = a->idx;
    r->seq = a->nrec++;
    r->kind = kind;
    return r;
}

static void contend_error(contend *ct, const char *what)
{
    fprintf(stderr, "  child %d: %s: %s\n", (int)getpid(), what, rlk_errstr(ct->c));
    __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
}

/* A write hold; one in three also reads and downgrades. */
static void contend_write(contend_arg *a, long long lease, unsigned *seed)
{
    contend *ct = a->ct;
    int downgrade = tk_rand(seed) % 3 == 0;
    tk_hold *w, *r = NULL;

    if (rlk_rwlock_try_lock(ct->lock, RLK_RW_WRITE, 20000, lease) != RLK_OK)
        return contend_error(ct, "write lock");
    w = contend_rec(a, TK_HOLD_WRITE, rlk_fx_now_ns());
    tk_spin_ns(30000 + (long long)(tk_rand(seed) % 70000));
    if (downgrade && rlk_rwlock_try_lock(ct->lock, RLK_RW_READ, 0, lease) != RLK_OK)
        contend_error(ct, "writer's read");
    w->end_ns = rlk_fx_now_ns();
    if (rlk_rwlock_unlock(ct->lock, RLK_RW_WRITE) != RLK_OK)
        contend_error(ct, "write unlock");
    if (!downgrade)
        return;
    r = contend_rec(a, TK_HOLD_READ, w->end_ns);   /* held since before: a reader from here */
    tk_spin_ns(100000 + (long long)(tk_rand(seed) % 200000));
    r->end_ns = rlk_fx_now_ns();
    if (rlk_rwlock_unlock(ct->lock, RLK_RW_READ) != RLK_OK)
        contend_error(ct, "downgraded read unlock");
}

static void contend_read(contend_arg *a, long long lease, unsigned *seed)
{
    contend *ct = a->ct;
    tk_hold *r;

    if (rlk_rwlock_try_lock(ct->lock, RLK_RW_READ, 20000, lease) != RLK_OK)
        return contend_error(ct, "read lock");
    r = contend_rec(a, TK_HOLD_READ, rlk_fx_now_ns());
    tk_spin_ns(200000 + (long long)(tk_rand(seed) % 400000));
    r->end_ns = rlk_fx_now_ns();
    if (rlk_rwlock_unlock(ct->lock, RLK_RW_READ) != RLK_OK)
        contend_error(ct, "read unlock");
}

static void *contend_main(void *arg)
{
    contend_arg *a = arg;
    unsigned seed = (unsigned)getpid() * 31u + (unsigned)a->idx;

    for (int i = 0; i < a->ct->iters; i++) {
        long long lease = (i + a->idx) % 2 ? 5000 : 0;     /* half leased, half watchdog */
        struct timespec outside = {0, (long)(tk_rand(&seed) % 500000)};

        if (tk_rand(&seed) % 4 == 0)
            contend_write(a, lease, &seed);
        else
            contend_read(a, lease, &seed);
        nanosleep(&outside, NULL);      /* work outside the lock */
    }
    return NULL;
}

static int child_contend(const char *curl, int threads, int iters, const char *logpath)
{
    rlk_client *c = tk_connect(curl, 2000, threads);
    rlk_runtime_stats st;
    contend ct = {0};
    contend_arg args[16];
    pthread_t t[16];
    char line[32];
    size_t n = 0;

    if (!c || threads > 16 || !(ct.lock = rlk_rwlock_new(c, "rw:contend")))
        return 2;
    ct.c = c;
    ct.iters = iters;
    ct.recs = calloc((size_t)(threads * 2 * iters), sizeof *ct.recs);
    if (!ct.recs)
        return 2;
    tk_say("ready");
    if (!fgets(line, sizeof line, stdin) || strncmp(line, "go", 2) != 0)
        return 2;
    for (int i = 0; i < threads; i++) {
        args[i] = (contend_arg){&ct, i, 0};
        pthread_create(&t[i], NULL, contend_main, &args[i]);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    n = tk_holds_compact(ct.recs, (size_t)(threads * 2 * iters));   /* failed ones: pid 0 */
    if (tk_holds_save(logpath, ct.recs, n) != 0)
        ct.errors++;
    rlk_runtime_stats_get(c, &st);
    tk_say("done %zu %d %llu %llu", n, ct.errors, st.ttl_wakeups, st.waits);
    free(ct.recs);
    rlk_rwlock_free(ct.lock);
    rlk_free(c);
    return 0;
}

/* ------------------------------------------------------------ child: readers */

typedef struct reader {
    rlk_rwlock *lock;
    int rc;
    long long at_ms;
} reader;

static void *reader_main(void *arg)
{
    reader *r = arg;

    r->rc = rlk_rwlock_try_lock(r->lock, RLK_RW_READ, 15000, 5000);
    r->at_ms = rlk_fx_now_ms();
    tk_say("acq %d %lld", r->rc, r->at_ms);
    if (r->rc == RLK_OK)
        rlk_rwlock_unlock(r->lock, RLK_RW_READ);
    return NULL;
}

/* Readers that wait for the parent's writer; "waits" answers how many
 * sleeps on the channel have started (each thread's first sleep is one). */
static int child_readers(const char *curl, int threads)
{
    rlk_client *c = tk_connect(curl, 0, threads);
    rlk_rwlock *rw = c ? rlk_rwlock_new(c, "rw:down") : NULL;
    rlk_runtime_stats st;
    reader rd[16];
    pthread_t t[16];
    char line[32];

    if (!rw || threads > 16)
        return 2;
    for (int i = 0; i < threads; i++) {
        rd[i] = (reader){rw, -1, 0};
        pthread_create(&t[i], NULL, reader_main, &rd[i]);
    }
    while (fgets(line, sizeof line, stdin) && strncmp(line, "waits", 5) == 0) {
        rlk_runtime_stats_get(c, &st);
        tk_say("waits %llu", st.waits);
    }
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    rlk_runtime_stats_get(c, &st);
    tk_say("stats %llu %llu", st.ttl_wakeups, st.wake_all);
    rlk_rwlock_free(rw);
    rlk_free(c);
    return 0;
}

/* The writer B of test_writer_window: connects (its pool connection open, its subscriber not
 * started), says "ready <its client's uuid>", waits for a "go" line, waits for the write lock
 * rw:win (wait_ms): "got <ms> <rc>", and gives it back. */
static int child_window(const char *curl, long long wait_ms)
{
    rlk_client *c = tk_connect(curl, 2000, 1);
    rlk_rwlock *rw = c ? rlk_rwlock_new(c, "rw:win") : NULL;
    char buf[64];
    size_t n = 0;
    int rc, mode = 0;

    if (!rw || rlk_rwlock_mode(rw, &mode) != RLK_OK)
        return 2;
    tk_say("ready %s", rlk_client_uuid(c));
    while (n < sizeof buf - 1 && read(STDIN_FILENO, buf + n, 1) == 1 && buf[n] != '\n')
        n++;
    rc = rlk_rwlock_try_lock(rw, RLK_RW_WRITE, wait_ms, 10000);
    tk_say("got %lld %d", rlk_fx_now_ms(), rc);
    if (rc == RLK_OK)
        rlk_rwlock_unlock(rw, RLK_RW_WRITE);
    rlk_rwlock_free(rw);
    rlk_free(c);
    return 0;
}

static int child_main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "window") == 0)
        return child_window(argv[2], atoll(argv[3]));
    if (argc == 6 && strcmp(argv[1], "contend") == 0)
        return child_contend(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
    if (argc == 4 && strcmp(argv[1], "readers") == 0)
        return child_readers(argv[2], atoi(argv[3]));
    fprintf(stderr, "fl_rwlock: unknown child mode\n");
    return 2;
}

/* ------------------------------------------------------------ sides */

static void test_sides(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_rwlock *a, *b, *w;
    long long readers = -1, start, ttl = 0;
    int held = -1;

    REQUIRE(c);
    a = rlk_rwlock_new(c, "rw:basic");
    b = rlk_rwlock_new(c, "rw:basic");
    w = rlk_rwlock_new(c, "rw:basic");
    REQUIRE(a && b && w);
    REQUIRE(rlk_rwlock_set_owner(a, "A") == RLK_OK && rlk_rwlock_set_owner(b, "B") == RLK_OK &&
            rlk_rwlock_set_owner(w, "W") == RLK_OK);
    CHECK_STR_EQ(rlk_rwlock_channel(a), "redisson_rwlock:{rw:basic}");
    CHECK_INT_EQ(mode_of(a), RLK_RW_FREE);

    /* Readers share; a writer waits for them. */
    CHECK_INT_EQ(rlk_rwlock_try_lock(a, RLK_RW_READ, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_try_lock(b, RLK_RW_READ, 0, 5000), RLK_OK);
    CHECK_INT_EQ(mode_of(a), RLK_RW_MODE_READ);
    CHECK_INT_EQ(rlk_rwlock_reader_count(a, &readers), RLK_OK);
    CHECK_INT_EQ(readers, 2);
    CHECK_INT_EQ(tk_int(&srv, "PTTL %s", "{rw:basic}:A:rwlock_timeout:1") > 0, 1);
    CHECK_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_BUSY);
    start = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 150, 5000), RLK_ERR_BUSY);
    CHECK(rlk_fx_now_ms() - start >= 140);
    CHECK_INT_EQ(rlk_rwlock_unlock(a, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_unlock(b, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(mode_of(a), RLK_RW_FREE);
    CHECK_INT_EQ(tk_key_exists(&srv, "{rw:basic}:A:rwlock_timeout:1"), 0);

    /* A writer excludes readers; it may read itself, and re-enter. */
    CHECK_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 0, 5000), RLK_OK);
    CHECK_INT_EQ(mode_of(w), RLK_RW_MODE_WRITE);
    CHECK_INT_EQ(rlk_rwlock_try_lock(a, RLK_RW_READ, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_READ, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 0, 5000), RLK_OK);
    CHECK_INT_EQ(count_of(w, RLK_RW_WRITE), 2);
    CHECK_INT_EQ(count_of(w, RLK_RW_READ), 1);
    CHECK_INT_EQ(rlk_rwlock_is_held_by_me(w, RLK_RW_WRITE, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_rwlock_is_held_by_me(a, RLK_RW_WRITE, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_WRITE), RLK_OK);
    CHECK_INT_EQ(mode_of(w), RLK_RW_MODE_WRITE);

    /* The last write exit downgrades to the writer's read: readers enter. */
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_WRITE), RLK_OK);
    CHECK_INT_EQ(mode_of(w), RLK_RW_MODE_READ);
    CHECK_INT_EQ(count_of(w, RLK_RW_WRITE), 0);
    CHECK_INT_EQ(rlk_rwlock_try_lock(a, RLK_RW_READ, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_try_lock(b, RLK_RW_WRITE, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_rwlock_remaining_ttl(a, &ttl), RLK_OK);
    CHECK(ttl > 0 && ttl <= 5000);
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_unlock(a, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(mode_of(a), RLK_RW_FREE);

    /* Not held; bad arguments. */
    CHECK_INT_EQ(rlk_rwlock_unlock(a, RLK_RW_READ), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_rwlock_unlock(a, RLK_RW_WRITE), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_rwlock_try_lock(a, 7, 0, 5000), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_rwlock_try_lock(a, RLK_RW_ANY, 0, 5000), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_rwlock_set_owner(a, "x:write"), RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_rwlock_set_owner(a, "mode"), RLK_ERR_ARG);
    CHECK(rlk_rwlock_new(c, "") == NULL);

    rlk_rwlock_free(a);
    rlk_rwlock_free(b);
    rlk_rwlock_free(w);
    rlk_free(c);
}

static void test_names_and_force(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_rwlock *w, *t;
    char owner[RLK_OWNER_MAX + 1];
    int released = -1;

    REQUIRE(c);
    t = rlk_rwlock_new(c, "rw:{tag}x");
    w = rlk_rwlock_new(c, "rw:force");
    REQUIRE(t && w);
    CHECK_STR_EQ(rlk_rwlock_channel(t), "redisson_rwlock:rw:{tag}x");
    REQUIRE_INT_EQ(rlk_rwlock_try_lock(t, RLK_RW_READ, 0, 5000), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "rw:{tag}x"), 1);
    REQUIRE_INT_EQ(rlk_rwlock_owner(t, owner, sizeof owner), RLK_OK);
    /* The timeout keys' prefix is the name itself when it has a hash tag. */
    CHECK(tk_int(&srv, "PTTL %s:%s:rwlock_timeout:1", "rw:{tag}x", owner) > 0);
    CHECK_INT_EQ(rlk_rwlock_unlock(t, RLK_RW_READ), RLK_OK);

    REQUIRE_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_force_unlock(w, RLK_RW_READ, &released), RLK_OK);
    CHECK_INT_EQ(released, 0);
    CHECK_INT_EQ(mode_of(w), RLK_RW_MODE_WRITE);
    CHECK_INT_EQ(rlk_rwlock_force_unlock(w, RLK_RW_ANY, &released), RLK_OK);
    CHECK_INT_EQ(released, 1);
    CHECK_INT_EQ(mode_of(w), RLK_RW_FREE);
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_WRITE), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_rwlock_force_unlock(w, 9, &released), RLK_ERR_ARG);
    rlk_rwlock_free(t);
    rlk_rwlock_free(w);
    rlk_free(c);
}

/* ------------------------------------------------------------ upgrade */

static void test_no_upgrade(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_rwlock *rw;
    long long start, elapsed;

    REQUIRE(c);
    rw = rlk_rwlock_new(c, "rw:upgrade");
    REQUIRE(rw);
    REQUIRE_INT_EQ(rlk_rwlock_try_lock(rw, RLK_RW_READ, 0, 5000), RLK_OK);
    start = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_rwlock_try_lock(rw, RLK_RW_WRITE, 5000, 5000), RLK_ERR_UPGRADE);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_UPGRADE);
    CHECK_STR_CONTAINS(rlk_errstr(c), "release every read");
    CHECK_STR_EQ(rlk_strerror(RLK_ERR_UPGRADE), "RLK_ERR_UPGRADE");
    CHECK_INT_EQ(rlk_rwlock_lock(rw, RLK_RW_WRITE, 0), RLK_ERR_UPGRADE);    /* no deadlock */
    elapsed = rlk_fx_now_ms() - start;
    CHECKF(elapsed < 1000, "the refusals took %lld ms: not at once", elapsed);
    CHECK_INT_EQ(mode_of(rw), RLK_RW_MODE_READ);
    CHECK_INT_EQ(count_of(rw, RLK_RW_READ), 1);
    CHECK_INT_EQ(count_of(rw, RLK_RW_WRITE), 0);
    /* Releasing the reads first makes the write lock available. */
    CHECK_INT_EQ(rlk_rwlock_unlock(rw, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_try_lock(rw, RLK_RW_WRITE, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_unlock(rw, RLK_RW_WRITE), RLK_OK);
    rlk_rwlock_free(rw);
    rlk_free(c);
}

/* ------------------------------------------------------------ watchdog */

#define WD_LEASE 900     /* renewed every 300 ms: a renewal has 600 ms of room on a loaded machine */

static void test_watchdog_and_lost(void)
{
    rlk_client *c = tk_connect(url, WD_LEASE, 4);
    rlk_rwlock *r1, *r2, *w;
    rlk_runtime_stats st;
    tk_lost_rec g;
    int held = -1;

    REQUIRE(c);
    tk_lost_init(&g);
    tk_lost_install(c, &g);
    r1 = rlk_rwlock_new(c, "rw:wdr");
    r2 = rlk_rwlock_new(c, "rw:wdr");
    w = rlk_rwlock_new(c, "rw:wdw");
    REQUIRE(r1 && r2 && w);
    REQUIRE(rlk_rwlock_set_owner(r1, "R1") == RLK_OK && rlk_rwlock_set_owner(r2, "R2") == RLK_OK);
    REQUIRE_INT_EQ(rlk_rwlock_lock(r1, RLK_RW_READ, 0), RLK_OK);
    REQUIRE_INT_EQ(rlk_rwlock_lock(r2, RLK_RW_READ, 0), RLK_OK);
    REQUIRE_INT_EQ(rlk_rwlock_lock(w, RLK_RW_WRITE, 0), RLK_OK);
    rlk_fx_sleep_ms(4 * WD_LEASE);      /* four leases: only renewals keep them */
    CHECK(tk_int(&srv, "PTTL %s", "rw:wdr") > 0);
    CHECK(tk_int(&srv, "PTTL %s", "{rw:wdr}:R1:rwlock_timeout:1") > 0);
    CHECK(tk_int(&srv, "PTTL %s", "{rw:wdr}:R2:rwlock_timeout:1") > 0);
    CHECK(tk_int(&srv, "PTTL %s", "rw:wdw") > 0);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    CHECKF(st.renew_calls >= 6, "%llu renewal calls", st.renew_calls);
    CHECK_INT_EQ(st.renew_errors, 0);
    CHECK_INT_EQ(tk_latch_get(&g.fired), 0);

    /* The writer's lock deleted: lost, kind write. */
    CHECK_INT_EQ(tk_int(&srv, "DEL %s", "rw:wdw"), 1);
    CHECK(tk_latch_wait(&g.fired, 1, 3000) == 1);
    CHECK_INT_EQ(g.kind, RLK_KIND_WRITE);
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    CHECK_STR_EQ(g.name, "rw:wdw");
    CHECK_INT_EQ(rlk_rwlock_is_held_by_me(w, RLK_RW_WRITE, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_WRITE), RLK_ERR_NOT_OWNER);

    /* One reader's read expired behind its back: that reader alone is lost. */
    CHECK_INT_EQ(tk_int(&srv, "DEL %s", "{rw:wdr}:R2:rwlock_timeout:1"), 1);
    CHECK(tk_latch_wait(&g.fired, 2, 3000) == 2);
    CHECK_INT_EQ(g.kind, RLK_KIND_READ);
    CHECK_STR_EQ(g.owner, "R2");
    CHECK_INT_EQ(g.plain_count, 2);
    CHECK_INT_EQ(rlk_rwlock_is_held_by_me(r2, RLK_RW_READ, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_rwlock_is_held_by_me(r1, RLK_RW_READ, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_rwlock_unlock(r1, RLK_RW_READ), RLK_OK);
    rlk_rwlock_free(r1);
    rlk_rwlock_free(r2);
    rlk_rwlock_free(w);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* ------------------------------------------------------------ downgrade wakes readers */

#define DOWN_PROCS 2
#define DOWN_THREADS 3
#define DOWN_LEASE 20000

/* Bounded poll until each child's readers all sleep on the channel. */
static int wait_readers_asleep(tk_child *kids)
{
    long long until = rlk_fx_now_ms() + 10000;

    while (rlk_fx_now_ms() < until) {
        int asleep = 0;

        for (int p = 0; p < DOWN_PROCS; p++) {
            char line[64];
            unsigned long long waits = 0;

            if (tk_child_send(&kids[p], "waits") == 0 &&
                tk_child_read_line(&kids[p], line, sizeof line, 5000) == 0 &&
                sscanf(line, "waits %llu", &waits) == 1 && waits >= DOWN_THREADS)
                asleep++;
        }
        if (asleep == DOWN_PROCS)
            return 0;
        rlk_fx_sleep_ms(5);
    }
    return -1;
}

/* Collects every reader's acquisition; returns the slowest (ms after t_down). */
static long long collect_readers(tk_child *kids, long long t_down, int *ok, int *early)
{
    long long slowest = -1;

    for (int p = 0; p < DOWN_PROCS; p++) {
        for (int i = 0; i < DOWN_THREADS; i++) {
            char line[64];
            long long at = 0;
            int rc = -1;

            if (tk_child_read_line(&kids[p], line, sizeof line, 20000) != 0 ||
                sscanf(line, "acq %d %lld", &rc, &at) != 2)
                continue;
            *ok += rc == RLK_OK;
            *early += at < t_down;
            if (at - t_down > slowest)
                slowest = at - t_down;
        }
    }
    return slowest;
}

static void test_downgrade_wakes_readers(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_rwlock *w = c ? rlk_rwlock_new(c, "rw:down") : NULL;
    tk_child kids[DOWN_PROCS];
    char threads[8];
    const char *args[] = {"readers", url, threads, NULL};
    long long t_down, slowest;
    int ok = 0, early = 0, spawned = 0;
    unsigned long long ttl_wakeups = 0, wake_all = 0, sum_ttl = 0, sum_all = 0;

    REQUIRE(w);
    REQUIRE_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 0, DOWN_LEASE), RLK_OK);
    REQUIRE_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_READ, 0, DOWN_LEASE), RLK_OK);
    snprintf(threads, sizeof threads, "%d", DOWN_THREADS);
    for (int p = 0; p < DOWN_PROCS; p++)
        spawned += tk_child_spawn(&kids[p], args) == 0;
    REQUIRE_INT_EQ(spawned, DOWN_PROCS);
    CHECK(tk_wait_numsub(&srv, "redisson_rwlock:{rw:down}", DOWN_PROCS, 10000) == 0);
    CHECK(wait_readers_asleep(kids) == 0);
    tk_stall_reset(&stall);
    t_down = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_WRITE), RLK_OK);      /* downgrade: publishes 1 */
    CHECK_INT_EQ(mode_of(w), RLK_RW_MODE_READ);
    tk_children_send(kids, DOWN_PROCS, "go");
    slowest = collect_readers(kids, t_down, &ok, &early);
    for (int p = 0; p < DOWN_PROCS; p++) {
        char line[64];

        if (tk_child_read_line(&kids[p], line, sizeof line, 10000) == 0 &&
            sscanf(line, "stats %llu %llu", &ttl_wakeups, &wake_all) == 2) {
            sum_ttl += ttl_wakeups;
            sum_all += wake_all;
        }
        CHECK_INT_EQ(tk_child_wait(&kids[p], 10000), 0);
    }
    printf("  downgrade: %d readers in %d processes acquired within %lld ms (writer's lease %d "
           "ms); %llu woken by a wake-all, %llu by a TTL\n", ok, DOWN_PROCS, slowest, DOWN_LEASE,
           sum_all, sum_ttl);
    CHECK_INT_EQ(ok, DOWN_PROCS * DOWN_THREADS);
    CHECK_INT_EQ(early, 0);
    CHECK_INT_EQ(sum_ttl, 0);
    CHECK(sum_all >= DOWN_PROCS);
    CHECKF(slowest >= 0 && slowest <= 500, "slowest reader acquired %lld ms after the downgrade "
           "(max scheduling gap %lld ms%s)", slowest, tk_stall_max_gap_ms(&stall),
           tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(mode_of(w), RLK_RW_FREE);
    rlk_rwlock_free(w);
    rlk_free(c);
}

/* ------------------------------------------------------------ invariant */

#define PROCS 4
#define THREADS 4
#define ITERS 30

static void test_invariant(void)
{
    char dir[] = "/tmp/rlk-fl-XXXXXX", line[128];
    tk_child kids[PROCS];
    tk_hold *recs = NULL;
    size_t n = 0, writes = 0;
    int spawned, done = 0, errors = 0, bad = 0;
    tk_hold_report rep;
    unsigned long long ttl_wakeups = 0, waits = 0;
    long long t0, ms;

    REQUIRE(mkdtemp(dir) != NULL);
    spawned = tk_children_spawn_contend(kids, PROCS, url, THREADS, ITERS, dir);
    CHECK_INT_EQ(spawned, PROCS);
    for (int p = 0; p < spawned; p++)
        CHECKF(tk_child_read_line(&kids[p], line, sizeof line, 15000) == 0 &&
               strcmp(line, "ready") == 0, "child %d did not get ready", p);
    t0 = rlk_fx_now_ms();
    tk_children_send(kids, spawned, "go");
    for (int p = 0; p < spawned; p++) {
        unsigned long long tw = 0, w = 0;
        size_t got = 0;
        int errs = 0;

        if (tk_child_read_line(&kids[p], line, sizeof line, 45000) == 0 &&
            sscanf(line, "done %zu %d %llu %llu", &got, &errs, &tw, &w) == 4) {
            done++;
            errors += errs;
            ttl_wakeups += tw;
            waits += w;
        }
        CHECKF(tk_child_wait(&kids[p], 10000) == 0, "child %d did not exit cleanly", p);
    }
    tk_children_take_logs(dir, spawned, &recs, &n, &bad);
    ms = rlk_fx_now_ms() - t0;
    rmdir(dir);
    rep = tk_holds_check(recs, n, 1);
    for (size_t i = 0; i < n; i++)
        writes += recs[i].kind == TK_HOLD_WRITE;
    printf("  rwlock invariant: %d processes x %d threads, %zu holds (%zu writes) in %lld ms, "
           "%d overlaps with a writer, max concurrent readers %d, %llu waits, %llu TTL wake-ups, "
           "%d errors\n", PROCS, THREADS, n, writes, ms, (int)rep.conflicts, rep.peak_readers, waits,
           ttl_wakeups, errors);
    CHECK_INT_EQ(done, PROCS);
    CHECK_INT_EQ(errors, 0);
    CHECK(n >= PROCS * THREADS * ITERS);
    CHECK(writes > 0);
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(rep.conflicts, 0);
    CHECKF(rep.peak_readers > 1, "max concurrent readers %d", rep.peak_readers);
    CHECK_INT_EQ(ttl_wakeups, 0);
    free(recs);
}

/* A waiting writer: try_lock(write) on its own client, for the thread. */
typedef struct {
    rlk_rwlock *rw;
    long long wait_ms;
    int rc;
    long long done_ms;
} wq_writer;

static void *wq_writer_main(void *arg)
{
    wq_writer *w = arg;

    w->rc = rlk_rwlock_try_lock(w->rw, RLK_RW_WRITE, w->wait_ms, 5000);
    w->done_ms = rlk_fx_now_ms();
    return NULL;
}

/* Until the writers' queue has n tickets, at most 3 s (the server's state is the only signal). */
static int wq_wait_queued(const char *waiters, long long n)
{
    long long until = rlk_fx_now_ms() + 3000;

    while (tk_int(&srv, "LLEN %s", waiters) != n) {
        if (rlk_fx_now_ms() > until)
            return -1;
        struct timespec ts = {0, 2 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void test_writer_queue(void)
{
    const char *waiters = "{rw:wq}:rlk_waiters", *grant = "{rw:wq}:rlk_next";
    rlk_client *c = tk_connect(url, 0, 4), *c2 = tk_connect(url, 0, 4);
    rlk_rwlock *r, *r2, *w;
    wq_writer wa;
    pthread_t t;
    long long released, start;

    REQUIRE(c && c2);
    r = rlk_rwlock_new(c, "rw:wq");
    r2 = rlk_rwlock_new(c, "rw:wq");
    w = rlk_rwlock_new(c2, "rw:wq");
    REQUIRE(r && r2 && w);
    REQUIRE(rlk_rwlock_set_owner(r, "R") == RLK_OK && rlk_rwlock_set_owner(r2, "R2") == RLK_OK &&
            rlk_rwlock_set_owner(w, "W") == RLK_OK);

    /* A writer that gives up leaves the queue; a single try never queues. */
    CHECK_INT_EQ(rlk_rwlock_try_lock(r, RLK_RW_READ, 0, 5000), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(tk_key_exists(&srv, waiters), 0);
    start = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_rwlock_try_lock(w, RLK_RW_WRITE, 150, 5000), RLK_ERR_BUSY);
    CHECK(rlk_fx_now_ms() - start >= 140);
    CHECK_INT_EQ(tk_int(&srv, "LLEN %s", waiters), 0);

    /* The last reader's exit reserves the lock for the waiting writer and wakes it. */
    wa.rw = w;
    wa.wait_ms = 5000;
    wa.rc = -1;
    REQUIRE(pthread_create(&t, NULL, wq_writer_main, &wa) == 0);
    CHECK_INT_EQ(wq_wait_queued(waiters, 1), 0);
    CHECK_INT_EQ(rlk_rwlock_try_lock(r2, RLK_RW_READ, 0, 5000), RLK_OK);   /* joins the read */
    CHECK_INT_EQ(rlk_rwlock_unlock(r, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, grant), 0);     /* still read-held: nobody granted */
    released = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_rwlock_unlock(r2, RLK_RW_READ), RLK_OK);
    /* In the claim window (or once claimed) no reader gets in. */
    CHECK_INT_EQ(rlk_rwlock_try_lock(r, RLK_RW_READ, 0, 5000), RLK_ERR_BUSY);
    pthread_join(t, NULL);
    CHECK_INT_EQ(wa.rc, RLK_OK);
    CHECK(wa.done_ms - released < 1000);
    CHECK_INT_EQ(mode_of(w), RLK_RW_MODE_WRITE);
    CHECK_INT_EQ(tk_key_exists(&srv, grant), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, waiters), 0);
    CHECK_INT_EQ(rlk_rwlock_unlock(w, RLK_RW_WRITE), RLK_OK);
    CHECK_INT_EQ(mode_of(w), RLK_RW_FREE);

    rlk_rwlock_free(r);
    rlk_rwlock_free(r2);
    rlk_rwlock_free(w);
    rlk_free(c);
    rlk_free(c2);
}

/* A child's "got <ms> <rc>" line. */
static int read_got(tk_child *kid, long long *at_ms, int *rc, long long timeout_ms)
{
    char line[64];

    return tk_child_read_line(kid, line, sizeof line, timeout_ms) == 0 &&
           sscanf(line, "got %lld %d", at_ms, rc) == 2 ? 0 : -1;
}

/* A writer waiting in a thread, done counted on a latch. */
typedef struct win_writer {
    rlk_rwlock *rw;
    long long wait_ms;
    int rc;
    tk_latch done;
} win_writer;

static void *win_writer_main(void *arg)
{
    win_writer *w = arg;

    w->rc = rlk_rwlock_try_lock(w->rw, RLK_RW_WRITE, w->wait_ms, 20000);
    tk_latch_add(&w->done, 1);
    return NULL;
}

/* The writers' queue, its first-attempt window (rt_procs.c's test_handoff_window for the
 * reentrant lock): the
 * server refuses new connections while writer B, in its own process, makes its first attempt
 * (B's subscriber cannot connect: the window between a ticket in the queue and a subscription
 * held open without timing); writer A (this process's only one, subscribed before) queues too.
 * The release must go to the writer whose ticket heads the queue when it runs: B when B's
 * ticket is there (it cannot hear the grant: the old code, which fails here), A otherwise. B
 * gets the lock after A. */
static void test_writer_window(void)
{
    const char *waiters = "{rw:win}:rlk_waiters";
    const char *args[] = {"window", url, "20000", NULL};
    rlk_client *c = tk_connect(url, 0, 2), *wc = tk_connect(url, 0, 2);
    rlk_rwlock *h = c ? rlk_rwlock_new(c, "rw:win") : NULL, *hw = c ? rlk_rwlock_new(c, "rw:warm") : NULL;
    win_writer a = {0}, aw = {0};
    pthread_t ta, taw;
    tk_child kid;
    tk_refuse rf = {0};
    char ch[128], a_ch[128];
    long long cid_a, cid_b, head = -1, at_b = 0, pos_a = -1, pos_b = -1;
    int rc_b = -1, refused = 0, spawned;

    REQUIRE(h && hw && wc);
    a.rw = rlk_rwlock_new(wc, "rw:win");
    aw.rw = rlk_rwlock_new(wc, "rw:warm");
    REQUIRE(a.rw && aw.rw);
    REQUIRE(rlk_rwlock_set_owner(a.rw, "rw-win-a") == RLK_OK &&
            rlk_rwlock_set_owner(aw.rw, "rw-win-aw") == RLK_OK);
    REQUIRE(rlk_rwlock_try_lock(h, RLK_RW_WRITE, 0, 20000) == RLK_OK &&
            rlk_rwlock_try_lock(hw, RLK_RW_WRITE, 0, 20000) == RLK_OK);
    /* A's subscriber connected before the server refuses connections: A waits for rw:warm
     * until its wake channel there is subscribed, then gets it. */
    cid_a = tk_uuid_cid(rlk_client_uuid(wc));
    snprintf(ch, sizeof ch, "redisson_rwlock:{rw:warm}:rlk:%lld", cid_a);
    snprintf(a_ch, sizeof a_ch, "redisson_rwlock:{rw:win}:rlk:%lld", cid_a);
    aw.wait_ms = 10000;
    a.wait_ms = 20000;
    tk_latch_init(&aw.done);
    tk_latch_init(&a.done);
    pthread_create(&taw, NULL, win_writer_main, &aw);
    CHECK(tk_wait_numsub(&srv, ch, 1, 10000) == 0);
    CHECK_INT_EQ(rlk_rwlock_unlock(hw, RLK_RW_WRITE), RLK_OK);
    tk_latch_wait(&aw.done, 1, 10000);
    pthread_join(taw, NULL);
    CHECK_INT_EQ(aw.rc, RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_unlock(aw.rw, RLK_RW_WRITE), RLK_OK);

    spawned = tk_window_spawn(&kid, args, cid_a, &cid_b);
    CHECK(spawned >= 0);
    if (spawned != 0)
        return;
    refused = CHECK(tk_refuse_begin(&rf, &srv) == 0);
    tk_child_send(&kid, "go");
    /* B's subscriber tried to connect: its first attempt is over (the wait joins after it). */
    CHECK(tk_refuse_wait_rejected(&rf, 10000) == 0);
    pos_b = tk_queue_find_cid(rf.ctl, waiters, cid_b);
    pthread_create(&ta, NULL, win_writer_main, &a);
    /* A's ticket in the queue and A subscribed (bounded polls on the server's state). */
    pos_a = tk_wait_queued_subscribed(rf.ctl, waiters, cid_a, a_ch, 10000);
    CHECKF(pos_a >= 0, "A's ticket did not show in the queue (%lld)", pos_a);
    head = tk_ctx_int(rf.ctl, "LINDEX %s 0", waiters);
    CHECK_INT_EQ(rlk_rwlock_unlock(h, RLK_RW_WRITE), RLK_OK);   /* B's subscriber still refused */
    CHECK_INT_EQ(tk_latch_wait(&a.done, 1, 10000), 1);
    printf("  write release with B unable to subscribe: B's ticket at %lld, A's at %lld in the "
           "queue; A acquired (rc %d)\n", pos_b, pos_a, a.rc);
    CHECK_INT_EQ(a.rc, RLK_OK);
    CHECKF(head / 1024 == cid_a, "the lock went to A while B's ticket (%lld) headed the queue: "
           "B was dropped as dead for a grant it could not hear", head);
    if (refused)
        CHECK(tk_refuse_end(&rf) == 0);
    pthread_join(ta, NULL);
    /* B subscribes, queues, and gets the lock from A. */
    CHECK_INT_EQ(rlk_rwlock_unlock(a.rw, RLK_RW_WRITE), RLK_OK);
    CHECKF(read_got(&kid, &at_b, &rc_b, 15000) == 0, "B said nothing");
    CHECK_INT_EQ(rc_b, RLK_OK);
    CHECK(tk_child_wait(&kid, 5000) == 0);
    CHECK_INT_EQ(tk_key_exists(&srv, waiters), 0);
    tk_latch_destroy(&a.done);
    tk_latch_destroy(&aw.done);
    rlk_rwlock_free(a.rw);
    rlk_rwlock_free(aw.rw);
    rlk_rwlock_free(hw);
    rlk_rwlock_free(h);
    rlk_free(wc);
    rlk_free(c);
}

/* A reader behind a writer's reservation waits out the claim window, and a
 * sleep that runs out on it is not a TTL wake-up (the claim publishes
 * nothing: normal operation, not a dead holder); a reader behind a writer
 * whose lock expires without a release still counts one. Both set by hand:
 * nothing else publishes on these locks, so each sleep ends on its bound. */
static void test_reserved_not_ttl(void)
{
    rlk_client *c = tk_connect(url, 0, 4);
    rlk_rwlock *r, *r2;
    rlk_runtime_stats st0, st1, st2;

    REQUIRE(c);
    r = rlk_rwlock_new(c, "rw:res");
    r2 = rlk_rwlock_new(c, "rw:exp");
    REQUIRE(r && r2);
    REQUIRE(rlk_rwlock_set_owner(r, "R") == RLK_OK && rlk_rwlock_set_owner(r2, "R") == RLK_OK);

    /* Reserved for writer ticket 7, which never claims it. */
    REQUIRE(rlk_runtime_stats_get(c, &st0) == RLK_OK);
    /* 1500 ms: the reader asks well before it runs out, whatever a loaded machine's stalls */
    REQUIRE(tk_command_ok(&srv, "SET %s 7 PX 1500", "{rw:res}:rlk_next") == 0);
    CHECK_INT_EQ(rlk_rwlock_try_lock(r, RLK_RW_READ, 30000, 5000), RLK_OK);
    REQUIRE(rlk_runtime_stats_get(c, &st1) == RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&srv, "{rw:res}:rlk_next"), 0);
    CHECK(st1.waits > st0.waits);           /* it did wait out the reservation */
    if (st1.ttl_wakeups != st0.ttl_wakeups)
        fprintf(stderr, "    a reader behind a reservation: %llu TTL wake-ups in %llu waits\n",
                st1.ttl_wakeups - st0.ttl_wakeups, st1.waits - st0.waits);
    CHECK_INT_EQ(st1.ttl_wakeups, st0.ttl_wakeups);
    CHECK_INT_EQ(rlk_rwlock_unlock(r, RLK_RW_READ), RLK_OK);

    /* The control: a writer's lock that expires with no release is a TTL wake-up (one, or more
     * if the reader's clock ends a sleep just before the server expires the key). */
    REQUIRE(tk_command_ok(&srv, "HSET %s mode write X:write 1", "rw:exp") == 0);
    REQUIRE(tk_command_ok(&srv, "PEXPIRE %s 1500", "rw:exp") == 0);
    CHECK_INT_EQ(rlk_rwlock_try_lock(r2, RLK_RW_READ, 30000, 5000), RLK_OK);
    REQUIRE(rlk_runtime_stats_get(c, &st2) == RLK_OK);
    CHECK(st2.waits > st1.waits);
    CHECK(st2.ttl_wakeups >= st1.ttl_wakeups + 1);
    CHECK_INT_EQ(rlk_rwlock_unlock(r2, RLK_RW_READ), RLK_OK);
    rlk_rwlock_free(r2);
    rlk_rwlock_free(r);
    rlk_free(c);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child_main(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    if (tk_suite_start("fl_rwlock", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_sides);
    RUN_TEST(test_names_and_force);
    RUN_TEST(test_no_upgrade);
    RUN_TEST(test_watchdog_and_lost);
    RUN_TEST(test_downgrade_wakes_readers);
    RUN_TEST(test_writer_queue);
    RUN_TEST(test_writer_window);
    RUN_TEST(test_reserved_not_ttl);
    RUN_TEST(test_invariant);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_rwlock");
}
