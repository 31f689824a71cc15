/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_elect.c - `rlk elect`: leader election with candidates in separate
 * processes (docs/elect.md). Each candidate is an `rlk elect` process whose
 * command (elect_child) logs its life and its actions with CLOCK_MONOTONIC
 * stamps; every action is a fence/check of the leader's term on one fence
 * key (the resource).
 *
 *   handover   4 candidates, each leading for 300 ms and resigning: 4 terms,
 *              rising in time order, no two leaders' lives overlapping; the
 *              observer (--observe --json) prints every term.
 *   faults     4 candidates on a 1 s renewed lease. kill -9 of the leader's
 *              rlk: its command dies with it (the guard) before the next
 *              leader starts, within lease + 1.5 s. SIGSTOP of the next
 *              leader (rlk and its command) past its lease: a third leader
 *              within lease + 1.5 s; the old command resumed first acts
 *              with its old term and the fence refuses it; its rlk resumed
 *              finds leadership lost, stops it and exits 6.
 *   rlk paused SIGSTOP of the leader's rlk alone: its command acts on, refused
 *              by the fence once the next leader acted; rlk resumed exits 6.
 *   proxy      tk_proxy (a partition on loopback) passes, goes silent both
 *              ways when cut (a new connection accepted and silent), and
 *              delivers what it held when healed.
 *   partition  3 candidates; the first leader reaches Redis only through the
 *              proxy, every command its fence directly (ELECT_FENCE_URL).
 *              Cut: its rlk's watchdog declares the loss, its command is
 *              stopped before the lease (counted from a renewal sent before
 *              the cut) can end and before the next leader starts, within
 *              lease + 1.5 s; its rlk exits 6 with the partition in place.
 *              Healed: what it sent during the cut reaches Redis while the
 *              next leader leads (which leads on), and the old candidate
 *              back through the proxy is not elected while the third leads.
 *              Control: the first leader's command escapes rlk's guard
 *              (setsid): the strict check fails on that log, and the fence
 *              refuses every action it sends once the next term acted.
 *   controls   the log checker fed planted logs (two terms acting at once,
 *              an old term accepted after a newer one, two lives
 *              overlapping, a late takeover) must fail.
 *
 *   it_cli_elect PATH_TO_RLK PATH_TO_ELECT_CHILD
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "tk_proxy.h"

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define LEASE_MS 1000
#define TAKEOVER_SLACK_MS 1500  /* the next leader: within the lease + this (a loaded machine) */
#define MAX_LIVES 16

static rlk_fx_server server;
static char url[128];
static const char *child_bin;

static long long mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* ---------------------------------------------------------------- the log */

typedef struct life {
    long pid, ppid;
    long long term;
    long long start_ns, last_ns;        /* the first and the last line it wrote */
    long long first_ok_ns, last_ok_ns;  /* sent stamps of its accepted actions (0: none) */
    long long first_ok_reply_ns;        /* reply stamp of its first accepted action */
    int oks, fenced, errs;
    int ended;                          /* "end": finished on its own */
} life;

typedef struct elog {
    int n;
    life l[MAX_LIVES];
} elog;

static life *elog_life(elog *g, long pid)
{
    for (int i = 0; i < g->n; i++)
        if (g->l[i].pid == pid)
            return &g->l[i];
    if (g->n == MAX_LIVES)
        return NULL;
    memset(&g->l[g->n], 0, sizeof g->l[0]);
    g->l[g->n].pid = pid;
    return &g->l[g->n++];
}

/* Parses log text; -1 on a malformed line. */
static int elog_parse(elog *g, const char *text)
{
    const char *p = text;

    memset(g, 0, sizeof *g);
    while (*p) {
        char kind[8], res[8];
        long pid, ppid;
        long long a, b, t;
        life *x;
        const char *nl = strchr(p, '\n');

        if (sscanf(p, "%7s", kind) != 1)
            return -1;
        if (strcmp(kind, "start") == 0 && sscanf(p, "start %ld %ld %lld %lld", &pid, &ppid, &a, &t) == 4) {
            if (!(x = elog_life(g, pid)))
                return -1;
            x->ppid = ppid;
            x->term = t;
            x->start_ns = x->last_ns = a;
        } else if (strcmp(kind, "act") == 0 &&
                   sscanf(p, "act %ld %lld %lld %lld %7s", &pid, &a, &b, &t, res) == 5) {
            if (!(x = elog_life(g, pid)))
                return -1;
            if (b > x->last_ns)
                x->last_ns = b;
            if (strcmp(res, "ok") == 0) {
                x->oks++;
                if (!x->first_ok_ns) {
                    x->first_ok_ns = a;
                    x->first_ok_reply_ns = b;
                }
                x->last_ok_ns = a;
            } else if (strcmp(res, "fenced") == 0) {
                x->fenced++;
            } else {
                x->errs++;
            }
        } else if (strcmp(kind, "end") == 0 && sscanf(p, "end %ld %lld %lld", &pid, &a, &t) == 3) {
            if (!(x = elog_life(g, pid)))
                return -1;
            x->ended = 1;
            if (a > x->last_ns)
                x->last_ns = a;
        } else {
            return -1;
        }
        p = nl ? nl + 1 : p + strlen(p);
    }
    return 0;
}

/* The checks of a run's log; returns how many violations it found (printed
 * with prefix). Rules:
 *   1. acting: the accepted actions of each term ([first, last] sent stamp)
 *      never overlap another term's, and a larger term acts later; for the
 *      paused one, whose command runs on beside the next leader's, the order
 *      is the resource's: an old-term action sent after a newer term's first
 *      accepted action had its reply must have been refused (one sent before
 *      that reply may reach the resource first, and be accepted, as the
 *      resource orders them);
 *   2. living: no two commands' lives ([start, last line]) overlap, but for
 *      the one the test paused (paused_pid; 0: none), whose actions after
 *      the next leader's first accepted one must all be refused;
 *   3. terms: each leader's term is larger than every earlier leader's. */
