/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.c - one hiredis connection: open (timeouts, AUTH, SELECT), liveness,
 * one command with a "was the request written" flag, SCRIPT LOAD, EVALSHA
 * with NOSCRIPT recovery, and the classification of error replies.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <stdatomic.h>

#include "client/client_t.h"
#include "client/clock.h"
#include "client/cluster.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/functions.h"
#include "client/scripts.h"
#include "client/sigpipe.h"
#include "client/slotmap.h"
#include "client/transport.h"

/* Error replies that mean the server refused the call itself, whatever the
 * script would have said, by the first word of the reply, and their class. */
static const struct {
    const char *word;
    int err;
} rlk_refusals[] = {
    {"NOAUTH", RLK_ERR_AUTH},         {"WRONGPASS", RLK_ERR_AUTH},   {"READONLY", RLK_ERR_READONLY},
    {"MASTERDOWN", RLK_ERR_READONLY}, {"NOREPLICAS", RLK_ERR_NOREPLICAS}, {"BUSY", RLK_ERR_SERVER},
    {"LOADING", RLK_ERR_SERVER},      {"MISCONF", RLK_ERR_SERVER},   {"OOM", RLK_ERR_SERVER},
    {"MOVED", RLK_ERR_SERVER},        {"ASK", RLK_ERR_SERVER},       {"TRYAGAIN", RLK_ERR_SERVER},
    {"CLUSTERDOWN", RLK_ERR_SERVER},  {"CROSSSLOT", RLK_ERR_SERVER}, {"NOPERM", RLK_ERR_SERVER},
    {"NOSCRIPT", RLK_ERR_SERVER},     {"EXECABORT", RLK_ERR_SERVER},
};

static int rlk_first_word_is(const char *text, size_t len, const char *word)
{
    size_t n = strlen(word);

    return len >= n && memcmp(text, word, n) == 0 && (len == n || text[n] == ' ');
}

static int rlk_reply_class(const redisReply *r, int default_err)
{
    static const char unauth[] = "ERR Protocol error: unauthenticated";
    /* scripts/lib/fence_done.lua's text for a data command the server refused: on a replica
     * (a demoted master) that is READONLY, and the fenced write changed nothing. */
    static const char cmderr[] = "RLK_CMDERR the data command failed: ";
    const size_t cn = sizeof cmderr - 1;

    if (r->len >= sizeof unauth - 1 && memcmp(r->str, unauth, sizeof unauth - 1) == 0)
        return RLK_ERR_AUTH;
    for (size_t i = 0; i < sizeof rlk_refusals / sizeof rlk_refusals[0]; i++)
        if (rlk_first_word_is(r->str, r->len, rlk_refusals[i].word))
            return rlk_refusals[i].err;
    if (r->len > cn && memcmp(r->str, cmderr, cn) == 0 &&
        (rlk_first_word_is(r->str + cn, r->len - cn, "READONLY") ||
         rlk_first_word_is(r->str + cn, r->len - cn, "MASTERDOWN")))
        return RLK_ERR_READONLY; /* as any write's: followed to the master and sent once more there */
    return default_err;
}

const redisReply *rlk_reply_field(const redisReply *map, const char *key)
{
    size_t n = strlen(key);

    if (map->type != REDIS_REPLY_ARRAY)
        return NULL;
    for (size_t i = 0; i + 1 < map->elements; i += 2) {
        const redisReply *k = map->element[i];

        if (k->type == REDIS_REPLY_STRING && k->len == n && memcmp(k->str, key, n) == 0)
            return map->element[i + 1];
    }
    return NULL;
}

int rlk_err_is_transient_reply(rlk_client *c)
{
    if (rlk_err(c) != RLK_ERR_SERVER && rlk_err(c) != RLK_ERR_SCRIPT && rlk_err(c) != RLK_ERR_READONLY)
        return 0;
    return rlk_slotmap_not_now(rlk_errstr(c)) != RLK_SLOTMAP_NOW;   /* the one "not now" list */
}

int rlk_set_reply_error(rlk_client *c, const redisReply *r, const char *what, int default_err)
{
    int err = rlk_reply_class(r, default_err);
    const char *hint = "";

    /* What a READONLY means depends on the topology (a replica, or a demoted
     * master the sentinels replace). */
    if (err == RLK_ERR_READONLY && rlk_first_word_is(r->str, r->len, "MASTERDOWN"))
        hint = " (a replica whose link to its master is down)";
    else if (err == RLK_ERR_READONLY)
        hint = c->topo->readonly_hint;
    else if (err == RLK_ERR_NOREPLICAS)
        hint = " (the master's min-replicas-to-write is not met)";
    if (what)
        return rlk_set_error(c, err, "%s %s: %.*s%s", what, c->addr, (int)r->len, r->str, hint);
    return rlk_set_error(c, err, "%.*s%s", (int)r->len, r->str, hint);
}

