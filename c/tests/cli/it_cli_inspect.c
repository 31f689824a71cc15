/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_inspect.c - `rlk inspect` (text and --json, parsed) on every kind
 * it knows - reentrant, read-write (mode, readers, writer), fair (queue and
 * deadlines), fenced (token), token, semaphore, permit-expirable semaphore
 * (permits, expiries), latch (--kind), a faster-MultiLock group (values,
 * holders, counts, expiries; control characters escaped), none, other - and `rlk unlock
 * --force`: frees a lock held by another process, wakes a waiting `rlk
 * lock` through the unlock message (a fair waiter on its own channel),
 * handles read-write, fair and fenced locks, refuses a key of another type,
 * and wants --force.
 *
 * Usage: it_cli_inspect PATH_TO_RLK
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "json_mini.h"

#include <rlk.h>

#include <signal.h>
#include <unistd.h>

static rlk_fx_server server;
static char url[128];

/* inspect's answer (docs/cli.md): exit 0 held, 1 free, 4 a key that is not a lock; the
 * JSON's "state" (absent for the last) says the same. */
static int inspect_answered(const cli_result *r, const char *what)
{
    return CHECKF(r->status == 0 || r->status == 1 || r->status == 4,
                  "%s: exit %d, expected 0 (held), 1 (free) or 4\n    stderr: %s", what,
                  r->status, r->err);
}

static void expect_held_matches(const cli_result *r, const json_value *j, const char *name)
{
    const char *state = json_get_string(j, "state");
    int want = !state ? 4 : strcmp(state, "held") == 0 ? 0 : strcmp(state, "free") == 0 ? 1 : -1;

    CHECKF(r->status == want, "inspect --json %s: exit %d, but \"state\" says %d: %s", name,
           r->status, want, r->out);
}

/* `rlk inspect NAME --json`, parsed; NULL (after a failed check) when it is
 * not one JSON object or rlk failed. */
static json_value *inspect_json(const char *name)
{
    cli_result r = RUN("inspect", name, "--json");
    const char *err = NULL;
    json_value *j = NULL;

    if (inspect_answered(&r, "inspect --json")) {
        j = json_parse(r.out, &err);
        CHECKF(j && j->type == JSON_OBJECT, "inspect --json %s: not a JSON object (%s): %s", name,
               err ? err : "", r.out);
        CHECKF(strchr(r.out, '\n') == r.out + strlen(r.out) - 1, "not one line: %s", r.out);
        if (j && j->type == JSON_OBJECT)
            expect_held_matches(&r, j, name);
    }
    cli_result_free(&r);
    if (j && j->type != JSON_OBJECT) {
        json_free(j);
        j = NULL;
    }
    return j;
}

static cli_result inspect_text(const char *name)
{
    cli_result r = RUN("inspect", name);

    inspect_answered(&r, "inspect");
    return r;
}

static void fx_do(const char *fmt, const char *a, const char *b)
{
    redisReply *r = rlk_fx_command(&server, fmt, a, b);

    CHECKF(r && r->type != REDIS_REPLY_ERROR, "setup command %s failed", fmt);
    if (r)
        freeReplyObject(r);
}

/* ---------------------------------------------------------------- inspect */

/* The held/free answer as the exit code, for each kind's states (planted with raw commands):
 * 0 held, 1 free, 4 a key that is not a lock; text and --json alike. */
static void test_inspect_exit_codes(void)
{
    static const struct {
        const char *name, *setup[2];
        int want;
    } cases[] = {
        {"xc:absent", {NULL, NULL}, 1},
        {"xc:held", {"HSET xc:held u:1 1", NULL}, 0},
        {"xc:fq", {"RPUSH redisson_lock_queue:{xc:fq} w:1", NULL}, 1},   /* queue, no holder */
        {"xc:tok", {"SET xc:tok abc", NULL}, 0},
        {"xc:sem0", {"SET xc:sem0 0", NULL}, 0},                          /* no permit left */
        {"xc:sem2", {"SET xc:sem2 2", NULL}, 1},
        {"xc:la", {"SET xc:la 2", "SET {xc:la}:rlk_kind latch"}, 0},      /* armed */
        {"xc:la0", {"SET xc:la0 0", "SET {xc:la0}:rlk_kind latch"}, 1},   /* open */
        {"xc:list", {"RPUSH xc:list a", NULL}, 4},
    };

    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        cli_result r;

        for (int i = 0; i < 2 && cases[k].setup[i]; i++) {
            redisReply *x = rlk_fx_command(&server, cases[k].setup[i]);

            CHECKF(x && x->type != REDIS_REPLY_ERROR, "setup %s", cases[k].setup[i]);
            if (x)
                freeReplyObject(x);
        }
        r = RUN("inspect", cases[k].name);
        CHECKF(r.status == cases[k].want, "inspect %s: exit %d, expected %d: %s%s",
               cases[k].name, r.status, cases[k].want, r.out, r.err);
        cli_result_free(&r);
        r = RUN("inspect", cases[k].name, "--json");
        CHECKF(r.status == cases[k].want, "inspect --json %s: exit %d, expected %d: %s%s",
               cases[k].name, r.status, cases[k].want, r.out, r.err);
        CHECK_STR_CONTAINS(r.out, cases[k].want == 0 ? ",\"state\":\"held\"}" : cases[k].want == 1
                           ? ",\"state\":\"free\"}" : "\"type\":\"list\"}");
        cli_result_free(&r);
    }
}

