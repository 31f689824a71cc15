/*
 * rt_lost_stress.c - lost replies under load, across processes: 4
 * processes (this program re-executed: "child URL MS LOGFILE")
 * lock and unlock one reentrant lock in a loop with a 150 ms command
 * timeout, while the parent injects faults: DEBUG SLEEP 300 ms (past the
 * timeout) and, during half of the sleeps, CLIENT KILL TYPE normal of every
 * other connection once the children's requests are in.
 *
 * Asserted:
 *   - 0 overlaps: every hold is logged as a CLOCK_MONOTONIC span (taken
 *     after the lock call returned RLK_OK, before the unlock is sent), the
 *     logs of all processes merged and sorted;
 *   - nothing pinned: after every unlock of the process's last hold that
 *     reports RLK_OK, the process's own field is gone from the lock hash
 *     (checked from a side connection; a remaining field is a hold count
 *     the client did not know of), and at the end the lock is free within a
 *     lease.
 */
#include "check.h"
#include "tk_util.h"
#include "runtime/rt.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#define NPROC 4
#define LEASE_MS 5000
#define LOCK_NAME "ls:lock"

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ child */

static int child_main(int argc, char **argv)
{
    rlk_options o;
    rlk_client *c;
    rlk_lock *l;
    redisContext *side = NULL;
    char owner[RLK_OWNER_MAX + 1], host[64], last_err[600] = "";
    long long end, grants = 0, errors = 0, pinned = 0, unknown = 0;
    int port = 0;
    FILE *log;
    unsigned seed = (unsigned)getpid();

    if (argc < 6)
        return 2;
    rlk_options_init(&o);
    o.url = argv[2];
    o.command_timeout_ms = 150;
    o.pool_size = 2;
    /* Connecting loads every script within the 150 ms timeout: a loaded
     * machine may need another try. */
    for (int i = 0;; i++) {
        c = rlk_connect(&o);
        if (c && rlk_err(c) == RLK_OK)
            break;
        if (c)
            rlk_free(c);
        if (i == 50)
            return 3;
        rlk_fx_sleep_ms(100);   /* back-off between connects */
    }
    l = rlk_lock_new(c, LOCK_NAME);
    log = fopen(argv[4], "w");
    if (!l || !log || rlk_lock_owner(l, owner, sizeof owner) != RLK_OK ||
        (sscanf(argv[2], "redis://%63[^:]:%d", host, &port) != 2 && !argv[5][0]))
        return 4;
    tk_say("ready");
    end = rlk_fx_now_ms() + atoll(argv[3]);
    while (rlk_fx_now_ms() < end) {
        long long t0, t1;
        int rc = rlk_lock_try_lock(l, 1000, LEASE_MS);
        redisReply *r;

        if (rc != RLK_OK) {
            errors += rc != RLK_ERR_BUSY;
            if (rc != RLK_ERR_BUSY)
                snprintf(last_err, sizeof last_err, "%s", rlk_errstr(c));
            continue;
        }
        grants++;
        t0 = rlk_fx_now_ns();
        tk_spin_ns(50000 + (long long)(tk_rand(&seed) % 100000));
        t1 = rlk_fx_now_ns();
        fprintf(log, "%lld %lld %d\n", t0, t1, (int)getpid());
        rc = rlk_lock_unlock(l);
        if (rc != RLK_OK) {
            errors++;
            unknown++;
            continue;
        }
        /* Our field must be gone: a hold the client does not count pins it. */
        if (!side) {
            struct timeval tv = {5, 0};

            side = argv[5][0] ? redisConnectUnixWithTimeout(argv[5], tv)  /* TLS: the control */
                              : redisConnectWithTimeout(host, port, tv);     /* socket */
            if (side && !side->err)
                redisSetTimeout(side, tv);
        }
        r = side && !side->err ? redisCommand(side, "HEXISTS %s %s", LOCK_NAME, owner) : NULL;
        if (r && r->type == REDIS_REPLY_INTEGER && r->integer == 1) {
            rlk_runtime_stats st;
            redisReply *h = redisCommand(side, "HGET %s %s", LOCK_NAME, owner);

            rlk_runtime_stats_get(c, &st);
            fprintf(stderr, "  pid %d: pinned: server count %s; lost %llu adopted %llu not run "
                    "%llu; last error: %s\n", (int)getpid(), h && h->str ? h->str : "?",
                    st.lost_replies, st.lost_adopted, st.lost_not_run, last_err);
            if (h)
                freeReplyObject(h);
            {
                redisReply *w = redisCommand(side, "HGETALL {%s}:rlk_who", LOCK_NAME);
                redisReply *t = redisCommand(side, "PTTL %s", LOCK_NAME);

                fprintf(stderr, "  pid %d: owner %s, PTTL %lld, who:", (int)getpid(), owner,
                        t ? t->integer : -9);
                for (size_t k = 0; w && w->type == REDIS_REPLY_ARRAY && k < w->elements; k++)
                    fprintf(stderr, " [%s]", w->element[k]->str ? w->element[k]->str : "?");
                fprintf(stderr, "\n");
                if (w)
                    freeReplyObject(w);
                if (t)
                    freeReplyObject(t);
            }
            pinned++;
            rlk_lock_force_unlock(l, NULL);   /* let the others go on */
        }
        if (r)
            freeReplyObject(r);
        else if (side) {
            redisFree(side);
            side = NULL;
        }
    }
    fclose(log);
    {
        rlk_runtime_stats st;

        if (rlk_runtime_stats_get(c, &st) != RLK_OK)
            memset(&st, 0, sizeof st);
        tk_say("done grants=%lld errors=%lld pinned=%lld unknown=%lld unsettled=%llu "
               "given_back=%llu", grants, errors, pinned, unknown, st.lost_unsettled,
               st.lost_given_back);
    }
    if (side)
        redisFree(side);
    rlk_lock_free(l);
    rlk_free(c);
    return 0;
}

