/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_client.c - the rlk client against real redis-servers: URLs, auth,
 * NOSCRIPT recovery, reconnects, timeouts, bundles, and a bad argument to
 * every embedded script (which must fail with RLK_* and change nothing).
 *
 * Usage: it_client [BUNDLE_DIR]   (default: RLK_IT_BUNDLE_DIR, set by CMake)
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"
#include "fixture.h"
#include "badargs.h"

#include <rlk.h>

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef RLK_IT_BUNDLE_DIR
#define RLK_IT_BUNDLE_DIR ""
#endif

static const char *bundle_dir = RLK_IT_BUNDLE_DIR;

/* One server for the tests that need nothing special. */
static rlk_fx_server plain;

/* ------------------------------------------------------------ helpers */

static rlk_client *connect_opts(const char *url, int no_preload)
{
    rlk_options o;

    rlk_options_init(&o);
    o.url = url;
    o.no_preload = no_preload;
    return rlk_connect(&o);
}

static rlk_client *connect_plain(int db)
{
    char url[128];

    if (rlk_fx_url(&plain, db, url, sizeof url) != 0)
        return NULL;
    return connect_opts(url, 0);
}

/* 1 when the client works: PING through it answers PONG. */
static int client_pings_quiet(rlk_client *c, int quiet)
{
    const char *argv[] = {"PING"};
    redisReply *r = NULL;
    int rc = rlk_command(c, 1, argv, NULL, &r);
    int ok = rc == RLK_OK && r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "PONG") == 0;

    if (!ok && !quiet)
        fprintf(stderr, "  PING through rlk: %s (%s)\n", rlk_strerror(rc), rlk_errstr(c));
    if (r)
        freeReplyObject(r);
    return ok;
}

static int client_pings(rlk_client *c)
{
    return client_pings_quiet(c, 0);
}

static int client_set(rlk_client *c, const char *key, const char *value)
{
    const char *argv[] = {"SET", key, value};
    redisReply *r = NULL;
    int rc = rlk_command(c, 3, argv, NULL, &r);

    if (r)
        freeReplyObject(r);
    return rc;
}

/* GET key in db through a fresh fixture connection; "" when missing. */
static char *server_get(const rlk_fx_server *s, int db, const char *key)
{
    redisContext *ctx = rlk_fx_connect(s);
    redisReply *r;
    char *out = NULL;

    if (!ctx)
        return strdup("(no connection)");
    r = redisCommand(ctx, "SELECT %d", db);
    if (r)
        freeReplyObject(r);
    r = redisCommand(ctx, "GET %s", key);
    if (r && r->type == REDIS_REPLY_STRING)
        out = strdup(r->str);
    else
        out = strdup("");
    if (r)
        freeReplyObject(r);
    redisFree(ctx);
    return out;
}

static int check_server_value(const rlk_fx_server *s, int db, const char *key,
                              const char *want)
{
    char *got = server_get(s, db, key);
    int ok = CHECKF(strcmp(got, want) == 0, "db %d %s = \"%s\", expected \"%s\"", db, key,
                    got, want);
    free(got);
    return ok;
}

static long long info_field(redisContext *ctx, const char *section, const char *field)
{
    redisReply *r = redisCommand(ctx, "INFO %s", section);
    long long v = -1;
    char *p;

    if (r && r->type == REDIS_REPLY_STRING && (p = strstr(r->str, field)) != NULL)
        v = atoll(p + strlen(field) + 1);
    if (r)
        freeReplyObject(r);
    return v;
}

