/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_delay.c - the reentrant lock's lock-delay on the loop
 * (rlk_async_lock_delay), against a real redis-server, as
 * c/tests/family_locks/fl_lockdelay.c checks the blocking lock's:
 *
 *   paused          an async holder in a child process (its watchdog's lease
 *                   WD_LEASE, with the delay) is stopped with SIGSTOP, so its
 *                   lease runs out with no release; once its hold is gone the
 *                   delay key is still there and the async waiter (with the
 *                   delay) still waits; it gets the lock no earlier than DELAY
 *                   after the hold went;
 *   paused_control  the same without the delay: the waiter gets the lock
 *                   earlier than the bound above allows (it must fail there);
 *   released        renewals keep the delay key at lease + delay; an unlock
 *                   deletes it and a waiter with the delay gets the lock at
 *                   once; a blocking lock with the same delay is kept out
 *                   while an async holder holds, and takes it after;
 *   args            delay_ms out of range, delay 0 (no delay key);
 *   force           rlk_async_force_unlock(RLK_KIND_LOCK) is a release: it
 *                   ends a lost lock's delay (reply 2, the key gone, a waiter
 *                   with the delay gets the lock at once) and deletes a held
 *                   lock's delay key with it (reply 1), as
 *                   rlk_lock_force_unlock does;
 *   reentry         a hold keeps the lock-delay of its first acquisition: an
 *                   rlk_async_lock re-entry of a hold taken with the delay
 *                   refreshes the key and its last release deletes it; an
 *                   rlk_async_lock_delay re-entry of a hold taken without
 *                   writes none, nor does one with another delay change it;
 *   batch           NBATCH holds with the delay are renewed together, each
 *                   delay key after its lock in one reentrant/renew_many call
 *                   a round (the server's PEXPIREs: two per hold per call), as
 *                   the blocking watchdog does (family_locks_lockdelay).
 *
 * Times are asserted as bounds with room (SLACK) for the polls, the order of
 * events as facts (the hold gone, the delay key there, the waiter waiting).
 *
 *   rlk_async_delay_<loop> <case>|all
 *   rlk_async_delay_<loop> hold URL NAME DELAY_MS   (the holder child)
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "aloop.h"
#include "async_procs.h"
#include "async_test.h"
#include "tk_util.h"
#include "rlk.h"
#include "rlk_async.h"

#define WD_LEASE 1000       /* the holders' watchdog lease */
#define DELAY 3000          /* the lock-delay */
#define SLACK 250           /* what a 5 ms poll may lag behind */
#define HOLD_MAX_S 120      /* a holder child's bound, should the parent never kill it */
#define NUM_MAX 1000000000000LL     /* the scripts' bound on every number */

static rlk_fx_server srv;
static char url[512];

static long long srv_int(const char *fmt, const char *a, const char *b)
{
    return at_srv_num(&srv, fmt, a, b);
}

static int srv_ok(const char *fmt, const char *a)
{
    return at_srv_ok(&srv, fmt, a);
}

/* ---------------------------------------------------------------- the holder child */

/* Holds name (task 1, the watchdog, with the delay when > 0), says "L" on fd,
 * renews until killed. */
static int child_hold(const char *u, const char *name, long long delay)
{
    ap_cl c;
    ap_res x = {0};
    char ch = 'L';

    if (ap_cl_open(&c, u, WD_LEASE, 0, 0) != RLK_OK)
        return 3;
    rlk_async_lock_delay(c.ac, name, 1, 0, -1, delay, ap_on_res, &x);
    if (!ap_wait_res(&c, &x, 10000) || x.err != RLK_OK) {
        fprintf(stderr, "hold %s: %d %s\n", name, x.err, x.errstr);
        return 4;
    }
    if (write(STDOUT_FILENO, &ch, 1) != 1)
        return 5;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    for (int i = 0; i < HOLD_MAX_S; i++)
        aloop_run_until(c.l, NULL, NULL, 1000);
    return 6;
}

/* Forks this program as the holder of name; its pid once it holds (bounded), or -1. The
 * holder's id is "<its uuid>:1": found on the server as the hash's one field. */
static pid_t holder_start(const char *self, const char *name, long long delay)
{
    int p[2];
    pid_t pid;
    char d[24], ch = 0;
    struct pollfd pf;

    if (pipe(p) != 0)
        return -1;
    snprintf(d, sizeof d, "%lld", delay);
    fflush(NULL);
    if ((pid = fork()) == 0) {
        dup2(p[1], STDOUT_FILENO);
        close(p[0]);
        execl(self, self, "hold", url, name, d, (char *)NULL);
        _exit(127);
    }
    close(p[1]);
    pf.fd = p[0];
    pf.events = POLLIN;
    if (pid > 0 && (poll(&pf, 1, 15000) != 1 || read(p[0], &ch, 1) != 1 || ch != 'L')) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        pid = -1;
    }
    close(p[0]);
    return pid;
}

