/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * engine.c - the engine of the non-blocking API (engine.h): the rlk_async
 * client, its requests and their deferred completion, the timer heap behind
 * the loop's one timer, the command connection (pipelined EVALSHA, NOSCRIPT
 * load and retry, a fence of the previous connection after a drop), the
 * pub/sub connection and its refcounted channels (the watchdog is
 * ae_wd.c's). On a Redis Cluster one node (command and pub/sub connection)
 * per master; the slot map, routing by slot and the redirects are
 * ae_route.c's.
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
#include "client/cluster.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/random.h"
#include "client/scripts.h"
#include "client/sentinel.h"
#include "client/slot.h"
#include "client/topo.h"
#include "client/transport.h"
#include "async/engine.h"
#include "async/ae_state.h"
#include "async/ae_route.h"
#include "runtime/rt.h"

static void ae_conn_start(rlk_async *ac, ae_conn *k);
static void ae_conn_drop(rlk_async *ac, ae_conn *k, const char *why);
static void ae_sweep_ensure(rlk_async *ac);
static void ae_arm(rlk_async *ac);
static void ae_sub_send(rlk_async *ac, ae_conn *k, const char *cmd, ae_chan *ch, int sub);
static void ae_chans_up(rlk_async *ac);

/* The marker rlk_ae_publish_arg returns while a cluster's pub/sub mode is
 * not known yet: a script call that passes it is formatted both ways, and
 * the one of the mode goes out (no call is written before the mode is known). */
static const char ae_pub_auto[] = "publish";

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
    if (ac->pubsub == RLK_PUBSUB_SHARDED)
        return "spublish";
    return ac->pubsub == RLK_PUBSUB_GLOBAL ? "publish" : ae_pub_auto;
}

int rlk_ae_counts_exact(rlk_async *ac)
{
    return rlk_topo_counts_exact(ac->c, ac->pubsub);
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

rlk_rt_counters *rlk_ae_counters(rlk_async *ac)
{
    rlk_rt *rt = rlk_rt_get(ac->c);     /* the settings-only client's: its counters only */

    return rt ? &rt->counters : NULL;
}

void rlk_ae_req_metric(rlk_async_req *r, int kind, const char *name)
{
    if (r->done || r->mname || !(r->mname = strdup(name ? name : "")))
        return;
    r->mkind = kind;
    rlk_metrics_begin(rlk_ae_counters(r->ac), &r->mc);
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
    if (r->mname) {     /* the acquisition's result, wait and watched name */
        rlk_metrics_end(&r->mc, r->mkind, r->mname, err);
        free(r->mname);
        r->mname = NULL;
    }
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
    free(r->mname);
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
            for (int i = 0; i < ac->nnodes && !ac->closing; i++) {
                ae_flush(ac, &ac->nodes[i]->cmd);
                if (!ac->closing)
                    ae_flush(ac, &ac->nodes[i]->sub);
            }
            if (!ac->closing)
                ae_deliver(ac);     /* a drop while flushing fails calls: their kinds complete */
        }
        if (!ac->closing)
            ae_arm(ac);
    }
    if (--ac->depth == 0 && ac->destroy_pending)
        ae_destroy(ac);
}

/* ---------------------------------------------------------------- calls */

void ae_callq_push(ae_callq *q, rlk_ae_call *call)
{
    call->next = NULL;
    if (q->tail)
        q->tail->next = call;
    else
        q->head = call;
    q->tail = call;
    q->n++;
}

static void ae_callq_push_front(ae_callq *q, rlk_ae_call *call)
{
    call->next = q->head;
    q->head = call;
    if (!q->tail)
        q->tail = call;
    q->n++;
}

rlk_ae_call *ae_callq_pop(ae_callq *q)
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

void ae_call_free(rlk_ae_call *call)
{
    if (call->cmd)
        redisFreeCommand(call->cmd);
    if (call->rt) {
        if (call->rt->cmd_s)
            redisFreeCommand(call->rt->cmd_s);
        free(call->rt->last_err);
        free(call->rt);
    }
    free(call);
}

/* A user call's end: its callback (unless forgotten), then it is freed. */
void ae_call_end(rlk_async *ac, rlk_ae_call *call, int rc, const redisReply *reply,
                        const char *errstr, int lost)
{
    if (call->what == AE_CALL_USER && !call->forgotten && call->fn)
        call->fn(ac, rc, reply, errstr ? errstr : "", lost, call->arg);
    ae_call_free(call);
}

/* The form of the command the pub/sub mode asks for (known by now). */
static void ae_call_settle_form(rlk_async *ac, rlk_ae_call *call)
{
    if (!call->rt || !call->rt->cmd_s)
        return;
    if (ac->pubsub == RLK_PUBSUB_SHARDED) {
        redisFreeCommand(call->cmd);
        call->cmd = call->rt->cmd_s;
        call->len = call->rt->len_s;
    } else
        redisFreeCommand(call->rt->cmd_s);
    call->rt->cmd_s = NULL;
}