/* ------------------------------------------------------------ parent */

typedef struct span {
    long long t0, t1;
    int pid;
} span;

static int span_cmp(const void *a, const void *b)
{
    const span *x = a, *y = b;

    return x->t0 < y->t0 ? -1 : x->t0 > y->t0;
}

/* One fault: DEBUG SLEEP ms; with kill, CLIENT KILL TYPE normal SKIPME yes
 * written during the sleep, from a connection made before it. */
static int inject(long ms, int kill)
{
    redisContext *k = kill ? rlk_fx_connect(&srv) : NULL, *x;
    void *r;

    if (kill && !k)
        return -1;
    if (!(x = rlk_fx_sleep_begin(&srv, ms))) {
        if (k)
            redisFree(k);
        return -1;
    }
    if (k) {
        int done = 0;

        rlk_fx_sleep_ms(ms / 2);   /* pacing: let requests pile up behind the sleep */
        redisAppendCommand(k, "CLIENT KILL TYPE normal SKIPME yes");
        while (!done)
            if (redisBufferWrite(k, &done) != REDIS_OK)
                break;
        if (redisGetReply(k, &r) == REDIS_OK)
            freeReplyObject(r);
        redisFree(k);
    }
    redisFree(x);   /* killed or not: the sleep is over once k was answered */
    return 0;
}

