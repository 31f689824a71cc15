/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fence_failover.c - fencing tokens across a Sentinel failover that loses
 * the last acquisitions (docs/locks/fenced.md, "Tokens across a failover").
 *
 * One Sentinel group (master + replica + 3 sentinels, c/tests/support/sentinel.h):
 *
 *   1. Two names take tokens on the master, replicated:
 *      "fo:rlk" through rlk (fenced/acquire: max(last + 1, TIME in us)) with
 *      min_replicas 1, so each acquisition returns only once the replica
 *      acknowledged it (WAIT 1 behind the script, on its connection), and
 *      "fo:incr", the control, through Redisson's INCR-only acquire script on
 *      one connection that then sends WAIT 1 itself. WAIT counts the replicas
 *      that have the *calling connection's* last write: a WAIT on a connection
 *      that wrote nothing answers at once with every online replica, acked or
 *      not (Redis 7.0 right after a diskless full sync may hold the stream to
 *      a replica it lists as online for up to a second, until the replica's
 *      next REPLCONF ACK; a test that cut the link then found nothing there).
 *   2. The cut: the replica is stopped (SIGSTOP) and the master drops its
 *      link (CLIENT KILL TYPE replica), so what the master writes next never
 *      leaves it. Each name takes 2 more tokens there: the lost ones.
 *   3. The master is killed (SIGKILL), the replica resumed, and the
 *      sentinels promote it. Asserted: its token keys hold the tokens of
 *      step 1 (the acquisitions of step 2 were really lost).
 *      A client with min_replicas 1 (WAIT 1 behind every write) is refused
 *      RLK_ERR_NOREPLICAS there: no token handed out, the hold rolled back.
 *   4. Each name takes one token on the new master. A resource (rlk_fence_check)
 *      that saw every token issued so far must accept it:
 *        fo:rlk  - larger than every lost token (the new master's clock has
 *                  passed them): accepted;
 *        fo:incr - the control: INCR counts on from the replicated value, a
 *                  token at or below a lost one: the test must find it.
 *
 * The only clock here is the machine's: the test shows the mechanism, the
 * docs state the bound for clocks that differ. The sentinels run with the
 * fixture's quick periods (rlk_fx_sentinel_start_quick).
 */
#include "check.h"
#include "sentinel.h"
#include "tk_util.h"

#include <rlk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LOST 2

static rlk_fx_sentinel fx;

/* RedissonFencedLock.tryLockInnerAsync (Redisson 3.2x), ARGV: lease, owner. */
static const char incr_acquire[] =
    "if ((redis.call('exists', KEYS[1]) == 0) "
    "or (redis.call('hexists', KEYS[1], ARGV[2]) == 1)) then "
    "local token = redis.call('incr', KEYS[2]);"
    "redis.call('hincrby', KEYS[1], ARGV[2], 1); "
    "redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return {-1, token}; "
    "end; "
    "return {redis.call('pttl', KEYS[1]), -1};";

