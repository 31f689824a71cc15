/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk-scriptcost: the server's own time per lock script on the uncontended
 * path (W1's), rlk's scripts against Redisson's in the same run.
 *
 * One hiredis connection, nothing else on the server. For each variant (a
 * directory holding <kind>/acquire.lua and <kind>/release.lua, KEYS and ARGV
 * filled from their headers as rlk-bench does), every round:
 *
 *   pairs:   CONFIG RESETSTAT; N acquire + release pairs on one key (what W1
 *            does), pipelined in batches; INFO commandstats.
 *   acquire: CONFIG RESETSTAT; N acquires, each on a key of its own (the
 *            fast path: a free lock); INFO commandstats.
 *   release: CONFIG RESETSTAT; the N releases of those keys (count 1, nobody
 *            queued); INFO commandstats.
 *
 * --kind reentrant (the default) runs the reentrant lock's scripts; --kind
 * semaphore a semaphore of 1 permit (semaphore/acquire, a single try, and
 * semaphore/release of 1 permit), its keys set to 1 before each round,
 * outside the statistics.
 *
 * Redis times every command it runs with the same clock, the script's own
 * commands included: cmdstat_evalsha is the whole script, the other rows the
 * commands inside it. What the scripts' commands do not account for is the
 * script itself (Lua, argument checks, the EVALSHA set-up). Every reply is
 * checked (acquire nil, release 1): a variant that does not take and give
 * back the lock is an error, not a number. Variants run in a rotating order;
 * each number printed is the median over the rounds.
 *
 * The time is Redis's, not the client's: pipelining changes no number here,
 * it only makes the run short.
 */
#include "bench_script.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SC_MAX_VARIANTS 6
#define SC_MAX_CMDS 24
#define SC_BATCH 128

/* One row of INFO commandstats. */
typedef struct sc_stat {
    char name[32];
    double calls;
    double usec;
} sc_stat;

/* One phase's commandstats. */
typedef struct sc_stats {
    int n;
    sc_stat row[SC_MAX_CMDS];
} sc_stats;

/* A variant: its scripts, and its samples per round and phase. */
typedef struct sc_variant {
    char name[32];
    const char *dir;
    rlk_bench_script acquire;
    rlk_bench_script release;
    char acq_sha[41];
    char rel_sha[41];
    sc_stats *samples[3];   /* [phase][round] */
} sc_variant;

static const char *const sc_phase_name[3] = {"pair", "acquire", "release"};

static void sc_die(const char *what, const char *why)
{
    fprintf(stderr, "rlk-scriptcost: %s: %s\n", what, why);
    exit(1);
}

/* A command that must succeed; its reply freed. */
static void sc_cmd(redisContext *c, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(c, fmt, arg);

    if (r == NULL)
        sc_die(fmt, c->errstr);
    if (r->type == REDIS_REPLY_ERROR)
        sc_die(fmt, r->str);
    freeReplyObject(r);
}

/* SCRIPT LOAD; the server's SHA-1 into sha. */
static void sc_load(redisContext *c, const rlk_bench_script *s, char sha[41])
{
    redisReply *r = redisCommand(c, "SCRIPT LOAD %b", s->body, s->body_len);

    if (r == NULL)
        sc_die(s->name, c->errstr);
    if (r->type != REDIS_REPLY_STRING || r->len != 40)
        sc_die(s->name, r->type == REDIS_REPLY_ERROR ? r->str : "SCRIPT LOAD: no SHA-1");
    memcpy(sha, r->str, 41);
    freeReplyObject(r);
}

/* INFO commandstats into *st. */
static void sc_read_stats(redisContext *c, sc_stats *st)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    const char *p;

    if (r == NULL || r->type != REDIS_REPLY_STRING)
        sc_die("INFO commandstats", r == NULL ? c->errstr : "unexpected reply");
    st->n = 0;
    for (p = r->str; (p = strstr(p, "cmdstat_")) != NULL; p++) {
        sc_stat row;
        if (sscanf(p, "cmdstat_%31[^:]:calls=%lf,usec=%lf", row.name, &row.calls, &row.usec) != 3)
            continue;
        if (strcmp(row.name, "info") == 0 || strncmp(row.name, "config", 6) == 0)
            continue;
        if (st->n < SC_MAX_CMDS)
            st->row[st->n++] = row;
    }
    freeReplyObject(r);
}

