/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_busy_both.c - every lock kind's busy and refusal messages alike on both APIs (the
 * acquisition machine, kinds/acq.h, writes them from the row): the same scripted outcome,
 * against one real redis-server, through the blocking API and through the loop must end with
 * the same error code and the same message (the elapsed "after N ms" and the holder id, which
 * differ by API, read as placeholders).
 *
 *   <kind>_busy     another client holds the name (a fair lock, a read-write lock's other side,
 *                   a value of a faster MultiLock group, ...); the caller asks with no wait and
 *                   with a wait of 150 ms: RLK_ERR_BUSY "<kind> NAME: <why> after N ms" on both,
 *                   for the reentrant lock (plain, spinning, with a lock-delay), the
 *                   non-reentrant lock, the fair lock (and its non-reentrant row), the fenced
 *                   lock, both sides of the read-write lock and the faster MultiLock;
 *   upgrade         the caller holds a read and asks for the write: RLK_ERR_UPGRADE on both;
 *   nr_reentry      the caller holds a non-reentrant lock (and a non-reentrant fair lock) and
 *                   asks again: RLK_ERR_REENTRY on both;
 *   sem_busy        a semaphore's (and a permit-expirable one's: psem_busy) one permit taken by
 *                   another client; the caller asks for one, with no wait and with 150 ms:
 *                   RLK_ERR_BUSY "semaphore NAME: 1 permit(s) not available after N ms" ("acquire
 *                   NAME: ..." for the permit-expirable one) on both;
 *   not_held        another client holds the name; the caller unlocks it: RLK_ERR_NOT_OWNER
 *                   "unlock <kind> NAME: not held by OWNER" on both ("not every value held by"
 *                   for a faster MultiLock);
 *   value_long      an election campaign with a value of 65537 bytes: RLK_ERR_ARG "election
 *                   NAME: value longer than 65536 bytes" on both, nothing sent;
 *   proclaim_value  a proclaim with a value of 65537 bytes, and with none (NULL): RLK_ERR_ARG
 *                   with the same message on both, nothing sent;
 *   latch_busy      a latch counted at 1; the caller awaits it with no wait and with 150 ms:
 *                   RLK_ERR_BUSY "latch NAME: count still above 0 after N ms" on both.
 *
 *   rlk_async_busy_both_<loop> <case>|all
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "fixture.h"
#include "aloop.h"
#include "async_procs.h"
#include "rlk.h"
#include "rlk_async.h"

#define LEASE_MS 30000
#define WAIT_MS 150

static rlk_fx_server srv;
static char url[512];

/* The kinds, each through both APIs. */
enum { LOCK, NR, SPIN, DELAY, FAIR, FAIR_NR, FENCED, READ, WRITE, MULTI };

static const char *const mine[] = {"b", "c", NULL};     /* the caller's values (MULTI) */
static const char *const theirs[] = {"a", "b", NULL};   /* the rival's: b is shared */

/* One API's end of a call: its code and message, the holder id read as OWNER and the elapsed
 * time as N. */
typedef struct outcome {
    int err;
    char msg[512];
} outcome;

static void note(outcome *o, int err, const char *msg, const char *owner)
{
    char buf[512];
    size_t n = 0, olen = strlen(owner);

    o->err = err;
    for (const char *p = err == RLK_OK ? "" : msg; *p && n + 8 < sizeof buf;) {
        if (olen && strncmp(p, owner, olen) == 0) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, "OWNER");
            p += olen;
        } else if (strncmp(p, "after ", 6) == 0 && isdigit((unsigned char)p[6])) {
            n += (size_t)snprintf(buf + n, sizeof buf - n, "after N");
            for (p += 6; isdigit((unsigned char)*p); p++)
                ;
        } else {
            buf[n++] = *p++;
        }
    }
    buf[n] = '\0';
    snprintf(o->msg, sizeof o->msg, "%s", buf);
}

static void open_client(rlk_client **c)
{
    rlk_options opt;

    rlk_options_init(&opt);
    opt.url = url;
    REQUIRE((*c = rlk_connect(&opt)) != NULL && rlk_err(*c) == RLK_OK);
}

/* ---------------------------------------------------------------- the blocking API */

