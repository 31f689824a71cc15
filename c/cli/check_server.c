/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_server.c - rlk check's probes of the server itself (check.h): what it
 * is and its family, the transport, its role, eviction, persistence, rlk's
 * scripts on it, its clock and latency.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_cli.h"
#include "client/client.h"
#include "client/functions.h"
#include "client/native.h"
#include "client/tls.h"
#include "client/url.h"

/* ---------------------------------------------------------------- server, role */

/* Which server and what version: Valkey says server_name:valkey and valkey_version (its
 * redis_version is the Redis it is compatible with, 7.2.4 for Valkey 8); Redis has neither. */
static void server_identity(const char *info, char *name, size_t nlen, char *version, size_t vlen,
                            char *compat, size_t clen)
{
    char server[32] = "";

    compat[0] = '\0';
    rlk_ck_info_field(info, "server_name", server, sizeof server);
    if (strcmp(server, "valkey") == 0 && rlk_ck_info_field(info, "valkey_version", version, vlen) == 0) {
        snprintf(name, nlen, "Valkey");
        rlk_ck_info_field(info, "redis_version", compat, clen);
        return;
    }
    snprintf(name, nlen, "Redis");
    rlk_ck_info_field(info, "redis_version", version, vlen);
}

void rlk_ck_server(rlk_checker *k)
{
    redisReply *r;
    char version[64], mode[32], name[16], compat[64], shown[160];
    rlk_ck_finding *f;
    int rc = RLK_CK_CMD(k, &r, "INFO");
    int valkey;

    if (rc != RLK_OK || !r || r->type != REDIS_REPLY_STRING) {
        if (k->fatal)
            return;
        f = rlk_ck_add(k, "server", RLK_CF_UNKNOWN, "INFO refused: %s", rlk_errstr(k->c));
        rlk_ck_fix(f, "allow INFO to this user (+info) so that rlk check can read the version, "
                   "role, maxmemory and persistence");
        rlk_ck_add(k, "role", RLK_CF_UNKNOWN, "INFO refused: role not known");
        if (r)
            freeReplyObject(r);
        return;
    }
    k->info = strdup(r->str);
    freeReplyObject(r);
    if (!k->info)
        return;
    server_identity(k->info, name, sizeof name, version, sizeof version, compat, sizeof compat);
    snprintf(k->server, sizeof k->server, "%s", name);
    valkey = strcmp(name, "Valkey") == 0;
    if (valkey && compat[0])
        snprintf(shown, sizeof shown, "Valkey %s (Redis %s compatible)", version, compat);
    else
        snprintf(shown, sizeof shown, "%s %s", name, version);
    if (rlk_ck_info_field(k->info, "redis_mode", mode, sizeof mode) != 0)
        snprintf(mode, sizeof mode, "standalone");
    if (strcmp(mode, "sentinel") == 0) {
        f = rlk_ck_add(k, "server", RLK_CF_ERROR, "%s is a Sentinel, not a data server", shown);
        rlk_ck_fix(f, "point rlk at the master the sentinels monitor (SENTINEL "
                   "GET-MASTER-ADDR-BY-NAME <master>)");
    } else if (!valkey && atoi(version) < 5) {
        /* Every Valkey release (7.2 and later) has what the scripts need; Redis from 5 on. */
        f = rlk_ck_add(k, "server", RLK_CF_ERROR, "%s, %s: rlk's scripts need Redis 5 or later "
                "(they read TIME before writing, which needs effects replication)", shown, mode);
        rlk_ck_fix(f, "upgrade to Redis 6.2 or 7, or Valkey");
    } else {
        f = rlk_ck_add(k, "server", RLK_CF_OK, "%s, %s", shown, mode);
    }
    {
        char a[96], b[64], c[96];

        rlk_ck_json(f, ", \"server\": \"%s\", \"version\": %s, \"mode\": %s", valkey ? "valkey" : "redis",
                 rlk_ck_jstr(a, sizeof a, version), rlk_ck_jstr(b, sizeof b, mode));
        if (valkey && compat[0])
            rlk_ck_json(f, ", \"redis_version\": %s", rlk_ck_jstr(c, sizeof c, compat));
    }
}

