/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sub.c - the client's subscriber: one dedicated connection (CLIENT
 * SETNAME rlk-sub) and one thread, started on the first wait.
 *
 * Waiters never touch the connection. They change the channel table under
 * s->mu (join: refs + 1, leave: refs - 1) and kick the thread through a
 * self-pipe; the thread brings the server's subscriptions in line with the
 * table (SUBSCRIBE a channel that has waiters, UNSUBSCRIBE one that has
 * none), reads what the server pushes, and wakes waiters:
 *   - the reply to a channel's SUBSCRIBE marks it confirmed;
 *   - message "0" on a confirmed channel adds one wake permit;
 *   - any other message ("1": wake all) bumps the channel's generation;
 *   - a lost connection bumps every generation, so each waiter retries,
 *     and the thread reconnects and resubscribes what still has waiters.
 * Permits are counted, not signalled: one that arrives before its waiter
 * sleeps is kept. Every wake-up broadcasts the channel's condition variable
 * (waiters for "confirmed" and for permits share it; a permit is taken by
 * exactly one of them).
 *
 * The server answers SUBSCRIBE / UNSUBSCRIBE of one channel in order, so a
 * channel is confirmed when the last command sent for it was SUBSCRIBE and
 * no reply is outstanding; messages that arrive while a reply is still
 * outstanding belong to an older subscription and are dropped (the waiter
 * retries its acquire once confirmed, which sees every earlier release).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "runtime/sub.h"
#include "runtime/thread.h"

#define RLK_SUB_NAME "rlk-sub"
#define RLK_SUB_PING_NS (1000LL * 1000000LL)    /* PING after 1 s of silence */
#define RLK_SUB_BACKOFF_MAX_MS 1000

struct rlk_sub_chan {
    rlk_sub_chan *next;
    char *name;
    size_t len;
    int refs;                   /* waiters between join and leave */
    int want;                   /* the last command sent was SUBSCRIBE */
    int outstanding;            /* SUBSCRIBE / UNSUBSCRIBE replies still to come */
    int confirmed;              /* subscribed on the live connection */
    unsigned long long permits; /* messages "0" not yet taken */
    unsigned long long gen;     /* bumped by a wake-all */
    int covered;                /* a grant came: the "0" that follows it adds no permit */
    long long linger_until;     /* refs == 0: stay subscribed until then */
    rlk_sub_ticket *tickets;    /* ticket waiters on this channel */
    pthread_cond_t cv;
};

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
    int live_fd;                /* the connection's socket once open, else -1: rlk_sub_free
                                   shuts it down so that a round trip blocked on a server that
                                   stopped answering (CLIENT SETNAME) ends at once */
    pthread_t thread;
    pthread_mutex_t hook_mu;    /* held while the hook runs; guards hook, hook_arg */
    rlk_sub_hook_fn hook;
    void *hook_arg;

    /* Used by the subscriber thread only. */
    redisContext *ctx;
    int active;                 /* channels subscribed or being subscribed */
    int failures;               /* consecutive failed connects */
    long long last_rx_ns;
    long long ping_sent_ns;     /* 0: no PING outstanding */
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

static rlk_sub_chan *rlk_sub_chan_new(const char *name)
{
    rlk_sub_chan *ch = calloc(1, sizeof *ch);

    if (!ch)
        return NULL;
    ch->len = strlen(name);
    ch->name = strdup(name);
    if (!ch->name || rlk_clock_cond_init(&ch->cv) != 0) {
        free(ch->name);
        free(ch);
        return NULL;
    }
    return ch;
}

static void rlk_sub_chan_free(rlk_sub_chan *ch)
{
    pthread_cond_destroy(&ch->cv);
    free(ch->name);
    free(ch);
}

static void rlk_sub_wake_all(rlk_sub *s, int bump)
{
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
        if (bump)
            ch->gen++;
        pthread_cond_broadcast(&ch->cv);
    }
}