/* ---------------------------------------------------------------- one command */

/* A callback run once after a request is written (rlk_conn_after_write). */
typedef struct rlk_write_hook {
    void (*fn)(void *);
    void *arg;
} rlk_write_hook;

/* Armed by rlk_conn_after_write; taken by the next rlk_conn_evalv. */
static _Thread_local rlk_write_hook rlk_armed_hook;

void rlk_conn_after_write(void (*fn)(void *), void *arg)
{
    rlk_armed_hook.fn = fn;
    rlk_armed_hook.arg = arg;
}

/* A second command written behind the first in the same write (the WAIT
 * after a script): its reply is read after the first one's, so both cost
 * one round trip. reply NULL: lost (ctx->errstr says how; the connection is
 * then broken, ctx->err set, and the caller's rules drop it). */
typedef struct rlk_conn_tail {
    int argc;
    const char **argv;
    const size_t *lens;         /* NULL: each word's strlen */
    redisReply *reply;
} rlk_conn_tail;

static _Thread_local unsigned long long rlk_tl_round_trips;

unsigned long long rlk_conn_round_trips(void)
{
    return rlk_tl_round_trips;
}

/* ---------------------------------------------------------------- requests */

/* v in decimal at p; the byte after it. A request's lengths are nearly all
 * one or two digits: written at once. */
static char *rlk_resp_uint(char *p, size_t v)
{
    char tmp[24];
    int n = 0;

    if (v < 10) {
        *p = (char)('0' + v);
        return p + 1;
    }
    if (v < 100) {
        p[0] = (char)('0' + v / 10);
        p[1] = (char)('0' + v % 10);
        return p + 2;
    }
    do
        tmp[n++] = (char)('0' + v % 10);
    while ((v /= 10) > 0);
    while (n > 0)
        *p++ = tmp[--n];
    return p;
}

static size_t rlk_resp_digits(size_t v)
{
    size_t n = 1;

    while (v >= 10)
        v /= 10, n++;
    return n;
}

size_t rlk_conn_format_argv(char *out, size_t cap, int argc, const char *const *argv,
                            const size_t *lens)
{
    size_t need = 3 + rlk_resp_digits((size_t)argc);
    char *p = out;

    for (int i = 0; i < argc; i++) {
        size_t len = lens ? lens[i] : strlen(argv[i]);

        need += 1 + rlk_resp_digits(len) + 2 + len + 2;
    }
    if (!out || need > cap)
        return need;
    *p++ = '*';
    p = rlk_resp_uint(p, (size_t)argc);
    *p++ = '\r', *p++ = '\n';
    for (int i = 0; i < argc; i++) {
        size_t len = lens ? lens[i] : strlen(argv[i]);

        *p++ = '$';
        p = rlk_resp_uint(p, len);
        *p++ = '\r', *p++ = '\n';
        if (len)
            memcpy(p, argv[i], len);
        p += len;
        *p++ = '\r', *p++ = '\n';
    }
    return need;
}

/* redisAppendCommandArgv's effect (the request appended to ctx's output
 * buffer; REDIS_ERR with ctx->err set when out of memory), formatted by
 * rlk_conn_format_argv: hiredis's formatter prints each length with
 * sdscatfmt, about 7,000 instructions an EVALSHA of a lock call, most of
 * a raw call's client instructions; this one takes a few hundred. */
static int rlk_conn_append_argv(redisContext *ctx, int argc, const char *const *argv,
                                const size_t *lens)
{
    char stack[1024], *buf = stack;
    size_t need = rlk_conn_format_argv(stack, sizeof stack, argc, argv, lens);
    int rc;

    if (need > sizeof stack) {
        if (!(buf = malloc(need))) {
            ctx->err = REDIS_ERR_OOM;
            snprintf(ctx->errstr, sizeof ctx->errstr, "Out of memory");
            return REDIS_ERR;
        }
        rlk_conn_format_argv(buf, need, argc, argv, lens);
    }
    rc = redisAppendFormattedCommand(ctx, buf, need);
    if (buf != stack)
        free(buf);
    return rc;
}

/* The next reply on ctx into *r; a lost one recorded as "<what> <addr>: ...". */
static int rlk_conn_read(rlk_client *c, redisContext *ctx, const char *what, redisReply **r)
{
    void *p = NULL;

    errno = 0;
    if (rlk_transport_get_reply(ctx, &p) != REDIS_OK || !p)
        return ctx->err ? rlk_set_ctx_error(c, ctx, what)
                        : rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: no reply", what, c->addr);
    *r = p;
    return RLK_OK;
}

/* One write of the command (and tail's behind it), then its reply (and
 * tail's); the hook runs between the two. */
