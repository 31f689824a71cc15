/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * role.h - what the server is (role.c): ROLE before a writing script, and
 * the quick refusal of a writing script on a replica.
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

#include "rlk.h"

/* rlk_client.role: what ROLE said last. */
enum rlk_role_kind {
    RLK_ROLE_UNASKED = 0,   /* not asked yet */
    RLK_ROLE_NOT_REPLICA,   /* a master, or ROLE refused (ACL): not asked again */
    RLK_ROLE_REPLICA        /* asked again before each writing script */
};

/* Before script s: RLK_ERR_READONLY (recorded, one line naming the server
 * and its master) when s writes and c's server is a replica; RLK_OK
 * otherwise. ROLE is asked (through the pool, within the calling thread's
 * time limit) before the first writing script, and again before each one
 * while the answer is "slave" (it may have been promoted since). A refused
 * ROLE (ACL) or a failed one leaves the call to the script. */
int rlk_role_refuse(rlk_client *c, const rlk_script_info *s);

#endif /* RLK_ROLE_H */
