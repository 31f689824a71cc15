/* SPDX-License-Identifier: BSD-3-Clause */
/* URL parsing: accepted forms, every malformed form, masking, and clients with bad URLs. */
#include <stdlib.h>

#include "client/client.h"
#include "client/url.h"
#include "check.h"

typedef struct good_case {
    const char *url;
    int is_unix;
    const char *host, *path, *user, *password;
    int port, db;
    const char *masked;
} good_case;

static const good_case goods[] = {
    {"redis://127.0.0.1:7000", 0, "127.0.0.1", NULL, NULL, NULL, 7000, 0,
     "redis://127.0.0.1:7000/0"},
    {"redis://localhost", 0, "localhost", NULL, NULL, NULL, 6379, 0, "redis://localhost:6379/0"},
    {"redis://localhost/", 0, "localhost", NULL, NULL, NULL, 6379, 0, "redis://localhost:6379/0"},
    {"redis://h:1/15", 0, "h", NULL, NULL, NULL, 1, 15, "redis://h:1/15"},
    {"redis://redis-1.example_net:65535/2", 0, "redis-1.example_net", NULL, NULL, NULL, 65535, 2,
     "redis://redis-1.example_net:65535/2"},
    {"redis://:secret@h:6380", 0, "h", NULL, NULL, "secret", 6380, 0, "redis://:***@h:6380/0"},
    {"redis://alice:pw@h:6380/3", 0, "h", NULL, "alice", "pw", 6380, 3,
     "redis://alice:***@h:6380/3"},
    {"redis://al%40ice:p%3Aw%2F%25@h", 0, "h", NULL, "al@ice", "p:w/%", 6379, 0,
     "redis://al%40ice:***@h:6379/0"},
    {"redis://u:p@ss:w@h:1", 0, "h", NULL, "u", "p@ss:w", 1, 0, "redis://u:***@h:1/0"},
    {"redis://[::1]:7000/1", 0, "::1", NULL, NULL, NULL, 7000, 1, "redis://[::1]:7000/1"},
    {"redis://[fe80::1]", 0, "fe80::1", NULL, NULL, NULL, 6379, 0, "redis://[fe80::1]:6379/0"},
    {"unix:///tmp/redis.sock", 1, NULL, "/tmp/redis.sock", NULL, NULL, 0, 0,
     "unix:///tmp/redis.sock?db=0"},
    {"unix:///var/run/r.sock?db=4", 1, NULL, "/var/run/r.sock", NULL, NULL, 0, 4,
     "unix:///var/run/r.sock?db=4"},
};

static int streq_null(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

static void test_good_forms(void)
{
    for (size_t i = 0; i < sizeof goods / sizeof goods[0]; i++) {
        const good_case *g = &goods[i];
        char err[256];
        rlk_url u;
        int rc = rlk_url_parse(g->url, &u, err, sizeof err);
        char *masked;

        if (!CHECK_INT_EQ(rc, RLK_OK)) {
            fprintf(stderr, "    url %s: %s\n", g->url, err);
            rlk_url_free(&u);
            continue;
        }
        CHECK_INT_EQ(u.is_unix, g->is_unix);
        CHECK(streq_null(u.host, g->host));
        CHECK(streq_null(u.path, g->path));
        CHECK(streq_null(u.user, g->user));
        CHECK(streq_null(u.password, g->password));
        if (!g->is_unix)
            CHECK_INT_EQ(u.port, g->port);
        CHECK_INT_EQ(u.db, g->db);
        masked = rlk_url_masked(&u);
        CHECK_STR_EQ(masked, g->masked);
        free(masked);
        rlk_url_free(&u);
    }
}

typedef struct bad_case {
    const char *url;
    const char *reason;  /* expected in the message */
} bad_case;

static const bad_case bads[] = {
    {"", "empty"},
    {"127.0.0.1:6379", "expected redis://"},
    {"http://h:1", "expected redis://"},
    {"redisss://h:1", "expected redis"},
    {"rediss+unix:///tmp/s", "expected redis"},
    {"redis://", "missing host"},
    {"redis://:6379", "missing host"},
    {"redis://h:", "port"},
    {"redis://h:0", "port"},
    {"redis://h:65536", "port"},
    {"redis://h:12ab", "port"},
    {"redis://h:-1", "port"},
    {"redis://h:1:2", "port"},
    {"redis://h:1/x", "database"},
    {"redis://h:1/-1", "database"},
    {"redis://h:1/99999999999", "database"},
    {"redis://h:1/0/1", "expected redis://host:port/db"},
    {"redis://h:1?db=2", "query"},
    {"redis://h:1#frag", "query"},
    {"redis://h o:1", "spaces"},
    {"redis://h\n:1", "control"},
    {"redis://h!:1", "invalid character"},
    {"redis://@h:1", "empty user name"},  /* redis://user@h: test_url_ops.c */
    {"redis://u:@h:1", "empty password"},
    {"redis://u:p%zz@h:1", "%-escape in the password"},
    {"redis://u:p%4@h:1", "%-escape in the password"},
    {"redis://u:p%00@h:1", "%-escape in the password"},
    {"redis://u%g1:p@h:1", "%-escape in the user"},
    {"redis://[::1:1", "']'"},
    {"redis://[zz]:1", "IPv6"},
    {"redis://[::1]x", "unexpected text"},
    {"unix://", "absolute"},
    {"unix://relative.sock", "absolute"},
    {"unix:///", "absolute"},
    {"unix:///s.sock?db=", "database"},
    {"unix:///s.sock?db=x", "database"},
    {"unix:///s.sock?password=x", "only parameter"},
    {"unix:///s.sock?db=1&x=2", "only parameter"},
    {"unix:///s.sock#x", "fragments"},
};

static void test_bad_forms(void)
{
    for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
        char err[256] = "";
        rlk_url u;
        int rc = rlk_url_parse(bads[i].url, &u, err, sizeof err);

        if (!CHECK_INT_EQ(rc, RLK_ERR_URL))
            fprintf(stderr, "    url %s was accepted\n", bads[i].url);
        CHECK_STR_CONTAINS(err, bads[i].reason);
        CHECK(strncmp(err, "bad url: ", 9) == 0);
        CHECK(strchr(err, '\n') == NULL);
        rlk_url_free(&u);
    }
}

