/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_lost.c - `rlk lock` while the command runs: the lock lost (its key
 * deleted behind rlk's back, force-unlocked, a fixed lease running out)
 * stops the command with SIGTERM, then SIGKILL after -k, and rlk exits 6,
 * in every single-server mode (--write, --read, --fenced, --fair, a
 * semaphore permit);
 * SIGTERM/SIGINT/SIGHUP/SIGQUIT sent to rlk reach the command, and the lock
 * is released when the command ends.
 *
 * The commands are sh scripts that trap signals and write event files; the
 * test waits on those files (bounded polls), never on a bare sleep.
 *
 * Usage: it_cli_lost PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#include <signal.h>
#include <unistd.h>

/* --watchdog-lease: a renewal every second. The grace between SIGTERM and SIGKILL is fitted
 * into the lease (a third, less the margin: 870 ms here); a 900 ms lease left 191 ms, which a
 * loaded machine's sh missed before its trap wrote TERM (seen beside two CPU burners). */
#define WD_LEASE "3000"
#define LOST_BOUND_MS 5000      /* loss noticed and the command stopped, with room for noise */

static rlk_fx_server server;
static char url[128];

/* The body of every waiting command: about 30 s at most, so nothing is left
 * running even if a test fails in a way that leaves it behind. */
/* The commands get signals as a process group: their stderr is closed so
 * that the shell's report of a killed `sleep` ("Terminated") is not mixed
 * into rlk's one-line error. */
#define LOOP "exec 2>/dev/null; n=0; while [ $n -lt 1500 ]; do sleep 0.02; n=$((n+1)); done"

/* A command that records "ready", then loops until a signal; on_sig is the
 * trap action for `sig`. */
static void looping_script(char *buf, size_t len, const char *ev, const char *sig,
                           const char *on_sig)
{
    snprintf(buf, len, "trap '%s' %s; echo ready >> %s; " LOOP, on_sig, sig, ev);
}

/* Starts `rlk lock NAME OPTS... -- sh -c script` and waits for "ready". */
static int start_holder(cli_proc *p, const char *const *args, const char *ev)
{
    if (cli_start(p, args) != 0)
        return -1;
    if (cli_wait_contains(ev, "ready", 10000) != 0) {
        fprintf(stderr, "  the command never got ready\n");
        kill(-p->pid, SIGKILL);     /* rlk and its command: their own process group */
        cli_wait(p, 5000);
        return -1;
    }
    return 0;
}

static cli_result finish(cli_proc *p, long timeout_ms, long long since_ms)
{
    int st = cli_wait(p, timeout_ms);

    return cli_collect(p, st, rlk_fx_now_ms() - since_ms);
}

/* ---------------------------------------------------------------- lost */

static void test_lost_key_deleted(void)
{
    const char *ev = cli_path("del.ev");
    char script[600], on_term[300];
    cli_proc p;
    long long t0;
    cli_result r;

    snprintf(on_term, sizeof on_term, "echo TERM >> %s; exit 0", ev);
    looping_script(script, sizeof script, ev, "TERM", on_term);
    REQUIRE(start_holder(&p, (const char *const[]){"lock", "del", "--watchdog-lease", WD_LEASE,
                                                   "--", "sh", "-c", script, NULL}, ev) == 0);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(tk_int(&server, "DEL %s", "del"), 1);
    r = finish(&p, LOST_BOUND_MS + 5000, t0);
    expect_status(&r, 6, "key deleted while the command ran");
    CHECKF(r.ms < LOST_BOUND_MS, "rlk took %lld ms to stop the command after the DEL", r.ms);
    expect_one_line_error(&r, "key deleted");
    CHECK_STR_PREFIX(r.err, "rlk: lock del lost (");
    CHECK_STR_CONTAINS(r.err, "); command stopped");
    CHECKF(cli_count_lines(ev, "TERM") == 1, "%d TERM lines from the command; rlk said: %s",
           cli_count_lines(ev, "TERM"), r.err);
    cli_result_free(&r);
}

static void test_lost_then_sigkill(void)
{
    const char *ev = cli_path("kill.ev");
    char script[600], on_term[300];
    cli_proc p;
    long long t0, t_term;
    cli_result r;

    /* The command notes SIGTERM and goes on: only SIGKILL ends it. */
    snprintf(on_term, sizeof on_term, "echo TERM >> %s", ev);
    looping_script(script, sizeof script, ev, "TERM", on_term);
    REQUIRE(start_holder(&p, (const char *const[]){"lock", "kill", "--watchdog-lease", WD_LEASE,
                                                   "-k", "0.8", "--", "sh", "-c", script, NULL},
                         ev) == 0);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(tk_int(&server, "DEL %s", "kill"), 1);
    CHECK(cli_wait_contains(ev, "TERM", LOST_BOUND_MS) == 0);
    t_term = rlk_fx_now_ms();
    r = finish(&p, LOST_BOUND_MS + 5000, t0);
    expect_status(&r, 6, "command ignoring SIGTERM");
    CHECK_STR_CONTAINS(r.err, "command stopped with SIGKILL after 0.8 s");
    expect_one_line_error(&r, "SIGKILL");
    /* SIGKILL came no earlier than the grace after SIGTERM (the TERM line is
     * written a loop step after the signal: 100 ms of room). */
    CHECKF(rlk_fx_now_ms() - t_term >= 50, "SIGKILL came %lld ms after SIGTERM was seen",
           rlk_fx_now_ms() - t_term);
    CHECKF(r.ms < LOST_BOUND_MS + 500, "rlk took %lld ms", r.ms);
    cli_result_free(&r);
}

static void test_fixed_lease_runs_out(void)
{
    const char *ev = cli_path("lease.ev");
    char script[600], on_term[300];
    cli_proc p;
    long long t0 = rlk_fx_now_ms();
    cli_result r;

    snprintf(on_term, sizeof on_term, "echo TERM >> %s; exit 0", ev);
    looping_script(script, sizeof script, ev, "TERM", on_term);
    REQUIRE(start_holder(&p, (const char *const[]){"lock", "lease", "-l", "3000", "--", "sh",
                                                   "-c", script, NULL}, ev) == 0);
    r = finish(&p, 10000, t0);
    expect_status(&r, 6, "fixed lease ran out");
    CHECK_STR_EQ(r.err, "rlk: lock lease lost (its lease of 3000 ms was running out); command "
                 "stopped\n");
    /* SIGTERM at lease - grace - margin: the default grace (10 s) shrinks to
     * 3000/2 - 130 = 1370 ms, so SIGTERM comes 1500 ms after the acquire. */
    CHECKF(r.ms >= 1500, "stopped after %lld ms, before the 1500 ms SIGTERM point", r.ms);
    CHECKF(cli_count_lines(ev, "TERM") == 1, "%d TERM lines from the command; rlk said: %s",
           cli_count_lines(ev, "TERM"), r.err);
    cli_result_free(&r);

    r = RUN("lock", "lease", "-l", "5000", "--", "true");
    expect_status(&r, 0, "fixed lease, command done in time");
    CHECK_STR_EQ(r.err, "");
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "lease"), 0);
    cli_result_free(&r);
}