/* Frees the channels nobody waits on and the server no longer has. */
static void rlk_sub_prune(rlk_sub *s)
{
    rlk_sub_chan **pp = &s->chans;

    while (*pp) {
        rlk_sub_chan *ch = *pp;

        if (ch->refs == 0 && !ch->want && ch->outstanding == 0) {
            *pp = ch->next;
            rlk_sub_chan_free(ch);
        } else {
            pp = &ch->next;
        }
    }
}

static void rlk_sub_kick(rlk_sub *s)
{
    char b = 1;

    if (s->kick_pending)
        return;
    s->kick_pending = 1;
    if (write(s->kick[1], &b, 1) < 0) {
        /* Pipe full: the thread has a kick to read already. */
    }
}

/* ---------------------------------------------------------------- the thread: connection */

static void rlk_sub_drain_kicks(rlk_sub *s)
{
    char buf[64];

    while (read(s->kick[0], buf, sizeof buf) > 0) {
    }
    pthread_mutex_lock(&s->mu);
    s->kick_pending = 0;
    pthread_mutex_unlock(&s->mu);
}

static int rlk_sub_setname(rlk_sub *s)
{
    const char *argv[3] = {"CLIENT", "SETNAME", RLK_SUB_NAME};
    redisReply *r = NULL;
    int rc = rlk_conn_command(s->c, s->ctx, "CLIENT SETNAME", 3, argv, NULL, &r, NULL);

    if (r)
        freeReplyObject(r);     /* an error reply (ACL) is not fatal: the name is cosmetic */
    return rc;
}

static int rlk_sub_connect(rlk_sub *s)
{
    int rc = rlk_conn_open(s->c, &s->ctx);

    if (rc == RLK_OK) {
        pthread_mutex_lock(&s->mu);
        s->live_fd = s->stop ? -1 : s->ctx->fd;
        rc = s->stop ? RLK_ERR_IO : RLK_OK;
        pthread_mutex_unlock(&s->mu);
    }
    if (rc == RLK_OK)
        rc = rlk_sub_setname(s);
    if (rc != RLK_OK && s->ctx) {
        pthread_mutex_lock(&s->mu);
        s->live_fd = -1;
        pthread_mutex_unlock(&s->mu);
        redisFree(s->ctx);
        s->ctx = NULL;
    }
    pthread_mutex_lock(&s->mu);
    s->down = rc != RLK_OK;
    if (s->down)
        rlk_sub_wake_all(s, 0);     /* waiters for "confirmed" fall back to polling */
    pthread_mutex_unlock(&s->mu);
    if (rc != RLK_OK) {
        s->failures++;
        return rc;
    }
    RLK_COUNT(s->counters, sub_connects);
    s->failures = 0;
    s->active = 0;
    s->last_rx_ns = rlk_clock_now_ns();
    s->ping_sent_ns = 0;
    return RLK_OK;
}

/* After a connection error: every channel starts over, every waiter wakes. */
static void rlk_sub_drop(rlk_sub *s)
{
    pthread_mutex_lock(&s->mu);
    s->live_fd = -1;
    pthread_mutex_unlock(&s->mu);
    if (s->ctx) {
        redisFree(s->ctx);
        s->ctx = NULL;
        RLK_COUNT(s->counters, sub_drops);
    }
    pthread_mutex_lock(&s->mu);
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
        ch->want = 0;
        ch->outstanding = 0;
        ch->confirmed = 0;
        ch->permits = 0;
        ch->covered = 0;
    }
    rlk_sub_wake_all(s, 1);
    rlk_sub_prune(s);
    pthread_mutex_unlock(&s->mu);
}

