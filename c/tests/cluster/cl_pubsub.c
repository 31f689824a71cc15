/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_pubsub.c - waking waiters across shards, both pub/sub modes, one
 * cluster for the whole program:
 *   - the default on a Redis 7 cluster is sharded (rlk_client_pubsub);
 *   - a waiter on each master in turn, woken by a release (the holder's
 *     client routes it to that master), with pubsub GLOBAL (PUBLISH is
 *     forwarded to the node the waiter's subscriber is on) and SHARDED
 *     (SSUBSCRIBE on the channel's master): latency from the unlock's return
 *     to the waiter's acquisition, per mode;
 *   - what a Redisson 4.7 client does on unlock in sharded mode (DEL, then
 *     SPUBLISH redisson_lock__channel:{name} 0, raw hiredis on the master)
 *     wakes an rlk waiter: latency from SPUBLISH's reply to the acquisition;
 *     control: the same with PUBLISH does not reach a sharded waiter, which
 *     only gets in at its bounded retry;
 *   - an rlk release in sharded mode reaches a raw SSUBSCRIBE client
 *     (smessage "0" on the channel), and not a raw SUBSCRIBE one;
 *   - the channel's slot migrated while a waiter is SSUBSCRIBEd: the server
 *     drops the subscription (sunsubscribe), the subscriber follows the slot
 *     to the new master, and the release there wakes the waiter;
 *   - the reentrant lock's handoff (docs/runtime.md) in both modes: three
 *     clients (a subscriber and a local queue each, as three processes) queue
 *     behind a holder on each master; every release reserves the lock for
 *     the first ticket and publishes the grant (message or smessage) before
 *     its 0: they acquire in queue order, none is woken by a wake-all, and
 *     each makes at most a few acquire round trips.
 */
#include "check.h"
#include "cl_util.h"
#include "cluster.h"
#include "tk_util.h"
#include "client/slot.h"
#include "runtime/rt.h"

#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ROUNDS 12

static rlk_fx_cluster cl;
static char url[512];

static rlk_client *connect_mode(int mode)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url;
    o.pool_size = 2;
    o.pubsub = mode;
    c = rlk_connect(&o);
    if (c && rlk_err(c) != RLK_OK) {
        fprintf(stderr, "  rlk_connect %s: %s\n", url, rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    return c;
}

static int master_index(int k)
{
    for (int i = 0, n = 0; i < cl.n; i++)
        if (rlk_fx_cluster_role(&cl, i) == 'M' && n++ == k)
            return i;
    return -1;
}

/* ------------------------------------------------------------ a waiter thread */

typedef struct waiter {
    rlk_client *c;
    char name[64];
    long long wait_ms;
    atomic_int done;
    int rc;
    long long got_ms;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    rlk_lock *l = rlk_lock_new(w->c, w->name);

    w->rc = l ? rlk_lock_try_lock(l, w->wait_ms, 10000) : -1;
    w->got_ms = rlk_fx_now_ms();
    atomic_store(&w->done, 1);
    if (w->rc == RLK_OK)
        rlk_lock_unlock(l);
    rlk_lock_free(l);
    return NULL;
}

/* Starts w waiting on a lock held by someone else; 0 once it is subscribed
 * (the waiter's first attempt failed, so it sleeps on the channel). */
static int start_waiter(waiter *w, pthread_t *t)
{
    atomic_store(&w->done, 0);
    w->rc = -1;
    pthread_create(t, NULL, waiter_main, w);
    return cl_wait_subscribed(&cl, w->name, 10000);
}

static void stats(const char *what, const long long *v, int n)
{
    long long sum = 0, max = 0;

    for (int i = 0; i < n; i++) {
        sum += v[i];
        max = v[i] > max ? v[i] : max;
    }
    tk_say("%s: %d rounds, mean %.1f ms, max %lld ms", what, n, n ? (double)sum / n : 0.0, max);
}

/* ------------------------------------------------------------ tests */

static void test_default_mode(void)
{
    rlk_client *c = connect_mode(RLK_PUBSUB_AUTO), *g = connect_mode(RLK_PUBSUB_GLOBAL);

    REQUIRE(c && g);
    CHECK_INT_EQ(rlk_client_pubsub(c), RLK_PUBSUB_SHARDED);   /* Redis 7 cluster */
    CHECK_INT_EQ(rlk_client_pubsub(g), RLK_PUBSUB_GLOBAL);
    rlk_free(c);
    rlk_free(g);
}

/* A waiter on each master in turn, woken by the holder's release. */
static void wake_rounds(int mode, const char *label)
{
    rlk_client *h = connect_mode(mode), *wc = connect_mode(mode);
    long long lat[ROUNDS];
    int n = 0;

    REQUIRE(h && wc);
    for (int r = 0; r < ROUNDS; r++) {
        waiter w = {.c = wc, .wait_ms = 30000};
        rlk_lock *l;
        pthread_t t;
        long long released;

        snprintf(w.name, sizeof w.name, "%s", "");
        cl_name_on(&cl, mode == RLK_PUBSUB_SHARDED ? "cl:ps:s" : "cl:ps:g", master_index(r % 3),
                   w.name, sizeof w.name);
        REQUIRE(w.name[0]);
        l = rlk_lock_new(h, w.name);
        REQUIRE(l && rlk_lock_try_lock(l, 0, 30000) == RLK_OK);
        REQUIRE(start_waiter(&w, &t) == 0);
        CHECKF(!atomic_load(&w.done), "%s: the waiter got in while the lock was held", label);
        CHECK(rlk_lock_unlock(l) == RLK_OK);
        released = rlk_fx_now_ms();
        pthread_join(t, NULL);
        CHECKF(w.rc == RLK_OK, "%s round %d: waiter rc %d", label, r, w.rc);
        lat[n++] = w.got_ms - released;
        CHECKF(w.got_ms - released < 2000, "%s round %d: the waiter woke %lld ms after the "
               "release (its lease was 30 s: it was not woken)", label, r, w.got_ms - released);
        rlk_lock_free(l);
    }
    stats(label, lat, n);
    rlk_free(h);
    rlk_free(wc);
}

static void test_wake_global(void)
{
    wake_rounds(RLK_PUBSUB_GLOBAL, "global (PUBLISH/SUBSCRIBE), unlock -> waiter acquired");
}

static void test_wake_sharded(void)
{
    wake_rounds(RLK_PUBSUB_SHARDED, "sharded (SPUBLISH/SSUBSCRIBE), unlock -> waiter acquired");
}

/* A Redisson-style unlock on the lock's master: DEL + <pub> channel 0. */
static long long raw_unlock(const char *name, const char *pub)
{
    int m = rlk_fx_cluster_key_owner(&cl, name);
    redisReply *r = rlk_fx_cluster_command(&cl, m, "DEL %s", name);
    long long t;

    if (r)
        freeReplyObject(r);
    r = rlk_fx_cluster_command(&cl, m, "%s redisson_lock__channel:{%s} 0", pub, name);
    t = rlk_fx_now_ms();
    if (r)
        freeReplyObject(r);
    return t;
}

/* A lock key as a Redisson holder leaves it: hash {uuid:thread -> 1}, PTTL ttl_ms. */
static void raw_hold(const char *name, long long ttl_ms)
{
    int m = rlk_fx_cluster_key_owner(&cl, name);
    redisReply *r = rlk_fx_cluster_command(&cl, m, "HSET %s redisson-uuid:1 1", name);

    if (r)
        freeReplyObject(r);
    r = rlk_fx_cluster_command(&cl, m, "PEXPIRE %s %lld", name, ttl_ms);
    if (r)
        freeReplyObject(r);
}

static void test_redisson_spublish_wakes_rlk(void)
{
    rlk_client *wc = connect_mode(RLK_PUBSUB_AUTO);
    long long lat[ROUNDS];

    REQUIRE(wc);
    for (int r = 0; r < ROUNDS; r++) {
        waiter w = {.c = wc, .wait_ms = 30000};
        pthread_t t;
        long long sent;

        cl_name_on(&cl, "cl:ps:redisson", master_index(r % 3), w.name, sizeof w.name);
        raw_hold(w.name, 30000);
        REQUIRE(start_waiter(&w, &t) == 0);
        sent = raw_unlock(w.name, "SPUBLISH");
        pthread_join(t, NULL);
        CHECKF(w.rc == RLK_OK, "round %d: waiter rc %d", r, w.rc);
        lat[r] = w.got_ms - sent;
        CHECKF(lat[r] < 2000, "round %d: woke %lld ms after SPUBLISH (TTL 30 s)", r, lat[r]);
    }
    stats("Redisson-style DEL + SPUBLISH -> rlk waiter acquired", lat, ROUNDS);
    /* Control: PUBLISH does not reach a sharded waiter; it gets in only at
     * its bounded retry, the lock's TTL (here 1.5 s). */
    {
        waiter w = {.c = wc, .wait_ms = 30000};
        pthread_t t;
        long long sent;

        cl_name_on(&cl, "cl:ps:ctl", master_index(0), w.name, sizeof w.name);
        raw_hold(w.name, 1500);
        REQUIRE(start_waiter(&w, &t) == 0);
        sent = raw_unlock(w.name, "PUBLISH");
        pthread_join(t, NULL);
        CHECK(w.rc == RLK_OK);
        tk_say("control: DEL + PUBLISH -> sharded rlk waiter acquired after %lld ms (its retry "
               "bound, the TTL 1.5 s)", w.got_ms - sent);
        CHECKF(w.got_ms - sent >= 500, "control: a sharded waiter heard PUBLISH (%lld ms)",
               w.got_ms - sent);
    }
    rlk_free(wc);
}

/* Reads one push from ctx within timeout_ms; NULL when none came. */
static redisReply *read_push(redisContext *ctx, long long timeout_ms)
{
    struct pollfd p = {ctx->fd, POLLIN, 0};
    void *r = NULL;

    if (redisGetReplyFromReader(ctx, &r) == REDIS_OK && r)
        return r;
    if (poll(&p, 1, (int)timeout_ms) <= 0 || redisBufferRead(ctx) != REDIS_OK ||
        redisGetReplyFromReader(ctx, &r) != REDIS_OK)
        return NULL;
    return r;
}

static void test_rlk_release_reaches_ssubscribe(void)
{
    rlk_client *h = connect_mode(RLK_PUBSUB_AUTO);
    char name[64], ch[128];
    redisContext *ss, *gs;
    redisReply *r;
    rlk_lock *l;
    int m;

    REQUIRE(h);
    cl_name_on(&cl, "cl:ps:raw", master_index(1), name, sizeof name);
    snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
    m = rlk_fx_cluster_key_owner(&cl, name);
    ss = rlk_fx_connect(&cl.node[m]);  /* its port, or a TLS-only node's control socket */
    gs = rlk_fx_connect(&cl.node[m]);
    REQUIRE(ss && !ss->err && gs && !gs->err);
    r = redisCommand(ss, "SSUBSCRIBE %s", ch);
    CHECK(r && r->type == REDIS_REPLY_ARRAY);
    if (r)
        freeReplyObject(r);
    r = redisCommand(gs, "SUBSCRIBE %s", ch);
    if (r)
        freeReplyObject(r);
    l = rlk_lock_new(h, name);
    REQUIRE(l && rlk_lock_try_lock(l, 0, 30000) == RLK_OK);
    CHECK(rlk_lock_unlock(l) == RLK_OK);
    r = read_push(ss, 2000);
    CHECKF(r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
           strcmp(r->element[0]->str, "smessage") == 0 && strcmp(r->element[1]->str, ch) == 0 &&
           strcmp(r->element[2]->str, "0") == 0,
           "the SSUBSCRIBE client got no smessage 0 on %s", ch);
    if (r)
        freeReplyObject(r);
    r = read_push(gs, 200);
    CHECKF(r == NULL, "a SUBSCRIBE client heard the sharded release");
    if (r)
        freeReplyObject(r);
    tk_say("rlk unlock (sharded) -> raw SSUBSCRIBE client on %s got smessage 0; a raw SUBSCRIBE "
           "client got nothing", ch);
    redisFree(ss);
    redisFree(gs);
    rlk_lock_free(l);
    rlk_free(h);
}

static void test_migration_while_ssubscribed(void)
{
    rlk_client *h = connect_mode(RLK_PUBSUB_SHARDED), *wc = connect_mode(RLK_PUBSUB_SHARDED);
    int src = master_index(0), dst = master_index(1), slot, on;
    waiter w = {.wait_ms = 60000};
    char ch[128];
    rlk_lock *l;
    pthread_t t;
    long long t0, released;

    REQUIRE(h && wc && src >= 0 && dst >= 0);
    w.c = wc;
    cl_name_on(&cl, "cl:ps:mig", src, w.name, sizeof w.name);
    snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", w.name);
    slot = rlk_key_slot(w.name, strlen(w.name));
    l = rlk_lock_new(h, w.name);
    REQUIRE(l && rlk_lock_try_lock(l, 0, 60000) == RLK_OK);
    REQUIRE(start_waiter(&w, &t) == 0);
    CHECK_INT_EQ(cl_shard_subscribed_on(&cl, ch), src);
    REQUIRE(rlk_fx_cluster_move_slot(&cl, slot, src, dst, 15000) == 0);
    t0 = rlk_fx_now_ms();
    while ((on = cl_shard_subscribed_on(&cl, ch)) != dst && rlk_fx_now_ms() - t0 < 10000)
        nanosleep(&(struct timespec){0, 5000000L}, NULL);
    CHECKF(on == dst, "the waiter's subscription did not follow the slot (on node %d, owner %d)",
           on, dst);
    tk_say("slot %d moved: the waiter's SSUBSCRIBE followed to the new master within %lld ms",
           slot, rlk_fx_now_ms() - t0);
    CHECKF(!atomic_load(&w.done), "the waiter got in while the lock was held (rc %d)", w.rc);
    CHECK(rlk_lock_unlock(l) == RLK_OK);
    released = rlk_fx_now_ms();
    pthread_join(t, NULL);
    CHECKF(w.rc == RLK_OK, "waiter rc %d", w.rc);
    tk_say("after the migration: waiter acquired %lld ms after the release (lease 60 s)",
           w.got_ms - released);
    CHECKF(w.got_ms - released < 2000, "the waiter woke %lld ms after the release",
           w.got_ms - released);
    rlk_lock_free(l);
    rlk_free(h);
    rlk_free(wc);
    CHECK(rlk_fx_cluster_move_slot(&cl, slot, dst, src, 15000) == 0);
}

/* LLEN of name's waiter queue ({name}:rlk_waiters) on the master owning it; -1 on error. */
static long long queue_len(const char *name)
{
    char key[96];
    redisReply *r;
    long long n;

    snprintf(key, sizeof key, "{%s}:rlk_waiters", name);
    r = rlk_fx_cluster_command(&cl, rlk_fx_cluster_key_owner(&cl, key), "LLEN %s", key);
    n = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -1;
    if (r)
        freeReplyObject(r);
    return n;
}

static int wait_queue_len(const char *name, long long want, long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms();

    while (queue_len(name) < want) {
        if (rlk_fx_now_ms() - t0 > timeout_ms)
            return -1;
        nanosleep(&(struct timespec){0, 2000000L}, NULL);
    }
    return 0;
}

#define HO_WAITERS 3

/* Child: one client (mode) waits for name, says "ready" first and then "got <monotonic ms> <rc>
 * <reentrant/acquire calls> <wake-alls>", unlocking at once. */
static int child_handoff(const char *curl, const char *name, int mode)
{
    rlk_client *c;
    rlk_lock *l;
    rlk_runtime_stats st = {0};
    long long got;
    int rc;

    snprintf(url, sizeof url, "%s", curl);
    c = connect_mode(mode);
    l = c ? rlk_lock_new(c, name) : NULL;
    if (!l)
        return 2;
    tk_say("ready");
    rc = rlk_lock_try_lock(l, 30000, 10000);
    got = rlk_fx_now_ms();
    rlk_runtime_stats_get(c, &st);
    if (rc == RLK_OK)
        rlk_lock_unlock(l);
    tk_say("got %lld %d %llu %llu %llu", got, rc, st.acquire_calls, st.wake_all, st.rechecks);
    rlk_lock_free(l);
    rlk_free(c);
    return 0;
}

/* Three waiter processes (a client, a subscriber and a local queue each) queue in turn behind
 * a holder on each master; the release goes down the queue. */
static void handoff_rounds(int mode, const char *label)
{
    rlk_client *h = connect_mode(mode);
    long long worst_ms = 0;
    unsigned long long calls_max = 0;
    char mode_s[8];

    REQUIRE(h);
    snprintf(mode_s, sizeof mode_s, "%d", mode);
    for (int m = 0; m < 3; m++) {
        tk_child kid[HO_WAITERS];
        long long got[HO_WAITERS] = {0}, released;
        unsigned long long calls[HO_WAITERS] = {0}, wake_all[HO_WAITERS] = {0};
        unsigned long long rechecks[HO_WAITERS] = {0};
        long long queued[HO_WAITERS] = {0};     /* when the waiter was seen in the queue */
        int rc[HO_WAITERS] = {-1, -1, -1}, spawned = 0;
        char name[64] = "", line[128];
        rlk_lock *l;

        cl_name_on(&cl, mode == RLK_PUBSUB_SHARDED ? "cl:ho:s" : "cl:ho:g", master_index(m),
                   name, sizeof name);
        REQUIRE(name[0]);
        l = rlk_lock_new(h, name);
        REQUIRE(l && rlk_lock_try_lock(l, 0, 30000) == RLK_OK);
        for (int i = 0; i < HO_WAITERS; i++) {
            const char *args[] = {"handoff", url, name, mode_s, NULL};

            if (!CHECKF(tk_child_spawn(&kid[i], args) == 0 &&
                        tk_child_read_line(&kid[i], line, sizeof line, 15000) == 0 &&
                        strcmp(line, "ready") == 0, "%s master %d: waiter %d did not start",
                        label, m, i))
                break;
            spawned++;
            if (!CHECKF(wait_queue_len(name, i + 1, 10000) == 0, "%s master %d: waiter %d did "
                        "not queue (queue length %lld)", label, m, i, queue_len(name)))
                break;
            queued[i] = rlk_fx_now_ms();
        }
        CHECK(rlk_lock_unlock(l) == RLK_OK);
        released = rlk_fx_now_ms();
        for (int i = 0; i < spawned; i++) {
            CHECKF(tk_child_read_line(&kid[i], line, sizeof line, 20000) == 0 &&
                   sscanf(line, "got %lld %d %llu %llu %llu", &got[i], &rc[i], &calls[i],
                          &wake_all[i], &rechecks[i]) == 5, "%s master %d: waiter %d said nothing",
                   label, m, i);
            tk_child_wait(&kid[i], 5000);
            CHECKF(rc[i] == RLK_OK, "%s master %d: waiter %d rc %d", label, m, i, rc[i]);
            CHECKF(wake_all[i] == 0, "%s master %d: waiter %d woken by %llu wake-all(s) (a grant "
                   "taken for another message?)", label, m, i, wake_all[i]);
            /* A re-check after another ticket's claim window (-3: the grant had not come
             * yet, seen over TLS with global pub/sub) is an attempt of the protocol, not a
             * wake-up meant for another waiter; so is a queued waiter's keepalive, an attempt
             * at least once a second while it waits (a slow machine starting the other
             * waiters makes the first wait longer). */
            {
                long long waited = got[i] > queued[i] ? got[i] - queued[i] : 0;
                unsigned long long allowed = 4 + (unsigned long long)(waited / 1000);

                CHECKF(calls[i] - rechecks[i] <= allowed, "%s master %d: waiter %d made %llu "
                       "acquire calls, %llu of them re-checks, in %lld ms queued (at most %llu: "
                       "woken for releases meant for others?)", label, m, i, calls[i],
                       rechecks[i], waited, allowed);
            }
            calls_max = calls[i] > calls_max ? calls[i] : calls_max;
        }
        if (spawned == HO_WAITERS) {
            CHECKF(got[0] <= got[1] && got[1] <= got[2], "%s master %d: acquired out of queue "
                   "order at +%lld, +%lld, +%lld ms", label, m, got[0] - released,
                   got[1] - released, got[2] - released);
            /* Without a working wake-up a queued waiter gets in at its 1 s retry: 3 s for three. */
            CHECKF(got[2] - released < 2500, "%s master %d: the last waiter got in %lld ms after "
                   "the release", label, m, got[2] - released);
            worst_ms = got[2] - released > worst_ms ? got[2] - released : worst_ms;
        }
        CHECK_INT_EQ(queue_len(name), 0);
        rlk_lock_free(l);
    }
    tk_say("%s: 3 masters x %d queued processes, in order; the last acquired at most %lld ms "
           "after the release; at most %llu acquire calls per waiter", label, HO_WAITERS,
           worst_ms, calls_max);
    rlk_free(h);
}

static void test_handoff_global(void)
{
    handoff_rounds(RLK_PUBSUB_GLOBAL, "handoff, global (grant as message)");
}

static void test_handoff_sharded(void)
{
    handoff_rounds(RLK_PUBSUB_SHARDED, "handoff, sharded (grant as smessage)");
}

int main(int argc, char **argv)
{
    if (argc == 5 && strcmp(argv[1], "handoff") == 0)
        return child_handoff(argv[2], argv[3], atoi(argv[4]));
    if (cl_start("cl_pubsub", &cl, 0, 4, url, sizeof url) != 0)
        return 1;
    RUN_TEST(test_default_mode);
    RUN_TEST(test_wake_global);
    RUN_TEST(test_wake_sharded);
    RUN_TEST(test_redisson_spublish_wakes_rlk);
    RUN_TEST(test_rlk_release_reaches_ssubscribe);
    RUN_TEST(test_migration_while_ssubscribed);
    RUN_TEST(test_handoff_global);
    RUN_TEST(test_handoff_sharded);
    rlk_fx_cluster_stop(&cl);
    return check_summary("cl_pubsub");
}
