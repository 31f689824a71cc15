/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_elect_both.c - a lost campaign reply settled alike on both APIs (the acquisition
 * machine, kinds/acq.h, on the election's row): the same scripted scenario, against one real
 * redis-server, through the blocking API (rlk_elect_campaign) and through the loop
 * (rlk_async_elect_campaign) must end the same way.
 *
 *   campaign_ran    nobody leads; a single-try campaign (30 s lease) written while the server
 *                   is asleep (DEBUG SLEEP past the command timeout): its reply is lost, it
 *                   runs when the server wakes. Read back by its held script: it ran, adopted:
 *                   RLK_OK with the term the server records, the candidate the leader, the
 *                   client's term the same, one lost reply counted.
 *   campaign_led    another client leads; the same single-try campaign, its reply lost the same
 *                   way. Read back: it did not take the leadership, and a single try is not sent
 *                   again: RLK_ERR_TIMEOUT "election NAME: <cause> (settled: the acquire did not
 *                   take the lock)" on both APIs (the one rule of a settled lost reply: which
 *                   lock first, whatever the transport said), the other leader untouched.
 *   campaign_busy   another client leads; a campaign waiting 300 ms (no reply lost) ends
 *                   RLK_ERR_BUSY "election NAME: another candidate leads after N ms" on both.
 *
 *   rlk_async_elect_both_<loop> <case>|all
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture.h"
#include "aloop.h"
#include "async_procs.h"
#include "rlk.h"
#include "rlk_async.h"

#define CMD_TIMEOUT_MS 300
#define SLEEP_MS 1200       /* past the command timeout: the reply is lost */
#define LEASE_MS 30000

static rlk_fx_server srv;
static char url[512];

/* How one API's campaign ended, and what the server says after it. */
typedef struct outcome {
    int err;
    char msg[512];
    long long term;             /* the campaign's */
    long long known;            /* the client's term after it (0: none) */
    char owner[256];            /* the candidate */
    rlk_elect_info leader;      /* the server's leadership after it */
    unsigned long long lost;    /* lost replies counted */
} outcome;

static rlk_client *open_client(void)
{
    rlk_options opt;

    rlk_options_init(&opt);
    opt.url = url;
    opt.command_timeout_ms = CMD_TIMEOUT_MS;
    opt.pool_size = 2;
    return rlk_connect(&opt);
}

/* Another client leads name (its handle kept in *e, on *c). */
static void rival(const char *name, rlk_client **c, rlk_elect **e)
{
    long long term = 0;

    REQUIRE((*c = open_client()) != NULL && rlk_err(*c) == RLK_OK);
    REQUIRE((*e = rlk_elect_new(*c, name)) != NULL);
    REQUIRE(rlk_elect_campaign(*e, "rival", 0, LEASE_MS, &term) == RLK_OK && term > 0);
}

static void read_leader(const char *name, outcome *o)
{
    rlk_client *c = open_client();
    rlk_elect *e;

    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    REQUIRE((e = rlk_elect_new(c, name)) != NULL);
    REQUIRE(rlk_elect_leader(e, &o->leader) == RLK_OK);
    rlk_elect_free(e);
    rlk_free(c);
}

enum { RAN, LED, BUSY };

static void blocking(const char *name, int sc, outcome *o)
{
    rlk_client *c = open_client(), *rc = NULL;
    rlk_elect *e, *re = NULL;
    rlk_metrics m0, m;
    redisContext *x = NULL;

    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    if (sc != RAN)
        rival(name, &rc, &re);
    /* connected first, the campaign's script loaded (a campaign on another name) */
    REQUIRE((e = rlk_elect_new(c, "aeb:warm")) != NULL);
    REQUIRE(rlk_elect_campaign(e, "w", 0, LEASE_MS, &o->term) == RLK_OK);
    rlk_elect_free(e);
    REQUIRE((e = rlk_elect_new(c, name)) != NULL);
    REQUIRE(rlk_elect_owner(e, o->owner, sizeof o->owner) == RLK_OK);
    REQUIRE(rlk_metrics_get(c, &m0) == RLK_OK);
    REQUIRE(sc == BUSY || (x = rlk_fx_sleep_begin(&srv, SLEEP_MS)) != NULL);
    o->err = rlk_elect_campaign(e, "me", sc == BUSY ? 300 : 0, LEASE_MS, &o->term);
    if (sc != BUSY)
        rlk_fx_sleep_end(x);
    snprintf(o->msg, sizeof o->msg, "%s", o->err == RLK_OK ? "" : rlk_errstr(c));
    REQUIRE(rlk_metrics_get(c, &m) == RLK_OK);
    o->lost = m.lost_replies - m0.lost_replies;
    if (rlk_elect_term(e, &o->known) != RLK_OK)
        o->known = 0;
    read_leader(name, o);
    rlk_elect_free(e);
    rlk_free(c);
    rlk_elect_free(re);
    rlk_free(rc);
}

#define RUN(c, x, expr) do { memset(&(x), 0, sizeof(x)); AP_REQ(expr); \
                             REQUIRE(ap_wait_res(&(c), &(x), 15000)); } while (0)

