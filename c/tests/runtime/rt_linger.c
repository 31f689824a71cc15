/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_linger.c - a watchdog hold's channel lingers after its release (runtime/sub.h,
 * rlk_sub_leave_quiet), through the C API against a real redis-server:
 *   - the same client taking the reentrant lock again and again (watchdog lease) sends one
 *     SUBSCRIBE and no UNSUBSCRIBE, not one of each per hold;
 *   - a hold taken again while its channel lingers is told of a force unlock within a round
 *     trip, with no wait for a subscription: it is confirmed already;
 *   - the echo of a hold's own release (its "0", heard while the next hold is already joined)
 *     makes no renewal;
 *   - another client's release on a lingering channel ends the linger at once (a contended lock
 *     would otherwise have this client hear every handoff), and the next hold subscribes again;
 *   - lingering is bounded in time (rlk_sub_linger_ms) and in channels (rlk_sub_linger_max);
 *   - the echoes of a hold's own releases do not wake the subscriber's loop (plain TCP: the
 *     socket's low-water mark is raised by each one), and yet a force unlock of a hold, a
 *     waiter's "0" and a force unlock of another thread's hold, all coming behind such echoes,
 *     are heard within a round trip.
 * The bounds are set small (or long) here through the test knobs, when the build has them.
 */
#include "check.h"
#include "tk_util.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/rt.h"
#include "runtime/sub.h"

#define FORCE_BOUND_MS 500      /* a round trip, with room for scheduling noise */
#define LINGER_MAX 256          /* channels lingering at once: the default */

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

static const char *stall_note(void)
{
    return tk_stall_max_gap_ms(&stall) > TK_STALL_MS ? " - a scheduling stall, not a lock bug"
                                                     : "";
}

/* The bounds for the next client's subscriber (a test's clients are made after this). */
static void linger_bounds(long long ms, int max)
{
#ifdef RLK_SUB_LINGER_MAX
    rlk_sub_linger_ms = ms;
    rlk_sub_linger_max = max;
#else
    (void)ms;
    (void)max;
#endif
}

static rlk_runtime_stats stats(rlk_client *c)
{
    rlk_runtime_stats s;

    memset(&s, 0, sizeof s);
    (void)rlk_runtime_stats_get(c, &s);
    return s;
}

/* Takes and releases name with the watchdog lease n times on c; 0 or the first failure. */
static int pairs(rlk_client *c, const char *name, int n)
{
    rlk_lock *l = rlk_lock_new(c, name);
    int rc = l ? RLK_OK : -1;

    for (int i = 0; i < n && rc == RLK_OK; i++)
        if ((rc = rlk_lock_lock(l, 0)) == RLK_OK)
            rc = rlk_lock_unlock(l);
    rlk_lock_free(l);
    return rc;
}

/* Waits (3 s at most) until c's subscriber has read the server's confirmation of chan, and
 * leaves it lingering again: a release sent before the client read it may or may not have its
 * echo come (up to 4 such are counted, and a message is taken for one), so a test that needs a
 * release's echo counted for sure releases only after this. 0 once confirmed, -1 if not. */
static int wait_confirmed(rlk_client *c, const char *chan)
{
    rlk_rt *rt = rlk_rt_get(c);
    rlk_sub_chan *ch;
    unsigned long long mark;

    for (int i = 0; rt && i < 300; i++) {
        if (rlk_sub_try_join(rt->sub, chan, NULL, &ch, &mark)) {
            rlk_sub_leave(rt->sub, ch);
            return 0;
        }
        rlk_fx_sleep_ms(10);
    }
    return -1;
}

/* ------------------------------------------------------------ the same lock again */

static void test_retake_subscribes_once(void)
{
    const char *chan = "redisson_lock__channel:{lg:again}";
    rlk_client *c;
    rlk_runtime_stats a, b;

    linger_bounds(60000, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL);
    CHECK_INT_EQ(pairs(c, "lg:again", 1), RLK_OK);
    CHECKF(tk_wait_numsub(&srv, chan, 1, 3000) == 0, "the channel is not subscribed after the "
           "hold's release (it lingers)");
    /* (A hold released before its SUBSCRIBE was confirmed may or may not hear its echo: one
     * more hold, released once subscribed, and the client knows what to expect.) */
    CHECK_INT_EQ(pairs(c, "lg:again", 1), RLK_OK);
    a = stats(c);
    CHECK_INT_EQ(pairs(c, "lg:again", 100), RLK_OK);
    b = stats(c);
    printf("  100 holds: %llu SUBSCRIBE, %llu UNSUBSCRIBE (%llu subscriber connections lost)\n",
           b.subscribes - a.subscribes, b.unsubscribes - a.unsubscribes, b.sub_drops - a.sub_drops);
    /* A subscriber connection lost meanwhile (a stalled machine: its keepalive unanswered)
     * subscribes again once: that is not a hold's SUBSCRIBE. */
    CHECKF(b.subscribes - a.subscribes <= b.sub_drops - a.sub_drops &&
               b.unsubscribes - a.unsubscribes == 0,
           "100 holds of one lock sent %llu SUBSCRIBE and %llu UNSUBSCRIBE (want 0: the channel "
           "lingers subscribed from the first; %llu subscriber connections lost)",
           b.subscribes - a.subscribes, b.unsubscribes - a.unsubscribes,
           b.sub_drops - a.sub_drops);
    CHECK_INT_EQ(tk_numsub(&srv, chan), 1);
    rlk_free(c);
}

/* A force unlock of a hold taken while its channel lingers: heard at once, no wait for a
 * SUBSCRIBE first (there is none to wait for). */

typedef struct lost_rec {
    pthread_mutex_t mu;
    tk_latch fired;
    int reason;
    long long at_ns;
} lost_rec;

static void on_lost(const char *name, const char *owner, int reason, void *ud)
{
    lost_rec *g = ud;

    (void)name;
    (void)owner;
    pthread_mutex_lock(&g->mu);
    g->reason = reason;
    g->at_ns = rlk_fx_now_ns();
    pthread_mutex_unlock(&g->mu);
    tk_latch_add(&g->fired, 1);
}

static void test_retake_force_heard(void)
{
    const char *chan = "redisson_lock__channel:{lg:force}";
    rlk_client *c1, *c2;
    rlk_lock *l, *f;
    lost_rec g;
    long long t_force, ms;
    int released = 0;

    linger_bounds(60000, LINGER_MAX);
    memset(&g, 0, sizeof g);
    pthread_mutex_init(&g.mu, NULL);
    tk_latch_init(&g.fired);
    REQUIRE((c1 = tk_connect(url, 0, 1)) != NULL && (c2 = tk_connect(url, 0, 1)) != NULL);
    rlk_set_lost_callback(c1, on_lost, &g);
    REQUIRE((l = rlk_lock_new(c1, "lg:force")) && (f = rlk_lock_new(c2, "lg:force")));
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    CHECK(tk_wait_numsub(&srv, chan, 1, 3000) == 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    /* 50 holds more: their releases' echoes may lie unread, below the subscriber's socket's
     * low-water mark; the force unlock's "0" must wake it all the same. */
    CHECK_INT_EQ(pairs(c1, "lg:force", 50), RLK_OK);
    /* Taken again while the channel lingers, and forced at once. */
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    tk_stall_reset(&stall);
    t_force = rlk_fx_now_ns();
    CHECK(rlk_lock_force_unlock(f, &released) == RLK_OK && released);
    CHECKF(tk_latch_wait(&g.fired, 1, 5000) == 1, "the lost callback did not fire within 5 s of "
           "the force unlock (renewal period 10 s): the hold was not listening");
    ms = g.at_ns > 0 ? (g.at_ns - t_force) / 1000000 : -1;
    printf("  lost callback %lld ms after the force unlock\n", ms);
    CHECKF(ms >= 0 && ms < FORCE_BOUND_MS, "lost callback %lld ms after the force unlock (bound "
           "%d ms; longest scheduling gap %lld ms%s)", ms, FORCE_BOUND_MS,
           tk_stall_max_gap_ms(&stall), stall_note());
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    rlk_lock_free(l);
    rlk_lock_free(f);
    rlk_free(c1);
    rlk_free(c2);
    tk_latch_destroy(&g.fired);
    pthread_mutex_destroy(&g.mu);
}

/* Each release's "0" comes back to the same client's subscriber, often after its next hold of
 * the lock joined the channel (4 threads of one client, each on its own lock, keep its loop busy):
 * it must not make the watchdog renew that hold. */
typedef struct echo_arg {
    rlk_client *c;
    char name[32];
    int rc;
} echo_arg;

static void *echo_thread(void *p)
{
    echo_arg *e = p;

    e->rc = pairs(e->c, e->name, 300);
    return NULL;
}

static void test_echo_no_renewal(void)
{
    rlk_client *c;
    rlk_runtime_stats a, b;
    echo_arg e[4];
    pthread_t th[4];
    char chan[64];

    linger_bounds(60000, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 4)) != NULL);
    for (int i = 0; i < 4; i++) {
        e[i].c = c;
        snprintf(e[i].name, sizeof e[i].name, "lg:echo:%d", i);
        snprintf(chan, sizeof chan, "redisson_lock__channel:{%s}", e[i].name);
        CHECK_INT_EQ(pairs(c, e[i].name, 1), RLK_OK);
        CHECK(tk_wait_numsub(&srv, chan, 1, 3000) == 0);
    }
    a = stats(c);
    for (int i = 0; i < 4; i++)
        REQUIRE(pthread_create(&th[i], NULL, echo_thread, &e[i]) == 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_INT_EQ(e[i].rc, RLK_OK);
    }
    b = stats(c);
    printf("  4 x 300 holds: %llu renewals\n", b.renew_calls - a.renew_calls);
    CHECKF(b.renew_calls - a.renew_calls <= 1, "4 x 300 holds of 30 s leases made %llu renewals: "
           "the releases' own messages made the next holds due", b.renew_calls - a.renew_calls);
    rlk_free(c);
}

