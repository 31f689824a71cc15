/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_rlk: the rlk driver. W1 calls the scripts by name through the
 * library (rlk_evalv: EVALSHA, NOSCRIPT reload, reconnects); W2 goes
 * through the blocking lock runtime (rlk_lock_*: local FIFO, pub/sub
 * wake-ups). Built only when the rlk library target exists. */
#include "bench_clock.h"
#include "bench_dial.h"
#include "bench_driver.h"
#include "bench_kinds.h"

#include "rlk.h"
#include "kinds/lock.h"
#include "runtime/rt.h"

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
    rlk_lock *lock;        /* W2: this contender's handle on the lock key */
    rlk_fairlock *fair;    /* W2 with --lock fair: the same as a fair lock */
    rlk_bench_kind_state *kind;   /* W2 with --lock rwlock-write|semaphore|psemaphore */
    long long lease_ms;    /* W2: the lease, as the baseline's scripts get it */
} rlk_bench_lib;

static void rlk_bench_lib_error(rlk_bench_lib *b, const char *what, char *err, size_t errlen)
{
    snprintf(err, errlen, "%s: %s: %s", what, rlk_strerror(rlk_err(b->client)),
             rlk_errstr(b->client));
}

/* ================================================================== W2 ====
 * The library's blocking lock: one rlk_lock per contender on its own client
 * (so the process-wide local FIFO of the lock spans every contender), the
 * same lease as the baseline's scripts (no watchdog), one blocking call per
 * acquisition. rlk_lock_lock cannot be interrupted, so the acquire is a
 * try_lock with the whole time left until deadline + grace: a wait that runs
 * out there (RLK_ERR_BUSY) is a stuck waiter. Never short slices: a slice
 * that runs out re-joins the local queue at the tail. */
int rlk_bench_rlk_w2_available(void)
{
    return 1;
}

static int rlk_bench_lib_w2_open(rlk_bench_lib *b, char *err, size_t errlen)
{
    char *end;

    b->lock = NULL;
    b->lease_ms = strtoll(b->t->lease_ms, &end, 10);
    if (*end != '\0' || b->lease_ms <= 0) {
        snprintf(err, errlen, "bad lease \"%s\"", b->t->lease_ms);
        return -1;
    }
    if (b->t->kind) {
        b->kind = rlk_bench_kind_open(b->client, b->t->kind, b->id->key, b->t->names);
        if (b->kind == NULL) {
            rlk_bench_lib_error(b, rlk_bench_kind_name(b->t->kind), err, errlen);
            return -1;
        }
        return 0;
    }
    if (b->t->fair) {
        b->fair = rlk_fairlock_new(b->client, b->id->key);
        if (b->fair == NULL) {
            rlk_bench_lib_error(b, "rlk_fairlock_new", err, errlen);
            return -1;
        }
        return 0;
    }
    b->lock = rlk_lock_new(b->client, b->id->key);
    if (b->lock == NULL) {
        rlk_bench_lib_error(b, "rlk_lock_new", err, errlen);
        return -1;
    }
    if (b->t->spin && rlk_lock_set_spin(b->lock, 1, 128) != RLK_OK) {  /* Redisson's defaults */
        rlk_bench_lib_error(b, "rlk_lock_set_spin", err, errlen);
        return -1;
    }
    return 0;
}

/* Whole milliseconds left until give_up_ns, at least 1 (0 would be a single
 * try that may overtake queued waiters). */
static long long rlk_bench_lib_wait_ms(int64_t give_up_ns)
{
    int64_t left = give_up_ns - rlk_bench_now_ns();

    return left < INT64_C(1000000) ? 1 : (long long)(left / 1000000);
}

