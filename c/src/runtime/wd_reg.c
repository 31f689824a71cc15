/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd_reg.c - the hold registry of wd (wd.h): its entries and lost marks, and
 * the lock API's calls on them; wd.c renews the entries (wd_t.h).
 */
#include <stdlib.h>
#include <string.h>

#include "client/clock.h"
#include "client/error.h"
#include "client/slot.h"
#include "runtime/metrics.h"
#include "runtime/wd_t.h"

#define RLK_WD_LOST_MARKS_MAX 256   /* lost (name, owner) pairs remembered */


/* ---------------------------------------------------------------- registry (wd->mu held) */

static int rlk_hold_is(const rlk_hold *e, int kind, const char *name, const char *owner)
{
    return e->kind == kind && strcmp(e->name, name) == 0 && strcmp(e->owner, owner) == 0;
}

static rlk_hold *rlk_wd_find(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    for (rlk_hold *e = wd->holds; e; e = e->next)
        if (rlk_hold_is(e, kind, name, owner))
            return e;
    return NULL;
}

static rlk_hold *rlk_wd_find_id(rlk_wd *wd, unsigned long long id)
{
    for (rlk_hold *e = wd->holds; e; e = e->next)
        if (e->id == id)
            return e;
    return NULL;
}

/* Waits until no renewal of (kind, name, owner) is on the wire; returns its
 * entry (looked up again after every wait) or NULL. */
static rlk_hold *rlk_wd_settle(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    rlk_hold *e;

    while ((e = rlk_wd_find(wd, kind, name, owner)) && e->inflight)
        pthread_cond_wait(&wd->settled, &wd->mu);
    return e;
}

static rlk_hold *rlk_wd_settle_id(rlk_wd *wd, unsigned long long id)
{
    rlk_hold *e;

    while ((e = rlk_wd_find_id(wd, id)) && e->inflight)
        pthread_cond_wait(&wd->settled, &wd->mu);
    return e;
}

void rlk_wd_unlink(rlk_wd *wd, rlk_hold *e)
{
    for (rlk_hold **pp = e->kept ? &wd->kept : &wd->holds; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            e->next = NULL;
            return;
        }
    }
}

void rlk_hold_free(rlk_hold *e)
{
    if (!e)
        return;
    if (e->sub_ch && e->leave_now)          /* the kind says its channel must not linger */
        rlk_sub_leave_now(e->sub, e->sub_ch);
    else if (e->sub_ch)
        rlk_sub_leave(e->sub, e->sub_ch);
    free(e->channel);
    for (int i = 1; i < e->nkeys; i++)     /* keys[0] is name */
        free(e->keys[i]);
    free(e->name);
    free(e->owner);
    free(e);
}

rlk_hold *rlk_hold_new(rlk_wd *wd, const rlk_hold_spec *h)
{
    rlk_hold *e = calloc(1, sizeof *e);
    int ok;

    if (!e)
        return NULL;
    e->kind = h->kind;
    e->name = strdup(h->name);
    e->owner = strdup(h->owner);
    e->keys[0] = e->name;
    e->nkeys = 1;
    e->task = h->task;
    e->leave_now = h->leave_now;
    e->renew_ms = wd->lease_ms;
    e->period_ns = wd->period_ns;
    e->lost_after_ns = wd->lost_after_ns;
    ok = e->name && e->owner;
    e->slot = ok ? rlk_key_slot(e->name, strlen(e->name)) : 0;
    for (int i = 1; ok && i < h->nkeys && i < RLK_HOLD_KEYS_MAX; i++) {
        ok = (e->keys[i] = strdup(h->keys[i])) != NULL;
        e->nkeys += ok;
    }
    if (!ok) {
        rlk_hold_free(e);
        return NULL;
    }
    if (h->channel && !(e->channel = strdup(h->channel))) {
        rlk_hold_free(e);
        return NULL;
    }
    e->id = ++wd->next_id;
    e->next = wd->holds;
    wd->holds = e;
    return e;
}

