/*
 * lock_internal.h - the lock runtime's parts: per-client runtime state
 * (holder ids, counters, the lost-lock callback), the pub/sub subscriber
 * (pubsub.c), the hold registry and its watchdog (watchdog.c), the
 * process-wide local wait queues (lock_queue.c), what every kind built on
 * them shares (lock_family.c: handles, names, holder ids, arguments and
 * replies; lock_hold.c: acquire replies, releases, queries of a lock hash)
 * and the one wait loop (lock_wait.c). lock.c builds the public rlk_lock_*
 * API on them; fenced.c, fairlock.c, rwlock.c, semaphore.c, psemaphore.c
 * and latch.c the other kinds. docs/runtime.md explains the design.
 *
 * Not installed; not a stable API. The runtime tests include it for
 * rlk_runtime_stats_get().
 *
 * Times are CLOCK_MONOTONIC nanoseconds (rlk_rt_now_ns); a deadline or
 * "until" of -1 means "no deadline".
 */
#ifndef RLK_LOCK_INTERNAL_H
#define RLK_LOCK_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "rlk_internal.h"

#define RLK_OWNER_MAX 1024          /* longest holder id the scripts accept */
#define RLK_UUID_LEN 36

/* ---------------------------------------------------------------- counters */

/* A snapshot of one client's runtime counters (since rlk_connect). */
typedef struct rlk_runtime_stats {
    unsigned long long acquire_calls;   /* reentrant/acquire round trips */
    unsigned long long acquired;        /* of which acquired or re-entered */
    unsigned long long waits;           /* sleeps on a channel's wake permit */
    unsigned long long wake_permits;    /* ... ended by a message 0 (a permit) */
    unsigned long long wake_all;        /* ... ended by a message 1 or a reconnect */
    unsigned long long ttl_wakeups;     /* ... ran out on the holder's TTL (no message came) */
    unsigned long long sub_connects;    /* subscriber connections opened */
    unsigned long long sub_drops;       /* subscriber connections lost */
    unsigned long long subscribes;      /* SUBSCRIBE commands sent */
    unsigned long long unsubscribes;    /* UNSUBSCRIBE commands sent */
    unsigned long long renew_calls;     /* watchdog renewal round trips */
    unsigned long long renew_errors;    /* ... that failed */
    unsigned long long locks_lost;      /* lost-lock declarations */
    unsigned long long lost_replies;    /* lock calls whose reply was lost, then settled */
    unsigned long long lost_adopted;    /* ... acquires that had run: the hold was kept */
    unsigned long long lost_not_run;    /* ... acquires that had not taken the lock */
} rlk_runtime_stats;

typedef struct rlk_rt_counters {
    atomic_ullong acquire_calls, acquired;
    atomic_ullong waits, wake_permits, wake_all, ttl_wakeups;
    atomic_ullong sub_connects, sub_drops, subscribes, unsubscribes;
    atomic_ullong renew_calls, renew_errors, locks_lost;
    atomic_ullong lost_replies, lost_adopted, lost_not_run;
} rlk_rt_counters;

#define RLK_RT_COUNT(rt, field) atomic_fetch_add_explicit(&(rt)->counters.field, 1, \
                                                          memory_order_relaxed)

/* ---------------------------------------------------------------- runtime state */

typedef struct rlk_sub rlk_sub;
typedef struct rlk_wd rlk_wd;

typedef struct rlk_rt {
    rlk_client *c;
    char uuid[RLK_UUID_LEN + 1];
    rlk_sub *sub;                   /* created with the state; its thread starts lazily */
    rlk_wd *wd;                     /* likewise */
    pthread_mutex_t cb_mu;          /* guards the callback pairs */
    rlk_lost_fn lost_fn;
    void *lost_ud;
    rlk_lost_kind_fn lost_kind_fn;  /* set by rlk_set_lost_kind_callback (watchdog.c) */
    void *lost_kind_ud;
    rlk_rt_counters counters;
} rlk_rt;

/* The client's runtime state, created on first use (no I/O); installs
 * c->runtime_free. NULL only when out of memory (error recorded on c). */
rlk_rt *rlk_rt_get(rlk_client *c);

