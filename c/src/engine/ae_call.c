/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_call.c - the async engine's requests and calls, on the loop's thread:
 * a request's life and its deferred completion (delivered when the
 * handlers return), a call's life on a node's command connection (its
 * queues, its form once the call mode is known, the token scripts as the
 * server's own commands, the pipelined write, the set-up calls of a new
 * connection), and the command connection's replies (NOSCRIPT: load, SHA-1
 * checked, and retry; a cluster's refusals go to ae_route.c).
 * docs/async-internals.md.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client/cluster.h"
#include "client/conn.h"
#include "client/native.h"
#include "client/scripts.h"
#include "client/topo.h"
#include "client/transport.h"
#include "engine/metrics.h"
#include "engine/engine.h"
#include "engine/ae_state.h"
#include "engine/ae_call.h"
#include "engine/ae_route.h"
#include "engine/ae_timer.h"
/* The marker rlk_ae_publish_arg returns while a cluster's pub/sub mode is
 * not known yet: a script call that passes it is given the mode's form when
 * it is written (no call is written before the mode is known). */
static const char ae_pub_auto[] = "publish";

const char *rlk_ae_publish_arg(rlk_async *ac)
{
    if (ac->pubsub == RLK_PUBSUB_SHARDED)
        return "spublish";
    return ac->pubsub == RLK_PUBSUB_GLOBAL ? "publish" : ae_pub_auto;
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
    AE_DLIST_PUSH(ac->reqs, r);
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

void rlk_ae_req_set_privdata(rlk_async_req *r, void *privdata)
{
    r->privdata = privdata;
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
    AE_LIST_APPEND(ac->qhead, ac->qtail, r, qnext);
    if (!ac->depth)
        ae_timer_arm(ac);     /* delivered on the loop's next turn */
}

void ae_deliver(rlk_async *ac)
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
        if (r->free_fn)
            r->free_fn(r, r->state);
        AE_DLIST_UNLINK(ac->reqs, r);
        ac->npending--;
        free(r->mname);
        free(r->id);
        free(r->errstr);
        free(r);
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
        ae_timer_arm(ac);
}

/* ---------------------------------------------------------------- calls */

/* A call's command: hiredis's formatter made a native one (redisFreeCommand),
 * rlk_conn_format_argv every other (free). */
static void ae_call_free_cmd(rlk_ae_call *call)
{
    if (call->native)
        redisFreeCommand(call->cmd);
    else
        free(call->cmd);
    call->cmd = NULL;
}

