/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rt_metrics.c - the public metrics (rlk_metrics_*) on one redis-server:
 * acquisitions by kind and result, the wait, hold and handoff histograms,
 * the gauges, watched names, the switch, rlk_metrics_add, and the
 * exposition (a buffer too small, JSON through jq). With the argument
 * --promtool FILE it writes a Prometheus exposition of a run with several
 * labelled snapshots to FILE instead (ctest runs promtool on it).
 */
#include "check.h"
#include "tk_util.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;

static rlk_metrics *snap(rlk_client *c)
{
    static rlk_metrics m;

    CHECK(rlk_metrics_get(c, &m) == RLK_OK);
    return &m;
}

/* Acquisitions by result, the wait and hold histograms, the gauges. */
static void test_lock_counts(void)
{
    rlk_client *a = tk_connect(url, 0, 2), *b = tk_connect(url, 0, 2);
    rlk_lock *la, *lb;
    rlk_metrics *m;
    unsigned long long n;

    REQUIRE(a && b);
    la = rlk_lock_new(a, "mt:lock");
    lb = rlk_lock_new(b, "mt:lock");
    REQUIRE(la && lb);
    m = snap(a);
    CHECK(m->enabled == 1);
    CHECK_INT_EQ(m->acquisitions[RLK_KIND_LOCK][RLK_ACQ_ACQUIRED], 0);
    REQUIRE_INT_EQ(rlk_lock_lock(la, 10000), RLK_OK);
    REQUIRE_INT_EQ(rlk_lock_lock(la, 10000), RLK_OK);       /* re-entry: a second call */
    m = snap(a);
    CHECK_INT_EQ(m->acquisitions[RLK_KIND_LOCK][RLK_ACQ_ACQUIRED], 2);
    CHECK_INT_EQ(m->wait.count, 2);
    CHECK_INT_EQ(m->locks_held, 1);
    CHECK_INT_EQ(m->watchdog_entries, 0);
    CHECK_INT_EQ(m->requests_waiting, 0);
    CHECK_INT_EQ(rlk_lock_try_lock(lb, 0, 10000), RLK_ERR_BUSY);
    m = snap(b);
    CHECK_INT_EQ(m->acquisitions[RLK_KIND_LOCK][RLK_ACQ_TIMED_OUT], 1);
    CHECK_INT_EQ(m->acquisitions[RLK_KIND_LOCK][RLK_ACQ_ACQUIRED], 0);
    CHECK_INT_EQ(m->wait.count, 0);     /* timed out: not in the wait histogram */
    CHECK_INT_EQ(rlk_lock_unlock(la), RLK_OK);
    m = snap(a);
    CHECK_INT_EQ(m->hold.count, 0);     /* still held once */
    CHECK_INT_EQ(m->locks_held, 1);
    CHECK_INT_EQ(rlk_lock_unlock(la), RLK_OK);
    m = snap(a);
    CHECK_INT_EQ(m->hold.count, 1);
    CHECK_INT_EQ(m->locks_held, 0);
    n = 0;
    for (int i = 0; i <= RLK_METRICS_BUCKETS; i++)
        n += m->hold.buckets[i];
    CHECK_INT_EQ(n, 1);
    /* A refused call: a lease above 10^12. */
    CHECK_INT_EQ(rlk_lock_try_lock(la, 0, 2000000000000LL), RLK_ERR_ARG);
    CHECK_INT_EQ(snap(a)->acquisitions[RLK_KIND_LOCK][RLK_ACQ_REFUSED], 1);
    rlk_lock_free(la);
    rlk_lock_free(lb);
    rlk_free(a);
    rlk_free(b);
}

/* A waiter that certainly sleeps: b waits while a holds, a unlocks after
 * b's request is counted as waiting. */
typedef struct waiter_arg {
    rlk_lock *l;
    int rc;
} waiter_arg;

static void *waiter_main(void *arg)
{
    waiter_arg *w = arg;

    w->rc = rlk_lock_try_lock(w->l, 20000, 30000);
    return NULL;
}

