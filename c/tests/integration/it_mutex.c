/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_mutex.c - multi-process mutual exclusion, for both lock kinds.
 *
 * 8 processes, each with its own rlk client, loop acquire -> hold a few µs
 * -> release until each has 1250 acquisitions (10^4 per kind). A failed
 * acquire retries after a random 50..500 µs back-off (the runtime's blocking
 * wait is not used here). Each process records (process, acquire_ns,
 * release_ns) on CLOCK_MONOTONIC - taken after the acquire reply arrived and
 * before the release is sent, so each recorded span lies inside the real
 * hold - and writes them to its own hold log (support/holdlog.h). The parent
 * merges the logs and the one checker counts overlapping holds (must be 0;
 * the control run with a lock per process must show some), acquisitions
 * (must be >= 10^4) and releases that found another owner (must be 0).
 *
 * Usage: it_mutex [PROCESSES [ACQUISITIONS_PER_PROCESS]]
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "fixture.h"
#include "holdlog.h"
#include "tk_util.h"

#include <rlk.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_PROCS 64
#define LEASE_MS "30000"
#define LEASE_MS_NUM 30000LL
#define HOLD_NS 3000LL           /* busy work while holding */
#define BACKOFF_MIN_US 50
#define BACKOFF_MAX_US 500
#define WORKER_DEADLINE_MS 45000 /* a worker gives up (and fails) after this */
#define TRAILER_MAGIC 0x726c6b6dU

/* What a worker counted, written to its own file next to its hold log. */
typedef struct trailer {
    unsigned magic;
    int proc;
    long acquisitions;
    long contended;   /* acquire attempts that found the lock held */
    long not_owner;   /* releases that said the caller did not hold it */
    long still_held;  /* releases that left the lock held (reentry count > 1) */
    long errors;      /* calls that failed */
    int timed_out;
    char first_error[200];
} trailer;

typedef struct lock_kind {
    const char *name;
    const char *acquire;
    const char *release;
    int token;           /* token lock: a fresh token per acquire; else reentrant */
    int key_per_process; /* the control: no shared lock, so holds must overlap */
} lock_kind;

static const lock_kind kinds[] = {
    {"reentrant", "reentrant/acquire", "reentrant/release", 0, 0},
    {"token", "token/acquire", "token/release", 1, 0},
    {"control (a lock per process)", "token/acquire", "token/release", 1, 1},
};

static rlk_fx_server server;
static int nprocs = 8;
static long per_proc = 1250;

/* ------------------------------------------------------------ worker */

typedef struct worker {
    const lock_kind *kind;
    int proc;
    long long hold_ns;
    rlk_client *c;
    char key[64];
    char owner[64]; /* reentrant: the holder id; token: a fresh token per acquire */
    unsigned long rng;
    trailer tr;
} worker;

static unsigned long worker_random(worker *w)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    return w->rng;
}

static void worker_error(worker *w, const char *what, int rc)
{
    w->tr.errors++;
    if (!w->tr.first_error[0])
        snprintf(w->tr.first_error, sizeof w->tr.first_error, "%s: %s (%s)", what,
                 rlk_strerror(rc), rlk_errstr(w->c));
}

/* 1 acquired, 0 held by another, -1 error. */
static int worker_try_acquire(worker *w, long seq)
{
    const char *keys[] = {w->key, "{it-mutex}:rlk_waiters", "{it-mutex}:rlk_next"};
    const char *args[3] = {NULL, NULL, "0"};   /* reentrant: ticket 0, never queued */
    int reentrant = !w->kind->token;
    redisReply *r = NULL;
    int rc, got;

    if (w->kind->token) {
        snprintf(w->owner, sizeof w->owner, "tok-%d-%ld-%lx", w->proc, seq,
                 worker_random(w) & 0xffffffUL);
        args[0] = w->owner;
        args[1] = LEASE_MS;
    } else {
        args[0] = LEASE_MS;
        args[1] = w->owner;
    }
    rc = rlk_eval(w->c, w->kind->acquire, reentrant ? 3 : 1, keys, reentrant ? 3 : 2, args, &r);
    if (rc != RLK_OK) {
        worker_error(w, w->kind->acquire, rc);
        return -1;
    }
    got = r->type == REDIS_REPLY_NIL;
    if (!got && r->type != REDIS_REPLY_INTEGER)
        worker_error(w, "acquire reply is neither nil nor an integer", RLK_ERR_PROTOCOL);
    freeReplyObject(r);
    return got;
}

