/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli_run.h - running the rlk tool as a child process for the CLI tests,
 * and waiting on what it and its commands write (bounded polls).
 *
 * Every run gets in its environment:
 *   RLK_URL      the test server (never a server the test did not start)
 *   RLK_BIN      the rlk binary (for commands that call rlk themselves)
 *   T            the test's temp dir (event files the commands write)
 */
#ifndef RLK_CLI_RUN_H
#define RLK_CLI_RUN_H

#include <stddef.h>
#include <sys/types.h>

#include "fixture.h"
#include "holdlog.h"

#define CLI_TIMEOUT_MS 20000

typedef struct cli_proc {
    pid_t pid;
    char out_path[300];
    char err_path[300];
} cli_proc;

typedef struct cli_result {
    int status;     /* exit code; 128 + signal; -1 when it did not finish or run */
    long long ms;   /* how long it ran (CLOCK_MONOTONIC) */
    char *out;
    char *err;
} cli_result;

/* The start of a CLI test program's main: a command's --tk-hold call
 * (holdlog.h) returns its status; no PATH_TO_RLK argument: usage, 2; then n
 * servers started, their URLs written to urls (n slots of url_len bytes
 * each) and cli_setup with the first: 1 on a failure. -1: go on with the
 * tests. */
int cli_main_begin(int argc, char **argv, rlk_fx_server *srv, int n, char *urls, size_t url_len);
/* The end: cli_teardown and the n servers stopped. */
void cli_main_end(rlk_fx_server *srv, int n);

/* Makes the temp dir ($T) and remembers the binary and URL. 0 or -1. */
int cli_setup(const char *rlk_path, const char *url);
/* Removes the temp dir and its files. */
void cli_teardown(void);
const char *cli_dir(void);
/* "$T/<name>" into a static rotating buffer (8 slots). */
const char *cli_path(const char *name);
/* Sets the URL given to later runs as RLK_URL (NULL: no RLK_URL at all; "": RLK_URL
 * set but empty). */
void cli_set_url(const char *url);

/* Starts rlk with the NULL-terminated args; stdout/stderr to files. */
int cli_start(cli_proc *p, const char *const *args);
/* Waits up to timeout_ms for p; kills it and its process group (the command
 * it runs) with SIGKILL after that and returns -1.
 * Otherwise the exit code, or 128 + the signal that ended it. */
int cli_wait(cli_proc *p, long timeout_ms);
/* Output files of a finished run, read and removed. */
cli_result cli_collect(cli_proc *p, int status, long long ms);
/* cli_start + cli_wait(CLI_TIMEOUT_MS) + cli_collect. */
cli_result cli_run(const char *const *args);
void cli_result_free(cli_result *r);

#define RUN(...) cli_run((const char *const[]){__VA_ARGS__, NULL})
#define START(p, ...) cli_start((p), (const char *const[]){__VA_ARGS__, NULL})

/* A file's content ("" when missing); the caller frees it. Never NULL. */
char *cli_slurp(const char *path) __attribute__((returns_nonnull));
/* Bounded polls: 0 once the file exists / contains text, -1 after timeout_ms. */
int cli_wait_file(const char *path, long timeout_ms);
int cli_wait_contains(const char *path, const char *text, long timeout_ms);
/* Number of lines in a file that start with prefix. */
int cli_count_lines(const char *path, const char *prefix);

/* ---------------------------------------------------------------- hold logs
 *
 * A command under test logs its hold in the one hold-log format
 * (support/holdlog.h) by calling this test program in its --tk-hold mode
 * (main calls tk_holdlog_main first): a B line once inside the lock, an E
 * line before it leaves, ID $$ - so each stamped span lies inside the real
 * hold, on CLOCK_MONOTONIC. */

/* The sh snippet of a command that logs its begin, spends `hold` (an sh
 * command, like "sleep 0.05") inside, and logs its end: kind X/W/R/S, value
 * an sh word for the hold's value ("$RLK_FENCE_TOKEN") or NULL. */
void cli_hold_script(char *buf, size_t len, const char *log, char kind, const char *value,
                     const char *hold);
/* An sh command that waits (bounded, about 10 s) until log has n begun
 * holds: a barrier that proves n holders are inside at once. */
void cli_hold_barrier(char *buf, size_t len, const char *log, int n);
/* Reads the log and checks it (tk_holds_check); *bad counts malformed lines
 * and ends without a begin. */
tk_hold_report cli_holds_check(const char *log, int *bad);

#endif /* RLK_CLI_RUN_H */
