/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_once.h - a request that is one script call with an integer reply
 * (a_once.c): a_admin.c's requests (the semaphore's release, the latch's
 * count_down and try_set_count, ...), the faster MultiLock's queries and
 * the election's proclaim.
 * The reply's integer is the result's value. A call that never went out is sent again
 * within the request's budget (two command timeouts and a connect); a
 * reply that was lost (written, no reply) is not repeated, since none of
 * these calls may run twice (unless RLK_A_ONCE_REPEAT says a repeat is
 * harmless): the request ends RLK_ERR_UNSETTLED. A cancel
 * does not stop a call already sent: its result stands (unless
 * RLK_A_ONCE_CANCEL). An awaiter (the latch's await) sends its read again
 * on wake-ups until it says open.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_ONCE_H
#define RLK_A_ONCE_H

#include "rlk_async.h"
#include "kinds/proto.h"

/* A new request of ac; what ("semaphore release") and name name it in
 * messages, who ("rlk_async_latch_await") in the checks every request
 * makes (the client's fatal error, an empty name), after which it may be
 * completed already (rlk_ae_req_done): then send nothing. mkind (an
 * RLK_MKIND_*; -1: none) counts it as an acquisition (rlk_ae_req_metric).
 * NULL: out of memory (no callback). */
rlk_async_req *rlk_a_once_start(rlk_async *ac, const char *who, const char *what, int mkind,
                                const char *name, rlk_async_fn fn, void *privdata);

/* How rlk_a_once_call reads the reply and rides out a lost one. */
#define RLK_A_ONCE_BOOL 1       /* value: 1 when the integer is 1, else 0 */
#define RLK_A_ONCE_HELD 2       /* 0: RLK_ERR_NOT_OWNER (a permit that is not held) */
#define RLK_A_ONCE_REPEAT 4     /* a lost reply is asked again: running twice changes nothing
                                   the reply or the caller depends on (a read; a reclaim of
                                   expired permits; a proclaim of the same value in the same
                                   term) */
#define RLK_A_ONCE_LEADS 8      /* elect/proclaim's reply (kinds/proto.h
                                   rlk_proto_read_proclaim): value vals->term; refused:
                                   RLK_ERR_NOT_OWNER "<owner> no longer leads in term <term>" */
#define RLK_A_ONCE_CANCEL 16    /* a cancel ends the request at once (RLK_ERR_CANCELLED; the
                                   call in flight is forgotten) */

/* Sends the kind's call pc (kinds/proto.h, static) on the request's name
 * with vals (copied, their owner, value and id too; other text static; publish:
 * the client's when NULL, asked for at each send) and the text list tail
 * after them (NULL-terminated, one block: the request frees it; the faster
 * MultiLock's values; NULL: none) for r, which rlk_a_once_start made;
 * RLK_A_ONCE_* flags. Built again for each send (rlk_a_kind_call). One that
 * cannot be built or sent ends the request ("<what> <name>: out of memory",
 * or RLK_ERR_CLOSED "client freed"). */
void rlk_a_once_call(rlk_async_req *r, const rlk_proto_call *pc, const rlk_proto_argvals *vals,
                    char **tail, int flags);

/* Makes r (rlk_a_once_start's) an awaiter: it listens on channel (and, for
 * a wait_ms above 0, arms its deadline) before it sends pc (no ARGV) on its
 * name; it reads again on every message, on the subscription's confirmation
 * and at least every second, until the integer is 0 or below (RLK_OK, value
 * 0) or the wait runs out (RLK_ERR_BUSY "<what> <name>: <busy> after <ms>
 * ms", busy static; a single read for wait_ms 0). A read is harmless to
 * repeat: one that never came back is read again within the wait (one
 * without bound rides out any outage). A cancel ends it at once. -1: out of
 * memory, r not completed. */
int rlk_a_once_await(rlk_async_req *r, const rlk_proto_call *pc, const char *channel,
                     long long wait_ms, const char *busy);

#endif /* RLK_A_ONCE_H */
