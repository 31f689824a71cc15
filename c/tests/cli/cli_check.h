/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli_check.h - checks shared by the CLI test programs (include from the
 * test program only: it includes check.h, which is header-only).
 */
#ifndef RLK_CLI_CHECK_H
#define RLK_CLI_CHECK_H

#include "check.h"
#include "fixture.h"
#include "cli_run.h"
#include "json_mini.h"
#include "tk_util.h"

#include <stdlib.h>
#include <string.h>

/* The exit status, with the output shown when it differs. */
CHECK_MAYBE_UNUSED static int expect_status(const cli_result *r, int want, const char *what)
{
    return CHECKF(r->status == want, "%s: exit %d, expected %d (after %lld ms)\n    stdout: %s\n"
                  "    stderr: %s", what, r->status, want, r->ms, r->out, r->err);
}

/* A failing command says "rlk: <message>" on exactly one line of stderr. */
CHECK_MAYBE_UNUSED static void expect_one_line_error(const cli_result *r, const char *what)
{
    const char *nl = strchr(r->err, '\n');

    CHECKF(strncmp(r->err, "rlk: ", 5) == 0, "%s: stderr does not start with \"rlk: \": %s",
           what, r->err);
    CHECKF(nl != NULL && nl[1] == '\0', "%s: the error is not one line: %s", what, r->err);
}

/* A file's content parsed as JSON (a failed check when it is not). */
CHECK_MAYBE_UNUSED static json_value *parse_file_json(const char *path)
{
    char *text = cli_slurp(path);
    const char *err = NULL;
    json_value *j = json_parse(text, &err);

    CHECKF(j != NULL, "%s is not JSON (%s): %s", path, err ? err : "", text);
    free(text);
    return j;
}

/* Subscribers of the reentrant lock's channel: a waiting `rlk lock` is one. */
CHECK_MAYBE_UNUSED static long long fx_lock_waiters(const rlk_fx_server *s, const char *name)
{
    char channel[300];

    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    return tk_numsub(s, channel);
}

/* Bounded poll until name has a waiter: 0, or -1 after timeout_ms. */
CHECK_MAYBE_UNUSED static int fx_wait_waiter(const rlk_fx_server *s, const char *name,
                                             long timeout_ms)
{
    char channel[300];

    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    return tk_wait_numsub(s, channel, 1, timeout_ms);
}

/* Bounded poll until the key is gone: 0, or -1 after timeout_ms. */
CHECK_MAYBE_UNUSED static int fx_wait_gone(const rlk_fx_server *s, const char *key,
                                           long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    while (tk_int(s, "EXISTS %s", key) != 0) {
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

/* Starts n runs of the same rlk arguments at once and expects each to exit 0. */
CHECK_MAYBE_UNUSED static void run_many(int n, const char *const *args, const char *what)
{
    cli_proc p[16];
    int started = 0;

    for (int i = 0; i < n && i < 16; i++)
        if (cli_start(&p[i], args) == 0)
            started++;
    CHECKF(started == n, "%s: started %d of %d", what, started, n);
    for (int i = 0; i < started; i++) {
        int st = cli_wait(&p[i], CLI_TIMEOUT_MS);
        cli_result r = cli_collect(&p[i], st, 0);

        expect_status(&r, 0, what);
        cli_result_free(&r);
    }
}

#endif /* RLK_CLI_CHECK_H */
