/*
 * rlk - Redis lock kit: the C harness around rlk's Lua scripts.
 *
 * One client object talks to one Redis server. It holds a small pool of
 * hiredis connections, so several threads can share it. Every script rlk
 * ships is embedded in the library (or read from a bundle directory) and is
 * called by name: EVALSHA, and on NOSCRIPT the script is loaded and the call
 * retried once. After a connection error the client reconnects, restores its
 * timeouts and database, and reloads the scripts.
 *
 * Errors: functions return an rlk error code (RLK_OK == 0). The code and a
 * one-line message of the last failed call made *by the calling thread* on a
 * client are kept on that client: rlk_err(c), rlk_errstr(c).
 *
 * Ownership: the caller owns what it creates (rlk_free, rlk_lock_free) and
 * every redisReply handed out (freeReplyObject).
 */
#ifndef RLK_H
#define RLK_H

#include <stddef.h>
#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLK_VERSION_MAJOR 0
#define RLK_VERSION_MINOR 1
#define RLK_VERSION_PATCH 0
#define RLK_VERSION "0.1.0"

/* Error codes. Stable numbers: the CLI maps them to exit codes. */
enum rlk_error {
    RLK_OK = 0,
    RLK_ERR_IO = 1,           /* connection lost or refused (after one reconnect) */
    RLK_ERR_TIMEOUT = 2,      /* connect or command timed out */
    RLK_ERR_URL = 3,          /* malformed URL */
    RLK_ERR_AUTH = 4,         /* AUTH or SELECT refused */
    RLK_ERR_PROTOCOL = 5,     /* a reply of an unexpected shape */
    RLK_ERR_SCRIPT = 6,       /* the script replied an error; errstr is its text */
    RLK_ERR_NOSUCHSCRIPT = 7, /* no script of that name in the client's set */
    RLK_ERR_SHA = 8,          /* the server computed another SHA-1 than the build */
    RLK_ERR_BUNDLE = 9,       /* bundle directory missing, unreadable or inconsistent */
    RLK_ERR_ARG = 10,         /* bad argument to an API call */
    RLK_ERR_NOMEM = 11,       /* out of memory */
    RLK_ERR_SERVER = 12,      /* any other error reply from the server */
    RLK_ERR_NOT_OWNER = 13,   /* unlock of a lock the caller does not hold */
    RLK_ERR_BUSY = 14,        /* the lock stayed held by another until the wait ran out */
    RLK_ERR_LOST = 15         /* the lock was lost (lease ran out or key removed) */
};

/* Returns a static, one-word name for an error code ("RLK_ERR_IO"). */
const char *rlk_strerror(int err);

/* ---------------------------------------------------------------- client */

typedef struct rlk_client rlk_client;

typedef struct rlk_options {
    const char *url;          /* redis://[user:password@]host:port[/db] or unix:///path[?db=N];
                                 NULL: $RLK_URL, then redis://127.0.0.1:6379 */
    int connect_timeout_ms;   /* <= 0: 2000 */
    int command_timeout_ms;   /* <= 0: 5000 */
    const char *bundle_dir;   /* NULL: the embedded scripts */
    int pool_size;            /* <= 0: 4 connections */
    long long watchdog_lease_ms; /* <= 0: 30000 */
    int no_preload;           /* nonzero: do not SCRIPT LOAD on connect (load on NOSCRIPT) */
} rlk_options;

void rlk_options_init(rlk_options *opts);

/* Parses and connects; loads every script (unless no_preload) and checks each
 * SHA-1 the server returns against the build's. Returns NULL only when out of
 * memory; otherwise check rlk_err(c): a client that failed to connect is still
 * returned so the caller can read the message, and must be freed. */
rlk_client *rlk_connect(const rlk_options *opts);
rlk_client *rlk_connect_url(const char *url); /* defaults for everything else */
void rlk_free(rlk_client *c);

int rlk_err(const rlk_client *c);
const char *rlk_errstr(const rlk_client *c);

/* The URL the client was opened with, password masked ("redis://u:***@h:p/0"). */
const char *rlk_client_url(const rlk_client *c);

/* ---------------------------------------------------------------- scripts */

