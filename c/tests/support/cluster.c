/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cluster.c - see cluster.h.
 */
#include "cluster.h"
#include "tk_util.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Until every node is ok and all agree on the map with each replica listed: seconds on a quiet
 * machine; a loaded one (CI's passes side by side, a CPU burner) has taken more than 30 s for
 * every node to learn its peers' replicas. The wait ends when they agree: the bound only makes a
 * cluster that never forms fail later. */
#define CL_START_TIMEOUT_MS 60000
#define CL_CREATE_TIMEOUT_MS 20000

/* ------------------------------------------------------------ slots */

unsigned rlk_fx_crc16(const char *buf, size_t len)
{
    unsigned crc = 0;

    for (size_t i = 0; i < len; i++) {
        crc ^= (unsigned)(unsigned char)buf[i] << 8;
        for (int b = 0; b < 8; b++)
            crc = (crc & 0x8000) ? ((crc << 1) ^ 0x1021) & 0xFFFF : (crc << 1) & 0xFFFF;
    }
    return crc;
}

int rlk_fx_key_slot(const char *key, size_t len)
{
    size_t s, e;

    for (s = 0; s < len && key[s] != '{'; s++) {
    }
    if (s < len) {
        for (e = s + 1; e < len && key[e] != '}'; e++) {
        }
        if (e < len && e != s + 1)
            return (int)(rlk_fx_crc16(key + s + 1, e - s - 1) & 16383);
    }
    return (int)(rlk_fx_crc16(key, len) & 16383);
}

/* ------------------------------------------------------------ commands */

redisReply *rlk_fx_cluster_command(const rlk_fx_cluster *c, int node, const char *fmt, ...)
{
    redisReply *r;
    va_list ap;

    if (node < 0 || node >= c->n || c->node[node].pid <= 0)
        return NULL;
    va_start(ap, fmt);
    r = rlk_fx_vcommand(&c->node[node], fmt, ap);
    va_end(ap);
    return r;
}

redisReply *rlk_fx_cluster_command_db(const rlk_fx_cluster *c, int node, int db, const char *fmt,
                                      ...)
{
    redisContext *ctx;
    redisReply *r;
    va_list ap;

    if (node < 0 || node >= c->n || c->node[node].pid <= 0 ||
        !(ctx = rlk_fx_connect(&c->node[node])))
        return NULL;
    r = redisCommand(ctx, "SELECT %d", db);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "cluster: SELECT %d on node %d: %s\n", db, node,
                r ? r->str : ctx->errstr);
        if (r)
            freeReplyObject(r);
        redisFree(ctx);
        return NULL;
    }
    freeReplyObject(r);
    va_start(ap, fmt);
    r = redisvCommand(ctx, fmt, ap);
    va_end(ap);
    redisFree(ctx);
    return r;
}

int rlk_fx_cluster_has_databases(const rlk_fx_cluster *c)
{
    redisReply *r = rlk_fx_cluster_command(c, 0, "CONFIG GET cluster-databases");
    int has = r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
              r->element[1]->type == REDIS_REPLY_STRING && atoi(r->element[1]->str) > 1;

    if (r)
        freeReplyObject(r);
    return has;
}

/* ------------------------------------------------------------ databases */

