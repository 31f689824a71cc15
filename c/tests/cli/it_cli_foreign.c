/*
 * it_cli_foreign.c - keys rlk does not own (docs/cli.md, "Keys rlk does
 * not own"): every rlk command that takes a name (lock and each lock flag,
 * elect, fastmulti, semaphore and latch actions, unlock --force, inspect)
 * against a string, a JSON string, a list, a set, a sorted set, a stream,
 * an application hash, a hash of counts, and other kinds' live keys. Each run
 * has the documented exit code (4: the script's RLK_WRONGTYPE; inspect 0),
 * none waits (no -w: a run still going after 10 s is killed and fails), and
 * DUMP + PTTL of the key are the same afterwards.
 *
 * RLK_BUNDLE in the environment, when set, reaches every rlk run (a bundle
 * directory to test instead of the embedded scripts).
 *
 * Control (--control, ctest it_cli_foreign_control, WILL_FAIL): only the
 * live reentrant lock, and `lock` and `unlock --force` no longer skip it
 * as their own kind: the lock waits (killed at the bound) and the force
 * unlock deletes it, which the checks must report.
 *
 * test_named: a lock's hash without a TTL (one holder field -> count: a
 * persisted lock, or data shaped like one), which shape cannot tell from an
 * application's data: `unlock --force` refuses it (exit 4, one line naming
 * --kind, DUMP + PTTL unchanged), `unlock --force --kind KIND` removes it for
 * each kind (the read-write lock's own shape for rwlock); a one-field hash of
 * a word -> count stays refused with --kind; live locks taken by the library
 * (reentrant, fair, fenced, read-write) are removed by a plain --force.
 *
 * Control (--control-named, ctest it_cli_foreign_named_control, WILL_FAIL):
 * the runs that must be refused are given --kind, which the refusal checks
 * must report (the key removed, exit 0).
 *
 * test_queue_keys: `unlock --queue NAME` when the fair lock's queue key
 * (redisson_lock_queue:{NAME}) or its deadlines key
 * (redisson_lock_timeout:{NAME}) holds an application's data of another type
 * (a string, a hash, a set, ...): exit 4 with one line, the key as it was.
 *
 * Usage: it_cli_foreign PATH_TO_RLK [--control | --control-named]
 */
#define _POSIX_C_SOURCE 200809L

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_check.h"

static rlk_fx_server server;
static char url[128];
static int control, control_named;

#define RUN_BOUND_MS 10000

typedef struct fixture {
    const char *what;
    const char *setup[8];       /* the command that makes it ("%s": the key) */
    long long pexpire;          /* > 0: then PEXPIRE */
    int live_lock;              /* a live exclusive lock (a holder's hash) */
    int live_count;             /* a live semaphore / latch count */
    int inspect_exit;           /* rlk inspect's: 0 held (a string reads as a token lock's
                                   token), 1 free (a semaphore's permits), 4 not a lock */
} fixture;

static const fixture fixtures[] = {
    {"a string", {"SET", "%s", "hello"}, 0, 0, 0, 0},
    {"a JSON string", {"SET", "%s", "{\"theme\":\"dark\",\"retries\":3}"}, 0, 0, 0, 0},
    {"a list", {"RPUSH", "%s", "a", "b"}, 0, 0, 0, 4},
    {"a set", {"SADD", "%s", "a", "b"}, 0, 0, 0, 4},
    {"a sorted set", {"ZADD", "%s", "1", "a", "2", "b"}, 0, 0, 0, 4},
    {"a stream", {"XADD", "%s", "1-1", "f", "v"}, 0, 0, 0, 4},
    {"an application hash", {"HSET", "%s", "name", "bob", "email", "bob@example.com"}, 0, 0, 0, 4},
    {"a hash of counts", {"HSET", "%s", "apples", "3", "pears", "5"}, 0, 0, 0, 0},
    {"a live reentrant lock", {"HSET", "%s", "0b5a1e57-9d1c-4c1e-a7a3-1b2c3d4e5f60:1", "1"},
     60000, 1, 0, 0},
    {"a live semaphore", {"SET", "%s", "3"}, 0, 0, 1, 1},
};
#define NFIXTURES (sizeof fixtures / sizeof fixtures[0])