static void test_handoff_after_sleep(void)
{
    rlk_client *a = tk_connect(url, 0, 2), *b = tk_connect(url, 0, 2);
    rlk_lock *la, *lb;
    waiter_arg w;
    pthread_t t;
    rlk_metrics *m;
    long long end;

    REQUIRE(a && b);
    la = rlk_lock_new(a, "mt:sleep");
    lb = rlk_lock_new(b, "mt:sleep");
    REQUIRE(la && lb);
    REQUIRE_INT_EQ(rlk_lock_set_owner(lb, "mt-b"), RLK_OK);    /* unlocked from this thread */
    REQUIRE_INT_EQ(rlk_lock_lock(la, 30000), RLK_OK);
    w.l = lb;
    w.rc = -1;
    pthread_create(&t, NULL, waiter_main, &w);
    end = rlk_fx_now_ms() + 10000;
    while (snap(b)->waits == 0 && rlk_fx_now_ms() < end)
        rlk_fx_sleep_ms(5);     /* bounded poll of the waiter's first sleep */
    m = snap(b);
    CHECK(m->waits >= 1);
    CHECK_INT_EQ(m->requests_waiting, 1);
    CHECK_INT_EQ(rlk_lock_unlock(la), RLK_OK);
    pthread_join(t, NULL);
    CHECK_INT_EQ(w.rc, RLK_OK);
    m = snap(b);
    CHECK_INT_EQ(m->acquired_after_wait, 1);
    CHECK_INT_EQ(m->handoffs, 1);
    CHECK_INT_EQ(m->handoff.count, 1);
    CHECK_INT_EQ(m->wait.count, 1);
    CHECK_INT_EQ(m->requests_waiting, 0);
    CHECK_INT_EQ(rlk_lock_unlock(lb), RLK_OK);
    rlk_lock_free(la);
    rlk_lock_free(lb);
    rlk_free(a);
    rlk_free(b);
}

/* Semaphores and a watchdog lock; a watched name; the switch. */
static void test_kinds_names_switch(void)
{
    rlk_client *a = tk_connect(url, 0, 2);
    rlk_semaphore *s;
    rlk_lock *l, *other;
    rlk_metrics *m;
    char longname[RLK_METRICS_NAME_SIZE + 1];

    REQUIRE(a);
    CHECK_INT_EQ(rlk_metrics_watch(a, "mt:watched"), RLK_OK);
    CHECK_INT_EQ(rlk_metrics_watch(a, "mt:watched"), RLK_OK);     /* idempotent */
    CHECK_INT_EQ(rlk_metrics_watch(a, ""), RLK_ERR_ARG);
    memset(longname, 'x', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK_INT_EQ(rlk_metrics_watch(a, longname), RLK_ERR_ARG);
    s = rlk_semaphore_new(a, "mt:sem");
    l = rlk_lock_new(a, "mt:watched");
    other = rlk_lock_new(a, "mt:other");
    REQUIRE(s && l && other);
    REQUIRE_INT_EQ(rlk_semaphore_try_set_permits(s, 1, NULL), RLK_OK);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 0), RLK_OK);
    CHECK_INT_EQ(rlk_semaphore_try_acquire(s, 1, 0), RLK_ERR_BUSY);
    CHECK_INT_EQ(rlk_lock_lock(l, 0), RLK_OK);      /* the watchdog's */
    CHECK_INT_EQ(rlk_lock_lock(other, 10000), RLK_OK);
    m = snap(a);
    CHECK_INT_EQ(m->acquisitions[RLK_MKIND_SEMAPHORE][RLK_ACQ_ACQUIRED], 1);
    CHECK_INT_EQ(m->acquisitions[RLK_MKIND_SEMAPHORE][RLK_ACQ_TIMED_OUT], 1);
    CHECK_INT_EQ(m->locks_held, 2);
    CHECK_INT_EQ(m->watchdog_entries, 1);
    CHECK_INT_EQ(m->nnames, 1);
    CHECK_STR_EQ(m->names[0].name, "mt:watched");
    CHECK_INT_EQ(m->names[0].acquisitions[RLK_ACQ_ACQUIRED], 1);
    CHECK_INT_EQ(m->names[0].wait.count, 1);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(snap(a)->names[0].hold.count, 1);
    CHECK_INT_EQ(rlk_lock_unlock(other), RLK_OK);
    /* Off: the recorded fields stand still; the plain counters go on. */
    CHECK_INT_EQ(rlk_metrics_set_enabled(a, 0), RLK_OK);
    CHECK_INT_EQ(rlk_lock_lock(other, 10000), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(other), RLK_OK);
    m = snap(a);
    CHECK(m->enabled == 0);
    CHECK_INT_EQ(m->acquisitions[RLK_KIND_LOCK][RLK_ACQ_ACQUIRED], 2);
    CHECK_INT_EQ(m->wait.count, 3);     /* the semaphore's and the two locks' */
    CHECK_INT_EQ(m->hold.count, 2);
    CHECK_INT_EQ(rlk_metrics_set_enabled(a, 1), RLK_OK);
    rlk_semaphore_free(s);
    rlk_lock_free(l);
    rlk_lock_free(other);
    rlk_free(a);
}

