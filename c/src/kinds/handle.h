/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * handle.h - what the kinds' handles share (handle.c). A kind's handle
 * (struct rlk_<kind>) starts with its rlk_fam_base `b` (runtime/fam.h),
 * whose holder id (b.id), local queue (b.q) and wake channel (b.wake) the
 * lock kinds use; the logic
 * lives in runtime/fam.c and runtime/fam_hold.c. Each kind writes out its
 * own public functions in its .c file: the argument check and a forward to
 * those, or to the helpers below.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_HANDLE_H
#define RLK_KINDS_HANDLE_H

#include "rlk.h"
#include "kinds/acq.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "kinds/sem_queue.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"
#include "engine/metrics.h"

/* ---------------------------------------------------------------- holder ids */

/* The holder id b->id of the handle whose base is b into buf (rlk_fam_id_get:
 * errors recorded as "<what>: ..."); b is const for the caller, the id's mutex
 * only is taken. */
int rlk_handle_owner(const rlk_fam_base *b, char *buf, size_t len, const char *what);

/* ---------------------------------------------------------------- making */

/* A kind's handle (rlk_fam_new) with its keys of roles by names (rlk_handle_keys), the
 * local queue of its name or of its channel (how: RLK_HANDLE_QUEUE_*; neither: none) in b.q
 * (runtime/lq.h rlk_lq_get), and with RLK_HANDLE_WAKE this client's wake channel of its
 * channel in b.wake (kinds/names.h rlk_names_wake_channel: where a release grants the lock to
 * this client's tickets); NULL with the error recorded. */
enum { RLK_HANDLE_QUEUE_NAME = 1, RLK_HANDLE_QUEUE_CHANNEL = 2, RLK_HANDLE_WAKE = 4 };
void *rlk_handle_new(rlk_client *c, const char *name, size_t size, const rlk_fam_kind *k,
                     int how, const char *names, const char *roles);

/* The keys of roles (space-separated, as the scripts' headers name them) of b's name by the
 * names kind names (a scripts' folder), made once into b->key (by kinds/proto.h's
 * RLK_PROTO_KEY_*) and read only after: the calls of rlk_handle_eval* on that folder's
 * scripts take them from there, not built per call. 1 when made (0: out of memory). */
int rlk_handle_keys(rlk_fam_base *b, const char *names, const char *roles);

/* ---------------------------------------------------------------- acquiring */

/* The datum (note_data) of a hold taken with a row's held_grants row: no lock-delay; its
 * release may hand the lock over held (kinds/lock.c). */
#define RLK_LOCK_DATA_WAITED (-1)

/* One acquisition call of a lock kind: the head every kind fills
 * (rlk_handle_acq_start), then, for the one blocking driver of the rows
 * (rlk_handle_drive), the kind's row and what differs, and the driver's
 * state between attempts. */
typedef struct rlk_handle_acq {
    void *handle;                   /* the kind's handle */
    rlk_fam_release_fn release;     /* its release call (handle, owner, lease): the undo; NULL:
                                       the row's release (rlk_handle_unlock's) */
    long long lease_ms;
    int watchdog;
    const rlk_fam_base *b;
    long long start_ns;             /* the call's start (CLOCK_MONOTONIC) */
    const rlk_proto *row;           /* the acquire (script, ARGV, optional KEYS), the wait mode,
                                       the kind in messages (what) and its busy message
                                       (kinds/acq.h rlk_acq_busy); the kind may replace it */
    /* Set by the kind for rlk_handle_drive (q: b's by default). */
    rlk_proto_call acquire;         /* script NULL: the row's acquire; else this one
                                       (fenced/reenter) */
    rlk_proto_argvals v;            /* the acquire's ARGV beyond lease, owner and ticket */
    rlk_lq *q;                      /* the process-wide local queue (NULL: none) */
    long long spin_initial_ms;      /* spin_max_ms > 0: waits by back-off (runtime/spin.h), */
    long long spin_max_ms;          /* never subscribing, whatever the row's wait mode */
    long long ttl_cap;              /* > 0: a busy attempt's bound at most this (the fair lock:
                                       a third of its keep-alive) */
    int quiet;                      /* not counted in acquire_calls (the election's campaign) */
    int note_data;                  /* an acquisition notes v.delay_ms as the hold's datum (the
                                       reentrant lock's lock-delay; RLK_LOCK_DATA_WAITED) */
    const char *const *tail;        /* RLK_PROTO_VALUES: the values after the acquire's ARGV */
    size_t ntail;
    /* A lost reply's settle (the acquire sent at sent_ns failed with rc): the machine's
     * (rlk_handle_acq_start's), or the faster MultiLock's own. */
    int (*settle)(struct rlk_handle_acq *a, int rc, long long sent_ns, rlk_acq_act *x);
    /* The driver's. */
    rlk_hold_spec h;                /* the hold recorded: the row's kind, renew task and keys */
    rlk_acq m;                      /* the machine (kinds/acq.h): m.token a token row's */
    const rlk_proto *undo;          /* non-NULL: the undo gives back a hold of this row (a
                                       doubted read) */
    int reentry;                    /* the registry records a hold of the owner: never queued */
    rlk_sub_ticket ticket;          /* ticket.ticket 0: a single try, never queued (the machine
                                       says when an attempt may have queued it: m.queued) */
    int wide;                       /* the last attempt said: first in the queue (or -3): listen
                                       on the lock's channel too */
    int reserved;                   /* the last attempt said: reserved for a writer ({grant PTTL,
                                       0}): its bound is the claim window, not a holder's TTL */
    rlk_lock_timeline tl;           /* the last attempt's timeline */
    long long sent_ns;              /* when the last attempt was sent: a held grant's lease
                                       counts from it */
    char held[RLK_NAMES_HELD_ARG_LEN];  /* v.held once it takes held grants: held:<ticket.wait> */
    char owner[RLK_OWNER_MAX + 1];  /* last: rlk_handle_acq_start zeroes what comes before */
} rlk_handle_acq;

