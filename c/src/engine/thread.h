/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * thread.h - starting the runtime's threads (thread.c): the subscriber,
 * the watchdog, the permit-expirable semaphore's keeper.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_THREAD_H
#define RLK_THREAD_H

#include <pthread.h>

/* pthread_create with every signal blocked in the new thread (signals
 * belong to the application's threads). 0 or an errno. */
int rlk_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

#endif /* RLK_THREAD_H */
