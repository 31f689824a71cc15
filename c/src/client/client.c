/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * client.c - the public client API: options, connect, free, and the calls
 * (load, verify, eval, command) that run through the pool.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/bundle.h"
#include "client/client.h"
#include "client/cluster.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/functions.h"
#include "client/pool.h"
#include "client/role.h"
#include "client/scripts.h"
#include "client/sentinel.h"
#include "client/tls.h"
#include "client/transport.h"
#include "client/url.h"

#define RLK_MAX_POOL 1024

static atomic_uint_fast64_t rlk_next_client_id;

void rlk_options_init(rlk_options *opts)
{
    memset(opts, 0, sizeof *opts);
}

/* ---------------------------------------------------------------- connect */

static struct timeval rlk_ms_to_tv(int ms)
{
    struct timeval tv;

    tv.tv_sec = ms / 1000;
    tv.tv_usec = (ms % 1000) * 1000;
    return tv;
}

static void rlk_client_defaults(rlk_client *c, const rlk_options *o)
{
    c->connect_timeout_ms = o->connect_timeout_ms > 0 ? o->connect_timeout_ms
                                                      : RLK_DEFAULT_CONNECT_TIMEOUT_MS;
    c->command_timeout_ms = o->command_timeout_ms > 0 ? o->command_timeout_ms
                                                      : RLK_DEFAULT_COMMAND_TIMEOUT_MS;
    c->connect_tv = rlk_ms_to_tv(c->connect_timeout_ms);
    c->command_tv = rlk_ms_to_tv(c->command_timeout_ms);
    c->pool_size = o->pool_size > 0 ? o->pool_size : RLK_DEFAULT_POOL_SIZE;
    if (c->pool_size > RLK_MAX_POOL)
        c->pool_size = RLK_MAX_POOL;
    c->watchdog_lease_ms = o->watchdog_lease_ms > 0 ? o->watchdog_lease_ms
                                                    : RLK_DEFAULT_WATCHDOG_LEASE_MS;
    c->lost_margin_ms = o->lost_margin_ms > 0 ? o->lost_margin_ms : 0;
    c->no_preload = o->no_preload != 0;
    c->min_replicas = o->min_replicas > 0 ? o->min_replicas : 0;
    c->min_replicas_timeout_ms = o->min_replicas_timeout_ms > 0 ? o->min_replicas_timeout_ms
                                                                : RLK_DEFAULT_MIN_REPLICAS_TIMEOUT_MS;
    c->functions = o->functions > 0 ? RLK_FUNCTIONS_ON
                   : o->functions < 0 ? RLK_FUNCTIONS_OFF : RLK_FUNCTIONS_AUTO;
    c->pubsub_opt = o->pubsub == RLK_PUBSUB_GLOBAL || o->pubsub == RLK_PUBSUB_SHARDED
                        ? o->pubsub : RLK_PUBSUB_AUTO;
}

/* The URL to parse: the options', else $RLK_URL, else the default. NULL (with
 * the reason in msg) when $RLK_URL is set but empty: an empty setting is a
 * mistake, not a request for 127.0.0.1:6379. */
static const char *rlk_pick_url(const rlk_options *o, char *msg, size_t len)
{
    const char *env;

    if (o->url)
        return o->url;
    env = getenv("RLK_URL");
    if (env && !*env) {
        snprintf(msg, len, "bad url: $RLK_URL is set but empty (unset it for %s)",
                 RLK_DEFAULT_URL);
        return NULL;
    }
    return env ? env : RLK_DEFAULT_URL;
}

/* The password of the options when the URL has none (redis://host or
 * redis://user@host); a user without any password is an error. */
static int rlk_client_password(rlk_client *c, const rlk_options *o, char *msg, size_t len)
{
    if (!c->url.password && o->password && *o->password) {
        c->url.password = strdup(o->password);
        if (!c->url.password)
            return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    }
    if (c->url.user && !c->url.password)
        return snprintf(msg, len, "bad url: a user needs a password (redis://user:password@host, "
                        "or rlk_options.password)"), RLK_ERR_URL;
    return RLK_OK;
}

/* Parses the URL, reads the script set and allocates the pool. On failure
 * returns the code with the message in msg. */
