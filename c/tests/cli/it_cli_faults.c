/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_faults.c - the command of `rlk lock` never runs without the lock:
 * rlk killed, a fixed lease, failing renewals.
 *
 *   kill9       rlk killed with SIGKILL while its command (which ignores
 *               SIGTERM) runs: the command dies with it, and a second
 *               `rlk lock` does not start its command while the first runs
 *   fixed       -l 1000 -k 3 with a command that traps SIGTERM and a second
 *               contender: the first command is gone before the lease ends
 *   renewals    the server hangs (SIGSTOP): the command is stopped before
 *               (last successful renewal sent) + lease
 *   (fixed and renewals also for `rlk semaphore`: a permit with a lease)
 *   force       `rlk unlock --force` reaches a running holder within a few
 *               hundred ms (not the 10 s renewal period): SIGTERM, exit 6
 *
 * fixed and renewals are the scenario "a command never outlives its lock" (consul #9788, a
 * lock-holding command left running after its lock was lost): the command is stopped before
 * the server can let another holder in, and the second holder's stamps never overlap it;
 * it_cli_lost covers the same with the key deleted under a running command.
 *
 * The commands are fault_child (fault_child.c): they stamp start, every
 * 5 ms of work and the end with CLOCK_MONOTONIC into one log, and at their
 * start count the other holders still running. Every test asserts 0
 * overlapping critical sections from those stamps. A 5 ms loop that saw a
 * gap of more than STALL_MS says the machine stalled; timing failures then
 * say so instead of reporting a safety bug.
 *
 * Usage: it_cli_faults PATH_TO_RLK PATH_TO_FAULT_CHILD
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#define STALL_MS 200
#define MAX_EV 20000

static rlk_fx_server server;
static char url[128];
static const char *child_bin;

/* ---------------------------------------------------------------- the log */

typedef struct holder {
    long pid;
    long long start_ns, last_ns, term_ns;  /* term_ns 0: no SIGTERM seen */
    long long alive_at_start;
    long long max_gap_ns;                  /* between two of its own stamps */
    int ended;
} holder;

typedef struct fault_log {
    int nh;
    holder h[8];
    int nev;
    long ev_pid[MAX_EV];
    long long ev_ns[MAX_EV];
} fault_log;

static fault_log lg;

static holder *log_holder(fault_log *l, long pid)
{
    for (int i = 0; i < l->nh; i++)
        if (l->h[i].pid == pid)
            return &l->h[i];
    if (l->nh == 8)
        return NULL;
    memset(&l->h[l->nh], 0, sizeof l->h[0]);
    l->h[l->nh].pid = pid;
    return &l->h[l->nh++];
}

static void log_read(fault_log *l, const char *path)
{
    FILE *f = fopen(path, "r");
    char kind[16];
    long pid;
    long long ns, extra;
    char line[160];

    memset(l, 0, sizeof *l);
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        holder *h;
        int n = sscanf(line, "%15s %ld %lld %lld", kind, &pid, &ns, &extra);

        if (n < 3 || !(h = log_holder(l, pid)))
            continue;
        if (strcmp(kind, "start") == 0) {
            h->start_ns = ns;
            h->alive_at_start = n == 4 ? extra : -1;
        }
        if (strcmp(kind, "term") == 0 && !h->term_ns)
            h->term_ns = ns;
        if (strcmp(kind, "end") == 0)
            h->ended = 1;
        if (h->last_ns && ns - h->last_ns > h->max_gap_ns)
            h->max_gap_ns = ns - h->last_ns;
        if (ns > h->last_ns)
            h->last_ns = ns;
        if (l->nev < MAX_EV) {
            l->ev_pid[l->nev] = pid;
            l->ev_ns[l->nev++] = ns;
        }
    }
    fclose(f);
}

/* Stamps of one holder inside another's [start, last]: 0 when exclusive. */
static int log_overlaps(const fault_log *l)
{
    int n = 0;

    for (int i = 0; i < l->nh; i++)
        for (int k = 0; k < l->nev; k++)
            if (l->ev_pid[k] != l->h[i].pid && l->ev_ns[k] >= l->h[i].start_ns &&
                l->ev_ns[k] <= l->h[i].last_ns)
                n++;
    return n;
}

