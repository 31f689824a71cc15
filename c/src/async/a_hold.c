/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_hold.c - the async client's table of holds (a_hold.h): what the lock
 * kinds' requests (a_lock.c) record of each hold, found by (kind, name,
 * owner), dropped from the watchdog with it; and rlk_async_metrics_get,
 * whose gauges are this table's.
 */
#include <stdlib.h>
#include <string.h>

#include "client/clock.h"
#include "runtime/metrics.h"
#include "runtime/rt.h"
#include "async/engine.h"
#include "async/ae_wd.h"
#include "async/a_hold.h"
#include "async/a_kind.h"

#define RLK_A_HOLD_BUCKETS 4096

typedef struct rlk_a_hold_table {
    rlk_a_hold *b[RLK_A_HOLD_BUCKETS];
} rlk_a_hold_table;

static void *rlk_a_hold_table_make(void)
{
    return calloc(1, sizeof(rlk_a_hold_table));
}

static void rlk_a_hold_table_destroy(void *p)
{
    rlk_a_hold_table *t = p;

    for (size_t i = 0; i < RLK_A_HOLD_BUCKETS; i++) {
        rlk_a_hold *h = t->b[i], *next;

        for (; h; h = next) {
            next = h->next;
            free(h->name);
            free(h->owner);
            free(h);
        }
    }
    free(t);
}

static size_t rlk_a_hold_hash(int kind, const char *name, const char *owner)
{
    size_t h = 1469598103934665603ULL ^ (size_t)kind;

    for (; *name; name++)
        h = (h ^ (unsigned char)*name) * 1099511628211ULL;
    for (; *owner; owner++)
        h = (h ^ (unsigned char)*owner) * 1099511628211ULL;
    return h & (RLK_A_HOLD_BUCKETS - 1);
}

static rlk_a_hold_table *rlk_a_hold_tab(rlk_async *ac)
{
    return rlk_ae_kind_data(ac, RLK_AE_SLOT_LOCK, rlk_a_hold_table_make, rlk_a_hold_table_destroy);
}

rlk_a_hold *rlk_a_hold_find(rlk_async *ac, int kind, const char *name, const char *owner)
{
    rlk_a_hold_table *t = rlk_a_hold_tab(ac);

    if (!t)
        return NULL;
    for (rlk_a_hold *h = t->b[rlk_a_hold_hash(kind, name, owner)]; h; h = h->next)
        if (h->kind == kind && strcmp(h->name, name) == 0 && strcmp(h->owner, owner) == 0) {
            if (h->expires_ms && !h->wd && rlk_ae_now_ms() >= h->expires_ms) {
                rlk_a_hold_drop(ac, h);
                return NULL;
            }
            return h;
        }
    return NULL;
}

rlk_a_hold *rlk_a_hold_get(rlk_async *ac, int kind, const char *name, const char *owner)
{
    rlk_a_hold_table *t = rlk_a_hold_tab(ac);
    rlk_a_hold *h = rlk_a_hold_find(ac, kind, name, owner);
    size_t i;

    if (h || !t)
        return h;
    if (!(h = calloc(1, sizeof *h)) || !(h->name = strdup(name)) || !(h->owner = strdup(owner))) {
        if (h)
            free(h->name);
        free(h);
        return NULL;
    }
    h->kind = kind;
    i = rlk_a_hold_hash(kind, name, owner);
    h->next = t->b[i];
    t->b[i] = h;
    return h;
}

void rlk_a_hold_drop(rlk_async *ac, rlk_a_hold *h)
{
    rlk_a_hold_table *t = rlk_a_hold_tab(ac);
    rlk_a_hold **p;

    if (!h || !t)
        return;
    for (p = &t->b[rlk_a_hold_hash(h->kind, h->name, h->owner)]; *p; p = &(*p)->next)
        if (*p == h) {
            *p = h->next;
            break;
        }
    rlk_ae_wd_del(h->wd);
    if (h->count > 0)
        rlk_metrics_hold(rlk_ae_counters(ac), h->name, h->acquired_ns);
    free(h->name);
    free(h->owner);
    free(h);
}

void rlk_a_hold_lost(rlk_async *ac, rlk_ae_hold *wd, void *arg)
{
    rlk_a_hold *h = arg;

    (void)wd;
    h->wd = NULL;   /* the engine frees its own */
    rlk_a_hold_drop(ac, h);
}

/* The hold of (kind, name, task); NULL when none. */
static rlk_a_hold *rlk_a_hold_of(rlk_async *ac, int kind, const char *name,
                                 unsigned long long task)
{
    char owner[RLK_OWNER_MAX + 1];

    if (!ac || !name)
        return NULL;
    rlk_ae_owner(ac, task, owner, sizeof owner);
    return rlk_a_hold_find(ac, kind, name, owner);
}

long long rlk_a_hold_count(rlk_async *ac, int kind, const char *name, unsigned long long task)
{
    rlk_a_hold *h = rlk_a_hold_of(ac, kind, name, task);

    return h ? h->count : 0;
}

int rlk_a_hold_token(rlk_async *ac, int kind, const char *name, unsigned long long task,
                     long long *token)
{
    rlk_a_hold *h = rlk_a_hold_of(ac, kind, name, task);

    *token = h ? h->token : 0;
    return h != NULL;
}

void rlk_a_hold_drop_forced(rlk_async *ac, const char *name, const rlk_proto *k)
{
    rlk_a_hold_table *t = rlk_a_hold_tab(ac);

    if (!t)
        return;
    for (size_t i = 0; i < RLK_A_HOLD_BUCKETS; i++) {
        rlk_a_hold *h = t->b[i], *next;

        for (; h; h = next) {
            next = h->next;
            if (strcmp(h->name, name) == 0 && (h->row == k || (rlk_a_kind_row(h->kind)
                && strcmp(rlk_a_kind_row(h->kind)->force, k->force) == 0)))
                rlk_a_hold_drop(ac, h);
        }
    }
}

int rlk_async_metrics_get(rlk_async *ac, rlk_metrics *out)
{
    rlk_a_hold_table *t;
    int rc;

    if (!ac || !out)
        return RLK_ERR_ARG;
    rc = rlk_metrics_get(rlk_ae_client(ac), out);
    if (rc != RLK_OK)
        return rc;
    /* The gauges: this client's table of holds (the inner client's registry is unused). */
    out->locks_held = out->watchdog_entries = 0;
    if ((t = rlk_a_hold_tab(ac)) != NULL)
        for (size_t i = 0; i < RLK_A_HOLD_BUCKETS; i++)
            for (rlk_a_hold *h = t->b[i]; h; h = h->next) {
                out->locks_held++;
                out->watchdog_entries += h->wd != NULL;
            }
    return RLK_OK;
}
