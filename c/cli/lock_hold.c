/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_hold.c - running a command while something is held, the same way for
 * every mode: the session (inherited descriptors, the lost-report pipe), the
 * lost-hold callback, and the run itself (signals blocked, the command
 * started with the hold's environment, lock_watch.c's loop, the release and
 * the final exit code and message).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lock_cli.h"
#include "wait_report.h"

#define RLK_LC_LOST_RELEASE_MS 500     /* the release of a hold known lost: at most this long */

/* ---------------------------------------------------------------- the hold */

void rlk_lc_hold_init(rlk_lc_hold *h, const char *fmt, ...)
{
    va_list ap;

    memset(h, 0, sizeof *h);
    h->deadline_ns = -1;
    va_start(ap, fmt);
    vsnprintf(h->what, sizeof h->what, fmt, ap);
    va_end(ap);
}

int rlk_lc_hold_setenv(rlk_lc_hold *h, const char *key, const char *value)
{
    size_t len = strlen(key) + strlen(value) + 2;
    int k = 0;

    while (k < RLK_LC_ENV_MAX && h->env[k])
        k++;
    if (k == RLK_LC_ENV_MAX || !(h->env[k] = malloc(len)))
        return -1;
    snprintf(h->env[k], len, "%s=%s", key, value);
    return 0;
}

void rlk_lc_hold_free(rlk_lc_hold *h)
{
    for (int k = 0; k < RLK_LC_ENV_MAX; k++) {
        free(h->env[k]);
        h->env[k] = NULL;
    }
    free(h->check_channel);
    h->check_channel = NULL;
}

void rlk_lc_hold_fixed_lease(rlk_lc_hold *h, long long acquired_ns, long long lease_ms)
{
    h->deadline_ns = acquired_ns + lease_ms * 1000000LL;
    snprintf(h->deadline_why, sizeof h->deadline_why, "its lease of %lld ms was running out",
             lease_ms);
}

void rlk_lc_hold_lease(rlk_lc_hold *h, long long acquired_ns, long long lease_ms)
{
    long long start = 0, deadline = 0;

    if (!h->lease || h->lease(h, &start, &deadline) != RLK_OK) {
        rlk_lc_hold_fixed_lease(h, acquired_ns, lease_ms);
        return;
    }
    rlk_lc_hold_fixed_lease(h, 0, lease_ms);   /* the message */
    h->deadline_ns = deadline;
}

long long rlk_lc_hold_protected_until(rlk_lc_hold *h, int reason)
{
    long long start = 0, deadline = 0, delay_ns = h->delay_ms * RLK_NS_PER_MS;
    int rc;

    if (!h->lease)
        return -1;
    rc = h->lease(h, &start, &deadline);
    if (rc != RLK_OK && rc != RLK_ERR_LOST)
        return -1;
    if (reason == RLK_LOST_GONE || reason == RLK_LC_LOST_CHECKED)
        return h->delay_ms > 0 ? start + delay_ns : -1;
    return deadline + (h->delay_ms > 0 ? delay_ns : 0);
}

/* ---------------------------------------------------------------- the session */

int rlk_lc_session_open(rlk_lc_session *s)
{
    int p[2];

    rlk_lc_fds_snapshot(&s->inherited);
    if (pipe2(p, O_CLOEXEC | O_NONBLOCK) < 0) {
        rlk_lc_fds_free(&s->inherited);
        return rlk_cli_fail(RLK_EXIT_REPLY, "pipe: %s", strerror(errno));
    }
    s->lost_rd = p[0];
    s->lost_wr = p[1];
    return -1;
}

void rlk_lc_session_close(rlk_lc_session *s)
{
    close(s->lost_rd);
    close(s->lost_wr);
    rlk_lc_fds_free(&s->inherited);
}

void rlk_lc_lost_cb(const char *name, const char *owner, int reason, void *userdata)
{
    const rlk_lc_sink *sink = userdata;
    unsigned char byte = (unsigned char)reason;

    (void)owner;
    if (sink->name && strcmp(name, sink->name) != 0)
        return;
    /* Non-blocking: when the pipe is full a report is already waiting, and
     * one is all the main loop needs. */
    if (write(sink->fd, &byte, 1) < 0)
        return;
}

/* ---------------------------------------------------------------- running */

int rlk_lc_status_code(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return RLK_EXIT_REPLY;
}

/* Starts the command with the signals blocked (old: the mask it gets); -1
 * on success (*pid set), else an exit code. */
