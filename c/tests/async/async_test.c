/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_test.c - the async test programs' shared runner and helpers
 * (async_test.h).
 */
#include "async_test.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aloop.h"
#include "async_procs.h"

const char *const at_debug_args[] = {"--enable-debug-command", "yes", NULL};

int at_run_cases(const at_case *cases, size_t n, const char *want, at_check_run_fn run)
{
    int ran = 0;

    for (size_t i = 0; i < n; i++) {
        if (strcmp(want, "all") != 0 && strcmp(want, cases[i].name) != 0)
            continue;
        run(cases[i].name, cases[i].fn);
        ran++;
    }
    return ran;
}

int at_main(const char *prog, const at_case *cases, size_t n, const char *want, const char *note,
            rlk_fx_server *srv, char *url, size_t url_len, at_check_run_fn run,
            at_check_summary_fn summary)
{
    return at_main_extra(prog, cases, n, want, note, NULL, srv, url, url_len, run, summary);
}

int at_main_extra(const char *prog, const at_case *cases, size_t n, const char *want,
                  const char *note, const char *const *extra, rlk_fx_server *srv, char *url,
                  size_t url_len, at_check_run_fn run, at_check_summary_fn summary)
{
    rlk_fx_config cfg;
    int ran;

    signal(SIGPIPE, SIG_IGN);
    rlk_fx_config_init(&cfg);
    cfg.extra = extra;
    if (rlk_fx_start(srv, &cfg) != 0)       /* over TLS when $RLK_TEST_TLS is set */
        return 1;
    rlk_fx_url(srv, -1, url, url_len);
    printf("%s (%s) on %s%s\n", prog, aloop_name(), url, note ? note : "");
    ran = at_run_cases(cases, n, want, run);
    rlk_fx_stop(srv);
    if (!ran) {
        fprintf(stderr, "%s (%s): no case %s\n", prog, aloop_name(), want);
        return 2;
    }
    return summary(prog);
}

long long at_srv_num(const rlk_fx_server *s, const char *fmt, const char *a, const char *b)
{
    redisReply *r = rlk_fx_command(s, fmt, a, b);
    long long v = -99;

    if (r && r->type == REDIS_REPLY_INTEGER)
        v = r->integer;
    else if (r && r->type == REDIS_REPLY_STRING)
        v = strtoll(r->str, NULL, 10);
    if (r)
        freeReplyObject(r);
    return v;
}

int at_srv_ok(const rlk_fx_server *s, const char *fmt, const char *a)
{
    redisReply *r = rlk_fx_command(s, fmt, a);
    int ok = r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0;

    if (r)
        freeReplyObject(r);
    return ok;
}

const char *at_srv_get(const rlk_fx_server *s, const char *key, char *buf, size_t len)
{
    redisReply *r = rlk_fx_command(s, "GET %s", key);

    snprintf(buf, len, "%s", r && r->type == REDIS_REPLY_STRING ? r->str : "");
    if (r)
        freeReplyObject(r);
    return buf;
}

void at_cluster_url(const rlk_fx_cluster *cl, char *url, size_t len)
{
    char a[128], b[128];

    rlk_fx_cluster_url(cl, 0, a, sizeof a);
    rlk_fx_cluster_url(cl, 1, b, sizeof b);
    snprintf(url, len, "%s+cluster://%s,%s", cl->node[0].tls ? "rediss" : "redis",
             strstr(a, "://") + 3, strstr(b, "://") + 3);
}

void at_on_fence(rlk_async *ac, const rlk_async_result *r, const redisReply *reply, void *p)
{
    at_fres *x = p;

    (void)ac;
    if (ap_in_call || x->calls)
        ap_rule_breaks++;
    x->calls++;
    x->err = r->err;
    x->value = r->value;
    snprintf(x->errstr, sizeof x->errstr, "%s", r->errstr ? r->errstr : "(null)");
    x->rtype = reply ? reply->type : -1;
    if (reply) {
        x->rint = reply->integer;
        x->relems = reply->elements;
        snprintf(x->rstr, sizeof x->rstr, "%.*s", (int)(reply->str ? reply->len : 0),
                 reply->str ? reply->str : "");
    }
}

int at_fres_done(void *p)
{
    return ((at_fres *)p)->calls > 0;
}

at_lost_log at_lost;

void at_on_lost(int kind, const char *name, const char *owner, int reason, void *ud)
{
    (void)ud;
    at_lost.calls++;
    at_lost.reason = reason;
    at_lost.kind = kind;
    at_lost.at = rlk_fx_now_ms();
    snprintf(at_lost.name, sizeof at_lost.name, "%s", name);
    snprintf(at_lost.owner, sizeof at_lost.owner, "%s", owner);
}

int at_lost_done(void *p)
{
    (void)p;
    return at_lost.calls > 0;
}

char *at_metrics_text(const rlk_metrics *m, int format, int *ret)
{
    size_t need = 0;
    char *buf;

    *ret = RLK_ERR_ARG;
    rlk_metrics_format(m, 1, NULL, format, NULL, 0, &need);
    if (need == 0 || (buf = malloc(need)) == NULL)
        return NULL;
    *ret = rlk_metrics_format(m, 1, NULL, format, buf, need, NULL);
    return buf;
}

int at_write_text(const char *path, const char *text)
{
    FILE *f;
    int ok;

    if (!path)
        return 1;
    f = fopen(path, "w");
    ok = f && fputs(text, f) >= 0;
    if (f)
        fclose(f);
    return ok;
}
