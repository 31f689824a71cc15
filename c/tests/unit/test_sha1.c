/* SPDX-License-Identifier: BSD-3-Clause */
/* SHA-1 against the FIPS 180 / RFC 3174 test vectors. */
#include <stdlib.h>

#include "client/sha1.h"
#include "check.h"

static void hex_of(const char *s, char out[41])
{
    rlk_sha1_hex(s, strlen(s), out);
}

static void test_empty(void)
{
    char hex[41];

    hex_of("", hex);
    CHECK_STR_EQ(hex, "da39a3ee5e6b4b0d3255bfef95601890afd80709");
}

static void test_abc(void)
{
    char hex[41];

    hex_of("abc", hex);
    CHECK_STR_EQ(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
}

static void test_two_blocks(void)
{
    char hex[41];

    hex_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", hex);
    CHECK_STR_EQ(hex, "84983e441c3bd26ebaae4aa1f95129e5e54670f1");
}

static void test_long_message(void)
{
    char hex[41];

    hex_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
           "klmnopqrlmnopqrsmnopqrstnopqrstu", hex);
    CHECK_STR_EQ(hex, "a49b2446a02c645bf419f995b67091253a04a259");
}

static void test_million_a_in_pieces(void)
{
    rlk_sha1_ctx s;
    unsigned char d[20];
    char chunk[1000];
    char hex[41];

    memset(chunk, 'a', sizeof chunk);
    rlk_sha1_init(&s);
    for (int i = 0; i < 1000; i++)
        rlk_sha1_update(&s, chunk, sizeof chunk);
    rlk_sha1_final(&s, d);
    for (int i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    CHECK_STR_EQ(hex, "34aa973cd4c4daa4f61eeb2bdbad27316534016f");
}

/* Any split of the input gives the digest of the whole (block boundaries 55/56/64). */
static void test_split_points(void)
{
    const char *msg = "The quick brown fox jumps over the lazy dog, then again, and once more "
                      "until this is longer than two SHA-1 blocks of sixty-four bytes each.";
    size_t n = strlen(msg);
    char whole[41];

    rlk_sha1_hex(msg, n, whole);
    for (size_t cut = 0; cut <= n; cut++) {
        rlk_sha1_ctx s;
        unsigned char d[20];
        char hex[41];

        rlk_sha1_init(&s);
        rlk_sha1_update(&s, msg, cut);
        rlk_sha1_update(&s, msg + cut, n - cut);
        rlk_sha1_final(&s, d);
        for (int i = 0; i < 20; i++)
            snprintf(hex + 2 * i, 3, "%02x", d[i]);
        if (!CHECK_STR_EQ(hex, whole))
            break;
    }
}

static void test_fox(void)
{
    char hex[41];

    hex_of("The quick brown fox jumps over the lazy dog", hex);
    CHECK_STR_EQ(hex, "2fd4e1c67a2d28fced849ee1bb76e7391b93eb12");
}

/* Lengths around the padding boundary, against values computed independently (sha1sum). */
static void test_padding_lengths(void)
{
    static const struct {
        size_t len;
        const char *sha1;
    } cases[] = {
        {55, "c1c8bbdc22796e28c0e15163d20899b65621d65a"},
        {56, "c2db330f6083854c99d4b5bfb6e8f29f201be699"},
        {63, "03f09f5b158a7a8cdad920bddc29b81c18a551f5"},
        {64, "0098ba824b5c16427bd7a1122a5a442a25ec644d"},
        {65, "11655326c708d70319be2610e8a57d9a5b959d3b"},
    };
    char buf[65];

    memset(buf, 'a', sizeof buf);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char hex[41];

        rlk_sha1_hex(buf, cases[i].len, hex);
        CHECK_STR_EQ(hex, cases[i].sha1);
    }
}

int main(void)
{
    RUN_TEST(test_empty);
    RUN_TEST(test_abc);
    RUN_TEST(test_two_blocks);
    RUN_TEST(test_long_message);
    RUN_TEST(test_million_a_in_pieces);
    RUN_TEST(test_split_points);
    RUN_TEST(test_fox);
    RUN_TEST(test_padding_lengths);
    return check_summary("test_sha1");
}
