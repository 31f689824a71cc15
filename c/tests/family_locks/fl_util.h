/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_util.h - helpers of the lock-family tests (fl_rwlock.c, fl_fair.c,
 * fl_fenced.c): hold records written by child processes and read back by the
 * parent, the interval checks the invariants need, a lost-lock recorder, and
 * a few server probes. The runtime tests' rt_util.h (children, stall
 * detector, latch) does the rest.
 */
#ifndef RLK_FL_UTIL_H
#define RLK_FL_UTIL_H

#include <stddef.h>

#include "rt_util.h"

/* One hold, on CLOCK_MONOTONIC (system-wide: comparable across processes). */
typedef struct fl_rec {
    long long acq_ns;       /* taken right after the lock call returned */
    long long rel_ns;       /* taken right before the unlock was sent */
    long long token;        /* fenced: the token; fair: the acquisition's sequence number */
    int pid;
    int thread;
    int kind;               /* RLK_KIND_READ / RLK_KIND_WRITE / ... */
    int pad;
} fl_rec;

/* Writes n records to path: 0 or -1. */
int fl_log_write(const char *path, const fl_rec *recs, size_t n);
/* Appends the records of path to *recs (grown with realloc); unlinks path.
 * Returns how many were read. */
size_t fl_log_read(const char *path, fl_rec **recs, size_t *n);
/* Sorts by acquisition time. */
void fl_sort(fl_rec *recs, size_t n);

/* Pairs of holds that overlap in time where at least one is exclusive
 * (exclusive(rec) true); prints the first few. */
int fl_exclusive_overlaps(const fl_rec *recs, size_t n, int (*exclusive)(const fl_rec *));
/* The largest number of holds that were held at once (by a sweep). */
int fl_max_concurrency(const fl_rec *recs, size_t n, int (*counted)(const fl_rec *));

/* ---------------------------------------------------------------- lost-lock recorder */

typedef struct fl_lost {
    pthread_mutex_t mu;
    rt_latch fired;
    int count;
    int kind;
    int reason;
    int plain_count;        /* calls of the plain (kind-less) callback */
    char name[128];
    char owner[128];
} fl_lost;

void fl_lost_init(fl_lost *g);
void fl_lost_destroy(fl_lost *g);
/* Installs both callbacks on c, recording into g. */
void fl_lost_install(rlk_client *c, fl_lost *g);

/* ---------------------------------------------------------------- probes */

/* A command on a fresh connection whose reply is an integer; def on error. */
long long fl_int(const rlk_fx_server *s, const char *fmt, ...);
/* Server TIME in ms since the epoch, or -1. */
long long fl_server_ms(const rlk_fx_server *s);
/* Bounded poll until LINDEX key index equals value: 0, or -1 on timeout. */
int fl_wait_lindex(const rlk_fx_server *s, const char *key, long index, const char *value,
                   long long timeout_ms);

/* rt_say for several threads: the whole line under the stream's lock. */
void fl_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* " - a scheduling stall, not a lock bug" when the detector saw one. */
const char *fl_stall_note(rt_stall *s);

#endif /* RLK_FL_UTIL_H */
