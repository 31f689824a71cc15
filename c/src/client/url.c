/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * url.c - the URLs a client accepts:
 *
 *   redis://[[user]:password@]host[:port][/db]     port 6379, db 0 when left out
 *   redis://user@host[:port][/db]                  user only: the password comes from
 *                                                  rlk_options.password
 *   unix:///absolute/path[?db=N]
 *   redis+cluster://[[user]:password@]host[:port][,host[:port]...][/db]
 *                                                  seed nodes of a Redis Cluster
 *                                                  (client/cluster.c); db 0 when left
 *                                                  out; another db needs a cluster whose
 *                                                  every node allows it (Valkey 9's
 *                                                  cluster-databases), which connect checks
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/MASTERNAME[/db]
 *                    [?sentinel_user=U&sentinel_password=P]
 *   rediss://, rediss+cluster://, rediss+sentinel:// the same over TLS (tls.h)
 *
 * The scheme is case-insensitive (REDIS://, Unix://), as in RFC 3986.
 *
 * host is a name, an IPv4 address or a bracketed IPv6 address ([::1]).
 * user and password are percent-decoded (%40 for '@', %2F for '/', ...).
 * Error messages never contain the password.
 *
 * In a sentinel URL, host:port are the sentinels (port 26379 when left
 * out), tried in the order given; MASTERNAME is the name they monitor
 * (`sentinel monitor MASTERNAME ...`). user, password and db are the
 * master's (and, after a failover, the new master's), as in a redis:// URL.
 * The sentinels' own AUTH, when they have one, comes from the query
 * (sentinel_password, with sentinel_user for an ACL user) or
 * rlk_options.sentinel_password. Each part follows the rules (percent-
 * decoding, IPv6 brackets, port range, db range) and messages of the
 * redis:// form.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <strings.h>

#include "rlk.h"
#include "client/random.h"
#include "client/url.h"

#define RLK_URL_FAIL(...) (snprintf(err, errlen, __VA_ARGS__), RLK_ERR_URL)

#define RLK_SENTINEL_PORT 26379

/* Percent-decodes s[0..n), the URL's what, into a new string *out; RLK_ERR_URL when a
 * %-sequence is malformed or decodes to a NUL byte. */
static int rlk_pct_decode(const char *what, const char *s, size_t n, char **out, char *err,
                          size_t errlen)
{
    size_t j = 0;

    if (!(*out = malloc(n + 1)))
        return RLK_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        int hi, lo;

        if (s[i] != '%') {
            (*out)[j++] = s[i];
            continue;
        }
        hi = (i + 2 < n) ? rlk_hex_digit((unsigned char)s[i + 1]) : -1;
        lo = (i + 2 < n) ? rlk_hex_digit((unsigned char)s[i + 2]) : -1;
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) {
            free(*out);
            *out = NULL;
            return RLK_URL_FAIL("bad url: malformed %%-escape in the %s", what);
        }
        (*out)[j++] = (char)(hi * 16 + lo);
        i += 2;
    }
    (*out)[j] = '\0';
    return RLK_OK;
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

/* The user info before the last '@' of s[0..*authlen) (first: the first '@'), parsed into
 * u; s and *authlen then skip it. */
static int rlk_url_skip_userinfo(const char **s, size_t *authlen, int first, rlk_url *u,
                                 char *err, size_t errlen)
{
    const char *at = first ? memchr(*s, '@', *authlen) : NULL, *colon;
    size_t n, ulen;
    int rc;

    for (size_t i = 0; !first && i < *authlen; i++)
        if ((*s)[i] == '@')
            at = *s + i;
    if (!at)
        return RLK_OK;
    n = (size_t)(at - *s);
    colon = memchr(*s, ':', n);
    ulen = colon ? (size_t)(colon - *s) : n;
    if (n == 0)
        return RLK_URL_FAIL("bad url: empty user name before '@'");
    if (ulen > 0 && (rc = rlk_pct_decode("user name", *s, ulen, &u->user, err, errlen)) != RLK_OK)
        return rc;
    /* redis://user@host: the password comes from rlk_options.password */
    if (colon && (rc = rlk_pct_decode("password", colon + 1, n - ulen - 1, &u->password, err,
                                      errlen)) != RLK_OK)
        return rc;
    if (colon && !u->password[0])
        return RLK_URL_FAIL("bad url: empty password");
    *authlen -= n + 1;
    *s = at + 1;
    return RLK_OK;
}

/* host[:port] or [v6][:port] into *hostp (malloc'd) and *portp (defport
 * when left out). */
