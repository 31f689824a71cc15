/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis.c - a seeded nemesis over several processes, and the checker of their logs
 * (docs/nemesis.md).
 *
 *   nemesis [run] [--seed N] [--acq N] [--procs N] [--kinds lock,fenced,elect,sem]
 *                 [--plant a|b] [--expect-violation RULE] [--keep]
 *   nemesis check [--expect-violation RULE] LOG...
 *   nemesis selftest clean|RULE
 *
 * run: starts a redis-server (the fixture; $RLK_TEST_SERVER), PROCS processes (this program
 * re-executed, "child ..."), each with one thread and one client per kind, every thread
 * acquiring and releasing its kind's lock in a loop until the process has made its share of
 * --acq acquisitions: the reentrant lock (kind X), the fenced lock (X, a token), leader election
 * (L, a term), the semaphore of 2 permits (S). Leases: a fixed lease of 250..1000 ms or the
 * watchdog's (1000 ms, renewed every third). Inside a hold the fenced lock's holder and the
 * leader write their token (term) to a Redis list through fence/rpush (rlk_fence_write), and
 * log whether the resource accepted it. Faults, all drawn from the seed:
 *   lost reply        (in the thread, on 3% of the exclusive kinds' acquires and 2% of their
 *                     releases) the server put in a DEBUG SLEEP, the call written (the
 *                     library's after-write hook), then CLIENT KILL ID of the client's pool
 *                     connections queued behind it from a connection opened before: the call
 *                     runs and its reply is dropped with its connection, or it is dropped
 *                     unrun (rt_lost_reply.c's kill case); the library settles it
 *   holder SIGSTOP    (the parent) a child process stopped 100..1300 ms, then SIGCONT: past
 *                     short leases, its watchdog stopped with it
 *   server SIGSTOP    (the parent) the server stopped 50..400 ms, then SIGCONT
 * The parent then reads each resource's list and checks every log (nem_check.h: overlap,
 * permits, dup-token, dup-term, token-back, fenced-write, resource-order). The seed is printed
 * first and last; --seed N replays the same choices of faults, leases and timings (the
 * interleaving is the machine's).
 *
 * Planted faults (the controls; each run with --expect-violation, which passes only when the
 * checker reports that rule):
 *   --plant a   the fenced lock's holder, after an acquire whose reply was lost and that the
 *               library settled as run, takes its token from a separate fenced/token read
 *               once the lease has run out and another process took the lock, instead of
 *               the token the acquire returned (the library's old two-round-trip settle):
 *               two holds with one token (dup-token)
 *   --plant b   every leader candidate campaigns with one owner id (rlk_elect_set_owner);
 *               a candidate the library refuses claims leadership from a read of the
 *               election's record when it names that owner: two leaders with one term
 *               (dup-term), whichever way the library answers the second campaign
 */
#include "client/client.h"
#include "client/conn.h"
#include "fixture.h"
#include "nem_check.h"
#include "runtime/rt.h"
#include "tk_util.h"

#include <rlk.h>
#include <rlk_async_poll.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXPROCS 8
#define WAIT_MS 3000            /* an acquire's wait */
#define WD_LEASE_MS 1000        /* the watchdog's lease */
#define SEM_PERMITS 2
#define LOST_SLEEP_MS 40        /* the DEBUG SLEEP behind a lost reply */
#define CHILD_HARD_MS 150000    /* a child ends by itself after this */
#define RUN_HARD_MS 160000      /* the parent stops the nemesis after this */
#define SHARED_OWNER "nemesis-shared-owner"

/* afenced: the fenced lock through the non-blocking API (rlk_async.h, driven by
 * rlk_async_poll.h in its thread), on the same lock and resource as the blocking fenced
 * holders. */
enum { K_LOCK, K_FENCED, K_ELECT, K_SEM, K_FAIR, K_RW, K_AFENCED, NKINDS };
static const char *const KIND_NAME[NKINDS] = {"lock", "fenced", "elect", "sem", "fair", "rw",
                                              "afenced"};
static const char *const LOCK_NAME[NKINDS] = {"{nm-lock}", "{nm-fenced}", "{nm-elect}",
                                              "{nm-sem}", "{nm-fair}", "{nm-rw}", "{nm-fenced}"};
/* The resource each token kind writes to: fence key, data key, the name in the logs. */
static const char *const RES_FENCE[NKINDS] = {NULL, "{nm-res-fenced}:fence",
                                              "{nm-res-elect}:fence", NULL, NULL, NULL,
                                              "{nm-res-fenced}:fence"};
static const char *const RES_DATA[NKINDS] = {NULL, "{nm-res-fenced}:log", "{nm-res-elect}:log",
                                             NULL, NULL, NULL, "{nm-res-fenced}:log"};
static const char *const RES_NAME[NKINDS] = {NULL, "nm-res-fenced", "nm-res-elect", NULL, NULL,
                                             NULL, "nm-res-fenced"};
#define DEFAULT_KINDS "lock,fenced,elect,sem,fair,rw,afenced"

/* name is one of the comma-separated list's items. */
static int has_kind(const char *list, const char *name)
{
    size_t n = strlen(name);

    for (const char *p = list; *p; p += strcspn(p, ","), p += *p == ',') {
        if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
            return 1;
    }
    return 0;
}

static long long now_ns(void)
{
    return tk_mono_ns();
}

static unsigned mix(unsigned long long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (unsigned)x | 1u;
}

/* ================================================================ child */

typedef struct await_ {
    int done, err;
    long long value;
} await_;

typedef struct thr {
    int kind, proc, port;
    char plant;
    unsigned rng;
    long quota;
    long long hard_ns;
    const char *url;
    int fd;                     /* the process's log */
    rlk_client *c;
    volatile long long lost_ns; /* the lost-lock callback's time for the current hold; 0: none */
    redisContext *kc;           /* the lost-reply fault's killer connection */
    rlk_async *ac;              /* afenced: the non-blocking client (t->c is NULL) */
    rlk_async_poll ap;          /* ... its loop */
    await_ aw;                  /* ... the request being waited for */
    int stuck;                  /* ... a request did not end in time: the thread stopped */
    long acq, busy, errs, odd, lost_faults, planted, slow;
    char odd_text[200];
} thr;

static void logline(int fd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void logline(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && (size_t)n < sizeof line)
        (void)!write(fd, line, (size_t)n);
}

static void on_lost(int kind, const char *name, const char *owner, int reason, void *ud)
{
    thr *t = ud;

    (void)kind, (void)name, (void)owner, (void)reason;
    if (!t->lost_ns)
        t->lost_ns = now_ns();
}

/* The after-write hook of a lost-reply fault: CLIENT KILL ID of every pool connection of the
 * thread's client, queued on the killer connection while the server sleeps. */
static void on_written(void *arg)
{
    thr *t = arg;
    int done = 0;

    for (int i = 0; i < t->c->pool_size; i++)
        if (t->c->slots[i].server_id > 0)
            redisAppendCommand(t->kc, "CLIENT KILL ID %lld", t->c->slots[i].server_id);
    while (!done)
        if (redisBufferWrite(t->kc, &done) != REDIS_OK)
            break;
}

/* Arms a lost reply for the thread's next script call; the sleeping server's connection, or
 * NULL (the fault is skipped). */
static redisContext *lost_begin(thr *t)
{
    rlk_fx_server s;
    redisContext *x;

    memset(&s, 0, sizeof s);
    s.port = t->port;
    if (!(t->kc = rlk_fx_connect(&s)))
        return NULL;
    if (!(x = rlk_fx_sleep_begin(&s, LOST_SLEEP_MS))) {
        redisFree(t->kc);
        t->kc = NULL;
        return NULL;
    }
    t->lost_faults++;
    rlk_conn_after_write(on_written, t);
    return x;
}

static void lost_end(thr *t, redisContext *x)
{
    if (!x)
        return;
    rlk_conn_after_write(NULL, NULL);
    rlk_fx_sleep_end(x);
    redisFree(t->kc);
    t->kc = NULL;
}

static void odd(thr *t, const char *what, int rc)
{
    t->odd++;
    if (!t->odd_text[0])
        snprintf(t->odd_text, sizeof t->odd_text, "%s %s: %s %s", KIND_NAME[t->kind], what,
                 rlk_strerror(rc), t->c ? rlk_errstr(t->c) : t->stuck ? "(no answer in 20 s)"
                                                                       : "");
}

/* An error a fault explains: a lost reply (settled or not), a lease that ran out. */
static int expected_error(int rc)
{
    return rc == RLK_ERR_BUSY || rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT ||
           rc == RLK_ERR_UNSETTLED || rc == RLK_ERR_NOT_OWNER || rc == RLK_ERR_LOST;
}

/* ---------------------------------------------------------------- the async driver */

static void a_done(rlk_async *ac, const rlk_async_result *r, void *pd)
{
    await_ *w = pd;

    (void)ac;
    w->err = r->err;
    w->value = r->value;
    w->done = 1;
}

static void a_fence_done(rlk_async *ac, const rlk_async_result *r, const redisReply *reply,
                         void *pd)
{
    (void)reply;
    a_done(ac, r, pd);
}

/* Turns the thread's loop until the request ends (bounded: 20 s, then the thread stops, as
 * the request still points at t->aw). */
static int a_wait(thr *t)
{
    long long until = now_ns() + 20000000000LL;

    while (!t->aw.done && now_ns() < until)
        rlk_async_poll_turn(&t->ap, 50000000LL);
    if (!t->aw.done) {
        t->stuck = 1;
        return RLK_ERR_TIMEOUT;
    }
    return t->aw.err;
}

static void a_begin(thr *t)
{
    memset(&t->aw, 0, sizeof t->aw);
}

/* Work inside a hold for ms (a holder that outlives its lease): the async thread turns its loop
 * meanwhile, so its watchdog (were it renewing) would go on. */
static void work_ms(thr *t, long long ms)
{
    long long until = now_ns() + ms * 1000000LL;

    while (now_ns() < until) {
        if (t->ac)
            rlk_async_poll_turn(&t->ap, until - now_ns());
        else
            rlk_fx_sleep_ms((long)((until - now_ns()) / 1000000LL) + 1);
    }
}

/* ---------------------------------------------------------------- one kind's loop */

typedef struct handles {
    rlk_lock *l;
    rlk_fenced *f;
    rlk_elect *e;
    rlk_semaphore *s;
    rlk_fairlock *fl;
    rlk_rwlock *rw;
} handles;

static int do_acquire(thr *t, handles *h, int side, long long lease, long long *value)
{
    switch (t->kind) {
    case K_LOCK: return rlk_lock_try_lock(h->l, WAIT_MS, lease);
    case K_FENCED: return rlk_fenced_try_lock(h->f, WAIT_MS, lease, value);
    case K_ELECT: return rlk_elect_campaign(h->e, "v", WAIT_MS, lease, value);
    case K_SEM: *value = 1; return rlk_semaphore_try_acquire(h->s, 1, WAIT_MS);
    case K_FAIR: return rlk_fairlock_try_lock(h->fl, WAIT_MS, lease);
    case K_RW: return rlk_rwlock_try_lock(h->rw, side, WAIT_MS, lease);
    default: {
        int rc;

        a_begin(t);
        if (!rlk_async_lock(t->ac, RLK_KIND_FENCED, LOCK_NAME[t->kind], 1, WAIT_MS,
                            lease > 0 ? lease : -1, a_done, &t->aw))
            return RLK_ERR_NOMEM;
        rc = a_wait(t);
        *value = t->aw.value;
        return rc;
    }
    }
}

static int do_release(thr *t, handles *h, int side)
{
    switch (t->kind) {
    case K_LOCK: return rlk_lock_unlock(h->l);
    case K_FENCED: return rlk_fenced_unlock(h->f);
    case K_ELECT: return rlk_elect_resign(h->e);
    case K_SEM: return rlk_semaphore_release(h->s, 1, NULL);
    case K_FAIR: return rlk_fairlock_unlock(h->fl);
    case K_RW: return rlk_rwlock_unlock(h->rw, side);
    default:
        a_begin(t);
        if (!rlk_async_unlock(t->ac, RLK_KIND_FENCED, LOCK_NAME[t->kind], 1, a_done, &t->aw))
            return RLK_ERR_NOMEM;
        return a_wait(t);
    }
}

static int do_write(thr *t, const char *entry, long long token)
{
    const char *args[1] = {entry};
    uint64_t highest = 0;

    if (!t->ac)
        return rlk_fence_write(t->c, "rpush", RES_FENCE[t->kind], RES_DATA[t->kind],
                               (uint64_t)token, 1, args, NULL, &highest, NULL);
    a_begin(t);
    if (!rlk_async_fence_write(t->ac, "rpush", RES_FENCE[t->kind], RES_DATA[t->kind],
                               (uint64_t)token, 1, args, NULL, a_fence_done, &t->aw))
        return RLK_ERR_NOMEM;
    return a_wait(t);
}

static void *thr_main(void *arg)
{
    thr *t = ((tk_thread_arg *)arg)->ctx;
    handles h;
    int seq = 0, tid = t->kind;

    memset(&h, 0, sizeof h);
    switch (t->kind) {
    case K_LOCK: h.l = rlk_lock_new(t->c, LOCK_NAME[K_LOCK]); break;
    case K_FENCED: h.f = rlk_fenced_new(t->c, LOCK_NAME[K_FENCED]); break;
    case K_ELECT:
        h.e = rlk_elect_new(t->c, LOCK_NAME[K_ELECT]);
        if (h.e && t->plant == 'b')
            rlk_elect_set_owner(h.e, SHARED_OWNER);
        break;
    case K_SEM: h.s = rlk_semaphore_new(t->c, LOCK_NAME[K_SEM]); break;
    case K_FAIR: h.fl = rlk_fairlock_new(t->c, LOCK_NAME[K_FAIR]); break;
    case K_RW: h.rw = rlk_rwlock_new(t->c, LOCK_NAME[K_RW]); break;
    default: break;
    }
    if (!t->ac && !h.l && !h.f && !h.e && !h.s && !h.fl && !h.rw) {
        odd(t, "new", rlk_err(t->c));
        return NULL;
    }
    while (t->acq < t->quota && now_ns() < t->hard_ns && !t->stuck) {
        unsigned r = tk_rand(&t->rng);
        int fixed = t->kind != K_SEM && (t->plant == 'a' || r % 10 < 6);
        long long lease = fixed ? 250 + (long long)(tk_rand(&t->rng) % 751) : 0;
        long long logged_lease = t->kind == K_SEM ? 0 : fixed ? lease : WD_LEASE_MS;
        unsigned pl = t->kind == K_FENCED && t->plant == 'a' ? 30 : 3;
        /* The blocking kinds that settle a lost reply (the semaphore does not: a lost acquire
         * may leave its permit taken, and nobody could tell). */
        int lossy = t->kind != K_SEM && !t->ac;
        int lose_acq = lossy && tk_rand(&t->rng) % 100 < pl;
        int lose_rel = lossy && tk_rand(&t->rng) % 100 < 2;
        long long spin = (long long)(tk_rand(&t->rng) % 500) * 1000;
        /* 1 in 200 fixed-lease holds outlives its lease by 50..250 ms. */
        long long slow = fixed && t->plant == '-' && tk_rand(&t->rng) % 200 == 0
                             ? lease + 50 + (long long)(tk_rand(&t->rng) % 200) : 0;
        int side = tk_rand(&t->rng) % 3 == 0 ? RLK_RW_WRITE : RLK_RW_READ;
        long long value = 0, sent, start, end;
        rlk_runtime_stats st0, st1;
        redisContext *x = NULL;
        int rc, claimed = 0;
        int kind_letter = t->kind == K_ELECT ? 'L' : t->kind == K_SEM ? 'S'
                          : t->kind == K_RW ? (side == RLK_RW_WRITE ? 'W' : 'R') : 'X';
        char how;

        t->lost_ns = 0;
        if (t->c)
            rlk_runtime_stats_get(t->c, &st0);
        if (lose_acq)
            x = lost_begin(t);
        sent = now_ns();
        rc = do_acquire(t, &h, side, lease, &value);
        start = now_ns();
        lost_end(t, x);
        if (t->c)
            rlk_runtime_stats_get(t->c, &st1);
        if (rc == RLK_OK && t->plant == 'a' && t->kind == K_FENCED &&
            st1.lost_adopted > st0.lost_adopted) {
            /* Planted (a): the token read in a second round trip, after the lease ran out and
             * another process took the lock (a bounded poll until the last token moves). */
            long long mine = value, last = value, until = now_ns() + 3000000000LL;

            while (last == mine && now_ns() < until) {
                rlk_fx_sleep_ms(5);
                if (rlk_fenced_last_token(h.f, &last) != RLK_OK)
                    last = mine;
            }
            value = last;
            start = now_ns();
            t->planted++;
        }
        if (rc != RLK_OK && t->plant == 'b' && t->kind == K_ELECT) {
            /* Planted (b), once the library refuses the second campaign of one owner id:
             * leadership claimed from a read of the election's record. */
            rlk_elect_info info;

            memset(&info, 0, sizeof info);
            if (rlk_elect_leader(h.e, &info) == RLK_OK && info.leader && info.holder &&
                strcmp(info.holder, SHARED_OWNER) == 0) {
                sent = now_ns();
                value = info.term;
                logged_lease = info.ttl_ms > 0 ? info.ttl_ms : WD_LEASE_MS;
                start = now_ns();
                rc = RLK_OK;
                claimed = 1;
                t->planted++;
            }
            rlk_elect_info_clear(&info);
        }
        if (rc != RLK_OK) {
            if (rc == RLK_ERR_BUSY)
                t->busy++;
            else if (expected_error(rc) && !t->stuck)
                t->errs++;
            else
                odd(t, "acquire", rc);
            continue;
        }
        seq++;
        t->acq++;
        logline(t->fd, "A %d %d %d %s %c %lld %lld %lld %lld\n", (int)getpid(), tid, seq,
                LOCK_NAME[t->kind], kind_letter, sent, start, logged_lease, value);
        tk_spin_ns(spin);
        if (slow) {
            t->slow++;
            work_ms(t, slow);
        }
        if (RES_FENCE[t->kind]) {
            char entry[96];
            long long w0, w1;
            int wrc;
            char out;

            snprintf(entry, sizeof entry, "%lld %d %d %d", value, (int)getpid(), tid, seq);
            w0 = now_ns();
            wrc = do_write(t, entry, value);
            w1 = now_ns();
            out = wrc == RLK_OK ? 'A' : wrc == RLK_ERR_FENCED ? 'F' : 'U';
            if (out == 'U' && (!expected_error(wrc) || t->stuck))
                odd(t, "fenced write", wrc);
            logline(t->fd, "W %d %d %d %s %lld %lld %lld %c\n", (int)getpid(), tid, seq,
                    RES_NAME[t->kind], value, w0, w1, out);
        }
        x = lose_rel && !claimed ? lost_begin(t) : NULL;
        end = now_ns();
        rc = claimed ? RLK_OK : do_release(t, &h, side);
        lost_end(t, x);
        how = rc == RLK_OK ? 'r' : rc == RLK_ERR_NOT_OWNER ? 'n' : 'u';
        if (t->lost_ns && t->lost_ns < end) {
            end = t->lost_ns;
            how = 'l';
        }
        if (rc != RLK_OK && (!expected_error(rc) || t->stuck))
            odd(t, "release", rc);
        logline(t->fd, "E %d %d %d %lld %c\n", (int)getpid(), tid, seq, end, how);
    }
    rlk_lock_free(h.l);
    rlk_fenced_free(h.f);
    rlk_elect_free(h.e);
    rlk_semaphore_free(h.s);
    rlk_fairlock_free(h.fl);
    rlk_rwlock_free(h.rw);
    return NULL;
}

typedef struct proc_ctx {
    thr t[NKINDS];
    int nt;
} proc_ctx;

static void *proc_thread(void *arg)
{
    tk_thread_arg *a = arg;
    proc_ctx *p = a->ctx;
    tk_thread_arg sub = {&p->t[a->idx], a->idx};

    return thr_main(&sub);
}

/* child URL PORT PROC SEED QUOTA KINDS PLANT LOG */
static int child_main(int argc, char **argv)
{
    proc_ctx *p;
    int fd, proc;
    long quota;
    unsigned long long seed;
    long acq = 0, busy = 0, errs = 0, odds = 0, faults = 0, planted = 0, slow = 0;
    unsigned long long lost = 0, adopted = 0, not_run = 0, unsettled = 0;
    const char *odd_text = "";

    if (argc != 10)
        return 2;
    proc = atoi(argv[4]);
    seed = strtoull(argv[5], NULL, 10);
    quota = atol(argv[6]);
    if (!(p = calloc(1, sizeof *p)) || (fd = tk_holdlog_open(argv[9])) < 0)
        return 3;
    for (int k = 0; k < NKINDS; k++) {
        thr *t;
        rlk_options o;

        if (!has_kind(argv[7], KIND_NAME[k]))
            continue;
        t = &p->t[p->nt++];
        t->kind = k;
        t->proc = proc;
        t->port = atoi(argv[3]);
        t->plant = argv[8][0];
        t->rng = mix(seed * 1000003ULL + (unsigned long long)proc * 64 + (unsigned)k);
        t->quota = quota;
        t->hard_ns = 0;
        t->url = argv[2];
        t->fd = fd;
        rlk_options_init(&o);
        o.url = argv[2];
        o.pool_size = 2;
        o.watchdog_lease_ms = WD_LEASE_MS;
        o.command_timeout_ms = 3000;
        if (k == K_AFENCED) {
            t->ac = rlk_async_new(&o);
            if (!t->ac || rlk_async_poll_attach(t->ac, &t->ap) != RLK_OK) {
                tk_say("error async: %s", t->ac ? rlk_async_errstr(t->ac) : "no memory");
                return 4;
            }
            rlk_async_set_lost_callback(t->ac, on_lost, t);
            continue;
        }
        t->c = rlk_connect(&o);
        if (!t->c || rlk_err(t->c) != RLK_OK) {
            tk_say("error connect: %s", t->c ? rlk_errstr(t->c) : "no memory");
            return 4;
        }
        rlk_set_lost_kind_callback(t->c, on_lost, t);
    }
    if (p->nt == 0)
        return 5;
    logline(fd, "# pid %d proc %d seed %llu quota %ld kinds %s plant %s\n", (int)getpid(), proc,
            seed, quota, argv[7], argv[8]);
    {
        /* tk_child_go_threads says "ready" and waits for "go"; the deadline starts then. */
        long long hard = now_ns() + CHILD_HARD_MS * 1000000LL;

        for (int i = 0; i < p->nt; i++)
            p->t[i].hard_ns = hard;
    }
    if (tk_child_go_threads(p->nt, proc_thread, p) != 0)
        return 6;
    for (int i = 0; i < p->nt; i++) {
        thr *t = &p->t[i];
        rlk_runtime_stats st;

        acq += t->acq;
        busy += t->busy;
        errs += t->errs;
        odds += t->odd;
        faults += t->lost_faults;
        planted += t->planted;
        if (t->odd_text[0] && !odd_text[0])
            odd_text = t->odd_text;
        slow += t->slow;
        if (t->c && rlk_runtime_stats_get(t->c, &st) == RLK_OK) {
            lost += st.lost_replies;
            adopted += st.lost_adopted;
            not_run += st.lost_not_run;
            unsettled += st.lost_unsettled;
        }
    }
    close(fd);
    tk_say("done acq=%ld busy=%ld errors=%ld odd=%ld faults=%ld lost=%llu adopted=%llu "
           "not_run=%llu unsettled=%llu planted=%ld slow=%ld first_odd=%s", acq, busy, errs, odds,
           faults, lost, adopted, not_run, unsettled, planted, slow, odd_text[0] ? odd_text : "-");
    for (int i = 0; i < p->nt; i++) {
        if (p->t[i].ac) {
            rlk_async_free(p->t[i].ac);
            rlk_async_poll_free(&p->t[i].ap);
        } else {
            rlk_free(p->t[i].c);
        }
    }
    free(p);
    return 0;
}

/* ================================================================ the checker's front ends */

static int judge(const nem_report *rep, int expect)
{
    char buf[600];

    printf("nemesis check: %s\n", nem_report_str(rep, buf, sizeof buf));
    if (expect >= 0) {
        printf("nemesis check: expected a %s violation: %s\n", nem_rule_names[expect],
               rep->count[expect] > 0 ? "found (the control passes)" : "NOT FOUND");
        return rep->count[expect] > 0 ? 0 : 1;
    }
    return nem_report_total(rep) == 0 ? 0 : 1;
}

static int check_main(int argc, char **argv)
{
    int expect = -1, i = 2;
    nem_report rep;

    if (i + 1 < argc && strcmp(argv[i], "--expect-violation") == 0) {
        if ((expect = nem_rule_index(argv[i + 1])) < 0) {
            fprintf(stderr, "nemesis check: unknown rule %s\n", argv[i + 1]);
            return 2;
        }
        i += 2;
    }
    if (i >= argc) {
        fprintf(stderr, "usage: nemesis check [--expect-violation RULE] LOG...\n");
        return 2;
    }
    nem_check_files((const char *const *)&argv[i], argc - i, 1, &rep);
    return judge(&rep, expect);
}

/* ---------------------------------------------------------------- planted logs */

/* A clean log: two processes taking turns on each kind, a lease that ended a hold before its
 * release (the next holder starts after the lease, before that release: no overlap), an open
 * hold (its holder killed) ended by its lease, a stale write refused, the resources in order.
 * Times in ms (the lines say ns). */
static const char CLEAN[] =
    "# clean\n"
    "P {s} 2\n"
    /* reentrant: turns; the second hold's release comes late, its lease (100 ms) ended it */
    "A 1 0 1 {x} X 0000000000 0001000000 100 0\n"
    "E 1 0 1 0005000000 r\n"
    "A 2 0 1 {x} X 0002000000 0006000000 100 0\n"
    "E 2 0 1 0500000000 r\n"
    "A 1 0 2 {x} X 0007000000 0120000000 100 0\n"
    "E 1 0 2 0125000000 r\n"
    /* an open hold (no E): ends at sent + lease, 300 ms */
    "A 2 0 2 {x} X 0200000000 0201000000 100 0\n"
    "A 1 0 3 {x} X 0250000000 0310000000 100 0\n"
    "E 1 0 3 0311000000 r\n"
    /* fenced: tokens rise; the first holder's late write is refused; equal tokens of one hold */
    "A 1 1 1 {f} X 0000000000 0001000000 100 10\n"
    "W 1 1 1 res 10 0002000000 0003000000 A\n"
    "W 1 1 1 res 10 0004000000 0005000000 A\n"
    "A 2 1 1 {f} X 0002000000 0150000000 100 11\n"
    "W 2 1 1 res 11 0151000000 0152000000 A\n"
    "E 2 1 1 0160000000 r\n"
    "W 1 1 1 res 10 0170000000 0171000000 F\n"
    "E 1 1 1 0172000000 n\n"
    /* a write whose outcome is unknown, before a newer one was accepted: no rule */
    "A 1 1 2 {f} X 0161000000 0162000000 100 12\n"
    "W 1 1 2 res 12 0163000000 0164000000 U\n"
    "E 1 1 2 0165000000 r\n"
    "R res 0 10\nR res 1 10\nR res 2 11\nR res 3 12\n"
    /* election: terms rise, one leader at a time */
    "A 1 2 1 {e} L 0000000000 0001000000 1000 500\n"
    "E 1 2 1 0010000000 r\n"
    "A 2 2 1 {e} L 0002000000 0011000000 1000 501\n"
    "E 2 2 1 0020000000 l\n"
    /* semaphore of 2: two at once */
    "A 1 3 1 {s} S 0000000000 0001000000 0 1\n"
    "A 2 3 1 {s} S 0000000000 0002000000 0 1\n"
    "E 1 3 1 0010000000 r\n"
    "A 3 3 1 {s} S 0000000000 0011000000 0 1\n"
    "E 2 3 1 0020000000 r\n"
    "E 3 3 1 0030000000 r\n";

/* Each appended to CLEAN: exactly one violation of its rule. */
static const struct planted {
    const char *rule, *lines;
} PLANTED[] = {
    {"overlap",
     "A 7 0 1 {x} X 0400000000 0401000000 100 0\n"
     "E 7 0 1 0420000000 r\n"
     "A 8 0 1 {x} X 0405000000 0410000000 100 0\n"
     "E 8 0 1 0430000000 r\n"},
    {"permits",
     "A 7 3 1 {s} S 0000000000 0015000000 0 1\n"
     "E 7 3 1 0016000000 r\n"},
    {"dup-token",
     "A 7 1 1 {f} X 0400000000 0401000000 100 20\n"
     "E 7 1 1 0402000000 r\n"
     "A 8 1 1 {f} X 0400500000 0403000000 100 20\n"
     "E 8 1 1 0404000000 r\n"},
    {"dup-term",
     "A 7 2 1 {e} L 0400000000 0401000000 1000 600\n"
     "E 7 2 1 0402000000 r\n"
     "A 8 2 1 {e} L 0400500000 0403000000 1000 600\n"
     "E 8 2 1 0404000000 r\n"},
    {"token-back",
     "A 7 1 1 {f} X 0400000000 0401000000 100 30\n"
     "E 7 1 1 0402000000 r\n"
     "A 8 1 1 {f} X 0403000000 0404000000 100 29\n"
     "E 8 1 1 0405000000 r\n"},
    {"fenced-write",
     "A 7 1 1 {f} X 0400000000 0401000000 100 40\n"
     "W 7 1 1 res2 40 0402000000 0403000000 A\n"
     "E 7 1 1 0404000000 r\n"
     "A 8 1 1 {f} X 0405000000 0406000000 100 41\n"
     "W 8 1 1 res2 41 0407000000 0408000000 A\n"
     "E 8 1 1 0409000000 r\n"
     "W 7 1 1 res2 40 0410000000 0411000000 A\n"},
    {"resource-order", "R res3 0 50\nR res3 1 52\nR res3 2 51\n"},
    {"bad-line", "E 9 9 9 0000000001 r\n"},
};

static int selftest_main(int argc, char **argv)
{
    nem_report rep;
    char *text;
    int expect = -1, rc;
    size_t n;

    if (argc != 3) {
        fprintf(stderr, "usage: nemesis selftest clean|RULE\n");
        return 2;
    }
    if (strcmp(argv[2], "clean") == 0) {
        nem_check_text(CLEAN, 1, &rep);
        rc = judge(&rep, -1);
        /* The clean log must be seen whole: the holds, writes and entries it has. */
        if (rep.holds != 13 || rep.writes != 5 || rep.resource_entries != 4 || rep.locks != 4) {
            printf("nemesis selftest: the clean log read as %ld holds, %ld writes, %ld entries, "
                   "%ld locks (expected 13, 5, 4, 4)\n", rep.holds, rep.writes,
                   rep.resource_entries, rep.locks);
            rc = 1;
        }
        return rc;
    }
    for (size_t i = 0; i < sizeof PLANTED / sizeof PLANTED[0]; i++)
        if (strcmp(argv[2], PLANTED[i].rule) == 0)
            expect = (int)i;
    if (expect < 0) {
        fprintf(stderr, "nemesis selftest: no planted log for %s\n", argv[2]);
        return 2;
    }
    n = strlen(CLEAN) + strlen(PLANTED[expect].lines) + 1;
    if (!(text = malloc(n)))
        return 3;
    snprintf(text, n, "%s%s", CLEAN, PLANTED[expect].lines);
    nem_check_text(text, 1, &rep);
    free(text);
    rc = judge(&rep, nem_rule_index(PLANTED[expect].rule));
    /* Exactly one violation, of that rule. */
    if (nem_report_total(&rep) != 1) {
        printf("nemesis selftest: %ld violations in all, expected exactly one\n",
               nem_report_total(&rep));
        rc = 1;
    }
    return rc;
}

/* ================================================================ the run */

typedef struct run_opts {
    unsigned long long seed;
    long acq;
    int procs;
    char kinds[64];
    char plant[2];
    int expect;
    int keep;                   /* --keep: the logs stay (they do on a failure) */
} run_opts;

static rlk_fx_server srv;

static int wall_jump(long long off0)
{
    long long d = tk_wall_offset_ms() - off0;

    return d > 50 || d < -50;
}

/* Reads the lines children wrote within ms; "done ..." lines fill done[]. */
static void pump(tk_child *kids, int n, char done[][400], int *ndone, long ms)
{
    long long until = rlk_fx_now_ms() + ms;

    for (;;) {
        struct pollfd p[MAXPROCS];
        long long left = until - rlk_fx_now_ms();

        for (int i = 0; i < n; i++) {
            p[i].fd = done[i][0] ? -1 : kids[i].out_fd;
            p[i].events = POLLIN;
            p[i].revents = 0;
        }
        if (*ndone == n || left <= 0)
            return;
        if (poll(p, (nfds_t)n, (int)left) <= 0)
            continue;
        for (int i = 0; i < n; i++) {
            char line[400];

            if (!p[i].revents)
                continue;
            if (tk_child_read_line(&kids[i], line, sizeof line, 100) != 0) {
                if (p[i].revents & (POLLHUP | POLLERR)) {
                    snprintf(done[i], sizeof done[i], "died");
                    (*ndone)++;
                }
                continue;
            }
            if (strncmp(line, "done", 4) == 0 || strncmp(line, "error", 5) == 0) {
                snprintf(done[i], sizeof done[i], "%s", line);
                (*ndone)++;
            }
        }
    }
}

static long field(const char *line, const char *key)
{
    const char *p = strstr(line, key);

    return p ? atol(p + strlen(key)) : 0;
}

/* The resource's list, as R lines of the parent's log. */
static long dump_resource(int fd, const char *data, const char *res)
{
    redisReply *r = rlk_fx_command(&srv, "LRANGE %s 0 -1", data);
    long n = 0;

    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++, n++)
            logline(fd, "R %s %zu %lld\n", res, i, atoll(r->element[i]->str));
    if (r)
        freeReplyObject(r);
    return n;
}

static int run_main(const run_opts *o)
{
    static const char *const extra[] = {"--enable-debug-command", "yes", NULL};
    char dir[] = "/tmp/rlk-nemesis-XXXXXX", url[128], port[16], seedarg[32], quota[24],
         pidx[16], logs[MAXPROCS + 1][300], done[MAXPROCS][400];
    const char *paths[MAXPROCS + 1];
    tk_child kids[MAXPROCS];
    rlk_fx_config cfg;
    unsigned rng = mix(o->seed);
    long nk = 0, q, acq = 0, odds = 0, faults = 0, planted = 0, stops = 0, sstops = 0;
    long long t0 = rlk_fx_now_ms(), off0 = tk_wall_offset_ms(), lost = 0, adopted = 0;
    int ndone = 0, fd, rc;
    nem_report rep;
    tk_stall stall;

    for (int k = 0; k < NKINDS; k++)
        nk += has_kind(o->kinds, KIND_NAME[k]);
    if (nk == 0 || o->procs < 2 || o->procs > MAXPROCS) {
        fprintf(stderr, "nemesis: --kinds names none of %s, or --procs is not 2..%d\n",
                DEFAULT_KINDS, MAXPROCS);
        return 2;
    }
    q = (o->acq + nk * o->procs - 1) / (nk * o->procs);
    printf("nemesis: seed %llu (replay: nemesis run --seed %llu --acq %ld --procs %d --kinds %s%s%s)\n",
           o->seed, o->seed, o->acq, o->procs, o->kinds, o->plant[0] ? " --plant " : "",
           o->plant);
    fflush(stdout);
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0 ||
        srv.tls) {
        fprintf(stderr, "nemesis: cannot start a plain-TCP redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    if (!mkdtemp(dir)) {
        rlk_fx_stop(&srv);
        return 1;
    }
    snprintf(port, sizeof port, "%d", srv.port);
    snprintf(seedarg, sizeof seedarg, "%llu", o->seed);
    snprintf(quota, sizeof quota, "%ld", q);
    snprintf(logs[o->procs], sizeof logs[0], "%s/parent.log", dir);
    if ((fd = tk_holdlog_open(logs[o->procs])) < 0)
        return 1;
    logline(fd, "# nemesis seed %llu acq %ld procs %d kinds %s plant %s\n", o->seed, o->acq,
            o->procs, o->kinds, o->plant[0] ? o->plant : "-");
    logline(fd, "P %s %d\n", LOCK_NAME[K_SEM], SEM_PERMITS);
    if (tk_command_ok(&srv, "SET %s %d", LOCK_NAME[K_SEM], SEM_PERMITS) != 0) {
        fprintf(stderr, "nemesis: cannot set the semaphore's permits\n");
        return 1;
    }
    memset(done, 0, sizeof done);
    for (int i = 0; i < o->procs; i++) {
        const char *args[] = {"child", url, port, pidx, seedarg, quota, o->kinds,
                              o->plant[0] ? o->plant : "-", logs[i], NULL};

        snprintf(pidx, sizeof pidx, "%d", i);
        snprintf(logs[i], sizeof logs[i], "%s/log.%d", dir, i);
        if (tk_child_spawn(&kids[i], args) != 0) {
            fprintf(stderr, "nemesis: cannot spawn child %d\n", i);
            return 1;
        }
    }
    for (int i = 0; i < o->procs; i++) {
        char line[400];

        if (tk_child_read_line(&kids[i], line, sizeof line, 30000) != 0 ||
            strcmp(line, "ready") != 0) {
            fprintf(stderr, "nemesis: child %d not ready: %s\n", i, line);
            for (int j = 0; j < o->procs; j++)
                tk_child_kill(&kids[j]);
            rlk_fx_stop(&srv);
            return 1;
        }
    }
    tk_children_send(kids, o->procs, "go");
    /* The nemesis: one action at a time, drawn from the seed, until every child is done. */
    while (ndone < o->procs && rlk_fx_now_ms() - t0 < RUN_HARD_MS) {
        unsigned a = tk_rand(&rng) % 100;
        long gap = 30 + (long)(tk_rand(&rng) % 170);
        int victim = (int)(tk_rand(&rng) % (unsigned)o->procs);
        long d = (long)(tk_rand(&rng) % 1200);

        pump(kids, o->procs, done, &ndone, gap);
        if (a < 35 && !done[victim][0]) {
            stops++;
            kill(kids[victim].pid, SIGSTOP);
            pump(kids, o->procs, done, &ndone, 100 + d);
            kill(kids[victim].pid, SIGCONT);
        } else if (a < 50) {
            sstops++;
            rlk_fx_pause(&srv);
            rlk_fx_sleep_ms(50 + d * 350 / 1200);
            rlk_fx_resume(&srv);
        }
    }
    for (int i = 0; i < o->procs; i++) {
        kill(kids[i].pid, SIGCONT);
        if (!done[i][0])
            snprintf(done[i], sizeof done[i], "not done within %d s", RUN_HARD_MS / 1000);
        rc = tk_child_wait(&kids[i], 20000);
        printf("  child %d: %s (exit %d)\n", i, done[i], rc >= 0 && WIFEXITED(rc) ?
               WEXITSTATUS(rc) : -1);
        acq += field(done[i], "acq=");
        odds += field(done[i], "odd=") + (strncmp(done[i], "done", 4) != 0);
        faults += field(done[i], "faults=");
        lost += field(done[i], "lost=");
        adopted += field(done[i], "adopted=");
        planted += field(done[i], "planted=");
        tk_child_kill(&kids[i]);
    }
    for (int k = 0; k < NKINDS; k++) {
        int first = 1;      /* fenced and afenced share one resource */

        for (int j = 0; j < k; j++)
            first &= !(RES_DATA[j] && RES_DATA[k] && strcmp(RES_DATA[j], RES_DATA[k]) == 0 &&
                       has_kind(o->kinds, KIND_NAME[j]));
        if (RES_DATA[k] && first && has_kind(o->kinds, KIND_NAME[k]))
            dump_resource(fd, RES_DATA[k], RES_NAME[k]);
    }
    close(fd);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    for (int i = 0; i <= o->procs; i++)
        paths[i] = logs[i];
    nem_check_files(paths, o->procs + 1, 1, &rep);
    printf("nemesis: %ld acquisitions (target %ld) in %.1f s; faults: %ld lost-reply "
           "injections (%lld lost replies settled, %lld adopted), %ld holder SIGSTOPs, %ld "
           "server SIGSTOPs; %ld planted; %ld unexpected errors\n", acq, o->acq,
           (rlk_fx_now_ms() - t0) / 1000.0, faults, lost, adopted, stops, sstops, planted, odds);
    rc = judge(&rep, o->expect);
    if (o->expect < 0 && rc != 0)
        printf("nemesis: violations found%s%s\n", tk_stall_note(&stall),
               wall_jump(off0) ? " - the wall clock jumped (Redis expires by it)" : "");
    if (o->expect < 0 && acq < o->acq) {
        printf("nemesis: only %ld of %ld acquisitions%s\n", acq, o->acq, tk_stall_note(&stall));
        rc = 1;
    }
    if (o->expect < 0 && odds > 0) {
        printf("nemesis: %ld unexpected errors or children that did not finish\n", odds);
        rc = 1;
    }
    printf("nemesis: seed %llu: %s\n", o->seed, rc == 0 ? "PASS" : "FAIL");
    if (rc != 0 || o->keep) {
        printf("nemesis: logs kept in %s\n", dir);
    } else {
        for (int i = 0; i <= o->procs; i++)
            unlink(logs[i]);
        rmdir(dir);
    }
    return rc;
}

int main(int argc, char **argv)
{
    run_opts o;
    int i = 1;

    if (argc > 1 && strcmp(argv[1], "child") == 0)
        return child_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], "check") == 0)
        return check_main(argc, argv);
    if (argc > 1 && strcmp(argv[1], "selftest") == 0)
        return selftest_main(argc, argv);
    memset(&o, 0, sizeof o);
    o.seed = (unsigned long long)(time(NULL) ^ (getpid() << 8)) % 1000000007ULL;
    o.acq = 10000;
    o.procs = 4;
    o.expect = -1;
    snprintf(o.kinds, sizeof o.kinds, "%s", DEFAULT_KINDS);
    if (i < argc && strcmp(argv[i], "run") == 0)
        i++;
    for (; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (strcmp(argv[i], "--keep") == 0) {
            o.keep = 1;
            continue;
        }
        if (!v) {
            fprintf(stderr, "nemesis: %s needs a value\n", argv[i]);
            return 2;
        }
        if (strcmp(argv[i], "--seed") == 0)
            o.seed = strtoull(v, NULL, 10);
        else if (strcmp(argv[i], "--acq") == 0)
            o.acq = atol(v);
        else if (strcmp(argv[i], "--procs") == 0)
            o.procs = atoi(v);
        else if (strcmp(argv[i], "--kinds") == 0)
            snprintf(o.kinds, sizeof o.kinds, "%s", v);
        else if (strcmp(argv[i], "--plant") == 0 && (!strcmp(v, "a") || !strcmp(v, "b")))
            o.plant[0] = v[0];
        else if (strcmp(argv[i], "--expect-violation") == 0 && nem_rule_index(v) >= 0)
            o.expect = nem_rule_index(v);
        else {
            fprintf(stderr, "nemesis: bad option %s %s\n", argv[i], v);
            return 2;
        }
        i++;
    }
    if (o.acq < 1) {
        fprintf(stderr, "nemesis: --acq must be positive\n");
        return 2;
    }
    return run_main(&o);
}
