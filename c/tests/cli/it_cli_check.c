/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_check.c - `rlk check` against fixture servers: a clean server (its
 * only warning: no persistence, as the fixture starts every server), an
 * evicting one (maxmemory 100mb, allkeys-lru: error, exit 8), scripts missing
 * after SCRIPT FLUSH (warning, exit 7), a replica (error), a master with a
 * sentinel subscribed to __sentinel__:hello (info), a user whose ACL refuses
 * PUBLISH (error naming the refusal) and one that may not ask (unknown), the
 * --json output parsed, usage errors.
 *
 * Usage: it_cli_check PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "json_mini.h"

#include <rlk.h>

static rlk_fx_server server;
static char url[128];

/* The --json output of `rlk check` with extra args, parsed; NULL (after a failed check) when
 * not JSON. *status gets the exit code. */
static json_value *check_json(const char *u, const char *const *extra, int *status)
{
    const char *args[12] = {"check", "--json", "--url", u};
    int n = 4;
    const char *err = NULL;
    json_value *v;
    cli_result r;

    for (int i = 0; extra && extra[i] && n < 11; i++)
        args[n++] = extra[i];
    args[n] = NULL;
    r = cli_run(args);
    *status = r.status;
    v = json_parse(r.out, &err);
    CHECKF(v != NULL, "rlk check --json: not JSON (%s): %s\n    stderr: %s", err ? err : "?",
           r.out, r.err);
    if (r.status != 0)
        CHECKF(strncmp(r.err, "rlk: check ", 11) == 0 && strchr(r.err, '\n')[1] == '\0',
               "rlk check: exit %d without one summary line on stderr: %s", r.status, r.err);
    cli_result_free(&r);
    return v;
}

/* The finding of one check in a parsed output, NULL when absent. */
static const json_value *finding(const json_value *v, const char *check)
{
    const json_value *checks = json_get(v, "checks");

    for (size_t i = 0; checks && i < checks->count; i++) {
        const char *name = json_get_string(json_at(checks, i), "check");

        if (name && strcmp(name, check) == 0)
            return json_at(checks, i);
    }
    return NULL;
}

static const char *level_of(const json_value *v, const char *check)
{
    const json_value *f = finding(v, check);
    const char *l = f ? json_get_string(f, "level") : NULL;

    return l ? l : "(absent)";
}

/* One command on the test server; the reply is not needed. */
static void admin(const char *fmt, const char *arg)
{
    redisReply *rr = rlk_fx_command(&server, fmt, arg);

    if (rr)
        freeReplyObject(rr);
}

/* `rlk check` in text: the exit code and lines its output must contain. */
static void expect_text(int status, const char *what, const char *out1, const char *out2)
{
    cli_result r = RUN("check");

    expect_status(&r, status, what);
    CHECK_STR_CONTAINS(r.out, out1);
    if (out2)
        CHECK_STR_CONTAINS(r.out, out2);
    if (status == 0)
        CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);
}

static void load_scripts(const char *u)
{
    cli_result r = RUN("scripts", "load", "--url", u);

    expect_status(&r, 0, "scripts load");
    cli_result_free(&r);
}

