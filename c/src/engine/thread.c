/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * thread.c - the runtime's threads start with every signal blocked.
 */
#include <signal.h>

#include "engine/thread.h"

int rlk_thread_start(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    int rc;

    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}
