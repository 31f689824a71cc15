/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_elect.c - `rlk elect`: leader election (docs/elect.md).
 *
 *   rlk elect NAME [--value V] [--claim FENCE]... [OPTIONS] -- COMMAND...
 *                                                        run COMMAND only while leader
 *   rlk elect NAME --observe [--json] [--count N] [--timeout S]
 *
 * Running: campaigns (rlk_elect_campaign, waiting with pub/sub as a lock
 * does), then runs COMMAND with RLK_ELECT_NAME, RLK_ELECT_VALUE and
 * RLK_ELECT_TERM through the lock commands' hold (lock_hold.c, lock_child.c,
 * lock_watch.c): the same kill-on-loss (the watchdog's lost-lock callback,
 * a fixed lease's deadline), signal forwarding and exit codes as `rlk lock`.
 * When COMMAND ends, rlk resigns.
 *
 * Observing: one line per change (rlk_elect_leader, rlk_elect_wait_change):
 * the first read, then every change, until --count lines or --timeout.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "kinds/names.h"
#include "lock_cli.h"
#include "nest.h"
#include "wait_report.h"

#define ELECT_OWNER_MAX 1100

typedef struct elect_opts {
    rlk_lc_opts c;
    const char *name;
    const char *value;
    int observe;
    int json;
    long long count;            /* 0: no bound */
    long long timeout_ms;       /* -1: none */
} elect_opts;

/* ---------------------------------------------------------------- options */

static int elect_name_arg(elect_opts *o, const char *arg)
{
    if (o->name)
        return rlk_cli_usage("elect", "unexpected argument '%s': put '--' before the command "
                             "(rlk elect NAME -- COMMAND...)", arg);
    if (arg[0] == '\0')
        return rlk_cli_usage("elect", "the election name must not be empty");
    o->name = arg;
    return -1;
}

/* -1 to go on, else an exit code. */
static int elect_arg(int argc, char **argv, int *i, elect_opts *o)
{
    const char *arg = argv[*i], *v;
    int got;

    if (rlk_cli_is_help(arg)) {
        fputs(rlk_cli_help_elect, stdout);
        return RLK_EXIT_OK;
    }
    if (rlk_lc_flag(argv, i, NULL, "--observe")) {
        o->observe = 1;
        return -1;
    }
    if (rlk_lc_flag(argv, i, NULL, "--json")) {
        o->json = 1;
        return -1;
    }
    if ((got = rlk_lc_opt("elect", argc, argv, i, NULL, "--value", &v)) != 0) {
        o->value = v;
        return got < 0 ? RLK_EXIT_USAGE : -1;
    }
    if ((got = rlk_lc_opt("elect", argc, argv, i, NULL, "--count", &v)) != 0) {
        if (got < 0 || rlk_lc_parse_count("elect", "--count", v, 1, 1000000000000LL, &o->count) < 0)
            return RLK_EXIT_USAGE;
        return -1;
    }
    if ((got = rlk_lc_opt("elect", argc, argv, i, NULL, "--timeout", &v)) != 0) {
        if (got < 0 || rlk_lc_parse_seconds("elect", "--timeout", v, &o->timeout_ms) < 0)
            return RLK_EXIT_USAGE;
        return -1;
    }
    if ((got = rlk_lc_claim_opt("elect", argc, argv, i, &o->c)) != 0)
        return got < 0 ? RLK_EXIT_USAGE : -1;
    if ((got = rlk_lc_opt("elect", argc, argv, i, NULL, "--name", &v)) != 0)
        return got < 0 ? RLK_EXIT_USAGE : elect_name_arg(o, v);
    if (arg[0] == '-' && arg[1] != '\0') {
        got = rlk_lc_common_opt("elect", argc, argv, i, &o->c, 1);
        if (got < 0)
            return RLK_EXIT_USAGE;
        return got > 0 ? -1 : rlk_cli_unknown_option("elect", arg);
    }
    (*i)++;
    return elect_name_arg(o, arg);
}

static int elect_parse(int argc, char **argv, elect_opts *o)
{
    int i = 1, rc;

    while (i < argc && strcmp(argv[i], "--") != 0)
        if ((rc = elect_arg(argc, argv, &i, o)) >= 0)
            return rc;
    if (!o->name)
        return rlk_cli_usage("elect", "missing the election NAME");
    if (o->observe) {
        if (i < argc)
            return rlk_cli_usage("elect", "--observe takes no command");
        if (o->value || o->c.hold || o->c.nclaims)
            return rlk_cli_usage("elect", "--observe does not go with %s",
                                 o->value ? "--value" : o->c.hold ? "--hold" : "--claim");
        return -1;
    }
    if (o->count || o->timeout_ms >= 0)
        return rlk_cli_usage("elect", "--count and --timeout go with --observe");
    if (o->json)
        o->c.stats = o->c.stats_json = 1;
    return rlk_lc_take_command("elect", argc, argv, i, &o->c, "rlk elect NAME");
}

/* ---------------------------------------------------------------- observing */

static void elect_print(const elect_opts *o, const rlk_elect_info *in)
{
    if (o->json) {
        fputs("{\"name\":", stdout);
        rlk_lc_json_string(stdout, o->name, strlen(o->name));
        printf(",\"leader\":%s,\"term\":%lld,\"holder\":", in->leader ? "true" : "false", in->term);
        rlk_lc_json_string(stdout, in->holder, strlen(in->holder));
        fputs(",\"value\":", stdout);
        rlk_lc_json_string(stdout, in->value, in->value_len);
        printf(",\"ttl_ms\":%lld}\n", in->ttl_ms);
    } else if (in->leader) {
        /* Terminal-safe: a value with a newline cannot forge a line. */
        size_t need = rlk_cli_escape(NULL, 0, in->value, in->value_len) + 1;
        char *v = malloc(need);

        if (v)
            rlk_cli_escape(v, need, in->value, in->value_len);
        printf("leader %lld %s %s\n", in->term, rlk_cli_show(in->holder), v ? v : "?");
        free(v);
    } else {
        printf("none %lld\n", in->term);
    }
    fflush(stdout);
}

static int elect_observe(const elect_opts *o)
{
    long long start = rlk_lc_now_ns(), printed = 0, left;
    rlk_elect_info cur, next;
    rlk_client *c;
    rlk_elect *e;
    int rc, code = RLK_EXIT_OK;

    if (!(c = rlk_lc_connect(o->c.url, 0, &code)))
        return code;
    if (!(e = rlk_elect_new(c, o->name))) {
        code = rlk_lc_fail(c, rlk_err(c), "elect");
        rlk_free(c);
        return code;
    }
    if ((rc = rlk_elect_leader(e, &cur)) != RLK_OK) {
        code = rlk_lc_fail(c, rc, "elect");
        goto out;
    }
    for (;;) {
        elect_print(o, &cur);
        if (o->count && ++printed >= o->count)
            break;
        left = -1;
        if (o->timeout_ms >= 0 &&
            (left = o->timeout_ms - (rlk_lc_now_ns() - start) / 1000000LL) <= 0)
            break;
        rc = rlk_elect_wait_change(e, &cur, left, &next);
        if (rc == RLK_ERR_TIMEOUT)
            break;
        if (rc != RLK_OK) {
            code = rlk_lc_fail(c, rc, "elect");
            break;
        }
        rlk_elect_info_clear(&cur);
        cur = next;
    }
    rlk_elect_info_clear(&cur);
out:
    rlk_elect_free(e);
    rlk_free(c);
    return code;
}

/* ---------------------------------------------------------------- running */

typedef struct elect_run {
    rlk_client *c;
    rlk_elect *e;
    const char *name;           /* while leading with a fixed lease: the check's */
    const char *owner;
} elect_run;

/* The hold checker's question (lock_check.c), for a fixed lease: is the leader's field still
 * in the election's lock hash? */
static int elect_check(rlk_lc_hold *h)
{
    const elect_run *r = h->impl;

    return rlk_lc_check_fields(r->c, r->name, &r->owner, 1, NULL);
}

static int elect_release(rlk_lc_hold *h)
{
    elect_run *r = h->impl;

    return rlk_elect_resign(r->e);
}

static const char *elect_errstr(rlk_lc_hold *h)
{
    elect_run *r = h->impl;

    return rlk_errstr(r->c);
}

static void elect_give_back(void *arg)
{
    rlk_elect_resign(arg);
}

static int elect_env(rlk_lc_hold *h, const elect_opts *o, const char *owner, long long term)
{
    char t[32];

    snprintf(t, sizeof t, "%lld", term);
    /* RLK_LC_ENV_MAX entries: the three of the election, then the fenced lock's, with the
     * kind a nested rlk goes by (nest.h). */
    if (rlk_lc_hold_setenv(h, "RLK_ELECT_NAME", o->name) < 0 ||
        rlk_lc_hold_setenv(h, "RLK_ELECT_VALUE", o->value ? o->value : "") < 0 ||
        rlk_lc_hold_setenv(h, "RLK_ELECT_TERM", t) < 0 ||
        rlk_lc_hold_setenv(h, "RLK_LOCK_NAME", o->name) < 0 ||
        rlk_lc_hold_setenv(h, "RLK_LOCK_KIND", "elect") < 0 ||
        rlk_lc_hold_setenv(h, "RLK_LOCK_OWNER", owner) < 0 ||
        rlk_lc_hold_setenv(h, "RLK_FENCE_TOKEN", t) < 0)
        return -1;
    return 0;
}

static int elect_lead(elect_run *r, const elect_opts *o, const rlk_lc_session *s)
{
    char what[RLK_LC_WHAT_MAX], owner[ELECT_OWNER_MAX];
    long long term = 0, acquired_ns;
    rlk_lc_sigwatch sw;
    sigset_t mask;
    rlk_lc_hold h;
    int rc, end;

    snprintf(what, sizeof what, "election %s", o->name);
    if (!(r->e = rlk_elect_new(r->c, o->name)))
        return rlk_lc_fail(r->c, rlk_err(r->c), what);
    if (rlk_elect_owner(r->e, owner, sizeof owner) != RLK_OK)
        return rlk_lc_fail(r->c, rlk_err(r->c), what);
    rlk_wr_start(what, o->c.url, o->name);     /* --verbose: who leads while it waits */
    rlk_lc_sigwatch_start(&sw, &r->c, 1);
    rc = rlk_elect_campaign(r->e, o->value, o->c.wait_ms, o->c.lease_ms, &term);
    rlk_wr_stop(rc == RLK_OK);                  /* elected: "acquired after N s" */
    mask = sw.old;
    end = rlk_lc_sigwatch_end(&sw, rc, what, NULL, elect_give_back, r->e);
    if (end != -2 && end != -1)
        return end;
    if (end == -2)
        return rc == RLK_ERR_BUSY ? rlk_lc_not_acquired(&o->c, what, NULL)
                                  : rlk_lc_fail(r->c, rc, what);
    acquired_ns = rlk_lc_now_ns();
    /* --claim: every fence raised to the term before the command can read anything. */
    if ((rc = rlk_lc_claim(r->c, &o->c, term, what)) >= 0) {
        rlk_elect_resign(r->e);
        pthread_sigmask(SIG_SETMASK, &mask, NULL);
        return rc;
    }
    rlk_lc_hold_init(&h, "election %s (term %lld)", o->name, term);
    h.release = elect_release;
    h.errstr = elect_errstr;
    h.impl = r;
    h.client = r->c;
    h.child_mask = &mask;
    if (o->c.lease_ms > 0) {
        rlk_lc_hold_fixed_lease(&h, acquired_ns, o->c.lease_ms);
        /* Nothing renews a fixed lease: the checker asks at every message on the lock's
         * channel (a force unlock) and every third of the lease. */
        r->name = o->name;
        r->owner = owner;
        h.check = elect_check;
        h.check_channel = rlk_names_channel(rlk_names_kind_find("fenced"), o->name);
        h.check_period_ns = o->c.lease_ms / 3 * RLK_NS_PER_MS;
    }
    if (elect_env(&h, o, owner, term) < 0) {
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        rlk_elect_resign(r->e);
    } else {
        rc = rlk_lc_hold_run(&h, s, &o->c);
    }
    rlk_lc_hold_free(&h);
    return rc;
}

static int elect_command(const elect_opts *o)
{
    char what[RLK_LC_WHAT_MAX];
    rlk_lc_session s;
    rlk_lc_sink sink;
    rlk_nest nest;
    elect_run r;
    int rc;

    /* The nesting rule (nest.h): a campaign does not re-enter (one term per leader): the
     * enclosing rlk holding NAME, as a leader or as any lock, would be waited for for ever.
     * Refused before connecting. */
    snprintf(what, sizeof what, "election %s", o->name);
    rlk_nest_find("elect", &o->name, 1, &nest);
    if (nest.found && !nest.same)
        return rlk_nest_refuse_other(what, &nest);
    if (nest.found)
        return rlk_nest_refuse_same(what, &nest, "a nested campaign would wait for its own "
                                    "parent for ever (a leader does not campaign again)");
    if ((rc = rlk_lc_session_open(&s)) >= 0)
        return rc;
    memset(&r, 0, sizeof r);
    r.c = rlk_lc_connect_margin(o->c.url, o->c.wd_lease_ms, o->c.grace_ms + o->c.margin_ms, &rc);
    if (r.c) {
        sink.name = o->name;
        sink.fd = s.lost_wr;
        rlk_set_lost_callback(r.c, rlk_lc_lost_cb, &sink);
        rc = elect_lead(&r, o, &s);
        rlk_elect_free(r.e);
        rlk_free(r.c);  /* stops the watchdog: no callback after this */
    }
    rlk_lc_session_close(&s);
    return rc;
}

static int elect_main(int argc, char **argv)
{
    elect_opts o;
    int rc;

    memset(&o, 0, sizeof o);
    rlk_lc_opts_init(&o.c);
    o.timeout_ms = -1;
    if ((rc = elect_parse(argc, argv, &o)) >= 0) {
        rlk_lc_claims_free(&o.c);
        return rc;
    }
    rc = o.observe ? elect_observe(&o) : elect_command(&o);
    rlk_lc_claims_free(&o.c);
    return rc;
}

const rlk_cli_command rlk_cmd_elect = {
    "elect",
    "run a command only while leader; observe the leader (rlk elect NAME -- CMD)",
    rlk_cli_help_elect,
    elect_main,
};
