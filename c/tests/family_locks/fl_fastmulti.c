/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_fastmulti.c - the faster MultiLock (rlk_fastmulti_*, Redisson's
 * getMultiLock(group, values)) against a real redis-server:
 *   - every value or none: a set that shares one value with another
 *     holder's is refused whole (nothing written); a disjoint one is taken;
 *     a value is reentrant for its holder; unlock of a set not held changes
 *     nothing; the queries; force unlock; bad values and a key of another type;
 *   - Redisson's acquire script on the same hash: each refuses the other;
 *   - a waiter is woken by the release (pub/sub), not by the lease;
 *   - the watchdog renews every value's expire_time (fastmulti/renew) and
 *     reports the hold lost when its fields are deleted;
 *   - lost replies (fixture's DEBUG SLEEP: the call runs after its reply
 *     is lost; CLIENT PAUSE: it never runs): an acquire that ran is adopted
 *     (held once, counted lost_adopted), a release that ran reports RLK_OK
 *     and leaves nothing, an acquire that did not run is the connection's
 *     error "settled" with nothing held, a release of values held twice
 *     that ran settled (not sent again); read back by the values' live
 *     counts (fastmulti/counts): an acquire over a lapsed hold of the same
 *     owner that never ran is not adopted (the values were free), a
 *     re-entry that ran is adopted (counted twice), one that did not is
 *     settled as not run;
 *   - the invariant: 6 processes x 3 threads each take random sets of 2..3
 *     of 6 values of one group; per value, the event log has no two holds
 *     overlapping (0 overlaps); the control (same run, no lock taken) must
 *     find overlaps, or the checker proves nothing.
 *
 * Child mode (argv[1]): contend|control URL THREADS ITERS LOGFILE.
 */
#include "check.h"
#include "fl_util.h"
#include "runtime/rt.h"
#include "runtime/wd.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

#define NVALUES 6

static const char *const all_values[NVALUES] = {"v0", "v1", "v2", "v3", "v4", "v5"};

/* ------------------------------------------------------------ child: contend */

typedef struct contend {
    rlk_client *c;
    int iters;
    int take;                   /* 0: the control, no lock taken */
    tk_hold *recs;              /* NVALUES per iteration per thread */
    int errors;
} contend;

static void contend_once(contend *ct, int idx, int i, unsigned *seed)
{
    const char *values[3];
    int picked[3], n = 2 + (int)(tk_rand(seed) % 2), k = 0;
    long long lease = (i + idx) % 2 ? 5000 : 0;     /* half leased, half watchdog */
    long long start, end;
    rlk_fastmulti *m;

    while (k < n) {
        int v = (int)(tk_rand(seed) % NVALUES), dup = 0;

        for (int j = 0; j < k; j++)
            dup |= picked[j] == v;
        if (!dup) {
            picked[k] = v;
            values[k++] = all_values[v];
        }
    }
    if (!(m = rlk_fastmulti_new(ct->c, "fm:contend", values, (size_t)n))) {
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
        return;
    }
    if (ct->take && rlk_fastmulti_lock(m, lease) != RLK_OK) {
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
        rlk_fastmulti_free(m);
        return;
    }
    start = rlk_fx_now_ns();
    tk_spin_ns(20000 + (long long)(tk_rand(seed) % 60000));
    end = rlk_fx_now_ns();
    for (int j = 0; j < n; j++) {
        tk_hold *r = &ct->recs[((size_t)idx * (size_t)ct->iters + (size_t)i) * NVALUES +
                               (size_t)picked[j]];

        r->start_ns = start;
        r->end_ns = end;
        r->pid = (int)getpid();
        r->thread = idx;
        r->seq = i * NVALUES + picked[j];       /* the value: seq % NVALUES */
        r->kind = TK_HOLD_EXCL;
    }
    if (ct->take && rlk_fastmulti_unlock(m) != RLK_OK)
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
    rlk_fastmulti_free(m);
}

static void *contend_main(void *arg)
{
    tk_thread_arg *a = arg;
    contend *ct = a->ctx;
    unsigned seed = (unsigned)getpid() * 31u + (unsigned)a->idx;

    for (int i = 0; i < ct->iters; i++)
        contend_once(ct, a->idx, i, &seed);
    return NULL;
}

