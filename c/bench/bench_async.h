/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_async: rlk-bench through the non-blocking API (rlk_async.h), and
 * the pending workload.
 *
 * --api async: W1 and W2 with every contender a task of one rlk_async
 * client, all driven by one thread's poll() loop (the hooks filled in by
 * hand, as a program with a loop of its own does); --procs: one such client
 * per process, each with one task. Results go into the same
 * rlk_bench_run_result as the threads' runner, so the reports are shared.
 *
 * --workload pending: N lock requests on M names, each name held by a
 * foreign holder (a blocking rlk client in a child process) until every
 * request is pending, then released; every request is served (acquire,
 * release at once). Prints its own JSON line: served, overlaps (per name),
 * rss_bytes_per_request (RSS at the peak of pending minus RSS before, / N,
 * from /proc/self/statm), fds (open at the peak, /proc/self/fd), client CPU.
 * --api async: one thread; --api blocking: a thread per request, one
 * shared rlk_client.
 */
#ifndef RLK_BENCH_ASYNC_H
#define RLK_BENCH_ASYNC_H

#include <hiredis/hiredis.h>
#include <stddef.h>

#include "bench_driver.h"
#include "bench_opts.h"
#include "bench_run.h"

/* Nonzero when this build has the async engine (rlk_async_* linked). */
int rlk_bench_async_available(void);

/* The async driver's descriptions (lib, version, workload texts); its call
 * hooks are NULL: rlk_bench_run_async drives the client itself. */
extern const rlk_bench_driver rlk_bench_async_driver;

/* As rlk_bench_run (bench_run.h), with one rlk_async client and one poll
 * loop in the calling thread driving o->clients tasks. In a child of
 * --procs it reports ready and waits for the gate as rlk_bench_run does. */
int rlk_bench_run_async(const rlk_bench_opts *o, const rlk_bench_target *t,
                        const rlk_bench_identity *ids, rlk_bench_run_result *out, char *err,
                        size_t errlen);

/* The pending workload; prints its JSON line. c: the setup connection (keys
 * deleted before and after through it). common: writes the common JSON
 * fields. Returns 0 when the run completed (even with requests unserved or
 * overlaps: results), -1 with err when its setup failed. */
struct rlk_bench_json;
int rlk_bench_pending(const rlk_bench_opts *o, const rlk_bench_target *t, redisContext *c,
                      void (*common)(struct rlk_bench_json *j, const void *arg),
                      const void *arg, char *err, size_t errlen);

#endif /* RLK_BENCH_ASYNC_H */