static int rlk_url_hostport(const char *s, size_t n, int defport, char **hostp, int *portp,
                            char *err, size_t errlen)
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
            if (!isalnum((unsigned char)s[i]) && !memchr(".-_", s[i], 3))
                return RLK_URL_FAIL("bad url: invalid character '%c' in the host name", s[i]);
        rest = s + hostlen;
    }
    if (hostlen == 0)
        return RLK_URL_FAIL("bad url: missing host");
    *portp = defport;
    if (rest < s + n) {
        long port;

        if (*rest != ':')
            return RLK_URL_FAIL("bad url: unexpected text after the host");
        port = rlk_parse_num(rest + 1, (size_t)(s + n - rest - 1), 1, 65535);
        if (port < 0)
            return RLK_URL_FAIL("bad url: port must be a number in 1..65535");
        *portp = (int)port;
    }
    *hostp = strndup(host, hostlen);
    return *hostp ? RLK_OK : RLK_ERR_NOMEM;
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
    if ((rc = rlk_url_skip_userinfo(&s, &authlen, 0, u, err, errlen)) != RLK_OK ||
        (rc = rlk_url_hostport(s, authlen, 6379, &u->host, &u->port, err, errlen)) != RLK_OK)
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
        if (q[4] == '\0' || rlk_url_db(q + 4, strlen(q + 4), u, err, errlen) != RLK_OK)
            return RLK_URL_FAIL("bad url: database must be a number in 0..%d", INT_MAX);
    }
    u->is_unix = 1;
    u->path = strndup(s, pathlen);
    return u->path ? RLK_OK : RLK_ERR_NOMEM;
}

/* The comma-separated host[:port] list s[0..n) into *nodes and *count: a cluster's seeds (port
 * 6379 when left out) or, sentinels, a sentinel URL's sentinels (port 26379, at most
 * RLK_URL_SENTINELS_MAX). */
static int rlk_url_nodes(const char *s, size_t n, int sentinels, rlk_url_node **nodes, int *count,
                         char *err, size_t errlen)
{
    size_t total = 1;

    for (size_t i = 0; i < n; i++)
        total += s[i] == ',';
    if (sentinels && total > RLK_URL_SENTINELS_MAX)
        return RLK_URL_FAIL("bad url: at most %d sentinels", RLK_URL_SENTINELS_MAX);
    if (!(*nodes = calloc(total, sizeof **nodes)))
        return RLK_ERR_NOMEM;
    for (const char *p = s; *count < (int)total; (*count)++) {
        const char *comma = memchr(p, ',', (size_t)(s + n - p));
        size_t one = comma ? (size_t)(comma - p) : (size_t)(s + n - p);
        rlk_url_node *nd = &(*nodes)[*count];
        int rc;

        if (sentinels && one == 0)
            return RLK_URL_FAIL("bad url: empty sentinel address "
                                "(redis+sentinel://host:port,host:port/MASTERNAME)");
        if (memchr(p, '@', one))    /* a sentinel URL's: its user info ends at the first '@' */
            return RLK_URL_FAIL("bad url: user info goes once, before the first sentinel");
        rc = rlk_url_hostport(p, one, sentinels ? RLK_SENTINEL_PORT : 6379, &nd->host, &nd->port,
                              err, errlen);
        if (rc != RLK_OK)
            return rc;
        p += one + 1;
    }
    return RLK_OK;
}

/* redis+cluster://[userinfo@]host:port[,host:port...][/db]: the seeds; the
 * first is also u->host/u->port. Whether the cluster has database db is the
 * nodes' to say (client/cluster.c asks them on connect). */
static int rlk_url_cluster(const char *s, rlk_url *u, char *err, size_t errlen)
{
    size_t authlen = strcspn(s, "/?#");
    const char *db = s[authlen] == '/' ? s + authlen + 1 : NULL;
    int rc;

    if ((s[authlen] != '\0' && !db) || (db && strpbrk(db, "/?#")))
        return RLK_URL_FAIL("bad url: a cluster URL takes no query, fragment or path but a "
                            "database (redis+cluster://host:port,host:port[/db])");
    if (db && (rc = rlk_url_db(db, strlen(db), u, err, errlen)) != RLK_OK)
        return rc;
    u->is_cluster = 1;
    if ((rc = rlk_url_skip_userinfo(&s, &authlen, 0, u, err, errlen)) != RLK_OK ||
        (rc = rlk_url_nodes(s, authlen, 0, &u->seeds, &u->nseeds, err, errlen)) != RLK_OK)
        return rc;
    u->host = strdup(u->seeds[0].host);
    u->port = u->seeds[0].port;
    return u->host ? RLK_OK : RLK_ERR_NOMEM;
}

