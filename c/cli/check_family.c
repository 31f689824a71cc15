/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_family.c - see check_family.h: the server family from INFO, and its
 * finding. No I/O.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "check_family.h"
#include "client/native.h"

/* Field "name:value" (at a line's start) of an INFO text into buf (CR and
 * LF cut); 0, or -1 when absent. */
static int cf_field(const char *info, const char *name, char *buf, size_t len)
{
    size_t n = strlen(name);

    for (const char *p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, name, n) == 0 && p[n] == ':') {
            size_t v = strcspn(p + n + 1, "\r\n");

            snprintf(buf, len, "%.*s", (int)(v < len ? v : len - 1), p + n + 1);
            return 0;
        }
    }
    if (len)
        buf[0] = '\0';
    return -1;
}

/* Whether any line of info starts with prefix. */
static int cf_has_prefix(const char *info, const char *prefix)
{
    size_t n = strlen(prefix);

    for (const char *p = info; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncasecmp(p, prefix, n) == 0)
            return 1;
    return 0;
}

int rlk_family_of(const char *info, char *version, size_t vlen)
{
    char name[64], exe[256];

    version[0] = '\0';
    if (!info)
        return RLK_FAMILY_UNKNOWN;
    cf_field(info, "server_name", name, sizeof name);
    if (cf_field(info, "dragonfly_version", version, vlen) == 0)
        return RLK_FAMILY_DRAGONFLY;
    if (cf_field(info, "garnet_version", version, vlen) == 0 || strcasecmp(name, "garnet") == 0)
        return RLK_FAMILY_GARNET;
    cf_field(info, "executable", exe, sizeof exe);
    if (cf_has_prefix(info, "keydb") || strcasecmp(name, "keydb") == 0 ||
        strstr(exe, "keydb") != NULL) {
        if (cf_field(info, "keydb_version", version, vlen) != 0)
            cf_field(info, "redis_version", version, vlen);
        return RLK_FAMILY_KEYDB;
    }
    if (strcasecmp(name, "valkey") == 0 || cf_field(info, "valkey_version", version, vlen) == 0) {
        cf_field(info, "valkey_version", version, vlen);
        return RLK_FAMILY_VALKEY;
    }
    if (cf_field(info, "redis_version", version, vlen) == 0)
        return RLK_FAMILY_REDIS;
    return RLK_FAMILY_UNKNOWN;
}

const char *rlk_family_name(int family)
{
    static const char *const names[] = {"Redis", "Valkey", "KeyDB", "Dragonfly", "Garnet",
                                        "unknown"};

    return family >= 0 && family <= RLK_FAMILY_UNKNOWN ? names[family] : "unknown";
}

const char *const *rlk_family_config_keys(int family)
{
    static const char *const none[] = {NULL};
    static const char *const keydb[] = {"active-replica", "multi-master", NULL};
    static const char *const dragonfly[] = {"default_lua_flags", "lock_on_hashtags", NULL};
    static const char *const garnet[] = {"lua-transaction-mode", NULL};

    switch (family) {
    case RLK_FAMILY_KEYDB: return keydb;
    case RLK_FAMILY_DRAGONFLY: return dragonfly;
    case RLK_FAMILY_GARNET: return garnet;
    default: return none;
    }
}

static int cf_yes(const char *v)
{
    return v && (strcasecmp(v, "yes") == 0 || strcasecmp(v, "true") == 0 || strcmp(v, "1") == 0);
}

static int cf_no(const char *v)
{
    return v && (strcasecmp(v, "no") == 0 || strcasecmp(v, "false") == 0 || strcmp(v, "0") == 0);
}

static void cf_set(rlk_cfind *out, int level, const char *fix, const char *fmt, const char *a,
                   const char *b)
{
    out->check = "family";
    out->level = level;
    snprintf(out->message, sizeof out->message, fmt, a, b);
    snprintf(out->fix, sizeof out->fix, "%s", fix ? fix : "");
}

