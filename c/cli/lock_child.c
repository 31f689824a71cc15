/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_child.c - starting the command of `rlk lock`: its environment, the
 * descriptors it must not inherit, fork + exec with exec errors reported
 * back through a close-on-exec pipe.
 *
 * rlk is multithreaded by then (the lock runtime's watchdog and subscriber),
 * so the child does only async-signal-safe work between fork and exec:
 * everything it needs (argv, environment, close-on-exec flags) is prepared
 * before the fork.
 *
 * The command dies with rlk: it runs in a process group of its own (the
 * group rlk signals), with PR_SET_PDEATHSIG SIGKILL (the direct child), and
 * a guard process forked after it kills the whole group with SIGKILL when
 * rlk's end of a pipe closes without the "done" byte (rlk killed).
 */
#include <dirent.h>
#include <linux/close_range.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "lock_cli.h"

extern char **environ;

/* ---------------------------------------------------------------- descriptors */

static int rlk_lc_fds_has(const rlk_lc_fds *s, int fd)
{
    for (size_t k = 0; k < s->count; k++)
        if (s->fds[k] == fd)
            return 1;
    return 0;
}

/* Calls fn(fd, arg) for every open descriptor above 2 (not the listing's own). 0 or -1. */
static int rlk_lc_fds_each(void (*fn)(int fd, void *arg), void *arg)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;

    if (!d)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char *end;
        long fd = strtol(e->d_name, &end, 10);

        if (*end == '\0' && end != e->d_name && fd > 2 && fd != dirfd(d))
            fn((int)fd, arg);
    }
    closedir(d);
    return 0;
}

static void rlk_lc_fds_add(int fd, void *arg)
{
    rlk_lc_fds *s = arg;
    int *grown = realloc(s->fds, (s->count + 1) * sizeof *grown);

    if (!grown) {
        s->known = 0;   /* cannot tell inherited from new ones: mark nothing */
        return;
    }
    s->fds = grown;
    s->fds[s->count++] = fd;
}

static int rlk_lc_fd_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;

    return (x > y) - (x < y);
}

void rlk_lc_fds_snapshot(rlk_lc_fds *s)
{
    s->fds = NULL;
    s->count = 0;
    s->known = 1;
    if (rlk_lc_fds_each(rlk_lc_fds_add, s) < 0)
        s->known = 0;
    if (s->count > 1)
        qsort(s->fds, s->count, sizeof *s->fds, rlk_lc_fd_cmp);
}

/* In the child (async-signal-safe): close-on-exec for every descriptor
 * above 2 but the inherited ones (sorted), including sockets a library
 * thread opened after rlk_lc_fds_cloexec_new ran in the parent. */
static void rlk_lc_child_cloexec(const rlk_lc_fds *keep)
{
    unsigned int lo = 3;

    if (!keep || !keep->known)
        return;
    for (size_t k = 0; k < keep->count; k++) {
        unsigned int fd = (unsigned int)keep->fds[k];

        if (fd < lo)
            continue;
        if (fd > lo)
            close_range(lo, fd - 1, CLOSE_RANGE_CLOEXEC);
        lo = fd + 1;
    }
    close_range(lo, ~0U, CLOSE_RANGE_CLOEXEC);
}

void rlk_lc_fds_free(rlk_lc_fds *s)
{
    free(s->fds);
    s->fds = NULL;
    s->count = 0;
}

