/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cl_util.h - what the cluster test programs share (cl_util.c): starting
 * the one cluster of a program with its redis+cluster:// URL, names on a
 * given master, the masters, PTTL on a key's master, subscriptions on any
 * node. Plain hiredis through the fixture; no rlk routing involved.
 */
#ifndef RLK_CL_UTIL_H
#define RLK_CL_UTIL_H

#include <stddef.h>

#include "cluster.h"

/* Starts the cluster and writes "redis+cluster://<seed a>,<seed b>" into
 * url; prints the start time. 0, or -1 (said on stderr, nothing running). */
int cl_start(const char *prog, rlk_fx_cluster *cl, int seed_a, int seed_b, char *url,
             size_t len);
/* The first "<prefix><n>" whose slot node `master` owns (node 0's view); "" if none. */
void cl_name_on(const rlk_fx_cluster *cl, const char *prefix, int master, char *buf, size_t len);
/* The indexes of the masters (ROLE), at most 3; how many. */
int cl_masters(const rlk_fx_cluster *cl, int out[3]);
/* PTTL of key on the master owning it now; -3 when it cannot be asked. */
long long cl_pttl(const rlk_fx_cluster *cl, const char *key);
/* 1 when some node has a subscriber on the lock channel of name
 * (redisson_lock__channel:{name}): SUBSCRIBE or SSUBSCRIBE. */
int cl_subscribed(const rlk_fx_cluster *cl, const char *name);
/* The node with an SSUBSCRIBE subscriber on channel, or -1. */
int cl_shard_subscribed_on(const rlk_fx_cluster *cl, const char *channel);
/* Bounded poll of cl_subscribed; 0 once subscribed, -1 after timeout_ms. */
int cl_wait_subscribed(const rlk_fx_cluster *cl, const char *name, long long timeout_ms);
/* Sleeps ms (the time under test, not a synchronisation). */
void cl_pause_ms(long long ms);

#endif /* RLK_CL_UTIL_H */
