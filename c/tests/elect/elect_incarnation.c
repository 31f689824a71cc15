/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elect_incarnation.c - a leadership is one incarnation, on both APIs, against a real server.
 *
 * One holder id in two processes (a pod name campaigning twice, rlk_elect_set_owner with the
 * same id): the leader (a child process, lease-less, watchdog lease 3 s) is stopped (SIGSTOP)
 * while its lock is taken from it (DEL: its lease ran out while it was stopped), and a second
 * process with the same id is elected with a fixed 2 s lease and exits (a leader that died).
 * The first is continued: its watchdog's next renewal must tell it RLK_LOST_GONE (it no longer
 * leads: rlk_elect_term refuses), and a third candidate must be elected once the dead leader's
 * lease ran out. Before the renewal named the term (fenced/renew checked the holder id alone)
 * the first renewed the second's leadership for as long as it lived: no loss reported, and the
 * third candidate got RLK_ERR_BUSY after its 10 s wait (renew_incarnation,
 * renew_incarnation_async: the leader on the blocking API, then on the loop).
 *
 * A leadership whose lease has passed is not the caller's: a fixed 300 ms lease ran out on the
 * server and another candidate was elected; the first's rlk_elect_term must refuse
 * (RLK_ERR_NOT_OWNER) and its second campaign must ask the server (RLK_ERR_BUSY), not answer
 * the old term with nothing sent, as both did before (lease_passed; lease_passed_async, where
 * the table already dropped a fixed lease at its end).
 *
 * The observer rides out a reconnect: rlk_elect_wait_change while the server is killed and
 * started again (400 ms down) sees the next leader elected after the restart; before, it
 * returned the read's RLK_ERR_IO (observer_reconnect).
 *
 *   rlk_elect_incarnation [case]
 */
#include "check.h"
#include "fixture.h"
#include "tk_util.h"
#include "aloop.h"
#include "async_procs.h"
#include "rlk.h"
#include "rlk_async.h"

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[256];

#define WD_LEASE_MS 3000        /* the first leader's watchdog lease: renewed every second */
#define DEAD_LEASE_MS 2000      /* the second incarnation's fixed lease; it exits at once */
#define THIRD_WAIT_MS 10000     /* the third candidate's wait */

/* ---------------------------------------------------------------- child processes */

static atomic_int child_lost;

static void child_on_lost(const char *name, const char *owner, int reason, void *ud)
{
    (void)name;
    (void)owner;
    (void)ud;
    atomic_store(&child_lost, reason);
}

static void child_on_lost_async(int kind, const char *name, const char *owner, int reason,
                                void *ud)
{
    (void)kind;
    child_on_lost(name, owner, reason, ud);
}

/* The leader on the blocking API: campaigns as owner with the watchdog, prints "elected
 * <term> <owner>", then, once told of a loss, "lost <reason> <rlk_elect_term's rc>". Ends after
 * 60 s at most (the parent kills it sooner). */
static int leader_blocking(const char *u, const char *name, const char *owner)
{
    rlk_options o;
    rlk_client *c;
    rlk_elect *e;
    long long term = 0, t;
    int rc;

    memset(&o, 0, sizeof o);
    o.url = u;
    o.watchdog_lease_ms = WD_LEASE_MS;
    if (!(c = rlk_connect(&o)) || rlk_err(c) != RLK_OK || !(e = rlk_elect_new(c, name)) ||
        rlk_elect_set_owner(e, owner) != RLK_OK)
        return 3;
    rlk_set_lost_callback(c, child_on_lost, NULL);
    rc = rlk_elect_campaign(e, "first", 0, 0, &term);
    printf("elected %lld %s %d\n", term, owner, rc);
    fflush(stdout);
    for (int i = 0; i < 6000 && !atomic_load(&child_lost); i++)
        usleep(10000);
    rc = rlk_elect_term(e, &t);
    printf("lost %d %d\n", atomic_load(&child_lost), rc);
    fflush(stdout);
    pause();
    return 0;
}

/* The same leader on the loop: task 1 of an async client (its holder id "<uuid>:1"). */
static int leader_async(const char *u, const char *name)
{
    ap_cl c;
    ap_res a = {0};
    long long t;
    int rc;

    if (ap_cl_open(&c, u, WD_LEASE_MS, 0, 2000) != 0)
        return 3;
    rlk_async_set_lost_callback(c.ac, child_on_lost_async, NULL);
    if (!AP_REQ(rlk_async_elect_campaign(c.ac, name, 1, "first", 0, -1, ap_on_res, &a)) ||
        !ap_wait_res(&c, &a, 10000))
        return 3;
    printf("elected %lld %s:1 %d\n", a.value, rlk_async_uuid(c.ac), a.err);
    fflush(stdout);
    for (int i = 0; i < 600 && !atomic_load(&child_lost); i++)
        aloop_run_until(c.l, NULL, NULL, 100);
    rc = rlk_async_elect_term(c.ac, name, 1, &t);
    printf("lost %d %d\n", atomic_load(&child_lost), rc);
    fflush(stdout);
    pause();
    return 0;
}

