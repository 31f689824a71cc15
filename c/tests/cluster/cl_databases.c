/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_databases.c - a database other than 0 on a cluster (redis+cluster://.../db), and
 * Valkey 9's atomic slot migration, one cluster for the whole program:
 *
 * On a server without numbered databases in cluster mode (Redis 7 and 8, Valkey 8):
 *   - a cluster URL with /3 is refused at connect, by the library and by `rlk`, with the
 *     node's reply and the reason ("Redis Cluster has only database 0; ..."), and nothing is
 *     written to database 0 in its place.
 * On Valkey 9, whose nodes run with cluster-databases 16:
 *   - /20 (past cluster-databases) is refused the same way;
 *   - every kind, on a name owned by each master, is taken in database 3 while a client of
 *     database 0 holds the same name, another client of database 3 is turned away, and the keys
 *     are read back in database 3 on the name's master;
 *   - pub/sub is per server, not per database: a raw subscriber selected on database 3 hears a
 *     release made in database 0 (the fact), and an rlk waiter in database 3, woken by such
 *     releases, never takes the lock its database-3 holder keeps; the database-3 release wakes
 *     it (reentrant lock and semaphore);
 *   - 4 processes x 2 threads contend for one lock in database 3 while a database-0 client
 *     holds the same name: 0 overlaps;
 *   - CLUSTER MIGRATESLOTS moves the slot of a lock held lease-less and awaited in database 3
 *     (and held in database 0 too): the holder keeps it through 2 more leases on the new
 *     master, the waiter acquires at the release; then 4 processes contend while the slot
 *     moves away and back: 0 overlaps;
 *   - `rlk lock` with the /3 URL holds its lock in database 3.
 *
 * argv[1]: the rlk binary (optional: the CLI cases are left out without it).
 * Child mode (argv[1]): contend URL THREADS ITERS LOGFILE (tk_util.h).
 */
#include "check.h"
#include "cl_util.h"
#include "cluster.h"
#include "holdlog.h"
#include "tk_util.h"
#include "client/slot.h"
#include "client/url.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define DB 3
#define DATABASES 16
#define LEASE_MS 1500LL
#define REASON "Redis Cluster has only database 0; Valkey 9 with cluster-databases allows more"

static rlk_fx_cluster cl;
static rlk_fx_cldb cdb;        /* its URLs (url0, url_db: /3), masters, has_dbs */
static const char *rlk_bin;

/* ------------------------------------------------------------ helpers */

/* An integer reply of `fmt` (one %s: key) in database db on the master of key; -3: none. */
static long long db_int(int db, const char *key, const char *fmt)
{
    return rlk_fx_cluster_db_int(&cl, db, key, fmt);
}

static long long db_exists(int db, const char *key)
{
    return db_int(db, key, "EXISTS %s");
}

static long long db_pttl(int db, const char *key)
{
    return db_int(db, key, "PTTL %s");
}

static void url_with_db(char *out, size_t len, int db)
{
    if (snprintf(out, len, "%s/%d", cdb.seeds, db) >= (int)len)
        out[0] = '\0';
}

/* Runs "rlk ARGS" (a shell line; $U is the /3 URL) with stderr merged; the exit code, -1: did
 * not run. */
static int run(char *out, size_t len, const char *args)
{
    char cmd[2048];
    FILE *p;
    size_t n = 0;
    int st;

    snprintf(cmd, sizeof cmd, "U='%s'; timeout 60 '%s' %s 2>&1", cdb.url_db, rlk_bin, args);
    p = popen(cmd, "r");
    if (!p)
        return -1;
    while (n + 1 < len && fgets(out + n, (int)(len - n), p))
        n += strlen(out + n);
    out[n] = '\0';
    st = pclose(p);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* ------------------------------------------------------------ the URL */

static void test_url(void)
{
    rlk_url u;
    char err[256], *m;

    REQUIRE_INT_EQ(rlk_url_parse("redis+cluster://u:p@h1:7000,h2:7001/3", &u, err, sizeof err),
                   RLK_OK);
    CHECK(u.is_cluster);
    CHECK_INT_EQ(u.nseeds, 2);
    CHECK_STR_EQ(u.seeds[1].host, "h2");
    CHECK_INT_EQ(u.seeds[1].port, 7001);
    CHECK_INT_EQ(u.db, 3);
    m = rlk_url_masked(&u);
    CHECK_STR_EQ(m, "redis+cluster://u:***@h1:7000,h2:7001/3");
    free(m);
    rlk_url_free(&u);
    REQUIRE_INT_EQ(rlk_url_parse("redis+cluster://h1:7000/", &u, err, sizeof err), RLK_OK);
    CHECK_INT_EQ(u.db, 0);
    m = rlk_url_masked(&u);
    CHECK_STR_EQ(m, "redis+cluster://h1:7000");
    free(m);
    rlk_url_free(&u);
    CHECK_INT_EQ(rlk_url_parse("redis+cluster://h1:7000/x", &u, err, sizeof err), RLK_ERR_URL);
    CHECK_STR_CONTAINS(err, "database must be a number");
    rlk_url_free(&u);
    CHECK_INT_EQ(rlk_url_parse("redis+cluster://h1:7000/3/4", &u, err, sizeof err), RLK_ERR_URL);
    CHECK_STR_CONTAINS(err, "[/db]");
    rlk_url_free(&u);
    CHECK_INT_EQ(rlk_url_parse("redis+cluster://h1:7000/3?a=b", &u, err, sizeof err), RLK_ERR_URL);
    rlk_url_free(&u);
    CHECK_INT_EQ(rlk_url_parse("redis+cluster://h1:7000?db=3", &u, err, sizeof err), RLK_ERR_URL);
    rlk_url_free(&u);
}

/* ------------------------------------------------------------ refused */

/* A cluster URL with database db is refused on connect (no_preload either way) with the
 * nodes' reply and why; a lock call on it fails the same and writes nothing to database 0. */
static void refused(int db, const char *reply, const char *why)
{
    char u[600], n[64];

    url_with_db(u, sizeof u, db);
    cl_name_on(&cl, "cl:db:refused:", cdb.mst[1], n, sizeof n);
    for (int no_preload = 0; no_preload < 2; no_preload++) {
        rlk_options o;
        rlk_client *c;
        rlk_lock *l;

        rlk_options_init(&o);
        o.url = u;
        o.no_preload = no_preload;
        c = rlk_connect(&o);
        REQUIRE(c);
        CHECKF(rlk_err(c) == RLK_ERR_AUTH, "connect %s (no_preload %d): %d %s", u, no_preload,
               rlk_err(c), rlk_errstr(c));
        CHECK_STR_CONTAINS(rlk_errstr(c), reply);
        CHECK_STR_CONTAINS(rlk_errstr(c), why);
        tk_say("refused (db %d, no_preload %d): %s", db, no_preload, rlk_errstr(c));
        l = rlk_lock_new(c, n);
        REQUIRE(l);
        CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 30000), RLK_ERR_AUTH);
        CHECK_STR_CONTAINS(rlk_errstr(c), why);
        rlk_lock_free(l);
        rlk_free(c);
    }
    CHECKF(db_exists(0, n) == 0, "%s was written to database 0", n);
    if (rlk_bin) {
        static char out[4096];
        char args[1024];

        snprintf(args, sizeof args, "lock %s --url '%s' -- true", n, u);
        CHECK_INT_EQ(run(out, sizeof out, args), 3);
        CHECK_STR_CONTAINS(out, why);
        tk_say("rlk lock with /%d: %s", db, out);
        CHECKF(db_exists(0, n) == 0, "rlk wrote %s to database 0", n);
    }
}

