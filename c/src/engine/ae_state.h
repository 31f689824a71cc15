/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_state.h - the state of the async engine: struct rlk_async and the
 * types its files share (requests, timers, calls and their queues, nodes,
 * connections, dials, channels, holds). Included by the engine's files
 * only; what a kind's requests use is engine.h.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_AE_STATE_H
#define RLK_AE_STATE_H

#include <pthread.h>
#include <stddef.h>

#include <hiredis/hiredis.h>

#include "client/client.h"
#include "client/random.h"
#include "client/slot.h"
#include "client/slotmap.h"
#include "engine/engine.h"
#include "engine/ae_wd.h"
#include "engine/metrics.h"
#include "engine/wd_rule.h"

#define AE_SWEEP_MS 100             /* how often timeouts of calls and connects are checked */
#define AE_LINGER_MS 1000           /* an rlk_async client's channel stays subscribed this long
                                       after its last listener (as runtime/sub.h's) ... */
#define AE_LINGER_MAX 256           /* ... for at most this many channels at once */
#define AE_PING_MS 1000             /* a pub/sub connection silent this long is sent a PING */
#define AE_BACKOFF_MIN_MS 20        /* the first reconnect's delay (after the immediate one) */
#define AE_BACKOFF_MAX_MS 1000      /* the longest */
#define AE_RENEW_BATCH 100          /* holds per renewal call */
#define AE_ERRSTR_MAX 1024
#define AE_MAX_NODES 64             /* cluster: nodes seen (seeds and masters), never removed */
#define AE_REDIRECTS_MAX 16         /* cluster: MOVED/ASK followed per call */
#define AE_CL_BACKOFF_MIN_MS 5      /* cluster: TRYAGAIN, CLUSTERDOWN, ... retried after this, */
#define AE_CL_BACKOFF_MAX_MS 200    /* doubling up to this (cluster.c's rule) */
#define AE_CL_REFRESH_MS 100        /* cluster: CLUSTER SLOTS at most this often */

/* ---------------------------------------------------------------- types */

struct rlk_async_req {
    rlk_async *ac;
    rlk_async_fn fn;
    void *privdata;
    rlk_async_req *prev, *next;     /* ac's list of requests not yet delivered */
    rlk_async_req *qnext;           /* ac's queue of completed requests */
    int done;                       /* completed: on the queue or delivered */
    int cancelled;
    int err;
    long long value;
    char *id;
    char *errstr;
    rlk_ae_cancel_fn cancel;
    rlk_ae_free_fn free_fn;
    rlk_metrics_call mc;            /* an acquisition counted in the metrics (rlk_ae_req_metric) */
    int mkind;
    char *mname;                    /* its name; NULL: not counted */
    _Alignas(max_align_t) unsigned char state[];
};

struct rlk_ae_timer {
    rlk_async *ac;
    long long at;                   /* monotonic ms */
    unsigned long long seq;         /* ties fire in the order they were set */
    size_t idx;                     /* in ac->heap */
    rlk_ae_timer_fn fn;
    void *arg;
};

/* What a queued command is for. */
enum { AE_CALL_USER, AE_CALL_SETUP, AE_CALL_ID, AE_CALL_KILL, AE_CALL_LOAD, AE_CALL_ASKING,
       AE_CALL_DOCS };

typedef struct ae_node ae_node;

/* A call's routing on a cluster (allocated only there: a call on one
 * server stays as small as it was). */
struct ae_route {
    long long written;              /* monotonic ms: when written (the reply's timeout) */
    long long backoff;              /* the next "not now" retry's delay */
    long long not_before;           /* parked: routed again from then on (0: when the map is known) */
    int slot;                       /* the slot of its first key, RLK_TOPO_ANY_SLOT: any master */
    int pinned;                     /* sent to one node only (CLUSTER SLOTS, INFO): never routed */
    int asking;                     /* ASK: ASKING goes first on the node it is sent to */
    int redirects;                  /* MOVED/ASK followed */
    int fail_rc;                    /* parked to end with this (a call refused before sending) */
    int pub_at;                     /* the argument that is "publish" while the pub/sub mode
                                       is unknown: "spublish" once it is sharded; 0: none */
    char *last_err;                 /* the last "not now" answer, for the timeout's message */
};

struct rlk_ae_call {
    rlk_ae_call *next;
    int what;                       /* AE_CALL_* */
    int setup_i;                    /* AE_CALL_SETUP: its index */
    int retried;
    int forgotten;
    int refused;                    /* in unsent, refused by a demoted master (READONLY) */
    int native;                     /* 1 + rlk_native_format's op: the server's own command */
    char *cmd;                      /* formatted: free(); a native one redisFreeCommand */
    size_t len;
    const rlk_script_info *script;  /* a script call (NOSCRIPT rule), else NULL */
    rlk_ae_reply_fn fn;
    void *arg;
    long long issued;               /* monotonic ms: when made */
    struct ae_route *rt;            /* a cluster's routing state; NULL on one server */
};

/* A queue of calls, FIFO. */
typedef struct ae_callq {
    rlk_ae_call *head, *tail;
} ae_callq;

enum { AE_DOWN, AE_CONNECTING, AE_SETUP, AE_UP };

typedef struct ae_chan ae_chan;

/* The inner client, shared with dial threads: freed by the last of them,
 * unless borrowed (rlk_ae_new): then its engine waits for them (cv). */
typedef struct ae_cref {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int refs;
    int borrowed;
    rlk_client *c;
} ae_cref;

/* A blocking dial (TLS) on a short-lived thread; its outcome comes back
 * through a socket pair the loop watches. Freed by the last of the loop and
 * the thread; a dial the loop abandons is closed by the thread. */
typedef struct ae_dial {
    pthread_mutex_t mu;
    int refs;
    int abandoned;
    int done;
    ae_cref *cref;
    int sv[2];                      /* sv[0]: the loop's end; sv[1]: the thread's */
    redisContext *ctx;
    int rc;
    int unmade;                     /* the connect itself failed (rlk_conn_dial_failed) */
    char why[256];
    int refresh;                    /* sentinel: ask the sentinels first (a READONLY reply) */
    char *host;                     /* a cluster's node (else NULL: the URL's, or the sentinels') */
    int port;
    unsigned long long switches;    /* sentinel: the switches seen when the master was named */
} ae_dial;

/* One connection: the command connection or the pub/sub one. */
typedef struct ae_conn {
    redisContext *ctx;
    void *handle;                   /* the loop's, from hooks.attach */
    int state;                      /* AE_* */
    int events;                     /* what the loop watches */
    int setup_n, setup_left;        /* pub/sub: set-up commands sent, replies still to come */
    long long id;                   /* CLIENT ID of the live connection (command) */
    long long fence_id;             /* the id of the connection that broke: killed first */
    int fails;                      /* consecutive failures: the backoff */
    long long since;                /* monotonic ms the dial or set-up started */
    rlk_ae_timer *retry;
    int is_sub;
    long long rx, ping;             /* pub/sub: monotonic ms of its last read, of the PING
                                       unanswered since (0: none) */
    ae_dial *dial;                  /* a dial on its thread, or NULL */
    unsigned long long switches;    /* sentinel: the switches when this connection was named */
    void *dial_handle;              /* the loop's handle of dial->sv[0] */
    unsigned long long peer_turn;   /* the turn its peer was last seen open (ae_cmd_writable) */
    int docs_asked;                 /* command: COMMAND DOCS sent since it was started */
    ae_node *node;                  /* the node it goes to */
    /* Pub/sub on a cluster: the channels of the (S)SUBSCRIBE / (S)UNSUBSCRIBE
     * sent, in order (their replies come in that order); ch NULL: an answer
     * to drop (name: its channel's, copied when it was dropped). */
    struct ae_sq { struct ae_sq *next; ae_chan *ch; char *name; int sub; } *sq, *sq_tail;
} ae_conn;

/* A server: the one of the URL (or the sentinels' master), or one node of a
 * cluster, with its command connection and its queues, and its pub/sub
 * connection. */
struct ae_node {
    char *host;                     /* NULL: the URL's own address */
    int port;
    char addr[300];
    ae_conn cmd, sub;
    ae_callq unsent, inflight;      /* command connection: not written; written, no reply */
};

struct rlk_ae_sub {
    rlk_async *ac;
    ae_chan *ch;
    rlk_ae_sub *prev, *next;
    rlk_ae_msg_fn fn;
    void *arg;
    int dead;                       /* removed during a dispatch: unlinked after it */
    int downs;                      /* hears rlk_ae_down too (rlk_ae_sub_downs) */
    rlk_ae_timer *ready;            /* fn(NULL) on the next turn: the channel was live */
};

struct ae_chan {
    char *name;
    ae_chan *bnext;                 /* the bucket's chain */
    rlk_ae_sub *head, *tail;
    ae_conn *conn;                  /* the connection its commands went to, or NULL */
    unsigned listeners;             /* live (not dead) listeners */
    int outstanding;                /* SUBSCRIBE/UNSUBSCRIBE sent, not answered */
    int dispatching;
    signed char last_sent;          /* 1: SUBSCRIBE was the last command sent; 0 otherwise */
    signed char live;               /* the server has it subscribed (as its last reply said) */
    long long linger_until;         /* nobody listens, but it stays subscribed until then (ms,
                                       rlk_ae_now_ms; 0: not lingering) */
};

struct rlk_ae_hold {
    rlk_async *ac;
    rlk_ae_hold *prev, *next;
    rlk_renew_id id;                /* kind, name, owner, the kind's task, its KEYS (runtime/wd.h) */
    long long last_ok;              /* ms: send time of the acquire or last renewal that worked */
    long long next_due;             /* ms: renewed from then on */
    long long lost_after;           /* ms: lost this long after last_ok (rlk_renew_lost_after) */
    long long period;               /* ms: renewed this often */
    int inflight;                   /* a renewal names it */
    rlk_ae_lost_fn lost;
    void *arg;
    int refs;                       /* renewal calls in flight that name it */
    int removed;
};

/* One renewal call: the holds it names. */
typedef struct ae_renewal {
    const rlk_renew_task *task;
    long long sent;                 /* ms: when it was made */
    int fallback;                   /* a fallback's call: not counted */
    int n;
    rlk_ae_hold *h[AE_RENEW_BATCH];
} ae_renewal;

struct rlk_async {
    rlk_client *c;                  /* settings only (client.h rlk_client_prepare), or borrowed */
    ae_cref *cref;                  /* c, shared with dial threads */
    rlk_rt_counters *counters;      /* set by the creator (rlk_ae_counters); NULL: none */
    int fatal;
    char fatal_msg[AE_ERRSTR_MAX];
    char uuid[RLK_UUID_LEN + 1];
    rlk_async_hooks hooks;
    int attached;

    rlk_async_req *reqs;            /* not yet delivered */
    size_t npending;
    rlk_async_req *qhead, *qtail;   /* completed, to deliver */

    rlk_ae_timer **heap;
    size_t nheap, capheap;
    unsigned long long seq;
    long long armed;                /* what set_timer was last told: -2 nothing yet */

    ae_node *nodes[AE_MAX_NODES];   /* [0]: the URL's server (or the first seed) */
    int nnodes;
    rlk_ae_timer *sweep;

    int pubsub;                     /* RLK_PUBSUB_GLOBAL / _SHARDED; 0: not known yet (cluster) */
    const char *sub_name;           /* the blocking subscriber's client (rlk_ae_sub_name): its
                                       pub/sub connections' name; NULL: none */

    /* Cluster (ae_routed): the slot map (client/slotmap.h: its node i is nodes[i]),
     * filled by CLUSTER SLOTS. */
    rlk_slotmap map;
    unsigned rr;                    /* rotation: the node asked for the map */
    ae_callq parked;                /* calls waiting for the map, or for a retry's backoff */
    rlk_ae_timer *park_timer;
    int refreshing;                 /* CLUSTER SLOTS in flight */
    int info_asked;                 /* INFO server in flight (the pub/sub mode) */
    long long refreshed_at;         /* monotonic ms of the last CLUSTER SLOTS sent */
    int refresh_fails;
    rlk_ae_timer *refresh_timer;
    int gsub;                       /* global pub/sub on a cluster: the node of the one connection */

    ae_chan **buckets;
    size_t nbuckets, nchans;
    long long linger_ms;            /* a channel nobody listens to stays subscribed this long (0:
                                       none: the blocking subscriber lingers on its own) */
    int nlinger;                    /* channels lingering now (at most AE_LINGER_MAX) */

    rlk_ae_hold *holds;
    size_t nholds;
    rlk_ae_timer *renew_timer;

    char conn_err[AE_ERRSTR_MAX];   /* the one server's command connection could not be made:
                                       why ("connect <addr>: <cause>"); "": it is up, or not
                                       tried yet (rlk_async_conn_errstr, rlk_ae_unreachable) */
    int sn_ready;                   /* sentinel: a dial opened the sentinels (read from here on) */
    int sn_refresh;                 /* sentinel: a READONLY reply: ask again at the next dial */
    int cmd_readonly;               /* the command connection answered READONLY: drop it */
    unsigned long long lost_calls;  /* calls of requests ended lost (rlk_ae_lost_calls) */
    rlk_ae_timer *sn_watch;

    rlk_lost_kind_fn lost_fn;
    void *lost_ud;

    void *kind_data[RLK_AE_SLOTS];
    void (*kind_destroy[RLK_AE_SLOTS])(void *);

    int depth;                      /* handlers on the stack */
    unsigned long long turn;        /* handlers entered from the loop (depth 0 -> 1), counted */
    int closing;                    /* rlk_async_free started */
    int destroy_pending;            /* free the memory when the last handler returns */
};

#define AE_N0(ac) ((ac)->nodes[0])
/* Counts one of the counters' sub_* (the blocking subscriber's client only). */
#define AE_SUB_COUNT(ac, field) do {                                            \
        if ((ac)->sub_name && (ac)->counters)                                   \
            RLK_COUNT((ac)->counters, field);                                   \
    } while (0)

