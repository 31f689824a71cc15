/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sub.c - the client's subscriber: one thread and its dedicated connections (CLIENT SETNAME
 * rlk-sub), started on the first wait. docs/runtime.md "The wait algorithm" says why no
 * wake-up is lost.
 *
 * Waiters never touch a connection: they change the channel table under s->mu (join: refs + 1,
 * leave: refs - 1) and kick the thread through a self-pipe. The thread brings the servers'
 * subscriptions in line with the table, reads what they push and wakes waiters: the reply to a
 * channel's SUBSCRIBE confirms it; a message on a confirmed channel means what its rule says
 * (sub.h; plain: "0" wakes one, anything else all): "0" adds a wake permit, a grant wakes only
 * the ticket waiter named head (next after its claim window) and makes the "0" after it add
 * none, a wake-all bumps the channel's generation; a lost connection bumps the generation of
 * every channel it carried, and the thread reconnects and resubscribes what still has waiters.
 * Permits are counted, not signalled: one that arrives before its waiter sleeps is kept. Waiters
 * for "confirmed" and for permits share the channel's condition variable (a permit is taken by
 * exactly one of them).
 *
 * Two modes (rlk_client_pubsub, read again every round): global, SUBSCRIBE on one connection
 * (on a cluster to any node: PUBLISH reaches every node); sharded, SSUBSCRIBE on one connection
 * per master, each channel on the master of its slot. A -MOVED reply to SSUBSCRIBE sends the
 * channel to the node named; a sunsubscribe the server pushes (its slot migrated) starts the
 * channel over: its waiters retry once it is subscribed on the new owner.
 *
 * A channel is confirmed when the last command sent for it was SUBSCRIBE and no reply is
 * outstanding (the server answers a channel's commands in order); a message before then
 * belongs to an older subscription and is dropped (the attempt made once confirmed sees every
 * earlier release). A channel whose last waiter left stays subscribed RLK_SUB_LINGER_MS. The
 * pure rules are sub_rule.c's (sub_rule.h), which runtime/ae_pubsub.c follows too.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/slot.h"
#include "client/slotmap.h"
#include "client/topo.h"
#include "client/transport.h"
#include "runtime/sub.h"
#include "runtime/thread.h"

#define RLK_SUB_NAME "rlk-sub"
#define RLK_SUB_PING_NS (1000LL * 1000000LL)    /* PING after 1 s of silence */
#define RLK_SUB_BACKOFF_MAX_MS 1000
#define RLK_SUB_MAX_CONNS 32                    /* sharded on a cluster: one per master */
#define RLK_SUB_ADDR 300

struct rlk_sub_chan {
    rlk_sub_chan *next;
    char *name;
    size_t len;
    int slot;                   /* its hash slot (sharded on a cluster) */
    int refs;                   /* waiters between join and leave */
    int want;                   /* the last command sent was SUBSCRIBE */
    int outstanding;            /* SUBSCRIBE / UNSUBSCRIBE replies still to come; subscribed
                                   on the live connection: rlk_sub_confirmed(want, outstanding) */
    int conn;                   /* the connection its commands went to; -1: none */
    unsigned long long permits; /* messages "0" not yet taken */
    unsigned long long gen;     /* bumped by a wake-all */
    int covered;                /* a grant came: the "0" that follows it adds no permit */
    long long linger_until;     /* refs == 0: stay subscribed until then */
    long long msg_ns;           /* when the last message was read (the handoff timeline) */
    rlk_sub_ticket *tickets;    /* ticket waiters on this channel */
    const rlk_sub_rule *rule;   /* what its messages mean (never NULL) */
    pthread_cond_t cv;
};

/* One connection of the subscriber thread (used by the thread only; its fd
 * is mirrored in s->live_fd under s->mu for rlk_sub_free). */
typedef struct rlk_sub_conn {
    redisContext *ctx;          /* NULL: unused */
    char addr[RLK_SUB_ADDR];    /* the node, for routing ("" when not routed) */
    int active;                 /* channels subscribed or being subscribed (counted by each sync) */
    long long last_rx_ns;
    long long ping_sent_ns;     /* 0: no PING outstanding */
} rlk_sub_conn;

struct rlk_sub {
    rlk_client *c;
    rlk_rt_counters *counters;
    const atomic_int *interrupted;  /* the runtime's rlk_interrupt_waits flag */
    pthread_mutex_t mu;         /* guards the channel table and the flags */
    rlk_sub_chan *chans;
    int started;
    int stop;
    int down;                   /* the last connect attempt failed */
    int kick_pending;
    int kick[2];
    int live_fd[RLK_SUB_MAX_CONNS]; /* each open connection's socket, else -1 (rlk_sub_shutdown) */
    pthread_t thread;
    pthread_mutex_t hook_mu;    /* held while the hook runs; guards hook, hook_arg */
    rlk_sub_hook_fn hook;
    void *hook_arg;

    /* Used by the subscriber thread only. */
    int mode;                   /* RLK_PUBSUB_GLOBAL / _SHARDED; 0 before the first connect */
    int routed;                 /* sharded on a cluster: a connection per master */
    rlk_sub_conn conns[RLK_SUB_MAX_CONNS];
    int failures;               /* consecutive failed connects */
    long long retry_ns;         /* no connect attempt before (0: now) */
    int refresh;                /* a slot moved: refresh the map before routing */
    long long next_linger_ns;   /* the earliest lingering channel's end, 0: none */
};

/* ---------------------------------------------------------------- channel table (s->mu held) */

static rlk_sub_chan *rlk_sub_find(rlk_sub *s, const char *name, size_t len)
{
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next)
        if (ch->len == len && memcmp(ch->name, name, len) == 0)
            return ch;
    return NULL;
}

