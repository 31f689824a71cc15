/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * top.h - what the files of `rlk top` share (cmd_top.c: options, the loop and
 * the terminal; top_scan.c: the table of rows, SCAN, pub/sub; top_read.c: the
 * details of the rows, their order, a refresh; top_text.c, top_json.c: the two
 * views; the wait-for graph's view has its own module, top_deadlock.h).
 *
 * A live view of a server's locks, read from the server alone (so it shows
 * Redisson's clients as well as rlk's: the layouts are the same,
 * docs/compat.md). One refresh, on every master:
 *   1. SCAN MATCH P COUNT n, at most --rate calls a second per node. A key
 *      whose name has a companion's shape (redisson_lock_queue:{N}, {N}:rlk_waiters,
 *      {N}:timeout, ...) marks its lock N; any other key is a candidate.
 *   2. Per SCAN page, pipelined: HRANDFIELD k 64 WITHVALUES of each candidate
 *      (a bounded read: a lock hash has a few fields; HGETALL before Redis
 *      6.2); a WRONGTYPE one is read with GETRANGE k 0 23 (a count?), and
 *      a count with ZCARD {N}:timeout and GET {N}:rlk_kind (which kind).
 *   3. PUBSUB CHANNELS / SHARDCHANNELS of the four lock channel families
 *      (only channels with a subscriber are listed), then NUMSUB of those.
 *   4. For the locks with a subscriber or a companion key: LLEN of the rlk
 *      queue and the fair queue, GET of the rlk reservation.
 *   5. For the rows shown (--limit): PTTL, the fenced token and fair keys,
 *      the head of the fair queue with its deadlines (TIME), and a lock
 *      hash's GET {N}:rlk_kind (rlk lock --fair's marker: a fair lock with
 *      nobody queued). A hash whose
 *      fields are not holder counts but a faster-MultiLock group's (values
 *      and their holders' :expire_time / :lock_count) is a fastmulti row;
 *      HGETALL when the first 64 fields read were not all of it.
 *   6. For the locks with waiters in either queue: HGETALL and LRANGE of both
 *      queues, the wait-for graph (kinds/waitgraph.h, top_deadlock.c): a
 *      cycle is printed as DEADLOCK lines, --json has "waits".
 * Nothing is written; no KEYS. A holder's age is how long this rlk top has
 * seen the same holders (0 on the first refresh).
 */
#ifndef RLK_CLI_TOP_H
#define RLK_CLI_TOP_H

#include <signal.h>

#include "inspect.h"

enum { RLK_TOP_SORT_WAITERS, RLK_TOP_SORT_AGE, RLK_TOP_SORT_NAME, RLK_TOP_SORTS };
extern const char *const rlk_top_sort_words[RLK_TOP_SORTS];

/* Companion keys seen by SCAN. */
enum {
    RLK_TOP_F_QUEUE = 1,            /* redisson_lock_queue:{N} */
    RLK_TOP_F_TIMEOUT = 2,          /* redisson_lock_timeout:{N} */
    RLK_TOP_F_TOKEN = 4,            /* redisson_lock_token:{N} */
    RLK_TOP_F_WAITERS = 8,          /* {N}:rlk_waiters */
    RLK_TOP_F_NEXT = 16,            /* {N}:rlk_next */
    RLK_TOP_F_PERMITS = 32,         /* {N}:timeout */
    RLK_TOP_F_MARK = 64             /* {N}:rlk_kind */
};

#define RLK_TOP_FAIR_SHOWN 5
#define RLK_TOP_SAMPLE 64               /* HRANDFIELD's count: the fields a hash is first read by */
#define RLK_TOP_SAMPLE_S "64"
#define RLK_TOP_NODES_MAX 64

typedef struct rlk_top_row {
    char *name;
    int kind;                   /* RLK_IK_*; RLK_IK_NONE: companions or channels only */
    int hash_lock;              /* a hash of holder counts: reentrant, fair or fenced */
    int node;                   /* where its keys are; -1: route by slot */
    unsigned flags;
    rlk_ik_holder *holders;
    size_t nholders;
    redisReply *hreply;         /* holders (and a group's values) point into it */
    rlk_ik_value *values;       /* a faster-MultiLock group's values (RLK_IK_FASTMULTI) */
    size_t nvalues;
    int fm_more;                /* a group seen in a full HRANDFIELD sample: HGETALL it */
    const char *mode;           /* rwlock */
    long long count;            /* semaphore permits, latch count */
    long long ttl_ms;           /* -3: not read */
    long long queued;           /* {N}:rlk_waiters */
    long long fair_queued;      /* redisson_lock_queue:{N} */
    char reserved[64];          /* {N}:rlk_next: the ticket the lock is reserved for */
    long long subs;             /* pub/sub subscribers of its channels */
    long long permit_holders;   /* psemaphore: ZCARD {N}:timeout */
    rlk_ik_waiter fq[RLK_TOP_FAIR_SHOWN];
    size_t nfq;
    redisReply *fqreply;
    unsigned long long sig;     /* the holders, hashed: a change restarts the age */
    long long first_ms;         /* when this rlk top first saw these holders */
} rlk_top_row;