static void holder_stop(pid_t pid)
{
    if (pid <= 0)
        return;
    kill(pid, SIGCONT);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}

/* ---------------------------------------------------------------- cases */

static char self_exe[512];

static void paused(long long delay)
{
    const char *name = delay > 0 ? "ad:paused" : "ad:paused:control";
    char dkey[64], wkey[64], owner[256];
    ap_cl c;
    ap_res w = {0}, u = {0};
    pid_t pid;
    long long t0, gone = -1, after;

    snprintf(dkey, sizeof dkey, "{%s}:rlk_delay", name);
    snprintf(wkey, sizeof wkey, "{%s}:rlk_waiters", name);
    REQUIRE((pid = holder_start(self_exe, name, delay)) > 0);
    if (delay > 0) {
        long long pttl = srv_int("PTTL %s", dkey, NULL);

        CHECKF(pttl > WD_LEASE && pttl <= WD_LEASE + delay, "delay key PTTL %lld while held", pttl);
        CHECK_INT_EQ(srv_int("GET %s", dkey, NULL), delay);
    } else {
        CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);
    }
    CHECK_INT_EQ(srv_int("HLEN %s", name, NULL), 1);
    {   /* the holder's id: the hash's one field */
        redisReply *r = rlk_fx_command(&srv, "HKEYS %s", name);

        REQUIRE(r && r->type == REDIS_REPLY_ARRAY && r->elements == 1);
        snprintf(owner, sizeof owner, "%s", r->element[0]->str);
        freeReplyObject(r);
    }
    REQUIRE(ap_cl_open(&c, url, 0, 0, 0) == RLK_OK);
    rlk_async_lock_delay(c.ac, name, 1, 20000, 10000, delay, ap_on_res, &w);
    /* queued behind the holder, not holding */
    t0 = rlk_fx_now_ms();
    while (srv_int("LLEN %s", wkey, NULL) < 1 && rlk_fx_now_ms() - t0 < 5000)
        aloop_run_until(c.l, ap_res_done, &w, 5);
    CHECK(srv_int("LLEN %s", wkey, NULL) >= 1);
    CHECK_INT_EQ(w.calls, 0);
    /* the holder stops: its renewals stop, its lease runs out with no release */
    CHECK(kill(pid, SIGSTOP) == 0);
    t0 = rlk_fx_now_ms();
    while (rlk_fx_now_ms() - t0 < 10 * WD_LEASE + 5000) {
        int done = w.calls > 0;     /* read before the probe */

        if (srv_int("HEXISTS %s %s", name, owner) == 0) {
            gone = rlk_fx_now_ms();
            break;
        }
        if (done)
            break;      /* taken while the paused holder held it: a failure */
        aloop_run_until(c.l, ap_res_done, &w, 5);
    }
    if (gone < 0) {
        CHECKF(0, "the paused holder's hold did not go, or the waiter ended while it held (%d: %s)",
               w.err, w.errstr);
        holder_stop(pid);
        ap_cl_close(&c);
        return;
    }
    if (delay > 0) {
        /* the lock is free, its delay key is there, the waiter still waits */
        long long pttl = srv_int("PTTL %s", dkey, NULL);

        CHECKF(pttl > 0 && pttl <= delay, "delay key PTTL %lld after the hold went", pttl);
        CHECK_INT_EQ(srv_int("EXISTS %s", name, NULL), 0);
        CHECK_INT_EQ(w.calls, 0);
    }
    REQUIRE(ap_wait_res(&c, &w, 20000));
    CHECKF(w.err == RLK_OK, "waiter: %d %s", w.err, w.errstr);
    after = w.at_ms - gone;
    printf("  %s: the async waiter got the lock %lld ms after the paused async holder's hold "
           "went (delay %d ms)\n", delay > 0 ? "lock-delay" : "control, no delay", after, DELAY);
    if (delay > 0)
        CHECKF(after >= DELAY - SLACK, "taken %lld ms after the hold went, delay %d ms", after,
               DELAY);
    else    /* the control: the bound above does not hold without the delay */
        CHECKF(after < DELAY - SLACK, "taken %lld ms after the hold went with no delay", after);
    {   /* the refusals in the delay are counted (rlk_metrics.delay_refusals), none without it */
        rlk_metrics m;

        REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
        if (delay > 0)
            CHECKF(m.delay_refusals >= 1, "delay_refusals %llu", m.delay_refusals);
        else
            CHECK_INT_EQ((long long)m.delay_refusals, 0);
    }
    /* the release deletes the delay key (the waiter's own, with the delay) */
    rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, 1, ap_on_res, &u);
    REQUIRE(ap_wait_res(&c, &u, 5000));
    CHECK_INT_EQ(u.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", name, NULL), 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);
    holder_stop(pid);
    ap_cl_close(&c);
}

