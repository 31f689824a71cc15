/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd_reg.c - the hold registry of wd (wd.h): the blocking driver of the one
 * hold table (holds.h), under wd->mu, with the watchdog entries of its
 * lease-less holds and its lost marks, and the lock API's calls on them; wd.c
 * renews the entries (wd_t.h).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "engine/metrics.h"
#include "runtime/wd_t.h"

#define RLK_WD_LOST_MARKS_MAX 256   /* lost (name, owner) pairs remembered */

/* ---------------------------------------------------------------- registry (wd->mu held) */

/* 1 while a renewal of r is on the wire. */
static int rlk_wd_inflight(const rlk_holds_rec *r)
{
    return r->wd && ((const rlk_hold *)r->wd)->inflight;
}

/* Waits until no renewal of (kind, name, owner) is on the wire; returns its record (looked up
 * again after every wait) or NULL. */
static rlk_holds_rec *rlk_wd_settle(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    rlk_holds_rec *r;

    while ((r = rlk_holds_find(wd->table, kind, name, owner)) && rlk_wd_inflight(r))
        pthread_cond_wait(&wd->settled, &wd->mu);
    return r;
}

void rlk_wd_unlink(rlk_wd *wd, rlk_hold *e)
{
    for (rlk_hold **pp = &wd->holds; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            e->next = NULL;
            return;
        }
    }
}

/* leave_now: the kind says its channel must not linger for others' messages (the reentrant
 * lock's, where every handoff publishes): it goes at once. */
void rlk_hold_leave(rlk_wd *wd, rlk_hold *e)
{
    if (!e->sub_ch)
        return;
    rlk_sub_leave_hold(wd->sub, e->sub_ch, !e->leave_now);
    e->sub_ch = NULL;
}

void rlk_hold_free(rlk_wd *wd, rlk_hold *e)
{
    if (!e)
        return;
    rlk_hold_leave(wd, e);
    free(e->channel);
    rlk_renew_id_free(&e->id);
    free(e);
}

rlk_hold *rlk_hold_new(rlk_wd *wd, const rlk_hold_spec *h, long long lease_ms)
{
    rlk_hold *e = calloc(1, sizeof *e);

    if (!e || rlk_renew_id_set(&e->id, h->kind, h->task, h->name, h->owner, h->nkeys,
                               h->keys) != 0 ||
        (h->channel && !(e->channel = strdup(h->channel)))) {
        rlk_hold_free(wd, e);
        return NULL;
    }
    e->leave_now = h->leave_now;
    e->renew_ms = lease_ms;
    e->period_ns = lease_ms * RLK_NS_PER_MS / 3;
    if (e->period_ns < RLK_NS_PER_MS)
        e->period_ns = RLK_NS_PER_MS;
    e->lost_after_ns = rlk_renew_lost_after(lease_ms, wd->c->lost_margin_ms) * RLK_NS_PER_MS;
    e->next = wd->holds;
    wd->holds = e;
    return e;
}

/* Takes r out of the registry (if still in it) and frees it and its watchdog entry. */
static void rlk_wd_drop(rlk_wd *wd, rlk_holds_rec *r)
{
    if (!r)
        return;
    rlk_holds_take(wd->table, r);
    rlk_wd_unlink(wd, r->wd);      /* NULL: none */
    rlk_hold_free(wd, r->wd);
    rlk_holds_rec_free(r);
}

/* ---------------------------------------------------------------- lost marks (wd->mu held) */

/* The lease a hold counts now: a watchdog hold's renewed one from its
 * last successful renewal, a fixed one's from the call that set it. */
static void rlk_hold_lease(const rlk_holds_rec *r, long long *start_ns, long long *lease_ms)
{
    const rlk_hold *e = r->wd;

    *start_ns = e ? e->last_ok_ns : r->lease_ns;
    *lease_ms = e ? e->renew_ms : r->lease_ms;
}

void rlk_wd_mark(rlk_wd *wd, const rlk_holds_rec *e)
{
    rlk_holds_iter it = {0};
    rlk_holds_rec *m, *old, *r;
    int n = 0;

    if (rlk_holds_find(wd->lost, e->kind, e->name, e->owner) ||
        !(m = rlk_holds_get(wd->lost, e->kind, e->name, e->owner)))
        return;     /* without the mark is_held_by_me asks the server, which is still right */
    rlk_hold_lease(e, &m->lease_ns, &m->lease_ms);
    m->kind_data = e->kind_data;
    for (old = m; (r = rlk_holds_next(wd->lost, NULL, &it)) != NULL; n++)
        if (r->id < old->id)
            old = r;
    if (n > RLK_WD_LOST_MARKS_MAX)
        rlk_holds_drop(wd->lost, old);      /* the oldest beyond the limit */
}