static void test_force_unlocked_while_running(void)
{
    const char *ev = cli_path("force.ev");
    char script[600], on_term[300];
    cli_proc p;
    long long t0;
    cli_result r, u;

    snprintf(on_term, sizeof on_term, "echo TERM >> %s; exit 0", ev);
    looping_script(script, sizeof script, ev, "TERM", on_term);
    REQUIRE(start_holder(&p, (const char *const[]){"lock", "force", "--watchdog-lease", WD_LEASE,
                                                   "--", "sh", "-c", script, NULL}, ev) == 0);
    t0 = rlk_fx_now_ms();
    u = RUN("unlock", "--force", "force");
    expect_status(&u, 0, "unlock --force of a running holder");
    CHECK_STR_EQ(u.out, "force: lock removed (force unlock)\n");
    cli_result_free(&u);
    r = finish(&p, LOST_BOUND_MS + 5000, t0);
    expect_status(&r, 6, "holder force-unlocked");
    CHECKF(r.ms < LOST_BOUND_MS, "rlk took %lld ms", r.ms);
    CHECK_STR_CONTAINS(r.err, "lost");
    cli_result_free(&r);
}

/* Every mode stops its command the same way when what it holds is deleted
 * behind its back: args run `sh -c SCRIPT` (appended), key is deleted. */
