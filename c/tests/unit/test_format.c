/* SPDX-License-Identifier: BSD-3-Clause */
/* rlk_conn_format_argv (client/conn.c), the formatter of every blocking request, against
 * hiredis's own redisFormatCommandArgv: the same bytes for every argv, lengths across each
 * decimal width, binary arguments, C strings, and requests larger than its stack buffer. */
#include <stdlib.h>

#include <hiredis/hiredis.h>

#include "client/conn.h"
#include "check.h"

/* 1 when rlk's bytes for argv equal hiredis's, both through a buffer of exactly the size
 * announced and after a count-only call. */
static int same_as_hiredis(int argc, const char **argv, const size_t *lens)
{
    char *want = NULL, *got;
    int wlen = redisFormatCommandArgv(&want, argc, argv, lens);
    size_t need = rlk_conn_format_argv(NULL, 0, argc, (const char *const *)argv, lens);
    int ok;

    if (wlen < 0 || !(got = malloc(need + 1)))
        return 0;
    got[need] = '#';
    ok = need == (size_t)wlen &&
         rlk_conn_format_argv(got, need, argc, (const char *const *)argv, lens) == need &&
         memcmp(got, want, need) == 0 && got[need] == '#';
    free(got);
    redisFreeCommand(want);
    return ok;
}

static void test_small_commands(void)
{
    const char *ping[] = {"PING"};
    const char *set[] = {"SET", "k", "v"};
    const char *empty[] = {"ECHO", ""};

    CHECK(same_as_hiredis(1, ping, NULL));
    CHECK(same_as_hiredis(3, set, NULL));
    CHECK(same_as_hiredis(2, empty, NULL));
    CHECK(same_as_hiredis(0, ping, NULL));
}

static void test_binary_arguments(void)
{
    const char *argv[] = {"EVALSHA", "a\0b\r\nc", "\r\n", "x"};
    const size_t lens[] = {7, 6, 2, 0};

    CHECK(same_as_hiredis(4, argv, lens));
}

/* Lengths 0..1100 (each decimal width's edges) and argument counts 1..120. */
static void test_widths(void)
{
    static char big[70000];
    const char *argv[120];
    size_t lens[120];
    size_t probe[] = {9, 10, 99, 100, 999, 1000, 1023, 1024, 9999, 10000, 65536};
    int bad = 0;

    memset(big, 'z', sizeof big);
    for (size_t len = 0; len <= 1100; len++) {
        argv[0] = "SET", lens[0] = 3;
        argv[1] = big, lens[1] = len;
        bad += !same_as_hiredis(2, argv, lens);
    }
    for (size_t i = 0; i < sizeof probe / sizeof *probe; i++) {
        argv[0] = big, lens[0] = probe[i];
        bad += !same_as_hiredis(1, argv, lens);
    }
    for (int argc = 1; argc <= 120; argc++) {
        for (int i = 0; i < argc; i++)
            argv[i] = big, lens[i] = (size_t)(i * 7 % 13);
        bad += !same_as_hiredis(argc, argv, lens);
    }
    CHECK_INT_EQ(bad, 0);
}

/* A buffer one byte short is left untouched; the size needed is still told. */
static void test_short_buffer(void)
{
    const char *argv[] = {"EVALSHA", "0123456789abcdef0123456789abcdef01234567", "1", "k"};
    char buf[128];
    size_t need = rlk_conn_format_argv(NULL, 0, 4, argv, NULL);

    REQUIRE(need < sizeof buf);
    memset(buf, '#', sizeof buf);
    CHECK(rlk_conn_format_argv(buf, need - 1, 4, argv, NULL) == need);
    CHECK(buf[0] == '#' && buf[need - 1] == '#');
}

int main(void)
{
    RUN_TEST(test_small_commands);
    RUN_TEST(test_binary_arguments);
    RUN_TEST(test_widths);
    RUN_TEST(test_short_buffer);
    return check_summary("test_format");
}