typedef struct rlk_script_info {
    const char *name;    /* "reentrant/acquire" */
    int version;
    int numkeys;         /* -1: variadic */
    const char *sha1;    /* 40 lowercase hex digits */
    const char *body;
    size_t body_len;
} rlk_script_info;

/* The set built into the library. */
size_t rlk_embedded_count(void);
const rlk_script_info *rlk_embedded_at(size_t i);

/* The set a client uses (embedded, or its bundle directory). */
size_t rlk_script_count(const rlk_client *c);
const rlk_script_info *rlk_script_at(const rlk_client *c, size_t i);
const rlk_script_info *rlk_script_find(const rlk_client *c, const char *name);

/* SCRIPT LOAD every script; RLK_ERR_SHA if a returned SHA-1 differs. */
int rlk_load_scripts(rlk_client *c);

/* SCRIPT EXISTS for every script; present[i] (rlk_script_count entries) is
 * set to 1 when the server holds script i. */
int rlk_verify_scripts(rlk_client *c, int *present);

/* Calls a script by name. keylens/arglens may be NULL (strlen is used).
 * RLK_OK: *reply holds the script's reply (caller frees it).
 * RLK_ERR_SCRIPT: the script replied an error; errstr holds its text, *reply is NULL. */
int rlk_evalv(rlk_client *c, const char *name,
              int nkeys, const char *const *keys, const size_t *keylens,
              int nargs, const char *const *args, const size_t *arglens,
              redisReply **reply);
int rlk_eval(rlk_client *c, const char *name,
             int nkeys, const char *const *keys,
             int nargs, const char *const *args,
             redisReply **reply);

/* Any command, argv-style, through the client's pool (reconnects like eval).
 * An error reply is returned as RLK_ERR_SERVER with the text in errstr. */
int rlk_command(rlk_client *c, int argc, const char *const *argv,
                const size_t *argvlen, redisReply **reply);

/* ---------------------------------------------------------------- reentrant lock */

typedef struct rlk_lock rlk_lock;

/* A handle on the reentrant lock `name` (Redisson RLock layout: hash `name`,
 * field "<holder id>" -> reentry count, channel "redisson_lock__channel:{name}").
 * No I/O. The holder id is "<client uuid>:<thread id>" of the calling thread,
 * as Redisson forms it, unless rlk_lock_set_owner fixed one (for code that hands
 * a lock from one thread to another). A handle may be used by several threads. */
rlk_lock *rlk_lock_new(rlk_client *c, const char *name);
void rlk_lock_free(rlk_lock *l);
int rlk_lock_set_owner(rlk_lock *l, const char *owner); /* NULL: per-thread ids again */
const char *rlk_lock_name(const rlk_lock *l);
/* The holder id the calling thread uses for this lock. */
int rlk_lock_owner(const rlk_lock *l, char *buf, size_t len);

/* lease_ms > 0: the lock expires after lease_ms unless unlocked.
 * lease_ms <= 0: watchdog lease: the client's watchdog_lease_ms, renewed every
 *                lease/3 by the client's watchdog until unlock.
 * wait_ms < 0: wait as long as it takes; 0: one attempt; > 0: at most that long.
 * RLK_OK: acquired (or re-entered). RLK_ERR_BUSY: still held by another when
 * the wait ran out. Other codes: errors (errstr says which). */
int rlk_lock_try_lock(rlk_lock *l, long long wait_ms, long long lease_ms);
int rlk_lock_lock(rlk_lock *l, long long lease_ms);
/* RLK_ERR_NOT_OWNER when the caller does not hold it (lost, expired, never taken). */
int rlk_lock_unlock(rlk_lock *l);
int rlk_lock_force_unlock(rlk_lock *l, int *released);
int rlk_lock_is_locked(rlk_lock *l, int *locked);
/* False once the watchdog declared this holder's lock lost. */
int rlk_lock_is_held_by_me(rlk_lock *l, int *held);
int rlk_lock_hold_count(rlk_lock *l, long long *count);
/* PTTL of the lock key: -2 no lock, -1 no expiry. */
int rlk_lock_remaining_ttl(rlk_lock *l, long long *ttl_ms);