typedef struct rlk_top_table {
    rlk_top_row **slot;
    size_t cap, n;
} rlk_top_table;

typedef struct rlk_top_node {
    redisContext *ctx;
    char addr[300];
    long long last_scan_ns;
} rlk_top_node;

typedef struct rlk_top_opts {
    const char *url;
    const char *pattern;
    int once, json, sort, limit, count, rate;
    long long interval_ms;
} rlk_top_opts;

typedef struct rlk_top_state {
    rlk_top_opts o;
    rlk_client *c;
    rlk_top_node nodes[RLK_TOP_NODES_MAX];
    int nnodes;
    rlk_top_table t, old;
    int no_hrandfield;
    long long scanned;          /* keys SCAN returned */
    long long refresh_ms;
    long long now_ms;           /* the server's clock at the refresh */
    rlk_waitgraph *wg;          /* who waits for whom (docs/deadlock.md); NULL: not read */
    char err[512];
} rlk_top_state;

typedef struct rlk_top_totals {
    long long locks, semaphores, psemaphores, latches, queued, subs, permits, free_waited;
} rlk_top_totals;

/* Set by SIGINT and SIGTERM (cmd_top.c): every wait and SCAN pass ends. */
extern volatile sig_atomic_t rlk_top_stop;

/* ---------------------------------------------------------------- top_scan.c */

/* FNV-1a of len bytes of s. */
unsigned long long rlk_top_hash(const char *s, size_t len);
/* The row of name, or NULL. */
rlk_top_row *rlk_top_find(rlk_top_table *t, const char *name, size_t len);
/* Frees every row of t and empties it. */
void rlk_top_table_free(rlk_top_table *t);
/* n commands on node nd in one round trip; replies into r[0..n) (NULL on a
 * connection error, then RLK_ERR_IO with s->err set). One command: rlk_top_cmd
 * (NULL on a connection error). */
int rlk_top_pipe(rlk_top_state *s, rlk_top_node *nd, int n, int *argc, const char ***argv,
                 redisReply **r);
redisReply *rlk_top_cmd(rlk_top_state *s, rlk_top_node *nd, int argc, const char **argv);
/* The node index where a row's keys are. */
int rlk_top_node_of(rlk_top_state *s, const rlk_top_row *r);
/* A decimal of len bytes (*ok 0 when it is none). */
long long rlk_top_parse_ll(const char *s, size_t len, int *ok);
/* A companion key of name ("prefix:{name}" or "{name}:suffix"), malloc'd. */
char *rlk_top_key(const char *name, const char *prefix, const char *suffix);
/* Steps 1 to 3 on one node: SCAN ... TYPE type (hash, then string), pub/sub. */
int rlk_top_scan_node(rlk_top_state *s, int node, const char *type);
int rlk_top_pubsub_node(rlk_top_state *s, int node);

/* ---------------------------------------------------------------- top_read.c */

/* One refresh into s->t; *rows gets the rows sorted (all of them), *nrows. */
int rlk_top_refresh(rlk_top_state *s, rlk_top_row ***rows, size_t *nrows);
/* The wait-for graph of the rows with waiters (NULL: not read). */
rlk_waitgraph *rlk_top_waits_read(rlk_client *c, rlk_top_row **rows, size_t n);
/* What the views show of rows: the totals (of every row), whether a row is a
 * held lock, its kind's word, its waiters in both queues. */
void rlk_top_total(rlk_top_row **rows, size_t n, rlk_top_totals *t);
int rlk_top_is_lock(const rlk_top_row *r);
const char *rlk_top_kind_word(const rlk_top_row *r);
long long rlk_top_waiting(const rlk_top_row *r);

/* ---------------------------------------------------------------- the views */

/* top_json.c: one JSON object, one line. */
void rlk_top_print_json(rlk_top_state *s, rlk_top_row **rows, size_t n);
/* top_text.c: the table, drawn for a terminal (tty: clear the screen, fit its height) or not. */
void rlk_top_print_text(rlk_top_state *s, rlk_top_row **rows, size_t n, int tty);

#endif /* RLK_CLI_TOP_H */