/* ------------------------------------------------------------ echoes and the subscriber's loop */

/* A hold's release publishes "0" on the lock's channel, which the same client's subscriber is
 * subscribed to: read, that echo woke the subscriber's loop for nothing once a hold (a context
 * switch a pair). Now a release whose echo is sure to come raises the low-water mark of the
 * subscriber's socket by the echo's bytes: 200 holds wake the loop a few times (when the unread
 * echoes reach the mark's cap, or the keepalive's PING), not 200. */
static void test_echo_no_wakeup(void)
{
    const char *chan = "redisson_lock__channel:{lg:wake}";
    rlk_client *c;
    rlk_runtime_stats a, b;

    linger_bounds(60000, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL);
    CHECK_INT_EQ(pairs(c, "lg:wake", 1), RLK_OK);
    CHECK(tk_wait_numsub(&srv, chan, 1, 3000) == 0);
    CHECK_INT_EQ(pairs(c, "lg:wake", 1), RLK_OK);     /* released once subscribed */
    a = stats(c);
    CHECK_INT_EQ(pairs(c, "lg:wake", 200), RLK_OK);
    b = stats(c);
    printf("  200 holds: %llu subscriber wake-ups with messages, %llu messages read\n",
           b.sub_wakeups - a.sub_wakeups, b.sub_messages - a.sub_messages);
    CHECKF(b.sub_wakeups - a.sub_wakeups <= 20, "200 holds of one lock woke the subscriber's "
           "loop %llu times with messages (want at most 20: their echoes are not woken for)",
           b.sub_wakeups - a.sub_wakeups);
    CHECK_INT_EQ((long long)(b.renew_calls - a.renew_calls), 0);
    rlk_free(c);
}

