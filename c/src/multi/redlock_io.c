/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock_io.c - parallel script calls on several servers (see redlock_io.h):
 * one pool connection per server in non-blocking mode, requests written
 * before any reply is awaited, replies read as they come with poll().
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/native.h"
#include "client/pool.h"
#include "client/scripts.h"
#include "client/sigpipe.h"
#include "client/topo.h"
#include "client/transport.h"
#include "client/url.h"
#include "multi/redlock_io.h"

/* ---------------------------------------------------------------- small helpers */

static void redlock_req_fail(redlock_req *req, int rc, const char *msg)
{
    if (!req || req->done)
        return;
    req->done = 1;
    req->rc = rc;
    snprintf(req->err, sizeof req->err, "%s", msg);
}

void redlock_req_clear(redlock_req *req)
{
    freeReplyObject(req->reply);
    memset(req, 0, sizeof *req);
}

static void redlock_io_dials_end(redlock_io *io, int late);

static redisContext *redlock_ctx(const redlock_conn *k)
{
    return k->slot ? k->slot->ctx : NULL;
}

/* 1 when k's connection is in non-blocking mode: checked out by the open redlock_io. */
static int redlock_conn_nonblocking(const redlock_conn *k)
{
    const redisContext *ctx = redlock_ctx(k);

    return ctx && !(ctx->flags & REDIS_BLOCK);
}

static int redlock_set_nonblocking(redisContext *ctx, int on)
{
    int fl = fcntl(ctx->fd, F_GETFL);

    if (fl < 0)
        return -1;
    fl = on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK;
    if (fcntl(ctx->fd, F_SETFL, fl) < 0)
        return -1;
    ctx->flags = on ? ctx->flags & ~REDIS_BLOCK : ctx->flags | REDIS_BLOCK;
    return 0;
}

/* Removes expected reply j (0: the oldest, its outcome already handled). */
static void redlock_expect_remove(redlock_conn *k, int j)
{
    redisFreeCommand(k->exp[j].cmd);
    memmove(&k->exp[j], &k->exp[j + 1], (size_t)(k->nexp - j - 1) * sizeof k->exp[0]);
    memset(&k->exp[k->nexp - 1], 0, sizeof k->exp[0]);
    k->nexp--;
}

static redlock_expect *redlock_expect_push(redlock_conn *k, int kind)
{
    redlock_expect *e;

    if (k->nexp >= REDLOCK_IO_MAX_EXPECT)
        return NULL;
    e = &k->exp[k->nexp++];
    memset(e, 0, sizeof *e);
    e->kind = kind;
    return e;
}

/* Fails every call k owes with rc/msg (not_sent: none was written, they
 * did not run) and forgets them. */
static void redlock_conn_fail_calls(redlock_conn *k, int rc, const char *msg, int not_sent)
{
    while (k->nexp > 0) {
        redlock_req_fail(k->exp[0].req, rc, msg);
        if (not_sent && k->exp[0].req)
            k->exp[0].req->not_sent = 1;
        redlock_expect_remove(k, 0);
    }
}

/* The connection is unusable: every call it owes fails with rc/msg, and it
 * is closed (the slot reconnects on its next use). */
static void redlock_conn_fail(redlock_conn *k, int rc, const char *msg)
{
    redlock_conn_fail_calls(k, rc, msg, 0);
    k->fresh = 0;
    if (k->slot)
        rlk_slot_drop(k->slot);
}

static void redlock_conn_fail_ctx(redlock_conn *k, const char *what)
{
    int rc = rlk_set_ctx_error(k->c, redlock_ctx(k), what);

    redlock_conn_fail(k, rc, rlk_errstr(k->c));
}

/* Appends a formatted command to k's output; 0, or -1 when the connection
 * was failed (what names it in the message). */
static int redlock_conn_append(redlock_conn *k, const char *cmd, size_t len, const char *what)
{
    if (redisAppendFormattedCommand(redlock_ctx(k), cmd, len) == REDIS_OK)
        return 0;
    redlock_conn_fail_ctx(k, what);
    return -1;
}

/* ---------------------------------------------------------------- open / close */

static int redlock_by_client(const void *a, const void *b)
{
    const redlock_conn *x = *(redlock_conn *const *)a, *y = *(redlock_conn *const *)b;

    return (x->c > y->c) - (x->c < y->c);
}

