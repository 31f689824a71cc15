/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fam.c - what every kind built on the lock runtime shares (see
 * fam.h): Redisson's key and channel names, the handle's common
 * part, a lock handle's holder id, argument checks, and integer replies.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/slot.h"
#include "runtime/fam.h"
#include "runtime/lq.h"
#include "runtime/rt.h"

/* ---------------------------------------------------------------- names */

static char *rlk_fam_concat(const char *a, const char *b, const char *c, const char *d)
{
    const char *part[4] = {a, b, c, d};
    size_t len[4], n = 0;
    char *s;

    for (int i = 0; i < 4; i++)
        n += len[i] = strlen(part[i]);
    if (!(s = malloc(n + 1)))      /* a handle builds its keys, a call what it lacks: no printf */
        return NULL;
    for (int i = 0, at = 0; i < 4; at += (int)len[i], i++)
        memcpy(s + at, part[i], len[i]);
    s[n] = '\0';
    return s;
}

static int rlk_fam_tagged(const char *name)
{
    return strchr(name, '{') != NULL;
}

char *rlk_fam_prefix_name(const char *prefix, const char *name)
{
    if (rlk_fam_tagged(name))
        return rlk_fam_concat(prefix, ":", name, "");
    return rlk_fam_concat(prefix, ":{", name, "}");
}

char *rlk_fam_suffix_name(const char *name, const char *suffix)
{
    if (rlk_fam_tagged(name))
        return rlk_fam_concat(name, ":", suffix, "");
    return rlk_fam_concat("{", name, "}:", suffix);
}

char *rlk_fam_tag(const char *name)
{
    if (rlk_fam_tagged(name))
        return rlk_fam_concat(name, "", "", "");
    return rlk_fam_concat("{", name, "}", "");
}

char *rlk_fam_braced_name(const char *prefix, const char *name)
{
    /* Redisson's latch channel braces every name, a tagged one too (it then
     * hashes on "<name up to its first '}'>", away from the name's own slot:
     * kinds/latch.c refuses such a name on a cluster). The same text on every
     * deployment is what lets an rlk latch and a Redisson latch hear each other. */
    return rlk_fam_concat(prefix, "{", name, "}");
}

/* ---------------------------------------------------------------- handles */

static void *rlk_fam_nomem(rlk_client *c, const rlk_fam_kind *k, const char *name)
{
    rlk_set_error(c, RLK_ERR_NOMEM, "%s %s: out of memory", k->fn, name);
    return NULL;
}

void *rlk_fam_new(rlk_client *c, const char *name, size_t size, const rlk_fam_kind *k)
{
    rlk_fam_base *b;
    char why[256];

    if (!c)
        return NULL;
    if (!name || !*name) {
        rlk_set_error(c, RLK_ERR_ARG, "%s: the %s name must not be empty", k->fn, k->noun);
        return NULL;
    }
    if (rlk_name_check(name, why, sizeof why) != 0) {
        rlk_set_error(c, RLK_ERR_ARG, "%s '%s': %s", k->fn, name, why);
        return NULL;
    }
    b = calloc(1, size);
    if (!b || !(b->rt = rlk_rt_get(c))) {
        free(b);
        return rlk_fam_nomem(c, k, name);
    }
    pthread_mutex_init(&b->id.mu, NULL);   /* b->id.fixed NULL: the thread's id */
    b->c = c;
    b->name = strdup(name);
    b->channel = k->channel_of(k->channel_prefix, name);
    if (!b->name || !b->channel) {
        rlk_fam_free(b);
        return rlk_fam_nomem(c, k, name);
    }
    b->kind = k;
    return b;
}

void *rlk_fam_made(void *handle, int ok)
{
    rlk_fam_base *b = handle;

    if (ok)
        return handle;
    rlk_fam_nomem(b->c, b->kind, b->name);
    rlk_fam_free(b);
    return NULL;
}

