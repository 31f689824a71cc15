/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_semaphore.c - rlk semaphore NAME --permits N [OPTIONS] -- COMMAND [ARGS...]
 *                   rlk semaphore NAME ACTION [ARG] (acquired, set-permits, lease-time,
 *                   release, expire, clear-expire, ttl: one call each, sem_admin_run)
 *
 * Runs COMMAND while holding a permit of the semaphore NAME, so that at most
 * N commands run at once across machines. It is the permit-expirable
 * semaphore (Redisson's RPermitExpirableSemaphore layout: count key NAME,
 * held permits in {NAME}:timeout): every permit has an id and a lease, a
 * keeper thread renews the lease every third of it while COMMAND runs
 * (rlk_psemaphore_keep), so the permit of an rlk that dies comes back by
 * itself within one lease. --permits sets the number of permits when the semaphore
 * does not exist yet (Redisson's trySetPermits); an existing semaphore of
 * another size is refused unless --resize (then adjusted by the difference,
 * addPermits), and so are a --take larger than it and a count-down latch's
 * name (kind_mark.h).
 */
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "kind_mark.h"
#include "lock_cli.h"
#include "nest.h"
#include "wait_report.h"

typedef struct sem_opts {
    rlk_lc_opts c;
    const char *name;
    long long permits;          /* -n; 0: not given */
    long long take;
    int resize;                 /* --resize: an existing semaphore gets --permits permits */
} sem_opts;

typedef struct sem_run {
    const sem_opts *o;
    rlk_client *c;
    rlk_psemaphore *s;
    char (*ids)[RLK_PERMIT_ID_SIZE];
    rlk_psemaphore_keeper *keeper;
    sigset_t mask;              /* the signal mask before the wait: the command's */
    const rlk_nest *nest;       /* an enclosing rlk semaphore of NAME (nest.h), else NULL */
} sem_run;

/* ---------------------------------------------------------------- parsing */

/* 1 when s is a whole number (the old `-n PERMITS`). */
static int sem_is_count(const char *s)
{
    if (!s || !*s)
        return 0;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return 0;
    return 1;
}

static int sem_value(int argc, char **argv, int *i, sem_opts *o)
{
    const char *v;
    int got;

    /* -n is --no-wait, as for rlk lock and flock. `-n 3`, a number after it, is the old
     * spelling of --permits 3: still taken as the size, with a warning. */
    if (strcmp(argv[*i], "-n") == 0 && *i + 1 < argc && sem_is_count(argv[*i + 1])) {
        if (o->permits)
            return rlk_cli_usage("semaphore", "-n %s: the size is given already (--permits "
                                 "%lld); -n alone means --no-wait", argv[*i + 1], o->permits), -1;
        rlk_cli_fail(0, "warning: semaphore -n %s: the size is --permits %s now (-n alone "
                     "means --no-wait, as for rlk lock)", argv[*i + 1], argv[*i + 1]);
        v = argv[*i + 1];
        *i += 2;
        return rlk_lc_parse_count("semaphore", "option --permits", v, 1, RLK_NUM_MAX,
                                  &o->permits) < 0 ? -1 : 1;
    }
    got = rlk_lc_opt("semaphore", argc, argv, i, NULL, "--permits", &v);
    if (got > 0) {
        if (o->permits)
            return rlk_cli_usage("semaphore", "--permits %s: the size is given already (%lld)",
                                 v, o->permits), -1;
        return rlk_lc_parse_count("semaphore", "option --permits", v, 1, RLK_NUM_MAX,
                                  &o->permits) < 0 ? -1 : 1;
    }
    if (got == 0 && (got = rlk_lc_opt("semaphore", argc, argv, i, NULL, "--take", &v)) > 0)
        return rlk_lc_parse_count("semaphore", "option --take", v, 1, RLK_PERMITS_MAX,
                                  &o->take) < 0 ? -1 : 1;
    if (got == 0 && rlk_lc_flag(argv, i, NULL, "--resize")) {
        o->resize = 1;
        return 1;
    }
    if (got == 0 && (got = rlk_lc_opt("semaphore", argc, argv, i, NULL, "--name", &v)) > 0) {
        if (o->name)
            return rlk_cli_usage("semaphore", "--name %s: the semaphore NAME is given already "
                                 "('%s')", v, o->name), -1;
        if (v[0] == '\0')
            return rlk_cli_usage("semaphore", "the semaphore name must not be empty"), -1;
        o->name = v;
    }
    if (got == 0)
        got = rlk_lc_common_opt("semaphore", argc, argv, i, &o->c, 1);
    return got;
}

/* One argument before "--". -1 to go on, or an exit code. */
static int sem_arg(int argc, char **argv, int *i, sem_opts *o)
{
    const char *arg = argv[*i];
    int got;

    if (rlk_cli_is_help(arg)) {
        fputs(rlk_cli_help_semaphore, stdout);
        return RLK_EXIT_OK;
    }
    if (arg[0] == '-' && arg[1] != '\0') {
        if ((got = sem_value(argc, argv, i, o)) < 0)
            return RLK_EXIT_USAGE;
        return got > 0 ? -1 : rlk_cli_unknown_option("semaphore", arg);
    }
    if (o->name)
        return rlk_cli_usage("semaphore", "unexpected argument '%s': put '--' before the "
                             "command (rlk semaphore NAME --permits N -- COMMAND...)", arg);
    if (arg[0] == '\0')
        return rlk_cli_usage("semaphore", "the semaphore name must not be empty");
    o->name = arg;
    (*i)++;
    return -1;
}

static int sem_parse(int argc, char **argv, sem_opts *o)
{
    char synopsis[300];
    int i = 1, rc;

    while (i < argc && strcmp(argv[i], "--") != 0)
        if ((rc = sem_arg(argc, argv, &i, o)) >= 0)
            return rc;
    if (!o->name)
        return rlk_cli_usage("semaphore", "missing the semaphore NAME");
    if (o->permits == 0)
        return rlk_cli_usage("semaphore", "missing --permits N: how many commands may hold a "
                             "permit at once");
    if (o->take > o->permits)
        return rlk_cli_usage("semaphore", "--take %lld is more than the %lld permits of "
                             "--permits", o->take, o->permits);
    snprintf(synopsis, sizeof synopsis, "rlk semaphore %s --permits %lld", o->name, o->permits);
    return rlk_lc_take_command("semaphore", argc, argv, i, &o->c, synopsis);
}

/* ---------------------------------------------------------------- holding */

static long long sem_lease(const sem_opts *o)
{
    return o->c.lease_ms > 0 ? o->c.lease_ms : rlk_lc_renewed_lease(&o->c);
}

static int sem_release_ids(sem_run *r)
{
    const char *ids[RLK_PERMITS_MAX];

    for (long long k = 0; k < r->o->take; k++)
        ids[k] = r->ids[k];
    return rlk_psemaphore_release_n(r->s, (int)r->o->take, ids, NULL);
}

/* The keeper first (no renewal after it returns), then the permits. */
static int sem_release(rlk_lc_hold *h)
{
    sem_run *r = h->impl;

    if (r->keeper) {
        rlk_psemaphore_keeper_stop(r->keeper);
        r->keeper = NULL;
    }
    return sem_release_ids(r);
}

static const char *sem_errstr(rlk_lc_hold *h)
{
    const sem_run *r = h->impl;

    return rlk_errstr(r->c);
}

/* RLK_LOCK_OWNER: the permit ids separated by spaces. */
static int sem_env(rlk_lc_hold *h, const sem_run *r)
{
    char *owner = calloc((size_t)r->o->take, RLK_PERMIT_ID_SIZE);
    int rc = -1;

    if (owner) {
        for (long long k = 0; k < r->o->take; k++) {
            if (k)
                strcat(owner, " ");
            strcat(owner, r->ids[k]);
        }
        if (rlk_lc_hold_setenv(h, "RLK_LOCK_NAME", r->o->name) == 0 &&
            rlk_lc_hold_setenv(h, "RLK_LOCK_KIND", "semaphore") == 0 &&
            rlk_lc_hold_setenv(h, "RLK_LOCK_OWNER", owner) == 0)
            rc = 0;
    }
    free(owner);
    return rc;
}

/* Starts the keeper (a renewed lease). -1, or an exit code (permits given back). */
static int sem_keep(sem_run *r, rlk_lc_sink *sink, const char *what)
{
    const char *ids[RLK_PERMITS_MAX];
    int rc;

    if (r->o->c.lease_ms > 0)
        return -1;
    for (long long k = 0; k < r->o->take; k++)
        ids[k] = r->ids[k];
    r->keeper = rlk_psemaphore_keep(r->s, (int)r->o->take, ids, sem_lease(r->o), rlk_lc_lost_cb,
                                    sink);
    if (r->keeper)
        return -1;
    rc = rlk_lc_fail(r->c, rlk_err(r->c), what);
    sem_release_ids(r);
    return rc;
}

static int sem_hold(sem_run *r, const rlk_lc_session *s, const char *what)
{
    long long acquired_ns = rlk_lc_now_ns();
    rlk_lc_sink sink = {r->o->name, s->lost_wr};
    rlk_lc_hold h;
    int rc;

    if ((rc = sem_keep(r, &sink, what)) >= 0)
        return rc;
    rlk_lc_hold_init(&h, "%s", what);
    h.release = sem_release;
    h.errstr = sem_errstr;
    h.impl = r;
    h.client = r->c;
    h.child_mask = &r->mask;
    if (r->o->c.lease_ms > 0)
        rlk_lc_hold_fixed_lease(&h, acquired_ns, r->o->c.lease_ms);
    if (sem_env(&h, r) < 0) {
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        sem_release(&h);
    } else {
        rc = rlk_lc_hold_run(&h, s, &r->o->c);
    }
    rlk_lc_hold_free(&h);
    return rc;
}

/* ---------------------------------------------------------------- acquiring */

static int sem_busy(const sem_opts *o)
{
    char waited[32];

    if (o->c.wait_ms == 0 && !o->c.wait_given)
        return rlk_cli_fail(o->c.conflict_code, "semaphore %s: no permit free", o->name);
    rlk_lc_format_seconds(o->c.wait_ms, waited, sizeof waited);
    return rlk_cli_fail(o->c.conflict_code, "semaphore %s: no permit free after %s s", o->name,
                        waited);
}

/* An existing semaphore (try_set_permits changed nothing): its kind, -n
 * against its size (--resize: adjusted by the difference), --take against
 * it. -1 to go on, else the exit code (nothing changed). */
static int sem_existing(sem_run *r, const char *what)
{
    const sem_opts *o = r->o;
    long long size, available, held, count;
    int rc = rlk_km_check(r->c, o->name, RLK_KM_SEMAPHORE, what);

    if (rc >= 0)
        return rc;
    if ((rc = rlk_psemaphore_size(r->s, &available, &held)) != RLK_OK)
        return rlk_lc_fail(r->c, rc, what);
    size = available + held;
    if (size != o->permits && !o->resize)
        return rlk_cli_fail(RLK_EXIT_USAGE, "semaphore %s has %lld permits (%lld available, %lld "
                            "held), not %lld (--permits %lld): give --permits %lld, or --resize to change "
                            "it; "
                            "nothing changed", o->name, size, available, held, o->permits,
                            o->permits, size);
    if (size != o->permits) {
        if ((rc = rlk_psemaphore_add_permits(r->s, o->permits - size, &count)) != RLK_OK)
            return rlk_lc_fail(r->c, rc, what);
        rlk_cli_verbose("semaphore %s: resized from %lld to %lld permits (%lld available now)",
                        o->name, size, o->permits, count);
        size = o->permits;
    }
    if (o->take > size)
        return rlk_cli_fail(RLK_EXIT_USAGE, "semaphore %s: --take %lld is more than its %lld "
                            "permits: it would wait forever; nothing changed", o->name, o->take,
                            size);
    /* Nested in an rlk semaphore of NAME: the permits it holds come back only when this rlk's
     * command (its child) has ended. */
    if (r->nest && o->take > size - rlk_nest_owner_words(r->nest)) {
        char why[300];

        snprintf(why, sizeof why, "its %d permit%s leave%s %lld of %lld: --take %lld would wait "
                 "for its own parent for ever; nothing changed", rlk_nest_owner_words(r->nest),
                 rlk_nest_owner_words(r->nest) == 1 ? "" : "s",
                 rlk_nest_owner_words(r->nest) == 1 ? "s" : "",
                 size - rlk_nest_owner_words(r->nest), size, o->take);
        return rlk_nest_refuse_same(what, r->nest, why);
    }
    return -1;
}

static void sem_give_back(void *arg)
{
    sem_release_ids(arg);
}

/* The wait: the semaphore created when it does not exist, then the permits. */
static int sem_try(sem_run *r, const char *what, int *code)
{
    int set = 0, rc = rlk_psemaphore_try_set_permits(r->s, r->o->permits, &set);

    *code = -1;
    if (rc == RLK_OK && set && rlk_km_mark(r->c, r->o->name, RLK_KM_SEMAPHORE) != RLK_OK)
        rlk_cli_verbose("semaphore %s: could not write its kind marker: %s", r->o->name,
                        rlk_errstr(r->c));
    if (rc == RLK_OK && !set && (*code = sem_existing(r, what)) >= 0)
        return rc;
    if (rc == RLK_OK)
        rc = rlk_psemaphore_try_acquire_n(r->s, (int)r->o->take, r->o->c.wait_ms,
                                          sem_lease(r->o), r->ids);
    return rc;
}

/* -1 when the permits are held (the forwarded signals still blocked, r->mask the command's
 * mask: rlk_lc_sigwatch), else the exit code. */
static int sem_acquire(sem_run *r, const char *what)
{
    rlk_lc_sigwatch sw;
    int code, rc, end;

    rlk_lc_sigwatch_start(&sw, &r->c, 1);
    rc = sem_try(r, what, &code);
    r->mask = sw.old;
    if (code >= 0) {
        rlk_lc_sigwatch_stop(&sw);      /* a usage refusal: nothing waited, nothing held */
        rlk_lc_sigwatch_restore(&sw);
        return code;
    }
    end = rlk_lc_sigwatch_end(&sw, rc, what, NULL, sem_give_back, r);
    if (end != -2)
        return end;
    return rc == RLK_ERR_BUSY ? sem_busy(r->o) : rlk_lc_fail(r->c, rc, what);
}

static int sem_with_client(sem_run *r, const rlk_lc_session *s)
{
    char what[RLK_LC_WHAT_MAX];
    int rc;

    snprintf(what, sizeof what, "%s of semaphore %s", r->o->take > 1 ? "permits" : "permit",
             r->o->name);
    r->s = rlk_psemaphore_new(r->c, r->o->name);
    r->ids = calloc((size_t)r->o->take, sizeof *r->ids);
    if (!r->s || !r->ids)
        rc = rlk_lc_fail(r->c, r->s ? RLK_ERR_NOMEM : rlk_err(r->c), what);
    else if ((rc = sem_acquire(r, what)) < 0)
        rc = sem_hold(r, s, what);
    free(r->ids);
    rlk_psemaphore_free(r->s);
    return rc;
}

static int sem_run_cmd(const sem_opts *o)
{
    rlk_lc_session s;
    rlk_nest nest;
    sem_run r;
    int rc;

    /* The nesting rule (nest.h): NAME held by the enclosing rlk as another kind: refused
     * before connecting; as a semaphore: sem_existing weighs its permits. */
    rlk_nest_find("semaphore", &o->name, 1, &nest);
    if (nest.found && !nest.same) {
        char what[RLK_LC_WHAT_MAX];

        snprintf(what, sizeof what, "semaphore %s", o->name);
        return rlk_nest_refuse_other(what, &nest);
    }
    if ((rc = rlk_lc_session_open(&s)) >= 0)
        return rc;
    memset(&r, 0, sizeof r);
    r.o = o;
    r.nest = nest.found ? &nest : NULL;
    if ((r.c = rlk_lc_connect_margin(o->c.url, 0, o->c.grace_ms + o->c.margin_ms, &rc)) != NULL) {
        char what[RLK_LC_WHAT_MAX];

        snprintf(what, sizeof what, "semaphore %s", o->name);
        rlk_wr_start(what, o->c.url, o->name);
        rc = sem_with_client(&r, &s);
        rlk_wr_stop(0);
        rlk_free(r.c);
    }
    rlk_lc_session_close(&s);
    return rc;
}

/* ---------------------------------------------------------------- actions */

/* rlk semaphore NAME ACTION [ARG]: one call of the permit-expirable
 * semaphore, no COMMAND. */
enum sem_action {
    SEM_ACQUIRED, SEM_SET_PERMITS, SEM_LEASE_TIME, SEM_RELEASE, SEM_EXPIRE,
    SEM_CLEAR_EXPIRE, SEM_TTL
};

static const struct {
    const char *word;
    int action;
    const char *arg;            /* its argument, for messages; NULL: none */
} sem_actions[] = {
    {"acquired", SEM_ACQUIRED, NULL},     {"set-permits", SEM_SET_PERMITS, "N"},
    {"lease-time", SEM_LEASE_TIME, "ID"}, {"release", SEM_RELEASE, "ID"},
    {"expire", SEM_EXPIRE, "SECONDS"},    {"clear-expire", SEM_CLEAR_EXPIRE, NULL},
    {"ttl", SEM_TTL, NULL},
};

#define SEM_NACTIONS (sizeof sem_actions / sizeof sem_actions[0])

/* The index in sem_actions of word; -1: not an action (the run form). */
static int sem_action_at(const char *word)
{
    for (size_t k = 0; k < SEM_NACTIONS; k++)
        if (strcmp(word, sem_actions[k].word) == 0)
            return (int)k;
    return -1;
}

typedef struct sem_admin {
    const char *name;
    const char *url;
    int action;                 /* enum sem_action */
    const char *arg;            /* the action's argument */
    long long num;              /* set-permits N, expire SECONDS (as ms) */
} sem_admin;

static int sem_admin_parse(int argc, char **argv, sem_admin *a)
{
    int k = sem_action_at(argv[2]);
    const char *word = sem_actions[k].word, *need = sem_actions[k].arg;

    a->name = argv[1];
    a->action = sem_actions[k].action;
    for (int i = 3; i < argc;) {
        const char *arg = argv[i];
        int got;

        if (rlk_cli_is_help(arg)) {
            fputs(rlk_cli_help_semaphore, stdout);
            return RLK_EXIT_OK;
        }
        if (arg[0] == '-' && arg[1] != '\0' && !(need && !a->arg && arg[1] >= '0' &&
                                                 arg[1] <= '9')) {
            got = rlk_lc_opt("semaphore", argc, argv, &i, NULL, "--url", &a->url);
            if (got == 0)
                got = rlk_cli_global_opt("semaphore", argc, argv, &i);
            if (got < 0)
                return RLK_EXIT_USAGE;
            if (got == 0)
                return rlk_cli_unknown_option("semaphore", arg);
            continue;
        }
        if (!need || a->arg)
            return rlk_cli_usage("semaphore", "unexpected argument '%s' after %s", arg, word);
        a->arg = arg;
        i++;
    }
    if (need && !a->arg)
        return rlk_cli_usage("semaphore", "missing %s: rlk semaphore %s %s %s", need, a->name,
                             word, need);
    if (a->name[0] == '\0')
        return rlk_cli_usage("semaphore", "the semaphore name must not be empty");
    if (a->action == SEM_SET_PERMITS &&
        rlk_lc_parse_count("semaphore", "set-permits", a->arg, 0, RLK_NUM_MAX, &a->num) < 0)
        return RLK_EXIT_USAGE;
    if (a->action == SEM_EXPIRE && rlk_lc_parse_seconds("semaphore", "expire", a->arg, &a->num) < 0)
        return RLK_EXIT_USAGE;
    if (a->action == SEM_EXPIRE && a->num < 1)
        return rlk_cli_usage("semaphore", "expire %s: the time to live must be at least 1 ms",
                             a->arg);
    return -1;
}

/* A 0/1 outcome: exit 0 when done, else 1 with why not. */
static int sem_admin_flag(rlk_client *c, int rc, int done, const char *what, const char *why)
{
    if (rc != RLK_OK)
        return rlk_lc_fail(c, rc, what);
    if (!done)
        return rlk_cli_fail(RLK_EXIT_NOT_ACQUIRED, "%s: %s; nothing changed", what, why);
    return RLK_EXIT_OK;
}

static int sem_admin_act(rlk_psemaphore *s, rlk_client *c, const sem_admin *a, const char *what)
{
    long long v = 0;
    int flag = 0, rc;

    switch (a->action) {
    case SEM_ACQUIRED:
        rc = rlk_psemaphore_acquired(s, &v);
        break;
    case SEM_SET_PERMITS:
        rc = rlk_psemaphore_set_permits(s, a->num, &v);
        break;
    case SEM_LEASE_TIME:
        rc = rlk_psemaphore_lease_time(s, a->arg, &v);
        if (rc == RLK_ERR_NOT_OWNER)
            return rlk_cli_fail(RLK_EXIT_NOT_ACQUIRED, "%s: permit %s is not held (expired, "
                                "released or never acquired)", what, a->arg);
        break;
    case SEM_RELEASE:
        rc = rlk_psemaphore_try_release(s, a->arg, &flag);
        return sem_admin_flag(c, rc, flag, what, "that permit is not held (expired, released or "
                              "never acquired)");
    case SEM_EXPIRE:
        rc = rlk_psemaphore_expire(s, a->num, &flag);
        return sem_admin_flag(c, rc, flag, what, "no such semaphore");
    case SEM_CLEAR_EXPIRE:
        rc = rlk_psemaphore_clear_expire(s, &flag);
        return sem_admin_flag(c, rc, flag, what, "it has no time to live");
    default:
        /* psemaphore/ttl reads no value: a string that is no count is refused here, as every
         * other action's script refuses it */
        if ((rc = rlk_lc_count_key_check(c, a->name, what, "semaphore")) >= 0)
            return rc;
        rc = rlk_psemaphore_ttl(s, &v);
        break;
    }
    if (rc != RLK_OK)
        return rlk_lc_fail(c, rc, what);
    printf("%lld\n", v);
    return RLK_EXIT_OK;
}

static int sem_admin_run(int argc, char **argv)
{
    char what[RLK_LC_WHAT_MAX];
    sem_admin a;
    rlk_client *c;
    rlk_psemaphore *s;
    int rc;

    memset(&a, 0, sizeof a);
    if ((rc = sem_admin_parse(argc, argv, &a)) >= 0)
        return rc;
    if (!(c = rlk_lc_connect(a.url, 0, &rc)))
        return rc;
    snprintf(what, sizeof what, "semaphore %s", a.name);
    if ((rc = rlk_km_check(c, a.name, RLK_KM_SEMAPHORE, what)) < 0) {
        if ((s = rlk_psemaphore_new(c, a.name)) != NULL) {
            rc = sem_admin_act(s, c, &a, what);
            rlk_psemaphore_free(s);
        } else {
            rc = rlk_lc_fail(c, rlk_err(c), "semaphore");
        }
    }
    rlk_free(c);
    return rc;
}

static int semaphore_run(int argc, char **argv)
{
    sem_opts o;
    int rc;

    if (argc >= 3 && argv[1][0] != '-' && sem_action_at(argv[2]) >= 0)
        return sem_admin_run(argc, argv);
    memset(&o, 0, sizeof o);
    rlk_lc_opts_init(&o.c);
    o.take = 1;
    if ((rc = sem_parse(argc, argv, &o)) >= 0)
        return rc;
    return sem_run_cmd(&o);
}

const rlk_cli_command rlk_cmd_semaphore = {
    "semaphore",
    "run a command holding a permit (rlk semaphore NAME --permits N -- CMD)",
    rlk_cli_help_semaphore,
    semaphore_run,
};
