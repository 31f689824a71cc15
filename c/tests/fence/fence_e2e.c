/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fence_e2e.c - the fencing token end to end: several processes take the fenced lock and write
 * through both shipped checks (Redis data, PostgreSQL) while a nemesis pauses and kills holders,
 * pauses the server and fails it over; every accepted write is in token order on each resource,
 * stale writes are attempted and refused, and a control run without the checks lets them land.
 *
 *   fence_e2e [--cluster] [SQL_FILE]
 *                               SQL_FILE: sql/rlk_fence.sql, installed into the PostgreSQL server
 *                               that $PGHOST names (c/tests/fence/with-postgres starts one)
 *
 * Each run has its own Sentinel group (c/tests/support/sentinel.h: master, replica, 3 sentinels),
 * or with --cluster its own Redis Cluster (c/tests/support/cluster.h: 3 masters + 3 replicas;
 * "the master" below is then the master of the slot of {e2e}). $RLK_TEST_TLS (the fixtures' TLS
 * servers) makes both rediss://. WORKERS processes, each its own client on the
 * redis+sentinel:// (redis+cluster://) URL with min_replicas 1 (WAIT 1
 * behind every writing script), loop: take the fenced lock "{e2e}" (rlk_fenced_try_lock, lease
 * LEASE_MS, no watchdog), then WRITES times, WRITE_GAP_MS apart, write the entry
 * "<token> <slot> <n> <action>" to both resources:
 *   Redis       RPUSH to the list {e2e}:log, through fence/rpush (rlk_fence_write, fence key
 *               {e2e}:fence) in the checked run, a plain RPUSH in the control run;
 *   PostgreSQL  one transaction: BEGIN; SELECT rlk.fence_check('e2e', token); INSERT the row;
 *               COMMIT (the checked run), a plain INSERT (the control run).
 * A refused write (or one whose outcome is unknown) ends the hold; then unlock. Every attempt is
 * counted in shared memory per resource and per nemesis action in effect: accepted, refused
 * (RLK_FENCED), unknown (a reply lost, a Redis write fewer than 1 replica acknowledged, a worker
 * killed with the write on the wire). Every acquisition is logged too: token, and CLOCK_MONOTONIC
 * when the call began and returned.
 *
 * The nemesis (this program's parent) runs one action kind after the other on the current
 * master and on the worker that holds the lock (the workers say so in shared memory):
 *   holder SIGSTOP    the holder paused PAUSE_MS (past its lease), then SIGCONT: another takes
 *                     the lock and writes, the paused one resumes and writes with its old token
 *   holder kill -9    the holder killed; a fresh worker (a new process) replaces it
 *   CLIENT PAUSE      CLIENT PAUSE ALL SERVER_PAUSE_MS on the master while someone holds
 *   server SIGSTOP    the master process stopped SERVER_PAUSE_MS, then SIGCONT (kept below the
 *                     sentinels' down-after-milliseconds, 1000: no failover)
 *   failover          Sentinel: the holder paused, SENTINEL FAILOVER (again while refused or not
 *                     done), the holder resumed once the sentinels name the replica; the old
 *                     master is made a replica of the new one at once (the sentinels would 8-10 s
 *                     later), so that WAIT 1 is answered there; the workers follow the switch.
 *                     Cluster: the holder paused, CLUSTER FAILOVER on the replica of the slot's
 *                     master (the old master becomes its replica), the holder resumed
 *   lost reply, kill  (checked run, after the failover, on the new master) the library's pool
 *                     connections listed (CLIENT LIST, name=rlk-pool-*), the master SIGSTOPped,
 *                     and once the holder's fenced write
 *                     is on the wire (the library's after-write hook, rlk_conn_after_write,
 *                     counts it in shared memory) a CLIENT KILL ID of each is queued behind it on
 *                     a connection opened before; SIGCONT: the server reads both in one pass, so
 *                     the write runs and its reply is dropped with its connection, or it is
 *                     dropped unrun - the writer cannot tell which (the other workers' connections
 *                     go too: their lock calls' lost replies are the library's to settle)
 *   lost reply, timeout (checked run, after the kills) the workers bound each write to WRITE_LIMIT_MS
 *                     (rlk_thread_time_limit) while this action is in effect; the master
 *                     SIGSTOPped until the holder's fenced write was put on the wire and has
 *                     timed out, then SIGCONT: the server reads the request before the closed
 *                     connection's EOF and runs it, a write whose writer was told RLK_ERR_TIMEOUT
 *                     (rt_lost_reply.c makes its lost replies the same way)
 *
 * Asserted, checked run, on each resource: the final content (list on the master the sentinels
 * name at the end, table ordered by id) has no entry whose token is below an earlier entry's;
 * accepted <= entries <= accepted + unknown; stale writes were refused (count > 0). Every write
 * is logged with what the C API said of it, and the content is checked against that log: each
 * write reported accepted is there, once; each reported refused is not; no entry is there twice
 * (never performed twice: each entry is unique to one attempt); an entry no write was logged for
 * is one a killed worker had on the wire. The lost-reply actions left writes unknown (count > 0),
 * and the timeout's are reported apart: how many of them landed anyway. Over every
 * acquisition of both runs: a token handed out by an acquisition that began after another one
 * returned is larger than that one's (tokens never go back, the failover included: min_replicas
 * 1 means every token handed out reached the replica that is promoted). No error other than
 * those outcomes. Control run (same nemesis, no checks): on each resource at least one entry's
 * token is below an earlier entry's (the control runs no lost-reply action: it has no fenced
 * write to lose). The token order checker and the log checker have their own controls (planted
 * data: a token that goes back; a duplicate entry, an accepted write missing, a refused one
 * present).
 *
 * Without PostgreSQL (no libpq at build time, or with-postgres --optional found no server, or no
 * $PGHOST) the Redis resource still runs and is asserted, and the program then exits 77
 * (skipped) saying what was left out. Every wait is bounded; no assertion depends on timing.
 */
#include "check.h"
#include "client/conn.h"
#include "cluster.h"
#include "fixture.h"
#include "sentinel.h"
#include "tk_util.h"

#include <rlk.h>

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef RLK_E2E_PG
#include <libpq-fe.h>
#endif

#define WORKERS 4
#define MAXSLOTS 12         /* WORKERS plus the replacements of killed ones */
#define MAXACQ 2048         /* acquisitions logged per worker */
#define LEASE_MS 300
#define WRITES 6
#define WRITE_GAP_MS 15
#define PAUSE_MS 500        /* a holder's SIGSTOP: past its lease */
#define SERVER_PAUSE_MS 500 /* the server's: past the lease, below down-after-milliseconds */
#define HARD_LIMIT_MS 60000 /* a worker ends by itself after this, whatever the parent says */
#define WRITE_LIMIT_MS 200  /* a write's bound while "lost reply, timeout" is in effect */
#define LOST_STOP_MS 450    /* the longest the lost-reply actions keep the master stopped */
#define MAXW 4096           /* writes logged per worker and resource */

#define LOCK_NAME "{e2e}"
#define LOG_KEY "{e2e}:log"
#define FENCE_KEY "{e2e}:fence"
#define PG_FENCE "e2e"

