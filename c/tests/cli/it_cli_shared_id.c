/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_shared_id.c - a lost reply in a nested `rlk lock` never costs the parent its hold.
 *
 * A nested rlk on its parent's lock holds under the parent's holder id (RLK_LOCK_OWNER), so
 * the server's count of that id is the two processes' together, and a lost reply can no longer
 * be settled from it (docs/runtime.md "One holder id in several processes"):
 *
 *   release: the inner's release runs and its reply is dropped (tk_proxy_mute: the parent
 *            and the inner reach the server through a proxy); it times out (5 s), and read
 *            back, the count is the parent's 1, which the inner's own registry also counted:
 *            settled from the count, the release was sent again and deleted the parent's hold.
 *   acquire: the inner's acquire is held back (CLIENT PAUSE WRITE past the command timeout):
 *            its reply is lost. Read back, the server counts the parent's hold, which the
 *            inner's registry does not: settled from the count, the inner adopted a hold it
 *            never took, ran its command and its release deleted the parent's hold.
 *
 * Each case, plain and --fenced: the inner says the outcome is unknown; a lost acquire is exit 3
 * and its command does not run (a failed release leaves the exit to the command, docs/cli.md);
 * the parent still holds the lock
 * while its command runs (its count is on the server, an unrelated `rlk lock -n` is refused);
 * the parent's release at the end takes the count down by its own hold only.
 *
 * Shown to fail without the fix (runtime/fam_settle.c, rlk_fam_id.given): both cases of both
 * kinds found the parent's hold deleted (count 0) and the unrelated `rlk lock -n` acquired.
 *
 * Usage: it_cli_shared_id PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "tk_proxy.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

static rlk_fx_server server;
static char url[128];

/* A wait loop for sh: until the file exists, about 40 s at most. */
#define UNTIL(file) \
    "n=0; while [ ! -e \"$T/" file "\" ] && [ $n -lt 2000 ]; do sleep 0.02; n=$((n+1)); done"

static void touch(const char *name)
{
    int fd = open(cli_path(name), O_WRONLY | O_CREAT | O_TRUNC, 0600);

    REQUIREF(fd >= 0, "cannot create %s", cli_path(name));
    close(fd);
}

/* The sum of the counts in the lock hash name (its holders' holds); -1 on an error. */
static long long held_count(const char *name)
{
    redisReply *r = rlk_fx_command(&server, "HVALS %s", name);
    long long sum = -1;

    if (r && r->type == REDIS_REPLY_ARRAY) {
        sum = 0;
        for (size_t i = 0; i < r->elements; i++)
            sum += r->element[i]->type == REDIS_REPLY_STRING ? atoll(r->element[i]->str) : 0;
    }
    if (r)
        freeReplyObject(r);
    return sum;
}

/* The exit code the outer's command recorded for the inner rlk ("inner N"), -1 when none. */
static int inner_exit(const char *ev)
{
    char *text = cli_slurp(ev), *at = strstr(text, "inner ");
    int code = at ? atoi(at + 6) : -1;

    free(text);
    return code;
}

/* What follows either loss: the parent holds on, an unrelated rlk is refused, and the
 * parent's release at the end frees what it held. */
static void expect_parent_holds(cli_proc *outer, const char *name, const char *kind_opt,
                                long long parent_count, const char *end_file, const char *what,
                                const char *said)
{
    long long n = held_count(name);
    cli_result r;

    CHECKF(n >= parent_count, "%s: the parent's hold was taken from it: the server counts %lld "
           "holds of %s while the parent's command still runs", what, n, name);
    r = kind_opt ? RUN("lock", kind_opt, name, "-n", "--", "true")
                 : RUN("lock", name, "-n", "--", "true");
    CHECKF(r.status != 0, "%s: an unrelated rlk lock -n acquired %s while the parent held it",
           what, name);
    cli_result_free(&r);
    touch(end_file);
    r = cli_collect(outer, cli_wait(outer, 20000), 0);
    CHECKF(r.status == 0, "%s: the parent exited %d: %s", what, r.status, r.err);
    CHECKF(strstr(r.err, said) != NULL, "%s: the inner rlk did not say \"%s\": %s", what, said,
           r.err);
    cli_result_free(&r);
}

