/*
 * test_url_sentinel.c - redis+sentinel:// URLs (client/url.c):
 * sentinels (default port 26379, IPv6), master name, db, the master's user
 * and password, the sentinels' credentials from the query; the masked and
 * password-less forms; every malformed URL refused with a "bad url: "
 * message that never shows a password. No server needed.
 */
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "client/url.h"
#include "check.h"

static void test_parse(void)
{
    char err[256];
    char *s;
    rlk_url u;

    REQUIRE_INT_EQ(rlk_url_parse("redis+sentinel://al:pw%40x@h1:5000,h2,[::1]:5002/my%2Dmaster/3"
                                 "?sentinel_user=sen&sentinel_password=s%26p",
                                 &u, err, sizeof err), RLK_OK);
    CHECK(u.is_sentinel);
    CHECK_INT_EQ(u.nsentinels, 3);
    CHECK_STR_EQ(u.sentinels[0].host, "h1");
    CHECK_INT_EQ(u.sentinels[0].port, 5000);
    CHECK_STR_EQ(u.sentinels[1].host, "h2");
    CHECK_INT_EQ(u.sentinels[1].port, 26379);
    CHECK_STR_EQ(u.sentinels[2].host, "::1");
    CHECK_INT_EQ(u.sentinels[2].port, 5002);
    CHECK_STR_EQ(u.master_name, "my-master");
    CHECK_INT_EQ(u.db, 3);
    CHECK_STR_EQ(u.user, "al");
    CHECK_STR_EQ(u.password, "pw@x");
    CHECK_STR_EQ(u.sentinel_user, "sen");
    CHECK_STR_EQ(u.sentinel_password, "s&p");
    s = rlk_url_masked(&u);
    CHECK_STR_EQ(s, "redis+sentinel://al:***@h1:5000,h2:26379,[::1]:5002/my-master/3"
                    "?sentinel_user=sen&sentinel_password=***");
    free(s);
    s = rlk_url_without_password(&u);
    CHECK_STR_EQ(s, "redis+sentinel://al@h1:5000,h2:26379,[::1]:5002/my-master/3?sentinel_user=sen");
    free(s);
    rlk_url_free(&u);

    REQUIRE_INT_EQ(rlk_url_parse("REDIS+SENTINEL://h/m", &u, err, sizeof err), RLK_OK);
    CHECK_INT_EQ(u.nsentinels, 1);
    CHECK_INT_EQ(u.db, 0);
    CHECK(u.password == NULL && u.sentinel_password == NULL);
    s = rlk_url_masked(&u);
    CHECK_STR_EQ(s, "redis+sentinel://h:26379/m/0");
    free(s);
    rlk_url_free(&u);

    /* A '?' inside a query value is the value's (RFC 3986 allows it there). */
    REQUIRE_INT_EQ(rlk_url_parse("redis+sentinel://h/m?sentinel_password=a?b", &u, err, sizeof err),
                   RLK_OK);
    CHECK_STR_EQ(u.sentinel_password, "a?b");
    rlk_url_free(&u);
}

static void test_refused(void)
{
    static const char *const bad[] = {
        "redis+sentinel://h1:1",                        /* no master name */
        "redis+sentinel://h1:1/",
        "redis+sentinel:///m",                          /* no sentinel */
        "redis+sentinel://h1:1,,h2:2/m",
        "redis+sentinel://h1:99999/m",
        "redis+sentinel://h1:1/m/x",                    /* db */
        "redis+sentinel://h1:1/m/1/2",
        "redis+sentinel://h1:1/m?db=2",                 /* unknown parameter */
        "redis+sentinel://h1:1/m?sentinel_user=u",      /* a user without a password */
        "redis+sentinel://h1:1/m?sentinel_password=",
        "redis+sentinel://h1:1/m?sentinel_password=a&sentinel_password=b",
        "redis+sentinel://h1:1/m#frag",
        "redis+sentinel://u:secret@h1:1,u:secret@h2:2/m",
        NULL,
    };
    char err[256];
    rlk_url u;

    for (int i = 0; bad[i]; i++) {
        CHECKF(rlk_url_parse(bad[i], &u, err, sizeof err) == RLK_ERR_URL, "accepted %s", bad[i]);
        CHECKF(strncmp(err, "bad url: ", 9) == 0, "%s: %s", bad[i], err);
        CHECKF(!strstr(err, "secret"), "%s: the message shows the password: %s", bad[i], err);
        rlk_url_free(&u);
    }
}

int main(void)
{
    RUN_TEST(test_parse);
    RUN_TEST(test_refused);
    return check_summary("test_url_sentinel");
}
