/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * native_valkey9.c - the token lock on Valkey 9's own commands (client/native.c)
 * against the token scripts, on a real Valkey 9 started by the fixture.
 *
 *   caps          COMMAND DOCS finds SET IFEQ and DELIFEQ (not DELEX)
 *   native_used   a native acquire/extend/release runs no EVALSHA and one
 *                 SET/SET/DELIFEQ each (INFO commandstats); RLK_NATIVE=off
 *                 runs EVALSHA only (the control: the switch is honoured)
 *   same_replies  one sequence of calls (holders, wrong tokens, a hash key,
 *                 bad arguments) from the same state gives the same reply or
 *                 the same error code and text with scripts and natively
 *   interop       a script holder seen, extended and released natively, and
 *                 a native holder seen, extended and released by the scripts
 *   expiry        a native holder's lease runs out: extend and release say 0,
 *                 another token acquires
 *   reconnect     after CLIENT KILL the client asks COMMAND DOCS again
 *   partial       a server with SET IFEQ only (Valkey 8.1, the answer set by
 *                 hand): acquire and extend native, release by script
 *   no_scripting  an ACL user with -@scripting: the scripts are refused
 *                 (NOPERM, the control), the native token lock works
 *   redlock       RedLock on three Valkey 9: after the first call (which
 *                 asks COMMAND DOCS), extend is SET IFEQ and unlock DELIFEQ on
 *                 every server (no PEXPIRE, no script); the keys hold the
 *                 RedLock's token and a script with another token cannot
 *                 release them; RLK_NATIVE=off (the control) runs scripts only
 *
 * Valkey 9 is $RLK_VALKEY9_SERVER, else /var/cache/rlk-servers/valkey9/bin/
 * valkey-server (tools/bootstrap builds it); absent: SKIP, exit 77.
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "fixture.h"

#include <rlk.h>

#include "client/client.h"
#include "client/conn.h"
#include "client/native.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VALKEY9_DEFAULT "/var/cache/rlk-servers/valkey9/bin/valkey-server"

static rlk_fx_server srv, more[2];
static char url[256];

static rlk_client *connect_url(const char *u)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = u;
    o.no_preload = 1;
    c = rlk_connect(&o);
    if (!c || rlk_err(c) != RLK_OK) {
        fprintf(stderr, "connect %s: %s\n", u, c ? rlk_errstr(c) : "NULL");
        exit(1);
    }
    return c;
}

static void native(int on)
{
    if (on)
        unsetenv("RLK_NATIVE");
    else
        setenv("RLK_NATIVE", "off", 1);
}

static void flush(void)
{
    redisReply *r = rlk_fx_command(&srv, "FLUSHALL");

    REQUIRE(r);
    freeReplyObject(r);
}

/* One call's outcome, printable: "nil", "int N", "err CODE text". */
static void call(rlk_client *c, const char *name, const char *key, int nargs, const char *a0,
                 const char *a1, char *out, size_t len)
{
    const char *keys[1] = {key}, *args[2] = {a0, a1};
    redisReply *r = NULL;
    int rc = rlk_eval(c, name, key ? 1 : 0, keys, nargs, args, &r);

    if (rc != RLK_OK)
        snprintf(out, len, "err %d %s", rc, rlk_errstr(c));
    else if (r->type == REDIS_REPLY_NIL)
        snprintf(out, len, "nil");
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(out, len, "int %lld", r->integer);
    else
        snprintf(out, len, "type %d", r->type);
    freeReplyObject(r);
}

static const char *call_s(rlk_client *c, const char *name, const char *key, int nargs,
                          const char *a0, const char *a1)
{
    static char buf[4][300];
    static int i;
    char *out = buf[i++ % 4];

    call(c, name, key, nargs, a0, a1, out, sizeof buf[0]);
    return out;
}

