/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The spin wait's back-off (runtime/spin.h): from initial, doubling plus a
 * jitter below the failure count, never above max, never below the step
 * before it; and the wait itself on a stub attempt: busy until the n-th
 * attempt, the wait's bound, the holder's TTL cutting a long step, errors.
 */
#include <string.h>

#include "check.h"
#include "client/clock.h"
#include "runtime/spin.h"

static void test_next(void)
{
    long long prev = 0;

    CHECK_INT_EQ(rlk_spin_next(0, 1, 1, 128), 1);
    CHECK_INT_EQ(rlk_spin_next(0, 1, 200, 200), 200);
    for (int fails = 1; fails <= 40; fails++) {
        long long next = rlk_spin_next(prev, fails, 1, 128);

        CHECKF(next >= 1 && next <= 128, "step %d: %lld", fails, next);
        if (prev > 0 && prev < 128) {
            long long base = prev * 2 < 128 ? prev * 2 : 128;

            CHECKF(next >= base && next <= (prev * 2 + fails - 1 < 128 ? prev * 2 + fails - 1 : 128),
                   "step %d after %lld: %lld", fails, prev, next);
        }
        prev = next;
    }
    CHECK_INT_EQ(prev, 128);
    CHECK_INT_EQ(rlk_spin_next(128, 50, 1, 128), 128);
}

typedef struct stub {
    int calls;
    int ok_at;              /* the attempt that succeeds (0: never) */
    long long bound;        /* the bound a busy attempt tells */
    int fail_with;          /* an error the first attempt returns (0: none) */
} stub;

static int stub_attempt(void *arg, long long *bound)
{
    stub *s = arg;

    s->calls++;
    if (s->fail_with && s->calls == 1)
        return s->fail_with;
    if (s->ok_at && s->calls >= s->ok_at)
        return RLK_OK;
    *bound = s->bound;
    return RLK_ERR_BUSY;
}

static void test_wait(void)
{
    rlk_rt rt;
    stub s;
    long long t0, ms;

    memset(&rt, 0, sizeof rt);      /* no client: only the interrupt flag is read */
    /* Busy three times, then acquired. */
    memset(&s, 0, sizeof s);
    s.ok_at = 4;
    s.bound = -1;
    CHECK_INT_EQ(rlk_spin_acquire(&rt, "lock", "x", stub_attempt, &s, rlk_clock_now_ns(), -1, 1, 8),
                 RLK_OK);
    CHECK_INT_EQ(s.calls, 4);
    /* wait 0: one attempt. */
    memset(&s, 0, sizeof s);
    s.bound = -1;
    CHECK_INT_EQ(rlk_spin_acquire(&rt, "lock", "x", stub_attempt, &s, rlk_clock_now_ns(), 0, 1, 8),
                 RLK_ERR_BUSY);
    CHECK_INT_EQ(s.calls, 1);
    /* A 60 ms wait that runs out: busy, after at least 60 ms and several attempts. */
    memset(&s, 0, sizeof s);
    s.bound = -1;
    t0 = rlk_clock_now_ns();
    CHECK_INT_EQ(rlk_spin_acquire(&rt, "lock", "x", stub_attempt, &s, t0, 60, 1, 16),
                 RLK_ERR_BUSY);
    ms = (rlk_clock_now_ns() - t0) / 1000000;
    CHECKF(ms >= 60 && ms < 5000, "a 60 ms wait took %lld ms", ms);
    CHECKF(s.calls >= 3, "%d attempts", s.calls);
    /* The holder's TTL (2 ms) cuts a 10 s step: three attempts well under a second. */
    memset(&s, 0, sizeof s);
    s.ok_at = 3;
    s.bound = 2;
    t0 = rlk_clock_now_ns();
    CHECK_INT_EQ(rlk_spin_acquire(&rt, "lock", "x", stub_attempt, &s, t0, -1, 10000, 10000),
                 RLK_OK);
    ms = (rlk_clock_now_ns() - t0) / 1000000;
    CHECKF(ms < 2000, "took %lld ms: the TTL did not cut the step", ms);
    /* An error ends the wait; a connection error is ridden out. */
    memset(&s, 0, sizeof s);
    s.fail_with = RLK_ERR_SCRIPT;
    CHECK_INT_EQ(rlk_spin_acquire(&rt, "lock", "x", stub_attempt, &s, rlk_clock_now_ns(), -1, 1, 8),
                 RLK_ERR_SCRIPT);
    CHECK_INT_EQ(s.calls, 1);
    memset(&s, 0, sizeof s);
    s.fail_with = RLK_ERR_IO;
    s.ok_at = 2;
    CHECK_INT_EQ(rlk_spin_acquire(&rt, "lock", "x", stub_attempt, &s, rlk_clock_now_ns(), -1, 1, 8),
                 RLK_OK);
    CHECK_INT_EQ(s.calls, 2);
}

int main(void)
{
    RUN_TEST(test_next);
    RUN_TEST(test_wait);
    return check_summary("test_spin");
}
