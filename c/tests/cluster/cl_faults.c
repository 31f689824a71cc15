/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_faults.c - a Redis Cluster changing under held and awaited locks, one
 * cluster for the whole program:
 *   - a slot migrated (SETSLOT IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE)
 *     while its lock is held lease-less and waited on: the watchdog renews
 *     through ASK and MOVED, the holder keeps it through 2 more leases, the
 *     waiter acquires after the release;
 *   - CLUSTER FAILOVER of the holder's shard: the holder renews on the new
 *     master, keeps it, the waiter acquires after the release;
 *   - the node a waiter's subscriber is connected to dies (made a replica
 *     first if it was a master, then SIGKILLed): the subscriber goes on with
 *     another node and the release still wakes the waiter;
 *   - 4 processes x 2 threads contend for one lock while its slot is moved
 *     to another master and back: the merged hold log shows 0 overlaps.
 *
 * Child mode (argv[1]): contend URL THREADS ITERS LOGFILE (tk_util.h).
 */
#include "check.h"
#include "cl_util.h"
#include "cluster.h"
#include "holdlog.h"
#include "tk_util.h"
#include "client/slot.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define LEASE_MS 1500LL
#define MUTEX_NAME "cl:mutex"

static rlk_fx_cluster cl;
static char url[512];

static int master_index(int k)
{
    for (int i = 0, n = 0; i < cl.n; i++)
        if (rlk_fx_cluster_role(&cl, i) == 'M' && n++ == k)
            return i;
    return -1;
}

static atomic_int lost_count;

static void on_lost(const char *name, const char *owner, int reason, void *ud)
{
    (void)ud;
    fprintf(stderr, "  lost: %s (%s) reason %d\n", name, owner, reason);
    atomic_fetch_add(&lost_count, 1);
}

/* ------------------------------------------------------------ a waiter thread */

typedef struct waiter {
    rlk_client *c;
    char name[64];
    atomic_int done;
    int rc;
    long long got_ms;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;
    rlk_lock *l = rlk_lock_new(w->c, w->name);

    w->rc = l ? rlk_lock_try_lock(l, 60000, 10000) : -1;
    w->got_ms = rlk_fx_now_ms();
    atomic_store(&w->done, 1);
    if (w->rc == RLK_OK)
        rlk_lock_unlock(l);
    rlk_lock_free(l);
    return NULL;
}

/* Holder client h holds w->name lease-less; a waiter thread (client wc)
 * waits on it. Returns 0 once the waiter is subscribed. */
static int hold_and_wait(rlk_client *h, rlk_lock **l, waiter *w, pthread_t *t)
{
    long long t0 = rlk_fx_now_ms();

    *l = rlk_lock_new(h, w->name);
    if (!*l || rlk_lock_try_lock(*l, 0, 0) != RLK_OK)
        return -1;
    pthread_create(t, NULL, waiter_main, w);
    while (!cl_subscribed(&cl, w->name) && rlk_fx_now_ms() - t0 < 10000)
        nanosleep(&(struct timespec){0, 5000000L}, NULL);
    return cl_subscribed(&cl, w->name) ? 0 : -1;
}

/* After the change: 2 more leases held (renewed where the key is now),
 * the waiter still waiting; then the release wakes it. */
static void keep_then_release(const char *what, rlk_lock *l, waiter *w, pthread_t t)
{
    int held = 0;
    long long released, ttl;

    cl_pause_ms(2 * LEASE_MS);
    ttl = cl_pttl(&cl, w->name);
    CHECKF(rlk_lock_is_held_by_me(l, &held) == RLK_OK && held, "%s: holder lost the lock", what);
    CHECKF(ttl > 0, "%s: the lock's PTTL on its master is %lld", what, ttl);
    CHECKF(!atomic_load(&w->done), "%s: the waiter got in while the lock was held (rc %d)", what,
           w->rc);
    CHECK_INT_EQ(atomic_load(&lost_count), 0);
    CHECKF(rlk_lock_unlock(l) == RLK_OK, "%s: unlock", what);
    released = rlk_fx_now_ms();
    pthread_join(t, NULL);
    CHECKF(w->rc == RLK_OK, "%s: waiter rc %d", what, w->rc);
    tk_say("%s: holder kept the lock (PTTL %lld ms after 2 more leases of %lld), waiter acquired "
           "%lld ms after the release", what, ttl, LEASE_MS, w->got_ms - released);
    CHECKF(w->got_ms - released < 2000, "%s: waiter woke %lld ms after the release", what,
           w->got_ms - released);
}

