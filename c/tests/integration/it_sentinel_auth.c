/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_sentinel_auth.c - rlk through Redis Sentinel where the data nodes and
 * the sentinels each ask for a password of their own (docs/sentinel.md):
 * master + replica + 3 sentinels on loopback (c/tests/support/sentinel.h),
 * requirepass on every process, the sentinels told the data nodes' password
 * by "sentinel auth-pass".
 *
 *   - both passwords on the URL (?sentinel_password=): a lock on the master;
 *     the client's URL shows neither password;
 *   - both from rlk_options (password, sentinel_password), the URL bare;
 *   - controls that must fail with RLK_ERR_AUTH, naming who refused: no
 *     sentinel password, a wrong sentinel password, a wrong master password;
 *   - the rlk command with both passwords in a --url-file: a lock; a wrong
 *     sentinel password is exit 3 and one line naming the refusal;
 *   - SENTINEL FAILOVER with a lock held (no watchdog: a lease far past the
 *     test) and a waiter of another client subscribed: both clients follow
 *     to the new master (AUTH again there, commands and pub/sub); the
 *     holder's unlock there wakes the waiter, whose wait is shorter than the
 *     lease: only the wake-up on the new master can let it in.
 */
#include "check.h"
#include "sentinel.h"
#include "tk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define DATA_PASS "data-pw-7"
#define SENTINEL_PASS "sentinel-pw-3"

static rlk_fx_sentinel fx;
#define SCHEME (fx.sentinel[0].tls ? "rediss" : "redis")
static char addrs[256];         /* 127.0.0.1:P1,127.0.0.1:P2,127.0.0.1:P3 */
static tk_stall stall;
static int connect_err;         /* connect_with's last client's rlk_err */

/* A client of url with the options' passwords (NULL: none); NULL when it did not connect, its
 * message in why and its code in connect_err. */
static rlk_client *connect_with(const char *url, const char *password,
                                const char *sentinel_password, char *why, size_t len)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url;
    o.password = password;
    o.sentinel_password = sentinel_password;
    o.pool_size = 2;
    c = rlk_connect(&o);
    connect_err = c ? rlk_err(c) : RLK_ERR_NOMEM;
    snprintf(why, len, "%s", !c ? "no client" : rlk_err(c) != RLK_OK ? rlk_errstr(c) : "");
    if (c && rlk_err(c) != RLK_OK) {
        rlk_free(c);
        return NULL;
    }
    return c;
}

/* A lock taken and given back through c; the key on data node m while held. */
static void lock_round(rlk_client *c, int m, const char *name)
{
    rlk_lock *l = rlk_lock_new(c, name);

    REQUIRE(l != NULL);
    CHECKF(rlk_lock_try_lock(l, 0, 20000) == RLK_OK, "lock %s: %s", name, rlk_errstr(c));
    CHECK_INT_EQ(tk_key_exists(&fx.data[m], name), 1);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(tk_key_exists(&fx.data[m], name), 0);
    rlk_lock_free(l);
}

/* ------------------------------------------------------------ passwords */

static void test_url_passwords(void)
{
    int m = rlk_fx_sentinel_master(&fx);
    char url[600], why[300];
    rlk_client *c;

    REQUIRE(m >= 0);
    snprintf(url, sizeof url, "%s+sentinel://:" DATA_PASS "@%s/authmaster?sentinel_password="
             SENTINEL_PASS, SCHEME, addrs);
    c = connect_with(url, NULL, NULL, why, sizeof why);
    REQUIREF(c != NULL, "connect: %s", why);
    CHECK_INT_EQ(tk_client_port(c), fx.data[m].port);
    CHECKF(!strstr(rlk_client_url(c), DATA_PASS) && !strstr(rlk_client_url(c), SENTINEL_PASS),
           "the client's URL shows a password: %s", rlk_client_url(c));
    lock_round(c, m, "sa:url");
    rlk_free(c);
}

static void test_option_passwords(void)
{
    int m = rlk_fx_sentinel_master(&fx);
    char url[600], why[300];
    rlk_client *c;

    REQUIRE(m >= 0);
    snprintf(url, sizeof url, "%s+sentinel://%s/authmaster", SCHEME, addrs);
    c = connect_with(url, DATA_PASS, SENTINEL_PASS, why, sizeof why);
    REQUIREF(c != NULL, "connect: %s", why);
    lock_round(c, m, "sa:options");
    rlk_free(c);
}