static int rlk_client_setup(rlk_client *c, const rlk_options *o, char *msg, size_t len)
{
    const char *url = rlk_pick_url(o, msg, len);
    int rc;

    if (!url)
        return RLK_ERR_URL;
    rc = rlk_url_parse(url, &c->url, msg, len);
    if (rc != RLK_OK)
        return rc;
    if ((rc = rlk_client_password(c, o, msg, len)) != RLK_OK)
        return rc;
    if ((rc = rlk_transport_setup(c, o, msg, len)) != RLK_OK)
        return rc;
    rlk_url_address(&c->url, c->addr, sizeof c->addr);
    c->url_masked = rlk_url_masked(&c->url);
    if (!c->url_masked)
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    if (c->url.is_cluster)  /* for messages: "cluster 127.0.0.1:7000,..." */
        snprintf(c->addr, sizeof c->addr, "cluster %s", strrchr(c->url_masked, '@')
                 ? strrchr(c->url_masked, '@') + 1 : strstr(c->url_masked, "://") + 3);
    if (o->bundle_dir)
        rc = rlk_bundle_read(o->bundle_dir, &c->scripts, msg, len);
    else
        rlk_script_set_embedded(&c->scripts);
    if (rc != RLK_OK)
        return rc;
    c->slots = calloc((size_t)c->pool_size, sizeof *c->slots);
    if (!c->slots)
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    return c->url.is_cluster ? rlk_cluster_setup(c, msg, len) : RLK_OK;
}

/* Opens the first pool connection, decides the call mode and loads the scripts
 * (not in FCALL mode). */
static void rlk_client_first_connect(rlk_client *c)
{
    rlk_slot *slot;
    int rc;

    if (c->cluster) {
        (void)rlk_cluster_connect(c);   /* the map, the scripts on every master */
        return;
    }
    slot = rlk_pool_checkout(c);
    rc = rlk_slot_ready(c, slot);

    /* FCALL or EVALSHA (functions.h); without a preload the first call decides, within
     * that call's time limit (a connect stays free of round trips). */
    if (rc == RLK_OK && !c->no_preload)
        rc = rlk_fn_decide(c, slot->ctx);
    if (rc == RLK_OK && !c->no_preload && !rlk_fn_uses_fcall(c))
        rc = rlk_conn_load_all(c, slot->ctx);
    if (rc != RLK_OK && slot->ctx && slot->ctx->err)
        rlk_slot_drop(slot);
    rlk_pool_checkin(c, slot);
}

rlk_client *rlk_connect(const rlk_options *opts)
{
    rlk_options defaults;
    rlk_client *c;
    int rc;

    if (!opts) {
        rlk_options_init(&defaults);
        opts = &defaults;
    }
    c = calloc(1, sizeof *c);
    if (!c)
        return NULL;
    c->id = atomic_fetch_add(&rlk_next_client_id, 1) + 1;
    c->counters = &c->own_counters;
    rlk_client_defaults(c, opts);
    pthread_mutex_init(&c->pool_mu, NULL);
    pthread_cond_init(&c->pool_cv, NULL);
    rlk_role_init(&c->role);
    rc = rlk_client_setup(c, opts, c->fatal_msg, sizeof c->fatal_msg);
    if (rc != RLK_OK) {
        c->fatal = rc;
        rlk_set_error(c, rc, "%s", c->fatal_msg);
        return c;
    }
    if (c->url.is_sentinel && rlk_sentinel_open(c, opts->sentinel_password) == RLK_ERR_NOMEM &&
        !c->sentinel) {
        c->fatal = RLK_ERR_NOMEM;
        snprintf(c->fatal_msg, sizeof c->fatal_msg, "out of memory");
        return c;
    }
    if (c->url.is_sentinel && rlk_sentinel_follow(c) != RLK_OK)
        return c;
    rlk_client_first_connect(c);
    (void)rlk_client_pubsub(c);
    return c;
}

int rlk_client_pubsub(rlk_client *c)
{
    int mode = atomic_load(&c->pubsub), major;

    if (mode)
        return mode;
    if (c->pubsub_opt != RLK_PUBSUB_AUTO)
        mode = c->pubsub_opt;
    else if (!c->cluster)
        mode = RLK_PUBSUB_GLOBAL;     /* one server (or sentinel): Redisson's AUTO does the same */
    else if (c->fatal || (major = rlk_cluster_redis_major(c)) == 0)
        return RLK_PUBSUB_GLOBAL;     /* not known yet: ask again next time */
    else
        mode = major >= 7 ? RLK_PUBSUB_SHARDED : RLK_PUBSUB_GLOBAL;
    atomic_store(&c->pubsub, mode);
    return mode;
}

const char *rlk_publish_arg(rlk_client *c)
{
    return rlk_client_pubsub(c) == RLK_PUBSUB_SHARDED ? "spublish" : "publish";
}

rlk_client *rlk_connect_url(const char *url)
{
    rlk_options o;

    rlk_options_init(&o);
    o.url = url;
    return rlk_connect(&o);
}