/* A percent-decoded value of a sentinel URL (master name, query value): non-empty. */
static int rlk_url_value(const char *what, const char *s, size_t n, char **out, char *err,
                         size_t errlen)
{
    if (n == 0)
        return RLK_URL_FAIL("bad url: empty %s", what);
    if (memchr(s, '@', n) || memchr(s, '/', n))
        return RLK_URL_FAIL("bad url: %%-escape '@' and '/' in the %s", what);
    return rlk_pct_decode(what, s, n, out, err, errlen);
}

static int rlk_url_sentinel_query(const char *q, rlk_url *u, char *err, size_t errlen)
{
    while (*q) {
        size_t n = strcspn(q, "&");
        int user = strncmp(q, "sentinel_user=", 14) == 0;
        size_t klen = user ? 13 : 17;
        char **slot = user ? &u->sentinel_user : &u->sentinel_password;
        int rc;

        if (!user && strncmp(q, "sentinel_password=", 18) != 0)
            return RLK_URL_FAIL("bad url: a redis+sentinel:// URL takes only ?sentinel_user=U and "
                                "&sentinel_password=P");
        if (*slot)
            return RLK_URL_FAIL("bad url: %.*s given twice", (int)klen, q);
        rc = rlk_url_value(user ? "sentinel user" : "sentinel password", q + klen + 1,
                           n - klen - 1, slot, err, errlen);
        if (rc != RLK_OK)
            return rc;
        q += n + (q[n] == '&');
    }
    if (u->sentinel_user && !u->sentinel_password)
        return RLK_URL_FAIL("bad url: sentinel_user needs sentinel_password");
    return RLK_OK;
}

/* What follows "redis+sentinel://" (the grammar at the top). */
static int rlk_url_sentinel(const char *s, rlk_url *u, char *err, size_t errlen)
{
    size_t authlen = strcspn(s, "/?#"), namelen;
    const char *path, *query;
    int rc;

    u->is_sentinel = 1;
    if (strchr(s, '#'))
        return RLK_URL_FAIL("bad url: fragments are not supported");
    /* the first '@': one more is refused with the sentinel it stands in */
    if ((rc = rlk_url_skip_userinfo(&s, &authlen, 1, u, err, errlen)) != RLK_OK ||
        (rc = rlk_url_nodes(s, authlen, 1, &u->sentinels, &u->nsentinels, err, errlen)) != RLK_OK)
        return rc;
    path = s + authlen;
    query = strchr(path, '?');
    if (*path != '/' || path + 1 == (query ? query : path + strlen(path)))
        return RLK_URL_FAIL("bad url: missing master name (redis+sentinel://host:port/MASTERNAME)");
    path++;
    namelen = strcspn(path, "/?");
    if ((rc = rlk_url_value("master name", path, namelen, &u->master_name, err, errlen)) != RLK_OK)
        return rc;
    path += namelen;
    if (*path == '/') {
        size_t dblen = query ? (size_t)(query - path - 1) : strlen(path + 1);

        if (memchr(path + 1, '/', dblen))
            return RLK_URL_FAIL("bad url: expected redis+sentinel://host:port/MASTERNAME[/db]");
        if ((rc = rlk_url_db(path + 1, dblen, u, err, errlen)) != RLK_OK)
            return rc;
    }
    return query ? rlk_url_sentinel_query(query + 1, u, err, errlen) : RLK_OK;
}

