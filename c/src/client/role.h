/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * role.h - what the server is (role.c): ROLE on every new connection, the
 * quick refusal of a writing script on a replica, and the messages of the
 * replies that say "not here" (READONLY, MASTERDOWN, NOREPLICAS).
 *
 * A replica refuses every write with READONLY, but a script that only
 * reads first (an acquire of a held lock returns its TTL) runs: without a
 * look at ROLE a waiter would wait first and fail only when the lock comes
 * free. So a client remembers what the latest new connection's ROLE said,
 * and while that is "slave", a writing script fails at once with
 * RLK_ERR_READONLY (after one more ROLE, in case the replica has been
 * promoted since) instead of being sent.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_ROLE_H
#define RLK_ROLE_H

#include <pthread.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "rlk.h"

enum rlk_role_kind {
    RLK_ROLE_UNKNOWN = 0,   /* not asked yet, or ROLE refused (ACL) */
    RLK_ROLE_MASTER = 1,
    RLK_ROLE_REPLICA = 2
};

typedef struct rlk_role {
    pthread_mutex_t mu;
    int kind;                       /* enum rlk_role_kind */
    char of[300];                   /* a replica's master, "host:port" */
} rlk_role;

void rlk_role_init(rlk_role *r);
void rlk_role_destroy(rlk_role *r);

/* ROLE on a new connection, recorded on c. For a redis+sentinel:// client
 * a server that is not a master is refused: the sentinels are asked again
 * and *redial is set when they named another master; RLK_ERR_READONLY
 * (recorded) otherwise. A refused ROLE (ACL) is not an error. */
int rlk_role_probe(rlk_client *c, redisContext *ctx, int *redial);

/* Before script s: RLK_ERR_READONLY (recorded, one line naming the server
 * and its master) when s writes and c's server is a replica; RLK_OK
 * otherwise. */
int rlk_role_refuse(rlk_client *c, const rlk_script_info *s);

/* 1 when script s may write (all but a few read-only scripts). */
int rlk_role_script_writes(const rlk_script_info *s);

/* What to add to the message of an error reply of class err (READONLY,
 * MASTERDOWN, NOREPLICAS); "" for others. */
const char *rlk_role_hint(rlk_client *c, int err, const char *word);

#endif /* RLK_ROLE_H */