static void lost_in_mode(const char *const *lead, const char *key, const char *ev_name,
                         const char *prefix)
{
    const char *ev = cli_path(ev_name);
    char script[600], on_term[300];
    const char *args[20];
    cli_proc p;
    long long t0;
    cli_result r;
    int k = 0;

    snprintf(on_term, sizeof on_term, "echo TERM >> %s; exit 0", ev);
    looping_script(script, sizeof script, ev, "TERM", on_term);
    for (; lead[k] && k < 14; k++)
        args[k] = lead[k];
    args[k++] = "--watchdog-lease";
    args[k++] = WD_LEASE;
    args[k++] = "--";
    args[k++] = "sh";
    args[k++] = "-c";
    args[k++] = script;
    args[k] = NULL;
    REQUIRE(start_holder(&p, args, ev) == 0);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(tk_int(&server, "DEL %s", key), 1);
    r = finish(&p, LOST_BOUND_MS + 5000, t0);
    expect_status(&r, 6, prefix);
    CHECKF(r.ms < LOST_BOUND_MS, "%s: rlk took %lld ms to stop the command after the DEL", prefix,
           r.ms);
    expect_one_line_error(&r, prefix);
    CHECK_STR_PREFIX(r.err, prefix);
    CHECK_STR_CONTAINS(r.err, "); command stopped");
    CHECKF(cli_count_lines(ev, "TERM") == 1, "%d TERM lines from the command; rlk said: %s",
           cli_count_lines(ev, "TERM"), r.err);
    cli_result_free(&r);
}

static void test_lost_other_modes(void)
{
    lost_in_mode((const char *const[]){"lock", "--write", "lw", NULL}, "lw", "lw.ev",
                 "rlk: write lock lw lost (");
    lost_in_mode((const char *const[]){"lock", "--read", "lr", NULL}, "lr", "lr.ev",
                 "rlk: read lock lr lost (");
    lost_in_mode((const char *const[]){"lock", "--fenced", "lf", NULL}, "lf", "lf.ev",
                 "rlk: fenced lock lf lost (");
    lost_in_mode((const char *const[]){"lock", "--fair", "lfa", NULL}, "lfa", "lfa.ev",
                 "rlk: fair lock lfa lost (");
    /* The permit's entry gone: its renewal finds it no longer held. */
    lost_in_mode((const char *const[]){"semaphore", "ls", "--permits", "2", NULL}, "{ls}:timeout",
                 "ls.ev", "rlk: permit of semaphore ls lost (");
}

/* A fixed lease in another mode: the same deadline rule. */
static void test_fixed_lease_semaphore(void)
{
    const char *ev = cli_path("slease.ev");
    char script[600], on_term[300];
    cli_proc p;
    long long t0 = rlk_fx_now_ms();
    cli_result r;

    snprintf(on_term, sizeof on_term, "echo TERM >> %s; exit 0", ev);
    looping_script(script, sizeof script, ev, "TERM", on_term);
    REQUIRE(start_holder(&p, (const char *const[]){"semaphore", "slease", "--permits", "1", "-l", "500",
                                                   "--", "sh", "-c", script, NULL}, ev) == 0);
    r = finish(&p, 10000, t0);
    expect_status(&r, 6, "semaphore fixed lease ran out");
    CHECK_STR_EQ(r.err, "rlk: permit of semaphore slease lost (its lease of 500 ms was running "
                 "out); command stopped\n");
    CHECKF(r.ms >= 250, "stopped after %lld ms, before the 250 ms SIGTERM point", r.ms);
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- forwarding */

typedef struct fwd_case {
    int sig;
    const char *name;
    int code;                   /* the command's exit code from its trap */
} fwd_case;

static void forward_one(const fwd_case *fc)
{
    char ev_name[64], script[600], on_sig[300], lock[64], what[80];
    const char *ev;
    cli_proc p;
    cli_result r, i;

    snprintf(ev_name, sizeof ev_name, "fwd-%s.ev", fc->name);
    snprintf(lock, sizeof lock, "fwd-%s", fc->name);
    snprintf(what, sizeof what, "SIG%s sent to rlk", fc->name);
    ev = cli_path(ev_name);
    snprintf(on_sig, sizeof on_sig, "echo got %s >> %s; exit %d", fc->name, ev, fc->code);
    looping_script(script, sizeof script, ev, fc->name, on_sig);
    REQUIRE(start_holder(&p, (const char *const[]){"lock", lock, "--", "sh", "-c", script, NULL},
                         ev) == 0);
    CHECK(kill(p.pid, fc->sig) == 0);
    r = finish(&p, 10000, rlk_fx_now_ms());
    expect_status(&r, fc->code, what);
    CHECKF(cli_count_lines(ev, "got ") == 1, "%s: the command did not get it once", what);
    CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);
    i = RUN("inspect", lock);
    expect_status(&i, 1, "inspect after the command ended");   /* 1: free */
    CHECKF(strstr(i.out, ": no lock") != NULL, "%s: still locked afterwards: %s", what, i.out);
    cli_result_free(&i);
}