enum { A_NONE, A_HOLDER_STOP, A_HOLDER_KILL, A_CLIENT_PAUSE, A_SERVER_STOP, A_FAILOVER, A_LOST_KILL,
       A_LOST_TIMEOUT, NACT };
static const char *const ACT_NAME[NACT] = {"no action", "holder SIGSTOP", "holder kill -9",
                                           "server CLIENT PAUSE", "server SIGSTOP", "failover",
                                           "lost reply, kill", "lost reply, timeout"};
enum { R_REDIS, R_PG, NRES };
static const char *const RES_NAME[NRES] = {"Redis list", "PostgreSQL table"};
enum { O_ACC, O_REF, O_UNK, O_ERR };

typedef struct tally {
    int acc, ref, unk;
} tally;

typedef struct acq {
    long long t0_ns, t1_ns, token;
} acq;

/* One write and what the C API said of it (O_*). */
typedef struct wrec {
    long long token;
    short n, act;
    int out;
} wrec;

typedef struct slot {
    volatile pid_t pid;          /* 0: unused */
    volatile int dead;           /* killed by the nemesis */
    volatile int holding;        /* 1 while it holds the lock */
    volatile int wnext;          /* the write of the hold it is at (0..WRITES-1) */
    volatile int inflight[NRES]; /* action + 1 while a write to that resource is on the wire */
    tally t[NACT][NRES];
    int holds, transient, errors, pg_errors;
    int noacks[NACT];            /* acquisitions rolled back: no replica acknowledged them */
    volatile int nacq;
    acq a[MAXACQ];
    volatile unsigned wire;      /* fenced writes put on the wire (the after-write hook) */
    volatile int nw[NRES];
    wrec w[NRES][MAXW];
    char err[200];               /* the first unexpected error */
} slot;

typedef struct shared {
    volatile int action;         /* the nemesis action in effect (A_*) */
    volatile int stop;
    slot s[MAXSLOTS];
} shared;

static shared *sh;
static rlk_fx_sentinel fx;
static rlk_fx_cluster cl;
static int cluster_mode;         /* --cluster */
static char surl[1024];
static const char *pg_skip;      /* why PostgreSQL is left out; NULL: it runs */
static int nslots;

/* ------------------------------------------------------------ helpers */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void note(slot *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(slot *s, const char *fmt, ...)
{
    va_list ap;

    if (s->err[0])
        return;
    va_start(ap, fmt);
    vsnprintf(s->err, sizeof s->err, fmt, ap);
    va_end(ap);
}

/* Lock and write results that say "the outcome is not known" or "not now" rather than a bug:
 * a lost reply, a refused or unacknowledged replica write, a server that is not the master. */
static int transient(int rc)
{
    return rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_READONLY ||
           rc == RLK_ERR_NOREPLICAS || rc == RLK_ERR_UNSETTLED;
}

/* ------------------------------------------------------------ the worker */

static int write_redis(rlk_client *c, int checked, const char *entry, long long token)
{
    const char *args[1] = {entry};
    int rc;

    if (checked) {
        rc = rlk_fence_write(c, "rpush", FENCE_KEY, LOG_KEY, (uint64_t)token, 1, args, NULL, NULL, NULL);
        if (rc == RLK_OK)
            return rlk_last_replica_acks() >= 1 ? O_ACC : O_UNK; /* not on the replica: may be lost */
    } else {
        const char *argv[3] = {"RPUSH", LOG_KEY, entry};
        redisReply *r = NULL;

        rc = rlk_command(c, 3, argv, NULL, &r);
        if (r)
            freeReplyObject(r);
        if (rc == RLK_OK)
            return O_ACC;
    }
    if (rc == RLK_ERR_FENCED)
        return O_REF;
    return transient(rc) ? O_UNK : O_ERR;
}

#ifdef RLK_E2E_PG
static int write_pg(PGconn *pg, int checked, long long token, int k, int n, int act, char *why, size_t len)
{
    char sql[400];
    PGresult *r;
    int out;

    if (checked)
        snprintf(sql, sizeof sql,
                 "BEGIN; SELECT rlk.fence_check('" PG_FENCE "', %lld); INSERT INTO rlk_e2e_log (run, token, "
                 "slot, n, action) VALUES ('checked', %lld, %d, %d, %d); COMMIT",
                 token, token, k, n, act);
    else
        snprintf(sql, sizeof sql,
                 "INSERT INTO rlk_e2e_log (run, token, slot, n, action) VALUES ('control', %lld, %d, %d, %d)",
                 token, k, n, act);
    r = PQexec(pg, sql);
    if (PQresultStatus(r) == PGRES_COMMAND_OK) {
        out = (!checked || strcmp(PQcmdStatus(r), "COMMIT") == 0) ? O_ACC : O_ERR;
        if (out == O_ERR)
            snprintf(why, len, "COMMIT answered %s", PQcmdStatus(r));
    } else {
        const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);

        out = state && strcmp(state, "RLKFE") == 0 ? O_REF : O_ERR;
        if (PQstatus(pg) != CONNECTION_OK)
            out = O_UNK;
        if (out != O_REF)
            snprintf(why, len, "%s %s", state ? state : "?", PQresultErrorMessage(r));
    }
    PQclear(r);
    if (checked && PQtransactionStatus(pg) == PQTRANS_INERROR)
        PQclear(PQexec(pg, "ROLLBACK"));
    return out;
}
#endif

/* The after-write hook: the fenced write's request is on the wire. */
static void on_wire(void *arg)
{
    slot *s = arg;

    __atomic_add_fetch(&s->wire, 1u, __ATOMIC_SEQ_CST);
}

static void log_write(slot *s, int res, long long token, int n, int act, int out)
{
    int i = s->nw[res];

    if (i >= MAXW)
        return;
    s->w[res][i].token = token;
    s->w[res][i].n = (short)n;
    s->w[res][i].act = (short)act;
    s->w[res][i].out = out;
    __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the record before its count (kill -9) */
    s->nw[res] = i + 1;
}

static void count(slot *s, int act, int res, int out)
{
    if (out == O_ACC)
        s->t[act][res].acc++;
    else if (out == O_REF)
        s->t[act][res].ref++;
    else if (out == O_UNK)
        s->t[act][res].unk++;
    else
        s->errors++;
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    s->inflight[res] = 0; /* after the count: a kill in between counts it twice, never zero times */
}

