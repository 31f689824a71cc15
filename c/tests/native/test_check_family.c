/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_check_family.c - rlk check's server families (c/cli/check_family.c)
 * on recorded replies: the INFO server sections these servers send (Redis
 * and Valkey as recorded from the servers built here; KeyDB, Dragonfly and
 * Garnet written from their documentation, as they cannot be installed
 * here) and the CONFIG GET values the findings read. Also the native
 * finding from the capability bits and the parser of COMMAND DOCS replies
 * (client/native.c) on hand-built replies.
 */
#define _POSIX_C_SOURCE 200809L

#include "check.h"

#include <hiredis/hiredis.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check_family.h"
#include "client/native.h"

static const char info_redis8[] =
    "# Server\r\nredis_version:8.0.6\r\nredis_git_sha1:00000000\r\nredis_mode:standalone\r\n"
    "os:Linux 6.1.0 x86_64\r\nexecutable:/var/cache/rlk-servers/redis8/bin/redis-server\r\n"
    "\r\n# Replication\r\nrole:master\r\nconnected_slaves:0\r\n";
static const char info_valkey9[] =
    "# Server\r\nredis_version:7.2.4\r\nserver_name:valkey\r\nvalkey_version:9.1.2\r\n"
    "valkey_release_stage:ga\r\nserver_mode:standalone\r\n"
    "executable:/var/cache/rlk-servers/valkey9/bin/valkey-server\r\n"
    "\r\n# Replication\r\nrole:master\r\n";
static const char info_keydb[] =
    "# Server\r\nredis_version:6.3.4\r\nredis_git_sha1:7e7e5e57\r\nredis_mode:standalone\r\n"
    "executable:/usr/bin/keydb-server\r\nconfig_file:/etc/keydb/keydb.conf\r\n"
    "\r\n# Replication\r\nrole:master\r\n";
static const char info_keydb_active[] =
    "# Server\r\nredis_version:6.3.4\r\nredis_mode:standalone\r\n"
    "executable:/opt/keydb/bin/keydb-server\r\n"
    "\r\n# Replication\r\nrole:active-replica\r\nmaster_host:10.0.0.2\r\n";
static const char info_dragonfly[] =
    "# Server\r\nredis_version:7.4.0\r\ndragonfly_version:df-v1.25.1\r\nredis_mode:standalone\r\n"
    "arch_bits:64\r\nmultiplexing_api:epoll\r\ntcp_port:6379\r\nthread_count:4\r\n"
    "\r\n# Replication\r\nrole:master\r\n";
static const char info_garnet[] =
    "# Server\r\nredis_version:7.2.5\r\ngarnet_version:1.0.60\r\nos:Linux\r\n"
    "processor_count:8\r\nrun_id:a9f6c3e1\r\n";
static const char info_proxy[] = "# Server\r\nproxy:envoy\r\n";

static rlk_cfind run(const char *info, const char *v0, const char *v1)
{
    const char *values[2] = {v0, v1};
    rlk_cfind f;

    rlk_family_finding(info, -1, values, &f);
    return f;
}

static void test_family_of(void)
{
    char v[64];

    CHECK_INT_EQ(rlk_family_of(info_redis8, v, sizeof v), RLK_FAMILY_REDIS);
    CHECK_STR_EQ(v, "8.0.6");
    CHECK_INT_EQ(rlk_family_of(info_valkey9, v, sizeof v), RLK_FAMILY_VALKEY);
    CHECK_STR_EQ(v, "9.1.2");
    CHECK_INT_EQ(rlk_family_of(info_keydb, v, sizeof v), RLK_FAMILY_KEYDB);
    CHECK_STR_EQ(v, "6.3.4");
    CHECK_INT_EQ(rlk_family_of(info_dragonfly, v, sizeof v), RLK_FAMILY_DRAGONFLY);
    CHECK_STR_EQ(v, "df-v1.25.1");
    CHECK_INT_EQ(rlk_family_of(info_garnet, v, sizeof v), RLK_FAMILY_GARNET);
    CHECK_STR_EQ(v, "1.0.60");
    CHECK_INT_EQ(rlk_family_of(info_proxy, v, sizeof v), RLK_FAMILY_UNKNOWN);
    CHECK_INT_EQ(rlk_family_of(NULL, v, sizeof v), RLK_FAMILY_UNKNOWN);
    /* The field must start a line: a value that mentions it is not it. */
    CHECK_INT_EQ(rlk_family_of("# Server\r\nredis_version:7.0.15\r\nos:dragonfly_version:x\r\n",
                               v, sizeof v), RLK_FAMILY_REDIS);
}