/* ---------------------------------------------------------------- the lock API's calls */

long long rlk_wd_join_ms = RLK_WD_JOIN_MS;

void rlk_wd_on_message(void *arg, const char *channel, size_t len)
{
    rlk_wd *wd = arg;
    long long now = rlk_clock_now_ns();
    int due = 0;

    pthread_mutex_lock(&wd->mu);
    for (rlk_hold *e = wd->holds; e; e = e->next) {
        if (!e->rec ||      /* kept */
            (channel && (!e->channel || strlen(e->channel) != len ||
                         memcmp(e->channel, channel, len) != 0)))
            continue;
        if (e->inflight)
            e->nudged = 1;
        else
            e->next_due_ns = now;
        due = 1;
    }
    if (due || !channel)
        pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_acquired_as(rlk_wd *wd, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                       long long sent_ns, long long token)
{
    rlk_holds_rec *r = NULL;
    int rc = RLK_OK;

    pthread_mutex_lock(&wd->mu);
    if (watchdog)
        rc = rlk_wd_start(wd);
    if (rc == RLK_OK && (!(r = rlk_holds_get(wd->table, h->kind, h->name, h->owner)) ||
                         (watchdog && !r->wd && !(r->wd = rlk_hold_new(wd, h, wd->lease_ms))))) {
        if (r && r->count == 0)
            rlk_holds_drop(wd->table, r);
        r = NULL;
        rc = rlk_set_error(wd->c, RLK_ERR_NOMEM, "lock %s: out of memory", h->name);
    }
    if (r) {
        if (r->count == 0)
            r->acquired_ns = rlk_clock_now_ns();
        r->count++;
        r->lease_ms = lease_ms;
        r->lease_ns = sent_ns;
        r->token = token;
        if (watchdog) {
            rlk_hold *e = r->wd;
            long long look;

            /* The acquire reset the lease to the watchdog lease when it ran. */
            e->rec = r;
            if (!e->id.task)
                e->id.task = h->task;
            /* A watchdog entry with a channel listens to it once it has lived
             * RLK_WD_JOIN_MS (wd.c rlk_wd_collect joins it). */
            if (e->channel && !e->sub_ch && !e->join_ns && wd->sub)
                e->join_ns = r->acquired_ns + rlk_wd_join_ms * RLK_NS_PER_MS;
            if (sent_ns > e->last_ok_ns)
                e->last_ok_ns = sent_ns;
            if (!e->inflight)
                e->next_due_ns = e->last_ok_ns + e->period_ns;
            /* Wake the thread only when it sleeps past this entry's due time, or a join delay
             * past its join time; not waiting, it collects the entry on its next look (it
             * takes wd->mu first). Waking, it looks again a join delay later (wd->fresh): so
             * holds taken one after another wake it once a delay, not once each. */
            look = e->join_ns ? e->join_ns + rlk_wd_join_ms * RLK_NS_PER_MS : e->next_due_ns;
            if (e->next_due_ns < look)
                look = e->next_due_ns;
            wd->fresh = 1;
            if (wd->waiting && (wd->wait_until_ns < 0 || look < wd->wait_until_ns))
                pthread_cond_signal(&wd->wake);
        }
        rlk_holds_drop(wd->lost, rlk_holds_find(wd->lost, h->kind, h->name, h->owner));
    }
    pthread_mutex_unlock(&wd->mu);
    return rc;
}

/* 1 and a copy of the record of (kind, name, owner) in *out when held, else 0. */
static int rlk_wd_read(rlk_wd *wd, int kind, const char *name, const char *owner,
                       rlk_holds_rec *out)
{
    rlk_holds_rec *e;

    pthread_mutex_lock(&wd->mu);
    if ((e = rlk_holds_find(wd->table, kind, name, owner)) != NULL)
        *out = *e;
    pthread_mutex_unlock(&wd->mu);
    return e != NULL;
}

int rlk_wd_holds_as(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    return rlk_wd_count_as(wd, kind, name, owner) > 0;     /* a record counts one at least */
}

long long rlk_wd_count_as(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    rlk_holds_rec r;

    return rlk_wd_read(wd, kind, name, owner, &r) ? r.count : 0;
}

int rlk_wd_lease_of(rlk_wd *wd, int kind, const char *name, const char *owner,
                    long long *start_ns, long long *lease_ms, long long *kind_data)
{
    rlk_holds_rec *m, *r;

    pthread_mutex_lock(&wd->mu);
    m = rlk_holds_find(wd->lost, kind, name, owner);    /* a lost mark first */
    if ((r = m ? m : rlk_holds_find(wd->table, kind, name, owner)) != NULL) {
        rlk_hold_lease(r, start_ns, lease_ms);  /* a mark's (no entry): the one it was lost with */
        *kind_data = r->kind_data;
    }
    pthread_mutex_unlock(&wd->mu);
    return !r ? 0 : m ? 2 : 1;
}

void rlk_wd_lease_set(rlk_wd *wd, int kind, const char *name, const char *owner,
                      long long sent_ns, long long lease_ms)
{
    rlk_holds_rec *e;

    pthread_mutex_lock(&wd->mu);
    if ((e = rlk_holds_find(wd->table, kind, name, owner)) && !e->wd) {
        e->lease_ms = lease_ms;
        e->lease_ns = sent_ns;
    }
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_token_of(rlk_wd *wd, int kind, const char *name, const char *owner, long long *token)
{
    rlk_holds_rec r;

    if (!rlk_wd_read(wd, kind, name, owner, &r))
        return 0;
    *token = r.token;
    return 1;
}

void rlk_wd_set_kind_data(rlk_wd *wd, int kind, const char *name, const char *owner,
                          long long data)
{
    rlk_holds_rec *e;

    pthread_mutex_lock(&wd->mu);
    if ((e = rlk_holds_find(wd->table, kind, name, owner)) && e->count == 1)
        e->kind_data = data;
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_kind_data_of(rlk_wd *wd, int kind, const char *name, const char *owner,
                        long long *data)
{
    rlk_holds_rec r;
    int held = rlk_wd_read(wd, kind, name, owner, &r);

    *data = held ? r.kind_data : 0;
    return held;
}

void rlk_wd_gauges(rlk_wd *wd, long long *held, long long *watchdog)
{
    pthread_mutex_lock(&wd->mu);
    rlk_holds_gauges(wd->table, held, watchdog);
    pthread_mutex_unlock(&wd->mu);
}

void rlk_wd_forget_name(rlk_wd *wd, const char *name)
{
    rlk_holds_iter it = {0};
    rlk_holds_rec *r;

    pthread_mutex_lock(&wd->mu);
    while ((r = rlk_holds_next(wd->table, name, &it)) != NULL) {
        if (rlk_wd_inflight(r)) {
            pthread_cond_wait(&wd->settled, &wd->mu);
            memset(&it, 0, sizeof it);  /* look again: the table may have changed */
            continue;
        }
        rlk_wd_drop(wd, r);
    }
    pthread_mutex_unlock(&wd->mu);
}

long long rlk_wd_release_begin_as(rlk_wd *wd, int kind, const char *name, const char *owner,
                                  rlk_wd_ticket *t)
{
    long long lease = wd->lease_ms;
    rlk_holds_rec *r;

    *t = (rlk_wd_ticket){.kind = kind, .name = name, .owner = owner};
    pthread_mutex_lock(&wd->mu);
    r = rlk_holds_find(wd->table, kind, name, owner);
    if (r && r->count <= 1)
        r = rlk_wd_settle(wd, kind, name, owner);
    if (r) {
        lease = r->wd ? wd->lease_ms : r->lease_ms;
        if (r->count <= 1) {
            rlk_hold *e = r->wd;

            rlk_holds_take(wd->table, r);
            rlk_wd_unlink(wd, e);       /* from here on nothing renews it */
            t->removed = r;
        } else {
            r->count--;
            t->decremented = r->id;
        }
    }
    pthread_mutex_unlock(&wd->mu);
    return lease;
}

void rlk_wd_release_end(rlk_wd *wd, rlk_wd_ticket *t, int outcome)
{
    pthread_mutex_lock(&wd->mu);
    if (t->decremented && (outcome == RLK_REL_RELEASED || outcome == RLK_REL_NOT_OWNER)) {
        /* The server had fewer holds than this client counted: it is gone. */
        rlk_holds_rec *r = rlk_wd_settle(wd, t->kind, t->name, t->owner);

        rlk_wd_drop(wd, r && r->id == t->decremented ? r : NULL);
    }
    /* A removed record never goes back, whatever the outcome: released, not
     * ours, unknown (no reply), or still held through a hold this client
     * does not know of (an acquire whose reply was lost, or the same owner
     * id on another client, which renews its own). In the last case the
     * release reset the lease, which runs out unless its real holder renews. */
    if (t->removed && (outcome == RLK_REL_RELEASED || outcome == RLK_REL_STILL_HELD))
        rlk_metrics_hold(wd->counters, t->removed->name, t->removed->acquired_ns);
    rlk_wd_drop(wd, t->removed);
    t->removed = NULL;
    pthread_mutex_unlock(&wd->mu);
}