/* A name in its lock-delay: the state a holder of `rlk lock --lock-delay` leaves when it loses
 * the lock (its hash expired, the delay key {NAME}:rlk_delay living lease + delay longer),
 * planted. rlk lock --lock-delay, its --verbose report and rlk inspect say so and how long is
 * left, instead of "held by another" / "free now" / "no lock". */
static void test_lock_delay(void)
{
    json_value *j;
    cli_result r;

    fx_do("SET %s 20000 PX 20000", "{ld}:rlk_delay", NULL);
    r = RUN("lock", "--lock-delay", "20000", "ld", "-n", "--", "true");
    expect_status(&r, 1, "lock -n in the delay");
    expect_one_line_error(&r, "lock -n in the delay");
    CHECK_STR_CONTAINS(r.err, "rlk: lock ld: free, but in its lock-delay (a holder lost it "
                       "without releasing it): ");
    CHECK_STR_CONTAINS(r.err, " s left\n");
    cli_result_free(&r);
    r = RUN("lock", "--lock-delay", "20000", "ld", "-w", "0.3", "--", "true");
    expect_status(&r, 1, "lock -w 0.3 in the delay");
    CHECK_STR_CONTAINS(r.err, "rlk: lock ld: still in its lock-delay after 0.3 s (a holder lost "
                       "it without releasing it): ");
    cli_result_free(&r);
    r = RUN("lock", "--lock-delay", "20000", "ld", "-w", "2.5", "--verbose", "--", "true");
    expect_status(&r, 1, "lock --verbose in the delay");
    CHECK_STR_CONTAINS(r.err, "rlk: lock ld: waiting for 1 s; free, but in its lock-delay (a "
                       "holder lost it without releasing it): ");
    CHECK_STR_CONTAINS(r.err, "ms left ({ld}:rlk_delay)");
    cli_result_free(&r);
    r = RUN("inspect", "ld");
    expect_status(&r, 1, "inspect in the delay (free: no holder)");
    CHECK_STR_PREFIX(r.out, "ld: no lock, but in its lock-delay: a holder lost it without "
                     "releasing it; rlk lock --lock-delay takes it in ");
    CHECK_STR_CONTAINS(r.out, "\ndelay:   {ld}:rlk_delay  PTTL ");
    cli_result_free(&r);
    j = inspect_json("ld");
    if (j) {
        const json_value *d = json_get(j, "lock_delay");
        double ttl = json_get_number(d, "pttl_ms", -9);

        CHECK_STR_EQ(json_get_string(j, "kind"), "none");
        CHECK_STR_EQ(json_get_string(d, "key"), "{ld}:rlk_delay");
        CHECKF(ttl > 0 && ttl <= 20000, "the delay's PTTL: %g", ttl);
        json_free(j);
    }
    fx_do("DEL %s", "{ld}:rlk_delay", NULL);
}

static void test_inspect_none(void)
{
    json_value *j = inspect_json("absent");
    cli_result r = inspect_text("absent");

    REQUIRE(j != NULL);
    CHECK_STR_EQ(json_get_string(j, "name"), "absent");
    CHECK_STR_EQ(json_get_string(j, "kind"), "none");
    CHECK(json_get(j, "holders") == NULL);
    CHECK_STR_EQ(r.out, "absent: no lock\n");
    json_free(j);
    cli_result_free(&r);
}

static void test_inspect_reentrant(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_lock *l = c ? rlk_lock_new(c, "re") : NULL;
    char owner[200], line[300];
    const json_value *h;
    json_value *j;
    cli_result r;

    REQUIRE(l != NULL);
    REQUIRE_INT_EQ(rlk_lock_try_lock(l, 0, 20000), RLK_OK);
    REQUIRE_INT_EQ(rlk_lock_try_lock(l, 0, 20000), RLK_OK);     /* re-entered: count 2 */
    REQUIRE_INT_EQ(rlk_lock_owner(l, owner, sizeof owner), RLK_OK);
    j = inspect_json("re");
    if (j) {
        double ttl = json_get_number(j, "ttl_ms", -9);

        h = json_at(json_get(j, "holders"), 0);
        CHECK_STR_EQ(json_get_string(j, "kind"), "reentrant");
        CHECK_STR_EQ(json_get_string(h, "owner"), owner);
        CHECK(json_get_number(h, "count", 0) == 2);
        CHECK(json_at(json_get(j, "holders"), 1) == NULL);
        CHECKF(ttl > 0 && ttl <= 20000, "ttl_ms %g not in (0, 20000]", ttl);
    }
    json_free(j);
    r = inspect_text("re");
    snprintf(line, sizeof line, "holder:  %s  count 2\n", owner);
    CHECK_STR_PREFIX(r.out, "re: reentrant lock\nttl:     ");
    CHECK_STR_CONTAINS(r.out, line);
    cli_result_free(&r);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
    rlk_lock_free(l);
    rlk_free(c);
}

