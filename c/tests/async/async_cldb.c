/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_cldb.c - the non-blocking API (rlk_async.h) in a cluster database other than 0
 * (redis+cluster://.../3), one 3-master + 3-replica cluster on loopback for the program, the poll loop.
 *
 * On Valkey 9, whose nodes run with cluster-databases 16 (cluster_databases_valkey9 starts its
 * cluster the same way), on a name owned by each master:
 *   - an async holder takes the lock in database 3 while a database-0 client holds the same
 *     name; the keys are read back in database 3 (and the database-0 hold is left alone);
 *   - an async waiter in database 3 waits for it; the database-0 holder's release (pub/sub is
 *     per server, not per database: the waiter hears it) does not let it in while the
 *     database-3 holder holds; the database-3 release wakes it within WAKE_MS;
 *   - the same for the fair lock (its waiter queued in database 3) and the semaphore.
 * On a server without numbered databases in cluster mode (Redis 7 and 8, Valkey 8): an async
 * request on the /3 URL fails and writes nothing to database 0; with the argument `reason`, it
 * fails at once, as the blocking API's connect does, with RLK_ERR_AUTH and the reason ("Redis
 * Cluster has only database 0; ...").
 *
 * Every wait is bounded; the 300 ms in which a database-0 release must not let the waiter in is
 * the time under test, not a synchronisation.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aloop.h"
#include "async_procs.h"
#include "check.h"
#include "cluster.h"
#include "fixture.h"
#include "rlk.h"
#include "rlk_async.h"
#include "tk_util.h"

#define DB 3
#define DATABASES 16
#define WAKE_MS 400             /* a release's wake-up, through pub/sub, at most this late */
#define REASON "Redis Cluster has only database 0; Valkey 9 with cluster-databases allows more"

static rlk_fx_cluster cl;
static rlk_fx_cldb cdb;        /* its URLs (url0, url_db: /3) and masters */

/* An integer reply of `fmt` (one %s: key) in database db on key's master; -3: none. */
static long long db_int(int db, const char *key, const char *fmt)
{
    return rlk_fx_cluster_db_int(&cl, db, key, fmt);
}

/* Runs c's loop for ms (nothing awaited: the time under test). */
static void run_for(ap_cl *c, long long ms)
{
    ap_res never = {0};

    aloop_run_until(c->l, ap_res_done, &never, ms);
}

static int open_db(ap_cl *c, const char *url)
{
    return ap_cl_open(c, url, 0, 0, 3000);
}

/* kind on n: held in database 0 (h0) and database 3 (h3, task 1), awaited in database 3 (w, task
 * 2): a database-0 release does not let the waiter in, the database-3 release wakes it. kind -1:
 * the semaphore (a count of 1 permit, one each). */
