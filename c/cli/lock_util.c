/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_util.c - helpers of the lock commands: connecting with a watchdog
 * lease, option matching, number parsing, the options every command that
 * runs a COMMAND shares, JSON strings, the clock.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lock_cli.h"

#define RLK_LC_MAX_SECONDS 1000000000LL     /* 10^9 s: about 31 years */
#define RLK_LC_MAX_MS RLK_NUM_MAX     /* the scripts' lease bound (client/scripts.h) */

rlk_client *rlk_lc_connect(const char *url, long long watchdog_lease_ms, int *exit_code)
{
    return rlk_lc_connect_margin(url, watchdog_lease_ms, 0, exit_code);
}

rlk_client *rlk_lc_connect_margin(const char *url, long long watchdog_lease_ms,
                                  long long lost_margin_ms, int *exit_code)
{
    return rlk_lc_connect_from(url, NULL, watchdog_lease_ms, lost_margin_ms, exit_code);
}

rlk_client *rlk_lc_connect_from(const char *url, const char *from, long long watchdog_lease_ms,
                                long long lost_margin_ms, int *exit_code)
{
    rlk_options o;

    rlk_options_init(&o);
    if ((*exit_code = rlk_cli_conn_options_from(url, from, &o)) >= 0)
        return NULL;
    o.no_preload = 1;
    o.pool_size = 1;
    o.watchdog_lease_ms = watchdog_lease_ms;
    o.lost_margin_ms = lost_margin_ms;
    return rlk_cli_connect_opts(&o, exit_code);
}

/* The library names the call that too few replicas acknowledged by its C name ("acquire
 * NAME: only 0 of 1 replica acknowledged ...", "try_set_permits NAME: done, but only ...");
 * said to an operator, what happened instead. */
static const struct {
    const char *call, *said;
} rlk_lc_replica_calls[] = {
    {"acquire", "taken"},
    {"try_set_permits", "its number of permits set"},
    {"set_permits", "its number of permits set"},
    {"add_permits", "its permits added"},
    {"try_set_count", "armed"},
    {"count_down", "counted down"},
    {"release", "given back"},
    {"unlock", "released"},
    {"faster MultiLock", "given back"},
    {"expire", "its time to live set"},
    {"clear_expire", "its time to live cleared"},
    {"delete", "deleted"},
};

void rlk_lc_replicas_text(const char *e, char *buf, size_t len)
{
    int member = -1, at = 0;

    /* --all: "member 3 (URL NAME): acquire NAME: ..." -> "member NAME (URL): ..." */
    if (sscanf(e, "member %d (%n", &member, &at) == 1 && at > 0) {
        const char *url = e + at, *sp = strchr(url, ' '), *end = strstr(url, "): ");

        if (sp && end && sp < end) {
            char rest[600];

            rlk_lc_replicas_text(end + 3, rest, sizeof rest);
            snprintf(buf, len, "member %.*s on %.*s: %s", (int)(end - sp - 1), sp + 1,
                     (int)(sp - url), url, rest);
            return;
        }
    }
    for (size_t k = 0; k < sizeof rlk_lc_replica_calls / sizeof rlk_lc_replica_calls[0]; k++) {
        size_t n = strlen(rlk_lc_replica_calls[k].call);
        const char *colon, *rest;

        if (strncmp(e, rlk_lc_replica_calls[k].call, n) != 0 || e[n] != ' ' ||
            !(colon = strstr(e + n + 1, ": ")))
            continue;
        rest = colon + 2;
        /* "done, but only ..." / "released, but only ..." / "only ...; rolled back" */
        if (strncmp(rest, "done, but ", 10) == 0)
            rest += 10;
        else if (strncmp(rest, "released, but ", 14) == 0)
            rest += 14;
        else if (strncmp(rest, "accepted, but ", 14) == 0)
            rest += 14;
        {
            const char *wait = strstr(rest, " (WAIT)");

            if (wait)       /* which option asked for the WAIT */
                snprintf(buf, len, "%s, but %.*s (WAIT, --min-replicas)%s",
                         rlk_lc_replica_calls[k].said, (int)(wait - rest), rest, wait + 7);
            else
                snprintf(buf, len, "%s, but %s (--min-replicas)", rlk_lc_replica_calls[k].said,
                         rest);
        }
        return;
    }
    snprintf(buf, len, "%s", e);
}