/* The engine's intrusive lists (requests, listeners, holds, call queues):
 * e goes first in the doubly linked list at head; e leaves it (e's own
 * links stay as they were); e goes last in the list (head, tail) linked
 * by e's field next. */
#define AE_DLIST_PUSH(head, e) do {                                             \
        (e)->next = (head);                                                     \
        if (head)                                                               \
            (head)->prev = (e);                                                 \
        (head) = (e);                                                           \
    } while (0)
#define AE_DLIST_UNLINK(head, e) do {                                           \
        if ((e)->prev)                                                          \
            (e)->prev->next = (e)->next;                                        \
        else                                                                    \
            (head) = (e)->next;                                                 \
        if ((e)->next)                                                          \
            (e)->next->prev = (e)->prev;                                        \
    } while (0)
#define AE_LIST_APPEND(head, tail, e, next) do {                                \
        (e)->next = NULL;                                                       \
        if (tail)                                                               \
            (tail)->next = (e);                                                 \
        else                                                                    \
            (head) = (e);                                                       \
        (tail) = (e);                                                           \
    } while (0)

/* The call queues (FIFO): inline, so they add no arrow between the parts. */
static inline void ae_callq_push(ae_callq *q, rlk_ae_call *call)
{
    AE_LIST_APPEND(q->head, q->tail, call, next);
}

