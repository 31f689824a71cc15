/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * native.c - see native.h: the token lock on the server's compare-and-set
 * commands, with the token scripts' replies and errors.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/client_t.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/native.h"
#include "client/topo.h"

enum { NAT_ACQUIRE, NAT_EXTEND, NAT_RELEASE };

/* How often a reply that a concurrent change made meaningless (the holder
 * left between SET and PTTL, the key's type changed between a WRONGTYPE and
 * TYPE) is asked again before giving up. */
#define NAT_RACE_TRIES 4

/* ---------------------------------------------------------------- detection */

static int nat_word(const redisReply *r, const char *w)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) &&
           r->len == strlen(w) && strncasecmp(r->str, w, r->len) == 0;
}

static int nat_aggregate(const redisReply *r)
{
#ifdef REDIS_REPLY_MAP
    if (r->type == REDIS_REPLY_MAP)
        return 1;
#endif
    return r->type == REDIS_REPLY_ARRAY;
}

/* Whether the docs tree r names IFEQ as a token (an argument's "token"). */
static int nat_has_ifeq(const redisReply *r, int depth)
{
    if (!r || depth > 16 || !nat_aggregate(r))
        return 0;
    for (size_t i = 0; i < r->elements; i++) {
        if (i + 1 < r->elements && nat_word(r->element[i], "token") &&
            nat_word(r->element[i + 1], "IFEQ"))
            return 1;
        if (nat_has_ifeq(r->element[i], depth + 1))
            return 1;
    }
    return 0;
}

int rlk_native_parse_docs(const redisReply *r)
{
    int caps = 0;

    if (!r || !nat_aggregate(r))
        return 0;
    for (size_t i = 0; i + 1 < r->elements; i += 2) {
        const redisReply *name = r->element[i], *docs = r->element[i + 1];

        if (nat_word(name, "set") && nat_has_ifeq(docs, 0))
            caps |= RLK_NATIVE_SETIFEQ;
        else if (nat_word(name, "delifeq"))
            caps |= RLK_NATIVE_DELIFEQ;
        else if (nat_word(name, "delex") && nat_has_ifeq(docs, 0))
            caps |= RLK_NATIVE_DELEX;
    }
    return caps;
}

/* What is asked of a server: the docs of the commands the token lock may use. */
const char *rlk_native_docs_argv[5] = {"COMMAND", "DOCS", "SET", "DELIFEQ", "DELEX"};
const size_t rlk_native_docs_lens[5] = {7, 4, 3, 7, 5};

/* The cached answer for c, asking on ctx when there is none. A refused
 * COMMAND DOCS (an old server, an ACL user without it) counts as no native
 * command. */
static int nat_detect(rlk_client *c, redisContext *ctx, int *caps)
{
    redisReply *r = NULL;
    int known = atomic_load(&c->native_caps), rc;

    if (known & RLK_NATIVE_KNOWN) {
        *caps = known & ~RLK_NATIVE_KNOWN;
        return RLK_OK;
    }
    rc = rlk_conn_command(c, ctx, "command docs", 5, rlk_native_docs_argv, rlk_native_docs_lens,
                          &r, NULL);
    if (rc != RLK_OK)
        return rc;
    rlk_native_store_docs(c, r);
    *caps = atomic_load(&c->native_caps) & ~RLK_NATIVE_KNOWN;
    freeReplyObject(r);
    return RLK_OK;
}

/* ---------------------------------------------------------------- the calls */

typedef struct nat_call {
    const rlk_script_info *s;
    int op;
    int nkeys, nargs;
    const char *const *keys, *const *args;
    const size_t *keylens, *arglens;
} nat_call;

static size_t nat_len(const char *const *v, const size_t *lens, int i)
{
    return lens ? lens[i] : strlen(v[i]);
}

/* is_lease (scripts/lib/is_lease.lua): a decimal integer in 1..10^12, no
 * sign, no leading zero. */
static int nat_is_lease(const char *s, size_t n)
{
    if (n < 1 || n > 13 || s[0] < '1' || s[0] > '9')
        return 0;
    for (size_t i = 1; i < n; i++)
        if (s[i] < '0' || s[i] > '9')
            return 0;
    return n < 13 || (n == 13 && memcmp(s, "1000000000000", 13) == 0);
}

/* The scripts' argument checks, in their order: NULL when k passes them,
 * else the error the script replies. */
