/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_held.c - held grants of the reentrant lock (docs/runtime.md, "Held grants") against a real
 * redis-server, both APIs:
 *
 *   blocking   a hold taken by waiting (A) is released in the held form: the waiter queued
 *              behind it (B, a child process: one process's blocking waiters of a lock queue
 *              behind each other locally, only its first in the server's queue) returns on the
 *              grant's message, the lock written in its name, no claim sent (its client counts
 *              one held grant, A's none: A claimed a reservation, its predecessor's hold was not
 *              taken by waiting)
 *   given id   B with a holder id given to it (others may share it) takes no held grant: it
 *              claims a reservation as before
 *   async      the same with an rlk_async waiter of this process as B; and two tasks of one
 *              async client, the second queued by its first call (the client's wake channel
 *              subscribed already), served in turn; and one task waiting twice: the second
 *              wait, while the wake channel lingers after the first, queued by its first call
 *   cancel lost  an async task gives up and its cancel never runs (it waits behind a write pause
 *              and its connection is killed): its ticket stays queued while the client's wake
 *              channel lingers with no task listening, so the next release grants that ticket
 *              the lock held; nobody renews or releases it, and the next waiter acquires within
 *              the gone task's lease and a slack (the stated bound), not before half of it
 *   cancel lost, back  the same task waits again when the release grants the stale ticket in
 *              its name: its live wait re-enters, leaves the queue, and its one unlock frees
 *              the lock (the grant's count goes with it); the same through the blocking API, a
 *              thread whose first wait ends unserved and whose give-up never runs
 *   stopped    B's process is stopped (SIGSTOP) before A's release: the grant reaches its
 *              client, the lock stays in its name for its lease (the stated bound), and the next
 *              waiter acquires within that lease and a slack, not before half of it
 *   lost       B's subscriber is killed while B cannot run (its process stopped; the async
 *              waiter's loop not driven), before A's release (nobody hears it: B is passed over,
 *              not granted) or after it (granted held; the message is normally still read before
 *              the connection's end, else B learns of the grant by attempting again): B, back,
 *              holds once, and its one unlock frees the lock
 *   lapsed     B (child or async waiter) granted held while it cannot run, its lease runs out,
 *              D takes the lock: B, back, does not hold on the stale message (read first, or
 *              delivered after an attempt of B's); it waits behind D with a new ticket and gives
 *              up at the end of its wait (D's hold untouched)
 *   other wait B (child or async waiter) queued behind A, which holds throughout: held grants
 *              of B's ticket and holder id forged on its wake channel, naming another wait of
 *              that holder id (as a grant made for an earlier wait that drew the same ticket,
 *              read late) or none: B does not hold on them and gives up at the end of its wait;
 *              control: the same grant naming B's own wait is taken
 *   next head  threads of one process: the head after one that got a held grant expects to be
 *              first in the server's queue too, and attempts once (joined to the lock's channel
 *              before it)
 *   redisson   a Redisson waiter (a raw client: it listens on the lock's channel and runs
 *              Redisson's acquire on each "0") gets the lock while two rlk threads keep handing
 *              it over held: one release of 8 frees it
 *
 * A is a thread of this process that takes the lock by waiting and releases it when told; the
 * holder ids are the clients' own (a given one, rlk_lock_set_owner, takes no held grants). Every
 * wait is bounded; no sleep stands in for a signal.
 */
#include "check.h"
#include "fl_util.h"

#include "aloop.h"
#include "async_procs.h"
#include "client/client_t.h"
#include "runtime/lq.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SLACK_MS 1500       /* scheduling and round trips on a shared 2-core VM */
#define LEASE 2000          /* a stopped or gone waiter's fixed lease: the bound it costs the next */
#define TASK 5ULL

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

/* ------------------------------------------------------------ helpers */

/* Bounded poll until the lock's queue holds n tickets: 0, or -1. */
static int queued(const char *name, long long n)
{
    long long until = rlk_fx_now_ms() + 10000;

    while (rlk_fx_now_ms() < until) {
        if (tk_int(&srv, "LLEN {%s}:rlk_waiters", name) == n)
            return 0;
        rlk_fx_sleep_ms(2);
    }
    return -1;
}

/* How many connections hear channel: 0, 1, ..., or -1. */
static long long numsub(const char *channel)
{
    redisContext *x = rlk_fx_connect(&srv);
    redisReply *r = x ? redisCommand(x, "PUBSUB NUMSUB %s", channel) : NULL;
    long long n = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                          r->element[1]->type == REDIS_REPLY_INTEGER
                      ? r->element[1]->integer
                      : -1;

    if (r)
        freeReplyObject(r);
    if (x)
        redisFree(x);
    return n;
}

/* The wake channel of the first waiter in name's queue (its ticket / 1024 names it) into
 * channel (len bytes): 0, or -1. */
static int wake_channel(const char *name, char *channel, size_t len)
{
    long long t = tk_int(&srv, "LINDEX {%s}:rlk_waiters 0", name);

    return t >= 1024 && (size_t)snprintf(channel, len, "redisson_lock__channel:{%s}:rlk:%lld",
                                         name, t / 1024) < len
               ? 0
               : -1;
}

/* Kills every pub/sub connection, the subscriber of a waiter that cannot run meanwhile among
 * them, and checks that nobody hears that waiter's wake channel: a grant published there now is
 * lost. 0, or -1. */
static int deafen(const char *channel)
{
    return tk_command_ok(&srv, "CLIENT KILL TYPE pubsub") == 0 && numsub(channel) == 0 ? 0 : -1;
}

static unsigned long long held_grants(rlk_client *c)
{
    rlk_metrics m;

    return rlk_metrics_get(c, &m) == RLK_OK ? m.held_grants : 0;
}

/* A: a thread that waits for name behind the main thread's uncontended hold, holds it (the
 * reservation claimed), and releases it when told (go). */
typedef struct a_thread {
    rlk_lock *l;
    char owner[256];
    int rc, urc;
    tk_latch got, go, done;
    pthread_t thread;
} a_thread;

/* The calling thread's holder id of l into owner (len bytes; "" when unknown). */
static void own_id(rlk_lock *l, char *owner, size_t len)
{
    if (rlk_lock_owner(l, owner, len) != RLK_OK)
        owner[0] = '\0';
}

static void *a_main(void *p)
{
    a_thread *a = p;

    own_id(a->l, a->owner, sizeof a->owner);
    a->rc = rlk_lock_try_lock(a->l, 20000, 30000);
    tk_latch_add(&a->got, 1);
    if (a->rc == RLK_OK && tk_latch_wait(&a->go, 1, 30000) == 1)
        a->urc = rlk_lock_unlock(a->l);
    tk_latch_add(&a->done, 1);
    return NULL;
}

/* Starts a thread like A waiting on l: 0, or -1. */
static int a_spawn(a_thread *a, rlk_lock *l)
{
    memset(a, 0, sizeof *a);
    a->l = l;
    a->urc = -1;
    tk_latch_init(&a->got), tk_latch_init(&a->go), tk_latch_init(&a->done);
    return pthread_create(&a->thread, NULL, a_main, a) == 0 ? 0 : -1;
}

/* Starts A on la once the main thread holds name through l0, and waits until A is queued.
 * 0, or -1. */
static int a_start(a_thread *a, rlk_lock *l0, rlk_lock *la, const char *name)
{
    if (rlk_lock_try_lock(l0, 0, 30000) != RLK_OK || a_spawn(a, la) != 0)
        return -1;
    return queued(name, 1);
}

/* A holds (after the main thread's release): RLK_OK, else what its wait returned. */
static int a_holds(a_thread *a)
{
    return tk_latch_wait(&a->got, 1, 10000) == 1 ? a->rc : -100;
}

/* Tells A to release, and waits for it: what its unlock returned. */
static int a_release(a_thread *a)
{
    tk_latch_add(&a->go, 1);
    if (tk_latch_wait(&a->done, 1, 10000) != 1)
        return -100;
    pthread_join(a->thread, NULL);
    return a->urc;
}

/* The child: "wait URL NAME LEASE [OWNER [WAIT]]": its owner on a line (OWNER: given to it,
 * rlk_lock_set_owner; "-": its own), a wait of WAIT ms (60000) with that fixed lease, then
 * "acq <rc> <held grants its client counts>" and, held, its release: "rel <rc>". */
static int child_wait(const char *curl, const char *name, long long lease, const char *given,
                      long long wait_ms)
{
    rlk_client *c = tk_connect(curl, 30000, 1);
    rlk_lock *l = c ? rlk_lock_new(c, name) : NULL;
    char owner[256];
    int rc;

    if (!l || (given && rlk_lock_set_owner(l, given) != RLK_OK) ||
        rlk_lock_owner(l, owner, sizeof owner) != RLK_OK)
        return 2;
    tk_say("owner %s", owner);
    rc = rlk_lock_try_lock(l, wait_ms, lease);
    tk_say("acq %d %llu", rc, held_grants(c));
    if (rc == RLK_OK)
        tk_say("rel %d", rlk_lock_unlock(l));
    rlk_lock_free(l);
    rlk_free(c);
    return 0;
}

/* Starts B, a waiter child on name with lease (given: its holder id, NULL: its own; wait: its
 * wait in ms, NULL: 60000): its owner into owner. 0, or -1. */
static int start_b(tk_child *b, const char *name, const char *lease, const char *given,
                   const char *wait, char *owner, size_t len)
{
    const char *args[] = {"wait", url, name, lease, given ? given : "-", wait, NULL};
    char line[300];

    if (tk_child_spawn(b, args) != 0 || tk_child_read_line(b, line, sizeof line, 15000) != 0 ||
        strncmp(line, "owner ", 6) != 0)
        return -1;
    return (size_t)snprintf(owner, len, "%s", line + 6) < len ? 0 : -1;
}

/* The blocking scenes' start: A started, B (a child, lease, given: its holder id, wait: its
 * wait) queued behind it, and A holding name (it claimed the reservation of the main thread's
 * plain release through l0). 0, or -1 (B's owner into owner). */
static int b_behind_a(const char *name, const char *lease, const char *given, const char *wait,
                      a_thread *a, tk_child *b, char *owner, size_t len, rlk_lock *l0,
                      rlk_lock *la)
{
    if (a_start(a, l0, la, name) != 0 || start_b(b, name, lease, given, wait, owner, len) != 0 ||
        queued(name, 2) != 0 || rlk_lock_unlock(l0) != RLK_OK)
        return -1;
    return a_holds(a) == RLK_OK ? 0 : -1;
}

/* ------------------------------------------------------------ blocking */

/* B with its own holder id returns on a held grant; with one given to it (a holder id others
 * may share: a nested rlk lock's) it takes none, and claims a reservation as before. */
static void blocking(const char *given)
{
    const char *name = given ? "held:g" : "held:b";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[300], line[300];
    unsigned long long grants = 99;
    int rc = -1;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    tk_child b;

    REQUIRE(l0 && la);
    tk_stall_reset(&stall);
    REQUIRE(b_behind_a(name, "30000", given, NULL, &a, &b, owner, sizeof owner, l0, la) == 0);
    CHECKF(held_grants(ca) == 0, "A claimed a reservation, yet counts %llu held grants",
           held_grants(ca));
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", name, a.owner), 1);
    CHECK_INT_EQ(a_release(&a), RLK_OK);            /* A's hold came by waiting: held */
    CHECK(tk_child_read_line(&b, line, sizeof line, 10000) == 0 &&
          sscanf(line, "acq %d %llu", &rc, &grants) == 2);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECKF(grants == (given ? 0 : 1), "B (%s holder id) returned on %llu held grants, expected "
           "%d%s", given ? "a given" : "its own", grants, given ? 0 : 1, tk_stall_note(&stall));
    CHECK(tk_child_read_line(&b, line, sizeof line, 10000) == 0 && strcmp(line, "rel 0") == 0);
    tk_child_wait(&b, 5000);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

static void test_blocking(void)
{
    blocking(NULL);
}

static void test_given_id(void)
{
    blocking("held-given-B");
}

/* ------------------------------------------------------------ async */

/* Script calls the server ran so far (EVALSHA, and FCALL in functions mode). */
static long long script_calls(void)
{
    return tk_command_calls(&srv, "evalsha") + tk_command_calls(&srv, "fcall");
}

/* Drives c's loop until name's queue holds n tickets (bounded): 0, or -1. */
static int drive_until_queued(ap_cl *c, const char *name, long long n)
{
    for (int i = 0; i < 500 && tk_int(&srv, "LLEN {%s}:rlk_waiters", name) < n; i++)
        aloop_run_until(c->l, NULL, NULL, 20);
    return tk_int(&srv, "LLEN {%s}:rlk_waiters", name) == n ? 0 : -1;
}

/* The async scenes' start: an rlk_async client c opened, its task TASK (owner: its holder id)
 * queued for name behind A (a wait of wait_ms, lease lease_ms), and A holding it (claimed after
 * the main thread's plain release through l0). 0, or -1. */
static int async_behind_a_for(const char *name, long long wait_ms, long long lease_ms, ap_cl *c,
                              ap_res *x, char *owner, size_t len, a_thread *a, rlk_lock *l0,
                              rlk_lock *la)
{
    if (ap_cl_open(c, url, 30000, 0, 0) != 0)
        return -1;
    snprintf(owner, len, "%s:%llu", rlk_async_uuid(c->ac), TASK);
    memset(x, 0, sizeof *x);
    if (a_start(a, l0, la, name) != 0 ||
        !AP_REQ(rlk_async_lock(c->ac, RLK_KIND_LOCK, name, TASK, wait_ms, lease_ms, ap_on_res,
                               x)) ||
        drive_until_queued(c, name, 2) != 0 || rlk_lock_unlock(l0) != RLK_OK)
        return -1;
    return a_holds(a) == RLK_OK ? 0 : -1;
}

/* The same, a wait of 20 s with a lease of 30 s. */
static int async_behind_a(const char *name, ap_cl *c, ap_res *x, char *owner, size_t len,
                          a_thread *a, rlk_lock *l0, rlk_lock *la)
{
    return async_behind_a_for(name, 20000, 30000, c, x, owner, len, a, l0, la);
}

static void test_async(void)
{
    const char *name = "held:a";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[160];
    rlk_metrics m;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    ap_cl c;
    ap_res x;

    REQUIRE(l0 && la);
    REQUIRE(async_behind_a(name, &c, &x, owner, sizeof owner, &a, l0, la) == 0);
    tk_stall_reset(&stall);
    CHECK_INT_EQ(a_release(&a), RLK_OK);            /* held: to the async waiter */
    REQUIRE(ap_wait_res(&c, &x, 10000));
    CHECK_INT_EQ(x.err, RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", name, owner), 1);
    CHECK(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECKF(m.held_grants == 1, "the async waiter returned on %llu held grants, expected 1%s",
           m.held_grants, tk_stall_note(&stall));
    memset(&x, 0, sizeof x);
    AP_REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, TASK, ap_on_res, &x));
    REQUIRE(ap_wait_res(&c, &x, 10000));
    CHECK_INT_EQ(x.err, RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

/* Two tasks of one rlk_async client wait for the lock: the second one's wake channel is the
 * client's, subscribed already for the first, so its first call queues it (one script call, not
 * a try and then a queuing attempt). They get the lock in turn, the second on the first's held
 * release. */
static void test_async_second_waiter(void)
{
    const char *name = "held:a2";
    rlk_client *c0 = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL;
    char owner[2][160];
    long long before, calls;
    rlk_metrics m;
    ap_cl c;
    ap_res x[2];

    REQUIRE(l0);
    REQUIRE(ap_cl_open(&c, url, 30000, 0, 0) == 0);
    for (int i = 0; i < 2; i++)
        snprintf(owner[i], sizeof owner[i], "%s:%llu", rlk_async_uuid(c.ac), TASK + i);
    REQUIRE(rlk_lock_try_lock(l0, 0, 30000) == RLK_OK);
    memset(x, 0, sizeof x);
    AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, name, TASK, 20000, 30000, ap_on_res, &x[0]));
    REQUIRE(drive_until_queued(&c, name, 1) == 0);
    tk_stall_reset(&stall);
    before = script_calls();
    AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, name, TASK + 1, 20000, 30000, ap_on_res, &x[1]));
    REQUIRE(drive_until_queued(&c, name, 2) == 0);
    calls = script_calls() - before;
    tk_say("async second waiter: queued by %lld script calls", calls);
    CHECKF(calls == 1, "the second task queued after %lld script calls, expected 1 (its channel "
           "was subscribed: its first call queues it)%s", calls, tk_stall_note(&stall));
    CHECK_INT_EQ(rlk_lock_unlock(l0), RLK_OK);
    REQUIRE(ap_wait_res(&c, &x[0], 10000));
    CHECK_INT_EQ(x[0].err, RLK_OK);
    CHECK_INT_EQ(x[1].calls, 0);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", name, owner[0]), 1);
    memset(&x[0], 0, sizeof x[0]);
    AP_REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, TASK, ap_on_res, &x[0]));
    REQUIRE(ap_wait_res(&c, &x[0], 10000) && ap_wait_res(&c, &x[1], 10000));
    CHECK_INT_EQ(x[0].err, RLK_OK);
    CHECK_INT_EQ(x[1].err, RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "HGET %s %s", name, owner[1]), 1);
    CHECK(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECKF(m.held_grants == 1, "the second task returned on %llu held grants, expected 1",
           m.held_grants);
    memset(&x[1], 0, sizeof x[1]);
    AP_REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, TASK + 1, ap_on_res, &x[1]));
    REQUIRE(ap_wait_res(&c, &x[1], 10000));
    CHECK_INT_EQ(x[1].err, RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0);
    rlk_free(c0);
}