long long rlk_fx_cluster_db_int(const rlk_fx_cluster *c, int db, const char *key,
                                const char *fmt)
{
    int owner = rlk_fx_cluster_key_owner(c, key);
    redisReply *r = rlk_fx_cluster_command_db(c, owner, db, fmt, key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;

    if (r)
        freeReplyObject(r);
    return v;
}

void rlk_fx_cluster_name_on(const rlk_fx_cluster *c, const char *prefix, int master, char *buf,
                            size_t len)
{
    for (int n = 0; n < 100000; n++) {
        snprintf(buf, len, "%s%d", prefix, n);
        if (rlk_fx_cluster_key_owner(c, buf) == master)
            return;
    }
    buf[0] = '\0';
}

int rlk_fx_cldb_start(rlk_fx_cluster *c, rlk_fx_cldb *d, const char *prog, int databases, int db,
                      int seed_a, int seed_b)
{
    rlk_fx_cluster_opts o = {0};
    char a[128], b[128];
    int n = 0;

    memset(d, 0, sizeof *d);
    if (strcmp(rlk_fx_server_name(), "valkey9") == 0)
        o.databases = databases;
    if (rlk_fx_cluster_start_opts(c, &o) != 0) {
        fprintf(stderr, "%s: the cluster did not start\n", prog);
        return -1;
    }
    tk_say("cluster started in %lld ms (%s, cluster-databases %d)", c->start_ms,
           rlk_fx_server_name(), o.databases);
    d->databases = o.databases;
    d->has_dbs = rlk_fx_cluster_has_databases(c);
    rlk_fx_cluster_url(c, seed_a, a, sizeof a);
    rlk_fx_cluster_url(c, seed_b, b, sizeof b);
    /* past "redis://" or "rediss://" */
    snprintf(d->seeds, sizeof d->seeds, "%s+cluster://%s,%s",
             c->node[seed_a].tls ? "rediss" : "redis", strstr(a, "://") + 3,
             strstr(b, "://") + 3);
    snprintf(d->url0, sizeof d->url0, "%s/0", d->seeds);
    snprintf(d->url_db, sizeof d->url_db, "%s/%d", d->seeds, db);
    for (int i = 0; i < c->n && n < 3; i++)
        if (rlk_fx_cluster_role(c, i) == 'M')
            d->mst[n++] = i;
    if (n != 3) {
        fprintf(stderr, "%s: not 3 masters\n", prog);
        rlk_fx_cluster_stop(c);
        return -1;
    }
    return 0;
}

static int cl_ok_reply(redisReply *r, const char *what, int node)
{
    int ok = r && r->type == REDIS_REPLY_STATUS;

    if (!ok)
        fprintf(stderr, "cluster: %s on node %d: %s\n", what, node,
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static int cl_index_of_port(const rlk_fx_cluster *c, long long port)
{
    for (int i = 0; i < c->n; i++)
        if (c->node[i].port == port)
            return i;
    return -1;
}

/* The node of a CLUSTER SLOTS node entry ([ip, port, id, ...]): by port, else by node id.
 * Valkey 8 answers with the port of the asking connection's kind, so over the fixture's plain
 * control socket a TLS-only node says port 0 (Redis 7.0 says its TLS port); the id decides. */
static int cl_index_of_entry(const rlk_fx_cluster *c, const redisReply *e)
{
    int idx = -1;

    if (e->type != REDIS_REPLY_ARRAY || e->elements < 2)
        return -1;
    if (e->element[1]->type == REDIS_REPLY_INTEGER)
        idx = cl_index_of_port(c, e->element[1]->integer);
    if (idx >= 0 || e->elements < 3 || e->element[2]->type != REDIS_REPLY_STRING)
        return idx;
    for (int i = 0; i < c->n; i++)
        if (c->id[i][0] && strcmp(c->id[i], e->element[2]->str) == 0)
            return i;
    return -1;
}

/* The port the fixture knows a CLUSTER SLOTS node entry by (see cl_index_of_entry). */
static long long cl_entry_port(const rlk_fx_cluster *c, const redisReply *e)
{
    int idx = cl_index_of_entry(c, e);

    if (idx >= 0)
        return c->node[idx].port;
    return e->elements >= 2 && e->element[1]->type == REDIS_REPLY_INTEGER ? e->element[1]->integer : -1;
}

int rlk_fx_cluster_url(const rlk_fx_cluster *c, int node, char *buf, size_t len)
{
    if (node < 0 || node >= c->n)
        return -1;
    return rlk_fx_url(&c->node[node], -1, buf, len);
}

int rlk_fx_cluster_urls(const rlk_fx_cluster *c, char *buf, size_t len)
{
    size_t used = 0;

    if (len)
        buf[0] = '\0';
    for (int i = 0; i < c->n; i++) {
        int w = snprintf(buf + used, len - used, "%sredis://127.0.0.1:%d", i ? "," : "",
                         c->node[i].port);

        if (w < 0 || (size_t)w >= len - used)
            return -1;
        used += (size_t)w;
    }
    return 0;
}

int rlk_fx_cluster_node_id(const rlk_fx_cluster *c, int node, char *buf, size_t len)
{
    redisReply *r = rlk_fx_cluster_command(c, node, "CLUSTER MYID");
    int rc = -1;

    if (r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) && r->len < len) {
        memcpy(buf, r->str, r->len + 1);
        rc = 0;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

/* ------------------------------------------------------------ state */

static int cl_cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cl_cmp_range(const void *a, const void *b)
{
    long x = atol(*(char *const *)a), y = atol(*(char *const *)b);

    return (x > y) - (x < y);
}

int rlk_fx_cluster_slot_map(const rlk_fx_cluster *c, int node, char *buf, size_t len)
{
    redisReply *r = rlk_fx_cluster_command(c, node, "CLUSTER SLOTS");
    char *lines[64];
    size_t nl = 0, used = 0;
    int rc = 0;

    if (len)
        buf[0] = '\0';
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements > 64) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (size_t i = 0; i < r->elements && rc == 0; i++) {
        redisReply *e = r->element[i];
        char *reps[8], line[256];
        size_t nr = 0;
        int w;

        if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 || e->elements > 10) {
            rc = -1;
            break;
        }
        for (size_t k = 3; k < e->elements; k++) {
            char port[16];

            snprintf(port, sizeof port, "%lld", cl_entry_port(c, e->element[k]));
            reps[nr++] = strdup(port);
        }
        qsort(reps, nr, sizeof *reps, cl_cmp_str);
        w = snprintf(line, sizeof line, "%lld-%lld:%lld", e->element[0]->integer,
                     e->element[1]->integer, cl_entry_port(c, e->element[2]));
        for (size_t k = 0; k < nr; k++) {
            if (w > 0 && (size_t)w < sizeof line)
                w += snprintf(line + w, sizeof line - (size_t)w, "%s%s", k ? "," : "/", reps[k]);
            free(reps[k]);
        }
        lines[nl++] = strdup(line);
    }
    freeReplyObject(r);
    qsort(lines, nl, sizeof *lines, cl_cmp_range);
    for (size_t i = 0; i < nl; i++) {
        int w = snprintf(buf + used, len - used, "%s%s", i ? " " : "", lines[i]);

        if (w < 0 || (size_t)w >= len - used)
            rc = -1;
        else
            used += (size_t)w;
        free(lines[i]);
    }
    return rc;
}

static int cl_state_ok(const rlk_fx_cluster *c, int node)
{
    redisReply *r = rlk_fx_cluster_command(c, node, "CLUSTER INFO");
    int ok = r && r->type == REDIS_REPLY_STRING && strstr(r->str, "cluster_state:ok") != NULL;

    if (r)
        freeReplyObject(r);
    return ok;
}

/* Every range with exactly one replica, and all 16384 slots covered. */
static int cl_map_complete(const char *map)
{
    long covered = 0;
    const char *p = map;

    while (*p) {
        long a, b;
        int consumed = 0;
        const char *slash, *end = strchr(p, ' ');

        if (sscanf(p, "%ld-%ld:%n", &a, &b, &consumed) != 2)
            return 0;
        slash = strchr(p, '/');
        if (!slash || (end && slash > end))
            return 0;       /* a range without a replica */
        {
            const char *comma = strchr(slash, ',');
            if (comma && (!end || comma < end))
                return 0;   /* more than one */
        }
        covered += b - a + 1;
        p = end ? end + 1 : p + strlen(p);
    }
    return covered == RLK_FX_CLUSTER_SLOTS;
}

int rlk_fx_cluster_wait_ok(rlk_fx_cluster *c, long timeout_ms)
{
    long long t0 = rlk_fx_now_ms(), deadline = t0 + timeout_ms;
    char first[1024], map[1024];

    first[0] = '\0';
    while (rlk_fx_now_ms() < deadline) {
        int ok = 1, seen = 0;

        for (int i = 0; i < c->n && ok; i++) {
            if (c->node[i].pid <= 0)
                continue;
            ok = cl_state_ok(c, i) && rlk_fx_cluster_slot_map(c, i, map, sizeof map) == 0 &&
                 cl_map_complete(map) && (!seen || strcmp(map, first) == 0);
            if (ok && !seen) {
                memcpy(first, map, sizeof first);
                seen = 1;
            }
        }
        if (ok && seen) {
            long long took = rlk_fx_now_ms() - t0;

            if (took > timeout_ms / 4)  /* how close a loaded machine comes to the bound */
                fprintf(stderr, "cluster: ok and agreed after %lld ms (bound %ld ms)\n", took,
                        timeout_ms);
            return 0;
        }
        rlk_fx_sleep_ms(20);
    }
    fprintf(stderr, "cluster: not ok / not agreed after %ld ms:\n", timeout_ms);
    for (int i = 0; i < c->n; i++) {
        if (c->node[i].pid <= 0)
            continue;
        rlk_fx_cluster_slot_map(c, i, map, sizeof map);
        fprintf(stderr, "  node %d (port %d): state %s, slots %s\n", i, c->node[i].port,
                cl_state_ok(c, i) ? "ok" : "not ok", map);
    }
    return -1;
}

int rlk_fx_cluster_role(const rlk_fx_cluster *c, int node)
{
    return node >= 0 && node < c->n ? rlk_fx_role(&c->node[node]) : 0;
}

int rlk_fx_cluster_master_of(const rlk_fx_cluster *c, int replica)
{
    redisReply *r = rlk_fx_cluster_command(c, replica, "ROLE");
    int idx = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
        strcmp(r->element[0]->str, "slave") == 0 && r->element[2]->type == REDIS_REPLY_INTEGER)
        idx = cl_index_of_port(c, r->element[2]->integer);
    if (r)
        freeReplyObject(r);
    return idx;
}

int rlk_fx_cluster_replica_of(const rlk_fx_cluster *c, int master)
{
    redisReply *r = rlk_fx_cluster_command(c, master, "ROLE");
    int idx = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements >= 3 &&
        strcmp(r->element[0]->str, "master") == 0 && r->element[2]->type == REDIS_REPLY_ARRAY &&
        r->element[2]->elements > 0) {
        redisReply *rep = r->element[2]->element[0];

        if (rep->type == REDIS_REPLY_ARRAY && rep->elements >= 2)
            idx = cl_index_of_port(c, atoll(rep->element[1]->str));
    }
    if (r)
        freeReplyObject(r);
    return idx;
}

