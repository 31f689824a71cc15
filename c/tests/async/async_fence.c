/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_fence.c - rlk_async_fence_write (rlk_async.h) and the fenced-write
 * metrics of both APIs, written against aloop.h (linked with aloop_poll.c
 * and with an adapter's aloop).
 *
 *   async_fence_<loop> <case>|all     one server started by the fixture
 *   async_fence_<loop> cluster        a 3-master + 3-replica cluster instead
 *
 * Cases:
 *   write     every op's reply as rlk_fence_write gives it (set, hset, incrby,
 *             rpush, check), a binary argument (arglens), the token recorded;
 *   stale     a token below the highest: RLK_ERR_FENCED, value the highest,
 *             nothing changed (data and fence key); the equal token passes;
 *   args      bad arguments refused on a later turn with RLK_ERR_ARG and the
 *             blocking call's message, nothing sent; the script's refusals
 *             (RLK_CROSSSLOT, RLK_BADARG) as RLK_ERR_SCRIPT;
 *   replica   the server turned replica: RLK_ERR_READONLY, nothing changed;
 *   lost      the server paused past the command timeout: RLK_ERR_IO (the
 *             write may have run), never accepted nor refused;
 *   sentinel  master + replica + 3 sentinels: after a failover, once the old
 *             master is demoted, a write of each API lands on the new master
 *             and a stale one is refused there;
 *   procs     4 processes, each an async client whose tasks take the fenced
 *             lock with a short lease and write their token through
 *             fence/rpush, some after stalling past the lease: the list never
 *             goes down and some stale writes were refused. Control: the same
 *             run writing with a plain RPUSH must leave a lower token after a
 *             higher one;
 *   metrics   fenced writes accepted and refused counted per API and per
 *             watched fence key (rlk_metrics_get, rlk_async_metrics_get), in
 *             the Prometheus and JSON text ($RLK_TEST_PROM_OUT gets the
 *             Prometheus text for promtool: metrics_promtool.sh);
 *   claim     rlk_async_fence_claim and rlk_fence_claim: every fence raised to
 *             the token (value: the token), a lower token then refused at each,
 *             even where the holder has not written; a claim that finds a
 *             newer token: RLK_ERR_FENCED, value the fence's highest, errstr
 *             naming it; no fences, an empty one, token 0: RLK_ERR_ARG;
 *   cluster   writes on fence keys owned by each master land there; stale
 *             refused there; keys in two slots refused before any call.
 *
 * Every wait is bounded; the one pause (procs) is the fault under test (a
 * holder stalled past its lease), never a synchronisation.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aloop.h"
#include "async_procs.h"
#include "async_test.h"
#include "async_names.h"
#include "check.h"
#include "cluster.h"
#include "fixture.h"
#include "sentinel.h"
#include "tk_util.h"
#include "rlk.h"
#include "rlk_async.h"

static rlk_fx_server srv;
static rlk_fx_cluster fcl;
static char url[512];
static int cmd_timeout_ms = 2000;

#define cl_close ap_cl_close
typedef ap_cl cl;

static int cl_open(cl *c)
{
    return ap_cl_open(c, url, 0, 0, cmd_timeout_ms);
}

/* One fenced write, run to its end (bounded): 1 when its callback came. */
static int fw(cl *c, fres *x, const char *op, const char *fence, const char *data,
              uint64_t token, int nargs, const char *const *args, const size_t *lens)
{
    rlk_async_req *r;

    memset(x, 0, sizeof *x);
    x->rtype = -1;
    r = REQ(rlk_async_fence_write(c->ac, op, fence, data, token, nargs, args, lens, on_fence, x));
    if (!r)
        return 0;
    return aloop_run_until(c->l, fres_done, x, 12000);
}

#define sget at_srv_get
#define sint ap_srv_int

/* ---------------------------------------------------------------- one server */