/* One campaign as owner with a fixed lease, no wait: prints "<rc> <term>"; the process then
 * ends, its leadership left to its lease (a leader that died). */
static int campaign_as(const char *u, const char *name, const char *owner, long long lease)
{
    rlk_client *c = rlk_connect_url(u);
    rlk_elect *e = c ? rlk_elect_new(c, name) : NULL;
    long long term = 0;
    int rc;

    if (!e || rlk_elect_set_owner(e, owner) != RLK_OK)
        return 3;
    rc = rlk_elect_campaign(e, "second", 0, lease, &term);
    printf("%d %lld\n", rc, term);
    fflush(stdout);
    _exit(0);   /* no resign, no cleanup: it died */
}

/* ---------------------------------------------------------------- the parent's side */

typedef struct child {
    pid_t pid;
    int out;                    /* its stdout */
    char buf[512];
    size_t len;
} child;

/* Starts this program again with args (NULL-terminated), its stdout on a pipe. */
static int child_start(child *ch, const char *const *args)
{
    int fds[2];
    char exe[64];

    memset(ch, 0, sizeof *ch);
    snprintf(exe, sizeof exe, "/proc/%d/exe", (int)getpid());
    if (pipe(fds) != 0)
        return -1;
    if ((ch->pid = fork()) < 0)
        return -1;
    if (ch->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        execv(exe, (char *const *)args);
        _exit(127);
    }
    close(fds[1]);
    ch->out = fds[0];
    return 0;
}

/* The child's next line into line (without the newline) within ms: 1, else 0. */
static int child_line(child *ch, char *line, size_t len, long long ms)
{
    long long end = rlk_fx_now_ms() + ms;

    for (;;) {
        char *nl = memchr(ch->buf, '\n', ch->len);
        struct pollfd p = {.fd = ch->out, .events = POLLIN};
        long long left = end - rlk_fx_now_ms();
        ssize_t n;

        if (nl) {
            size_t k = (size_t)(nl - ch->buf);

            snprintf(line, len, "%.*s", (int)k, ch->buf);
            memmove(ch->buf, nl + 1, ch->len - k - 1);
            ch->len -= k + 1;
            return 1;
        }
        if (left <= 0 || ch->len >= sizeof ch->buf - 1 || poll(&p, 1, (int)left) <= 0)
            return 0;
        if ((n = read(ch->out, ch->buf + ch->len, sizeof ch->buf - 1 - ch->len)) <= 0)
            return 0;
        ch->len += (size_t)n;
    }
}

static void child_end(child *ch)
{
    if (ch->pid > 0) {
        kill(ch->pid, SIGCONT);
        kill(ch->pid, SIGKILL);
        waitpid(ch->pid, NULL, 0);
    }
    if (ch->out > 0)
        close(ch->out);
    ch->pid = 0;
    ch->out = 0;
}

/* SIGSTOP, and waits until the child is stopped: 1 stopped. */
static int child_stop(child *ch)
{
    int st;

    return kill(ch->pid, SIGSTOP) == 0 && waitpid(ch->pid, &st, WUNTRACED) == ch->pid &&
           WIFSTOPPED(st);
}

/* The second incarnation: campaign_as in a process of its own. Its rc (-100: no answer). */
static int second_incarnation(const char *name, const char *owner, long long *term)
{
    char lease[24], line[128];
    const char *args[] = {"elect_incarnation", "campaign-as", url, name, owner, lease, NULL};
    child ch;
    int rc = -100;

    snprintf(lease, sizeof lease, "%d", DEAD_LEASE_MS);
    if (child_start(&ch, args) != 0)
        return rc;
    if (!child_line(&ch, line, sizeof line, 10000) || sscanf(line, "%d %lld", &rc, term) != 2)
        rc = -100;
    child_end(&ch);
    return rc;
}

/* ---------------------------------------------------------------- one id, two incarnations */

/* The first leader (a child on the API named by mode) stopped, its lock taken, the same id
 * elected again by another process that then dies; the first continued. */
