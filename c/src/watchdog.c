/*
 * watchdog.c - the client's hold registry and its watchdog thread.
 *
 * Every lock taken through rlk_lock_* is an entry (name, owner) with a
 * reentry count. Lease-less entries ("watchdog" entries) are renewed by one
 * thread per client (started on the first of them, connection CLIENT
 * SETNAME rlk-wd) every lease/3, as many per reentrant/renew_many call as
 * are due (per-key owners).
 *
 * Race-freedom with unlock (docs/runtime.md has the argument):
 *   - the thread marks the entries of a renewal "in flight" under wd->mu
 *     and clears the mark only after the renewal's reply (or its failure);
 *   - unlock of the last hold waits until its entry is not in flight and
 *     takes it out of the registry, under wd->mu, before it sends the
 *     release; nothing renews an entry that is out of the registry.
 *   So every renewal of an entry has run on the server before its release
 *   is even sent, and the release is never followed by a renewal.
 *
 * Outcomes per entry: 1 renewed (lease counted from the send time); 0 the
 * owner no longer holds it: dropped and reported RLK_LOST_GONE; error: kept
 * and retried a period later, and dropped and reported RLK_LOST_EXPIRED
 * once lease ms have passed since the send time of its last successful
 * renewal (or acquisition). A dropped entry is never renewed again and its
 * (name, owner) is marked lost until the owner acquires it again.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lock_internal.h"

#define RLK_WD_NAME "rlk-wd"
#define RLK_WD_BATCH_MAX 512        /* locks per renew_many call */
#define RLK_WD_LOST_MARKS_MAX 256   /* lost (name, owner) pairs remembered */
#define RLK_NS_PER_MS 1000000LL

struct rlk_hold {
    rlk_hold *next;
    unsigned long long id;
    char *name;
    char *owner;
    long long count;            /* acquisitions through this client not yet released */
    long long lease_ms;         /* of the last acquisition, restored by a partial release */
    int watchdog;               /* lease-less: renewed by the thread */
    int inflight;               /* part of a renewal on the wire */
    int failing;                /* the last renewal attempt failed */
    long long last_ok_ns;       /* send time of the acquire or of the last successful renewal */
    long long next_due_ns;
};

typedef struct rlk_lost_mark {
    struct rlk_lost_mark *next;
    char *name;
    char *owner;
} rlk_lost_mark;

/* A lost lock to report once the registry lock is released. */
typedef struct rlk_lost_note {
    struct rlk_lost_note *next;
    char *name;
    char *owner;
    int reason;
} rlk_lost_note;

struct rlk_wd {
    rlk_client *c;
    rlk_rt *rt;
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* the thread: a new watchdog entry, or stop */
    pthread_cond_t settled;     /* a renewal finished: its entries are out of flight */
    rlk_hold *holds;
    unsigned long long next_id;
    rlk_lost_mark *lost;
    size_t nlost;
    int started;
    int stop;
    pthread_t thread;
    long long lease_ms;
    long long period_ns;

    /* Used by the thread only. */
    redisContext *ctx;
    rlk_hold **batch;
    int *results;
    const char **keys;
    const char **args;
};

/* ---------------------------------------------------------------- registry (wd->mu held) */

