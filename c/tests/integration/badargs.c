/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * badargs.c - bad arguments to a script must be refused and change nothing.
 * See badargs.h.
 */
#define _POSIX_C_SOURCE 200809L

#include "badargs.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BA_MAX 8
#define BA_ARGLEN 1100
#define BA_MAX_SNAP 16
#define BA_SETUP_LEASE "600000" /* differs from the call's lease: a PEXPIRE shows */
#define BA_CALL_LEASE "30000"
#define BA_CALLER "it:caller:1"
#define BA_OTHER "it:other:2"

/* What an argument is, as far as this test can tell from the header. */
enum ba_role {
    ROLE_UNKNOWN, /* ARGV this test cannot classify: the script is checked weakly */
    ROLE_DATA,    /* a key holding the script's data */
    ROLE_CHANNEL, /* a key that only names a pub/sub channel */
    ROLE_PREFIX,  /* a key-name prefix that must be KEYS[1]'s (rwlock timeout keys) */
    ROLE_LEASE,   /* ms; bad values -> RLK_BADLEASE */
    ROLE_INT,     /* "integer A..B"; bad values -> RLK_BADARG */
    ROLE_ID,      /* "1..1024 bytes"; empty / too long -> RLK_BADOWNER, _BADTOKEN or _BADARG */
    ROLE_PUBLISH  /* named publish: the publish command (lib/publish_cmd); others -> RLK_BADPUBLISH */
};
enum ba_state { STATE_FREE, STATE_SEEDED, STATE_MINE, STATE_COUNT };
static const char *const ba_state_names[] = {"free", "held by another", "held by the caller"};

typedef struct ba_param {
    enum ba_role role;
    int variadic;
    int optional; /* a variadic tail whose description starts "optional": may be empty */
    char name[32];
    long long min, max; /* ROLE_LEASE, ROLE_INT */
    char id_code[24];   /* ROLE_ID */
} ba_param;

typedef struct ba_header {
    ba_param keys[BA_MAX];
    int nkeys;
    ba_param args[BA_MAX];
    int nargs;
    char codes[BA_MAX][32];
    int ncodes;
    char data_type[16];    /* "hash" / "string": what KEYS[1] must hold (RLK_WRONGTYPE line) */
    int integer_string;    /* KEYS[1] must be a string holding an integer */
    int weak;              /* an ARGV of unknown role: expect any RLK_* code */
} ba_header;

typedef struct ba_call {
    int nkeys;
    enum ba_role key_role[BA_MAX];
    int key_typed[BA_MAX]; /* the first data key (or its variadic list): type is known */
    char keys[BA_MAX][64];
    int nargs;
    char args[BA_MAX][BA_ARGLEN];
} ba_call;

typedef struct ba_key {
    char name[64];
    char *dump;
    size_t dump_len;
    long long pttl;
} ba_key;

typedef struct ba_snap {
    long long dbsize;
    int n;
    ba_key keys[BA_MAX_SNAP];
} ba_snap;

typedef struct ba_ctx {
    rlk_client *c;
    const rlk_script_info *si;
    ba_header h;
    const rlk_script_info *acquire; /* <kind>/acquire, to set up STATE_MINE */
    ba_header acquire_h;
    redisContext *ctl;
    redisContext *sub;
    badargs_stats *st;
    int marker;
} ba_ctx;

