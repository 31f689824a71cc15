/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_redlock.c - `rlk lock --redlock URL,URL,URL NAME -- COMMAND`: one
 * lock on N independent servers held with a majority (the library's
 * RedLock), kept while the command runs by extending it every third of the
 * lease from the main loop.
 *
 * RedLock has no watchdog: the hold's deadline is the end of the validity
 * (rlk_redlock_valid_until_ms, CLOCK_MONOTONIC as the main loop's), moved
 * by every successful extend. An extend that finds the token gone from a
 * majority (or the validity already over) loses the lock at once; one that
 * fails with errors (servers down or slow) is tried again a quarter period
 * later, and the validity running out is the loss. A server that is down
 * when rlk starts is not an error by itself: RedLock needs a majority.
 * Waiting for the quorum goes in slices (redlock_try_sliced) so that an
 * outage is told on stderr (once) while rlk keeps trying.
 */
#include <stdlib.h>
#include <string.h>

#include "lock_cli.h"
#include "nest.h"
#include "client/url.h"

#define REDLOCK_TOKEN_MAX 64
/* The longest one rlk_redlock_try_lock waits: how soon an outage is told. */
#define RLK_LC_REDLOCK_SLICE_MS 1000LL

typedef struct redlock_run {
    const rlk_lc_lock_opts *o;
    rlk_client **clients;
    int n;
    rlk_redlock *rl;
    long long lease_ms;         /* of the acquire and of every extend */
    sigset_t mask;              /* the signal mask before the wait: the command's */
} redlock_run;

/* ---------------------------------------------------------------- servers */

/* Connects to one server. A server that does not answer is kept (the
 * library connects again on use), and so is one that refuses the
 * credentials (AUTH or SELECT refused): RedLock counts it as a server that is
 * down, after a one-line warning. A URL it cannot use is an error. */
static int redlock_connect(redlock_run *r, const char *url)
{
    rlk_options opts;
    rlk_client *c;
    int err;

    rlk_options_init(&opts);
    if ((err = rlk_cli_conn_options_from(url, "--redlock", &opts)) >= 0)
        return err;
    opts.no_preload = 1;
    opts.pool_size = 1;
    if (!(c = rlk_connect(&opts)))
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    err = rlk_err(c);
    if (err == RLK_ERR_AUTH)
        rlk_cli_fail(0, "redlock %s: warning: %s: %s; counted as a server that is down",
                     r->o->names[0], rlk_client_url(c), rlk_errstr(c));
    else if (err == RLK_OK)
        rlk_cli_connected(c);
    if (err == RLK_ERR_URL || err == RLK_ERR_SHA ||
        err == RLK_ERR_BUNDLE || err == RLK_ERR_NOMEM) {
        rlk_cli_fail(rlk_cli_exit_code(err), "lock --redlock: %s", rlk_errstr(c));
        rlk_free(c);
        return rlk_cli_exit_code(err);
    }
    r->clients[r->n++] = c;
    return -1;
}

/* The server a URL names ("host:port" or the socket path) into addr, for
 * telling two URLs of one server apart from two servers. -1: a bad URL
 * (message printed, exit 2). */
static int redlock_address(const char *url, char *addr, size_t len)
{
    char err[300];
    rlk_url u;
    int rc = rlk_url_parse(url, &u, err, sizeof err);

    if (rc == RLK_OK)
        rlk_url_address(&u, addr, len);
    rlk_url_free(&u);
    if (rc != RLK_OK)
        rlk_cli_usage("lock", "--redlock: %s", err);
    return rc == RLK_OK ? 0 : -1;
}

/* -1 when url names a server no earlier URL names; else an exit code (2).
 * Two URLs of one host:port are one server whatever their databases or
 * credentials: a RedLock on it would count one server twice. */
static int redlock_duplicate(char *const *urls, int n, const char *url)
{
    char addr[300], other[300];

    if (redlock_address(url, addr, sizeof addr) < 0)
        return RLK_EXIT_USAGE;
    for (int k = 0; k < n; k++) {
        if (redlock_address(urls[k], other, sizeof other) < 0)
            return RLK_EXIT_USAGE;
        if (strcmp(addr, other) == 0)
            return strcmp(urls[k], url) == 0
                       ? rlk_cli_usage("lock", "--redlock: %s is listed twice", addr)
                       : rlk_cli_usage("lock", "--redlock: two URLs name the server %s (RedLock "
                                       "needs independent servers; a database is not one)",
                                       addr);
    }
    return -1;
}

/* Splits the comma-separated list into urls (malloc'd). -1, or an exit code. */
static int redlock_split(const char *list, char **urls, int *n)
{
    const char *p = list;
    int rc;

    *n = 0;
    for (;;) {
        size_t len = strcspn(p, ",");

        if (len == 0)
            return rlk_cli_usage("lock", "--redlock: an empty URL in '%s'", list);
        if (!(urls[*n] = strndup(p, len)))
            return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        (*n)++;
        if ((rc = redlock_duplicate(urls, *n - 1, urls[*n - 1])) >= 0)
            return rc;
        if (p[len] == '\0')
            return -1;
        p += len + 1;
    }
}

static int redlock_count(const char *list)
{
    int n = 1;

    for (; *list; list++)
        n += *list == ',';
    return n;
}

static int redlock_open(redlock_run *r)
{
    int max = redlock_count(r->o->redlock_urls), n = 0, rc;
    char **urls;

    if (strstr(r->o->redlock_urls, "+cluster://") || strstr(r->o->redlock_urls, "+CLUSTER://"))
        return rlk_cli_usage("lock", "--redlock: RedLock needs independent standalone servers, "
                             "not a Redis Cluster; on a cluster use a plain lock "
                             "(rlk lock NAME --url redis+cluster://...; docs/cluster.md)");
    urls = calloc((size_t)max, sizeof *urls);
    r->clients = calloc((size_t)max, sizeof *r->clients);
    if (!urls || !r->clients)
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    else if ((rc = redlock_split(r->o->redlock_urls, urls, &n)) < 0)
        for (int k = 0; k < n && rc < 0; k++)
            rc = redlock_connect(r, urls[k]);
    for (int k = 0; urls && k < max; k++)
        free(urls[k]);
    free(urls);
    if (rc < 0 && !(r->rl = rlk_redlock_new(r->clients, r->n, r->o->names[0], NULL)))
        rc = rlk_cli_usage("lock", "--redlock: cannot make a RedLock of '%s' on %d servers",
                           r->o->names[0], r->n);
    return rc;
}

static void redlock_close(redlock_run *r)
{
    rlk_redlock_free(r->rl);
    for (int k = 0; k < r->n; k++)
        rlk_free(r->clients[k]);
    free(r->clients);
}

/* ---------------------------------------------------------------- holding */

static void redlock_set_deadline(rlk_lc_hold *h, rlk_redlock *rl)
{
    h->deadline_ns = rlk_redlock_valid_until_ms(rl) * 1000000LL;
}

static int redlock_renew(rlk_lc_hold *h, char *why, size_t len)
{
    redlock_run *r = h->impl;
    long long validity;
    int rc = rlk_redlock_extend(r->rl, r->lease_ms, &validity);

    if (rc == RLK_OK) {
        redlock_set_deadline(h, r->rl);
        return 0;
    }
    if (rc == RLK_ERR_LOST || rc == RLK_ERR_NOT_OWNER) {
        snprintf(why, len, "extend failed: %s", rlk_redlock_errstr(r->rl));
        return -1;
    }
    snprintf(h->deadline_why, sizeof h->deadline_why, "its validity ran out; the last extend "
             "failed: %s", rlk_redlock_errstr(r->rl));
    return 1;
}

static int redlock_release(rlk_lc_hold *h)
{
    redlock_run *r = h->impl;

    return rlk_redlock_unlock(r->rl);
}

static const char *redlock_errstr(rlk_lc_hold *h)
{
    redlock_run *r = h->impl;

    return rlk_redlock_errstr(r->rl);
}

static int redlock_hold(redlock_run *r, const rlk_lc_session *s, const char *what)
{
    char token[REDLOCK_TOKEN_MAX];
    rlk_lc_hold h;
    int rc;

    rlk_lc_hold_init(&h, "%s", what);
    h.no_server_url = 1;
    h.release = redlock_release;
    h.errstr = redlock_errstr;
    h.impl = r;
    h.child_mask = &r->mask;
    redlock_set_deadline(&h, r->rl);
    snprintf(h.deadline_why, sizeof h.deadline_why, "its validity ran out (lease %lld ms)",
             r->lease_ms);
    if (r->o->c.lease_ms <= 0) {
        h.renew = redlock_renew;
        h.renew_period_ns = r->lease_ms * 1000000LL / 3;
    }
    if (rlk_redlock_token(r->rl, token, sizeof token) != RLK_OK ||
        rlk_lc_hold_setenv(&h, "RLK_LOCK_NAME", r->o->names[0]) < 0 ||
        rlk_lc_hold_setenv(&h, "RLK_LOCK_KIND", "redlock") < 0 ||
        rlk_lc_hold_setenv(&h, "RLK_LOCK_OWNER", token) < 0) {
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        rlk_redlock_unlock(r->rl);
    } else {
        rc = rlk_lc_hold_run(&h, s, &r->o->c);
    }
    rlk_lc_hold_free(&h);
    return rc;
}

/* ---------------------------------------------------------------- acquiring */

/* "URL: message; URL: message" for every server whose part in the last
 * attempt was an error (not acquired, not held elsewhere). 0 when none. */
static int redlock_failing(redlock_run *r, char *buf, size_t len)
{
    size_t used = 0;
    int count = 0;

    buf[0] = '\0';
    for (int i = 0; i < r->n && used + 1 < len; i++) {
        const char *msg = "";
        int st = rlk_redlock_server_status(r->rl, i, &msg), w;

        if (st == RLK_OK || st == RLK_ERR_BUSY)
            continue;
        w = snprintf(buf + used, len - used, "%s%s: %s", count ? "; " : "",
                     rlk_client_url(r->clients[i]), msg);
        if (w < 0)
            break;
        used += (size_t)w;
        count++;
    }
    return count;
}

/* Tells the user, once per outage, that the attempts fail with errors and
 * that rlk keeps trying (waiting, however long, stays silent otherwise). */
static void redlock_warn(redlock_run *r, const char *what, int forever)
{
    char failing[1500];
    int count = redlock_failing(r, failing, sizeof failing);

    if (count > 0)
        rlk_cli_fail(0, "%s: no quorum: %d of %d servers failing (%s); still trying%s",
                what, count, r->n, failing, forever ? " until a majority answers (no -w)" : "");
    else
        rlk_cli_fail(0, "%s: %s; still trying", what, rlk_redlock_errstr(r->rl));
    fflush(stderr);
}

/* Acquired with some servers failing (down, refusing the credentials): held on the quorum
 * all the same, but with less room: the lock is lost when fewer than a quorum can be
 * extended. Said once, with each failing server's cause. */
static void redlock_warn_minority(redlock_run *r, const char *what)
{
    char failing[1500];
    int count = redlock_failing(r, failing, sizeof failing);

    if (count > 0)
        rlk_cli_fail(0, "%s: warning: acquired on %d of %d servers, %d failing (%s); %d more "
                     "down and the lock is lost", what, r->n - count, r->n, count, failing,
                     r->n - count - (r->n / 2 + 1) + 1);
}

/* The wait of the next slice in ms; 0 when the wait (deadline_ns) is over. */
static long long redlock_slice_ms(long long deadline_ns)
{
    long long left;

    if (deadline_ns < 0)
        return RLK_LC_REDLOCK_SLICE_MS;
    left = (deadline_ns - rlk_lc_now_ns() + 999999) / 1000000;
    if (left <= 0)
        return 0;
    return left < RLK_LC_REDLOCK_SLICE_MS ? left : RLK_LC_REDLOCK_SLICE_MS;
}

/* The library waits for a quorum without a word, however long it takes.
 * rlk waits in slices of at most RLK_LC_REDLOCK_SLICE_MS instead, each one
 * rlk_redlock_try_lock, so that an outage (a slice ending in errors, not in
 * "held elsewhere") is reported while the wait goes on. A failed slice holds
 * nothing (the library released its token everywhere); the slice that
 * acquires keeps the lock with its validity on the handle
 * (rlk_redlock_valid_until_ms), so slicing changes nothing in RedLock's
 * guarantees. Returns the last slice's code. */
static int redlock_try_sliced(redlock_run *r, const char *what)
{
    long long wait_ms = r->o->c.wait_ms, validity, slice;
    long long deadline_ns = wait_ms < 0 ? -1 : rlk_lc_now_ns() + wait_ms * 1000000LL;
    int rc, warned = 0;

    if (wait_ms == 0)
        return rlk_redlock_try_lock(r->rl, 0, r->lease_ms, &validity);
    for (;;) {
        slice = redlock_slice_ms(deadline_ns);
        rc = rlk_redlock_try_lock(r->rl, slice, r->lease_ms, &validity);
        if (rc == RLK_OK || rc == RLK_ERR_ARG || rc == RLK_ERR_NOMEM || rc == RLK_ERR_INTERRUPTED)
            break;
        if (rc == RLK_ERR_BUSY && warned) {
            rlk_cli_fail(0, "%s: a majority of servers answers again; the lock is held "
                    "elsewhere, still waiting", what);
            warned = 0;
        }
        if (redlock_slice_ms(deadline_ns) == 0)
            break;
        if (rc != RLK_ERR_BUSY && !warned) {
            redlock_warn(r, what, deadline_ns < 0);
            warned = 1;
        }
    }
    if (rc == RLK_OK && warned)
        rlk_cli_fail(0, "%s: a majority of servers answers again; acquired", what);
    if (rc == RLK_OK)
        redlock_warn_minority(r, what);
    return rc;
}

static void redlock_give_back(void *arg)
{
    rlk_redlock_unlock(arg);
}

/* -1 when held (the forwarded signals still blocked, r->mask the command's mask:
 * rlk_lc_sigwatch), else the exit code. */
static int redlock_acquire(redlock_run *r, const char *what)
{
    rlk_lc_sigwatch sw;
    int rc, end;

    rlk_lc_sigwatch_start(&sw, r->clients, r->n);
    rc = redlock_try_sliced(r, what);
    r->mask = sw.old;
    if ((end = rlk_lc_sigwatch_end(&sw, rc, what, NULL, redlock_give_back, r->rl)) != -2)
        return end;
    if (rc == RLK_ERR_BUSY)
        return rlk_lc_not_acquired(&r->o->c, what, NULL);
    return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", rlk_redlock_errstr(r->rl));
}

int rlk_lc_lock_redlock(const rlk_lc_lock_opts *o)
{
    char what[RLK_LC_WHAT_MAX];
    rlk_lc_session s;
    rlk_nest nest;
    redlock_run r;
    int rc;

    snprintf(what, sizeof what, "redlock %s", o->names[0]);
    /* The nesting rule (nest.h): a RedLock does not re-enter; its parent holding NAME (as a
     * RedLock or anything else) would be waited for for ever. Refused before connecting. */
    rlk_nest_find("redlock", o->names, 1, &nest);
    if (nest.found && !nest.same)
        return rlk_nest_refuse_other(what, &nest);
    if (nest.found)
        return rlk_nest_refuse_same(what, &nest, "a RedLock is not reentrant: this rlk would "
                                    "wait for its own parent for ever");
    if ((rc = rlk_lc_session_open(&s)) >= 0)
        return rc;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.lease_ms = o->c.lease_ms > 0 ? o->c.lease_ms : rlk_lc_renewed_lease(&o->c);
    if ((rc = redlock_open(&r)) < 0 && (rc = redlock_acquire(&r, what)) < 0)
        rc = redlock_hold(&r, &s, what);
    redlock_close(&r);
    rlk_lc_session_close(&s);
    return rc;
}