/* a zeroed (its owner empty), its start now, its row, then the call's lease (rlk_fam_lease:
 * "<row's what> <name>: ..." in errors) and the holder id b->id (rlk_fam_id_get:
 * "<owner_fn>: ..."). */
int rlk_handle_acq_start(rlk_handle_acq *a, void *handle, const rlk_fam_base *b,
                         const char *owner_fn, const rlk_proto *row, long long lease_ms,
                         rlk_fam_release_fn release);
/* The unlock of b's lock by its holder id as row's kind (runtime/fam_hold.h rlk_fam_unlock,
 * what and owner_fn in its errors, q poked) with row's release (secret: the election's). */
int rlk_handle_unlock(rlk_fam_base *b, const rlk_proto *row, const char *what,
                      const char *owner_fn, rlk_lq *q, const char *secret);

/* The settle of a lost acquire of a (sent at sent_ns, rc its error): the default of
 * a->settle; a kind's own sets what the machine a->m needs first (the faster MultiLock: m.exact).
 * 0 when the reply was not lost (rc stands); else 1 and x the machine's next action. */
int rlk_handle_lost(rlk_handle_acq *a, int rc, long long sent_ns, rlk_acq_act *x);

/* A release of h by b's row whose outcome is RLK_REL_ERROR with *rc, settled by the machine q
 * (q->known the holds the client knew of; a value list's ntail values after the read-back's
 * ARGV) when its reply was lost: it ran, its outcome (*rc RLK_OK); it did not, sent once more
 * with release(arg, owner, lease, rc) (at most twice in all); unknown, RLK_ERR_UNSETTLED
 * recorded, kept as a doubt when the machine says so. Otherwise outcome. */
int rlk_handle_rel_settle(const rlk_fam_base *b, rlk_acq *q, rlk_hold_spec *h, size_t ntail,
                          const char *const *tail, rlk_fam_release_fn release, void *arg,
                          long long lease, int outcome, int *rc);

/* The blocking driver of a lock kind's row (a, its head started and the
 * kind's fields set) for wait_ms from a->start_ns: a hold of a
 * RLK_PROTO_NON_REENTRANT row's owner refused (RLK_ERR_REENTRY), a
 * RLK_PROTO_ONE_HOLD one's token in a->token, before any I/O; then the
 * attempts (the row's acquire built by rlk_proto_build_with and read by
 * the machine of kinds/acq.h deciding what follows each reply, lost reply and read-back) in the row's wait mode (runtime/wait.c,
 * runtime/spin.c); a queued waiter that gives up leaves the queue by the
 * row's cancel. RLK_OK, an error, or RLK_ERR_BUSY recorded as the machine's
 * busy message (kinds/acq.h rlk_acq_busy: the time since a->start_ns). */
int rlk_handle_drive(rlk_handle_acq *a, long long wait_ms);

/* One attempt of a semaphore's acquisition (rlk_wait_attempt_fn's work; the machine q): pc
 * with v (its ticket argument from t, the ntail ids after its ARGV) on b, then what the machine
 * says of its reply or of a lost reply's read-back (v's id the first): acquired (RLK_OK, out of
 * the queue), replicas asked (undo(arg) when too few); busy, RLK_ERR_BUSY with *bound_ms (-3:
 * RLK_WAIT_RECHECK) and t->wide; else its error, recorded. */
