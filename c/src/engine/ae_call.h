/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_call.h - the async engine's requests and calls (ae_call.c), as the
 * rest of the engine's core (ae_state.h) asks for them; what the kinds'
 * requests use is in engine.h. Not installed; not a stable API.
 */
#ifndef RLK_AE_CALL_H
#define RLK_AE_CALL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "engine/ae_state.h"

/* Delivers the completed requests: their callbacks, in completion order;
 * each request is freed after (its free hook first). */
void ae_deliver(rlk_async *ac);
/* Writes one of the engine's own calls on n's command connection now, ahead
 * of user calls (what: AE_CALL_SETUP with the set-up command setup_i,
 * AE_CALL_ID, AE_CALL_KILL); 0, or -1 out of memory. */
int ae_internal(rlk_async *ac, ae_node *n, int what, int setup_i, int argc, const char **argv,
                const size_t *lens);
/* n's command connection is up (ae_conn_up): the calls that waited are written. */
void ae_cmd_up(rlk_async *ac, ae_node *n);
/* One reply on n's command connection: the oldest call in flight's. */
void ae_cmd_reply(rlk_async *ac, ae_node *n, redisReply *r);

#endif /* RLK_AE_CALL_H */
