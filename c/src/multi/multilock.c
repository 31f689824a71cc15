/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multilock.c - MultiLock (rlk_multilock_*): several reentrant locks, each
 * on its own client, taken all or none in one global order (server address,
 * db, name), by the attempt rules of multilock.h, defined here: on a member
 * that stays busy, what was taken is released and another attempt starts
 * while the caller's wait lasts. docs/redlock.md describes it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/scripts.h"
#include "kinds/lock.h"
#include "multi/multilock.h"
#include "runtime/rt.h"

typedef struct multi_member {
    rlk_client *c;
    rlk_lock *lock;
    char *name;
} multi_member;

struct rlk_multilock {
    multi_member *mem;          /* in the order added */
    int *order;                 /* member indices in acquisition order */
    int n, cap;
    long long ms_per_member;
    char *owner;                /* fixed holder id, or NULL */
    int failed;                 /* the member that ended the last call, or -1 */
    int err;
    char errstr[RLK_ERRSTR_MAX];
};

/* ---------------------------------------------------------------- errors */

static int multi_fail(rlk_multilock *m, int member, int err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int multi_fail(rlk_multilock *m, int member, int err, const char *fmt, ...)
{
    va_list ap;

    m->failed = member;
    m->err = err;
    va_start(ap, fmt);
    vsnprintf(m->errstr, sizeof m->errstr, fmt, ap);
    va_end(ap);
    return err;
}

/* Records member i's failure with the message its client kept for this thread. */
static int multi_fail_member(rlk_multilock *m, int i, int err)
{
    const multi_member *x = &m->mem[i];

    return multi_fail(m, i, err, "member %d (%s %s): %s", i, rlk_client_url(x->c), x->name,
                      rlk_errstr(x->c));
}

/* The start of a call on the members (none: an error); RLK_OK with the last call's outcome
 * cleared (the outcome of a call that succeeds: multi_fail with RLK_OK). */
static int multi_begin(rlk_multilock *m)
{
    if (!m)
        return RLK_ERR_ARG;
    if (m->n == 0)
        return multi_fail(m, -1, RLK_ERR_ARG, "multilock: no members");
    return multi_fail(m, -1, RLK_OK, "%s", "");
}

/* ---------------------------------------------------------------- the set */

rlk_multilock *rlk_multilock_new(void)
{
    rlk_multilock *m = calloc(1, sizeof *m);

    if (!m)
        return NULL;
    m->ms_per_member = RLK_MULTILOCK_MS_PER_MEMBER;
    m->failed = -1;
    return m;
}

/* What a member holds: its lock handle and its name. */
static void multi_member_free(multi_member *x)
{
    rlk_lock_free(x->lock);
    free(x->name);
}

void rlk_multilock_free(rlk_multilock *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        multi_member_free(&m->mem[i]);
    free(m->mem);
    free(m->order);
    free(m->owner);
    free(m);
}

/* The global order: server address, db, name. */
static int multi_compare(const multi_member *a, const multi_member *b)
{
    int d = strcmp(a->c->addr, b->c->addr);

    if (d == 0)
        d = (a->c->url.db > b->c->url.db) - (a->c->url.db < b->c->url.db);
    if (d == 0)
        d = strcmp(a->name, b->name);
    return d;
}

/* Inserts the newest member (index n - 1) into the sorted order. */
static void multi_order_insert(rlk_multilock *m)
{
    int i = m->n - 1, k = i;

    while (k > 0 && multi_compare(&m->mem[m->order[k - 1]], &m->mem[i]) > 0) {
        m->order[k] = m->order[k - 1];
        k--;
    }
    m->order[k] = i;
}

static int multi_grow(rlk_multilock *m)
{
    int cap = m->cap ? 2 * m->cap : 4;
    multi_member *mem;
    int *order;

    if (m->n < m->cap)
        return 0;
    mem = realloc(m->mem, (size_t)cap * sizeof *mem);
    if (!mem)
        return -1;
    m->mem = mem;
    order = realloc(m->order, (size_t)cap * sizeof *order);
    if (!order)
        return -1;
    m->order = order;
    m->cap = cap;
    return 0;
}

int rlk_multilock_add(rlk_multilock *m, rlk_client *c, const char *name)
{
    multi_member x = {c, NULL, NULL};

    if (!m)
        return RLK_ERR_ARG;
    if (!c || !name || !*name)
        return multi_fail(m, -1, RLK_ERR_ARG, "multilock add: a member needs a client and a name");
    for (int i = 0; i < m->n; i++) {
        x.name = (char *)name;
        if (multi_compare(&m->mem[i], &x) == 0)
            return multi_fail(m, i, RLK_ERR_ARG, "multilock add: %s %s is member %d already",
                              rlk_client_url(c), name, i);
    }
    if (multi_grow(m) != 0 || !(x.name = strdup(name)))
        return multi_fail(m, -1, RLK_ERR_NOMEM, "multilock add: out of memory");
    if (!(x.lock = rlk_lock_new(c, name)) ||
        (m->owner && rlk_lock_set_owner(x.lock, m->owner) != RLK_OK)) {
        multi_member_free(&x);
        return multi_fail(m, -1, rlk_err(c), "multilock add %s: %s", name, rlk_errstr(c));
    }
    m->mem[m->n++] = x;
    multi_order_insert(m);
    return multi_fail(m, -1, RLK_OK, "%s", "");
}

void rlk_multilock_set_attempt_wait(rlk_multilock *m, long long ms_per_member)
{
    if (m)
        m->ms_per_member = ms_per_member > 0 ? ms_per_member : RLK_MULTILOCK_MS_PER_MEMBER;
}

int rlk_multilock_set_owner(rlk_multilock *m, const char *owner)
{
    char *copy = NULL;

    if (!m)
        return RLK_ERR_ARG;
    if (owner && (!*owner || strlen(owner) > RLK_OWNER_MAX))
        return multi_fail(m, -1, RLK_ERR_ARG, "multilock owner must be 1..%d bytes",
                          RLK_OWNER_MAX);
    if (owner && !(copy = strdup(owner)))
        return multi_fail(m, -1, RLK_ERR_NOMEM, "multilock owner: out of memory");
    for (int i = 0; i < m->n; i++) {
        int rc = rlk_lock_set_owner(m->mem[i].lock, owner);

        if (rc != RLK_OK) {
            free(copy);
            return multi_fail_member(m, i, rc);
        }
    }
    free(m->owner);
    m->owner = copy;
    return multi_fail(m, -1, RLK_OK, "%s", "");
}

/* ---------------------------------------------------------------- acquiring */

static long long multi_now_ms(void)
{
    return rlk_clock_now_ns() / RLK_NS_PER_MS;
}

/* An attempt failed on member i with rc: records its error and gives back
 * the first `taken` members in order, last taken first. Returns rc. */
static int multi_give_back(rlk_multilock *m, int i, int rc, int taken)
{
    multi_fail_member(m, i, rc);
    while (taken-- > 0)
        (void)rlk_lock_unlock(m->mem[m->order[taken]].lock);
    return rc;
}

/* One attempt: every member in order, each waiting what plan p leaves it. On
 * a failure all that was taken is given back and the failing member's error
 * is recorded. */
static int multi_attempt(rlk_multilock *m, const rlk_multilock_plan *p)
{
    for (int k = 0; k < m->n; k++) {
        int i = m->order[k];
        long long wait_ms = rlk_multilock_member_wait(p, multi_now_ms());
        int rc = rlk_lock_try_lock(m->mem[i].lock, wait_ms, p->acq_lease);

        if (rc != RLK_OK)
            return multi_give_back(m, i, rc, k);
    }
    return RLK_OK;
}

/* Sets every member's lease to lease_ms once all are held (they were taken
 * with a longer one so that none expired while the others were awaited).
 * RLK_ERR_LOST when one no longer holds; everything is given back then. */
static int multi_set_leases(rlk_multilock *m, long long lease_ms)
{
    for (int k = 0; k < m->n; k++) {
        int i = m->order[k], rc = rlk_lock_first_lease(m->mem[i].lock, lease_ms);

        if (rc != RLK_OK)
            return multi_give_back(m, i, rc, m->n);
    }
    return RLK_OK;
}

/* ---------------------------------------------------------------- the rules (multilock.h) */

void rlk_multilock_plan_init(rlk_multilock_plan *p, long long ms_per_member, int n,
                             long long wait_ms, long long lease_ms, long long start)
{
    p->wait_ms = wait_ms;
    p->lease_ms = lease_ms;
    p->budget_ms = ms_per_member * n;
    if (wait_ms > 0 && wait_ms < p->budget_ms)
        p->budget_ms = wait_ms;
    p->acq_lease = lease_ms > 0 && wait_ms != 0 && lease_ms < 2 * p->budget_ms
                       ? 2 * p->budget_ms : lease_ms;
    p->deadline = wait_ms < 0 ? -1 : start + wait_ms;
    p->attempt_end = start;
}

void rlk_multilock_attempt(rlk_multilock_plan *p, long long now)
{
    p->attempt_end = p->deadline >= 0 && now + p->budget_ms > p->deadline ? p->deadline
                                                                           : now + p->budget_ms;
}

long long rlk_multilock_member_wait(const rlk_multilock_plan *p, long long now)
{
    return p->wait_ms == 0 || p->attempt_end < now ? 0 : p->attempt_end - now;
}

int rlk_multilock_again(const rlk_multilock_plan *p, int err, long long now)
{
    return (err == RLK_ERR_BUSY || err == RLK_ERR_LOST) && p->wait_ms != 0 &&
           (p->deadline < 0 || now < p->deadline);
}

int rlk_multilock_end_err(int err)
{
    return err == RLK_ERR_LOST ? RLK_ERR_BUSY : err;
}

int rlk_multilock_try_lock(rlk_multilock *m, long long wait_ms, long long lease_ms)
{
    rlk_multilock_plan p;
    int rc = multi_begin(m);

    if (rc != RLK_OK)
        return rc;
    if (wait_ms > RLK_NUM_MAX)
        wait_ms = RLK_NUM_MAX;      /* the scripts' bound */
    rlk_multilock_plan_init(&p, m->ms_per_member, m->n, wait_ms, lease_ms, multi_now_ms());
    do {
        rlk_multilock_attempt(&p, multi_now_ms());
        rc = multi_attempt(m, &p);
        if (rc == RLK_OK && p.acq_lease != lease_ms)
            rc = multi_set_leases(m, lease_ms);
        if (rc == RLK_OK)
            return multi_fail(m, -1, RLK_OK, "%s", "");
    } while (rlk_multilock_again(&p, rc, multi_now_ms()));
    return m->err = rlk_multilock_end_err(rc);
}

int rlk_multilock_lock(rlk_multilock *m, long long lease_ms)
{
    return rlk_multilock_try_lock(m, -1, lease_ms);
}

int rlk_multilock_unlock(rlk_multilock *m)
{
    int first = -1, first_rc = multi_begin(m);

    if (first_rc != RLK_OK)
        return first_rc;
    for (int k = m->n - 1; k >= 0; k--) {
        int i = m->order[k], rc = rlk_lock_unlock(m->mem[i].lock);

        if (rc != RLK_OK && first < 0) {
            first = i;
            first_rc = multi_fail_member(m, i, rc);
        }
    }
    return first_rc;
}

/* ---------------------------------------------------------------- queries */

int rlk_multilock_count(const rlk_multilock *m)
{
    return m ? m->n : 0;
}

static const multi_member *multi_at(const rlk_multilock *m, int i)
{
    return m && i >= 0 && i < m->n ? &m->mem[i] : NULL;
}

const char *rlk_multilock_member_name(const rlk_multilock *m, int i)
{
    const multi_member *x = multi_at(m, i);

    return x ? x->name : NULL;
}

const char *rlk_multilock_member_url(const rlk_multilock *m, int i)
{
    const multi_member *x = multi_at(m, i);

    return x ? rlk_client_url(x->c) : NULL;
}

rlk_client *rlk_multilock_member_client(const rlk_multilock *m, int i)
{
    const multi_member *x = multi_at(m, i);

    return x ? x->c : NULL;
}

rlk_lock *rlk_multilock_member_lock(const rlk_multilock *m, int i)
{
    const multi_member *x = multi_at(m, i);

    return x ? x->lock : NULL;
}

int rlk_multilock_order_at(const rlk_multilock *m, int k)
{
    return m && k >= 0 && k < m->n ? m->order[k] : -1;
}

int rlk_multilock_lease(rlk_multilock *m, long long *start_ns, long long *deadline_ns)
{
    int lost = -1, rc;

    if (!start_ns || !deadline_ns)
        return RLK_ERR_ARG;
    *start_ns = *deadline_ns = 0;
    if ((rc = multi_begin(m)) != RLK_OK)
        return rc;
    /* The hold ends with its first member to end: that member's lease (a
     * member declared lost: the lease it was lost with, and RLK_ERR_LOST). */
    for (int i = 0; i < m->n; i++) {
        long long s, d;

        rc = rlk_lock_lease(m->mem[i].lock, &s, &d);
        if (rc != RLK_OK && rc != RLK_ERR_LOST)
            return multi_fail_member(m, i, rc);
        if (rc == RLK_ERR_LOST && lost < 0)
            lost = i;
        if (i == 0 || d < *deadline_ns) {
            *start_ns = s;
            *deadline_ns = d;
        }
    }
    return lost < 0 ? RLK_OK : multi_fail_member(m, lost, RLK_ERR_LOST);
}

int rlk_multilock_failed_member(const rlk_multilock *m)
{
    return m ? m->failed : -1;
}

int rlk_multilock_err(const rlk_multilock *m)
{
    return m ? m->err : RLK_ERR_ARG;
}

const char *rlk_multilock_errstr(const rlk_multilock *m)
{
    return m ? m->errstr : "";
}