static void test_null_url(void)
{
    char err[256];
    rlk_url u;

    CHECK_INT_EQ(rlk_url_parse(NULL, &u, err, sizeof err), RLK_ERR_URL);
    rlk_url_free(&u);
}

/* No message may reveal the password, whatever goes wrong. */
static void test_password_never_in_message(void)
{
    static const char *urls[] = {
        "redis://u:hunter2@h:99999", "redis://u:hunter2@h:1/x", "redis://u:hunter2@:1",
        "redis://u:hunter2@h:1?q", "redis://u:hunter2%@h:1",
    };

    for (size_t i = 0; i < sizeof urls / sizeof urls[0]; i++) {
        char err[256];
        rlk_url u;

        CHECK_INT_EQ(rlk_url_parse(urls[i], &u, err, sizeof err), RLK_ERR_URL);
        CHECK(strstr(err, "hunter2") == NULL);
        rlk_url_free(&u);
    }
}

static void test_address(void)
{
    char err[256], addr[300];
    rlk_url u;

    REQUIRE_INT_EQ(rlk_url_parse("redis://[::1]:7000", &u, err, sizeof err), RLK_OK);
    rlk_url_address(&u, addr, sizeof addr);
    CHECK_STR_EQ(addr, "[::1]:7000");
    rlk_url_free(&u);
    REQUIRE_INT_EQ(rlk_url_parse("unix:///tmp/x.sock?db=1", &u, err, sizeof err), RLK_OK);
    rlk_url_address(&u, addr, sizeof addr);
    CHECK_STR_EQ(addr, "/tmp/x.sock");
    rlk_url_free(&u);
}

/* A client given a bad URL reports RLK_ERR_URL, never connects, and keeps failing the same way. */
static void test_client_with_bad_url(void)
{
    rlk_client *c = rlk_connect_url("redis://h:notaport");
    redisReply *r = (redisReply *)1;
    const char *keys[] = {"k"};

    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_URL);
    CHECK_STR_CONTAINS(rlk_errstr(c), "port");
    CHECK_STR_EQ(rlk_client_url(c), "(invalid url)");
    CHECK_INT_EQ(rlk_eval(c, "reentrant/acquire", 1, keys, 0, NULL, &r), RLK_ERR_URL);
    CHECK(r == NULL);
    CHECK_INT_EQ(rlk_load_scripts(c), RLK_ERR_URL);
    rlk_free(c);
}

/* The URL comes from the options, then $RLK_URL, then the default. */
static void test_url_defaults(void)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = "redis://h:notaport";
    setenv("RLK_URL", "redis://also:bad:url", 1);
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_STR_CONTAINS(rlk_errstr(c), "port must be");
    rlk_free(c);

    o.url = NULL;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_URL);
    rlk_free(c);
    unsetenv("RLK_URL");
}

/* The error state is per client and per thread: a second client starts clean. */
static void test_errors_per_client(void)
{
    rlk_client *bad = rlk_connect_url("nope://");
    rlk_client *bad2 = rlk_connect_url("redis://h:0");

    REQUIRE(bad && bad2);
    CHECK_INT_EQ(rlk_err(bad), RLK_ERR_URL);
    CHECK_STR_CONTAINS(rlk_errstr(bad), "expected redis://");
    CHECK_STR_CONTAINS(rlk_errstr(bad2), "port");
    CHECK_INT_EQ(rlk_err(NULL), RLK_OK);
    CHECK_STR_EQ(rlk_errstr(NULL), "");
    rlk_free(bad);
    rlk_free(bad2);
}

int main(void)
{
    RUN_TEST(test_good_forms);
    RUN_TEST(test_bad_forms);
    RUN_TEST(test_null_url);
    RUN_TEST(test_password_never_in_message);
    RUN_TEST(test_address);
    RUN_TEST(test_client_with_bad_url);
    RUN_TEST(test_url_defaults);
    RUN_TEST(test_errors_per_client);
    return check_summary("test_url");
}