static long long log_max_gap_ms(const fault_log *l)
{
    long long g = 0;

    for (int i = 0; i < l->nh; i++)
        if (l->h[i].max_gap_ns > g)
            g = l->h[i].max_gap_ns;
    return g / 1000000;
}

static const char *stall_note(const fault_log *l)
{
    return log_max_gap_ms(l) > STALL_MS ? "; THE MACHINE STALLED (a 5 ms loop saw a longer gap): "
                                          "timing not trustworthy" : "";
}

/* The exclusion checks every test makes. */
static void expect_exclusive(const fault_log *l, int holders, const char *what)
{
    int overlaps = log_overlaps(l);

    CHECKF(l->nh == holders, "%s: %d holders in the log, expected %d", what, l->nh, holders);
    printf("  %s: %d overlapping stamps (longest gap in a 5 ms loop %lld ms)\n", what, overlaps,
           log_max_gap_ms(l));
    CHECKF(overlaps == 0, "%s: %d stamps of one holder inside another's critical section%s",
           what, overlaps, stall_note(l));
    for (int i = 0; i < l->nh; i++)
        CHECKF(l->h[i].alive_at_start == 0, "%s: holder %ld started while %lld other holder(s) "
               "still ran (no SIGKILL pending)%s", what, l->h[i].pid, l->h[i].alive_at_start,
               stall_note(l));
}

/* ---------------------------------------------------------------- processes */