int redlock_io_open(redlock_io *io, rlk_client *const *clients, int n)
{
    redlock_conn **sorted;

    memset(io, 0, sizeof *io);
    io->wake[0] = io->wake[1] = -1;
    io->conns = calloc((size_t)n, sizeof *io->conns);
    sorted = calloc((size_t)n, sizeof *sorted);
    if (!io->conns || !sorted) {
        free(io->conns);
        free(sorted);
        io->conns = NULL;
        return RLK_ERR_NOMEM;
    }
    io->n = n;
    if (pipe2(io->wake, O_CLOEXEC | O_NONBLOCK) != 0)
        io->wake[0] = io->wake[1] = -1;     /* dials happen one after another */
    rlk_sigpipe_enter(&io->sigpipe);
    for (int i = 0; i < n; i++) {
        io->conns[i].c = clients[i];
        sorted[i] = &io->conns[i];
    }
    /* One global order of checkouts: two sessions never wait for each other's slots. */
    qsort(sorted, (size_t)n, sizeof *sorted, redlock_by_client);
    for (int i = 0; i < n; i++)
        if (!sorted[i]->c->fatal)
            sorted[i]->slot = rlk_pool_checkout(sorted[i]->c);
    free(sorted);
    return RLK_OK;
}

/* A connection made in this session joins the pool like one rlk_conn_open made. */
static int redlock_conn_make_blocking(redlock_conn *k)
{
    redisContext *ctx = redlock_ctx(k);

    if (redlock_set_nonblocking(ctx, 0) != 0)
        return -1;
    if (k->fresh) {
        if (redisSetTimeout(ctx, k->c->command_tv) != REDIS_OK)
            return -1;
        if (!k->c->url.is_unix)
            (void)redisEnableKeepAlive(ctx);
    }
    return 0;
}

static void redlock_conn_close(redlock_conn *k)
{
    redisContext *ctx = redlock_ctx(k);

    if (!k->slot)
        return;
    if (ctx) {
        int clean = k->nexp == 0 && !ctx->err && (!ctx->obuf || sdslen(ctx->obuf) == 0);

        if (!clean || (redlock_conn_nonblocking(k) && redlock_conn_make_blocking(k) != 0)) {
            /* Still owes replies (a server that did not answer in time): closing
             * it is the only way to keep the pool's request/reply order. What
             * was pipelined goes out first, so the server runs it in order. */
            int done = 0;

            if (!ctx->err && redlock_conn_nonblocking(k) && ctx->obuf && sdslen(ctx->obuf) > 0)
                (void)rlk_transport_write(ctx, &done);
            while (k->nexp > 0)
                redlock_expect_remove(k, 0);
            rlk_slot_drop(k->slot);
        }
    }
    rlk_pool_checkin(k->c, k->slot);
    k->slot = NULL;
}

void redlock_io_close(redlock_io *io)
{
    int opened = io->conns != NULL;

    redlock_io_dials_end(io, 1);
    for (int i = 0; i < io->n; i++)
        redlock_conn_close(&io->conns[i]);
    free(io->conns);
    if (io->wake[0] >= 0) {
        close(io->wake[0]);
        close(io->wake[1]);
    }
    if (opened)
        rlk_sigpipe_leave(&io->sigpipe, 1); /* once per round: always check */
    memset(io, 0, sizeof *io);
}

/* ---------------------------------------------------------------- connecting */

/* The set-up of a new connection (conn.h: AUTH, SELECT), pipelined in front
 * of the first call. */
static int redlock_conn_setup(redlock_conn *k)
{
    const char *argv[3];
    size_t lens[3];
    char db[16];
    int argc;

    for (int i = 0; (argc = rlk_conn_setup_cmd(k->c, i, argv, lens, db)) > 0; i++) {
        redlock_expect *e = redlock_expect_push(k, REDLOCK_EXP_SETUP);

        if (!e)
            return -1;
        e->setup = i;
        if (redisAppendCommandArgv(redlock_ctx(k), argc, argv, lens) != REDIS_OK)
            return -1;
    }
    return 0;
}

