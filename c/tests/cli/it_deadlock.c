/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_deadlock.c - the wait-for graph (rlk_waitgraph_read, `rlk top`) on a
 * real deadlock: two forked processes, each with its own client, for the
 * reentrant lock, the fair lock and the read-write lock's write side:
 *   - ABBA: process 1 holds A and waits for B (30 s), process 2 holds B and
 *     waits for A: the graph has the two edges and one cycle naming both
 *     processes (by client for the reentrant and the write lock, whose
 *     queue keeps tickets; by thread for the fair lock, whose queue keeps
 *     holder ids); `rlk top --once --json` reports the cycle, `rlk top
 *     --once` shows DEADLOCK;
 *   - control: process 2 waits for C (held by this program) instead: the
 *     two edges, no cycle, no DEADLOCK;
 *   - the same with `rlk lock` processes, each running an inner `rlk lock`
 *     of the other name (the inner rlk's waits count as its parent's).
 * The processes are killed (SIGKILL, by pid) after each case, their keys
 * deleted. Waits for the waiters to show on the server are bounded polls of
 * the server's state (the thing under test), 10 s at most.
 *
 * Usage: it_deadlock PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "json_mini.h"

#include <rlk.h>

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define DL_WAIT_MS 30000
#define DL_SHOW_MS 10000

static rlk_fx_server server;
static char url[128];

typedef struct dl_proc {
    pid_t pid;
    int to, from;           /* pipes: go, and "held <uuid>" back */
    char uuid[80];
} dl_proc;

/* The kinds: the reentrant lock, the fair lock, the read-write lock's write side. */
enum { DL_REENTRANT, DL_FAIR, DL_WRITE };

/* The child: take first, say so (its uuid), wait for go, then wait for second. */
static void dl_child(int kind, const char *first, const char *second, int go, int back)
{
    rlk_options o;
    rlk_client *c;
    char buf[80], b;
    int rc;

    rlk_options_init(&o);
    o.url = url;
    if (!(c = rlk_connect(&o)))
        _exit(10);
    if (kind == DL_FAIR) {
        rlk_fairlock *a = rlk_fairlock_new(c, first), *z = rlk_fairlock_new(c, second);

        rc = rlk_fairlock_try_lock(a, 0, 60000);
        snprintf(buf, sizeof buf, "%c%s", rc == RLK_OK ? 'h' : 'x', rlk_client_uuid(c));
        if (write(back, buf, strlen(buf) + 1) < 0 || read(go, &b, 1) != 1)
            _exit(11);
        rc = rlk_fairlock_try_lock(z, DL_WAIT_MS, 60000);
    } else if (kind == DL_WRITE) {
        rlk_rwlock *a = rlk_rwlock_new(c, first), *z = rlk_rwlock_new(c, second);

        rc = rlk_rwlock_try_lock(a, RLK_RW_WRITE, 0, 60000);
        snprintf(buf, sizeof buf, "%c%s", rc == RLK_OK ? 'h' : 'x', rlk_client_uuid(c));
        if (write(back, buf, strlen(buf) + 1) < 0 || read(go, &b, 1) != 1)
            _exit(11);
        rc = rlk_rwlock_try_lock(z, RLK_RW_WRITE, DL_WAIT_MS, 60000);
    } else {
        rlk_lock *a = rlk_lock_new(c, first), *z = rlk_lock_new(c, second);

        rc = rlk_lock_try_lock(a, 0, 60000);
        snprintf(buf, sizeof buf, "%c%s", rc == RLK_OK ? 'h' : 'x', rlk_client_uuid(c));
        if (write(back, buf, strlen(buf) + 1) < 0 || read(go, &b, 1) != 1)
            _exit(11);
        rc = rlk_lock_try_lock(z, DL_WAIT_MS, 60000);
    }
    _exit(rc == RLK_OK ? 0 : 12);
}