static void test_refused_without_databases(void)
{
    refused(DB, "SELECT is not allowed in cluster mode", REASON);
}

static void test_refused_past_cluster_databases(void)
{
    refused(DATABASES + 4, "DB index is out of range", "cluster-databases");
}

/* ------------------------------------------------------------ every kind in database 3 */

/* c0 (database 0) holds names owned by master; c3 takes them in database 3, c3b (database 3)
 * is turned away; the keys are in database 3 on the master, the database-0 ones untouched. */
static void kinds_on(rlk_client *c0, rlk_client *c3, rlk_client *c3b, int master)
{
    char n[64];

    cl_name_on(&cl, "cl:db:lock:", master, n, sizeof n);
    {
        rlk_lock *a = rlk_lock_new(c0, n), *b = rlk_lock_new(c3, n), *d = rlk_lock_new(c3b, n);

        REQUIRE(a && b && d);
        CHECKF(rlk_lock_try_lock(a, 0, 60000) == RLK_OK, "lock db 0 %s: %s", n, rlk_errstr(c0));
        CHECKF(rlk_lock_try_lock(b, 0, 60000) == RLK_OK, "lock db 3 %s: %s", n, rlk_errstr(c3));
        CHECK_INT_EQ(rlk_lock_try_lock(d, 0, 60000), RLK_ERR_BUSY);
        CHECK(db_pttl(DB, n) > 0);
        CHECK_INT_EQ(rlk_lock_unlock(b), RLK_OK);
        CHECK_INT_EQ(db_exists(DB, n), 0);
        CHECK(db_pttl(0, n) > 0);
        CHECK_INT_EQ(rlk_lock_try_lock(d, 0, 60000), RLK_OK);
        CHECK_INT_EQ(rlk_lock_unlock(d), RLK_OK);
        CHECK_INT_EQ(rlk_lock_unlock(a), RLK_OK);
        CHECK_INT_EQ(db_exists(0, n), 0);
        rlk_lock_free(a);
        rlk_lock_free(b);
        rlk_lock_free(d);
    }
    cl_name_on(&cl, "cl:db:fair:", master, n, sizeof n);
    {
        rlk_fairlock *a = rlk_fairlock_new(c0, n), *b = rlk_fairlock_new(c3, n);
        rlk_fairlock *d = rlk_fairlock_new(c3b, n);

        REQUIRE(a && b && d);
        CHECKF(rlk_fairlock_try_lock(a, 0, 60000) == RLK_OK, "fair db 0: %s", rlk_errstr(c0));
        CHECKF(rlk_fairlock_try_lock(b, 0, 60000) == RLK_OK, "fair db 3: %s", rlk_errstr(c3));
        CHECK_INT_EQ(rlk_fairlock_try_lock(d, 0, 60000), RLK_ERR_BUSY);
        CHECK(db_pttl(DB, n) > 0);
        CHECK_INT_EQ(rlk_fairlock_unlock(b), RLK_OK);
        CHECK_INT_EQ(rlk_fairlock_unlock(a), RLK_OK);
        rlk_fairlock_free(a);
        rlk_fairlock_free(b);
        rlk_fairlock_free(d);
    }
    cl_name_on(&cl, "cl:db:rw:", master, n, sizeof n);
    {
        rlk_rwlock *a = rlk_rwlock_new(c0, n), *b = rlk_rwlock_new(c3, n), *d = rlk_rwlock_new(c3b, n);

        REQUIRE(a && b && d);
        CHECKF(rlk_rwlock_try_lock(a, RLK_RW_WRITE, 0, 60000) == RLK_OK, "rw db 0: %s",
               rlk_errstr(c0));
        CHECKF(rlk_rwlock_try_lock(b, RLK_RW_WRITE, 0, 60000) == RLK_OK, "rw db 3: %s",
               rlk_errstr(c3));
        CHECK_INT_EQ(rlk_rwlock_try_lock(d, RLK_RW_READ, 0, 60000), RLK_ERR_BUSY);
        CHECK(db_pttl(DB, n) > 0);
        CHECK_INT_EQ(rlk_rwlock_unlock(b, RLK_RW_WRITE), RLK_OK);
        CHECK_INT_EQ(rlk_rwlock_unlock(a, RLK_RW_WRITE), RLK_OK);
        rlk_rwlock_free(a);
        rlk_rwlock_free(b);
        rlk_rwlock_free(d);
    }
    cl_name_on(&cl, "cl:db:fenced:", master, n, sizeof n);
    {
        rlk_fenced *a = rlk_fenced_new(c0, n), *b = rlk_fenced_new(c3, n), *d = rlk_fenced_new(c3b, n);
        long long t0 = 0, t3 = 0;

        REQUIRE(a && b && d);
        CHECKF(rlk_fenced_try_lock(a, 0, 60000, &t0) == RLK_OK, "fenced db 0: %s", rlk_errstr(c0));
        CHECKF(rlk_fenced_try_lock(b, 0, 60000, &t3) == RLK_OK, "fenced db 3: %s", rlk_errstr(c3));
        CHECK_INT_EQ(rlk_fenced_try_lock(d, 0, 60000, NULL), RLK_ERR_BUSY);
        CHECK(t0 > 0 && t3 > 0);
        CHECK(db_pttl(DB, n) > 0);
        CHECK_INT_EQ(rlk_fenced_unlock(b), RLK_OK);
        CHECK_INT_EQ(rlk_fenced_unlock(a), RLK_OK);
        rlk_fenced_free(a);
        rlk_fenced_free(b);
        rlk_fenced_free(d);
    }
    cl_name_on(&cl, "cl:db:nr:", master, n, sizeof n);
    {
        rlk_nrlock *a = rlk_nrlock_new(c0, n), *b = rlk_nrlock_new(c3, n), *d = rlk_nrlock_new(c3b, n);

        REQUIRE(a && b && d);
        CHECKF(rlk_nrlock_try_lock(a, 0, 60000) == RLK_OK, "nr db 0: %s", rlk_errstr(c0));
        CHECKF(rlk_nrlock_try_lock(b, 0, 60000) == RLK_OK, "nr db 3: %s", rlk_errstr(c3));
        CHECK_INT_EQ(rlk_nrlock_try_lock(d, 0, 60000), RLK_ERR_BUSY);
        CHECK(db_pttl(DB, n) > 0);
        CHECK_INT_EQ(rlk_nrlock_unlock(b), RLK_OK);
        CHECK_INT_EQ(rlk_nrlock_unlock(a), RLK_OK);
        rlk_nrlock_free(a);
        rlk_nrlock_free(b);
        rlk_nrlock_free(d);
    }
    cl_name_on(&cl, "cl:db:sem:", master, n, sizeof n);
    {
        rlk_semaphore *a = rlk_semaphore_new(c0, n), *b = rlk_semaphore_new(c3, n);
        rlk_semaphore *d = rlk_semaphore_new(c3b, n);
        int set0 = 0, set3 = 0;

        REQUIRE(a && b && d);
        CHECK(rlk_semaphore_try_set_permits(a, 1, &set0) == RLK_OK && set0);
        CHECK_INT_EQ(rlk_semaphore_try_acquire(a, 1, 0), RLK_OK);
        CHECKF(rlk_semaphore_try_set_permits(b, 1, &set3) == RLK_OK && set3,
               "semaphore db 3 not set: %s", rlk_errstr(c3));
        CHECKF(rlk_semaphore_try_acquire(b, 1, 0) == RLK_OK, "semaphore db 3: %s", rlk_errstr(c3));
        CHECK_INT_EQ(rlk_semaphore_try_acquire(d, 1, 0), RLK_ERR_BUSY);
        CHECK_INT_EQ(db_exists(DB, n), 1);
        CHECK_INT_EQ(rlk_semaphore_release(b, 1, NULL), RLK_OK);
        CHECK_INT_EQ(rlk_semaphore_try_acquire(d, 1, 0), RLK_OK);
        CHECK_INT_EQ(rlk_semaphore_release(d, 1, NULL), RLK_OK);
        CHECK_INT_EQ(rlk_semaphore_release(a, 1, NULL), RLK_OK);
        rlk_semaphore_free(a);
        rlk_semaphore_free(b);
        rlk_semaphore_free(d);
    }
    cl_name_on(&cl, "cl:db:psem:", master, n, sizeof n);
    {
        rlk_psemaphore *a = rlk_psemaphore_new(c0, n), *b = rlk_psemaphore_new(c3, n);
        rlk_psemaphore *d = rlk_psemaphore_new(c3b, n);
        char ida[RLK_PERMIT_ID_SIZE], idb[RLK_PERMIT_ID_SIZE], idd[RLK_PERMIT_ID_SIZE];
        int set0 = 0, set3 = 0;

        REQUIRE(a && b && d);
        CHECK(rlk_psemaphore_try_set_permits(a, 1, &set0) == RLK_OK && set0);
        CHECK_INT_EQ(rlk_psemaphore_try_acquire(a, 0, 60000, ida), RLK_OK);
        CHECKF(rlk_psemaphore_try_set_permits(b, 1, &set3) == RLK_OK && set3,
               "psemaphore db 3 not set: %s", rlk_errstr(c3));
        CHECKF(rlk_psemaphore_try_acquire(b, 0, 60000, idb) == RLK_OK, "psemaphore db 3: %s",
               rlk_errstr(c3));
        CHECK_INT_EQ(rlk_psemaphore_try_acquire(d, 0, 60000, idd), RLK_ERR_BUSY);
        CHECK_INT_EQ(db_exists(DB, n), 1);
        CHECK_INT_EQ(rlk_psemaphore_release(b, idb), RLK_OK);
        CHECK_INT_EQ(rlk_psemaphore_release(a, ida), RLK_OK);
        rlk_psemaphore_free(a);
        rlk_psemaphore_free(b);
        rlk_psemaphore_free(d);
    }
    cl_name_on(&cl, "cl:db:latch:", master, n, sizeof n);
    {
        rlk_latch *a = rlk_latch_new(c0, n), *b = rlk_latch_new(c3, n);
        long long left = -1, count = -1;
        int set0 = 0, set3 = 0;

        REQUIRE(a && b);
        CHECK(rlk_latch_try_set_count(a, 2, &set0) == RLK_OK && set0);
        CHECKF(rlk_latch_try_set_count(b, 1, &set3) == RLK_OK && set3, "latch db 3 not set: %s",
               rlk_errstr(c3));
        CHECK_INT_EQ(db_exists(DB, n), 1);
        CHECK(rlk_latch_count_down(b, &left) == RLK_OK && left == 0);
        CHECK(rlk_latch_count(a, &count) == RLK_OK && count == 2);
        CHECK_INT_EQ(rlk_latch_delete(a, NULL), RLK_OK);
        rlk_latch_free(a);
        rlk_latch_free(b);
    }
    cl_name_on(&cl, "cl:db:elect:", master, n, sizeof n);
    {
        rlk_elect *a = rlk_elect_new(c0, n), *b = rlk_elect_new(c3, n), *d = rlk_elect_new(c3b, n);
        long long t0 = 0, t3 = 0;

        REQUIRE(a && b && d);
        CHECKF(rlk_elect_campaign(a, "zero", 0, 60000, &t0) == RLK_OK, "elect db 0: %s",
               rlk_errstr(c0));
        CHECKF(rlk_elect_campaign(b, "three", 0, 60000, &t3) == RLK_OK, "elect db 3: %s",
               rlk_errstr(c3));
        CHECK_INT_EQ(rlk_elect_campaign(d, "other", 0, 60000, NULL), RLK_ERR_BUSY);
        CHECK(t0 > 0 && t3 > 0);
        CHECK_INT_EQ(rlk_elect_resign(b), RLK_OK);
        CHECK_INT_EQ(rlk_elect_resign(a), RLK_OK);
        rlk_elect_free(a);
        rlk_elect_free(b);
        rlk_elect_free(d);
    }
    cl_name_on(&cl, "cl:db:fm:", master, n, sizeof n);
    {
        const char *v[] = {"jack", "mary"};
        rlk_fastmulti *a = rlk_fastmulti_new(c0, n, v, 2), *b = rlk_fastmulti_new(c3, n, v, 2);
        rlk_fastmulti *d = rlk_fastmulti_new(c3b, n, v, 2);

        REQUIRE(a && b && d);
        CHECKF(rlk_fastmulti_try_lock(a, 0, 60000) == RLK_OK, "fastmulti db 0: %s", rlk_errstr(c0));
        CHECKF(rlk_fastmulti_try_lock(b, 0, 60000) == RLK_OK, "fastmulti db 3: %s", rlk_errstr(c3));
        CHECK_INT_EQ(rlk_fastmulti_try_lock(d, 0, 60000), RLK_ERR_BUSY);
        CHECK_INT_EQ(db_exists(DB, n), 1);
        CHECK_INT_EQ(rlk_fastmulti_unlock(b), RLK_OK);
        CHECK_INT_EQ(rlk_fastmulti_unlock(a), RLK_OK);
        rlk_fastmulti_free(a);
        rlk_fastmulti_free(b);
        rlk_fastmulti_free(d);
    }
}