void rlk_fam_free(void *handle)
{
    rlk_fam_base *b = handle;

    if (!b)
        return;
    if (b->kind && b->kind->fini)
        b->kind->fini(b);
    pthread_mutex_destroy(&b->id.mu);
    free(b->id.fixed);
    rlk_lq_put(b->q);
    free(b->wake);
    for (int i = 0; i < RLK_FAM_KEYS; i++)
        free(b->key[i]);
    free(b->channel);
    free(b->name);
    free(b);
}

/* ---------------------------------------------------------------- holder ids */

int rlk_fam_id_set(rlk_client *c, rlk_fam_id *id, const char *owner, int rw, const char *what)
{
    char *copy = NULL;

    if (owner) {
        size_t len = strlen(owner);

        if (len < 1 || len > RLK_OWNER_MAX)
            return rlk_set_error(c, RLK_ERR_ARG, "%s: owner must be 1..%d bytes", what,
                                 RLK_OWNER_MAX);
        if (rw &&
            (strcmp(owner, "mode") == 0 || (len >= 6 && strcmp(owner + len - 6, ":write") == 0)))
            return rlk_set_error(c, RLK_ERR_ARG, "%s: owner must not be 'mode' or end in ':write'",
                                 what);
        if (!(copy = strdup(owner)))
            return rlk_set_error(c, RLK_ERR_NOMEM, "%s: out of memory", what);
    }
    pthread_mutex_lock(&id->mu);
    free(id->fixed);
    id->fixed = copy;
    atomic_store(&id->given, owner != NULL);
    pthread_mutex_unlock(&id->mu);
    return RLK_OK;
}

int rlk_fam_id_given(const rlk_fam_id *id)
{
    return atomic_load(&id->given);
}

int rlk_fam_id_copy(const rlk_rt *rt, rlk_fam_id *id, char *buf, size_t len)
{
    int rc = RLK_OK;

    pthread_mutex_lock(&id->mu);
    if (id->fixed) {
        if ((size_t)snprintf(buf, len, "%s", id->fixed) >= len)
            rc = RLK_ERR_ARG;
    } else {
        rc = rlk_rt_thread_owner(rt, buf, len);
    }
    pthread_mutex_unlock(&id->mu);
    return rc;
}

int rlk_fam_id_get(rlk_client *c, const rlk_rt *rt, rlk_fam_id *id, char *buf, size_t len,
                   const char *what)
{
    int rc;

    if (!buf || len == 0)
        return rlk_set_error(c, RLK_ERR_ARG, "%s: no buffer for the owner", what);
    if ((rc = rlk_fam_id_copy(rt, id, buf, len)) != RLK_OK)
        return rlk_set_error(c, rc, "%s: buffer of %zu bytes too short for the owner", what, len);
    return RLK_OK;
}

/* ---------------------------------------------------------------- arguments */

int rlk_fam_lease(rlk_client *c, const char *what, const char *name, long long lease_ms,
                  long long *lease, int *watchdog)
{
    if (lease_ms > RLK_NUM_MAX)
        return rlk_set_error(c, RLK_ERR_ARG, "%s %s: lease %lld ms is above %lld ms", what, name,
                             lease_ms, RLK_NUM_MAX);
    *watchdog = lease_ms <= 0;
    *lease = *watchdog ? c->watchdog_lease_ms : lease_ms;
    if (*lease <= 0)
        *lease = RLK_DEFAULT_WATCHDOG_LEASE_MS;
    if (*lease > RLK_NUM_MAX)
        *lease = RLK_NUM_MAX;
    return RLK_OK;
}

int rlk_fam_range_text(char *buf, size_t len, const char *what, const char *name,
                       const char *field, long long v, long long lo, long long hi)
{
    if (v >= lo && v <= hi)
        return RLK_OK;
    snprintf(buf, len, "%s%s%s: %s %lld is not in %lld..%lld", what, name ? " " : "",
             name ? name : "", field, v, lo, hi);
    return RLK_ERR_ARG;
}

