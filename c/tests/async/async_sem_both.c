/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_sem_both.c - the semaphores' lost replies decided once (kinds/acq.h rlk_acq_sem): the
 * same scripted scenario, against one real redis-server, through the blocking API
 * (rlk_semaphore_try_acquire, rlk_psemaphore_try_acquire) and through the loop
 * (rlk_async_semaphore_acquire, rlk_async_psemaphore_acquire) must end the same way.
 *
 *   sem_lost        a semaphore of 1 permit; an acquire whose reply is lost (CLIENT PAUSE
 *                   past the command timeout): never sent again (it could take the permit
 *                   twice): RLK_ERR_UNSETTLED "... may have been taken", the permit on the
 *                   server 0 or 1, never below;
 *   psem_lost_ran   a permit-expirable semaphore of 1 permit; an acquire whose reply is lost
 *                   after it ran (DEBUG SLEEP: it runs when the server wakes): read back by its
 *                   permit id, RLK_OK with that id, one permit held on the server.
 *
 *   rlk_async_sem_both_<loop> <case>|all
 */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "fixture.h"
#include "aloop.h"
#include "async_procs.h"
#include "rlk.h"
#include "rlk_async.h"

#define CMD_TIMEOUT_MS 300
#define LOST_MS 1200        /* past the command timeout: the reply is lost */

static rlk_fx_server srv;
static char url[512];

/* How one API's scenario ended. */
typedef struct outcome {
    int err;
    char msg[512];
    char id[RLK_PERMIT_ID_SIZE];    /* a permit-expirable semaphore's permit */
} outcome;

enum { SEM_LOST, PSEM_LOST_RAN };

static long long srv_num(const char *fmt, const char *arg)
{
    redisReply *r = rlk_fx_command(&srv, fmt, arg);
    long long n = !r ? -99 : r->type == REDIS_REPLY_INTEGER ? r->integer
                 : r->type == REDIS_REPLY_STRING ? atoll(r->str) : -98;

    if (r)
        freeReplyObject(r);
    return n;
}

/* The semaphore name made anew with 1 permit. */
static void setup(const char *name)
{
    char tk[160];

    snprintf(tk, sizeof tk, "{%s}:timeout", name);
    srv_num("DEL %s", tk);
    srv_num("SET %s 1", name);
}

/* The next call's reply lost: clients paused (it never runs), or the server asleep (it runs
 * when it wakes; *x to end the sleep). 0, or -1. */
static int lose(int sc, redisContext **x)
{
    *x = NULL;
    if (sc == SEM_LOST)
        return rlk_fx_client_pause(&srv, LOST_MS);
    return (*x = rlk_fx_sleep_begin(&srv, LOST_MS)) ? 0 : -1;
}

static void blocking(int sc, const char *name, outcome *o)
{
    rlk_options opt;
    rlk_client *c;
    rlk_semaphore *s = NULL;
    rlk_psemaphore *p = NULL;
    redisContext *x;
    long long n = 0;

    rlk_options_init(&opt);
    opt.url = url;
    opt.command_timeout_ms = CMD_TIMEOUT_MS;
    opt.pool_size = 2;
    REQUIRE((c = rlk_connect(&opt)) != NULL && rlk_err(c) == RLK_OK);
    setup(name);
    if (sc == SEM_LOST) {
        REQUIRE((s = rlk_semaphore_new(c, name)) != NULL);
        REQUIRE(rlk_semaphore_try_acquire(s, 1, 0) == RLK_OK);     /* connected, loaded */
        REQUIRE(rlk_semaphore_release(s, 1, &n) == RLK_OK && n == 1);
    } else {
        REQUIRE((p = rlk_psemaphore_new(c, name)) != NULL);
        REQUIRE(rlk_psemaphore_acquire(p, 30000, o->id) == RLK_OK);  /* the script loaded */
        REQUIRE(rlk_psemaphore_release(p, o->id) == RLK_OK);
    }
    REQUIRE(lose(sc, &x) == 0);
    o->err = s ? rlk_semaphore_try_acquire(s, 1, 10000)
               : rlk_psemaphore_try_acquire(p, 10000, 30000, o->id);
    if (x)
        rlk_fx_sleep_end(x);
    snprintf(o->msg, sizeof o->msg, "%s", o->err == RLK_OK ? "" : rlk_errstr(c));
    rlk_semaphore_free(s);
    rlk_psemaphore_free(p);
    rlk_free(c);
}

