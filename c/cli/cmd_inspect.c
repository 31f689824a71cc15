/*
 * cmd_inspect.c - rlk inspect NAME [--json]
 *
 * Shows what the key NAME holds, read with plain commands (TYPE, then the
 * kind's reads and PTTL): a snapshot, not a transaction. Each kind of lock
 * is one small function: reentrant lock (hash of holder -> count),
 * read-write lock (hash with a `mode` field), token lock (string), no lock,
 * and anything else (its type). Semaphores, latches and fair-lock queues
 * are to follow as kinds of their own.
 */
#include <stdlib.h>
#include <string.h>

#include "lock_cli.h"

static const char inspect_usage[] =
    "usage: rlk inspect NAME [--json] [--url URL]\n"
    "\n"
    "Shows what the lock key NAME holds: for a reentrant lock its holders (holder id and\n"
    "reentry count) and TTL; for a read-write lock its mode, readers and writer; for a\n"
    "token lock (a string) the token and TTL; \"no lock\" when the key does not exist;\n"
    "otherwise the key's type. The reads are not atomic: a lock that changes meanwhile\n"
    "may show a mix. A TTL of -1 means no expiry.\n"
    "\n"
    "  --json      one JSON object: {\"name\", \"kind\", ...}; kind is reentrant, rwlock,\n"
    "              token, none or other (with \"type\")\n"
    "  --url URL   the server (default: $RLK_URL, then " RLK_DEFAULT_URL ")\n";

typedef struct inspect_opts {
    const char *name;
    const char *url;
    int json;
} inspect_opts;

/* One holder entry of a lock hash. */
typedef struct inspect_holder {
    const char *owner;
    size_t owner_len;
    long long count;
    const char *mode;           /* NULL (reentrant), "read" or "write" */
} inspect_holder;

typedef struct inspect_view {
    const char *name;
    const char *kind;           /* reentrant, rwlock, token, none, other */
    const char *type;           /* the Redis type, for "other" */
    const char *mode;           /* rwlock */
    const char *token;          /* token lock */
    size_t token_len;
    long long ttl_ms;
    inspect_holder *holders;
    size_t nholders;
} inspect_view;

/* ---------------------------------------------------------------- parsing */

