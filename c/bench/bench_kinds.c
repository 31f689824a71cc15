/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_kinds: the read-write lock's write side and the two semaphores in
 * rlk-bench's W2. See bench_kinds.h. */
#include "bench_kinds.h"

#include <stdlib.h>
#include <string.h>

static const char *const rlk_bench_kind_names[] = {NULL, "rwlock-write", "semaphore",
                                                    "psemaphore"};

int rlk_bench_kind_parse(const char *name)
{
    int k;

    for (k = RLK_BENCH_KIND_RWLOCK_WRITE; k <= RLK_BENCH_KIND_PSEMAPHORE; k++)
        if (strcmp(name, rlk_bench_kind_names[k]) == 0)
            return k;
    return RLK_BENCH_KIND_NONE;
}

const char *rlk_bench_kind_name(int kind)
{
    if (kind < RLK_BENCH_KIND_RWLOCK_WRITE || kind > RLK_BENCH_KIND_PSEMAPHORE)
        return NULL;
    return rlk_bench_kind_names[kind];
}

#ifdef RLK_BENCH_HAVE_LIB
struct rlk_bench_kind_state {
    int kind;
    rlk_rwlock *rw;
    rlk_semaphore *sem;
    rlk_psemaphore *psem;
    char id[RLK_PERMIT_ID_SIZE];   /* psemaphore: the permit held */
};

rlk_bench_kind_state *rlk_bench_kind_open(rlk_client *c, int kind, const char *name)
{
    rlk_bench_kind_state *k = calloc(1, sizeof *k);
    int rc = RLK_OK;

    if (k == NULL)
        return NULL;
    k->kind = kind;
    switch (kind) {
    case RLK_BENCH_KIND_RWLOCK_WRITE:
        k->rw = rlk_rwlock_new(c, name);
        rc = k->rw != NULL ? RLK_OK : -1;
        break;
    case RLK_BENCH_KIND_SEMAPHORE:
        k->sem = rlk_semaphore_new(c, name);
        rc = k->sem != NULL ? rlk_semaphore_try_set_permits(k->sem, 1, NULL) : -1;
        break;
    case RLK_BENCH_KIND_PSEMAPHORE:
        k->psem = rlk_psemaphore_new(c, name);
        rc = k->psem != NULL ? rlk_psemaphore_try_set_permits(k->psem, 1, NULL) : -1;
        break;
    default:
        rc = -1;
    }
    if (rc != RLK_OK) {
        rlk_bench_kind_close(k);
        return NULL;
    }
    return k;
}

int rlk_bench_kind_lock(rlk_bench_kind_state *k, long long wait_ms, long long lease_ms)
{
    switch (k->kind) {
    case RLK_BENCH_KIND_RWLOCK_WRITE:
        return rlk_rwlock_try_lock(k->rw, RLK_RW_WRITE, wait_ms, lease_ms);
    case RLK_BENCH_KIND_SEMAPHORE:
        return rlk_semaphore_try_acquire(k->sem, 1, wait_ms);
    default:
        return rlk_psemaphore_try_acquire(k->psem, wait_ms, lease_ms, k->id);
    }
}

int rlk_bench_kind_unlock(rlk_bench_kind_state *k)
{
    switch (k->kind) {
    case RLK_BENCH_KIND_RWLOCK_WRITE:
        return rlk_rwlock_unlock(k->rw, RLK_RW_WRITE);
    case RLK_BENCH_KIND_SEMAPHORE:
        return rlk_semaphore_release(k->sem, 1, NULL);
    default:
        return rlk_psemaphore_release(k->psem, k->id);
    }
}

const char *rlk_bench_kind_call(const rlk_bench_kind_state *k, int unlock)
{
    switch (k->kind) {
    case RLK_BENCH_KIND_RWLOCK_WRITE:
        return unlock ? "rlk_rwlock_unlock" : "rlk_rwlock_try_lock";
    case RLK_BENCH_KIND_SEMAPHORE:
        return unlock ? "rlk_semaphore_release" : "rlk_semaphore_try_acquire";
    default:
        return unlock ? "rlk_psemaphore_release" : "rlk_psemaphore_try_acquire";
    }
}

void rlk_bench_kind_close(rlk_bench_kind_state *k)
{
    if (k == NULL)
        return;
    rlk_rwlock_free(k->rw);
    rlk_semaphore_free(k->sem);
    rlk_psemaphore_free(k->psem);
    free(k);
}
#endif