static void held_and_awaited(int kind, const char *n, const char *keycheck)
{
    ap_cl c0 = {0}, c3 = {0}, c3w = {0};
    ap_res h0 = {0}, h3 = {0}, w = {0}, u0 = {0}, u3 = {0}, uw = {0};
    int sem = kind < 0;

    REQUIRE(open_db(&c0, cdb.url0) == 0);
    REQUIRE(open_db(&c3, cdb.url_db) == 0);
    REQUIRE(open_db(&c3w, cdb.url_db) == 0);
    if (sem) {
        ap_res s0 = {0}, s3 = {0};

        AP_REQ(rlk_async_semaphore_try_set_permits_ttl(c0.ac, n, 1, 60000, ap_on_res, &s0));
        AP_REQ(rlk_async_semaphore_try_set_permits_ttl(c3.ac, n, 1, 60000, ap_on_res, &s3));
        REQUIRE(ap_wait_res(&c0, &s0, 5000) && ap_wait_res(&c3, &s3, 5000));
        CHECKF(s0.err == RLK_OK && s3.err == RLK_OK, "set permits: %s / %s", s0.errstr,
               s3.errstr);
        AP_REQ(rlk_async_semaphore_acquire(c0.ac, n, 1, 0, ap_on_res, &h0));
        AP_REQ(rlk_async_semaphore_acquire(c3.ac, n, 1, 0, ap_on_res, &h3));
    } else {
        AP_REQ(rlk_async_lock(c0.ac, kind, n, 1, 0, 30000, ap_on_res, &h0));
        AP_REQ(rlk_async_lock(c3.ac, kind, n, 1, 0, 30000, ap_on_res, &h3));
    }
    REQUIRE(ap_wait_res(&c0, &h0, 5000) && ap_wait_res(&c3, &h3, 5000));
    CHECKF(h0.err == RLK_OK, "%s held in database 0: %s", n, h0.errstr);
    CHECKF(h3.err == RLK_OK, "%s taken in database 3 while database 0 holds it: %s", n,
           h3.errstr);
    CHECKF(db_int(DB, keycheck, "EXISTS %s") == 1, "%s is not in database 3", keycheck);
    CHECKF(db_int(0, keycheck, "EXISTS %s") == 1, "%s is not in database 0", keycheck);

    if (sem)
        AP_REQ(rlk_async_semaphore_acquire(c3w.ac, n, 1, 15000, ap_on_res, &w));
    else
        AP_REQ(rlk_async_lock(c3w.ac, kind, n, 2, 15000, 30000, ap_on_res, &w));
    run_for(&c3w, 300);     /* queued and subscribed; still waiting */
    CHECKF(w.calls == 0, "%s: the database-3 waiter ended at once: %d %s", n, w.err, w.errstr);

    /* Database 0's release: heard on the server's channel, must not let the waiter in. */
    if (sem)
        AP_REQ(rlk_async_semaphore_release(c0.ac, n, 1, ap_on_res, &u0));
    else
        AP_REQ(rlk_async_unlock(c0.ac, kind, n, 1, ap_on_res, &u0));
    REQUIRE(ap_wait_res(&c0, &u0, 5000));
    CHECK_INT_EQ(u0.err, RLK_OK);
    run_for(&c3w, 300);
    CHECKF(w.calls == 0, "%s: the database-3 waiter got in after database 0's release while "
           "database 3's holder holds: %d %s", n, w.err, w.errstr);

    /* Database 3's release wakes it. */
    if (sem)
        AP_REQ(rlk_async_semaphore_release(c3.ac, n, 1, ap_on_res, &u3));
    else
        AP_REQ(rlk_async_unlock(c3.ac, kind, n, 1, ap_on_res, &u3));
    REQUIRE(ap_wait_res(&c3, &u3, 5000));
    CHECK_INT_EQ(u3.err, RLK_OK);
    REQUIRE(ap_wait_res(&c3w, &w, 10000));
    CHECKF(w.err == RLK_OK, "%s: the database-3 waiter after the release: %d %s", n, w.err,
           w.errstr);
    CHECKF(w.at_ms - u3.at_ms < WAKE_MS, "%s: woken %lld ms after database 3's release", n,
           w.at_ms - u3.at_ms);
    tk_say("%s: database-3 waiter woken %lld ms after the release", n, w.at_ms - u3.at_ms);
    if (sem)
        AP_REQ(rlk_async_semaphore_release(c3w.ac, n, 1, ap_on_res, &uw));
    else
        AP_REQ(rlk_async_unlock(c3w.ac, kind, n, 2, ap_on_res, &uw));
    REQUIRE(ap_wait_res(&c3w, &uw, 5000));
    CHECK_INT_EQ(uw.err, RLK_OK);
    ap_cl_close(&c0);
    ap_cl_close(&c3);
    ap_cl_close(&c3w);
}

static void test_lock_in_db3(void)
{
    char n[64];

    for (int m = 0; m < 3; m++) {
        rlk_fx_cluster_name_on(&cl, "acdb:lock:", cdb.mst[m], n, sizeof n);
        held_and_awaited(RLK_KIND_LOCK, n, n);
    }
}

static void test_fair_in_db3(void)
{
    char n[64];

    for (int m = 0; m < 3; m++) {
        rlk_fx_cluster_name_on(&cl, "acdb:fair:", cdb.mst[m], n, sizeof n);
        held_and_awaited(RLK_KIND_FAIR, n, n);
    }
}

static void test_semaphore_in_db3(void)
{
    char n[64];

    for (int m = 0; m < 3; m++) {
        rlk_fx_cluster_name_on(&cl, "acdb:sem:", cdb.mst[m], n, sizeof n);
        held_and_awaited(-1, n, n);   /* -1: the semaphore */
    }
}

/* Without cluster databases: an async request on the /3 URL fails, and nothing is written to
 * database 0; with want_reason, it fails as the blocking API's connect does (cl_databases.c):
 * RLK_ERR_AUTH, its message naming the refused SELECT and the reason, as soon as a node
 * refused the SELECT, not at the command timeout (REFUSED_CMD_TIMEOUT_MS here, so that the
 * bound of REFUSED_MS says "at once" with room for a loaded machine). Before the engine kept
 * the refusal, the request ended at the timeout with "slot N not served within the command
 * timeout (no slot map)". */
