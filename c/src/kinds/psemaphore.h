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

#include "kinds/sem_queue.h"
#include "runtime/fam.h"

#define RLK_PSEM_RAW_ID_MAX 1024        /* longest id the scripts accept, in bytes */
#define RLK_PSEM_NEW_ID_BYTES 16        /* random bytes of a new id (Redisson's size) */

struct rlk_psemaphore {
    rlk_fam_base b;     /* channel: redisson_sc:{name} */
    char *timeouts;     /* {name}:timeout */
    rlk_sem_queue q;    /* the waiter queue's keys, this client's wake channel, tickets */
};

/* The keys of every psemaphore script, in order: (name, timeouts, channel)
 * into keys; returns RLK_PSEM_NKEYS. */
#define RLK_PSEM_NKEYS 3
int rlk_psem_keys(const rlk_psemaphore *s, const char **keys);

/* The keys of the scripts that see the waiter queue (psemaphore/acquire,
 * release, add_permits): the three above, then waiters and grant; returns
 * RLK_PSEM_NQKEYS. */
#define RLK_PSEM_NQKEYS 5
int rlk_psem_qkeys(const rlk_psemaphore *s, const char **keys);

/* What a permit id is, as text: an even number of hex digits, 2..2048,
 * either case. Decodes hex into raw (RLK_PSEM_RAW_ID_MAX bytes), its length
 * in *len: 0, or RLK_PSEM_ID_LENGTH / RLK_PSEM_ID_NOT_HEX (raw and *len
 * then mean nothing). No I/O (the async release decodes with it too). */
enum { RLK_PSEM_ID_LENGTH = 1, RLK_PSEM_ID_NOT_HEX = 2 };
int rlk_psem_id_parse(const char *hex, unsigned char *raw, size_t *len);
/* Decodes a hex id (even length, 2..2048 hex digits, either case) into raw
 * (RLK_PSEM_RAW_ID_MAX bytes); *len gets its length. RLK_OK, or RLK_ERR_ARG
 * recorded on s's client naming what. */
int rlk_psem_decode_id(rlk_psemaphore *s, const char *what, const char *hex, unsigned char *raw,
                       size_t *len);

#endif /* RLK_PSEMAPHORE_H */
