/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_closed.c - a request made after the server closed the async
 * engine's idle command connection, before the loop ran again: the engine
 * sees the close before it writes (ae_call.c, ae_cmd_writable), opens the
 * connection again and sends the request once there; it is not lost.
 *
 *   rlk_async_closed_poll peer|standalone|inflight|sentinel|readonly_order
 *
 * peer: rlk_transport_peer itself on a socket pair (open, data, data then
 *   end of file, end of file).
 * standalone: the engine's connection is killed by id (CLIENT KILL ID, from
 *   another connection), the test waits until the engine's socket has seen
 *   the close (a bounded poll on it: the kernel's signal, no sleep), then a
 *   lock, a re-entry, an unlock and a fenced write, one after each kill.
 * inflight: a call in flight (paused by CLIENT PAUSE WRITE) when the
 *   connection is killed: it is lost (1 lost call), the next request waits
 *   for the next connection and succeeds.
 * sentinel: a failover demotes the master (the sentinels kill its normal
 *   clients when they reconfigure it), with the loop stopped all along; the
 *   first lock then succeeds on the new master.
 * readonly_order: the master the sentinels name says READONLY for a while
 *   (its connections kept): three acquisitions of one name, refused and sent
 *   again, run in the order they were asked once it takes writes again.
 *
 * Each request must succeed and no call of the client may end lost
 * (rlk_ae_lost_calls, the engine's count of calls written whose reply was
 * lost). The control runs the same with RLK_TEST_NO_PEER_CHECK=1 (the
 * engine writes without the check, rlk_ae_no_peer_check) and must fail with
 * "lost on the closed connection". $RLK_TEST_TLS: the same over TLS.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "sentinel.h"
#include "aloop.h"
#include "async_procs.h"
#include "async_test.h"
#include "async_names.h"
#include "rlk.h"
#include "rlk_async.h"
#include "engine/engine.h"   /* rlk_ae_lost_calls, rlk_ae_no_peer_check */
#include "client/transport.h"   /* rlk_transport_peer */

static rlk_fx_server srv;
static char url[512];

#define MAX_SOCKS 8

/* This process's TCP sockets connected to port: fds and local ports. */
static int own_socks(int port, int *fds, int *lports)
{
    int n = 0;

    for (int fd = 3; fd < 1024 && n < MAX_SOCKS; fd++) {
        struct sockaddr_in a;
        socklen_t len = sizeof a;

        if (getpeername(fd, (struct sockaddr *)&a, &len) != 0 || a.sin_family != AF_INET ||
            ntohs(a.sin_port) != port)
            continue;
        len = sizeof a;
        if (getsockname(fd, (struct sockaddr *)&a, &len) != 0)
            continue;
        fds[n] = fd;
        lports[n++] = ntohs(a.sin_port);
    }
    return n;
}

/* Kills this process's connections to s by id (CLIENT LIST: the entry whose
 * addr is the socket's local address; CLIENT KILL ID from another
 * connection). The number killed. */
static int kill_own(const rlk_fx_server *s)
{
    int fds[MAX_SOCKS], lports[MAX_SOCKS], n = own_socks(s->port, fds, lports), killed = 0;
    redisReply *list = rlk_fx_command(s, "CLIENT LIST");

    for (int i = 0; list && list->type == REDIS_REPLY_STRING && i < n; i++) {
        char addr[64];
        const char *at, *line;

        snprintf(addr, sizeof addr, " addr=127.0.0.1:%d ", lports[i]);
        if (!(at = strstr(list->str, addr)))
            continue;
        for (line = at; line > list->str && line[-1] != '\n'; line--)
            ;
        if (strncmp(line, "id=", 3) == 0) {
            redisReply *k = rlk_fx_command(s, "CLIENT KILL ID %lld", atoll(line + 3));

            killed += k && k->type == REDIS_REPLY_INTEGER && k->integer == 1;
            if (k)
                freeReplyObject(k);
        }
    }
    if (list)
        freeReplyObject(list);
    return killed;
}

/* A bounded wait until each of this process's sockets to port has something
 * to read (the server's close: end of file, or a TLS close_notify), without
 * running the client's loop. 1 when every one has; 0 at the timeout or with
 * no socket. */
static int close_seen(int port, long long ms)
{
    int fds[MAX_SOCKS], lports[MAX_SOCKS], n = own_socks(port, fds, lports);
    long long end = rlk_fx_now_ms() + ms;

    if (n <= 0 || n > MAX_SOCKS)
        return 0;
    for (;;) {
        struct pollfd p[MAX_SOCKS];
        int ready = 0;
        long long left = end - rlk_fx_now_ms();

        for (int i = 0; i < n; i++)
            p[i] = (struct pollfd){.fd = fds[i], .events = POLLIN};
        if (poll(p, (nfds_t)(unsigned)n, 0) >= 0)
            for (int i = 0; i < n; i++)
                ready += p[i].revents != 0;
        if (ready == n)
            return 1;
        if (left <= 0)
            return 0;
        for (int i = 0; i < n; i++)
            if (!p[i].revents) {
                (void)poll(&p[i], 1, (int)(left < 100 ? left : 100));   /* waits on the socket */
                break;
            }
    }
}

/* The client lost no call since lost0: the message the control looks for. */
#define CHECK_NOT_LOST(c, lost0, what)                                                         \
    CHECKF(rlk_ae_lost_calls((c).ac) == (lost0), "%s: %llu call(s) lost on the closed connection", \
           (what), rlk_ae_lost_calls((c).ac) - (lost0))

static long long hcount(const rlk_fx_server *s, const char *name, const char *owner)
{
    redisReply *r = rlk_fx_command(s, "HGET %s %s", name, owner);
    long long v = r && r->type == REDIS_REPLY_STRING ? atoll(r->str)
                  : r && r->type == REDIS_REPLY_NIL  ? 0
                                                     : -1;

    if (r)
        freeReplyObject(r);
    return v;
}

/* ---------------------------------------------------------------- fenced write */

/* ---------------------------------------------------------------- cases */

/* Kills the engine's connection and waits until its socket saw the close. */
static int kill_and_see(const rlk_fx_server *s)
{
    int killed = kill_own(s);

    CHECKF(killed >= 1, "no connection of the client to kill on port %d", s->port);
    return killed >= 1 && close_seen(s->port, 10000);
}

static void standalone(void)
{
    ap_cl c;
    ap_res a = {0}, b = {0}, u = {0}, u2 = {0};
    fres f = {0};
    char owner[128];
    const char *v[] = {"v1"};
    unsigned long long lost0;

    REQUIRE(ap_cl_open(&c, url, 0, 0, 2000) == RLK_OK);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(c.ac));
    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:l", 1, 0, 30000, on_res, &a));
    REQUIRE(wait_res(&c, &a, 10000));
    REQUIREF(a.err == RLK_OK, "first lock: %d %s", a.err, a.errstr);
    lost0 = rlk_ae_lost_calls(c.ac);

    /* A re-entry: the engine's connection was killed and the loop has not run. */
    REQUIRE(kill_and_see(&srv));
    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:l", 1, 0, 30000, on_res, &b));
    REQUIRE(wait_res(&c, &b, 10000));
    CHECKF(b.err == RLK_OK && b.value == 2, "lock after the kill: %d %s (%lld)", b.err, b.errstr,
           b.value);
    CHECK_NOT_LOST(c, lost0, "lock");
    CHECK_INT_EQ(hcount(&srv, "{ac}:l", owner), 2);

    /* An unlock. */
    REQUIRE(kill_and_see(&srv));
    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "{ac}:l", 1, on_res, &u));
    REQUIRE(wait_res(&c, &u, 10000));
    CHECKF(u.err == RLK_OK && u.value == 1, "unlock after the kill: %d %s (%lld)", u.err, u.errstr,
           u.value);
    CHECK_NOT_LOST(c, lost0, "unlock");
    CHECK_INT_EQ(hcount(&srv, "{ac}:l", owner), 1);

    /* A fenced write. */
    REQUIRE(kill_and_see(&srv));
    in_call = 1;
    REQUIRE(rlk_async_fence_write(c.ac, "set", "{ac}:fence", "{ac}:d", 7, 1, v, NULL, on_fence, &f));
    in_call = 0;
    REQUIRE(aloop_run_until(c.l, fres_done, &f, 10000));
    CHECKF(f.err == RLK_OK, "fenced write after the kill: %d %s", f.err, f.errstr);
    CHECK_NOT_LOST(c, lost0, "fenced write");
    {
        redisReply *r = rlk_fx_command(&srv, "GET {ac}:d");

        CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "v1") == 0);
        if (r)
            freeReplyObject(r);
    }

    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "{ac}:l", 1, on_res, &u2));
    REQUIRE(wait_res(&c, &u2, 10000));
    CHECK_INT_EQ(u2.err, RLK_OK);
    CHECK_INT_EQ(hcount(&srv, "{ac}:l", owner), 0);
    ap_cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* 1 when srv counts a blocked client (INFO clients: a call paused by
 * CLIENT PAUSE WRITE). */