void rlk_free(rlk_client *c)
{
    if (!c)
        return;
    if (c->runtime_free)
        c->runtime_free(c);
    rlk_cluster_free(c);
    for (int i = 0; c->slots && i < c->pool_size; i++)
        if (c->slots[i].ctx)
            redisFree(c->slots[i].ctx);
    free(c->slots);
    rlk_sentinel_free(c->sentinel);
    if (c->tls_owned)
        rlk_tls_free(c->tls);   /* after every connection of the client is closed */
    rlk_role_destroy(&c->role);
    rlk_script_set_free(&c->scripts);
    rlk_url_free(&c->url);
    free(c->url_masked);
    pthread_cond_destroy(&c->pool_cv);
    pthread_mutex_destroy(&c->pool_mu);
    free(c);
}

const char *rlk_client_url(const rlk_client *c)
{
    if (!c)
        return "";
    return c->url_masked ? c->url_masked : "(invalid url)";
}

void rlk_client_server(rlk_client *c, char *buf, size_t len, unsigned long long *switches)
{
    if (switches)
        *switches = c ? rlk_sentinel_switches(c, NULL) : 0;
    if (len)
        buf[0] = '\0';
    if (c)
        rlk_sentinel_address(c, buf, len);
}

/* ---------------------------------------------------------------- load, verify */

static int rlk_op_load_all(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                           int *written)
{
    (void)arg;
    (void)reply;
    *written = 1;
    return rlk_conn_load_all(c, ctx);
}

int rlk_load_scripts(rlk_client *c)
{
    redisReply *unused;

    if (!c)
        return RLK_ERR_ARG;
    if (c->cluster && !c->fatal) {
        rlk_client *m[RLK_CLUSTER_MAX_NODES];
        int n = rlk_cluster_masters(c, m, RLK_CLUSTER_MAX_NODES), rc;

        for (int i = 0; i < n; i++)
            if ((rc = rlk_load_scripts(m[i])) != RLK_OK)
                return rlk_set_error(c, rc, "%s", rlk_errstr(m[i]));
        return n ? RLK_OK : rlk_set_error(c, RLK_ERR_IO, "cluster: no master known");
    }
    return rlk_pool_run(c, rlk_op_load_all, NULL, 1, &unused);
}

static int rlk_op_exists(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                         int *written)
{
    size_t n = c->scripts.count;
    const char **argv = malloc((n + 2) * sizeof *argv);
    size_t *lens = malloc((n + 2) * sizeof *lens);
    int rc;

    (void)arg;
    if (!argv || !lens) {
        free(argv);
        free(lens);
        return rlk_set_error(c, RLK_ERR_NOMEM, "SCRIPT EXISTS: out of memory");
    }
    argv[0] = "SCRIPT";
    lens[0] = 6;
    argv[1] = "EXISTS";
    lens[1] = 6;
    for (size_t i = 0; i < n; i++) {
        argv[i + 2] = c->scripts.items[i].sha1;
        lens[i + 2] = 40;
    }
    rc = rlk_conn_command(c, ctx, "SCRIPT EXISTS", (int)n + 2, argv, lens, reply, written);
    free(argv);
    free(lens);
    return rc;
}

static int rlk_exists_result(rlk_client *c, const redisReply *r, int *present)
{
    if (r->type == REDIS_REPLY_ERROR)
        return rlk_set_reply_error(c, r, "SCRIPT EXISTS", RLK_ERR_SERVER);
    if (r->type != REDIS_REPLY_ARRAY || r->elements != c->scripts.count)
        return rlk_set_error(c, RLK_ERR_PROTOCOL, "SCRIPT EXISTS %s: unexpected reply", c->addr);
    for (size_t i = 0; i < r->elements; i++) {
        if (r->element[i]->type != REDIS_REPLY_INTEGER)
            return rlk_set_error(c, RLK_ERR_PROTOCOL, "SCRIPT EXISTS %s: unexpected reply",
                                 c->addr);
        present[i] = r->element[i]->integer == 1;
    }
    return RLK_OK;
}

int rlk_verify_scripts(rlk_client *c, int *present)
{
    redisReply *r;
    int rc;

    if (!c)
        return RLK_ERR_ARG;
    if (!present)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_verify_scripts: present is NULL");
    if (c->scripts.count == 0 && !c->fatal)
        return RLK_OK;
    if (c->cluster && !c->fatal)
        return rlk_cluster_verify(c, present);
    rc = rlk_pool_run(c, rlk_op_exists, NULL, 1, &r);
    if (rc != RLK_OK)
        return rc;
    rc = rlk_exists_result(c, r, present);
    freeReplyObject(r);
    return rc;
}

/* ---------------------------------------------------------------- eval */

typedef struct rlk_eval_call {
    const rlk_script_info *script;
    int nkeys, nargs;
    const char *const *keys, *const *args;
    const size_t *keylens, *arglens;
} rlk_eval_call;

