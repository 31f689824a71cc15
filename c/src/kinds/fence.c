/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fence.c - checks of fencing tokens at the protected resource
 * (docs/locks/fenced.md, "Checking the token at the resource"):
 * rlk_fence_check, compare-and-remember for a resource the application keeps
 * itself, and rlk_fence_write, a fenced write on data in Redis through the
 * scripts scripts/fence/<op>.lua by name (rlk_evalv); rlk_fence_claim, a
 * holder raising every fence it will use to its token (fence/check on each).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/error.h"
#include "kinds/fence.h"
#include "runtime/fam.h"
#include "engine/metrics.h"
#include "runtime/rt.h"

int rlk_fence_check(rlk_fence_state *st, uint64_t token)
{
    if (!st || token == 0)
        return RLK_ERR_ARG;
    if (token < st->highest)
        return RLK_ERR_FENCED;
    st->highest = token;
    return RLK_OK;
}

/* The operations scripts/fence/ has, each a script "fence/<op>". */
static const char *const rlk_fence_ops[] = {
    "check", "del", "expire", "hset", "incrby", "lpush", "pexpire", "rpush", "set", "xadd", NULL,
};

#define RLK_FENCE_MAX_ARGS 1024

/* RLK_OK for a token in 1..2^53-2 (a Lua number keeps it exact), else RLK_ERR_ARG and who's
 * message in msg. */
static int rlk_fence_token_arg(const char *who, uint64_t token, char *msg, size_t msglen)
{
    if (token != 0 && token <= 9007199254740990ULL)
        return RLK_OK;
    snprintf(msg, msglen, "%s: token %" PRIu64 " is not in 1..9007199254740990", who, token);
    return RLK_ERR_ARG;
}

/* The highest token of a "RLK_FENCED <highest>" reply, or 0 when msg is not one. */
static uint64_t rlk_fence_refused(const char *msg)
{
    static const char prefix[] = "RLK_FENCED ";
    char *end;
    unsigned long long v;

    if (!msg || strncmp(msg, prefix, sizeof prefix - 1) != 0)
        return 0;
    msg += sizeof prefix - 1;
    if (*msg < '1' || *msg > '9')
        return 0;
    v = strtoull(msg, &end, 10);
    return *end == '\0' || *end == ' ' ? (uint64_t)v : 0;
}

int rlk_fence_call_make(rlk_fence_call *fc, const char *who, const char *op, const char *fence,
                        const char *data, uint64_t token, int nargs, const char *const *args,
                        const size_t *arglens, char *msg, size_t msglen)
{
    int is_check, known = 0;
    size_t bytes, flen, dlen;
    char *p;

    memset(fc, 0, sizeof *fc);
    for (int i = 0; op && rlk_fence_ops[i]; i++)
        known |= strcmp(op, rlk_fence_ops[i]) == 0;
    if (!known) {
        snprintf(msg, msglen, "%s: op %s%s%s is not one of check del expire hset incrby lpush "
                 "pexpire rpush set xadd", who, op ? "'" : "", op ? op : "NULL", op ? "'" : "");
        return RLK_ERR_ARG;
    }
    is_check = strcmp(op, "check") == 0;
    if (!fence || !*fence) {
        snprintf(msg, msglen, "%s: no fence key", who);
        return RLK_ERR_ARG;
    }
    if (is_check ? (data != NULL || nargs != 0) : (!data || !*data)) {
        snprintf(msg, msglen, "%s: %s", who, is_check ? "check takes no data key and no arguments"
                                                     : "no data key");
        return RLK_ERR_ARG;
    }
    if (rlk_fence_token_arg(who, token, msg, msglen) != RLK_OK)
        return RLK_ERR_ARG;
    if (nargs < 0 || nargs > RLK_FENCE_MAX_ARGS || (nargs > 0 && !args)) {
        snprintf(msg, msglen, "%s: nargs %d without args, or above %d", who, nargs,
                 RLK_FENCE_MAX_ARGS);
        return RLK_ERR_ARG;
    }
    for (int i = 0; i < nargs; i++)
        if (!args[i]) {
            snprintf(msg, msglen, "%s: args[%d] is NULL", who, i);
            return RLK_ERR_ARG;
        }
    /* One block: the lengths, the argument pointers, then the keys' and arguments' bytes. */
    flen = strlen(fence) + 1;
    dlen = data ? strlen(data) + 1 : 0;
    bytes = (size_t)(nargs + 1) * (sizeof *fc->lens + sizeof *fc->argv) + flen + dlen;
    for (int i = 0; i < nargs; i++)
        bytes += (arglens ? arglens[i] : strlen(args[i])) + 1;
    if (!(fc->lens = malloc(bytes))) {
        snprintf(msg, msglen, "%s: out of memory", who);
        return RLK_ERR_NOMEM;
    }
    fc->argv = (const char **)(fc->lens + nargs + 1);
    p = (char *)(fc->argv + nargs + 1);
    snprintf(fc->script, sizeof fc->script, "fence/%s", op);
    snprintf(fc->token, sizeof fc->token, "%" PRIu64, token);
    fc->keys[0] = memcpy(p, fence, flen);
    fc->keys[1] = data ? memcpy(p + flen, data, dlen) : NULL;
    p += flen + dlen;
    fc->nkeys = is_check ? 1 : 2;
    fc->nargs = nargs + 1;
    fc->argv[0] = fc->token;
    fc->lens[0] = strlen(fc->token);
    for (int i = 0; i < nargs; i++) {
        fc->lens[i + 1] = arglens ? arglens[i] : strlen(args[i]);
        fc->argv[i + 1] = memcpy(p, args[i], fc->lens[i + 1]);
        p[fc->lens[i + 1]] = '\0';
        p += fc->lens[i + 1] + 1;
    }
    return RLK_OK;
}