static void server_do(const rlk_fx_server *s, const char *cmd)
{
    redisReply *r = rlk_fx_command(s, cmd);
    CHECKF(r && r->type != REDIS_REPLY_ERROR, "%s failed: %s", cmd,
           r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
}

/* Number of the client's scripts the server holds (rlk_verify_scripts). */
static int count_present(rlk_client *c, int *rc_out)
{
    size_t n = rlk_script_count(c);
    int *present = calloc(n ? n : 1, sizeof *present);
    int count = 0;

    *rc_out = rlk_verify_scripts(c, present);
    for (size_t i = 0; i < n; i++)
        count += present[i] != 0;
    free(present);
    return count;
}

static int script_present(rlk_client *c, const char *name)
{
    size_t n = rlk_script_count(c);
    int *present = calloc(n ? n : 1, sizeof *present);
    int found = -1;

    if (rlk_verify_scripts(c, present) == RLK_OK) {
        for (size_t i = 0; i < n; i++)
            if (strcmp(rlk_script_at(c, i)->name, name) == 0)
                found = present[i] != 0;
    }
    free(present);
    return found;
}

static int eval2(rlk_client *c, const char *name, const char *key, const char *a1,
                 const char *a2, redisReply **reply)
{
    const char *keys[] = {key};
    const char *args[] = {a1, a2};
    return rlk_eval(c, name, 1, keys, a2 ? 2 : 1, args, reply);
}

/* ------------------------------------------------------------ basics */

static void test_strerror(void)
{
    CHECK_STR_EQ(rlk_strerror(RLK_ERR_IO), "RLK_ERR_IO");
    CHECK_STR_EQ(rlk_strerror(RLK_ERR_AUTH), "RLK_ERR_AUTH");
    for (int i = RLK_OK; i <= RLK_ERR_LOST; i++) {
        CHECKF(rlk_strerror(i) != NULL && rlk_strerror(i)[0] != '\0', "strerror(%d)", i);
        for (int j = RLK_OK; j < i; j++)
            CHECKF(strcmp(rlk_strerror(i), rlk_strerror(j)) != 0, "strerror(%d) == strerror(%d)",
                   i, j);
    }
}

static void test_connect_tcp(void)
{
    char url[128];
    rlk_client *c;
    int rc;

    REQUIRE(rlk_fx_url(&plain, -1, url, sizeof url) == 0);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "connect %s: %s", url, rlk_errstr(c));
    CHECK(client_pings(c));
    CHECK_STR_CONTAINS(rlk_client_url(c), "127.0.0.1");
    CHECK(rlk_script_count(c) == rlk_embedded_count());
    /* Connect preloads every script. */
    CHECK_INT_EQ(count_present(c, &rc), (long long)rlk_script_count(c));
    CHECK_INT_EQ(rc, RLK_OK);
    rlk_free(c);
}

static void test_connect_env_url(void)
{
    char url[128];
    rlk_options o;
    rlk_client *c;

    REQUIRE(rlk_fx_url(&plain, 2, url, sizeof url) == 0);
    setenv("RLK_URL", url, 1);
    rlk_options_init(&o);
    c = rlk_connect(&o); /* url NULL: $RLK_URL */
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "%s", rlk_errstr(c));
    CHECK_INT_EQ(client_set(c, "it:env", "from-env"), RLK_OK);
    check_server_value(&plain, 2, "it:env", "from-env");
    rlk_free(c);

    setenv("RLK_URL", "redis://127.0.0.1:notaport", 1);
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_URL);
    rlk_free(c);
    unsetenv("RLK_URL");
}

static void test_connect_unix_and_db(void)
{
    rlk_fx_config cfg;
    rlk_fx_server s;
    rlk_client *c;
    char url[512];

    rlk_fx_config_init(&cfg);
    cfg.unixsocket = 1;
    REQUIRE(rlk_fx_start(&s, &cfg) == 0);

    REQUIRE(rlk_fx_unix_url(&s, -1, url, sizeof url) == 0);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "connect %s: %s", url, rlk_errstr(c));
    CHECK_INT_EQ(client_set(c, "it:unix", "db0"), RLK_OK);
    rlk_free(c);
    check_server_value(&s, 0, "it:unix", "db0");

    REQUIRE(rlk_fx_unix_url(&s, 3, url, sizeof url) == 0);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "connect %s: %s", url, rlk_errstr(c));
    CHECK_INT_EQ(client_set(c, "it:unix3", "db3"), RLK_OK);
    rlk_free(c);
    check_server_value(&s, 3, "it:unix3", "db3");
    check_server_value(&s, 0, "it:unix3", "");

    REQUIRE(rlk_fx_url(&s, 5, url, sizeof url) == 0);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_OK, "connect %s: %s", url, rlk_errstr(c));
    CHECK_INT_EQ(client_set(c, "it:tcp5", "db5"), RLK_OK);
    rlk_free(c);
    check_server_value(&s, 5, "it:tcp5", "db5");
    check_server_value(&s, 0, "it:tcp5", "");
    rlk_fx_stop(&s);
}

