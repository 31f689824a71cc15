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

/* A uniform random number in 0..n-1 (modulo bias aside: n is far below 2^64); 0 when n is 0
 * or the random source fails (jitter, tickets: never a secret). */
unsigned long long rlk_random_below(unsigned long long n);

#define RLK_RANDOM_HEX_MAX 32   /* bytes rlk_random_hex makes at most */

/* n random bytes (at most RLK_RANDOM_HEX_MAX) as 2n lowercase hex digits and a NUL in out
 * (RedLock tokens, an election handle's secret, pool connection names). 0 or -1. */
int rlk_random_hex(char *out, size_t n);

/* The n bytes of b as 2n lowercase hex digits and a NUL in out (permit ids, SHA-1 digests). */
void rlk_hex(char *out, const unsigned char *b, size_t n);
/* The value of the hex digit ch (either case); -1 when it is not one. */
int rlk_hex_digit(int ch);

/* Fills uuid with a random (v4) UUID, 36 characters and a NUL. 0 or -1. */
int rlk_random_uuid(char uuid[RLK_UUID_LEN + 1]);

#endif /* RLK_RANDOM_H */
