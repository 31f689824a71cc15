/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_min_replicas.c - replica acknowledgement (rlk_options.min_replicas,
 * rlk --min-replicas; docs/sentinel.md "Replica acknowledgement") on a
 * master + 1 replica on loopback (rlk_fx_start, --replicaof):
 *
 *   - replica healthy, min_replicas 1: lock/unlock pairs work; every writing
 *     script was followed by a WAIT (INFO commandstats: one WAIT per
 *     acquire and per release, none without the option) and no round trip
 *     was added (the client's own count: 2 per pair with and without);
 *     the time per pair is printed side by side;
 *   - replication cut (CLIENT PAUSE WRITE on the replica holds back its
 *     master's stream): an acquisition with min_replicas 1 is refused with
 *     RLK_ERR_NOREPLICAS and leaves no key (reentrant lock, fenced lock,
 *     semaphore permits); a re-entry goes back to count 1; an unlock is done
 *     and reported; a watchdog renewal is counted (renew_unacked), the lock
 *     stays held; the control without the option acquires;
 *   - the CLI: rlk --min-replicas 1 lock NAME -- true exits 10 with a
 *     one-line message and leaves no key; without the option it exits 0;
 *   - one lease clock: rlk --min-replicas 1 lock -l 3000 whose acquire ran on
 *     the master at once but whose reply (the WAIT) came back only once the
 *     server had counted 1.2 s of the lease (replica paused until the key's
 *     PTTL fell to 1800): the command is stopped while the key still lives on
 *     the server (its own PTTL, read by the command as it is stopped, > 0);
 *     counted from the reply instead, it was stopped after the key expired.
 *
 *   it_min_replicas RLK_BINARY
 */
#include "check.h"
#include "fixture.h"
#include "tk_util.h"

#include "client/conn.h"
#include "runtime/rt.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static rlk_fx_server master, replica;
static char murl[128];
static const char *rlk_bin;

#define PAIRS 200

static rlk_client *mr_connect(int min_replicas, int timeout_ms, long long lease_ms)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = murl;
    o.pool_size = 1;            /* one connection: the round trips of one thread */
    o.watchdog_lease_ms = lease_ms;
    o.min_replicas = min_replicas;
    o.min_replicas_timeout_ms = timeout_ms;
    c = rlk_connect(&o);
    if (c && rlk_err(c) != RLK_OK) {
        printf("  connect %s: %s\n", murl, rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    return c;
}

/* calls=N of cmdstat_wait in INFO commandstats on the master (0 when absent). */
static long long wait_calls(void)
{
    redisReply *r = rlk_fx_command(&master, "INFO commandstats");
    const char *at;
    long long n = -1;

    if (r && r->type == REDIS_REPLY_STRING) {
        at = strstr(r->str, "cmdstat_wait:calls=");
        n = at ? atoll(at + strlen("cmdstat_wait:calls=")) : 0;
    }
    if (r)
        freeReplyObject(r);
    return n;
}

/* Bounded poll until the replica is linked and has caught up: a write on a
 * master connection acknowledged by WAIT 1 there. 0 / -1. */
static int replica_in_sync(long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms();

    while (rlk_fx_now_ms() - t0 < timeout_ms) {
        if (rlk_fx_replicated(&master, 1, 1000) >= 1)
            return 0;
        rlk_fx_sleep_ms(50);
    }
    return -1;
}

static int cut_replication(long ms)
{
    return tk_command_ok(&replica, "CLIENT PAUSE %ld WRITE", ms);
}

static int heal_replication(void)
{
    if (tk_command_ok(&replica, "CLIENT UNPAUSE") != 0)
        return -1;
    return replica_in_sync(10000);
}

/* ------------------------------------------------------------ healthy: cost */

/* PAIRS lock/unlock pairs on l: the time per pair in µs, the round trips
 * (rlk_conn_round_trips of this thread) in *trips; -1 on an error. */
static long long pairs(rlk_lock *l, rlk_client *c, unsigned long long *trips)
{
    unsigned long long rt0 = rlk_conn_round_trips();
    long long t0 = rlk_fx_now_ns();

    for (int i = 0; i < PAIRS; i++) {
        if (rlk_lock_try_lock(l, 0, 30000) != RLK_OK || rlk_lock_unlock(l) != RLK_OK) {
            printf("  pair %d: %s\n", i, rlk_errstr(c));
            return -1;
        }
    }
    *trips = rlk_conn_round_trips() - rt0;
    return (rlk_fx_now_ns() - t0) / 1000 / PAIRS;
}

static void test_healthy_cost(void)
{
    rlk_client *plain = mr_connect(0, 0, 30000), *acked = mr_connect(1, 1000, 30000);
    rlk_lock *lp, *la;
    long long us_plain[2], us_acked[2], w0, w1, w2;
    unsigned long long trips_plain = 0, trips_acked = 0;

    REQUIRE(plain && acked);
    lp = rlk_lock_new(plain, "mr:cost:plain");
    la = rlk_lock_new(acked, "mr:cost:acked");
    REQUIRE(lp && la);
    /* Warm up: ROLE, CLIENT SETNAME/ID and the call mode are first-call work. */
    for (int i = 0; i < 5; i++) {
        REQUIRE(rlk_lock_try_lock(lp, 0, 30000) == RLK_OK && rlk_lock_unlock(lp) == RLK_OK);
        REQUIRE(rlk_lock_try_lock(la, 0, 30000) == RLK_OK && rlk_lock_unlock(la) == RLK_OK);
    }
    /* Re-entry and the acks a caller can read. */
    CHECK_INT_EQ(rlk_lock_try_lock(la, 0, 30000), RLK_OK);
    CHECK_INT_EQ(rlk_last_replica_acks(), 1);
    CHECK_INT_EQ(rlk_lock_try_lock(la, 0, 30000), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(la), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(la), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&master, "mr:cost:acked"), 0);
    CHECK_INT_EQ(rlk_lock_try_lock(lp, 0, 30000), RLK_OK);
    CHECK_INT_EQ(rlk_last_replica_acks(), -2);      /* no WAIT sent */
    CHECK_INT_EQ(rlk_lock_unlock(lp), RLK_OK);

    for (int round = 0; round < 2; round++) {       /* alternated: load drifts */
        unsigned long long t = 0;

        w0 = wait_calls();
        us_plain[round] = pairs(lp, plain, &t);
        trips_plain += t;
        w1 = wait_calls();
        us_acked[round] = pairs(la, acked, &t);
        trips_acked += t;
        w2 = wait_calls();
        REQUIRE(us_plain[round] >= 0 && us_acked[round] >= 0);
        CHECKF(w1 - w0 == 0, "WAIT calls without the option: %lld", w1 - w0);
        CHECKF(w2 - w1 == 2 * PAIRS, "WAIT calls with min_replicas 1: %lld, expected %d (one per "
               "acquire and per release)", w2 - w1, 2 * PAIRS);
    }
    CHECKF(trips_plain == 2ULL * 2 * PAIRS, "round trips without: %llu for %d pairs", trips_plain,
           2 * PAIRS);
    CHECKF(trips_acked == trips_plain, "round trips with min_replicas 1: %llu, without: %llu "
           "(the WAIT must ride in the script's round trip)", trips_acked, trips_plain);
    printf("  %d lock/unlock pairs x 2 rounds, one client, replica healthy:\n", PAIRS);
    printf("    without --min-replicas: %lld / %lld us per pair, %.2f round trips per pair\n",
           us_plain[0], us_plain[1], (double)trips_plain / (2 * PAIRS));
    printf("    with --min-replicas 1:  %lld / %lld us per pair, %.2f round trips per pair, "
           "%d WAITs per pair\n", us_acked[0], us_acked[1], (double)trips_acked / (2 * PAIRS), 2);
    rlk_lock_free(lp);
    rlk_lock_free(la);
    rlk_free(plain);
    rlk_free(acked);
}

/* ------------------------------------------------------------ replication cut */

static long long hget_count(const char *key, const char *field)
{
    redisReply *r = rlk_fx_command(&master, "HGET %s %s", key, field);
    long long n = -1;

    if (r && r->type == REDIS_REPLY_STRING)
        n = atoll(r->str);
    else if (r && r->type == REDIS_REPLY_NIL)
        n = 0;
    if (r)
        freeReplyObject(r);
    return n;
}

static void test_cut(void)
{
    rlk_client *acked = mr_connect(1, 300, 30000), *plain = mr_connect(0, 0, 30000);
    rlk_client *renewer = mr_connect(1, 300, 1500);
    rlk_lock *l, *re, *ctl, *wl;
    rlk_fenced *f;
    rlk_semaphore *sem, *sem_ctl;
    rlk_runtime_stats st;
    char owner[200];
    long long t0, ms, token = 0, avail = -1;
    int held = 0;

    REQUIRE(acked && plain && renewer);
    l = rlk_lock_new(acked, "mr:cut");
    re = rlk_lock_new(acked, "mr:re");
    ctl = rlk_lock_new(plain, "mr:ctl");
    wl = rlk_lock_new(renewer, "mr:renew");
    f = rlk_fenced_new(acked, "mr:fenced");
    sem = rlk_semaphore_new(acked, "mr:sem");
    sem_ctl = rlk_semaphore_new(plain, "mr:sem");
    REQUIRE(l && re && ctl && wl && f && sem && sem_ctl);
    /* Taken while the replica is healthy: a hold to re-enter, a lock to renew, permits. */
    REQUIRE(rlk_lock_try_lock(re, 0, 30000) == RLK_OK);
    REQUIRE(rlk_lock_owner(re, owner, sizeof owner) == RLK_OK);
    REQUIRE(rlk_lock_try_lock(wl, 0, -1) == RLK_OK);       /* watchdog: renewed every 500 ms */
    REQUIRE(rlk_semaphore_try_set_permits(sem_ctl, 1, NULL) == RLK_OK);

    REQUIRE(cut_replication(20000) == 0);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 30000), RLK_ERR_NOREPLICAS);
    ms = rlk_fx_now_ms() - t0;
    printf("  replica cut, min_replicas 1 (300 ms): %s (%lld ms)\n", rlk_errstr(acked), ms);
    CHECK_STR_CONTAINS(rlk_errstr(acked), "only 0 of 1 replica acknowledged within 300 ms");
    CHECK_STR_CONTAINS(rlk_errstr(acked), "rolled back");
    CHECK_INT_EQ(tk_key_exists(&master, "mr:cut"), 0);
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);

    /* A re-entry: rolled back by one, the first hold stays. */
    CHECK_INT_EQ(hget_count("mr:re", owner), 1);
    CHECK_INT_EQ(rlk_lock_try_lock(re, 0, 30000), RLK_ERR_NOREPLICAS);
    CHECK_INT_EQ(hget_count("mr:re", owner), 1);
    /* The release is done and reported. */
    CHECK_INT_EQ(rlk_lock_unlock(re), RLK_ERR_NOREPLICAS);
    CHECK_STR_CONTAINS(rlk_errstr(acked), "released, but only 0 of 1");
    CHECK_INT_EQ(tk_key_exists(&master, "mr:re"), 0);
    CHECK_INT_EQ(rlk_lock_unlock(re), RLK_ERR_NOT_OWNER);

    /* Other kinds: a fenced lock, a semaphore's permit. */
    CHECK_INT_EQ(rlk_fenced_try_lock(f, 0, 30000, &token), RLK_ERR_NOREPLICAS);
    CHECK_INT_EQ(tk_key_exists(&master, "mr:fenced"), 0);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(sem, 1, 0), RLK_ERR_NOREPLICAS);
    CHECK_INT_EQ(rlk_semaphore_available(sem_ctl, &avail), RLK_OK);
    CHECK_INT_EQ(avail, 1);

    /* A fenced write: accepted on the master, not undone, but said to be unacknowledged
     * (it returned RLK_OK before); the control without the option: RLK_OK. */
    {
        const char *val[1] = {"v1"};
        redisReply *fr = NULL;
        int frc = rlk_fence_write(acked, "set", "{mr:fw}:fence", "{mr:fw}:data", 7, 1, val, NULL,
                                  NULL, &fr);

        CHECKF(frc == RLK_ERR_NOREPLICAS, "rlk_fence_write, replica cut: %s (%s)",
               rlk_strerror(frc), rlk_errstr(acked));
        CHECKF(fr != NULL, "no reply handed back with RLK_ERR_NOREPLICAS");
        printf("  fenced write, replica cut: %s: %s\n", rlk_strerror(frc), rlk_errstr(acked));
        if (fr)
            freeReplyObject(fr);
        CHECK_INT_EQ(tk_key_exists(&master, "{mr:fw}:data"), 1);
        CHECK_INT_EQ(rlk_fence_write(plain, "set", "{mr:fw}:fence", "{mr:fw}:data", 7, 1, val,
                                     NULL, NULL, NULL), RLK_OK);
    }

    /* Renewals: counted, not undone; the lock stays held. */
    {
        long long w0 = rlk_fx_now_ms();

        do {
            rlk_runtime_stats_get(renewer, &st);
            if (st.renew_unacked > 0)
                break;
            rlk_fx_sleep_ms(20);
        } while (rlk_fx_now_ms() - w0 < 10000);
        CHECKF(st.renew_unacked > 0, "no unacknowledged renewal counted in %lld ms (renew_calls "
               "%llu)", rlk_fx_now_ms() - w0, st.renew_calls);
        printf("  watchdog under the cut: %llu renewal(s), %llu unacknowledged\n",
               st.renew_calls, st.renew_unacked);
    }
    CHECK_INT_EQ(rlk_lock_is_held_by_me(wl, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);

    /* The control: without the option the acquisition succeeds. */
    CHECK_INT_EQ(rlk_lock_try_lock(ctl, 0, 30000), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&master, "mr:ctl"), 1);
    CHECK_INT_EQ(rlk_lock_unlock(ctl), RLK_OK);

    CHECKF(heal_replication() == 0, "the replica did not catch up after CLIENT UNPAUSE");
    /* Healed: the same client acquires. */
    CHECKF(rlk_lock_try_lock(l, 0, 30000) == RLK_OK, "after the cut: %s", rlk_errstr(acked));
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(wl), RLK_OK);
    rlk_lock_free(l);
    rlk_lock_free(re);
    rlk_lock_free(ctl);
    rlk_lock_free(wl);
    rlk_fenced_free(f);
    rlk_semaphore_free(sem);
    rlk_semaphore_free(sem_ctl);
    rlk_free(acked);
    rlk_free(plain);
    rlk_free(renewer);
}

