/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top_text.c - rlk top's table (top.h): the header lines, the DEADLOCK lines
 * (top_deadlock.h), a row per name and its fair waiters, cut to the
 * terminal's width and height.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "top.h"
#include "top_deadlock.h"

static void top_size(int *cols, int *rows)
{
    struct winsize w;

    *cols = 120;
    *rows = 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_col > 0) {
        *cols = w.ws_col;
        *rows = w.ws_row;
    }
}

/* The marker of a cut text: "…" in a UTF-8 locale, else "~". */
static const char *top_marker(void)
{
    static const char *m;

    if (!m) {
        const char *v = getenv("LC_ALL");

        if (!v || !*v)
            v = getenv("LC_CTYPE");
        if (!v || !*v)
            v = getenv("LANG");
        m = v && (strstr(v, "UTF-8") || strstr(v, "utf8") || strstr(v, "UTF8") ||
                  strstr(v, "utf-8")) ? "\xe2\x80\xa6" : "~";
    }
    return m;
}

/* Columns of s (UTF-8: one per character; rlk_cli_show has made every control visible). */
static int top_width(const char *s)
{
    int w = 0;

    for (; *s; s++)
        w += ((unsigned char)*s & 0xc0) != 0x80;
    return w;
}

/* Appends s to out (cap bytes), padded with spaces or cut with the marker to exactly w
 * columns (w < 0: as it is). */
static void top_cell(char *out, size_t cap, const char *s, int w, int right)
{
    size_t at = strlen(out);
    int sw = top_width(s);

    if (w < 0 || sw <= w) {
        int pad = w < 0 ? 0 : w - sw;

        snprintf(out + at, cap - at, "%*s%s%*s", right ? pad : 0, "", s, right ? 0 : pad, "");
        return;
    }
    {
        int keep = w - 1, cols = 0;
        size_t i = 0;

        while (s[i] && cols < keep + 1) {
            if (((unsigned char)s[i] & 0xc0) != 0x80 && cols++ == keep)
                break;
            i++;
        }
        if (w > 0)
            snprintf(out + at, cap - at, "%.*s%s", (int)i, s, top_marker());
    }
}

