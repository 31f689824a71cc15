/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_fenced_redisson.c - fencing tokens never go back when Java Redisson
 * clients share a fenced lock with rlk.
 *
 * The "Redisson client" is a thread that runs Redisson 3.2x's fenced acquire
 * (RedissonFencedLock.tryLockInnerAsync: INCR of redisson_lock_token:{name},
 * which never sets or renews a TTL on it) and Redisson's unlock
 * (RedissonLock.unlockInnerAsync as of 3.17, without 3.2x's unlock latch,
 * which rlk does not have either) with EVAL on its own hiredis connection.
 * Before every Redisson acquire it lets the token key's TTL "run out": if
 * the key has a TTL (rlk before this fix: lease + 1 h after its last call),
 * it is cut to 1 ms and the thread waits until the key is gone, as an hour
 * of quiet would have done. With a token key that never expires there is
 * nothing to cut.
 *
 *   - alternating: 20 rounds of rlk acquire/release, then Redisson
 *     acquire/release; every token is larger than the one before;
 *   - contention: an rlk thread and the Redisson thread take the lock 60
 *     times each, concurrently; holds stamped with CLOCK_MONOTONIC by the
 *     holders themselves: 0 overlaps, and tokens in acquisition order
 *     strictly increase (0 regressions).
 *
 * Fails on the code before the fix: after the first "expiry" Redisson's
 * INCR starts at 1, below rlk's TIME-based tokens.
 */
#include "check.h"
#include "fl_util.h"
#include "runtime/rt.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME "fr:ledger"
#define TOKEN_KEY "redisson_lock_token:{fr:ledger}"
#define CHANNEL "redisson_lock__channel:{fr:ledger}"
#define ITERS 60
#define LEASE_MS 10000

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* RedissonFencedLock.tryLockInnerAsync (Redisson 3.2x), ARGV: lease, owner. */
static const char redisson_acquire[] =
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "local token = redis.call('incr', KEYS[2]);"
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return {-1, token}; "
    "end; "
    "return {redis.call('pttl', KEYS[1]), -1};";

/* RedissonLock.unlockInnerAsync (3.17), ARGV: message, lease, owner. */
static const char redisson_release[] =
    "if (redis.call('hexists', KEYS[1], ARGV[3]) == 0) then return nil; end; "
    "local counter = redis.call('hincrby', KEYS[1], ARGV[3], -1); "
    "if (counter > 0) then redis.call('pexpire', KEYS[1], ARGV[2]); return 0; "
    "else redis.call('del', KEYS[1]); redis.call('publish', KEYS[2], ARGV[1]); return 1; end; "
    "return nil;";

typedef struct redisson {
    redisContext *rc;
    const char *owner;
    int expiries;               /* token-key TTLs cut (old code only) */
    int errors;
} redisson;

/* Lets a token key with a TTL expire now (an hour passing), bounded. */
static void redisson_expire_token_key(redisson *r)
{
    redisReply *rep = redisCommand(r->rc, "PTTL %s", TOKEN_KEY);
    long long pttl = rep && rep->type == REDIS_REPLY_INTEGER ? rep->integer : -3;
    long long until = rlk_fx_now_ms() + 5000;

    freeReplyObject(rep);
    if (pttl <= 0)
        return;
    r->expiries++;
    freeReplyObject(redisCommand(r->rc, "PEXPIRE %s 1", TOKEN_KEY));
    while (rlk_fx_now_ms() < until) {
        rep = redisCommand(r->rc, "EXISTS %s", TOKEN_KEY);
        int gone = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 0;

        freeReplyObject(rep);
        if (gone)
            return;
        rlk_fx_sleep_ms(2);
    }
}

/* Redisson's acquire, retried (bounded poll) until it gets the lock; the
 * token, or -1 on an error or after 20 s. */
static long long redisson_lock(redisson *r)
{
    long long until = rlk_fx_now_ms() + 20000;

    redisson_expire_token_key(r);
    while (rlk_fx_now_ms() < until) {
        redisReply *rep = redisCommand(r->rc, "EVAL %s 2 %s %s %d %s", redisson_acquire, NAME,
                                       TOKEN_KEY, LEASE_MS, r->owner);
        long long first, second;

        if (!rep || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
            tk_say("redisson acquire: %s", rep && rep->type == REDIS_REPLY_ERROR ? rep->str
                   : "bad reply");
            freeReplyObject(rep);
            return -1;
        }
        first = rep->element[0]->integer;
        second = rep->element[1]->integer;
        freeReplyObject(rep);
        if (first == -1)
            return second;
        rlk_fx_sleep_ms(1);     /* a waiting Redisson client would sleep on its channel */
    }
    return -1;
}

static int redisson_unlock(redisson *r)
{
    redisReply *rep = redisCommand(r->rc, "EVAL %s 2 %s %s 0 %d %s", redisson_release, NAME,
                                   CHANNEL, LEASE_MS, r->owner);
    int ok = rep && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1;

    freeReplyObject(rep);
    return ok ? 0 : -1;
}

/* ------------------------------------------------------------ alternating */

