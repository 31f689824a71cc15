/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_check.c - rlk check [--json] [--name NAME]: what an operator runs before
 * trusting a server with locks. Each check is one finding (ok, info, warning,
 * error, unknown) with a message and, when not ok, the fix; docs/ops.md explains
 * every one. Exit 0: all ok (info included); 7: warnings or unknowns; 8: errors.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check_family.h"
#include "cli.h"
#include "client/client.h"
#include "client/functions.h"
#include "client/native.h"
#include "client/tls.h"
#include "client/url.h"
#include "kinds/names.h"

typedef struct check_opts {
    const char *url;
    const char *name;   /* the lock name the ACL probe uses */
    const char *user;   /* the user the ACL probe checks; NULL: ACL WHOAMI */
    int json;
} check_opts;

static const char check_usage[] =
    "usage: rlk check [--url URL] [--json] [--name NAME] [--user USER]\n"
    "\n"
    "Checks a server before it is trusted with locks, and prints one finding per check:\n"
    "  server       Redis or Valkey, its version and mode (a Sentinel is an error)\n"
    "  family       Redis, Valkey, KeyDB, Dragonfly or Garnet, from INFO: KeyDB's active\n"
    "               replication and Garnet without lua-transaction-mode are errors,\n"
    "               Dragonfly without allow-undeclared-keys a warning (rwlock fails)\n"
    "  native       the kinds that work without scripts (SET IFEQ, DELIFEQ, DELEX)\n"
    "  transport    TLS: protocol, cipher, certificate, days until it expires (warning\n"
    "               within 30 days, or when not verified; error when expired, for another\n"
    "               host or from an unknown CA); plain TCP to a host that is not\n"
    "               loopback is a warning (the password and every call cross in clear)\n"    "  role         master / replica (error) / cluster node; sentinels monitoring it\n"
    "  eviction     maxmemory with a policy that can evict lock keys (error)\n"
    "  persistence  RDB / AOF / none (warning: a restart forgets every lock)\n"
    "  scripts      rlk's scripts present on the server (SCRIPT EXISTS); in functions\n"
    "               mode (--functions, or this release's library loaded) the library rlk\n"
    "  acl          what this user may run, per lock kind (ACL DRYRUN: EVALSHA, or FCALL\n"
    "               in functions mode); 'unknown' when the user may not ask\n"
    "  clock        the server's TIME against this host's clock, and monotonic\n"
    "  latency      5 PINGs: min / median / max\n"
    "Levels: ok, info, warning, unknown (could not be checked), error. docs/ops.md\n"
    "explains each finding and its fix.\n"
    "\n"
    "  --json       one JSON object: {\"url\", \"result\", \"errors\", \"warnings\", \"checks\": [...]}\n"
    "  --name NAME  a lock name of your application, for the ACL probe (key and channel\n"
    "               patterns); default rlk-check\n"
    "  --user USER  check the ACL permissions of USER (the application's user) rather\n"
    "               than of the user rlk check connects as (needs ACL DRYRUN)\n"
    "  --url URL    the server (default: $RLK_URL, then " RLK_DEFAULT_URL ")\n"
    "  --functions  judge the application as calling the Functions library (FCALL):\n"
    "               the library instead of the scripts, FCALL instead of EVALSHA in the ACL\n"
    "               (the default when the server holds this release's library)\n"
    "  and the global options (rlk --help): --url-file, --password-file, --pubsub, ...\n"
    "\n"
    "Exit: 0 all ok, 7 warnings or unknowns, 8 errors; 3 connection error.\n";

enum level { LV_OK, LV_INFO, LV_WARNING, LV_UNKNOWN, LV_ERROR };
static const char *const level_words[] = {"ok", "info", "warning", "unknown", "error"};

#define MAX_FINDINGS 16

typedef struct finding {
    const char *check;
    int level;
    char message[512];
    char fix[384];
    char json[4096];    /* extra members, ", \"k\": v" each (scripts: every missing name) */
} finding;

typedef struct checker {
    rlk_client *c;
    const check_opts *o;
    finding f[MAX_FINDINGS];
    int n;
    int fatal;          /* a connection error: stop and exit 3 */
    char *info;         /* INFO (default sections), NULL when refused */
    char server[16];    /* "Redis" or "Valkey" (from INFO; "the server" before or without it) */
    int fcall;          /* 1: the client calls the Functions library (FCALL), not EVALSHA */
    /* The server's certificate as rlk judges it without --insecure: "" when accepted (or not
     * TLS), else why it is refused (the connect error). When rlk refused it, the report was
     * made over a second connection without the check (refused_first). */
    char tls_refused[400];
    int refused_first;
} checker;

