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

#include "semaphore_wait.h"

#define RLK_SEM_CHANNEL_PREFIX "redisson_sc"

struct rlk_semaphore {
    rlk_client *c;
    rlk_rt *rt;
    char *name;
    char *channel;
};

/* ---------------------------------------------------------------- handles */

rlk_semaphore *rlk_semaphore_new(rlk_client *c, const char *name)
{
    rlk_semaphore *s;

    if (!c)
        return NULL;
    if (!name || !*name) {
        rlk_set_error(c, RLK_ERR_ARG, "rlk_semaphore_new: the semaphore name must not be empty");
        return NULL;
    }
    s = calloc(1, sizeof *s);
    if (!s || !(s->rt = rlk_rt_get(c))) {
        free(s);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_semaphore_new %s: out of memory", name);
        return NULL;
    }
    s->c = c;
    s->name = strdup(name);
    s->channel = rlk_sync_prefix_name(RLK_SEM_CHANNEL_PREFIX, name);
    if (!s->name || !s->channel) {
        rlk_semaphore_free(s);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_semaphore_new %s: out of memory", name);
        return NULL;
    }
    return s;
}

void rlk_semaphore_free(rlk_semaphore *s)
{
    if (!s)
        return;
    free(s->channel);
    free(s->name);
    free(s);
}

const char *rlk_semaphore_name(const rlk_semaphore *s)
{
    return s ? s->name : NULL;
}

const char *rlk_semaphore_channel(const rlk_semaphore *s)
{
    return s ? s->channel : NULL;
}

/* ---------------------------------------------------------------- acquiring */

typedef struct rlk_sem_try {
    rlk_semaphore *s;
    char permits[24];
} rlk_sem_try;

/* rlk_sync_attempt_fn: semaphore/try_acquire. Nothing expires: no hint. */
static int rlk_sem_attempt(void *arg, long long *hint_ms)
{
    rlk_sem_try *t = arg;
    const char *keys[1] = {t->s->name};
    const char *args[1] = {t->permits};
    long long got = 0;
    int rc = rlk_sync_eval_int(t->s->c, "semaphore/try_acquire", 1, keys, 1, args, NULL, &got);

    *hint_ms = -1;
    if (rc != RLK_OK)
        return rc;
    return got == 1 ? RLK_OK : RLK_ERR_BUSY;
}

static int rlk_sem_busy(rlk_semaphore *s, long long permits, long long start_ns)
{
    return rlk_set_error(s->c, RLK_ERR_BUSY, "semaphore %s: %lld permit(s) not available after "
                         "%lld ms", s->name, permits, (rlk_rt_now_ns() - start_ns) / 1000000LL);
}

int rlk_semaphore_try_acquire(rlk_semaphore *s, long long permits, long long wait_ms)
{
    long long start = rlk_rt_now_ns(), hint;
    rlk_sem_try t;
    rlk_sync_waiter w;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_sync_check_range(s->c, "acquire", s->name, "permits", permits, 1, RLK_SYNC_NUM_MAX);
    if (rc != RLK_OK)
        return rc;
    t.s = s;
    snprintf(t.permits, sizeof t.permits, "%lld", permits);
    rc = rlk_sem_attempt(&t, &hint);
    if (rc != RLK_ERR_BUSY)
        return rc;
    if (wait_ms == 0)
        return rlk_sem_busy(s, permits, start);
    memset(&w, 0, sizeof w);
    w.c = s->c;
    w.rt = s->rt;
    w.channel = s->channel;
    w.attempt = rlk_sem_attempt;
    w.arg = &t;
    rc = rlk_sync_wait(&w, rlk_sync_deadline(start, wait_ms));
    return rc == RLK_ERR_BUSY ? rlk_sem_busy(s, permits, start) : rc;
}

int rlk_semaphore_acquire(rlk_semaphore *s, long long permits)
{
    return rlk_semaphore_try_acquire(s, permits, -1);
}

/* ---------------------------------------------------------------- counting */

/* A script on (name, channel) with one number argument and an integer reply. */
static int rlk_sem_call2(rlk_semaphore *s, const char *script, long long n, long long *out)
{
    const char *keys[2] = {s->name, s->channel};
    char num[24];
    const char *args[1] = {num};

    snprintf(num, sizeof num, "%lld", n);
    return rlk_sync_eval_int(s->c, script, 2, keys, 1, args, NULL, out);
}

int rlk_semaphore_release(rlk_semaphore *s, long long permits, long long *count)
{
    long long n = 0;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_sync_check_range(s->c, "release", s->name, "permits", permits, 1, RLK_SYNC_NUM_MAX);
    if (rc == RLK_OK)
        rc = rlk_sem_call2(s, "semaphore/release", permits, &n);
    if (rc == RLK_OK && count)
        *count = n;
    return rc;
}

int rlk_semaphore_try_set_permits(rlk_semaphore *s, long long permits, int *set)
{
    long long n = 0;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_sync_check_range(s->c, "try_set_permits", s->name, "permits", permits, 0,
                              RLK_SYNC_NUM_MAX);
    if (rc == RLK_OK)
        rc = rlk_sem_call2(s, "semaphore/try_set_permits", permits, &n);
    if (rc == RLK_OK && set)
        *set = n == 1;
    return rc;
}

int rlk_semaphore_add_permits(rlk_semaphore *s, long long delta, long long *count)
{
    long long n = 0;
    int rc;

    if (!s)
        return RLK_ERR_ARG;
    rc = rlk_sync_check_range(s->c, "add_permits", s->name, "delta", delta, -RLK_SYNC_NUM_MAX,
                              RLK_SYNC_NUM_MAX);
    if (rc == RLK_OK)
        rc = rlk_sem_call2(s, "semaphore/add_permits", delta, &n);
    if (rc == RLK_OK && count)
        *count = n;
    return rc;
}

/* A script on (name) without arguments and with an integer reply. */
static int rlk_sem_call1(rlk_semaphore *s, const char *script, long long *out)
{
    const char *keys[1] = {s->name};

    return rlk_sync_eval_int(s->c, script, 1, keys, 0, NULL, NULL, out);
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