static int blocked_seen(void *p)
{
    redisReply *r = rlk_fx_command(&srv, "INFO clients");
    const char *at = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "blocked_clients:") : NULL;
    int yes = at && atoi(at + 16) >= 1;

    (void)p;
    if (r)
        freeReplyObject(r);
    return yes;
}

/* A call in flight (paused by the server: CLIENT PAUSE WRITE) when the
 * server closes the connection: that call is lost, the next one waits for
 * the next connection instead of going out behind it. */
static void inflight(void)
{
    ap_cl c;
    ap_res w = {0}, a = {0}, b = {0};
    char owner[128];
    unsigned long long lost0;
    redisReply *r;

    REQUIRE(ap_cl_open(&c, url, 0, 0, 4000) == RLK_OK);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(c.ac));
    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:w", 1, 0, 30000, on_res, &w));
    REQUIRE(wait_res(&c, &w, 10000));
    REQUIREF(w.err == RLK_OK, "first lock: %d %s", w.err, w.errstr);
    lost0 = rlk_ae_lost_calls(c.ac);
    r = rlk_fx_command(&srv, "CLIENT PAUSE 1500 WRITE");
    REQUIRE(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:a", 1, 0, 30000, on_res, &a));
    REQUIREF(aloop_run_until(c.l, blocked_seen, NULL, 5000), "the lock call was not paused");
    REQUIRE(kill_and_see(&srv));
    /* The loop has not run since the kill: the socket reads end of file behind nothing. */
    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:b", 1, 0, 30000, on_res, &b));
    REQUIRE(wait_res(&c, &b, 15000));
    REQUIRE(wait_res(&c, &a, 15000));
    CHECKF(b.err == RLK_OK && b.value == 1, "lock after the kill: %d %s (%lld)", b.err, b.errstr,
           b.value);
    CHECKF(rlk_ae_lost_calls(c.ac) - lost0 == 1,
           "inflight: %llu call(s) lost on the closed connection (1 expected: the one in flight)",
           rlk_ae_lost_calls(c.ac) - lost0);
    CHECK_INT_EQ(hcount(&srv, "{ac}:b", owner), 1);
    ap_cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* A quick sentinel group monitoring `name` and a client c on it (command timeout cmd_ms);
 * 0, or -1 with nothing left running. */
static int sentinel_open(rlk_fx_sentinel *sn, const char *name, ap_cl *c, int cmd_ms)
{
    char surl[512];

    memset(sn, 0, sizeof *sn);
    if (rlk_fx_sentinel_start_quick(sn, name) != 0)
        return -1;
    snprintf(surl, sizeof surl, "%s+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/%s",
             sn->data[0].tls ? "rediss" : "redis", sn->sentinel[0].port, sn->sentinel[1].port,
             sn->sentinel[2].port, name);
    if (ap_cl_open(c, surl, 0, 0, cmd_ms) != RLK_OK) {
        rlk_fx_sentinel_stop(sn);
        return -1;
    }
    return 0;
}

/* A failover demotes the master while the loop is stopped; the sentinels
 * kill its normal clients as they make it a replica. */
static void sentinel(void)
{
    rlk_fx_sentinel sn;
    char owner[128];
    ap_cl c = {NULL, NULL};
    ap_res a = {0}, u = {0}, b = {0}, u2 = {0};
    unsigned long long lost0;

    REQUIRE(sentinel_open(&sn, "closedmaster", &c, 2000) == 0);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(c.ac));
    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:sn", 1, 0, 30000, on_res, &a));
    CHECK(wait_res(&c, &a, 10000));
    CHECKF(a.err == RLK_OK, "lock on the first master: %d %s", a.err, a.errstr);
    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "{ac}:sn", 1, on_res, &u));
    CHECK(wait_res(&c, &u, 10000));
    CHECK_INT_EQ(u.err, RLK_OK);
    lost0 = rlk_ae_lost_calls(c.ac);

    /* The loop does not run from here to the request. */
    CHECK(rlk_fx_sentinel_wait_promotable(&sn, 15000) == 0);
    CHECK(rlk_fx_sentinel_failover(&sn, 20000) == 0);
    CHECK_INT_EQ(rlk_fx_sentinel_master(&sn), 1);
    CHECK(rlk_fx_sentinel_wait_demoted(&sn, 0, 30000) == 0);
    CHECKF(close_seen(sn.data[0].port, 10000), "the demoted master did not close the connection");

    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:sn", 1, 0, 30000, on_res, &b));
    CHECK(wait_res(&c, &b, 15000));
    CHECKF(b.err == RLK_OK && b.value == 1, "lock after the failover: %d %s (%lld)", b.err,
           b.errstr, b.value);
    CHECK_NOT_LOST(c, lost0, "lock after the failover");
    CHECK_INT_EQ(hcount(&sn.data[1], "{ac}:sn", owner), 1);   /* on the new master */
    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "{ac}:sn", 1, on_res, &u2));
    CHECK(wait_res(&c, &u2, 10000));
    CHECK_INT_EQ(u2.err, RLK_OK);
    ap_cl_close(&c);
    rlk_fx_sentinel_stop(&sn);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* READONLY errors counted by s (INFO errorstats), -1 when it cannot be asked. */
