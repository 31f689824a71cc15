/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine.c - the engine of the non-blocking API (engine.h): the rlk_async
 * client, its requests and their deferred completion, the timer heap behind
 * the loop's one timer, the command connection (pipelined EVALSHA, NOSCRIPT
 * load and retry, a fence of the previous connection after a drop), the
 * pub/sub connection and its refcounted channels, and the watchdog.
 * docs/async-internals.md describes it.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis/hiredis.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/random.h"
#include "client/scripts.h"
#include "client/sentinel.h"
#include "client/topo.h"
#include "client/transport.h"
#include "async/engine.h"

#define AE_SWEEP_MS 100             /* how often timeouts of calls and connects are checked */
#define AE_BACKOFF_MIN_MS 20        /* the first reconnect's delay (after the immediate one) */
#define AE_BACKOFF_MAX_MS 1000      /* the longest */
#define AE_RENEW_BATCH 100          /* holds per renewal call */
#define AE_ERRSTR_MAX 1024

/* ---------------------------------------------------------------- types */

struct rlk_async_req {
    rlk_async *ac;
    rlk_async_fn fn;
    void *privdata;
    rlk_async_req *prev, *next;     /* ac's list of requests not yet delivered */
    rlk_async_req *qnext;           /* ac's queue of completed requests */
    int done;                       /* completed: on the queue or delivered */
    int cancelled;
    int err;
    long long value;
    char *id;
    char *errstr;
    rlk_ae_cancel_fn cancel;
    rlk_ae_free_fn free_fn;
    _Alignas(max_align_t) unsigned char state[];
};

struct rlk_ae_timer {
    rlk_async *ac;
    long long at;                   /* monotonic ms */
    unsigned long long seq;         /* ties fire in the order they were set */
    size_t idx;                     /* in ac->heap */
    rlk_ae_timer_fn fn;
    void *arg;
};

/* What a queued command is for. */
enum { AE_CALL_USER, AE_CALL_SETUP, AE_CALL_ID, AE_CALL_KILL, AE_CALL_LOAD };

struct rlk_ae_call {
    rlk_ae_call *next;
    int what;                       /* AE_CALL_* */
    int setup_i;                    /* AE_CALL_SETUP: its index */
    char *cmd;                      /* formatted (redisFreeCommand) */
    size_t len;
    const rlk_script_info *script;  /* a script call (NOSCRIPT rule), else NULL */
    int retried;
    rlk_ae_reply_fn fn;
    void *arg;
    int forgotten;
    long long issued;               /* monotonic ms: when made */
};

/* A queue of calls, FIFO. */
typedef struct ae_callq {
    rlk_ae_call *head, *tail;
    size_t n;
} ae_callq;

enum { AE_DOWN, AE_CONNECTING, AE_SETUP, AE_UP };

/* The inner client, shared with dial threads: freed by the last of them. */
typedef struct ae_cref {
    pthread_mutex_t mu;
    int refs;
    rlk_client *c;
    char *sentinel_password;        /* rlk_options.sentinel_password, copied */
    int sn_started;                 /* the sentinel follower was started (under mu) */
} ae_cref;

/* A blocking dial (TLS) on a short-lived thread; its outcome comes back
 * through a socket pair the loop watches. Freed by the last of the loop and
 * the thread; a dial the loop abandons is closed by the thread. */
typedef struct ae_dial {
    pthread_mutex_t mu;
    int refs;
    int abandoned;
    int done;
    ae_cref *cref;
    int sv[2];                      /* sv[0]: the loop's end; sv[1]: the thread's */
    redisContext *ctx;
    int rc;
    char why[256];
    int refresh;                    /* sentinel: ask the sentinels first (a READONLY reply) */
    unsigned long long switches;    /* sentinel: the switches seen when the master was named */
} ae_dial;

/* One connection: the command connection or the pub/sub one. */
typedef struct ae_conn {
    redisContext *ctx;
    void *handle;                   /* the loop's, from hooks.attach */
    int fd;
    int state;                      /* AE_* */
    int events;                     /* what the loop watches */
    int setup_left;                 /* pub/sub: set-up replies still to come */
    long long id;                   /* CLIENT ID of the live connection (command) */
    long long fence_id;             /* the id of the connection that broke: killed first */
    int fails;                      /* consecutive failures: the backoff */
    long long since;                /* monotonic ms the dial or set-up started */
    rlk_ae_timer *retry;
    int is_sub;
    ae_dial *dial;                  /* a dial on its thread, or NULL */
    unsigned long long switches;    /* sentinel: the switches when this connection was named */
    void *dial_handle;              /* the loop's handle of dial->sv[0] */
} ae_conn;

typedef struct ae_chan ae_chan;

struct rlk_ae_sub {
    rlk_async *ac;
    ae_chan *ch;
    rlk_ae_sub *prev, *next;
    rlk_ae_msg_fn fn;
    void *arg;
    int dead;                       /* removed during a dispatch: unlinked after it */
    rlk_ae_timer *ready;            /* fn(NULL) on the next turn: the channel was live */
};

struct ae_chan {
    char *name;
    ae_chan *bnext;                 /* the bucket's chain */
    rlk_ae_sub *head, *tail;
    size_t listeners;               /* live (not dead) listeners */
    int last_sent;                  /* 1: SUBSCRIBE was the last command sent; 0 otherwise */
    int outstanding;                /* SUBSCRIBE/UNSUBSCRIBE sent, not answered */
    int live;                       /* the server has it subscribed (as its last reply said) */
    int dispatching;
};

struct rlk_ae_hold {
    rlk_async *ac;
    rlk_ae_hold *prev, *next;
    int kind;
    char *renew, *name, *key, *owner;
    char *more[2];                  /* the "one" form's second and third keys, or NULL */
    int one;                        /* 1: renewed by one call per hold (rlk_ae_wd_add_one) */
    rlk_ae_lost_fn lost;
    void *arg;
    int refs;                       /* renewal calls in flight that name it */
    int removed;
};

/* One renewal call: the holds it names. */
typedef struct ae_renewal {
    rlk_async *ac;
    int n;
    rlk_ae_hold *h[AE_RENEW_BATCH];
} ae_renewal;

struct rlk_async {
    rlk_client *c;                  /* settings only (client.h rlk_client_prepare) */
    ae_cref *cref;                  /* c, shared with dial threads */
    int fatal;
    char fatal_msg[AE_ERRSTR_MAX];
    char uuid[RLK_UUID_LEN + 1];
    rlk_async_hooks hooks;
    int attached;

    rlk_async_req *reqs;            /* not yet delivered */
    size_t npending;
    rlk_async_req *qhead, *qtail;   /* completed, to deliver */

    rlk_ae_timer **heap;
    size_t nheap, capheap;
    unsigned long long seq;
    long long armed;                /* what set_timer was last told: -2 nothing yet */

    ae_conn cmd, sub;
    ae_callq unsent, inflight;      /* command connection: not written; written, no reply */
    rlk_ae_timer *sweep;

    ae_chan **buckets;
    size_t nbuckets, nchans;

    rlk_ae_hold *holds;
    size_t nholds;
    rlk_ae_timer *renew_timer;

    int sn_ready;                   /* sentinel: a dial opened the sentinels (read from here on) */
    int sn_refresh;                 /* sentinel: a READONLY reply: ask again at the next dial */
    int cmd_readonly;               /* the command connection answered READONLY: drop it */
    rlk_ae_timer *sn_watch;

    rlk_lost_kind_fn lost_fn;
    void *lost_ud;

    void *kind_data[RLK_AE_SLOTS];
    void (*kind_destroy[RLK_AE_SLOTS])(void *);

    int depth;                      /* handlers on the stack */
    int closing;                    /* rlk_async_free started */
    int destroy_pending;            /* free the memory when the last handler returns */
};

static void ae_conn_start(rlk_async *ac, ae_conn *k);
static void ae_conn_drop(rlk_async *ac, ae_conn *k, const char *why);
static void ae_sweep_ensure(rlk_async *ac);
static void ae_arm(rlk_async *ac);
static void ae_sub_send(rlk_async *ac, const char *cmd, const char *channel);
static void ae_renew_arm(rlk_async *ac);

/* ---------------------------------------------------------------- small things */

long long rlk_ae_now_ms(void)
{
    return rlk_clock_now_ns() / RLK_NS_PER_MS;
}

rlk_client *rlk_ae_client(rlk_async *ac)
{
    return ac->c;
}

