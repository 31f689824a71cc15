/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_waits.c - `rlk lock` waits under faults (stopped waiters, stalled servers),
 * the rlk binary against fixture servers on loopback:
 *   - a fair waiter stopped with SIGTERM leaves the queue (exit 143, `rlk
 *     inspect` shows only the waiter behind it) and the next waiter gets the
 *     lock within 3 s of the release;
 *   - `rlk unlock --queue` clears a queue that a SIGKILLed waiter holds up
 *     (before that, a waiter is told "queued behind 1 waiter");
 *   - -w bounds the whole wait against a SIGSTOPped server (about 1 s for
 *     -w 1, plain and --fair) and during a DEBUG SLEEP stall;
 *   - a hold lost because its server stopped answering exits without a
 *     command-timeout-long release;
 *   - waiters ride out an AOF restart (appendonly yes, a slow load that
 *     answers LOADING) and a long script (BUSY replies), then acquire;
 *   - a SIGTERM that comes as the lock is taken (sent the moment the server
 *     shows it held) never leaves it held after rlk exits (the signal is
 *     forwarded to the command and the lock released, or the wait ends and
 *     gives it back), over 40 tries; a control of SIGKILLs must leave it held;
 *     the same for `rlk semaphore` (20 tries), and a SIGTERMed semaphore
 *     waiter exits 143 at once, "interrupted", taking no permit.
 * Every command under a lock logs its hold's start and end with
 * CLOCK_MONOTONIC (this program in --tk-hold mode, support/holdlog.h): 0
 * overlapping holds.
 *
 * Usage: it_cli_waits PATH_TO_RLK
 *        it_cli_waits --tk-hold LOG X begin|end ID  (inside the commands, holdlog.h)
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <ftw.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

static rlk_fx_server server;
static char url[128];

/* ---------------------------------------------------------------- hold log */

/* An sh command: logs its hold's begin (support/holdlog.h, through this
 * program's --tk-hold mode, ID $$), body, logs its end. */
static void stamped(char *buf, size_t len, const char *log, const char *tag, const char *body)
{
    cli_hold_script(buf, len, log, TK_HOLD_EXCL, NULL, body);
    if (strlen(buf) + 1 >= len) {
        fprintf(stderr, "it_cli_waits: command %s too long for its buffer\n", tag);
        exit(2);
    }
}

/* sh: wait (bounded, 30 s) until file exists. */
static void wait_for_file(char *buf, size_t len, const char *file)
{
    snprintf(buf, len, "n=0; while [ ! -e '%s' ] && [ $n -lt 1500 ]; do sleep 0.02; "
             "n=$((n+1)); done", file);
}

/* Reads the hold log; checks each hold began and ended and that no two
 * holds overlap. Returns the number of holds. */
static int check_stamps(const char *log, int want)
{
    const char *paths[1] = {log};
    tk_hold *h = NULL;
    tk_hold_report rep;
    size_t n = 0;
    int bad = 0;

    tk_holds_read(paths, 1, -1, &h, &n, &bad);
    for (size_t i = 0; i < n; i++)
        CHECKF(!h[i].open && h[i].end_ns >= h[i].start_ns, "hold of sh %d incomplete", h[i].pid);
    rep = tk_holds_check(h, n, 1);
    free(h);
    CHECKF(rep.conflicts == 0, "%ld overlapping holds in %s", rep.conflicts, log);
    CHECKF((int)n == want && bad == 0, "%zu holds (and %d malformed lines or ends without a "
           "begin) in %s, expected %d", n, bad, log, want);
    return (int)n;
}

static long long ms_since(long long t0_ms)
{
    return rlk_fx_now_ms() - t0_ms;
}