static int child_contend(const char *curl, int take, int threads, int iters, const char *logpath)
{
    contend ct = {0};
    size_t n = 0, slots = (size_t)threads * (size_t)iters * NVALUES;

    ct.c = tk_connect(curl, 2000, threads);
    if (!ct.c || threads > 16)
        return 2;
    ct.iters = iters;
    ct.take = take;
    if (!(ct.recs = calloc(slots, sizeof *ct.recs)))
        return 2;
    if (tk_child_go_threads(threads, contend_main, &ct) != 0)
        return 2;
    n = tk_holds_compact(ct.recs, slots);      /* values not taken: pid 0 */
    if (tk_holds_save(logpath, ct.recs, n) != 0)
        ct.errors++;
    tk_say("done %zu %d", n, ct.errors);
    free(ct.recs);
    rlk_free(ct.c);
    return 0;
}

static int child_main(int argc, char **argv)
{
    if (argc == 6 && (strcmp(argv[1], "contend") == 0 || strcmp(argv[1], "control") == 0))
        return child_contend(argv[2], strcmp(argv[1], "contend") == 0, atoi(argv[3]),
                             atoi(argv[4]), argv[5]);
    fprintf(stderr, "fl_fastmulti: unknown child mode\n");
    return 2;
}

/* ------------------------------------------------------------ all or none */

static long long hlen(const char *key)
{
    return tk_int(&srv, "HLEN %s", key);
}