int rlk_fx_cluster_slot_owner(const rlk_fx_cluster *c, int ask, int slot)
{
    redisReply *r = rlk_fx_cluster_command(c, ask, "CLUSTER SLOTS");
    int idx = -1;

    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        redisReply *e = r->element[i];

        if (e->type == REDIS_REPLY_ARRAY && e->elements >= 3 && e->element[0]->integer <= slot &&
            slot <= e->element[1]->integer)
            idx = cl_index_of_entry(c, e->element[2]);
    }
    if (r)
        freeReplyObject(r);
    return idx;
}

int rlk_fx_cluster_key_owner(const rlk_fx_cluster *c, const char *key)
{
    int ask = 0;

    while (ask < c->n - 1 && c->node[ask].pid <= 0)
        ask++;
    return rlk_fx_cluster_slot_owner(c, ask, rlk_fx_key_slot(key, strlen(key)));
}

/* ------------------------------------------------------------ start / stop */

/* Runs redis-cli --cluster create; its output goes to node 0's temp dir. */
static int cl_create(rlk_fx_cluster *c)
{
    char addrs[RLK_FX_CLUSTER_NODES][32], out[RLK_FX_PATH_MAX + 16], ca[RLK_FX_PATH_MAX + 16];
    const char *argv[RLK_FX_CLUSTER_NODES + 12];
    int argc = 0, status = -1;
    long long deadline;
    pid_t pid;

    snprintf(out, sizeof out, "%s/create.log", c->node[0].dir);
    argv[argc++] = rlk_fx_redis_cli_path();
    argv[argc++] = "--cluster";
    argv[argc++] = "create";
    for (int i = 0; i < c->n; i++) {
        snprintf(addrs[i], sizeof addrs[i], "127.0.0.1:%d", c->node[i].port);
        argv[argc++] = addrs[i];
    }
    argv[argc++] = "--cluster-replicas";
    argv[argc++] = "1";
    argv[argc++] = "--cluster-yes";
    if (c->node[0].tls) {       /* TLS-only nodes: redis-cli speaks TLS to them too */
        snprintf(ca, sizeof ca, "%s/ca.crt", rlk_fx_tls_dir());
        argv[argc++] = "--tls";
        argv[argc++] = "--cacert";
        argv[argc++] = ca;
    }
    argv[argc] = NULL;
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);

        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
            close(fd);
        }
        execvp(argv[0], (char *const *)argv);
        _exit(127);
    }
    deadline = rlk_fx_now_ms() + CL_CREATE_TIMEOUT_MS;
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (rlk_fx_now_ms() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            fprintf(stderr, "cluster: redis-cli --cluster create did not finish in %d ms\n",
                    CL_CREATE_TIMEOUT_MS);
            return -1;
        }
        rlk_fx_sleep_ms(10);
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char buf[2048];
        FILE *f = fopen(out, "r");
        size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;

        if (f)
            fclose(f);
        buf[n] = '\0';
        fprintf(stderr, "cluster: redis-cli --cluster create failed (status %d):\n%s\n", status,
                buf);
        return -1;
    }
    unlink(out);
    return 0;
}