static int elog_check(const elog *g, long paused_pid, const char *prefix)
{
    int bad = 0;

    for (int i = 0; i < g->n; i++) {
        for (int j = 0; j < g->n; j++) {
            const life *a = &g->l[i], *b = &g->l[j];

            if (i == j)
                continue;
            if (a->oks && b->oks && a->term < b->term &&
                a->last_ok_ns >= (a->pid == paused_pid ? b->first_ok_reply_ns : b->first_ok_ns)) {
                fprintf(stderr, "%s: term %lld acted until %lld ns, after term %lld began "
                        "acting at %lld ns (its first accepted reply: %lld ns)\n", prefix,
                        a->term, a->last_ok_ns, b->term, b->first_ok_ns, b->first_ok_reply_ns);
                bad++;
            }
            if (i < j && a->pid != paused_pid && b->pid != paused_pid &&
                a->start_ns < b->last_ns && b->start_ns < a->last_ns) {
                fprintf(stderr, "%s: leaders %ld (term %lld) and %ld (term %lld) ran at once\n",
                        prefix, a->pid, a->term, b->pid, b->term);
                bad++;
            }
            if (a->start_ns < b->start_ns && a->term >= b->term) {
                fprintf(stderr, "%s: term %lld started after term %lld\n", prefix, b->term,
                        a->term);
                bad++;
            }
        }
    }
    return bad;
}

/* The life whose start is the earliest after t_ns (NULL: none). */
static const life *elog_next_start(const elog *g, long long t_ns)
{
    const life *best = NULL;

    for (int i = 0; i < g->n; i++)
        if (g->l[i].start_ns > t_ns && (!best || g->l[i].start_ns < best->start_ns))
            best = &g->l[i];
    return best;
}

static int elog_read(elog *g, const char *path)
{
    char *text = cli_slurp(path);
    int rc = elog_parse(g, text);

    free(text);
    return rc;
}

/* Bounded poll: the log holds n starts; 0, or -1 after timeout_ms. */
static int wait_starts(const char *path, int n, long timeout_ms)
{
    long long t0 = mono_ns();

    while (cli_count_lines(path, "start ") < n) {
        if (mono_ns() - t0 > timeout_ms * 1000000LL)
            return -1;
        rlk_fx_sleep_ms(5);
    }
    return 0;
}

/* The terms the observer printed as leaders (--json lines), in order, without repeats. */
static int observed_terms(const char *out, long long *terms, int max)
{
    int n = 0;
    const char *p = out;

    while ((p = strstr(p, "\"leader\":true,\"term\":")) != NULL) {
        long long t = atoll(p + strlen("\"leader\":true,\"term\":"));

        if (n == 0 || terms[n - 1] != t) {
            if (n == max)
                break;
            terms[n++] = t;
        }
        p++;
    }
    return n;
}

/* Every leader's term of the log, in start order, is what the observer printed. */
static void expect_observed(const elog *g, const char *out, const char *what)
{
    long long seen[MAX_LIVES * 2], want[MAX_LIVES];
    int nseen = observed_terms(out, seen, MAX_LIVES * 2), nwant = 0;
    const life *x;
    long long t = 0;

    while ((x = elog_next_start(g, t)) != NULL) {
        want[nwant++] = x->term;
        t = x->start_ns;
    }
    CHECKF(nseen == nwant, "%s: the observer printed %d leaders, the log has %d\n%s", what,
           nseen, nwant, out);
    for (int i = 0; i < nseen && i < nwant; i++)
        CHECKF(seen[i] == want[i], "%s: observed leader %d has term %lld, the log %lld", what, i,
               seen[i], want[i]);
}

/* ---------------------------------------------------------------- tests */

static void test_handover(void)
{
    const char *log = cli_path("handover.log");
    cli_proc obs, p[4];
    cli_result r;
    elog g;
    long long t0 = mono_ns();

    REQUIRE(START(&obs, "elect", "ho", "--observe", "--json", "--timeout", "60") == 0);
    for (int i = 0; i < 4; i++)
        REQUIRE(START(&p[i], "elect", "ho", "--value", "cand", "-w", "30", "--", child_bin, log,
                      "{ho-res}:fence", "--ms", "300") == 0);
    for (int i = 0; i < 4; i++) {
        r = cli_collect(&p[i], cli_wait(&p[i], 30000), 0);
        expect_status(&r, 0, "a candidate");
        cli_result_free(&r);
    }
    /* The last change (the last resign) reaches the observer before it is stopped. */
    REQUIRE(cli_wait_contains(obs.out_path, "\"leader\":false,\"term\":", 5000) == 0);
    kill(obs.pid, SIGTERM);
    r = cli_collect(&obs, cli_wait(&obs, 5000), 0);
    REQUIRE(elog_read(&g, log) == 0);
    CHECKF(g.n == 4, "4 leaders expected, the log has %d", g.n);
    CHECKF(elog_check(&g, 0, "handover") == 0, "handover: the log breaks the rules");
    for (int i = 0; i < g.n; i++)
        CHECKF(g.l[i].ended && g.l[i].oks > 0 && g.l[i].fenced == 0 && g.l[i].errs == 0,
               "leader %ld: ended %d, %d accepted, %d refused, %d errors", g.l[i].pid,
               g.l[i].ended, g.l[i].oks, g.l[i].fenced, g.l[i].errs);
    expect_observed(&g, r.out, "handover");
    printf("  handover: %d leaders, terms rising, in %lld ms\n", g.n, (mono_ns() - t0) / 1000000);
    cli_result_free(&r);
}

