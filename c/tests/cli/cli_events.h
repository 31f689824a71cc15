/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli_events.h - event logs the commands of the CLI tests write, and the
 * mutual-exclusion checks on them.
 *
 * A command under test appends one line when it starts and one when it
 * ends: "start TAG ID" / "end TAG ID", TAG a word (R for a reader, W for a
 * writer or any exclusive holder, S for a semaphore holder), ID unique per
 * run ($$). Appends of short lines with O_APPEND (sh's >>) do not
 * interleave.
 */
#ifndef RLK_CLI_EVENTS_H
#define RLK_CLI_EVENTS_H

#include <stddef.h>

typedef struct cli_events {
    int ok;             /* 1: well formed, every end matches an open start, none left open */
    int pairs;          /* completed start/end pairs */
    int max_open;       /* most holders open at once */
    int writer_shared;  /* 1: a W was open together with any other holder */
} cli_events;

/* Parses an event log (its text). */
cli_events cli_events_parse(const char *text);

/* The sh snippet of a command that logs its start, spends `hold` (an sh
 * command, like "sleep 0.05") inside, and logs its end, into buf. */
void cli_events_script(char *buf, size_t len, const char *log, const char *tag, const char *hold);

/* An sh command that waits (bounded, about 10 s) until log has n "start"
 * lines: a barrier that proves n holders are inside at once. */
void cli_events_barrier(char *buf, size_t len, const char *log, int n);

#endif /* RLK_CLI_EVENTS_H */