/* One task of an rlk_async client waits for the lock twice, each time behind A: its first wait
 * subscribes the client's wake channel (a try, then the queuing call); the second, within the
 * channel's linger (1 s after its last listener left), finds it subscribed and is queued by its
 * first call. Once the linger ends, the channel is unsubscribed. */
static void test_async_linger(void)
{
    const char *name = "held:al";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char channel[200];
    long long before, calls[2] = {0, 0}, until;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    ap_cl c;
    ap_res x;

    REQUIRE(l0 && la);
    REQUIRE(ap_cl_open(&c, url, 30000, 0, 0) == 0);
    for (int round = 0; round < 2; round++) {
        REQUIRE(a_start(&a, l0, la, name) == 0);
        tk_stall_reset(&stall);
        before = script_calls();
        memset(&x, 0, sizeof x);
        AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, name, TASK, 20000, 30000, ap_on_res, &x));
        REQUIRE(drive_until_queued(&c, name, 2) == 0);
        calls[round] = script_calls() - before;
        CHECK_INT_EQ(rlk_lock_unlock(l0), RLK_OK);
        REQUIRE_INT_EQ(a_holds(&a), RLK_OK);
        REQUIRE(round || wake_channel(name, channel, sizeof channel) == 0);
        CHECK_INT_EQ(a_release(&a), RLK_OK);        /* held: to the task */
        REQUIRE(ap_wait_res(&c, &x, 10000));
        CHECK_INT_EQ(x.err, RLK_OK);
        memset(&x, 0, sizeof x);
        AP_REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, TASK, ap_on_res, &x));
        REQUIRE(ap_wait_res(&c, &x, 10000));
        CHECK_INT_EQ(x.err, RLK_OK);
    }
    tk_say("async linger: queued by %lld script calls, then by %lld", calls[0], calls[1]);
    CHECKF(calls[0] >= 2 && calls[1] == 1, "the task was queued by %lld script calls, then by "
           "%lld: expected 2 or more (its channel not subscribed yet), then 1 (lingering)%s",
           calls[0], calls[1], tk_stall_note(&stall));
    until = rlk_fx_now_ms() + 5000;
    while (numsub(channel) != 0 && rlk_fx_now_ms() < until)
        aloop_run_until(c.l, NULL, NULL, 20);
    CHECKF(numsub(channel) == 0, "the wake channel was still subscribed 5 s after the last wait "
           "(its linger is 1 s)");
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