/* A snapshot of the counters. RLK_ERR_NOMEM if the state cannot be made. */
int rlk_runtime_stats_get(rlk_client *c, rlk_runtime_stats *out);

/* "<uuid>:<thread id>" of the calling thread into buf (RLK_ERR_ARG if short). */
int rlk_rt_thread_owner(const rlk_rt *rt, char *buf, size_t len);

/* Fills uuid with a random (v4) UUID, 36 characters and a NUL. 0 or -1. */
int rlk_uuid_v4(char uuid[RLK_UUID_LEN + 1]);

/* len bytes from the kernel's random source (getrandom, else /dev/urandom):
 * client uuids, permit ids. 0, or -1 when neither can give them. */
int rlk_random_bytes(unsigned char *buf, size_t len);

/* pthread_create with every signal blocked in the new thread. 0 or an errno. */
int rlk_rt_thread_start(pthread_t *t, void *(*fn)(void *), void *arg);

/* Calls the lost callback, if any (from the watchdog thread). */
void rlk_rt_report_lost(rlk_rt *rt, const char *name, const char *owner, int reason);

/* ---------------------------------------------------------------- time */

long long rlk_rt_now_ns(void);
/* now + ms (ms < 0: -1, no deadline). */
long long rlk_rt_deadline_after_ms(long long ms);
/* The earlier of two "until" times, -1 meaning never. */
long long rlk_rt_until_min(long long a, long long b);
/* A condition variable on CLOCK_MONOTONIC. */
int rlk_rt_cond_init(pthread_cond_t *cv);
/* Waits on cv until signalled or until_ns (-1: no limit). Returns 1 when
 * until_ns has passed, 0 otherwise (which may be spurious). */
int rlk_rt_cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, long long until_ns);

/* ---------------------------------------------------------------- subscriber (pubsub.c) */

/* One subscriber connection + thread per client. Waiters join a channel
 * (reference counted: SUBSCRIBE on the first, UNSUBSCRIBE when the last
 * leaves), wait until the subscription is confirmed, take a mark, try their
 * acquire, and sleep on the channel's wake permit. */
typedef struct rlk_sub_chan rlk_sub_chan;

enum rlk_sub_result {
    RLK_SUB_READY = 0,      /* subscribed on the live connection */
    RLK_SUB_DOWN = 1,       /* the subscriber cannot connect right now: poll */
    RLK_SUB_TIMEOUT = 2,    /* until passed */
    RLK_SUB_WOKEN = 3       /* a permit (message 0) or a wake-all (message 1, reconnect) */
};

rlk_sub *rlk_sub_new(rlk_client *c, rlk_rt *rt);
void rlk_sub_free(rlk_sub *s);
/* Registers interest in channel (starts the thread on first use). */
int rlk_sub_join(rlk_sub *s, const char *channel, rlk_sub_chan **out);
void rlk_sub_leave(rlk_sub *s, rlk_sub_chan *ch);
/* Waits until ch is subscribed (READY), the subscriber is down (DOWN) or
 * until passes (TIMEOUT). On READY and DOWN, *mark is set and the permits
 * received so far are dropped: the acquire attempt that follows sees every
 * release they announced. */
int rlk_sub_ready(rlk_sub *s, rlk_sub_chan *ch, long long until_ns, unsigned long long *mark);
/* Sleeps until a permit (consumed), a wake-all since mark, or until:
 * RLK_SUB_WOKEN or RLK_SUB_TIMEOUT. */
int rlk_sub_wait(rlk_sub *s, rlk_sub_chan *ch, unsigned long long mark, long long until_ns);
/* Adds a permit to a confirmed channel, as a message 0 would: the local
 * shortcut of a release made by this process (the message still comes). */
void rlk_sub_poke(rlk_sub *s, rlk_sub_chan *ch);

/* ---------------------------------------------------------------- holds + watchdog (watchdog.c) */

/* Every lock a client holds through the lock API is an entry (kind, name,
 * owner) with a reentry count; lease-less ones are renewed by the watchdog
 * thread with their kind's renew script:
 *   RLK_KIND_LOCK    reentrant/renew_many, many locks per call (KEYS: name)
 *   RLK_KIND_READ    rwlock/renew_readers, every owner of one lock per call
 *                    (KEYS: name, timeout-key prefix)
 *   RLK_KIND_WRITE   rwlock/renew_writer (KEYS: name)
 *   RLK_KIND_FAIR    fair/renew (KEYS: name, queue, timeouts)
 *   RLK_KIND_FENCED  fenced/renew (KEYS: name, token key)
 * The functions without a kind are the reentrant lock's (RLK_KIND_LOCK). */
