/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop_libev.c - aloop.h on a libev loop, the client attached through the
 * adapter header rlk_async_libev.h (what a program does).
 */
#include <stdlib.h>
#include <time.h>

#include "rlk_async_libev.h"

#include "aloop.h"

struct aloop {
    struct ev_loop *loop;
    ev_timer tick;          /* every 20 ms: bounds one turn, so run_until sees its timeout */
};

static long long aloop_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void aloop_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)loop;
    (void)w;
    (void)revents;
}

const char *aloop_name(void)
{
    return "libev";
}

aloop *aloop_new(void)
{
    aloop *l = calloc(1, sizeof *l);

    if (l == NULL)
        return NULL;
    l->loop = ev_loop_new(EVFLAG_AUTO);
    if (l->loop == NULL) {
        free(l);
        return NULL;
    }
    ev_timer_init(&l->tick, aloop_tick, 0.02, 0.02);
    ev_timer_start(l->loop, &l->tick);
    return l;
}

int aloop_attach(aloop *l, rlk_async *ac)
{
    return rlk_async_libev_attach(ac, l->loop);
}

int aloop_run_until(aloop *l, int (*done)(void *), void *arg, long long timeout_ms)
{
    long long end = aloop_now_ms() + timeout_ms;

    for (;;) {
        if (done && done(arg))
            return 1;
        if (aloop_now_ms() >= end)
            return 0;
        (void)ev_run(l->loop, EVRUN_ONCE);
    }
}

void aloop_free(aloop *l)
{
    if (l == NULL)
        return;
    ev_timer_stop(l->loop, &l->tick);
    ev_loop_destroy(l->loop);
    free(l);
}