static void test_add_and_format(void)
{
    static rlk_metrics x, y, two[2];
    const char *labels[2] = {"process=\"0\"", "process=\"1\""};
    char small[64], *big;
    size_t need = 0, need2 = 0;
    FILE *p;
    int have_jq;
    int rc;

    memset(&x, 0, sizeof x);
    memset(&y, 0, sizeof y);
    x.acquisitions[RLK_KIND_LOCK][RLK_ACQ_ACQUIRED] = 3;
    x.wait.count = 3;
    x.wait.buckets[2] = 3;
    x.wait.sum_ns = 900000;
    x.nnames = 1;
    snprintf(x.names[0].name, sizeof x.names[0].name, "a\"b");
    y.acquisitions[RLK_KIND_LOCK][RLK_ACQ_ACQUIRED] = 4;
    y.wait.count = 4;
    y.wait.buckets[RLK_METRICS_BUCKETS] = 4;
    y.nnames = 1;
    snprintf(y.names[0].name, sizeof y.names[0].name, "other");
    two[0] = x;
    two[1] = y;
    rlk_metrics_add(&x, &y);
    CHECK_INT_EQ(x.acquisitions[RLK_KIND_LOCK][RLK_ACQ_ACQUIRED], 7);
    CHECK_INT_EQ(x.wait.count, 7);
    CHECK_INT_EQ(x.nnames, 2);
    /* Too small: RLK_ERR_ARG, the size needed, a terminated prefix. */
    rc = rlk_metrics_format(two, 2, labels, RLK_METRICS_PROMETHEUS, small, sizeof small, &need);
    CHECK_INT_EQ(rc, RLK_ERR_ARG);
    CHECK(need > sizeof small);
    CHECK(strlen(small) == sizeof small - 1);
    big = malloc(need);
    REQUIRE(big);
    CHECK_INT_EQ(rlk_metrics_format(two, 2, labels, RLK_METRICS_PROMETHEUS, big, need, &need2),
                 RLK_OK);
    CHECK_INT_EQ(need2, need);
    CHECK_INT_EQ(strlen(big) + 1, need);
    CHECK_STR_CONTAINS(big, "rlk_acquisitions_total{kind=\"lock\",result=\"acquired\","
                            "process=\"1\"} 4\n");
    CHECK_STR_CONTAINS(big, "rlk_wait_seconds_bucket{le=\"+Inf\",process=\"0\"} 3\n");
    CHECK_STR_CONTAINS(big, "rlk_name_acquisitions_total{name=\"a\\\"b\"");
    {
        char info[200];

        snprintf(info, sizeof info, "# TYPE rlk_build_info gauge\nrlk_build_info{version=\"%s\","
                 "hiredis=\"%d.%d.%d\"} 1\n", RLK_VERSION, HIREDIS_MAJOR, HIREDIS_MINOR,
                 HIREDIS_PATCH);
        CHECK_STR_CONTAINS(big, info);
    }
    CHECK_INT_EQ(rlk_metrics_format(two, 2, labels, 7, big, need, NULL), RLK_ERR_ARG);
    free(big);
    /* JSON: jq parses it. */
    rc = rlk_metrics_format(two, 2, labels, RLK_METRICS_JSON, NULL, 0, &need);
    CHECK_INT_EQ(rc, RLK_ERR_ARG);
    big = malloc(need);
    REQUIRE(big);
    CHECK_INT_EQ(rlk_metrics_format(two, 2, labels, RLK_METRICS_JSON, big, need, NULL), RLK_OK);
    /* jq must be there (tools/bootstrap installs it): said, not found out by a SIGPIPE. */
    have_jq = system("command -v jq >/dev/null 2>&1") == 0;
    CHECKF(have_jq, "jq is not installed (tools/bootstrap installs it): the JSON exposition is "
           "not checked");
    p = !have_jq ? NULL : popen("jq -e '.[1].acquisitions.lock.acquired == 4 and .[0].names[0].name == \"a\\\"b\"'"
              " >/dev/null 2>&1", "w");
    if (p) {
        fputs(big, p);
        CHECKF(pclose(p) == 0, "jq rejected the JSON: %.200s", big);
    }
    free(big);
}

