/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_stats.c - `rlk lock --stats` and `rlk semaphore --stats` (lock_cli.h):
 * at exit, one line on stderr with how long rlk waited, how long it held,
 * and how many renewals it made (the client's watchdog or permit keeper,
 * counted by the library's metrics, and RedLock's extends from the main
 * loop); with --json the same as one JSON object.
 */
#include <stdio.h>
#include <string.h>

#include "lock_cli.h"

void rlk_lc_stats_print(const rlk_lc_opts *o, const char *what, const rlk_lc_hold *h,
                        long long acquired_ns, long long released_ns, int exit_code)
{
    unsigned long long renewals = 0, failures = 0;
    long long wait_ms, hold_ms = 0;
    char waited[32], held[32];
    rlk_metrics m;

    if (!o->stats)
        return;
    wait_ms = ((acquired_ns ? acquired_ns : rlk_lc_now_ns()) - o->start_ns) / 1000000LL;
    if (acquired_ns && released_ns)
        hold_ms = (released_ns - acquired_ns) / 1000000LL;
    if (h) {
        renewals = h->renewals;
        failures = h->renewal_failures;
        if (h->client && rlk_metrics_get(h->client, &m) == RLK_OK) {
            renewals += m.renewals - m.renewal_failures;
            failures += m.renewal_failures;
        }
    }
    if (o->stats_json) {
        fputs("{\"what\":", stderr);
        rlk_lc_json_string(stderr, what, strlen(what));
        fprintf(stderr, ",\"acquired\":%s,\"wait_ms\":%lld,\"hold_ms\":%lld,\"renewals\":%llu,"
                "\"renewal_failures\":%llu,\"exit\":%d}\n", acquired_ns ? "true" : "false",
                wait_ms, hold_ms, renewals, failures, exit_code);
        return;
    }
    rlk_lc_format_seconds(wait_ms, waited, sizeof waited);
    rlk_lc_format_seconds(hold_ms, held, sizeof held);
    if (!acquired_ns)
        rlk_cli_fail(0, "stats: %s: not acquired, waited %s s", what, waited);
    else
        rlk_cli_fail(0, "stats: %s: waited %s s, held %s s, renewals %llu (%llu failed), "
                     "exit %d", what, waited, held, renewals, failures, exit_code);
}