static void test_every_kind_in_db3(void)
{
    rlk_client *c0 = tk_connect(cdb.url0, 0, 2), *c3 = tk_connect(cdb.url_db, 0, 2);
    rlk_client *c3b = tk_connect(cdb.url_db, 0, 2);

    REQUIRE(c0 && c3 && c3b);
    for (int k = 0; k < 3; k++)
        kinds_on(c0, c3, c3b, cdb.mst[k]);
    {
        /* MultiLock: a member on every master, all in database 3, while database 0 holds them. */
        rlk_multilock *m0 = rlk_multilock_new(), *m3 = rlk_multilock_new();
        char n[3][64];

        REQUIRE(m0 && m3);
        for (int k = 0; k < 3; k++) {
            cl_name_on(&cl, "cl:db:multi:", cdb.mst[k], n[k], sizeof n[k]);
            CHECK_INT_EQ(rlk_multilock_add(m0, c0, n[k]), RLK_OK);
            CHECK_INT_EQ(rlk_multilock_add(m3, c3, n[k]), RLK_OK);
        }
        CHECK_INT_EQ(rlk_multilock_try_lock(m0, 0, 60000), RLK_OK);
        CHECKF(rlk_multilock_try_lock(m3, 0, 60000) == RLK_OK, "%s", rlk_multilock_errstr(m3));
        for (int k = 0; k < 3; k++)
            CHECKF(db_pttl(DB, n[k]) > 0 && db_pttl(0, n[k]) > 0, "member %s", n[k]);
        CHECK_INT_EQ(rlk_multilock_unlock(m3), RLK_OK);
        for (int k = 0; k < 3; k++)
            CHECK(db_exists(DB, n[k]) == 0 && db_pttl(0, n[k]) > 0);
        CHECK_INT_EQ(rlk_multilock_unlock(m0), RLK_OK);
        rlk_multilock_free(m0);
        rlk_multilock_free(m3);
    }
    rlk_free(c0);
    rlk_free(c3);
    rlk_free(c3b);
}

