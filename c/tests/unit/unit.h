/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unit.h - a tiny test framework for rlk's C unit tests.
 *
 * Include from exactly one file per test program. Each test is a
 * `static void name(void)` registered in main with UNIT_RUN(name); main ends
 * with `return unit_summary("test_x");`, which prints
 * "test_x: N passed, M failed" and returns nonzero when any test failed (or
 * none ran). CHECK* record a failure and continue; REQUIRE* also leave the
 * current test.
 */
#ifndef RLK_UNIT_H
#define RLK_UNIT_H

#include <stdio.h>
#include <string.h>

static int unit_passed, unit_failed, unit_cur_failures;
static const char *unit_cur = "(none)";

static int unit_check(int ok, const char *file, int line, const char *what)
{
    if (!ok) {
        unit_cur_failures++;
        fprintf(stderr, "  FAIL %s (%s:%d): %s\n", unit_cur, file, line, what);
    }
    return ok;
}

__attribute__((unused)) static int unit_check_int(long long got, long long want, const char *expr, const char *file,
                          int line)
{
    char buf[512];

    if (got == want)
        return 1;
    snprintf(buf, sizeof buf, "%s is %lld, expected %lld", expr, got, want);
    return unit_check(0, file, line, buf);
}

__attribute__((unused)) static int unit_check_str(const char *got, const char *want, const char *expr, const char *file,
                          int line)
{
    char buf[1024];

    if (got && want && strcmp(got, want) == 0)
        return 1;
    snprintf(buf, sizeof buf, "%.150s is \"%.400s\", expected \"%.400s\"", expr, got ? got : "(null)",
             want ? want : "(null)");
    return unit_check(0, file, line, buf);
}

__attribute__((unused)) static int unit_check_contains(const char *got, const char *needle, const char *expr,
                               const char *file, int line)
{
    char buf[1024];

    if (got && strstr(got, needle))
        return 1;
    snprintf(buf, sizeof buf, "%.150s is \"%.400s\", expected to contain \"%.400s\"", expr,
             got ? got : "(null)", needle);
    return unit_check(0, file, line, buf);
}

#define CHECK(cond) unit_check(!!(cond), __FILE__, __LINE__, #cond)
#define CHECK_INT(got, want) unit_check_int((long long)(got), (long long)(want), #got, __FILE__, __LINE__)
#define CHECK_STR(got, want) unit_check_str((got), (want), #got, __FILE__, __LINE__)
#define CHECK_CONTAINS(got, needle) unit_check_contains((got), (needle), #got, __FILE__, __LINE__)
#define REQUIRE(cond) do { if (!CHECK(cond)) return; } while (0)
#define REQUIRE_INT(got, want) do { if (!CHECK_INT(got, want)) return; } while (0)

static void unit_run(const char *name, void (*fn)(void))
{
    unit_cur = name;
    unit_cur_failures = 0;
    fn();
    if (unit_cur_failures) {
        unit_failed++;
        fprintf(stderr, "not ok - %s\n", name);
    } else {
        unit_passed++;
        fprintf(stderr, "ok - %s\n", name);
    }
}

#define UNIT_RUN(fn) unit_run(#fn, fn)

static int unit_summary(const char *program)
{
    printf("%s: %d passed, %d failed\n", program, unit_passed, unit_failed);
    fflush(stdout);
    return (unit_failed == 0 && unit_passed > 0) ? 0 : 1;
}

#endif /* RLK_UNIT_H */