/* Sleeps ms (or until kicked) between connect attempts. */
static void rlk_sub_backoff(rlk_sub *s)
{
    struct pollfd p = {s->kick[0], POLLIN, 0};
    int ms = 10;

    for (int i = 1; i < s->failures && ms < RLK_SUB_BACKOFF_MAX_MS; i++)
        ms *= 2;
    if (ms > RLK_SUB_BACKOFF_MAX_MS)
        ms = RLK_SUB_BACKOFF_MAX_MS;
    if (poll(&p, 1, ms) > 0)
        rlk_sub_drain_kicks(s);
}

static int rlk_sub_flush(rlk_sub *s)
{
    int done = 0;

    while (!done)
        if (redisBufferWrite(s->ctx, &done) != REDIS_OK)
            return rlk_set_ctx_error(s->c, s->ctx, "subscriber write");
    return RLK_OK;
}

static void rlk_sub_append(rlk_sub *s, const char *cmd, const rlk_sub_chan *ch)
{
    const char *argv[2] = {cmd, ch->name};
    size_t lens[2] = {strlen(cmd), ch->len};

    redisAppendCommandArgv(s->ctx, 2, argv, lens);
}

/* Queues SUBSCRIBE / UNSUBSCRIBE so the server matches the table, then writes. */
static int rlk_sub_sync(rlk_sub *s)
{
    long long now = rlk_clock_now_ns();
    int active = 0;

    pthread_mutex_lock(&s->mu);
    s->next_linger_ns = 0;
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
        if (ch->refs == 0 && ch->want && ch->linger_until > now) {
            if (!s->next_linger_ns || ch->linger_until < s->next_linger_ns)
                s->next_linger_ns = ch->linger_until;
        } else if (ch->refs > 0 && !ch->want) {
            rlk_sub_append(s, "SUBSCRIBE", ch);
            ch->want = 1;
            ch->outstanding++;
            RLK_COUNT(s->counters, subscribes);
        } else if (ch->refs == 0 && ch->want) {
            rlk_sub_append(s, "UNSUBSCRIBE", ch);
            ch->want = 0;
            ch->confirmed = 0;
            ch->permits = 0;
            ch->covered = 0;
            ch->outstanding++;
            RLK_COUNT(s->counters, unsubscribes);
        }
        active += ch->want;
    }
    rlk_sub_prune(s);
    pthread_mutex_unlock(&s->mu);
    s->active = active;
    return rlk_sub_flush(s);
}

/* ---------------------------------------------------------------- the thread: replies */

static int rlk_reply_is(const redisReply *r, const char *word)
{
    size_t n = strlen(word);

    return r->type == REDIS_REPLY_STRING && r->len == n && strncasecmp(r->str, word, n) == 0;
}

/* A grant (reentrant/release, reentrant/cancel): a decimal head * 2^26 +
 * next with head >= 1. 1 and *v, or 0 for any other message. */
static int rlk_sub_grant_of(const redisReply *p, unsigned long long *v)
{
    unsigned long long x = 0;

    if (p->type != REDIS_REPLY_STRING || p->len < 8 || p->len > 16)
        return 0;
    for (size_t i = 0; i < p->len; i++) {
        if (p->str[i] < '0' || p->str[i] > '9')
            return 0;
        x = x * 10 + (unsigned long long)(p->str[i] - '0');
    }
    *v = x;
    return x >= RLK_SUB_GRANT_SHIFT;
}

/* s->mu held: a grant names head and next; every other ticket waiter's
 * deferred wake is void (the lock moved on). */
static void rlk_sub_on_grant(rlk_sub_chan *ch, unsigned long long v)
{
    long long head = (long long)(v / RLK_SUB_GRANT_SHIFT);
    long long next = (long long)(v % RLK_SUB_GRANT_SHIFT);

    ch->covered = 1;
    for (rlk_sub_ticket *t = ch->tickets; t; t = t->next) {
        t->defer_ns = 0;
        if (t->ticket == head)
            t->granted = 1;
        else if (t->ticket == next)
            t->defer_ns = rlk_clock_now_ns() + t->claim_ns;
    }
}

