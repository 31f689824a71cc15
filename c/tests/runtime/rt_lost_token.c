/*
 * rt_lost_token.c - one token per acquisition, through a lost reply
 * (docs/locks/fenced.md "Lost replies"; conventions "One token per
 * acquisition").
 *
 * A fenced acquire whose reply is lost (DEBUG SLEEP longer than the
 * command timeout, begun before the request is written: it times out, then
 * runs when the sleep ends) is settled by reading back whether it ran. The
 * planted interleaving: once the client knows it ran and before it adopts
 * the hold (the test-only hook rlk_fam_adopt_hook_set), a second process
 * takes the lock, which it gets when the first holder's short fixed lease
 * (300 ms) has run out. A library that reads the token after that (a
 * second round trip after the count) hands the first caller RLK_OK with
 * the second holder's token, and a fence admits both writers (an equal
 * token is "the same holder"). Checked for the blocking API
 * (rlk_fenced_try_lock) and the non-blocking one (rlk_async_lock,
 * RLK_KIND_FENCED): when the first caller gets RLK_OK, its token differs
 * from the second holder's and is lower.
 *
 * Control: the same program on the library before the fix (the count and
 * the token read in two round trips) fails every round the hook fired
 * ("both acquisitions got token ...").
 */
#include "check.h"
#include "tk_util.h"
#include "rlk.h"
#include "rlk_async.h"
#include "rlk_async_poll.h"
#include "runtime/fam_settle.h"   /* rlk_fam_adopt_hook_set: the test-only hook */

#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROUNDS 3
#define LEASE_MS 300            /* the first holder's fixed lease: runs out in the hook */

static rlk_fx_server srv;
static char url[128];
static int to_child = -1, from_child = -1;
static pid_t child;
static long long b_token;       /* the second holder's token, this round; 0: none */
static int hook_fired;

/* ------------------------------------------------------------ the second process */

/* Reads a line (bounded by ms) into buf; 0 on success. */
static int read_line(int fd, char *buf, size_t len, long ms)
{
    size_t n = 0;
    long long end = rlk_fx_now_ms() + ms;

    while (n + 1 < len) {
        struct pollfd p = {fd, POLLIN, 0};
        long left = (long)(end - rlk_fx_now_ms());

        if (left <= 0 || poll(&p, 1, (int)left) <= 0)
            return -1;
        if (read(fd, buf + n, 1) != 1)
            return -1;
        if (buf[n] == '\n') {
            buf[n] = '\0';
            return 0;
        }
        n++;
    }
    return -1;
}

/* Each line is a lock name: take it (waiting up to 10 s, lease 30 s, never
 * unlocked: the name is not used again) and answer its token (0: not
 * taken). Ends at EOF. */
static int child_main(int in, int out)
{
    rlk_client *c = NULL;
    char name[128], reply[64];

    while (read_line(in, name, sizeof name, 120000) == 0) {
        rlk_fenced *f;
        long long token = 0;

        if (!c && !(c = rlk_connect_url(url)))
            return 3;
        f = rlk_fenced_new(c, name);
        if (!f || rlk_fenced_try_lock(f, 10000, 30000, &token) != RLK_OK)
            token = 0;
        snprintf(reply, sizeof reply, "%lld\n", token);
        if (write(out, reply, strlen(reply)) < 0)
            return 4;
        /* the handle is kept: the hold stays until its lease ends */
    }
    return 0;
}

static int child_start(void)
{
    int down[2], up[2];

    if (pipe(down) != 0 || pipe(up) != 0)
        return -1;
    if ((child = fork()) < 0)
        return -1;
    if (child == 0) {
        close(down[1]);
        close(up[0]);
        _exit(child_main(down[0], up[1]));
    }
    close(down[0]);
    close(up[1]);
    to_child = down[1];
    from_child = up[0];
    return 0;
}

/* The hook: the first holder's lost acquire ran; before it is adopted the
 * second process takes the lock (once the first's lease has run out). */
static void between(const char *name, void *arg)
{
    char line[160];

    (void)arg;
    hook_fired++;
    snprintf(line, sizeof line, "%s\n", name);
    b_token = 0;
    if (write(to_child, line, strlen(line)) < 0 || read_line(from_child, line, sizeof line, 15000))
        return;
    b_token = atoll(line);
}

/* ------------------------------------------------------------ the checks */

static void check_round(const char *api, int round, int rc, long long token, int fired,
                        const char *err)
{
    if (!fired) {
        printf("  %s round %d: the read-back found no acquire that ran (rc %d: %s): not "
               "exercised\n", api, round, rc, err);
        return;
    }
    CHECKF(b_token > 0, "%s round %d: the second process did not get the lock", api, round);
    printf("  %s round %d: rc %d, first token %lld, second holder's %lld\n", api, round, rc,
           token, b_token);
    if (rc != RLK_OK)
        return;     /* not adopted: nothing handed out */
    CHECKF(token != b_token, "%s round %d: both acquisitions got token %lld (%s)", api, round,
           token, err);
    CHECKF(token < b_token, "%s round %d: the first holder's token %lld is not below the "
           "second's %lld", api, round, token, b_token);
}