static void test_faults(void)
{
    const char *log = cli_path("faults.log");
    char lease[16];
    cli_proc obs, p[4];
    cli_result r;
    elog g;
    const life *first, *second, *third;
    long long t_kill, t_stop, t_cont_child, t_cont_rlk, takeover1, takeover2;
    int leader_idx = -1, paused_idx = -1, status;
    long paused_child;

    snprintf(lease, sizeof lease, "%d", LEASE_MS);
    REQUIRE(START(&obs, "elect", "ft", "--observe", "--json", "--timeout", "60") == 0);
    for (int i = 0; i < 4; i++)
        REQUIRE(START(&p[i], "elect", "ft", "--value", "cand", "--watchdog-lease", lease, "-k",
                      "0.1", "--", child_bin, log, "{ft-res}:fence", "--ms", "30000") == 0);
    /* kill -9 of the leader's rlk. */
    REQUIRE(wait_starts(log, 1, 10000) == 0);
    REQUIRE(elog_read(&g, log) == 0 && g.n == 1);
    for (int i = 0; i < 4; i++)
        if (p[i].pid == (pid_t)g.l[0].ppid)
            leader_idx = i;
    REQUIREF(leader_idx >= 0, "the first leader's rlk (%ld) is none of the candidates", g.l[0].ppid);
    t_kill = mono_ns();
    CHECK(kill(p[leader_idx].pid, SIGKILL) == 0);
    r = cli_collect(&p[leader_idx], cli_wait(&p[leader_idx], 5000), 0);
    cli_result_free(&r);
    REQUIRE(wait_starts(log, 2, LEASE_MS + 8000) == 0);
    REQUIRE(elog_read(&g, log) == 0 && g.n == 2);
    first = &g.l[0];
    second = elog_next_start(&g, first->start_ns);
    REQUIRE(second != NULL);
    takeover1 = (second->start_ns - t_kill) / 1000000;
    printf("  kill -9 of the leader (term %lld): term %lld leads %lld ms later; the old command's "
           "last line %lld ms after the kill\n", first->term, second->term, takeover1,
           (first->last_ns - t_kill) / 1000000);
    CHECKF(takeover1 <= LEASE_MS + TAKEOVER_SLACK_MS, "takeover after kill -9: %lld ms "
           "(bound %d)", takeover1, LEASE_MS + TAKEOVER_SLACK_MS);
    /* SIGSTOP of the second leader (its rlk and its command) past its lease. */
    for (int i = 0; i < 4; i++)
        if (p[i].pid == (pid_t)second->ppid)
            paused_idx = i;
    REQUIRE(paused_idx >= 0);
    paused_child = second->pid;
    t_stop = mono_ns();
    CHECK(kill(p[paused_idx].pid, SIGSTOP) == 0);
    CHECK(kill(-(pid_t)paused_child, SIGSTOP) == 0);
    REQUIRE(wait_starts(log, 3, LEASE_MS + 8000) == 0);
    REQUIRE(elog_read(&g, log) == 0 && g.n == 3);
    second = &g.l[1];
    third = elog_next_start(&g, second->start_ns);
    REQUIRE(third != NULL);
    takeover2 = (third->start_ns - t_stop) / 1000000;
    printf("  SIGSTOP of the leader (term %lld): term %lld leads %lld ms later\n", second->term,
           third->term, takeover2);
    CHECKF(takeover2 <= LEASE_MS + TAKEOVER_SLACK_MS, "takeover after SIGSTOP: %lld ms (bound "
           "%d)", takeover2, LEASE_MS + TAKEOVER_SLACK_MS);
    /* The new leader acts first (bounded wait); then the old command resumes and acts with its
     * old term. */
    {
        long long t0 = mono_ns();
        while (elog_read(&g, log) == 0 && g.l[2].oks == 0 && mono_ns() - t0 < 5000000000LL)
            rlk_fx_sleep_ms(5);
        CHECKF(g.l[2].oks > 0, "the third leader never acted");
    }
    t_cont_child = mono_ns();
    CHECK(kill(-(pid_t)paused_child, SIGCONT) == 0);
    {
        long long t0 = mono_ns();
        while (elog_read(&g, log) == 0 && g.l[1].fenced == 0 && mono_ns() - t0 < 5000000000LL)
            rlk_fx_sleep_ms(5);
    }
    CHECKF(g.l[1].fenced > 0, "the resumed old leader's actions were not refused (%d refused)",
           g.l[1].fenced);
    t_cont_rlk = mono_ns();
    CHECK(kill(p[paused_idx].pid, SIGCONT) == 0);
    status = cli_wait(&p[paused_idx], 10000);
    r = cli_collect(&p[paused_idx], status, (mono_ns() - t_cont_rlk) / 1000000);
    expect_status(&r, 6, "the paused leader's rlk, resumed");
    cli_result_free(&r);
    /* The rest: SIGTERM (forwarded to a command): the waiting one first, gone before the
     * leader resigns (else it would be elected as the signal comes). */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; i < 4; i++) {
            if (i == leader_idx || i == paused_idx || (p[i].pid == (pid_t)third->ppid) != pass)
                continue;
            kill(p[i].pid, SIGTERM);
            r = cli_collect(&p[i], cli_wait(&p[i], 10000), 0);
            CHECKF(r.status == 143, "a candidate stopped with SIGTERM: exit %d\n%s", r.status,
                   r.err);
            cli_result_free(&r);
        }
    }
    REQUIRE(elog_read(&g, log) == 0);
    {
        const life *old = NULL;
        for (int i = 0; i < g.n; i++)
            if (g.l[i].pid == paused_child)
                old = &g.l[i];
        REQUIRE(old != NULL);
        printf("  the paused leader's command, resumed: %d actions refused, 0 accepted after "
               "term %lld acted; its last line %lld ms after its rlk resumed\n", old->fenced,
               third->term, (old->last_ns - t_cont_rlk) / 1000000);
        CHECKF(old->last_ns - t_cont_rlk < 2000000000LL, "the old command ran %lld ms after its "
               "rlk resumed", (old->last_ns - t_cont_rlk) / 1000000);
        (void)t_cont_child;
    }
    CHECKF(elog_check(&g, paused_child, "faults") == 0, "faults: the log breaks the rules");
    REQUIRE(cli_wait_contains(obs.out_path, "\"leader\":false", 5000) == 0);
    kill(obs.pid, SIGTERM);
    r = cli_collect(&obs, cli_wait(&obs, 5000), 0);
    expect_observed(&g, r.out, "faults");
    cli_result_free(&r);
}