/* One round of the lost release: *judged 1 when it was judged, 0 when the loss did not happen
 * (the inner's release went out on a connection opened after the mute) and the round should
 * be run again. */
static void lost_release_round(const char *kind_opt, const char *name, int round, int *judged)
{
    char script[1200], what[80], evpath[400], go[64], end[64], pxurl[64];
    tk_proxy *px = tk_proxy_start(server.port);
    cli_proc outer;
    cli_result r;
    char *err;
    int code;

    REQUIRE(px != NULL);
    snprintf(pxurl, sizeof pxurl, "redis://127.0.0.1:%d", tk_proxy_port(px));
    snprintf(what, sizeof what, "lost release %s", kind_opt ? kind_opt : "plain");
    snprintf(evpath, sizeof evpath, "%s%d.ev", cli_path(name), round);
    snprintf(go, sizeof go, "%s%d.go", name, round);
    snprintf(end, sizeof end, "%s%d.end", name, round);
    snprintf(script, sizeof script,
             "\"$RLK_BIN\" lock %s %s -- sh -c 'echo in >> \"%s\"; " UNTIL("%s") "'; "
             "echo \"inner $?\" >> \"%s\"; " UNTIL("%s"),
             kind_opt ? kind_opt : "", name, evpath, go, evpath, end);
    /* The release script loaded on the server first: a first EVALSHA of it would be refused
     * (NOSCRIPT) and, its reply dropped, never run. */
    r = kind_opt ? RUN("lock", kind_opt, "sid_warm", "--", "true")
                 : RUN("lock", "sid_warm", "--", "true");
    REQUIREF(r.status == 0, "%s: a lock and unlock on the server: exit %d", what, r.status);
    cli_result_free(&r);
    cli_set_url(pxurl);     /* the parent, and so the inner (RLK_URL), through the proxy */
    REQUIRE(kind_opt ? START(&outer, "lock", kind_opt, name, "--", "sh", "-c", script) == 0
                     : START(&outer, "lock", name, "--", "sh", "-c", script) == 0);
    cli_set_url(url);
    REQUIREF(cli_wait_contains(evpath, "in", 15000) == 0, "%s: the inner rlk never held", what);
    CHECKF(held_count(name) == 2, "%s: %lld holds before the loss, not the parent's and the "
           "inner's", what, held_count(name));
    tk_proxy_mute(px);
    touch(go);          /* the inner's command ends: its release runs, its reply is dropped */
    REQUIREF(cli_wait_contains(evpath, "inner ", 30000) == 0, "%s: the inner rlk did not end",
             what);
    code = inner_exit(evpath);
    fprintf(stderr, "  %s: inner exit %d, server counts %lld\n", what, code, held_count(name));
    /* A release that failed leaves the exit to the command (docs/cli.md): 0 here. */
    CHECKF(code == 0, "%s: the inner rlk exited %d, not its command's 0", what, code);
    CHECKF(held_count(name) >= 1, "%s: the parent's hold was taken from it: the server counts "
           "%lld holds of %s while the parent's command still runs", what, held_count(name), name);
    r = kind_opt ? RUN("lock", kind_opt, name, "-n", "--", "true")
                 : RUN("lock", name, "-n", "--", "true");
    CHECKF(r.status != 0, "%s: an unrelated rlk lock -n acquired %s while the parent held it",
           what, name);
    cli_result_free(&r);
    touch(end);
    r = cli_collect(&outer, cli_wait(&outer, 20000), 0);
    CHECKF(r.status == 0, "%s: the parent exited %d: %s", what, r.status, r.err);
    err = r.err ? r.err : "";
    if (!strstr(err, "timed out")) {
        fprintf(stderr, "  %s: the release was not lost (sent on a new connection): not "
                "judged, run again; rlk said: %s\n", what, err);
        *judged = 0;
    } else {
        CHECKF(strstr(err, "the release's reply cannot be read back") != NULL,
               "%s: the inner rlk did not say the outcome is unknown: %s", what, err);
    }
    cli_result_free(&r);
    tk_proxy_stop(px);
}

