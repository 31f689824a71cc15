/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk_async_libuv.h - drive an rlk_async client from a libuv loop.
 *
 * Header only (static functions), as hiredis's adapters/libuv.h: a program
 * that includes it links libuv itself (pkg-config libuv). Under a strict
 * -std=c11, uv.h needs POSIX declared (-D_POSIX_C_SOURCE=200809L, or
 * -std=gnu11) for pthread_rwlock_t.
 *
 *     uv_loop_t *loop = uv_default_loop();
 *     rlk_async *ac = rlk_async_new(&opts);
 *     if (rlk_async_libuv_attach(ac, loop) != RLK_OK) ...
 *     ... rlk_async_lock(ac, ...) ...
 *     uv_run(loop, UV_RUN_DEFAULT);
 *
 * One uv_poll_t per file descriptor rlk attaches and one uv_timer_t. libuv
 * frees nothing itself and still references a handle until its close
 * callback has run, so detach and cleanup uv_close the handle and free its
 * memory in the close callback: after rlk_async_free, let the loop turn
 * once more (uv_run(loop, UV_RUN_NOWAIT), or the running uv_run) before
 * uv_loop_close, or uv_loop_close returns UV_EBUSY and the adapter's few
 * bytes are not freed.
 */
#ifndef RLK_ASYNC_LIBUV_H
#define RLK_ASYNC_LIBUV_H

#include <stdlib.h>
#include <uv.h>

#include "rlk_async.h"

/* The adapter's state for one client; the timer handle comes first, so
 * that the timer's close callback frees the whole struct. */
typedef struct rlk_async_libuv {
    uv_timer_t timer;       /* the client's one timer; timer.data = this */
    rlk_async *ac;
    uv_loop_t *loop;
} rlk_async_libuv;

/* One attached file descriptor; poll.data = this. */
typedef struct rlk_async_libuv_io {
    uv_poll_t poll;
    rlk_async_libuv *lu;
    int fd;
    int events;             /* RLK_ASYNC_READ | RLK_ASYNC_WRITE being watched */
} rlk_async_libuv_io;

/* libuv -> rlk: the fd is ready, or polling it failed (status < 0: the
 * events being watched are reported, so that rlk's read or write meets the
 * error itself). Nothing of io is touched after the call. */
static inline void rlk_async_libuv_on_io(uv_poll_t *handle, int status, int uvev)
{
    rlk_async_libuv_io *io = (rlk_async_libuv_io *)handle->data;
    int events = 0;

    if (status < 0) {
        events = io->events;
    } else {
        if (uvev & UV_READABLE)
            events |= RLK_ASYNC_READ;
        if (uvev & UV_WRITABLE)
            events |= RLK_ASYNC_WRITE;
    }
    if (events != 0)
        rlk_async_handle_io(io->lu->ac, io->fd, events);
}

/* libuv -> rlk: the timer fired. */
static inline void rlk_async_libuv_on_timer(uv_timer_t *handle)
{
    rlk_async_libuv *lu = (rlk_async_libuv *)handle->data;

    rlk_async_handle_timer(lu->ac);
}

/* hooks.attach: a poll handle for fd, not started (no interest). */
static inline void *rlk_async_libuv_attach_fd(void *data, int fd)
{
    rlk_async_libuv *lu = (rlk_async_libuv *)data;
    rlk_async_libuv_io *io = (rlk_async_libuv_io *)calloc(1, sizeof *io);

    if (io == NULL)
        return NULL;
    if (uv_poll_init(lu->loop, &io->poll, fd) != 0) {
        free(io);  /* a failed init leaves no handle in the loop */
        return NULL;
    }
    io->poll.data = io;
    io->lu = lu;
    io->fd = fd;
    return io;
}

/* hooks.watch: uv_poll_start with the new events replaces the old ones;
 * none: uv_poll_stop. */
static inline void rlk_async_libuv_watch(void *data, void *handle, int events)
{
    rlk_async_libuv_io *io = (rlk_async_libuv_io *)handle;
    int uvev = 0;

    (void)data;
    events &= RLK_ASYNC_READ | RLK_ASYNC_WRITE;
    if (events == io->events)
        return;
    io->events = events;
    if (events & RLK_ASYNC_READ)
        uvev |= UV_READABLE;
    if (events & RLK_ASYNC_WRITE)
        uvev |= UV_WRITABLE;
    if (uvev == 0)
        (void)uv_poll_stop(&io->poll);
    else
        (void)uv_poll_start(&io->poll, uvev, rlk_async_libuv_on_io);
}

/* The poll handle's close callback: libuv is done with it. */
static inline void rlk_async_libuv_io_closed(uv_handle_t *handle)
{
    free(handle->data);
}

/* hooks.detach: stop at once (rlk closes the fd next), free when libuv has
 * closed the handle. */
static inline void rlk_async_libuv_detach(void *data, void *handle)
{
    rlk_async_libuv_io *io = (rlk_async_libuv_io *)handle;

    (void)data;
    (void)uv_poll_stop(&io->poll);
    uv_close((uv_handle_t *)&io->poll, rlk_async_libuv_io_closed);
}

/* hooks.set_timer: (re)arm the one timer ms from now (the loop's cached time
 * refreshed first), or stop it (-1). */
static inline void rlk_async_libuv_set_timer(void *data, long long ms)
{
    rlk_async_libuv *lu = (rlk_async_libuv *)data;

    if (ms < 0) {
        (void)uv_timer_stop(&lu->timer);
        return;
    }
    uv_update_time(lu->loop);
    (void)uv_timer_start(&lu->timer, rlk_async_libuv_on_timer, (uint64_t)ms, 0);
}

/* The timer's close callback frees the adapter's state. */
static inline void rlk_async_libuv_timer_closed(uv_handle_t *handle)
{
    free(handle->data);
}

/* hooks.cleanup: close the timer; its close callback frees the state. */
static inline void rlk_async_libuv_cleanup(void *data)
{
    rlk_async_libuv *lu = (rlk_async_libuv *)data;

    (void)uv_timer_stop(&lu->timer);
    uv_close((uv_handle_t *)&lu->timer, rlk_async_libuv_timer_closed);
}

/* Attaches ac to loop. RLK_OK; RLK_ERR_ARG (ac or loop NULL, or ac attached
 * already: see rlk_async_attach); RLK_ERR_NOMEM. */
static inline int rlk_async_libuv_attach(rlk_async *ac, uv_loop_t *loop)
{
    rlk_async_hooks hooks;
    rlk_async_libuv *lu;
    int rc;

    if (ac == NULL || loop == NULL)
        return RLK_ERR_ARG;
    lu = (rlk_async_libuv *)calloc(1, sizeof *lu);
    if (lu == NULL)
        return RLK_ERR_NOMEM;
    lu->ac = ac;
    lu->loop = loop;
    if (uv_timer_init(loop, &lu->timer) != 0) {
        free(lu);
        return RLK_ERR_NOMEM;
    }
    lu->timer.data = lu;
    hooks.data = lu;
    hooks.attach = rlk_async_libuv_attach_fd;
    hooks.watch = rlk_async_libuv_watch;
    hooks.detach = rlk_async_libuv_detach;
    hooks.set_timer = rlk_async_libuv_set_timer;
    hooks.cleanup = rlk_async_libuv_cleanup;
    rc = rlk_async_attach(ac, &hooks);
    if (rc != RLK_OK)
        uv_close((uv_handle_t *)&lu->timer, rlk_async_libuv_timer_closed);
    return rc;
}

#endif /* RLK_ASYNC_LIBUV_H */
