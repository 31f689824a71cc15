/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check.h - a tiny check-macro test framework for rlk's integration tests.
 *
 * Header-only; include it from exactly one translation unit (the test
 * program). A test is a `static void fn(void)`; run it with RUN_TEST(fn).
 * CHECK* records a failed check and goes on; REQUIRE* records it and returns
 * from the current test function. check_summary() prints
 * "<name>: N passed, M failed" (tests) and returns the exit status.
 *
 * RLK_TEST_ONLY=fn[,fn...] runs only the named tests, RLK_TEST_SKIP=fn[,fn...]
 * all but them: ctest runs a program's timing-bound cases alone (RUN_SERIAL)
 * and the rest beside other tests (c/tests/support/server_test.cmake,
 * rlk_split_test). A name in either list that the program never reaches fails
 * the run, so a renamed test cannot drop out of both halves.
 */
#ifndef RLK_TEST_CHECK_H
#define RLK_TEST_CHECK_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK_MAYBE_UNUSED __attribute__((unused))

static int check_tests_passed;
static int check_tests_failed;
static int check_checks_run;
static int check_checks_failed;
static int check_current_failed;
static const char *check_current_name = "(none)";

CHECK_MAYBE_UNUSED static int check_record(int ok, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

CHECK_MAYBE_UNUSED static int check_record(int ok, const char *file, int line, const char *fmt, ...)
{
    va_list ap;

    check_checks_run++;
    if (ok)
        return 1;
    check_checks_failed++;
    check_current_failed++;
    fprintf(stderr, "  FAIL %s (%s:%d): ", check_current_name, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return 0;
}

#define CHECK(cond) check_record(!!(cond), __FILE__, __LINE__, "%s", #cond)

#define CHECKF(cond, ...) check_record(!!(cond), __FILE__, __LINE__, __VA_ARGS__)

#define CHECK_INT_EQ(actual, expected)                                        \
    check_int_eq((long long)(actual), (long long)(expected), #actual,         \
                 __FILE__, __LINE__)

#define CHECK_STR_EQ(actual, expected)                                        \
    check_str_eq((actual), (expected), #actual, __FILE__, __LINE__)

#define CHECK_STR_PREFIX(actual, prefix)                                      \
    check_str_prefix((actual), (prefix), #actual, __FILE__, __LINE__)

#define CHECK_STR_CONTAINS(actual, needle)                                    \
    check_str_contains((actual), (needle), #actual, __FILE__, __LINE__)

/* RLK_CHECK_REQUIRE_EXITS (the event-loop tests, c/tests/async): a failed REQUIRE* ends the
 * program at once, exit status 1. A case returning early there would leave its requests pending
 * on its stack, and the next case's loop would complete them into a frame that is gone: a crash
 * instead of the failure that caused it. The fixture stops its servers at exit. */
#ifdef RLK_CHECK_REQUIRE_EXITS
#define CHECK_REQUIRE_FAILED()                                                \
    (fprintf(stderr, "  %s: a required check failed: the program ends here\n", \
             check_current_name),                                             \
     exit(1))
#else
#define CHECK_REQUIRE_FAILED() ((void)0)
#endif

#define REQUIRE(cond)                                                         \
    do {                                                                      \
        if (!CHECK(cond)) {                                                   \
            CHECK_REQUIRE_FAILED();                                           \
            return;                                                           \
        }                                                                     \
    } while (0)

#define REQUIREF(cond, ...)                                                   \
    do {                                                                      \
        if (!CHECKF(cond, __VA_ARGS__)) {                                     \
            CHECK_REQUIRE_FAILED();                                           \
            return;                                                           \
        }                                                                     \
    } while (0)

#define REQUIRE_INT_EQ(actual, expected)                                      \
    do {                                                                      \
        if (!CHECK_INT_EQ(actual, expected)) {                                \
            CHECK_REQUIRE_FAILED();                                           \
            return;                                                           \
        }                                                                     \
    } while (0)

#define RUN_TEST(fn) check_run(#fn, fn)

CHECK_MAYBE_UNUSED static int check_int_eq(long long actual, long long expected, const char *expr,
                        const char *file, int line)
{
    return check_record(actual == expected, file, line,
                        "%s == %lld, expected %lld", expr, actual, expected);
}

CHECK_MAYBE_UNUSED static const char *check_show(const char *s)
{
    return s ? s : "(null)";
}

CHECK_MAYBE_UNUSED static int check_str_eq(const char *actual, const char *expected,
                        const char *expr, const char *file, int line)
{
    int ok = actual && expected && strcmp(actual, expected) == 0;

    return check_record(ok, file, line, "%s == \"%s\", expected \"%s\"", expr,
                        check_show(actual), check_show(expected));
}

CHECK_MAYBE_UNUSED static int check_str_prefix(const char *actual, const char *prefix,
                            const char *expr, const char *file, int line)
{
    int ok = actual && strncmp(actual, prefix, strlen(prefix)) == 0;

    return check_record(ok, file, line, "%s == \"%s\", expected prefix \"%s\"",
                        expr, check_show(actual), prefix);
}

CHECK_MAYBE_UNUSED static int check_str_contains(const char *actual, const char *needle,
                              const char *expr, const char *file, int line)
{
    int ok = actual && strstr(actual, needle) != NULL;

    return check_record(ok, file, line, "%s == \"%s\", expected to contain \"%s\"",
                        expr, check_show(actual), needle);
}

#define CHECK_SELECT_MAX 16
/* The names of RLK_TEST_ONLY and RLK_TEST_SKIP, and whether each was reached. */
static struct {
    int parsed, only, n, bad;
    char names[CHECK_SELECT_MAX][64];
    int reached[CHECK_SELECT_MAX];
} check_select;

CHECK_MAYBE_UNUSED static void check_select_parse(void)
{
    const char *only = getenv("RLK_TEST_ONLY"), *skip = getenv("RLK_TEST_SKIP");
    const char *list = only && *only ? only : skip, *p;

    check_select.parsed = 1;
    if (only && *only && skip && *skip) {
        fprintf(stderr, "check: RLK_TEST_ONLY and RLK_TEST_SKIP are both set\n");
        check_select.bad = 1;
        return;
    }
    if (!list || !*list)
        return;
    check_select.only = list == only;
    for (p = list; *p;) {
        size_t len = strcspn(p, ",");

        if (len == 0 || len >= sizeof check_select.names[0] || check_select.n == CHECK_SELECT_MAX) {
            fprintf(stderr, "check: bad test list '%s'\n", list);
            check_select.bad = 1;
            return;
        }
        memcpy(check_select.names[check_select.n], p, len);
        check_select.names[check_select.n++][len] = '\0';
        p += len + (p[len] == ',');
    }
}

/* 1 when the test `name` runs in this process. */
CHECK_MAYBE_UNUSED static int check_selected(const char *name)
{
    int i;

    if (!check_select.parsed)
        check_select_parse();
    if (check_select.n == 0)
        return !check_select.bad;
    for (i = 0; i < check_select.n; i++)
        if (strcmp(check_select.names[i], name) == 0) {
            check_select.reached[i] = 1;
            return check_select.only;
        }
    return !check_select.only;
}

CHECK_MAYBE_UNUSED static void check_run(const char *name, void (*fn)(void))
{
    if (!check_selected(name)) {
        fprintf(stderr, "- %s (not selected: RLK_TEST_%s)\n", name, check_select.only ? "ONLY" : "SKIP");
        return;
    }
    check_current_name = name;
    check_current_failed = 0;
    fprintf(stderr, "- %s\n", name);
    fn();
    if (check_current_failed == 0) {
        check_tests_passed++;
    } else {
        check_tests_failed++;
        fprintf(stderr, "  %s: FAILED (%d failed checks)\n", name,
                check_current_failed);
    }
    check_current_name = "(none)";
}

/* Prints the totals; returns 0 when everything passed, 1 otherwise. */
CHECK_MAYBE_UNUSED static int check_summary(const char *program)
{
    int i;

    if (!check_select.parsed)
        check_select_parse();
    for (i = 0; i < check_select.n; i++)
        if (!check_select.reached[i]) {
            fprintf(stderr, "%s: RLK_TEST_%s names %s, which this program does not run\n", program,
                    check_select.only ? "ONLY" : "SKIP", check_select.names[i]);
            check_select.bad = 1;
        }
    if (check_select.bad)
        check_tests_failed++;
    printf("%s: %d passed, %d failed (%d checks, %d failed)\n", program,
           check_tests_passed, check_tests_failed, check_checks_run,
           check_checks_failed);
    fflush(stdout);
    return (check_tests_failed == 0 && check_tests_passed > 0) ? 0 : 1;
}

#endif /* RLK_TEST_CHECK_H */
