/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_acl_recipe.c - the ACL rule set of docs/acl.md, read from the page (the
 * one line starting "user app on "), given to a user of a fixture server with
 * ACL SETUSER, and every kind run as that user through rlk: reentrant lock
 * (with a waiter woken by the unlock message: SUBSCRIBE and PUBLISH allowed),
 * read and write lock, fair lock (a queued waiter), fenced lock, MultiLock,
 * semaphore, latch (an awaiter woken), a token lock by rlk eval, inspect and
 * force unlock; `rlk check --user app --name app:x` finds every kind allowed.
 * Then the same rules without +publish: a release says truthfully that it
 * released but could not wake waiters (the key is gone), as does unlock --force.
 *
 * Usage: it_acl_recipe PATH_TO_RLK PATH_TO_docs/acl.md [functions]
 *
 * With "functions": the page's functions-mode line ("user appfn on ...": FCALL,
 * no EVALSHA/SCRIPT) instead, the library loaded by `rlk functions load` (and
 * verified), proof that EVAL, EVALSHA and SCRIPT LOAD are refused to that user
 * (rlk --no-functions fails with NOPERM), then every kind as that user (rlk
 * finds the library and calls FCALL) and the release without +publish; at the
 * end the server's INFO commandstats must show FCALL calls and no EVALSHA or
 * EVAL that ran. `rlk check`'s ACL verdict is about EVALSHA: not run here.
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "json_mini.h"
#include "tk_util.h"

#include <rlk.h>

static rlk_fx_server server;
static char admin_url[128], app_url[160], nopub_url[160];
static char rules[4096];
static int functions_mode;

/* The rule line of the doc, without "user " (app, or appfn in functions mode: then
 * renamed app, so that the rest of the program is the same). */
static int read_rules(const char *doc)
{
    const char *prefix = functions_mode ? "user appfn on " : "user app on ";
    size_t plen = strlen(prefix);
    char *text = cli_slurp(doc), *line, *save = NULL;
    int found = 0;

    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (strncmp(line, prefix, plen) == 0) {
            found++;
            snprintf(rules, sizeof rules, "app on %s", line + plen);
        }
    }
    free(text);
    if (found != 1)
        fprintf(stderr, "%s: %d lines start with '%s' (expected one)\n", doc, found, prefix);
    return found == 1 ? 0 : -1;
}

/* ACL SETUSER <user> <the doc's rules after the user name> [extra...] */
static int setuser(const char *user, const char *extra)
{
    char buf[8192], *save = NULL;
    const char *argv[128];
    int n = 0;
    redisContext *c = rlk_fx_connect(&server);
    redisReply *r;
    int ok;

    if (!c)
        return -1;
    snprintf(buf, sizeof buf, "%s %s", rules, extra ? extra : "");
    argv[n++] = "ACL";
    argv[n++] = "SETUSER";
    argv[n++] = user;
    for (char *w = strtok_r(buf, " ", &save); w && n < 128; w = strtok_r(NULL, " ", &save))
        if (n > 3 || strcmp(w, "app") != 0) /* the doc's user name: replaced by ours */
            argv[n++] = w;
    r = redisCommandArgv(c, n, argv, NULL);
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "ACL SETUSER %s: %s\n", user, r && r->str ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    redisFree(c);
    return ok ? 0 : -1;
}

static void expect_ok(const char *what, cli_result r)
{
    if (getenv("IT_ACL_VERBOSE"))
        fprintf(stderr, "  %s: %lld ms\n", what, r.ms);
    expect_status(&r, 0, what);
    cli_result_free(&r);
}

static long long exists(const char *key)
{
    return tk_int(&server, "EXISTS %s", key);
}

/* A holder runs `sleep`-less until a file appears; a waiter must be woken by the unlock
 * message, well before the holder's 30 s watchdog lease would run out. */