static const char *nat_args_refusal(const nat_call *k)
{
    int want = k->op == NAT_RELEASE ? 1 : 2;
    size_t tlen;

    if (k->nkeys != 1 || k->nargs != want)
        return want == 1 ? "RLK_BADARG expected 1 key and 1 argument"
                         : "RLK_BADARG expected 1 key and 2 arguments";
    tlen = nat_len(k->args, k->arglens, 0);
    if (tlen < 1 || tlen > 1024)
        return "RLK_BADTOKEN token must be 1..1024 bytes";
    if (want == 2 && !nat_is_lease(k->args[1], nat_len(k->args, k->arglens, 1)))
        return "RLK_BADLEASE lease_ms must be an integer in 1..1000000000000";
    return NULL;
}

/* The native command of an extend or a release (k's arguments checked) by
 * what the server has: SET IFEQ PX, DELIFEQ, or DELEX IFEQ. Its argc, 0 when
 * the server has none for k. */
static int nat_compare_argv(const nat_call *k, int caps, const char *argv[7], size_t lens[7])
{
    size_t klen = nat_len(k->keys, k->keylens, 0), tlen = nat_len(k->args, k->arglens, 0);
    int argc = 0;

#define NAT_ARG(s, n) (argv[argc] = (s), lens[argc++] = (n))
    if (k->op == NAT_EXTEND && (caps & RLK_NATIVE_SETIFEQ)) {
        NAT_ARG("SET", 3), NAT_ARG(k->keys[0], klen), NAT_ARG(k->args[0], tlen);
        NAT_ARG("IFEQ", 4), NAT_ARG(k->args[0], tlen), NAT_ARG("PX", 2);
        NAT_ARG(k->args[1], nat_len(k->args, k->arglens, 1));
    } else if (k->op == NAT_RELEASE && (caps & RLK_NATIVE_DELIFEQ)) {
        NAT_ARG("DELIFEQ", 7), NAT_ARG(k->keys[0], klen), NAT_ARG(k->args[0], tlen);
    } else if (k->op == NAT_RELEASE && (caps & RLK_NATIVE_DELEX)) {
        NAT_ARG("DELEX", 5), NAT_ARG(k->keys[0], klen), NAT_ARG("IFEQ", 4);
        NAT_ARG(k->args[0], tlen);
    }
#undef NAT_ARG
    return argc;
}

/* *out = the integer v, as the script replies it. */
static int nat_reply_integer(rlk_client *c, const char *what, long long v, redisReply **out)
{
    *out = calloc(1, sizeof **out);     /* freeReplyObject frees an integer with free() */
    if (!*out)
        return rlk_set_error(c, RLK_ERR_NOMEM, "%s: out of memory", what);
    (*out)->type = REDIS_REPLY_INTEGER;
    (*out)->integer = v;
    return RLK_OK;
}

/* After WRONGTYPE: the script's RLK_WRONGTYPE with the key's type. *again
 * is set when the key is a string or gone by now (asked again). */
static int nat_wrongtype(rlk_client *c, redisContext *ctx, const nat_call *k, int *again)
{
    const char *argv[2] = {"TYPE", k->keys[0]};
    size_t lens[2] = {4, nat_len(k->keys, k->keylens, 0)};
    redisReply *r = NULL;
    int rc = rlk_conn_command(c, ctx, "type", 2, argv, lens, &r, NULL);

    *again = 0;
    if (rc != RLK_OK)
        return rc;
    if (r->type != REDIS_REPLY_STATUS) {
        rc = rlk_set_reply_error(c, r, NULL, RLK_ERR_SERVER);
    } else if (nat_word(r, "none") || nat_word(r, "string")) {
        *again = 1;
    } else {
        /* the script's error: RLK_ERR_SCRIPT, as rlk_conn_evalv records it */
        rc = rlk_set_error(c, RLK_ERR_SCRIPT, "RLK_WRONGTYPE lock key holds a %.*s, not a string",
                           (int)(r->len > 64 ? 64 : r->len), r->str);
    }
    freeReplyObject(r);
    return rc;
}

/* An error reply to a native command: recorded (RLK_ERR_SERVER), r freed. */
static int nat_server_error(rlk_client *c, redisReply *r)
{
    int rc = rlk_set_reply_error(c, r, NULL, RLK_ERR_SERVER);

    freeReplyObject(r);
    return rc;
}

/* r is an error reply (1, r freed, *rc set) or not (0). A WRONGTYPE is
 * answered as the script would (nat_wrongtype: *again when the key is a
 * string or gone by now); any other error is recorded (RLK_ERR_SERVER). */
static int nat_refused(rlk_client *c, redisContext *ctx, const nat_call *k, redisReply *r,
                       int *again, int *rc)
{
    if (r->type != REDIS_REPLY_ERROR)
        return 0;
    *again = 0;
    if (r->len >= 9 && memcmp(r->str, "WRONGTYPE", 9) == 0) {
        freeReplyObject(r);
        *rc = nat_wrongtype(c, ctx, k, again);
    } else {
        *rc = nat_server_error(c, r);
    }
    return 1;
}