static void worker(int k, int checked)
{
    slot *s = &sh->s[k];
    long long hard = rlk_fx_now_ms() + HARD_LIMIT_MS;
    rlk_options o;
    rlk_client *c;
    rlk_fenced *f;
    char entry[96];
#ifdef RLK_E2E_PG
    PGconn *pg = NULL;
#endif

    prctl(PR_SET_PDEATHSIG, SIGKILL);
    rlk_options_init(&o);
    o.url = surl;
    o.pool_size = 2;
    o.min_replicas = 1;
    o.min_replicas_timeout_ms = 1000;
    c = rlk_connect(&o);
    if (!c || rlk_err(c) != RLK_OK) {
        note(s, "connect %s: %s", surl, c ? rlk_errstr(c) : "out of memory");
        s->errors++;
        _exit(3);
    }
    f = rlk_fenced_new(c, LOCK_NAME);
#ifdef RLK_E2E_PG
    if (!pg_skip) {
        pg = PQconnectdb("");
        if (PQstatus(pg) != CONNECTION_OK) {
            note(s, "PostgreSQL connect: %s", PQerrorMessage(pg));
            s->errors++;
            _exit(3);
        }
    }
#endif
    while (!sh->stop && rlk_fx_now_ms() < hard) {
        long long token = 0, t0 = rlk_fx_now_ns(), t1;
        int rc = rlk_fenced_try_lock(f, 1000, LEASE_MS, &token);

        t1 = rlk_fx_now_ns();
        if (rc == RLK_ERR_BUSY)
            continue;
        if (rc != RLK_OK) {
            if (transient(rc)) {
                s->transient++;
                if (rc == RLK_ERR_NOREPLICAS)
                    s->noacks[sh->action]++;
            } else {
                s->errors++;
                note(s, "lock: %s %s", rlk_strerror(rc), rlk_errstr(c));
            }
            sleep_ms(20);
            continue;
        }
        if (s->nacq < MAXACQ) {
            s->a[s->nacq].t0_ns = t0;
            s->a[s->nacq].t1_ns = t1;
            s->a[s->nacq].token = token;
            __atomic_thread_fence(__ATOMIC_SEQ_CST); /* the record before its count (kill -9) */
            s->nacq = s->nacq + 1;
        }
        s->holds++;
        s->wnext = 0;
        s->holding = 1;
        for (int n = 0; n < WRITES && !sh->stop; n++) {
            int act = sh->action, out, end = 0;

            s->wnext = n;
            snprintf(entry, sizeof entry, "%lld %d %d %d", token, k, n, act);
            s->inflight[R_REDIS] = act + 1;
            if (act == A_LOST_TIMEOUT)
                rlk_thread_time_limit(WRITE_LIMIT_MS);
            rlk_conn_after_write(on_wire, s); /* taken by the fenced write's EVALSHA */
            out = write_redis(c, checked, entry, token);
            rlk_conn_after_write(NULL, NULL);
            rlk_thread_time_limit(-1);
            if (out == O_ERR)
                note(s, "write: %s", rlk_errstr(c));
            log_write(s, R_REDIS, token, n, act, out);
            count(s, act, R_REDIS, out);
            end |= out != O_ACC;
#ifdef RLK_E2E_PG
            if (pg) {
                char why[200] = "";

                s->inflight[R_PG] = act + 1;
                out = write_pg(pg, checked, token, k, n, act, why, sizeof why);
                if (out == O_ERR) {
                    s->pg_errors++;
                    note(s, "PostgreSQL: %s", why);
                }
                log_write(s, R_PG, token, n, act, out);
                count(s, act, R_PG, out);
                end |= out != O_ACC;
            }
#endif
            if (end)
                break; /* refused: a newer holder wrote; unknown: do not write on blindly */
            sleep_ms(WRITE_GAP_MS);
        }
        s->holding = 0;
        rc = rlk_fenced_unlock(f); /* RLK_ERR_NOT_OWNER after the lease ran out: expected */
        if (rc != RLK_OK && rc != RLK_ERR_NOT_OWNER && !transient(rc)) {
            s->errors++;
            note(s, "unlock: %s %s", rlk_strerror(rc), rlk_errstr(c));
        }
    }
    rlk_fenced_free(f);
    rlk_free(c);
#ifdef RLK_E2E_PG
    if (pg)
        PQfinish(pg);
#endif
    _exit(0);
}

/* ------------------------------------------------------------ the nemesis */

static int spawn(int checked)
{
    int k = nslots;
    pid_t pid;

    if (k >= MAXSLOTS)
        return -1;
    memset(&sh->s[k], 0, sizeof sh->s[k]);
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid == 0)
        worker(k, checked);
    if (pid < 0)
        return -1;
    sh->s[k].pid = pid;
    nslots++;
    return k;
}

/* The slot that holds the lock, polled for at most wait_ms; else a random live one (or -1). */
static int holder(long wait_ms, unsigned *seed)
{
    long long end = rlk_fx_now_ms() + wait_ms;
    int live[MAXSLOTS], n = 0;

    do {
        for (int k = 0; k < nslots; k++)
            if (!sh->s[k].dead && sh->s[k].holding)
                return k;
        sleep_ms(5);
    } while (rlk_fx_now_ms() < end);
    for (int k = 0; k < nslots; k++)
        if (!sh->s[k].dead)
            live[n++] = k;
    return n ? live[tk_rand(seed) % (unsigned)n] : -1;
}

/* The slot that holds the lock and has written at most max_n times in this hold (it has more to
 * write), polled for at most wait_ms; -1 when none does. */
static int holding(long wait_ms, int max_n)
{
    long long end = rlk_fx_now_ms() + wait_ms;

    do {
        for (int k = 0; k < nslots; k++)
            if (!sh->s[k].dead && sh->s[k].holding && sh->s[k].wnext <= max_n)
                return k;
        sleep_ms(2);
    } while (rlk_fx_now_ms() < end);
    return -1;
}

/* Waits until someone holds the lock (at most wait_ms): 1, or 0. */
static int someone_holds(long wait_ms)
{
    long long end = rlk_fx_now_ms() + wait_ms;

    do {
        for (int k = 0; k < nslots; k++)
            if (!sh->s[k].dead && sh->s[k].holding)
                return 1;
        sleep_ms(2);
    } while (rlk_fx_now_ms() < end);
    return 0;
}

/* Data node i: fx.data[i], or cl.node[i] with --cluster. */
static rlk_fx_server *node(int i)
{
    return cluster_mode ? &cl.node[i] : &fx.data[i];
}

/* The data node the sentinels agree is the master (the cluster: the master of the slot of
 * {e2e}, as CLUSTER SLOTS says), polled for at most wait_ms; -1. */
static int master(long wait_ms)
{
    long long end = rlk_fx_now_ms() + wait_ms;
    int m;

    while ((m = cluster_mode ? rlk_fx_cluster_key_owner(&cl, LOCK_NAME) : rlk_fx_sentinel_master(&fx)) < 0 &&
           rlk_fx_now_ms() < end)
        sleep_ms(50);
    return m;
}

/* Starts the run's servers and sets surl. 0 / -1. */
static int topo_start(const char *name)
{
    if (cluster_mode) {
        size_t used;

        if (rlk_fx_cluster_start(&cl) != 0)
            return -1;
        used = (size_t)snprintf(surl, sizeof surl, "%s+cluster://", cl.node[0].tls ? "rediss" : "redis");
        for (int i = 0; i < cl.n && used < sizeof surl; i++)
            used += (size_t)snprintf(surl + used, sizeof surl - used, "%s127.0.0.1:%d", i ? "," : "",
                                     cl.node[i].port);
        return used < sizeof surl ? 0 : -1;
    }
    if (rlk_fx_sentinel_start(&fx, name) != 0)
        return -1;
    snprintf(surl, sizeof surl, "%s+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s",
             fx.sentinel[0].tls ? "rediss" : "redis", fx.sentinel[0].port, fx.sentinel[1].port,
             fx.sentinel[2].port, name);
    return 0;
}

static void topo_stop(void)
{
    if (cluster_mode)
        rlk_fx_cluster_stop(&cl);
    else
        rlk_fx_sentinel_stop(&fx);
}

