/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk-fencecost: what the fencing check costs a write. A fenced write
 * (scripts/fence/set: check the token, SET, record the token, in one
 * EVALSHA) against a plain SET of the same data, with 1 and 8 clients, in
 * one run.
 *
 *   rlk-fencecost [--host H] [--port P] [--clients 1,8] [--seconds S]
 *                 [--rounds R] [--value-size B] [--scripts-dir DIR]
 *
 * Variants, each a cell per client count, in a rotating order per round:
 *
 *   set          SET {fc:<i>}:data VALUE
 *   fence        EVALSHA fence/set 2 {fc:<i>}:fence {fc:<i>}:data TOKEN VALUE,
 *                the same token every write (one holder writing many times:
 *                the check passes on an equal token, nothing to record)
 *   fence-new    the same with a token one higher every write (each write
 *                records a new highest: the check's most expensive path)
 *
 * The keys {fc:<i>}:fence and {fc:<i>}:data are deleted before each cell and
 * at the end; nothing else is touched, but CONFIG RESETSTAT is: run it on a
 * server of its own (tools/with-redis).
 *
 * Every client is a thread with its own connection writing one command at a
 * time (a request, then its reply: no pipelining), its own keys (i = the
 * client), for S seconds. Per cell: CONFIG RESETSTAT before, INFO
 * commandstats after; the server's time per write is cmdstat_set's (set)
 * or cmdstat_evalsha's (the whole script, its inner commands included)
 * usec / calls; writes/s is the replies counted by the clients / S. Every
 * reply is checked (OK); the number of top-level calls the server counted
 * must equal the writes the clients made: a fenced write is one command,
 * one round trip, as the plain SET. Each number printed is the median over
 * the rounds.
 *
 * Output: a table, and one line per cell for machines:
 *   fencecost <variant> clients=<n> us_per_write=<x> writes_per_s=<y>
 */
#define _POSIX_C_SOURCE 200809L

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FC_MAX_CLIENTS 64
#define FC_MAX_COUNTS 8
#define FC_MAX_ROUNDS 32
#define FC_VARIANTS 3

static const char *const fc_variant_names[FC_VARIANTS] = {"set", "fence", "fence-new"};

static const char *fc_host = "127.0.0.1";
static int fc_port = 6379;
static double fc_seconds = 2.0;
static int fc_rounds = 3;
static size_t fc_value_size = 64;
static char fc_sha[41];
static char *fc_value;

typedef struct fc_client {
    pthread_t thread;
    int index;
    int variant;
    double seconds;
    long long writes;
    const char *error;          /* NULL, or why the client stopped */
    char errbuf[256];
} fc_client;

static void fc_die(const char *what, const char *why)
{
    fprintf(stderr, "rlk-fencecost: %s: %s\n", what, why);
    exit(1);
}

static double fc_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static redisContext *fc_connect(void)
{
    struct timeval tv = {10, 0};
    redisContext *c = redisConnectWithTimeout(fc_host, fc_port, tv);

    if (c == NULL || c->err)
        fc_die("connect", c ? c->errstr : "out of memory");
    redisSetTimeout(c, tv);
    return c;
}

static char *fc_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    if (!f)
        fc_die(path, "cannot open (--scripts-dir: the expanded scripts, e.g. build/c/bundle)");
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0)
        fc_die(path, "cannot read");
    buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
        fc_die(path, "cannot read");
    buf[n] = '\0';
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static void *fc_client_main(void *arg)
{
    fc_client *cl = arg;
    redisContext *c = fc_connect();
    char fence[64], data[64], token[32];
    unsigned long long tok = 1000;
    double end;

    snprintf(fence, sizeof fence, "{fc:%d}:fence", cl->index);
    snprintf(data, sizeof data, "{fc:%d}:data", cl->index);
    end = fc_now() + cl->seconds;
    while (fc_now() < end) {
        redisReply *r;

        for (int k = 0; k < 16; k++) {      /* the clock read every 16 writes */
            if (cl->variant == 0) {
                r = redisCommand(c, "SET %s %b", data, fc_value, fc_value_size);
            } else {
                if (cl->variant == 2)
                    tok++;
                snprintf(token, sizeof token, "%llu", tok);
                r = redisCommand(c, "EVALSHA %s 2 %s %s %s %b", fc_sha, fence, data, token, fc_value,
                                 fc_value_size);
            }
            if (r == NULL || r->type != REDIS_REPLY_STATUS || strcmp(r->str, "OK") != 0) {
                snprintf(cl->errbuf, sizeof cl->errbuf, "client %d: %s", cl->index,
                         r == NULL ? c->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "reply not OK");
                cl->error = cl->errbuf;
                if (r)
                    freeReplyObject(r);
                redisFree(c);
                return NULL;
            }
            freeReplyObject(r);
            cl->writes++;
        }
    }
    redisFree(c);
    return NULL;
}