static finding *add(checker *k, const char *check, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static finding *add(checker *k, const char *check, int level, const char *fmt, ...)
{
    static finding spare;
    finding *f = k->n < MAX_FINDINGS ? &k->f[k->n++] : &spare;
    va_list ap;

    memset(f, 0, sizeof *f);
    f->check = check;
    f->level = level;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return f;
}

static void set_fix(finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_fix(finding *f, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(f->fix, sizeof f->fix, fmt, ap);
    va_end(ap);
}

static void add_json(finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_json(finding *f, const char *fmt, ...)
{
    size_t used = strlen(f->json);
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(f->json + used, sizeof f->json - used, fmt, ap);
    va_end(ap);
}

/* JSON string escaping into buf. */
static const char *jstr(char *buf, size_t len, const char *s)
{
    size_t o = 0;

    if (len < 3)
        return "\"\"";
    buf[o++] = '"';
    for (; *s && o + 8 < len; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\') {
            buf[o++] = '\\';
            buf[o++] = (char)ch;
        } else if (ch < 0x20) {
            o += (size_t)snprintf(buf + o, len - o, "\\u%04x", ch);
        } else {
            buf[o++] = (char)ch;
        }
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

static int is_conn_error(int rc)
{
    return rc == RLK_ERR_IO || rc == RLK_ERR_TIMEOUT || rc == RLK_ERR_AUTH;
}

/* Runs one command (NULL-terminated argv). RLK_OK with *r, or an error code with
 * k->fatal set on a connection error. */
static int run(checker *k, redisReply **r, const char *const *argv)
{
    int argc = 0, rc;

    while (argv[argc])
        argc++;
    *r = NULL;
    rc = rlk_command(k->c, argc, argv, NULL, r);
    if (is_conn_error(rc))
        k->fatal = rc;
    return rc;
}

#define RUN_CMD(k, r, ...) run((k), (r), (const char *const[]){__VA_ARGS__, NULL})

/* Field "name:value" of an INFO text into buf; 0, or -1 when absent. */
static int info_field(const char *info, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);

    for (const char *p = info; p && *p;) {
        const char *eol = strpbrk(p, "\r\n");
        size_t linelen = eol ? (size_t)(eol - p) : strlen(p);

        if (linelen > n && strncmp(p, name, n) == 0 && p[n] == ':') {
            size_t vlen = linelen - n - 1;

            if (vlen >= len)
                vlen = len - 1;
            memcpy(buf, p + n + 1, vlen);
            buf[vlen] = '\0';
            return 0;
        }
        p = eol ? eol + strspn(eol, "\r\n") : NULL;
    }
    buf[0] = '\0';
    return -1;
}

static long long info_int(const char *info, const char *name, long long fallback)
{
    char buf[64];

    if (!info || info_field(info, name, buf, sizeof buf) != 0 || !buf[0])
        return fallback;
    return strtoll(buf, NULL, 10);
}

/* ---------------------------------------------------------------- server, role */

/* Which server and what version: Valkey says server_name:valkey and valkey_version (its
 * redis_version is the Redis it is compatible with, 7.2.4 for Valkey 8); Redis has neither. */
static void server_identity(const char *info, char *name, size_t nlen, char *version, size_t vlen,
                            char *compat, size_t clen)
{
    char server[32] = "";

    compat[0] = '\0';
    info_field(info, "server_name", server, sizeof server);
    if (strcmp(server, "valkey") == 0 && info_field(info, "valkey_version", version, vlen) == 0) {
        snprintf(name, nlen, "Valkey");
        info_field(info, "redis_version", compat, clen);
        return;
    }
    snprintf(name, nlen, "Redis");
    info_field(info, "redis_version", version, vlen);
}

static void check_server(checker *k)
{
    redisReply *r;
    char version[64], mode[32], name[16], compat[64], shown[160];
    finding *f;
    int rc = RUN_CMD(k, &r, "INFO");
    int valkey;

    if (rc != RLK_OK || !r || r->type != REDIS_REPLY_STRING) {
        if (k->fatal)
            return;
        f = add(k, "server", LV_UNKNOWN, "INFO refused: %s", rlk_errstr(k->c));
        set_fix(f, "allow INFO to this user (+info) so that rlk check can read the version, "
                   "role, maxmemory and persistence");
        add(k, "role", LV_UNKNOWN, "INFO refused: role not known");
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
    if (info_field(k->info, "redis_mode", mode, sizeof mode) != 0)
        snprintf(mode, sizeof mode, "standalone");
    if (strcmp(mode, "sentinel") == 0) {
        f = add(k, "server", LV_ERROR, "%s is a Sentinel, not a data server", shown);
        set_fix(f, "point rlk at the master the sentinels monitor (SENTINEL "
                   "GET-MASTER-ADDR-BY-NAME <master>)");
    } else if (!valkey && atoi(version) < 5) {
        /* Every Valkey release (7.2 and later) has what the scripts need; Redis from 5 on. */
        f = add(k, "server", LV_ERROR, "%s, %s: rlk's scripts need Redis 5 or later "
                "(they read TIME before writing, which needs effects replication)", shown, mode);
        set_fix(f, "upgrade to Redis 6.2 or 7, or Valkey");
    } else {
        f = add(k, "server", LV_OK, "%s, %s", shown, mode);
    }
    {
        char a[96], b[64], c[96];

        add_json(f, ", \"server\": \"%s\", \"version\": %s, \"mode\": %s", valkey ? "valkey" : "redis",
                 jstr(a, sizeof a, version), jstr(b, sizeof b, mode));
        if (valkey && compat[0])
            add_json(f, ", \"redis_version\": %s", jstr(c, sizeof c, compat));
    }
}

/* ---------------------------------------------------------------- family, native */

/* The server's family and what it means for locks, and which kinds work
 * without scripts (check_family.c decides; this asks the server). */
static int native_token;   /* the server serves the token lock natively (check_family) */
static int native_caps;    /* its RLK_NATIVE_* bits */

static void check_family(checker *k)
{
    const char *const *keys;
    const char *values[4] = {NULL, NULL, NULL, NULL};
    redisReply *got[4] = {NULL, NULL, NULL, NULL};
    rlk_cfind cf;
    finding *f;
    char version[64];
    int fam, caps = 0, rc;

    if (k->info) {
        fam = rlk_family_of(k->info, version, sizeof version);
        keys = rlk_family_config_keys(fam);
        for (int i = 0; keys[i] && i < 4; i++) {
            redisReply *r = NULL;

            if (RUN_CMD(k, &r, "CONFIG", "GET", keys[i]) == RLK_OK && r &&
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
        f = add(k, cf.check, cf.level, "%s", cf.message);
        if (cf.fix[0])
            set_fix(f, "%s", cf.fix);
        add_json(f, ", \"family\": \"%s\"", rlk_family_name(fam));
    }
    rc = rlk_native_caps(k->c, &caps);
    if (is_conn_error(rc)) {
        k->fatal = rc;
        return;
    }
    native_caps = caps;
    native_token = rc == RLK_OK && (caps & RLK_NATIVE_SETIFEQ) &&
                   (caps & (RLK_NATIVE_DELIFEQ | RLK_NATIVE_DELEX));
    rlk_family_native_finding(rc == RLK_OK, caps, &cf);
    f = add(k, cf.check, cf.level, "%s", cf.message);
    add_json(f, ", \"without_scripts\": [%s]",
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

/* "connect HOST:PORT: TLS: the server's certificate ...": the part after "TLS: ", when the
 * error is the server's certificate being refused; NULL for any other error. */
static const char *tls_refusal(const char *err)
{
    const char *t = strstr(err, "TLS: the server's certificate");

    return t ? t + 5 : NULL;
}

/* The user gave --insecure: would rlk accept the certificate without it? A second
 * connection with the check on; its refusal is kept when it is about the certificate
 * itself (expired, another host's name) - an unknown CA stays the --insecure warning. */
static void check_tls_verified(checker *k)
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
    if (rlk_err(c) != RLK_OK && (why = tls_refusal(rlk_errstr(c))) != NULL &&
        (strstr(why, "expired") || strstr(why, "does not name")))
        snprintf(k->tls_refused, sizeof k->tls_refused, "%s", why);
    rlk_free(c);
}

static void check_transport(checker *k)
{
    const rlk_url *u = &k->c->url;
    const char *host = url_first_host(u);
    rlk_tls_peer p;
    finding *f;

    if (u->is_unix) {
        add(k, "transport", LV_OK, "unix socket (local, not encrypted)");
        return;
    }
    if (!k->c->tls) {
        if (rlk_url_host_is_loopback(host)) {
            add(k, "transport", LV_OK, "plain TCP to %s (loopback)", host ? host : "?");
            return;
        }
        f = add(k, "transport", LV_WARNING, "plain TCP to %s: the password and every lock call "
                "cross the network in clear", host ? host : "?");
        set_fix(f, "turn TLS on at the server (tls-port) and connect with rediss:// "
                   "(docs/tls.md)");
        return;
    }
    memset(&p, 0, sizeof p);
    rlk_tls_last_peer(k->c->tls, &p);
    if (!p.known) {
        add(k, "transport", LV_UNKNOWN, "TLS: no handshake seen");
        return;
    }
    if (!p.verified && !k->refused_first)
        check_tls_verified(k);
    if (k->tls_refused[0] || p.days_left < 0) {
        /* An expired certificate, one that names another host, or one no trusted CA signed:
         * rlk refuses the server (or would, without --insecure), and every lock call fails. */
        const char *why = k->tls_refused[0] ? k->tls_refused : "the certificate has expired";

        f = add(k, "transport", LV_ERROR, "TLS to %s (%s, %s), certificate %s refused%s: %s",
                p.addr, p.protocol, p.cipher, p.subject,
                !p.verified && !k->refused_first ? " (without --insecure)" : "", why);
        if (p.days_left < 0)
            snprintf(f->message + strlen(f->message), sizeof f->message - strlen(f->message),
                     " (expired %ld days ago)", -p.days_left);
        if (k->refused_first)
            snprintf(f->message + strlen(f->message), sizeof f->message - strlen(f->message),
                     "; the other checks were made without the certificate check");
        if (p.days_left < 0 || strstr(why, "expired"))
            set_fix(f, "renew the server's certificate (tls-cert-file): clients refuse an "
                       "expired one and every lock call fails");
        else if (strstr(why, "does not name"))
            set_fix(f, "connect by a name the certificate has (or --sni NAME), or give the "
                       "server a certificate for the host clients connect to");
        else
            set_fix(f, "give the CA that signed the server's certificate with --cacert (or "
                       "--cacertdir), or a certificate from a CA the system trusts");
    } else if (!p.verified) {
        f = add(k, "transport", LV_WARNING, "TLS to %s (%s, %s), certificate NOT verified "
                "(--insecure): anyone in the path can pose as the server", p.addr, p.protocol,
                p.cipher);
        set_fix(f, "give the server's CA with --cacert (or --cacertdir) and drop --insecure");
    } else if (p.days_left < 30) {
        f = add(k, "transport", LV_WARNING,
                "TLS to %s (%s, %s), certificate %s verified; it expires in %ld days (within "
                "30 days)", p.addr, p.protocol, p.cipher, p.subject, p.days_left);
        set_fix(f, "renew the server's certificate (tls-cert-file) before it expires: clients "
                   "refuse an expired one and every lock call fails");
    } else {
        f = add(k, "transport", LV_OK, "TLS to %s (%s, %s), certificate %s verified; it "
                "expires in %ld days", p.addr, p.protocol, p.cipher, p.subject, p.days_left);
    }
    {
        char b[64], c[128], d[300];

        add_json(f, ", \"tls\": true, \"protocol\": %s, \"cipher\": %s, \"subject\": %s, "
                 "\"days_left\": %ld, \"verified\": %s", jstr(b, sizeof b, p.protocol),
                 jstr(c, sizeof c, p.cipher), jstr(d, sizeof d, p.subject), p.days_left,
                 p.verified ? "true" : "false");
        if (k->tls_refused[0])
            add_json(f, ", \"refused\": %s", jstr(d, sizeof d, k->tls_refused));
    }
}

/* Subscribers of the sentinels' hello channel: sentinels monitoring this server. */
static long long sentinel_count(checker *k)
{
    redisReply *r;
    long long n = -1;

    if (RUN_CMD(k, &r, "PUBSUB", "NUMSUB", "__sentinel__:hello") == RLK_OK && r &&
        r->type == REDIS_REPLY_ARRAY && r->elements == 2 &&
        r->element[1]->type == REDIS_REPLY_INTEGER)
        n = r->element[1]->integer;
    if (r)
        freeReplyObject(r);
    return n;
}

static void check_role(checker *k)
{
    char role[32], master[128];
    long long replicas, sentinels, cluster;
    finding *f;

    if (!k->info)
        return;
    info_field(k->info, "role", role, sizeof role);
    replicas = info_int(k->info, "connected_slaves", 0);
    cluster = info_int(k->info, "cluster_enabled", 0);
    sentinels = sentinel_count(k);
    if (k->fatal)
        return;
    if (strcmp(role, "slave") == 0) {
        char host[64] = "", port[16] = "";

        info_field(k->info, "master_host", host, sizeof host);
        info_field(k->info, "master_port", port, sizeof port);
        snprintf(master, sizeof master, "%s:%s", host, port);
        f = add(k, "role", LV_ERROR, "a replica of %s: lock scripts write, a replica refuses "
                "them (READONLY), and a lock taken on a writable replica excludes nobody", master);
        set_fix(f, "point rlk at the master (%s), or at the sentinels that know it", master);
        add_json(f, ", \"role\": \"replica\"");
    } else if (cluster && info_int(k->info, "redis_version", 0) >= 7 &&
               rlk_client_pubsub(k->c) == RLK_PUBSUB_GLOBAL) {
        /* Redisson 4.x (shardedSubscriptionMode AUTO) uses SPUBLISH / SSUBSCRIBE on a Redis 7
         * cluster; a plain URL (one server to rlk) or --pubsub global keeps rlk on PUBLISH. */
        f = add(k, "role", LV_WARNING, "cluster node (%s), %lld replicas, reached with global "
                "pub/sub (PUBLISH): Redisson 4.x uses sharded pub/sub (SPUBLISH) on a Redis 7 "
                "cluster, so rlk and Redisson waiters would not hear each other's releases",
                role, replicas);
        set_fix(f, "use the cluster URL (redis+cluster://, rediss+cluster://) or --pubsub sharded; "
                   "keep global pub/sub only if every Redisson client sets "
                   "shardedSubscriptionMode OFF (docs/compat.md)");
        add_json(f, ", \"role\": \"cluster\", \"pubsub\": \"global\"");
    } else if (cluster) {
        f = add(k, "role", LV_OK, "cluster node (%s), %lld replicas", role, replicas);
        add_json(f, ", \"role\": \"cluster\"");
    } else if (sentinels > 0) {
        f = add(k, "role", LV_INFO, "master with %lld replicas, monitored by %lld sentinels: on a "
                "failover, a lock not yet replicated is lost (replication is asynchronous)",
                replicas, sentinels);
        set_fix(f, "expected with Sentinel; see docs/ops.md (role) for WAIT and what it does not "
                   "guarantee");
        add_json(f, ", \"role\": \"sentinel-managed master\"");
    } else {
        f = add(k, "role", LV_OK, "master (standalone), %lld replicas", replicas);
        add_json(f, ", \"role\": \"master\"");
    }
    add_json(f, ", \"replicas\": %lld, \"sentinels\": %lld", replicas, sentinels);
}

/* ---------------------------------------------------------------- eviction, persistence */

static void check_eviction(checker *k)
{
    char policy[64], a[96];
    long long maxmemory;
    finding *f;

    if (!k->info)
        return;
    maxmemory = info_int(k->info, "maxmemory", -1);
    if (info_field(k->info, "maxmemory_policy", policy, sizeof policy) != 0 || maxmemory < 0) {
        add(k, "eviction", LV_UNKNOWN, "INFO shows no maxmemory / maxmemory_policy");
        return;
    }
    if (strcmp(policy, "noeviction") == 0) {
        f = add(k, "eviction", LV_OK, "maxmemory-policy noeviction%s", maxmemory
                ? ": when memory is full, acquiring fails (OOM) and held locks stay" : "");
    } else if (maxmemory > 0) {
        f = add(k, "eviction", LV_ERROR, "maxmemory %lld with maxmemory-policy %s: %s may "
                "evict a lock's key to free memory, and the lock silently vanishes while its "
                "holder still believes it holds it", maxmemory, policy, k->server);
        set_fix(f, "CONFIG SET maxmemory-policy noeviction (and in redis.conf), or give locks "
                   "a server of their own");
    } else {
        f = add(k, "eviction", LV_WARNING, "maxmemory-policy %s without maxmemory: nothing is "
                "evicted now, but setting maxmemory would let %s evict held locks", policy,
                k->server);
        set_fix(f, "CONFIG SET maxmemory-policy noeviction (and in redis.conf)");
    }
    add_json(f, ", \"maxmemory\": %lld, \"maxmemory_policy\": %s", maxmemory,
             jstr(a, sizeof a, policy));
}

static void check_persistence(checker *k)
{
    redisReply *r;
    char save[256] = "", a[300];
    int rdb = -1, rc;
    long long aof;
    finding *f;

    if (!k->info)
        return;
    aof = info_int(k->info, "aof_enabled", -1);
    rc = RUN_CMD(k, &r, "CONFIG", "GET", "save");
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
        f = add(k, "persistence", LV_OK, "AOF on%s%s%s", rdb == 1 ? ", RDB save " : "",
                rdb == 1 ? save : "", rdb < 0 ? " (RDB: CONFIG GET refused)" : "");
    } else if (rdb == 1) {
        f = add(k, "persistence", LV_OK, "RDB snapshots (save %s), AOF off: a restart brings back "
                "the locks of the last snapshot", save);
    } else if (rdb == 0 && aof == 0) {
        f = add(k, "persistence", LV_WARNING, "none (no RDB save points, AOF off): a restart "
                "forgets every held lock while its holders still run");
        set_fix(f, "CONFIG SET appendonly yes (appendfsync everysec), or accept it: docs/ops.md "
                   "(persistence)");
    } else {
        f = add(k, "persistence", LV_UNKNOWN, "AOF %s; RDB not known (CONFIG GET save refused)",
                aof == 1 ? "on" : aof == 0 ? "off" : "not known");
        set_fix(f, "run rlk check as a user allowed CONFIG GET, or check redis.conf");
    }
    add_json(f, ", \"aof\": %s, \"rdb\": %s, \"save\": %s", aof == 1 ? "true" : aof == 0 ?
             "false" : "null", rdb == 1 ? "true" : rdb == 0 ? "false" : "null",
             jstr(a, sizeof a, save));
}

/* ---------------------------------------------------------------- scripts */

static int script_load_allowed = -1;   /* from the ACL check: -1 not known */

/* Functions mode: the library rlk, not the scripts, must be there (rlk functions verify). */
static void check_library(checker *k)
{
    rlk_functions_state st;
    int rc = rlk_verify_functions(k->c, &st);
    finding *f;

    if (is_conn_error(rc)) {
        k->fatal = rc;
        return;
    }
    if (rc != RLK_OK) {
        f = add(k, "scripts", LV_UNKNOWN, "FUNCTION LIST refused: %s", rlk_errstr(k->c));
        set_fix(f, "run rlk functions verify as a user allowed FUNCTION LIST");
    } else if (st.present && st.same_code) {
        f = add(k, "scripts", LV_OK, "the Functions library rlk of this release is loaded (%d "
                "functions): calls go by FCALL", st.functions);
    } else {
        f = add(k, "scripts", LV_ERROR, "--functions, but the library rlk is %s: every lock call "
                "fails", st.present ? "not this release's" : "missing");
        set_fix(f, st.present ? "rlk functions load --replace" : "rlk functions load");
    }
    add_json(f, ", \"functions\": true");
}

static void check_scripts(checker *k)
{
    size_t n = rlk_script_count(k->c), missing = 0;
    int *present;
    int rc;
    finding *f;

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
    if (is_conn_error(rc)) {
        k->fatal = rc;
        free(present);
        return;
    }
    if (rc != RLK_OK) {
        f = add(k, "scripts", LV_UNKNOWN, "SCRIPT EXISTS refused: %s", rlk_errstr(k->c));
        set_fix(f, "allow SCRIPT EXISTS (+script|exists), or run rlk scripts verify as another "
                   "user");
        free(present);
        return;
    }
    for (size_t i = 0; i < n; i++)
        missing += !present[i];
    if (!missing) {
        f = add(k, "scripts", LV_OK, "all %zu scripts of rlk %s present", n, RLK_VERSION);
    } else if (script_load_allowed == 0) {
        f = add(k, "scripts", LV_ERROR, "%zu of %zu scripts missing, and this user may not "
                "SCRIPT LOAD them: every lock call fails (NOSCRIPT)", missing, n);
        set_fix(f, "rlk scripts load (as a user allowed SCRIPT LOAD), again after every restart "
                   "or SCRIPT FLUSH");
    } else {
        f = add(k, "scripts", LV_WARNING, "%zu of %zu scripts missing: clients load them on "
                "first use (SCRIPT LOAD)", missing, n);
        set_fix(f, "rlk scripts load; rlk scripts verify shows which");
    }
    add_json(f, ", \"present\": %zu, \"total\": %zu, \"missing\": [", n - missing, n);
    for (size_t i = 0, first = 1; i < n; i++) {
        char a[128];

        if (present[i])
            continue;
        add_json(f, "%s%s", first ? "" : ", ", jstr(a, sizeof a, rlk_script_at(k->c, i)->name));
        first = 0;
    }
    add_json(f, "]");
    free(present);
}

/* ---------------------------------------------------------------- ACL */

/* Argument templates for the commands scripts run (K: a key, C: a channel). */
static const struct { const char *cmd; const char *args; } cmd_args[] = {
    {"get", "K"}, {"set", "K v"}, {"del", "K"}, {"exists", "K"}, {"type", "K"},
    {"incr", "K"}, {"incrby", "K 1"}, {"decr", "K"}, {"decrby", "K 1"}, {"pexpire", "K 1"},
    {"persist", "K"}, {"pttl", "K"}, {"hincrby", "K f 1"}, {"hexists", "K f"}, {"hget", "K f"},
    {"hset", "K f v"}, {"hdel", "K f"}, {"hgetall", "K"}, {"hlen", "K"}, {"zscore", "K m"},
    {"zadd", "K 1 m"}, {"zrem", "K m"}, {"zincrby", "K 1 m"}, {"zrange", "K 0 1"},
    {"zcount", "K 0 1"}, {"zrangebyscore", "K 0 1"}, {"zremrangebyscore", "K 0 1"},
    {"zcard", "K"}, {"rpush", "K v"},
    {"lpop", "K"}, {"lindex", "K 0"}, {"lpos", "K v"}, {"lrem", "K 0 v"}, {"lrange", "K 0 1"},
    {"llen", "K"}, {"strlen", "K"}, {"publish", "C m"}, {"spublish", "C m"}, {"time", ""},
};

typedef struct probe {
    checker *k;
    const char *user;
    const char *name;
    char denied[512];   /* the first refusal */
    int unknown;        /* DRYRUN itself refused */
} probe;

/* ACL DRYRUN user argv...; 1 allowed, 0 denied (p->denied set), -1 not known. */
static int dryrun(probe *p, int argc, const char *const *argv)
{
    const char *full[16];
    redisReply *r;
    int rc, ok = -1;

    if (argc > 13)
        return -1;
    full[0] = "ACL";
    full[1] = "DRYRUN";
    full[2] = p->user;
    for (int i = 0; i < argc; i++)
        full[3 + i] = argv[i];
    full[3 + argc] = NULL;
    rc = run(p->k, &r, full);
    if (rc == RLK_OK && r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
        ok = 1;
    } else if (rc == RLK_OK && r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) {
        ok = 0;
        if (!p->denied[0]) {
            char cmdline[256] = "";

            for (int i = 0; i < argc && i < 4; i++)
                snprintf(cmdline + strlen(cmdline), sizeof cmdline - strlen(cmdline), "%s%.60s",
                         i ? " " : "", argv[i]);
            snprintf(p->denied, sizeof p->denied, "%.200s (%.200s)", r->str, cmdline);
        }
    } else if (rc != RLK_OK) {
        p->unknown = 1;
    }
    if (r)
        freeReplyObject(r);
    return ok;
}

/* Runs DRYRUN for one command with a template: every K over keys, every C over channels. */
static int dryrun_template(probe *p, const char *cmd, const char *args, char keys[][300],
                           int nkeys, char chans[][300], int nchans)
{
    const char *argv[8];
    char words[6][16];
    int nwords = 0, result = 1;
    const char *s = args;

    while (*s && nwords < 6) {
        size_t w = strcspn(s, " ");

        snprintf(words[nwords++], sizeof words[0], "%.*s", (int)w, s);
        s += w + (s[w] == ' ');
    }
    int uses_k = nwords && strcmp(words[0], "K") == 0, uses_c = nwords && strcmp(words[0], "C") == 0;
    int count = uses_k ? nkeys : uses_c ? nchans : 1;

    for (int t = 0; t < count; t++) {
        argv[0] = cmd;
        for (int i = 0; i < nwords; i++)
            argv[1 + i] = i == 0 && uses_k ? keys[t] : i == 0 && uses_c ? chans[t] : words[i];
        int ok = dryrun(p, 1 + nwords, argv);

        if (ok < 0)
            return -1;
        if (ok == 0)
            result = 0;
    }
    return result;
}

/* Checks what one kind needs: 1 all allowed, 0 something denied, -1 not known.
 * The kind's keys and channels come from the library (kinds/names.h), each
 * script's KEYS by the roles its header names (rlk_script_key_roles). */
static int probe_kind(probe *p, const rlk_names_kind *kl)
{
    char keys[8][300], chans[3][300], seen[64][24];
    int nkeys = 0, nchans = 0, nseen = 0, result = 1;
    size_t plen = strlen(kl->kind);
    rlk_client *c = p->k->c;
    char *nm;

#define MERGE(ok) do { int ok_ = (ok); if (ok_ < 0) return -1; if (ok_ == 0) result = 0; } while (0)
    if (kl->wake == RLK_NAMES_WAKE_WAITER && (nm = rlk_names_waiter_channel(p->name, "w", 1)) != NULL) {
        snprintf(chans[nchans++], sizeof chans[0], "%s", nm);
        free(nm);
    }
    if ((nm = rlk_names_channel(kl, p->name)) != NULL) {
        snprintf(chans[nchans++], sizeof chans[0], "%s", nm);
        if (kl->wake == RLK_NAMES_WAKE_TICKET)  /* a queued waiter's wake channel (client id 1) */
            snprintf(chans[nchans++], sizeof chans[0], "%s:rlk:1", nm);
        free(nm);
    }
    if (strcmp(kl->kind, "rwlock") == 0 && (nm = rlk_names_rw_timeout(p->name, "o", 1)) != NULL) {
        snprintf(keys[nkeys++], sizeof keys[0], "%s", nm);  /* a key the scripts derive */
        free(nm);
    }
    for (size_t i = 0; i < rlk_script_count(c); i++) {
        const rlk_script_info *s = rlk_script_at(c, i);
        const char *argv[12], *roles;
        char skeys[6][300], nk[16], fname[96];
        int n = 0;

        if (strncmp(s->name, kl->kind, plen) != 0 || s->name[plen] != '/')
            continue;
        /* The script's KEYS, by role, from its header (generated at build time). */
        roles = rlk_script_key_roles(s->name);
        for (const char *r = roles; r && *r && n < 6; r += strspn(r, " ")) {
            size_t w = strcspn(r, " ");
            char role[32];
            int unknown;

            snprintf(role, sizeof role, "%.*s", (int)w, r);
            r += w;
            if (!(nm = rlk_names_key(kl, role, p->name, &unknown))) {
                if (unknown)
                    continue;
                return -1;
            }
            snprintf(skeys[n], sizeof skeys[0], "%s", nm);
            free(nm);
            if (strcmp(role, "channel") != 0) {
                int dup = 0;

                for (int j = 0; j < nkeys; j++)
                    dup |= strcmp(keys[j], skeys[n]) == 0;
                if (!dup && nkeys < 8)
                    snprintf(keys[nkeys++], sizeof keys[0], "%s", skeys[n]);
            }
            n++;
        }
        snprintf(nk, sizeof nk, "%d", n);
        argv[0] = "evalsha";
        argv[1] = s->sha1;
        if (p->k->fcall) {      /* FCALL rlk_<kind>_<op> (FCALL_RO: a script that only reads) */
            snprintf(fname, sizeof fname, "rlk_%s", s->name);
            fname[strcspn(fname, "/")] = '_';
            argv[0] = "fcall";
            for (int j = 0; rlk_no_writes_sha1[j]; j++)
                if (strcmp(rlk_no_writes_sha1[j], s->sha1) == 0)
                    argv[0] = "fcall_ro";
            argv[1] = fname;
        }
        argv[2] = nk;
        for (int j = 0; j < n; j++)
            argv[3 + j] = skeys[j];
        MERGE(dryrun(p, 3 + n, argv));
        /* The commands the script runs, by name. */
        for (const char *q = s->body; (q = strstr(q, "redis.")) != NULL; q++) {
            const char *open = strncmp(q, "redis.call('", 12) == 0 ? q + 12
                               : strncmp(q, "redis.pcall('", 13) == 0 ? q + 13 : NULL;
            char cmd[24];
            int dup = 0;

            if (!open)
                continue;
            snprintf(cmd, sizeof cmd, "%.*s", (int)strcspn(open, "'"), open);
            for (int j = 0; j < nseen; j++)
                dup |= strcmp(seen[j], cmd) == 0;
            if (!dup && nseen < 64)
                snprintf(seen[nseen++], sizeof seen[0], "%s", cmd);
        }
        /* redis.call(publish, ...): the command this client passes (lib/publish_cmd). */
        if (strstr(s->body, "redis.call(publish,")) {
            const char *cmd = rlk_publish_arg(p->k->c);
            int dup = 0;

            for (int j = 0; j < nseen; j++)
                dup |= strcmp(seen[j], cmd) == 0;
            if (!dup && nseen < 64)
                snprintf(seen[nseen++], sizeof seen[0], "%s", cmd);
        }
    }
    /* What the client sends itself, and its queries. */
    for (int j = 0; j < nseen; j++) {
        const char *args = NULL;

        for (size_t t = 0; t < sizeof cmd_args / sizeof cmd_args[0]; t++)
            if (strcmp(cmd_args[t].cmd, seen[j]) == 0)
                args = cmd_args[t].args;
        if (!args)
            return -1;
        MERGE(dryrun_template(p, seen[j], args, keys, nkeys, chans, nchans));
    }
    MERGE(dryrun(p, 1, (const char *const[]){"ping"}));
    if (!p->k->fcall)   /* FCALL mode loads nothing */
        MERGE(dryrun(p, 3, (const char *const[]){"script", "load", "return 1"}));
    for (int j = 0; j < nchans; j++) {
        int sharded = rlk_client_pubsub(p->k->c) == RLK_PUBSUB_SHARDED;

        MERGE(dryrun(p, 2, (const char *const[]){sharded ? "ssubscribe" : "subscribe", chans[j]}));
        MERGE(dryrun(p, 2, (const char *const[]){sharded ? "sunsubscribe" : "unsubscribe",
                                                  chans[j]}));
    }
    if (strcmp(kl->kind, "psemaphore") == 0)
        MERGE(dryrun_template(p, "zrange", "K 0 1", keys, nkeys, chans, 0));
    else if (strcmp(kl->kind, "token") != 0 && strcmp(kl->kind, "semaphore") != 0 &&
             strcmp(kl->kind, "latch") != 0)
        MERGE(dryrun_template(p, "hgetall", "K", keys, 1, chans, 0));
#undef MERGE
    return result;
}

static void check_acl(checker *k)
{
    redisReply *r;
    char user[128], kinds_json[512] = "", denied_list[256] = "", first_denied[600] = "", a[300];
    int rc = k->o->user ? RLK_OK : RUN_CMD(k, &r, "ACL", "WHOAMI");
    int ndenied = 0, nunknown = 0;
    finding *f;

    if (k->fatal)
        return;
    if (k->o->user) {
        snprintf(user, sizeof user, "%s", k->o->user);
    } else if (rc != RLK_OK || !r || r->type != REDIS_REPLY_STRING) {
        f = add(k, "acl", LV_UNKNOWN, "ACL WHOAMI refused (%s): permissions unknown",
                rc == RLK_OK ? "no user name" : rlk_errstr(k->c));
        set_fix(f, "run rlk check as an admin user, or compare the user's rules with docs/acl.md");
        if (r)
            freeReplyObject(r);
        return;
    } else {
        snprintf(user, sizeof user, "%s", r->str);
        freeReplyObject(r);
    }
    for (size_t i = 0; i < rlk_names_kind_count(); i++) {
        const rlk_names_kind *kind = rlk_names_kind_at(i);
        probe p = {k, user, k->o->name, "", 0};
        int ok = probe_kind(&p, kind);

        if (k->fatal)
            return;
        if (ok == 0 && native_token && strcmp(kind->kind, "token") == 0) {
            /* Served without scripts (client/native.h): its commands are what counts. */
            probe q = {k, user, k->o->name, "", 0};
            const char *rel = native_caps & RLK_NATIVE_DELIFEQ ? "delifeq" : "delex";

            if (dryrun(&q, 3, (const char *const[]){"set", k->o->name, "v"}) == 1 &&
                dryrun(&q, 3, (const char *const[]){rel, k->o->name, "v"}) == 1 &&
                dryrun(&q, 2, (const char *const[]){"pttl", k->o->name}) == 1)
                ok = 2;
        }
        if (ok < 0 && i == 0 && p.unknown) {
            f = add(k, "acl", LV_UNKNOWN, "user %s: ACL DRYRUN refused (%s): permissions unknown",
                    user, rlk_errstr(k->c));
            set_fix(f, "run rlk check as a user allowed ACL DRYRUN (Redis 7), or compare the "
                       "user's rules with docs/acl.md");
            add_json(f, ", \"user\": %s", jstr(a, sizeof a, user));
            return;
        }
        snprintf(kinds_json + strlen(kinds_json), sizeof kinds_json - strlen(kinds_json),
                 "%s\"%s\": \"%s\"", i ? ", " : "", kind->kind,
                 ok == 2 ? "native" : ok > 0 ? "ok" : ok == 0 ? "denied" : "unknown");
        if (ok == 0) {
            snprintf(denied_list + strlen(denied_list), sizeof denied_list - strlen(denied_list),
                     "%s%s", ndenied ? ", " : "", kind->kind);
            if (!ndenied++)
                snprintf(first_denied, sizeof first_denied, "%s", p.denied);
        } else if (ok < 0) {
            nunknown++;
        }
        if (strcmp(kind->kind, "reentrant") == 0 && ok >= 0) {
            probe q = {k, user, k->o->name, "", 0};

            script_load_allowed =
                dryrun(&q, 3, (const char *const[]){"script", "load", "return 1"}) == 1;
        }
    }
    if (ndenied) {
        f = add(k, "acl", LV_ERROR, "user %s may not use: %s; first refusal: %s", user,
                denied_list, first_denied);
        set_fix(f, "give the user the rules of docs/acl.md (with your lock names' patterns)");
    } else if (nunknown) {
        f = add(k, "acl", LV_UNKNOWN, "user %s: %d kinds could not be checked", user, nunknown);
    } else {
        f = add(k, "acl", LV_OK, "user %s may use every kind (ACL DRYRUN with lock name %s)", user,
                k->o->name);
    }
    add_json(f, ", \"user\": %s, \"kinds\": {%s}", jstr(a, sizeof a, user), kinds_json);
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

static void check_clock(checker *k)
{
    long long best_rtt = -1, offset = 0, prev = -1;
    int monotonic = 1;
    finding *f;

    for (int i = 0; i < CLOCK_SAMPLES; i++) {
        redisReply *r;
        long long before = wall_us(), rtt, server;
        int rc = RUN_CMD(k, &r, "TIME");

        rtt = wall_us() - before;
        if (rc != RLK_OK || !r || r->type != REDIS_REPLY_ARRAY || r->elements != 2) {
            if (!k->fatal) {
                f = add(k, "clock", LV_UNKNOWN, "TIME refused: %s", rlk_errstr(k->c));
                set_fix(f, "allow TIME (+time)");
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
        f = add(k, "clock", LV_WARNING, "the server's TIME went backwards between calls: its "
                "wall clock is being stepped, and %s expires keys (leases) by it", k->server);
        set_fix(f, "run NTP (chrony/ntpd) in slew mode on the server host");
    } else if (offset > 1000000 || offset < -1000000) {
        f = add(k, "clock", LV_WARNING, "the server's clock is %+.1f ms from this host's: one of "
                "them is not synchronised; rlk's scripts read the server's clock, but a clock "
                "that gets corrected by a step expires leases early or late",
                (double)offset / 1000.0);
        set_fix(f, "run NTP on both hosts");
    } else {
        /* Under 0.05 ms either way it shows as +0.0 (printf would say -0.0). */
        f = add(k, "clock", LV_OK, "server TIME %+.1f ms from this host's clock, monotonic over "
                "%d calls", offset > -50 && offset < 50 ? 0.0 : (double)offset / 1000.0,
                CLOCK_SAMPLES);
    }
    add_json(f, ", \"offset_ms\": %.3f, \"monotonic\": %s", (double)offset / 1000.0,
             monotonic ? "true" : "false");
}

static int cmp_ll(const void *a, const void *b)
{
    long long x = *(const long long *)a, y = *(const long long *)b;

    return (x > y) - (x < y);
}

#define PINGS 5

static void check_latency(checker *k)
{
    long long us[PINGS];
    finding *f;

    for (int i = 0; i < PINGS; i++) {
        redisReply *r;
        long long t0 = mono_us();
        int rc = RUN_CMD(k, &r, "PING");

        us[i] = mono_us() - t0;
        if (r)
            freeReplyObject(r);
        if (rc != RLK_OK) {
            if (!k->fatal)
                add(k, "latency", LV_UNKNOWN, "PING refused: %s", rlk_errstr(k->c));
            return;
        }
    }
    qsort(us, PINGS, sizeof us[0], cmp_ll);
    double mn = (double)us[0] / 1000.0, med = (double)us[PINGS / 2] / 1000.0,
           mx = (double)us[PINGS - 1] / 1000.0;
    if (med > 100.0 || mx > 1000.0) {
        f = add(k, "latency", LV_WARNING, "PING x%d: min %.2f ms, median %.2f ms, max %.2f ms: "
                "slow for locks (every acquire, release and renewal is a round trip)", PINGS, mn,
                med, mx);
        set_fix(f, "run the clients near the server; check the server's load (SLOWLOG, "
                   "LATENCY DOCTOR)");
    } else {
        f = add(k, "latency", LV_OK, "PING x%d: min %.2f ms, median %.2f ms, max %.2f ms", PINGS,
                mn, med, mx);
    }
    add_json(f, ", \"min_ms\": %.3f, \"median_ms\": %.3f, \"max_ms\": %.3f", mn, med, mx);
}

/* ---------------------------------------------------------------- output */

static void print_text(const checker *k)
{
    printf("rlk check %s\n", rlk_cli_show(rlk_client_url(k->c)));
    for (int i = 0; i < k->n; i++) {
        const finding *f = &k->f[i];

        printf("%-8s %-12s %s\n", level_words[f->level], f->check, rlk_cli_show(f->message));
        if (f->fix[0] && f->level != LV_OK)
            printf("%-8s %-12s fix: %s\n", "", "", rlk_cli_show(f->fix));
    }
}

static void print_json(const checker *k, const char *result, int errors, int warnings)
{
    char a[600], b[1100];

    printf("{\"url\": %s, \"result\": \"%s\", \"errors\": %d, \"warnings\": %d, \"checks\": [",
           jstr(a, sizeof a, rlk_client_url(k->c)), result, errors, warnings);
    for (int i = 0; i < k->n; i++) {
        const finding *f = &k->f[i];

        printf("%s\n  {\"check\": \"%s\", \"level\": \"%s\", \"message\": %s", i ? "," : "",
               f->check, level_words[f->level], jstr(b, sizeof b, f->message));
        if (f->fix[0] && f->level != LV_OK)
            printf(", \"fix\": %s", jstr(a, sizeof a, f->fix));
        printf("%s}", f->json);
    }
    printf("\n]}\n");
}

/* 1 when the client calls the library (--functions, or AUTO with this release's library on
 * the server): the ACL and scripts checks then judge FCALL instead of EVALSHA. */
static int check_fcall_mode(rlk_client *c)
{
    int active = rlk_functions_active(c);
    rlk_functions_state st;

    if (active >= 0)
        return active;
    return rlk_verify_functions(c, &st) == RLK_OK && st.present && st.same_code;
}

/* rlk_cli_connect, but a server whose TLS certificate rlk refuses (expired, another host's
 * name, no trusted CA) is still checked: the refusal becomes the transport check's error and
 * the report is made over a connection without the certificate check. */
static rlk_client *check_connect(checker *k, int *code)
{
    rlk_options o;
    rlk_client *c;
    const char *why;

    rlk_options_init(&o);
    if ((*code = rlk_cli_conn_options(k->o->url, &o)) >= 0)
        return NULL;
    o.no_preload = 1;
    o.pool_size = 1;
    if (!(c = rlk_connect(&o))) {
        *code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
        return NULL;
    }
    if (rlk_err(c) != RLK_OK && !o.tls_insecure && (why = tls_refusal(rlk_errstr(c))) != NULL) {
        snprintf(k->tls_refused, sizeof k->tls_refused, "%s", why);
        rlk_free(c);
        o.tls_insecure = 1;
        if (!(c = rlk_connect(&o))) {
            *code = rlk_cli_fail(RLK_EXIT_REPLY, "out of memory");
            return NULL;
        }
        k->refused_first = 1;
    }
    if (rlk_err(c) != RLK_OK) {
        *code = rlk_cli_fail(rlk_cli_exit_code(rlk_err(c)), "%s", rlk_errstr(c));
        rlk_free(c);
        return NULL;
    }
    rlk_cli_connected(c);
    *code = RLK_EXIT_OK;
    return c;
}

static int check_run(int argc, char **argv)
{
    check_opts o = {NULL, "rlk-check", NULL, 0};
    checker k;
    int code, errors = 0, warnings = 0;

    for (int i = 1; i < argc;) {
        int got = rlk_cli_opt_value("check", argc, argv, &i, "--url", &o.url);

        if (got == 0)
            got = rlk_cli_opt_value("check", argc, argv, &i, "--name", &o.name);
        if (got == 0)
            got = rlk_cli_opt_value("check", argc, argv, &i, "--user", &o.user);
        if (got == 0)
            got = rlk_cli_global_opt("check", argc, argv, &i);
        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(check_usage, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--json") == 0)
            o.json = 1;
        else if (argv[i][0] == '-')
            return rlk_cli_unknown_option("check", argv[i]);
        else
            return rlk_cli_usage("check", "unexpected argument '%s'", argv[i]);
        i++;
    }
    if (!o.name[0] || strlen(o.name) > 200)
        return rlk_cli_usage("check", "--name must be 1..200 characters");
    if (o.user && (!o.user[0] || strlen(o.user) > 100))
        return rlk_cli_usage("check", "--user must be 1..100 characters");
    memset(&k, 0, sizeof k);
    k.o = &o;
    snprintf(k.server, sizeof k.server, "the server");
    k.c = check_connect(&k, &code);
    if (!k.c)
        return code;
    k.fcall = check_fcall_mode(k.c);
    /* In this order: family, role, eviction and persistence read the INFO of check_server;
     * acl uses what check_family found about the native token lock; scripts uses what
     * check_acl found about SCRIPT LOAD. */
    static void (*const checks[])(checker *) = {check_server, check_family, check_transport,
                                                check_role,
                                                check_eviction,
                                                check_persistence, check_acl, check_scripts,
                                                check_clock, check_latency};
    for (size_t i = 0; i < sizeof checks / sizeof checks[0] && !k.fatal; i++)
        checks[i](&k);
    if (k.fatal) {
        code = rlk_cli_fail(rlk_cli_exit_code(k.fatal), "check: %s", rlk_errstr(k.c));
    } else {
        for (int i = 0; i < k.n; i++) {
            errors += k.f[i].level == LV_ERROR;
            warnings += k.f[i].level == LV_WARNING || k.f[i].level == LV_UNKNOWN;
        }
        const char *result = errors ? "error" : warnings ? "warning" : "ok";

        if (o.json)
            print_json(&k, result, errors, warnings);
        else
            print_text(&k);
        fflush(stdout);
        code = errors ? RLK_EXIT_CHECK_ERRORS : warnings ? RLK_EXIT_CHECK_WARNINGS : RLK_EXIT_OK;
        if (code != RLK_EXIT_OK)
            rlk_cli_fail(code, "check %s: %d error%s, %d warning%s", rlk_client_url(k.c), errors,
                         errors == 1 ? "" : "s", warnings, warnings == 1 ? "" : "s");
    }
    free(k.info);
    rlk_free(k.c);
    return code;
}

const rlk_cli_command rlk_cmd_check = {
    "check",
    "check a server before trusting it with locks (rlk check [--json])",
    check_usage,
    check_run,
};
