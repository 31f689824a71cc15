/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.c - see sentinel.h.
 */
#include "sentinel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SN_START_TIMEOUT_MS 30000

static long long sn_info_field(const rlk_fx_server *srv, const char *section, const char *field,
                               char *text, size_t len)
{
    redisReply *r = rlk_fx_command(srv, "INFO %s", section);
    long long v = -1;

    if (text && len)
        text[0] = '\0';
    if (r && r->type == REDIS_REPLY_STRING) {
        const char *p = strstr(r->str, field);

        if (p) {
            p += strlen(field);
            v = atoll(p);
            if (text && len) {
                size_t n = strcspn(p, "\r\n");

                if (n >= len)
                    n = len - 1;
                memcpy(text, p, n);
                text[n] = '\0';
            }
        }
    }
    if (r)
        freeReplyObject(r);
    return v;
}

/* A field of SENTINEL MASTER NAME on sentinel i (a flat key/value array). */
static long long sn_master_field(const rlk_fx_sentinel *s, int i, const char *field)
{
    redisReply *r = rlk_fx_command(&s->sentinel[i], "SENTINEL MASTER %s", s->name);
    long long v = -1;

    for (size_t k = 0; r && r->type == REDIS_REPLY_ARRAY && k + 1 < r->elements; k += 2)
        if (r->element[k]->type == REDIS_REPLY_STRING && strcmp(r->element[k]->str, field) == 0)
            v = atoll(r->element[k + 1]->str);
    if (r)
        freeReplyObject(r);
    return v;
}

int rlk_fx_sentinel_master_port(const rlk_fx_sentinel *s, int i)
{
    redisReply *r = rlk_fx_command(&s->sentinel[i], "SENTINEL GET-MASTER-ADDR-BY-NAME %s",
                                   s->name);
    int port = -1;

    if (r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING)
        port = atoi(r->element[1]->str);
    if (r)
        freeReplyObject(r);
    return port;
}

int rlk_fx_sentinel_role(const rlk_fx_sentinel *s, int data)
{
    return rlk_fx_role(&s->data[data]);
}

int rlk_fx_sentinel_master(const rlk_fx_sentinel *s)
{
    int port = rlk_fx_sentinel_master_port(s, 0), idx = -1;

    for (int i = 1; i < RLK_FX_SENTINELS; i++)
        if (rlk_fx_sentinel_master_port(s, i) != port)
            return -1;
    for (int d = 0; d < 2; d++)
        if (s->data[d].port == port)
            idx = d;
    if (idx < 0 || rlk_fx_sentinel_role(s, idx) != 'M')
        return -1;
    return idx;
}

/* The replica (other) follows the master (idx) with its link up. */
static int sn_replica_up(const rlk_fx_sentinel *s, int idx)
{
    char status[16];

    sn_info_field(&s->data[1 - idx], "replication", "master_link_status:", status, sizeof status);
    return strcmp(status, "up") == 0 &&
           sn_info_field(&s->data[1 - idx], "replication", "master_port:", NULL, 0) ==
               s->data[idx].port;
}

int rlk_fx_sentinel_replica_up(const rlk_fx_sentinel *s, int master)
{
    return sn_replica_up(s, master);
}

/* Every sentinel: the master known, 1 replica, 2 other sentinels. */
static int sn_all_know(const rlk_fx_sentinel *s)
{
    for (int i = 0; i < RLK_FX_SENTINELS; i++)
        if (sn_master_field(s, i, "num-slaves") != 1 ||
            sn_master_field(s, i, "num-other-sentinels") != RLK_FX_SENTINELS - 1)
            return 0;
    return 1;
}

/* data_pass: the data nodes' requirepass and masterauth; sentinel_pass: the
 * sentinels' requirepass (NULL: none). */
