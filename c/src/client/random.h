/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * random.h - the kernel's random source (random.c): client uuids, permit
 * ids, RedLock tokens.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_RANDOM_H
#define RLK_RANDOM_H

#include <stddef.h>

#define RLK_UUID_LEN 36

/* len bytes from the kernel's random source (getrandom, else /dev/urandom).
 * 0, or -1 when neither can give them. */
int rlk_random_bytes(unsigned char *buf, size_t len);

/* Fills uuid with a random (v4) UUID, 36 characters and a NUL. 0 or -1. */
int rlk_random_uuid(char uuid[RLK_UUID_LEN + 1]);

#endif /* RLK_RANDOM_H */
