/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fs_util.h - helpers of the family_sync tests: event logs that child
 * processes append to (one write per event, so a SIGKILL never leaves half
 * a record), holds rebuilt from them, the peak of concurrently held permits
 * over those holds, one-write output lines from child threads, and notes
 * for timing failures (scheduling stalls, wall-clock jumps).
 */
#ifndef RLK_FS_UTIL_H
#define RLK_FS_UTIL_H

#include <stddef.h>

#include "rt_util.h"

/* ---------------------------------------------------------------- event logs */

enum { FS_ACQ = 1, FS_REL = 2 };

typedef struct fs_event {
    int pid;
    int thread;
    int seq;                /* per thread: pairs an FS_REL with its FS_ACQ */
    int type;
    long long permits;
    long long t1_ns;        /* FS_ACQ: acquire sent; FS_REL: release about to be sent */
    long long t2_ns;        /* FS_ACQ: acquire replied (held from here) */
} fs_event;

/* Opens path for appending (created 0600). -1 on failure. */
int fs_log_open(const char *path);
/* One write(2) of the event. 0 or -1. */
int fs_log_write(int fd, const fs_event *ev);

/* A hold seen by its holder: [start_ns, end_ns] (CLOCK_MONOTONIC). */
typedef struct fs_hold {
    int pid;
    int thread;
    long long permits;
    long long sent_ns;
    long long start_ns;     /* the acquire's reply */
    long long end_ns;       /* the release's send; for an open hold see fs_holds_read */
    int open;               /* acquired, never released (the holder was killed) */
} fs_hold;

/* Reads the event logs paths[0..npaths-1] and pairs them into holds. An
 * open hold ends at sent_ns + open_extra_ns (its lease: when the server
 * takes the permits back), or never (LLONG_MAX) when open_extra_ns < 0.
 * *out is malloc'd; returns the count (0 with *out NULL on failure). */
size_t fs_holds_read(const char *const *paths, int npaths, long long open_extra_ns, fs_hold **out);

/* The largest sum of permits held at one moment (an end at the same ns as
 * a start does not overlap it). */
long long fs_peak_permits(const fs_hold *holds, size_t n);

/* ---------------------------------------------------------------- server */

/* One command (printf-style, as redisCommand; %b for binary) on a fresh
 * connection, reply dropped. 0, or -1 on a connection error or an error reply. */
int fs_command(const rlk_fx_server *s, const char *fmt, ...);

/* ---------------------------------------------------------------- output, notes */

/* In a child: formats one line and writes it to stdout with one write(2)
 * (safe from several threads). */
void fs_say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* CLOCK_REALTIME - CLOCK_MONOTONIC in ms: changes when the wall clock jumps
 * (Redis expires keys by the wall clock). */
long long fs_wall_offset_ms(void);

/* " - a scheduling stall (...)" when the stall detector saw one, else "". */
const char *fs_stall_note(rt_stall *s);

#endif /* RLK_FS_UTIL_H */