/* Why a lock was lost. */
enum rlk_lost_reason {
    RLK_LOST_GONE = 1,    /* a renewal found the lock no longer held by this holder */
    RLK_LOST_EXPIRED = 2  /* renewals failed (errors) until its lease had certainly run out */
};
/* Called from the watchdog thread, once per lost lock; must not block long. */
typedef void (*rlk_lost_fn)(const char *name, const char *owner, int reason, void *userdata);
void rlk_set_lost_callback(rlk_client *c, rlk_lost_fn fn, void *userdata);

/* This client's uuid (the first part of its holder ids), 36 characters. */
const char *rlk_client_uuid(const rlk_client *c);

/* ---------------------------------------------------------------- MultiLock and RedLock */

/* MultiLock: several reentrant locks, each a (client, name) member, possibly
 * on different servers, taken all or none (Redisson's RedissonMultiLock).
 *
 * Members are taken in one global order (server address, db, then name),
 * whatever order they were added in, so two MultiLocks sharing members cannot
 * deadlock. An attempt takes the members one by one, each waiting (pub/sub)
 * at most until the attempt's budget (1500 ms per member by default) or the
 * caller's wait runs out; when one stays busy, every member already taken is
 * released and a new attempt starts, while the wait lasts. A member that
 * fails with an error (not RLK_ERR_BUSY) ends the call with that error, after
 * the same release. Lease-less members (lease_ms <= 0) are renewed by their
 * clients' watchdogs, as rlk_lock_* does. With lease_ms > 0 and a wait, the
 * members are taken with a lease of max(lease, 2 x attempt budget) and set to
 * lease_ms once all are held (so none expires while later ones are awaited).
 *
 * Holder ids are the calling thread's (or the one rlk_multilock_set_owner
 * fixes). A handle is used by one thread at a time; err/errstr describe its
 * last call, and failed_member tells which member ended it. */
typedef struct rlk_multilock rlk_multilock;

rlk_multilock *rlk_multilock_new(void);              /* NULL: out of memory */
void rlk_multilock_free(rlk_multilock *m);          /* does not unlock */
/* Adds the lock `name` on client c (borrowed: it must outlive the handle).
 * RLK_ERR_ARG for an empty name or a member already in the set. */
int rlk_multilock_add(rlk_multilock *m, rlk_client *c, const char *name);
/* The wait budget of one attempt is ms_per_member x members (<= 0: 1500). */
void rlk_multilock_set_attempt_wait(rlk_multilock *m, long long ms_per_member);
/* A fixed holder id for every member (NULL: per-thread ids again). */
int rlk_multilock_set_owner(rlk_multilock *m, const char *owner);

/* wait_ms < 0: as long as it takes; 0: one attempt without waiting; > 0: at
 * most that long. RLK_OK: every member held. RLK_ERR_BUSY: some member stayed
 * held by another until the wait ran out. Other codes: a member's error.
 * After any failure this handle holds no member. */
int rlk_multilock_try_lock(rlk_multilock *m, long long wait_ms, long long lease_ms);
int rlk_multilock_lock(rlk_multilock *m, long long lease_ms);
/* Releases every member (all are tried). RLK_OK, or the first member's
 * error (RLK_ERR_NOT_OWNER when its hold was lost or had expired). */
int rlk_multilock_unlock(rlk_multilock *m);

int rlk_multilock_count(const rlk_multilock *m);
/* Member i, in the order added (0-based); NULL when out of range. */
const char *rlk_multilock_member_name(const rlk_multilock *m, int i);
const char *rlk_multilock_member_url(const rlk_multilock *m, int i);   /* password masked */
rlk_client *rlk_multilock_member_client(const rlk_multilock *m, int i);
rlk_lock *rlk_multilock_member_lock(const rlk_multilock *m, int i);
/* The index of the member taken k-th (0-based) in the global order. */
int rlk_multilock_order_at(const rlk_multilock *m, int k);
/* The member whose failure ended the last call, or -1. */
int rlk_multilock_failed_member(const rlk_multilock *m);
int rlk_multilock_err(const rlk_multilock *m);
const char *rlk_multilock_errstr(const rlk_multilock *m);