/* ------------------------------------------------------------ pub/sub across databases */

typedef struct waiter {
    rlk_client *c;
    char name[64];
    int sem;                    /* 1: a semaphore permit, 0: the reentrant lock */
    atomic_int done;
    int rc;
    long long got_ms;
} waiter;

static void *waiter_main(void *arg)
{
    waiter *w = arg;

    if (w->sem) {
        rlk_semaphore *s = rlk_semaphore_new(w->c, w->name);

        w->rc = s ? rlk_semaphore_try_acquire(s, 1, 60000) : -1;
        w->got_ms = rlk_fx_now_ms();
        atomic_store(&w->done, 1);
        if (w->rc == RLK_OK)
            rlk_semaphore_release(s, 1, NULL);
        rlk_semaphore_free(s);
    } else {
        rlk_lock *l = rlk_lock_new(w->c, w->name);

        w->rc = l ? rlk_lock_try_lock(l, 60000, 10000) : -1;
        w->got_ms = rlk_fx_now_ms();
        atomic_store(&w->done, 1);
        if (w->rc == RLK_OK)
            rlk_lock_unlock(l);
        rlk_lock_free(l);
    }
    return NULL;
}

/* The fact: a raw connection selected on database DB and subscribed to the lock's channel
 * (SSUBSCRIBE on the channel's master in sharded mode, SUBSCRIBE elsewhere) receives the
 * release made in database 0. */
