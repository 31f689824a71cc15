/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pg_fence.c - sql/rlk_fence.sql against a real PostgreSQL server (c/tests/fence/with-postgres
 * starts one and sets PGHOST/PGPORT/PGUSER/PGDATABASE and RLK_PG_BIN).
 *
 *   pg_fence SQL_FILE OLD_SQL   install SQL_FILE (twice), then every case below; OLD_SQL
 *                               (rlk_fence_0.sql, the SQL released before the schema rlk) is the
 *                               install the upgrade case starts from
 *   pg_fence --control OLD_SQL  install OLD_SQL and run the savepoint, temporary-table and
 *                               vanished-row cases on it: exit 0 when none of them held
 *
 * Cases, per isolation level (READ COMMITTED, REPEATABLE READ, SERIALIZABLE), each on its own fence:
 *   equal      the same token twice in one transaction and in a second one: passes
 *   stale      a token below the committed highest: RLK_FENCED <highest> (SQLSTATE RLKFE), the
 *              transaction's earlier insert rolls back (COMMIT answers ROLLBACK)
 *   wait_stale a stale transaction that checks while a newer one holds the fence's row waits for it,
 *              then is refused (READ COMMITTED: RLK_FENCED; REPEATABLE READ / SERIALIZABLE: 40001,
 *              and RLK_FENCED when retried); its insert rolls back
 *   wait_newer a newer transaction waiting behind an older one passes (at once under READ
 *              COMMITTED, after a 40001 retry otherwise)
 *   new_fence  two transactions create the same fence at once: the lower token is refused
 *   same_twice the same token from two connections at once: both pass
 *   stress     4 processes x 40 transactions with tokens from a sequence, random pauses: every
 *              committed transaction saw as its predecessor the token of the one committed before it
 *              (sorted by token, each row's "highest before" is the previous row's token: no two
 *              transactions passed on the same highest), stale ones refused (count printed, > 0)
 *   on_error_rollback  psql's ON_ERROR_ROLLBACK done by hand (SAVEPOINT, statement, RELEASE or
 *              ROLLBACK TO): an insert, a stale check, an insert, COMMIT: the check warns, COMMIT
 *              fails with RLK_FENCED, no row committed; a newer token the same way commits both
 *   plpgsql    a stale check in a plpgsql EXCEPTION WHEN OTHERS block, inserts around it: COMMIT
 *              fails, no row; a newer token in the same block commits
 *   temp_shadow temporary tables rlk_fence, fence and fence_xact in the session: a stale check is
 *              still refused, no row committed
 * Once:
 *   psql       psql -v ON_ERROR_ROLLBACK=on -f (a stale script, then a newer one): the stale rows do
 *              not commit, the newer one does
 *   vanish     the fence's row deleted (committed) between the check's INSERT and its SELECT ... FOR
 *              UPDATE (a statement trigger holds the check there on an advisory lock): the check
 *              returns a number, not NULL, and a lower token is refused afterwards
 *   lock_timeout  a holder stopped between its check and its COMMIT: a newer holder with
 *              lock_timeout 300ms gets 55P03 after >= 290 ms (and < 10 s); without it, it is still
 *              waiting after 1.5 s (the control), then passes when the old one commits and commits
 *   upgrade    in a database of its own: OLD_SQL installed, a fence at 70 and a role granted the old
 *              table, then SQL_FILE twice: the fence is in rlk.fence, the old table gone, the old
 *              name rlk_fence_check still refuses 60 and passes 80 as that role, a role without
 *              grants gets 42501
 * and rlk.fence_xact is empty at the end (each call deletes its own record).
 * Control (READ COMMITTED): the same stress on a planted check that reads the row without FOR
 * UPDATE must show two transactions passing on the same highest; the run fails if it does not.
 * Waiting is observed in pg_stat_activity (wait_event_type Lock), polled for at most 10 s.
 */
#define _POSIX_C_SOURCE 200809L

#include <libpq-fe.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int failures, checks;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);                                   \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static const char *const LEVELS[] = {"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"};
static const char *const SHORT[] = {"rc", "rr", "ser"};

/* The last WARNING a connection received (the check's refusal inside a savepoint). */
static char last_warning[512];

static void quiet(void *arg, const char *message)
{
    (void)arg; /* NOTICEs (such as "relation already exists, skipping") are expected */
    if (strncmp(message, "WARNING:", 8) == 0)
        snprintf(last_warning, sizeof last_warning, "%s", message);
}

/* --control: the cases run on the SQL released before the schema rlk (c/tests/fence/
 * rlk_fence_0.sql), whose names are rlk_fence_check and rlk_fence: run() rewrites the new names. */
static int old_names;

static void to_old_names(char *sql)
{
    static const char *const from[] = {"rlk.fence_check(", "rlk.fence "};
    static const char *const to[] = {"rlk_fence_check(", "rlk_fence "};
    for (int k = 0; k < 2; k++) {
        char *p;
        while ((p = strstr(sql, from[k])) != NULL) {
            /* both replacements are as long as what they replace */
            memcpy(p, to[k], strlen(to[k]));
        }
    }
}

static PGconn *connect_to(const char *conninfo)
{
    PGconn *c = PQconnectdb(conninfo);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pg_fence: connect: %s", PQerrorMessage(c));
        exit(1);
    }
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
}

static PGconn *connect_db(void)
{
    return connect_to("");
}

/* The outcome of one statement: ok, or the SQLSTATE and message of its error. */
typedef struct outcome {
    int ok;
    char state[6];
    char msg[256];
    char value[64]; /* first column of the first row, if any */
    char cmd[32];   /* command status, e.g. COMMIT or ROLLBACK */
} outcome;

