/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * acq.h - the one acquisition machine of the lock kinds' rows (acq.c): what follows each
 * outcome of an acquire or a release, decided once, with no I/O, no lock and no clock (times
 * are passed in). An rlk_acq holds one call's state; each step takes an outcome (the begin, a
 * reply, a lost reply, a read-back's reply) and fills the next action (rlk_acq_act): send the
 * acquire, wait, read back, record the hold, give holds back, or end with an error and its
 * message. The blocking driver (kinds/handle.c) and the loop driver (async/a_lock.c) only do
 * the action's I/O; docs/runtime.md "Lost replies" explains the settling.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_ACQ_H
#define RLK_KINDS_ACQ_H

#include <stddef.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "engine/counters.h"
#include "kinds/proto.h"
#include "runtime/rt.h"

/* An action (rlk_acq_act.is). */
enum {
    RLK_ACQ_SEND,       /* send the row's acquire (again); from the begin: wait and channel say
                           how a waiter waits */
    RLK_ACQ_WAIT,       /* busy: wait ttl (-1: none told; -3: behind a reservation), wide: listen
                           on the lock's channel too (first in the queue), reserved: the free
                           lock is reserved for a writer (its bound is the claim window) */
    RLK_ACQ_READ,       /* a reply was lost: fence the connection it went out on, then read
                           back with call (the row's held script with its held_args, a value
                           list's values after them) or, call NULL, HGET <name> <field> */
    RLK_ACQ_RECORD,     /* acquired: record the hold (token, lease start in the machine) */
    RLK_ACQ_GIVE_BACK,  /* give n holds back with the row's release, then RECORD (adopt) or END */
    RLK_ACQ_END         /* done: err (RLK_OK: value is the token or count), msg ("": keep the
                           call's own error) */
};

#define RLK_ACQ_MSG 512

typedef struct rlk_acq_act {
    int is;                 /* RLK_ACQ_* */
    int err;                /* END, and GIVE_BACK's end when not adopting */
    long long value;        /* END RLK_OK: the token (a token row) or count; a release's
                               enum rlk_release_outcome */
    long long ttl;          /* WAIT; a cancel's bound (ms) */
    int wide, reserved;     /* WAIT */
    int wait;               /* WAIT, SEND (the begin): the row's way of waiting, RLK_PROTO_WAIT_* */
    const char *channel;    /* SEND (the begin): the role of the channel its waiters listen on */
    int n;                  /* GIVE_BACK */
    int reads;              /* GIVE_BACK: reads of the same lock and owner (the row's reads),
                               not holds of the row; then SEND */
    int retry;              /* END of a lost acquire that did not run: may be sent again */
    long long ticket;       /* SEND after a held row's -4: the waiter's new ticket (the old one
                               left the queue: a held grant's message naming it is stale) */
    int keep_doubt;         /* END RLK_ERR_UNSETTLED: it may still run, keep it as a doubt
                               (rlk_acq_doubt_kind; never for a given id) */
    const char *call;       /* READ: the script, and its ARGV names (a permit-expirable */
    const char *args;       /* semaphore's: the first permit id); rlk_acq_cancel's */
    const char *keys;       /* rlk_acq_cancel's optional KEYS (NULL: none) */
    char field[RLK_OWNER_MAX + 8];  /* READ: the holder's count field */
    char msg[RLK_ACQ_MSG];  /* END */
} rlk_acq_act;

/* An action with every field 0 and its two buffers empty: only their first bytes are written
 * (they are 1.5 KB, and each step of a lock call starts an action). */
static inline void rlk_acq_act_clear(rlk_acq_act *a, int is)
{
    memset(a, 0, offsetof(rlk_acq_act, field));
    a->field[0] = a->msg[0] = '\0';
    a->is = is;
}

