/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * aloop.h - the tests' event loop (c/tests/async): one interface, one
 * implementation per loop (aloop_poll.c: poll() with the hooks filled in by
 * hand, the "loop with no adapter" of rlk_async.h; aloop_libevent.c,
 * aloop_libuv.c, aloop_libev.c: the adapters). The cases (async_cases.c)
 * are written against this header only and linked with each implementation.
 */
#ifndef RLK_TEST_ALOOP_H
#define RLK_TEST_ALOOP_H

#include "rlk_async.h"

typedef struct aloop aloop;

/* A new loop; NULL when out of memory. */
aloop *aloop_new(void);

/* The loop's name ("poll", "libevent", ...): for messages. */
const char *aloop_name(void);

/* Attaches ac to the loop (rlk_async_attach with this loop's hooks).
 * One client per loop at a time; RLK_OK or rlk_async_attach's error. */
int aloop_attach(aloop *l, rlk_async *ac);

/* Runs the loop until done(arg) returns nonzero (checked before the first
 * turn and after every turn) or timeout_ms of the monotonic clock passed.
 * 1: done; 0: timed out. done NULL: run for timeout_ms. */
int aloop_run_until(aloop *l, int (*done)(void *), void *arg, long long timeout_ms);

/* Frees the loop (after rlk_async_free of its client, whose cleanup hook
 * detaches it). */
void aloop_free(aloop *l);

#endif /* RLK_TEST_ALOOP_H */