/* Forks a child holding first, then (on dl_go) waiting for second. 0 or -1. */
static int dl_start(dl_proc *p, int kind, const char *first, const char *second)
{
    int go[2], back[2];
    char buf[80];
    ssize_t n;

    memset(p, 0, sizeof *p);
    if (pipe(go) < 0 || pipe(back) < 0)
        return -1;
    fflush(NULL);
    if ((p->pid = fork()) < 0)
        return -1;
    if (p->pid == 0) {
        close(go[1]);
        close(back[0]);
        dl_child(kind, first, second, go[0], back[1]);
    }
    close(go[0]);
    close(back[1]);
    p->to = go[1];
    p->from = back[0];
    n = read(p->from, buf, sizeof buf - 1);     /* the child's "held": blocks until it says */
    if (n <= 1 || buf[0] != 'h')
        return -1;
    buf[n] = '\0';
    snprintf(p->uuid, sizeof p->uuid, "%s", buf + 1);
    return 0;
}

static void dl_go(dl_proc *p)
{
    CHECK(write(p->to, "g", 1) == 1);
}

static void dl_stop(dl_proc *p)
{
    int st;

    if (p->pid > 0) {
        kill(p->pid, SIGKILL);
        waitpid(p->pid, &st, 0);
    }
    if (p->to > 0)
        close(p->to);
    if (p->from > 0)
        close(p->from);
    p->pid = 0;
}

/* Reads the graph until it has want edges (the waiters have joined the
 * server's queues) or DL_SHOW_MS passed. */
static rlk_waitgraph *dl_read(rlk_client *c, const char *pattern, size_t want)
{
    long long end = rlk_fx_now_ms() + DL_SHOW_MS;
    rlk_waitgraph *g = NULL;

    for (;;) {
        int rc = rlk_waitgraph_read(c, pattern, &g);

        CHECKF(rc == RLK_OK, "rlk_waitgraph_read: %s", rlk_errstr(c));
        if (rc != RLK_OK || rlk_waitgraph_edge_count(g) >= want || rlk_fx_now_ms() > end)
            return g;
        rlk_waitgraph_free(g);
        g = NULL;
        rlk_fx_sleep_ms(50);
    }
}

/* The edge of g where the waiter (whole, or its client part when by client)
 * is waiter's and the name is name; -1 when none. */
static long dl_edge(const rlk_waitgraph *g, const char *uuid, const char *name, const char **holder)
{
    for (size_t i = 0; i < rlk_waitgraph_edge_count(g); i++) {
        const char *w, *n, *h;

        rlk_waitgraph_edge(g, i, &w, &n, NULL, &h, NULL);
        if (strncmp(w, uuid, strlen(uuid)) == 0 && strcmp(n, name) == 0) {
            if (holder)
                *holder = h;
            return (long)i;
        }
    }
    return -1;
}

static void dl_del(const char *prefix)
{
    redisReply *r = rlk_fx_command(&server, "EVAL %s 0 %s",
                                   "for _, k in ipairs(redis.call('keys', '*' .. ARGV[1] .. '*')) do "
                                   "redis.call('del', k) end return 1",
                                   prefix);

    if (r)
        freeReplyObject(r);
}

/* `rlk top --once [--json] --pattern P`: its output (caller frees); NULL on a failure. */
static char *dl_top(const char *pattern, int json)
{
    cli_result r = json ? RUN("top", "--once", "--json", "--pattern", pattern)
                        : RUN("top", "--once", "--pattern", pattern);
    char *out = NULL;

    CHECKF(r.status == 0, "rlk top: exit %d: %s", r.status, r.err);
    if (r.status == 0) {
        out = r.out;
        r.out = NULL;
    }
    cli_result_free(&r);
    return out;
}