static rlk_hold *rlk_wd_find(rlk_wd *wd, const char *name, const char *owner)
{
    for (rlk_hold *e = wd->holds; e; e = e->next)
        if (strcmp(e->name, name) == 0 && strcmp(e->owner, owner) == 0)
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

/* Waits until no renewal of (name, owner) is on the wire; returns its
 * entry (looked up again after every wait) or NULL. */
static rlk_hold *rlk_wd_settle(rlk_wd *wd, const char *name, const char *owner)
{
    rlk_hold *e;

    while ((e = rlk_wd_find(wd, name, owner)) && e->inflight)
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

static void rlk_wd_unlink(rlk_wd *wd, rlk_hold *e)
{
    for (rlk_hold **pp = &wd->holds; *pp; pp = &(*pp)->next) {
        if (*pp == e) {
            *pp = e->next;
            e->next = NULL;
            return;
        }
    }
}

static void rlk_hold_free(rlk_hold *e)
{
    if (!e)
        return;
    free(e->name);
    free(e->owner);
    free(e);
}

static rlk_hold *rlk_hold_new(rlk_wd *wd, const char *name, const char *owner)
{
    rlk_hold *e = calloc(1, sizeof *e);

    if (!e)
        return NULL;
    e->name = strdup(name);
    e->owner = strdup(owner);
    if (!e->name || !e->owner) {
        rlk_hold_free(e);
        return NULL;
    }
    e->id = ++wd->next_id;
    e->next = wd->holds;
    wd->holds = e;
    return e;
}

/* ---------------------------------------------------------------- lost marks (wd->mu held) */

static rlk_lost_mark **rlk_wd_mark_slot(rlk_wd *wd, const char *name, const char *owner)
{
    rlk_lost_mark **pp = &wd->lost;

    for (; *pp; pp = &(*pp)->next)
        if (strcmp((*pp)->name, name) == 0 && strcmp((*pp)->owner, owner) == 0)
            break;
    return pp;
}

static void rlk_wd_unmark(rlk_wd *wd, const char *name, const char *owner)
{
    rlk_lost_mark **pp = rlk_wd_mark_slot(wd, name, owner);
    rlk_lost_mark *m = *pp;

    if (!m)
        return;
    *pp = m->next;
    free(m->name);
    free(m->owner);
    free(m);
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
        free(m->name);
        free(m->owner);
        free(m);
        wd->nlost--;
    }
}

static void rlk_wd_mark(rlk_wd *wd, const char *name, const char *owner)
{
    rlk_lost_mark *m;

    if (*rlk_wd_mark_slot(wd, name, owner))
        return;
    m = calloc(1, sizeof *m);
    if (!m)
        return;     /* without the mark is_held_by_me asks the server, which is still right */
    m->name = strdup(name);
    m->owner = strdup(owner);
    if (!m->name || !m->owner) {
        free(m->name);
        free(m->owner);
        free(m);
        return;
    }
    m->next = wd->lost;
    wd->lost = m;
    wd->nlost++;
    rlk_wd_trim_marks(wd);
}

/* ---------------------------------------------------------------- the thread: renewing */

static int rlk_wd_setname(rlk_wd *wd)
{
    const char *argv[3] = {"CLIENT", "SETNAME", RLK_WD_NAME};
    redisReply *r = NULL;
    int rc = rlk_conn_command(wd->c, wd->ctx, "CLIENT SETNAME", 3, argv, NULL, &r, NULL);

    if (r)
        freeReplyObject(r);
    return rc;
}

static void rlk_wd_disconnect(rlk_wd *wd)
{
    if (wd->ctx) {
        redisFree(wd->ctx);
        wd->ctx = NULL;
    }
}

/* A renewal slower than a period is retried rather than waited for: the
 * connection's timeout is the period (100 ms at least), never more than the
 * client's command timeout. */
static int rlk_wd_set_timeout(rlk_wd *wd)
{
    long long ms = wd->period_ns / RLK_NS_PER_MS;
    struct timeval tv;

    if (ms < 100)
        ms = 100;
    if (ms > wd->c->command_timeout_ms)
        ms = wd->c->command_timeout_ms;
    tv.tv_sec = (time_t)(ms / 1000);
    tv.tv_usec = (suseconds_t)(ms % 1000) * 1000;
    if (redisSetTimeout(wd->ctx, tv) != REDIS_OK)
        return rlk_set_ctx_error(wd->c, wd->ctx, "watchdog connect");
    return RLK_OK;
}

static int rlk_wd_connect(rlk_wd *wd)
{
    int rc;

    if (wd->ctx && rlk_conn_alive(wd->ctx))
        return RLK_OK;
    rlk_wd_disconnect(wd);
    rc = rlk_conn_open(wd->c, &wd->ctx);
    if (rc == RLK_OK)
        rc = rlk_wd_set_timeout(wd);
    if (rc == RLK_OK)
        rc = rlk_wd_setname(wd);
    if (rc != RLK_OK)
        rlk_wd_disconnect(wd);
    return rc;
}

static int rlk_is_conn_err(int rc)
{
    return rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_PROTOCOL;
}

/* One script call on the watchdog connection; the connection is closed
 * after a connection error (reopened on the next renewal). */
static int rlk_wd_eval(rlk_wd *wd, const char *script, int nkeys, int nargs, redisReply **r)
{
    const rlk_script_info *s = rlk_script_find(wd->c, script);
    int rc;

    *r = NULL;
    if (!s)
        return rlk_set_error(wd->c, RLK_ERR_NOSUCHSCRIPT, "no script named '%s'", script);
    rc = rlk_wd_connect(wd);
    if (rc == RLK_OK)
        rc = rlk_conn_evalv(wd->c, wd->ctx, s, nkeys, wd->keys, NULL, nargs, wd->args, NULL, r,
                            NULL);
    if (rlk_is_conn_err(rc) || (wd->ctx && wd->ctx->err))
        rlk_wd_disconnect(wd);
    return rc;
}

static int rlk_wd_result_of(const redisReply *r)
{
    if (r->type == REDIS_REPLY_INTEGER && (r->integer == 0 || r->integer == 1))
        return (int)r->integer;
    return -1;
}

/* Fallback when renew_many refused the batch (a key of another type, say):
 * each lock alone with reentrant/renew; a refusal means not our hash. */
static void rlk_wd_renew_each(rlk_wd *wd, int n, const char *lease)
{
    const char **keys = wd->keys, **args = wd->args;
    const char *owners[RLK_WD_BATCH_MAX];

    memcpy(owners, args + 1, (size_t)n * sizeof *owners);
    for (int i = 0; i < n; i++) {
        redisReply *r;
        int rc;

        wd->keys = keys + i;
        args[0] = lease;
        args[1] = owners[i];
        rc = rlk_wd_eval(wd, "reentrant/renew", 1, 2, &r);
        wd->results[i] = rc == RLK_OK ? rlk_wd_result_of(r) : rc == RLK_ERR_SCRIPT ? 0 : -1;
        if (r)
            freeReplyObject(r);
    }
    wd->keys = keys;
}

/* Renews batch[0..n) in one call; results[i]: 1 renewed, 0 gone, -1 error. */
static void rlk_wd_renew(rlk_wd *wd, int n)
{
    char lease[24];
    redisReply *r;
    int rc;

    snprintf(lease, sizeof lease, "%lld", wd->lease_ms);
    wd->args[0] = lease;
    for (int i = 0; i < n; i++) {
        wd->keys[i] = wd->batch[i]->name;   /* stable: in-flight entries are never freed */
        wd->args[i + 1] = wd->batch[i]->owner;
        wd->results[i] = -1;
    }
    RLK_RT_COUNT(wd->rt, renew_calls);
    rc = rlk_wd_eval(wd, "reentrant/renew_many", n, n + 1, &r);
    if (rc == RLK_OK && r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)n) {
        for (int i = 0; i < n; i++)
            wd->results[i] = rlk_wd_result_of(r->element[i]);
    } else if (rc == RLK_ERR_SCRIPT) {
        rlk_wd_renew_each(wd, n, lease);
    }
    if (rc != RLK_OK)
        RLK_RT_COUNT(wd->rt, renew_errors);
    if (r)
        freeReplyObject(r);
}