static void test_pubsub_is_not_per_database(void)
{
    rlk_client *c0 = tk_connect(cdb.url0, 0, 2);
    int sharded, owner;
    char n[64], ch[128];
    redisContext *x;
    redisReply *r = NULL;
    rlk_lock *l;

    REQUIRE(c0);
    sharded = rlk_client_pubsub(c0) == RLK_PUBSUB_SHARDED;
    cl_name_on(&cl, "cl:db:ps:", cdb.mst[0], n, sizeof n);
    snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", n);
    owner = rlk_fx_cluster_key_owner(&cl, n);
    x = rlk_fx_connect(&cl.node[owner]);
    REQUIRE(x);
    redisSetTimeout(x, (struct timeval){5, 0});
    r = redisCommand(x, "SELECT %d", DB);
    REQUIRE(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    r = redisCommand(x, sharded ? "SSUBSCRIBE %s" : "SUBSCRIBE %s", ch);
    REQUIRE(r && r->type == REDIS_REPLY_ARRAY);
    freeReplyObject(r);
    l = rlk_lock_new(c0, n);
    REQUIRE(l);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 30000), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    r = NULL;
    CHECKF(redisGetReply(x, (void **)&r) == REDIS_OK && r && r->type == REDIS_REPLY_ARRAY &&
           r->elements == 3 && strcmp(r->element[1]->str, ch) == 0 &&
           strcmp(r->element[2]->str, "0") == 0,
           "a subscriber in database %d did not hear the database-0 release on %s", DB, ch);
    tk_say("pub/sub: a %s subscriber selected on database %d heard the release of %s made in "
           "database 0 (%s %s)", sharded ? "SSUBSCRIBE" : "SUBSCRIBE", DB, n,
           r && r->type == REDIS_REPLY_ARRAY ? r->element[0]->str : "-",
           r && r->type == REDIS_REPLY_ARRAY && r->elements == 3 ? r->element[2]->str : "-");
    if (r)
        freeReplyObject(r);
    redisFree(x);
    rlk_lock_free(l);
    rlk_free(c0);
}