/* Appends the call's command to n's live connection and moves it in flight
 * (an ASK redirect's ASKING first). */
static int ae_call_write(rlk_async *ac, ae_node *n, rlk_ae_call *call)
{
    ae_call_settle_form(ac, call);
    if (call->rt && call->rt->asking) {
        rlk_ae_call *ask = ae_call_new(ac, AE_CALL_ASKING, NULL, NULL);

        if (!ask || redisAppendCommand(n->cmd.ctx, "ASKING") != REDIS_OK) {
            if (ask)
                ae_call_free(ask);
            return -1;
        }
        ask->rt->written = rlk_ae_now_ms();
        ae_callq_push(&n->inflight, ask);
        call->rt->asking = 0;
    }
    if (redisAppendFormattedCommand(n->cmd.ctx, call->cmd, call->len) != REDIS_OK)
        return -1;
    if (call->rt)
        call->rt->written = rlk_ae_now_ms();
    ae_callq_push(&n->inflight, call);
    return 0;
}

rlk_ae_call *ae_call_new(rlk_async *ac, int what, rlk_ae_reply_fn fn, void *arg)
{
    rlk_ae_call *call = calloc(1, sizeof *call);

    if (!call)
        return NULL;
    call->what = what;
    call->fn = fn;
    call->arg = arg;
    call->issued = rlk_ae_now_ms();
    if (ac->cluster) {
        if (!(call->rt = calloc(1, sizeof *call->rt))) {
            free(call);
            return NULL;
        }
        call->rt->slot = RLK_TOPO_ANY_SLOT;
        call->rt->backoff = AE_CL_BACKOFF_MIN_MS;
    }
    return call;
}

/* Queues a call on node n: written now when its connection is up, else
 * later (the connection is opened). 0, or -1 (out of memory: not queued). */
int ae_node_submit(rlk_async *ac, ae_node *n, rlk_ae_call *call)
{
    if (n->cmd.state == AE_UP && !n->unsent.head) {
        if (ae_call_write(ac, n, call) != 0)
            return -1;
    } else {
        ae_callq_push(&n->unsent, call);
        if (ac->attached && n->cmd.state == AE_DOWN && !n->cmd.retry)
            ae_conn_start(ac, &n->cmd);
    }
    ae_sweep_ensure(ac);
    if (!ac->depth && ac->attached)
        ae_flush(ac, &n->cmd);
    return 0;
}

/* Queues a user call: on the one server, or routed by its slot. */
static rlk_ae_call *ae_call_submit(rlk_async *ac, rlk_ae_call *call)
{
    if (!ac->cluster) {
        if (ae_node_submit(ac, AE_N0(ac), call) != 0) {
            ae_call_free(call);
            return NULL;
        }
        return call;
    }
    if (call->rt->fail_rc)
        ae_route_park(ac, call, 0);   /* ended on the next turn, never from inside the call */
    else
        ae_route_call(ac, call);
    ae_sweep_ensure(ac);
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
    int len, pub = -1;

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
    for (int i = 0; i < nargs && pub < 0; i++)
        if (args[i] == ae_pub_auto)
            pub = i;
    if (pub >= 0 && call->rt) {
        /* The mode is not known yet: the "spublish" form too. */
        const char **a2 = malloc((size_t)nargs * sizeof *a2);
        size_t *l2 = arglens ? malloc((size_t)nargs * sizeof *l2) : NULL;

        if (a2 && (!arglens || l2)) {
            memcpy(a2, args, (size_t)nargs * sizeof *a2);
            a2[pub] = "spublish";
            if (l2) {
                memcpy(l2, arglens, (size_t)nargs * sizeof *l2);
                l2[pub] = 8;
            }
            len = rlk_conn_format_script(ac->c, s, nkeys, keys, NULL, nargs, a2, l2, &call->rt->cmd_s);
        } else
            len = -1;
        free(a2);
        free(l2);
        if (len < 0) {
            call->rt->cmd_s = NULL;
            ae_call_free(call);
            return NULL;
        }
        call->rt->len_s = (size_t)len;
    }
    if (ac->cluster && nkeys > 0) {
        call->rt->slot = rlk_key_slot(keys[0], strlen(keys[0]));
        for (int i = 1; i < nkeys; i++)
            if (rlk_key_slot(keys[i], strlen(keys[i])) != call->rt->slot) {
                char msg[AE_ERRSTR_MAX];

                snprintf(msg, sizeof msg, "%s: its keys hash to different cluster slots ('%s', "
                         "'%s'): Redis would refuse it (CROSSSLOT); see the name rule in "
                         "docs/cluster.md", name, keys[0], keys[i]);
                call->rt->fail_rc = RLK_ERR_ARG;
                call->rt->last_err = strdup(msg);
                break;
            }
    }
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
    if (ac->cluster)
        call->rt->slot = rlk_cluster_command_slot(argc, argv, NULL);
    return ae_call_submit(ac, call);
}