static int rlk_conn_command_hooked(rlk_client *c, redisContext *ctx, const char *what,
                                   int argc, const char **argv, const size_t *argvlen,
                                   redisReply **reply, int *written, rlk_write_hook *hook,
                                   rlk_conn_tail *tail)
{
    void *r = NULL;
    int rc;

    *reply = NULL;
    if (written)
        *written = 0;
    if (ctx->err || rlk_conn_append_argv(ctx, argc, argv, argvlen) != REDIS_OK ||
        (tail && rlk_conn_append_argv(ctx, tail->argc, tail->argv, tail->lens) != REDIS_OK))
        return rlk_set_ctx_error(c, ctx, what);
    rlk_tl_round_trips++;
    /* No SIGPIPE mask: every write sends with MSG_NOSIGNAL (transport.c; TLS: tls.c's write BIO). */
    rc = rlk_transport_flush(ctx) == REDIS_OK ? RLK_OK : rlk_set_ctx_error(c, ctx, what);
    if (rc == RLK_OK && written)
        *written = 1;
    if (rc == RLK_OK && hook && hook->fn) {         /* once: taken before it runs */
        void (*fn)(void *) = hook->fn;

        hook->fn = NULL;
        fn(hook->arg);
    }
    if (rc == RLK_OK)
        rc = rlk_conn_read(c, ctx, what, reply);
    if (rc == RLK_OK && tail) {
        /* The first reply stands whatever becomes of the second. */
        errno = 0;
        if (rlk_transport_get_reply(ctx, &r) == REDIS_OK)
            tail->reply = r;
    }
    return rc;
}

int rlk_conn_command(rlk_client *c, redisContext *ctx, const char *what,
                     int argc, const char **argv, const size_t *argvlen,
                     redisReply **reply, int *written)
{
    return rlk_conn_command_hooked(c, ctx, what, argc, argv, argvlen, reply, written, NULL, NULL);
}

int rlk_conn_command_pair(rlk_client *c, redisContext *ctx, const char *what, int argc,
                          const char **argv, const size_t *argvlen, int argc2,
                          const char **argv2, const size_t *argvlen2, redisReply **reply,
                          redisReply **reply2, int *written)
{
    rlk_conn_tail tail = {argc2, argv2, argvlen2, NULL};
    int rc = rlk_conn_command_hooked(c, ctx, what, argc, argv, argvlen, reply, written, NULL, &tail);
    *reply2 = tail.reply;
    return rc;
}

/* ---------------------------------------------------------------- replica acknowledgement */

static _Thread_local rlk_acks rlk_tl_acks;
static _Thread_local int rlk_tl_acks_off;

int rlk_conn_acks_short(rlk_acks *out)
{
    if (out)
        *out = rlk_tl_acks;
    return rlk_tl_acks.wanted > 0 && rlk_tl_acks.acks < rlk_tl_acks.wanted;
}

int rlk_conn_acks_off(int off)
{
    int previous = rlk_tl_acks_off;

    rlk_tl_acks_off = off;
    return previous;
}

int rlk_last_replica_acks(void)
{
    return rlk_tl_acks.wanted > 0 ? rlk_tl_acks.acks : -2;
}

/* The WAIT's timeout: the option's, cut to 3/4 of the connection's read
 * timeout (a pool slot's is cut to the thread's time limit; the watchdog's
 * and the keeper's to their period), so that its reply is read, not timed
 * out; at least 1 ms (WAIT's 0 would block for ever). */
static long long rlk_conn_wait_ms(const rlk_client *c, const redisContext *ctx)
{
    long long ms = c->min_replicas_timeout_ms, limit = c->command_timeout_ms;
    struct timeval tv = {0, 0};
    socklen_t len = sizeof tv;

    if (getsockopt(ctx->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, &len) == 0 && (tv.tv_sec || tv.tv_usec))
        limit = (long long)tv.tv_sec * 1000 + tv.tv_usec / 1000;
    limit -= limit / 4;
    if (ms > limit)
        ms = limit;
    return ms > 0 ? ms : 1;
}

/* 1 when c asks for replica acknowledgement and s writes: n and ms then hold
 * WAIT's arguments and the thread's note says what is asked. 0: no WAIT. */
static int rlk_conn_wait_arm(rlk_client *c, redisContext *ctx, const rlk_script_info *s,
                             char *n, char *ms)
{
    rlk_tl_acks.wanted = rlk_tl_acks.acks = 0;     /* no WAIT: the note says none */
    rlk_tl_acks.timeout_ms = 0;
    rlk_tl_acks.why[0] = '\0';
    if (c->min_replicas <= 0 || rlk_tl_acks_off || !rlk_script_writes(s))
        return 0;
    rlk_tl_acks.wanted = c->min_replicas;
    rlk_tl_acks.acks = -1;
    rlk_tl_acks.timeout_ms = rlk_conn_wait_ms(c, ctx);
    snprintf(rlk_tl_acks.why, sizeof rlk_tl_acks.why, "the call's reply was lost");
    snprintf(n, 16, "%d", c->min_replicas);
    snprintf(ms, 24, "%lld", rlk_tl_acks.timeout_ms);
    return 1;
}