static void test_all_or_none(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    const char *ab[] = {"jack", "mary"}, *bc[] = {"mary", "tom"}, *cd[] = {"tom", "ann"};
    const char *dup[] = {"jack", "jack"}, *colon[] = {"a:b"}, *one[] = {"jack"};
    rlk_fastmulti *a, *b, *d, *again;
    int held = -1, locked = -1, released = -1;

    REQUIRE(c && c2);
    CHECK(rlk_fastmulti_new(c, "fm:class", dup, 2) == NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_ARG);
    CHECK(rlk_fastmulti_new(c, "fm:class", colon, 1) == NULL);
    CHECK(rlk_fastmulti_new(c, "fm:class", ab, 0) == NULL);
    CHECK(rlk_fastmulti_new(c, "", ab, 2) == NULL);
    a = rlk_fastmulti_new(c, "fm:class", ab, 2);
    b = rlk_fastmulti_new(c2, "fm:class", bc, 2);
    d = rlk_fastmulti_new(c2, "fm:class", cd, 2);
    again = rlk_fastmulti_new(c, "fm:class", one, 1);
    REQUIRE(a && b && d && again);
    CHECK_STR_EQ(rlk_fastmulti_group(a), "fm:class");
    CHECK_INT_EQ((int)rlk_fastmulti_count(a), 2);
    CHECK_STR_EQ(rlk_fastmulti_value(a, 1), "mary");
    CHECK(rlk_fastmulti_value(a, 2) == NULL);
    REQUIRE_INT_EQ(rlk_fastmulti_set_owner(a, "fm-a:1"), RLK_OK);
    REQUIRE_INT_EQ(rlk_fastmulti_set_owner(again, "fm-a:1"), RLK_OK);
    REQUIRE_INT_EQ(rlk_fastmulti_set_owner(b, "fm-b:1"), RLK_OK);
    REQUIRE_INT_EQ(rlk_fastmulti_set_owner(d, "fm-b:1"), RLK_OK);

    CHECK_INT_EQ(rlk_fastmulti_try_lock(a, 0, 20000), RLK_OK);
    CHECK_INT_EQ(hlen("fm:class"), 6);
    /* mary is a's: b's {mary, tom} refused whole, tom not taken. */
    CHECK_INT_EQ(rlk_fastmulti_try_lock(b, 0, 20000), RLK_ERR_BUSY);
    CHECK_INT_EQ(tk_int(&srv, "HEXISTS %s %s", "fm:class", "tom"), 0);
    CHECK_INT_EQ(rlk_fastmulti_try_lock(b, 200, 20000), RLK_ERR_BUSY);
    /* {tom, ann} is disjoint: taken beside a's. */
    CHECK_INT_EQ(rlk_fastmulti_try_lock(d, 0, 20000), RLK_OK);
    CHECK_INT_EQ(hlen("fm:class"), 12);
    /* Re-entry of one of a's values by the same owner: counted. */
    CHECK_INT_EQ(rlk_fastmulti_try_lock(again, 0, 20000), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "fm:class", "jack:fm-a:1:lock_count"), 2);
    CHECK_INT_EQ(rlk_fastmulti_is_held_by_me(a, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_fastmulti_is_held_by_me(b, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_fastmulti_is_locked(b, &locked), RLK_OK);
    CHECK_INT_EQ(locked, 1);
    /* b holds none of its values: its unlock changes nothing. */
    CHECK_INT_EQ(rlk_fastmulti_unlock(b), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(hlen("fm:class"), 12);
    /* a's unlock: mary freed, jack still counted once (again's). */
    CHECK_INT_EQ(rlk_fastmulti_unlock(a), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HEXISTS %s %s", "fm:class", "mary"), 0);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", "fm:class", "jack:fm-a:1:lock_count"), 1);
    CHECK_INT_EQ(rlk_fastmulti_unlock(again), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HEXISTS %s %s", "fm:class", "jack"), 0);
    CHECK_INT_EQ(rlk_fastmulti_unlock(a), RLK_ERR_NOT_OWNER);
    /* Force unlock of d's values whoever holds them. */
    CHECK_INT_EQ(rlk_fastmulti_force_unlock(a, &released), RLK_OK);
    CHECK_INT_EQ(released, 0);
    CHECK_INT_EQ(rlk_fastmulti_force_unlock(d, &released), RLK_OK);
    CHECK_INT_EQ(released, 1);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "fm:class"), 0);
    /* A key of another type: the script's refusal. */
    {
        redisReply *r = rlk_fx_command(&srv, "SET %s %s", "fm:str", "x");
        rlk_fastmulti *s;

        CHECK(r && r->type == REDIS_REPLY_STATUS);
        if (r)
            freeReplyObject(r);
        s = rlk_fastmulti_new(c, "fm:str", ab, 2);
        REQUIRE(s);
        CHECK_INT_EQ(rlk_fastmulti_try_lock(s, 0, 5000), RLK_ERR_SCRIPT);
        CHECK_STR_CONTAINS(rlk_errstr(c), "RLK_WRONGTYPE");
        rlk_fastmulti_free(s);
    }
    rlk_fastmulti_free(again);
    rlk_fastmulti_free(d);
    rlk_fastmulti_free(b);
    rlk_fastmulti_free(a);
    rlk_free(c);
    rlk_free(c2);
}

/* RedissonFasterMultiLock.tryLockInnerAsync (Redisson 4.7), shortened to what it does:
 * ARGV lease, now, owner, values. */
static const char redisson_acquire[] =
    "local leaseTime = tonumber(ARGV[1]); local currentTime = tonumber(ARGV[2]); "
    "local currentThread = ARGV[3]; local maxExpireTime = -1; local keyExist = nil; "
    "if (tonumber(redis.call('exists',KEYS[1])) > 0) then keyExist = 1; "
    "for i=4, #ARGV, 1 do local lockThread = redis.call('hget', KEYS[1], ARGV[i]); "
    "if(lockThread ~= false and lockThread ~= currentThread) then "
    "local expireTime = redis.call('hget', KEYS[1], ARGV[i]..':'..lockThread..':expire_time'); "
    "if(expireTime ~= false and tonumber(expireTime) > currentTime ) then "
    "if(tonumber(expireTime) > maxExpireTime) then maxExpireTime = tonumber(expireTime); end; "
    "end end; end; else keyExist = 0; end; "
    "if( maxExpireTime ~= -1) then return maxExpireTime-currentTime; end; "
    "for i=4, #ARGV, 1 do redis.call('hset', KEYS[1], ARGV[i], currentThread); "
    "local f = ARGV[i]..':'..currentThread..':expire_time'; "
    "local e = redis.call('hget', KEYS[1], f); local n = leaseTime + currentTime; "
    "if(e == false or tonumber(e) < n) then redis.call('hset', KEYS[1], f, n); end; "
    "redis.call('HINCRBY', KEYS[1], ARGV[i]..':'..currentThread..':lock_count', 1); end; "
    "if(keyExist == 1) then local t = redis.call('pttl',KEYS[1]); "
    "if(tonumber(t) > 0 and leaseTime > tonumber(t)) then redis.call('pexpire',KEYS[1], leaseTime); end; "
    "else redis.call('pexpire',KEYS[1], leaseTime); end; return nil;";

