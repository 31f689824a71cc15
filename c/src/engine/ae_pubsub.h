/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_pubsub.h - the async engine's pub/sub (ae_pubsub.c), as the rest of
 * the engine's core (ae_state.h) and the client ask for it; what the
 * kinds' requests use is in engine.h. Not installed; not a stable API.
 */
#ifndef RLK_AE_PUBSUB_H
#define RLK_AE_PUBSUB_H

#include <hiredis/hiredis.h>

#include "engine/ae_state.h"

/* One reply on pub/sub connection k (its set-up's, an answer or a message):
 * 1 when it was a message. */
int ae_sub_reply(rlk_async *ac, ae_conn *k, redisReply *r);
/* A pub/sub connection is up (or the map or mode changed): every channel
 * someone listens to, subscribed where it goes. */
void ae_chans_up(rlk_async *ac);
/* Pub/sub connection k dropped: its channels are not subscribed any more
 * (on a cluster subscribed again where they go). */
void ae_chans_down(rlk_async *ac, ae_conn *k);
/* The map changed: the channels subscribed where they do not go any more
 * move (ae_route.c). */
void ae_chans_reroute(rlk_async *ac);
/* The sweep: channels whose linger ended (nobody listened meanwhile) are unsubscribed. */
void ae_chans_linger_end(rlk_async *ac);
/* With the client: every channel, its listeners and the answer queues. */
void ae_pubsub_free(rlk_async *ac);

#endif /* RLK_AE_PUBSUB_H */
