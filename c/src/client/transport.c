/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.c - dialling (transport.h): plain TCP and unix sockets through
 * hiredis, TLS through tls.c and a socket pair.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client/client_t.h"
#include "client/clock.h"
#include "client/tls.h"
#include "client/transport.h"

int rlk_transport_is_tls(const rlk_client *c)
{
    return c->tls != NULL;
}

static long long rlk_tv_deadline(struct timeval tv)
{
    long long ns = (long long)tv.tv_sec * 1000000000LL + (long long)tv.tv_usec * 1000LL;

    return rlk_clock_now_ns() + (ns > 0 ? ns : 1000LL * RLK_NS_PER_MS);
}

static int rlk_transport_tls(const rlk_client *c, const char *host, int port, struct timeval tv,
                             redisContext **out, char *why, size_t len)
{
    redisContext *ctx;
    int fd, rc, saved;

    rc = rlk_tls_dial(c->tls, host, port, rlk_tv_deadline(tv), &fd, why, len);
    if (rc != RLK_OK)
        return rc;
    ctx = redisConnectFd(fd);
    if (!ctx || ctx->err) {
        saved = ctx && ctx->err ? 0 : ENOMEM;
        if (ctx)
            redisFree(ctx);     /* closes fd */
        else
            close(fd);
        snprintf(why, len, "out of memory");
        errno = saved;
        return RLK_ERR_NOMEM;
    }
    /* What a TCP context would hold: the sentinel code asks which server a
     * connection is to (redisFree frees it). */
    ctx->tcp.host = strdup(host);
    ctx->tcp.port = port;
    if (!ctx->tcp.host) {
        redisFree(ctx);
        snprintf(why, len, "out of memory");
        return RLK_ERR_NOMEM;
    }
    *out = ctx;
    return RLK_OK;
}

int rlk_transport_dial(const rlk_client *c, const char *host, int port, struct timeval tv,
                       redisContext **out, char *why, size_t len)
{
    redisContext *ctx;

    *out = NULL;
    if (why && len)
        why[0] = '\0';
    if (!host && !c->url.is_unix) {
        host = c->url.host;
        port = c->url.port;
    }
    errno = 0;
    if (c->tls && host)
        return rlk_transport_tls(c, host, port, tv, out, why, len);
    ctx = host ? redisConnectWithTimeout(host, port, tv) : redisConnectUnixWithTimeout(c->url.path, tv);
    if (!ctx) {
        snprintf(why, len, "out of memory");
        return RLK_ERR_NOMEM;
    }
    *out = ctx;
    if (ctx->err)
        return RLK_ERR_IO;
    if (host) {
        int saved = errno;

        (void)redisEnableKeepAlive(ctx);
        ctx->err = 0;       /* keep-alive is a nicety: never fail a connection on it */
        ctx->errstr[0] = '\0';
        errno = saved;
    }
    return RLK_OK;
}

int rlk_transport_dial_nonblock(const rlk_client *c, redisContext **out)
{
    *out = c->url.is_unix ? redisConnectUnixNonBlock(c->url.path)
                          : redisConnectNonBlock(c->url.host, c->url.port);
    return *out ? RLK_OK : RLK_ERR_NOMEM;
}

/* ---------------------------------------------------------------- setup */

static const char *rlk_opt_or_env(const char *opt, const char *env)
{
    const char *v;

    if (opt)
        return opt;
    v = getenv(env);
    return v && *v ? v : NULL;
}

static int rlk_env_on(const char *env)
{
    const char *v = getenv(env);

    return v && *v && strcmp(v, "0") != 0 && strcmp(v, "no") != 0 && strcmp(v, "false") != 0;
}

int rlk_transport_setup(rlk_client *c, const rlk_options *o, char *msg, size_t len)
{
    rlk_tls_config cfg;
    int given = o->tls_cacert || o->tls_cacertdir || o->tls_cert || o->tls_key ||
                o->tls_key_password_file || o->tls_sni || o->tls_insecure;
    int on = c->url.tls || o->tls || rlk_env_on("RLK_TLS");
    int rc;

    if (c->url.is_unix) {
        if (on || given)
            return snprintf(msg, len, "TLS options given with a unix:// URL (a unix socket "
                            "is not encrypted: use rediss://host:port)"), RLK_ERR_TLS;
        return RLK_OK;
    }
    if (!on) {
        if (given)
            return snprintf(msg, len, "TLS options given with a plain redis:// URL (use "
                            "rediss:// or --tls)"), RLK_ERR_TLS;
        return RLK_OK;
    }
    c->url.tls = 1;     /* what the client shows: rediss:// */
    memset(&cfg, 0, sizeof cfg);
    cfg.cacert = rlk_opt_or_env(o->tls_cacert, "RLK_TLS_CACERT");
    cfg.cacertdir = rlk_opt_or_env(o->tls_cacertdir, "RLK_TLS_CACERTDIR");
    cfg.cert = rlk_opt_or_env(o->tls_cert, "RLK_TLS_CERT");
    cfg.key = rlk_opt_or_env(o->tls_key, "RLK_TLS_KEY");
    cfg.key_password_file = rlk_opt_or_env(o->tls_key_password_file, "RLK_TLS_KEY_PASSWORD_FILE");
    cfg.sni = rlk_opt_or_env(o->tls_sni, "RLK_TLS_SNI");
    cfg.insecure = o->tls_insecure || rlk_env_on("RLK_TLS_INSECURE");
    rc = rlk_tls_new(&cfg, &c->tls, msg, len);
    if (rc == RLK_OK)
        c->tls_owned = 1;
    return rc;
}
