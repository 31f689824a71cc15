/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_fence.c - rlk fence OP [KEY] [ARG]...: a write through the fencing
 * check (scripts/fence/<op>.lua via rlk_fence_write), with the token and the
 * fence taken from `rlk lock --fenced`'s environment by default.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "help_gen.h"
#include "cli.h"

typedef struct fence_opts {
    const char *op;
    const char *url;
    const char *token;
    const char *fence;
    const char *expiry;         /* "PX" / "EX" */
    const char *expiry_value;
    int raw;                    /* -1: decide by isatty(stdout) */
    const char **words;         /* KEY then the ARGs */
    int nwords;
} fence_opts;

/* Returns -1 to go on, or an exit code. */
static int fence_opt(int argc, char **argv, int *i, fence_opts *o)
{
    const char *v;
    int got;

    if ((got = rlk_cli_opt_value("fence", argc, argv, i, "--token", &o->token)) == 0)
        got = rlk_cli_opt_value("fence", argc, argv, i, "--fence", &o->fence);
    if (got == 0 && (got = rlk_cli_opt_value("fence", argc, argv, i, "--px", &v)) > 0) {
        o->expiry = o->expiry ? "" : "PX";
        o->expiry_value = v;
    }
    if (got == 0 && (got = rlk_cli_opt_value("fence", argc, argv, i, "--ex", &v)) > 0) {
        o->expiry = o->expiry ? "" : "EX";
        o->expiry_value = v;
    }
    return rlk_cli_reply_opt("fence", argc, argv, i, got, &o->url, &o->raw, rlk_cli_help_fence);
}

/* The operations (scripts/fence/), with the words each needs at least (KEY and its ARGs) and
 * at most (-1: no bound), and their synopsis. The script checks the rest (options, pairs). */
static const struct {
    const char *op;
    int min, max;
    const char *synopsis;
} fence_ops[] = {
    {"set", 2, -1, "set KEY VALUE [EX s | PX ms | KEEPTTL] [NX | XX] [GET]"},
    {"hset", 3, -1, "hset KEY FIELD VALUE [FIELD VALUE]..."},
    {"del", 1, 1, "del KEY"},
    {"expire", 2, -1, "expire KEY S [NX | XX | GT | LT]"},
    {"pexpire", 2, -1, "pexpire KEY MS [NX | XX | GT | LT]"},
    {"incrby", 2, 2, "incrby KEY INCREMENT"},
    {"rpush", 2, -1, "rpush KEY ELEMENT..."},
    {"lpush", 2, -1, "lpush KEY ELEMENT..."},
    {"xadd", 4, -1, "xadd KEY ID FIELD VALUE [FIELD VALUE]..."},
    {"check", 0, 0, "check"},
};

#define FENCE_NOPS (sizeof fence_ops / sizeof fence_ops[0])

/* OP known and given as many words as it takes: -1, else exit 2 after a usage error. */
static int fence_check_op(const fence_opts *o)
{
    for (size_t k = 0; k < FENCE_NOPS; k++) {
        if (strcmp(o->op, fence_ops[k].op) != 0)
            continue;
        if (k == FENCE_NOPS - 1 && o->nwords != 0)
            return rlk_cli_usage("fence", "check takes no KEY or ARG");
        if (o->nwords == 0 && fence_ops[k].min > 0)
            return rlk_cli_usage("fence", "%s: missing KEY (rlk fence %s)", o->op,
                                 fence_ops[k].synopsis);
        if (o->nwords < fence_ops[k].min)
            return rlk_cli_usage("fence", "%s: missing arguments after KEY (rlk fence %s)", o->op,
                                 fence_ops[k].synopsis);
        if (fence_ops[k].max >= 0 && o->nwords > fence_ops[k].max)
            return rlk_cli_usage("fence", "%s: too many arguments (rlk fence %s)", o->op,
                                 fence_ops[k].synopsis);
        return -1;
    }
    return rlk_cli_usage("fence", "unknown OP '%s': set, hset, del, expire, pexpire, incrby, "
                         "rpush, lpush, xadd or check", o->op);
}

/* Options are words starting with "--" (or -h) before a "--"; every other word
 * is OP, KEY or an ARG, a negative number ("incrby KEY -5") included. */
static int fence_parse(int argc, char **argv, fence_opts *o)
{
    int words_only = 0;

    for (int i = 1; i < argc;) {
        const char *w = argv[i];

        if (!words_only && strcmp(w, "--") == 0) {
            words_only = 1;
            i++;
        } else if (!words_only && (strncmp(w, "--", 2) == 0 || strcmp(w, "-h") == 0)) {
            int rc = fence_opt(argc, argv, &i, o);

            if (rc >= 0)
                return rc;
        } else if (!o->op) {
            o->op = argv[i++];
        } else {
            o->words[o->nwords++] = argv[i++];
        }
    }
    if (!o->op)
        return rlk_cli_usage("fence", "missing OP (set, hset, del, expire, pexpire, incrby, rpush, "
                             "lpush, xadd, check)");
    if (o->expiry && !o->expiry[0])
        return rlk_cli_usage("fence", "--px and --ex: give one of them, once");
    if (o->expiry && strcmp(o->op, "set") != 0)
        return rlk_cli_usage("fence", "--%s is for 'set' only", o->expiry[0] == 'P' ? "px" : "ex");
    return fence_check_op(o);
}