void rlk_ae_owner(rlk_async *ac, unsigned long long task, char *buf, size_t len)
{
    snprintf(buf, len, "%s:%llu", ac->uuid, task);
}

const char *rlk_ae_publish_arg(rlk_async *ac)
{
    (void)ac;
    return "publish";   /* one server or a sentinel's master: global pub/sub */
}

int rlk_ae_closing(rlk_async *ac)
{
    return ac->closing;
}

void *rlk_ae_kind_data(rlk_async *ac, int slot, void *(*make)(void), void (*destroy)(void *))
{
    if (slot < 0 || slot >= RLK_AE_SLOTS)
        return NULL;
    if (!ac->kind_data[slot] && make) {
        ac->kind_data[slot] = make();
        ac->kind_destroy[slot] = destroy;
    }
    return ac->kind_data[slot];
}

int rlk_ae_fatal(rlk_async *ac, const char **msg)
{
    if (msg)
        *msg = ac->fatal_msg;
    return ac->fatal;
}

const char *rlk_async_uuid(const rlk_async *ac)
{
    return ac ? ac->uuid : "";
}

size_t rlk_async_pending(const rlk_async *ac)
{
    return ac ? ac->npending : 0;
}

int rlk_async_err(const rlk_async *ac)
{
    return ac ? ac->fatal : RLK_ERR_ARG;
}

const char *rlk_async_errstr(const rlk_async *ac)
{
    return ac ? ac->fatal_msg : "";
}

void rlk_async_set_lost_callback(rlk_async *ac, rlk_lost_kind_fn fn, void *userdata)
{
    if (!ac)
        return;
    ac->lost_fn = fn;
    ac->lost_ud = userdata;
}

/* ---------------------------------------------------------------- timers */