static void test_bad_urls(void)
{
    char urls[16][320];
    int n = 0, port = plain.port;
    redisContext *ctl = rlk_fx_connect(&plain);
    long long before, after;

    REQUIRE(ctl != NULL);
    snprintf(urls[n++], sizeof urls[0], "%s", "");
    snprintf(urls[n++], sizeof urls[0], "127.0.0.1:%d", port);
    snprintf(urls[n++], sizeof urls[0], "http://127.0.0.1:%d", port);
    snprintf(urls[n++], sizeof urls[0], "%s", "redis://");
    snprintf(urls[n++], sizeof urls[0], "%s", "redis://127.0.0.1:");
    snprintf(urls[n++], sizeof urls[0], "%s", "redis://127.0.0.1:notaport");
    snprintf(urls[n++], sizeof urls[0], "%s", "redis://127.0.0.1:65536");
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:%dx", port);
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:%d/abc", port);
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:%d/-1", port);
    snprintf(urls[n++], sizeof urls[0], "redis://127.0.0.1:%d/99999999999999999999", port);
    snprintf(urls[n++], sizeof urls[0], "%s", "unix://");
    snprintf(urls[n++], sizeof urls[0], "unix://%s?db=abc", plain.dir);

    before = info_field(ctl, "stats", "total_connections_received");
    for (int i = 0; i < n; i++) {
        rlk_client *c = rlk_connect_url(urls[i]);
        long long t0 = rlk_fx_now_ms();
        if (!CHECK(c != NULL))
            continue;
        CHECKF(rlk_err(c) == RLK_ERR_URL, "\"%s\": %s (%s), expected RLK_ERR_URL", urls[i],
               rlk_strerror(rlk_err(c)), rlk_errstr(c));
        CHECKF(rlk_errstr(c) && rlk_errstr(c)[0], "\"%s\": empty message", urls[i]);
        CHECKF(rlk_fx_now_ms() - t0 < 1000, "\"%s\": a malformed URL took long", urls[i]);
        rlk_free(c);
    }
    after = info_field(ctl, "stats", "total_connections_received");
    CHECKF(before >= 0 && after == before,
           "malformed URLs made %lld connections to the server", after - before);
    redisFree(ctl);
}

static void test_connection_refused(void)
{
    char url[320];
    int port = rlk_fx_refused_port();
    rlk_client *c;

    REQUIRE(port > 0);
    snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_ERR_IO, "%s: %s (%s)", url, rlk_strerror(rlk_err(c)),
           rlk_errstr(c));
    CHECK(rlk_errstr(c) && rlk_errstr(c)[0]);
    rlk_free(c);

    snprintf(url, sizeof url, "unix://%s/no-such.sock", plain.dir);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_ERR_IO, "%s: %s (%s)", url, rlk_strerror(rlk_err(c)),
           rlk_errstr(c));
    rlk_free(c);
}

static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; hay && *hay; hay++)
        if (strncasecmp(hay, needle, n) == 0)
            return 1;
    return 0;
}

/* cause: a word the error message must contain (NULL: no check). */
static void expect_auth(const rlk_fx_server *s, const char *userinfo, const char *path,
                        int want, const char *cause)
{
    char url[256];
    rlk_client *c;

    snprintf(url, sizeof url, "%s://%s127.0.0.1:%d%s", s->tls ? "rediss" : "redis", userinfo,
             s->port, path);
    c = rlk_connect_url(url);
    if (!CHECK(c != NULL))
        return;
    CHECKF(rlk_err(c) == want, "%s: %s (%s), expected %s", url, rlk_strerror(rlk_err(c)),
           rlk_errstr(c), rlk_strerror(want));
    if (want == RLK_OK)
        CHECK(client_pings(c));
    if (cause)
        CHECKF(contains_nocase(rlk_errstr(c), cause),
               "%s: message does not name the cause (%s): %s", url, cause, rlk_errstr(c));
    /* The password never shows in what the client reports back. */
    if (strstr(userinfo, "s3cret") || strstr(userinfo, "alicepw"))
        CHECKF(!strstr(rlk_client_url(c), "s3cret") && !strstr(rlk_client_url(c), "alicepw"),
               "password in rlk_client_url: %s", rlk_client_url(c));
    rlk_free(c);
}

static void test_auth(void)
{
    static const char *const carol[] = {"--user", "carol", "on", ">carolpw", "~*", "&*",
                                        "+@all", "-select", NULL};
    rlk_fx_config cfg;
    rlk_fx_server s;

    rlk_fx_config_init(&cfg);
    cfg.requirepass = "s3cret";
    cfg.acl_user = "alice on >alicepw ~* &* +@all";
    cfg.extra = carol;
    REQUIRE(rlk_fx_start(&s, &cfg) == 0);

    expect_auth(&s, ":s3cret@", "", RLK_OK, NULL);
    expect_auth(&s, ":s3cret@", "/1", RLK_OK, NULL);
    expect_auth(&s, "alice:alicepw@", "/2", RLK_OK, NULL);
    expect_auth(&s, ":wrong@", "", RLK_ERR_AUTH, "pass");
    expect_auth(&s, "alice:wrong@", "", RLK_ERR_AUTH, "pass");
    expect_auth(&s, "bob:alicepw@", "", RLK_ERR_AUTH, "pass");
    expect_auth(&s, "", "", RLK_ERR_AUTH, "auth");  /* NOAUTH: none given */
    expect_auth(&s, "carol:carolpw@", "", RLK_OK, NULL);
    expect_auth(&s, "carol:carolpw@", "/2", RLK_ERR_AUTH, "select"); /* refused by ACL */
    expect_auth(&s, ":s3cret@", "/99", RLK_ERR_AUTH, "select");      /* no such database */
    rlk_fx_stop(&s);
}