static rlk_bench_acq rlk_bench_lib_lock(void *st, const atomic_int *abandon, int64_t give_up_ns,
                                        char *err, size_t errlen)
{
    rlk_bench_lib *b = st;
    int rc;

    (void)abandon; /* set at give_up_ns, when the wait below runs out anyway */
    if (b->kind)
        rc = rlk_bench_kind_lock(b->kind, rlk_bench_lib_wait_ms(give_up_ns), b->lease_ms);
    else if (b->fair)
        rc = rlk_fairlock_try_lock(b->fair, rlk_bench_lib_wait_ms(give_up_ns), b->lease_ms);
    else
        rc = rlk_lock_try_lock(b->lock, rlk_bench_lib_wait_ms(give_up_ns), b->lease_ms);
    if (rc == RLK_OK)
        return RLK_BENCH_ACQ_OK;
    /* Ran out: BUSY, or a last attempt whose round trip the wait's own deadline cut
     * (the library bounds a whole wait, command timeouts included). */
    if (rc == RLK_ERR_BUSY ||
        (rc == RLK_ERR_TIMEOUT && rlk_bench_now_ns() >= give_up_ns - INT64_C(1000000)))
        return RLK_BENCH_ACQ_ABANDONED;
    rlk_bench_lib_error(b, b->kind ? rlk_bench_kind_call(b->kind, 0) : "rlk_lock_try_lock", err,
                        errlen);
    return RLK_BENCH_ACQ_ERR;
}

static int rlk_bench_lib_unlock(void *st, char *err, size_t errlen)
{
    rlk_bench_lib *b = st;

    if (b->kind) {
        if (rlk_bench_kind_unlock(b->kind) == RLK_OK)
            return 0;
        rlk_bench_lib_error(b, rlk_bench_kind_call(b->kind, 1), err, errlen);
        return -1;
    }
    if ((b->fair ? rlk_fairlock_unlock(b->fair) : rlk_lock_unlock(b->lock)) == RLK_OK)
        return 0;
    rlk_bench_lib_error(b, b->fair ? "rlk_fairlock_unlock" : "rlk_lock_unlock", err, errlen);
    return -1;
}