/* SIGSTOP of the leader's rlk alone: its command runs on (nothing can stop it while rlk is
 * stopped) and keeps acting with its old term while the next leader acts: the fence refuses
 * every one of those actions; resumed, rlk finds leadership lost, stops it and exits 6. */
static void test_rlk_paused(void)
{
    const char *log = cli_path("rlkstop.log");
    char lease[16];
    cli_proc p[2];
    cli_result r;
    elog g;
    const life *old, *next;
    long long t_stop, t_cont, takeover;
    int paused = -1, other;

    snprintf(lease, sizeof lease, "%d", LEASE_MS);
    for (int i = 0; i < 2; i++)
        REQUIRE(START(&p[i], "elect", "rs", "--watchdog-lease", lease, "-k", "0.1", "--",
                      child_bin, log, "{rs-res}:fence", "--ms", "30000") == 0);
    REQUIRE(wait_starts(log, 1, 10000) == 0);
    REQUIRE(elog_read(&g, log) == 0 && g.n == 1);
    for (int i = 0; i < 2; i++)
        if (p[i].pid == (pid_t)g.l[0].ppid)
            paused = i;
    REQUIRE(paused >= 0);
    other = 1 - paused;
    t_stop = mono_ns();
    CHECK(kill(p[paused].pid, SIGSTOP) == 0);
    REQUIRE(wait_starts(log, 2, LEASE_MS + 8000) == 0);
    {
        long long t0 = mono_ns();
        int done = 0;

        /* Until the new leader acted and the old command was refused at least once. */
        while (!done && mono_ns() - t0 < 5000000000LL) {
            REQUIRE(elog_read(&g, log) == 0 && g.n == 2);
            done = g.l[1].oks > 0 && g.l[0].fenced > 0;
            if (!done)
                rlk_fx_sleep_ms(5);
        }
        CHECKF(done, "new leader acted %d times, old command refused %d times", g.l[1].oks,
               g.l[0].fenced);
    }
    old = &g.l[0];
    next = &g.l[1];
    takeover = (next->start_ns - t_stop) / 1000000;
    CHECKF(takeover <= LEASE_MS + TAKEOVER_SLACK_MS, "takeover after SIGSTOP of rlk: %lld ms",
           takeover);
    t_cont = mono_ns();
    CHECK(kill(p[paused].pid, SIGCONT) == 0);
    r = cli_collect(&p[paused], cli_wait(&p[paused], 10000), 0);
    expect_status(&r, 6, "the paused rlk, resumed");
    cli_result_free(&r);
    kill(p[other].pid, SIGTERM);
    r = cli_collect(&p[other], cli_wait(&p[other], 10000), 0);
    expect_status(&r, 143, "the second leader, SIGTERM");
    cli_result_free(&r);
    REQUIRE(elog_read(&g, log) == 0 && g.n == 2);
    old = &g.l[0];
    next = &g.l[1];
    printf("  SIGSTOP of the leader's rlk only (term %lld): term %lld leads %lld ms later; the "
           "old command, still running, had %d actions refused while term %lld acted; stopped "
           "%lld ms after its rlk resumed\n", old->term, next->term, takeover, old->fenced,
           next->term, (old->last_ns - t_cont) / 1000000);
    CHECKF(old->last_ns - t_cont < 2000000000LL, "the old command ran %lld ms after its rlk "
           "resumed", (old->last_ns - t_cont) / 1000000);
    /* Both commands ran at once (rlk could not stop its own): rule 2 is waived for the old
     * one; rule 1 (no accepted action of the old term after the new term's first) holds. */
    CHECKF(elog_check(&g, old->pid, "rlk paused") == 0, "rlk paused: the log breaks the rules");
}

/* ---------------------------------------------------------------- the proxy */

/* What fd says within ms into buf (NUL-ended): its length, 0 at its end, -1 when silent. */
static int tcp_read(int fd, char *buf, size_t len, int ms)
{
    struct pollfd f = {.fd = fd, .events = POLLIN};
    ssize_t n;

    if (poll(&f, 1, ms) <= 0)
        return -1;
    n = read(fd, buf, len - 1);
    buf[n > 0 ? n : 0] = '\0';
    return n < 0 ? 0 : (int)n;
}

/* tk_proxy itself: passes, then cut (silence both ways, the connection open, a new one accepted
 * and silent), then healed (the held command answered, the new connection linked). Its control:
 * the same PING on the direct port answers at once. */
static void test_proxy(void)
{
    tk_proxy *px = tk_proxy_start(server.port);
    char buf[256];
    int a, b = -1, d;

    REQUIRE(px != NULL);
    a = tk_tcp_connect(tk_proxy_port(px));
    REQUIRE(a >= 0);
    CHECK(write(a, "PING\r\n", 6) == 6);
    CHECKF(tcp_read(a, buf, sizeof buf, 5000) > 0 && strcmp(buf, "+PONG\r\n") == 0,
           "passing: %s", buf);
    tk_proxy_cut(px);
    CHECK(write(a, "ECHO held\r\n", 11) == 11);
    CHECKF(tcp_read(a, buf, sizeof buf, 300) == -1, "cut: the server's reply came through: %s",
           buf);
    b = tk_tcp_connect(tk_proxy_port(px));
    CHECKF(b >= 0, "cut: a new connection was refused");
    CHECK(b < 0 || write(b, "PING\r\n", 6) == 6);
    CHECKF(b < 0 || tcp_read(b, buf, sizeof buf, 300) == -1, "cut: a new connection got "
           "through: %s", buf);
    CHECK(tk_proxy_accepted_cut(px) == 1 && tk_proxy_open(px) == 2);
    d = tk_tcp_connect(server.port);   /* the control: the server answers at once */
    CHECK(d >= 0 && write(d, "PING\r\n", 6) == 6 && tcp_read(d, buf, sizeof buf, 5000) > 0 &&
          strcmp(buf, "+PONG\r\n") == 0);
    if (d >= 0)
        close(d);
    tk_proxy_heal(px);
    CHECKF(tcp_read(a, buf, sizeof buf, 5000) > 0 && strcmp(buf, "$4\r\nheld\r\n") == 0,
           "healed: the held command's reply: %s", buf);
    CHECKF(b < 0 || (tcp_read(b, buf, sizeof buf, 5000) > 0 && strcmp(buf, "+PONG\r\n") == 0),
           "healed: the connection made during the cut: %s", buf);
    close(a);
    if (b >= 0)
        close(b);
    tk_proxy_stop(px);
}

