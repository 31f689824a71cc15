/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_fastmulti.c - rlk fastmulti GROUP VALUE... [OPTIONS] -- COMMAND [ARGS...]
 *
 * Runs COMMAND while holding every VALUE of the group GROUP at once:
 * Redisson's faster MultiLock (getMultiLock(group, values);
 * docs/locks/fastmulti.md), the values of one group kept in one hash and
 * taken, all or none, by one script call. A subcommand of its own rather
 * than an option of `rlk lock`: it takes one group and many values where
 * `rlk lock` takes lock names. Waiting, leases, the watchdog, signals and a
 * lost hold are as for `rlk lock` (lock_hold.c).
 */
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "kinds/names.h"
#include "lock_cli.h"
#include "nest.h"
#include "wait_report.h"

#define FM_VALUES_MAX 10000
#define FM_OWNER_MAX 1100

typedef struct fm_opts {
    rlk_lc_opts c;
    const char *group;
    const char **values;
    int nvalues;
} fm_opts;

typedef struct fm_run {
    rlk_client *c;
    rlk_fastmulti *m;
    const char *inherited;      /* the enclosing rlk fastmulti's holder id (nest.h), else NULL */
    const fm_opts *o;           /* while held: the values and their holder id (the check) */
    const char *owner;
} fm_run;

/* ---------------------------------------------------------------- parsing */

/* One argument before "--". -1 to go on, or an exit code. */
static int fm_arg(int argc, char **argv, int *i, fm_opts *o)
{
    const char *arg = argv[*i];
    int got;

    if (rlk_cli_is_help(arg)) {
        fputs(rlk_cli_help_fastmulti, stdout);
        return RLK_EXIT_OK;
    }
    if (arg[0] == '-' && arg[1] != '\0') {
        if ((got = rlk_lc_common_opt("fastmulti", argc, argv, i, &o->c, 1)) < 0)
            return RLK_EXIT_USAGE;
        return got > 0 ? -1 : rlk_cli_unknown_option("fastmulti", arg);
    }
    if (!o->group) {
        if (arg[0] == '\0')
            return rlk_cli_usage("fastmulti", "the group name must not be empty");
        o->group = arg;
    } else {
        if (arg[0] == '\0' || strlen(arg) > 1024 || strchr(arg, ':'))
            return rlk_cli_usage("fastmulti", "value '%s': 1..1024 bytes without ':'", arg);
        for (int k = 0; k < o->nvalues; k++)
            if (strcmp(o->values[k], arg) == 0)
                return rlk_cli_usage("fastmulti", "value '%s' is given twice", arg);
        if (o->nvalues >= FM_VALUES_MAX)
            return rlk_cli_usage("fastmulti", "more than %d values", FM_VALUES_MAX);
        o->values[o->nvalues++] = arg;
    }
    (*i)++;
    return -1;
}

static int fm_parse(int argc, char **argv, fm_opts *o)
{
    char synopsis[300];
    int i = 1, rc;

    while (i < argc && strcmp(argv[i], "--") != 0)
        if ((rc = fm_arg(argc, argv, &i, o)) >= 0)
            return rc;
    if (!o->group)
        return rlk_cli_usage("fastmulti", "missing the GROUP and its VALUEs");
    if (o->nvalues == 0)
        return rlk_cli_usage("fastmulti", "missing the VALUEs of group %s to hold", o->group);
    snprintf(synopsis, sizeof synopsis, "rlk fastmulti %s %s%s", o->group, o->values[0],
             o->nvalues > 1 ? " ..." : "");
    return rlk_lc_take_command("fastmulti", argc, argv, i, &o->c, synopsis);
}

/* ---------------------------------------------------------------- holding */

static int fm_release(rlk_lc_hold *h)
{
    fm_run *r = h->impl;

    return rlk_fastmulti_unlock(r->m);
}

static const char *fm_errstr(rlk_lc_hold *h)
{
    const fm_run *r = h->impl;

    return rlk_errstr(r->c);
}

static void fm_give_back(void *arg)
{
    fm_run *r = arg;

    rlk_fastmulti_unlock(r->m);
}