static void write_ops(void)
{
    cl c = {NULL, NULL};
    fres x;
    char buf[64];
    const char *v1[] = {"one"}, *hs[] = {"f", "v"}, *inc[] = {"5"}, *push[] = {"a", "b"};
    const char *bin[] = {"x\0y"};
    size_t binlen[] = {3};

    REQUIRE(cl_open(&c) == RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{af}:fence", "{af}:s", 10, 1, v1, NULL));
    CHECKF(x.err == RLK_OK && x.rtype == REDIS_REPLY_STATUS, "set: %d %s", x.err, x.errstr);
    CHECK_STR_EQ(x.rstr, "OK");
    CHECK_STR_EQ(sget(&srv, "{af}:s", buf, sizeof buf), "one");
    CHECK_STR_EQ(sget(&srv, "{af}:fence", buf, sizeof buf), "10");
    REQUIRE(fw(&c, &x, "hset", "{af}:fence", "{af}:h", 11, 2, hs, NULL));
    CHECKF(x.err == RLK_OK && x.rtype == REDIS_REPLY_INTEGER && x.rint == 1, "hset: %d %s", x.err,
           x.errstr);
    REQUIRE(fw(&c, &x, "incrby", "{af}:fence", "{af}:n", 11, 1, inc, NULL));
    CHECKF(x.err == RLK_OK && x.rint == 5, "incrby: %d %s", x.err, x.errstr);
    REQUIRE(fw(&c, &x, "rpush", "{af}:fence", "{af}:l", 12, 2, push, NULL));
    CHECKF(x.err == RLK_OK && x.rint == 2, "rpush: %d %s", x.err, x.errstr);
    REQUIRE(fw(&c, &x, "set", "{af}:fence", "{af}:bin", 12, 1, bin, binlen));
    CHECKF(x.err == RLK_OK, "set binary: %d %s", x.err, x.errstr);
    CHECK_INT_EQ(sint(&srv, "STRLEN %s", "{af}:bin"), 3);
    REQUIRE(fw(&c, &x, "check", "{af}:fence", NULL, 13, 0, NULL, NULL));
    CHECKF(x.err == RLK_OK && x.rtype == REDIS_REPLY_INTEGER && x.rint == 12, "check: %d %s (%lld)",
           x.err, x.errstr, x.rint);
    CHECK_STR_EQ(sget(&srv, "{af}:fence", buf, sizeof buf), "13");
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

static void stale(void)
{
    cl c = {NULL, NULL};
    fres x;
    char buf[64];
    const char *v[] = {"new"}, *old[] = {"old"};

    REQUIRE(cl_open(&c) == RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{as}:fence", "{as}:d", 40, 1, v, NULL));
    REQUIRE(x.err == RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{as}:fence", "{as}:d", 39, 1, old, NULL));
    CHECKF(x.err == RLK_ERR_FENCED, "stale: %d %s", x.err, x.errstr);
    CHECK_INT_EQ(x.value, 40);
    CHECK(x.rtype == -1);
    CHECK_STR_CONTAINS(x.errstr, "RLK_FENCED 40");
    CHECK_STR_EQ(sget(&srv, "{as}:d", buf, sizeof buf), "new");
    CHECK_STR_EQ(sget(&srv, "{as}:fence", buf, sizeof buf), "40");
    REQUIRE(fw(&c, &x, "del", "{as}:fence", "{as}:d", 1, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_FENCED);
    CHECK_INT_EQ(sint(&srv, "EXISTS %s", "{as}:d"), 1);
    REQUIRE(fw(&c, &x, "set", "{as}:fence", "{as}:d", 40, 1, old, NULL));   /* the same holder */
    CHECKF(x.err == RLK_OK, "equal token: %d %s", x.err, x.errstr);
    CHECK_STR_EQ(sget(&srv, "{as}:d", buf, sizeof buf), "old");
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

static void args(void)
{
    cl c = {NULL, NULL};
    fres x;
    char buf[64];
    const char *v[] = {"v"}, *nul[] = {NULL};

    REQUIRE(cl_open(&c) == RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{aa}:fence", "{aa}:d", 5, 1, v, NULL));
    REQUIRE(x.err == RLK_OK);
    REQUIRE(fw(&c, &x, "get", "{aa}:fence", "{aa}:d", 9, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    CHECK_STR_CONTAINS(x.errstr, "rlk_async_fence_write: op 'get' is not one of");
    REQUIRE(fw(&c, &x, NULL, "{aa}:fence", "{aa}:d", 9, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "del", "{aa}:fence", "{aa}:d", 0, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "del", "{aa}:fence", "{aa}:d", 9007199254740991ULL, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "del", "", "{aa}:d", 9, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "del", "{aa}:fence", NULL, 9, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "check", "{aa}:fence", "{aa}:d", 9, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "set", "{aa}:fence", "{aa}:d", 9, 1, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "set", "{aa}:fence", "{aa}:d", 9, 1, nul, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    CHECK_STR_CONTAINS(x.errstr, "args[0] is NULL");
    CHECK(rlk_async_fence_write(c.ac, "del", "{aa}:fence", "{aa}:d", 9, 0, NULL, NULL, NULL, NULL)
          == NULL);     /* no callback: no request */
    CHECK_STR_EQ(sget(&srv, "{aa}:fence", buf, sizeof buf), "5");  /* none of them was sent */
    REQUIRE(fw(&c, &x, "del", "{aa}:fence", "{other}:d", 9, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(x.errstr, "RLK_CROSSSLOT");
    REQUIRE(fw(&c, &x, "set", "{aa}:fence", "{aa}:d", 9, 0, NULL, NULL));  /* SET without a value */
    CHECK_INT_EQ(x.err, RLK_ERR_SCRIPT);
    CHECK_STR_PREFIX(x.errstr, "RLK_BADARG");
    CHECK_STR_EQ(sget(&srv, "{aa}:fence", buf, sizeof buf), "5");
    CHECK_STR_EQ(sget(&srv, "{aa}:d", buf, sizeof buf), "v");
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

static void replica(void)
{
    cl c = {NULL, NULL};
    fres x;
    char buf[64];
    const char *v[] = {"on the master"}, *w[] = {"on the replica"};
    int port = rlk_fx_refused_port();

    REQUIRE(port > 0 && cl_open(&c) == RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{ar}:fence", "{ar}:d", 10, 1, v, NULL));
    REQUIRE(x.err == RLK_OK);
    /* A replica of a master that is not there: it keeps its data and answers reads. */
    REQUIRE(tk_command_ok(&srv, "REPLICAOF 127.0.0.1 %d", port) == 0);
    REQUIRE(fw(&c, &x, "set", "{ar}:fence", "{ar}:d", 11, 1, w, NULL));
    CHECKF(x.err == RLK_ERR_READONLY, "on a replica: %d %s", x.err, x.errstr);
    CHECK(tk_command_ok(&srv, "REPLICAOF NO ONE") == 0);
    CHECK_STR_EQ(sget(&srv, "{ar}:d", buf, sizeof buf), "on the master");
    CHECK_STR_EQ(sget(&srv, "{ar}:fence", buf, sizeof buf), "10");
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

static void lost(void)
{
    cl c = {NULL, NULL};
    fres x;
    char buf[64];
    const char *v[] = {"v"};

    cmd_timeout_ms = 400;
    REQUIRE(cl_open(&c) == RLK_OK);
    cmd_timeout_ms = 2000;
    REQUIRE(fw(&c, &x, "set", "{al}:fence", "{al}:d", 3, 1, v, NULL));     /* connected first */
    REQUIRE(x.err == RLK_OK);
    REQUIRE(rlk_fx_client_pause(&srv, 1200) == 0);
    REQUIRE(fw(&c, &x, "set", "{al}:fence", "{al}:d", 4, 1, v, NULL));
    CHECKF(x.err == RLK_ERR_IO, "lost reply: %d %s", x.err, x.errstr);
    CHECK_STR_CONTAINS(x.errstr, "may have run");
    CHECK(x.rtype == -1);
    sget(&srv, "{al}:fence", buf, sizeof buf);
    CHECKF(strcmp(buf, "3") == 0 || strcmp(buf, "4") == 0, "fence %s", buf);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

static void on_probe(rlk_async *ac, const rlk_async_result *r, void *p)
{
    (void)ac;
    ((fres *)p)->err = r->err;
    ((fres *)p)->calls++;
}

/* The async client has followed a sentinel switch (its failovers metric). */
static int sn_followed(void *p)
{
    rlk_metrics m;

    return rlk_async_metrics_get(p, &m) == RLK_OK && m.failovers >= 1;
}

/* Through Sentinel, across a failover: after the old master is demoted, a fenced write of each
 * API ends accepted on the new master (a READONLY from the demoted one is sent again to the
 * master the sentinels name), and a stale one is refused there. */
static void sentinel(void)
{
    rlk_fx_sentinel sn;
    char saved[512], buf[64];
    cl c = {NULL, NULL};
    fres x;
    rlk_client *bc = NULL;
    const char *v1[] = {"before"}, *v2[] = {"after"};
    uint64_t highest = 0;
    int rc, ok;

    memset(&sn, 0, sizeof sn);
    REQUIRE(rlk_fx_sentinel_start_quick(&sn, "afmaster") == 0);
    snprintf(saved, sizeof saved, "%s", url);
    snprintf(url, sizeof url, "redis+sentinel://127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d/afmaster",
             sn.sentinel[0].port, sn.sentinel[1].port, sn.sentinel[2].port);
    ok = cl_open(&c) == RLK_OK && (bc = tk_connect(url, 0, 1)) != NULL;
    snprintf(url, sizeof url, "%s", saved);
    if (!ok) {
        rlk_fx_sentinel_stop(&sn);
        REQUIRE(0);
    }
    CHECK(fw(&c, &x, "set", "{asn}:fence", "{asn}:a", 10, 1, v1, NULL) && x.err == RLK_OK);
    rc = rlk_fence_write(bc, "set", "{asn}:fence", "{asn}:b", 10, 1, v1, NULL, NULL, NULL);
    CHECKF(rc == RLK_OK, "blocking before: %s %s", rlk_strerror(rc), rlk_errstr(bc));
    CHECK_INT_EQ(rlk_fx_replicated(&sn.data[0], 1, 5000), 1);     /* both reach the replica */
    CHECK(rlk_fx_sentinel_wait_promotable(&sn, 15000) == 0);
    CHECK(rlk_fx_sentinel_failover(&sn, 20000) == 0);
    CHECK(rlk_fx_sentinel_wait_demoted(&sn, 0, 30000) == 0);   /* the old master refuses writes */
    CHECK_INT_EQ(rlk_fx_sentinel_master(&sn), 1);
    /* The loop runs, as an application's does between requests: the client follows the
     * sentinels to the new master; then a read (a latch that is open) goes through, on a
     * connection made after the demoted master closed its clients (Sentinel's CLIENT KILL). */
    CHECKF(aloop_run_until(c.l, sn_followed, c.ac, 15000), "the async client did not follow the "
           "switch within 15 s");
    for (int i = 0; i < 20; i++) {
        fres rd = {0};

        if (!rlk_async_latch_await(c.ac, "{asn}:open", 0, on_probe, &rd) ||
            !aloop_run_until(c.l, fres_done, &rd, 5000) || rd.err == RLK_OK)
            break;
    }
    CHECK(fw(&c, &x, "set", "{asn}:fence", "{asn}:a", 11, 1, v2, NULL));
    CHECKF(x.err == RLK_OK, "async after the failover: %d %s", x.err, x.errstr);
    rc = rlk_fence_write(bc, "set", "{asn}:fence", "{asn}:b", 11, 1, v2, NULL, NULL, NULL);
    CHECKF(rc == RLK_OK, "blocking after the failover: %s %s", rlk_strerror(rc), rlk_errstr(bc));
    CHECK_STR_EQ(sget(&sn.data[1], "{asn}:a", buf, sizeof buf), "after");
    CHECK_STR_EQ(sget(&sn.data[1], "{asn}:b", buf, sizeof buf), "after");
    CHECK_STR_EQ(sget(&sn.data[1], "{asn}:fence", buf, sizeof buf), "11");
    CHECK(fw(&c, &x, "set", "{asn}:fence", "{asn}:a", 10, 1, v1, NULL));
    CHECKF(x.err == RLK_ERR_FENCED && x.value == 11, "async stale: %d %s", x.err, x.errstr);
    rc = rlk_fence_write(bc, "set", "{asn}:fence", "{asn}:b", 10, 1, v1, NULL, &highest, NULL);
    CHECKF(rc == RLK_ERR_FENCED && highest == 11, "blocking stale: %s", rlk_strerror(rc));
    CHECK_STR_EQ(sget(&sn.data[1], "{asn}:a", buf, sizeof buf), "after");
    cl_close(&c);
    rlk_free(bc);
    rlk_fx_sentinel_stop(&sn);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- processes */

#define PR_PROCS 4
#define PR_TASKS 2
#define PR_ITERS 9
#define PR_LEASE_MS 150
#define PR_STALL_MS 300     /* a stalled holder writes after its lease ran out */

typedef struct pr_task {
    struct pr_proc *p;
    unsigned long long id;
    int iter;
    long long token;
    fres w;
    int lock_calls, unlock_calls;
} pr_task;

typedef struct pr_proc {
    cl c;
    int plain, index;
    redisContext *raw;              /* the control's plain RPUSH */
    pr_task t[PR_TASKS];
    int done, accepted, refused, failed;
} pr_proc;

static void pr_next(pr_task *t);

static void pr_on_unlock(rlk_async *ac, const rlk_async_result *r, void *v)
{
    pr_task *t = v;

    (void)ac;
    (void)r;            /* RLK_ERR_NOT_OWNER after a stall: the lease ran out */
    t->iter++;
    pr_next(t);
}

static void pr_written(pr_task *t, int err)
{
    pr_proc *p = t->p;

    if (err == RLK_OK)
        p->accepted++;
    else if (err == RLK_ERR_FENCED)
        p->refused++;
    else
        p->failed++;
    if (!rlk_async_unlock(p->c.ac, RLK_KIND_FENCED, "{apr}:lock", t->id, pr_on_unlock, t)) {
        t->iter++;
        pr_next(t);
    }
}

static void pr_on_write(rlk_async *ac, const rlk_async_result *r, const redisReply *reply, void *v)
{
    (void)ac;
    (void)reply;
    pr_written(v, r->err);
}

static void pr_write(pr_task *t)
{
    char tok[24];
    const char *arg[1] = {tok};

    snprintf(tok, sizeof tok, "%lld", t->token);
    if (t->p->plain) {
        redisReply *r = redisCommand(t->p->raw, "RPUSH {apr}:list %s", tok);

        pr_written(t, r && r->type == REDIS_REPLY_INTEGER ? RLK_OK : RLK_ERR_IO);
        if (r)
            freeReplyObject(r);
        return;
    }
    if (!rlk_async_fence_write(t->p->c.ac, "rpush", "{apr}:fence", "{apr}:list", (uint64_t)t->token,
                               1, arg, NULL, pr_on_write, t))
        pr_written(t, RLK_ERR_NOMEM);
}

static void pr_stall_fire(rlk_async *ac, const rlk_async_result *r, void *v);

static void pr_on_lock(rlk_async *ac, const rlk_async_result *r, void *v)
{
    pr_task *t = v;

    (void)ac;
    if (r->err != RLK_OK) {
        t->p->failed++;
        t->iter++;
        pr_next(t);
        return;
    }
    t->token = r->value;
    /* Every third hold stalls past its lease (the fault): a later holder writes first. The
     * stall is a bounded wait on a latch that stays closed (its count is 1). */
    if ((t->iter + t->p->index) % 3 == 0) {
        if (!rlk_async_latch_await(t->p->c.ac, "{apr}:never", PR_STALL_MS, pr_stall_fire, t))
            pr_write(t);
        return;
    }
    pr_write(t);
}

static void pr_stall_fire(rlk_async *ac, const rlk_async_result *r, void *v)
{
    (void)ac;
    (void)r;
    pr_write(v);
}

static void pr_next(pr_task *t)
{
    if (t->iter >= PR_ITERS) {
        t->p->done++;
        return;
    }
    if (!rlk_async_lock(t->p->c.ac, RLK_KIND_FENCED, "{apr}:lock", t->id, 10000, PR_LEASE_MS,
                        pr_on_lock, t)) {
        t->p->failed++;
        t->p->done++;
    }
}

static int pr_all_done(void *v)
{
    return ((pr_proc *)v)->done == PR_TASKS;
}

/* One process: its tasks lock, write their token (fenced or plain) and unlock, PR_ITERS times.
 * Writes "accepted refused failed" to fd. */
static int pr_child(int index, int plain, int fd)
{
    pr_proc p;
    char line[64];
    int port = 0;
    const char *colon = strrchr(url, ':');

    memset(&p, 0, sizeof p);
    p.plain = plain;
    p.index = index;
    if (colon)
        port = atoi(colon + 1);
    if (plain && !(p.raw = redisConnect("127.0.0.1", port)))
        return 2;
    if (cl_open(&p.c) != RLK_OK)
        return 2;
    for (int i = 0; i < PR_TASKS; i++) {
        p.t[i].p = &p;
        p.t[i].id = (unsigned long long)i + 1;
        pr_next(&p.t[i]);
    }
    if (!aloop_run_until(p.c.l, pr_all_done, &p, 60000))
        return 3;
    snprintf(line, sizeof line, "%d %d %d\n", p.accepted, p.refused, p.failed);
    if (write(fd, line, strlen(line)) < 0)
        return 4;
    cl_close(&p.c);
    if (p.raw)
        redisFree(p.raw);
    return 0;
}

/* Runs PR_PROCS processes; the list's decreases (a lower token after a higher one), and the
 * children's sums. */
static int pr_run(int plain, int *decreases, int *accepted, int *refused, int *failed)
{
    pid_t pid[PR_PROCS];
    int fds[2], bad = 0;
    redisReply *r;
    FILE *f;
    long long prev = 0;

    *decreases = *accepted = *refused = *failed = 0;
    freeReplyObject(rlk_fx_command(&srv, "DEL %s", "{apr}:list"));
    freeReplyObject(rlk_fx_command(&srv, "DEL %s", "{apr}:fence"));
    freeReplyObject(rlk_fx_command(&srv, "SET %s 1", "{apr}:never"));
    if (pipe(fds) != 0)
        return -1;
    for (int i = 0; i < PR_PROCS; i++) {
        if ((pid[i] = fork()) == 0) {
            close(fds[0]);
            _exit(pr_child(i, plain, fds[1]));
        }
        if (pid[i] < 0)
            bad++;
    }
    close(fds[1]);
    f = fdopen(fds[0], "r");
    for (int i = 0; f && i < PR_PROCS; i++) {
        int a, rf, fl;

        if (fscanf(f, "%d %d %d", &a, &rf, &fl) != 3)
            break;
        *accepted += a;
        *refused += rf;
        *failed += fl;
    }
    if (f)
        fclose(f);
    for (int i = 0; i < PR_PROCS; i++) {
        int st = 0;

        if (pid[i] > 0 && (waitpid(pid[i], &st, 0) != pid[i] || !WIFEXITED(st) ||
                           WEXITSTATUS(st) != 0))
            bad++;
    }
    r = rlk_fx_command(&srv, "LRANGE %s 0 -1", "{apr}:list");
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        long long v = atoll(r->element[i]->str);

        *decreases += v < prev;
        if (v > prev)
            prev = v;
    }
    if (r)
        freeReplyObject(r);
    return bad ? -1 : 0;
}

static void procs(void)
{
    int dec, acc, ref, fail;

    REQUIRE(pr_run(0, &dec, &acc, &ref, &fail) == 0);
    printf("  fenced: %d accepted, %d refused, %d failed, %d decreases\n", acc, ref, fail, dec);
    CHECK_INT_EQ(dec, 0);
    CHECK_INT_EQ(fail, 0);
    CHECKF(ref > 0, "no stale write was refused: the run did not test the fence");
    CHECK_INT_EQ(acc + ref, PR_PROCS * PR_TASKS * PR_ITERS);
    CHECK_INT_EQ(sint(&srv, "LLEN %s", "{apr}:list"), acc);
    /* Control: the same run with a plain RPUSH lets a stale write land. */
    REQUIRE(pr_run(1, &dec, &acc, &ref, &fail) == 0);
    printf("  control (plain RPUSH): %d written, %d decreases\n", acc, dec);
    CHECKF(dec > 0, "control: plain RPUSH left no lower token after a higher one");
}

/* ---------------------------------------------------------------- metrics */

static void metrics(void)
{
    cl c = {NULL, NULL};
    fres x;
    rlk_client *bc = tk_connect(url, 0, 1);
    rlk_metrics m, bm;
    const char *v[] = {"v"};
    char *buf = NULL;
    int ret;
    uint64_t highest = 0;
    const char *out = getenv("RLK_TEST_PROM_OUT");

    REQUIRE(bc != NULL && cl_open(&c) == RLK_OK);
    /* The blocking API: 2 accepted, 1 refused, 1 bad call (not counted). */
    REQUIRE(rlk_metrics_watch(bc, "{am}:fence") == RLK_OK);
    CHECK_INT_EQ(rlk_fence_write(bc, "set", "{am}:fence", "{am}:d", 5, 1, v, NULL, NULL, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_fence_write(bc, "set", "{am}:fence", "{am}:d", 6, 1, v, NULL, NULL, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_fence_write(bc, "set", "{am}:fence", "{am}:d", 4, 1, v, NULL, &highest, NULL),
                 RLK_ERR_FENCED);
    CHECK_INT_EQ(rlk_fence_write(bc, "set", "{am}:fence", "{am}:d", 0, 1, v, NULL, NULL, NULL),
                 RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_fence_write(bc, "set", "{am}:other", "{am}:d2", 1, 1, v, NULL, NULL, NULL), RLK_OK);
    REQUIRE(rlk_metrics_get(bc, &bm) == RLK_OK);
    CHECK_INT_EQ((long long)bm.fence_writes[RLK_FENCE_ACCEPTED], 3);
    CHECK_INT_EQ((long long)bm.fence_writes[RLK_FENCE_REFUSED], 1);
    REQUIRE(bm.nnames == 1);
    CHECK_INT_EQ((long long)bm.names[0].fence_writes[RLK_FENCE_ACCEPTED], 2);
    CHECK_INT_EQ((long long)bm.names[0].fence_writes[RLK_FENCE_REFUSED], 1);
    /* The async API: 1 accepted, 2 refused, 1 bad call, 1 script refusal (not counted). */
    REQUIRE(rlk_async_metrics_watch(c.ac, "{am}:fence") == RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{am}:fence", "{am}:d", 7, 1, v, NULL));
    CHECK_INT_EQ(x.err, RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{am}:fence", "{am}:d", 3, 1, v, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_FENCED);
    REQUIRE(fw(&c, &x, "del", "{am}:fence", "{am}:d", 6, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_FENCED);
    REQUIRE(fw(&c, &x, "del", "{am}:fence", "{am}:d", 0, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fw(&c, &x, "set", "{am}:fence", "{am}:d", 8, 0, NULL, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_SCRIPT);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECK_INT_EQ((long long)m.fence_writes[RLK_FENCE_ACCEPTED], 1);
    CHECK_INT_EQ((long long)m.fence_writes[RLK_FENCE_REFUSED], 2);
    REQUIRE(m.nnames == 1);
    CHECK_STR_EQ(m.names[0].name, "{am}:fence");
    CHECK_INT_EQ((long long)m.names[0].fence_writes[RLK_FENCE_ACCEPTED], 1);
    CHECK_INT_EQ((long long)m.names[0].fence_writes[RLK_FENCE_REFUSED], 2);
    /* Both together, as an exposition of one process. */
    rlk_metrics_add(&m, &bm);
    CHECK_INT_EQ((long long)m.fence_writes[RLK_FENCE_ACCEPTED], 4);
    CHECK_INT_EQ((long long)m.names[0].fence_writes[RLK_FENCE_REFUSED], 3);
    REQUIRE((buf = at_metrics_text(&m, RLK_METRICS_PROMETHEUS, &ret)) != NULL);
    CHECK_INT_EQ(ret, RLK_OK);
    CHECK_STR_CONTAINS(buf, "\nrlk_fence_writes_total{result=\"accepted\"} 4\n");
    CHECK_STR_CONTAINS(buf, "\nrlk_fence_writes_total{result=\"refused\"} 3\n");
    CHECK_STR_CONTAINS(buf, "\nrlk_name_fence_writes_total{name=\"{am}:fence\",result=\"accepted\"} 3\n");
    CHECK_STR_CONTAINS(buf, "\nrlk_name_fence_writes_total{name=\"{am}:fence\",result=\"refused\"} 3\n");
    CHECK(at_write_text(out, buf));
    free(buf);
    REQUIRE((buf = at_metrics_text(&m, RLK_METRICS_JSON, &ret)) != NULL);
    CHECK_INT_EQ(ret, RLK_OK);
    CHECK_STR_CONTAINS(buf, "\"rlk_fence_writes_total:result=accepted\":4");
    CHECK_STR_CONTAINS(buf, "\"fence_writes\":{\"accepted\":3,\"refused\":3}");
    free(buf);
    /* Recording off: nothing counted. */
    REQUIRE(rlk_async_metrics_set_enabled(c.ac, 0) == RLK_OK);
    REQUIRE(fw(&c, &x, "set", "{am}:fence", "{am}:d", 9, 1, v, NULL));
    CHECK_INT_EQ(x.err, RLK_OK);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    CHECK_INT_EQ((long long)m.fence_writes[RLK_FENCE_ACCEPTED], 1);
    cl_close(&c);
    rlk_free(bc);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- cluster */

static void cluster(void)
{
    cl c = {NULL, NULL};
    fres x;
    char fence[64], data[64], buf[64];
    const char *v[] = {"v"};
    int owners = 0, seen[RLK_FX_CLUSTER_NODES] = {0};

    REQUIRE(cl_open(&c) == RLK_OK);
    /* Tags until three different masters own one each. */
    for (int i = 0; i < 64 && owners < 3; i++) {
        int o;

        snprintf(fence, sizeof fence, "{acl%d}:fence", i);
        snprintf(data, sizeof data, "{acl%d}:d", i);
        o = rlk_fx_cluster_key_owner(&fcl, fence);
        REQUIRE(o >= 0);
        if (seen[o])
            continue;
        seen[o] = 1;
        owners++;
        REQUIRE(fw(&c, &x, "set", fence, data, 20, 1, v, NULL));
        CHECKF(x.err == RLK_OK, "%s: %d %s", fence, x.err, x.errstr);
        CHECK_STR_EQ(sget(&fcl.node[o], data, buf, sizeof buf), "v");
        CHECK_STR_EQ(sget(&fcl.node[o], fence, buf, sizeof buf), "20");
        REQUIRE(fw(&c, &x, "del", fence, data, 19, 0, NULL, NULL));
        CHECKF(x.err == RLK_ERR_FENCED && x.value == 20, "%s stale: %d %s", fence, x.err, x.errstr);
        CHECK_STR_EQ(sget(&fcl.node[o], data, buf, sizeof buf), "v");
    }
    CHECK_INT_EQ(owners, 3);
    /* Keys in two slots: refused before any call, as the blocking call refuses them. */
    REQUIRE(fw(&c, &x, "set", "{acl0}:fence", "{zz-other}:d", 30, 1, v, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    CHECK_STR_CONTAINS(x.errstr, "CROSSSLOT");
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* rlk_async_fence_claim's callback: the outcome into an at_fres. */
static void on_claim(rlk_async *ac, const rlk_async_result *r, void *p)
{
    at_fres *x = p;

    (void)ac;
    x->calls++;
    x->err = r->err;
    x->value = r->value;
    snprintf(x->errstr, sizeof x->errstr, "%s", r->errstr ? r->errstr : "");
}

static int fclaim(cl *c, fres *x, uint64_t token, int n, const char *const *fences)
{
    memset(x, 0, sizeof *x);
    x->rtype = -1;
    if (!REQ(rlk_async_fence_claim(c->ac, token, n, fences, on_claim, x)))
        return 0;
    return aloop_run_until(c->l, fres_done, x, 12000);
}

static void claim(void)
{
    cl c = {NULL, NULL};
    fres x;
    char buf[64];
    const char *fences[] = {"{ac1}:fence", "{ac2}:fence"}, *v[] = {"v"}, *bad[] = {""};
    rlk_client *b;
    uint64_t highest = 0;

    REQUIRE(cl_open(&c) == RLK_OK);
    REQUIRE(fclaim(&c, &x, 50, 2, fences));
    CHECKF(x.err == RLK_OK && x.value == 50, "claim: %d %s (%lld)", x.err, x.errstr, x.value);
    CHECK_STR_EQ(sget(&srv, "{ac1}:fence", buf, sizeof buf), "50");
    CHECK_STR_EQ(sget(&srv, "{ac2}:fence", buf, sizeof buf), "50");
    /* a stale holder is refused at a fence the claimer has not written */
    REQUIRE(fw(&c, &x, "set", "{ac2}:fence", "{ac2}:d", 49, 1, v, NULL));
    CHECK_INT_EQ(x.err, RLK_ERR_FENCED);
    CHECK_INT_EQ(sint(&srv, "EXISTS %s", "{ac2}:d"), 0);
    /* the claimer itself passes, and may claim again (idempotent) */
    REQUIRE(fw(&c, &x, "set", "{ac2}:fence", "{ac2}:d", 50, 1, v, NULL));
    CHECK_INT_EQ(x.err, RLK_OK);
    REQUIRE(fclaim(&c, &x, 50, 2, fences));
    CHECK_INT_EQ(x.err, RLK_OK);
    /* a stale claim: refused at the first fence, named */
    REQUIRE(fclaim(&c, &x, 45, 2, fences));
    CHECKF(x.err == RLK_ERR_FENCED && x.value == 50, "stale claim: %d %s (%lld)", x.err,
           x.errstr, x.value);
    CHECK_STR_CONTAINS(x.errstr, "{ac1}:fence");
    REQUIRE(fclaim(&c, &x, 45, 0, fences));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fclaim(&c, &x, 45, 1, bad));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    REQUIRE(fclaim(&c, &x, 0, 2, fences));
    CHECK_INT_EQ(x.err, RLK_ERR_ARG);
    CHECK_INT_EQ(rlk_async_pending(c.ac), 0);
    cl_close(&c);
    /* The blocking call: the same. */
    b = rlk_connect_url(url);
    REQUIRE(b && rlk_err(b) == RLK_OK);
    CHECK_INT_EQ(rlk_fence_claim(b, 60, 2, fences, &highest), RLK_OK);
    CHECK_STR_EQ(sget(&srv, "{ac1}:fence", buf, sizeof buf), "60");
    CHECK_STR_EQ(sget(&srv, "{ac2}:fence", buf, sizeof buf), "60");
    CHECK_INT_EQ(rlk_fence_claim(b, 55, 2, fences, &highest), RLK_ERR_FENCED);
    CHECK(highest == 60);
    CHECK_STR_CONTAINS(rlk_errstr(b), "{ac1}:fence");
    CHECK_INT_EQ(rlk_fence_claim(b, 55, 0, fences, NULL), RLK_ERR_ARG);
    rlk_free(b);
    CHECK_INT_EQ(rule_breaks, 0);
}

static const at_case cases[] = {
    {"write", write_ops}, {"stale", stale}, {"args", args}, {"replica", replica},
    {"lost", lost},       {"procs", procs}, {"metrics", metrics}, {"sentinel", sentinel},
    {"claim", claim},
};

int main(int argc, char **argv)
{
    const char *want = argc > 1 ? argv[1] : "all";

    if (strcmp(want, "cluster") == 0) {
        signal(SIGPIPE, SIG_IGN);
        if (rlk_fx_cluster_start(&fcl) != 0) {
            fprintf(stderr, "async_fence: the cluster did not start\n");
            return 1;
        }
        at_cluster_url(&fcl, url, sizeof url);
        printf("async_fence (%s) on %s\n", aloop_name(), url);
        check_run("cluster", cluster);
        rlk_fx_cluster_stop(&fcl);
        return check_summary("async_fence");
    }
    return AT_MAIN("async_fence", cases, want, NULL, &srv, url);
}
