/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sentinel.c - see sentinel.h: the master of a redis+sentinel:// client,
 * resolved through the sentinels and followed across failovers.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "client/client_t.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/sentinel.h"
#include "client/topo.h"
#include "client/transport.h"
#include "client/url.h"
#include "client/sigpipe.h"

#define RLK_SN_CHECK_NS (1000LL * RLK_NS_PER_MS)    /* the follower asks every second */
#define RLK_SN_RETRY_NS (1000LL * RLK_NS_PER_MS)    /* a sentinel it cannot subscribe to */
#define RLK_SN_EVENT "+switch-master"         /* "<name> <old ip> <old port> <new ip> <new port>" */
#define RLK_SN_PROMOTED "+promoted-slave"     /* "slave <ip:port> <ip> <port> @ <name> <ip> <port>",
                                                 from the failover's leader, a moment earlier */

struct rlk_sentinel {
    rlk_client *c;

    pthread_mutex_t mu;             /* guards the address and the counters */
    char host[256];
    int port;                       /* 0: no master known yet */
    long long epoch;                /* the config epoch the address came with; -1: unknown */
    unsigned long long switches;
    long long last_switch_ns;

    pthread_mutex_t resolve_mu;     /* one resolution at a time; guards qctx, qidx */
    redisContext *qctx;             /* the query connection, to sentinel qidx */
    int qidx;
    int refused;                    /* the last resolving dial's AUTH was refused */

    pthread_mutex_t hook_mu;
    rlk_sentinel_switch_fn hook;
    void *hook_arg;

    pthread_t thread;
    int started;
    atomic_int stop;
    int kick[2];
    redisContext *subs[RLK_URL_SENTINELS_MAX];  /* the thread's: subscribed to +switch-master */
    long long sub_retry_ns[RLK_URL_SENTINELS_MAX];
};

/* ---------------------------------------------------------------- connections */

/* A blocking connection with the client's timeouts and AUTH (*refused = 1: AUTH refused). */
static redisContext *rlk_sn_dial(const rlk_client *c, const char *host, int port,
                                 const char *user, const char *password, int *refused,
                                 char *why, size_t len)
{
    char tls_why[RLK_ERRSTR_MAX];
    redisContext *ctx;
    redisReply *r = NULL;
    int ok = 0;

    (void)rlk_transport_dial(c, host, port, c->connect_tv, &ctx, tls_why, sizeof tls_why);
    if (!ctx || ctx->err || redisSetTimeout(ctx, c->command_tv) != REDIS_OK)
        snprintf(why, len, "connect %s:%d: %s", host, port, ctx ? ctx->errstr : tls_why);
    else if (password && !(r = user ? rlk_transport_command(ctx, "AUTH %s %s", user, password)
                                    : rlk_transport_command(ctx, "AUTH %s", password)))
        snprintf(why, len, "auth: %s", ctx->errstr);
    else if (r && r->type == REDIS_REPLY_ERROR)
        snprintf(why, len, "auth: %.*s", (int)r->len, r->str);
    else
        ok = 1;
    *refused |= r && r->type == REDIS_REPLY_ERROR;
    freeReplyObject(r);
    if (ok)
        return ctx;
    rlk_transport_free(ctx);
    return NULL;
}

static redisContext *rlk_sn_dial_sentinel(rlk_sentinel *sn, int i, int *refused, char *why,
                                          size_t len)
{
    const rlk_url *u = &sn->c->url;

    return rlk_sn_dial(sn->c, u->sentinels[i].host, u->sentinels[i].port, u->sentinel_user,
                       u->sentinel_password, refused, why, len);
}

/* ---------------------------------------------------------------- asking */

typedef struct rlk_sn_answer {
    char host[256];
    int port;
    long long epoch;        /* -1: unknown (SENTINEL MASTER refused) */
} rlk_sn_answer;