/* A new channel, first in s's table. */
static rlk_sub_chan *rlk_sub_chan_new(rlk_sub *s, const char *name)
{
    rlk_sub_chan *ch = calloc(1, sizeof *ch);

    if (!ch)
        return NULL;
    ch->len = strlen(name);
    ch->name = strdup(name);
    ch->slot = rlk_key_slot(name, ch->len);
    ch->conn = -1;
    ch->rule = &rlk_sub_rule_plain;
    if (!ch->name || rlk_clock_cond_init(&ch->cv) != 0) {
        free(ch->name);
        free(ch);
        return NULL;
    }
    ch->next = s->chans;
    s->chans = ch;
    return ch;
}

static void rlk_sub_wake_all(rlk_sub *s, int bump)
{
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
        if (bump)
            ch->gen++;
        pthread_cond_broadcast(&ch->cv);
    }
}

/* The channel starts over (no subscription anywhere); its waiters wake to
 * wait for the new one and retry. */
static void rlk_sub_chan_reset(rlk_sub_chan *ch)
{
    ch->want = ch->outstanding = ch->covered = 0;
    ch->permits = 0;
    ch->conn = -1;
    ch->gen++;
    pthread_cond_broadcast(&ch->cv);
}

/* Frees the channels nobody waits on and the server no longer has (all: every one). */
static void rlk_sub_prune(rlk_sub *s, int all)
{
    rlk_sub_chan **pp = &s->chans;

    while (*pp) {
        rlk_sub_chan *ch = *pp;

        if (all || (ch->refs == 0 && !ch->want && ch->outstanding == 0)) {
            *pp = ch->next;
            pthread_cond_destroy(&ch->cv);
            free(ch->name);
            free(ch);
        } else {
            pp = &ch->next;
        }
    }
}

/* Shuts every open connection down (s->mu held): a round trip blocked on a server that stopped
 * answering ends at once; the thread drops each, wakes its waiters and reconnects. */
static void rlk_sub_shutdown(rlk_sub *s)
{
    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        if (s->live_fd[i] >= 0)
            shutdown(s->live_fd[i], SHUT_RDWR);
}

static void rlk_sub_kick(rlk_sub *s)
{
    char b = 1;

    if (!s->started || s->kick_pending)
        return;     /* not started: the thread reads the whole state when it starts */
    s->kick_pending = 1;
    if (write(s->kick[1], &b, 1) < 0) {
        /* Pipe full: the thread has a kick to read already. */
    }
}

/* ---------------------------------------------------------------- the thread: connections */

/* Opens connection i: to the master of slot when routed, else to the
 * client's server (on a cluster: some node). */
