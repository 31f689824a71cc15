/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_fair_faults.c - fair-lock queues never hold dead waiters for minutes
 * (dead waiters), through the C API against a real redis-server:
 *   - a SIGKILLed waiter at the head of the queue (it cannot cancel) is
 *     skipped within its keep-alive (thread wait time, 2 s here) plus one
 *     poll period (a third of it) plus slack: the next waiter gets the lock
 *     that the holder released right after the kill;
 *   - a Redisson head that gives up on a free lock (acquireFailedAsync, which
 *     publishes nothing) does not keep the rlk waiter behind it asleep for
 *     half its wait: it acquires within a poll period (a third of the
 *     default keep-alive) plus slack;
 *   - rlk_interrupt_waits from another thread ends a fair wait with
 *     RLK_ERR_INTERRUPTED and the waiter has left the queue.
 * Holds are stamped with CLOCK_MONOTONIC by the holders (this process and the
 * children): 0 overlapping holds.
 *
 * Child mode (argv[1]): wait URL NAME THREAD_WAIT_MS WAIT_MS. Prints
 * "owner <id>", then tries the lock (watchdog lease) and prints
 * "acq <rc> <acq_ns> <rel_ns>" (a hold of ~20 ms), then exits.
 */
#include "check.h"
#include "fl_util.h"
#include "runtime/rt.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLACK_MS 1500       /* scheduling and round trips on a shared 2-core VM */

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ child: wait */

static int child_wait(const char *curl, const char *name, long long thread_wait, long long wait)
{
    rlk_client *c = tk_connect(curl, 3000, 1);
    rlk_fairlock *f = c ? rlk_fairlock_new(c, name) : NULL;
    char owner[256];
    long long acq = 0, rel = 0;
    int rc;

    if (!f || rlk_fairlock_owner(f, owner, sizeof owner) != RLK_OK)
        return 2;
    if (thread_wait > 0)
        rlk_fairlock_set_thread_wait(f, thread_wait);
    tk_say("owner %s", owner);
    rc = rlk_fairlock_try_lock(f, wait, 0);
    if (rc == RLK_OK) {
        acq = rlk_fx_now_ns();
        tk_spin_ns(20LL * 1000000LL);
        rel = rlk_fx_now_ns();
        rlk_fairlock_unlock(f);
    }
    tk_say("acq %d %lld %lld", rc, acq, rel);
    rlk_fairlock_free(f);
    rlk_free(c);
    return 0;
}

/* ------------------------------------------------------------ helpers */

/* Starts a waiter child and waits until it is index-th in the queue. */
static int start_waiter(tk_child *ch, const char *name, long long thread_wait, int index,
                        char *owner, size_t len)
{
    char tw[24], queue[160], line[300];
    const char *args[] = {"wait", url, name, tw, "60000", NULL};

    snprintf(tw, sizeof tw, "%lld", thread_wait);
    snprintf(queue, sizeof queue, "redisson_lock_queue:{%s}", name);
    if (tk_child_spawn(ch, args) != 0 || tk_child_read_line(ch, line, sizeof line, 15000) != 0 ||
        strncmp(line, "owner ", 6) != 0)
        return -1;
    if ((size_t)snprintf(owner, len, "%s", line + 6) >= len)
        return -1;
    return fl_wait_lindex(&srv, queue, index, owner, 10000);
}

/* Waits (bounded poll) until owner's wait is past its first attempt: it has
 * joined its own channel and retried once since (its deadline moved). */
static int wait_settled(const char *name, const char *owner, long long timeout_ms)
{
    char channel[400], timeouts[160];
    long long first, until = rlk_fx_now_ms() + timeout_ms;

    snprintf(channel, sizeof channel, "redisson_lock__channel:{%s}:%s", name, owner);
    snprintf(timeouts, sizeof timeouts, "redisson_lock_timeout:{%s}", name);
    first = tk_int(&srv, "ZSCORE %s %s", timeouts, owner);
    if (tk_wait_numsub(&srv, channel, 1, timeout_ms) != 0)
        return -1;
    while (rlk_fx_now_ms() < until) {
        if (tk_int(&srv, "ZSCORE %s %s", timeouts, owner) != first)
            return 0;
        rlk_fx_sleep_ms(5);
    }
    return -1;
}

