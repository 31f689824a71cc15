/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * badargs.h - call a script with bad arguments and prove nothing changed.
 *
 * Driven by the script's own header (docs/script-contract.md), so it covers
 * every script in the set, present and future:
 *   KEYS: a name containing "channel" only names a channel; any other key
 *         holds data. KEYS[1]'s type comes from the RLK_WRONGTYPE line
 *         ("not a hash", "non-string", "...holding an integer").
 *   ARGV: a name with "lease"/"ttl" is a lease (RLK_BADLEASE); a meaning with
 *         "integer A..B" is a number in that range (RLK_BADARG); "1..1024
 *         bytes" is an id (RLK_BADOWNER for owners, RLK_BADTOKEN for tokens,
 *         else RLK_BADARG). Anything else is unknown: that script is checked
 *         weakly (any RLK_* code accepted) and reported.
 * From a valid call it breaks one thing at a time:
 *   - every lease / number: "", abc, 1e3, 0x10, " 1", "1 ", 1.5, inf, nan, 01,
 *     +1, 14 digits, max+1, min-1 (and -1)
 *   - every id: empty, 1025 bytes; a variadic id list with its last entry empty
 *   - one argument too few / too many; one key too few / too many (the
 *     library may refuse a key-count mismatch itself: RLK_ERR_ARG)
 *   - KEYS[1] holding a list, the other of hash/string, a non-integer string
 * in up to three database states (free; KEYS[1] held by another - a hash
 * field or a string "5" with a TTL; held twice by the caller through
 * <kind>/acquire), expecting the specific code the header promises. After
 * each call it checks: RLK_ERR_SCRIPT with errstr "RLK_<CODE> ...", every
 * key's DUMP and PTTL as before, DBSIZE as before, and no PUBLISH (a
 * PSUBSCRIBE * connection must see the test's marker message first). No
 * DEBUG command is used.
 */
#ifndef RLK_IT_BADARGS_H
#define RLK_IT_BADARGS_H

#include <rlk.h>
#include "fixture.h"

typedef struct badargs_stats {
    int quiet;     /* in: nonzero: do not print each failure */
    int scripts;   /* scripts examined */
    int calls;     /* bad calls made */
    int rejected;  /* calls rejected as specified with nothing changed */
    int exact;     /* calls whose expected code was a specific one (else any RLK_*) */
    int weak_scripts; /* scripts with an ARGV this test cannot classify */
    int failures;  /* everything else, each printed to stderr */
} badargs_stats;

/* Runs every bad-argument case for one script; adds to *st. The server is
 * FLUSHALLed between cases. */
void badargs_script(rlk_client *c, const rlk_fx_server *s, const rlk_script_info *si,
                    badargs_stats *st);

#endif /* RLK_IT_BADARGS_H */