/* acquire: SET key token NX PX lease GET and PTTL key, pipelined (one round
 * trip): nil from the SET, it was free and holds the token now (the PTTL's
 * reply, the new lease, is dropped); a string, busy, and the PTTL's reply is
 * the holder's. */
static int nat_acquire(rlk_client *c, redisContext *ctx, const nat_call *k, redisReply **out,
                       int *written)
{
    const char *set[7] = {"SET", k->keys[0], k->args[0], "NX", "PX", k->args[1], "GET"};
    size_t setl[7] = {3, nat_len(k->keys, k->keylens, 0), nat_len(k->args, k->arglens, 0), 2,
                      2, nat_len(k->args, k->arglens, 1), 3};
    const char *pttl[2] = {"PTTL", k->keys[0]};
    size_t pttll[2] = {4, setl[1]};

    for (int tries = 0; tries < NAT_RACE_TRIES; tries++) {
        redisReply *r = NULL, *t = NULL;
        int again = 0, rc = rlk_conn_command_pair(c, ctx, k->s->name, 7, set, setl, 2, pttl,
                                                  pttll, &r, &t, written);

        if (rc != RLK_OK)
            return rc;
        if (r->type == REDIS_REPLY_NIL) {       /* it was free: now it holds token */
            freeReplyObject(t);
            *out = r;
            return RLK_OK;
        }
        if (r->type == REDIS_REPLY_ERROR) {     /* the PTTL's reply says nothing then */
            freeReplyObject(t);
            if (nat_refused(c, ctx, k, r, &again, &rc) && (rc != RLK_OK || !again))
                return rc;
            continue;                           /* the key changed type: again */
        }
        freeReplyObject(r);                     /* busy: the holder's PTTL */
        if (!t)
            return rlk_set_error(c, RLK_ERR_IO, "%s %s: the PTTL's reply was lost (%s)",
                                 k->s->name, c->addr, ctx->err ? ctx->errstr : "no reply");
        if (t->type == REDIS_REPLY_INTEGER && t->integer != -2) {
            *out = t;
            return RLK_OK;
        }
        if (t->type == REDIS_REPLY_ERROR)
            return nat_server_error(c, t);
        freeReplyObject(t);                     /* gone since the SET: try again */
    }
    /* The key came and went every time: not acquired, try again soon. */
    return nat_reply_integer(c, k->s->name, 1, out);
}

/* extend: SET key token IFEQ token PX lease (1 when set, 0 when not);
 * release: DELIFEQ key token or DELEX key IFEQ token (1 / 0). */
static int nat_compare(rlk_client *c, redisContext *ctx, const nat_call *k, int caps,
                       redisReply **out, int *written)
{
    const char *argv[7];
    size_t lens[7];
    int argc = nat_compare_argv(k, caps, argv, lens);

    for (int tries = 0; tries < NAT_RACE_TRIES; tries++) {
        redisReply *r = NULL;
        int w = 0, again = 0, rc = rlk_conn_command(c, ctx, k->s->name, argc, argv, lens, &r, &w);

        if (w && written)
            *written = 1;       /* any try's write counts */
        if (rc != RLK_OK)
            return rc;
        if (nat_refused(c, ctx, k, r, &again, &rc)) {
            if (rc != RLK_OK || !again)
                return rc;
            continue;                           /* the key changed type: again */
        }
        if (r->type == REDIS_REPLY_INTEGER) {   /* DELIFEQ, DELEX: already the script's */
            *out = r;
            return RLK_OK;
        }
        rc = nat_reply_integer(c, k->s->name, r->type == REDIS_REPLY_STATUS, out);  /* OK or nil */
        freeReplyObject(r);
        return rc;
    }
    /* The key turned from another type into a string or nothing and back,
     * every time: the token is not there. */
    return nat_reply_integer(c, k->s->name, 0, out);
}

/* The operation run on a pooled connection: ask what the server has (once),
 * then the native commands, or the script where there is none. */
static int nat_op(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply, int *written)
{
    const nat_call *k = arg;
    const char *refusal;
    int caps = 0, rc = nat_detect(c, ctx, &caps), have;

    if (rc != RLK_OK)
        return rc;
    have = caps != 0 &&
           (k->op == NAT_ACQUIRE || (k->op == NAT_EXTEND && (caps & RLK_NATIVE_SETIFEQ)) ||
            (k->op == NAT_RELEASE && (caps & (RLK_NATIVE_DELIFEQ | RLK_NATIVE_DELEX))));
    if (have && (refusal = nat_args_refusal(k)))
        return rlk_set_error(c, RLK_ERR_SCRIPT, "%s", refusal);  /* the script's, nothing sent */
    if (!have)
        return rlk_conn_evalv(c, ctx, k->s, k->nkeys, k->keys, k->keylens, k->nargs, k->args,
                              k->arglens, reply, written);
    if (k->op == NAT_ACQUIRE)
        return nat_acquire(c, ctx, k, reply, written);
    return nat_compare(c, ctx, k, caps, reply, written);
}