/* ---------------------------------------------------------------- the thread: bookkeeping (wd->mu held) */

/* Drops e from the registry, marks it lost and queues its report. */
static void rlk_wd_lose(rlk_wd *wd, rlk_hold *e, int reason, rlk_lost_note **notes)
{
    rlk_lost_note *n = calloc(1, sizeof *n);

    rlk_wd_unlink(wd, e);
    rlk_wd_mark(wd, e->name, e->owner);
    if (n) {
        n->name = e->name;
        n->owner = e->owner;
        n->reason = reason;
        n->next = *notes;
        *notes = n;
        e->name = e->owner = NULL;
    }
    rlk_hold_free(e);
}

/* Drops the failing entries whose lease has run out by the clock. */
static void rlk_wd_expire(rlk_wd *wd, long long now, rlk_lost_note **notes)
{
    long long lease_ns = wd->lease_ms * RLK_NS_PER_MS;
    rlk_hold *e = wd->holds;

    while (e) {
        rlk_hold *next = e->next;

        if (e->watchdog && e->failing && !e->inflight && now - e->last_ok_ns >= lease_ns)
            rlk_wd_lose(wd, e, RLK_LOST_EXPIRED, notes);
        e = next;
    }
}

/* Marks the entries due by now (and those due within a quarter period, to
 * renew them together) in flight. Returns how many. */
static int rlk_wd_collect(rlk_wd *wd, long long now)
{
    long long horizon = now + wd->period_ns / 4;
    int n = 0;

    for (rlk_hold *e = wd->holds; e && n < RLK_WD_BATCH_MAX; e = e->next) {
        if (!e->watchdog || e->inflight || e->next_due_ns > horizon)
            continue;
        e->inflight = 1;
        wd->batch[n++] = e;
    }
    return n;
}

