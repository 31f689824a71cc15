/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_cli.h - what the files of `rlk check` share: the findings and how one is
 * added, the one way a check asks the server, and the checks themselves, run
 * in the order cmd_check.c lists them (cmd_check.c: options, connection,
 * report; check_server.c: the server's own probes, from server to latency;
 * check_acl.c: what the user may run per lock kind; check_family.h: the
 * server families, pure).
 */
#ifndef RLK_CLI_CHECK_H
#define RLK_CLI_CHECK_H

#include <stddef.h>

#include "check_family.h"
#include "cli.h"

typedef struct rlk_ck_opts {
    const char *url;
    const char *name;   /* the lock name the ACL probe uses */
    const char *user;   /* the user the ACL probe checks; NULL: ACL WHOAMI */
    int json;
} rlk_ck_opts;

/* A finding's level: check_family.h's RLK_CF_OK, _INFO, _WARNING, _UNKNOWN, _ERROR. */

#define RLK_CK_MAX_FINDINGS 16

typedef struct rlk_ck_finding {
    const char *check;
    int level;
    char message[512];
    char fix[384];
    char json[4096];    /* extra members, ", \"k\": v" each (scripts: every missing name) */
} rlk_ck_finding;

typedef struct rlk_checker {
    rlk_client *c;
    const rlk_ck_opts *o;
    rlk_ck_finding f[RLK_CK_MAX_FINDINGS];
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
    /* What one check found for another (the order of cmd_check.c's list). */
    int native_token;           /* the server serves the token lock natively (rlk_ck_family) */
    int native_caps;            /* its RLK_NATIVE_* bits */
    int script_load_allowed;    /* the user may SCRIPT LOAD (rlk_ck_acl): -1 not known */
} rlk_checker;

/* A finding of check at level, its message from fmt; at most RLK_CK_MAX_FINDINGS (the rest go to a
 * spare). Its fix, when not ok, and extra JSON members (", \"k\": v" each) are added to it. */
rlk_ck_finding *rlk_ck_add(rlk_checker *k, const char *check, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void rlk_ck_fix(rlk_ck_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void rlk_ck_json(rlk_ck_finding *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* JSON string escaping into buf (len bytes); returns buf. */
const char *rlk_ck_jstr(char *buf, size_t len, const char *s);

/* A connection error (IO, timeout, auth): the report stops, exit 3. */
int rlk_ck_conn_error(int rc);
/* Runs one command (NULL-terminated argv). RLK_OK with *r, or an error code with
 * k->fatal set on a connection error. */
int rlk_ck_cmd(rlk_checker *k, redisReply **r, const char *const *argv);
#define RLK_CK_CMD(k, r, ...) rlk_ck_cmd((k), (r), (const char *const[]){__VA_ARGS__, NULL})
/* Field "name:value" of an INFO text into buf; 0, or -1 when absent. info_int: the field
 * as a number, fallback when absent. */
int rlk_ck_info_field(const char *info, const char *name, char *buf, size_t len);
long long rlk_ck_info_int(const char *info, const char *name, long long fallback);

/* "connect HOST:PORT: TLS: the server's certificate ...": the part after "TLS: ", when the
 * error is the server's certificate being refused; NULL for any other error. */
const char *rlk_ck_tls_refusal(const char *err);

/* The checks (check_server.c, but rlk_ck_acl: check_acl.c). */
void rlk_ck_server(rlk_checker *k);
void rlk_ck_family(rlk_checker *k);
void rlk_ck_transport(rlk_checker *k);
void rlk_ck_role(rlk_checker *k);
void rlk_ck_eviction(rlk_checker *k);
void rlk_ck_persistence(rlk_checker *k);
void rlk_ck_acl(rlk_checker *k);
void rlk_ck_scripts(rlk_checker *k);
void rlk_ck_clock(rlk_checker *k);
void rlk_ck_latency(rlk_checker *k);

#endif /* RLK_CLI_CHECK_H */