typedef struct rlk_hold rlk_hold;

#define RLK_HOLD_KEYS_MAX 3

/* What identifies a hold and how to renew it. */
typedef struct rlk_hold_spec {
    int kind;                       /* enum rlk_lock_kind */
    const char *name;               /* the lock hash */
    const char *owner;
    int nkeys;                      /* the renew script's KEYS, keys[0] = name */
    const char *keys[RLK_HOLD_KEYS_MAX];
} rlk_hold_spec;

/* What rlk_wd_release_begin did, for rlk_wd_release_end. */
typedef struct rlk_wd_ticket {
    rlk_hold *removed;              /* taken out of the registry before the release */
    unsigned long long decremented; /* id of an entry whose count was decremented, or 0 */
} rlk_wd_ticket;

enum rlk_release_outcome {
    RLK_REL_RELEASED = 1,   /* release replied 1: the key is gone (or the write left) */
    RLK_REL_STILL_HELD = 0, /* replied 0: still held */
    RLK_REL_NOT_OWNER = -1, /* replied nil */
    RLK_REL_ERROR = -2      /* no reply: unknown */
};

rlk_wd *rlk_wd_new(rlk_client *c, rlk_rt *rt);
void rlk_wd_free(rlk_wd *wd);
/* Records an acquisition (or re-entry) whose acquire was sent at sent_ns.
 * watchdog: lease-less (renewed until the last unlock). token: the fenced
 * lock's token of this acquisition (0 for other kinds). */
int rlk_wd_acquired_as(rlk_wd *wd, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                       long long sent_ns, long long token);
int rlk_wd_acquired(rlk_wd *wd, const char *name, const char *owner, long long lease_ms,
                    int watchdog, long long sent_ns);
/* 1 when (kind, name, owner) is recorded as held by this client. */
int rlk_wd_holds_as(rlk_wd *wd, int kind, const char *name, const char *owner);
int rlk_wd_holds(rlk_wd *wd, const char *name, const char *owner);
/* The count of (kind, name, owner) in the registry: 0 when not held. */
long long rlk_wd_count_as(rlk_wd *wd, int kind, const char *name, const char *owner);
/* 1 and *token when held: the token recorded by the latest acquisition. */
int rlk_wd_token_of(rlk_wd *wd, int kind, const char *name, const char *owner, long long *token);
/* Drops the entry of (name, owner) without reporting it lost. */
void rlk_wd_forget_as(rlk_wd *wd, int kind, const char *name, const char *owner);
void rlk_wd_forget(rlk_wd *wd, const char *name, const char *owner);
/* Drops every entry of name, of every kind (force unlock deletes the hash). */
void rlk_wd_forget_name(rlk_wd *wd, const char *name);
/* Before a release: takes the entry out when this is its last hold (waiting
 * for a renewal of it on the wire), else decrements it. Returns the lease
 * to restore if the owner still holds the lock afterwards. */
long long rlk_wd_release_begin_as(rlk_wd *wd, int kind, const char *name, const char *owner,
                                  rlk_wd_ticket *t);
long long rlk_wd_release_begin(rlk_wd *wd, const char *name, const char *owner,
                               rlk_wd_ticket *t);
void rlk_wd_release_end(rlk_wd *wd, rlk_wd_ticket *t, int outcome);
/* 1 when the watchdog declared (kind, name, owner) lost since it was last acquired. */
int rlk_wd_is_lost_as(rlk_wd *wd, int kind, const char *name, const char *owner);
int rlk_wd_is_lost(rlk_wd *wd, const char *name, const char *owner);

/* ---------------------------------------------------------------- local queues (lock_queue.c) */

/* A process-wide FIFO of the threads waiting for one lock (server address,
 * db, lock name), across every client of the process. Only its head talks
 * to Redis; the others sleep until they become head. */
typedef struct rlk_lq rlk_lq;

