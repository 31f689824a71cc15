/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop_libev.c - aloop.h on a libev loop, the client attached through the
 * adapter header rlk_async_libev.h (what a program does).
 */
#include <stdlib.h>

#include "rlk_async_libev.h"

#include "aloop.h"
#include "aloop_impl.h"

struct aloop {
    struct ev_loop *loop;
    ev_timer tick;          /* every 20 ms: bounds one turn, so run_until sees its timeout */
};

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

/* One turn: it returns within the 20 ms tick. */
static void aloop_turn(aloop *l)
{
    (void)ev_run(l->loop, EVRUN_ONCE);
}

int aloop_run_until(aloop *l, int (*done)(void *), void *arg, long long timeout_ms)
{
    return aloop_turn_until(l, aloop_turn, done, arg, timeout_ms);
}

void aloop_free(aloop *l)
{
    if (l == NULL)
        return;
    ev_timer_stop(l->loop, &l->tick);
    ev_loop_destroy(l->loop);
    free(l);
}