/* ---------------------------------------------------------------- family, native */

/* The server's family and what it means for locks, and which kinds work
 * without scripts (check_family.c decides; this asks the server). */
void rlk_ck_family(rlk_checker *k)
{
    const char *const *keys;
    const char *values[4] = {NULL, NULL, NULL, NULL};
    redisReply *got[4] = {NULL, NULL, NULL, NULL};
    rlk_cfind cf;
    rlk_ck_finding *f;
    char version[64];
    int fam, caps = 0, rc;

    if (k->info) {
        fam = rlk_family_of(k->info, version, sizeof version);
        keys = rlk_family_config_keys(fam);
        for (int i = 0; keys[i] && i < 4; i++) {
            redisReply *r = NULL;

            if (RLK_CK_CMD(k, &r, "CONFIG", "GET", keys[i]) == RLK_OK && r &&
                r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
                r->element[1]->type == REDIS_REPLY_STRING)
                values[i] = r->element[1]->str;
            got[i] = r;
            if (k->fatal)
                break;
        }
        rlk_family_finding(k->info, fam, values, &cf);
        for (int i = 0; i < 4; i++)
            if (got[i])
                freeReplyObject(got[i]);
        if (k->fatal)
            return;
        f = rlk_ck_add(k, cf.check, cf.level, "%s", cf.message);
        if (cf.fix[0])
            rlk_ck_fix(f, "%s", cf.fix);
        rlk_ck_json(f, ", \"family\": \"%s\"", rlk_family_name(fam));
    }
    rc = rlk_native_caps(k->c, &caps);
    if (rlk_ck_conn_error(rc)) {
        k->fatal = rc;
        return;
    }
    k->native_caps = caps;
    k->native_token = rc == RLK_OK && (caps & RLK_NATIVE_SETIFEQ) &&
                   (caps & (RLK_NATIVE_DELIFEQ | RLK_NATIVE_DELEX));
    rlk_family_native_finding(rc == RLK_OK, caps, &cf);
    f = rlk_ck_add(k, cf.check, cf.level, "%s", cf.message);
    rlk_ck_json(f, ", \"without_scripts\": [%s]",
             rc == RLK_OK && (caps & RLK_NATIVE_SETIFEQ) &&
                     (caps & (RLK_NATIVE_DELIFEQ | RLK_NATIVE_DELEX)) ? "\"token\"" : "");
}

/* ---------------------------------------------------------------- transport */

/* The first host the URL names: the server, the first seed or sentinel. */
static const char *url_first_host(const rlk_url *u)
{
    if (u->is_sentinel && u->nsentinels > 0)
        return u->sentinels[0].host;
    return u->host;
}


/* The user gave --insecure: would rlk accept the certificate without it? A second
 * connection with the check on; its refusal is kept when it is about the certificate
 * itself (expired, another host's name) - an unknown CA stays the --insecure warning. */
static void check_tls_verified(rlk_checker *k)
{
    rlk_options o;
    rlk_client *c;
    const char *why;

    rlk_options_init(&o);
    if (rlk_cli_conn_options_quiet(k->o->url, &o) >= 0)
        return;
    o.tls_insecure = 0;
    o.no_preload = 1;
    o.pool_size = 1;
    if (!(c = rlk_connect(&o)))
        return;
    if (rlk_err(c) != RLK_OK && (why = rlk_ck_tls_refusal(rlk_errstr(c))) != NULL &&
        (strstr(why, "expired") || strstr(why, "does not name")))
        snprintf(k->tls_refused, sizeof k->tls_refused, "%s", why);
    rlk_free(c);
}