static void rlk_sub_on_message(rlk_sub *s, const redisReply *chan, const redisReply *payload)
{
    unsigned long long grant;
    rlk_sub_chan *ch;

    pthread_mutex_lock(&s->mu);
    ch = rlk_sub_find(s, chan->str, chan->len);
    if (ch && ch->confirmed) {
        if (payload->type == REDIS_REPLY_STRING && payload->len == 1 && payload->str[0] == '0') {
            if (ch->covered)
                ch->covered = 0;        /* the grant before it woke whom it concerns */
            else
                ch->permits++;
        } else if (rlk_sub_grant_of(payload, &grant)) {
            rlk_sub_on_grant(ch, grant);
        } else {
            ch->covered = 0;
            ch->gen++;
        }
        pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&s->mu);
    pthread_mutex_lock(&s->hook_mu);
    if (s->hook && chan->type == REDIS_REPLY_STRING)
        s->hook(s->hook_arg, chan->str, chan->len);
    pthread_mutex_unlock(&s->hook_mu);
}

void rlk_sub_set_hook(rlk_sub *s, rlk_sub_hook_fn fn, void *arg)
{
    pthread_mutex_lock(&s->hook_mu);
    s->hook = fn;
    s->hook_arg = arg;
    pthread_mutex_unlock(&s->hook_mu);
}

