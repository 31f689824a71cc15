/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_route.h - the async engine's cluster routing (ae_route.c), on a
 * client whose topology routes calls per slot (ae_routed), as the rest of
 * the engine's core (ae_state.h) and the client ask for it. Not installed;
 * not a stable API.
 */
#ifndef RLK_AE_ROUTE_H
#define RLK_AE_ROUTE_H

#include <hiredis/hiredis.h>

#include "engine/ae_state.h"

/* From rlk_async_new, the client's first nodes (none yet): on a routed
 * client the map, with the URL's seeds as its first nodes; else the one
 * server's node. RLK_ERR_NOMEM when one cannot be added. */
int ae_route_setup(rlk_async *ac, int routed);
/* A user call to the master of its slot: parked while the map (or the
 * pub/sub mode, which its form depends on) is not known. */
void ae_route_call(rlk_async *ac, rlk_ae_call *call);
/* Parks a call: routed again after delay_ms (0 with no map: once it is known). */
void ae_route_park(rlk_async *ac, rlk_ae_call *call, long long delay_ms);
/* Asks a node for the slot map (CLUSTER SLOTS), unless it is being asked or
 * was asked within AE_CL_REFRESH_MS (then once that has passed). */
void ae_route_refresh(rlk_async *ac);
/* The master of slot by the map (any master for RLK_TOPO_ANY_SLOT), or NULL. */
ae_node *ae_route_slot_node(rlk_async *ac, int slot);
/* A cluster's error reply r to a user call on node n: 1 when it was taken
 * care of (redirected, parked for a retry), 0 to report it. None of these
 * ran the call: a redirect is not a lost reply. */
int ae_route_refused(rlk_async *ac, ae_node *n, rlk_ae_call *call, const redisReply *r);
/* Fails the calls of n's command connection: in flight ones lost (they may
 * have run); the unsent ones too when unsent_too (client closing), else on
 * a cluster they are routed again (after the map is asked again: a
 * failover), a pinned one failed (never written). */
void ae_route_calls_fail(rlk_async *ac, ae_node *n, int rc, const char *why, int unsent_too);
/* n's command connection had its set-up refused (AUTH or SELECT: the server's
 * error and its reason in why, as the blocking client reports it): the user
 * calls waiting for n, and while no slot map is known every call parked for
 * it (n was to be asked for it), end with rc and why on the next turn, not
 * at the command timeout: sent again they would be refused the same way.
 * None of them was written. The rest as ae_route_calls_fail. */
void ae_route_setup_refused(rlk_async *ac, ae_node *n, int rc, const char *why);

#endif /* RLK_AE_ROUTE_H */