/* ------------------------------------------------------------ the CLI */

/* Runs rlk with argv; its exit code (or -1), the first line of its stderr in err. */
static int run_rlk(const char *const *argv, char *err, size_t len)
{
    int fds[2], status;
    pid_t pid;
    ssize_t n;
    size_t got = 0;
    long long t0 = rlk_fx_now_ms();

    err[0] = '\0';
    if (pipe(fds) != 0)
        return -1;
    pid = fork();
    if (pid == 0) {
        dup2(fds[1], 2);
        close(fds[0]);
        close(fds[1]);
        execv(rlk_bin, (char *const *)argv);
        _exit(127);
    }
    close(fds[1]);
    while (got + 1 < len && (n = read(fds[0], err + got, len - 1 - got)) > 0)
        got += (size_t)n;
    err[got] = '\0';
    close(fds[0]);
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (rlk_fx_now_ms() - t0 > 30000) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        rlk_fx_sleep_ms(10);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_cli(void)
{
    const char *with[] = {rlk_bin, "--url", murl, "--min-replicas", "1", "--min-replicas-timeout",
                          "300", "lock", "mr:cli", "--", "true", NULL};
    const char *without[] = {rlk_bin, "--url", murl, "lock", "mr:cli", "--", "true", NULL};
    char err[1024];
    int rc, lines = 0;

    REQUIRE(cut_replication(20000) == 0);
    rc = run_rlk(with, err, sizeof err);
    for (const char *p = err; *p; p++)
        lines += *p == '\n';
    printf("  rlk --min-replicas 1 lock, replica cut: exit %d, stderr: %s", rc, err);
    CHECK_INT_EQ(rc, 10);
    CHECKF(lines == 1, "%d lines on stderr", lines);
    CHECK_STR_PREFIX(err, "rlk: lock mr:cli: taken, but only 0 of 1 replica acknowledged");
    CHECK_INT_EQ(tk_key_exists(&master, "mr:cli"), 0);
    rc = run_rlk(without, err, sizeof err);        /* the control */
    CHECKF(rc == 0, "without --min-replicas: exit %d, %s", rc, err);
    CHECKF(heal_replication() == 0, "the replica did not catch up after CLIENT UNPAUSE");
    rc = run_rlk(with, err, sizeof err);
    CHECKF(rc == 0, "replica healthy, --min-replicas 1: exit %d, %s", rc, err);
}

/* ------------------------------------------------------------ one lease clock */

typedef struct rlk_job {
    const char *const *argv;
    char err[2048];
    int rc;
} rlk_job;

static void *rlk_job_main(void *arg)
{
    rlk_job *j = arg;

    j->rc = run_rlk(j->argv, j->err, sizeof j->err);
    return NULL;
}

/* Bounded poll of the master's PTTL of key until test(pttl); the last PTTL, or -3 on timeout. */
static long long poll_pttl(const char *key, int above, long long bound, long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms(), ttl = -3;

    while (rlk_fx_now_ms() - t0 < timeout_ms) {
        ttl = tk_int(&master, "PTTL %s", key);
        if (above ? ttl > bound : (ttl >= 0 && ttl <= bound))
            return ttl;
        rlk_fx_sleep_ms(5);
    }
    return -3;
}

static void test_cli_lease_clock(void)
{
    char dir[] = "/tmp/rlk-mr-clock-XXXXXX", ev[64], script[1024], line[256];
    const char *args[] = {rlk_bin, "--url", murl, "--min-replicas", "1", "--min-replicas-timeout",
                          "20000", "lock", "mr:clk", "-l", "6000", "-k", "2", "--", "sh", "-c",
                          script, NULL};
    long long stop_pttl = -100, t_taken, t_ready = -1;
    pthread_t th;
    rlk_job job;
    FILE *f;

    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(ev, sizeof ev, "%s/ev", dir);
    /* The command reads the key's PTTL on the server as it is stopped: the server's own
     * clock says whether the lease was still running. */
    snprintf(script, sizeof script, "trap 'echo stop $(%s -p %d PTTL mr:clk) >> %s; exit 0' TERM; "
             "echo ready >> %s; exec 2>/dev/null; n=0; while [ $n -lt 1500 ]; do sleep 0.02; "
             "n=$((n+1)); done", rlk_fx_redis_cli_path(), master.port, ev, ev);
    REQUIRE(cut_replication(30000) == 0);  /* the WAIT after the acquire waits for the replica */
    memset(&job, 0, sizeof job);
    job.argv = args;
    REQUIRE(pthread_create(&th, NULL, rlk_job_main, &job) == 0);
    /* The acquire ran on the master (the key is there), its reply held back by the WAIT
     * until the server has counted 2.5 s of the 6 s lease: longer than the 2 s grace and the
     * margin, so that a lease clock started at the reply would stop the command only after
     * the server's lease ended. The grace gives the trap's redis-cli 2 s to read the PTTL (a
     * loaded machine took more than 0.5 s to start it). */
    CHECKF(poll_pttl("mr:clk", 1, 0, 10000) > 0, "the acquire never ran on the master");
    t_taken = rlk_fx_now_ms();
    CHECKF(poll_pttl("mr:clk", 0, 3500, 10000) >= 0, "the key's PTTL never fell to 3500");
    CHECKF(heal_replication() == 0, "the replica did not catch up after CLIENT UNPAUSE");
    pthread_join(th, NULL);
    f = fopen(ev, "r");
    while (f && fgets(line, sizeof line, f)) {
        if (strncmp(line, "ready", 5) == 0 && t_ready < 0)
            t_ready = 1;
        if (strncmp(line, "stop ", 5) == 0)
            stop_pttl = atoll(line + 5);
    }
    if (f)
        fclose(f);
    printf("  reply held back until the server had counted %lld ms of the lease (%lld ms "
           "after the key appeared); rlk exit %d; the key's PTTL as the command was stopped: "
           "%lld ms\n", 6000LL - 3500, rlk_fx_now_ms() - t_taken, job.rc, stop_pttl);
    printf("  stderr: %s", job.err);
    CHECKF(t_ready > 0, "the command never ran");
    CHECK_INT_EQ(job.rc, 6);        /* lost: its lease was running out */
    CHECKF(stop_pttl > 0, "the command was stopped with the key's PTTL %lld on the server "
           "(-2: the lease had run out on the server while the command still ran)", stop_pttl);
    unlink(ev);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    const char *mextra[] = {"--repl-diskless-sync-delay", "0", NULL};
    char port[16];
    const char *rextra[] = {"--replicaof", "127.0.0.1", port, NULL};
    rlk_fx_config cfg;

    if (argc < 2) {
        printf("usage: it_min_replicas RLK_BINARY\n");
        return 2;
    }
    rlk_bin = argv[1];
    rlk_fx_config_init(&cfg);
    cfg.extra = mextra;
    if (rlk_fx_start(&master, &cfg) != 0)
        return 1;
    snprintf(port, sizeof port, "%d", master.port);
    cfg.extra = rextra;
    if (rlk_fx_start(&replica, &cfg) != 0 || replica_in_sync(20000) != 0) {
        printf("it_min_replicas: the replica did not come up\n");
        rlk_fx_stop(&master);
        rlk_fx_stop(&replica);
        return 1;
    }
    rlk_fx_url(&master, -1, murl, sizeof murl);
    RUN_TEST(test_healthy_cost);
    RUN_TEST(test_cut);
    RUN_TEST(test_cli);
    RUN_TEST(test_cli_lease_clock);
    rlk_fx_stop(&replica);
    rlk_fx_stop(&master);
    return check_summary("it_min_replicas");
}