void rlk_ck_transport(rlk_checker *k)
{
    const rlk_url *u = &k->c->url;
    const char *host = url_first_host(u);
    rlk_tls_peer p;
    rlk_ck_finding *f;

    if (u->is_unix) {
        rlk_ck_add(k, "transport", RLK_CF_OK, "unix socket (local, not encrypted)");
        return;
    }
    if (!k->c->tls) {
        if (rlk_url_host_is_loopback(host)) {
            rlk_ck_add(k, "transport", RLK_CF_OK, "plain TCP to %s (loopback)", host ? host : "?");
            return;
        }
        f = rlk_ck_add(k, "transport", RLK_CF_WARNING, "plain TCP to %s: the password and every lock call "
                "cross the network in clear", host ? host : "?");
        rlk_ck_fix(f, "turn TLS on at the server (tls-port) and connect with rediss:// "
                   "(docs/tls.md)");
        return;
    }
    memset(&p, 0, sizeof p);
    rlk_tls_last_peer(k->c->tls, &p);
    if (!p.known) {
        rlk_ck_add(k, "transport", RLK_CF_UNKNOWN, "TLS: no handshake seen");
        return;
    }
    if (!p.verified && !k->refused_first)
        check_tls_verified(k);
    if (k->tls_refused[0] || p.days_left < 0) {
        /* An expired certificate, one that names another host, or one no trusted CA signed:
         * rlk refuses the server (or would, without --insecure), and every lock call fails. */
        const char *why = k->tls_refused[0] ? k->tls_refused : "the certificate has expired";

        f = rlk_ck_add(k, "transport", RLK_CF_ERROR, "TLS to %s (%s, %s), certificate %s refused%s: %s",
                p.addr, p.protocol, p.cipher, p.subject,
                !p.verified && !k->refused_first ? " (without --insecure)" : "", why);
        if (p.days_left < 0)
            snprintf(f->message + strlen(f->message), sizeof f->message - strlen(f->message),
                     " (expired %ld days ago)", -p.days_left);
        if (k->refused_first)
            snprintf(f->message + strlen(f->message), sizeof f->message - strlen(f->message),
                     "; the other checks were made without the certificate check");
        if (p.days_left < 0 || strstr(why, "expired"))
            rlk_ck_fix(f, "renew the server's certificate (tls-cert-file): clients refuse an "
                       "expired one and every lock call fails");
        else if (strstr(why, "does not name"))
            rlk_ck_fix(f, "connect by a name the certificate has (or --sni NAME), or give the "
                       "server a certificate for the host clients connect to");
        else
            rlk_ck_fix(f, "give the CA that signed the server's certificate with --cacert (or "
                       "--cacertdir), or a certificate from a CA the system trusts");
    } else if (!p.verified) {
        f = rlk_ck_add(k, "transport", RLK_CF_WARNING, "TLS to %s (%s, %s), certificate NOT verified "
                "(--insecure): anyone in the path can pose as the server", p.addr, p.protocol,
                p.cipher);
        rlk_ck_fix(f, "give the server's CA with --cacert (or --cacertdir) and drop --insecure");
    } else if (p.days_left < 30) {
        f = rlk_ck_add(k, "transport", RLK_CF_WARNING,
                "TLS to %s (%s, %s), certificate %s verified; it expires in %ld days (within "
                "30 days)", p.addr, p.protocol, p.cipher, p.subject, p.days_left);
        rlk_ck_fix(f, "renew the server's certificate (tls-cert-file) before it expires: clients "
                   "refuse an expired one and every lock call fails");
    } else {
        f = rlk_ck_add(k, "transport", RLK_CF_OK, "TLS to %s (%s, %s), certificate %s verified; it "
                "expires in %ld days", p.addr, p.protocol, p.cipher, p.subject, p.days_left);
    }
    {
        char b[64], c[128], d[300];

        rlk_ck_json(f, ", \"tls\": true, \"protocol\": %s, \"cipher\": %s, \"subject\": %s, "
                 "\"days_left\": %ld, \"verified\": %s", rlk_ck_jstr(b, sizeof b, p.protocol),
                 rlk_ck_jstr(c, sizeof c, p.cipher), rlk_ck_jstr(d, sizeof d, p.subject), p.days_left,
                 p.verified ? "true" : "false");
        if (k->tls_refused[0])
            rlk_ck_json(f, ", \"refused\": %s", rlk_ck_jstr(d, sizeof d, k->tls_refused));
    }
}