/* The token: --token, else $RLK_FENCE_TOKEN; a decimal integer 1..2^53-2. */
static int fence_token(const fence_opts *o, uint64_t *token)
{
    const char *s = o->token ? o->token : getenv("RLK_FENCE_TOKEN");
    const char *from = o->token ? "--token" : "RLK_FENCE_TOKEN";
    char *end;
    unsigned long long v;

    if (!s || !*s)
        return rlk_cli_usage("fence", "no token: give --token T, or run under 'rlk lock --fenced NAME'");
    errno = 0;
    v = strtoull(s, &end, 10);
    if (*s < '1' || *s > '9' || *end || errno || v > 9007199254740990ULL)
        return rlk_cli_usage("fence", "%s '%s' is not a token (an integer 1..2^53-2)", from, s);
    *token = (uint64_t)v;
    return -1;
}

/* The fence: --fence, else {NAME}:fence (NAME:fence when NAME has a hash tag) for
 * $RLK_LOCK_NAME, in *key (malloc'd). */
static int fence_key(const fence_opts *o, char **key)
{
    const char *name = getenv("RLK_LOCK_NAME");
    const char *open, *close;
    size_t len;

    if (o->fence) {
        if (!o->fence[0])
            return rlk_cli_usage("fence", "--fence is empty");
        *key = strdup(o->fence);
    } else {
        if (!name || !*name)
            return rlk_cli_usage("fence", "no fence: give --fence FENCE, or run under 'rlk lock --fenced NAME'");
        len = strlen(name) + sizeof "{}:fence";
        *key = malloc(len);
        open = strchr(name, '{');
        close = open ? strchr(open + 1, '}') : NULL;
        if (*key && close && close > open + 1)
            snprintf(*key, len, "%s:fence", name);
        else if (*key)
            snprintf(*key, len, "{%s}:fence", name);
    }
    if (!*key)
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    return -1;
}

static int fence_call(const fence_opts *o, const char *fence, uint64_t token)
{
    redisReply *reply = NULL;
    uint64_t highest = 0;
    int code, rc, nargs = o->nwords > 0 ? o->nwords - 1 : 0;
    const char **args = calloc((size_t)nargs + 3, sizeof *args);
    rlk_client *c;

    if (!args)
        return rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    for (int i = 0; i < nargs; i++)
        args[i] = o->words[i + 1];
    if (o->expiry) {
        args[nargs++] = o->expiry;
        args[nargs++] = o->expiry_value;
    }
    c = rlk_cli_connect(o->url, NULL, 1, &code);
    if (!c) {
        free(args);
        return code;
    }
    rc = rlk_fence_write(c, o->op, fence, o->nwords > 0 ? o->words[0] : NULL, token, nargs, args, NULL,
                         &highest, &reply);
    if (rc == RLK_ERR_FENCED) {
        code = rlk_cli_fail(RLK_EXIT_FENCED, "fenced: token %" PRIu64 " is below the highest accepted %" PRIu64,
                            token, highest);
    } else if (rc == RLK_ERR_ARG) {
        code = rlk_cli_fail(RLK_EXIT_USAGE, "fence %s: %s", o->op, rlk_errstr(c));
    } else if (rc != RLK_OK) {
        code = rlk_cli_fail(rlk_cli_exit_code(rc), "fence %s: %s", o->op, rlk_errstr(c));
    } else {
        if (reply)
            rlk_cli_print_reply(stdout, reply, o->raw >= 0 ? o->raw : !isatty(STDOUT_FILENO));
        freeReplyObject(reply);
        code = RLK_EXIT_OK;
    }
    rlk_free(c);
    free(args);
    return code;
}

static int fence_run(int argc, char **argv)
{
    fence_opts o = {NULL, NULL, NULL, NULL, NULL, NULL, -1, NULL, 0};
    uint64_t token = 0;
    char *fence = NULL;
    int rc;

    o.words = calloc((size_t)argc, sizeof *o.words);
    if (!o.words)
        rc = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
    else if ((rc = fence_parse(argc, argv, &o)) < 0 && (rc = fence_token(&o, &token)) < 0 &&
             (rc = fence_key(&o, &fence)) < 0)
        rc = fence_call(&o, fence, token);
    free(fence);
    free(o.words);
    return rc;
}

const rlk_cli_command rlk_cmd_fence = {
    "fence",
    "write through the fencing check (rlk fence set KEY VALUE, under rlk lock --fenced)",
    rlk_cli_help_fence,
    fence_run,
};
