/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk-bench-token: W1 (uncontended acquire + release, N clients each on its
 * own key) for the token lock, its scripts against the server's own
 * commands (client/native.c), in one run on one server.
 *
 *   rlk-bench-token [--clients N] [--seconds S] [--rounds R] [--url URL]
 *
 * Without --url it starts a Valkey 9 on loopback with the test fixture
 * ($RLK_VALKEY9_SERVER, else /var/cache/rlk-servers/valkey9/bin/valkey-server;
 * absent: exit 77) and stops it by PID. Each round runs the scripts
 * (RLK_NATIVE=off) and then the native commands, S seconds each, N threads
 * with a client each (pool 1, lease 30 s) calling rlk_eval("token/acquire")
 * and rlk_eval("token/release"); every reply is checked (acquire nil,
 * release 1). Per mode and round it prints pairs/s, the server's µs per pair
 * (INFO commandstats after CONFIG RESETSTAT, server_cost below) and the
 * server commands per pair, as one JSON line each.
 */
#define _POSIX_C_SOURCE 200809L

#include "fixture.h"

#include <rlk.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define VALKEY9_DEFAULT "/var/cache/rlk-servers/valkey9/bin/valkey-server"
#define MAX_CLIENTS 64

static const char *url;
static rlk_fx_server srv;
static int have_srv;
static atomic_int stop;

typedef struct worker {
    pthread_t t;
    int id;
    long long pairs;
    long long errors;
    char first_error[200];
} worker;

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *work(void *arg)
{
    worker *w = arg;
    rlk_options o;
    rlk_client *c;
    char key[64], token[64];
    const char *keys[1] = {key}, *acq[2] = {token, "30000"}, *rel[1] = {token};

    rlk_options_init(&o);
    o.url = url;
    o.pool_size = 1;
    c = rlk_connect(&o);
    snprintf(key, sizeof key, "bench:token:%d", w->id);
    snprintf(token, sizeof token, "%d:%ld", w->id, (long)getpid());
    if (!c || rlk_err(c) != RLK_OK) {
        w->errors++;
        snprintf(w->first_error, sizeof w->first_error, "connect: %s",
                 c ? rlk_errstr(c) : "out of memory");
        rlk_free(c);
        return NULL;
    }
    while (!atomic_load(&stop)) {
        redisReply *r = NULL;
        int ok = rlk_eval(c, "token/acquire", 1, keys, 2, acq, &r) == RLK_OK &&
                 r->type == REDIS_REPLY_NIL;

        freeReplyObject(r);
        r = NULL;
        ok = ok && rlk_eval(c, "token/release", 1, keys, 1, rel, &r) == RLK_OK &&
             r->type == REDIS_REPLY_INTEGER && r->integer == 1;
        freeReplyObject(r);
        if (ok) {
            w->pairs++;
        } else if (w->errors++ == 0) {
            snprintf(w->first_error, sizeof w->first_error, "%s", rlk_errstr(c));
        }
    }
    rlk_free(c);
    return NULL;
}

static redisReply *server_cmd(const char *cmd)
{
    {
        rlk_client *c = have_srv ? NULL : rlk_connect_url(url);
        redisReply *r = NULL;
        const char *argv[2];
        const char *sp = strchr(cmd, ' ');
        char a0[32];

        snprintf(a0, sizeof a0, "%.*s", (int)(sp ? sp - cmd : (long)strlen(cmd)), cmd);
        argv[0] = a0;
        argv[1] = sp ? sp + 1 : NULL;
        if (have_srv)
            return sp ? rlk_fx_command(&srv, "%s %s", argv[0], argv[1])
                      : rlk_fx_command(&srv, "%s", argv[0]);
        if (c && rlk_command(c, sp ? 2 : 1, argv, NULL, &r) != RLK_OK)
            r = NULL;
        rlk_free(c);
        return r;
    }
}

/* The server's time and calls for the lock, from INFO commandstats. Redis
 * times a script's own commands too (cmdstat_evalsha is the whole script,
 * the rows of the commands inside it count them once more): with scripts the
 * cost is EVALSHA's alone; without, the sum of the lock's commands. Rows of
 * the connections' set-up and of this program (INFO, CONFIG, CLIENT,
 * COMMAND, SCRIPT, HELLO, AUTH, SELECT, PING) are not the lock's. */