int rlk_url_parse(const char *url, rlk_url *u, char *err, size_t errlen)
{
    const char *rest;
    int rc, redis;

    memset(u, 0, sizeof *u);
    if (err && errlen)
        err[0] = '\0';
    if (!url || !*url)
        return RLK_URL_FAIL("bad url: empty");
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return RLK_URL_FAIL("bad url: spaces or control characters (percent-encode them)");
    /* rediss://, rediss+cluster://, rediss+sentinel://: the redis forms over TLS */
    u->tls = strncasecmp(url, "rediss", 6) == 0;
    redis = strncasecmp(url, "redis", 5) == 0;
    rest = url + 5 + u->tls;
    if (redis && strncmp(rest, "://", 3) == 0)
        rc = rlk_url_tcp(rest + 3, u, err, errlen);
    else if (redis && strncasecmp(rest, "+cluster://", 11) == 0)
        rc = rlk_url_cluster(rest + 11, u, err, errlen);
    else if (redis && strncasecmp(rest, "+sentinel://", 12) == 0)
        rc = rlk_url_sentinel(rest + 12, u, err, errlen);
    else if (strncasecmp(url, "unix://", 7) == 0)
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

static void rlk_url_nodes_free(rlk_url_node *nodes, int n)
{
    for (int i = 0; nodes && i < n; i++)
        free(nodes[i].host);
    free(nodes);
}

void rlk_url_free(rlk_url *u)
{
    rlk_url_nodes_free(u->sentinels, u->nsentinels);
    rlk_url_nodes_free(u->seeds, u->nseeds);
    free(u->master_name);
    free(u->sentinel_user);
    free(u->sentinel_password);
    free(u->host);
    free(u->path);
    free(u->user);
    free(u->password);
    memset(u, 0, sizeof *u);
}

/* Appends s to out (size len), percent-encoding all but unreserved characters. */
static void rlk_url_pct_encode(char *out, size_t len, const char *s)
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

/* Appends printf-style text to out (size len), cut at its end. */
static void rlk_url_cat(char *out, size_t len, const char *fmt, ...)
{
    size_t j = strlen(out);
    va_list ap;

    va_start(ap, fmt);
    if (j + 1 < len)
        vsnprintf(out + j, len - j, fmt, ap);
    va_end(ap);
}

/* Appends host:port ([v6]:port), after a comma unless first. */
static void rlk_url_node_cat(char *out, size_t len, int first, const char *host, int port)
{
    rlk_url_cat(out, len, strchr(host, ':') ? "%s[%s]:%d" : "%s%s:%d", first ? "" : ",", host,
                port);
}

void rlk_url_host_port(char *buf, size_t len, const char *host, int port)
{
    snprintf(buf, len, strchr(host, ':') ? "[%s]:%d" : "%s:%d", host, port);
}

/* Appends the nodes' host:port, comma-separated. */
static void rlk_url_nodes_cat(char *out, size_t len, const rlk_url_node *nodes, int n)
{
    for (int i = 0; i < n; i++)
        rlk_url_node_cat(out, len, i == 0, nodes[i].host, nodes[i].port);
}

void rlk_url_address(const rlk_url *u, char *buf, size_t len)
{
    if (len == 0)
        return;
    buf[0] = '\0';
    if (u->is_sentinel) {       /* "MASTERNAME@host:port,...": the master's address changes */
        rlk_url_cat(buf, len, "%s@", u->master_name ? u->master_name : "");
        rlk_url_nodes_cat(buf, len, u->sentinels, u->nsentinels);
    } else if (u->is_cluster) {
        rlk_url_cat(buf, len, "cluster ");
        rlk_url_nodes_cat(buf, len, u->seeds, u->nseeds);
    } else if (u->is_unix) {
        rlk_url_cat(buf, len, "%s", u->path ? u->path : "");
    } else {
        rlk_url_node_cat(buf, len, 1, u->host ? u->host : "", u->port);
    }
}

static size_t rlk_url_strlen(const char *s)
{
    return s ? strlen(s) : 0;
}

/* The URL in its normal form: "redis[+cluster|+sentinel]://[user[:***]@]addr..."
 * (mask: the password as ***; else left out) or "unix://path?db=N". malloc'd. */
static char *rlk_url_format(const rlk_url *u, int mask)
{
    size_t len = 1024 + rlk_url_strlen(u->path) + rlk_url_strlen(u->host) +
                 3 * (rlk_url_strlen(u->user) + rlk_url_strlen(u->master_name) +
                      rlk_url_strlen(u->sentinel_user)) +
                 300 * (size_t)(u->nseeds + u->nsentinels);
    char *out = malloc(len);

    if (!out)
        return NULL;
    if (u->is_unix) {
        snprintf(out, len, "unix://%s?db=%d", u->path, u->db);
        return out;
    }
    snprintf(out, len, "%s%s://", u->tls ? "rediss" : "redis",
             u->is_cluster ? "+cluster" : u->is_sentinel ? "+sentinel" : "");
    if (u->user)
        rlk_url_pct_encode(out, len, u->user);
    rlk_url_cat(out, len, "%s%s", mask && u->password ? ":***" : "",
                u->user || (mask && u->password) ? "@" : "");
    if (u->is_cluster) {        /* the seeds; the db when not 0 */
        rlk_url_nodes_cat(out, len, u->seeds, u->nseeds);
        if (u->db != 0)
            rlk_url_cat(out, len, "/%d", u->db);
        return out;
    }
    if (u->is_sentinel) {
        rlk_url_nodes_cat(out, len, u->sentinels, u->nsentinels);
        rlk_url_cat(out, len, "/");
        rlk_url_pct_encode(out, len, u->master_name ? u->master_name : "");
    } else {
        rlk_url_node_cat(out, len, 1, u->host ? u->host : "", u->port);
    }
    rlk_url_cat(out, len, "/%d", u->db);
    if (u->sentinel_user) {
        rlk_url_cat(out, len, "?sentinel_user=");
        rlk_url_pct_encode(out, len, u->sentinel_user);
    }
    if (mask && u->sentinel_password)
        rlk_url_cat(out, len, "%csentinel_password=***", u->sentinel_user ? '&' : '?');
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
