/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitgraph.c - the wait-for graph: edges from what each name shows, cycles
 * by a depth-first search (see waitgraph.h; the reader is waitgraph_read.c).
 *
 * Two graphs share the edges. The thread graph joins waiters the server names
 * by holder id to the holders of what they wait for: a cycle there is a
 * deadlock (each thread holds what the next one waits for). The client graph
 * joins every waiter's client to the holder's client: where a kind's server
 * state names a waiter by its client only (a ticket), this is all that can be
 * known, and a cycle there is a deadlock when each client's waiting thread is
 * the one that holds (docs/deadlock.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kinds/names.h"
#include "kinds/waitgraph.h"

typedef struct wg_edge {
    char *waiter, *name, *kind, *holder;
    int by_client;
} wg_edge;

typedef struct wg_cycle {
    size_t *edge;
    size_t len;
    int by_client;
    char *key;              /* its clients, sorted, '\n'-joined: a client cycle equal to a
                               thread cycle is not repeated */
} wg_cycle;

struct rlk_waitgraph {
    wg_edge *edges;
    size_t nedges;
    wg_cycle *cycles;
    size_t ncycles;
    size_t nnames;
};

size_t rlk_wg_client_len(const char *id)
{
    const char *c = strrchr(id, ':');

    return c ? (size_t)(c - id) : strlen(id);
}

/* A waiter or holder as one graph's node names it: s[0..len). */
typedef struct wg_end {
    const char *s;
    size_t len;
} wg_end;

static int wg_end_cmp(const void *a, const void *b)
{
    const wg_end *x = a, *y = b;
    int c = memcmp(x->s, y->s, x->len < y->len ? x->len : y->len);

    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* ---------------------------------------------------------------- edges */

/* The edges of a waiter known as the client id[0..len) (or, thread, as a holder id) to the
 * holders of nm but itself, each once (a read-write lock's holder reads and writes). */
static int wg_waiter_edges(rlk_waitgraph *g, const rlk_wg_name *nm, const char *id, size_t len,
                           int by_client)
{
    for (size_t h = 0; h < nm->nholders; h++) {
        const char *hid = nm->holders[h].id;
        int known = (by_client ? rlk_wg_client_len(hid) : strlen(hid)) == len &&
                    memcmp(hid, id, len) == 0;
        wg_edge *e;

        for (size_t i = 0; i < g->nedges && !known; i++) {
            e = &g->edges[i];
            known = strlen(e->waiter) == len && memcmp(e->waiter, id, len) == 0 &&
                    strcmp(e->name, nm->name) == 0 && strcmp(e->holder, hid) == 0;
        }
        if (known)
            continue;
        if (!(e = realloc(g->edges, (g->nedges + 1) * sizeof *e)))
            return -1;
        g->edges = e;
        e = &g->edges[g->nedges++];
        e->waiter = strndup(id, len);
        e->name = strdup(nm->name);
        e->kind = strdup(nm->kind ? nm->kind : "");
        e->holder = strdup(hid);
        e->by_client = by_client;
        if (!e->waiter || !e->name || !e->kind || !e->holder)
            return -1;
    }
    return 0;
}

/* A ticket's edges: its client number is ticket / 1024, and its clients every
 * holder's (over all names) with that number, each once and in the order of
 * their ids, whatever order the servers listed the holders in: the edges' order
 * numbers the graphs' nodes, which decides the cycles a search finds ("cid:<n>"
 * when none). */
static int wg_ticket_edges(rlk_waitgraph *g, const rlk_wg_name *names, size_t n,
                           const rlk_wg_name *nm, const char *ticket)
{
    long long cid = llabs(atoll(ticket)) / 1024;
    size_t total = 0, k = 0;
    wg_end *c;
    char buf[48];
    int rc = 0;

    for (size_t i = 0; i < n; i++)
        total += names[i].nholders;
    if (!(c = malloc((total ? total : 1) * sizeof *c)))
        return -1;
    for (size_t i = 0; i < n; i++) {
        for (size_t h = 0; h < names[i].nholders; h++) {
            const char *hid = names[i].holders[h].id;
            size_t len = rlk_wg_client_len(hid);

            if (len >= 4 && rlk_names_wake_cid(hid) == cid)
                c[k++] = (wg_end){hid, len};
        }
    }
    qsort(c, k, sizeof *c, wg_end_cmp);
    for (size_t i = 0; i < k && rc == 0; i++)
        if (i == 0 || wg_end_cmp(&c[i - 1], &c[i]) != 0)
            rc = wg_waiter_edges(g, nm, c[i].s, c[i].len, 1);
    free(c);
    if (k > 0 || rc < 0)
        return rc;
    snprintf(buf, sizeof buf, "cid:%lld", cid);
    return wg_waiter_edges(g, nm, buf, strlen(buf), 1);
}

/* ---------------------------------------------------------------- cycles */

typedef struct wg_arc {
    size_t from, to, edge;
} wg_arc;

static int wg_arc_cmp(const void *a, const void *b)
{
    const wg_arc *x = a, *y = b;

    return x->from < y->from ? -1 : x->from > y->from ? 1 : x->edge < y->edge ? -1 : x->edge > y->edge;
}

/* The clients of the waiters of edges edge[0..len) (a thread waiter: its
 * client part), sorted and '\n'-joined: a cycle's key. */
static char *wg_client_key(const rlk_waitgraph *g, const size_t *edge, size_t len)
{
    wg_end *c = malloc((len ? len : 1) * sizeof *c);
    size_t total = 1, n = 0;
    char *key;

    if (!c)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        const wg_edge *e = &g->edges[edge[i]];

        c[i] = (wg_end){e->waiter, e->by_client ? strlen(e->waiter)
                                                : rlk_wg_client_len(e->waiter)};
        total += c[i].len + 1;
    }
    qsort(c, len, sizeof *c, wg_end_cmp);
    if ((key = malloc(total))) {
        for (size_t i = 0; i < len; i++) {
            memcpy(key + n, c[i].s, c[i].len);
            key[n + c[i].len] = '\n';
            n += c[i].len + 1;
        }
        key[n] = '\0';
    }
    free(c);
    return key;
}

/* Cycles of the graph arcs[0..narc) of nnode nodes (by_client: which graph):
 * for each arc on no cycle found yet (the client graph: each ticket's arc),
 * the shortest way back from its holder to its waiter, by a breadth-first
 * search. So every arc on a cycle is on one found (a depth-first search's one
 * cycle per back arc can miss an arc). A cycle starts at its first edge. */
static int wg_cycles(rlk_waitgraph *g, wg_arc *arcs, size_t narc, size_t nnode, int by_client)
{
    size_t *first = calloc(nnode + 1, sizeof *first);
    size_t *seen = calloc(nnode ? nnode : 1, sizeof *seen);    /* the search that reached it + 1 */
    size_t *work = malloc(3 * (nnode ? nnode : 1) * sizeof *work);
    size_t *queue = work, *via = work + nnode, *cyc = work + 2 * nnode;    /* via: arc into it */
    unsigned char *covered = calloc(g->nedges ? g->nedges : 1, 1);
    int rc = -1;

    if (!first || !seen || !work || !covered)
        goto out;
    qsort(arcs, narc, sizeof *arcs, wg_arc_cmp);
    for (size_t a = 0; a < narc; a++)
        first[arcs[a].from + 1]++;
    for (size_t v = 0; v < nnode; v++)
        first[v + 1] += first[v];
    for (size_t s = 0; s < narc; s++) {
        const wg_arc *st = &arcs[s];
        size_t head = 0, tail = 0, len = 0, low = 0, *edges;
        wg_cycle *more;
        char *key;
        int dup = 0;

        if (covered[st->edge] || (by_client && !g->edges[st->edge].by_client))
            continue;
        seen[st->to] = s + 1;
        queue[tail++] = st->to;
        while (head < tail && seen[st->from] != s + 1) {
            size_t u = queue[head++];

            for (size_t a = first[u]; a < first[u + 1]; a++) {
                if (seen[arcs[a].to] != s + 1) {
                    seen[arcs[a].to] = s + 1;
                    via[arcs[a].to] = a;
                    queue[tail++] = arcs[a].to;
                }
            }
        }
        if (seen[st->from] != s + 1)
            continue;
        cyc[len++] = st->edge;      /* then the way back, from its end */
        for (size_t v = st->from; v != st->to; v = arcs[via[v]].from)
            cyc[len++] = arcs[via[v]].edge;
        for (size_t i = 0; i < len; i++) {
            covered[cyc[i]] = 1;
            low = cyc[i] < cyc[low] ? i : low;
        }
        if (!(key = wg_client_key(g, cyc, len)))
            goto out;
        for (size_t c = 0; c < g->ncycles && !dup; c++)
            dup = strcmp(g->cycles[c].key, key) == 0;
        if (dup) {
            free(key);
            continue;
        }
        if ((more = realloc(g->cycles, (g->ncycles + 1) * sizeof *more)))
            g->cycles = more;
        if (!more || !(edges = malloc(len * sizeof *edges))) {
            free(key);
            goto out;
        }
        for (size_t i = 0; i < len; i++)    /* cyc runs backwards: st, then into its waiter */
            edges[i] = cyc[(low + len - i) % len];
        g->cycles[g->ncycles++] = (wg_cycle){edges, len, by_client, key};
    }
    rc = 0;
out:
    free(first);
    free(seen);
    free(work);
    free(covered);
    return rc;
}

/* The node of s[0..len) among nodes[0..*n), added as the next one when new. */
static size_t wg_node(wg_end *nodes, size_t *n, const char *s, size_t len)
{
    for (size_t i = 0; i < *n; i++)
        if (nodes[i].len == len && memcmp(nodes[i].s, s, len) == 0)
            return i;
    nodes[*n] = (wg_end){s, len};
    return (*n)++;
}

/* The arcs of one graph: thread (waiters by thread only) or client (all).
 * Its nodes are numbered in the order the edges first name them. */
static int wg_graph(rlk_waitgraph *g, int by_client)
{
    wg_end *nodes = malloc((2 * g->nedges + 1) * sizeof *nodes);
    wg_arc *arcs = malloc((g->nedges + 1) * sizeof *arcs);
    size_t nnode = 0, narc = 0;
    int rc = -1;

    if (nodes && arcs) {
        for (size_t i = 0; i < g->nedges; i++) {
            const wg_edge *e = &g->edges[i];
            size_t wl = by_client && !e->by_client ? rlk_wg_client_len(e->waiter)
                                                   : strlen(e->waiter);
            size_t hl = by_client ? rlk_wg_client_len(e->holder) : strlen(e->holder);
            size_t w, h;

            if (!by_client && e->by_client)
                continue;
            w = wg_node(nodes, &nnode, e->waiter, wl);
            h = wg_node(nodes, &nnode, e->holder, hl);
            if (w != h)
                arcs[narc++] = (wg_arc){w, h, i};
        }
        rc = wg_cycles(g, arcs, narc, nnode, by_client);
    }
    free(nodes);
    free(arcs);
    return rc;
}

int rlk_wg_build(const rlk_wg_name *names, size_t n, rlk_waitgraph **out)
{
    rlk_waitgraph *g = calloc(1, sizeof *g);
    int rc = 0;

    *out = NULL;
    if (!g)
        return RLK_ERR_NOMEM;
    g->nnames = n;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const rlk_wg_name *nm = &names[i];

        for (size_t w = 0; w < nm->nwaiters && rc == 0; w++) {
            const rlk_wg_party *p = &nm->waiters[w];

            rc = p->form == RLK_WG_TICKET ? wg_ticket_edges(g, names, n, nm, p->id)
                                          : wg_waiter_edges(g, nm, p->id, strlen(p->id),
                                                            p->form == RLK_WG_CLIENT);
        }
    }
    if (rc < 0 || wg_graph(g, 0) < 0 || wg_graph(g, 1) < 0) {
        rlk_waitgraph_free(g);
        return RLK_ERR_NOMEM;
    }
    *out = g;
    return RLK_OK;
}

