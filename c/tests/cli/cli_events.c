/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cli_events.c - see cli_events.h.
 */
#define _POSIX_C_SOURCE 200809L

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli_events.h"

#define EV_MAX_OPEN 64

typedef struct ev_open {
    char tag[8];
    char id[32];
} ev_open;

typedef struct ev_state {
    ev_open open[EV_MAX_OPEN];
    int nopen;
} ev_state;

static int ev_has_writer(const ev_state *s)
{
    for (int k = 0; k < s->nopen; k++)
        if (strcmp(s->open[k].tag, "W") == 0)
            return 1;
    return 0;
}

static int ev_start(ev_state *s, cli_events *e, const char *tag, const char *id)
{
    if (s->nopen == EV_MAX_OPEN)
        return -1;
    snprintf(s->open[s->nopen].tag, sizeof s->open[0].tag, "%s", tag);
    snprintf(s->open[s->nopen].id, sizeof s->open[0].id, "%s", id);
    s->nopen++;
    if (s->nopen > e->max_open)
        e->max_open = s->nopen;
    if (s->nopen > 1 && ev_has_writer(s))
        e->writer_shared = 1;
    return 0;
}

static int ev_end(ev_state *s, cli_events *e, const char *tag, const char *id)
{
    for (int k = 0; k < s->nopen; k++) {
        if (strcmp(s->open[k].tag, tag) == 0 && strcmp(s->open[k].id, id) == 0) {
            s->open[k] = s->open[--s->nopen];
            e->pairs++;
            return 0;
        }
    }
    return -1;
}

cli_events cli_events_parse(const char *text)
{
    cli_events e = {1, 0, 0, 0};
    ev_state s;
    const char *line = text;

    s.nopen = 0;
    while (*line) {
        char word[8], tag[8], id[32];
        const char *nl = strchr(line, '\n');
        int rc = -1;

        if (sscanf(line, "%7s %7s %31s", word, tag, id) == 3) {
            if (strcmp(word, "start") == 0)
                rc = ev_start(&s, &e, tag, id);
            else if (strcmp(word, "end") == 0)
                rc = ev_end(&s, &e, tag, id);
        }
        if (rc < 0 || !nl) {
            e.ok = 0;
            return e;
        }
        line = nl + 1;
    }
    e.ok = s.nopen == 0;
    return e;
}

void cli_events_script(char *buf, size_t len, const char *log, const char *tag, const char *hold)
{
    snprintf(buf, len, "echo \"start %s $$\" >> %s; %s; echo \"end %s $$\" >> %s", tag, log,
             hold, tag, log);
}

void cli_events_barrier(char *buf, size_t len, const char *log, int n)
{
    snprintf(buf, len, "n=0; while [ \"$(grep -c '^start' %s)\" -lt %d ] && [ $n -lt 1000 ]; "
             "do sleep 0.01; n=$((n+1)); done", log, n);
}
