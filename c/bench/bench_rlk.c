/* bench_rlk: the rlk driver. W1 calls the scripts by name through the
 * library (rlk_evalv: EVALSHA, NOSCRIPT reload, reconnects); W2 goes
 * through the blocking lock runtime (rlk_lock_*), which is filled in below
 * once the library has it. Built only when the rlk library target exists. */
#include "bench_driver.h"

#include "rlk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct rlk_bench_lib {
    rlk_client *client;
    const rlk_bench_target *t;
    const rlk_bench_identity *id;
    rlk_bench_values values;
    rlk_bench_call acquire;
    rlk_bench_call release;
    void *lock;   /* W2: the lock runtime's object, see below */
} rlk_bench_lib;

static void rlk_bench_lib_error(rlk_bench_lib *b, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s: %s", what, rlk_strerror(rlk_err(b->client)),
             rlk_errstr(b->client));
}

/* ================================================================== W2 ====
 * LEAD: fill in these three functions when the blocking lock API
 * (rlk_lock_*, pub/sub wake-ups) exists, then make
 * rlk_bench_rlk_w2_available() return 1. Contract:
 *   rlk_bench_lib_w2_open:   create b->lock for lock key b->id->key on
 *                            b->client; 0, or -1 with err.
 *   rlk_bench_lib_lock:      blocking acquire with the library's own waiting.
 *                            Return RLK_BENCH_ACQ_OK when held; return
 *                            RLK_BENCH_ACQ_ABANDONED soon after *abandon
 *                            becomes nonzero (e.g. wait in slices of at most
 *                            100 ms, or use a wake-up the runtime offers);
 *                            RLK_BENCH_ACQ_ERR with err on failure.
 *   rlk_bench_lib_unlock:    release what lock() took; 0, or -1 with err.
 * Until then rlk-bench refuses W2 without --baseline (exit 2). */
int rlk_bench_rlk_w2_available(void)
{
    return 0;
}

static int rlk_bench_lib_w2_open(rlk_bench_lib *b, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    b->lock = NULL;
    return 0;
}

static rlk_bench_acq rlk_bench_lib_lock(void *st, const atomic_int *abandon,
                                        char *err, size_t errlen)
{
    (void)st;
    (void)abandon;
    snprintf(err, errlen, "W2 needs the lock runtime (not built yet)");
    return RLK_BENCH_ACQ_ERR;
}

static int rlk_bench_lib_unlock(void *st, char *err, size_t errlen)
{
    (void)st;
    snprintf(err, errlen, "W2 needs the lock runtime (not built yet)");
    return -1;
}

static void rlk_bench_lib_w2_close(rlk_bench_lib *b)
{
    b->lock = NULL;
}
/* ============================================================ end of W2 == */

static int rlk_bench_lib_open(void **st, const rlk_bench_target *t,
                              const rlk_bench_identity *id, char *err, size_t errlen)
{
    rlk_bench_lib *b = calloc(1, sizeof *b);
    rlk_options opts;

    *st = NULL;
    if (b == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    rlk_options_init(&opts);
    opts.url = t->url;
    opts.pool_size = 1;
    opts.connect_timeout_ms = t->connect_timeout_ms;
    opts.command_timeout_ms = t->command_timeout_ms;
    b->client = rlk_connect(&opts);
    if (b->client == NULL || rlk_err(b->client) != RLK_OK) {
        if (b->client != NULL)
            rlk_bench_lib_error(b, "rlk_connect", err, errlen);
        else
            snprintf(err, errlen, "rlk_connect: out of memory");
        rlk_free(b->client);
        free(b);
        return -1;
    }
    b->t = t;
    b->id = id;
    b->values.lock = id->key;
    b->values.channel = id->channel;
    b->values.lease = t->lease_ms;
    b->values.owner = id->owner;
    b->values.message = "0";
    rlk_bench_script_bind(t->acquire, &b->values, &b->acquire);
    rlk_bench_script_bind(t->release, &b->values, &b->release);
    if (rlk_bench_lib_w2_open(b, err, errlen) != 0) {
        rlk_free(b->client);
        free(b);
        return -1;
    }
    *st = b;
    return 0;
}

static int rlk_bench_lib_eval(rlk_bench_lib *b, const rlk_bench_script *s,
                              const rlk_bench_call *c, redisReply **reply,
                              char *err, size_t errlen)
{
    int rc = rlk_evalv(b->client, s->name, c->nkeys, c->keys, c->keylens,
                       c->nargs, c->args, c->arglens, reply);

    if (rc != RLK_OK) {
        rlk_bench_lib_error(b, s->name, err, errlen);
        *reply = NULL;
    }
    return rc;
}

static rlk_bench_acq rlk_bench_lib_try_acquire(void *st, char *err, size_t errlen)
{
    rlk_bench_lib *b = st;
    redisReply *r;
    rlk_bench_acq out = RLK_BENCH_ACQ_ERR;

    if (rlk_bench_lib_eval(b, b->t->acquire, &b->acquire, &r, err, errlen) != RLK_OK)
        return RLK_BENCH_ACQ_ERR;
    if (r->type == REDIS_REPLY_NIL)
        out = RLK_BENCH_ACQ_OK;
    else if (r->type == REDIS_REPLY_INTEGER)
        out = RLK_BENCH_ACQ_HELD;
    else
        snprintf(err, errlen, "acquire: unexpected reply type %d", r->type);
    freeReplyObject(r);
    return out;
}

static int rlk_bench_lib_release(void *st, char *err, size_t errlen)
{
    rlk_bench_lib *b = st;
    redisReply *r;
    int rc = -1;

    if (rlk_bench_lib_eval(b, b->t->release, &b->release, &r, err, errlen) != RLK_OK)
        return -1;
    if (r->type == REDIS_REPLY_INTEGER && r->integer == 1)
        rc = 0;
    else if (r->type == REDIS_REPLY_INTEGER)
        snprintf(err, errlen, "release: replied %lld, not 1 (released)", r->integer);
    else if (r->type == REDIS_REPLY_NIL)
        snprintf(err, errlen, "release: replied nil (not the owner)");
    else
        snprintf(err, errlen, "release: unexpected reply type %d", r->type);
    freeReplyObject(r);
    return rc;
}

static void rlk_bench_lib_close(void *st)
{
    rlk_bench_lib *b = st;

    if (b == NULL)
        return;
    rlk_bench_lib_w2_close(b);
    rlk_free(b->client);
    free(b);
}

const rlk_bench_driver rlk_bench_rlk_driver = {
    "rlk",
    RLK_VERSION,
    rlk_bench_lib_open,
    rlk_bench_lib_try_acquire,
    rlk_bench_lib_release,
    rlk_bench_lib_lock,
    rlk_bench_lib_unlock,
    rlk_bench_lib_close,
    "rlk_evalv(\"reentrant/acquire\") then rlk_evalv(\"reentrant/release\") on the client's "
    "own key; one rlk_client (pool of 1) per client",
    "rlk blocking lock (pub/sub wake-ups); hold by sleeping; unlock",
};