/* ---------------------------------------------------------------- lost marks (wd->mu held) */

static rlk_lost_mark **rlk_wd_mark_slot(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    rlk_lost_mark **pp = &wd->lost;

    for (; *pp; pp = &(*pp)->next)
        if ((*pp)->kind == kind && strcmp((*pp)->name, name) == 0 &&
            strcmp((*pp)->owner, owner) == 0)
            break;
    return pp;
}

void rlk_mark_free(rlk_lost_mark *m)
{
    free(m->name);
    free(m->owner);
    free(m);
}

static void rlk_wd_unmark(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    rlk_lost_mark **pp = rlk_wd_mark_slot(wd, kind, name, owner);
    rlk_lost_mark *m = *pp;

    if (!m)
        return;
    *pp = m->next;
    rlk_mark_free(m);
    wd->nlost--;
}

/* Drops the oldest marks beyond the limit (the list is newest first). */
static void rlk_wd_trim_marks(rlk_wd *wd)
{
    rlk_lost_mark **pp = &wd->lost;
    size_t kept = 0;

    while (*pp && kept < RLK_WD_LOST_MARKS_MAX) {
        pp = &(*pp)->next;
        kept++;
    }
    while (*pp) {
        rlk_lost_mark *m = *pp;

        *pp = m->next;
        rlk_mark_free(m);
        wd->nlost--;
    }
}

/* The lease an entry counts now: a watchdog hold's renewed one from its
 * last successful renewal, a fixed one's from the call that set it. */
static void rlk_hold_lease(const rlk_hold *e, long long *start_ns, long long *lease_ms)
{
    *start_ns = e->watchdog ? e->last_ok_ns : e->lease_sent_ns;
    *lease_ms = e->watchdog ? e->renew_ms : e->lease_ms;
}

void rlk_wd_mark(rlk_wd *wd, const rlk_hold *e)
{
    rlk_lost_mark *m;

    if (*rlk_wd_mark_slot(wd, e->kind, e->name, e->owner))
        return;
    m = calloc(1, sizeof *m);
    if (!m)
        return;     /* without the mark is_held_by_me asks the server, which is still right */
    m->kind = e->kind;
    m->name = strdup(e->name);
    m->owner = strdup(e->owner);
    rlk_hold_lease(e, &m->start_ns, &m->lease_ms);
    m->kind_data = e->kind_data;
    if (!m->name || !m->owner) {
        rlk_mark_free(m);
        return;
    }
    m->next = wd->lost;
    wd->lost = m;
    wd->nlost++;
    rlk_wd_trim_marks(wd);
}

/* ---------------------------------------------------------------- the lock API's calls */

/* A watchdog entry with a channel listens to it while held (wd->mu held;
 * the subscriber's lock nests inside it). Without a subscription the next
 * renewal still finds a removed lock. */
static void rlk_wd_subscribe(rlk_wd *wd, rlk_hold *e)
{
    if (!e->channel || e->sub_ch)
        return;
    if (wd->sub && rlk_sub_join(wd->sub, e->channel, NULL, &e->sub_ch) == RLK_OK)
        e->sub = wd->sub;
    else
        e->sub_ch = NULL;
}

void rlk_wd_nudge_all(rlk_wd *wd)
{
    long long now = rlk_clock_now_ns();

    pthread_mutex_lock(&wd->mu);
    for (rlk_hold *e = wd->holds; e; e = e->next) {
        if (!e->watchdog)
            continue;
        if (e->inflight)
            e->nudged = 1;
        else
            e->next_due_ns = now;
    }
    pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->mu);
}

