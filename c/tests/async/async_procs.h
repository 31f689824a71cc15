/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_procs.h - several processes on one lock, for the async suites on one
 * server (async_cases.c: mutex_procs, kill_holder) and on a Redis Cluster
 * (async_cluster.c: procs, kill_holder). Everything takes the URL, so the
 * same code runs on redis://, rediss://, redis+cluster:// and
 * rediss+cluster://.
 *
 * ap_contend() forks async and blocking processes (separate processes, one
 * client each, never threads) that lock and unlock one name of one kind
 * (RLK_KIND_LOCK, RLK_KIND_FAIR or RLK_KIND_WRITE: the write side of the
 * read-write lock; or the non-reentrant lock and fair lock, or the spin
 * lock: the variant), each hold stamped on CLOCK_MONOTONIC into a hold log
 * (holdlog.h) and held AP_HOLD_NS (busy) so that an overlap would show.
 * The parent merges the logs and checks them: the report's conflicts must
 * be 0; handoffs counts the consecutive holds (in start order) of which one
 * is an async process's and the other a blocking one's.
 *
 * ap_holder_start() forks a child that takes a lock (with a lease, or the
 * watchdog) and holds it until it is killed.
 *
 * The suites' requests and clients (async_cases.c, async_elect.c,
 * async_cluster.c): a request's outcome (ap_res) with the rules of
 * rlk_async.h checked on every callback, and a client on its own loop.
 */
#ifndef RLK_TEST_ASYNC_PROCS_H
#define RLK_TEST_ASYNC_PROCS_H

#include <sys/types.h>

#include "aloop.h"
#include "async_test.h"
#include "cluster.h"
#include "fixture.h"
#include "holdlog.h"
#include "rlk.h"
#include "rlk_async.h"

#define AP_TASKS 4                  /* tasks of each async process */
#define AP_HOLD_NS 1000000LL        /* each hold lasts this long */

#define AP_PLAIN 0                  /* rlk_async_lock; rlk_lock, rlk_fairlock, rlk_rwlock */
#define AP_NR 1                     /* rlk_async_lock_nr; rlk_nrlock, rlk_fairlock non-reentrant */
#define AP_SPIN 2                   /* rlk_async_lock_spin; rlk_lock with rlk_lock_set_spin */

typedef struct ap_run {
    const char *url;
    int kind;                       /* RLK_KIND_LOCK, RLK_KIND_FAIR, RLK_KIND_WRITE */
    int variant;                    /* AP_PLAIN, AP_NR (LOCK, FAIR), AP_SPIN (LOCK) */
    const char *name;
    int async_procs;                /* processes with AP_TASKS tasks each on one loop */
    int blocking_procs;             /* processes with one blocking client */
    int iters;                      /* per async task; a blocking process does 2 * iters */
    long long wait_ms;              /* each acquire's wait */
    int cmd_timeout_ms;             /* the clients' command timeout */
    int own_names;                  /* the control: each async task and blocking process locks
                                       a name of its own in name's slot ("{name}:own<pid>.<task>";
                                       a tagged name: "name:own<pid>.<task>"),
                                       so the check must find overlaps */
} ap_run;

typedef struct ap_result {
    tk_hold_report rep;             /* of the merged logs (rep.holds, rep.conflicts) */
    long handoffs;                  /* async <-> blocking, consecutive holds */
    int expected;                   /* holds there would be if every acquire succeeded */
    int child_failures;             /* children that did not exit 0 */
    int bad_lines;                  /* malformed log lines */
} ap_result;

/* Runs the processes, waits for them (each bounded by its own loop's time),
 * merges and checks the logs. 0, or -1 when it could not start them. */
int ap_contend(const ap_run *run, ap_result *out);

/* Forks a child that locks name (kind, task 1; lease_ms > 0, or -1 with
 * its client's watchdog of watchdog_ms), says so on a pipe, then runs its
 * loop (renewing) until it is killed (at most 120 s; it dies with its
 * parent). Returns the child's pid once it holds the lock (bounded: 15 s),
 * or -1. */
pid_t ap_holder_start(const char *url, int kind, const char *name, long long lease_ms,
                      long long watchdog_ms);

/* ---------------------------------------------------------------- requests and clients */

/* The rules every request's callback keeps (rlk_async.h): it comes exactly
 * once, never from inside the call that made the request (ap_in_call: set
 * around it by AP_REQ), never after rlk_async_free returned (ap_freed: set by
 * ap_cl_close, cleared by ap_cl_open). ap_rule_breaks counts the breaks. */
