/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_kind.h - a kind's call of kinds/proto.h on the loop (a_kind.c): its
 * KEYS and ARGV built by the kind's row or call, sent through the engine.
 * The protocol itself (scripts, ARGV names, rows, reply readers) is
 * kinds/proto.h's, shared with the blocking kinds.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_A_KIND_H
#define RLK_A_KIND_H

#include <stddef.h>

#include "engine/engine.h"
#include "kinds/proto.h"

/* rlk_async_lock's row of kind RLK_KIND_LOCK .. RLK_KIND_WRITE (each kind's
 * own, kinds/lock.h, ...); NULL for another. */
const rlk_proto *rlk_a_kind_row(int kind);
/* rlk_async_force_unlock_named's: the force release of kind (the lock-delay's
 * row for RLK_KIND_LOCK: a force unlock ends a delay) that also passes
 * 'named' (a lock's hash without a TTL goes too); NULL for another. */
const rlk_proto *rlk_a_kind_named(int kind);
/* rlk_async_lock_nr's: the non-reentrant lock (RLK_KIND_LOCK) and fair lock
 * (RLK_KIND_FAIR); NULL for another. */
const rlk_proto *rlk_a_kind_nr(int kind);

/* The call pc on name with vals (publish: the client's when NULL), the
 * list tail (NULL-terminated, may be NULL) after its named ARGV; fn called
 * with its reply. NULL: out of memory, a call that does not fit its script,
 * or the client is closing (fn is then not called). */
rlk_ae_call *rlk_a_kind_call(rlk_async *ac, const rlk_proto_call *pc, const char *name,
                             const rlk_proto_argvals *vals, char *const *tail,
                             rlk_ae_reply_fn fn, void *arg);
/* The same with the KEYS of the roles opt (a row's opt_keys; NULL: none) after the header's. */
rlk_ae_call *rlk_a_kind_callo(rlk_async *ac, const rlk_proto_call *pc, const char *opt,
                              const char *name, const rlk_proto_argvals *vals, char *const *tail,
                              rlk_ae_reply_fn fn, void *arg);

#endif /* RLK_A_KIND_H */
