/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk_async.h - the non-blocking API: lock requests served by one event
 * loop's thread, thousands pending at once, without a thread per waiter.
 *
 * The model (docs/async.md): an rlk_async client is driven by one event
 * loop. It opens its connections itself (a command connection and one
 * pub/sub connection; on a Redis Cluster a command connection per master,
 * redirects followed without blocking, and with sharded pub/sub a pub/sub
 * connection per master; over the same transport as the blocking API, TLS
 * included), runs the same scripts and the same protocol as the
 * blocking API (pub/sub wake-ups, the cross-process handoff queue, the fair
 * queue, the watchdog renewing lease-less locks, settling of lost replies),
 * and tells the loop which file descriptors to watch and when to fire its
 * one timer, through rlk_async_hooks. One adapter header per loop fills the
 * hooks in: rlk_async_libevent.h, rlk_async_libuv.h, rlk_async_libev.h.
 *
 * Every request takes a completion callback and user data, and returns a
 * handle for rlk_async_cancel. The rules (each has a test in c/tests/async):
 *   - every callback is called exactly once per request: with the result,
 *     RLK_ERR_BUSY when the wait ran out, RLK_ERR_CANCELLED after
 *     rlk_async_cancel, or RLK_ERR_CLOSED when the client is freed first;
 *   - never from inside the call that made the request (a request refused
 *     at once, e.g. a bad argument, completes on the loop's next turn);
 *   - never after rlk_async_free has returned;
 *   - a callback may start, cancel or free requests, and free the client;
 *   - every rlk_async_* call is made on the loop's thread. rlk_async_* calls
 *     from another thread are undefined (no locking is done); use the
 *     loop's own way to run a function on its thread.
 *
 * Holder identity: there is no thread to name the holder, so each lock
 * request names a task (an integer of the caller's choosing, as Redisson's
 * lockAsync(leaseTime, unit, threadId) does); the holder id is
 * "<client uuid>:<task>". Re-entry and unlock follow the task.
 */
#ifndef RLK_ASYNC_H
#define RLK_ASYNC_H

#include <stddef.h>
#include <stdint.h>

#include "rlk.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rlk_async rlk_async;         /* a client driven by one event loop */
typedef struct rlk_async_req rlk_async_req; /* a pending request (a cancel handle) */

/* ---------------------------------------------------------------- the loop's hooks */

#define RLK_ASYNC_READ 1
#define RLK_ASYNC_WRITE 2

/* What an event loop does for rlk. data is the adapter's own, passed back
 * to every hook. A file descriptor is attached once (attach returns the
 * adapter's handle for it, NULL on failure), its interest set any number of
 * times (watch: RLK_ASYNC_READ | RLK_ASYNC_WRITE, 0 for none), and detached
 * before rlk closes it. When the fd is ready the loop calls
 * rlk_async_handle_io(ac, fd, events). There is one timer per client:
 * set_timer(data, ms) asks for rlk_async_handle_timer(ac) once after ms
 * milliseconds (0: on the next turn), replacing any earlier request; ms -1
 * stops it. cleanup is called once by rlk_async_free, last. */
typedef struct rlk_async_hooks {
    void *data;
    void *(*attach)(void *data, int fd);
    void (*watch)(void *data, void *handle, int events);
    void (*detach)(void *data, void *handle);
    void (*set_timer)(void *data, long long ms);
    void (*cleanup)(void *data);
} rlk_async_hooks;

/* Called by the loop (an adapter or the program's own loop). */
RLK_API void rlk_async_handle_io(rlk_async *ac, int fd, int events);
RLK_API void rlk_async_handle_timer(rlk_async *ac);

/* ---------------------------------------------------------------- the client */

/* A new client for opts (the same URLs and options as rlk_connect:
 * redis://, rediss://, redis+sentinel://, redis+cluster://, unix sockets,
 * TLS settings). No I/O yet: NULL only when out of memory; a bad URL or
 * option is recorded (rlk_async_err) and every request then fails with it. */
RLK_API rlk_async *rlk_async_new(const rlk_options *opts);

/* Gives the client its loop; connections are opened from here on.
 * Requests made before this wait for it. RLK_OK, or RLK_ERR_ARG (hooks
 * missing a function, or attached already). The adapter headers call it. */
RLK_API int rlk_async_attach(rlk_async *ac, const rlk_async_hooks *hooks);

/* Ends every pending request with RLK_ERR_CLOSED (their callbacks run
 * inside this call, before it returns), stops the watchdog (locks it renews
 * are not unlocked: their leases run out), closes the connections and calls
 * the hooks' cleanup. Safe from inside a callback. */
RLK_API void rlk_async_free(rlk_async *ac);

/* The client's first error, or RLK_OK, and its message ("" when none).
 * Connection errors that are ridden out are not recorded here. */
RLK_API int rlk_async_err(const rlk_async *ac);
RLK_API const char *rlk_async_errstr(const rlk_async *ac);
/* Why the server cannot be reached now ("connect 127.0.0.1:6379: Connection
 * refused"): set when the last attempt to open the command connection
 * failed to connect (refused, unreachable, timed out) and cleared once it
 * is up; NULL while it is up or not tried yet. Not a cluster's (its
 * calls wait for the slot map and say so) nor a sentinel client's (the
 * sentinels may name another master: its calls ride that out). Meanwhile a request's calls end
 * at once: one with wait_ms 0 completes with this cause, one with a wait
 * attempts again until that wait ends, and one with wait_ms -1 until it is
 * cancelled: this is how to see that it is not getting anywhere. A metric
 * counts the attempts: rlk_metrics.connect_failures (rlk_async_metrics_get,
 * rlk_connect_failures_total). */
RLK_API const char *rlk_async_conn_errstr(const rlk_async *ac);

/* The client's uuid: holder ids are "<uuid>:<task>". */
RLK_API const char *rlk_async_uuid(const rlk_async *ac);

/* Requests not yet completed. */
RLK_API size_t rlk_async_pending(const rlk_async *ac);

/* Called when the watchdog finds a lock it renews lost (rlk.h's reasons):
 * RLK_LOST_GONE when a renewal finds it not ours, RLK_LOST_EXPIRED when no
 * renewal got through by the send time of the last successful acquire or
 * renewal + the watchdog lease - rlk_options.lost_margin_ms (as the
 * blocking watchdog). On the loop's thread. */
RLK_API void rlk_async_set_lost_callback(rlk_async *ac, rlk_lost_kind_fn fn, void *userdata);

/* The client's metrics (rlk.h rlk_metrics_*, docs/observability.md): the
 * lock requests' acquisitions, waits and holds, the watchdog's renewals and
 * lost locks; the gauges locks_held and watchdog_entries are this client's
 * holds. rlk_metrics_format writes them as Prometheus text or JSON. On the
 * loop's thread. */
RLK_API int rlk_async_metrics_get(rlk_async *ac, rlk_metrics *out);
/* rlk_metrics_watch and rlk_metrics_set_enabled for the async client. */
RLK_API int rlk_async_metrics_watch(rlk_async *ac, const char *name);
RLK_API int rlk_async_metrics_set_enabled(rlk_async *ac, int on);

/* ---------------------------------------------------------------- results */

typedef struct rlk_async_result {
    int err;              /* RLK_OK or RLK_ERR_* (RLK_ERR_CANCELLED, RLK_ERR_CLOSED too) */
    const char *errstr;   /* the message when err != RLK_OK, else "" */
    long long value;      /* per request, below; 0 when it has none */
    const char *id;       /* rlk_async_psemaphore_acquire: the permit id; else NULL */
} rlk_async_result;

/* r and its strings are valid during the call only. */
typedef void (*rlk_async_fn)(rlk_async *ac, const rlk_async_result *r, void *privdata);

/* Cancels a pending request: its callback is called with RLK_ERR_CANCELLED
 * on the loop's next turn (not from inside this call), unless the result
 * was already on its way, in which case the callback has that result (a
 * lock taken meanwhile is released by rlk first: a cancelled lock request
 * never leaves the lock held). A handle is valid until its callback
 * returns; a NULL handle is ignored. */
RLK_API void rlk_async_cancel(rlk_async_req *r);

/* ---------------------------------------------------------------- locks */

/* Every request below returns its handle, or NULL only when out of memory
 * (then no callback is called). name is copied. */

/* kind: RLK_KIND_LOCK (reentrant), RLK_KIND_FAIR, RLK_KIND_FENCED,
 * RLK_KIND_READ or RLK_KIND_WRITE (the two sides of a read-write lock).
 *
 * wait_ms: 0 one attempt, > 0 wait at most that long, -1 wait without
 * bound. lease_ms: > 0 the lease, -1 the watchdog (renewed every
 * watchdog_ms/3 by the loop's timer until unlock). value: the fencing
 * token (RLK_KIND_FENCED), else the hold count after the call.
 * Errors as the blocking calls: RLK_ERR_BUSY (still held when the wait ran
 * out), RLK_ERR_UPGRADE, RLK_ERR_ARG, RLK_ERR_UNSETTLED, ... */
RLK_API rlk_async_req *rlk_async_lock(rlk_async *ac, int kind, const char *name, unsigned long long task,
                                      long long wait_ms, long long lease_ms, rlk_async_fn fn,
                                      void *privdata);
/* RLK_ERR_NOT_OWNER when the task does not hold it; value: count left. */
RLK_API rlk_async_req *rlk_async_unlock(rlk_async *ac, int kind, const char *name, unsigned long long task,
                                        rlk_async_fn fn, void *privdata);
/* Whoever holds it; RLK_KIND_READ or RLK_KIND_WRITE: the read-write lock
 * in whatever mode it is held (rlk_rwlock_force_unlock's RLK_RW_ANY).
 * value: 1 when something was released. RLK_KIND_LOCK also ends a
 * lock-delay (rlk_async_lock_delay): value 2 when no lock was there but a
 * lost one's delay key, deleted (as rlk_lock_force_unlock). */
RLK_API rlk_async_req *rlk_async_force_unlock(rlk_async *ac, int kind, const char *name,
                                              rlk_async_fn fn, void *privdata);
/* As rlk_async_force_unlock, for an operator who names the kind: a lock's
 * hash without a TTL, which the shape cannot tell from an application's
 * data, goes too (rlk_lock_force_unlock_named); rlk_async_force_unlock
 * refuses it (RLK_ERR_SCRIPT, RLK_WRONGTYPE). */
RLK_API rlk_async_req *rlk_async_force_unlock_named(rlk_async *ac, int kind, const char *name,
                                                    rlk_async_fn fn, void *privdata);

/* The non-reentrant variants of rlk_async_lock (Redisson's
 * RedissonNonReentrantLock and RedissonNonReentrantFairLock, docs/async.md):
 * kind RLK_KIND_LOCK (nonreentrant/acquire: the reentrant lock's data,
 * waiting on its channel) or RLK_KIND_FAIR (fair/nonreentrant_acquire: the
 * fair queue). The holder (task) asking again gets RLK_ERR_REENTRY, from
 * this client's holds before any I/O or from the script, and nothing is
 * counted. value: 1. Unlock with rlk_async_unlock of the same kind (the
 * hold's own release script is used). */
RLK_API rlk_async_req *rlk_async_lock_nr(rlk_async *ac, int kind, const char *name,
                                         unsigned long long task, long long wait_ms,
                                         long long lease_ms, rlk_async_fn fn, void *privdata);
/* The reentrant lock (RLK_KIND_LOCK's data) waited for without pub/sub, as
 * rlk_lock_set_spin (Redisson's RedissonSpinLock): attempt, then a timer of
 * an exponential back-off with jitter from initial_ms up to max_ms (never
 * past the holder's TTL or the wait), no SUBSCRIBE. 0 for either bound:
 * Redisson's default (1 and 128 ms); RLK_ERR_ARG unless 1 <= initial_ms <=
 * max_ms <= 60000 then. Unlock with rlk_async_unlock(RLK_KIND_LOCK). */
RLK_API rlk_async_req *rlk_async_lock_spin(rlk_async *ac, const char *name, unsigned long long task,
                                           long long wait_ms, long long lease_ms,
                                           long long initial_ms, long long max_ms,
                                           rlk_async_fn fn, void *privdata);

/* The reentrant lock (RLK_KIND_LOCK's data) with a lock-delay, as
 * rlk_lock_set_delay (docs/locks/reentrant.md, "Lock-delay"): every call
 * names the key {name}:rlk_delay too, so a holder that LOST the lock (its
 * lease ran out, not released) keeps it from the next holder with a delay
 * until delay_ms after its lease ended; attempts are refused meanwhile and
 * a waiter waits the time left. Renewals (lease_ms -1: the watchdog) keep
 * the delay key's PX at lease + delay; rlk_async_unlock(RLK_KIND_LOCK) of
 * the last hold deletes it. delay_ms 1..10^12 (0: rlk_async_lock without a
 * delay). Give every client of a name the same delay: ones without it
 * ignore the key. rlk_async_force_unlock(RLK_KIND_LOCK) deletes it (a
 * force unlock is a release). A hold keeps the delay of the acquisition
 * that took it, or none: an rlk_async_lock re-entry of it, or one with
 * another delay_ms, is made with the hold's delay. */
RLK_API rlk_async_req *rlk_async_lock_delay(rlk_async *ac, const char *name, unsigned long long task,
                                            long long wait_ms, long long lease_ms,
                                            long long delay_ms, rlk_async_fn fn, void *privdata);

/* MultiLock over names of this client (all of kind RLK_KIND_LOCK): all or
 * none, in the order given; wait and lease as rlk_async_lock. */
RLK_API rlk_async_req *rlk_async_multilock_lock(rlk_async *ac, int n, const char *const *names,
                                                unsigned long long task, long long wait_ms,
                                                long long lease_ms, rlk_async_fn fn, void *privdata);
RLK_API rlk_async_req *rlk_async_multilock_unlock(rlk_async *ac, int n, const char *const *names,
                                                  unsigned long long task, rlk_async_fn fn,
                                                  void *privdata);

/* Redisson's faster MultiLock (getMultiLock(group, values), as rlk_fastmulti_*,
 * docs/locks/fastmulti.md): values[0..nvalues) of the hash group taken all
 * or none by one script call for task. wait_ms and lease_ms as
 * rlk_async_lock (-1: renewed by the loop's watchdog); waiters wait on the
 * group's channel, woken by every release in the group. value: how many
 * acquisitions task has in the group. RLK_ERR_BUSY: a value still another's
 * when the wait ran out (nothing taken); RLK_ERR_ARG (nothing sent): 0 or
 * more than 100000 values, a value empty, over 1024 bytes, with ':' or given
 * twice, or a bad wait or lease. */
RLK_API rlk_async_req *rlk_async_fastmulti_lock(rlk_async *ac, const char *group,
                                                const char *const *values, size_t nvalues,
                                                unsigned long long task, long long wait_ms,
                                                long long lease_ms, rlk_async_fn fn,
                                                void *privdata);
/* Releases task's hold of every value, all or none. RLK_ERR_NOT_OWNER: a
 * value not task's (nothing changed); value: acquisitions left in the group. */
RLK_API rlk_async_req *rlk_async_fastmulti_unlock(rlk_async *ac, const char *group,
                                                  const char *const *values, size_t nvalues,
                                                  unsigned long long task, rlk_async_fn fn,
                                                  void *privdata);
/* Releases the values whoever holds them; value: 1 when one was held. This
 * client's holds in the group are forgotten (no longer renewed). */
RLK_API rlk_async_req *rlk_async_fastmulti_force_unlock(rlk_async *ac, const char *group,
                                                        const char *const *values,
                                                        size_t nvalues, rlk_async_fn fn,
                                                        void *privdata);
/* value: how many of the values anyone holds (0: none is locked), as
 * rlk_fastmulti_is_locked reads it (fastmulti/held). RLK_ERR_ARG: the value
 * list as rlk_async_fastmulti_lock's. */
RLK_API rlk_async_req *rlk_async_fastmulti_is_locked(rlk_async *ac, const char *group,
                                                     const char *const *values, size_t nvalues,
                                                     rlk_async_fn fn, void *privdata);
/* value: how many of the values task holds (nvalues: every one, as
 * rlk_fastmulti_is_held_by_me). */
RLK_API rlk_async_req *rlk_async_fastmulti_is_held(rlk_async *ac, const char *group,
                                                   const char *const *values, size_t nvalues,
                                                   unsigned long long task, rlk_async_fn fn,
                                                   void *privdata);

/* ---------------------------------------------------------------- semaphores and latch */

/* wait_ms as rlk_async_lock. value after release: permits available. */
RLK_API rlk_async_req *rlk_async_semaphore_acquire(rlk_async *ac, const char *name, long long permits,
                                                   long long wait_ms, rlk_async_fn fn, void *privdata);
RLK_API rlk_async_req *rlk_async_semaphore_release(rlk_async *ac, const char *name, long long permits,
                                                   rlk_async_fn fn, void *privdata);

/* One permit with lease_ms (> 0); its id is in the result. */
RLK_API rlk_async_req *rlk_async_psemaphore_acquire(rlk_async *ac, const char *name, long long wait_ms,
                                                    long long lease_ms, rlk_async_fn fn, void *privdata);
RLK_API rlk_async_req *rlk_async_psemaphore_release(rlk_async *ac, const char *name, const char *id,
                                                    rlk_async_fn fn, void *privdata);

/* Ends RLK_OK when the count is 0 (value 0), RLK_ERR_BUSY when timeout_ms
 * (-1: none) ran out first. */
RLK_API rlk_async_req *rlk_async_latch_await(rlk_async *ac, const char *name, long long timeout_ms,
                                             rlk_async_fn fn, void *privdata);
/* value: the count left. */
RLK_API rlk_async_req *rlk_async_latch_count_down(rlk_async *ac, const char *name, rlk_async_fn fn,
                                                  void *privdata);
/* value: 1 when set (the latch was at 0 or absent). */
RLK_API rlk_async_req *rlk_async_latch_try_set_count(rlk_async *ac, const char *name, long long count,
                                                     rlk_async_fn fn, void *privdata);

/* The blocking calls' one-script forms (same scripts, replies and errors;
 * docs/async.md). A call that never went out is sent again within two
 * command timeouts and a connect; a lost reply ends a writing call with
 * RLK_ERR_UNSETTLED (it is not repeated), a reading one is asked again. */

/* value: 1 when the permits were given back, 0 when the semaphore has no
 * key (nothing changed). permits 1..10^12. */
RLK_API rlk_async_req *rlk_async_semaphore_release_if_exists(rlk_async *ac, const char *name,
                                                             long long permits, rlk_async_fn fn,
                                                             void *privdata);
/* Sets the count to permits (0..10^12) with a time to live of ttl_ms
 * (1..10^12) only when there is none; value: 1 when it did. */
RLK_API rlk_async_req *rlk_async_semaphore_try_set_permits_ttl(rlk_async *ac, const char *name,
                                                               long long permits, long long ttl_ms,
                                                               rlk_async_fn fn, void *privdata);
/* Redisson's tryRelease(permitId): value 1 when the permit was released, 0
 * when it was not held (expired, released, unknown: no error). */
RLK_API rlk_async_req *rlk_async_psemaphore_try_release(rlk_async *ac, const char *name,
                                                        const char *id, rlk_async_fn fn,
                                                        void *privdata);
/* value: the permit's lease left (>= 1 ms; -1 for one without a lease).
 * RLK_ERR_NOT_OWNER: not held. */
RLK_API rlk_async_req *rlk_async_psemaphore_lease_time(rlk_async *ac, const char *name,
                                                       const char *id, rlk_async_fn fn,
                                                       void *privdata);
/* The size (count + held) becomes permits (0..10^12); value: the count. */
RLK_API rlk_async_req *rlk_async_psemaphore_set_permits(rlk_async *ac, const char *name,
                                                        long long permits, rlk_async_fn fn,
                                                        void *privdata);
/* value: the permits held (expired ones given back first). */
RLK_API rlk_async_req *rlk_async_psemaphore_acquired(rlk_async *ac, const char *name,
                                                     rlk_async_fn fn, void *privdata);

/* A time to live on the keys of kind's name: kind RLK_MKIND_SEMAPHORE (the
 * count key), RLK_MKIND_PSEMAPHORE (name and {name}:timeout; ttl reads
 * name's) or RLK_MKIND_LATCH (an armed latch; its expiry opens it), as
 * rlk_semaphore_expire & co. expire: ttl_ms 1..10^12, value 1 when a key
 * got it (0: no key). clear_expire: value 1 when it had one. ttl: value
 * the ms left, -1 none, -2 no key. RLK_ERR_ARG for another kind. */
RLK_API rlk_async_req *rlk_async_expire(rlk_async *ac, int kind, const char *name,
                                        long long ttl_ms, rlk_async_fn fn, void *privdata);
RLK_API rlk_async_req *rlk_async_clear_expire(rlk_async *ac, int kind, const char *name,
                                              rlk_async_fn fn, void *privdata);
RLK_API rlk_async_req *rlk_async_ttl(rlk_async *ac, int kind, const char *name, rlk_async_fn fn,
                                     void *privdata);

/* ---------------------------------------------------------------- leader election */

/* Leader election (docs/elect.md) on the loop, with the blocking API's
 * scripts and layout: a candidate is (name, task), holder id
 * "<uuid>:<task>". A leader is a fenced hold of this client
 * (RLK_KIND_FENCED, its token the term): with lease_ms -1 the watchdog
 * renews it and the lost callback (rlk_async_set_lost_callback) reports
 * its loss, RLK_LOST_GONE or RLK_LOST_EXPIRED at the blocking watchdog's
 * deadline; stop acting as leader then. */

/* Campaigns with value (NULL: ""; at most 65536 bytes): waits as
 * rlk_async_lock (wait_ms, lease_ms) until elected; value: the term.
 * Leading already: its term, nothing sent. RLK_ERR_BUSY when another
 * candidate still leads when the wait ran out. */
RLK_API rlk_async_req *rlk_async_elect_campaign(rlk_async *ac, const char *name,
                                                unsigned long long task, const char *value,
                                                long long wait_ms, long long lease_ms,
                                                rlk_async_fn fn, void *privdata);
/* The leader replaces its value (elect/proclaim); value: the term.
 * RLK_ERR_NOT_OWNER when task does not lead (or no longer in its term). */
RLK_API rlk_async_req *rlk_async_elect_proclaim(rlk_async *ac, const char *name,
                                                unsigned long long task, const char *value,
                                                rlk_async_fn fn, void *privdata);
/* The leader steps down (elect/resign); RLK_ERR_NOT_OWNER when it does not lead. */
RLK_API rlk_async_req *rlk_async_elect_resign(rlk_async *ac, const char *name,
                                              unsigned long long task, rlk_async_fn fn,
                                              void *privdata);
/* The term task leads in while this client records it as leading (no
 * I/O): RLK_OK and *term; RLK_ERR_NOT_OWNER after a resign, a loss, or
 * never elected; RLK_ERR_ARG. */
RLK_API int rlk_async_elect_term(rlk_async *ac, const char *name, unsigned long long task,
                                 long long *term);

/* An observer's callback: r as every request's; info the leadership read
 * (NULL unless r->err is RLK_OK), valid during the call only. */
typedef void (*rlk_async_elect_fn)(rlk_async *ac, const rlk_async_result *r,
                                   const rlk_elect_info *info, void *privdata);
/* Observes the election: known NULL, the leadership now; else completes
 * once it differs from known (a new leader or term, a resign, a value
 * proclaimed, the lease run out), RLK_ERR_TIMEOUT when timeout_ms (-1:
 * none) passed first. Subscribes to the election's channel before it
 * reads, so no change between a read and the wait is missed, and reads
 * again at the leader's lease end (a lease that runs out publishes
 * nothing). To follow every change, observe again from the callback with
 * the info it got (it is copied). */
RLK_API rlk_async_req *rlk_async_elect_observe(rlk_async *ac, const char *name,
                                               const rlk_elect_info *known, long long timeout_ms,
                                               rlk_async_elect_fn fn, void *privdata);

/* ---------------------------------------------------------------- fenced writes */

/* A fenced write's callback: r as every request's (r->value: with
 * RLK_ERR_FENCED the highest token accepted, else 0); reply the command's
 * reply when r->err is RLK_OK (check: the highest before), else NULL; valid
 * during the call only. */
typedef void (*rlk_async_fence_fn)(rlk_async *ac, const rlk_async_result *r,
                                   const redisReply *reply, void *privdata);
/* rlk_fence_write as a request (docs/locks/fenced.md): op, fence, data,
 * token, nargs, args and arglens as there (copied), the same script by name,
 * routed by the fence key's slot on a cluster. Results as rlk_fence_write:
 * RLK_OK (accepted), RLK_ERR_FENCED (a stale token; nothing changed),
 * RLK_ERR_SCRIPT (the script's other refusals: RLK_BADARG, RLK_CROSSSLOT,
 * RLK_WRONGTYPE, RLK_CMDERR), RLK_ERR_ARG (bad arguments, or on a cluster
 * keys in different slots), RLK_ERR_READONLY (a replica refused it; through
 * Sentinel the write was sent once more to the master the sentinels name).
 * A lost reply (written, no reply) ends RLK_ERR_IO: the write may have run,
 * it is not repeated; repeat only what is idempotent. A cancel does not stop
 * a write already sent: its result stands. */
RLK_API rlk_async_req *rlk_async_fence_write(rlk_async *ac, const char *op, const char *fence,
                                             const char *data, uint64_t token, int nargs,
                                             const char *const *args, const size_t *arglens,
                                             rlk_async_fence_fn fn, void *privdata);
/* rlk_fence_claim as a request: fence/check of each of the nfences fence
 * keys (copied) in turn, raising each to token. RLK_OK (value: token): every
 * fence refuses a lower token from now on. RLK_ERR_FENCED (value: the
 * fence's highest, errstr names the fence): a newer token claimed or wrote
 * it; the claim stopped there. RLK_ERR_ARG: no fences, an empty one, a bad
 * token. A check whose reply was lost is sent again within the request's
 * budget (it is idempotent). A cancel does not stop a check already sent. */
RLK_API rlk_async_req *rlk_async_fence_claim(rlk_async *ac, uint64_t token, int nfences,
                                             const char *const *fences, rlk_async_fn fn,
                                             void *privdata);

#ifdef __cplusplus
}
#endif

#endif /* RLK_ASYNC_H */
