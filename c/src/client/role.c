/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * role.c - see role.h.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "client/client_t.h"
#include "client/error.h"
#include "client/pool.h"
#include "client/role.h"
#include "client/scripts.h"
#include "client/topo.h"

/* The role of a ROLE reply (NOT_REPLICA for an error reply or an odd shape);
 * a replica's master goes to of. */
static int rlk_role_parse(const redisReply *r, char *of, size_t len)
{
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 1 ||
        r->element[0]->type != REDIS_REPLY_STRING || strcmp(r->element[0]->str, "slave") != 0)
        return RLK_ROLE_NOT_REPLICA;
    if (r->elements >= 3 && r->element[1]->type == REDIS_REPLY_STRING &&
        r->element[2]->type == REDIS_REPLY_INTEGER)
        snprintf(of, len, strchr(r->element[1]->str, ':') ? "[%s]:%lld" : "%s:%lld",
                 r->element[1]->str, r->element[2]->integer);
    else
        snprintf(of, len, "?");
    return RLK_ROLE_REPLICA;
}

/* rlk_role_refuse's question to the server (its 800 bytes of buffers apart from the lock
 * calls' path). */
static int rlk_role_ask(rlk_client *c, const rlk_script_info *s)
{
    const char *argv[1] = {"ROLE"};
    char msg[RLK_ERRSTR_MAX], of[300] = "";
    redisReply *r;
    int rc, role, err;

    err = rlk_err(c);
    /* First writing call, or a replica that may have been promoted since. */
    snprintf(msg, sizeof msg, "%s", rlk_errstr(c));
    rc = rlk_pool_command(c, "ROLE", 1, argv, NULL, &r);
    if (rc != RLK_OK) {
        rlk_set_error(c, err, "%s", msg);   /* asked again before the next writing script */
        return RLK_OK;  /* let the script tell */
    }
    /* A refusal (NOPERM for an ACL user without +role, an old server) is an answer: not
     * known, and not asked again before every write. */
    role = rlk_role_parse(r, of, sizeof of);
    freeReplyObject(r);
    atomic_store(&c->role, role);
    if (role != RLK_ROLE_REPLICA)
        return RLK_OK;
    if (c->topo->refused && c->topo->refused(c, RLK_ERR_READONLY))
        return RLK_OK;  /* the sentinels name another master now: the call goes there */
    return rlk_set_error(c, RLK_ERR_READONLY, "%s: %s is a replica (of %s): it refuses writes; "
                         "point rlk at the master, or at the sentinels with "
                         "redis+sentinel://HOST:PORT/MASTERNAME", s->name, c->addr, of);
}

int rlk_role_refuse(rlk_client *c, const rlk_script_info *s)
{
    /* The role first: once known, a lock call pays one atomic load here. */
    if (atomic_load(&c->role) == RLK_ROLE_NOT_REPLICA || !rlk_script_writes(s))
        return RLK_OK;
    return rlk_role_ask(c, s);
}
