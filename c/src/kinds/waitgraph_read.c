/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * waitgraph_read.c - rlk_waitgraph_read: the wait-for graph's input from a
 * server (waitgraph.h; docs/deadlock.md says what each kind lets it see).
 *
 * SCAN MATCH pattern COUNT 1000 TYPE hash finds the held locks (a lock of the
 * lock family is a hash of holder id -> count while held; a read-write lock's
 * has its `mode` field and "<id>:write" for the writer). Of each:
 *   HGETALL name                          its holders
 *   LRANGE {name}:rlk_waiters 0 -1        the ticket queue (the reentrant
 *                                         lock's waiters, the read-write
 *                                         lock's writers): client numbers
 *   LRANGE redisson_lock_queue:{name} 0 -1  the fair lock's waiters' holder ids
 * A held name without waiters is kept too: its holders tell which client a
 * ticket elsewhere belongs to. On a cluster every
 * master is scanned, each key read on its master (a name's keys share its
 * slot). The reads are not one snapshot: a wait that ends between two reads
 * may show as an edge that is gone.
 */
#include <stdlib.h>
#include <string.h>

#include "client/error.h"
#include "client/topo.h"
#include "kinds/names.h"
#include "kinds/waitgraph.h"

#define WG_NODES_MAX 64
#define WG_SCAN_COUNT "1000"

typedef struct wg_read {
    rlk_wg_name *names;
    size_t n;
    redisReply **keep;      /* replies the names' strings point into */
    size_t nkeep;
} wg_read;

/* After the reads (rc): the graph of what they found in *out (who's
 * message when out of memory), and what the reads kept freed. */
static int wg_read_end(rlk_client *c, wg_read *r, int rc, const char *who, rlk_waitgraph **out)
{
    if (rc == RLK_OK && (rc = rlk_wg_build(r->names, r->n, out)) != RLK_OK)
        rlk_set_error(c, rc, "%s: out of memory", who);
    for (size_t i = 0; i < r->n; i++) {
        free((void *)r->names[i].holders);
        free((void *)r->names[i].waiters);
    }
    for (size_t i = 0; i < r->nkeep; i++)
        freeReplyObject(r->keep[i]);
    free(r->names);
    free(r->keep);
    return rc;
}

/* A command on c, its reply kept in r (the names point into it). */
static int wg_cmd(rlk_client *c, wg_read *r, int argc, const char **argv, redisReply **rep)
{
    redisReply **keep;
    int rc;

    *rep = NULL;
    if ((rc = rlk_command(c, argc, argv, NULL, rep)) != RLK_OK)
        return rc;
    if (!(keep = realloc(r->keep, (r->nkeep + 1) * sizeof *keep))) {
        freeReplyObject(*rep);
        return RLK_ERR_NOMEM;
    }
    r->keep = keep;
    r->keep[r->nkeep++] = *rep;
    return RLK_OK;
}

/* A positive decimal count, the whole string. */
static int wg_is_count(const redisReply *v)
{
    if (v->type != REDIS_REPLY_STRING || v->len == 0 || v->len > 19)
        return 0;
    for (size_t i = 0; i < v->len; i++)
        if (v->str[i] < '0' || v->str[i] > '9')
            return 0;
    return atoll(v->str) > 0;
}

/* The waiters of list key (form RLK_WG_*) appended to w. */
static int wg_list(rlk_client *c, wg_read *r, const char *key, int form, rlk_wg_party **w,
                   size_t *nw)
{
    const char *argv[4] = {"LRANGE", key, "0", "-1"};
    redisReply *rep;
    int rc = wg_cmd(c, r, 4, argv, &rep);
    rlk_wg_party *p;

    if (rc != RLK_OK)
        return rc;
    if (rep->type != REDIS_REPLY_ARRAY || rep->elements == 0)
        return RLK_OK;      /* absent, or a key of another type: no waiters rlk knows */
    if (!(p = realloc(*w, (*nw + rep->elements) * sizeof *p)))
        return RLK_ERR_NOMEM;
    *w = p;
    for (size_t i = 0; i < rep->elements; i++)
        if (rep->element[i]->type == REDIS_REPLY_STRING)
            p[(*nw)++] = (rlk_wg_party){rep->element[i]->str, form};
    return RLK_OK;
}

/* One hash key: a lock with waiters becomes one more name. */
static int wg_read_name(rlk_client *c, wg_read *r, const char *name)
{
    const char *argv[2] = {"HGETALL", name};
    redisReply *all;
    rlk_wg_party *h = NULL, *w = NULL;
    rlk_wg_name *nm;
    size_t nh = 0, nw = 0, nwt;
    int rc, rw = 0, unknown;
    char *waiters = NULL, *queue = NULL;

    if ((rc = wg_cmd(c, r, 2, argv, &all)) != RLK_OK)
        return rc;
    if (all->type != REDIS_REPLY_ARRAY || all->elements < 2)
        return RLK_OK;
    if (!(h = calloc(all->elements / 2, sizeof *h)))
        return RLK_ERR_NOMEM;
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        redisReply *f = all->element[k];

        if (f->type != REDIS_REPLY_STRING)
            goto not_lock;
        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0) {
            rw = 1;
            continue;
        }
        if (!wg_is_count(all->element[k + 1]) || strlen(f->str) != f->len)
            goto not_lock;
        if (f->len > 6 && memcmp(f->str + f->len - 6, ":write", 6) == 0)
            f->str[f->len - 6] = '\0';      /* the writer's id; its reads are the bare id */
        h[nh++] = (rlk_wg_party){f->str, RLK_WG_THREAD};
    }
    rc = RLK_ERR_NOMEM;
    if (!(waiters = rlk_names_key(NULL, "waiters", name, &unknown)) ||
        !(queue = rlk_names_key(NULL, "queue", name, &unknown)))
        goto out;
    if ((rc = wg_list(c, r, waiters, RLK_WG_TICKET, &w, &nw)) != RLK_OK)
        goto out;
    nwt = nw;
    if (!rw && (rc = wg_list(c, r, queue, RLK_WG_THREAD, &w, &nw)) != RLK_OK)
        goto out;
    if (nh == 0)
        goto not_lock;      /* nobody holds: nothing to wait for */
    if (!(nm = realloc(r->names, (r->n + 1) * sizeof *nm))) {
        rc = RLK_ERR_NOMEM;
        goto out;
    }
    r->names = nm;
    r->names[r->n++] = (rlk_wg_name){name, rw ? "rwlock" : nw > nwt ? "fair" : "reentrant",
                                     h, nh, w, nw};
    h = w = NULL;           /* the name's now (wg_read_end frees them) */