/* Wall-clock ms, as Redisson passes System.currentTimeMillis(). */
static long long epoch_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void test_redisson_holder(void)
{
    rlk_client *c = tk_connect(url, 0, 2);
    const char *bc[] = {"mary", "tom"};
    rlk_fastmulti *m;
    redisReply *r;
    char now[32];

    REQUIRE(c);
    m = rlk_fastmulti_new(c, "fm:mixed", bc, 2);
    REQUIRE(m);
    REQUIRE_INT_EQ(rlk_fastmulti_set_owner(m, "rlk-a:1"), RLK_OK);
    snprintf(now, sizeof now, "%lld", epoch_ms());
    r = rlk_fx_command(&srv, "EVAL %s 1 %s %s %s %s %s %s", redisson_acquire, "fm:mixed", "400",
                       now, "redisson-b:1", "jack", "mary");
    CHECK(r && r->type == REDIS_REPLY_NIL);
    if (r)
        freeReplyObject(r);
    /* Busy while Redisson's holder has mary; the wait ends by its expire_time at the latest. */
    CHECK_INT_EQ(rlk_fastmulti_try_lock(m, 0, 5000), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_fastmulti_try_lock(m, 5000, 5000), RLK_OK);
    /* Redisson's script sees rlk's holder of tom. */
    snprintf(now, sizeof now, "%lld", epoch_ms());
    r = rlk_fx_command(&srv, "EVAL %s 1 %s %s %s %s %s", redisson_acquire, "fm:mixed", "400",
                       now, "redisson-b:1", "tom");
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 0);
    if (r)
        freeReplyObject(r);
    CHECK_INT_EQ(rlk_fastmulti_unlock(m), RLK_OK);
    rlk_fastmulti_free(m);
    rlk_free(c);
}

/* ------------------------------------------------------------ waiting */

static int fm_wait_lock(void *m)
{
    return rlk_fastmulti_try_lock(m, 10000, 0);
}

static int fm_unlock(void *m)
{
    return rlk_fastmulti_unlock(m);
}

static void test_waiter_woken(void)
{
    rlk_client *c = tk_connect(url, 0, 2), *c2 = tk_connect(url, 0, 2);
    const char *ab[] = {"jack", "mary"}, *bc[] = {"mary", "tom"};
    rlk_fastmulti *m, *b;
    fl_waiter w;
    long long woken;
    int rc = -1;

    REQUIRE(c && c2);
    m = rlk_fastmulti_new(c, "fm:wake", ab, 2);
    b = rlk_fastmulti_new(c2, "fm:wake", bc, 2);
    REQUIRE(m && b);
    REQUIRE(rlk_fastmulti_set_owner(b, "fm-waiter") == RLK_OK);  /* unlocked from here */
    REQUIRE_INT_EQ(rlk_fastmulti_try_lock(m, 0, 20000), RLK_OK);
    REQUIRE(fl_waiter_start(&w, fm_wait_lock, b) == 0);
    woken = fl_waiter_woken(&w, &srv, "redisson_lock__channel:{fm:wake}", &stall, fm_unlock, m,
                            &rc);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECK_INT_EQ(w.rc, RLK_OK);
    CHECKF(woken >= 0 && woken <= 500, "woken %lld ms after the release (holder's lease 20000 "
           "ms)%s", woken, tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_fastmulti_unlock(b), RLK_OK);
    rlk_fastmulti_free(b);
    rlk_fastmulti_free(m);
    rlk_free(c);
    rlk_free(c2);
}