/* A waiter of another lock, on the same client as holds whose echoes lie unread: woken by the
 * holder's release within a round trip (a waiter joined: nothing is skipped). */
typedef struct waiter_arg {
    rlk_client *c;
    tk_latch joined;
    int rc;
    long long woke_ns;
} waiter_arg;

static void *waiter_thread(void *p)
{
    waiter_arg *w = p;
    rlk_lock *l = rlk_lock_new(w->c, "lg:busy");

    tk_latch_add(&w->joined, 1);
    w->rc = l ? rlk_lock_try_lock(l, 10000, 30000) : -1;
    w->woke_ns = rlk_fx_now_ns();
    if (w->rc == RLK_OK)
        (void)rlk_lock_unlock(l);
    rlk_lock_free(l);
    return NULL;
}

static void test_echoes_then_waiter(void)
{
    rlk_client *c1, *c2;
    rlk_lock *held;
    waiter_arg w;
    pthread_t th;
    long long t_rel, ms;

    linger_bounds(60000, LINGER_MAX);
    memset(&w, 0, sizeof w);
    tk_latch_init(&w.joined);
    REQUIRE((c1 = tk_connect(url, 0, 2)) != NULL && (c2 = tk_connect(url, 0, 1)) != NULL);
    REQUIRE((held = rlk_lock_new(c2, "lg:busy")) != NULL);
    CHECK_INT_EQ(rlk_lock_lock(held, 30000), RLK_OK);
    CHECK_INT_EQ(pairs(c1, "lg:echoes", 2), RLK_OK);
    CHECK(tk_wait_numsub(&srv, "redisson_lock__channel:{lg:echoes}", 1, 3000) == 0);
    CHECK_INT_EQ(pairs(c1, "lg:echoes", 50), RLK_OK);
    w.c = c1;
    REQUIRE(pthread_create(&th, NULL, waiter_thread, &w) == 0);
    CHECK(tk_latch_wait(&w.joined, 1, 5000) == 1);
    CHECK(tk_wait_numsub(&srv, "redisson_lock__channel:{lg:busy}", 1, 3000) == 0);
    /* (The waiter may not sleep yet: a permit kept for it wakes it all the same.) */
    tk_stall_reset(&stall);
    t_rel = rlk_fx_now_ns();
    CHECK_INT_EQ(rlk_lock_unlock(held), RLK_OK);
    pthread_join(th, NULL);
    CHECK_INT_EQ(w.rc, RLK_OK);
    ms = (w.woke_ns - t_rel) / 1000000;
    printf("  waiter acquired %lld ms after the release\n", ms);
    CHECKF(ms < FORCE_BOUND_MS, "the waiter acquired %lld ms after the release (bound %d ms; "
           "longest scheduling gap %lld ms%s)", ms, FORCE_BOUND_MS, tk_stall_max_gap_ms(&stall),
           stall_note());
    rlk_lock_free(held);
    rlk_free(c1);
    rlk_free(c2);
    tk_latch_destroy(&w.joined);
}

