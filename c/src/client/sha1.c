/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sha1.c - SHA-1 (FIPS 180-4), used to check bundle files against their
 * manifest. Small and portable; not constant-time (nothing secret is hashed).
 */
#include <string.h>

#include "client/sha1.h"

static uint32_t rlk_rol(uint32_t x, int n)
{
    return (x << n) | (x >> (32 - n));
}

static uint32_t rlk_be32(const unsigned char *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

static uint32_t rlk_sha1_f(int t, uint32_t b, uint32_t c, uint32_t d)
{
    if (t < 20)
        return (b & c) | (~b & d);
    if (t < 40 || t >= 60)
        return b ^ c ^ d;
    return (b & c) | (b & d) | (c & d);
}

static const uint32_t rlk_sha1_k[4] = {0x5a827999u, 0x6ed9eba1u, 0x8f1bbcdcu, 0xca62c1d6u};

static void rlk_sha1_block(uint32_t h[5], const unsigned char *block)
{
    uint32_t w[80];
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4];

    for (int t = 0; t < 16; t++)
        w[t] = rlk_be32(block + 4 * t);
    for (int t = 16; t < 80; t++)
        w[t] = rlk_rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    for (int t = 0; t < 80; t++) {
        uint32_t tmp = rlk_rol(a, 5) + rlk_sha1_f(t, b, c, d) + e + w[t] + rlk_sha1_k[t / 20];
        e = d;
        d = c;
        c = rlk_rol(b, 30);
        b = a;
        a = tmp;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
}

void rlk_sha1_init(rlk_sha1_ctx *s)
{
    static const uint32_t init[5] = {0x67452301u, 0xefcdab89u, 0x98badcfeu, 0x10325476u,
                                     0xc3d2e1f0u};

    memcpy(s->h, init, sizeof init);
    s->total = 0;
    s->used = 0;
}

void rlk_sha1_update(rlk_sha1_ctx *s, const void *data, size_t len)
{
    const unsigned char *p = data;

    s->total += len;
    while (len > 0) {
        size_t take = 64 - s->used;

        if (take > len)
            take = len;
        memcpy(s->block + s->used, p, take);
        s->used += take;
        p += take;
        len -= take;
        if (s->used == 64) {
            rlk_sha1_block(s->h, s->block);
            s->used = 0;
        }
    }
}

void rlk_sha1_final(rlk_sha1_ctx *s, unsigned char digest[20])
{
    uint64_t bits = s->total * 8;
    unsigned char pad[72] = {0x80};
    size_t padlen = (s->used < 56) ? 56 - s->used : 120 - s->used;

    for (int i = 0; i < 8; i++)
        pad[padlen + i] = (unsigned char)(bits >> (56 - 8 * i));
    rlk_sha1_update(s, pad, padlen + 8);
    for (int i = 0; i < 5; i++) {
        digest[4 * i] = (unsigned char)(s->h[i] >> 24);
        digest[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        digest[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        digest[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void rlk_sha1_final_hex(rlk_sha1_ctx *s, char hex[41])
{
    static const char digits[] = "0123456789abcdef";
    unsigned char digest[20];

    rlk_sha1_final(s, digest);
    for (int i = 0; i < 20; i++) {
        hex[2 * i] = digits[digest[i] >> 4];
        hex[2 * i + 1] = digits[digest[i] & 15];
    }
    hex[40] = '\0';
}

void rlk_sha1_hex(const void *data, size_t len, char hex[41])
{
    rlk_sha1_ctx s;

    rlk_sha1_init(&s);
    rlk_sha1_update(&s, data, len);
    rlk_sha1_final_hex(&s, hex);
}
