/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_check.c - rlk check [--json] [--name NAME]: what an operator runs before
 * trusting a server with locks. Each check is one finding (ok, info, warning,
 * error, unknown) with a message and, when not ok, the fix; docs/ops.md explains
 * every one. Exit 0: all ok (info included); 7: warnings or unknowns; 8: errors.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "check_cli.h"
#include "client/client.h"
#include "client/functions.h"

static const char *const level_words[] = {"ok", "info", "warning", "unknown", "error"};

rlk_ck_finding *rlk_ck_add(rlk_checker *k, const char *check, int level, const char *fmt, ...)
{
    static rlk_ck_finding spare;
    rlk_ck_finding *f = k->n < RLK_CK_MAX_FINDINGS ? &k->f[k->n++] : &spare;
    va_list ap;

    memset(f, 0, sizeof *f);
    f->check = check;
    f->level = level;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return f;
}

void rlk_ck_fix(rlk_ck_finding *f, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(f->fix, sizeof f->fix, fmt, ap);
    va_end(ap);
}

void rlk_ck_json(rlk_ck_finding *f, const char *fmt, ...)
{
    size_t used = strlen(f->json);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(f->json + used, sizeof f->json - used, fmt, ap);
    va_end(ap);
}

const char *rlk_ck_jstr(char *buf, size_t len, const char *s)
{
    size_t o = 0;

    if (len < 3)
        return "\"\"";
    buf[o++] = '"';
    for (; *s && o + 8 < len; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)ch;
        } else if (ch < 0x20) {
            o += (size_t)snprintf(buf + o, len - o, "\\u%04x", ch);
        } else {
            buf[o++] = (char)ch;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

int rlk_ck_conn_error(int rc)
{
    return rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_AUTH;
}

int rlk_ck_cmd(rlk_checker *k, redisReply **r, const char *const *argv)
{
    int argc = 0, rc;

    while (argv[argc])
        argc++;
    *r = NULL;
    rc = rlk_command(k->c, argc, argv, NULL, r);
    if (rlk_ck_conn_error(rc))
        k->fatal = rc;
    return rc;
}
int rlk_ck_info_field(const char *info, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);

    for (const char *p = info; p && *p;) {
        const char *eol = strpbrk(p, "\r\n");
        size_t linelen = eol ? (size_t)(eol - p) : strlen(p);

        if (linelen > n && strncmp(p, name, n) == 0 && p[n] == ':') {
            size_t vlen = linelen - n - 1;

            if (vlen >= len)
                vlen = len - 1;
            memcpy(buf, p + n + 1, vlen);
            buf[vlen] = '\0';
            return 0;
        }
        p = eol ? eol + strspn(eol, "\r\n") : NULL;
    }
    buf[0] = '\0';
    return -1;
}

long long rlk_ck_info_int(const char *info, const char *name, long long fallback)
{
    char buf[64];

    if (!info || rlk_ck_info_field(info, name, buf, sizeof buf) != 0 || !buf[0])
        return fallback;
    return strtoll(buf, NULL, 10);
}

const char *rlk_ck_tls_refusal(const char *err)
{
    const char *t = strstr(err, "TLS: the server's certificate");

    return t ? t + 5 : NULL;
}

/* ---------------------------------------------------------------- output */

static void print_text(const rlk_checker *k)
{
    printf("rlk check %s\n", rlk_cli_show(rlk_client_url(k->c)));
    for (int i = 0; i < k->n; i++) {
        const rlk_ck_finding *f = &k->f[i];

        printf("%-8s %-12s %s\n", level_words[f->level], f->check, rlk_cli_show(f->message));
        if (f->fix[0] && f->level != RLK_CF_OK)
            printf("%-8s %-12s fix: %s\n", "", "", rlk_cli_show(f->fix));
    }
}

static void print_json(const rlk_checker *k, const char *result, int errors, int warnings)
{
    char a[600], b[1100];

    printf("{\"url\": %s, \"result\": \"%s\", \"errors\": %d, \"warnings\": %d, \"checks\": [",
           rlk_ck_jstr(a, sizeof a, rlk_client_url(k->c)), result, errors, warnings);
    for (int i = 0; i < k->n; i++) {
        const rlk_ck_finding *f = &k->f[i];

        printf("%s\n  {\"check\": \"%s\", \"level\": \"%s\", \"message\": %s", i ? "," : "",
               f->check, level_words[f->level], rlk_ck_jstr(b, sizeof b, f->message));
        if (f->fix[0] && f->level != RLK_CF_OK)
            printf(", \"fix\": %s", rlk_ck_jstr(a, sizeof a, f->fix));
        printf("%s}", f->json);
    }
    printf("\n]}\n");
}

/* 1 when the client calls the library (--functions, or AUTO with this release's library on
 * the server): the ACL and scripts checks then judge FCALL instead of EVALSHA. */
static int check_fcall_mode(rlk_client *c)
{
    int active = rlk_functions_active(c);
    rlk_functions_state st;

    if (active >= 0)
        return active;
    return rlk_verify_functions(c, &st) == RLK_OK && st.present && st.same_code;
}

