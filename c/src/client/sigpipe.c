/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sigpipe.c - keep a write to a closed socket from killing the process.
 *
 * hiredis writes with write(2), which raises SIGPIPE when the server has
 * closed the connection. A library must not change the process's signal
 * dispositions, so the calling thread blocks SIGPIPE for the duration of a
 * request; a SIGPIPE that the request itself raised is consumed before the
 * old mask comes back (the write has already failed with EPIPE, which hiredis
 * reports). Only a failed request can have raised one, so a request that
 * went well costs two pthread_sigmask calls and nothing else.
 * Threads the library starts itself block SIGPIPE for their whole life.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>

#include "client/sigpipe.h"

void rlk_sigpipe_enter(rlk_sigpipe_guard *g)
{
    sigset_t set;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    /* Active only when this call blocked it: had SIGPIPE been unblocked in
     * this thread, none can be pending for it now (it would have been
     * delivered), so whatever is pending at leave was raised in between. */
    g->active = pthread_sigmask(SIG_BLOCK, &set, &g->old) == 0 && !sigismember(&g->old, SIGPIPE);
}

void rlk_sigpipe_leave(rlk_sigpipe_guard *g, int failed)
{
    sigset_t set, pending;
    const struct timespec zero = {0, 0};

    if (!g->active)
        return;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    /* A write that raised SIGPIPE failed (EPIPE): after a request that went
     * well there is nothing to consume, and no need to ask. */
    if (failed && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE)) {
        int rc;
        do {
            rc = sigtimedwait(&set, NULL, &zero);
        } while (rc < 0 && errno == EINTR);
    }
    pthread_sigmask(SIG_SETMASK, &g->old, NULL);
    g->active = 0;
}