/* One acquisition's (or one release's) state. */
typedef struct rlk_acq {
    const rlk_proto *row;   /* its what names the kind in every message of the machine */
    const char *name, *owner;
    rlk_rt_counters *counters;  /* the client's (may be NULL): lost_* and delay_refusals */
    long long known;        /* holds of the owner the client counts before the call */
    long long lease_ms;
    long long ttl_cap;      /* > 0: a busy wait at most this (the fair lock's keep-alive / 3) */
    long long token;        /* a token row's, once acquired */
    long long start_ms;     /* the hold's lease start (ms, the driver's clock): the acquire's
                               send (the driver sets it before a lost reply's read-back), or
                               for a token row's hold adopted by its read-back, when its lease
                               began by the PTTL read */
    long long prev_sent_ms; /* the attempt before the one in flight: when it was sent (the
                               driver's clock; 0: none); a held row's lost attempt counts its
                               lease from it (rlk_acq_lost) */
    long long ticket;       /* the ticket the acquire carries (the driver's; 0: none) */
    long long again_by_ms;  /* a lost acquire that did not run is sent again (SEND) when read
                               before this (the end of the call's wait, the driver's clock),
                               else ends with its error (0: a single try, never sent again) */
    const char *value;      /* the acquire's value argument (the election's; NULL: none) */
    int given;              /* the holder id is the application's (rlk_fam_id.given): others may
                               hold under it, so its count settles nothing while it is held */
    int doubt;              /* the driver took a doubt that explains the acquire's refusal
                               (rlk_acq_doubt_kind): given back once, then sent again */
    int again;              /* the acquire was sent again after such a give-back */
    int adopt;              /* a settled lost acquire: adopt one hold after the give-back */
    int rel;                /* the read-back is of a lost release */
    int exact;              /* a value list's: every acquisition the client counts of the holder
                               in the group took this list (rlk_acq_values_count's exact) */
    int queued;             /* its acquire may have put the caller in the server's queue (a fair
                               row's or a ticket's turned away, or lost): a give-up cancels */
} rlk_acq;

/* q for row's call of name by owner (all kept by the caller), known holds counted. */
void rlk_acq_init(rlk_acq *q, const rlk_proto *row, const char *name, const char *owner,
                  int given, long long known);

/* A value argument of row's calls on name (the election's campaign and proclaim; both APIs):
 * END RLK_ERR_ARG "<what> <name>: value longer than N bytes" ("a value is required" for
 * NULL), else SEND. */
int rlk_acq_value(const rlk_proto *row, const char *name, const char *value, rlk_acq_act *a);

/* Before any I/O: END RLK_ERR_ARG for a value longer than the row takes; then by the hold the
 * client records of the owner (q->known, token its token): END RLK_ERR_REENTRY for a
 * non-reentrant row, END RLK_OK with the token for a one-hold row (the election: leading
 * already), else SEND. */
int rlk_acq_begin(rlk_acq *q, long long token, rlk_acq_act *a);

/* The acquire's reply (rc RLK_OK: r; else errstr, the error's text; r unused) that was not
 * lost, sent at sent_ms: RECORD, WAIT, GIVE_BACK 1 then SEND (q->doubt), or END (a refusal
 * with its message, another error as it is, a reply of another shape). */
int rlk_acq_reply(rlk_acq *q, int rc, const char *errstr, const redisReply *r, long long sent_ms,
                  rlk_acq_act *a);

/* The hold kind whose doubt (a driver's record of an unsettled call of that kind, q's name and
 * owner: the blocking API's per thread, the loop's per owner; never for a given id) may
 * explain the acquire's refusal errstr: the row's own for a refused re-entry, its read row's
 * for a write refused for a read while the client records none of the owner (reads 0); -1:
 * none, or sent again after such a give-back already. The driver takes that doubt into
 * q->doubt before rlk_acq_reply (both APIs). */
int rlk_acq_doubt_kind(const rlk_acq *q, const char *errstr, long long reads);

/* 1 when recording the acquisition adds one to the count the client keeps of the hold (a
 * one-hold row's hold counts once, whatever re-took it). */
int rlk_acq_adds(const rlk_acq *q, long long count);

/* Before an attempt with ticket: 1 when it takes the row's held_grants row from now on (q->row
 * is that row then; the caller's own row pointer follows): a wake ticket, a row that has one,
 * and a holder id of the client's own (not a given one, which others may share). Both APIs. */
int rlk_acq_take_held(rlk_acq *q, long long ticket);

/* A held grant read at now_ms (its message: the release wrote the lock in the owner's name, after
 * the last acquire the waiter sent, at sent_ms, from which its lease counts): RECORD, nothing
 * sent, nothing to cancel (both APIs). Read once that lease is over, SEND: the grant may have
 * lapsed (the lock's lease run out before the message was read, another holder in); the waiter
 * asks again with its ticket, and the server tells (docs/runtime.md, "Held grants"). */
int rlk_acq_held(rlk_acq *q, long long sent_ms, long long now_ms, rlk_acq_act *a);

/* A reply lost (rel: of a release, else of the acquire): READ. A held row's acquire
 * (RLK_PROTO_GRANTS) counts the lease of a hold it finds from prev_sent_ms: had it never
 * arrived, a held grant made after the attempt before it would hold the lock in its name since
 * then. */
int rlk_acq_lost(rlk_acq *q, int rel, rlk_acq_act *a);

