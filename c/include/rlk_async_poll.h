/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk_async_poll.h - drive an rlk_async client from poll(), with no event
 * library: for a program whose thread has no loop yet, or as the complete
 * example of the hooks a loop of one's own fills in (docs/async.md, "A loop
 * with no adapter").
 *
 * Header only (static functions), as the other adapters; it needs nothing
 * but POSIX poll(). With _GNU_SOURCE defined before the first #include, a
 * turn waits with ppoll() (nanoseconds); without it, with poll(), its wait
 * rounded up to the next millisecond (rlk's timer then fires up to 1 ms
 * late, never early).
 *
 *     rlk_async_poll p;
 *     rlk_async *ac = rlk_async_new(&opts);
 *     if (rlk_async_poll_attach(ac, &p) != RLK_OK) ...
 *     ... rlk_async_lock(ac, ...) ...
 *     while (!done)
 *         rlk_async_poll_turn(&p, 50 * 1000000LL);   (at most 50 ms a turn)
 *     rlk_async_free(ac);
 *     rlk_async_poll_free(&p);
 *
 * One client per rlk_async_poll; all of it on one thread. A handler may free
 * the client or detach the fd being handled: detached fds are marked and
 * freed at the end of the turn, never while the turn's pollfd array names
 * them.
 */
#ifndef RLK_ASYNC_POLL_H
#define RLK_ASYNC_POLL_H

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rlk_async.h"

/* One attached file descriptor. */
typedef struct rlk_async_poll_fd {
    int fd;
    int events;             /* RLK_ASYNC_READ | RLK_ASYNC_WRITE being watched */
    int dead;               /* detached: freed at the end of the turn */
} rlk_async_poll_fd;

/* The adapter's state for one client (the caller's memory). */
typedef struct rlk_async_poll {
    rlk_async *ac;          /* NULL once the client's cleanup ran */
    rlk_async_poll_fd **fds;
    int nfds, cap;
    long long timer_at;     /* CLOCK_MONOTONIC ns; -1: no timer */
} rlk_async_poll;

/* CLOCK_MONOTONIC in nanoseconds. */
static inline long long rlk_async_poll_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* hooks.attach: a new fd, not watched yet. */
static inline void *rlk_async_poll_attach_fd(void *data, int fd)
{
    rlk_async_poll *p = (rlk_async_poll *)data;
    rlk_async_poll_fd *f;

    if (p->nfds == p->cap) {
        int ncap = p->cap ? 2 * p->cap : 8;
        rlk_async_poll_fd **grown =
            (rlk_async_poll_fd **)realloc(p->fds, (size_t)ncap * sizeof *grown);

        if (grown == NULL)
            return NULL;
        p->fds = grown;
        p->cap = ncap;
    }
    f = (rlk_async_poll_fd *)calloc(1, sizeof *f);
    if (f == NULL)
        return NULL;
    f->fd = fd;
    p->fds[p->nfds++] = f;
    return f;
}

/* hooks.watch */
static inline void rlk_async_poll_watch(void *data, void *handle, int events)
{
    (void)data;
    ((rlk_async_poll_fd *)handle)->events = events;
}

/* hooks.detach: marked; freed at the end of the turn. */
static inline void rlk_async_poll_detach(void *data, void *handle)
{
    (void)data;
    ((rlk_async_poll_fd *)handle)->dead = 1;
}

/* hooks.set_timer */
static inline void rlk_async_poll_set_timer(void *data, long long ms)
{
    rlk_async_poll *p = (rlk_async_poll *)data;

    p->timer_at = ms < 0 ? -1 : rlk_async_poll_now_ns() + ms * 1000000LL;
}

/* hooks.cleanup (from rlk_async_free): every fd was detached; forget the client. */
static inline void rlk_async_poll_cleanup(void *data)
{
    rlk_async_poll *p = (rlk_async_poll *)data;

    p->ac = NULL;
    p->timer_at = -1;
    for (int i = 0; i < p->nfds; i++)
        p->fds[i]->dead = 1;
}

/* Clears p and attaches ac to it (the other adapters' argument order): RLK_OK,
 * or rlk_async_attach's error (RLK_ERR_ARG: ac NULL or attached already). */
static inline int rlk_async_poll_attach(rlk_async *ac, rlk_async_poll *p)
{
    rlk_async_hooks h;
    int rc;

    memset(p, 0, sizeof *p);
    p->timer_at = -1;
    if (ac == NULL)
        return RLK_ERR_ARG;
    p->ac = ac;
    h.data = p;
    h.attach = rlk_async_poll_attach_fd;
    h.watch = rlk_async_poll_watch;
    h.detach = rlk_async_poll_detach;
    h.set_timer = rlk_async_poll_set_timer;
    h.cleanup = rlk_async_poll_cleanup;
    rc = rlk_async_attach(ac, &h);
    if (rc != RLK_OK)
        p->ac = NULL;
    return rc;
}

