/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_elect.c - the non-blocking API's leader election and its newer
 * lock kinds (rlk_async_elect_*, rlk_async_lock_nr, rlk_async_lock_spin),
 * on the poll loop (aloop.h), each case against its own redis-server.
 *
 *   rlk_async_elect <case>|all
 *
 * As in async_cases.c, every request's callback is checked to come exactly
 * once, never from inside the call that made the request, never after
 * rlk_async_free returned.
 */
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "fixture.h"
#include "holdlog.h"
#include "aloop.h"
#include "async_procs.h"
#include "async_test.h"
#include "async_names.h"
#include "tk_util.h"
#include "rlk.h"
#include "rlk_async.h"
#include "engine/ae_wd.h"     /* rlk_ae_wd_no_deadline: the loss deadline's control */

static rlk_fx_server srv;
static char url[512];

#define cl_close ap_cl_close
typedef ap_cl cl;

static int cl_open_opts(cl *c, long long watchdog_ms, long long margin_ms)
{
    return ap_cl_open(c, url, watchdog_ms, margin_ms, 2000);
}

static int cl_open(cl *c, long long watchdog_ms)
{
    return cl_open_opts(c, watchdog_ms, 0);
}

static long long srv_int(const char *fmt, const char *arg)
{
    return ap_srv_int(&srv, fmt, arg);
}

/* The async holder id of task on c. */
static void owner_of(cl *c, unsigned long long task, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%llu", rlk_async_uuid(c->ac), task);
}

/* ---------------------------------------------------------------- the election */

/* Campaign, term, a second campaign (its term, nothing sent), another
 * candidate turned away, proclaim, resign, the record, bad arguments. */