/* rlk_cli_connect, but a server whose TLS certificate rlk refuses (expired, another host's
 * name, no trusted CA) is still checked: the refusal becomes the transport check's error and
 * the report is made over a connection without the certificate check. */
static rlk_client *check_connect(rlk_checker *k, int *code)
{
    rlk_options o;
    rlk_client *c;
    const char *why;

    rlk_options_init(&o);
    if ((*code = rlk_cli_conn_options(k->o->url, &o)) >= 0)
        return NULL;
    o.no_preload = 1;
    o.pool_size = 1;
    if (!(c = rlk_connect(&o))) {
        *code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        return NULL;
    }
    if (rlk_err(c) != RLK_OK && !o.tls_insecure && (why = rlk_ck_tls_refusal(rlk_errstr(c))) != NULL) {
        snprintf(k->tls_refused, sizeof k->tls_refused, "%s", why);
        rlk_free(c);
        o.tls_insecure = 1;
        if (!(c = rlk_connect(&o))) {
            *code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
            return NULL;
        }
        k->refused_first = 1;
    }
    if (rlk_err(c) != RLK_OK) {
        *code = rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "%s", rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    rlk_cli_connected(c);
    *code = RLK_EXIT_OK;
    return c;
}

static int check_run(int argc, char **argv)
{
    rlk_ck_opts o = {NULL, "rlk-check", NULL, 0};
    rlk_checker k;
    int code, errors = 0, warnings = 0;

    for (int i = 1; i < argc;) {
        int got = rlk_cli_opt_value("check", argc, argv, &i, "--url", &o.url);

        if (got == 0)
            got = rlk_cli_opt_value("check", argc, argv, &i, "--name", &o.name);
        if (got == 0)
            got = rlk_cli_opt_value("check", argc, argv, &i, "--user", &o.user);
        if (got == 0)
            got = rlk_cli_global_opt("check", argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(rlk_cli_help_check, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o.json = 1;
        else if (argv[i][0] == '-')
            return rlk_cli_unknown_option("check", argv[i]);
        else
            return rlk_cli_usage("check", "unexpected argument '%s'", argv[i]);
        i++;
    }
    if (!o.name[0] || strlen(o.name) > 200)
        return rlk_cli_usage("check", "--name must be 1..200 characters");
    if (o.user && (!o.user[0] || strlen(o.user) > 100))
        return rlk_cli_usage("check", "--user must be 1..100 characters");
    memset(&k, 0, sizeof k);
    k.o = &o;
    k.script_load_allowed = -1;
    snprintf(k.server, sizeof k.server, "the server");
    k.c = check_connect(&k, &code);
    if (!k.c)
        return code;
    k.fcall = check_fcall_mode(k.c);
    /* Its first call found no server (stopped, unreachable): said now, once. Every check
     * after it would wait the command timeout again for the same answer. */
    if (rlk_err(k.c) == RLK_ERR_TIMEOUT || rlk_err(k.c) == RLK_ERR_IO) {
        code = rlk_cli_fail(rlk_cli_exit_code(rlk_err(k.c)), "check: %s", rlk_errstr(k.c));
        rlk_free(k.c);
        return code;
    }
    /* In this order: family, role, eviction and persistence read the INFO of rlk_ck_server;
     * acl uses what rlk_ck_family found about the native token lock; scripts uses what
     * rlk_ck_acl found about SCRIPT LOAD. */
    static void (*const checks[])(rlk_checker *) = {rlk_ck_server, rlk_ck_family, rlk_ck_transport,
                                                rlk_ck_role,
                                                rlk_ck_eviction,
                                                rlk_ck_persistence, rlk_ck_acl, rlk_ck_scripts,
                                                rlk_ck_clock, rlk_ck_latency};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0] && !k.fatal; i++)
        checks[i](&k);
    if (k.fatal) {
        code = rlk_cli_fail(rlk_cli_exit_code(k.fatal), "check: %s", rlk_errstr(k.c));
    } else {
        for (int i = 0; i < k.n; i++) {
            errors += k.f[i].level == RLK_CF_ERROR;
            warnings += k.f[i].level == RLK_CF_WARNING || k.f[i].level == RLK_CF_UNKNOWN;
        }
        const char *result = errors ? "error" : warnings ? "warning" : "ok";

        if (o.json)
            print_json(&k, result, errors, warnings);
        else
            print_text(&k);
        fflush(stdout);
        code = errors ? RLK_EXIT_CHECK_ERRORS : warnings ? RLK_EXIT_CHECK_WARNINGS : RLK_EXIT_OK;
        if (code != RLK_EXIT_OK)
            rlk_cli_fail(code, "check %s: %d error%s, %d warning%s", rlk_client_url(k.c), errors,
                         errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
    }
    free(k.info);
    rlk_free(k.c);
    return code;
}

const rlk_cli_command rlk_cmd_check = {
    "check",
    "check a server before trusting it with locks (rlk check [--json])",
    rlk_cli_help_check,
    check_run,
};
