/*
 * semaphore_wait.h - what the semaphore (semaphore.c), the permit-expirable
 * semaphore (psemaphore.c) and the count-down latch (latch.c) share:
 * Redisson's key and channel names, integer replies, argument checks, and
 * the wait loop on the client's subscriber (the pattern of lock.c: join the
 * channel, wait until subscribed, attempt, sleep on the channel bounded by
 * a hint and the deadline, again).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SEMAPHORE_WAIT_H
#define RLK_SEMAPHORE_WAIT_H

#include "lock_internal.h"

#define RLK_SYNC_NUM_MAX 1000000000000LL    /* permits, counts, leases: 1..10^12 */

/* ---------------------------------------------------------------- names */

/* Redisson's prefixName(prefix, name): "prefix:{name}", or "prefix:name"
 * when name already contains '{' (it keeps its own hash tag). malloc'd. */
char *rlk_sync_prefix_name(const char *prefix, const char *name);
/* Redisson's suffixName(name, suffix): "{name}:suffix", or "name:suffix"
 * when name already contains '{'. malloc'd. */
char *rlk_sync_suffix_name(const char *name, const char *suffix);
/* "prefix{name}" (the latch channel: braces always added). malloc'd. */
char *rlk_sync_braced_name(const char *prefix, const char *name);

/* ---------------------------------------------------------------- calls */

/* Checks lo <= v <= hi; else RLK_ERR_ARG "<what> <name>: <field> <v> is not in lo..hi". */
int rlk_sync_check_range(rlk_client *c, const char *what, const char *name, const char *field,
                         long long v, long long lo, long long hi);

/* Runs script and reads its integer reply into *out (RLK_ERR_PROTOCOL for
 * another shape). arglens may be NULL. */
int rlk_sync_eval_int(rlk_client *c, const char *script, int nkeys, const char *const *keys,
                      int nargs, const char *const *args, const size_t *arglens, long long *out);

/* ---------------------------------------------------------------- waiting */

/* One attempt. RLK_OK: done. RLK_ERR_BUSY (no error recorded): not yet;
 * *hint_ms is how long at most before it may succeed without any message
 * (a permit's expiry), -1 when only a message can change the outcome.
 * Any other code: an error, recorded on the client. */
typedef int (*rlk_sync_attempt_fn)(void *arg, long long *hint_ms);

typedef struct rlk_sync_waiter {
    rlk_client *c;
    rlk_rt *rt;
    const char *channel;
    rlk_sync_attempt_fn attempt;
    void *arg;
    int ride_out;   /* a connection error of an attempt while the subscriber is down too is an
                       outage: keep polling up to the connect timeout (safe for attempts that
                       leave nothing behind when retried) */
    int pass_on;    /* on leaving with success or an error, add a permit to the channel for
                       the next local waiter (a latch's "0" wakes one thread per client; each
                       passes it on) */
} rlk_sync_waiter;

/* The deadline (rlk_rt_now_ns clock) of a wait of wait_ms from start_ns:
 * -1 (none) when wait_ms < 0; capped at 10^12 ms. */
long long rlk_sync_deadline(long long start_ns, long long wait_ms);

/* Joins w->channel on the client's subscriber and retries w->attempt after
 * each wake-up (a message on the channel, a subscriber reconnect, the
 * attempt's hint, the 100 ms poll while the subscriber is down) until it
 * succeeds (RLK_OK), fails (its error), or the deadline passes
 * (RLK_ERR_BUSY, no error recorded). The first attempt runs once the
 * subscription is confirmed, so no release published after it is missed. */
int rlk_sync_wait(const rlk_sync_waiter *w, long long deadline_ns);

#endif /* RLK_SEMAPHORE_WAIT_H */