/* k's connection in non-blocking mode. RLK_OK, or RLK_ERR_IO (recorded). */
static int redlock_conn_nonblock(redlock_conn *k)
{
    if (!redlock_conn_nonblocking(k) && redlock_set_nonblocking(redlock_ctx(k), 1) != 0)
        return rlk_set_error(k->c, RLK_ERR_IO, "connection to %s: fcntl failed", k->c->addr);
    return RLK_OK;
}

/* A blocking connect (the master the sentinels name; a TLS handshake: AUTH,
 * SELECT and ROLE done) made the slot's context: non-blocking from here like
 * a pool connection. */
static int redlock_conn_dialled(redlock_conn *k)
{
    k->slot->identified = 0;
    return redlock_conn_nonblock(k);
}

/* 1 when k has a connection that serves: one it is using, or an idle one still open. */
static int redlock_conn_live(redlock_conn *k)
{
    redisContext *ctx = redlock_ctx(k);

    return ctx && (k->nexp > 0 || redlock_conn_nonblocking(k) || rlk_conn_usable(k->c, ctx));
}

static void *redlock_dial_main(void *arg)
{
    redlock_conn *k = arg;
    long long previous = rlk_time_limit_enter(k->dial_until);
    char byte = 1;

    k->dial_rc = rlk_conn_open(k->c, &k->slot->ctx);
    if (k->dial_rc != RLK_OK)
        snprintf(k->dial_err, sizeof k->dial_err, "%s", rlk_errstr(k->c));
    rlk_time_limit_leave(previous);
    atomic_store(&k->dial_done, 1);
    if (k->wake_fd >= 0 && write(k->wake_fd, &byte, 1) < 0) {
        /* the pipe is full: the waiter wakes for another byte already there */
    }
    return NULL;
}

void redlock_io_dial(redlock_io *io, long long until_ns)
{
    for (int i = 0; i < io->n; i++) {
        redlock_conn *k = &io->conns[i];

        /* Only a server with no usable connection whose client dials only blocking. */
        if (k->dialling || !k->slot || k->c->fatal || !rlk_topo_dial_blocks(k->c) ||
            redlock_conn_live(k))
            continue;
        rlk_slot_drop(k->slot);
        k->dial_until = until_ns;
        k->wake_fd = io->wake[1];
        atomic_store(&k->dial_done, 0);
        if (io->wake[0] >= 0 && pthread_create(&k->dial_thread, NULL, redlock_dial_main, k) == 0)
            k->dialling = 1;
        /* else: redlock_io_send dials it itself, blocking */
    }
}

/* Joins k's dial thread (it ends by its dial_until) and writes the calls that
 * waited for it; late: the round is over, they are not sent. */
static void redlock_conn_dial_end(redlock_conn *k, int late)
{
    char msg[REDLOCK_IO_ERR_MAX];

    pthread_join(k->dial_thread, NULL);
    k->dialling = 0;
    if (k->dial_rc != RLK_OK) {
        redlock_conn_fail_calls(k, k->dial_rc, k->dial_err, 1);
        return;
    }
    if (redlock_conn_dialled(k) != RLK_OK) {
        redlock_conn_fail(k, RLK_ERR_IO, rlk_errstr(k->c));
        return;
    }
    if (late) {
        snprintf(msg, sizeof msg, "connect %.300s: made after the round's time ran out (not sent)",
                 k->c->addr);
        redlock_conn_fail_calls(k, RLK_ERR_TIMEOUT, msg, 1);
        return;
    }
    for (int j = 0; j < k->nexp; j++)
        if (redlock_conn_append(k, k->exp[j].cmd, k->exp[j].cmdlen, k->exp[j].script->name) != 0)
            return;
}

static int redlock_io_dialling(const redlock_io *io)
{
    for (int i = 0; i < io->n; i++)
        if (io->conns[i].dialling)
            return 1;
    return 0;
}

/* The dials that are done: their calls go out; late (the round is over):
 * every dial, joined, and their calls not sent. */
static void redlock_io_dials_end(redlock_io *io, int late)
{
    char buf[64];

    while (io->wake[0] >= 0 && read(io->wake[0], buf, sizeof buf) > 0)
        ;
    for (int i = 0; i < io->n; i++)
        if (io->conns[i].dialling && (late || atomic_load(&io->conns[i].dial_done)))
            redlock_conn_dial_end(&io->conns[i], late);
}

