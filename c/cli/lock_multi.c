/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_multi.c - `rlk lock --all MEMBER... -- COMMAND`: several reentrant
 * locks, possibly on several servers, taken all or none (the library's
 * MultiLock), held while the command runs.
 *
 * A MEMBER is NAME (on the command's server: --url, the global --url,
 * $RLK_URL, the default) or URL#NAME when it starts with redis://,
 * redis+cluster:// or unix:// (in any case): it is split at the first '#', a character no URL rlk accepts
 * contains (no fragments; a password writes it %23). One client per
 * distinct URL; every member has the same holder id (the first member's
 * client uuid and this thread), so RLK_LOCK_OWNER is one value. Any
 * member reported lost by its client's watchdog = the lock is lost.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lock_cli.h"
#include "nest.h"

#define MULTI_OWNER_MAX 1100

typedef struct multi_run {
    const rlk_lc_lock_opts *o;
    rlk_multilock *m;
    rlk_client **clients;       /* one per distinct URL */
    char **urls;                /* the URL each client was opened with (NULL: default) */
    int nclients;
    rlk_lc_sink sink;
    const char *inherited;      /* the enclosing rlk's holder id (nest.h: it holds a member as a
                                   reentrant lock or --all), else NULL */
    pthread_mutex_t mu;
    char lost_name[256];        /* the first member reported lost */
    sigset_t mask;              /* the signal mask before the wait: the command's */
} multi_run;

static void multi_lost_cb(const char *name, const char *owner, int reason, void *userdata);

/* ---------------------------------------------------------------- members */

static int multi_is_url(const char *arg)
{
    return strncasecmp(arg, "redis://", 8) == 0 || strncasecmp(arg, "rediss://", 9) == 0 ||
           strncasecmp(arg, "unix://", 7) == 0 || strncasecmp(arg, "redis+cluster://", 16) == 0;
}

/* Splits a member: *url (malloc'd, or NULL for the default) and *name.
 * -1 on success, else an exit code. */
static int multi_split(const char *arg, char **url, const char **name)
{
    const char *hash = strchr(arg, '#');

    *url = NULL;
    *name = arg;
    if (!multi_is_url(arg))
        return -1;
    if (!hash)
        return rlk_cli_usage("lock", "member '%s' is a URL without a lock name: write "
                             "URL#NAME", arg);
    if (hash[1] == '\0')
        return rlk_cli_usage("lock", "member '%s': the lock name after '#' is empty", arg);
    if (!(*url = strndup(arg, (size_t)(hash - arg))))
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    *name = hash + 1;
    return -1;
}