/* ---------------------------------------------------------------- partition */

/* A run whose first leader is cut off from Redis (tk_proxy) while it and its command keep
 * running and still reach the resource: every command's fence is on the direct URL
 * (ELECT_FENCE_URL), only the first candidate's rlk goes through the proxy. */
typedef struct part {
    const char *name;
    char log[300];              /* own copy: cli_path's buffers rotate */
    tk_proxy *px;
    char purl[64], lease[16];
    cli_proc obs, p[3];         /* p[0]: the first leader, through the proxy only */
    int started, done[3];       /* p[0..started) run; done: collected */
    long rogue;                 /* the control's escaped command (0: none) */
    long long t_cut;
} part;

/* Bounded poll until the log's life pid has n accepted actions, the last one sent after
 * after_ns, and `fenced` refused ones; 0, or -1 after timeout_ms. */
static int wait_acts(const char *log, long pid, int n, int fenced, long long after_ns,
                     long timeout_ms)
{
    long long t0 = mono_ns();
    elog g;

    for (;;) {
        if (elog_read(&g, log) == 0)
            for (int i = 0; i < g.n; i++)
                if (g.l[i].pid == pid && g.l[i].oks >= n && g.l[i].fenced >= fenced &&
                    g.l[i].last_ok_ns > after_ns)
                    return 0;
        if (mono_ns() - t0 > timeout_ms * 1000000LL)
            return -1;
        rlk_fx_sleep_ms(5);
    }
}

/* The candidate (index in t->p) whose rlk is pid; -1: none. */
static int part_idx(const part *t, long pid)
{
    for (int i = 0; i < t->started; i++)
        if (t->p[i].pid == (pid_t)pid)
            return i;
    return -1;
}

/* Waits for candidate i's exit (bounded) and checks its status. */
static void part_collect(part *t, int i, int want, const char *what)
{
    cli_result r = cli_collect(&t->p[i], cli_wait(&t->p[i], 10000), 0);

    t->done[i] = 1;
    expect_status(&r, want, what);
    cli_result_free(&r);
}

/* The observer and the first candidate alone through the proxy until it leads and acts; then
 * two more on the direct URL until both wait; then the cut. Each command is elect_child LOG KEY
 * (30 s); with escape, the first one runs it under `sh -c 'setsid ... & wait'`: out of rlk's
 * process group, where rlk's signals do not reach it (8 s). 0, or -1 after a failed check. */
static int part_begin(part *t, const char *name, const char *log, const char *key, int escape)
{
    const char *args[] = {"elect", name, "--url", t->purl, "--watchdog-lease", t->lease, "-k",
                          "0.1", "--", "sh", "-c", "setsid \"$0\" \"$@\" & wait", child_bin,
                          t->log, key, "--ms", "8000", NULL};
    char channel[128];
    elog g;

    snprintf(t->lease, sizeof t->lease, "%d", LEASE_MS);
    t->name = name;
    snprintf(t->log, sizeof t->log, "%s", log);
    log = t->log;
    if (!CHECK((t->px = tk_proxy_start(server.port)) != NULL))
        return -1;
    snprintf(t->purl, sizeof t->purl, "redis://127.0.0.1:%d", tk_proxy_port(t->px));
    if (!escape) {
        memmove(&args[9], &args[12], 6 * sizeof args[0]);   /* child_bin LOG KEY --ms N NULL */
        args[13] = "30000";
    }
    if (!CHECK(START(&t->obs, "elect", name, "--observe", "--json", "--timeout", "60") == 0) ||
        !CHECK(cli_start(&t->p[0], args) == 0))
        return -1;
    t->started = 1;
    if (!CHECK(wait_starts(log, 1, 10000) == 0) || !CHECK(elog_read(&g, log) == 0 && g.n == 1) ||
        !CHECK(wait_acts(log, g.l[0].pid, 3, 0, 0, 5000) == 0))
        return -1;
    args[3] = url;
    if (escape) {
        memmove(&args[9], &args[12], 6 * sizeof args[0]);
        args[13] = "30000";
    }
    for (; t->started < 3; t->started++)
        if (!CHECK(cli_start(&t->p[t->started], args) == 0))
            return -1;
    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}", name);
    if (!CHECK(tk_wait_numsub(&server, channel, 2, 10000) == 0))
        return -1;
    t->t_cut = mono_ns();
    tk_proxy_cut(t->px);
    return 0;
}

/* Whatever still runs: stopped (SIGTERM, then SIGKILL after a bound); the proxy stopped. */
static void part_cleanup(part *t)
{
    cli_result r;

    if (t->rogue > 0)
        kill((pid_t)t->rogue, SIGKILL);
    for (int i = 0; i < t->started; i++) {
        if (t->done[i])
            continue;
        kill(t->p[i].pid, SIGTERM);
        r = cli_collect(&t->p[i], cli_wait(&t->p[i], 5000), 0);
        cli_result_free(&r);
    }
    if (t->obs.pid > 0) {
        kill(t->obs.pid, SIGTERM);
        r = cli_collect(&t->obs, cli_wait(&t->obs, 5000), 0);
        cli_result_free(&r);
    }
    tk_proxy_stop(t->px);
}

