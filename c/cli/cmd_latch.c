/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_latch.c - rlk latch NAME set COUNT | count-down | await [-w SECONDS] | count
 *                           | expire SECONDS | clear-expire | ttl
 *
 * The count-down latch NAME (Redisson's RCountDownLatch layout: a string
 * key holding the count, channel redisson_countdownlatch__channel__{NAME}):
 * arm it, count it down, wait until it reaches zero (pub/sub), read it,
 * give it a time to live (rlk's: Redisson's latch has none).
 */
#include <string.h>

#include "help_gen.h"
#include "kind_mark.h"
#include "lock_cli.h"

enum latch_action {
    LATCH_NONE, LATCH_SET, LATCH_COUNT_DOWN, LATCH_AWAIT, LATCH_COUNT, LATCH_EXPIRE,
    LATCH_CLEAR_EXPIRE, LATCH_TTL
};

typedef struct latch_opts {
    const char *name;
    const char *url;
    int action;
    const char *action_word;
    long long count;            /* set */
    long long ttl_ms;           /* expire */
    int count_given;
    long long wait_ms;          /* await; -1: forever */
    int wait_given;
    int conflict_code;
} latch_opts;

/* ---------------------------------------------------------------- parsing */

static int latch_action_of(const char *word)
{
    if (strcmp(word, "set") == 0)
        return LATCH_SET;
    if (strcmp(word, "count-down") == 0 || strcmp(word, "countdown") == 0)
        return LATCH_COUNT_DOWN;
    if (strcmp(word, "await") == 0)
        return LATCH_AWAIT;
    if (strcmp(word, "count") == 0)
        return LATCH_COUNT;
    if (strcmp(word, "expire") == 0)
        return LATCH_EXPIRE;
    if (strcmp(word, "clear-expire") == 0)
        return LATCH_CLEAR_EXPIRE;
    if (strcmp(word, "ttl") == 0)
        return LATCH_TTL;
    return LATCH_NONE;
}

/* A positional argument: NAME, the action, set's COUNT. -1 or an exit code. */
static int latch_word(latch_opts *o, const char *arg)
{
    if (!o->name) {
        if (arg[0] == '\0')
            return rlk_cli_usage("latch", "the latch name must not be empty");
        o->name = arg;
        return -1;
    }
    if (o->action == LATCH_NONE) {
        if ((o->action = latch_action_of(arg)) == LATCH_NONE)
            return rlk_cli_usage("latch", "unknown action '%s': set, count-down, await, count, "
                                 "expire, clear-expire or ttl", arg);
        o->action_word = arg;
        return -1;
    }
    if (o->action == LATCH_SET && !o->count_given) {
        o->count_given = 1;
        return rlk_lc_parse_count("latch", "set", arg, 1, RLK_NUM_MAX, &o->count) < 0
                   ? RLK_EXIT_USAGE : -1;
    }
    if (o->action == LATCH_EXPIRE && !o->count_given) {
        o->count_given = 1;
        if (rlk_lc_parse_seconds("latch", "expire", arg, &o->ttl_ms) < 0)
            return RLK_EXIT_USAGE;
        return o->ttl_ms < 1 ? rlk_cli_usage("latch", "expire %s: the time to live must be at "
                                             "least 1 ms", arg) : -1;
    }
    if (o->action == LATCH_AWAIT)
        return rlk_cli_usage("latch", "unexpected argument '%s': a wait is given as -w %s", arg,
                             arg);
    return rlk_cli_usage("latch", "unexpected argument '%s'", arg);
}

static int latch_option(int argc, char **argv, int *i, latch_opts *o)
{
    const char *v;
    int got = rlk_lc_opt("latch", argc, argv, i, "-w", "--wait", &v);

    if (got > 0) {
        o->wait_given = 1;
        return rlk_lc_parse_seconds("latch", "-w", v, &o->wait_ms) < 0 ? -1 : 1;
    }
    if (got == 0 && (got = rlk_lc_opt("latch", argc, argv, i, "-E", "--conflict-exit-code",
                                      &v)) > 0)
        return rlk_lc_parse_exit("latch", "-E", v, &o->conflict_code) < 0 ? -1 : 1;
    if (got == 0)
        got = rlk_lc_opt("latch", argc, argv, i, NULL, "--url", &o->url);
    if (got == 0 && (got = rlk_lc_opt("latch", argc, argv, i, NULL, "--name", &v)) > 0 &&
        v != o->name)
        return rlk_cli_usage("latch", "--name given twice ('%s', '%s')", o->name, v), -1;
    if (got == 0)
        got = rlk_cli_global_opt("latch", argc, argv, i);
    return got;
}

