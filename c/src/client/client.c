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
#include "client/native.h"
#include "client/scripts.h"
#include "client/sentinel.h"
#include "client/sha1.h"
#include "client/tls.h"
#include "client/topo.h"
#include "client/transport.h"
#include "client/url.h"

#define RLK_MAX_POOL 1024

static atomic_uint_fast64_t rlk_next_client_id;

void rlk_options_init(rlk_options *opts)
{
    memset(opts, 0, sizeof *opts);
}

/* ---------------------------------------------------------------- connect */

/* The option when it is set (positive), else the default. */
#define RLK_OPT(v, def) ((v) > 0 ? (v) : (def))

static void rlk_client_defaults(rlk_client *c, const rlk_options *o)
{
    c->connect_timeout_ms = RLK_OPT(o->connect_timeout_ms, RLK_DEFAULT_CONNECT_TIMEOUT_MS);
    c->command_timeout_ms = RLK_OPT(o->command_timeout_ms, RLK_DEFAULT_COMMAND_TIMEOUT_MS);
    c->connect_tv = (struct timeval){c->connect_timeout_ms / 1000,
                                     (c->connect_timeout_ms % 1000) * 1000};
    c->command_tv = (struct timeval){c->command_timeout_ms / 1000,
                                     (c->command_timeout_ms % 1000) * 1000};
    c->pool_size = RLK_OPT(o->pool_size, RLK_DEFAULT_POOL_SIZE);
    if (c->pool_size > RLK_MAX_POOL)
        c->pool_size = RLK_MAX_POOL;
    c->watchdog_lease_ms = RLK_OPT(o->watchdog_lease_ms, RLK_DEFAULT_WATCHDOG_LEASE_MS);
    c->lost_margin_ms = RLK_OPT(o->lost_margin_ms, 0);
    c->no_preload = o->no_preload != 0;
    c->min_replicas = RLK_OPT(o->min_replicas, 0);
    c->min_replicas_timeout_ms = RLK_OPT(o->min_replicas_timeout_ms,
                                         RLK_DEFAULT_MIN_REPLICAS_TIMEOUT_MS);
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
    /* The options' password fills the URL's (redis://host, redis://user@host). */
    if (!c->url.password && o->password && *o->password &&
        !(c->url.password = strdup(o->password)))
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    if (c->url.user && !c->url.password)
        return snprintf(msg, len, "bad url: a user needs a password (redis://user:password@host, "
                        "or rlk_options.password)"), RLK_ERR_URL;
    if ((rc = rlk_transport_setup(c, o, msg, len)) != RLK_OK)
        return rc;
    rlk_url_address(&c->url, c->addr, sizeof c->addr);
    c->url_masked = rlk_url_masked(&c->url);
    if (!c->url_masked)
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    if (o->bundle_dir)
        rc = rlk_bundle_read(o->bundle_dir, &c->scripts, msg, len);
    else
        rlk_script_set_embedded(&c->scripts);
    if (rc != RLK_OK)
        return rc;
    c->slots = calloc((size_t)c->pool_size, sizeof *c->slots);
    if (!c->slots)
        return snprintf(msg, len, "out of memory"), RLK_ERR_NOMEM;
    /* The topology, once (topo.h): every layer above asks it from now on. */
    c->topo = c->url.is_cluster ? &rlk_topo_cluster
              : c->url.is_sentinel ? &rlk_topo_sentinel : &rlk_topo_standalone;
    return c->topo->setup ? c->topo->setup(c, o, msg, len) : RLK_OK;
}

rlk_client *rlk_client_prepare(const rlk_options *opts)
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
    c->topo = &rlk_topo_standalone;     /* until the URL says otherwise */
    rlk_client_defaults(c, opts);
    pthread_mutex_init(&c->pool_mu, NULL);
    pthread_cond_init(&c->pool_cv, NULL);
    rc = rlk_client_setup(c, opts, c->fatal_msg, sizeof c->fatal_msg);
    if (rc != RLK_OK)
        c->fatal = rc;
    return c;
}

rlk_client *rlk_connect(const rlk_options *opts)
{
    rlk_client *c = rlk_client_prepare(opts);

    if (!c)
        return NULL;
    if (c->fatal) {
        rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
        return c;
    }
    c->topo->connect(c);
    (void)rlk_client_pubsub(c);
    return c;
}

