/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_script: load the benchmarked scripts and map their header's KEYS and
 * ARGV to values. See bench_script.h. */
#include "bench_script.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef RLK_BENCH_HAVE_LIB
#include "rlk.h"
#endif

#define RLK_BENCH_MAX_SCRIPT (1024 * 1024)

static int rlk_bench_contains(const char *hay, const char *needle)
{
    return strstr(hay, needle) != NULL;
}

int rlk_bench_role_of(const char *short_name, int is_key)
{
    char low[64];
    size_t i;

    for (i = 0; short_name[i] != '\0' && i + 1 < sizeof low; i++)
        low[i] = (char)tolower((unsigned char)short_name[i]);
    low[i] = '\0';
    if (rlk_bench_contains(low, "channel"))
        return RLK_BENCH_ROLE_CHANNEL;
    if (is_key && rlk_bench_contains(low, "waiters"))
        return RLK_BENCH_ROLE_WAITERS;
    if (is_key && rlk_bench_contains(low, "grant"))
        return RLK_BENCH_ROLE_GRANT;
    if (is_key)
        return rlk_bench_contains(low, "lock") || strcmp(low, "semaphore") == 0
                   ? RLK_BENCH_ROLE_LOCK
                   : -1;
    if (strcmp(low, "permits") == 0)
        return RLK_BENCH_ROLE_PERMITS;
    if (rlk_bench_contains(low, "ticket"))
        return RLK_BENCH_ROLE_TICKET;
    if (rlk_bench_contains(low, "claim"))
        return RLK_BENCH_ROLE_CLAIM;
    if (rlk_bench_contains(low, "lease") || rlk_bench_contains(low, "ttl"))
        return RLK_BENCH_ROLE_LEASE;
    if (rlk_bench_contains(low, "owner") || rlk_bench_contains(low, "holder"))
        return RLK_BENCH_ROLE_OWNER;
    if (rlk_bench_contains(low, "message") || rlk_bench_contains(low, "msg"))
        return RLK_BENCH_ROLE_MESSAGE;
    if (strcmp(low, "publish") == 0)
        return RLK_BENCH_ROLE_PUBLISH;
    return -1;
}

/* Parses "KEYS[i]: short - meaning" (after the "-- "), appending the role.
 * Returns 0, or -1 with a message. */
static int rlk_bench_param(rlk_bench_script *s, const char *line, size_t len,
                           int is_key, char *err, size_t errlen)
{
    const char *kind = is_key ? "KEYS" : "ARGV";
    int *count = is_key ? &s->nkeys : &s->nargs;
    rlk_bench_role *roles = is_key ? s->keys : s->args;
    char text[160], short_name[64];
    int idx, role, used = 0;

    if (len >= sizeof text)
        len = sizeof text - 1;
    memcpy(text, line, len);
    text[len] = '\0';
    if (sscanf(text + 4, "[%d]: %63s%n", &idx, short_name, &used) != 2 || used == 0) {
        snprintf(err, errlen, "%s: cannot read header line '-- %s' (variadic %s is not "
                 "supported by the benchmark)", s->name, text, kind);
        return -1;
    }
    /* "short - optional ...": a trailing parameter the plain call leaves out (the reentrant
     * lock's lock-delay key and ms); the benchmark makes the plain call, as the library does
     * without the option. One after it is then out of order (below). */
    if (strncmp(text + 4 + used, " - optional", 11) == 0)
        return 0;
    if (idx != *count + 1 || idx > RLK_BENCH_MAX_PARAMS) {
        snprintf(err, errlen, "%s: header declares %s[%d] out of order", s->name, kind, idx);
        return -1;
    }
    role = rlk_bench_role_of(short_name, is_key);
    if (role < 0) {
        snprintf(err, errlen, "%s: the benchmark does not know what to pass for %s[%d] (%s)",
                 s->name, kind, idx, short_name);
        return -1;
    }
    roles[(*count)++] = (rlk_bench_role)role;
    return 0;
}

static int rlk_bench_header_line(rlk_bench_script *s, const char *line, size_t len,
                                 char *err, size_t errlen)
{
    size_t nlen = strlen(s->name);

    if (len >= 6 && strncmp(line, "name: ", 6) == 0) {
        if (len - 6 != nlen || strncmp(line + 6, s->name, nlen) != 0) {
            snprintf(err, errlen, "%s: header name is '%.*s'", s->name,
                     (int)(len - 6 > 60 ? 60 : len - 6), line + 6);
            return -1;
        }
        return 0;
    }
    if (len > 5 && strncmp(line, "KEYS[", 5) == 0)
        return rlk_bench_param(s, line, len, 1, err, errlen);
    if (len > 5 && strncmp(line, "ARGV[", 5) == 0)
        return rlk_bench_param(s, line, len, 0, err, errlen);
    return 0;
}