/* The first leader cut off from Redis; its command keeps its resource. rlk's watchdog sees its
 * renewals fail, declares the loss before the lease can run out on the server, stops the command
 * and exits 6, all with the partition still in place; the next leader leads after the lease.
 * Healed, the old rlk's held requests (renewals, its resign) reach Redis while the next leader
 * leads: nothing changes; the old candidate back through the healed proxy is not elected while
 * the third leads. */
static void partition_run(part *t)
{
    const char *key = "{pt-res}:fence";
    life old, next, third;
    long long takeover, t_exit, t_heal, t0;
    int ni, ti, held_conns;
    cli_result r;
    elog g;
    char want[64];

    REQUIRE(part_begin(t, "pt", cli_path("part.log"), key, 0) == 0);
    /* (b) the next leader, within the lease + the slack. */
    REQUIRE(wait_starts(t->log, 2, LEASE_MS + 8000) == 0);
    REQUIRE(elog_read(&g, t->log) == 0 && g.n == 2);
    old = g.l[0];
    next = *elog_next_start(&g, old.start_ns);
    takeover = (next.start_ns - t->t_cut) / 1000000;
    CHECKF(takeover <= LEASE_MS + TAKEOVER_SLACK_MS, "takeover after the cut: %lld ms (bound "
           "%d)", takeover, LEASE_MS + TAKEOVER_SLACK_MS);
    REQUIREF((ni = part_idx(t, next.ppid)) > 0, "the next leader's rlk (%ld) is none of the "
             "direct candidates", next.ppid);
    /* (c) the old rlk exits 6 with the partition still in place (docs/elect.md: the loss is the
     * watchdog's report; the resign of a hold known lost is best effort, bounded). */
    {
        int status = cli_wait(&t->p[0], 10000);

        t_exit = mono_ns();
        r = cli_collect(&t->p[0], status, (t_exit - t->t_cut) / 1000000);
        t->done[0] = 1;
        expect_status(&r, 6, "the partitioned leader's rlk");
        CHECKF(strstr(r.err, "lost") != NULL, "the partitioned leader's rlk: %s", r.err);
        cli_result_free(&r);
        CHECKF((t_exit - t->t_cut) / 1000000 <= LEASE_MS + TAKEOVER_SLACK_MS, "the partitioned "
               "rlk exited %lld ms after the cut", (t_exit - t->t_cut) / 1000000);
    }
    /* (a) its command acted on its resource during the partition, and was stopped by its rlk
     * before the lease (counted from a renewal sent before the cut) could run out. */
    REQUIRE(elog_read(&g, t->log) == 0 && g.n == 2);
    old = g.l[0];
    CHECKF(old.last_ok_ns > t->t_cut, "the old command was not acting on its resource during "
           "the partition");
    CHECKF(!old.ended && old.last_ns < t->t_cut + LEASE_MS * 1000000LL, "the old command's "
           "last line %lld ms after the cut (ended on its own: %d)",
           (old.last_ns - t->t_cut) / 1000000, old.ended);
    REQUIRE(wait_acts(t->log, next.pid, 3, 0, 0, 5000) == 0);
    /* (d) heal: what the old rlk sent during the cut is delivered, then its ends. */
    held_conns = tk_proxy_accepted_cut(t->px);
    t_heal = mono_ns();
    tk_proxy_heal(t->px);
    for (t0 = mono_ns(); tk_proxy_open(t->px) > 0 && mono_ns() - t0 < 5000000000LL;)
        rlk_fx_sleep_ms(5);
    CHECKF(tk_proxy_open(t->px) == 0, "%d connections still open through the healed proxy",
           tk_proxy_open(t->px));
    CHECKF(wait_acts(t->log, next.pid, 1, 0, mono_ns(), 5000) == 0, "the next leader stopped "
           "acting after the heal");
    kill(t->p[ni].pid, SIGTERM);
    part_collect(t, ni, 143, "the next leader, SIGTERM");
    REQUIRE(wait_starts(t->log, 3, 10000) == 0);
    REQUIRE(elog_read(&g, t->log) == 0 && g.n == 3);
    third = *elog_next_start(&g, next.start_ns);
    REQUIRE((ti = part_idx(t, third.ppid)) > 0 && ti != ni);
    REQUIRE(wait_acts(t->log, third.pid, 3, 0, 0, 5000) == 0);
    /* The old candidate back through the healed proxy (as a supervisor restarts it): -n, not
     * elected; it sees the third leader. */
    r = RUN("elect", t->name, "--url", t->purl, "-n", "--", child_bin, t->log, key);
    expect_status(&r, 1, "the old candidate again, -n, while the third leads");
    cli_result_free(&r);
    r = RUN("elect", t->name, "--url", t->purl, "--observe", "--count", "1");
    snprintf(want, sizeof want, "leader %lld ", third.term);
    CHECKF(strncmp(r.out, want, strlen(want)) == 0, "through the healed proxy: %s", r.out);
    cli_result_free(&r);
    CHECKF(wait_acts(t->log, third.pid, 1, 0, mono_ns(), 5000) == 0, "the third leader stopped "
           "acting");
    kill(t->p[ti].pid, SIGTERM);
    part_collect(t, ti, 143, "the third leader, SIGTERM");
    snprintf(want, sizeof want, "\"leader\":false,\"term\":%lld", third.term);
    REQUIRE(cli_wait_contains(t->obs.out_path, want, 5000) == 0);
    kill(t->obs.pid, SIGTERM);
    r = cli_collect(&t->obs, cli_wait(&t->obs, 5000), 0);
    t->obs.pid = 0;
    REQUIRE(elog_read(&g, t->log) == 0);
    CHECKF(g.n == 3, "3 leaders expected, the log has %d", g.n);
    CHECKF(elog_check(&g, 0, "partition") == 0, "partition: the log breaks the rules");
    for (int i = 0; i < g.n; i++)
        CHECKF(g.l[i].oks > 0 && g.l[i].fenced == 0 && g.l[i].errs == 0, "leader %ld: %d "
               "accepted, %d refused, %d errors", g.l[i].pid, g.l[i].oks, g.l[i].fenced,
               g.l[i].errs);
    expect_observed(&g, r.out, "partition");
    cli_result_free(&r);
    printf("  partition of the leader (term %lld): its command's last line %lld ms after the "
           "cut, its rlk exited 6 %lld ms after the cut (still cut); term %lld leads %lld ms "
           "after the cut; healed %lld ms after the cut (%d connections made during the cut "
           "delivered); term %lld leads next, the old candidate back is not elected\n", old.term,
           (old.last_ns - t->t_cut) / 1000000, (t_exit - t->t_cut) / 1000000, next.term,
           takeover, (t_heal - t->t_cut) / 1000000, held_conns, third.term);
}

