/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi_procs.c - mutual exclusion among 8 processes (fork), for RedLock
 * over 3 servers and for MultiLock over 3 servers (4 members, each process
 * adding them in its own order).
 *
 * Every process has its own clients, waits for the start signal (EOF on a
 * pipe), then loops: acquire (waiting), hold ~300 µs, release. Each hold is
 * logged (CLOCK_MONOTONIC, just after the acquire returned and just before
 * the release is sent) in a shared-memory log; the parent sorts the log and
 * counts holds that begin before an earlier one ended: must be 0. A RedLock
 * hold must also end within its validity (else the run proves nothing). A
 * control run with a lock name per process must show overlaps, so the
 * counter is known to see them.
 */
#include "check.h"
#include "holdlog.h"
#include "multi_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NSERVERS 3
#define NPROCS 8
#define ROUNDS 50                   /* acquisitions per process */
#define HOLD_US 300
#define WAIT_MS 30000               /* a worker's wait for one acquisition */
#define LEASE_MS 10000

enum kind { KIND_REDLOCK, KIND_MULTILOCK, KIND_CONTROL };

static mu_set S;

/* What a worker counted, in shared memory next to the log. */
typedef struct worker_stats {
    long acquired, failed_acquire, failed_release, out_of_validity;
    char first_error[200];
} worker_stats;

static void hold(void)
{
    struct timespec ts = {0, HOLD_US * 1000L};

    nanosleep(&ts, NULL);
}

static void note_error(worker_stats *st, const char *what, int rc, const char *msg)
{
    if (!st->first_error[0])
        snprintf(st->first_error, sizeof st->first_error, "%s: %s %s", what, rlk_strerror(rc),
                 msg);
}

/* ---------------------------------------------------------------- workers */

static int worker_connect(rlk_client **c)
{
    for (int i = 0; i < NSERVERS; i++) {
        char url[128];

        if (rlk_fx_url(&S.srv[i], -1, url, sizeof url) != 0)
            return -1;
        c[i] = rlk_connect_url(url);
        if (!c[i] || rlk_err(c[i]) != RLK_OK)
            return -1;
    }
    return 0;
}

/* One hold into the run's hold log (support/holdlog.h). */
static void log_hold(int log_fd, int proc, int round, long long start, long long end)
{
    tk_hold h = {.pid = (int)getpid(), .thread = proc, .seq = round, .kind = TK_HOLD_EXCL,
                 .start_ns = start, .end_ns = end};

    tk_hold_write(log_fd, &h);
}

static void redlock_worker(int proc, rlk_client **c, const char *name, int log_fd,
                           worker_stats *st)
{
    rlk_redlock_options o;
    rlk_redlock *rl;

    rlk_redlock_options_init(&o);
    o.retry_delay_ms = 10;
    rl = rlk_redlock_new(c, NSERVERS, name, &o);
    if (!rl) {
        note_error(st, "redlock_new", RLK_ERR_NOMEM, "");
        return;
    }
    for (int i = 0; i < ROUNDS; i++) {
        long long validity = 0, start, end;
        int rc = rlk_redlock_try_lock(rl, WAIT_MS, LEASE_MS, &validity);

        if (rc != RLK_OK) {
            st->failed_acquire++;
            note_error(st, "acquire", rc, rlk_redlock_errstr(rl));
            continue;
        }
        start = rlk_fx_now_ns();
        hold();
        end = rlk_fx_now_ns();
        if (rlk_redlock_validity_ms(rl) <= 0)
            st->out_of_validity++;
        log_hold(log_fd, proc, i, start, end);
        st->acquired++;
        if ((rc = rlk_redlock_unlock(rl)) != RLK_OK) {
            st->failed_release++;
            note_error(st, "release", rc, rlk_redlock_errstr(rl));
        }
    }
    rlk_redlock_free(rl);
}

/* Members a@0 b@1 c@2 d@0, added starting at a process-dependent member. */
static void multilock_worker(int proc, rlk_client **c, int log_fd, worker_stats *st)
{
    static const char *const names[] = {"mp-a", "mp-b", "mp-c", "mp-d"};
    static const int servers[] = {0, 1, 2, 0};
    rlk_multilock *m = rlk_multilock_new();

    for (int k = 0; m && k < 4; k++) {
        int j = (proc + k) % 4;

        if (rlk_multilock_add(m, c[servers[j]], names[j]) != RLK_OK)
            note_error(st, "add", rlk_multilock_err(m), rlk_multilock_errstr(m));
    }
    if (!m)
        return;
    for (int i = 0; i < ROUNDS; i++) {
        long long start, end;
        int rc = rlk_multilock_try_lock(m, WAIT_MS, LEASE_MS);

        if (rc != RLK_OK) {
            st->failed_acquire++;
            note_error(st, "acquire", rc, rlk_multilock_errstr(m));
            continue;
        }
        start = rlk_fx_now_ns();
        hold();
        end = rlk_fx_now_ns();
        log_hold(log_fd, proc, i, start, end);
        st->acquired++;
        if ((rc = rlk_multilock_unlock(m)) != RLK_OK) {
            st->failed_release++;
            note_error(st, "release", rc, rlk_multilock_errstr(m));
        }
    }
    rlk_multilock_free(m);
}