#define RUN(c, x, expr) do { memset(&(x), 0, sizeof(x)); AP_REQ(expr); \
                             REQUIRE(ap_wait_res(&(c), &(x), 15000)); } while (0)

static void async(int sc, const char *name, outcome *o)
{
    redisContext *x;
    ap_cl c;
    ap_res res;

    REQUIRE(ap_cl_open(&c, url, 0, 0, CMD_TIMEOUT_MS) == RLK_OK);
    setup(name);
    /* connected first, the acquire script loaded */
    if (sc == SEM_LOST) {
        RUN(c, res, rlk_async_semaphore_acquire(c.ac, name, 1, 0, ap_on_res, &res));
        REQUIRE(res.err == RLK_OK);
        setup(name);
    } else {
        RUN(c, res, rlk_async_psemaphore_acquire(c.ac, name, 0, 30000, ap_on_res, &res));
        REQUIRE(res.err == RLK_OK);
        snprintf(o->id, sizeof o->id, "%.32s", res.id);
        RUN(c, res, rlk_async_psemaphore_release(c.ac, name, o->id, ap_on_res, &res));
        REQUIRE(res.err == RLK_OK);
    }
    REQUIRE(lose(sc, &x) == 0);
    if (sc == SEM_LOST)
        RUN(c, res, rlk_async_semaphore_acquire(c.ac, name, 1, 10000, ap_on_res, &res));
    else
        RUN(c, res, rlk_async_psemaphore_acquire(c.ac, name, 10000, 30000, ap_on_res, &res));
    if (x)
        rlk_fx_sleep_end(x);
    o->err = res.err;
    snprintf(o->msg, sizeof o->msg, "%s", res.errstr);
    snprintf(o->id, sizeof o->id, "%.32s", res.id);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
}

static void both(int sc, const char *name, int want)
{
    char an[128];
    outcome b = {.err = -1}, a = {.err = -1};
    long long nb, na;

    snprintf(an, sizeof an, "%s:async", name);
    blocking(sc, name, &b);
    nb = sc == SEM_LOST ? srv_num("GET %s", name) : srv_num("ZCARD {%s}:timeout", name);
    async(sc, an, &a);
    na = sc == SEM_LOST ? srv_num("GET %s", an) : srv_num("ZCARD {%s}:timeout", an);
    printf("  blocking: %s %s (server %lld)\n", rlk_strerror(b.err), b.msg, nb);
    printf("  async:    %s %s (server %lld)\n", rlk_strerror(a.err), a.msg, na);
    CHECKF(b.err == want && a.err == want, "results: blocking %s, async %s (want %s)",
           rlk_strerror(b.err), rlk_strerror(a.err), rlk_strerror(want));
    if (sc == SEM_LOST) {
        CHECK_STR_CONTAINS(b.msg, "may have been taken");
        CHECK_STR_CONTAINS(a.msg, "may have been taken");
        CHECKF(nb >= 0 && nb <= 1 && na >= 0 && na <= 1, "permits: blocking %lld, async %lld",
               nb, na);
    } else {
        CHECKF(strlen(b.id) == 32 && strlen(a.id) == 32, "ids: '%s' '%s'", b.id, a.id);
        CHECKF(nb == 1 && na == 1, "permits held: blocking %lld, async %lld", nb, na);
    }
}

static void test_sem_lost(void)
{
    both(SEM_LOST, "asb:sem", RLK_ERR_UNSETTLED);
}

static void test_psem_lost_ran(void)
{
    both(PSEM_LOST_RAN, "asb:psem", RLK_OK);
}

static const at_case cases[] = {
    {"sem_lost", test_sem_lost},
    {"psem_lost_ran", test_psem_lost_ran},
};

int main(int argc, char **argv)
{
    return AT_MAIN_DEBUG("async_sem_both", cases, argc > 1 ? argv[1] : "all", &srv, url);
}