/* The inner's release runs; its reply is dropped (tk_proxy_mute). */
static void test_lost_release(const char *kind_opt, const char *name)
{
    int round = 0, judged = 0;

    do {
        judged = 1;
        char rname[64];

        snprintf(rname, sizeof rname, "%s%d", name, round);     /* a round's parent may leave
                                                                   its hold to its lease */
        lost_release_round(kind_opt, rname, round, &judged);
    } while (!judged && ++round < 3);
    CHECKF(round < 3, "%s: the release was never lost in 3 rounds", name);
}

/* The inner's acquire is held back by CLIENT PAUSE WRITE past the command timeout. */
static void test_lost_acquire(const char *kind_opt, const char *name)
{
    char script[1200], what[80], evpath[400], go[64], end[64];
    redisReply *r;
    cli_proc outer;
    char *text;
    int code;

    snprintf(what, sizeof what, "lost acquire %s", kind_opt ? kind_opt : "plain");
    snprintf(evpath, sizeof evpath, "%s.ev", cli_path(name));
    snprintf(go, sizeof go, "%s.go", name);
    snprintf(end, sizeof end, "%s.end", name);
    snprintf(script, sizeof script,
             "echo ready >> \"$T/%s.ev\"; " UNTIL("%s.go") "; "
             "\"$RLK_BIN\" lock %s %s -- sh -c 'echo ran >> \"$T/%s.ev\"'; "
             "echo \"inner $?\" >> \"$T/%s.ev\"; " UNTIL("%s.end"),
             name, name, kind_opt ? kind_opt : "", name, name, name, name);
    REQUIRE(kind_opt ? START(&outer, "lock", kind_opt, name, "--", "sh", "-c", script) == 0
                     : START(&outer, "lock", name, "--", "sh", "-c", script) == 0);
    REQUIREF(cli_wait_contains(evpath, "ready", 15000) == 0, "%s: the parent never held", what);
    r = rlk_fx_command(&server, "CLIENT PAUSE 8000 WRITE");
    REQUIRE(r && r->type == REDIS_REPLY_STATUS);
    freeReplyObject(r);
    touch(go);          /* the inner rlk starts; its acquire waits behind the pause */
    REQUIREF(cli_wait_contains(evpath, "inner ", 30000) == 0, "%s: the inner rlk did not end",
             what);
    r = rlk_fx_command(&server, "CLIENT UNPAUSE");
    if (r)
        freeReplyObject(r);
    code = inner_exit(evpath);
    text = cli_slurp(evpath);
    fprintf(stderr, "  %s: inner exit %d, server counts %lld\n", what, code, held_count(name));
    CHECKF(code == 3, "%s: the inner rlk exited %d, not 3 (outcome unknown)", what, code);
    CHECKF(!strstr(text, "ran"), "%s: the inner ran its command on a hold it never took", what);
    free(text);
    expect_parent_holds(&outer, name, kind_opt, 1, end, what,
                        "the acquire's reply cannot be read back");
}

static void test_release_plain(void) { test_lost_release(NULL, "sid_rel"); }
static void test_release_fenced(void) { test_lost_release("--fenced", "sid_frel"); }
static void test_acquire_plain(void) { test_lost_acquire(NULL, "sid_acq"); }
static void test_acquire_fenced(void) { test_lost_acquire("--fenced", "sid_facq"); }

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    RUN_TEST(test_release_plain);
    RUN_TEST(test_release_fenced);
    RUN_TEST(test_acquire_plain);
    RUN_TEST(test_acquire_fenced);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_shared_id");
}