/* The read-back's reply r (fenced first), read at read_ms; why: the lost call's error text.
 * An acquire: by the settle rule, RECORD (adopt), GIVE_BACK (then adopt or end), SEND (did not
 * run, read before q->again_by_ms; else END RLK_ERR_TIMEOUT with retry), END (unknown:
 * RLK_ERR_UNSETTLED). Every END of a lost reply: "<what> <name>: <why> (settled: ...)" or
 * "(outcome unknown: ...)", on both APIs.
 * A release: SEND (it did not run: send the release once more), END RLK_OK (value: the
 * outcome), END RLK_ERR_UNSETTLED. */
int rlk_acq_read(rlk_acq *q, const redisReply *r, long long read_ms, const char *why,
                 rlk_acq_act *a);

/* A wait of what name that ran out after elapsed_ms (a single try's too): END RLK_ERR_BUSY
 * "<what> <name>: <busy> after N ms" (busy NULL: "held by another holder"; both APIs: a lock
 * row's, rlk_acq_busy, with the row's what and busy; a latch's await, RLK_LATCH_BUSY). */
int rlk_acq_waited(const char *what, const char *name, const char *busy, long long elapsed_ms,
                   rlk_acq_act *a);
int rlk_acq_busy(rlk_acq *q, long long elapsed_ms, rlk_acq_act *a);

/* A waiter that gives up: 1 and the row's cancel (call, args) when its acquire may have queued
 * it (q->queued), else 0; ttl: how long a blocking caller waits for it at most (ms). */
int rlk_acq_cancel(const rlk_acq *q, rlk_acq_act *a);

/* That give-up failed with rc after sends sends: 1 when it is sent once more (RLK_ERR_IO or
 * RLK_ERR_TIMEOUT, after one send), once the first has run or never will (its connection
 * fenced: the blocking driver's rlk_fam_lost_fence, the async engine's CLIENT KILL ID before
 * its next call). A give-up that never runs leaves the ticket queued, with its record, for a
 * release to grant the lock to a wait that has ended (docs/runtime.md, "A cancel that never
 * ran"); one that ran late, unfenced, could give back a later hold its mark still names. */
int rlk_acq_cancel_again(int rc, int sends);

/* A release of a hold the client counts count of ended with rc and outcome (enum
 * rlk_release_outcome; left: the holds a settled read-back left, -1: not read): the count the
 * client keeps (> 0), 0: it forgets the hold, -1: it keeps it as it is (unknown; a value
 * list's hold a release found not held says nothing of its other values). With count -1, before
 * the release is sent: 1 when the release ends the hold (its renewal stops first). */
long long rlk_acq_left(const rlk_acq *q, int rc, int outcome, long long left, long long count);

/* The release of the last hold the client counted of the owner replied that the server still
 * counts more (RLK_REL_STILL_HELD): 1 when those are released too (at most
 * RLK_ACQ_GIVE_BACK_MAX releases, until one says released), 0 when they are left to their
 * lease. doubt: the owner's unsettled call (a doubt, taken) may have left them. Released for
 * any id with a doubt, and for an id rlk made (not given) always: such an id is one thread's or
 * one task's, so a hold its client did not count is one nobody knows of (a grant to a wait that
 * gave up and whose cancel never ran, re-entered since). A given id may be another process's
 * too: without a doubt its count is theirs. Not for a value list (its counts are per value). */
int rlk_acq_rest(const rlk_acq *q, int doubt);

/* A release that found the hold not the owner's: END RLK_ERR_NOT_OWNER "unlock <what> <name>:
 * not held by <owner>" ("not every value held by" for a value list; both APIs). */
int rlk_acq_not_held(const rlk_acq *q, rlk_acq_act *a);

/* The read-back could not be made (the server out of reach, why): END RLK_ERR_UNSETTLED. */
int rlk_acq_unknown(rlk_acq *q, const char *why, rlk_acq_act *a);

/* The one rule of a lost acquire's reply: once fenced, the server counts now holds of the
 * holder where the client knew of known. It ran when now > known: the caller gets one hold
 * when adoptable (a token row's hold with lease and token left when read), and the holds
 * beyond known and that one are given back, at most RLK_ACQ_GIVE_BACK_MAX. */
#define RLK_ACQ_GIVE_BACK_MAX 8
typedef struct rlk_acq_settled {
    int ran, adopt, give_back;
} rlk_acq_settled;
rlk_acq_settled rlk_acq_settle_rule(long long known, long long now, int adoptable);

