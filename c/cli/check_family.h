/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_family.h - rlk check's server families (check_family.c): which
 * server speaks, from what it says about itself in INFO, and what that
 * means for locks. Pure: INFO text and CONFIG GET values in, findings out;
 * cmd_check.c asks the server and prints them.
 *
 *   Valkey     server_name:valkey / valkey_version
 *   Redis      redis_version and none of the others
 *   KeyDB      a keydb field or KeyDB's executable; active replication
 *              (active-replica yes, multi-master yes, role:active-replica)
 *              is an error: two masters take writes, a lock can be held on
 *              both at once
 *   Dragonfly  dragonfly_version; scripts may touch only declared keys
 *              unless started with --default_lua_flags=allow-undeclared-keys
 *              or --lock_on_hashtags: the read-write lock's scripts derive
 *              their rwlock_timeout keys (the only kind that does)
 *   Garnet     garnet_version / server_name:garnet; without
 *              --lua-transaction-mode its scripts run without locking their
 *              keys (not atomically): an error, two holders are possible
 *   unknown    no redis_version: a proxy or a server that does not say
 */
#ifndef RLK_CHECK_FAMILY_H
#define RLK_CHECK_FAMILY_H

#include <stddef.h>

enum rlk_family {
    RLK_FAMILY_REDIS,
    RLK_FAMILY_VALKEY,
    RLK_FAMILY_KEYDB,
    RLK_FAMILY_DRAGONFLY,
    RLK_FAMILY_GARNET,
    RLK_FAMILY_UNKNOWN
};

/* Levels, as rlk check's findings number them. */
enum { RLK_CF_OK, RLK_CF_INFO, RLK_CF_WARNING, RLK_CF_UNKNOWN, RLK_CF_ERROR };

typedef struct rlk_cfind {
    const char *check;      /* "family" or "native" */
    int level;              /* RLK_CF_* */
    char message[400];
    char fix[300];          /* "" when none */
} rlk_cfind;

/* The family of the server whose INFO text (the server section at least)
 * is info; its own version into version ("" when it says none). */
int rlk_family_of(const char *info, char *version, size_t vlen);
const char *rlk_family_name(int family);

/* The CONFIG GET parameters the findings of family read, NULL-terminated
 * (none: a list holding NULL only). */
const char *const *rlk_family_config_keys(int family);

/* The family finding: info the INFO text (default sections), family its
 * family (-1: rlk_family_of(info)), values[i] the
 * value of rlk_family_config_keys(family)[i], NULL when the server refused
 * or does not know it. */
void rlk_family_finding(const char *info, int family, const char *const *values,
                        rlk_cfind *out);

/* What works without scripts (client/native.h): caps the RLK_NATIVE_* bits,
 * known 0 when COMMAND DOCS could not be asked. */
void rlk_family_native_finding(int known, int caps, rlk_cfind *out);

#endif