/* ------------------------------------------------------------ tests */

static void test_migration_held_and_waited(void)
{
    rlk_client *h = tk_connect(url, LEASE_MS, 2), *wc = tk_connect(url, 0, 2);
    int src = master_index(0), dst = master_index(1), slot;
    waiter w = {0};
    rlk_lock *l = NULL;
    pthread_t t;

    REQUIRE(h && wc && src >= 0 && dst >= 0);
    atomic_store(&lost_count, 0);
    rlk_set_lost_callback(h, on_lost, NULL);
    w.c = wc;
    w.rc = -1;
    cl_name_on(&cl, "cl:mig:", src, w.name, sizeof w.name);
    slot = rlk_key_slot(w.name, strlen(w.name));
    REQUIRE(hold_and_wait(h, &l, &w, &t) == 0);
    /* The in-between state for a lease: renewals go to the source, get ASK
     * (the key moved), and renew on the target with ASKING. */
    REQUIRE(rlk_fx_cluster_set_importing(&cl, slot, dst, src) == 0);
    REQUIRE(rlk_fx_cluster_set_migrating(&cl, slot, src, dst) == 0);
    CHECK(rlk_fx_cluster_migrate_keys(&cl, slot, src, dst) >= 1);
    cl_pause_ms(LEASE_MS);
    CHECKF(cl_pttl(&cl, w.name) == -3 || cl_pttl(&cl, w.name) != -2, "lost during the migration");
    REQUIRE(rlk_fx_cluster_set_node(&cl, slot, dst) == 0);
    CHECK(rlk_fx_cluster_wait_ok(&cl, 15000) == 0);
    CHECK_INT_EQ(rlk_fx_cluster_key_owner(&cl, w.name), dst);
    keep_then_release("migration", l, &w, t);
    rlk_lock_free(l);
    rlk_free(h);
    rlk_free(wc);
    CHECK(rlk_fx_cluster_move_slot(&cl, slot, dst, src, 15000) == 0);
}

static void test_failover_held_and_waited(void)
{
    rlk_client *h = tk_connect(url, LEASE_MS, 2), *wc = tk_connect(url, 0, 2);
    int m = master_index(2), rep;
    waiter w = {0};
    rlk_lock *l = NULL;
    pthread_t t;
    long long t0;

    REQUIRE(h && wc && m >= 0);
    rep = rlk_fx_cluster_replica_of(&cl, m);
    REQUIRE(rep >= 0);
    atomic_store(&lost_count, 0);
    rlk_set_lost_callback(h, on_lost, NULL);
    w.c = wc;
    w.rc = -1;
    cl_name_on(&cl, "cl:fo:", m, w.name, sizeof w.name);
    REQUIRE(hold_and_wait(h, &l, &w, &t) == 0);
    cl_pause_ms(LEASE_MS / 2);     /* a renewal or two on the old master */
    t0 = rlk_fx_now_ms();
    REQUIRE(rlk_fx_cluster_failover(&cl, rep, 20000) == 0);
    tk_say("failover of node %d to its replica %d took %lld ms", m, rep, rlk_fx_now_ms() - t0);
    CHECK_INT_EQ(rlk_fx_cluster_key_owner(&cl, w.name), rep);
    keep_then_release("failover", l, &w, t);
    rlk_lock_free(l);
    rlk_free(h);
    rlk_free(wc);
}