/* ------------------------------------------------------------ scripts */

static void test_verify_and_load(void)
{
    char url[128];
    rlk_client *c;
    int rc;
    size_t n;

    REQUIRE(rlk_fx_url(&plain, -1, url, sizeof url) == 0);
    server_do(&plain, "SCRIPT FLUSH");
    c = connect_opts(url, 1);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    n = rlk_script_count(c);
    REQUIRE(n > 0);
    CHECK_INT_EQ(count_present(c, &rc), 0);
    CHECK_INT_EQ(rc, RLK_OK);
    CHECK_INT_EQ(rlk_load_scripts(c), RLK_OK);
    CHECK_INT_EQ(count_present(c, &rc), (long long)n);
    CHECK_INT_EQ(rc, RLK_OK);

    /* The build's SHA-1 is the one the server computes from the body. */
    for (size_t i = 0; i < n; i++) {
        const rlk_script_info *si = rlk_script_at(c, i);
        redisContext *ctx = rlk_fx_connect(&plain);
        redisReply *r = ctx ? redisCommand(ctx, "SCRIPT LOAD %b", si->body, si->body_len) : NULL;
        CHECKF(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, si->sha1) == 0,
               "%s: build sha1 %s, server %s", si->name, si->sha1,
               r && r->type == REDIS_REPLY_STRING ? r->str : "?");
        CHECKF(rlk_script_find(c, si->name) == si, "rlk_script_find(%s)", si->name);
        if (r)
            freeReplyObject(r);
        if (ctx)
            redisFree(ctx);
    }
    server_do(&plain, "SCRIPT FLUSH");
    CHECK_INT_EQ(count_present(c, &rc), 0);
    rlk_free(c);
}

static void test_embedded_set(void)
{
    size_t n = rlk_embedded_count();

    CHECK(n >= 8);
    for (size_t i = 0; i < n; i++) {
        const rlk_script_info *si = rlk_embedded_at(i);
        if (!CHECK(si != NULL))
            continue;
        CHECKF(strlen(si->sha1) == 40 && strspn(si->sha1, "0123456789abcdef") == 40,
               "%s: sha1 %s", si->name, si->sha1);
        CHECKF(si->version >= 1, "%s: version %d", si->name, si->version);
        CHECKF(si->body && si->body_len == strlen(si->body), "%s: body", si->name);
        if (i > 0)
            CHECKF(strcmp(rlk_embedded_at(i - 1)->name, si->name) < 0, "not sorted at %s",
                   si->name);
    }
    CHECK(rlk_embedded_at(n) == NULL);
}

static void test_noscript_recovery(void)
{
    rlk_client *c = connect_plain(-1);
    redisReply *r = NULL;
    int rc;

    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    /* The script path is the subject: the token lock would go native on Valkey 9. */
    setenv("RLK_NATIVE", "off", 1);
    server_do(&plain, "FLUSHALL");
    rc = eval2(c, "token/acquire", "{it}:nos", "tok-a", "60000", &r);
    CHECKF(rc == RLK_OK && r && r->type == REDIS_REPLY_NIL, "first acquire: %s %s",
           rlk_strerror(rc), rlk_errstr(c));
    if (r)
        freeReplyObject(r);

    server_do(&plain, "SCRIPT FLUSH");
    CHECK_INT_EQ(count_present(c, &rc), 0);
    r = NULL;
    rc = eval2(c, "token/release", "{it}:nos", "tok-a", NULL, &r);
    CHECKF(rc == RLK_OK, "eval after SCRIPT FLUSH: %s (%s)", rlk_strerror(rc), rlk_errstr(c));
    CHECK(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1);
    if (r)
        freeReplyObject(r);
    CHECK_INT_EQ(script_present(c, "token/release"), 1);
    check_server_value(&plain, 0, "{it}:nos", "");
    unsetenv("RLK_NATIVE");
    rlk_free(c);
}

