/*
 * owner.c - who holds a lock: the random source (getrandom, else
 * /dev/urandom; permit ids use it too), the client's uuid (v4) made from
 * it, holder ids "<uuid>:<thread id>", and the per-client runtime state
 * they live in (created on first use, freed by rlk_free through
 * c->runtime_free), with its counters and the lost-lock callback.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lock_internal.h"

/* Serialises the creation of runtime states (rare: once per client). */
static pthread_mutex_t rlk_rt_create_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- randomness */

int rlk_random_bytes(unsigned char *buf, size_t len)
{
    size_t got = 0;
    int fd;

    while (got < len) {
        ssize_t n = getrandom(buf + got, len - got, 0);

        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        break;  /* ENOSYS and the like: fall back to the device */
    }
    if (got == len)
        return 0;
    fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    while (got < len) {
        ssize_t n = read(fd, buf + got, len - got);

        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fd);
    return got == len ? 0 : -1;
}

/* ---------------------------------------------------------------- uuid */

int rlk_uuid_v4(char uuid[RLK_UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    size_t j = 0;

    if (rlk_random_bytes(b, sizeof b) != 0)
        return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* variant 10xx */
    for (size_t i = 0; i < sizeof b; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            uuid[j++] = '-';
        uuid[j++] = hex[b[i] >> 4];
        uuid[j++] = hex[b[i] & 0x0f];
    }
    uuid[j] = '\0';
    return 0;
}

/* ---------------------------------------------------------------- holder ids */

/* Not cached: a forked child must not reuse its parent's thread id. */
static long rlk_thread_id(void)
{
    return (long)syscall(SYS_gettid);
}

int rlk_rt_thread_owner(const rlk_rt *rt, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s:%ld", rt->uuid, rlk_thread_id());

    return (n < 0 || (size_t)n >= len) ? RLK_ERR_ARG : RLK_OK;
}

/* ---------------------------------------------------------------- runtime state */

static void rlk_rt_destroy(rlk_rt *rt)
{
    if (!rt)
        return;
    rlk_sub_free(rt->sub);
    rlk_wd_free(rt->wd);
    pthread_mutex_destroy(&rt->cb_mu);
    free(rt);
}

/* c->runtime_free: called first thing in rlk_free. */
static void rlk_rt_free_hook(rlk_client *c)
{
    rlk_rt *rt = c->runtime;

    c->runtime = NULL;
    rlk_rt_destroy(rt);
}

static rlk_rt *rlk_rt_create(rlk_client *c)
{
    rlk_rt *rt = calloc(1, sizeof *rt);

    if (!rt)
        return NULL;
    rt->c = c;
    pthread_mutex_init(&rt->cb_mu, NULL);
    if (rlk_uuid_v4(rt->uuid) != 0) {
        rlk_set_error(c, RLK_ERR_IO, "lock runtime: no random source for the client uuid");
        pthread_mutex_destroy(&rt->cb_mu);
        free(rt);
        return NULL;
    }
    rt->sub = rlk_sub_new(c, rt);
    rt->wd = rlk_wd_new(c, rt);
    if (!rt->sub || !rt->wd) {
        rlk_rt_destroy(rt);
        rlk_set_error(c, RLK_ERR_NOMEM, "lock runtime: out of memory");
        return NULL;
    }
    return rt;
}

rlk_rt *rlk_rt_get(rlk_client *c)
{
    rlk_rt *rt = __atomic_load_n(&c->runtime, __ATOMIC_ACQUIRE);

    if (rt)
        return rt;
    pthread_mutex_lock(&rlk_rt_create_mu);
    rt = c->runtime;
    if (!rt) {
        rt = rlk_rt_create(c);
        if (rt) {
            c->runtime_free = rlk_rt_free_hook;
            __atomic_store_n(&c->runtime, rt, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&rlk_rt_create_mu);
    return rt;
}

const char *rlk_client_uuid(const rlk_client *c)
{
    rlk_rt *rt;

    if (!c)
        return "";
    rt = rlk_rt_get((rlk_client *)c);
    return rt ? rt->uuid : "";
}

/* ---------------------------------------------------------------- lost callback */

void rlk_set_lost_callback(rlk_client *c, rlk_lost_fn fn, void *userdata)
{
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;

    if (!rt)
        return;
    pthread_mutex_lock(&rt->cb_mu);
    rt->lost_fn = fn;
    rt->lost_ud = userdata;
    pthread_mutex_unlock(&rt->cb_mu);
}

void rlk_rt_report_lost(rlk_rt *rt, const char *name, const char *owner, int reason)
{
    rlk_lost_fn fn;
    void *ud;

    RLK_RT_COUNT(rt, locks_lost);
    pthread_mutex_lock(&rt->cb_mu);
    fn = rt->lost_fn;
    ud = rt->lost_ud;
    pthread_mutex_unlock(&rt->cb_mu);
    if (fn)
        fn(name, owner, reason, ud);
}

/* ---------------------------------------------------------------- counters */

#define RLK_RT_LOAD(rt, field) atomic_load_explicit(&(rt)->counters.field, memory_order_relaxed)

int rlk_runtime_stats_get(rlk_client *c, rlk_runtime_stats *out)
{
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;

    memset(out, 0, sizeof *out);
    if (!rt)
        return RLK_ERR_NOMEM;
    out->acquire_calls = RLK_RT_LOAD(rt, acquire_calls);
    out->acquired = RLK_RT_LOAD(rt, acquired);
    out->waits = RLK_RT_LOAD(rt, waits);
    out->wake_permits = RLK_RT_LOAD(rt, wake_permits);
    out->wake_all = RLK_RT_LOAD(rt, wake_all);
    out->ttl_wakeups = RLK_RT_LOAD(rt, ttl_wakeups);
    out->sub_connects = RLK_RT_LOAD(rt, sub_connects);
    out->sub_drops = RLK_RT_LOAD(rt, sub_drops);
    out->subscribes = RLK_RT_LOAD(rt, subscribes);
    out->unsubscribes = RLK_RT_LOAD(rt, unsubscribes);
    out->renew_calls = RLK_RT_LOAD(rt, renew_calls);
    out->renew_errors = RLK_RT_LOAD(rt, renew_errors);
    out->locks_lost = RLK_RT_LOAD(rt, locks_lost);
    out->lost_replies = RLK_RT_LOAD(rt, lost_replies);
    out->lost_adopted = RLK_RT_LOAD(rt, lost_adopted);
    out->lost_not_run = RLK_RT_LOAD(rt, lost_not_run);
    return RLK_OK;
}
