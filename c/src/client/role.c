/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * role.c - see role.h.
 */
#include <stdio.h>
#include <string.h>

#include "client/client_t.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/pool.h"
#include "client/role.h"
#include "client/scripts.h"
#include "client/topo.h"

/* The role of a ROLE reply (UNKNOWN for an error reply or an odd shape);
 * a replica's master goes to of. */
static int rlk_role_parse(const redisReply *r, char *of, size_t len)
{
    const char *what;

    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 || r->element[0]->type != REDIS_REPLY_STRING)
        return RLK_ROLE_UNKNOWN;
    what = r->element[0]->str;
    if (strcmp(what, "master") == 0)
        return RLK_ROLE_MASTER;
    if (strcmp(what, "slave") != 0)
        return RLK_ROLE_UNKNOWN;
    if (r->elements >= 3 && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[2]->type == REDIS_REPLY_INTEGER)
        snprintf(of, len, strchr(r->element[1]->str, ':') ? "[%s]:%lld" : "%s:%lld",
                 r->element[1]->str, r->element[2]->integer);
    else
        snprintf(of, len, "?");
    return RLK_ROLE_REPLICA;
}

static void rlk_role_set(rlk_client *c, int kind, const char *of)
{
    pthread_mutex_lock(&c->role.mu);
    c->role.kind = kind;
    c->role.asked = 1;
    snprintf(c->role.of, sizeof c->role.of, "%s", of);
    pthread_mutex_unlock(&c->role.mu);
}

typedef struct rlk_role_answer {
    int kind;
    char of[300];
} rlk_role_answer;

static int rlk_op_role(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                       int *written)
{
    rlk_role_answer *a = arg;
    const char *argv[1] = {"ROLE"};
    redisReply *r;
    int rc = rlk_conn_command(c, ctx, "ROLE", 1, argv, NULL, &r, written);

    (void)reply;
    if (rc != RLK_OK) {
        /* A refusal (NOPERM for an ACL user without +role, an old server) is an answer: not
         * known, and not asked again before every write. A lost connection is not. */
        if (rc != RLK_ERR_IO && rc != RLK_ERR_TIMEOUT)
            rlk_role_set(c, RLK_ROLE_UNKNOWN, "");
        return rc;
    }
    a->kind = rlk_role_parse(r, a->of, sizeof a->of);
    freeReplyObject(r);
    rlk_role_set(c, a->kind, a->of);
    return RLK_OK;
}

int rlk_role_refuse(rlk_client *c, const rlk_script_info *s)
{
    rlk_role_answer a = {RLK_ROLE_UNKNOWN, ""};
    redisReply *unused;
    char msg[RLK_ERRSTR_MAX];
    int kind, asked, rc, err = rlk_err(c);

    if (!rlk_script_writes(s))
        return RLK_OK;
    pthread_mutex_lock(&c->role.mu);
    kind = c->role.kind;
    asked = c->role.asked;
    pthread_mutex_unlock(&c->role.mu);
    if (asked && kind != RLK_ROLE_REPLICA)
        return RLK_OK;
    /* First writing call, or a replica that may have been promoted since. */
    snprintf(msg, sizeof msg, "%s", rlk_errstr(c));
    rc = rlk_pool_run(c, rlk_op_role, &a, 1, &unused);
    if (rc != RLK_OK || a.kind != RLK_ROLE_REPLICA) {
        if (rc != RLK_OK)
            rlk_set_error(c, err, "%s", msg);
        return RLK_OK;  /* let the script tell */
    }
    if (c->topo->refused && c->topo->refused(c, RLK_ERR_READONLY))
        return RLK_OK;  /* the sentinels name another master now: the call goes there */
    return rlk_set_error(c, RLK_ERR_READONLY, "%s: %s is a replica (of %s): it refuses writes; "
                         "point rlk at the master, or at the sentinels with "
                         "redis+sentinel://HOST:PORT/MASTERNAME", s->name, c->addr, a.of);
}