int rlk_fam_check_range(rlk_client *c, const char *what, const char *name, const char *field,
                        long long v, long long lo, long long hi)
{
    char msg[RLK_ERRSTR_MAX];

    if (rlk_fam_range_text(msg, sizeof msg, what, name, field, v, lo, hi) == RLK_OK)
        return RLK_OK;
    return rlk_set_error(c, RLK_ERR_ARG, "%s", msg);
}

/* ---------------------------------------------------------------- kept errors */

void rlk_fam_err_keep(rlk_client *c, rlk_fam_err *e)
{
    e->err = rlk_err(c);
    snprintf(e->msg, sizeof e->msg, "%s", rlk_errstr(c));
}

int rlk_fam_err_put(rlk_client *c, const rlk_fam_err *e, int rc)
{
    char why[RLK_ERRSTR_MAX];

    if (rc == RLK_OK)
        return rlk_set_error(c, e->err, "%s", e->msg);
    snprintf(why, sizeof why, "%s", rlk_errstr(c));
    return rlk_set_error(c, e->err, "%s; outcome unknown (%s)", e->msg, why);
}

/* ---------------------------------------------------------------- integer replies */

int rlk_fam_query(rlk_client *c, const char *what, int argc, const char **argv,
                  long long nil_value, long long *out)
{
    redisReply *r = NULL;
    int rc = rlk_command(c, argc, argv, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER) {
        *out = r->integer;
    } else if (r->type == REDIS_REPLY_NIL) {
        *out = nil_value;
    } else if (r->type == REDIS_REPLY_STRING) {
        char *end;

        *out = strtoll(r->str, &end, 10);
        if (end == r->str || *end)
            rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: not a number", argv[0], what);
    } else {
        rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: reply type %d", argv[0], what, r->type);
    }
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- replica acknowledgement */

/* "only k of N replica(s) acknowledged within T ms (WAIT)", or why it is unknown. */
static void rlk_fam_acks_text(const rlk_acks *a, char *buf, size_t len)
{
    if (a->acks >= 0)
        snprintf(buf, len, "only %d of %d replica%s acknowledged within %lld ms (WAIT)", a->acks,
                 a->wanted, a->wanted == 1 ? "" : "s", a->timeout_ms);
    else
        snprintf(buf, len, "whether %d replica%s acknowledged is unknown (%s)", a->wanted,
                 a->wanted == 1 ? "" : "s", a->why);
}

int rlk_fam_acks_acquired(rlk_client *c, const char *what, const char *name,
                          int (*undo)(void *arg), void *arg)
{
    char text[256], why[RLK_ERRSTR_MAX];
    rlk_acks a;
    int off, undone;

    if (!rlk_conn_acks_short(&a))
        return RLK_OK;
    rlk_fam_acks_text(&a, text, sizeof text);
    /* The rollback needs no acknowledgement: a replica that has the
     * acquisition gets the release after it, in the same stream. */
    off = rlk_conn_acks_off(1);
    undone = undo(arg);
    rlk_conn_acks_off(off);
    if (undone == RLK_OK)
        return rlk_set_error(c, RLK_ERR_NOREPLICAS, "%s %s: %s; rolled back", what, name, text);
    snprintf(why, sizeof why, "%s", rlk_errstr(c));
    return rlk_set_error(c, RLK_ERR_NOREPLICAS, "%s %s: %s; the rollback failed too (%s): the "
                         "hold stays until its lease runs out", what, name, text, why);
}

int rlk_fam_acks_done(rlk_client *c, const char *what, const char *name, const char *done)
{
    char text[256];
    rlk_acks a;

    if (!rlk_conn_acks_short(&a))
        return RLK_OK;
    rlk_fam_acks_text(&a, text, sizeof text);
    return rlk_set_error(c, RLK_ERR_NOREPLICAS, "%s %s: %s, but %s", what, name, done, text);
}
