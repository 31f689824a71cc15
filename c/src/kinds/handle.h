/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.h - the public functions that every kind's handle has in the same
 * shape, defined once. A kind's handle (struct rlk_<kind>) starts with its
 * rlk_fam_base `b` (runtime/fam.h) and, for the lock kinds, keeps its holder
 * id as `id` (rlk_fam_id); the logic lives in runtime/fam.c and
 * runtime/fam_hold.c, and what each kind repeated was only the public
 * wrapper around it: the argument check, the forward, the name in errors.
 *
 * Each macro below expands, at file scope of the kind's .c file, to the
 * spelled-out public functions of one family of calls, whose prototypes (with
 * RLK_API) stay in rlk.h. T is the kind's type, which is also the prefix of
 * its functions (rlk_fenced: rlk_fenced_free, rlk_fenced_name, ...); inside a
 * generated function the handle is `h`, and an argument that is an expression
 * (a local queue, a parameter list) names it so. Every use carries a comment
 * naming the functions it defines, so that grep finds where
 * rlk_fenced_is_locked is defined. What a generated function does (its
 * checks, codes and messages) is what the spelled-out functions did.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_HANDLE_H
#define RLK_KINDS_HANDLE_H

#include "rlk.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "runtime/metrics.h"

/* ---------------------------------------------------------------- the handle */

/* T_free(h): the kind's members (its rlk_fam_kind.fini), the base, the
 * handle (NULL: nothing). */
#define RLK_HANDLE_DEF_FREE(T)                                                                    \
    void T##_free(T *h)                                                                           \
    {                                                                                             \
        rlk_fam_free(h);                                                                          \
    }

/* fn(h): the handle's string h->member (a name, a key, a channel); NULL for
 * a NULL handle. */
#define RLK_HANDLE_DEF_GET(fn, T, member)                                                         \
    const char *fn(const T *h)                                                                    \
    {                                                                                             \
        return h ? h->member : NULL;                                                              \
    }