static void take(PGresult *r, outcome *o)
{
    ExecStatusType st = PQresultStatus(r);
    const char *s;

    memset(o, 0, sizeof *o);
    o->ok = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
    if (!o->ok) {
        s = PQresultErrorField(r, PG_DIAG_SQLSTATE);
        snprintf(o->state, sizeof o->state, "%s", s ? s : "?");
        s = PQresultErrorField(r, PG_DIAG_MESSAGE_PRIMARY);
        snprintf(o->msg, sizeof o->msg, "%s", s ? s : PQresultErrorMessage(r));
    } else if (st == PGRES_TUPLES_OK && PQntuples(r) > 0) {
        snprintf(o->value, sizeof o->value, "%s", PQgetvalue(r, 0, 0));
    }
    snprintf(o->cmd, sizeof o->cmd, "%s", PQcmdStatus(r));
}

static outcome run(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static outcome run(PGconn *c, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    outcome o;
    PGresult *r;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    if (old_names)
        to_old_names(sql);
    r = PQexec(c, sql);
    take(r, &o);
    PQclear(r);
    return o;
}

static void must(PGconn *c, const char *sql)
{
    PGresult *r = PQexec(c, sql);
    outcome o;

    take(r, &o);
    PQclear(r);
    if (!o.ok) {
        fprintf(stderr, "pg_fence: %s: %s %s\n", sql, o.state, o.msg);
        exit(1);
    }
}

static long long value_ll(PGconn *c, const char *fmt, const char *arg)
{
    outcome o = run(c, fmt, arg);
    return o.ok && o.value[0] ? atoll(o.value) : -1;
}

/* Sends a statement without waiting for it. */
static void send_async(PGconn *c, const char *sql_in)
{
    char sql[1024];

    snprintf(sql, sizeof sql, "%s", sql_in);
    if (old_names)
        to_old_names(sql);
    if (!PQsendQuery(c, sql)) {
        fprintf(stderr, "pg_fence: send: %s", PQerrorMessage(c));
        exit(1);
    }
}

/* The result of the statement send_async sent, waiting at most 10 s. */
static outcome finish_async(PGconn *c)
{
    outcome o, last;
    PGresult *r;
    struct pollfd p = {.fd = PQsocket(c), .events = POLLIN};
    int waited = 0;

    memset(&last, 0, sizeof last);
    snprintf(last.msg, sizeof last.msg, "no result within 10 s");
    while (PQisBusy(c)) {
        if (waited >= 10000)
            return last;
        if (poll(&p, 1, 100) < 0)
            return last;
        waited += 100;
        if (!PQconsumeInput(c))
            return last;
    }
    while ((r = PQgetResult(c)) != NULL) {
        take(r, &o);
        last = o;
        PQclear(r);
    }
    return last;
}

/* Whether connection c's backend is waiting for a lock, polled for at most 10 s. */
static int waits_for_lock(PGconn *ctl, PGconn *c)
{
    char sql[160];
    struct timespec ts = {0, 20 * 1000 * 1000};

    snprintf(sql, sizeof sql, "SELECT wait_event_type FROM pg_stat_activity WHERE pid = %d",
             PQbackendPID(c));
    for (int i = 0; i < 500; i++) {
        outcome o = run(ctl, "%s", sql);
        if (o.ok && strcmp(o.value, "Lock") == 0)
            return 1;
        nanosleep(&ts, NULL);
    }
    return 0;
}

static void begin(PGconn *c, int level)
{
    outcome o = run(c, "BEGIN ISOLATION LEVEL %s", LEVELS[level]);
    CHECK(o.ok, "BEGIN: %s", o.msg);
    o = run(c, "SELECT 1"); /* the snapshot of REPEATABLE READ / SERIALIZABLE starts here */
    CHECK(o.ok, "SELECT 1: %s", o.msg);
}

static int is_fenced(const outcome *o, long long highest)
{
    char want[64];
    snprintf(want, sizeof want, "RLK_FENCED %lld", highest);
    return !o->ok && strcmp(o->state, "RLKFE") == 0 && strcmp(o->msg, want) == 0;
}

static long long highest(PGconn *c, const char *fence)
{
    return value_ll(c, "SELECT highest FROM rlk.fence WHERE fence = '%s'", fence);
}

static long long rows(PGconn *c, const char *fence)
{
    return value_ll(c, "SELECT count(*) FROM rlk_test_ledger WHERE fence = '%s'", fence);
}

static long long rows_by(PGconn *c, const char *fence, const char *who)
{
    char sql[200];
    snprintf(sql, sizeof sql, "SELECT count(*) FROM rlk_test_ledger WHERE fence = '%s' AND who = '%%s'",
             fence);
    return value_ll(c, sql, who);
}

static void seed(PGconn *c, const char *fence, long long token)
{
    outcome o = run(c, "SELECT rlk.fence_check('%s', %lld)", fence, token);
    CHECK(o.ok, "seed %s: %s", fence, o.msg);
}

static void case_equal(PGconn *a, int level)
{
    char f[32];
    outcome o;

    snprintf(f, sizeof f, "equal_%s", SHORT[level]);
    seed(a, f, 10);
    begin(a, level);
    o = run(a, "SELECT rlk.fence_check('%s', 10)", f);
    CHECK(o.ok && strcmp(o.value, "10") == 0, "[%s] equal: %s %s", LEVELS[level], o.msg, o.value);
    run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 10, 'a')", f);
    o = run(a, "SELECT rlk.fence_check('%s', 10)", f);
    CHECK(o.ok, "[%s] equal again: %s", LEVELS[level], o.msg);
    o = run(a, "COMMIT");
    CHECK(o.ok && strcmp(o.cmd, "COMMIT") == 0, "[%s] equal commit: %s %s", LEVELS[level], o.cmd, o.msg);
    begin(a, level);
    o = run(a, "SELECT rlk.fence_check('%s', 10)", f);
    CHECK(o.ok, "[%s] equal, next transaction: %s", LEVELS[level], o.msg);
    run(a, "COMMIT");
    CHECK(rows(a, f) == 1 && highest(a, f) == 10, "[%s] equal: rows %lld highest %lld", LEVELS[level],
          rows(a, f), highest(a, f));
}