/* ------------------------------------------------------------ a lost cancel */

/* The id of the one normal connection the server keeps waiting (a write under CLIENT PAUSE
 * WRITE: flag b), or -1 (none, or more than one). */
static long long paused_call(void)
{
    redisContext *x = rlk_fx_connect(&srv);
    redisReply *r = x ? redisCommand(x, "CLIENT LIST TYPE normal") : NULL;
    long long id = -1;
    int n = 0;

    for (const char *line = r && r->type == REDIS_REPLY_STRING ? r->str : NULL; line && *line;) {
        const char *eol = strchr(line, '\n'), *f = strstr(line, " flags=");
        size_t len = f && (!eol || f < eol) ? strcspn(f + 7, " \r\n") : 0;

        if (len && memchr(f + 7, 'b', len) && strncmp(line, "id=", 3) == 0) {
            id = atoll(line + 3);
            n++;
        }
        line = eol ? eol + 1 : NULL;
    }
    if (r)
        freeReplyObject(r);
    if (x)
        redisFree(x);
    return n == 1 ? id : -1;
}

/* Task TASK of an rlk_async client c (opened here; owner: its holder id), queued for name
 * behind A, gives up (rlk_async_cancel) while the server holds writes back (CLIENT PAUSE
 * WRITE); each of its cancel's sends (kinds/acq.h rlk_acq_cancel_again: two, the second on a
 * new connection once the first's is fenced) is killed with its connection while it waits,
 * kills of them (2: the cancel never runs; 1: the second runs once the pause ends). The task
 * is gone. With kills 2, its ticket is still queued with its record, A holds the lock, and the
 * client's wake channel (into channel) lingers (1 s after its last listener left; the loop is
 * not turned meanwhile). *sends: the sends seen held back. 0, or -1 (reported). */
static int lose_cancel_n(const char *name, int kills, ap_cl *c, char *owner, size_t olen,
                         char *channel, size_t clen, a_thread *a, rlk_lock *l0, rlk_lock *la,
                         int *sends)
{
    rlk_async_req *req;
    long long t, id = -1, until;
    ap_res x;

    if (ap_cl_open(c, url, 30000, 0, 0) != 0)
        return -1;
    snprintf(owner, olen, "%s:%llu", rlk_async_uuid(c->ac), TASK);
    memset(&x, 0, sizeof x);
    if (a_start(a, l0, la, name) != 0 ||
        !(req = AP_REQ(rlk_async_lock(c->ac, RLK_KIND_LOCK, name, TASK, 20000, LEASE, ap_on_res,
                                      &x))) ||
        drive_until_queued(c, name, 2) != 0 || !CHECK_INT_EQ(rlk_lock_unlock(l0), RLK_OK) ||
        !CHECK_INT_EQ(a_holds(a), RLK_OK) ||
        (t = tk_int(&srv, "LINDEX {%s}:rlk_waiters 0", name)) <= 0 ||
        wake_channel(name, channel, clen) != 0) {
        CHECK(!"the task did not queue behind A");
        return -1;
    }
    tk_stall_reset(&stall);
    if (tk_command_ok(&srv, "CLIENT PAUSE 10000 WRITE") != 0)
        return -1;
    rlk_async_cancel(req);
    *sends = 0;
    until = rlk_fx_now_ms() + 8000;     /* within the pause (10 s) */
    while (x.calls == 0 && rlk_fx_now_ms() < until) {
        aloop_run_until(c->l, NULL, NULL, 20);
        if ((id = paused_call()) > 0 && *sends < kills) {
            (*sends)++;
            CHECK(tk_command_ok(&srv, "CLIENT KILL ID %lld", id) == 0);
        } else if (id > 0 && *sends == kills) {
            (*sends)++;     /* seen, left to run once the pause ends */
            CHECK(tk_command_ok(&srv, "CLIENT UNPAUSE") == 0);
        }
    }
    CHECK(tk_command_ok(&srv, "CLIENT UNPAUSE") == 0);
    CHECK(ap_wait_res(c, &x, 10000));
    CHECK_INT_EQ(x.err, RLK_ERR_CANCELLED);
    if (kills < 2)
        return 0;
    CHECKF(*sends == 2, "the give-up was sent %d times, expected 2", *sends);
    if (!CHECKF(tk_int(&srv, "LLEN {%s}:rlk_waiters", name) == 1 &&
                tk_int(&srv, "HEXISTS {%s}:rlk_who %lld", name, t) == 1,
                "the gone task's ticket %lld left the queue: its cancel ran after all", t))
        return -1;
    CHECKF(numsub(channel) == 1, "the gone task's wake channel does not linger (%lld "
           "subscribers)%s", numsub(channel), tk_stall_note(&stall));
    return 0;
}

/* The same, both sends killed: the cancel never runs. */
static int lose_cancel(const char *name, ap_cl *c, char *owner, size_t olen, char *channel,
                       size_t clen, a_thread *a, rlk_lock *l0, rlk_lock *la)
{
    int sends;

    return lose_cancel_n(name, 2, c, owner, olen, channel, clen, a, l0, la, &sends);
}

/* The give-up's first send is killed with its connection while the server holds it back: the
 * second, on a new connection once the first's is fenced, runs when the pause ends. The ticket
 * leaves the queue with its record, and A's release frees the lock (nobody queued). Shown to
 * fail with one send only (the ticket stays queued, and the release grants it held). */
