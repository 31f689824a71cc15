/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * slotmap.c - the Redis Cluster map, its redirects and its "not now"
 * replies (see slotmap.h). Pure: no lock, no I/O.
 */
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "client/slotmap.h"

void rlk_slotmap_init(rlk_slotmap *m, rlk_slotmap_new_fn node_new, void *arg)
{
    memset(m, 0, sizeof *m);
    m->node_new = node_new;
    m->arg = arg;
}

void rlk_slotmap_free(rlk_slotmap *m)
{
    for (int i = 0; i < m->nnodes; i++)
        free(m->host[i]);
    m->nnodes = 0;
}

int rlk_slotmap_node(rlk_slotmap *m, const char *host, int port)
{
    int i = m->nnodes;

    if (!host[0] || port <= 0)
        return -1;  /* an unknown endpoint ("MOVED 1 :6379"): not a node */
    for (int k = 0; k < m->nnodes; k++)
        if (m->port[k] == port && strcmp(m->host[k], host) == 0)
            return k;
    if (i >= RLK_SLOTMAP_MAX_NODES || !(m->host[i] = strdup(host)))
        return -1;
    m->port[i] = port;
    if (m->node_new && m->node_new(m->arg, i, host, port) != 0) {
        free(m->host[i]);
        m->host[i] = NULL;
        return -1;
    }
    return m->nnodes++;
}

int rlk_slotmap_owner(rlk_slotmap *m, int slot)
{
    if (slot >= RLK_SLOT_COUNT)
        return -1;
    if (slot >= 0)
        return m->owner[slot] ? m->owner[slot] - 1 : -1;
    return m->nmasters ? m->master[m->rr++ % (unsigned)m->nmasters] : -1;
}

int rlk_slotmap_is_master(const rlk_slotmap *m, int idx)
{
    for (int k = 0; k < m->nmasters; k++)
        if (m->master[k] == idx)
            return 1;
    return 0;
}

int rlk_slotmap_entry_ok(const redisReply *e)
{
    const redisReply *m;

    if (e->type != REDIS_REPLY_ARRAY || e->elements < 3 ||
        e->element[0]->type != REDIS_REPLY_INTEGER || e->element[1]->type != REDIS_REPLY_INTEGER)
        return 0;
    m = e->element[2];
    return m->type == REDIS_REPLY_ARRAY && m->elements >= 2 &&
           m->element[0]->type == REDIS_REPLY_STRING && m->element[1]->type == REDIS_REPLY_INTEGER &&
           e->element[0]->integer >= 0 && e->element[1]->integer < RLK_SLOT_COUNT &&
           e->element[0]->integer <= e->element[1]->integer;
}

int rlk_slotmap_load(rlk_slotmap *m, const redisReply *r, const char *asked_host)
{
    int rc = RLK_OK;

    if (r->type != REDIS_REPLY_ARRAY)
        return RLK_ERR_PROTOCOL;
    for (size_t i = 0; i < r->elements; i++)
        if (!rlk_slotmap_entry_ok(r->element[i]))
            return RLK_ERR_PROTOCOL;
    memset(m->owner, 0, sizeof m->owner);
    m->nmasters = 0;
    for (size_t i = 0; i < r->elements; i++) {
        const redisReply *e = r->element[i], *n = e->element[2];
        /* An empty host means "the node you asked" (cluster-announce unset). */
        int idx = rlk_slotmap_node(m, n->element[0]->len ? n->element[0]->str : asked_host,
                                   (int)n->element[1]->integer);

        if (idx < 0) {
            rc = RLK_ERR_NOMEM;
            continue;
        }
        for (long long s = e->element[0]->integer; s <= e->element[1]->integer; s++)
            m->owner[s] = (unsigned char)(idx + 1);
        if (!rlk_slotmap_is_master(m, idx))
            m->master[m->nmasters++] = idx;
    }
    m->loaded = 1;
    return rc;
}

/* Where word stands in text as a reply's first word: at its start, or
 * after ": " (rlk_set_reply_error's "<what> <addr>: <reply>"), followed by
 * a space or the end; the first such place, or NULL. */
static const char *rlk_slotmap_word(const char *text, const char *word)
{
    size_t n = strlen(word);

    for (const char *at = strstr(text, word); at; at = strstr(at + 1, word))
        if ((at == text || (at >= text + 2 && at[-1] == ' ' && at[-2] == ':')) &&
            (at[n] == ' ' || at[n] == '\0'))
            return at + n;
    return NULL;
}

int rlk_slotmap_redirect(const char *text, int *slot, char *host, size_t hostlen, int *port)
{
    const char *p, *colon;
    char *end;
    long s, pt;
    int kind;
    size_t hl;

    if ((p = rlk_slotmap_word(text, "MOVED")) != NULL)
        kind = RLK_SLOTMAP_MOVED;
    else if ((p = rlk_slotmap_word(text, "ASK")) != NULL)
        kind = RLK_SLOTMAP_ASK;
    else
        return RLK_SLOTMAP_NONE;
    if (*p++ != ' ')
        return RLK_SLOTMAP_NONE;
    s = strtol(p, &end, 10);
    if (end == p || *end != ' ' || s < 0 || s >= RLK_SLOT_COUNT)
        return RLK_SLOTMAP_NONE;
    p = end + 1;
    colon = strrchr(p, ':');
    if (!colon)
        return RLK_SLOTMAP_NONE;
    pt = strtol(colon + 1, &end, 10);
    if (end == colon + 1 || pt <= 0 || pt > 65535)
        return RLK_SLOTMAP_NONE;
    hl = (size_t)(colon - p);
    if (hl > 2 && p[0] == '[' && p[hl - 1] == ']')
        p++, hl -= 2;               /* "[::1]:7000" */
    if (hl >= hostlen)
        return RLK_SLOTMAP_NONE;
    memcpy(host, p, hl);
    host[hl] = '\0';
    *slot = (int)s;
    *port = (int)pt;
    return kind;
}

int rlk_slotmap_move(rlk_slotmap *m, int slot, int idx)
{
    if (slot < 0 || slot >= RLK_SLOT_COUNT || idx < 0 || m->owner[slot] == idx + 1)
        return 0;
    m->owner[slot] = (unsigned char)(idx + 1);
    return 1;
}

int rlk_slotmap_not_now(const char *text)
{
    static const struct {
        const char *word;
        int when;
    } later[] = {{"LOADING", RLK_SLOTMAP_LATER_HERE},  {"BUSY", RLK_SLOTMAP_LATER_HERE},
                 {"TRYAGAIN", RLK_SLOTMAP_LATER_MAP},  {"CLUSTERDOWN", RLK_SLOTMAP_LATER_MAP},
                 {"MASTERDOWN", RLK_SLOTMAP_LATER_MAP}};

    for (size_t i = 0; i < sizeof later / sizeof later[0]; i++)   /* here before map */
        if (rlk_slotmap_word(text, later[i].word))
            return later[i].when;
    return RLK_SLOTMAP_NOW;
}