static int rlk_sn_parse_addr(const redisReply *r, rlk_sn_answer *a, const char *name, char *why,
                             size_t len)
{
    if (r->type == REDIS_REPLY_NIL)
        return snprintf(why, len, "it does not monitor a master named '%s'", name), -1;
    if (r->type == REDIS_REPLY_ERROR)
        return snprintf(why, len, "%.*s", (int)r->len, r->str), -1;
    if (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
        r->element[0]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING ||
        r->element[0]->len >= sizeof a->host)
        return snprintf(why, len, "unexpected reply to GET-MASTER-ADDR-BY-NAME"), -1;
    memcpy(a->host, r->element[0]->str, r->element[0]->len + 1);
    a->port = atoi(r->element[1]->str);
    return a->port > 0 && a->port < 65536 ? 0 : (snprintf(why, len, "bad port"), -1);
}

/* GET-MASTER-ADDR-BY-NAME and SENTINEL MASTER, pipelined, on sentinel i's
 * query connection (resolve_mu held). */
static int rlk_sn_ask(rlk_sentinel *sn, int i, rlk_sn_answer *a, char *why, size_t len)
{
    const char *name = sn->c->url.master_name;
    redisReply *r[2] = {NULL, NULL};
    const redisReply *epoch;
    int rc = -1;

    if (sn->qctx && (sn->qidx != i || !rlk_conn_alive(sn->qctx))) {
        rlk_transport_free(sn->qctx);
        sn->qctx = NULL;
    }
    if (!sn->qctx && !(sn->qctx = rlk_sn_dial_sentinel(sn, i, &sn->refused, why, len)))
        return -1;
    sn->qidx = i;
    if (redisAppendCommand(sn->qctx, "SENTINEL GET-MASTER-ADDR-BY-NAME %s", name) == REDIS_OK &&
        redisAppendCommand(sn->qctx, "SENTINEL MASTER %s", name) == REDIS_OK &&
        rlk_transport_get_reply(sn->qctx, (void **)&r[0]) == REDIS_OK &&
        rlk_transport_get_reply(sn->qctx, (void **)&r[1]) == REDIS_OK) {
        rc = rlk_sn_parse_addr(r[0], a, name, why, len);
        if (r[0]->type == REDIS_REPLY_ERROR && strncmp(r[0]->str, "NOAUTH", 6) == 0) {
            sn->refused = 1;
            snprintf(why, len, "%.*s (the sentinels' password: ?sentinel_password= or "
                     "rlk_options.sentinel_password)", (int)r[0]->len, r[0]->str);
        }
        epoch = r[1] ? rlk_reply_field(r[1], "config-epoch") : NULL;
        a->epoch = epoch && epoch->type == REDIS_REPLY_STRING ? atoll(epoch->str) : -1;
    } else {
        snprintf(why, len, "%s", sn->qctx->errstr);
    }
    freeReplyObject(r[0]);
    freeReplyObject(r[1]);
    if (sn->qctx->err) {
        rlk_transport_free(sn->qctx);
        sn->qctx = NULL;
    }
    return rc;
}

/* 1 when host:port says ROLE master (or refuses ROLE: nothing better to go
 * by), 0 when it is something else, -1 when it cannot be asked. */
static int rlk_sn_is_master(rlk_sentinel *sn, const char *host, int port, char *why, size_t len)
{
    const rlk_client *c = sn->c;
    char dial[RLK_ERRSTR_MAX];
    redisContext *ctx = rlk_sn_dial(c, host, port, c->url.user, c->url.password, &sn->refused,
                                    dial, sizeof dial);
    redisReply *r;
    int is = -1;

    if (!ctx)
        return snprintf(why, len, "the master it names, %s:%d: %.300s", host, port, dial), -1;
    r = rlk_transport_command(ctx, "ROLE");
    if (!r) {
        snprintf(why, len, "ROLE on %s:%d: %s", host, port, ctx->errstr);
    } else if (r->type == REDIS_REPLY_ERROR) {
        is = 1;
    } else if (r->type == REDIS_REPLY_ARRAY && r->elements > 0 &&
               r->element[0]->type == REDIS_REPLY_STRING) {
        is = strcmp(r->element[0]->str, "master") == 0;
        if (!is)
            snprintf(why, len, "%s:%d says it is a %s", host, port, r->element[0]->str);
    } else {
        snprintf(why, len, "ROLE on %s:%d: unexpected reply", host, port);
    }
    freeReplyObject(r);
    rlk_transport_free(ctx);
    return is;
}