/* calls and usec of cmdstat_<name>; 0 / 0 when absent. */
static void fc_cmdstat(redisContext *c, const char *name, double *calls, double *usec)
{
    redisReply *r = redisCommand(c, "INFO commandstats");
    char key[64];
    const char *p;

    if (r == NULL || r->type != REDIS_REPLY_STRING)
        fc_die("INFO commandstats", r == NULL ? c->errstr : "unexpected reply");
    *calls = *usec = 0;
    snprintf(key, sizeof key, "cmdstat_%s:", name);
    if ((p = strstr(r->str, key)) != NULL &&
        sscanf(p + strlen(key), "calls=%lf,usec=%lf", calls, usec) != 2)
        fc_die("INFO commandstats", "cannot parse");
    freeReplyObject(r);
}

static void fc_simple(redisContext *c, const char *cmd)
{
    redisReply *r = redisCommand(c, cmd);

    if (r == NULL || r->type == REDIS_REPLY_ERROR)
        fc_die(cmd, r ? r->str : c->errstr);
    freeReplyObject(r);
}

/* Deletes the keys of clients 0..n-1 (nothing else on the server is touched). */
static void fc_del_keys(redisContext *c, int n)
{
    for (int i = 0; i < n; i++) {
        redisReply *r = redisCommand(c, "DEL {fc:%d}:fence {fc:%d}:data", i, i);

        if (r == NULL || r->type == REDIS_REPLY_ERROR)
            fc_die("DEL", r ? r->str : c->errstr);
        freeReplyObject(r);
    }
}

/* One cell: n clients of variant v for fc_seconds. */
static void fc_cell(redisContext *ctl, int v, int n, double *us_per_write, double *writes_per_s)
{
    static fc_client cl[FC_MAX_CLIENTS];
    long long writes = 0;
    double calls, usec, t0, el;

    fc_del_keys(ctl, n);
    fc_simple(ctl, "CONFIG RESETSTAT");
    t0 = fc_now();
    for (int i = 0; i < n; i++) {
        memset(&cl[i], 0, sizeof cl[i]);
        cl[i].index = i;
        cl[i].variant = v;
        cl[i].seconds = fc_seconds;
        if (pthread_create(&cl[i].thread, NULL, fc_client_main, &cl[i]) != 0)
            fc_die("pthread_create", "failed");
    }
    for (int i = 0; i < n; i++)
        pthread_join(cl[i].thread, NULL);
    el = fc_now() - t0;
    for (int i = 0; i < n; i++) {
        if (cl[i].error)
            fc_die(fc_variant_names[v], cl[i].error);
        writes += cl[i].writes;
    }
    fc_cmdstat(ctl, v == 0 ? "set" : "evalsha", &calls, &usec);
    if ((long long)calls != writes) {
        char why[128];

        snprintf(why, sizeof why, "the server counted %.0f calls for %lld writes", calls, writes);
        fc_die(fc_variant_names[v], why);
    }
    *us_per_write = writes ? usec / calls : 0;
    *writes_per_s = (double)writes / el;
}

static int fc_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return x < y ? -1 : x > y;
}

static double fc_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, fc_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void fc_usage(void)
{
    fputs("usage: rlk-fencecost [--host H] [--port P] [--clients 1,8] [--seconds S] [--rounds R]\n"
          "                     [--value-size B] [--scripts-dir DIR]\n", stderr);
    exit(2);
}