static int rlk_op_eval(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                       int *written)
{
    const rlk_eval_call *e = arg;

    return rlk_conn_evalv(c, ctx, e->script, e->nkeys, e->keys, e->keylens, e->nargs, e->args,
                          e->arglens, reply, written);
}

static int rlk_check_strings(int n, const char *const *v, const size_t *lens)
{
    if (n < 0 || (n > 0 && !v))
        return -1;
    for (int i = 0; i < n; i++)
        if (!v[i] && !(lens && lens[i] == 0))
            return -1;
    return 0;
}

int rlk_evalv(rlk_client *c, const char *name,
              int nkeys, const char *const *keys, const size_t *keylens,
              int nargs, const char *const *args, const size_t *arglens,
              redisReply **reply)
{
    rlk_eval_call e = {NULL, nkeys, nargs, keys, args, keylens, arglens};

    if (!c)
        return RLK_ERR_ARG;
    if (!reply || !name)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_evalv: name and reply must not be NULL");
    *reply = NULL;
    if (c->fatal)
        return rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
    if (rlk_check_strings(nkeys, keys, keylens) || rlk_check_strings(nargs, args, arglens) ||
        nkeys > 1000000 || nargs > 1000000)
        return rlk_set_error(c, RLK_ERR_ARG, "%s: bad keys or args (negative count or NULL)",
                             name);
    e.script = rlk_script_find(c, name);
    if (!e.script)
        return rlk_set_error(c, RLK_ERR_NOSUCHSCRIPT, "no script named '%s'", name);
    if (c->cluster) {   /* routed to the slot's master; a replica answers MOVED (cluster.h) */
        int slot = rlk_cluster_keys_slot(c, name, nkeys, keys, keylens);

        return slot < -1 ? rlk_err(c) : rlk_cluster_run(c, slot, rlk_op_eval, &e, 0, reply);
    }
    if (rlk_role_refuse(c, e.script) != RLK_OK)
        return RLK_ERR_READONLY;
    return rlk_pool_run(c, rlk_op_eval, &e, 0, reply);
}

int rlk_eval(rlk_client *c, const char *name,
             int nkeys, const char *const *keys,
             int nargs, const char *const *args,
             redisReply **reply)
{
    return rlk_evalv(c, name, nkeys, keys, NULL, nargs, args, NULL, reply);
}

/* ---------------------------------------------------------------- command */

typedef struct rlk_command_call {
    int argc;
    const char **argv;
    size_t *lens;
    char what[40];      /* the command name, printable, for messages */
} rlk_command_call;

static void rlk_command_name(char *out, size_t outlen, const char *s, size_t len)
{
    size_t j = 0;

    for (size_t i = 0; i < len && j + 1 < outlen; i++)
        out[j++] = (s[i] > ' ' && s[i] < 0x7f) ? s[i] : '?';
    out[j] = '\0';
}

static int rlk_op_command(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                          int *written)
{
    const rlk_command_call *cc = arg;
    int rc = rlk_conn_command(c, ctx, cc->what, cc->argc, cc->argv, cc->lens, reply, written);

    if (rc == RLK_OK && (*reply)->type == REDIS_REPLY_ERROR) {
        rc = rlk_set_reply_error(c, *reply, NULL, RLK_ERR_SERVER);
        freeReplyObject(*reply);
        *reply = NULL;
    }
    return rc;
}

int rlk_command(rlk_client *c, int argc, const char *const *argv,
                const size_t *argvlen, redisReply **reply)
{
    rlk_command_call cc = {argc, NULL, NULL, ""};
    int rc;

    if (!c)
        return RLK_ERR_ARG;
    if (!reply || argc <= 0 || rlk_check_strings(argc, argv, argvlen) || !argv[0])
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_command: bad argv");
    *reply = NULL;
    cc.argv = malloc((size_t)argc * sizeof *cc.argv);
    cc.lens = malloc((size_t)argc * sizeof *cc.lens);
    if (!cc.argv || !cc.lens) {
        rc = rlk_set_error(c, RLK_ERR_NOMEM, "rlk_command: out of memory");
    } else {
        for (int i = 0; i < argc; i++) {
            cc.argv[i] = argv[i] ? argv[i] : "";
            cc.lens[i] = argvlen ? argvlen[i] : strlen(argv[i]);
        }
        rlk_command_name(cc.what, sizeof cc.what, cc.argv[0], cc.lens[0]);
        rc = c->cluster ? rlk_cluster_run(c, rlk_cluster_command_slot(argc, cc.argv, cc.lens),
                                          rlk_op_command, &cc, 0, reply)
                        : rlk_pool_run(c, rlk_op_command, &cc, 0, reply);
    }
    free(cc.argv);
    free(cc.lens);
    return rc;
}
