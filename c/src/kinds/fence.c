/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fence.c - checks of fencing tokens at the protected resource
 * (docs/locks/fenced.md, "Checking the token at the resource"):
 * rlk_fence_check, compare-and-remember for a resource the application keeps
 * itself, and rlk_fence_write, a fenced write on data in Redis through the
 * scripts scripts/fence/<op>.lua by name (rlk_evalv).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/error.h"

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

int rlk_fence_write(rlk_client *c, const char *op, const char *fence, const char *data,
                    uint64_t token, int nargs, const char *const *args, const size_t *arglens,
                    uint64_t *highest, redisReply **reply)
{
    char name[32], tok[24];
    const char *keys[2];
    const char **argv = NULL;
    size_t *lens = NULL;
    int nkeys, is_check, known = 0, rc;
    redisReply *r = NULL;

    if (reply)
        *reply = NULL;
    if (highest)
        *highest = 0;
    if (!c)
        return RLK_ERR_ARG;
    for (int i = 0; op && rlk_fence_ops[i]; i++)
        known |= strcmp(op, rlk_fence_ops[i]) == 0;
    if (!known)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_fence_write: op %s%s%s is not one of check del expire hset "
                             "incrby lpush pexpire rpush set xadd", op ? "'" : "", op ? op : "NULL", op ? "'" : "");
    is_check = strcmp(op, "check") == 0;
    if (!fence || !*fence)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_fence_write: no fence key");
    if (is_check ? (data != NULL || nargs != 0) : (!data || !*data))
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_fence_write: %s", is_check
                             ? "check takes no data key and no arguments" : "no data key");
    if (token == 0 || token > 9007199254740990ULL)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_fence_write: token %" PRIu64 " is not in 1..9007199254740990",
                             token);
    if (nargs < 0 || nargs > RLK_FENCE_MAX_ARGS || (nargs > 0 && !args))
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_fence_write: nargs %d without args, or above %d", nargs,
                             RLK_FENCE_MAX_ARGS);
    snprintf(name, sizeof name, "fence/%s", op);
    snprintf(tok, sizeof tok, "%" PRIu64, token);
    keys[0] = fence;
    keys[1] = data;
    nkeys = is_check ? 1 : 2;
    argv = malloc(sizeof *argv * (size_t)(nargs + 1));
    lens = malloc(sizeof *lens * (size_t)(nargs + 1));
    if (!argv || !lens) {
        free(argv);
        free(lens);
        return rlk_set_error(c, RLK_ERR_NOMEM, "rlk_fence_write: out of memory");
    }
    argv[0] = tok;
    lens[0] = strlen(tok);
    for (int i = 0; i < nargs; i++) {
        if (!args[i]) {
            free(argv);
            free(lens);
            return rlk_set_error(c, RLK_ERR_ARG, "rlk_fence_write: args[%d] is NULL", i);
        }
        argv[i + 1] = args[i];
        lens[i + 1] = arglens ? arglens[i] : strlen(args[i]);
    }
    rc = rlk_evalv(c, name, nkeys, keys, NULL, nargs + 1, argv, lens, &r);
    free(argv);
    free(lens);
    if (rc == RLK_ERR_SCRIPT) {
        uint64_t h = rlk_fence_refused(rlk_errstr(c));
        if (h) {
            if (highest)
                *highest = h;
            return rlk_set_error(c, RLK_ERR_FENCED, "%s: token %" PRIu64 " is below the highest accepted, %"
                                 PRIu64 " (RLK_FENCED %" PRIu64 ")", fence, token, h, h);
        }
        return rc;
    }
    if (rc != RLK_OK)
        return rc;
    if (reply)
        *reply = r;
    else
        freeReplyObject(r);
    return RLK_OK;
}
