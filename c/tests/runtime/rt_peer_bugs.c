/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_peer_bugs.c - open bugs of other lock clients, as scenarios rlk must pass (blocking and
 * async API where the API has the call). Each case names the peer's issue it replays:
 *
 *   test_retried_unlock_spares_newer_holder (etcd #22082): holder A's unlock is held in the
 *     network (a proxy cut: the request waits unread, as in a partition) and A's client gives up
 *     on it; A's lease passes, B takes the lock; the network heals, A's old release arrives and
 *     A's client sends its unlock again. B's hold must survive: B's field still counts 1 and a
 *     third client is refused. Also with the release run and only its reply lost (a proxy mute).
 *     A control replays what the peer does (a retried delete of the key, not of A's own hold)
 *     and the same check must report B's hold gone: the check can fail.
 *   test_cancelled_async_unlock_releasable (redis-py #3847): an rlk_async_unlock cancelled
 *     (rlk_async_cancel) while its release waits on the server, and one cancelled before it was
 *     written; a lock request cancelled while its acquire waits on the server (the interrupted
 *     acquire of Redisson #7272). Afterwards the lock is released, or a second unlock
 *     releases it, and nothing renews it: no watchdog entry is left and the watchdog sends no
 *     renewal over more than two periods.
 *   test_watchdog_never_renews_after_unlock (Redisson #7272): a watchdog hold released while
 *     one of its renewals is on the wire (the server in a DEBUG SLEEP: blocking, the renewal sent
 *     before unlock is called; async, the unlock issued with a renewal due during the sleep). No
 *     renewal may be sent from the moment the release is sent: the client's renewal count does
 *     not move while the release is in flight nor after it, and no watchdog entry is left.
 *     The async case failed before the fix in a_lock.c (the loop's watchdog kept the hold until
 *     the release's reply came, so its timer sent a renewal behind the release: 1 renewal
 *     counted while the release was in flight).
 *
 * The fourth scenario of the set, a command never outlives its lock (consul #9788), is
 * it_cli_faults (the server SIGSTOPped past the lease, a fixed lease, rlk killed) and
 * it_cli_lost (the key deleted): see their headers. ("project #N" names an entry of that
 * project's public tracker.)
 */
#include "check.h"
#include "tk_proxy.h"
#include "tk_util.h"
#include "rlk.h"
#include "rlk_async.h"
#include "rlk_async_poll.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define A_LEASE_MS 600          /* A's fixed lease: B gets in once it passes */
#define A_TIMEOUT_MS 300        /* A's command and connect timeouts: A gives up on a cut */
#define B_LEASE_MS 20000
#define WD_LEASE_MS 1500        /* the watchdog cases: a renewal every 500 ms */
#define SLEEP_MS 800            /* a DEBUG SLEEP longer than a renewal period */

static rlk_fx_server srv;
static char url[128];

/* ------------------------------------------------------------ helpers */

static rlk_client *connect_url(const char *u, int timeout_ms)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = u;
    o.watchdog_lease_ms = WD_LEASE_MS;
    if (timeout_ms > 0) {
        o.command_timeout_ms = timeout_ms;
        o.connect_timeout_ms = timeout_ms;
    }
    c = rlk_connect(&o);
    if (c && rlk_err(c) != RLK_OK) {
        fprintf(stderr, "  connect %s: %s\n", u, rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    return c;
}

static rlk_async *async_url(const char *u, int timeout_ms, rlk_async_poll *p)
{
    rlk_options o;
    rlk_async *ac;

    rlk_options_init(&o);
    o.url = u;
    o.watchdog_lease_ms = WD_LEASE_MS;
    if (timeout_ms > 0) {
        o.command_timeout_ms = timeout_ms;
        o.connect_timeout_ms = timeout_ms;
    }
    if (!(ac = rlk_async_new(&o)))
        return NULL;
    if (rlk_async_poll_attach(ac, p) != RLK_OK) {
        rlk_async_free(ac);
        return NULL;
    }
    return ac;
}

static void async_close(rlk_async *ac, rlk_async_poll *p)
{
    if (!ac)
        return;
    rlk_async_free(ac);
    rlk_async_poll_free(p);
}

/* The count of user's connections on the server (CLIENT LIST). */
static int clients_of(const char *user)
{
    redisReply *r = rlk_fx_command(&srv, "CLIENT LIST");
    char needle[64];
    int n = 0;

    snprintf(needle, sizeof needle, " user=%s ", user);
    for (const char *s = r && r->type == REDIS_REPLY_STRING ? r->str : NULL; s &&
         (s = strstr(s, needle)) != NULL; s += strlen(needle))
        n++;
    if (r)
        freeReplyObject(r);
    return n;
}

/* Waits (bounded) until the proxy has no connection left and the server none of user's: every
 * byte the proxy held has been delivered and run (a client's commands run before the server
 * sees its end). 0, or -1 after 10 s. */
static int drained(tk_proxy *p, const char *user)
{
    long long until = rlk_fx_now_ms() + 10000;

    while (rlk_fx_now_ms() < until) {
        if (tk_proxy_open(p) == 0 && clients_of(user) == 0)
            return 0;
        rlk_fx_sleep_ms(10);
    }
    return -1;
}

/* B's hold survives: its field counts 1, the key has a TTL, and a third client is refused. */
static int b_survives(const char *name, const char *b_field)
{
    rlk_client *c = connect_url(url, 0);
    rlk_lock *l = c ? rlk_lock_new(c, name) : NULL;
    long long count = tk_int(&srv, "HGET %s %s", name, b_field);
    long long pttl = tk_int(&srv, "PTTL %s", name);
    int rc = l ? rlk_lock_try_lock(l, 0, 1000) : -1, ok;

    ok = count == 1 && pttl > 0 && rc == RLK_ERR_BUSY;
    if (!ok)
        printf("  B's hold: count %lld, PTTL %lld, a third client's try: %s\n", count, pttl,
               rc >= -100 ? rlk_strerror(rc) : "no client");
    if (rc == RLK_OK)
        rlk_lock_unlock(l);
    rlk_lock_free(l);
    rlk_free(c);
    return ok;
}

/* A user of its own for A (ACL), so that its connections can be told apart on the server. */
static int make_user(const char *user)
{
    return tk_command_ok(&srv, "ACL SETUSER %s on >pw-%s ~* &* +@all", user, user);
}

typedef struct unlock_job {
    rlk_client *c;
    rlk_lock *l;
    int rc;
    char errstr[512];       /* the error is the calling thread's */
} unlock_job;

static void *unlock_thread(void *arg)
{
    unlock_job *j = arg;

    j->rc = rlk_lock_unlock(j->l);
    snprintf(j->errstr, sizeof j->errstr, "%s", j->rc == RLK_OK ? "" : rlk_errstr(j->c));
    return NULL;
}

/* ------------------------------------------------------------ etcd #22082 */

/* One run: A (through the proxy, as user) takes name for A_LEASE_MS; its unlock is cut (mute:
 * run, its reply lost); B takes the lock once A's lease passed; the network heals; A retries.
 * blind: the control, A's retry a delete of the whole key (the peer's bug). async: A through
 * the async API. Returns whether B's hold survived (-1: the scenario could not be set up). */
static int etcd_run(const char *name, const char *user, int mute, int blind, int async)
{
    char aurl[256], b_field[256];
    tk_proxy *p = tk_proxy_start(srv.port);
    rlk_client *ca = NULL, *cb = NULL;
    rlk_lock *la = NULL, *lb = NULL;
    rlk_async *ac = NULL;
    rlk_async_poll ap;
    tk_ares r = {0};
    int rc, survived = -1;
    long long t0;

    memset(&ap, 0, sizeof ap);
    if (!p || make_user(user) != 0)
        goto out;
    snprintf(aurl, sizeof aurl, "redis://%s:pw-%s@127.0.0.1:%d", user, user, tk_proxy_port(p));
    if (!(cb = connect_url(url, 0)) || !(lb = rlk_lock_new(cb, name)))
        goto out;
    if (async) {
        if (!(ac = async_url(aurl, A_TIMEOUT_MS, &ap)) ||
            tk_ares_call(&ap, rlk_async_lock(ac, RLK_KIND_LOCK, name, 1, 0, A_LEASE_MS,
                                             tk_ares_cb, &r), &r) != RLK_OK)
            goto out;
    } else if (!(ca = connect_url(aurl, A_TIMEOUT_MS)) || !(la = rlk_lock_new(ca, name)) ||
               rlk_lock_try_lock(la, 0, A_LEASE_MS) != RLK_OK) {
        goto out;
    }
    t0 = rlk_fx_now_ms();
    if (mute)
        tk_proxy_mute(p);
    else
        tk_proxy_cut(p);
    /* A's unlock: it gives up (cut) or settles its lost reply (mute) */
    if (async) {
        memset(&r, 0, sizeof r);
        rc = tk_ares_call(&ap, rlk_async_unlock(ac, RLK_KIND_LOCK, name, 1, tk_ares_cb, &r), &r);
        printf("  A's unlock (async, %s): %s %s\n", mute ? "reply lost" : "cut", rlk_strerror(rc),
               r.errstr);
        /* B waits for A's lease (the lock is free at once when A's release ran) */
        rc = rlk_lock_try_lock(lb, 5000, B_LEASE_MS);
    } else {
        unlock_job j = {ca, la, 0, ""};
        pthread_t th;

        if (pthread_create(&th, NULL, unlock_thread, &j) != 0)
            goto out;
        rc = rlk_lock_try_lock(lb, 5000, B_LEASE_MS);
        pthread_join(th, NULL);
        printf("  A's unlock (%s): %s %s\n", mute ? "reply lost" : "cut", rlk_strerror(j.rc),
               j.errstr);
    }
    printf("  B's acquire %lld ms after A's unlock began: %s\n", rlk_fx_now_ms() - t0,
           rlk_strerror(rc));
    if (rc != RLK_OK)
        goto out;
    if (rlk_lock_owner(lb, b_field, sizeof b_field) != RLK_OK)
        goto out;
    /* The network heals: what A sent arrives now, after B took the lock. Then A retries. */
    tk_proxy_heal(p);
    if (blind) {
        /* the peer's retry: a delete of the key, whoever holds it now */
        rc = tk_command_ok(&srv, "DEL %s", name) == 0 ? RLK_OK : RLK_ERR_IO;
    } else if (async) {
        memset(&r, 0, sizeof r);
        rc = tk_ares_call(&ap, rlk_async_unlock(ac, RLK_KIND_LOCK, name, 1, tk_ares_cb, &r), &r);
    } else {
        rc = rlk_lock_unlock(la);
    }
    printf("  A's retried unlock%s: %s\n", blind ? " (the control: DEL of the key)" : "",
           rlk_strerror(rc));
    /* Every byte A's client sent has run once its connections are gone. */
    rlk_lock_free(la);
    la = NULL;
    rlk_free(ca);
    ca = NULL;
    async_close(ac, &ap);
    ac = NULL;
    if (drained(p, user) != 0) {
        printf("  A's connections did not drain within 10 s\n");
        goto out;
    }
    survived = b_survives(name, b_field);
    if (survived)
        CHECK_INT_EQ(rlk_lock_unlock(lb), RLK_OK);
out:
    rlk_lock_free(la);
    rlk_free(ca);
    async_close(ac, &ap);
    rlk_lock_free(lb);
    rlk_free(cb);
    tk_proxy_stop(p);
    (void)!tk_command_ok(&srv, "DEL %s", name);
    return survived;
}

static void test_retried_unlock_spares_newer_holder(void)
{
    int s;

    s = etcd_run("peer:etcd:cut", "holder_a1", 0, 0, 0);
    CHECKF(s == 1, "blocking, A's release delayed in the network: B's hold survived = %d", s);
    s = etcd_run("peer:etcd:mute", "holder_a2", 1, 0, 0);
    CHECKF(s == 1, "blocking, A's release ran, its reply lost: B's hold survived = %d", s);
    s = etcd_run("peer:etcd:async-cut", "holder_a3", 0, 0, 1);
    CHECKF(s == 1, "async, A's release delayed in the network: B's hold survived = %d", s);
    s = etcd_run("peer:etcd:async-mute", "holder_a4", 1, 0, 1);
    CHECKF(s == 1, "async, A's release ran, its reply lost: B's hold survived = %d", s);
    /* the control: a retry that deletes the key (the peer's) must be caught by the same check */
    s = etcd_run("peer:etcd:blind", "holder_a5", 0, 1, 0);
    CHECKF(s == 0, "control (a blind delete retried): the check must see B's hold gone; "
           "survived = %d", s);
}

/* ------------------------------------------------------------ redis-py #3847 */

static unsigned long long renewals_of(rlk_async *ac)
{
    rlk_metrics m;

    return rlk_async_metrics_get(ac, &m) == RLK_OK ? m.renewals : 0;
}

static long long entries_of(rlk_async *ac)
{
    rlk_metrics m;

    return rlk_async_metrics_get(ac, &m) == RLK_OK ? m.watchdog_entries : -1;
}

/* Turns p's loop for ms (the async client's watchdog runs meanwhile). */
static void turn_for(rlk_async_poll *p, long long ms)
{
    long long until = rlk_fx_now_ms() + ms;

    while (rlk_fx_now_ms() < until)
        rlk_async_poll_turn(p, 20000000LL);
}

/* After a cancelled request on name: released, or released by one more unlock, and nothing
 * left to renew it: no watchdog entry, no renewal over more than two periods. */
static void releasable(rlk_async *ac, rlk_async_poll *p, const char *name, const char *what)
{
    tk_ares r = {0};
    unsigned long long n0;

    if (tk_int(&srv, "EXISTS %s", name) == 1) {
        int rc = tk_ares_call(p, rlk_async_unlock(ac, RLK_KIND_LOCK, name, 1, tk_ares_cb, &r),
                              &r);

        printf("  %s: the lock still held; a second unlock: %s\n", what, rlk_strerror(rc));
        CHECKF(rc == RLK_OK, "%s: the lock left held and the second unlock said %s %s", what,
               rlk_strerror(rc), r.errstr);
    }
    CHECKF(tk_int(&srv, "EXISTS %s", name) == 0, "%s: the lock is still there", what);
    CHECKF(entries_of(ac) == 0, "%s: %lld watchdog entries left", what, entries_of(ac));
    n0 = renewals_of(ac);
    turn_for(p, WD_LEASE_MS * 2 / 3 + 200);
    CHECKF(renewals_of(ac) == n0, "%s: %llu renewals sent after the lock was released", what,
           renewals_of(ac) - n0);
    CHECKF(tk_int(&srv, "EXISTS %s", name) == 0, "%s: the lock came back", what);
}

/* Turns the loop for 50 ms: the request written (the server sleeps: it waits there). */
static void until_written(rlk_async_poll *p)
{
    turn_for(p, 50);
}

static void test_cancelled_async_unlock_releasable(void)
{
    rlk_async_poll p;
    rlk_async *ac = async_url(url, 0, &p);
    tk_ares r = {0};
    rlk_async_req *q;
    redisContext *x;
    int rc;

    REQUIRE(ac);
    /* (1) an unlock cancelled while its release waits on the server */
    REQUIRE(tk_ares_call(&p, rlk_async_lock(ac, RLK_KIND_LOCK, "peer:rp:1", 1, 0, -1, tk_ares_cb,
                                            &r), &r) == RLK_OK);
    REQUIRE((x = rlk_fx_sleep_begin(&srv, 300)));
    memset(&r, 0, sizeof r);
    REQUIRE((q = rlk_async_unlock(ac, RLK_KIND_LOCK, "peer:rp:1", 1, tk_ares_cb, &r)));
    until_written(&p);
    rlk_async_cancel(q);
    rc = tk_ares_run(&p, &r, 20000) ? r.err : -1000;
    rlk_fx_sleep_end(x);
    printf("  unlock cancelled in flight: %s\n", rlk_strerror(rc));
    CHECKF(rc == RLK_OK || rc == RLK_ERR_CANCELLED, "cancelled unlock: %s %s", rlk_strerror(rc),
           r.errstr);
    releasable(ac, &p, "peer:rp:1", "unlock cancelled in flight");

    /* (2) an unlock cancelled before it was written */
    memset(&r, 0, sizeof r);
    REQUIRE(tk_ares_call(&p, rlk_async_lock(ac, RLK_KIND_LOCK, "peer:rp:2", 1, 0, -1, tk_ares_cb,
                                            &r), &r) == RLK_OK);
    memset(&r, 0, sizeof r);
    REQUIRE((q = rlk_async_unlock(ac, RLK_KIND_LOCK, "peer:rp:2", 1, tk_ares_cb, &r)));
    rlk_async_cancel(q);
    rc = tk_ares_run(&p, &r, 20000) ? r.err : -1000;
    printf("  unlock cancelled at once: %s\n", rlk_strerror(rc));
    CHECKF(rc == RLK_OK || rc == RLK_ERR_CANCELLED, "cancelled unlock: %s %s", rlk_strerror(rc),
           r.errstr);
    releasable(ac, &p, "peer:rp:2", "unlock cancelled at once");

    /* (3) a watchdog lock request cancelled while its acquire waits on the server: the grant
     * that comes back is given back, nothing renews it */
    REQUIRE((x = rlk_fx_sleep_begin(&srv, 300)));
    memset(&r, 0, sizeof r);
    REQUIRE((q = rlk_async_lock(ac, RLK_KIND_LOCK, "peer:rp:3", 1, 0, -1, tk_ares_cb, &r)));
    until_written(&p);
    rlk_async_cancel(q);
    rc = tk_ares_run(&p, &r, 20000) ? r.err : -1000;
    rlk_fx_sleep_end(x);
    printf("  lock request cancelled in flight: %s\n", rlk_strerror(rc));
    CHECKF(rc == RLK_ERR_CANCELLED, "cancelled lock request: %s %s", rlk_strerror(rc), r.errstr);
    /* its give-back may still be on its way: turn until it is done (bounded) */
    for (long long until = rlk_fx_now_ms() + 5000;
         rlk_fx_now_ms() < until && tk_int(&srv, "EXISTS %s", "peer:rp:3") == 1;)
        rlk_async_poll_turn(&p, 20000000LL);
    releasable(ac, &p, "peer:rp:3", "lock request cancelled in flight");
    async_close(ac, &p);
}

/* ------------------------------------------------------------ Redisson #7272 */

static unsigned long long b_renewals(rlk_client *c)
{
    rlk_metrics m;

    return rlk_metrics_get(c, &m) == RLK_OK ? m.renewals : 0;
}

static void test_watchdog_never_renews_after_unlock(void)
{
    rlk_client *c = connect_url(url, 0);
    rlk_lock *l = c ? rlk_lock_new(c, "peer:rs:blocking") : NULL;
    rlk_async_poll p;
    rlk_async *ac;
    unsigned long long n0, n1;
    long long until;
    redisContext *x;
    tk_ares r = {0};
    rlk_metrics m;
    rlk_async_req *q;

    REQUIRE(l);
    /* blocking: unlock called while a renewal is on the wire */
    REQUIRE(rlk_lock_try_lock(l, 0, 0) == RLK_OK);      /* 0: the watchdog */
    REQUIRE((x = rlk_fx_sleep_begin(&srv, SLEEP_MS)));
    n0 = b_renewals(c);
    /* a renewal is due within a period (500 ms < the sleep): wait until it is sent */
    for (until = rlk_fx_now_ms() + SLEEP_MS; b_renewals(c) == n0 && rlk_fx_now_ms() < until;)
        rlk_fx_sleep_ms(2);
    CHECKF(b_renewals(c) > n0, "no renewal sent within the sleep (the case needs one in flight)");
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    rlk_fx_sleep_end(x);
    n1 = b_renewals(c);
    REQUIRE(rlk_metrics_get(c, &m) == RLK_OK);
    CHECKF(m.watchdog_entries == 0, "blocking: %lld watchdog entries after the unlock",
           m.watchdog_entries);
    rlk_fx_sleep_ms(WD_LEASE_MS * 2 / 3 + 200);     /* more than two periods: nothing renews */
    CHECKF(b_renewals(c) == n1, "blocking: %llu renewals sent after the unlock",
           b_renewals(c) - n1);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "peer:rs:blocking"), 0);
    rlk_lock_free(l);
    rlk_free(c);

    /* async: unlock issued with a renewal due while its release waits on the server */
    REQUIRE((ac = async_url(url, 0, &p)));
    REQUIRE(tk_ares_call(&p, rlk_async_lock(ac, RLK_KIND_LOCK, "peer:rs:async", 1, 0, -1,
                                            tk_ares_cb, &r), &r) == RLK_OK);
    REQUIRE((x = rlk_fx_sleep_begin(&srv, SLEEP_MS)));
    memset(&r, 0, sizeof r);
    n0 = renewals_of(ac);
    REQUIRE((q = rlk_async_unlock(ac, RLK_KIND_LOCK, "peer:rs:async", 1, tk_ares_cb, &r)));
    CHECK_INT_EQ(tk_ares_run(&p, &r, 20000) ? r.err : -1000, RLK_OK);
    rlk_fx_sleep_end(x);
    n1 = renewals_of(ac);
    CHECKF(n1 == n0, "async: %llu renewals sent while the release was in flight", n1 - n0);
    CHECKF(entries_of(ac) == 0, "async: %lld watchdog entries after the unlock", entries_of(ac));
    turn_for(&p, WD_LEASE_MS * 2 / 3 + 200);
    CHECKF(renewals_of(ac) == n1, "async: %llu renewals sent after the unlock",
           renewals_of(ac) - n1);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "peer:rs:async"), 0);
    async_close(ac, &p);
}

int main(void)
{
    static const char *const extra[] = {"--enable-debug-command", "yes", NULL};
    rlk_fx_config cfg;

    signal(SIGPIPE, SIG_IGN);
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "rt_peer_bugs: cannot start redis-server\n");
        return 1;
    }
    RUN_TEST(test_retried_unlock_spares_newer_holder);
    RUN_TEST(test_cancelled_async_unlock_releasable);
    RUN_TEST(test_watchdog_never_renews_after_unlock);
    rlk_fx_stop(&srv);
    return check_summary("rt_peer_bugs");
}
