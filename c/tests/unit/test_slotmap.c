/*
 * test_slotmap.c - the cluster map shared by the blocking cluster variant
 * and the non-blocking engine (client/slotmap.h): the one MOVED/ASK parser
 * (IPv4, IPv6 in brackets, a host name, an error text as
 * rlk_set_reply_error words it, an unknown endpoint, malformed replies),
 * the one "not now" list, and the map loaded from a CLUSTER SLOTS reply
 * and moved by a redirect. No server needed.
 */
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "client/slotmap.h"
#include "check.h"

static void test_redirects(void)
{
    static const struct {
        const char *text;
        int kind, slot, port;
        const char *host;
    } cases[] = {
        {"MOVED 3999 127.0.0.1:6381", RLK_SLOTMAP_MOVED, 3999, 6381, "127.0.0.1"},
        {"ASK 0 10.1.2.3:7000", RLK_SLOTMAP_ASK, 0, 7000, "10.1.2.3"},
        {"MOVED 16383 [::1]:7002", RLK_SLOTMAP_MOVED, 16383, 7002, "::1"},
        {"ASK 12 [fe80::1:2]:6379", RLK_SLOTMAP_ASK, 12, 6379, "fe80::1:2"},
        {"MOVED 5 node-3.example:6379", RLK_SLOTMAP_MOVED, 5, 6379, "node-3.example"},
        {"EVALSHA reentrant/acquire 127.0.0.1:7000: MOVED 866 [2001:db8::7]:7001",
         RLK_SLOTMAP_MOVED, 866, 7001, "2001:db8::7"},
        {"MOVED 1 :6379", RLK_SLOTMAP_MOVED, 1, 6379, ""},  /* an unknown endpoint */
    };
    static const char *const none[] = {
        "MOVED 16384 127.0.0.1:1", "MOVED -1 h:1", "MOVED x h:1", "MOVED 1 h", "MOVED 1 h:0",
        "MOVED 1 h:65536", "MOVED 1 h:", "MOVEDX 1 h:1", "ERR MOVED 1 h:1", "ASKING",
        "TRYAGAIN Multiple keys request during rehashing of slot", "", "MOVED",
    };
    char host[RLK_SLOTMAP_HOST_MAX], small[4];

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int slot = -1, port = -1, kind;

        strcpy(host, "?");
        kind = rlk_slotmap_redirect(cases[i].text, &slot, host, sizeof host, &port);
        CHECKF(kind == cases[i].kind, "%s: kind %d", cases[i].text, kind);
        CHECKF(slot == cases[i].slot, "%s: slot %d", cases[i].text, slot);
        CHECKF(port == cases[i].port, "%s: port %d", cases[i].text, port);
        CHECKF(strcmp(host, cases[i].host) == 0, "%s: host \"%s\"", cases[i].text, host);
    }
    for (size_t i = 0; i < sizeof none / sizeof none[0]; i++) {
        int slot, port;

        CHECKF(rlk_slotmap_redirect(none[i], &slot, host, sizeof host, &port) == RLK_SLOTMAP_NONE,
               "%s: parsed", none[i]);
    }
    {
        int slot, port;

        /* A host longer than the buffer is refused, not cut. */
        CHECK_INT_EQ(rlk_slotmap_redirect("MOVED 1 abcd:1", &slot, small, sizeof small, &port),
                     RLK_SLOTMAP_NONE);
        CHECK_INT_EQ(rlk_slotmap_redirect("MOVED 1 [::1]:1", &slot, small, sizeof small, &port),
                     RLK_SLOTMAP_MOVED);
        CHECK_STR_EQ(small, "::1");
    }
}

static void test_not_now(void)
{
    CHECK_INT_EQ(rlk_slotmap_not_now("LOADING Redis is loading the dataset in memory"),
                 RLK_SLOTMAP_LATER_HERE);
    CHECK_INT_EQ(rlk_slotmap_not_now("BUSY Redis is busy running a script"), RLK_SLOTMAP_LATER_HERE);
    CHECK_INT_EQ(rlk_slotmap_not_now("TRYAGAIN Multiple keys request during rehashing of slot"),
                 RLK_SLOTMAP_LATER_MAP);
    CHECK_INT_EQ(rlk_slotmap_not_now("CLUSTERDOWN The cluster is down"), RLK_SLOTMAP_LATER_MAP);
    CHECK_INT_EQ(rlk_slotmap_not_now("EVALSHA x 127.0.0.1:7000: MASTERDOWN Link with MASTER is down"),
                 RLK_SLOTMAP_LATER_MAP);
    CHECK_INT_EQ(rlk_slotmap_not_now("BUSYKEY Target key name already exists"), RLK_SLOTMAP_NOW);
    CHECK_INT_EQ(rlk_slotmap_not_now("ERR the script said LOADING"), RLK_SLOTMAP_NOW);
    CHECK_INT_EQ(rlk_slotmap_not_now("MOVED 1 h:1"), RLK_SLOTMAP_NOW);
    CHECK_INT_EQ(rlk_slotmap_not_now(""), RLK_SLOTMAP_NOW);
}