int rlk_client_pubsub(rlk_client *c)
{
    int mode = atomic_load(&c->pubsub);

    if (mode)
        return mode;
    if (c->pubsub_opt != RLK_PUBSUB_AUTO)
        mode = c->pubsub_opt;
    else if (!c->topo->pubsub_auto)
        mode = RLK_PUBSUB_GLOBAL;     /* one server (or sentinel): Redisson's AUTO does the same */
    else if (c->fatal || (mode = c->topo->pubsub_auto(c)) == 0)
        return RLK_PUBSUB_GLOBAL;     /* not known yet: ask again next time */
    atomic_store(&c->pubsub, mode);
    return mode;
}

int rlk_client_counts_exact(rlk_client *c)
{
    return rlk_topo_counts_exact(c, rlk_client_pubsub(c));
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

void rlk_client_free(rlk_client *c)
{
    if (!c)
        return;
    if (c->topo->free)
        c->topo->free(c);       /* a cluster's node clients, the sentinel follower */
    for (int i = 0; c->slots && i < c->pool_size; i++)
        rlk_transport_free(c->slots[i].ctx);
    free(c->slots);
    if (c->tls_owned)
        rlk_tls_free(c->tls);   /* after every connection of the client is closed */
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

/* Loads (present NULL) or verifies the scripts on every master: each one holds them all.
 * Several masters: present[i] when every one holds script i. */
static int rlk_scripts_on_masters(rlk_client *c, int *present)
{
    rlk_client *m[RLK_CLUSTER_MAX_NODES];
    int *one = NULL, n, rc = RLK_OK;

    if (c->fatal)
        return rlk_set_error(c, c->fatal, "%s", c->fatal_msg);
    n = c->topo->masters(c, m, RLK_CLUSTER_MAX_NODES);
    if (n == 1 && m[0] == c)
        return present ? rlk_topo_verify_one(c, present) : rlk_topo_load_one(c);
    if (present && !(one = calloc(c->scripts.count, sizeof *one)))
        return rlk_set_error(c, RLK_ERR_NOMEM, "SCRIPT EXISTS: out of memory");
    for (size_t i = 0; present && i < c->scripts.count; i++)
        present[i] = n > 0;
    for (int k = 0; k < n && rc == RLK_OK; k++) {
        if ((rc = present ? rlk_topo_verify_one(m[k], one) : rlk_topo_load_one(m[k])) != RLK_OK)
            rlk_set_error(c, rc, "%s", rlk_errstr(m[k]));
        for (size_t i = 0; present && rc == RLK_OK && i < c->scripts.count; i++)
            present[i] &= one[i];
    }
    free(one);
    if (rc == RLK_OK && n == 0)
        rc = rlk_set_error(c, RLK_ERR_IO, "cluster: no master known");
    return rc;
}

int rlk_load_scripts(rlk_client *c)
{
    return c ? rlk_scripts_on_masters(c, NULL) : RLK_ERR_ARG;
}

int rlk_verify_scripts(rlk_client *c, int *present)
{
    if (!c)
        return RLK_ERR_ARG;
    if (!present)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_verify_scripts: present is NULL");
    if (c->scripts.count == 0 && !c->fatal)
        return RLK_OK;
    return rlk_scripts_on_masters(c, present);
}

/* ---------------------------------------------------------------- eval */

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
    const rlk_script_info *s;

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
    s = rlk_script_find(c, name);
    if (!s)
        return rlk_set_error(c, RLK_ERR_NOSUCHSCRIPT, "no script named '%s'", name);
    if (rlk_native_wanted(c, s))   /* the token lock on the server's own commands */
        return rlk_native_evalv(c, s, nkeys, keys, keylens, nargs, args, arglens, reply);
    /* The topology routes it: the one server's pool, or the slot's master. */
    return rlk_topo_evalv(c, s, nkeys, keys, keylens, nargs, args, arglens, reply, -1);
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
        int slot = c->topo->command_slot ? c->topo->command_slot(argc, cc.argv, cc.lens)
                                         : RLK_TOPO_ANY_SLOT;

        rc = c->topo->run(c, slot, NULL, rlk_op_command, &cc, 0, reply);
    }
    free(cc.argv);
    free(cc.lens);
    return rc;
}

/* ---------------------------------------------------------------- the Functions library (functions.h) */

