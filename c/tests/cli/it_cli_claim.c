/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_claim.c - "claim the fence first" (`--claim FENCE` of `rlk lock --fenced` and
 * `rlk elect`, rlk_fence_claim) and the token a nested `rlk lock --fenced` hands down,
 * against a fixture server (docs/locks/fenced.md, "Claim the fence first" and "Nested
 * holders"; docs/elect.md).
 *
 *   - Lost update: a stale holder (the first acquisition's token) increments the balance
 *     between the new holder's plain read and its first fenced write. Without --claim (the
 *     control) the stale increment is accepted and then overwritten: the update is lost.
 *     With --claim the fence already holds the new token when the command starts, the
 *     stale increment is refused (exit 11) and nothing is lost.
 *   - An election across two fences: the new leader writes fence F1 only, the old leader
 *     (its term) writes F2. Without --claim (the control) that write lands while the new
 *     leader leads; with --claim F1 --claim F2 it is refused (exit 11).
 *   - A claim that finds a newer token: the lock is given back (or the leader resigns),
 *     the command does not run, exit 11; --claim without --fenced: usage, exit 2.
 *   - Nested re-entry: `rlk lock --fenced N -- sh -c 'rlk lock --fenced N -- rlk fence ...;
 *     rlk fence ...'`: the inner rlk re-enters with the outer's token (no newer one), so the
 *     outer's write after the inner's is accepted (it was refused, exit 11, when the
 *     re-entry minted a new token); the re-entry is counted on the server (count 2). When
 *     the outer's hold is gone, the inner acquires with a new, larger token.
 *
 * Usage: it_cli_claim PATH_TO_RLK   (and, for the commands it runs: it_cli_claim --get KEY,
 * a plain GET on $RLK_URL printing the value, "" when missing)
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"

#include <rlk.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static rlk_fx_server server;
static char url[128];

/* The helper mode: a holder's plain read (no fence check), as an application reads. */
static int get_main(const char *key)
{
    const char *argv[2] = {"GET", key};
    const char *u = getenv("RLK_URL");
    rlk_client *c = rlk_connect_url(u ? u : "redis://127.0.0.1:6379");
    redisReply *r = NULL;

    if (!c || rlk_err(c) != RLK_OK || rlk_command(c, 2, argv, NULL, &r) != RLK_OK)
        return 3;
    printf("%s\n", r->type == REDIS_REPLY_STRING ? r->str : "");
    freeReplyObject(r);
    rlk_free(c);
    return 0;
}

static const char *self_exe(void)
{
    static char self[512];

    if (!self[0]) {
        ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);

        self[n > 0 ? n : 0] = '\0';
    }
    return self;
}

/* GET key as a string into buf ("" when missing). */
static const char *get_str(const char *key, char *buf, size_t len)
{
    return tk_str(&server, buf, len, "GET %s", key);
}

static long long get_ll(const char *key)
{
    char buf[64];

    return atoll(get_str(key, buf, sizeof buf));
}

static void touch(const char *path)
{
    FILE *f = fopen(path, "w");

    REQUIREF(f != NULL, "cannot create %s", path);
    fclose(f);
}

/* An sh loop that waits (about 10 s at most) until the file exists. */
static void wait_for_file(char *buf, size_t len, const char *path)
{
    snprintf(buf, len, "n=0; while [ ! -e '%s' ] && [ $n -lt 1000 ]; do sleep 0.01; "
             "n=$((n+1)); done", path);
}

/* *token: the token a started holder wrote to path (its $RLK_FENCE_TOKEN), once it is there
 * (10 s at most: fails the case otherwise). */
static void holder_token(const char *path, const char *what, long long *token)
{
    char *t;

    *token = 0;
    REQUIREF(cli_wait_file(path, 10000) == 0, "%s: the new holder never wrote %s", what, path);
    t = cli_slurp(path);
    *token = atoll(t);
    free(t);
}

