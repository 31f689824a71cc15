/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_script: the acquire and release scripts rlk-bench calls, and how to
 * fill in their KEYS and ARGV.
 *
 * The KEYS/ARGV lists are read from the script's own header (see
 * docs/script-contract.md): each declared parameter's short name is mapped
 * to a role (the lock key, its channel, the lease, the owner id, the unlock
 * message), so that the benchmark follows the scripts without a copy of
 * their signatures. A name it cannot map is an error, reported with the
 * script and parameter.
 */
#ifndef RLK_BENCH_SCRIPT_H
#define RLK_BENCH_SCRIPT_H

#include <stddef.h>

#define RLK_BENCH_MAX_PARAMS 8
#define RLK_BENCH_ERRLEN 256

typedef enum rlk_bench_role {
    RLK_BENCH_ROLE_LOCK,    /* the lock key: PREFIX:w1:<i> or PREFIX:w2 */
    RLK_BENCH_ROLE_CHANNEL, /* redisson_lock__channel:{<lock key>} */
    RLK_BENCH_ROLE_LEASE,   /* lease in ms */
    RLK_BENCH_ROLE_OWNER,   /* <uuid>:<contender index> */
    RLK_BENCH_ROLE_MESSAGE, /* the unlock message, "0" */
    RLK_BENCH_ROLE_PUBLISH, /* the publish command: "publish" (one server) */
    RLK_BENCH_ROLE_WAITERS, /* {<lock key>}:rlk_waiters (reentrant lock's queue) */
    RLK_BENCH_ROLE_GRANT,   /* {<lock key>}:rlk_next (its reservation) */
    RLK_BENCH_ROLE_TICKET,  /* a waiter ticket: "0", never queued (single tries, polls) */
    RLK_BENCH_ROLE_CLAIM,   /* the claim window in ms */
    RLK_BENCH_ROLE_PERMITS  /* a semaphore's permits to take or give back */
} rlk_bench_role;

typedef struct rlk_bench_script {
    char name[64];          /* "reentrant/acquire" */
    char *body;             /* owned copy of the exact bytes */
    size_t body_len;
    char sha1[41];          /* from the build when known, else "" */
    int nkeys;
    int nargs;
    rlk_bench_role keys[RLK_BENCH_MAX_PARAMS];
    rlk_bench_role args[RLK_BENCH_MAX_PARAMS];
} rlk_bench_script;

/* The strings one contender passes for each role. */
typedef struct rlk_bench_values {
    const char *lock;
    const char *channel;
    const char *lease;
    const char *owner;
    const char *message;
    const char *publish;
    const char *waiters;
    const char *grant;
    const char *ticket;
    const char *claim;
    const char *permits;    /* NULL: "1" */
} rlk_bench_values;

/* One call's KEYS and ARGV, pointing into an rlk_bench_values. */
typedef struct rlk_bench_call {
    int nkeys;
    int nargs;
    const char *keys[RLK_BENCH_MAX_PARAMS];
    size_t keylens[RLK_BENCH_MAX_PARAMS];
    const char *args[RLK_BENCH_MAX_PARAMS];
    size_t arglens[RLK_BENCH_MAX_PARAMS];
} rlk_bench_call;

/* Copies body, parses its header (whose name must be `name`). sha1 may be
 * NULL. Returns 0, or -1 with a message in err. */
int rlk_bench_script_from_body(rlk_bench_script *s, const char *name,
                               const char *body, size_t len, const char *sha1,
                               char *err, size_t errlen);

/* Reads <dir>/<name>.lua. Returns 0, or -1 with a message in err. */
int rlk_bench_script_from_dir(rlk_bench_script *s, const char *dir,
                              const char *name, char *err, size_t errlen);

/* The library's embedded copy (rlk_embedded_at). Returns 0; -1 with a
 * message when the library is not linked or has no such script. */
int rlk_bench_script_from_library(rlk_bench_script *s, const char *name,
                                  char *err, size_t errlen);

void rlk_bench_script_free(rlk_bench_script *s);

/* Fills *call with the values in the order the script declares them. */
void rlk_bench_script_bind(const rlk_bench_script *s, const rlk_bench_values *v,
                           rlk_bench_call *call);

/* The role a KEYS (is_key != 0) or ARGV parameter short name plays; -1 when
 * the benchmark does not know what to pass. */
int rlk_bench_role_of(const char *short_name, int is_key);

#endif /* RLK_BENCH_SCRIPT_H */