static void test_stress(void)
{
    char logs[NPROC][300], dur[24], line[256];
    tk_child ch[NPROC];
    long long run_ms = getenv("RLK_LOST_STRESS_MS") ? atoll(getenv("RLK_LOST_STRESS_MS")) : 6000;
    long long end, grants = 0, pinned = 0, errors = 0, unknown = 0, faults = 0;
    unsigned long long unsettled = 0, given_back = 0;
    span *spans = NULL;
    size_t nspans = 0, cap = 0;
    int overlaps = 0, free_at_end = 0;

    snprintf(dur, sizeof dur, "%lld", run_ms);
    for (int i = 0; i < NPROC; i++) {
        const char *args[] = {"child", url, dur, logs[i], srv.ctl_path, NULL};

        snprintf(logs[i], sizeof logs[i], "%s/spans-%d.txt", srv.dir, i);
        REQUIRE(tk_child_spawn(&ch[i], args) == 0);
    }
    for (int i = 0; i < NPROC; i++)
        REQUIRE(tk_child_read_line(&ch[i], line, sizeof line, 20000) == 0 &&
                strcmp(line, "ready") == 0);
    /* Faults until the children stop: a sleep every ~250 ms, every other one
     * with a kill. */
    end = rlk_fx_now_ms() + run_ms - 500;
    for (int n = 0; rlk_fx_now_ms() < end; n++) {
        if (inject(300, n % 2) == 0)
            faults++;
        rlk_fx_sleep_ms(150);   /* pacing between faults */
    }
    for (int i = 0; i < NPROC; i++) {
        long long g = 0, e = 0, p = 0, u = 0;
        unsigned long long us = 0, gb = 0;

        CHECKF(tk_child_read_line(&ch[i], line, sizeof line, run_ms + 30000) == 0 &&
                   sscanf(line, "done grants=%lld errors=%lld pinned=%lld unknown=%lld "
                          "unsettled=%llu given_back=%llu", &g, &e, &p, &u, &us, &gb) == 6,
               "child %d did not finish", i);
        unsettled += us;
        given_back += gb;
        grants += g;
        errors += e;
        pinned += p;
        unknown += u;
        tk_child_wait(&ch[i], 10000);
    }
    for (int i = 0; i < NPROC; i++) {
        FILE *f = fopen(logs[i], "r");
        span s;

        if (!f)
            continue;
        while (fscanf(f, "%lld %lld %d", &s.t0, &s.t1, &s.pid) == 3) {
            if (nspans == cap) {
                cap = cap ? cap * 2 : 1024;
                spans = realloc(spans, cap * sizeof *spans);
            }
            spans[nspans++] = s;
        }
        fclose(f);
    }
    qsort(spans, nspans, sizeof *spans, span_cmp);
    for (size_t i = 1; i < nspans; i++)
        if (spans[i].t0 < spans[i - 1].t1)
            overlaps++;
    /* At the end the lock is free within a lease. */
    for (long long until = rlk_fx_now_ms() + LEASE_MS + 1000; rlk_fx_now_ms() < until;) {
        if (tk_key_exists(&srv, LOCK_NAME) == 0) {
            free_at_end = 1;
            break;
        }
        rlk_fx_sleep_ms(20);
    }
    printf("  %d processes, %lld ms, %lld faults: %lld grants, %zu spans, %d overlaps, "
           "%lld pinned holds, %lld errors (%lld unlocks failed); %llu calls unsettled, "
           "%llu holds given back%s\n",
           NPROC, run_ms, faults, grants, nspans, overlaps, pinned, errors, unknown, unsettled,
           given_back,
           tk_stall_max_gap_ms(&stall) > TK_STALL_MS ? " (the machine stalled)" : "");
    CHECKF(faults >= 5, "only %lld faults injected", faults);
    CHECKF(grants >= 20, "only %lld grants", grants);
    CHECKF(overlaps == 0, "%d overlapping holds", overlaps);
    CHECKF(pinned == 0, "%lld unlocks reported RLK_OK and left the holder's field", pinned);
    CHECKF(free_at_end, "the lock is still held %d ms after the last process left", LEASE_MS + 1000);
    free(spans);
}

int main(int argc, char **argv)
{
    static const char *const extra[] = {"--enable-debug-command", "yes", NULL};
    rlk_fx_config cfg;

    if (argc > 1)
        return child_main(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "rt_lost_stress: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_stress);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    return check_summary("rt_lost_stress");
}