/* Takes the WAIT's reply into the thread's note and frees it. */
static void rlk_conn_wait_take(const redisContext *ctx, rlk_conn_tail *tail)
{
    redisReply *r = tail->reply;

    if (!r) {
        snprintf(rlk_tl_acks.why, sizeof rlk_tl_acks.why, "WAIT: its reply was lost (%.60s)",
                 ctx->err ? ctx->errstr : "no reply");
        return;
    }
    if (r->type == REDIS_REPLY_INTEGER) {
        rlk_tl_acks.acks = r->integer > 1000000 ? 1000000 : (int)r->integer;
        rlk_tl_acks.why[0] = '\0';
    } else {
        snprintf(rlk_tl_acks.why, sizeof rlk_tl_acks.why, "WAIT refused: %.100s",
                 r->type == REDIS_REPLY_ERROR && r->str ? r->str : "an unexpected reply");
    }
    freeReplyObject(r);
    tail->reply = NULL;
}

int rlk_conn_alive(const redisContext *ctx)
{
    if (!ctx || ctx->err || ctx->fd < 0 || !(ctx->flags & REDIS_CONNECTED))
        return 0;
    if ((ctx->obuf && sdslen(ctx->obuf) > 0) || (ctx->reader && ctx->reader->len > ctx->reader->pos))
        return 0;
    /* Readable (EOF, or bytes nobody asked for, the TLS session's too),
     * hang-up or error: broken. */
    return rlk_transport_peer(ctx) == RLK_PEER_OPEN;
}

/* ---------------------------------------------------------------- open */

int rlk_conn_setup_cmd(const rlk_client *c, int i, const char *argv[3], size_t lens[3],
                       char db[16])
{
    int argc = 0;

    if (i == 0 && c->url.password) {
        argv[argc++] = "AUTH";
        if (c->url.user)
            argv[argc++] = c->url.user;
        argv[argc++] = c->url.password;
    } else if (i == (c->url.password ? 1 : 0) && c->url.db != 0) {
        snprintf(db, 16, "%d", c->url.db);
        argv[argc++] = "SELECT";
        argv[argc++] = db;
    }
    for (int k = 0; k < argc; k++)
        lens[k] = strlen(argv[k]);
    return argc;
}

/* Why a node refused SELECT (reply: its error), to add to the message: for a node without
 * databases in cluster mode (Redis 7/8, Valkey 8), or a cluster's node past its count (Valkey
 * 9's cluster-databases); "" for a server that is not a cluster's. Here, not in cluster.c:
 * cluster calls conn, never the other way (client_calls). */
static const char *rlk_conn_select_why(const rlk_client *c, const char *reply)
{
    if (reply && strstr(reply, "cluster mode"))
        return " (Redis Cluster has only database 0; Valkey 9 with cluster-databases allows more)";
    if (c->url.is_cluster || c->id >= RLK_CLUSTER_NODE_ID_MIN)
        return " (the cluster's nodes have fewer databases: Valkey 9's cluster-databases N "
               "allows 0..N-1)";
    return "";
}

int rlk_conn_check_setup_reply(rlk_client *c, const redisContext *ctx, int i, const redisReply *r)
{
    char buf[300];
    const char *addr;

    if (r->type != REDIS_REPLY_ERROR)
        return RLK_OK;
    /* A cluster's seed client's address is its list of seeds: name the node instead. */
    if (!c->url.is_cluster || !(addr = rlk_transport_addr(ctx, buf, sizeof buf)))
        addr = c->addr;
    if (i == 0 && c->url.password)
        return rlk_set_error(c, RLK_ERR_AUTH, "auth %s: %.*s", addr, (int)r->len, r->str);
    return rlk_set_error(c, RLK_ERR_AUTH, "select %d on %s: %.*s%s", c->url.db, addr,
                         (int)r->len, r->str, rlk_conn_select_why(c, r->str));
}

/* AUTH and SELECT on a new blocking connection, one round trip each. */
static int rlk_conn_setup(rlk_client *c, redisContext *ctx)
{
    const char *argv[3];
    size_t lens[3];
    char db[16];
    int argc, rc = RLK_OK;
    redisReply *r;

    for (int i = 0; rc == RLK_OK && (argc = rlk_conn_setup_cmd(c, i, argv, lens, db)) > 0; i++) {
        rc = rlk_conn_command(c, ctx, argv[0][0] == 'A' ? "auth" : "select", argc, argv, lens,
                              &r, NULL);
        if (rc != RLK_OK)
            break;
        rc = rlk_conn_check_setup_reply(c, ctx, i, r);
        freeReplyObject(r);
    }
    return rc;
}