static void case_stale(PGconn *a, int level)
{
    char f[32];
    outcome o;

    snprintf(f, sizeof f, "stale_%s", SHORT[level]);
    seed(a, f, 20);
    begin(a, level);
    o = run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'stale')", f);
    CHECK(o.ok, "[%s] stale insert: %s", LEVELS[level], o.msg);
    o = run(a, "SELECT rlk.fence_check('%s', 15)", f);
    CHECK(is_fenced(&o, 20), "[%s] stale: expected RLK_FENCED 20, got %s %s", LEVELS[level], o.state, o.msg);
    o = run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'after')", f);
    CHECK(!o.ok && strcmp(o.state, "25P02") == 0, "[%s] statement after the refusal: %s", LEVELS[level],
          o.state);
    o = run(a, "COMMIT");
    CHECK(strcmp(o.cmd, "ROLLBACK") == 0, "[%s] COMMIT of the refused transaction answered %s",
          LEVELS[level], o.cmd);
    CHECK(rows(a, f) == 0 && highest(a, f) == 20, "[%s] stale: rows %lld highest %lld", LEVELS[level],
          rows(a, f), highest(a, f));
}

static void case_wait_stale(PGconn *ctl, PGconn *a, PGconn *b, int level)
{
    char f[32], sql[128];
    outcome o;

    snprintf(f, sizeof f, "wstale_%s", SHORT[level]);
    seed(ctl, f, 20);
    begin(a, level); /* A: token 25, stale once B's 30 commits */
    run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 25, 'A')", f);
    begin(b, level);
    o = run(b, "SELECT rlk.fence_check('%s', 30)", f);
    CHECK(o.ok && strcmp(o.value, "20") == 0, "[%s] wait_stale B: %s", LEVELS[level], o.msg);
    run(b, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 30, 'B')", f);
    snprintf(sql, sizeof sql, "SELECT rlk.fence_check('%s', 25)", f);
    send_async(a, sql);
    CHECK(waits_for_lock(ctl, a), "[%s] wait_stale: A does not wait for B's row lock", LEVELS[level]);
    o = run(b, "COMMIT");
    CHECK(o.ok && strcmp(o.cmd, "COMMIT") == 0, "[%s] wait_stale B commit: %s", LEVELS[level], o.msg);
    o = finish_async(a);
    if (level == 0)
        CHECK(is_fenced(&o, 30), "[%s] wait_stale A: expected RLK_FENCED 30, got %s %s", LEVELS[level],
              o.state, o.msg);
    else
        CHECK(!o.ok && strcmp(o.state, "40001") == 0, "[%s] wait_stale A: expected 40001, got %s %s",
              LEVELS[level], o.state, o.msg);
    printf("[%s] wait_stale: the stale transaction got %s (%s)\n", LEVELS[level], o.state, o.msg);
    run(a, "ROLLBACK");
    begin(a, level); /* the retry a 40001 calls for */
    o = run(a, "SELECT rlk.fence_check('%s', 25)", f);
    CHECK(is_fenced(&o, 30), "[%s] wait_stale A retried: %s %s", LEVELS[level], o.state, o.msg);
    run(a, "ROLLBACK");
    CHECK(rows_by(ctl, f, "A") == 0 && rows_by(ctl, f, "B") == 1 && highest(ctl, f) == 30,
          "[%s] wait_stale: A rows %lld, B rows %lld, highest %lld", LEVELS[level], rows_by(ctl, f, "A"),
          rows_by(ctl, f, "B"), highest(ctl, f));
}

static void case_wait_newer(PGconn *ctl, PGconn *a, PGconn *b, int level)
{
    char f[32], sql[128];
    outcome o;

    snprintf(f, sizeof f, "wnewer_%s", SHORT[level]);
    seed(ctl, f, 20);
    begin(a, level);
    o = run(a, "SELECT rlk.fence_check('%s', 25)", f);
    CHECK(o.ok, "[%s] wait_newer A: %s", LEVELS[level], o.msg);
    run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 25, 'A')", f);
    begin(b, level);
    snprintf(sql, sizeof sql, "SELECT rlk.fence_check('%s', 30)", f);
    send_async(b, sql);
    CHECK(waits_for_lock(ctl, b), "[%s] wait_newer: B does not wait for A's row lock", LEVELS[level]);
    o = run(a, "COMMIT");
    CHECK(o.ok && strcmp(o.cmd, "COMMIT") == 0, "[%s] wait_newer A commit: %s", LEVELS[level], o.msg);
    o = finish_async(b);
    if (level == 0) {
        CHECK(o.ok && strcmp(o.value, "25") == 0, "[%s] wait_newer B: %s %s", LEVELS[level], o.state, o.msg);
    } else {
        CHECK(!o.ok && strcmp(o.state, "40001") == 0, "[%s] wait_newer B: expected 40001, got %s %s",
              LEVELS[level], o.state, o.msg);
        run(b, "ROLLBACK");
        begin(b, level);
        o = run(b, "SELECT rlk.fence_check('%s', 30)", f);
        CHECK(o.ok && strcmp(o.value, "25") == 0, "[%s] wait_newer B retried: %s", LEVELS[level], o.msg);
    }
    run(b, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 30, 'B')", f);
    o = run(b, "COMMIT");
    CHECK(o.ok && strcmp(o.cmd, "COMMIT") == 0, "[%s] wait_newer B commit: %s", LEVELS[level], o.msg);
    CHECK(rows(ctl, f) == 2 && highest(ctl, f) == 30, "[%s] wait_newer: rows %lld highest %lld",
          LEVELS[level], rows(ctl, f), highest(ctl, f));
}