static void ae_call_free(rlk_ae_call *call)
{
    ae_call_free_cmd(call);            /* (NULL is nothing) */
    if (call->rt) {
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

/* The form of the command the pub/sub mode asks for (known by now): a
 * sharded one's publish argument becomes "spublish" (the formatted
 * command's argument pub_at, "$7\r\npublish\r\n", with an "s" inserted).
 * 0, or -1 out of memory. */
static int ae_call_settle_form(rlk_async *ac, rlk_ae_call *call)
{
    char *p, *cmd;
    size_t at;

    if (!call->rt || !call->rt->pub_at || ac->pubsub != RLK_PUBSUB_SHARDED)
        return 0;
    p = strchr(call->cmd, '\n') + 1;       /* past "*<argc>\r\n": each "$<len>\r\n<arg>\r\n" */
    for (int i = 0; i < call->rt->pub_at; i++)
        p = strchr(p, '\n') + 1 + strtol(p + 1, NULL, 10) + 2;
    if (!(cmd = malloc(call->len + 2)))
        return -1;
    at = (size_t)(p - call->cmd);
    memcpy(cmd, call->cmd, at);
    memcpy(cmd + at, "$8\r\ns", 5);
    memcpy(cmd + at + 5, p + 4, call->len - at - 4);
    ae_call_free_cmd(call);
    call->cmd = cmd;
    call->len++;
    call->rt->pub_at = 0;
    return 0;
}

/* Appends the call's command to n's live connection and moves it in flight
 * (an ASK redirect's ASKING first). */
static int ae_call_write(rlk_async *ac, ae_node *n, rlk_ae_call *call)
{
    if (ae_call_settle_form(ac, call) != 0)
        return -1;
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
    call->refused = 0;
    ae_callq_push(&n->inflight, call);
    return 0;
}

rlk_ae_call *ae_call_new(rlk_async *ac, int what, rlk_ae_reply_fn fn, void *arg)
{
    rlk_ae_call *call = malloc(sizeof *call);

    if (!call)
        return NULL;
    *call = (rlk_ae_call){.what = what, .fn = fn, .arg = arg, .issued = rlk_ae_now_ms()};
    if (!ae_routed(ac))
        return call;
    /* A cluster's call carries its routing: any slot until its keys say, the first backoff. */
    if (!(call->rt = calloc(1, sizeof *call->rt))) {
        free(call);
        return NULL;
    }
    call->rt->slot = RLK_TOPO_ANY_SLOT;
    call->rt->backoff = AE_CL_BACKOFF_MIN_MS;
    return call;
}

/* The call's command from argv (lens may be NULL), in hiredis's bytes
 * (rlk_conn_format_argv): 0, or -1 (out of memory: call->cmd stays NULL). */
static int ae_call_argv(rlk_ae_call *call, int argc, const char **argv, const size_t *lens)
{
    size_t need = rlk_conn_format_argv(NULL, 0, argc, argv, lens);

    if (!(call->cmd = malloc(need)))
        return -1;
    rlk_conn_format_argv(call->cmd, need, argc, argv, lens);
    call->len = need;
    return 0;
}

/* Whether a call may be written on n's command connection now: it is up,
 * no call waits to go out before it, and the server has not closed it (a
 * server closes connections on its own: Sentinel demoting a master, CLIENT
 * KILL, an idle timeout, a restart; a call written then would be lost
 * although it never reached a server). Checked without blocking, as the
 * pool's rlk_conn_alive: an idle one (nothing in flight) that reads end of
 * file, an error or bytes nobody asked for is dropped here and opened again
 * (the sentinels asked again); one with calls in flight that reads end of
 * file is left to the loop, which drops it (those calls are lost). Either
 * way the call waits among the unsent ones for the next connection. */
int rlk_ae_no_peer_check;

static int ae_cmd_writable(rlk_async *ac, ae_node *n)
{
    ae_conn *k = &n->cmd;

    if (k->state != AE_UP || n->unsent.head)
        return 0;
    if (rlk_ae_no_peer_check || (ac->depth && k->peer_turn == ac->turn))
        return 1;       /* seen open in this turn of the loop: one check a turn, not a request */
    if (n->inflight.head ? rlk_transport_peer(k->ctx) != RLK_PEER_CLOSED
                         : rlk_conn_alive(k->ctx)) {
        k->peer_turn = ac->depth ? ac->turn : 0;
        return 1;
    }
    if (n->inflight.head)
        return 0;
    if (rlk_topo_resolves(ac->c))
        ac->sn_refresh = 1;         /* a demoted master closes its clients: ask the sentinels */
    ae_conn_drop(ac, k, "closed by the server");
    return 0;
}

/* Queues a call on node n: written now when its connection is up, else
 * later (the connection is opened). 0, or -1 (out of memory: not queued). */
int ae_node_submit(rlk_async *ac, ae_node *n, rlk_ae_call *call)
{
    if (ae_cmd_writable(ac, n)) {
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
    else if (ac->attached)
        ae_write_now(&n->cmd);      /* inside a handler: on the wire now, watched at its exit */
    return 0;
}

int ae_call_send(rlk_async *ac, ae_node *n, rlk_ae_call *call, int argc, const char **argv,
                 const size_t *lens, int now)
{
    if (ae_call_argv(call, argc, argv, lens) != 0 ||
        (now ? ae_call_write(ac, n, call) : ae_node_submit(ac, n, call)) != 0) {
        ae_call_free(call);
        return -1;
    }
    return 0;
}

/* Queues a user call: on the one server, or routed by its slot. One without its command (out
 * of memory) or that cannot be queued is freed: NULL. */
static rlk_ae_call *ae_call_submit(rlk_async *ac, rlk_ae_call *call)
{
    if (!call->cmd || (!ae_routed(ac) && ae_node_submit(ac, AE_N0(ac), call) != 0)) {
        ae_call_free(call);
        return NULL;
    }
    if (!ae_routed(ac))
        return call;
    if (call->rt->fail_rc)
        ae_route_park(ac, call, 0);   /* ended on the next turn, never from inside the call */
    else
        ae_route_call(ac, call);
    ae_sweep_ensure(ac);
    return call;
}

/* The token scripts on the server's own commands (client/native.h): while n's answer is not
 * known, COMMAND DOCS goes once per connection in front of the call that asks (that call goes
 * by script; the answer serves the next ones). */
static void ae_native_ask(rlk_async *ac, ae_node *n)
{
    rlk_ae_call *docs;

    if (!rlk_native_known(ac->c) && !n->cmd.docs_asked &&
        (docs = ae_call_new(ac, AE_CALL_DOCS, NULL, NULL)))
        n->cmd.docs_asked =
            ae_call_send(ac, n, docs, 5, rlk_native_docs_argv, rlk_native_docs_lens, 0) == 0;
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
    if (!arglens && !ae_routed(ac) && rlk_native_wanted(ac->c, s)) {
        if ((len = rlk_native_format(ac->c, s, nkeys, keys, nargs, args, &call->cmd,
                                     &call->native)) >= 0) {
            call->native++;
            call->len = (size_t)len;
            return ae_call_submit(ac, call);
        }
        ae_native_ask(ac, AE_N0(ac));
    }
    len = rlk_conn_format_script(ac->c, s, nkeys, keys, NULL, nargs, args, arglens, NULL, 0,
                                 &call->cmd);
    if (len < 0) {
        ae_call_free(call);
        return NULL;
    }
    call->len = (size_t)len;
    for (int i = 0; i < nargs && call->rt && !call->rt->pub_at; i++)
        if (args[i] == ae_pub_auto)
            call->rt->pub_at = 3 + nkeys + i;   /* after EVALSHA/FCALL, its sha or name, numkeys */
    /* Keys in several slots: refused before any call, with the blocking call's check and
     * message (the topology's script_slot, client/cluster.c). */
    if (ae_routed(ac) && (call->rt->slot = ac->c->topo->script_slot(ac->c, name, nkeys, keys,
                                                                    NULL)) == RLK_TOPO_BAD_SLOT) {
        call->rt->fail_rc = RLK_ERR_ARG;
        call->rt->last_err = strdup(rlk_errstr(ac->c));
    }
    return ae_call_submit(ac, call);
}

rlk_ae_call *rlk_ae_command(rlk_async *ac, int argc, const char *const *argv, rlk_ae_reply_fn fn,
                            void *arg)
{
    rlk_ae_call *call;

    if (ac->closing || !(call = ae_call_new(ac, AE_CALL_USER, fn, arg)))
        return NULL;
    (void)ae_call_argv(call, argc, (const char **)argv, NULL);    /* none: freed by the submit */
    if (ae_routed(ac))
        call->rt->slot = rlk_cluster_command_slot(argc, argv, NULL);
    return ae_call_submit(ac, call);
}

void rlk_ae_call_forget(rlk_ae_call *call)
{
    if (call)
        call->forgotten = 1;
}

int ae_internal(rlk_async *ac, ae_node *n, int what, int setup_i, int argc, const char **argv,
                const size_t *lens)
{
    rlk_ae_call *call = ae_call_new(ac, what, NULL, NULL);

    if (!call)
        return -1;
    call->setup_i = setup_i;
    return ae_call_send(ac, n, call, argc, argv, lens, 1);
}

void ae_cmd_up(rlk_async *ac, ae_node *n)
{
    rlk_ae_call *call;

    ac->conn_err[0] = '\0';        /* (only the one server's is ever set) */
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
        ae_call_free(load);     /* its routing too, on a cluster */
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

void ae_cmd_reply(rlk_async *ac, ae_node *n, redisReply *r)
{
    rlk_ae_call *call = ae_callq_pop(&n->inflight);
    redisReply conv;

    if (!call)
        return;     /* nothing asked: ignored */
    switch (call->what) {
    case AE_CALL_SETUP:
        if (rlk_conn_check_setup_reply(ac->c, n->cmd.ctx, call->setup_i, r) != RLK_OK) {
            ae_call_free(call);
            ae_conn_drop(ac, &n->cmd, rlk_errstr(ac->c));
            return;
        }
        break;
    case AE_CALL_ID:
        if (r->type == REDIS_REPLY_INTEGER)
            n->cmd.id = r->integer;
        n->cmd.fence_id = 0;
        ae_conn_up(ac, &n->cmd);
        break;
    case AE_CALL_LOAD: {
        /* The load must give the build's SHA-1 (conn.h's check): else the call sent again
         * behind it (which then cannot run) ends with the load's error now. */
        rlk_ae_call *again = n->inflight.head;
        int rc = rlk_conn_check_load_reply(ac->c, call->script, r);

        if (rc != RLK_OK && again && again->what == AE_CALL_USER && again->retried &&
            !again->forgotten) {
            if (again->fn)
                again->fn(ac, rc, NULL, rlk_errstr(ac->c), 0, again->arg);
            again->forgotten = 1;   /* its reply (NOSCRIPT) is read and dropped */
        }
        break;
    }
    case AE_CALL_KILL:
    case AE_CALL_ASKING:
        break;      /* a fence's or ASKING's answer: the call behind tells */
    case AE_CALL_DOCS:
        rlk_native_store_docs(ac->c, r);
        break;
    default:
        if (call->native)
            r = rlk_native_reply(call->native - 1, r, &conv);
        if (call->script && !call->native && rlk_conn_noscript_retry(r, 0, call->retried)) {
            if (ae_noscript(ac, n, call) == 0)
                return;
            ae_call_end(ac, call, RLK_ERR_NOMEM, NULL, "out of memory", 0);
            return;
        }
        if (r->type == REDIS_REPLY_ERROR && rlk_topo_resolves(ac->c) &&
            (strncmp(r->str, "READONLY", 8) == 0 || strncmp(r->str, "MASTERDOWN", 10) == 0)) {
            /* A demoted master refused it (it did not run): sent again on the master the
             * sentinels name now, after this connection is dropped; before the calls never
             * written, after those refused before it: in the order they were sent. */
            rlk_ae_call **at = &n->unsent.head;

            while (*at && (*at)->refused)
                at = &(*at)->next;
            if (!(call->next = *at))
                n->unsent.tail = call;
            *at = call;
            call->refused = 1;
            ac->cmd_readonly = 1;
            ac->sn_refresh = 1;
            return;
        }
        if (r->type == REDIS_REPLY_ERROR && call->rt && !call->rt->pinned &&
            ae_route_refused(ac, n, call, r))
            return;
        if (r->type == REDIS_REPLY_ERROR) {     /* classified as the blocking calls do */
            int rc = rlk_set_reply_error(ac->c, r, call->script ? call->script->name : "command",
                                         RLK_ERR_SCRIPT);

            /* A refused password (NOAUTH, WRONGPASS): the client's message, which says where
             * the password comes from (client/error.c), as the blocking calls report it. */
            ae_call_end(ac, call, rc, NULL, rc == RLK_ERR_AUTH ? rlk_errstr(ac->c) : r->str, 0);
        } else
            ae_call_end(ac, call, RLK_OK, r, NULL, 0);
        return;
    }
    ae_call_free(call);
}