static long long rlk_wd_next_due(rlk_wd *wd)
{
    long long next = -1;

    for (rlk_hold *e = wd->holds; e; e = e->next)
        if (e->watchdog && !e->inflight)
            next = rlk_rt_until_min(next, e->next_due_ns);
    return next;
}

static void rlk_wd_apply(rlk_wd *wd, int n, long long sent_ns, rlk_lost_note **notes)
{
    long long now = rlk_rt_now_ns(), lease_ns = wd->lease_ms * RLK_NS_PER_MS;

    for (int i = 0; i < n; i++) {
        rlk_hold *e = wd->batch[i];

        e->inflight = 0;
        e->failing = wd->results[i] < 0;
        if (wd->results[i] == 1) {
            e->last_ok_ns = sent_ns;
            e->next_due_ns = sent_ns + wd->period_ns;
        } else if (wd->results[i] == 0) {
            rlk_wd_lose(wd, e, RLK_LOST_GONE, notes);
        } else if (now - e->last_ok_ns >= lease_ns) {
            rlk_wd_lose(wd, e, RLK_LOST_EXPIRED, notes);
        } else {
            /* Retry a period later, but look again when the lease runs out
             * (rlk_wd_expire declares it then if no renewal got through). */
            e->next_due_ns = rlk_rt_until_min(now + wd->period_ns, e->last_ok_ns + lease_ns);
            if (e->next_due_ns < now + RLK_NS_PER_MS)
                e->next_due_ns = now + RLK_NS_PER_MS;
        }
    }
    pthread_cond_broadcast(&wd->settled);
}

/* Reports (outside wd->mu) and frees the notes, oldest first. */
static void rlk_wd_report(rlk_wd *wd, rlk_lost_note *notes)
{
    rlk_lost_note *rev = NULL;

    while (notes) {
        rlk_lost_note *n = notes;

        notes = n->next;
        n->next = rev;
        rev = n;
    }
    while (rev) {
        rlk_lost_note *n = rev;

        rev = n->next;
        rlk_rt_report_lost(wd->rt, n->name, n->owner, n->reason);
        free(n->name);
        free(n->owner);
        free(n);
    }
}

static void *rlk_wd_main(void *arg)
{
    rlk_wd *wd = arg;

    pthread_mutex_lock(&wd->mu);
    while (!wd->stop) {
        rlk_lost_note *notes = NULL;
        long long sent_ns = rlk_rt_now_ns();
        int n;

        rlk_wd_expire(wd, sent_ns, &notes);
        n = rlk_wd_collect(wd, sent_ns);
        if (n == 0 && !notes) {
            rlk_rt_cond_wait_until(&wd->wake, &wd->mu, rlk_wd_next_due(wd));
            continue;
        }
        if (n > 0) {
            pthread_mutex_unlock(&wd->mu);
            rlk_wd_renew(wd, n);
            pthread_mutex_lock(&wd->mu);
            rlk_wd_apply(wd, n, sent_ns, &notes);
        }
        if (notes) {
            pthread_mutex_unlock(&wd->mu);
            rlk_wd_report(wd, notes);
            pthread_mutex_lock(&wd->mu);
        }
    }
    pthread_mutex_unlock(&wd->mu);
    return NULL;
}

/* wd->mu held. */
static int rlk_wd_start(rlk_wd *wd)
{
    if (wd->started)
        return RLK_OK;
    if (rlk_rt_thread_start(&wd->thread, rlk_wd_main, wd) != 0)
        return rlk_set_error(wd->c, RLK_ERR_NOMEM, "lock runtime: cannot start the watchdog thread");
    wd->started = 1;
    return RLK_OK;
}

/* ---------------------------------------------------------------- life cycle */

