/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop_poll.c - aloop.h on poll(): rlk_async_hooks filled in by hand, the
 * way a program with a loop of its own drives rlk (no adapter).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aloop.h"

#define ALOOP_MAX_FDS 64

/* One attached file descriptor; dead ones are freed at the end of a turn. */
typedef struct aloop_fd {
    int fd;
    int events;
    int dead;
} aloop_fd;

struct aloop {
    rlk_async *ac;
    aloop_fd *fds[ALOOP_MAX_FDS];
    int nfds;
    long long timer_at;         /* monotonic ms; -1: none */
};

static long long aloop_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

const char *aloop_name(void)
{
    return "poll";
}

aloop *aloop_new(void)
{
    aloop *l = calloc(1, sizeof *l);

    if (l)
        l->timer_at = -1;
    return l;
}

static void *aloop_attach_fd(void *data, int fd)
{
    aloop *l = data;
    aloop_fd *f;

    if (l->nfds == ALOOP_MAX_FDS || !(f = calloc(1, sizeof *f)))
        return NULL;
    f->fd = fd;
    l->fds[l->nfds++] = f;
    return f;
}

static void aloop_watch(void *data, void *handle, int events)
{
    (void)data;
    ((aloop_fd *)handle)->events = events;
}

static void aloop_detach(void *data, void *handle)
{
    (void)data;
    ((aloop_fd *)handle)->dead = 1;
}

static void aloop_set_timer(void *data, long long ms)
{
    aloop *l = data;

    l->timer_at = ms < 0 ? -1 : aloop_now_ms() + ms;
}

static void aloop_cleanup(void *data)
{
    aloop *l = data;

    l->ac = NULL;
    l->timer_at = -1;
    for (int i = 0; i < l->nfds; i++)
        l->fds[i]->dead = 1;
}

int aloop_attach(aloop *l, rlk_async *ac)
{
    rlk_async_hooks h = {l, aloop_attach_fd, aloop_watch, aloop_detach, aloop_set_timer,
                         aloop_cleanup};
    int rc;

    if (l->ac)
        return RLK_ERR_ARG;
    l->ac = ac;
    rc = rlk_async_attach(ac, &h);
    if (rc != RLK_OK)
        l->ac = NULL;
    return rc;
}

/* Frees the fds detached during the turn. */
static void aloop_reap(aloop *l)
{
    int j = 0;

    for (int i = 0; i < l->nfds; i++) {
        if (l->fds[i]->dead)
            free(l->fds[i]);
        else
            l->fds[j++] = l->fds[i];
    }
    l->nfds = j;
}

/* One turn: wait at most max_ms for an fd or the timer, dispatch. */
static void aloop_turn(aloop *l, long long max_ms)
{
    struct pollfd p[ALOOP_MAX_FDS];
    aloop_fd *who[ALOOP_MAX_FDS];
    long long now = aloop_now_ms(), wait = max_ms;
    int n = 0, rc;

    if (l->timer_at >= 0)
        wait = l->timer_at <= now ? 0 : (l->timer_at - now < wait ? l->timer_at - now : wait);
    for (int i = 0; i < l->nfds; i++) {
        aloop_fd *f = l->fds[i];

        if (f->dead || !f->events)
            continue;
        p[n].fd = f->fd;
        p[n].events = (short)(((f->events & RLK_ASYNC_READ) ? POLLIN : 0) |
                              ((f->events & RLK_ASYNC_WRITE) ? POLLOUT : 0));
        p[n].revents = 0;
        who[n++] = f;
    }
    rc = poll(p, (nfds_t)n, (int)(wait < 0 ? 0 : wait));
    if (rc < 0 && errno != EINTR)
        rc = 0;
    for (int i = 0; rc > 0 && i < n; i++) {
        int ev = 0;

        if (!p[i].revents || who[i]->dead || !l->ac)
            continue;
        if (p[i].revents & (POLLIN | POLLHUP | POLLERR))
            ev |= RLK_ASYNC_READ;
        if (p[i].revents & (POLLOUT | POLLHUP | POLLERR))
            ev |= RLK_ASYNC_WRITE;
        ev &= who[i]->events ? who[i]->events : 0;
        if (ev)
            rlk_async_handle_io(l->ac, who[i]->fd, ev);
    }
    if (l->ac && l->timer_at >= 0 && aloop_now_ms() >= l->timer_at) {
        l->timer_at = -1;
        rlk_async_handle_timer(l->ac);
    }
    aloop_reap(l);
}

int aloop_run_until(aloop *l, int (*done)(void *), void *arg, long long timeout_ms)
{
    long long end = aloop_now_ms() + timeout_ms;

    for (;;) {
        long long now;

        if (done && done(arg))
            return 1;
        now = aloop_now_ms();
        if (now >= end)
            return 0;
        aloop_turn(l, end - now < 50 ? end - now : 50);
    }
}

void aloop_free(aloop *l)
{
    if (!l)
        return;
    for (int i = 0; i < l->nfds; i++)
        free(l->fds[i]);
    free(l);
}