static void test_paused(void)
{
    paused(DELAY);
}

static void test_paused_control(void)
{
    paused(0);
}

/* Renewals keep the delay key; an unlock deletes it and the next holder with the delay
 * gets the lock at once; a blocking lock with the delay is kept out meanwhile. */
static void test_released(void)
{
    const char *name = "ad:released", *dkey = "{ad:released}:rlk_delay";
    ap_cl c;
    ap_res h = {0}, w = {0}, u = {0}, u2 = {0}, re = {0};
    rlk_client *bc = rlk_connect_url(url);
    rlk_lock *bl = bc ? rlk_lock_new(bc, name) : NULL;
    long long pttl, t0;

    REQUIRE(bl && rlk_lock_set_delay(bl, DELAY) == RLK_OK);
    REQUIRE(ap_cl_open(&c, url, WD_LEASE, 0, 0) == RLK_OK);
    rlk_async_lock_delay(c.ac, name, 1, 0, -1, DELAY, ap_on_res, &h);
    REQUIRE(ap_wait_res(&c, &h, 5000));
    REQUIRE(h.err == RLK_OK);
    CHECK_INT_EQ(h.value, 1);
    CHECK_INT_EQ(srv_int("GET %s", dkey, NULL), DELAY);
    /* re-entered with the delay: counted */
    rlk_async_lock_delay(c.ac, name, 1, 0, -1, DELAY, ap_on_res, &re);
    REQUIRE(ap_wait_res(&c, &re, 5000));
    CHECK(re.err == RLK_OK && re.value == 2);
    /* held past three leases: the watchdog's renewals keep the key at lease + delay */
    aloop_run_until(c.l, NULL, NULL, 3 * WD_LEASE);
    CHECK_INT_EQ(srv_int("HLEN %s", name, NULL), 1);
    pttl = srv_int("PTTL %s", dkey, NULL);
    CHECKF(pttl > DELAY && pttl <= WD_LEASE + DELAY, "delay key PTTL %lld after renewals", pttl);
    /* a blocking lock with the same delay: kept out while held */
    CHECK_INT_EQ(rlk_lock_try_lock(bl, 0, 10000), RLK_ERR_BUSY);
    /* a second task waits; the last unlock deletes the delay key and it gets the lock at once */
    rlk_async_lock_delay(c.ac, name, 2, 10000, 10000, DELAY, ap_on_res, &w);
    aloop_run_until(c.l, ap_res_done, &w, 300);
    CHECK_INT_EQ(w.calls, 0);
    rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, 1, ap_on_res, &u);
    REQUIRE(ap_wait_res(&c, &u, 5000));
    CHECK(u.err == RLK_OK && u.value == 1);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 1);     /* still held once */
    memset(&u, 0, sizeof u);
    t0 = rlk_fx_now_ms();
    rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, 1, ap_on_res, &u);
    REQUIRE(ap_wait_res(&c, &u, 5000));
    CHECK(u.err == RLK_OK && u.value == 0);
    REQUIRE(ap_wait_res(&c, &w, 5000));
    CHECKF(w.err == RLK_OK, "waiter: %d %s", w.err, w.errstr);
    CHECKF(w.at_ms - t0 < 1000, "the waiter took %lld ms after the release", w.at_ms - t0);
    CHECK_INT_EQ(srv_int("GET %s", dkey, NULL), DELAY);   /* the new holder's */
    rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, 2, ap_on_res, &u2);
    REQUIRE(ap_wait_res(&c, &u2, 5000));
    CHECK_INT_EQ(u2.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", name, NULL), 0);
    /* released: the blocking lock with the delay takes it at once */
    CHECK_INT_EQ(rlk_lock_try_lock(bl, 0, 10000), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(bl), RLK_OK);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    rlk_lock_free(bl);
    rlk_free(bc);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static void test_args(void)
{
    ap_cl c;
    ap_res a = {0}, b = {0}, u = {0};

    REQUIRE(ap_cl_open(&c, url, 0, 0, 0) == RLK_OK);
    rlk_async_lock_delay(c.ac, "ad:args", 1, 0, 10000, -1, ap_on_res, &a);
    REQUIRE(ap_wait_res(&c, &a, 5000));
    CHECK_INT_EQ(a.err, RLK_ERR_ARG);
    CHECKF(strstr(a.errstr, "delay_ms") != NULL, "message: %s", a.errstr);
    memset(&a, 0, sizeof a);
    rlk_async_lock_delay(c.ac, "ad:args", 1, 0, 10000, NUM_MAX + 1, ap_on_res, &a);
    REQUIRE(ap_wait_res(&c, &a, 5000));
    CHECK_INT_EQ(a.err, RLK_ERR_ARG);
    CHECK_INT_EQ(srv_int("EXISTS %s", "ad:args", NULL), 0);
    /* 0: the lock without the delay: no delay key */
    rlk_async_lock_delay(c.ac, "ad:args", 1, 0, 10000, 0, ap_on_res, &b);
    REQUIRE(ap_wait_res(&c, &b, 5000));
    CHECK_INT_EQ(b.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", "{ad:args}:rlk_delay", NULL), 0);
    rlk_async_unlock(c.ac, RLK_KIND_LOCK, "ad:args", 1, ap_on_res, &u);
    REQUIRE(ap_wait_res(&c, &u, 5000));
    CHECK_INT_EQ(u.err, RLK_OK);
    ap_cl_close(&c);
}

/* rlk_async_force_unlock ends a delay: a lost lock's (only its key there) and a held one's. */
static void test_force(void)
{
    const char *name = "ad:force", *dkey = "{ad:force}:rlk_delay";
    ap_cl c;
    ap_res w = {0}, f = {0}, u = {0}, h = {0}, f2 = {0};
    long long t0;

    REQUIRE(ap_cl_open(&c, url, WD_LEASE, 0, 0) == RLK_OK);
    /* A lost lock in its delay: the delay key alone (as a lost lease leaves it). */
    REQUIRE(srv_ok("SET %s 60000 PX 60000", dkey));
    rlk_async_lock_delay(c.ac, name, 1, 20000, 10000, DELAY, ap_on_res, &w);
    aloop_run_until(c.l, ap_res_done, &w, 300);
    CHECK_INT_EQ(w.calls, 0);       /* kept out by the delay */
    t0 = rlk_fx_now_ms();
    rlk_async_force_unlock(c.ac, RLK_KIND_LOCK, name, ap_on_res, &f);
    REQUIRE(ap_wait_res(&c, &f, 5000));
    CHECKF(f.err == RLK_OK && f.value == 2, "force unlock of a delay: %d %lld %s", f.err, f.value,
           f.errstr);
    REQUIRE(ap_wait_res(&c, &w, 5000));
    CHECKF(w.err == RLK_OK, "waiter: %d %s", w.err, w.errstr);
    CHECKF(w.at_ms - t0 < 1000, "the waiter took %lld ms after the force unlock", w.at_ms - t0);
    rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, 1, ap_on_res, &u);
    REQUIRE(ap_wait_res(&c, &u, 5000));
    CHECK_INT_EQ(u.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);
    /* A held lock with the delay: both keys go, and this client's hold with them. */
    rlk_async_lock_delay(c.ac, name, 2, 0, -1, DELAY, ap_on_res, &h);
    REQUIRE(ap_wait_res(&c, &h, 5000));
    REQUIRE(h.err == RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 1);
    rlk_async_force_unlock(c.ac, RLK_KIND_LOCK, name, ap_on_res, &f2);
    REQUIRE(ap_wait_res(&c, &f2, 5000));
    CHECKF(f2.err == RLK_OK && f2.value == 1, "force unlock of a hold: %d %lld", f2.err, f2.value);
    CHECK_INT_EQ(srv_int("EXISTS %s", name, NULL), 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* One request on c: its result (bounded). */
static ap_res one(ap_cl *c, rlk_async_req *(*fn)(ap_cl *, const char *, unsigned long long,
                                                  long long, ap_res *),
                  const char *name, unsigned long long task, long long delay)
{
    ap_res x = {0};

    fn(c, name, task, delay, &x);
    if (!ap_wait_res(c, &x, 5000))
        x.err = -1000;
    return x;
}

static rlk_async_req *req_delay(ap_cl *c, const char *name, unsigned long long task,
                                long long delay, ap_res *x)
{
    return rlk_async_lock_delay(c->ac, name, task, 0, -1, delay, ap_on_res, x);
}

static rlk_async_req *req_plain(ap_cl *c, const char *name, unsigned long long task,
                                long long delay, ap_res *x)
{
    (void)delay;
    return rlk_async_lock(c->ac, RLK_KIND_LOCK, name, task, 0, -1, ap_on_res, x);
}

static rlk_async_req *req_unlock(ap_cl *c, const char *name, unsigned long long task,
                                 long long delay, ap_res *x)
{
    (void)delay;
    return rlk_async_unlock(c->ac, RLK_KIND_LOCK, name, task, ap_on_res, x);
}

/* A hold keeps the delay its first acquisition took, or the lack of one. */
static void test_reentry(void)
{
    const char *name = "ad:reentry", *dkey = "{ad:reentry}:rlk_delay";
    ap_cl c;
    ap_res x;
    long long pttl;

    REQUIRE(ap_cl_open(&c, url, WD_LEASE, 0, 0) == RLK_OK);
    /* Taken with the delay, re-entered without: the re-entry writes the key again (lease +
     * delay), the first release keeps it, the last deletes it. */
    x = one(&c, req_delay, name, 1, DELAY);
    REQUIRE(x.err == RLK_OK && x.value == 1);
    REQUIRE(srv_int("PEXPIRE %s %s", dkey, "100000") == 1);    /* far from lease + delay */
    x = one(&c, req_plain, name, 1, 0);
    CHECK(x.err == RLK_OK && x.value == 2);
    pttl = srv_int("PTTL %s", dkey, NULL);
    CHECKF(pttl > DELAY && pttl <= WD_LEASE + DELAY, "delay key PTTL %lld after a plain re-entry",
           pttl);
    /* Re-entered with another delay: the hold's stays (the key's value). */
    x = one(&c, req_delay, name, 1, 2 * DELAY);
    CHECK(x.err == RLK_OK && x.value == 3);
    CHECK_INT_EQ(srv_int("GET %s", dkey, NULL), DELAY);
    x = one(&c, req_unlock, name, 1, 0);
    CHECK(x.err == RLK_OK && x.value == 2);
    x = one(&c, req_unlock, name, 1, 0);
    CHECK(x.err == RLK_OK && x.value == 1);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 1);
    /* Held past two leases on the plain re-entry's count: renewed with its delay key. */
    aloop_run_until(c.l, NULL, NULL, 2 * WD_LEASE);
    pttl = srv_int("PTTL %s", dkey, NULL);
    CHECKF(pttl > DELAY && pttl <= WD_LEASE + DELAY, "delay key PTTL %lld after renewals", pttl);
    x = one(&c, req_unlock, name, 1, 0);
    CHECK(x.err == RLK_OK && x.value == 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", name, NULL), 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);     /* released: no delay left behind */
    /* Taken without the delay, re-entered with it: no delay key, before or after. */
    x = one(&c, req_plain, name, 2, 0);
    REQUIRE(x.err == RLK_OK && x.value == 1);
    x = one(&c, req_delay, name, 2, DELAY);
    CHECK(x.err == RLK_OK && x.value == 2);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);
    x = one(&c, req_unlock, name, 2, 0);
    CHECK(x.err == RLK_OK && x.value == 1);
    x = one(&c, req_unlock, name, 2, 0);
    CHECK(x.err == RLK_OK && x.value == 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", name, NULL), 0);
    CHECK_INT_EQ(srv_int("EXISTS %s", dkey, NULL), 0);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

#define NBATCH 6            /* holds with a delay, renewed together */

/* The watchdog's renewal calls (replies counted) and the server's PEXPIREs; nothing runs on
 * the loop in between. 0, or -1. */
static int renew_counts(ap_cl *c, unsigned long long *calls, long long *pexpires)
{
    rlk_metrics m;

    if (rlk_async_metrics_get(c->ac, &m) != RLK_OK || (*pexpires = tk_command_calls(&srv, "pexpire")) < 0)
        return -1;
    *calls = m.renewals;
    return 0;
}

static void test_batch(void)
{
    char name[NBATCH][32], dkey[NBATCH][48];
    unsigned long long c0 = 0, c1 = 0, calls;
    long long p0 = 0, p1 = 0, t_acq, before, deadline;
    ap_cl c;
    ap_res x, got[NBATCH];

    REQUIRE(ap_cl_open(&c, url, WD_LEASE, 0, 0) == RLK_OK);
    /* All asked for before the loop runs: sent together, so their renewals fall due together
     * (holds due within a quarter period of each other share a call). */
    memset(got, 0, sizeof got);
    for (int k = 0; k < NBATCH; k++) {
        snprintf(name[k], sizeof name[k], "{ad:batch}:%d", k);
        snprintf(dkey[k], sizeof dkey[k], "%s:rlk_delay", name[k]);
        req_delay(&c, name[k], 1, DELAY, &got[k]);
    }
    for (int k = 0; k < NBATCH; k++) {
        REQUIRE(ap_wait_res(&c, &got[k], 5000));
        REQUIRE(got[k].err == RLK_OK);
    }
    t_acq = rlk_fx_now_ms();
    REQUIRE(renew_counts(&c, &c0, &p0) == 0);
    /* Four renewal calls at least: the holds' first rounds fall together. */
    deadline = rlk_fx_now_ms() + 15000;
    do {
        aloop_run_until(c.l, NULL, NULL, 20);
        REQUIRE(renew_counts(&c, &c1, &p1) == 0);
    } while (c1 - c0 < 4 && rlk_fx_now_ms() < deadline);
    calls = c1 - c0;
    p1 -= p0;
    printf("  %d async holds with a delay: %llu renewal calls, %lld PEXPIREs\n", NBATCH, calls,
           p1);
    REQUIRE(calls >= 4);
    /* Each call renewed every hold and its delay key (two PEXPIREs each); a call is counted at
     * its reply, so one more or one less may have run on the server than counted. Alone, a
     * call renews one hold: two PEXPIREs. */
    CHECKF(p1 >= 2LL * NBATCH * (long long)(calls - 1) &&
           p1 <= 2LL * NBATCH * (long long)(calls + 1),
           "%lld PEXPIREs for %llu calls of %d holds", p1, calls, NBATCH);
    before = rlk_fx_now_ms();
    for (int k = 0; k < NBATCH; k++) {
        long long d = srv_int("PTTL %s", dkey[k], NULL);

        /* Not refreshed, it would be at most lease + delay - (before - t_acq). */
        CHECKF(d > WD_LEASE + DELAY - (before - t_acq) + 50 && d <= WD_LEASE + DELAY,
               "%s: PTTL %lld, %lld ms after the locks were taken", dkey[k], d, before - t_acq);
        CHECK_INT_EQ(srv_int("GET %s", dkey[k], NULL), DELAY);
    }
    for (int k = 0; k < NBATCH; k++) {
        x = one(&c, req_unlock, name[k], 1, 0);
        CHECK(x.err == RLK_OK && x.value == 0);
        CHECK_INT_EQ(srv_int("EXISTS %s", dkey[k], NULL), 0);
    }
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static const at_case cases[] = {
    {"paused", test_paused},
    {"paused_control", test_paused_control},
    {"released", test_released},
    {"args", test_args},
    {"force", test_force},
    {"reentry", test_reentry},
    {"batch", test_batch},
};

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "hold") == 0) {
        signal(SIGPIPE, SIG_IGN);
        snprintf(url, sizeof url, "%s", argv[2]);
        return child_hold(argv[2], argv[3], atoll(argv[4]));
    }
    if (!realpath(argv[0], self_exe))
        return 1;
    return AT_MAIN("async_delay", cases, argc > 1 ? argv[1] : "all", NULL, &srv, url);
}
