/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nemesis.c - a seeded nemesis over several processes, and the checker of their logs
 * (docs/nemesis.md).
 *
 *   nemesis [run] [--seed N] [--acq N] [--procs N] [--kinds lock,fenced,elect,sem,...]
 *                 [--plant a|b|c|d|e] [--expect-violation RULE] [--keep] [--failovers N]
 *   nemesis check [--expect-violation RULE] LOG...
 *   nemesis selftest clean|CONTROL
 *
 * run: starts a redis-server (the fixture; $RLK_TEST_SERVER), PROCS processes (this program
 * re-executed, "child ..."), each with one thread and one client per kind, every thread
 * acquiring and releasing its kind's lock in a loop until the process has made its share of
 * --acq acquisitions (docs/nemesis.md lists the kinds: locks X, leaders L, readers R, writers W,
 * permits S). Leases: a fixed lease of 250..1000 ms or the watchdog's (1000 ms, renewed every
 * third; each renewal logged through runtime/wd.h's rlk_renewed_hook). Inside a hold the fenced
 * lock's holder and the leader write their token (term) to a Redis list through fence/rpush
 * (rlk_fence_write), and log whether the resource accepted it. Faults, all drawn from the seed:
 *   lost reply        (in the thread, on 3% of every kind's acquires and 2% of its releases)
 *                     the server put in a DEBUG SLEEP, the call written (the library's
 *                     after-write hook; the async client: its loop turned until the call is
 *                     written), then CLIENT KILL ID of the client's connections queued behind
 *                     it from a connection opened before: the call runs and its reply is
 *                     dropped with its connection, or it is dropped unrun (rt_lost_reply.c's
 *                     kill case); the library settles it. The semaphore, which records no
 *                     holder and settles nothing: the reply read off the socket once the call
 *                     ran, the socket shut (on_written_ran): the nemesis knows the outcome
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
 *   --plant c   the semaphore's holder sends a release whose reply was lost (after it ran)
 *               again, as a library that repeats a lost call blindly: a permit given back
 *               twice, the count above its permits at the end (size)
 *   --plant d   (--failovers) the replica loses acknowledged lock keys before its promotion
 *               while the parent holds the reentrant lock across it (overlap)
 *   --plant e   (shared) every process holds under one id, though the odd ones are logged as
 *               the other id: two holders the server takes for one (overlap)
 *   --plant f   (latch, alatch) process 0 counts each round's latch down twice, logging one:
 *               a waiter released before every count-down was sent (early-open)
 *   --plant g   (asem) process 0's async semaphore holder gives two permits back for its one:
 *               more holders at once than permits (permits); every hold lasts 2..2.5 ms, so
 *               that the processes' holds overlap however fast each runs (a run of 200
 *               acquisitions in 0.2 s, each held a few microseconds, found none)
 *
 * --failovers N: the Sentinel group (sentinel.h) instead of one server, every client through
 * the sentinels with min_replicas 1, N failovers at seeded times (SENTINEL FAILOVER, or the
 * master SIGSTOPped until the sentinels elect the replica), the run ended by a stop file 2-4 s
 * after the last; no lost-reply faults; kinds lock,fenced,elect,fair,nr unless --kinds
 * (docs/nemesis.md, "A master failover").
 */
#include "engine/ae_state.h"
#include "client/client.h"
#include "client/conn.h"
#include "client/pool.h"
#include "fixture.h"
#include "nem_check.h"
#include "sentinel.h"
#include "runtime/rt.h"
#include "runtime/wd.h"
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
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAXPROCS 8
#define WAIT_MS 3000            /* an acquire's wait */
#define WD_LEASE_MS 1000        /* the watchdog's lease */
#define SEM_PERMITS 2           /* the semaphore's, and the permit-expirable one's */
#define FM_VALUES 3             /* the faster MultiLock's values: a, b, c */
#define FM_SETS 7               /* its non-empty subsets: a handle each */
#define LOST_SLEEP_MS 40        /* the DEBUG SLEEP behind a lost reply */
#define CHILD_HARD_MS 150000    /* a child ends by itself after this */
#define RUN_HARD_MS 160000      /* the parent stops the nemesis after this */
#define FO_CHILD_HARD_MS 80000  /* --failovers: a child ends by itself after this */
#define FO_RUN_HARD_MS 90000    /* --failovers: the parent stops the nemesis after this */
#define FO_HOLD_WAIT_MS 10000   /* --failovers: how long past its time and past the new
                                   master's replica linked a failover (or the stop) waits for
                                   a hold since the previous failover */
#define FO_MIN_REPLICAS 1       /* --failovers: every client's rlk_options.min_replicas */
#define FO_MIN_REPLICAS_MS 500  /* ... and its WAIT timeout */
#define FO_KINDS "lock,fenced,elect,fair,nr"
#define SHARED_OWNER "nemesis-shared-owner"

/* afenced: the fenced lock through the non-blocking API (rlk_async.h, driven by
 * rlk_async_poll.h in its thread), on the same lock and resource as the blocking fenced
 * holders; alock, afair, arw and anr likewise: the reentrant, fair, read-write and
 * non-reentrant locks through the non-blocking API, on the blocking holders' names, so both
 * APIs' holders exclude each other. */
enum { K_LOCK, K_FENCED, K_ELECT, K_SEM, K_FAIR, K_RW, K_AFENCED, K_NR, K_PSEM, K_FMULTI,
       K_ALOCK, K_AFAIR, K_ARW, K_ANR, K_SHARED, K_ASEM, K_APSEM, K_AELECT, K_LATCH, K_ALATCH,
       NKINDS };
static const char *const KIND_NAME[NKINDS] = {"lock", "fenced", "elect", "sem", "fair", "rw",
                                              "afenced", "nr", "psem", "fmulti", "alock",
                                              "afair", "arw", "anr", "shared", "asem", "apsem",
                                              "aelect", "latch", "alatch"};
/* fmulti: the group (one hash); its values are logged as the locks "{nm-fm}:a" ... */
static const char *const LOCK_NAME[NKINDS] = {"{nm-lock}", "{nm-fenced}", "{nm-elect}",
                                              "{nm-sem}", "{nm-fair}", "{nm-rw}", "{nm-fenced}",
                                              "{nm-nr}", "{nm-psem}", "{nm-fm}", "{nm-lock}",
                                              "{nm-fair}", "{nm-rw}", "{nm-nr}", "{nm-shared}",
                                              "{nm-sem}", "{nm-psem}", "{nm-elect}", "nm-latch",
                                              "nm-latch"};
static const char *const FM_VALUE[FM_VALUES] = {"a", "b", "c"};
/* The resource each token kind writes to: fence key, data key, the name in the logs. */
static const char *const RES_FENCE[NKINDS] = {NULL, "{nm-res-fenced}:fence",
                                              "{nm-res-elect}:fence", NULL, NULL, NULL,
                                              "{nm-res-fenced}:fence", NULL, NULL, NULL,
                                              [K_AELECT] = "{nm-res-elect}:fence"};
static const char *const RES_DATA[NKINDS] = {NULL, "{nm-res-fenced}:log", "{nm-res-elect}:log",
                                             NULL, NULL, NULL, "{nm-res-fenced}:log", NULL, NULL,
                                             NULL, [K_AELECT] = "{nm-res-elect}:log"};
static const char *const RES_NAME[NKINDS] = {NULL, "nm-res-fenced", "nm-res-elect", NULL, NULL,
                                             NULL, "nm-res-fenced", NULL, NULL, NULL,
                                             [K_AELECT] = "nm-res-elect"};
#define DEFAULT_KINDS "lock,fenced,elect,sem,fair,rw,afenced,nr,psem,fmulti,alock,afair,arw," \
                      "anr,shared,asem,apsem,aelect,latch,alatch"
/* asem, apsem, aelect: the semaphore, the permit-expirable semaphore and the election through
 * the non-blocking API, on the blocking kinds' names (one semaphore's permits, one election's
 * terms and resource for both APIs). asem has no lost-reply faults: the semaphore records no
 * holder, and a lost call's outcome is known to nobody (the blocking sem's fault reads the
 * reply off the wire, which the loop's connection does not allow).
 * latch, alatch: the count-down latch on both APIs, in LATCH_ROUNDS rounds: the parent arms
 * the latch nm-latch-<r> of each round with one count per latch thread of the run (K lines);
 * in round r every latch thread counts down once (D line; lost replies on 3% of them) and
 * awaits it (at most LATCH_WAIT_MS; released: an O line). No waiter may be released before
 * every count-down was sent (early-open). Rounds are not acquisitions (--acq counts holds). */
#define LATCH_ROUNDS 30
#define LATCH_WAIT_MS 2000
/* shared: the reentrant lock {nm-shared} under holder ids that processes share
 * (rlk_lock_set_owner): the even processes hold as SHARED_A, the odd ones as SHARED_B, each A
 * line labelled with its id (nem_check.h: one label, one holder). One hold in four has a nested
 * holder (a second handle of the same id, as a nested `rlk lock` inherits its parent's) take it
 * again with a lease of its own and let it go inside the outer hold. Lost replies on 8% of the
 * acquires and 6% of the releases. */
#define SHARED_A "nemesis-id-a"
#define SHARED_B "nemesis-id-b"

/* A kind taken through the non-blocking API (t->ac, not t->c). */
static int async_kind(int k)
{
    return k == K_AFENCED || (k >= K_ALOCK && k <= K_ANR) || k == K_ASEM || k == K_APSEM ||
           k == K_AELECT || k == K_ALATCH;
}

static int latch_kind(int k)
{
    return k == K_LATCH || k == K_ALATCH;
}

/* The semaphores, either API. */
static int sem_kind(int k)
{
    return k == K_SEM || k == K_ASEM;
}

static int psem_kind(int k)
{
    return k == K_PSEM || k == K_APSEM;
}