static void test_inspect_rwlock(void)
{
    json_value *j;
    const json_value *hs;

    fx_do("HSET rw mode read %s 2", "r1:1", NULL);
    fx_do("HSET rw %s 1", "r2:7", NULL);
    fx_do("PEXPIRE rw 10000", NULL, NULL);
    j = inspect_json("rw");
    REQUIRE(j != NULL);
    hs = json_get(j, "holders");
    CHECK_STR_EQ(json_get_string(j, "kind"), "rwlock");
    CHECK_STR_EQ(json_get_string(j, "mode"), "read");
    CHECK(json_at(hs, 0) && json_at(hs, 1) && !json_at(hs, 2));
    for (size_t k = 0; k < 2; k++) {
        const json_value *h = json_at(hs, k);
        const char *o = json_get_string(h, "owner");

        CHECK_STR_EQ(json_get_string(h, "mode"), "read");
        CHECKF(o && ((strcmp(o, "r1:1") == 0 && json_get_number(h, "count", 0) == 2) ||
                     (strcmp(o, "r2:7") == 0 && json_get_number(h, "count", 0) == 1)),
               "unexpected holder %s", o ? o : "(null)");
    }
    CHECKF(json_get_number(j, "ttl_ms", -9) > 0, "ttl_ms %g", json_get_number(j, "ttl_ms", -9));
    json_free(j);

    fx_do("HSET rw2 mode write %s 1", "w:3:write", NULL);
    j = inspect_json("rw2");
    REQUIRE(j != NULL);
    hs = json_get(j, "holders");
    CHECK_STR_EQ(json_get_string(j, "mode"), "write");
    CHECK_STR_EQ(json_get_string(json_at(hs, 0), "owner"), "w:3");
    CHECK_STR_EQ(json_get_string(json_at(hs, 0), "mode"), "write");
    CHECK(json_get_number(j, "ttl_ms", 0) == -1);
    json_free(j);
}

static void test_inspect_token(void)
{
    json_value *j;
    cli_result r;

    fx_do("SET tok %s PX 10000", "tok-3f9a", NULL);
    j = inspect_json("tok");
    REQUIRE(j != NULL);
    CHECK_STR_EQ(json_get_string(j, "kind"), "token");
    CHECK_STR_EQ(json_get_string(j, "token"), "tok-3f9a");
    CHECKF(json_get_number(j, "ttl_ms", -9) > 0 && json_get_number(j, "ttl_ms", -9) <= 10000,
           "ttl_ms %g", json_get_number(j, "ttl_ms", -9));
    json_free(j);
    r = inspect_text("tok");
    CHECK_STR_PREFIX(r.out, "tok: token lock\ntoken:   tok-3f9a\nttl:     ");
    cli_result_free(&r);
}

static void test_inspect_other_and_odd(void)
{
    json_value *j;
    cli_result r;

    fx_do("RPUSH %s %s", "alist", "x");
    j = inspect_json("alist");
    REQUIRE(j != NULL);
    CHECK_STR_EQ(json_get_string(j, "kind"), "other");
    CHECK_STR_EQ(json_get_string(j, "type"), "list");
    json_free(j);
    r = inspect_text("alist");
    CHECK_STR_EQ(r.out, "alist: not a lock rlk knows: the key holds a list\n");
    cli_result_free(&r);

    fx_do("HSET notlock %s %s", "field", "not-a-count");
    j = inspect_json("notlock");
    CHECK_STR_EQ(json_get_string(j, "kind"), "other");
    CHECK_STR_EQ(json_get_string(j, "type"), "hash");
    json_free(j);

    /* A holder id that needs escaping, a lock without expiry. */
    fx_do("HSET %s %s 1", "odd", "a\"b\\c:1");
    j = inspect_json("odd");
    CHECK_STR_EQ(json_get_string(json_at(json_get(j, "holders"), 0), "owner"), "a\"b\\c:1");
    CHECK(json_get_number(j, "ttl_ms", 0) == -1);
    json_free(j);
    r = inspect_text("odd");
    CHECK_STR_CONTAINS(r.out, "ttl:     none (no expiry)\n");
    cli_result_free(&r);
}

/* `rlk inspect NAME --kind KIND --json`, parsed (NULL after a failed check). */
static json_value *inspect_kind_json(const char *name, const char *kind)
{
    cli_result r = RUN("inspect", name, "--kind", kind, "--json");
    const char *err = NULL;
    json_value *j = NULL;

    if (inspect_answered(&r, "inspect --kind --json")) {
        j = json_parse(r.out, &err);
        CHECKF(j && j->type == JSON_OBJECT, "inspect --kind %s %s: not a JSON object (%s): %s",
               kind, name, err ? err : "", r.out);
        if (j && j->type == JSON_OBJECT)
            expect_held_matches(&r, j, name);
    }
    cli_result_free(&r);
    return j;
}