int rlk_fx_cluster_start(rlk_fx_cluster *c)
{
    return rlk_fx_cluster_start_opts(c, NULL);
}

int rlk_fx_cluster_start_opts(rlk_fx_cluster *c, const rlk_fx_cluster_opts *o)
{
    long long t0 = rlk_fx_now_ms();
    /* Replicas sync at once (not after the default 5 s), and a master pings them every
     * second: CLUSTER SLOTS lists a replica only once its offset is above 0, which an
     * idle master's first replication PING does (after 10 s by default). */
    const char *extra[8] = {"--repl-diskless-sync-delay", "0", "--repl-ping-replica-period", "1",
                            NULL};
    char dbs[16];
    rlk_fx_config cfg;

    memset(c, 0, sizeof *c);
    rlk_fx_config_init(&cfg);
    cfg.cluster = 1;
    if (o && o->databases > 0) {
        snprintf(dbs, sizeof dbs, "%d", o->databases);
        extra[4] = "--cluster-databases";
        extra[5] = dbs;
        extra[6] = NULL;
    }
    cfg.extra = extra;
    if (rlk_fx_start_n(c->node, RLK_FX_CLUSTER_NODES, &cfg) != 0)
        return -1;
    c->n = RLK_FX_CLUSTER_NODES;
    for (int i = 0; i < c->n; i++)
        if (rlk_fx_cluster_node_id(c, i, c->id[i], sizeof c->id[i]) != 0)
            c->id[i][0] = '\0';
    if (cl_create(c) != 0 || rlk_fx_cluster_wait_ok(c, CL_START_TIMEOUT_MS) != 0) {
        rlk_fx_cluster_stop(c);
        return -1;
    }
    c->start_ms = rlk_fx_now_ms() - t0;
    return 0;
}

