/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_check_select - check.h's case selection (RLK_TEST_ONLY, RLK_TEST_SKIP), by which ctest
 * runs a program's timing-bound cases alone and the rest beside other tests. Each case records
 * that it ran; the last one compares what ran with what RLK_TEST_EXPECT (the cases that must
 * run, comma-separated) says. c/tests/unit/CMakeLists.txt runs it with each list, and with lists
 * that must fail it: a name the program does not have, both lists at once.
 */
#include "check.h"

static char ran[256];

static void note(const char *name)
{
    if (ran[0])
        strncat(ran, ",", sizeof ran - strlen(ran) - 1);
    strncat(ran, name, sizeof ran - strlen(ran) - 1);
}

static void test_a(void) { note("test_a"); CHECK(1); }
static void test_b(void) { note("test_b"); CHECK(1); }
static void test_c(void) { note("test_c"); CHECK(1); }

int main(void)
{
    const char *expect = getenv("RLK_TEST_EXPECT");

    RUN_TEST(test_a);
    RUN_TEST(test_b);
    RUN_TEST(test_c);
    if (!expect || strcmp(expect, ran) != 0) {
        fprintf(stderr, "ran '%s', expected '%s'\n", ran, expect ? expect : "(RLK_TEST_EXPECT unset)");
        return 1;
    }
    return check_summary("test_check_select");
}
