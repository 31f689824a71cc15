/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_watch.c - the main loop of every command rlk runs while it holds
 * something (`rlk lock` in every mode, `rlk semaphore`).
 *
 * One poll() over two descriptors and the timers, no signal handlers:
 *   - a signalfd for SIGCHLD and the signals rlk forwards (blocked in every
 *     thread: the lock runtime's threads block all signals, the main thread
 *     blocks these before the fork), so none is lost between two polls;
 *   - the read end of a pipe the lost-hold callbacks write one byte to, from
 *     the watchdog's (or the permit keeper's) thread;
 *   - the hold's deadline (a fixed lease, RedLock's validity), its renewal
 *     step (RedLock's extend, every third of the lease), its upkeep (the fair
 *     lock's kind marker), and the SIGKILL deadline once the command was sent
 *     SIGTERM.
 *
 * The command runs in a process group of its own: every signal goes to the
 * group. A deadline stops it before the lease ends, not at its end: SIGTERM
 * at deadline - grace - margin, SIGKILL at deadline - margin.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock_cli.h"


void rlk_lc_signal_set(sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGCHLD);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
}

const char *rlk_lc_lost_text(int reason)
{
    switch (reason) {
    case RLK_LOST_GONE:
        return "a renewal found it no longer held: deleted, expired or force-unlocked";
    case RLK_LOST_EXPIRED:
        return "renewals failed until its lease ran out";
    case RLK_LC_LOST_CHECKED:
        return "a check found it no longer held: deleted, expired or force-unlocked";
    default:
        return "reported lost by the watchdog";
    }
}

/* ---------------------------------------------------------------- stopping the command */

/* reason: the rlk_lost_reason of a loss reported by the library; 0 for the hold's own
 * deadline or a failed renew step. */
static void rlk_lc_stop(rlk_lc_watch *w, const char *why, int reason)
{
    long long until = reason ? rlk_lc_hold_protected_until(w->hold, reason) : -1;

    if (w->lost || w->reaped)
        return;
    w->lost = 1;
    w->renew_at_ns = -1;
    snprintf(w->why, sizeof w->why, "%s", why);
    kill(-w->pid, SIGTERM);
    w->kill_deadline_ns = rlk_lc_now_ns() + w->grace_ms * RLK_NS_PER_MS;
    /* SIGKILL no later than margin before the lease ends, by the library's clock. */
    if (w->hold->deadline_ns >= 0 &&
        w->hold->deadline_ns - w->margin_ms * RLK_NS_PER_MS < w->kill_deadline_ns)
        w->kill_deadline_ns = w->hold->deadline_ns - w->margin_ms * RLK_NS_PER_MS;
    /* After a loss the library reported, no later than margin before nothing keeps the next
     * holder out: the lease's end, or with a lock-delay the delay's (the grace capped by it). */
    if (until >= 0 && until - w->margin_ms * RLK_NS_PER_MS < w->kill_deadline_ns)
        w->kill_deadline_ns = until - w->margin_ms * RLK_NS_PER_MS;
}

/* When the command must get SIGTERM so that SIGKILL comes margin before the
 * hold's deadline; -1: no deadline. */
static long long rlk_lc_term_at(const rlk_lc_watch *w)
{
    if (w->hold->deadline_ns < 0)
        return -1;
    return w->hold->deadline_ns - (w->grace_ms + w->margin_ms) * RLK_NS_PER_MS;
}

/* The hold's renewal step, when due: reschedules it, or stops the command. */
static void rlk_lc_renew(rlk_lc_watch *w)
{
    rlk_lc_hold *h = w->hold;
    char why[RLK_LC_WHY_MAX];
    long long retry;
    int rc;

    if (w->lost || w->renew_at_ns < 0 || rlk_lc_now_ns() < w->renew_at_ns)
        return;
    why[0] = '\0';
    rc = h->renew(h, why, sizeof why);
    h->renewals += rc == 0;
    h->renewal_failures += rc != 0;
    if (rc < 0) {
        rlk_lc_stop(w, why, 0);
        return;
    }
    /* A failure that may pass (errors from too many servers) is tried again
     * soon; the deadline stays the bound. */
    retry = h->renew_period_ns / 4 > 50 * RLK_NS_PER_MS ? h->renew_period_ns / 4
                                                         : 50 * RLK_NS_PER_MS;
    w->renew_at_ns = rlk_lc_now_ns() + (rc == 0 ? h->renew_period_ns : retry);
}

/* The hold's upkeep, when due. */
static void rlk_lc_upkeep(rlk_lc_watch *w)
{
    if (w->lost || w->upkeep_at_ns < 0 || rlk_lc_now_ns() < w->upkeep_at_ns)
        return;
    w->hold->upkeep(w->hold);
    w->upkeep_at_ns = rlk_lc_now_ns() + w->hold->upkeep_period_ns;
}