void rlk_family_finding(const char *info, int family, const char *const *values,
                        rlk_cfind *out)
{
    char version[64], role[64];
    int found = rlk_family_of(info, version, sizeof version);
    const char *const *keys;
    const char *v0, *v1;

    memset(out, 0, sizeof *out);
    if (family < 0)
        family = found;
    keys = rlk_family_config_keys(family);
    v0 = values && keys[0] ? values[0] : NULL;
    v1 = values && keys[0] && keys[1] ? values[1] : NULL;
    switch (family) {
    case RLK_FAMILY_REDIS:
    case RLK_FAMILY_VALKEY:
        cf_set(out, RLK_CF_OK, NULL, "%s %s", rlk_family_name(family), version);
        return;
    case RLK_FAMILY_KEYDB:
        cf_field(info ? info : "", "role", role, sizeof role);
        if (cf_yes(v0) || cf_yes(v1) || strcasecmp(role, "active-replica") == 0) {
            cf_set(out, RLK_CF_ERROR,
                   "turn active replication off (active-replica no, multi-master no): locks "
                   "need one master per key",
                   "KeyDB %s with active replication (%s): two masters accept writes, so a lock "
                   "can be held on both at once (two holders)",
                   version, cf_yes(v1) ? "multi-master" : "active-replica");
        } else if (!v0) {
            cf_set(out, RLK_CF_UNKNOWN,
                   "allow CONFIG GET active-replica to this user, or make sure it is no",
                   "KeyDB %s: active replication not known (CONFIG GET active-replica%s)",
                   version, " refused");
        } else {
            cf_set(out, RLK_CF_OK, NULL, "KeyDB %s, active replication off%s", version, "");
        }
        return;
    case RLK_FAMILY_DRAGONFLY:
        if ((v0 && strstr(v0, "allow-undeclared-keys")) || cf_yes(v1)) {
            cf_set(out, RLK_CF_OK, NULL, "Dragonfly %s: scripts may touch undeclared keys (%s)",
                   version, cf_yes(v1) ? "lock_on_hashtags" : "allow-undeclared-keys");
        } else if (!v0 && !v1) {
            cf_set(out, RLK_CF_UNKNOWN,
                   "start Dragonfly with --default_lua_flags=allow-undeclared-keys or "
                   "--lock_on_hashtags, or allow CONFIG GET to this user",
                   "Dragonfly %s: whether scripts may touch undeclared keys is not known; the "
                   "read-write lock (rwlock) needs it: its scripts derive their rwlock_timeout "
                   "keys%s",
                   version, "");
        } else {
            cf_set(out, RLK_CF_WARNING,
                   "start Dragonfly with --default_lua_flags=allow-undeclared-keys or "
                   "--lock_on_hashtags",
                   "Dragonfly %s refuses scripts that touch undeclared keys: the read-write lock "
                   "(rwlock) fails, its scripts derive their rwlock_timeout keys; the other kinds "
                   "declare every key%s",
                   version, "");
        }
        return;
    case RLK_FAMILY_GARNET:
        if (cf_yes(v0)) {
            cf_set(out, RLK_CF_OK, NULL, "Garnet %s, scripts run as transactions%s", version,
                   " (lua-transaction-mode)");
        } else {
            cf_set(out, RLK_CF_ERROR,
                   "start Garnet with --lua --lua-transaction-mode (and allow CONFIG GET "
                   "lua-transaction-mode, so that rlk check can see it)",
                   "Garnet %s: scripts run without locking their keys (lua-transaction-mode %s): "
                   "two clients can both take a lock",
                   version, cf_no(v0) ? "off" : "not confirmed");
        }
        return;
    default:
        cf_set(out, RLK_CF_WARNING,
               "point rlk at the server itself, or check the proxy runs scripts (EVALSHA) and "
               "PUBLISH inside scripts as the server does",
               "the server does not say what it is (no redis_version in INFO): a proxy? "
               "%s%s",
               "", "");
        return;
    }
}

void rlk_family_native_finding(int known, int caps, rlk_cfind *out)
{
    char cmds[96] = "";

    memset(out, 0, sizeof *out);
    out->check = "native";
    out->level = RLK_CF_INFO;
    if (caps & RLK_NATIVE_SETIFEQ)
        strcat(cmds, "SET IFEQ");
    if (caps & RLK_NATIVE_DELIFEQ)
        strcat(cmds, *cmds ? ", DELIFEQ" : "DELIFEQ");
    if (caps & RLK_NATIVE_DELEX)
        strcat(cmds, *cmds ? ", DELEX" : "DELEX");
    if (!known) {
        snprintf(out->message, sizeof out->message,
                 "COMMAND DOCS refused: which kinds work without scripts is not known");
    } else if ((caps & RLK_NATIVE_SETIFEQ) && (caps & (RLK_NATIVE_DELIFEQ | RLK_NATIVE_DELEX))) {
        snprintf(out->message, sizeof out->message,
                 "without scripts: token (on %s); every other kind needs scripts", cmds);
    } else if (caps) {
        snprintf(out->message, sizeof out->message,
                 "without scripts: none (the server has %s, not SET IFEQ with DELIFEQ or "
                 "DELEX); token calls use it where they can", cmds);
    } else {
        snprintf(out->message, sizeof out->message,
                 "without scripts: none (no SET IFEQ, DELIFEQ or DELEX: Valkey 9 or Redis 8.4 "
                 "have them)");
    }
}
