/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * url.c - the URLs a client accepts:
 *
 *   redis://[[user]:password@]host[:port][/db]     port 6379, db 0 when left out
 *   redis://user@host[:port][/db]                  user only: the password comes from
 *                                                  rlk_options.password
 *   unix:///absolute/path[?db=N]
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...]
 *                                                  seed nodes of a Redis Cluster
 *                                                  (client/cluster.c); no db
 *   redis+sentinel://...                           url_sentinel.c
 *   rediss://, rediss+cluster://, rediss+sentinel:// the same over TLS (tls.h)
 *
 * The scheme is case-insensitive (REDIS://, Unix://), as in RFC 3986.
 *
 * host is a name, an IPv4 address or a bracketed IPv6 address ([::1]).
 * user and password are percent-decoded (%40 for '@', %2F for '/', ...).
 * Error messages never contain the password.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <strings.h>

#include "rlk.h"
#include "client/url.h"

#define RLK_URL_FAIL(...) (snprintf(err, errlen, __VA_ARGS__), RLK_ERR_URL)

static int rlk_hexval(int ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    ch = tolower(ch);
    if (ch >= 'a' && ch <= 'f')
        return ch - 'a' + 10;
    return -1;
}

/* Percent-decodes s[0..n) into a new string; NULL with *bad set when a
 * %-sequence is malformed or decodes to a NUL byte. */
static char *rlk_pct_decode(const char *s, size_t n, int *bad)
{
    char *out = malloc(n + 1);
    size_t j = 0;

    *bad = 0;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;

        if (s[i] != '%') {
            out[j++] = s[i];
            continue;
        }
        hi = (i + 2 < n) ? rlk_hexval((unsigned char)s[i + 1]) : -1;
        lo = (i + 2 < n) ? rlk_hexval((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(out);
            *bad = 1;
            return NULL;
        }
        out[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    out[j] = '\0';
    return out;
}

/* Parses a decimal integer s[0..n) in lo..hi (digits only); -1 when invalid. */
static long rlk_parse_num(const char *s, size_t n, long lo, long hi)
{
    long v = 0;

    if (n == 0 || n > 10)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return (v < lo || v > hi) ? -1 : v;
}

static int rlk_url_userinfo(const char *s, size_t n, rlk_url *u, char *err, size_t errlen)
{
    const char *colon = memchr(s, ':', n);
    size_t ulen = colon ? (size_t)(colon - s) : n;
    int bad = 0;

    if (n == 0)
        return RLK_URL_FAIL("bad url: empty user name before '@'");
    if (ulen > 0 && !(u->user = rlk_pct_decode(s, ulen, &bad)))
        return bad ? RLK_URL_FAIL("bad url: malformed %%-escape in the user name") : RLK_ERR_NOMEM;
    if (!colon)
        return RLK_OK;  /* redis://user@host: the password comes from rlk_options.password */
    u->password = rlk_pct_decode(colon + 1, n - ulen - 1, &bad);
    if (!u->password)
        return bad ? RLK_URL_FAIL("bad url: malformed %%-escape in the password") : RLK_ERR_NOMEM;
    if (!u->password[0])
        return RLK_URL_FAIL("bad url: empty password");
    return RLK_OK;
}

/* The user info before the last '@' of s[0..*authlen), parsed into u; s and
 * *authlen then skip it. */
static int rlk_url_skip_userinfo(const char **s, size_t *authlen, rlk_url *u, char *err,
                                 size_t errlen)
{
    const char *at = NULL;
    int rc;

    for (size_t i = 0; i < *authlen; i++)
        if ((*s)[i] == '@')
            at = *s + i;
    if (!at)
        return RLK_OK;
    if ((rc = rlk_url_userinfo(*s, (size_t)(at - *s), u, err, errlen)) != RLK_OK)
        return rc;
    *authlen -= (size_t)(at + 1 - *s);
    *s = at + 1;
    return RLK_OK;
}

static int rlk_host_char_ok(char ch)
{
    return isalnum((unsigned char)ch) || ch == '.' || ch == '-' || ch == '_';
}

/* host[:port] or [v6][:port] */
static int rlk_url_hostport(const char *s, size_t n, rlk_url *u, char *err, size_t errlen)
{
    const char *host = s, *rest;
    size_t hostlen;

    if (n > 0 && s[0] == '[') {
        const char *close = memchr(s, ']', n);

        if (!close)
            return RLK_URL_FAIL("bad url: '[' without ']' around an IPv6 address");
        host = s + 1;
        hostlen = (size_t)(close - host);
        for (size_t i = 0; i < hostlen; i++)
            if (!isxdigit((unsigned char)host[i]) && host[i] != ':' && host[i] != '.')
                return RLK_URL_FAIL("bad url: invalid IPv6 address");
        rest = close + 1;
    } else {
        const char *colon = memchr(s, ':', n);

        hostlen = colon ? (size_t)(colon - s) : n;
        for (size_t i = 0; i < hostlen; i++)
            if (!rlk_host_char_ok(s[i]))
                return RLK_URL_FAIL("bad url: invalid character '%c' in the host name", s[i]);
        rest = s + hostlen;
    }
    if (hostlen == 0)
        return RLK_URL_FAIL("bad url: missing host");
    u->port = 6379;
    if (rest < s + n) {
        long port;

        if (*rest != ':')
            return RLK_URL_FAIL("bad url: unexpected text after the host");
        port = rlk_parse_num(rest + 1, (size_t)(s + n - rest - 1), 1, 65535);
        if (port < 0)
            return RLK_URL_FAIL("bad url: port must be a number in 1..65535");
        u->port = (int)port;
    }
    u->host = strndup(host, hostlen);
    return u->host ? RLK_OK : RLK_ERR_NOMEM;
}

static int rlk_url_db(const char *s, size_t n, rlk_url *u, char *err, size_t errlen)
{
    long db = rlk_parse_num(s, n, 0, INT_MAX);

    if (n == 0)
        return RLK_OK;
    if (db < 0)
        return RLK_URL_FAIL("bad url: database must be a number in 0..%d", INT_MAX);
    u->db = (int)db;
    return RLK_OK;
}

static int rlk_url_tcp(const char *s, rlk_url *u, char *err, size_t errlen)
{
    size_t authlen = strcspn(s, "/?#");
    int rc;

    if (s[authlen] == '?' || s[authlen] == '#')
        return RLK_URL_FAIL("bad url: query strings and fragments are not supported on redis://");
    if ((rc = rlk_url_skip_userinfo(&s, &authlen, u, err, errlen)) != RLK_OK ||
        (rc = rlk_url_hostport(s, authlen, u, err, errlen)) != RLK_OK)
        return rc;
    s += authlen;
    if (*s == '/') {
        s++;
        if (strchr(s, '/') || strchr(s, '?') || strchr(s, '#'))
            return RLK_URL_FAIL("bad url: expected redis://host:port/db");
        return rlk_url_db(s, strlen(s), u, err, errlen);
    }
    return RLK_OK;
}

static int rlk_url_unix(const char *s, rlk_url *u, char *err, size_t errlen)
{
    size_t pathlen = strcspn(s, "?#");
    const char *q = s + pathlen;

    if (s[0] != '/' || pathlen < 2)
        return RLK_URL_FAIL("bad url: expected unix:///absolute/path/to/socket");
    if (*q == '#')
        return RLK_URL_FAIL("bad url: fragments are not supported");
    if (*q == '?') {
        if (strncmp(q, "?db=", 4) != 0 || strchr(q + 1, '&') || strchr(q + 1, '#'))
            return RLK_URL_FAIL("bad url: the only parameter a unix:// URL takes is ?db=N");
        if (q[4] == '\0')
            return RLK_URL_FAIL("bad url: database must be a number in 0..%d", INT_MAX);
        if (rlk_url_db(q + 4, strlen(q + 4), u, err, errlen) != RLK_OK)
            return RLK_ERR_URL;
    }
    u->is_unix = 1;
    u->path = strndup(s, pathlen);
    return u->path ? RLK_OK : RLK_ERR_NOMEM;
}

/* redis+cluster://[userinfo@]host:port[,host:port...]: the seeds; the
 * first is also u->host/u->port. */
static int rlk_url_cluster(const char *s, rlk_url *u, char *err, size_t errlen)
{
    size_t authlen = strcspn(s, "/?#"), n = 1;
    const char *p;
    int rc;

    if (s[authlen] != '\0')
        return RLK_URL_FAIL("bad url: a cluster has no database, query or fragment "
                            "(redis+cluster://host:port,host:port)");
    if ((rc = rlk_url_skip_userinfo(&s, &authlen, u, err, errlen)) != RLK_OK)
        return rc;
    for (p = s; *p; p++)
        n += *p == ',';
    u->is_cluster = 1;
    u->seed_host = calloc(n, sizeof *u->seed_host);
    u->seed_port = calloc(n, sizeof *u->seed_port);
    if (!u->seed_host || !u->seed_port)
        return RLK_ERR_NOMEM;
    for (p = s; u->nseeds < (int)n; p += strcspn(p, ",") + 1) {
        rlk_url one;

        memset(&one, 0, sizeof one);
        rc = rlk_url_hostport(p, strcspn(p, ","), &one, err, errlen);
        if (rc != RLK_OK)
            return rc;
        u->seed_host[u->nseeds] = one.host;
        u->seed_port[u->nseeds++] = one.port;
    }
    u->host = strdup(u->seed_host[0]);
    u->port = u->seed_port[0];
    return u->host ? RLK_OK : RLK_ERR_NOMEM;
}

int rlk_url_parse(const char *url, rlk_url *u, char *err, size_t errlen)
{
    int rc;

    memset(u, 0, sizeof *u);
    if (err && errlen)
        err[0] = '\0';
    if (!url || !*url)
        return RLK_URL_FAIL("bad url: empty");
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return RLK_URL_FAIL("bad url: spaces or control characters (percent-encode them)");
    if (strncasecmp(url, "rediss", 6) == 0 && (url[6] == ':' || url[6] == '+')) {
        /* rediss://, rediss+cluster://, rediss+sentinel://: parsed as the redis form */
        char *plain = malloc(strlen(url));

        if (!plain)
            return snprintf(err, errlen, "out of memory"), RLK_ERR_NOMEM;
        memcpy(plain, "redis", 5);
        strcpy(plain + 5, url + 6);
        rc = rlk_url_parse(plain, u, err, errlen);
        free(plain);
        u->tls = 1;
        return rc;
    }
    if (strncasecmp(url, "redis://", 8) == 0)
        rc = rlk_url_tcp(url + 8, u, err, errlen);
    else if (strncasecmp(url, "redis+cluster://", 16) == 0)
        rc = rlk_url_cluster(url + 16, u, err, errlen);
    else if (strncasecmp(url, "redis+sentinel://", 17) == 0)
        rc = rlk_url_sentinel_parse(url + 17, u, err, errlen);
    else if (!u->tls && strncasecmp(url, "unix://", 7) == 0)
        rc = rlk_url_unix(url + 7, u, err, errlen);
    else
        rc = RLK_URL_FAIL("bad url: expected redis://host:port[/db], unix:///path[?db=N], "
                          "redis+cluster://host:port[,host:port...] or "
                          "redis+sentinel://host:port[,host:port...]/MASTERNAME[/db] "
                          "(rediss, rediss+cluster, rediss+sentinel: the same over TLS)");
    if (rc == RLK_ERR_NOMEM)
        snprintf(err, errlen, "out of memory");
    return rc;
}

void rlk_url_free(rlk_url *u)
{
    rlk_url_sentinel_free(u);
    free(u->host);
    free(u->path);
    free(u->user);
    free(u->password);
    for (int i = 0; i < u->nseeds; i++)
        free(u->seed_host[i]);
    free(u->seed_host);
    free(u->seed_port);
    memset(u, 0, sizeof *u);
}

void rlk_url_pct_encode(char *out, size_t len, const char *s)
{
    size_t j = strlen(out);

    for (; *s && j + 4 < len; s++) {
        unsigned char ch = (unsigned char)*s;

        if ((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
            ch == '-' || ch == '.' || ch == '_' || ch == '~')
            out[j++] = (char)ch;
        else
            j += (size_t)snprintf(out + j, len - j, "%%%02X", ch);
    }
    out[j] = '\0';
}

void rlk_url_address(const rlk_url *u, char *buf, size_t len)
{
    if (u->is_sentinel)
        rlk_url_sentinel_address(u, buf, len);
    else if (u->is_unix)
        snprintf(buf, len, "%s", u->path ? u->path : "");
    else if (u->host && strchr(u->host, ':'))
        snprintf(buf, len, "[%s]:%d", u->host, u->port);
    else
        snprintf(buf, len, "%s:%d", u->host ? u->host : "", u->port);
}

/* The URL in its normal form: "redis://[user[:***]@]addr/db" (mask: the
 * password as ***; else left out) or "unix://path?db=N". malloc'd. */
static char *rlk_url_format(const rlk_url *u, int mask)
{
    char addr[300];
    char userinfo[400] = "";
    size_t len = strlen(u->path ? u->path : "") + 800 + (size_t)u->nseeds * 300;
    char *out;

    if (u->is_sentinel)
        return rlk_url_sentinel_format(u, mask);
    if (!(out = malloc(len)))
        return NULL;
    if (u->is_unix) {
        snprintf(out, len, "unix://%s?db=%d", u->path, u->db);
        return out;
    }
    if (u->user)
        rlk_url_pct_encode(userinfo, sizeof userinfo, u->user);
    if (mask && u->password)
        strcat(userinfo, ":***");
    if (u->user || (mask && u->password))
        strcat(userinfo, "@");
    if (u->is_cluster) {
        size_t j = (size_t)snprintf(out, len, "%s+cluster://%s", u->tls ? "rediss" : "redis",
                                    userinfo);

        for (int i = 0; i < u->nseeds && j < len; i++) {
            rlk_url one = {.host = u->seed_host[i], .port = u->seed_port[i]};

            rlk_url_address(&one, addr, sizeof addr);
            j += (size_t)snprintf(out + j, len - j, "%s%s", i ? "," : "", addr);
        }
        return out;
    }
    rlk_url_address(u, addr, sizeof addr);
    snprintf(out, len, "%s://%s%s/%d", u->tls ? "rediss" : "redis", userinfo, addr, u->db);
    return out;
}

char *rlk_url_masked(const rlk_url *u)
{
    return rlk_url_format(u, 1);
}

char *rlk_url_without_password(const rlk_url *u)
{
    return rlk_url_format(u, 0);
}

/* 1 for a name or address of this machine's loopback: localhost (and
 * *.localhost), 127.0.0.0/8, ::1. Decided from the text, never by a lookup. */
int rlk_url_host_is_loopback(const char *host)
{
    size_t n = host ? strlen(host) : 0;
    struct in_addr v4;
    struct in6_addr v6;

    if (!host)
        return 0;
    if (strcasecmp(host, "localhost") == 0 ||
        (n > 10 && strcasecmp(host + n - 10, ".localhost") == 0))
        return 1;
    if (inet_pton(AF_INET, host, &v4) == 1)
        return (ntohl(v4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, host, &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}
