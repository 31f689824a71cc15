/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_sentinel.c - rlk through Redis Sentinel (docs/sentinel.md), on one
 * fixture (master + replica + 3 sentinels on loopback, c/tests/support/sentinel.h):
 *
 *   - connect through the sentinels (a dead sentinel first is passed over;
 *     an unknown master name is an error naming it);
 *   - a plain URL on the replica: a writing call fails at once with
 *     RLK_ERR_READONLY ("is a replica"), also on a held lock and with a
 *     wait; read-only scripts still run;
 *   - SENTINEL FAILOVER while a lock is held (and replicated) and another
 *     client waits: the holder keeps it on the new master (its watchdog
 *     renews it there), the waiter acquires on the new master after the
 *     unlock, never before;
 *   - a replication cut (CLIENT PAUSE WRITE on the replica holds back the
 *     replication stream) then SENTINEL FAILOVER: with min_replicas 1 the
 *     acquisition is refused (RLK_ERR_NOREPLICAS) and leaves no key;
 *     without it the lock is lost at the failover, a second client takes
 *     it on the new master, the holder is told RLK_LOST_GONE (the window
 *     between the two is measured and printed), and the fenced tokens
 *     still increase.
 */
#include "check.h"
#include "sentinel.h"
#include "tk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static rlk_fx_sentinel fx;
/* rediss for a TLS-only group ($RLK_TEST_TLS) */
#define SCHEME (fx.sentinel[0].tls ? "rediss" : "redis")
static char surl[512];          /* redis+sentinel://127.0.0.1:P1,.../itmaster */
static tk_stall stall;

/* SENTINEL FAILOVER, again while it is refused (NOGOODSLAVE: the sentinels
 * take up to 10 s to see a just demoted master as a good replica). 0 / -1. */
static int failover(long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms();

    while (rlk_fx_sentinel_failover(&fx, 20000) != 0) {
        if (rlk_fx_now_ms() - t0 > timeout_ms)
            return -1;
        rlk_fx_sleep_ms(500);
    }
    return 0;
}

static const char *stall_note(void)
{
    return tk_stall_note(&stall);
}

/* After a failover case with failed checks: how far the wall clock moved (Redis and Sentinel
 * time leases and failover steps by it) and what the sentinels did. */
static void post_mortem(int failed0, long long off0)
{
    if (check_checks_failed == failed0)
        return;
    fprintf(stderr, "  the wall clock moved %lld ms against the monotonic one since the "
            "failover began%s\n", tk_wall_offset_ms() - off0, stall_note());
    rlk_fx_sentinel_print_events(&fx, 0);
}

static rlk_client *sn_connect(long long lease_ms, int min_replicas)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = surl;
    o.watchdog_lease_ms = lease_ms;
    o.pool_size = 4;
    o.min_replicas = min_replicas;
    o.min_replicas_timeout_ms = 500;
    c = rlk_connect(&o);
    if (c && rlk_err(c) != RLK_OK) {
        printf("  connect %s: %s\n", surl, rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    return c;
}

/* ------------------------------------------------------------ connect */

static void test_connect(void)
{
    char url[600];
    int m = rlk_fx_sentinel_master(&fx);
    rlk_client *c;
    rlk_lock *l;

    REQUIRE(m >= 0);
    /* A sentinel that is not there first: passed over. */
    snprintf(url, sizeof url, "%s+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/itmaster",
             SCHEME, rlk_fx_refused_port(), fx.sentinel[1].port, fx.sentinel[2].port);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "connect: %s", rlk_errstr(c));
    CHECK_INT_EQ(tk_client_port(c), fx.data[m].port);
    CHECK_STR_PREFIX(rlk_client_url(c), fx.sentinel[0].tls ? "rediss+sentinel://127.0.0.1:"
                                                            : "redis+sentinel://127.0.0.1:");
    l = rlk_lock_new(c, "sn:connect");
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 5000), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&fx.data[m], "sn:connect"), 1);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    rlk_lock_free(l);
    rlk_free(c);

    /* A master name no sentinel monitors. */
    snprintf(url, sizeof url, "%s+sentinel://127.0.0.1:%d/nosuchmaster", SCHEME,
             fx.sentinel[0].port);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_IO);
    CHECK_STR_CONTAINS(rlk_errstr(c), "does not monitor a master named 'nosuchmaster'");
    rlk_free(c);
}