extern int ap_in_call;
extern int ap_freed;
extern int ap_rule_breaks;
/* 1 (the default): ap_freed counts; a suite that keeps several clients open
 * at once sets 0 (ap_freed is one flag for all of them). */
extern int ap_freed_tracked;

/* One request's outcome. */
typedef struct ap_res {
    int calls;
    int err;
    long long value;
    char id[128];
    char errstr[256];
    long long at_ms;
    rlk_elect_info info;            /* an election observer's read (holder, value copied) */
    int has_info;
} ap_res;

/* Records r into x (an ap_res) and counts a broken rule. */
void ap_res_note(ap_res *x, const rlk_async_result *r);
/* The callback of a request whose arg is an ap_res. */
void ap_on_res(rlk_async *ac, const rlk_async_result *r, void *p);
/* An election observer's callback (rlk_async_elect_fn) whose arg is an
 * ap_res: records r and copies the info (holder, value) into it. */
void ap_on_info(rlk_async *ac, const rlk_async_result *r, const rlk_elect_info *info, void *p);
/* Frees x's copied info and zeroes it. */
void ap_res_clear(ap_res *x);
/* aloop_run_until's condition: the ap_res p has its callback. */
int ap_res_done(void *p);
rlk_async_req *ap_req_end(rlk_async_req *r);
/* A request call, with ap_in_call set around it. */
#define AP_REQ(expr) ap_req_end((ap_in_call = 1, (expr)))

/* A client on its own loop. */
typedef struct ap_cl {
    aloop *l;
    rlk_async *ac;
} ap_cl;

/* Opens c on url: watchdog_ms, margin_ms (the lost margin) and the command
 * timeout set when > 0. 0, or -1. */
int ap_cl_open(ap_cl *c, const char *url, long long watchdog_ms, long long margin_ms,
               int cmd_timeout_ms);
void ap_cl_close(ap_cl *c);
/* Runs c's loop until x has its callback (bounded by ms): 1 done. */
int ap_wait_res(ap_cl *c, ap_res *x, long long ms);
/* r's integer, else -99 (r NULL, or another reply); frees r. */
long long ap_reply_int(redisReply *r);
/* A command on srv whose reply is an integer: that, else -99. */
long long ap_srv_int(const rlk_fx_server *srv, const char *fmt, const char *arg);

/* ---------------------------------------------------------------- cluster programs */

/* The main of a program on one Redis Cluster (async_cluster.c, async_clkinds.c):
 * starts cl, writes "redis+cluster://<node 0>,<node 1>" (rediss+ on a TLS-only
 * cluster, $RLK_TEST_TLS) into url and the masters' node indexes into mst, runs
 * the cases named in argv (none: all, in order), each timed, stops cl. Returns
 * the program's check_summary's code (run and summary are the program's
 * check_run and check_summary: check.h counts per translation unit), 1 when
 * the cluster did not start or lacks 3 masters. AP_CLUSTER_MAIN passes them. */
int ap_cluster_main(const char *prog, int argc, char **argv, rlk_fx_cluster *cl, char *url,
                    size_t len, int mst[3], const at_case *cases, size_t ncases,
                    at_check_run_fn run, at_check_summary_fn summary);
#define AP_CLUSTER_MAIN(prog, argc, argv, cl, url, mst, cases)                                  \
    ap_cluster_main((prog), (argc), (argv), (cl), (url), sizeof(url), (mst), (cases),           \
                    AT_NCASES(cases), check_run, check_summary)

/* ---------------------------------------------------------------- worker tasks */

/* One of the tasks of an async worker process (several on one client, one
 * loop): step(t) makes its next request while iter < iters; the request's
 * callbacks stamp the hold into the log fd (holdlog.h, id task, seq),
 * count a failed iteration in fails, advance iter and call step again. */
typedef struct ap_wtask {
    ap_cl *c;
    int fd;                         /* the process's hold log */
    unsigned long long task;        /* 1, 2, ...: the task id and the hold log's id */
    int iter, iters, seq, fails;
    void (*step)(struct ap_wtask *t);
} ap_wtask;

/* In a child process: opens a client on url (the command timeout
 * cmd_timeout_ms) and the hold log log, starts ntasks tasks (task 1..ntasks)
 * with step, and runs the loop until each did iters iterations, bounded by
 * bound_ms. The child's exit status: 0; 3 no client or log; 4 the bound
 * passed; 5 an iteration failed. */
int ap_tasks_child(const char *url, int cmd_timeout_ms, const char *log, int ntasks, int iters,
                   void (*step)(ap_wtask *t), long long bound_ms);

#endif /* RLK_TEST_ASYNC_PROCS_H */