/* Reads a child's "acq" line into rec; 0 when it held the lock. */
static int read_acq(tk_child *ch, tk_hold *rec, long long timeout_ms)
{
    char line[200];
    int rc = -1;

    if (tk_child_read_line(ch, line, sizeof line, timeout_ms) != 0 ||
        sscanf(line, "acq %d %lld %lld", &rc, &rec->start_ns, &rec->end_ns) != 3)
        return -1;
    rec->kind = TK_HOLD_EXCL;
    rec->pid = (int)ch->pid;
    return rc == RLK_OK ? 0 : -1;
}

static void check_no_overlap(tk_hold *recs, size_t n)
{
    tk_hold_report rep = tk_holds_check(recs, n, 1);

    CHECKF(rep.conflicts == 0, "%ld overlapping holds%s", rep.conflicts, tk_stall_note(&stall));
}

/* ------------------------------------------------------------ tests */

/* A SIGKILLed head waiter is skipped within its keep-alive + a poll period. */
static void test_killed_head_skipped(void)
{
    const long long keep_alive = 2000;
    const long long bound = keep_alive + keep_alive / 3 + SLACK_MS;
    rlk_client *c = tk_connect(url, 30000, 1);
    rlk_fairlock *f = c ? rlk_fairlock_new(c, "ff:kill") : NULL;
    tk_child dead, next;
    char o1[256], o2[256];
    tk_hold recs[2] = {{0}};
    long long t_kill, waited;

    REQUIRE(f);
    REQUIRE_INT_EQ(rlk_fairlock_try_lock(f, 0, 0), RLK_OK);     /* watchdog lease: 30 s */
    recs[0].start_ns = rlk_fx_now_ns();
    recs[0].pid = (int)getpid();
    recs[0].kind = TK_HOLD_EXCL;
    REQUIRE(start_waiter(&dead, "ff:kill", keep_alive, 0, o1, sizeof o1) == 0);
    REQUIRE(start_waiter(&next, "ff:kill", keep_alive, 1, o2, sizeof o2) == 0);
    tk_stall_reset(&stall);
    tk_child_kill(&dead);
    t_kill = rlk_fx_now_ns();
    recs[0].end_ns = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_fairlock_unlock(f), RLK_OK);
    CHECKF(read_acq(&next, &recs[1], 40000) == 0, "the waiter behind the killed one never held it");
    waited = (recs[1].start_ns - t_kill) / 1000000;
    tk_say("killed head: next waiter acquired %lld ms after the kill (bound %lld ms)", waited,
           bound);
    CHECKF(recs[1].start_ns > 0 && waited <= bound,
           "next waiter acquired %lld ms after the kill; bound %lld ms (keep-alive %lld)%s",
           waited, bound, keep_alive, tk_stall_note(&stall));
    check_no_overlap(recs, 2);
    tk_child_wait(&next, 5000);
    rlk_fairlock_free(f);
    rlk_free(c);
}

/* Redisson's RedissonFairLock.acquireFailedAsync (3.17): no message. */
static const char redisson_acquire_failed[] =
    "local queue = redis.call('lrange', KEYS[1], 0, -1);"
    "local i = 1;"
    "while i <= #queue and queue[i] ~= ARGV[1] do i = i + 1; end;"
    "i = i + 1;"
    "while i <= #queue do "
    "redis.call('zincrby', KEYS[2], -tonumber(ARGV[2]), queue[i]); i = i + 1; end;"
    "redis.call('zrem', KEYS[2], ARGV[1]);"
    "redis.call('lrem', KEYS[1], 0, ARGV[1]);";

/* A Redisson head gives up on a free lock silently: the rlk waiter behind
 * it acquires within a poll period of its default keep-alive. */