static int inspect_parse(int argc, char **argv, inspect_opts *o)
{
    for (int i = 1; i < argc;) {
        int got = rlk_cli_opt_value("inspect", argc, argv, &i, "--url", &o->url);

        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(inspect_usage, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o->json = 1;
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return rlk_cli_usage("inspect", "unknown option '%s'", argv[i]);
        else if (o->name)
            return rlk_cli_usage("inspect", "unexpected argument '%s'", argv[i]);
        else
            o->name = argv[i];
        i++;
    }
    if (!o->name)
        return rlk_cli_usage("inspect", "missing the lock NAME");
    return -1;
}

/* ---------------------------------------------------------------- reading */

/* A command on NAME with up to one more argument. */
static int inspect_cmd(rlk_client *c, const char *cmd, const char *name, const char *arg,
                       redisReply **r)
{
    const char *argv[3] = {cmd, name, arg};

    return rlk_command(c, arg ? 3 : 2, argv, NULL, r);
}

static int inspect_ttl(rlk_client *c, inspect_view *v)
{
    redisReply *r = NULL;
    int rc = inspect_cmd(c, "PTTL", v->name, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    v->ttl_ms = r->type == REDIS_REPLY_INTEGER ? r->integer : -2;
    freeReplyObject(r);
    return RLK_OK;
}

/* A hash field's count: a decimal integer > 0, else -1. */
static long long inspect_count(const redisReply *val)
{
    char *end;
    long long n;

    if (val->type != REDIS_REPLY_STRING || val->len == 0 || val->len > 19)
        return -1;
    n = strtoll(val->str, &end, 10);
    return (*end == '\0' && n > 0) ? n : -1;
}

static int inspect_has_suffix(const char *s, size_t len, const char *suffix)
{
    size_t n = strlen(suffix);

    return len >= n && memcmp(s + len - n, suffix, n) == 0;
}

/* Holder entries from an HGETALL reply (skipping rwlock's mode field).
 * 0, or -1 when a value is not a count: the hash is not a lock. */
static int inspect_holders(const redisReply *all, inspect_view *v, int rw)
{
    v->holders = calloc(all->elements / 2 + 1, sizeof *v->holders);
    if (!v->holders)
        return -1;
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        const redisReply *f = all->element[k];
        inspect_holder *h = &v->holders[v->nholders];

        if (rw && f->len == 4 && memcmp(f->str, "mode", 4) == 0)
            continue;
        h->owner = f->str;
        h->owner_len = f->len;
        if ((h->count = inspect_count(all->element[k + 1])) < 0)
            return -1;
        if (rw) {
            int w = inspect_has_suffix(f->str, f->len, ":write");

            h->mode = w ? "write" : "read";
            h->owner_len -= w ? 6 : 0;
        }
        v->nholders++;
    }
    return 0;
}

/* The value of field `mode` in an HGETALL reply, or NULL. */
static const char *inspect_mode_field(const redisReply *all)
{
    for (size_t k = 0; k + 1 < all->elements; k += 2) {
        const redisReply *f = all->element[k];

        if (f->len == 4 && memcmp(f->str, "mode", 4) == 0)
            return all->element[k + 1]->str;
    }
    return NULL;
}

/* ---------------------------------------------------------------- kinds */

/* Reentrant lock or read-write lock: a hash. *all stays alive for the view. */
static int inspect_kind_hash(rlk_client *c, inspect_view *v, redisReply **all)
{
    int rc = inspect_cmd(c, "HGETALL", v->name, NULL, all);

    if (rc != RLK_OK)
        return rc;
    if ((*all)->type != REDIS_REPLY_ARRAY || (*all)->elements == 0) {
        v->kind = "none";   /* released between TYPE and HGETALL */
        return RLK_OK;
    }
    v->mode = inspect_mode_field(*all);
    v->kind = v->mode ? "rwlock" : "reentrant";
    if (inspect_holders(*all, v, v->mode != NULL) < 0) {
        v->kind = "other";
        v->type = "hash";
        v->nholders = 0;
        return RLK_OK;
    }
    rc = inspect_ttl(c, v);
    if (rc == RLK_OK && v->ttl_ms == -2)
        v->kind = "none";   /* expired meanwhile */
    return rc;
}

/* Token lock: a string holding the holder's token. *val stays alive for the view. */
static int inspect_kind_token(rlk_client *c, inspect_view *v, redisReply **val)
{
    int rc = inspect_cmd(c, "GET", v->name, NULL, val);

    if (rc != RLK_OK)
        return rc;
    if ((*val)->type != REDIS_REPLY_STRING) {
        v->kind = "none";
        return RLK_OK;
    }
    v->kind = "token";
    v->token = (*val)->str;
    v->token_len = (*val)->len;
    rc = inspect_ttl(c, v);
    if (rc == RLK_OK && v->ttl_ms == -2)
        v->kind = "none";
    return rc;
}

/* Fills v by the key's type; *data holds the reply v points into. */
static int inspect_read(rlk_client *c, inspect_view *v, char *type, size_t typelen,
                        redisReply **data)
{
    redisReply *r = NULL;
    int rc = inspect_cmd(c, "TYPE", v->name, NULL, &r);

    if (rc != RLK_OK)
        return rc;
    snprintf(type, typelen, "%s", r->type == REDIS_REPLY_STATUS ? r->str : "unknown");
    freeReplyObject(r);
    if (strcmp(type, "none") == 0) {
        v->kind = "none";
        return RLK_OK;
    }
    if (strcmp(type, "hash") == 0)
        return inspect_kind_hash(c, v, data);
    if (strcmp(type, "string") == 0)
        return inspect_kind_token(c, v, data);
    v->kind = "other";
    v->type = type;
    return RLK_OK;
}

/* ---------------------------------------------------------------- output */

static void inspect_print_ttl(const inspect_view *v)
{
    if (v->ttl_ms == -1)
        printf("ttl:     none (no expiry)\n");
    else
        printf("ttl:     %lld ms\n", v->ttl_ms);
}

static void inspect_print_text(const inspect_view *v)
{
    if (strcmp(v->kind, "none") == 0) {
        printf("%s: no lock\n", v->name);
        return;
    }
    if (strcmp(v->kind, "other") == 0) {
        printf("%s: not a lock rlk knows: the key holds a %s\n", v->name, v->type);
        return;
    }
    if (strcmp(v->kind, "token") == 0) {
        printf("%s: token lock\ntoken:   %.*s\n", v->name, (int)v->token_len, v->token);
        inspect_print_ttl(v);
        return;
    }
    printf("%s: %s\n", v->name, v->mode ? "read-write lock" : "reentrant lock");
    if (v->mode)
        printf("mode:    %s\n", v->mode);
    inspect_print_ttl(v);
    for (size_t k = 0; k < v->nholders; k++)
        printf("holder:  %.*s  count %lld%s%s\n", (int)v->holders[k].owner_len,
               v->holders[k].owner, v->holders[k].count, v->holders[k].mode ? "  " : "",
               v->holders[k].mode ? v->holders[k].mode : "");
}

static void inspect_json_holders(const inspect_view *v)
{
    fputs(",\"holders\":[", stdout);
    for (size_t k = 0; k < v->nholders; k++) {
        fputs(k ? ",{\"owner\":" : "{\"owner\":", stdout);
        rlk_lc_json_string(stdout, v->holders[k].owner, v->holders[k].owner_len);
        printf(",\"count\":%lld", v->holders[k].count);
        if (v->holders[k].mode)
            printf(",\"mode\":\"%s\"", v->holders[k].mode);
        fputc('}', stdout);
    }
    fputc(']', stdout);
}

static void inspect_print_json(const inspect_view *v)
{
    fputs("{\"name\":", stdout);
    rlk_lc_json_string(stdout, v->name, strlen(v->name));
    printf(",\"kind\":\"%s\"", v->kind);
    if (strcmp(v->kind, "other") == 0) {
        fputs(",\"type\":", stdout);
        rlk_lc_json_string(stdout, v->type, strlen(v->type));
    } else if (strcmp(v->kind, "token") == 0) {
        fputs(",\"token\":", stdout);
        rlk_lc_json_string(stdout, v->token, v->token_len);
        printf(",\"ttl_ms\":%lld", v->ttl_ms);
    } else if (strcmp(v->kind, "none") != 0) {
        if (v->mode) {
            fputs(",\"mode\":", stdout);
            rlk_lc_json_string(stdout, v->mode, strlen(v->mode));
        }
        printf(",\"ttl_ms\":%lld", v->ttl_ms);
        inspect_json_holders(v);
    }
    fputs("}\n", stdout);
}

/* ---------------------------------------------------------------- command */

static int inspect_run(int argc, char **argv)
{
    inspect_opts o = {NULL, NULL, 0};
    inspect_view v;
    redisReply *data = NULL;
    char type[64], what[300];
    rlk_client *c;
    int rc;

    if ((rc = inspect_parse(argc, argv, &o)) >= 0)
        return rc;
    if (!(c = rlk_cli_connect(o.url, NULL, 1, &rc)))
        return rc;
    memset(&v, 0, sizeof v);
    v.name = o.name;
    rc = inspect_read(c, &v, type, sizeof type, &data);
    if (rc != RLK_OK) {
        snprintf(what, sizeof what, "inspect %s", o.name);
        rc = rlk_lc_fail(c, rc, what);
    } else {
        if (o.json)
            inspect_print_json(&v);
        else
            inspect_print_text(&v);
        rc = RLK_EXIT_OK;
    }
    free(v.holders);
    if (data)
        freeReplyObject(data);
    rlk_free(c);
    return rc;
}

const rlk_cli_command rlk_cmd_inspect = {
    "inspect",
    "show what a lock key holds: holders, counts, TTL (rlk inspect NAME [--json])",
    inspect_usage,
    inspect_run,
};
