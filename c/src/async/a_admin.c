/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_admin.c - the semaphores' and the latch's calls that are one script
 * call with an integer reply, as requests (rlk_async.h): the time to live
 * of the three kinds (rlk_async_expire, _clear_expire, _ttl: Redisson's
 * RExpirable), the semaphore's release_if_exists and try_set_permits_ttl,
 * the permit-expirable semaphore's try_release, lease_time, set_permits and
 * acquired. Each is a row: its script (the blocking call's own), the names
 * kind its KEYS are built by (kinds/names.h, from the roles the script's
 * header gives them), its ARGV by name and how its reply is read; a_once.h
 * sends it and rides out a call that never went out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/scripts.h"
#include "kinds/names.h"
#include "kinds/psemaphore.h"
#include "kinds/semaphore.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "async/engine.h"
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

/* The time to live calls, by kind (RLK_MKIND_SEMAPHORE, _PSEMAPHORE, _LATCH) and call. */
enum { AAD_EXPIRE, AAD_CLEAR, AAD_TTL, AAD_TTL_CALLS };
static const char *const aad_ttl_fn[AAD_TTL_CALLS] = {
    "rlk_async_expire", "rlk_async_clear_expire", "rlk_async_ttl"};
static const char *const aad_ttl_kinds[3] = {"semaphore", "psemaphore", "latch"};
static const char *const aad_ttl_calls[AAD_TTL_CALLS] = {"expire", "clear_expire", "ttl"};

/* The request of row w on name with the number n, ttl_ms and the permit id (hex) it
 * takes (each checked when the row names it). */
static rlk_async_req *aad_call(rlk_async *ac, const aad_row *w, const char *name, long long n,
                               long long ttl_ms, const char *id, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r = rlk_a_once_new(ac, w->what, name, fn, privdata);
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
    if (rlk_a_once_call(r, w->call, &v, NULL, w->flags) != 0)
        rlk_ae_complete(r, RLK_ERR_NOMEM, 0, NULL, "%s %s: out of memory", w->fn, name);
    return r;
}

/* A time to live call (AAD_*) on kind's name. */
static rlk_async_req *aad_ttl_call(rlk_async *ac, int call, int kind, const char *name,
                                   long long ttl_ms, rlk_async_fn fn, void *privdata)
{
    static const int flags[AAD_TTL_CALLS] = {RLK_A_ONCE_BOOL, RLK_A_ONCE_BOOL,
                                             RLK_A_ONCE_REPEAT};
    char what[48], script[48];
    rlk_proto_call pc = {script, ""};
    aad_row w = {aad_ttl_fn[call], what, &pc, NULL, 0, flags[call]};
    const char *k;

    if (kind < RLK_MKIND_SEMAPHORE || kind > RLK_MKIND_LATCH) {
        rlk_async_req *r = rlk_a_once_new(ac, aad_ttl_calls[call], name, fn, privdata);

        if (r && !rlk_ae_req_done(r))
            rlk_ae_complete(r, RLK_ERR_ARG, 0, NULL, "%s %s: kind %d is not "
                            "RLK_MKIND_SEMAPHORE, _PSEMAPHORE or _LATCH", aad_ttl_fn[call],
                            name, kind);
        return r;
    }
    k = aad_ttl_kinds[kind - RLK_MKIND_SEMAPHORE];
    snprintf(what, sizeof what, "%s %s", k, aad_ttl_calls[call]);
    snprintf(script, sizeof script, "%s/%s", k, aad_ttl_calls[call]);
    /* expire takes ttl_ms; the latch's publishes (an armed latch's channel learns of it) */
    if (call == AAD_EXPIRE)
        pc.args = kind == RLK_MKIND_LATCH ? "ttl publish" : "ttl";
    return aad_call(ac, &w, name, 0, ttl_ms, NULL, fn, privdata);
}

rlk_async_req *rlk_async_expire(rlk_async *ac, int kind, const char *name, long long ttl_ms,
                                rlk_async_fn fn, void *privdata)
{
    return aad_ttl_call(ac, AAD_EXPIRE, kind, name, ttl_ms, fn, privdata);
}

rlk_async_req *rlk_async_clear_expire(rlk_async *ac, int kind, const char *name, rlk_async_fn fn,
                                      void *privdata)
{
    return aad_ttl_call(ac, AAD_CLEAR, kind, name, 0, fn, privdata);
}

rlk_async_req *rlk_async_ttl(rlk_async *ac, int kind, const char *name, rlk_async_fn fn,
                             void *privdata)
{
    return aad_ttl_call(ac, AAD_TTL, kind, name, 0, fn, privdata);
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