static void test_clean_server(void)
{
    int status;
    json_value *v;

    load_scripts(url);
    v = check_json(url, NULL, &status);
    if (!v)
        return;
    /* The fixture runs servers without persistence: that is the one warning. */
    CHECK_INT_EQ(status, 7);
    CHECK_STR_EQ(json_get_string(v, "result"), "warning");
    CHECK(json_get_number(v, "errors", -1) == 0);
    CHECK(json_get_number(v, "warnings", -1) == 1);
    CHECK_STR_EQ(level_of(v, "persistence"), "warning");
    CHECK_STR_EQ(level_of(v, "server"), "ok");
    CHECK_STR_EQ(level_of(v, "role"), "ok");
    CHECK_STR_EQ(level_of(v, "eviction"), "ok");
    CHECK_STR_EQ(level_of(v, "scripts"), "ok");
    CHECK_STR_EQ(level_of(v, "acl"), "ok");
    CHECK_STR_EQ(level_of(v, "clock"), "ok");
    CHECK_STR_EQ(level_of(v, "latency"), "ok");
    CHECK_STR_EQ(json_get_string(finding(v, "role"), "role"), "master");
    CHECK(json_get_number(finding(v, "scripts"), "present", -1) == (double)rlk_embedded_count());
    CHECK_STR_EQ(json_get_string(json_get(finding(v, "acl"), "kinds"), "reentrant"), "ok");
    CHECK(json_get(finding(v, "latency"), "median_ms") != NULL);
    CHECK(json_get(finding(v, "clock"), "offset_ms") != NULL);
    /* An offset under 0.05 ms shows as +0.0 (no control: the offset is this host's, it is
     * only sometimes a small negative number). */
    CHECKF(!strstr(json_get_string(finding(v, "clock"), "message"), "-0.0 ms"),
           "the clock finding says -0.0: %s", json_get_string(finding(v, "clock"), "message"));
    CHECK_STR_CONTAINS(json_get_string(finding(v, "persistence"), "fix"), "appendonly");
    json_free(v);

    /* The same server with RDB save points: all ok, exit 0, text output. (Not AOF: it would
     * leave a directory the fixture does not remove.) */
    admin("CONFIG SET save %s", "3600 1");
    expect_text(0, "check (RDB on)", "ok       persistence  RDB snapshots (save 3600 1)", NULL);
    admin("CONFIG SET save %s", "");
}

/* The server finding names the server and its version: Valkey by server_name / valkey_version
 * (its redis_version is the Redis it is compatible with), Redis by redis_version. The fixture
 * runs the one RLK_TEST_SERVER names; the expected text comes from INFO, asked directly. */
static void test_server_named(void)
{
    redisReply *rr = rlk_fx_command(&server, "INFO server");
    char want[128], field[64];
    const char *p, *msg;
    int status;
    json_value *v;

    REQUIRE(rr && rr->type == REDIS_REPLY_STRING);
    p = strstr(rr->str, rlk_fx_is_valkey() ? "valkey_version:" : "redis_version:");
    REQUIRE(p != NULL);
    p = strchr(p, ':') + 1;
    snprintf(field, sizeof field, "%.*s", (int)strcspn(p, "\r\n"), p);
    freeReplyObject(rr);
    snprintf(want, sizeof want, "%s %s", rlk_fx_is_valkey() ? "Valkey" : "Redis", field);
    v = check_json(url, NULL, &status);
    if (!v)
        return;
    CHECK_STR_EQ(level_of(v, "server"), "ok");
    CHECK_STR_EQ(json_get_string(finding(v, "server"), "server"), rlk_fx_server_kind());
    CHECK_STR_EQ(json_get_string(finding(v, "server"), "version"), field);
    msg = json_get_string(finding(v, "server"), "message");
    CHECKF(msg && strncmp(msg, want, strlen(want)) == 0, "server finding \"%s\", expected it to "
           "start with \"%s\"", msg ? msg : "(none)", want);
    if (rlk_fx_is_valkey()) {
        CHECK_STR_CONTAINS(msg, "(Redis 7.2");                 /* the compatibility version */
        CHECK(json_get_string(finding(v, "server"), "redis_version") != NULL);
    } else {
        CHECK(json_get_string(finding(v, "server"), "redis_version") == NULL);
    }
    json_free(v);
    expect_text(7, "check (server named)", want, NULL);
}

static void test_scripts_missing(void)
{
    int status;
    json_value *v;

    admin("SCRIPT FLUSH%s", "");
    v = check_json(url, NULL, &status);
    if (!v)
        return;
    CHECK_INT_EQ(status, 7);
    CHECK_STR_EQ(level_of(v, "scripts"), "warning");
    CHECK(json_get_number(finding(v, "scripts"), "present", -1) == 0);
    CHECK(json_get(finding(v, "scripts"), "missing") != NULL &&
          json_get(finding(v, "scripts"), "missing")->count == rlk_embedded_count());
    json_free(v);
    expect_text(7, "check (scripts flushed)", "warning  scripts ", "fix: rlk scripts load");
}