void rlk_fence_call_free(rlk_fence_call *fc)
{
    free(fc->lens);
    fc->argv = NULL;
    fc->lens = NULL;
}

int rlk_fence_stale(const rlk_fence_call *fc, const char *errstr, uint64_t *highest, char *msg,
                    size_t msglen)
{
    uint64_t h = rlk_fence_refused(errstr);

    if (!h)
        return 0;
    if (highest)
        *highest = h;
    snprintf(msg, msglen, "%s: token %s is below the highest accepted, %" PRIu64 " (RLK_FENCED %"
             PRIu64 ")", fc->keys[0], fc->token, h, h);
    return RLK_ERR_FENCED;
}

int rlk_fence_write(rlk_client *c, const char *op, const char *fence, const char *data,
                    uint64_t token, int nargs, const char *const *args, const size_t *arglens,
                    uint64_t *highest, redisReply **reply)
{
    rlk_fence_call fc;
    char msg[512];
    int rc, acked = 1;
    redisReply *r = NULL;
    rlk_rt *rt;

    if (reply)
        *reply = NULL;
    if (highest)
        *highest = 0;
    if (!c)
        return RLK_ERR_ARG;
    rc = rlk_fence_call_make(&fc, "rlk_fence_write", op, fence, data, token, nargs, args, arglens,
                             msg, sizeof msg);
    if (rc != RLK_OK)
        return rlk_set_error(c, rc, "%s", msg);
    rc = rlk_evalv(c, fc.script, fc.nkeys, fc.keys, NULL, fc.nargs, fc.argv, fc.lens, &r);
    if (rc == RLK_ERR_SCRIPT && rlk_fence_stale(&fc, rlk_errstr(c), highest, msg, sizeof msg))
        rc = rlk_set_error(c, RLK_ERR_FENCED, "%s", msg);
    /* Accepted on the master, but fewer than min_replicas replicas acknowledged it: a
     * failover may lose it (and the fence's new highest). Done, not undone (counted as
     * accepted, its reply given): said so, RLK_ERR_NOREPLICAS. */
    if (rc == RLK_OK)
        acked = rlk_fam_acks_done(c, "fenced write", fence, "accepted") == RLK_OK;
    rlk_fence_call_free(&fc);
    if ((rt = rlk_rt_get(c)) != NULL)
        rlk_metrics_fence(&rt->counters, fence, rc);
    if (rc != RLK_OK)
        return rc;
    if (reply)
        *reply = r;
    else
        freeReplyObject(r);
    return acked ? RLK_OK : RLK_ERR_NOREPLICAS;
}

int rlk_fence_claim_args(const char *who, uint64_t token, int nfences, const char *const *fences,
                         char *msg, size_t msglen)
{
    if (nfences < 1 || nfences > RLK_FENCE_MAX_ARGS || !fences) {
        snprintf(msg, msglen, "%s: %d fences: give 1..%d fence keys", who, nfences,
                 RLK_FENCE_MAX_ARGS);
        return RLK_ERR_ARG;
    }
    for (int i = 0; i < nfences; i++)
        if (!fences[i] || !*fences[i]) {
            snprintf(msg, msglen, "%s: fences[%d] is %s", who, i, fences[i] ? "empty" : "NULL");
            return RLK_ERR_ARG;
        }
    return rlk_fence_token_arg(who, token, msg, msglen);
}

int rlk_fence_claim(rlk_client *c, uint64_t token, int nfences, const char *const *fences,
                    uint64_t *highest)
{
    char msg[512];
    int rc;

    if (highest)
        *highest = 0;
    if (!c)
        return RLK_ERR_ARG;
    rc = rlk_fence_claim_args("rlk_fence_claim", token, nfences, fences, msg, sizeof msg);
    if (rc != RLK_OK)
        return rlk_set_error(c, rc, "%s", msg);
    /* One fence/check each, in order (each routed by its own key: the fences may live in
     * different slots): from its reply on, that fence refuses every lower token. A refusal
     * stops the claim; the fences before it stay raised, which refuses only tokens below
     * this one. */
    for (int i = 0; i < nfences; i++)
        if ((rc = rlk_fence_write(c, "check", fences[i], NULL, token, 0, NULL, NULL, highest,
                                  NULL)) != RLK_OK)
            return rc;
    return RLK_OK;
}