static void case_new_fence(PGconn *ctl, PGconn *a, PGconn *b, int level)
{
    char f[32], sql[128];
    outcome o;

    snprintf(f, sizeof f, "new_%s", SHORT[level]);
    begin(a, level);
    o = run(a, "SELECT rlk.fence_check('%s', 5)", f);
    CHECK(o.ok && strcmp(o.value, "0") == 0, "[%s] new_fence A: %s %s", LEVELS[level], o.msg, o.value);
    begin(b, level);
    run(b, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 3, 'B')", f);
    snprintf(sql, sizeof sql, "SELECT rlk.fence_check('%s', 3)", f);
    send_async(b, sql);
    CHECK(waits_for_lock(ctl, b), "[%s] new_fence: B does not wait for A's new row", LEVELS[level]);
    run(a, "COMMIT");
    o = finish_async(b);
    CHECK(is_fenced(&o, 5) || (level > 0 && !o.ok && strcmp(o.state, "40001") == 0),
          "[%s] new_fence B: %s %s", LEVELS[level], o.state, o.msg);
    printf("[%s] new_fence: the lower token got %s (%s)\n", LEVELS[level], o.state, o.msg);
    run(b, "ROLLBACK");
    CHECK(rows(ctl, f) == 0 && highest(ctl, f) == 5, "[%s] new_fence: rows %lld highest %lld", LEVELS[level],
          rows(ctl, f), highest(ctl, f));
}

static void case_same_twice(PGconn *ctl, PGconn *a, PGconn *b, int level)
{
    char f[32], sql[128];
    outcome o;

    snprintf(f, sizeof f, "same_%s", SHORT[level]);
    seed(ctl, f, 30);
    begin(a, level);
    begin(b, level);
    o = run(a, "SELECT rlk.fence_check('%s', 30)", f);
    CHECK(o.ok, "[%s] same_twice A: %s", LEVELS[level], o.msg);
    snprintf(sql, sizeof sql, "SELECT rlk.fence_check('%s', 30)", f);
    send_async(b, sql);
    CHECK(waits_for_lock(ctl, b), "[%s] same_twice: B does not wait", LEVELS[level]);
    run(a, "COMMIT");
    o = finish_async(b);
    CHECK(o.ok && strcmp(o.value, "30") == 0, "[%s] same_twice B: %s %s", LEVELS[level], o.state, o.msg);
    o = run(b, "COMMIT");
    CHECK(o.ok && strcmp(o.cmd, "COMMIT") == 0, "[%s] same_twice B commit: %s", LEVELS[level], o.cmd);
}

/* ------------------------------------------------------------ stress */

#define WORKERS 4
#define PER_WORKER 40

static void worker(const char *fn, const char *fence, int level, unsigned seed, int out)
{
    PGconn *c = connect_db();
    int stats[3] = {0, 0, 0}; /* accepted, refused, serialization retries */
    struct timespec ts;

    srand(seed);
    for (int i = 0; i < PER_WORKER; i++) {
        outcome o = run(c, "SELECT nextval('rlk_test_tokens')");
        long long token = atoll(o.value);
        for (int attempt = 0; attempt < 50; attempt++) {
            ts.tv_sec = 0;
            ts.tv_nsec = (long)(rand() % 2000) * 1000; /* a pause between the token and its use */
            nanosleep(&ts, NULL);
            run(c, "BEGIN ISOLATION LEVEL %s", LEVELS[level]);
            o = run(c, "INSERT INTO rlk_test_ledger (fence, token, prev, who) SELECT '%s', %lld, %s('%s', %lld), "
                       "'w'", fence, token, fn, fence, token);
            if (o.ok)
                o = run(c, "COMMIT");
            else
                run(c, "ROLLBACK");
            if (o.ok && strcmp(o.cmd, "COMMIT") == 0) {
                stats[0]++;
                break;
            }
            if (strcmp(o.state, "RLKFE") == 0) {
                stats[1]++;
                break;
            }
            if (strcmp(o.state, "40001") == 0 || strcmp(o.state, "40P01") == 0) {
                stats[2]++;
                continue;
            }
            fprintf(stderr, "pg_fence: worker: unexpected %s %s\n", o.state, o.msg);
            break;
        }
    }
    if (write(out, stats, sizeof stats) != (ssize_t)sizeof stats)
        _exit(1);
    PQfinish(c);
    _exit(0);
}

/* Runs the stress on check function fn; returns the number of transactions that passed on a highest
 * another passed on too (0 when the check serialises them). */
static int stress(PGconn *ctl, const char *fn, const char *fence, int level, int *refused_out)
{
    int p[2], totals[3] = {0, 0, 0}, forks = 0, status;
    pid_t pids[WORKERS];
    PGresult *r;
    long long prev_token = 0;

    if (pipe(p) != 0)
        return -1;
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            close(p[0]);
            worker(fn, fence, level, 1234u + (unsigned)w * 7u + (unsigned)level, p[1]);
        }
    }
    close(p[1]);
    for (int w = 0; w < WORKERS; w++) {
        int s[3];
        if (read(p[0], s, sizeof s) == (ssize_t)sizeof s)
            for (int k = 0; k < 3; k++)
                totals[k] += s[k];
    }
    close(p[0]);
    for (int w = 0; w < WORKERS; w++)
        waitpid(pids[w], &status, 0);
    {
        char sql[160];
        snprintf(sql, sizeof sql, "SELECT token, prev FROM rlk_test_ledger WHERE fence = '%s' ORDER BY token",
                 fence);
        r = PQexec(ctl, sql);
    }
    for (int i = 0; i < PQntuples(r); i++) {
        long long token = atoll(PQgetvalue(r, i, 0)), prev = atoll(PQgetvalue(r, i, 1));
        if (prev != prev_token)
            forks++;
        prev_token = token;
    }
    printf("[%s] stress (%s): %d accepted, %d stale refused, %d serialization retries, %d rows, "
           "%d passed on a highest another passed on\n",
           LEVELS[level], fn, totals[0], totals[1], totals[2], PQntuples(r), forks);
    CHECK(PQntuples(r) == totals[0], "[%s] stress: %d rows for %d accepted", LEVELS[level], PQntuples(r),
          totals[0]);
    CHECK(totals[0] + totals[1] == WORKERS * PER_WORKER, "[%s] stress: %d + %d transactions ended",
          LEVELS[level], totals[0], totals[1]);
    PQclear(r);
    *refused_out = totals[1];
    return forks;
}