static void test_evicting_server(void)
{
    static const char *const extra[] = {"--maxmemory", "100mb", "--maxmemory-policy",
                                        "allkeys-lru", NULL};
    rlk_fx_config cfg;
    rlk_fx_server ev;
    char u[128];
    int status;
    json_value *v;

    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    REQUIRE(rlk_fx_start(&ev, &cfg) == 0);
    rlk_fx_url(&ev, -1, u, sizeof u);
    load_scripts(u);
    v = check_json(u, NULL, &status);
    if (v) {
        CHECK_INT_EQ(status, 8);
        CHECK_STR_EQ(json_get_string(v, "result"), "error");
        CHECK_STR_EQ(level_of(v, "eviction"), "error");
        CHECK_STR_CONTAINS(json_get_string(finding(v, "eviction"), "message"), "allkeys-lru");
        CHECK_STR_CONTAINS(json_get_string(finding(v, "eviction"), "message"), "silently vanishes");
        /* The server by its own name: a Valkey is not called Redis. */
        CHECK_STR_CONTAINS(json_get_string(finding(v, "eviction"), "message"),
                           rlk_fx_is_valkey() ? ": Valkey may evict" : ": Redis may evict");
        CHECK(json_get_number(finding(v, "eviction"), "maxmemory", 0) == 104857600.0);
        json_free(v);
    }
    /* volatile-ttl evicts keys with a TTL: every leased lock. */
    redisReply *rr = rlk_fx_command(&ev, "CONFIG SET maxmemory-policy volatile-ttl");
    if (rr)
        freeReplyObject(rr);
    v = check_json(u, NULL, &status);
    if (v) {
        CHECK_INT_EQ(status, 8);
        CHECK_STR_EQ(level_of(v, "eviction"), "error");
        json_free(v);
    }
    rlk_fx_stop(&ev);
}

static void test_replica(void)
{
    char port[16], u[128];
    const char *extra[] = {"--replicaof", "127.0.0.1", port, NULL};
    rlk_fx_config cfg;
    rlk_fx_server rep;
    int status;
    json_value *v;

    snprintf(port, sizeof port, "%d", server.port);
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    REQUIRE(rlk_fx_start(&rep, &cfg) == 0);
    rlk_fx_url(&rep, -1, u, sizeof u);
    v = check_json(u, NULL, &status);
    if (v) {
        CHECK_INT_EQ(status, 8);
        CHECK_STR_EQ(level_of(v, "role"), "error");
        CHECK_STR_EQ(json_get_string(finding(v, "role"), "role"), "replica");
        CHECK_STR_CONTAINS(json_get_string(finding(v, "role"), "message"), "a replica of 127.0.0.1:");
        json_free(v);
    }
    rlk_fx_stop(&rep);
}

/* A sentinel is seen by its subscription to __sentinel__:hello on the master. */
static void test_sentinel_managed(void)
{
    redisContext *sub = rlk_fx_connect(&server);
    redisReply *rr;
    int status;
    json_value *v;

    REQUIRE(sub != NULL);
    rr = redisCommand(sub, "SUBSCRIBE __sentinel__:hello");
    REQUIRE(rr != NULL);
    freeReplyObject(rr);
    v = check_json(url, NULL, &status);
    if (v) {
        CHECK_STR_EQ(level_of(v, "role"), "info");
        CHECK_STR_EQ(json_get_string(finding(v, "role"), "role"), "sentinel-managed master");
        CHECK(json_get_number(finding(v, "role"), "sentinels", -1) == 1);
        json_free(v);
    }
    redisFree(sub);
}

