/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tk_util.h - test helpers shared by every suite: clients on a fixture
 * server, a scheduling-stall detector, child processes (this same program
 * in a child mode, talking over pipes), server-side probes (PUBSUB NUMSUB,
 * CLIENT LIST / KILL by name), and a one-shot latch.
 */
#ifndef RLK_TK_UTIL_H
#define RLK_TK_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include <rlk.h>
#include <rlk_async.h>
#include <rlk_async_poll.h>

#include "fixture.h"
#include "holdlog.h"

/* A client on url with the given watchdog lease (<= 0: default) and pool
 * size (<= 0: default). NULL (after printing why) on failure. */
rlk_client *tk_connect(const char *url, long long watchdog_lease_ms, int pool_size);

/* ---------------------------------------------------------------- stall detector */

/* A thread that ticks every 2 ms and keeps the longest gap between two
 * ticks: a gap far above 2 ms means the machine stalled (all threads
 * stopped), which a timing assertion reports instead of a false bug. */
typedef struct tk_stall {
    pthread_t thread;
    atomic_int stop;
    atomic_llong max_gap_ns;
} tk_stall;

void tk_stall_start(tk_stall *s);
void tk_stall_reset(tk_stall *s);
long long tk_stall_max_gap_ms(tk_stall *s);
void tk_stall_stop(tk_stall *s);
/* A gap this long (ms) counts as a stall in failure messages. */
#define TK_STALL_MS 100

/* The server's side of a stall: a thread PINGs srv every 2 ms on its own
 * connection and keeps the longest round trip. A redis-server that is not
 * scheduled for a while (a loaded machine) expires keys by the wall clock
 * when it runs again, before it reads the renewals that wait in its socket
 * buffers: the client's own stall detector cannot see that. A round trip
 * that fails (server stopped or gone) counts from its send until the probe
 * gets through again. */
typedef struct tk_srv_stall {
    pthread_t thread;
    atomic_int stop;
    atomic_llong max_rtt_ns;
    int port;
    char ctl_path[RLK_FX_PATH_MAX];     /* a TLS-only server's control socket, else "" */
} tk_srv_stall;

int tk_srv_stall_start(tk_srv_stall *p, const rlk_fx_server *srv);   /* 0, or -1: no probe */
void tk_srv_stall_reset(tk_srv_stall *p);
long long tk_srv_stall_max_ms(tk_srv_stall *p);
void tk_srv_stall_stop(tk_srv_stall *p);

/* ---------------------------------------------------------------- a program's server */

/* What most test programs' main does first: starts one server (defaults),
 * writes its URL into url, starts the stall detector (stall may be NULL).
 * 0, or -1 after printing "<name>: cannot start redis-server". */
int tk_suite_start(const char *name, rlk_fx_server *srv, char *url, size_t len, tk_stall *stall);
/* Stops the stall detector (NULL: none) and the server. */
void tk_suite_stop(rlk_fx_server *srv, tk_stall *stall);

/* Functions mode (tk_functions.c), called by the two above: with
 * $RLK_TEST_FUNCTIONS = the path of docs/acl.md, loads the library rlk, makes
 * the FCALL-only user of the page's "user appfn" line (patterns ~* &*), proves
 * EVAL / EVALSHA / SCRIPT refused for it, and writes a URL naming it: 1; 0 when
 * the variable is unset; -1 on failure. The check: FCALL ran and no EVAL /
 * EVALSHA (INFO commandstats); 0, or -1 after a "FAIL" line (then
 * tk_suite_stop exits 1). */
int tk_functions_setup(rlk_fx_server *srv, char *url, size_t len);
int tk_functions_check(rlk_fx_server *srv);

/* ---------------------------------------------------------------- latch */

typedef struct tk_latch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
} tk_latch;

void tk_latch_init(tk_latch *l);
void tk_latch_destroy(tk_latch *l);
void tk_latch_add(tk_latch *l, int n);
/* Waits until count >= target or timeout_ms passed; returns count. */
int tk_latch_wait(tk_latch *l, int target, long long timeout_ms);
int tk_latch_get(tk_latch *l);

/* ---------------------------------------------------------------- lost reports */

/* What a lost callback reported last (rlk_set_lost_callback / _kind with tk_on_lost /
 * tk_on_lost_kind and a tk_lost_rec as its argument): fired counts the reports (tk_latch_get). */
typedef struct tk_lost_rec {
    pthread_mutex_t mu;
    tk_latch fired;
    int kind, reason;           /* kind -1: reported by tk_on_lost */
    int plain_count;            /* calls of the plain callback beside the kind's (tk_lost_install) */
    long long at_ns;            /* rlk_fx_now_ns() at the report */
    char name[128];
    char owner[128];
} tk_lost_rec;