static void test_async_cancel_again(void)
{
    const char *name = "held:ca";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[160], channel[200];
    static a_thread a;      /* static: a thread left behind by a failed check keeps its memory */
    int sends = 0;
    ap_cl c;

    REQUIRE(l0 && la);
    REQUIRE(lose_cancel_n(name, 1, &c, owner, sizeof owner, channel, sizeof channel, &a, l0, la,
                          &sends) == 0);
    tk_say("cancel again: %d sends of the give-up seen held back (the first killed)", sends);
    CHECKF(sends == 2, "the give-up was seen held back %d times, expected 2 (the second sent "
           "once the first was killed)", sends);
    CHECKF(tk_int(&srv, "LLEN {%s}:rlk_waiters", name) == 0 &&
           tk_int(&srv, "HLEN {%s}:rlk_who", name) == 0, "the gone task's ticket is still "
           "queued (%lld) or recorded (%lld): its give-up never ran",
           tk_int(&srv, "LLEN {%s}:rlk_waiters", name), tk_int(&srv, "HLEN {%s}:rlk_who", name));
    CHECK_INT_EQ(a_release(&a), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

/* A's release, held, finds the lost cancel's channel heard (PUBLISH counts the lingering
 * subscription) and writes the lock in the gone task's name for its lease (LEASE): nobody
 * renews or releases it. D, waiting next, acquires within that lease and a slack, not before
 * half of it; the client takes no grant, and the channel is unsubscribed once the linger ends. */
static void test_async_cancel_lost(void)
{
    const char *name = "held:cl";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1),
               *cd = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL,
             *ld = cd ? rlk_lock_new(cd, name) : NULL;
    char owner[160], channel[200];
    long long t0, waited, until;
    static a_thread a, d;   /* static: a thread left behind by a failed check keeps its memory */
    rlk_metrics m;
    ap_cl c;

    REQUIRE(l0 && la && ld);
    REQUIRE(lose_cancel(name, &c, owner, sizeof owner, channel, sizeof channel, &a, l0, la) == 0);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(a_release(&a), RLK_OK);            /* held, to a ticket whose task is gone */
    CHECKF(tk_count(&srv, "HGET %s %s", name, owner) == 1,
           "the release did not write the lock in the gone task's name (field %s)", owner);
    REQUIRE(a_spawn(&d, ld) == 0);
    until = t0 + LEASE + 10000;
    while (tk_latch_get(&d.got) < 1 && rlk_fx_now_ms() < until)
        aloop_run_until(c.l, NULL, NULL, 20);       /* the client reads the grant: nobody's */
    waited = rlk_fx_now_ms() - t0;
    REQUIRE_INT_EQ(a_holds(&d), RLK_OK);
    tk_say("cancel lost: the next waiter acquired %lld ms after the release (the gone task's "
           "lease %d)", waited, LEASE);
    CHECKF(waited >= LEASE / 2 && waited <= LEASE + SLACK_MS,
           "the next waiter acquired %lld ms after the held grant to a gone task's ticket; "
           "bound: that task's lease %d ms (+%d)%s", waited, LEASE, SLACK_MS,
           tk_stall_note(&stall));
    CHECK_INT_EQ(tk_int(&srv, "HEXISTS %s %s", name, owner), 0);
    CHECK_INT_EQ(a_release(&d), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    CHECK_INT_EQ(tk_int(&srv, "LLEN {%s}:rlk_waiters", name), 0);
    CHECK(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECKF(m.held_grants == 0, "the client took %llu held grants, expected none (its task was "
           "gone)", m.held_grants);
    until = rlk_fx_now_ms() + 5000;
    while (numsub(channel) != 0 && rlk_fx_now_ms() < until)
        aloop_run_until(c.l, NULL, NULL, 20);
    CHECKF(numsub(channel) == 0, "the wake channel was still subscribed 5 s after the task left "
           "(its linger is 1 s)");
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la), rlk_lock_free(ld);
    rlk_free(c0), rlk_free(ca), rlk_free(cd);
}

/* The gone task's holder id waits again (the same task, a new wait, queued behind the stale
 * ticket) when A releases: the release grants the stale ticket, in the task's name; the live
 * wait, at its next attempt, finds the lock in its own name and re-enters it, and leaves the
 * queue (no later release grants it to a wait that ended). Its one unlock frees the lock: the
 * count nobody was told of (the grant) goes with it, so nobody waits out the gone wait's lease.
 * Shown to fail with the scripts and the unlock as they were: the re-entry left the live wait's
 * ticket queued and the unlock left the lock held in the task's name for its lease. */
static void test_async_cancel_lost_back(void)
{
    const char *name = "held:cb";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[160], channel[200];
    static a_thread a;      /* static: a thread left behind by a failed check keeps its memory */
    ap_cl c;
    ap_res y;

    REQUIRE(l0 && la);
    REQUIRE(lose_cancel(name, &c, owner, sizeof owner, channel, sizeof channel, &a, l0, la) == 0);
    memset(&y, 0, sizeof y);
    REQUIRE(AP_REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, name, TASK, 20000, LEASE, ap_on_res, &y)));
    REQUIRE(drive_until_queued(&c, name, 2) == 0);  /* behind the stale ticket */
    CHECK_INT_EQ(a_release(&a), RLK_OK);            /* held, to the stale ticket */
    CHECKF(tk_count(&srv, "HGET %s %s", name, owner) >= 1,
           "the release did not write the lock in the task's name (field %s)", owner);
    REQUIRE(ap_wait_res(&c, &y, 10000));
    REQUIRE_INT_EQ(y.err, RLK_OK);
    CHECKF(tk_int(&srv, "LLEN {%s}:rlk_waiters", name) == 0, "the wait that re-entered left "
           "%lld tickets queued", tk_int(&srv, "LLEN {%s}:rlk_waiters", name));
    memset(&y, 0, sizeof y);
    REQUIRE(AP_REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, TASK, ap_on_res, &y)));
    REQUIRE(ap_wait_res(&c, &y, 10000));
    CHECK_INT_EQ(y.err, RLK_OK);
    CHECK_INT_EQ(y.value, 0);
    CHECKF(tk_int(&srv, "EXISTS %s", name) == 0, "the task's one unlock left the lock held "
           "(count %lld, PTTL %lld)", tk_count(&srv, "HGET %s %s", name, owner),
           tk_int(&srv, "PTTL %s", name));
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

/* W: a thread with a client of its own that waits twice for name under one holder id (its
 * thread's): a wait of W_WAIT ms that ends unserved, then, when told (go 1), a second one, and,
 * holding, one unlock when told (go 2). */
#define W_WAIT 800
typedef struct w_thread {
    rlk_lock *l;
    char owner[256];
    int rc1, rc2, urc;
    tk_latch first, go, second, done;
    pthread_t thread;
} w_thread;

static void *w_main(void *p)
{
    w_thread *w = p;

    own_id(w->l, w->owner, sizeof w->owner);
    w->rc1 = rlk_lock_try_lock(w->l, W_WAIT, LEASE);
    tk_latch_add(&w->first, 1);
    if (tk_latch_wait(&w->go, 1, 30000) >= 1) {
        w->rc2 = rlk_lock_try_lock(w->l, 20000, LEASE);
        tk_latch_add(&w->second, 1);
        if (w->rc2 == RLK_OK && tk_latch_wait(&w->go, 2, 30000) >= 2)
            w->urc = rlk_lock_unlock(w->l);
    }
    tk_latch_add(&w->done, 1);
    return NULL;
}

/* One run of the blocking scene (test_cancel_lost_back): 1 when it ran as intended, 0 when
 * the machine made it run otherwise (the write pause came after W's give-up, which then ran;
 * or the wake channel no longer heard when A released: the scene says which), -1 when a check
 * failed. */
