/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_holdlog.c - the overlap checker's own control: hand-built holds that
 * must (and must not) break each rule, the text format's round trip, open
 * holds, and logs written by several processes at once and merged.
 * A real run with a lock per process (holds that must overlap) is it_mutex's
 * control (test_detector_sees_overlaps).
 */
#include "check.h"
#include "holdlog.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static tk_hold H(int pid, int kind, long long start, long long end, long long value)
{
    tk_hold h;

    memset(&h, 0, sizeof h);
    h.pid = pid;
    h.kind = kind;
    h.start_ns = start;
    h.end_ns = end;
    h.value = value;
    return h;
}

static void test_exclusive(void)
{
    tk_hold apart[] = {H(1, 'X', 0, 10, 0), H(2, 'X', 10, 20, 0), H(3, 'X', 25, 30, 0)};
    tk_hold overlap[] = {H(1, 'X', 0, 10, 0), H(2, 'X', 9, 20, 0), H(3, 'X', 15, 30, 0)};
    tk_hold inside[] = {H(1, 'X', 0, 100, 0), H(2, 'X', 10, 20, 0), H(3, 'X', 30, 40, 0)};
    tk_hold_report r;

    r = tk_holds_check(apart, 3, 0);
    CHECK_INT_EQ(r.conflicts, 0);       /* an end at a start's ns does not overlap it */
    CHECK_INT_EQ(r.peak, 1);
    CHECK_INT_EQ(r.regressions, 0);     /* holds without a value have no token order */
    r = tk_holds_check(overlap, 3, 0);
    CHECK_INT_EQ(r.conflicts, 2);
    CHECK_INT_EQ(r.peak, 2);
    r = tk_holds_check(inside, 3, 1);
    CHECK_INT_EQ(r.conflicts, 2);       /* both holds inside a long one, not only the first */
    CHECK_INT_EQ(r.longest_ns, 100);
}

static void test_rwlock(void)
{
    tk_hold readers[] = {H(1, 'R', 0, 10, 0), H(2, 'R', 1, 10, 0), H(3, 'R', 2, 10, 0),
                         H(4, 'W', 10, 20, 0)};
    tk_hold writer_in[] = {H(1, 'R', 0, 10, 0), H(2, 'R', 1, 10, 0), H(4, 'W', 5, 20, 0)};
    tk_hold_report r;

    r = tk_holds_check(readers, 4, 0);
    CHECK_INT_EQ(r.conflicts, 0);
    CHECK_INT_EQ(r.peak_readers, 3);
    r = tk_holds_check(writer_in, 3, 0);
    CHECK_INT_EQ(r.conflicts, 2);       /* the writer against each reader */
    CHECK_INT_EQ(r.peak_readers, 2);
}

static void test_semaphore(void)
{
    tk_hold ok[] = {H(1, 'S', 0, 10, 2), H(2, 'S', 0, 10, 2), H(3, 'S', 10, 20, 4)};
    tk_hold over[] = {H(1, 'S', 0, 10, 2), H(2, 'S', 0, 10, 2), H(3, 'S', 9, 20, 1)};
    tk_hold_report r;

    r = tk_holds_check(ok, 3, 0);
    CHECK_INT_EQ(r.conflicts, 0);
    CHECK_INT_EQ(r.peak_permits, 4);
    r = tk_holds_check(over, 3, 0);
    CHECK_INT_EQ(r.conflicts, 0);       /* permits never conflict pairwise ... */
    CHECK_INT_EQ(r.peak_permits, 5);    /* ... their sum says "more than 4 at once" */
}

static void test_tokens(void)
{
    tk_hold up[] = {H(1, 'X', 0, 1, 1), H(2, 'X', 1, 2, 2), H(3, 'X', 2, 3, 7)};
    tk_hold back[] = {H(1, 'X', 0, 1, 5), H(2, 'X', 1, 2, 6), H(3, 'X', 2, 3, 6),
                      H(4, 'X', 3, 4, 3)};
    tk_hold_report r;

    r = tk_holds_check(up, 3, 0);
    CHECK_INT_EQ(r.regressions, 0);
    r = tk_holds_check(back, 4, 1);
    CHECK_INT_EQ(r.regressions, 2);     /* a repeated token and a smaller one */
    CHECK_INT_EQ(r.conflicts, 0);
}

