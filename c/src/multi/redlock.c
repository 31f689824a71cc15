/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock.c - RedLock over N independent servers (rlk_redlock_*): the token
 * lock scripts on every server at once, quorum N/2 + 1, validity = lease -
 * elapsed - drift, release everywhere on failure, retry after a random
 * delay. docs/redlock.md describes the algorithm.
 *
 * The calls go out on one engine client per server (engine/engine.h),
 * borrowing the server's blocking client for its settings, made by the
 * handle's first operation and kept until rlk_redlock_free: the engine owns
 * the connection, its set-up, the NOSCRIPT rule and the native token
 * commands, and writes one connection's calls in order (a release queued
 * behind an unanswered acquire runs after it; a connection that broke is
 * fenced by CLIENT KILL ID before the next one's calls). The handle drives
 * the N engines with one poll() on the caller's thread, only during its
 * operations; a call unanswered at a round's deadline is forgotten.
 */
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "rlk_async_poll.h"
#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/random.h"
#include "client/scripts.h"
#include "client/sigpipe.h"
#include "client/topo.h"
#include "engine/engine.h"
#include "runtime/rt.h"
#include "runtime/wait.h"

#define REDLOCK_DEFAULT_SERVER_TIMEOUT_MS 50
#define REDLOCK_UNLOCK_TIMEOUT_MS 1000     /* at least this long for rlk_redlock_unlock's round */
#define REDLOCK_DEFAULT_RETRY_DELAY_MS 200
#define REDLOCK_DEFAULT_DRIFT_FACTOR 0.01
#define REDLOCK_DEFAULT_DRIFT_MS 2
#define REDLOCK_LEASE_MAX RLK_NUM_MAX /* client/scripts.h: the scripts' bound */
#define REDLOCK_TOKEN_BYTES 16
#define REDLOCK_MSG_MAX 512

/* The outcome of one call. */
typedef struct redlock_req {
    rlk_ae_call *call;                  /* sent, not answered; NULL: done */
    int rc;                             /* RLK_OK: the script's reply, type and integer */
    int type;
    long long integer;
    char err[REDLOCK_MSG_MAX];          /* when rc != RLK_OK */
} redlock_req;

typedef struct redlock_server {
    rlk_client *client;
    rlk_async *ae;                      /* op_mu: its engine, NULL before the first operation */
    rlk_async_poll loop;                /* op_mu: and its hooks, driven by redlock_turn */
    redlock_req req[2];                 /* op_mu: a round's call, then a release behind it */
    int status;                         /* st_mu: rlk code of its part in the last operation */
    char msg[REDLOCK_MSG_MAX];
} redlock_server;

struct rlk_redlock {
    pthread_mutex_t op_mu;              /* one operation at a time */
    pthread_mutex_t st_mu;              /* guards everything below */
    redlock_server *srv;
    int n, quorum;
    char *name;
    rlk_redlock_options opt;
    char token[2 * REDLOCK_TOKEN_BYTES + 1];
    long long valid_until_ns;           /* CLOCK_MONOTONIC; -1: not held */
    int err;
    char errstr[REDLOCK_MSG_MAX];
};

/* What one round of calls came back with. */
typedef struct redlock_tally {
    int ok;                             /* acquired / extended / released */
    int refused;                        /* busy (acquire), token not there (extend, release) */
    int failed;                         /* errors and timeouts */
    int first_err;                      /* the code of the first failed server */
    long long started_ns, ended_ns;
} redlock_tally;

/* ---------------------------------------------------------------- options, errors */

/* Every option not set (<= 0) gets its default. */
static void redlock_options_fix(rlk_redlock_options *o)
{
    if (o->server_timeout_ms <= 0)
        o->server_timeout_ms = REDLOCK_DEFAULT_SERVER_TIMEOUT_MS;
    if (o->retry_delay_ms <= 0)
        o->retry_delay_ms = REDLOCK_DEFAULT_RETRY_DELAY_MS;
    if (!(o->drift_factor > 0))
        o->drift_factor = REDLOCK_DEFAULT_DRIFT_FACTOR;
    if (o->drift_ms <= 0)
        o->drift_ms = REDLOCK_DEFAULT_DRIFT_MS;
}