static long long readonly_errors(const rlk_fx_server *s)
{
    redisReply *r = rlk_fx_command(s, "INFO errorstats");
    const char *p = r && r->type == REDIS_REPLY_STRING ? strstr(r->str, "errorstat_READONLY:count=")
                                                       : NULL;
    long long n = r && r->type == REDIS_REPLY_STRING ? (p ? atoll(p + 25) : 0) : -1;

    if (r)
        freeReplyObject(r);
    return n;
}

typedef struct ro_wait {
    const rlk_fx_server *s;
    long long want;
} ro_wait;

static int ro_seen(void *arg)
{
    const ro_wait *w = arg;

    return readonly_errors(w->s) >= w->want;
}

/* Three acquisitions of one name by three owners, asked in a row while the master the
 * sentinels name says READONLY (it follows a server that is not there: REPLICAOF, the
 * sentinels not told), each refused once (the loop stops at the third refusal, so they are
 * not written again before), then the master takes writes again
 * (REPLICAOF NO ONE, well within the sentinels' down-after: no failover): the first asked is
 * the one that gets it. first: the owner asked first (1 or 3: the order 3, 2, 1 shows the
 * check follows the order asked). */
static void readonly_order_run(int first)
{
    rlk_fx_sentinel sn;
    char owner[128];
    ap_cl c = {NULL, NULL};
    ap_res w = {0}, u = {0}, r[4] = {{0}};
    ro_wait seen;

    REQUIRE(sentinel_open(&sn, "romaster", &c, 30000) == 0);
    REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:ro-warm", 1, 0, 30000, on_res, &w));
    CHECK(wait_res(&c, &w, 10000));     /* the command connection is up, on data[0] */
    CHECKF(w.err == RLK_OK, "lock on the master: %d %s", w.err, w.errstr);
    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "{ac}:ro-warm", 1, on_res, &u));
    CHECK(wait_res(&c, &u, 10000));

    seen = (ro_wait){&sn.data[0], readonly_errors(&sn.data[0]) + 3};
    {
        redisReply *x = rlk_fx_command(&sn.data[0], "REPLICAOF 127.0.0.1 %d", rlk_fx_refused_port());

        REQUIRE(x && x->type == REDIS_REPLY_STATUS);
        freeReplyObject(x);
    }
    for (int k = 0; k < 3; k++) {
        int id = first == 1 ? k + 1 : 3 - k;

        REQ(rlk_async_lock(c.ac, RLK_KIND_LOCK, "{ac}:ro", id, 0, 30000, on_res, &r[id]));
    }
    CHECKF(aloop_run_until(c.l, ro_seen, &seen, 20000), "READONLY errors on the old master: %lld, "
           "want %lld", readonly_errors(&sn.data[0]), seen.want);
    CHECK_INT_EQ(r[1].calls + r[2].calls + r[3].calls, 0);     /* none answered while refused */
    printf("readonly_order: %lld READONLY refusals before the master took writes again\n",
           readonly_errors(&sn.data[0]) - (seen.want - 3));
    {
        redisReply *x = rlk_fx_command(&sn.data[0], "REPLICAOF NO ONE");

        REQUIRE(x && x->type == REDIS_REPLY_STATUS);
        freeReplyObject(x);
    }
    for (int id = 1; id <= 3; id++)
        CHECK(wait_res(&c, &r[id], 20000));
    CHECKF(rlk_fx_sentinel_master(&sn) == 0, "the sentinels failed over (the test needs none)");
    for (int id = 1; id <= 3; id++)
        CHECKF(id == first ? r[id].err == RLK_OK && r[id].value == 1 : r[id].err == RLK_ERR_BUSY,
               "owner %d (asked %s): %d %s", id, id == first ? "first" : "later", r[id].err,
               r[id].errstr);
    snprintf(owner, sizeof owner, "%s:%d", rlk_async_uuid(c.ac), first);
    CHECK_INT_EQ(hcount(&sn.data[0], "{ac}:ro", owner), 1);
    ap_cl_close(&c);
    rlk_fx_sentinel_stop(&sn);
    CHECK_INT_EQ(rule_breaks, 0);
}