/* ------------------------------------------------------------ savepoints, search_path, vanished row,
 * lock_timeout. Each "held" case returns whether the property held; the main run requires it, the
 * --control run (the SQL released before the schema rlk) requires that it did not. */

/* Ends whatever transaction c is in. */
static void end_xact(PGconn *c)
{
    if (PQtransactionStatus(c) != PQTRANS_IDLE)
        run(c, "ROLLBACK");
}

static int committed(const outcome *o)
{
    return o->ok && strcmp(o->cmd, "COMMIT") == 0;
}

/* One statement as psql runs it with ON_ERROR_ROLLBACK on inside a transaction block (psql's
 * SendQuery): SAVEPOINT, the statement, then RELEASE, or ROLLBACK TO on an error. */
static outcome on_error_rollback(PGconn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static outcome on_error_rollback(PGconn *c, const char *fmt, ...)
{
    char sql[1024];
    va_list ap;
    outcome o;

    va_start(ap, fmt);
    vsnprintf(sql, sizeof sql, fmt, ap);
    va_end(ap);
    run(c, "SAVEPOINT pg_psql_temporary_savepoint");
    o = run(c, "%s", sql);
    run(c, o.ok ? "RELEASE pg_psql_temporary_savepoint" : "ROLLBACK TO pg_psql_temporary_savepoint");
    return o;
}

/* Stale writes, one before and one after a stale check, each statement under its own savepoint
 * (ON_ERROR_ROLLBACK): nothing commits. Then a newer token the same way: everything commits. */
static int case_on_error_rollback(PGconn *ctl, PGconn *a, int level)
{
    char f[32];
    outcome chk, c;
    int held;

    snprintf(f, sizeof f, "oer_%s", SHORT[level]);
    seed(ctl, f, 20);
    begin(a, level);
    last_warning[0] = 0;
    on_error_rollback(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'before')", f);
    chk = on_error_rollback(a, "SELECT rlk.fence_check('%s', 15)", f);
    on_error_rollback(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'after')", f);
    c = run(a, "COMMIT");
    end_xact(a);
    held = !committed(&c) && rows(ctl, f) == 0 && highest(ctl, f) == 20;
    if (strchr(last_warning, '\n'))
        *strchr(last_warning, '\n') = 0;
    printf("[%s] on_error_rollback, stale: check %s %s, warning \"%s\", COMMIT %s %s %s, %lld rows "
           "committed\n", LEVELS[level], chk.ok ? "returned" : chk.state, chk.ok ? chk.value : chk.msg,
           last_warning, c.cmd, c.state, c.msg, rows(ctl, f));
    if (!old_names) {
        CHECK(chk.ok && strcmp(chk.value, "20") == 0 && strstr(last_warning, "RLK_FENCED 20"),
              "[%s] on_error_rollback: the stale check inside a savepoint: %s %s, warning %s", LEVELS[level],
              chk.state, chk.msg, last_warning);
        CHECK(is_fenced(&c, 20), "[%s] on_error_rollback: COMMIT answered %s %s %s", LEVELS[level], c.cmd,
              c.state, c.msg);
        /* the newest holder, the same way: commits */
        begin(a, level);
        on_error_rollback(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 25, 'before')", f);
        chk = on_error_rollback(a, "SELECT rlk.fence_check('%s', 25)", f);
        on_error_rollback(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 25, 'after')", f);
        c = run(a, "COMMIT");
        end_xact(a);
        CHECK(chk.ok && committed(&c) && rows(ctl, f) == 2 && highest(ctl, f) == 25,
              "[%s] on_error_rollback, newer: check %s, COMMIT %s %s, rows %lld, highest %lld", LEVELS[level],
              chk.msg, c.cmd, c.msg, rows(ctl, f), highest(ctl, f));
    }
    return held;
}

/* The same through psql itself (-v ON_ERROR_ROLLBACK=on, a script file). */
static int case_psql(PGconn *ctl)
{
    const char *bin = getenv("RLK_PG_BIN");
    char path[256], cmd[512], line[512];
    FILE *fp;
    int held, i;

    if (!bin) {
        printf("psql, ON_ERROR_ROLLBACK: RLK_PG_BIN not set (with-postgres sets it): not run\n");
        return old_names ? 0 : 1;
    }
    seed(ctl, "psql", 20);
    snprintf(path, sizeof path, "%s/rlk-pg-fence-%d.sql", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
             (int)getpid());
    fp = fopen(path, "w");
    if (!fp) {
        perror(path);
        exit(1);
    }
    fprintf(fp, "BEGIN;\n"
                "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('psql', 15, 'before');\n"
                "SELECT %s('psql', 15);\n"
                "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('psql', 15, 'after');\n"
                "COMMIT;\n"
                "BEGIN;\n"
                "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('psql', 25, 'newer');\n"
                "SELECT %s('psql', 25);\n"
                "COMMIT;\n",
            old_names ? "rlk_fence_check" : "rlk.fence_check", old_names ? "rlk_fence_check" : "rlk.fence_check");
    fclose(fp);
    snprintf(cmd, sizeof cmd, "'%s/psql' -X -q -v ON_ERROR_ROLLBACK=on -f '%s' 2>&1", bin, path);
    fp = popen(cmd, "r");
    for (i = 0; fp && fgets(line, sizeof line, fp); i++)
        printf("  psql: %s", line);
    if (fp)
        pclose(fp);
    unlink(path);
    held = rows_by(ctl, "psql", "before") == 0 && rows_by(ctl, "psql", "after") == 0;
    printf("psql -v ON_ERROR_ROLLBACK=on, stale: %lld of 2 rows committed\n",
           rows_by(ctl, "psql", "before") + rows_by(ctl, "psql", "after"));
    if (!old_names)
        CHECK(rows_by(ctl, "psql", "newer") == 1 && highest(ctl, "psql") == 25,
              "psql, newer: rows %lld, highest %lld", rows_by(ctl, "psql", "newer"), highest(ctl, "psql"));
    return held;
}

/* A plpgsql EXCEPTION block swallows what the check says; the writes around it must still not
 * commit. Then a newer token in the same block: commits. */
static int case_plpgsql(PGconn *ctl, PGconn *a, int level)
{
    char f[32];
    outcome d, c;
    int held;

    snprintf(f, sizeof f, "plpgsql_%s", SHORT[level]);
    seed(ctl, f, 20);
    begin(a, level);
    run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'before')", f);
    d = run(a, "DO $$ BEGIN BEGIN PERFORM rlk.fence_check('%s', 15); "
               "EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'swallowed: %%', SQLERRM; END; "
               "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'after'); END $$",
            f, f);
    c = run(a, "COMMIT");
    end_xact(a);
    held = !committed(&c) && rows(ctl, f) == 0 && highest(ctl, f) == 20;
    printf("[%s] plpgsql EXCEPTION block, stale: DO %s, COMMIT %s %s %s, %lld rows committed\n", LEVELS[level],
           d.ok ? "ok" : d.msg, c.cmd, c.state, c.msg, rows(ctl, f));
    if (!old_names) {
        CHECK(is_fenced(&c, 20), "[%s] plpgsql: COMMIT answered %s %s %s", LEVELS[level], c.cmd, c.state, c.msg);
        begin(a, level);
        d = run(a, "DO $$ BEGIN BEGIN PERFORM rlk.fence_check('%s', 25); "
                   "EXCEPTION WHEN OTHERS THEN RAISE NOTICE 'swallowed: %%', SQLERRM; END; "
                   "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 25, 'newer'); END $$",
                f, f);
        c = run(a, "COMMIT");
        end_xact(a);
        CHECK(d.ok && committed(&c) && rows(ctl, f) == 1 && highest(ctl, f) == 25,
              "[%s] plpgsql, newer: DO %s, COMMIT %s %s, rows %lld, highest %lld", LEVELS[level], d.msg, c.cmd,
              c.msg, rows(ctl, f), highest(ctl, f));
    }
    return held;
}

