/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_util.c - see cl_util.h.
 */
#include "cl_util.h"
#include "tk_util.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

int cl_start(const char *prog, rlk_fx_cluster *cl, int seed_a, int seed_b, char *url,
             size_t len)
{
    char a[128], b[128];

    if (rlk_fx_cluster_start(cl) != 0) {
        fprintf(stderr, "%s: the cluster did not start\n", prog);
        return -1;
    }
    tk_say("cluster started in %lld ms", cl->start_ms);
    rlk_fx_cluster_url(cl, seed_a, a, sizeof a);
    rlk_fx_cluster_url(cl, seed_b, b, sizeof b);
    /* past "redis://" or "rediss://" (a TLS-only cluster: $RLK_TEST_TLS) */
    snprintf(url, len, "%s+cluster://%s,%s", cl->node[seed_a].tls ? "rediss" : "redis",
             strstr(a, "://") + 3, strstr(b, "://") + 3);
    return 0;
}

void cl_name_on(const rlk_fx_cluster *cl, const char *prefix, int master, char *buf, size_t len)
{
    rlk_fx_cluster_name_on(cl, prefix, master, buf, len);
}

int cl_masters(const rlk_fx_cluster *cl, int out[3])
{
    int n = 0;

    for (int i = 0; i < cl->n && n < 3; i++)
        if (rlk_fx_cluster_role(cl, i) == 'M')
            out[n++] = i;
    return n;
}

long long cl_pttl(const rlk_fx_cluster *cl, const char *key)
{
    int owner = rlk_fx_cluster_key_owner(cl, key);
    redisReply *r = rlk_fx_cluster_command(cl, owner, "PTTL %s", key);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -3;

    if (r)
        freeReplyObject(r);
    return v;
}

/* Subscribers of ch on node i: PUBSUB NUMSUB (sharded: SHARDNUMSUB). */
static long long cl_numsub(const rlk_fx_cluster *cl, int i, const char *ch, int sharded)
{
    long long n = tk_numsub_reply(rlk_fx_cluster_command(cl, i, sharded ? "PUBSUB SHARDNUMSUB %s"
                                                                         : "PUBSUB NUMSUB %s", ch));

    return n < 0 ? 0 : n;
}

int cl_subscribed(const rlk_fx_cluster *cl, const char *name)
{
    char ch[160];
    long long subs = 0;

    snprintf(ch, sizeof ch, "redisson_lock__channel:{%s}", name);
    for (int i = 0; i < cl->n; i++)
        subs += cl_numsub(cl, i, ch, 0) + cl_numsub(cl, i, ch, 1);
    return subs > 0;
}

int cl_shard_subscribed_on(const rlk_fx_cluster *cl, const char *channel)
{
    for (int i = 0; i < cl->n; i++)
        if (cl_numsub(cl, i, channel, 1) > 0)
            return i;
    return -1;
}

int cl_wait_subscribed(const rlk_fx_cluster *cl, const char *name, long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms();

    while (!cl_subscribed(cl, name)) {
        if (rlk_fx_now_ms() - t0 >= timeout_ms)
            return -1;
        nanosleep(&(struct timespec){0, 5000000L}, NULL);
    }
    return 0;
}

void cl_pause_ms(long long ms)
{
    long long t0 = rlk_fx_now_ms();

    while (rlk_fx_now_ms() - t0 < ms)
        nanosleep(&(struct timespec){0, 20000000L}, NULL);
}
