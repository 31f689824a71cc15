/*
 * lock_util.c - helpers of the lock commands: connecting with a watchdog
 * lease, option matching, number parsing, JSON strings, the clock.
 */
#include <string.h>
#include <time.h>

#include "lock_cli.h"

#define RLK_LC_MAX_SECONDS 1000000000LL     /* 10^9 s: about 31 years */
#define RLK_LC_MAX_MS 1000000000000LL       /* the scripts' lease bound */

rlk_client *rlk_lc_connect(const char *url, long long watchdog_lease_ms, int *exit_code)
{
    rlk_options o;
    rlk_client *c;

    rlk_options_init(&o);
    o.url = url ? url : rlk_cli_global_url;
    o.no_preload = 1;
    o.pool_size = 1;
    o.watchdog_lease_ms = watchdog_lease_ms;
    c = rlk_connect(&o);
    if (!c) {
        *exit_code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        return NULL;
    }
    if (rlk_err(c) != RLK_OK) {
        *exit_code = rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "%s", rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    *exit_code = RLK_EXIT_OK;
    return c;
}

int rlk_lc_fail(rlk_client *c, int rc, const char *what)
{
    return rlk_cli_fail(rlk_cli_exit_code(rc), "%s: %s", what, rlk_errstr(c));
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
    rlk_cli_usage(cmd, "option %s needs a positive whole number of milliseconds, not '%s'", opt,
                  text);
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