/* The commands: argv with "@" for the name; which fixtures they take as theirs (skipped). */
typedef struct command {
    const char *argv[10];
    int skip_live_lock;         /* the live lock is its own kind (a holder: it would wait) */
    int skip_live_count;        /* the count is its own kind */
    int expect;                 /* exit code (-1: the fixture's inspect_exit) */
} command;

static const command commands[] = {
    {{"lock", "@", "--", "true"}, 1, 0, 4},
    {{"lock", "--fair", "@", "--", "true"}, 1, 0, 4},
    {{"lock", "--fenced", "@", "--", "true"}, 1, 0, 4},
    {{"lock", "--non-reentrant", "@", "--", "true"}, 1, 0, 4},
    {{"lock", "--spin", "@", "--", "true"}, 1, 0, 4},
    {{"lock", "--read", "@", "--", "true"}, 0, 0, 4},
    {{"lock", "--write", "@", "--", "true"}, 0, 0, 4},
    {{"elect", "@", "--", "true"}, 1, 0, 4},
    {{"fastmulti", "@", "v1", "--", "true"}, 0, 0, 4},
    {{"semaphore", "@", "expire", "10"}, 0, 1, 4},
    {{"semaphore", "@", "clear-expire"}, 0, 1, 4},
    {{"latch", "@", "set", "2"}, 0, 1, 4},
    {{"latch", "@", "expire", "10"}, 0, 1, 4},
    {{"latch", "@", "count-down"}, 0, 1, 4},
    {{"unlock", "--force", "@"}, 1, 0, 4},
    {{"inspect", "@"}, 0, 0, -1},     /* the fixture's inspect_exit */
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void make(const fixture *f, const char *key)
{
    tk_make_key(&server, f->setup, sizeof f->setup / sizeof f->setup[0], key, f->pexpire);
}

/* DUMP (as bytes) and PTTL of key; *pttl -3 when unreadable. The caller frees. */
static char *dump(const char *key, size_t *len, long long *pttl)
{
    return tk_dump(&server, key, len, pttl);
}

static void test_matrix(void)
{
    int n = 0;

    for (size_t c = 0; c < NCOMMANDS; c++) {
        for (size_t f = 0; f < NFIXTURES; f++) {
            const command *cmd = &commands[c];
            const fixture *fx = &fixtures[f];
            const char *argv[12];
            char key[64], *before, *after;
            size_t blen, alen;
            long long bttl, attl;
            cli_proc p;
            int status, k;

            int planted = (strcmp(cmd->argv[0], "lock") == 0 && cmd->argv[1][0] != '-') ||
                          strcmp(cmd->argv[0], "unlock") == 0;

            if (control ? !(fx->live_lock && planted)
                        : (fx->live_lock && cmd->skip_live_lock) ||
                              (fx->live_count && cmd->skip_live_count))
                continue;
            snprintf(key, sizeof key, "fk:%zu:%zu", c, f);
            make(fx, key);
            before = dump(key, &blen, &bttl);
            for (k = 0; cmd->argv[k]; k++)
                argv[k] = strcmp(cmd->argv[k], "@") == 0 ? key : cmd->argv[k];
            argv[k] = NULL;
            REQUIRE(cli_start(&p, argv) == 0);
            status = cli_wait(&p, RUN_BOUND_MS);
            cli_result r = cli_collect(&p, status, 0);
            int expect = cmd->expect < 0 ? fx->inspect_exit : cmd->expect;

            CHECKF(status == expect, "rlk %s %s on %s: exit %d, expected %d (%s)",
                   cmd->argv[0], cmd->argv[1], fx->what, status, expect,
                   status == -1 ? "killed: it waited" : r.err);
            after = dump(key, &alen, &attl);
            CHECKF(before && after && blen == alen && memcmp(before, after, blen) == 0,
                   "rlk %s %s on %s: the key's DUMP changed", cmd->argv[0], cmd->argv[1], fx->what);
            /* A TTL only falls while the run lasts; none stays none. */
            CHECKF(bttl < 0 ? attl == bttl : (attl > 0 && attl <= bttl),
                   "rlk %s %s on %s: PTTL %lld -> %lld", cmd->argv[0], cmd->argv[1], fx->what,
                   bttl, attl);
            free(before);
            free(after);
            cli_result_free(&r);
            n++;
        }
    }
    printf("  %d runs\n", n);
}

/* DUMP + PTTL of key now, to compare with same(). */
typedef struct snap {
    char *dump;
    size_t len;
    long long pttl;
} snap;

static snap take(const char *key)
{
    snap s;

    s.dump = dump(key, &s.len, &s.pttl);
    return s;
}

/* The key is as s found it (its TTL may only have fallen); frees s. */
static void same(snap *s, const char *key, const char *what)
{
    snap now = take(key);

    CHECKF(s->dump && now.dump && s->len == now.len && memcmp(s->dump, now.dump, s->len) == 0,
           "%s: the key's DUMP changed (%s)", what, now.dump ? "changed" : "gone");
    CHECKF(s->pttl < 0 ? now.pttl == s->pttl : (now.pttl > 0 && now.pttl <= s->pttl),
           "%s: PTTL %lld -> %lld", what, s->pttl, now.pttl);
    free(s->dump);
    free(now.dump);
}

/* rlk unlock --force [--kind kind] key: refused (exit 4, one line naming --kind), key
 * unchanged. In the control the run is given --kind, which must fail these checks. */
static void expect_refused(const char *key, const char *kind, const char *what)
{
    snap before = take(key);
    const char *use = kind ? kind : control_named ? "reentrant" : NULL;
    cli_result r = use ? RUN("unlock", "--force", "--kind", use, key) : RUN("unlock", "--force", key);

    expect_status(&r, 4, what);
    expect_one_line_error(&r, what);
    if (!kind)
        CHECKF(strstr(r.err, "--kind") != NULL && strstr(r.err, "without a TTL") != NULL,
               "%s: the refusal names neither what it found nor --kind: %s", what, r.err);
    same(&before, key, what);
    cli_result_free(&r);
}

static void expect_removed(const char *key, const char *kind, const char *out, const char *what)
{
    cli_result r = kind ? RUN("unlock", "--force", "--kind", kind, key)
                        : RUN("unlock", "--force", key);

    expect_status(&r, 0, what);
    CHECK_STR_EQ(r.out, out);
    CHECK_STR_EQ(r.err, "");
    CHECKF(tk_int(&server, "EXISTS %s", key) == 0, "%s: the key is still there", what);
    cli_result_free(&r);
}

static void test_named(void)
{
    static const struct {
        const char *kind, *label;
    } kinds[] = {{"reentrant", "lock"}, {"fair", "fair lock"}, {"fenced", "fenced lock"}};
    rlk_client *c = rlk_connect_url(url);
    char key[64], out[160];

    REQUIRE(c != NULL);
    /* A lock's hash without a TTL: refused without --kind, removed with each lock kind. */
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++) {
        snprintf(key, sizeof key, "fkn:visits:%zu", k);
        tk_int(&server, "HSET %s user:1 3", key);
        expect_refused(key, NULL, "unlock --force of a lock's hash without a TTL");
        snprintf(out, sizeof out, "%s: %s removed (force unlock)\n", key, kinds[k].label);
        if (!control_named)
            expect_removed(key, kinds[k].kind, out, kinds[k].kind);
    }
    /* A read-write lock's hash without a TTL: the same with --kind rwlock. */
    tk_int(&server, "HSET %s mode read user:1 2", "fkn:rw");
    expect_refused("fkn:rw", NULL, "unlock --force of a read-write lock's hash without a TTL");
    if (!control_named)
        expect_removed("fkn:rw", "rwlock", "fkn:rw: read-write lock removed (force unlock)\n",
                       "--kind rwlock");
    /* Shapes that are no lock's stay refused, named or not. */
    tk_int(&server, "HSET %s apples 3", "fkn:stock");
    expect_refused("fkn:stock", "reentrant", "--kind reentrant of a hash of a word -> count");
    tk_int(&server, "SET %s 3", "fkn:count");
    expect_refused("fkn:count", "fair", "--kind fair of a string holding a count");
    /* Live locks, taken by the library (with their TTL): a plain --force removes them. */
    if (!control_named) {
        rlk_lock *l = rlk_lock_new(c, "fkn:live");
        rlk_fairlock *f = rlk_fairlock_new(c, "fkn:livefair");
        rlk_fenced *fe = rlk_fenced_new(c, "fkn:livefenced");
        rlk_rwlock *rw = rlk_rwlock_new(c, "fkn:liverw");

        REQUIRE(l && f && fe && rw);
        REQUIRE_INT_EQ(rlk_lock_try_lock(l, 0, 30000), RLK_OK);
        REQUIRE_INT_EQ(rlk_fairlock_try_lock(f, 0, 30000), RLK_OK);
        REQUIRE_INT_EQ(rlk_fenced_try_lock(fe, 0, 30000, NULL), RLK_OK);
        REQUIRE_INT_EQ(rlk_rwlock_try_lock(rw, RLK_RW_WRITE, 0, 30000), RLK_OK);
        expect_removed("fkn:live", NULL, "fkn:live: lock removed (force unlock)\n", "live lock");
        /* No waiter: no queue key, so found (and removed) as the reentrant lock it looks like. */
        expect_removed("fkn:livefair", NULL, "fkn:livefair: lock removed (force unlock)\n",
                       "live fair lock");
        expect_removed("fkn:livefenced", NULL,
                       "fkn:livefenced: fenced lock removed (force unlock)\n", "live fenced lock");
        expect_removed("fkn:liverw", NULL, "fkn:liverw: read-write lock removed (force unlock)\n",
                       "live read-write lock");
        rlk_lock_free(l);
        rlk_fairlock_free(f);
        rlk_fenced_free(fe);
        rlk_rwlock_free(rw);
    }
    rlk_free(c);
}

