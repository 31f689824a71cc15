/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * semaphore.c - the semaphore API (rlk_semaphore_*): Redisson's RSemaphore
 * on the scripts/semaphore scripts. A string key `name` holds the available
 * permits; scripts that raise the count above 0 publish it on
 * redisson_sc:{name}, which wakes every waiter of this client's subscriber
 * (each retries). docs/locks/semaphore.md describes the data and the API.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "runtime/metrics.h"
#include "runtime/wait.h"

struct rlk_semaphore {
    rlk_fam_base b;             /* channel: redisson_sc:{name} */
};

static const rlk_fam_kind rlk_semaphore_kind = {
    "rlk_semaphore_new", "semaphore", RLK_NAMES_CH_SEMAPHORE, rlk_fam_prefix_name
};

/* ---------------------------------------------------------------- handles */

rlk_semaphore *rlk_semaphore_new(rlk_client *c, const char *name)
{
    return rlk_fam_new(c, name, sizeof(rlk_semaphore), &rlk_semaphore_kind);
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
    char permits[24];
} rlk_sem_try;

/* Gives the permits of an acquisition too few replicas acknowledged back
 * (semaphore/release; the count goes back up). */
static int rlk_sem_undo(void *arg)
{
    rlk_sem_try *t = arg;
    const char *keys[2], *args[2] = {t->permits, rlk_publish_arg(t->s->b.c)};
    long long count = 0;

    return rlk_fam_eval_int(t->s->b.c, "semaphore/release", rlk_fam_keys(&t->s->b, keys), keys, 2,
                            args, NULL, &count);
}

/* rlk_wait_attempt_fn: semaphore/try_acquire. Nothing expires: no bound. */
static int rlk_sem_attempt(void *arg, long long *bound_ms)
{
    rlk_sem_try *t = arg;
    const char *keys[1] = {t->s->b.name};
    const char *args[1] = {t->permits};
    long long got = 0;
    int rc = rlk_fam_eval_int(t->s->b.c, "semaphore/try_acquire", 1, keys, 1, args, NULL, &got);

    *bound_ms = -1;
    if (rc != RLK_OK)
        return rc;
    if (got != 1)
        return RLK_ERR_BUSY;
    return rlk_fam_acks_acquired(t->s->b.c, "acquire", t->s->b.name, rlk_sem_undo, t);
}

static int rlk_sem_busy(rlk_semaphore *s, long long permits, long long start_ns)
{
    return rlk_set_error(s->b.c, RLK_ERR_BUSY, "semaphore %s: %lld permit(s) not available after "
                         "%lld ms", s->b.name, permits, (rlk_clock_now_ns() - start_ns) / 1000000LL);
}

static int rlk_semaphore_try_acquire_run(rlk_semaphore *s, long long permits, long long wait_ms)
{
    long long start = rlk_clock_now_ns();
    rlk_sem_try t;
    rlk_waiter w;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_fam_check_range(s->b.c, "acquire", s->b.name, "permits", permits, 1, RLK_NUM_MAX);
    if (rc != RLK_OK)
        return rc;
    t.s = s;
    snprintf(t.permits, sizeof t.permits, "%lld", permits);
    /* Every waiter retries on a message; no outage ride-out: a
     * try_acquire whose reply was lost may have taken the permits, and
     * repeating it could take them twice. */
    rlk_wait_init(&w, &s->b, "semaphore", rlk_sem_attempt, &t);
    rc = rlk_wait_acquire(&w, start, wait_ms, 1);
    return rc == RLK_ERR_BUSY ? rlk_sem_busy(s, permits, start) : rc;
}

/* The call, counted in the metrics (runtime/metrics.h). */
int rlk_semaphore_try_acquire(rlk_semaphore *s, long long permits, long long wait_ms)
{
    rlk_metrics_call mc;

    rlk_metrics_begin(s ? &s->b.rt->counters : NULL, &mc);
    return rlk_metrics_end(&mc, RLK_MKIND_SEMAPHORE, s ? s->b.name : NULL,
                           rlk_semaphore_try_acquire_run(s, permits, wait_ms));
}

int rlk_semaphore_acquire(rlk_semaphore *s, long long permits)
{
    return rlk_semaphore_try_acquire(s, permits, -1);
}

/* ---------------------------------------------------------------- counting */

int rlk_semaphore_release(rlk_semaphore *s, long long permits, long long *count)
{
    const char *keys[2];
    long long n = 0;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_fam_count(&s->b, "release", "permits", permits, 1, "semaphore/release",
                       rlk_fam_keys(&s->b, keys), keys, &n);
    if (rc == RLK_OK && count)
        *count = n;
    return rc;
}

int rlk_semaphore_try_set_permits(rlk_semaphore *s, long long permits, int *set)
{
    const char *keys[2];

    if (!s)
        return RLK_ERR_ARG;
    return rlk_fam_try_set_permits(&s->b, "semaphore/try_set_permits",
                                   rlk_fam_keys(&s->b, keys), keys, permits, set);
}

int rlk_semaphore_add_permits(rlk_semaphore *s, long long delta, long long *count)
{
    const char *keys[2];

    if (!s)
        return RLK_ERR_ARG;
    return rlk_fam_add_permits(&s->b, "semaphore/add_permits", rlk_fam_keys(&s->b, keys), keys,
                               delta, count);
}

/* A script on (name) without arguments and with an integer reply. */
static int rlk_sem_call1(rlk_semaphore *s, const char *script, long long *out)
{
    const char *keys[1] = {s->b.name};

    return rlk_fam_eval_int(s->b.c, script, 1, keys, 0, NULL, NULL, out);
}

int rlk_semaphore_drain(rlk_semaphore *s, long long *drained)
{
    long long n = 0;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_sem_call1(s, "semaphore/drain", &n);
    if (rc == RLK_OK && drained)
        *drained = n;
    return rc;
}

int rlk_semaphore_available(rlk_semaphore *s, long long *count)
{
    if (!s || !count)
        return RLK_ERR_ARG;
    return rlk_sem_call1(s, "semaphore/available", count);
}