static int rlk_lc_start(const rlk_lc_hold *h, const rlk_lc_session *s, const rlk_lc_opts *o,
                        const sigset_t *old, pid_t *pid)
{
    char **pass = rlk_cli_pass_on_env(o->url, !h->no_server_url);
    char **env = pass ? rlk_lc_env(h->env, pass) : NULL;
    int err = 0, exec_failed = 0, rc;

    if (!env) {
        rlk_cli_env_list_free(pass);
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    }
    rlk_lc_fds_cloexec_new(&s->inherited);
    rc = rlk_lc_spawn(o->cmd, env, old, &s->inherited, pid, &err, &exec_failed);
    rlk_lc_env_free(env);
    rlk_cli_env_list_free(pass);
    if (rc == 0)
        return -1;
    if (!exec_failed)
        return rlk_cli_fail(RLK_EXIT_REPLY, "cannot start '%s': %s", o->cmd[0], strerror(err));
    return rlk_cli_fail(err == ENOENT ? 127 : 126, "cannot run '%s': %s", o->cmd[0],
                        strerror(err));
}

/* Runs the command with the signals blocked; its exit code, or -2 plus *w
 * filled when it ran. */
static int rlk_lc_run_blocked(rlk_lc_hold *h, const rlk_lc_session *s, const rlk_lc_opts *o,
                              const sigset_t *set, const sigset_t *old, rlk_lc_watch *w)
{
    int sigfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
    rlk_lc_checker checker;
    rlk_lc_guard_t guard;
    pid_t pid;
    int rc;

    if (sigfd < 0)
        return rlk_cli_fail(RLK_EXIT_REPLY, "signalfd: %s", strerror(errno));
    rc = rlk_lc_start(h, s, o, old, &pid);
    if (rc < 0) {
        rlk_lc_checker_start(&checker, h, s->lost_wr);    /* signals blocked: inherited */
        memset(w, 0, sizeof *w);
        w->pid = pid;
        w->sigfd = sigfd;
        w->lost_fd = s->lost_rd;
        w->hold = h;
        w->grace_ms = o->grace_ms;
        w->margin_ms = o->margin_ms;
        if (rlk_lc_guard_start(pid, &guard) < 0)
            rlk_cli_fail(RLK_EXIT_REPLY, "warning: no guard process (%s): if rlk is killed, "
                         "only the command's own process dies with it", strerror(errno));
        rc = rlk_lc_watch_run(w) == 0 ? -2 : RLK_EXIT_REPLY;
        rlk_lc_checker_stop(&checker);     /* no check after this: the release comes next */
        rlk_lc_guard_stop(&guard);
        rlk_lc_tty_restore();
    }
    close(sigfd);
    return rc;
}

/* rc: the release's error. RLK_ERR_NOTIFY (released, the wake-up refused), RLK_ERR_NOREPLICAS
 * (released, too few replicas acknowledged: a warning, the command's exit code stands) and the
 * messages of an ACL refusal say themselves what happened; anything else leaves the lock to its
 * lease. */
static void rlk_lc_release_failed(rlk_lc_hold *h, int rc)
{
    const char *e = h->errstr(h);

    if (rc == RLK_ERR_NOTIFY || rc == RLK_ERR_NOREPLICAS || strstr(e, "refused by ACL"))
        rlk_cli_fail(RLK_EXIT_REPLY, "%s", e);
    else
        rlk_cli_fail(RLK_EXIT_REPLY, "%s: release failed (%s); it expires with its lease",
                     h->what, e);
}

/* The release after the command; the final exit code. */
static int rlk_lc_finish(rlk_lc_hold *h, const rlk_lc_opts *o, const rlk_lc_watch *w)
{
    char grace[32], why[RLK_LC_WHY_MAX];
    int rc;

    /* A hold known lost is released best effort only: its server may be
     * the reason (unreachable, stopped), and rlk must not hang on it for a
     * whole command timeout before it exits. */
    if (w->lost)
        rlk_thread_time_limit(RLK_LC_LOST_RELEASE_MS);
    rc = h->release(h);
    rlk_thread_time_limit(-1);

    if (w->lost) {
        rlk_lc_format_seconds(o->grace_ms, grace, sizeof grace);
        snprintf(why, sizeof why, "%s", w->why);
        if (h->describe_loss)
            h->describe_loss(h, why, sizeof why);
        if (o->hold)    /* no command of the user's: the hold itself is what ended */
            return rlk_cli_fail(RLK_EXIT_LOST, "%s lost (%s); --hold ended: it is no longer "
                                "held by this rlk", h->what, why);
        return rlk_cli_fail(RLK_EXIT_LOST, "%s lost (%s); command stopped%s%s%s", h->what, why,
                            w->killed ? " with SIGKILL after " : "", w->killed ? grace : "",
                            w->killed ? " s" : "");
    }
    if (rc == RLK_ERR_NOT_OWNER || rc == RLK_ERR_LOST)
        return rlk_cli_fail(RLK_EXIT_LOST, "%s lost (no longer held when the command ended "
                            "with exit %d)", h->what, rlk_lc_status_code(w->status));
    if (rc != RLK_OK)
        rlk_lc_release_failed(h, rc);
    /* --hold: the end it waits for is Ctrl-C (or SIGTERM, SIGHUP): a success. */
    if (o->hold && WIFSIGNALED(w->status) &&
        (WTERMSIG(w->status) == SIGINT || WTERMSIG(w->status) == SIGTERM ||
         WTERMSIG(w->status) == SIGHUP))
        return RLK_EXIT_OK;
    return rlk_lc_status_code(w->status);
}