static int multi_same_url(const char *a, const char *b)
{
    return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The client for url, connected on first use. NULL after printing the error. */
static rlk_client *multi_client(multi_run *r, char *url, int *rc)
{
    rlk_client *c;

    for (int k = 0; k < r->nclients; k++) {
        if (multi_same_url(r->urls[k], url)) {
            free(url);
            return r->clients[k];
        }
    }
    if (!(c = rlk_lc_connect_from(url ? url : r->o->c.url, url ? "an --all member" : NULL,
                                  r->o->c.wd_lease_ms, r->o->c.grace_ms + r->o->c.margin_ms,
                                  rc))) {
        free(url);
        return NULL;
    }
    rlk_set_lost_callback(c, multi_lost_cb, r);
    r->clients[r->nclients] = c;
    r->urls[r->nclients++] = url;
    return c;
}

/* Adds every member. -1 on success, else an exit code. */
static int multi_add_all(multi_run *r)
{
    for (int k = 0; k < r->o->nnames; k++) {
        const char *name;
        char *url;
        rlk_client *c;
        int rc = multi_split(r->o->names[k], &url, &name);

        if (rc >= 0)
            return rc;
        if (!(c = multi_client(r, url, &rc)))
            return rc;
        rc = rlk_multilock_add(r->m, c, name);
        if (rc != RLK_OK)
            return rlk_cli_fail(rc == RLK_ERR_ARG ? RLK_EXIT_USAGE : rlk_cli_exit_code(rc),
                                "lock --all: %s", rlk_multilock_errstr(r->m));
    }
    return -1;
}

/* ---------------------------------------------------------------- text */

/* "locks a, b, c" (cut short when long). */
static void multi_what(const multi_run *r, char *buf, size_t len)
{
    size_t used = (size_t)snprintf(buf, len, "locks");

    for (int k = 0; k < r->o->nnames && used < len; k++)
        used += (size_t)snprintf(buf + used, len - used, "%s %s", k ? "," : "",
                                 rlk_multilock_member_name(r->m, k));
}

/* RLK_LOCK_NAME: the members' names separated by spaces. NULL: out of memory. */
static char *multi_names(const multi_run *r)
{
    size_t len = 1;
    char *s;

    for (int k = 0; k < r->o->nnames; k++)
        len += strlen(rlk_multilock_member_name(r->m, k)) + 1;
    if (!(s = calloc(1, len)))
        return NULL;
    for (int k = 0; k < r->o->nnames; k++) {
        if (k)
            strcat(s, " ");
        strcat(s, rlk_multilock_member_name(r->m, k));
    }
    return s;
}

/* ---------------------------------------------------------------- lost members */

/* On a watchdog thread: remembers which member went first, then reports. */
static void multi_lost_cb(const char *name, const char *owner, int reason, void *userdata)
{
    multi_run *r = userdata;

    pthread_mutex_lock(&r->mu);
    if (r->lost_name[0] == '\0')
        snprintf(r->lost_name, sizeof r->lost_name, "%s", name);
    pthread_mutex_unlock(&r->mu);
    rlk_lc_lost_cb(name, owner, reason, &r->sink);
}

static void multi_describe_loss(rlk_lc_hold *h, char *why, size_t len)
{
    multi_run *r = h->impl;
    size_t used = strlen(why);

    pthread_mutex_lock(&r->mu);
    if (r->lost_name[0] != '\0' && used < len)
        snprintf(why + used, len - used, ": member %s", r->lost_name);
    pthread_mutex_unlock(&r->mu);
}

/* ---------------------------------------------------------------- holding */

static int multi_release(rlk_lc_hold *h)
{
    const multi_run *r = h->impl;

    return rlk_multilock_unlock(r->m);
}

/* The library's lease of the whole hold: its first member to end (rlk_lc_hold.lease). */
static int multi_lease(rlk_lc_hold *h, long long *start_ns, long long *deadline_ns)
{
    const multi_run *r = h->impl;

    return rlk_multilock_lease(r->m, start_ns, deadline_ns);
}

static const char *multi_errstr(rlk_lc_hold *h)
{
    const multi_run *r = h->impl;

    return rlk_multilock_errstr(r->m);
}

static void multi_give_back(void *arg)
{
    rlk_multilock_unlock(arg);
}

/* -1 when every member is held (the forwarded signals still blocked, r->mask the command's
 * mask: rlk_lc_sigwatch), else the exit code. */
static int multi_acquire(multi_run *r, const char *what)
{
    rlk_lc_sigwatch sw;
    int rc, failed, end;
    char detail[600];

    rlk_lc_sigwatch_start(&sw, r->clients, r->nclients);
    rc = rlk_multilock_try_lock(r->m, r->o->c.wait_ms, r->o->c.lease_ms);
    r->mask = sw.old;
    if ((end = rlk_lc_sigwatch_end(&sw, rc, what, NULL, multi_give_back, r->m)) != -2)
        return end;
    failed = rlk_multilock_failed_member(r->m);
    if (rc == RLK_ERR_NOREPLICAS) {
        char said[800];

        rlk_lc_replicas_text(rlk_multilock_errstr(r->m), said, sizeof said);
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s", what, said);
    }
    if (rc != RLK_ERR_BUSY)
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s", what, rlk_multilock_errstr(r->m));
    if (failed < 0)
        return rlk_lc_not_acquired(&r->o->c, what, NULL);
    snprintf(detail, sizeof detail, "%s on %s", rlk_multilock_member_name(r->m, failed),
             rlk_multilock_member_url(r->m, failed));
    return rlk_lc_not_acquired(&r->o->c, what, detail);
}

static int multi_env(rlk_lc_hold *h, const multi_run *r, const char *owner)
{
    char *names = multi_names(r);
    int rc = -1;

    if (names && rlk_lc_hold_setenv(h, "RLK_LOCK_NAME", names) == 0 &&
        rlk_lc_hold_setenv(h, "RLK_LOCK_KIND", "multi") == 0 &&
        rlk_lc_hold_setenv(h, "RLK_LOCK_OWNER", owner) == 0)
        rc = 0;
    free(names);
    return rc;
}

static int multi_hold(multi_run *r, const rlk_lc_session *s, const char *what, const char *owner)
{
    long long acquired_ns = rlk_lc_now_ns();
    rlk_lc_hold h;
    int rc;

    rlk_lc_hold_init(&h, "%s", what);
    h.release = multi_release;
    h.errstr = multi_errstr;
    h.describe_loss = multi_describe_loss;
    h.impl = r;
    h.child_mask = &r->mask;
    h.lease = multi_lease;
    if (r->o->c.lease_ms > 0)
        rlk_lc_hold_lease(&h, acquired_ns, r->o->c.lease_ms);
    if (multi_env(&h, r, owner) < 0) {
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        rlk_multilock_unlock(r->m);
    } else {
        rc = rlk_lc_hold_run(&h, s, &r->o->c);
    }
    rlk_lc_hold_free(&h);
    return rc;
}

/* One holder id for every member: the first member's, for this thread; nested in an rlk that
 * holds a member as a reentrant lock, that rlk's (its members re-enter). */
static int multi_owner(multi_run *r, char *owner, size_t len)
{
    int rc = RLK_OK;

    if (r->inherited)
        snprintf(owner, len, "%s", r->inherited);
    else
        rc = rlk_lock_owner(rlk_multilock_member_lock(r->m, 0), owner, len);

    if (rc == RLK_OK)
        rc = rlk_multilock_set_owner(r->m, owner);
    if (rc != RLK_OK)
        return rlk_cli_fail(rlk_cli_exit_code(rc), "lock --all: %s",
                            rlk_errstr(rlk_multilock_member_client(r->m, 0)));
    return -1;
}

static int multi_locked(multi_run *r, const rlk_lc_session *s)
{
    char what[RLK_LC_WHAT_MAX], owner[MULTI_OWNER_MAX];
    int rc;

    if ((rc = multi_add_all(r)) >= 0 || (rc = multi_owner(r, owner, sizeof owner)) >= 0)
        return rc;
    multi_what(r, what, sizeof what);
    if ((rc = multi_acquire(r, what)) >= 0)
        return rc;
    return multi_hold(r, s, what, owner);
}

static void multi_close(multi_run *r)
{
    rlk_multilock_free(r->m);
    for (int k = 0; k < r->nclients; k++) {
        rlk_free(r->clients[k]);    /* stops its watchdog: no callback after this */
        free(r->urls[k]);
    }
    free(r->clients);
    free(r->urls);
    pthread_mutex_destroy(&r->mu);
}

/* The nesting rule (nest.h) for the members' names: -1 to go on (*inherited: the enclosing
 * rlk's holder id when it holds a member as a reentrant lock), else exit 2 after the refusal. */
static int multi_nest(const rlk_lc_lock_opts *o, const char **inherited)
{
    const char **names = calloc((size_t)o->nnames, sizeof *names);
    char what[RLK_LC_WHAT_MAX];
    rlk_nest nest;

    *inherited = NULL;
    if (!names)
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    for (int k = 0; k < o->nnames; k++) {
        const char *hash = strchr(o->names[k], '#');

        names[k] = multi_is_url(o->names[k]) && hash ? hash + 1 : o->names[k];
    }
    rlk_nest_find("multi", names, o->nnames, &nest);
    free(names);
    if (!nest.found)
        return -1;
    if (nest.same) {
        *inherited = nest.owner;
        return -1;
    }
    snprintf(what, sizeof what, "locks %s%s", o->names[0], o->nnames > 1 ? ", ..." : "");
    return rlk_nest_refuse_other(what, &nest);
}

int rlk_lc_lock_all(const rlk_lc_lock_opts *o)
{
    const char *inherited;
    rlk_lc_session s;
    multi_run r;
    int rc;

    if ((rc = multi_nest(o, &inherited)) >= 0)
        return rc;
    if ((rc = rlk_lc_session_open(&s)) >= 0)
        return rc;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.inherited = inherited;
    r.sink.fd = s.lost_wr;
    pthread_mutex_init(&r.mu, NULL);
    r.m = rlk_multilock_new();
    r.clients = calloc((size_t)o->nnames, sizeof *r.clients);
    r.urls = calloc((size_t)o->nnames, sizeof *r.urls);
    if (!r.m || !r.clients || !r.urls)
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    else
        rc = multi_locked(&r, &s);
    multi_close(&r);
    rlk_lc_session_close(&s);
    return rc;
}
