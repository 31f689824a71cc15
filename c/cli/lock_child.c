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
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

void rlk_lc_fds_snapshot(rlk_lc_fds *s)
{
    s->fds = NULL;
    s->count = 0;
    s->known = 1;
    if (rlk_lc_fds_each(rlk_lc_fds_add, s) < 0)
        s->known = 0;
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

static int rlk_lc_env_ours(const char *entry)
{
    for (int k = 0; rlk_lc_env_names[k]; k++)
        if (strncmp(entry, rlk_lc_env_names[k], strlen(rlk_lc_env_names[k])) == 0)
            return 1;
    return 0;
}

/* rlk's entries sit first; the rest point into environ. */
char **rlk_lc_env(char *const *ours)
{
    size_t n = 0, mine = 0, k = 0;
    char **env;

    while (environ && environ[n])
        n++;
    while (ours[mine])
        mine++;
    env = calloc(n + mine + 1, sizeof *env);
    if (!env)
        return NULL;
    for (size_t i = 0; i < mine; i++)
        env[k++] = ours[i];
    for (size_t i = 0; i < n; i++)
        if (!rlk_lc_env_ours(environ[i]))
            env[k++] = environ[i];
    env[k] = NULL;
    return env;
}

void rlk_lc_env_free(char **env)
{
    free(env);
}

/* ---------------------------------------------------------------- fork + exec */

/* In the child: async-signal-safe calls only. */
static void rlk_lc_child(char *const argv[], char *const env[], const sigset_t *mask, int errfd)
{
    int err;

    sigprocmask(SIG_SETMASK, mask, NULL);
    execvpe(argv[0], argv, env);
    err = errno;
    while (write(errfd, &err, sizeof err) < 0 && errno == EINTR)
        ;
    _exit(127);
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

int rlk_lc_spawn(char *const argv[], char *const env[], const sigset_t *child_mask, pid_t *pid,
                 int *err, int *exec_failed)
{
    int p[2];
    pid_t child;

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
        rlk_lc_child(argv, env, child_mask, p[1]);
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
