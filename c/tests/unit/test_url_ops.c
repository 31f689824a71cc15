/*
 * test_url_ops.c - the URL and credential rules in the library:
 * case-insensitive schemes, redis://user@host with the password from
 * rlk_options.password (a URL password wins), the masked and the
 * password-less forms, an empty $RLK_URL refused. No server needed: the
 * connections go to a port nothing listens on, and only setup errors and
 * masked URLs are checked.
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/url.h"
#include "check.h"

static void test_scheme_case(void)
{
    const char *ok[] = {"REDIS://h:1/2", "Redis://h", "UNIX:///tmp/s.sock", NULL};
    char err[256];
    rlk_url u;

    for (int i = 0; ok[i]; i++) {
        CHECK_INT_EQ(rlk_url_parse(ok[i], &u, err, sizeof err), RLK_OK);
        rlk_url_free(&u);
    }
    /* The TLS forms: the same URLs with rediss, shown as rediss. */
    {
        static const struct { const char *in, *masked; } tls[] = {
            {"REDISS://h:1", "rediss://h:1/0"},
            {"rediss://u:pw@h:2/3", "rediss://u:***@h:2/3"},
            {"rediss+cluster://h:1,h:2", "rediss+cluster://h:1,h:2"},
            {"Rediss+Sentinel://s1:1,s2:2/mymaster", "rediss+sentinel://"},
        };
        for (size_t i = 0; i < sizeof tls / sizeof tls[0]; i++) {
            char *m;

            CHECK_INT_EQ(rlk_url_parse(tls[i].in, &u, err, sizeof err), RLK_OK);
            CHECK_INT_EQ(u.tls, 1);
            m = rlk_url_masked(&u);
            CHECK(m != NULL && strncmp(m, tls[i].masked, strlen(tls[i].masked)) == 0);
            free(m);
            rlk_url_free(&u);
        }
    }
    CHECK_INT_EQ(rlk_url_parse("redis://h:1", &u, err, sizeof err), RLK_OK);
    CHECK_INT_EQ(u.tls, 0);
    rlk_url_free(&u);
}

static void test_user_only(void)
{
    char err[256];
    char *s;
    rlk_url u;

    REQUIRE_INT_EQ(rlk_url_parse("redis://al%40ice@h:7/3", &u, err, sizeof err), RLK_OK);
    CHECK_STR_EQ(u.user, "al@ice");
    CHECK(u.password == NULL);
    s = rlk_url_without_password(&u);
    CHECK_STR_EQ(s, "redis://al%40ice@h:7/3");
    free(s);
    rlk_url_free(&u);
    REQUIRE_INT_EQ(rlk_url_parse("redis://u:top-secret@h:7", &u, err, sizeof err), RLK_OK);
    s = rlk_url_without_password(&u);
    CHECK_STR_EQ(s, "redis://u@h:7/0");
    free(s);
    s = rlk_url_masked(&u);
    CHECK_STR_EQ(s, "redis://u:***@h:7/0");
    free(s);
    rlk_url_free(&u);
}

static void test_options_password(void)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = "redis://alice@127.0.0.1:1";
    o.connect_timeout_ms = 200;
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_URL);
    CHECK_STR_CONTAINS(rlk_errstr(c), "needs a password");
    rlk_free(c);

    o.password = "pw-from-options";
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_STR_EQ(rlk_client_url(c), "redis://alice:***@127.0.0.1:1/0");
    CHECK(strstr(rlk_errstr(c), "pw-from-options") == NULL);
    rlk_free(c);

    o.url = "redis://127.0.0.1:1";
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_STR_EQ(rlk_client_url(c), "redis://:***@127.0.0.1:1/0");
    rlk_free(c);
}

static void test_empty_env_url(void)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    setenv("RLK_URL", "", 1);
    c = rlk_connect(&o);
    REQUIRE(c != NULL);
    CHECK_INT_EQ(rlk_err(c), RLK_ERR_URL);
    CHECK_STR_CONTAINS(rlk_errstr(c), "RLK_URL is set but empty");
    rlk_free(c);
    unsetenv("RLK_URL");
}

/* rlk check's "plain TCP to a host that is not loopback" rule. */
static void test_loopback_hosts(void)
{
    static const char *const yes[] = {"127.0.0.1", "127.1.2.3", "localhost", "LOCALHOST",
                                      "db.localhost", "::1", "0:0:0:0:0:0:0:1"};
    static const char *const no[] = {"10.0.0.5", "128.0.0.1", "redis.example.com", "localhost.com",
                                     "mylocalhost", "::2", "", "127.0.0.1.example.com",
                                     "fe80::1"};

    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++)
        CHECKF(rlk_url_host_is_loopback(yes[i]) == 1, "%s: not loopback", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof no[0]; i++)
        CHECKF(rlk_url_host_is_loopback(no[i]) == 0, "%s: loopback", no[i]);
    CHECK_INT_EQ(rlk_url_host_is_loopback(NULL), 0);
}

int main(void)
{
    RUN_TEST(test_loopback_hosts);
    RUN_TEST(test_scheme_case);
    RUN_TEST(test_user_only);
    RUN_TEST(test_options_password);
    RUN_TEST(test_empty_env_url);
    return check_summary("test_url_ops");
}
