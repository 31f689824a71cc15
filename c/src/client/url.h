/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * url.h - redis://, unix://, redis+cluster:// and redis+sentinel:// URLs (url.c).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_URL_H
#define RLK_URL_H

#include <stddef.h>

#define RLK_URL_SENTINELS_MAX 16

typedef struct rlk_url {
    int is_unix;        /* 1: unix socket at path; 0: TCP host:port */
    char *host;         /* TCP host, without IPv6 brackets */
    int port;
    char *path;         /* unix socket path */
    char *user;         /* NULL: none (AUTH password); may be set without a password */
    char *password;     /* NULL: no AUTH */
    int db;             /* SELECT db when nonzero */
    int tls;            /* rediss://, rediss+cluster://, rediss+sentinel:// (or --tls) */
    int is_cluster;     /* redis+cluster://: host/port are the first of nseeds seed nodes */
    int nseeds;
    struct rlk_url_node *seeds;         /* nseeds entries */
    /* redis+sentinel://: host/port are unset; the master is
     * found through the sentinels. user/password/db are the master's. */
    int is_sentinel;
    int nsentinels;                     /* at most RLK_URL_SENTINELS_MAX */
    struct rlk_url_node *sentinels;     /* nsentinels entries */
    char *master_name;
    char *sentinel_user;                /* AUTH for the sentinels; NULL: none */
    char *sentinel_password;
} rlk_url;

/* A seed node of a redis+cluster:// URL, or a sentinel of a redis+sentinel:// URL. */
typedef struct rlk_url_node {
    char *host;         /* without IPv6 brackets */
    int port;           /* when left out: 6379 for a seed, 26379 for a sentinel */
} rlk_url_node;

/* Parses url into *u (zeroed first). On failure returns RLK_ERR_URL (or
 * RLK_ERR_NOMEM) with a one-line reason in err, which never contains the
 * password. Free with rlk_url_free in both cases. */
int rlk_url_parse(const char *url, rlk_url *u, char *err, size_t errlen);
void rlk_url_free(rlk_url *u);
/* "redis://u:***@host:port/db" or "unix:///path?db=N" (malloc'd, NULL: OOM). */
char *rlk_url_masked(const rlk_url *u);
/* The same URL with its password left out: "redis://u@host:port/db" or
 * "redis://host:port/db" (malloc'd, NULL: OOM). Safe to pass on to other
 * processes. */
char *rlk_url_without_password(const rlk_url *u);
/* 1 for a name or address of this machine's loopback: localhost (and
 * *.localhost), 127.0.0.0/8, ::1; decided from the text, never by a lookup
 * (rlk check warns about plain TCP to any other host). */
int rlk_url_host_is_loopback(const char *host);
/* "host:port", or "[host]:port" for an IPv6 host, in buf: how messages write one node. */
void rlk_url_host_port(char *buf, size_t len, const char *host, int port);
/* "host:port", "[v6]:port", the socket path, "cluster host:port,..." (the
 * seeds) or "MASTERNAME@host:port,..." (a sentinel URL: the master's address
 * changes), for messages. */
void rlk_url_address(const rlk_url *u, char *buf, size_t len);

#endif /* RLK_URL_H */