static void incarnations(const char *mode, const char *name)
{
    const char *args[] = {"elect_incarnation", mode, url, name, "web-0", NULL};
    char line[512], owner[300] = "";
    long long t1 = 0, t2 = 0, t3 = 0, t0, waited;
    int rc = -1, reason = -1, term_rc = -1;
    rlk_client *c;
    rlk_elect *e3;
    child a;

    REQUIRE(child_start(&a, args) == 0);
    REQUIRE(child_line(&a, line, sizeof line, 10000));
    REQUIRE(sscanf(line, "elected %lld %299s %d", &t1, owner, &rc) == 3);
    REQUIRE(rc == RLK_OK && t1 > 0);
    printf("  the first incarnation of %s leads in term %lld\n", owner, t1);
    REQUIRE(child_stop(&a));
    CHECK_INT_EQ(tk_int(&srv, "DEL %s", name), 1);  /* its lease ran out while it was stopped */
    rc = second_incarnation(name, owner, &t2);
    CHECKF(rc == RLK_OK && t2 > t1, "the second incarnation's campaign: rc %d term %lld (first's "
           "%lld)", rc, t2, t1);
    kill(a.pid, SIGCONT);
    /* The first's watchdog renews within a period (1 s) of the continue. */
    if (child_line(&a, line, sizeof line, 8000) && sscanf(line, "lost %d %d", &reason,
                                                          &term_rc) == 2) {
        printf("  the first incarnation was told it lost: reason %d\n", reason);
        CHECK_INT_EQ(reason, RLK_LOST_GONE);
        CHECK_INT_EQ(term_rc, RLK_ERR_NOT_OWNER);
    } else {
        CHECKF(0, "the first incarnation was not told it lost within 8 s (it renewed the second "
               "incarnation's leadership)");
    }
    /* The second died: a third candidate is elected once its lease ran out. */
    REQUIRE((c = rlk_connect_url(url)) != NULL);
    REQUIRE((e3 = rlk_elect_new(c, name)) != NULL);
    t0 = rlk_fx_now_ms();
    rc = rlk_elect_campaign(e3, "third", THIRD_WAIT_MS, 0, &t3);
    waited = rlk_fx_now_ms() - t0;
    printf("  a third candidate's campaign: rc %d after %lld ms (the dead leader's lease: %d ms)\n",
           rc, waited, DEAD_LEASE_MS);
    CHECKF(rc == RLK_OK && t3 > t2, "the third candidate: rc %d term %lld after %lld ms (the "
           "first kept the dead leadership alive)", rc, t3, waited);
    if (rc == RLK_OK)
        CHECK_INT_EQ(rlk_elect_resign(e3), RLK_OK);
    rlk_elect_free(e3);
    rlk_free(c);
    child_end(&a);
}

static void renew_incarnation(void)
{
    incarnations("leader", "el:inc-b");
}

static void renew_incarnation_async(void)
{
    incarnations("aleader", "el:inc-a");
}

/* ---------------------------------------------------------------- a lease that passed */

static void lease_passed(void)
{
    rlk_client *a = rlk_connect_url(url), *b = rlk_connect_url(url);
    rlk_elect *ea = a ? rlk_elect_new(a, "el:passed") : NULL;
    rlk_elect *eb = b ? rlk_elect_new(b, "el:passed") : NULL;
    long long t1 = 0, t2 = 0, t = -1;
    int rc;

    REQUIRE(ea && eb);
    REQUIRE(rlk_elect_campaign(ea, "a", 0, 300, &t1) == RLK_OK);
    REQUIRE(tk_key_gone_within(&srv, "el:passed", 10000));
    REQUIRE(rlk_elect_campaign(eb, "b", 0, 30000, &t2) == RLK_OK);
    REQUIRE(t2 > t1);
    rc = rlk_elect_term(ea, &t);
    CHECKF(rc == RLK_ERR_NOT_OWNER && t == 0, "the old leader's term: rc %d, term %lld (the "
           "lease of %lld ran out, %lld leads)", rc, t, t1, t2);
    t = -1;
    rc = rlk_elect_campaign(ea, "a", 0, 300, &t);
    CHECKF(rc == RLK_ERR_BUSY && t == 0, "the old leader's second campaign: rc %d, term %lld "
           "(expected RLK_ERR_BUSY: %lld leads)", rc, t, t2);
    CHECK_INT_EQ(rlk_elect_proclaim(ea, "late"), RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_elect_resign(eb), RLK_OK);
    CHECK_INT_EQ(rlk_elect_campaign(ea, "a", 0, 30000, &t), RLK_OK);
    CHECK(t > t2);
    CHECK_INT_EQ(rlk_elect_resign(ea), RLK_OK);
    rlk_elect_free(ea);
    rlk_elect_free(eb);
    rlk_free(a);
    rlk_free(b);
}

