/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_fastmulti.c - the faster MultiLock on the loop (rlk_async_fastmulti_*,
 * rlk_async.h): requests of a_kind.c's rlk_fastmulti_row row, served by
 * a_lock.c as every lock kind's, with the values given to every call; and
 * the queries, one fastmulti/held call each (a_once.c; a read: a lost reply
 * is asked again).
 */
#include "rlk_async.h"
#include "kinds/acq.h"
#include "kinds/fastmulti.h"
#include "runtime/rt.h"
#include "engine/engine.h"
#include "async/a_lock.h"
#include "async/a_once.h"

rlk_async_req *rlk_async_fastmulti_lock(rlk_async *ac, const char *group,
                                        const char *const *values, size_t nvalues,
                                        unsigned long long task, long long wait_ms,
                                        long long lease_ms, rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.values = values, .nvalues = nvalues};

    return rlk_a_lock_acquire(ac, &rlk_fastmulti_row, "rlk_async_fastmulti_lock", group, task,
                              wait_ms, lease_ms, &o, fn, privdata);
}

rlk_async_req *rlk_async_fastmulti_unlock(rlk_async *ac, const char *group,
                                          const char *const *values, size_t nvalues,
                                          unsigned long long task, rlk_async_fn fn,
                                          void *privdata)
{
    rlk_a_lock_opts o = {.values = values, .nvalues = nvalues};

    return rlk_a_lock_release(ac, &rlk_fastmulti_row, "rlk_async_fastmulti_unlock", group, task,
                              &o, fn, privdata);
}

rlk_async_req *rlk_async_fastmulti_force_unlock(rlk_async *ac, const char *group,
                                                const char *const *values, size_t nvalues,
                                                rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.values = values, .nvalues = nvalues};

    return rlk_a_lock_force(ac, &rlk_fastmulti_row, "rlk_async_fastmulti_force_unlock", group,
                            &o, fn, privdata);
}

/* fastmulti/held for owner ("": any holder) of values: the count held; who names the
 * public call in argument errors, what the query in others. */
static rlk_async_req *afm_held(rlk_async *ac, const char *who, const char *what,
                               const char *group, const char *const *values, size_t nvalues,
                               const char *owner, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r = rlk_a_once_start(ac, who, what, -1, group, fn, privdata);
    char why[256], **tail;
    rlk_proto_argvals v = {.owner = owner};
    int rc;

    if (!r || rlk_ae_req_done(r))
        return r;
    if ((rc = rlk_proto_values_take(&rlk_fastmulti_row, values, nvalues, &tail, why, sizeof why)) !=
        RLK_OK) {
        rlk_ae_complete(r, rc, 0, NULL, "%s %s: %s", who, group,
                        rc == RLK_ERR_ARG ? why : "out of memory");
        return r;
    }
    rlk_a_once_call(r, &rlk_fastmulti_held_call, &v, tail, RLK_A_ONCE_REPEAT);
    return r;
}

rlk_async_req *rlk_async_fastmulti_is_locked(rlk_async *ac, const char *group,
                                             const char *const *values, size_t nvalues,
                                             rlk_async_fn fn, void *privdata)
{
    return afm_held(ac, "rlk_async_fastmulti_is_locked", "faster MultiLock is_locked", group,
                    values, nvalues, "", fn, privdata);
}

rlk_async_req *rlk_async_fastmulti_is_held(rlk_async *ac, const char *group,
                                           const char *const *values, size_t nvalues,
                                           unsigned long long task, rlk_async_fn fn,
                                           void *privdata)
{
    char owner[RLK_OWNER_MAX + 1];

    if (ac)
        rlk_ae_owner(ac, task, owner, sizeof owner);
    else
        owner[0] = '\0';
    return afm_held(ac, "rlk_async_fastmulti_is_held", "faster MultiLock is_held", group, values,
                    nvalues, owner, fn, privdata);
}