typedef struct rlk_lq_node {
    struct rlk_lq_node *next;
    pthread_cond_t cv;
    int is_head;
    rlk_sub *sub;           /* the head's subscription, for rlk_lq_poke (NULL: none yet) */
    rlk_sub_chan *ch;
} rlk_lq_node;

rlk_lq *rlk_lq_get(const char *addr, int db, const char *name);
void rlk_lq_put(rlk_lq *q);
/* 1 when some thread is queued. */
int rlk_lq_busy(rlk_lq *q);
/* Joins at the tail and sleeps until head: RLK_OK, or RLK_ERR_BUSY when
 * until passed first (the node has then left the queue). */
int rlk_lq_enter(rlk_lq *q, rlk_lq_node *n, long long until_ns);
/* The head leaves; the next node becomes head and is woken. */
void rlk_lq_leave(rlk_lq *q, rlk_lq_node *n);
/* The head n subscribed (sub, ch): from now until it leaves, a release by
 * this process pokes that channel (rlk_lq_poke). */
void rlk_lq_set_sub(rlk_lq *q, rlk_lq_node *n, rlk_sub *sub, rlk_sub_chan *ch);
/* After a release that deleted the lock: wakes the head at once instead of
 * after the unlock message's trip through its subscriber thread. */
void rlk_lq_poke(rlk_lq *q);

/* ---------------------------------------------------------------- the family (lock_family.c) */

/* What the kinds built on the runtime share: the reentrant lock (lock.c),
 * the fenced, fair and read-write locks (fenced.c, fairlock.c, rwlock.c),
 * the semaphores and the count-down latch (semaphore.c, psemaphore.c,
 * latch.c). */

#define RLK_NUM_MAX 1000000000000LL     /* leases, waits, permits, counts: at most 10^12 */

/* Redisson's key and channel names; malloc'd, NULL when out of memory.
 * prefixName(prefix, name): "prefix:{name}", or "prefix:name" when name
 * already has a '{' (it keeps its own hash tag). */
char *rlk_fam_prefix_name(const char *prefix, const char *name);
/* suffixName(name, suffix): "{name}:suffix", or "name:suffix" when name
 * already has a '{'. */
char *rlk_fam_suffix_name(const char *name, const char *suffix);
/* The hash tag of a lock's companion keys: "{name}", or name itself when
 * it has a '{' (suffixName's base). */
char *rlk_fam_tag(const char *name);
/* "prefix{name}": braces always added (the latch's channel). */
char *rlk_fam_braced_name(const char *prefix, const char *name);

/* What every handle of the family starts with (its first member). */
typedef struct rlk_fam_base {
    rlk_client *c;
    rlk_rt *rt;
    char *name;
    char *channel;                  /* the channel its waiters join */
} rlk_fam_base;

/* How rlk_fam_new makes a kind's handle. */
typedef struct rlk_fam_kind {
    const char *fn;                 /* the constructor, for errors: "rlk_lock_new" */
    const char *noun;               /* "<fn>: the <noun> name must not be empty" */
    const char *channel_prefix;
    char *(*channel_of)(const char *prefix, const char *name);  /* one of the names above */
} rlk_fam_kind;

/* A zeroed handle of size bytes whose rlk_fam_base (first member) holds c,
 * the client's runtime state, a copy of name and its channel. NULL with the
 * error recorded (no client, empty name, out of memory). */
void *rlk_fam_new(rlk_client *c, const char *name, size_t size, const rlk_fam_kind *k);
/* Records "<fn> <name>: out of memory" (a kind's own allocation failed
 * after rlk_fam_new; free the handle first) and returns NULL. */
void *rlk_fam_nomem(rlk_client *c, const rlk_fam_kind *k, const char *name);
/* Frees the base's strings and the handle (NULL: nothing). */
void rlk_fam_free(void *handle);
/* keys[0..1] = (name, channel), the KEYS of the scripts that publish on
 * the lock's or the object's own channel. Returns 2. */
int rlk_fam_keys(const rlk_fam_base *b, const char **keys);

/* A lock handle's holder id: fixed, or the calling thread's. */
typedef struct rlk_fam_id {
    pthread_mutex_t mu;
    char *fixed;                    /* NULL: "<uuid>:<thread id>" */
} rlk_fam_id;