/* Each must fail to connect with RLK_ERR_AUTH and say which server refused. */
static void test_refused(void)
{
    static const struct {
        const char *password, *sentinel_password, *what, *says;
    } cases[] = {
        {DATA_PASS, NULL, "no sentinel password", "NOAUTH"},
        {DATA_PASS, "not-" SENTINEL_PASS, "a wrong sentinel password", "auth: WRONGPASS"},
        {"not-" DATA_PASS, SENTINEL_PASS, "a wrong master password", "the master it names"},
    };
    char url[600], why[300];

    snprintf(url, sizeof url, "%s+sentinel://%s/authmaster", SCHEME, addrs);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        rlk_client *c = connect_with(url, cases[i].password, cases[i].sentinel_password, why,
                                     sizeof why);
        CHECKF(c == NULL, "%s: connected", cases[i].what);
        CHECK_INT_EQ(connect_err, RLK_ERR_AUTH);
        printf("  %s: %s\n", cases[i].what, why);
        CHECK_STR_CONTAINS(why, cases[i].says);
        rlk_free(c);
    }
}

/* ------------------------------------------------------------ the rlk command */

static const char *rlk_bin;     /* argv[1], or NULL: test_cli not run */

/* rlk --url-file (a 0600 file holding url) lock NAME -- true, its output in out: the exit
 * code, or -1. */