/* A resource's content against the log of writes (check_log). */
typedef struct log_result {
    int dup;                           /* entries there more than once */
    int acc_missing;                   /* writes reported accepted, not there */
    int ref_present;                   /* writes reported refused, there */
    int unk_landed[NACT];              /* unknown outcomes, by action: there */
    int unk_absent[NACT];              /* unknown outcomes, by action: not there */
    int unlogged;                      /* entries no write was logged for (killed mid-write) */
} log_result;

/* An entry of a resource: the write it came from is (token, slot, n). */
typedef struct ekey {
    long long token;
    int slot, n;
} ekey;

typedef struct run_result {
    int actions[NACT];
    tally t[NACT][NRES];
    int holds, transient, errors, pg_errors, killed, slots;
    int noacks[NACT];                  /* acquisitions rolled back for want of a replica ack */
    long long entries[NRES];           /* the resource's final content, -1: not read */
    int back[NRES];                    /* entries below an earlier entry's token */
    int back_by[NACT][NRES];           /* the same by the action the entry names */
    long long acqs, token_back;        /* acquisitions logged; tokens that went back */
    long long failover_ms;
    int new_master;                    /* the master at the end (data[i]) */
    int expect_master;                 /* the replica of the failover, -1: none */
    long long lost_stop_ms[2];         /* the master stopped by the lost-reply actions, in all */
    int lost_killed;                   /* connections their CLIENT KILLs closed */
    log_result lg[NRES];               /* the content against the log of writes */
} run_result;

/* Folds the counts of slot k into r; for a killed worker, a write on the wire is unknown. */
static void fold(run_result *r, int k)
{
    slot *s = &sh->s[k];

    for (int a = 0; a < NACT; a++)
        for (int res = 0; res < NRES; res++) {
            r->t[a][res].acc += s->t[a][res].acc;
            r->t[a][res].ref += s->t[a][res].ref;
            r->t[a][res].unk += s->t[a][res].unk;
        }
    for (int res = 0; res < NRES; res++)
        if (s->dead && s->inflight[res] > 0 && s->inflight[res] <= NACT)
            r->t[s->inflight[res] - 1][res].unk++;
    r->holds += s->holds;
    r->transient += s->transient;
    for (int a = 0; a < NACT; a++)
        r->noacks[a] += s->noacks[a];
    r->errors += s->errors;
    r->pg_errors += s->pg_errors;
    if (s->err[0])
        printf("  worker slot %d (pid %d): %s\n", k, (int)s->pid, s->err);
}

/* ------------------------------------------------------------ lost replies */

/* Polls (1 ms) until the holder k has put a fenced write on the wire since `was`, at most
 * until end_ms: 1, or 0. */
static int wire_after(int k, unsigned was, long long end_ms)
{
    while (__atomic_load_n(&sh->s[k].wire, __ATOMIC_SEQ_CST) == was) {
        if (rlk_fx_now_ms() >= end_ms)
            return 0;
        sleep_ms(1);
    }
    return 1;
}

#define MAXKILL 64

/* The ids of the library's pool connections on x's server (CLIENT LIST: name=rlk-pool-*):
 * the workers' command connections, not their subscribers' nor the sentinels'. How many. */
static int pool_conns(redisContext *x, long long *ids, int max)
{
    redisReply *rep = redisCommand(x, "CLIENT LIST");
    int n = 0;

    for (const char *p = rep && rep->type == REDIS_REPLY_STRING ? rep->str : NULL; p && *p && n < max;) {
        const char *eol = strchr(p, '\n'), *name = strstr(p, " name=rlk-pool-");

        if (strncmp(p, "id=", 3) == 0 && name && (!eol || name < eol))
            ids[n++] = atoll(p + 3);
        p = eol ? eol + 1 : NULL;
    }
    if (rep)
        freeReplyObject(rep);
    return n;
}

/* One lost-reply action on master m while slot k holds the lock: 1 when the holder's fenced
 * write lost its reply as planned (written while the master was stopped; kill: the CLIENT KILLs
 * queued behind it closed connections; timeout: the write returned while it was still stopped),
 * 0 when the holder put no write on the wire in time (nothing to lose), -1 on a fixture error. */
static int lost_reply(int act, int m, int k, run_result *r)
{
    rlk_fx_server *srv = node(m);
    redisContext *x = act == A_LOST_KILL ? rlk_fx_connect(srv) : NULL;
    unsigned was = __atomic_load_n(&sh->s[k].wire, __ATOMIC_SEQ_CST);
    long long t0, end, ids[MAXKILL];
    int hit = 0, done = 0, nids = 0;

    if (act == A_LOST_KILL && (!x || x->err || (nids = pool_conns(x, ids, MAXKILL)) == 0)) {
        if (x)
            redisFree(x);
        return -1;
    }
    if (rlk_fx_pause(srv) != 0) {
        if (x)
            redisFree(x);
        return -1;
    }
    t0 = rlk_fx_now_ms();
    end = t0 + LOST_STOP_MS;
    if (wire_after(k, was, end)) {
        if (act == A_LOST_KILL) {
            /* Queued on the stopped server behind the write: read in the same pass. A pool
             * connection opened since CLIENT LIST is missed (the write then succeeds). */
            hit = 1;
            for (int i = 0; i < nids && hit; i++)
                hit = redisAppendCommand(x, "CLIENT KILL ID %lld", ids[i]) == REDIS_OK;
            while (hit && !done)
                hit = redisBufferWrite(x, &done) == REDIS_OK;
        } else {
            /* The write's bound runs out while the server is stopped: its reply is lost. */
            while (sh->s[k].inflight[R_REDIS] != 0 && rlk_fx_now_ms() < end)
                sleep_ms(1);
            hit = sh->s[k].inflight[R_REDIS] == 0;
        }
    }
    r->lost_stop_ms[act == A_LOST_KILL ? 0 : 1] += rlk_fx_now_ms() - t0;
    rlk_fx_resume(srv);
    if (x) {
        int killed = 0;

        for (int i = 0; hit && i < nids; i++) {
            redisReply *rep = NULL;

            if (redisGetReply(x, (void **)&rep) != REDIS_OK || !rep) {
                hit = 0;
                break;
            }
            killed += rep->type == REDIS_REPLY_INTEGER ? (int)rep->integer : 0; /* gone: an error */
            freeReplyObject(rep);
        }
        r->lost_killed += killed;
        hit = hit && killed > 0;
        redisFree(x);
    }
    return hit;
}

/* ------------------------------------------------------------ checkers */

static int cmp_t0(const void *a, const void *b)
{
    const acq *x = a, *y = b;

    return x->t0_ns < y->t0_ns ? -1 : x->t0_ns > y->t0_ns;
}

static int cmp_t1(const void *a, const void *b)
{
    const acq *x = a, *y = b;

    return x->t1_ns < y->t1_ns ? -1 : x->t1_ns > y->t1_ns;
}

/* Acquisitions whose token is not above that of every acquisition that had returned before it
 * began (n log n: by start, against the largest token among those that ended earlier). */
