/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_nested_lease.c - a re-entry never shortens a hold, on both APIs,
 * against a real redis-server.
 *
 * One holder id may be shared: a nested `rlk lock` takes RLK_LOCK_OWNER, an
 * application hands a child its id (rlk_*_set_owner). The "outer" takes the
 * lock with a long fixed lease (LONG); an "inner" with the same holder id, on
 * another client (as another process would be), re-enters it with a short
 * fixed lease (SHORT), then with the watchdog's lease (WD, renewed every
 * WD/3), and leaves. The outer's hold must keep its TTL throughout: the
 * lock's PTTL (and a read's timeout key) stays above FLOOR, and a third
 * holder id is refused for longer than the inner's lease. Before the
 * scripts kept max(PTTL, lease), the re-entry and the partial release set
 * PTTL to SHORT (the reentrant and the fair lock), and the watchdog's
 * renewal cut it to WD (those two, and a read's timeout key).
 *
 *   blocking   rlk_lock_*, rlk_fairlock_*, rlk_rwlock_* (write and read):
 *              two clients, two handles with one owner (rlk_*_set_owner)
 *   async      rlk_async_lock (the same four kinds): the outer on the loop
 *              (task TASK), the inner first by the same task on the loop
 *              (a re-entry, fixed and renewed), then by a blocking handle
 *              whose owner is the async client's "<uuid>:<task>"
 *
 * Every wait is a bounded poll; the only time the test waits out is the
 * inner's own lease (SHORT) plus room, which it set itself.
 */
#include "check.h"
#include "fl_util.h"

#include "aloop.h"
#include "async_procs.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LONG 60000          /* the outer's fixed lease */
#define SHORT 1000          /* the inner's fixed lease */
#define WD 3000             /* the inner client's watchdog lease: renewed every second */
#define FLOOR 45000         /* a PTTL above this was not cut to SHORT or WD */
#define TASK 7ULL           /* the async outer's task */

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ blocking handles of a kind */

typedef struct handle {
    int kind;               /* RLK_KIND_LOCK, _FAIR, _READ or _WRITE */
    rlk_lock *l;
    rlk_fairlock *f;
    rlk_rwlock *rw;
} handle;

static const char *kind_word(int kind)
{
    switch (kind) {
    case RLK_KIND_FAIR:
        return "fair";
    case RLK_KIND_READ:
        return "read";
    case RLK_KIND_WRITE:
        return "write";
    default:
        return "reentrant";
    }
}

static int h_open(handle *h, int kind, rlk_client *c, const char *name, const char *owner)
{
    memset(h, 0, sizeof *h);
    h->kind = kind;
    if (kind == RLK_KIND_LOCK)
        return (h->l = rlk_lock_new(c, name)) ? rlk_lock_set_owner(h->l, owner) : -1;
    if (kind == RLK_KIND_FAIR)
        return (h->f = rlk_fairlock_new(c, name)) ? rlk_fairlock_set_owner(h->f, owner) : -1;
    return (h->rw = rlk_rwlock_new(c, name)) ? rlk_rwlock_set_owner(h->rw, owner) : -1;
}

static int h_side(const handle *h)
{
    return h->kind == RLK_KIND_READ ? RLK_RW_READ : RLK_RW_WRITE;
}

/* lease_ms > 0 fixed, 0 the watchdog's; wait_ms 0: one attempt. */
static int h_try(handle *h, long long lease_ms)
{
    if (h->l)
        return rlk_lock_try_lock(h->l, 0, lease_ms);
    if (h->f)
        return rlk_fairlock_try_lock(h->f, 0, lease_ms);
    return rlk_rwlock_try_lock(h->rw, h_side(h), 0, lease_ms);
}

static int h_unlock(handle *h)
{
    if (h->l)
        return rlk_lock_unlock(h->l);
    if (h->f)
        return rlk_fairlock_unlock(h->f);
    return rlk_rwlock_unlock(h->rw, h_side(h));
}

static void h_close(handle *h)
{
    rlk_lock_free(h->l);
    rlk_fairlock_free(h->f);
    rlk_rwlock_free(h->rw);
    memset(h, 0, sizeof *h);
}

/* ------------------------------------------------------------ what the outer must keep */

/* The outer's hold as the server counts it: the lock's PTTL, and for a read
 * the PTTL of its timeout key (the first read's: the outer's). */
static void expect_kept(int kind, const char *name, const char *owner, const char *when)
{
    long long pttl = tk_int(&srv, "PTTL %s", name);

    CHECKF(pttl > FLOOR, "%s %s: the lock's PTTL is %lld ms after %s, expected above %d "
           "(the outer's lease %d cut by the inner's)%s", kind_word(kind), name, pttl, when, FLOOR,
           LONG, tk_stall_note(&stall));
    if (kind == RLK_KIND_READ) {
        char key[512];

        snprintf(key, sizeof key, "{%s}:%s:rwlock_timeout:1", name, owner);
        pttl = tk_int(&srv, "PTTL %s", key);
        CHECKF(pttl > FLOOR, "read %s: the outer read's timeout key has PTTL %lld ms after %s, "
               "expected above %d%s", name, pttl, when, FLOOR, tk_stall_note(&stall));
    }
}

/* A third holder id (its own client) is refused for SHORT + 500 ms after
 * the inner left (bounded: attempts every 50 ms); a writer for a read lock. */
static void expect_excluded(int kind, rlk_client *third, const char *name)
{
    handle h;
    long long end = rlk_fx_now_ms() + SHORT + 500;
    int tries = 0, taken = 0;

    REQUIRE(h_open(&h, kind == RLK_KIND_READ ? RLK_KIND_WRITE : kind, third, name,
                   "f00dfeed-0000-4000-8000-000000000003:3") == RLK_OK);
    while (!taken && rlk_fx_now_ms() < end && tries < 200) {
        int rc = h_try(&h, 30000);

        tries++;
        if (rc == RLK_OK) {
            taken = 1;
            h_unlock(&h);
        } else {
            CHECKF(rc == RLK_ERR_BUSY, "%s %s: the third holder got %d (%s)", kind_word(kind),
                   name, rc, rlk_errstr(third));
            usleep(50 * 1000);
        }
    }
    CHECKF(!taken, "%s %s: a third holder took the lock %d attempts after the inner left, while "
           "the outer (lease %d ms) still held it%s", kind_word(kind), name, tries, LONG,
           tk_stall_note(&stall));
    h_close(&h);
}

/* Bounded poll: c's watchdog has made at least one renewal more than before. */
static int wait_renewal(rlk_client *c, unsigned long long before)
{
    for (int i = 0; i < 200; i++) {
        rlk_metrics m;

        if (rlk_metrics_get(c, &m) == RLK_OK && m.renewals > before)
            return 1;
        usleep(25 * 1000);
    }
    return 0;
}

static unsigned long long renewals_of(rlk_client *c)
{
    rlk_metrics m;

    return rlk_metrics_get(c, &m) == RLK_OK ? m.renewals : 0;
}

/* ------------------------------------------------------------ blocking */

static void blocking_kind(int kind)
{
    rlk_client *outer_c = tk_connect(url, 30000, 2), *inner_c = tk_connect(url, WD, 2);
    rlk_client *third = tk_connect(url, 30000, 2);
    char name[64], owner[128];
    handle outer, inner;

    REQUIRE(outer_c && inner_c && third);
    snprintf(name, sizeof name, "nl-b-%s", kind_word(kind));
    snprintf(owner, sizeof owner, "%s:4242", rlk_client_uuid(outer_c));
    REQUIRE(h_open(&outer, kind, outer_c, name, owner) == RLK_OK);
    REQUIRE(h_open(&inner, kind, inner_c, name, owner) == RLK_OK);
    tk_stall_reset(&stall);

    REQUIRE_INT_EQ(h_try(&outer, LONG), RLK_OK);
    /* The inner with a short fixed lease: a re-entry, then a partial release. */
    CHECK_INT_EQ(h_try(&inner, SHORT), RLK_OK);
    expect_kept(kind, name, owner, "a re-entry with a 1000 ms lease");
    CHECK_INT_EQ(h_unlock(&inner), RLK_OK);
    expect_kept(kind, name, owner, "the inner's release");
    expect_excluded(kind, third, name);
    expect_kept(kind, name, owner, "the inner's lease had passed");

    /* The inner with the watchdog's lease (WD): the re-entry and its renewals. */
    {
        unsigned long long before = renewals_of(inner_c);

        CHECK_INT_EQ(h_try(&inner, 0), RLK_OK);
        expect_kept(kind, name, owner, "a re-entry with the watchdog's 3000 ms lease");
        CHECKF(wait_renewal(inner_c, before), "%s %s: the inner's watchdog made no renewal in 5 s",
               kind_word(kind), name);
        expect_kept(kind, name, owner, "the inner's watchdog renewed with 3000 ms");
        CHECK_INT_EQ(h_unlock(&inner), RLK_OK);
        expect_kept(kind, name, owner, "the renewed inner's release");
    }

    CHECK_INT_EQ(h_unlock(&outer), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    h_close(&inner);
    h_close(&outer);
    rlk_free(third);
    rlk_free(inner_c);
    rlk_free(outer_c);
}

static void test_blocking_reentrant(void) { blocking_kind(RLK_KIND_LOCK); }
static void test_blocking_fair(void) { blocking_kind(RLK_KIND_FAIR); }
static void test_blocking_write(void) { blocking_kind(RLK_KIND_WRITE); }
static void test_blocking_read(void) { blocking_kind(RLK_KIND_READ); }

/* ------------------------------------------------------------ async */

/* One request on c's loop, waited for (bounded): its error code. */
static int a_call(ap_cl *c, ap_res *x)
{
    if (!ap_wait_res(c, x, 10000))
        return -100;
    return x->err;
}

static void async_kind(int kind)
{
    ap_cl c;
    ap_res x;
    rlk_client *inner_c = tk_connect(url, WD, 2), *third = tk_connect(url, 30000, 2);
    char name[64], owner[128];
    handle inner;

    REQUIRE(inner_c && third);
    REQUIRE(ap_cl_open(&c, url, WD, 0, 0) == 0);
    snprintf(name, sizeof name, "nl-a-%s", kind_word(kind));
    snprintf(owner, sizeof owner, "%s:%llu", rlk_async_uuid(c.ac), TASK);
    tk_stall_reset(&stall);

    memset(&x, 0, sizeof x);
    AP_REQ(rlk_async_lock(c.ac, kind, name, TASK, 0, LONG, ap_on_res, &x));
    REQUIRE_INT_EQ(a_call(&c, &x), RLK_OK);

    /* The same task re-enters on the loop with a short fixed lease, and leaves. */
    memset(&x, 0, sizeof x);
    AP_REQ(rlk_async_lock(c.ac, kind, name, TASK, 0, SHORT, ap_on_res, &x));
    CHECK_INT_EQ(a_call(&c, &x), RLK_OK);
    expect_kept(kind, name, owner, "an async re-entry with a 1000 ms lease");
    memset(&x, 0, sizeof x);
    AP_REQ(rlk_async_unlock(c.ac, kind, name, TASK, ap_on_res, &x));
    CHECK_INT_EQ(a_call(&c, &x), RLK_OK);
    expect_kept(kind, name, owner, "the async inner's release");

    /* ... with the loop's watchdog lease (WD), renewed while the loop runs. */
    {
        rlk_metrics m;
        unsigned long long before = 0;

        if (rlk_async_metrics_get(c.ac, &m) == RLK_OK)
            before = m.renewals;
        memset(&x, 0, sizeof x);
        AP_REQ(rlk_async_lock(c.ac, kind, name, TASK, 0, -1, ap_on_res, &x));
        CHECK_INT_EQ(a_call(&c, &x), RLK_OK);
        expect_kept(kind, name, owner, "an async re-entry with the watchdog's 3000 ms lease");
        for (int i = 0; i < 100; i++) {
            aloop_run_until(c.l, NULL, NULL, 50);
            if (rlk_async_metrics_get(c.ac, &m) == RLK_OK && m.renewals > before)
                break;
        }
        CHECKF(m.renewals > before, "%s %s: the loop's watchdog made no renewal in 5 s",
               kind_word(kind), name);
        expect_kept(kind, name, owner, "the loop's watchdog renewed with 3000 ms");
        memset(&x, 0, sizeof x);
        AP_REQ(rlk_async_unlock(c.ac, kind, name, TASK, ap_on_res, &x));
        CHECK_INT_EQ(a_call(&c, &x), RLK_OK);
        expect_kept(kind, name, owner, "the renewed async inner's release");
    }

    /* A blocking handle that was handed the async holder's id. */
    REQUIRE(h_open(&inner, kind, inner_c, name, owner) == RLK_OK);
    CHECK_INT_EQ(h_try(&inner, SHORT), RLK_OK);
    expect_kept(kind, name, owner, "a blocking re-entry (the async holder's id) with 1000 ms");
    CHECK_INT_EQ(h_unlock(&inner), RLK_OK);
    expect_kept(kind, name, owner, "the blocking inner's release");
    expect_excluded(kind, third, name);
    h_close(&inner);

    memset(&x, 0, sizeof x);
    AP_REQ(rlk_async_unlock(c.ac, kind, name, TASK, ap_on_res, &x));
    CHECK_INT_EQ(a_call(&c, &x), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_free(third);
    rlk_free(inner_c);
}

static void test_async_reentrant(void) { async_kind(RLK_KIND_LOCK); }
static void test_async_fair(void) { async_kind(RLK_KIND_FAIR); }
static void test_async_write(void) { async_kind(RLK_KIND_WRITE); }
static void test_async_read(void) { async_kind(RLK_KIND_READ); }

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (tk_suite_start("fl_nested_lease", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_blocking_reentrant);
    RUN_TEST(test_blocking_fair);
    RUN_TEST(test_blocking_write);
    RUN_TEST(test_blocking_read);
    RUN_TEST(test_async_reentrant);
    RUN_TEST(test_async_fair);
    RUN_TEST(test_async_write);
    RUN_TEST(test_async_read);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_nested_lease");
}