/* ------------------------------------------------------------ a plain URL on the replica */

static void test_replica_plain(void)
{
    int m = rlk_fx_sentinel_master(&fx), r = 1 - m;
    char url[128];
    rlk_client *c, *mc = sn_connect(0, 0);
    rlk_lock *held, *l;
    rlk_semaphore *s;
    long long t0, count = -1;
    int rc;

    REQUIRE(m >= 0 && mc != NULL);
    held = rlk_lock_new(mc, "sn:replica");
    REQUIRE(rlk_lock_try_lock(held, 0, 20000) == RLK_OK);
    REQUIRE(tk_wait_int_at_least(&fx.data[r], 1, 5000, "EXISTS %s", "sn:replica") == 0);
    rlk_fx_url(&fx.data[r], 0, url, sizeof url);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    l = rlk_lock_new(c, "sn:replica");
    /* Held on the master, so the acquire would only read: refused anyway, at once. */
    t0 = rlk_fx_now_ms();
    rc = rlk_lock_try_lock(l, 5000, 0);
    CHECK_INT_EQ(rc, RLK_ERR_READONLY);
    CHECK_STR_CONTAINS(rlk_errstr(c), "is a replica");
    CHECKF(rlk_fx_now_ms() - t0 < 1000, "the refusal took %lld ms (it should not wait)%s",
           rlk_fx_now_ms() - t0, stall_note());
    printf("  on the replica: %s\n", rlk_errstr(c));
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 0), RLK_ERR_READONLY);
    /* Read-only scripts still run there. */
    s = rlk_semaphore_new(c, "sn:replica:sem");
    CHECK_INT_EQ(rlk_semaphore_available(s, &count), RLK_OK);
    CHECK_INT_EQ(count, 0);
    rlk_semaphore_free(s);
    rlk_lock_free(l);
    rlk_free(c);
    CHECK_INT_EQ(rlk_lock_unlock(held), RLK_OK);
    rlk_lock_free(held);
    rlk_free(mc);
}

/* ------------------------------------------------------------ failover, lock replicated */