static long long stat_calls_on(const rlk_fx_server *s, const char *cmd)
{
    redisReply *r = rlk_fx_command(s, "INFO commandstats");
    char needle[64];
    const char *at;
    long long n = 0;

    if (!r || r->type != REDIS_REPLY_STRING) {
        CHECK(!"INFO commandstats answered");
        freeReplyObject(r);
        return -1;
    }
    snprintf(needle, sizeof needle, "cmdstat_%s:calls=", cmd);
    at = strstr(r->str, needle);
    if (at)
        n = atoll(at + strlen(needle));
    freeReplyObject(r);
    return n;
}

static long long stat_calls(const char *cmd)
{
    return stat_calls_on(&srv, cmd);
}

static void reset_stats(void)
{
    freeReplyObject(rlk_fx_command(&srv, "CONFIG RESETSTAT"));
}

static long long pttl(const char *key)
{
    redisReply *r = rlk_fx_command(&srv, "PTTL %s", key);
    long long v;

    CHECK(r && r->type == REDIS_REPLY_INTEGER);
    v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -100;
    freeReplyObject(r);
    return v;
}

static void test_caps(void)
{
    rlk_client *c = connect_url(url);
    int caps = -1;

    CHECK_INT_EQ(rlk_native_caps(c, &caps), RLK_OK);
    CHECK_INT_EQ(caps, RLK_NATIVE_SETIFEQ | RLK_NATIVE_DELIFEQ);
    rlk_free(c);
}

static void test_native_used(void)
{
    rlk_client *c = connect_url(url);

    flush();
    native(1);
    (void)call_s(c, "token/release", "warm", 1, "t", NULL);    /* detection out of the count */
    reset_stats();
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t1", "10000"), "nil");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "t1", "20000"), "int 1");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t1", NULL), "int 1");
    CHECK_INT_EQ(stat_calls("evalsha") + stat_calls("eval"), 0);
    CHECK_INT_EQ(stat_calls("set"), 2);
    CHECK_INT_EQ(stat_calls("delifeq"), 1);
    /* The control: switched off, the same calls are scripts only. */
    native(0);
    reset_stats();
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t1", "10000"), "nil");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "t1", "20000"), "int 1");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t1", NULL), "int 1");
    CHECK(stat_calls("evalsha") >= 3);     /* 3, and one more per NOSCRIPT (no preload) */
    CHECK_INT_EQ(stat_calls("delifeq"), 0);
    native(1);
    rlk_free(c);
}

/* A busy acquire is one round trip: the SET NX ... GET and the PTTL go out
 * together, and the reply is the holder's PTTL. */
static void test_busy_one_trip(void)
{
    rlk_client *c = connect_url(url);
    unsigned long long rt0;
    const char *got;

    flush();
    native(1);
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t1", "60000"), "nil");
    reset_stats();
    rt0 = rlk_conn_round_trips();
    got = call_s(c, "token/acquire", "k", 2, "t2", "10000");
    CHECKF(rlk_conn_round_trips() - rt0 == 1, "busy acquire: %llu round trips",
           rlk_conn_round_trips() - rt0);
    CHECKF(strncmp(got, "int ", 4) == 0 && atoll(got + 4) > 50000 && atoll(got + 4) <= 60000,
           "busy acquire replied '%s', not the holder's PTTL", got);
    CHECK_INT_EQ(stat_calls("set"), 1);
    CHECK_INT_EQ(stat_calls("pttl"), 1);
    CHECK_INT_EQ(stat_calls("evalsha") + stat_calls("eval"), 0);
    /* A free key: taken, in one round trip too. */
    rt0 = rlk_conn_round_trips();
    CHECK_STR_EQ(call_s(c, "token/acquire", "k2", 2, "t2", "10000"), "nil");
    CHECK(rlk_conn_round_trips() - rt0 == 1);
    CHECK(pttl("k2") > 5000);
    rlk_free(c);
}

/* The sequence run twice, from the same state; pttl replies are compared as
 * "positive" (the clock moves between the runs). */
