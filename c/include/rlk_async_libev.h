/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk_async_libev.h - drive an rlk_async client from a libev loop.
 *
 * Header only (static functions), as hiredis's adapters/libev.h: a program
 * that includes it links libev itself (-lev; Debian ships no .pc for it).
 *
 *     struct ev_loop *loop = EV_DEFAULT;
 *     rlk_async *ac = rlk_async_new(&opts);
 *     if (rlk_async_libev_attach(ac, loop) != RLK_OK) ...
 *     ... rlk_async_lock(ac, ...) ...
 *     ev_run(loop, 0);
 *
 * One ev_io per file descriptor rlk attaches and one ev_timer. libev lets
 * ev_io_set change a watcher only while it is stopped: watch stops it, sets
 * the new events and starts it again. Watchers are the adapter's memory,
 * freed by detach and cleanup once stopped (libev keeps no reference to a
 * stopped watcher).
 */
#ifndef RLK_ASYNC_LIBEV_H
#define RLK_ASYNC_LIBEV_H

#include <ev.h>
#include <stddef.h>
#include <stdlib.h>

#include "rlk_async.h"

/* The adapter's state for one client; timer.data = this. */
typedef struct rlk_async_libev {
    ev_timer timer;         /* the client's one timer */
    rlk_async *ac;
    struct ev_loop *loop;
} rlk_async_libev;

/* One attached file descriptor; w.data = this. */
typedef struct rlk_async_libev_io {
    ev_io w;
    rlk_async_libev *lv;
    int fd;
    int events;             /* RLK_ASYNC_READ | RLK_ASYNC_WRITE being watched */
} rlk_async_libev_io;

/* libev -> rlk: the fd is ready (EV_ERROR: the events being watched are
 * reported, so that rlk meets the error itself). Nothing of io is touched
 * after the call. */
static inline void rlk_async_libev_on_io(struct ev_loop *loop, ev_io *w, int revents)
{
    rlk_async_libev_io *io = (rlk_async_libev_io *)w->data;
    int events = 0;

    (void)loop;
    if (revents & EV_ERROR)
        events = io->events;
    if (revents & EV_READ)
        events |= RLK_ASYNC_READ;
    if (revents & EV_WRITE)
        events |= RLK_ASYNC_WRITE;
    if (events != 0)
        rlk_async_handle_io(io->lv->ac, io->fd, events);
}

/* libev -> rlk: the timer fired. */
static inline void rlk_async_libev_on_timer(struct ev_loop *loop, ev_timer *w, int revents)
{
    rlk_async_libev *lv = (rlk_async_libev *)w->data;

    (void)loop;
    (void)revents;
    rlk_async_handle_timer(lv->ac);
}

/* hooks.attach: a watcher for fd, not started (no interest). */
static inline void *rlk_async_libev_attach_fd(void *data, int fd)
{
    rlk_async_libev *lv = (rlk_async_libev *)data;
    rlk_async_libev_io *io = (rlk_async_libev_io *)calloc(1, sizeof *io);

    if (io == NULL)
        return NULL;
    ev_io_init(&io->w, rlk_async_libev_on_io, fd, 0);
    io->w.data = io;
    io->lv = lv;
    io->fd = fd;
    return io;
}

/* hooks.watch: stop, set the new events (only allowed on a stopped
 * watcher), start again unless there are none. */
static inline void rlk_async_libev_watch(void *data, void *handle, int events)
{
    rlk_async_libev *lv = (rlk_async_libev *)data;
    rlk_async_libev_io *io = (rlk_async_libev_io *)handle;
    int evev = 0;

    events &= RLK_ASYNC_READ | RLK_ASYNC_WRITE;
    if (events == io->events)
        return;
    io->events = events;
    if (events & RLK_ASYNC_READ)
        evev |= EV_READ;
    if (events & RLK_ASYNC_WRITE)
        evev |= EV_WRITE;
    ev_io_stop(lv->loop, &io->w);
    ev_io_set(&io->w, io->fd, evev);
    if (evev != 0)
        ev_io_start(lv->loop, &io->w);
}

/* hooks.detach: stop (ev_io_stop also drops a pending event), free. */
static inline void rlk_async_libev_detach(void *data, void *handle)
{
    rlk_async_libev *lv = (rlk_async_libev *)data;
    rlk_async_libev_io *io = (rlk_async_libev_io *)handle;

    ev_io_stop(lv->loop, &io->w);
    free(io);
}

/* hooks.set_timer: (re)arm the one timer ms from now (the loop's cached
 * time refreshed first), or stop it (-1). */
static inline void rlk_async_libev_set_timer(void *data, long long ms)
{
    rlk_async_libev *lv = (rlk_async_libev *)data;

    ev_timer_stop(lv->loop, &lv->timer);
    if (ms < 0)
        return;
    ev_now_update(lv->loop);
    ev_timer_set(&lv->timer, (ev_tstamp)ms / 1000.0, 0.);
    ev_timer_start(lv->loop, &lv->timer);
}

/* hooks.cleanup: stop the timer, free the state. */
static inline void rlk_async_libev_cleanup(void *data)
{
    rlk_async_libev *lv = (rlk_async_libev *)data;

    ev_timer_stop(lv->loop, &lv->timer);
    free(lv);
}

/* Attaches ac to loop. RLK_OK; RLK_ERR_ARG (ac or loop NULL, or ac attached
 * already: see rlk_async_attach); RLK_ERR_NOMEM. */
static inline int rlk_async_libev_attach(rlk_async *ac, struct ev_loop *loop)
{
    rlk_async_hooks hooks;
    rlk_async_libev *lv;
    int rc;

    if (ac == NULL || loop == NULL)
        return RLK_ERR_ARG;
    lv = (rlk_async_libev *)calloc(1, sizeof *lv);
    if (lv == NULL)
        return RLK_ERR_NOMEM;
    lv->ac = ac;
    lv->loop = loop;
    ev_timer_init(&lv->timer, rlk_async_libev_on_timer, 0., 0.);
    lv->timer.data = lv;
    hooks.data = lv;
    hooks.attach = rlk_async_libev_attach_fd;
    hooks.watch = rlk_async_libev_watch;
    hooks.detach = rlk_async_libev_detach;
    hooks.set_timer = rlk_async_libev_set_timer;
    hooks.cleanup = rlk_async_libev_cleanup;
    rc = rlk_async_attach(ac, &hooks);
    if (rc != RLK_OK)
        free(lv);
    return rc;
}

#endif /* RLK_ASYNC_LIBEV_H */
