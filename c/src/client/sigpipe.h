/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sigpipe.h - SIGPIPE blocked around one request on a socket (sigpipe.c).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SIGPIPE_H
#define RLK_SIGPIPE_H

#include <signal.h>

/* Blocks SIGPIPE in the calling thread around one request on a socket:
 * rlk_sigpipe_enter before the first write, rlk_sigpipe_leave after the
 * reply or the failure. A SIGPIPE the request raised is consumed. */
typedef struct rlk_sigpipe_guard {
    sigset_t old;
    int active;
} rlk_sigpipe_guard;

void rlk_sigpipe_enter(rlk_sigpipe_guard *g);
/* failed: the request ended in an error (only then may a SIGPIPE be pending). */
void rlk_sigpipe_leave(rlk_sigpipe_guard *g, int failed);

#endif /* RLK_SIGPIPE_H */