/* A writer that also reads: mode write, the writer, one reader (itself). */
static void test_inspect_rwlock_sides(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_rwlock *rw = c ? rlk_rwlock_new(c, "sides") : NULL;
    char owner[200];
    const json_value *w;
    json_value *j;
    cli_result r;

    REQUIRE(rw != NULL);
    REQUIRE_INT_EQ(rlk_rwlock_try_lock(rw, RLK_RW_WRITE, 0, 20000), RLK_OK);
    REQUIRE_INT_EQ(rlk_rwlock_try_lock(rw, RLK_RW_READ, 0, 20000), RLK_OK);
    REQUIRE_INT_EQ(rlk_rwlock_owner(rw, owner, sizeof owner), RLK_OK);
    j = inspect_json("sides");
    REQUIRE(j != NULL);
    w = json_get(j, "writer");
    CHECK_STR_EQ(json_get_string(j, "kind"), "rwlock");
    CHECK_STR_EQ(json_get_string(j, "mode"), "write");
    CHECK_STR_EQ(json_get_string(w, "owner"), owner);
    CHECK(json_get_number(w, "count", 0) == 1);
    CHECK_STR_EQ(json_get_string(json_at(json_get(j, "readers"), 0), "owner"), owner);
    CHECK(json_at(json_get(j, "readers"), 1) == NULL);
    json_free(j);
    r = inspect_text("sides");
    CHECK_STR_CONTAINS(r.out, "mode:    write\n");
    CHECK_STR_CONTAINS(r.out, "readers: 1\n");
    CHECK_STR_CONTAINS(r.out, "writer:  ");
    cli_result_free(&r);
    CHECK_INT_EQ(rlk_rwlock_unlock(rw, RLK_RW_READ), RLK_OK);
    CHECK_INT_EQ(rlk_rwlock_unlock(rw, RLK_RW_WRITE), RLK_OK);

    fx_do("HSET rwr mode read %s 1", "x:1", NULL);
    fx_do("HSET rwr %s 3", "y:2", NULL);
    j = inspect_json("rwr");
    REQUIRE(j != NULL);
    CHECK(json_get(j, "writer") && json_get(j, "writer")->type == JSON_NULL);
    CHECK(json_at(json_get(j, "readers"), 1) != NULL && json_at(json_get(j, "readers"), 2) == NULL);
    json_free(j);
    rlk_rwlock_free(rw);
    rlk_free(c);
}

/* A holder (the API) and a waiting `rlk lock --fair`: the queue with its
 * deadline; a force unlock hands the lock to the waiter at once. */
static void test_inspect_fair(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_fairlock *f = c ? rlk_fairlock_new(c, "fq") : NULL;
    char owner[200];
    const json_value *q;
    json_value *j;
    cli_proc p;
    cli_result r;
    long long t0;

    REQUIRE(f != NULL);
    REQUIRE_INT_EQ(rlk_fairlock_try_lock(f, 0, 30000), RLK_OK);
    REQUIRE_INT_EQ(rlk_fairlock_owner(f, owner, sizeof owner), RLK_OK);
    REQUIRE(START(&p, "lock", "--fair", "fq", "-w", "20", "--", "true") == 0);
    CHECKF(tk_wait_int_at_least(&server, 1, 10000, "LLEN %s", "redisson_lock_queue:{fq}") == 0,
           "the waiter never queued");
    j = inspect_json("fq");
    if (j) {
        q = json_at(json_get(j, "queue"), 0);
        CHECK_STR_EQ(json_get_string(j, "kind"), "fair");
        CHECK_STR_EQ(json_get_string(json_at(json_get(j, "holders"), 0), "owner"), owner);
        CHECKF(json_get_string(q, "owner") && strcmp(json_get_string(q, "owner"), owner) != 0,
               "no waiter in the queue");
        CHECKF(json_get_number(q, "deadline_in_ms", -1) > 0 &&
               json_get_number(q, "deadline_ms", -1) > json_get_number(q, "deadline_in_ms", -1),
               "deadline_in_ms %g, deadline_ms %g", json_get_number(q, "deadline_in_ms", -1),
               json_get_number(q, "deadline_ms", -1));
        CHECK(json_at(json_get(j, "queue"), 1) == NULL);
    }
    json_free(j);
    r = inspect_text("fq");
    CHECK_STR_PREFIX(r.out, "fq: fair lock\n");
    CHECK_STR_CONTAINS(r.out, "queue:   1. ");
    cli_result_free(&r);
    t0 = rlk_fx_now_ms();
    r = RUN("unlock", "--force", "fq");
    expect_status(&r, 0, "unlock --force of a fair lock");
    CHECK_STR_EQ(r.out, "fq: fair lock removed (force unlock)\n");
    cli_result_free(&r);
    r = cli_collect(&p, cli_wait(&p, 20000), rlk_fx_now_ms() - t0);
    expect_status(&r, 0, "the fair waiter after the force unlock");
    CHECKF(r.ms < 5000, "the waiter took %lld ms after the force unlock", r.ms);
    cli_result_free(&r);
    rlk_fairlock_free(f);
    rlk_free(c);
}

/* A fair lock held with nobody waiting has no queue keys, so its data is a reentrant lock's:
 * rlk lock --fair marks it ({NAME}:rlk_kind = fair), inspect reads the marker, and the holder's
 * release removes it. --fair --non-reentrant the same. */
