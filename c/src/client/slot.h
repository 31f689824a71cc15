/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slot.h - Redis Cluster hash slots (slot.c): CRC16 of a key or of its hash
 * tag, and the name rule that keeps every key and channel derived from a
 * lock name in one slot (docs/cluster.md "Names").
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SLOT_H
#define RLK_SLOT_H

#include <stddef.h>
#include <string.h>

#define RLK_SLOT_COUNT 16384

/* CRC16-CCITT (XMODEM), the cluster spec's ("123456789" -> 0x31C3). */
unsigned rlk_crc16(const char *buf, size_t len);
/* HASH_SLOT of a key: CRC16 of the text between the first '{' and the next
 * '}' when that is non-empty, else of the whole key, mod 16384. */
int rlk_key_slot(const char *key, size_t len);

/* The name rule: a name either has a valid hash tag ("a{b}c": every key is
 * hashed on "b"), or has no curly brace at all (rlk braces it: "{name}:x").
 * Anything else ("a{b", "a{}b", "{}", "a}b") would spread a kind's keys
 * over several slots. 0 when name follows the rule; -1 with the reason in
 * why (may be NULL) otherwise. */
int rlk_name_check(const char *name, char *why, size_t whylen);

/* The one string hash of the in-memory tables (runtime/holds.c, engine/ae_pubsub.c,
 * cli/top_scan.c): h extended by the len bytes at s (RLK_HASH_INIT first). FNV-1a's step on 8
 * bytes at a time, each high half folded down, then murmur3's finalizer: every byte reaches a
 * bucket's low bits, at an eighth of the byte-wise steps (a lock call hashes several times). */
#define RLK_HASH_INIT 1469598103934665603ULL
static inline unsigned long long rlk_hash(unsigned long long h, const char *s, size_t len)
{
    unsigned long long w;

    for (; len >= 8; s += 8, len -= 8, h ^= h >> 32) {
        memcpy(&w, s, 8);
        h = (h ^ w) * 1099511628211ULL;
    }
    for (; len > 0; s++, len--)
        h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    h = (h ^ (h >> 33)) * 0xff51afd7ed558ccdULL;
    return h ^ (h >> 33);
}

#endif /* RLK_SLOT_H */