/* A live connection in non-blocking mode: the pool's, or a new one whose
 * connect completes in the poll loop. RLK_OK or an error (recorded). */
static int redlock_conn_ready(redlock_conn *k)
{
    rlk_client *c = k->c;
    redisContext *ctx;
    int rc;

    if (c->fatal)
        return rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
    if (redlock_conn_live(k))
        return redlock_conn_nonblock(k);
    rlk_slot_drop(k->slot);     /* closed by the server while idle, or broken */
    errno = 0;
    if (rlk_topo_dial_blocks(c))    /* the master the sentinels name; a TLS handshake: */
        return (rc = rlk_conn_open(c, &k->slot->ctx)) != RLK_OK ? rc : redlock_conn_dialled(k);
    if (rlk_transport_dial_nonblock(c, &ctx) != RLK_OK)   /* completed in the poll loop */
        return rlk_set_error(c, RLK_ERR_NOMEM, "connect %s: out of memory", c->addr);
    k->slot->ctx = ctx;
    if (ctx->err) {
        rc = rlk_set_ctx_error(c, ctx, "connect");
        rlk_slot_drop(k->slot);
        return rc;
    }
    k->fresh = 1;
    k->answered = 0;
    rlk_native_forget(c);       /* a new connection: ask again what the server has */
    if (redlock_conn_setup(k) != 0) {
        redlock_conn_fail(k, RLK_ERR_NOMEM, "connect: out of memory");
        return rlk_set_error(c, RLK_ERR_NOMEM, "connect %s: out of memory", c->addr);
    }
    return RLK_OK;
}

/* ---------------------------------------------------------------- sending */

void redlock_io_send(redlock_io *io, int i, const char *name,
                     int nkeys, const char *const *keys,
                     int nargs, const char *const *args, redlock_req *req)
{
    redlock_conn *k = &io->conns[i];
    const rlk_script_info *s;
    redlock_expect *e;
    char *cmd = NULL;
    int len, rc, native = -1;

    memset(req, 0, sizeof *req);
    rc = k->dialling ? RLK_OK : redlock_conn_ready(k);
    if (rc == RLK_OK && !(s = rlk_script_set_find(&k->c->scripts, name)))
        rc = rlk_set_error(k->c, RLK_ERR_NOSUCHSCRIPT, "no script %s in the set of %s", name,
                           k->c->addr);
    if (rc != RLK_OK) {
        redlock_req_fail(req, rc, rlk_errstr(k->c));
        return;
    }
    if (!k->dialling && !k->asked_docs && rlk_native_wanted(k->c, s) &&
        !rlk_native_known(k->c) && k->nexp + 2 <= REDLOCK_IO_MAX_EXPECT &&
        (len = rlk_native_format_detect(&cmd)) > 0) {
        /* In front of this call, which goes by script: the answer serves the next ones. */
        k->asked_docs = 1;
        (void)redlock_expect_push(k, REDLOCK_EXP_DOCS);
        rc = redlock_conn_append(k, cmd, (size_t)len, "command docs");
        redisFreeCommand(cmd);
        cmd = NULL;
        if (rc != 0) {          /* the connection is gone: this call was not written */
            redlock_req_fail(req, RLK_ERR_IO, rlk_errstr(k->c));
            req->not_sent = 1;
            return;
        }
    }
    if ((len = rlk_native_format(k->c, s, nkeys, keys, nargs, args, &cmd, &native)) < 0 &&
        (len = rlk_conn_format_script(k->c, s, nkeys, keys, NULL, nargs, args, NULL, &cmd)) >= 0)
        native = -1;
    if (len < 0 || !(e = redlock_expect_push(k, REDLOCK_EXP_CALL))) {
        redisFreeCommand(cmd);
        redlock_req_fail(req, RLK_ERR_NOMEM, "out of memory (or too many pipelined calls)");
        return;
    }
    e->req = req;
    e->script = s;
    e->cmd = cmd;
    e->cmdlen = (size_t)len;
    e->native = native + 1;
    if (!k->dialling)           /* else written once its connection is made */
        (void)redlock_conn_append(k, cmd, (size_t)len, name);
}

/* ---------------------------------------------------------------- replies */

/* NOSCRIPT: SCRIPT LOAD and the call again, pipelined, once (conn.h's rule
 * and form). 0 when queued. */
