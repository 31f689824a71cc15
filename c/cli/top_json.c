/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top_json.c - rlk top --json (top.h): one object a refresh, one line each.
 */
#include <stdio.h>
#include <string.h>

#include "top.h"
#include "top_deadlock.h"

void rlk_top_print_json(rlk_top_state *s, rlk_top_row **rows, size_t n)
{
    rlk_top_totals t;
    size_t shown = n < (size_t)s->o.limit ? n : (size_t)s->o.limit;

    rlk_top_total(rows, n, &t);
    printf("{\"time_ms\":%lld,\"refresh_ms\":%lld,\"scanned\":%lld,\"nodes\":[", s->now_ms,
           s->refresh_ms, s->scanned);
    for (int i = 0; i < s->nnodes; i++) {
        fputs(i ? "," : "", stdout);
        rlk_lc_json_string(stdout, s->nodes[i].addr, strlen(s->nodes[i].addr));
    }
    printf("],\"sort\":\"%s\",\"totals\":{\"rows\":%zu,\"locks\":%lld,\"free_waited\":%lld,"
           "\"semaphores\":%lld,\"psemaphores\":%lld,\"permit_holders\":%lld,"
           "\"latches\":%lld,\"queued\":%lld,\"subscribers\":%lld},\"locks\":[",
           rlk_top_sort_words[s->o.sort], n, t.locks, t.free_waited, t.semaphores, t.psemaphores,
           t.permits, t.latches, t.queued, t.subs);
    for (size_t i = 0; i < shown; i++) {
        const rlk_top_row *r = rows[i];

        fputs(i ? ",{\"name\":" : "{\"name\":", stdout);
        rlk_lc_json_string(stdout, r->name, strlen(r->name));
        printf(",\"kind\":\"%s\",\"holders\":[", rlk_top_kind_word(r));
        for (size_t k = 0; k < r->nholders; k++) {
            fputs(k ? "," : "", stdout);
            rlk_ik_json_holder(stdout, &r->holders[k], 1);
        }
        printf("],\"ttl_ms\":%lld,\"queued\":%lld,\"fair_queued\":%lld,\"reserved\":",
               r->ttl_ms, r->queued, r->fair_queued);
        if (r->reserved[0])
            rlk_lc_json_string(stdout, r->reserved, strlen(r->reserved));
        else
            fputs("null", stdout);
        fputs(",\"fair_queue\":[", stdout);
        for (size_t k = 0; k < r->nfq; k++) {
            fputs(k ? ",{\"owner\":" : "{\"owner\":", stdout);
            rlk_lc_json_string(stdout, r->fq[k].owner, r->fq[k].owner_len);
            printf(",\"deadline_in_ms\":%lld}", r->fq[k].deadline_in_ms);
        }
        printf("],\"subscribers\":%lld", r->subs);
        if (r->mode)
            printf(",\"mode\":\"%s\"", r->mode);
        if (r->kind == RLK_IK_SEMAPHORE || r->kind == RLK_IK_PSEMAPHORE)
            printf(",\"permits\":%lld", r->count);
        if (r->kind == RLK_IK_PSEMAPHORE)
            printf(",\"permit_holders\":%lld", r->permit_holders);
        if (r->kind == RLK_IK_LATCH)
            printf(",\"count\":%lld", r->count);
        if (r->kind == RLK_IK_FASTMULTI) {
            fputs(",\"values\":[", stdout);
            for (size_t k = 0; k < r->nvalues; k++) {
                fputs(k ? "," : "", stdout);
                rlk_ik_json_value(stdout, &r->values[k]);
            }
            fputs("]", stdout);
        }
        printf(",\"age_ms\":%lld}", rlk_top_is_lock(r) ? s->now_ms - r->first_ms : 0);
    }
    fputs("],\"waits\":", stdout);
    rlk_top_waits_json(stdout, s->wg);
    fputs("}\n", stdout);
    fflush(stdout);
}