static int ae_timer_before(const rlk_ae_timer *a, const rlk_ae_timer *b)
{
    return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void ae_heap_set(rlk_async *ac, size_t i, rlk_ae_timer *t)
{
    ac->heap[i] = t;
    t->idx = i;
}

static void ae_heap_up(rlk_async *ac, size_t i)
{
    rlk_ae_timer *t = ac->heap[i];

    while (i > 0 && ae_timer_before(t, ac->heap[(i - 1) / 2])) {
        ae_heap_set(ac, i, ac->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    ae_heap_set(ac, i, t);
}

static void ae_heap_down(rlk_async *ac, size_t i)
{
    rlk_ae_timer *t = ac->heap[i];

    for (;;) {
        size_t l = 2 * i + 1, m = i;
        rlk_ae_timer *best = t;

        if (l < ac->nheap && ae_timer_before(ac->heap[l], best))
            best = ac->heap[m = l];
        if (l + 1 < ac->nheap && ae_timer_before(ac->heap[l + 1], best))
            best = ac->heap[m = l + 1];
        if (m == i)
            break;
        ae_heap_set(ac, i, best);
        i = m;
    }
    ae_heap_set(ac, i, t);
}

static void ae_heap_remove(rlk_async *ac, rlk_ae_timer *t)
{
    size_t i = t->idx;
    rlk_ae_timer *last = ac->heap[--ac->nheap];

    if (i == ac->nheap)
        return;
    ae_heap_set(ac, i, last);
    ae_heap_up(ac, i);
    ae_heap_down(ac, last->idx);
}

rlk_ae_timer *rlk_ae_timer_add(rlk_async *ac, long long ms, rlk_ae_timer_fn fn, void *arg)
{
    rlk_ae_timer *t;

    if (ac->closing)
        return NULL;
    if (ac->nheap == ac->capheap) {
        size_t cap = ac->capheap ? ac->capheap * 2 : 64;
        rlk_ae_timer **h = realloc(ac->heap, cap * sizeof *h);

        if (!h)
            return NULL;
        ac->heap = h;
        ac->capheap = cap;
    }
    if (!(t = malloc(sizeof *t)))
        return NULL;
    t->ac = ac;
    t->at = rlk_ae_now_ms() + (ms > 0 ? ms : 0);
    t->seq = ac->seq++;
    t->fn = fn;
    t->arg = arg;
    ac->heap[ac->nheap] = t;
    t->idx = ac->nheap++;
    ae_heap_up(ac, t->idx);
    if (!ac->depth)
        ae_arm(ac);     /* a call from outside the loop's handlers */
    return t;
}

void rlk_ae_timer_del(rlk_ae_timer *t)
{
    if (!t)
        return;
    ae_heap_remove(t->ac, t);
    free(t);
}

/* Fires the timers that are due (each at most once per call). */
static void ae_timers_run(rlk_async *ac)
{
    long long now = rlk_ae_now_ms();
    unsigned long long limit = ac->seq;     /* not the ones set meanwhile for "now" */

    while (!ac->closing && ac->nheap && ac->heap[0]->at <= now) {
        rlk_ae_timer *t = ac->heap[0];

        if (t->seq >= limit && t->at >= now)
            break;
        ae_heap_remove(ac, t);
        t->fn(ac, t->arg);
        free(t);
    }
}

/* Tells the loop when to call rlk_async_handle_timer next. */
static void ae_arm(rlk_async *ac)
{
    long long want = -1;

    if (!ac->attached || ac->closing)
        return;
    if (ac->qhead)
        want = 0;
    else if (ac->nheap) {
        want = ac->heap[0]->at - rlk_ae_now_ms();
        if (want < 0)
            want = 0;
    }
    /* Always re-arm a timer (a relative delay drifts); skip only "none" twice. */
    if (want == -1 && ac->armed == -1)
        return;
    ac->armed = want;
    ac->hooks.set_timer(ac->hooks.data, want);
}

/* ---------------------------------------------------------------- requests */

rlk_async_req *rlk_ae_req_new(rlk_async *ac, size_t state_size, rlk_async_fn fn, void *privdata)
{
    rlk_async_req *r = calloc(1, sizeof *r + state_size);

    if (!r)
        return NULL;
    r->ac = ac;
    r->fn = fn;
    r->privdata = privdata;
    r->next = ac->reqs;
    if (ac->reqs)
        ac->reqs->prev = r;
    ac->reqs = r;
    ac->npending++;
    if (ac->closing)
        rlk_ae_complete(r, RLK_ERR_CLOSED, 0, NULL, "the async client is being freed");
    return r;
}

void *rlk_ae_req_state(rlk_async_req *r)
{
    return r->state;
}

rlk_async *rlk_ae_req_client(rlk_async_req *r)
{
    return r->ac;
}

void rlk_ae_req_hooks(rlk_async_req *r, rlk_ae_cancel_fn cancel, rlk_ae_free_fn free_fn)
{
    r->cancel = cancel;
    r->free_fn = free_fn;
}

int rlk_ae_req_done(const rlk_async_req *r)
{
    return r->done;
}

int rlk_ae_req_cancelled(const rlk_async_req *r)
{
    return r->cancelled;
}

void rlk_ae_complete(rlk_async_req *r, int err, long long value, const char *id,
                     const char *errfmt, ...)
{
    rlk_async *ac = r->ac;

    if (r->done)
        return;
    r->done = 1;
    r->err = err;
    r->value = value;
    if (id)
        r->id = strdup(id);
    if (err != RLK_OK) {
        char buf[AE_ERRSTR_MAX];

        if (errfmt) {
            va_list ap;

            va_start(ap, errfmt);
            vsnprintf(buf, sizeof buf, errfmt, ap);
            va_end(ap);
        } else
            snprintf(buf, sizeof buf, "%s", rlk_strerror(err));
        r->errstr = strdup(buf);
    }
    r->qnext = NULL;
    if (ac->qtail)
        ac->qtail->qnext = r;
    else
        ac->qhead = r;
    ac->qtail = r;
    if (!ac->depth)
        ae_arm(ac);     /* delivered on the loop's next turn */
}

static void ae_req_destroy(rlk_async *ac, rlk_async_req *r)
{
    if (r->free_fn)
        r->free_fn(r, r->state);
    if (r->prev)
        r->prev->next = r->next;
    else
        ac->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    ac->npending--;
    free(r->id);
    free(r->errstr);
    free(r);
}

/* Calls the callbacks of the completed requests, in order of completion. */
static void ae_deliver(rlk_async *ac)
{
    while (ac->qhead) {
        rlk_async_req *r = ac->qhead;
        rlk_async_result res;

        ac->qhead = r->qnext;
        if (!ac->qhead)
            ac->qtail = NULL;
        res.err = r->err;
        res.errstr = r->errstr ? r->errstr : "";
        res.value = r->value;
        res.id = r->id;
        if (r->fn)
            r->fn(ac, &res, r->privdata);
        ae_req_destroy(ac, r);
    }
}

void rlk_async_cancel(rlk_async_req *r)
{
    rlk_async *ac;

    if (!r || r->done || r->cancelled)
        return;
    ac = r->ac;
    r->cancelled = 1;
    if (r->cancel)
        r->cancel(r, r->state);
    else
        rlk_ae_complete(r, RLK_ERR_CANCELLED, 0, NULL, "cancelled");
    if (!ac->depth)
        ae_arm(ac);
}

/* ---------------------------------------------------------------- entry and exit of handlers */

static void ae_destroy(rlk_async *ac);

static void ae_enter(rlk_async *ac)
{
    ac->depth++;
}

/* Flushes what the connections have to write and watches for the rest. */
static void ae_flush(rlk_async *ac, ae_conn *k)
{
    int want = RLK_ASYNC_READ, done = 0;

    if (!k->ctx || !k->handle || k->state == AE_CONNECTING)
        return;
    if (k->ctx->obuf && sdslen(k->ctx->obuf) > 0) {
        if (redisBufferWrite(k->ctx, &done) == REDIS_ERR) {
            ae_conn_drop(ac, k, k->ctx->errstr);
            return;
        }
        if (!done)
            want |= RLK_ASYNC_WRITE;
    }
    if (want != k->events) {
        k->events = want;
        ac->hooks.watch(ac->hooks.data, k->handle, want);
    }
}

static void ae_leave(rlk_async *ac)
{
    if (ac->depth == 1 && !ac->closing) {
        ae_deliver(ac);
        if (!ac->closing) {
            ae_flush(ac, &ac->cmd);
            ae_flush(ac, &ac->sub);
            ae_deliver(ac);     /* a drop while flushing fails calls: their kinds complete */
        }
        if (!ac->closing)
            ae_arm(ac);
    }
    if (--ac->depth == 0 && ac->destroy_pending)
        ae_destroy(ac);
}

/* ---------------------------------------------------------------- calls */

static void ae_callq_push(ae_callq *q, rlk_ae_call *call)
{
    call->next = NULL;
    if (q->tail)
        q->tail->next = call;
    else
        q->head = call;
    q->tail = call;
    q->n++;
}

static rlk_ae_call *ae_callq_pop(ae_callq *q)
{
    rlk_ae_call *call = q->head;

    if (call) {
        q->head = call->next;
        if (!q->head)
            q->tail = NULL;
        q->n--;
    }
    return call;
}

static void ae_call_free(rlk_ae_call *call)
{
    if (call->cmd)
        redisFreeCommand(call->cmd);
    free(call);
}

/* A user call's end: its callback (unless forgotten), then it is freed. */
static void ae_call_end(rlk_async *ac, rlk_ae_call *call, int rc, const redisReply *reply,
                        const char *errstr, int lost)
{
    if (call->what == AE_CALL_USER && !call->forgotten && call->fn)
        call->fn(ac, rc, reply, errstr ? errstr : "", lost, call->arg);
    ae_call_free(call);
}

/* Appends the call's command to the live connection and moves it in flight. */
static int ae_call_write(rlk_async *ac, rlk_ae_call *call)
{
    if (redisAppendFormattedCommand(ac->cmd.ctx, call->cmd, call->len) != REDIS_OK)
        return -1;
    ae_callq_push(&ac->inflight, call);
    return 0;
}

static rlk_ae_call *ae_call_new(rlk_async *ac, int what, rlk_ae_reply_fn fn, void *arg)
{
    rlk_ae_call *call = calloc(1, sizeof *call);

    if (!call)
        return NULL;
    call->what = what;
    call->fn = fn;
    call->arg = arg;
    call->issued = rlk_ae_now_ms();
    (void)ac;
    return call;
}

/* Queues a user call: written now when the connection is up, else later. */
static rlk_ae_call *ae_call_submit(rlk_async *ac, rlk_ae_call *call)
{
    if (ac->cmd.state == AE_UP && !ac->unsent.head) {
        if (ae_call_write(ac, call) != 0) {
            ae_call_free(call);
            return NULL;
        }
    } else {
        ae_callq_push(&ac->unsent, call);
        if (ac->attached && ac->cmd.state == AE_DOWN && !ac->cmd.retry)
            ae_conn_start(ac, &ac->cmd);
    }
    ae_sweep_ensure(ac);
    if (!ac->depth && ac->attached)
        ae_flush(ac, &ac->cmd);
    return call;
}

rlk_ae_call *rlk_ae_script(rlk_async *ac, const char *name, int nkeys, const char *const *keys,
                           int nargs, const char *const *args, rlk_ae_reply_fn fn, void *arg)
{
    return rlk_ae_scriptv(ac, name, nkeys, keys, nargs, args, NULL, fn, arg);
}

rlk_ae_call *rlk_ae_scriptv(rlk_async *ac, const char *name, int nkeys, const char *const *keys,
                            int nargs, const char *const *args, const size_t *arglens,
                            rlk_ae_reply_fn fn, void *arg)
{
    const rlk_script_info *s;
    rlk_ae_call *call;
    int len;

    if (ac->closing || !(s = rlk_script_set_find(&ac->c->scripts, name)))
        return NULL;
    if (!(call = ae_call_new(ac, AE_CALL_USER, fn, arg)))
        return NULL;
    call->script = s;
    len = rlk_conn_format_script(ac->c, s, nkeys, keys, NULL, nargs, args, arglens, &call->cmd);
    if (len < 0) {
        ae_call_free(call);
        return NULL;
    }
    call->len = (size_t)len;
    return ae_call_submit(ac, call);
}

rlk_ae_call *rlk_ae_command(rlk_async *ac, int argc, const char *const *argv, rlk_ae_reply_fn fn,
                            void *arg)
{
    rlk_ae_call *call;
    int len;

    if (ac->closing || !(call = ae_call_new(ac, AE_CALL_USER, fn, arg)))
        return NULL;
    len = redisFormatCommandArgv(&call->cmd, argc, (const char **)argv, NULL);
    if (len < 0) {
        call->cmd = NULL;
        ae_call_free(call);
        return NULL;
    }
    call->len = (size_t)len;
    return ae_call_submit(ac, call);
}

void rlk_ae_call_forget(rlk_ae_call *call)
{
    if (call)
        call->forgotten = 1;
}

/* An internal command written now (set-up, fence), ahead of user calls. */
static int ae_internal(rlk_async *ac, int what, int setup_i, int argc, const char **argv,
                       const size_t *lens)
{
    rlk_ae_call *call = ae_call_new(ac, what, NULL, NULL);
    int len;

    if (!call)
        return -1;
    call->setup_i = setup_i;
    len = redisFormatCommandArgv(&call->cmd, argc, argv, lens);
    if (len < 0) {
        call->cmd = NULL;
        ae_call_free(call);
        return -1;
    }
    call->len = (size_t)len;
    if (ae_call_write(ac, call) != 0) {
        ae_call_free(call);
        return -1;
    }
    return 0;
}

/* Classifies an error reply the way the blocking calls do. */
static int ae_reply_error(rlk_async *ac, const redisReply *r, const char *what)
{
    return rlk_set_reply_error(ac->c, r, what, RLK_ERR_SCRIPT);
}

/* The command connection is up: the calls that waited are written. */
static void ae_cmd_up(rlk_async *ac)
{
    rlk_ae_call *call;

    ac->cmd.state = AE_UP;
    ac->cmd.fails = 0;
    while ((call = ae_callq_pop(&ac->unsent)))
        if (ae_call_write(ac, call) != 0)
            ae_call_end(ac, call, RLK_ERR_NOMEM, NULL, "out of memory", 0);
}

/* A NOSCRIPT reply: SCRIPT LOAD, then the call once more (behind the calls
 * already in flight). */
static int ae_noscript(rlk_async *ac, rlk_ae_call *call)
{
    rlk_ae_call *load = ae_call_new(ac, AE_CALL_LOAD, NULL, NULL);

    if (!load)
        return -1;
    if (rlk_conn_append_reload(ac->cmd.ctx, call->script, call->cmd, call->len) != 0) {
        free(load);
        return -1;
    }
    load->script = call->script;
    call->retried = 1;
    ae_callq_push(&ac->inflight, load);
    ae_callq_push(&ac->inflight, call);
    return 0;
}

/* One reply on the command connection. */
static void ae_cmd_reply(rlk_async *ac, redisReply *r)
{
    rlk_ae_call *call = ae_callq_pop(&ac->inflight);

    if (!call)
        return;     /* nothing asked: ignored */
    switch (call->what) {
    case AE_CALL_SETUP:
        if (rlk_conn_check_setup_reply(ac->c, call->setup_i, r) != RLK_OK) {
            ae_call_free(call);
            ae_conn_drop(ac, &ac->cmd, rlk_errstr(ac->c));
            return;
        }
        break;
    case AE_CALL_ID:
        if (r->type == REDIS_REPLY_INTEGER)
            ac->cmd.id = r->integer;
        ac->cmd.fence_id = 0;
        ae_cmd_up(ac);
        break;
    case AE_CALL_KILL:
    case AE_CALL_LOAD:
        break;      /* a fence's or a load's answer: the call behind tells */
    default:
        if (call->script && rlk_conn_noscript_retry(r, 0, call->retried)) {
            if (ae_noscript(ac, call) == 0)
                return;
            ae_call_end(ac, call, RLK_ERR_NOMEM, NULL, "out of memory", 0);
            return;
        }
        if (r->type == REDIS_REPLY_ERROR && ac->c->url.is_sentinel &&
            (strncmp(r->str, "READONLY", 8) == 0 || strncmp(r->str, "MASTERDOWN", 10) == 0)) {
            /* A demoted master refused it (it did not run): sent again on the master the
             * sentinels name now, after this connection is dropped. */
            call->next = ac->unsent.head;
            ac->unsent.head = call;
            if (!ac->unsent.tail)
                ac->unsent.tail = call;
            ac->unsent.n++;
            ac->cmd_readonly = 1;
            ac->sn_refresh = 1;
            return;
        }
        if (r->type == REDIS_REPLY_ERROR) {
            int rc = ae_reply_error(ac, r, call->script ? call->script->name : "command");

            ae_call_end(ac, call, rc, NULL, r->str, 0);
        } else
            ae_call_end(ac, call, RLK_OK, r, NULL, 0);
        return;
    }
    ae_call_free(call);
}

/* Fails every call of the command connection: in flight ones lost (they
 * may have run), and the unsent ones too when all is set (client closing). */
static void ae_calls_fail(rlk_async *ac, int rc, const char *why, int unsent_too)
{
    ae_callq q = ac->inflight;
    rlk_ae_call *call;

    memset(&ac->inflight, 0, sizeof ac->inflight);
    while ((call = ae_callq_pop(&q)))
        ae_call_end(ac, call, rc, NULL, why, call->what == AE_CALL_USER);
    if (!unsent_too)
        return;
    q = ac->unsent;
    memset(&ac->unsent, 0, sizeof ac->unsent);
    while ((call = ae_callq_pop(&q)))
        ae_call_end(ac, call, rc, NULL, why, 0);
}

/* ---------------------------------------------------------------- connections */

static void ae_conn_retry_fire(rlk_async *ac, void *arg)
{
    ae_conn *k = arg;

    k->retry = NULL;
    if (k->state == AE_DOWN)
        ae_conn_start(ac, k);
}

/* Opens the connection again after a backoff (none the first time). */
static void ae_conn_schedule(rlk_async *ac, ae_conn *k)
{
    long long ms = 0;

    if (ac->closing || k->retry)
        return;
    if (k->fails > 1) {
        ms = AE_BACKOFF_MIN_MS << (k->fails - 2 < 6 ? k->fails - 2 : 6);
        if (ms > AE_BACKOFF_MAX_MS)
            ms = AE_BACKOFF_MAX_MS;
    }
    k->retry = rlk_ae_timer_add(ac, ms, ae_conn_retry_fire, k);
}

static void ae_dial_abandon(rlk_async *ac, ae_conn *k);

static void ae_conn_close(rlk_async *ac, ae_conn *k)
{
    ae_dial_abandon(ac, k);
    if (k->handle)
        ac->hooks.detach(ac->hooks.data, k->handle);
    k->handle = NULL;
    k->events = 0;
    if (k->ctx)
        redisFree(k->ctx);
    k->ctx = NULL;
    k->fd = -1;
}

/* The pub/sub connection went down: every channel waits for it. */
static void ae_chans_down(rlk_async *ac);
static void ae_chans_up(rlk_async *ac);

static void ae_conn_drop(rlk_async *ac, ae_conn *k, const char *why)
{
    char msg[AE_ERRSTR_MAX];

    snprintf(msg, sizeof msg, "connection to %s lost: %s", ac->c->addr, why ? why : "");
    ae_conn_close(ac, k);
    if (k->state == AE_UP || k->state == AE_SETUP)
        k->fails = 1;
    else
        k->fails++;
    if (!k->is_sub && k->id)
        k->fence_id = k->id;    /* fence the old one before the next call */
    k->id = 0;
    k->state = AE_DOWN;
    k->setup_left = 0;
    ae_conn_schedule(ac, k);
    if (k->is_sub)
        ae_chans_down(ac);
    else
        ae_calls_fail(ac, RLK_ERR_IO, msg, 0);
}

/* The connection is made: its set-up goes out first. */
static void ae_conn_connected(rlk_async *ac, ae_conn *k)
{
    const char *argv[3];
    size_t lens[3];
    char db[16];
    int argc;

    k->state = AE_SETUP;
    k->since = rlk_ae_now_ms();
    if (k->is_sub) {
        for (int i = 0; (argc = rlk_conn_setup_cmd(ac->c, i, argv, lens, db)) > 0; i++) {
            if (redisAppendCommandArgv(k->ctx, argc, argv, lens) != REDIS_OK) {
                ae_conn_drop(ac, k, "out of memory");
                return;
            }
            k->setup_left++;
        }
        if (!k->setup_left) {
            k->state = AE_UP;
            k->fails = 0;
            ae_chans_up(ac);
        }
        ae_flush(ac, k);
        return;
    }
    /* The command connection: fence the one that broke (its lost calls have
     * run or never will once it is killed), AUTH/SELECT, then CLIENT ID. */
    if (k->fence_id) {
        char id[24];
        const char *kv[4] = {"CLIENT", "KILL", "ID", id};

        snprintf(id, sizeof id, "%lld", k->fence_id);
        if (ae_internal(ac, AE_CALL_KILL, 0, 4, kv, NULL) != 0)
            goto nomem;
    }
    for (int i = 0; (argc = rlk_conn_setup_cmd(ac->c, i, argv, lens, db)) > 0; i++)
        if (ae_internal(ac, AE_CALL_SETUP, i, argc, argv, lens) != 0)
            goto nomem;
    {
        const char *iv[2] = {"CLIENT", "ID"};

        if (ae_internal(ac, AE_CALL_ID, 0, 2, iv, NULL) != 0)
            goto nomem;
    }
    ae_flush(ac, k);
    return;
nomem:
    ae_conn_drop(ac, k, "out of memory");
}

static void ae_cref_put(ae_cref *r)
{
    int last;

    pthread_mutex_lock(&r->mu);
    last = --r->refs == 0;
    pthread_mutex_unlock(&r->mu);
    if (!last)
        return;
    rlk_free(r->c);     /* TLS: waits (bounded) for the pumps of its connections */
    pthread_mutex_destroy(&r->mu);
    free(r->sentinel_password);
    free(r);
}

static void ae_dial_put(ae_dial *d)
{
    int last;

    pthread_mutex_lock(&d->mu);
    last = --d->refs == 0;
    pthread_mutex_unlock(&d->mu);
    if (!last)
        return;
    close(d->sv[0]);
    close(d->sv[1]);
    pthread_mutex_destroy(&d->mu);
    free(d);
}

static void *ae_dial_thread(void *arg)
{
    ae_dial *d = arg;
    rlk_client *c = d->cref->c;
    redisContext *ctx = NULL;
    char host[256];
    int port = c->url.port, rc = RLK_OK, abandoned;

    snprintf(host, sizeof host, "%s", c->url.host ? c->url.host : "");
    if (c->url.is_sentinel) {
        /* The master the sentinels name (their follower thread started once). */
        pthread_mutex_lock(&d->cref->mu);
        if (!rlk_sentinel_opened(c))
            rc = rlk_sentinel_open(c, d->cref->sentinel_password);
        if (rlk_sentinel_opened(c) && !d->cref->sn_started && rlk_sentinel_follow(c) == RLK_OK)
            d->cref->sn_started = 1;
        pthread_mutex_unlock(&d->cref->mu);
        if (rlk_sentinel_opened(c) && d->refresh)
            (void)rlk_sentinel_refresh(c, "READONLY");
        d->switches = rlk_sentinel_switches(c, NULL);
        if (!rlk_sentinel_opened(c) || (rc = rlk_sentinel_master(c, host, sizeof host, &port)) != RLK_OK) {
            if (rc == RLK_OK)
                rc = RLK_ERR_NOMEM;
            snprintf(d->why, sizeof d->why, "%s", rlk_errstr(c));
        }
    }
    if (rc == RLK_OK)
        rc = rlk_transport_dial(c, host, port, c->connect_tv, &ctx, d->why, sizeof d->why);

    if (rc != RLK_OK && ctx && !d->why[0])
        snprintf(d->why, sizeof d->why, "%s", ctx->errstr);
    pthread_mutex_lock(&d->mu);
    abandoned = d->abandoned;
    d->rc = rc;
    d->done = 1;
    if (!abandoned)
        d->ctx = ctx;
    pthread_mutex_unlock(&d->mu);
    if (abandoned) {
        if (ctx)
            redisFree(ctx);
    } else
        (void)send(d->sv[1], "d", 1, MSG_NOSIGNAL);
    {
        ae_cref *cref = d->cref;

        ae_dial_put(d);
        ae_cref_put(cref);
    }
    return NULL;
}

/* Stops waiting for k's dial (its thread closes what it opens). */
static void ae_dial_abandon(rlk_async *ac, ae_conn *k)
{
    if (!k->dial)
        return;
    if (k->dial_handle)
        ac->hooks.detach(ac->hooks.data, k->dial_handle);
    k->dial_handle = NULL;
    pthread_mutex_lock(&k->dial->mu);
    k->dial->abandoned = 1;
    if (k->dial->ctx) {
        redisFree(k->dial->ctx);    /* done, not yet taken */
        k->dial->ctx = NULL;
    }
    pthread_mutex_unlock(&k->dial->mu);
    ae_dial_put(k->dial);
    k->dial = NULL;
}

/* Starts a blocking dial on its own thread. 0, or -1. */
static int ae_dial_start(rlk_async *ac, ae_conn *k)
{
    ae_dial *d = calloc(1, sizeof *d);
    pthread_attr_t at;
    pthread_t th;
    int fl;

    if (!d)
        return -1;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, d->sv) != 0) {
        free(d);
        return -1;
    }
    fl = fcntl(d->sv[0], F_GETFL);
    (void)fcntl(d->sv[0], F_SETFL, fl | O_NONBLOCK);
    pthread_mutex_init(&d->mu, NULL);
    d->refs = 2;
    d->cref = ac->cref;
    d->refresh = ac->sn_refresh;
    ac->sn_refresh = 0;
    pthread_mutex_lock(&ac->cref->mu);
    ac->cref->refs++;
    pthread_mutex_unlock(&ac->cref->mu);
    k->dial = d;
    k->dial_handle = ac->hooks.attach(ac->hooks.data, d->sv[0]);
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    if (!k->dial_handle || pthread_create(&th, &at, ae_dial_thread, d) != 0) {
        pthread_attr_destroy(&at);
        ae_cref_put(ac->cref);
        d->refs = 1;            /* no thread */
        ae_dial_abandon(ac, k);
        return -1;
    }
    pthread_attr_destroy(&at);
    ac->hooks.watch(ac->hooks.data, k->dial_handle, RLK_ASYNC_READ);
    return 0;
}

static void ae_conn_connected(rlk_async *ac, ae_conn *k);

/* The dial thread is done: its connection, made non-blocking, goes on. */
static void ae_dial_done(rlk_async *ac, ae_conn *k)
{
    ae_dial *d = k->dial;
    redisContext *ctx;
    char why[256], b;
    int rc, done, fl;

    (void)!read(d->sv[0], &b, 1);
    pthread_mutex_lock(&d->mu);
    done = d->done;
    ctx = d->ctx;
    d->ctx = NULL;
    rc = d->rc;
    snprintf(why, sizeof why, "%s", d->why);
    pthread_mutex_unlock(&d->mu);
    if (!done)
        return;
    k->switches = d->switches;
    ac->sn_ready = 1;           /* the sentinels were opened by the thread before it wrote */
    ae_dial_abandon(ac, k);     /* nothing left to take */
    if (rc != RLK_OK || !ctx) {
        if (ctx)
            redisFree(ctx);
        ae_conn_drop(ac, k, why[0] ? why : "dial failed");
        return;
    }
    fl = fcntl(ctx->fd, F_GETFL);
    if (fl < 0 || fcntl(ctx->fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        redisFree(ctx);
        ae_conn_drop(ac, k, "cannot make the connection non-blocking");
        return;
    }
    ctx->flags &= ~REDIS_BLOCK;
    k->ctx = ctx;
    k->fd = ctx->fd;
    k->handle = ac->hooks.attach(ac->hooks.data, ctx->fd);
    if (!k->handle) {
        ae_conn_drop(ac, k, "the loop refused the file descriptor");
        return;
    }
    k->events = RLK_ASYNC_READ;
    ac->hooks.watch(ac->hooks.data, k->handle, k->events);
    ae_conn_connected(ac, k);
}

/* Dials the connection: non-blocking (plain TCP or a unix socket), or on a
 * thread when the dial blocks (a TLS handshake). */
static void ae_conn_start(rlk_async *ac, ae_conn *k)
{
    redisContext *ctx = NULL;

    if (ac->closing || k->state != AE_DOWN)
        return;
    k->since = rlk_ae_now_ms();
    if (rlk_topo_dial_blocks(ac->c)) {
        if (ae_dial_start(ac, k) != 0) {
            k->fails++;
            ae_conn_schedule(ac, k);
            return;
        }
        k->state = AE_CONNECTING;
        ae_sweep_ensure(ac);
        return;
    }
    if (rlk_transport_dial_nonblock(ac->c, &ctx) != RLK_OK || !ctx) {
        k->fails++;
        ae_conn_schedule(ac, k);
        return;
    }
    k->ctx = ctx;
    k->fd = ctx->fd;
    if (ctx->err) {
        ae_conn_drop(ac, k, ctx->errstr);
        return;
    }
    k->handle = ac->hooks.attach(ac->hooks.data, ctx->fd);
    if (!k->handle) {
        ae_conn_drop(ac, k, "the loop refused the file descriptor");
        return;
    }
    k->state = AE_CONNECTING;
    k->events = RLK_ASYNC_WRITE;
    ac->hooks.watch(ac->hooks.data, k->handle, k->events);
    ae_sweep_ensure(ac);
}

/* The connect finished (writable): its outcome. */
static void ae_conn_check_connect(rlk_async *ac, ae_conn *k)
{
    int err = 0;
    socklen_t len = sizeof err;

    if (getsockopt(k->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0)
        err = errno;
    if (err) {
        ae_conn_drop(ac, k, strerror(err));
        return;
    }
    k->ctx->flags |= REDIS_CONNECTED;
    k->events = RLK_ASYNC_READ;
    ac->hooks.watch(ac->hooks.data, k->handle, k->events);
    ae_conn_connected(ac, k);
}

/* ---------------------------------------------------------------- the sweep */

/* Connects that take too long, and calls without a reply within the
 * command timeout (the connection is dropped: the reply is lost), and
 * calls that could not be written for as long. */
static void ae_sweep_fire(rlk_async *ac, void *arg)
{
    long long now = rlk_ae_now_ms();
    ae_conn *ks[2] = {&ac->cmd, &ac->sub};

    (void)arg;
    ac->sweep = NULL;
    for (int i = 0; i < 2; i++) {
        ae_conn *k = ks[i];

        if ((k->state == AE_CONNECTING || k->state == AE_SETUP) &&
            now - k->since > ac->c->connect_timeout_ms)
            ae_conn_drop(ac, k, "connect timed out");
    }
    if (ac->closing)
        return;
    if (ac->inflight.head && now - ac->inflight.head->issued > ac->c->command_timeout_ms)
        ae_conn_drop(ac, &ac->cmd, "no reply within the command timeout");
    while (!ac->closing && ac->cmd.state != AE_UP && ac->unsent.head &&
           now - ac->unsent.head->issued > ac->c->command_timeout_ms) {
        rlk_ae_call *call = ae_callq_pop(&ac->unsent);
        char msg[AE_ERRSTR_MAX];

        snprintf(msg, sizeof msg, "no connection to %s within the command timeout (%d ms)",
                 ac->c->addr, ac->c->command_timeout_ms);
        ae_call_end(ac, call, RLK_ERR_IO, NULL, msg, 0);
    }
    ae_sweep_ensure(ac);
}

/* Sentinel: a switch the follower saw drops the connections to the old
 * master (calls in flight are lost and settled; waiters resubscribe). */
static void ae_sn_watch_fire(rlk_async *ac, void *arg)
{
    (void)arg;
    ac->sn_watch = NULL;
    if (ac->sn_ready) {
        unsigned long long n = rlk_sentinel_switches(ac->c, NULL);
        ae_conn *ks[2] = {&ac->cmd, &ac->sub};

        for (int i = 0; i < 2 && !ac->closing; i++)
            if (ks[i]->state != AE_DOWN && !ks[i]->dial && ks[i]->switches != n)
                ae_conn_drop(ac, ks[i], "the sentinels named a new master");
    }
    if (!ac->closing)
        ac->sn_watch = rlk_ae_timer_add(ac, 250, ae_sn_watch_fire, NULL);
}

static void ae_sweep_ensure(rlk_async *ac)
{
    if (ac->sweep || ac->closing || !ac->attached)
        return;
    if (ac->inflight.head || ac->unsent.head || ac->cmd.state == AE_CONNECTING ||
        ac->cmd.state == AE_SETUP || ac->sub.state == AE_CONNECTING ||
        ac->sub.state == AE_SETUP)
        ac->sweep = rlk_ae_timer_add(ac, AE_SWEEP_MS, ae_sweep_fire, NULL);
}

/* ---------------------------------------------------------------- pub/sub */

static size_t ae_hash(const char *s)
{
    size_t h = 1469598103934665603ULL;

    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ULL;
    return h;
}

static ae_chan *ae_chan_find(rlk_async *ac, const char *name)
{
    if (!ac->nbuckets)
        return NULL;
    for (ae_chan *ch = ac->buckets[ae_hash(name) & (ac->nbuckets - 1)]; ch; ch = ch->bnext)
        if (strcmp(ch->name, name) == 0)
            return ch;
    return NULL;
}

static int ae_chan_grow(rlk_async *ac)
{
    size_t n = ac->nbuckets ? ac->nbuckets * 2 : 256;
    ae_chan **b = calloc(n, sizeof *b);

    if (!b)
        return -1;
    for (size_t i = 0; i < ac->nbuckets; i++) {
        ae_chan *ch = ac->buckets[i], *next;

        for (; ch; ch = next) {
            size_t j = ae_hash(ch->name) & (n - 1);

            next = ch->bnext;
            ch->bnext = b[j];
            b[j] = ch;
        }
    }
    free(ac->buckets);
    ac->buckets = b;
    ac->nbuckets = n;
    return 0;
}

static ae_chan *ae_chan_get(rlk_async *ac, const char *name)
{
    ae_chan *ch = ae_chan_find(ac, name);
    size_t j;

    if (ch)
        return ch;
    if (ac->nchans >= ac->nbuckets && ae_chan_grow(ac) != 0)
        return NULL;
    if (!(ch = calloc(1, sizeof *ch)) || !(ch->name = strdup(name))) {
        free(ch);
        return NULL;
    }
    j = ae_hash(name) & (ac->nbuckets - 1);
    ch->bnext = ac->buckets[j];
    ac->buckets[j] = ch;
    ac->nchans++;
    return ch;
}

/* Frees ch when nothing needs it any more. */
static void ae_chan_maybe_free(rlk_async *ac, ae_chan *ch)
{
    ae_chan **p;

    if (ch->listeners || ch->outstanding || ch->dispatching || ch->head)
        return;
    for (p = &ac->buckets[ae_hash(ch->name) & (ac->nbuckets - 1)]; *p; p = &(*p)->bnext)
        if (*p == ch) {
            *p = ch->bnext;
            break;
        }
    ac->nchans--;
    free(ch->name);
    free(ch);
}

static void ae_sub_send(rlk_async *ac, const char *cmd, const char *channel)
{
    const char *argv[2] = {cmd, channel};

    if (redisAppendCommandArgv(ac->sub.ctx, 2, argv, NULL) != REDIS_OK)
        ae_conn_drop(ac, &ac->sub, "out of memory");
    else if (!ac->depth)
        ae_flush(ac, &ac->sub);
}

/* Sends SUBSCRIBE for ch when the connection is up (else it goes out when it is). */
static void ae_chan_want(rlk_async *ac, ae_chan *ch)
{
    if (ch->last_sent == 1)
        return;
    if (ac->sub.state == AE_UP) {
        ch->last_sent = 1;
        ch->outstanding++;
        ae_sub_send(ac, "SUBSCRIBE", ch->name);
    } else if (ac->sub.state == AE_DOWN && !ac->sub.retry && ac->attached)
        ae_conn_start(ac, &ac->sub);
}

/* After a change of listeners: UNSUBSCRIBE a channel nobody listens to. */
static void ae_chan_settle(rlk_async *ac, ae_chan *ch);

static void ae_sub_ready_fire(rlk_async *ac, void *arg)
{
    rlk_ae_sub *s = arg;

    s->ready = NULL;
    s->fn(ac, s->ch->name, NULL, 0, s->arg);
}

rlk_ae_sub *rlk_ae_subscribe(rlk_async *ac, const char *channel, rlk_ae_msg_fn fn, void *arg)
{
    ae_chan *ch;
    rlk_ae_sub *s;

    if (ac->closing || !(s = calloc(1, sizeof *s)))
        return NULL;
    if (!(ch = ae_chan_get(ac, channel))) {
        free(s);
        return NULL;
    }
    s->ac = ac;
    s->ch = ch;
    s->fn = fn;
    s->arg = arg;
    s->prev = ch->tail;
    if (ch->tail)
        ch->tail->next = s;
    else
        ch->head = s;
    ch->tail = s;
    ch->listeners++;
    if (ch->live && ch->last_sent == 1 && !ch->outstanding)
        s->ready = rlk_ae_timer_add(ac, 0, ae_sub_ready_fire, s);
    else
        ae_chan_want(ac, ch);
    ae_sweep_ensure(ac);
    return s;
}

int rlk_ae_sub_ready(const rlk_ae_sub *s)
{
    return s && s->ch->live && s->ch->last_sent == 1 && !s->ch->outstanding;
}

static void ae_sub_unlink(ae_chan *ch, rlk_ae_sub *s)
{
    if (s->prev)
        s->prev->next = s->next;
    else
        ch->head = s->next;
    if (s->next)
        s->next->prev = s->prev;
    else
        ch->tail = s->prev;
    free(s);
}

void rlk_ae_unsubscribe(rlk_ae_sub *s)
{
    ae_chan *ch;
    rlk_async *ac;

    if (!s || s->dead)
        return;
    ch = s->ch;
    ac = s->ac;
    rlk_ae_timer_del(s->ready);
    s->ready = NULL;
    s->dead = 1;
    ch->listeners--;
    if (ch->dispatching || ac->closing)
        return;     /* unlinked after the dispatch, or freed with the client */
    ae_sub_unlink(ch, s);
    ae_chan_settle(ac, ch);
}

static void ae_chan_settle(rlk_async *ac, ae_chan *ch)
{
    if (ch->listeners)
        return;
    if (ch->last_sent == 1 && ac->sub.state == AE_UP) {
        ch->last_sent = 0;
        ch->outstanding++;
        ae_sub_send(ac, "UNSUBSCRIBE", ch->name);
    } else if (ac->sub.state != AE_UP)
        ch->last_sent = 0;
    ae_chan_maybe_free(ac, ch);
}

/* Calls the listeners of ch with a message (msg NULL: subscribed). */
static void ae_chan_dispatch(rlk_async *ac, ae_chan *ch, const char *msg, size_t len)
{
    rlk_ae_sub *s, *next;

    ch->dispatching++;
    for (s = ch->head; s && !ac->closing; s = s->next)
        if (!s->dead) {
            if (!msg && s->ready) {
                rlk_ae_timer_del(s->ready);
                s->ready = NULL;
            }
            s->fn(ac, ch->name, msg, len, s->arg);
        }
    if (ac->closing)
        return;     /* everything goes with the client */
    if (--ch->dispatching == 0) {
        for (s = ch->head; s; s = next) {
            next = s->next;
            if (s->dead)
                ae_sub_unlink(ch, s);
        }
        ae_chan_settle(ac, ch);
    }
}

/* Every channel: not subscribed any more. */
static void ae_chans_down(rlk_async *ac)
{
    for (size_t i = 0; i < ac->nbuckets; i++) {
        ae_chan *ch = ac->buckets[i], *next;

        for (; ch; ch = next) {
            next = ch->bnext;
            ch->live = 0;
            ch->outstanding = 0;
            ch->last_sent = 0;
            ae_chan_maybe_free(ac, ch);
        }
    }
}

/* The pub/sub connection is up: every channel someone listens to again. */
static void ae_chans_up(rlk_async *ac)
{
    for (size_t i = 0; i < ac->nbuckets; i++)
        for (ae_chan *ch = ac->buckets[i]; ch; ch = ch->bnext)
            if (ch->listeners)
                ae_chan_want(ac, ch);
}

/* One reply on the pub/sub connection. */
static void ae_sub_reply(rlk_async *ac, redisReply *r)
{
    ae_chan *ch;
    const char *kind;

    if (ac->sub.setup_left > 0) {
        int i = 0;

        /* The set-up replies come in order: AUTH then SELECT (as many as sent). */
        for (int n = 0; rlk_conn_setup_cmd(ac->c, n, (const char *[3]){0}, (size_t[3]){0},
                                           (char[16]){0}) > 0; n++)
            i++;
        if (rlk_conn_check_setup_reply(ac->c, i - ac->sub.setup_left, r) != RLK_OK) {
            ae_conn_drop(ac, &ac->sub, rlk_errstr(ac->c));
            return;
        }
        if (--ac->sub.setup_left == 0) {
            ac->sub.state = AE_UP;
            ac->sub.fails = 0;
            ae_chans_up(ac);
        }
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0]->str;
    ch = ae_chan_find(ac, r->element[1]->str);
    if (!ch)
        return;
    if (strcmp(kind, "message") == 0) {
        if (ch->live && r->element[2]->type == REDIS_REPLY_STRING)
            ae_chan_dispatch(ac, ch, r->element[2]->str, r->element[2]->len);
        return;     /* the dispatch settles the channel */
    }
    if (strcmp(kind, "subscribe") == 0) {
        ch->outstanding--;
        ch->live = 1;
        if (ch->last_sent == 1 && !ch->outstanding) {
            ae_chan_dispatch(ac, ch, NULL, 0);
            return;
        }
    } else if (strcmp(kind, "unsubscribe") == 0) {
        ch->outstanding--;
        ch->live = 0;
    }
    if (!ac->closing)
        ae_chan_settle(ac, ch);
}

/* ---------------------------------------------------------------- I/O */

/* Reads what k has, handles its replies; 0, or -1 when k was dropped. */
static void ae_conn_read(rlk_async *ac, ae_conn *k)
{
    int rc = redisBufferRead(k->ctx);
    char why[128];

    snprintf(why, sizeof why, "%s", k->ctx->err ? k->ctx->errstr : "");
    for (;;) {
        void *reply = NULL;

        if (!k->ctx || redisReaderGetReply(k->ctx->reader, &reply) != REDIS_OK) {
            if (k->ctx)
                ae_conn_drop(ac, k, "protocol error");
            return;
        }
        if (!reply)
            break;
        if (k->is_sub)
            ae_sub_reply(ac, reply);
        else
            ae_cmd_reply(ac, reply);
        freeReplyObject(reply);
        if (ac->closing || !k->ctx)
            return;
    }
    if (rc != REDIS_OK)
        ae_conn_drop(ac, k, why[0] ? why : "connection closed");
    else if (!k->is_sub && ac->cmd_readonly) {
        ac->cmd_readonly = 0;
        ae_conn_drop(ac, k, "READONLY: the master was demoted, asking the sentinels");
        if (!ac->closing && ac->sub.state != AE_DOWN)
            ae_conn_drop(ac, &ac->sub, "the master was demoted");
    }
}

void rlk_async_handle_io(rlk_async *ac, int fd, int events)
{
    ae_conn *k;

    if (!ac || ac->closing)
        return;
    k = ac->cmd.ctx && ac->cmd.fd == fd ? &ac->cmd : ac->sub.ctx && ac->sub.fd == fd ? &ac->sub : NULL;
    if (!k) {
        ae_conn *d = ac->cmd.dial && ac->cmd.dial->sv[0] == fd ? &ac->cmd
                     : ac->sub.dial && ac->sub.dial->sv[0] == fd ? &ac->sub : NULL;

        if (d) {
            ae_enter(ac);
            ae_dial_done(ac, d);
            ae_leave(ac);
        }
        return;
    }
    ae_enter(ac);
    if ((events & RLK_ASYNC_WRITE) && k->state == AE_CONNECTING)
        ae_conn_check_connect(ac, k);
    else if ((events & RLK_ASYNC_WRITE) && k->ctx)
        ae_flush(ac, k);
    if (!ac->closing && (events & RLK_ASYNC_READ) && k->ctx && k->state != AE_CONNECTING)
        ae_conn_read(ac, k);
    ae_leave(ac);
}

void rlk_async_handle_timer(rlk_async *ac)
{
    if (!ac || ac->closing)
        return;
    ae_enter(ac);
    ac->armed = -1;
    ae_timers_run(ac);
    ae_leave(ac);
}

/* ---------------------------------------------------------------- the watchdog */

rlk_ae_hold *rlk_ae_wd_add(rlk_async *ac, int kind, const char *renew, const char *name,
                           const char *key, const char *owner, rlk_ae_lost_fn lost, void *arg)
{
    rlk_ae_hold *h = calloc(1, sizeof *h);

    if (!h)
        return NULL;
    h->ac = ac;
    h->kind = kind;
    h->renew = strdup(renew);
    h->name = strdup(name);
    h->key = strdup(key);
    h->owner = strdup(owner);
    h->lost = lost;
    h->arg = arg;
    if (!h->renew || !h->name || !h->key || !h->owner) {
        free(h->renew);
        free(h->name);
        free(h->key);
        free(h->owner);
        free(h);
        return NULL;
    }
    h->next = ac->holds;
    if (ac->holds)
        ac->holds->prev = h;
    ac->holds = h;
    ac->nholds++;
    ae_renew_arm(ac);
    return h;
}

rlk_ae_hold *rlk_ae_wd_add_one(rlk_async *ac, int kind, const char *renew, const char *name,
                               int nkeys, const char *const *keys, const char *owner,
                               rlk_ae_lost_fn lost, void *arg)
{
    char *k2 = nkeys > 1 ? strdup(keys[1]) : NULL, *k3 = nkeys > 2 ? strdup(keys[2]) : NULL;
    rlk_ae_hold *h = NULL;

    if (nkeys < 1 || nkeys > 3 || (nkeys > 1 && !k2) || (nkeys > 2 && !k3) ||
        !(h = rlk_ae_wd_add(ac, kind, renew, name, keys[0], owner, lost, arg))) {
        free(k2);
        free(k3);
        return NULL;
    }
    h->more[0] = k2;
    h->more[1] = k3;
    h->one = 1;
    return h;
}

rlk_ae_hold *rlk_ae_wd_find(rlk_async *ac, const char *renew, const char *key, const char *owner)
{
    for (rlk_ae_hold *h = ac->holds; h; h = h->next)
        if (!h->removed && strcmp(h->key, key) == 0 && strcmp(h->owner, owner) == 0 &&
            strcmp(h->renew, renew) == 0)
            return h;
    return NULL;
}

static void ae_hold_free(rlk_ae_hold *h)
{
    free(h->more[0]);
    free(h->more[1]);
    free(h->renew);
    free(h->name);
    free(h->key);
    free(h->owner);
    free(h);
}

void rlk_ae_wd_del(rlk_ae_hold *h)
{
    rlk_async *ac;

    if (!h || h->removed)
        return;
    ac = h->ac;
    h->removed = 1;
    if (h->prev)
        h->prev->next = h->next;
    else
        ac->holds = h->next;
    if (h->next)
        h->next->prev = h->prev;
    ac->nholds--;
    if (!h->refs)
        ae_hold_free(h);
}

static void ae_renewal_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                             int lost, void *arg)
{
    ae_renewal *b = arg;

    (void)errstr;
    (void)lost;
    for (int i = 0; i < b->n; i++) {
        rlk_ae_hold *h = b->h[i];

        h->refs--;
        if (h->removed) {
            if (!h->refs)
                ae_hold_free(h);
            continue;
        }
        if (rc == RLK_OK && !ac->closing &&
            ((r->type == REDIS_REPLY_ARRAY && (size_t)i < r->elements &&
              r->element[i]->type == REDIS_REPLY_INTEGER && r->element[i]->integer == 0) ||
             (h->one && r->type == REDIS_REPLY_INTEGER && r->integer == 0))) {
            /* Gone: never re-created; the kind drops it, then the application hears. */
            int kind = h->kind;
            char *name = strdup(h->name), *owner = strdup(h->owner);

            h->refs++;
            if (h->lost)
                h->lost(ac, h, h->arg);
            rlk_ae_wd_del(h);
            if (ac->lost_fn && name && owner)
                ac->lost_fn(kind, name, owner, RLK_LOST_GONE, ac->lost_ud);
            free(name);
            free(owner);
            if (--h->refs == 0 && h->removed)
                ae_hold_free(h);
        }
    }
    free(b);
}

/* Sends one renewal call for holds h[0..n-1] (one renew script). */
static void ae_renew_send(rlk_async *ac, const char *renew, rlk_ae_hold **hs, int n)
{
    const char *keys[AE_RENEW_BATCH], *args[AE_RENEW_BATCH + 1];
    char lease[24];
    ae_renewal *b = calloc(1, sizeof *b);

    if (!b)
        return;
    snprintf(lease, sizeof lease, "%lld", ac->c->watchdog_lease_ms);
    args[0] = lease;
    if (n == 1 && hs[0]->one) {
        const char *k[3] = {hs[0]->key, hs[0]->more[0], hs[0]->more[1]};
        const char *a[2] = {lease, hs[0]->owner};

        b->h[0] = hs[0];
        b->n = 1;
        b->ac = ac;
        hs[0]->refs++;
        if (!rlk_ae_script(ac, renew, 1 + (k[1] != NULL) + (k[2] != NULL), k, 2, a,
                           ae_renewal_reply, b)) {
            hs[0]->refs--;
            free(b);
        }
        return;
    }
    for (int i = 0; i < n; i++) {
        keys[i] = hs[i]->key;
        args[i + 1] = hs[i]->owner;
        b->h[i] = hs[i];
        hs[i]->refs++;
    }
    b->n = n;
    b->ac = ac;
    if (!rlk_ae_script(ac, renew, n, keys, n + 1, args, ae_renewal_reply, b)) {
        for (int i = 0; i < n; i++)
            hs[i]->refs--;
        free(b);
    }
}

static void ae_renew_fire(rlk_async *ac, void *arg)
{
    rlk_ae_hold *batch[AE_RENEW_BATCH];
    const char *renew = NULL;
    int n = 0;

    (void)arg;
    ac->renew_timer = NULL;
    /* Simple and exact: group by script name, in list order. */
    {
        size_t total = ac->nholds, done = 0;
        rlk_ae_hold **all = total ? malloc(total * sizeof *all) : NULL;
        char *used = total ? calloc(total, 1) : NULL;

        if (total && (!all || !used)) {
            free(all);
            free(used);
            ae_renew_arm(ac);
            return;
        }
        for (rlk_ae_hold *h = ac->holds; h && done < total; h = h->next)
            all[done++] = h;
        for (size_t i = 0; i < done; i++) {
            if (used[i])
                continue;
            renew = all[i]->renew;
            n = 0;
            for (size_t j = i; j < done; j++) {
                if (used[j] || strcmp(all[j]->renew, renew) != 0)
                    continue;
                used[j] = 1;
                batch[n++] = all[j];
                if (n == AE_RENEW_BATCH || all[j]->one) {
                    ae_renew_send(ac, renew, batch, n);
                    n = 0;
                }
            }
            if (n)
                ae_renew_send(ac, renew, batch, n);
        }
        free(all);
        free(used);
    }
    ae_renew_arm(ac);
}

/* The renewal timer runs while holds exist: every watchdog_ms/3. */
static void ae_renew_arm(rlk_async *ac)
{
    long long every = ac->c->watchdog_lease_ms / 3;

    if (ac->renew_timer || !ac->holds || ac->closing)
        return;
    ac->renew_timer = rlk_ae_timer_add(ac, every > 0 ? every : 1, ae_renew_fire, NULL);
}

/* ---------------------------------------------------------------- the client */

rlk_async *rlk_async_new(const rlk_options *opts)
{
    rlk_async *ac = calloc(1, sizeof *ac);

    if (!ac)
        return NULL;
    ac->armed = -2;
    ac->cmd.fd = ac->sub.fd = -1;
    ac->sub.is_sub = 1;
    ac->c = rlk_client_prepare(opts);
    ac->cref = calloc(1, sizeof *ac->cref);
    if (!ac->c || !ac->cref) {
        rlk_free(ac->c);
        free(ac->cref);
        free(ac);
        return NULL;
    }
    pthread_mutex_init(&ac->cref->mu, NULL);
    ac->cref->refs = 1;
    ac->cref->c = ac->c;
    if (opts && opts->sentinel_password)
        ac->cref->sentinel_password = strdup(opts->sentinel_password);
    if (ac->c->fatal) {
        ac->fatal = ac->c->fatal;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "%s", ac->c->fatal_msg);
    } else if (ac->c->url.is_cluster) {
        ac->fatal = RLK_ERR_ARG;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg,
                 "redis+cluster:// is not supported by the async API yet");
    }
    if (rlk_random_uuid(ac->uuid) != 0 && !ac->fatal) {
        ac->fatal = RLK_ERR_IO;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "no random source for the client uuid");
    }
    return ac;
}