/* A waiter in database DB behind a database-DB holder; a database-0 client takes and releases
 * the same name 20 times (each release publishes on the channel the waiter listens to): the
 * waiter never gets in; the database-DB release wakes it. */
static void cross_db_wake(int sem)
{
    rlk_client *c0 = tk_connect(cdb.url0, 0, 2), *h3 = tk_connect(cdb.url_db, 0, 2);
    rlk_client *w3 = tk_connect(cdb.url_db, 0, 2);
    waiter w = {.sem = sem, .rc = -1};
    rlk_lock *hl = NULL, *zl = NULL;
    rlk_semaphore *hs = NULL, *zs = NULL;
    rlk_metrics before, after;
    long long released, t0;
    pthread_t t;
    int set = 0;

    REQUIRE(c0 && h3 && w3);
    w.c = w3;
    cl_name_on(&cl, sem ? "cl:db:xsem:" : "cl:db:xlock:", cdb.mst[1], w.name, sizeof w.name);
    if (sem) {
        hs = rlk_semaphore_new(h3, w.name);
        zs = rlk_semaphore_new(c0, w.name);
        REQUIRE(hs && zs);
        REQUIRE(rlk_semaphore_try_set_permits(hs, 1, &set) == RLK_OK && set);
        REQUIRE(rlk_semaphore_try_acquire(hs, 1, 0) == RLK_OK);
        REQUIRE(rlk_semaphore_try_set_permits(zs, 1, &set) == RLK_OK && set);
    } else {
        hl = rlk_lock_new(h3, w.name);
        zl = rlk_lock_new(c0, w.name);
        REQUIRE(hl && zl);
        REQUIRE(rlk_lock_try_lock(hl, 0, 60000) == RLK_OK);
    }
    REQUIRE(rlk_metrics_get(w3, &before) == RLK_OK);
    pthread_create(&t, NULL, waiter_main, &w);
    /* The waiter sleeps on its channel once its client counts a wait (bounded: 10 s). */
    t0 = rlk_fx_now_ms();
    do {
        REQUIRE(rlk_metrics_get(w3, &after) == RLK_OK);
        if (after.waits > before.waits)
            break;
        rlk_fx_sleep_ms(5);
    } while (rlk_fx_now_ms() - t0 < 10000);
    REQUIRE(after.waits > before.waits);
    for (int i = 0; i < 20; i++) {
        if (sem) {
            CHECK_INT_EQ(rlk_semaphore_try_acquire(zs, 1, 0), RLK_OK);
            CHECK_INT_EQ(rlk_semaphore_release(zs, 1, NULL), RLK_OK);
        } else {
            CHECK_INT_EQ(rlk_lock_try_lock(zl, 0, 30000), RLK_OK);
            CHECK_INT_EQ(rlk_lock_unlock(zl), RLK_OK);
        }
    }
    /* The wake-ups those releases caused, and the attempts they led to, are over when the
     * waiter's acquire calls stand still for 300 ms (bounded: 5 s). */
    t0 = rlk_fx_now_ms();
    for (unsigned long long last = ~0ULL; rlk_fx_now_ms() - t0 < 5000;) {
        REQUIRE(rlk_metrics_get(w3, &after) == RLK_OK);
        if (after.acquire_calls == last)
            break;
        last = after.acquire_calls;
        cl_pause_ms(300);
    }
    CHECKF(!atomic_load(&w.done), "%s: the database-%d waiter got in (rc %d) while its holder "
           "held it, after releases in database 0", w.name, DB, w.rc);
    CHECK(db_exists(DB, w.name) == 1);
    tk_say("%s in database %d: 20 releases in database 0 woke its waiter %llu times (%llu "
           "acquire calls), none let it in", sem ? "semaphore" : "lock", DB,
           after.wake_permits + after.wake_all - before.wake_permits - before.wake_all,
           after.acquire_calls - before.acquire_calls);
    if (sem)
        CHECK_INT_EQ(rlk_semaphore_release(hs, 1, NULL), RLK_OK);
    else
        CHECK_INT_EQ(rlk_lock_unlock(hl), RLK_OK);
    released = rlk_fx_now_ms();
    pthread_join(t, NULL);
    CHECKF(w.rc == RLK_OK, "waiter rc %d", w.rc);
    tk_say("%s in database %d: the waiter acquired %lld ms after the database-%d release",
           sem ? "semaphore" : "lock", DB, w.got_ms - released, DB);
    CHECKF(w.got_ms - released < 2000, "the waiter woke %lld ms after the release",
           w.got_ms - released);
    rlk_lock_free(hl);
    rlk_lock_free(zl);
    rlk_semaphore_free(hs);
    rlk_semaphore_free(zs);
    rlk_free(c0);
    rlk_free(h3);
    rlk_free(w3);
}

static void test_db0_releases_never_let_db3_waiter_in(void)
{
    cross_db_wake(0);
    cross_db_wake(1);
}

/* ------------------------------------------------------------ processes */