int rlk_lc_fail(rlk_client *c, int rc, const char *what)
{
    const char *e = rlk_errstr(c);
    size_t n = strlen(what);

    /* The library's "ADDR: time limit of the wait reached": a call that the wait's bound
     * (-w) cut short found no answer before it, which is the cause to name (a lock held
     * by another is RLK_ERR_BUSY, never this). */
    if (rc == RLK_ERR_TIMEOUT && strstr(e, "time limit of the wait reached"))
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s: the server did not answer within it "
                            "(stopped or overloaded?)", what, e);
    if (rc == RLK_ERR_NOREPLICAS) {
        char said[800];

        rlk_lc_replicas_text(e, said, sizeof said);
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s", what, said);
    }

    /* A library message that names the object already ("election X: ...") is not
     * prefixed with it a second time. */
    if (strncmp(e, what, n) == 0 && e[n] == ':')
        return rlk_cli_fail(rlk_cli_exit_code(rc), "%s", e);
    return rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s", what, e);
}

int rlk_lc_count_key_check(rlk_client *c, const char *key, const char *what, const char *kind)
{
    const char *argv[2] = {"GET", key};
    redisReply *r = NULL;
    int ok = 1;

    /* an error (another type: WRONGTYPE; the server gone) is the action's own call's to say */
    if (rlk_command(c, 2, argv, NULL, &r) != RLK_OK || !r) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    if (r->type == REDIS_REPLY_STRING) {
        size_t k = r->len > 0 && r->str[0] == '-';

        ok = r->len > k && r->len - k <= 18;
        for (; ok && k < r->len; k++)
            ok = r->str[k] >= '0' && r->str[k] <= '9';
    }
    freeReplyObject(r);
    if (ok)
        return -1;
    /* as the other actions' scripts word it (lib/is_count.lua) */
    return rlk_cli_fail(RLK_EXIT_REPLY, "%s: RLK_WRONGTYPE %s key holds a string that is not an "
                        "integer count", what, kind);
}

/* ---------------------------------------------------------------- options */

static int rlk_lc_take(const char *cmd, int argc, char **argv, int *i, const char *name,
                       const char **value)
{
    if (*i + 1 >= argc || strcmp(argv[*i + 1], "--") == 0) {
        rlk_cli_usage(cmd, "option %s needs a value", name);
        return -1;
    }
    *value = argv[*i + 1];
    *i += 2;
    return 1;
}

int rlk_lc_opt(const char *cmd, int argc, char **argv, int *i, const char *shortopt,
               const char *longopt, const char **value)
{
    const char *arg = argv[*i];

    if (shortopt && strncmp(arg, shortopt, 2) == 0) {
        if (arg[2] == '\0')
            return rlk_lc_take(cmd, argc, argv, i, shortopt, value);
        *value = arg + 2;
        *i += 1;
        return 1;
    }
    if (longopt) {
        size_t n = strlen(longopt);

        if (strncmp(arg, longopt, n) != 0)
            return 0;
        if (arg[n] == '\0')
            return rlk_lc_take(cmd, argc, argv, i, longopt, value);
        if (arg[n] == '=') {
            *value = arg + n + 1;
            *i += 1;
            return 1;
        }
    }
    return 0;
}

int rlk_lc_flag(char **argv, int *i, const char *shortopt, const char *longopt)
{
    const char *arg = argv[*i];

    if ((shortopt && strcmp(arg, shortopt) == 0) || (longopt && strcmp(arg, longopt) == 0)) {
        *i += 1;
        return 1;
    }
    return 0;
}

/* ---------------------------------------------------------------- numbers */

/* Digits only, 1..n of them; the value into *out. 0 or -1. */
static int rlk_lc_digits(const char *s, size_t len, size_t max_digits, long long *out)
{
    long long v = 0;

    if (len > max_digits)
        return -1;
    for (size_t k = 0; k < len; k++) {
        if (s[k] < '0' || s[k] > '9')
            return -1;
        v = v * 10 + (s[k] - '0');
    }
    *out = v;
    return 0;
}