int rlk_async_attach(rlk_async *ac, const rlk_async_hooks *hooks)
{
    if (!ac || !hooks || !hooks->attach || !hooks->watch || !hooks->detach || !hooks->set_timer ||
        !hooks->cleanup || ac->attached || ac->closing)
        return RLK_ERR_ARG;
    ac->hooks = *hooks;
    ac->attached = 1;
    ae_enter(ac);
    if (!ac->fatal)
        ae_conn_start(ac, &ac->cmd);
    if (!ac->fatal && ac->c->url.is_sentinel)
        ac->sn_watch = rlk_ae_timer_add(ac, 250, ae_sn_watch_fire, NULL);
    ae_chans_up(ac);
    ae_leave(ac);
    return RLK_OK;
}

static void ae_destroy(rlk_async *ac)
{
    for (size_t i = 0; i < ac->nbuckets; i++) {
        ae_chan *ch = ac->buckets[i], *next;

        for (; ch; ch = next) {
            rlk_ae_sub *s, *sn;

            next = ch->bnext;
            for (s = ch->head; s; s = sn) {
                sn = s->next;
                free(s);
            }
            free(ch->name);
            free(ch);
        }
    }
    free(ac->buckets);
    for (size_t i = 0; i < ac->nheap; i++)
        free(ac->heap[i]);
    free(ac->heap);
    if (ac->cmd.ctx)
        redisFree(ac->cmd.ctx);
    if (ac->sub.ctx)
        redisFree(ac->sub.ctx);
    ae_cref_put(ac->cref);     /* the client goes with the last dial thread */
    free(ac);
}