void rlk_redlock_options_init(rlk_redlock_options *o)
{
    if (!o)
        return;
    memset(o, 0, sizeof *o);
    redlock_options_fix(o);
}

/* Records the outcome of the last operation: RLK_OK with "", or err with
 * "redlock <name>: " + fmt's message, then (a round's failure: servers)
 * "; server 2: <msg>" for every server whose status is not RLK_OK. */
static int redlock_fail(rlk_redlock *rl, int err, int servers, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int redlock_fail(rlk_redlock *rl, int err, int servers, const char *fmt, ...)
{
    char *msg = rl->errstr;
    size_t used;
    va_list ap;

    pthread_mutex_lock(&rl->st_mu);
    rl->err = err;
    used = err == RLK_OK ? 0 : (size_t)snprintf(msg, sizeof rl->errstr, "redlock %s: ", rl->name);
    va_start(ap, fmt);
    if (used < sizeof rl->errstr)
        used += (size_t)vsnprintf(msg + used, sizeof rl->errstr - used, fmt, ap);
    va_end(ap);
    for (int i = 0; servers && i < rl->n && used + 1 < sizeof rl->errstr; i++) {
        int w;

        if (rl->srv[i].status == RLK_OK)
            continue;
        if ((w = snprintf(msg + used, sizeof rl->errstr - used, "; server %d: %s", i,
                          rl->srv[i].msg)) < 0)
            break;
        used += (size_t)w;
    }
    pthread_mutex_unlock(&rl->st_mu);
    return err;
}

/* ---------------------------------------------------------------- handles */

rlk_redlock *rlk_redlock_new(rlk_client *const *clients, int n, const char *name,
                             const rlk_redlock_options *opts)
{
    rlk_redlock *rl;

    if (!clients || n < 1 || !name || !*name)
        return NULL;
    for (int i = 0; i < n; i++) {
        if (!clients[i])
            return NULL;
        if (rlk_topo_routed(clients[i])) {  /* RedLock's servers are independent masters */
            rlk_set_error(clients[i], RLK_ERR_ARG, "rlk_redlock_new: RedLock needs independent "
                          "standalone servers, not a Redis Cluster (%s): on a cluster use a plain "
                          "lock (docs/cluster.md)", rlk_client_url(clients[i]));
            return NULL;
        }
        for (int j = 0; j < i; j++)
            if (clients[j] == clients[i])
                return NULL;
    }
    if (!(rl = calloc(1, sizeof *rl)))
        return NULL;
    pthread_mutex_init(&rl->op_mu, NULL);
    pthread_mutex_init(&rl->st_mu, NULL);
    rl->srv = calloc((size_t)n, sizeof *rl->srv);
    rl->name = strdup(name);
    if (!rl->srv || !rl->name) {
        rlk_redlock_free(rl);
        return NULL;
    }
    for (int i = 0; i < n; i++)
        rl->srv[i].client = clients[i];
    rl->n = n;
    rl->quorum = n / 2 + 1;
    if (opts)
        rl->opt = *opts;
    redlock_options_fix(&rl->opt);      /* calloc'd: no opts, every default */
    rl->valid_until_ns = -1;
    return rl;
}

void rlk_redlock_free(rlk_redlock *rl)
{
    if (!rl)
        return;
    /* The engines' calls end unanswered (never written ones never run); each waits for its
     * dial threads, which use the borrowed client. */
    for (int i = 0; i < rl->n; i++) {
        if (rlk_ae_close_begin(rl->srv[i].ae) == 0)
            rlk_ae_close_end(rl->srv[i].ae);
        rlk_async_poll_free(&rl->srv[i].loop);
    }
    pthread_mutex_destroy(&rl->op_mu);
    pthread_mutex_destroy(&rl->st_mu);
    free(rl->srv);
    free(rl->name);
    free(rl);
}

/* ---------------------------------------------------------------- one round */

static void redlock_on_reply(rlk_async *ac, int rc, const redisReply *r, const char *errstr,
                             int lost, void *arg)
{
    redlock_req *q = arg;

    (void)ac;
    (void)lost;                         /* RLK_ERR_IO either way: the acquire may have run */
    q->call = NULL;
    q->rc = rc;
    if (rc != RLK_OK) {
        snprintf(q->err, sizeof q->err, "%s", errstr);
        return;
    }
    q->type = r->type;
    q->integer = r->type == REDIS_REPLY_INTEGER ? r->integer : 0;
}

/* Queues script on server i (the key is the lock name) with args, its outcome into q; q NULL:
 * sent and not awaited. */
static void redlock_send(rlk_redlock *rl, int i, const char *script, int nargs,
                         const char *const *args, redlock_req *q)
{
    const char *keys[1] = {rl->name}, *why;
    int rc = rlk_ae_fatal(rl->srv[i].ae, &why);
    rlk_ae_call *call = NULL;

    if (rc == RLK_OK && !(call = rlk_ae_scriptv(rl->srv[i].ae, script, 1, keys, nargs, args, NULL,
                                                q ? redlock_on_reply : NULL, q))) {
        rc = rlk_script_set_find(&rl->srv[i].client->scripts, script) ? RLK_ERR_NOMEM
                                                                      : RLK_ERR_NOSUCHSCRIPT;
        why = rc == RLK_ERR_NOMEM ? "out of memory" : "no such script in the client's set";
    }
    if (!q)
        return;
    q->call = call;
    q->rc = rc;
    if (rc != RLK_OK)
        snprintf(q->err, sizeof q->err, "%s: %s", script, why);
}

#define REDLOCK_TURN_MAX_NS (1000 * RLK_NS_PER_MS)  /* one poll() at most; the caller loops */

/* One turn of the N engines: one poll() on all their connections (and dial threads), at most
 * max_wait_ns and no later than the first engine's timer, then each engine's turn hands it
 * what is ready and fires its timer when due. */
static void redlock_turn(rlk_redlock *rl, long long max_wait_ns)
{
    long long now = rlk_async_poll_now_ns(), wait = max_wait_ns;
    struct pollfd *pfd;
    int nfds = 0, n = 0;

    for (int i = 0; i < rl->n; i++)
        nfds += rl->srv[i].loop.nfds;
    pfd = calloc((size_t)nfds + 1, sizeof *pfd);    /* NULL: this turn only waits */
    for (int i = 0; i < rl->n; i++) {
        const rlk_async_poll *p = &rl->srv[i].loop;

        if (p->timer_at >= 0 && p->timer_at - now < wait)
            wait = p->timer_at > now ? p->timer_at - now : 0;
        for (int j = 0; pfd && j < p->nfds; j++) {
            if (p->fds[j]->dead || !p->fds[j]->events)
                continue;
            pfd[n].fd = p->fds[j]->fd;
            pfd[n++].events = (short)(((p->fds[j]->events & RLK_ASYNC_READ) ? POLLIN : 0) |
                                      ((p->fds[j]->events & RLK_ASYNC_WRITE) ? POLLOUT : 0));
        }
    }
    if (wait > REDLOCK_TURN_MAX_NS)
        wait = REDLOCK_TURN_MAX_NS;
    (void)poll(pfd, (nfds_t)n, (int)((wait + RLK_NS_PER_MS - 1) / RLK_NS_PER_MS));
    free(pfd);
    for (int i = 0; i < rl->n; i++)
        (void)rlk_async_poll_turn(&rl->srv[i].loop, 0);
}

/* Turns the engines until every call of req[k] is answered or until_ns passes; the calls
 * still unanswered then are forgotten (their replies dropped when they come) and fail with
 * RLK_ERR_TIMEOUT (timeout_ms is only for the message). */
static void redlock_wait(rlk_redlock *rl, int k, long long until_ns, long long timeout_ms)
{
    for (;;) {
        long long left = until_ns - rlk_clock_now_ns();
        int owed = 0;

        for (int i = 0; i < rl->n; i++)
            owed |= rl->srv[i].req[k].call != NULL;
        if (!owed || left <= 0)
            break;
        redlock_turn(rl, left);
    }
    for (int i = 0; i < rl->n; i++) {
        redlock_req *q = &rl->srv[i].req[k];
        const char *fatal = NULL;

        if (!q->call)
            continue;
        rlk_ae_call_forget(q->call);
        q->call = NULL;
        q->rc = RLK_ERR_TIMEOUT;
        /* A server that could not be connected to (refused, unreachable, its AUTH or
         * SELECT refused) says why: not the same as one that is slow to answer. */
        if (rlk_ae_fatal(rl->srv[i].ae, &fatal) != RLK_OK && fatal && *fatal)
            snprintf(q->err, sizeof q->err, "%.300s", fatal);
        else if (rlk_ae_unreachable(rl->srv[i].ae))
            snprintf(q->err, sizeof q->err, "%.300s (no reply within %lld ms)",
                     rlk_async_conn_errstr(rl->srv[i].ae), timeout_ms);
        else if (rlk_err(rl->srv[i].client) == RLK_ERR_AUTH)  /* its connect's AUTH refused */
            snprintf(q->err, sizeof q->err, "%.300s (no reply within %lld ms)",
                     rlk_errstr(rl->srv[i].client), timeout_ms);
        else
            snprintf(q->err, sizeof q->err, "%.300s: no reply within %lld ms",
                     rl->srv[i].client->addr, timeout_ms);
    }
}

/* Calls script on every server at once with args, the outcomes in req[k] (0: the round's; 1:
 * a release behind it); waits at most timeout_ms (a round that spends validity: acquire,
 * extend, the release of a failed attempt: one server timeout). */
static void redlock_round(rlk_redlock *rl, const char *script, int nargs,
                          const char *const *args, int k, long long timeout_ms)
{
    long long until = rlk_clock_now_ns() + timeout_ms * RLK_NS_PER_MS;

    for (int i = 0; i < rl->n; i++)
        redlock_send(rl, i, script, nargs, args, &rl->srv[i].req[k]);
    redlock_wait(rl, k, until, timeout_ms);
}

/* Server i's engine and its hooks, made by the handle's first operation, and their first
 * connections: made before that operation's round starts its clock (no call is written
 * before), until a quorum is up or every server is up or unreachable, at most one server
 * timeout (a TLS handshake, or the master the sentinels name, on a thread each). RLK_OK, or
 * the failure recorded. */
static int redlock_engines(rlk_redlock *rl)
{
    long long until = rlk_clock_now_ns() + rl->opt.server_timeout_ms * RLK_NS_PER_MS;
    int made = 0;

    for (int i = 0; i < rl->n; i++) {
        if (rl->srv[i].ae)
            continue;
        if (!(rl->srv[i].ae = rlk_ae_new(rl->srv[i].client, NULL, 1)) ||
            rlk_async_poll_attach(rl->srv[i].ae, &rl->srv[i].loop) != RLK_OK)
            return redlock_fail(rl, RLK_ERR_NOMEM, 0, "out of memory");
        made = 1;
    }
    while (made && rlk_clock_now_ns() < until) {
        int up = 0, settled = 0;

        for (int i = 0; i < rl->n; i++) {
            up += rlk_ae_up(rl->srv[i].ae);
            settled += rlk_ae_up(rl->srv[i].ae) || rlk_ae_unreachable(rl->srv[i].ae) ||
                       rlk_ae_fatal(rl->srv[i].ae, NULL) != RLK_OK;
        }
        if (up >= rl->quorum || settled == rl->n)
            break;
        redlock_turn(rl, until - rlk_clock_now_ns());
    }
    return RLK_OK;
}

/* Judges every server's reply to the round (its status and message) and
 * counts them. ok_nil: a nil reply is success (acquire), else an integer 1
 * is (extend, release). */
static void redlock_tally_round(rlk_redlock *rl, int ok_nil, redlock_tally *t)
{
    t->ended_ns = rlk_clock_now_ns();
    pthread_mutex_lock(&rl->st_mu);
    for (int i = 0; i < rl->n; i++) {
        const redlock_req *q = &rl->srv[i].req[0];
        redlock_server *v = &rl->srv[i];

        if (q->rc != RLK_OK) {
            v->status = q->rc;
            snprintf(v->msg, sizeof v->msg, "%s", q->err);
        } else if (ok_nil && q->type == REDIS_REPLY_NIL) {
            v->status = RLK_OK;
            snprintf(v->msg, sizeof v->msg, "acquired");
        } else if (ok_nil && q->type == REDIS_REPLY_INTEGER) {
            v->status = RLK_ERR_BUSY;
            snprintf(v->msg, sizeof v->msg, "held by another token (pttl %lld ms)", q->integer);
        } else if (!ok_nil && q->type == REDIS_REPLY_INTEGER &&
                   (q->integer == 0 || q->integer == 1)) {
            v->status = q->integer ? RLK_OK : RLK_ERR_NOT_OWNER;
            snprintf(v->msg, sizeof v->msg, "%s", q->integer ? "done" : "the token is not there");
        } else {
            v->status = RLK_ERR_PROTOCOL;
            snprintf(v->msg, sizeof v->msg, "unexpected reply type %d", q->type);
        }
        if (v->status == RLK_OK)
            t->ok++;
        else if (v->status == RLK_ERR_BUSY || v->status == RLK_ERR_NOT_OWNER)
            t->refused++;
        else if (t->failed++ == 0)
            t->first_err = v->status;
    }
    pthread_mutex_unlock(&rl->st_mu);
}

/* ---------------------------------------------------------------- acquiring */

/* The code and message of an extend without quorum or validity (old_until: when the validity
 * it extends ends). */
static int redlock_extend_failed(rlk_redlock *rl, const redlock_tally *t, long long old_until)
{
    if (t->ended_ns >= old_until)
        return redlock_fail(rl, RLK_ERR_LOST, 1, "extended on %d of %d servers, but the "
                            "validity ran out before a quorum answered", t->ok, rl->n);
    if (t->ok >= rl->quorum)
        return redlock_fail(rl, RLK_ERR_TIMEOUT, 1, "extended on %d of %d servers, but the new "
                            "lease leaves no validity", t->ok, rl->n);
    return redlock_fail(rl, t->refused > rl->n - rl->quorum || t->failed == 0
                                ? RLK_ERR_LOST : t->first_err, 1,
                        "extended on %d of %d servers (quorum %d): token gone on %d, "
                        "failed on %d", t->ok, rl->n, rl->quorum, t->refused, t->failed);
}

/* Held until valid_until_ns, or (-1) not held (rlk_redlock_token shows the token only while
 * held). */
static void redlock_set_held(rlk_redlock *rl, long long valid_until_ns)
{
    pthread_mutex_lock(&rl->st_mu);
    rl->valid_until_ns = valid_until_ns;
    pthread_mutex_unlock(&rl->st_mu);
}

/* One round that grants a lease on every server: an acquire (old_until -1;
 * on a failure the token is released everywhere) or an extend of the
 * validity that ends at old_until. RLK_OK with *validity_ms (what is left of
 * the lease), or the failure recorded. */
static int redlock_grant(rlk_redlock *rl, long long lease_ms, long long old_until,
                         long long *validity_ms)
{
    int acquire = old_until < 0, rc;
    char lease[24];
    const char *args[2] = {rl->token, lease};
    redlock_tally t = {0};
    long long drift = (long long)((double)lease_ms * rl->opt.drift_factor) + rl->opt.drift_ms;
    long long validity;

    if ((rc = redlock_engines(rl)) != RLK_OK)
        return rc;
    snprintf(lease, sizeof lease, "%lld", lease_ms);
    t.started_ns = rlk_clock_now_ns();
    redlock_round(rl, acquire ? "token/acquire" : "token/extend", 2, args, 0,
                  rl->opt.server_timeout_ms);
    redlock_tally_round(rl, acquire, &t);
    /* What is left of the lease, from when the calls were sent to when all had answered. */
    validity = (lease_ms - drift) * RLK_NS_PER_MS - (t.ended_ns - t.started_ns);
    if (t.ok >= rl->quorum && validity >= RLK_NS_PER_MS && (acquire || t.ended_ns < old_until)) {
        /* An acquire's success: a server that did not answer "acquired" may still run the
         * acquire (not answered in time, written or not; or its reply lost), unless it refused
         * it. Its release is queued behind it on the same connection (sent, not awaited), so
         * the lock ends up held exactly where the quorum was counted. */
        for (int i = 0; acquire && i < rl->n; i++)
            if (rl->srv[i].status != RLK_OK && rl->srv[i].status != RLK_ERR_BUSY)
                redlock_send(rl, i, "token/release", 1, args, NULL);
        redlock_set_held(rl, t.ended_ns + validity);
        *validity_ms = validity / RLK_NS_PER_MS;
        return redlock_fail(rl, RLK_OK, 0, "%s", "");
    }
    if (!acquire)
        return redlock_extend_failed(rl, &t, old_until);
    if (t.ok >= rl->quorum)
        rc = redlock_fail(rl, RLK_ERR_TIMEOUT, 1, "acquired on %d of %d servers, but %lld ms of "
                          "the %lld ms lease passed (drift %lld ms): no validity left", t.ok,
                          rl->n, (t.ended_ns - t.started_ns) / RLK_NS_PER_MS, lease_ms, drift);
    else
        rc = redlock_fail(rl, t.failed > rl->n - rl->quorum ? t.first_err : RLK_ERR_BUSY, 1,
                          "acquired on %d of %d servers (quorum %d): held elsewhere on %d, "
                          "failed on %d", t.ok, rl->n, rl->quorum, t.refused, t.failed);
    /* The token released everywhere, behind any unanswered acquire on the same connection
     * (written or not); one server timeout for it. */
    redlock_round(rl, "token/release", 1, args, 1, rl->opt.server_timeout_ms);
    return rc;
}

/* 1 once rlk_interrupt_waits was called on one of the servers' clients: the
 * wait ends with RLK_ERR_INTERRUPTED, as the runtime's waits do. */
static int redlock_interrupted(const rlk_redlock *rl)
{
    for (int i = 0; i < rl->n; i++)
        if (rlk_rt_interrupted(rl->srv[i].client))
            return 1;
    return 0;
}

#define REDLOCK_PAUSE_STEP_NS (20 * RLK_NS_PER_MS)     /* how soon a pause sees an interrupt */

/* Sleeps a uniform 0..retry_delay_ms, never past deadline_ns (-1: none), in
 * steps that notice an interrupt. Returns 0 when there is time left for
 * another attempt or the wait was interrupted, -1 when the deadline has passed. */
static int redlock_retry_pause(rlk_redlock *rl, long long deadline_ns)
{
    long long now = rlk_clock_now_ns(), until;

    until = now + (long long)rlk_random_below(
                      (unsigned long long)(rl->opt.retry_delay_ms * RLK_NS_PER_MS + 1));
    if (deadline_ns >= 0 && until > deadline_ns)
        until = deadline_ns;
    while ((now = rlk_clock_now_ns()) < until && !redlock_interrupted(rl))
        rlk_clock_sleep_ns(until - now < REDLOCK_PAUSE_STEP_NS ? until - now : REDLOCK_PAUSE_STEP_NS);
    return !redlock_interrupted(rl) && deadline_ns >= 0 && rlk_clock_now_ns() >= deadline_ns
               ? -1 : 0;
}

static int redlock_try_lock_locked(rlk_redlock *rl, long long wait_ms, long long lease_ms,
                                   long long *validity_ms)
{
    long long deadline = rlk_wait_deadline(rlk_clock_now_ns(), wait_ms);   /* -1: none */
    int rc;

    if (rlk_redlock_is_held(rl))
        return redlock_fail(rl, RLK_ERR_ARG, 0, "this handle holds it already");
    /* Not held: no reader looks at the token until redlock_set_held publishes it. */
    if (rlk_random_hex(rl->token, REDLOCK_TOKEN_BYTES) != 0)
        return redlock_fail(rl, RLK_ERR_IO, 0, "no random source for a token");
    for (;;) {     /* a failed attempt leaves the handle not held */
        if (wait_ms != 0 && redlock_interrupted(rl))
            return redlock_fail(rl, RLK_ERR_INTERRUPTED, 0, "wait interrupted");
        rc = redlock_grant(rl, lease_ms, -1, validity_ms);
        if (rc == RLK_OK || rc == RLK_ERR_NOMEM || wait_ms == 0 ||
            redlock_retry_pause(rl, deadline) != 0)
            return rc;
    }
}

/* ---------------------------------------------------------------- extending */

static int redlock_extend_locked(rlk_redlock *rl, long long lease_ms, long long *validity_ms)
{
    long long old_until;

    if (!rlk_redlock_is_held(rl))
        return redlock_fail(rl, RLK_ERR_NOT_OWNER, 0, "not held");
    old_until = rl->valid_until_ns;
    /* Whole milliseconds, as rlk_redlock_validity_ms counts them: a validity that reads 0
     * there (less than 1 ms left) is run out here too. */
    if (old_until - rlk_clock_now_ns() < RLK_NS_PER_MS)
        return redlock_fail(rl, RLK_ERR_LOST, 0, "the validity ran out %lld ms ago",
                            (rlk_clock_now_ns() - old_until) / RLK_NS_PER_MS);
    return redlock_grant(rl, lease_ms, old_until, validity_ms);
}

/* ---------------------------------------------------------------- releasing */

static int redlock_unlock_locked(rlk_redlock *rl)
{
    redlock_tally t = {0};
    const char *args[1] = {rl->token};
    int rc;

    if (!rlk_redlock_is_held(rl))
        return redlock_fail(rl, RLK_ERR_NOT_OWNER, 0, "not held");
    if ((rc = redlock_engines(rl)) != RLK_OK)
        return rc;
    t.started_ns = rlk_clock_now_ns();
    /* An unlock spends no validity: a loaded server that answers after the short acquire
     * timeout still counts (it returns as soon as every server has answered). */
    redlock_round(rl, "token/release", 1, args, 0,
                  rl->opt.server_timeout_ms > REDLOCK_UNLOCK_TIMEOUT_MS
                      ? rl->opt.server_timeout_ms : REDLOCK_UNLOCK_TIMEOUT_MS);
    redlock_tally_round(rl, 0, &t);
    redlock_set_held(rl, -1);
    if (t.ok >= rl->quorum)
        return redlock_fail(rl, RLK_OK, 0, "%s", "");
    return redlock_fail(rl, t.ok + t.failed >= rl->quorum ? t.first_err : RLK_ERR_NOT_OWNER, 1,
                        "released on %d of %d servers (quorum %d): token gone on %d, "
                        "failed on %d", t.ok, rl->n, rl->quorum, t.refused, t.failed);
}

/* ---------------------------------------------------------------- operations */

/* One operation (try_lock, extend, unlock) under op_mu; *validity_ms (when
 * given) what try_lock or extend left, 0 on a failure. */
static int redlock_op(rlk_redlock *rl, char op, long long wait_ms, long long lease_ms,
                      long long *validity_ms)
{
    long long v = 0;
    rlk_sigpipe_guard sigpipe;
    int rc;

    if (!rl)
        return RLK_ERR_ARG;
    pthread_mutex_lock(&rl->op_mu);
    rlk_sigpipe_enter(&sigpipe);        /* the engines write on this thread */
    if (op != 'u' && (lease_ms < 1 || lease_ms > REDLOCK_LEASE_MAX))
        rc = redlock_fail(rl, RLK_ERR_ARG, 0, "lease %lld ms is not in 1..%lld", lease_ms,
                          REDLOCK_LEASE_MAX);
    else
        rc = op == 't'   ? redlock_try_lock_locked(rl, wait_ms, lease_ms, &v)
             : op == 'e' ? redlock_extend_locked(rl, lease_ms, &v)
                         : redlock_unlock_locked(rl);
    rlk_sigpipe_leave(&sigpipe, 1);     /* always check */
    pthread_mutex_unlock(&rl->op_mu);
    if (validity_ms)
        *validity_ms = rc == RLK_OK ? v : 0;
    return rc;
}

int rlk_redlock_try_lock(rlk_redlock *rl, long long wait_ms, long long lease_ms,
                         long long *validity_ms)
{
    return redlock_op(rl, 't', wait_ms, lease_ms, validity_ms);
}

int rlk_redlock_lock(rlk_redlock *rl, long long lease_ms, long long *validity_ms)
{
    return rlk_redlock_try_lock(rl, -1, lease_ms, validity_ms);
}

int rlk_redlock_extend(rlk_redlock *rl, long long lease_ms, long long *validity_ms)
{
    return redlock_op(rl, 'e', 0, lease_ms, validity_ms);
}

int rlk_redlock_unlock(rlk_redlock *rl)
{
    return redlock_op(rl, 'u', 0, 0, NULL);
}

/* ---------------------------------------------------------------- queries */

/* When the hold's validity ends (CLOCK_MONOTONIC ns); -1 when not held. */
static long long redlock_until_ns(rlk_redlock *rl)
{
    long long until_ns = -1;

    if (rl) {
        pthread_mutex_lock(&rl->st_mu);
        until_ns = rl->valid_until_ns;
        pthread_mutex_unlock(&rl->st_mu);
    }
    return until_ns;
}

int rlk_redlock_is_held(rlk_redlock *rl)
{
    return redlock_until_ns(rl) >= 0;
}

long long rlk_redlock_valid_until_ms(rlk_redlock *rl)
{
    long long until_ns = redlock_until_ns(rl);

    return until_ns < 0 ? -1 : until_ns / RLK_NS_PER_MS;
}

long long rlk_redlock_validity_ms(rlk_redlock *rl)
{
    long long until_ns = redlock_until_ns(rl), left = until_ns - rlk_clock_now_ns();

    if (until_ns < 0)
        return -1;
    return left > 0 ? left / RLK_NS_PER_MS : 0;
}

int rlk_redlock_token(rlk_redlock *rl, char *buf, size_t len)
{
    int fits;

    if (!rl || !buf || len == 0)
        return RLK_ERR_ARG;
    pthread_mutex_lock(&rl->st_mu);
    fits = (size_t)snprintf(buf, len, "%s", rl->valid_until_ns >= 0 ? rl->token : "") < len;
    pthread_mutex_unlock(&rl->st_mu);
    return fits ? RLK_OK : RLK_ERR_ARG;
}

int rlk_redlock_server_count(const rlk_redlock *rl)
{
    return rl ? rl->n : 0;
}

int rlk_redlock_quorum(const rlk_redlock *rl)
{
    return rl ? rl->quorum : 0;
}

int rlk_redlock_server_status(rlk_redlock *rl, int i, const char **msg)
{
    int st;

    if (!rl || i < 0 || i >= rl->n)
        return RLK_ERR_ARG;
    pthread_mutex_lock(&rl->st_mu);
    st = rl->srv[i].status;
    if (msg)
        *msg = rl->srv[i].msg;
    pthread_mutex_unlock(&rl->st_mu);
    return st;
}

int rlk_redlock_err(rlk_redlock *rl)
{
    int err;

    if (!rl)
        return RLK_ERR_ARG;
    pthread_mutex_lock(&rl->st_mu);
    err = rl->err;
    pthread_mutex_unlock(&rl->st_mu);
    return err;
}

const char *rlk_redlock_errstr(rlk_redlock *rl)
{
    return rl ? rl->errstr : "";
}
