/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_clkinds.c - the non-blocking API's newer kinds on a Redis Cluster:
 * one 3-master + 3-replica cluster on loopback (support/cluster.h) for the
 * whole program, driven by the poll loop (aloop_poll.c). Every case runs on
 * a name owned by each of the three masters and reads its keys back on that
 * master itself (no redirection followed: a key in another slot would be
 * refused there with MOVED).
 *
 *   rlk_async_clkinds [case...]     (no case: all, in order)
 *
 * Cases:
 *   nr         rlk_async_lock_nr, both kinds (the reentrant lock's data and
 *              the fair lock's): re-entry refused (RLK_ERR_REENTRY, the
 *              count still 1), another task busy, a waiter (the lock: its
 *              sharded subscription on the name's master) served by the
 *              release;
 *   spin       rlk_async_lock_spin: a waiter with no subscription on any
 *              node served by its back-off after the release;
 *   delay      rlk_async_lock_delay: a holder whose lease ran out keeps the
 *              name closed to another client with the delay until lease +
 *              delay (the delay key on the master meanwhile); a released
 *              one does not (the key deleted with the lock);
 *   elect      campaign, term, another candidate turned away, an observer
 *              (subscribed on the master) woken by a proclaim, resign, the
 *              second candidate elected with a higher term;
 *   sem_admin  the semaphores' one-script calls (release_if_exists,
 *              try_set_permits_ttl, try_release, lease_time, set_permits,
 *              acquired) and expire / clear_expire / ttl on a semaphore, a
 *              permit-expirable semaphore and a latch;
 *   watchdog   holds of those kinds renewed by the watchdog (lease -1) on each
 *              master, kept through 3 leases with no lost report; the delay
 *              key's PTTL above the delay (renewed with its lock); control: a
 *              leased lock in each slot expired;
 *   procs      async and blocking processes (forked, async_procs.c) on the
 *              non-reentrant lock, the non-reentrant fair lock and the spin
 *              lock, a name on each master: one merged monotonic history
 *              each, every hold served, 0 overlaps;
 *   procs_control  the same processes, each task on a name of its own in the
 *              same slot (the lock skipped in effect): the check must find
 *              overlaps.
 *
 * Every wait is bounded; pauses are the time under test, never a
 * synchronisation. The rules of rlk_async.h are checked on every request.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "aloop.h"
#include "async_procs.h"
#include "async_names.h"
#include "check.h"
#include "cluster.h"
#include "fixture.h"
#include "rlk.h"
#include "rlk_async.h"
#include "tk_util.h"

static rlk_fx_cluster cl;
static char url[512];
static int mst[3];              /* the masters' node indexes at start */

#define DL_LEASE_MS 500LL       /* the lock-delay case's lease */
#define DL_DELAY_MS 2500LL      /* and its delay */

typedef ap_cl cli;

static int cli_open(cli *c)
{
    return ap_cl_open(c, url, 0, 0, 3000);
}

/* The first "<prefix><n>" whose slot node `master` owns (its own view). */
static void name_on(const char *prefix, int master, char *buf, size_t len)
{
    buf[0] = '\0';
    for (int i = 0; i < 100000; i++) {
        char n[64];

        snprintf(n, sizeof n, "%s%d", prefix, i);
        if (rlk_fx_cluster_slot_owner(&cl, master, rlk_fx_key_slot(n, strlen(n))) == master) {
            snprintf(buf, len, "%s", n);
            return;
        }
    }
}

/* A command about key sent to node `master` itself: its integer, or -99
 * (MOVED when master does not own key's slot, or another reply). */
static long long int_on(int master, const char *fmt, const char *key)
{
    return ap_reply_int(rlk_fx_cluster_command(&cl, master, fmt, key));
}

#define CHECK_ON(master, key)                                                                    \
    CHECKF(int_on((master), "EXISTS %s", (key)) == 1, "%s not on master %d", (key), (master))

/* Sharded subscribers of channel on node i. */
static long long shard_subs(int i, const char *channel)
{
    long long n = tk_numsub_reply(rlk_fx_cluster_command(&cl, i, "PUBSUB SHARDNUMSUB %s", channel));

    return n < 0 ? 0 : n;
}

