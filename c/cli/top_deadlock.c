/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top_deadlock.c - see top_deadlock.h.
 */
#include <string.h>

#include "cli.h"
#include "lock_cli.h"
#include "top_deadlock.h"

static void td_edge_json(FILE *out, const rlk_waitgraph *g, size_t i)
{
    const char *w = "", *n = "", *k = "", *h = "";
    int bc = 0;

    rlk_waitgraph_edge(g, i, &w, &n, &k, &h, &bc);
    fputs("{\"waiter\":", out);
    rlk_lc_json_string(out, w, strlen(w));
    fputs(",\"name\":", out);
    rlk_lc_json_string(out, n, strlen(n));
    fputs(",\"kind\":", out);
    rlk_lc_json_string(out, k, strlen(k));
    fputs(",\"holder\":", out);
    rlk_lc_json_string(out, h, strlen(h));
    fprintf(out, ",\"by\":\"%s\"}", bc ? "client" : "thread");
}

void rlk_top_waits_json(FILE *out, const rlk_waitgraph *g)
{
    if (!g) {
        fputs("null", out);
        return;
    }
    fputs("{\"edges\":[", out);
    for (size_t i = 0; i < rlk_waitgraph_edge_count(g); i++) {
        fputs(i ? "," : "", out);
        td_edge_json(out, g, i);
    }
    fputs("],\"cycles\":[", out);
    for (size_t i = 0; i < rlk_waitgraph_cycle_count(g); i++) {
        fprintf(out, "%s{\"by\":\"%s\",\"edges\":[", i ? "," : "",
                rlk_waitgraph_cycle_by_client(g, i) ? "client" : "thread");
        for (size_t j = 0; j < rlk_waitgraph_cycle_length(g, i); j++) {
            fputs(j ? "," : "", out);
            td_edge_json(out, g, (size_t)rlk_waitgraph_cycle_edge(g, i, j));
        }
        fputs("]}", out);
    }
    fputs("]}", out);
}

/* Per cycle: a head line, then one line per edge (the waiter first: a line cut
 * to the terminal's width still names it). */
size_t rlk_top_deadlock_line(const rlk_waitgraph *g, size_t k, char *buf, size_t len)
{
    size_t lines = 0, nc = rlk_waitgraph_cycle_count(g);

    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < nc; i++) {
        size_t n = rlk_waitgraph_cycle_length(g, i);

        if (k == lines)
            snprintf(buf, len, "DEADLOCK %zu of %zu: %zu waiting in a cycle%s", i + 1, nc, n,
                     rlk_waitgraph_cycle_by_client(g, i)
                         ? " (by client: the server keeps tickets, not threads)" : "");
        for (size_t j = 0; j < n; j++) {
            if (k == lines + 1 + j) {
                const char *w = "", *nm = "", *h = "";

                rlk_waitgraph_edge(g, (size_t)rlk_waitgraph_cycle_edge(g, i, j), &w, &nm, NULL,
                                   &h, NULL);
                snprintf(buf, len, "  %s waits for %s held by %s", rlk_cli_show(w),
                         rlk_cli_show(nm), rlk_cli_show(h));
            }
        }
        lines += 1 + n;
    }
    return lines;
}