static void server_cost(long long *usec, long long *calls, long long *script_calls)
{
    static const char *const skip[] = {"info", "config", "client", "command", "script",
                                       "hello", "auth", "select", "ping", NULL};
    redisReply *r = server_cmd("INFO commandstats");
    long long s_usec = 0, s_calls = 0, c_usec = 0, c_calls = 0;
    const char *p;

    *usec = *calls = *script_calls = 0;
    if (!r || r->type != REDIS_REPLY_STRING) {
        freeReplyObject(r);
        return;
    }
    for (p = strstr(r->str, "cmdstat_"); p; p = strstr(p + 1, "cmdstat_")) {
        char name[64];
        long long n, us;
        int skipped = 0;

        if (sscanf(p, "cmdstat_%63[^:]:calls=%lld,usec=%lld", name, &n, &us) != 3)
            continue;
        for (int i = 0; skip[i]; i++)
            if (strncmp(name, skip[i], strlen(skip[i])) == 0)
                skipped = 1;
        if (skipped)
            continue;
        if (strcmp(name, "evalsha") == 0 || strcmp(name, "eval") == 0)
            s_usec += us, s_calls += n;
        else
            c_usec += us, c_calls += n;
    }
    freeReplyObject(r);
    *script_calls = s_calls;
    *usec = s_calls ? s_usec : c_usec;
    *calls = s_calls ? s_calls : c_calls;
}

static int run_mode(const char *mode, int clients, double seconds, int round)
{
    worker w[MAX_CLIENTS];
    long long pairs = 0, errors = 0, usec, calls, script_calls;
    double t0, t1;

    memset(w, 0, sizeof w);
    if (strcmp(mode, "scripts") == 0)
        setenv("RLK_NATIVE", "off", 1);
    else
        unsetenv("RLK_NATIVE");
    freeReplyObject(server_cmd("CONFIG RESETSTAT"));
    atomic_store(&stop, 0);
    for (int i = 0; i < clients; i++) {
        w[i].id = i;
        pthread_create(&w[i].t, NULL, work, &w[i]);
    }
    t0 = now_s();
    while (now_s() - t0 < seconds)
        usleep(20000);
    atomic_store(&stop, 1);
    for (int i = 0; i < clients; i++)
        pthread_join(w[i].t, NULL);
    t1 = now_s();
    server_cost(&usec, &calls, &script_calls);
    for (int i = 0; i < clients; i++) {
        pairs += w[i].pairs;
        errors += w[i].errors;
        if (w[i].errors && w[i].first_error[0])
            fprintf(stderr, "%s client %d: %lld errors, first: %s\n", mode, i, w[i].errors,
                    w[i].first_error);
    }
    printf("{\"workload\":\"w1\",\"lock\":\"token\",\"mode\":\"%s\",\"round\":%d,\"clients\":%d,"
           "\"seconds\":%.2f,\"pairs\":%lld,\"errors\":%lld,\"pairs_per_s\":%.0f,"
           "\"server_us_per_pair\":%.2f,\"server_cmds_per_pair\":%.2f,"
           "\"script_calls_per_pair\":%.2f}\n",
           mode, round, clients, t1 - t0, pairs, errors, pairs / (t1 - t0),
           pairs ? (double)usec / pairs : 0.0, pairs ? (double)calls / pairs : 0.0,
           pairs ? (double)script_calls / pairs : 0.0);
    fflush(stdout);
    return errors ? 1 : 0;
}

int main(int argc, char **argv)
{
    int clients = 1, rounds = 3, rc = 0;
    double seconds = 5;
    static char buf[256];

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--clients") == 0 && i + 1 < argc)
            clients = atoi(argv[++i]);
        else if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc)
            seconds = atof(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--url") == 0 && i + 1 < argc)
            url = argv[++i];
        else {
            fprintf(stderr, "usage: rlk-bench-token [--clients N] [--seconds S] [--rounds R] "
                            "[--url URL]\n");
            return 2;
        }
    }
    if (clients < 1 || clients > MAX_CLIENTS || seconds <= 0 || seconds > 600 || rounds < 1 ||
        rounds > 50) {
        fprintf(stderr, "rlk-bench-token: clients 1..%d, seconds 0..600, rounds 1..50\n",
                MAX_CLIENTS);
        return 2;
    }
    if (!url) {
        const char *exe = getenv("RLK_VALKEY9_SERVER");
        rlk_fx_config cfg;

        if (!exe || !*exe)
            exe = VALKEY9_DEFAULT;
        if (access(exe, X_OK) != 0) {
            fprintf(stderr, "SKIP: Valkey 9 not installed (%s)\n", exe);
            return RLK_FX_SKIP;
        }
        setenv("RLK_TEST_SERVER", "valkey", 1);
        setenv("RLK_VALKEY_SERVER", exe, 1);
        rlk_fx_config_init(&cfg);
        cfg.tls = -1;
        if (rlk_fx_start(&srv, &cfg) != 0 || rlk_fx_url(&srv, 0, buf, sizeof buf) != 0)
            return 1;
        have_srv = 1;
        url = buf;
    }
    for (int r = 1; r <= rounds; r++) {
        rc |= run_mode("scripts", clients, seconds, r);
        rc |= run_mode("native", clients, seconds, r);
    }
    if (have_srv)
        rlk_fx_stop(&srv);
    return rc;
}