/* Subscribers of the sentinels' hello channel: sentinels monitoring this server. */
static long long sentinel_count(rlk_checker *k)
{
    redisReply *r;
    long long n = -1;

    if (RLK_CK_CMD(k, &r, "PUBSUB", "NUMSUB", "__sentinel__:hello") == RLK_OK && r &&
        r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

void rlk_ck_role(rlk_checker *k)
{
    char role[32], master[128];
    long long replicas, sentinels, cluster;
    rlk_ck_finding *f;

    if (!k->info)
        return;
    rlk_ck_info_field(k->info, "role", role, sizeof role);
    replicas = rlk_ck_info_int(k->info, "connected_slaves", 0);
    cluster = rlk_ck_info_int(k->info, "cluster_enabled", 0);
    sentinels = sentinel_count(k);
    if (k->fatal)
        return;
    if (strcmp(role, "slave") == 0) {
        char host[64] = "", port[16] = "";

        rlk_ck_info_field(k->info, "master_host", host, sizeof host);
        rlk_ck_info_field(k->info, "master_port", port, sizeof port);
        snprintf(master, sizeof master, "%s:%s", host, port);
        f = rlk_ck_add(k, "role", RLK_CF_ERROR, "a replica of %s: lock scripts write, a replica refuses "
                "them (READONLY), and a lock taken on a writable replica excludes nobody", master);
        rlk_ck_fix(f, "point rlk at the master (%s), or at the sentinels that know it", master);
        rlk_ck_json(f, ", \"role\": \"replica\"");
    } else if (cluster && rlk_ck_info_int(k->info, "redis_version", 0) >= 7 &&
               rlk_client_pubsub(k->c) == RLK_PUBSUB_GLOBAL) {
        /* Redisson 4.x (shardedSubscriptionMode AUTO) uses SPUBLISH / SSUBSCRIBE on a Redis 7
         * cluster; a plain URL (one server to rlk) or --pubsub global keeps rlk on PUBLISH. */
        f = rlk_ck_add(k, "role", RLK_CF_WARNING, "cluster node (%s), %lld replicas, reached with global "
                "pub/sub (PUBLISH): Redisson 4.x uses sharded pub/sub (SPUBLISH) on a Redis 7 "
                "cluster, so rlk and Redisson waiters would not hear each other's releases",
                role, replicas);
        rlk_ck_fix(f, "use the cluster URL (redis+cluster://, rediss+cluster://) or --pubsub sharded; "
                   "keep global pub/sub only if every Redisson client sets "
                   "shardedSubscriptionMode OFF (docs/compat.md)");
        rlk_ck_json(f, ", \"role\": \"cluster\", \"pubsub\": \"global\"");
    } else if (cluster) {
        f = rlk_ck_add(k, "role", RLK_CF_OK, "cluster node (%s), %lld replicas", role, replicas);
        rlk_ck_json(f, ", \"role\": \"cluster\"");
    } else if (sentinels > 0) {
        f = rlk_ck_add(k, "role", RLK_CF_INFO, "master with %lld replicas, monitored by %lld sentinels: on a "
                "failover, a lock not yet replicated is lost (replication is asynchronous)",
                replicas, sentinels);
        rlk_ck_fix(f, "expected with Sentinel; see docs/ops.md (role) for WAIT and what it does not "
                   "guarantee");
        rlk_ck_json(f, ", \"role\": \"sentinel-managed master\"");
    } else {
        f = rlk_ck_add(k, "role", RLK_CF_OK, "master (standalone), %lld replicas", replicas);
        rlk_ck_json(f, ", \"role\": \"master\"");
    }
    rlk_ck_json(f, ", \"replicas\": %lld, \"sentinels\": %lld", replicas, sentinels);
}

/* ---------------------------------------------------------------- eviction, persistence */

void rlk_ck_eviction(rlk_checker *k)
{
    char policy[64], a[96];
    long long maxmemory;
    rlk_ck_finding *f;

    if (!k->info)
        return;
    maxmemory = rlk_ck_info_int(k->info, "maxmemory", -1);
    if (rlk_ck_info_field(k->info, "maxmemory_policy", policy, sizeof policy) != 0 || maxmemory < 0) {
        rlk_ck_add(k, "eviction", RLK_CF_UNKNOWN, "INFO shows no maxmemory / maxmemory_policy");
        return;
    }
    if (strcmp(policy, "noeviction") == 0) {
        f = rlk_ck_add(k, "eviction", RLK_CF_OK, "maxmemory-policy noeviction%s", maxmemory
                ? ": when memory is full, acquiring fails (OOM) and held locks stay" : "");
    } else if (maxmemory > 0) {
        f = rlk_ck_add(k, "eviction", RLK_CF_ERROR, "maxmemory %lld with maxmemory-policy %s: %s may "
                "evict a lock's key to free memory, and the lock silently vanishes while its "
                "holder still believes it holds it", maxmemory, policy, k->server);
        rlk_ck_fix(f, "CONFIG SET maxmemory-policy noeviction (and in redis.conf), or give locks "
                   "a server of their own");
    } else {
        f = rlk_ck_add(k, "eviction", RLK_CF_WARNING, "maxmemory-policy %s without maxmemory: nothing is "
                "evicted now, but setting maxmemory would let %s evict held locks", policy,
                k->server);
        rlk_ck_fix(f, "CONFIG SET maxmemory-policy noeviction (and in redis.conf)");
    }
    rlk_ck_json(f, ", \"maxmemory\": %lld, \"maxmemory_policy\": %s", maxmemory,
             rlk_ck_jstr(a, sizeof a, policy));
}

void rlk_ck_persistence(rlk_checker *k)
{
    redisReply *r;
    char save[256] = "", a[300];
    int rdb = -1, rc;
    long long aof;
    rlk_ck_finding *f;

    if (!k->info)
        return;
    aof = rlk_ck_info_int(k->info, "aof_enabled", -1);
    rc = RLK_CK_CMD(k, &r, "CONFIG", "GET", "save");
    if (k->fatal)
        return;
    if (rc == RLK_OK && r && r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_STRING) {
        snprintf(save, sizeof save, "%s", r->element[1]->str);
        rdb = save[0] != '\0';
    }
    if (r)
        freeReplyObject(r);
    if (aof == 1) {
        f = rlk_ck_add(k, "persistence", RLK_CF_OK, "AOF on%s%s%s", rdb == 1 ? ", RDB save " : "",
                rdb == 1 ? save : "", rdb < 0 ? " (RDB: CONFIG GET refused)" : "");
    } else if (rdb == 1) {
        f = rlk_ck_add(k, "persistence", RLK_CF_OK, "RDB snapshots (save %s), AOF off: a restart brings back "
                "the locks of the last snapshot", save);
    } else if (rdb == 0 && aof == 0) {
        f = rlk_ck_add(k, "persistence", RLK_CF_WARNING, "none (no RDB save points, AOF off): a restart "
                "forgets every held lock while its holders still run");
        rlk_ck_fix(f, "CONFIG SET appendonly yes (appendfsync everysec), or accept it: docs/ops.md "
                   "(persistence)");
    } else {
        f = rlk_ck_add(k, "persistence", RLK_CF_UNKNOWN, "AOF %s; RDB not known (CONFIG GET save refused)",
                aof == 1 ? "on" : aof == 0 ? "off" : "not known");
        rlk_ck_fix(f, "run rlk check as a user allowed CONFIG GET, or check redis.conf");
    }
    rlk_ck_json(f, ", \"aof\": %s, \"rdb\": %s, \"save\": %s", aof == 1 ? "true" : aof == 0 ?
             "false" : "null", rdb == 1 ? "true" : rdb == 0 ? "false" : "null",
             rlk_ck_jstr(a, sizeof a, save));
}

/* Functions mode: the library rlk, not the scripts, must be there (rlk functions verify). */
static void check_library(rlk_checker *k)
{
    rlk_functions_state st;
    int rc = rlk_verify_functions(k->c, &st);
    rlk_ck_finding *f;

    if (rlk_ck_conn_error(rc)) {
        k->fatal = rc;
        return;
    }
    if (rc != RLK_OK) {
        f = rlk_ck_add(k, "scripts", RLK_CF_UNKNOWN, "FUNCTION LIST refused: %s", rlk_errstr(k->c));
        rlk_ck_fix(f, "run rlk functions verify as a user allowed FUNCTION LIST");
    } else if (st.present && st.same_code) {
        f = rlk_ck_add(k, "scripts", RLK_CF_OK, "the Functions library rlk of this release is loaded (%d "
                "functions): calls go by FCALL", st.functions);
    } else {
        f = rlk_ck_add(k, "scripts", RLK_CF_ERROR, "--functions, but the library rlk is %s: every lock call "
                "fails", st.present ? "not this release's" : "missing");
        rlk_ck_fix(f, st.present ? "rlk functions load --replace" : "rlk functions load");
    }
    rlk_ck_json(f, ", \"functions\": true");
}

void rlk_ck_scripts(rlk_checker *k)
{
    size_t n = rlk_script_count(k->c), missing = 0;
    int *present;
    int rc;
    rlk_ck_finding *f;

    if (k->fcall) {
        check_library(k);
        return;
    }
    present = calloc(n ? n : 1, sizeof *present);

    if (!present) {
        k->fatal = RLK_ERR_NOMEM;
        return;
    }
    rc = rlk_verify_scripts(k->c, present);
    if (rlk_ck_conn_error(rc)) {
        k->fatal = rc;
        free(present);
        return;
    }
    if (rc != RLK_OK) {
        f = rlk_ck_add(k, "scripts", RLK_CF_UNKNOWN, "SCRIPT EXISTS refused: %s", rlk_errstr(k->c));
        rlk_ck_fix(f, "allow SCRIPT EXISTS (+script|exists), or run rlk scripts verify as another "
                   "user");
        free(present);
        return;
    }
    for (size_t i = 0; i < n; i++)
        missing += !present[i];
    if (!missing) {
        f = rlk_ck_add(k, "scripts", RLK_CF_OK, "all %zu scripts of rlk %s present", n, RLK_VERSION);
    } else if (k->script_load_allowed == 0) {
        f = rlk_ck_add(k, "scripts", RLK_CF_ERROR, "%zu of %zu scripts missing, and this user may not "
                "SCRIPT LOAD them: every lock call fails (NOSCRIPT)", missing, n);
        rlk_ck_fix(f, "rlk scripts load (as a user allowed SCRIPT LOAD), again after every restart "
                   "or SCRIPT FLUSH");
    } else {
        f = rlk_ck_add(k, "scripts", RLK_CF_WARNING, "%zu of %zu scripts missing: clients load them on "
                "first use (SCRIPT LOAD)", missing, n);
        rlk_ck_fix(f, "rlk scripts load; rlk scripts verify shows which");
    }
    rlk_ck_json(f, ", \"present\": %zu, \"total\": %zu, \"missing\": [", n - missing, n);
    for (size_t i = 0, first = 1; i < n; i++) {
        char a[128];

        if (present[i])
            continue;
        rlk_ck_json(f, "%s%s", first ? "" : ", ", rlk_ck_jstr(a, sizeof a, rlk_script_at(k->c, i)->name));
        first = 0;
    }
    rlk_ck_json(f, "]");
    free(present);
}

/* ---------------------------------------------------------------- clock, latency */

static long long wall_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static long long mono_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

#define CLOCK_SAMPLES 5

void rlk_ck_clock(rlk_checker *k)
{
    long long best_rtt = -1, offset = 0, prev = -1;
    int monotonic = 1;
    rlk_ck_finding *f;

    for (int i = 0; i < CLOCK_SAMPLES; i++) {
        redisReply *r;
        long long before = wall_us(), rtt, server;
        int rc = RLK_CK_CMD(k, &r, "TIME");

        rtt = wall_us() - before;
        if (rc != RLK_OK || !r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (!k->fatal) {
                f = rlk_ck_add(k, "clock", RLK_CF_UNKNOWN, "TIME refused: %s", rlk_errstr(k->c));
                rlk_ck_fix(f, "allow TIME (+time)");
            }
            if (r)
                freeReplyObject(r);
            return;
        }
        server = strtoll(r->element[0]->str, NULL, 10) * 1000000 +
                 strtoll(r->element[1]->str, NULL, 10);
        freeReplyObject(r);
        if (prev >= 0 && server < prev)
            monotonic = 0;
        prev = server;
        if (best_rtt < 0 || rtt < best_rtt) {
            best_rtt = rtt;
            offset = server - (before + rtt / 2);
        }
    }
    if (!monotonic) {
        f = rlk_ck_add(k, "clock", RLK_CF_WARNING, "the server's TIME went backwards between calls: its "
                "wall clock is being stepped, and %s expires keys (leases) by it", k->server);
        rlk_ck_fix(f, "run NTP (chrony/ntpd) in slew mode on the server host");
    } else if (offset > 1000000 || offset < -1000000) {
        f = rlk_ck_add(k, "clock", RLK_CF_WARNING, "the server's clock is %+.1f ms from this host's: one of "
                "them is not synchronised; rlk's scripts read the server's clock, but a clock "
                "that gets corrected by a step expires leases early or late",
                (double)offset / 1000.0);
        rlk_ck_fix(f, "run NTP on both hosts");
    } else {
        /* Under 0.05 ms either way it shows as +0.0 (printf would say -0.0). */
        f = rlk_ck_add(k, "clock", RLK_CF_OK, "server TIME %+.1f ms from this host's clock, monotonic over "
                "%d calls", offset > -50 && offset < 50 ? 0.0 : (double)offset / 1000.0,
                CLOCK_SAMPLES);
    }
    rlk_ck_json(f, ", \"offset_ms\": %.3f, \"monotonic\": %s", (double)offset / 1000.0,
             monotonic ? "true" : "false");
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

#define PINGS 5

void rlk_ck_latency(rlk_checker *k)
{
    long long us[PINGS];
    rlk_ck_finding *f;

    for (int i = 0; i < PINGS; i++) {
        redisReply *r;
        long long t0 = mono_us();
        int rc = RLK_CK_CMD(k, &r, "PING");

        us[i] = mono_us() - t0;
        if (r)
            freeReplyObject(r);
        if (rc != RLK_OK) {
            if (!k->fatal)
                rlk_ck_add(k, "latency", RLK_CF_UNKNOWN, "PING refused: %s", rlk_errstr(k->c));
            return;
        }
    }
    qsort(us, PINGS, sizeof us[0], cmp_ll);
    double mn = (double)us[0] / 1000.0, med = (double)us[PINGS / 2] / 1000.0,
           mx = (double)us[PINGS - 1] / 1000.0;
    if (med > 100.0 || mx > 1000.0) {
        f = rlk_ck_add(k, "latency", RLK_CF_WARNING, "PING x%d: min %.2f ms, median %.2f ms, max %.2f ms: "
                "slow for locks (every acquire, release and renewal is a round trip)", PINGS, mn,
                med, mx);
        rlk_ck_fix(f, "run the clients near the server; check the server's load (SLOWLOG, "
                   "LATENCY DOCTOR)");
    } else {
        f = rlk_ck_add(k, "latency", RLK_CF_OK, "PING x%d: min %.2f ms, median %.2f ms, max %.2f ms", PINGS,
                mn, med, mx);
    }
    rlk_ck_json(f, ", \"min_ms\": %.3f, \"median_ms\": %.3f, \"max_ms\": %.3f", mn, med, mx);
}