/* A server that refuses the connection: every connect of the pool that
 * failed is counted (connect_failures), and nothing else moves. */
static void test_connect_failures(void)
{
    const char *argv[1] = {"PING"};
    rlk_options o;
    rlk_client *c;
    redisReply *r = NULL;
    unsigned long long n0;

    rlk_options_init(&o);
    o.url = "redis://127.0.0.1:1";
    o.connect_timeout_ms = 1000;
    c = rlk_connect(&o);
    REQUIRE(c);
    n0 = snap(c)->connect_failures;
    CHECKF(n0 >= 1, "the first connect: %llu connect failures counted", n0);
    CHECK_INT_EQ(rlk_command(c, 1, argv, NULL, &r), RLK_ERR_IO);
    CHECK(r == NULL);
    CHECKF(snap(c)->connect_failures > n0, "a call's connect: %llu, %llu before",
           snap(c)->connect_failures, n0);
    CHECK_INT_EQ(snap(c)->reconnects, 0);
    rlk_free(c);
    /* A client whose server answers counts none. */
    c = tk_connect(url, 0, 1);
    REQUIRE(c);
    CHECK_INT_EQ(rlk_command(c, 1, argv, NULL, &r), RLK_OK);
    freeReplyObject(r);
    CHECK_INT_EQ(snap(c)->connect_failures, 0);
    rlk_free(c);
}

/* --promtool FILE: a real run's exposition, two labelled snapshots. */
static int write_exposition(const char *path)
{
    rlk_client *a = tk_connect(url, 0, 2), *b = tk_connect(url, 0, 2);
    static rlk_metrics m[2];
    const char *labels[2] = {"process=\"0\"", "process=\"1\""};
    rlk_lock *l;
    size_t need = 0;
    char *buf;
    FILE *f;

    if (!a || !b)
        return 1;
    rlk_metrics_watch(a, "mt:prom");
    l = rlk_lock_new(a, "mt:prom");
    if (!l || rlk_lock_lock(l, 10000) != RLK_OK || rlk_lock_unlock(l) != RLK_OK)
        return 1;
    rlk_metrics_get(a, &m[0]);
    rlk_metrics_get(b, &m[1]);
    rlk_metrics_format(m, 2, labels, RLK_METRICS_PROMETHEUS, NULL, 0, &need);
    buf = malloc(need);
    if (!buf || rlk_metrics_format(m, 2, labels, RLK_METRICS_PROMETHEUS, buf, need, NULL) != RLK_OK)
        return 1;
    f = fopen(path, "w");
    if (!f || fputs(buf, f) < 0 || fclose(f) != 0)
        return 1;
    free(buf);
    rlk_lock_free(l);
    rlk_free(a);
    rlk_free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (tk_suite_start("rt_metrics", &srv, url, sizeof url, &stall) != 0)
        return 1;
    if (argc == 3 && strcmp(argv[1], "--promtool") == 0) {
        int rc = write_exposition(argv[2]);

        tk_suite_stop(&srv, &stall);
        return rc;
    }
    RUN_TEST(test_lock_counts);
    RUN_TEST(test_handoff_after_sleep);
    RUN_TEST(test_kinds_names_switch);
    RUN_TEST(test_add_and_format);
    RUN_TEST(test_connect_failures);
    tk_suite_stop(&srv, &stall);
    return check_summary("rt_metrics");
}