static void test_config_keys(void)
{
    CHECK(rlk_family_config_keys(RLK_FAMILY_REDIS)[0] == NULL);
    CHECK_STR_EQ(rlk_family_config_keys(RLK_FAMILY_KEYDB)[0], "active-replica");
    CHECK_STR_EQ(rlk_family_config_keys(RLK_FAMILY_DRAGONFLY)[0], "default_lua_flags");
    CHECK_STR_EQ(rlk_family_config_keys(RLK_FAMILY_GARNET)[0], "lua-transaction-mode");
}

static void test_redis_valkey(void)
{
    rlk_cfind f = run(info_redis8, NULL, NULL);

    CHECK_INT_EQ(f.level, RLK_CF_OK);
    CHECK_STR_EQ(f.message, "Redis 8.0.6");
    f = run(info_valkey9, NULL, NULL);
    CHECK_INT_EQ(f.level, RLK_CF_OK);
    CHECK_STR_EQ(f.message, "Valkey 9.1.2");
}

static void test_keydb(void)
{
    rlk_cfind f = run(info_keydb, "no", "no");

    CHECK_INT_EQ(f.level, RLK_CF_OK);
    f = run(info_keydb, "yes", "no");
    CHECK_INT_EQ(f.level, RLK_CF_ERROR);
    CHECK_STR_CONTAINS(f.message, "two holders");
    CHECK_STR_CONTAINS(f.fix, "active-replica no");
    f = run(info_keydb, "no", "yes");
    CHECK_INT_EQ(f.level, RLK_CF_ERROR);
    CHECK_STR_CONTAINS(f.message, "multi-master");
    /* INFO alone says so, even when CONFIG GET is refused. */
    f = run(info_keydb_active, NULL, NULL);
    CHECK_INT_EQ(f.level, RLK_CF_ERROR);
    f = run(info_keydb, NULL, NULL);
    CHECK_INT_EQ(f.level, RLK_CF_UNKNOWN);
}

static void test_dragonfly(void)
{
    rlk_cfind f = run(info_dragonfly, "", "false");

    CHECK_INT_EQ(f.level, RLK_CF_WARNING);
    CHECK_STR_CONTAINS(f.message, "rwlock");
    CHECK_STR_CONTAINS(f.fix, "allow-undeclared-keys");
    f = run(info_dragonfly, "allow-undeclared-keys", "false");
    CHECK_INT_EQ(f.level, RLK_CF_OK);
    f = run(info_dragonfly, "disable-atomicity,allow-undeclared-keys", NULL);
    CHECK_INT_EQ(f.level, RLK_CF_OK);
    f = run(info_dragonfly, "", "true");
    CHECK_INT_EQ(f.level, RLK_CF_OK);
    CHECK_STR_CONTAINS(f.message, "lock_on_hashtags");
    f = run(info_dragonfly, NULL, NULL);
    CHECK_INT_EQ(f.level, RLK_CF_UNKNOWN);
}

static void test_garnet(void)
{
    rlk_cfind f = run(info_garnet, "true", NULL);

    CHECK_INT_EQ(f.level, RLK_CF_OK);
    f = run(info_garnet, "false", NULL);
    CHECK_INT_EQ(f.level, RLK_CF_ERROR);
    CHECK_STR_CONTAINS(f.message, "off");
    CHECK_STR_CONTAINS(f.fix, "--lua-transaction-mode");
    /* Not confirmed is an error too: the safe side. */
    f = run(info_garnet, NULL, NULL);
    CHECK_INT_EQ(f.level, RLK_CF_ERROR);
    CHECK_STR_CONTAINS(f.message, "not confirmed");
}

static void test_unknown(void)
{
    rlk_cfind f = run(info_proxy, NULL, NULL);

    CHECK_INT_EQ(f.level, RLK_CF_WARNING);
    CHECK_STR_CONTAINS(f.message, "proxy");
}