void tk_lost_init(tk_lost_rec *g);
void tk_lost_destroy(tk_lost_rec *g);
void tk_on_lost(const char *name, const char *owner, int reason, void *ud);
void tk_on_lost_kind(int kind, const char *name, const char *owner, int reason, void *ud);
/* Both callbacks on c: the kind's records into g, the plain one only counts (plain_count). */
void tk_lost_install(rlk_client *c, tk_lost_rec *g);
/* Waits up to timeout_ms for a first report; ms from t0_ns (rlk_fx_now_ns) to it, or -1. */
long long tk_lost_ms_after(tk_lost_rec *g, long long t0_ns, long long timeout_ms);
/* In a test (check.h): ms, from tk_lost_ms_after, is a report within bound_ms of what t0 was. */
#define TK_CHECK_LOST_WITHIN(ms, bound_ms, stall, what)                                      \
    CHECKF((ms) >= 0 && (ms) < (bound_ms),                                                   \
           "lost callback %lld ms after " what " (-1: none; bound %lld ms; longest "         \
           "scheduling gap %lld ms%s)", (long long)(ms), (long long)(bound_ms),              \
           tk_stall_max_gap_ms(stall), tk_stall_note(stall))

/* ---------------------------------------------------------------- a lock waiter */

/* A thread that waits for a lock: rlk_lock_try_lock(lock, wait_ms, 0), then notes when it
 * returned. Give the lock an owner (rlk_lock_set_owner) when another thread releases it. */
typedef struct tk_waiter {
    rlk_lock *lock;
    long long wait_ms;
    int rc;                  /* its rlk code once joined; 0 while waiting */
    long long acquired_ns;   /* CLOCK_MONOTONIC when it returned; 0 while waiting */
    tk_latch started;
    pthread_t thread;
} tk_waiter;

/* Starts the thread and returns once it runs (bounded: 5 s). 0 / -1. */
int tk_waiter_start(tk_waiter *w, rlk_lock *lock, long long wait_ms);
void tk_waiter_join(tk_waiter *w);

/* The port of the server a client uses now (rlk_client_server), -1 when none. */
int tk_client_port(rlk_client *c);
/* Bounded poll until c uses port. 0 / -1. */
int tk_wait_client_port(rlk_client *c, int port, long long timeout_ms);

/* ---------------------------------------------------------------- server probes */

/* The script calls s has served (EVAL, EVALSHA, FCALL, FCALL_RO in INFO commandstats), or -1:
 * a client's attempts seen from the server. */
long long tk_script_calls(const rlk_fx_server *s);
/* The count of a PUBSUB NUMSUB or SHARDNUMSUB reply for one channel, or -1
 * when r is NULL or not that reply; frees r. */
long long tk_numsub_reply(redisReply *r);
/* PUBSUB NUMSUB channel: subscribers, or -1 on error. */
long long tk_numsub(const rlk_fx_server *s, const char *channel);
/* The same on an open connection ctx (one made before the server refused new ones). */
long long tk_numsub_ctx(redisContext *ctx, const char *channel);
/* Subscribers of every channel PUBSUB CHANNELS pattern lists (NUMSUB of each, summed), or -1. */
long long tk_numsub_matching(const rlk_fx_server *s, const char *pattern);
/* Bounded poll until PUBSUB NUMSUB channel >= min. 0, or -1 on timeout. */
int tk_wait_numsub(const rlk_fx_server *s, const char *channel, long long min, long long timeout_ms);
/* Waits until the channel has at most max subscribers; 0, or -1 after timeout_ms. */
int tk_wait_numsub_at_most(const rlk_fx_server *s, const char *channel, long long max,
                           long long timeout_ms);
/* CLIENT KILL ID for every connection whose name is name; returns how many. */
int tk_kill_clients_named(const rlk_fx_server *s, const char *name);
/* Number of connections named name, or -1 on error. */
int tk_count_clients_named(const rlk_fx_server *s, const char *name);
/* A command on a fresh connection (printf-style, %b for binary) whose reply
 * is read as a number: an integer, a numeric string (atoll), -1 for nil,
 * -999 for anything else or a connection error. */
