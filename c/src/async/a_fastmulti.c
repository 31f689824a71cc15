/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_fastmulti.c - the faster MultiLock on the loop (rlk_async_fastmulti_*,
 * rlk_async.h): requests of a_kind.c's rlk_a_kind_fastmulti row, served by
 * a_lock.c as every lock kind's, with the values given to every call.
 */
#include "rlk_async.h"
#include "async/a_kind.h"
#include "async/a_lock.h"

rlk_async_req *rlk_async_fastmulti_lock(rlk_async *ac, const char *group,
                                        const char *const *values, size_t nvalues,
                                        unsigned long long task, long long wait_ms,
                                        long long lease_ms, rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.values = values, .nvalues = nvalues};

    return rlk_a_lock_acquire(ac, &rlk_a_kind_fastmulti, "rlk_async_fastmulti_lock", group, task,
                              wait_ms, lease_ms, &o, fn, privdata);
}

rlk_async_req *rlk_async_fastmulti_unlock(rlk_async *ac, const char *group,
                                          const char *const *values, size_t nvalues,
                                          unsigned long long task, rlk_async_fn fn,
                                          void *privdata)
{
    rlk_a_lock_opts o = {.values = values, .nvalues = nvalues};

    return rlk_a_lock_release(ac, &rlk_a_kind_fastmulti, group, task, &o, fn, privdata);
}

rlk_async_req *rlk_async_fastmulti_force_unlock(rlk_async *ac, const char *group,
                                                const char *const *values, size_t nvalues,
                                                rlk_async_fn fn, void *privdata)
{
    rlk_a_lock_opts o = {.values = values, .nvalues = nvalues};

    return rlk_a_lock_force(ac, &rlk_a_kind_fastmulti, "rlk_async_fastmulti_force_unlock", group,
                            &o, fn, privdata);
}