static inline rlk_ae_call *ae_callq_pop(ae_callq *q)
{
    rlk_ae_call *call = q->head;

    if (call) {
        q->head = call->next;
        if (!q->head)
            q->tail = NULL;
    }
    return call;
}

/* A backoff: min doubled n times (at most 6), at most max. */
static inline long long ae_backoff(long long min, long long max, int n)
{
    long long ms = min << (n < 6 ? n : 6);

    return ms < max ? ms : max;
}

/* The engine's core: engine.c (connections, I/O, the handlers' entry and
 * exit), ae_call.c (requests and calls), ae_route.c (a cluster's routing)
 * and ae_pubsub.c (channels) are one module, which calls itself by name
 * both ways (c/src/README.md says why; ctest async_calls allows this one
 * cycle); every other part of async/ calls them in one direction only.
 * All on the loop's thread.
 *
 * A call's life and a node's submit (ae_call.c). */
rlk_ae_call *ae_call_new(rlk_async *ac, int what, rlk_ae_reply_fn fn, void *arg);
void ae_call_end(rlk_async *ac, rlk_ae_call *call, int rc, const redisReply *reply,
                 const char *errstr, int lost);
int ae_node_submit(rlk_async *ac, ae_node *n, rlk_ae_call *call);
/* The call's command from argv (lens may be NULL), written on n's command
 * connection now (now: ahead of the calls waiting, the connection's own
 * set-up) or submitted there (ae_node_submit): 0, or -1 out of memory, the
 * call freed. */