/* rlk unlock --queue with each fixture of another type than the list (queue) or the sorted set
 * (deadlines) at one of the fair lock's two keys: refused, nothing deleted. */
static void test_queue_keys(void)
{
    static const struct {
        const char *prefix, *type_setup;
    } keys[] = {{"redisson_lock_queue", "RPUSH"}, {"redisson_lock_timeout", "ZADD"}};
    int n = 0;

    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        for (size_t f = 0; f < NFIXTURES; f++) {
            const fixture *fx = &fixtures[f];
            char name[64], key[96], what[160];
            cli_result r;
            snap before;

            if (fx->live_lock || fx->live_count || strcmp(fx->setup[0], keys[k].type_setup) == 0)
                continue;   /* its own kind's type: cleared, not refused */
            snprintf(name, sizeof name, "fkq:%zu:%zu", k, f);
            snprintf(key, sizeof key, "%s:{%s}", keys[k].prefix, name);
            snprintf(what, sizeof what, "unlock --queue with %s at %s", fx->what, key);
            make(fx, key);
            before = take(key);
            r = RUN("unlock", "--queue", name);
            expect_status(&r, 4, what);
            expect_one_line_error(&r, what);
            same(&before, key, what);
            cli_result_free(&r);
            n++;
        }
    }
    printf("  %d runs\n", n);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s PATH_TO_RLK\n", argv[0]);
        return 2;
    }
    control = argc > 2 && strcmp(argv[2], "--control") == 0;
    control_named = argc > 2 && strcmp(argv[2], "--control-named") == 0;
    if (rlk_fx_start(&server, NULL) != 0 || rlk_fx_url(&server, -1, url, sizeof url) != 0 ||
        cli_setup(argv[1], url) != 0)
        return 1;
    if (!control_named)
        RUN_TEST(test_matrix);
    if (!control)
        RUN_TEST(test_named);
    if (!control && !control_named)
        RUN_TEST(test_queue_keys);
    cli_teardown();
    rlk_fx_stop(&server);
    return check_summary("it_cli_foreign");
}