static void test_reconnect_after_restart(void)
{
    rlk_fx_server s;
    char url[128];
    rlk_client *c;
    redisReply *r;
    int rc;

    REQUIRE(rlk_fx_start(&s, NULL) == 0);
    REQUIRE(rlk_fx_url(&s, 4, url, sizeof url) == 0);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    CHECK_INT_EQ(client_set(c, "it:before", "1"), RLK_OK);

    if (!CHECK(rlk_fx_restart(&s) == 0)) {
        rlk_free(c);
        rlk_fx_stop(&s);
        return;
    }
    /* Every pooled connection is broken now; each call must still succeed. */
    for (int i = 0; i < 8; i++) {
        char key[32];
        snprintf(key, sizeof key, "{it}:after%d", i);
        r = NULL;
        const char *keys[3] = {key, "{it}:rlk_waiters", "{it}:rlk_next"};
        const char *args[3] = {"60000", "it:owner", "0"};

        rc = rlk_eval(c, "reentrant/acquire", 3, keys, 3, args, &r);
        CHECKF(rc == RLK_OK && r && r->type == REDIS_REPLY_NIL,
               "call %d after restart: %s (%s)", i, rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
    }
    CHECK_INT_EQ(count_present(c, &rc), (long long)rlk_script_count(c)); /* reloaded */
    CHECK_INT_EQ(client_set(c, "it:after", "db4"), RLK_OK);
    check_server_value(&s, 4, "it:after", "db4"); /* the database was restored */
    check_server_value(&s, 0, "it:after", "");

    /* A server that is gone: RLK_ERR_IO; back again: the next call works. */
    REQUIRE(rlk_fx_crash(&s) == 0);
    rc = client_set(c, "it:down", "1");
    CHECKF(rc == RLK_ERR_IO, "call to a dead server: %s (%s)", rlk_strerror(rc),
           rlk_errstr(c));
    CHECK_INT_EQ(rlk_err(c), rc);
    REQUIRE(rlk_fx_restart(&s) == 0);
    CHECK_INT_EQ(client_set(c, "it:up", "again"), RLK_OK);
    check_server_value(&s, 4, "it:up", "again");
    rlk_free(c);
    rlk_fx_stop(&s);
}

static void test_timeout_paused_server(void)
{
    rlk_fx_server s;
    rlk_options o;
    char url[128];
    rlk_client *c;
    long long t0, elapsed;
    int rc;

    REQUIRE(rlk_fx_start(&s, NULL) == 0);
    REQUIRE(rlk_fx_url(&s, -1, url, sizeof url) == 0);
    rlk_options_init(&o);
    o.url = url;
    o.connect_timeout_ms = 300;
    o.command_timeout_ms = 300;
    c = rlk_connect(&o);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);

    REQUIRE(rlk_fx_pause(&s) == 0);
    t0 = rlk_fx_now_ms();
    rc = client_set(c, "it:paused", "1");
    elapsed = rlk_fx_now_ms() - t0;
    CHECKF(rc == RLK_ERR_TIMEOUT, "SIGSTOPped server: %s (%s)", rlk_strerror(rc),
           rlk_errstr(c));
    /* At least one command timeout; at most a retry with a reconnect. */
    CHECKF(elapsed >= 250 && elapsed <= 4000, "timed out after %lld ms (timeouts 300 ms)",
           elapsed);
    REQUIRE(rlk_fx_resume(&s) == 0);
    /* Bounded poll: a resumed server on a busy machine may take longer than the 300 ms
     * command timeout to answer the first call (then that call times out, as it should). */
    t0 = rlk_fx_now_ms();
    while (!client_pings_quiet(c, 1) && rlk_fx_now_ms() - t0 < 5000)
        rlk_fx_sleep_ms(50);
    CHECK(client_pings(c));

    /* CLIENT PAUSE: the server runs but holds every client's commands. */
    REQUIRE(rlk_fx_client_pause(&s, 1500) == 0);
    t0 = rlk_fx_now_ms();
    rc = client_set(c, "it:cpaused", "1");
    elapsed = rlk_fx_now_ms() - t0;
    CHECKF(rc == RLK_ERR_TIMEOUT, "CLIENT PAUSE: %s (%s)", rlk_strerror(rc), rlk_errstr(c));
    CHECKF(elapsed >= 250 && elapsed <= 4000, "timed out after %lld ms", elapsed);
    /* Bounded poll until the pause runs out; then calls work again. */
    t0 = rlk_fx_now_ms();
    while (!client_pings_quiet(c, 1) && rlk_fx_now_ms() - t0 < 5000)
        rlk_fx_sleep_ms(50);
    CHECK(client_pings(c));
    rlk_free(c);
    rlk_fx_stop(&s);
}