rlk_wd *rlk_wd_new(rlk_client *c, rlk_rt *rt)
{
    rlk_wd *wd = calloc(1, sizeof *wd);

    if (!wd)
        return NULL;
    wd->c = c;
    wd->rt = rt;
    wd->lease_ms = c->watchdog_lease_ms > 0 ? c->watchdog_lease_ms : RLK_DEFAULT_WATCHDOG_LEASE_MS;
    if (wd->lease_ms > 1000000000000LL)
        wd->lease_ms = 1000000000000LL;
    wd->period_ns = wd->lease_ms * RLK_NS_PER_MS / 3;
    if (wd->period_ns < RLK_NS_PER_MS)
        wd->period_ns = RLK_NS_PER_MS;
    wd->batch = calloc(RLK_WD_BATCH_MAX, sizeof *wd->batch);
    wd->results = calloc(RLK_WD_BATCH_MAX, sizeof *wd->results);
    wd->keys = calloc(RLK_WD_BATCH_MAX, sizeof *wd->keys);
    wd->args = calloc(RLK_WD_BATCH_MAX + 1, sizeof *wd->args);
    if (!wd->batch || !wd->results || !wd->keys || !wd->args || rlk_rt_cond_init(&wd->wake) != 0) {
        free(wd->batch);
        free(wd->results);
        free(wd->keys);
        free(wd->args);
        free(wd);
        return NULL;
    }
    pthread_cond_init(&wd->settled, NULL);
    pthread_mutex_init(&wd->mu, NULL);
    return wd;
}

void rlk_wd_free(rlk_wd *wd)
{
    if (!wd)
        return;
    pthread_mutex_lock(&wd->mu);
    wd->stop = 1;
    pthread_cond_signal(&wd->wake);
    pthread_mutex_unlock(&wd->mu);
    if (wd->started)
        pthread_join(wd->thread, NULL);
    rlk_wd_disconnect(wd);
    while (wd->holds) {
        rlk_hold *e = wd->holds;

        wd->holds = e->next;
        rlk_hold_free(e);
    }
    while (wd->lost)
        rlk_wd_unmark(wd, wd->lost->name, wd->lost->owner);
    free(wd->batch);
    free(wd->results);
    free(wd->keys);
    free(wd->args);
    pthread_cond_destroy(&wd->wake);
    pthread_cond_destroy(&wd->settled);
    pthread_mutex_destroy(&wd->mu);
    free(wd);
}

/* ---------------------------------------------------------------- the lock API's calls */

int rlk_wd_acquired(rlk_wd *wd, const char *name, const char *owner, long long lease_ms,
                    int watchdog, long long sent_ns)
{
    rlk_hold *e;
    int rc = RLK_OK;

    pthread_mutex_lock(&wd->mu);
    if (watchdog)
        rc = rlk_wd_start(wd);
    e = rc == RLK_OK ? rlk_wd_find(wd, name, owner) : NULL;
    if (rc == RLK_OK && !e && !(e = rlk_hold_new(wd, name, owner)))
        rc = rlk_set_error(wd->c, RLK_ERR_NOMEM, "lock %s: out of memory", name);
    if (e) {
        e->count++;
        e->lease_ms = lease_ms;
        if (watchdog) {
            /* The acquire reset the lease to the watchdog lease when it ran. */
            e->watchdog = 1;
            if (sent_ns > e->last_ok_ns)
                e->last_ok_ns = sent_ns;
            if (!e->inflight)
                e->next_due_ns = e->last_ok_ns + wd->period_ns;
            pthread_cond_signal(&wd->wake);
        }
        rlk_wd_unmark(wd, name, owner);
    }
    pthread_mutex_unlock(&wd->mu);
    return rc;
}

int rlk_wd_holds(rlk_wd *wd, const char *name, const char *owner)
{
    int held;

    pthread_mutex_lock(&wd->mu);
    held = rlk_wd_find(wd, name, owner) != NULL;
    pthread_mutex_unlock(&wd->mu);
    return held;
}

void rlk_wd_forget(rlk_wd *wd, const char *name, const char *owner)
{
    rlk_hold *e;

    pthread_mutex_lock(&wd->mu);
    e = rlk_wd_settle(wd, name, owner);
    if (e) {
        rlk_wd_unlink(wd, e);
        rlk_hold_free(e);
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

long long rlk_wd_release_begin(rlk_wd *wd, const char *name, const char *owner,
                               rlk_wd_ticket *t)
{
    long long lease = wd->lease_ms;
    rlk_hold *e;

    memset(t, 0, sizeof *t);
    pthread_mutex_lock(&wd->mu);
    e = rlk_wd_find(wd, name, owner);
    if (e && e->count <= 1)
        e = rlk_wd_settle(wd, name, owner);
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
    rlk_hold_free(t->removed);
    t->removed = NULL;
    pthread_mutex_unlock(&wd->mu);
}

int rlk_wd_is_lost(rlk_wd *wd, const char *name, const char *owner)
{
    int lost;

    pthread_mutex_lock(&wd->mu);
    lost = *rlk_wd_mark_slot(wd, name, owner) != NULL;
    pthread_mutex_unlock(&wd->mu);
    return lost;
}
