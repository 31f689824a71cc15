/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psemaphore_admin.c - the permit-expirable semaphore's calls that read a
 * permit's lease, count or resize the permits, and set the object's time to
 * live (Redisson's getLeaseTime, acquiredPermits, setPermits and RExpirable
 * calls), on scripts/psemaphore/{lease_time,acquired,set_permits,expire,
 * clear_expire,ttl}.lua. Part of the psemaphore module (psemaphore.h);
 * acquiring and releasing are psemaphore.c's.
 */
#include <stdio.h>
#include <string.h>

#include "client/client.h"
#include "client/error.h"
#include "kinds/expiry.h"
#include "kinds/handle.h"
#include "kinds/psemaphore.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"

int rlk_psemaphore_lease_time(rlk_psemaphore *s, const char *id, long long *ms)
{
    unsigned char raw[RLK_PSEM_RAW_ID_MAX];
    rlk_proto_argvals v = {.id = raw};      /* it publishes the permits it reclaims */
    long long got = 0;
    int rc;

    if (!s || !ms)
        return RLK_ERR_ARG;
    *ms = 0;
    rc = rlk_psem_decode_id(s, "lease_time", id, raw, &v.idlen);
    if (rc == RLK_OK)
        rc = rlk_handle_int(&s->b, &rlk_psem_lease_time_call, &v, &got);
    if (rc != RLK_OK)
        return rc;
    if (got == 0)
        return rlk_set_error(s->b.c, RLK_ERR_NOT_OWNER, "lease_time %s: permit %.40s is not held "
                             "(expired, released or never acquired)", s->b.name, id);
    *ms = got;
    return RLK_OK;
}

int rlk_psemaphore_acquired(rlk_psemaphore *s, long long *held)
{
    if (!s || !held)
        return RLK_ERR_ARG;
    return rlk_handle_int(&s->b, &rlk_psem_acquired_call, NULL, held);
}

int rlk_psemaphore_set_permits(rlk_psemaphore *s, long long permits, long long *count)
{
    if (!s)
        return RLK_ERR_ARG;
    return rlk_handle_write(&s->b, "set_permits", "permits", permits, 0,
                            &rlk_psem_set_permits_call, &(rlk_proto_argvals){.n = permits}, count);
}

/* ---------------------------------------------------------------- time to live */

/* On both keys of Redisson's object, as its expire and clearExpire take them (name,
 * {name}:timeout) */
int rlk_psemaphore_expire(rlk_psemaphore *s, long long ttl_ms, int *set)
{
    return rlk_expiry_set(s ? &s->b : NULL, RLK_MKIND_PSEMAPHORE, ttl_ms, set);
}

int rlk_psemaphore_clear_expire(rlk_psemaphore *s, int *cleared)
{
    return rlk_expiry_clear(s ? &s->b : NULL, RLK_MKIND_PSEMAPHORE, cleared);
}

int rlk_psemaphore_ttl(rlk_psemaphore *s, long long *ttl_ms)
{
    return rlk_expiry_ttl(s ? &s->b : NULL, RLK_MKIND_PSEMAPHORE, ttl_ms);
}