/* ------------------------------------------------------------ processes */

typedef struct contend {
    rlk_lock *lock;
    int iters;
    tk_hold *recs;
    atomic_int errors;
} contend;

static void *contend_thread(void *arg)
{
    tk_thread_arg *a = arg;
    contend *ct = a->ctx;
    unsigned seed = (unsigned)getpid() * 7u + (unsigned)a->idx;

    for (int i = 0; i < ct->iters; i++) {
        tk_hold *r = &ct->recs[a->idx * ct->iters + i];

        if (rlk_lock_lock(ct->lock, a->idx % 2 ? 5000 : 0) != RLK_OK) {
            atomic_fetch_add(&ct->errors, 1);
            continue;
        }
        *r = (tk_hold){.pid = (int)getpid(), .thread = a->idx, .seq = i, .kind = TK_HOLD_EXCL};
        r->start_ns = rlk_fx_now_ns();
        tk_spin_ns(1000000 + (long long)(tk_rand(&seed) % 2000000));
        r->end_ns = rlk_fx_now_ns();
        if (rlk_lock_unlock(ct->lock) != RLK_OK)
            atomic_fetch_add(&ct->errors, 1);
    }
    return NULL;
}

static int child_contend(const char *curl, int threads, int iters, const char *logpath)
{
    rlk_client *c = tk_connect(curl, 2000, threads);
    contend ct = {.iters = iters};
    size_t n;

    if (!c || threads > 16 || !(ct.lock = rlk_lock_new(c, MUTEX_NAME)))
        return 2;
    if (!(ct.recs = calloc((size_t)(threads * iters), sizeof *ct.recs)))
        return 2;
    if (tk_child_go_threads(threads, contend_thread, &ct) != 0)
        return 2;
    n = tk_holds_compact(ct.recs, (size_t)(threads * iters));
    if (tk_holds_save(logpath, ct.recs, n) != 0)
        n = 0;
    tk_say("done %zu %d", n, atomic_load(&ct.errors));
    free(ct.recs);
    rlk_lock_free(ct.lock);
    rlk_free(c);
    return 0;
}

#define PROCS 4
#define THREADS 2
#define ITERS 120

static void test_processes_while_resharding(void)
{
    char dir[] = "/tmp/rlk-cl-XXXXXX", line[128];
    tk_child kids[PROCS];
    tk_hold *recs = NULL;
    int spawned, done = 0, errors = 0, bad = 0, moves = 0;
    int slot = rlk_key_slot(MUTEX_NAME, strlen(MUTEX_NAME));
    int src = rlk_fx_cluster_key_owner(&cl, MUTEX_NAME), dst = -1;
    size_t n = 0;
    tk_hold_report rep;
    long long t0, moved_ms;

    for (int k = 0; k < 3 && dst < 0; k++)
        if (master_index(k) != src)
            dst = master_index(k);
    REQUIRE(src >= 0 && dst >= 0);
    REQUIRE(mkdtemp(dir) != NULL);
    spawned = tk_children_spawn_contend(kids, PROCS, url, THREADS, ITERS, dir);
    CHECK_INT_EQ(spawned, PROCS);
    for (int p = 0; p < spawned; p++)
        CHECKF(tk_child_read_line(&kids[p], line, sizeof line, 15000) == 0 &&
               strcmp(line, "ready") == 0, "child %d did not get ready", p);
    t0 = rlk_fx_now_ms();
    tk_children_send(kids, spawned, "go");
    /* The lock's slot moves away and back while they contend. */
    cl_pause_ms(400);
    moves += rlk_fx_cluster_move_slot(&cl, slot, src, dst, 15000) == 0;
    cl_pause_ms(600);
    moves += rlk_fx_cluster_move_slot(&cl, slot, dst, src, 15000) == 0;
    moved_ms = rlk_fx_now_ms() - t0;
    for (int p = 0; p < spawned; p++) {
        size_t got = 0;
        int errs = 0;

        if (tk_child_read_line(&kids[p], line, sizeof line, 90000) == 0 &&
            sscanf(line, "done %zu %d", &got, &errs) == 2) {
            done++;
            errors += errs;
        }
        CHECKF(tk_child_wait(&kids[p], 10000) == 0, "child %d did not exit cleanly", p);
    }
    tk_children_take_logs(dir, PROCS, &recs, &n, &bad);
    rmdir(dir);
    rep = tk_holds_check(recs, n, 1);
    tk_say("processes: %d x %d threads, %zu holds of %s in %lld ms; its slot moved %d times "
           "(at 400 ms and 1000 ms, both done after %lld ms); %ld overlaps, %d errors", PROCS, THREADS, n, MUTEX_NAME,
           rlk_fx_now_ms() - t0, moves, moved_ms, rep.conflicts, errors);
    CHECK_INT_EQ(moves, 2);
    CHECK_INT_EQ(done, PROCS);
    CHECK_INT_EQ(errors, 0);
    CHECK_INT_EQ(n, PROCS * THREADS * ITERS);
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(rep.conflicts, 0);
    free(recs);
}