/* Waits for p; returns its status and the time it took from t0_ms. */
static cli_result finish(cli_proc *p, long timeout_ms, long long t0_ms)
{
    int st = cli_wait(p, timeout_ms);

    return cli_collect(p, st, ms_since(t0_ms));
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

/* Stops an AOF server and removes its temp dir (the fixture does not
 * remove the appendonlydir inside it). */
static void stop_aof_server(rlk_fx_server *s)
{
    char dir[RLK_FX_PATH_MAX];

    snprintf(dir, sizeof dir, "%s", s->dir);
    rlk_fx_stop(s);
    if (dir[0] && strncmp(dir, "/tmp/", 5) == 0)
        nftw(dir, rm_entry, 8, FTW_DEPTH | FTW_PHYS);
}

/* errorstat_<word>:count=N of INFO errorstats (0 when absent). */
static long long error_count(const rlk_fx_server *s, const char *word)
{
    redisReply *r = rlk_fx_command(s, "INFO errorstats");
    char key[64];
    const char *at;
    long long n = 0;

    snprintf(key, sizeof key, "errorstat_%s:count=", word);
    if (r && r->type == REDIS_REPLY_STRING && (at = strstr(r->str, key)))
        n = atoll(at + strlen(key));
    if (r)
        freeReplyObject(r);
    return n;
}

/* ---------------------------------------------------------------- case 5 */

static void test_sigterm_fair_waiter(void)
{
    const char *log = cli_path("fq1.log"), *go = cli_path("fq1.go");
    const char *queue = "redisson_lock_queue:{fq1}";
    char body[600], cmd[1200], cmd1[1200], cmd2[1200];
    cli_proc h, w1, w2;
    cli_result r;
    long long t0;

    wait_for_file(body, sizeof body, go);
    stamped(cmd, sizeof cmd, log, "H", body);
    stamped(cmd1, sizeof cmd1, log, "W1", "true");
    stamped(cmd2, sizeof cmd2, log, "W2", "true");
    REQUIRE(START(&h, "lock", "--fair", "fq1", "--", "sh", "-c", cmd) == 0);
    REQUIRE(tk_wait_int_at_least(&server, 1, 10000, "EXISTS %s", "fq1") == 0);
    REQUIRE(START(&w1, "lock", "--fair", "fq1", "-w", "60", "--", "sh", "-c", cmd1) == 0);
    REQUIRE(tk_wait_int_at_least(&server, 1, 10000, "LLEN %s", queue) == 0);
    REQUIRE(START(&w2, "lock", "--fair", "fq1", "-w", "60", "--", "sh", "-c", cmd2) == 0);
    REQUIRE(tk_wait_int_at_least(&server, 2, 10000, "LLEN %s", queue) == 0);

    t0 = rlk_fx_now_ms();
    kill(w1.pid, SIGTERM);
    r = finish(&w1, 10000, t0);
    expect_status(&r, 143, "SIGTERMed fair waiter");
    CHECKF(r.ms < 3000, "SIGTERMed waiter took %lld ms to exit", r.ms);
    CHECKF(strstr(r.err, "interrupted") != NULL, "stderr: %s", r.err);
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "LLEN %s", queue), 1);
    r = RUN("inspect", "fq1");
    expect_status(&r, 0, "inspect fq1");
    CHECKF(strstr(r.out, "queue:   1. ") && !strstr(r.out, "queue:   2. ") &&
           strstr(r.out, "deadline in"), "inspect shows the queue: %s", r.out);
    cli_result_free(&r);

    t0 = rlk_fx_now_ms();
    fclose(fopen(go, "w"));
    r = finish(&w2, 20000, t0);
    expect_status(&r, 0, "fair waiter behind the SIGTERMed one");
    fprintf(stderr, "  next fair waiter done %lld ms after the release was allowed\n", r.ms);
    CHECKF(r.ms < 3000, "next waiter took %lld ms after the holder's release", r.ms);
    cli_result_free(&r);
    r = finish(&h, 10000, t0);
    expect_status(&r, 0, "fair holder");
    cli_result_free(&r);
    check_stamps(log, 2);
}