/* T_free and T_name (the name the handle was made with). */
#define RLK_HANDLE_DEF(T)                                                                         \
    RLK_HANDLE_DEF_FREE(T)                                                                        \
    RLK_HANDLE_DEF_GET(T##_name, T, b.name)

/* ---------------------------------------------------------------- holder ids */

/* T_set_owner(h, owner): fixes (owner) or unfixes (NULL) the handle's holder
 * id (rlk_fam_id_set; rw: the read-write lock's rules for an id). */
#define RLK_HANDLE_DEF_SET_OWNER(T, rw)                                                           \
    int T##_set_owner(T *h, const char *owner)                                                    \
    {                                                                                             \
        if (!h)                                                                                   \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_id_set(h->b.c, &h->id, owner, rw, #T "_set_owner");                        \
    }

/* T_set_owner and T_owner(h, buf, len): the holder id into buf, errors
 * recorded as "T_owner: ..." (rlk_fam_id_get). */
#define RLK_HANDLE_DEF_OWNER(T, rw)                                                               \
    RLK_HANDLE_DEF_SET_OWNER(T, rw)                                                               \
    int T##_owner(const T *h, char *buf, size_t len)                                              \
    {                                                                                             \
        T *m = (T *)h;  /* the id's mutex only */                                                 \
                                                                                                  \
        if (!h)                                                                                   \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_id_get(m->b.c, m->b.rt, &m->id, buf, len, #T "_owner");                    \
    }

/* ---------------------------------------------------------------- making */

/* A lock kind whose waiters queue in the process (handle.c): its holder id
 * initialised and a reference to the process-wide local queue of key
 * (rlk_lq_get); 1 when the queue was got (0: out of memory; the kind's fini
 * still calls rlk_handle_queue_fini). */
int rlk_handle_queue_init(rlk_client *c, rlk_fam_id *id, struct rlk_lq **q, const char *key);
/* Their end: the queue's reference given back (NULL: none), the id destroyed. */
void rlk_handle_queue_fini(rlk_fam_id *id, struct rlk_lq *q);

/* ---------------------------------------------------------------- acquiring */

/* What a lock kind's acquisition call knows first: the head of its
 * per-call state (handle.c). */
typedef struct rlk_handle_acq {
    void *handle;                   /* the kind's handle */
    rlk_fam_release_fn release;     /* its release call (handle, owner, lease): the undo */
    char owner[RLK_OWNER_MAX + 1];
    long long lease_ms;
    int watchdog;
    char lease[24];                 /* lease_ms as text: the acquire scripts' ARGV[1] */
} rlk_handle_acq;

/* a zeroed, then the call's lease (rlk_fam_lease: "<what> <name>: ..." in
 * errors; also as text) and the holder id of id (rlk_fam_id_get:
 * "<owner_fn>: ..."). */
int rlk_handle_acq_start(rlk_handle_acq *a, void *handle, const rlk_fam_base *b, rlk_fam_id *id,
                         const char *owner_fn, const char *what, long long lease_ms,
                         rlk_fam_release_fn release);
/* rlk_fam_undo_fn of an rlk_handle_acq (arg): gives back one hold, an
 * acquisition the registry could not record, one too few replicas
 * acknowledged, or one the caller was never told of, with the kind's
 * release for the same owner and lease. */
int rlk_handle_undo(void *arg);

/* RLK_ERR_BUSY recorded as "<what> <name>: <why> after <ms> ms", the time
 * since start_ns (CLOCK_MONOTONIC, client/clock.h), and returned: a wait
 * that ran out. */
int rlk_handle_busy(const rlk_fam_base *b, const char *what, const char *why, long long start_ns);

/* The token the client's registry recorded with the latest acquisition of
 * name as kind by the handle's holder id (id, owner_fn as rlk_fam_id_get
 * takes them) into *token (0 when none); RLK_ERR_NOT_OWNER when it records
 * no such hold, with the message not_held formats from (name, holder id). */
int rlk_handle_token(const rlk_fam_base *b, rlk_fam_id *id, const char *owner_fn, int kind,
                     const char *not_held, long long *token);

/* fn params: the call fn##_run args (the kind's static function, given a
 * handle), RLK_ERR_ARG for a NULL handle h, counted in the metrics
 * (runtime/metrics.h) as metric (an expression of the parameters), every
 * call (a NULL handle's too). params is the public parameter list with the
 * handle named h; args the same names in parentheses. */
#define RLK_HANDLE_DEF_COUNTED(fn, metric, params, args)                                          \
    int fn params                                                                                 \
    {                                                                                             \
        rlk_metrics_call mc;                                                                      \
                                                                                                  \
        rlk_metrics_begin(h ? &h->b.rt->counters : NULL, &mc);                                    \
        return rlk_metrics_end(&mc, metric, h ? h->b.name : NULL,                                 \
                               h ? fn##_run args : RLK_ERR_ARG);                                  \
    }

/* T_try_lock(h, wait_ms, lease_ms): T_try_lock_run counted as metric; and
 * T_lock(h, lease_ms): the same, waiting as long as it takes (wait -1). */
#define RLK_HANDLE_DEF_LOCK(T, metric)                                                            \
    RLK_HANDLE_DEF_COUNTED(T##_try_lock, metric, (T *h, long long wait_ms, long long lease_ms),  \
                           (h, wait_ms, lease_ms))                                                \
    int T##_lock(T *h, long long lease_ms)                                                        \
    {                                                                                             \
        return T##_try_lock(h, -1, lease_ms);                                                     \
    }

/* ---------------------------------------------------------------- releasing */

/* T_unlock(h): the calling thread's hold given back by release (an
 * rlk_fam_release_fn called with h), the registry's entry kind, the local
 * queue q (an expression of h, or NULL) told; what names the lock in errors
 * (rlk_fam_unlock). */
#define RLK_HANDLE_DEF_UNLOCK(T, kind, what, q, release)                                          \
    int T##_unlock(T *h)                                                                          \
    {                                                                                             \
        if (!h)                                                                                   \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_unlock(&h->b, kind, what, &h->id, #T "_owner", q, release, h);             \
    }

/* T_force_unlock(h, released) and T_force_unlock_named(h, released):
 * reentrant/force_release on the lock hash and its channel (the second with
 * 'named': a lock's hash without a TTL goes too), the local queue h->q told
 * (the reentrant lock's layout). */
#define RLK_HANDLE_DEF_FORCE_REENTRANT(T)                                                         \
    static int T##_force(T *h, int named, int *released)                                          \
    {                                                                                             \
        const char *keys[2];                                                                      \
                                                                                                  \
        if (!h)                                                                                   \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_force_unlock(&h->b, "reentrant/force_release", rlk_fam_keys(&h->b, keys), \
                                    keys, 0, NULL, named, h->q, released);                        \
    }                                                                                             \
    int T##_force_unlock(T *h, int *released)                                                     \
    {                                                                                             \
        return T##_force(h, 0, released);                                                         \
    }                                                                                             \
    int T##_force_unlock_named(T *h, int *released)                                               \
    {                                                                                             \
        return T##_force(h, 1, released);                                                         \
    }

/* ---------------------------------------------------------------- queries */

/* T_remaining_ttl(h, ttl_ms): the lock hash's PTTL (rlk_fam_remaining_ttl). */
#define RLK_HANDLE_DEF_REMAINING_TTL(T)                                                           \
    int T##_remaining_ttl(T *h, long long *ttl_ms)                                                \
    {                                                                                             \
        if (!h || !ttl_ms)                                                                        \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_remaining_ttl(&h->b, ttl_ms);                                              \
    }

/* T_hold_count(h, count): the calling thread's holds on the server
 * (rlk_fam_hold_count). */
#define RLK_HANDLE_DEF_HOLD_COUNT(T)                                                              \
    int T##_hold_count(T *h, long long *count)                                                    \
    {                                                                                             \
        if (!h || !count)                                                                         \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_hold_count(&h->b, &h->id, #T "_owner", count);                             \
    }

/* T_is_locked(h, locked), T_is_held_by_me(h, held) (the registry's entries
 * of kind first: rlk_fam_is_held), T_lease(h, start_ns, deadline_ns) (the
 * registry's lease: rlk_fam_held_lease) and T_remaining_ttl. */
#define RLK_HANDLE_DEF_QUERIES(T, kind)                                                           \
    int T##_is_locked(T *h, int *locked)                                                          \
    {                                                                                             \
        if (!h || !locked)                                                                        \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_is_locked(&h->b, locked);                                                  \
    }                                                                                             \
    int T##_is_held_by_me(T *h, int *held)                                                        \
    {                                                                                             \
        if (!h || !held)                                                                          \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_is_held(&h->b, kind, &h->id, #T "_owner", held);                           \
    }                                                                                             \
    int T##_lease(T *h, long long *start_ns, long long *deadline_ns)                              \
    {                                                                                             \
        if (!h || !start_ns || !deadline_ns)                                                      \
            return RLK_ERR_ARG;                                                                   \
        return rlk_fam_held_lease(&h->b, kind, &h->id, #T "_owner", start_ns, deadline_ns);       \
    }                                                                                             \
    RLK_HANDLE_DEF_REMAINING_TTL(T)

#endif /* RLK_KINDS_HANDLE_H */