static int cli_lock(const char *url, const char *name, char *out, size_t len)
{
    char path[] = "/tmp/rlk-sa-url-XXXXXX", cmd[600];
    int fd = mkstemp(path), status;
    FILE *p;
    size_t n = 0;

    out[0] = '\0';
    if (fd < 0)
        return -1;
    if (write(fd, url, strlen(url)) != (ssize_t)strlen(url)) {
        close(fd);
        unlink(path);
        return -1;
    }
    close(fd);
    snprintf(cmd, sizeof cmd, "'%s' --url-file %s lock %s -- true 2>&1", rlk_bin, path, name);
    if (!(p = popen(cmd, "r"))) {
        unlink(path);
        return -1;
    }
    while (n + 1 < len && fgets(out + n, (int)(len - n), p))
        n = strlen(out);
    status = pclose(p);
    unlink(path);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Both passwords in a URL file (off the command line): rlk takes and gives back a lock; a
 * wrong sentinel password is exit 3 with one line naming the refusal. */
static void test_cli(void)
{
    int m = rlk_fx_sentinel_master(&fx), rc;
    char url[600], out[1024];

    if (!rlk_bin) {
        printf("  test_cli: skipped (no rlk given: the TLS pass runs the library cases only)\n");
        return;
    }
    REQUIRE(m >= 0);
    snprintf(url, sizeof url, "%s+sentinel://:" DATA_PASS "@%s/authmaster?sentinel_password="
             SENTINEL_PASS "\n", SCHEME, addrs);
    rc = cli_lock(url, "sa:cli", out, sizeof out);
    CHECKF(rc == 0, "rlk lock: exit %d: %s", rc, out);
    CHECK_INT_EQ(tk_key_exists(&fx.data[m], "sa:cli"), 0);      /* given back */
    snprintf(url, sizeof url, "%s+sentinel://:" DATA_PASS "@%s/authmaster?sentinel_password=no\n",
             SCHEME, addrs);
    rc = cli_lock(url, "sa:cli", out, sizeof out);
    CHECKF(rc == 3, "rlk lock with a wrong sentinel password: exit %d: %s", rc, out);
    CHECK_STR_PREFIX(out, "rlk: ");
    CHECK_STR_CONTAINS(out, "WRONGPASS");
    CHECKF(!strstr(out, DATA_PASS), "the message shows the password: %s", out);
    CHECK(strchr(out, '\n') == out + strlen(out) - 1);   /* one line */
    printf("  rlk with a wrong sentinel password: %s", out);
}

/* ------------------------------------------------------------ failover */

static void test_failover(void)
{
    int m = rlk_fx_sentinel_master(&fx), r = 1 - m;
    char url[600], why[300];
    rlk_client *a, *b;
    rlk_lock *la, *lb;
    tk_waiter w;
    long long unlock_ns;

    REQUIRE(m >= 0);
    snprintf(url, sizeof url, "%s+sentinel://%s/authmaster", SCHEME, addrs);
    a = connect_with(url, DATA_PASS, SENTINEL_PASS, why, sizeof why);
    REQUIREF(a != NULL, "connect: %s", why);
    b = connect_with(url, DATA_PASS, SENTINEL_PASS, why, sizeof why);
    REQUIREF(b != NULL, "connect: %s", why);
    la = rlk_lock_new(a, "sa:held");
    lb = rlk_lock_new(b, "sa:held");
    rlk_lock_set_owner(lb, "sa-waiter");   /* taken in the waiter thread, released here */
    /* A lease longer than the waiter's wait: it gets in by the wake-up or not at all. */
    REQUIRE(rlk_lock_try_lock(la, 0, 300000) == RLK_OK);
    REQUIRE(tk_wait_int_at_least(&fx.data[r], 1, 10000, "EXISTS %s", "sa:held") == 0);
    REQUIRE(tk_waiter_start(&w, lb, 120000) == 0);
    REQUIRE(tk_wait_numsub(&fx.data[m], "redisson_lock__channel:{sa:held}", 1, 10000) == 0);

    CHECK(rlk_fx_sentinel_wait_promotable(&fx, 30000) == 0);
    REQUIRE(rlk_fx_sentinel_failover(&fx, 40000) == 0);
    CHECKF(tk_wait_client_port(a, fx.data[r].port, 20000) == 0, "the holder's client did not follow%s",
           tk_stall_note(&stall));
    CHECKF(tk_wait_client_port(b, fx.data[r].port, 20000) == 0, "the waiter's client did not follow%s",
           tk_stall_note(&stall));
    /* The waiter's subscription is back, on the new master. */
    CHECKF(tk_wait_numsub(&fx.data[r], "redisson_lock__channel:{sa:held}", 1, 20000) == 0,
           "the waiter did not subscribe on the new master%s", tk_stall_note(&stall));
    CHECK_INT_EQ(w.rc, 0);
    CHECKF(w.acquired_ns == 0, "the waiter acquired while the holder held it");
    unlock_ns = rlk_fx_now_ns();
    CHECKF(rlk_lock_unlock(la) == RLK_OK, "unlock on the new master: %s", rlk_errstr(a));
    tk_waiter_join(&w);
    CHECKF(w.rc == RLK_OK, "the waiter: %d (%s)", w.rc, rlk_errstr(b));
    CHECKF(w.acquired_ns >= unlock_ns, "the waiter acquired before the unlock");
    CHECK_INT_EQ(tk_key_exists(&fx.data[r], "sa:held"), 1);
    CHECK_INT_EQ(rlk_lock_unlock(lb), RLK_OK);
    lock_round(a, r, "sa:after");
    rlk_lock_free(la);
    rlk_lock_free(lb);
    rlk_free(a);
    rlk_free(b);
}

int main(int argc, char **argv)
{
    rlk_bin = argc > 1 ? argv[1] : NULL;
    if (rlk_fx_sentinel_start_auth(&fx, "authmaster", DATA_PASS, SENTINEL_PASS) != 0) {
        printf("it_sentinel_auth: cannot start the sentinel fixture\n");
        return 1;
    }
    printf("  fixture up in %lld ms\n", fx.start_ms);
    snprintf(addrs, sizeof addrs, "127.0.0.1:%d,127.0.0.1:%d,127.0.0.1:%d", fx.sentinel[0].port,
             fx.sentinel[1].port, fx.sentinel[2].port);
    tk_stall_start(&stall);
    RUN_TEST(test_url_passwords);
    RUN_TEST(test_option_passwords);
    RUN_TEST(test_refused);
    RUN_TEST(test_cli);
    RUN_TEST(test_failover);
    tk_stall_stop(&stall);
    rlk_fx_sentinel_stop(&fx);
    return check_summary("it_sentinel_auth");
}
