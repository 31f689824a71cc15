/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk_async_libevent.h - drive an rlk_async client from a libevent 2 loop.
 *
 * Header only (static functions), as hiredis's adapters/libevent.h: a
 * program that includes it links libevent itself (pkg-config libevent) and
 * nothing else of another loop.
 *
 *     struct event_base *base = event_base_new();
 *     rlk_async *ac = rlk_async_new(&opts);
 *     if (rlk_async_libevent_attach(ac, base) != RLK_OK) ...
 *     ... rlk_async_lock(ac, ...) ...
 *     event_base_dispatch(base);
 *
 * One struct event per file descriptor rlk attaches (re-assigned with the
 * new flags when rlk changes its interest: libevent cannot change the flags
 * of a pending event) and one timer event; all freed by the hooks' detach
 * and cleanup (rlk_async_free), none left behind in the base.
 *
 * Timers: libevent times them with CLOCK_MONOTONIC_COARSE unless the base
 * was made with EVENT_BASE_FLAG_PRECISE_TIMER (event_config_set_flag), so
 * the timer may fire up to one kernel tick (1-10 ms) before the time asked;
 * rlk checks its deadlines against its own clock and asks again.
 */
#ifndef RLK_ASYNC_LIBEVENT_H
#define RLK_ASYNC_LIBEVENT_H

#include <event2/event.h>
#include <stdlib.h>
#include <sys/time.h>

#include "rlk_async.h"

/* The adapter's state for one client. */
typedef struct rlk_async_libevent {
    rlk_async *ac;
    struct event_base *base;
    struct event *timer;    /* the client's one timer */
} rlk_async_libevent;

/* One attached file descriptor. */
typedef struct rlk_async_libevent_io {
    rlk_async_libevent *le;
    struct event *ev;
    int fd;
    int events;             /* RLK_ASYNC_READ | RLK_ASYNC_WRITE being watched */
} rlk_async_libevent_io;

/* libevent -> rlk: the fd is ready. Nothing of io is touched after the call:
 * rlk may detach it, or free the client, from inside. */
static inline void rlk_async_libevent_on_io(evutil_socket_t fd, short what, void *arg)
{
    rlk_async_libevent_io *io = (rlk_async_libevent_io *)arg;
    int events = 0;

    if (what & EV_READ)
        events |= RLK_ASYNC_READ;
    if (what & EV_WRITE)
        events |= RLK_ASYNC_WRITE;
    rlk_async_handle_io(io->le->ac, (int)fd, events);
}

/* libevent -> rlk: the timer fired. */
static inline void rlk_async_libevent_on_timer(evutil_socket_t fd, short what, void *arg)
{
    rlk_async_libevent *le = (rlk_async_libevent *)arg;

    (void)fd;
    (void)what;
    rlk_async_handle_timer(le->ac);
}

/* hooks.attach: an event for fd, not yet added (no interest). */
static inline void *rlk_async_libevent_attach_fd(void *data, int fd)
{
    rlk_async_libevent *le = (rlk_async_libevent *)data;
    rlk_async_libevent_io *io = (rlk_async_libevent_io *)calloc(1, sizeof *io);

    if (io == NULL)
        return NULL;
    io->le = le;
    io->fd = fd;
    io->ev = event_new(le->base, fd, EV_PERSIST, rlk_async_libevent_on_io, io);
    if (io->ev == NULL) {
        free(io);
        return NULL;
    }
    return io;
}

/* hooks.watch: delete, re-assign with the new flags, add again (none: stay
 * deleted). event_assign is allowed on an event that is not pending. */
static inline void rlk_async_libevent_watch(void *data, void *handle, int events)
{
    rlk_async_libevent *le = (rlk_async_libevent *)data;
    rlk_async_libevent_io *io = (rlk_async_libevent_io *)handle;
    short flags = EV_PERSIST;

    events &= RLK_ASYNC_READ | RLK_ASYNC_WRITE;
    if (events == io->events)
        return;
    (void)event_del(io->ev);
    io->events = events;
    if (events == 0)
        return;
    if (events & RLK_ASYNC_READ)
        flags |= EV_READ;
    if (events & RLK_ASYNC_WRITE)
        flags |= EV_WRITE;
    (void)event_assign(io->ev, le->base, io->fd, flags, rlk_async_libevent_on_io, io);
    (void)event_add(io->ev, NULL);
}

/* hooks.detach: the event goes (event_free deletes it first). */
static inline void rlk_async_libevent_detach(void *data, void *handle)
{
    rlk_async_libevent_io *io = (rlk_async_libevent_io *)handle;

    (void)data;
    event_free(io->ev);
    free(io);
}

/* hooks.set_timer: (re)arm the one timer ms from now, or stop it (-1). The
 * base's cached time is refreshed first, so that "ms from now" counts from
 * this call even inside a long callback. */
static inline void rlk_async_libevent_set_timer(void *data, long long ms)
{
    rlk_async_libevent *le = (rlk_async_libevent *)data;
    struct timeval tv;

    if (ms < 0) {
        (void)event_del(le->timer);
        return;
    }
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)((ms % 1000) * 1000);
    (void)event_base_update_cache_time(le->base);
    (void)event_add(le->timer, &tv);
}

/* hooks.cleanup: the timer and the adapter's state go. */
static inline void rlk_async_libevent_cleanup(void *data)
{
    rlk_async_libevent *le = (rlk_async_libevent *)data;

    event_free(le->timer);
    free(le);
}

/* Attaches ac to base. RLK_OK; RLK_ERR_ARG (ac or base NULL, or ac attached
 * already: see rlk_async_attach); RLK_ERR_NOMEM. */
static inline int rlk_async_libevent_attach(rlk_async *ac, struct event_base *base)
{
    rlk_async_hooks hooks;
    rlk_async_libevent *le;
    int rc;

    if (ac == NULL || base == NULL)
        return RLK_ERR_ARG;
    le = (rlk_async_libevent *)calloc(1, sizeof *le);
    if (le == NULL)
        return RLK_ERR_NOMEM;
    le->ac = ac;
    le->base = base;
    le->timer = evtimer_new(base, rlk_async_libevent_on_timer, le);
    if (le->timer == NULL) {
        free(le);
        return RLK_ERR_NOMEM;
    }
    hooks.data = le;
    hooks.attach = rlk_async_libevent_attach_fd;
    hooks.watch = rlk_async_libevent_watch;
    hooks.detach = rlk_async_libevent_detach;
    hooks.set_timer = rlk_async_libevent_set_timer;
    hooks.cleanup = rlk_async_libevent_cleanup;
    rc = rlk_async_attach(ac, &hooks);
    if (rc != RLK_OK) {
        event_free(le->timer);
        free(le);
    }
    return rc;
}

#endif /* RLK_ASYNC_LIBEVENT_H */