static void contended(const char *kind_opt, const char *name)
{
    cli_proc holder, waiter;
    char cmd[512];
    long long t0;
    int st;

    snprintf(cmd, sizeof cmd, "touch \"$T/held-%s\"; i=0; while [ ! -e \"$T/go-%s\" ] && [ $i -lt 600 ]; "
             "do sleep 0.05; i=$((i+1)); done", name, name);
    if (kind_opt)
        REQUIRE(START(&holder, "lock", kind_opt, name, "--", "sh", "-c", cmd) == 0);
    else
        REQUIRE(START(&holder, "lock", name, "--", "sh", "-c", cmd) == 0);
    {
        char held[64];

        snprintf(held, sizeof held, "held-%s", name);
        REQUIRE(cli_wait_file(cli_path(held), 10000) == 0);
    }
    if (kind_opt)
        REQUIRE(START(&waiter, "lock", kind_opt, name, "-w", "20", "--", "true") == 0);
    else
        REQUIRE(START(&waiter, "lock", name, "-w", "20", "--", "true") == 0);
    rlk_fx_sleep_ms(300); /* let the waiter subscribe and wait (it is proven woken below) */
    {
        char go[64];
        FILE *f;

        snprintf(go, sizeof go, "go-%s", name);
        f = fopen(cli_path(go), "w");
        REQUIRE(f != NULL);
        fclose(f);
    }
    t0 = rlk_fx_now_ms();
    st = cli_wait(&holder, 15000);
    cli_result hr = cli_collect(&holder, st, 0);
    CHECKF(st == 0, "%s holder %s: exit %d: %s", kind_opt ? kind_opt : "lock", name, st, hr.err);
    cli_result_free(&hr);
    st = cli_wait(&waiter, 20000);
    cli_result wr = cli_collect(&waiter, st, 0);
    CHECKF(st == 0, "%s waiter %s: exit %d: %s", kind_opt ? kind_opt : "lock", name, st, wr.err);
    /* Woken by the message: far sooner than the 30 s lease. */
    CHECKF(rlk_fx_now_ms() - t0 < 10000, "%s waiter %s took %lld ms: not woken by the unlock "
           "message", kind_opt ? kind_opt : "lock", name, rlk_fx_now_ms() - t0);
    cli_result_free(&wr);
}

static void test_every_kind_as_app(void)
{
    cli_set_url(app_url);
    expect_ok("lock", RUN("lock", "app:a", "--", "true"));
    expect_ok("lock -l", RUN("lock", "app:a", "-l", "5000", "--", "true"));
    contended(NULL, "app:c");
    expect_ok("--write", RUN("lock", "--write", "app:rw", "--", "true"));
    expect_ok("--read", RUN("lock", "--read", "app:rw", "--", "true"));
    contended("--write", "app:rw2");
    expect_ok("--fair", RUN("lock", "--fair", "app:f", "--", "true"));
    contended("--fair", "app:f2");
    expect_ok("--fenced", RUN("lock", "--fenced", "app:fe", "--", "true"));
    contended("--fenced", "app:fe2");
    expect_ok("--all", RUN("lock", "--all", "app:m1", "app:m2", "--", "true"));
    expect_ok("semaphore", RUN("semaphore", "app:s", "--permits", "2", "--", "true"));
    expect_ok("latch set", RUN("latch", "app:l", "set", "1"));
    {
        cli_proc aw;
        int st;

        REQUIRE(START(&aw, "latch", "app:l", "await", "-w", "20") == 0);
        rlk_fx_sleep_ms(200);
        expect_ok("latch count-down", RUN("latch", "app:l", "count-down"));
        st = cli_wait(&aw, 20000);
        cli_result r = cli_collect(&aw, st, 0);
        CHECKF(st == 0, "latch await: exit %d: %s", st, r.err);
        cli_result_free(&r);
    }
    expect_ok("eval token/acquire", RUN("eval", "token/acquire", "--key", "app:t", "--arg", "tok1",
                                        "--arg", "30000"));
    expect_ok("eval token/release", RUN("eval", "token/release", "--key", "app:t", "--arg", "tok1"));
    {
        cli_proc h;

        REQUIRE(START(&h, "lock", "app:u", "--watchdog-lease", "600", "--", "sh", "-c", "touch \"$T/u\"; exec sleep 30") == 0);
        REQUIRE(cli_wait_file(cli_path("u"), 10000) == 0);
        expect_ok("unlock --force", RUN("unlock", "--force", "app:u"));
        int st = cli_wait(&h, 20000);
        cli_result r = cli_collect(&h, st, 0);
        CHECK_INT_EQ(st, 6); /* its lock was removed: the holder reports the loss */
        cli_result_free(&r);
    }
    /* Outside the prefix: refused. */
    {
        cli_result r = RUN("lock", "other", "-n", "--", "true");

        CHECKF(r.status != 0, "a lock outside app:* was allowed");
        CHECK_STR_CONTAINS(r.err, "NOPERM");
        cli_result_free(&r);
    }
    CHECK_INT_EQ(exists("app:a"), 0);
    CHECK_INT_EQ(exists("app:c"), 0);
    cli_set_url(admin_url);
}

