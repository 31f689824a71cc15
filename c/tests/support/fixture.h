/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fixture.h - a real redis-server per test, started and stopped by PID.
 *
 * rlk_fx_start() picks a free loopback port (bind test, retried on a
 * collision), makes a temp dir (mkdtemp), runs
 *   redis-server --bind 127.0.0.1 --port P --save '' --appendonly no --dir TMP
 * plus the configured extras with stdout/stderr going to TMP/redis.log, and
 * returns once PING answers (bounded poll). Every started server is kept in
 * a registry: an atexit handler and handlers for fatal signals kill what is
 * left, and on Linux the server also dies with the test process
 * (PR_SET_PDEATHSIG), so a failing or killed test leaves no server behind.
 *
 * The server under test is $RLK_TEST_SERVER: "redis" (the default, Debian's
 * Redis 7), "valkey" (Valkey 8), "redis8" (Redis 8) or "valkey9" (Valkey 9);
 * docs/servers.md. The redis-server binary is $RLK_REDIS_SERVER, else
 * RLK_FX_REDIS_SERVER (a compile definition), else "redis-server" from PATH;
 * for Valkey the same with $RLK_VALKEY_SERVER, RLK_FX_VALKEY_SERVER and
 * "valkey-server" (and valkey-cli for the cluster's --cluster create); for
 * redis8 / valkey9 $RLK_REDIS8_SERVER / $RLK_VALKEY9_SERVER (and _CLI), else
 * DIR/redis8/bin/redis-server (DIR/valkey9/bin/valkey-server), DIR being
 * $RLK_SERVERS_DIR or RLK_FX_SERVERS_DIR, where tools/bootstrap builds them.
 * When a server other than the default is asked for and not installed, the
 * first start prints "SKIP: ..." and exits 77 (RLK_FX_SKIP), which ctest
 * reports as skipped (SKIP_RETURN_CODE 77).
 *
 * Clusters (cluster.h) and sentinels (sentinel.h) are built from these
 * servers (config.cluster, config.sentinel_conf).
 *
 * All functions return 0 on success and -1 on failure, after printing the
 * reason (and the tail of the server log, when there is one) to stderr.
 */
#ifndef RLK_TEST_FIXTURE_H
#define RLK_TEST_FIXTURE_H

#include <stdarg.h>
#include <stddef.h>
#include <sys/types.h>
#include <hiredis/hiredis.h>

#define RLK_FX_MAX_EXTRA 32
#define RLK_FX_PATH_MAX 256

typedef struct rlk_fx_config {
    const char *requirepass; /* NULL: no password on the default user */
    const char *acl_user;    /* NULL, or an ACL rule line: "alice on >pw ~* &* +@all" */
    int unixsocket;          /* nonzero: also listen on TMP/redis.sock */
    const char *const *extra; /* NULL, or a NULL-terminated list of more args */
    int cluster;             /* nonzero: cluster-enabled yes, TMP/nodes.conf, the cluster bus on
                              * a second free port (cluster-port), cluster_node_timeout_ms */
    long cluster_node_timeout_ms; /* <= 0: 2000 */
    const char *sentinel_conf; /* non-NULL: run as a sentinel (redis-server TMP/sentinel.conf
                                * --sentinel) with this text as its config file */
    int tls;                 /* 0: TLS-only when $RLK_TEST_TLS names a certificate directory
                              * (tools/tls-certs), else plain; 1: TLS-only (needs that directory
                              * too); -1: plain whatever the environment says. A TLS-only server
                              * runs --port 0 --tls-port P (replication, cluster bus and sentinel
                              * links over TLS too); the fixture's own control connection goes
                              * through a private unix socket (TMP/ctl.sock) */
    int tls_auth_clients;    /* TLS: nonzero asks for a client certificate (mutual TLS) */
    const char *tls_cert;    /* TLS: the server's certificate pair in the TLS directory, by base
                              * name (NULL: "server"; "expired", "wrongname", "untrusted": the
                              * bad ones tools/tls-certs makes) */
} rlk_fx_config;

typedef struct rlk_fx_server {
    pid_t pid;                         /* 0 when not running */
    int port;
    char dir[RLK_FX_PATH_MAX];         /* the temp dir ("" once removed) */
    char log_path[RLK_FX_PATH_MAX];
    char sock_path[RLK_FX_PATH_MAX];   /* "" unless config.unixsocket */
    char password[128];                /* the requirepass, "" when none */
    int bus_port;                      /* the cluster bus port; 0 unless config.cluster */
    char conf_path[RLK_FX_PATH_MAX];   /* TMP/nodes.conf or TMP/sentinel.conf, else "" */
    int tls;                           /* 1: TLS-only; port is the TLS port (rlk_fx_url gives
                                          rediss://) */
    char ctl_path[RLK_FX_PATH_MAX];    /* TLS: the control socket (TMP/ctl.sock), else "" */
    int argc;                          /* the full redis-server argv, kept for restart */
    char *argv[RLK_FX_MAX_EXTRA + 48];
} rlk_fx_server;

void rlk_fx_config_init(rlk_fx_config *cfg);

/* Starts a server (cfg may be NULL: defaults). *s is overwritten. */
int rlk_fx_start(rlk_fx_server *s, const rlk_fx_config *cfg);

/* Starts n servers with the same config; on failure stops those started. */
int rlk_fx_start_n(rlk_fx_server *servers, int n, const rlk_fx_config *cfg);

/* SIGTERM (plus SIGCONT, in case it is paused), wait up to 5 s, then
 * SIGKILL; removes the temp dir. Safe to call on a stopped server. */
int rlk_fx_stop(rlk_fx_server *s);
void rlk_fx_stop_n(rlk_fx_server *servers, int n);

/* Stops every server still registered (what the atexit handler does). */
void rlk_fx_stop_all(void);

/* Stops the process (the temp dir stays) and starts it again on the same
 * port with the same arguments; returns once PING answers. */
int rlk_fx_restart(rlk_fx_server *s);

/* Kills the process with SIGKILL (the temp dir and the port number stay:
 * rlk_fx_restart brings it back). */
int rlk_fx_crash(rlk_fx_server *s);

/* SIGSTOP / SIGCONT: the process stops answering while its sockets stay open. */
int rlk_fx_pause(rlk_fx_server *s);
int rlk_fx_resume(rlk_fx_server *s);
/* 1 once the process is seen stopped (state T in /proc: the SIGSTOP taken), within 5 s; else 0. */
int rlk_fx_stopped(const rlk_fx_server *s);

/* CLIENT PAUSE <ms> ALL from a fresh connection. Note that under ALL the
 * server also delays CLIENT UNPAUSE, so the pause simply runs out. */
int rlk_fx_client_pause(const rlk_fx_server *s, long ms);

/* DEBUG SLEEP ms begun on a new connection, returned once the server is
 * asleep (a probe connection killed by the same pipeline right before the
 * sleep sees its EOF); NULL on failure. The server must run with
 * --enable-debug-command yes (a refused DEBUG is not noticed here). A
 * request written meanwhile runs when the sleep ends, even if its
 * connection closed in between (a lost reply of a call that ran).
 * rlk_fx_sleep_end waits for the sleep's end and frees the connection. */
redisContext *rlk_fx_sleep_begin(const rlk_fx_server *s, long ms);
void rlk_fx_sleep_end(redisContext *x);

/* A new hiredis connection (TCP), authenticated with the requirepass. The
 * caller frees it with redisFree. NULL on failure. */
redisContext *rlk_fx_connect(const rlk_fx_server *s);

/* One command on a fresh connection (printf-style, as redisCommand). The
 * caller frees the reply. NULL on a connection error. */
redisReply *rlk_fx_command(const rlk_fx_server *s, const char *fmt, ...);

/* Every write the master has taken so far reaches n replicas: one connection
 * writes a marker key (rlk:fx:replicated) and sends WAIT n timeout_ms itself.
 * WAIT counts the replicas that have the calling connection's last write, so
 * a WAIT on a fresh connection that wrote nothing covers nothing; the marker's
 * place in the one replication stream covers every earlier write. The number
 * of replicas that acknowledged, -1 on a connection or reply error. */
int rlk_fx_replicated(const rlk_fx_server *master, int n, long timeout_ms);

/* rlk_fx_command with a va_list. */
redisReply *rlk_fx_vcommand(const rlk_fx_server *s, const char *fmt, va_list ap);

/* ROLE: 'M' master, 'S' replica, 0 when it cannot be asked (or not running). */
int rlk_fx_role(const rlk_fx_server *s);

/* "redis://127.0.0.1:P" (db < 0) or "redis://127.0.0.1:P/db". */
int rlk_fx_url(const rlk_fx_server *s, int db, char *buf, size_t len);

/* "unix:///TMP/redis.sock" (db < 0) or "...?db=N"; -1 without a socket. */
int rlk_fx_unix_url(const rlk_fx_server *s, int db, char *buf, size_t len);

/* A loopback port that nothing listens on right now (bind test). -1 on failure. */
int rlk_fx_free_port(void);

/* A loopback port that refuses connections for as long as this process runs: bound (without
 * SO_REUSEADDR) but never listening, so a connect there is refused and no server started
 * beside the test can take it, as it can take rlk_fx_free_port's. -1 on failure. */
int rlk_fx_refused_port(void);

/* The exit status of a test whose server is not installed (ctest SKIP_RETURN_CODE). */
#define RLK_FX_SKIP 77

/* The server's family, "redis" or "valkey" (redis8 is "redis", valkey9 is
 * "valkey"), and the name in $RLK_TEST_SERVER: "redis" (unset or empty),
 * "valkey", "redis8" or "valkey9" (anything else is an error: the process
 * exits 2). */
const char *rlk_fx_server_kind(void);
const char *rlk_fx_server_name(void);
int rlk_fx_is_valkey(void);

/* Exits 77 (RLK_FX_SKIP) after "SKIP: ..." on stderr when the server under test
 * is not the default one and its binaries are missing; rlk_fx_start calls it. Prints the
 * server under test once. */
void rlk_fx_require_server(void);

/* The server binary the fixture runs ($RLK_REDIS_SERVER, else the build's
 * RLK_FX_REDIS_SERVER, else "redis-server"), and redis-cli ($RLK_REDIS_CLI,
 * RLK_FX_REDIS_CLI, "redis-cli"); under $RLK_TEST_SERVER=valkey valkey-server
 * ($RLK_VALKEY_SERVER, RLK_FX_VALKEY_SERVER, "valkey-server") and valkey-cli
 * ($RLK_VALKEY_CLI, RLK_FX_VALKEY_CLI, "valkey-cli"); under redis8 / valkey9
 * the binaries tools/bootstrap built (see above). */
const char *rlk_fx_redis_server_path(void);
/* $RLK_TEST_TLS: the certificate directory (tools/tls-certs) when the suite runs over TLS,
 * else NULL. When set, the first TLS server started also sets $RLK_TLS_CACERT to its
 * ca.crt (unless set), so every rlk client of the test (and its children) trusts it. */
const char *rlk_fx_tls_dir(void);
const char *rlk_fx_redis_cli_path(void);

/* CLOCK_MONOTONIC in ns / ms. */
long long rlk_fx_now_ns(void);
long long rlk_fx_now_ms(void);

/* Sleeps about ms milliseconds (for bounded polls and back-offs only). */
void rlk_fx_sleep_ms(long ms);

#endif /* RLK_TEST_FIXTURE_H */