static int latch_check(const latch_opts *o)
{
    if (!o->name)
        return rlk_cli_usage("latch", "missing the latch NAME");
    if (o->action == LATCH_NONE)
        return rlk_cli_usage("latch", "missing the action: rlk latch %s set COUNT | count-down | "
                             "await | count | expire SECONDS | clear-expire | ttl", o->name);
    if (o->action == LATCH_SET && !o->count_given)
        return rlk_cli_usage("latch", "missing the COUNT: rlk latch %s set COUNT", o->name);
    if (o->action == LATCH_EXPIRE && !o->count_given)
        return rlk_cli_usage("latch", "missing the SECONDS: rlk latch %s expire SECONDS", o->name);
    if (o->action != LATCH_AWAIT && o->wait_given)
        return rlk_cli_usage("latch", "-w applies to await only");
    return -1;
}

/* --name NAME anywhere: the words are then the action (and COUNT) only. The
 * values of the options that take one are skipped. */
static int latch_name_option(int argc, char **argv, latch_opts *o)
{
    static const char *const with_value[] = {"-w", "--wait", "-E", "--conflict-exit-code",
                                             "--url", "--url-file", "--password-file", NULL};

    for (int i = 1; i < argc; i++) {
        const char *v = NULL;

        if (strcmp(argv[i], "--name") == 0 && i + 1 < argc)
            v = argv[i + 1];
        else if (strncmp(argv[i], "--name=", 7) == 0)
            v = argv[i] + 7;
        if (v && o->name)
            return rlk_cli_usage("latch", "--name given twice ('%s', '%s')", o->name, v);
        if (v && v[0] == '\0')
            return rlk_cli_usage("latch", "the latch name must not be empty");
        if (v) {
            o->name = v;
            i += strcmp(argv[i], "--name") == 0;
            continue;
        }
        for (int k = 0; with_value[k]; k++)
            if (strcmp(argv[i], with_value[k]) == 0)
                i++;
    }
    return -1;
}

static int latch_parse(int argc, char **argv, latch_opts *o)
{
    int rc0 = latch_name_option(argc, argv, o);

    if (rc0 >= 0)
        return rc0;
    for (int i = 1; i < argc;) {
        const char *arg = argv[i];
        int got, rc;

        if (rlk_cli_is_help(arg)) {
            fputs(rlk_cli_help_latch, stdout);
            return RLK_EXIT_OK;
        }
        if (arg[0] == '-' && arg[1] != '\0' &&
            !((o->action == LATCH_SET || o->action == LATCH_EXPIRE) && !o->count_given &&
              arg[1] >= '0' && arg[1] <= '9')) {
            if ((got = latch_option(argc, argv, &i, o)) < 0)
                return RLK_EXIT_USAGE;
            if (got == 0)
                return rlk_cli_unknown_option("latch", arg);
            continue;
        }
        if ((rc = latch_word(o, arg)) >= 0)
            return rc;
        i++;
    }
    return latch_check(o);
}

/* ---------------------------------------------------------------- actions */

static int latch_set(rlk_latch *l, rlk_client *c, const latch_opts *o, const char *what)
{
    long long count = 0;
    int set = 0, rc = rlk_latch_try_set_count(l, o->count, &set);

    if (rc != RLK_OK)
        return rlk_lc_fail(c, rc, what);
    if (set && rlk_km_mark(c, o->name, RLK_KM_LATCH) != RLK_OK)
        rlk_cli_verbose("%s: could not write its kind marker: %s", what, rlk_errstr(c));
    if (set)
        return RLK_EXIT_OK;
    if (rlk_latch_count(l, &count) != RLK_OK)
        return rlk_cli_fail(RLK_EXIT_NOT_ACQUIRED, "%s: armed already; not changed", what);
    return rlk_cli_fail(RLK_EXIT_NOT_ACQUIRED, "%s: armed already (count %lld); not changed",
                        what, count);
}