/* Reentrant release: 1 released, 0 still held, nil not owner. Token: 1 / 0. */
static int worker_release(worker *w)
{
    const char *keys[] = {w->key, "redisson_lock__channel:{it-mutex}", "{it-mutex}:rlk_waiters",
                          "{it-mutex}:rlk_next"};
    const char *args[4] = {NULL, NULL, "50", "publish"};    /* claim_ms, publish (one server) */
    int reentrant = !w->kind->token;
    redisReply *r = NULL;
    int rc;

    args[0] = w->owner;
    args[1] = LEASE_MS;
    rc = rlk_eval(w->c, w->kind->release, reentrant ? 4 : 1, keys, reentrant ? 4 : 1, args, &r);
    if (rc != RLK_OK) {
        worker_error(w, w->kind->release, rc);
        return -1;
    }
    if (r->type == REDIS_REPLY_NIL)
        w->tr.not_owner++; /* reentrant: nil = not the owner */
    else if (r->type == REDIS_REPLY_INTEGER && r->integer == 0 && !reentrant)
        w->tr.not_owner++; /* token: 0 = not the owner */
    else if (r->type == REDIS_REPLY_INTEGER && r->integer == 0)
        w->tr.still_held++; /* reentrant: 0 = still held (entered twice) */
    else if (r->type != REDIS_REPLY_INTEGER || r->integer != 1)
        worker_error(w, "release reply is not 1", RLK_ERR_PROTOCOL);
    freeReplyObject(r);
    return 0;
}

static void backoff(worker *w)
{
    long us = BACKOFF_MIN_US + (long)(worker_random(w) % (BACKOFF_MAX_US - BACKOFF_MIN_US + 1));
    struct timespec ts = {0, us * 1000L};
    nanosleep(&ts, NULL);
}

static void hold_busy(long long since_ns, long long hold_ns)
{
    volatile unsigned long spin = 0;
    while (rlk_fx_now_ns() - since_ns < hold_ns)
        spin++;
}

/* Acquire (retrying), hold, release; -1 on an error or the deadline. */
static int worker_round(worker *w, long seq, long long deadline_ms, tk_hold *ev)
{
    int got;

    while ((got = worker_try_acquire(w, seq)) == 0) {
        w->tr.contended++;
        if (rlk_fx_now_ms() > deadline_ms) {
            w->tr.timed_out = 1;
            return -1;
        }
        backoff(w);
    }
    if (got < 0)
        return -1;
    ev->pid = (int)getpid();
    ev->thread = w->proc;
    ev->seq = (int)seq;
    ev->kind = TK_HOLD_EXCL;
    ev->start_ns = rlk_fx_now_ns();
    hold_busy(ev->start_ns, w->hold_ns);
    ev->end_ns = rlk_fx_now_ns();
    w->tr.acquisitions++;
    return worker_release(w);
}

static int write_all(FILE *f, const void *p, size_t n)
{
    return fwrite(p, 1, n, f) == n ? 0 : -1;
}

/* The child: connect, wait for the start signal (EOF on go_fd), run; the
 * holds go to path.holds (support/holdlog.h), the counters to path. */