static void test_inspect_idle_fair(void)
{
    static const char *const modes[][2] = {{"--fair", "fi-idle"}, {"--non-reentrant", "fi-nr"}};

    for (size_t k = 0; k < 2; k++) {
        const char *n = modes[k][1];
        char script[512], mark[64], *text, *json;
        cli_result r;

        snprintf(script, sizeof script,
                 "\"$RLK_BIN\" inspect %s > \"$T/fi.txt\"; "
                 "\"$RLK_BIN\" inspect %s --json > \"$T/fi.json\"", n, n);
        r = RUN("lock", "--fair", modes[k][0], n, "--", "sh", "-c", script);
        expect_status(&r, 0, "rlk lock --fair with inspect inside");
        cli_result_free(&r);
        text = cli_slurp(cli_path("fi.txt"));
        json = cli_slurp(cli_path("fi.json"));
        CHECKF(text && strncmp(text, n, strlen(n)) == 0 && strstr(text, ": fair lock\n"),
               "inspect of the held fair lock %s without waiters: %s", n, text ? text : "(none)");
        CHECKF(json && strstr(json, "\"kind\":\"fair\""), "inspect --json of %s: %s", n,
               json ? json : "(none)");
        free(text);
        free(json);
        snprintf(mark, sizeof mark, "{%s}:rlk_kind", n);
        CHECKF(tk_int(&server, "EXISTS %s", mark) == 0, "%s left after the release", mark);
        CHECKF(tk_int(&server, "EXISTS %s", n) == 0, "%s left after the release", n);
    }
}

/* The fair lock's kind marker lives the hold's lease: rlk lock --fair sets it with that TTL
 * and renews it every third of it while it holds (so it is there through more than
 * MARK_KEPT_LEASES leases), and once that rlk is killed with -9 (no release) it goes within
 * a lease of the kill, as the lock does: within MARK_LEASE_MS + MARK_SLACK_MS (room for a
 * loaded machine). Before, the marker had no TTL and stayed for good. */
#define MARK_LEASE_MS 1500
#define MARK_SLACK_MS 3000
#define MARK_KEPT_LEASES 3

static void test_fair_mark_killed_holder(void)
{
    const char *n = "fk-mark", *mark = "{fk-mark}:rlk_kind";
    long long t0, t_kill, pttl, gone_ms;
    int kept = 1;
    char lease[16];
    cli_proc p;
    cli_result r;

    snprintf(lease, sizeof lease, "%d", MARK_LEASE_MS);
    REQUIRE(START(&p, "lock", "--fair", "--watchdog-lease", lease, n, "--", "sh", "-c",
                  "touch \"$T/fk.held\"; exec sleep 30") == 0);
    REQUIRE(cli_wait_file(cli_path("fk.held"), 10000) == 0);
    pttl = tk_int(&server, "PTTL %s", mark);
    CHECKF(pttl > 0 && pttl <= MARK_LEASE_MS, "%s while held: PTTL %lld, expected 1..%d", mark,
           pttl, MARK_LEASE_MS);
    /* Held through several leases: renewed (the time under test, polled). */
    t0 = rlk_fx_now_ms();
    while (kept && rlk_fx_now_ms() - t0 < MARK_KEPT_LEASES * MARK_LEASE_MS) {
        kept = tk_int(&server, "EXISTS %s", mark) == 1 && tk_int(&server, "EXISTS %s", n) == 1;
        rlk_fx_sleep_ms(20);
    }
    CHECKF(kept, "%s (or %s) gone %lld ms into the hold (lease %d ms): not renewed", mark, n,
           rlk_fx_now_ms() - t0, MARK_LEASE_MS);
    t_kill = rlk_fx_now_ms();
    CHECK(kill(p.pid, SIGKILL) == 0);
    r = cli_collect(&p, cli_wait(&p, 5000), 0);
    cli_result_free(&r);
    gone_ms = tk_key_gone_within(&server, mark, MARK_LEASE_MS + MARK_SLACK_MS)
                  ? rlk_fx_now_ms() - t_kill
                  : -1;
    tk_say("  kill -9 of rlk lock --fair (lease %d ms): its kind marker gone %lld ms later "
           "(-1: still there after %d ms)", MARK_LEASE_MS, gone_ms,
           MARK_LEASE_MS + MARK_SLACK_MS);
    CHECKF(gone_ms >= 0, "%s still there %d ms after its holder was killed with -9 (PTTL %lld)",
           mark, MARK_LEASE_MS + MARK_SLACK_MS, tk_int(&server, "PTTL %s", mark));
    CHECKF(tk_key_gone_within(&server, n, MARK_LEASE_MS + MARK_SLACK_MS),
           "%s still held after its holder was killed with -9", n);
    (void)tk_int(&server, "DEL %s", mark);
}

