/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.h - Redis Sentinel on loopback for tests: 1 master + 1 replica +
 * 3 sentinels.
 *
 * rlk_fx_sentinel_start() starts the master, the replica (--replicaof the
 * master, repl-diskless-sync-delay 0; waits for master_link_status:up) and
 * three sentinels
 * (redis-server TMP/sentinel.conf --sentinel, Debian's redis-server binary:
 * no redis-sentinel package needed) whose config says
 *   sentinel monitor NAME 127.0.0.1 <master port> 2
 *   sentinel down-after-milliseconds NAME 1000
 *   sentinel failover-timeout NAME 4000
 * and returns once every sentinel knows the master, its replica and the two
 * other sentinels (SENTINEL MASTER: num-slaves, num-other-sentinels):
 * about 2-5 s (sentinels find each other by hello messages every 2 s).
 * Bounded: 30 s. Stopping
 * stops each process by PID and removes its temp dir.
 *
 * Data nodes are data[0] (the first master) and data[1]; after a failover
 * rlk_fx_sentinel_master() says which one is the master now.
 */
#ifndef RLK_TEST_SENTINEL_H
#define RLK_TEST_SENTINEL_H

#include <stddef.h>

#include "fixture.h"

#define RLK_FX_SENTINELS 3

typedef struct rlk_fx_sentinel {
    char name[64];                           /* the monitored master's name */
    rlk_fx_server data[2];                   /* [0] started as master, [1] as its replica */
    rlk_fx_server sentinel[RLK_FX_SENTINELS];
    long long start_ms;                      /* how long the start took */
} rlk_fx_sentinel;

/* Starts the five processes (name NULL: "rlkmaster"); on failure stops them. */
int rlk_fx_sentinel_start(rlk_fx_sentinel *s, const char *name);
/* The same, the sentinels' INFO and hello periods shortened to 500 ms (SENTINEL DEBUG; 10 s and
 * 2 s by default): the start takes under a second, a replica is promotable and a returning old
 * master demoted within about a second. Down detection and failover timeouts as above. It can
 * return within the first second of the replica's link: Redis 7.0's diskless sync may hold the
 * stream to a replica it already lists as online until the replica's next REPLCONF ACK (up to
 * 1 s; seen beside a CPU burner). A test that needs data on the replica waits for it with WAIT on
 * the connection that wrote (WAIT counts only that connection's writes; on a connection that
 * wrote nothing it answers at once), never on a fresh one. */
int rlk_fx_sentinel_start_quick(rlk_fx_sentinel *s, const char *name);
/* The quick start with passwords: the data nodes' requirepass and masterauth are data_pass
 * (the sentinels get it by "sentinel auth-pass"), the sentinels' requirepass sentinel_pass
 * (NULL: none). The fixture's own connections send them. */
int rlk_fx_sentinel_start_auth(rlk_fx_sentinel *s, const char *name, const char *data_pass,
                               const char *sentinel_pass);
/* Stops every process by PID and removes the files. Safe to call twice. */
void rlk_fx_sentinel_stop(rlk_fx_sentinel *s);

/* SENTINEL GET-MASTER-ADDR-BY-NAME on sentinel i: the master's port, or -1. */
int rlk_fx_sentinel_master_port(const rlk_fx_sentinel *s, int i);
/* The index (0/1) of the data node every sentinel names as master and whose
 * ROLE says master; -1 while they disagree or it is not. */
int rlk_fx_sentinel_master(const rlk_fx_sentinel *s);
/* 'M' / 'S' of a data node (ROLE), 0 when it cannot be asked. */
int rlk_fx_sentinel_role(const rlk_fx_sentinel *s, int data);

/* Once every sentinel would promote the replica (rlk_fx_sentinel_wait_promotable),
 * SENTINEL FAILOVER NAME on sentinel 0, then a bounded wait until every
 * sentinel reports the other data node as master (GET-MASTER-ADDR-BY-NAME)
 * and its ROLE is master. About 1-3 s. The old master still says master for
 * a while after that (Sentinel reconfigures a live old master only some 8-10 s
 * later: its publish period x 4 plus an INFO period) - a real split-brain
 * window a test can use; rlk_fx_sentinel_wait_demoted() waits it out. 0 / -1. */
int rlk_fx_sentinel_failover(rlk_fx_sentinel *s, long timeout_ms);

/* Sentinel i's failover events (+try-failover, -failover-abort-..., +switch-master ...) from
 * its log, on stderr: a failed test's post-mortem. */
void rlk_fx_sentinel_print_events(const rlk_fx_sentinel *s, int i);
/* Bounded poll until every sentinel names the same master (whose ROLE says
 * so) and would promote the replica: SENTINEL REPLICAS lists it with flags
 * "slave" only, role-reported slave, master-link-status ok and an INFO younger
 * than 2 s (else SENTINEL FAILOVER answers NOGOODSLAVE, as it does for a few
 * seconds after an earlier failover, or a sentinel that missed the old
 * master's demotion may turn the new master back into a replica: sentinel.c
 * says why). rlk_fx_sentinel_failover() waits for it first. 0 / -1. */
int rlk_fx_sentinel_wait_promotable(const rlk_fx_sentinel *s, long timeout_ms);
/* 1 when the data node other than `master` follows it with its link up (no wait). */
int rlk_fx_sentinel_replica_up(const rlk_fx_sentinel *s, int master);
/* Bounded poll until data node `old` is a replica of the other, linked. 0 / -1. */
int rlk_fx_sentinel_wait_demoted(const rlk_fx_sentinel *s, int old, long timeout_ms);

/* "redis://127.0.0.1:P1,redis://127.0.0.1:P2,redis://127.0.0.1:P3" (the sentinels). */
int rlk_fx_sentinel_urls(const rlk_fx_sentinel *s, char *buf, size_t len);

#endif /* RLK_TEST_SENTINEL_H */