static void rlk_sub_on_ack(rlk_sub *s, const redisReply *chan)
{
    rlk_sub_chan *ch;

    pthread_mutex_lock(&s->mu);
    ch = rlk_sub_find(s, chan->str, chan->len);
    if (ch && ch->outstanding > 0 && --ch->outstanding == 0 && ch->want) {
        ch->confirmed = 1;
        pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

static int rlk_sub_on_reply(rlk_sub *s, const redisReply *r)
{
    if (r->type == REDIS_REPLY_ERROR) {
        /* SUBSCRIBE refused (an ACL, say): its waiters cannot be told of
         * releases, so they fall back to polling (RLK_SUB_DOWN). */
        pthread_mutex_lock(&s->mu);
        s->down = 1;
        rlk_sub_wake_all(s, 0);
        pthread_mutex_unlock(&s->mu);
        return RLK_OK;
    }
    if (r->type == REDIS_REPLY_STATUS) {            /* +PONG outside subscribed mode */
        s->ping_sent_ns = 0;
        return RLK_OK;
    }
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || r->element[0]->type != REDIS_REPLY_STRING)
        return RLK_OK;
    if (rlk_reply_is(r->element[0], "pong")) {
        s->ping_sent_ns = 0;
    } else if (r->elements == 3 && r->element[1]->type == REDIS_REPLY_STRING) {
        if (rlk_reply_is(r->element[0], "message"))
            rlk_sub_on_message(s, r->element[1], r->element[2]);
        else if (rlk_reply_is(r->element[0], "subscribe") ||
                 rlk_reply_is(r->element[0], "unsubscribe"))
            rlk_sub_on_ack(s, r->element[1]);
    }
    return RLK_OK;
}

static int rlk_sub_read(rlk_sub *s)
{
    void *r = NULL;
    int rc = RLK_OK;

    if (redisBufferRead(s->ctx) != REDIS_OK)
        return rlk_set_ctx_error(s->c, s->ctx, "subscriber read");
    s->last_rx_ns = rlk_clock_now_ns();
    while (rc == RLK_OK) {
        if (redisGetReplyFromReader(s->ctx, &r) != REDIS_OK)
            return rlk_set_ctx_error(s->c, s->ctx, "subscriber read");
        if (!r)
            break;
        rc = rlk_sub_on_reply(s, r);
        freeReplyObject(r);
    }
    return rc;
}

/* Keepalive while something is subscribed: PING after a silence; a PING
 * unanswered for the command timeout means the connection is dead. */
static int rlk_sub_keepalive(rlk_sub *s, long long now)
{
    if (s->ping_sent_ns && now - s->ping_sent_ns > s->c->command_timeout_ms * 1000000LL)
        return rlk_set_error(s->c, RLK_ERR_TIMEOUT, "subscriber %s: PING unanswered", s->c->addr);
    if (s->active && !s->ping_sent_ns && now - s->last_rx_ns >= RLK_SUB_PING_NS) {
        redisAppendCommand(s->ctx, "PING");
        s->ping_sent_ns = now;
        return rlk_sub_flush(s);
    }
    return RLK_OK;
}

static int rlk_sub_poll_timeout_ms(const rlk_sub *s, long long now)
{
    long long until;

    if (s->ping_sent_ns)
        until = s->ping_sent_ns + s->c->command_timeout_ms * 1000000LL;
    else if (s->active)
        until = s->last_rx_ns + RLK_SUB_PING_NS;
    else
        return -1;
    if (s->next_linger_ns && s->next_linger_ns < until)
        until = s->next_linger_ns;      /* then UNSUBSCRIBE what no longer has waiters */
    return until <= now ? 0 : (int)((until - now) / 1000000LL) + 1;
}

static int rlk_sub_poll_once(rlk_sub *s)
{
    struct pollfd p[2] = {{s->ctx->fd, POLLIN, 0}, {s->kick[0], POLLIN, 0}};
    int n = poll(p, 2, rlk_sub_poll_timeout_ms(s, rlk_clock_now_ns()));
    int rc = RLK_OK;

    if (n < 0)
        return errno == EINTR ? RLK_OK : rlk_set_error(s->c, RLK_ERR_IO, "subscriber poll failed");
    if (p[1].revents)
        rlk_sub_drain_kicks(s);
    if (p[0].revents)
        rc = rlk_sub_read(s);
    if (rc == RLK_OK)
        rc = rlk_sub_keepalive(s, rlk_clock_now_ns());
    return rc;
}

static int rlk_sub_stopping(rlk_sub *s)
{
    int stop;

    pthread_mutex_lock(&s->mu);
    stop = s->stop;
    pthread_mutex_unlock(&s->mu);
    return stop;
}

static void *rlk_sub_main(void *arg)
{
    rlk_sub *s = arg;

    while (!rlk_sub_stopping(s)) {
        if (!s->ctx && rlk_sub_connect(s) != RLK_OK) {
            rlk_sub_backoff(s);
            continue;
        }
        if (rlk_sub_sync(s) != RLK_OK || rlk_sub_poll_once(s) != RLK_OK)
            rlk_sub_drop(s);
    }
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
    s->live_fd = -1;
    if (pipe2(s->kick, O_NONBLOCK | O_CLOEXEC) != 0) {
        free(s);
        return NULL;
    }
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
    if (s->started)
        rlk_sub_kick(s);
    if (s->live_fd >= 0)
        shutdown(s->live_fd, SHUT_RDWR);    /* ends a blocked round trip; the thread frees it */
    pthread_mutex_unlock(&s->mu);
    if (s->started)
        pthread_join(s->thread, NULL);
    if (s->ctx)
        redisFree(s->ctx);
    while (s->chans) {
        rlk_sub_chan *ch = s->chans;

        s->chans = ch->next;
        rlk_sub_chan_free(ch);
    }
    close(s->kick[0]);
    close(s->kick[1]);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->hook_mu);
    free(s);
}

/* s->mu held. */
static int rlk_sub_start(rlk_sub *s)
{
    if (s->started)
        return RLK_OK;
    if (rlk_thread_start(&s->thread, rlk_sub_main, s) != 0)
        return rlk_set_error(s->c, RLK_ERR_NOMEM, "lock runtime: cannot start the subscriber thread");
    s->started = 1;
    return RLK_OK;
}

/* ---------------------------------------------------------------- waiters */

