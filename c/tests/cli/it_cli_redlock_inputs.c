/*
 * it_cli_redlock_inputs.c - `rlk lock --redlock` on 3
 * servers where one refuses the credentials (a wrong password in its URL, or
 * no password for a server that wants one): counted as a down server with a
 * one-line warning, the lock taken on the other two; two URLs that name one
 * host:port (other database, other spelling) refused with exit 2.
 *
 * Usage: it_cli_redlock_inputs PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#define PASSWORD "rl-Pw-7"

static rlk_fx_server servers[3];   /* each wants PASSWORD */
static char urls[3][160];          /* with the password */
static char bare[3][160];          /* without */

static void test_bad_credentials_is_down(void)
{
    char list[600], wrong[160];
    cli_result r;

    snprintf(wrong, sizeof wrong, "redis://:wrong-pw@127.0.0.1:%d", servers[2].port);
    snprintf(list, sizeof list, "%s,%s,%s", urls[0], urls[1], wrong);
    r = RUN("lock", "--redlock", list, "rl-auth", "-w", "5", "--",
            "sh", "-c", "echo \"$RLK_LOCK_OWNER\" > \"$T/owner\"");
    expect_status(&r, 0, "redlock with a wrong password on 1 of 3");
    CHECK_STR_CONTAINS(r.err, "warning");
    CHECK_STR_CONTAINS(r.err, "counted as a server that is down");
    CHECKF(strstr(r.err, "wrong-pw") == NULL, "the password was printed: %s", r.err);
    cli_result_free(&r);

    /* No password at all for the server that wants one. */
    snprintf(list, sizeof list, "%s,%s,%s", urls[0], urls[1], bare[2]);
    r = RUN("lock", "--redlock", list, "rl-auth2", "-w", "5", "--", "true");
    expect_status(&r, 0, "redlock with no password for 1 of 3");
    cli_result_free(&r);

    /* The right password from $RLK_PASSWORD reaches every server without one in its URL. */
    snprintf(list, sizeof list, "%s,%s,%s", bare[0], bare[1], bare[2]);
    setenv("RLK_PASSWORD", PASSWORD, 1);
    r = RUN("lock", "--redlock", list, "rl-auth3", "-w", "5", "--", "true");
    expect_status(&r, 0, "redlock with $RLK_PASSWORD");
    CHECKF(strstr(r.err, "warning") == NULL, "a warning with the right password: %s", r.err);
    cli_result_free(&r);
    unsetenv("RLK_PASSWORD");

    /* Two servers refusing: no majority; -w ends it with exit 3. */
    snprintf(list, sizeof list, "%s,redis://:x@127.0.0.1:%d,%s", urls[0], servers[1].port, wrong);
    r = RUN("lock", "--redlock", list, "rl-auth4", "-w", "1", "--", "true");
    CHECKF(r.status == 3, "redlock with 2 of 3 refusing: exit %d: %s",
           r.status, r.err);
    cli_result_free(&r);
}

static void test_same_server_twice(void)
{
    char list[600];
    cli_result r;

    snprintf(list, sizeof list, "%s,%s/1,%s", urls[0], bare[0], urls[1]);
    r = RUN("lock", "--redlock", list, "rl-dup", "--", "true");
    expect_status(&r, 2, "redlock with h:p and h:p/1");
    expect_one_line_error(&r, "redlock with h:p and h:p/1");
    CHECK_STR_CONTAINS(r.err, "two URLs name the server 127.0.0.1:");
    cli_result_free(&r);

    snprintf(list, sizeof list, "%s,REDIS://127.0.0.1:%d/0,%s", urls[0], servers[0].port,
             urls[1]);
    r = RUN("lock", "--redlock", list, "rl-dup", "--", "true");
    expect_status(&r, 2, "redlock with the same server spelled twice");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&servers[0], "EXISTS %s", "rl-dup"), 0);

    /* The list names every server: a --url or --url-file beside it is a usage error. */
    snprintf(list, sizeof list, "%s,%s,%s", urls[0], urls[1], urls[2]);
    r = RUN("--url-file", "/nonexistent", "lock", "--redlock", list, "rl-dup", "--", "true");
    expect_status(&r, 2, "--url-file with --redlock");
    CHECK_STR_CONTAINS(r.err, "--url-file does not go with --redlock");
    cli_result_free(&r);
}

int main(int argc, char **argv)
{
    rlk_fx_config cfg;

    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    unsetenv("RLK_PASSWORD");
    unsetenv("REDISCLI_AUTH");
    rlk_fx_config_init(&cfg);
    cfg.requirepass = PASSWORD;
    if (rlk_fx_start_n(servers, 3, &cfg) != 0)
        return 1;
    for (int i = 0; i < 3; i++) {
        rlk_fx_url(&servers[i], -1, bare[i], sizeof bare[i]);
        snprintf(urls[i], sizeof urls[i], "redis://:%s@127.0.0.1:%d", PASSWORD, servers[i].port);
    }
    if (cli_setup(argv[1], urls[0]) != 0)
        return 1;
    RUN_TEST(test_bad_credentials_is_down);
    RUN_TEST(test_same_server_twice);
    cli_teardown();
    rlk_fx_stop_n(servers, 3);
    return check_summary("it_cli_redlock_inputs");
}
