/* SPDX-License-Identifier: BSD-3-Clause */
/* rlk_conn_format_argv (client/conn.c), the formatter of every blocking request, against
 * hiredis's own redisFormatCommandArgv: the same bytes for every argv, lengths across each
 * decimal width, binary arguments, C strings, and requests larger than its stack buffer; and
 * rlk_conn_format_script, the async engine's script calls, against hiredis's bytes for the
 * same EVALSHA argv, in the caller's buffer and in one of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client/conn.h"
#include "rlk.h"
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


/* 1 when rlk_conn_format_script writes script s's EVALSHA of keys and args as hiredis formats
 * "EVALSHA" sha1 numkeys keys... args..., through buf (cap bytes; 0: no buffer; EXACT: the
 * request's own length), in buf when it fits and in a buffer of its own when not. */
#define EXACT ((size_t)-1)

static int script_same_as_hiredis(rlk_client *c, const rlk_script_info *s, int nkeys,
                                  const char **keys, int nargs, const char **args,
                                  const size_t *arglens, size_t cap)
{
    const char *argv[64];
    size_t lens[64];
    char numkeys[16], *want = NULL, *got = NULL, *buf = NULL;
    int argc = 0, wlen, len, ok;

    if (3 + nkeys + nargs > 64)
        return 0;
    snprintf(numkeys, sizeof numkeys, "%d", nkeys);
    argv[argc] = "EVALSHA", lens[argc++] = 7;
    argv[argc] = s->sha1, lens[argc++] = 40;
    argv[argc] = numkeys, lens[argc++] = strlen(numkeys);
    for (int i = 0; i < nkeys; i++, argc++)
        argv[argc] = keys[i], lens[argc] = strlen(keys[i]);
    for (int i = 0; i < nargs; i++, argc++)
        argv[argc] = args[i], lens[argc] = arglens ? arglens[i] : strlen(args[i]);
    if ((wlen = redisFormatCommandArgv(&want, argc, argv, lens)) <= 0)
        return 0;
    if (cap == EXACT)
        cap = (size_t)wlen;
    if (cap && !(buf = malloc(cap))) {
        redisFreeCommand(want);
        return 0;
    }
    len = rlk_conn_format_script(c, s, nkeys, keys, NULL, nargs, args, arglens, buf, cap, &got);
    ok = len == wlen && got && memcmp(got, want, (size_t)len) == 0 &&
         (got == buf) == ((size_t)len <= cap);
    if (got != buf)
        free(got);
    free(buf);
    redisFreeCommand(want);
    return ok;
}

static void test_script_calls(void)
{
    rlk_options o;
    rlk_client *c;
    const rlk_script_info *s;
    const char *keys[2] = {"{lock}", "redisson_lock__channel:{lock}"};
    const char *args[3] = {"30000", "5d9b5c6e-8f3a-4c57-9d8e-0a1b2c3d4e5f:1", "0"};
    const char bin[] = {'a', '\0', '\r', '\n', 'b'};
    const char *binargs[2] = {bin, ""};
    const size_t binlens[2] = {sizeof bin, 0};
    const char *many[40];
    char words[40][8];

    rlk_options_init(&o);
    o.url = "redis://127.0.0.1:1";      /* never reached: the client's scripts are enough */
    o.connect_timeout_ms = 500;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    s = rlk_script_find(c, "reentrant/acquire");
    REQUIRE(s != NULL);
    for (int i = 0; i < 40; i++) {
        snprintf(words[i], sizeof words[i], "w%d", i * 997);
        many[i] = words[i];
    }
    CHECK(script_same_as_hiredis(c, s, 2, keys, 3, args, NULL, 0));
    CHECK(script_same_as_hiredis(c, s, 2, keys, 3, args, NULL, 512));
    CHECK(script_same_as_hiredis(c, s, 2, keys, 3, args, NULL, 8));       /* too small */
    CHECK(script_same_as_hiredis(c, s, 2, keys, 3, args, NULL, EXACT));
    CHECK(script_same_as_hiredis(c, s, 1, keys, 2, binargs, binlens, 512));
    CHECK(script_same_as_hiredis(c, s, 0, NULL, 0, NULL, NULL, 512));
    CHECK(script_same_as_hiredis(c, s, 12, many, 28, many + 12, NULL, 0)); /* > 24 words */
    CHECK(script_same_as_hiredis(c, s, 12, many, 28, many + 12, NULL, 4096));
    rlk_free(c);
}

int main(void)
{
    RUN_TEST(test_small_commands);
    RUN_TEST(test_binary_arguments);
    RUN_TEST(test_widths);
    RUN_TEST(test_short_buffer);
    RUN_TEST(test_script_calls);
    return check_summary("test_format");
}