static long long tokens_back(acq *v, size_t n)
{
    acq *ends;
    long long bad = 0, max_ended = 0;
    size_t j = 0;

    if (n == 0)
        return 0;
    ends = malloc(n * sizeof *ends);
    if (!ends)
        return -1;
    memcpy(ends, v, n * sizeof *ends);
    qsort(v, n, sizeof *v, cmp_t0);
    qsort(ends, n, sizeof *ends, cmp_t1);
    for (size_t i = 0; i < n; i++) {
        while (j < n && ends[j].t1_ns < v[i].t0_ns) {
            if (ends[j].token > max_ended)
                max_ended = ends[j].token;
            j++;
        }
        if (v[i].token <= max_ended) {
            if (bad++ < 3)
                printf("  token %lld handed out after %lld had been\n", v[i].token, max_ended);
        }
    }
    free(ends);
    return bad;
}

static int cmp_ekey(const void *a, const void *b)
{
    const ekey *x = a, *y = b;

    if (x->token != y->token)
        return x->token < y->token ? -1 : 1;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    return (x->n > y->n) - (x->n < y->n);
}

/* Checks the n entries e (sorted here) against the writes logged by nslot workers (w[k][0..nw[k]),
 * each with what the C API said of it): duplicates, accepted writes missing, refused ones
 * present, unknown ones there or not, entries no write was logged for. */
static void check_log(ekey *e, size_t n, const wrec *const *w, const int *nw, int nslot, log_result *lg)
{
    unsigned char *seen = calloc(n ? n : 1, 1);

    memset(lg, 0, sizeof *lg);
    qsort(e, n, sizeof *e, cmp_ekey);
    for (size_t i = 1; i < n; i++)
        if (cmp_ekey(&e[i - 1], &e[i]) == 0) {
            if (lg->dup++ < 3)
                printf("  entry %lld %d %d is there more than once\n", e[i].token, e[i].slot, e[i].n);
        }
    for (int k = 0; k < nslot; k++)
        for (int i = 0; i < nw[k]; i++) {
            ekey key = {w[k][i].token, k, w[k][i].n};
            ekey *hit = n ? bsearch(&key, e, n, sizeof *e, cmp_ekey) : NULL;
            int act = w[k][i].act >= 0 && w[k][i].act < NACT ? w[k][i].act : A_NONE;

            while (hit && hit > e && cmp_ekey(hit - 1, hit) == 0)
                hit--;                       /* the first of equal entries stands for them all */
            if (hit && seen)
                seen[hit - e] = 1;
            if (w[k][i].out == O_ACC && !hit) {
                if (lg->acc_missing++ < 3)
                    printf("  write %lld %d %d reported accepted, not there\n", key.token, k, key.n);
            } else if (w[k][i].out == O_REF && hit) {
                if (lg->ref_present++ < 3)
                    printf("  write %lld %d %d reported refused, there\n", key.token, k, key.n);
            } else if (w[k][i].out == O_UNK) {
                if (hit)
                    lg->unk_landed[act]++;
                else
                    lg->unk_absent[act]++;
            }
        }
    for (size_t i = 0; seen && i < n; i++)
        if (!seen[i] && (i == 0 || cmp_ekey(&e[i - 1], &e[i]) != 0))
            lg->unlogged++;
    free(seen);
}

/* check_log of resource res against the workers' logs in shared memory. */
static void check_log_run(ekey *e, size_t n, int res, log_result *lg)
{
    const wrec *w[MAXSLOTS];
    int nw[MAXSLOTS];

    for (int k = 0; k < nslots; k++) {
        w[k] = sh->s[k].w[res];
        nw[k] = sh->s[k].nw[res];
    }
    check_log(e, n, w, nw, nslots, lg);
}

/* Entries whose token is below an earlier entry's; by[action] counts them by the action named. */
static void order_add(long long token, int act, long long *max, int *back, int *by)
{
    if (token < *max) {
        (*back)++;
        if (act >= 0 && act < NACT)
            by[act]++;
    }
    if (token > *max)
        *max = token;
}

static int read_redis(run_result *r)
{
    int m = master(10000);
    redisReply *rep;
    long long max = 0;
    int by[NACT] = {0};
    ekey *e;

    if (m < 0)
        return -1;
    r->new_master = m;
    rep = rlk_fx_command(node(m), "LRANGE %s 0 -1", LOG_KEY);
    if (!rep || rep->type != REDIS_REPLY_ARRAY) {
        if (rep)
            freeReplyObject(rep);
        return -1;
    }
    r->entries[R_REDIS] = (long long)rep->elements;
    e = malloc(sizeof *e * (rep->elements ? rep->elements : 1));
    for (size_t i = 0; i < rep->elements; i++) {
        long long token = 0;
        int slotno = 0, n = 0, act = -1;

        sscanf(rep->element[i]->str, "%lld %d %d %d", &token, &slotno, &n, &act);
        order_add(token, act, &max, &r->back[R_REDIS], by);
        if (e)
            e[i] = (ekey){token, slotno, n};
    }
    if (e)
        check_log_run(e, rep->elements, R_REDIS, &r->lg[R_REDIS]);
    else
        r->lg[R_REDIS].dup = -1;
    free(e);
    for (int a = 0; a < NACT; a++)
        r->back_by[a][R_REDIS] = by[a];
    freeReplyObject(rep);
    return 0;
}

#ifdef RLK_E2E_PG
static void pg_quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* NOTICEs ("relation already exists, skipping") are expected */
}

