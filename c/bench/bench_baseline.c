/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_baseline: the yardstick driver. Raw hiredis, no library: EVALSHA of
 * the same acquire and release scripts rlk uses (NOSCRIPT: SCRIPT LOAD and
 * retry once, as the library does), and for W2 a retry poll every 1 ms. */
#include "bench_clock.h"
#include "bench_dial.h"
#include "bench_driver.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define RLK_BENCH_POLL_NS INT64_C(1000000)

/* One EVALSHA command line, built once per contender. */
typedef struct rlk_bench_bl_cmd {
    const rlk_bench_script *script;
    char numkeys[16];
    int argc;
    const char *argv[3 + 2 * RLK_BENCH_MAX_PARAMS];
    size_t argvlen[3 + 2 * RLK_BENCH_MAX_PARAMS];
} rlk_bench_bl_cmd;

typedef struct rlk_bench_bl {
    redisContext *ctx;
    const rlk_bench_target *t;
    rlk_bench_values values;
    rlk_bench_bl_cmd acquire;
    rlk_bench_bl_cmd release;
} rlk_bench_bl;

static struct timeval rlk_bench_tv(int ms)
{
    struct timeval tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

static void rlk_bench_bl_build(rlk_bench_bl_cmd *cmd, const rlk_bench_script *s,
                               const rlk_bench_values *v)
{
    rlk_bench_call call;
    int i;

    rlk_bench_script_bind(s, v, &call);
    cmd->script = s;
    snprintf(cmd->numkeys, sizeof cmd->numkeys, "%d", call.nkeys);
    cmd->argv[0] = "EVALSHA";
    cmd->argv[1] = s->sha1;
    cmd->argv[2] = cmd->numkeys;
    cmd->argc = 3;
    for (i = 0; i < call.nkeys; i++) {
        cmd->argv[cmd->argc] = call.keys[i];
        cmd->argvlen[cmd->argc++] = call.keylens[i];
    }
    for (i = 0; i < call.nargs; i++) {
        cmd->argv[cmd->argc] = call.args[i];
        cmd->argvlen[cmd->argc++] = call.arglens[i];
    }
    for (i = 0; i < 3; i++)
        cmd->argvlen[i] = strlen(cmd->argv[i]);
}

static int rlk_bench_bl_ensure(rlk_bench_bl *b, char *err, size_t errlen)
{
    if (b->ctx->err == 0)
        return 0;
    if (redisReconnect(b->ctx) != REDIS_OK) {
        snprintf(err, errlen, "reconnect failed: %s", b->ctx->errstr);
        return -1;
    }
    redisSetTimeout(b->ctx, rlk_bench_tv(b->t->command_timeout_ms));
    return 0;
}

static redisReply *rlk_bench_bl_load(rlk_bench_bl *b, const rlk_bench_script *s)
{
    const char *argv[3] = {"SCRIPT", "LOAD", s->body};
    size_t argvlen[3] = {6, 4, s->body_len};

    return rlk_bench_command_argv(b->ctx, 3, argv, argvlen);
}

/* EVALSHA; on NOSCRIPT, SCRIPT LOAD and retry once. NULL with err on a
 * connection error; an error reply is returned as it is. */
static redisReply *rlk_bench_bl_call(rlk_bench_bl *b, rlk_bench_bl_cmd *cmd,
                                     char *err, size_t errlen)
{
    redisReply *r;

    if (rlk_bench_bl_ensure(b, err, errlen) != 0)
        return NULL;
    r = rlk_bench_command_argv(b->ctx, cmd->argc, cmd->argv, cmd->argvlen);
    if (r != NULL && r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOSCRIPT", 8) == 0) {
        freeReplyObject(r);
        r = rlk_bench_bl_load(b, cmd->script);
        if (r != NULL) {
            freeReplyObject(r);
            r = rlk_bench_command_argv(b->ctx, cmd->argc, cmd->argv, cmd->argvlen);
        }
    }
    if (r == NULL)
        snprintf(err, errlen, "connection error: %s", b->ctx->errstr);
    return r;
}

static int rlk_bench_bl_open(void **st, const rlk_bench_target *t,
                             const rlk_bench_identity *id, char *err, size_t errlen)
{
    rlk_bench_bl *b = calloc(1, sizeof *b);

    *st = NULL;
    if (b == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    b->t = t;
    b->ctx = rlk_bench_dial(t->host, t->port, rlk_bench_tv(t->connect_timeout_ms), err, errlen);
    if (b->ctx == NULL) {
        free(b);
        return -1;
    }
    redisSetTimeout(b->ctx, rlk_bench_tv(t->command_timeout_ms));
    b->values.lock = id->key;
    b->values.channel = id->channel;
    b->values.lease = t->lease_ms;
    b->values.owner = id->owner;
    b->values.message = "0";
    b->values.publish = "publish";
    b->values.waiters = id->waiters;
    b->values.grant = id->grant;
    b->values.ticket = "0";
    b->values.claim = "50";
    rlk_bench_bl_build(&b->acquire, t->acquire, &b->values);
    rlk_bench_bl_build(&b->release, t->release, &b->values);
    *st = b;
    return 0;
}

static rlk_bench_acq rlk_bench_bl_try_acquire(void *st, char *err, size_t errlen)
{
    rlk_bench_bl *b = st;
    redisReply *r = rlk_bench_bl_call(b, &b->acquire, err, errlen);
    rlk_bench_acq out = RLK_BENCH_ACQ_ERR;

    if (r == NULL)
        return RLK_BENCH_ACQ_ERR;
    if (r->type == REDIS_REPLY_NIL)
        out = RLK_BENCH_ACQ_OK;
    else if (r->type == REDIS_REPLY_INTEGER)
        out = RLK_BENCH_ACQ_HELD;
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "acquire: %s", r->str);
    else
        snprintf(err, errlen, "acquire: unexpected reply type %d", r->type);
    freeReplyObject(r);
    return out;
}

static int rlk_bench_bl_release(void *st, char *err, size_t errlen)
{
    rlk_bench_bl *b = st;
    redisReply *r = rlk_bench_bl_call(b, &b->release, err, errlen);
    int rc = -1;

    if (r == NULL)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        rc = 0;
    else if (r->type == REDIS_REPLY_ERROR)
        snprintf(err, errlen, "release: %s", r->str);
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(err, errlen, "release: replied %lld, not 1 (released)", r->integer);
    else if (r->type == REDIS_REPLY_NIL)
        snprintf(err, errlen, "release: replied nil (not the owner)");
    else
        snprintf(err, errlen, "release: unexpected reply type %d", r->type);
    freeReplyObject(r);
    return rc;
}

static rlk_bench_acq rlk_bench_bl_lock(void *st, const atomic_int *abandon, int64_t give_up_ns,
                                       char *err, size_t errlen)
{
    for (;;) {
        rlk_bench_acq a;

        if (atomic_load(abandon) || rlk_bench_now_ns() >= give_up_ns)
            return RLK_BENCH_ACQ_ABANDONED;
        a = rlk_bench_bl_try_acquire(st, err, errlen);
        if (a != RLK_BENCH_ACQ_HELD)
            return a;
        rlk_bench_sleep_ns(RLK_BENCH_POLL_NS);
    }
}

static void rlk_bench_bl_close(void *st)
{
    rlk_bench_bl *b = st;

    if (b == NULL)
        return;
    rlk_bench_close(b->ctx);
    free(b);
}

const rlk_bench_driver rlk_bench_baseline_driver = {
    "hiredis",
    RLK_BENCH_HIREDIS_VERSION_STR,
    rlk_bench_bl_open,
    rlk_bench_bl_try_acquire,
    rlk_bench_bl_release,
    rlk_bench_bl_lock,
    rlk_bench_bl_release,
    rlk_bench_bl_close,
    "raw hiredis: EVALSHA reentrant/acquire then EVALSHA reentrant/release on the client's own key",
    "raw hiredis: EVALSHA reentrant/acquire, retried every 1 ms while held; "
    "hold by sleeping; EVALSHA reentrant/release",
    NULL,     /* no metrics */
    NULL,   /* no subscriber: no timeline, */
    NULL,   /* no wake-ups */
};