int rlk_handle_sem_attempt(const rlk_fam_base *b, rlk_acq_sem *q, rlk_sem_queue_try *t,
                           const rlk_proto_call *pc, rlk_proto_argvals v, size_t ntail,
                           const char *const *tail, const size_t *lens, long long *bound_ms,
                           rlk_fam_undo_fn undo, void *arg);

/* The token the client's registry recorded with the latest acquisition of
 * name as kind by the handle's holder id b->id (owner_fn as rlk_fam_id_get
 * takes it) into *token (0 when none); RLK_ERR_NOT_OWNER when it records
 * no such hold, with the message not_held formats from (name, holder id). */
int rlk_handle_token(const rlk_fam_base *b, const char *owner_fn, int kind, const char *not_held,
                     long long *token);

/* A counted entry point (an acquisition, a latch's await): every call, a bad
 * handle's (b NULL) too, counted in the metrics (engine/metrics.h) from
 * rlk_handle_call_begin to rlk_handle_call_end, which records its result rc
 * as metric (an RLK_KIND_* or RLK_MKIND_*) under the handle's name and
 * returns rc. */
typedef struct rlk_handle_call {
    rlk_metrics_call mc;
    const char *name;               /* NULL: a bad handle */
} rlk_handle_call;

rlk_handle_call rlk_handle_call_begin(const rlk_fam_base *b);
int rlk_handle_call_end(rlk_handle_call *hc, int metric, int rc);

/* ---------------------------------------------------------------- calling */

/* A kind's call pc (a kinds/proto.h call) on b's name: its KEYS by rlk_proto_build_with, the
 * script header's roles, b's own keys (rlk_handle_keys) where they were made for the script's
 * folder, built per call elsewhere; its ARGV from vals
 * (NULL: none; publish NULL: the client's); its reply in *r (rlk_evalv's result), or RLK_ERR_NOMEM
 * recorded. */
int rlk_handle_eval(const rlk_fam_base *b, const rlk_proto_call *pc,
                    const rlk_proto_argvals *vals, redisReply **r);

/* A queued waiter's leaving by the cancel call pc (its ARGV from vals, its optional KEYS opt,
 * NULL: none) on b's name, best effort, the calling thread's last error kept; bounded by
 * bound_ns from now (a failed one sent once more, kinds/acq.h rlk_acq_cancel_again, within
 * bound_ns and a fence's budget more) (a lock row's: kinds/acq.h rlk_acq_cancel's; a semaphore's:
 * runtime/fam_hold.h's RLK_FAM_CANCEL_NS). */
void rlk_handle_cancel(const rlk_fam_base *b, const rlk_proto_call *pc, const char *opt,
                       const rlk_proto_argvals *vals, long long bound_ns);

/* The force release of row (its force script and ARGV, mode in place of
 * "any" (NULL: "any"), then 'named' when named is 1; its KEYS then the roles
 * opt, NULL: none) on b's name, once the registry forgot the name's holds;
 * read by runtime/fam_hold.h rlk_fam_force_done (q poked on a release). */
int rlk_handle_force(const rlk_fam_base *b, const rlk_proto *row, const char *opt,
                     const char *mode, int named, struct rlk_lq *q, int *released);

/* rlk_handle_eval with the KEYS of the roles opt after the header's (a row's opt_keys; NULL:
 * none), then the ntail arguments tail after its ARGV (lens NULL: strlen; the faster
 * MultiLock's values, the permit ids after the first). With r its reply in *r (rlk_evalv's
 * result); r NULL: an integer reply into *out (out may be NULL; RLK_ERR_PROTOCOL recorded for
 * another shape: "<script> <name>: reply of type T, expected an integer"). RLK_ERR_NOMEM
 * recorded: "<script> <name>: out of memory". */
int rlk_handle_evalt(const rlk_fam_base *b, const rlk_proto_call *pc, const char *opt,
                     const rlk_proto_argvals *vals, size_t ntail, const char *const *tail,
                     const size_t *lens, long long *out, redisReply **r);
/* rlk_handle_evalt without a tail, an integer reply into *out (may be
 * NULL) when it came. */
int rlk_handle_int(const rlk_fam_base *b, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                   long long *out);
/* A call that changes what it counts (a semaphore's permits, a latch's
 * count, a time to live): lo <= v <= 10^12 when field is not NULL (else
 * RLK_ERR_ARG "<what> <name>: <field> ..."), then rlk_handle_int, then
 * replicas as rlk_fam_acks_done (*out set before they are asked). */
int rlk_handle_write(const rlk_fam_base *b, const char *what, const char *field, long long v,
                     long long lo, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                     long long *out);

#endif /* RLK_KINDS_HANDLE_H */