/* A blocking handle of kind k on name, whatever its type. */
typedef struct bh {
    int k;
    rlk_lock *l;
    rlk_nrlock *nr;
    rlk_fairlock *f;
    rlk_fenced *fe;
    rlk_rwlock *rw;
    rlk_fastmulti *m;
    char owner[256];
} bh;

static void bh_new(bh *h, rlk_client *c, int k, const char *name, const char *const *values)
{
    memset(h, 0, sizeof *h);
    h->k = k;
    switch (k) {
    case NR:
        REQUIRE((h->nr = rlk_nrlock_new(c, name)) != NULL);
        REQUIRE(rlk_nrlock_owner(h->nr, h->owner, sizeof h->owner) == RLK_OK);
        return;
    case FAIR:
    case FAIR_NR:
        REQUIRE((h->f = rlk_fairlock_new(c, name)) != NULL);
        REQUIRE(k == FAIR || rlk_fairlock_set_non_reentrant(h->f, 1) == RLK_OK);
        REQUIRE(rlk_fairlock_owner(h->f, h->owner, sizeof h->owner) == RLK_OK);
        return;
    case FENCED:
        REQUIRE((h->fe = rlk_fenced_new(c, name)) != NULL);
        REQUIRE(rlk_fenced_owner(h->fe, h->owner, sizeof h->owner) == RLK_OK);
        return;
    case READ:
    case WRITE:
        REQUIRE((h->rw = rlk_rwlock_new(c, name)) != NULL);
        REQUIRE(rlk_rwlock_owner(h->rw, h->owner, sizeof h->owner) == RLK_OK);
        return;
    case MULTI:
        REQUIRE((h->m = rlk_fastmulti_new(c, name, values, 2)) != NULL);
        REQUIRE(rlk_fastmulti_owner(h->m, h->owner, sizeof h->owner) == RLK_OK);
        return;
    default:
        REQUIRE((h->l = rlk_lock_new(c, name)) != NULL);
        REQUIRE(k != SPIN || rlk_lock_set_spin(h->l, 10, 50) == RLK_OK);
        REQUIRE(k != DELAY || rlk_lock_set_delay(h->l, 5000) == RLK_OK);
        REQUIRE(rlk_lock_owner(h->l, h->owner, sizeof h->owner) == RLK_OK);
    }
}

/* h's try of kind k (READ and WRITE: the side; one handle may ask for both). */
static int bh_try(bh *h, int k, long long wait_ms)
{
    switch (h->k) {
    case NR:
        return rlk_nrlock_try_lock(h->nr, wait_ms, LEASE_MS);
    case FAIR:
    case FAIR_NR:
        return rlk_fairlock_try_lock(h->f, wait_ms, LEASE_MS);
    case FENCED:
        return rlk_fenced_try_lock(h->fe, wait_ms, LEASE_MS, NULL);
    case READ:
    case WRITE:
        return rlk_rwlock_try_lock(h->rw, k == READ ? RLK_RW_READ : RLK_RW_WRITE, wait_ms,
                                   LEASE_MS);
    case MULTI:
        return rlk_fastmulti_try_lock(h->m, wait_ms, LEASE_MS);
    default:
        return rlk_lock_try_lock(h->l, wait_ms, LEASE_MS);
    }
}

static int bh_unlock(bh *h, int k)
{
    return h->nr ? rlk_nrlock_unlock(h->nr)
           : h->f ? rlk_fairlock_unlock(h->f)
           : h->fe ? rlk_fenced_unlock(h->fe)
           : h->rw ? rlk_rwlock_unlock(h->rw, k == READ ? RLK_RW_READ : RLK_RW_WRITE)
           : h->m ? rlk_fastmulti_unlock(h->m) : rlk_lock_unlock(h->l);
}

static void bh_free(bh *h)
{
    rlk_lock_free(h->l);
    rlk_nrlock_free(h->nr);
    rlk_fairlock_free(h->f);
    rlk_fenced_free(h->fe);
    rlk_rwlock_free(h->rw);
    rlk_fastmulti_free(h->m);
}

/* ---------------------------------------------------------------- the loop */