/* What one kind of hold looks like on the server, for signal_at_acquisition. */
typedef struct acq_probe {
    const char *mode;           /* for messages */
    const char *lead[6];        /* rlk's arguments before NAME: "lock" or "semaphore", "--permits", "1" */
    const char *held_fmt;       /* an integer command whose value is 1 while NAME is held */
    const char *clear_fmt;      /* deletes what a hold left */
} acq_probe;

static const acq_probe probe_lock = {"lock", {"lock", NULL}, "EXISTS %s", "DEL %s"};
static const acq_probe probe_semaphore = {"semaphore", {"semaphore", "--permits", "1", NULL},
                                          "ZCARD {%s}:timeout", "ZREMRANGEBYRANK {%s}:timeout 0 -1"};

/* Starts `rlk <lead> NAME -- sleep 30`, sends sig the moment the server shows the hold (a poll
 * with no pause, bounded), and waits for rlk. Returns 1 when it was still held after rlk had
 * exited (what it left is then cleared), 0 when not, -1 when the hold was never seen. */
static int signal_at_acquisition(const acq_probe *pr, const char *name, int sig, int *status)
{
    const char *args[12];
    cli_proc p;
    cli_result r;
    long long t0 = rlk_fx_now_ms();
    int k = 0, seen, held;

    for (; pr->lead[k]; k++)
        args[k] = pr->lead[k];
    args[k++] = name;
    args[k++] = "--";
    args[k++] = "sleep";
    args[k++] = "30";
    args[k] = NULL;
    *status = -1;
    if (cli_start(&p, args) != 0)
        return -1;
    while (!(seen = tk_int(&server, pr->held_fmt, name) == 1) && ms_since(t0) < 10000)
        ;
    kill(p.pid, sig);
    r = finish(&p, 10000, t0);
    *status = r.status;
    cli_result_free(&r);
    held = tk_int(&server, pr->held_fmt, name) == 1;
    if (held)
        tk_int(&server, pr->clear_fmt, name);
    return seen ? held : -1;
}

/* A SIGTERM between the acquisition and the command's start used to kill rlk by its default
 * action (the wait's signal watcher had ended, the hold's had not begun), leaving the lock held
 * for its 30 s watchdog lease; seen once in CI as a waiter that never got the lock. `rlk
 * semaphore` had the same gap, and no watcher at all while it waited. */
static void sigterm_at_acquisition(const acq_probe *pr, const char *name, int want)
{
    int held = 0, tries = 0, status, bad_status = 0, not_seen = 0;
    long long end = rlk_fx_now_ms() + 60000;

    for (; tries < want && rlk_fx_now_ms() < end; tries++) {
        int rc = signal_at_acquisition(pr, name, SIGTERM, &status);

        held += rc == 1;
        not_seen += rc < 0;
        bad_status += status != 143;
    }
    fprintf(stderr, "  %s: %d SIGTERMs at the acquisition: %d left it held, %d exits not 143\n",
            pr->mode, tries, held, bad_status);
    CHECKF(tries >= 10, "%s: only %d tries in 60 s", pr->mode, tries);
    CHECKF(held == 0, "%s: %d of %d SIGTERMed rlk processes left it held after exiting", pr->mode,
           held, tries);
    CHECKF(bad_status == 0, "%s: %d of %d exits were not 143", pr->mode, bad_status, tries);
    CHECKF(not_seen == 0, "%s: %d of %d holds were never seen", pr->mode, not_seen, tries);
    /* Control: SIGKILL cannot be forwarded; the check must see the hold left behind. */
    CHECKF(signal_at_acquisition(pr, name, SIGKILL, &status) == 1,
           "%s control: a SIGKILLed rlk's hold was not seen after it exited", pr->mode);
}

static void test_sigterm_at_acquisition(void)
{
    sigterm_at_acquisition(&probe_lock, "sa1", 40);
}

