/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * native.h - the token lock (the scripts in scripts/token/) served by the server's
 * own compare-and-set commands where it has them, without a script.
 *
 * Valkey 8.1 has SET key value IFEQ cmp, Valkey 9.0 DELIFEQ key value,
 * Redis 8.4 DELEX key IFEQ value and SET ... IFEQ. rlk asks the server
 * which of them it has (COMMAND DOCS SET DELIFEQ DELEX: the commands it
 * knows, and whether SET's arguments name IFEQ) once per client, caches the
 * answer on the client (rlk_client.native_caps) and asks again after any new
 * connection is opened (conn.c clears the cache: a reconnect may reach
 * another server, after a failover or an upgrade).
 *
 * With at least one compare command the token kind's calls by name
 * ("token/acquire", "token/extend", "token/release") go native:
 *   acquire  SET key token NX PX lease GET; when busy, PTTL key
 *   extend   SET key token IFEQ token PX lease        (needs SET IFEQ)
 *   release  DELIFEQ key token, or DELEX key IFEQ token
 * and each reply is the script's reply (nil / PTTL; 1 / 0; 1 / 0), each
 * refusal the script's error text (RLK_BADARG, RLK_BADTOKEN, RLK_BADLEASE,
 * RLK_WRONGTYPE with the key's type). The data is the scripts' data: a
 * holder by script and a holder by native commands see each other. A call
 * the server has no command for runs its script.
 *
 * RLK_NATIVE=off in the environment forces the scripts (for comparison);
 * a client with min_replicas keeps the scripts too (WAIT rides behind the
 * script call only), and so does a client whose scripts come from a bundle
 * directory (the scripts it was given are the ones that run).
 */
#ifndef RLK_NATIVE_H
#define RLK_NATIVE_H

#include <hiredis/hiredis.h>

#include "rlk.h"

/* What the server has, as bits of rlk_client.native_caps. */
#define RLK_NATIVE_KNOWN   0x100   /* asked: the bits below are the answer */
#define RLK_NATIVE_SETIFEQ 0x1     /* SET ... IFEQ cmp */
#define RLK_NATIVE_DELIFEQ 0x2     /* DELIFEQ key value (Valkey 9.0) */
#define RLK_NATIVE_DELEX   0x4     /* DELEX key IFEQ value (Redis 8.4) */

/* 1 when the call of script s may go native on c (a token script, native
 * not switched off, no min_replicas): rlk_native_evalv then serves it. */
int rlk_native_wanted(const rlk_client *c, const rlk_script_info *s);

/* rlk_evalv for a token script: native commands where the server has them,
 * else the script. Same replies and errors as the script. */
int rlk_native_evalv(rlk_client *c, const rlk_script_info *s, int nkeys,
                     const char *const *keys, const size_t *keylens, int nargs,
                     const char *const *args, const size_t *arglens, redisReply **reply);

/* The capability bits of c's server (RLK_NATIVE_*, without KNOWN), asking it
 * on a pooled connection when not known yet. RLK_OK or a connection error. */
int rlk_native_caps(rlk_client *c, int *caps);

/* Pure: the capability bits from a COMMAND DOCS reply (RESP2 or RESP3). */
int rlk_native_parse_docs(const redisReply *r);

/* ---- for callers that pipeline (the async engine, engine/ae_call.c) */

/* The detection request: the docs of the commands the token lock may use. */
extern const char *rlk_native_docs_argv[5];
extern const size_t rlk_native_docs_lens[5];
/* Keeps the answer to that request on c (an error reply: none). */
void rlk_native_store_docs(rlk_client *c, const redisReply *r);
/* Whether c's answer is known (asked since its last new connection). */
int rlk_native_known(rlk_client *c);
/* Forgets c's answer (a new connection that conn.c did not open). */
void rlk_native_forget(rlk_client *c);
/* The native form of a call of script s whose answer is known: the command
 * formatted into *cmd (freed with redisFreeCommand) and its length, *op for
 * rlk_native_reply; -1 when the call goes by script (acquire, whose busy
 * reply needs a second command; a command the server lacks; arguments the
 * script would refuse: its error is the one to give; native not wanted). */
int rlk_native_format(rlk_client *c, const rlk_script_info *s, int nkeys,
                      const char *const *keys, int nargs, const char *const *args, char **cmd,
                      int *op);
/* The script's reply from the native command's reply r: r itself (an error
 * or an integer), or conv filled with the integer the script replies. */
redisReply *rlk_native_reply(int op, redisReply *r, redisReply *conv);

#endif