/* rlk check's ACL verdict for user (functions mode: --functions) as JSON: its level. */
static void check_acl_level(const char *user, const char *want)
{
    cli_result r = functions_mode ? RUN("check", "--json", "--functions", "--user", user,
                                        "--name", "app:orders")
                                  : RUN("check", "--json", "--user", user, "--name", "app:orders");
    const char *err = NULL;
    json_value *v = json_parse(r.out, &err);
    int seen = 0;

    CHECKF(v != NULL, "check --json: %s", r.out);
    if (v) {
        const json_value *checks = json_get(v, "checks");

        for (size_t i = 0; checks && i < checks->count; i++) {
            const json_value *f = json_at(checks, i);

            if (strcmp(json_get_string(f, "check"), "acl") == 0) {
                seen = 1;
                CHECKF(strcmp(json_get_string(f, "level"), want) == 0, "acl of %s: %s (want %s)",
                       user, json_get_string(f, "message"), want);
            }
        }
        json_free(v);
    }
    CHECK(seen);
    cli_result_free(&r);
}

static void test_check_agrees(void)
{
    check_acl_level("app", "ok");
    /* Control: the same rules without the call command (FCALL, or EVALSHA) are an error. */
    CHECK(setuser("appnocall", functions_mode ? "-fcall" : "-evalsha") == 0);
    check_acl_level("appnocall", "error");
}

static void test_publish_refused(void)
{
    cli_result r;

    cli_set_url(nopub_url);
    r = RUN("lock", "app:np", "--", "true");
    CHECK_INT_EQ(r.status, 0); /* the command's exit code */
    CHECK_STR_CONTAINS(r.err, "unlock app:np: released, but the unlock message was refused by ACL");
    CHECK_STR_CONTAINS(r.err, "waiters wake only at their TTL");
    expect_one_line_error(&r, "lock without +publish");
    cli_result_free(&r);
    CHECK_INT_EQ(exists("app:np"), 0); /* it was released */

    /* The faster MultiLock: released, and says so (its release publishes last too). */
    r = RUN("fastmulti", "app:npfm", "v1", "v2", "--", "true");
    CHECK_INT_EQ(r.status, 0);
    CHECK_STR_CONTAINS(r.err, "unlock faster MultiLock app:npfm: released, but the unlock message "
                       "was refused by ACL");
    cli_result_free(&r);
    CHECK_INT_EQ(exists("app:npfm"), 0);

    r = RUN("lock", "--write", "app:np2", "--", "true");
    CHECK_STR_CONTAINS(r.err, "released, but the unlock message was refused by ACL");
    cli_result_free(&r);
    CHECK_INT_EQ(exists("app:np2"), 0);

    /* Force unlock: removed, and says so; exit 4. */
    cli_set_url(admin_url);
    redisReply *rr = rlk_fx_command(&server, "HSET app:np3 someone:1 1");
    if (rr)
        freeReplyObject(rr);
    /* with its lease, as a holder leaves it (a hash without a TTL is refused unless named) */
    if ((rr = rlk_fx_command(&server, "PEXPIRE app:np3 60000")))
        freeReplyObject(rr);
    cli_set_url(nopub_url);
    r = RUN("unlock", "--force", "app:np3");
    CHECK_INT_EQ(r.status, 4);
    CHECK_STR_CONTAINS(r.err, "force unlock app:np3: removed, but the unlock message was refused by ACL");
    cli_result_free(&r);
    CHECK_INT_EQ(exists("app:np3"), 0);
    cli_set_url(admin_url);
}

/* What makes RLK_ERR_NOTIFY true: in every release and force-release script, no write comes
 * after a PUBLISH on its path. In the text: from each PUBLISH, every line up to the first
 * `return` that starts a line indented no deeper than that PUBLISH (the end of its path: a
 * return inside a deeper block ends only that block) holds no write. A script whose fast path
 * publishes and returns first (reentrant/release) has its other paths' writes after it in the
 * text. reentrant/release's grants go out with redis.pcall, which cannot raise. */
static int publish_then_write(const char *body, const char *pub, const char *call)
{
    const char *line = pub;
    size_t depth;

    while (line > body && line[-1] != '\n')
        line--;
    depth = (size_t)(pub - line);
    for (line = strchr(pub, '\n'); line; line = strchr(line, '\n')) {
        const char *eol, *at;
        size_t indent;

        line++;
        indent = strspn(line, " ");
        if (indent <= depth && strncmp(line + indent, "return", 6) == 0)
            return 0;
        eol = strchr(line, '\n');
        if ((at = strstr(line, call)) && (!eol || at < eol))
            return 1;
    }
    return 0;
}