#define MUTEX_NAME "cl:db:mutex"
#define PROCS 4
#define THREADS 2
#define ITERS 60

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

static char mig_states[2][256];

/* PROCS processes x THREADS threads contend for MUTEX_NAME in database DB while a database-0
 * client holds the same name lease-less; with migrate, its slot moves to another master and
 * back by CLUSTER MIGRATESLOTS meanwhile. 0 overlaps, every hold done. */
static void contend_in_db3(int migrate)
{
    char dir[] = "/tmp/rlk-cldb-XXXXXX", line[128];
    rlk_client *c0 = tk_connect(cdb.url0, LEASE_MS, 2);
    rlk_lock *z;
    tk_child kids[PROCS];
    tk_hold *recs = NULL;
    int spawned, done = 0, errors = 0, bad = 0, moves = 0, held = 0;
    int slot = rlk_key_slot(MUTEX_NAME, strlen(MUTEX_NAME));
    int src = rlk_fx_cluster_key_owner(&cl, MUTEX_NAME), dst = -1;
    size_t n = 0;
    tk_hold_report rep;
    long long t0, moved_ms = 0;

    for (int k = 0; k < 3 && dst < 0; k++)
        if (cdb.mst[k] != src)
            dst = cdb.mst[k];
    REQUIRE(c0 && src >= 0 && dst >= 0);
    z = rlk_lock_new(c0, MUTEX_NAME);
    REQUIRE(z && rlk_lock_try_lock(z, 0, 0) == RLK_OK);   /* database 0, the watchdog's */
    REQUIRE(mkdtemp(dir) != NULL);
    spawned = tk_children_spawn_contend(kids, PROCS, cdb.url_db, THREADS, ITERS, dir);
    CHECK_INT_EQ(spawned, PROCS);
    for (int p = 0; p < spawned; p++)
        CHECKF(tk_child_read_line(&kids[p], line, sizeof line, 15000) == 0 &&
               strcmp(line, "ready") == 0, "child %d did not get ready", p);
    t0 = rlk_fx_now_ms();
    tk_children_send(kids, spawned, "go");
    if (migrate) {
        cl_pause_ms(300);
        moves += rlk_fx_cluster_migrate_slots(&cl, slot, src, dst, 15000, mig_states[0],
                                              sizeof mig_states[0]) == 0;
        cl_pause_ms(300);
        moves += rlk_fx_cluster_migrate_slots(&cl, slot, dst, src, 15000, mig_states[1],
                                              sizeof mig_states[1]) == 0;
        moved_ms = rlk_fx_now_ms() - t0;
    }
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
    tk_say("processes in database %d: %d x %d threads, %zu holds of %s in %lld ms%s; %ld "
           "overlaps, %d errors", DB, PROCS, THREADS, n, MUTEX_NAME, rlk_fx_now_ms() - t0,
           migrate ? " while its slot moved away and back (MIGRATESLOTS)" : "", rep.conflicts,
           errors);
    if (migrate) {
        tk_say("  moves done %d of 2 after %lld ms; states seen: [%s] [%s]", moves, moved_ms,
               mig_states[0], mig_states[1]);
        CHECK_INT_EQ(moves, 2);
    }
    CHECK_INT_EQ(done, PROCS);
    CHECK_INT_EQ(errors, 0);
    CHECK_INT_EQ(n, PROCS * THREADS * ITERS);
    CHECK_INT_EQ(bad, 0);
    CHECK_INT_EQ(rep.conflicts, 0);
    CHECKF(rlk_lock_is_held_by_me(z, &held) == RLK_OK && held && db_pttl(0, MUTEX_NAME) > 0,
           "the database-0 hold of %s is gone", MUTEX_NAME);
    CHECK_INT_EQ(rlk_lock_unlock(z), RLK_OK);
    free(recs);
    rlk_lock_free(z);
    rlk_free(c0);
}

static void test_processes_in_db3(void)
{
    contend_in_db3(0);
}

static void test_processes_while_migrateslots(void)
{
    contend_in_db3(1);
}

/* ------------------------------------------------------------ atomic slot migration */

static atomic_int lost_count;

static void on_lost(const char *name, const char *owner, int reason, void *ud)
{
    (void)ud;
    tk_say("lost: %s (%s) reason %d", name, owner, reason);
    atomic_fetch_add(&lost_count, 1);
}

/* A lock held lease-less in database DB (and the same name held in database 0) and awaited in
 * database DB; its slot moves by CLUSTER MIGRATESLOTS: the holder keeps it through 2 more
 * leases on the new master, the database-0 hold stays, the waiter acquires at the release. */