static int sn_start(rlk_fx_sentinel *s, const char *name, int quick, const char *data_pass,
                    const char *sentinel_pass)
{
    long long t0 = rlk_fx_now_ms(), deadline = t0 + SN_START_TIMEOUT_MS;
    char port[16], conf[768], auth[256] = "";
    /* Replicas sync at once, not after the default 5 s diskless-sync delay. Either node may
     * be a replica after a failover: both know the master's password. */
    const char *master_args[] = {"--repl-diskless-sync-delay", "0", "--masterauth", data_pass,
                                 NULL};
    const char *replica_args[] = {"--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1",
                                  port, "--masterauth", data_pass, NULL};
    rlk_fx_config cfg;

    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name ? name : "rlkmaster");
    if (!data_pass)
        master_args[2] = replica_args[5] = NULL;
    else
        snprintf(auth, sizeof auth, "sentinel auth-pass %s %s\n", s->name, data_pass);
    rlk_fx_config_init(&cfg);
    cfg.requirepass = data_pass;
    cfg.extra = master_args;
    if (rlk_fx_start(&s->data[0], &cfg) != 0)
        return -1;
    snprintf(port, sizeof port, "%d", s->data[0].port);
    cfg.extra = replica_args;
    if (rlk_fx_start(&s->data[1], &cfg) != 0)
        goto fail;
    /* The replica linked first: the sentinels' first INFO of the master lists it. */
    while (!sn_replica_up(s, 0)) {
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "sentinel: the replica never linked to the master\n");
            goto fail;
        }
        rlk_fx_sleep_ms(10);
    }
    snprintf(conf, sizeof conf,
             "sentinel monitor %s 127.0.0.1 %d 2\n"
             "sentinel down-after-milliseconds %s 1000\n"
             "sentinel failover-timeout %s 4000\n"
             "sentinel parallel-syncs %s 1\n%s",
             s->name, s->data[0].port, s->name, s->name, s->name, auth);
    rlk_fx_config_init(&cfg);
    cfg.sentinel_conf = conf;
    cfg.requirepass = sentinel_pass;    /* also what each sentinel sends the others */
    if (rlk_fx_start_n(s->sentinel, RLK_FX_SENTINELS, &cfg) != 0)
        goto fail;
    /* Quick: Sentinel's own periods shortened for loopback (SENTINEL DEBUG, Redis 7.0 and
     * later): INFO of the master and replica every 500 ms, not every 10 s, so a replica is
     * seen as promotable and a returning old master is demoted within a second instead of up
     * to 10 s later; hello messages every 500 ms, not 2 s, so the sentinels find each other
     * sooner. Detection (down-after-milliseconds, ping period) and the failover itself are
     * unchanged. A server without the command keeps its defaults: slower, not wrong. */
    for (int i = 0; quick && i < RLK_FX_SENTINELS; i++) {
        redisReply *r = rlk_fx_command(&s->sentinel[i], "SENTINEL DEBUG info-period 500 "
                                       "publish-period 500");

        if (r)
            freeReplyObject(r);
    }
    while (!sn_replica_up(s, 0) || !sn_all_know(s)) {
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "sentinel: replica link %s; sentinels know %lld/%lld/%lld replicas "
                    "and %lld/%lld/%lld other sentinels after %d ms\n",
                    sn_replica_up(s, 0) ? "up" : "down", sn_master_field(s, 0, "num-slaves"),
                    sn_master_field(s, 1, "num-slaves"), sn_master_field(s, 2, "num-slaves"),
                    sn_master_field(s, 0, "num-other-sentinels"),
                    sn_master_field(s, 1, "num-other-sentinels"),
                    sn_master_field(s, 2, "num-other-sentinels"), SN_START_TIMEOUT_MS);
            goto fail;
        }
        rlk_fx_sleep_ms(50);
    }
    s->start_ms = rlk_fx_now_ms() - t0;
    return 0;
fail:
    rlk_fx_sentinel_stop(s);
    return -1;
}

int rlk_fx_sentinel_start(rlk_fx_sentinel *s, const char *name)
{
    return sn_start(s, name, 0, NULL, NULL);
}

int rlk_fx_sentinel_start_quick(rlk_fx_sentinel *s, const char *name)
{
    return sn_start(s, name, 1, NULL, NULL);
}

int rlk_fx_sentinel_start_auth(rlk_fx_sentinel *s, const char *name, const char *data_pass,
                               const char *sentinel_pass)
{
    return sn_start(s, name, 1, data_pass, sentinel_pass);
}

void rlk_fx_sentinel_stop(rlk_fx_sentinel *s)
{
    rlk_fx_stop_n(s->sentinel, RLK_FX_SENTINELS);
    rlk_fx_stop_n(s->data, 2);
}

/* The value of field key in a flat [k1, v1, k2, v2 ...] reply, or NULL. */
static const char *sn_field(const redisReply *m, const char *key)
{
    for (size_t i = 0; m->type == REDIS_REPLY_ARRAY && i + 1 < m->elements; i += 2)
        if (m->element[i]->type == REDIS_REPLY_STRING && strcmp(m->element[i]->str, key) == 0)
            return m->element[i + 1]->type == REDIS_REPLY_STRING ? m->element[i + 1]->str : NULL;
    return NULL;
}