void rlk_fx_cluster_stop(rlk_fx_cluster *c)
{
    rlk_fx_stop_n(c->node, c->n);
    c->n = 0;
}

/* ------------------------------------------------------------ failover */

int rlk_fx_cluster_failover(rlk_fx_cluster *c, int replica, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;
    int master = rlk_fx_cluster_master_of(c, replica);

    if (master < 0) {
        fprintf(stderr, "cluster: node %d is not a replica\n", replica);
        return -1;
    }
    if (cl_ok_reply(rlk_fx_cluster_command(c, replica, "CLUSTER FAILOVER"), "CLUSTER FAILOVER",
                    replica) != 0)
        return -1;
    while (rlk_fx_cluster_role(c, replica) != 'M' || rlk_fx_cluster_role(c, master) != 'S' ||
           rlk_fx_cluster_master_of(c, master) != replica) {
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "cluster: roles of nodes %d/%d did not flip in %ld ms\n", replica,
                    master, timeout_ms);
            return -1;
        }
        rlk_fx_sleep_ms(20);
    }
    return rlk_fx_cluster_wait_ok(c, (long)(deadline - rlk_fx_now_ms()) > 0
                                         ? (long)(deadline - rlk_fx_now_ms()) : 1);
}

/* ------------------------------------------------------------ slot migration */