/* The RLK_KIND_* an async kind's requests name (the read-write lock's by side). */
static int async_lock_kind(int k, int side)
{
    switch (k) {
    case K_AFENCED: return RLK_KIND_FENCED;
    case K_AFAIR: return RLK_KIND_FAIR;
    case K_ARW: return side == RLK_RW_WRITE ? RLK_KIND_WRITE : RLK_KIND_READ;
    default: return RLK_KIND_LOCK;   /* alock, and anr on the reentrant lock's data */
    }
}

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
    char id[RLK_PERMIT_ID_SIZE];    /* apsem: the permit's id */
} await_;

typedef struct thr {
    int kind, proc, port;
    char plant;
    unsigned rng;
    long quota;
    long long hard_ns;
    const char *url;
    const char *stop;           /* --failovers: the parent creates this file to end the run */
    int fd;                     /* the process's log */
    rlk_client *c;
    volatile long long lost_ns; /* the lost-lock callback's time for the current hold; 0: none */
    redisContext *kc;           /* the lost-reply fault's killer connection */
    rlk_async *ac;              /* afenced: the non-blocking client (t->c is NULL) */
    rlk_async_poll ap;          /* ... its loop */
    await_ aw;                  /* ... the request being waited for */
    int stuck;                  /* ... a request did not end in time: the thread stopped */
    int ran;                    /* sem: the armed fault saw its call run (1) and took its reply */
    int ran_nil;                /* ... the reply was nil: the acquire took the permit */
    char permit[RLK_PERMIT_ID_SIZE];    /* psem: the permit held */
    long acq, busy, errs, odd, lost_faults, planted, slow, ran_faults, norepl, reentry, nested;
    long rounds, opens, latch_timeouts;     /* latch, alatch */
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

/* The semaphore's lost reply, one whose outcome the nemesis knows (the semaphore records no
 * holder: a lost acquire that the library cannot settle, and nobody can, would leave the count
 * short or, given back blindly, above its permits). After-write hook: waits for the call's
 * reply on the connection it went out on (so it ran), keeps what it said (nil: the acquire took
 * the permit), and shuts the socket down: the library reads no reply. Bounded: no reply within
 * 5 s (a stopped server) leaves the call alone. */
static void on_written_ran(void *arg)
{
    thr *t = arg;

    for (int i = 0; i < t->c->pool_size; i++) {
        redisContext *ctx = t->c->slots[i].ctx;
        struct pollfd p;
        char buf[64];
        ssize_t n = 0, got;

        if (!t->c->slots[i].busy || !ctx)
            continue;
        p.fd = ctx->fd;
        p.events = POLLIN;
        /* at least 3 bytes: "$-1" (nil), "_\r\n", ":N\r\n", "*2..." */
        while (n < 3 && poll(&p, 1, 5000) == 1 &&
               (got = recv(ctx->fd, buf + n, sizeof buf - 1 - (size_t)n, MSG_DONTWAIT)) > 0)
            n += got;
        if (n < 1)
            return;
        buf[n] = '\0';
        t->ran = 1;
        t->ran_faults++;
        t->ran_nil = buf[0] == '_' || strncmp(buf, "$-1", 3) == 0;
        shutdown(ctx->fd, SHUT_RDWR);
        return;
    }
}

/* Arms a lost reply for the thread's next script call; the sleeping server's connection, or
 * NULL (the fault is skipped, or it is the semaphore's kind: on_written_ran). The async client's
 * call is killed once written (a_kill), not through the after-write hook. */
static redisContext *lost_begin(thr *t)
{
    rlk_fx_server s;
    redisContext *x;

    t->ran = t->ran_nil = 0;
    if (t->kind == K_SEM) {
        t->lost_faults++;
        rlk_conn_after_write(on_written_ran, t);
        return NULL;
    }
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
    if (!t->ac)
        rlk_conn_after_write(on_written, t);
    return x;
}

static void lost_end(thr *t, redisContext *x)
{
    rlk_conn_after_write(NULL, NULL);
    if (!x)
        return;
    rlk_fx_sleep_end(x);
    redisFree(t->kc);
    t->kc = NULL;
}

/* The async client's lost reply (lost_begin armed it: the server sleeps): turns the loop until
 * the request is written on the command connection (bounded by the sleep), then CLIENT KILL ID
 * of that connection, queued behind the sleep. Not written in time: the fault is skipped. */
static void a_kill(thr *t)
{
    long long until = now_ns() + (LOST_SLEEP_MS / 2) * 1000000LL;
    ae_node *n = t->ac->nnodes > 0 ? t->ac->nodes[0] : NULL;
    int done = 0;

    if (!t->kc)
        return;
    while (now_ns() < until && n &&
           !(n->cmd.ctx && n->cmd.id > 0 && n->inflight.head && n->cmd.ctx->obuf[0] == '\0'))
        rlk_async_poll_turn(&t->ap, 1000000LL);
    if (!n || !n->cmd.ctx || !n->inflight.head || n->cmd.ctx->obuf[0] != '\0') {
        t->lost_faults--;
        return;
    }
    redisAppendCommand(t->kc, "CLIENT KILL ID %lld", n->cmd.id);
    while (!done)
        if (redisBufferWrite(t->kc, &done) != REDIS_OK)
            break;
}

static void odd(thr *t, const char *what, int rc)
{
    t->odd++;
    if (!t->odd_text[0])
        snprintf(t->odd_text, sizeof t->odd_text, "%s %s: %s %s", KIND_NAME[t->kind], what,
                 rlk_strerror(rc), t->c ? rlk_errstr(t->c) : t->stuck ? "(no answer in 20 s)"
                                                                       : "");
}

/* The child's rlk_options.min_replicas (--failovers: FO_MIN_REPLICAS; else 0). */
static int g_min_replicas;

/* An error a fault explains: a lost reply (settled or not), a lease that ran out; with
 * min_replicas (a failover run) also a write too few replicas acknowledged (an acquisition
 * rolled back: no hold; a release or a fenced write done, not undone) and a call that met a
 * replica (a master demoted under it). */
static int expected_error(int rc)
{
    return rc == RLK_ERR_BUSY || rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT ||
           rc == RLK_ERR_UNSETTLED || rc == RLK_ERR_NOT_OWNER || rc == RLK_ERR_LOST ||
           (g_min_replicas > 0 && (rc == RLK_ERR_NOREPLICAS || rc == RLK_ERR_READONLY));
}

/* --failovers: the parent created the stop file. */
static int stopped(const thr *t)
{
    return t->stop && access(t->stop, F_OK) == 0;
}

/* ---------------------------------------------------------------- the async driver */

static void a_done(rlk_async *ac, const rlk_async_result *r, void *pd)
{
    await_ *w = pd;

    (void)ac;
    w->err = r->err;
    w->value = r->value;
    if (r->id)
        snprintf(w->id, sizeof w->id, "%s", r->id);
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
    rlk_nrlock *nr;
    rlk_psemaphore *ps;
    rlk_fastmulti *fm[FM_SETS];     /* [set - 1]: the values whose bits are in set */
    rlk_lock *nested;               /* shared: the nested holder's handle, the same id */
} handles;

/* side: the read-write lock's side, or the faster MultiLock's set of values (1..FM_SETS). */
static int do_acquire(thr *t, handles *h, int side, long long lease, long long *value)
{
    switch (t->kind) {
    case K_NR: return rlk_nrlock_try_lock(h->nr, WAIT_MS, lease);
    case K_PSEM: *value = 1; return rlk_psemaphore_try_acquire(h->ps, WAIT_MS, lease, t->permit);
    case K_FMULTI: return rlk_fastmulti_try_lock(h->fm[side - 1], WAIT_MS, lease);
    case K_LOCK:
    case K_SHARED: return rlk_lock_try_lock(h->l, WAIT_MS, lease);
    case K_FENCED: return rlk_fenced_try_lock(h->f, WAIT_MS, lease, value);
    case K_ELECT: return rlk_elect_campaign(h->e, "v", WAIT_MS, lease, value);
    case K_SEM: *value = 1; return rlk_semaphore_try_acquire(h->s, 1, WAIT_MS);
    case K_FAIR: return rlk_fairlock_try_lock(h->fl, WAIT_MS, lease);
    case K_RW: return rlk_rwlock_try_lock(h->rw, side, WAIT_MS, lease);
    case K_ASEM:
    case K_APSEM:
    case K_AELECT: {
        rlk_async_req *q;
        int rc;

        a_begin(t);
        q = t->kind == K_ASEM
                ? rlk_async_semaphore_acquire(t->ac, LOCK_NAME[t->kind], 1, WAIT_MS, a_done, &t->aw)
            : t->kind == K_APSEM
                ? rlk_async_psemaphore_acquire(t->ac, LOCK_NAME[t->kind], WAIT_MS, lease, a_done,
                                               &t->aw)
                : rlk_async_elect_campaign(t->ac, LOCK_NAME[t->kind], 1, "v", WAIT_MS,
                                           lease > 0 ? lease : -1, a_done, &t->aw);
        if (!q)
            return RLK_ERR_NOMEM;
        a_kill(t);
        rc = a_wait(t);
        *value = t->kind == K_AELECT ? t->aw.value : 1;
        if (rc == RLK_OK && t->kind == K_APSEM)
            snprintf(t->permit, sizeof t->permit, "%s", t->aw.id);
        return rc;
    }
    default: {
        int rc, kind = async_lock_kind(t->kind, side);
        long long l = lease > 0 ? lease : -1;

        a_begin(t);
        if (!(t->kind == K_ANR
                  ? rlk_async_lock_nr(t->ac, kind, LOCK_NAME[t->kind], 1, WAIT_MS, l, a_done, &t->aw)
                  : rlk_async_lock(t->ac, kind, LOCK_NAME[t->kind], 1, WAIT_MS, l, a_done, &t->aw)))
            return RLK_ERR_NOMEM;
        a_kill(t);
        rc = a_wait(t);
        *value = t->kind == K_AFENCED ? t->aw.value : 0;   /* the others' value is a count */
        return rc;
    }
    }
}

static int do_release(thr *t, handles *h, int side)
{
    switch (t->kind) {
    case K_NR: return rlk_nrlock_unlock(h->nr);
    case K_PSEM: return rlk_psemaphore_release(h->ps, t->permit);
    case K_FMULTI: return rlk_fastmulti_unlock(h->fm[side - 1]);
    case K_LOCK:
    case K_SHARED: return rlk_lock_unlock(h->l);
    case K_FENCED: return rlk_fenced_unlock(h->f);
    case K_ELECT: return rlk_elect_resign(h->e);
    case K_SEM: return rlk_semaphore_release(h->s, 1, NULL);
    case K_FAIR: return rlk_fairlock_unlock(h->fl);
    case K_RW: return rlk_rwlock_unlock(h->rw, side);
    case K_ASEM:
    case K_APSEM:
    case K_AELECT: {
        rlk_async_req *q;

        a_begin(t);
        /* Planted (g): process 0 gives two permits back for the one it took. */
        q = t->kind == K_ASEM
                ? rlk_async_semaphore_release(t->ac, LOCK_NAME[t->kind],
                                              t->plant == 'g' && t->proc == 0 ? 2 : 1, a_done,
                                              &t->aw)
            : t->kind == K_APSEM
                ? rlk_async_psemaphore_release(t->ac, LOCK_NAME[t->kind], t->permit, a_done,
                                               &t->aw)
                : rlk_async_elect_resign(t->ac, LOCK_NAME[t->kind], 1, a_done, &t->aw);
        if (!q)
            return RLK_ERR_NOMEM;
        a_kill(t);
        return a_wait(t);
    }
    default:
        a_begin(t);
        if (!rlk_async_unlock(t->ac, async_lock_kind(t->kind, side), LOCK_NAME[t->kind], 1, a_done,
                              &t->aw))
            return RLK_ERR_NOMEM;
        a_kill(t);
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

/* shared: the holder id the thread's process holds under (and its log label). */
static const char *shared_id(const thr *t)
{
    return t->proc % 2 ? SHARED_B : SHARED_A;
}

/* shared: the nested holder, inside the outer hold: takes the lock again under the same id
 * (a re-entry, its own lease: fixed 250..1000 ms or the watchdog's), works a little, lets it
 * go. Neither may end or shorten the outer hold; an error is counted (a lost reply's doubt),
 * anything else is odd. */
static void nested_hold(thr *t, handles *h)
{
    unsigned r = tk_rand(&t->rng);
    long long lease = r % 2 ? 250 + (long long)(tk_rand(&t->rng) % 751) : 0;
    int rc = rlk_lock_try_lock(h->nested, WAIT_MS, lease);

    if (rc != RLK_OK) {
        if (expected_error(rc))
            t->errs++;
        else
            odd(t, "nested acquire", rc);
        return;
    }
    t->nested++;
    tk_spin_ns((long long)(tk_rand(&t->rng) % 300) * 1000);
    rc = rlk_lock_unlock(h->nested);
    if (rc != RLK_OK && !expected_error(rc))
        odd(t, "nested release", rc);
}

/* latch, alatch: one count-down of name (its outcome in *rc's terms: RLK_OK counted). */
static int latch_down(thr *t, rlk_latch *l, const char *name)
{
    long long left = 0;

    if (!t->ac)
        return rlk_latch_count_down(l, &left);
    a_begin(t);
    if (!rlk_async_latch_count_down(t->ac, name, a_done, &t->aw))
        return RLK_ERR_NOMEM;
    a_kill(t);
    return a_wait(t);
}

static int latch_await(thr *t, rlk_latch *l, const char *name)
{
    if (!t->ac)
        return rlk_latch_await(l, LATCH_WAIT_MS);
    a_begin(t);
    if (!rlk_async_latch_await(t->ac, name, LATCH_WAIT_MS, a_done, &t->aw))
        return RLK_ERR_NOMEM;
    return a_wait(t);
}

/* latch, alatch: LATCH_ROUNDS rounds, each one count-down of the round's latch (D line) and
 * one await of it (O line when released). Planted (f): process 0's latch threads count down
 * twice in every round, the second not logged (as a library repeating a count-down whose reply
 * was lost would): the latch opens before every count-down was sent (early-open). */
static void *latch_main(thr *t)
{
    int tid = t->kind;

    for (int r = 0; r < LATCH_ROUNDS && now_ns() < t->hard_ns && !t->stuck && !stopped(t); r++) {
        int lose = tk_rand(&t->rng) % 100 < 3, rc;
        rlk_latch *l = NULL;
        redisContext *x;
        long long sent, done;
        char name[64];

        snprintf(name, sizeof name, "%s-%d", LOCK_NAME[t->kind], r);
        if (t->c && !(l = rlk_latch_new(t->c, name))) {
            odd(t, "latch new", rlk_err(t->c));
            break;
        }
        x = lose && !t->stop ? lost_begin(t) : NULL;
        sent = now_ns();
        rc = latch_down(t, l, name);
        done = now_ns();
        lost_end(t, x);
        logline(t->fd, "D %d %d %s %lld %lld %c\n", (int)getpid(), tid, name, sent, done,
                rc == RLK_OK ? 'A' : 'U');
        if (rc != RLK_OK) {
            if (expected_error(rc) && !t->stuck)
                t->errs++;
            else
                odd(t, "count down", rc);
        }
        if (t->plant == 'f' && t->proc == 0 && latch_down(t, l, name) == RLK_OK)
            t->planted++;
        sent = now_ns();
        rc = latch_await(t, l, name);
        done = now_ns();
        t->rounds++;
        if (rc == RLK_OK) {
            t->opens++;
            logline(t->fd, "O %d %d %s %lld %lld\n", (int)getpid(), tid, name, sent, done);
        } else if (rc == RLK_ERR_BUSY || rc == RLK_ERR_TIMEOUT) {
            t->latch_timeouts++;    /* a count-down lost unrun, a stopped process: no rule */
        } else if (expected_error(rc) && !t->stuck) {
            t->errs++;
        } else {
            odd(t, "await", rc);
        }
        rlk_latch_free(l);
    }
    return NULL;
}

static void *thr_main(void *arg)
{
    thr *t = ((tk_thread_arg *)arg)->ctx;
    handles h;
    int seq = 0, tid = t->kind;

    if (latch_kind(t->kind))
        return latch_main(t);
    memset(&h, 0, sizeof h);
    switch (t->kind) {
    case K_LOCK: h.l = rlk_lock_new(t->c, LOCK_NAME[K_LOCK]); break;
    case K_SHARED:
        /* Planted (e): every process holds as SHARED_A, though the odd ones are logged as
         * SHARED_B: two holders the server takes for one (it lets B re-enter A's hold). */
        h.l = rlk_lock_new(t->c, LOCK_NAME[K_SHARED]);
        h.nested = rlk_lock_new(t->c, LOCK_NAME[K_SHARED]);
        if (h.l && h.nested &&
            (rlk_lock_set_owner(h.l, t->plant == 'e' ? SHARED_A : shared_id(t)) != RLK_OK ||
             rlk_lock_set_owner(h.nested, t->plant == 'e' ? SHARED_A : shared_id(t)) != RLK_OK)) {
            odd(t, "set_owner", rlk_err(t->c));
            return NULL;
        }
        break;
    case K_FENCED: h.f = rlk_fenced_new(t->c, LOCK_NAME[K_FENCED]); break;
    case K_ELECT:
        h.e = rlk_elect_new(t->c, LOCK_NAME[K_ELECT]);
        if (h.e && t->plant == 'b')
            rlk_elect_set_owner(h.e, SHARED_OWNER);
        break;
    case K_SEM: h.s = rlk_semaphore_new(t->c, LOCK_NAME[K_SEM]); break;
    case K_FAIR: h.fl = rlk_fairlock_new(t->c, LOCK_NAME[K_FAIR]); break;
    case K_RW: h.rw = rlk_rwlock_new(t->c, LOCK_NAME[K_RW]); break;
    case K_NR: h.nr = rlk_nrlock_new(t->c, LOCK_NAME[K_NR]); break;
    case K_PSEM: h.ps = rlk_psemaphore_new(t->c, LOCK_NAME[K_PSEM]); break;
    case K_FMULTI:
        for (int set = 1; set <= FM_SETS; set++) {
            const char *vals[FM_VALUES];
            size_t n = 0;

            for (int v = 0; v < FM_VALUES; v++)
                if (set & (1 << v))
                    vals[n++] = FM_VALUE[v];
            if (!(h.fm[set - 1] = rlk_fastmulti_new(t->c, LOCK_NAME[K_FMULTI], vals, n))) {
                odd(t, "new", rlk_err(t->c));
                return NULL;
            }
        }
        break;
    default: break;
    }
    if (!t->ac && !h.l && !h.f && !h.e && !h.s && !h.fl && !h.rw && !h.nr && !h.ps && !h.fm[0]) {
        odd(t, "new", rlk_err(t->c));
        return NULL;
    }
    while (t->acq < t->quota && now_ns() < t->hard_ns && !t->stuck && !stopped(t)) {
        unsigned r = tk_rand(&t->rng);
        /* the permit-expirable semaphore: always a lease (no watchdog; its keeper is not run) */
        int fixed = !sem_kind(t->kind) && (psem_kind(t->kind) || t->plant == 'a' || r % 10 < 6);
        long long lease = fixed ? 250 + (long long)(tk_rand(&t->rng) % 751) : 0;
        long long logged_lease = sem_kind(t->kind) ? 0 : fixed ? lease : WD_LEASE_MS;
        unsigned pl = t->kind == K_FENCED && t->plant == 'a' ? 30 : t->kind == K_SHARED ? 8 : 3;
        /* Every kind: the semaphore's with on_written_ran (a reply lost after its call ran),
         * the async client's with a_kill. */
        int lose_acq = tk_rand(&t->rng) % 100 < pl;
        int lose_rel = tk_rand(&t->rng) % 100 < (t->plant == 'c' ? 30u
                                                 : t->kind == K_SHARED ? 6u : 2u);
        /* shared: one hold in four has a nested holder (drawn for that kind only: the other
         * kinds' choices stay those of the seed) */
        int nest = t->kind == K_SHARED && tk_rand(&t->rng) % 4 == 0;
        /* A failover run (t->stop) has no DEBUG SLEEP, and its server changes: no lost-reply
         * faults (drawn all the same, so the other choices stay those of the seed). */
        long long spin = (long long)(tk_rand(&t->rng) % 500) * 1000;
        /* Planted (b) needs a campaign refused while another process leads: held 2..4 ms, so
         * that the four processes' campaigns overlap however fast each runs (a Release build ran
         * 200 campaigns in 0.3 s, none refused, and the control found nothing). */
        if (t->plant == 'b' || t->plant == 'g')
            spin += 2000000;
        /* 1 in 200 fixed-lease holds outlives its lease by 50..250 ms. */
        long long slow = fixed && t->plant == '-' && tk_rand(&t->rng) % 200 == 0
                             ? lease + 50 + (long long)(tk_rand(&t->rng) % 200) : 0;
        /* 1 in 40 watchdog holds works 400..1100 ms: past one to three renewals (N lines) */
        long long renewed = !fixed && !sem_kind(t->kind) && t->plant == '-' &&
                            tk_rand(&t->rng) % 40 == 0
                                ? 400 + (long long)(tk_rand(&t->rng) % 700) : 0;
        unsigned sd = tk_rand(&t->rng);
        int side = t->kind == K_FMULTI ? 1 + (int)(sd % FM_SETS)
                   : sd % 3 == 0 ? RLK_RW_WRITE : RLK_RW_READ;
        long long value = 0, sent, start, end;
        rlk_runtime_stats st0, st1;
        redisContext *x = NULL;
        int rc, claimed = 0;
        int kind_letter = t->kind == K_ELECT || t->kind == K_AELECT ? 'L'
                          : sem_kind(t->kind) || psem_kind(t->kind) ? 'S'
                          : t->kind == K_RW || t->kind == K_ARW ? (side == RLK_RW_WRITE ? 'W' : 'R')
                          : 'X';
        char how, names[200];

        t->lost_ns = 0;
        if (t->c)
            rlk_runtime_stats_get(t->c, &st0);
        if (t->stop || t->kind == K_ASEM)
            lose_acq = lose_rel = 0;
        if (lose_acq)
            x = lost_begin(t);
        sent = now_ns();
        rc = do_acquire(t, &h, side, lease, &value);
        start = now_ns();
        lost_end(t, x);
        if (t->kind == K_SEM && lose_acq && t->ran && rc != RLK_OK) {
            /* The reply the library never read said: taken (nil), or not. Taken: the nemesis
             * knows it holds the permit, logs the hold and gives it back. */
            if (t->ran_nil)
                rc = RLK_OK;
        } else if (sem_kind(t->kind) && rc != RLK_OK && rc != RLK_ERR_BUSY &&
                   expected_error(rc)) {
            logline(t->fd, "U %d %d %s\n", (int)getpid(), tid, LOCK_NAME[t->kind]);
        }
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
            else if (rc == RLK_ERR_NOREPLICAS && g_min_replicas > 0)
                t->norepl++;    /* rolled back: not a hold */
            else if (rc == RLK_ERR_REENTRY && g_min_replicas > 0 && t->kind == K_NR)
                t->reentry++;   /* a known liveness gap across a failover (docs/nemesis.md):
                                   counted and printed, not a hold, not a safety violation */
            else if (expected_error(rc) && !t->stuck)
                t->errs++;
            else
                odd(t, "acquire", rc);
            continue;
        }
        seq++;
        t->acq++;
        if (t->kind == K_FMULTI) {
            size_t off = 0;

            names[0] = '\0';
            for (int v = 0; v < FM_VALUES; v++)
                if (side & (1 << v))
                    off += (size_t)snprintf(names + off, sizeof names - off, "%s%s:%s",
                                            off ? "," : "", LOCK_NAME[t->kind], FM_VALUE[v]);
        } else {
            snprintf(names, sizeof names, "%s", LOCK_NAME[t->kind]);
        }
        logline(t->fd, "A %d %d %d %s %c %lld %lld %lld %lld%s%s\n", (int)getpid(), tid, seq,
                names, kind_letter, sent, start, logged_lease, value,
                t->kind == K_SHARED ? " " : "", t->kind == K_SHARED ? shared_id(t) : "");
        tk_spin_ns(spin);
        if (nest)
            nested_hold(t, &h);
        if (slow) {
            t->slow++;
            work_ms(t, slow);
        }
        if (renewed)
            work_ms(t, renewed);
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
        if (sem_kind(t->kind) && rc != RLK_OK) {
            if (lose_rel && t->ran) {
                rc = RLK_OK;    /* it ran: the permit is back (not given twice) */
                if (t->plant == 'c') {
                    /* Planted (c): the lost release sent again, blindly. */
                    rlk_semaphore_release(h.s, 1, NULL);
                    t->planted++;
                }
            }
            else if (expected_error(rc))
                logline(t->fd, "U %d %d %s\n", (int)getpid(), tid, LOCK_NAME[t->kind]);
        }
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
    rlk_lock_free(h.nested);
    rlk_fenced_free(h.f);
    rlk_elect_free(h.e);
    rlk_semaphore_free(h.s);
    rlk_fairlock_free(h.fl);
    rlk_rwlock_free(h.rw);
    rlk_nrlock_free(h.nr);
    rlk_psemaphore_free(h.ps);
    for (int i = 0; i < FM_SETS; i++)
        rlk_fastmulti_free(h.fm[i]);
    return NULL;
}

typedef struct proc_ctx {
    thr t[NKINDS];
    int nt;
} proc_ctx;

static proc_ctx *the_proc;     /* the child's threads, for on_renewed */
static long g_unacked;         /* renewals too few replicas acknowledged (not N lines) */

/* rlk_renewed_hook (runtime/wd.h): a renewal that renewed a hold, on the watchdog thread of a
 * thread's client or in the async thread's loop: an N line of that thread. The thread is the
 * one whose client's uuid begins the owner (one client per thread); a shared owner id (plant b)
 * falls back to the blocking thread of that lock name. */
static void on_renewed(int kind, const char *name, const char *owner, long long sent_ns,
                       long long lease_ms)
{
    proc_ctx *p = the_proc;
    thr *by_name = NULL;
    /* With min_replicas, a renewal the replica did not acknowledge (the WAIT that went with
     * it, on this renewing thread) is done on this master only, not undone, and counted
     * (docs/sentinel.md): a master failing over may not have it. The holder can count on the
     * lease the last acknowledged renewal set, so only that is an N line; the others are
     * comments. */
    const char *tag = g_min_replicas > 0 && rlk_last_replica_acks() < g_min_replicas
                          ? "# unacked " : "";

    (void)kind;
    if (!p)
        return;
    if (tag[0])
        __atomic_add_fetch(&g_unacked, 1, __ATOMIC_RELAXED);
    for (int i = 0; i < p->nt; i++) {
        thr *t = &p->t[i];
        const char *uuid = t->c ? rlk_client_uuid(t->c) : rlk_async_uuid(t->ac);
        size_t n = strlen(uuid);

        if (n && strncmp(owner, uuid, n) == 0 && owner[n] == ':') {
            logline(t->fd, "%sN %d %d %lld %lld\n", tag, (int)getpid(), t->kind, sent_ns,
                    lease_ms);
            return;
        }
        if (t->c && strcmp(name, LOCK_NAME[t->kind]) == 0)
            by_name = t;
    }
    if (by_name)
        logline(by_name->fd, "%sN %d %d %lld %lld\n", tag, (int)getpid(), by_name->kind,
                sent_ns, lease_ms);
}

static void *proc_thread(void *arg)
{
    tk_thread_arg *a = arg;
    proc_ctx *p = a->ctx;
    tk_thread_arg sub = {&p->t[a->idx], a->idx};

    return thr_main(&sub);
}

/* child URL PORT PROC SEED QUOTA KINDS PLANT LOG MINREPL STOP (STOP "-": none; else the
 * failover run's stop file, whose presence ends it) */
static int child_main(int argc, char **argv)
{
    proc_ctx *p;
    int fd, proc;
    long quota;
    unsigned long long seed;
    long acq = 0, busy = 0, errs = 0, odds = 0, faults = 0, planted = 0, slow = 0, ran = 0;
    long norepl = 0, reentry = 0, nested = 0, rounds = 0, opens = 0, ltimeouts = 0;
    unsigned long long lost = 0, adopted = 0, not_run = 0, unsettled = 0, switches = 0,
                       lib_unacked = 0;
    const char *stop;
    const char *odd_text = "";

    if (argc != 12)
        return 2;
    g_min_replicas = atoi(argv[10]);
    stop = strcmp(argv[11], "-") == 0 ? NULL : argv[11];
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
        t->stop = stop;
        t->fd = fd;
        rlk_options_init(&o);
        o.url = argv[2];
        o.min_replicas = g_min_replicas;
        o.min_replicas_timeout_ms = FO_MIN_REPLICAS_MS;
        o.pool_size = 2;
        o.watchdog_lease_ms = WD_LEASE_MS;
        o.command_timeout_ms = 3000;
        if (async_kind(k)) {
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
    the_proc = p;
    rlk_renewed_hook = on_renewed;
    logline(fd, "# pid %d proc %d seed %llu quota %ld kinds %s plant %s\n", (int)getpid(), proc,
            seed, quota, argv[7], argv[8]);
    {
        /* tk_child_go_threads says "ready" and waits for "go"; the deadline starts then. */
        long long hard = now_ns() + (stop ? FO_CHILD_HARD_MS : CHILD_HARD_MS) * 1000000LL;

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
        ran += t->ran_faults;
        norepl += t->norepl;
        reentry += t->reentry;
        nested += t->nested;
        rounds += t->rounds;
        opens += t->opens;
        ltimeouts += t->latch_timeouts;
        if (t->c && rlk_runtime_stats_get(t->c, &st) == RLK_OK) {
            lost += st.lost_replies;
            adopted += st.lost_adopted;
            not_run += st.lost_not_run;
            unsettled += st.lost_unsettled;
        }
        if (t->c) {
            rlk_metrics m;

            if (rlk_metrics_get(t->c, &m) == RLK_OK) {
                switches += m.failovers;
                lib_unacked += m.renewals_unacked;
            }
        }
        if (t->ac) {
            rlk_metrics m;

            if (rlk_async_metrics_get(t->ac, &m) == RLK_OK) {
                lost += m.lost_replies;
                adopted += m.lost_adopted;
                not_run += m.lost_not_run;
                unsettled += m.lost_unsettled;
            }
        }
    }
    close(fd);
    tk_say("done acq=%ld busy=%ld errors=%ld odd=%ld faults=%ld lost=%llu adopted=%llu "
           "not_run=%llu unsettled=%llu planted=%ld slow=%ld ran=%ld norepl=%ld reentry=%ld "
           "unacked=%ld unacked_counted=%llu switches=%llu nested=%ld rounds=%ld opens=%ld "
           "latch_timeouts=%ld first_odd=%s", acq, busy,
           errs, odds, faults, lost, adopted, not_run, unsettled, planted, slow, ran, norepl,
           reentry,
           __atomic_load_n(&g_unacked, __ATOMIC_RELAXED), lib_unacked, switches, nested,
           rounds, opens, ltimeouts, odd_text[0] ? odd_text : "-");
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
    "E 3 3 1 0030000000 r\n"
    /* its size at the end: one permit short, after one call of unknown outcome */
    "U 3 3 {s}\n"
    "C {s} 1\n"
    /* permit-expirable semaphore of 2: the first permit's lease (100 ms) ended it before its
     * late release, so a third holder comes in at 150 ms; its size whole at the end */
    "P {p} 2\n"
    "A 1 8 1 {p} S 0000000000 0001000000 100 1\n"
    "E 1 8 1 0300000000 r\n"
    "A 2 8 1 {p} S 0000000000 0002000000 100 1\n"
    "E 2 8 1 0050000000 r\n"
    "A 3 8 1 {p} S 0060000000 0150000000 100 1\n"
    "E 3 8 1 0155000000 r\n"
    "C {p} 2\n"
    /* faster MultiLock: values a,b and c held at once, then b,c */
    "A 1 9 1 {m}:a,{m}:b X 0000000000 0001000000 100 0\n"
    "A 2 9 1 {m}:c X 0000000000 0002000000 100 0\n"
    "E 1 9 1 0010000000 r\n"
    "E 2 9 1 0011000000 r\n"
    "A 3 9 1 {m}:b,{m}:c X 0012000000 0013000000 100 0\n"
    "E 3 9 1 0020000000 r\n"
    /* a watchdog hold renewed at 80 ms (its lease to 180 ms), released at 150 ms, the next
     * holder in at 160 ms; the second one's renewal after its release extends nothing */
    "A 1 10 1 {w} X 0000000000 0001000000 100 0\n"
    "N 1 10 0080000000 100\n"
    "E 1 10 1 0150000000 r\n"
    "A 2 10 1 {w} X 0100000000 0160000000 100 0\n"
    "E 2 10 1 0170000000 r\n"
    "N 2 10 0175000000 100\n"
    "A 3 10 1 {w} X 0171000000 0180000000 100 0\n"
    "E 3 10 1 0190000000 r\n"
    /* one holder id in two processes (owner label ida): their holds overlap, one holder; the
     * third process's id (idb) comes in after both let go */
    "A 1 11 1 {o} X 0000000000 0001000000 100 0 ida\n"
    "A 2 11 1 {o} X 0000500000 0002000000 100 0 ida\n"
    "E 1 11 1 0050000000 r\n"
    "E 2 11 1 0060000000 r\n"
    "A 3 11 1 {o} X 0055000000 0061000000 100 0 idb\n"
    "E 3 11 1 0070000000 r\n"
    /* a latch of count 2: one count-down of unknown outcome (it may have counted), the second
     * sent at 20 ms and answered at 22 ms; a waiter released at 21 ms (the second had been
     * sent), another at 30 ms */
    "K {l} 2\n"
    "D 1 12 {l} 0010000000 0011000000 U\n"
    "D 2 12 {l} 0020000000 0022000000 A\n"
    "O 1 12 {l} 0011000000 0021000000\n"
    "O 2 12 {l} 0022000000 0030000000\n";

/* Each appended to CLEAN: exactly one violation of its rule (name: the control's; rule: what
 * the checker must report). */
static const struct planted {
    const char *name, *rule, *lines;
} PLANTED[] = {
    {"overlap", "overlap",
     "A 7 0 1 {x} X 0400000000 0401000000 100 0\n"
     "E 7 0 1 0420000000 r\n"
     "A 8 0 1 {x} X 0405000000 0410000000 100 0\n"
     "E 8 0 1 0430000000 r\n"},
    /* the non-reentrant lock: its holds are X lines of its own name */
    {"overlap-nr", "overlap",
     "A 7 7 1 {n} X 0400000000 0401000000 500 0\n"
     "E 7 7 1 0420000000 r\n"
     "A 8 7 1 {n} X 0402000000 0419000000 500 0\n"
     "E 8 7 1 0430000000 r\n"},
    /* the faster MultiLock: a and c taken at 10.5 ms, a free since 10 ms but c still pid 2's */
    {"overlap-multi", "overlap",
     "A 7 9 1 {m}:a,{m}:c X 0010200000 0010500000 100 0\n"
     "E 7 9 1 0012000000 r\n"},
    /* a watchdog hold that overlaps the next one only through its renewal: its first lease
     * ended at 500 ms, the renewal sent at 480 ms carried it to 580 ms, its release came at
     * 560 ms, the next holder was in at 520 ms */
    /* one id's two processes are one holder, not a licence for a third: idc inside ida's
     * holds (one overlapping pair, against the two merged) */
    {"overlap-shared", "overlap",
     "A 7 11 1 {o} X 0000600000 0003000000 100 0 idc\n"
     "E 7 11 1 0004000000 r\n"},
    {"overlap-renewed", "overlap",
     "A 7 10 1 {r} X 0400000000 0401000000 100 0\n"
     "N 7 10 0480000000 100\n"
     "E 7 10 1 0560000000 r\n"
     "A 8 10 1 {r} X 0450000000 0520000000 100 0\n"
     "E 8 10 1 0530000000 r\n"},
    {"permits", "permits",
     "A 7 3 1 {s} S 0000000000 0015000000 0 1\n"
     "E 7 3 1 0016000000 r\n"},
    /* the permit-expirable semaphore: a third permit while two leases still run */
    {"permits-lease", "permits",
     "A 7 8 1 {p} S 0000000000 0003000000 100 1\n"
     "E 7 8 1 0020000000 r\n"},
    /* a permit given back twice: the count above the permits at the end */
    {"size", "size", "C {s} 3\n"},
    /* a permit lost: the count short, no call of unknown outcome to explain it */
    {"size-short", "size", "C {p} 1\n"},
    {"dup-token", "dup-token",
     "A 7 1 1 {f} X 0400000000 0401000000 100 20\n"
     "E 7 1 1 0402000000 r\n"
     "A 8 1 1 {f} X 0400500000 0403000000 100 20\n"
     "E 8 1 1 0404000000 r\n"},
    {"dup-term", "dup-term",
     "A 7 2 1 {e} L 0400000000 0401000000 1000 600\n"
     "E 7 2 1 0402000000 r\n"
     "A 8 2 1 {e} L 0400500000 0403000000 1000 600\n"
     "E 8 2 1 0404000000 r\n"},
    {"token-back", "token-back",
     "A 7 1 1 {f} X 0400000000 0401000000 100 30\n"
     "E 7 1 1 0402000000 r\n"
     "A 8 1 1 {f} X 0403000000 0404000000 100 29\n"
     "E 8 1 1 0405000000 r\n"},
    {"fenced-write", "fenced-write",
     "A 7 1 1 {f} X 0400000000 0401000000 100 40\n"
     "W 7 1 1 res2 40 0402000000 0403000000 A\n"
     "E 7 1 1 0404000000 r\n"
     "A 8 1 1 {f} X 0405000000 0406000000 100 41\n"
     "W 8 1 1 res2 41 0407000000 0408000000 A\n"
     "E 8 1 1 0409000000 r\n"
     "W 7 1 1 res2 40 0410000000 0411000000 A\n"},
    {"resource-order", "resource-order", "R res3 0 50\nR res3 1 52\nR res3 2 51\n"},
    {"bad-line", "bad-line", "E 9 9 9 0000000001 r\n"},
    /* a waiter released at 15 ms, when only the first of the latch's two count-downs was sent */
    {"early-open", "early-open", "O 7 12 {l} 0011000000 0015000000\n"},
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
        if (rep.holds != 27 || rep.writes != 5 || rep.resource_entries != 4 || rep.locks != 10 ||
            rep.renewals != 2 || rep.countdowns != 2 || rep.opens != 2) {
            printf("nemesis selftest: the clean log read as %ld holds, %ld writes, %ld entries, "
                   "%ld locks, %ld renewals, %ld count-downs, %ld releases (expected 27, 5, 4, "
                   "10, 2, 2, 2)\n", rep.holds, rep.writes, rep.resource_entries, rep.locks,
                   rep.renewals, rep.countdowns, rep.opens);
            rc = 1;
        }
        return rc;
    }
    for (size_t i = 0; i < sizeof PLANTED / sizeof PLANTED[0]; i++)
        if (strcmp(argv[2], PLANTED[i].name) == 0)
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
    char kinds[160];
    char plant[2];
    int expect;
    int keep;                   /* --keep: the logs stay (they do on a failure) */
    int failovers;              /* --failovers N: the Sentinel group, N failovers (0: one server) */
} run_opts;

#define MAX_FAILOVERS 4

static rlk_fx_server srv;       /* the one server; or, in a failover run: */
static rlk_fx_sentinel sfx;     /* master + replica + 3 sentinels */
static int g_fo_run, g_master;  /* a failover run; the data node that is master now */
static const char *g_kinds;     /* the run's kinds */

/* Planted (d): the replica loses what its master acknowledged. Until the replica says ROLE
 * master, every 2 ms, the lock keys of the run's kinds are deleted on it (made writable:
 * replica-read-only no), so the holds of the promotion's moment, every one of them
 * acknowledged by WAIT, are not on the new master: what min_replicas exists to prevent. The
 * children's holds are short (most end within a millisecond, and the new master grants nothing
 * until its replica is back, a second or more later), so the parent holds one itself across the
 * first failover: the reentrant lock, through the sentinels with min_replicas 1, on a lease of
 * PLANT_D_LEASE_MS, logged as a hold of its own (thread 99); the children take that lock on the
 * new master inside that lease. */
#define PLANT_D_LEASE_MS 15000
static rlk_client *g_pd_client;
static rlk_lock *g_pd_lock;
static int g_pd_seq;
static long long g_pd_start_ns;  /* the parent's hold began (sent) */
typedef struct plant_d {
    pthread_t th;
    int replica, running;
    long dels;
} plant_d;

static void *plant_d_main(void *arg)
{
    plant_d *p = arg;
    rlk_fx_server *r = &sfx.data[p->replica];
    long long t0 = rlk_fx_now_ms();

    if (tk_command_ok(r, "CONFIG SET replica-read-only no") != 0)
        return NULL;
    while (rlk_fx_now_ms() - t0 < 20000 && rlk_fx_sentinel_role(&sfx, p->replica) == 'S') {
        for (int k = 0; k < NKINDS; k++) {
            if (!has_kind(g_kinds, KIND_NAME[k]))
                continue;
            if (tk_command_ok(r, "DEL %s", LOCK_NAME[k]) == 0)
                p->dels++;
        }
        rlk_fx_sleep_ms(2);
    }
    return NULL;
}

/* The server to read from at the end, to pause: the master. */
static rlk_fx_server *master(void)
{
    return g_fo_run ? &sfx.data[g_master] : &srv;
}

/* One failover, as the seed chose it (how): 'F' SENTINEL FAILOVER (retried while the sentinels
 * refuse it: NOGOODSLAVE for a while after an earlier one), or 'K' the master SIGSTOPped until
 * every sentinel names the replica and it says ROLE master (down-after-milliseconds 1000, then
 * the sentinels' vote), then SIGCONT: the old master comes back still a master, with no replica
 * and possibly clients, until the sentinels demote it. Before either, the previous old master
 * demoted and linked and the replica promotable. The times go to *begin / *end (ns) and a
 * comment line of the parent's log. Bounded: about 60 s in all. 0, or -1 (said). */
static int fail_over(int fd, int k, char how, int plant, long long *begin, long long *end)
{
    int old = g_master, now;
    long long t0;
    plant_d pd;

    if (k > 0 && rlk_fx_sentinel_wait_demoted(&sfx, 1 - old, 20000) != 0) {
        printf("nemesis: failover %d: the old master (data %d) not demoted within 20 s\n", k,
               1 - old);
        return -1;
    }
    if (rlk_fx_sentinel_wait_promotable(&sfx, 15000) != 0) {
        printf("nemesis: failover %d: the replica not promotable within 15 s\n", k);
        return -1;
    }
    memset(&pd, 0, sizeof pd);
    pd.replica = 1 - old;
    if (plant == 'd' && g_pd_lock && !g_pd_seq) {
        long long sent = now_ns();
        int rc = rlk_lock_try_lock(g_pd_lock, 5000, PLANT_D_LEASE_MS);

        if (rc == RLK_OK) {
            g_pd_seq = 1;
            g_pd_start_ns = sent;
            logline(fd, "A %d 99 1 %s X %lld %lld %d 0\n", (int)getpid(), LOCK_NAME[K_LOCK],
                    sent, now_ns(), PLANT_D_LEASE_MS);
        } else {
            printf("nemesis: planted (d): the parent's acquire: %s\n", rlk_errstr(g_pd_client));
        }
    }
    if (plant == 'd')
        pd.running = pthread_create(&pd.th, NULL, plant_d_main, &pd) == 0;
    *begin = now_ns();
    t0 = rlk_fx_now_ms();
    if (how == 'F') {
        while (rlk_fx_sentinel_failover(&sfx, 10000) != 0) {
            if (rlk_fx_now_ms() - t0 > 20000) {
                printf("nemesis: failover %d: SENTINEL FAILOVER not done within 20 s\n", k);
                if (pd.running)
                    pthread_join(pd.th, NULL);
                return -1;
            }
            rlk_fx_sleep_ms(200);
        }
    } else {
        rlk_fx_pause(&sfx.data[old]);
        while (rlk_fx_sentinel_master(&sfx) != 1 - old && rlk_fx_now_ms() - t0 < 20000)
            rlk_fx_sleep_ms(20);
        rlk_fx_resume(&sfx.data[old]);
        if (pd.running)
            pthread_join(pd.th, NULL), pd.running = 0;
        if (rlk_fx_sentinel_master(&sfx) != 1 - old) {
            printf("nemesis: failover %d: the sentinels did not elect the replica within 20 s of "
                   "the master's SIGSTOP\n", k);
            return -1;
        }
    }
    if (pd.running)
        pthread_join(pd.th, NULL);
    if (plant == 'd')
        printf("nemesis: planted (d): %ld lock keys deleted on the replica before it was "
               "promoted\n", pd.dels);
    *end = now_ns();
    now = 1 - old;
    g_master = now;
    logline(fd, "# failover %d %s from %d to %d begin %lld end %lld\n", k,
            how == 'F' ? "SENTINEL-FAILOVER" : "SIGSTOP-master", sfx.data[old].port,
            sfx.data[now].port, *begin, *end);
    printf("nemesis: failover %d (%s): port %d -> %d in %lld ms\n", k,
           how == 'F' ? "SENTINEL FAILOVER" : "master SIGSTOPped until the sentinels elected "
           "the replica", sfx.data[old].port, sfx.data[now].port, (*end - *begin) / 1000000);
    return 0;
}

/* The A lines of the logs whose start is in [from, to), of the lock named (NULL: any): the holds
 * a stretch of the run had. With live, only the holds the checker counts: those whose fixed
 * lease had not run out when the acquire returned (an acquire that waited past its lease on a
 * new master's WAIT is no hold). */
static long holds_of(const char *const *paths, int n, const char *name, long long from,
                     long long to, int live)
{
    long count = 0;

    for (int i = 0; i < n; i++) {
        FILE *f = fopen(paths[i], "r");
        char line[512], held[128];
        long long sent, start, lease;

        while (f && fgets(line, sizeof line, f))
            if (sscanf(line, "A %*d %*d %*d %127s %*c %lld %lld %lld", held, &sent, &start,
                       &lease) == 4 && start >= from && start < to &&
                (!name || strcmp(held, name) == 0) &&
                (!live || lease <= 0 || sent + lease * 1000000LL > start))
                count++;
        if (f)
            fclose(f);
    }
    return count;
}

static long holds_between(const char *const *paths, int n, long long from, long long to)
{
    return holds_of(paths, n, NULL, from, to, 0);
}

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
    redisReply *r = rlk_fx_command(master(), "LRANGE %s 0 -1", data);
    long n = 0;

    if (r && r->type == REDIS_REPLY_ARRAY)
        for (size_t i = 0; i < r->elements; i++, n++)
            logline(fd, "R %s %zu %lld\n", res, i, atoll(r->element[i]->str));
    if (r)
        freeReplyObject(r);
    return n;
}

/* GET name (+ ZCARD name<zsuffix> when zsuffix is not NULL); -1 when unreadable. */
static long long sem_size(const char *name, const char *zsuffix)
{
    redisReply *r = rlk_fx_command(master(), "GET %s", name);
    long long n = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : -1;

    if (r)
        freeReplyObject(r);
    if (n >= 0 && zsuffix) {
        r = rlk_fx_command(master(), "ZCARD %s%s", name, zsuffix);
        n = r && r->type == REDIS_REPLY_INTEGER ? n + r->integer : -1;
        if (r)
            freeReplyObject(r);
    }
    return n;
}

static int run_main(const run_opts *o)
{
    static const char *const extra[] = {"--enable-debug-command", "yes", NULL};
    char dir[] = "/tmp/rlk-nemesis-XXXXXX", url[512], port[16], seedarg[32], quota[24],
         pidx[16], logs[MAXPROCS + 1][300], done[MAXPROCS][400], stopf[320], minrepl[8];
    const char *paths[MAXPROCS + 1];
    tk_child kids[MAXPROCS];
    rlk_fx_config cfg;
    unsigned rng = mix(o->seed);
    long nk = 0, nl = 0, q, acq = 0, rounds = 0, opens = 0, ltimeouts = 0, odds = 0, faults = 0, planted = 0, stops = 0, sstops = 0, ran = 0;
    long norepl = 0, reentry = 0, unacked = 0, switches = 0, fo_short = 0, nested = 0;
    long long unsettled = 0;
    const char *kid_logs[MAXPROCS];
    int held_since = 0;     /* a live hold in the children's logs since the last failover */
    long long linked_at = 0; /* ms: the new master's replica seen linked since that failover */
    long long t0 = rlk_fx_now_ms(), off0 = tk_wall_offset_ms(), lost = 0, adopted = 0;
    int ndone = 0, fd, rc, fo = 0, fo_bad = 0, stop_made = 0;
    nem_report rep;
    tk_stall stall;
    /* A failover run's schedule, drawn up front from its own stream of the seed: when each
     * failover comes (ms after the previous one, or after "go"), how ('F' / 'K', fail_over),
     * and when the run stops after the last. */
    unsigned fo_rng = mix(o->seed ^ 0x5fa11acedULL);
    long fo_gap[MAX_FAILOVERS], stop_gap = 2000 + (long)(tk_rand(&fo_rng) % 2000);
    char fo_how[MAX_FAILOVERS];
    long long fo_begin[MAX_FAILOVERS], fo_end[MAX_FAILOVERS], next_fo = 0, stop_at = 0;
    long run_hard = o->failovers ? FO_RUN_HARD_MS : RUN_HARD_MS;

    for (int k = 0; k < MAX_FAILOVERS; k++) {
        fo_gap[k] = 1500 + (long)(tk_rand(&fo_rng) % 2500);
        fo_how[k] = tk_rand(&fo_rng) % 2 ? 'K' : 'F';
        /* Planted (d) needs holds alive at the promotion: a SIGSTOPped master's (1 s leases at
         * most) run out before the sentinels elect the replica, some 5 s later. */
        if (o->plant[0] == 'd')
            fo_how[k] = 'F';
    }

    for (int k = 0; k < NKINDS; k++) {
        nk += has_kind(o->kinds, KIND_NAME[k]) && !latch_kind(k);
        nl += has_kind(o->kinds, KIND_NAME[k]) && latch_kind(k);
    }
    if (nk + nl == 0 || o->procs < 2 || o->procs > MAXPROCS) {
        fprintf(stderr, "nemesis: --kinds names none of %s, or --procs is not 2..%d\n",
                DEFAULT_KINDS, MAXPROCS);
        return 2;
    }
    q = nk ? (o->acq + nk * o->procs - 1) / (nk * o->procs) : 0;   /* latch rounds: not acq */
    printf("nemesis: seed %llu (replay: nemesis run --seed %llu --acq %ld --procs %d --kinds %s%s%s",
           o->seed, o->seed, o->acq, o->procs, o->kinds, o->plant[0] ? " --plant " : "",
           o->plant);
    if (o->failovers)
        printf(" --failovers %d", o->failovers);
    printf(")\n");
    if (o->failovers) {
        printf("nemesis: the failovers drawn:");
        for (int k = 0; k < o->failovers; k++)
            printf(" %s %ld ms after %s", fo_how[k] == 'F' ? "SENTINEL FAILOVER" : "SIGSTOP of the "
                   "master", fo_gap[k], k ? "the previous" : "go");
        printf("; the run stops %ld ms after the last\n", stop_gap);
    }
    fflush(stdout);
    g_fo_run = o->failovers > 0;
    snprintf(minrepl, sizeof minrepl, "%d", g_fo_run ? FO_MIN_REPLICAS : 0);
    if (g_fo_run) {
        /* The quick group: the sentinels' INFO period 500 ms, so a returning old master is
         * demoted, and the replica promotable again, within about a second (sentinel.h). */
        if (rlk_fx_sentinel_start_quick(&sfx, "nmmaster") != 0 || sfx.sentinel[0].tls) {
            fprintf(stderr, "nemesis: cannot start a plain-TCP Sentinel group\n");
            return 1;
        }
        g_master = 0;
        snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s",
                 sfx.sentinel[0].port, sfx.sentinel[1].port, sfx.sentinel[2].port, sfx.name);
        printf("nemesis: Sentinel group up in %lld ms: master %d, replica %d; clients: %s, "
               "min_replicas %d (WAIT %d ms)\n", sfx.start_ms, sfx.data[0].port,
               sfx.data[1].port, url, FO_MIN_REPLICAS, FO_MIN_REPLICAS_MS);
    } else {
        rlk_fx_config_init(&cfg);
        cfg.extra = extra;
        if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0 ||
            srv.tls) {
            fprintf(stderr, "nemesis: cannot start a plain-TCP redis-server\n");
            return 1;
        }
    }
    tk_stall_start(&stall);
    if (!mkdtemp(dir)) {
        rlk_fx_stop(&srv);
        rlk_fx_sentinel_stop(&sfx);
        return 1;
    }
    snprintf(port, sizeof port, "%d", master()->port);
    snprintf(stopf, sizeof stopf, "%s/stop", dir);
    snprintf(seedarg, sizeof seedarg, "%llu", o->seed);
    snprintf(quota, sizeof quota, "%ld", q);
    snprintf(logs[o->procs], sizeof logs[0], "%s/parent.log", dir);
    if ((fd = tk_holdlog_open(logs[o->procs])) < 0)
        return 1;
    logline(fd, "# nemesis seed %llu acq %ld procs %d kinds %s plant %s\n", o->seed, o->acq,
            o->procs, o->kinds, o->plant[0] ? o->plant : "-");
    logline(fd, "P %s %d\n", LOCK_NAME[K_SEM], SEM_PERMITS);
    logline(fd, "P %s %d\n", LOCK_NAME[K_PSEM], SEM_PERMITS);
    if (tk_command_ok(master(), "SET %s %d", LOCK_NAME[K_SEM], SEM_PERMITS) != 0 ||
        tk_command_ok(master(), "SET %s %d", LOCK_NAME[K_PSEM], SEM_PERMITS) != 0) {
        fprintf(stderr, "nemesis: cannot set the semaphores' permits\n");
        return 1;
    }
    /* The latch rounds, armed: one count per latch thread of the run. */
    for (int r = 0; r < LATCH_ROUNDS && nl > 0; r++) {
        if (tk_command_ok(master(), "SET %s-%d %ld", LOCK_NAME[K_LATCH], r, nl * o->procs) != 0) {
            fprintf(stderr, "nemesis: cannot arm the latches\n");
            return 1;
        }
        logline(fd, "K %s-%d %ld\n", LOCK_NAME[K_LATCH], r, nl * o->procs);
    }
    memset(done, 0, sizeof done);
    for (int i = 0; i < o->procs; i++) {
        const char *args[] = {"child", url, port, pidx, seedarg, quota, o->kinds,
                              o->plant[0] && o->plant[0] != 'd' ? o->plant : "-", logs[i],
                              minrepl,
                              g_fo_run ? stopf : "-", NULL};

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
            rlk_fx_sentinel_stop(&sfx);
            return 1;
        }
    }
    if (o->plant[0] == 'd') {
        rlk_options po;

        rlk_options_init(&po);
        po.url = url;
        po.min_replicas = FO_MIN_REPLICAS;
        po.min_replicas_timeout_ms = FO_MIN_REPLICAS_MS;
        g_pd_client = rlk_connect(&po);
        g_pd_lock = g_pd_client && rlk_err(g_pd_client) == RLK_OK
                        ? rlk_lock_new(g_pd_client, LOCK_NAME[K_LOCK]) : NULL;
    }
    for (int i = 0; i < o->procs; i++)
        kid_logs[i] = logs[i];
    tk_children_send(kids, o->procs, "go");
    next_fo = rlk_fx_now_ms() + fo_gap[0];
    /* The nemesis: one action at a time, drawn from the seed, until every child is done. A
     * failover run: its failovers at their times, and the stop file once the last one is
     * stop_gap behind (or one failed). */
    while (ndone < o->procs && rlk_fx_now_ms() - t0 < run_hard) {
        unsigned a = tk_rand(&rng) % 100;
        long gap = 30 + (long)(tk_rand(&rng) % 170);
        int victim = (int)(tk_rand(&rng) % (unsigned)o->procs);
        long d = (long)(tk_rand(&rng) % 1200);

        pump(kids, o->procs, done, &ndone, gap);
        /* A failover, and the stop after the last, come at their drawn times once the clients
         * hold again after the previous failover (a live hold in a child's log), or
         * FO_HOLD_WAIT_MS past those times and past the moment the new master's replica was
         * seen linked again (the signal that holds can be granted: with min_replicas the new
         * master grants nothing before, and a slow machine took the old master's demotion and
         * resync past a drawn gap of 2 s, and once past 10 s). A replica never seen back ends
         * the wait FO_HOLD_WAIT_MS * 3 past the drawn time. */
        if (fo > 0 && !fo_bad && !held_since) {
            long long due = fo < o->failovers ? next_fo : stop_at, now = rlk_fx_now_ms();

            if (!linked_at && rlk_fx_sentinel_replica_up(&sfx, g_master))
                linked_at = now;
            if (holds_of(kid_logs, o->procs, NULL, fo_end[fo - 1], 0x7fffffffffffffffLL, 1) > 0 ||
                now >= (linked_at ? (linked_at > due ? linked_at : due) : due + 2 * FO_HOLD_WAIT_MS) +
                           FO_HOLD_WAIT_MS)
                held_since = 1;
        }
        if (fo < o->failovers && !fo_bad && rlk_fx_now_ms() >= next_fo && (fo == 0 || held_since)) {
            held_since = 0;
            linked_at = 0;
            if (fail_over(fd, fo, fo_how[fo], o->plant[0], &fo_begin[fo], &fo_end[fo]) != 0)
                fo_bad = 1;
            else
                fo++;
            if (fo < o->failovers && !fo_bad)
                next_fo = rlk_fx_now_ms() + fo_gap[fo];
            else if (o->plant[0] != 'd' || fo_bad || !g_pd_seq)
                stop_at = rlk_fx_now_ms() + (fo_bad ? 0 : stop_gap);
            continue;
        }
        /* Planted (d): the run stops once a child holds the parent's lock on the new master
         * (the overlap the control is for; a hold whose lease ran out before its acquire
         * returned is none), or when the parent's lease has 500 ms left, not after a fixed
         * gap: the new master grants nothing until its replica is back. */
        if (o->plant[0] == 'd' && g_pd_seq && fo == o->failovers && !stop_at) {
            long long lease_end = g_pd_start_ns + (PLANT_D_LEASE_MS - 500) * 1000000LL;

            if (holds_of(kid_logs, o->procs, LOCK_NAME[K_LOCK], fo_end[fo - 1],
                         0x7fffffffffffffffLL, 1) > 0 || now_ns() >= lease_end) {
                printf("nemesis: planted (d): %s %lld ms after the failover\n",
                       now_ns() >= lease_end ? "no child took the parent's lock within its lease;"
                       " the run stops" : "a child took the parent's lock on the new master",
                       (now_ns() - fo_end[fo - 1]) / 1000000);
                stop_at = rlk_fx_now_ms();
            }
        }
        if (stop_at && !stop_made && rlk_fx_now_ms() >= stop_at && (fo_bad || held_since)) {
            int sfd = open(stopf, O_CREAT | O_WRONLY, 0600);

            if (sfd >= 0)
                close(sfd);
            stop_made = 1;
        }
        if (a < 35 && !done[victim][0]) {
            stops++;
            kill(kids[victim].pid, SIGSTOP);
            pump(kids, o->procs, done, &ndone, 100 + d);
            kill(kids[victim].pid, SIGCONT);
        } else if (a < 50) {
            rlk_fx_server *m = master();

            sstops++;
            rlk_fx_pause(m);
            rlk_fx_sleep_ms(50 + d * 350 / 1200);
            rlk_fx_resume(m);
        }
    }
    for (int i = 0; i < o->procs; i++) {
        kill(kids[i].pid, SIGCONT);
        if (!done[i][0])
            snprintf(done[i], sizeof done[i], "not done within %ld s", run_hard / 1000);
        rc = tk_child_wait(&kids[i], 20000);
        printf("  child %d: %s (exit %d)\n", i, done[i], rc >= 0 && WIFEXITED(rc) ?
               WEXITSTATUS(rc) : -1);
        acq += field(done[i], "acq=");
        odds += field(done[i], "odd=") + (strncmp(done[i], "done", 4) != 0);
        faults += field(done[i], "faults=");
        lost += field(done[i], "lost=");
        adopted += field(done[i], "adopted=");
        planted += field(done[i], "planted=");
        ran += field(done[i], " ran=");
        norepl += field(done[i], "norepl=");
        reentry += field(done[i], "reentry=");
        unacked += field(done[i], " unacked=");
        switches += field(done[i], "switches=");
        nested += field(done[i], "nested=");
        rounds += field(done[i], "rounds=");
        opens += field(done[i], "opens=");
        ltimeouts += field(done[i], "latch_timeouts=");
        unsettled += field(done[i], "unsettled=");
        tk_child_kill(&kids[i]);
    }
    if (g_pd_seq) {
        logline(fd, "E %d 99 1 %lld %c\n", (int)getpid(), now_ns(),
                rlk_lock_unlock(g_pd_lock) == RLK_OK ? 'r' : 'n');
    }
    rlk_lock_free(g_pd_lock);
    rlk_free(g_pd_client);
    for (int k = 0; k < NKINDS; k++) {
        int first = 1;      /* fenced and afenced share one resource */

        for (int j = 0; j < k; j++)
            first &= !(RES_DATA[j] && RES_DATA[k] && strcmp(RES_DATA[j], RES_DATA[k]) == 0 &&
                       has_kind(o->kinds, KIND_NAME[j]));
        if (RES_DATA[k] && first && has_kind(o->kinds, KIND_NAME[k]))
            dump_resource(fd, RES_DATA[k], RES_NAME[k]);
    }
    /* The semaphores' sizes, every holder gone (children that did not finish fail the run
     * anyway): the count, and for the permit-expirable one the permits still in its sorted
     * set (leases not yet run out: unsettled lost acquires), which come back by themselves. */
    if (has_kind(o->kinds, KIND_NAME[K_SEM]) || has_kind(o->kinds, KIND_NAME[K_ASEM]))
        logline(fd, "C %s %lld\n", LOCK_NAME[K_SEM], sem_size(LOCK_NAME[K_SEM], NULL));
    if (has_kind(o->kinds, KIND_NAME[K_PSEM]) || has_kind(o->kinds, KIND_NAME[K_APSEM]))
        logline(fd, "C %s %lld\n", LOCK_NAME[K_PSEM], sem_size(LOCK_NAME[K_PSEM], ":timeout"));
    close(fd);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    rlk_fx_sentinel_stop(&sfx);
    for (int i = 0; i <= o->procs; i++)
        paths[i] = logs[i];
    /* A failover run: the holds each stretch had (before the first failover, between, after
     * the last): the clients followed the master when every stretch after a failover has
     * some. */
    for (int k = 0; k <= fo && g_fo_run; k++) {
        long long from = k ? fo_end[k - 1] : 0, to = k < fo ? fo_begin[k] : 0x7fffffffffffffffLL;
        long n = holds_between(paths, o->procs, from, to);

        printf("nemesis: %ld holds %s%s\n", n, k == 0 ? "before the first failover" :
               k < fo ? "between failovers" : "after the last failover",
               k > 0 && n == 0 ? " (NONE: the clients did not follow the new master)" : "");
        fo_short += k > 0 && n == 0;
        if (k < fo)
            printf("nemesis: %ld holds during failover %d\n",
                   holds_between(paths, o->procs, fo_begin[k], fo_end[k]), k);
    }
    nem_check_files(paths, o->procs + 1, 1, &rep);
    printf("nemesis: %ld acquisitions (target %ld) in %.1f s; faults: %ld lost-reply "
           "injections (%lld lost replies settled, %lld adopted; %ld semaphore replies read off "
           "the wire), %ld holder SIGSTOPs, %ld server SIGSTOPs; %ld planted; %ld unexpected "
           "errors\n", acq, o->acq, (rlk_fx_now_ms() - t0) / 1000.0, faults, lost, adopted, ran,
           stops, sstops, planted, odds);
    if (nl > 0)
        printf("nemesis: latches: %ld rounds awaited, %ld released, %ld timed out (a count-down "
               "lost unrun or a stopped process: no rule)\n", rounds, opens, ltimeouts);
    if (has_kind(o->kinds, KIND_NAME[K_SHARED]))
        printf("nemesis: shared ids: %ld nested holds inside another of the same id; %lld lost "
               "replies reported unsettled (every kind)\n", nested, unsettled);
    if (g_fo_run)
        printf("nemesis: %d of %d failovers; clients followed %ld master switches; %ld "
               "acquisitions refused for want of a replica (RLK_ERR_NOREPLICAS, rolled back: not "
               "holds); %ld renewals unacknowledged (not N lines); %ld non-reentrant acquisitions "
               "refused as a re-entry of a hold the caller does not have (RLK_ERR_REENTRY)\n", fo,
               o->failovers, switches, norepl, unacked, reentry);
    rc = judge(&rep, o->expect);
    if (o->expect < 0 && rc != 0)
        printf("nemesis: violations found%s%s\n", tk_stall_note(&stall),
               wall_jump(off0) ? " - the wall clock jumped (Redis expires by it)" : "");
    if (g_fo_run && (fo < o->failovers || fo_short > 0)) {
        printf("nemesis: %s\n", fo < o->failovers ? "not every failover was done"
                                                  : "a stretch after a failover had no hold");
        rc = 1;
    }
    if (o->expect < 0 && nk > 0 && acq < o->acq && !g_fo_run) {
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
    int i = 1, kinds_set = 0;

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
            snprintf(o.kinds, sizeof o.kinds, "%s", v), kinds_set = 1;
        else if (strcmp(argv[i], "--failovers") == 0 && atoi(v) >= 1 &&
                 atoi(v) <= MAX_FAILOVERS)
            o.failovers = atoi(v);
        else if (strcmp(argv[i], "--plant") == 0 &&
                 (!strcmp(v, "a") || !strcmp(v, "b") || !strcmp(v, "c") || !strcmp(v, "d") ||
                  !strcmp(v, "e") || !strcmp(v, "f") || !strcmp(v, "g")))
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
    if (o.failovers) {
        /* A failover run: the clients through the sentinels with min_replicas, which the async
         * clients (afenced, alock, ...) have not got; no plants; --acq only a cap (the run ends
         * after the last failover). */
        if (!kinds_set)
            snprintf(o.kinds, sizeof o.kinds, "%s", FO_KINDS);
        int async = 0;

        for (int k = 0; k < NKINDS; k++)
            async |= async_kind(k) && has_kind(o.kinds, KIND_NAME[k]);
        if (async || (o.plant[0] && o.plant[0] != 'd')) {
            fprintf(stderr, "nemesis: --failovers takes neither an async kind (afenced, alock, "
                    "afair, arw, anr, asem, apsem, aelect, alatch: no min_replicas in the async "
                    "client) nor --plant a, b, c, e or f\n");
            return 2;
        }
    } else if (o.plant[0] == 'd') {
        fprintf(stderr, "nemesis: --plant d needs --failovers\n");
        return 2;
    }
    g_kinds = o.kinds;
    return run_main(&o);
}
