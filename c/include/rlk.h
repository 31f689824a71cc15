/*
 * rlk - Redis lock kit: the C harness around rlk's Lua scripts.
 *
 * One client object talks to one Redis server. It holds a small pool of
 * hiredis connections, so several threads can share it. Every script rlk
 * ships is embedded in the library (or read from a bundle directory) and is
 * called by name: EVALSHA, and on NOSCRIPT the script is loaded and the call
 * retried once. After a connection error the client reconnects, restores its
 * timeouts and database, and reloads the scripts.
 *
 * Errors: functions return an rlk error code (RLK_OK == 0). The code and a
 * one-line message of the last failed call made *by the calling thread* on a
 * client are kept on that client: rlk_err(c), rlk_errstr(c).
 *
 * Ownership: the caller owns what it creates (rlk_free, rlk_lock_free) and
 * every redisReply handed out (freeReplyObject).
 */
#ifndef RLK_H
#define RLK_H

#include <stddef.h>
#include <hiredis/hiredis.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RLK_VERSION_MAJOR 0
#define RLK_VERSION_MINOR 1
#define RLK_VERSION_PATCH 0
#define RLK_VERSION "0.1.0"

/* Error codes. Stable numbers: the CLI maps them to exit codes. */
enum rlk_error {
    RLK_OK = 0,
    RLK_ERR_IO = 1,           /* connection lost or refused (after one reconnect) */
    RLK_ERR_TIMEOUT = 2,      /* connect or command timed out */
    RLK_ERR_URL = 3,          /* malformed URL */
    RLK_ERR_AUTH = 4,         /* AUTH or SELECT refused */
    RLK_ERR_PROTOCOL = 5,     /* a reply of an unexpected shape */
    RLK_ERR_SCRIPT = 6,       /* the script replied an error; errstr is its text */
    RLK_ERR_NOSUCHSCRIPT = 7, /* no script of that name in the client's set */
    RLK_ERR_SHA = 8,          /* the server computed another SHA-1 than the build */
    RLK_ERR_BUNDLE = 9,       /* bundle directory missing, unreadable or inconsistent */
    RLK_ERR_ARG = 10,         /* bad argument to an API call */
    RLK_ERR_NOMEM = 11,       /* out of memory */
    RLK_ERR_SERVER = 12,      /* any other error reply from the server */
    RLK_ERR_NOT_OWNER = 13,   /* unlock of a lock the caller does not hold */
    RLK_ERR_BUSY = 14,        /* the lock stayed held by another until the wait ran out */
    RLK_ERR_LOST = 15         /* the lock was lost (lease ran out or key removed) */
};

/* Returns a static, one-word name for an error code ("RLK_ERR_IO"). */
const char *rlk_strerror(int err);

/* ---------------------------------------------------------------- client */

typedef struct rlk_client rlk_client;

typedef struct rlk_options {
    const char *url;          /* redis://[user:password@]host:port[/db] or unix:///path[?db=N];
                                 NULL: $RLK_URL, then redis://127.0.0.1:6379 */
    int connect_timeout_ms;   /* <= 0: 2000 */
    int command_timeout_ms;   /* <= 0: 5000 */
    const char *bundle_dir;   /* NULL: the embedded scripts */
    int pool_size;            /* <= 0: 4 connections */
    long long watchdog_lease_ms; /* <= 0: 30000 */
    int no_preload;           /* nonzero: do not SCRIPT LOAD on connect (load on NOSCRIPT) */
} rlk_options;

void rlk_options_init(rlk_options *opts);

/* Parses and connects; loads every script (unless no_preload) and checks each
 * SHA-1 the server returns against the build's. Returns NULL only when out of
 * memory; otherwise check rlk_err(c): a client that failed to connect is still
 * returned so the caller can read the message, and must be freed. */
rlk_client *rlk_connect(const rlk_options *opts);
rlk_client *rlk_connect_url(const char *url); /* defaults for everything else */
void rlk_free(rlk_client *c);

int rlk_err(const rlk_client *c);
const char *rlk_errstr(const rlk_client *c);

/* The URL the client was opened with, password masked ("redis://u:***@h:p/0"). */
const char *rlk_client_url(const rlk_client *c);

/* ---------------------------------------------------------------- scripts */

typedef struct rlk_script_info {
    const char *name;    /* "reentrant/acquire" */
    int version;
    int numkeys;         /* -1: variadic */
    const char *sha1;    /* 40 lowercase hex digits */
    const char *body;
    size_t body_len;
} rlk_script_info;

/* The set built into the library. */
size_t rlk_embedded_count(void);
const rlk_script_info *rlk_embedded_at(size_t i);

/* The set a client uses (embedded, or its bundle directory). */
size_t rlk_script_count(const rlk_client *c);
const rlk_script_info *rlk_script_at(const rlk_client *c, size_t i);
const rlk_script_info *rlk_script_find(const rlk_client *c, const char *name);

/* SCRIPT LOAD every script; RLK_ERR_SHA if a returned SHA-1 differs. */
int rlk_load_scripts(rlk_client *c);

/* SCRIPT EXISTS for every script; present[i] (rlk_script_count entries) is
 * set to 1 when the server holds script i. */
int rlk_verify_scripts(rlk_client *c, int *present);

/* Calls a script by name. keylens/arglens may be NULL (strlen is used).
 * RLK_OK: *reply holds the script's reply (caller frees it).
 * RLK_ERR_SCRIPT: the script replied an error; errstr holds its text, *reply is NULL. */
int rlk_evalv(rlk_client *c, const char *name,
              int nkeys, const char *const *keys, const size_t *keylens,
              int nargs, const char *const *args, const size_t *arglens,
              redisReply **reply);
int rlk_eval(rlk_client *c, const char *name,
             int nkeys, const char *const *keys,
             int nargs, const char *const *args,
             redisReply **reply);

/* Any command, argv-style, through the client's pool (reconnects like eval).
 * An error reply is returned as RLK_ERR_SERVER with the text in errstr. */
int rlk_command(rlk_client *c, int argc, const char *const *argv,
                const size_t *argvlen, redisReply **reply);

#ifdef __cplusplus
}
#endif
#endif /* RLK_H */
