/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fam.h - what every kind of kinds/ shares (fam.c): handles, Redisson's key
 * and channel names, holder ids, argument checks, a thread's kept error,
 * calls with integer replies, replica acknowledgement. What the lock kinds
 * share to acquire and release is fam_hold.h.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_FAM_H
#define RLK_FAM_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "rlk.h"
#include "client/error.h"
#include "client/scripts.h"      /* RLK_NUM_MAX: leases, waits, permits, counts <= 10^12 */
#include "runtime/rt.h"

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
/* "prefix{name}" for every name, a tagged one too (the latch's channel, as
 * Redisson's RedissonCountDownLatch.getChannelName builds it; docs/compat.md). */
char *rlk_fam_braced_name(const char *prefix, const char *name);

#define RLK_FAM_KEYS 12             /* key roles of the kinds' scripts (kinds/proto.h), at most */

/* A lock handle's holder id: fixed, or the calling thread's. */
typedef struct rlk_fam_id {
    pthread_mutex_t mu;
    char *fixed;                    /* NULL: "<uuid>:<thread id>" */
    /* 1 when the application gave the id (rlk_*_set_owner): other processes may hold under it
     * too (a nested rlk, a child handed the id), so the server's count of it is not this
     * process's alone and no lost reply is settled from it (runtime/fam_settle.c). */
    atomic_int given;
} rlk_fam_id;

/* What every handle of the family starts with (its first member). */
typedef struct rlk_fam_base {
    rlk_client *c;
    rlk_rt *rt;
    char *name;
    char *channel;                  /* the channel its waiters join */
    const struct rlk_fam_kind *kind; /* once the base is made: rlk_fam_free calls its fini */
    const char *keys_of;            /* the scripts' folder key[] was made for; NULL: none */
    char *key[RLK_FAM_KEYS];        /* the name's keys by role, made with the handle by its kind
                                       (kinds/handle.h rlk_handle_keys), read only after (NULL:
                                       not made); freed with the base */
    rlk_fam_id id;                  /* a lock kind's holder id: made and destroyed with the base */
    struct rlk_lq *q;               /* a lock kind's local queue (runtime/lq.h; NULL: none) and */
    char *wake;                     /* its client's wake channel (NULL: none): both freed with it */
} rlk_fam_base;

/* How rlk_fam_new makes a kind's handle. */
typedef struct rlk_fam_kind {
    const char *fn;                 /* the constructor, for errors: "rlk_lock_new" */
    const char *noun;               /* "<fn>: the <noun> name must not be empty" */
    const char *channel_prefix;
    char *(*channel_of)(const char *prefix, const char *name);  /* one of the names above */
    /* Frees what the handle holds beyond its base (NULL: nothing), on a
     * handle its constructor may have left half made; rlk_fam_free calls it
     * before it frees the base. */
    void (*fini)(void *handle);
} rlk_fam_kind;

/* A zeroed handle of size bytes whose rlk_fam_base (first member) holds c,
 * the client's runtime state, a copy of name and its channel. NULL with the
 * error recorded (no client, empty name, out of memory). */
void *rlk_fam_new(rlk_client *c, const char *name, size_t size, const rlk_fam_kind *k);
/* The end of a kind's constructor: the handle when ok (its own members
 * made), else the handle freed, "<fn> <name>: out of memory" recorded and
 * NULL. */
void *rlk_fam_made(void *handle, int ok);
/* Frees the kind's members (its fini), the base's strings and the handle
 * (NULL: nothing). */
void rlk_fam_free(void *handle);
/* Fixes (owner) or unfixes (NULL) the id; what names the call in errors.
 * rw: also refuse "mode" and ids ending in ":write" (read-write lock fields). */
int rlk_fam_id_set(rlk_client *c, rlk_fam_id *id, const char *owner, int rw, const char *what);
/* Whether the application gave the id (rlk_fam_id.given). */
int rlk_fam_id_given(const rlk_fam_id *id);
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
/* lo <= v <= hi: RLK_OK; else RLK_ERR_ARG with "<what> <name>: <field> <v>
 * is not in lo..hi" (name NULL: "<what>: ...") in buf (len bytes). Pure: the
 * blocking kinds record it (rlk_fam_check_range), the non-blocking requests
 * complete with it (async/a_common.h, rlk_a_common_range). */
int rlk_fam_range_text(char *buf, size_t len, const char *what, const char *name,
                       const char *field, long long v, long long lo, long long hi);
/* lo <= v <= hi, else RLK_ERR_ARG "<what> <name>: <field> <v> is not in lo..hi". */
int rlk_fam_check_range(rlk_client *c, const char *what, const char *name, const char *field,
                        long long v, long long lo, long long hi);

/* The calling thread's last error on a client, kept across calls that record their own (a lost
 * reply's fence and read-back, a give-back, a best-effort cancel): rlk_fam_err_keep, then
 * rlk_fam_err_put records it again, with "; outcome unknown (<the error since>)" after its
 * message when rc is not RLK_OK (the fence or the read that failed); returns its code. */
typedef struct rlk_fam_err {
    int err;
    char msg[RLK_ERRSTR_MAX];
} rlk_fam_err;

void rlk_fam_err_keep(rlk_client *c, rlk_fam_err *e);
int rlk_fam_err_put(rlk_client *c, const rlk_fam_err *e, int rc);

/* A command whose reply is an integer (nil: nil_value; a decimal string is
 * parsed). what names the object in errors. */
int rlk_fam_query(rlk_client *c, const char *what, int argc, const char **argv,
                  long long nil_value, long long *out);

/* Replica acknowledgement (rlk_options.min_replicas; client/conn.h): the
 * calling thread's last script call, just made, was an acquisition. When
 * fewer than min_replicas replicas acknowledged it (or it is unknown),
 * undo(arg) runs the kind's matching release for the same holder (no WAIT
 * behind it; a reentrant count goes back by one), and RLK_ERR_NOREPLICAS is
 * recorded as "<what> <name>: only k of N replica(s) acknowledged within T
 * ms (WAIT); rolled back" (or why the rollback failed) and returned.
 * RLK_OK otherwise. undo returns RLK_OK when it gave the hold back. */
int rlk_fam_acks_acquired(rlk_client *c, const char *what, const char *name,
                          int (*undo)(void *arg), void *arg);
/* The same for a call that is not undone (a release, a count): when short,
 * RLK_ERR_NOREPLICAS recorded as "<what> <name>: <done>, but only k of N
 * ..." (done: "released"); RLK_OK otherwise. */
int rlk_fam_acks_done(rlk_client *c, const char *what, const char *name, const char *done);

#endif /* RLK_FAM_H */