/* ------------------------------------------------------------ watchdog */

#define WD_LEASE 900     /* renewed every 300 ms: a renewal has 600 ms of room on a loaded machine */

static void test_watchdog_and_lost(void)
{
    rlk_client *c = tk_connect(url, WD_LEASE, 2);
    const char *ab[] = {"jack", "mary"};
    rlk_runtime_stats st;
    rlk_fastmulti *m;
    char owner[RLK_OWNER_MAX + 1], field[RLK_OWNER_MAX + 64];
    tk_lost_rec g;
    long long ttl;
    int held = -1;

    REQUIRE(c);
    tk_lost_init(&g);
    tk_lost_install(c, &g);
    m = rlk_fastmulti_new(c, "fm:wd", ab, 2);
    REQUIRE(m);
    REQUIRE_INT_EQ(rlk_fastmulti_lock(m, 0), RLK_OK);
    rlk_fx_sleep_ms(4 * WD_LEASE);      /* four leases: only renewals keep it */
    ttl = tk_int(&srv, "PTTL %s", "fm:wd");
    CHECKF(ttl > 0 && ttl <= WD_LEASE, "group PTTL %lld after four leases", ttl);
    CHECK_INT_EQ(rlk_fastmulti_is_held_by_me(m, &held), RLK_OK);
    CHECK_INT_EQ(held, 1);
    CHECK_INT_EQ(rlk_runtime_stats_get(c, &st), RLK_OK);
    CHECKF(st.renew_calls >= 3, "%llu renewals", st.renew_calls);
    CHECK_INT_EQ(st.renew_errors, 0);

    /* Its values' fields deleted (a force unlock by another client): lost. */
    REQUIRE_INT_EQ(rlk_fastmulti_owner(m, owner, sizeof owner), RLK_OK);
    snprintf(field, sizeof field, "jack:%s:expire_time", owner);
    CHECK_INT_EQ(tk_int(&srv, "HDEL %s %s", "fm:wd", field), 1);
    snprintf(field, sizeof field, "mary:%s:expire_time", owner);
    CHECK_INT_EQ(tk_int(&srv, "HDEL %s %s", "fm:wd", field), 1);
    CHECK(tk_latch_wait(&g.fired, 1, 3000) == 1);
    CHECK_INT_EQ(g.kind, RLK_KIND_LOCK);
    CHECK_INT_EQ(g.reason, RLK_LOST_GONE);
    CHECK_STR_EQ(g.name, "fm:wd");
    CHECK_INT_EQ(rlk_fastmulti_is_held_by_me(m, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);
    CHECK_INT_EQ(rlk_fastmulti_unlock(m), RLK_ERR_NOT_OWNER);
    rlk_fastmulti_free(m);
    rlk_free(c);
    tk_lost_destroy(&g);
}

/* ------------------------------------------------------------ invariant */

#define PROCS 6
#define THREADS 3
#define ITERS 40

/* Runs the children in mode (contend, control); the overlaps summed over the
 * values into *overlaps, the holds into *holds; -1 when a child failed. */
static int run_children(const char *mode, long *overlaps, size_t *holds, int *errors)
{
    fl_contend_run run;
    tk_hold *per;

    *overlaps = 0;
    *holds = 0;
    *errors = 0;
    if (fl_contend_mode(mode, url, PROCS, THREADS, ITERS, 60000, 0, &run) != 0)
        return -1;
    CHECKF(run.not_ready == 0, "%d children did not get ready", run.not_ready);
    CHECKF(run.unclean == 0, "%d children did not exit cleanly", run.unclean);
    *holds = run.n;
    *errors = run.errors;
    /* One check per value: holds of different values may overlap. */
    per = calloc(run.n ? run.n : 1, sizeof *per);
    for (int v = 0; per && v < NVALUES; v++) {
        size_t k = 0;
        tk_hold_report rep;

        for (size_t j = 0; j < run.n; j++)
            if (run.recs[j].seq % NVALUES == v)
                per[k++] = run.recs[j];
        rep = tk_holds_check(per, k, 0);
        *overlaps += rep.conflicts;
    }
    free(per);
    free(run.recs);
    return run.spawned == PROCS && run.done == PROCS && run.bad == 0 ? 0 : -1;
}

static void test_invariant(void)
{
    long overlaps = -1, control = -1;
    size_t holds = 0, control_holds = 0;
    int errors = -1, control_errors = -1;

    CHECK_INT_EQ(run_children("contend", &overlaps, &holds, &errors), 0);
    printf("  faster MultiLock invariant: %d processes x %d threads x %d sets of 2..3 of %d "
           "values: %zu value holds, %ld overlaps, %d errors\n", PROCS, THREADS, ITERS, NVALUES,
           holds, overlaps, errors);
    CHECK_INT_EQ(errors, 0);
    CHECKF(holds >= (size_t)PROCS * THREADS * ITERS * 2, "%zu value holds", holds);
    CHECK_INT_EQ(overlaps, 0);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", "fm:contend"), 0);
    /* The control: the same run taking no lock must show overlaps. */
    CHECK_INT_EQ(run_children("control", &control, &control_holds, &control_errors), 0);
    printf("  control (no lock taken): %zu value holds, %ld overlaps\n", control_holds, control);
    CHECKF(control > 0, "the control found %ld overlaps: the check cannot see a violation",
           control);
}

static rlk_runtime_stats stats(rlk_client *c)
{
    rlk_runtime_stats st;

    memset(&st, 0, sizeof st);
    (void)rlk_runtime_stats_get(c, &st);
    return st;
}

static long long lock_count(const char *group, const char *value, const char *owner)
{
    redisReply *r = rlk_fx_command(&srv, "HGET %s %s:%s:lock_count", group, value, owner);
    long long n = r && r->type == REDIS_REPLY_STRING ? atoll(r->str) : 0;

    if (r)
        freeReplyObject(r);
    return n;
}

/* A client whose replies are lost after 200 ms, with a handle of group g's
 * values a and b and its owner id; NULL when either could not be made. */
static rlk_client *lost_client(const char *g, rlk_fastmulti **m, char *owner, size_t len)
{
    static const char *const ab[] = {"a", "b"};
    rlk_options opt;
    rlk_client *c;

    rlk_options_init(&opt);
    opt.url = url;
    opt.command_timeout_ms = 200;
    opt.pool_size = 2;
    *m = NULL;
    if (!(c = rlk_connect(&opt)) || rlk_err(c) != RLK_OK ||
        !(*m = rlk_fastmulti_new(c, g, ab, 2)) || rlk_fastmulti_owner(*m, owner, len) != RLK_OK) {
        rlk_fastmulti_free(*m);
        rlk_free(c);
        return NULL;
    }
    return c;
}

static void test_lost_reply(void)
{
    const char *g = "flm:lost";
    rlk_client *c;
    rlk_fastmulti *m;
    rlk_runtime_stats s0, s;
    redisContext *x;
    char owner[RLK_OWNER_MAX + 1];
    int rc, held = 0;

    REQUIRE((c = lost_client(g, &m, owner, sizeof owner)) != NULL);
    /* the scripts loaded first (a lost NOSCRIPT would be what ran) */
    REQUIRE(rlk_fastmulti_try_lock(m, 0, -1) == RLK_OK);
    REQUIRE(rlk_fastmulti_unlock(m) == RLK_OK);
    s0 = stats(c);
    /* an acquire that ran after its reply was lost: adopted */
    REQUIRE((x = rlk_fx_sleep_begin(&srv, 700)) != NULL);
    rc = rlk_fastmulti_try_lock(m, 0, -1);
    rlk_fx_sleep_end(x);
    s = stats(c);
    CHECKF(rc == RLK_OK, "lost acquire: %s %s", rlk_strerror(rc), rlk_errstr(c));
    CHECK_INT_EQ((long long)(s.lost_replies - s0.lost_replies), 1);
    CHECK_INT_EQ((long long)(s.lost_adopted - s0.lost_adopted), 1);
    CHECK_INT_EQ(lock_count(g, "a", owner), 1);
    CHECK_INT_EQ(lock_count(g, "b", owner), 1);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 1);
    CHECK(rlk_fastmulti_is_held_by_me(m, &held) == RLK_OK && held);
    /* a release that ran after its reply was lost: RLK_OK, nothing left */
    REQUIRE((x = rlk_fx_sleep_begin(&srv, 700)) != NULL);
    rc = rlk_fastmulti_unlock(m);
    rlk_fx_sleep_end(x);
    CHECKF(rc == RLK_OK, "lost release: %s %s", rlk_strerror(rc), rlk_errstr(c));
    CHECK_INT_EQ(hlen(g), 0);
    CHECK_INT_EQ((long long)(stats(c).lost_replies - s0.lost_replies), 2);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 0);
    /* an acquire that never ran (CLIENT PAUSE): the error, settled, nothing held */
    s0 = stats(c);
    REQUIRE(rlk_fx_client_pause(&srv, 600) == 0);
    rc = rlk_fastmulti_try_lock(m, 0, -1);
    CHECKF(rc != RLK_OK && rc != RLK_ERR_UNSETTLED && strstr(rlk_errstr(c), "settled"),
           "acquire not run: %s %s", rlk_strerror(rc), rlk_errstr(c));
    CHECK_INT_EQ((long long)(stats(c).lost_not_run - s0.lost_not_run), 1);
    CHECK_INT_EQ(hlen(g), 0);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 0);
    /* held twice through this handle alone: a lost release that ran leaves
     * every value at one less (the counts are exact): settled, not sent again */
    REQUIRE(rlk_fastmulti_try_lock(m, 0, -1) == RLK_OK);
    REQUIRE(rlk_fastmulti_try_lock(m, 0, -1) == RLK_OK);
    REQUIRE((x = rlk_fx_sleep_begin(&srv, 700)) != NULL);
    rc = rlk_fastmulti_unlock(m);
    rlk_fx_sleep_end(x);
    CHECKF(rc == RLK_OK, "lost release held twice: %s %s", rlk_strerror(rc), rlk_errstr(c));
    CHECK_INT_EQ(lock_count(g, "a", owner), 1);     /* ran once, not twice */
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 1);
    CHECK(rlk_fastmulti_force_unlock(m, NULL) == RLK_OK);
    CHECK_INT_EQ(hlen(g), 0);
    rlk_fastmulti_free(m);
    rlk_free(c);
}