/* A value list's (the faster MultiLock's, RLK_PROTO_VALUES) lost reply, settled (both APIs):
 * after the connection the call went out on is fenced (it has run or never will), r is the reply of
 * fastmulti/counts (owner's live lock_count of each value, 0 when owner
 * does not hold it live: free, lapsed or another's) and known the owner's
 * count of acquisitions in the group before the call (every value's count
 * was at most known then); exact when every one of those acquisitions took
 * all these values (each value's count was known: the blocking handle
 * knows it when it made them all). The count the call left:
 *   acquire (release 0): every value counted known + 1: it ran (known + 1;
 *     no value could reach that otherwise); a value at 0, or (exact) every
 *     value at known: it did not (known; had it run, the value would be
 *     owner's, unless it lapsed since and is free anyway);
 *   release (1): a value at 0, or (exact) every value at known - 1: it ran
 *     (known - 1, at least 0; a release that did not run finds a value at 0
 *     not held and changes nothing); every value at known: it did not
 *     (known; had it run, each would be one less).
 * -1: cannot tell: anything else (without exact, an acquire whose values
 * all count known may have run on values an earlier acquisition did not
 * take, and a release whose values count known - 1 may not have run), or
 * r not such a reply. */
long long rlk_acq_values_count(const redisReply *r, long long known, int exact, int release);

/* A value list's print (never 0), and the datum a hold of value lists keeps with it: the
 * print of the list every acquisition it counts took, 0 once two lists were counted. was is
 * the hold's datum and count its count before this acquisition of the list values. A hold
 * whose datum is the print of the list a call names is exact for that call (both APIs). */
long long rlk_acq_values_print(const char *const *values);
long long rlk_acq_values_datum(long long was, long long count, const char *const *values);

/* The one rule of a lost release's reply: once fenced, now holds where the client knew of
 * known before it (0: none it recorded), given as above. */
enum {
    RLK_ACQ_REL_AGAIN,      /* it did not run: send it once more */
    RLK_ACQ_REL_RAN,        /* it ran: now holds are left */
    RLK_ACQ_REL_GONE,       /* none left where known > 1: lost meanwhile */
    RLK_ACQ_REL_UNKNOWN     /* the count cannot tell: RLK_ERR_UNSETTLED, nothing sent again */
};
int rlk_acq_release_rule(long long known, long long now, int given);

/* A semaphore's acquisition (semaphore/acquire of permits, psemaphore/acquire of ids new
 * permit ids; both APIs): what follows each outcome, as rlk_acq's for the lock rows. */
typedef struct rlk_acq_sem {
    const char *what, *name;    /* in messages: "semaphore", its name */
    const char *script;         /* the acquire's */
    long long permits;
    int ids;                    /* > 0: a permit-expirable semaphore's ids: a lost call is read
                                   back by the first, and sent again with the same ids (RLK_HELD
                                   then proves it ran) */
    int lost;                   /* a reply of its acquire was lost: it may have run */
    int lost_rc;
    rlk_rt_counters *counters;  /* the client's (may be NULL): lost_* */
} rlk_acq_sem;

/* The acquire's reply (rc RLK_OK: r; else errstr), not lost: RECORD (acquired: taken, or a
 * lost call's ids held), WAIT (ttl: -1 a grant or a count wakes it, -3 behind another ticket's
 * reservation, else ms until permits may come back by themselves; wide: first in the queue or
 * behind a reservation: hear the semaphore's channel too), END (another error as it is, a reply
 * of another shape). */
int rlk_acq_sem_reply(rlk_acq_sem *q, int rc, const char *errstr, const redisReply *r,
                      rlk_acq_act *a);
/* The acquire's reply lost (rc; why its text): a semaphore's is never sent again (it could
 * take the permits twice): END RLK_ERR_UNSETTLED; a permit-expirable one's is read back once
 * the connection is fenced: READ (call and args, on the first id). */
int rlk_acq_sem_lost(rlk_acq_sem *q, int rc, const char *why, rlk_acq_act *a);
/* The read-back's reply (NULL: it could not be made): the id held, RECORD (it ran); else END
 * with the lost call's error, retry (sent again with the same ids). */
int rlk_acq_sem_read(rlk_acq_sem *q, const redisReply *r, const char *why, rlk_acq_act *a);
/* A wait for permits of what name that ran out after elapsed_ms (a single try's too): END
 * RLK_ERR_BUSY "<what> <name>: <permits> permit(s) not available after N ms" (both APIs; what:
 * "semaphore", or a permit-expirable one's "acquire"). */
int rlk_acq_sem_busy(const char *what, const char *name, long long permits, long long elapsed_ms,
                     rlk_acq_act *a);

/* A queued lock waiter's ticket (both APIs draw it here): a wake ticket of the client uuid when
 * a release can tell whether a grant on the wake channel reached it (counts_exact: every
 * pub/sub mode but global pub/sub on a cluster, where PUBLISH counts the subscribers of the node
 * it ran on only), else a plain one (kinds/names.h), and the waiter listens on the lock's
 * channel. */
long long rlk_acq_ticket(int counts_exact, const char *uuid);

#endif /* RLK_KINDS_ACQ_H */