static void readonly_order(void)
{
    readonly_order_run(1);
    readonly_order_run(3);
}

/* rlk_transport_peer on a socket pair (no TLS session): nothing to read is
 * open; bytes are data, also when the peer closed behind them (the bytes
 * are read first: replies in flight are not taken for a close); end of file
 * alone is closed. */
static void peer(void)
{
    int sv[2];
    redisContext *ctx = calloc(1, sizeof *ctx);

    REQUIRE(ctx && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    ctx->fd = sv[0];
    CHECK_INT_EQ(rlk_transport_peer(ctx), RLK_PEER_OPEN);
    REQUIRE(write(sv[1], "+OK\r\n", 5) == 5);
    CHECK_INT_EQ(rlk_transport_peer(ctx), RLK_PEER_DATA);
    close(sv[1]);
    CHECK_INT_EQ(rlk_transport_peer(ctx), RLK_PEER_DATA);    /* the reply, then the end */
    {
        char buf[8];

        CHECK(read(sv[0], buf, sizeof buf) == 5);
    }
    CHECK_INT_EQ(rlk_transport_peer(ctx), RLK_PEER_CLOSED);
    close(sv[0]);
    free(ctx);
}

static const at_case cases[] = {
    {"peer", peer},
    {"standalone", standalone},
    {"inflight", inflight},
    {"sentinel", sentinel},
    {"readonly_order", readonly_order},
};

int main(int argc, char **argv)
{
    if (getenv("RLK_TEST_NO_PEER_CHECK"))   /* the control: must fail */
        rlk_ae_no_peer_check = 1;
    return AT_MAIN("async_closed", cases, argc > 1 ? argv[1] : "all",
                   rlk_ae_no_peer_check ? " (control: no check before a write)" : NULL, &srv,
                   url);
}