static void test_native_finding(void)
{
    rlk_cfind f;

    rlk_family_native_finding(1, RLK_NATIVE_SETIFEQ | RLK_NATIVE_DELIFEQ, &f);
    CHECK_STR_EQ(f.message, "without scripts: token (on SET IFEQ, DELIFEQ); every other kind "
                            "needs scripts");
    rlk_family_native_finding(1, RLK_NATIVE_SETIFEQ | RLK_NATIVE_DELEX, &f);
    CHECK_STR_CONTAINS(f.message, "token (on SET IFEQ, DELEX)");
    rlk_family_native_finding(1, RLK_NATIVE_SETIFEQ, &f);       /* Valkey 8.1 */
    CHECK_STR_PREFIX(f.message, "without scripts: none (the server has SET IFEQ");
    rlk_family_native_finding(1, 0, &f);
    CHECK_STR_PREFIX(f.message, "without scripts: none (no SET IFEQ");
    rlk_family_native_finding(0, 0, &f);
    CHECK_STR_CONTAINS(f.message, "not known");
}

/* ---- COMMAND DOCS replies, built by hand in RESP2's shape */

static redisReply *str(const char *s)
{
    redisReply *r = calloc(1, sizeof *r);

    r->type = REDIS_REPLY_STRING;
    r->str = strdup(s);
    r->len = strlen(s);
    return r;
}

static redisReply *arr(size_t n, ...)
{
    redisReply *r = calloc(1, sizeof *r);
    va_list ap;

    r->type = REDIS_REPLY_ARRAY;
    r->elements = n;
    r->element = calloc(n ? n : 1, sizeof *r->element);
    va_start(ap, n);
    for (size_t i = 0; i < n; i++)
        r->element[i] = va_arg(ap, redisReply *);
    va_end(ap);
    return r;
}

static redisReply *arg_doc(const char *name, const char *token)
{
    return token ? arr(4, str("name"), str(name), str("token"), str(token))
                 : arr(2, str("name"), str(name));
}

static void test_parse_docs(void)
{
    /* Valkey 9: SET names IFEQ among its arguments; DELIFEQ exists; no DELEX. */
    redisReply *valkey9 = arr(4,
        str("set"), arr(4, str("summary"), str("Sets the string value of a key."),
                        str("arguments"), arr(3, arg_doc("key", NULL), arg_doc("value", NULL),
                                                 arr(2, str("condition"),
                                                     arr(3, arg_doc("nx", "NX"),
                                                         arg_doc("xx", "XX"),
                                                         arg_doc("comparison-value", "IFEQ"))))),
        str("delifeq"), arr(2, str("summary"), str("Delete key if value matches string.")));
    /* Redis 7: SET without IFEQ (its history mentions other options), no others. */
    redisReply *redis7 = arr(2,
        str("set"), arr(4, str("history"), arr(1, arr(2, str("7.0.0"),
                                                     str("Allowed the NX and GET options "
                                                         "to be used together; IFEQ"))),
                        str("arguments"), arr(2, arg_doc("nx", "NX"), arg_doc("get", "GET"))));
    /* Redis 8.4: SET and DELEX with IFEQ. */
    redisReply *redis84 = arr(4,
        str("set"), arr(2, str("arguments"), arr(1, arg_doc("ifeq-value", "IFEQ"))),
        str("delex"), arr(2, str("arguments"), arr(2, arg_doc("key", NULL),
                                                  arg_doc("ifeq-value", "IFEQ"))));
    redisReply *err = calloc(1, sizeof *err);

    err->type = REDIS_REPLY_ERROR;
    CHECK_INT_EQ(rlk_native_parse_docs(valkey9), RLK_NATIVE_SETIFEQ | RLK_NATIVE_DELIFEQ);
    CHECK_INT_EQ(rlk_native_parse_docs(redis7), 0);
    CHECK_INT_EQ(rlk_native_parse_docs(redis84), RLK_NATIVE_SETIFEQ | RLK_NATIVE_DELEX);
    CHECK_INT_EQ(rlk_native_parse_docs(err), 0);
    CHECK_INT_EQ(rlk_native_parse_docs(NULL), 0);
    freeReplyObject(valkey9);
    freeReplyObject(redis7);
    freeReplyObject(redis84);
    freeReplyObject(err);
}

int main(void)
{
    RUN_TEST(test_family_of);
    RUN_TEST(test_config_keys);
    RUN_TEST(test_redis_valkey);
    RUN_TEST(test_keydb);
    RUN_TEST(test_dragonfly);
    RUN_TEST(test_garnet);
    RUN_TEST(test_unknown);
    RUN_TEST(test_native_finding);
    RUN_TEST(test_parse_docs);
    return check_summary("test_check_family");
}