/* Runs last: it kills a node. */
static void test_subscriber_node_dies(void)
{
    rlk_client *h = tk_connect(url, 0, 2), *wc = tk_connect(url, 0, 2);
    waiter w = {0};
    rlk_lock *l;
    pthread_t t;
    int node = -1;
    long long t0, released;

    REQUIRE(h && wc);
    w.c = wc;
    w.rc = -1;
    snprintf(w.name, sizeof w.name, "cl:subdies");
    l = rlk_lock_new(h, w.name);
    REQUIRE(l && rlk_lock_try_lock(l, 0, 60000) == RLK_OK);
    pthread_create(&t, NULL, waiter_main, &w);
    t0 = rlk_fx_now_ms();
    while (!cl_subscribed(&cl, w.name) && rlk_fx_now_ms() - t0 < 10000)
        nanosleep(&(struct timespec){0, 5000000L}, NULL);
    for (int i = 0; i < cl.n; i++)
        if (tk_count_clients_named(&cl.node[i], "rlk-sub") > 0)
            node = i;
    REQUIRE(node >= 0);
    if (rlk_fx_cluster_role(&cl, node) == 'M')
        REQUIRE(rlk_fx_cluster_failover(&cl, rlk_fx_cluster_replica_of(&cl, node), 20000) == 0);
    REQUIRE(rlk_fx_crash(&cl.node[node]) == 0);
    t0 = rlk_fx_now_ms();
    while (!cl_subscribed(&cl, w.name) && rlk_fx_now_ms() - t0 < 15000)
        nanosleep(&(struct timespec){0, 10000000L}, NULL);
    CHECKF(cl_subscribed(&cl, w.name), "no node has the waiter's subscription %lld ms after node %d died",
           rlk_fx_now_ms() - t0, node);
    tk_say("subscriber: node %d died, subscribed again on another node after %lld ms", node,
           rlk_fx_now_ms() - t0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    released = rlk_fx_now_ms();
    pthread_join(t, NULL);
    CHECKF(w.rc == RLK_OK, "waiter rc %d", w.rc);
    tk_say("subscriber: waiter acquired %lld ms after the release (lock lease 60000 ms)",
           w.got_ms - released);
    CHECKF(w.got_ms - released < 2000, "waiter woke %lld ms after the release",
           w.got_ms - released);
    rlk_lock_free(l);
    rlk_free(h);
    rlk_free(wc);
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "contend") == 0)
        return child_contend(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
    if (cl_start("cl_faults", &cl, 1, 5, url, sizeof url) != 0)
        return 1;
    RUN_TEST(test_migration_held_and_waited);
    RUN_TEST(test_processes_while_resharding);
    RUN_TEST(test_failover_held_and_waited);
    RUN_TEST(test_subscriber_node_dies);
    rlk_fx_cluster_stop(&cl);
    return check_summary("cl_faults");
}