static void test_release_scripts_publish_last(void)
{
    static const char *const writes[] = {"'del'", "'set'", "'hset'", "'hdel'", "'hincrby'",
                                         "'pexpire'", "'incrby'", "'decrby'", "'decr'", "'zadd'",
                                         "'zrem'", "'rpush'", "'lpop'", "'lrem'", "'zincrby'",
                                         "'zremrangebyscore'", NULL};
    int checked = 0;

    for (size_t i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *s = rlk_embedded_at(i);
        const char *op = strchr(s->name, '/') + 1;
        const char *pub = strstr(s->body, "redis.call(publish,");   /* lib/publish_cmd */

        if (strstr(op, "release") == NULL || !pub)
            continue;
        checked++;
        for (; pub; pub = strstr(pub + 1, "redis.call(publish,"))
            for (int w = 0; writes[w]; w++) {
                char call[48];

                snprintf(call, sizeof call, "redis.call(%s", writes[w]);
                CHECKF(!publish_then_write(s->body, pub, call), "%s: %s after a PUBLISH on its "
                       "path", s->name, call);
            }
    }
    CHECKF(checked >= 6, "only %d release scripts publish", checked);
}

/* Functions mode: the library loaded and verified by rlk as the admin; as app, rlk refused
 * EVALSHA and EVAL / SCRIPT LOAD refused (the control), FCALL_RO rlk_version allowed. */
static void test_functions_setup(void)
{
    redisContext *c;
    redisReply *r;

    expect_ok("functions load", RUN("functions", "load"));
    expect_ok("functions verify", RUN("functions", "verify"));
    cli_set_url(app_url);
    {
        cli_result e = RUN("--no-functions", "eval", "token/acquire", "--key", "app:t0", "--arg",
                           "tok", "--arg", "30000");

        CHECKF(e.status != 0, "rlk --no-functions eval as the FCALL-only user succeeded");
        CHECK_STR_CONTAINS(e.err, "NOPERM");
        cli_result_free(&e);
    }
    cli_set_url(admin_url);
    c = rlk_fx_connect(&server);
    REQUIRE(c != NULL);
    r = redisCommand(c, "AUTH app app-secret");
    CHECK(r && r->type == REDIS_REPLY_STATUS);
    if (r)
        freeReplyObject(r);
    r = redisCommand(c, "EVAL %s 0", "return 1");
    CHECKF(r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOPERM", 6) == 0, "EVAL: %s",
           r && r->str ? r->str : "not refused");
    if (r)
        freeReplyObject(r);
    r = redisCommand(c, "SCRIPT LOAD %s", "return 1");
    CHECKF(r && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOPERM", 6) == 0,
           "SCRIPT LOAD: %s", r && r->str ? r->str : "not refused");
    if (r)
        freeReplyObject(r);
    r = redisCommand(c, "FCALL_RO rlk_version 0");
    CHECKF(r && r->type == REDIS_REPLY_ARRAY, "FCALL_RO rlk_version: %s",
           r && r->str ? r->str : "not an array");
    if (r)
        freeReplyObject(r);
    redisFree(c);
}

/* calls=N of INFO commandstats' line for cmd (0 when absent). */
static long long calls_of(const char *cmd)
{
    return tk_command_calls(&server, cmd);
}

static void test_functions_were_called(void)
{
    long long fcall = calls_of("fcall"), evalsha = calls_of("evalsha"), eval = calls_of("eval");

    printf("  functions mode: the server ran %lld FCALL, %lld FCALL_RO, %lld EVALSHA, %lld EVAL\n",
           fcall, calls_of("fcall_ro"), evalsha, eval);
    CHECKF(fcall > 20, "only %lld FCALL calls", fcall);
    CHECK_INT_EQ(evalsha, 0);
    CHECK_INT_EQ(eval, 0);
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: %s PATH_TO_RLK PATH_TO_ACL_MD\n", argv[0]);
        return 2;
    }
    functions_mode = argc > 3 && strcmp(argv[3], "functions") == 0;
    if (read_rules(argv[2]) != 0)
        return 1;
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, admin_url, sizeof admin_url) != 0 ||
        cli_setup(argv[1], admin_url) != 0)
        return 1;
    if (setuser("app", NULL) != 0 || setuser("appnp", "-publish") != 0)
        return 1;
    snprintf(app_url, sizeof app_url, "redis://app:app-secret@127.0.0.1:%d", server.port);
    snprintf(nopub_url, sizeof nopub_url, "redis://appnp:app-secret@127.0.0.1:%d", server.port);
    if (functions_mode) {
        RUN_TEST(test_functions_setup);
        RUN_TEST(test_every_kind_as_app);
        RUN_TEST(test_publish_refused);
        RUN_TEST(test_functions_were_called);
        RUN_TEST(test_check_agrees);
    } else {
        RUN_TEST(test_release_scripts_publish_last);
        RUN_TEST(test_every_kind_as_app);
        RUN_TEST(test_check_agrees);
        RUN_TEST(test_publish_refused);
    }
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_acl_recipe");
}
