/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_kinds: W2 of rlk-bench on the kinds besides the reentrant and fair
 * locks (--lock rwlock-write|semaphore|psemaphore, rlk variant only): the
 * read-write lock's write side, a semaphore of 1 permit and a
 * permit-expirable semaphore of 1 permit, each used as a mutex, so the same
 * records, overlap check and handoff numbers apply; and the two ways to take
 * many names at once (--lock fastmulti|multilock, --names N, default 10):
 * Redisson's faster MultiLock (N values of one group hash, one script call)
 * and rlk's MultiLock (N reentrant locks on the one server).
 */
#ifndef RLK_BENCH_KINDS_H
#define RLK_BENCH_KINDS_H

enum rlk_bench_kind {
    RLK_BENCH_KIND_NONE = 0,        /* the reentrant or fair lock (bench_rlk.c) */
    RLK_BENCH_KIND_RWLOCK_WRITE,    /* rlk_rwlock, RLK_RW_WRITE */
    RLK_BENCH_KIND_SEMAPHORE,       /* rlk_semaphore, 1 permit */
    RLK_BENCH_KIND_PSEMAPHORE,      /* rlk_psemaphore, 1 permit */
    RLK_BENCH_KIND_FASTMULTI,       /* rlk_fastmulti, values v0..v<N-1> of group <key> */
    RLK_BENCH_KIND_MULTILOCK        /* rlk_multilock, members <key>:0..<key>:<N-1> */
};

/* 1 for the kinds that take --names. */
int rlk_bench_kind_many(int kind);

/* The kind a --lock value names; RLK_BENCH_KIND_NONE for any other. */
int rlk_bench_kind_parse(const char *name);

/* The --lock value of a kind ("rwlock-write", ...); NULL for NONE. */
const char *rlk_bench_kind_name(int kind);

#ifdef RLK_BENCH_HAVE_LIB
#include "rlk.h"

/* One contender's handle on the kind. */
typedef struct rlk_bench_kind_state rlk_bench_kind_state;

/* Creates the handle on name; a semaphore gets its 1 permit here
 * (try_set_permits: only when the key does not exist, so the contenders,
 * all opened before the start, set it once). names: the number of values
 * or members of the many-name kinds. NULL with the error on c. */
rlk_bench_kind_state *rlk_bench_kind_open(rlk_client *c, int kind, const char *name, int names);

/* Blocking acquire, waiting at most wait_ms; lease_ms where the kind has a
 * lease. The library's return code (RLK_ERR_BUSY: the wait ran out). */
int rlk_bench_kind_lock(rlk_bench_kind_state *k, long long wait_ms, long long lease_ms);

/* Gives back what rlk_bench_kind_lock took; the library's return code. */
int rlk_bench_kind_unlock(rlk_bench_kind_state *k);

/* The name of the library call of lock (0) or unlock (1), for errors. */
const char *rlk_bench_kind_call(const rlk_bench_kind_state *k, int unlock);

void rlk_bench_kind_close(rlk_bench_kind_state *k);
#endif

#endif /* RLK_BENCH_KINDS_H */
