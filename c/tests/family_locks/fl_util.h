/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_util.h - helpers of the lock-family tests (fl_*.c): a lost-lock
 * recorder, a fair-queue probe, a waiter on a thread and its wake-up, the
 * programs' start, and the exclusion invariant's contention run of the
 * exclusive kinds (fl_fenced.c, fl_nrlock.c, fl_spin.c; with a program's
 * own child modes: fl_fairnr.c, fl_fastmulti.c). Hold logs, children,
 * probes and the stall detector come from c/tests/support.
 */
#ifndef RLK_FL_UTIL_H
#define RLK_FL_UTIL_H

#include <stddef.h>

#include "holdlog.h"
#include "tk_util.h"

/* ---------------------------------------------------------------- probes */

/* Bounded poll until LINDEX key index equals value: 0, or -1 on timeout. */
int fl_wait_lindex(const rlk_fx_server *s, const char *key, long index, const char *value,
                   long long timeout_ms);

/* ---------------------------------------------------------------- a waiter on a thread */

typedef struct fl_waiter {
    int (*acquire)(void *lock);     /* the kind's acquire with its wait, run on the thread */
    void *lock;
    int rc;                         /* what acquire returned */
    long long at_ms;                /* when (rlk_fx_now_ms) */
    tk_latch done;
    pthread_t thread;
} fl_waiter;

/* Starts acquire(lock) on a thread: 0, or -1. */
int fl_waiter_start(fl_waiter *w, int (*acquire)(void *lock), void *lock);

/* The wake-up by a release: once the waiter listens on channel (PUBSUB
 * NUMSUB, bounded 5 s) and has not returned, resets stall and calls
 * release(holder) (its result into *release_rc); waits for the waiter (10 s),
 * joins it and prints the delay. Returns the ms from the release to the
 * waiter's return; -1 when the waiter was not subscribed or returned before
 * the release, -2 when it did not return within 10 s. */
long long fl_waiter_woken(fl_waiter *w, const rlk_fx_server *srv, const char *channel,
                          tk_stall *stall, int (*release)(void *holder), void *holder,
                          int *release_rc);

/* ---------------------------------------------------------------- a program's start */

/* What main does before its tests: SIGPIPE ignored, stdout line-buffered
 * (its lines among the checks' in order), the program's path into self (for
 * the children it runs), then tk_suite_start. 0, or -1. */
int fl_suite_begin(const char *name, rlk_fx_server *srv, char *url, size_t len, tk_stall *stall,
                   char *self, size_t self_len);

/* ---------------------------------------------------------------- contention run */

/* One exclusive kind in the contention run: what each child's threads lock. */
typedef struct fl_contender {
    const char *prog;       /* the program's name, for messages */
    /* The lock every thread of a child shares, on the child's client c (the
     * kind fixes its name and set-up), or NULL. */
    void *(*make)(rlk_client *c);
    /* Acquires (lease_ms 0: the watchdog's lease): RLK_OK or the error;
     * *value: what the hold log keeps (the fenced token; else 0). */
    int (*acquire)(void *lock, long long lease_ms, long long *value);
    /* While held, on iteration i of a thread (NULL: nothing): how many of
     * the kind's checks failed. */
    int (*while_held)(void *lock, int i, long long lease_ms, long long value);
    int (*release)(void *lock);
    void (*free)(void *lock);
} fl_contender;

/* The child side: argv "<prog> contend URL THREADS ITERS LOGFILE" (at most
 * 16 threads). Says "ready", waits for "go", then each thread acquires and
 * releases ITERS times (half with a 5 s lease, half with the watchdog's),
 * holding 20..80 us; writes the holds to LOGFILE (tk_holds_save) and says
 * "done <holds> <errors>". Returns the exit status: 0, or 2 for another
 * mode or a failed set-up. */
int fl_child_main(int argc, char **argv, const fl_contender *k);

/* What the parent saw of one contention run. */
typedef struct fl_contend_run {
    int spawned;            /* children started */
    int not_ready;          /* ... that did not say "ready" within 15 s */
    int done;               /* ... that said "done N E" within the run's timeout */
    int unclean;            /* ... that did not exit cleanly within 10 s after */
    int errors;             /* the sum of their E */
    int bad;                /* unreadable hold-log lines */
    long long ms;           /* from "go" to the last log taken */
    tk_hold *recs;          /* every child's holds (free()) */
    size_t n;
    tk_hold_report rep;     /* tk_holds_check(recs, n) */
} fl_contend_run;

/* The parent side: starts procs children of this program (contend url
 * threads iters), each with done_timeout_ms to say "done", collects their
 * hold logs and checks them. 0, or -1 when no temporary directory could
 * be made (nothing run). */
int fl_contend(const char *url, int procs, int threads, int iters, long long done_timeout_ms,
               fl_contend_run *run);
/* The same with the children's mode given ("<mode> URL THREADS ITERS LOGFILE", the program's
 * own child_main), the holds checked with tk_holds_check's verbose. */
int fl_contend_mode(const char *mode, const char *url, int procs, int threads, int iters,
                    long long done_timeout_ms, int verbose, fl_contend_run *run);

/* The run's problems, in one line into why ("" when none): a child not
 * ready, not done or not exiting cleanly, errors, a hold count other than
 * procs * threads * iters, unreadable log lines, overlapping holds.
 * Returns how many kinds of problem it found. */
int fl_contend_problems(const fl_contend_run *run, int procs, int threads, int iters, char *why,
                        size_t len);

#endif /* RLK_FL_UTIL_H */