void rlk_wd_on_message(void *arg, const char *channel, size_t len)
{
    rlk_wd *wd = arg;
    long long now = rlk_clock_now_ns();
    int due = 0;

    pthread_mutex_lock(&wd->mu);
    for (rlk_hold *e = wd->holds; e; e = e->next) {
        if (!e->watchdog || !e->channel || strlen(e->channel) != len ||
            memcmp(e->channel, channel, len) != 0)
            continue;
        if (e->inflight)
            e->nudged = 1;
        else
            e->next_due_ns = now;
        due = 1;
    }
    if (due)
        pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_acquired_as(rlk_wd *wd, const rlk_hold_spec *h, long long lease_ms, int watchdog,
                       long long sent_ns, long long token)
{
    rlk_hold *e;
    int rc = RLK_OK;

    pthread_mutex_lock(&wd->mu);
    if (watchdog)
        rc = rlk_wd_start(wd);
    e = rc == RLK_OK ? rlk_wd_find(wd, h->kind, h->name, h->owner) : NULL;
    if (rc == RLK_OK && !e && !(e = rlk_hold_new(wd, h)))
        rc = rlk_set_error(wd->c, RLK_ERR_NOMEM, "lock %s: out of memory", h->name);
    if (e) {
        if (e->count == 0)
            e->acquired_ns = rlk_clock_now_ns();
        e->count++;
        e->lease_ms = lease_ms;
        e->lease_sent_ns = sent_ns;
        e->token = token;
        if (!e->task)
            e->task = h->task;
        if (watchdog) {
            /* The acquire reset the lease to the watchdog lease when it ran. */
            e->watchdog = 1;
            rlk_wd_subscribe(wd, e);
            if (sent_ns > e->last_ok_ns)
                e->last_ok_ns = sent_ns;
            if (!e->inflight)
                e->next_due_ns = e->last_ok_ns + wd->period_ns;
            pthread_cond_signal(&wd->wake);
        }
        rlk_wd_unmark(wd, h->kind, h->name, h->owner);
    }
    pthread_mutex_unlock(&wd->mu);
    return rc;
}

int rlk_wd_holds_as(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    int held;

    pthread_mutex_lock(&wd->mu);
    held = rlk_wd_find(wd, kind, name, owner) != NULL;
    pthread_mutex_unlock(&wd->mu);
    return held;
}

int rlk_wd_holds(rlk_wd *wd, const char *name, const char *owner)
{
    return rlk_wd_holds_as(wd, RLK_KIND_LOCK, name, owner);
}

long long rlk_wd_count_as(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    rlk_hold *e;
    long long n;

    pthread_mutex_lock(&wd->mu);
    e = rlk_wd_find(wd, kind, name, owner);
    n = e ? e->count : 0;
    pthread_mutex_unlock(&wd->mu);
    return n;
}

int rlk_wd_lease_of(rlk_wd *wd, int kind, const char *name, const char *owner,
                    long long *start_ns, long long *lease_ms, long long *kind_data)
{
    rlk_hold *e;

    rlk_lost_mark *m;
    int found = 0;

    pthread_mutex_lock(&wd->mu);
    if ((m = *rlk_wd_mark_slot(wd, kind, name, owner)) != NULL) {
        *start_ns = m->start_ns;
        *lease_ms = m->lease_ms;
        *kind_data = m->kind_data;
        found = 2;
    } else if ((e = rlk_wd_find(wd, kind, name, owner)) != NULL) {
        rlk_hold_lease(e, start_ns, lease_ms);
        *kind_data = e->kind_data;
        found = 1;
    }
    pthread_mutex_unlock(&wd->mu);
    return found;
}

void rlk_wd_lease_set(rlk_wd *wd, int kind, const char *name, const char *owner,
                      long long sent_ns, long long lease_ms)
{
    rlk_hold *e;

    pthread_mutex_lock(&wd->mu);
    if ((e = rlk_wd_find(wd, kind, name, owner)) && !e->watchdog) {
        e->lease_ms = lease_ms;
        e->lease_sent_ns = sent_ns;
    }
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_token_of(rlk_wd *wd, int kind, const char *name, const char *owner, long long *token)
{
    rlk_hold *e;

    pthread_mutex_lock(&wd->mu);
    e = rlk_wd_find(wd, kind, name, owner);
    if (e)
        *token = e->token;
    pthread_mutex_unlock(&wd->mu);
    return e != NULL;
}

void rlk_wd_set_kind_data(rlk_wd *wd, int kind, const char *name, const char *owner,
                          long long data)
{
    rlk_hold *e;

    pthread_mutex_lock(&wd->mu);
    if ((e = rlk_wd_find(wd, kind, name, owner)) && e->count == 1)
        e->kind_data = data;
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_kind_data_of(rlk_wd *wd, int kind, const char *name, const char *owner,
                        long long *data)
{
    rlk_hold *e;

    pthread_mutex_lock(&wd->mu);
    e = rlk_wd_find(wd, kind, name, owner);
    *data = e ? e->kind_data : 0;
    pthread_mutex_unlock(&wd->mu);
    return e != NULL;
}

void rlk_wd_gauges(rlk_wd *wd, long long *held, long long *watchdog)
{
    *held = *watchdog = 0;
    pthread_mutex_lock(&wd->mu);
    for (rlk_hold *e = wd->holds; e; e = e->next) {
        (*held)++;
        *watchdog += e->watchdog != 0;
    }
    pthread_mutex_unlock(&wd->mu);
}

void rlk_wd_forget_name(rlk_wd *wd, const char *name)
{
    pthread_mutex_lock(&wd->mu);
    for (;;) {
        rlk_hold *e = wd->holds;

        while (e && strcmp(e->name, name) != 0)
            e = e->next;
        if (!e)
            break;
        if (e->inflight) {
            pthread_cond_wait(&wd->settled, &wd->mu);
            continue;   /* look again: the list may have changed */
        }
        rlk_wd_unlink(wd, e);
        rlk_hold_free(e);
    }
    pthread_mutex_unlock(&wd->mu);
}

long long rlk_wd_release_begin_as(rlk_wd *wd, int kind, const char *name, const char *owner,
                                  rlk_wd_ticket *t)
{
    long long lease = wd->lease_ms;
    rlk_hold *e;

    memset(t, 0, sizeof *t);
    pthread_mutex_lock(&wd->mu);
    e = rlk_wd_find(wd, kind, name, owner);
    if (e && e->count <= 1)
        e = rlk_wd_settle(wd, kind, name, owner);
    if (e) {
        lease = e->watchdog ? wd->lease_ms : e->lease_ms;
        if (e->count <= 1) {
            rlk_wd_unlink(wd, e);       /* from here on nothing renews it */
            t->removed = e;
        } else {
            e->count--;
            t->decremented = e->id;
        }
    }
    pthread_mutex_unlock(&wd->mu);
    return lease;
}

void rlk_wd_release_end(rlk_wd *wd, rlk_wd_ticket *t, int outcome)
{
    rlk_hold *e;

    pthread_mutex_lock(&wd->mu);
    if (t->decremented && (outcome == RLK_REL_RELEASED || outcome == RLK_REL_NOT_OWNER)) {
        /* The server had fewer holds than this client counted: it is gone. */
        e = rlk_wd_settle_id(wd, t->decremented);
        if (e)
            rlk_wd_unlink(wd, e);
        rlk_hold_free(e);
    }
    /* A removed entry never goes back, whatever the outcome: released, not
     * ours, unknown (no reply), or still held through a hold this client
     * does not know of (an acquire whose reply was lost, or the same owner
     * id on another client, which renews its own). In the last case the
     * release reset the lease, which runs out unless its real holder renews. */
    if (t->removed && (outcome == RLK_REL_RELEASED || outcome == RLK_REL_STILL_HELD))
        rlk_metrics_hold(wd->counters, t->removed->name, t->removed->acquired_ns);
    rlk_hold_free(t->removed);
    t->removed = NULL;
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_is_lost_as(rlk_wd *wd, int kind, const char *name, const char *owner)
{
    int lost;

    pthread_mutex_lock(&wd->mu);
    lost = *rlk_wd_mark_slot(wd, kind, name, owner) != NULL;
    pthread_mutex_unlock(&wd->mu);
    return lost;
}