static void run_sequence(rlk_client *c, char out[][300], int *n)
{
    static const struct {
        const char *name, *key;
        int nargs;
        const char *a0, *a1;
    } seq[] = {
        {"token/acquire", "k", 2, "t1", "10000"},
        {"token/acquire", "k", 2, "t1", "10000"},     /* its own token: not reentrant */
        {"token/acquire", "k", 2, "t2", "10000"},
        {"token/extend", "k", 2, "t2", "10000"},      /* wrong token */
        {"token/release", "k", 1, "t2", NULL},        /* wrong token */
        {"token/extend", "k", 2, "t1", "20000"},
        {"token/extend", "none", 2, "t1", "20000"},
        {"token/release", "none", 1, "t1", NULL},
        {"token/acquire", "h", 2, "t1", "10000"},     /* a hash */
        {"token/extend", "h", 2, "t1", "10000"},
        {"token/release", "h", 1, "t1", NULL},
        {"token/acquire", "k", 2, "t1", "0"},
        {"token/acquire", "k", 2, "t1", "01"},
        {"token/acquire", "k", 2, "t1", "1000000000001"},
        {"token/extend", "k", 2, "t1", "-5"},
        {"token/acquire", "k", 2, "", "10"},
        {"token/release", "k", 1, "", NULL},
        {"token/acquire", "k", 1, "t1", NULL},
        {"token/release", "k", 2, "t1", "x"},
        {"token/release", NULL, 1, "t1", NULL},
        {"token/release", "k", 1, "t1", NULL},
        {"token/acquire", "n", 2, "t3", "1000000000000"},
        {"token/release", "n", 1, "t3", NULL},
    };
    char big[1026];

    memset(big, 'x', 1025);
    big[1025] = '\0';
    flush();
    freeReplyObject(rlk_fx_command(&srv, "HSET h f 1"));
    *n = 0;
    for (size_t i = 0; i < sizeof seq / sizeof seq[0]; i++) {
        call(c, seq[i].name, seq[i].key, seq[i].nargs, seq[i].a0, seq[i].a1, out[*n], 300);
        if (strncmp(out[*n], "int ", 4) == 0 && atoll(out[*n] + 4) > 1000)
            snprintf(out[*n], 300, "int positive");
        (*n)++;
    }
    call(c, "token/acquire", "k", 2, big, "10", out[(*n)++], 300);
    call(c, "token/extend", "k", 2, big, "10", out[(*n)++], 300);
}

static void test_same_replies(void)
{
    rlk_client *c = connect_url(url);
    char scripts[40][300], natives[40][300];
    int ns = 0, nn = 0;

    native(0);
    run_sequence(c, scripts, &ns);
    native(1);
    reset_stats();
    run_sequence(c, natives, &nn);
    CHECK_INT_EQ(nn, ns);
    for (int i = 0; i < ns && i < nn; i++)
        CHECKF(strcmp(scripts[i], natives[i]) == 0, "call %d: script '%s', native '%s'", i,
               scripts[i], natives[i]);
    CHECK_INT_EQ(stat_calls("evalsha"), 0);      /* every native call was native */
    CHECK(stat_calls("delifeq") > 0);
    rlk_free(c);
}

static void test_interop(void)
{
    rlk_client *c = connect_url(url);

    flush();
    /* A script holder, seen by the native commands. */
    native(0);
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "s1", "10000"), "nil");
    native(1);
    CHECK_STR_PREFIX(call_s(c, "token/acquire", "k", 2, "n1", "10000"), "int ");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "n1", "10000"), "int 0");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "n1", NULL), "int 0");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "s1", "50000"), "int 1");
    CHECK(pttl("k") > 40000);
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "s1", NULL), "int 1");
    CHECK_INT_EQ(pttl("k"), -2);
    /* A native holder, seen by the scripts. */
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "n1", "10000"), "nil");
    native(0);
    CHECK_STR_PREFIX(call_s(c, "token/acquire", "k", 2, "s1", "10000"), "int ");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "s1", "10000"), "int 0");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "s1", NULL), "int 0");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "n1", "50000"), "int 1");
    CHECK(pttl("k") > 40000);
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "n1", NULL), "int 1");
    CHECK_INT_EQ(pttl("k"), -2);
    native(1);
    rlk_free(c);
}

