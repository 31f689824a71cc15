/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * error.c - error names and the per-thread, per-client last error.
 *
 * Each thread keeps a small table of (client id, code, message) entries in
 * thread-local storage. Client ids are never reused within a process, so an
 * entry left behind by a freed client is harmless; when the table is full the
 * least recently written entry is replaced. Nothing to lock, nothing to free.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client/client_t.h"
#include "client/error.h"

#define RLK_ERR_SLOTS 16

typedef struct rlk_err_entry {
    int err;
    char msg[RLK_ERRSTR_MAX];
} rlk_err_entry;

/* The client ids and write stamps apart from the messages: a lookup, made after every reply,
 * reads two cache lines instead of one per slot. */
static _Thread_local uint64_t rlk_err_ids[RLK_ERR_SLOTS];     /* 0: unused */
static _Thread_local uint64_t rlk_err_stamps[RLK_ERR_SLOTS];  /* write order, for replacement */
static _Thread_local rlk_err_entry rlk_err_table[RLK_ERR_SLOTS];
static _Thread_local uint64_t rlk_err_clock;

static const char *const rlk_err_names[] = {
    "RLK_OK",           "RLK_ERR_IO",      "RLK_ERR_TIMEOUT",      "RLK_ERR_URL",
    "RLK_ERR_AUTH",     "RLK_ERR_PROTOCOL", "RLK_ERR_SCRIPT",      "RLK_ERR_NOSUCHSCRIPT",
    "RLK_ERR_SHA",      "RLK_ERR_BUNDLE",  "RLK_ERR_ARG",          "RLK_ERR_NOMEM",
    "RLK_ERR_SERVER",   "RLK_ERR_NOT_OWNER", "RLK_ERR_BUSY",       "RLK_ERR_LOST",
    "RLK_ERR_UPGRADE",  "RLK_ERR_INTERRUPTED", "RLK_ERR_NOTIFY",    "RLK_ERR_READONLY",
    "RLK_ERR_NOREPLICAS", "RLK_ERR_UNSETTLED", "RLK_ERR_TLS",       "RLK_ERR_CANCELLED",
    "RLK_ERR_CLOSED",   "RLK_ERR_FENCED",  "RLK_ERR_REENTRY",
};

const char *rlk_strerror(int err)
{
    if (err < 0 || (size_t)err >= sizeof rlk_err_names / sizeof rlk_err_names[0])
        return "RLK_ERR_UNKNOWN";
    return rlk_err_names[err];
}

static int rlk_err_slot(uint64_t id)
{
    for (int i = 0; i < RLK_ERR_SLOTS; i++)
        if (rlk_err_ids[i] == id)
            return i;
    return -1;
}

static rlk_err_entry *rlk_err_lookup(uint64_t id)
{
    int i = rlk_err_slot(id);

    return i < 0 ? NULL : &rlk_err_table[i];
}

/* id's slot, else the least recently written one, taken for id; stamped as written now. */
static rlk_err_entry *rlk_err_claim(uint64_t id)
{
    int i = rlk_err_slot(id);

    if (i < 0) {
        i = 0;
        for (int j = 1; j < RLK_ERR_SLOTS; j++)
            if (rlk_err_stamps[j] < rlk_err_stamps[i])
                i = j;
        rlk_err_ids[i] = id;
    }
    rlk_err_stamps[i] = ++rlk_err_clock;
    return &rlk_err_table[i];
}

/* Newlines and other control bytes become spaces: messages are one line. */
static void rlk_one_line(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = ' ';
}

/* The password hint of an AUTH refusal (error.h), once, when it fits. */
static void rlk_auth_hint(char *msg, size_t size)
{
    const char *hint = NULL;
    size_t len = strlen(msg);

    if (strstr(msg, RLK_NOAUTH_HINT) || strstr(msg, RLK_WRONGPASS_HINT))
        return;
    if (strstr(msg, "NOAUTH") || strstr(msg, "Protocol error: unauthenticated"))
        hint = RLK_NOAUTH_HINT;
    else if (strstr(msg, "WRONGPASS") || strstr(msg, "invalid password"))
        hint = RLK_WRONGPASS_HINT;
    if (hint && len + strlen(hint) < size)
        memcpy(msg + len, hint, strlen(hint) + 1);
}

int rlk_set_error(rlk_client *c, int err, const char *fmt, ...)
{
    rlk_err_entry *e;
    va_list ap;

    if (!c)
        return err;
    e = rlk_err_claim(c->id);
    e->err = err;
    va_start(ap, fmt);
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    va_end(ap);
    rlk_one_line(e->msg);
    if (err == RLK_ERR_AUTH)
        rlk_auth_hint(e->msg, sizeof e->msg);
    return err;
}

int rlk_err(const rlk_client *c)
{
    const rlk_err_entry *e = c ? rlk_err_lookup(c->id) : NULL;

    return e ? e->err : RLK_OK;
}

const char *rlk_errstr(const rlk_client *c)
{
    const rlk_err_entry *e = c ? rlk_err_lookup(c->id) : NULL;

    return e ? e->msg : "";
}

const char *rlk_errno_str(int errnum, char *buf, size_t len)
{
#if defined(__GLIBC__) && defined(_GNU_SOURCE)
    return strerror_r(errnum, buf, len);
#else
    if (strerror_r(errnum, buf, len) != 0)
        snprintf(buf, len, "error %d", errnum);
    return buf;
#endif
}

static int rlk_ctx_timed_out(const redisContext *ctx, int saved_errno)
{
    char buf[128];

    if (ctx->err != REDIS_ERR_IO)
        return 0;
    if (saved_errno == EAGAIN || saved_errno == EWOULDBLOCK || saved_errno == ETIMEDOUT)
        return 1;
    return strcmp(ctx->errstr, rlk_errno_str(EAGAIN, buf, sizeof buf)) == 0 ||
           strcmp(ctx->errstr, rlk_errno_str(ETIMEDOUT, buf, sizeof buf)) == 0;
}

int rlk_set_ctx_error(rlk_client *c, const redisContext *ctx, const char *what)
{
    int saved_errno = errno;

    if (rlk_ctx_timed_out(ctx, saved_errno)) {
        int ms = strcmp(what, "connect") == 0 ? c->connect_timeout_ms : c->command_timeout_ms;

        return rlk_set_error(c, RLK_ERR_TIMEOUT, "%s %s: timed out after %d ms", what, c->addr,
                             ms);
    }
    switch (ctx->err) {
    case REDIS_ERR_PROTOCOL:
        return rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: protocol error: %s", what, c->addr,
                             ctx->errstr);
    case REDIS_ERR_OOM:
        return rlk_set_error(c, RLK_ERR_NOMEM, "%s %s: out of memory", what, c->addr);
    default:
        /* A TLS port resets a connection that speaks plain RESP to it; a Redis
         * port never resets one for a well-formed request. */
        return rlk_set_error(c, RLK_ERR_IO, "%s %s: %s%s", what, c->addr,
                             ctx->errstr[0] ? ctx->errstr : "connection error",
                             !c->tls && !c->url.is_unix && strstr(ctx->errstr, "reset by peer")
                                 ? " (a TLS port? use rediss:// or --tls)" : "");
    }
}
