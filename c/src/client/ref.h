/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ref.h - a reference count under its owner's mutex (header only): what a
 * thing shared by the threads that use it (the TLS settings and their
 * sessions; the async client's inner client and dials, with their dial
 * threads) counts, freed by whoever drops the last reference.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_REF_H
#define RLK_REF_H

#include <pthread.h>

/* Drops one reference (*refs, guarded by mu): 1 when it was the last (the
 * caller frees the thing, mutex included), else 0. */
static inline int rlk_ref_put(pthread_mutex_t *mu, int *refs)
{
    int last;

    pthread_mutex_lock(mu);
    last = --*refs == 0;
    pthread_mutex_unlock(mu);
    return last;
}

#endif /* RLK_REF_H */
