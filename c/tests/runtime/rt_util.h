/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_util.h - helpers for the lock runtime's tests: clients on a fixture
 * server, a scheduling-stall detector, child processes (this same program
 * in a child mode, talking over pipes), server-side probes (PUBSUB NUMSUB,
 * CLIENT LIST / KILL by name), and a one-shot latch.
 */
#ifndef RLK_RT_UTIL_H
#define RLK_RT_UTIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/types.h>

#include <rlk.h>

#include "fixture.h"

/* A client on url with the given watchdog lease (<= 0: default) and pool
 * size (<= 0: default). NULL (after printing why) on failure. */
rlk_client *rt_connect(const char *url, long long watchdog_lease_ms, int pool_size);

/* ---------------------------------------------------------------- stall detector */

/* A thread that ticks every 2 ms and keeps the longest gap between two
 * ticks: a gap far above 2 ms means the machine stalled (all threads
 * stopped), which a timing assertion reports instead of a false bug. */
typedef struct rt_stall {
    pthread_t thread;
    atomic_int stop;
    atomic_llong max_gap_ns;
} rt_stall;

void rt_stall_start(rt_stall *s);
void rt_stall_reset(rt_stall *s);
long long rt_stall_max_gap_ms(rt_stall *s);
void rt_stall_stop(rt_stall *s);
/* A gap this long (ms) counts as a stall in failure messages. */
#define RT_STALL_MS 100

/* ---------------------------------------------------------------- latch */

typedef struct rt_latch {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int count;
} rt_latch;

void rt_latch_init(rt_latch *l);
void rt_latch_destroy(rt_latch *l);
void rt_latch_add(rt_latch *l, int n);
/* Waits until count >= target or timeout_ms passed; returns count. */
int rt_latch_wait(rt_latch *l, int target, long long timeout_ms);
int rt_latch_get(rt_latch *l);

/* ---------------------------------------------------------------- server probes */

/* PUBSUB NUMSUB channel: subscribers, or -1 on error. */
long long rt_numsub(const rlk_fx_server *s, const char *channel);
/* Bounded poll until PUBSUB NUMSUB channel >= min. 0, or -1 on timeout. */
int rt_wait_numsub(const rlk_fx_server *s, const char *channel, long long min, long long timeout_ms);
/* Waits until the channel has at most max subscribers; 0, or -1 after timeout_ms. */
int rt_wait_numsub_at_most(const rlk_fx_server *s, const char *channel, long long max,
                           long long timeout_ms);
/* CLIENT KILL ID for every connection whose name is name; returns how many. */
int rt_kill_clients_named(const rlk_fx_server *s, const char *name);
/* Number of connections named name, or -1 on error. */
int rt_count_clients_named(const rlk_fx_server *s, const char *name);
/* EXISTS key on a fresh connection: 1, 0, or -1 on error. */
int rt_key_exists(const rlk_fx_server *s, const char *key);

/* ---------------------------------------------------------------- child processes */

typedef struct rt_child {
    pid_t pid;
    int in_fd;      /* the child's stdin */
    int out_fd;     /* the child's stdout */
    char buf[4096];
    size_t len;
} rt_child;

/* Runs this program (/proc/self/exe) with args (NULL-terminated; args[0]
 * becomes argv[1]). The child dies with the test (PR_SET_PDEATHSIG). */
int rt_child_spawn(rt_child *ch, const char *const *args);
/* Reads one line (without the newline) within timeout_ms: 0, or -1. */
int rt_child_read_line(rt_child *ch, char *line, size_t len, long long timeout_ms);
/* Writes a line to the child's stdin: 0 or -1. */
int rt_child_send(rt_child *ch, const char *line);
/* Waits for the exit within timeout_ms (SIGKILL after): the wait status, or -1. */
int rt_child_wait(rt_child *ch, long long timeout_ms);
/* SIGKILL, reap, close the pipes. Safe on a finished child. */
void rt_child_kill(rt_child *ch);

/* In a child: prints one line to stdout and flushes it. */
void rt_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Busy-waits about ns nanoseconds (jitter inside a critical section or to
 * vary an interleaving; never used to wait for an event). */
void rt_spin_ns(long long ns);

/* A small xorshift generator, seeded per thread. */
unsigned rt_rand(unsigned *state);

#endif /* RLK_RT_UTIL_H */
