/* SPDX-License-Identifier: BSD-3-Clause */
/* Unit test of bench_stats: every computation rlk-bench reports, on fixed
 * inputs with hand-computed answers. Prints "N passed, M failed". */
#include "bench_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rlk_t_passed;
static int rlk_t_failed;

static void rlk_t_check(int ok, const char *what, int line)
{
    if (ok) {
        rlk_t_passed++;
    } else {
        rlk_t_failed++;
        printf("FAIL line %d: %s\n", line, what);
    }
}

#define CHECK(cond) rlk_t_check((cond), #cond, __LINE__)
#define NEAR(a, b) (fabs((double)(a) - (double)(b)) < 1e-9)

static void test_nearest_rank(void)
{
    int64_t one[] = {42};
    int64_t ten[10], hundred[100], twohundred[200], three[] = {1, 2, 3};
    int i;

    for (i = 0; i < 10; i++)
        ten[i] = i + 1;
    for (i = 0; i < 100; i++)
        hundred[i] = i + 1;
    for (i = 0; i < 200; i++)
        twohundred[i] = i + 1;
    CHECK(rlk_bench_nearest_rank(one, 1, 50) == 42);
    CHECK(rlk_bench_nearest_rank(one, 1, 99) == 42);
    CHECK(rlk_bench_nearest_rank(ten, 10, 50) == 5);
    CHECK(rlk_bench_nearest_rank(ten, 10, 99) == 10);
    CHECK(rlk_bench_nearest_rank(ten, 10, 100) == 10);
    CHECK(rlk_bench_nearest_rank(ten, 10, 1) == 1);
    CHECK(rlk_bench_nearest_rank(hundred, 100, 50) == 50);
    CHECK(rlk_bench_nearest_rank(hundred, 100, 99) == 99);
    CHECK(rlk_bench_nearest_rank(twohundred, 200, 99) == 198);
    CHECK(rlk_bench_nearest_rank(three, 3, 50) == 2);
    CHECK(rlk_bench_nearest_rank(three, 3, 99) == 3);
}

static void test_summarize(void)
{
    int64_t v[] = {7, -3, 10, 1, 5};
    rlk_bench_summary s;

    rlk_bench_summarize(v, 5, &s);
    CHECK(s.n == 5);
    CHECK(v[0] == -3 && v[4] == 10); /* sorted in place */
    CHECK(NEAR(s.p50, 5));
    CHECK(NEAR(s.p99, 10));
    CHECK(NEAR(s.max, 10));
    CHECK(NEAR(s.mean, 4));
    rlk_bench_summarize(v, 0, &s);
    CHECK(s.n == 0);
    CHECK(isnan(s.p50) && isnan(s.p99) && isnan(s.max) && isnan(s.mean));
}

static void test_summarize_large(void)
{
    int64_t big[] = {INT64_C(4000000000000), INT64_C(2000000000000)};
    rlk_bench_summary s;

    rlk_bench_summarize(big, 2, &s);
    CHECK(NEAR(s.mean, 3e12));
    CHECK(NEAR(s.p50, 2e12));
}

static void test_jain(void)
{
    uint64_t equal[] = {5, 5, 5, 5};
    uint64_t one_has_all[] = {0, 12, 0, 0};
    uint64_t one_three[] = {1, 3};
    uint64_t zeros[] = {0, 0, 0};

    CHECK(NEAR(rlk_bench_jain(equal, 4), 1.0));
    CHECK(NEAR(rlk_bench_jain(one_has_all, 4), 0.25));
    CHECK(NEAR(rlk_bench_jain(one_three, 2), 0.8));
    CHECK(isnan(rlk_bench_jain(zeros, 3)));
    CHECK(isnan(rlk_bench_jain(equal, 0)));
}

static rlk_bench_event rlk_t_ev(int c, int64_t rq, int64_t a, int64_t r)
{
    rlk_bench_event e;

    e.contender = c;
    e.request_ns = rq;
    e.acquire_ns = a;
    e.release_ns = r;
    return e;
}

static void test_overlaps(void)
{
    rlk_bench_event disjoint[] = {rlk_t_ev(0, 0, 10, 20), rlk_t_ev(1, 0, 21, 30),
                                  rlk_t_ev(0, 0, 31, 40)};
    rlk_bench_event touching[] = {rlk_t_ev(0, 0, 10, 20), rlk_t_ev(1, 0, 20, 30)};
    rlk_bench_event nested[] = {rlk_t_ev(0, 0, 10, 100), rlk_t_ev(1, 0, 20, 30),
                                rlk_t_ev(2, 0, 40, 50), rlk_t_ev(3, 0, 101, 110)};
    rlk_bench_event all_three[] = {rlk_t_ev(2, 0, 30, 60), rlk_t_ev(0, 0, 10, 50),
                                   rlk_t_ev(1, 0, 20, 40)};

    CHECK(rlk_bench_count_overlaps(disjoint, 3) == 0);
    CHECK(rlk_bench_count_overlaps(touching, 2) == 1);
    CHECK(rlk_bench_count_overlaps(nested, 4) == 2);
    rlk_bench_sort_events(all_three, 3);
    CHECK(all_three[0].contender == 0 && all_three[2].contender == 2);
    CHECK(rlk_bench_count_overlaps(all_three, 3) == 3);
    CHECK(rlk_bench_count_overlaps(all_three, 0) == 0);
}