static void lease_passed_async(void)
{
    ap_cl c;
    ap_res a = {0}, b = {0}, again = {0}, p = {0}, rs = {0};
    long long t = -1;
    int rc;

    REQUIRE(ap_cl_open(&c, url, 0, 0, 2000) == 0);
    REQUIRE(AP_REQ(rlk_async_elect_campaign(c.ac, "el:passed-a", 1, "a", 0, 300, ap_on_res, &a)));
    REQUIRE(ap_wait_res(&c, &a, 10000) && a.err == RLK_OK);
    REQUIRE(tk_key_gone_within(&srv, "el:passed-a", 10000));
    REQUIRE(AP_REQ(rlk_async_elect_campaign(c.ac, "el:passed-a", 2, "b", 0, 30000, ap_on_res,
                                            &b)));
    REQUIRE(ap_wait_res(&c, &b, 10000) && b.err == RLK_OK && b.value > a.value);
    rc = rlk_async_elect_term(c.ac, "el:passed-a", 1, &t);
    CHECKF(rc == RLK_ERR_NOT_OWNER && t == 0, "the old leader's term: rc %d, term %lld", rc, t);
    REQUIRE(AP_REQ(rlk_async_elect_campaign(c.ac, "el:passed-a", 1, "a", 0, 300, ap_on_res,
                                            &again)));
    REQUIRE(ap_wait_res(&c, &again, 10000));
    CHECKF(again.err == RLK_ERR_BUSY, "the old leader's second campaign: rc %d, term %lld",
           again.err, again.value);
    REQUIRE(AP_REQ(rlk_async_elect_proclaim(c.ac, "el:passed-a", 1, "late", ap_on_res, &p)));
    REQUIRE(ap_wait_res(&c, &p, 10000));
    CHECK_INT_EQ(p.err, RLK_ERR_NOT_OWNER);
    REQUIRE(AP_REQ(rlk_async_elect_resign(c.ac, "el:passed-a", 2, ap_on_res, &rs)));
    REQUIRE(ap_wait_res(&c, &rs, 10000));
    CHECK_INT_EQ(rs.err, RLK_OK);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

/* ---------------------------------------------------------------- the observer and a restart */

typedef struct observer {
    rlk_elect *e;
    rlk_elect_info cur, next;
    int rc;
} observer;

static void *observe(void *arg)
{
    observer *o = arg;

    o->rc = rlk_elect_wait_change(o->e, &o->cur, 20000, &o->next);
    return NULL;
}

/* The observer waits (in a thread) while the server is killed and started again 400 ms later
 * (from this thread: the fixture's server dies with the thread that started it), then a leader
 * is elected on it. */
static void observer_reconnect(void)
{
    rlk_client *o = rlk_connect_url(url), *c = NULL;
    rlk_elect *ec = NULL;
    observer ob = {0};
    long long term = 0;
    pthread_t th;
    int rc = -100;

    REQUIRE(o && (ob.e = rlk_elect_new(o, "el:obs")) != NULL);
    REQUIRE(rlk_elect_leader(ob.e, &ob.cur) == RLK_OK && !ob.cur.leader);
    REQUIRE(pthread_create(&th, NULL, observe, &ob) == 0);
    rlk_fx_sleep_ms(200);
    CHECK(rlk_fx_crash(&srv) == 0);
    rlk_fx_sleep_ms(400);
    CHECK(rlk_fx_restart(&srv) == 0);
    if ((c = rlk_connect_url(url)) && (ec = rlk_elect_new(c, "el:obs")))
        rc = rlk_elect_campaign(ec, "after", 0, 30000, &term);
    pthread_join(th, NULL);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECKF(ob.rc == RLK_OK, "the observer across the restart: rc %d (%s)", ob.rc, rlk_errstr(o));
    if (ob.rc == RLK_OK) {
        CHECK(ob.next.leader && ob.next.term == term);
        CHECK_STR_EQ(ob.next.value, "after");
        rlk_elect_info_clear(&ob.next);
    }
    rlk_elect_info_clear(&ob.cur);
    rlk_elect_free(ec);
    rlk_elect_free(ob.e);
    rlk_free(c);
    rlk_free(o);
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "all";

    if (argc == 5 && strcmp(argv[1], "leader") == 0)
        return leader_blocking(argv[2], argv[3], argv[4]);
    if (argc == 5 && strcmp(argv[1], "aleader") == 0)
        return leader_async(argv[2], argv[3]);
    if (argc == 6 && strcmp(argv[1], "campaign-as") == 0)
        return campaign_as(argv[2], argv[3], argv[4], atoll(argv[5]));
    signal(SIGPIPE, SIG_IGN);
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0)
        return 1;
#define CASE(fn) \
    if (strcmp(only, "all") == 0 || strcmp(only, #fn) == 0) \
        RUN_TEST(fn)
    CASE(renew_incarnation);
    CASE(renew_incarnation_async);
    CASE(lease_passed);
    CASE(lease_passed_async);
    CASE(observer_reconnect);
    rlk_fx_stop(&srv);
    return check_summary("elect_incarnation");
}