static void test_migrateslots_held_and_waited(void)
{
    rlk_client *h = tk_connect(cdb.url_db, LEASE_MS, 2), *wc = tk_connect(cdb.url_db, 0, 2);
    rlk_client *c0 = tk_connect(cdb.url0, LEASE_MS, 2);
    int src = cdb.mst[0], dst = cdb.mst[2], slot, held = 0, held0 = 0;
    waiter w = {.rc = -1};
    rlk_lock *l, *z;
    pthread_t t;
    char states[256];
    long long t0, released, ttl;

    REQUIRE(h && wc && c0);
    atomic_store(&lost_count, 0);
    rlk_set_lost_callback(h, on_lost, NULL);
    rlk_set_lost_callback(c0, on_lost, NULL);
    w.c = wc;
    cl_name_on(&cl, "cl:db:mig:", src, w.name, sizeof w.name);
    slot = rlk_key_slot(w.name, strlen(w.name));
    l = rlk_lock_new(h, w.name);
    z = rlk_lock_new(c0, w.name);
    REQUIRE(l && z);
    REQUIRE(rlk_lock_try_lock(l, 0, 0) == RLK_OK);
    REQUIRE(rlk_lock_try_lock(z, 0, 0) == RLK_OK);
    pthread_create(&t, NULL, waiter_main, &w);
    REQUIRE(cl_wait_subscribed(&cl, w.name, 10000) == 0);
    t0 = rlk_fx_now_ms();
    REQUIRE(rlk_fx_cluster_migrate_slots(&cl, slot, src, dst, 15000, states, sizeof states) == 0);
    tk_say("migration: slot %d moved from node %d to %d in %lld ms (states seen: %s)", slot, src,
           dst, rlk_fx_now_ms() - t0, states);
    CHECK_INT_EQ(rlk_fx_cluster_key_owner(&cl, w.name), dst);
    cl_pause_ms(2 * LEASE_MS);
    ttl = db_pttl(DB, w.name);
    CHECKF(rlk_lock_is_held_by_me(l, &held) == RLK_OK && held, "the holder lost the lock");
    CHECKF(ttl > 0, "the lock's PTTL in database %d on its new master is %lld", DB, ttl);
    CHECKF(rlk_lock_is_held_by_me(z, &held0) == RLK_OK && held0 && db_pttl(0, w.name) > 0,
           "the database-0 hold is gone");
    CHECKF(!atomic_load(&w.done), "the waiter got in while the lock was held (rc %d)", w.rc);
    CHECK_INT_EQ(atomic_load(&lost_count), 0);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    released = rlk_fx_now_ms();
    pthread_join(t, NULL);
    CHECKF(w.rc == RLK_OK, "waiter rc %d", w.rc);
    tk_say("migration: holder kept the lock (PTTL %lld ms after 2 more leases of %lld), the "
           "database-0 hold stayed, the waiter acquired %lld ms after the release", ttl, LEASE_MS,
           w.got_ms - released);
    CHECKF(w.got_ms - released < 2000, "the waiter woke %lld ms after the release",
           w.got_ms - released);
    CHECK_INT_EQ(rlk_lock_unlock(z), RLK_OK);
    rlk_lock_free(l);
    rlk_lock_free(z);
    rlk_free(h);
    rlk_free(wc);
    rlk_free(c0);
    CHECK(rlk_fx_cluster_migrate_slots(&cl, slot, dst, src, 15000, NULL, 0) == 0);
}

/* ------------------------------------------------------------ the rlk command */

static void test_cli_in_db3(void)
{
    static char out[4096];
    char args[1024], n[64];

    if (!rlk_bin)
        return;
    cl_name_on(&cl, "cl:db:cli:", cdb.mst[2], n, sizeof n);
    snprintf(args, sizeof args, "lock %s --url \"$U\" -- true", n);
    CHECKF(run(out, sizeof out, args) == 0, "rlk lock in database 3: %s", out);
    snprintf(args, sizeof args, "eval reentrant/acquire --key %s --key '{%s}:rlk_waiters' "
             "--key '{%s}:rlk_next' --arg 30000 --arg o:1 --arg 0 --url \"$U\"", n, n, n);
    CHECKF(run(out, sizeof out, args) == 0, "eval in database 3: %s", out);
    CHECK(db_pttl(DB, n) > 0);
    CHECK_INT_EQ(db_exists(0, n), 0);
    snprintf(args, sizeof args, "lock %s --url \"$U\" -w 0 -- true", n);
    CHECKF(run(out, sizeof out, args) == 1, "rlk lock -w 0 on a lock held in database 3: %s",
           out);
    snprintf(args, sizeof args, "unlock --force %s --url \"$U\"", n);
    CHECKF(run(out, sizeof out, args) == 0, "unlock --force in database 3: %s", out);
    CHECK_INT_EQ(db_exists(DB, n), 0);
}

/* ------------------------------------------------------------ main */

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "contend") == 0)
        return child_contend(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5]);
    rlk_bin = argc > 1 ? argv[1] : NULL;
    RUN_TEST(test_url);
    if (rlk_fx_cldb_start(&cl, &cdb, "cl_databases", DATABASES, DB, 1, 5) != 0)
        return 1;
    if (!cdb.has_dbs) {
        RUN_TEST(test_refused_without_databases);
    } else {
        RUN_TEST(test_refused_past_cluster_databases);
        RUN_TEST(test_every_kind_in_db3);
        RUN_TEST(test_pubsub_is_not_per_database);
        RUN_TEST(test_db0_releases_never_let_db3_waiter_in);
        RUN_TEST(test_processes_in_db3);
        RUN_TEST(test_cli_in_db3);
        RUN_TEST(test_migrateslots_held_and_waited);
        RUN_TEST(test_processes_while_migrateslots);
    }
    rlk_fx_cluster_stop(&cl);
    return check_summary("cl_databases");
}
