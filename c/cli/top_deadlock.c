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

/* Per cycle: a head line, then per edge "  W waits for N held by H", or when
 * that is wider than cols, "  W waits for N" and "      held by H" (the
 * waiter first: a line cut to the terminal's width still names it). */
size_t rlk_top_deadlock_line(const rlk_waitgraph *g, int cols, size_t k, char *buf, size_t len)
{
    size_t lines = 0, nc = rlk_waitgraph_cycle_count(g);
    char one[2048];

    if (len)
        buf[0] = '\0';
    for (size_t i = 0; i < nc; i++) {
        size_t n = rlk_waitgraph_cycle_length(g, i);

        if (k == lines)
            snprintf(buf, len, "DEADLOCK %zu of %zu: %zu waiting in a cycle%s", i + 1, nc, n,
                     rlk_waitgraph_cycle_by_client(g, i) ? " (waiters by client)" : "");
        lines++;
        for (size_t j = 0; j < n; j++) {
            const char *w = "", *nm = "", *h = "";
            int split;

            rlk_waitgraph_edge(g, (size_t)rlk_waitgraph_cycle_edge(g, i, j), &w, &nm, NULL, &h,
                               NULL);
            snprintf(one, sizeof one, "  %s waits for %s held by %s", rlk_cli_show(w),
                     rlk_cli_show(nm), rlk_cli_show(h));
            split = strlen(one) > (size_t)cols;
            if (k == lines && !split)
                snprintf(buf, len, "%s", one);
            else if (k == lines)
                snprintf(buf, len, "  %s waits for %s", rlk_cli_show(w), rlk_cli_show(nm));
            else if (k == lines + 1 && split)
                snprintf(buf, len, "      held by %s", rlk_cli_show(h));
            lines += split ? 2 : 1;
        }
    }
    return lines;
}
