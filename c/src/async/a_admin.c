/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_admin.c - the semaphores' and the latch's calls that are one script
 * call with an integer reply, as requests (rlk_async.h): the time to live
 * of the three kinds (rlk_async_expire, _clear_expire, _ttl: Redisson's
 * RExpirable, kinds/expiry.h's calls), the semaphore's release,
 * release_if_exists and try_set_permits_ttl, the permit-expirable
 * semaphore's try_release, lease_time, set_permits and acquired, the
 * latch's count_down and try_set_count. Each is a row: its kind's call (the
 * blocking call's own), the names
 * kind its KEYS are built by (kinds/names.h, from the roles the script's
 * header gives them), its ARGV by name and how its reply is read; a_once.h
 * sends it and rides out a call that never went out.
 *
 * And the latch's await (rlk_async_latch_await), an a_once.h awaiter on the
 * blocking API's channel (kinds/latch.c: "0" when the count reaches zero or
 * the latch is deleted, "1" when it is armed): it reads latch/count when
 * subscribed, on every message and at least every second; open (count <=
 * 0) ends it RLK_OK. The engine hands every message to every listener of
 * the channel, so the blocking subscriber's "pass the wake-up on" is not
 * needed here. docs/async-internals.md describes it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds/expiry.h"
#include "kinds/latch.h"
#include "kinds/names.h"
#include "kinds/psemaphore.h"
#include "kinds/semaphore.h"
#include "runtime/fam.h"
#include "engine/engine.h"
#include "async/a_common.h"
#include "async/a_once.h"

/* One call. ARGV names (space-separated): n (the number the call takes, checked against
 * lo..10^12 as field), ttl (ttl_ms, 1..10^12), claim_ms, publish, id (a permit id, given
 * in hex, sent raw). */
typedef struct aad_row {
    const char *fn;         /* the public call, in argument errors */
    const char *what;       /* in other messages: "<kind> <call>" */
    const rlk_proto_call *call; /* kinds/proto.h's */
    const char *field;
    long long lo;
    int flags;              /* RLK_A_ONCE_*: how the reply is read, whether a lost one is asked
                               again */
} aad_row;

static const aad_row aad_sem_release = {
    "rlk_async_semaphore_release", "semaphore release", &rlk_semaphore_release_call, "permits", 1,
    0};
static const aad_row aad_sem_release_if_exists = {
    "rlk_async_semaphore_release_if_exists", "semaphore release_if_exists",
    &rlk_semaphore_release_if_exists_call, "permits", 1, RLK_A_ONCE_BOOL};
static const aad_row aad_sem_try_set_ttl = {
    "rlk_async_semaphore_try_set_permits_ttl", "semaphore try_set_permits",
    &rlk_semaphore_try_set_ttl_call, "permits", 0, RLK_A_ONCE_BOOL};
static const aad_row aad_psem_try_release = {
    "rlk_async_psemaphore_try_release", "psemaphore try_release", &rlk_psem_release_call, NULL,
    0, RLK_A_ONCE_BOOL};
static const aad_row aad_psem_lease_time = {
    "rlk_async_psemaphore_lease_time", "psemaphore lease_time", &rlk_psem_lease_time_call, NULL,
    0, RLK_A_ONCE_HELD | RLK_A_ONCE_REPEAT};
static const aad_row aad_psem_set_permits = {
    "rlk_async_psemaphore_set_permits", "psemaphore set_permits", &rlk_psem_set_permits_call,
    "permits", 0, 0};
static const aad_row aad_psem_acquired = {
    "rlk_async_psemaphore_acquired", "psemaphore acquired", &rlk_psem_acquired_call, NULL, 0,
    RLK_A_ONCE_REPEAT};
static const aad_row aad_latch_count_down = {
    "rlk_async_latch_count_down", "latch count_down", &rlk_latch_count_down_call, NULL, 0, 0};
static const aad_row aad_latch_try_set_count = {
    "rlk_async_latch_try_set_count", "latch try_set_count", &rlk_latch_try_set_count_call, "count",
    1, 0};

/* The time to live calls' public names, by RLK_EXPIRY_*. */
static const char *const aad_ttl_fn[RLK_EXPIRY_CALLS] = {
    "rlk_async_expire", "rlk_async_clear_expire", "rlk_async_ttl"};

/* The request of row w on name with the number n, ttl_ms and the permit id (hex) it
 * takes (each checked when the row names it). */
static rlk_async_req *aad_call(rlk_async *ac, const aad_row *w, const char *name, long long n,
                               long long ttl_ms, const char *id, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r = rlk_a_once_start(ac, w->fn, w->what, -1, name, fn, privdata);
    unsigned char raw[RLK_PSEM_RAW_ID_MAX];
    char msg[RLK_ERRSTR_MAX];
    rlk_proto_argvals v = {.n = n, .ttl_ms = ttl_ms, .id = raw};

    if (!r || rlk_ae_req_done(r))
        return r;
    if ((w->field && rlk_a_common_range(r, w->fn, name, w->field, n, w->lo, RLK_NUM_MAX)) ||
        (strstr(w->call->args, "ttl") &&
         rlk_a_common_range(r, w->fn, name, "ttl_ms", ttl_ms, 1, RLK_NUM_MAX)))
        return r;
    if (strstr(w->call->args, "id") &&
        rlk_psem_parse_id(w->fn, name, id ? id : "", raw, &v.idlen, msg, sizeof msg) != RLK_OK) {
        rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "%s", msg);
        return r;
    }
    rlk_a_once_call(r, w->call, &v, NULL, w->flags);
    return r;
}

