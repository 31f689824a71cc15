/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine.h - the engine of the non-blocking API: one rlk_async client
 * driven by an event loop's hooks (rlk_async.h). What a kind's requests
 * (a_lock.c, a_semaphore.c, ...) are built from: requests with a state of
 * the kind's size, completed through a queue (the callback never runs from
 * inside the call that made the request); script calls by name and plain
 * commands; listeners on channels, refcounted per channel; one-shot timers
 * on a heap behind the loop's one timer; the watchdog (ae_wd.h).
 *
 * On a Redis Cluster the calls are routed by the slot of their first key
 * (a script's keys must share it), redirects (MOVED, ASK) and "not now"
 * answers (TRYAGAIN, CLUSTERDOWN, ...) are followed inside the engine: a
 * kind sees the final reply, or RLK_ERR_IO (lost or not) as on one server.
 *
 * Everything runs on the loop's thread; nothing here blocks (a dial that
 * would, TLS or a sentinel's lookup, runs on a short-lived thread).
 *
 * Lifetimes. A request lives until its callback has returned (then its
 * free hook runs and it is freed). A script call's callback is called
 * exactly once: with the reply, with RLK_ERR_IO when the reply was lost (the
 * call was written and the connection broke: it may have run; *lost set),
 * or with RLK_ERR_CLOSED when the client is being freed (then the callback
 * must not start new calls: rlk_ae_scriptv refuses them). A listener's and a
 * timer's callbacks are never called after they were removed or the client
 * started freeing.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_ENGINE_H
#define RLK_ENGINE_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "rlk.h"
#include "rlk_async.h"
#include "engine/counters.h"

/* ---------------------------------------------------------------- the client */

/* A new engine client on c (rlk_async_new's, prepared for it and freed with
 * it; or borrowed: a connected blocking client, RedLock's, that must outlive
 * it), counting into counters (NULL: none). No I/O until attached
 * (rlk_async_attach). NULL: out of memory. */
rlk_async *rlk_ae_new(rlk_client *c, rlk_rt_counters *counters, int borrowed);
/* rlk_async_free's two halves, with what its creator owns in between (the
 * watchdog's holds, the runtime): _begin ends every call and request with
 * RLK_ERR_CLOSED (-1: NULL or closing already: nothing to do); _end frees
 * the kinds' data, lets the loop go and frees the memory (at the exit of
 * the handler it ran in). A borrowed client's engine waits for its dial
 * threads there, so the client is the caller's again once it returns. */
int rlk_ae_close_begin(rlk_async *ac);
void rlk_ae_close_end(rlk_async *ac);

/* The blocking subscriber's client (engine/bg.c, before it is attached):
 * its pub/sub connections are named name (CLIENT SETNAME in their set-up;
 * an ACL's refusal is ignored) and counted in the counters' sub_*. */
void rlk_ae_sub_name(rlk_async *ac, const char *name);

/* The client's inner blocking-API client: never connected, it only carries
 * the parsed URL, options (watchdog_lease_ms, command_timeout_ms, ...),
 * transport set-up and script set. Do not call into the pool with it. */
rlk_client *rlk_ae_client(rlk_async *ac);

/* "<uuid>:<task>" into buf (RLK_OWNER_MAX + 1 bytes is enough). */
void rlk_ae_owner(rlk_async *ac, unsigned long long task, char *buf, size_t len);

/* The publish argument of the scripts that publish: "spublish" with sharded
 * pub/sub, else "publish". Pass the pointer itself among a script's args
 * (never a copy): on a cluster whose mode is not known yet it is a marker
 * the engine replaces when the call is written. */
const char *rlk_ae_publish_arg(rlk_async *ac);

/* Whether a PUBLISH's reply counts every subscriber of its channel: not on a
 * cluster with global pub/sub (or whose mode is not known yet), where a node
 * counts only its own. The semaphores' queue needs the exact count (a grant
 * that reaches nobody drops its ticket), so their waiters do not queue there,
 * as the blocking ones (kinds/sem_queue.c, rlk_sem_queue_alone). */
int rlk_ae_counts_exact(rlk_async *ac);

/* Sentinel: the connections made before the sentinels' latest switch are
 * dropped now (the client's own watch does it within 250 ms). */
void rlk_ae_follow(rlk_async *ac);

/* 1 once rlk_async_free has started: start nothing new. */
int rlk_ae_closing(rlk_async *ac);
/* 1 while the one server could not be connected to (its last attempt was
 * refused, timed out or had its set-up refused; rlk_async_conn_errstr says
 * why): a request's calls that never went out are then attempted again
 * within its own wait only (async/a_common.h, rlk_a_common_budget). */
int rlk_ae_unreachable(rlk_async *ac);
/* 1 while the one server's command connection is up (set up, calls go out at once); 0 on a
 * cluster. */
int rlk_ae_up(rlk_async *ac);

/* The client's fatal error (bad URL, unsupported topology), RLK_OK if none;
 * a request checks it first and completes with it. */
int rlk_ae_fatal(rlk_async *ac, const char **msg);

/* Per-client data of a kind (its table of holds, ...): one pointer per
 * slot, made by make() on the first call, freed by destroy() inside
 * rlk_async_free after every request has ended. NULL: out of memory. */
enum {
    RLK_AE_SLOT_LOCK,           /* a_lock.c: the five lock kinds' holds */
    RLK_AE_SLOT_SEMAPHORE,
    RLK_AE_SLOT_PSEMAPHORE,
    RLK_AE_SLOT_LATCH,
    RLK_AE_SLOT_MULTILOCK,
    RLK_AE_SLOT_DOUBT,          /* a_hold.c: the lock kinds' doubts */
    RLK_AE_SLOTS = 8
};
void *rlk_ae_kind_data(rlk_async *ac, int slot, void *(*make)(void), void (*destroy)(void *));

/* The monotonic clock in ms (client/clock.h's). */
long long rlk_ae_now_ms(void);

/* ---------------------------------------------------------------- requests */

/* A request's cancel hook: rlk_async_cancel on a pending request calls it
 * (from inside rlk_async_cancel; the hook must not complete synchronously
 * any other request than r). A kind with work to undo (leave a queue,
 * release a lock granted meanwhile) does it and calls rlk_ae_complete(r,
 * RLK_ERR_CANCELLED, ...) when done; with no hook the engine completes r
 * with RLK_ERR_CANCELLED at once (delivered on the next turn). */
typedef void (*rlk_ae_cancel_fn)(rlk_async_req *r, void *state);
/* Called once when r is freed (after its callback, or with the client). */
typedef void (*rlk_ae_free_fn)(rlk_async_req *r, void *state);

/* A new pending request of ac with state_size bytes of zeroed state for the
 * kind (rlk_ae_req_state). NULL: out of memory (no callback will come). */
rlk_async_req *rlk_ae_req_new(rlk_async *ac, size_t state_size, rlk_async_fn fn, void *privdata);
void *rlk_ae_req_state(rlk_async_req *r);
rlk_async *rlk_ae_req_client(rlk_async_req *r);
void rlk_ae_req_hooks(rlk_async_req *r, rlk_ae_cancel_fn cancel, rlk_ae_free_fn free_fn);
/* Replaces the user data r's callback gets (a kind whose callback is its
 * own, passing on a richer result: its state, set once r has it). */
void rlk_ae_req_set_privdata(rlk_async_req *r, void *privdata);

/* Completes r: its callback is queued with (err, value, id, message) and
 * called on the loop's next turn. Only the first completion counts (later
 * ones are ignored); errfmt NULL gives "" (RLK_OK) or rlk_strerror(err). */
void rlk_ae_complete(rlk_async_req *r, int err, long long value, const char *id,
                     const char *errfmt, ...) __attribute__((format(printf, 5, 6)));
/* 1 when r was completed already (its result queued or delivered). */
int rlk_ae_req_done(const rlk_async_req *r);

/* How many calls of requests (scripts and commands, renewals included) ended
 * lost so far: written, and their connection broke or timed out before the
 * reply (RLK_ERR_IO with lost 1). For tests. */
unsigned long long rlk_ae_lost_calls(const rlk_async *ac);
/* Test only (the control of async_closed.c): nonzero writes a call on a live
 * command connection without checking first whether the server closed it
 * (ae_call.c). 0 by default. */
extern int rlk_ae_no_peer_check;

/* The client's metrics (rlk_async_metrics_get reads them; engine/metrics.h
 * records into them), as its creator set them; NULL: none. */
rlk_rt_counters *rlk_ae_counters(rlk_async *ac);
/* Counts r as an acquisition of kind (enum rlk_metrics_kind) on name, as the
 * blocking calls are: waiting from now, ended by r's completion with its
 * result (and wait time when it acquired). At most once per request. */
void rlk_ae_req_metric(rlk_async_req *r, int kind, const char *name);

/* ---------------------------------------------------------------- calls */

typedef struct rlk_ae_call rlk_ae_call;

/* A call's reply: rc RLK_OK with reply (never an error reply), or
 * RLK_ERR_SCRIPT / RLK_ERR_SERVER / RLK_ERR_AUTH / RLK_ERR_SHA with errstr
 * (the server's text), or RLK_ERR_IO with lost 1 (written, no reply: it may
 * have run) or lost 0 (never written), or RLK_ERR_CLOSED. reply and errstr
 * are valid during the callback only. */
typedef void (*rlk_ae_reply_fn)(rlk_async *ac, int rc, const redisReply *reply, const char *errstr,
                                int lost, void *arg);

/* Runs script name (the client's script set: a kinds/proto.h call's; on
 * NOSCRIPT loaded and sent once more) with keys and args (copied; arglens
 * their lengths, for binary arguments such as permit ids; NULL: strlen of
 * each). The call waits for the connection when it is not
 * up yet (and is sent after a reconnect when it was never written). A call
 * whose reply does not come within the client's command timeout is treated
 * as lost (the connection is dropped and opened again, and the next
 * connection first fences the old one: CLIENT KILL ID). Returns the call
 * (for rlk_ae_call_forget), or NULL: out of memory, unknown script or the
 * client is closing (fn is then not called). */
rlk_ae_call *rlk_ae_scriptv(rlk_async *ac, const char *name, int nkeys, const char *const *keys,
                            int nargs, const char *const *args, const size_t *arglens,
                            rlk_ae_reply_fn fn, void *arg);
/* A plain command (argv form), the same contract. */
rlk_ae_call *rlk_ae_command(rlk_async *ac, int argc, const char *const *argv, rlk_ae_reply_fn fn,
                            void *arg);
/* The call's callback will not be called (its reply is read and dropped).
 * For a kind whose request is gone; never needed otherwise. */
void rlk_ae_call_forget(rlk_ae_call *call);

/* ---------------------------------------------------------------- pub/sub */

typedef struct rlk_ae_sub rlk_ae_sub;

/* A message on the listener's channel: msg and len; msg NULL: the
 * subscription is in place (first time, or again after a reconnect or a
 * move of its slot: messages may have been missed meanwhile, so attempt
 * again); msg rlk_ae_down (a listener of rlk_ae_sub_downs only): it is not,
 * and may not be for a while: its pub/sub connection could not be made or
 * dropped, or the server refused its SUBSCRIBE (fn(NULL) follows once it is
 * subscribed again). */
typedef void (*rlk_ae_msg_fn)(rlk_async *ac, const char *channel, const char *msg, size_t len,
                              void *arg);

/* Adds a listener on channel (SUBSCRIBE on the first one; refcounted). When
 * the channel is subscribed already, fn(NULL) comes on the next turn.
 * NULL: out of memory or closing. */
rlk_ae_sub *rlk_ae_subscribe(rlk_async *ac, const char *channel, rlk_ae_msg_fn fn, void *arg);
/* Removes the listener (UNSUBSCRIBE after the last one); NULL ignored. */
void rlk_ae_unsubscribe(rlk_ae_sub *s);
/* 1 when the listener's channel is subscribed on the live connection. */
int rlk_ae_sub_ready(const rlk_ae_sub *s);
/* 1 when the listener was added to a channel subscribed already and its fn(NULL) has not come
 * yet: then it does not (the caller acts on it now). */
int rlk_ae_sub_take_ready(rlk_ae_sub *s);
/* The listener hears rlk_ae_down from now on (the blocking subscriber: its
 * waiters poll meanwhile). */
extern const char rlk_ae_down[];
void rlk_ae_sub_downs(rlk_ae_sub *s);

/* ---------------------------------------------------------------- timers */

typedef struct rlk_ae_timer rlk_ae_timer;
typedef void (*rlk_ae_timer_fn)(rlk_async *ac, void *arg);

/* fn(arg) once, ms (>= 0) from now, from rlk_async_handle_timer. The timer
 * is freed after fn returns (do not rlk_ae_timer_del it then). NULL: out of
 * memory or closing. */
rlk_ae_timer *rlk_ae_timer_add(rlk_async *ac, long long ms, rlk_ae_timer_fn fn, void *arg);
/* Stops a timer that has not fired; NULL ignored. */
void rlk_ae_timer_del(rlk_ae_timer *t);

/* The watchdog (lease-less holds renewed on the loop): ae_wd.h. */

#endif /* RLK_ENGINE_H */
