/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redlock_io.h - one script call on each of several servers at once, for
 * RedLock (redlock.c).
 *
 * A session checks out one pool connection of every client, switches it to
 * non-blocking mode and multiplexes the calls with poll(): requests are
 * written to every server before any reply is awaited, and a slow server
 * delays nobody beyond the deadline the caller gives. A server without a
 * live connection gets a non-blocking connect (transport.h; the set-up
 * commands of client/conn.h, AUTH and SELECT, pipelined in front of the
 * call), so even connecting is bounded by that deadline. A client whose dial
 * blocks (topo.h rlk_topo_dial_blocks: the master the sentinels name, a TLS
 * handshake) is dialled by rlk_conn_open on a thread (redlock_io_dial).
 *
 * A call still unanswered at the deadline fails (redlock_io_wait) but its
 * connection is kept for the rest of the session: a later call on that
 * server is pipelined behind it, so the server runs the two in order (an
 * acquire that arrives late is followed by its release; docs/redlock.md).
 *
 * Calls go by name, formatted as rlk_conn_evalv sends them
 * (rlk_conn_format_script: EVALSHA, or FCALL in functions mode); on NOSCRIPT
 * a pipelined SCRIPT LOAD (SHA-1 checked against the build) and the call
 * again, once: the rule, the reload and the check are client/conn.h's
 * (rlk_conn_noscript_retry, _append_reload, _check_load_reply), as for every
 * other call. Only the I/O is this file's: non-blocking writes and poll().
 *
 * The token lock's extend and release go as the server's own commands
 * where it has them (client/native.h): COMMAND DOCS rides, pipelined, in
 * front of the first call on a client whose answer is not known (that call
 * goes by script); later calls are SET IFEQ PX / DELIFEQ / DELEX IFEQ with
 * the scripts' replies. Acquire stays a script (its busy reply, the PTTL,
 * needs a second command).
 *
 * Not thread-safe: a session belongs to the thread that opened it. Error
 * messages also go through rlk_set_error, so the calling thread's last error
 * on each client changes.
 */
#ifndef RLK_REDLOCK_IO_H
#define RLK_REDLOCK_IO_H

#include <pthread.h>
#include <stdatomic.h>

#include <hiredis/hiredis.h>

#include "rlk.h"
#include "client/pool.h"
#include "client/sigpipe.h"

#define REDLOCK_IO_ERR_MAX 512
#define REDLOCK_IO_MAX_EXPECT 16    /* replies one connection may owe at once */

/* The outcome of one call. */
typedef struct redlock_req {
    int done;                       /* the reply came, or the call failed */
    int rc;                         /* RLK_OK: reply is the script's (non-error) reply */
    redisReply *reply;              /* owned by the request: redlock_req_clear frees it */
    char err[REDLOCK_IO_ERR_MAX];   /* when rc != RLK_OK */
    int not_sent;                   /* failed before it was written: it did not run */
} redlock_req;

enum redlock_expect_kind {
    REDLOCK_EXP_SETUP = 1,          /* AUTH / SELECT of a new connection */
    REDLOCK_EXP_LOAD = 2,           /* SCRIPT LOAD after NOSCRIPT */
    REDLOCK_EXP_CALL = 3,           /* EVALSHA, or the native command (client/native.h) */
    REDLOCK_EXP_DOCS = 4            /* COMMAND DOCS: which native commands the server has */
};

/* One reply a connection still owes, in the order the requests were written. */
typedef struct redlock_expect {
    int kind;
    int setup;                      /* SETUP: which set-up command (conn.h rlk_conn_setup_cmd) */
    redlock_req *req;               /* CALL: where the outcome goes; NULL once abandoned */
    const rlk_script_info *script;  /* CALL, LOAD */
    char *cmd;                      /* CALL: the formatted EVALSHA, kept for a NOSCRIPT retry */
    size_t cmdlen;
    int retried;                    /* CALL: this is the retry after NOSCRIPT */
    int load_rc;                    /* CALL: the LOAD in front of it failed (RLK_ERR_SHA...) */
    int native;                     /* CALL: 1 + rlk_native_format's op; 0: a script call */
    char load_err[REDLOCK_IO_ERR_MAX];
} redlock_expect;

typedef struct redlock_conn {
    rlk_client *c;
    rlk_slot *slot;                 /* checked out for the whole session */
    int fresh;                      /* connected in this session */
    int answered;                   /* some reply came on it in this session */
    int asked_docs;                 /* COMMAND DOCS sent on this connection since checkout (client/native.h) */
    redlock_expect exp[REDLOCK_IO_MAX_EXPECT];
    int nexp;
    /* redlock_io_dial: a thread makes the connection (a blocking dial), with
     * nothing owed; calls sent meanwhile wait in exp, unwritten until it is made. */
    int dialling;
    atomic_int dial_done;
    pthread_t dial_thread;
    long long dial_until;
    int wake_fd;                    /* the session's wake pipe (write end) */
    int dial_rc;
    char dial_err[REDLOCK_IO_ERR_MAX];
} redlock_conn;

typedef struct redlock_io {
    int n;
    redlock_conn *conns;
    rlk_sigpipe_guard sigpipe;  /* SIGPIPE blocked from open to close */
    int wake[2];                /* dial threads say they are done here; -1: no pipe */
} redlock_io;

/* Checks out one connection slot of each client (no I/O). RLK_ERR_NOMEM. */
int redlock_io_open(redlock_io *io, rlk_client *const *clients, int n);

/* Starts the blocking dials (a redis+sentinel:// master, a TLS handshake) of
 * every server that needs a new connection, one thread each, each bounded by
 * until_ns; calls sent to such a server wait until its connection is made
 * (redlock_io_wait writes them then), so a server that hangs in its
 * handshake costs the others nothing. A call whose connection came too late
 * or failed is reported as not sent (RLK_ERR_IO, or the AUTH error). */
void redlock_io_dial(redlock_io *io, long long until_ns);

/* Queues a call of script `name` on server i. The request is zeroed first;
 * a call that cannot even be queued is done at once with its error. */
void redlock_io_send(redlock_io *io, int i, const char *name,
                     int nkeys, const char *const *keys,
                     int nargs, const char *const *args, redlock_req *req);

/* Runs the I/O until every queued call is done or until_ns (CLOCK_MONOTONIC)
 * passes; calls still unanswered then fail with RLK_ERR_TIMEOUT (timeout_ms
 * is only for the message) and their replies are dropped when they come. */
void redlock_io_wait(redlock_io *io, long long until_ns, long long timeout_ms);

/* Returns every slot to its pool: clean connections back in blocking mode
 * with the client's timeouts, connections that still owe replies (or broke)
 * closed. */
void redlock_io_close(redlock_io *io);

/* Frees the reply of a request. */
void redlock_req_clear(redlock_req *req);

#endif /* RLK_REDLOCK_IO_H */