int rlk_load_functions(rlk_client *c, int replace)
{
    const rlk_library_info *lib = &rlk_embedded_library_info;
    const char *argv[4] = {"FUNCTION", "LOAD", replace ? "REPLACE" : lib->code, lib->code};
    size_t lens[4] = {8, 4, replace ? 7 : lib->code_len, lib->code_len};
    redisReply *r = NULL;
    int rc;

    if (!c)
        return RLK_ERR_ARG;
    rc = rlk_command(c, replace ? 4 : 3, argv, lens, &r);
    if (rc != RLK_OK)
        return rc;
    if (r->type != REDIS_REPLY_STRING || r->len != 3 || memcmp(r->str, "rlk", 3) != 0)
        rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "FUNCTION LOAD on %s: unexpected reply", c->addr);
    freeReplyObject(r);
    return rc;
}

/* FUNCTION LIST LIBRARYNAME rlk WITHCODE: *code_out is the entry's library_code (in r) or
 * NULL when the server has no library rlk; *nfunc its number of functions. */
static int rlk_fn_list(rlk_client *c, redisReply **r, const redisReply **code_out, int *nfunc)
{
    static const char *const argv[5] = {"FUNCTION", "LIST", "LIBRARYNAME", "rlk", "WITHCODE"};
    int rc = rlk_command(c, 5, argv, NULL, r);

    *code_out = NULL;
    *nfunc = 0;
    if (rc != RLK_OK)
        return rc;
    if ((*r)->type != REDIS_REPLY_ARRAY)
        return rlk_set_error(c, RLK_ERR_PROTOCOL, "FUNCTION LIST on %s: unexpected reply", c->addr);
    for (size_t i = 0; i < (*r)->elements; i++) {
        const redisReply *lib = (*r)->element[i];
        const redisReply *name = rlk_reply_field(lib, "library_name");
        const redisReply *code = rlk_reply_field(lib, "library_code");
        const redisReply *fns = rlk_reply_field(lib, "functions");

        if (name && name->type == REDIS_REPLY_STRING && name->len == 3 &&
            memcmp(name->str, "rlk", 3) == 0 && code && code->type == REDIS_REPLY_STRING) {
            *code_out = code;
            *nfunc = fns && fns->type == REDIS_REPLY_ARRAY ? (int)fns->elements : 0;
            return RLK_OK;
        }
    }
    return RLK_OK;
}

/* Copies the word after marker in code (up to a space, ':' or newline) into out. */
static void rlk_fn_word_after(const char *code, const char *marker, char *out, size_t outlen)
{
    const char *at = strstr(code, marker);

    at = at ? at + strlen(marker) : "";
    snprintf(out, outlen, "%.*s", (int)strcspn(at, " :\n"), at);
}

int rlk_verify_functions(rlk_client *c, rlk_functions_state *st)
{
    const rlk_library_info *lib = &rlk_embedded_library_info;
    const redisReply *code;
    redisReply *r = NULL;
    int rc;

    if (!c)
        return RLK_ERR_ARG;
    if (!st)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_verify_functions: st is NULL");
    memset(st, 0, sizeof *st);
    rc = rlk_fn_list(c, &r, &code, &st->functions);
    if (rc == RLK_OK && code) {
        st->present = 1;
        st->same_code = code->len == lib->code_len && memcmp(code->str, lib->code, code->len) == 0;
        rlk_sha1_hex(code->str, code->len, st->sha1);
        /* hiredis ends a string reply's text with a NUL */
        rlk_fn_word_after(code->str, "\n-- rlk ", st->release, sizeof st->release);
        rlk_fn_word_after(code->str, "\n-- scripts id: ", st->scripts_id, sizeof st->scripts_id);
    }
    freeReplyObject(r);
    return rc;
}

int rlk_server_functions_code(rlk_client *c, char **out, size_t *len)
{
    const redisReply *code;
    redisReply *r = NULL;
    int nfunc, rc;

    if (!c)
        return RLK_ERR_ARG;
    if (!out || !len)
        return rlk_set_error(c, RLK_ERR_ARG, "rlk_server_functions_code: NULL argument");
    *out = NULL;
    *len = 0;
    rc = rlk_fn_list(c, &r, &code, &nfunc);
    if (rc == RLK_OK && code) {
        *out = malloc(code->len + 1);
        if (!*out) {
            rc = rlk_set_error(c, RLK_ERR_NOMEM, "FUNCTION LIST: out of memory");
        } else {
            memcpy(*out, code->str, code->len);
            (*out)[code->len] = '\0';
            *len = code->len;
        }
    }
    freeReplyObject(r);
    return rc;
}