/* The control's acquisition (then its release: DEL of the hash) on ctx. -1 on failure. */
static long long incr_token(redisContext *ctx)
{
    redisReply *r = redisCommand(ctx, "EVAL %s 2 %s %s %d %s", incr_acquire, "fo:incr",
                                 "redisson_lock_token:{fo:incr}", 60000, "ctl:1");
    long long t = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER)
        t = r->element[1]->integer;
    else
        printf("  control acquire: %s\n", r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    r = redisCommand(ctx, "DEL fo:incr");
    if (!r || r->type != REDIS_REPLY_INTEGER) {
        printf("  control release: %s\n", r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
        t = -1;
    }
    if (r)
        freeReplyObject(r);
    return t;
}

/* rlk's acquisition and release on the client's server. -1 on failure; with
 * acked, also when the replica did not acknowledge the release. */
static long long rlk_token(rlk_client *c, int acked)
{
    rlk_fenced *f = rlk_fenced_new(c, "fo:rlk");
    long long t = -1;

    if (rlk_fenced_try_lock(f, 0, 60000, &t) != RLK_OK) {
        printf("  rlk acquire: %s\n", rlk_errstr(c));
        t = -1;
    } else if (rlk_fenced_unlock(f) != RLK_OK) {
        printf("  rlk release: %s\n", rlk_errstr(c));
    } else if (acked && rlk_last_replica_acks() != 1) {
        printf("  rlk release: %d replicas acknowledged it, not 1\n", rlk_last_replica_acks());
        t = -1;
    }
    rlk_fenced_free(f);
    return t;
}

/* GET key as an integer; -1 when missing or not one. */
static long long get_ll(const rlk_fx_server *s, const char *key)
{
    redisReply *r = rlk_fx_command(s, "GET %s", key);
    long long v = -1;

    if (r && r->type == REDIS_REPLY_STRING)
        v = atoll(r->str);
    if (r)
        freeReplyObject(r);
    return v;
}

static rlk_client *connect_to(const rlk_fx_server *s)
{
    char url[256];

    if (rlk_fx_url(s, 0, url, sizeof url) != 0)
        return NULL;
    return tk_connect(url, 30000, 2);
}

/* A client with replica acknowledgement: every writing script followed by WAIT 1 timeout_ms. */
static rlk_client *connect_acked(const rlk_fx_server *s, int timeout_ms)
{
    char url[256];
    rlk_options o;
    rlk_client *c;

    if (rlk_fx_url(s, 0, url, sizeof url) != 0)
        return NULL;
    rlk_options_init(&o);
    o.url = url;
    o.min_replicas = 1;
    o.min_replicas_timeout_ms = timeout_ms;
    c = rlk_connect(&o);
    if (c && rlk_err(c) != RLK_OK) {
        printf("  connect %s: %s\n", url, rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    return c;
}

/* The replication offsets of INFO replication (master_repl_offset, a replica's
 * acknowledged offset, second_repl_offset after a promotion): one line. */
static void print_offsets(const rlk_fx_server *s, const char *what)
{
    redisReply *r = rlk_fx_command(s, "INFO replication");
    char *save = NULL, *line;

    printf("  %s:", what);
    if (r && r->type == REDIS_REPLY_STRING)
        for (line = strtok_r(r->str, "\r\n", &save); line; line = strtok_r(NULL, "\r\n", &save))
            if (strncmp(line, "master_repl_offset:", 19) == 0 || strncmp(line, "slave0:", 7) == 0 ||
                strncmp(line, "second_repl_offset:", 19) == 0)
                printf(" %s", line);
    printf("\n");
    if (r)
        freeReplyObject(r);
}

static void test_failover_lost_tokens(void)
{
    rlk_fence_state res_rlk = RLK_FENCE_STATE_INIT, res_incr = RLK_FENCE_STATE_INIT;
    long long rep_rlk = -1, rep_incr = -1, lost_rlk[LOST], lost_incr[LOST], t, t0;
    long long after_rlk, after_incr, max_lost_rlk = 0, max_lost_incr = 0;
    rlk_client *c;
    redisContext *w;
    redisReply *r;
    int i;

    REQUIRE(rlk_fx_sentinel_master(&fx) == 0);

    /* 1. replicated tokens: rlk's through a client that waits for the
     * replica behind every write, the control's on w, then WAIT 1 on w (its
     * last write comes after every write above: the replica has them all). */
    c = connect_acked(&fx.data[0], 3000);
    w = rlk_fx_connect(&fx.data[0]);
    REQUIRE(c != NULL && w != NULL);
    t0 = rlk_fx_now_ms();
    for (i = 0; i < 3; i++) {
        rep_rlk = rlk_token(c, 1);
        rep_incr = incr_token(w);
        REQUIRE(rep_rlk > 0 && rep_incr > 0);
        CHECK(rlk_fence_check(&res_rlk, (uint64_t)rep_rlk) == RLK_OK);
        CHECK(rlk_fence_check(&res_incr, (uint64_t)rep_incr) == RLK_OK);
    }
    rlk_free(c);
    r = redisCommand(w, "WAIT 1 5000");
    redisFree(w);
    REQUIREF(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1,
             "WAIT 1 on the connection that wrote: the replica did not acknowledge");
    freeReplyObject(r);
    printf("  replicated: rlk token %lld, control (INCR) token %lld (acknowledged in %lld ms)\n",
           rep_rlk, rep_incr, rlk_fx_now_ms() - t0);

    /* 2. the cut, and the acquisitions only the master sees */
    REQUIRE(rlk_fx_pause(&fx.data[1]) == 0);
    print_offsets(&fx.data[0], "master at the cut");
    c = connect_to(&fx.data[0]);
    w = rlk_fx_connect(&fx.data[0]);
    REQUIRE(c != NULL && w != NULL);
    r = rlk_fx_command(&fx.data[0], "CLIENT KILL TYPE replica");
    REQUIREF(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1, "CLIENT KILL TYPE replica");
    freeReplyObject(r);
    for (i = 0; i < LOST; i++) {
        lost_rlk[i] = rlk_token(c, 0);
        lost_incr[i] = incr_token(w);
        REQUIRE(lost_rlk[i] > 0 && lost_incr[i] > 0);
        CHECK(rlk_fence_check(&res_rlk, (uint64_t)lost_rlk[i]) == RLK_OK);
        CHECK(rlk_fence_check(&res_incr, (uint64_t)lost_incr[i]) == RLK_OK);
        if (lost_rlk[i] > max_lost_rlk)
            max_lost_rlk = lost_rlk[i];
        if (lost_incr[i] > max_lost_incr)
            max_lost_incr = lost_incr[i];
    }
    printf("  lost on the master: rlk tokens %lld %lld, control %lld %lld\n", lost_rlk[0], lost_rlk[1],
           lost_incr[0], lost_incr[1]);
    rlk_free(c);
    redisFree(w);
    /* With replica acknowledgement the same cut hands out no token at all. */
    {
        rlk_client *ca = connect_acked(&fx.data[0], 300);
        rlk_fenced *fa = ca ? rlk_fenced_new(ca, "fo:acked") : NULL;

        REQUIRE(fa != NULL);
        t = 0;
        CHECK_INT_EQ(rlk_fenced_try_lock(fa, 0, 60000, &t), RLK_ERR_NOREPLICAS);
        printf("  min_replicas 1 during the cut: %s\n", rlk_errstr(ca));
        CHECK_INT_EQ(tk_key_exists(&fx.data[0], "fo:acked"), 0);   /* rolled back */
        rlk_fenced_free(fa);
        rlk_free(ca);
    }

    /* 3. kill -9 the master, resume the replica, let the sentinels promote it */
    t0 = rlk_fx_now_ms();
    REQUIRE(rlk_fx_crash(&fx.data[0]) == 0);
    REQUIRE(rlk_fx_resume(&fx.data[1]) == 0);
    while (rlk_fx_sentinel_master(&fx) != 1) {
        REQUIREF(rlk_fx_now_ms() - t0 < 40000, "the sentinels did not promote the replica in 40 s");
        rlk_fx_sleep_ms(50);
    }
    printf("  failover (master killed -> replica promoted): %lld ms\n", rlk_fx_now_ms() - t0);
    print_offsets(&fx.data[1], "promoted replica");
    t = get_ll(&fx.data[1], "redisson_lock_token:{fo:rlk}");
    REQUIREF(t == rep_rlk, "the new master's rlk token key holds %lld, not the replicated %lld: "
             "the cut did not lose the acquisitions", t, rep_rlk);
    t = get_ll(&fx.data[1], "redisson_lock_token:{fo:incr}");
    REQUIREF(t == rep_incr, "the new master's control token key holds %lld, not the replicated %lld",
             t, rep_incr);

    /* 4. the next token on each name */
    c = connect_to(&fx.data[1]);
    w = rlk_fx_connect(&fx.data[1]);
    REQUIRE(c != NULL && w != NULL);
    after_rlk = rlk_token(c, 0);
    after_incr = incr_token(w);
    rlk_free(c);
    redisFree(w);
    REQUIRE(after_rlk > 0 && after_incr > 0);
    printf("  after the failover: rlk token %lld (%+lld against the largest lost one), "
           "control %lld (%+lld)\n", after_rlk, after_rlk - max_lost_rlk, after_incr,
           after_incr - max_lost_incr);
    CHECKF(after_rlk > max_lost_rlk, "rlk token %lld after the failover is not above the lost %lld",
           after_rlk, max_lost_rlk);
    CHECKF(rlk_fence_check(&res_rlk, (uint64_t)after_rlk) == RLK_OK,
           "the resource refused the new holder's token %lld (highest %llu)", after_rlk,
           (unsigned long long)res_rlk.highest);
    /* The control must show what the test guards against. */
    CHECKF(after_incr <= max_lost_incr, "control: INCR gave %lld after the lost %lld: the test "
           "would not see a token going back", after_incr, max_lost_incr);
    CHECKF(rlk_fence_check(&res_incr, (uint64_t)after_incr) == RLK_ERR_FENCED,
           "control: the resource accepted the INCR token %lld (highest %llu)", after_incr,
           (unsigned long long)res_incr.highest);
    printf("  resource: rlk's new holder accepted; the control's refused (token %lld below %llu)\n",
           after_incr, (unsigned long long)res_incr.highest);
}

int main(void)
{
    if (rlk_fx_sentinel_start_quick(&fx, "fomaster") != 0) {
        printf("fence_failover: cannot start the sentinel fixture\n");
        return 1;
    }
    printf("  fixture up in %lld ms\n", fx.start_ms);
    RUN_TEST(test_failover_lost_tokens);
    rlk_fx_sentinel_stop(&fx);
    return check_summary("fence_failover");
}
