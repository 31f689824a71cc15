/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop_poll.c - aloop.h on poll(): the adapter with no event library
 * (rlk_async_poll.h), whose hooks are the ones a program with a loop of its
 * own fills in by hand.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE     /* ppoll: rlk_async_poll.h waits in nanoseconds */
#endif

#include <stdlib.h>
#include <time.h>

#include "aloop.h"
#include "rlk_async_poll.h"

struct aloop {
    rlk_async_poll p;
    int attached;
};

static long long aloop_now_ms(void)
{
    return rlk_async_poll_now_ns() / 1000000LL;
}

const char *aloop_name(void)
{
    return "poll";
}

aloop *aloop_new(void)
{
    aloop *l = calloc(1, sizeof *l);

    if (l)
        l->p.timer_at = -1;
    return l;
}

int aloop_attach(aloop *l, rlk_async *ac)
{
    int rc;

    if (l->p.ac)
        return RLK_ERR_ARG;
    rlk_async_poll_free(&l->p);     /* what an earlier client left */
    rc = rlk_async_poll_attach(ac, &l->p);
    l->attached = rc == RLK_OK;
    return rc;
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
        if (l->p.ac) {
            rlk_async_poll_turn(&l->p, (end - now < 50 ? end - now : 50) * 1000000LL);
        } else {    /* no client: a turn would not wait; sleep the slice instead */
            struct timespec ts = {0, (long)((end - now < 5 ? end - now : 5) * 1000000LL)};

            rlk_async_poll_turn(&l->p, 0);
            nanosleep(&ts, NULL);
        }
    }
}

void aloop_free(aloop *l)
{
    if (!l)
        return;
    rlk_async_poll_free(&l->p);
    free(l);
}