/* RedLock over N independent servers, one client each (antirez's algorithm,
 * on the token/acquire, token/extend and token/release scripts: a string key
 * `name` holding a random 128-bit hex token, SET NX PX semantics).
 *
 * One attempt sends the acquire to every server at once (non-blocking I/O
 * multiplexed with poll(): no server waits for another), each bounded by
 * server_timeout_ms. With quorum = N/2 + 1 acquired, validity = lease -
 * elapsed - drift, drift = lease x drift_factor + drift_ms; the attempt
 * counts only with a quorum and a positive validity. Otherwise the token is
 * released on every server (in parallel; on a server that did not answer, the
 * release is pipelined behind the unanswered acquire on the same connection)
 * and, while the wait lasts, a new attempt follows after a random delay of
 * 0..retry_delay_ms (polling: no pub/sub). */
typedef struct rlk_redlock rlk_redlock;

typedef struct rlk_redlock_options {
    long long server_timeout_ms;  /* <= 0: 50; bounds each server's part of an attempt */
    long long retry_delay_ms;     /* <= 0: 200; retry after uniform 0..retry_delay_ms */
    double drift_factor;          /* <= 0: 0.01 */
    long long drift_ms;           /* <= 0: 2 */
} rlk_redlock_options;

void rlk_redlock_options_init(rlk_redlock_options *o);

/* A handle on `name` over n clients (borrowed; distinct; n >= 1; NULL opts:
 * defaults). No I/O. NULL on a bad argument or out of memory. The handle has
 * its own mutex: a thread may extend while another waits for the validity. */
rlk_redlock *rlk_redlock_new(rlk_client *const *clients, int n, const char *name,
                             const rlk_redlock_options *opts);
void rlk_redlock_free(rlk_redlock *rl);                 /* does not unlock */

/* lease_ms in 1..10^12 (there is no watchdog: extend before it runs out).
 * wait_ms as for rlk_lock_try_lock. RLK_OK: held; *validity_ms (may be NULL)
 * is what is left of the lease for sure. RLK_ERR_BUSY: held elsewhere when
 * the wait ran out. RLK_ERR_TIMEOUT: a quorum answered but too late (no
 * validity left). Another code: too many servers failed with it (errstr
 * names them). A handle already holding the lock answers RLK_ERR_ARG. */
int rlk_redlock_try_lock(rlk_redlock *rl, long long wait_ms, long long lease_ms,
                         long long *validity_ms);
int rlk_redlock_lock(rlk_redlock *rl, long long lease_ms, long long *validity_ms);
/* Sets the lease to lease_ms on every server that still holds the token.
 * RLK_OK only when a quorum did so before the current validity ran out and
 * with a positive new validity (*validity_ms). RLK_ERR_LOST: the validity had
 * run out, or the token is gone from a majority; RLK_ERR_NOT_OWNER: not held. */
int rlk_redlock_extend(rlk_redlock *rl, long long lease_ms, long long *validity_ms);
/* Releases on every server (in parallel). RLK_OK: a quorum released it;
 * RLK_ERR_NOT_OWNER: too few servers still held the token (it had expired);
 * else the servers' error. The handle no longer holds the lock either way. */
int rlk_redlock_unlock(rlk_redlock *rl);

/* 1 while acquired and not unlocked (whatever the validity). */
int rlk_redlock_is_held(rlk_redlock *rl);
/* The end of the validity on CLOCK_MONOTONIC, in ms (-1 when not held): the
 * lock is certainly held until then and not after, unless extended. */
long long rlk_redlock_valid_until_ms(rlk_redlock *rl);
/* Validity left now in ms (<= 0: run out; -1 as well when not held). */
long long rlk_redlock_validity_ms(rlk_redlock *rl);
/* The token of the current hold (33 bytes with the NUL), "" when not held. */
int rlk_redlock_token(rlk_redlock *rl, char *buf, size_t len);
int rlk_redlock_server_count(const rlk_redlock *rl);
int rlk_redlock_quorum(const rlk_redlock *rl);
/* Server i's part in the last operation: RLK_OK (acquired / extended /
 * released), RLK_ERR_BUSY (acquire: held by another token), RLK_ERR_NOT_OWNER
 * (extend, release: the token was not there), or its error (RLK_ERR_IO,
 * RLK_ERR_TIMEOUT, ...). *msg (may be NULL) gets a description. */
int rlk_redlock_server_status(rlk_redlock *rl, int i, const char **msg);
int rlk_redlock_err(rlk_redlock *rl);
const char *rlk_redlock_errstr(rlk_redlock *rl);

#ifdef __cplusplus
}
#endif
#endif /* RLK_H */
