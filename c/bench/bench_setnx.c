/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_setnx: the plainest Redis lock, for the server's cost per pair
 * (rlk-bench --baseline --lock setnx): SET key owner NX PX lease to
 * acquire, EVALSHA of a compare-and-delete script to release; W2 retries
 * the SET every 1 ms. Not reentrant, no unlock message, no Redisson layout:
 * the floor that rlk's scripts are compared against. */
#include "bench_clock.h"
#include "bench_dial.h"
#include "bench_driver.h"

#include <hiredis/hiredis.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define RLK_BENCH_SETNX_POLL_NS INT64_C(1000000)

static const char rlk_bench_cad[] =
    "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end "
    "return 0";

typedef struct rlk_bench_sx {
    redisContext *ctx;
    const rlk_bench_target *t;
    const rlk_bench_identity *id;
    char sha1[41];
} rlk_bench_sx;

static int rlk_bench_sx_open(void **st, const rlk_bench_target *t, const rlk_bench_identity *id,
                             char *err, size_t errlen)
{
    rlk_bench_sx *b = calloc(1, sizeof *b);
    struct timeval tv = {t->connect_timeout_ms / 1000, (t->connect_timeout_ms % 1000) * 1000};
    redisReply *r;

    *st = NULL;
    if (b == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    b->t = t;
    b->id = id;
    b->ctx = rlk_bench_dial(t->host, t->port, tv, err, errlen);
    if (b->ctx == NULL) {
        free(b);
        return -1;
    }
    tv.tv_sec = t->command_timeout_ms / 1000;
    tv.tv_usec = (t->command_timeout_ms % 1000) * 1000;
    redisSetTimeout(b->ctx, tv);
    r = rlk_bench_command(b->ctx, "SCRIPT LOAD %s", rlk_bench_cad);
    if (r == NULL || r->type != REDIS_REPLY_STRING || r->len != 40) {
        snprintf(err, errlen, "SCRIPT LOAD compare-and-delete: %s",
                 r == NULL ? b->ctx->errstr : r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
        if (r)
            freeReplyObject(r);
        rlk_bench_close(b->ctx);
        free(b);
        return -1;
    }
    memcpy(b->sha1, r->str, 41);
    freeReplyObject(r);
    *st = b;
    return 0;
}

static rlk_bench_acq rlk_bench_sx_try_acquire(void *st, char *err, size_t errlen)
{
    rlk_bench_sx *b = st;
    redisReply *r = rlk_bench_command(b->ctx, "SET %s %s NX PX %s", b->id->key, b->id->owner,
                                 b->t->lease_ms);
    rlk_bench_acq out = RLK_BENCH_ACQ_ERR;

    if (r == NULL) {
        snprintf(err, errlen, "SET: %s", b->ctx->errstr);
        return out;
    }
    if (r->type == REDIS_REPLY_STATUS)
        out = RLK_BENCH_ACQ_OK;
    else if (r->type == REDIS_REPLY_NIL)
        out = RLK_BENCH_ACQ_HELD;
    else
        snprintf(err, errlen, "SET: %s", r->type == REDIS_REPLY_ERROR ? r->str : "bad reply");
    freeReplyObject(r);
    return out;
}

static int rlk_bench_sx_release(void *st, char *err, size_t errlen)
{
    rlk_bench_sx *b = st;
    redisReply *r = rlk_bench_command(b->ctx, "EVALSHA %s 1 %s %s", b->sha1, b->id->key,
                                 b->id->owner);
    int rc = -1;

    if (r == NULL)
        snprintf(err, errlen, "EVALSHA: %s", b->ctx->errstr);
    else if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        rc = 0;
    else
        snprintf(err, errlen, "release: %s", r->type == REDIS_REPLY_ERROR ? r->str
                 : "not the owner");
    if (r)
        freeReplyObject(r);
    return rc;
}

static rlk_bench_acq rlk_bench_sx_lock(void *st, const atomic_int *abandon, int64_t give_up_ns,
                                       char *err, size_t errlen)
{
    for (;;) {
        rlk_bench_acq a;

        if (atomic_load(abandon) || rlk_bench_now_ns() >= give_up_ns)
            return RLK_BENCH_ACQ_ABANDONED;
        a = rlk_bench_sx_try_acquire(st, err, errlen);
        if (a != RLK_BENCH_ACQ_HELD)
            return a;
        rlk_bench_sleep_ns(RLK_BENCH_SETNX_POLL_NS);
    }
}

static void rlk_bench_sx_close(void *st)
{
    rlk_bench_sx *b = st;

    if (b == NULL)
        return;
    rlk_bench_close(b->ctx);
    free(b);
}

const rlk_bench_driver rlk_bench_setnx_driver = {
    "hiredis",
    RLK_BENCH_HIREDIS_VERSION_STR,
    rlk_bench_sx_open,
    rlk_bench_sx_try_acquire,
    rlk_bench_sx_release,
    rlk_bench_sx_lock,
    rlk_bench_sx_release,
    rlk_bench_sx_close,
    "raw hiredis: SET key owner NX PX lease, then EVALSHA of a compare-and-delete script",
    "raw hiredis: SET key owner NX PX lease, retried every 1 ms while held; hold by sleeping; "
    "EVALSHA compare-and-delete",
    NULL,     /* no metrics */
    NULL,   /* no subscriber: no timeline, */
    NULL,   /* no wake-ups */
};