static int cl_setslot(const rlk_fx_cluster *c, int on, int slot, const char *how, int target)
{
    char id[64];

    if (rlk_fx_cluster_node_id(c, target, id, sizeof id) != 0)
        return -1;
    return cl_ok_reply(rlk_fx_cluster_command(c, on, "CLUSTER SETSLOT %d %s %s", slot, how, id),
                       how, on);
}

int rlk_fx_cluster_set_importing(const rlk_fx_cluster *c, int slot, int dst, int src)
{
    return cl_setslot(c, dst, slot, "IMPORTING", src);
}

int rlk_fx_cluster_set_migrating(const rlk_fx_cluster *c, int slot, int src, int dst)
{
    return cl_setslot(c, src, slot, "MIGRATING", dst);
}

int rlk_fx_cluster_migrate_keys(const rlk_fx_cluster *c, int slot, int src, int dst)
{
    int moved = 0;

    for (int round = 0; round < 1000; round++) {
        redisReply *keys = rlk_fx_cluster_command(c, src, "CLUSTER GETKEYSINSLOT %d 100", slot);
        const char *argv[110];
        size_t lens[110];
        char port[16];
        int argc = 0;
        redisContext *ctx;
        redisReply *r;

        if (!keys || keys->type != REDIS_REPLY_ARRAY) {
            if (keys)
                freeReplyObject(keys);
            return -1;
        }
        if (keys->elements == 0) {
            freeReplyObject(keys);
            return moved;
        }
        snprintf(port, sizeof port, "%d", c->node[dst].port);
        argv[argc++] = "MIGRATE";
        argv[argc++] = "127.0.0.1";
        argv[argc++] = port;
        argv[argc++] = "";
        argv[argc++] = "0";
        argv[argc++] = "5000";
        argv[argc++] = "KEYS";
        for (size_t i = 0; i < keys->elements; i++)
            argv[argc++] = keys->element[i]->str;
        for (int i = 0; i < argc; i++)
            lens[i] = strlen(argv[i]);
        for (size_t i = 0; i < keys->elements; i++)
            lens[7 + i] = keys->element[i]->len;
        ctx = rlk_fx_connect(&c->node[src]);
        r = ctx ? redisCommandArgv(ctx, argc, argv, lens) : NULL;
        if (ctx)
            redisFree(ctx);
        moved += (int)keys->elements;
        freeReplyObject(keys);
        if (cl_ok_reply(r, "MIGRATE", src) != 0)
            return -1;
    }
    return -1;
}

int rlk_fx_cluster_set_node(const rlk_fx_cluster *c, int slot, int owner)
{
    int src = -1;

    for (int i = 0; i < c->n; i++)
        if (i != owner && c->node[i].pid > 0 && rlk_fx_cluster_slot_owner(c, i, slot) == i)
            src = i;
    if (cl_setslot(c, owner, slot, "NODE", owner) != 0)
        return -1;
    if (src >= 0 && cl_setslot(c, src, slot, "NODE", owner) != 0)
        return -1;
    for (int i = 0; i < c->n; i++) {
        if (i == owner || i == src || c->node[i].pid <= 0 || rlk_fx_cluster_role(c, i) != 'M')
            continue;
        if (cl_setslot(c, i, slot, "NODE", owner) != 0)
            return -1;
    }
    return 0;
}

int rlk_fx_cluster_move_slot(rlk_fx_cluster *c, int slot, int src, int dst, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    if (rlk_fx_cluster_set_importing(c, slot, dst, src) != 0 ||
        rlk_fx_cluster_set_migrating(c, slot, src, dst) != 0 ||
        rlk_fx_cluster_migrate_keys(c, slot, src, dst) < 0 ||
        rlk_fx_cluster_set_node(c, slot, dst) != 0)
        return -1;
    for (;;) {
        int agreed = 1;

        for (int i = 0; i < c->n && agreed; i++)
            if (c->node[i].pid > 0 && rlk_fx_cluster_slot_owner(c, i, slot) != dst)
                agreed = 0;
        if (agreed)
            return 0;
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "cluster: slot %d not on node %d everywhere after %ld ms\n", slot, dst,
                    timeout_ms);
            return -1;
        }
        rlk_fx_sleep_ms(20);
    }
}