/* "I", "I.F", ".F" with decimal digits; ms, rounded up. 0 or -1. */
static int rlk_lc_seconds_value(const char *text, long long *ms)
{
    const char *dot = strchr(text, '.');
    size_t ilen = dot ? (size_t)(dot - text) : strlen(text);
    const char *frac = dot ? dot + 1 : "";
    size_t flen = strlen(frac);
    long long whole = 0, part = 0, scale = 100;
    int below_ms = 0;

    if (ilen + flen == 0 || (ilen > 0 && rlk_lc_digits(text, ilen, 10, &whole) < 0))
        return -1;
    for (size_t k = 0; k < flen; k++, scale /= 10) {
        if (frac[k] < '0' || frac[k] > '9')
            return -1;
        if (k < 3)
            part += (frac[k] - '0') * scale;
        else if (frac[k] != '0')
            below_ms = 1;
    }
    if (whole > RLK_LC_MAX_SECONDS)
        return -1;
    *ms = whole * 1000 + part + below_ms;
    return *ms > RLK_LC_MAX_SECONDS * 1000 ? -1 : 0;
}

int rlk_lc_parse_seconds(const char *cmd, const char *opt, const char *text, long long *ms)
{
    if (rlk_lc_seconds_value(text, ms) == 0)
        return 0;
    rlk_cli_usage(cmd, "option %s needs a number of seconds (like 5 or 0.25), not '%s'", opt,
                  text);
    return -1;
}

int rlk_lc_parse_ms(const char *cmd, const char *opt, const char *text, long long *ms)
{
    if (rlk_lc_digits(text, strlen(text), 13, ms) == 0 && text[0] != '\0' && *ms > 0 &&
        *ms <= RLK_LC_MAX_MS)
        return 0;
    /* The bound is the scripts' (RLK_NUM_MAX ms, about 31 years): say it. */
    rlk_cli_usage(cmd, "option %s needs a positive whole number of milliseconds, at most %lld "
                  "(about %lld years), not '%s'", opt, (long long)RLK_LC_MAX_MS,
                  (long long)RLK_LC_MAX_MS / (365LL * 24 * 3600 * 1000), text);
    return -1;
}

int rlk_lc_parse_count(const char *cmd, const char *opt, const char *text, long long min,
                       long long max, long long *out)
{
    if (text[0] != '\0' && rlk_lc_digits(text, strlen(text), 13, out) == 0 && *out >= min &&
        *out <= max)
        return 0;
    rlk_cli_usage(cmd, "%s needs a whole number in %lld..%lld, not '%s'", opt, min, max, text);
    return -1;
}

int rlk_lc_parse_exit(const char *cmd, const char *opt, const char *text, int *code)
{
    long long v;

    if (text[0] != '\0' && rlk_lc_digits(text, strlen(text), 3, &v) == 0 && v <= 255) {
        *code = (int)v;
        return 0;
    }
    rlk_cli_usage(cmd, "option %s needs an exit code 0..255, not '%s'", opt, text);
    return -1;
}

void rlk_lc_format_seconds(long long ms, char *buf, size_t len)
{
    long long frac = ms % 1000;
    int n = snprintf(buf, len, "%lld", ms / 1000);

    if (frac == 0 || n < 0 || (size_t)n >= len)
        return;
    snprintf(buf + n, len - (size_t)n, ".%03lld", frac);
    for (size_t end = strlen(buf); buf[end - 1] == '0'; end--)
        buf[end - 1] = '\0';
}

/* ---------------------------------------------------------------- common options */

void rlk_lc_opts_init(rlk_lc_opts *o)
{
    memset(o, 0, sizeof *o);
    o->wait_ms = -1;
    o->grace_ms = 10000;
    o->conflict_code = RLK_EXIT_NOT_ACQUIRED;
    o->start_ns = rlk_lc_now_ns();
}