/* 1 when sentinel i lists a replica it would promote now, and has seen it
 * report the replica's role: flags "slave" only, ROLE slave in its last INFO,
 * master link ok, that INFO younger than 2 s. The role matters to the other
 * sentinels too: one whose last INFO still showed the just demoted old master
 * as a master takes that role as old news, and when the node says master
 * again on its promotion, it "converts" the new master back to a replica at
 * once, before the leader's new configuration reaches it (seen under load:
 * the lock then expired on the old master while its holder renewed it on the
 * converted one). A sentinel that saw the node as a replica waits four
 * publish periods after the change instead, time for the new configuration. */
static int sn_promotable_by(const rlk_fx_sentinel *s, int i)
{
    redisReply *r = rlk_fx_command(&s->sentinel[i], "SENTINEL REPLICAS %s", s->name);
    int ok = 0;

    for (size_t k = 0; r && r->type == REDIS_REPLY_ARRAY && k < r->elements; k++) {
        const char *flags = sn_field(r->element[k], "flags");
        const char *role = sn_field(r->element[k], "role-reported");
        const char *link = sn_field(r->element[k], "master-link-status");
        const char *refresh = sn_field(r->element[k], "info-refresh");

        ok |= flags && strcmp(flags, "slave") == 0 && role && strcmp(role, "slave") == 0 &&
              link && strcmp(link, "ok") == 0 && refresh && atoll(refresh) < 2000;
    }
    if (r)
        freeReplyObject(r);
    return ok;
}

/* Every sentinel agrees on the master and would promote the replica. */
static int sn_promotable(const rlk_fx_sentinel *s)
{
    if (rlk_fx_sentinel_master(s) < 0)
        return 0;
    for (int i = 0; i < RLK_FX_SENTINELS; i++)
        if (!sn_promotable_by(s, i))
            return 0;
    return 1;
}

int rlk_fx_sentinel_wait_promotable(const rlk_fx_sentinel *s, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    while (!sn_promotable(s)) {
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(100);
    }
    return 0;
}

void rlk_fx_sentinel_print_events(const rlk_fx_sentinel *s, int i)
{
    char line[512];
    FILE *f = fopen(s->sentinel[i].log_path, "r");

    if (!f)
        return;
    fprintf(stderr, "sentinel %d's events (its log, wall-clock times):\n", i);
    while (fgets(line, sizeof line, f))
        if (strstr(line, " # +") || strstr(line, " # -") || strstr(line, " * +") ||
            strstr(line, " * -"))
            fprintf(stderr, "  %s", line);
    fclose(f);
}

int rlk_fx_sentinel_failover(rlk_fx_sentinel *s, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;
    int old, want;
    redisReply *r;

    if (rlk_fx_sentinel_wait_promotable(s, timeout_ms) != 0)
        fprintf(stderr, "sentinel: no replica every sentinel would promote after %ld ms\n",
                timeout_ms);
    old = rlk_fx_sentinel_master(s);
    if (old < 0) {
        fprintf(stderr, "sentinel: no agreed master before the failover\n");
        return -1;
    }
    want = 1 - old;
    r = rlk_fx_command(&s->sentinel[0], "SENTINEL FAILOVER %s", s->name);
    if (!r || r->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "sentinel: SENTINEL FAILOVER: %s\n", r ? r->str : "no reply");
        if (r)
            freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    while (rlk_fx_sentinel_master(s) != want) {
        if (rlk_fx_now_ms() > deadline) {
            fprintf(stderr, "sentinel: after %ld ms the sentinels name ports %d/%d/%d (want %d), "
                    "ROLE %c/%c\n", timeout_ms, rlk_fx_sentinel_master_port(s, 0),
                    rlk_fx_sentinel_master_port(s, 1), rlk_fx_sentinel_master_port(s, 2),
                    s->data[want].port, rlk_fx_sentinel_role(s, 0) ? rlk_fx_sentinel_role(s, 0) : '?',
                    rlk_fx_sentinel_role(s, 1) ? rlk_fx_sentinel_role(s, 1) : '?');
            rlk_fx_sentinel_print_events(s, 0);
            return -1;
        }
        rlk_fx_sleep_ms(50);
    }
    return 0;
}

int rlk_fx_sentinel_wait_demoted(const rlk_fx_sentinel *s, int old, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    while (rlk_fx_sentinel_role(s, old) != 'S' || !sn_replica_up(s, 1 - old)) {
        if (rlk_fx_now_ms() > deadline)
            return -1;
        rlk_fx_sleep_ms(50);
    }
    return 0;
}

int rlk_fx_sentinel_urls(const rlk_fx_sentinel *s, char *buf, size_t len)
{
    int w = snprintf(buf, len, "redis://127.0.0.1:%d,redis://127.0.0.1:%d,redis://127.0.0.1:%d",
                     s->sentinel[0].port, s->sentinel[1].port, s->sentinel[2].port);

    return (w < 0 || (size_t)w >= len) ? -1 : 0;
}