static void test_expiry(void)
{
    rlk_client *c = connect_url(url);
    long long deadline;

    flush();
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t1", "30"), "nil");
    CHECK(pttl("k") > 0);
    /* No signal for an expiry: poll the key, bounded. */
    deadline = rlk_fx_now_ms() + 5000;
    while (pttl("k") != -2 && rlk_fx_now_ms() < deadline)
        rlk_fx_sleep_ms(5);
    REQUIRE(pttl("k") == -2);
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "t1", "10000"), "int 0");
    CHECK_INT_EQ(pttl("k"), -2);                 /* extend did not bring it back */
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t1", NULL), "int 0");
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t2", "10000"), "nil");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t1", NULL), "int 0");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t2", NULL), "int 1");
    rlk_free(c);
}

static void test_reconnect(void)
{
    rlk_client *c = connect_url(url);
    redisReply *r;

    flush();
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t1", "10000"), "nil");
    reset_stats();
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "t1", "10000"), "int 1");
    CHECK_INT_EQ(stat_calls("command|docs"), 0);           /* known: not asked again */
    r = rlk_fx_command(&srv, "CLIENT KILL TYPE normal SKIPME yes");
    REQUIRE(r && r->type == REDIS_REPLY_INTEGER && r->integer >= 1);
    freeReplyObject(r);
    /* The pool's connection is gone: the call reconnects (or fails once). */
    for (int i = 0; i < 3; i++)
        if (strcmp(call_s(c, "token/extend", "k", 2, "t1", "10000"), "int 1") == 0)
            break;
    CHECK(stat_calls("command|docs") >= 1);                /* a new connection asks again */
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t1", NULL), "int 1");
    rlk_free(c);
}

static void test_partial(void)
{
    rlk_client *c = connect_url(url);

    flush();
    (void)call_s(c, "token/release", "warm", 1, "t", NULL);    /* a connection, asked */
    atomic_store(&c->native_caps, RLK_NATIVE_KNOWN | RLK_NATIVE_SETIFEQ);
    reset_stats();
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t1", "10000"), "nil");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "t1", "20000"), "int 1");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t2", NULL), "int 0");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t1", NULL), "int 1");
    CHECK_INT_EQ(stat_calls("delifeq"), 0);
    CHECK_INT_EQ(stat_calls("pexpire"), 0);                 /* extend was SET IFEQ */
    CHECK(stat_calls("evalsha") >= 2);                      /* the two releases */
    CHECK_INT_EQ(stat_calls("command|docs"), 0);            /* the answer was kept */
    rlk_free(c);
}

static void test_no_scripting(void)
{
    char u[300];
    rlk_client *c;
    const char *out;

    snprintf(u, sizeof u, "redis://noscript:pw@127.0.0.1:%d", srv.port);
    c = connect_url(u);
    flush();
    /* The control: the scripts are refused to this user. */
    native(0);
    out = call_s(c, "token/acquire", "k", 2, "t1", "10000");
    CHECKF(strstr(out, "NOPERM") != NULL || strstr(out, "permission") != NULL,
           "script call by a -@scripting user: %s", out);
    CHECK_INT_EQ(pttl("k"), -2);
    native(1);
    CHECK_STR_EQ(call_s(c, "token/acquire", "k", 2, "t1", "10000"), "nil");
    CHECK_STR_PREFIX(call_s(c, "token/acquire", "k", 2, "t2", "10000"), "int ");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "t2", "10000"), "int 0");
    CHECK_STR_EQ(call_s(c, "token/extend", "k", 2, "t1", "50000"), "int 1");
    CHECK(pttl("k") > 40000);
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t2", NULL), "int 0");
    CHECK_STR_EQ(call_s(c, "token/release", "k", 1, "t1", NULL), "int 1");
    CHECK_INT_EQ(pttl("k"), -2);
    rlk_free(c);
}