static int cancel_lost_back_run(const char *name)
{
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1),
               *cw = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    static a_thread a;      /* static: a thread left behind by a failed check keeps its memory */
    static w_thread w;
    char channel[200];
    long long t = -1, id, until;
    int kills = 0, ran = -1, failed0 = check_current_failed;

    memset(&w, 0, sizeof w);
    tk_latch_init(&w.first), tk_latch_init(&w.go), tk_latch_init(&w.second);
    tk_latch_init(&w.done);
    if (!CHECK(l0 && la && cw && (w.l = rlk_lock_new(cw, name))))
        return -1;
    tk_stall_reset(&stall);
    /* A holds by waiting (its release is then held), W queued behind it: a process's blocking
     * waiters of a lock queue behind each other locally, so W starts once A holds. */
    if (!CHECK(a_start(&a, l0, la, name) == 0) || !CHECK_INT_EQ(rlk_lock_unlock(l0), RLK_OK) ||
        !CHECK_INT_EQ(a_holds(&a), RLK_OK) ||
        !CHECK(pthread_create(&w.thread, NULL, w_main, &w) == 0) || !CHECK(queued(name, 1) == 0))
        return -1;
    if (!CHECK((t = tk_int(&srv, "LINDEX {%s}:rlk_waiters 0", name)) > 0 &&
            wake_channel(name, channel, sizeof channel) == 0))
        return -1;
    /* W's wait ends (its first keep-alive attempt would come later) while the server holds
     * writes back: each send of its give-up is killed with its connection (the second goes out
     * once the first's is fenced), so it never runs. */
    if (!CHECK(tk_command_ok(&srv, "CLIENT PAUSE 10000 WRITE") == 0))
        return -1;
    until = rlk_fx_now_ms() + 8000;     /* within the pause (10 s) */
    while (tk_latch_wait(&w.first, 1, 20) < 1 && rlk_fx_now_ms() < until)
        if (kills < 2 && (id = paused_call()) > 0) {
            kills++;
            CHECK(tk_command_ok(&srv, "CLIENT KILL ID %lld", id) == 0);
        }
    CHECK(tk_command_ok(&srv, "CLIENT UNPAUSE") == 0);
    if (!CHECK(tk_latch_wait(&w.first, 1, 10000) == 1))
        return -1;
    CHECK_INT_EQ(w.rc1, RLK_ERR_BUSY);
    tk_say("cancel lost, back (blocking): %d sends of the give-up killed", kills);
    if (kills < 2 || tk_int(&srv, "HEXISTS {%s}:rlk_who %lld", name, t) != 1) {
        tk_say("  the give-up ran (the pause came after it%s): again", tk_stall_note(&stall));
        ran = 0;
    }
    /* The second wait, queued behind the stale ticket while the wake channel lingers (1 s). */
    tk_latch_add(&w.go, 1);
    if (ran != 0 && queued(name, 2) != 0) {
        int over = tk_latch_wait(&w.second, 1, 0) >= 1;   /* its rc read only once it is set */

        CHECKF(0, "W's second wait never queued behind its stale ticket (LLEN %lld; second wait "
               "%s, rc %d)", tk_int(&srv, "LLEN {%s}:rlk_waiters", name), over ? "over" : "on",
               over ? w.rc2 : 0);
        return -1;
    }
    if (ran != 0 && numsub(channel) != 1) {
        tk_say("  the wake channel stopped lingering before A's release%s: again",
               tk_stall_note(&stall));
        ran = 0;
    }
    CHECK_INT_EQ(a_release(&a), RLK_OK);    /* held: to the stale ticket, in W's name */
    if (!CHECK(tk_latch_wait(&w.second, 1, 10000) == 1))
        return -1;
    if (!CHECK_INT_EQ(w.rc2, RLK_OK))
        return -1;
    if (ran != 0) {
        /* The live wait found the lock in its own name and re-entered it: the grant's count
         * and its own; it left the queue; its client took no held grant (the grant was the gone
         * wait's). */
        CHECKF(tk_count(&srv, "HGET %s %s", name, w.owner) == 2, "W's second wait holds a "
               "count of %lld, expected 2 (the stale grant's and its re-entry)",
               tk_count(&srv, "HGET %s %s", name, w.owner));
        CHECKF(tk_int(&srv, "LLEN {%s}:rlk_waiters", name) == 0, "the wait that re-entered "
               "left %lld tickets queued", tk_int(&srv, "LLEN {%s}:rlk_waiters", name));
        CHECKF(held_grants(cw) == 0, "W's client took %llu held grants, expected none",
               held_grants(cw));
        ran = 1;
    }
    tk_latch_add(&w.go, 1);
    if (!CHECK(tk_latch_wait(&w.done, 1, 10000) == 1))
        return -1;
    pthread_join(w.thread, NULL);
    CHECK_INT_EQ(w.urc, RLK_OK);
    CHECKF(tk_int(&srv, "EXISTS %s", name) == 0, "W's one unlock left the lock held (count %lld, "
           "PTTL %lld)", tk_count(&srv, "HGET %s %s", name, w.owner),
           tk_int(&srv, "PTTL %s", name));
    rlk_lock_free(w.l);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca), rlk_free(cw);
    return check_current_failed != failed0 ? -1 : ran;
}

/* cancel lost, back through the blocking API: W, a thread, gives up and its give-up never runs
 * (both sends killed while the server holds writes back); the same thread waits again, queued
 * behind its stale ticket, when A's release grants that ticket held, in W's holder id: the live
 * wait re-enters (count 2), leaves the queue, and its one unlock frees the lock (the last
 * unlock releases the count beyond the client's, kinds/acq.h rlk_acq_rest). A run that the
 * machine turned otherwise is made again, 3 runs at most. */
static void test_cancel_lost_back(void)
{
    int ran = 0;

    for (int run = 0; run < 3 && ran == 0; run++) {
        char name[32];

        snprintf(name, sizeof name, "held:bb%d", run);
        ran = cancel_lost_back_run(name);
    }
    CHECKF(ran != 0, "the machine turned the blocking scene otherwise in 3 runs");
}

/* ------------------------------------------------------------ a stopped grantee */

static void test_stopped_grantee(void)
{
    const char *name = "held:s";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1),
               *cd = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL,
             *ld = cd ? rlk_lock_new(cd, name) : NULL;
    char owner[300];
    long long t0, waited;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    tk_child b;

    REQUIRE(l0 && la && ld);
    REQUIRE(b_behind_a(name, "2000", NULL, NULL, &a, &b, owner, sizeof owner, l0, la) == 0);
    REQUIRE(tk_child_stop(&b));
    tk_stall_reset(&stall);
    t0 = rlk_fx_now_ms();
    CHECK_INT_EQ(a_release(&a), RLK_OK);            /* held, to a client that cannot read it */
    CHECKF(tk_int(&srv, "HGET %s %s", name, owner) == 1,
           "the stopped waiter was not granted the lock held (field %s)", owner);
    CHECK_INT_EQ(rlk_lock_try_lock(ld, 20000, 30000), RLK_OK);
    waited = rlk_fx_now_ms() - t0;
    tk_say("stopped grantee: the next waiter acquired %lld ms after the release (lease %d)",
           waited, LEASE);
    CHECKF(waited >= LEASE / 2 && waited <= LEASE + SLACK_MS,
           "the next waiter acquired %lld ms after the held grant to a stopped waiter; bound: "
           "its lease %d ms (+%d)%s", waited, LEASE, SLACK_MS, tk_stall_note(&stall));
    CHECK_INT_EQ(tk_int(&srv, "HEXISTS %s %s", name, owner), 0);
    CHECK_INT_EQ(rlk_lock_unlock(ld), RLK_OK);
    kill(b.pid, SIGCONT);
    tk_child_kill(&b);
    rlk_lock_free(l0), rlk_lock_free(la), rlk_lock_free(ld);
    rlk_free(c0), rlk_free(ca), rlk_free(cd);
}

/* ------------------------------------------------------------ a lost grant message */

/* B (a child, stopped) loses its subscriber before A's release (deaf: the release, heard by
 * nobody, passes B over and frees the lock) or just after it (the grant written in B's name).
 * Continued, B holds once either way, and its one unlock frees the lock. */