/* The hold checker's question (lock_check.c): is every value (the first
 * RLK_LC_CHECK_FIELDS_MAX) still this holder's? A force unlock removes them all. */
static int fm_check(rlk_lc_hold *h)
{
    const fm_run *r = h->impl;
    int n = r->o->nvalues < RLK_LC_CHECK_FIELDS_MAX ? r->o->nvalues : RLK_LC_CHECK_FIELDS_MAX;

    return rlk_lc_check_fields(r->c, r->o->group, r->o->values, n, r->owner);
}

/* RLK_LOCK_VALUES: the values separated by spaces; 0 or -1 (out of memory). */
static int fm_env(rlk_lc_hold *h, const fm_opts *o, const char *owner)
{
    size_t len = 1;
    char *values;
    int rc = -1;

    for (int k = 0; k < o->nvalues; k++)
        len += strlen(o->values[k]) + 1;
    if (!(values = calloc(1, len)))
        return -1;
    for (int k = 0; k < o->nvalues; k++) {
        if (k)
            strcat(values, " ");
        strcat(values, o->values[k]);
    }
    if (rlk_lc_hold_setenv(h, "RLK_LOCK_NAME", o->group) == 0 &&
        rlk_lc_hold_setenv(h, "RLK_LOCK_KIND", "fastmulti") == 0 &&
        rlk_lc_hold_setenv(h, "RLK_LOCK_VALUES", values) == 0 &&
        rlk_lc_hold_setenv(h, "RLK_LOCK_OWNER", owner) == 0)
        rc = 0;
    free(values);
    return rc;
}

/* The shape refusal of fastmulti/acquire (lib/fm_shape.lua) counts the hash's fields ("field
 * 3 is neither ..."): the field's name is what an operator looks for. Read back (HGETALL gives
 * the fields in the script's order while the hash is unchanged) and named beside its number;
 * any other error as the library says it. */
static int fm_fail(fm_run *r, int rc, const char *group, const char *what)
{
    const char *e = rlk_errstr(r->c), *at = strstr(e, "(field ");
    const char *argv[2] = {"HGETALL", group};
    redisReply *all = NULL;
    char msg[1200];
    int field = 0, n = 0, code;

    if (!at || !strstr(e, "RLK_WRONGTYPE") || sscanf(at, "(field %d is%n", &field, &n) != 1 ||
        n == 0 || field < 1)
        return rlk_lc_fail(r->c, rc, what);
    snprintf(msg, sizeof msg, "%s", e);
    if (rlk_command(r->c, 2, argv, NULL, &all) == RLK_OK && all->type == REDIS_REPLY_ARRAY &&
        (size_t)field * 2 <= all->elements &&
        all->element[(field - 1) * 2]->type == REDIS_REPLY_STRING) {
        const redisReply *f = all->element[(field - 1) * 2];

        /* (the whole line is escaped when printed: rlk_cli_fail) */
        snprintf(msg, sizeof msg, "%.*s(field %d, '%.*s', is%s", (int)(at - e), e, field,
                 (int)(f->len < 200 ? f->len : 200), f->str, at + n);
    }
    if (all)
        freeReplyObject(all);
    code = rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s", what, msg);
    return code;
}