/* Appends one EVALSHA of s bound to v. */
static void sc_append(redisContext *c, const rlk_bench_script *s, const char *sha,
                      const rlk_bench_values *v)
{
    rlk_bench_call call;
    const char *argv[3 + 2 * RLK_BENCH_MAX_PARAMS];
    size_t len[3 + 2 * RLK_BENCH_MAX_PARAMS];
    char nkeys[8];
    int argc = 0, i;

    rlk_bench_script_bind(s, v, &call);
    snprintf(nkeys, sizeof nkeys, "%d", call.nkeys);
    argv[argc] = "EVALSHA", len[argc++] = 7;
    argv[argc] = sha, len[argc++] = 40;
    argv[argc] = nkeys, len[argc++] = strlen(nkeys);
    for (i = 0; i < call.nkeys; i++)
        argv[argc] = call.keys[i], len[argc++] = call.keylens[i];
    for (i = 0; i < call.nargs; i++)
        argv[argc] = call.args[i], len[argc++] = call.arglens[i];
    if (redisAppendCommandArgv(c, argc, argv, len) != REDIS_OK)
        sc_die(s->name, c->errstr);
}

/* The kind whose scripts run (--kind): reentrant or semaphore. */
static const char *sc_kind = "reentrant";

static int sc_semaphore(void)
{
    return strcmp(sc_kind, "semaphore") == 0;
}

/* Reads one reply; it must be nil (acquire; a semaphore's may be the integer 1, as Redisson's
 * single try answers) or the integer 1 (release). */
static void sc_expect(redisContext *c, const char *name, int want_nil)
{
    redisReply *r;
    int one;

    if (redisGetReply(c, (void **)&r) != REDIS_OK)
        sc_die(name, c->errstr);
    one = r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (want_nil ? r->type != REDIS_REPLY_NIL && !(one && sc_semaphore()) : !one) {
        char why[160];
        snprintf(why, sizeof why, "unexpected reply (type %d%s%s): not %s", r->type,
                 r->type == REDIS_REPLY_ERROR ? " " : "",
                 r->type == REDIS_REPLY_ERROR ? r->str : "",
                 want_nil ? "nil (acquired)" : "1 (released)");
        sc_die(name, why);
    }
    freeReplyObject(r);
}

/* The strings of key i of variant vname. */
typedef struct sc_key {
    char lock[96], channel[128], waiters[112], grant[112];
} sc_key;

static void sc_key_make(sc_key *k, const char *vname, long i)
{
    snprintf(k->lock, sizeof k->lock, "rlk-scriptcost:%s:%ld", vname, i);
    snprintf(k->channel, sizeof k->channel,
             sc_semaphore() ? "redisson_sc:{%s}" : "redisson_lock__channel:{%s}", k->lock);
    snprintf(k->waiters, sizeof k->waiters, "{%s}:rlk_waiters", k->lock);
    snprintf(k->grant, sizeof k->grant, "{%s}:rlk_next", k->lock);
}

/* The lease every acquire asks for (--lease): a run under valgrind is slow enough for 30 s to run
 * out between an acquire and its release. */
static const char *sc_lease = "30000";

static void sc_values(rlk_bench_values *v, const sc_key *k)
{
    v->lock = k->lock;
    v->channel = k->channel;
    v->lease = sc_lease;
    v->owner = "7f2c1d9e-5b3a-4c8f-9e21-0a6b4d3c2e1f:1";
    v->message = "0";
    v->publish = "publish";
    v->waiters = k->waiters;
    v->grant = k->grant;
    v->ticket = "0";
    v->claim = "50";
    v->permits = "1";
}

/* A semaphore's keys 0..n-1 set to 1 permit (before the statistics are reset). */
static void sc_fill(redisContext *c, long n, const sc_key *keys)
{
    long i, j;

    for (i = 0; i < n; i += SC_BATCH) {
        long m = n - i < SC_BATCH ? n - i : SC_BATCH;
        for (j = 0; j < m; j++)
            if (redisAppendCommand(c, "SET %s 1", keys[i + j].lock) != REDIS_OK)
                sc_die("SET", c->errstr);
        for (j = 0; j < m; j++) {
            redisReply *r;
            if (redisGetReply(c, (void **)&r) != REDIS_OK)
                sc_die("SET", c->errstr);
            if (r->type == REDIS_REPLY_ERROR)
                sc_die("SET", r->str);
            freeReplyObject(r);
        }
    }
}