/* 1 when this thread's latest open failed in the connect itself (rlk_conn_dial_failed). */
static _Thread_local int rlk_tl_dial_failed;

int rlk_conn_dial_failed(void)
{
    int failed = rlk_tl_dial_failed;

    rlk_tl_dial_failed = 0;
    return failed;
}

int rlk_conn_open(rlk_client *c, redisContext **out)
{
    *out = NULL;
    rlk_tl_dial_failed = 0;
    if (c->fatal)
        return rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
    return c->topo->open(c, out);   /* where: the topology's choice */
}

int rlk_conn_open_to(rlk_client *c, const char *host, int port, redisContext **out)
{
    redisContext *ctx;
    struct timeval tv = c->connect_tv;
    char why[RLK_ERRSTR_MAX];
    int rc;

    *out = NULL;        /* c is not fatal: rlk_conn_open checked */
    if (rlk_time_limit_tv(c->connect_tv, &tv) < 0) {    /* a wait's limit cuts it */
        tv.tv_sec = 0;                                  /* passed: one last quick try */
        tv.tv_usec = 1000;
    }
    rc = rlk_transport_dial(c, host, port, tv, &ctx, why, sizeof why);
    rlk_tl_dial_failed = ctx ? ctx->err != 0 : rc != RLK_ERR_NOMEM;
    if (!ctx)
        return rlk_set_error(c, rc, "connect %s: %s", c->addr, why);
    tv = c->command_tv;
    (void)rlk_time_limit_tv(c->command_tv, &tv);    /* a wait's limit cuts AUTH and SELECT too */
    if (ctx->err || redisSetTimeout(ctx, tv) != REDIS_OK)
        rc = rlk_set_ctx_error(c, ctx, "connect");
    else
        rc = rlk_conn_setup(c, ctx);
    if (rc != RLK_OK) {
        rlk_transport_free(ctx);
        return rc;
    }
    atomic_store(&c->native_caps, 0);   /* a new connection: ask again what the server has */
    *out = ctx;
    return RLK_OK;
}

/* ---------------------------------------------------------------- identity */

/* Appends CLIENT SETINFO LIB-NAME rlk and LIB-VER <version> to ctx's output
 * (Redis 7.2+, Valkey 8); how many commands it appended (0 once a server
 * refused them: Redis 7.0 has no SETINFO, an ACL user may lack
 * client|setinfo). */
static int rlk_conn_append_setinfo(rlk_client *c, redisContext *ctx)
{
    const char *lib[4] = {"CLIENT", "SETINFO", "LIB-NAME", "rlk"};
    const char *ver[4] = {"CLIENT", "SETINFO", "LIB-VER", RLK_VERSION};

    if (c->counters && atomic_load_explicit(&c->counters->no_setinfo, memory_order_relaxed))
        return 0;
    if (redisAppendCommandArgv(ctx, 4, lib, NULL) != REDIS_OK)
        return 0;
    return redisAppendCommandArgv(ctx, 4, ver, NULL) == REDIS_OK ? 2 : 1;
}

int rlk_conn_name_id(rlk_client *c, redisContext *ctx, const char *what, const char *name,
                     long long *id)
{
    const char *setname[3] = {"CLIENT", "SETNAME", name}, *idv[2] = {"CLIENT", "ID"};
    redisReply *r[4] = {NULL, NULL, NULL, NULL};
    int n = id ? 2 : 1, rc = RLK_OK;
    rlk_sigpipe_guard g;

    if (redisAppendCommandArgv(ctx, 3, setname, NULL) != REDIS_OK ||
        (id && redisAppendCommandArgv(ctx, 2, idv, NULL) != REDIS_OK))
        return rlk_set_ctx_error(c, ctx, what);
    n += rlk_conn_append_setinfo(c, ctx);   /* lib-name, lib-ver: same round trip */
    rlk_sigpipe_enter(&g);
    for (int i = 0; i < n && rc == RLK_OK; i++)
        rc = rlk_conn_read(c, ctx, what, &r[i]);
    rlk_sigpipe_leave(&g, rc != RLK_OK);
    if (rc == RLK_OK && id && r[0]->type == REDIS_REPLY_STATUS &&
        r[1]->type == REDIS_REPLY_INTEGER && r[1]->integer > 0)
        *id = r[1]->integer;
    /* An error reply (ACL, an old server) is not fatal; a refused SETINFO is not asked again. */
    for (int i = id ? 2 : 1; rc == RLK_OK && i < n; i++)
        if (r[i]->type == REDIS_REPLY_ERROR && c->counters)
            atomic_store_explicit(&c->counters->no_setinfo, 1, memory_order_relaxed);
    for (int i = 0; i < n; i++)
        freeReplyObject(r[i]);
    return rc;
}

