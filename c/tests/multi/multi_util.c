/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * multi_util.c - servers, clients, probes and the event log for the
 * MultiLock / RedLock tests (see multi_util.h).
 */
#include "multi_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* ---------------------------------------------------------------- servers */

static rlk_client *mu_connect(const rlk_fx_server *srv, long long watchdog_lease_ms)
{
    char url[128];
    rlk_options o;
    rlk_client *c;

    if (rlk_fx_url(srv, -1, url, sizeof url) != 0)
        return NULL;
    rlk_options_init(&o);
    o.url = url;
    o.watchdog_lease_ms = watchdog_lease_ms;
    o.command_timeout_ms = 3000;
    c = rlk_connect(&o);
    if (c && rlk_err(c) != RLK_OK) {
        fprintf(stderr, "connect %s: %s\n", url, rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    return c;
}

int mu_set_start(mu_set *s, int n, long long watchdog_lease_ms)
{
    memset(s, 0, sizeof *s);
    if (n < 1 || n > MU_MAX_SERVERS || rlk_fx_start_n(s->srv, n, NULL) != 0)
        return -1;
    s->n = n;
    for (int i = 0; i < n; i++) {
        if (!(s->c[i] = mu_connect(&s->srv[i], watchdog_lease_ms))) {
            mu_set_stop(s);
            return -1;
        }
    }
    return 0;
}

void mu_set_stop(mu_set *s)
{
    for (int i = 0; i < s->n; i++) {
        rlk_free(s->c[i]);
        s->c[i] = NULL;
    }
    rlk_fx_stop_n(s->srv, s->n);
    s->n = 0;
}

int mu_set_reset(mu_set *s)
{
    int rc = 0;

    for (int i = 0; i < s->n; i++) {
        redisReply *r;

        if (s->srv[i].pid == 0 && rlk_fx_restart(&s->srv[i]) != 0)
            rc = -1;
        r = rlk_fx_command(&s->srv[i], "FLUSHALL");
        if (!r || r->type == REDIS_REPLY_ERROR)
            rc = -1;
        if (r)
            freeReplyObject(r);
    }
    return rc;
}

/* ---------------------------------------------------------------- probes */

int mu_count_holding(const mu_set *s, int n, const char *key)
{
    int count = 0;

    for (int i = 0; i < n && i < s->n; i++)
        if (s->srv[i].pid > 0 && tk_key_exists(&s->srv[i], key) == 1)
            count++;
    return count;
}

long long mu_pttl(const rlk_fx_server *srv, const char *key)
{
    long long v = tk_int(srv, "PTTL %s", key);

    return v == -999 ? -3 : v;
}

int mu_get(const rlk_fx_server *srv, const char *key, char *buf, size_t len)
{
    redisReply *r;
    int rc = -1;

    if (len == 0)
        return -1;
    buf[0] = '\0';
    r = rlk_fx_command(srv, "GET %s", key);
    if (r && r->type == REDIS_REPLY_STRING)
        rc = (size_t)snprintf(buf, len, "%s", r->str) < len ? 0 : -1;
    else if (r && r->type == REDIS_REPLY_NIL)
        rc = 0;
    if (r)
        freeReplyObject(r);
    return rc;
}

int mu_set_px(const rlk_fx_server *srv, const char *key, const char *value, long long ms)
{
    redisReply *r = rlk_fx_command(srv, "SET %s %s PX %lld", key, value, ms);
    int ok = r && r->type == REDIS_REPLY_STATUS;

    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int mu_ping(const rlk_fx_server *srv)
{
    redisReply *r = rlk_fx_command(srv, "PING");
    int ok = r && r->type == REDIS_REPLY_STATUS;

    if (r)
        freeReplyObject(r);
    return ok ? 0 : -1;
}

int mu_wait_client(const rlk_fx_server *srv, const char *needle, long timeout_ms)
{
    long long deadline = rlk_fx_now_ms() + timeout_ms;

    do {
        redisReply *r = rlk_fx_command(srv, "CLIENT LIST");
        int seen = r && r->type == REDIS_REPLY_STRING && strstr(r->str, needle) != NULL;

        if (r)
            freeReplyObject(r);
        if (seen)
            return 0;
        rlk_fx_sleep_ms(2);
    } while (rlk_fx_now_ms() < deadline);
    return -1;
}

/* ---------------------------------------------------------------- shared memory */

void *mu_shared_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

    return p == MAP_FAILED ? NULL : p;     /* anonymous mappings start zeroed */
}

void mu_shared_free(void *p, size_t size)
{
    if (p)
        munmap(p, size);
}
