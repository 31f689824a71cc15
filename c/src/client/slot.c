/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slot.c - hash slots and the name rule (see slot.h).
 */
#include <stdio.h>
#include <string.h>

#include "client/slot.h"

unsigned rlk_crc16(const char *buf, size_t len)
{
    unsigned crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xFFFF : (crc << 1) & 0xFFFF;
    }
    return crc;
}

/* The tag's bounds: 1 and [*s, *e) when key has a non-empty hash tag. */
static int rlk_tag_bounds(const char *key, size_t len, size_t *s, size_t *e)
{
    const char *open = memchr(key, '{', len), *close;

    if (!open)
        return 0;
    close = memchr(open + 1, '}', len - (size_t)(open + 1 - key));
    if (!close || close == open + 1)
        return 0;
    *s = (size_t)(open + 1 - key);
    *e = (size_t)(close - key);
    return 1;
}

int rlk_key_slot(const char *key, size_t len)
{
    size_t s, e;

    if (rlk_tag_bounds(key, len, &s, &e))
        return (int)(rlk_crc16(key + s, e - s) & (RLK_SLOT_COUNT - 1));
    return (int)(rlk_crc16(key, len) & (RLK_SLOT_COUNT - 1));
}

int rlk_name_check(const char *name, char *why, size_t whylen)
{
    size_t len = strlen(name), s, e;

    if (rlk_tag_bounds(name, len, &s, &e) || (!memchr(name, '{', len) && !memchr(name, '}', len)))
        return 0;
    if (why && whylen)
        snprintf(why, whylen,
                 "a name with a curly brace needs a hash tag: '{', at least one character, then "
                 "'}' (as in 'orders{42}'); without one its keys would hash to different cluster "
                 "slots (docs/cluster.md)");
    return -1;
}
