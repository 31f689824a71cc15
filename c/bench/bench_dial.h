/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_dial: how rlk-bench's raw connections (the baseline and setnx
 * drivers, the setup connection) reach the server: plain TCP, or TLS with
 * --tls through the library's own transport (c/src/client/tls.c), so the
 * baseline and the rlk variant pay the same TLS costs.
 */
#ifndef RLK_BENCH_DIAL_H
#define RLK_BENCH_DIAL_H

#include <hiredis/hiredis.h>
#include <stddef.h>
#include <sys/time.h>

/* Set once from the options, before any dial (and before --procs forks). */
typedef struct rlk_bench_tls {
    int on;                 /* --tls */
    const char *cacert;     /* --cacert FILE (NULL: the system store) */
    const char *cert;       /* --cert FILE (mutual TLS) */
    const char *key;        /* --key FILE */
} rlk_bench_tls;

extern rlk_bench_tls rlk_bench_tls_cfg;

/* A blocking connection to host:port within tv: plain, or TLS when
 * rlk_bench_tls_cfg.on. NULL with one line in err. */
redisContext *rlk_bench_dial(const char *host, int port, struct timeval tv, char *err,
                             size_t errlen);

/* The I/O of a connection rlk_bench_dial made, as hiredis's redisCommand,
 * redisCommandArgv, redisGetReply and redisFree: hiredis's own on plain
 * TCP; over TLS the library's transport (client/transport.h: the calling
 * thread reads and writes the TLS session on the socket). */
void *rlk_bench_command(redisContext *c, const char *format, ...);
void *rlk_bench_command_argv(redisContext *c, int argc, const char **argv, const size_t *lens);
int rlk_bench_get_reply(redisContext *c, void **reply);
/* Writes what redisAppendCommand queued on c, all of it, without reading a reply
 * (hiredis's redisBufferWrite until done, or the library's transport over TLS). */
int rlk_bench_flush(redisContext *c);
void rlk_bench_close(redisContext *c);

/* TLS handshakes this process made (for the JSON line: none per call). */
unsigned long long rlk_bench_dial_handshakes(void);

#endif /* RLK_BENCH_DIAL_H */
