/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * conn.h - one connection (conn.c): opening a dedicated connection,
 * commands and script calls on a given connection, script loading, the
 * one NOSCRIPT path (used here and, in its pipelined form, by the async
 * engine), and the classification of error replies.
 *
 * Connection errors
 *   Functions that talk to Redis return RLK_ERR_IO / RLK_ERR_TIMEOUT /
 *   RLK_ERR_PROTOCOL when hiredis reports a connection error; the context is
 *   then unusable (ctx->err != 0) and must be freed (or, for a pool slot,
 *   dropped with rlk_slot_drop). Their `written` out-parameter tells whether
 *   the whole request reached the socket: only when it did not is the
 *   request known not to have run.
 *
 * A redisContext is used by one thread at a time; a dedicated connection
 * (rlk_conn_open) belongs to whoever opened it.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_CONN_H
#define RLK_CONN_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "rlk.h"

/* Opens a new connection with the client's address, connect timeout,
 * command timeout, AUTH and SELECT. For the lock runtime's subscriber or
 * watchdog: the caller owns *out (redisFree) and uses it from one thread at a
 * time. Does not load scripts. Where to is the topology's (topo.h: the
 * URL's server, the master the sentinels name, some cluster node). Errors: RLK_ERR_IO / _TIMEOUT (connect),
 * RLK_ERR_AUTH (AUTH or SELECT refused), RLK_ERR_NOMEM. */
int rlk_conn_open(rlk_client *c, redisContext **out);
/* The same to host:port (host NULL: the URL's address): what a topology's
 * open does once it knows where (topo.h). */
int rlk_conn_open_to(rlk_client *c, const char *host, int port, redisContext **out);
/* 1 when the calling thread's latest rlk_conn_open / _open_to (or a topology's
 * open through them) failed in the connect itself: refused, unreachable, timed
 * out, the TLS handshake; not AUTH or SELECT. Clears the flag. What the
 * metrics' connect_failures counts (pool.c, the async engine's dial thread). */
int rlk_conn_dial_failed(void);

/* 1 when an idle connection looks usable: no hiredis error, and the server
 * has neither closed it nor sent anything unasked (rlk_transport_peer: a
 * zero-timeout poll and a peek, nothing read; the async engine makes the same
 * check before it writes on an idle connection). A request/reply connection must pass this before a request
 * is written to it; a subscriber connection must not use it. */
int rlk_conn_alive(const redisContext *ctx);
/* rlk_conn_alive, and not stale for the topology (topo.h: a redis+sentinel://
 * client's connection to a demoted master is not usable: drop it). */
int rlk_conn_usable(rlk_client *c, const redisContext *ctx);

/* Who the connection is, for CLIENT LIST (docs/observability.md): CLIENT
 * SETNAME name, CLIENT ID when id is not NULL (*id: the connection's id,
 * left as it was when the server refuses either), and CLIENT SETINFO
 * LIB-NAME rlk and LIB-VER <version> (Redis 7.2+, Valkey 8; not sent again
 * once a server refused them), in one round trip. A refusal (an error
 * reply) is ignored; RLK_OK or a connection error, recorded as "<what>
 * <addr>: ...". */
int rlk_conn_name_id(rlk_client *c, redisContext *ctx, const char *what, const char *name,
                     long long *id);
/* rlk_conn_name_id without the id, what "CLIENT SETNAME". */
int rlk_conn_setname(rlk_client *c, redisContext *ctx, const char *name);

/* Sends one command and reads its reply. what names the request in error
 * messages ("SCRIPT LOAD", "reentrant/acquire"). RLK_OK: *reply is the
 * reply, which may be an error reply (the caller decides). *written (may be
 * NULL) is 1 once the whole request has been written to the socket. */
int rlk_conn_command(rlk_client *c, redisContext *ctx, const char *what,
                     int argc, const char **argv, const size_t *argvlen,
                     redisReply **reply, int *written);