int rlk_conn_setname(rlk_client *c, redisContext *ctx, const char *name)
{
    return rlk_conn_name_id(c, ctx, "CLIENT SETNAME", name, NULL);
}

int rlk_conn_usable(rlk_client *c, const redisContext *ctx)
{
    /* TLS too: the context's socket is the TCP one, so a server's close
     * (its close_notify, then end of file) shows in rlk_conn_alive's poll. */
    return rlk_conn_alive(ctx) && !(c->topo->stale && c->topo->stale(c, ctx));
}

/* ---------------------------------------------------------------- scripts */

int rlk_conn_check_load_reply(rlk_client *c, const rlk_script_info *s, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR)
        return rlk_set_error(c, rlk_reply_class(r, RLK_ERR_SERVER), "SCRIPT LOAD %s on %s: %.*s",
                             s->name, c->addr, (int)r->len, r->str);
    if (r->type != REDIS_REPLY_STRING)
        return rlk_set_error(c, RLK_ERR_PROTOCOL, "SCRIPT LOAD %s on %s: unexpected reply type %d",
                             s->name, c->addr, r->type);
    if (r->len != 40 || strncasecmp(r->str, s->sha1, 40) != 0)
        return rlk_set_error(c, RLK_ERR_SHA,
                             "SCRIPT LOAD %s on %s: the server computed SHA-1 %.*s, the build has %s",
                             s->name, c->addr, (int)r->len, r->str, s->sha1);
    return RLK_OK;
}

static void rlk_conn_load_argv(const rlk_script_info *s, const char *argv[3], size_t lens[3])
{
    argv[0] = "SCRIPT";
    argv[1] = "LOAD";
    argv[2] = s->body;
    lens[0] = 6;
    lens[1] = 4;
    lens[2] = s->body_len;
}

/* SCRIPT LOAD of the n scripts at s in one pipelined round trip; RLK_ERR_SHA
 * names the first one whose SHA-1 the server computes otherwise. */
static int rlk_conn_load(rlk_client *c, redisContext *ctx, const rlk_script_info *s, size_t n)
{
    rlk_sigpipe_guard g;
    int rc = RLK_OK, io = RLK_OK;

    for (size_t i = 0; i < n; i++) {
        const char *argv[3];
        size_t lens[3];

        rlk_conn_load_argv(&s[i], argv, lens);
        if (ctx->err || redisAppendCommandArgv(ctx, 3, argv, lens) != REDIS_OK)
            return rlk_set_ctx_error(c, ctx, "SCRIPT LOAD");
    }
    rlk_tl_round_trips++;
    rlk_sigpipe_enter(&g);
    /* Read every reply, even after a bad one, so the connection stays in step. */
    for (size_t i = 0; io == RLK_OK && i < n; i++) {
        redisReply *r = NULL;

        io = rlk_conn_read(c, ctx, "SCRIPT LOAD", &r);
        if (io == RLK_OK && rc == RLK_OK)
            rc = rlk_conn_check_load_reply(c, &s[i], r);
        freeReplyObject(r);
    }
    rc = io != RLK_OK ? io : rc;
    rlk_sigpipe_leave(&g, rc != RLK_OK);
    return rc;
}

int rlk_conn_load_all(rlk_client *c, redisContext *ctx)
{
    return rlk_conn_load(c, ctx, c->scripts.items, c->scripts.count);
}

/* The call's argv: "EVALSHA" sha1 (or "FCALL" / "FCALL_RO" function: functions.h)
 * numkeys keys... args...: in the struct itself up to RLK_EVALSHA_INLINE words
 * (every lock call's), on the heap past that. */
#define RLK_EVALSHA_INLINE 24

typedef struct rlk_evalsha_argv {
    const char **argv;
    size_t *lens;
    int argc;
    char numkeys[16];
    const char *argv_in[RLK_EVALSHA_INLINE];
    size_t lens_in[RLK_EVALSHA_INLINE];
} rlk_evalsha_argv;

static void rlk_evalsha_free(rlk_evalsha_argv *e)
{
    if (e->argv != e->argv_in)
        free(e->argv);
    if (e->lens != e->lens_in)
        free(e->lens);
    e->argv = NULL;
    e->lens = NULL;
}