static void test_partition(void)
{
    part t;

    memset(&t, 0, sizeof t);
    partition_run(&t);
    part_cleanup(&t);
}

/* The control: the first leader's command escapes rlk's guard (setsid under an sh that rlk
 * runs), so nothing stops it during the partition. The strict check test_partition passes must
 * fail on this log (the old command alive beside the next leader), and the fence must be what
 * stops it: once the next term acted, every one of its actions is refused, none accepted. */
static void partition_control_run(part *t)
{
    life rogue, next;
    long long takeover;
    int ni, bad;
    elog g;

    REQUIRE(part_begin(t, "pc", cli_path("partc.log"), "{pc-res}:fence", 1) == 0);
    REQUIRE(wait_starts(t->log, 2, LEASE_MS + 8000) == 0);
    REQUIRE(elog_read(&g, t->log) == 0 && g.n == 2);
    rogue = g.l[0];
    next = *elog_next_start(&g, rogue.start_ns);
    t->rogue = rogue.pid;
    takeover = (next.start_ns - t->t_cut) / 1000000;
    CHECKF(takeover <= LEASE_MS + TAKEOVER_SLACK_MS, "control: takeover %lld ms", takeover);
    REQUIREF((ni = part_idx(t, next.ppid)) > 0, "control: the next leader's rlk (%ld) is "
             "none of the direct candidates", next.ppid);
    part_collect(t, 0, 6, "control: the partitioned leader's rlk");
    CHECKF(wait_acts(t->log, rogue.pid, 1, 3, t->t_cut, 5000) == 0, "control: the escaped "
           "command acted during the partition and was refused 3 times");
    kill((pid_t)t->rogue, SIGKILL);
    t->rogue = 0;
    tk_proxy_heal(t->px);
    for (int i = 1; i < 3; i++)     /* the waiting one first */
        if (i != ni) {
            kill(t->p[i].pid, SIGTERM);
            part_collect(t, i, 143, "control: the waiting candidate, SIGTERM");
        }
    kill(t->p[ni].pid, SIGTERM);
    part_collect(t, ni, 143, "control: the next leader, SIGTERM");
    REQUIRE(elog_read(&g, t->log) == 0 && g.n == 2);
    rogue = g.l[0];
    next = g.l[1];
    bad = elog_check(&g, 0, "  (control, expected)");
    CHECKF(bad > 0, "control: the strict check passed on a log whose old command ran beside "
           "the next leader");
    CHECKF(elog_check(&g, rogue.pid, "partition control") == 0, "control: an old-term action "
           "was accepted after the new term's first");
    CHECKF(rogue.fenced >= 3 && rogue.errs == 0 && next.fenced == 0, "control: escaped "
           "command %d refused, %d errors; next leader %d refused", rogue.fenced, rogue.errs,
           next.fenced);
    printf("  control, the partitioned leader's command escaped rlk's guard: it acted until "
           "%lld ms after the cut, %d of its actions refused once term %lld (leading %lld ms "
           "after the cut) acted, none accepted after; the strict check found %d violations\n",
           (rogue.last_ns - t->t_cut) / 1000000, rogue.fenced, next.term, takeover, bad);
}

static void test_partition_control(void)
{
    part t;

    memset(&t, 0, sizeof t);
    partition_control_run(&t);
    part_cleanup(&t);
}

/* Usage errors (one line, exit 2), the command's environment, -n against a leader (exit 1),
 * the observer's text lines. */