int rlk_lc_hold_run(rlk_lc_hold *h, const rlk_lc_session *s, const rlk_lc_opts *o)
{
    long long acquired_ns = rlk_lc_now_ns();
    sigset_t set, old;
    rlk_lc_watch w;
    int rc;

    rlk_wr_stop(1);  /* --verbose: the wait is over */
    fflush(NULL);   /* nothing buffered may be written twice by the child */
    rlk_lc_signal_set(&set);
    pthread_sigmask(SIG_BLOCK, &set, &old);
    if (h->child_mask)
        old = *h->child_mask;
    if (o->hold) {
        /* Started with `&` by a shell without job control, rlk inherits SIGINT ignored: an
         * ignored signal is discarded, not queued, so neither rlk (signals blocked, read from a
         * signalfd) nor its sleep would ever see the Ctrl-C promised here. Back to the default
         * (blocked meanwhile; the sleep inherits the default too). */
        signal(SIGINT, SIG_DFL);
        rlk_cli_fail(0, "%s: held until Ctrl-C (SIGINT, SIGTERM or SIGHUP releases it)", h->what);
        fflush(stderr);
    }
    rc = rlk_lc_run_blocked(h, s, o, &set, &old, &w);
    if (rc == -2) {
        rc = rlk_lc_finish(h, o, &w);  /* signals stay blocked: rlk exits right after */
        rlk_lc_stats_print(o, h->what, h, acquired_ns, rlk_lc_now_ns(), rc);
        return rc;
    }
    int release_rc = h->release(h);

    if (release_rc != RLK_OK)
        rlk_lc_release_failed(h, release_rc);
    rlk_lc_stats_print(o, h->what, h, acquired_ns, rlk_lc_now_ns(), rc);
    return rc;
}

/* ---------------------------------------------------------------- signals while waiting */

static void *rlk_lc_sigwatch_main(void *arg)
{
    rlk_lc_sigwatch *w = arg;
    struct timespec tick = {0, 50 * 1000000L};     /* how soon it notices `done` */

    while (!atomic_load(&w->done)) {
        int sig = sigtimedwait(&w->set, NULL, &tick);

        if (sig > 0) {
            atomic_store(&w->sig, sig);
            for (int i = 0; i < w->nclients; i++)
                rlk_interrupt_waits(w->clients[i]);
            break;
        }
    }
    return NULL;
}

void rlk_lc_sigwatch_start(rlk_lc_sigwatch *w, rlk_client *const *clients, int nclients)
{
    memset(w, 0, sizeof *w);
    w->clients = clients;
    w->nclients = nclients;
    sigemptyset(&w->set);
    sigaddset(&w->set, SIGINT);
    sigaddset(&w->set, SIGTERM);
    sigaddset(&w->set, SIGHUP);
    sigaddset(&w->set, SIGQUIT);
    pthread_sigmask(SIG_BLOCK, &w->set, &w->old);
    w->started = pthread_create(&w->thread, NULL, rlk_lc_sigwatch_main, w) == 0;
}

int rlk_lc_sigwatch_stop(rlk_lc_sigwatch *w)
{
    atomic_store(&w->done, 1);
    if (w->started)
        pthread_join(w->thread, NULL);
    w->started = 0;
    return atomic_load(&w->sig);
}

void rlk_lc_sigwatch_restore(const rlk_lc_sigwatch *w)
{
    pthread_sigmask(SIG_SETMASK, &w->old, NULL);
}

int rlk_lc_sigwatch_end(rlk_lc_sigwatch *w, int rc, const char *what, const char *detail,
                        void (*give_back)(void *arg), void *arg)
{
    int sig = rlk_lc_sigwatch_stop(w);

    if (rc == RLK_OK && !sig)
        return -1;
    if (sig && rc == RLK_OK && give_back)
        give_back(arg);     /* acquired as the signal came: given back, signals still blocked */
    rlk_lc_sigwatch_restore(w);
    if (!sig)
        return -2;
    return rlk_cli_fail(128 + sig, "%s: interrupted by signal %d (%s) while waiting%s", what, sig,
                        strsignal(sig), detail ? detail : "");
}