static int latch_print(rlk_latch *l, rlk_client *c, int count_down, const char *what)
{
    long long value = 0;
    int rc = count_down ? rlk_latch_count_down(l, &value) : rlk_latch_count(l, &value);

    if (rc != RLK_OK)
        return rlk_lc_fail(c, rc, what);
    if (count_down && value == 0)
        rlk_km_unmark(c, rlk_latch_name(l));   /* open: the key is gone, so goes its marker */
    printf("%lld\n", value);
    return RLK_EXIT_OK;
}

static int latch_await(rlk_latch *l, rlk_client *c, const latch_opts *o, const char *what)
{
    char waited[32];
    long long count = 0;
    int rc = rlk_latch_await(l, o->wait_ms);

    if (rc == RLK_OK)
        return RLK_EXIT_OK;
    if (rc != RLK_ERR_BUSY)
        return rlk_lc_fail(c, rc, what);
    rlk_lc_format_seconds(o->wait_ms, waited, sizeof waited);
    if (rlk_latch_count(l, &count) != RLK_OK || count <= 0)
        return rlk_cli_fail(o->conflict_code, "%s: still armed after %s s", what, waited);
    return rlk_cli_fail(o->conflict_code, "%s: still armed after %s s (count %lld)", what, waited,
                        count);
}

/* expire, clear-expire (exit 1 when nothing changed) and ttl (printed). */
static int latch_expiry(rlk_latch *l, rlk_client *c, const latch_opts *o, const char *what)
{
    long long ttl = 0;
    int done = 0, rc;

    if (o->action == LATCH_TTL) {
        /* latch/ttl reads no value: a string that is no count is refused here, as every
         * other action's script refuses it */
        if ((rc = rlk_lc_count_key_check(c, o->name, what, "latch")) >= 0)
            return rc;
        if ((rc = rlk_latch_ttl(l, &ttl)) != RLK_OK)
            return rlk_lc_fail(c, rc, what);
        printf("%lld\n", ttl);
        return RLK_EXIT_OK;
    }
    rc = o->action == LATCH_EXPIRE ? rlk_latch_expire(l, o->ttl_ms, &done)
                                   : rlk_latch_clear_expire(l, &done);
    if (rc != RLK_OK)
        return rlk_lc_fail(c, rc, what);
    if (!done)
        return rlk_cli_fail(RLK_EXIT_NOT_ACQUIRED, "%s: %s; nothing changed", what,
                            o->action == LATCH_EXPIRE ? "open (not armed)" : "it has no time to live");
    return RLK_EXIT_OK;
}

static int latch_act(rlk_latch *l, rlk_client *c, const latch_opts *o)
{
    char what[RLK_LC_WHAT_MAX];
    int rc;

    snprintf(what, sizeof what, "latch %s", o->name);
    if ((rc = rlk_km_check(c, o->name, RLK_KM_LATCH, what)) >= 0)
        return rc;
    switch (o->action) {
    case LATCH_SET:
        return latch_set(l, c, o, what);
    case LATCH_COUNT_DOWN:
        return latch_print(l, c, 1, what);
    case LATCH_AWAIT:
        return latch_await(l, c, o, what);
    case LATCH_EXPIRE:
    case LATCH_CLEAR_EXPIRE:
    case LATCH_TTL:
        return latch_expiry(l, c, o, what);
    default:
        return latch_print(l, c, 0, what);
    }
}

static int latch_run(int argc, char **argv)
{
    latch_opts o;
    rlk_client *c;
    rlk_latch *l;
    int rc;

    memset(&o, 0, sizeof o);
    o.wait_ms = -1;
    o.conflict_code = RLK_EXIT_NOT_ACQUIRED;
    if ((rc = latch_parse(argc, argv, &o)) >= 0)
        return rc;
    if (!(c = rlk_lc_connect(o.url, 0, &rc)))
        return rc;
    if ((l = rlk_latch_new(c, o.name)) != NULL) {
        rc = latch_act(l, c, &o);
        rlk_latch_free(l);
    } else {
        rc = rlk_lc_fail(c, rlk_err(c), "latch");
    }
    rlk_free(c);
    return rc;
}

const rlk_cli_command rlk_cmd_latch = {
    "latch",
    "count-down latch: set, count-down, await, count, expire (rlk latch NAME ...)",
    rlk_cli_help_latch,
    latch_run,
};
