/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt.h - the per-client runtime state (rt.c): the client's uuid, holder
 * ids "<uuid>:<thread id>", the counters, the lost-lock callbacks, and the
 * subscriber (sub.h) and hold registry (wd.h) it creates and owns. Created
 * on first use (no I/O), freed by rlk_free (defined in rt.c).
 *
 * Not installed; not a stable API. The runtime tests include it for
 * rlk_runtime_stats_get().
 */
#ifndef RLK_RT_H
#define RLK_RT_H

#include <pthread.h>
#include <stddef.h>

#include "rlk.h"
#include "client/random.h"
#include "engine/counters.h"
#include "runtime/sub.h"
#include "runtime/wd.h"

#define RLK_OWNER_MAX 1024          /* longest holder id the scripts accept */

/* A snapshot of one client's runtime counters (since rlk_connect). */
typedef struct rlk_runtime_stats {
    unsigned long long acquire_calls;   /* reentrant/acquire round trips */
    unsigned long long acquired;        /* of which acquired or re-entered */
    unsigned long long rechecks;        /* sleeps that were a re-check after another ticket's
                                           claim window (reentrant/acquire -3), not a wake-up */
    unsigned long long waits;           /* sleeps on a channel's wake permit */
    unsigned long long wake_permits;    /* ... ended by a message 0 (a permit) */
    unsigned long long wake_all;        /* ... ended by a message 1 or a reconnect */
    unsigned long long ttl_wakeups;     /* ... ran out on the holder's TTL (no message came) */
    unsigned long long sub_connects;    /* subscriber connections opened */
    unsigned long long sub_drops;       /* subscriber connections lost */
    unsigned long long subscribes;      /* SUBSCRIBE commands sent */
    unsigned long long unsubscribes;    /* UNSUBSCRIBE commands sent */
    unsigned long long renew_calls;     /* renewal round trips (watchdog, permit keeper) */
    unsigned long long renew_errors;    /* ... that failed */
    unsigned long long renew_unacked;   /* renewal calls (watchdog, permit keeper) that fewer
                                           than rlk_options.min_replicas replicas acknowledged */
    unsigned long long locks_lost;      /* lost-lock declarations */
    unsigned long long lost_replies;    /* lock calls whose reply was lost, then settled */
    unsigned long long lost_adopted;    /* ... acquires that had run: the hold was kept */
    unsigned long long lost_not_run;    /* ... acquires that had not taken the lock */
    unsigned long long lost_unsettled;  /* lock calls whose lost reply could not be settled
                                           (RLK_ERR_UNSETTLED) */
    unsigned long long lost_given_back; /* holds the server counted that the caller was never
                                           told of (lost calls that ran), released */
    unsigned long long sub_wakeups;     /* subscriber thread wake-ups that brought messages */
    unsigned long long sub_messages;    /* pub/sub messages the subscriber received */
} rlk_runtime_stats;

#define RLK_RT_COUNT(rt, field) RLK_COUNT(&(rt)->counters, field)

typedef struct rlk_rt {
    rlk_client *c;
    char uuid[RLK_UUID_LEN + 1];
    rlk_sub *sub;                   /* created with the state; its thread starts lazily */
    rlk_wd *wd;                     /* likewise; reports lost locks to rt.c */
    pthread_mutex_t cb_mu;          /* guards the callback pairs */
    rlk_lost_fn lost_fn;
    void *lost_ud;
    rlk_lost_kind_fn lost_kind_fn;  /* set by rlk_set_lost_kind_callback */
    void *lost_kind_ud;
    rlk_rt_counters counters;
    atomic_int interrupted;         /* set by rlk_interrupt_waits: every wait ends */
} rlk_rt;

/* The client's runtime state, created on first use (no I/O); installs
 * rlk_free. NULL only when out of memory (error recorded on c). */
rlk_rt *rlk_rt_get(rlk_client *c);
/* Frees c's runtime state (NULL, or none made: nothing), not c: what the async client does
 * with the runtime of the client it prepared, whose dial threads may outlive it. */
void rlk_rt_free(rlk_client *c);

/* 1 once rlk_interrupt_waits was called on c (its waits end), else 0; never creates the
 * runtime. For waits outside the runtime (RedLock's retries). */
int rlk_rt_interrupted(rlk_client *c);

/* A snapshot of the counters. RLK_ERR_NOMEM if the state cannot be made. */
int rlk_runtime_stats_get(rlk_client *c, rlk_runtime_stats *out);

/* Gives c's uuid the first four hex digits of uuid, the ones its client number
 * comes from (kinds/names.h, rlk_names_wake_cid): the tickets c's waiters queue
 * then carry that client's number, so the wait-for graph (docs/deadlock.md)
 * counts them as that client's (a nested `rlk lock` as its parent's). Two
 * clients of one number share a wake channel and each ignores the other's
 * grants, as any two that draw the same number. Only before c's first handle
 * (a handle's wake channel keeps the number it was made with). RLK_OK; RLK_ERR_ARG: uuid does
 * not start with four hex digits; RLK_ERR_NOMEM. */
int rlk_rt_share_cid(rlk_client *c, const char *uuid);

/* "<uuid>:<thread id>" of the calling thread into buf (RLK_ERR_ARG if short). */
int rlk_rt_thread_owner(const rlk_rt *rt, char *buf, size_t len);

#endif /* RLK_RT_H */