static void acl(const char *rules)
{
    char cmd[1024];
    redisContext *c = rlk_fx_connect(&server);
    redisReply *rr;

    REQUIRE(c != NULL);
    snprintf(cmd, sizeof cmd, "ACL SETUSER %s", rules);
    /* Split on spaces: every rule here is one word. */
    {
        const char *argv[32];
        char buf[1024], *save = NULL, *w;
        int n = 0;

        REQUIRE(strlen(cmd) < sizeof buf - 1);
        snprintf(buf, sizeof buf, "%s", cmd);
        for (w = strtok_r(buf, " ", &save); w && n < 32; w = strtok_r(NULL, " ", &save))
            argv[n++] = w;
        REQUIRE(w == NULL);     /* every rule given: none dropped past the array */
        rr = redisCommandArgv(c, n, argv, NULL);
    }
    CHECKF(rr && rr->type == REDIS_REPLY_STATUS, "ACL SETUSER %s: %s", rules,
           rr && rr->str ? rr->str : "no reply");
    if (rr)
        freeReplyObject(rr);
    redisFree(c);
}

static void test_acl(void)
{
    char u[160];
    int status;
    json_value *v;

    /* Everything but PUBLISH: every kind with a channel is refused, the token lock is fine. */
    acl("nopub on >pw ~* &* +@all -publish");
    snprintf(u, sizeof u, "redis://nopub:pw@127.0.0.1:%d", server.port);
    load_scripts(url);
    v = check_json(u, NULL, &status);
    if (v) {
        const json_value *kinds = json_get(finding(v, "acl"), "kinds");

        CHECK_INT_EQ(status, 8);
        CHECK_STR_EQ(level_of(v, "acl"), "error");
        CHECK_STR_CONTAINS(json_get_string(finding(v, "acl"), "message"), "'publish'");
        CHECK_STR_EQ(json_get_string(kinds, "reentrant"), "denied");
        CHECK_STR_EQ(json_get_string(kinds, "token"), "ok");
        json_free(v);
    }
    /* The same user checked by an admin with --user. */
    v = check_json(url, (const char *const[]){"--user", "nopub", NULL}, &status);
    if (v) {
        CHECK_STR_EQ(level_of(v, "acl"), "error");
        CHECK_STR_EQ(json_get_string(finding(v, "acl"), "user"), "nopub");
        json_free(v);
    }
    /* A user that may not ask (no ACL DRYRUN): unknown, not a guess. */
    acl("plain on >pw ~* &* +@all -acl");
    snprintf(u, sizeof u, "redis://plain:pw@127.0.0.1:%d", server.port);
    v = check_json(u, NULL, &status);
    if (v) {
        CHECK_INT_EQ(status, 7);
        CHECK_STR_EQ(level_of(v, "acl"), "unknown");
        json_free(v);
    }
    /* --name: the probe uses the application's names. */
    acl("scoped on >pw resetkeys ~app:* ~redisson_*:{app:*}* ~{app:*}* resetchannels "
        "&redisson_*:{app:*}* &redisson_countdownlatch__channel__{app:*} "
        "~redisson_countdownlatch__channel__{app:*} ~rlk_elect__channel:{app:*} "
        "&rlk_elect__channel:{app:*} +@all");
    v = check_json(url, (const char *const[]){"--user", "scoped", "--name", "app:x", NULL}, &status);
    if (v) {
        CHECK_STR_EQ(level_of(v, "acl"), "ok");
        json_free(v);
    }
    v = check_json(url, (const char *const[]){"--user", "scoped", NULL}, &status);
    if (v) {
        CHECK_STR_EQ(level_of(v, "acl"), "error"); /* rlk-check is not an app:* name */
        json_free(v);
    }
    /* A queued waiter's wake channel ("<channel>:rlk:<client id>") is probed: without the
     * pattern of the read-write lock's, only that kind is denied; without the lock channel's,
     * the reentrant and fair locks are (the fenced lock queues nobody). */
    acl("nowakerw on >pw resetkeys ~app:* ~redisson_*:{app:*}* ~{app:*}* resetchannels "
        "&redisson_lock__channel:{app:*} &redisson_lock__channel:{app:*}:* &redisson_rwlock:{app:*} "
        "&redisson_sc:{app:*} &redisson_sc:{app:*}:* &redisson_countdownlatch__channel__{app:*} "
        "~redisson_countdownlatch__channel__{app:*} +@all");
    v = check_json(url, (const char *const[]){"--user", "nowakerw", "--name", "app:x", NULL}, &status);
    if (v) {
        const json_value *kinds = json_get(finding(v, "acl"), "kinds");

        CHECK_STR_EQ(level_of(v, "acl"), "error");
        CHECK_STR_EQ(json_get_string(kinds, "rwlock"), "denied");
        CHECK_STR_EQ(json_get_string(kinds, "reentrant"), "ok");
        json_free(v);
    }
    acl("nowakelk on >pw resetkeys ~app:* ~redisson_*:{app:*}* ~{app:*}* resetchannels "
        "&redisson_lock__channel:{app:*} &redisson_rwlock:{app:*} &redisson_rwlock:{app:*}:* "
        "&redisson_sc:{app:*} &redisson_sc:{app:*}:* &redisson_countdownlatch__channel__{app:*} "
        "~redisson_countdownlatch__channel__{app:*} +@all");
    v = check_json(url, (const char *const[]){"--user", "nowakelk", "--name", "app:x", NULL}, &status);
    if (v) {
        const json_value *kinds = json_get(finding(v, "acl"), "kinds");

        CHECK_STR_EQ(json_get_string(kinds, "reentrant"), "denied");
        CHECK_STR_EQ(json_get_string(kinds, "fair"), "denied");
        CHECK_STR_EQ(json_get_string(kinds, "fenced"), "ok");
        CHECK_STR_EQ(json_get_string(kinds, "rwlock"), "ok");
        json_free(v);
    }
    acl("nowakesc on >pw resetkeys ~app:* ~redisson_*:{app:*}* ~{app:*}* resetchannels "
        "&redisson_lock__channel:{app:*} &redisson_lock__channel:{app:*}:* &redisson_rwlock:{app:*} "
        "&redisson_rwlock:{app:*}:* &redisson_sc:{app:*} &redisson_countdownlatch__channel__{app:*} "
        "~redisson_countdownlatch__channel__{app:*} +@all");
    v = check_json(url, (const char *const[]){"--user", "nowakesc", "--name", "app:x", NULL}, &status);
    if (v) {
        const json_value *kinds = json_get(finding(v, "acl"), "kinds");

        CHECK_STR_EQ(json_get_string(kinds, "semaphore"), "denied");
        CHECK_STR_EQ(json_get_string(kinds, "psemaphore"), "denied");
        CHECK_STR_EQ(json_get_string(kinds, "reentrant"), "ok");
        json_free(v);
    }
}