int ae_call_send(rlk_async *ac, ae_node *n, rlk_ae_call *call, int argc, const char **argv,
                 const size_t *lens, int now);
/* 1 when ac's calls are routed per slot (rlk_topo_routed: a cluster); every
 * part asks this, never the URL (engine.c). */
int ae_routed(const rlk_async *ac);
/* A connection (engine.c): opened, dropped (why: given to its calls),
 * flushed and watched; the sweep started when something needs it. */
void ae_conn_start(rlk_async *ac, ae_conn *k);
void ae_conn_drop(rlk_async *ac, ae_conn *k, const char *why);
/* k's set-up is done: it is up, its channels or its waiting calls go out. */
void ae_conn_up(rlk_async *ac, ae_conn *k);
void ae_flush(rlk_async *ac, ae_conn *k);
/* Inside a handler: what k has to write goes out now, so the server starts
 * on it while the handler goes on; a failed write is left to ae_flush at
 * the handler's exit, which drops the connection (engine.c). */
void ae_write_now(ae_conn *k);
void ae_sweep_ensure(rlk_async *ac);
/* A handler's entry and exit (engine.c): on the way out of the outermost,
 * the completed requests are delivered, what the connections have to
 * write is flushed and the timer armed; a client freed meanwhile goes. */
void ae_enter(rlk_async *ac);
void ae_leave(rlk_async *ac);
/* The client's connections (engine.c): opened once attached (a cluster
 * asks for its map; the sentinels' moves watched), their dial threads
 * abandoned and handles detached when it is freed on a loop. */
void ae_conns_attach(rlk_async *ac);
void ae_conns_detach(rlk_async *ac);
/* The client's memory (engine.c), from rlk_async_free or at the exit of
 * the handler it ran in. */
void ae_destroy(rlk_async *ac);


#endif