#define REFUSED_CMD_TIMEOUT_MS 30000
#define REFUSED_MS 10000
static int want_reason;

/* The refusal names the node that refused ("select 3 on 127.0.0.1:PORT: ..."), as the blocking
 * API's does, not the URL's list of seeds. */
static void check_names_node(const char *err)
{
    const char *on = strstr(err, "select 3 on ");
    const char *end = on ? strstr(on, ": ") : NULL;
    char addr[128] = "";

    CHECKF(on && end, "no 'select 3 on ADDRESS: ' in: %s", err);
    if (!on || !end)
        return;
    on += strlen("select 3 on ");
    snprintf(addr, sizeof addr, "%.*s", (int)(end - on), on);
    CHECKF(strncmp(addr, "127.0.0.1:", 10) == 0 && !strchr(addr, ',') && !strchr(addr, ' '),
           "the refusal names '%s', not one node's address: %s", addr, err);
}

static void test_refused_without_databases(void)
{
    ap_cl c = {0};
    ap_res h = {0}, h2 = {0};
    long long t0;
    char n[64];

    rlk_fx_cluster_name_on(&cl, "acdb:refused:", cdb.mst[1], n, sizeof n);
    REQUIRE(ap_cl_open(&c, cdb.url_db, 0, 0, want_reason ? REFUSED_CMD_TIMEOUT_MS : 3000) == 0);
    t0 = rlk_fx_now_ms();
    AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, n, 1, 0, 30000, ap_on_res, &h));
    if (want_reason) {
        CHECKF(ap_wait_res(&c, &h, REFUSED_MS), "the async lock on %s had no answer within "
               "%d ms (command timeout %d ms)", cdb.url_db, REFUSED_MS, REFUSED_CMD_TIMEOUT_MS);
        REQUIRE(h.calls || ap_wait_res(&c, &h, 2 * REFUSED_CMD_TIMEOUT_MS));
    } else {
        REQUIRE(ap_wait_res(&c, &h, 10000));
    }
    CHECKF(h.err != RLK_OK, "the async lock on %s succeeded", cdb.url_db);
    tk_say("refused after %lld ms: %d %s", h.at_ms - t0, h.err, h.errstr);
    if (want_reason) {
        CHECKF(h.err == RLK_ERR_AUTH, "error %d, expected RLK_ERR_AUTH (%d), as the blocking "
               "API's: %s", h.err, RLK_ERR_AUTH, h.errstr);
        CHECK_STR_CONTAINS(h.errstr, "select 3");
        CHECK_STR_CONTAINS(h.errstr, REASON);
        check_names_node(h.errstr);
        /* A request made after the refusal is refused the same way (the next node asked). */
        AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, n, 1, 0, 30000, ap_on_res, &h2));
        CHECKF(ap_wait_res(&c, &h2, REFUSED_MS), "the second async lock had no answer within "
               "%d ms", REFUSED_MS);
        REQUIRE(h2.calls || ap_wait_res(&c, &h2, 2 * REFUSED_CMD_TIMEOUT_MS));
        CHECK_INT_EQ(h2.err, RLK_ERR_AUTH);
        CHECK_STR_CONTAINS(h2.errstr, REASON);
        check_names_node(h2.errstr);
    }
    CHECKF(db_int(0, n, "EXISTS %s") == 0, "%s was written to database 0", n);
    ap_cl_close(&c);
}

/* A cluster whose nodes ask for a password (CONFIG SET requirepass, masterauth for the
 * replicas): an async request with a wrong password, or none, is refused within REFUSED_MS,
 * with RLK_ERR_AUTH or RLK_ERR_IO, the server's refusal, a hint of where the password goes and
 * the node that refused it; with the password the lock is taken and released. Run last: the
 * fixture's own commands have no password. */
#define PASSWORD "rlk-cl-pw"

/* The blocking API on the same URL: its connect is refused with RLK_ERR_AUTH, the server's
 * refusal and the hint, and a lock call then too, within REFUSED_MS. */
static void blocking_refused(const char *url, const char *n, const char *reply, const char *hint)
{
    rlk_options o;
    rlk_client *c;
    rlk_lock *l;
    long long t0 = rlk_fx_now_ms();

    rlk_options_init(&o);
    o.url = url;
    o.command_timeout_ms = REFUSED_CMD_TIMEOUT_MS;
    c = rlk_connect(&o);
    REQUIRE(c);
    tk_say("blocking: %d %s", rlk_err(c), rlk_errstr(c));
    CHECKF(rlk_err(c) == RLK_ERR_AUTH, "blocking connect %s: %d %s", url, rlk_err(c),
           rlk_errstr(c));
    CHECK_STR_CONTAINS(rlk_errstr(c), reply);
    CHECK_STR_CONTAINS(rlk_errstr(c), hint);
    l = rlk_lock_new(c, n);
    REQUIRE(l);
    CHECK_INT_EQ(rlk_lock_try_lock(l, 0, 30000), RLK_ERR_AUTH);
    CHECKF(rlk_fx_now_ms() - t0 < REFUSED_MS, "the blocking refusal took %lld ms",
           rlk_fx_now_ms() - t0);
    rlk_lock_free(l);
    rlk_free(c);
}

