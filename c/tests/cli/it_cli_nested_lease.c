/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_nested_lease.c - a nested rlk lock never shortens its parent's hold.
 *
 * `rlk lock -l 60000 NAME -- sh -c 'rlk lock -l 1000 NAME -- true; ...'`: the inner rlk takes
 * RLK_LOCK_OWNER and re-enters the outer's lock with its own, shorter lease, then leaves it.
 * The outer's command runs on after that, and the lock must still be the outer's for the
 * outer's lease: its PTTL stays above FLOOR, and an unrelated `rlk lock -n NAME` (its own
 * holder id) is refused for longer than the inner's lease. The same with the inner on a renewed
 * lease (`--watchdog-lease 3000`: renewed every second) inside a fixed `-l 60000` outer, while
 * the inner's command runs. For the reentrant lock, the fair lock and the read lock (whose
 * outer read's timeout key must keep its lease too).
 *
 * Before the scripts kept max(PTTL, lease), the inner's re-entry and release left PTTL 1000 and
 * the unrelated rlk lock took NAME while the outer's command still ran; the inner's watchdog
 * cut the outer's 60 s to 3 s.
 *
 * Every wait is a bounded poll on a file the commands write or on the test's own window (the
 * inner's lease plus room), never a sleep as synchronisation.
 *
 * Usage: it_cli_nested_lease PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <unistd.h>

#define FLOOR 45000         /* the outer's 60000 ms lease, not cut to the inner's */

static rlk_fx_server server;
static char url[128];

typedef struct mode {
    const char *word;       /* for messages */
    const char *flag;       /* the rlk lock option of the kind ("" reentrant) */
    int read;               /* a read lock: its timeout key is checked too */
} mode;

static const mode modes[] = {
    {"reentrant", "", 0},
    {"fair", "--fair", 0},
    {"read", "--read", 1},
};

/* The outer's hold on the server: PTTL of name (and of the outer read's timeout key). */
static void expect_kept(const mode *m, const char *name, const char *when)
{
    long long pttl = tk_int(&server, "PTTL %s", name);

    CHECKF(pttl > FLOOR, "%s %s: PTTL %lld ms %s, expected above %d (the outer's -l 60000)",
           m->word, name, pttl, when, FLOOR);
    if (m->read) {
        char *owner = cli_slurp(cli_path("owner"));
        char key[600];
        size_t n = strlen(owner);

        while (n > 0 && owner[n - 1] == '\n')
            owner[--n] = '\0';
        snprintf(key, sizeof key, "{%s}:%s:rwlock_timeout:1", name, owner);
        pttl = tk_int(&server, "PTTL %s", key);
        CHECKF(pttl > FLOOR, "read %s: the outer read's timeout key %s has PTTL %lld ms %s, "
               "expected above %d", name, key, pttl, when, FLOOR);
        free(owner);
    }
}

/* An unrelated rlk lock -n (its own holder id; a writer for a read lock) is refused (exit 1)
 * every time for 1500 ms (the inner's lease 1000 and room). */
static void expect_excluded(const mode *m, const char *name)
{
    long long end = rlk_fx_now_ms() + 1500;
    int tries = 0, taken = 0;

    while (!taken && rlk_fx_now_ms() < end && tries < 40) {
        cli_result r = m->read ? RUN("lock", "--write", name, "-n", "--", "true")
                               : m->flag[0] ? RUN("lock", m->flag, name, "-n", "--", "true")
                                            : RUN("lock", name, "-n", "--", "true");

        tries++;
        if (r.status == 0)
            taken = 1;
        else
            CHECKF(r.status == 1, "%s %s: the unrelated rlk lock -n: exit %d: %s", m->word, name,
                   r.status, r.err);
        cli_result_free(&r);
        usleep(50 * 1000);
    }
    CHECKF(!taken, "%s %s: an unrelated rlk lock -n took it (attempt %d) while the outer's "
           "command still ran", m->word, name, tries);
}

/* The outer's command: records RLK_LOCK_OWNER, runs inner (an rlk lock of name by the inner
 * options), says "inner" into $T/inner, then waits (bounded, 20 s) for $T/go. */
static void outer_script(char *buf, size_t len, const mode *m, const char *name,
                         const char *inner_opts, const char *inner_cmd)
{
    snprintf(buf, len,
             "printf '%%s\\n' \"$RLK_LOCK_OWNER\" > \"$T/owner\"; "
             "\"$RLK_BIN\" lock %s %s %s -- %s; echo \"inner $?\" > \"$T/inner\"; "
             "i=0; while [ ! -e \"$T/go\" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done",
             m->flag, inner_opts, name, inner_cmd);
}