static int redlock_retry_noscript(redlock_conn *k, redlock_expect *e)
{
    redlock_expect *load, *call;

    if (k->nexp != 1)
        return -1;  /* only when nothing is pipelined behind it (the order of the calls) */
    if (rlk_conn_append_reload(redlock_ctx(k), e->script, e->cmd, e->cmdlen) != 0)
        return -1;
    load = redlock_expect_push(k, REDLOCK_EXP_LOAD);
    load->script = e->script;
    call = redlock_expect_push(k, REDLOCK_EXP_CALL);
    *call = *e;                 /* its request and command move */
    call->retried = 1;
    e->cmd = NULL;
    e->req = NULL;
    return 0;
}

static void redlock_on_call(redlock_conn *k, redlock_expect *e, redisReply *r)
{
    int rc;

    if (!e->req) {                              /* abandoned at a deadline */
        freeReplyObject(r);
        return;
    }
    if (e->native && !(r = rlk_native_reply(e->native - 1, r))) {
        redlock_req_fail(e->req, RLK_ERR_NOMEM, "out of memory");
        return;
    }
    if (e->load_rc != RLK_OK) {
        redlock_req_fail(e->req, e->load_rc, e->load_err);
    } else if (!e->native && rlk_conn_noscript_retry(r, 0, e->retried) &&   /* NOSCRIPT: only EVALSHA */
               redlock_retry_noscript(k, e) == 0) {
        /* the retry owns the request now */
    } else if (r->type == REDIS_REPLY_ERROR) {
        rc = rlk_set_reply_error(k->c, r, e->script->name, RLK_ERR_SCRIPT);
        redlock_req_fail(e->req, rc, rlk_errstr(k->c));
    } else {
        e->req->done = 1;
        e->req->rc = RLK_OK;
        e->req->reply = r;
        return;
    }
    freeReplyObject(r);
}

/* The SCRIPT LOAD reply must be the build's SHA-1; a failure goes to the
 * retried call behind it. */
static void redlock_on_load(redlock_conn *k, const redlock_expect *e, const redisReply *r)
{
    redlock_expect *next = k->nexp > 1 ? &k->exp[1] : NULL;
    int rc = rlk_conn_check_load_reply(k->c, e->script, r);

    if (rc != RLK_OK && next && next->kind == REDLOCK_EXP_CALL) {
        next->load_rc = rc;
        snprintf(next->load_err, sizeof next->load_err, "%s", rlk_errstr(k->c));
    }
}

/* Handles one reply; 0, or -1 when the connection was failed. */
static int redlock_on_reply(redlock_conn *k, redisReply *r)
{
    redlock_expect *e = &k->exp[0];
    int rc = RLK_OK;

    if (k->nexp == 0) {
        freeReplyObject(r);
        redlock_conn_fail(k, RLK_ERR_PROTOCOL, "a reply nobody asked for");
        return -1;
    }
    if (e->kind == REDLOCK_EXP_CALL) {
        redlock_on_call(k, e, r);       /* owns r */
    } else {
        if (e->kind == REDLOCK_EXP_SETUP)
            rc = rlk_conn_check_setup_reply(k->c, e->setup, r);
        else if (e->kind == REDLOCK_EXP_LOAD)
            redlock_on_load(k, e, r);
        else
            rlk_native_store_docs(k->c, r);
        freeReplyObject(r);
        if (rc != RLK_OK) {
            redlock_conn_fail(k, rc, rlk_errstr(k->c));
            return -1;
        }
    }
    redlock_expect_remove(k, 0);
    return 0;
}

/* The operation a failure on k is part of, for messages. */
static const char *redlock_conn_stage(const redlock_conn *k, const char *io)
{
    return k->fresh && !k->answered ? "connect" : io;
}

static void redlock_conn_write(redlock_conn *k)
{
    int done = 0;

    errno = 0;
    if (rlk_transport_write(redlock_ctx(k), &done) != REDIS_OK)
        redlock_conn_fail_ctx(k, redlock_conn_stage(k, "write"));
}