static void refused_password(const char *n, const char *userinfo, const char *reply,
                             const char *hint)
{
    ap_cl c = {0};
    ap_res h = {0};
    char url[1300];

    snprintf(url, sizeof url, "redis+cluster://%s%s", userinfo,
             cdb.url0 + strlen("redis+cluster://"));
    REQUIRE(ap_cl_open(&c, url, 0, 0, REFUSED_CMD_TIMEOUT_MS) == 0);
    AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, n, 1, 0, 30000, ap_on_res, &h));
    CHECKF(ap_wait_res(&c, &h, REFUSED_MS), "the async lock with '%s' had no answer within %d ms "
           "(command timeout %d ms)", userinfo, REFUSED_MS, REFUSED_CMD_TIMEOUT_MS);
    REQUIRE(h.calls || ap_wait_res(&c, &h, 2 * REFUSED_CMD_TIMEOUT_MS));
    tk_say("'%s': %d %s", userinfo, h.err, h.errstr);
    blocking_refused(url, n, reply, hint);
    CHECKF(h.err == RLK_ERR_AUTH || h.err == RLK_ERR_IO, "error %d with '%s': %s", h.err,
           userinfo, h.errstr);
    CHECK_STR_CONTAINS(h.errstr, reply);
    CHECK_STR_CONTAINS(h.errstr, hint);
    CHECKF(strstr(h.errstr, "127.0.0.1:") && !strstr(h.errstr, ",127.0.0.1:"),
           "the refusal does not name one node: %s", h.errstr);
    ap_cl_close(&c);
}

static void test_refused_password(void)
{
    ap_cl c = {0};
    ap_res h = {0}, u = {0};
    char url[1300], n[64];

    rlk_fx_cluster_name_on(&cl, "acdb:pw:", cdb.mst[1], n, sizeof n);   /* asks the nodes */
    for (int i = 0; i < cl.n; i++) {
        redisReply *r = rlk_fx_command(&cl.node[i], "CONFIG SET masterauth %s", PASSWORD);

        REQUIRE(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
        r = rlk_fx_command(&cl.node[i], "CONFIG SET requirepass %s", PASSWORD);
        REQUIRE(r && r->type == REDIS_REPLY_STATUS);
        freeReplyObject(r);
    }
    refused_password(n, ":wrong@", "WRONGPASS", "refused the user and password");
    refused_password(n, "", "NOAUTH", "wants a password");
    snprintf(url, sizeof url, "redis+cluster://:" PASSWORD "@%s", cdb.url0 + strlen("redis+cluster://"));
    REQUIRE(ap_cl_open(&c, url, 0, 0, 5000) == 0);
    AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, n, 1, 0, 30000, ap_on_res, &h));
    REQUIRE(ap_wait_res(&c, &h, 10000));
    CHECKF(h.err == RLK_OK, "the lock with the password: %d %s", h.err, h.errstr);
    AP_REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, n, 1, ap_on_res, &u));
    REQUIRE(ap_wait_res(&c, &u, 10000));
    CHECKF(u.err == RLK_OK, "the unlock with the password: %d %s", u.err, u.errstr);
    ap_cl_close(&c);
}

int main(int argc, char **argv)
{
    want_reason = argc > 1 && strcmp(argv[1], "reason") == 0;
    if (rlk_fx_cldb_start(&cl, &cdb, "async_cldb", DATABASES, DB, 0, 1) != 0)
        return 1;
    ap_freed_tracked = 0;
    if (!cdb.has_dbs) {
        RUN_TEST(test_refused_without_databases);
        if (want_reason)
            RUN_TEST(test_refused_password);
    } else {
        RUN_TEST(test_lock_in_db3);
        RUN_TEST(test_fair_in_db3);
        RUN_TEST(test_semaphore_in_db3);
    }
    CHECK_INT_EQ(ap_rule_breaks, 0);
    rlk_fx_cluster_stop(&cl);
    return check_summary("async_cldb");
}