static int fm_with_client(fm_run *r, const fm_opts *o, const rlk_lc_session *s)
{
    char what[RLK_LC_WHAT_MAX], owner[FM_OWNER_MAX];
    long long acquired_ns;
    rlk_lc_sigwatch sw;
    rlk_lc_hold h;
    sigset_t mask;
    int rc, end;

    snprintf(what, sizeof what, "group %s (%d value%s)", o->group, o->nvalues,
             o->nvalues == 1 ? "" : "s");
    if (!(r->m = rlk_fastmulti_new(r->c, o->group, o->values, (size_t)o->nvalues)) ||
        (r->inherited && rlk_fastmulti_set_owner(r->m, r->inherited) != RLK_OK) ||
        rlk_fastmulti_owner(r->m, owner, sizeof owner) != RLK_OK)
        return rlk_lc_fail(r->c, rlk_err(r->c), what);
    rlk_wr_start(what, o->c.url, o->group);    /* --verbose: who holds values while it waits */
    rlk_lc_sigwatch_start(&sw, &r->c, 1);
    rc = rlk_fastmulti_try_lock(r->m, o->c.wait_ms, o->c.lease_ms);
    rlk_wr_stop(rc == RLK_OK);                  /* taken: "acquired after N s" */
    mask = sw.old;
    end = rlk_lc_sigwatch_end(&sw, rc, what, NULL, fm_give_back, r);
    if (end != -2 && end >= 0)
        return end;
    if (end == -2)
        return rc == RLK_ERR_BUSY ? rlk_lc_not_acquired(&o->c, what, NULL)
                                  : fm_fail(r, rc, o->group, what);
    acquired_ns = rlk_lc_now_ns();
    rlk_lc_hold_init(&h, "%s", what);
    h.release = fm_release;
    h.errstr = fm_errstr;
    h.impl = r;
    h.client = r->c;
    h.child_mask = &mask;
    if (o->c.lease_ms > 0)
        rlk_lc_hold_fixed_lease(&h, acquired_ns, o->c.lease_ms);
    /* A force unlock publishes on the group's channel, where the watchdog does not listen for
     * this kind: the checker does, for a renewed lease too; a fixed one also every third of
     * it (nothing renews it). */
    r->o = o;
    r->owner = owner;
    h.check = fm_check;
    h.check_channel = rlk_names_channel(rlk_names_kind_find("fastmulti"), o->group);
    h.check_period_ns = o->c.lease_ms > 0 ? o->c.lease_ms / 3 * RLK_NS_PER_MS : 0;
    if (fm_env(&h, o, owner) < 0) {
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        rlk_fastmulti_unlock(r->m);
    } else {
        rc = rlk_lc_hold_run(&h, s, &o->c);
    }
    rlk_lc_hold_free(&h);
    return rc;
}

/* The nesting rule (nest.h): an enclosing rlk fastmulti of GROUP lends its holder id (its
 * values re-enter, the others are taken for it); any other kind holding GROUP: refused before
 * connecting. -1 to go on, else the exit code. */
static int fm_nest(const fm_opts *o, fm_run *r)
{
    char what[RLK_LC_WHAT_MAX];
    rlk_nest nest;

    rlk_nest_find("fastmulti", &o->group, 1, &nest);
    if (!nest.found)
        return -1;
    if (nest.same) {
        r->inherited = nest.owner;
        return -1;
    }
    snprintf(what, sizeof what, "group %s", o->group);
    return rlk_nest_refuse_other(what, &nest);
}

static int fastmulti_run(int argc, char **argv)
{
    rlk_lc_session s;
    rlk_lc_sink sink;
    fm_opts o;
    fm_run r;
    int rc;

    memset(&o, 0, sizeof o);
    memset(&r, 0, sizeof r);
    rlk_lc_opts_init(&o.c);
    if (!(o.values = calloc((size_t)argc + 1, sizeof *o.values)))
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    if ((rc = fm_parse(argc, argv, &o)) < 0 && (rc = fm_nest(&o, &r)) < 0 &&
        (rc = rlk_lc_session_open(&s)) < 0) {
        r.c = rlk_lc_connect_margin(o.c.url, o.c.wd_lease_ms, o.c.grace_ms + o.c.margin_ms, &rc);
        if (r.c) {
            sink.name = o.group;
            sink.fd = s.lost_wr;
            rlk_set_lost_callback(r.c, rlk_lc_lost_cb, &sink);
            rc = fm_with_client(&r, &o, &s);
            rlk_fastmulti_free(r.m);
            rlk_free(r.c);      /* stops the watchdog: no callback after this */
        }
        rlk_lc_session_close(&s);
    }
    free(o.values);
    return rc;
}

const rlk_cli_command rlk_cmd_fastmulti = {
    "fastmulti",
    "faster MultiLock: run a command holding many values of one group (rlk fastmulti GROUP VALUE... -- CMD)",
    rlk_cli_help_fastmulti,
    fastmulti_run,
};