static PGconn *pg_connect(void)
{
    PGconn *c = PQconnectdb("");

    if (PQstatus(c) != CONNECTION_OK) {
        printf("  PostgreSQL: connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return NULL;
    }
    return c;
}

static int pg_ok(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK;

    if (!ok)
        printf("  PostgreSQL: %.60s: %s", sql, PQresultErrorMessage(r));
    PQclear(r);
    return ok;
}

static int read_pg(run_result *r, const char *run)
{
    PGconn *c = pg_connect();
    char sql[160];
    PGresult *q;
    long long max = 0;
    int by[NACT] = {0};
    ekey *e;

    if (!c)
        return -1;
    snprintf(sql, sizeof sql, "SELECT token, action, slot, n FROM rlk_e2e_log WHERE run = '%s' ORDER BY id", run);
    q = PQexec(c, sql);
    if (PQresultStatus(q) != PGRES_TUPLES_OK) {
        printf("  PostgreSQL: %s", PQresultErrorMessage(q));
        PQclear(q);
        PQfinish(c);
        return -1;
    }
    r->entries[R_PG] = PQntuples(q);
    e = malloc(sizeof *e * (size_t)(PQntuples(q) ? PQntuples(q) : 1));
    for (int i = 0; i < PQntuples(q); i++) {
        order_add(atoll(PQgetvalue(q, i, 0)), atoi(PQgetvalue(q, i, 1)), &max, &r->back[R_PG], by);
        if (e)
            e[i] = (ekey){atoll(PQgetvalue(q, i, 0)), atoi(PQgetvalue(q, i, 2)), atoi(PQgetvalue(q, i, 3))};
    }
    if (e)
        check_log_run(e, (size_t)PQntuples(q), R_PG, &r->lg[R_PG]);
    else
        r->lg[R_PG].dup = -1;
    free(e);
    for (int a = 0; a < NACT; a++)
        r->back_by[a][R_PG] = by[a];
    PQclear(q);
    PQfinish(c);
    return 0;
}

/* Installs the SQL file (twice: it must be idempotent) and the test's table. */
static int pg_setup(const char *path)
{
    FILE *fp = fopen(path, "rb");
    char *sql;
    long n;
    PGconn *c;
    int ok;

    if (!fp || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        perror(path);
        if (fp)
            fclose(fp);
        return -1;
    }
    sql = calloc(1, (size_t)n + 1);
    if (!sql || fread(sql, 1, (size_t)n, fp) != (size_t)n) {
        fclose(fp);
        free(sql);
        return -1;
    }
    fclose(fp);
    c = pg_connect();
    if (!c) {
        free(sql);
        return -1;
    }
    PQsetNoticeProcessor(c, pg_quiet, NULL);
    ok = pg_ok(c, sql) && pg_ok(c, sql) &&
         pg_ok(c, "CREATE TABLE IF NOT EXISTS rlk_e2e_log (id bigserial PRIMARY KEY, run text NOT NULL, "
                  "token bigint NOT NULL, slot int, n int, action int)") &&
         pg_ok(c, "DELETE FROM rlk_e2e_log") && pg_ok(c, "DELETE FROM rlk.fence WHERE fence = '" PG_FENCE "'");
    free(sql);
    PQfinish(c);
    return ok ? 0 : -1;
}
#endif

/* ------------------------------------------------------------ one run */

/* After an action the nemesis waits (the action stays "in effect" meanwhile: the writes its
 * pause left behind are counted under it). */
static void settle(long ms)
{
    sleep_ms(ms);
}

/* Stops and reaps every worker (SIGKILL: a failed start) and the fixture. */
static void abandon(void)
{
    int status;

    sh->stop = 1;
    for (int k = 0; k < nslots; k++)
        if (!sh->s[k].dead) {
            kill(sh->s[k].pid, SIGKILL);
            waitpid(sh->s[k].pid, &status, 0);
        }
    topo_stop();
}

/* Fails the master over to data[want]: SENTINEL FAILOVER, again while it is refused (NOGOODSLAVE
 * for a while after the start) or did not complete in 8 s (a loaded machine: the sentinels
 * abort a failover whose promotion they do not see within failover-timeout). 0, or -1 after
 * timeout_ms. */
static int failover(int want, long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms(), left;

    for (;;) {
        if (rlk_fx_sentinel_master(&fx) == want)
            return 0;
        left = timeout_ms - (rlk_fx_now_ms() - t0);
        if (left <= 0) {
            /* What sentinel 0 thinks, for the failure message. */
            redisReply *r = rlk_fx_command(&fx.sentinel[0], "SENTINEL MASTER %s", fx.name);

            for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i + 1 < r->elements; i += 2)
                if (strcmp(r->element[i]->str, "flags") == 0 || strcmp(r->element[i]->str, "failover-state") == 0 ||
                    strcmp(r->element[i]->str, "port") == 0)
                    printf("  sentinel 0: %s %s\n", r->element[i]->str, r->element[i + 1]->str);
            if (r)
                freeReplyObject(r);
            return -1;
        }
        if (rlk_fx_sentinel_wait_promotable(&fx, left) == 0 && rlk_fx_sentinel_master(&fx) == 1 - want &&
            rlk_fx_sentinel_failover(&fx, left < 8000 ? left : 8000) == 0)
            return 0;
        sleep_ms(500);
    }
}

/* Fails the master data node old over to its replica (r->expect_master): CLUSTER FAILOVER on
 * the replica of the slot's master (the master stops taking writes, the replica catches up and
 * takes over, the old master follows it: WAIT 1 is answered at once), or SENTINEL FAILOVER. 0 /
 * -1. */
static int fail_over(int old, run_result *r)
{
    if (cluster_mode) {
        r->expect_master = rlk_fx_cluster_replica_of(&cl, old);
        return r->expect_master >= 0 ? rlk_fx_cluster_failover(&cl, r->expect_master, 30000) : -1;
    }
    r->expect_master = 1 - old;
    if (failover(1 - old, 30000) != 0)
        return -1;
    /* The old master goes on as a master until the sentinels reconfigure it, 8-10 s later;
     * meanwhile the new one has no replica to answer WAIT 1, so every acquisition there would be
     * rolled back. Made a replica of the new master now instead, as the sentinels will (what it
     * took alone, unacknowledged, is dropped by the resync). */
    tk_command_ok(&fx.data[old], "REPLICAOF 127.0.0.1 %d", fx.data[1 - old].port);
    if (rlk_fx_sentinel_wait_demoted(&fx, old, 15000) != 0)
        printf("  the old master did not become a replica of the new one in 15 s\n");
    return 0;
}