/* 1 while pid runs (not a zombie). */
static int running(long pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* Bounded poll until pid no longer runs: the time it took (ms), or -1. */
static long long wait_gone(long pid, long timeout_ms)
{
    long long t0 = rlk_fx_now_ns();

    while (running(pid)) {
        if (rlk_fx_now_ns() - t0 > timeout_ms * 1000000LL)
            return -1;
        rlk_fx_sleep_ms(2);
    }
    return (rlk_fx_now_ns() - t0) / 1000000;
}

/* The pid of the first holder once it logged "start"; -1 after timeout. */
static long first_pid(const char *log, long timeout_ms)
{
    if (cli_wait_contains(log, "start", timeout_ms) != 0)
        return -1;
    log_read(&lg, log);
    return lg.nh > 0 ? lg.h[0].pid : -1;
}

static void reap_leftover(long pid)
{
    if (pid > 0 && running(pid)) {
        fprintf(stderr, "  the command %ld outlived the test: killed\n", pid);
        kill((pid_t)pid, SIGKILL);
    }
}

/* ---------------------------------------------------------------- tests */

/* Case 1: SIGKILL of rlk. The lock's lease is 1.5 s, so before the fix the
 * second rlk got the lock within 1.5 s while the first command (which
 * ignores SIGTERM) ran on for 6 s. */
static void test_kill9_command_dies_with_rlk(void)
{
    const char *log = cli_path("kill9.log");
    cli_proc p1, p2;
    cli_result r;
    long pid1;
    long long t_kill, outlived;

    REQUIRE(START(&p1, "lock", "fa", "--watchdog-lease", "1500", "--", child_bin, log,
                  "--ignore-term", "--ms", "6000") == 0);
    pid1 = first_pid(log, 10000);
    REQUIRE(pid1 > 0);
    REQUIRE(START(&p2, "lock", "fa", "-w", "15", "--", child_bin, log, "--ms", "200") == 0);
    t_kill = rlk_fx_now_ms();
    CHECK(kill(p1.pid, SIGKILL) == 0);
    r = cli_collect(&p1, cli_wait(&p1, 5000), rlk_fx_now_ms() - t_kill);
    cli_result_free(&r);
    outlived = wait_gone(pid1, 8000);
    printf("  the command outlived rlk by %lld ms (-1: still running after 8 s)\n", outlived);
    CHECKF(outlived >= 0 && outlived < 1000, "the command ran %lld ms after rlk was killed "
           "(bound 1000 ms)", outlived);
    r = cli_collect(&p2, cli_wait(&p2, 20000), 0);
    expect_status(&r, 0, "the second rlk lock");
    cli_result_free(&r);
    log_read(&lg, log);
    expect_exclusive(&lg, 2, "kill -9 of rlk");
    reap_leftover(pid1);
}

/* Case 2: a fixed lease. -k 3 does not fit in 1000 ms: the grace is
 * shortened (warning), SIGTERM at lease - grace - margin, SIGKILL before
 * the lease ends. Before the fix: SIGTERM at 1000 ms, SIGKILL at 4000 ms,
 * while the second holder ran from about 1000 ms. */
static void fixed_lease(const char *cmd, const char *name, const char *lost_line)
{
    const char *log = cli_path(name);
    int sem = strcmp(cmd, "semaphore") == 0;
    cli_proc p1, p2;
    cli_result r;
    long pid1;

    REQUIRE((sem ? START(&p1, cmd, name, "--permits", "1", "-l", "1000", "-k", "3", "--", child_bin, log,
                         "--trap-term", "--ms", "6000")
                 : START(&p1, cmd, name, "-l", "1000", "-k", "3", "--", child_bin, log,
                         "--trap-term", "--ms", "6000")) == 0);
    pid1 = first_pid(log, 10000);
    REQUIRE(pid1 > 0);
    REQUIRE((sem ? START(&p2, cmd, name, "--permits", "1", "-w", "15", "--", child_bin, log, "--ms",
                         "200")
                 : START(&p2, cmd, name, "-w", "15", "--", child_bin, log, "--ms", "200")) == 0);
    r = cli_collect(&p1, cli_wait(&p1, 15000), 0);
    expect_status(&r, 6, "fixed lease");
    CHECK_STR_CONTAINS(r.err, "rlk: warning: -k 3 s does not fit in a lease of 1000 ms");
    CHECK_STR_CONTAINS(r.err, lost_line);
    cli_result_free(&r);
    r = cli_collect(&p2, cli_wait(&p2, 20000), 0);
    expect_status(&r, 0, "the second rlk lock");
    cli_result_free(&r);
    log_read(&lg, log);
    if (lg.nh >= 1)
        printf("  first command: SIGTERM %lld ms, last stamp %lld ms after its start\n",
               lg.h[0].term_ns ? (lg.h[0].term_ns - lg.h[0].start_ns) / 1000000 : -1,
               (lg.h[0].last_ns - lg.h[0].start_ns) / 1000000);
    CHECKF(lg.nh >= 1 && lg.h[0].term_ns > 0, "the first command never saw SIGTERM");
    expect_exclusive(&lg, 2, sem ? "semaphore, fixed lease -l 1000 -k 3"
                                 : "fixed lease -l 1000 -k 3");
    reap_leftover(pid1);
}

static void test_fixed_lease_stops_before_it_ends(void)
{
    fixed_lease("lock", "fb", "rlk: lock fb lost (its lease of 1000 ms was running out); "
                "command stopped with SIGKILL");
}

static void test_semaphore_fixed_lease_stops_before_it_ends(void)
{
    fixed_lease("semaphore", "sb", "rlk: permit of semaphore sb lost (its lease of 1000 ms was "
                "running out); command stopped with SIGKILL");
}

/* Case 2: renewals fail (the server hangs). Every successful renewal was
 * sent before the pause, so the lock may live until t_pause + lease at
 * most: the command must be gone by then. Before the fix the loss was
 * declared at last renewal + lease and the grace came after it. */
static void failing_renewals(const char *cmd, const char *name)
{
    const char *log = cli_path(name);
    const long long lease_ms = 1500;
    int sem = strcmp(cmd, "semaphore") == 0;
    cli_proc p1, p2;
    cli_result r;
    long pid1;
    long long t_pause_ns, gone, left_ms;

    REQUIRE((sem ? START(&p1, cmd, name, "--permits", "1", "--watchdog-lease", "1500", "-k", "0.35",
                         "--", child_bin, log, "--trap-term", "--ms", "15000")
                 : START(&p1, cmd, name, "--watchdog-lease", "1500", "-k", "0.35", "--", child_bin,
                         log, "--trap-term", "--ms", "15000")) == 0);
    pid1 = first_pid(log, 10000);
    REQUIRE(pid1 > 0);
    t_pause_ns = rlk_fx_now_ns();
    REQUIRE(rlk_fx_pause(&server) == 0);
    gone = wait_gone(pid1, lease_ms + 3000);
    /* The scenario needs the server hung past the lease (its keys then
     * expire when it resumes): a time condition, bounded. */
    while ((rlk_fx_now_ns() - t_pause_ns) / 1000000 < lease_ms + 200)
        rlk_fx_sleep_ms(10);
    REQUIRE(rlk_fx_resume(&server) == 0);
    REQUIRE((sem ? START(&p2, cmd, name, "--permits", "1", "-w", "15", "--", child_bin, log, "--ms",
                         "100")
                 : START(&p2, cmd, name, "-w", "15", "--", child_bin, log, "--ms", "100")) == 0);
    r = cli_collect(&p1, cli_wait(&p1, 15000), 0);
    expect_status(&r, 6, "renewals failing");
    cli_result_free(&r);
    r = cli_collect(&p2, cli_wait(&p2, 20000), 0);
    expect_status(&r, 0, "the second rlk lock");
    cli_result_free(&r);
    log_read(&lg, log);
    left_ms = lg.nh >= 1 ? (t_pause_ns + lease_ms * 1000000LL - lg.h[0].last_ns) / 1000000 : -1;
    printf("  server hung: the command was gone %lld ms after the pause; its last stamp %lld ms "
           "before pause + lease\n", gone, left_ms);
    CHECKF(gone >= 0, "the command still ran %lld ms after the server hung", lease_ms + 3000);
    CHECKF(left_ms > 0, "the command's last stamp was %lld ms after pause + lease (the latest "
           "the lock can have lasted)%s", -left_ms, stall_note(&lg));
    expect_exclusive(&lg, 2, sem ? "semaphore, failing renewals" : "failing renewals");
    reap_leftover(pid1);
}

static void test_failing_renewals_stop_before_lease(void)
{
    failing_renewals("lock", "fc");
}

static void test_semaphore_failing_renewals_stop_before_lease(void)
{
    failing_renewals("semaphore", "sc");
}

/* Case 4: rlk unlock --force reaches the holder through the lock's channel.
 * Before the fix it noticed at the next renewal, 10 s later. The bound is a third of that:
 * far above the few ms it takes (the force unlock is a process of its own: a loaded machine
 * or a sanitizer slows its start), far below the renewal that would catch a deaf holder. */
#define FORCE_BOUND_MS 3000
static void test_force_unlock_reaches_holder(void)
{
    const char *log = cli_path("force.log");
    cli_proc p1;
    cli_result r, u;
    long pid1;
    long long t_force_ns, term_ms;

    REQUIRE(START(&p1, "lock", "fd", "--", child_bin, log, "--exit-on-term", "--ms", "20000") == 0);
    pid1 = first_pid(log, 10000);
    REQUIRE(pid1 > 0);
    /* The holder listens on its lock's channel (before the fix nobody does:
     * then this bounded wait just runs out). */
    {
        long long until = rlk_fx_now_ms() + 3000;

        while (tk_numsub(&server, "redisson_lock__channel:{fd}") < 1 && rlk_fx_now_ms() < until)
            rlk_fx_sleep_ms(5);
    }
    t_force_ns = rlk_fx_now_ns();
    u = RUN("unlock", "--force", "fd");
    expect_status(&u, 0, "unlock --force");
    cli_result_free(&u);
    r = cli_collect(&p1, cli_wait(&p1, 15000), 0);
    expect_status(&r, 6, "force-unlocked holder");
    CHECK_STR_CONTAINS(r.err, "rlk: lock fd lost (");
    cli_result_free(&r);
    log_read(&lg, log);
    term_ms = lg.nh >= 1 && lg.h[0].term_ns ? (lg.h[0].term_ns - t_force_ns) / 1000000 : -1;
    printf("  force unlock: the holder's command got SIGTERM %lld ms after it\n", term_ms);
    CHECKF(term_ms >= 0 && term_ms < FORCE_BOUND_MS, "SIGTERM %lld ms after the force unlock "
           "(bound %d ms)%s", term_ms, FORCE_BOUND_MS, stall_note(&lg));
    expect_exclusive(&lg, 1, "force unlock");
    reap_leftover(pid1);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PATH_TO_RLK PATH_TO_FAULT_CHILD\n", argv[0]);
        return 2;
    }
    child_bin = argv[2];
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    RUN_TEST(test_kill9_command_dies_with_rlk);
    RUN_TEST(test_fixed_lease_stops_before_it_ends);
    RUN_TEST(test_failing_renewals_stop_before_lease);
    RUN_TEST(test_semaphore_fixed_lease_stops_before_it_ends);
    RUN_TEST(test_semaphore_failing_renewals_stop_before_lease);
    RUN_TEST(test_force_unlock_reaches_holder);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_faults");
}