static int rlk_sub_open(rlk_sub *s, int i, int slot)
{
    rlk_sub_conn *k = &s->conns[i];
    int rc;

    k->addr[0] = '\0';
    rc = s->routed ? rlk_topo_open(s->c, slot, &k->ctx, k->addr)
                   : rlk_conn_open(s->c, &k->ctx);
    pthread_mutex_lock(&s->mu);
    rc = rc == RLK_OK && s->stop ? RLK_ERR_IO : rc;
    s->live_fd[i] = rc == RLK_OK ? k->ctx->fd : -1;
    pthread_mutex_unlock(&s->mu);
    if (rc == RLK_OK)   /* an ACL refusal of CLIENT SETNAME is not fatal */
        rc = rlk_conn_setname(s->c, k->ctx, RLK_SUB_NAME);
    pthread_mutex_lock(&s->mu);
    s->down = rc != RLK_OK;
    if (s->down) {
        s->live_fd[i] = -1;
        rlk_sub_wake_all(s, 0);     /* waiters for "confirmed" fall back to polling */
    }
    pthread_mutex_unlock(&s->mu);
    if (rc != RLK_OK) {
        rlk_transport_free(k->ctx);
        k->ctx = NULL;
        /* The next attempt after a backoff (10 ms doubling, 640 ms after the 7th failure, then
         * RLK_SUB_BACKOFF_MAX_MS). */
        s->retry_ns = rlk_clock_now_ns() +
                      RLK_NS_PER_MS * (++s->failures > 7 ? RLK_SUB_BACKOFF_MAX_MS
                                                         : 10LL << (s->failures - 1));
    } else {
        RLK_COUNT(s->counters, sub_connects);
        s->failures = 0;
        s->retry_ns = k->ping_sent_ns = 0;
        k->last_rx_ns = rlk_clock_now_ns();
    }
    return rc;
}

/* Closes connection i after an error: its channels start over, their
 * waiters wake. */
static void rlk_sub_close(rlk_sub *s, int i)
{
    rlk_sub_conn *k = &s->conns[i];

    pthread_mutex_lock(&s->mu);
    s->live_fd[i] = -1;
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next)
        if (ch->conn == i || (!s->routed && ch->conn >= 0))
            rlk_sub_chan_reset(ch);
    rlk_sub_prune(s, 0);
    pthread_mutex_unlock(&s->mu);
    if (k->ctx) {
        rlk_transport_free(k->ctx);
        k->ctx = NULL;
        RLK_COUNT(s->counters, sub_drops);
    }
    s->refresh = s->routed;     /* a node died: the map has probably changed */
}

/* The connection for slot (routed), or the one connection: its index,
 * opened when needed; -1 when it cannot be opened now. */
static int rlk_sub_conn_for(rlk_sub *s, int slot)
{
    char owner[RLK_SUB_ADDR];
    int free_i = -1;

    if (!s->routed && s->conns[0].ctx)
        return 0;   /* not routed: connection 0 is the one (the others stay unused) */
    if (s->routed && rlk_topo_owner(s->c, slot, owner, sizeof owner) == 0)
        for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
            if (s->conns[i].ctx && strcmp(s->conns[i].addr, owner) == 0)
                return i;
    for (int i = 0; i < RLK_SUB_MAX_CONNS && free_i < 0; i++)
        if (!s->conns[i].ctx)
            free_i = i;
    if (free_i < 0 || rlk_clock_now_ns() < s->retry_ns || rlk_sub_open(s, free_i, slot) != RLK_OK)
        return -1;
    /* The map may have changed while connecting: one connection per node. */
    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        if (i != free_i && s->conns[i].ctx && strcmp(s->conns[i].addr, s->conns[free_i].addr) == 0) {
            rlk_sub_close(s, free_i);
            return i;
        }
    return free_i;
}

static int rlk_sub_flush(rlk_sub *s, int i)
{
    if (rlk_transport_flush(s->conns[i].ctx) != REDIS_OK)
        return rlk_set_ctx_error(s->c, s->conns[i].ctx, "subscriber write");
    return RLK_OK;
}

static void rlk_sub_append(rlk_sub *s, int i, const char *cmd, const rlk_sub_chan *ch)
{
    const char *argv[2] = {cmd, ch->name};
    size_t lens[2] = {strlen(cmd), ch->len};

    redisAppendCommandArgv(s->conns[i].ctx, 2, argv, lens);
}