/* One round of the three phases for variant v. */
static void sc_round(redisContext *c, sc_variant *v, long n, int round, sc_key *keys)
{
    rlk_bench_values val;
    long i, j;

    if (sc_semaphore())
        sc_fill(c, n, keys);
    /* pairs on one key */
    sc_values(&val, &keys[0]);
    sc_cmd(c, "CONFIG RESETSTAT", NULL);
    for (i = 0; i < n; i += SC_BATCH) {
        long m = n - i < SC_BATCH ? n - i : SC_BATCH;
        for (j = 0; j < m; j++) {
            sc_append(c, &v->acquire, v->acq_sha, &val);
            sc_append(c, &v->release, v->rel_sha, &val);
        }
        for (j = 0; j < m; j++) {
            sc_expect(c, v->acquire.name, 1);
            sc_expect(c, v->release.name, 0);
        }
    }
    sc_read_stats(c, &v->samples[0][round]);
    /* acquires, one key each; then their releases */
    for (int phase = 1; phase <= 2; phase++) {
        const rlk_bench_script *s = phase == 1 ? &v->acquire : &v->release;
        const char *sha = phase == 1 ? v->acq_sha : v->rel_sha;
        sc_cmd(c, "CONFIG RESETSTAT", NULL);
        for (i = 0; i < n; i += SC_BATCH) {
            long m = n - i < SC_BATCH ? n - i : SC_BATCH;
            for (j = 0; j < m; j++) {
                sc_values(&val, &keys[i + j]);
                sc_append(c, s, sha, &val);
            }
            for (j = 0; j < m; j++)
                sc_expect(c, s->name, phase == 1);
        }
        sc_read_stats(c, &v->samples[phase][round]);
    }
}