/* NAT_ACQUIRE, NAT_EXTEND or NAT_RELEASE by the script's name; -1 for another script. */
static int nat_which(const char *name)
{
    static const char *const ops[] = {"token/acquire", "token/extend", "token/release"};

    for (int op = NAT_ACQUIRE; op <= NAT_RELEASE; op++)
        if (strcmp(name, ops[op]) == 0)
            return op;
    return -1;
}

/* RLK_NATIVE=off (or 0, no): scripts only. Read at each call (a getenv
 * costs nothing next to a round trip), so a program may compare both. */
static int nat_switched_off(void)
{
    const char *e = getenv("RLK_NATIVE");

    return e && (strcmp(e, "off") == 0 || strcmp(e, "0") == 0 || strcmp(e, "no") == 0);
}

int rlk_native_wanted(const rlk_client *c, const rlk_script_info *s)
{
    /* A bundle directory's scripts are the user's choice: they run as given. */
    return s && nat_which(s->name) >= 0 && !c->scripts.owned && c->min_replicas == 0 &&
           !nat_switched_off();
}

int rlk_native_evalv(rlk_client *c, const rlk_script_info *s, int nkeys,
                     const char *const *keys, const size_t *keylens, int nargs,
                     const char *const *args, const size_t *arglens, redisReply **reply)
{
    nat_call k = {s, nat_which(s->name), nkeys, nargs, keys, args, keylens, arglens};
    int slot;

    *reply = NULL;
    slot = c->topo->script_slot ? c->topo->script_slot(c, s->name, nkeys, keys, keylens)
                                : RLK_TOPO_ANY_SLOT;
    if (slot == RLK_TOPO_BAD_SLOT)
        return rlk_err(c);
    return c->topo->run(c, slot, s, nat_op, &k, 0, reply);
}

/* ---------------------------------------------------------------- for pipelining callers */

void rlk_native_store_docs(rlk_client *c, const redisReply *r)
{
    int caps = r && r->type != REDIS_REPLY_ERROR ? rlk_native_parse_docs(r) : 0;

    atomic_store(&c->native_caps, RLK_NATIVE_KNOWN | caps);
}

int rlk_native_known(rlk_client *c)
{
    return (atomic_load(&c->native_caps) & RLK_NATIVE_KNOWN) != 0;
}

void rlk_native_forget(rlk_client *c)
{
    atomic_store(&c->native_caps, 0);
}

int rlk_native_format(rlk_client *c, const rlk_script_info *s, int nkeys,
                      const char *const *keys, int nargs, const char *const *args, char **cmd,
                      int *op)
{
    nat_call k = {s, s ? nat_which(s->name) : -1, nkeys, nargs, keys, args, NULL, NULL};
    int caps = atomic_load(&c->native_caps), argc;
    const char *argv[7];
    size_t lens[7];

    *cmd = NULL;
    if (!rlk_native_wanted(c, s) || !(caps & RLK_NATIVE_KNOWN))
        return -1;
    if (k.op == NAT_ACQUIRE || nat_args_refusal(&k) ||
        !(argc = nat_compare_argv(&k, caps, argv, lens)))
        return -1;
    *op = k.op;
    return redisFormatCommandArgv(cmd, argc, argv, lens);
}

redisReply *rlk_native_reply(int op, redisReply *r, redisReply *conv)
{
    if (r->type == REDIS_REPLY_ERROR || r->type == REDIS_REPLY_INTEGER)
        return r;
    memset(conv, 0, sizeof *conv);
    conv->type = REDIS_REPLY_INTEGER;
    conv->integer = op == NAT_EXTEND && r->type == REDIS_REPLY_STATUS;
    return conv;
}

/* ---------------------------------------------------------------- asked by rlk check */

static int nat_op_caps(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                       int *written)
{
    int caps = 0, rc = nat_detect(c, ctx, &caps);

    (void)written;
    *(int *)arg = caps;
    return rc != RLK_OK ? rc : nat_reply_integer(c, "command docs", caps, reply);
}

int rlk_native_caps(rlk_client *c, int *caps)
{
    redisReply *r = NULL;
    int rc;

    *caps = 0;
    atomic_store(&c->native_caps, 0);       /* ask now: rlk check reports the server as it is */
    rc = c->topo->run(c, RLK_TOPO_ANY_SLOT, NULL, nat_op_caps, caps, 1, &r);
    freeReplyObject(r);
    return rc;
}