static void lost_grant(int deaf)
{
    const char *name = deaf ? "held:ld" : "held:ll";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[300], line[300], channel[200];
    unsigned long long grants = 0;
    int rc = -1;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    tk_child b;

    REQUIRE(l0 && la);
    REQUIRE(b_behind_a(name, "30000", NULL, NULL, &a, &b, owner, sizeof owner, l0, la) == 0);
    REQUIRE(tk_child_stop(&b));
    REQUIRE(wake_channel(name, channel, sizeof channel) == 0);
    REQUIRE(!deaf || deafen(channel) == 0);
    tk_stall_reset(&stall);
    CHECK_INT_EQ(a_release(&a), RLK_OK);
    CHECKF(tk_count(&srv, "HGET %s %s", name, owner) == !deaf,
           deaf ? "a release heard by nobody granted the lock to the deaf waiter (field %s)"
                : "the waiter was not granted the lock held (field %s)", owner);
    REQUIRE(deaf || deafen(channel) == 0);
    REQUIRE(kill(b.pid, SIGCONT) == 0);
    CHECK(tk_child_read_line(&b, line, sizeof line, 15000) == 0 &&
          sscanf(line, "acq %d %llu", &rc, &grants) == 2);
    CHECKF(rc == RLK_OK, "B, its grant's message lost (%s), returned %d: it should have "
           "attempted again once subscribed, well within its lease of 30 s%s",
           deaf ? "deaf at the release" : "killed after it", rc, tk_stall_note(&stall));
    tk_say("lost grant (%s): B holds; %llu held grants read", deaf ? "deaf" : "after", grants);
    CHECK(tk_child_read_line(&b, line, sizeof line, 10000) == 0 && strcmp(line, "rel 0") == 0);
    tk_child_wait(&b, 5000);
    CHECKF(tk_int(&srv, "EXISTS %s", name) == 0,
           "B's one unlock left the lock behind (count %lld): its attempt counted the held "
           "grant as a re-entry", tk_count(&srv, "HGET %s %s", name, owner));
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

/* Deaf at the release, then killed after it. */
static void test_lost_grant(void)
{
    for (int deaf = 1; deaf >= 0; deaf--)
        lost_grant(deaf);
}

/* The same with an rlk_async waiter: its loop does not run meanwhile. */
static void lost_grant_async(int deaf)
{
    const char *name = deaf ? "held:lad" : "held:lal";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[160], channel[200];
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    ap_cl c;
    ap_res x;

    REQUIRE(l0 && la);
    REQUIRE(async_behind_a(name, &c, &x, owner, sizeof owner, &a, l0, la) == 0);
    REQUIRE(wake_channel(name, channel, sizeof channel) == 0);
    REQUIRE(!deaf || deafen(channel) == 0);
    tk_stall_reset(&stall);
    CHECK_INT_EQ(a_release(&a), RLK_OK);
    CHECKF(tk_count(&srv, "HGET %s %s", name, owner) == !deaf,
           deaf ? "a release heard by nobody granted the lock to the deaf async waiter"
                : "the async waiter was not granted the lock held");
    REQUIRE(deaf || deafen(channel) == 0);
    REQUIRE(ap_wait_res(&c, &x, 15000));
    CHECKF(x.err == RLK_OK, "the async waiter, its grant's message lost (%s), returned %d%s",
           deaf ? "deaf at the release" : "killed after it", x.err, tk_stall_note(&stall));
    memset(&x, 0, sizeof x);
    AP_REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, name, TASK, ap_on_res, &x));
    REQUIRE(ap_wait_res(&c, &x, 10000));
    CHECK_INT_EQ(x.err, RLK_OK);
    CHECKF(tk_int(&srv, "EXISTS %s", name) == 0,
           "the async waiter's one unlock left the lock behind (count %lld)",
           tk_count(&srv, "HGET %s %s", name, owner));
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

static void test_lost_grant_async(void)
{
    for (int deaf = 1; deaf >= 0; deaf--)
        lost_grant_async(deaf);
}

/* ------------------------------------------------------------ a lapsed held grant */

/* A held grant's message read after the grant lapsed: B, granted the lock while it cannot run,
 * keeps it for its lease only (LAPSE_LEASE); D takes the lock once that has run out; then B
 * runs. It must not hold on the stale message, read first (after the lease counted from its last
 * attempt: it asks again). Late: a grant's message delivered only after an attempt of B's that
 * found its ticket out of the queue: B's subscriber is killed before the release (which passes B
 * over: the lock is free for D at once), and once B, running again, is queued and subscribed
 * again, the test publishes the held grant of B's old ticket, as a late delivery would. Either
 * way B draws a new ticket, waits behind D, and gives up when its wait ends (RLK_ERR_BUSY), the
 * queue left empty, D's hold untouched. */
#define LAPSE_LEASE 500
#define LAPSE_WAIT 4000     /* B's wait: it ends well after B runs again */

/* D takes name once B's lease has run out (the lock key gone): 0, or -1. */
static int d_after_lapse(const char *name, rlk_lock *ld, char *downer, size_t len)
{
    return tk_key_gone_within(&srv, name, 10000) && rlk_lock_try_lock(ld, 0, 60000) == RLK_OK &&
           rlk_lock_owner(ld, downer, len) == RLK_OK ? 0 : -1;
}

/* The held grant of ticket t to owner's wait (0: one that names no wait) on wake channel
 * channel, as lib/hand_over_held publishes it: 1 when a subscriber heard it, else 0. */
static int grant_for(const char *channel, long long t, unsigned long long wait, const char *owner)
{
    char msg[400], w[24] = "";

    if (wait)
        snprintf(w, sizeof w, ":%llu", wait);
    snprintf(msg, sizeof msg, "%lld%s %s", t * 67108864 + 33554432, w, owner);
    return tk_int(&srv, "PUBLISH %s %s", channel, msg) >= 1;
}

/* The first waiter of name's queue: its ticket, and the wait its record in {name}:rlk_who names
 * ("<lease_ms>:<wait> <owner>", reentrant/acquire with held:<wait>). 0, or -1. */
static int first_waiter(const char *name, long long *t, unsigned long long *wait)
{
    char rec[400];
    const char *colon, *sp;

    *t = tk_int(&srv, "LINDEX {%s}:rlk_waiters 0", name);
    tk_str(&srv, rec, sizeof rec, "HGET {%s}:rlk_who %lld", name, *t);
    colon = strchr(rec, ':');
    sp = strchr(rec, ' ');
    return *t > 0 && colon && sp && colon < sp && sscanf(colon + 1, "%llu", wait) == 1 ? 0 : -1;
}

/* The held grant of ticket t to owner's wait, published again on its wake channel channel: 0,
 * or -1. */
static int grant_again(const char *channel, long long t, unsigned long long wait,
                       const char *owner)
{
    return grant_for(channel, t, wait, owner) ? 0 : -1;
}

/* Late: until B (whose subscriber was killed) is queued again and subscribed again (bounded;
 * drive: its async client's loop, else NULL), then the held grant of B's old ticket t published.
 * 0, or -1. */
static int stale_grant_late(const char *name, const char *channel, long long t,
                            unsigned long long wait, const char *owner, ap_cl *drive)
{
    for (int i = 0; i < 500; i++) {
        if (tk_int(&srv, "LLEN {%s}:rlk_waiters", name) == 1 && numsub(channel) >= 1)
            return grant_again(channel, t, wait, owner);
        if (drive)
            aloop_run_until(drive->l, NULL, NULL, 20);
        else
            rlk_fx_sleep_ms(20);
    }
    return -1;
}

/* B (who: its label in messages; holder id owner) queued first and unable to run: its ticket,
 * its wait (into *wait) and wake channel (into channel) read, its subscriber killed when late,
 * A's release (granting B the lock held, or passing it over when late), and D holding name
 * (downer: its holder id) once the lock is free. B's ticket, or -1. */
static long long lapse(const char *name, int late, const char *who, const char *owner,
                       a_thread *a, rlk_lock *ld, char *downer, size_t dlen, char *channel,
                       size_t clen, unsigned long long *wait)
{
    long long t;

    if (first_waiter(name, &t, wait) != 0 || wake_channel(name, channel, clen) != 0 ||
        (late && deafen(channel) != 0))
        return -1;
    tk_stall_reset(&stall);
    CHECK_INT_EQ(a_release(a), RLK_OK);
    CHECKF(tk_count(&srv, "HGET %s %s", name, owner) == !late,
           "%s was %sgranted the lock held (field %s)", who, late ? "" : "not ", owner);
    return d_after_lapse(name, ld, downer, dlen) == 0 ? t : -1;
}

/* After B gave up: D's hold untouched, nothing of B left queued; D releases. */
static void lapse_after(const char *name, const char *owner, const char *downer, rlk_lock *ld)
{
    CHECKF(tk_int(&srv, "HGET %s %s", name, downer) == 1 &&
           tk_int(&srv, "HEXISTS %s %s", name, owner) == 0, "D's hold was touched");
    CHECK_INT_EQ(tk_int(&srv, "LLEN {%s}:rlk_waiters", name), 0);
    CHECK_INT_EQ(rlk_lock_unlock(ld), RLK_OK);
}

static void lapsed_grant(int late)
{
    const char *name = late ? "held:lpl" : "held:lp";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1),
               *cd = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL,
             *ld = cd ? rlk_lock_new(cd, name) : NULL;
    char owner[300], downer[300], line[300], lease[16], wait[16], channel[200];
    unsigned long long grants = 0, bwait = 0;
    long long t;
    int rc = -1;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    tk_child b;

    REQUIRE(l0 && la && ld);
    snprintf(lease, sizeof lease, "%d", LAPSE_LEASE);
    snprintf(wait, sizeof wait, "%d", LAPSE_WAIT);
    REQUIRE(b_behind_a(name, lease, NULL, wait, &a, &b, owner, sizeof owner, l0, la) == 0);
    REQUIRE(tk_child_stop(&b));
    REQUIRE((t = lapse(name, late, "the stopped waiter", owner, &a, ld, downer, sizeof downer,
                       channel, sizeof channel, &bwait)) > 0);
    REQUIRE(kill(b.pid, SIGCONT) == 0);
    REQUIRE(!late || stale_grant_late(name, channel, t, bwait, owner, NULL) == 0);
    CHECK(tk_child_read_line(&b, line, sizeof line, LAPSE_WAIT + 15000) == 0 &&
          sscanf(line, "acq %d %llu", &rc, &grants) == 2);
    CHECKF(rc == RLK_ERR_BUSY, "B, its held grant lapsed before it could read it (%s) and D "
           "holding the lock, returned %d (held grants %llu), expected RLK_ERR_BUSY at the end of "
           "its wait%s", late ? "read after an attempt" : "read first", rc, grants,
           tk_stall_note(&stall));
    tk_child_wait(&b, 5000);
    lapse_after(name, owner, downer, ld);
    rlk_lock_free(l0), rlk_lock_free(la), rlk_lock_free(ld);
    rlk_free(c0), rlk_free(ca), rlk_free(cd);
}