/* One thread's hold of a lock is forced while another thread of the same client takes and
 * releases another lock again and again (its echoes below the mark, a release on the wire): the
 * forced hold is told within a round trip. */
typedef struct churn_arg {
    rlk_client *c;
    atomic_int stop, done;
    int rc;
} churn_arg;

static void *churn_thread(void *p)
{
    churn_arg *a = p;

    for (int i = 0; i < 100000 && a->rc == RLK_OK && !atomic_load(&a->stop); i++) {
        a->rc = pairs(a->c, "lg:churn", 1);
        atomic_fetch_add(&a->done, 1);
    }
    return NULL;
}

static void test_echoes_then_other_force(void)
{
    rlk_client *c1, *c2;
    rlk_lock *l, *f;
    lost_rec g;
    churn_arg a;
    pthread_t th;
    long long t_force, ms;
    int released = 0;

    linger_bounds(60000, LINGER_MAX);
    memset(&g, 0, sizeof g);
    memset(&a, 0, sizeof a);
    pthread_mutex_init(&g.mu, NULL);
    tk_latch_init(&g.fired);
    REQUIRE((c1 = tk_connect(url, 0, 2)) != NULL && (c2 = tk_connect(url, 0, 1)) != NULL);
    rlk_set_lost_callback(c1, on_lost, &g);
    REQUIRE((l = rlk_lock_new(c1, "lg:other")) && (f = rlk_lock_new(c2, "lg:other")));
    CHECK_INT_EQ(pairs(c1, "lg:churn", 2), RLK_OK);
    CHECK(tk_wait_numsub(&srv, "redisson_lock__channel:{lg:churn}", 1, 3000) == 0);
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);
    CHECK(tk_wait_numsub(&srv, "redisson_lock__channel:{lg:other}", 1, 3000) == 0);
    a.c = c1;
    REQUIRE(pthread_create(&th, NULL, churn_thread, &a) == 0);
    /* Bounded: 50 of the other thread's holds first, or 5 s. */
    for (int i = 0; i < 500 && atomic_load(&a.done) < 50; i++)
        rlk_fx_sleep_ms(10);
    tk_stall_reset(&stall);
    t_force = rlk_fx_now_ns();
    CHECK(rlk_lock_force_unlock(f, &released) == RLK_OK && released);
    CHECKF(tk_latch_wait(&g.fired, 1, 5000) == 1, "the lost callback did not fire within 5 s of "
           "the force unlock while another thread's releases went on");
    ms = g.at_ns > 0 ? (g.at_ns - t_force) / 1000000 : -1;
    atomic_store(&a.stop, 1);
    pthread_join(th, NULL);
    CHECK_INT_EQ(a.rc, RLK_OK);
    printf("  lost callback %lld ms after the force unlock\n", ms);
    CHECKF(ms >= 0 && ms < FORCE_BOUND_MS, "lost callback %lld ms after the force unlock (bound "
           "%d ms; longest scheduling gap %lld ms%s)", ms, FORCE_BOUND_MS,
           tk_stall_max_gap_ms(&stall), stall_note());
    rlk_lock_free(l);
    rlk_lock_free(f);
    rlk_free(c1);
    rlk_free(c2);
    tk_latch_destroy(&g.fired);
    pthread_mutex_destroy(&g.mu);
}

/* ------------------------------------------------------------ others on the lock */

