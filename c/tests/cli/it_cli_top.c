/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * it_cli_top.c - `rlk top` against a real redis-server:
 *   - every kind's layout, written as Redisson writes it (raw commands):
 *     the reentrant, read-write, fenced and fair locks (the fair queue with
 *     its deadlines), a semaphore, a permit-expirable semaphore with a held
 *     permit, a latch (rlk's mark); an application's hash and string are
 *     not shown; --pattern; usage errors;
 *   - faster-MultiLock groups (fastmulti/acquire's layout): kind fastmulti,
 *     every value with its holder, count and whether it is held (escaped as
 *     JSON), the holders with their number of values, a group larger than
 *     top's first sample read whole, a hash of another shape not shown;
 *   - contention: 16 `rlk lock` processes on two names (8 each); at several
 *     sample points (after the start, after stopping some of them) the
 *     state is frozen (holders sleep, waiters wait) and `rlk top --json`
 *     must say what the server says: holder (HGETALL), rlk's queue (LLEN),
 *     subscribers (PUBSUB NUMSUB). node-redisson processes are not added
 *     here (c/tests/interop's harness runs Redisson's clients in its own
 *     programs; said on stdout as skipped);
 *   - with --tmux: the terminal view in a tmux session (capture-pane, the s
 *     and q keys), exit 77 (skipped) without tmux.
 *
 * Usage: it_cli_top PATH_TO_RLK [--tmux]
 */
#define _POSIX_C_SOURCE 200809L

#include "cli_check.h"
#include "json_mini.h"

#include <rlk.h>

#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static rlk_fx_server server;
static char url[128];
static const char *rlk_path;

static long long fx_int(const char *fmt, const char *a)
{
    redisReply *r = rlk_fx_command(&server, fmt, a);
    long long v = -1;

    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    if (r)
        freeReplyObject(r);
    return v;
}

/* A setup command (hiredis's format: spaces split the arguments). */
static void fx_do(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static void fx_do(const char *fmt, ...)
{
    va_list ap;
    redisReply *r;

    va_start(ap, fmt);
    r = rlk_fx_vcommand(&server, fmt, ap);
    va_end(ap);
    CHECKF(r && r->type != REDIS_REPLY_ERROR, "setup: %s: %s", fmt,
           r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
}

/* The string member key of v, "" when absent. */
static const char *str_of(const json_value *v, const char *key)
{
    const char *s = json_get_string(v, key);

    return s ? s : "";
}

static long long server_ms(void)
{
    redisReply *r = rlk_fx_command(&server, "TIME");
    long long ms = 0;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2)
        ms = atoll(r->element[0]->str) * 1000 + atoll(r->element[1]->str) / 1000;
    if (r)
        freeReplyObject(r);
    return ms;
}

/* `rlk top --once --json [extra...]`, parsed. */
static json_value *top_json(const char *a1, const char *a2)
{
    cli_result r = a1 ? RUN("top", "--once", "--json", "--limit", "1000", a1, a2)
                      : RUN("top", "--once", "--json", "--limit", "1000");
    const char *err = NULL;
    json_value *j = NULL;

    if (expect_status(&r, 0, "top --once --json")) {
        j = json_parse(r.out, &err);
        CHECKF(j && j->type == JSON_OBJECT, "top --json: not a JSON object (%s): %.400s",
               err ? err : "", r.out);
    }
    cli_result_free(&r);
    return j;
}

static const json_value *top_row(const json_value *j, const char *name)
{
    const json_value *rows = json_get(j, "locks");

    for (size_t i = 0; rows && i < rows->count; i++)
        if (json_get_string(json_at(rows, i), "name") &&
            strcmp(json_get_string(json_at(rows, i), "name"), name) == 0)
            return json_at(rows, i);
    return NULL;
}

static double total(const json_value *j, const char *key)
{
    return json_get_number(json_get(j, "totals"), key, -1);
}

/* ---------------------------------------------------------------- layouts */

/* A fair waiter's id longer than a 120-column line. */
#define LONG_WAITER_HEAD "a-waiter-whose-id-is-long-"
#define LONG_WAITER                                                                          \
    LONG_WAITER_HEAD "0123456789012345678901234567890123456789012345678901234567890123456789" \
                     "01234567890123456789012345678901234567890123456789:1"

/* The line of text that starts with prefix (at the start of text or after a newline). */
static const char *line_of(const char *text, const char *prefix)
{
    size_t n = strlen(prefix);

    for (const char *p = text; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
        if (strncmp(p, prefix, n) == 0)
            return p;
    return NULL;
}

static void test_top_layouts(void)
{
    long long now = server_ms();
    json_value *j;
    const json_value *row;
    cli_result r;

    fx_do("HSET tp:re 6b1f:1 2");
    fx_do("PEXPIRE tp:re 60000");
    fx_do("HSET tp:rw mode read u2:1 1 u3:1 2");
    fx_do("HSET tp:fe u4:1 1");
    fx_do("SET redisson_lock_token:{tp:fe} 7");
    fx_do("HSET tp:fa u5:1 1");
    fx_do("RPUSH redisson_lock_queue:{tp:fa} w1:1 w2:1");
    fx_do("ZADD redisson_lock_timeout:{tp:fa} %lld w1:1 %lld w2:1", now + 60000, now + 70000);
    fx_do("SET tp:se 3");
    fx_do("SET tp:ps 1");
    fx_do("ZADD {tp:ps}:timeout %lld permit-1", now + 60000);
    fx_do("SET tp:la 2");
    fx_do("SET {tp:la}:rlk_kind latch");
    fx_do("HSET tp:app field value");
    fx_do("SET tp:str hello");

    j = top_json("--pattern", "tp:*");
    REQUIRE(j);
    CHECKF(total(j, "locks") == 4, "locks %g", total(j, "locks"));
    CHECKF(total(j, "semaphores") == 1 && total(j, "psemaphores") == 1 &&
           total(j, "latches") == 1 && total(j, "permit_holders") == 1,
           "semaphores %g psemaphores %g latches %g permit holders %g", total(j, "semaphores"),
           total(j, "psemaphores"), total(j, "latches"), total(j, "permit_holders"));
    CHECKF(total(j, "rows") == 7, "rows %g (the application's hash and string shown?)",
           total(j, "rows"));
    CHECK(!top_row(j, "tp:app") && !top_row(j, "tp:str"));
    row = top_row(j, "tp:re");
    CHECK(row && strcmp(str_of(row, "kind"), "reentrant") == 0);
    CHECK(row && json_get_number(row, "ttl_ms", -9) > 0);
    CHECK(row && json_get_number(json_at(json_get(row, "holders"), 0), "count", 0) == 2);
    row = top_row(j, "tp:rw");
    CHECK(row && strcmp(str_of(row, "kind"), "rwlock") == 0);
    CHECK(row && strcmp(str_of(row, "mode"), "read") == 0);
    CHECK(row && json_get(row, "holders") && json_get(row, "holders")->count == 2);
    row = top_row(j, "tp:fe");
    CHECK(row && strcmp(str_of(row, "kind"), "fenced") == 0);
    row = top_row(j, "tp:fa");
    CHECK(row && strcmp(str_of(row, "kind"), "fair") == 0);
    CHECK(row && json_get_number(row, "fair_queued", 0) == 2);
    CHECK(row && json_get(row, "fair_queue") && json_get(row, "fair_queue")->count == 2);
    CHECKF(row && json_get_number(json_at(json_get(row, "fair_queue"), 1), "deadline_in_ms", 0) >
                      50000, "the second fair waiter's deadline");
    CHECK(row && strcmp(str_of(json_at(json_get(row, "fair_queue"), 0), "owner"),
                        "w1:1") == 0);
    row = top_row(j, "tp:ps");
    CHECK(row && strcmp(str_of(row, "kind"), "psemaphore") == 0);
    CHECK(row && json_get_number(row, "permits", -1) == 1);
    row = top_row(j, "tp:la");
    CHECK(row && strcmp(str_of(row, "kind"), "latch") == 0);
    CHECK(row && json_get_number(row, "count", -1) == 2);
    /* sorted by waiters: the fair lock with its queue first */
    CHECK(strcmp(str_of(json_at(json_get(j, "locks"), 0), "name"), "tp:fa") == 0);
    json_free(j);

    /* A narrower pattern: the fenced lock's token key does not match it, and is read. */
    j = top_json("--pattern", "tp:f*");
    REQUIRE(j);
    CHECKF(total(j, "rows") == 2, "rows %g", total(j, "rows"));
    row = top_row(j, "tp:fe");
    CHECK(row && strcmp(str_of(row, "kind"), "fenced") == 0);
    json_free(j);

    /* The text: a write lock and a fair waiter whose id is longer than the line. */
    fx_do("HSET tp:wr mode write u6:1:write 1");
    fx_do("PEXPIRE tp:wr 60000");
    fx_do("HSET tp:fl u7:1 1");
    fx_do("RPUSH redisson_lock_queue:{tp:fl} %s", LONG_WAITER);
    fx_do("ZADD redisson_lock_timeout:{tp:fl} %lld %s", now + 80000, LONG_WAITER);
    r = RUN("top", "--once", "--pattern", "tp:*");
    expect_status(&r, 0, "top --once");
    CHECK_STR_CONTAINS(r.out, "rlk top - ");
    CHECK_STR_CONTAINS(r.out, "tp:fa");
    CHECK_STR_CONTAINS(r.out, "waiter w1:1");
    {
        const char *head = line_of(r.out, "NAME "), *re = line_of(r.out, "tp:re "),
                   *wr = line_of(r.out, "tp:wr "), *se = line_of(r.out, "tp:se "),
                   *waiter = strstr(r.out, "waiter " LONG_WAITER_HEAD);
        const char *col = head ? strstr(head, "HOLDER") : NULL, *eol;

        REQUIRE(head && re && wr && se && col);
        /* HOLDER stands over the holders' ids. */
        CHECKF(strncmp(re + (col - head), "6b1f:1", 6) == 0, "HOLDER at column %d, the holder "
               "at %d: %.120s / %.120s", (int)(col - head), (int)(strstr(re, "6b1f:1") - re),
               head, re);
        /* A write lock's mode whole, not cut to four letters. */
        eol = strchr(wr, '\n');
        CHECKF(strstr(wr, " write ") && (!eol || strstr(wr, " write ") < eol), "the write lock's "
               "row: %.*s", eol ? (int)(eol - wr) : 120, wr);
        /* A semaphore has no age: '-', not 0. */
        eol = strchr(se, '\n');
        CHECKF(eol && eol - se > 2 && eol[-1] == '-' && eol[-2] == ' ', "the semaphore's AGE: "
               "%.*s", eol ? (int)(eol - se) : 120, se);
        /* A fair waiter's line keeps its deadline; the id is what is cut. */
        eol = waiter ? strchr(waiter, '\n') : NULL;
        CHECKF(waiter && eol && strstr(waiter, "deadline in ") &&
                   strstr(waiter, "deadline in ") < eol,
               "the long waiter's line: %.*s", waiter && eol ? (int)(eol - waiter) : 0, waiter);
    }
    cli_result_free(&r);
    r = RUN("top", "--once", "--sort", "size");
    expect_status(&r, 2, "top --sort size");
    CHECK_STR_CONTAINS(r.err, "--sort");
    cli_result_free(&r);
    r = RUN("top", "--once", "--count", "5");
    expect_status(&r, 2, "top --count 5");
    cli_result_free(&r);
    r = RUN("top", "--once", "--interval", "0.01");
    expect_status(&r, 2, "top --interval 0.01");
    cli_result_free(&r);
}

/* A fair lock held with nobody queued has a reentrant lock's data: rlk lock --fair's kind marker
 * ({NAME}:rlk_kind = fair) tells it, as rlk inspect reads it. Written raw (with a hash of the
 * same layout marked otherwise, still reentrant), then held by rlk lock --fair with rlk top run
 * inside it. Before top read the marker, both showed as reentrant. */
static void test_top_idle_fair(void)
{
    json_value *j;
    const json_value *row;
    char *text;
    cli_result r;

    fx_do("HSET tf:fi u8:1 1");
    fx_do("PEXPIRE tf:fi 60000");
    fx_do("SET {tf:fi}:rlk_kind fair");
    fx_do("HSET tf:re u9:1 1");
    fx_do("PEXPIRE tf:re 60000");
    fx_do("SET {tf:re}:rlk_kind something-else");
    j = top_json("--pattern", "tf:*");
    REQUIRE(j);
    row = top_row(j, "tf:fi");
    CHECKF(row && strcmp(str_of(row, "kind"), "fair") == 0, "tf:fi (marked fair): kind %s",
           row ? str_of(row, "kind") : "(no row)");
    row = top_row(j, "tf:re");
    CHECKF(row && strcmp(str_of(row, "kind"), "reentrant") == 0, "tf:re (marked otherwise): "
           "kind %s", row ? str_of(row, "kind") : "(no row)");
    CHECKF(total(j, "rows") == 2, "rows %g (a marker shown as a row?)", total(j, "rows"));
    json_free(j);
    fx_do("DEL tf:fi {tf:fi}:rlk_kind tf:re {tf:re}:rlk_kind");

    r = RUN("lock", "--fair", "tf:held", "--", "sh", "-c",
            "\"$RLK_BIN\" top --once --json --limit 1000 --pattern 'tf:*' > \"$T/tf.json\"; "
            "\"$RLK_BIN\" top --once --pattern 'tf:*' > \"$T/tf.txt\"");
    expect_status(&r, 0, "rlk lock --fair with rlk top inside");
    cli_result_free(&r);
    text = cli_slurp(cli_path("tf.json"));
    j = json_parse(text, NULL);
    row = j ? top_row(j, "tf:held") : NULL;
    CHECKF(row && strcmp(str_of(row, "kind"), "fair") == 0, "rlk top of the fair lock held by "
           "rlk lock --fair, nobody queued: %s", text);
    json_free(j);
    free(text);
    text = cli_slurp(cli_path("tf.txt"));
    {
        const char *line = line_of(text, "tf:held "), *eol = line ? strchr(line, '\n') : NULL;

        CHECKF(line && strstr(line, " fair ") && (!eol || strstr(line, " fair ") < eol),
               "the text view's row: %s", text);
    }
    free(text);
}

/* ---------------------------------------------------------------- faster MultiLock groups */

/* v's "held": 1 true, 0 false, -1 absent or not a boolean. */
static int held_of(const json_value *v)
{
    const json_value *h = json_get(v, "held");

    return h && h->type == JSON_BOOL ? h->boolean : -1;
}

/* Groups written as fastmulti/acquire writes them (raw commands): one with
 * two holders, a value with a quote and a backslash, a lapsed value; one of
 * 40 values (120 fields: more than top's first sample of 64); a hash with a
 * field of another shape is not shown. */
static void test_top_fastmulti(void)
{
    long long live = server_ms() + 600000, gone = server_ms() - 1000;
    const char *odd = "q\"v\\w";
    const json_value *row, *vals;
    json_value *j;
    cli_result r;
    int seen_odd = 0, seen_gone = 0;

    fx_do("HSET tf:grp a u1:1 a:u1:1:expire_time %lld a:u1:1:lock_count 2", live);
    fx_do("HSET tf:grp %s u2:1 %s:u2:1:expire_time %lld %s:u2:1:lock_count 1", odd, odd, live,
          odd);
    fx_do("HSET tf:grp old u3:1 old:u3:1:expire_time %lld old:u3:1:lock_count 1", gone);
    fx_do("PEXPIRE tf:grp 600000");
    for (int i = 0; i < 40; i++)
        fx_do("HSET tf:big v%d u4:1 v%d:u4:1:expire_time %lld v%d:u4:1:lock_count 1", i, i, live,
              i);
    fx_do("HSET tf:app a u1:1 a:b c");

    j = top_json("--pattern", "tf:*");
    REQUIRE(j);
    CHECKF(total(j, "rows") == 2, "rows %g (tf:app shown?)", total(j, "rows"));
    CHECKF(total(j, "locks") == 2, "locks %g", total(j, "locks"));
    CHECK(!top_row(j, "tf:app"));
    row = top_row(j, "tf:grp");
    CHECKF(row && strcmp(str_of(row, "kind"), "fastmulti") == 0, "tf:grp kind %s",
           row ? str_of(row, "kind") : "(no row)");
    CHECK(row && json_get_number(row, "ttl_ms", -9) > 0);
    vals = row ? json_get(row, "values") : NULL;
    CHECKF(vals && vals->count == 3, "tf:grp values %zu", vals ? vals->count : 0);
    for (size_t i = 0; vals && i < vals->count; i++) {
        const json_value *v = json_at(vals, i);

        if (strcmp(str_of(v, "value"), odd) == 0) {
            seen_odd = 1;
            CHECK_STR_EQ(str_of(v, "holder"), "u2:1");
            CHECK(json_get_number(v, "count", 0) == 1);
            CHECK(held_of(v) == 1);
        } else if (strcmp(str_of(v, "value"), "old") == 0) {
            seen_gone = 1;
            CHECK(held_of(v) == 0);
        } else {
            CHECK_STR_EQ(str_of(v, "value"), "a");
            CHECK(json_get_number(v, "count", 0) == 2);
        }
    }
    CHECK(seen_odd && seen_gone);
    /* holders: the holders of live values, each with its number of values */
    CHECKF(row && json_get(row, "holders") && json_get(row, "holders")->count == 2,
           "tf:grp holders");
    row = top_row(j, "tf:big");
    CHECKF(row && strcmp(str_of(row, "kind"), "fastmulti") == 0, "tf:big kind %s",
           row ? str_of(row, "kind") : "(no row)");
    vals = row ? json_get(row, "values") : NULL;
    CHECKF(vals && vals->count == 40, "tf:big values %zu (all of them, past the sample)",
           vals ? vals->count : 0);
    CHECK(row && json_get_number(json_at(json_get(row, "holders"), 0), "count", 0) == 40);
    json_free(j);

    r = RUN("top", "--once", "--pattern", "tf:*");
    expect_status(&r, 0, "top --once");
    CHECK_STR_CONTAINS(r.out, "fastmulti");
    CHECK(!strstr(r.out, "tf:app"));
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- contention */

#define NPROC 16

/* Waits (bounded) until name is held and its rlk queue holds `queued` tickets. */
static int settle(const char *name, long long queued)
{
    char key[128];
    long long end = rlk_fx_now_ms() + 20000;

    snprintf(key, sizeof key, "{%s}:rlk_waiters", name);
    while (rlk_fx_now_ms() < end) {
        if (fx_int("EXISTS %s", name) == 1 && fx_int("LLEN %s", key) == queued)
            return 0;
        rlk_fx_sleep_ms(20);    /* a bounded poll of the server's state */
    }
    fprintf(stderr, "  %s: not settled at %lld queued: EXISTS %lld, LLEN %lld, PTTL %lld, "
            "HLEN %lld\n", name, queued, fx_int("EXISTS %s", name), fx_int("LLEN %s", key),
            fx_int("PTTL %s", name), fx_int("HLEN %s", name));
    return -1;
}

/* Subscribers of the lock's channels, as the server counts them: the lock's own channel and
 * the channels under it (rlk's per-client wake channels ...:{NAME}:rlk:<cid>, a fair waiter's
 * ...:{NAME}:<owner>): PUBSUB CHANNELS, then NUMSUB of each. */
static long long numsub(const char *name)
{
    char pat[160];
    redisReply *r;
    long long n = -1;

    snprintf(pat, sizeof pat, "redisson_lock__channel:{%s}*", name);
    r = rlk_fx_command(&server, "PUBSUB CHANNELS %s", pat);
    if (r && r->type == REDIS_REPLY_ARRAY) {
        n = 0;
        for (size_t i = 0; i < r->elements; i++) {
            redisReply *c = rlk_fx_command(&server, "PUBSUB NUMSUB %s", r->element[i]->str);

            if (c && c->type == REDIS_REPLY_ARRAY && c->elements == 2)
                n += c->element[1]->integer;
            else
                n = -1;
            if (c)
                freeReplyObject(c);
            if (n < 0)
                break;
        }
    }
    if (r)
        freeReplyObject(r);
    return n;
}

static char *holder(const char *name)
{
    redisReply *r = rlk_fx_command(&server, "HKEYS %s", name);
    char *h = NULL;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 1)
        h = strdup(r->element[0]->str);
    if (r)
        freeReplyObject(r);
    return h;
}

/* top's subscriber count of name, -1 without a row. */
static long long top_subscribers(const json_value *j, const char *name)
{
    const json_value *row = top_row(j, name);

    return row ? (long long)json_get_number(row, "subscribers", -1) : -1;
}

/* One sample point: top's row of each name against the server. The queue has settled, but a
 * subscription still comes and goes a little later (a waiter subscribes after it queued, a
 * stopped process's connection is closed by the server after it exited): top's refresh is
 * compared with the subscriber counts read just before and just after it, taken again (a bounded
 * poll) until those two agree and top's agree with them (one that came and went between the two
 * reads shows only in top's). A top that never agrees fails after the poll. */
static void sample(const char *const names[2], const long long queued[2], int point)
{
    json_value *j = NULL;
    long long subs_at[2] = {-1, -1};
    double sum_q = 0, sum_s = 0;

    for (int tries = 0; tries < 100; tries++) {
        long long before[2] = {numsub(names[0]), numsub(names[1])};

        json_free(j);
        j = top_json("--pattern", "tc:*");
        subs_at[0] = numsub(names[0]);
        subs_at[1] = numsub(names[1]);
        if (before[0] == subs_at[0] && before[1] == subs_at[1] && j &&
            top_subscribers(j, names[0]) == subs_at[0] &&
            top_subscribers(j, names[1]) == subs_at[1])
            break;
        rlk_fx_sleep_ms(50);
    }
    REQUIRE(j);
    for (int k = 0; k < 2; k++) {
        const json_value *row = top_row(j, names[k]);
        char *h = holder(names[k]);
        long long subs = subs_at[k];

        CHECKF(row, "point %d: no row for %s", point, names[k]);
        if (!row) {
            free(h);
            continue;
        }
        CHECKF(json_get_number(row, "queued", -1) == (double)queued[k],
               "point %d, %s: top queued %g, LLEN %lld", point, names[k],
               json_get_number(row, "queued", -1), queued[k]);
        CHECKF(json_get_number(row, "subscribers", -1) == (double)subs,
               "point %d, %s: top subscribers %g, PUBSUB NUMSUB %lld", point, names[k],
               json_get_number(row, "subscribers", -1), subs);
        CHECKF(h && json_get_string(json_at(json_get(row, "holders"), 0), "owner") &&
                   strcmp(json_get_string(json_at(json_get(row, "holders"), 0), "owner"), h) == 0,
               "point %d, %s: top's holder differs from the server's %s", point, names[k],
               h ? h : "(none)");
        sum_q += (double)queued[k];
        sum_s += (double)subs;
        free(h);
    }
    CHECKF(total(j, "queued") == sum_q && total(j, "subscribers") == sum_s &&
           total(j, "locks") == 2, "point %d: totals queued %g subscribers %g locks %g", point,
           total(j, "queued"), total(j, "subscribers"), total(j, "locks"));
    json_free(j);
}

static void test_top_contention(void)
{
    const char *names[2] = {"tc:a", "tc:b"};
    cli_proc p[NPROC];
    long long queued[2] = {NPROC / 2 - 1, NPROC / 2 - 1};
    int started = 0;

    for (; started < NPROC; started++)
        if (START(&p[started], "lock", names[started % 2], "--", "sleep", "60") != 0)
            break;
    REQUIRE(started == NPROC);
    for (int k = 0; k < 2; k++)
        CHECKF(settle(names[k], queued[k]) == 0, "%s: the 8 processes did not settle", names[k]);
    sample(names, queued, 1);
    /* Stop three processes of tc:a and two of tc:b (holders or waiters: either way one ticket
     * fewer in the queue once the lock has passed on), then sample again. */
    for (int n = 0, k = 0; k < NPROC && n < 5; k++) {
        int which = k % 2;
        long long floor = which == 0 ? NPROC / 2 - 4 : NPROC / 2 - 3;

        if (queued[which] > floor) {
            kill(p[k].pid, SIGTERM);
            int st = cli_wait(&p[k], 10000);

            CHECKF(st == 143, "process %d (%s) exited %d after SIGTERM, not 143", k,
                   names[which], st);
            p[k].pid = 0;
            queued[which]--;
            n++;
            CHECKF(settle(names[which], queued[which]) == 0, "%s: did not settle at %lld queued",
                   names[which], queued[which]);
            if (n == 2 || n == 5)
                sample(names, queued, n == 2 ? 2 : 3);
        }
    }
    for (int k = 0; k < NPROC; k++)
        if (p[k].pid > 0) {
            kill(p[k].pid, SIGTERM);
            cli_wait(&p[k], 10000);
        }
    printf("# node-redisson processes: not run here (skipped: c/tests/interop runs Redisson's "
           "clients in its own harness)\n");
}

/* ---------------------------------------------------------------- --stats */

/* rlk lock / rlk semaphore --stats and --json: one line on stderr at exit. */
static void test_stats(void)
{
    cli_result r = RUN("lock", "st:a", "--stats", "--watchdog-lease", "300", "--", "sleep", "0.5");
    json_value *j;
    const char *err = NULL, *nl;

    expect_status(&r, 0, "lock --stats");
    CHECK_STR_CONTAINS(r.err, "rlk: stats: lock st:a: waited ");
    CHECK_STR_CONTAINS(r.err, " held 0.");
    CHECK_STR_CONTAINS(r.err, "exit 0");
    cli_result_free(&r);
    r = RUN("lock", "st:a", "--json", "--watchdog-lease", "300", "--", "sleep", "0.5");
    expect_status(&r, 0, "lock --json");
    nl = strchr(r.err, '\n');
    j = json_parse(r.err, &err);
    CHECKF(j && nl && nl[1] == '\0', "--json: not one JSON line on stderr: %s", r.err);
    if (j) {
        CHECK(json_get(j, "acquired") && json_get(j, "acquired")->boolean);
        CHECKF(json_get_number(j, "hold_ms", 0) >= 450, "hold_ms %g",
               json_get_number(j, "hold_ms", 0));
        /* the watchdog renews every lease/3 = 100 ms: at least 2 in 0.5 s */
        CHECKF(json_get_number(j, "renewals", 0) >= 2, "renewals %g",
               json_get_number(j, "renewals", 0));
        CHECK(json_get_number(j, "exit", -1) == 0);
        json_free(j);
    }
    cli_result_free(&r);
    fx_do("HSET st:b someone:1 1");
    r = RUN("lock", "st:b", "-w", "0.2", "--json", "--", "true");
    expect_status(&r, 1, "lock -w 0.2 --json (held)");
    CHECK_STR_CONTAINS(r.err, "\"acquired\":false");
    cli_result_free(&r);
    r = RUN("semaphore", "st:s", "--permits", "2", "--stats", "--", "true");
    expect_status(&r, 0, "semaphore --stats");
    CHECK_STR_CONTAINS(r.err, "rlk: stats: ");
    CHECK_STR_CONTAINS(r.err, "semaphore st:s: waited ");
    cli_result_free(&r);
    r = RUN("lock", "st:c", "--", "true");     /* control: no --stats, no line */
    expect_status(&r, 0, "lock");
    CHECK(strstr(r.err, "rlk: stats") == NULL);
    cli_result_free(&r);
}

/* ---------------------------------------------------------------- tmux */

static char tmux_sock[64];

static int tmux(const char *args, char *out, size_t len)
{
    char cmd[2048];
    FILE *f;
    size_t n = 0;
    int st;

    snprintf(cmd, sizeof cmd, "tmux -L %s %s 2>&1", tmux_sock, args);
    if (!(f = popen(cmd, "r")))
        return -1;
    while (out && n + 1 < len && fgets(out + n, (int)(len - n), f))
        n += strlen(out + n);
    if (out)
        out[n] = '\0';
    st = pclose(f);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Bounded poll of the pane until it shows text. */
static int pane_shows(const char *text, char *pane, size_t len)
{
    long long end = rlk_fx_now_ms() + 15000;

    while (rlk_fx_now_ms() < end) {
        if (tmux("capture-pane -p -t top", pane, len) == 0 && strstr(pane, text))
            return 0;
        rlk_fx_sleep_ms(50);
    }
    return -1;
}

/* The same, with lines that tmux wrapped joined (capture-pane -J). */
static int pane_shows_j(const char *text, char *pane, size_t len)
{
    long long end = rlk_fx_now_ms() + 15000;

    while (rlk_fx_now_ms() < end) {
        if (tmux("capture-pane -p -J -t top", pane, len) == 0 && strstr(pane, text))
            return 0;
        rlk_fx_sleep_ms(50);
    }
    return -1;
}

static void test_top_tmux(void)
{
    static char pane[65536];
    char args[1024];
    long long end;

    fx_do("HSET tm:lock tmux-owner:1 1");
    snprintf(tmux_sock, sizeof tmux_sock, "rlk-top-test-%d", (int)getpid());
    snprintf(args, sizeof args, "new-session -d -s top -x 150 -y 30 \"'%s' top --interval 0.3 "
             "--pattern 'tm:*' --url '%s'\"", rlk_path, url);
    REQUIRE(tmux(args, NULL, 0) == 0);
    CHECKF(pane_shows("tmux-owner:1", pane, sizeof pane) == 0, "the view: %s", pane);
    CHECK_STR_CONTAINS(pane, "rlk top - ");
    CHECK_STR_CONTAINS(pane, "sort: waiters");
    /* a change on the server shows at the next refresh */
    fx_do("HSET tm:other tmux-owner:2 1");
    CHECKF(pane_shows("tm:other", pane, sizeof pane) == 0, "refresh: %s", pane);
    tmux("send-keys -t top s", NULL, 0);
    CHECKF(pane_shows("sort: age", pane, sizeof pane) == 0, "s: %s", pane);
    tmux("send-keys -t top q", NULL, 0);
    end = rlk_fx_now_ms() + 10000;
    while (tmux("has-session -t top", NULL, 0) == 0 && rlk_fx_now_ms() < end)
        rlk_fx_sleep_ms(50);
    CHECKF(tmux("has-session -t top", NULL, 0) != 0, "q did not end rlk top");
    tmux("kill-server", NULL, 0);   /* only this test's server (-L) */
}

/* Every line of the pane, joined where tmux wrapped it, at most cols columns (UTF-8: one per
 * character); the first line is the view's header. */
static void expect_fits(const char *pane, int cols, const char *what)
{
    const char *p = pane;
    int line = 0;

    CHECKF(strncmp(pane, "rlk top - ", 10) == 0, "%s: the header is not the first line:\n%s",
           what, pane);
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        int w = 0;

        for (size_t i = 0; i < len; i++)
            w += ((unsigned char)p[i] & 0xc0) != 0x80;
        CHECKF(w <= cols, "%s: line %d is %d columns wide (terminal: %d): %.*s", what, line, w,
               cols, (int)len, p);
        line++;
        p += len + (nl != NULL);
    }
}

/* At 80 columns: no line wraps (names and holders cut with a marker), control characters of
 * a name shown escaped, the header stays on top; a resize redraws at once (SIGWINCH; the
 * interval is 60 s) to the new width; q leaves the alternate screen: the shell's lines are
 * back and the view is gone. */
static void test_top_tmux_fit(void)
{
    static char pane[65536];
    char args[1400];

    fx_do("DEL tm:lock tm:other");
    fx_do("HSET tm:a-very-long-lock-name-that-cannot-fit-in-eighty-columns-at-all "
          "0c2f6a8e-1f4e-4a53-9a51-9d8e7bd0b1aa:1234567 1");
    {
        redisReply *r = rlk_fx_command(&server, "HSET %s %s 1", "tm:esc\033[2Jx\ny",
                                       "holder-with-a-long-id-0123456789abcdef:1");
        freeReplyObject(r);
    }
    /* A fair-lock deadlock (two holders, each queued on the other's lock): its DEADLOCK
     * lines fit too. */
    fx_do("HSET tm:dl:A 0c2f6a8e-1f4e-4a53-9a51-9d8e7bd0b1aa:1234567 1");
    fx_do("HSET tm:dl:B 7d3e1f00-1f4e-4a53-9a51-9d8e7bd0b1bb:7654321 1");
    fx_do("RPUSH redisson_lock_queue:{tm:dl:A} 7d3e1f00-1f4e-4a53-9a51-9d8e7bd0b1bb:7654321");
    fx_do("RPUSH redisson_lock_queue:{tm:dl:B} 0c2f6a8e-1f4e-4a53-9a51-9d8e7bd0b1aa:1234567");
    snprintf(tmux_sock, sizeof tmux_sock, "rlk-top-fit-%d", (int)getpid());
    snprintf(args, sizeof args, "new-session -d -s top -x 80 -y 24 \"sh -c 'echo BEFORE-TOP; "
             "LANG=C.UTF-8 %s top --interval 60 --pattern tm:\\* --url %s; echo AFTER-TOP; "
             "sleep 60'\"", rlk_path, url);
    REQUIRE(tmux(args, NULL, 0) == 0);
    CHECKF(pane_shows_j("tm:esc", pane, sizeof pane) == 0, "the view: %s", pane);
    expect_fits(pane, 80, "80 columns");
    CHECK_STR_CONTAINS(pane, "tm:esc\\x1b");
    CHECK_STR_CONTAINS(pane, "tm:a-very-lo\xe2\x80\xa6");
    CHECK_STR_CONTAINS(pane, "[q] quit");
    CHECK_STR_CONTAINS(pane, "DEADLOCK 1 of 1");
    CHECK_STR_CONTAINS(pane, "  0c2f6a8e-1f4e-4a53-9a51-9d8e7bd0b1aa:1234567 waits for tm:dl:B");
    CHECK_STR_CONTAINS(pane, "      held by 7d3e1f00-1f4e-4a53-9a51-9d8e7bd0b1bb:7654321");
    CHECKF(strstr(pane, "BEFORE-TOP") == NULL, "not on the alternate screen: %s", pane);
    REQUIRE(tmux("resize-window -t top -x 60 -y 20", NULL, 0) == 0);
    /* Redrawn for 60 columns: the column header cut with the marker (tmux alone would only
     * hide what is past the edge). */
    CHECKF(pane_shows_j("COUNT  \xe2\x80\xa6", pane, sizeof pane) == 0,
           "no redraw at 60 columns: %s", pane);
    expect_fits(pane, 60, "resized to 60 columns");
    tmux("send-keys -t top q", NULL, 0);
    CHECKF(pane_shows_j("AFTER-TOP", pane, sizeof pane) == 0, "q: %s", pane);
    CHECK_STR_CONTAINS(pane, "BEFORE-TOP");
    CHECKF(strstr(pane, "rlk top - ") == NULL && strstr(pane, "tm:esc") == NULL,
           "the last frame was left behind: %s", pane);
    tmux("kill-server", NULL, 0);   /* only this test's server (-L) */
    fx_do("DEL tm:a-very-long-lock-name-that-cannot-fit-in-eighty-columns-at-all");
    fx_do("DEL tm:dl:A tm:dl:B redisson_lock_queue:{tm:dl:A} redisson_lock_queue:{tm:dl:B}");
    {
        redisReply *r = rlk_fx_command(&server, "DEL %s", "tm:esc\033[2Jx\ny");
        freeReplyObject(r);
    }
}

int main(int argc, char **argv)
{
    int tmux_only = argc > 2 && strcmp(argv[2], "--tmux") == 0;
    int rc;

    rlk_path = argc > 1 ? argv[1] : "rlk";
    if (tmux_only && system("command -v tmux >/dev/null 2>&1") != 0) {
        printf("SKIP: tmux not found\n");
        return 77;
    }
    rc = cli_main_begin(tmux_only ? 2 : argc, argv, &server, 1, url, sizeof url);
    if (rc >= 0)
        return rc;
    if (tmux_only) {
        RUN_TEST(test_top_tmux);
        RUN_TEST(test_top_tmux_fit);
    } else {
        RUN_TEST(test_top_layouts);
        RUN_TEST(test_top_idle_fair);
        RUN_TEST(test_top_fastmulti);
        RUN_TEST(test_top_contention);
        RUN_TEST(test_stats);
    }
    cli_main_end(&server, 1);
    return check_summary(tmux_only ? "it_cli_top --tmux" : "it_cli_top");
}