/* One line of the view, cut to cols columns (no wrap, so the header never scrolls away). */
static void top_line(int cols, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void top_line(int cols, const char *fmt, ...)
{
    char buf[4096], out[4200] = "";
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    top_cell(out, sizeof out, buf, top_width(buf) > cols ? cols : -1, 0);
    printf("%s\n", out);
}

/* The fixed columns besides NAME and HOLDER: " %-10s " KIND (12) before HOLDER, and
 * " %8s %6s %5s %6s %5s %6s" after it (42). */
#define TOP_FIXED_COLS 54

void rlk_top_print_text(rlk_top_state *s, rlk_top_row **rows, size_t n, int tty)
{
    rlk_top_totals t;
    size_t shown = n < (size_t)s->o.limit ? n : (size_t)s->o.limit, i;
    int cols, height, avail, namew, holderw, budget;
    time_t now = (time_t)(s->now_ms / 1000);
    struct tm tm;
    char when[16], line[4200];

    top_size(&cols, &height);
    if (!tty)
        height = 0;
    /* NAME and HOLDER share what the fixed columns leave: NAME half (8 .. 48). */
    avail = cols - TOP_FIXED_COLS;
    namew = avail / 2;
    namew = namew < 8 ? 8 : namew > 48 ? 48 : namew;
    holderw = avail - namew;
    if (holderw < 8)
        holderw = 8;
    /* Lines for the rows: the terminal's height less the 4 header and 2 footer lines, and
     * one so that the last newline does not scroll. */
    budget = height > 0 ? height - 7 : -1;
    gmtime_r(&now, &tm);
    strftime(when, sizeof when, "%H:%M:%S", &tm);
    rlk_top_total(rows, n, &t);
    if (tty)
        fputs("\033[H\033[J", stdout);
    top_line(cols, "rlk top - %s%s (%d node%s) - %s UTC - refresh %lld ms, %lld keys scanned, "
             "sort %s", s->nodes[0].addr, s->nnodes > 1 ? " ..." : "", s->nnodes,
             s->nnodes > 1 ? "s" : "", when, s->refresh_ms, s->scanned,
             rlk_top_sort_words[s->o.sort]);
    top_line(cols, "locks held %lld  free with waiters %lld  semaphores %lld  psemaphores %lld "
             "(%lld permits held)  latches %lld  queued %lld  subscribers %lld",
             t.locks, t.free_waited, t.semaphores, t.psemaphores, t.permits, t.latches,
             t.queued, t.subs);
    for (size_t k = 0, nd = rlk_top_deadlock_line(s->wg, cols, 0, line, sizeof line); k < nd;
         k++) {
        rlk_top_deadlock_line(s->wg, cols, k, line, sizeof line);
        top_line(cols, "%s", line);
        if (budget > 0)
            budget--;
    }
    top_line(cols, "%s", "");
    line[0] = '\0';
    top_cell(line, sizeof line, "NAME", namew, 0);
    top_cell(line, sizeof line, " KIND       ", -1, 0);   /* as wide as a row's " %-10s " */
    top_cell(line, sizeof line, "HOLDER", holderw, 0);
    top_line(cols, "%s %8s %6s %5s %6s %5s %6s", line, "TTL(ms)", "QUEUED", "SUBS", "COUNT",
             "MODE", "AGE(s)");
    for (i = 0; i < shown; i++) {
        const rlk_top_row *r = rows[i];
        char holder[1024] = "-", ttl[24] = "-", count[24] = "-", q[24], kind[16], age[24] = "-";
        size_t nfq = r->nfq < 3 ? r->nfq : 3;

        if (budget >= 0 && (long long)(1 + nfq) > budget)
            break;
        if (budget >= 0)
            budget -= (int)(1 + nfq);
        if (r->nholders) {
            const char *id = rlk_cli_shown(r->holders[0].owner, r->holders[0].owner_len);
            char more[24] = "";
            int idw;

            if (r->nholders > 1)
                snprintf(more, sizeof more, " +%zu", r->nholders - 1);
            /* The id is cut, never the count of the others. */
            idw = holderw - top_width(more);
            holder[0] = '\0';
            top_cell(holder, sizeof holder - sizeof more, id,
                     top_width(id) > idw ? (idw > 0 ? idw : 0) : -1, 0);
            strcat(holder, more);
        } else if (r->kind == RLK_IK_PSEMAPHORE && r->permit_holders > 0) {
            snprintf(holder, sizeof holder, "%lld permit holder%s", r->permit_holders,
                     r->permit_holders == 1 ? "" : "s");
        } else if (r->reserved[0]) {
            snprintf(holder, sizeof holder, "(reserved for ticket %s)",
                     rlk_cli_show(r->reserved));
        }
        if (r->ttl_ms >= 0)
            snprintf(ttl, sizeof ttl, "%lld", r->ttl_ms);
        else if (r->ttl_ms == -1)
            snprintf(ttl, sizeof ttl, "none");
        if (r->nholders)
            snprintf(count, sizeof count, "%lld", r->holders[0].count);
        else if (r->kind == RLK_IK_SEMAPHORE || r->kind == RLK_IK_PSEMAPHORE ||
                 r->kind == RLK_IK_LATCH)
            snprintf(count, sizeof count, "%lld", r->count);
        snprintf(q, sizeof q, "%lld", rlk_top_waiting(r));
        snprintf(kind, sizeof kind, " %-10s ", rlk_top_kind_word(r));
        line[0] = '\0';
        top_cell(line, sizeof line, rlk_cli_show(r->name), namew, 0);
        top_cell(line, sizeof line, kind, -1, 0);
        top_cell(line, sizeof line, holder, holderw, 0);
        /* AGE is a lock's: a semaphore's or a latch's row has none. */
        if (rlk_top_is_lock(r))
            snprintf(age, sizeof age, "%lld", (s->now_ms - r->first_ms) / 1000);
        top_line(cols, "%s %8s %6s %5lld %6s %5.5s %6s", line, ttl, q, r->subs, count,
                 r->mode ? rlk_cli_show(r->mode)
                 : r->nholders && r->holders[0].mode ? rlk_cli_show(r->holders[0].mode) : "-",
                 age);
        for (size_t k = 0; k < nfq; k++) {
            /* The waiter's id is cut, never its deadline. */
            char tail[64], id[1024] = "";
            const char *who = rlk_cli_shown(r->fq[k].owner, r->fq[k].owner_len);
            int idw;

            snprintf(tail, sizeof tail, "  deadline in %lld ms", r->fq[k].deadline_in_ms);
            idw = cols - namew - (int)strlen("   waiter ") - top_width(tail);
            top_cell(id, sizeof id, who, top_width(who) > idw ? (idw > 1 ? idw : 1) : -1, 0);
            top_line(cols, "%*s   waiter %s%s", namew, "", id, tail);
        }
    }
    if (n > i)
        top_line(cols, "... %zu more (%s)", n - i, i < shown ? "the terminal's height" : "--limit");
    if (tty) {
        printf("\n");
        line[0] = '\0';
        top_cell(line, sizeof line, "[q] quit  [s] sort: ", -1, 0);
        snprintf(line + strlen(line), sizeof line - strlen(line), "%s  every %lld ms",
                 rlk_top_sort_words[s->o.sort], s->o.interval_ms);
        {
            char out[4200] = "";

            top_cell(out, sizeof out, line, top_width(line) > cols ? cols : -1, 0);
            fputs(out, stdout);     /* no newline: the last line of the screen stays */
        }
    }
    fflush(stdout);
}
