/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_latch_shape.c - a count-down latch's name that holds an application's string: the
 * library's rlk_latch_delete (latch/delete) and the rlk latch commands refuse it with
 * RLK_WRONGTYPE naming what they found, and leave it byte for byte, TTL included; a real latch
 * count (armed, or 0 and below as someone else wrote it) is still deleted.
 *
 * Usage: it_cli_latch_shape PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

static rlk_fx_server server;
static char url[128];

#define JSON "{\"feature\":\"on\",\"rollout\":25}"

static void expect_kept(const char *key, const char *value, const char *what)
{
    char got[200];

    tk_str(&server, got, sizeof got, "GET %s", key);
    CHECKF(strcmp(got, value) == 0, "%s: %s now holds \"%s\", expected \"%s\"", what, key, got,
           value);
    CHECKF(tk_int(&server, "PTTL %s", key) > 0, "%s: %s lost its TTL", what, key);
}

static void test_library_delete_refuses_a_string(void)
{
    static const char *const strings[] = {JSON, "abc", "1.5", "+1", "01", ""};
    rlk_client *c = tk_connect(url, 0, 1);
    rlk_latch *l = c ? rlk_latch_new(c, "cfg") : NULL;

    REQUIRE(l != NULL);
    for (size_t k = 0; k < sizeof strings / sizeof strings[0]; k++) {
        int deleted = -1, rc;

        REQUIRE(tk_command_ok(&server, "SET cfg %s PX 60000", strings[k]) == 0);
        rc = rlk_latch_delete(l, &deleted);
        CHECKF(rc != RLK_OK, "rlk_latch_delete of the string \"%s\": RLK_OK (deleted %d)",
               strings[k], deleted);
        CHECKF(strstr(rlk_errstr(c), "RLK_WRONGTYPE") &&
               strstr(rlk_errstr(c), "not an integer count"),
               "rlk_latch_delete of \"%s\": the error does not say what it found: %s", strings[k],
               rlk_errstr(c));
        CHECKF(deleted != 1, "rlk_latch_delete of \"%s\": *deleted says 1", strings[k]);
        expect_kept("cfg", strings[k], "rlk_latch_delete");
    }
    /* A latch count is deleted: armed, or 0 and below (written by someone else). */
    for (int v = 3; v >= -2; v -= 3) {
        int deleted = -1;

        REQUIRE(tk_command_ok(&server, "SET cfg %d", v) == 0);
        CHECK_INT_EQ(rlk_latch_delete(l, &deleted), RLK_OK);
        CHECK_INT_EQ(deleted, 1);
        CHECK_INT_EQ(tk_int(&server, "EXISTS cfg"), 0);
    }
    rlk_latch_free(l);
    rlk_free(c);
}

static void test_cli_latch_refuses_a_string(void)
{
    static const char *const actions[][2] = {{"count-down", NULL}, {"count", NULL},
                                             {"set", "3"}};

    for (size_t k = 0; k < sizeof actions / sizeof actions[0]; k++) {
        char what[80];
        cli_result r;

        REQUIRE(tk_command_ok(&server, "SET app %s PX 60000", JSON) == 0);
        snprintf(what, sizeof what, "rlk latch app %s", actions[k][0]);
        r = actions[k][1] ? RUN("latch", "app", actions[k][0], actions[k][1])
                          : RUN("latch", "app", actions[k][0]);
        CHECKF(r.status == 4 || r.status == 1 || r.status == 2, "%s: exit %d\n    stderr: %s",
               what, r.status, r.err);
        CHECKF(r.status == 1 || strstr(r.err, "RLK_WRONGTYPE") || strstr(r.err, "refused"),
               "%s: the error does not say what it found: %s", what, r.err);
        expect_kept("app", JSON, what);
        cli_result_free(&r);
    }
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_library_delete_refuses_a_string);
    RUN_TEST(test_cli_latch_refuses_a_string);
    cli_main_end(&server, 1);
    return check_summary("it_cli_latch_shape");
}