/* Lost replies read back by the values' live counts: a lapsed hold of the
 * same owner (its fields left, expire_time passed) under an acquire that
 * never ran (CLIENT PAUSE) is not adopted: the values are free, the acquire
 * is settled as not run and a second try takes them; an acquire on values
 * the holder has already (re-entry) that ran after its reply was lost
 * (DEBUG SLEEP) is adopted, counted twice as on the server. */
static void test_lost_counts(void)
{
    const char *g = "flm:lostcounts";
    rlk_client *c;
    rlk_fastmulti *m;
    rlk_runtime_stats s0, s;
    redisContext *x;
    redisReply *r;
    char owner[RLK_OWNER_MAX + 1], past[32];
    int rc;

    REQUIRE((c = lost_client(g, &m, owner, sizeof owner)) != NULL);
    /* the scripts loaded first (a lost NOSCRIPT would be what ran) */
    REQUIRE(rlk_fastmulti_try_lock(m, 0, 30000) == RLK_OK);
    REQUIRE(rlk_fastmulti_unlock(m) == RLK_OK);
    /* this owner's lapsed hold of a and b: free for anyone by the scripts' rule */
    snprintf(past, sizeof past, "%lld", tk_server_ms(&srv) - 60000);
    r = rlk_fx_command(&srv, "HSET %s a %s a:%s:expire_time %s a:%s:lock_count 1 b %s "
                       "b:%s:expire_time %s b:%s:lock_count 1", g, owner, owner, past, owner,
                       owner, owner, past, owner);
    REQUIRE(r && r->type == REDIS_REPLY_INTEGER && r->integer == 6);
    freeReplyObject(r);
    s0 = stats(c);
    REQUIRE(rlk_fx_client_pause(&srv, 600) == 0);
    rc = rlk_fastmulti_try_lock(m, 0, 30000);
    s = stats(c);
    CHECKF(rc != RLK_OK && rc != RLK_ERR_UNSETTLED && strstr(rlk_errstr(c), "settled"),
           "lost acquire over a lapsed hold, not run: %s %s", rlk_strerror(rc), rlk_errstr(c));
    CHECK_INT_EQ((long long)(s.lost_adopted - s0.lost_adopted), 0);
    CHECK_INT_EQ((long long)(s.lost_not_run - s0.lost_not_run), 1);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 0);
    /* the values were free: taken now, from 1, with a live expire_time */
    REQUIRE(rlk_fastmulti_try_lock(m, 0, 30000) == RLK_OK);
    CHECK_INT_EQ(lock_count(g, "a", owner), 1);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 1);
    /* a re-entry that ran after its reply was lost: adopted */
    s0 = stats(c);
    REQUIRE((x = rlk_fx_sleep_begin(&srv, 700)) != NULL);
    rc = rlk_fastmulti_try_lock(m, 0, 30000);
    rlk_fx_sleep_end(x);
    s = stats(c);
    CHECKF(rc == RLK_OK, "lost re-entry: %s %s", rlk_strerror(rc), rlk_errstr(c));
    CHECK_INT_EQ((long long)(s.lost_replies - s0.lost_replies), 1);
    CHECK_INT_EQ((long long)(s.lost_adopted - s0.lost_adopted), 1);
    CHECK_INT_EQ(lock_count(g, "a", owner), 2);     /* ran once, not sent again */
    CHECK_INT_EQ(lock_count(g, "b", owner), 2);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 2);
    /* a re-entry that never ran: every value still at the holder's count, all
     * of whose acquisitions were this handle's: settled as not run */
    s0 = stats(c);
    REQUIRE(rlk_fx_client_pause(&srv, 600) == 0);
    rc = rlk_fastmulti_try_lock(m, 0, 30000);
    CHECKF(rc != RLK_OK && rc != RLK_ERR_UNSETTLED && strstr(rlk_errstr(c), "settled"),
           "lost re-entry, not run: %s %s", rlk_strerror(rc), rlk_errstr(c));
    CHECK_INT_EQ((long long)(stats(c).lost_not_run - s0.lost_not_run), 1);
    CHECK_INT_EQ(lock_count(g, "a", owner), 2);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 2);
    CHECK_INT_EQ(rlk_fastmulti_unlock(m), RLK_OK);
    CHECK_INT_EQ(rlk_fastmulti_unlock(m), RLK_OK);
    CHECK_INT_EQ(hlen(g), 0);
    CHECK_INT_EQ(rlk_wd_count_as(rlk_rt_get(c)->wd, RLK_KIND_LOCK, g, owner), 0);
    rlk_fastmulti_free(m);
    rlk_free(c);
}