static void test_redlock(void)
{
    const rlk_fx_server *all[3] = {&srv, &more[0], &more[1]};
    rlk_client *cl[3];
    char u[256], token[128];
    long long v;

    for (int i = 0; i < 3; i++) {
        REQUIRE(rlk_fx_url(all[i], 0, u, sizeof u) == 0);
        cl[i] = connect_url(u);
        freeReplyObject(rlk_fx_command(all[i], "FLUSHALL"));
    }
    for (int mode = 1; mode >= 0; mode--) {
        rlk_redlock *rl;

        native(mode);
        rl = rlk_redlock_new(cl, 3, "rl", NULL);
        REQUIRE(rl);
        for (int i = 0; i < 3; i++)
            freeReplyObject(rlk_fx_command(all[i], "CONFIG RESETSTAT"));
        CHECK_INT_EQ(rlk_redlock_lock(rl, 10000, &v), RLK_OK);
        CHECK_INT_EQ(rlk_redlock_extend(rl, 30000, &v), RLK_OK);
        CHECK_INT_EQ(rlk_redlock_extend(rl, 40000, &v), RLK_OK);
        CHECK_INT_EQ(rlk_redlock_token(rl, token, sizeof token), RLK_OK);
        for (int i = 0; i < 3; i++) {
            redisReply *r = rlk_fx_command(all[i], "GET rl");

            CHECK(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, token) == 0);
            freeReplyObject(r);
            r = rlk_fx_command(all[i], "PTTL rl");
            CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer > 30000);
            freeReplyObject(r);
        }
        /* Another token, by script: refused on every server. */
        native(0);
        for (int i = 0; i < 3; i++)
            CHECK_STR_EQ(call_s(cl[i], "token/release", "rl", 1, "not-the-token", NULL), "int 0");
        native(mode);
        CHECK_INT_EQ(rlk_redlock_unlock(rl), RLK_OK);
        for (int i = 0; i < 3; i++) {
            redisReply *r = rlk_fx_command(all[i], "EXISTS rl");

            CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 0);
            freeReplyObject(r);
            if (mode) {
                /* The extends: the first by script while COMMAND DOCS answered (when this
                 * client's answer was not known yet), the rest SET IFEQ. */
                CHECKF(stat_calls_on(all[i], "delifeq") == 1, "server %d: delifeq %lld", i,
                       stat_calls_on(all[i], "delifeq"));
                CHECKF(stat_calls_on(all[i], "pexpire") == 0, "server %d: pexpire %lld", i,
                       stat_calls_on(all[i], "pexpire"));
            } else {
                CHECK_INT_EQ(stat_calls_on(all[i], "delifeq"), 0);
                CHECK_INT_EQ(stat_calls_on(all[i], "pexpire"), 2);
            }
        }
        rlk_redlock_free(rl);
    }
    native(1);
    for (int i = 0; i < 3; i++)
        rlk_free(cl[i]);
}

int main(void)
{
    const char *exe = getenv("RLK_VALKEY9_SERVER");
    rlk_fx_config cfg;

    if (!exe || !*exe)
        exe = VALKEY9_DEFAULT;
    if (access(exe, X_OK) != 0) {
        fprintf(stderr, "SKIP: Valkey 9 not installed (%s; tools/bootstrap builds it)\n", exe);
        return RLK_FX_SKIP;
    }
    setenv("RLK_TEST_SERVER", "valkey", 1);
    setenv("RLK_VALKEY_SERVER", exe, 1);
    unsetenv("RLK_NATIVE");
    rlk_fx_config_init(&cfg);
    cfg.acl_user = "noscript on >pw ~* &* +@all -@scripting";
    cfg.tls = -1;
    if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, 0, url, sizeof url) != 0 ||
        rlk_fx_start_n(more, 2, NULL) != 0)
        return 1;
    RUN_TEST(test_caps);
    RUN_TEST(test_native_used);
    RUN_TEST(test_same_replies);
    RUN_TEST(test_busy_one_trip);
    RUN_TEST(test_interop);
    RUN_TEST(test_expiry);
    RUN_TEST(test_reconnect);
    RUN_TEST(test_partial);
    RUN_TEST(test_no_scripting);
    RUN_TEST(test_redlock);
    rlk_fx_stop_n(more, 2);
    rlk_fx_stop(&srv);
    return check_summary("native_valkey9");
}