static void test_alternating(void)
{
    rlk_client *c = tk_connect(url, 0, 1);
    redisson r = {rlk_fx_connect(&srv), "4b1d-redisson-uuid:77", 0, 0};
    long long last = 0;
    rlk_fenced *f;

    REQUIRE(c && r.rc);
    f = rlk_fenced_new(c, NAME);
    REQUIRE(f);
    for (int i = 0; i < 20; i++) {
        long long t = 0, t2;

        REQUIRE_INT_EQ(rlk_fenced_try_lock(f, 5000, LEASE_MS, &t), RLK_OK);
        CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);
        CHECKF(t > last, "round %d: rlk token %lld after %lld", i, t, last);
        CHECKF(tk_int(&srv, "PTTL %s", TOKEN_KEY) == -1, "round %d: token key has a TTL of %lld ms",
               i, tk_int(&srv, "PTTL %s", TOKEN_KEY));
        last = t;
        t2 = redisson_lock(&r);
        REQUIREF(t2 >= 0, "round %d: redisson acquire failed", i);
        CHECK_INT_EQ(redisson_unlock(&r), 0);
        CHECKF(t2 > last, "round %d: Redisson (INCR) token %lld after rlk's %lld%s", i, t2, last,
               r.expiries ? " (after its token key expired)" : "");
        last = t2;
    }
    CHECK_INT_EQ(r.expiries, 0);
    tk_say("alternating: 40 tokens, last %lld, %d token-key expiries", last, r.expiries);
    rlk_fenced_free(f);
    rlk_free(c);
    redisFree(r.rc);
}

/* ------------------------------------------------------------ contention */

typedef struct side {
    tk_hold recs[ITERS];
    int n;
    int errors;
    rlk_client *c;          /* rlk side */
    redisson *r;            /* Redisson side */
} side;

static void *rlk_side(void *arg)
{
    side *s = arg;
    rlk_fenced *f = rlk_fenced_new(s->c, NAME);

    for (int i = 0; f && i < ITERS; i++) {
        long long token = 0;
        tk_hold *rec = &s->recs[s->n];

        if (rlk_fenced_try_lock(f, 20000, LEASE_MS, &token) != RLK_OK) {
            s->errors++;
            continue;
        }
        rec->start_ns = rlk_fx_now_ns();
        tk_spin_ns(50000);
        rec->end_ns = rlk_fx_now_ns();
        rec->value = token;
        rec->kind = TK_HOLD_EXCL;
        rec->thread = 0;
        rec->pid = 1;
        s->n++;
        if (rlk_fenced_unlock(f) != RLK_OK)
            s->errors++;
    }
    if (!f)
        s->errors++;
    rlk_fenced_free(f);
    return NULL;
}

static void *redisson_side(void *arg)
{
    side *s = arg;

    for (int i = 0; i < ITERS; i++) {
        tk_hold *rec = &s->recs[s->n];
        long long token = redisson_lock(s->r);

        if (token < 0) {
            s->errors++;
            continue;
        }
        rec->start_ns = rlk_fx_now_ns();
        tk_spin_ns(50000);
        rec->end_ns = rlk_fx_now_ns();
        rec->value = token;
        rec->kind = TK_HOLD_EXCL;
        rec->thread = 1;
        rec->pid = 2;
        s->n++;
        if (redisson_unlock(s->r) != 0)
            s->errors++;
    }
    return NULL;
}

static void test_contention(void)
{
    redisson r = {rlk_fx_connect(&srv), "4b1d-redisson-uuid:78", 0, 0};
    side *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b);
    tk_hold all[2 * ITERS];
    pthread_t ta, tb;
    size_t n = 0;
    int regressions = 0;
    long overlaps;

    REQUIRE(a && b && r.rc);
    a->c = tk_connect(url, 0, 1);
    b->r = &r;
    REQUIRE(a->c);
    tk_stall_reset(&stall);
    pthread_create(&ta, NULL, rlk_side, a);
    pthread_create(&tb, NULL, redisson_side, b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    CHECK_INT_EQ(a->errors, 0);
    CHECK_INT_EQ(b->errors, 0);
    for (int i = 0; i < a->n; i++)
        all[n++] = a->recs[i];
    for (int i = 0; i < b->n; i++)
        all[n++] = b->recs[i];
    overlaps = tk_holds_check(all, n, 1).conflicts;     /* sorts by start */
    for (size_t i = 1; i < n; i++)
        if (all[i].value <= all[i - 1].value) {
            if (regressions++ < 3)
                tk_say("regression: %s token %lld after %s token %lld",
                       all[i].pid == 2 ? "Redisson" : "rlk", all[i].value,
                       all[i - 1].pid == 2 ? "Redisson" : "rlk", all[i - 1].value);
        }
    tk_say("contention: %zu holds (%d rlk, %d Redisson), %ld overlaps, %d regressions, "
           "%d token-key expiries", n, a->n, b->n, overlaps, regressions, r.expiries);
    CHECKF(overlaps == 0, "%ld overlapping holds%s", overlaps, tk_stall_note(&stall));
    CHECK_INT_EQ(regressions, 0);
    CHECK_INT_EQ(n, 2 * ITERS);
    rlk_free(a->c);
    redisFree(r.rc);
    free(a);
    free(b);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "fl_fenced_redisson: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_alternating);
    RUN_TEST(test_contention);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    return check_summary("fl_fenced_redisson");
}
