/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * url_sentinel.c - redis+sentinel:// URLs (the url module, url.h):
 *
 *   redis+sentinel://[[user]:password@]host[:port][,host[:port]...]/MASTERNAME[/db]
 *                    [?sentinel_user=U&sentinel_password=P]
 *
 * host:port are the sentinels (port 26379 when left out), tried in the
 * order given; MASTERNAME is the name they monitor (`sentinel monitor
 * MASTERNAME ...`). user, password and db are the master's (and, after a
 * failover, the new master's), as in a redis:// URL. The sentinels' own
 * AUTH, when they have one, comes from the query (sentinel_password, with
 * sentinel_user for an ACL user) or rlk_options.sentinel_password.
 *
 * Each part is checked by rlk_url_parse on a redis:// URL made of it, so
 * the rules (percent-decoding, IPv6 brackets, port range, db range) and the
 * messages are the same, never with a password in them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "client/url.h"

#define RLK_SENTINEL_PORT 26379
#define RLK_SENTINELS_MAX 16

#define RLK_USN_FAIL(...) (snprintf(err, errlen, __VA_ARGS__), RLK_ERR_URL)

/* rlk_url_parse of "redis://" pre s[0..n) post into *out. */
static int rlk_usn_sub(const char *pre, const char *s, size_t n, const char *post, rlk_url *out,
                       char *err, size_t errlen)
{
    size_t len = 8 + strlen(pre) + n + strlen(post) + 1;
    char *buf = malloc(len);
    int rc;

    if (!buf)
        return RLK_ERR_NOMEM;
    snprintf(buf, len, "redis://%s%.*s%s", pre, (int)n, s, post);
    rc = rlk_url_parse(buf, out, err, errlen);
    free(buf);
    return rc;
}

/* One sentinel: host[:port] or [v6][:port]. */
static int rlk_usn_node(const char *s, size_t n, rlk_url_node *node, char *err, size_t errlen)
{
    const char *close = memchr(s, ']', n);
    const char *after = close ? close + 1 : s;
    rlk_url tmp;
    int rc;

    if (n == 0)
        return RLK_USN_FAIL("bad url: empty sentinel address (redis+sentinel://host:port,host:port/MASTERNAME)");
    if (memchr(s, '@', n))
        return RLK_USN_FAIL("bad url: user info goes once, before the first sentinel");
    rc = rlk_usn_sub("", s, n, "", &tmp, err, errlen);
    if (rc == RLK_OK) {
        node->host = tmp.host;
        tmp.host = NULL;
        node->port = memchr(after, ':', (size_t)(s + n - after)) ? tmp.port : RLK_SENTINEL_PORT;
    }
    rlk_url_free(&tmp);
    return rc;
}

static int rlk_usn_nodes(const char *s, size_t n, rlk_url *u, char *err, size_t errlen)
{
    size_t count = 1;

    for (size_t i = 0; i < n; i++)
        count += s[i] == ',';
    if (count > RLK_SENTINELS_MAX)
        return RLK_USN_FAIL("bad url: at most %d sentinels", RLK_SENTINELS_MAX);
    u->sentinels = calloc(count, sizeof *u->sentinels);
    if (!u->sentinels)
        return RLK_ERR_NOMEM;
    while (u->nsentinels < (int)count) {
        const char *comma = memchr(s, ',', n);
        size_t one = comma ? (size_t)(comma - s) : n;
        int rc = rlk_usn_node(s, one, &u->sentinels[u->nsentinels], err, errlen);

        if (rc != RLK_OK)
            return rc;
        u->nsentinels++;
        if (!comma)
            break;
        n -= one + 1;
        s = comma + 1;
    }
    return RLK_OK;
}

static int rlk_usn_userinfo(const char *s, size_t n, rlk_url *u, char *err, size_t errlen)
{
    rlk_url tmp;
    int rc;

    if (memchr(s, '@', n))
        return RLK_USN_FAIL("bad url: user info goes once, before the first sentinel (%%-escape "
                            "'@' as %%40)");
    rc = rlk_usn_sub("", s, n, "@x", &tmp, err, errlen);
    if (rc == RLK_OK) {
        u->user = tmp.user;
        u->password = tmp.password;
        tmp.user = tmp.password = NULL;
    }
    rlk_url_free(&tmp);
    return rc;
}

/* A percent-decoded value (master name, query value): non-empty. */
static int rlk_usn_value(const char *what, const char *s, size_t n, char **out, char *err,
                         size_t errlen)
{
    rlk_url tmp;
    int rc;

    if (n == 0)
        return RLK_USN_FAIL("bad url: empty %s", what);
    if (memchr(s, '@', n) || memchr(s, '/', n))
        return RLK_USN_FAIL("bad url: %%-escape '@' and '/' in the %s", what);
    rc = rlk_usn_sub(":", s, n, "@x", &tmp, err, errlen);
    if (rc == RLK_ERR_URL)
        snprintf(err, errlen, "bad url: malformed %%-escape in the %s", what);
    if (rc == RLK_OK) {
        *out = tmp.password;
        tmp.password = NULL;
    }
    rlk_url_free(&tmp);
    return rc;
}

static int rlk_usn_db(const char *s, size_t n, rlk_url *u, char *err, size_t errlen)
{
    rlk_url tmp;
    int rc;

    if (memchr(s, '/', n))
        return RLK_USN_FAIL("bad url: expected redis+sentinel://host:port/MASTERNAME[/db]");
    rc = rlk_usn_sub("x/", s, n, "", &tmp, err, errlen);
    u->db = tmp.db;
    rlk_url_free(&tmp);
    return rc;
}