void rlk_async_free(rlk_async *ac)
{
    rlk_ae_hold *h, *hn;

    if (!ac || ac->closing)
        return;
    ac->depth++;
    ac->closing = 1;
    /* Calls first: their kinds complete their requests with the error. */
    ae_calls_fail(ac, RLK_ERR_CLOSED, "the async client is being freed", 1);
    /* Every request ends now, callbacks included (a request made by one of
     * them ends with RLK_ERR_CLOSED at once, and is delivered here too). */
    for (;;) {
        for (rlk_async_req *r = ac->reqs; r; r = r->next)
            rlk_ae_complete(r, RLK_ERR_CLOSED, 0, NULL, "the async client was freed");
        if (!ac->qhead)
            break;
        ae_deliver(ac);
    }
    for (h = ac->holds; h; h = hn) {
        hn = h->next;
        ae_hold_free(h);
    }
    ac->holds = NULL;
    for (int i = 0; i < RLK_AE_SLOTS; i++)
        if (ac->kind_data[i] && ac->kind_destroy[i])
            ac->kind_destroy[i](ac->kind_data[i]);
    if (ac->attached) {
        ae_dial_abandon(ac, &ac->cmd);
        ae_dial_abandon(ac, &ac->sub);
        if (ac->cmd.handle)
            ac->hooks.detach(ac->hooks.data, ac->cmd.handle);
        if (ac->sub.handle)
            ac->hooks.detach(ac->hooks.data, ac->sub.handle);
        ac->cmd.handle = ac->sub.handle = NULL;
        ac->hooks.set_timer(ac->hooks.data, -1);
        ac->hooks.cleanup(ac->hooks.data);
    }
    ac->depth--;
    if (ac->depth)
        ac->destroy_pending = 1;
    else
        ae_destroy(ac);
}