static void test_lapsed_grant(void)
{
    for (int late = 0; late < 2; late++)
        lapsed_grant(late);
}

/* The same with an rlk_async waiter whose loop does not run meanwhile. */
static void lapsed_grant_async(int late)
{
    const char *name = late ? "held:lpal" : "held:lpa";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1),
               *cd = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL,
             *ld = cd ? rlk_lock_new(cd, name) : NULL;
    char owner[160], downer[300], channel[200];
    unsigned long long bwait = 0;
    long long t;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    ap_cl c;
    ap_res x;

    REQUIRE(l0 && la && ld);
    REQUIRE(async_behind_a_for(name, LAPSE_WAIT, LAPSE_LEASE, &c, &x, owner, sizeof owner, &a,
                               l0, la) == 0);
    REQUIRE((t = lapse(name, late, "the async waiter", owner, &a, ld, downer, sizeof downer,
                       channel, sizeof channel, &bwait)) > 0);
    REQUIRE(!late || stale_grant_late(name, channel, t, bwait, owner, &c) == 0);
    REQUIRE(ap_wait_res(&c, &x, LAPSE_WAIT + 15000));
    CHECKF(x.err == RLK_ERR_BUSY, "the async waiter, its held grant lapsed before its loop ran "
           "(%s) and D holding the lock, returned %d, expected RLK_ERR_BUSY at the end of its "
           "wait%s", late ? "read after an attempt" : "read first", x.err,
           tk_stall_note(&stall));
    lapse_after(name, owner, downer, ld);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la), rlk_lock_free(ld);
    rlk_free(c0), rlk_free(ca), rlk_free(cd);
}

static void test_lapsed_grant_async(void)
{
    for (int late = 0; late < 2; late++)
        lapsed_grant_async(late);
}

/* ------------------------------------------------------------ another wait's grant */

/* B queued behind A (A holds throughout): held grants of B's ticket and holder id forged on its
 * wake channel, naming another wait than B's (as a grant made for an earlier wait of the same
 * holder id that drew the same ticket, published before that wait gave it back, would be read
 * late) and naming none (an older release's form); control: the same grant naming B's own wait.
 * B's ticket and wait are read from its record. Published: 1 when each one was heard. */
#define OTHER_WAIT 3000     /* B's wait when it must not hold: it gives up at its end */

static int forge(const char *name, const char *owner, int control)
{
    char channel[200];
    long long t;
    unsigned long long wait;

    if (first_waiter(name, &t, &wait) != 0 || wake_channel(name, channel, sizeof channel) != 0)
        return 0;
    if (control)
        return grant_for(channel, t, wait, owner);
    return grant_for(channel, t, wait - 1, owner) && grant_for(channel, t, wait + 1, owner) &&
           grant_for(channel, t, 0, owner);
}

/* After B returned (holding a forged grant, or not): A's hold untouched, A releases. */
static void other_wait_after(const char *name, const char *owner, a_thread *a)
{
    CHECKF(tk_int(&srv, "HGET %s %s", name, a->owner) == 1 &&
           tk_int(&srv, "HEXISTS %s %s", name, owner) == 0, "A's hold was touched");
    CHECK_INT_EQ(a_release(a), RLK_OK);
}

