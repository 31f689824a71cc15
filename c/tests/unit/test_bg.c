/*
 * test_bg.c - the blocking API's background loop (engine/bg.h): started by
 * its first operation, which runs on the loop's own thread; an operation
 * posted again while queued runs once, one posted while it runs runs again;
 * operations run in the order posted; freeing stops the thread. No server
 * needed: the loop's engine client opens no connection of its own.
 */
#include <pthread.h>

#include "rlk.h"
#include "client/client.h"
#include "engine/bg.h"
#include "check.h"

typedef struct probe {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int runs;                   /* this operation's runs */
    int order;                  /* its last run's place among every run */
    int gate;                   /* 0: a run waits until it is 1 */
    int waiting;                /* a run waits at the gate */
    pthread_t thread;           /* the thread of its last run */
} probe;

static int seq;                 /* runs so far, of every probe (under each probe's mu: one at a time) */

static void probe_init(probe *p, int gate)
{
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->runs = p->order = p->waiting = 0;
    p->gate = gate;
}

static void probe_op(rlk_async *ac, void *arg)
{
    probe *p = arg;

    (void)ac;
    pthread_mutex_lock(&p->mu);
    p->waiting = 1;
    pthread_cond_broadcast(&p->cv);
    while (!p->gate)
        pthread_cond_wait(&p->cv, &p->mu);
    p->waiting = 0;
    p->thread = pthread_self();
    p->order = ++seq;
    p->runs++;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

/* Waits until p ran n times; or, with gate 0, until a run waits at the gate. */
static void probe_wait(probe *p, int n)
{
    pthread_mutex_lock(&p->mu);
    while (n ? p->runs < n : !p->waiting)
        pthread_cond_wait(&p->cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
}

static void probe_open(probe *p)
{
    pthread_mutex_lock(&p->mu);
    p->gate = 1;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

static void test_loop(void)
{
    rlk_options o;
    rlk_client *c;
    rlk_bg *b;
    probe first, held, again, last;
    rlk_bg_op op_first = {.fn = probe_op, .arg = &first}, op_held = {.fn = probe_op, .arg = &held};
    rlk_bg_op op_again = {.fn = probe_op, .arg = &again}, op_last = {.fn = probe_op, .arg = &last};

    rlk_options_init(&o);
    o.url = "redis://127.0.0.1:1";     /* never dialled */
    c = rlk_client_prepare(&o);
    REQUIRE(c);
    b = rlk_bg_new(c, "rlk-test", NULL);
    REQUIRE(b);
    probe_init(&first, 1);
    probe_init(&held, 0);
    probe_init(&again, 1);
    probe_init(&last, 1);

    /* The first operation starts the thread and runs on it. */
    CHECK_INT_EQ(rlk_bg_post(b, &op_first), RLK_OK);
    probe_wait(&first, 1);
    CHECK(!pthread_equal(first.thread, pthread_self()));

    /* While held runs: posted again, it runs again; again, posted twice, runs once. */
    CHECK_INT_EQ(rlk_bg_post(b, &op_held), RLK_OK);
    probe_wait(&held, 0);
    CHECK_INT_EQ(rlk_bg_post(b, &op_held), RLK_OK);
    CHECK_INT_EQ(rlk_bg_post(b, &op_again), RLK_OK);
    CHECK_INT_EQ(rlk_bg_post(b, &op_again), RLK_OK);
    CHECK_INT_EQ(rlk_bg_post(b, &op_last), RLK_OK);
    probe_open(&held);
    probe_wait(&last, 1);
    CHECK_INT_EQ(held.runs, 2);
    CHECK_INT_EQ(again.runs, 1);
    CHECK(held.order < again.order && again.order < last.order);    /* in the order posted */
    CHECK(pthread_equal(held.thread, first.thread) && pthread_equal(last.thread, first.thread));

    rlk_bg_free(b);     /* joins the thread */
    rlk_free(c);
}

/* A loop never used has no thread to stop. */
static void test_unused(void)
{
    rlk_client *c = rlk_client_prepare(NULL);

    REQUIRE(c);
    rlk_bg_free(rlk_bg_new(c, "rlk-test", NULL));
    rlk_free(c);
}

int main(void)
{
    RUN_TEST(test_loop);
    RUN_TEST(test_unused);
    return check_summary("test_bg");
}
