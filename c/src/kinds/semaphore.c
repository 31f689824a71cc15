/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * semaphore.c - the semaphore API (rlk_semaphore_*): Redisson's RSemaphore
 * on the scripts/semaphore scripts. A string key `name` holds the available
 * permits. A waiter queues "<ticket> <permits>" in {name}:rlk_waiters
 * (semaphore/acquire); a release (or add_permits) that leaves enough
 * permits for the first waiter reserves them for it ({name}:rlk_next) and
 * grants it alone on this client's wake channel redisson_sc:{name}:rlk:<cid>;
 * the count still goes out on redisson_sc:{name}, where only the first
 * waiter listens (for Redisson's releases). docs/locks/semaphore.md
 * describes the data and the API, docs/runtime.md the queue.
 */
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/expiry.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "kinds/semaphore.h"
#include "kinds/sem_queue.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/wait.h"

const rlk_proto_call rlk_semaphore_acquire_call = {"semaphore/acquire",
                                                  "n ticket claim_ms publish"};
const rlk_proto_call rlk_semaphore_release_call = {"semaphore/release", "n claim_ms publish"};
const rlk_proto_call rlk_semaphore_release_if_exists_call = {"semaphore/release_if_exists",
                                                            "n claim_ms publish"};
const rlk_proto_call rlk_semaphore_try_set_ttl_call = {"semaphore/try_set_permits_ttl",
                                                      "n ttl publish"};
static const rlk_proto_call rlk_sem_add_permits_call = {"semaphore/add_permits",
                                                        "n claim_ms publish"};
static const rlk_proto_call rlk_sem_try_set_call = {"semaphore/try_set_permits", "n publish"};
static const rlk_proto_call rlk_sem_drain_call = {"semaphore/drain", ""};
static const rlk_proto_call rlk_sem_available_call = {"semaphore/available", ""};

struct rlk_semaphore {
    rlk_fam_base b;             /* channel: redisson_sc:{name}; keys: the waiter queue's; wake:
                                   redisson_sc:{name}:rlk:<cid>, this client's wake channel */
};

static const rlk_fam_kind rlk_semaphore_kind = {
    "rlk_semaphore_new", "semaphore", RLK_NAMES_CH_SEMAPHORE, rlk_fam_prefix_name, NULL
};

/* ---------------------------------------------------------------- handles */

rlk_semaphore *rlk_semaphore_new(rlk_client *c, const char *name)
{
    return rlk_handle_new(c, name, sizeof(rlk_semaphore), &rlk_semaphore_kind, RLK_HANDLE_WAKE,
                          "semaphore", "channel waiters grant");
}

void rlk_semaphore_free(rlk_semaphore *s)
{
    rlk_fam_free(s);
}

const char *rlk_semaphore_name(const rlk_semaphore *s)
{
    return s ? s->b.name : NULL;
}

const char *rlk_semaphore_channel(const rlk_semaphore *s)
{
    return s ? s->b.channel : NULL;
}

/* ---------------------------------------------------------------- acquiring */

typedef struct rlk_sem_try {
    rlk_semaphore *s;
    long long n;
    rlk_sem_queue_try qt;       /* its place in the queue */
    rlk_acq_sem m;              /* the machine (kinds/acq.h) */
} rlk_sem_try;

/* Gives the permits of an acquisition too few replicas acknowledged back
 * (semaphore/release: the count goes back up, and a queued waiter is
 * granted). */
static int rlk_sem_undo(void *arg)
{
    rlk_sem_try *t = arg;
    rlk_proto_argvals v = {.n = t->n};

    return rlk_handle_int(&t->s->b, &rlk_semaphore_release_call, &v, NULL);
}

/* rlk_wait_attempt_fn: semaphore/acquire with the ticket (queued: -ticket), through the machine
 * (rlk_handle_sem_attempt). */
static int rlk_sem_attempt(void *arg, long long *bound_ms)
{
    rlk_sem_try *t = arg;

    return rlk_handle_sem_attempt(&t->s->b, &t->m, &t->qt, &rlk_semaphore_acquire_call,
                                  (rlk_proto_argvals){.n = t->n}, 0, NULL, NULL, bound_ms,
                                  rlk_sem_undo, t);
}

/* No outage ride-out: an acquire whose reply was lost may have taken the permits, and
 * repeating it could take them twice; the wait ends with the machine's RLK_ERR_UNSETTLED and its
 * ticket leaves the queue. */
int rlk_semaphore_try_acquire(rlk_semaphore *s, long long permits, long long wait_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(s ? &s->b : NULL);
    rlk_sem_try t = {.s = s, .n = permits};
    int rc = s ? rlk_fam_check_range(s->b.c, "acquire", s->b.name, "permits", permits, 1,
                                     RLK_NUM_MAX)
               : RLK_ERR_ARG;

    if (rc == RLK_OK) {
        t.m = (rlk_acq_sem){"semaphore", s->b.name, rlk_semaphore_acquire_call.script, permits,
                            .counters = &s->b.rt->counters};
        rc = rlk_sem_queue_acquire(&s->b, &t.qt, permits, rlk_sem_attempt, &t, 0,
                                   rlk_clock_now_ns(), wait_ms, "semaphore");
    }
    return rlk_handle_call_end(&hc, RLK_MKIND_SEMAPHORE, rc);
}

int rlk_semaphore_acquire(rlk_semaphore *s, long long permits)
{
    return rlk_semaphore_try_acquire(s, permits, -1);
}

/* ---------------------------------------------------------------- counting */

int rlk_semaphore_release(rlk_semaphore *s, long long permits, long long *count)
{
    if (!s)
        return RLK_ERR_ARG;
    return rlk_handle_write(&s->b, "release", "permits", permits, 1, &rlk_semaphore_release_call,
                            &(rlk_proto_argvals){.n = permits}, count);
}

int rlk_semaphore_release_if_exists(rlk_semaphore *s, long long permits, int *released)
{
    long long n = 0;
    int rc = s ? rlk_handle_write(&s->b, "release_if_exists", "permits", permits, 1,
                                  &rlk_semaphore_release_if_exists_call,
                                  &(rlk_proto_argvals){.n = permits}, &n)
               : RLK_ERR_ARG;

    if (released)
        *released = n == 1;     /* 0 on every error but too few replicas */
    return rc;
}

int rlk_semaphore_try_set_permits(rlk_semaphore *s, long long permits, int *set)
{
    long long n = 0;
    int rc = s ? rlk_handle_write(&s->b, "try_set_permits", "permits", permits, 0,
                                  &rlk_sem_try_set_call, &(rlk_proto_argvals){.n = permits}, &n)
               : RLK_ERR_ARG;

    if (rc == RLK_OK && set)
        *set = n == 1;
    return rc;
}

int rlk_semaphore_try_set_permits_ttl(rlk_semaphore *s, long long permits, long long ttl_ms,
                                     int *set)
{
    rlk_proto_argvals v = {.n = permits, .ttl_ms = ttl_ms};
    long long n = 0;
    int rc = s ? rlk_fam_check_range(s->b.c, "try_set_permits", s->b.name, "permits", permits, 0,
                                     RLK_NUM_MAX) : RLK_ERR_ARG;

    if (rc == RLK_OK)   /* ttl_ms checked after permits */
        rc = rlk_handle_write(&s->b, "try_set_permits", "ttl_ms", ttl_ms, 1,
                              &rlk_semaphore_try_set_ttl_call, &v, &n);
    if (set)
        *set = n == 1;  /* 0 on every error but too few replicas */
    return rc;
}

int rlk_semaphore_add_permits(rlk_semaphore *s, long long delta, long long *count)
{
    if (!s)
        return RLK_ERR_ARG;
    return rlk_handle_write(&s->b, "add_permits", "delta", delta, -RLK_NUM_MAX,
                            &rlk_sem_add_permits_call, &(rlk_proto_argvals){.n = delta}, count);
}

int rlk_semaphore_drain(rlk_semaphore *s, long long *drained)
{
    return s ? rlk_handle_int(&s->b, &rlk_sem_drain_call, NULL, drained) : RLK_ERR_ARG;
}

int rlk_semaphore_available(rlk_semaphore *s, long long *count)
{
    return s && count ? rlk_handle_int(&s->b, &rlk_sem_available_call, NULL, count) : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- time to live */

/* On the name */
int rlk_semaphore_expire(rlk_semaphore *s, long long ttl_ms, int *set)
{
    return rlk_expiry_set(s ? &s->b : NULL, RLK_MKIND_SEMAPHORE, ttl_ms, set);
}

int rlk_semaphore_clear_expire(rlk_semaphore *s, int *cleared)
{
    return rlk_expiry_clear(s ? &s->b : NULL, RLK_MKIND_SEMAPHORE, cleared);
}

int rlk_semaphore_ttl(rlk_semaphore *s, long long *ttl_ms)
{
    return rlk_expiry_ttl(s ? &s->b : NULL, RLK_MKIND_SEMAPHORE, ttl_ms);
}