/* One case: kind (DL_*), cycle (ABBA) or control (B's holder waits for C). */
static void dl_case(int kind, int cycle)
{
    const char *k = kind == DL_FAIR ? "dlf" : kind == DL_WRITE ? "dlw" : "dlr";
    int fair = kind == DL_FAIR;
    char a[32], b[32], cc[32], pat[32], buf[256];
    dl_proc p1, p2;
    rlk_options o;
    rlk_client *c;
    rlk_lock *hold_c = NULL;
    rlk_fairlock *hold_fc = NULL;
    rlk_rwlock *hold_w = NULL;
    rlk_waitgraph *g = NULL;
    const char *h1 = NULL, *h2 = NULL;
    long e1, e2;

    snprintf(a, sizeof a, "%s:%d:A", k, cycle);
    snprintf(b, sizeof b, "%s:%d:B", k, cycle);
    snprintf(cc, sizeof cc, "%s:%d:C", k, cycle);
    snprintf(pat, sizeof pat, "%s:%d:*", k, cycle);
    dl_del(pat);
    memset(&p2, 0, sizeof p2);
    REQUIRE(dl_start(&p1, kind, a, b) == 0);
    if (dl_start(&p2, kind, b, cycle ? a : cc) != 0) {
        CHECKF(0, "second process did not take %s", b);
        dl_stop(&p1);
        return;
    }
    rlk_options_init(&o);
    o.url = url;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    if (!cycle && kind == DL_WRITE) {  /* this program holds C */
        hold_w = rlk_rwlock_new(c, cc);
        CHECK(rlk_rwlock_try_lock(hold_w, RLK_RW_WRITE, 0, 60000) == RLK_OK);
    } else if (!cycle && fair) {
        hold_fc = rlk_fairlock_new(c, cc);
        CHECK(rlk_fairlock_try_lock(hold_fc, 0, 60000) == RLK_OK);
    } else if (!cycle) {
        hold_c = rlk_lock_new(c, cc);
        CHECK(rlk_lock_try_lock(hold_c, 0, 60000) == RLK_OK);
    }
    dl_go(&p1);
    dl_go(&p2);
    g = dl_read(c, pat, 2);
    if (g) {
        CHECKF(rlk_waitgraph_edge_count(g) == 2, "%s: %zu edges, want 2", pat,
               rlk_waitgraph_edge_count(g));
        printf("  process 1 %s, process 2 %s, this program %s\n", p1.uuid, p2.uuid,
               rlk_client_uuid(c));
        for (size_t i = 0; i < rlk_waitgraph_edge_count(g); i++) {
            const char *w, *n, *h;
            int bc;

            rlk_waitgraph_edge(g, i, &w, &n, NULL, &h, &bc);
            printf("  edge %zu: %s waits for %s held by %s (by %s)\n", i, w, n, h,
                   bc ? "client" : "thread");
        }
        e1 = dl_edge(g, p1.uuid, b, &h1);
        e2 = dl_edge(g, p2.uuid, cycle ? a : cc, &h2);
        CHECKF(e1 >= 0 && h1 && strncmp(h1, p2.uuid, strlen(p2.uuid)) == 0,
               "%s: no edge process 1 -> %s held by process 2", pat, b);
        CHECKF(e2 >= 0, "%s: no edge of process 2", pat);
        if (cycle) {
            CHECKF(h2 && strncmp(h2, p1.uuid, strlen(p1.uuid)) == 0, "%s: A's holder not process 1",
                   pat);
            REQUIRE_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
            CHECK_INT_EQ((long)rlk_waitgraph_cycle_length(g, 0), 2);
            CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), fair ? 0 : 1);
            CHECK((rlk_waitgraph_cycle_edge(g, 0, 0) == e1 && rlk_waitgraph_cycle_edge(g, 0, 1) == e2) ||
                  (rlk_waitgraph_cycle_edge(g, 0, 0) == e2 && rlk_waitgraph_cycle_edge(g, 0, 1) == e1));
        } else {
            CHECKF(h2 && strncmp(h2, rlk_client_uuid(c), 36) == 0, "%s: C's holder not this program",
                   pat);
            CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
        }
    }
    snprintf(buf, sizeof buf, "%s", pat);
    {
        char *js = dl_top(buf, 1), *txt = dl_top(buf, 0);
        const char *jerr = NULL;
        json_value *v = js ? json_parse(js, &jerr) : NULL;
        const json_value *waits = v ? json_get(v, "waits") : NULL;
        const json_value *cycles = waits ? json_get(waits, "cycles") : NULL;
        const json_value *edges = waits ? json_get(waits, "edges") : NULL;

        CHECKF(cycles && cycles->type == JSON_ARRAY && edges && edges->type == JSON_ARRAY,
               "%s: rlk top --json: no waits.cycles/edges: %s", pat, js ? js : "");
        if (cycles && edges) {
            CHECK_INT_EQ((long)edges->count, 2);
            CHECK_INT_EQ((long)cycles->count, cycle ? 1 : 0);
        }
        CHECKF(js && strstr(js, p1.uuid) && strstr(js, p2.uuid), "%s: the JSON names both processes",
               pat);
        CHECKF(txt && (strstr(txt, "DEADLOCK") != NULL) == cycle, "%s: DEADLOCK %s in: %s", pat,
               cycle ? "missing" : "shown", txt ? txt : "");
        if (cycle)
            CHECKF(txt && strstr(txt, p1.uuid) && strstr(txt, p2.uuid), "%s: text names both", pat);
        printf("  rlk top --once:\n%s", txt ? txt : "");
        json_free(v);
        free(js);
        free(txt);
    }
    rlk_waitgraph_free(g);
    dl_stop(&p1);
    dl_stop(&p2);
    if (hold_c) {
        rlk_lock_unlock(hold_c);
        rlk_lock_free(hold_c);
    }
    if (hold_fc) {
        rlk_fairlock_unlock(hold_fc);
        rlk_fairlock_free(hold_fc);
    }
    if (hold_w) {
        rlk_rwlock_unlock(hold_w, RLK_RW_WRITE);
        rlk_rwlock_free(hold_w);
    }
    rlk_free(c);
    dl_del(pat);
}