static int rlk_evalsha_build(rlk_evalsha_argv *e, const rlk_fn_head *h,
                             int nkeys, const char *const *keys, const size_t *keylens,
                             int nargs, const char *const *args, const size_t *arglens)
{
    int n = 0;

    e->argc = 3 + nkeys + nargs;
    if (e->argc <= RLK_EVALSHA_INLINE) {
        e->argv = e->argv_in;
        e->lens = e->lens_in;
    } else {
        e->argv = malloc((size_t)e->argc * sizeof *e->argv);
        e->lens = malloc((size_t)e->argc * sizeof *e->lens);
        if (!e->argv || !e->lens)
            return RLK_ERR_NOMEM;
    }
    e->argv[n] = h->argv[0];
    e->lens[n++] = h->lens[0];
    e->argv[n] = h->argv[1];
    e->lens[n++] = h->lens[1];
    e->argv[n] = e->numkeys;
    e->lens[n++] = (size_t)(rlk_resp_uint(e->numkeys, (size_t)nkeys) - e->numkeys);
    for (int i = 0; i < nkeys; i++, n++) {
        e->argv[n] = keys[i];
        e->lens[n] = keylens ? keylens[i] : strlen(keys[i]);
    }
    for (int i = 0; i < nargs; i++, n++) {
        e->argv[n] = args[i];
        e->lens[n] = arglens ? arglens[i] : strlen(args[i]);
    }
    return RLK_OK;
}

int rlk_conn_format_script(rlk_client *c, const rlk_script_info *s,
                           int nkeys, const char *const *keys, const size_t *keylens,
                           int nargs, const char *const *args, const size_t *arglens,
                           char *buf, size_t cap, char **cmd)
{
    rlk_evalsha_argv e = {0};
    rlk_fn_head h;
    size_t need;
    int len = -1;

    *cmd = NULL;
    rlk_fn_head_known(c, s, &h);    /* EVALSHA, or FCALL once the mode is decided so */
    if (rlk_evalsha_build(&e, &h, nkeys, keys, keylens, nargs, args, arglens) == RLK_OK) {
        need = rlk_conn_format_argv(buf, cap, e.argc, e.argv, e.lens);
        if (buf && need <= cap)
            *cmd = buf;
        else if ((*cmd = malloc(need)))
            rlk_conn_format_argv(*cmd, need, e.argc, e.argv, e.lens);
        if (*cmd && need <= INT_MAX)
            len = (int)need;
        else if (*cmd != buf)
            free(*cmd), *cmd = NULL;
    }
    rlk_evalsha_free(&e);
    return len;
}

/* ---------------------------------------------------------------- the call mode (functions.h) */

/* FCALL_RO rlk_version 0 on ctx: RLK_FN_FCALL when the server's library rlk was
 * built from exactly c's scripts, else RLK_FN_EVALSHA with the reason in why;
 * a negative rlk code after a connection error (recorded). */
static int rlk_conn_fn_probe(rlk_client *c, redisContext *ctx, char *why, size_t len)
{
    const char *argv[3] = {"FCALL_RO", "rlk_version", "0"};
    static const size_t lens[3] = {8, 11, 1};
    redisReply *r = NULL;
    char mine[41];
    int rc = rlk_conn_command(c, ctx, "FCALL_RO rlk_version", 3, argv, lens, &r, NULL);

    if (rc != RLK_OK)
        return -rc;
    rlk_script_set_id(&c->scripts, mine);
    rc = RLK_FN_EVALSHA;
    if (r->type == REDIS_REPLY_ERROR) {
        snprintf(why, len, "FCALL_RO rlk_version: %.*s", (int)r->len, r->str);
    } else if (r->type != REDIS_REPLY_ARRAY || r->elements < 3 ||
               r->element[2]->type != REDIS_REPLY_STRING || r->element[1]->type != REDIS_REPLY_STRING) {
        snprintf(why, len, "FCALL_RO rlk_version: an unexpected reply");
    } else if (r->element[2]->len != 40 || memcmp(r->element[2]->str, mine, 40) != 0) {
        snprintf(why, len, "the server's library rlk (release %.31s) holds scripts %.40s, this "
                 "client's scripts are %s", r->element[1]->str, r->element[2]->str, mine);
    } else {
        rc = RLK_FN_FCALL;
    }
    freeReplyObject(r);
    return rc;
}

static int rlk_conn_fn_refused(rlk_client *c, const char *why)
{
    return rlk_set_error(c, RLK_ERR_SHA, "functions on %s: %s (rlk functions load [--replace] "
                         "loads this release's library)", c->addr, why);
}

int rlk_conn_fn_decide(rlk_client *c, redisContext *ctx)
{
    char why[256] = "";
    int got;

    if (c->functions == RLK_FUNCTIONS_OFF)
        return RLK_OK;
    got = rlk_conn_fn_probe(c, ctx, why, sizeof why);
    if (got < 0)
        return -got;
    if (c->functions == RLK_FUNCTIONS_ON && got != RLK_FN_FCALL)
        return rlk_conn_fn_refused(c, why);
    atomic_store(&c->fn_state, got);
    return RLK_OK;
}

/* How c calls s on ctx (asking the server first when c's mode is not known
 * yet, or is ON and the library was not there at the last look). */
