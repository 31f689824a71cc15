/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_hold.c - the async client's table of holds (a_hold.h): what the lock
 * kinds' requests (a_lock.c) record of each hold, in the one hold table
 * (runtime/holds.h) driven on the loop: a fixed lease's end, the drop from
 * the watchdog with it; and rlk_async_metrics_get, whose gauges are this
 * table's.
 */
#include <string.h>

#include "client/clock.h"
#include "engine/metrics.h"
#include "runtime/rt.h"
#include "engine/engine.h"
#include "engine/ae_wd.h"
#include "async/a_hold.h"
#include "async/a_kind.h"

static void *rlk_a_hold_table_make(void)
{
    return rlk_holds_new();
}

static rlk_holds *rlk_a_hold_tab(rlk_async *ac)
{
    /* Freed with the client; the watchdog entries are the engine's (rlk_ae_wd_free_all). */
    return rlk_ae_kind_data(ac, RLK_AE_SLOT_LOCK, rlk_a_hold_table_make, rlk_holds_free);
}

static rlk_holds *rlk_a_hold_doubts(rlk_async *ac)
{
    return rlk_ae_kind_data(ac, RLK_AE_SLOT_DOUBT, rlk_a_hold_table_make, rlk_holds_free);
}

void rlk_a_hold_doubt_keep(rlk_async *ac, int kind, const char *name, const char *owner)
{
    rlk_holds *t = rlk_a_hold_doubts(ac);

    if (t)
        rlk_holds_get(t, kind, name, owner);
}

int rlk_a_hold_doubt_take(rlk_async *ac, int kind, const char *name, const char *owner)
{
    rlk_holds *t = kind >= 0 ? rlk_a_hold_doubts(ac) : NULL;
    rlk_holds_rec *d = t ? rlk_holds_find(t, kind, name, owner) : NULL;

    if (d)
        rlk_holds_drop(t, d);
    return d != NULL;
}

rlk_a_hold *rlk_a_hold_find(rlk_async *ac, int kind, const char *name, const char *owner)
{
    rlk_holds *t = rlk_a_hold_tab(ac);
    rlk_a_hold *h = t ? rlk_holds_find(t, kind, name, owner) : NULL;

    if (h && h->lease_ns && !h->wd &&
        rlk_ae_now_ms() * RLK_NS_PER_MS >= h->lease_ns + h->lease_ms * RLK_NS_PER_MS) {
        rlk_a_hold_drop(ac, h);     /* its fixed lease has run out */
        return NULL;
    }
    return h;
}

rlk_a_hold *rlk_a_hold_get(rlk_async *ac, int kind, const char *name, const char *owner)
{
    rlk_holds *t = rlk_a_hold_tab(ac);
    rlk_a_hold *h = rlk_a_hold_find(ac, kind, name, owner);

    return h || !t ? h : rlk_holds_get(t, kind, name, owner);
}

void rlk_a_hold_drop(rlk_async *ac, rlk_a_hold *h)
{
    rlk_holds *t = rlk_a_hold_tab(ac);

    if (!h || !t)
        return;
    rlk_holds_take(t, h);
    rlk_ae_wd_del(h->wd);
    if (h->count > 0)
        rlk_metrics_hold(rlk_ae_counters(ac), h->name, h->acquired_ns);
    rlk_holds_rec_free(h);
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

void rlk_a_hold_drop_forced(rlk_async *ac, const char *name, const rlk_proto *k)
{
    rlk_holds *t = rlk_a_hold_tab(ac);
    rlk_holds_iter it = {0};
    rlk_a_hold *h;

    while (t && (h = rlk_holds_next(t, name, &it)) != NULL)
        if (h->row == k || (rlk_a_kind_row(h->kind) &&
                            strcmp(rlk_a_kind_row(h->kind)->force, k->force) == 0))
            rlk_a_hold_drop(ac, h);
}

int rlk_async_metrics_get(rlk_async *ac, rlk_metrics *out)
{
    int rc;

    if (!ac || !out)
        return RLK_ERR_ARG;
    rc = rlk_metrics_get(rlk_ae_client(ac), out);
    if (rc != RLK_OK)
        return rc;
    /* The gauges: this client's table of holds (the inner client's registry is unused). */
    rlk_holds_gauges(rlk_a_hold_tab(ac), &out->locks_held, &out->watchdog_entries);
    return RLK_OK;
}