static void test_api_misuse(void)
{
    rlk_client *c = connect_plain(-1);
    const char *keys[] = {"{it}:k"};
    const char *args[] = {"60000", "it:o"};
    const char *bad[] = {"NOSUCHCOMMAND", "x"};
    redisReply *r = NULL;
    int rc;

    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    CHECK(rlk_script_find(c, "no/such") == NULL);
    rc = rlk_eval(c, "no/such", 1, keys, 2, args, &r);
    CHECK_INT_EQ(rc, RLK_ERR_NOSUCHSCRIPT);
    CHECK(r == NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_NOSUCHSCRIPT);
    rc = rlk_eval(c, "reentrant/acquire", -1, keys, 2, args, &r);
    CHECK_INT_EQ(rc, RLK_ERR_ARG);
    rc = rlk_eval(c, NULL, 1, keys, 2, args, &r);
    CHECK_INT_EQ(rc, RLK_ERR_ARG);

    rc = rlk_command(c, 2, bad, NULL, &r);
    CHECK_INT_EQ(rc, RLK_ERR_SERVER);
    CHECK_STR_CONTAINS(rlk_errstr(c), "unknown command");
    if (r)
        freeReplyObject(r);
    /* The client keeps working after errors. */
    CHECK(client_pings(c));
    rlk_free(c);
}

/* ------------------------------------------------------------ bundles */

static int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int copy_tree(const char *from, const char *to)
{
    char cmd[1024];
    if (snprintf(cmd, sizeof cmd, "cp -R '%s/.' '%s/'", from, to) >= (int)sizeof cmd)
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

static int append_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    int ok;

    if (!f)
        return -1;
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    int ok;

    if (!f)
        return -1;
    ok = fputs(text, f) >= 0;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* The whole file, NUL-terminated; caller frees. NULL on failure. */
static char *read_all(const char *path)
{
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    long size;

    if (f && fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
        (buf = malloc((size_t)size + 1)) != NULL) {
        if (fread(buf, 1, (size_t)size, f) == (size_t)size) {
            buf[size] = '\0';
        } else {
            free(buf);
            buf = NULL;
        }
    }
    if (f)
        fclose(f);
    return buf;
}

/* Rewrites manifest.tsv sorted by name (the contract says sorted). */
static int sort_manifest(const char *dir)
{
    char cmd[1024];
    if (snprintf(cmd, sizeof cmd, "LC_ALL=C sort -o '%s/manifest.tsv' '%s/manifest.tsv'", dir,
                 dir) >= (int)sizeof cmd)
        return -1;
    return system(cmd) == 0 ? 0 : -1;
}

static void remove_tree(const char *dir)
{
    char cmd[1024];
    if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) < (int)sizeof cmd)
        CHECK(system(cmd) == 0);
}

static rlk_client *connect_bundle(const char *dir)
{
    char url[128];
    rlk_options o;

    rlk_fx_url(&plain, -1, url, sizeof url);
    rlk_options_init(&o);
    o.url = url;
    o.bundle_dir = dir;
    return rlk_connect(&o);
}

static void test_bundle_dir(void)
{
    char manifest[1024];
    rlk_client *c;
    redisReply *r = NULL;
    int rc;

    snprintf(manifest, sizeof manifest, "%s/manifest.tsv", bundle_dir);
    REQUIREF(file_exists(manifest), "no bundle at %s", manifest);
    c = connect_bundle(bundle_dir);
    REQUIRE(c != NULL);
    REQUIREF(rlk_err(c) == RLK_OK, "bundle %s: %s", bundle_dir, rlk_errstr(c));
    CHECK_INT_EQ(rlk_script_count(c), rlk_embedded_count());
    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *e = rlk_embedded_at(i);
        const rlk_script_info *b = rlk_script_find(c, e->name);
        if (!CHECKF(b != NULL, "bundle lacks %s", e->name))
            continue;
        CHECK_STR_EQ(b->sha1, e->sha1);
        CHECK_INT_EQ(b->numkeys, e->numkeys);
        CHECK_INT_EQ(b->version, e->version);
        CHECK(b->body_len == e->body_len && memcmp(b->body, e->body, e->body_len) == 0);
    }
    server_do(&plain, "FLUSHALL");
    rc = eval2(c, "token/acquire", "{it}:bundle", "tok-b", "60000", &r);
    CHECKF(rc == RLK_OK && r && r->type == REDIS_REPLY_NIL, "%s %s", rlk_strerror(rc),
           rlk_errstr(c));
    if (r)
        freeReplyObject(r);
    check_server_value(&plain, 0, "{it}:bundle", "tok-b");
    rlk_free(c);

    c = connect_bundle("/nonexistent/rlk-bundle");
    REQUIRE(c != NULL);
    CHECKF(rlk_err(c) == RLK_ERR_BUNDLE, "missing bundle: %s (%s)", rlk_strerror(rlk_err(c)),
           rlk_errstr(c));
    rlk_free(c);
}