static int sc_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Which statistic over the rounds: 0 the median, 1 the lowest (both are
 * printed: noise on a shared machine only adds time, so the lowest round is
 * nearest the script's own cost). */
static int sc_use_min;

static double sc_median(double *x, int n)
{
    qsort(x, (size_t)n, sizeof *x, sc_cmp);
    if (sc_use_min)
        return x[0];
    return n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
}

/* Median over the rounds of a command's usec (usec_per != 0) or calls,
 * per script call (n per round). */
static double sc_med_of(const sc_variant *v, int phase, int rounds, long n, const char *cmd,
                        int usec)
{
    double x[64];
    int r, i;

    for (r = 0; r < rounds; r++) {
        const sc_stats *st = &v->samples[phase][r];
        x[r] = 0;
        for (i = 0; i < st->n; i++)
            if (strcmp(st->row[i].name, cmd) == 0)
                x[r] = (usec ? st->row[i].usec : st->row[i].calls) / (double)n;
    }
    return sc_median(x, rounds);
}

/* The median, over the rounds, of the script's time minus its commands'. */
static double sc_med_lua(const sc_variant *v, int phase, int rounds, long n)
{
    double x[64];
    int r, i;

    for (r = 0; r < rounds; r++) {
        const sc_stats *st = &v->samples[phase][r];
        double all = 0, inner = 0;
        for (i = 0; i < st->n; i++) {
            if (strcmp(st->row[i].name, "evalsha") == 0)
                all = st->row[i].usec;
            else
                inner += st->row[i].usec;
        }
        x[r] = (all - inner) / (double)n;
    }
    return sc_median(x, rounds);
}

static void sc_usage(void)
{
    fprintf(stderr,
            "usage: rlk-scriptcost --port PORT [--host 127.0.0.1] [--iterations 20000]\n"
            "                      [--rounds 5] [--lease 30000] [--kind reentrant|semaphore]\n"
            "                      [--variant NAME=DIR]...\n"
            "  DIR holds KIND/acquire.lua and KIND/release.lua (expanded, as Redis runs\n"
            "  them). Default variants: rlk=%s redisson=%s\n",
            RLK_BENCH_SCRIPTS_DIR, RLK_BENCH_REDISSON_DIR);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *host = "127.0.0.1";
    int port = 0, rounds = 5, nv = 0, i, r, p;
    long n = 20000;
    sc_variant var[SC_MAX_VARIANTS];
    sc_key *keys;
    redisContext *c;
    char err[RLK_BENCH_ERRLEN], acq_name[32], rel_name[32];

    memset(var, 0, sizeof var);
    for (i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (val == NULL)
            sc_usage();
        if (strcmp(a, "--port") == 0)
            port = atoi(val);
        else if (strcmp(a, "--host") == 0)
            host = val;
        else if (strcmp(a, "--iterations") == 0)
            n = atol(val);
        else if (strcmp(a, "--lease") == 0) {
            if (strspn(val, "0123456789") != strlen(val) || val[0] < '1' || val[0] > '9' ||
                strlen(val) > 12)
                sc_usage();
            sc_lease = val;
        } else if (strcmp(a, "--kind") == 0) {
            if (strcmp(val, "reentrant") != 0 && strcmp(val, "semaphore") != 0)
                sc_usage();
            sc_kind = val;
        } else if (strcmp(a, "--rounds") == 0)
            rounds = atoi(val);
        else if (strcmp(a, "--variant") == 0) {
            const char *eq = strchr(val, '=');
            if (eq == NULL || eq == val || (size_t)(eq - val) >= sizeof var[0].name ||
                nv == SC_MAX_VARIANTS)
                sc_usage();
            memcpy(var[nv].name, val, (size_t)(eq - val));
            var[nv++].dir = eq + 1;
        } else
            sc_usage();
        i++;
    }
    if (port <= 0 || port > 65535 || n < 1 || n > 1000000 || rounds < 1 || rounds > 64)
        sc_usage();
    if (strcmp(host, "127.0.0.1") != 0 && strcmp(host, "localhost") != 0 &&
        strcmp(host, "::1") != 0)
        sc_die("--host", "must be loopback (this resets the server's statistics)");
    if (nv == 0) {
        strcpy(var[0].name, "rlk");
        var[0].dir = RLK_BENCH_SCRIPTS_DIR;
        strcpy(var[1].name, "redisson");
        var[1].dir = RLK_BENCH_REDISSON_DIR;
        nv = 2;
    }
    c = redisConnect(host, port);
    if (c == NULL || c->err)
        sc_die("connect", c == NULL ? "out of memory" : c->errstr);
    keys = calloc((size_t)n, sizeof *keys);
    if (keys == NULL)
        sc_die("keys", "out of memory");
    snprintf(acq_name, sizeof acq_name, "%s/acquire", sc_kind);
    snprintf(rel_name, sizeof rel_name, "%s/release", sc_kind);
    for (i = 0; i < nv; i++) {
        if (rlk_bench_script_from_dir(&var[i].acquire, var[i].dir, acq_name, err,
                                      sizeof err) != 0 ||
            rlk_bench_script_from_dir(&var[i].release, var[i].dir, rel_name, err,
                                      sizeof err) != 0)
            sc_die(var[i].name, err);
        sc_load(c, &var[i].acquire, var[i].acq_sha);
        sc_load(c, &var[i].release, var[i].rel_sha);
        for (p = 0; p < 3; p++)
            var[i].samples[p] = calloc((size_t)rounds, sizeof(sc_stats));
    }
    /* warm-up: one round of every variant, not counted */
    for (r = 0; r <= rounds; r++) {
        for (i = 0; i < nv; i++) {
            sc_variant *v = &var[(i + r) % nv];
            long k;
            for (k = 0; k < n; k++)
                sc_key_make(&keys[k], v->name, k);
            sc_round(c, v, r == 0 ? (n < 2000 ? n : 2000) : n, r == 0 ? 0 : r - 1, keys);
        }
    }
    for (sc_use_min = 0; sc_use_min <= 1; sc_use_min++) {
        printf("%s# rlk-scriptcost: %s, %ld calls per phase, %d rounds, %s per script call\n",
               sc_use_min ? "\n" : "", sc_kind, n,
               rounds, sc_use_min ? "lowest round" : "median");
        for (p = 0; p < 3; p++) {
            printf("\n%s (%s)\n", sc_phase_name[p],
                   p == 0 ? "acquire + release on one key, per pair" : "per call, one key each");
            printf("%-12s %10s %10s   %s\n", "variant", "evalsha us", "script us",
                   "commands inside: calls / us per script call");
            for (i = 0; i < nv; i++) {
                const sc_variant *v = &var[i];
                const sc_stats *st = &v->samples[p][0];
                int k;
                double evalsha_calls = sc_med_of(v, p, rounds, n, "evalsha", 0);
                printf("%-12s %10.3f %10.3f  ", v->name,
                       sc_med_of(v, p, rounds, n, "evalsha", 1),
                       sc_med_lua(v, p, rounds, n));
                for (k = 0; k < st->n; k++) {
                    if (strcmp(st->row[k].name, "evalsha") == 0)
                        continue;
                    printf(" %s %.2f/%.3f", st->row[k].name,
                           sc_med_of(v, p, rounds, n, st->row[k].name, 0),
                           sc_med_of(v, p, rounds, n, st->row[k].name, 1));
                }
                printf("   (evalsha calls %.2f)\n", evalsha_calls);
            }
        }
        for (p = 0; p < 3; p++) {
            printf("%s{\"schema\":\"rlk-scriptcost/1\",\"kind\":\"%s\",\"phase\":\"%s\","
                   "\"calls\":%ld,\"rounds\":%d,\"stat\":\"%s\"", p == 0 ? "\n" : "", sc_kind,
                   sc_phase_name[p], n, rounds, sc_use_min ? "min" : "median");
            for (i = 0; i < nv; i++)
                printf(",\"%s\":{\"evalsha_us\":%.3f,\"script_us\":%.3f}", var[i].name,
                       sc_med_of(&var[i], p, rounds, n, "evalsha", 1),
                       sc_med_lua(&var[i], p, rounds, n));
            printf("}\n");
        }
    }
    for (i = 0; i < nv; i++) {
        rlk_bench_script_free(&var[i].acquire);
        rlk_bench_script_free(&var[i].release);
        for (p = 0; p < 3; p++)
            free(var[i].samples[p]);
    }
    free(keys);
    redisFree(c);
    return 0;
}