static void test_usage(void)
{
    cli_result r = RUN("check", "--frob");

    expect_status(&r, 2, "check --frob");
    expect_one_line_error(&r, "check --frob");
    cli_result_free(&r);
    r = RUN("check", "extra");
    expect_status(&r, 2, "check extra");
    expect_one_line_error(&r, "check extra");
    cli_result_free(&r);
    r = RUN("check", "--help");
    expect_status(&r, 0, "check --help");
    CHECK_STR_CONTAINS(r.out, "eviction");
    cli_result_free(&r);
    r = RUN("--help");
    CHECK_STR_CONTAINS(r.out, "  check ");
    CHECK_STR_CONTAINS(r.out, "  8  rlk check: errors");
    cli_result_free(&r);
    {
        char refused[64];

        snprintf(refused, sizeof refused, "redis://127.0.0.1:%d", rlk_fx_refused_port());
        r = RUN("check", "--url", refused);
        expect_status(&r, 3, "check (connection refused)");
        expect_one_line_error(&r, "check (connection refused)");
        cli_result_free(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    RUN_TEST(test_clean_server);
    RUN_TEST(test_server_named);
    RUN_TEST(test_scripts_missing);
    RUN_TEST(test_evicting_server);
    RUN_TEST(test_replica);
    RUN_TEST(test_sentinel_managed);
    RUN_TEST(test_acl);
    RUN_TEST(test_usage);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_check");
}