static int rlk_conn_fn_head(rlk_client *c, redisContext *ctx, const rlk_script_info *s,
                            rlk_fn_head *h)
{
    int st = atomic_load(&c->fn_state), rc = RLK_OK;

    /* ON: until the library is there, each call asks. */
    if ((c->functions == RLK_FUNCTIONS_ON && st != RLK_FN_FCALL) ||
        (c->functions == RLK_FUNCTIONS_AUTO && st == RLK_FN_UNKNOWN))
        rc = rlk_conn_fn_decide(c, ctx);
    if (rc == RLK_OK)
        rlk_fn_head_known(c, s, h);
    return rc;
}

int rlk_conn_noscript_retry(const redisReply *r, int fcall, int retried)
{
    /* NOSCRIPT: the EVALSHA did not run. */
    return !fcall && !retried && r->type == REDIS_REPLY_ERROR &&
           rlk_first_word_is(r->str, r->len, "NOSCRIPT");
}

int rlk_conn_append_reload(redisContext *ctx, const rlk_script_info *s, const char *cmd,
                           size_t len)
{
    const char *argv[3];
    size_t lens[3];

    rlk_conn_load_argv(s, argv, lens);
    if (redisAppendCommandArgv(ctx, 3, argv, lens) != REDIS_OK ||
        redisAppendFormattedCommand(ctx, cmd, len) != REDIS_OK)
        return -1;
    return 0;
}

int rlk_conn_evalv(rlk_client *c, redisContext *ctx, const rlk_script_info *s,
                   int nkeys, const char *const *keys, const size_t *keylens,
                   int nargs, const char *const *args, const size_t *arglens,
                   redisReply **reply, int *written)
{
    rlk_evalsha_argv e;     /* its 400 bytes of arrays written only as far as used */
    rlk_write_hook hook = rlk_armed_hook;
    char wait_n[16], wait_ms[24], why[200];
    const char *wait_argv[3] = {"WAIT", wait_n, wait_ms};
    rlk_conn_tail wait = {3, wait_argv, NULL, NULL}, *tail = NULL;
    rlk_fn_head h;
    redisReply *r = NULL;
    int rc, w = 0, loaded = 0, asked = 0;

    e.argv = NULL;
    e.lens = NULL;
    rlk_conn_after_write(NULL, NULL);   /* this EVALSHA takes the armed hook */
    /* Replica acknowledgement: WAIT written behind the script, read after it. */
    if (rlk_conn_wait_arm(c, ctx, s, wait_n, wait_ms))
        tail = &wait;
    rc = rlk_conn_fn_head(c, ctx, s, &h);
    if (rc == RLK_OK && rlk_evalsha_build(&e, &h, nkeys, keys, keylens, nargs, args, arglens))
        rc = rlk_set_error(c, RLK_ERR_NOMEM, "%s: out of memory", s->name);
    for (int attempt = 0; rc == RLK_OK && attempt < 3; attempt++) {
        rc = rlk_conn_command_hooked(c, ctx, s->name, e.argc, e.argv, e.lens, &r, &w, &hook, tail);
        if (rc != RLK_OK)
            break;
        if (tail)
            rlk_conn_wait_take(ctx, tail);   /* the last attempt's WAIT is the one that tells */
        if (rlk_conn_noscript_retry(r, h.fcall, loaded)) {
            /* NOSCRIPT: the script did not run. Load it and try once more. */
            loaded = 1;
            RLK_CLIENT_COUNT(c, noscript_reloads);
            rc = rlk_conn_load(c, ctx, s, 1);
        } else if (h.fcall && !asked && rlk_fn_is_missing(r)) {
            /* No such function: it did not run. The library may be gone (functions.h):
             * ON fails with RLK_ERR_SHA, AUTO asks again and calls as told. */
            asked = 1;
            atomic_store(&c->fn_state, RLK_FN_UNKNOWN);
            if (c->functions == RLK_FUNCTIONS_ON) {
                snprintf(why, sizeof why, "FCALL %s: Function not found", h.fname);
                rc = rlk_conn_fn_refused(c, why);
            } else {
                rc = rlk_conn_fn_head(c, ctx, s, &h);
            }
            e.argv[0] = h.argv[0], e.lens[0] = h.lens[0];
            e.argv[1] = h.argv[1], e.lens[1] = h.lens[1];
        } else {
            break;
        }
        freeReplyObject(r);
        r = NULL;
        w = 0;
    }
    if (written)
        *written = w;
    if (rc == RLK_OK && r->type == REDIS_REPLY_ERROR) {
        rc = rlk_set_reply_error(c, r, NULL, RLK_ERR_SCRIPT);
        freeReplyObject(r);
        r = NULL;
    }
    *reply = r;     /* NULL unless RLK_OK */
    rlk_evalsha_free(&e);
    return rc;
}