/* ---------------------------------------------------------------- resolving */

/* One answer against the address in use: 0 the same, 1 a newer master
 * (switched), -1 passed over (why says why). */
static int rlk_sn_consider(rlk_sentinel *sn, int i, rlk_sn_answer *a, int *had, char *why,
                           size_t len)
{
    int same, older;

    pthread_mutex_lock(&sn->mu);
    *had = sn->port != 0;
    same = sn->port == a->port && strcmp(sn->host, a->host) == 0;
    older = sn->port && a->epoch >= 0 && sn->epoch >= 0 && a->epoch < sn->epoch;
    if (same && a->epoch > sn->epoch)
        sn->epoch = a->epoch;
    pthread_mutex_unlock(&sn->mu);
    if (same)
        return 0;
    if (older)
        return snprintf(why, len, "sentinel %d names %s:%d of an older config epoch", i, a->host,
                        a->port), -1;
    if (rlk_sn_is_master(sn, a->host, a->port, why, len) != 1)
        return -1;
    pthread_mutex_lock(&sn->mu);
    if (sn->port) {
        sn->switches++;
        sn->last_switch_ns = rlk_clock_now_ns();
    }
    snprintf(sn->host, sizeof sn->host, "%s", a->host);
    sn->port = a->port;
    sn->epoch = a->epoch;
    pthread_mutex_unlock(&sn->mu);
    return 1;
}

/* Asks the sentinels now, starting with sentinel first (-1: the one that
 * answered last). 1: switched to a new master; 0: the current one stands;
 * minus an rlk error (recorded, with the cause in the message) when no
 * sentinel answered with a master it could confirm. */
static int rlk_sn_refresh_from(rlk_client *c, const char *cause, int first)
{
    rlk_sentinel *sn = c->sentinel;
    char why[600] = "", last[RLK_ERRSTR_MAX] = "no sentinel";
    rlk_sigpipe_guard g;
    int rc = -1, had = 0, n = c->url.nsentinels, refused = 0;

    rlk_sigpipe_enter(&g);
    pthread_mutex_lock(&sn->resolve_mu);
    for (int k = 0, start = first >= 0 ? first : sn->qidx; k < n && rc < 0; k++) {
        int i = (start + k) % n;
        rlk_sn_answer a;

        why[0] = '\0';
        sn->refused = 0;
        if (rlk_sn_ask(sn, i, &a, why, sizeof why) == 0)
            rc = rlk_sn_consider(sn, i, &a, &had, why, sizeof why);
        if (rc < 0 && (!refused || sn->refused))    /* a refused AUTH is the message */
            snprintf(last, sizeof last, "sentinel %.100s:%d: %.300s", c->url.sentinels[i].host,
                     c->url.sentinels[i].port, why);
        refused |= sn->refused;
    }
    pthread_mutex_unlock(&sn->resolve_mu);
    rlk_sigpipe_leave(&g, rc < 0);
    if (rc == 1 && had) {           /* a switch: the listener hears of it */
        pthread_mutex_lock(&sn->hook_mu);
        if (sn->hook)
            sn->hook(sn->hook_arg);
        pthread_mutex_unlock(&sn->hook_mu);
    }
    if (rc < 0)
        return -rlk_set_error(c, refused ? RLK_ERR_AUTH : RLK_ERR_IO,
                              "%s: no sentinel named a master it could reach (%s; "
                              "last: %s)", c->addr, cause, last);
    return rc;
}

/* rlk_sn_refresh_from, keeping the calling thread's error unless it switched. */
static int rlk_sn_refresh_quiet(rlk_client *c, const char *cause)
{
    char msg[RLK_ERRSTR_MAX];
    int err = rlk_err(c), rc;

    snprintf(msg, sizeof msg, "%s", rlk_errstr(c));
    rc = rlk_sn_refresh_from(c, cause, -1);
    if (rc != 1)
        rlk_set_error(c, err, "%s", msg);
    return rc;
}