static int run(int checked, run_result *r)
{
    const char *name = checked ? "e2echecked" : "e2econtrol";
    unsigned seed = 7u + (unsigned)checked;
    int m, status = 0;
    long long t_end;

    memset(r, 0, sizeof *r);
    for (int res = 0; res < NRES; res++)
        r->entries[res] = -1;
    r->new_master = -1;
    if (topo_start(name) != 0) {
        printf("  cannot start the %s fixture\n", cluster_mode ? "cluster" : "sentinel");
        return -1;
    }
    memset(sh, 0, sizeof *sh);
    nslots = 0;
    sh->action = A_NONE;
    for (int w = 0; w < WORKERS; w++)
        if (spawn(checked) < 0) {
            printf("  fork: %s\n", strerror(errno));
            abandon();
            return -1;
        }

    /* Baseline: no nemesis. */
    someone_holds(5000);
    settle(500);

    sh->action = A_HOLDER_STOP;
    for (int i = 0; i < 4; i++) {
        int k = holder(500, &seed);

        if (k < 0)
            break;
        kill(sh->s[k].pid, SIGSTOP);
        sleep_ms(PAUSE_MS);
        kill(sh->s[k].pid, SIGCONT);
        r->actions[A_HOLDER_STOP]++;
        settle(150);
    }

    sh->action = A_HOLDER_KILL;
    for (int i = 0; i < 3; i++) {
        int k = holder(500, &seed);

        if (k < 0)
            break;
        sh->s[k].dead = 1;
        kill(sh->s[k].pid, SIGKILL);
        waitpid(sh->s[k].pid, &status, 0);
        r->killed++;
        if (spawn(checked) < 0)
            break;
        r->actions[A_HOLDER_KILL]++;
        settle(400);
    }

    sh->action = A_CLIENT_PAUSE;
    for (int i = 0; i < 3; i++) {
        someone_holds(500);
        if ((m = master(2000)) < 0 || rlk_fx_client_pause(node(m), SERVER_PAUSE_MS) != 0)
            continue;
        sleep_ms(SERVER_PAUSE_MS);
        r->actions[A_CLIENT_PAUSE]++;
        settle(300);
    }

    sh->action = A_SERVER_STOP;
    for (int i = 0; i < 3; i++) {
        someone_holds(500);
        if ((m = master(2000)) < 0 || rlk_fx_pause(node(m)) != 0)
            continue;
        sleep_ms(SERVER_PAUSE_MS);
        rlk_fx_resume(node(m));
        r->actions[A_SERVER_STOP]++;
        settle(300);
    }

    sh->action = A_FAILOVER;
    {
        int k = holder(500, &seed), old = master(5000);
        long long t0 = rlk_fx_now_ms();

        if (k >= 0)
            kill(sh->s[k].pid, SIGSTOP);
        if (old >= 0 && fail_over(old, r) == 0) {
            r->actions[A_FAILOVER]++;
            r->failover_ms = rlk_fx_now_ms() - t0;
        } else {
            printf("  the failover did not happen\n");
        }
        if (k >= 0) {
            if (rlk_fx_now_ms() - t0 < PAUSE_MS)
                sleep_ms(PAUSE_MS - (long)(rlk_fx_now_ms() - t0));
            kill(sh->s[k].pid, SIGCONT);
        }
        settle(1500); /* writes on the new master */
    }

    /* Lost replies of fenced writes, on the new master: the checked run's (the control has no
     * fenced write). After the failover, which they would delay if run before: SENTINEL
     * FAILOVER waits for a fresh INFO of the replica, whose age then depends on the time since
     * the start (every 10 s). Up to 15 tries for 3 that lost a reply: a try misses when the
     * holder has no write left to put on the wire while the master is stopped, which on a busy
     * machine (other tests, two CPU burners) happened to all of 6 tries. */
    for (int act = A_LOST_KILL; checked && act <= A_LOST_TIMEOUT; act++) {
        sh->action = act;
        for (int i = 0; i < 15 && r->actions[act] < 3; i++) {
            int k;

            if ((m = master(2000)) < 0)
                continue;
            if ((k = holding(1000, 1)) >= 0 && lost_reply(act, m, k, r) == 1)
                r->actions[act]++;
            settle(300);
        }
    }

    /* The end: every worker resumed and told to stop, then reaped (bounded). */
    sh->stop = 1;
    t_end = rlk_fx_now_ms() + 20000;
    for (int k = 0; k < nslots; k++) {
        if (sh->s[k].dead)
            continue;
        kill(sh->s[k].pid, SIGCONT);
        while (waitpid(sh->s[k].pid, &status, WNOHANG) == 0) {
            if (rlk_fx_now_ms() > t_end) {
                printf("  worker slot %d did not end in time: killed\n", k);
                kill(sh->s[k].pid, SIGKILL);
                waitpid(sh->s[k].pid, &status, 0);
                r->errors++;
                break;
            }
            sleep_ms(10);
        }
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            r->errors++;
    }
    r->slots = nslots;
    for (int k = 0; k < nslots; k++)
        fold(r, k);
    {
        size_t n = 0;
        acq *all = malloc(sizeof(acq) * MAXACQ * MAXSLOTS);

        if (all) {
            for (int k = 0; k < nslots; k++)
                for (int i = 0; i < sh->s[k].nacq; i++)
                    all[n++] = sh->s[k].a[i];
            r->acqs = (long long)n;
            r->token_back = tokens_back(all, n);
            free(all);
        } else {
            r->token_back = -1;
        }
    }
    if (read_redis(r) != 0)
        printf("  could not read %s from the master\n", LOG_KEY);
#ifdef RLK_E2E_PG
    if (!pg_skip && read_pg(r, checked ? "checked" : "control") != 0)
        printf("  could not read the PostgreSQL table\n");
#endif
    topo_stop();
    return 0;
}

static void report(const char *title, const run_result *r)
{
    int nres = pg_skip ? 1 : NRES;

    printf("%s (%s): %d workers (%d killed and replaced), %d holds, %lld acquisitions logged, "
           "%d transient lock results (lost reply, no replica ack, not the master), %d errors; "
           "failover %lld ms, master at the end: data[%d]\n",
           title, rlk_fx_server_name(), r->slots, r->killed, r->holds, r->acqs, r->transient, r->errors,
           r->failover_ms, r->new_master);
    printf("  %-20s %7s %7s", "action", "actions", "no ack");
    for (int res = 0; res < nres; res++)
        printf(" | %-30s", RES_NAME[res]);
    printf("\n  %-20s %7s %7s", "", "", "");
    for (int res = 0; res < nres; res++)
        printf(" | %8s %7s %7s %5s", "accepted", "refused", "unknown", "back");
    printf("\n");
    for (int a = 0; a < NACT; a++) {
        printf("  %-20s %7d %7d", ACT_NAME[a], a == A_NONE ? 0 : r->actions[a], r->noacks[a]);
        for (int res = 0; res < nres; res++)
            printf(" | %8d %7d %7d %5d", r->t[a][res].acc, r->t[a][res].ref, r->t[a][res].unk,
                   r->back_by[a][res]);
        printf("\n");
    }
    for (int res = 0; res < nres; res++) {
        tally s = {0, 0, 0};

        for (int a = 0; a < NACT; a++) {
            s.acc += r->t[a][res].acc;
            s.ref += r->t[a][res].ref;
            s.unk += r->t[a][res].unk;
        }
        printf("  %s: %d accepted, %d stale refused, %d unknown; %lld entries, %d below an earlier "
               "entry's token\n", RES_NAME[res], s.acc, s.ref, s.unk, r->entries[res], r->back[res]);
    }
    for (int res = 0; res < nres; res++) {
        const log_result *lg = &r->lg[res];
        int l = 0, a = 0;

        printf("  %s against the log of writes: %d entries there twice, %d accepted not there, %d refused "
               "there, %d no write was logged for (killed mid-write); unknown outcomes there/not there:",
               RES_NAME[res], lg->dup, lg->acc_missing, lg->ref_present, lg->unlogged);
        for (int k = 0; k < NACT; k++) {
            if (lg->unk_landed[k] + lg->unk_absent[k])
                printf(" %s %d/%d,", ACT_NAME[k], lg->unk_landed[k], lg->unk_absent[k]);
            l += lg->unk_landed[k];
            a += lg->unk_absent[k];
        }
        printf(" in all %d/%d\n", l, a);
    }
    if (r->actions[A_LOST_KILL] + r->actions[A_LOST_TIMEOUT])
        printf("  lost-reply actions: the master stopped %lld ms (kill) and %lld ms (timeout) in all; "
               "%d connections closed by their CLIENT KILLs\n", r->lost_stop_ms[0], r->lost_stop_ms[1],
               r->lost_killed);
    printf("  (no ack: acquisitions rolled back, RLK_ERR_NOREPLICAS, because no replica acknowledged "
           "them; unknown: a write no replica acknowledged, a lost reply, a worker killed mid-write; "
           "back: entries below an earlier entry's token, by the action the entry names)\n");
    printf("  tokens: %lld acquisitions, %lld handed out not above one handed out before they began\n",
           r->acqs, r->token_back);
    fflush(stdout);
}

static void totals(const run_result *r, int res, tally *s)
{
    memset(s, 0, sizeof *s);
    for (int a = 0; a < NACT; a++) {
        s->acc += r->t[a][res].acc;
        s->ref += r->t[a][res].ref;
        s->unk += r->t[a][res].unk;
    }
}

static void check_actions(const run_result *r, int checked)
{
    if (checked) {
        CHECK(r->actions[A_LOST_KILL] > 0);
        CHECK(r->actions[A_LOST_TIMEOUT] > 0);
    }
    CHECK(r->actions[A_HOLDER_STOP] > 0);
    CHECK(r->actions[A_HOLDER_KILL] > 0);
    CHECK(r->actions[A_CLIENT_PAUSE] > 0);
    CHECK(r->actions[A_SERVER_STOP] > 0);
    CHECK_INT_EQ(r->actions[A_FAILOVER], 1);
    CHECKF(r->new_master >= 0 && r->new_master == r->expect_master,
           "the sentinels name data[%d] as master at the end, not the promoted replica data[%d]",
           r->new_master, r->expect_master);
}