static void test_semaphore_sigterm_at_acquisition(void)
{
    sigterm_at_acquisition(&probe_semaphore, "ss1", 20);
}

/* `rlk semaphore` waiting for a permit ends on SIGTERM (exit 143, "interrupted" on stderr,
 * nothing taken), as `rlk lock` does; the permit it waited for is still there afterwards. */
static void test_semaphore_sigterm_while_waiting(void)
{
    const char *go = cli_path("sw1.go");
    char body[600];
    cli_proc h, w;
    cli_result r;
    long long t0;

    wait_for_file(body, sizeof body, go);
    REQUIRE(START(&h, "semaphore", "sw1", "--permits", "1", "--", "sh", "-c", body) == 0);
    REQUIRE(tk_wait_int_at_least(&server, 1, 10000, "ZCARD %s", "{sw1}:timeout") == 0);
    REQUIRE(START(&w, "semaphore", "sw1", "--permits", "1", "-w", "60", "--", "true") == 0);
    /* Waiting: subscribed to the semaphore's channel */
    REQUIRE(tk_wait_numsub(&server, "redisson_sc:{sw1}", 1, 10000) == 0);
    t0 = rlk_fx_now_ms();
    kill(w.pid, SIGTERM);
    r = finish(&w, 10000, t0);
    expect_status(&r, 143, "SIGTERMed semaphore waiter");
    CHECKF(r.ms < 3000, "SIGTERMed semaphore waiter took %lld ms to exit", r.ms);
    CHECKF(strstr(r.err, "interrupted by signal 15") != NULL, "stderr: %s", r.err);
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "ZCARD %s", "{sw1}:timeout"), 1);    /* the holder's only */
    fclose(fopen(go, "w"));
    r = finish(&h, 10000, t0);
    expect_status(&r, 0, "semaphore holder");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "ZCARD %s", "{sw1}:timeout"), 0);
    CHECK_INT_EQ(tk_int(&server, "GET %s", "sw1"), 1);                 /* no permit lost */
}

static void test_queue_clear(void)
{
    const char *go = cli_path("fq2.go"), *queue = "redisson_lock_queue:{fq2}";
    char body[600];
    cli_proc h, w1;
    cli_result r;
    long long killed;

    wait_for_file(body, sizeof body, go);
    REQUIRE(START(&h, "lock", "--fair", "fq2", "--", "sh", "-c", body) == 0);
    REQUIRE(tk_wait_int_at_least(&server, 1, 10000, "EXISTS %s", "fq2") == 0);
    REQUIRE(START(&w1, "lock", "--fair", "fq2", "-w", "60", "--", "true") == 0);
    REQUIRE(tk_wait_int_at_least(&server, 1, 10000, "LLEN %s", queue) == 0);
    kill(w1.pid, SIGKILL);
    killed = rlk_fx_now_ms();
    r = finish(&w1, 5000, killed);
    cli_result_free(&r);
    fclose(fopen(go, "w"));
    r = finish(&h, 10000, killed);
    expect_status(&r, 0, "fair holder");
    cli_result_free(&r);

    r = RUN("lock", "--fair", "fq2", "-w", "0.5", "--", "true");
    if (ms_since(killed) < 8000) {  /* the dead waiter's keep-alive (10 s) has not run out */
        expect_status(&r, 1, "fair lock behind a dead waiter");
        CHECKF(strstr(r.err, "queued behind 1 waiter; the lock itself is free") != NULL,
               "stderr: %s", r.err);
    } else {
        fprintf(stderr, "  (stalled: the dead waiter may have been dropped already)\n");
    }
    cli_result_free(&r);
    r = RUN("unlock", "--queue", "fq2");
    expect_status(&r, 0, "unlock --queue");
    CHECKF(strstr(r.out, "queue cleared") != NULL, "stdout: %s", r.out);
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "LLEN %s", queue), 0);
    CHECK_INT_EQ(tk_int(&server, "ZCARD %s", "redisson_lock_timeout:{fq2}"), 0);
    r = RUN("lock", "--fair", "fq2", "-w", "5", "--", "true");
    expect_status(&r, 0, "fair lock after the queue was cleared");
    CHECKF(r.ms < 2000, "took %lld ms", r.ms);
    cli_result_free(&r);
    r = RUN("unlock", "--force", "--queue", "fq2");
    expect_status(&r, 0, "unlock --force --queue");
    CHECKF(strstr(r.out, "no lock to remove") && strstr(r.out, "queue cleared (0 waiters)"),
           "stdout: %s", r.out);
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- case 7 */

