/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt.c - the per-client runtime state (rt.h), and the watchdog's report hook
 * that calls the lost-lock callbacks.
 */
#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "client/client.h"
#include "client/error.h"
#include "client/random.h"
#include "client/sentinel.h"
#include "runtime/rt.h"

/* Serialises the creation of runtime states (rare: once per client). */
static pthread_mutex_t rlk_rt_create_mu = PTHREAD_MUTEX_INITIALIZER;

/* ---------------------------------------------------------------- holder ids */

/* ":<thread id>", asked of the kernel once per thread ("": not yet); a forked child asks
 * again (its thread is another: it must not reuse its parent's id). */
static _Thread_local char rlk_rt_tid[24];
static pthread_once_t rlk_rt_tid_once = PTHREAD_ONCE_INIT;

static void rlk_rt_tid_forget(void)
{
    rlk_rt_tid[0] = '\0';
}

static void rlk_rt_tid_at_fork(void)
{
    (void)pthread_atfork(NULL, NULL, rlk_rt_tid_forget);
}

int rlk_rt_thread_owner(const rlk_rt *rt, char *buf, size_t len)
{
    size_t u = strlen(rt->uuid), t;

    if (!rlk_rt_tid[0]) {
        pthread_once(&rlk_rt_tid_once, rlk_rt_tid_at_fork);
        snprintf(rlk_rt_tid, sizeof rlk_rt_tid, ":%ld", (long)syscall(SYS_gettid));
    }
    t = strlen(rlk_rt_tid);
    if (u + t >= len) {
        snprintf(buf, len, "%s%s", rt->uuid, rlk_rt_tid);     /* cut short */
        return RLK_ERR_ARG;
    }
    memcpy(buf, rt->uuid, u);
    memcpy(buf + u, rlk_rt_tid, t + 1);
    return RLK_OK;
}

/* ---------------------------------------------------------------- runtime state */

static void rlk_rt_destroy(rlk_rt *rt)
{
    /* The watchdog's holds leave their channels on the subscriber: the hook
     * goes first, then the watchdog, then the subscriber. */
    rlk_sentinel_set_listener(rt->c, NULL, NULL);
    if (rt->sub)
        rlk_sub_set_hook(rt->sub, NULL, NULL);
    rlk_wd_free(rt->wd);
    rlk_sub_free(rt->sub);
    pthread_mutex_destroy(&rt->cb_mu);
    free(rt);
}

void rlk_rt_free(rlk_client *c)
{
    rlk_rt *rt = c ? c->runtime : NULL;

    if (rt) {
        c->runtime = NULL;
        rlk_rt_destroy(rt);
    }
}

/* The lock runtime first (its threads use the client's connections), then the client. */
void rlk_free(rlk_client *c)
{
    rlk_rt_free(c);
    rlk_client_free(c);
}

/* The watchdog's report hook (rlk_wd_new): the plain callback (and the
 * counter) first, then the one with the kind. */
static void rlk_rt_report_lost(void *arg, int kind, const char *name, const char *owner,
                               int reason)
{
    rlk_rt *rt = arg;
    rlk_lost_fn fn;
    rlk_lost_kind_fn kind_fn;
    void *ud, *kind_ud;

    RLK_RT_COUNT(rt, locks_lost);
    if (reason == RLK_LOST_GONE)
        RLK_RT_COUNT(rt, locks_lost_gone);
    else
        RLK_RT_COUNT(rt, locks_lost_expired);
    pthread_mutex_lock(&rt->cb_mu);
    fn = rt->lost_fn;
    ud = rt->lost_ud;
    kind_fn = rt->lost_kind_fn;
    kind_ud = rt->lost_kind_ud;
    pthread_mutex_unlock(&rt->cb_mu);
    if (fn)
        fn(name, owner, reason, ud);
    if (kind_fn)
        kind_fn(kind, name, owner, reason, kind_ud);
}

/* The master changed (redis+sentinel://): waiters retry on the new one,
 * and every held lock is renewed there at once (or found lost). */
static void rlk_rt_on_switch(void *arg)
{
    rlk_rt *rt = arg;

    rlk_sub_reset(rt->sub);
    rlk_wd_on_message(rt->wd, NULL, 0);
}

static rlk_rt *rlk_rt_create(rlk_client *c)
{
    rlk_rt *rt = calloc(1, sizeof *rt);

    if (!rt)
        return NULL;
    rt->c = c;
    pthread_mutex_init(&rt->cb_mu, NULL);
    if (rlk_random_uuid(rt->uuid) != 0) {
        rlk_set_error(c, RLK_ERR_IO, "lock runtime: no random source for the client uuid");
        pthread_mutex_destroy(&rt->cb_mu);
        free(rt);
        return NULL;
    }
    rt->sub = rlk_sub_new(c, &rt->counters, &rt->interrupted);
    rt->wd = rlk_wd_new(c, &rt->counters, rt->sub, rlk_rt_report_lost, rt);
    if (!rt->sub || !rt->wd) {
        rlk_rt_destroy(rt);
        rlk_set_error(c, RLK_ERR_NOMEM, "lock runtime: out of memory");
        return NULL;
    }
    rlk_sub_set_hook(rt->sub, rlk_wd_on_message, rt->wd);
    rlk_sentinel_set_listener(c, rlk_rt_on_switch, rt);
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
        if (rt)
            __atomic_store_n(&c->runtime, rt, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&rlk_rt_create_mu);
    return rt;
}