/* ------------------------------------------------------------ tests */

static run_result checked_r, control_r;

static void test_token_checker_control(void)
{
    /* Planted: C began after A returned and got a smaller token; B overlaps A (no order). */
    acq v[3] = {{100, 200, 50}, {150, 300, 40}, {250, 400, 45}};
    acq ok[3] = {{100, 200, 50}, {150, 300, 40}, {250, 400, 51}};

    CHECK_INT_EQ(tokens_back(v, 3), 1);
    CHECK_INT_EQ(tokens_back(ok, 3), 0);
}

static void test_log_checker_control(void)
{
    /* Planted: slot 0 wrote (5,0) accepted, (5,1) accepted but missing, (5,2) unknown, there;
     * slot 1 wrote (4,0) refused but there, (6,0) unknown, not there; (5,0) is there twice;
     * (7,0) of slot 1 is there, logged by no one. */
    wrec w0[3] = {{5, 0, A_NONE, O_ACC}, {5, 1, A_NONE, O_ACC}, {5, 2, A_LOST_KILL, O_UNK}};
    wrec w1[2] = {{4, 0, A_HOLDER_STOP, O_REF}, {6, 0, A_LOST_TIMEOUT, O_UNK}};
    const wrec *w[2] = {w0, w1};
    int nw[2] = {3, 2};
    ekey e[5] = {{5, 0, 0}, {5, 0, 2}, {4, 1, 0}, {5, 0, 0}, {7, 1, 0}};
    ekey ok[2] = {{5, 0, 0}, {5, 0, 1}};
    wrec w0ok[2] = {{5, 0, A_NONE, O_ACC}, {5, 1, A_NONE, O_ACC}};
    const wrec *wok[1] = {w0ok};
    int nwok[1] = {2};
    log_result lg;

    check_log(e, 5, w, nw, 2, &lg);
    CHECK_INT_EQ(lg.dup, 1);
    CHECK_INT_EQ(lg.acc_missing, 1);
    CHECK_INT_EQ(lg.ref_present, 1);
    CHECK_INT_EQ(lg.unk_landed[A_LOST_KILL], 1);
    CHECK_INT_EQ(lg.unk_absent[A_LOST_TIMEOUT], 1);
    CHECK_INT_EQ(lg.unlogged, 1);
    check_log(ok, 2, wok, nwok, 1, &lg);
    CHECK_INT_EQ(lg.dup + lg.acc_missing + lg.ref_present + lg.unlogged, 0);
}

static void test_checked(void)
{
    int nres = pg_skip ? 1 : NRES;

    REQUIRE(run(1, &checked_r) == 0);
    report("checked run", &checked_r);
    check_actions(&checked_r, 1);
    for (int res = 0; res < nres; res++) {
        tally s;

        totals(&checked_r, res, &s);
        CHECKF(checked_r.entries[res] >= 0, "%s: not read", RES_NAME[res]);
        CHECKF(checked_r.back[res] == 0, "%s: %d entries below an earlier entry's token", RES_NAME[res],
               checked_r.back[res]);
        CHECKF(s.ref > 0, "%s: no stale write was refused", RES_NAME[res]);
        CHECKF(checked_r.entries[res] >= s.acc && checked_r.entries[res] <= s.acc + s.unk,
               "%s: %lld entries for %d accepted and %d unknown writes", RES_NAME[res],
               checked_r.entries[res], s.acc, s.unk);
        /* What the C API said of each write, against what is there. */
        CHECKF(checked_r.lg[res].dup == 0, "%s: %d entries there twice (a write performed twice)",
               RES_NAME[res], checked_r.lg[res].dup);
        CHECKF(checked_r.lg[res].acc_missing == 0, "%s: %d writes reported accepted are not there",
               RES_NAME[res], checked_r.lg[res].acc_missing);
        CHECKF(checked_r.lg[res].ref_present == 0, "%s: %d writes reported refused are there",
               RES_NAME[res], checked_r.lg[res].ref_present);
        CHECKF(checked_r.lg[res].unlogged <= checked_r.killed,
               "%s: %d entries no write was logged for, %d workers killed", RES_NAME[res],
               checked_r.lg[res].unlogged, checked_r.killed);
    }
    /* The lost replies happened: fenced writes left unknown, and of the timeouts' some ran. */
    CHECKF(checked_r.t[A_LOST_KILL][R_REDIS].unk > 0, "no fenced write lost its reply to CLIENT KILL");
    CHECKF(checked_r.t[A_LOST_TIMEOUT][R_REDIS].unk > 0, "no fenced write lost its reply to a timeout");
    CHECKF(checked_r.lg[R_REDIS].unk_landed[A_LOST_TIMEOUT] > 0,
           "no fenced write that timed out ran once the master resumed");
    CHECK_INT_EQ(checked_r.token_back, 0);
    CHECK(checked_r.acqs > 0);
    CHECK_INT_EQ(checked_r.errors, 0);
}

static void test_control(void)
{
    int nres = pg_skip ? 1 : NRES;

    REQUIRE(run(0, &control_r) == 0);
    report("control run (no check: plain RPUSH, plain INSERT)", &control_r);
    check_actions(&control_r, 0);
    for (int res = 0; res < nres; res++)
        CHECKF(control_r.back[res] > 0, "%s: the control let no stale write land", RES_NAME[res]);
    CHECK_INT_EQ(control_r.token_back, 0);
    CHECK_INT_EQ(control_r.errors, 0);
}

int main(int argc, char **argv)
{
    int rc;

    setvbuf(stdout, NULL, _IOLBF, 0);
    sh = mmap(NULL, sizeof *sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (sh == MAP_FAILED)
        return 1;
    if (argc > 1 && strcmp(argv[1], "--cluster") == 0) {
        cluster_mode = 1;
        argc--;
        argv++;
    }
#ifdef RLK_E2E_PG
    if (getenv("RLK_PG_SKIP"))
        pg_skip = getenv("RLK_PG_SKIP");
    else if (!getenv("PGHOST"))
        pg_skip = "no $PGHOST (run under c/tests/fence/with-postgres)";
    else if (argc < 2)
        pg_skip = "no SQL file given (sql/rlk_fence.sql)";
    if (!pg_skip && pg_setup(argv[1]) != 0) {
        printf("fence_e2e: cannot install %s into PostgreSQL\n", argv[1]);
        return 1;
    }
#else
    (void)argc;
    (void)argv;
    pg_skip = "built without libpq (apt-get install libpq-dev)";
#endif
    if (pg_skip)
        printf("fence_e2e: PostgreSQL resource left out: %s\n", pg_skip);
    RUN_TEST(test_token_checker_control);
    RUN_TEST(test_log_checker_control);
    RUN_TEST(test_checked);
    RUN_TEST(test_control);
    rc = check_summary("fence_e2e");
    if (rc == 0 && pg_skip) {
        printf("SKIP: fence_e2e: the Redis resource passed; PostgreSQL left out: %s\n", pg_skip);
        return RLK_FX_SKIP;
    }
    return rc;
}