static void redlock_conn_read(redlock_conn *k)
{
    redisContext *ctx = redlock_ctx(k);
    void *r = NULL;

    errno = 0;
    if (rlk_transport_read(ctx) != REDIS_OK) {
        redlock_conn_fail_ctx(k, redlock_conn_stage(k, "read"));
        return;
    }
    for (;;) {
        r = NULL;
        if (redisGetReplyFromReader(ctx, &r) != REDIS_OK) {
            redlock_conn_fail_ctx(k, "read");
            return;
        }
        if (!r)
            return;
        k->answered = 1;
        if (redlock_on_reply(k, r) != 0)
            return;
    }
}

/* ---------------------------------------------------------------- the loop */

static int redlock_conn_owes(const redlock_conn *k)
{
    for (int j = 0; j < k->nexp; j++)
        if (k->exp[j].req && !k->exp[j].req->done)
            return 1;
    return 0;
}

static int redlock_conn_wants_write(const redlock_conn *k)
{
    const redisContext *ctx = redlock_ctx(k);

    /* Or a TLS session's read that needs the socket writable. */
    return ctx && ((ctx->obuf && sdslen(ctx->obuf) > 0) || (rlk_transport_want(ctx) & POLLOUT));
}

/* Fills pfd[i] with connection i's socket when it owes replies (else fd -1:
 * poll skips it); 1 when a call is owed on one. */
static int redlock_io_watch(redlock_io *io, struct pollfd *pfd)
{
    int owed = 0;

    for (int i = 0; i < io->n; i++) {
        redlock_conn *k = &io->conns[i];
        redisContext *ctx = redlock_ctx(k);
        int on = ctx && k->nexp > 0;

        owed |= on && redlock_conn_owes(k);
        pfd[i].fd = on ? ctx->fd : -1;
        pfd[i].events = POLLIN | (on && redlock_conn_wants_write(k) ? POLLOUT : 0);
        pfd[i].revents = 0;
    }
    return owed;
}

static void redlock_io_abandon(redlock_io *io, long long timeout_ms)
{
    char msg[REDLOCK_IO_ERR_MAX];

    for (int i = 0; i < io->n; i++) {
        redlock_conn *k = &io->conns[i];

        for (int j = 0; j < k->nexp; j++) {
            if (!k->exp[j].req || k->exp[j].req->done)
                continue;
            snprintf(msg, sizeof msg, "%.100s %.300s: no reply within %lld ms",
                     k->exp[j].script->name, k->c->addr, timeout_ms);
            redlock_req_fail(k->exp[j].req, RLK_ERR_TIMEOUT, msg);
            k->exp[j].req = NULL;
        }
    }
}

void redlock_io_wait(redlock_io *io, long long until_ns, long long timeout_ms)
{
    /* pfd[0]: the wake pipe while a dial runs (a thread's "done"); 1 + i: connection i. */
    struct pollfd *pfd = calloc((size_t)io->n + 1, sizeof *pfd);

    while (pfd) {
        int owed = redlock_io_watch(io, pfd + 1), ready, dialling = redlock_io_dialling(io);
        long long left = until_ns - rlk_clock_now_ns();

        if ((!owed && !dialling) || left <= 0)
            break;
        pfd[0].fd = dialling ? io->wake[0] : -1;
        pfd[0].events = POLLIN;
        pfd[0].revents = 0;
        ready = poll(pfd, (nfds_t)(owed ? io->n + 1 : 1),
                     (int)((left + RLK_NS_PER_MS - 1) / RLK_NS_PER_MS));
        if (ready < 0 && errno != EINTR)
            break;
        if (ready > 0 && pfd[0].revents) {
            redlock_io_dials_end(io, 0);
            continue;           /* new connections to watch */
        }
        for (int i = 0; ready > 0 && i < io->n; i++) {
            redlock_conn *k = &io->conns[i];
            short ev = pfd[1 + i].revents;

            if ((ev & POLLOUT) && redlock_conn_wants_write(k)) {
                int read_too = (rlk_transport_want(redlock_ctx(k)) & POLLOUT) != 0;

                redlock_conn_write(k);
                if (read_too && redlock_ctx(k))
                    redlock_conn_read(k);
            }
            if ((ev & (POLLIN | POLLHUP | POLLERR)) && redlock_ctx(k))
                redlock_conn_read(k);
        }
    }
    free(pfd);
    redlock_io_dials_end(io, 1);
    redlock_io_abandon(io, timeout_ms);
}