/* Lets the started holder p go on (creates go) and checks that it ends with status 0. */
static void holder_finish(cli_proc *p, const char *go, const char *what)
{
    cli_result r;

    touch(go);
    r = cli_collect(p, cli_wait(p, 15000), 0);
    expect_status(&r, 0, what);
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- lost update */

/* claim 0: the control (the update is lost); 1: --claim (the stale write refused). */
static void lost_update(int claim)
{
    char name[32], fence[48], data[48], cmd[2400], wait_go[400], tok[32], buf[64], what[64];
    const char *read_path, *go_path;
    long long t1, t2;
    cli_result r, stale;
    cli_proc p;

    snprintf(name, sizeof name, "acct%d", claim);
    snprintf(fence, sizeof fence, "{%s}:fence", name);
    snprintf(data, sizeof data, "{%s}:balance", name);
    snprintf(what, sizeof what, "%s", claim ? "with --claim" : "control, no --claim");
    /* The first holder writes 100 with its token T1 (the fence now at T1). */
    snprintf(cmd, sizeof cmd, "echo \"$RLK_FENCE_TOKEN\"; \"$RLK_BIN\" fence set '%s' 100 >/dev/null",
             data);
    r = RUN("lock", "--fenced", name, "--", "sh", "-c", cmd);
    expect_status(&r, 0, "first holder");
    t1 = atoll(r.out);
    cli_result_free(&r);
    REQUIRE(t1 > 0);
    /* The new holder: a plain read, then (once told) its first fenced write, read + 1. */
    read_path = cli_path(claim ? "read1" : "read0");
    go_path = cli_path(claim ? "go1" : "go0");
    wait_for_file(wait_go, sizeof wait_go, go_path);
    snprintf(cmd, sizeof cmd,
             "v=$('%s' --get '%s') && echo \"$RLK_FENCE_TOKEN\" > '%s.tmp' && "
             "mv '%s.tmp' '%s' && %s && \"$RLK_BIN\" fence set '%s' $((v + 1))",
             self_exe(), data, read_path, read_path, read_path, wait_go, data);
    if (claim)
        REQUIRE(START(&p, "lock", "--fenced", name, "--claim", fence, "--", "sh", "-c", cmd)
                == 0);
    else
        REQUIRE(START(&p, "lock", "--fenced", name, "--", "sh", "-c", cmd) == 0);
    holder_token(read_path, what, &t2);
    CHECKF(t2 > t1, "%s: the new holder's token %lld after %lld", what, t2, t1);
    /* The stale holder, between the new holder's read and its first write: +5. */
    snprintf(tok, sizeof tok, "%lld", t1);
    stale = RUN("fence", "--token", tok, "--fence", fence, "incrby", data, "5");
    holder_finish(&p, go_path, "new holder");
    if (!claim) {
        /* The hole: the fence still says T1, the stale increment lands, and the new holder's
         * write (from its read of 100) overwrites it: 101, the +5 lost. */
        expect_status(&stale, 0, "control: the stale increment between read and write");
        CHECK_STR_EQ(stale.out, "105\n");
        CHECK_STR_EQ(get_str(data, buf, sizeof buf), "101");
        printf("  control: the stale +5 was accepted (105) and overwritten: balance 101, the "
               "update lost\n");
        fflush(stdout);
    } else {
        char want[200];

        expect_status(&stale, 11, "with --claim: the stale increment");
        snprintf(want, sizeof want, "rlk: fenced: token %lld is below the highest accepted "
                 "%lld\n", t1, t2);
        CHECK_STR_EQ(stale.err, want);
        CHECK_STR_EQ(get_str(data, buf, sizeof buf), "101");
        CHECK_INT_EQ(get_ll(fence), t2);
        printf("  --claim: the stale +5 refused (exit 11) from the acquisition on; balance "
               "101, nothing lost\n");
        fflush(stdout);
    }
    cli_result_free(&stale);
}

static void test_lost_update_control(void)
{
    lost_update(0);
}

static void test_lost_update_claimed(void)
{
    lost_update(1);
}

/* ---------------------------------------------------------------- election, two fences */

static void elect_two_fences(int claim)
{
    char name[32], f1[48], f2[48], d1[48], d2[48], cmd[2400], wait_go[400], tok[32], buf[64];
    char lead[300], go[300], what[64];
    long long t1, t2;
    cli_result r, stale;
    cli_proc p;

    snprintf(name, sizeof name, "lead%d", claim);
    snprintf(f1, sizeof f1, "{%s}:fence", name);
    snprintf(d1, sizeof d1, "{%s}:v", name);
    snprintf(f2, sizeof f2, "{%s-2}:fence", name);
    snprintf(d2, sizeof d2, "{%s-2}:v", name);
    snprintf(what, sizeof what, "%s", claim ? "with --claim" : "control, no --claim");
    /* The old leader writes both fences in its term T1. */
    snprintf(cmd, sizeof cmd, "echo \"$RLK_FENCE_TOKEN\"; "
             "\"$RLK_BIN\" fence --fence '%s' set '%s' old1 >/dev/null && "
             "\"$RLK_BIN\" fence --fence '%s' set '%s' old2 >/dev/null", f1, d1, f2, d2);
    r = RUN("elect", name, "--", "sh", "-c", cmd);
    expect_status(&r, 0, "first leader");
    t1 = atoll(r.out);
    cli_result_free(&r);
    REQUIRE(t1 > 0);
    /* The new leader writes F1 only (so far), then waits. */
    snprintf(lead, sizeof lead, "%s", cli_path(claim ? "lead1" : "lead0"));
    snprintf(go, sizeof go, "%s", cli_path(claim ? "ego1" : "ego0"));
    wait_for_file(wait_go, sizeof wait_go, go);
    snprintf(cmd, sizeof cmd, "\"$RLK_BIN\" fence --fence '%s' set '%s' new1 >/dev/null && "
             "echo \"$RLK_FENCE_TOKEN\" > '%s.tmp' && mv '%s.tmp' '%s' && %s", f1, d1, lead,
             lead, lead, wait_go);
    if (claim)
        REQUIRE(START(&p, "elect", name, "--claim", f1, "--claim", f2, "--", "sh", "-c", cmd)
                == 0);
    else
        REQUIRE(START(&p, "elect", name, "--", "sh", "-c", cmd) == 0);
    holder_token(lead, what, &t2);
    CHECKF(t2 > t1, "%s: the new term %lld after %lld", what, t2, t1);
    /* The old leader, resumed, writes F2 with its term while the new one leads. */
    snprintf(tok, sizeof tok, "%lld", t1);
    stale = RUN("fence", "--token", tok, "--fence", f2, "set", d2, "stale");
    holder_finish(&p, go, "new leader");
    if (!claim) {
        expect_status(&stale, 0, "control: the old leader's write to F2");
        CHECK_STR_EQ(get_str(d2, buf, sizeof buf), "stale");
        printf("  control: the old leader (term %lld) wrote F2 while term %lld led\n", t1, t2);
        fflush(stdout);
    } else {
        expect_status(&stale, 11, "with --claim: the old leader's write to F2");
        CHECK_STR_EQ(get_str(d2, buf, sizeof buf), "old2");
        CHECK_INT_EQ(get_ll(f1), t2);
        CHECK_INT_EQ(get_ll(f2), t2);
        printf("  --claim F1 F2: the old leader's write to F2 refused (exit 11)\n");
        fflush(stdout);
    }
    cli_result_free(&stale);
}

static void test_elect_control(void)
{
    elect_two_fences(0);
}

static void test_elect_claimed(void)
{
    elect_two_fences(1);
}

/* ---------------------------------------------------------------- refusals */

static void test_claim_refused(void)
{
    char buf[64];
    cli_result r;

    /* A fence another holder raised above any token this lock can issue. */
    REQUIRE(tk_command_ok(&server, "SET %s %s", "{hi}:fence", "9007199254740000") == 0);
    r = RUN("lock", "--fenced", "cr", "--claim", "{cr}:fence", "--claim", "{hi}:fence", "--",
            "sh", "-c", "echo ran");
    expect_status(&r, 11, "lock --claim of a fence with a newer token");
    CHECK_STR_EQ(r.out, "");
    expect_one_line_error(&r, "lock --claim refused");
    CHECK_STR_CONTAINS(r.err, "rlk: fenced: token ");
    CHECK_STR_CONTAINS(r.err, "below the highest accepted 9007199254740000 at --claim {hi}:fence");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_key_exists(&server, "cr"), 0);                  /* given back */
    CHECK(get_ll("{cr}:fence") > 0);                                /* the first was claimed */
    r = RUN("elect", "ce", "--claim", "{hi}:fence", "--", "sh", "-c", "echo ran");
    expect_status(&r, 11, "elect --claim of a fence with a newer term");
    CHECK_STR_EQ(r.out, "");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_key_exists(&server, "ce"), 0);                  /* resigned */
    CHECK_STR_EQ(get_str("{hi}:fence", buf, sizeof buf), "9007199254740000");
    r = RUN("lock", "cr", "--claim", "{cr}:fence", "--", "true");
    expect_status(&r, 2, "--claim without --fenced");
    CHECK_STR_CONTAINS(r.err, "--claim goes with --fenced");
    cli_result_free(&r);
    r = RUN("lock", "--fenced", "cr", "--claim", "", "--", "true");
    expect_status(&r, 2, "--claim ''");
    cli_result_free(&r);
    r = RUN("elect", "ce", "--observe", "--claim", "{ce}:fence");
    expect_status(&r, 2, "elect --observe --claim");
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- nested re-entry */