static void test_blocking(void)
{
    rlk_options opt;
    rlk_client *a;
    int fired = 0;

    rlk_options_init(&opt);
    opt.url = url;
    opt.command_timeout_ms = 200;
    a = rlk_connect(&opt);
    REQUIRE(a && rlk_err(a) == RLK_OK);
    {   /* the scripts loaded first: a lock and its unlock */
        rlk_fenced *wf = rlk_fenced_new(a, "tok:warm-blocking");
        long long t = 0;

        REQUIRE(wf && rlk_fenced_try_lock(wf, 0, 30000, &t) == RLK_OK);
        REQUIRE(rlk_fenced_unlock(wf) == RLK_OK);
        rlk_fenced_free(wf);
    }
    for (int round = 0; round < ROUNDS; round++) {
        char name[64];
        rlk_fenced *f;
        redisContext *x;
        long long token = 0;
        int rc, before = hook_fired;

        snprintf(name, sizeof name, "tok:blocking-%d", round);
        REQUIRE((f = rlk_fenced_new(a, name)));
        REQUIRE((x = rlk_fx_sleep_begin(&srv, 700)));
        rc = rlk_fenced_try_lock(f, 0, LEASE_MS, &token);
        rlk_fx_sleep_end(x);
        fired += hook_fired > before;
        check_round("blocking", round, rc, token, hook_fired > before, rlk_errstr(a));
        rlk_fenced_free(f);
    }
    CHECKF(fired >= 1, "blocking: no round's acquire ran after its lost reply (the machine "
           "stalled past the 700 ms sleep?)");
    rlk_free(a);
}

static void test_async(void)
{
    rlk_options opt;
    rlk_async_poll p;
    rlk_async *ac;
    tk_ares w = {0};
    int fired = 0;

    rlk_options_init(&opt);
    opt.url = url;
    opt.command_timeout_ms = 200;
    REQUIRE((ac = rlk_async_new(&opt)));
    REQUIRE(rlk_async_poll_attach(ac, &p) == RLK_OK);
    /* connected first: a lock and its unlock */
    REQUIRE(rlk_async_lock(ac, RLK_KIND_FENCED, "tok:warm", 1, 0, 30000, tk_ares_cb, &w));
    REQUIRE(tk_ares_run(&p, &w, 10000) && w.err == RLK_OK);
    memset(&w, 0, sizeof w);
    REQUIRE(rlk_async_unlock(ac, RLK_KIND_FENCED, "tok:warm", 1, tk_ares_cb, &w));
    REQUIRE(tk_ares_run(&p, &w, 10000) && w.err == RLK_OK);
    for (int round = 0; round < ROUNDS; round++) {
        char name[64];
        redisContext *x;
        tk_ares r = {0};
        int before = hook_fired;

        snprintf(name, sizeof name, "tok:async-%d", round);
        REQUIRE((x = rlk_fx_sleep_begin(&srv, 700)));
        REQUIRE(rlk_async_lock(ac, RLK_KIND_FENCED, name, 1, 0, LEASE_MS, tk_ares_cb, &r));
        REQUIRE(tk_ares_run(&p, &r, 20000));
        rlk_fx_sleep_end(x);
        fired += hook_fired > before;
        check_round("async", round, r.err, r.err == RLK_OK ? r.value : 0, hook_fired > before,
                    r.errstr);
    }
    CHECKF(fired >= 1, "async: no round's acquire ran after its lost reply (the machine "
           "stalled past the 700 ms sleep?)");
    rlk_async_free(ac);
    rlk_async_poll_free(&p);
}

int main(void)
{
    static const char *const extra[] = {"--enable-debug-command", "yes", NULL};
    rlk_fx_config cfg;
    int status = 0;

    signal(SIGPIPE, SIG_IGN);
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0) {
        fprintf(stderr, "rt_lost_token: cannot start redis-server\n");
        return 1;
    }
    if (child_start() != 0) {
        fprintf(stderr, "rt_lost_token: cannot start the second process\n");
        return 1;
    }
    rlk_fam_adopt_hook_set(between, NULL);
    RUN_TEST(test_blocking);
    RUN_TEST(test_async);
    rlk_fam_adopt_hook_set(NULL, NULL);
    close(to_child);
    if (waitpid(child, &status, 0) == child && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
        fprintf(stderr, "rt_lost_token: the second process ended with status %d\n", status);
    rlk_fx_stop(&srv);
    return check_summary("rt_lost_token");
}