static void async(const char *name, int sc, outcome *o)
{
    rlk_client *rc = NULL;
    rlk_elect *re = NULL;
    rlk_metrics m0, m;
    redisContext *x = NULL;
    ap_cl c;
    ap_res res;

    if (sc != RAN)
        rival(name, &rc, &re);
    REQUIRE(ap_cl_open(&c, url, 0, 0, CMD_TIMEOUT_MS) == RLK_OK);
    /* connected first, the campaign's script loaded (a campaign on another name) */
    RUN(c, res, rlk_async_elect_campaign(c.ac, "aeb:warm:async", 1, "w", 0, LEASE_MS, ap_on_res,
                                         &res));
    REQUIRE(res.err == RLK_OK);
    snprintf(o->owner, sizeof o->owner, "%s:%d", rlk_async_uuid(c.ac), 1);
    REQUIRE(rlk_async_metrics_get(c.ac, &m0) == RLK_OK);
    REQUIRE(sc == BUSY || (x = rlk_fx_sleep_begin(&srv, SLEEP_MS)) != NULL);
    RUN(c, res, rlk_async_elect_campaign(c.ac, name, 1, "me", sc == BUSY ? 300 : 0, LEASE_MS,
                                         ap_on_res, &res));
    if (sc != BUSY)
        rlk_fx_sleep_end(x);
    o->err = res.err;
    o->term = res.err == RLK_OK ? res.value : 0;
    snprintf(o->msg, sizeof o->msg, "%s", res.errstr);
    REQUIRE(rlk_async_metrics_get(c.ac, &m) == RLK_OK);
    o->lost = m.lost_replies - m0.lost_replies;
    if (rlk_async_elect_term(c.ac, name, 1, &o->known) != RLK_OK)
        o->known = 0;
    read_leader(name, o);
    ap_cl_close(&c);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    rlk_elect_free(re);
    rlk_free(rc);
}

static void show(const char *api, const outcome *o)
{
    printf("  %-9s %s %s (term %lld, client's %lld; leader %s term %lld; lost %llu)\n", api,
           rlk_strerror(o->err), o->msg, o->term, o->known,
           o->leader.holder ? o->leader.holder : "-", o->leader.term, o->lost);
}

static void both(const char *name, int sc, int want)
{
    char an[128];
    outcome b = {.err = -1}, a = {.err = -1};
    const outcome *o[2] = {&b, &a};

    snprintf(an, sizeof an, "%s:async", name);
    blocking(name, sc, &b);
    async(an, sc, &a);
    show("blocking:", &b);
    show("async:", &a);
    CHECKF(sc == BUSY || (b.lost >= 1 && a.lost >= 1), "the campaign's reply lost: blocking "
           "%llu, async %llu", b.lost, a.lost);
    CHECKF(b.err == want && a.err == want, "results: blocking %s, async %s (want %s)",
           rlk_strerror(b.err), rlk_strerror(a.err), rlk_strerror(want));
    for (int i = 0; i < 2; i++) {
        const char *holder = o[i]->leader.holder ? o[i]->leader.holder : "";
        char lock[160];

        snprintf(lock, sizeof lock, "election %s: ", i ? an : name);
        CHECKF(sc == RAN || strncmp(o[i]->msg, lock, strlen(lock)) == 0, "%s: '%s' does not "
               "start with '%s'", i ? "async" : "blocking", o[i]->msg, lock);

        CHECK(o[i]->leader.leader);
        if (sc != RAN) {
            CHECK_STR_CONTAINS(o[i]->msg, sc == BUSY ? "another candidate leads after"
                                          : "(settled: the acquire did not take the lock)");
            CHECKF(strcmp(holder, o[i]->owner) != 0, "the candidate %s leads", holder);
            CHECK_INT_EQ(o[i]->known, 0);
            CHECK_INT_EQ(o[i]->term, 0);
            continue;
        }
        CHECK_STR_EQ(holder, o[i]->owner);
        CHECKF(o[i]->term > 0 && o[i]->term == o[i]->leader.term && o[i]->known == o[i]->term,
               "terms: the campaign's %lld, the client's %lld, the server's %lld", o[i]->term,
               o[i]->known, o[i]->leader.term);
    }
    rlk_elect_info_clear(&b.leader);
    rlk_elect_info_clear(&a.leader);
}

static void test_campaign_ran(void)
{
    both("aeb:ran", RAN, RLK_OK);
}

static void test_campaign_led(void)
{
    both("aeb:led", LED, RLK_ERR_TIMEOUT);
}

static void test_campaign_busy(void)
{
    both("aeb:busy", BUSY, RLK_ERR_BUSY);
}

static const at_case cases[] = {
    {"campaign_ran", test_campaign_ran},
    {"campaign_led", test_campaign_led},
    {"campaign_busy", test_campaign_busy},
};

int main(int argc, char **argv)
{
    return AT_MAIN_DEBUG("async_elect_both", cases, argc > 1 ? argv[1] : "all", &srv, url);
}