static const char echo_body[] =
    "-- name: it/echo\n-- version: 1\n-- summary: test only\n-- redisson: none\n"
    "-- time: none\n-- KEYS[1]: key - unused\n-- ARGV[1]: value - echoed\n"
    "-- return string: value\n-- end\n"
    "return ARGV[1] .. '@' .. KEYS[1]\n";

/* A copy of the bundle plus it/echo: a bundle replaces the embedded set. */
static void test_bundle_extra_and_tampered(void)
{
    char dir[] = "/tmp/rlk-it-bundle-XXXXXX";
    char path[1024], line[256];
    const char *keys[] = {"{it}:k"};
    const char *args[] = {"hello"};
    redisReply *r = NULL, *sha;
    rlk_client *c;
    int rc;

    REQUIRE(mkdtemp(dir) != NULL);
    sha = rlk_fx_command(&plain, "SCRIPT LOAD %s", echo_body);
    REQUIRE(sha && sha->type == REDIS_REPLY_STRING);
    snprintf(line, sizeof line, "it/echo\t1\t1\t%s\n", sha->str);
    freeReplyObject(sha);
    snprintf(path, sizeof path, "%s/it", dir);
    if (!CHECK(copy_tree(bundle_dir, dir) == 0 && mkdir(path, 0700) == 0))
        goto out;
    snprintf(path, sizeof path, "%s/it/echo.lua", dir);
    CHECK(write_file(path, echo_body) == 0);
    snprintf(path, sizeof path, "%s/manifest.tsv", dir);
    CHECK(append_file(path, line) == 0 && sort_manifest(dir) == 0);

    c = connect_bundle(dir);
    if (CHECK(c != NULL)) {
        CHECKF(rlk_err(c) == RLK_OK, "extended bundle: %s", rlk_errstr(c));
        CHECK_INT_EQ(rlk_script_count(c), rlk_embedded_count() + 1);
        CHECK(rlk_script_find(c, "it/echo") != NULL);
        rc = rlk_eval(c, "it/echo", 1, keys, 1, args, &r);
        CHECKF(rc == RLK_OK && r && r->type == REDIS_REPLY_STRING &&
                   strcmp(r->str, "hello@{it}:k") == 0,
               "it/echo: %s (%s)", rlk_strerror(rc), rlk_errstr(c));
        if (r)
            freeReplyObject(r);
        rlk_free(c);
    }

    /* A body that does not match its manifest SHA-1 is refused. */
    snprintf(path, sizeof path, "%s/it/echo.lua", dir);
    CHECK(append_file(path, "-- tampered\n") == 0);
    c = connect_bundle(dir);
    if (CHECK(c != NULL)) {
        CHECKF(rlk_err(c) == RLK_ERR_BUNDLE || rlk_err(c) == RLK_ERR_SHA,
               "tampered bundle: %s (%s)", rlk_strerror(rlk_err(c)), rlk_errstr(c));
        rlk_free(c);
    }
out:
    remove_tree(dir);
}

/* ------------------------------------------------------------ bad arguments */

static void test_bad_arguments_every_script(void)
{
    char url[128];
    rlk_client *c;
    badargs_stats st;

    REQUIRE(rlk_fx_url(&plain, -1, url, sizeof url) == 0);
    c = rlk_connect_url(url);
    REQUIRE(c != NULL && rlk_err(c) == RLK_OK);
    memset(&st, 0, sizeof st);
    for (size_t i = 0; i < rlk_embedded_count(); i++)
        badargs_script(c, &plain, rlk_embedded_at(i), &st);
    printf("bad-argument calls: %d scripts (%d checked weakly), %d calls (%d expecting a "
           "specific code), %d rejected as specified, %d failures\n",
           st.scripts, st.weak_scripts, st.calls, st.exact, st.rejected, st.failures);
    CHECK_INT_EQ(st.scripts, (long long)rlk_embedded_count());
    CHECK(st.calls >= 10 * st.scripts);
    CHECK_INT_EQ(st.failures, 0);
    CHECK_INT_EQ(st.rejected, st.calls);
    rlk_free(c);
}

