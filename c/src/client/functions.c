/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * functions.c - the Redis 7 Functions library rlk: the call mode (EVALSHA or
 * FCALL / FCALL_RO), the probe that decides it, and FUNCTION LOAD / LIST.
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/functions.h"
#include "client/scripts.h"
#include "client/sha1.h"

const rlk_library_info *rlk_embedded_library(void)
{
    return &rlk_embedded_library_info;
}

int rlk_functions_active(rlk_client *c)
{
    int st;

    if (!c)
        return -1;
    if (c->functions == RLK_FUNCTIONS_OFF)
        return 0;
    if (c->functions == RLK_FUNCTIONS_ON)
        return 1;
    st = atomic_load(&c->fn_state);
    return st == RLK_FN_UNKNOWN ? -1 : st == RLK_FN_FCALL;
}

int rlk_fn_uses_fcall(rlk_client *c)
{
    return rlk_functions_active(c) == 1;
}

/* ---------------------------------------------------------------- call heads */

static int rlk_fn_no_writes(const rlk_script_info *s)
{
    for (int i = 0; rlk_no_writes_sha1[i]; i++)
        if (strcmp(rlk_no_writes_sha1[i], s->sha1) == 0)
            return 1;
    return 0;
}

static void rlk_fn_fill(const rlk_script_info *s, int fcall, rlk_fn_head *h)
{
    size_t n = 0;

    h->fcall = fcall;
    if (!fcall) {
        h->argv[0] = "EVALSHA";
        h->argv[1] = s->sha1;
        h->lens[0] = 7;
        h->lens[1] = 40;
        return;
    }
    /* rlk_<kind>_<op>: the name tools/gen-functions.lua gives the script's function */
    n = (size_t)snprintf(h->fname, sizeof h->fname, "rlk_%s", s->name);
    if (n >= sizeof h->fname)
        n = sizeof h->fname - 1;
    for (char *p = h->fname; *p; p++)
        if (*p == '/')
            *p = '_';
    h->argv[0] = rlk_fn_no_writes(s) ? "FCALL_RO" : "FCALL";
    h->argv[1] = h->fname;
    h->lens[0] = strlen(h->argv[0]);
    h->lens[1] = n;
}

void rlk_fn_head_known(rlk_client *c, const rlk_script_info *s, rlk_fn_head *h)
{
    rlk_fn_fill(s, rlk_fn_uses_fcall(c), h);
}

/* ---------------------------------------------------------------- the probe */

/* FCALL_RO rlk_version 0 on ctx: RLK_FN_FCALL when the server's library rlk was
 * built from exactly c's scripts, else RLK_FN_EVALSHA with the reason in why;
 * a negative rlk code after a connection error (recorded). */
static int rlk_fn_probe(rlk_client *c, redisContext *ctx, char *why, size_t len)
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

static int rlk_fn_refused(rlk_client *c, const char *why)
{
    return rlk_set_error(c, RLK_ERR_SHA, "functions on %s: %s (rlk functions load [--replace] "
                         "loads this release's library)", c->addr, why);
}

int rlk_fn_decide(rlk_client *c, redisContext *ctx)
{
    char why[256] = "";
    int got;

    if (c->functions == RLK_FUNCTIONS_OFF)
        return RLK_OK;
    got = rlk_fn_probe(c, ctx, why, sizeof why);
    if (got < 0)
        return -got;
    if (c->functions == RLK_FUNCTIONS_ON && got != RLK_FN_FCALL)
        return rlk_fn_refused(c, why);
    atomic_store(&c->fn_state, got);
    return RLK_OK;
}

int rlk_fn_head_for(rlk_client *c, redisContext *ctx, const rlk_script_info *s, rlk_fn_head *h)
{
    int rc = RLK_OK;

    if (c->functions == RLK_FUNCTIONS_ON && atomic_load(&c->fn_state) != RLK_FN_FCALL)
        rc = rlk_fn_decide(c, ctx);      /* until the library is there: each call asks */
    else if (c->functions == RLK_FUNCTIONS_AUTO && atomic_load(&c->fn_state) == RLK_FN_UNKNOWN)
        rc = rlk_fn_decide(c, ctx);
    if (rc == RLK_OK)
        rlk_fn_head_known(c, s, h);
    return rc;
}

int rlk_fn_is_missing(const redisReply *r)
{
    static const char text[] = "ERR Function not found";

    return r->type == REDIS_REPLY_ERROR && r->len >= sizeof text - 1 &&
           memcmp(r->str, text, sizeof text - 1) == 0;
}

int rlk_fn_missing(rlk_client *c, redisContext *ctx, const rlk_script_info *s, rlk_fn_head *h)
{
    char why[200];

    atomic_store(&c->fn_state, RLK_FN_UNKNOWN);
    if (c->functions == RLK_FUNCTIONS_ON) {
        snprintf(why, sizeof why, "FCALL %s: Function not found", h->fname);
        return rlk_fn_refused(c, why);
    }
    return rlk_fn_head_for(c, ctx, s, h);
}

/* ---------------------------------------------------------------- load, list */

int rlk_load_functions(rlk_client *c, int replace)
{
    const rlk_library_info *lib = &rlk_embedded_library_info;
    const char *argv[4] = {"FUNCTION", "LOAD", "REPLACE", lib->code};
    size_t lens[4] = {8, 4, 7, lib->code_len};
    redisReply *r = NULL;
    int rc;

    if (!c)
        return RLK_ERR_ARG;
    if (!replace) {
        argv[2] = lib->code;
        lens[2] = lib->code_len;
    }
    rc = rlk_command(c, replace ? 4 : 3, argv, lens, &r);
    if (rc != RLK_OK)
        return rc;
    if (r->type != REDIS_REPLY_STRING || r->len != 3 || memcmp(r->str, "rlk", 3) != 0)
        rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "FUNCTION LOAD on %s: unexpected reply", c->addr);
    freeReplyObject(r);
    return rc;
}

/* The value after key in a flat map reply [k1, v1, k2, v2, ...] (RESP2). */
static const redisReply *rlk_fn_field(const redisReply *map, const char *key)
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
        const redisReply *name = rlk_fn_field(lib, "library_name");
        const redisReply *code = rlk_fn_field(lib, "library_code");
        const redisReply *fns = rlk_fn_field(lib, "functions");

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
static void rlk_fn_word_after(const char *code, size_t len, const char *marker, char *out,
                              size_t outlen)
{
    size_t m = strlen(marker), j = 0;

    out[0] = '\0';
    for (size_t i = 0; i + m <= len; i++) {
        if (memcmp(code + i, marker, m) != 0)
            continue;
        for (i += m; i < len && j + 1 < outlen && code[i] != ' ' && code[i] != ':' &&
                     code[i] != '\n'; i++)
            out[j++] = code[i];
        out[j] = '\0';
        return;
    }
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
        rlk_fn_word_after(code->str, code->len, "\n-- rlk ", st->release, sizeof st->release);
        rlk_fn_word_after(code->str, code->len, "\n-- scripts id: ", st->scripts_id,
                          sizeof st->scripts_id);
    }
    if (r)
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
    if (r)
        freeReplyObject(r);
    return rc;
}