#define RUN(c, x, expr) do { memset(&(x), 0, sizeof(x)); AP_REQ(expr); \
                             REQUIRE(ap_wait_res(&(c), &(x), 15000)); } while (0)

static const int akind[] = {
    [LOCK] = RLK_KIND_LOCK, [NR] = RLK_KIND_LOCK, [SPIN] = RLK_KIND_LOCK,
    [DELAY] = RLK_KIND_LOCK, [FAIR] = RLK_KIND_FAIR, [FAIR_NR] = RLK_KIND_FAIR,
    [FENCED] = RLK_KIND_FENCED, [READ] = RLK_KIND_READ, [WRITE] = RLK_KIND_WRITE,
    [MULTI] = RLK_KIND_LOCK};

/* Task 1's try of kind k on c. */
static void a_try(ap_cl *c, int k, const char *name, long long wait_ms, ap_res *x)
{
    switch (k) {
    case NR:
    case FAIR_NR:
        RUN(*c, *x, rlk_async_lock_nr(c->ac, akind[k], name, 1, wait_ms, LEASE_MS, ap_on_res, x));
        return;
    case SPIN:
        RUN(*c, *x, rlk_async_lock_spin(c->ac, name, 1, wait_ms, LEASE_MS, 10, 50, ap_on_res, x));
        return;
    case DELAY:
        RUN(*c, *x, rlk_async_lock_delay(c->ac, name, 1, wait_ms, LEASE_MS, 5000, ap_on_res, x));
        return;
    case MULTI:
        RUN(*c, *x, rlk_async_fastmulti_lock(c->ac, name, mine, 2, 1, wait_ms, LEASE_MS,
                                             ap_on_res, x));
        return;
    default:
        RUN(*c, *x, rlk_async_lock(c->ac, akind[k], name, 1, wait_ms, LEASE_MS, ap_on_res, x));
    }
}

static void a_unlock(ap_cl *c, int k, const char *name, ap_res *x)
{
    if (k == MULTI)
        RUN(*c, *x, rlk_async_fastmulti_unlock(c->ac, name, mine, 2, 1, ap_on_res, x));
    else
        RUN(*c, *x, rlk_async_unlock(c->ac, akind[k], name, 1, ap_on_res, x));
}

/* ---------------------------------------------------------------- the cases */

static void same(const char *what, const outcome *b, const outcome *a, int want)
{
    printf("  %-24s blocking: %s %s\n  %-24s async:    %s %s\n", what, rlk_strerror(b->err),
           b->msg, "", rlk_strerror(a->err), a->msg);
    CHECKF(b->err == want && a->err == want, "%s: blocking %s, async %s (want %s)", what,
           rlk_strerror(b->err), rlk_strerror(a->err), rlk_strerror(want));
    CHECKF(strcmp(b->msg, a->msg) == 0, "%s: the messages differ:\n    blocking '%s'\n    "
           "async    '%s'", what, b->msg, a->msg);
}

/* The rival of kind k holds name (on its own client); the caller asks on both APIs, with no
 * wait and with WAIT_MS: busy, alike. */
static void busy(int k, const char *name)
{
    const int rk = k == READ ? WRITE : k == WRITE ? READ : k;
    rlk_client *rc, *c;
    outcome b[2], a[2];
    bh rival, h;
    ap_cl ac;
    ap_res x;
    char what[64];

    open_client(&rc);
    open_client(&c);
    bh_new(&rival, rc, rk == SPIN || rk == DELAY || rk == NR ? LOCK : rk, name, theirs);
    REQUIRE(bh_try(&rival, rk, 0) == RLK_OK);
    bh_new(&h, c, k, name, mine);
    for (int w = 0; w < 2; w++) {
        int err = bh_try(&h, k, w ? WAIT_MS : 0);

        note(&b[w], err, rlk_errstr(c), h.owner);
    }
    REQUIRE(ap_cl_open(&ac, url, 0, 0, 0) == RLK_OK);
    for (int w = 0; w < 2; w++) {
        char owner[256];

        a_try(&ac, k, name, w ? WAIT_MS : 0, &x);
        snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(ac.ac));
        note(&a[w], x.err, x.errstr, owner);
    }
    ap_cl_close(&ac);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    for (int w = 0; w < 2; w++) {
        snprintf(what, sizeof what, "%s, wait %d ms", name, w ? WAIT_MS : 0);
        same(what, &b[w], &a[w], RLK_ERR_BUSY);
    }
    CHECK_INT_EQ(bh_unlock(&rival, rk), RLK_OK);
    bh_free(&h);
    bh_free(&rival);
    rlk_free(c);
    rlk_free(rc);
}

