/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop_libevent.c - aloop.h on a libevent event_base, the client attached
 * through the adapter header rlk_async_libevent.h (what a program does).
 */
#include <stdlib.h>

#include "rlk_async_libevent.h"

#include "aloop.h"
#include "aloop_impl.h"

struct aloop {
    struct event_base *base;
    struct event *tick;     /* every 20 ms: bounds one turn, so run_until sees its timeout */
};

static void aloop_tick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
}

const char *aloop_name(void)
{
    return "libevent";
}

aloop *aloop_new(void)
{
    aloop *l = calloc(1, sizeof *l);
    struct timeval tv = {0, 20000};

    if (l == NULL)
        return NULL;
    l->base = event_base_new();
    l->tick = l->base ? event_new(l->base, -1, EV_PERSIST, aloop_tick, NULL) : NULL;
    if (l->tick == NULL || event_add(l->tick, &tv) != 0) {
        aloop_free(l);
        return NULL;
    }
    return l;
}

int aloop_attach(aloop *l, rlk_async *ac)
{
    return rlk_async_libevent_attach(ac, l->base);
}

/* One turn: it returns within the 20 ms tick. */
static void aloop_turn(aloop *l)
{
    (void)event_base_loop(l->base, EVLOOP_ONCE);
}

int aloop_run_until(aloop *l, int (*done)(void *), void *arg, long long timeout_ms)
{
    return aloop_turn_until(l, aloop_turn, done, arg, timeout_ms);
}

void aloop_free(aloop *l)
{
    if (l == NULL)
        return;
    if (l->tick)
        event_free(l->tick);
    if (l->base)
        event_base_free(l->base);
    free(l);
}