/* ---------------------------------------------------------------- accessors */

size_t rlk_waitgraph_name_count(const rlk_waitgraph *g)
{
    return g ? g->nnames : 0;
}

size_t rlk_waitgraph_edge_count(const rlk_waitgraph *g)
{
    return g ? g->nedges : 0;
}

int rlk_waitgraph_edge(const rlk_waitgraph *g, size_t i, const char **waiter, const char **name,
                       const char **kind, const char **holder, int *by_client)
{
    if (!g || i >= g->nedges)
        return RLK_ERR_ARG;
    if (waiter)
        *waiter = g->edges[i].waiter;
    if (name)
        *name = g->edges[i].name;
    if (kind)
        *kind = g->edges[i].kind;
    if (holder)
        *holder = g->edges[i].holder;
    if (by_client)
        *by_client = g->edges[i].by_client;
    return RLK_OK;
}

size_t rlk_waitgraph_cycle_count(const rlk_waitgraph *g)
{
    return g ? g->ncycles : 0;
}

size_t rlk_waitgraph_cycle_length(const rlk_waitgraph *g, size_t i)
{
    return g && i < g->ncycles ? g->cycles[i].len : 0;
}

long rlk_waitgraph_cycle_edge(const rlk_waitgraph *g, size_t i, size_t j)
{
    return g && i < g->ncycles && j < g->cycles[i].len ? (long)g->cycles[i].edge[j] : -1;
}

int rlk_waitgraph_cycle_by_client(const rlk_waitgraph *g, size_t i)
{
    return g && i < g->ncycles ? g->cycles[i].by_client : 0;
}

void rlk_waitgraph_free(rlk_waitgraph *g)
{
    if (!g)
        return;
    for (size_t i = 0; i < g->nedges; i++) {
        free(g->edges[i].waiter);
        free(g->edges[i].name);
        free(g->edges[i].kind);
        free(g->edges[i].holder);
    }
    for (size_t i = 0; i < g->ncycles; i++) {
        free(g->cycles[i].edge);
        free(g->cycles[i].key);
    }
    free(g->edges);
    free(g->cycles);
    free(g);
}