static void elect_basic(void)
{
    cl c;
    res a = {0}, b = {0}, busy = {0}, o = {0}, p = {0}, np = {0}, rs = {0}, rs2 = {0};
    res bad = {0}, bad2 = {0};
    char owner[256], big[65538];
    long long term = 0, calls;

    REQUIRE(cl_open(&c, 0) == RLK_OK);
    owner_of(&c, 1, owner, sizeof owner);
    CHECK_INT_EQ(rlk_async_elect_term(c.ac, "a:el", 1, &term), RLK_ERR_NOT_OWNER);
    REQ(rlk_async_elect_campaign(c.ac, "a:el", 1, "host-a", 0, 30000, on_res, &a));
    CHECK(a.calls == 0);
    REQUIRE(wait_res(&c, &a, 5000));
    CHECK_INT_EQ(a.err, RLK_OK);
    CHECKF(a.value > 0, "term %lld", a.value);
    CHECK_INT_EQ(rlk_async_elect_term(c.ac, "a:el", 1, &term), RLK_OK);
    CHECK_INT_EQ(term, a.value);
    CHECK_INT_EQ(srv_int("HLEN %s", "a:el"), 1);
    /* Leading already: its term, no script call. */
    calls = tk_script_calls(&srv);
    REQ(rlk_async_elect_campaign(c.ac, "a:el", 1, "host-a", 0, 30000, on_res, &b));
    REQUIRE(wait_res(&c, &b, 5000));
    CHECK_INT_EQ(b.err, RLK_OK);
    CHECK_INT_EQ(b.value, a.value);
    CHECK_INT_EQ(tk_script_calls(&srv), calls);
    REQ(rlk_async_elect_campaign(c.ac, "a:el", 2, "host-b", 0, 30000, on_res, &busy));
    REQUIRE(wait_res(&c, &busy, 5000));
    CHECK_INT_EQ(busy.err, RLK_ERR_BUSY);
    /* The record as an observer reads it. */
    REQ(rlk_async_elect_observe(c.ac, "a:el", NULL, -1, on_info, &o));
    REQUIRE(wait_res(&c, &o, 5000));
    REQUIRE(o.err == RLK_OK && o.has_info);
    CHECK_INT_EQ(o.info.leader, 1);
    CHECK_INT_EQ(o.info.term, a.value);
    CHECK_STR_EQ(o.info.holder, owner);
    CHECK_STR_EQ(o.info.value, "host-a");
    CHECKF(o.info.ttl_ms > 0 && o.info.ttl_ms <= 30000, "ttl %lld", o.info.ttl_ms);
    /* Proclaim: the leader only. */
    REQ(rlk_async_elect_proclaim(c.ac, "a:el", 1, "host-a:9090", on_res, &p));
    REQ(rlk_async_elect_proclaim(c.ac, "a:el", 2, "host-b:9090", on_res, &np));
    REQUIRE(wait_res(&c, &p, 5000));
    REQUIRE(wait_res(&c, &np, 5000));
    CHECK_INT_EQ(p.err, RLK_OK);
    CHECK_INT_EQ(p.value, a.value);
    CHECK_INT_EQ(np.err, RLK_ERR_NOT_OWNER);
    res_clear(&o);
    REQ(rlk_async_elect_observe(c.ac, "a:el", NULL, -1, on_info, &o));
    REQUIRE(wait_res(&c, &o, 5000));
    REQUIRE(o.has_info);
    CHECK_STR_EQ(o.info.value, "host-a:9090");
    /* Resign: the leader only; the record keeps the term. */
    REQ(rlk_async_elect_resign(c.ac, "a:el", 2, on_res, &rs2));
    REQUIRE(wait_res(&c, &rs2, 5000));
    CHECK_INT_EQ(rs2.err, RLK_ERR_NOT_OWNER);
    REQ(rlk_async_elect_resign(c.ac, "a:el", 1, on_res, &rs));
    REQUIRE(wait_res(&c, &rs, 5000));
    CHECK_INT_EQ(rs.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", "a:el"), 0);
    CHECK_INT_EQ(rlk_async_elect_term(c.ac, "a:el", 1, &term), RLK_ERR_NOT_OWNER);
    res_clear(&o);
    REQ(rlk_async_elect_observe(c.ac, "a:el", NULL, -1, on_info, &o));
    REQUIRE(wait_res(&c, &o, 5000));
    REQUIRE(o.has_info);
    CHECK_INT_EQ(o.info.leader, 0);
    CHECK_INT_EQ(o.info.term, a.value);
    memset(&p, 0, sizeof p);
    REQ(rlk_async_elect_proclaim(c.ac, "a:el", 1, "late", on_res, &p));
    REQUIRE(wait_res(&c, &p, 5000));
    CHECK_INT_EQ(p.err, RLK_ERR_NOT_OWNER);
    /* The next leader's term is larger. */
    memset(&b, 0, sizeof b);
    REQ(rlk_async_elect_campaign(c.ac, "a:el", 2, NULL, 0, 30000, on_res, &b));
    REQUIRE(wait_res(&c, &b, 5000));
    CHECK_INT_EQ(b.err, RLK_OK);
    CHECKF(b.value > a.value, "term %lld after %lld", b.value, a.value);
    /* Bad arguments: completed on a later turn, nothing changed. */
    memset(big, 'v', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    REQ(rlk_async_elect_campaign(c.ac, "a:el2", 1, big, 0, 30000, on_res, &bad));
    REQ(rlk_async_elect_campaign(c.ac, "", 1, "x", 0, 30000, on_res, &bad2));
    CHECK(bad.calls == 0 && bad2.calls == 0);
    REQUIRE(wait_res(&c, &bad, 5000));
    REQUIRE(wait_res(&c, &bad2, 5000));
    CHECK_INT_EQ(bad.err, RLK_ERR_ARG);
    CHECK_INT_EQ(bad2.err, RLK_ERR_ARG);
    CHECK_INT_EQ(srv_int("EXISTS %s", "a:el2"), 0);
    res_clear(&o);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* An observer told of each change: a campaign, a proclaim, a resign, a
 * fixed lease running out (nothing published); its timeout and cancel. */
static void elect_observe(void)
{
    cl c, w;
    res now = {0}, ch = {0}, lead = {0}, p = {0}, rs = {0}, to = {0}, cx = {0};
    rlk_elect_info known;
    long long t0;

    REQUIRE(cl_open(&c, 0) == RLK_OK);
    REQUIRE(cl_open(&w, 0) == RLK_OK);
    REQ(rlk_async_elect_observe(w.ac, "a:elo", NULL, -1, on_info, &now));
    REQUIRE(wait_res(&w, &now, 5000));
    REQUIRE(now.has_info);
    CHECK_INT_EQ(now.info.leader, 0);
    /* A change from another client: the campaign. */
    REQ(rlk_async_elect_observe(w.ac, "a:elo", &now.info, 10000, on_info, &ch));
    aloop_run_until(w.l, NULL, NULL, 200);      /* subscribed, read: no change yet */
    CHECK_INT_EQ(ch.calls, 0);
    REQ(rlk_async_elect_campaign(c.ac, "a:elo", 1, "v1", 0, 1000, on_res, &lead));
    REQUIRE(wait_res(&c, &lead, 5000));
    REQUIRE(lead.err == RLK_OK);
    REQUIRE(wait_res(&w, &ch, 5000));
    REQUIRE(ch.has_info);
    CHECK_INT_EQ(ch.info.leader, 1);
    CHECK_INT_EQ(ch.info.term, lead.value);
    CHECK_STR_EQ(ch.info.value, "v1");
    /* The proclaim. */
    known = ch.info;
    ch.has_info = 0;
    memset(&ch, 0, sizeof ch);
    REQ(rlk_async_elect_observe(w.ac, "a:elo", &known, 10000, on_info, &ch));
    aloop_run_until(w.l, NULL, NULL, 100);
    REQ(rlk_async_elect_proclaim(c.ac, "a:elo", 1, "v2", on_res, &p));
    REQUIRE(wait_res(&c, &p, 5000));
    REQUIRE(wait_res(&w, &ch, 5000));
    REQUIRE(ch.has_info);
    CHECK_STR_EQ(ch.info.value, "v2");
    CHECK_INT_EQ(ch.info.term, lead.value);
    /* The fixed lease (1 s) runs out: no message, the observer reads at its end. */
    rlk_elect_info_clear(&known);
    known = ch.info;
    memset(&ch, 0, sizeof ch);
    t0 = rlk_fx_now_ms();
    REQ(rlk_async_elect_observe(w.ac, "a:elo", &known, 10000, on_info, &ch));
    REQUIRE(wait_res(&w, &ch, 5000));
    REQUIRE(ch.err == RLK_OK && ch.has_info);
    CHECK_INT_EQ(ch.info.leader, 0);
    CHECKF(ch.at_ms - t0 < 2500, "lease end seen after %lld ms (lease 1000)", ch.at_ms - t0);
    /* Nothing changes: the timeout. */
    rlk_elect_info_clear(&known);
    known = ch.info;
    memset(&ch, 0, sizeof ch);
    REQ(rlk_async_elect_observe(w.ac, "a:elo", &known, 300, on_info, &to));
    REQUIRE(wait_res(&w, &to, 5000));
    CHECK_INT_EQ(to.err, RLK_ERR_TIMEOUT);
    /* A resign, seen by an observer of the new leader; and a cancelled observer. */
    memset(&lead, 0, sizeof lead);
    REQ(rlk_async_elect_campaign(c.ac, "a:elo", 1, "v3", 0, 30000, on_res, &lead));
    REQUIRE(wait_res(&c, &lead, 5000));
    REQUIRE(lead.err == RLK_OK);
    res_clear(&now);
    REQ(rlk_async_elect_observe(w.ac, "a:elo", NULL, -1, on_info, &now));
    REQUIRE(wait_res(&w, &now, 5000));
    REQUIRE(now.has_info && now.info.leader == 1);
    REQ(rlk_async_elect_observe(w.ac, "a:elo", &now.info, -1, on_info, &ch));
    rlk_async_cancel(REQ(rlk_async_elect_observe(w.ac, "a:elo", &now.info, -1, on_info, &cx)));
    aloop_run_until(w.l, NULL, NULL, 100);
    REQ(rlk_async_elect_resign(c.ac, "a:elo", 1, on_res, &rs));
    REQUIRE(wait_res(&c, &rs, 5000));
    CHECK_INT_EQ(rs.err, RLK_OK);
    REQUIRE(wait_res(&w, &ch, 5000));
    REQUIRE(ch.has_info);
    CHECK_INT_EQ(ch.info.leader, 0);
    CHECK_INT_EQ(ch.info.term, lead.value);
    REQUIRE(wait_res(&w, &cx, 5000));
    CHECK_INT_EQ(cx.err, RLK_ERR_CANCELLED);
    CHECK_INT_EQ(rlk_async_pending(w.ac), 0);
    rlk_elect_info_clear(&known);
    res_clear(&now);
    res_clear(&ch);
    cl_close(&w);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- candidates in processes */

#define EP_PROCS 4
#define EP_TERMS 8          /* terms each candidate leads */
#define EP_HOLD_NS 3000000LL

typedef struct ep_cand {
    cl c;
    const char *name;
    int fd;
    int led;
    int resigned;
    int fails;
    long long term;
} ep_cand;

static void ep_campaign(ep_cand *e);

static void ep_resigned(rlk_async *ac, const rlk_async_result *r, void *p)
{
    ep_cand *e = p;

    (void)ac;
    if (r->err != RLK_OK) {
        fprintf(stderr, "ep: resign of %s: %d %s\n", e->name, r->err, r->errstr);
        e->fails++;
    }
    e->resigned++;
    ep_campaign(e);
}

/* Elected: act as leader (a hold stamped with the term), then resign. */
static void ep_elected(rlk_async *ac, const rlk_async_result *r, void *p)
{
    ep_cand *e = p;
    long long s, t = 0;

    if (r->err != RLK_OK) {
        fprintf(stderr, "ep: campaign of %s: %d %s\n", e->name, r->err, r->errstr);
        e->fails++;
        e->led = e->resigned = EP_TERMS;
        return;
    }
    if (rlk_async_elect_term(ac, e->name, 1, &t) != RLK_OK || t != r->value) {
        fprintf(stderr, "ep: %s: term %lld recorded, campaign said %lld\n", e->name, t, r->value);
        e->fails++;     /* the term the client records is the campaign's */
    }
    s = tk_mono_ns();
    tk_hold_begin(e->fd, 1, e->led, TK_HOLD_EXCL, 0, s, r->value);
    tk_spin_ns(EP_HOLD_NS);
    tk_hold_end(e->fd, 1, e->led, tk_mono_ns());
    e->led++;
    rlk_async_elect_resign(ac, e->name, 1, ep_resigned, e);
}

static void ep_campaign(ep_cand *e)
{
    if (e->led < EP_TERMS)
        rlk_async_elect_campaign(e->c.ac, e->name, 1, "candidate", 30000, -1, ep_elected, e);
}

static int ep_done(void *p)
{
    return ((ep_cand *)p)->resigned >= EP_TERMS;
}

static int ep_child(const char *name, const char *log)
{
    ep_cand e;

    memset(&e, 0, sizeof e);
    e.name = name;
    if ((e.fd = tk_holdlog_open(log)) < 0 || cl_open(&e.c, 1000) != RLK_OK)
        return 3;
    ep_campaign(&e);
    if (!aloop_run_until(e.c.l, ep_done, &e, 120000))
        return 4;
    cl_close(&e.c);
    return e.fails ? 5 : 0;
}

/* EP_PROCS candidates, each its own process; own_names: each on a name of
 * its own (the control: the check must see their overlaps). */
static void ep_run(const char *name, int own_names, tk_hold_report *rep)
{
    char dir[] = "/tmp/rlk-async-ep-XXXXXX", logs[EP_PROCS][320], names[EP_PROCS][64];
    const char *paths[EP_PROCS];
    pid_t pids[EP_PROCS];
    tk_hold *holds = NULL;
    size_t n = 0;
    char line[256];

    memset(rep, 0, sizeof *rep);
    REQUIREF(mkdtemp(dir) != NULL, "mkdtemp");
    fflush(NULL);
    for (int i = 0; i < EP_PROCS; i++) {
        snprintf(logs[i], sizeof logs[i], "%s/p%d.log", dir, i);
        snprintf(names[i], sizeof names[i], "%s%s%d", name, own_names ? ":" : "",
                 own_names ? i : 0);
        if (!own_names)
            snprintf(names[i], sizeof names[i], "%s", name);
        paths[i] = logs[i];
        pids[i] = fork();
        REQUIREF(pids[i] >= 0, "fork");
        if (pids[i] == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            _exit(ep_child(names[i], logs[i]));
        }
    }
    for (int i = 0; i < EP_PROCS; i++) {
        int st = 0;

        waitpid(pids[i], &st, 0);
        CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "candidate %d status %d", i, st);
    }
    tk_holds_read(paths, EP_PROCS, -1, &holds, &n, NULL);
    *rep = tk_holds_check(holds, n, !own_names);
    printf("elect_procs%s: %s\n", own_names ? " (control, a name each)" : "",
           tk_hold_report_str(rep, line, sizeof line));
    free(holds);
    for (int i = 0; i < EP_PROCS; i++)
        unlink(logs[i]);
    rmdir(dir);
}

/* Candidates in separate processes, each leading EP_TERMS terms: never two
 * leaders at once, each acting leader's term larger than every earlier
 * one's. The control (a name per candidate) must show overlaps, or the
 * check could not see one. */
static void elect_procs(void)
{
    tk_hold_report one, ctl;

    ep_run("a:elp", 0, &one);
    ep_run("a:elpc", 1, &ctl);

    CHECK_INT_EQ((long long)one.holds, EP_PROCS * EP_TERMS);
    CHECK_INT_EQ(one.conflicts, 0);
    CHECK_INT_EQ(one.regressions, 0);
    CHECK_INT_EQ(one.peak, 1);
    CHECK_INT_EQ((long long)ctl.holds, EP_PROCS * EP_TERMS);
    CHECKF(ctl.conflicts > 0 && ctl.peak > 1, "control (a name each): %ld conflicts, peak %d",
           ctl.conflicts, ctl.peak);
}

/* A leader in another process, renewed by its watchdog (lease 1 s), then
 * kill -9: an observer sees the leadership end at the lease's end, and the
 * next campaign is elected with a larger term. */
static void elect_kill(void)
{
    int pfd[2];
    pid_t pid;
    cl c;
    res busy = {0}, now = {0}, ch = {0}, next = {0};
    long long t_kill, led = 0;
    char buf[64] = {0};
    struct pollfd pf;

    REQUIRE(pipe(pfd) == 0);
    fflush(NULL);
    pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        cl k;
        res r = {0};
        int len;

        close(pfd[0]);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (cl_open(&k, 1000) != RLK_OK)
            _exit(3);
        rlk_async_elect_campaign(k.ac, "a:elk", 1, "doomed", 0, -1, on_res, &r);
        if (!wait_res(&k, &r, 10000) || r.err != RLK_OK)
            _exit(4);
        len = snprintf(buf, sizeof buf, "%lld\n", r.value);
        if (write(pfd[1], buf, (size_t)len) != len)
            _exit(5);
        for (int i = 0; i < 120; i++)
            aloop_run_until(k.l, NULL, NULL, 1000);     /* renews until killed */
        _exit(6);
    }
    close(pfd[1]);
    pf.fd = pfd[0];
    pf.events = POLLIN;
    REQUIREF(poll(&pf, 1, 15000) == 1 && read(pfd[0], buf, sizeof buf - 1) > 0,
             "the leader process did not say it leads");
    close(pfd[0]);
    led = atoll(buf);
    REQUIRE(led > 0);
    REQUIRE(cl_open(&c, 0) == RLK_OK);
    /* Past its lease (1 s): still leading, the watchdog renews it. */
    aloop_run_until(c.l, NULL, NULL, 1600);
    REQ(rlk_async_elect_campaign(c.ac, "a:elk", 2, "next", 0, 30000, on_res, &busy));
    REQUIRE(wait_res(&c, &busy, 5000));
    CHECK_INT_EQ(busy.err, RLK_ERR_BUSY);
    REQ(rlk_async_elect_observe(c.ac, "a:elk", NULL, -1, on_info, &now));
    REQUIRE(wait_res(&c, &now, 5000));
    REQUIRE(now.has_info && now.info.leader == 1 && now.info.term == led);
    REQ(rlk_async_elect_observe(c.ac, "a:elk", &now.info, 10000, on_info, &ch));
    aloop_run_until(c.l, NULL, NULL, 100);
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    t_kill = rlk_fx_now_ms();
    REQ(rlk_async_elect_campaign(c.ac, "a:elk", 2, "next", 10000, 30000, on_res, &next));
    REQUIRE(wait_res(&c, &ch, 8000));
    REQUIRE(ch.err == RLK_OK && ch.has_info);
    CHECKF(ch.info.leader == 0 || ch.info.term > led, "observer after the kill: leader %d term "
           "%lld (killed leader's %lld)", ch.info.leader, ch.info.term, led);
    REQUIRE(wait_res(&c, &next, 12000));
    CHECK_INT_EQ(next.err, RLK_OK);
    CHECKF(next.value > led, "term %lld after the killed leader's %lld", next.value, led);
    CHECKF(next.at_ms - t_kill < 3000, "elected %lld ms after the kill (lease 1000)",
           next.at_ms - t_kill);
    res_clear(&now);
    res_clear(&ch);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- losing leadership */

/* A leader (watchdog lease 1.5 s, lost margin 300 ms) whose server stops
 * answering is told RLK_LOST_EXPIRED before its lease can have run out on
 * the server (the blocking watchdog's deadline), and no longer leads in
 * this client. With RLK_TEST_NO_LOSS_DEADLINE set the deadline is off and
 * the case must fail (its control, a ctest of its own). */
static void elect_lost(void)
{
    const long long lease = 1500, margin = 300;
    cl c;
    res h = {0};
    char owner[256];
    long long t_q, pttl, t_stop, term;
    int got;

    REQUIRE(cl_open_opts(&c, lease, margin) == RLK_OK);
    owner_of(&c, 1, owner, sizeof owner);
    lost_calls = 0;
    rlk_async_set_lost_callback(c.ac, on_lost, NULL);
    REQ(rlk_async_elect_campaign(c.ac, "a:ell", 1, "x", 0, -1, on_res, &h));
    REQUIRE(wait_res(&c, &h, 5000));
    REQUIRE(h.err == RLK_OK);
    aloop_run_until(c.l, NULL, NULL, 1200);     /* renewed at least twice */
    CHECK_INT_EQ(lost_calls, 0);
    t_q = rlk_fx_now_ms();
    pttl = srv_int("PTTL %s", "a:ell");
    REQUIRE(pttl > 0);
    REQUIRE(rlk_fx_pause(&srv) == 0);
    t_stop = rlk_fx_now_ms();
    got = aloop_run_until(c.l, lost_done, NULL, lease + 3000);
    CHECK(rlk_fx_resume(&srv) == 0);
    CHECKF(got, "no lost report within %lld ms of the stop (lease %lld ms)", lease + 3000, lease);
    if (got) {
        printf("  leader told RLK_LOST_EXPIRED %lld ms after the stop, %lld ms before the "
               "lease's earliest end\n", lost_at - t_stop, t_q + pttl - lost_at);
        CHECK_INT_EQ(lost_reason, RLK_LOST_EXPIRED);
        CHECK_INT_EQ(lost_kind, RLK_KIND_FENCED);
        CHECK_STR_EQ(lost_name, "a:ell");
        CHECK_STR_EQ(lost_owner, owner);
        CHECKF(lost_at < t_q + pttl, "reported at +%lld ms, the lease may end at +%lld ms",
               lost_at - t_q, pttl);
        CHECK_INT_EQ(lost_calls, 1);
        CHECK_INT_EQ(rlk_async_elect_term(c.ac, "a:ell", 1, &term), RLK_ERR_NOT_OWNER);
    }
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* The lock taken from under the leader (DEL): RLK_LOST_GONE at its next
 * renewal, never re-created; proclaim refused. */
static void elect_gone(void)
{
    cl c;
    res h = {0}, p = {0};
    long long term;

    REQUIRE(cl_open(&c, 900) == RLK_OK);
    lost_calls = 0;
    rlk_async_set_lost_callback(c.ac, on_lost, NULL);
    REQ(rlk_async_elect_campaign(c.ac, "a:elg", 1, "x", 0, -1, on_res, &h));
    REQUIRE(wait_res(&c, &h, 5000));
    REQUIRE(h.err == RLK_OK);
    CHECK(srv_int("DEL %s", "a:elg") == 1);
    REQUIRE(aloop_run_until(c.l, lost_done, NULL, 5000));
    CHECK_INT_EQ(lost_reason, RLK_LOST_GONE);
    CHECK_INT_EQ(lost_kind, RLK_KIND_FENCED);
    CHECK_INT_EQ(rlk_async_elect_term(c.ac, "a:elg", 1, &term), RLK_ERR_NOT_OWNER);
    REQ(rlk_async_elect_proclaim(c.ac, "a:elg", 1, "y", on_res, &p));
    REQUIRE(wait_res(&c, &p, 5000));
    CHECK_INT_EQ(p.err, RLK_ERR_NOT_OWNER);
    aloop_run_until(c.l, NULL, NULL, 700);
    CHECK_INT_EQ(srv_int("EXISTS %s", "a:elg"), 0);     /* not re-created */
    CHECK_INT_EQ(lost_calls, 1);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* ---------------------------------------------------------------- non-reentrant and spin */

/* kind's non-reentrant lock: the holder's second acquire refused (from the
 * table, and by the script for the same holder id in a blocking client),
 * nothing counted; a waiter served by the unlock; the blocking API's
 * non-reentrant handle sees the same data. */
static void nr_one(int kind, const char *name)
{
    cl c;
    res a = {0}, again = {0}, busy = {0}, w = {0}, u = {0}, u2 = {0};
    char owner[256];
    rlk_client *bc;
    int rc;

    REQUIRE(cl_open(&c, 0) == RLK_OK);
    owner_of(&c, 1, owner, sizeof owner);
    REQ(rlk_async_lock_nr(c.ac, kind, name, 1, 0, 30000, on_res, &a));
    REQUIRE(wait_res(&c, &a, 5000));
    CHECK_INT_EQ(a.err, RLK_OK);
    CHECK_INT_EQ(a.value, 1);
    REQ(rlk_async_lock_nr(c.ac, kind, name, 1, 1000, 30000, on_res, &again));
    REQUIRE(wait_res(&c, &again, 5000));
    CHECK_INT_EQ(again.err, RLK_ERR_REENTRY);
    CHECKF(strstr(again.errstr, "already held") != NULL, "%s", again.errstr);
    {
        redisReply *r = rlk_fx_command(&srv, "HGET %s %s", name, owner);

        CHECKF(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "1") == 0,
               "hold count on the server after the refused re-entry");
        if (r)
            freeReplyObject(r);
    }
    /* The script refuses the same holder id too (a blocking handle with the async owner). */
    REQUIRE((bc = rlk_connect_url(url)) != NULL);
    if (kind == RLK_KIND_LOCK) {
        rlk_nrlock *l = rlk_nrlock_new(bc, name);

        REQUIRE(l && rlk_nrlock_set_owner(l, owner) == RLK_OK);
        rc = rlk_nrlock_try_lock(l, 0, 30000);
        rlk_nrlock_free(l);
    } else {
        rlk_fairlock *f = rlk_fairlock_new(bc, name);

        REQUIRE(f && rlk_fairlock_set_owner(f, owner) == RLK_OK &&
                rlk_fairlock_set_non_reentrant(f, 1) == RLK_OK);
        rc = rlk_fairlock_try_lock(f, 0, 30000);
        rlk_fairlock_free(f);
    }
    CHECK_INT_EQ(rc, RLK_ERR_REENTRY);
    rlk_free(bc);
    REQ(rlk_async_lock_nr(c.ac, kind, name, 2, 0, 30000, on_res, &busy));
    REQUIRE(wait_res(&c, &busy, 5000));
    CHECK_INT_EQ(busy.err, RLK_ERR_BUSY);
    REQ(rlk_async_lock_nr(c.ac, kind, name, 2, 10000, 30000, on_res, &w));
    aloop_run_until(c.l, NULL, NULL, 200);
    CHECK_INT_EQ(w.calls, 0);
    REQ(rlk_async_unlock(c.ac, kind, name, 1, on_res, &u));
    REQUIRE(wait_res(&c, &u, 5000));
    CHECK_INT_EQ(u.err, RLK_OK);
    REQUIRE(wait_res(&c, &w, 5000));
    CHECK_INT_EQ(w.err, RLK_OK);
    REQ(rlk_async_unlock(c.ac, kind, name, 2, on_res, &u2));
    REQUIRE(wait_res(&c, &u2, 5000));
    CHECK_INT_EQ(u2.err, RLK_OK);
    CHECK_INT_EQ(srv_int("EXISTS %s", name), 0);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

static void nr_basic(void)
{
    res bad = {0};
    cl c;

    nr_one(RLK_KIND_LOCK, "a:nr");
    nr_one(RLK_KIND_FAIR, "a:nrf");
    REQUIRE(cl_open(&c, 0) == RLK_OK);
    REQ(rlk_async_lock_nr(c.ac, RLK_KIND_FENCED, "a:nrx", 1, 0, 1000, on_res, &bad));
    REQUIRE(wait_res(&c, &bad, 5000));
    CHECK_INT_EQ(bad.err, RLK_ERR_ARG);
    cl_close(&c);
}

/* The spin lock: a waiter that never subscribes, served after the holder's
 * unlock by its back-off; the same data as the reentrant lock (re-entry
 * counted); bad bounds refused. */
static void spin_basic(void)
{
    cl c;
    res a = {0}, re = {0}, w = {0}, u1 = {0}, u2 = {0}, u3 = {0}, bad = {0}, bad2 = {0};
    redisReply *r;

    REQUIRE(cl_open(&c, 0) == RLK_OK);
    REQ(rlk_async_lock_spin(c.ac, "a:sp", 1, 0, 30000, 0, 0, on_res, &a));
    REQUIRE(wait_res(&c, &a, 5000));
    CHECK_INT_EQ(a.err, RLK_OK);
    REQ(rlk_async_lock_spin(c.ac, "a:sp", 1, 0, 30000, 0, 0, on_res, &re));
    REQUIRE(wait_res(&c, &re, 5000));
    CHECK_INT_EQ(re.err, RLK_OK);
    CHECK_INT_EQ(re.value, 2);
    REQ(rlk_async_lock_spin(c.ac, "a:sp", 2, 10000, 30000, 2, 50, on_res, &w));
    aloop_run_until(c.l, NULL, NULL, 300);
    CHECK_INT_EQ(w.calls, 0);
    /* No subscriber anywhere: the waiter polls. */
    r = rlk_fx_command(&srv, "PUBSUB NUMSUB redisson_lock__channel:{a:sp}");
    CHECK(r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
          r->element[1]->type == REDIS_REPLY_INTEGER && r->element[1]->integer == 0);
    if (r)
        freeReplyObject(r);
    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "a:sp", 1, on_res, &u1));
    REQUIRE(wait_res(&c, &u1, 5000));
    CHECK_INT_EQ(u1.value, 1);
    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "a:sp", 1, on_res, &u2));
    REQUIRE(wait_res(&c, &u2, 5000));
    CHECK_INT_EQ(u2.err, RLK_OK);
    REQUIRE(wait_res(&c, &w, 5000));
    CHECK_INT_EQ(w.err, RLK_OK);
    CHECKF(w.at_ms - u2.at_ms < 500, "served %lld ms after the unlock (back-off at most 50 ms)",
           w.at_ms - u2.at_ms);
    REQ(rlk_async_unlock(c.ac, RLK_KIND_LOCK, "a:sp", 2, on_res, &u3));
    REQUIRE(wait_res(&c, &u3, 5000));
    CHECK_INT_EQ(u3.err, RLK_OK);
    REQ(rlk_async_lock_spin(c.ac, "a:sp", 1, 0, 30000, 10, 5, on_res, &bad));
    REQ(rlk_async_lock_spin(c.ac, "a:sp", 1, 0, 30000, 1, 60001, on_res, &bad2));
    REQUIRE(wait_res(&c, &bad, 5000));
    REQUIRE(wait_res(&c, &bad2, 5000));
    CHECK_INT_EQ(bad.err, RLK_ERR_ARG);
    CHECK_INT_EQ(bad2.err, RLK_ERR_ARG);
    CHECK_INT_EQ(srv_int("EXISTS %s", "a:sp"), 0);
    cl_close(&c);
    CHECK_INT_EQ(rule_breaks, 0);
}

/* Mutual exclusion across processes: async processes (AP_TASKS tasks each)
 * and blocking ones on the non-reentrant lock, the non-reentrant fair lock
 * and the spin lock (async_procs.c): one merged history, no overlap. */
static void nr_procs(void)
{
    static const struct {
        int kind, variant;
        const char *name;
    } runs[] = {
        {RLK_KIND_LOCK, AP_NR, "a:nrx:lock"},
        {RLK_KIND_FAIR, AP_NR, "a:nrx:fair"},
        {RLK_KIND_LOCK, AP_SPIN, "a:nrx:spin"},
    };

    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        ap_run run = {.url = url, .kind = runs[i].kind, .variant = runs[i].variant,
                      .name = runs[i].name, .async_procs = 2, .blocking_procs = 1, .iters = 20,
                      .wait_ms = 30000, .cmd_timeout_ms = 2000};
        ap_result out;
        char line[256];

        REQUIRE(ap_contend(&run, &out) == 0);
        printf("nr_procs %s: %s, %ld async/blocking handoffs\n", runs[i].name,
               tk_hold_report_str(&out.rep, line, sizeof line), out.handoffs);
        CHECK_INT_EQ(out.child_failures, 0);
        CHECK_INT_EQ(out.bad_lines, 0);
        CHECK_INT_EQ((long long)out.rep.holds, out.expected);
        CHECK_INT_EQ(out.rep.conflicts, 0);
    }
}

/* ---------------------------------------------------------------- main */

static const at_case cases[] = {
    {"elect_basic", elect_basic},
    {"elect_observe", elect_observe},
    {"elect_procs", elect_procs},
    {"elect_kill", elect_kill},
    {"elect_lost", elect_lost},
    {"elect_gone", elect_gone},
    {"nr_basic", nr_basic},
    {"spin_basic", spin_basic},
    {"nr_procs", nr_procs},
};

int main(int argc, char **argv)
{
    if (getenv("RLK_TEST_NO_LOSS_DEADLINE"))    /* elect_lost's control: must fail */
        rlk_ae_wd_no_deadline = 1;
    return AT_MAIN("async_elect", cases, argc > 1 ? argv[1] : "all", NULL, &srv, url);
}