static void ba_fail(ba_ctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void ba_fail(ba_ctx *t, const char *fmt, ...)
{
    va_list ap;

    if (t->st->quiet)
        return;
    fprintf(stderr, "  badargs %s: ", t->si->name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ------------------------------------------------------------ header */

/* "integer -1000000000000..1000000000000" anywhere in desc: 1 and the range. */
static int ba_parse_range(const char *desc, long long *min, long long *max)
{
    const char *dots = strstr(desc, "..");
    const char *start;
    char *end;

    if (!strstr(desc, "integer") || !dots || dots == desc)
        return 0;
    start = dots;
    while (start > desc && (isdigit((unsigned char)start[-1]) || start[-1] == '-'))
        start--;
    if (start == dots || !isdigit((unsigned char)dots[2]))
        return 0;
    *min = strtoll(start, NULL, 10);
    *max = strtoll(dots + 2, &end, 10);
    return *min <= *max;
}

static void ba_classify_arg(ba_param *p, const char *desc)
{
    int ranged = ba_parse_range(desc, &p->min, &p->max);

    if (strcmp(p->name, "publish") == 0) {
        p->role = ROLE_PUBLISH;
    } else if (strstr(p->name, "lease") || strstr(p->name, "ttl")) {
        p->role = ROLE_LEASE;
        if (!ranged) {
            p->min = 1;
            p->max = 1000000000000LL;
        }
    } else if (ranged) {
        p->role = ROLE_INT;
    } else if (strstr(desc, "1..1024 bytes")) {
        p->role = ROLE_ID;
        snprintf(p->id_code, sizeof p->id_code, "%s",
                 strstr(p->name, "owner")   ? "RLK_BADOWNER"
                 : strstr(p->name, "token") ? "RLK_BADTOKEN"
                 : strstr(p->name, "value") ? "RLK_BADVALUE"   /* fastmulti: a group's values */
                                            : "RLK_BADARG");
    } else {
        p->role = ROLE_UNKNOWN;
    }
}

/* "-- ARGV[2..n]: owners - one owner id ..." */
static int ba_parse_param(const char *line, ba_param *p, int is_key)
{
    const char *open = strchr(line, '[');
    const char *close = open ? strchr(open, ']') : NULL;
    const char *name, *end;
    size_t n;

    if (!close || strncmp(close, "]: ", 3) != 0)
        return -1;
    p->variadic = memchr(open, '.', (size_t)(close - open)) != NULL;
    name = close + 3;
    end = strstr(name, " - ");
    n = end ? (size_t)(end - name) : strlen(name);
    if (n == 0 || n >= sizeof p->name)
        return -1;
    memcpy(p->name, name, n);
    p->name[n] = '\0';
    p->optional = end && strncmp(end + 3, "optional", 8) == 0;
    if (is_key)
        p->role = strstr(p->name, "channel")  ? ROLE_CHANNEL
                  : strcmp(p->name, "prefix") == 0 ? ROLE_PREFIX
                                                   : ROLE_DATA;
    else
        ba_classify_arg(p, end ? end + 3 : "");
    return 0;
}

/* "-- error RLK_WRONGTYPE: the lock key holds a value that is not a hash" */
static int ba_parse_error(const char *line, ba_header *h)
{
    const char *code = line + strlen("-- error ");
    const char *colon = strchr(code, ':');
    const char *type;
    size_t n = colon ? (size_t)(colon - code) : 0;

    if (n == 0 || n >= sizeof h->codes[0] || h->ncodes >= BA_MAX)
        return -1;
    memcpy(h->codes[h->ncodes], code, n);
    h->codes[h->ncodes][n] = '\0';
    if (strcmp(h->codes[h->ncodes], "RLK_WRONGTYPE") == 0) {
        if ((type = strstr(colon, "not a ")) != NULL)
            sscanf(type + 6, "%15[a-z]", h->data_type);
        else if ((type = strstr(colon, "non-")) != NULL)
            sscanf(type + 4, "%15[a-z]", h->data_type);
        h->integer_string = strcmp(h->data_type, "string") == 0 && strstr(colon, "integer");
    }
    h->ncodes++;
    return 0;
}

static int ba_parse_line(const char *line, ba_header *h)
{
    if (strncmp(line, "-- KEYS[", 8) == 0) {
        if (h->nkeys >= BA_MAX)
            return -1;
        return ba_parse_param(line, &h->keys[h->nkeys++], 1);
    }
    if (strncmp(line, "-- ARGV[", 8) == 0) {
        if (h->nargs >= BA_MAX)
            return -1;
        return ba_parse_param(line, &h->args[h->nargs++], 0);
    }
    if (strncmp(line, "-- error ", 9) == 0)
        return ba_parse_error(line, h);
    return 0;
}

static int ba_parse_header(const rlk_script_info *si, ba_header *h)
{
    const char *p = si->body, *end = si->body + si->body_len;
    char line[512];

    memset(h, 0, sizeof *h);
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        if (n >= sizeof line)
            n = sizeof line - 1;
        memcpy(line, p, n);
        line[n] = '\0';
        if (strcmp(line, "-- end") == 0) {
            for (int i = 0; i < h->nargs; i++)
                h->weak |= h->args[i].role == ROLE_UNKNOWN;
            return 0;
        }
        if (strncmp(line, "-- ", 3) != 0 || ba_parse_line(line, h) != 0)
            return -1;
        p = nl ? nl + 1 : end;
    }
    return -1; /* no "-- end" */
}

static int ba_has_code(const ba_header *h, const char *code)
{
    for (int i = 0; i < h->ncodes; i++)
        if (strcmp(h->codes[i], code) == 0)
            return 1;
    return 0;
}

/* ------------------------------------------------------------ calls */

static void ba_push_key(ba_call *call, enum ba_role role, int typed, const char *key)
{
    call->key_role[call->nkeys] = role;
    call->key_typed[call->nkeys] = typed;
    snprintf(call->keys[call->nkeys], sizeof call->keys[0], "%s", key);
    call->nkeys++;
}

static void ba_valid_arg(const ba_param *p, const char *lease, const char *id, char *out)
{
    long long v;

    switch (p->role) {
    case ROLE_LEASE:
        snprintf(out, BA_ARGLEN, "%s", lease);
        break;
    case ROLE_INT:
        v = (p->min <= 1 && 1 <= p->max) ? 1 : p->min;
        snprintf(out, BA_ARGLEN, "%lld", v);
        break;
    case ROLE_ID:
        /* a faster MultiLock value may not contain ':' (its hash fields are value:holder:...) */
        snprintf(out, BA_ARGLEN, "%s", strstr(p->name, "value") ? "v0" : id);
        break;
    case ROLE_PUBLISH:
        snprintf(out, BA_ARGLEN, "%s", "publish");
        break;
    default:
        snprintf(out, BA_ARGLEN, "%s", "1");
        break;
    }
}

/* The valid call: data keys {it}:k1.. (a variadic list gets two), channel
 * keys redisson_lock__channel:{it}<n>, a prefix key = KEYS[1] (which has a
 * '{'); a variadic ARGV tail gets one value. */
static void ba_build_call(const ba_header *h, const char *lease, const char *id, ba_call *call)
{
    int data = 0, channels = 0;
    char key[64];

    memset(call, 0, sizeof *call);
    for (int i = 0; i < h->nkeys; i++) {
        const ba_param *p = &h->keys[i];
        for (int k = 0; k < (p->variadic ? 2 : 1); k++) {
            if (p->role == ROLE_CHANNEL) {
                snprintf(key, sizeof key, "redisson_lock__channel:{it}%d", ++channels);
                ba_push_key(call, ROLE_CHANNEL, 0, key);
            } else if (p->role == ROLE_PREFIX && call->nkeys > 0) {
                ba_push_key(call, ROLE_PREFIX, 0, call->keys[0]);
            } else {
                snprintf(key, sizeof key, "{it}:k%d", ++data);
                ba_push_key(call, ROLE_DATA, i == 0 && h->data_type[0], key);
            }
        }
    }
    for (int i = 0; i < h->nargs; i++)
        ba_valid_arg(&h->args[i], lease, id, call->args[i]);
    call->nargs = h->nargs;
}

static int ba_eval(ba_ctx *t, const char *name, const ba_call *call, redisReply **reply)
{
    const char *keys[BA_MAX + 1], *args[BA_MAX + 1];

    for (int i = 0; i < call->nkeys; i++)
        keys[i] = call->keys[i];
    for (int i = 0; i < call->nargs; i++)
        args[i] = call->args[i];
    *reply = NULL;
    return rlk_evalv(t->c, name, call->nkeys, keys, NULL, call->nargs, args, NULL, reply);
}

/* ------------------------------------------------------------ server state */

static int ba_ctl(ba_ctx *t, const char *fmt, ...)
{
    va_list ap;
    redisReply *r;
    int ok;

    va_start(ap, fmt);
    r = redisvCommand(t->ctl, fmt, ap);
    va_end(ap);
    ok = r && r->type != REDIS_REPLY_ERROR;
    if (!ok)
        ba_fail(t, "setup command \"%s\": %s", fmt,
                r && r->type == REDIS_REPLY_ERROR ? r->str : "no reply");
    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

static int ba_reset(ba_ctx *t)
{
    int rc = ba_ctl(t, "FLUSHALL");
    rc |= ba_ctl(t, "SET it:sentinel x PX %s", BA_SETUP_LEASE);
    rc |= ba_ctl(t, "HSET {it}:sentinel f v");
    return rc;
}

/* Typed keys hold what another holder would leave: a hash field of another
 * owner, or a string ("5": a token, or a count). */
static int ba_seed(ba_ctx *t, const ba_call *call)
{
    int rc = 0;

    for (int k = 0; k < call->nkeys; k++) {
        if (!call->key_typed[k])
            continue;
        if (strcmp(t->h.data_type, "hash") == 0)
            rc |= ba_ctl(t, "HSET %s " BA_OTHER " 1", call->keys[k]);
        else
            rc |= ba_ctl(t, "SET %s 5", call->keys[k]);
        rc |= ba_ctl(t, "PEXPIRE %s " BA_SETUP_LEASE, call->keys[k]);
    }
    return rc;
}

/* STATE_MINE is set up with <kind>/acquire when its arguments are all ones
 * this test can fill in. */
static int ba_can_hold(const ba_ctx *t)
{
    if (!t->acquire || t->acquire_h.weak || t->acquire_h.nkeys < 1 ||
        t->acquire_h.keys[0].role != ROLE_DATA)
        return 0;
    return 1;
}

/* The caller takes every typed key twice (re-entering where the kind allows). */
static int ba_hold(ba_ctx *t, const ba_call *call)
{
    ba_call acq;
    redisReply *r;

    ba_build_call(&t->acquire_h, BA_SETUP_LEASE, BA_CALLER, &acq);
    /* A plain hold: without an optional last key (reentrant/acquire's lock-delay) and the
     * optional last argument that goes with it. */
    if (acq.nkeys > 1 && t->acquire_h.keys[t->acquire_h.nkeys - 1].optional &&
        !t->acquire_h.keys[t->acquire_h.nkeys - 1].variadic) {
        acq.nkeys--;
        if (acq.nargs > 0 && t->acquire_h.args[t->acquire_h.nargs - 1].optional &&
            !t->acquire_h.args[t->acquire_h.nargs - 1].variadic)
            acq.nargs--;
    }
    for (int k = 0; k < call->nkeys; k++) {
        if (!call->key_typed[k])
            continue;
        for (int a = 0; a < acq.nkeys; a++)
            if (a == 0 || acq.key_role[a] == ROLE_PREFIX)
                snprintf(acq.keys[a], sizeof acq.keys[a], "%s", call->keys[k]);
        for (int i = 0; i < 2; i++) {
            int rc = ba_eval(t, t->acquire->name, &acq, &r);
            if (r)
                freeReplyObject(r);
            /* A non-reentrant kind refuses the second take: held once is the state. */
            if (rc != RLK_OK && i == 1 && strstr(rlk_errstr(t->c), "RLK_REENTRY"))
                break;
            if (rc != RLK_OK) {
                ba_fail(t, "setup %s: %s", t->acquire->name, rlk_errstr(t->c));
                return -1;
            }
        }
    }
    return 0;
}

static int ba_setup(ba_ctx *t, enum ba_state state, const ba_call *valid)
{
    if (ba_reset(t) != 0)
        return -1;
    if (state == STATE_SEEDED)
        return ba_seed(t, valid);
    if (state == STATE_MINE)
        return ba_hold(t, valid);
    return 0;
}

/* ------------------------------------------------------------ snapshots */

static int ba_cmp_names(const void *a, const void *b)
{
    return strcmp(((const ba_key *)a)->name, ((const ba_key *)b)->name);
}

static void ba_snap_free(ba_snap *s)
{
    for (int i = 0; i < s->n; i++)
        free(s->keys[i].dump);
    s->n = 0;
}

static long long ba_integer(redisContext *ctx, const char *fmt, const char *arg)
{
    redisReply *r = redisCommand(ctx, fmt, arg);
    long long v = r && r->type == REDIS_REPLY_INTEGER ? r->integer : -999;
    if (r)
        freeReplyObject(r);
    return v;
}

static int ba_snap_key(redisContext *ctx, ba_key *k)
{
    redisReply *r = redisCommand(ctx, "DUMP %s", k->name);

    if (!r || r->type != REDIS_REPLY_STRING) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    k->dump = malloc(r->len ? r->len : 1);
    if (k->dump)
        memcpy(k->dump, r->str, r->len);
    k->dump_len = r->len;
    freeReplyObject(r);
    k->pttl = ba_integer(ctx, "PTTL %s", k->name);
    return k->dump ? 0 : -1;
}

static int ba_snapshot(redisContext *ctx, ba_snap *s)
{
    redisReply *r = redisCommand(ctx, "KEYS *");
    int rc = 0;

    memset(s, 0, sizeof *s);
    s->dbsize = ba_integer(ctx, "DBSIZE", NULL);
    if (!r || r->type != REDIS_REPLY_ARRAY || r->elements > BA_MAX_SNAP) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    for (size_t i = 0; i < r->elements; i++)
        snprintf(s->keys[i].name, sizeof s->keys[i].name, "%s", r->element[i]->str);
    s->n = (int)r->elements;
    freeReplyObject(r);
    qsort(s->keys, (size_t)s->n, sizeof s->keys[0], ba_cmp_names);
    for (int i = 0; i < s->n && rc == 0; i++)
        rc = ba_snap_key(ctx, &s->keys[i]);
    return rc;
}

/* A TTL may only have run down by the time that passed (-1/-2 stay). */
static int ba_ttl_ran_down(long long before, long long after, long long elapsed_ms)
{
    if (before < 0 || after < 0)
        return before == after;
    return after <= before && before - after <= elapsed_ms + 100;
}

/* 0 when equal; TTLs may only have run down by the time that passed. */
static int ba_snap_diff(const ba_snap *a, const ba_snap *b, long long elapsed_ms, char *why,
                        size_t len)
{
    if (a->dbsize != b->dbsize || a->n != b->n) {
        snprintf(why, len, "DBSIZE %lld -> %lld", a->dbsize, b->dbsize);
        return 1;
    }
    for (int i = 0; i < a->n; i++) {
        const ba_key *x = &a->keys[i], *y = &b->keys[i];
        if (strcmp(x->name, y->name) != 0) {
            snprintf(why, len, "key %s replaced by %s", x->name, y->name);
            return 1;
        }
        if (x->dump_len != y->dump_len || memcmp(x->dump, y->dump, x->dump_len) != 0) {
            snprintf(why, len, "value of %s changed", x->name);
            return 1;
        }
        if (!ba_ttl_ran_down(x->pttl, y->pttl, elapsed_ms)) {
            snprintf(why, len, "PTTL of %s %lld -> %lld", x->name, x->pttl, y->pttl);
            return 1;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ publish watch */

static int ba_subscribe(ba_ctx *t, const rlk_fx_server *s)
{
    redisReply *r;

    t->sub = rlk_fx_connect(s);
    if (!t->sub)
        return -1;
    r = redisCommand(t->sub, "PSUBSCRIBE *");
    if (!r || r->type != REDIS_REPLY_ARRAY) {
        if (r)
            freeReplyObject(r);
        return -1;
    }
    freeReplyObject(r);
    return 0;
}

/* Publishes a marker and reads everything the subscriber got up to it:
 * 1 when the marker was the only message. */
static int ba_nothing_published(ba_ctx *t, char *why, size_t len)
{
    char marker[32], seen[200] = "";
    void *v;

    snprintf(marker, sizeof marker, "%d", ++t->marker);
    if (ba_ctl(t, "PUBLISH it:marker %s", marker) != 0) {
        snprintf(why, len, "PUBLISH of the marker failed");
        return 0;
    }
    for (;;) {
        redisReply *r;
        int is_marker = 0;

        if (redisGetReply(t->sub, &v) != REDIS_OK || !v) {
            snprintf(why, len, "subscriber connection lost");
            return 0;
        }
        r = v;
        if (r->type == REDIS_REPLY_ARRAY && r->elements == 4) {
            is_marker = strcmp(r->element[2]->str, "it:marker") == 0 &&
                        strcmp(r->element[3]->str, marker) == 0;
            if (!is_marker && !seen[0])
                snprintf(seen, sizeof seen, "published \"%s\" on %s", r->element[3]->str,
                         r->element[2]->str);
        }
        freeReplyObject(r);
        if (is_marker)
            break;
    }
    if (seen[0])
        snprintf(why, len, "%s", seen);
    return seen[0] == '\0';
}

/* ------------------------------------------------------------ cases */

/* errstr starts with code followed by a space; code "RLK_" matches any. */
static int ba_code_matches(const char *errstr, const char *code)
{
    size_t n = strlen(code);

    if (!errstr || strncmp(errstr, code, n) != 0)
        return 0;
    if (strcmp(code, "RLK_") == 0)
        return errstr[n] >= 'A' && errstr[n] <= 'Z';
    return errstr[n] == ' ' || errstr[n] == '\0';
}

/* The code a case must get: the specific one when the header promises it
 * and every other argument is known to be valid, else any RLK_* code. */
static const char *ba_expect(const ba_ctx *t, const char *code)
{
    return (!t->h.weak && ba_has_code(&t->h, code)) ? code : "RLK_";
}

/* One bad call. setup_from: the valid call whose keys ba_setup prepares
 * for state; NULL when the caller prepared the database itself.
 * keys_case: the library may refuse the call itself (RLK_ERR_ARG). */
static void ba_case(ba_ctx *t, enum ba_state state, const ba_call *setup_from,
                    const ba_call *bad, const char *code, int keys_case, const char *label)
{
    const char *expect = ba_expect(t, code);
    ba_snap before, after;
    char why[256] = "";
    redisReply *r = NULL;
    long long t0;
    int rc, ok;

    memset(&after, 0, sizeof after);
    t->st->calls++;
    t->st->exact += strcmp(expect, "RLK_") != 0;
    if (setup_from && ba_setup(t, state, setup_from) != 0) {
        t->st->failures++;
        return;
    }
    t0 = rlk_fx_now_ms();   /* before the first PTTL read: a stall after it counts as time */
    if (ba_snapshot(t->ctl, &before) != 0) {
        ba_fail(t, "%s: snapshot failed", label);
        t->st->failures++;
        ba_snap_free(&before);
        return;
    }
    rc = ba_eval(t, t->si->name, bad, &r);
    ok = (rc == RLK_ERR_SCRIPT && ba_code_matches(rlk_errstr(t->c), expect)) ||
         (keys_case && rc == RLK_ERR_ARG);
    if (!ok)
        snprintf(why, sizeof why, "got %s \"%s\" (reply type %d), expected %s", rlk_strerror(rc),
                 rc == RLK_OK ? "" : rlk_errstr(t->c), r ? r->type : -1, expect);
    if (r)
        freeReplyObject(r);
    if (ok && ba_snapshot(t->ctl, &after) != 0) {
        snprintf(why, sizeof why, "snapshot after the call failed");
        ok = 0;
    }
    if (ok && ba_snap_diff(&before, &after, rlk_fx_now_ms() - t0, why, sizeof why) != 0)
        ok = 0;
    if (ok && !ba_nothing_published(t, why, sizeof why))
        ok = 0;
    ba_snap_free(&before);
    ba_snap_free(&after);
    if (ok) {
        t->st->rejected++;
    } else {
        t->st->failures++;
        ba_fail(t, "%s (%s): %s", label, ba_state_names[state], why);
    }
}

/* Bad values for a number in min..max: no sign, no leading zero, no spaces,
 * no float or hex syntax, nothing out of range. */
static int ba_bad_numbers(const ba_param *p, char out[][32], int max)
{
    static const char *const fixed[] = {"",    "abc", "1e3", "0x10", " 1", "1 ", "1.5",
                                        "inf", "nan", "01",  "+1",   "99999999999999"};
    int n = 0;

    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0] && n < max; i++)
        if (strcmp(fixed[i], "99999999999999") != 0 || p->max < 99999999999999LL)
            snprintf(out[n++], 32, "%s", fixed[i]); /* out of range unless the range is wider */
    if (n < max)
        snprintf(out[n++], 32, "%lld", p->max + 1);
    if (n < max)
        snprintf(out[n++], 32, "%lld", p->min - 1);
    if (n < max && p->min > 0)
        snprintf(out[n++], 32, "%s", "-1");
    return n;
}

static void ba_number_cases(ba_ctx *t, enum ba_state state, const ba_call *valid)
{
    char bad[16][32], label[128];
    ba_call m;

    for (int i = 0; i < t->h.nargs; i++) {
        const ba_param *p = &t->h.args[i];
        const char *code = p->role == ROLE_LEASE ? "RLK_BADLEASE" : "RLK_BADARG";
        int n;

        if (p->role != ROLE_LEASE && p->role != ROLE_INT)
            continue;
        n = ba_bad_numbers(p, bad, 16);
        for (int v = 0; v < n; v++) {
            m = *valid;
            snprintf(m.args[i], BA_ARGLEN, "%s", bad[v]);
            snprintf(label, sizeof label, "ARGV[%d] %.31s = \"%.31s\"", i + 1, p->name, bad[v]);
            ba_case(t, state, valid, &m, code, 0, label);
        }
    }
}

static void ba_id_cases(ba_ctx *t, enum ba_state state, const ba_call *valid)
{
    char label[128];
    ba_call m;

    for (int i = 0; i < t->h.nargs; i++) {
        const ba_param *p = &t->h.args[i];
        if (p->role != ROLE_ID)
            continue;
        for (int v = 0; v < 2; v++) {
            m = *valid;
            if (v == 0) {
                m.args[i][0] = '\0';
            } else {
                memset(m.args[i], 'o', 1025);
                m.args[i][1025] = '\0';
            }
            snprintf(label, sizeof label, "ARGV[%d] %s %s", i + 1, p->name,
                     v == 0 ? "empty" : "1025 bytes");
            ba_case(t, state, valid, &m, p->id_code, 0, label);
        }
        /* A variadic id list with more entries, the last one empty (for
         * renew_many: the one-owner-per-key form). */
        if (p->variadic && i == valid->nargs - 1 && valid->nkeys >= 2) {
            m = *valid;
            for (int k = 1; k < valid->nkeys && m.nargs < BA_MAX; k++)
                snprintf(m.args[m.nargs++], BA_ARGLEN, "%s%d",
                         strstr(p->name, "value") ? "v" : BA_CALLER ":", k);
            m.args[m.nargs - 1][0] = '\0';
            snprintf(label, sizeof label, "ARGV %s: %d values, the last empty", p->name,
                     m.nargs - i);
            ba_case(t, state, valid, &m, p->id_code, 0, label);
        }
    }
}

/* The publish command: anything but exactly publish or spublish. */
static void ba_publish_cases(ba_ctx *t, enum ba_state state, const ba_call *valid)
{
    static const char *const bad[] = {"", "PUBLISH", "Publish", "publish ", "spublishx", "set", "del"};
    char label[128];
    ba_call m;

    for (int i = 0; i < t->h.nargs; i++) {
        if (t->h.args[i].role != ROLE_PUBLISH)
            continue;
        for (size_t v = 0; v < sizeof bad / sizeof bad[0]; v++) {
            m = *valid;
            snprintf(m.args[i], BA_ARGLEN, "%s", bad[v]);
            snprintf(label, sizeof label, "ARGV[%d] publish = \"%s\"", i + 1, bad[v]);
            ba_case(t, state, valid, &m, "RLK_BADPUBLISH", 0, label);
        }
    }
}

static void ba_count_cases(ba_ctx *t, enum ba_state state, const ba_call *valid)
{
    int args_variadic = t->h.nargs > 0 && t->h.args[t->h.nargs - 1].variadic;
    int keys_variadic = t->h.nkeys > 0 && t->h.keys[t->h.nkeys - 1].variadic;
    ba_call m;

    if (valid->nargs > 0) {
        m = *valid;
        m.nargs--;
        if (args_variadic && t->h.args[t->h.nargs - 1].optional && m.nargs > 0)
            m.nargs--; /* an empty optional tail is a valid call: drop the argument before it */
        else if (!args_variadic && t->h.args[t->h.nargs - 1].optional && valid->nargs == t->h.nargs &&
                 m.nargs > 0)
            m.nargs--; /* without its optional last argument the call is valid: drop the one before */
        ba_case(t, state, valid, &m, "RLK_BADARG", 0, "one argument too few");
    }
    if (!args_variadic && valid->nargs < BA_MAX) {
        m = *valid;
        snprintf(m.args[m.nargs++], BA_ARGLEN, "%s", "extra");
        ba_case(t, state, valid, &m, "RLK_BADARG", 0, "one argument too many");
    }
    if (valid->nkeys > 0) {
        m = *valid;
        m.nkeys = keys_variadic ? 0 : m.nkeys - 1;
        if (!keys_variadic && t->h.keys[t->h.nkeys - 1].optional && m.nkeys > 0)
            m.nkeys--; /* a call without an optional last key is valid: drop the key before it */
        ba_case(t, state, valid, &m, "RLK_BADARG", 1,
                keys_variadic ? "no keys" : "one key too few");
    }
    if (!keys_variadic && valid->nkeys < BA_MAX) {
        m = *valid;
        ba_push_key(&m, ROLE_DATA, 0, "{it}:extra");
        ba_case(t, state, valid, &m, "RLK_BADARG", 1, "one key too many");
    }
}

/* Creates key holding a value of the given kind, with a TTL. */
static int ba_make_wrong(ba_ctx *t, const char *key, const char *kind)
{
    int rc;

    if (strcmp(kind, "list") == 0)
        rc = ba_ctl(t, "RPUSH %s a b", key);
    else if (strcmp(kind, "string") == 0)
        rc = ba_ctl(t, "SET %s " BA_CALLER, key);
    else if (strcmp(kind, "non-integer string") == 0)
        rc = ba_ctl(t, "SET %s abc", key);
    else
        rc = ba_ctl(t, "HSET %s " BA_CALLER " 1", key);
    return rc | ba_ctl(t, "PEXPIRE %s " BA_SETUP_LEASE, key);
}

/* Each typed key in turn holds a value of a type the script does not use. */
static void ba_wrongtype_cases(ba_ctx *t, const ba_call *valid)
{
    const char *kinds[3] = {"list", NULL, NULL};
    char label[160];

    if (!ba_has_code(&t->h, "RLK_WRONGTYPE") || !t->h.data_type[0])
        return;
    if (strcmp(t->h.data_type, "hash") == 0)
        kinds[1] = "string";
    else if (strcmp(t->h.data_type, "string") == 0)
        kinds[1] = "hash";
    if (t->h.integer_string)
        kinds[2] = "non-integer string";
    for (int k = 0; k < valid->nkeys; k++) {
        if (!valid->key_typed[k])
            continue;
        for (int i = 0; i < 3; i++) {
            if (!kinds[i])
                continue;
            snprintf(label, sizeof label, "KEYS[%d] %s holds a %s", k + 1, valid->keys[k],
                     kinds[i]);
            if (ba_reset(t) != 0 || ba_make_wrong(t, valid->keys[k], kinds[i]) != 0) {
                t->st->calls++;
                t->st->failures++;
                continue;
            }
            ba_case(t, STATE_FREE, NULL, valid, "RLK_WRONGTYPE", 0, label);
        }
    }
}

/* The script that takes the lock for STATE_MINE: <kind>/<x>_acquire for a
 * script <kind>/<x>_<op> (rwlock/read_release -> rwlock/read_acquire), else
 * <kind>/acquire. */
static const rlk_script_info *ba_find_acquire(rlk_client *c, const char *name)
{
    const char *slash = strchr(name, '/');
    const char *under = slash ? strchr(slash, '_') : NULL;
    const rlk_script_info *found = NULL;
    char want[96];

    if (!slash || strlen(name) + sizeof "_acquire" > sizeof want)
        return NULL;
    if (under) {
        snprintf(want, sizeof want, "%.*s_acquire", (int)(under - name), name);
        found = rlk_script_find(c, want);
    }
    if (!found) {
        snprintf(want, sizeof want, "%.*s/acquire", (int)(slash - name), name);
        found = rlk_script_find(c, want);
    }
    return found;
}

static int ba_prepare(ba_ctx *t, const rlk_script_info *si)
{
    if (ba_parse_header(si, &t->h) != 0) {
        ba_fail(t, "cannot parse the header");
        return -1;
    }
    t->acquire = ba_find_acquire(t->c, si->name);
    if (t->acquire && ba_parse_header(t->acquire, &t->acquire_h) != 0)
        t->acquire = NULL;
    return 0;
}

static void ba_run_all(ba_ctx *t)
{
    ba_call valid;

    ba_build_call(&t->h, BA_CALL_LEASE, BA_CALLER, &valid);
    for (int state = 0; state < STATE_COUNT; state++) {
        if (state == STATE_SEEDED && !t->h.data_type[0])
            continue;
        if (state == STATE_MINE && !ba_can_hold(t))
            continue;
        ba_number_cases(t, (enum ba_state)state, &valid);
        ba_id_cases(t, (enum ba_state)state, &valid);
        ba_publish_cases(t, (enum ba_state)state, &valid);
        ba_count_cases(t, (enum ba_state)state, &valid);
    }
    ba_wrongtype_cases(t, &valid);
}

void badargs_script(rlk_client *c, const rlk_fx_server *s, const rlk_script_info *si,
                    badargs_stats *st)
{
    ba_ctx *t = calloc(1, sizeof *t);

    if (!t) {
        st->failures++;
        return;
    }
    t->c = c;
    t->si = si;
    t->st = st;
    st->scripts++;
    t->ctl = rlk_fx_connect(s);
    if (!t->ctl || ba_subscribe(t, s) != 0 || ba_prepare(t, si) != 0) {
        st->failures++;
    } else {
        st->weak_scripts += t->h.weak;
        if (t->h.weak && !st->quiet)
            fprintf(stderr, "  badargs %s: an ARGV of unknown role; any RLK_* error accepted\n",
                    si->name);
        ba_run_all(t);
    }
    if (t->ctl)
        redisFree(t->ctl);
    if (t->sub)
        redisFree(t->sub);
    free(t);
}