static void test_text_format(void)
{
    const char *text = "B 10 1 1 X 5 10 42\n"
                       "H 11 0 0 W 0 30 40 0\n"
                       "E 10 1 1 20\n"
                       "B 12 0 3 S 50 60 2\n"   /* open: killed while holding */
                       "E 13 0 0 70\n"          /* an end without a begin */
                       "garbage\n"
                       "\n# a comment\n";
    tk_hold *h = NULL;
    size_t n = 0;
    int bad = 0;
    tk_hold_report r;

    CHECK_INT_EQ(tk_holds_parse(text, 1000, &h, &n, &bad), 3);
    CHECK_INT_EQ(bad, 2);
    REQUIRE_INT_EQ(n, 3);
    r = tk_holds_check(h, n, 0);
    CHECK_INT_EQ(r.open, 1);
    CHECK_INT_EQ(h[0].pid, 10);
    CHECK_INT_EQ(h[0].start_ns, 10);
    CHECK_INT_EQ(h[0].end_ns, 20);
    CHECK_INT_EQ(h[0].sent_ns, 5);
    CHECK_INT_EQ(h[0].value, 42);
    CHECK_INT_EQ(h[1].kind, 'W');
    CHECK_INT_EQ(h[2].end_ns, 50 + 1000);   /* open: sent + its lease */
    CHECK_INT_EQ(h[2].open, 1);
    free(h);
    h = NULL;
    n = 0;
    CHECK_INT_EQ(tk_holds_parse("B 12 0 3 S 0 60 2\n", -1, &h, &n, NULL), 1);
    CHECK(n == 1 && h[0].end_ns == LLONG_MAX);
    free(h);
}

/* Four processes append to one file at once; every line survives whole. */
static void test_processes_merge(void)
{
    char dir[] = "/tmp/rlk-holdlog-XXXXXX", path[300], other[300];
    const char *paths[2];
    tk_hold *h = NULL;
    size_t n = 0;
    int bad = 0, ok = 1;

    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/holds", dir);
    snprintf(other, sizeof other, "%s/holds.2", dir);
    for (int p = 0; p < 4; p++) {
        pid_t pid = fork();

        if (pid == 0) {
            int fd = tk_holdlog_open(p == 3 ? other : path), rc = 0;

            for (int i = 0; i < 500 && fd >= 0; i++) {
                long long t = tk_mono_ns();

                rc |= tk_hold_begin(fd, p, i, 'X', t, t, i);
                rc |= tk_hold_end(fd, p, i, tk_mono_ns());
            }
            _exit(fd >= 0 && rc == 0 ? 0 : 1);
        }
        ok &= pid > 0;
    }
    for (int p = 0; p < 4; p++) {
        int st = -1;

        ok &= wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
    }
    CHECK(ok);
    paths[0] = path;
    paths[1] = other;
    CHECK_INT_EQ(tk_holds_read(paths, 2, -1, &h, &n, &bad), 2000);
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(tk_holds_check(h, n, 0).open, 0);
    free(h);
    h = NULL;
    n = 0;
    /* tk_holds_save writes H lines that read back the same. */
    {
        tk_hold one[] = {H(7, 'R', 100, 200, 0), H(8, 'W', 200, 300, 9)};
        char p3[320];

        snprintf(p3, sizeof p3, "%s/saved", dir);
        CHECK_INT_EQ(tk_holds_save(p3, one, 2), 0);
        paths[0] = p3;
        CHECK_INT_EQ(tk_holds_read(paths, 1, -1, &h, &n, NULL), 2);
        CHECK(n == 2 && h[1].kind == 'W' && h[1].value == 9 && h[1].end_ns == 300);
        CHECK_INT_EQ(tk_holds_check(h, n, 0).conflicts, 0);
        free(h);
        unlink(p3);
    }
    unlink(path);
    unlink(other);
    rmdir(dir);
}

/* The sh helper: `PROG --tk-hold LOG KIND begin|end ID`. */
static void test_sh_helper(void)
{
    char dir[] = "/tmp/rlk-holdlog-XXXXXX", path[300];
    char *b1[] = {"p", "--tk-hold", path, "W", "begin", "41", NULL};
    char *e1[] = {"p", "--tk-hold", path, "W", "end", "41", NULL};
    char *b2[] = {"p", "--tk-hold", path, "R", "begin", "42", NULL};
    char *bad[] = {"p", "--tk-hold", path, "Q", "begin", "1", NULL};
    char *none[] = {"p", "other", NULL};
    const char *paths[1] = {path};
    tk_hold *h = NULL;
    size_t n = 0;

    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/log", dir);
    CHECK_INT_EQ(tk_holdlog_main(6, b1), 0);
    CHECK_INT_EQ(tk_holdlog_main(6, b2), 0);
    CHECK_INT_EQ(tk_holdlog_main(6, e1), 0);
    CHECK_INT_EQ(tk_holdlog_main(6, bad), 1);
    CHECK_INT_EQ(tk_holdlog_main(2, none), -1);
    CHECK_INT_EQ(tk_holds_read(paths, 1, -1, &h, &n, NULL), 2);
    /* The reader began before the writer ended and never ended: a conflict. */
    CHECK_INT_EQ(tk_holds_check(h, n, 0).conflicts, 1);
    free(h);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    RUN_TEST(test_exclusive);
    RUN_TEST(test_rwlock);
    RUN_TEST(test_semaphore);
    RUN_TEST(test_tokens);
    RUN_TEST(test_text_format);
    RUN_TEST(test_processes_merge);
    RUN_TEST(test_sh_helper);
    return check_summary("test_holdlog");
}
