/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_kinds: the read-write lock's write side and the two semaphores in
 * rlk-bench's W2. See bench_kinds.h. */
#include "bench_kinds.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const rlk_bench_kind_names[] = {NULL, "rwlock-write", "semaphore",
                                                    "psemaphore", "fastmulti", "multilock"};

int rlk_bench_kind_parse(const char *name)
{
    int k;

    for (k = RLK_BENCH_KIND_RWLOCK_WRITE; k <= RLK_BENCH_KIND_MULTILOCK; k++)
        if (strcmp(name, rlk_bench_kind_names[k]) == 0)
            return k;
    return RLK_BENCH_KIND_NONE;
}

const char *rlk_bench_kind_name(int kind)
{
    if (kind < RLK_BENCH_KIND_RWLOCK_WRITE || kind > RLK_BENCH_KIND_MULTILOCK)
        return NULL;
    return rlk_bench_kind_names[kind];
}

int rlk_bench_kind_many(int kind)
{
    return kind == RLK_BENCH_KIND_FASTMULTI || kind == RLK_BENCH_KIND_MULTILOCK;
}

#ifdef RLK_BENCH_HAVE_LIB
struct rlk_bench_kind_state {
    int kind;
    rlk_rwlock *rw;
    rlk_semaphore *sem;
    rlk_psemaphore *psem;
    rlk_fastmulti *fm;
    rlk_multilock *ml;
    char id[RLK_PERMIT_ID_SIZE];   /* psemaphore: the permit held */
};

/* The faster MultiLock on group name: values v0..v<names-1>. */
static rlk_fastmulti *rlk_bench_kind_fastmulti(rlk_client *c, const char *name, int names)
{
    char **values = calloc((size_t)names, sizeof *values);
    rlk_fastmulti *fm = NULL;
    int k, ok = values != NULL;

    for (k = 0; ok && k < names; k++) {
        if ((values[k] = malloc(16)) == NULL)
            ok = 0;
        else
            snprintf(values[k], 16, "v%d", k);
    }
    if (ok)
        fm = rlk_fastmulti_new(c, name, (const char *const *)values, (size_t)names);
    for (k = 0; values && k < names; k++)
        free(values[k]);
    free(values);
    return fm;
}

/* rlk's MultiLock of the reentrant locks name:0..name:<names-1>, all on c. */
static rlk_multilock *rlk_bench_kind_multilock(rlk_client *c, const char *name, int names)
{
    rlk_multilock *ml = rlk_multilock_new();
    size_t len = strlen(name) + 16;
    char *member = malloc(len);
    int k, rc = ml != NULL && member != NULL ? RLK_OK : -1;

    for (k = 0; rc == RLK_OK && k < names; k++) {
        snprintf(member, len, "%s:%d", name, k);
        rc = rlk_multilock_add(ml, c, member);
    }
    free(member);
    if (rc != RLK_OK) {
        rlk_multilock_free(ml);
        return NULL;
    }
    return ml;
}

rlk_bench_kind_state *rlk_bench_kind_open(rlk_client *c, int kind, const char *name, int names)
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
    case RLK_BENCH_KIND_FASTMULTI:
        k->fm = rlk_bench_kind_fastmulti(c, name, names);
        rc = k->fm != NULL ? RLK_OK : -1;
        break;
    case RLK_BENCH_KIND_MULTILOCK:
        k->ml = rlk_bench_kind_multilock(c, name, names);
        rc = k->ml != NULL ? RLK_OK : -1;
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
    case RLK_BENCH_KIND_FASTMULTI:
        return rlk_fastmulti_try_lock(k->fm, wait_ms, lease_ms);
    case RLK_BENCH_KIND_MULTILOCK:
        return rlk_multilock_try_lock(k->ml, wait_ms, lease_ms);
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
    case RLK_BENCH_KIND_FASTMULTI:
        return rlk_fastmulti_unlock(k->fm);
    case RLK_BENCH_KIND_MULTILOCK:
        return rlk_multilock_unlock(k->ml);
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
    case RLK_BENCH_KIND_FASTMULTI:
        return unlock ? "rlk_fastmulti_unlock" : "rlk_fastmulti_try_lock";
    case RLK_BENCH_KIND_MULTILOCK:
        return unlock ? "rlk_multilock_unlock" : "rlk_multilock_try_lock";
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
    rlk_fastmulti_free(k->fm);
    rlk_multilock_free(k->ml);
    free(k);
}
#endif