/* The slot of the next channel that has waiters and no subscription; -1: none. */
static int rlk_sub_next_unsubscribed(rlk_sub *s)
{
    int slot = -1;

    pthread_mutex_lock(&s->mu);
    for (rlk_sub_chan *ch = s->chans; ch && slot < 0; ch = ch->next)
        if (rlk_sub_wanted(ch->refs, ch->want) && ch->outstanding == 0)
            slot = ch->slot;
    pthread_mutex_unlock(&s->mu);
    return slot;
}

/* Queues SUBSCRIBE / UNSUBSCRIBE (S- when sharded) so the servers match the
 * table, then writes what each connection has buffered. Channels whose connection cannot be
 * opened now wait for the next round (the subscriber is "down" for them meanwhile). */
static int rlk_sub_sync(rlk_sub *s)
{
    int slot, rounds = 0, rc = RLK_OK;
    long long now = rlk_clock_now_ns();

    if (s->refresh) {
        s->refresh = 0;
        rlk_topo_redirected(s->c, NULL);
    }
    /* One channel (and every other one of the same connection) per round. */
    while (rounds++ < 1024 && (slot = rlk_sub_next_unsubscribed(s)) >= 0) {
        int i = rlk_sub_conn_for(s, slot), queued = 0;

        if (i < 0)
            break;
        pthread_mutex_lock(&s->mu);
        for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
            char owner[RLK_SUB_ADDR];

            if (!rlk_sub_wanted(ch->refs, ch->want) || ch->outstanding != 0)
                continue;
            if (s->routed && ch->slot != slot &&
                (rlk_topo_owner(s->c, ch->slot, owner, sizeof owner) != 0 ||
                 strcmp(owner, s->conns[i].addr) != 0))
                continue;
            rlk_sub_append(s, i, rlk_sub_command(s->mode, 1), ch);
            ch->want = 1;
            ch->conn = i;
            ch->outstanding++;
            queued++;
            RLK_COUNT(s->counters, subscribes);
        }
        pthread_mutex_unlock(&s->mu);
        if (!queued)
            break;
    }
    pthread_mutex_lock(&s->mu);
    s->next_linger_ns = 0;
    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        s->conns[i].active = 0;
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
        if (ch->refs == 0 && ch->want && ch->linger_until > now) {
            if (!s->next_linger_ns || ch->linger_until < s->next_linger_ns)
                s->next_linger_ns = ch->linger_until;
        } else if (ch->refs == 0 && ch->want && ch->conn >= 0 && s->conns[ch->conn].ctx) {
            rlk_sub_append(s, ch->conn, rlk_sub_command(s->mode, 0), ch);
            ch->want = ch->covered = 0;
            ch->permits = 0;
            ch->outstanding++;
            RLK_COUNT(s->counters, unsubscribes);
        }
        if (ch->want && ch->conn >= 0)
            s->conns[ch->conn].active++;
    }
    rlk_sub_prune(s, 0);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        if (s->conns[i].ctx && rlk_sub_flush(s, i) != RLK_OK) {
            rlk_sub_close(s, i);
            rc = RLK_ERR_IO;
        }
    return rc;
}

/* ---------------------------------------------------------------- the thread: replies */

/* A message or smessage, from whichever connection carries the channel:
 * the grant and the "0" after it come from one script, in that order, on
 * that one connection. */
static void rlk_sub_on_message(rlk_sub *s, const rlk_sub_frame *f)
{
    long long head = 0, next = 0;
    rlk_sub_chan *ch;
    int meaning;

    RLK_COUNT(s->counters, sub_messages);
    pthread_mutex_lock(&s->mu);
    ch = rlk_sub_find(s, f->chan, f->chan_len);
    if (ch && rlk_sub_confirmed(ch->want, ch->outstanding)) {
        ch->msg_ns = rlk_clock_now_ns();
        meaning = rlk_sub_meaning(ch->rule, f->payload, f->len, &head, &next);
        if (meaning == RLK_SUB_MSG_ONE) {
            if (ch->covered)
                ch->covered = 0;        /* the grant before it woke whom it concerns */
            else
                ch->permits++;
        } else if (meaning == RLK_SUB_MSG_GRANT) {
            /* It names head and next; every other ticket waiter's deferred wake is void (the
             * lock moved on). */
            ch->covered = 1;
            for (rlk_sub_ticket *t = ch->tickets; t; t = t->next) {
                t->defer_ns = 0;
                if (t->ticket == head)
                    t->granted = 1;
                else if (t->ticket == next)
                    t->defer_ns = rlk_clock_now_ns() + t->claim_ns;
            }
        } else {
            ch->covered = 0;
            ch->gen++;
        }
        pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->hook_mu);
    if (s->hook)
        s->hook(s->hook_arg, f->chan, f->chan_len);
    pthread_mutex_unlock(&s->hook_mu);
}