int main(int argc, char **argv)
{
    static const char *const extra[] = {"--enable-debug-command", "yes", NULL};
    rlk_fx_config cfg;

    if (argc > 1)
        return child_main(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    /* tk_suite_start with DEBUG allowed (test_lost_reply's DEBUG SLEEP) */
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0 ||
        tk_functions_setup(&srv, url, sizeof url) < 0) {
        fprintf(stderr, "fl_fastmulti: cannot start redis-server\n");
        return 1;
    }
    tk_stall_start(&stall);
    RUN_TEST(test_all_or_none);
    if (!getenv("RLK_TEST_FUNCTIONS"))     /* it runs Redisson's script by EVAL */
        RUN_TEST(test_redisson_holder);
    else
        printf("- test_redisson_holder: skipped in functions mode (EVAL of Redisson's script)\n");
    RUN_TEST(test_waiter_woken);
    RUN_TEST(test_watchdog_and_lost);
    if (!getenv("RLK_TEST_FUNCTIONS"))     /* its FCALL-only user may not run CLIENT ID/KILL */
    {
        RUN_TEST(test_lost_reply);
        RUN_TEST(test_lost_counts);
    } else
        printf("- test_lost_reply, test_lost_counts: skipped in functions mode (the fence needs "
               "CLIENT ID and CLIENT KILL)\n");
    RUN_TEST(test_invariant);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_fastmulti");
}