/* The watchdog, before a renewal round: asks the sentinels (a switch
 * follows at once), so that nothing is renewed on a master they no longer
 * name. The calling thread's error is left as it was. */
static void rlk_sentinel_check(rlk_client *c)
{
    if (c->sentinel)
        (void)rlk_sn_refresh_quiet(c, "watchdog");
}

/* 1 when ctx is a TCP connection to another address than the current master. */
static int rlk_sentinel_stale(rlk_client *c, const redisContext *ctx)
{
    rlk_sentinel *sn = c->sentinel;
    int stale;

    if (!sn || !ctx || ctx->connection_type != REDIS_CONN_TCP || !ctx->tcp.host)
        return 0;
    pthread_mutex_lock(&sn->mu);
    stale = sn->port && (ctx->tcp.port != sn->port || strcmp(ctx->tcp.host, sn->host) != 0);
    pthread_mutex_unlock(&sn->mu);
    return stale;
}

void rlk_sentinel_address(rlk_client *c, char *buf, size_t len)
{
    rlk_sentinel *sn = c->sentinel;

    if (!sn) {
        snprintf(buf, len, "%s", c->addr);
        return;
    }
    pthread_mutex_lock(&sn->mu);
    if (sn->port)
        rlk_url_host_port(buf, len, sn->host, sn->port);
    else
        snprintf(buf, len, "%s", "");
    pthread_mutex_unlock(&sn->mu);
}

unsigned long long rlk_sentinel_switches(rlk_client *c, long long *last_ns)
{
    rlk_sentinel *sn = c->sentinel;
    unsigned long long n;

    if (!sn) {
        if (last_ns)
            *last_ns = 0;
        return 0;
    }
    pthread_mutex_lock(&sn->mu);
    n = sn->switches;
    if (last_ns)
        *last_ns = sn->last_switch_ns;
    pthread_mutex_unlock(&sn->mu);
    return n;
}

void rlk_sentinel_set_listener(rlk_client *c, rlk_sentinel_switch_fn fn, void *arg)
{
    rlk_sentinel *sn = c->sentinel;

    if (!sn)
        return;
    pthread_mutex_lock(&sn->hook_mu);
    sn->hook = fn;
    sn->hook_arg = arg;
    pthread_mutex_unlock(&sn->hook_mu);
}

/* ---------------------------------------------------------------- the follower thread */

static void rlk_sn_sub_close(rlk_sentinel *sn, int i)
{
    if (sn->subs[i]) {
        rlk_transport_free(sn->subs[i]);
        sn->subs[i] = NULL;
    }
    sn->sub_retry_ns[i] = rlk_clock_now_ns() + RLK_SN_RETRY_NS;
}

static void rlk_sn_sub_open(rlk_sentinel *sn, int i)
{
    char why[RLK_ERRSTR_MAX] = "";

    sn->subs[i] = rlk_sn_dial_sentinel(sn, i, &(int){0}, why, sizeof why);
    if (!sn->subs[i] ||
        redisAppendCommand(sn->subs[i], "SUBSCRIBE %s %s", RLK_SN_EVENT, RLK_SN_PROMOTED) !=
            REDIS_OK ||
        rlk_transport_flush(sn->subs[i]) != REDIS_OK)
        rlk_sn_sub_close(sn, i);
}

/* 1 when the payload of a +switch-master or +promoted-slave names our master. */
static int rlk_sn_names_us(const char *name, const redisReply *payload)
{
    size_t nlen = strlen(name);
    const char *p = payload->str, *end = payload->str + payload->len;

    if (payload->type != REDIS_REPLY_STRING)
        return 0;
    if (payload->len > nlen && memcmp(p, name, nlen) == 0 && p[nlen] == ' ')
        return 1;       /* +switch-master */
    for (; p + 3 + nlen < end; p++)      /* +promoted-slave: "... @ <name> ..." */
        if (memcmp(p, " @ ", 3) == 0)
            return memcmp(p + 3, name, nlen) == 0 && p[3 + nlen] == ' ';
    return 0;
}