/* Temporary tables named like the fence's objects (pg_temp is searched first for relations) must
 * not stand in for it. */
static int case_temp_shadow(PGconn *ctl, int level)
{
    char f[32];
    PGconn *s = connect_db();
    outcome chk, c;
    int held;

    snprintf(f, sizeof f, "shadow_%s", SHORT[level]);
    seed(ctl, f, 20);
    must(s, "CREATE TEMP TABLE rlk_fence (fence text PRIMARY KEY, highest bigint NOT NULL)");
    must(s, "CREATE TEMP TABLE fence (fence text PRIMARY KEY, highest bigint NOT NULL)");
    must(s, "CREATE TEMP TABLE fence_xact (fence text, token bigint, refused bigint)");
    begin(s, level);
    run(s, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'before')", f);
    chk = run(s, "SELECT rlk.fence_check('%s', 15)", f);
    run(s, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 15, 'after')", f);
    c = run(s, "COMMIT");
    held = !committed(&c) && rows(ctl, f) == 0 && highest(ctl, f) == 20;
    printf("[%s] temp tables rlk_fence, fence, fence_xact, stale: check %s %s%s, COMMIT %s, %lld rows "
           "committed\n", LEVELS[level], chk.ok ? "returned" : chk.state, chk.ok ? chk.value : chk.msg,
           chk.ok ? " (the temp table's)" : "", c.cmd, rows(ctl, f));
    if (!old_names)
        CHECK(is_fenced(&chk, 20), "[%s] temp shadow: the check answered %s %s %s", LEVELS[level], chk.state,
              chk.msg, chk.value);
    PQfinish(s);
    return held;
}

/* The fence's row deleted (and the delete committed) between the check's INSERT ... ON CONFLICT DO
 * NOTHING and its SELECT ... FOR UPDATE: a statement trigger on the table holds the check there
 * (an advisory lock the control connection keeps) while the row is deleted. The check must not pass
 * without a row: the token it passes is recorded, so a lower one is refused afterwards. */
