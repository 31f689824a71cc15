/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop_libuv.c - aloop.h on a libuv loop, the client attached through the
 * adapter header rlk_async_libuv.h (what a program does).
 */
#include <stdio.h>
#include <stdlib.h>

#include "rlk_async_libuv.h"

#include "aloop.h"
#include "aloop_impl.h"

struct aloop {
    uv_loop_t loop;
    uv_timer_t tick;        /* every 20 ms: bounds one turn, so run_until sees its timeout */
    int tick_live;
};

static void aloop_tick(uv_timer_t *t)
{
    (void)t;
}

const char *aloop_name(void)
{
    return "libuv";
}

aloop *aloop_new(void)
{
    aloop *l = calloc(1, sizeof *l);

    if (l == NULL)
        return NULL;
    if (uv_loop_init(&l->loop) != 0) {
        free(l);
        return NULL;
    }
    (void)uv_timer_init(&l->loop, &l->tick);
    (void)uv_timer_start(&l->tick, aloop_tick, 20, 20);
    l->tick_live = 1;
    return l;
}

int aloop_attach(aloop *l, rlk_async *ac)
{
    return rlk_async_libuv_attach(ac, &l->loop);
}

/* One turn: it returns within the 20 ms tick. */
static void aloop_turn(aloop *l)
{
    (void)uv_run(&l->loop, UV_RUN_ONCE);
}

int aloop_run_until(aloop *l, int (*done)(void *), void *arg, long long timeout_ms)
{
    return aloop_turn_until(l, aloop_turn, done, arg, timeout_ms);
}

/* The client was freed (its handles closed by the adapter): the loop turns
 * until their close callbacks have run, then closes. A handle left open is
 * reported: the adapter or the engine forgot one. */
void aloop_free(aloop *l)
{
    int rc = 0;

    if (l == NULL)
        return;
    if (l->tick_live)
        uv_close((uv_handle_t *)&l->tick, NULL);
    for (int i = 0; i < 100; i++) {
        (void)uv_run(&l->loop, UV_RUN_NOWAIT);
        rc = uv_loop_close(&l->loop);
        if (rc == 0)
            break;
    }
    if (rc != 0) {
        fprintf(stderr, "aloop_libuv: uv_loop_close: %s (a handle left open)\n", uv_strerror(rc));
        abort();
    }
    free(l);
}