static int rlk_usn_query(const char *q, rlk_url *u, char *err, size_t errlen)
{
    while (*q) {
        size_t n = strcspn(q, "&"), klen;
        const char *eq = memchr(q, '=', n);
        char **slot = NULL;
        int rc;

        klen = eq ? (size_t)(eq - q) : n;
        if (klen == 13 && strncmp(q, "sentinel_user", 13) == 0)
            slot = &u->sentinel_user;
        else if (klen == 17 && strncmp(q, "sentinel_password", 17) == 0)
            slot = &u->sentinel_password;
        if (!slot || !eq)
            return RLK_USN_FAIL("bad url: a redis+sentinel:// URL takes only ?sentinel_user=U and "
                                "&sentinel_password=P");
        if (*slot)
            return RLK_USN_FAIL("bad url: %.*s given twice", (int)klen, q);
        rc = rlk_usn_value(slot == &u->sentinel_user ? "sentinel user" : "sentinel password",
                           eq + 1, n - klen - 1, slot, err, errlen);
        if (rc != RLK_OK)
            return rc;
        q += n + (q[n] == '&');
    }
    if (u->sentinel_user && !u->sentinel_password)
        return RLK_USN_FAIL("bad url: sentinel_user needs sentinel_password");
    return RLK_OK;
}

int rlk_url_sentinel_parse(const char *s, rlk_url *u, char *err, size_t errlen)
{
    size_t authlen = strcspn(s, "/?#"), namelen;
    const char *at = NULL, *path, *query;
    int rc;

    u->is_sentinel = 1;
    if (strchr(s, '#'))
        return RLK_USN_FAIL("bad url: fragments are not supported");
    for (size_t i = authlen; i > 0 && !at; i--)     /* the first '@': more is refused */
        if (s[authlen - i] == '@')
            at = s + authlen - i;
    if (at) {
        if ((rc = rlk_usn_userinfo(s, (size_t)(at - s), u, err, errlen)) != RLK_OK)
            return rc;
        authlen -= (size_t)(at + 1 - s);
        s = at + 1;
    }
    if ((rc = rlk_usn_nodes(s, authlen, u, err, errlen)) != RLK_OK)
        return rc;
    path = s + authlen;
    query = strchr(path, '?');
    if (*path != '/' || path + 1 == (query ? query : path + strlen(path)))
        return RLK_USN_FAIL("bad url: missing master name (redis+sentinel://host:port/MASTERNAME)");
    path++;
    namelen = strcspn(path, "/?");
    if ((rc = rlk_usn_value("master name", path, namelen, &u->master_name, err, errlen)) != RLK_OK)
        return rc;
    path += namelen;
    if (*path == '/' && (rc = rlk_usn_db(path + 1, query ? (size_t)(query - path - 1)
                                                          : strlen(path + 1), u, err, errlen)) != RLK_OK)
        return rc;
    return query ? rlk_usn_query(query + 1, u, err, errlen) : RLK_OK;
}

void rlk_url_sentinel_free(rlk_url *u)
{
    for (int i = 0; u->sentinels && i < u->nsentinels; i++)
        free(u->sentinels[i].host);
    free(u->sentinels);
    free(u->master_name);
    free(u->sentinel_user);
    free(u->sentinel_password);
    u->sentinels = NULL;
    u->nsentinels = 0;
    u->master_name = u->sentinel_user = u->sentinel_password = NULL;
}

static void rlk_usn_nodes_text(const rlk_url *u, char *out, size_t len)
{
    size_t j = strlen(out);

    for (int i = 0; i < u->nsentinels && j + 1 < len; i++) {
        const rlk_url_node *nd = &u->sentinels[i];

        j += (size_t)snprintf(out + j, len - j, strchr(nd->host, ':') ? "%s[%s]:%d" : "%s%s:%d",
                              i ? "," : "", nd->host, nd->port);
        if (j >= len)
            j = len - 1;
    }
}

char *rlk_url_sentinel_format(const rlk_url *u, int mask)
{
    size_t len = 4096;
    char *out = malloc(len);

    if (!out)
        return NULL;
    snprintf(out, len, "%s+sentinel://", u->tls ? "rediss" : "redis");
    if (u->user)
        rlk_url_pct_encode(out, len, u->user);
    if (mask && u->password)
        strcat(out, ":***");
    if (u->user || (mask && u->password))
        strcat(out, "@");
    rlk_usn_nodes_text(u, out, len - 600);
    strcat(out, "/");
    rlk_url_pct_encode(out, len - 300, u->master_name ? u->master_name : "");
    snprintf(out + strlen(out), len - strlen(out), "/%d", u->db);
    if (u->sentinel_user) {
        strcat(out, "?sentinel_user=");
        rlk_url_pct_encode(out, len - 40, u->sentinel_user);
    }
    if (mask && u->sentinel_password)
        strcat(out, u->sentinel_user ? "&sentinel_password=***" : "?sentinel_password=***");
    return out;
}

void rlk_url_sentinel_address(const rlk_url *u, char *buf, size_t len)
{
    if (len == 0)
        return;
    snprintf(buf, len, "%s@", u->master_name ? u->master_name : "");
    rlk_usn_nodes_text(u, buf, len);
}