/* Subscribers of channel on any node, sharded or not. */
static long long subs_anywhere(const char *channel)
{
    long long n = 0;

    for (int i = 0; i < cl.n; i++) {
        redisReply *r = rlk_fx_cluster_command(&cl, i, "PUBSUB NUMSUB %s", channel);

        if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
            r->element[1]->type == REDIS_REPLY_INTEGER)
            n += r->element[1]->integer;
        if (r)
            freeReplyObject(r);
        n += shard_subs(i, channel);
    }
    return n;
}

/* Runs c's loop until channel has a sharded subscriber on master (bounded). */
static int wait_shard_sub(cli *c, int master, const char *channel, long long ms)
{
    for (long long end = rlk_fx_now_ms() + ms; rlk_fx_now_ms() < end;) {
        if (shard_subs(master, channel) > 0)
            return 1;
        aloop_run_until(c->l, NULL, NULL, 10);
    }
    return 0;
}

/* One request's outcome, waited for (5 s): the result. */
#define DO(c, x, call)                                                                           \
    do {                                                                                         \
        memset(&(x), 0, sizeof(x));                                                              \
        REQ(call);                                                                               \
        REQUIRE(wait_res((c), &(x), 5000));                                                      \
    } while (0)

/* ---------------------------------------------------------------- nr */

static void nr_on(cli *c, int kind, int master)
{
    char n[64], owner[256], ch[128];
    res a, again, busy, w, u, u2;

    name_on(kind == RLK_KIND_LOCK ? "acn:lock:" : "acn:fair:", master, n, sizeof n);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(c->ac));
    DO(c, a, rlk_async_lock_nr(c->ac, kind, n, 1, 0, 30000, on_res, &a));
    CHECKF(a.err == RLK_OK && a.value == 1, "nr %s on master %d: %d %s", n, master, a.err,
           a.errstr);
    CHECK_ON(master, n);
    DO(c, again, rlk_async_lock_nr(c->ac, kind, n, 1, 1000, 30000, on_res, &again));
    CHECK_INT_EQ(again.err, RLK_ERR_REENTRY);
    {
        redisReply *r = rlk_fx_cluster_command(&cl, master, "HGET %s %s", n, owner);

        CHECKF(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0,
               "%s: the hold count on its master after the refused re-entry", n);
        if (r)
            freeReplyObject(r);
    }
    DO(c, busy, rlk_async_lock_nr(c->ac, kind, n, 2, 0, 30000, on_res, &busy));
    CHECK_INT_EQ(busy.err, RLK_ERR_BUSY);
    memset(&w, 0, sizeof w);
    REQ(rlk_async_lock_nr(c->ac, kind, n, 2, 10000, 30000, on_res, &w));
    if (kind == RLK_KIND_LOCK) {
        snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", n);
        CHECKF(wait_shard_sub(c, master, ch, 5000), "the waiter's %s not on master %d", ch,
               master);
    } else {
        aloop_run_until(c->l, NULL, NULL, 200);     /* the time under test: it waits */
    }
    CHECK_INT_EQ(w.calls, 0);
    DO(c, u, rlk_async_unlock(c->ac, kind, n, 1, on_res, &u));
    CHECK_INT_EQ(u.err, RLK_OK);
    REQUIRE(wait_res(c, &w, 8000));
    CHECKF(w.err == RLK_OK && w.at_ms - u.at_ms < 2000, "nr waiter %s: %d %s, %lld ms after the "
           "release (lease 30000)", n, w.err, w.errstr, w.at_ms - u.at_ms);
    CHECK_ON(master, n);
    DO(c, u2, rlk_async_unlock(c->ac, kind, n, 2, on_res, &u2));
    CHECK_INT_EQ(u2.err, RLK_OK);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
}

