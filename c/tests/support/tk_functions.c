/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tk_functions.c - functions mode for the suites that start with
 * tk_suite_start (tk_util.h): with $RLK_TEST_FUNCTIONS set to the path of
 * docs/acl.md, the server gets the Functions library rlk (FUNCTION LOAD, as
 * the default user) and a user rlkfn made from the page's functions-mode rule
 * line ("user appfn on ..."), its key and channel patterns widened to ~* &*
 * (the suites use names of their own) and +incr added (fl_fair's sequence
 * counter, a command of the test, not of rlk). The suite's URL names that user, so
 * every client of the suite (children too) runs as a user that may FCALL but
 * not EVAL, EVALSHA or SCRIPT; the clients, in their default AUTO mode, find
 * the library and use FCALL. Before the suite: EVAL, EVALSHA and SCRIPT LOAD
 * as rlkfn must be refused (the control) and FCALL_RO rlk_version allowed.
 * After it: INFO commandstats must show FCALL calls and no EVAL / EVALSHA
 * call that ran.
 */
#include "tk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rlk.h>

#define TK_FN_USER "rlkfn"
#define TK_FN_PASS "rlkfn-secret"

static int tk_fn_on;

/* The rule words after "user appfn on " in the page, minus its key and channel patterns. */
static int tk_fn_rules(const char *doc, char *out, size_t len)
{
    FILE *f = fopen(doc, "r");
    char line[8192];
    int found = 0;

    if (!f) {
        fprintf(stderr, "functions mode: cannot read %s\n", doc);
        return -1;
    }
    out[0] = '\0';
    while (fgets(line, sizeof line, f)) {
        char *save = NULL;

        if (strncmp(line, "user appfn on ", 14) != 0)
            continue;
        found++;
        for (char *w = strtok_r(line + 14, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
            if (w[0] != '~' && w[0] != '&' && w[0] != '>' && strlen(out) + strlen(w) + 2 < len)
                strcat(strcat(out, w), " ");
    }
    fclose(f);
    if (found != 1)
        fprintf(stderr, "functions mode: %s has %d lines 'user appfn on ...' (expected 1)\n", doc,
                found);
    return found == 1 ? 0 : -1;
}

static int tk_fn_setuser(rlk_fx_server *srv, char *rules)
{
    const char *argv[160];
    char *save = NULL;
    int n = 0, ok;
    redisContext *c = rlk_fx_connect(srv);
    redisReply *r;

    if (!c)
        return -1;
    argv[n++] = "ACL";
    argv[n++] = "SETUSER";
    argv[n++] = TK_FN_USER;
    argv[n++] = "on";
    argv[n++] = ">" TK_FN_PASS;
    for (char *w = strtok_r(rules, " ", &save); w && n < 156; w = strtok_r(NULL, " ", &save))
        argv[n++] = w;
    argv[n++] = "+incr";   /* fl_fair's own sequence counter (not a command of rlk) */
    argv[n++] = "~*";
    argv[n++] = "&*";
    r = redisCommandArgv(c, n, argv, NULL);
    ok = r && r->type == REDIS_REPLY_STATUS;
    if (!ok)
        fprintf(stderr, "functions mode: ACL SETUSER: %s\n", r && r->str ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    if (ok) {
        const rlk_library_info *lib = rlk_embedded_library();
        const char *load[4] = {"FUNCTION", "LOAD", "REPLACE", lib->code};
        size_t lens[4] = {8, 4, 7, lib->code_len};

        r = redisCommandArgv(c, 4, load, lens);
        ok = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "rlk") == 0;
        if (!ok)
            fprintf(stderr, "functions mode: FUNCTION LOAD: %s\n", r && r->str ? r->str : "no reply");
        if (r)
            freeReplyObject(r);
    }
    redisFree(c);
    return ok ? 0 : -1;
}

/* As rlkfn: each command of the control is refused (NOPERM), FCALL_RO rlk_version is not. */
static int tk_fn_control(rlk_fx_server *srv)
{
    static const char *const denied[][4] = {
        {"EVAL", "return 1", "0", NULL},
        {"EVALSHA", "0000000000000000000000000000000000000000", "0", NULL},
        {"SCRIPT", "LOAD", "return 1", NULL},
        {"SCRIPT", "FLUSH", NULL, NULL},
    };
    redisContext *c = rlk_fx_connect(srv);
    redisReply *r;
    int bad = 0;

    if (!c)
        return -1;
    r = redisCommand(c, "AUTH %s %s", TK_FN_USER, TK_FN_PASS);
    bad |= !r || r->type == REDIS_REPLY_ERROR;
    if (r)
        freeReplyObject(r);
    for (size_t i = 0; i < sizeof denied / sizeof denied[0]; i++) {
        int argc = 0;

        while (argc < 4 && denied[i][argc])
            argc++;
        r = redisCommandArgv(c, argc, (const char **)denied[i], NULL);
        if (!r || r->type != REDIS_REPLY_ERROR || strncmp(r->str, "NOPERM", 6) != 0) {
            fprintf(stderr, "functions mode: %s %s as %s was not refused with NOPERM (%s)\n",
                    denied[i][0], denied[i][1], TK_FN_USER, r && r->str ? r->str : "no error");
            bad = 1;
        }
        if (r)
            freeReplyObject(r);
    }
    r = redisCommand(c, "FCALL_RO rlk_version 0");
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        fprintf(stderr, "functions mode: FCALL_RO rlk_version as %s failed (%s)\n", TK_FN_USER,
                r && r->str ? r->str : "not an array");
        bad = 1;
    }
    if (r)
        freeReplyObject(r);
    redisFree(c);
    if (!bad)
        fprintf(stderr, "functions mode: as %s, EVAL, EVALSHA, SCRIPT LOAD and SCRIPT FLUSH are "
                "refused (NOPERM); FCALL_RO rlk_version runs\n", TK_FN_USER);
    return bad ? -1 : 0;
}

int tk_functions_setup(rlk_fx_server *srv, char *url, size_t len)
{
    const char *doc = getenv("RLK_TEST_FUNCTIONS");
    char rules[8192];
    int n;

    if (!doc || !*doc)
        return 0;
    if (tk_fn_rules(doc, rules, sizeof rules) != 0 || tk_fn_setuser(srv, rules) != 0 ||
        tk_fn_control(srv) != 0)
        return -1;
    n = snprintf(url, len, "%s://%s:%s@127.0.0.1:%d", srv->tls ? "rediss" : "redis", TK_FN_USER,
                 TK_FN_PASS, srv->port);
    if (n < 0 || (size_t)n >= len)
        return -1;
    tk_fn_on = 1;
    return 1;
}

/* calls=N of one cmdstat line in INFO commandstats text (0 when absent). */
static long long tk_fn_calls(const char *info, const char *cmd)
{
    char key[64];
    const char *at;

    snprintf(key, sizeof key, "cmdstat_%s:calls=", cmd);
    at = strstr(info, key);
    return at ? atoll(at + strlen(key)) : 0;
}

int tk_functions_check(rlk_fx_server *srv)
{
    redisReply *r;
    long long fcall, fcall_ro, eval, evalsha;

    if (!tk_fn_on)
        return 0;
    r = rlk_fx_command(srv, "INFO commandstats");
    if (!r || r->type != REDIS_REPLY_STRING) {
        fprintf(stderr, "FAIL functions mode: INFO commandstats failed\n");
        if (r)
            freeReplyObject(r);
        return -1;
    }
    fcall = tk_fn_calls(r->str, "fcall");
    fcall_ro = tk_fn_calls(r->str, "fcall_ro");
    eval = tk_fn_calls(r->str, "eval");
    evalsha = tk_fn_calls(r->str, "evalsha");
    freeReplyObject(r);
    fprintf(stderr, "functions mode: the server ran %lld FCALL, %lld FCALL_RO, %lld EVAL, %lld "
            "EVALSHA\n", fcall, fcall_ro, eval, evalsha);
    if (fcall == 0 || eval != 0 || evalsha != 0) {
        fprintf(stderr, "FAIL functions mode: expected FCALL calls and no EVAL / EVALSHA\n");
        return -1;
    }
    return 0;
}