static void rlk_lc_deadlines(rlk_lc_watch *w)
{
    long long now;

    if (w->reaped)
        return;
    rlk_lc_renew(w);
    rlk_lc_upkeep(w);
    now = rlk_lc_now_ns();
    if (!w->lost && w->hold->deadline_ns >= 0 && now >= rlk_lc_term_at(w))
        rlk_lc_stop(w, w->hold->deadline_why, 0);
    if (w->kill_deadline_ns >= 0 && now >= w->kill_deadline_ns) {
        kill(-w->pid, SIGKILL);
        w->killed = 1;
        w->kill_deadline_ns = -1;
    }
}

/* poll() timeout in ms up to the next deadline (rounded up), -1: none. */
static int rlk_lc_timeout(const rlk_lc_watch *w)
{
    long long next = -1, now = rlk_lc_now_ns(), ms;

    if (!w->lost && w->hold->deadline_ns >= 0)
        next = rlk_lc_term_at(w);
    if (!w->lost && w->renew_at_ns >= 0 && (next < 0 || w->renew_at_ns < next))
        next = w->renew_at_ns;
    if (!w->lost && w->upkeep_at_ns >= 0 && (next < 0 || w->upkeep_at_ns < next))
        next = w->upkeep_at_ns;
    if (w->kill_deadline_ns >= 0 && (next < 0 || w->kill_deadline_ns < next))
        next = w->kill_deadline_ns;
    if (next < 0)
        return -1;
    if (next <= now)
        return 0;
    ms = (next - now + RLK_NS_PER_MS - 1) / RLK_NS_PER_MS;
    return ms > 1000000 ? 1000000 : (int)ms;
}

/* ---------------------------------------------------------------- events */

static void rlk_lc_reap(rlk_lc_watch *w)
{
    int status;
    pid_t r;

    do
        r = waitpid(w->pid, &status, WNOHANG);
    while (r < 0 && errno == EINTR);
    if (r == w->pid) {
        w->status = status;
        w->reaped = 1;
    }
}

/* To the command's whole group. The terminal's own signals (Ctrl-C) reach
 * only the foreground group: the command's when it took the terminal, else
 * rlk's, which then passes them on. */
static void rlk_lc_forward(rlk_lc_watch *w, const struct signalfd_siginfo *si)
{
    if (w->reaped)
        return;
    kill(-w->pid, (int)si->ssi_signo);
}

static int rlk_lc_read_signals(rlk_lc_watch *w)
{
    struct signalfd_siginfo si;
    ssize_t n;

    while ((n = read(w->sigfd, &si, sizeof si)) == (ssize_t)sizeof si) {
        if (si.ssi_signo == SIGCHLD)
            rlk_lc_reap(w);
        else
            rlk_lc_forward(w, &si);
    }
    if (n < 0 && errno != EAGAIN && errno != EINTR)
        return -1;
    return 0;
}

static void rlk_lc_read_lost(rlk_lc_watch *w)
{
    unsigned char reason[16];
    ssize_t n = read(w->lost_fd, reason, sizeof reason);

    if (n > 0)
        rlk_lc_stop(w, rlk_lc_lost_text(reason[0]), reason[0]);
}

/* The command is stopped for good when rlk itself cannot go on. */
static int rlk_lc_abort(rlk_lc_watch *w, const char *what)
{
    rlk_cli_fail(RLK_EXIT_REPLY, "%s: %s; killing the command", what, strerror(errno));
    kill(-w->pid, SIGKILL);
    while (waitpid(w->pid, &w->status, 0) < 0 && errno == EINTR)
        ;
    w->reaped = 1;
    return -1;
}

int rlk_lc_watch_run(rlk_lc_watch *w)
{
    w->status = 0;
    w->lost = w->killed = w->reaped = 0;
    w->why[0] = '\0';
    w->kill_deadline_ns = -1;
    w->renew_at_ns = -1;
    if (w->hold->renew && w->hold->renew_period_ns > 0)
        w->renew_at_ns = rlk_lc_now_ns() + w->hold->renew_period_ns;
    w->upkeep_at_ns = -1;
    if (w->hold->upkeep && w->hold->upkeep_period_ns > 0)
        w->upkeep_at_ns = rlk_lc_now_ns() + w->hold->upkeep_period_ns;
    rlk_lc_reap(w);     /* a command that ended before the first poll */
    while (!w->reaped) {
        struct pollfd p[2] = {{w->sigfd, POLLIN, 0}, {w->lost_fd, POLLIN, 0}};

        if (poll(p, 2, rlk_lc_timeout(w)) < 0 && errno != EINTR)
            return rlk_lc_abort(w, "poll");
        if ((p[0].revents & POLLIN) && rlk_lc_read_signals(w) < 0)
            return rlk_lc_abort(w, "reading signals");
        if (p[1].revents & POLLIN)
            rlk_lc_read_lost(w);
        rlk_lc_deadlines(w);
    }
    /* A lost hold: what the command left running in its group (it had
     * SIGTERM already) does not outlive it. */
    if (w->lost)
        kill(-w->pid, SIGKILL);
    return 0;
}