/* ------------------------------------------------------------ atomic slot migration */

/* The state of the newest migration of slot in a CLUSTER GETSLOTMIGRATIONS reply (RESP2:
 * an array of flat field/value arrays), into buf; "" when none names slot. */
static void cl_migration_state(const redisReply *r, int slot, char *buf, size_t len)
{
    long long newest = -1;

    buf[0] = '\0';
    for (size_t i = 0; r && r->type == REDIS_REPLY_ARRAY && i < r->elements; i++) {
        const redisReply *m = r->element[i];
        const char *state = NULL;
        long long created = 0;
        int covers = 0;

        if (m->type != REDIS_REPLY_ARRAY)
            continue;
        for (size_t k = 0; k + 1 < m->elements; k += 2) {
            const redisReply *f = m->element[k], *v = m->element[k + 1];

            if (f->type != REDIS_REPLY_STRING && f->type != REDIS_REPLY_STATUS)
                continue;
            if (strcmp(f->str, "state") == 0 && v->str)
                state = v->str;
            else if (strcmp(f->str, "create_time") == 0)
                created = v->type == REDIS_REPLY_INTEGER ? v->integer : v->str ? atoll(v->str) : 0;
            else if (strcmp(f->str, "slot_ranges") == 0 && v->str) {
                long a, b;

                for (const char *p = v->str; p && sscanf(p, "%ld-%ld", &a, &b) == 2;
                     p = strchr(p, ' ') ? strchr(p, ' ') + 1 : NULL)
                    covers |= a <= slot && slot <= b;
            }
        }
        if (covers && state && created >= newest) {
            newest = created;
            snprintf(buf, len, "%s", state);
        }
    }
}

static void cl_states_add(char *states, size_t len, const char *state)
{
    size_t n = strlen(states), sl = strlen(state);
    const char *last = strrchr(states, ' ');

    last = last ? last + 1 : states;
    if (!state[0] || (n && strcmp(last, state) == 0) || n + sl + 2 > len)
        return;
    snprintf(states + n, len - n, "%s%s", n ? " " : "", state);
}

int rlk_fx_cluster_migrate_slots(rlk_fx_cluster *c, int slot, int src, int dst, long timeout_ms,
                                 char *states, size_t states_len)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;
    char id[64], state[64], seen[256] = "";
    redisReply *r;

    if (rlk_fx_cluster_node_id(c, dst, id, sizeof id) != 0)
        return -1;
    r = rlk_fx_cluster_command(c, src, "CLUSTER MIGRATESLOTS SLOTSRANGE %d %d NODE %s", slot,
                               slot, id);
    if (cl_ok_reply(r, "CLUSTER MIGRATESLOTS", src) != 0)
        return -1;
    for (;;) {
        int agreed = 1;

        r = rlk_fx_cluster_command(c, src, "CLUSTER GETSLOTMIGRATIONS");
        cl_migration_state(r, slot, state, sizeof state);
        if (r)
            freeReplyObject(r);
        cl_states_add(seen, sizeof seen, state);
        if (strcmp(state, "failed") == 0 || strcmp(state, "cancelled") == 0) {
            fprintf(stderr, "cluster: migration of slot %d from node %d to %d: %s (%s)\n", slot,
                    src, dst, state, seen);
            return -1;
        }
        for (int i = 0; i < c->n && agreed; i++)
            if (c->node[i].pid > 0 && rlk_fx_cluster_slot_owner(c, i, slot) != dst)
                agreed = 0;
        if (agreed && (!state[0] || strcmp(state, "success") == 0)) {
            if (states && states_len)
                snprintf(states, states_len, "%s", seen);
            return 0;
        }
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "cluster: slot %d not on node %d everywhere after %ld ms (states: %s)\n",
                    slot, dst, timeout_ms, seen);
            return -1;
        }
        rlk_fx_sleep_ms(5);
    }
}