/* The caller holds kind held of name and asks for kind k with no wait, on both APIs: refused
 * alike with want; released after. */
static void refused(int held, int k, const char *name, int want)
{
    rlk_client *c;
    outcome b, a;
    char owner[256];
    int rc;
    bh h;
    ap_cl ac;
    ap_res x;

    open_client(&c);
    bh_new(&h, c, held, name, mine);
    REQUIRE(bh_try(&h, held, 0) == RLK_OK);
    rc = bh_try(&h, k, 0);
    note(&b, rc, rlk_errstr(c), h.owner);
    CHECK_INT_EQ(bh_unlock(&h, held), RLK_OK);
    bh_free(&h);
    rlk_free(c);
    REQUIRE(ap_cl_open(&ac, url, 0, 0, 0) == RLK_OK);
    a_try(&ac, held, name, 0, &x);
    REQUIRE(x.err == RLK_OK);
    a_try(&ac, k, name, 0, &x);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(ac.ac));
    note(&a, x.err, x.errstr, owner);
    a_unlock(&ac, held, name, &x);
    CHECKF(x.err == RLK_OK, "async unlock: %s %s", rlk_strerror(x.err), x.errstr);
    ap_cl_close(&ac);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    same(name, &b, &a, want);
}

/* A semaphore of one permit (ids: a permit-expirable one) taken by a rival client; the caller
 * asks for one with no wait and with WAIT_MS on both APIs: busy, alike. */
static void sem_busy(int ids, const char *name)
{
    rlk_client *rc, *c;
    rlk_semaphore *s = NULL, *rs = NULL;
    rlk_psemaphore *p = NULL, *rp = NULL;
    char id[RLK_PERMIT_ID_SIZE], what[64];
    outcome b[2], a[2];
    ap_cl ac;
    ap_res x;
    int set = 0, err;

    open_client(&rc);
    open_client(&c);
    if (ids) {
        REQUIRE((rp = rlk_psemaphore_new(rc, name)) && (p = rlk_psemaphore_new(c, name)));
        REQUIRE(rlk_psemaphore_try_set_permits(rp, 1, &set) == RLK_OK && set);
        REQUIRE(rlk_psemaphore_try_acquire(rp, 0, LEASE_MS, id) == RLK_OK);
    } else {
        REQUIRE((rs = rlk_semaphore_new(rc, name)) && (s = rlk_semaphore_new(c, name)));
        REQUIRE(rlk_semaphore_try_set_permits(rs, 1, &set) == RLK_OK && set);
        REQUIRE(rlk_semaphore_try_acquire(rs, 1, 0) == RLK_OK);
    }
    for (int w = 0; w < 2; w++) {
        err = ids ? rlk_psemaphore_try_acquire(p, w ? WAIT_MS : 0, LEASE_MS, id)
                  : rlk_semaphore_try_acquire(s, 1, w ? WAIT_MS : 0);
        note(&b[w], err, rlk_errstr(c), "");
    }
    REQUIRE(ap_cl_open(&ac, url, 0, 0, 0) == RLK_OK);
    for (int w = 0; w < 2; w++) {
        if (ids)
            RUN(ac, x, rlk_async_psemaphore_acquire(ac.ac, name, w ? WAIT_MS : 0, LEASE_MS,
                                                    ap_on_res, &x));
        else
            RUN(ac, x, rlk_async_semaphore_acquire(ac.ac, name, 1, w ? WAIT_MS : 0, ap_on_res,
                                                   &x));
        note(&a[w], x.err, x.errstr, "");
    }
    ap_cl_close(&ac);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    for (int w = 0; w < 2; w++) {
        snprintf(what, sizeof what, "%s, wait %d ms", name, w ? WAIT_MS : 0);
        same(what, &b[w], &a[w], RLK_ERR_BUSY);
    }
    rlk_semaphore_free(s);
    rlk_semaphore_free(rs);
    rlk_psemaphore_free(p);
    rlk_psemaphore_free(rp);
    rlk_free(c);
    rlk_free(rc);
}