static void test_foreign_message_ends_linger(void)
{
    const char *chan = "redisson_lock__channel:{lg:foreign}";
    rlk_client *c;
    rlk_runtime_stats a, b;

    linger_bounds(60000, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL);
    CHECK_INT_EQ(pairs(c, "lg:foreign", 1), RLK_OK);
    CHECK(tk_wait_numsub(&srv, chan, 1, 3000) == 0);
    /* The server's count is not the client's confirmation: a release sent before the client
     * read it counts an echo that may come, and the other client's "0" below is taken for it. */
    CHECK(wait_confirmed(c, chan) == 0);
    CHECK_INT_EQ(pairs(c, "lg:foreign", 1), RLK_OK);   /* released once confirmed */
    /* Another holder's release (Redisson's, or an rlk client's): "0" on the lock's channel. */
    /* (SPUBLISH where the client subscribes sharded: Redis 7 with pubsub AUTO.) */
    CHECK(tk_int(&srv, "PUBLISH %s 0", chan) >= 1 || tk_int(&srv, "SPUBLISH %s 0", chan) >= 1);
    CHECKF(tk_wait_numsub_at_most(&srv, chan, 0, 3000) == 0, "the channel still lingers "
           "subscribed 3 s after another client's release (linger 60 s)");
    a = stats(c);
    CHECK_INT_EQ(pairs(c, "lg:foreign", 1), RLK_OK);
    /* (The hold does not wait for its SUBSCRIBE: the subscriber's loop sends it.) */
    CHECKF(tk_wait_numsub(&srv, chan, 1, 3000) == 0, "the next hold did not subscribe again");
    b = stats(c);
    CHECKF(b.subscribes - a.subscribes == 1 + (b.sub_drops - a.sub_drops), "the next hold sent "
           "%llu SUBSCRIBE (want 1: subscribed again)", b.subscribes - a.subscribes);
    CHECK_INT_EQ((long long)(b.renew_calls - a.renew_calls), 0);
    rlk_free(c);
}

/* ------------------------------------------------------------ bounds */

static void test_linger_ends(void)
{
    const char *chan = "redisson_lock__channel:{lg:ends}";
    rlk_client *c;

    linger_bounds(200, LINGER_MAX);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL);
    CHECK_INT_EQ(pairs(c, "lg:ends", 1), RLK_OK);
    CHECKF(tk_wait_numsub_at_most(&srv, chan, 0, 5000) == 0, "the channel still subscribed 5 s "
           "after the hold's release (linger 200 ms)");
    rlk_free(c);
}

static void test_linger_count_bound(void)
{
    rlk_client *c;
    char name[64];
    long long n;

    linger_bounds(60000, 8);
    REQUIRE((c = tk_connect(url, 0, 1)) != NULL);
    for (int i = 0; i < 40; i++) {
        rlk_rwlock *rw;

        snprintf(name, sizeof name, "lg:many:%d", i);
        CHECK_INT_EQ(pairs(c, name, 1), RLK_OK);
        snprintf(name, sizeof name, "lg:many:rw:%d", i);
        if ((rw = rlk_rwlock_new(c, name)) && rlk_rwlock_try_lock(rw, RLK_RW_READ, -1, 0) == RLK_OK)
            CHECK_INT_EQ(rlk_rwlock_unlock(rw, RLK_RW_READ), RLK_OK);
        rlk_rwlock_free(rw);
    }
    /* The UNSUBSCRIBEs past the bound are sent on the subscriber's next turn. */
    for (int i = 0; i < 300 && (n = tk_numsub_matching(&srv, "*{lg:many:*")) > 8; i++)
        rlk_fx_sleep_ms(10);
    printf("  80 holds of 80 names: %lld channels still subscribed (bound 8)\n", n);
    CHECKF(n >= 0 && n <= 8, "%lld channels subscribed after 80 holds of 80 names were "
           "released: more than the bound of 8 lingering", n);
    rlk_free(c);
}

int main(void)
{
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "rt_linger: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_retake_subscribes_once);
    RUN_TEST(test_retake_force_heard);
    RUN_TEST(test_echo_no_renewal);
    RUN_TEST(test_echo_no_wakeup);
    RUN_TEST(test_echoes_then_waiter);
    RUN_TEST(test_echoes_then_other_force);
    RUN_TEST(test_foreign_message_ends_linger);
    RUN_TEST(test_linger_ends);
    RUN_TEST(test_linger_count_bound);
    tk_stall_stop(&stall);
    rlk_fx_stop(&srv);
    return check_summary("rt_linger");
}