int rlk_sub_join(rlk_sub *s, const char *channel, rlk_sub_chan **out)
{
    rlk_sub_chan *ch;
    int rc;

    *out = NULL;
    pthread_mutex_lock(&s->mu);
    rc = rlk_sub_start(s);
    ch = rc == RLK_OK ? rlk_sub_find(s, channel, strlen(channel)) : NULL;
    if (rc == RLK_OK && !ch) {
        ch = rlk_sub_chan_new(channel);
        if (ch) {
            ch->next = s->chans;
            s->chans = ch;
        } else {
            rc = rlk_set_error(s->c, RLK_ERR_NOMEM, "subscribe %s: out of memory", channel);
        }
    }
    if (ch) {
        ch->refs++;
        if (!ch->want)
            rlk_sub_kick(s);
        *out = ch;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void rlk_sub_leave(rlk_sub *s, rlk_sub_chan *ch)
{
    pthread_mutex_lock(&s->mu);
    if (--ch->refs == 0) {
        /* Lingers subscribed: the next wait on it (a contended lock is taken
         * again and again) needs no SUBSCRIBE round trip and no second attempt. */
        ch->linger_until = rlk_clock_now_ns() + RLK_SUB_LINGER_MS * 1000000LL;
        rlk_sub_kick(s);
    }
    pthread_mutex_unlock(&s->mu);
}

int rlk_sub_try_join(rlk_sub *s, const char *channel, rlk_sub_chan **out,
                     unsigned long long *mark)
{
    rlk_sub_chan *ch;
    int joined = 0;

    *out = NULL;
    pthread_mutex_lock(&s->mu);
    ch = s->started && !s->down ? rlk_sub_find(s, channel, strlen(channel)) : NULL;
    if (ch && ch->confirmed && ch->want) {
        ch->refs++;
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
    pthread_mutex_lock(&s->mu);
    for (rlk_sub_ticket **pp = &ch->tickets; *pp; pp = &(*pp)->next) {
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    }
    pthread_mutex_unlock(&s->mu);
}

int rlk_sub_ready(rlk_sub *s, rlk_sub_chan *ch, long long until_ns, unsigned long long *mark)
{
    int rc, timed_out = 0;

    pthread_mutex_lock(&s->mu);
    for (;;) {
        if (atomic_load(s->interrupted)) {
            rc = RLK_SUB_TIMEOUT;   /* the caller sees the flag */
            break;
        }
        if (ch->confirmed || s->down) {
            rc = ch->confirmed ? RLK_SUB_READY : RLK_SUB_DOWN;
            ch->permits = 0;
            *mark = ch->gen;
            break;
        }
        if (timed_out) {
            rc = RLK_SUB_TIMEOUT;
            break;
        }
        timed_out = rlk_clock_cond_wait_until(&ch->cv, &s->mu, until_ns);
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
        long long until = until_ns;

        if (t && t->granted) {
            t->granted = 0;
            t->defer_ns = 0;
            RLK_COUNT(s->counters, wake_permits);
            rc = RLK_SUB_WOKEN;
            break;
        }
        if (t && t->defer_ns && rlk_clock_now_ns() >= t->defer_ns) {
            t->defer_ns = 0;
            RLK_COUNT(s->counters, wake_permits);
            rc = RLK_SUB_WOKEN;
            break;
        }
        if (ch->permits > 0) {
            ch->permits--;
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
        if (t && t->defer_ns && (until < 0 || t->defer_ns < until))
            until = t->defer_ns;
        timed_out = rlk_clock_cond_wait_until(&ch->cv, &s->mu, until);
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void rlk_sub_interrupt(rlk_sub *s)
{
    pthread_mutex_lock(&s->mu);
    rlk_sub_wake_all(s, 1);
    pthread_mutex_unlock(&s->mu);
}

void rlk_sub_poke(rlk_sub *s, rlk_sub_chan *ch)
{
    pthread_mutex_lock(&s->mu);
    if (ch->confirmed) {
        ch->permits++;
        pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&s->mu);
}