static void test_nested_hands_token_down(void)
{
    char want[400];
    long long outer = 0, inner = 0;
    cli_result r;
    json_value *j;

    r = RUN("lock", "--fenced", "nest", "--", "sh", "-c",
            "\"$RLK_BIN\" lock --fenced nest -- sh -c '"
            "echo inner $RLK_FENCE_TOKEN; \"$RLK_BIN\" fence set {nest}:a 1 >/dev/null && "
            "\"$RLK_BIN\" inspect nest --json > \"$T/nest.json\"' && "
            "echo outer $RLK_FENCE_TOKEN && \"$RLK_BIN\" fence set {nest}:b 2");
    /* Before the hand-down: the inner re-entry minted a newer token, its write raised the
     * fence, and the outer's write after it was refused (exit 11). */
    expect_status(&r, 0, "outer write after the inner's");
    CHECK(sscanf(r.out, "inner %lld\nouter %lld\n", &inner, &outer) == 2);
    CHECKF(inner == outer && outer > 0, "inner token %lld, outer %lld", inner, outer);
    snprintf(want, sizeof want, "inner %lld\nouter %lld\nOK\n", outer, outer);
    CHECK_STR_EQ(r.out, want);
    cli_result_free(&r);
    CHECK_INT_EQ(get_ll("redisson_lock_token:{nest}"), outer);     /* none minted */
    CHECK_INT_EQ(get_ll("{nest}:fence"), outer);
    CHECK_INT_EQ(tk_key_exists(&server, "nest"), 0);                /* both holds released */
    j = parse_file_json(cli_path("nest.json"));
    if (j) {
        const json_value *holders = json_get(j, "holders");
        const json_value *h0 = holders ? json_at(holders, 0) : NULL;

        CHECKF(h0 && json_get_number(h0, "count", -1) == 2,
               "the inner re-entry is not counted on the server");
        json_free(j);
    }
    /* A child whose parent's hold is gone (its environment names a hold the lock no longer
     * has: free now) acquires with a new, larger token, not the parent's. */
    r = RUN("lock", "--fenced", "nest2", "--", "sh", "-c", "echo $RLK_FENCE_TOKEN");
    expect_status(&r, 0, "nest2 first holder");
    outer = atoll(r.out);
    cli_result_free(&r);
    snprintf(want, sizeof want, "RLK_LOCK_NAME=nest2 RLK_LOCK_KIND=fenced "
             "RLK_LOCK_OWNER=0a1b-gone:7 RLK_FENCE_TOKEN=%lld \"$RLK_BIN\" lock --fenced nest2 "
             "-- sh -c 'echo $RLK_FENCE_TOKEN'", outer);
    r = RUN("lock", "--fenced", "other-nest", "--", "sh", "-c", want);
    expect_status(&r, 0, "a child of a hold that is gone");
    inner = atoll(r.out);
    CHECKF(inner > outer && outer > 0, "after the parent's hold was gone: child %lld, parent %lld",
           inner, outer);
    cli_result_free(&r);
}

int main(int argc, char **argv)
{
    int rc;

    if (argc == 3 && strcmp(argv[1], "--get") == 0)
        return get_main(argv[2]);
    if ((rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url)) >= 0)
        return rc;
    RUN_TEST(test_lost_update_control);
    RUN_TEST(test_lost_update_claimed);
    RUN_TEST(test_elect_control);
    RUN_TEST(test_elect_claimed);
    RUN_TEST(test_claim_refused);
    RUN_TEST(test_nested_hands_token_down);
    cli_main_end(&server, 1);
    return check_summary("it_cli_claim");
}