not_lock:
    rc = RLK_OK;
out:
    free(h);
    free(w);
    free(waiters);
    free(queue);
    return rc;
}

/* SCAN one node, reading each lock hash on it. */
static int wg_scan(rlk_client *c, wg_read *r, const char *pattern)
{
    char cursor[32] = "0";

    do {
        const char *argv[8] = {"SCAN", cursor, "MATCH", pattern, "COUNT", WG_SCAN_COUNT, "TYPE",
                               "hash"};
        redisReply *rep;
        int rc = wg_cmd(c, r, 8, argv, &rep);

        if (rc != RLK_OK)
            return rc;
        if (rep->type != REDIS_REPLY_ARRAY || rep->elements != 2 ||
            rep->element[0]->type != REDIS_REPLY_STRING ||
            rep->element[1]->type != REDIS_REPLY_ARRAY || rep->element[0]->len >= sizeof cursor)
            return rlk_set_error(c, RLK_ERR_PROTOCOL, "SCAN: a reply of an unexpected shape");
        memcpy(cursor, rep->element[0]->str, rep->element[0]->len + 1);
        for (size_t i = 0; i < rep->element[1]->elements; i++) {
            const redisReply *k = rep->element[1]->element[i];

            if (k->type == REDIS_REPLY_STRING && strlen(k->str) == k->len &&
                (rc = wg_read_name(c, r, k->str)) != RLK_OK)
                return rc;
        }
    } while (strcmp(cursor, "0") != 0);
    return RLK_OK;
}

int rlk_wg_read_names(rlk_client *c, const char *const *names, size_t n, rlk_waitgraph **out)
{
    wg_read r = {0};
    int rc = RLK_OK;

    if (!c)
        return RLK_ERR_ARG;
    if (!out || (n && !names))
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_wg_read_names: bad argument");
    *out = NULL;
    for (size_t i = 0; i < n && rc == RLK_OK; i++)
        rc = wg_read_name(c, &r, names[i]);
    return wg_read_end(c, &r, rc, "rlk_wg_read_names", out);
}

int rlk_waitgraph_read(rlk_client *c, const char *pattern, rlk_waitgraph **out)
{
    rlk_client *node[WG_NODES_MAX];
    wg_read r = {0};
    int n, rc = RLK_OK;

    if (!c)
        return RLK_ERR_ARG;
    if (!out)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_waitgraph_read: out is NULL");
    *out = NULL;
    if ((n = rlk_topo_masters(c, node, WG_NODES_MAX)) <= 0)
        return rlk_set_error(c, RLK_ERR_IO, "rlk_waitgraph_read: no cluster master known");
    for (int i = 0; i < n && rc == RLK_OK; i++)
        if ((rc = wg_scan(node[i], &r, pattern ? pattern : "*")) != RLK_OK && node[i] != c)
            rlk_set_error(c, rc, "%s", rlk_errstr(node[i]));
    return wg_read_end(c, &r, rc, "rlk_waitgraph_read", out);
}