static void rlk_lc_fds_mark(int fd, void *arg)
{
    const rlk_lc_fds *s = arg;
    int flags;

    if (rlk_lc_fds_has(s, fd))
        return;
    flags = fcntl(fd, F_GETFD);
    if (flags >= 0 && !(flags & FD_CLOEXEC))
        fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void rlk_lc_fds_cloexec_new(const rlk_lc_fds *s)
{
    if (s->known)
        rlk_lc_fds_each(rlk_lc_fds_mark, (void *)s);
}

/* ---------------------------------------------------------------- environment */

/* The variables rlk sets for a command: a command run by a nested rlk never
 * sees its parent's values for a variable this mode does not set. */
static const char *const rlk_lc_env_names[] = {
    "RLK_LOCK_NAME=", "RLK_LOCK_OWNER=", "RLK_LOCK_KIND=", "RLK_FENCE_TOKEN=", NULL,
};

/* 1 when list has an entry for entry's variable. */
static int rlk_lc_env_in(char *const *list, const char *entry)
{
    size_t n = strcspn(entry, "=");

    for (int k = 0; list && list[k]; k++)
        if (strncmp(list[k], entry, n) == 0 && list[k][n] == '=')
            return 1;
    return 0;
}

static int rlk_lc_env_ours(const char *entry)
{
    for (int k = 0; rlk_lc_env_names[k]; k++)
        if (strncmp(entry, rlk_lc_env_names[k], strlen(rlk_lc_env_names[k])) == 0)
            return 1;
    return 0;
}

/* rlk's entries sit first; the rest point into environ. */
char **rlk_lc_env(char *const *ours, char *const *more)
{
    size_t n = 0, mine = 0, extra = 0, k = 0;
    char **env;

    while (environ && environ[n])
        n++;
    while (ours[mine])
        mine++;
    while (more && more[extra])
        extra++;
    env = calloc(n + mine + extra + 1, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < mine; i++)
        env[k++] = ours[i];
    for (size_t i = 0; i < extra; i++)
        env[k++] = more[i];
    for (size_t i = 0; i < n; i++)
        if (!rlk_lc_env_ours(environ[i]) && !rlk_lc_env_in(ours, environ[i]) &&
            !rlk_lc_env_in(more, environ[i]))
            env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

void rlk_lc_env_free(char **env)
{
    free(env);
}

/* ---------------------------------------------------------------- fork + exec */

/* 1 when rlk is in the terminal's foreground process group: the command's
 * group then takes the terminal (a shell's job control does the same). */
static int rlk_lc_has_tty(void)
{
    return isatty(STDIN_FILENO) && tcgetpgrp(STDIN_FILENO) == getpgrp();
}

/* In the child: async-signal-safe calls only. Its own process group; SIGKILL
 * when rlk dies (the getppid check closes the race with a parent that died
 * before prctl); the terminal when rlk had it. */
static void rlk_lc_child(char *const argv[], char *const env[], const sigset_t *mask, int errfd,
                         pid_t parent, int tty, const rlk_lc_fds *keep)
{
    sigset_t ttou;
    int err;

    rlk_lc_child_cloexec(keep);
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
        _exit(137);
    if (tty) {
        sigemptyset(&ttou);
        sigaddset(&ttou, SIGTTOU);
        sigprocmask(SIG_BLOCK, &ttou, NULL);
        tcsetpgrp(STDIN_FILENO, getpid());
    }
    sigprocmask(SIG_SETMASK, mask, NULL);
    execvpe(argv[0], argv, env);
    err = errno;
    while (write(errfd, &err, sizeof err) < 0 && errno == EINTR)
        ;
    _exit(127);
}

void rlk_lc_tty_restore(void)
{
    sigset_t ttou, old;

    if (!isatty(STDIN_FILENO) || tcgetpgrp(STDIN_FILENO) == getpgrp())
        return;
    sigemptyset(&ttou);
    sigaddset(&ttou, SIGTTOU);
    pthread_sigmask(SIG_BLOCK, &ttou, &old);
    tcsetpgrp(STDIN_FILENO, getpgrp());
    pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* ---------------------------------------------------------------- the guard */

/* In the guard (async-signal-safe only): waits for rlk's end of the pipe;
 * "done" (one byte) or EOF after it: exit; EOF alone (rlk died): SIGKILL to
 * the command's group. */
static void rlk_lc_guard(int fd, pid_t group)
{
    unsigned char b;
    ssize_t n;

    setpgid(0, 0);      /* a signal to rlk's group does not end the guard */
    do
        n = read(fd, &b, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        kill(-group, SIGKILL);
    _exit(0);
}

int rlk_lc_guard_start(pid_t group, rlk_lc_guard_t *g)
{
    int p[2];
    pid_t pid;

    g->pid = -1;
    g->fd = -1;
    if (pipe2(p, O_CLOEXEC) < 0)
        return -1;
    pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        close(p[1]);
        rlk_lc_guard(p[0], group);
    }
    close(p[0]);
    g->pid = pid;
    g->fd = p[1];
    return 0;
}

void rlk_lc_guard_stop(rlk_lc_guard_t *g)
{
    unsigned char done = 'd';

    if (g->fd < 0)
        return;
    while (write(g->fd, &done, 1) < 0 && errno == EINTR)
        ;
    close(g->fd);
    while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    g->fd = -1;
    g->pid = -1;
}

/* The errno the child reported, or 0 once exec closed the pipe. */
static int rlk_lc_exec_result(int fd)
{
    int err = 0;
    ssize_t n;

    do
        n = read(fd, &err, sizeof err);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)sizeof err ? err : 0;
}

int rlk_lc_spawn(char *const argv[], char *const env[], const sigset_t *child_mask,
                 const rlk_lc_fds *keep, pid_t *pid, int *err, int *exec_failed)
{
    int p[2], tty = rlk_lc_has_tty();
    pid_t child, parent = getpid();

    *exec_failed = 0;
    if (pipe2(p, O_CLOEXEC) < 0) {
        *err = errno;
        return -1;
    }
    child = fork();
    if (child < 0) {
        *err = errno;
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (child == 0)
        rlk_lc_child(argv, env, child_mask, p[1], parent, tty, keep);
    setpgid(child, child);  /* also here: signals to the group work at once */
    close(p[1]);
    *err = rlk_lc_exec_result(p[0]);
    close(p[0]);
    if (*err != 0) {
        *exec_failed = 1;
        while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
            ;
        return -1;
    }
    *pid = child;
    return 0;
}