/* `rlk lock A -- sh -c '...; rlk lock B -w 30 -- true'` and the mirror (or, the
 * control, B's holder's inner rlk waits for C, which a third rlk lock holds): the
 * nested rlk's tickets carry its parent's client number (docs/deadlock.md), so
 * the graph joins the inner wait to the outer hold. The inner rlk starts once
 * this program writes to its FIFO (no sleep). */
static void dl_cli_case(int cycle)
{
    char pat[32], a[32], b[32], c3[32], s1[512], s2[512], s3[512], h[3][300], go[3][300];
    const char *held[3];
    cli_proc p[3];
    int started = 0;
    rlk_options o;
    rlk_client *c;
    rlk_waitgraph *g;

    snprintf(pat, sizeof pat, "dln:%d:*", cycle);
    snprintf(a, sizeof a, "dln:%d:A", cycle);
    snprintf(b, sizeof b, "dln:%d:B", cycle);
    snprintf(c3, sizeof c3, "dln:%d:C", cycle);
    dl_del(pat);
    for (int i = 0; i < 3; i++) {
        snprintf(h[i], sizeof h[i], "%s", cli_path(i == 0 ? "held1" : i == 1 ? "held2" : "held3"));
        held[i] = h[i];
        unlink(h[i]);
    }
    for (int i = 0; i < 3; i++) {     /* go3: nobody writes it, the third rlk lock holds C */
        snprintf(go[i], sizeof go[i], "%s", cli_path(i == 0 ? "go1" : i == 1 ? "go2" : "go3"));
        unlink(go[i]);
        REQUIRE(mkfifo(go[i], 0600) == 0);
    }
    snprintf(s1, sizeof s1, "echo $RLK_LOCK_OWNER > '%s'; read x < '%s'; "
             "\"$RLK_BIN\" lock %s -w 30 -- true", held[0], go[0], b);
    snprintf(s2, sizeof s2, "echo $RLK_LOCK_OWNER > '%s'; read x < '%s'; "
             "\"$RLK_BIN\" lock %s -w 30 -- true", held[1], go[1], cycle ? a : c3);
    snprintf(s3, sizeof s3, "echo $RLK_LOCK_OWNER > '%s'; read x < '%s'", held[2], go[2]);
    memset(p, 0, sizeof p);
    if (START(&p[0], "lock", a, "--", "sh", "-c", s1) == 0)
        started = 1;
    if (started && START(&p[1], "lock", b, "--", "sh", "-c", s2) == 0)
        started = 2;
    if (started == 2 && !cycle &&
        START(&p[2], "lock", c3, "--", "sh", "-c", s3) == 0)
        started = 3;
    CHECKF(started == (cycle ? 2 : 3), "rlk lock did not start");
    for (int i = 0; i < (cycle ? 2 : 3); i++)
        CHECKF(cli_wait_contains(held[i], "", 10000) == 0 && cli_wait_file(held[i], 10000) == 0,
               "%s: not held", held[i]);
    for (int i = 0; i < 2; i++) {     /* let the inner rlk start */
        FILE *f = fopen(go[i], "w");

        if (f) {
            fputs("g\n", f);
            fclose(f);
        }
    }
    rlk_options_init(&o);
    o.url = url;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    g = dl_read(c, pat, 2);
    if (g) {
        char *o1 = cli_slurp(held[0]), *o2 = cli_slurp(held[1]);

        o1[strcspn(o1, "\n")] = '\0';
        o2[strcspn(o2, "\n")] = '\0';
        CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
        CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), cycle ? 1 : 0);
        if (cycle && rlk_waitgraph_cycle_count(g) == 1) {
            const char *w0, *h0, *w1, *h1;

            CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), 1);
            rlk_waitgraph_edge(g, (size_t)rlk_waitgraph_cycle_edge(g, 0, 0), &w0, NULL, NULL, &h0, NULL);
            rlk_waitgraph_edge(g, (size_t)rlk_waitgraph_cycle_edge(g, 0, 1), &w1, NULL, NULL, &h1, NULL);
            /* the holders are the two outer rlk locks' holder ids; each waiter the other's client */
            CHECKF((strcmp(h0, o1) == 0 && strcmp(h1, o2) == 0) || (strcmp(h0, o2) == 0 && strcmp(h1, o1) == 0),
                   "holders %s, %s; the outer rlk locks hold as %s, %s", h0, h1, o1, o2);
            CHECKF(strncmp(h0, w1, strlen(w1)) == 0 && strncmp(h1, w0, strlen(w0)) == 0,
                   "waiters %s, %s", w0, w1);
        }
        free(o1);
        free(o2);
    }
    rlk_waitgraph_free(g);
    rlk_free(c);
    for (int i = 0; i < started; i++) {
        kill(-p[i].pid, SIGKILL);
        cli_wait(&p[i], 5000);
        {
            cli_result r = cli_collect(&p[i], 0, 0);

            cli_result_free(&r);
        }
    }
    for (int i = 0; i < 3; i++)
        unlink(go[i]);
    dl_del(pat);
}

static void test_cli_nested_abba(void) { dl_cli_case(1); }
static void test_cli_nested_control(void) { dl_cli_case(0); }
static void test_reentrant_abba(void) { dl_case(DL_REENTRANT, 1); }
static void test_reentrant_control(void) { dl_case(DL_REENTRANT, 0); }
static void test_fair_abba(void) { dl_case(DL_FAIR, 1); }
static void test_fair_control(void) { dl_case(DL_FAIR, 0); }
static void test_write_abba(void) { dl_case(DL_WRITE, 1); }
static void test_write_control(void) { dl_case(DL_WRITE, 0); }

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_reentrant_abba);
    RUN_TEST(test_reentrant_control);
    RUN_TEST(test_fair_abba);
    RUN_TEST(test_fair_control);
    RUN_TEST(test_write_abba);
    RUN_TEST(test_write_control);
    RUN_TEST(test_cli_nested_abba);
    RUN_TEST(test_cli_nested_control);
    cli_main_end(&server, 1);
    return check_summary("it_deadlock");
}