static void test_redisson_head_gives_up(void)
{
    const long long keep_alive = 10000;     /* the documented default keep-alive */
    const long long bound = keep_alive / 3 + SLACK_MS;
    const char *queue = "redisson_lock_queue:{ff:giveup}", *timeouts =
        "redisson_lock_timeout:{ff:giveup}", *java = "3f6c-redisson-uuid:41";
    rlk_client *c = tk_connect(url, 30000, 1);
    rlk_fairlock *f = c ? rlk_fairlock_new(c, "ff:giveup") : NULL;
    tk_child next;
    char o2[256];
    tk_hold recs[2] = {{0}};
    long long t_gone, waited, now = tk_server_ms(&srv);
    redisReply *r;

    REQUIRE(f && now > 0);
    CHECK_INT_EQ(RLK_FAIR_THREAD_WAIT_MS, keep_alive);
    REQUIRE_INT_EQ(rlk_fairlock_try_lock(f, 0, 0), RLK_OK);
    recs[0].start_ns = rlk_fx_now_ns();
    recs[0].pid = (int)getpid();
    recs[0].kind = TK_HOLD_EXCL;
    /* A Redisson waiter at the head: its deadline 5 minutes out (threadWaitTime). */
    CHECK(tk_int(&srv, "RPUSH %s %s", queue, java) == 1);
    CHECK(tk_int(&srv, "ZADD %s %lld %s", timeouts, now + 300000, java) == 1);
    REQUIRE(start_waiter(&next, "ff:giveup", 0, 1, o2, sizeof o2) == 0);
    CHECK(wait_settled("ff:giveup", o2, 5000) == 0);
    tk_stall_reset(&stall);
    recs[0].end_ns = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_fairlock_unlock(f), RLK_OK);    /* wakes the Redisson head only */
    r = rlk_fx_command(&srv, "EVAL %s 2 %s %s %s 300000", redisson_acquire_failed, queue,
                       timeouts, java);
    CHECK(r && r->type != REDIS_REPLY_ERROR);
    freeReplyObject(r);
    t_gone = rlk_fx_now_ns();
    CHECKF(read_acq(&next, &recs[1], 60000) == 0, "the rlk waiter never held it");
    waited = (recs[1].start_ns - t_gone) / 1000000;
    tk_say("redisson head gave up: rlk waiter acquired %lld ms later (bound %lld ms)", waited,
           bound);
    CHECKF(recs[1].start_ns > 0 && waited <= bound,
           "rlk waiter acquired %lld ms after the Redisson head gave up; bound %lld ms%s", waited,
           bound, tk_stall_note(&stall));
    check_no_overlap(recs, 2);
    tk_child_wait(&next, 5000);
    rlk_fairlock_free(f);
    rlk_free(c);
}

typedef struct interrupter {
    rlk_client *c;
    int ok;
} interrupter;

static void *interrupt_main(void *arg)
{
    interrupter *in = arg;

    in->ok = fl_wait_lindex(&srv, "redisson_lock_queue:{ff:intr}", 0, "ff-intr-waiter", 10000) ==
             0;
    rlk_interrupt_waits(in->c);
    return NULL;
}

/* rlk_interrupt_waits ends a fair wait at once; the waiter left the queue. */
static void test_interrupt_cancels(void)
{
    rlk_client *holder = tk_connect(url, 30000, 1), *c = tk_connect(url, 30000, 1);
    rlk_fairlock *h = holder ? rlk_fairlock_new(holder, "ff:intr") : NULL;
    rlk_fairlock *f = c ? rlk_fairlock_new(c, "ff:intr") : NULL;
    interrupter in = {c, 0};
    pthread_t t;
    long long start, took;
    int rc;

    REQUIRE(h && f);
    REQUIRE_INT_EQ(rlk_fairlock_try_lock(h, 0, 0), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_set_owner(f, "ff-intr-waiter"), RLK_OK);
    pthread_create(&t, NULL, interrupt_main, &in);
    start = rlk_fx_now_ns();
    rc = rlk_fairlock_try_lock(f, 60000, 0);
    took = (rlk_fx_now_ns() - start) / 1000000;
    pthread_join(t, NULL);
    CHECK(in.ok);
    CHECK_INT_EQ(rc, RLK_ERR_INTERRUPTED);
    CHECKF(took < 12000, "interrupted wait returned after %lld ms", took);
    CHECK_INT_EQ(tk_int(&srv, "LLEN %s", "redisson_lock_queue:{ff:intr}"), 0);
    CHECK_INT_EQ(tk_int(&srv, "ZCARD %s", "redisson_lock_timeout:{ff:intr}"), 0);
    CHECK_INT_EQ(rlk_fairlock_unlock(h), RLK_OK);
    rlk_fairlock_free(f);
    rlk_fairlock_free(h);
    rlk_free(c);
    rlk_free(holder);
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "wait") == 0)
        return child_wait(argv[2], argv[3], atoll(argv[4]), atoll(argv[5]));
    signal(SIGPIPE, SIG_IGN);
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "fl_fair_faults: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_killed_head_skipped);
    RUN_TEST(test_redisson_head_gives_up);
    RUN_TEST(test_interrupt_cancels);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    return check_summary("fl_fair_faults");
}