static void test_inspect_fenced(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_fenced *f = c ? rlk_fenced_new(c, "fe") : NULL;
    long long token = 0;
    json_value *j;
    cli_result r;

    REQUIRE(f != NULL);
    REQUIRE_INT_EQ(rlk_fenced_try_lock(f, 0, 20000, &token), RLK_OK);
    j = inspect_json("fe");
    if (j) {
        CHECK_STR_EQ(json_get_string(j, "kind"), "fenced");
        CHECK(json_get_number(j, "fence_token", -1) == (double)token);
        CHECK(json_get_number(json_at(json_get(j, "holders"), 0), "count", 0) == 1);
    }
    json_free(j);
    r = RUN("unlock", "--force", "fe");
    expect_status(&r, 0, "unlock --force of a fenced lock");
    CHECK_STR_EQ(r.out, "fe: fenced lock removed (force unlock)\n");
    cli_result_free(&r);
    j = inspect_json("fe");    /* free, the token key stays */
    if (j) {
        CHECK_STR_EQ(json_get_string(j, "kind"), "fenced");
        CHECK(json_get_number(j, "fence_token", -1) == (double)token);
        CHECK(json_get(j, "holders") && json_at(json_get(j, "holders"), 0) == NULL);
    }
    json_free(j);
    rlk_fenced_free(f);
    rlk_free(c);
}

static void test_inspect_semaphores(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_semaphore *s = c ? rlk_semaphore_new(c, "sem") : NULL;
    rlk_psemaphore *ps = c ? rlk_psemaphore_new(c, "psem") : NULL;
    char id[RLK_PERMIT_ID_SIZE];
    const json_value *p;
    json_value *j;
    cli_result r;

    REQUIRE(s && ps);
    REQUIRE_INT_EQ(rlk_semaphore_try_set_permits(s, 5, NULL), RLK_OK);
    j = inspect_json("sem");
    if (j) {
        CHECK_STR_EQ(json_get_string(j, "kind"), "semaphore");
        CHECK(json_get_number(j, "available", -1) == 5);
    }
    json_free(j);
    r = inspect_text("sem");
    CHECK_STR_PREFIX(r.out, "sem: semaphore\navailable: 5\n");
    CHECK_STR_CONTAINS(r.out, "--kind latch");
    cli_result_free(&r);

    REQUIRE_INT_EQ(rlk_psemaphore_try_set_permits(ps, 3, NULL), RLK_OK);
    REQUIRE_INT_EQ(rlk_psemaphore_try_acquire(ps, 0, 20000, id), RLK_OK);
    j = inspect_json("psem");
    if (j) {
        p = json_at(json_get(j, "permits"), 0);
        CHECK_STR_EQ(json_get_string(j, "kind"), "psemaphore");
        CHECK(json_get_number(j, "available", -1) == 2);
        CHECK(json_get_number(j, "held", -1) == 1);
        CHECK_STR_EQ(json_get_string(p, "id"), id);
        CHECKF(json_get_number(p, "ttl_ms", -9) > 0 && json_get_number(p, "ttl_ms", -9) <= 20000,
               "ttl_ms %g", json_get_number(p, "ttl_ms", -9));
    }
    json_free(j);
    r = inspect_text("psem");
    CHECK_STR_PREFIX(r.out, "psem: permit-expirable semaphore\navailable: 2\nheld:      1\n");
    cli_result_free(&r);
    CHECK_INT_EQ(rlk_psemaphore_release(ps, id), RLK_OK);
    rlk_semaphore_free(s);
    rlk_psemaphore_free(ps);
    rlk_free(c);
}

static void test_inspect_latch(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_latch *l = c ? rlk_latch_new(c, "lat") : NULL;
    json_value *j;
    cli_result r;

    REQUIRE(l != NULL);
    REQUIRE_INT_EQ(rlk_latch_try_set_count(l, 4, NULL), RLK_OK);
    j = inspect_kind_json("lat", "latch");
    if (j) {
        CHECK_STR_EQ(json_get_string(j, "kind"), "latch");
        CHECK(json_get_number(j, "count", -1) == 4);
    }
    json_free(j);
    r = RUN("inspect", "lat", "--kind=latch");
    expect_status(&r, 0, "inspect --kind=latch");
    CHECK_STR_EQ(r.out, "lat: count-down latch\ncount:   4\n");
    cli_result_free(&r);
    j = inspect_kind_json("absent-latch", "latch");
    if (j)
        CHECK(json_get_number(j, "count", -1) == 0);
    json_free(j);
    r = RUN("inspect", "absent-latch", "--kind", "latch");
    CHECK_STR_EQ(r.out, "absent-latch: count-down latch\ncount:   0 (open)\n");
    cli_result_free(&r);

    /* A forced kind that does not fit the key; an unknown kind. */
    fx_do("HSET %s %s 1", "hl", "o:1");
    r = RUN("inspect", "hl", "--kind", "latch");
    expect_status(&r, 4, "inspect --kind latch of a hash");
    CHECK_STR_EQ(r.err, "rlk: inspect hl: not a count-down latch (the key holds a hash)\n");
    cli_result_free(&r);
    r = RUN("inspect", "hl", "--kind", "mutex");
    expect_status(&r, 2, "inspect --kind mutex");
    expect_one_line_error(&r, "inspect --kind mutex");
    CHECK_STR_CONTAINS(r.err, "unknown kind 'mutex'");
    cli_result_free(&r);
    rlk_latch_free(l);
    rlk_free(c);
}

/* ---------------------------------------------------------------- unlock --force */

/* A group taken with rlk_fastmulti: each value, its holder, count and expiry,
 * the group's TTL; a lapsed holder's value shown as free to take; values and
 * holders with control characters escaped in the text, exact in the JSON. */