int main(int argc, char **argv)
{
    const char *dir = RLK_BENCH_SCRIPTS_DIR, *clients = "1,8";
    int counts[FC_MAX_COUNTS], ncounts = 0;
    static double us[FC_VARIANTS][FC_MAX_COUNTS][FC_MAX_ROUNDS], ws[FC_VARIANTS][FC_MAX_COUNTS][FC_MAX_ROUNDS];
    char path[1024], *body, *list, *tok, *save = NULL;
    size_t len;
    redisContext *ctl;
    redisReply *r;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

        if (!v)
            fc_usage();
        if (strcmp(a, "--host") == 0)
            fc_host = v;
        else if (strcmp(a, "--port") == 0)
            fc_port = atoi(v);
        else if (strcmp(a, "--clients") == 0)
            clients = v;
        else if (strcmp(a, "--seconds") == 0)
            fc_seconds = atof(v);
        else if (strcmp(a, "--rounds") == 0)
            fc_rounds = atoi(v);
        else if (strcmp(a, "--value-size") == 0)
            fc_value_size = (size_t)atol(v);
        else if (strcmp(a, "--scripts-dir") == 0)
            dir = v;
        else
            fc_usage();
        i++;
    }
    if (fc_seconds <= 0 || fc_rounds < 1 || fc_rounds > FC_MAX_ROUNDS || fc_value_size < 1 ||
        fc_value_size > 1 << 20)
        fc_usage();
    list = strdup(clients);
    for (tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        int n = atoi(tok);

        if (n < 1 || n > FC_MAX_CLIENTS || ncounts == FC_MAX_COUNTS)
            fc_usage();
        counts[ncounts++] = n;
    }
    free(list);
    if (ncounts == 0)
        fc_usage();
    fc_value = malloc(fc_value_size);
    memset(fc_value, 'v', fc_value_size);

    snprintf(path, sizeof path, "%s/fence/set.lua", dir);
    body = fc_read_file(path, &len);
    ctl = fc_connect();
    r = redisCommand(ctl, "SCRIPT LOAD %b", body, len);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40)
        fc_die("SCRIPT LOAD fence/set", r && r->type == REDIS_REPLY_ERROR ? r->str : "no SHA-1");
    memcpy(fc_sha, r->str, 41);
    freeReplyObject(r);
    free(body);
    r = redisCommand(ctl, "INFO server");
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, "redis_version:");
        const char *q = strstr(r->str, "valkey_version:");

        printf("# server %.*s\n", (int)strcspn(q ? q : p ? p : "?", "\r\n"), q ? q : p ? p : "?");
    }
    if (r)
        freeReplyObject(r);
    printf("# %d round(s) x %.1f s per cell, value %zu bytes, one command at a time per client\n",
           fc_rounds, fc_seconds, fc_value_size);

    for (int round = 0; round < fc_rounds; round++)
        for (int ci = 0; ci < ncounts; ci++)
            for (int k = 0; k < FC_VARIANTS; k++) {
                int v = (k + round) % FC_VARIANTS;

                fc_cell(ctl, v, counts[ci], &us[v][ci][round], &ws[v][ci][round]);
            }

    printf("\n| clients | write | server us/write | writes/s |\n| ---: | --- | ---: | ---: |\n");
    for (int ci = 0; ci < ncounts; ci++)
        for (int v = 0; v < FC_VARIANTS; v++)
            printf("| %d | %s | %.2f | %.0f |\n", counts[ci], fc_variant_names[v],
                   fc_median(us[v][ci], fc_rounds), fc_median(ws[v][ci], fc_rounds));
    printf("\n");
    for (int ci = 0; ci < ncounts; ci++)
        for (int v = 0; v < FC_VARIANTS; v++)
            printf("fencecost %s clients=%d us_per_write=%.3f writes_per_s=%.0f\n", fc_variant_names[v],
                   counts[ci], fc_median(us[v][ci], fc_rounds), fc_median(ws[v][ci], fc_rounds));
    fc_del_keys(ctl, FC_MAX_CLIENTS);
    redisFree(ctl);
    free(fc_value);
    return 0;
}