static int worker_main(const lock_kind *kind, int proc, long rounds, const char *url,
                       int go_fd, const char *path)
{
    worker w;
    tk_hold *events = calloc((size_t)rounds, sizeof *events);
    char holds_path[600];
    long long deadline;
    char byte;
    FILE *f;
    long n = 0;

    memset(&w, 0, sizeof w);
    w.kind = kind;
    w.proc = proc;
    w.hold_ns = kind->key_per_process ? 50 * HOLD_NS : HOLD_NS;
    if (kind->key_per_process)
        snprintf(w.key, sizeof w.key, "{it-mutex}:lock-%d", proc);
    else
        snprintf(w.key, sizeof w.key, "{it-mutex}:lock");
    w.tr.magic = TRAILER_MAGIC;
    w.tr.proc = proc;
    w.rng = ((unsigned long)getpid() << 20) ^ (unsigned long)rlk_fx_now_ns();
    snprintf(w.owner, sizeof w.owner, "it-mutex-%ld:%d", (long)getpid(), proc);
    w.c = rlk_connect_url(url);
    if (!events || !w.c || rlk_err(w.c) != RLK_OK) {
        fprintf(stderr, "worker %d: connect: %s\n", proc, w.c ? rlk_errstr(w.c) : "no memory");
        return 2;
    }
    while (read(go_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    close(go_fd);
    deadline = rlk_fx_now_ms() + WORKER_DEADLINE_MS;
    while (n < rounds && worker_round(&w, n, deadline, &events[n]) == 0)
        n++;
    snprintf(holds_path, sizeof holds_path, "%s.holds", path);
    f = fopen(path, "wb");
    if (!f || tk_holds_save(holds_path, events, (size_t)n) != 0 ||
        write_all(f, &w.tr, sizeof w.tr) != 0 || fclose(f) != 0) {
        fprintf(stderr, "worker %d: cannot write %s\n", proc, path);
        return 3;
    }
    rlk_free(w.c);
    free(events);
    return n == rounds ? 0 : 1;
}

/* ------------------------------------------------------------ parent */

typedef struct results {
    tk_hold *events;
    size_t n;
    long contended, not_owner, still_held, errors;
    int timed_out, bad_files;
} results;

static int read_worker_file(const char *path, results *res)
{
    FILE *f = fopen(path, "rb");
    char holds_path[600];
    trailer tr;
    int bad = 0;

    snprintf(holds_path, sizeof holds_path, "%s.holds", path);
    tk_holds_take(holds_path, &res->events, &res->n, &bad);
    if (!f || fread(&tr, sizeof tr, 1, f) != 1 || tr.magic != TRAILER_MAGIC || bad) {
        if (f)
            fclose(f);
        return -1;
    }
    fclose(f);
    res->contended += tr.contended;
    res->not_owner += tr.not_owner;
    res->still_held += tr.still_held;
    res->errors += tr.errors;
    res->timed_out |= tr.timed_out;
    if (tr.first_error[0])
        fprintf(stderr, "  worker %d: %s\n", tr.proc, tr.first_error);
    return 0;
}

/* Forks the workers, releases them together, waits for all of them. */
static int run_workers(const lock_kind *kind, long rounds, const char *dir, const char *url)
{
    pid_t pids[MAX_PROCS];
    int go[2], failed = 0, status;
    char path[512];

    if (pipe(go) != 0)
        return -1;
    fflush(NULL);
    for (int p = 0; p < nprocs; p++) {
        snprintf(path, sizeof path, "%s/worker-%d.bin", dir, p);
        pids[p] = fork();
        if (pids[p] < 0) {
            failed = 1;
            nprocs = p;
            break;
        }
        if (pids[p] == 0) {
            close(go[1]);
            _exit(worker_main(kind, p, rounds, url, go[0], path));
        }
    }
    close(go[0]);
    close(go[1]); /* every worker reads EOF: start */
    for (int p = 0; p < nprocs; p++) {
        if (waitpid(pids[p], &status, 0) != pids[p] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0) {
            fprintf(stderr, "  worker %d ended with status 0x%x\n", p, status);
            failed = 1;
        }
    }
    return failed ? -1 : 0;
}

/* The outcome of one run of every worker on one lock kind. */
typedef struct run {
    results res;
    long rounds;
    long overlaps;
    long long elapsed_ms, longest_ns, jump_ms;
    int workers_failed;
} run;

/* Runs the workers and merges what they recorded; 0 unless setup failed. */
static int run_kind(const lock_kind *kind, long rounds, run *out)
{
    char dir[] = "/tmp/rlk-it-mutex-XXXXXX", path[512], url[128];
    tk_hold_report rep;
    redisReply *r;

    memset(out, 0, sizeof *out);
    out->rounds = rounds;
    if (!mkdtemp(dir) || rlk_fx_url(&server, -1, url, sizeof url) != 0)
        return -1;
    r = rlk_fx_command(&server, "FLUSHALL");
    if (r)
        freeReplyObject(r);

    out->jump_ms = tk_wall_offset_ms();
    out->elapsed_ms = rlk_fx_now_ms();
    out->workers_failed = run_workers(kind, rounds, dir, url) != 0;
    out->elapsed_ms = rlk_fx_now_ms() - out->elapsed_ms;
    out->jump_ms = tk_wall_offset_ms() - out->jump_ms;
    for (int p = 0; p < nprocs; p++) {
        snprintf(path, sizeof path, "%s/worker-%d.bin", dir, p);
        if (read_worker_file(path, &out->res) != 0)
            out->res.bad_files++;
        unlink(path);
    }
    rmdir(dir);
    rep = tk_holds_check(out->res.events, out->res.n, !kind->key_per_process);
    out->overlaps = rep.conflicts;
    out->longest_ns = rep.longest_ns;
    printf("%s: %d processes, %zu acquisitions, %ld overlaps, %ld contended attempts, "
           "%ld not-owner releases, %ld errors, longest hold %lld us, %lld ms\n",
           kind->name, nprocs, out->res.n, out->overlaps, out->res.contended,
           out->res.not_owner, out->res.errors, out->longest_ns / 1000, out->elapsed_ms);
    fflush(stdout);
    return 0;
}

static void check_mutual_exclusion(const lock_kind *kind)
{
    run x;
    redisReply *r;
    int stalled;

    REQUIRE(run_kind(kind, per_proc, &x) == 0);
    stalled = x.elapsed_ms >= LEASE_MS_NUM || x.jump_ms > 1000 || x.jump_ms < -1000;
    CHECKF(!x.workers_failed, "%s: a worker failed", kind->name);
    CHECK_INT_EQ(x.res.bad_files, 0);
    CHECKF(x.res.n >= (size_t)nprocs * (size_t)per_proc, "%s: %zu acquisitions, expected %ld",
           kind->name, x.res.n, (long)nprocs * per_proc);
    CHECKF(x.overlaps == 0, "%s: %ld overlapping holds%s", kind->name, x.overlaps,
           stalled ? " - but the run outlived a lease or the wall clock jumped (see below): "
                     "a stalled machine, not necessarily a safety bug"
                   : "");
    CHECKF(x.jump_ms <= 1000 && x.jump_ms >= -1000,
           "%s: the wall clock moved %lld ms against the monotonic clock during the run; "
           "Redis expires leases by the wall clock", kind->name, x.jump_ms);
    CHECKF(x.longest_ns / 1000000 < LEASE_MS_NUM,
           "%s: a hold lasted %lld ms, longer than the lease: the machine stalled", kind->name,
           x.longest_ns / 1000000);
    CHECK_INT_EQ(x.res.not_owner, 0);
    CHECK_INT_EQ(x.res.still_held, 0);
    CHECK_INT_EQ(x.res.errors, 0);
    CHECKF(!x.res.timed_out, "%s: a worker ran past %d ms", kind->name, WORKER_DEADLINE_MS);
    r = rlk_fx_command(&server, "DBSIZE");
    CHECKF(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0, "the lock is left behind");
    if (r)
        freeReplyObject(r);
    free(x.res.events);
}

static void test_mutex_reentrant(void)
{
    check_mutual_exclusion(&kinds[0]);
}

static void test_mutex_token(void)
{
    check_mutual_exclusion(&kinds[1]);
}

/* The detector itself: with a lock per process nothing excludes anything,
 * and the overlap count must say so. */
static void test_detector_sees_overlaps(void)
{
    run x;

    REQUIRE(run_kind(&kinds[2], 200, &x) == 0);
    CHECK(!x.workers_failed);
    CHECK_INT_EQ(x.res.n, (long)nprocs * 200);
    CHECKF(x.overlaps > 0, "no overlap found among %zu unsynchronised holds", x.res.n);
    free(x.res.events);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        nprocs = atoi(argv[1]);
    if (argc > 2)
        per_proc = atol(argv[2]);
    if (nprocs < 2 || nprocs > MAX_PROCS || per_proc < 1) {
        fprintf(stderr, "usage: it_mutex [PROCESSES 2..%d [ACQUISITIONS_PER_PROCESS]]\n",
                MAX_PROCS);
        return 2;
    }
    if (rlk_fx_start(&server, NULL) != 0) {
        fprintf(stderr, "it_mutex: cannot start redis-server\n");
        return 1;
    }
    RUN_TEST(test_detector_sees_overlaps);
    RUN_TEST(test_mutex_reentrant);
    RUN_TEST(test_mutex_token);
    rlk_fx_stop(&server);
    return check_summary("it_mutex");
}