/* The options with a value. 1 matched, 0 not, -1 usage error printed. */
static int rlk_lc_common_value(const char *cmd, int argc, char **argv, int *i, rlk_lc_opts *o)
{
    const char *v;
    int got;

    if ((got = rlk_lc_opt(cmd, argc, argv, i, "-w", "--wait", &v)) > 0) {
        o->wait_given = 1;
        got = rlk_lc_parse_seconds(cmd, "-w", v, &o->wait_ms) < 0 ? -1 : 1;
    }
    if (got == 0 && (got = rlk_lc_opt(cmd, argc, argv, i, "-l", "--lease", &v)) > 0)
        got = rlk_lc_parse_ms(cmd, "-l", v, &o->lease_ms) < 0 ? -1 : 1;
    if (got == 0 && (got = rlk_lc_opt(cmd, argc, argv, i, "-E", "--conflict-exit-code", &v)) > 0)
        got = rlk_lc_parse_exit(cmd, "-E", v, &o->conflict_code) < 0 ? -1 : 1;
    if (got == 0 && (got = rlk_lc_opt(cmd, argc, argv, i, "-k", "--kill-after", &v)) > 0) {
        o->grace_given = 1;
        got = rlk_lc_parse_seconds(cmd, "-k", v, &o->grace_ms) < 0 ? -1 : 1;
    }
    if (got == 0 && (got = rlk_lc_opt(cmd, argc, argv, i, NULL, "--watchdog-lease", &v)) > 0)
        got = rlk_lc_parse_count(cmd, "option --watchdog-lease", v, RLK_LC_MIN_LEASE_MS,
                                 RLK_LC_MAX_MS, &o->wd_lease_ms) < 0 ? -1 : 1;
    if (got == 0)
        got = rlk_lc_opt(cmd, argc, argv, i, NULL, "--url", &o->url);
    if (got == 0)
        got = rlk_cli_global_opt(cmd, argc, argv, i);
    return got;
}

int rlk_lc_common_opt(const char *cmd, int argc, char **argv, int *i, rlk_lc_opts *o,
                      int with_short_n)
{
    if (rlk_lc_flag(argv, i, with_short_n ? "-n" : NULL, "--no-wait")) {
        o->no_wait = 1;
        return 1;
    }
    if (rlk_lc_flag(argv, i, NULL, "--hold")) {
        o->hold = 1;
        return 1;
    }
    if (rlk_lc_flag(argv, i, NULL, "--stats")) {
        o->stats = 1;
        return 1;
    }
    if (rlk_lc_flag(argv, i, NULL, "--json")) {
        o->stats = o->stats_json = 1;
        return 1;
    }
    return rlk_lc_common_value(cmd, argc, argv, i, o);
}

int rlk_lc_claim_opt(const char *cmd, int argc, char **argv, int *i, rlk_lc_opts *o)
{
    const char *v, **more;
    int got = rlk_lc_opt(cmd, argc, argv, i, NULL, "--claim", &v);

    if (got <= 0)
        return got;
    if (v[0] == '\0')
        return rlk_cli_usage(cmd, "--claim needs a fence key (--claim '{NAME}:fence')"),
               -1;
    if (!(more = realloc(o->claims, sizeof *o->claims * (size_t)(o->nclaims + 1))))
        return rlk_cli_fail(RLK_EXIT_USAGE, "out of memory"), -1;
    o->claims = more;
    o->claims[o->nclaims++] = v;
    return 1;
}

void rlk_lc_claims_free(rlk_lc_opts *o)
{
    free(o->claims);
    o->claims = NULL;
    o->nclaims = 0;
}

int rlk_lc_claim(rlk_client *c, const rlk_lc_opts *o, long long token, const char *what)
{
    uint64_t highest = 0;
    int rc;

    /* One fence at a time (rlk_fence_claim's own order), to name the one that refused. */
    for (int k = 0; k < o->nclaims; k++) {
        rc = rlk_fence_claim(c, (uint64_t)token, 1, &o->claims[k], &highest);
        if (rc == RLK_ERR_FENCED)
            return rlk_cli_fail(RLK_EXIT_FENCED, "fenced: token %lld is below the highest "
                                "accepted %llu at --claim %s: a newer holder claimed it; %s "
                                "given back, the command not run", token,
                                (unsigned long long)highest, rlk_cli_show(o->claims[k]), what);
        if (rc != RLK_OK)
            return rlk_lc_fail(c, rc, what);
    }
    return -1;
}