/* Reads what sentinel i pushed; 1 when an event names our master. */
static int rlk_sn_sub_read(rlk_sentinel *sn, int i)
{
    const char *name = sn->c->url.master_name;
    int event = 0;
    void *p;

    if (rlk_transport_read(sn->subs[i]) != REDIS_OK) {
        rlk_sn_sub_close(sn, i);
        return 1;   /* a sentinel went away: ask the others at once */
    }
    while (sn->subs[i] && redisGetReplyFromReader(sn->subs[i], &p) == REDIS_OK && p) {
        redisReply *r = p;

        /* ["message", channel, payload] */
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 3 &&
            r->element[0]->type == REDIS_REPLY_STRING && strcmp(r->element[0]->str, "message") == 0 &&
            rlk_sn_names_us(name, r->element[2]))
            event = 1;
        freeReplyObject(r);
    }
    if (sn->subs[i] && sn->subs[i]->err)
        rlk_sn_sub_close(sn, i);
    return event;
}

static void *rlk_sn_main(void *arg)
{
    rlk_sentinel *sn = arg;
    rlk_client *c = sn->c;
    int n = c->url.nsentinels;
    long long next_check = rlk_clock_now_ns() + RLK_SN_CHECK_NS;

    while (!atomic_load(&sn->stop)) {
        struct pollfd p[RLK_URL_SENTINELS_MAX + 1] = {{sn->kick[0], POLLIN, 0}};
        int who[RLK_URL_SENTINELS_MAX + 1], np = 1, event = 0, from = -1, ms;
        long long now = rlk_clock_now_ns();
        char buf[16];

        for (int i = 0; i < n && !atomic_load(&sn->stop); i++) {
            if (!sn->subs[i] && now >= sn->sub_retry_ns[i])
                rlk_sn_sub_open(sn, i);
            if (sn->subs[i]) {
                p[np] = (struct pollfd){sn->subs[i]->fd, POLLIN, 0};
                who[np++] = i;
            }
        }
        now = rlk_clock_now_ns();
        ms = next_check > now ? (int)((next_check - now) / RLK_NS_PER_MS) + 1 : 0;
        if (poll(p, (nfds_t)np, ms) < 0 && errno != EINTR)
            break;
        while (p[0].revents && read(sn->kick[0], buf, sizeof buf) > 0) {
        }
        for (int k = 1; k < np; k++)
            if (p[k].revents && rlk_sn_sub_read(sn, who[k])) {
                event = 1;
                from = sn->subs[who[k]] ? who[k] : -1;     /* ask the sentinel that told first */
            }
        if (atomic_load(&sn->stop))
            break;
        if (event || rlk_clock_now_ns() >= next_check) {
            (void)rlk_sn_refresh_from(c, event ? "a sentinel event" : "poll", from);
            next_check = rlk_clock_now_ns() + RLK_SN_CHECK_NS;
        }
    }
    return NULL;
}

/* Starts c->sentinel's follower thread (once; callers on several threads may race). */
static int rlk_sentinel_follow(rlk_client *c)
{
    rlk_sentinel *sn = c->sentinel;
    sigset_t all, old;
    int err = 0;

    pthread_mutex_lock(&sn->hook_mu);     /* two dials may ask at once (the async engine's) */
    if (!sn->started) {
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);   /* the thread takes no signal */
        err = pthread_create(&sn->thread, NULL, rlk_sn_main, sn);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        sn->started = err == 0;
    }
    pthread_mutex_unlock(&sn->hook_mu);
    if (err != 0)
        return rlk_set_error(c, RLK_ERR_NOMEM, "%s: cannot start the sentinel thread", c->addr);
    return RLK_OK;
}

/* ---------------------------------------------------------------- life cycle */

