/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi_util.h - what the MultiLock / RedLock tests share: a set of
 * redis-servers from the integration fixture, one rlk client per server,
 * key probes on every server, and shared memory for forked workers' counters.
 * Hold logs and the overlap checker are support/holdlog.h.
 */
#ifndef RLK_MULTI_UTIL_H
#define RLK_MULTI_UTIL_H

#include <stddef.h>

#include <rlk.h>

#include "fixture.h"
#include "tk_util.h"

#define MU_MAX_SERVERS 8

typedef struct mu_set {
    int n;
    rlk_fx_server srv[MU_MAX_SERVERS];
    rlk_client *c[MU_MAX_SERVERS];
} mu_set;

/* Starts n servers and connects one client to each (watchdog_lease_ms <= 0:
 * the default). 0 or -1 (reason printed). */
int mu_set_start(mu_set *s, int n, long long watchdog_lease_ms);
/* Frees the clients and stops the servers. */
void mu_set_stop(mu_set *s);
/* Restarts every server that is not running (after a crash) and FLUSHALLs
 * every server. 0 or -1. */
int mu_set_reset(mu_set *s);

/* How many of the servers whose index is in [0, n) and running hold key. */
int mu_count_holding(const mu_set *s, int n, const char *key);
/* PTTL of key on one server; -3 when it cannot be asked. */
long long mu_pttl(const rlk_fx_server *srv, const char *key);
/* GET key: the value into buf ("" for nil). 0 or -1. */
int mu_get(const rlk_fx_server *srv, const char *key, char *buf, size_t len);
/* SET key value PX ms. 0 or -1. */
int mu_set_px(const rlk_fx_server *srv, const char *key, const char *value, long long ms);
/* One round trip (PING on a fresh connection). 0 or -1. */
int mu_ping(const rlk_fx_server *srv);
/* Polls CLIENT LIST every 2 ms until some client's line contains needle, for
 * at most timeout_ms. 0 when seen, -1 otherwise. */
int mu_wait_client(const rlk_fx_server *srv, const char *needle, long timeout_ms);

/* ---------------------------------------------------------------- shared memory */

/* Zeroed shared memory (MAP_SHARED) that forked children write into. */
void *mu_shared_alloc(size_t size);
void mu_shared_free(void *p, size_t size);

#endif /* RLK_MULTI_UTIL_H */
