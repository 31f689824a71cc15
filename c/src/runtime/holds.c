/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * holds.c - the one table of a client's holds (holds.h): a fixed number of
 * buckets, chained, by an FNV-1a hash of (kind, name, owner).
 */
#include <stdlib.h>
#include <string.h>

#include "client/slot.h"
#include "runtime/holds.h"

#define RLK_HOLDS_BUCKETS 4096      /* a power of two */

struct rlk_holds {
    rlk_holds_rec *b[RLK_HOLDS_BUCKETS];
    unsigned long long next_id;
    size_t n;                       /* records in the table */
    rlk_holds_rec *last;            /* the record found or made last; NULL: none */
};

static size_t rlk_holds_hash(int kind, const char *name, const char *owner)
{
    unsigned long long h = rlk_hash(RLK_HASH_INIT ^ (unsigned long long)kind, name, strlen(name));

    return rlk_hash(h, owner, strlen(owner)) & (RLK_HOLDS_BUCKETS - 1);
}

static int rlk_holds_is(const rlk_holds_rec *r, int kind, const char *name, const char *owner)
{
    return r->kind == kind && strcmp(r->name, name) == 0 && strcmp(r->owner, owner) == 0;
}

rlk_holds *rlk_holds_new(void)
{
    return calloc(1, sizeof(rlk_holds));
}

void rlk_holds_rec_free(rlk_holds_rec *r)
{
    free(r);    /* its name and owner are in the same block (rlk_holds_get) */
}

void rlk_holds_free(void *table)
{
    rlk_holds *t = table;
    rlk_holds_iter it = {0};
    rlk_holds_rec *r;

    if (!t)
        return;
    while ((r = rlk_holds_next(t, NULL, &it)) != NULL)
        rlk_holds_rec_free(r);
    free(t);
}

/* A lock call looks up its hold several times (its kind's data, its count, the acquire's
 * record, the release's), each once under the registry's mutex: the record found last is
 * compared before the name and owner are hashed. Callers serialise every use of a table
 * (holds.h), so find may note it. */
rlk_holds_rec *rlk_holds_find(const rlk_holds *t, int kind, const char *name, const char *owner)
{
    rlk_holds *w = (rlk_holds *)t;

    if (t->n == 0)
        return NULL;
    if (t->last && rlk_holds_is(t->last, kind, name, owner))
        return t->last;
    for (rlk_holds_rec *r = t->b[rlk_holds_hash(kind, name, owner)]; r; r = r->next)
        if (rlk_holds_is(r, kind, name, owner))
            return w->last = r;
    return NULL;
}

rlk_holds_rec *rlk_holds_get(rlk_holds *t, int kind, const char *name, const char *owner)
{
    rlk_holds_rec *r = rlk_holds_find(t, kind, name, owner);
    size_t i, nlen, olen;

    if (r)
        return r;
    nlen = strlen(name) + 1;
    olen = strlen(owner) + 1;
    if (!(r = calloc(1, sizeof *r + nlen + olen)))
        return NULL;
    r->name = memcpy((char *)(r + 1), name, nlen);
    r->owner = memcpy(r->name + nlen, owner, olen);
    r->kind = kind;
    r->id = ++t->next_id;
    i = rlk_holds_hash(kind, name, owner);
    r->bucket = i;
    r->next = t->b[i];
    t->b[i] = r;
    t->n++;
    return t->last = r;
}

void rlk_holds_take(rlk_holds *t, rlk_holds_rec *r)
{
    if (!r || r->bucket >= RLK_HOLDS_BUCKETS)
        return;
    for (rlk_holds_rec **p = &t->b[r->bucket]; *p; p = &(*p)->next)
        if (*p == r) {
            *p = r->next;
            r->next = NULL;
            t->n--;
            if (t->last == r)
                t->last = NULL;
            return;
        }
}

void rlk_holds_drop(rlk_holds *t, rlk_holds_rec *r)
{
    rlk_holds_take(t, r);
    rlk_holds_rec_free(r);
}

rlk_holds_rec *rlk_holds_next(const rlk_holds *t, const char *name, rlk_holds_iter *it)
{
    for (;;) {
        rlk_holds_rec *r = it->next;

        while (!r && it->b < RLK_HOLDS_BUCKETS)
            r = t->b[it->b++];
        if (!r)
            return NULL;
        it->next = r->next;
        if (!name || strcmp(r->name, name) == 0)
            return r;
    }
}

void rlk_holds_gauges(const rlk_holds *t, long long *held, long long *watchdog)
{
    rlk_holds_iter it = {0};
    rlk_holds_rec *r;

    *held = *watchdog = 0;
    while (t && (r = rlk_holds_next(t, NULL, &it)) != NULL) {
        (*held)++;
        *watchdog += r->wd != NULL;
    }
}