/* The inner rlk lock re-entered and ended with 0 (its line in $T/inner, bounded poll). */
static void expect_inner_ok(const mode *m, const char *what)
{
    int ok = cli_wait_contains(cli_path("inner"), "inner 0", 15000) == 0;
    char *seen = cli_slurp(cli_path("inner"));

    CHECKF(ok, "%s: the nested %s did not re-enter and end with 0: '%s'", m->word, what, seen);
    free(seen);
}

static void reset_files(void)
{
    unlink(cli_path("owner"));
    unlink(cli_path("inner"));
    unlink(cli_path("inside"));
    unlink(cli_path("go"));
}

static void go(void)
{
    FILE *f = fopen(cli_path("go"), "w");

    REQUIRE(f != NULL);
    fclose(f);
}

/* rlk lock -l 60000 NAME -- sh -c 'rlk lock -l 1000 NAME -- true; ...' */
static void fixed_inner(const mode *m)
{
    char name[64], script[2048];
    cli_proc outer;

    snprintf(name, sizeof name, "nlf-%s", m->word);
    reset_files();
    outer_script(script, sizeof script, m, name, "-l 1000", "true");
    REQUIRE((m->flag[0] ? START(&outer, "lock", m->flag, "-l", "60000", name, "--", "sh", "-c", script)
                        : START(&outer, "lock", "-l", "60000", name, "--", "sh", "-c", script)) == 0);
    expect_inner_ok(m, "rlk lock -l 1000");
    expect_kept(m, name, "after a nested rlk lock -l 1000 re-entered and left");
    expect_excluded(m, name);
    expect_kept(m, name, "after the nested lease of 1000 ms had passed");
    go();
    {
        int status = cli_wait(&outer, CLI_TIMEOUT_MS);
        cli_result r = cli_collect(&outer, status, 0);

        expect_status(&r, 0, "the outer rlk lock -l 60000");
        cli_result_free(&r);
    }
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", name), 0);
}

/* rlk lock -l 60000 NAME -- sh -c 'rlk lock --watchdog-lease 3000 NAME -- <wait>; ...': the
 * inner's re-entry and its watchdog's renewals (every second) while its command runs. */
static void renewed_inner(const mode *m)
{
    char name[64], script[2048], inner_cmd[600];
    cli_proc outer;

    snprintf(name, sizeof name, "nlw-%s", m->word);
    reset_files();
    snprintf(inner_cmd, sizeof inner_cmd,
             "sh -c 'touch \"$T/inside\"; i=0; while [ ! -e \"$T/go\" ] && [ $i -lt 400 ]; do "
             "sleep 0.05; i=$((i+1)); done'");
    outer_script(script, sizeof script, m, name, "--watchdog-lease 3000", inner_cmd);
    REQUIRE((m->flag[0] ? START(&outer, "lock", m->flag, "-l", "60000", name, "--", "sh", "-c", script)
                        : START(&outer, "lock", "-l", "60000", name, "--", "sh", "-c", script)) == 0);
    REQUIRE(cli_wait_file(cli_path("inside"), 15000) == 0);
    expect_kept(m, name, "with a nested rlk lock --watchdog-lease 3000 inside");
    /* Its watchdog renews every second: watched for 2.5 s, the PTTL every 250 ms. */
    {
        long long end = rlk_fx_now_ms() + 2500;
        int polls = 0;

        while (rlk_fx_now_ms() < end && polls < 20) {
            usleep(250 * 1000);
            polls++;
            expect_kept(m, name, "while the nested rlk lock's watchdog renewed it");
        }
    }
    go();
    expect_inner_ok(m, "rlk lock --watchdog-lease 3000");
    {
        int status = cli_wait(&outer, CLI_TIMEOUT_MS);
        cli_result r = cli_collect(&outer, status, 0);

        expect_status(&r, 0, "the outer rlk lock -l 60000");
        cli_result_free(&r);
    }
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", name), 0);
}

static void test_fixed_inner_reentrant(void) { fixed_inner(&modes[0]); }
static void test_fixed_inner_fair(void) { fixed_inner(&modes[1]); }
static void test_fixed_inner_read(void) { fixed_inner(&modes[2]); }
static void test_renewed_inner_reentrant(void) { renewed_inner(&modes[0]); }
static void test_renewed_inner_fair(void) { renewed_inner(&modes[1]); }
static void test_renewed_inner_read(void) { renewed_inner(&modes[2]); }

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_fixed_inner_reentrant);
    RUN_TEST(test_fixed_inner_fair);
    RUN_TEST(test_fixed_inner_read);
    RUN_TEST(test_renewed_inner_reentrant);
    RUN_TEST(test_renewed_inner_fair);
    RUN_TEST(test_renewed_inner_read);
    cli_main_end(&server, 1);
    return check_summary("it_cli_nested_lease");
}