static void nr(void)
{
    cli c;

    REQUIRE(cli_open(&c) == RLK_OK);
    for (int m = 0; m < 3; m++) {
        nr_on(&c, RLK_KIND_LOCK, mst[m]);
        nr_on(&c, RLK_KIND_FAIR, mst[m]);
    }
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- spin */

static void spin(void)
{
    cli c;

    REQUIRE(cli_open(&c) == RLK_OK);
    for (int m = 0; m < 3; m++) {
        char n[64], ch[128];
        res a, w, u, u2;

        name_on("acs:", mst[m], n, sizeof n);
        snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", n);
        DO(&c, a, rlk_async_lock_spin(c.ac, n, 1, 0, 30000, 0, 0, on_res, &a));
        CHECKF(a.err == RLK_OK, "spin %s on master %d: %s", n, mst[m], a.errstr);
        CHECK_ON(mst[m], n);
        memset(&w, 0, sizeof w);
        REQ(rlk_async_lock_spin(c.ac, n, 2, 10000, 30000, 2, 50, on_res, &w));
        aloop_run_until(c.l, NULL, NULL, 300);      /* the time under test: it polls */
        CHECK_INT_EQ(w.calls, 0);
        CHECKF(subs_anywhere(ch) == 0, "a spin waiter subscribed to %s", ch);
        DO(&c, u, rlk_async_unlock(c.ac, RLK_KIND_LOCK, n, 1, on_res, &u));
        CHECK_INT_EQ(u.err, RLK_OK);
        REQUIRE(wait_res(&c, &w, 5000));
        CHECKF(w.err == RLK_OK && w.at_ms - u.at_ms < 1000, "spin waiter %s: %d, %lld ms after "
               "the release (back-off at most 50 ms)", n, w.err, w.at_ms - u.at_ms);
        CHECK_ON(mst[m], n);
        DO(&c, u2, rlk_async_unlock(c.ac, RLK_KIND_LOCK, n, 2, on_res, &u2));
        CHECK_INT_EQ(u2.err, RLK_OK);
        CHECK_INT_EQ(int_on(mst[m], "EXISTS %s", n), 0);
    }
    ap_cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- delay */

static void delay(void)
{
    cli c, c2;

    REQUIRE(cli_open(&c) == RLK_OK);
    REQUIRE(cli_open(&c2) == RLK_OK);
    for (int m = 0; m < 3; m++) {
        char n[64], dk[96];
        res a, b, u;
        long long t0, lease_end = -1;

        name_on("acd:", mst[m], n, sizeof n);
        snprintf(dk, sizeof dk, "{%s}:rlk_delay", n);
        /* Released: the next one takes it at once. */
        DO(&c, a, rlk_async_lock_delay(c.ac, n, 1, 0, 30000, DL_DELAY_MS, on_res, &a));
        CHECKF(a.err == RLK_OK, "delay %s on master %d: %s", n, mst[m], a.errstr);
        CHECK_ON(mst[m], n);
        CHECK_ON(mst[m], dk);
        DO(&c, u, rlk_async_unlock(c.ac, RLK_KIND_LOCK, n, 1, on_res, &u));
        CHECK_INT_EQ(u.err, RLK_OK);
        CHECK_INT_EQ(int_on(mst[m], "EXISTS %s", dk), 0);
        DO(&c2, b, rlk_async_lock_delay(c2.ac, n, 1, 0, 30000, DL_DELAY_MS, on_res, &b));
        CHECKF(b.err == RLK_OK, "after a release: %s", b.errstr);
        DO(&c2, u, rlk_async_unlock(c2.ac, RLK_KIND_LOCK, n, 1, on_res, &u));
        CHECK_INT_EQ(u.err, RLK_OK);
        /* Lost (its lease ran out): closed until lease + delay. */
        t0 = rlk_fx_now_ms();
        DO(&c, a, rlk_async_lock_delay(c.ac, n, 2, 0, DL_LEASE_MS, DL_DELAY_MS, on_res, &a));
        REQUIRE(a.err == RLK_OK);
        CHECK_ON(mst[m], dk);
        for (long long end = t0 + DL_LEASE_MS + 5000; rlk_fx_now_ms() < end;) {
            if (int_on(mst[m], "EXISTS %s", n) == 0) {
                lease_end = rlk_fx_now_ms();
                break;
            }
            nanosleep(&(struct timespec){0, 10000000L}, NULL);
        }
        REQUIREF(lease_end > 0, "the lease of %s never ran out", n);
        DO(&c2, b, rlk_async_lock_delay(c2.ac, n, 1, 0, 30000, DL_DELAY_MS, on_res, &b));
        CHECK_INT_EQ(b.err, RLK_ERR_BUSY);
        CHECKF(b.at_ms - lease_end < DL_DELAY_MS - 500, "the refusal came %lld ms after the lease "
               "ended (a stall: the check needs it inside the delay)", b.at_ms - lease_end);
        CHECK_ON(mst[m], dk);
        memset(&b, 0, sizeof b);
        REQ(rlk_async_lock_delay(c2.ac, n, 1, 10000, 30000, DL_DELAY_MS, on_res, &b));
        REQUIRE(wait_res(&c2, &b, 15000));
        CHECKF(b.err == RLK_OK, "after the delay: %s", b.errstr);
        CHECKF(b.at_ms - t0 >= DL_LEASE_MS + DL_DELAY_MS - 100, "taken %lld ms after the lost "
               "holder's acquire (lease %lld + delay %lld)", b.at_ms - t0, DL_LEASE_MS,
               DL_DELAY_MS);
        CHECK_ON(mst[m], n);
        DO(&c2, u, rlk_async_unlock(c2.ac, RLK_KIND_LOCK, n, 1, on_res, &u));
        CHECK_INT_EQ(u.err, RLK_OK);
        CHECK_INT_EQ(int_on(mst[m], "EXISTS %s", dk), 0);
    }
    ap_cl_close(&c);
    ap_cl_close(&c2);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- elect */

static void elect_on(cli *c, cli *w, int master)
{
    char n[64], rec[96], tok[96], ch[128], owner[256], owner2[256];
    res a, busy, o = {0}, ch1 = {0}, p, rs, b, o2 = {0}, rs2, np;
    long long term = 0;

    name_on("ace:", master, n, sizeof n);
    snprintf(rec, sizeof rec, "{%s}:elect", n);
    snprintf(tok, sizeof tok, "redisson_lock_token:{%s}", n);
    snprintf(ch, sizeof ch, "rlk_elect__channel:{%s}", n);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(c->ac));
    snprintf(owner2, sizeof owner2, "%s:2", rlk_async_uuid(c->ac));
    DO(c, a, rlk_async_elect_campaign(c->ac, n, 1, "host-a", 0, 30000, on_res, &a));
    CHECKF(a.err == RLK_OK && a.value > 0, "campaign %s on master %d: %d %s", n, master, a.err,
           a.errstr);
    CHECK(rlk_async_elect_term(c->ac, n, 1, &term) == RLK_OK && term == a.value);
    CHECK_INT_EQ(rlk_async_elect_term(c->ac, n, 2, &term), RLK_ERR_NOT_OWNER);
    CHECK_ON(master, n);
    CHECK_ON(master, rec);
    CHECK_ON(master, tok);
    DO(c, busy, rlk_async_elect_campaign(c->ac, n, 2, "host-b", 0, 30000, on_res, &busy));
    CHECK_INT_EQ(busy.err, RLK_ERR_BUSY);
    /* An observer on another client: the leadership now, then woken by a proclaim. */
    REQ(rlk_async_elect_observe(w->ac, n, NULL, -1, on_info, &o));
    REQUIRE(wait_res(w, &o, 5000));
    REQUIRE(o.err == RLK_OK && o.has_info);
    CHECK_INT_EQ(o.info.leader, 1);
    CHECK_INT_EQ(o.info.term, a.value);
    CHECK_STR_EQ(o.info.holder, owner);
    CHECK_STR_EQ(o.info.value, "host-a");
    REQ(rlk_async_elect_observe(w->ac, n, &o.info, 10000, on_info, &ch1));
    CHECKF(wait_shard_sub(w, master, ch, 5000), "the observer's %s not on master %d", ch, master);
    CHECK_INT_EQ(ch1.calls, 0);
    DO(c, np, rlk_async_elect_proclaim(c->ac, n, 2, "host-b", on_res, &np));
    CHECK_INT_EQ(np.err, RLK_ERR_NOT_OWNER);
    DO(c, p, rlk_async_elect_proclaim(c->ac, n, 1, "host-a2", on_res, &p));
    CHECKF(p.err == RLK_OK && p.value == a.value, "proclaim: %d %s", p.err, p.errstr);
    REQUIRE(wait_res(w, &ch1, 5000));
    REQUIRE(ch1.err == RLK_OK && ch1.has_info);
    CHECK_STR_EQ(ch1.info.value, "host-a2");
    CHECK_INT_EQ(ch1.info.term, a.value);
    DO(c, rs, rlk_async_elect_resign(c->ac, n, 1, on_res, &rs));
    CHECK_INT_EQ(rs.err, RLK_OK);
    CHECK_INT_EQ(rlk_async_elect_term(c->ac, n, 1, &term), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
    DO(c, b, rlk_async_elect_campaign(c->ac, n, 2, "host-b", 0, 30000, on_res, &b));
    CHECKF(b.err == RLK_OK && b.value > a.value, "second leader %s: %d, terms %lld then %lld", n,
           b.err, a.value, b.value);
    REQ(rlk_async_elect_observe(w->ac, n, NULL, -1, on_info, &o2));
    REQUIRE(wait_res(w, &o2, 5000));
    REQUIRE(o2.err == RLK_OK && o2.has_info);
    CHECK_INT_EQ(o2.info.leader, 1);
    CHECK_INT_EQ(o2.info.term, b.value);
    CHECK_STR_EQ(o2.info.holder, owner2);
    CHECK_ON(master, n);
    DO(c, rs2, rlk_async_elect_resign(c->ac, n, 2, on_res, &rs2));
    CHECK_INT_EQ(rs2.err, RLK_OK);
    res_clear(&o);
    res_clear(&ch1);
    res_clear(&o2);
}

static void elect(void)
{
    cli c, w;

    REQUIRE(cli_open(&c) == RLK_OK);
    REQUIRE(cli_open(&w) == RLK_OK);
    for (int m = 0; m < 3; m++)
        elect_on(&c, &w, mst[m]);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    CHECK_INT_EQ(rlk_async_pending(w.ac), 0);
    ap_cl_close(&c);
    ap_cl_close(&w);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- sem_admin */

#define CHECK_VAL(x, v) CHECKF((x).err == RLK_OK && (x).value == (v), "%s: %d %s, value %lld", #x, \
                               (x).err, (x).errstr, (x).value)
#define CHECK_TTL(x, max) CHECKF((x).err == RLK_OK && (x).value > 0 && (x).value <= (max),        \
                                 "%s: %d, ttl %lld", #x, (x).err, (x).value)

static void sem_admin_on(cli *c, int master)
{
    char n[64], tk[96];
    res r, id;

    name_on("acsa:", master, n, sizeof n);
    DO(c, r, rlk_async_semaphore_release_if_exists(c->ac, n, 1, on_res, &r));
    CHECK_VAL(r, 0);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
    DO(c, r, rlk_async_semaphore_try_set_permits_ttl(c->ac, n, 2, 60000, on_res, &r));
    CHECK_VAL(r, 1);
    CHECK_ON(master, n);
    CHECKF(int_on(master, "PTTL %s", n) > 0, "PTTL %s on master %d", n, master);
    DO(c, r, rlk_async_semaphore_try_set_permits_ttl(c->ac, n, 5, 60000, on_res, &r));
    CHECK_VAL(r, 0);
    DO(c, r, rlk_async_ttl(c->ac, RLK_MKIND_SEMAPHORE, n, on_res, &r));
    CHECK_TTL(r, 60000);
    DO(c, r, rlk_async_semaphore_release_if_exists(c->ac, n, 1, on_res, &r));
    CHECK_VAL(r, 1);
    DO(c, r, rlk_async_expire(c->ac, RLK_MKIND_SEMAPHORE, n, 30000, on_res, &r));
    CHECK_VAL(r, 1);
    DO(c, r, rlk_async_ttl(c->ac, RLK_MKIND_SEMAPHORE, n, on_res, &r));
    CHECK_TTL(r, 30000);
    DO(c, r, rlk_async_clear_expire(c->ac, RLK_MKIND_SEMAPHORE, n, on_res, &r));
    CHECK_VAL(r, 1);
    CHECK_INT_EQ(int_on(master, "PTTL %s", n), -1);
    DO(c, r, rlk_async_semaphore_acquire(c->ac, n, 3, 0, on_res, &r));
    CHECKF(r.err == RLK_OK, "3 permits of %s after release_if_exists: %s", n, r.errstr);

    name_on("acpa:", master, n, sizeof n);
    snprintf(tk, sizeof tk, "{%s}:timeout", n);
    DO(c, r, rlk_async_psemaphore_set_permits(c->ac, n, 2, on_res, &r));
    CHECK_VAL(r, 2);
    CHECK_ON(master, n);
    DO(c, id, rlk_async_psemaphore_acquire(c->ac, n, 0, 20000, on_res, &id));
    CHECKF(id.err == RLK_OK && id.id[0], "psemaphore %s on master %d: %s", n, master, id.errstr);
    CHECK_ON(master, tk);
    DO(c, r, rlk_async_psemaphore_lease_time(c->ac, n, id.id, on_res, &r));
    CHECK_TTL(r, 20000);
    DO(c, r, rlk_async_psemaphore_acquired(c->ac, n, on_res, &r));
    CHECK_VAL(r, 1);
    DO(c, r, rlk_async_psemaphore_set_permits(c->ac, n, 3, on_res, &r));
    CHECK_VAL(r, 2);
    DO(c, r, rlk_async_expire(c->ac, RLK_MKIND_PSEMAPHORE, n, 30000, on_res, &r));
    CHECK_VAL(r, 1);
    DO(c, r, rlk_async_ttl(c->ac, RLK_MKIND_PSEMAPHORE, n, on_res, &r));
    CHECK_TTL(r, 30000);
    CHECKF(int_on(master, "PTTL %s", tk) > 0, "PTTL %s on master %d", tk, master);
    DO(c, r, rlk_async_clear_expire(c->ac, RLK_MKIND_PSEMAPHORE, n, on_res, &r));
    CHECK_VAL(r, 1);
    CHECK_INT_EQ(int_on(master, "PTTL %s", tk), -1);
    DO(c, r, rlk_async_psemaphore_try_release(c->ac, n, id.id, on_res, &r));
    CHECK_VAL(r, 1);
    DO(c, r, rlk_async_psemaphore_try_release(c->ac, n, id.id, on_res, &r));
    CHECK_VAL(r, 0);
    DO(c, r, rlk_async_psemaphore_lease_time(c->ac, n, id.id, on_res, &r));
    CHECK_INT_EQ(r.err, RLK_ERR_NOT_OWNER);
    DO(c, r, rlk_async_psemaphore_acquired(c->ac, n, on_res, &r));
    CHECK_VAL(r, 0);

    name_on("acla:", master, n, sizeof n);
    DO(c, r, rlk_async_expire(c->ac, RLK_MKIND_LATCH, n, 30000, on_res, &r));
    CHECK_VAL(r, 0);                                /* open: no key */
    DO(c, r, rlk_async_latch_try_set_count(c->ac, n, 1, on_res, &r));
    CHECK_VAL(r, 1);
    CHECK_ON(master, n);
    DO(c, r, rlk_async_expire(c->ac, RLK_MKIND_LATCH, n, 30000, on_res, &r));
    CHECK_VAL(r, 1);
    DO(c, r, rlk_async_ttl(c->ac, RLK_MKIND_LATCH, n, on_res, &r));
    CHECK_TTL(r, 30000);
    CHECKF(int_on(master, "PTTL %s", n) > 0, "PTTL %s on master %d", n, master);
    DO(c, r, rlk_async_clear_expire(c->ac, RLK_MKIND_LATCH, n, on_res, &r));
    CHECK_VAL(r, 1);
    DO(c, r, rlk_async_ttl(c->ac, RLK_MKIND_LATCH, n, on_res, &r));
    CHECK_VAL(r, -1);
    DO(c, r, rlk_async_latch_count_down(c->ac, n, on_res, &r));
    CHECK_VAL(r, 0);
    CHECK_INT_EQ(int_on(master, "EXISTS %s", n), 0);
}

static void sem_admin(void)
{
    cli c;

    REQUIRE(cli_open(&c) == RLK_OK);
    for (int m = 0; m < 3; m++)
        sem_admin_on(&c, mst[m]);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- watchdog */

#define WD_LEASE_MS 1500LL      /* the watchdog case's lease: renewed every 500 ms */
#define WD_DELAY_MS 10000LL     /* and its lock-delay: the delay key's PX is lease + this */

/* Holds renewed by the watchdog (lease -1) on names of each master: the
 * non-reentrant lock and fair lock, a spin lock, a lock with the lock-delay
 * and a leader, kept through 3 leases, no lost report, every key's PTTL
 * read on its master (the delay key's above the delay: renewed with the
 * lock). Control: a leased lock (WD_LEASE_MS) in each slot expired. */
static void watchdog(void)
{
    cli c;
    char n[3][5][64], dk[3][96], ctn[3][96];
    res r[3][6], u;
    tk_stall st;
    long long wall0;
    char note[128];

    REQUIRE(ap_cl_open(&c, url, WD_LEASE_MS, 0, 3000) == RLK_OK);
    lost_calls = 0;
    rlk_async_set_lost_callback(c.ac, on_lost, NULL);
    memset(r, 0, sizeof r);
    for (int m = 0; m < 3; m++) {
        name_on("acw:nr:", mst[m], n[m][0], sizeof n[m][0]);
        name_on("acw:nrf:", mst[m], n[m][1], sizeof n[m][1]);
        name_on("acw:spin:", mst[m], n[m][2], sizeof n[m][2]);
        name_on("acw:delay:", mst[m], n[m][3], sizeof n[m][3]);
        name_on("acw:elect:", mst[m], n[m][4], sizeof n[m][4]);
        snprintf(dk[m], sizeof dk[m], "{%s}:rlk_delay", n[m][3]);
        snprintf(ctn[m], sizeof ctn[m], "ctl{%s}", n[m][3]);
        REQ(rlk_async_lock_nr(c.ac, RLK_KIND_LOCK, n[m][0], 1, 0, -1, on_res, &r[m][0]));
        REQ(rlk_async_lock_nr(c.ac, RLK_KIND_FAIR, n[m][1], 1, 0, -1, on_res, &r[m][1]));
        REQ(rlk_async_lock_spin(c.ac, n[m][2], 1, 0, -1, 1, 32, on_res, &r[m][2]));
        REQ(rlk_async_lock_delay(c.ac, n[m][3], 1, 0, -1, WD_DELAY_MS, on_res, &r[m][3]));
        REQ(rlk_async_elect_campaign(c.ac, n[m][4], 1, "wd", 0, -1, on_res, &r[m][4]));
        REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, ctn[m], 1, 0, WD_LEASE_MS, on_res, &r[m][5]));
    }
    for (int m = 0; m < 3; m++)
        for (int i = 0; i < 6; i++) {
            REQUIRE(wait_res(&c, &r[m][i], 5000));
            CHECKF(r[m][i].err == RLK_OK, "hold %d on master %d: %s", i, mst[m], r[m][i].errstr);
        }
    tk_stall_start(&st);
    wall0 = tk_wall_offset_ms();
    aloop_run_until(c.l, NULL, NULL, 3 * WD_LEASE_MS + 200);    /* the time under test */
    tk_stall_stop(&st);
    snprintf(note, sizeof note, "; longest stall %lld ms, wall clock moved %lld ms",
             tk_stall_max_gap_ms(&st), tk_wall_offset_ms() - wall0);
    for (int m = 0; m < 3; m++) {
        long long v, term = 0;

        for (int i = 0; i < 5; i++) {
            v = int_on(mst[m], "PTTL %s", n[m][i]);
            CHECKF(v > 0, "%s on master %d after 3 leases: PTTL %lld%s", n[m][i], mst[m], v, note);
        }
        v = int_on(mst[m], "PTTL %s", dk[m]);
        CHECKF(v > WD_DELAY_MS, "delay key %s on master %d: PTTL %lld (renewed: above %lld)%s",
               dk[m], mst[m], v, WD_DELAY_MS, note);
        CHECKF(int_on(mst[m], "EXISTS %s", ctn[m]) == 0, "control: leased %s expired", ctn[m]);
        CHECK(rlk_async_elect_term(c.ac, n[m][4], 1, &term) == RLK_OK && term == r[m][4].value);
    }
    CHECKF(lost_calls == 0, "lost reports: %d (the last: %s, reason %d)", lost_calls, lost_name, lost_reason);
    for (int m = 0; m < 3; m++) {
        static const int kinds[4] = {RLK_KIND_LOCK, RLK_KIND_FAIR, RLK_KIND_LOCK, RLK_KIND_LOCK};

        for (int i = 0; i < 4; i++) {
            DO(&c, u, rlk_async_unlock(c.ac, kinds[i], n[m][i], 1, on_res, &u));
            CHECKF(u.err == RLK_OK, "unlock %s: %s", n[m][i], u.errstr);
            CHECK_INT_EQ(int_on(mst[m], "EXISTS %s", n[m][i]), 0);
        }
        CHECK_INT_EQ(int_on(mst[m], "EXISTS %s", dk[m]), 0);
        DO(&c, u, rlk_async_elect_resign(c.ac, n[m][4], 1, on_res, &u));
        CHECK_INT_EQ(u.err, RLK_OK);
    }
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- procs */

/* Async processes (AP_TASKS tasks each) and a blocking one on the three
 * variants, a name on each master; own_names: the control. */
static void procs_run(int own_names)
{
    static const struct {
        int kind, variant;
        const char *prefix, *what;
    } k[] = {{RLK_KIND_LOCK, AP_NR, "acp:nr:", "non-reentrant lock"},
             {RLK_KIND_FAIR, AP_NR, "acp:nrf:", "non-reentrant fair lock"},
             {RLK_KIND_LOCK, AP_SPIN, "acp:spin:", "spin lock"}};

    for (int i = 0; i < 3; i++) {
        char n[64], line[256];
        ap_run run = {.url = url, .kind = k[i].kind, .variant = k[i].variant, .async_procs = 2,
                      .blocking_procs = 1, .iters = 20, .wait_ms = 30000, .cmd_timeout_ms = 3000,
                      .own_names = own_names};
        ap_result out;
        long long t = rlk_fx_now_ms();

        name_on(k[i].prefix, mst[i], n, sizeof n);
        REQUIRE(n[0]);
        run.name = n;
        REQUIRE(ap_contend(&run, &out) == 0);
        fprintf(stderr, "  %s%s %s on master %d: %s, %ld async/blocking handoffs, %lld ms\n",
                k[i].what, own_names ? " (control: a name each)" : "", n, mst[i],
                tk_hold_report_str(&out.rep, line, sizeof line), out.handoffs,
                rlk_fx_now_ms() - t);
        CHECK_INT_EQ(out.child_failures, 0);
        CHECK_INT_EQ(out.bad_lines, 0);
        CHECK_INT_EQ(out.rep.holds, out.expected);
        if (own_names)
            CHECKF(out.rep.conflicts > 0 && out.rep.peak > 1, "control %s: %ld overlapping "
                   "holds, peak %d: the check would not see a broken lock", k[i].what,
                   out.rep.conflicts, out.rep.peak);
        else
            CHECKF(out.rep.conflicts == 0, "%s: %ld overlapping holds", k[i].what,
                   out.rep.conflicts);
        CHECK_INT_EQ(int_on(mst[i], "EXISTS %s", n), 0);
    }
}

static void procs(void)
{
    procs_run(0);
}

static void procs_control(void)
{
    procs_run(1);
}

/* ---------------------------------------------------------------- main */

static const at_case cases[] = {
    {"nr", nr},
    {"spin", spin},
    {"delay", delay},
    {"elect", elect},
    {"sem_admin", sem_admin},
    {"watchdog", watchdog},
    {"procs", procs},
    {"procs_control", procs_control},
};

int main(int argc, char **argv)
{
    return AP_CLUSTER_MAIN("async_clkinds", argc, argv, &cl, url, mst, cases);
}