/* Frees the fds detached during the turn. */
static inline void rlk_async_poll_reap(rlk_async_poll *p)
{
    int j = 0;

    for (int i = 0; i < p->nfds; i++) {
        if (p->fds[i]->dead)
            free(p->fds[i]);
        else
            p->fds[j++] = p->fds[i];
    }
    p->nfds = j;
}

/* One turn: waits at most max_wait_ns (less when rlk's timer is due sooner;
 * < 0: until an fd or the timer), hands the ready fds to rlk, then the timer
 * when due. Returns the number of fds handed over, or -1 with errno (poll's
 * error other than EINTR, or ENOMEM; the turn did nothing). After the
 * client's cleanup a turn only frees what is left, at once. */
static inline int rlk_async_poll_turn(rlk_async_poll *p, long long max_wait_ns)
{
    struct pollfd stackp[32], *pfd = stackp;
    rlk_async_poll_fd *stackw[32], **who = stackw;
    long long now = rlk_async_poll_now_ns(), wait = max_wait_ns;
    int n = 0, rc, handed = 0;

    if (p->ac == NULL) {        /* the client is gone: nothing to wait for */
        rlk_async_poll_reap(p);
        return 0;
    }
    if (p->nfds > 32) {
        pfd = (struct pollfd *)malloc((size_t)p->nfds * sizeof *pfd);
        who = (rlk_async_poll_fd **)malloc((size_t)p->nfds * sizeof *who);
        if (pfd == NULL || who == NULL) {
            free(pfd);
            free(who);
            errno = ENOMEM;
            return -1;
        }
    }
    if (p->timer_at >= 0 && (wait < 0 || p->timer_at - now < wait))
        wait = p->timer_at - now < 0 ? 0 : p->timer_at - now;
    for (int i = 0; i < p->nfds; i++) {
        rlk_async_poll_fd *f = p->fds[i];

        if (f->dead || f->events == 0)
            continue;
        pfd[n].fd = f->fd;
        pfd[n].events = (short)(((f->events & RLK_ASYNC_READ) ? POLLIN : 0) |
                                ((f->events & RLK_ASYNC_WRITE) ? POLLOUT : 0));
        pfd[n].revents = 0;
        who[n++] = f;
    }
#if defined(_GNU_SOURCE)
    {
        struct timespec ts;

        ts.tv_sec = (time_t)(wait / 1000000000LL);
        ts.tv_nsec = (long)(wait % 1000000000LL);
        rc = ppoll(pfd, (nfds_t)n, wait < 0 ? NULL : &ts, NULL);
    }
#else
    rc = poll(pfd, (nfds_t)n, wait < 0 ? -1 : (int)((wait + 999999LL) / 1000000LL));
#endif
    if (rc < 0 && errno != EINTR) {
        if (pfd != stackp) {
            free(pfd);
            free(who);
        }
        return -1;
    }
    for (int i = 0; rc > 0 && i < n; i++) {
        int ev = 0;

        if (pfd[i].revents == 0 || who[i]->dead || p->ac == NULL)
            continue;
        if (pfd[i].revents & (POLLIN | POLLHUP | POLLERR))
            ev |= RLK_ASYNC_READ;
        if (pfd[i].revents & (POLLOUT | POLLHUP | POLLERR))
            ev |= RLK_ASYNC_WRITE;
        ev &= who[i]->events;
        if (ev != 0) {
            rlk_async_handle_io(p->ac, who[i]->fd, ev);
            handed++;
        }
    }
    if (p->ac != NULL && p->timer_at >= 0 && rlk_async_poll_now_ns() >= p->timer_at) {
        p->timer_at = -1;
        rlk_async_handle_timer(p->ac);
    }
    rlk_async_poll_reap(p);
    if (pfd != stackp) {
        free(pfd);
        free(who);
    }
    return handed;
}

/* Frees what p holds: after rlk_async_free of its client (or a failed
 * attach), never from inside a turn (a callback). */
static inline void rlk_async_poll_free(rlk_async_poll *p)
{
    for (int i = 0; i < p->nfds; i++)
        free(p->fds[i]);
    free(p->fds);
    p->fds = NULL;
    p->nfds = p->cap = 0;
}

#endif /* RLK_ASYNC_POLL_H */