static void test_cli_basics(void)
{
    static const char *const usage[][8] = {
        {"elect", NULL},
        {"elect", "--", "true", NULL},
        {"elect", "u", NULL},
        {"elect", "u", "--count", "2", "--", "true", NULL},
        {"elect", "u", "--observe", "--", "true", NULL},
        {"elect", "u", "--observe", "--value", "v", NULL},
        {"elect", "u", "--count", "0", "--observe", NULL},
        {"elect", "u", "--bogus", "--", "true", NULL},
        {"elect", "u", "v", "--", "true", NULL},
    };
    const char *envfile = cli_path("env.out");
    char script[400];
    cli_proc p;
    cli_result r;
    char *env;

    for (size_t i = 0; i < sizeof usage / sizeof usage[0]; i++) {
        r = cli_run(usage[i]);
        expect_status(&r, 2, usage[i][2] ? usage[i][2] : "rlk elect");
        expect_one_line_error(&r, "usage");
        cli_result_free(&r);
    }
    /* The library's message names the election already: not prefixed a second time. */
    {
        char *big = malloc(65538);

        REQUIRE(big);
        memset(big, 'v', 65537);
        big[65537] = '\0';
        r = RUN("elect", "big", "--value", big, "--", "true");
        expect_status(&r, 2, "a value over 64 KiB");
        expect_one_line_error(&r, "a value over 64 KiB");
        CHECK_STR_EQ(r.err, "rlk: election big: value longer than 65536 bytes\n");
        cli_result_free(&r);
        free(big);
    }
    snprintf(script, sizeof script, "echo \"$RLK_ELECT_NAME|$RLK_ELECT_VALUE|$RLK_ELECT_TERM|"
             "$RLK_FENCE_TOKEN\" > %s", envfile);
    r = RUN("elect", "env", "--value", "my value", "--", "sh", "-c", script);
    expect_status(&r, 0, "rlk elect env");
    cli_result_free(&r);
    env = cli_slurp(envfile);
    {
        char name[16] = "", value[16] = "";
        long long term = 0, token = -1;

        CHECKF(sscanf(env, "%15[^|]|%15[^|]|%lld|%lld", name, value, &term, &token) == 4 &&
               strcmp(name, "env") == 0 && strcmp(value, "my value") == 0 && term > 0 &&
               token == term, "the command's environment: %s", env);
    }
    free(env);
    /* A leader holds "busy": -n is exit 1, -E 7 is exit 7. */
    REQUIRE(START(&p, "elect", "busy", "--value", "first", "--hold") == 0);
    {
        long long t0 = mono_ns();
        int led = 0;

        while (!led && mono_ns() - t0 < 10000000000LL) {
            r = RUN("elect", "busy", "--observe", "--count", "1");
            led = strncmp(r.out, "leader ", 7) == 0;
            if (led)
                CHECKF(strstr(r.out, " first\n") != NULL, "observer text: %s", r.out);
            cli_result_free(&r);
            if (!led)
                rlk_fx_sleep_ms(20);
        }
        REQUIRE(led);
    }
    r = RUN("elect", "busy", "-n", "--", "true");
    expect_status(&r, 1, "rlk elect -n against a leader");
    cli_result_free(&r);
    /* -w bounds every command too (docs/cli.md): a call still unanswered at the deadline is
     * exit 3, so the wait leaves room for a loaded machine's round trips (0.2 s did not). */
    r = RUN("elect", "busy", "-w", "2", "-E", "7", "--", "true");
    expect_status(&r, 7, "rlk elect -w 2 -E 7 against a leader");
    cli_result_free(&r);
    kill(p.pid, SIGTERM);
    r = cli_collect(&p, cli_wait(&p, 10000), 0);
    /* 0: led, then resigned on the signal; 143: the signal came while rlk was still ending
     * its wait (elected, not yet holding): leadership given back, as rlk lock does. */
    CHECKF(r.status == 0 || r.status == 143, "rlk elect --hold, SIGTERM: exit %d\n%s", r.status,
           r.err);
    cli_result_free(&r);
    r = RUN("elect", "busy", "--observe", "--count", "1");
    CHECKF(strncmp(r.out, "none ", 5) == 0, "after the resign: %s", r.out);
    cli_result_free(&r);
}

/* The checker against planted logs: each must fail; the clean one must pass. */
static void test_checker_controls(void)
{
    static const struct {
        const char *what, *text;
        long paused;
        int bad;
    } cases[] = {
        {"clean", "start 1 9 100 10\nact 1 110 111 10 ok\nend 1 120 10\n"
                  "start 2 9 200 20\nact 2 210 211 20 ok\nend 2 220 20\n", 0, 0},
        {"two terms acting at once",
         "start 1 9 100 10\nact 1 110 111 10 ok\nstart 2 9 200 20\nact 2 210 211 20 ok\n"
         "act 1 215 216 10 ok\n", 1, 1},
        {"two lives overlapping", "start 1 9 100 10\nact 1 110 111 10 ok\n"
                                  "start 2 9 105 20\nact 2 210 211 20 ok\n", 0, 1},
        {"a smaller term later", "start 1 9 100 20\nend 1 120 20\nstart 2 9 200 10\nend 2 220 10\n",
         0, 1},
        {"paused, refused after resuming", "start 1 9 100 10\nact 1 110 111 10 ok\n"
                                           "start 2 9 200 20\nact 2 210 211 20 ok\n"
                                           "act 1 300 301 10 fenced\n", 1, 0},
        {"paused, accepted: sent before the new term's first reply, reached the resource first",
         "start 1 9 100 10\nact 1 110 111 10 ok\nstart 2 9 200 20\nact 2 210 230 20 ok\n"
         "act 1 220 225 10 ok\n", 1, 0},
        {"paused, accepted: sent after the new term's first reply",
         "start 1 9 100 10\nact 1 110 111 10 ok\nstart 2 9 200 20\nact 2 210 230 20 ok\n"
         "act 1 231 235 10 ok\n", 1, 1},
        {"not paused, accepted: sent after the new term's first was sent",
         "start 1 9 100 10\nact 1 110 111 10 ok\nstart 2 9 200 20\nact 2 210 230 20 ok\n"
         "act 1 220 225 10 ok\n", 0, 1},
    };
    elog g;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int bad;

        REQUIRE(elog_parse(&g, cases[i].text) == 0);
        bad = elog_check(&g, cases[i].paused, cases[i].bad ? "  (control, expected)" : cases[i].what);
        CHECKF((bad > 0) == (cases[i].bad > 0), "checker on '%s': %d violations", cases[i].what,
               bad);
    }
    REQUIRE(elog_parse(&g, "start 1 9 100 10\nact 1 110 111 10 ok\n"
                           "start 2 9 3000000000 20\n") == 0);
    /* The takeover bound: a start 3 s after the fault is late for a 1 s lease. */
    CHECK((elog_next_start(&g, 100)->start_ns - 100) / 1000000 > LEASE_MS + TAKEOVER_SLACK_MS);
    CHECK(elog_parse(&g, "start x\n") != 0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PATH_TO_RLK PATH_TO_ELECT_CHILD\n", argv[0]);
        return 2;
    }
    child_bin = argv[2];
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    setenv("ELECT_FENCE_URL", url, 1);  /* every command's fence: the direct URL */
    RUN_TEST(test_checker_controls);
    RUN_TEST(test_cli_basics);
    RUN_TEST(test_handover);
    RUN_TEST(test_faults);
    RUN_TEST(test_rlk_paused);
    RUN_TEST(test_proxy);
    RUN_TEST(test_partition);
    RUN_TEST(test_partition_control);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_elect");
}