/* argv, then argv2, in one write: one round trip. *reply is
 * the first command's reply (RLK_OK), *reply2 the second's, or NULL when it
 * was lost (the connection is broken then: ctx->err set); the first reply
 * stands whatever becomes of the second. */
int rlk_conn_command_pair(rlk_client *c, redisContext *ctx, const char *what, int argc,
                          const char **argv, const size_t *argvlen, int argc2,
                          const char **argv2, const size_t *argvlen2, redisReply **reply,
                          redisReply **reply2, int *written);

/* SCRIPT LOAD of every script in c's set in one pipelined round trip;
 * RLK_ERR_SHA names the first script whose SHA-1 differs. */
int rlk_conn_load_all(rlk_client *c, redisContext *ctx);

/* ---- the same steps for a caller that pipelines on a non-blocking
 * connection (the async engine, engine/engine.c): it writes what
 * these give and reads the replies as they come, so that the set-up, the
 * call's form and the NOSCRIPT rule are the ones rlk_conn_open and
 * rlk_conn_evalv use. */

/* Set-up command i (0, 1, ...) of a new connection: AUTH when the URL has
 * a password, SELECT when it names a database. Its argc (argv, lens and
 * db filled), 0 past the last one. */
int rlk_conn_setup_cmd(const rlk_client *c, int i, const char *argv[3], size_t lens[3],
                       char db[16]);
/* The reply to set-up command i on ctx's connection: RLK_OK, or RLK_ERR_AUTH recorded, its
 * message naming the client's address (a cluster's: the node ctx is connected to). */
int rlk_conn_check_setup_reply(rlk_client *c, const redisContext *ctx, int i, const redisReply *r);
/* argv (lens NULL: C strings) in RESP's request form, the bytes
 * redisFormatCommandArgv makes, written to out when they fit in cap bytes
 * (no terminating NUL); the number of bytes the request takes, whether it
 * fit or not (out NULL: only counted). What every request of a blocking
 * call is written with (rlk_conn_command, rlk_conn_evalv). */
size_t rlk_conn_format_argv(char *out, size_t cap, int argc, const char *const *argv,
                            const size_t *lens);
/* The call of script s as rlk_conn_evalv writes it (EVALSHA, or FCALL /
 * FCALL_RO once c's mode is decided so: the mode is not asked here), in
 * rlk_conn_format_argv's bytes: *cmd is buf when the request fits in cap
 * bytes (buf may be NULL), else a buffer of its own (free()); its length,
 * -1 out of memory (*cmd NULL). */
int rlk_conn_format_script(rlk_client *c, const rlk_script_info *s,
                           int nkeys, const char *const *keys, const size_t *keylens,
                           int nargs, const char *const *args, const size_t *arglens,
                           char *buf, size_t cap, char **cmd);
/* The one NOSCRIPT rule: 1 when reply r to an EVALSHA (fcall 0) that was
 * not retried yet says NOSCRIPT: it did not run; load the script and send
 * the call once more. */
int rlk_conn_noscript_retry(const redisReply *r, int fcall, int retried);
/* The pipelined form of that: appends SCRIPT LOAD of s and the call
 * (cmd, len) again to ctx's output. -1 out of memory. */
int rlk_conn_append_reload(redisContext *ctx, const rlk_script_info *s, const char *cmd,
                           size_t len);
/* The check of a SCRIPT LOAD reply against the build's SHA-1 (the error
 * recorded on c and returned, else RLK_OK). */
int rlk_conn_check_load_reply(rlk_client *c, const rlk_script_info *s, const redisReply *r);