static void test_inspect_fastmulti(void)
{
    static const char *values[] = {"mary", "jack"};
    rlk_client *c = rlk_connect_url(url);
    rlk_fastmulti *m = c ? rlk_fastmulti_new(c, "grp", values, 2) : NULL;
    char owner[200], line[400];
    const json_value *vs, *e;
    json_value *j;
    cli_result r;

    REQUIRE(m != NULL);
    REQUIRE_INT_EQ(rlk_fastmulti_try_lock(m, 0, 20000), RLK_OK);
    REQUIRE_INT_EQ(rlk_fastmulti_try_lock(m, 0, 20000), RLK_OK);    /* re-entered: count 2 */
    REQUIRE_INT_EQ(rlk_fastmulti_owner(m, owner, sizeof owner), RLK_OK);
    j = inspect_json("grp");
    REQUIRE(j != NULL);
    CHECK_STR_EQ(json_get_string(j, "kind"), "fastmulti");
    CHECKF(json_get_number(j, "ttl_ms", -9) > 0 && json_get_number(j, "ttl_ms", -9) <= 20000,
           "ttl_ms %g", json_get_number(j, "ttl_ms", -9));
    vs = json_get(j, "values");
    CHECK(json_at(vs, 0) && json_at(vs, 1) && !json_at(vs, 2));
    for (size_t k = 0; k < 2; k++) {
        e = json_at(vs, k);
        CHECK_STR_EQ(json_get_string(e, "value"), k == 0 ? "jack" : "mary");  /* sorted */
        CHECK_STR_EQ(json_get_string(e, "holder"), owner);
        CHECK(json_get_number(e, "count", 0) == 2);
        CHECKF(json_get_number(e, "expire_in_ms", -9) > 0 &&
               json_get_number(e, "expire_in_ms", -9) <= 20000, "expire_in_ms %g",
               json_get_number(e, "expire_in_ms", -9));
        CHECK(json_get(e, "held") && json_get(e, "held")->type == JSON_BOOL &&
              json_get(e, "held")->boolean);
    }
    json_free(j);
    r = inspect_text("grp");
    CHECK_STR_PREFIX(r.out, "grp: faster MultiLock group\nttl:     ");
    snprintf(line, sizeof line, "value:   jack  holder %s  count 2  expires in ", owner);
    CHECK_STR_CONTAINS(r.out, line);
    snprintf(line, sizeof line, "value:   mary  holder %s  count 2  expires in ", owner);
    CHECK_STR_CONTAINS(r.out, line);
    cli_result_free(&r);
    /* Forced: the same group; a reentrant lock's hash is not one. */
    j = inspect_kind_json("grp", "fastmulti");
    CHECK_STR_EQ(json_get_string(j, "kind"), "fastmulti");
    CHECK_STR_EQ(json_get_string(json_at(json_get(j, "values"), 1), "value"), "mary");
    json_free(j);
    fx_do("HSET fm_re %s 1", "u:1", NULL);
    r = RUN("inspect", "fm_re", "--kind", "fastmulti");
    expect_status(&r, 4, "inspect a lock hash --kind fastmulti");
    cli_result_free(&r);
    CHECK_INT_EQ(rlk_fastmulti_unlock(m), RLK_OK);
    CHECK_INT_EQ(rlk_fastmulti_unlock(m), RLK_OK);
    j = inspect_json("grp");
    CHECK_STR_EQ(json_get_string(j, "kind"), "none");
    json_free(j);
    rlk_fastmulti_free(m);
    rlk_free(c);

    /* Written by hand: a lapsed holder (expire_time in the past), and a value and a holder
     * with control characters. */
    fx_do("HSET fm2 old %s old:h:1:expire_time 1000", "h:1", NULL);
    fx_do("HSET fm2 old:h:1:lock_count 1 %s h\033]0;x\007:2", "v\033[2J", NULL);
    fx_do("HSET fm2 %s 99999999999999 %s 3", "v\033[2J:h\033]0;x\007:2:expire_time",
          "v\033[2J:h\033]0;x\007:2:lock_count");
    r = inspect_text("fm2");
    CHECK_STR_CONTAINS(r.out, "value:   old  holder h:1  count 1  lapsed ");
    CHECK_STR_CONTAINS(r.out, "(free to take)\n");
    CHECK_STR_CONTAINS(r.out, "ttl:     none (no expiry)\n");
    CHECKF(strpbrk(r.out, "\033\007") == NULL, "a raw control character reached the output:\n%s",
           r.out);
    CHECK_STR_CONTAINS(r.out, "  count 3  expires in ");
    cli_result_free(&r);
    j = inspect_json("fm2");
    REQUIRE(j != NULL);
    e = json_at(json_get(j, "values"), 1);
    CHECK_STR_EQ(json_get_string(e, "value"), "v\033[2J");
    CHECK_STR_EQ(json_get_string(e, "holder"), "h\033]0;x\007:2");
    CHECK(json_get_number(e, "count", 0) == 3);
    e = json_at(json_get(j, "values"), 0);
    CHECK(json_get(e, "held") && json_get(e, "held")->type == JSON_BOOL &&
          !json_get(e, "held")->boolean);
    CHECK(json_get_number(e, "expire_ms", 0) == 1000);
    json_free(j);
}