static void rlk_bench_lib_w2_close(rlk_bench_lib *b)
{
    rlk_lock_free(b->lock);
    rlk_fairlock_free(b->fair);
    rlk_bench_kind_close(b->kind);
    b->lock = NULL;
    b->fair = NULL;
    b->kind = NULL;
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
    opts.tls_cacert = rlk_bench_tls_cfg.cacert;     /* the URL is rediss:// with --tls */
    opts.tls_cert = rlk_bench_tls_cfg.cert;
    opts.tls_key = rlk_bench_tls_cfg.key;
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
    b->values.publish = "publish";
    b->values.waiters = id->waiters;
    b->values.grant = id->grant;
    b->values.ticket = "0";
    b->values.claim = "50";
    rlk_bench_script_bind(t->acquire, &b->values, &b->acquire);
    rlk_bench_script_bind(t->release, &b->values, &b->release);
    if (t->no_metrics)
        (void)rlk_metrics_set_enabled(b->client, 0);
    if ((t->workload == 2 || t->w1_lock) && rlk_bench_lib_w2_open(b, err, errlen) != 0) {
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

    if (b->t->w1_lock) { /* --w1-lock: the kind's blocking lock call, one attempt */
        long long lease = b->t->w1_watchdog ? -1 : b->lease_ms;
        int rc = b->kind   ? rlk_bench_kind_lock(b->kind, 0, lease)
                 : b->fair ? rlk_fairlock_try_lock(b->fair, 0, lease)
                           : rlk_lock_try_lock(b->lock, 0, lease);

        if (rc == RLK_OK)
            return RLK_BENCH_ACQ_OK;
        if (rc == RLK_ERR_BUSY)
            return RLK_BENCH_ACQ_HELD;
        rlk_bench_lib_error(b, b->kind   ? rlk_bench_kind_call(b->kind, 0)
                               : b->fair ? "rlk_fairlock_try_lock"
                                         : "rlk_lock_try_lock", err, errlen);
        return RLK_BENCH_ACQ_ERR;
    }
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

static int rlk_bench_lib_unlock(void *st, char *err, size_t errlen);

static int rlk_bench_lib_release(void *st, char *err, size_t errlen)
{
    rlk_bench_lib *b = st;
    redisReply *r;
    int rc = -1;

    if (b->t->w1_lock)
        return rlk_bench_lib_unlock(st, err, errlen);
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

static size_t rlk_bench_lib_metrics(void *st, void *buf, size_t len)
{
    rlk_bench_lib *b = st;

    if (buf == NULL || len < sizeof(rlk_metrics))
        return sizeof(rlk_metrics);
    return rlk_metrics_get(b->client, buf) == RLK_OK ? sizeof(rlk_metrics) : 0;
}

size_t rlk_bench_rlk_metrics_size(void)
{
    return sizeof(rlk_metrics);
}

int rlk_bench_rlk_write_metrics(const char *path, void *const *blobs, const size_t *sizes, int n,
                                const char *label)
{
    rlk_metrics *m = calloc((size_t)(n > 0 ? n : 1), sizeof *m);
    char (*lv)[64] = calloc((size_t)(n > 0 ? n : 1), sizeof *lv);
    const char **labels = calloc((size_t)(n > 0 ? n : 1), sizeof *labels);
    size_t k = 0, need = 0;
    char *text = NULL;
    FILE *f = NULL;
    int rc = -1;

    if (m == NULL || lv == NULL || labels == NULL)
        goto out;
    for (int i = 0; i < n; i++) {
        if (blobs[i] == NULL || sizes[i] != sizeof(rlk_metrics)) {
            fprintf(stderr, "rlk-bench: contender %d sent no metrics\n", i);
            continue;
        }
        memcpy(&m[k], blobs[i], sizeof m[k]);
        snprintf(lv[k], sizeof lv[k], "%s=\"%d\"", label, i);
        labels[k] = lv[k];
        k++;
    }
    (void)rlk_metrics_format(m, k, labels, RLK_METRICS_PROMETHEUS, NULL, 0, &need);
    text = malloc(need ? need : 1);
    if (text == NULL ||
        rlk_metrics_format(m, k, labels, RLK_METRICS_PROMETHEUS, text, need, NULL) != RLK_OK)
        goto out;
    f = fopen(path, "w");
    if (f == NULL || fputs(text, f) < 0) {
        fprintf(stderr, "rlk-bench: cannot write %s\n", path);
        goto out;
    }
    rc = 0;
out:
    if (f != NULL && fclose(f) != 0)
        rc = -1;
    free(text);
    free(labels);
    free(lv);
    free(m);
    return rc;
}

/* The handoff timeline of the last acquisition (reentrant lock only). */
static void rlk_bench_lib_timeline(void *st, int64_t out[4])
{
    rlk_bench_lib *b = st;
    rlk_lock_timeline tl;

    memset(out, 0, 4 * sizeof *out);
    if (b->lock == NULL)
        return;
    rlk_lock_last_timeline(&tl);
    out[0] = tl.rx_ns;
    out[1] = tl.woken_ns;
    out[2] = tl.claim_sent_ns;
    out[3] = tl.claim_done_ns;
}

static void rlk_bench_lib_sub_counts(void *st, uint64_t *wakeups, uint64_t *messages)
{
    rlk_bench_lib *b = st;
    rlk_runtime_stats rs;

    *wakeups = *messages = 0;
    if (rlk_runtime_stats_get(b->client, &rs) == RLK_OK) {
        *wakeups = rs.sub_wakeups;
        *messages = rs.sub_messages;
    }
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
    "rlk_lock_try_lock or, with --lock fair|rwlock-write|semaphore|psemaphore, the kind's "
    "try_lock / try_acquire (1 permit) (blocking: local FIFO, pub/sub wake-ups; wait = time left until "
    "deadline + grace; lease 30000 ms, no watchdog), hold by sleeping, rlk_lock_unlock; "
    "one rlk_client (pool of 1) per contender",
    rlk_bench_lib_metrics,
    rlk_bench_lib_timeline,
    rlk_bench_lib_sub_counts,
};
