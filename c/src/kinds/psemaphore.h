/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psemaphore.h - what psemaphore.c (the rlk_psemaphore_* calls)
 * and psemaphore_keeper.c (the lease keeper thread) share: the handle and
 * the permit id codec (API ids are hex text; Redis stores the raw bytes,
 * as Redisson does).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_PSEMAPHORE_H
#define RLK_PSEMAPHORE_H

#include "kinds/proto.h"
#include "runtime/fam.h"

#define RLK_PSEM_RAW_ID_MAX 1024        /* longest id the scripts accept, in bytes */
#define RLK_PSEM_NEW_ID_BYTES 16        /* random bytes of a new id (Redisson's size) */

struct rlk_psemaphore {
    rlk_fam_base b;     /* channel: redisson_sc:{name}; keys: {name}:timeout, the waiter
                           queue's; wake: this client's wake channel */
};

/* The message when hex is not a permit id (even length, 2..2048 hex digits,
 * either case), into msg as "<what> <name>: ..."; else decodes it into raw
 * (RLK_PSEM_RAW_ID_MAX bytes) with *len its length. RLK_OK or RLK_ERR_ARG.
 * Pure: the blocking release records the message, the async one completes
 * with it. */
int rlk_psem_parse_id(const char *what, const char *name, const char *hex, unsigned char *raw,
                      size_t *len, char *msg, size_t msglen);
/* Decodes a hex id (rlk_psem_parse_id) into raw (RLK_PSEM_RAW_ID_MAX
 * bytes); *len gets its length. RLK_OK, or RLK_ERR_ARG recorded on s's
 * client naming what. */
int rlk_psem_decode_id(rlk_psemaphore *s, const char *what, const char *hex, unsigned char *raw,
                       size_t *len);

/* Its calls (kinds/proto.h). */
extern const rlk_proto_call rlk_psem_acquire_call, rlk_psem_release_call,
    rlk_psem_lease_time_call, rlk_psem_set_permits_call, rlk_psem_acquired_call;

#endif /* RLK_PSEMAPHORE_H */