void rlk_ae_call_forget(rlk_ae_call *call)
{
    if (call)
        call->forgotten = 1;
}

/* An internal command written now on n (set-up, fence), ahead of user calls. */
static int ae_internal(rlk_async *ac, ae_node *n, int what, int setup_i, int argc,
                       const char **argv, const size_t *lens)
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
    if (ae_call_write(ac, n, call) != 0) {
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

/* n's command connection is up: the calls that waited are written. */
static void ae_cmd_up(rlk_async *ac, ae_node *n)
{
    rlk_ae_call *call;

    n->cmd.state = AE_UP;
    n->cmd.fails = 0;
    while ((call = ae_callq_pop(&n->unsent)))
        if (ae_call_write(ac, n, call) != 0)
            ae_call_end(ac, call, RLK_ERR_NOMEM, NULL, "out of memory", 0);
}

/* A NOSCRIPT reply: SCRIPT LOAD, then the call once more (behind the calls
 * already in flight). */
static int ae_noscript(rlk_async *ac, ae_node *n, rlk_ae_call *call)
{
    rlk_ae_call *load = ae_call_new(ac, AE_CALL_LOAD, NULL, NULL);

    if (!load)
        return -1;
    if (rlk_conn_append_reload(n->cmd.ctx, call->script, call->cmd, call->len) != 0) {
        free(load);
        return -1;
    }
    load->script = call->script;
    if (load->rt && call->rt)
        load->rt->written = call->rt->written = rlk_ae_now_ms();
    call->retried = 1;
    ae_callq_push(&n->inflight, load);
    ae_callq_push(&n->inflight, call);
    return 0;
}

/* ---------------------------------------------------------------- command replies */

/* One reply on n's command connection. */
static void ae_cmd_reply(rlk_async *ac, ae_node *n, redisReply *r)
{
    rlk_ae_call *call = ae_callq_pop(&n->inflight);

    if (!call)
        return;     /* nothing asked: ignored */
    switch (call->what) {
    case AE_CALL_SETUP:
        if (rlk_conn_check_setup_reply(ac->c, call->setup_i, r) != RLK_OK) {
            ae_call_free(call);
            ae_conn_drop(ac, &n->cmd, rlk_errstr(ac->c));
            return;
        }
        break;
    case AE_CALL_ID:
        if (r->type == REDIS_REPLY_INTEGER)
            n->cmd.id = r->integer;
        n->cmd.fence_id = 0;
        ae_cmd_up(ac, n);
        break;
    case AE_CALL_KILL:
    case AE_CALL_LOAD:
    case AE_CALL_ASKING:
        break;      /* a fence's, a load's or ASKING's answer: the call behind tells */
    default:
        if (call->script && rlk_conn_noscript_retry(r, 0, call->retried)) {
            if (ae_noscript(ac, n, call) == 0)
                return;
            ae_call_end(ac, call, RLK_ERR_NOMEM, NULL, "out of memory", 0);
            return;
        }
        if (r->type == REDIS_REPLY_ERROR && ac->c->url.is_sentinel &&
            (strncmp(r->str, "READONLY", 8) == 0 || strncmp(r->str, "MASTERDOWN", 10) == 0)) {
            /* A demoted master refused it (it did not run): sent again on the master the
             * sentinels name now, after this connection is dropped. */
            ae_callq_push_front(&n->unsent, call);
            ac->cmd_readonly = 1;
            ac->sn_refresh = 1;
            return;
        }
        if (r->type == REDIS_REPLY_ERROR && call->rt && !call->rt->pinned &&
            ae_route_refused(ac, n, call, r))
            return;
        if (r->type == REDIS_REPLY_ERROR) {
            int rc = ae_reply_error(ac, r, call->script ? call->script->name : "command");

            ae_call_end(ac, call, rc, NULL, r->str, 0);
        } else
            ae_call_end(ac, call, RLK_OK, r, NULL, 0);
        return;
    }
    ae_call_free(call);
}

/* ---------------------------------------------------------------- connections */

static void ae_conn_retry_fire(rlk_async *ac, void *arg)
{
    ae_conn *k = arg;

    k->retry = NULL;
    if (k->state != AE_DOWN)
        return;
    if (!ac->cluster)
        ae_conn_start(ac, k);
    else if (k->is_sub)
        ae_chans_up(ac);        /* opened again if a channel goes there */
    else if (k->node->unsent.head)
        ae_conn_start(ac, k);   /* else when a call goes there */
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

/* A pub/sub connection went down: its channels wait for it (or another). */
static void ae_chans_down(rlk_async *ac, ae_conn *k);

static const char *ae_node_addr(rlk_async *ac, const ae_node *n)
{
    return n->host ? n->addr : ac->c->addr;
}

static void ae_conn_drop(rlk_async *ac, ae_conn *k, const char *why)
{
    char msg[AE_ERRSTR_MAX];

    snprintf(msg, sizeof msg, "connection to %s lost: %s", ae_node_addr(ac, k->node),
             why ? why : "");
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
    if (k->is_sub) {
        if (ac->cluster && ac->nodes[ac->gsub] == k->node)
            ac->gsub = (ac->gsub + 1) % ac->nnodes;   /* global pub/sub: another node next */
        ae_chans_down(ac, k);
        if (ac->cluster)
            ae_route_refresh(ac, 0);
    } else
        ae_route_calls_fail(ac, k->node, RLK_ERR_IO, msg, 0);
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
        if (ae_internal(ac, k->node, AE_CALL_KILL, 0, 4, kv, NULL) != 0)
            goto nomem;
    }
    for (int i = 0; (argc = rlk_conn_setup_cmd(ac->c, i, argv, lens, db)) > 0; i++)
        if (ae_internal(ac, k->node, AE_CALL_SETUP, i, argc, argv, lens) != 0)
            goto nomem;
    {
        const char *iv[2] = {"CLIENT", "ID"};

        if (ae_internal(ac, k->node, AE_CALL_ID, 0, 2, iv, NULL) != 0)
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
    free(d->host);
    free(d);
}

static void *ae_dial_thread(void *arg)
{
    ae_dial *d = arg;
    rlk_client *c = d->cref->c;
    redisContext *ctx = NULL;
    char host[256];
    int port = c->url.port, rc = RLK_OK, abandoned;

    snprintf(host, sizeof host, "%s", d->host ? d->host : c->url.host ? c->url.host : "");
    if (d->host)
        port = d->port;
    else if (c->url.is_sentinel) {
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
    if (k->node->host) {
        d->port = k->node->port;
        if (!(d->host = strdup(k->node->host))) {
            close(d->sv[0]);
            close(d->sv[1]);
            pthread_mutex_destroy(&d->mu);
            free(d);
            return -1;
        }
    }
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
    if (k->node->host)
        ctx = redisConnectNonBlock(k->node->host, k->node->port);
    else if (rlk_transport_dial_nonblock(ac->c, &ctx) != RLK_OK)
        ctx = NULL;
    if (!ctx) {
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
    long long now = rlk_ae_now_ms(), tmo = ac->c->command_timeout_ms;

    (void)arg;
    ac->sweep = NULL;
    for (int i = 0; i < ac->nnodes && !ac->closing; i++) {
        ae_node *n = ac->nodes[i];
        ae_conn *ks[2] = {&n->cmd, &n->sub};

        for (int j = 0; j < 2 && !ac->closing; j++) {
            ae_conn *k = ks[j];

            if ((k->state == AE_CONNECTING || k->state == AE_SETUP) &&
                now - k->since > ac->c->connect_timeout_ms)
                ae_conn_drop(ac, k, "connect timed out");
        }
        if (ac->closing)
            return;
        /* A redirected call was made earlier than it was written: the reply's
         * time counts from the write on a cluster. */
        if (n->inflight.head &&
            now - (n->inflight.head->rt ? n->inflight.head->rt->written : n->inflight.head->issued) >
                tmo)
            ae_conn_drop(ac, &n->cmd, "no reply within the command timeout");
        while (!ac->closing && n->cmd.state != AE_UP && n->unsent.head &&
               now - n->unsent.head->issued > tmo) {
            rlk_ae_call *call = ae_callq_pop(&n->unsent);
            char msg[AE_ERRSTR_MAX];

            snprintf(msg, sizeof msg, "no connection to %s within the command timeout (%d ms)",
                     ae_node_addr(ac, n), ac->c->command_timeout_ms);
            ae_call_end(ac, call, RLK_ERR_IO, NULL, msg, 0);
        }
    }
    /* Parked calls (a cluster with no map, or "not now" answers) end at the timeout. */
    if (!ac->closing && ac->parked.head) {
        ae_callq q = ac->parked;
        rlk_ae_call *call;

        memset(&ac->parked, 0, sizeof ac->parked);
        while ((call = ae_callq_pop(&q))) {
            char msg[AE_ERRSTR_MAX];

            if (ac->closing || call->rt->fail_rc || now - call->issued <= tmo) {
                ae_callq_push(&ac->parked, call);
                continue;
            }
            snprintf(msg, sizeof msg, "cluster: slot %d not served within the command timeout "
                     "(%d ms)%s%s", call->rt->slot, ac->c->command_timeout_ms,
                     call->rt->last_err ? ": " : " (no slot map)", call->rt->last_err ? call->rt->last_err : "");
            ae_call_end(ac, call, RLK_ERR_IO, NULL, msg, 0);
        }
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
        ae_conn *ks[2] = {&AE_N0(ac)->cmd, &AE_N0(ac)->sub};

        for (int i = 0; i < 2 && !ac->closing; i++)
            if (ks[i]->state != AE_DOWN && !ks[i]->dial && ks[i]->switches != n)
                ae_conn_drop(ac, ks[i], "the sentinels named a new master");
    }
    if (!ac->closing)
        ac->sn_watch = rlk_ae_timer_add(ac, 250, ae_sn_watch_fire, NULL);
}

static void ae_sweep_ensure(rlk_async *ac)
{
    int need = ac->parked.head != NULL;

    if (ac->sweep || ac->closing || !ac->attached)
        return;
    for (int i = 0; i < ac->nnodes && !need; i++) {
        ae_node *n = ac->nodes[i];

        need = n->inflight.head || n->unsent.head || n->cmd.state == AE_CONNECTING ||
               n->cmd.state == AE_SETUP || n->sub.state == AE_CONNECTING ||
               n->sub.state == AE_SETUP;
    }
    if (need)
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

    if (!ch->outstanding && !ch->live && ch->last_sent != 1)
        ch->conn = NULL;
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

/* ---- the queue of a pub/sub connection's commands awaiting their answer */

static int ae_sq_push(ae_conn *k, ae_chan *ch, int sub)
{
    struct ae_sq *e;

    if (k->sq_n == k->sq_cap) {
        size_t cap = k->sq_cap ? k->sq_cap * 2 : 16;
        struct ae_sq *q = malloc(cap * sizeof *q);

        if (!q)
            return -1;
        for (size_t i = 0; i < k->sq_n; i++)
            q[i] = k->sq[(k->sq_head + i) % k->sq_cap];
        free(k->sq);
        k->sq = q;
        k->sq_cap = cap;
        k->sq_head = 0;
    }
    e = &k->sq[(k->sq_head + k->sq_n) % k->sq_cap];
    e->name = NULL;
    e->ch = ch;
    e->sub = sub;
    k->sq_n++;
    return 0;
}

static struct ae_sq *ae_sq_peek(ae_conn *k)
{
    return k->sq_n ? &k->sq[k->sq_head] : NULL;
}

/* 1 when e is the command of channel name, SUBSCRIBE (sub 1) or UNSUBSCRIBE. */
static int ae_sq_is(const struct ae_sq *e, const char *name, int sub)
{
    const char *n = e ? (e->ch ? e->ch->name : e->name) : NULL;

    return n && e->sub == sub && strcmp(n, name) == 0;
}

static void ae_sq_pop(ae_conn *k)
{
    if (!k->sq_n)
        return;
    free(k->sq[k->sq_head].name);
    k->sq_head = (k->sq_head + 1) % k->sq_cap;
    k->sq_n--;
}

static void ae_sq_clear(ae_conn *k)
{
    while (k->sq_n)
        ae_sq_pop(k);
    free(k->sq);
    k->sq = NULL;
    k->sq_cap = k->sq_head = 0;
}

/* ch's answers still to come on its connection will be dropped: ch leaves it. */
static void ae_chan_detach(ae_chan *ch)
{
    ae_conn *k = ch->conn;

    for (size_t i = 0; k && i < k->sq_n; i++) {
        struct ae_sq *e = &k->sq[(k->sq_head + i) % k->sq_cap];

        if (e->ch == ch) {
            e->ch = NULL;
            e->name = strdup(ch->name);     /* NULL: matches nothing, still dropped in order */
        }
    }
    ch->outstanding = 0;
    ch->live = 0;
    ch->last_sent = 0;
    ch->conn = NULL;
}

static void ae_sub_send(rlk_async *ac, ae_conn *k, const char *cmd, ae_chan *ch, int sub)
{
    char c2[16];
    const char *argv[2] = {cmd, ch->name};

    if (ac->pubsub == RLK_PUBSUB_SHARDED) {
        snprintf(c2, sizeof c2, "S%s", cmd);
        argv[0] = c2;
    }
    if ((ac->cluster && ae_sq_push(k, ch, sub) != 0) ||
        redisAppendCommandArgv(k->ctx, 2, argv, NULL) != REDIS_OK)
        ae_conn_drop(ac, k, "out of memory");
    else if (!ac->depth)
        ae_flush(ac, k);
}

/* The connection ch's subscription goes to: the one server's; on a cluster
 * the master of its slot (sharded) or the one node chosen (global). NULL
 * while the mode or the map is not known. */
static ae_conn *ae_chan_route(rlk_async *ac, ae_chan *ch)
{
    ae_node *n;
    int slot;

    if (!ac->cluster)
        return &AE_N0(ac)->sub;
    if (!ac->pubsub || !ac->map.loaded)
        return NULL;
    if (ac->pubsub == RLK_PUBSUB_GLOBAL)
        return &ac->nodes[ac->gsub % ac->nnodes]->sub;
    slot = rlk_key_slot(ch->name, strlen(ch->name));
    n = ae_route_slot_node(ac, slot);
    return n ? &n->sub : NULL;
}

/* Sends SUBSCRIBE for ch when its connection is up (else it goes out when it is). */
static void ae_chan_want(rlk_async *ac, ae_chan *ch)
{
    ae_conn *k;

    if (ch->last_sent == 1 && ch->conn)
        return;
    if (!(k = ae_chan_route(ac, ch))) {
        ae_route_refresh(ac, 0);
        return;
    }
    if (ch->conn && ch->conn != k)
        ae_chan_detach(ch);     /* an UNSUBSCRIBE's answer elsewhere: dropped */
    if (k->state == AE_UP) {
        ch->conn = k;
        ch->last_sent = 1;
        ch->outstanding++;
        ae_sub_send(ac, k, "SUBSCRIBE", ch, 1);
    } else if (k->state == AE_DOWN && !k->retry && ac->attached)
        ae_conn_start(ac, k);
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
    if (ch->last_sent == 1 && ch->conn && ch->conn->state == AE_UP) {
        ch->last_sent = 0;
        ch->outstanding++;
        ae_sub_send(ac, ch->conn, "UNSUBSCRIBE", ch, 0);
    } else if (!ch->conn || ch->conn->state != AE_UP)
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

/* The channels of pub/sub connection k: not subscribed any more. */
static void ae_chans_down(rlk_async *ac, ae_conn *k)
{
    for (size_t i = 0; i < ac->nbuckets; i++) {
        ae_chan *ch = ac->buckets[i], *next;

        for (; ch; ch = next) {
            next = ch->bnext;
            if (ch->conn != k)
                continue;
            ch->live = 0;
            ch->outstanding = 0;
            ch->last_sent = 0;
            ch->conn = NULL;
            ae_chan_maybe_free(ac, ch);
        }
    }
    ae_sq_clear(k);
    /* Subscribed again (elsewhere on a cluster, once the map says where). */
    if (ac->cluster)
        ae_chans_up(ac);
}

/* A pub/sub connection is up (or the map or mode changed): every channel
 * someone listens to, subscribed where it goes. */
static void ae_chans_up(rlk_async *ac)
{
    for (size_t i = 0; i < ac->nbuckets; i++)
        for (ae_chan *ch = ac->buckets[i]; ch; ch = ch->bnext)
            if (ch->listeners)
                ae_chan_want(ac, ch);
}

/* The map changed: a channel subscribed where it does not go any more
 * leaves that connection (UNSUBSCRIBE there, its answer dropped) and is
 * subscribed on its slot's master; its listeners hear fn(NULL) then. */
void ae_chans_reroute(rlk_async *ac)
{
    if (!ac->cluster || ac->closing)
        return;
    for (size_t i = 0; i < ac->nbuckets; i++) {
        ae_chan *ch = ac->buckets[i], *next;

        for (; ch; ch = next) {
            ae_conn *k = ae_chan_route(ac, ch), *old = ch->conn;

            next = ch->bnext;
            if (!k || !old || old == k)
                continue;
            if (ch->last_sent == 1 && old->state == AE_UP) {
                ae_chan_detach(ch);
                ch->conn = old;
                ch->outstanding = 1;    /* for the send; detached right after */
                ae_sub_send(ac, old, "UNSUBSCRIBE", ch, 0);
                if (ac->closing)
                    return;
            }
            ae_chan_detach(ch);
            if (ch->listeners)
                ae_chan_want(ac, ch);
            else
                ae_chan_maybe_free(ac, ch);
        }
    }
    ae_chans_up(ac);
}

/* A pub/sub connection's channel was taken away by the server (its slot
 * moved: a sunsubscribe it pushed, or -MOVED to SSUBSCRIBE): the map is
 * asked again, and the channel subscribed where it goes now. */
static void ae_chan_moved(rlk_async *ac, ae_chan *ch)
{
    ae_chan_detach(ch);
    ae_route_refresh(ac, 0);
    if (ch->listeners)
        ae_chan_want(ac, ch);
    else
        ae_chan_maybe_free(ac, ch);
}

/* One reply on pub/sub connection k. */
static void ae_sub_reply(rlk_async *ac, ae_conn *k, redisReply *r)
{
    ae_chan *ch;
    const char *kind;
    struct ae_sq *head;

    if (k->setup_left > 0) {
        int i = 0;

        /* The set-up replies come in order: AUTH then SELECT (as many as sent). */
        for (int n = 0; rlk_conn_setup_cmd(ac->c, n, (const char *[3]){0}, (size_t[3]){0},
                                           (char[16]){0}) > 0; n++)
            i++;
        if (rlk_conn_check_setup_reply(ac->c, i - k->setup_left, r) != RLK_OK) {
            ae_conn_drop(ac, k, rlk_errstr(ac->c));
            return;
        }
        if (--k->setup_left == 0) {
            k->state = AE_UP;
            k->fails = 0;
            ae_chans_up(ac);
        }
        return;
    }
    head = ae_sq_peek(k);
    if (r->type == REDIS_REPLY_ERROR && !ac->cluster)
        return;     /* one server: nothing to learn from it */
    if (r->type == REDIS_REPLY_ERROR) {
        /* The answer to the oldest command: a refusal of SUBSCRIBE / SSUBSCRIBE. */
        char host[RLK_SLOTMAP_HOST_MAX];
        int slot, port;

        ch = head ? head->ch : NULL;
        if (head)
            ae_sq_pop(k);
        if (!ch)
            return;
        ch->outstanding--;
        if (ac->cluster && rlk_slotmap_redirect(r->str, &slot, host, sizeof host, &port) ==
                               RLK_SLOTMAP_MOVED && host[0]) {
            (void)rlk_slotmap_move(&ac->map, slot, rlk_slotmap_node(&ac->map, host, port));
            ae_chan_moved(ac, ch);
            ae_chans_reroute(ac);
            return;
        }
        /* Anything else ("not now"): the connection is opened again after a backoff. */
        ae_conn_drop(ac, k, r->str);
        return;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 || r->element[0]->type != REDIS_REPLY_STRING ||
        r->element[1]->type != REDIS_REPLY_STRING)
        return;
    kind = r->element[0]->str;
    if (kind[0] == 's' && kind[1] != 'u')
        kind++;     /* smessage, ssubscribe, sunsubscribe: as their global forms */
    else if (strcmp(kind, "sunsubscribe") == 0)
        kind++;
    ch = ae_chan_find(ac, r->element[1]->str);
    if (strcmp(kind, "message") == 0) {
        if (ch && ch->conn == k && ch->live && r->element[2]->type == REDIS_REPLY_STRING)
            ae_chan_dispatch(ac, ch, r->element[2]->str, r->element[2]->len);
        return;     /* the dispatch settles the channel */
    }
    if (strcmp(kind, "subscribe") == 0) {
        if (ac->cluster) {
            ae_chan *mine = ae_sq_is(head, r->element[1]->str, 1) ? head->ch : NULL;

            if (ae_sq_is(head, r->element[1]->str, 1))
                ae_sq_pop(k);
            if (!mine)
                return;     /* an answer dropped (the channel left this connection) */
            ch = mine;
        } else if (!ch || ch->conn != k)
            return;
        ch->outstanding--;
        ch->live = 1;
        if (ch->last_sent == 1 && !ch->outstanding) {
            ae_chan_dispatch(ac, ch, NULL, 0);
            return;
        }
    } else if (strcmp(kind, "unsubscribe") == 0) {
        if (!ac->cluster) {
            if (!ch || ch->conn != k)
                return;
            ch->outstanding--;
            ch->live = 0;
        } else if (ae_sq_is(head, r->element[1]->str, 0)) {
            ae_chan *mine = head->ch;

            ae_sq_pop(k);
            if (!mine)
                return;
            ch = mine;
            ch->outstanding--;
            ch->live = 0;
        } else {
            /* Pushed by the server: the channel's slot went to another node. */
            if (ch && ch->conn == k)
                ae_chan_moved(ac, ch);
            return;
        }
    } else
        return;
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
            ae_sub_reply(ac, k, reply);
        else
            ae_cmd_reply(ac, k->node, reply);
        freeReplyObject(reply);
        if (ac->closing || !k->ctx)
            return;
    }
    if (rc != REDIS_OK)
        ae_conn_drop(ac, k, why[0] ? why : "connection closed");
    else if (!k->is_sub && ac->cmd_readonly) {
        ac->cmd_readonly = 0;
        ae_conn_drop(ac, k, "READONLY: the master was demoted, asking the sentinels");
        if (!ac->closing && k->node->sub.state != AE_DOWN)
            ae_conn_drop(ac, &k->node->sub, "the master was demoted");
    }
}

void rlk_async_handle_io(rlk_async *ac, int fd, int events)
{
    ae_conn *k = NULL, *d = NULL;

    if (!ac || ac->closing)
        return;
    for (int i = 0; i < ac->nnodes && !k && !d; i++) {
        ae_node *n = ac->nodes[i];

        k = n->cmd.ctx && n->cmd.fd == fd ? &n->cmd : n->sub.ctx && n->sub.fd == fd ? &n->sub : NULL;
        d = n->cmd.dial && n->cmd.dial->sv[0] == fd ? &n->cmd
            : n->sub.dial && n->sub.dial->sv[0] == fd ? &n->sub : NULL;
    }
    if (!k) {
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

/* ---------------------------------------------------------------- the client */

rlk_async *rlk_async_new(const rlk_options *opts)
{
    rlk_async *ac = calloc(1, sizeof *ac);

    if (!ac)
        return NULL;
    ac->armed = -2;
    ac->c = rlk_client_prepare(opts);
    ac->cref = calloc(1, sizeof *ac->cref);
    ac->nodes[0] = calloc(1, sizeof *ac->nodes[0]);
    if (!ac->c || !ac->cref || !ac->nodes[0]) {
        rlk_free(ac->c);
        free(ac->cref);
        free(ac->nodes[0]);
        free(ac);
        return NULL;
    }
    ac->nnodes = 1;
    AE_N0(ac)->cmd.fd = AE_N0(ac)->sub.fd = -1;
    AE_N0(ac)->cmd.node = AE_N0(ac)->sub.node = AE_N0(ac);
    AE_N0(ac)->sub.is_sub = 1;
    pthread_mutex_init(&ac->cref->mu, NULL);
    ac->cref->refs = 1;
    ac->cref->c = ac->c;
    if (opts && opts->sentinel_password)
        ac->cref->sentinel_password = strdup(opts->sentinel_password);
    if (ac->c->fatal) {
        ac->fatal = ac->c->fatal;
        snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "%s", ac->c->fatal_msg);
    } else if (ac->c->url.is_cluster) {
        /* The seeds are the first nodes; the map (CLUSTER SLOTS) names the masters. */
        free(ac->nodes[0]);
        ac->nodes[0] = NULL;
        ac->nnodes = 0;
        if (ae_route_setup(ac) != RLK_OK) {
            ac->fatal = RLK_ERR_NOMEM;
            snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "out of memory");
        }
        if (!ac->nnodes && !ac->fatal) {
            ac->fatal = RLK_ERR_URL;
            snprintf(ac->fatal_msg, sizeof ac->fatal_msg, "redis+cluster://: no seed node");
        }
    }
    if (ac->c->pubsub_opt != RLK_PUBSUB_AUTO)
        ac->pubsub = ac->c->pubsub_opt;
    else if (!ac->cluster)
        ac->pubsub = RLK_PUBSUB_GLOBAL;     /* one server (or sentinel): as the blocking client */
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
    if (!ac->fatal && !ac->cluster)
        ae_conn_start(ac, &AE_N0(ac)->cmd);
    if (!ac->fatal && ac->cluster)
        ae_route_refresh(ac, 1);
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
    for (int i = 0; i < ac->nnodes; i++) {
        ae_node *n = ac->nodes[i];

        if (n->cmd.ctx)
            redisFree(n->cmd.ctx);
        if (n->sub.ctx)
            redisFree(n->sub.ctx);
        ae_sq_clear(&n->sub);
        free(n->host);
        free(n);
    }
    rlk_slotmap_free(&ac->map);
    ae_cref_put(ac->cref);     /* the client goes with the last dial thread */
    free(ac);
}

void rlk_async_free(rlk_async *ac)
{
    if (!ac || ac->closing)
        return;
    ac->depth++;
    ac->closing = 1;
    /* Calls first: their kinds complete their requests with the error. */
    for (int i = 0; i < ac->nnodes; i++)
        ae_route_calls_fail(ac, ac->nodes[i], RLK_ERR_CLOSED, "the async client is being freed", 1);
    {
        rlk_ae_call *call;

        while ((call = ae_callq_pop(&ac->parked)))
            ae_call_end(ac, call, RLK_ERR_CLOSED, NULL, "the async client is being freed", 0);
    }
    /* Every request ends now, callbacks included (a request made by one of
     * them ends with RLK_ERR_CLOSED at once, and is delivered here too). */
    for (;;) {
        for (rlk_async_req *r = ac->reqs; r; r = r->next)
            rlk_ae_complete(r, RLK_ERR_CLOSED, 0, NULL, "the async client was freed");
        if (!ac->qhead)
            break;
        ae_deliver(ac);
    }
    rlk_ae_wd_free_all(ac);
    for (int i = 0; i < RLK_AE_SLOTS; i++)
        if (ac->kind_data[i] && ac->kind_destroy[i])
            ac->kind_destroy[i](ac->kind_data[i]);
    if (ac->attached) {
        for (int i = 0; i < ac->nnodes; i++) {
            ae_node *n = ac->nodes[i];

            ae_dial_abandon(ac, &n->cmd);
            ae_dial_abandon(ac, &n->sub);
            if (n->cmd.handle)
                ac->hooks.detach(ac->hooks.data, n->cmd.handle);
            if (n->sub.handle)
                ac->hooks.detach(ac->hooks.data, n->sub.handle);
            n->cmd.handle = n->sub.handle = NULL;
        }
        ac->hooks.set_timer(ac->hooks.data, -1);
        ac->hooks.cleanup(ac->hooks.data);
    }
    ac->depth--;
    if (ac->depth)
        ac->destroy_pending = 1;
    else
        ae_destroy(ac);
}