static void test_unlock_force(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_lock *l = c ? rlk_lock_new(c, "held") : NULL;
    int held = -1;
    cli_result r;

    REQUIRE(l != NULL);
    REQUIRE_INT_EQ(rlk_lock_try_lock(l, 0, 20000), RLK_OK);
    r = RUN("unlock", "--force", "held");
    expect_status(&r, 0, "unlock --force of a held lock");
    CHECK_STR_EQ(r.out, "held: lock removed (force unlock)\n");
    CHECK_STR_EQ(r.err, "");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "held"), 0);
    CHECK_INT_EQ(rlk_lock_is_held_by_me(l, &held), RLK_OK);
    CHECK_INT_EQ(held, 0);

    r = RUN("unlock", "--force", "held");
    expect_status(&r, 0, "unlock --force without a lock");
    CHECK_STR_EQ(r.out, "held: no lock to remove\n");
    cli_result_free(&r);
    rlk_lock_free(l);
    rlk_free(c);
}

/* The waiter would otherwise sleep for the holder's 30 s TTL: only the
 * unlock message wakes it in time. */
static void test_unlock_force_wakes_waiter(void)
{
    rlk_client *c = rlk_connect_url(url);
    rlk_lock *l = c ? rlk_lock_new(c, "wake") : NULL;
    char script[400];
    cli_proc p;
    long long t0;
    int st;

    REQUIRE(l != NULL);
    REQUIRE_INT_EQ(rlk_lock_try_lock(l, 0, 30000), RLK_OK);
    snprintf(script, sizeof script, "echo ran > %s", cli_path("wake.ran"));
    REQUIRE(START(&p, "lock", "wake", "-w", "25", "--", "sh", "-c", script) == 0);
    CHECKF(fx_wait_waiter(&server, "wake", 10000) == 0, "rlk lock never waited");
    t0 = rlk_fx_now_ms();
    cli_result u = RUN("unlock", "--force", "wake");
    expect_status(&u, 0, "unlock --force with a waiter");
    cli_result_free(&u);
    st = cli_wait(&p, 20000);
    cli_result r = cli_collect(&p, st, rlk_fx_now_ms() - t0);
    expect_status(&r, 0, "the waiter after the force unlock");
    CHECKF(r.ms < 5000, "the waiter took %lld ms after the force unlock", r.ms);
    CHECK(access(cli_path("wake.ran"), F_OK) == 0);
    cli_result_free(&r);
    rlk_lock_free(l);
    rlk_free(c);
}

static void test_unlock_force_rwlock(void)
{
    cli_result r;

    fx_do("HSET rwx mode read %s 1", "o1:1", NULL);
    fx_do("SET %s 1 PX 20000", "{rwx}:o1:1:rwlock_timeout:1", NULL);
    fx_do("PEXPIRE rwx 20000", NULL, NULL);
    r = RUN("unlock", "--force", "rwx");
    expect_status(&r, 0, "unlock --force of a read-write lock");
    CHECK_STR_EQ(r.out, "rwx: read-write lock removed (force unlock)\n");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "rwx"), 0);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "{rwx}:o1:1:rwlock_timeout:1"), 0);
}

static void test_unlock_wrong_type(void)
{
    cli_result r;

    fx_do("SET %s %s", "plain", "v");
    r = RUN("unlock", "--force", "plain");
    expect_status(&r, 4, "unlock --force of a string");
    expect_one_line_error(&r, "unlock --force of a string");
    CHECK_STR_CONTAINS(r.err, "WRONGTYPE");
    cli_result_free(&r);
    CHECK_INT_EQ(tk_int(&server, "EXISTS %s", "plain"), 1);

    r = RUN("unlock", "plain");
    expect_status(&r, 2, "unlock without --force");
    expect_one_line_error(&r, "unlock without --force");
    CHECK_STR_CONTAINS(r.err, "--force");
    cli_result_free(&r);
}

int main(int argc, char **argv)
{
    int rc = cli_main_begin(argc, argv, &server, 1, url, sizeof url);

    if (rc >= 0)
        return rc;
    RUN_TEST(test_inspect_none);
    RUN_TEST(test_inspect_exit_codes);
    RUN_TEST(test_lock_delay);
    RUN_TEST(test_inspect_reentrant);
    RUN_TEST(test_inspect_rwlock);
    RUN_TEST(test_inspect_token);
    RUN_TEST(test_inspect_other_and_odd);
    RUN_TEST(test_inspect_rwlock_sides);
    RUN_TEST(test_inspect_fair);
    RUN_TEST(test_inspect_idle_fair);
    RUN_TEST(test_fair_mark_killed_holder);
    RUN_TEST(test_inspect_fenced);
    RUN_TEST(test_inspect_semaphores);
    RUN_TEST(test_inspect_latch);
    RUN_TEST(test_inspect_fastmulti);
    RUN_TEST(test_unlock_force);
    RUN_TEST(test_unlock_force_wakes_waiter);
    RUN_TEST(test_unlock_force_rwlock);
    RUN_TEST(test_unlock_wrong_type);
    cli_main_end(&server, 1);
    return check_summary("it_cli_inspect");
}