/* Five acquisitions (given out of order) by contenders 0, 0, 1, 2, 0 before a
 * deadline of 1000, and one after it that overlaps its predecessor. */
static void test_w2_compute(void)
{
    rlk_bench_event ev[] = {
        rlk_t_ev(1, 100, 300, 400),       /* 3rd: gap 300-250 = 50, handoff */
        rlk_t_ev(0, 0, 10, 110),          /* 1st */
        rlk_t_ev(0, 120, 130, 250),       /* 2nd: gap 20, self */
        rlk_t_ev(0, 405, 900, 1050),      /* 5th: gap 900-600 = 300, handoff */
        rlk_t_ev(2, 5, 420, 600),         /* 4th: gap 20, handoff */
        rlk_t_ev(1, 500, 1001, 1100),     /* after the deadline; overlaps the 5th */
    };
    rlk_bench_w2_stats s;

    CHECK(rlk_bench_w2_compute(ev, 6, 3, 1000, &s) == 0);
    CHECK(s.acquisitions == 5);
    CHECK(s.gaps == 4 && s.handoffs == 3 && s.self_reacquires == 1);
    CHECK(NEAR(s.self_reacquire_frac, 0.25));
    CHECK(s.gap.n == 4 && NEAR(s.gap.p50, 20) && NEAR(s.gap.max, 300));
    CHECK(NEAR(s.gap.mean, (50 + 20 + 300 + 20) / 4.0));
    CHECK(s.handoff_other.n == 3 && NEAR(s.handoff_other.p50, 50));
    CHECK(NEAR(s.handoff_other.p99, 300));
    CHECK(s.wait.n == 5 && NEAR(s.wait.max, 495) && NEAR(s.wait.p50, 200));
    CHECK(s.hold.n == 5 && NEAR(s.hold.p50, 120) && NEAR(s.hold.max, 180));
    CHECK(s.waits_over_100ms == 0);
    /* counts 3, 1, 1: 25 / (3 * 11) */
    CHECK(NEAR(s.jain_fairness, 25.0 / 33.0));
    CHECK(s.overlaps == 1);
}

static void test_w2_long_wait(void)
{
    rlk_bench_event ev[] = {
        rlk_t_ev(0, 0, INT64_C(100000000), INT64_C(100000001)),  /* exactly 100 ms */
        rlk_t_ev(1, 0, INT64_C(200000000), INT64_C(200000001)),  /* 200 ms */
        rlk_t_ev(7, 0, INT64_C(300000000), INT64_C(300000001)),  /* unknown contender */
    };
    rlk_bench_w2_stats s;

    CHECK(rlk_bench_w2_compute(ev, 3, 2, INT64_C(1000000000), &s) == 0);
    CHECK(s.acquisitions == 3);
    CHECK(s.waits_over_100ms == 2);
    CHECK(NEAR(s.jain_fairness, 1.0));
    CHECK(s.overlaps == 0);
}

static void test_w2_empty(void)
{
    rlk_bench_event one[] = {rlk_t_ev(0, 0, 2000, 2100)};
    rlk_bench_w2_stats s;

    CHECK(rlk_bench_w2_compute(NULL, 0, 4, 1000, &s) == 0);
    CHECK(s.acquisitions == 0 && s.gaps == 0 && s.overlaps == 0);
    CHECK(isnan(s.jain_fairness) && isnan(s.self_reacquire_frac));
    CHECK(s.gap.n == 0 && isnan(s.gap.p50) && s.wait.n == 0);
    CHECK(rlk_bench_w2_compute(one, 1, 4, 1000, &s) == 0);
    CHECK(s.acquisitions == 0 && s.overlaps == 0);
    CHECK(rlk_bench_w2_compute(one, 1, 4, 2000, &s) == 0);
    CHECK(s.acquisitions == 1 && s.gaps == 0 && isnan(s.self_reacquire_frac));
    CHECK(NEAR(s.jain_fairness, 0.25));
}

int main(void)
{
    test_nearest_rank();
    test_summarize();
    test_summarize_large();
    test_jain();
    test_overlaps();
    test_w2_compute();
    test_w2_long_wait();
    test_w2_empty();
    printf("%d passed, %d failed\n", rlk_t_passed, rlk_t_failed);
    return rlk_t_failed == 0 ? 0 : 1;
}