long long tk_int(const rlk_fx_server *s, const char *fmt, ...);
/* tk_int, but nil is 0 (a count or hash field that is not there). */
long long tk_count(const rlk_fx_server *s, const char *fmt, ...);
/* 1 once key is gone (EXISTS 0: its TTL ran out), polled every 20 ms for at most ms; else 0. */
int tk_key_gone_within(const rlk_fx_server *s, const char *key, long long ms);
/* The one field of hash name (a lock held by one holder: its holder's field) into field (cut to
 * len): 0, else -1 (not a hash of exactly one field). */
int tk_hash_one_field(const rlk_fx_server *s, const char *name, char *field, size_t len);
/* A command on a fresh connection whose reply is read as a string into buf
 * (cut to len): a string or status reply's text, "" for anything else. Returns buf. */
const char *tk_str(const rlk_fx_server *s, char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* A command on a fresh connection, reply dropped: 0, or -1 on a connection
 * error or an error reply. */
int tk_command_ok(const rlk_fx_server *s, const char *fmt, ...);
/* Server TIME in ms since the epoch, or -1. */
long long tk_server_ms(const rlk_fx_server *s);
/* Bounded poll (5 ms) until tk_int(s, fmt, arg) >= want: 0, or -1 after timeout_ms. */
int tk_wait_int_at_least(const rlk_fx_server *s, long long want, long long timeout_ms,
                         const char *fmt, const char *arg);
/* EXISTS key on a fresh connection: 1, 0, or -1 on error. */
int tk_key_exists(const rlk_fx_server *s, const char *key);
/* calls=N of cmdstat_<cmd> in INFO commandstats (the commands scripts run count
 * too): N, 0 when it has not run, -1 on error. cmd in lower case. */
long long tk_command_calls(const rlk_fx_server *s, const char *cmd);

/* ---------------------------------------------------------------- refused connections */

/* The server refusing new connections (CONFIG SET maxclients to the number connected now):
 * every connection open before goes on working, a new one (a waiter's subscriber that has
 * not connected yet) is refused until tk_refuse_end. The first-attempt window (a ticket queued
 * before its waiter can hear a grant) held open for as long as a test needs, with no timing
 * involved. ctl: the test's own connection, opened by tk_refuse_begin, for every probe
 * meanwhile (tk_int's fresh connections would be refused). */
typedef struct tk_refuse {
    redisContext *ctl;
    long long maxclients;       /* to restore; -1: not changed */
    long long rejected0;        /* INFO stats rejected_connections when it began */
} tk_refuse;
/* 0, or -1 (nothing changed). */
int tk_refuse_begin(tk_refuse *r, const rlk_fx_server *s);
/* Bounded poll (2 ms): until the server has refused a connection since tk_refuse_begin (a
 * client tried to open one). 0, or -1 after timeout_ms. */
int tk_refuse_wait_rejected(tk_refuse *r, long long timeout_ms);
/* Restores maxclients and closes ctl; 0, or -1 when maxclients could not be restored.
 * Idempotent. */
int tk_refuse_end(tk_refuse *r);
/* A command on ctx read as a number, as tk_int. */
long long tk_ctx_int(redisContext *ctx, const char *fmt, ...);
/* The index in the list key (a queue of tickets, "<ticket>" or "<ticket> <permits>") of the
 * first entry whose ticket belongs to the client with wake-channel id cid (ticket / 1024 ==
 * cid), -1 when none does, -2 on an error. */
long long tk_queue_find_cid(redisContext *ctx, const char *key, long long cid);
/* Bounded poll (timeout_ms) on ctx until client cid has a ticket in the queue key and channel a
 * subscriber: the ticket's position as tk_queue_find_cid gives it (< 0: not seen in time). */
long long tk_wait_queued_subscribed(redisContext *ctx, const char *key, long long cid,
                                    const char *channel, long long timeout_ms);
/* The wake-channel id of a client from its uuid or an owner id "<uuid>:<thread>": 32768 + the
 * first 4 hex digits & 32767, as kinds/lock.c draws it. */
long long tk_uuid_cid(const char *uuid);

/* ---------------------------------------------------------------- child processes */

typedef struct tk_child {
    pid_t pid;
    int in_fd;      /* the child's stdin */
    int out_fd;     /* the child's stdout */
    char buf[4096];
    size_t len;
} tk_child;

/* Runs this program (/proc/self/exe) with args (NULL-terminated; args[0]
 * becomes argv[1]). The child dies with the test (PR_SET_PDEATHSIG). */
int tk_child_spawn(tk_child *ch, const char *const *args);
/* For the first-attempt window's tests: spawns waiter B (args), reads its "ready <client
 * uuid>" line and puts its client id in *cid_b. 0; 1 when B drew A's wake channel (cid_a:
 * the run can say nothing, B killed, said); -1 when B did not get ready (killed, said). */
int tk_window_spawn(tk_child *kid, const char *const *args, long long cid_a, long long *cid_b);
/* Reads one line (without the newline) within timeout_ms: 0, or -1. */
int tk_child_read_line(tk_child *ch, char *line, size_t len, long long timeout_ms);
/* Writes a line to the child's stdin: 0 or -1. */
int tk_child_send(tk_child *ch, const char *line);
/* Waits for the exit within timeout_ms (SIGKILL after): the wait status, or -1. */
int tk_child_wait(tk_child *ch, long long timeout_ms);
/* SIGSTOP, and waits until the kernel reports the child stopped (every thread of it): 1
 * stopped, else 0. */
int tk_child_stop(tk_child *ch);
/* SIGKILL, reap, close the pipes. Safe on a finished child. */
void tk_child_kill(tk_child *ch);

/* In a child with worker threads: says "ready", waits for a "go" line on
 * stdin, then runs fn on `threads` threads (at most 64), each given a
 * tk_thread_arg {ctx, idx}, and joins them. 0, or -1 when no "go" came or a
 * thread could not start. */
typedef struct tk_thread_arg {
    void *ctx;
    int idx;
} tk_thread_arg;
int tk_child_go_threads(int threads, void *(*fn)(void *), void *ctx);

/* In the parent: spawns n children of this program with args (as
 * tk_child_spawn), args[log_arg] replaced by "<dir>/log.<p>" for child p
 * (log_arg < 0: none). Returns how many were spawned (stops at the first
 * failure). */
int tk_children_spawn(tk_child *kids, int n, const char *const *args, int log_arg,
                      const char *dir);
/* The common contention protocol: n children "contend URL THREADS ITERS
 * <dir>/log.<p>" (each says "ready", waits for "go", runs, writes its hold
 * log and says "done ..."). Returns how many were spawned. */
int tk_children_spawn_contend(tk_child *kids, int n, const char *url, int threads, int iters,
                              const char *dir);
/* Sends line to each of n children; how many took it. */
int tk_children_send(tk_child *kids, int n, const char *line);
/* tk_holds_take (holdlog.h) of <dir>/log.0 .. log.<n-1>: appends to *holds,
 * removes the files; returns how many holds were added. */
size_t tk_children_take_logs(const char *dir, int n, tk_hold **holds, size_t *count, int *bad);
/* The path tk_children_spawn gave child p's log, into buf. */
const char *tk_child_log(char *buf, size_t len, const char *dir, int p);

/* In a child: prints one line to stdout and flushes it, the whole line under
 * the stream's lock (safe from several threads). */
void tk_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* " - a scheduling stall, not a lock bug" when the stall detector saw a gap
 * above TK_STALL_MS, else "": for timing failure messages. */
const char *tk_stall_note(tk_stall *s);

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ms: changes when the wall clock jumps
 * (Redis expires keys by the wall clock). */
long long tk_wall_offset_ms(void);

/* Busy-waits about ns nanoseconds (jitter inside a critical section or to
 * vary an interleaving; never used to wait for an event). */
void tk_spin_ns(long long ns);

/* A small xorshift generator, seeded per thread. */
unsigned tk_rand(unsigned *state);

/* ---------------------------------------------------------------- keys as they were */

/* Makes key on srv by the command words (at most n of them, ended by NULL; the word "%s" stands
 * for key), then PEXPIRE key pexpire_ms when that is > 0: an application's data or a kind's
 * layout written by hand. */
void tk_make_key(const rlk_fx_server *srv, const char *const *words, size_t n, const char *key,
                 long long pexpire_ms);
/* DUMP of key as bytes (the caller frees; NULL: no key) with *len, and its PTTL in *pttl (-3:
 * unreadable): compared before and after a call, they show the key left byte for byte. */
char *tk_dump(const rlk_fx_server *srv, const char *key, size_t *len, long long *pttl);

/* An async request's result, as tk_ares_cb (its callback; privdata: the tk_ares) keeps it. */
typedef struct tk_ares {
    int done, err;
    long long value;
    char errstr[256];
} tk_ares;
void tk_ares_cb(rlk_async *ac, const rlk_async_result *r, void *p);
/* Turns p's loop until x's result came or ms passed: 1 when it came. */
int tk_ares_run(rlk_async_poll *p, tk_ares *x, long long ms);
/* req's result (x, req's privdata) within 20 s: its err; -1000 when req is NULL or none came. */
int tk_ares_call(rlk_async_poll *p, rlk_async_req *req, tk_ares *x);

#endif /* RLK_TK_UTIL_H */
