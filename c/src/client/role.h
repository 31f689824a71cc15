/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * role.h - what the server is (role.c): ROLE on every new connection, the
 * quick refusal of a writing script on a replica, and the messages of the
 * replies that say "not here" (READONLY, MASTERDOWN, NOREPLICAS).
 *
 * A replica refuses every write with READONLY, but a script that only
 * reads first (an acquire of a held lock returns its TTL) runs: without a
 * look at ROLE a waiter would wait first and fail only when the lock comes
 * free. So a client asks ROLE before its first writing script, and while
 * the answer is "slave", a writing script fails at once with
 * RLK_ERR_READONLY instead of being sent. (Not at connect: a connect does
 * no round trip unless AUTH or SELECT need one, and must not wait on a
 * stopped server beyond a wait's own bound.)
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
    int asked;                      /* ROLE answered at least once */
    char of[300];                   /* a replica's master, "host:port" */
} rlk_role;

/* Before script s: RLK_ERR_READONLY (recorded, one line naming the server
 * and its master) when s writes and c's server is a replica; RLK_OK
 * otherwise. ROLE is asked (through the pool, within the calling thread's
 * time limit) before the first writing script, and again before each one
 * while the answer is "slave" (it may have been promoted since). A refused
 * ROLE (ACL) or a failed one leaves the call to the script. */
int rlk_role_refuse(rlk_client *c, const rlk_script_info *s);

#endif /* RLK_ROLE_H */