static void other_wait(int control)
{
    const char *name = control ? "held:owc" : "held:ow";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[300], line[300], wait[16];
    unsigned long long grants = 99;
    int rc = -1;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    tk_child b;

    REQUIRE(l0 && la);
    snprintf(wait, sizeof wait, "%d", control ? 20000 : OTHER_WAIT);
    REQUIRE(b_behind_a(name, "30000", NULL, wait, &a, &b, owner, sizeof owner, l0, la) == 0);
    REQUIRE(forge(name, owner, control));
    CHECK(tk_child_read_line(&b, line, sizeof line, OTHER_WAIT + 15000) == 0 &&
          sscanf(line, "acq %d %llu", &rc, &grants) == 2);
    if (control)
        CHECKF(rc == RLK_OK && grants == 1, "control: B, sent a held grant naming its own wait, "
               "returned %d on %llu held grants; expected RLK_OK on 1", rc, grants);
    else
        CHECKF(rc == RLK_ERR_BUSY && grants == 0, "B, sent held grants naming another wait and "
               "none while A holds, returned %d on %llu held grants; expected RLK_ERR_BUSY at the "
               "end of its wait, on none", rc, grants);
    tk_child_wait(&b, 5000);
    other_wait_after(name, owner, &a);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

static void test_other_wait(void)
{
    for (int control = 0; control < 2; control++)
        other_wait(control);
}

static void other_wait_async(int control)
{
    const char *name = control ? "held:owac" : "held:owa";
    rlk_client *c0 = tk_connect(url, 30000, 1), *ca = tk_connect(url, 30000, 1);
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *la = ca ? rlk_lock_new(ca, name) : NULL;
    char owner[160];
    rlk_metrics m;
    static a_thread a;  /* static: a thread left behind by a failed check keeps its memory */
    ap_cl c;
    ap_res x;

    REQUIRE(l0 && la);
    REQUIRE(async_behind_a_for(name, control ? 20000 : OTHER_WAIT, 30000, &c, &x, owner,
                               sizeof owner, &a, l0, la) == 0);
    REQUIRE(forge(name, owner, control));
    REQUIRE(ap_wait_res(&c, &x, OTHER_WAIT + 15000));
    CHECK(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    if (control)
        CHECKF(x.err == RLK_OK && m.held_grants == 1, "control: the async waiter, sent a held "
               "grant naming its own wait, returned %d on %llu held grants; expected RLK_OK on 1",
               x.err, m.held_grants);
    else
        CHECKF(x.err == RLK_ERR_BUSY && m.held_grants == 0, "the async waiter, sent held grants "
               "naming another wait and none while A holds, returned %d on %llu held grants; "
               "expected RLK_ERR_BUSY at the end of its wait, on none", x.err, m.held_grants);
    other_wait_after(name, owner, &a);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    ap_cl_close(&c);
    rlk_lock_free(l0), rlk_lock_free(la);
    rlk_free(c0), rlk_free(ca);
}

static void test_other_wait_async(void)
{
    for (int control = 0; control < 2; control++)
        other_wait_async(control);
}

/* ------------------------------------------------------------ the next head's one attempt */

/* Bounded poll until n threads of this process wait for the lock of q (the head included):
 * 0, or -1. */
static int lq_waiting(rlk_lq *q, int n)
{
    long long until = rlk_fx_now_ms() + 10000;

    while (rlk_lq_waiting(q) != n && rlk_fx_now_ms() < until)
        rlk_fx_sleep_ms(2);
    return rlk_lq_waiting(q) == n ? 0 : -1;
}

/* Threads of one process (each with its own client, to count its attempts) queue behind each
 * other locally, and only the head is in the server's queue. A (first there) claims after the
 * main thread's plain release; B, head then, joins the lock's channel before its one attempt
 * (A was first: so will B be) and gets A's held grant; C, head after B, must expect the same:
 * a held grant went to the first in the queue. C then attempts once (queued first), and holds
 * on B's held grant. Before, a held grant passed for an acquisition taken at once, and the
 * next head attempted twice: once, then again after joining the lock's channel. */
static void test_next_head(void)
{
    const char *name = "held:h";
    rlk_client *c0 = tk_connect(url, 30000, 1), *cl[3] = {0};
    rlk_lock *l0 = c0 ? rlk_lock_new(c0, name) : NULL, *l[3] = {0};
    rlk_lq *q = c0 ? rlk_lq_get(c0->addr, c0->url.db, name) : NULL;
    static a_thread t[3];   /* static: a thread left behind by a failed check keeps its memory */
    rlk_metrics m;

    for (int i = 0; i < 3; i++)
        l[i] = (cl[i] = tk_connect(url, 30000, 1)) ? rlk_lock_new(cl[i], name) : NULL;
    REQUIRE(l0 && q && l[0] && l[1] && l[2]);
    REQUIRE(a_start(&t[0], l0, l[0], name) == 0);
    REQUIRE(a_spawn(&t[1], l[1]) == 0);
    REQUIRE(lq_waiting(q, 2) == 0);
    CHECK_INT_EQ(rlk_lock_unlock(l0), RLK_OK);      /* plain: A claims */
    REQUIRE_INT_EQ(a_holds(&t[0]), RLK_OK);
    REQUIRE(queued(name, 1) == 0);                  /* B, head now */
    REQUIRE(a_spawn(&t[2], l[2]) == 0);
    REQUIRE(lq_waiting(q, 2) == 0);
    tk_stall_reset(&stall);
    CHECK_INT_EQ(a_release(&t[0]), RLK_OK);         /* held: to B */
    REQUIRE_INT_EQ(a_holds(&t[1]), RLK_OK);
    REQUIRE(queued(name, 1) == 0);                  /* C, head now */
    CHECK_INT_EQ(a_release(&t[1]), RLK_OK);         /* held: to C */
    REQUIRE_INT_EQ(a_holds(&t[2]), RLK_OK);
    CHECKF(held_grants(cl[1]) == 1 && held_grants(cl[2]) == 1,
           "B and C returned on %llu and %llu held grants, expected 1 each", held_grants(cl[1]),
           held_grants(cl[2]));
    CHECK(rlk_metrics_get(cl[2], &m) == RLK_OK);
    tk_say("next head: C made %llu attempts", m.acquire_calls);
    CHECKF(m.acquire_calls == 1, "C, head after B's held grant, made %llu attempts, expected 1 "
           "(queued first, then B's held grant)%s", m.acquire_calls, tk_stall_note(&stall));
    CHECK_INT_EQ(a_release(&t[2]), RLK_OK);
    CHECK_INT_EQ(tk_int(&srv, "EXISTS %s", name), 0);
    rlk_lq_put(q);
    for (int i = 0; i < 3; i++)
        rlk_lock_free(l[i]), rlk_free(cl[i]);
    rlk_lock_free(l0);
    rlk_free(c0);
}

/* ------------------------------------------------------------ a Redisson waiter */

/* RedissonLock.tryLockInnerAsync (3.17): nil acquired, else the holder's PTTL. */
static const char redisson_acquire[] =
    "if (redis.call('exists', KEYS[1]) == 0) or (redis.call('hexists', KEYS[1], ARGV[2]) == 1) "
    "then redis.call('hincrby', KEYS[1], ARGV[2], 1); redis.call('pexpire', KEYS[1], ARGV[1]); "
    "return nil; end; return redis.call('pttl', KEYS[1]);";

typedef struct pingpong {
    rlk_client *c;
    const char *name;
    atomic_int *stop;
    int rc;
    atomic_int rounds;
} pingpong;

static void *pingpong_main(void *arg)
{
    pingpong *p = arg;
    rlk_lock *l = rlk_lock_new(p->c, p->name);

    p->rc = l ? RLK_OK : RLK_ERR_NOMEM;
    while (l && !atomic_load(p->stop) && p->rc == RLK_OK) {
        if ((p->rc = rlk_lock_try_lock(l, 10000, 30000)) != RLK_OK)
            break;
        tk_spin_ns(2LL * 1000000LL);    /* the other thread queues meanwhile */
        p->rc = rlk_lock_unlock(l);
        atomic_fetch_add(&p->rounds, 1);
    }
    rlk_lock_free(l);
    return NULL;
}

static void test_redisson_waiter(void)
{
    const char *name = "held:r";
    rlk_client *c = tk_connect(url, 30000, 2);
    redisContext *sub = rlk_fx_connect(&srv), *cmd = rlk_fx_connect(&srv);
    atomic_int stop = 0;
    pingpong p[2] = {{c, name, &stop, 0, 0}, {c, name, &stop, 0, 0}};
    pthread_t t[2];
    redisReply *r;
    long long until, zeros = 0;
    unsigned long long before, grants;
    int got = 0;

    REQUIRE(c && sub && cmd);
    r = redisCommand(sub, "SUBSCRIBE redisson_lock__channel:{%s}", name);
    REQUIRE(r);
    freeReplyObject(r);
    for (int i = 0; i < 2; i++)
        REQUIRE(pthread_create(&t[i], NULL, pingpong_main, &p[i]) == 0);
    /* Listening from the time both threads hand the lock over (each queues while the other
     * holds): the messages before that are drained unanswered. */
    until = rlk_fx_now_ms() + 10000;
    while (rlk_fx_now_ms() < until && (atomic_load(&p[0].rounds) < 4 ||
                                       atomic_load(&p[1].rounds) < 4))
        rlk_fx_sleep_ms(5);
    CHECK(atomic_load(&p[0].rounds) >= 4 && atomic_load(&p[1].rounds) >= 4);
    before = held_grants(c);
    for (struct timeval tv = {0, 1000}; redisSetTimeout(sub, tv) == REDIS_OK &&
                                        redisGetReply(sub, (void **)&r) == REDIS_OK;)
        freeReplyObject(r);
    sub->err = 0;
    tk_stall_reset(&stall);
    until = rlk_fx_now_ms() + 10000;
    while (!got && rlk_fx_now_ms() < until) {
        struct timeval tv = {0, 200000};

        redisSetTimeout(sub, tv);
        if (redisGetReply(sub, (void **)&r) != REDIS_OK) {
            sub->err = 0;       /* a timeout: listen again */
            continue;
        }
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[2]->type == REDIS_REPLY_STRING && strcmp(r->element[2]->str, "0") == 0) {
            redisReply *a = redisCommand(cmd, "EVAL %s 1 %s 30000 redisson-uuid:1",
                                         redisson_acquire, name);

            zeros++;
            got = a && a->type == REDIS_REPLY_NIL;
            if (a)
                freeReplyObject(a);
        }
        freeReplyObject(r);
    }
    grants = held_grants(c) - before;
    tk_say("redisson waiter: %s after %lld unlock messages (rlk rounds %d, %d; %llu held grants "
           "meanwhile)", got ? "acquired" : "never acquired", zeros, atomic_load(&p[0].rounds),
           atomic_load(&p[1].rounds), grants);
    CHECKF(got, "a Redisson waiter never got the lock in 10 s while rlk waiters handed it over "
           "(%lld unlock messages heard, %d + %d rlk rounds)%s", zeros,
           atomic_load(&p[0].rounds), atomic_load(&p[1].rounds), tk_stall_note(&stall));
    if (got) {
        r = redisCommand(cmd, "HDEL %s redisson-uuid:1", name);
        if (r)
            freeReplyObject(r);
        r = redisCommand(cmd, "PUBLISH redisson_lock__channel:{%s} 0", name);
        if (r)
            freeReplyObject(r);
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        CHECKF(p[i].rc == RLK_OK, "rlk thread %d ended with %d: %s", i, p[i].rc, rlk_errstr(c));
    }
    redisFree(sub);
    redisFree(cmd);
    rlk_free(c);
}

int main(int argc, char **argv)
{
    char self[512];

    if (argc >= 5 && argc <= 7 && strcmp(argv[1], "wait") == 0)
        return child_wait(argv[2], argv[3], atoll(argv[4]),
                          argc >= 6 && strcmp(argv[5], "-") != 0 ? argv[5] : NULL,
                          argc == 7 ? atoll(argv[6]) : 60000);
    if (fl_suite_begin("fl_held", &srv, url, sizeof url, &stall, self, sizeof self) != 0)
        return 1;
    RUN_TEST(test_blocking);
    RUN_TEST(test_given_id);
    RUN_TEST(test_async);
    RUN_TEST(test_async_second_waiter);
    RUN_TEST(test_async_linger);
    RUN_TEST(test_async_cancel_again);
    RUN_TEST(test_async_cancel_lost);
    RUN_TEST(test_async_cancel_lost_back);
    RUN_TEST(test_cancel_lost_back);
    RUN_TEST(test_stopped_grantee);
    RUN_TEST(test_lost_grant);
    RUN_TEST(test_lost_grant_async);
    RUN_TEST(test_lapsed_grant);
    RUN_TEST(test_lapsed_grant_async);
    RUN_TEST(test_other_wait);
    RUN_TEST(test_other_wait_async);
    RUN_TEST(test_next_head);
    if (!getenv("RLK_TEST_FUNCTIONS"))     /* it runs Redisson's script by EVAL */
        RUN_TEST(test_redisson_waiter);
    else
        printf("- test_redisson_waiter: skipped in functions mode (EVAL of Redisson's script)\n");
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_held");
}