int rlk_lc_take_command(const char *cmd, int argc, char **argv, int i, rlk_lc_opts *o,
                        const char *synopsis)
{
    /* --hold: what runs is a sleep that the forwarded signal ends (lock_hold.c). */
    static char *hold_cmd[] = {"sleep", "infinity", NULL};

    if (o->hold && i < argc)
        return rlk_cli_usage(cmd, "--hold takes no command: it holds until Ctrl-C (%s --hold), "
                             "or give the command without --hold", synopsis);
    if (o->hold) {
        o->cmd = hold_cmd;
        if (o->no_wait && o->wait_given)
            return rlk_cli_usage(cmd, "-n and -w exclude each other");
        if (o->no_wait)
            o->wait_ms = 0;
        return rlk_lc_fit_grace(cmd, o);
    }
    if (i >= argc)
        return rlk_cli_usage(cmd, "missing '--' and the command to run (%s -- COMMAND...), "
                             "or --hold to hold it until Ctrl-C", synopsis);
    if (i + 1 >= argc)
        return rlk_cli_usage(cmd, "missing the command after '--'");
    if (o->no_wait && o->wait_given)
        return rlk_cli_usage(cmd, "%s and -w exclude each other",
                             strcmp(cmd, "lock") == 0 ? "-n" : "--no-wait");
    if (o->no_wait)
        o->wait_ms = 0;
    o->cmd = argv + i + 1;
    return rlk_lc_fit_grace(cmd, o);
}

int rlk_lc_fit_grace(const char *cmd, rlk_lc_opts *o)
{
    long long lease = o->lease_ms > 0 ? o->lease_ms : rlk_lc_renewed_lease(o), room;
    char given[32], fitted[32];

    if (lease < RLK_LC_MIN_LEASE_MS)
        return rlk_cli_usage(cmd, "a lease of %lld ms is too short to stop the command before "
                             "it ends (at least %lld ms)", lease, RLK_LC_MIN_LEASE_MS);
    o->margin_ms = 100 + lease / 100;
    /* A renewed lease: the loss is declared grace + margin before it runs
     * out from the last success, so never before two renewal periods (one
     * failed renewal is retried). A fixed lease has no renewals. */
    room = (o->lease_ms > 0 ? lease / 2 : lease / 3) - o->margin_ms;
    if (o->grace_ms > room) {
        if (o->grace_given) {
            rlk_lc_format_seconds(o->grace_ms, given, sizeof given);
            rlk_lc_format_seconds(room, fitted, sizeof fitted);
            fprintf(stderr, "rlk: warning: -k %s s does not fit in a lease of %lld ms: the "
                    "command gets SIGKILL %s s after SIGTERM\n", given, lease, fitted);
        }
        o->grace_ms = room;
    }
    return -1;
}

long long rlk_lc_renewed_lease(const rlk_lc_opts *o)
{
    return o->wd_lease_ms > 0 ? o->wd_lease_ms : RLK_LC_DEFAULT_LEASE_MS;
}

int rlk_lc_not_acquired(const rlk_lc_opts *o, const char *what, const char *detail)
{
    char waited[32];
    const char *open = detail ? " (" : "", *close = detail ? ")" : "";

    if (!detail)
        detail = "";
    rlk_lc_stats_print(o, what, NULL, 0, 0, o->conflict_code);
    if (o->wait_ms == 0 && !o->wait_given)
        return rlk_cli_fail(o->conflict_code, "%s: held by another%s%s%s", what, open, detail,
                            close);
    rlk_lc_format_seconds(o->wait_ms, waited, sizeof waited);
    return rlk_cli_fail(o->conflict_code, "%s: still held after %s s%s%s%s", what, waited, open,
                        detail, close);
}

int rlk_lc_not_acquired_delay(const rlk_lc_opts *o, const char *what, long long left_ms)
{
    char waited[32], left[32];

    rlk_lc_stats_print(o, what, NULL, 0, 0, o->conflict_code);
    rlk_lc_format_seconds(left_ms, left, sizeof left);
    if (o->wait_ms == 0 && !o->wait_given)
        return rlk_cli_fail(o->conflict_code, "%s: free, but in its lock-delay (a holder lost it "
                            "without releasing it): %s s left", what, left);
    rlk_lc_format_seconds(o->wait_ms, waited, sizeof waited);
    return rlk_cli_fail(o->conflict_code, "%s: still in its lock-delay after %s s (a holder lost "
                        "it without releasing it): %s s left", what, waited, left);
}

/* ---------------------------------------------------------------- misc */

long long rlk_lc_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void rlk_lc_json_string(FILE *out, const char *s, size_t len)
{
    fputc('"', out);
    for (size_t k = 0; k < len; k++) {
        unsigned char ch = (unsigned char)s[k];

        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}