static const char *next_line(const char *line)
{
    const char *nl = strchr(line, '\n');
    return nl ? nl + 1 : NULL;
}

/* A copy of the bundle in which script `name` runs `inject` before anything
 * else (right after its header); the manifest gets the new SHA-1. */
static int make_leaky_bundle(const char *dir, const char *name, const char *inject)
{
    char path[1024], *body = NULL, *manifest = NULL, *out = NULL;
    const char *end_of_header, *line;
    redisReply *sha = NULL;
    size_t n;
    int rc = -1;

    snprintf(path, sizeof path, "%s/%s.lua", dir, name);
    if (copy_tree(bundle_dir, dir) != 0 || !(body = read_all(path)) ||
        !(end_of_header = strstr(body, "\n-- end\n")))
        goto done;
    end_of_header += strlen("\n-- end\n");
    n = strlen(body) + strlen(inject) + 2;
    if (!(out = malloc(n)))
        goto done;
    snprintf(out, n, "%.*s%s\n%s", (int)(end_of_header - body), body, inject, end_of_header);
    if (write_file(path, out) != 0)
        goto done;
    sha = rlk_fx_command(&plain, "SCRIPT LOAD %s", out);
    snprintf(path, sizeof path, "%s/manifest.tsv", dir);
    if (!sha || sha->type != REDIS_REPLY_STRING || !(manifest = read_all(path)))
        goto done;
    /* name<TAB>version<TAB>numkeys<TAB>sha1: swap the 40 hex digits. */
    for (line = manifest; line && *line; line = next_line(line)) {
        if (strncmp(line, name, strlen(name)) == 0 && line[strlen(name)] == '\t') {
            char *nl = strchr(line, '\n');
            if (nl && nl - line > 40)
                memcpy(nl - 40, sha->str, 40);
        }
    }
    rc = write_file(path, manifest);
done:
    if (sha)
        freeReplyObject(sha);
    free(body);
    free(manifest);
    free(out);
    return rc;
}

static void run_leaky(const char *name, const char *inject, const char *what)
{
    char dir[] = "/tmp/rlk-it-leaky-XXXXXX";
    badargs_stats st;
    rlk_client *c;

    REQUIRE(mkdtemp(dir) != NULL);
    if (CHECK(make_leaky_bundle(dir, name, inject) == 0)) {
        c = connect_bundle(dir);
        if (CHECK(c != NULL) && CHECKF(rlk_err(c) == RLK_OK, "%s", rlk_errstr(c))) {
            memset(&st, 0, sizeof st);
            st.quiet = 1;
            badargs_script(c, &plain, rlk_script_find(c, name), &st);
            printf("control, %s %s first: %d calls, %d failures found\n", name, what, st.calls,
                   st.failures);
            CHECK(st.calls > 0);
            CHECKF(st.failures == st.calls, "%s %s first: only %d of %d bad calls caught",
                   name, what, st.failures, st.calls);
        }
        if (c)
            rlk_free(c);
    }
    remove_tree(dir);
}

/* The checker itself: a script that writes or publishes before validating
 * must fail every case. */
static void test_bad_arguments_detector(void)
{
    run_leaky("token/release", "redis.call('incr', 'it:leak')", "writing");
    run_leaky("reentrant/renew", "redis.call('publish', 'it:leak', 'x')", "publishing");
    run_leaky("token/extend", "redis.call('pexpire', 'it:sentinel', 5000)", "expiring");
}

int main(int argc, char **argv)
{
    if (argc > 1)
        bundle_dir = argv[1];
    if (rlk_fx_start(&plain, NULL) != 0) {
        fprintf(stderr, "it_client: cannot start redis-server\n");
        return 1;
    }
    RUN_TEST(test_strerror);
    RUN_TEST(test_embedded_set);
    RUN_TEST(test_connect_tcp);
    RUN_TEST(test_connect_env_url);
    RUN_TEST(test_connect_unix_and_db);
    RUN_TEST(test_bad_urls);
    RUN_TEST(test_connection_refused);
    RUN_TEST(test_auth);
    RUN_TEST(test_verify_and_load);
    RUN_TEST(test_noscript_recovery);
    RUN_TEST(test_reconnect_after_restart);
    RUN_TEST(test_timeout_paused_server);
    RUN_TEST(test_api_misuse);
    RUN_TEST(test_bundle_dir);
    RUN_TEST(test_bundle_extra_and_tampered);
    RUN_TEST(test_bad_arguments_every_script);
    RUN_TEST(test_bad_arguments_detector);
    rlk_fx_stop(&plain);
    return check_summary("it_client");
}