/* ---- a CLUSTER SLOTS reply built by hand */

static redisReply *r_int(long long v)
{
    redisReply *r = calloc(1, sizeof *r);

    r->type = REDIS_REPLY_INTEGER;
    r->integer = v;
    return r;
}

static redisReply *r_str(const char *s)
{
    redisReply *r = calloc(1, sizeof *r);

    r->type = REDIS_REPLY_STRING;
    r->str = strdup(s);
    r->len = strlen(s);
    return r;
}

static redisReply *r_arr(size_t n, redisReply **e)
{
    redisReply *r = calloc(1, sizeof *r);

    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n, sizeof *r->element);
    memcpy(r->element, e, n * sizeof *e);
    return r;
}

static redisReply *r_entry(long long lo, long long hi, const char *host, int port)
{
    redisReply *m[2] = {r_str(host), r_int(port)};
    redisReply *e[3] = {r_int(lo), r_int(hi), r_arr(2, m)};

    return r_arr(3, e);
}

static int hook_calls;

static int hook(void *arg, int idx, const char *host, int port)
{
    (void)host;
    (void)port;
    hook_calls++;
    return arg && idx >= *(int *)arg ? -1 : 0;  /* refuses from index *arg on */
}

static void test_map(void)
{
    rlk_slotmap m;
    redisReply *e[3] = {r_entry(0, 5460, "10.0.0.1", 7000), r_entry(5461, 10922, "", 7001),
                        r_entry(10923, 16383, "10.0.0.1", 7000)};
    redisReply *r = r_arr(3, e), *bad;
    int limit = 2;

    rlk_slotmap_init(&m, hook, NULL);
    CHECK_INT_EQ(rlk_slotmap_node(&m, "seed", 7005), 0);
    CHECK_INT_EQ(rlk_slotmap_node(&m, "seed", 7005), 0);
    CHECK_INT_EQ(rlk_slotmap_node(&m, "", 7005), -1);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 0), -1);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, -1), -1);
    CHECK_INT_EQ(rlk_slotmap_load(&m, r, "seed"), RLK_OK);
    CHECK_INT_EQ(m.loaded, 1);
    CHECK_INT_EQ(m.nnodes, 3);      /* seed, 10.0.0.1:7000, seed:7001 (the empty host) */
    CHECK_INT_EQ(m.nmasters, 2);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 0), 1);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 5461), 2);
    CHECK_STR_EQ(m.host[2], "seed");
    CHECK_INT_EQ(m.port[2], 7001);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 16383), 1);
    CHECK_INT_EQ(rlk_slotmap_is_master(&m, 0), 0);
    {
        int a = rlk_slotmap_owner(&m, -1), b = rlk_slotmap_owner(&m, -1);

        CHECK(a != b && (a == 1 || a == 2) && (b == 1 || b == 2));   /* in turn */
    }
    CHECK_INT_EQ(rlk_slotmap_move(&m, 0, 2), 1);
    CHECK_INT_EQ(rlk_slotmap_move(&m, 0, 2), 0);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 0), 2);
    CHECK_INT_EQ(rlk_slotmap_move(&m, 0, -1), 0);
    /* A malformed entry: refused, the map unchanged. */
    {
        redisReply *be[2] = {r_entry(0, 16384, "h", 1), r_entry(0, 1, "h", 1)};

        bad = r_arr(2, be);
        CHECK_INT_EQ(rlk_slotmap_entry_ok(bad->element[0]), 0);
        CHECK_INT_EQ(rlk_slotmap_entry_ok(bad->element[1]), 1);
        CHECK_INT_EQ(rlk_slotmap_load(&m, bad, "seed"), RLK_ERR_PROTOCOL);
        CHECK_INT_EQ(rlk_slotmap_owner(&m, 0), 2);
        freeReplyObject(bad);
    }
    rlk_slotmap_free(&m);
    /* A node its driver cannot make is left out; the rest is loaded. */
    hook_calls = 0;
    rlk_slotmap_init(&m, hook, &limit);
    CHECK_INT_EQ(rlk_slotmap_node(&m, "seed", 7005), 0);
    CHECK_INT_EQ(rlk_slotmap_load(&m, r, "seed"), RLK_ERR_NOMEM);
    CHECK_INT_EQ(m.nnodes, 2);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 0), 1);
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 5461), -1);     /* its node was left out */
    CHECK_INT_EQ(rlk_slotmap_owner(&m, 10923), 1);
    CHECK(hook_calls >= 3);
    rlk_slotmap_free(&m);
    freeReplyObject(r);
}

int main(void)
{
    RUN_TEST(test_redirects);
    RUN_TEST(test_not_now);
    RUN_TEST(test_map);
    return check_summary("test_slotmap");
}