static void test_sem_busy(void)
{
    sem_busy(0, "abb:sem");
}

static void test_psem_busy(void)
{
    sem_busy(1, "abb:psem");
}

/* The caller unlocks kind k of name, which another client holds: refused alike on both APIs
 * (RLK_ERR_NOT_OWNER), the other's hold left. (Not the non-reentrant lock: the loop unlocks it
 * as RLK_KIND_LOCK, and a hold it does not record names no other row.) */
static void not_held(int k, const char *name)
{
    rlk_client *rc, *c;
    outcome b, a;
    char owner[256];
    bh rival, h;
    ap_cl ac;
    ap_res x;
    int err;

    open_client(&rc);
    open_client(&c);
    bh_new(&rival, rc, k, name, theirs);
    REQUIRE(bh_try(&rival, k, 0) == RLK_OK);
    bh_new(&h, c, k, name, mine);
    err = bh_unlock(&h, k);
    note(&b, err, rlk_errstr(c), h.owner);
    REQUIRE(ap_cl_open(&ac, url, 0, 0, 0) == RLK_OK);
    a_unlock(&ac, k, name, &x);
    snprintf(owner, sizeof owner, "%s:1", rlk_async_uuid(ac.ac));
    note(&a, x.err, x.errstr, owner);
    ap_cl_close(&ac);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    same(name, &b, &a, RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(bh_unlock(&rival, k), RLK_OK);
    bh_free(&h);
    bh_free(&rival);
    rlk_free(c);
    rlk_free(rc);
}

static void test_not_held(void)
{
    not_held(LOCK, "abb:nh:lock");
    not_held(FAIR, "abb:nh:fair");
    not_held(FENCED, "abb:nh:fenced");
    not_held(READ, "abb:nh:read");
    not_held(WRITE, "abb:nh:write");
    not_held(MULTI, "abb:nh:multi");
}

/* A campaign whose value is longer than the scripts take: refused before anything is sent,
 * alike on both APIs (RLK_ERR_ARG). */
static void test_value_long(void)
{
    const char *name = "abb:elect";
    char *big = malloc(65538);
    long long term = 0;
    rlk_client *c;
    rlk_elect *e;
    outcome b, a;
    ap_cl ac;
    ap_res x;
    int err;

    REQUIRE(big != NULL);
    memset(big, 'v', 65537);
    big[65537] = '\0';
    open_client(&c);
    REQUIRE((e = rlk_elect_new(c, name)) != NULL);
    err = rlk_elect_campaign(e, big, 0, LEASE_MS, &term);
    note(&b, err, rlk_errstr(c), "");
    rlk_elect_free(e);
    rlk_free(c);
    REQUIRE(ap_cl_open(&ac, url, 0, 0, 0) == RLK_OK);
    RUN(ac, x, rlk_async_elect_campaign(ac.ac, name, 1, big, 0, LEASE_MS, ap_on_res, &x));
    note(&a, x.err, x.errstr, "");
    ap_cl_close(&ac);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    same(name, &b, &a, RLK_ERR_ARG);
    free(big);
}

/* A proclaim whose value is longer than the scripts take, or missing: refused before
 * anything is sent, alike on both APIs (RLK_ERR_ARG). */
static void test_proclaim_value(void)
{
    const char *name = "abb:proclaim";
    char *big = malloc(65538);
    rlk_client *c;
    rlk_elect *e;
    outcome b, a;
    ap_cl ac;
    ap_res x;
    int err;

    REQUIRE(big != NULL);
    memset(big, 'v', 65537);
    big[65537] = '\0';
    for (int k = 0; k < 2; k++) {
        const char *value = k ? NULL : big;

        open_client(&c);
        REQUIRE((e = rlk_elect_new(c, name)) != NULL);
        err = rlk_elect_proclaim(e, value);
        note(&b, err, rlk_errstr(c), "");
        rlk_elect_free(e);
        rlk_free(c);
        REQUIRE(ap_cl_open(&ac, url, 0, 0, 0) == RLK_OK);
        RUN(ac, x, rlk_async_elect_proclaim(ac.ac, name, 1, value, ap_on_res, &x));
        note(&a, x.err, x.errstr, "");
        ap_cl_close(&ac);
        CHECK_INT_EQ(ap_rule_breaks, 0);
        same(k ? "proclaim NULL" : "proclaim 65537 bytes", &b, &a, RLK_ERR_ARG);
    }
    free(big);
}

/* A latch counted at 1, awaited with no wait and with WAIT_MS on both APIs: busy, alike. */
static void test_latch_busy(void)
{
    const char *name = "abb:latch";
    rlk_client *c;
    rlk_latch *l;
    outcome b[2], a[2];
    char what[64];
    int set = 0, err;
    ap_cl ac;
    ap_res x;

    open_client(&c);
    REQUIRE((l = rlk_latch_new(c, name)) != NULL);
    REQUIRE(rlk_latch_try_set_count(l, 1, &set) == RLK_OK && set);
    for (int w = 0; w < 2; w++) {
        err = rlk_latch_await(l, w ? WAIT_MS : 0);
        note(&b[w], err, rlk_errstr(c), "");
    }
    REQUIRE(ap_cl_open(&ac, url, 0, 0, 0) == RLK_OK);
    for (int w = 0; w < 2; w++) {
        RUN(ac, x, rlk_async_latch_await(ac.ac, name, w ? WAIT_MS : 0, ap_on_res, &x));
        note(&a[w], x.err, x.errstr, "");
    }
    ap_cl_close(&ac);
    CHECK_INT_EQ(ap_rule_breaks, 0);
    for (int w = 0; w < 2; w++) {
        snprintf(what, sizeof what, "%s, wait %d ms", name, w ? WAIT_MS : 0);
        same(what, &b[w], &a[w], RLK_ERR_BUSY);
    }
    rlk_latch_free(l);
    rlk_free(c);
}

static void test_lock_busy(void)
{
    busy(LOCK, "abb:lock");
}

static void test_nr_busy(void)
{
    busy(NR, "abb:nr");
}

static void test_spin_busy(void)
{
    busy(SPIN, "abb:spin");
}

static void test_delay_busy(void)
{
    busy(DELAY, "abb:delay");
}

static void test_fair_busy(void)
{
    busy(FAIR, "abb:fair");
}

static void test_fair_nr_busy(void)
{
    busy(FAIR_NR, "abb:fairnr");
}

static void test_fenced_busy(void)
{
    busy(FENCED, "abb:fenced");
}

static void test_read_busy(void)
{
    busy(READ, "abb:read");
}

static void test_write_busy(void)
{
    busy(WRITE, "abb:write");
}

static void test_multi_busy(void)
{
    busy(MULTI, "abb:multi");
}

static void test_upgrade(void)
{
    refused(READ, WRITE, "abb:upgrade", RLK_ERR_UPGRADE);
}

static void test_nr_reentry(void)
{
    refused(NR, NR, "abb:nr:again", RLK_ERR_REENTRY);
    refused(FAIR_NR, FAIR_NR, "abb:fairnr:again", RLK_ERR_REENTRY);
}

static const at_case cases[] = {
    {"lock_busy", test_lock_busy},       {"nr_busy", test_nr_busy},
    {"spin_busy", test_spin_busy},       {"delay_busy", test_delay_busy},
    {"fair_busy", test_fair_busy},       {"fair_nr_busy", test_fair_nr_busy},
    {"fenced_busy", test_fenced_busy},   {"read_busy", test_read_busy},
    {"write_busy", test_write_busy},     {"multi_busy", test_multi_busy},
    {"upgrade", test_upgrade},           {"nr_reentry", test_nr_reentry},
    {"sem_busy", test_sem_busy},         {"psem_busy", test_psem_busy},
    {"not_held", test_not_held},         {"value_long", test_value_long},
    {"proclaim_value", test_proclaim_value}, {"latch_busy", test_latch_busy},
};

int main(int argc, char **argv)
{
    return AT_MAIN("async_busy_both", cases, argc > 1 ? argv[1] : "all", NULL, &srv, url);
}