void rlk_fam_id_init(rlk_fam_id *id);
void rlk_fam_id_destroy(rlk_fam_id *id);
/* Fixes (owner) or unfixes (NULL) the id; what names the call in errors.
 * rw: also refuse "mode" and ids ending in ":write" (read-write lock fields). */
int rlk_fam_id_set(rlk_client *c, rlk_fam_id *id, const char *owner, int rw, const char *what);
/* The id into buf; errors recorded as "<what>: ...". */
int rlk_fam_id_get(rlk_client *c, const rlk_rt *rt, rlk_fam_id *id, char *buf, size_t len,
                   const char *what);
/* The id into buf, nothing recorded: RLK_OK, or RLK_ERR_ARG (buf too short). */
int rlk_fam_id_copy(const rlk_rt *rt, rlk_fam_id *id, char *buf, size_t len);

/* lease_ms of an API call: > 0 as given (RLK_ERR_ARG "<what> <name>: lease
 * ... is above ..." above 10^12), <= 0 the client's watchdog lease with
 * *watchdog = 1. */
int rlk_fam_lease(rlk_client *c, const char *what, const char *name, long long lease_ms,
                  long long *lease, int *watchdog);
/* lo <= v <= hi, else RLK_ERR_ARG "<what> <name>: <field> <v> is not in lo..hi". */
int rlk_fam_check_range(rlk_client *c, const char *what, const char *name, const char *field,
                        long long v, long long lo, long long hi);

/* A command whose reply is an integer (nil: nil_value; a decimal string is
 * parsed). what names the object in errors. */
int rlk_fam_query(rlk_client *c, const char *what, int argc, const char **argv,
                  long long nil_value, long long *out);
/* Runs script and reads its integer reply into *out (RLK_ERR_PROTOCOL for
 * another shape). arglens may be NULL. */
int rlk_fam_eval_int(rlk_client *c, const char *script, int nkeys, const char *const *keys,
                     int nargs, const char *const *args, const size_t *arglens, long long *out);

/* A counting call (semaphores, latch): lo <= v <= 10^12 (else RLK_ERR_ARG
 * "<what> <name>: <field> ..."), then script on keys with v as its one
 * argument; its integer reply in *out. */
int rlk_fam_count(const rlk_fam_base *b, const char *what, const char *field, long long v,
                  long long lo, const char *script, int nkeys, const char *const *keys,
                  long long *out);

/* try_set_permits and add_permits of both semaphores, on their own script
 * and keys: *set (may be NULL) = reply 1; *count (may be NULL) = the count. */
int rlk_fam_try_set_permits(const rlk_fam_base *b, const char *script, int nkeys,
                            const char *const *keys, long long permits, int *set);
int rlk_fam_add_permits(const rlk_fam_base *b, const char *script, int nkeys,
                        const char *const *keys, long long delta, long long *count);

/* ---------------------------------------------------------------- lock holds (lock_hold.c) */

/* The parts of acquiring and releasing that the reentrant, fenced, fair
 * and read-write locks share. */

/* An acquire script's reply. RLK_OK: acquired (nil; with token != NULL the
 * reply {token} instead, *token set). RLK_ERR_BUSY (nothing recorded): an
 * integer, the wait it tells, in *ttl. Else RLK_ERR_PROTOCOL, recorded as
 * "<what> <name>: <script> replied type <t>". */
int rlk_fam_acquire_reply(rlk_client *c, const char *what, const char *name, const char *script,
                          const redisReply *r, long long *ttl, long long *token);

/* Gives back (best effort) an acquisition the registry could not record. */
typedef void (*rlk_fam_undo_fn)(void *arg);

/* Records an acquisition (acquire sent at sent_ns) in the client's registry
 * and counts it; when the registry cannot take it, calls undo(arg) and
 * returns the registry's error. */
int rlk_fam_record(rlk_rt *rt, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                   long long sent_ns, long long token, rlk_fam_undo_fn undo, void *arg);

/* Runs a release script with ARGV (owner, lease) (nargs 2) or (owner)
 * (nargs 1): returns its enum rlk_release_outcome; *rc is RLK_OK or the
 * call's error (RLK_ERR_PROTOCOL recorded as "unlock <name>: <label> replied
 * type <t>" for a reply other than nil / 0 / 1). */