static int worker_main(enum kind kind, int proc, int go_fd, int log_fd, worker_stats *st)
{
    rlk_client *c[NSERVERS] = {0};
    char name[64], byte;

    if (worker_connect(c) != 0) {
        note_error(st, "connect", RLK_ERR_IO, "");
        return 2;
    }
    while (read(go_fd, &byte, 1) < 0 && errno == EINTR) {
    }
    close(go_fd);
    if (kind == KIND_MULTILOCK) {
        multilock_worker(proc, c, log_fd, st);
    } else {
        if (kind == KIND_CONTROL)
            snprintf(name, sizeof name, "mp-control-%d", proc);
        else
            snprintf(name, sizeof name, "mp-redlock");
        redlock_worker(proc, c, name, log_fd, st);
    }
    for (int i = 0; i < NSERVERS; i++)
        rlk_free(c[i]);
    return st->acquired == ROUNDS ? 0 : 1;
}

/* ---------------------------------------------------------------- parent */

typedef struct run_result {
    long events, overlaps, failed_acquire, failed_release, out_of_validity;
    int bad_lines;                  /* malformed hold-log lines */
    long long elapsed_ms;
    int workers_failed;
} run_result;

static int run(enum kind kind, run_result *res)
{
    char path[] = "/tmp/rlk-mp-holds-XXXXXX";
    int tmp_fd = mkstemp(path), log_fd = -1;
    worker_stats *st = mu_shared_alloc(NPROCS * sizeof *st);
    pid_t pids[NPROCS];
    int go[2], status, bad = 0;
    tk_hold *holds = NULL;
    size_t n = 0;

    memset(res, 0, sizeof *res);
    if (tmp_fd >= 0) {
        close(tmp_fd);
        log_fd = tk_holdlog_open(path);     /* O_APPEND: the workers' lines never interleave */
    }
    if (log_fd < 0 || !st || pipe(go) != 0) {
        if (tmp_fd >= 0)
            unlink(path);
        if (log_fd >= 0)
            close(log_fd);
        mu_shared_free(st, NPROCS * sizeof *st);
        return -1;
    }
    res->elapsed_ms = rlk_fx_now_ms();
    fflush(NULL);
    for (int p = 0; p < NPROCS; p++) {
        pids[p] = fork();
        if (pids[p] == 0) {
            close(go[1]);
            _exit(worker_main(kind, p, go[0], log_fd, &st[p]));
        }
    }
    close(go[0]);
    close(go[1]);                   /* EOF: every worker starts */
    for (int p = 0; p < NPROCS; p++) {
        if (pids[p] < 0 || waitpid(pids[p], &status, 0) != pids[p] || !WIFEXITED(status) ||
            WEXITSTATUS(status) != 0)
            res->workers_failed++;
        if (st[p].first_error[0])
            fprintf(stderr, "  worker %d: %s\n", p, st[p].first_error);
        res->failed_acquire += st[p].failed_acquire;
        res->failed_release += st[p].failed_release;
        res->out_of_validity += st[p].out_of_validity;
    }
    res->elapsed_ms = rlk_fx_now_ms() - res->elapsed_ms;
    close(log_fd);
    res->events = (long)tk_holds_take(path, &holds, &n, &bad);
    res->overlaps = tk_holds_check(holds, n, kind != KIND_CONTROL).conflicts; /* the control overlaps */
    res->bad_lines = bad;
    free(holds);
    mu_shared_free(st, NPROCS * sizeof *st);
    return 0;
}

static void report(const char *what, const run_result *r)
{
    printf("%s: %d processes x %d = %ld holds in %lld ms, overlaps %ld, failed acquires %ld, "
           "failed releases %ld, holds past validity %ld, workers failed %d\n", what, NPROCS,
           ROUNDS, r->events, r->elapsed_ms, r->overlaps, r->failed_acquire, r->failed_release,
           r->out_of_validity, r->workers_failed);
    fflush(stdout);
}

static void mp_redlock_mutual_exclusion(void)
{
    run_result r;

    REQUIRE(run(KIND_REDLOCK, &r) == 0);
    report("redlock", &r);
    CHECK_INT_EQ(r.events, NPROCS * ROUNDS);
    CHECK_INT_EQ(r.overlaps, 0);
    CHECK_INT_EQ(r.bad_lines, 0);
    CHECK_INT_EQ(r.failed_acquire, 0);
    CHECK_INT_EQ(r.failed_release, 0);
    CHECK_INT_EQ(r.out_of_validity, 0);
    CHECK_INT_EQ(r.workers_failed, 0);
    CHECK_INT_EQ(mu_count_holding(&S, NSERVERS, "mp-redlock"), 0);
}

static void mp_multilock_mutual_exclusion(void)
{
    run_result r;

    REQUIRE(run(KIND_MULTILOCK, &r) == 0);
    report("multilock", &r);
    CHECK_INT_EQ(r.events, NPROCS * ROUNDS);
    CHECK_INT_EQ(r.overlaps, 0);
    CHECK_INT_EQ(r.bad_lines, 0);
    CHECK_INT_EQ(r.failed_acquire, 0);
    CHECK_INT_EQ(r.failed_release, 0);
    CHECK_INT_EQ(r.workers_failed, 0);
}

/* A lock per process: nothing excludes, so the counter must see overlaps. */
static void mp_control_sees_overlaps(void)
{
    run_result r;

    REQUIRE(run(KIND_CONTROL, &r) == 0);
    report("control (a redlock per process)", &r);
    CHECK_INT_EQ(r.events, NPROCS * ROUNDS);
    CHECKF(r.overlaps > 0, "the control run showed no overlap: the counter cannot be trusted");
}

int main(void)
{
    if (mu_set_start(&S, NSERVERS, 0) != 0) {
        fprintf(stderr, "cannot start %d redis-servers\n", NSERVERS);
        return 1;
    }
    RUN_TEST(mp_redlock_mutual_exclusion);
    RUN_TEST(mp_multilock_mutual_exclusion);
    RUN_TEST(mp_control_sees_overlaps);
    mu_set_stop(&S);
    return check_summary("multi_procs");
}