static void test_failover_held(void)
{
    int m = rlk_fx_sentinel_master(&fx), r = 1 - m, held = 0, failed0 = check_checks_failed;
    rlk_client *a = sn_connect(1500, 0), *b = sn_connect(1500, 0);
    rlk_lock *la, *lb;
    tk_waiter w;
    long long t0, unlock_ns, pttl, off0;

    REQUIRE(m >= 0 && a && b);
    la = rlk_lock_new(a, "sn:held");
    lb = rlk_lock_new(b, "sn:held");
    rlk_lock_set_owner(lb, "sn-waiter");   /* taken in the waiter thread, released here */
    REQUIRE(rlk_lock_try_lock(la, 0, 0) == RLK_OK);    /* watchdog lease 1500 ms */
    REQUIRE(tk_wait_int_at_least(&fx.data[r], 1, 5000, "EXISTS %s", "sn:held") == 0);
    REQUIRE(tk_waiter_start(&w, lb, 40000) == 0);
    REQUIRE(tk_wait_numsub(&fx.data[m], "redisson_lock__channel:{sn:held}", 2, 5000) == 0);

    t0 = rlk_fx_now_ms();
    off0 = tk_wall_offset_ms();
    REQUIRE(failover(30000) == 0);
    printf("  failover (sentinels agree, new master says so): %lld ms\n", rlk_fx_now_ms() - t0);
    CHECKF(tk_wait_client_port(a, fx.data[r].port, 5000) == 0,
           "the holder's client did not follow the switch%s", stall_note());
    CHECKF(tk_wait_client_port(b, fx.data[r].port, 5000) == 0,
           "the waiter's client did not follow%s", stall_note());
    printf("  holder's client on the new master %lld ms after SENTINEL FAILOVER\n",
           rlk_fx_now_ms() - t0);
    /* Two renewal periods on the new master: the holder still has it there. */
    rlk_fx_sleep_ms(1200);
    CHECK_INT_EQ(rlk_lock_is_held_by_me(la, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    pttl = tk_int(&fx.data[r], "PTTL %s", "sn:held");
    CHECKF(pttl > 500, "PTTL on the new master %lld: the watchdog does not renew there%s", pttl,
           stall_note());
    CHECK_INT_EQ(w.rc, 0);      /* still waiting */
    CHECKF(w.acquired_ns == 0, "the waiter acquired while the holder held it");
    unlock_ns = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_lock_unlock(la), RLK_OK);
    tk_waiter_join(&w);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECKF(w.acquired_ns >= unlock_ns, "the waiter acquired %lld us before the unlock",
           (unlock_ns - w.acquired_ns) / 1000);
    printf("  waiter acquired on the new master %lld ms after the unlock\n",
           (w.acquired_ns - unlock_ns) / 1000000);
    CHECK_INT_EQ(tk_key_exists(&fx.data[r], "sn:held"), 1);
    CHECK_INT_EQ(rlk_lock_unlock(lb), RLK_OK);
    rlk_lock_free(la);
    rlk_lock_free(lb);
    rlk_free(a);
    rlk_free(b);
    CHECKF(rlk_fx_sentinel_wait_demoted(&fx, m, 30000) == 0, "the old master was not demoted");
    post_mortem(failed0, off0);
}

/* ------------------------------------------------------------ failover, replication cut */

typedef struct lost_note {
    atomic_llong at_ns;
    atomic_int reason;
} lost_note;

static void on_lost(const char *name, const char *owner, int reason, void *ud)
{
    lost_note *n = ud;

    (void)name;
    (void)owner;
    atomic_store(&n->reason, reason);
    atomic_store(&n->at_ns, rlk_fx_now_ns());
}

static void test_failover_cut(void)
{
    int m = rlk_fx_sentinel_master(&fx), r = 1 - m;
    rlk_client *a = sn_connect(3000, 0), *b = sn_connect(3000, 0);
    rlk_fenced *fa, *fb;
    lost_note lost = {0};
    long long ta = 0, tb = 0, t0, b_ns, window_ms, off0;
    int failed0 = check_checks_failed;
    long long pause_ms = getenv("RLK_IT_PAUSE_MS") ? atoll(getenv("RLK_IT_PAUSE_MS")) : 2500;
    redisReply *rr;

    REQUIRE(m >= 0 && a && b);
    rlk_set_lost_callback(a, on_lost, &lost);
    fa = rlk_fenced_new(a, "sn:cut");
    fb = rlk_fenced_new(b, "sn:cut");
    CHECKF(rlk_fx_sentinel_wait_promotable(&fx, 30000) == 0, "the replica never became promotable");
    /* Hold back the replication stream on the replica (its master link is
     * a client too): what the master writes now is not acknowledged. */
    rr = rlk_fx_command(&fx.data[r], "CLIENT PAUSE %lld WRITE", pause_ms);
    REQUIRE(rr && rr->type == REDIS_REPLY_STATUS);
    freeReplyObject(rr);
    {
        rlk_client *w = sn_connect(3000, 1);
        rlk_lock *lw = w ? rlk_lock_new(w, "sn:cut:wait") : NULL;

        REQUIRE(lw != NULL);
        CHECK_INT_EQ(rlk_lock_try_lock(lw, 0, 0), RLK_ERR_NOREPLICAS);
        printf("  min_replicas 1, replica cut off: %s\n", rlk_errstr(w));
        CHECK_INT_EQ(tk_key_exists(&fx.data[m], "sn:cut:wait"), 0);
        rlk_lock_free(lw);
        rlk_free(w);
    }
    rr = rlk_fx_command(&fx.data[r], "CLIENT UNPAUSE");
    if (rr)
        freeReplyObject(rr);
    REQUIRE(rlk_fenced_try_lock(fa, 0, 0, &ta) == RLK_OK);
    /* The cut: the lock's writes never reach the replica. Modelled exactly by
     * removing them there (replica-read-only off for the two DELs: local, not
     * propagated) once they have arrived, so the promotion cannot race the
     * replication stream as a pause would. The token key goes too: tokens must
     * still increase (they are at least the server's TIME in microseconds). */
    CHECK(tk_wait_int_at_least(&fx.data[r], 1, 5000, "EXISTS %s", "sn:cut") == 0);
    CHECK(tk_command_ok(&fx.data[r], "CONFIG SET replica-read-only no") == 0);
    CHECK(tk_command_ok(&fx.data[r], "DEL sn:cut redisson_lock_token:{sn:cut}") == 0);
    CHECK(tk_command_ok(&fx.data[r], "CONFIG SET replica-read-only yes") == 0);
    t0 = rlk_fx_now_ms();
    off0 = tk_wall_offset_ms();
    REQUIRE(failover(30000) == 0);
    printf("  failover with the replica cut off: %lld ms\n", rlk_fx_now_ms() - t0);
    CHECK_INT_EQ(tk_key_exists(&fx.data[r], "sn:cut"), 0);     /* not carried over */
    /* A second client takes it on the new master (once the pause ends). */
    CHECK_INT_EQ(rlk_fenced_try_lock(fb, 15000, 0, &tb), RLK_OK);
    b_ns = rlk_fx_now_ns();
    CHECKF(tb > ta, "tokens: %lld then %lld across the failover", ta, tb);
    printf("  fenced tokens across the failover: %lld then %lld (+%lld)\n", ta, tb, tb - ta);
    /* The first holder is told, at the latest a renewal period later. */
    for (long long w0 = rlk_fx_now_ms(); !atomic_load(&lost.at_ns) && rlk_fx_now_ms() - w0 < 10000;)
        rlk_fx_sleep_ms(5);
    CHECKF(atomic_load(&lost.reason) == RLK_LOST_GONE || atomic_load(&lost.reason) == RLK_LOST_EXPIRED,
           "lost reason %d", atomic_load(&lost.reason));
    printf("  lost reason: %s\n", atomic_load(&lost.reason) == RLK_LOST_GONE ? "gone" : "expired");
    window_ms = atomic_load(&lost.at_ns) ? (atomic_load(&lost.at_ns) - b_ns) / 1000000 : -1;
    printf("  holder told lost %lld ms %s the second holder acquired\n",
           window_ms < 0 ? -window_ms : window_ms, window_ms < 0 ? "before" : "after");
    CHECKF(atomic_load(&lost.at_ns) != 0 && window_ms <= 3000,
           "the holder was told lost %lld ms after the second acquisition (bound 3000)%s",
           window_ms, stall_note());
    CHECK_INT_EQ(rlk_fenced_unlock(fa), RLK_ERR_NOT_OWNER);
    CHECKF(rlk_fenced_unlock(fb) == RLK_OK, "unlock on the new master (%d, client on %d): %s",
           fx.data[r].port, tk_client_port(b), rlk_errstr(b));
    rlk_fenced_free(fa);
    rlk_fenced_free(fb);
    rlk_free(a);
    rlk_free(b);
    CHECKF(rlk_fx_sentinel_wait_demoted(&fx, m, 30000) == 0, "the old master was not demoted");
    post_mortem(failed0, off0);
}

int main(void)
{
    char urls[256];

    if (rlk_fx_sentinel_start_quick(&fx, "itmaster") != 0) {
        printf("it_sentinel: cannot start the sentinel fixture\n");
        return 1;
    }
    printf("  fixture up in %lld ms\n", fx.start_ms);
    snprintf(surl, sizeof surl, "%s+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/itmaster",
             SCHEME, fx.sentinel[0].port, fx.sentinel[1].port, fx.sentinel[2].port);
    (void)urls;
    tk_stall_start(&stall);
    RUN_TEST(test_connect);
    RUN_TEST(test_replica_plain);
    RUN_TEST(test_failover_cut);
    RUN_TEST(test_failover_held);
    tk_stall_stop(&stall);
    rlk_fx_sentinel_stop(&fx);
    return check_summary("it_sentinel");
}