/* Stops the thread, closes its connections, frees. */
static void rlk_sentinel_free(rlk_sentinel *sn)
{
    char b = 1;

    if (!sn)
        return;
    atomic_store(&sn->stop, 1);
    if (write(sn->kick[1], &b, 1) < 0) {
        /* full: the thread has a kick to read */
    }
    if (sn->started)
        pthread_join(sn->thread, NULL);
    for (int i = 0; i < RLK_URL_SENTINELS_MAX; i++)
        rlk_transport_free(sn->subs[i]);
    rlk_transport_free(sn->qctx);
    close(sn->kick[0]);
    close(sn->kick[1]);
    pthread_mutex_destroy(&sn->mu);
    pthread_mutex_destroy(&sn->resolve_mu);
    pthread_mutex_destroy(&sn->hook_mu);
    free(sn);
}

/* ---------------------------------------------------------------- the topology (topo.h) */

/* Makes c->sentinel (c->url is a sentinel URL; the options' sentinel_password
 * fills the URL's when it has none). No I/O: the master is resolved when a
 * connection needs it (rlk_sn_open). */
static int rlk_sn_setup(rlk_client *c, const rlk_options *o, char *msg, size_t len)
{
    const char *sentinel_password = o ? o->sentinel_password : NULL;
    rlk_sentinel *sn = calloc(1, sizeof *sn);

    if (!sn)
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    if (pipe2(sn->kick, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(sn);
        return snprintf(msg, len, "%s: no pipe for the sentinel thread", c->addr), RLK_ERR_NOMEM;
    }
    sn->c = c;
    sn->epoch = -1;
    pthread_mutex_init(&sn->mu, NULL);
    pthread_mutex_init(&sn->resolve_mu, NULL);
    pthread_mutex_init(&sn->hook_mu, NULL);
    c->sentinel = sn;
    if (!c->url.sentinel_password && sentinel_password && *sentinel_password &&
        !(c->url.sentinel_password = strdup(sentinel_password)))
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    return RLK_OK;
}

/* A standalone client whose address the sentinels give and move. A failed
 * resolution is recorded on c (the next connection resolves again). */
static void rlk_sn_connect(rlk_client *c)
{
    (void)rlk_sn_refresh_from(c, "resolving", -1);
    if (rlk_sentinel_follow(c) != RLK_OK)
        return;
    rlk_topo_pool_connect(c);
}

static void rlk_sn_topo_free(rlk_client *c)
{
    rlk_sentinel_free(c->sentinel);
    c->sentinel = NULL;
}

/* After a READONLY reply: 1 when the sentinels name another master now
 * (the call may be sent again there); 0 otherwise, with the READONLY error
 * left as it was. */
static int rlk_sn_refused(rlk_client *c, int err)
{
    return err == RLK_ERR_READONLY && rlk_sn_refresh_quiet(c, "READONLY") == 1;
}

static int rlk_sn_open(rlk_client *c, redisContext **out)
{
    rlk_sentinel *sn = c->sentinel;
    char master[256];
    int rc, port;

    if ((rc = rlk_sentinel_follow(c)) != RLK_OK)
        return rc;
    pthread_mutex_lock(&sn->mu);
    port = sn->port;
    pthread_mutex_unlock(&sn->mu);
    if (!port && (rc = rlk_sn_refresh_from(c, "resolving", -1)) < 0)
        return -rc;     /* none known yet, and none found */
    pthread_mutex_lock(&sn->mu);
    snprintf(master, sizeof master, "%s", sn->host);
    port = sn->port;
    pthread_mutex_unlock(&sn->mu);
    return rlk_conn_open_to(c, master, port, out);
}

const rlk_topo rlk_topo_sentinel = {
    .name = "sentinel",
    .flags = RLK_TOPO_RESOLVES,
    .readonly_hint = " (the master was demoted; rlk asks the sentinels again)",
    .setup = rlk_sn_setup,
    .connect = rlk_sn_connect,
    .free = rlk_sn_topo_free,
    .run = rlk_topo_pool_run,
    .refused = rlk_sn_refused,
    .open = rlk_sn_open,
    .stale = rlk_sentinel_stale,
    .check = rlk_sentinel_check,
    .moves = rlk_sentinel_switches,
    .masters = rlk_topo_one_master,
};