void rlk_sub_set_hook(rlk_sub *s, rlk_sub_hook_fn fn, void *arg)
{
    pthread_mutex_lock(&s->hook_mu);
    s->hook = fn;
    s->hook_arg = arg;
    pthread_mutex_unlock(&s->hook_mu);
}

/* A (s)subscribe / (s)unsubscribe on connection i. An sunsubscribe nobody
 * asked for (no reply outstanding, the channel still wanted) is the server
 * dropping the subscription because the slot migrated away. */
static void rlk_sub_on_ack(rlk_sub *s, int i, const rlk_sub_frame *f)
{
    rlk_sub_chan *ch;

    pthread_mutex_lock(&s->mu);
    ch = rlk_sub_find(s, f->chan, f->chan_len);
    if (ch && ch->outstanding == 0 && ch->want && ch->conn == i &&
        f->kind == RLK_SUB_FRAME_UNSUBSCRIBE && f->sharded) {
        rlk_sub_chan_reset(ch);     /* resubscribed on the new owner by the next sync */
        s->refresh = s->routed;
    } else if (ch && ch->outstanding > 0) {
        ch->outstanding--;
        if (rlk_sub_confirmed(ch->want, ch->outstanding))
            pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

/* An error reply on connection i. -MOVED to SSUBSCRIBE: that channel goes
 * to the node named (the map learns it). Anything else (an ACL refusing
 * SUBSCRIBE): its waiters cannot be told of releases, so they fall back to
 * polling (RLK_SUB_DOWN). */
static void rlk_sub_on_error(rlk_sub *s, int i, const redisReply *r)
{
    char host[RLK_SLOTMAP_HOST_MAX];
    int slot = -1, port, moved = s->routed && rlk_sub_moved(r->str, &slot, host, sizeof host,
                                                            &port);
    rlk_sub_chan *hit = NULL;

    pthread_mutex_lock(&s->mu);
    for (rlk_sub_chan *ch = s->chans; moved && ch && !hit; ch = ch->next)
        if (ch->conn == i && ch->slot == slot && ch->want && ch->outstanding > 0)
            hit = ch;
    if (hit) {
        hit->outstanding--;
        hit->want = 0;
        hit->conn = -1;
    } else {
        s->down = 1;
        rlk_sub_wake_all(s, 0);
    }
    pthread_mutex_unlock(&s->mu);
    if (hit)
        rlk_topo_redirected(s->c, r->str);
}

/* Reads what connection i brought, each reply by its kind (rlk_sub_classify). */
static int rlk_sub_read(rlk_sub *s, int i)
{
    redisContext *ctx = s->conns[i].ctx;
    redisReply *r = NULL;
    unsigned long long msgs = atomic_load(&s->counters->sub_messages);
    rlk_sub_frame f;

    if (rlk_transport_read(ctx) != REDIS_OK)
        return rlk_set_ctx_error(s->c, ctx, "subscriber read");
    s->conns[i].last_rx_ns = rlk_clock_now_ns();
    while (redisGetReplyFromReader(ctx, (void **)&r) == REDIS_OK && r) {
        switch (rlk_sub_classify(r, &f)) {
        case RLK_SUB_FRAME_ERROR:
            rlk_sub_on_error(s, i, r);
            break;
        case RLK_SUB_FRAME_PONG:
            s->conns[i].ping_sent_ns = 0;
            break;
        case RLK_SUB_FRAME_MESSAGE:
            rlk_sub_on_message(s, &f);
            break;
        case RLK_SUB_FRAME_SUBSCRIBE:
        case RLK_SUB_FRAME_UNSUBSCRIBE:
            rlk_sub_on_ack(s, i, &f);
            break;
        }
        freeReplyObject(r);
    }
    if (ctx->err)
        return rlk_set_ctx_error(s->c, ctx, "subscriber read");
    if (atomic_load(&s->counters->sub_messages) != msgs)
        RLK_COUNT(s->counters, sub_wakeups);    /* woken by messages (this thread alone counts) */
    return RLK_OK;
}

/* Keepalive while something is subscribed: PING after a silence; a PING
 * unanswered for the command timeout means the connection is dead. */
static int rlk_sub_keepalive(rlk_sub *s, int i, long long now)
{
    rlk_sub_conn *k = &s->conns[i];

    if (k->ping_sent_ns && now - k->ping_sent_ns > s->c->command_timeout_ms * 1000000LL)
        return rlk_set_error(s->c, RLK_ERR_TIMEOUT, "subscriber %s: PING unanswered",
                             k->addr[0] ? k->addr : s->c->addr);
    if (k->active && !k->ping_sent_ns && now - k->last_rx_ns >= RLK_SUB_PING_NS) {
        redisAppendCommand(k->ctx, "PING");
        k->ping_sent_ns = now;
        return rlk_sub_flush(s, i);
    }
    return RLK_OK;
}

/* Until the first of: a PING's answer due, a PING to send, a connect to try again, a lingering
 * channel to UNSUBSCRIBE. */
static int rlk_sub_poll_timeout_ms(rlk_sub *s, long long now)
{
    long long until = s->next_linger_ns ? s->next_linger_ns : -1;

    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++) {
        const rlk_sub_conn *k = &s->conns[i];

        if (k->ctx && k->ping_sent_ns)
            until = rlk_clock_until_min(until, k->ping_sent_ns + s->c->command_timeout_ms *
                                                                     RLK_NS_PER_MS);
        else if (k->ctx && k->active)
            until = rlk_clock_until_min(until, k->last_rx_ns + RLK_SUB_PING_NS);
    }
    if (rlk_sub_next_unsubscribed(s) >= 0)  /* a channel waits for a connection */
        until = rlk_clock_until_min(until, s->retry_ns > now ? s->retry_ns
                                                              : now + 10 * RLK_NS_PER_MS);
    if (until < 0)
        return -1;
    return until <= now ? 0 : (int)((until - now) / 1000000LL) + 1;
}

static void rlk_sub_poll_once(rlk_sub *s)
{
    struct pollfd p[RLK_SUB_MAX_CONNS + 1];
    int idx[RLK_SUB_MAX_CONNS], n = 0, got;
    char buf[64];

    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        if (s->conns[i].ctx) {
            p[n] = (struct pollfd){.fd = s->conns[i].ctx->fd, .events = POLLIN};
            idx[n++] = i;
        }
    p[n] = (struct pollfd){.fd = s->kick[0], .events = POLLIN};
    got = poll(p, (nfds_t)n + 1, rlk_sub_poll_timeout_ms(s, rlk_clock_now_ns()));
    if (got < 0)
        return;     /* EINTR; anything else shows again at the next poll */
    if (p[n].revents) {     /* kicked: drain the pipe (the next round reads the table) */
        while (read(s->kick[0], buf, sizeof buf) > 0) {
        }
        pthread_mutex_lock(&s->mu);
        s->kick_pending = 0;
        pthread_mutex_unlock(&s->mu);
    }
    for (int j = 0; j < n; j++) {
        int i = idx[j];

        if (p[j].revents && rlk_sub_read(s, i) != RLK_OK) {
            rlk_sub_close(s, i);
            continue;
        }
        if (rlk_sub_keepalive(s, i, rlk_clock_now_ns()) != RLK_OK)
            rlk_sub_close(s, i);
    }
}

/* The mode to run in: rlk_client_pubsub's (it may change once, when a
 * cluster's version becomes known); a change starts every channel over. */
static void rlk_sub_pick_mode(rlk_sub *s)
{
    int mode = rlk_client_pubsub(s->c);

    if (mode == s->mode)
        return;
    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        if (s->conns[i].ctx)
            rlk_sub_close(s, i);
    s->mode = mode;
    s->routed = rlk_sub_per_slot(mode, rlk_topo_routed(s->c));
}

static void *rlk_sub_main(void *arg)
{
    rlk_sub *s = arg;

    pthread_mutex_lock(&s->mu);
    while (!s->stop) {
        pthread_mutex_unlock(&s->mu);
        rlk_sub_pick_mode(s);
        (void)rlk_sub_sync(s);
        rlk_sub_poll_once(s);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---------------------------------------------------------------- life cycle */

rlk_sub *rlk_sub_new(rlk_client *c, rlk_rt_counters *counters, const atomic_int *interrupted)
{
    rlk_sub *s = calloc(1, sizeof *s);

    if (!s)
        return NULL;
    s->c = c;
    s->counters = counters;
    s->interrupted = interrupted;
    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        s->live_fd[i] = -1;
    s->kick[0] = s->kick[1] = -1;   /* made with the thread: a client that never waits has none */
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->hook_mu, NULL);
    return s;
}

void rlk_sub_free(rlk_sub *s)
{
    if (!s)
        return;
    pthread_mutex_lock(&s->mu);
    s->stop = 1;
    rlk_sub_kick(s);
    rlk_sub_shutdown(s);
    pthread_mutex_unlock(&s->mu);
    if (s->started)
        pthread_join(s->thread, NULL);
    for (int i = 0; i < RLK_SUB_MAX_CONNS; i++)
        rlk_transport_free(s->conns[i].ctx);
    rlk_sub_prune(s, 1);
    if (s->kick[0] >= 0) {
        close(s->kick[0]);
        close(s->kick[1]);
    }
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->hook_mu);
    free(s);
}

/* s->mu held. */
static int rlk_sub_start(rlk_sub *s)
{
    if (s->started)
        return RLK_OK;
    if (s->kick[0] < 0 && pipe2(s->kick, O_NONBLOCK | O_CLOEXEC) != 0) {
        s->kick[0] = s->kick[1] = -1;
        return rlk_set_error(s->c, RLK_ERR_IO, "lock runtime: no pipe for the subscriber thread: %s",
                             strerror(errno));
    }
    if (rlk_thread_start(&s->thread, rlk_sub_main, s) != 0)
        return rlk_set_error(s->c, RLK_ERR_NOMEM, "lock runtime: cannot start the subscriber thread");
    s->started = 1;
    return RLK_OK;
}

/* ---------------------------------------------------------------- waiters */

int rlk_sub_join(rlk_sub *s, const char *channel, const rlk_sub_rule *rule, rlk_sub_chan **out)
{
    rlk_sub_chan *ch;
    int rc;

    *out = NULL;
    pthread_mutex_lock(&s->mu);
    rc = rlk_sub_start(s);
    ch = rc == RLK_OK ? rlk_sub_find(s, channel, strlen(channel)) : NULL;
    if (rc == RLK_OK && !ch && !(ch = rlk_sub_chan_new(s, channel)))
        rc = rlk_set_error(s->c, RLK_ERR_NOMEM, "subscribe %s: out of memory", channel);
    if (ch) {
        ch->refs++;
        ch->rule = rule ? rule : ch->rule;
        if (!ch->want)
            rlk_sub_kick(s);
        *out = ch;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

/* One waiter fewer; the last one leaves the channel subscribed until linger_ns (0: UNSUBSCRIBE
 * at the thread's next round). */
static void rlk_sub_unref(rlk_sub *s, rlk_sub_chan *ch, long long linger_ns)
{
    pthread_mutex_lock(&s->mu);
    if (--ch->refs == 0) {
        ch->linger_until = linger_ns;
        rlk_sub_kick(s);
    }
    pthread_mutex_unlock(&s->mu);
}

/* Lingers subscribed: the next wait on it (a contended lock is taken again and again) needs no
 * SUBSCRIBE round trip and no second attempt. */
void rlk_sub_leave(rlk_sub *s, rlk_sub_chan *ch)
{
    rlk_sub_unref(s, ch, rlk_clock_now_ns() + RLK_SUB_LINGER_MS * 1000000LL);
}

void rlk_sub_leave_now(rlk_sub *s, rlk_sub_chan *ch)
{
    rlk_sub_unref(s, ch, 0);
}

int rlk_sub_try_join(rlk_sub *s, const char *channel, const rlk_sub_rule *rule,
                     rlk_sub_chan **out, unsigned long long *mark)
{
    rlk_sub_chan *ch;
    int joined = 0;

    *out = NULL;
    pthread_mutex_lock(&s->mu);
    ch = s->started && !s->down ? rlk_sub_find(s, channel, strlen(channel)) : NULL;
    if (ch && rlk_sub_confirmed(ch->want, ch->outstanding)) {
        ch->refs++;
        ch->rule = rule ? rule : ch->rule;
        ch->permits = 0;
        ch->covered = 0;
        *mark = ch->gen;
        *out = ch;
        joined = 1;
    }
    pthread_mutex_unlock(&s->mu);
    return joined;
}

void rlk_sub_ticket_add(rlk_sub *s, rlk_sub_chan *ch, rlk_sub_ticket *t)
{
    pthread_mutex_lock(&s->mu);
    t->granted = 0;
    t->defer_ns = 0;
    t->next = ch->tickets;
    ch->tickets = t;
    pthread_mutex_unlock(&s->mu);
}

void rlk_sub_ticket_remove(rlk_sub *s, rlk_sub_chan *ch, rlk_sub_ticket *t)
{
    rlk_sub_ticket **pp = &ch->tickets;

    pthread_mutex_lock(&s->mu);
    while (*pp && *pp != t)
        pp = &(*pp)->next;
    if (*pp)
        *pp = t->next;
    pthread_mutex_unlock(&s->mu);
}

int rlk_sub_ready(rlk_sub *s, rlk_sub_chan *ch, long long until_ns, unsigned long long *mark)
{
    int rc = RLK_SUB_TIMEOUT, timed_out = 0;

    pthread_mutex_lock(&s->mu);
    while (!atomic_load(s->interrupted) && !timed_out && !s->down &&
           !rlk_sub_confirmed(ch->want, ch->outstanding))
        timed_out = rlk_clock_cond_wait_until(&ch->cv, &s->mu, until_ns);
    /* Interrupted: a timeout (the caller sees the flag, which is never cleared). */
    if (!atomic_load(s->interrupted) && (rlk_sub_confirmed(ch->want, ch->outstanding) || s->down)) {
        rc = rlk_sub_confirmed(ch->want, ch->outstanding) ? RLK_SUB_READY : RLK_SUB_DOWN;
        ch->permits = 0;
        *mark = ch->gen;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int rlk_sub_wait(rlk_sub *s, rlk_sub_chan *ch, unsigned long long mark, long long until_ns,
                 rlk_sub_ticket *t)
{
    int rc, timed_out = 0;

    RLK_COUNT(s->counters, waits);
    pthread_mutex_lock(&s->mu);
    for (;;) {
        /* A grant to this ticket, its deferred wake-up come due, or a permit. */
        int granted = t && t->granted, due = t && t->defer_ns && rlk_clock_now_ns() >= t->defer_ns;

        if (granted || due || ch->permits > 0) {
            if (granted || due)
                t->granted = 0, t->defer_ns = 0;
            else
                ch->permits--;
            if (t && (granted || !due))
                t->rx_ns = ch->msg_ns;
            RLK_COUNT(s->counters, wake_permits);
            rc = RLK_SUB_WOKEN;
            break;
        }
        if (ch->gen != mark) {
            RLK_COUNT(s->counters, wake_all);
            rc = RLK_SUB_WOKEN;
            break;
        }
        if (timed_out && until_ns >= 0 && rlk_clock_now_ns() >= until_ns) {
            rc = RLK_SUB_TIMEOUT;
            break;
        }
        timed_out = rlk_clock_cond_wait_until(
            &ch->cv, &s->mu, rlk_clock_until_min(until_ns, t && t->defer_ns ? t->defer_ns : -1));
    }
    pthread_mutex_unlock(&s->mu);
    if (t && rc == RLK_SUB_WOKEN)
        t->woken_ns = rlk_clock_now_ns();
    return rc;
}

void rlk_sub_interrupt(rlk_sub *s)
{
    pthread_mutex_lock(&s->mu);
    rlk_sub_wake_all(s, 1);
    pthread_mutex_unlock(&s->mu);
}

void rlk_sub_reset(rlk_sub *s)
{
    pthread_mutex_lock(&s->mu);
    rlk_sub_shutdown(s);
    pthread_mutex_unlock(&s->mu);
}

void rlk_sub_poke(rlk_sub *s, rlk_sub_chan *ch)
{
    pthread_mutex_lock(&s->mu);
    if (rlk_sub_confirmed(ch->want, ch->outstanding)) {
        ch->permits++;
        pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&s->mu);
}