static int rlk_bench_parse_header(rlk_bench_script *s, char *err, size_t errlen)
{
    const char *p = s->body, *end = s->body + s->body_len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);

        if (len == 6 && strncmp(p, "-- end", 6) == 0)
            break;
        if (len < 3 || strncmp(p, "-- ", 3) != 0) {
            snprintf(err, errlen, "%s: header not ended by '-- end'", s->name);
            return -1;
        }
        if (rlk_bench_header_line(s, p + 3, len - 3, err, errlen) != 0)
            return -1;
        p += len + 1;
    }
    if (p >= end) {
        snprintf(err, errlen, "%s: header not ended by '-- end'", s->name);
        return -1;
    }
    if (s->nkeys < 1 || s->keys[0] != RLK_BENCH_ROLE_LOCK) {
        snprintf(err, errlen, "%s: KEYS[1] is not the lock key", s->name);
        return -1;
    }
    return 0;
}

int rlk_bench_script_from_body(rlk_bench_script *s, const char *name,
                               const char *body, size_t len, const char *sha1,
                               char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (strlen(name) >= sizeof s->name) {
        snprintf(err, errlen, "script name too long: %s", name);
        return -1;
    }
    strcpy(s->name, name);
    s->body = malloc(len + 1);
    if (s->body == NULL) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(s->body, body, len);
    s->body[len] = '\0';
    s->body_len = len;
    if (sha1 != NULL)
        snprintf(s->sha1, sizeof s->sha1, "%s", sha1);
    if (rlk_bench_parse_header(s, err, errlen) != 0) {
        rlk_bench_script_free(s);
        return -1;
    }
    return 0;
}

static char *rlk_bench_read_file(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    char *buf;

    if (f == NULL) {
        snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
        return NULL;
    }
    buf = malloc(RLK_BENCH_MAX_SCRIPT);
    if (buf == NULL) {
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    *len = fread(buf, 1, RLK_BENCH_MAX_SCRIPT, f);
    if (ferror(f) || *len == RLK_BENCH_MAX_SCRIPT) {
        snprintf(err, errlen, "cannot read %s (error, or larger than 1 MiB)", path);
        free(buf);
        buf = NULL;
    }
    fclose(f);
    return buf;
}

int rlk_bench_script_from_dir(rlk_bench_script *s, const char *dir,
                              const char *name, char *err, size_t errlen)
{
    char path[4096];
    size_t len = 0;
    char *body;
    int rc;

    memset(s, 0, sizeof *s);
    if ((size_t)snprintf(path, sizeof path, "%s/%s.lua", dir, name) >= sizeof path) {
        snprintf(err, errlen, "script path too long");
        return -1;
    }
    body = rlk_bench_read_file(path, &len, err, errlen);
    if (body == NULL)
        return -1;
    rc = rlk_bench_script_from_body(s, name, body, len, NULL, err, errlen);
    free(body);
    return rc;
}

int rlk_bench_script_from_library(rlk_bench_script *s, const char *name,
                                  char *err, size_t errlen)
{
#ifdef RLK_BENCH_HAVE_LIB
    size_t i;

    memset(s, 0, sizeof *s);
    for (i = 0; i < rlk_embedded_count(); i++) {
        const rlk_script_info *info = rlk_embedded_at(i);
        if (info != NULL && strcmp(info->name, name) == 0)
            return rlk_bench_script_from_body(s, name, info->body, info->body_len,
                                              info->sha1, err, errlen);
    }
    snprintf(err, errlen, "the rlk library embeds no script named %s", name);
    return -1;
#else
    memset(s, 0, sizeof *s);
    snprintf(err, errlen, "%s: rlk-bench was built without the rlk library", name);
    return -1;
#endif
}

void rlk_bench_script_free(rlk_bench_script *s)
{
    free(s->body);
    s->body = NULL;
    s->body_len = 0;
}

static const char *rlk_bench_value(const rlk_bench_values *v, rlk_bench_role role)
{
    switch (role) {
    case RLK_BENCH_ROLE_LOCK: return v->lock;
    case RLK_BENCH_ROLE_CHANNEL: return v->channel;
    case RLK_BENCH_ROLE_LEASE: return v->lease;
    case RLK_BENCH_ROLE_OWNER: return v->owner;
    case RLK_BENCH_ROLE_MESSAGE: return v->message;
    case RLK_BENCH_ROLE_PUBLISH: return v->publish;
    case RLK_BENCH_ROLE_WAITERS: return v->waiters;
    case RLK_BENCH_ROLE_GRANT: return v->grant;
    case RLK_BENCH_ROLE_TICKET: return v->ticket;
    case RLK_BENCH_ROLE_CLAIM: return v->claim;
    case RLK_BENCH_ROLE_PERMITS: return v->permits ? v->permits : "1";
    }
    return "";
}

void rlk_bench_script_bind(const rlk_bench_script *s, const rlk_bench_values *v,
                           rlk_bench_call *call)
{
    int i;

    call->nkeys = s->nkeys;
    call->nargs = s->nargs;
    for (i = 0; i < s->nkeys; i++) {
        call->keys[i] = rlk_bench_value(v, s->keys[i]);
        call->keylens[i] = strlen(call->keys[i]);
    }
    for (i = 0; i < s->nargs; i++) {
        call->args[i] = rlk_bench_value(v, s->args[i]);
        call->arglens[i] = strlen(call->args[i]);
    }
}