/* A time to live call (RLK_EXPIRY_*) on kind's name. */
static rlk_async_req *aad_ttl_call(rlk_async *ac, int call, int kind, const char *name,
                                   long long ttl_ms, rlk_async_fn fn, void *privdata)
{
    static const int flags[RLK_EXPIRY_CALLS] = {RLK_A_ONCE_BOOL, RLK_A_ONCE_BOOL,
                                                RLK_A_ONCE_REPEAT};
    char what[48];
    aad_row w = {aad_ttl_fn[call], what, NULL, NULL, 0, flags[call]};

    if (kind < RLK_MKIND_SEMAPHORE || kind > RLK_MKIND_LATCH) {
        rlk_async_req *r = rlk_a_once_start(ac, w.fn, w.fn, -1, name, fn, privdata);

        if (r && !rlk_ae_req_done(r))
            rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "%s %s: kind %d is not "
                            "RLK_MKIND_SEMAPHORE, _PSEMAPHORE or _LATCH", w.fn, name, kind);
        return r;
    }
    w.call = &rlk_expiry_calls[kind - RLK_MKIND_SEMAPHORE][call];
    snprintf(what, sizeof what, "%s", w.call->script);
    what[strcspn(what, "/")] = ' ';     /* "<kind> <call>" */
    return aad_call(ac, &w, name, 0, ttl_ms, NULL, fn, privdata);
}

rlk_async_req *rlk_async_expire(rlk_async *ac, int kind, const char *name, long long ttl_ms,
                                rlk_async_fn fn, void *privdata)
{
    return aad_ttl_call(ac, RLK_EXPIRY_SET, kind, name, ttl_ms, fn, privdata);
}

rlk_async_req *rlk_async_clear_expire(rlk_async *ac, int kind, const char *name, rlk_async_fn fn,
                                      void *privdata)
{
    return aad_ttl_call(ac, RLK_EXPIRY_CLEAR, kind, name, 0, fn, privdata);
}

rlk_async_req *rlk_async_ttl(rlk_async *ac, int kind, const char *name, rlk_async_fn fn,
                             void *privdata)
{
    return aad_ttl_call(ac, RLK_EXPIRY_TTL, kind, name, 0, fn, privdata);
}

rlk_async_req *rlk_async_semaphore_release(rlk_async *ac, const char *name, long long permits,
                                           rlk_async_fn fn, void *privdata)
{
    return aad_call(ac, &aad_sem_release, name, permits, 0, NULL, fn, privdata);
}

rlk_async_req *rlk_async_semaphore_release_if_exists(rlk_async *ac, const char *name,
                                                     long long permits, rlk_async_fn fn,
                                                     void *privdata)
{
    return aad_call(ac, &aad_sem_release_if_exists, name, permits, 0, NULL, fn, privdata);
}

rlk_async_req *rlk_async_semaphore_try_set_permits_ttl(rlk_async *ac, const char *name,
                                                       long long permits, long long ttl_ms,
                                                       rlk_async_fn fn, void *privdata)
{
    return aad_call(ac, &aad_sem_try_set_ttl, name, permits, ttl_ms, NULL, fn, privdata);
}

rlk_async_req *rlk_async_psemaphore_try_release(rlk_async *ac, const char *name, const char *id,
                                                rlk_async_fn fn, void *privdata)
{
    return aad_call(ac, &aad_psem_try_release, name, 0, 0, id, fn, privdata);
}

rlk_async_req *rlk_async_psemaphore_lease_time(rlk_async *ac, const char *name, const char *id,
                                               rlk_async_fn fn, void *privdata)
{
    return aad_call(ac, &aad_psem_lease_time, name, 0, 0, id, fn, privdata);
}

rlk_async_req *rlk_async_psemaphore_set_permits(rlk_async *ac, const char *name,
                                                long long permits, rlk_async_fn fn,
                                                void *privdata)
{
    return aad_call(ac, &aad_psem_set_permits, name, permits, 0, NULL, fn, privdata);
}

rlk_async_req *rlk_async_psemaphore_acquired(rlk_async *ac, const char *name, rlk_async_fn fn,
                                             void *privdata)
{
    return aad_call(ac, &aad_psem_acquired, name, 0, 0, NULL, fn, privdata);
}

rlk_async_req *rlk_async_latch_count_down(rlk_async *ac, const char *name, rlk_async_fn fn,
                                          void *privdata)
{
    return aad_call(ac, &aad_latch_count_down, name, 0, 0, NULL, fn, privdata);
}

rlk_async_req *rlk_async_latch_try_set_count(rlk_async *ac, const char *name, long long count,
                                             rlk_async_fn fn, void *privdata)
{
    return aad_call(ac, &aad_latch_try_set_count, name, count, 0, NULL, fn, privdata);
}

rlk_async_req *rlk_async_latch_await(rlk_async *ac, const char *name, long long timeout_ms,
                                     rlk_async_fn fn, void *privdata)
{
    static const char who[] = "rlk_async_latch_await";
    rlk_async_req *r = rlk_a_once_start(ac, who, "latch", RLK_MKIND_LATCH, name, fn, privdata);
    char *channel;

    if (!r || rlk_ae_req_done(r) ||
        rlk_a_common_range(r, who, name, "timeout_ms", timeout_ms, -1, RLK_NUM_MAX))
        return r;
    channel = rlk_fam_braced_name(RLK_NAMES_CH_LATCH, name);
    if (!channel || rlk_a_once_await(r, &rlk_latch_count_call, channel, timeout_ms,
                                     RLK_LATCH_BUSY) != 0)
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "%s %s: out of memory", who, name);
    free(channel);
    return r;
}
