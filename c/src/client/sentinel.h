/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.h - a client opened with a redis+sentinel:// URL (sentinel.c):
 * the master's address as the sentinels name it, and a follower thread
 * that keeps it current.
 *
 * Resolving: each sentinel in turn (the one that answered last first) is
 * asked SENTINEL GET-MASTER-ADDR-BY-NAME and SENTINEL MASTER (pipelined:
 * the address and the config epoch it belongs to). An answer older than
 * the address in use (a smaller config epoch: a sentinel that has not
 * heard of a failover yet) is passed over; a new address is used only once
 * its ROLE says master.
 *
 * Following: the thread subscribes to +switch-master on every sentinel it
 * can reach and asks one sentinel again every second (a missed event, a
 * sentinel that was down). Any thread may also ask at once
 * (the topology's refused and check: a READONLY reply, a ROLE mismatch;
 * the watchdog before each renewal round).
 *
 * A switch to a new address bumps the address, then calls the listener
 * (the lock runtime: it drops the subscriber's connection, which wakes
 * every waiter, and makes every watchdog entry due). Connections opened to
 * the old address are "stale" (rlk_sentinel_stale) and dropped before
 * their next request by whoever owns them (rlk_conn_usable).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SENTINEL_H
#define RLK_SENTINEL_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "rlk.h"

typedef struct rlk_sentinel rlk_sentinel;

/* The sentinel variant of the topology (topo.h): rlk_connect picks it for
 * a sentinel URL. Its setup makes c->sentinel (no I/O); its connect resolves
 * the master and follows (below), then connects the pool as a standalone
 * client does; its open follows (once) and dials the master, resolving it
 * first when none is known (so a client only prepared, as the async
 * engine's, dials through it too); its stale, refused and check are
 * rlk_sentinel_stale, rlk_sn_refused and rlk_sentinel_check; its moves counts the
 * switches. */
extern const struct rlk_topo rlk_topo_sentinel;

/* Called after every switch, from the thread that saw it (no lock held). */
typedef void (*rlk_sentinel_switch_fn)(void *arg);

void rlk_sentinel_set_listener(rlk_client *c, rlk_sentinel_switch_fn fn, void *arg);

/* "host:port" of the current master into buf ("" when none is known). */
void rlk_sentinel_address(rlk_client *c, char *buf, size_t len);
/* How many switches this client made, and when the last one was made
 * (CLOCK_MONOTONIC ns, 0: none). */
unsigned long long rlk_sentinel_switches(rlk_client *c, long long *last_ns);

#endif /* RLK_SENTINEL_H */
