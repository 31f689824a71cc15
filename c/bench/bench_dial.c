/* SPDX-License-Identifier: BSD-3-Clause */
/* bench_dial: plain or TLS connections for the raw drivers (bench_dial.h). */
#include "bench_dial.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef RLK_BENCH_HAVE_LIB
#include "client/tls.h"
#include "client/transport.h"
#endif

rlk_bench_tls rlk_bench_tls_cfg;

#ifdef RLK_BENCH_HAVE_LIB
/* One TLS context per process: a --procs child makes its own after the fork. */
static pthread_mutex_t rlk_bench_tls_mu = PTHREAD_MUTEX_INITIALIZER;
static rlk_tls *rlk_bench_tls_ctx;
static pid_t rlk_bench_tls_pid;

static rlk_tls *rlk_bench_tls_get(char *err, size_t errlen)
{
    rlk_tls *t;

    pthread_mutex_lock(&rlk_bench_tls_mu);
    if (!rlk_bench_tls_ctx || rlk_bench_tls_pid != getpid()) {
        rlk_tls_config cfg;

        memset(&cfg, 0, sizeof cfg);
        cfg.cacert = rlk_bench_tls_cfg.cacert;
        cfg.cert = rlk_bench_tls_cfg.cert;
        cfg.key = rlk_bench_tls_cfg.key;
        rlk_bench_tls_ctx = NULL;   /* the parent's, if any, stays the parent's */
        if (rlk_tls_new(&cfg, &rlk_bench_tls_ctx, err, errlen) == 0)
            rlk_bench_tls_pid = getpid();
    }
    t = rlk_bench_tls_ctx;
    pthread_mutex_unlock(&rlk_bench_tls_mu);
    return t;
}
#endif

static long long rlk_bench_dial_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

redisContext *rlk_bench_dial(const char *host, int port, struct timeval tv, char *err,
                             size_t errlen)
{
    redisContext *c;

    if (!rlk_bench_tls_cfg.on) {
        c = redisConnectWithTimeout(host, port, tv);
        if (c == NULL || c->err) {
            snprintf(err, errlen, "connect to %s:%d: %s", host, port,
                     c ? c->errstr : "out of memory");
            if (c)
                redisFree(c);
            return NULL;
        }
        return c;
    }
#ifdef RLK_BENCH_HAVE_LIB
    {
        rlk_tls *t = rlk_bench_tls_get(err, errlen);
        long long deadline = rlk_bench_dial_now_ns() + (long long)tv.tv_sec * 1000000000LL +
                             (long long)tv.tv_usec * 1000LL;
        rlk_tls_conn *conn = NULL;
        int fd = -1;

        if (!t)
            return NULL;
        if (rlk_tls_dial(t, host, port, deadline, &conn, &fd, err, errlen) != 0)
            return NULL;
        c = redisConnectFd(fd);
        if (c == NULL || c->err) {
            snprintf(err, errlen, "connect to %s:%d: out of memory", host, port);
            rlk_tls_conn_close(conn, 0);
            if (c)
                redisFree(c);
            else
                close(fd);
            return NULL;
        }
        rlk_tls_conn_bind(conn, c);
        return c;
    }
#else
    (void)tv;
    snprintf(err, errlen, "--tls: this rlk-bench was built without the rlk library (no TLS)");
    return NULL;
#endif
}

unsigned long long rlk_bench_dial_handshakes(void)
{
#ifdef RLK_BENCH_HAVE_LIB
    unsigned long long n = 0;

    pthread_mutex_lock(&rlk_bench_tls_mu);
    if (rlk_bench_tls_ctx && rlk_bench_tls_pid == getpid())
        n = rlk_tls_handshakes(rlk_bench_tls_ctx);
    pthread_mutex_unlock(&rlk_bench_tls_mu);
    return n;
#else
    return 0;
#endif
}

void *rlk_bench_command(redisContext *c, const char *format, ...)
{
    va_list ap;
    void *reply = NULL;
    int rc;

    va_start(ap, format);
    rc = redisvAppendCommand(c, format, ap);
    va_end(ap);
    if (rc != REDIS_OK || rlk_bench_get_reply(c, &reply) != REDIS_OK)
        return NULL;
    return reply;
}

void *rlk_bench_command_argv(redisContext *c, int argc, const char **argv, const size_t *lens)
{
    void *reply = NULL;

    if (redisAppendCommandArgv(c, argc, argv, lens) != REDIS_OK ||
        rlk_bench_get_reply(c, &reply) != REDIS_OK)
        return NULL;
    return reply;
}

int rlk_bench_get_reply(redisContext *c, void **reply)
{
#ifdef RLK_BENCH_HAVE_LIB
    return rlk_transport_get_reply(c, reply);
#else
    return redisGetReply(c, reply);
#endif
}

int rlk_bench_flush(redisContext *c)
{
#ifdef RLK_BENCH_HAVE_LIB
    return rlk_transport_flush(c);
#else
    int done = 0;

    while (!done)
        if (redisBufferWrite(c, &done) != REDIS_OK)
            return REDIS_ERR;
    return REDIS_OK;
#endif
}

void rlk_bench_close(redisContext *c)
{
#ifdef RLK_BENCH_HAVE_LIB
    rlk_transport_free(c);
#else
    redisFree(c);
#endif
}