/* EVALSHA of script s on ctx; on a NOSCRIPT reply, SCRIPT LOAD it and retry
 * once. In FCALL mode (functions.h: decided here when not yet known) FCALL /
 * FCALL_RO rlk_<kind>_<op> instead; "Function not found" asks again (AUTO) or
 * fails with RLK_ERR_SHA (ON). RLK_OK: *reply is the script's reply (never an error reply).
 * RLK_ERR_SCRIPT: the script replied an error (errstr is its text);
 * RLK_ERR_AUTH (NOAUTH) / RLK_ERR_SERVER (BUSY, READONLY, OOM, ...): the
 * server refused the call. *written is 1 when an EVALSHA that may have run
 * was written (a NOSCRIPT reply proves the first one did not run). */
int rlk_conn_evalv(rlk_client *c, redisContext *ctx, const rlk_script_info *s,
                   int nkeys, const char *const *keys, const size_t *keylens,
                   int nargs, const char *const *args, const size_t *arglens,
                   redisReply **reply, int *written);

/* The call mode (functions.h), at connect on the first connection: asks the
 * server (FCALL_RO rlk_version) when the mode is not OFF. Errors are recorded
 * on c (mode ON: the library is missing or different). rlk_conn_evalv asks
 * the same way when the mode is not known yet. */
int rlk_conn_fn_decide(rlk_client *c, redisContext *ctx);

/* Replica acknowledgement (rlk_options.min_replicas > 0). rlk_conn_evalv
 * writes WAIT N timeout right behind every writing script (scripts.h's rlk_script_writes)
 * and reads its reply after the script's: no extra round trip. A NOSCRIPT
 * retry sends both again; the last WAIT tells. The outcome is the calling
 * thread's note until its next rlk_conn_evalv; the client layer only
 * reports it (what an unacknowledged write means is the caller's: the lock
 * runtime rolls an acquisition back, fam_hold.h). */
typedef struct rlk_acks {
    int wanted;                 /* N asked for; 0: no WAIT was sent */
    int acks;                   /* replicas that acknowledged; -1: unknown */
    long long timeout_ms;       /* the WAIT's timeout (cut to the connection's, conn.c) */
    char why[128];              /* acks -1: why ("WAIT refused: NOPERM ...", "... lost") */
} rlk_acks;

/* 1 when the calling thread's last script call sent a WAIT that fewer than
 * wanted replicas acknowledged (or whose answer is unknown); 0 otherwise.
 * *out (may be NULL) gets the note either way. */
int rlk_conn_acks_short(rlk_acks *out);
/* off nonzero: the calling thread's script calls send no WAIT (a rollback:
 * undoing an unacknowledged write needs no acknowledgement, the replication
 * stream keeps the order). Returns the previous setting. */
int rlk_conn_acks_off(int off);

/* Round trips (a write of one or more pipelined commands, then their
 * replies) made by the calling thread through rlk_conn_command,
 * rlk_conn_evalv and the script loads so far; tests compare counts. */
unsigned long long rlk_conn_round_trips(void);

/* Arms a callback for the calling thread: fn(arg) runs once, right after
 * the first EVALSHA that rlk_conn_evalv next writes in this thread has been
 * written, before its reply is read (not after AUTH, SELECT or SCRIPT LOAD
 * of a reconnect). rlk_conn_after_write(NULL, NULL) disarms it. Used by an
 * unlock to wake the local queue's head while its release is in flight. */
void rlk_conn_after_write(void (*fn)(void *), void *arg);

/* Classifies an error reply of EVALSHA: RLK_ERR_AUTH, RLK_ERR_SERVER or
 * RLK_ERR_SCRIPT, and records it on c. */
int rlk_set_reply_error(rlk_client *c, const redisReply *r, const char *what, int default_err);

/* The value after key in a flat map reply [k1, v1, k2, v2, ...] (RESP2),
 * or NULL. */
const redisReply *rlk_reply_field(const redisReply *map, const char *key);

/* 1 when c's last error is a reply that says "not now" and changed nothing:
 * LOADING, BUSY, TRYAGAIN, CLUSTERDOWN, MASTERDOWN. */
int rlk_err_is_transient_reply(rlk_client *c);

#endif /* RLK_CONN_H */
