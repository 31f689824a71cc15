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

#include <sys/types.h>

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

/* Makes the temp dir ($T) and remembers the binary and URL. 0 or -1. */
int cli_setup(const char *rlk_path, const char *url);
/* Removes the temp dir and its files. */
void cli_teardown(void);
const char *cli_dir(void);
/* "$T/<name>" into a static rotating buffer (8 slots). */
const char *cli_path(const char *name);
/* Sets the URL given to later runs (NULL: keep the server's). */
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

#endif /* RLK_CLI_RUN_H */