static void test_wait_bound_stopped_server(void)
{
    rlk_fx_server s2;
    char url2[128];
    cli_result r;

    REQUIRE(rlk_fx_start(&s2, NULL) == 0 && rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    cli_set_url(url2);
    r = RUN("lock", "ws1", "-w", "1", "--", "true");     /* scripts loaded, connection warm */
    expect_status(&r, 0, "lock on a live server");
    cli_result_free(&r);
    REQUIRE(rlk_fx_pause(&s2) == 0);
    r = RUN("lock", "ws1", "-w", "1", "--", "true");
    fprintf(stderr, "  -w 1 against a SIGSTOPped server: exit %d after %lld ms\n", r.status,
            r.ms);
    CHECKF(r.status != 0 && r.status != -1, "exit %d", r.status);
    CHECKF(r.ms < 1800, "-w 1 against a stopped server took %lld ms", r.ms);
    cli_result_free(&r);
    r = RUN("lock", "--fair", "ws2", "-w", "1", "--", "true");
    fprintf(stderr, "  --fair -w 1 against a SIGSTOPped server: exit %d after %lld ms\n",
            r.status, r.ms);
    CHECKF(r.status != 0 && r.status != -1, "exit %d", r.status);
    CHECKF(r.ms < 1800, "--fair -w 1 against a stopped server took %lld ms", r.ms);
    cli_result_free(&r);
    rlk_fx_resume(&s2);
    cli_set_url(url);
    rlk_fx_stop(&s2);
}

/* A hold whose server stops answering is lost after its watchdog lease;
 * rlk then exits without waiting a command timeout (5 s) on the release. */
static void test_lost_hold_exits_promptly(void)
{
    rlk_fx_server s2;
    char url2[128];
    cli_proc h;
    cli_result r;
    long long t0;

    REQUIRE(rlk_fx_start(&s2, NULL) == 0 && rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    cli_set_url(url2);
    /* The child's file says rlk has its acquire's reply: the key alone does not (the server
     * may write the test's EXISTS reply and be stopped before it writes rlk's). */
    REQUIRE(START(&h, "lock", "lh1", "--watchdog-lease", "1500", "-k", "0.2", "--", "sh", "-c",
                  "touch \"$T/lh1.held\"; exec sleep 30") == 0);
    REQUIRE(cli_wait_file(cli_path("lh1.held"), 10000) == 0);
    CHECK(tk_wait_int_at_least(&s2, 1, 1000, "EXISTS %s", "lh1") == 0);
    REQUIRE(rlk_fx_pause(&s2) == 0);
    t0 = rlk_fx_now_ms();
    r = finish(&h, 20000, t0);
    fprintf(stderr, "  hold lost on a SIGSTOPped server: exit %d %lld ms after the stop\n",
            r.status, r.ms);
    expect_status(&r, 6, "hold lost on a stopped server");
    CHECKF(r.ms < 1500 + 500 + 1500, "exit %lld ms after the server stopped (lease 1.5 s, "
           "release at most 0.5 s)", r.ms);
    cli_result_free(&r);
    rlk_fx_resume(&s2);
    cli_set_url(url);
    rlk_fx_stop(&s2);
}

typedef struct sleeper {
    const rlk_fx_server *s;
    const char *cmd;            /* a format with one %s */
    const char *arg;
    int ok;
} sleeper;

static void *sleeper_main(void *arg)
{
    sleeper *sl = arg;
    redisReply *r = rlk_fx_command(sl->s, sl->cmd, sl->arg);

    sl->ok = r && r->type != REDIS_REPLY_ERROR;
    if (r)
        freeReplyObject(r);
    return NULL;
}

/* Waits (bounded) until the server answers a PING with an error (BUSY). */
static int wait_busy(const rlk_fx_server *s, long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;

    while (rlk_fx_now_ms() < until) {
        redisReply *r = rlk_fx_command(s, "PING");
        int busy = r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "BUSY", 4) == 0;

        if (r)
            freeReplyObject(r);
        if (busy)
            return 0;
        rlk_fx_sleep_ms(10);
    }
    return -1;
}

static const char *const debug_extra[] = {"--enable-debug-command", "local", NULL};

/* -w 2 while the server is stalled in DEBUG SLEEP 4: back in about 2 s. */
static void test_wait_bound_debug_sleep(void)
{
    rlk_fx_server s2;
    rlk_fx_config cfg;
    char url2[128];
    sleeper sl;
    pthread_t t;
    cli_proc h;
    cli_result r;

    rlk_fx_config_init(&cfg);
    cfg.extra = debug_extra;
    REQUIRE(rlk_fx_start(&s2, &cfg) == 0 && rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    cli_set_url(url2);
    REQUIRE(START(&h, "lock", "ds1", "--", "sleep", "8") == 0);
    CHECK(tk_wait_int_at_least(&s2, 1, 10000, "EXISTS %s", "ds1") == 0);
    sl.s = &s2;
    sl.cmd = "DEBUG SLEEP %s";
    sl.arg = "4";
    pthread_create(&t, NULL, sleeper_main, &sl);
    rlk_fx_sleep_ms(100);   /* let DEBUG SLEEP reach the server first (not a safety wait) */
    r = RUN("lock", "ds1", "-w", "2", "--", "true");
    fprintf(stderr, "  -w 2 during DEBUG SLEEP 4: exit %d after %lld ms\n", r.status, r.ms);
    CHECKF(r.status != 0 && r.status != -1, "exit %d", r.status);
    CHECKF(r.ms < 2800, "-w 2 during a 4 s stall took %lld ms", r.ms);
    cli_result_free(&r);
    pthread_join(t, NULL);
    kill(h.pid, SIGTERM);
    r = finish(&h, 10000, rlk_fx_now_ms());
    cli_result_free(&r);
    cli_set_url(url);
    rlk_fx_stop(&s2);
}

/* Starts n stamped waiters on name with -w 60. */
static int start_waiters(cli_proc *w, int n, const char *name, const char *log, const char *kind)
{
    for (int k = 0; k < n; k++) {
        char tag[16], cmd[1200];
        int rc;

        snprintf(tag, sizeof tag, "W%d", k + 1);
        stamped(cmd, sizeof cmd, log, tag, "true");
        rc = kind ? START(&w[k], "lock", kind, name, "-w", "60", "--", "sh", "-c", cmd)
                  : START(&w[k], "lock", name, "-w", "60", "--", "sh", "-c", cmd);
        if (rc != 0)
            return -1;
    }
    return 0;
}

static void finish_all(cli_proc *w, int n, const char *what)
{
    long long t0 = rlk_fx_now_ms();

    for (int k = 0; k < n; k++) {
        cli_result r = finish(&w[k], 30000, t0);

        expect_status(&r, 0, what);
        if (r.status != 0)
            fprintf(stderr, "  %s %d: %s", what, k + 1, r.err);
        cli_result_free(&r);
    }
}

static const char *const aof_extra[] = {"--appendonly", "yes", "--key-load-delay", "300",
                                        "--enable-debug-command", "local", NULL};

/* Waiters ride out an AOF restart whose load answers LOADING for ~2 s. */
static void test_aof_restart(void)
{
    rlk_fx_server s3;
    rlk_fx_config cfg;
    char url3[128], body[600], cmd[1200];
    const char *log = cli_path("aof.log"), *go = cli_path("aof.go");
    cli_proc h, w[3];
    cli_result r;
    redisReply *rep;
    long long until;

    rlk_fx_config_init(&cfg);
    cfg.extra = aof_extra;
    REQUIRE(rlk_fx_start(&s3, &cfg) == 0 && rlk_fx_url(&s3, -1, url3, sizeof url3) == 0);
    rep = rlk_fx_command(&s3, "DEBUG POPULATE 10000 filler 10");
    REQUIRE(rep && rep->type != REDIS_REPLY_ERROR);
    freeReplyObject(rep);
    rep = rlk_fx_command(&s3, "BGREWRITEAOF");
    freeReplyObject(rep);
    REQUIRE(tk_wait_int_at_least(&s3, 10000, 5000, "DBSIZE%s", "") == 0);
    until = rlk_fx_now_ms() + 20000;
    for (;;) {  /* bounded: until the rewrite (the slow-loading base file) is done */
        rep = rlk_fx_command(&s3, "INFO persistence");
        int done = rep && rep->type == REDIS_REPLY_STRING &&
                   strstr(rep->str, "aof_rewrite_in_progress:0") &&
                   !strstr(rep->str, "aof_rewrite_scheduled:1");
        freeReplyObject(rep);
        if (done || rlk_fx_now_ms() > until)
            break;
        rlk_fx_sleep_ms(20);
    }
    cli_set_url(url3);
    wait_for_file(body, sizeof body, go);
    stamped(cmd, sizeof cmd, log, "H", body);
    REQUIRE(START(&h, "lock", "ar1", "--", "sh", "-c", cmd) == 0);
    REQUIRE(tk_wait_int_at_least(&s3, 1, 10000, "EXISTS %s", "ar1") == 0);
    REQUIRE(start_waiters(w, 3, "ar1", log, NULL) == 0);
    until = rlk_fx_now_ms() + 10000;
    /* 3 waiters, each on its client's wake channel under the lock's (docs/runtime.md, "Who a
     * handoff wakes"), and the holder, which listens on its lock's channel for a force unlock.
     * Counted on the wake channels alone: the first waiter listens on the lock's channel too, so
     * a count of both would be reached with a waiter still connecting (it would then meet the
     * restart with no wait under way, and a first connect refused is an error at once). */
    while (tk_numsub_matching(&s3, "redisson_lock__channel:{ar1}:rlk:*") < 3 &&
           rlk_fx_now_ms() < until)
        rlk_fx_sleep_ms(10);
    REQUIRE(tk_numsub_matching(&s3, "redisson_lock__channel:{ar1}:rlk:*") >= 3);
    CHECK_INT_EQ(tk_numsub(&s3, "redisson_lock__channel:{ar1}") >= 1, 1);

    REQUIRE(rlk_fx_restart(&s3) == 0);
    rep = rlk_fx_command(&s3, "PING");
    fprintf(stderr, "  restarted; PING answers: %s\n", rep && rep->str ? rep->str : "?");
    freeReplyObject(rep);
    until = rlk_fx_now_ms() + 30000;
    for (;;) {  /* bounded: until the load is over */
        rep = rlk_fx_command(&s3, "INFO persistence");
        int loading = !rep || rep->type != REDIS_REPLY_STRING || strstr(rep->str, "loading:1");
        freeReplyObject(rep);
        if (!loading || rlk_fx_now_ms() > until)
            break;
        rlk_fx_sleep_ms(20);
    }
    CHECK_INT_EQ(tk_int(&s3, "EXISTS %s", "ar1"), 1);     /* the hold survived in the AOF */
    {
        char *slog = cli_slurp(s3.log_path), *at = strstr(slog, "DB loaded from append only file");

        fprintf(stderr, "  %.*s\n", at ? (int)strcspn(at, "\n") : 0, at ? at : "");
        free(slog);
    }
    fprintf(stderr, "  LOADING replies sent during the load: %lld\n", error_count(&s3, "LOADING"));
    fclose(fopen(go, "w"));
    r = finish(&h, 20000, rlk_fx_now_ms());
    expect_status(&r, 0, "holder across the restart");
    cli_result_free(&r);
    finish_all(w, 3, "waiter across an AOF restart");
    check_stamps(log, 4);
    cli_set_url(url);
    stop_aof_server(&s3);
}

static const char *const busy_extra[] = {"--busy-reply-threshold", "100", NULL};

/* Waiters that start while a long script runs (BUSY replies) keep waiting. */
static void test_busy_script(void)
{
    static const char script[] =
        "local s = tonumber(redis.call('time')[1]) "
        "while tonumber(redis.call('time')[1]) - s < 2 do end return 1";
    rlk_fx_server s2;
    rlk_fx_config cfg;
    char url2[128], body[600], cmd[1200];
    const char *log = cli_path("busy.log"), *go = cli_path("busy.go");
    sleeper sl;
    pthread_t t;
    cli_proc h, w[2];
    cli_result r;

    rlk_fx_config_init(&cfg);
    cfg.extra = busy_extra;
    REQUIRE(rlk_fx_start(&s2, &cfg) == 0 && rlk_fx_url(&s2, -1, url2, sizeof url2) == 0);
    cli_set_url(url2);
    wait_for_file(body, sizeof body, go);
    stamped(cmd, sizeof cmd, log, "H", body);
    REQUIRE(START(&h, "lock", "bs1", "--", "sh", "-c", cmd) == 0);
    REQUIRE(tk_wait_int_at_least(&s2, 1, 10000, "EXISTS %s", "bs1") == 0);
    sl.s = &s2;
    sl.cmd = "EVAL %s 0";
    sl.arg = script;
    pthread_create(&t, NULL, sleeper_main, &sl);
    CHECK(wait_busy(&s2, 5000) == 0);
    REQUIRE(start_waiters(w, 2, "bs1", log, "--fair") == 0);
    pthread_join(t, NULL);
    CHECK(sl.ok);
    CHECK(tk_wait_int_at_least(&s2, 2, 10000, "LLEN %s", "redisson_lock_queue:{bs1}") == 0);
    fclose(fopen(go, "w"));
    r = finish(&h, 20000, rlk_fx_now_ms());
    expect_status(&r, 0, "holder");
    cli_result_free(&r);
    fprintf(stderr, "  BUSY replies sent during the script: %lld\n", error_count(&s2, "BUSY"));
    CHECK(error_count(&s2, "BUSY") >= 1);
    finish_all(w, 2, "fair waiter that met BUSY");
    check_stamps(log, 3);
    cli_set_url(url);
    rlk_fx_stop(&s2);
}

int main(int argc, char **argv)
{
    int helper = tk_holdlog_main(argc, argv);    /* a command's --tk-hold call */

    if (helper >= 0)
        return helper;
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    RUN_TEST(test_sigterm_fair_waiter);
    RUN_TEST(test_sigterm_at_acquisition);
    RUN_TEST(test_semaphore_sigterm_at_acquisition);
    RUN_TEST(test_semaphore_sigterm_while_waiting);
    RUN_TEST(test_queue_clear);
    RUN_TEST(test_wait_bound_stopped_server);
    RUN_TEST(test_lost_hold_exits_promptly);
    RUN_TEST(test_wait_bound_debug_sleep);
    RUN_TEST(test_aof_restart);
    RUN_TEST(test_busy_script);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_waits");
}