int rlk_rt_share_cid(rlk_client *c, const char *uuid)
{
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;

    if (!rt)
        return c ? rlk_err(c) : RLK_ERR_ARG;
    for (int i = 0; i < 4; i++)
        if (!uuid || !isxdigit((unsigned char)uuid[i]))
            return rlk_set_error(c, RLK_ERR_ARG, "share a client number: not a uuid");
    memcpy(rt->uuid, uuid, 4);
    return RLK_OK;
}

void rlk_interrupt_waits(rlk_client *c)
{
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;

    if (!rt)
        return;
    atomic_store(&rt->interrupted, 1);
    rlk_sub_interrupt(rt->sub);
}

int rlk_rt_interrupted(rlk_client *c)
{
    rlk_rt *rt = c ? __atomic_load_n(&c->runtime, __ATOMIC_ACQUIRE) : NULL;

    return rt && atomic_load(&rt->interrupted);
}

const char *rlk_client_uuid(const rlk_client *c)
{
    rlk_rt *rt = c ? rlk_rt_get((rlk_client *)c) : NULL;

    return rt ? rt->uuid : "";
}

/* ---------------------------------------------------------------- lost callback */

/* Sets one of the two callback pairs under cb_mu: the one with the kind
 * (with_kind), else the plain one; the other stays as it was. */
static void rlk_rt_set_lost(rlk_client *c, int with_kind, rlk_lost_fn fn, rlk_lost_kind_fn kind_fn,
                            void *userdata)
{
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;

    if (!rt)
        return;
    pthread_mutex_lock(&rt->cb_mu);
    if (with_kind) {
        rt->lost_kind_fn = kind_fn;
        rt->lost_kind_ud = userdata;
    } else {
        rt->lost_fn = fn;
        rt->lost_ud = userdata;
    }
    pthread_mutex_unlock(&rt->cb_mu);
}

void rlk_set_lost_callback(rlk_client *c, rlk_lost_fn fn, void *userdata)
{
    rlk_rt_set_lost(c, 0, fn, NULL, userdata);
}

void rlk_set_lost_kind_callback(rlk_client *c, rlk_lost_kind_fn fn, void *userdata)
{
    rlk_rt_set_lost(c, 1, NULL, fn, userdata);
}

/* ---------------------------------------------------------------- counters */

/* Each field of rlk_runtime_stats and the runtime's counter of the same name. */
#define RLK_RT_STAT(f) {offsetof(rlk_runtime_stats, f), offsetof(rlk_rt_counters, f)}
static const size_t rlk_rt_stats[][2] = {
    RLK_RT_STAT(acquire_calls), RLK_RT_STAT(rechecks), RLK_RT_STAT(acquired), RLK_RT_STAT(waits),
    RLK_RT_STAT(wake_permits), RLK_RT_STAT(wake_all), RLK_RT_STAT(ttl_wakeups),
    RLK_RT_STAT(sub_connects), RLK_RT_STAT(sub_drops), RLK_RT_STAT(subscribes),
    RLK_RT_STAT(unsubscribes), RLK_RT_STAT(renew_calls), RLK_RT_STAT(renew_errors),
    RLK_RT_STAT(renew_unacked), RLK_RT_STAT(locks_lost), RLK_RT_STAT(lost_replies),
    RLK_RT_STAT(lost_adopted), RLK_RT_STAT(lost_not_run), RLK_RT_STAT(lost_unsettled),
    RLK_RT_STAT(lost_given_back), RLK_RT_STAT(sub_wakeups), RLK_RT_STAT(sub_messages),
};

int rlk_runtime_stats_get(rlk_client *c, rlk_runtime_stats *out)
{
    rlk_rt *rt = c ? rlk_rt_get(c) : NULL;

    memset(out, 0, sizeof *out);
    if (!rt)
        return RLK_ERR_NOMEM;
    for (size_t i = 0; i < sizeof rlk_rt_stats / sizeof rlk_rt_stats[0]; i++)
        *(unsigned long long *)((char *)out + rlk_rt_stats[i][0]) = atomic_load_explicit(
            (atomic_ullong *)((char *)&rt->counters + rlk_rt_stats[i][1]), memory_order_relaxed);
    return RLK_OK;
}