int rlk_fam_release_call(rlk_client *c, const char *script, const char *label, const char *name,
                         int nkeys, const char *const *keys, int nargs, const char *owner,
                         long long lease, int *rc);

/* Sends the kind's release for (owner, lease): rlk_fam_release_call's contract. */
typedef int (*rlk_fam_release_fn)(void *arg, const char *owner, long long lease, int *rc);

/* An unlock of b's lock by the holder id id (owner_fn names it in errors)
 * as kind: out of the registry before the release is sent
 * (rlk_wd_release_begin_as), the release, the registry's end; a release
 * that deleted the lock pokes the local queue q (may be NULL). Returns
 * RLK_OK, the id's or the release's error, or RLK_ERR_NOT_OWNER recorded as
 * "unlock [<what> ]<name>: not held by <owner>" (what may be ""). */
int rlk_fam_unlock(const rlk_fam_base *b, int kind, const char *what, rlk_fam_id *id,
                   const char *owner_fn, rlk_lq *q, rlk_fam_release_fn release, void *arg);

/* A force unlock: forgets every hold of b->name in the registry, then runs
 * script (which deletes the lock whoever holds it); *released (may be NULL)
 * tells whether it did, and then q (may be NULL) is poked. */
int rlk_fam_force_unlock(const rlk_fam_base *b, const char *script, int nkeys,
                         const char *const *keys, int nargs, const char *const *args, rlk_lq *q,
                         int *released);

/* Queries of a lock hash whose fields are holder ids (reentrant, fenced,
 * fair): EXISTS; the registry's lost mark, then HEXISTS of the handle's
 * holder id (id, owner_fn as for rlk_fam_unlock); HGET of it; PTTL (-2
 * when there is no key). */
int rlk_fam_is_locked(const rlk_fam_base *b, int *locked);
int rlk_fam_is_held(const rlk_fam_base *b, int kind, rlk_fam_id *id, const char *owner_fn,
                    int *held);
int rlk_fam_hold_count(const rlk_fam_base *b, rlk_fam_id *id, const char *owner_fn,
                       long long *count);
int rlk_fam_remaining_ttl(const rlk_fam_base *b, long long *ttl_ms);

/* ---------------------------------------------------------------- lost replies (lock_settle.c) */

/* A lock call whose request was written and whose reply was lost may have
 * run. Before anything is reported, the connection it went out on is
 * fenced (rlk_pool_fence: it has run or never will) and the holder's own
 * count is read back; docs/runtime.md "Lost replies". */

/* After a call on b->c failed: 0 when its reply was not lost (the error
 * stands). Else 1 and *settled: RLK_OK once the lost request has run or
 * never will (rlk_pool_fence), or the error that left it unknown (recorded
 * on c after the original message). The caller then reads what tells. */
int rlk_fam_lost_fence(const rlk_fam_base *b, int *settled);
/* After a call on b->c failed: 0 when its reply was not lost (the error
 * stands). Else 1 and *settled: RLK_OK with *count = HGET b->name field
 * once the lost request has run or never will, or the error that left it
 * unknown (recorded on c with the original message). */
int rlk_fam_lost_settle(const rlk_fam_base *b, const char *field, long long *count, int *settled);

/* An acquire attempt of hold h that failed with rc: when its reply was
 * lost and it turns out to have run (the server counts more holds of the
 * owner than the registry), the hold is adopted: recorded as
 * rlk_fam_record does (with the fenced token read from token_key into
 * *token when token_key is not NULL), RLK_OK. Otherwise rc, its message
 * saying what was settled. */
int rlk_fam_acquire_lost(const rlk_fam_base *b, int rc, const rlk_hold_spec *h,
                         long long lease_ms, int watchdog, long long sent_ns,
                         const char *token_key, long long *token, rlk_fam_undo_fn undo, void *arg);

/* Called by rlk_fam_record for an acquisition of h about to be recorded:
 * when this thread holds an unsettled lost acquire of the same (kind, name,
 * owner), fences it now and reads the count: how many holds the server
 * counts beyond the registry's and this acquisition (lost acquires that
 * ran: to record too; at most 8), else 0. */
