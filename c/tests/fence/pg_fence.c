/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pg_fence.c - sql/rlk_fence.sql against a real PostgreSQL server (c/tests/fence/with-postgres
 * starts one and sets PGHOST/PGPORT/PGUSER/PGDATABASE).
 *
 *   pg_fence SQL_FILE           install SQL_FILE, then every case at READ COMMITTED, REPEATABLE
 *                               READ and SERIALIZABLE
 *
 * Cases, per isolation level, each on its own fence name:
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

static void quiet(void *arg, const char *message)
{
    (void)arg;
    (void)message; /* NOTICEs (such as "relation already exists, skipping") are expected */
}

static PGconn *connect_db(void)
{
    PGconn *c = PQconnectdb("");
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "pg_fence: connect: %s", PQerrorMessage(c));
        exit(1);
    }
    PQsetNoticeProcessor(c, quiet, NULL);
    return c;
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
static void send_async(PGconn *c, const char *sql)
{
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
    return value_ll(c, "SELECT highest FROM rlk_fence WHERE fence = '%s'", fence);
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
    outcome o = run(c, "SELECT rlk_fence_check('%s', %lld)", fence, token);
    CHECK(o.ok, "seed %s: %s", fence, o.msg);
}

static void case_equal(PGconn *a, int level)
{
    char f[32];
    outcome o;

    snprintf(f, sizeof f, "equal_%s", SHORT[level]);
    seed(a, f, 10);
    begin(a, level);
    o = run(a, "SELECT rlk_fence_check('%s', 10)", f);
    CHECK(o.ok && strcmp(o.value, "10") == 0, "[%s] equal: %s %s", LEVELS[level], o.msg, o.value);
    run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 10, 'a')", f);
    o = run(a, "SELECT rlk_fence_check('%s', 10)", f);
    CHECK(o.ok, "[%s] equal again: %s", LEVELS[level], o.msg);
    o = run(a, "COMMIT");
    CHECK(o.ok && strcmp(o.cmd, "COMMIT") == 0, "[%s] equal commit: %s %s", LEVELS[level], o.cmd, o.msg);
    begin(a, level);
    o = run(a, "SELECT rlk_fence_check('%s', 10)", f);
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
    o = run(a, "SELECT rlk_fence_check('%s', 15)", f);
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
    o = run(b, "SELECT rlk_fence_check('%s', 30)", f);
    CHECK(o.ok && strcmp(o.value, "20") == 0, "[%s] wait_stale B: %s", LEVELS[level], o.msg);
    run(b, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 30, 'B')", f);
    snprintf(sql, sizeof sql, "SELECT rlk_fence_check('%s', 25)", f);
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
    o = run(a, "SELECT rlk_fence_check('%s', 25)", f);
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
    o = run(a, "SELECT rlk_fence_check('%s', 25)", f);
    CHECK(o.ok, "[%s] wait_newer A: %s", LEVELS[level], o.msg);
    run(a, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 25, 'A')", f);
    begin(b, level);
    snprintf(sql, sizeof sql, "SELECT rlk_fence_check('%s', 30)", f);
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
        o = run(b, "SELECT rlk_fence_check('%s', 30)", f);
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
    o = run(a, "SELECT rlk_fence_check('%s', 5)", f);
    CHECK(o.ok && strcmp(o.value, "0") == 0, "[%s] new_fence A: %s %s", LEVELS[level], o.msg, o.value);
    begin(b, level);
    run(b, "INSERT INTO rlk_test_ledger (fence, token, who) VALUES ('%s', 3, 'B')", f);
    snprintf(sql, sizeof sql, "SELECT rlk_fence_check('%s', 3)", f);
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
    o = run(a, "SELECT rlk_fence_check('%s', 30)", f);
    CHECK(o.ok, "[%s] same_twice A: %s", LEVELS[level], o.msg);
    snprintf(sql, sizeof sql, "SELECT rlk_fence_check('%s', 30)", f);
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

int main(int argc, char **argv)
{
    PGconn *ctl, *a, *b;
    FILE *fp;
    char *sql;
    long n;
    int refused, forks;

    if (argc != 2) {
        fprintf(stderr, "usage: pg_fence SQL_FILE\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    fp = fopen(argv[1], "rb");
    if (!fp || fseek(fp, 0, SEEK_END) != 0 || (n = ftell(fp)) < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        perror(argv[1]);
        return 1;
    }
    sql = calloc(1, (size_t)n + 1);
    if (!sql || fread(sql, 1, (size_t)n, fp) != (size_t)n) {
        perror(argv[1]);
        return 1;
    }
    fclose(fp);
    ctl = connect_db();
    must(ctl, sql);
    must(ctl, sql); /* installing twice is harmless */
    free(sql);
    must(ctl, "CREATE TABLE rlk_test_ledger (id serial PRIMARY KEY, fence text, token bigint, prev bigint, "
              "who text)");
    must(ctl, "CREATE SEQUENCE rlk_test_tokens START 1000");
    /* The control: the same function without the row lock (a read, a pause, an update). */
    must(ctl, "CREATE FUNCTION rlk_test_unlocked_check(fence text, token bigint) RETURNS bigint "
              "LANGUAGE plpgsql AS $$ DECLARE prev bigint; BEGIN "
              "INSERT INTO rlk_fence AS f (fence, highest) VALUES (rlk_test_unlocked_check.fence, 0) "
              "ON CONFLICT ON CONSTRAINT rlk_fence_pkey DO NOTHING; "
              "SELECT f.highest INTO prev FROM rlk_fence AS f WHERE f.fence = rlk_test_unlocked_check.fence; "
              "PERFORM pg_sleep(0.002); "
              "IF token < prev THEN RAISE EXCEPTION 'RLK_FENCED %', prev USING ERRCODE = 'RLKFE'; END IF; "
              "UPDATE rlk_fence AS f SET highest = greatest(f.highest, token) "
              "WHERE f.fence = rlk_test_unlocked_check.fence; RETURN prev; END $$");
    a = connect_db();
    b = connect_db();

    {
        outcome o = run(ctl, "SELECT rlk_fence_check('', 1)");
        CHECK(!o.ok && strncmp(o.msg, "RLK_BADARG", 10) == 0, "empty fence: %s", o.msg);
        o = run(ctl, "SELECT rlk_fence_check('x', 0)");
        CHECK(!o.ok && strncmp(o.msg, "RLK_BADTOKEN", 12) == 0, "token 0: %s", o.msg);
        o = run(ctl, "SELECT rlk_fence_check('x', NULL)");
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
        forks = stress(ctl, "rlk_fence_check", fence, level, &refused);
        CHECK(forks == 0, "[%s] stress: %d transactions passed on a highest another passed on", LEVELS[level],
              forks);
        CHECK(refused > 0, "[%s] stress: no stale transaction was refused", LEVELS[level]);
        printf("[%s] %s\n", LEVELS[level], failures == before ? "all cases pass" : "FAILED");
    }
    forks = stress(ctl, "rlk_test_unlocked_check", "control_rc", 0, &refused);
    CHECK(forks > 0, "control: the check without a row lock let no two transactions pass on one highest");
    printf("control (no row lock, READ COMMITTED): %d transactions passed on a highest another passed on "
           "(must be > 0)\n", forks);
    PQfinish(a);
    PQfinish(b);
    PQfinish(ctl);
    printf("pg_fence: %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
