/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nem_check.h - the nemesis run's log format and its checker (docs/nemesis.md).
 *
 * Every process of a run appends to a log file of its own, one write(2) per line (O_APPEND, as
 * holdlog.h), times on absolute CLOCK_MONOTONIC (ns), so the files merge:
 *
 *   A <pid> <thr> <seq> <lock> <kind> <sent_ns> <start_ns> <lease_ms> <value> [<owner>]
 *       an acquisition the process was told it has: sent when the acquire was sent, start right
 *       after it returned RLK_OK; lease_ms the lease the holder knew of (a fixed lease, or the
 *       watchdog's first lease, which N lines extend), 0: none (a count-only semaphore's
 *       permits); kind X exclusive (reentrant, fair, fenced, non-reentrant lock, a faster
 *       MultiLock's value), L a leader (value: its term), R a reader, W a writer, S permits
 *       (value: how many); value: the token or term (0: none). lock may be several names
 *       a,b,c (at most 8): one hold of each, taken at once (a faster MultiLock's values, each
 *       checked as a lock of its own). owner: a label of the holder id, when several
 *       processes (or a process and a nested holder) hold under one id: the holds of one label
 *       are one holder, so those that overlap are merged into one before the overlap rule
 *       (a shared id's two processes never conflict with each other, only with other holders)
 *   N <pid> <thr> <sent_ns> <lease_ms>
 *       a renewal that renewed a hold of that thread (the watchdog's, or the async loop's):
 *       sent when it was sent, lease_ms the lease it set. It belongs to the thread's hold sent
 *       last before it, whose lease now ends no earlier than sent + lease_ms
 *   E <pid> <thr> <seq> <end_ns> <how>
 *       the hold ended: right before its release was sent, or when the holder was told it lost
 *       it (the lost-lock callback), whichever came first; how: r released, n the release said
 *       not held, l told it was lost, u the release's outcome unknown
 *   W <pid> <thr> <seq> <res> <token> <sent_ns> <done_ns> <outcome>
 *       a fenced write (rlk_fence_write, fence/rpush) of the hold's token at the resource res:
 *       outcome A accepted, F refused (RLK_ERR_FENCED), U unknown (reply lost)
 *   R <res> <index> <token>
 *       the resource's content at the end of the run, in its order (the parent writes these)
 *   P <lock> <permits>        a semaphore's permits (its limit)
 *   C <lock> <size>           a semaphore's size at the end of the run, every holder gone:
 *                             the count (plus the permits held, for the permit-expirable one,
 *                             whose leases give them back by themselves; the parent writes it)
 *   U <pid> <thr> <lock>      a call on a count-only semaphore whose outcome nobody can tell
 *                             (its reply lost, not by the nemesis's own fault): a permit may
 *                             have been taken and never given back
 *   K <latch> <count>         a count-down latch's count, armed by the parent before the run
 *   D <pid> <thr> <latch> <sent_ns> <done_ns> <outcome>
 *       a count-down of the latch sent at sent_ns, returned at done_ns: outcome A counted, U
 *       unknown (its reply lost: it may have counted)
 *   O <pid> <thr> <latch> <sent_ns> <done_ns>
 *       an await of the latch that returned RLK_OK (released: the count reached 0) at done_ns
 *   # ...                     a comment (the seed, the options)
 *
 * A hold is [start, end) with end the earlier of its E line and its lease's end: sent + lease,
 * or a later renewal's sent + lease (an A line without its E line: that, or never with no
 * lease): what the holder knew. The rules, each
 * counted under its name:
 *   overlap         two holds of one lock overlap, one of them X, L or W (holdlog.h's
 *                   tk_holds_check), holds of one owner label merged first
 *   permits         more permits of a semaphore held at once than its P line allows
 *   dup-token       two acquisitions of one fenced lock (X with a value) with one token
 *   dup-term        two leaders of one election (L) with one term
 *   token-back      an acquisition sent after another one of the same lock returned has a token
 *                   or term below that one's (equal: dup-token or dup-term)
 *   fenced-write    a write accepted at a resource with token t, sent after a write with a token
 *                   above t was accepted there (its holder had been fenced, yet got in)
 *   resource-order  the resource's content (R lines) has a token below one before it
 *   size            a semaphore's size at the end (C) is above its permits, or below them by
 *                   more than its U lines (a permit taken twice, given back twice, or lost)
 *   early-open      an await of a latch released (O) while fewer count-downs of it had been
 *                   sent (D lines, A or U) than its count (K): a waiter let go before the count
 *                   reached 0 (a count-down repeated, a count read wrong)
 *   bad-line        a line that does not parse, an E or W without its A, an O without its K
 */
#ifndef RLK_NEM_CHECK_H
#define RLK_NEM_CHECK_H

#include <stddef.h>

enum { NEM_OVERLAP, NEM_PERMITS, NEM_DUP_TOKEN, NEM_DUP_TERM, NEM_TOKEN_BACK, NEM_FENCED_WRITE,
       NEM_RESOURCE_ORDER, NEM_SIZE, NEM_EARLY_OPEN, NEM_BAD_LINE, NEM_RULES };

extern const char *const nem_rule_names[NEM_RULES];

typedef struct nem_report {
    long count[NEM_RULES];
    long holds, writes, accepted, refused, unknown, resource_entries, locks, renewals;
    long merged;        /* holds folded into an overlapping hold of the same owner label */
    long countdowns, opens; /* a latch's D and O lines */
} nem_report;

/* The rule's index for its name, or -1. */
int nem_rule_index(const char *name);

/* Reads the log files and checks them. verbose: the first violations of each rule to stderr. */
void nem_check_files(const char *const *paths, int n, int verbose, nem_report *rep);
/* The same on text in memory (one log). */
void nem_check_text(const char *text, int verbose, nem_report *rep);
/* One line "holds ... overlap=N permits=N ..." into buf. */
const char *nem_report_str(const nem_report *rep, char *buf, size_t len);
/* The violations counted (every rule). */
long nem_report_total(const nem_report *rep);

#endif /* RLK_NEM_CHECK_H */