static int case_vanish(PGconn *ctl, PGconn *a)
{
    outcome o, low;
    int held;

    seed(ctl, "vanish", 10);
    must(ctl, "CREATE FUNCTION rlk_test_pause() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
              "PERFORM pg_advisory_lock_shared(4242); PERFORM pg_advisory_unlock_shared(4242); "
              "RETURN NULL; END $$");
    o = run(ctl, "CREATE TRIGGER rlk_test_pause AFTER INSERT ON rlk.fence FOR EACH STATEMENT "
                 "EXECUTE PROCEDURE rlk_test_pause()");
    CHECK(o.ok, "vanish: trigger: %s", o.msg);
    must(ctl, "SELECT pg_advisory_lock(4242)");
    begin(a, 0);
    send_async(a, "SELECT rlk.fence_check('vanish', 50)");
    CHECK(waits_for_lock(ctl, a), "vanish: the check does not wait in the trigger");
    o = run(ctl, "DELETE FROM rlk.fence WHERE fence = 'vanish'");
    must(ctl, "SELECT pg_advisory_unlock(4242)");
    o = finish_async(a);
    run(a, "COMMIT");
    end_xact(a);
    run(ctl, "DROP TRIGGER rlk_test_pause ON rlk.fence ");
    run(ctl, "DROP FUNCTION rlk_test_pause()");
    low = run(a, "SELECT rlk.fence_check('vanish', 40)");
    held = o.ok && o.value[0] != 0 && is_fenced(&low, 50);
    printf("vanished row: the check of 50 returned %s%s, then 40 got %s %s (highest now %lld)\n",
           o.ok ? (o.value[0] ? o.value : "NULL") : o.state, o.ok ? "" : o.msg, low.ok ? "passed" : low.state,
           low.ok ? low.value : low.msg, highest(ctl, "vanish"));
    return held;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A holder paused between its check and its COMMIT. A newer holder with lock_timeout set gets
 * SQLSTATE 55P03 once its wait reaches the timeout; without it, it is still waiting at 5 times the
 * timeout (the control), and passes once the old holder commits; the newest holder then commits. */
static void case_lock_timeout(PGconn *ctl, PGconn *a, PGconn *b)
{
    outcome o;
    double t0, waited;
    int busy = 1;

    seed(ctl, "paused", 20);
    begin(a, 0);
    o = run(a, "SELECT rlk.fence_check('paused', 25)"); /* ... and A stops here */
    CHECK(o.ok, "lock_timeout: A: %s", o.msg);
    begin(b, 0);
    run(b, "SET LOCAL lock_timeout = '300ms'");
    t0 = now_ms();
    send_async(b, "SELECT rlk.fence_check('paused', 30)");
    o = finish_async(b);
    waited = now_ms() - t0;
    printf("lock_timeout 300ms: the newer holder's check got %s (%s) after %.0f ms\n", o.state, o.msg, waited);
    CHECK(!o.ok && strcmp(o.state, "55P03") == 0 && waited >= 290 && waited < 10000,
          "lock_timeout: B got %s %s after %.0f ms", o.state, o.msg, waited);
    run(b, "ROLLBACK");
    /* the control: no lock_timeout, B waits for as long as A stays stopped */
    begin(b, 0);
    send_async(b, "SELECT rlk.fence_check('paused', 30)");
    CHECK(waits_for_lock(ctl, b), "lock_timeout control: B does not wait");
    t0 = now_ms();
    while (now_ms() - t0 < 1500 && busy) {
        struct pollfd p = {.fd = PQsocket(b), .events = POLLIN};
        poll(&p, 1, 100);
        busy = PQconsumeInput(b) && PQisBusy(b);
    }
    CHECK(busy, "lock_timeout control: without lock_timeout B's check ended within 1.5 s");
    printf("without lock_timeout: the newer holder's check still waits after 1.5 s (5 x the timeout)\n");
    o = run(a, "COMMIT");
    CHECK(committed(&o), "lock_timeout: A's COMMIT: %s %s", o.cmd, o.msg);
    o = finish_async(b);
    CHECK(o.ok && strcmp(o.value, "25") == 0, "lock_timeout: B after A's commit: %s %s", o.state, o.msg);
    run(b, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('paused', 30, 'B')");
    o = run(b, "COMMIT");
    CHECK(committed(&o) && rows_by(ctl, "paused", "B") == 1 && highest(ctl, "paused") == 30,
          "lock_timeout: the newest holder's COMMIT: %s %s, highest %lld", o.cmd, o.msg, highest(ctl, "paused"));
}

/* An install of the SQL released before the schema rlk, with a fence and a role granted the old
 * table, upgraded by running the new file (twice): the fence's highest and the role's right to
 * check are kept, the old name still works, the old table is gone. In a database of its own. */
static void case_upgrade(PGconn *ctl, const char *old_sql, const char *new_sql)
{
    PGconn *u;
    outcome o;

    must(ctl, "CREATE DATABASE rlk_upgrade");
    must(ctl, "CREATE ROLE rlk_test_app");
    u = connect_to("dbname=rlk_upgrade");
    must(u, old_sql);
    must(u, "SELECT rlk_fence_check('up', 70)");
    must(u, "GRANT SELECT, INSERT, UPDATE ON rlk_fence TO rlk_test_app");
    must(u, new_sql);
    must(u, new_sql);
    CHECK(highest(u, "up") == 70, "upgrade: rlk.fence has up at %lld", highest(u, "up"));
    o = run(u, "SELECT to_regclass('public.rlk_fence') IS NULL");
    CHECK(o.ok && strcmp(o.value, "t") == 0, "upgrade: public.rlk_fence still there");
    must(u, "SET ROLE rlk_test_app");
    o = run(u, "SELECT rlk_fence_check('up', 60)");
    CHECK(is_fenced(&o, 70), "upgrade: the old name, stale: %s %s", o.state, o.msg);
    o = run(u, "SELECT rlk_fence_check('up', 80)");
    CHECK(o.ok && strcmp(o.value, "70") == 0, "upgrade: the old name, newer, as the granted role: %s %s",
          o.state, o.msg);
    o = run(u, "SELECT rlk.fence_check('up', 80)");
    CHECK(o.ok && strcmp(o.value, "80") == 0, "upgrade: rlk.fence_check as the granted role: %s", o.msg);
    must(u, "RESET ROLE");
    must(u, "CREATE ROLE rlk_test_other");
    must(u, "SET ROLE rlk_test_other");
    o = run(u, "SELECT rlk.fence_check('up', 90)");
    CHECK(!o.ok && strcmp(o.state, "42501") == 0, "upgrade: a role without grants: %s %s", o.state, o.msg);
    must(u, "RESET ROLE");
    CHECK(highest(u, "up") == 80, "upgrade: highest %lld", highest(u, "up"));
    printf("upgrade from rlk_fence_0.sql: fence kept (70), old table dropped, rlk_fence_check and the "
           "granted role still work, a role without grants gets 42501\n");
    PQfinish(u);
}

static char *slurp(const char *path)
{
    FILE *fp = fopen(path, "rb");
    char *text;
    long n;

    if (!fp || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        perror(path);
        exit(1);
    }
    text = calloc(1, (size_t)n + 1);
    if (!text || fread(text, 1, (size_t)n, fp) != (size_t)n) {
        perror(path);
        exit(1);
    }
    fclose(fp);
    return text;
}

/* The savepoint, search_path and vanished-row cases; returns how many held. */
static int new_cases(PGconn *ctl, PGconn *a, int *total)
{
    int held = 0;

    *total = 0;
    for (int level = 0; level < 3; level++) {
        int h = case_on_error_rollback(ctl, a, level);
        if (!old_names)
            CHECK(h, "[%s] on_error_rollback: stale writes committed", LEVELS[level]);
        held += h;
        h = case_plpgsql(ctl, a, level);
        if (!old_names)
            CHECK(h, "[%s] plpgsql EXCEPTION block: stale writes committed", LEVELS[level]);
        held += h;
        h = case_temp_shadow(ctl, level);
        if (!old_names)
            CHECK(h, "[%s] temp table: a stale token passed", LEVELS[level]);
        held += h;
        *total += 3;
    }
    {
        int h = case_psql(ctl);
        if (!old_names)
            CHECK(h, "psql ON_ERROR_ROLLBACK: stale writes committed");
        held += h;
        h = case_vanish(ctl, a);
        if (!old_names)
            CHECK(h, "vanished row: the check passed without recording the token");
        held += h;
        *total += 2;
    }
    return held;
}

int main(int argc, char **argv)
{
    PGconn *ctl, *a, *b;
    char *sql, *old_sql = NULL;
    int refused, forks, held, total, control;

    control = argc == 3 && strcmp(argv[1], "--control") == 0;
    if (argc != 3) {
        fprintf(stderr, "usage: pg_fence SQL_FILE OLD_SQL_FILE | pg_fence --control OLD_SQL_FILE\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    ctl = connect_db();
    must(ctl, "CREATE TABLE rlk_test_ledger (id serial PRIMARY KEY, fence text, token bigint, prev bigint, "
              "who text)");
    if (control) {
        /* The cases must catch the faults of the SQL released before the schema rlk. */
        old_names = 1;
        sql = slurp(argv[2]);
        must(ctl, sql);
        free(sql);
        a = connect_db();
        held = new_cases(ctl, a, &total);
        printf("control (rlk_fence_0.sql): %d of %d cases held (must be 0)\n", held, total);
        PQfinish(a);
        PQfinish(ctl);
        return held == 0 ? 0 : 1;
    }
    sql = slurp(argv[1]);
    old_sql = slurp(argv[2]);
    must(ctl, sql);
    must(ctl, sql); /* installing twice is harmless */
    must(ctl, "CREATE SEQUENCE rlk_test_tokens START 1000");
    /* The control: the same function without the row lock (a read, a pause, an update). */
    must(ctl, "CREATE FUNCTION rlk_test_unlocked_check(fence text, token bigint) RETURNS bigint "
              "LANGUAGE plpgsql AS $$ DECLARE prev bigint; BEGIN "
              "INSERT INTO rlk.fence AS f (fence, highest) VALUES (rlk_test_unlocked_check.fence, 0) "
              "ON CONFLICT ON CONSTRAINT fence_pkey DO NOTHING; "
              "SELECT f.highest INTO prev FROM rlk.fence AS f WHERE f.fence = rlk_test_unlocked_check.fence; "
              "PERFORM pg_sleep(0.002); "
              "IF token < prev THEN RAISE EXCEPTION 'RLK_FENCED %', prev USING ERRCODE = 'RLKFE'; END IF; "
              "UPDATE rlk.fence AS f SET highest = greatest(f.highest, token) "
              "WHERE f.fence = rlk_test_unlocked_check.fence; RETURN prev; END $$");
    a = connect_db();
    b = connect_db();

    {
        outcome o = run(ctl, "SELECT rlk.fence_check('', 1)");
        CHECK(!o.ok && strncmp(o.msg, "RLK_BADARG", 10) == 0, "empty fence: %s", o.msg);
        o = run(ctl, "SELECT rlk.fence_check('x', 0)");
        CHECK(!o.ok && strncmp(o.msg, "RLK_BADTOKEN", 12) == 0, "token 0: %s", o.msg);
        o = run(ctl, "SELECT rlk.fence_check('x', NULL)");
        CHECK(!o.ok && strncmp(o.msg, "RLK_BADTOKEN", 12) == 0, "token NULL: %s", o.msg);
    }
    for (int level = 0; level < 3; level++) {
        char fence[32];
        int before = failures;

        case_equal(a, level);
        case_stale(a, level);
        case_wait_stale(ctl, a, b, level);
        case_wait_newer(ctl, a, b, level);
        case_new_fence(ctl, a, b, level);
        case_same_twice(ctl, a, b, level);
        snprintf(fence, sizeof fence, "stress_%s", SHORT[level]);
        forks = stress(ctl, "rlk.fence_check", fence, level, &refused);
        CHECK(forks == 0, "[%s] stress: %d transactions passed on a highest another passed on", LEVELS[level],
              forks);
        CHECK(refused > 0, "[%s] stress: no stale transaction was refused", LEVELS[level]);
        printf("[%s] %s\n", LEVELS[level], failures == before ? "all cases pass" : "FAILED");
    }
    held = new_cases(ctl, a, &total);
    printf("savepoints, temp tables, vanished row: %d of %d cases held\n", held, total);
    case_lock_timeout(ctl, a, b);
    {
        outcome o = run(ctl, "SELECT count(*) FROM rlk.fence_xact");
        CHECK(o.ok && strcmp(o.value, "0") == 0, "rlk.fence_xact keeps %s rows", o.value);
    }
    case_upgrade(ctl, old_sql, sql);
    forks = stress(ctl, "rlk_test_unlocked_check", "control_rc", 0, &refused);
    CHECK(forks > 0, "control: the check without a row lock let no two transactions pass on one highest");
    printf("control (no row lock, READ COMMITTED): %d transactions passed on a highest another passed on "
           "(must be > 0)\n", forks);
    free(sql);
    free(old_sql);
    PQfinish(a);
    PQfinish(b);
    PQfinish(ctl);
    printf("pg_fence: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