int rlk_fam_doubt_settle(rlk_rt *rt, const rlk_hold_spec *h);

/* 1 (and forgets it) when this thread holds an unsettled lost acquire of
 * (kind, name, owner): a last unlock that finds the lock still held then
 * releases that hold too (the caller was told its outcome was unknown). */
int rlk_fam_doubt_take(const rlk_client *c, int kind, const char *name, const char *owner);

/* A release of (kind, owner) that failed, the registry counting before
 * holds before it: when its reply was lost, settles it. Sets *outcome and
 * *rc = RLK_OK when the count shows it ran (or the lock is gone). Returns 1
 * when it is known not to have run (the release may be sent again), else 0.
 * An outcome left unknown is kept as this thread's doubt, as an acquire's. */
int rlk_fam_release_lost(const rlk_fam_base *b, int kind, const char *owner, long long before,
                         int *outcome, int *rc);

/* ---------------------------------------------------------------- waiting (lock_wait.c) */

/* One attempt of a waiter. RLK_OK: done. RLK_ERR_BUSY (no error recorded):
 * not yet; *bound_ms is how long at most before it may succeed without any
 * message (the holder's TTL, a permit's expiry; 0 counts as 1), -1 when only
 * a message can change the outcome. Another code: an error, recorded. */
typedef int (*rlk_wait_attempt_fn)(void *arg, long long *bound_ms);

/* How a kind waits (rlk_wait_init / _lock fill it). The fields after arg
 * are the differences between the kinds; each kind sets them where it
 * waits and says why. */
typedef struct rlk_waiter {
    rlk_rt *rt;
    const char *channel;
    rlk_wait_attempt_fn attempt;
    void *arg;
    rlk_lq *q;          /* the process-wide local FIFO of the lock: only its head subscribes
                           and attempts. NULL: every waiter does */
    const char *what;   /* with name: the waiter in errors ("fenced lock", name); needed with q */
    const char *name;
    int ride_out;       /* a connection error of an attempt while the subscriber is down too
                           is an outage: keep polling up to the connect timeout (only for
                           attempts that are safe to repeat after a lost reply) */
    int count_ttl;      /* a sleep that ran out on the attempt's bound counts as ttl_wakeups
                           (the bound is a lock holder's TTL) */
    int pass_on;        /* on leaving with success or an error, add a permit to the channel
                           for the next local waiter */
} rlk_waiter;

/* A waiter on b's channel with every difference off (as a semaphore
 * waits); what names it in errors. */
void rlk_wait_init(rlk_waiter *w, const rlk_fam_base *b, const char *what,
                   rlk_wait_attempt_fn attempt, void *arg);
/* The same as a lock waits (reentrant, fenced, fair, read-write): the
 * attempt's bound is the holder's TTL (count_ttl), and outages are ridden
 * out (ride_out: an acquire repeated after a lost reply is at worst a
 * re-entry, which the release reconciles; docs/runtime.md). */
void rlk_wait_init_lock(rlk_waiter *w, const rlk_fam_base *b, const char *what,
                        rlk_wait_attempt_fn attempt, void *arg);

/* The deadline of a wait of wait_ms from start_ns: -1 (none) when wait_ms
 * < 0; wait_ms capped at 10^12. */
long long rlk_wait_deadline(long long start_ns, long long wait_ms);

/* Waits (behind the local queue when w->q): joins w->channel on the
 * client's subscriber and, once the subscription is confirmed (so that no
 * release published after the attempt is missed), attempts; sleeps until a
 * message on the channel, a subscriber reconnect, the attempt's bound, the
 * 100 ms poll while the subscriber is down, or the deadline; again. RLK_OK,
 * the attempt's error, or RLK_ERR_BUSY (the deadline passed; no error
 * recorded). */
int rlk_wait(const rlk_waiter *w, long long deadline_ns);

/* An acquire of wait_ms from start_ns: with first, one attempt straight
 * away (wait_ms == 0: that is all; without first, wait_ms must not be 0),
 * then rlk_wait. Returns as rlk_wait. */
int rlk_wait_acquire(const rlk_waiter *w, long long start_ns, long long wait_ms, int first);

#endif /* RLK_LOCK_INTERNAL_H */