static void test_signals_forwarded(void)
{
    static const fwd_case cases[] = {
        {SIGTERM, "TERM", 3}, {SIGINT, "INT", 5}, {SIGHUP, "HUP", 8}, {SIGQUIT, "QUIT", 9},
    };

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        forward_one(&cases[k]);
}

/* The same forwarding in the other modes: SIGTERM reaches the command, its
 * code is rlk's, and what was held is given back. */
static void forward_in_mode(const char *const *lead, const char *tag, const char *key,
                            const char *gone_key)
{
    char ev_name[64], script[600], on_sig[300];
    const char *args[16], *ev;
    cli_proc p;
    cli_result r;
    int k = 0;

    snprintf(ev_name, sizeof ev_name, "fwdm-%s.ev", tag);
    ev = cli_path(ev_name);
    snprintf(on_sig, sizeof on_sig, "echo got TERM >> %s; exit 4", ev);
    looping_script(script, sizeof script, ev, "TERM", on_sig);
    for (; lead[k] && k < 10; k++)
        args[k] = lead[k];
    args[k++] = "--";
    args[k++] = "sh";
    args[k++] = "-c";
    args[k++] = script;
    args[k] = NULL;
    REQUIRE(start_holder(&p, args, ev) == 0);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", key), 1);
    CHECK(kill(p.pid, SIGTERM) == 0);
    r = finish(&p, 10000, rlk_fx_now_ms());
    expect_status(&r, 4, tag);
    CHECKF(cli_count_lines(ev, "got ") == 1, "%s: the command did not get SIGTERM once", tag);
    CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);
    CHECKF(tk_int(&server, "EXISTS %s", gone_key) == 0, "%s: %s still there", tag, gone_key);
}

static void test_signals_forwarded_other_modes(void)
{
    forward_in_mode((const char *const[]){"lock", "--write", "fw-w", NULL}, "write", "fw-w",
                    "fw-w");
    forward_in_mode((const char *const[]){"lock", "--fenced", "fw-f", NULL}, "fenced", "fw-f",
                    "fw-f");
    forward_in_mode((const char *const[]){"semaphore", "fw-s", "--permits", "1", NULL}, "semaphore",
                    "{fw-s}:timeout", "{fw-s}:timeout");
}

/* A command without a trap dies of the forwarded signal: 128 + N, lock released. */
static void test_forwarded_signal_kills_command(void)
{
    const char *ev = cli_path("die.ev");
    char script[300];
    cli_proc p;
    cli_result r;

    snprintf(script, sizeof script, "echo ready >> %s; " LOOP, ev);
    REQUIRE(start_holder(&p, (const char *const[]){"lock", "die", "--", "sh", "-c", script, NULL},
                         ev) == 0);
    CHECK(kill(p.pid, SIGTERM) == 0);
    r = finish(&p, 10000, rlk_fx_now_ms());
    expect_status(&r, 128 + SIGTERM, "command ended by the forwarded SIGTERM");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "die"), 0);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_lost_key_deleted);
    RUN_TEST(test_lost_then_sigkill);
    RUN_TEST(test_fixed_lease_runs_out);
    RUN_TEST(test_force_unlocked_while_running);
    RUN_TEST(test_lost_other_modes);
    RUN_TEST(test_fixed_lease_semaphore);
    RUN_TEST(test_signals_forwarded);
    RUN_TEST(test_signals_forwarded_other_modes);
    RUN_TEST(test_forwarded_signal_kills_command);
    cli_main_end(&server, 1);
    return check_summary("it_cli_lost");
}
