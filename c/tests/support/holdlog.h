/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * holdlog.h - the one hold-log format and the one overlap checker.
 *
 * A hold is one stretch of time a process (thread) believed it held a lock,
 * a lock mode or some permits: [start_ns, end_ns] on CLOCK_MONOTONIC
 * (absolute: system-wide, so files written by several processes - and by
 * other implementations - merge). start_ns is taken right after the acquire
 * returned, end_ns right before the release is sent.
 *
 * On disk a log is text, one line per event, each line one write(2) to a
 * file opened with O_APPEND (lines of several processes never interleave,
 * and a SIGKILL never leaves half a line):
 *
 *   B <pid> <thread> <seq> <kind> <sent_ns> <start_ns> <value>   hold begins
 *   E <pid> <thread> <seq> <end_ns>                              hold ends
 *   H <pid> <thread> <seq> <kind> <sent_ns> <start_ns> <end_ns> <value>
 *                                                                a whole hold
 *
 * kind is one letter: X exclusive, W writer, R reader (shared with readers),
 * S semaphore permits (value = how many). value is the fenced token, a fair
 * lock's sequence number, or the permits; 0 when there is none. sent_ns is
 * when the acquire was sent (0 when unknown). A B line without its E is an
 * open hold: the holder was killed while holding (see tk_holds_read).
 * A command run by sh writes its lines through a test program's
 * `--tk-hold` mode (tk_holdlog_main).
 *
 * The checker (tk_holds_check) sorts the merged holds by start and counts,
 * in one pass over the pairs that overlap in time:
 *   - conflicts: pairs where at least one side is X or W (mutual exclusion,
 *     writer against anyone); two R or two S never conflict;
 *   - peak: the most holds at once, and the largest sum of S permits at once
 *     (a semaphore of N permits: peak_permits <= N);
 *   - token regressions: among the holds with a value (not 0, not S), in
 *     start order, those whose value is not greater than the one before
 *     (fenced tokens must strictly increase).
 * An end at the same ns as a start does not overlap it.
 * Its control test is support/test_holdlog.c (hand-built holds that must
 * fail each rule) and it_mutex's run with a lock per process.
 */
#ifndef RLK_TEST_HOLDLOG_H
#define RLK_TEST_HOLDLOG_H

#include <stddef.h>

#define TK_HOLD_EXCL 'X'
#define TK_HOLD_WRITE 'W'
#define TK_HOLD_READ 'R'
#define TK_HOLD_PERMITS 'S'

typedef struct tk_hold {
    int pid;
    int thread;
    int seq;                /* per thread: pairs an E line with its B line */
    int kind;               /* TK_HOLD_* */
    long long sent_ns;      /* acquire sent; 0 when unknown */
    long long start_ns;     /* acquire returned: held from here */
    long long end_ns;       /* release about to be sent (open holds: see tk_holds_read) */
    long long value;        /* token / sequence / permits; 0 when none */
    int open;               /* begun, never ended (the holder died) */
} tk_hold;

/* ---------------------------------------------------------------- writing */

/* Opens path for appending (created 0600, O_APPEND, close-on-exec). -1 on failure. */
int tk_holdlog_open(const char *path);
/* One B line (pid = getpid()). 0 or -1. */
int tk_hold_begin(int fd, int thread, int seq, int kind, long long sent_ns, long long start_ns,
                  long long value);
/* One E line (pid = getpid()). 0 or -1. */
int tk_hold_end(int fd, int thread, int seq, long long end_ns);
/* One H line for a whole hold (h->pid 0: getpid()). 0 or -1. */
int tk_hold_write(int fd, const tk_hold *h);
/* tk_hold_write of n holds to path (created or appended to). 0 or -1. */
int tk_holds_save(const char *path, const tk_hold *holds, size_t n);

/* Drops the holds whose pid is 0 (slots of a preallocated array that were
 * never filled: failed acquisitions), keeping the order; the new count. */
size_t tk_holds_compact(tk_hold *holds, size_t n);

/* CLOCK_MONOTONIC in ns. */
long long tk_mono_ns(void);

/* ---------------------------------------------------------------- reading */

/* Reads the logs paths[0..npaths-1] (missing files count as empty), pairs
 * B and E lines into holds and appends them to *holds (grown with realloc;
 * *holds NULL and *n 0 to start). An open hold ends at
 * sent_ns (or start_ns when sent_ns is 0) + open_extra_ns - its lease: when
 * the server takes it back - or never (LLONG_MAX) when open_extra_ns < 0.
 * Returns how many holds were added; malformed lines are counted in
 * *bad when bad is not NULL. */
size_t tk_holds_read(const char *const *paths, int npaths, long long open_extra_ns,
                     tk_hold **holds, size_t *n, int *bad);
/* tk_holds_read of one file (open holds never end), then unlinks it. */
size_t tk_holds_take(const char *path, tk_hold **holds, size_t *n, int *bad);
/* The same from text in memory. */
size_t tk_holds_parse(const char *text, long long open_extra_ns, tk_hold **holds, size_t *n,
                      int *bad);

/* Sorts by start (then end). */
void tk_holds_sort(tk_hold *holds, size_t n);

/* ---------------------------------------------------------------- checking */

typedef struct tk_hold_report {
    size_t holds;           /* holds examined */
    size_t open;            /* of them open */
    long conflicts;         /* overlapping pairs with an X or W side */
    long regressions;       /* start order: a value not above the previous one (fenced) */
    int peak;               /* most holds at once */
    int peak_readers;       /* most R holds at once */
    long long peak_permits; /* largest sum of S permits at once */
    long long longest_ns;   /* the longest closed hold */
} tk_hold_report;

/* Sorts holds by start and checks them (see the top of this file). Prints
 * the first few conflicts and regressions to stderr when verbose. */
tk_hold_report tk_holds_check(tk_hold *holds, size_t n, int verbose);

/* One line "N holds (O open), C conflicts, R token regressions, peak P (readers Q,
 * permits S)" into buf, for a test's output. */
const char *tk_hold_report_str(const tk_hold_report *r, char *buf, size_t len);

/* ---------------------------------------------------------------- from sh */

/* The `hold` helper for commands run by sh (the CLI tests): a test program
 * calls it first in main; when argv is
 *   PROG --tk-hold LOG KIND begin|end ID [VALUE]   appends a B or E line
 * it does that and returns the exit status (0 or 1); otherwise -1 (not a
 * helper call: go on). The line's pid is ID (a shell's $$: it pairs the B
 * with its E), thread and seq 0; VALUE (a fenced token, say) defaults to 0,
 * or 1 permit for S. */
int tk_holdlog_main(int argc, char **argv);

#endif /* RLK_TEST_HOLDLOG_H */
