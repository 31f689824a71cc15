/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ae_pubsub.c - the async engine's pub/sub, on the loop's thread: the
 * refcounted channels and their listeners (rlk_ae_subscribe), where a
 * channel is subscribed (the one server's pub/sub connection; on a
 * cluster the master of its slot, sharded, or the one node chosen,
 * global), the queue of a cluster connection's commands awaiting their
 * answer, and the replies. What a reply is, which command a mode uses,
 * whether a channel goes per slot and what a refusal names are the
 * subscriber's pure rules (runtime/sub.h, sub_rule.c), shared with the
 * blocking subscriber; what a message means is the listening kind's
 * (rlk_sub_rule, applied by its listener). docs/async-internals.md.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "client/client.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/slot.h"
#include "client/slotmap.h"
#include "engine/sub_rule.h"
#include "engine/engine.h"
#include "engine/ae_state.h"
#include "engine/ae_pubsub.h"
#include "engine/ae_route.h"

/* Every channel ch of ac's table, bucket by bucket; next, the one after it,
 * is read before the body runs, so the body may free ch. */
#define AE_CHANS_EACH(ac, i, ch, next)                                          \
    for (size_t i = 0; i < (ac)->nbuckets; i++)                                 \
        for (ae_chan *ch = (ac)->buckets[i], *next; ch && ((next = ch->bnext), 1); ch = next)

/* The bucket of a table of n (a power of two) that name goes in (client/slot.h's FNV-1a). */
static size_t ae_bucket(const char *name, size_t n)
{
    return rlk_hash(RLK_HASH_INIT, name, strlen(name)) & (n - 1);
}

static ae_chan *ae_chan_find(rlk_async *ac, const char *name)
{
    if (!ac->nbuckets)
        return NULL;
    for (ae_chan *ch = ac->buckets[ae_bucket(name, ac->nbuckets)]; ch; ch = ch->bnext)
        if (strcmp(ch->name, name) == 0)
            return ch;
    return NULL;
}

static int ae_chan_grow(rlk_async *ac)
{
    size_t n = ac->nbuckets ? ac->nbuckets * 2 : 256;
    ae_chan **b = calloc(n, sizeof *b);

    if (!b)
        return -1;
    AE_CHANS_EACH(ac, i, ch, next) {
        size_t j = ae_bucket(ch->name, n);

        ch->bnext = b[j];
        b[j] = ch;
    }
    free(ac->buckets);
    ac->buckets = b;
    ac->nbuckets = n;
    return 0;
}

static ae_chan *ae_chan_get(rlk_async *ac, const char *name)
{
    ae_chan *ch = ae_chan_find(ac, name);
    size_t j;

    if (ch)
        return ch;
    if (ac->nchans >= ac->nbuckets && ae_chan_grow(ac) != 0)
        return NULL;
    if (!(ch = calloc(1, sizeof *ch)) || !(ch->name = strdup(name))) {
        free(ch);
        return NULL;
    }
    j = ae_bucket(name, ac->nbuckets);
    ch->bnext = ac->buckets[j];
    ac->buckets[j] = ch;
    ac->nchans++;
    return ch;
}

/* ch lingers no more. */
static void ae_chan_unlinger(rlk_async *ac, ae_chan *ch)
{
    if (ch->linger_until) {
        ch->linger_until = 0;
        ac->nlinger--;
    }
}

/* Whether ch, nobody listening to it, stays subscribed a while: an rlk_async client's waits
 * on a lock taken again and again then find it subscribed, and queue with their first call
 * (rlk_ae_sub_take_ready). 1 while its linger lasts (started now if it was not lingering). */
static int ae_chan_linger(rlk_async *ac, ae_chan *ch)
{
    long long now = rlk_ae_now_ms();

    if (ch->linger_until)
        return now < ch->linger_until;
    if (ac->linger_ms <= 0 || ac->closing || ac->nlinger >= AE_LINGER_MAX || !ch->live ||
        ch->last_sent != 1 || !ch->conn || ch->conn->state != AE_UP)
        return 0;
    ch->linger_until = now + ac->linger_ms;
    ac->nlinger++;
    return 1;
}

/* Frees ch when nothing needs it any more. */
static void ae_chan_maybe_free(rlk_async *ac, ae_chan *ch)
{
    ae_chan **p;

    if (!ch->outstanding && !ch->live && ch->last_sent != 1)
        ch->conn = NULL;
    if (ch->listeners || ch->outstanding || ch->dispatching || ch->head)
        return;
    ae_chan_unlinger(ac, ch);
    for (p = &ac->buckets[ae_bucket(ch->name, ac->nbuckets)]; *p; p = &(*p)->bnext)
        if (*p == ch) {
            *p = ch->bnext;
            break;
        }
    ac->nchans--;
    free(ch->name);
    free(ch);
}

/* ---- the queue of a pub/sub connection's commands awaiting their answer */

static int ae_sq_push(ae_conn *k, ae_chan *ch, int sub)
{
    struct ae_sq *e = malloc(sizeof *e);

    if (!e)
        return -1;
    *e = (struct ae_sq){.ch = ch, .sub = sub};
    AE_LIST_APPEND(k->sq, k->sq_tail, e, next);
    return 0;
}

static void ae_sq_pop(ae_conn *k)
{
    struct ae_sq *e = k->sq;

    if (!e)
        return;
    if (!(k->sq = e->next))
        k->sq_tail = NULL;
    free(e->name);
    free(e);
}

static void ae_sq_clear(ae_conn *k)
{
    while (k->sq)
        ae_sq_pop(k);
}

/* ch's answers still to come on its connection will be dropped: ch leaves it. */
static void ae_chan_detach(ae_chan *ch)
{
    ae_conn *k = ch->conn;

    for (struct ae_sq *e = k ? k->sq : NULL; e; e = e->next)
        if (e->ch == ch) {
            e->ch = NULL;
            e->name = strdup(ch->name);     /* NULL: matches nothing, still dropped in order */
        }
    ch->outstanding = 0;
    ch->live = 0;
    ch->last_sent = 0;
    ch->conn = NULL;
}

/* Sends ch's SUBSCRIBE (sub 1) or UNSUBSCRIBE, in the form of the mode, on
 * k: the last command sent for ch, its answer outstanding. */
static void ae_sub_send(rlk_async *ac, ae_conn *k, ae_chan *ch, int sub)
{
    const char *argv[2] = {rlk_sub_command(ac->pubsub, sub), ch->name};

    ch->conn = k;
    ch->last_sent = (signed char)sub;
    ch->outstanding++;
    if (sub)
        AE_SUB_COUNT(ac, subscribes);
    else
        AE_SUB_COUNT(ac, unsubscribes);
    if ((ae_routed(ac) && ae_sq_push(k, ch, sub) != 0) ||
        redisAppendCommandArgv(k->ctx, 2, argv, NULL) != REDIS_OK)
        ae_conn_drop(ac, k, "out of memory");
    else if (!ac->depth)
        ae_flush(ac, k);
}

/* The connection ch's subscription goes to: the one server's; on a cluster
 * the master of its slot (sharded) or the one node chosen (global). NULL
 * while the mode or the map is not known. */
static ae_conn *ae_chan_route(rlk_async *ac, ae_chan *ch)
{
    ae_node *n;

    if (!ae_routed(ac))
        return &AE_N0(ac)->sub;
    if (!ac->pubsub || !ac->map.loaded)
        return NULL;
    if (!rlk_sub_per_slot(ac->pubsub, 1))
        return &ac->nodes[ac->gsub % ac->nnodes]->sub;
    n = ae_route_slot_node(ac, rlk_key_slot(ch->name, strlen(ch->name)));
    return n ? &n->sub : NULL;
}

/* Sends SUBSCRIBE for ch when its connection is up (else it goes out when it is). */
static void ae_chan_want(rlk_async *ac, ae_chan *ch)
{
    ae_conn *k;

    if (!rlk_sub_wanted(ch->listeners, ch->last_sent == 1 && ch->conn))
        return;
    if (!(k = ae_chan_route(ac, ch))) {
        ae_route_refresh(ac);
        return;
    }
    if (ch->conn && ch->conn != k)
        ae_chan_detach(ch);     /* an UNSUBSCRIBE's answer elsewhere: dropped */
    if (k->state == AE_UP)
        ae_sub_send(ac, k, ch, 1);
    else if (k->state == AE_DOWN && !k->retry && ac->attached)
        ae_conn_start(ac, k);
}

/* After a change of listeners: UNSUBSCRIBE a channel nobody listens to, once its linger
 * ended. */
static void ae_chan_settle(rlk_async *ac, ae_chan *ch)
{
    if (ch->listeners || ae_chan_linger(ac, ch))
        return;
    ae_chan_unlinger(ac, ch);
    if (ch->last_sent == 1 && ch->conn && ch->conn->state == AE_UP)
        ae_sub_send(ac, ch->conn, ch, 0);
    else if (!ch->conn || ch->conn->state != AE_UP)
        ch->last_sent = 0;
    ae_chan_maybe_free(ac, ch);
}

static void ae_sub_ready_fire(rlk_async *ac, void *arg)
{
    rlk_ae_sub *s = arg;

    s->ready = NULL;
    s->fn(ac, s->ch->name, NULL, 0, s->arg);
}

rlk_ae_sub *rlk_ae_subscribe(rlk_async *ac, const char *channel, rlk_ae_msg_fn fn, void *arg)
{
    ae_chan *ch;
    rlk_ae_sub *s;

    if (ac->closing || !(s = calloc(1, sizeof *s)))
        return NULL;
    if (!(ch = ae_chan_get(ac, channel))) {
        free(s);
        return NULL;
    }
    s->ac = ac;
    s->ch = ch;
    s->fn = fn;
    s->arg = arg;
    s->prev = ch->tail;
    AE_LIST_APPEND(ch->head, ch->tail, s, next);
    ch->listeners++;
    ae_chan_unlinger(ac, ch);
    if (rlk_ae_sub_ready(s))
        s->ready = rlk_ae_timer_add(ac, 0, ae_sub_ready_fire, s);
    else
        ae_chan_want(ac, ch);
    ae_sweep_ensure(ac);
    return s;
}

int rlk_ae_sub_ready(const rlk_ae_sub *s)
{
    return s && s->ch->live && rlk_sub_confirmed(s->ch->last_sent == 1, s->ch->outstanding);
}

int rlk_ae_sub_take_ready(rlk_ae_sub *s)
{
    if (!s || !s->ready || !rlk_ae_sub_ready(s))
        return 0;
    rlk_ae_timer_del(s->ready);
    s->ready = NULL;
    return 1;
}

const char rlk_ae_down[] = "";

void rlk_ae_sub_downs(rlk_ae_sub *s)
{
    s->downs = 1;
}

static void ae_sub_unlink(ae_chan *ch, rlk_ae_sub *s)
{
    AE_DLIST_UNLINK(ch->head, s);
    if (!s->next)
        ch->tail = s->prev;
    free(s);
}

void rlk_ae_unsubscribe(rlk_ae_sub *s)
{
    ae_chan *ch;
    rlk_async *ac;

    if (!s || s->dead)
        return;
    ch = s->ch;
    ac = s->ac;
    rlk_ae_timer_del(s->ready);
    s->ready = NULL;
    s->dead = 1;
    ch->listeners--;
    if (ch->dispatching || ac->closing)
        return;     /* unlinked after the dispatch, or freed with the client */
    ae_sub_unlink(ch, s);
    ae_chan_settle(ac, ch);
}

/* Calls the listeners of ch with a message (msg NULL: subscribed; rlk_ae_down: those that
 * asked). */
static void ae_chan_dispatch(rlk_async *ac, ae_chan *ch, const char *msg, size_t len)
{
    rlk_ae_sub *s, *next;

    ch->dispatching++;
    for (s = ch->head; s && !ac->closing; s = s->next)
        if (!s->dead && (msg != rlk_ae_down || s->downs)) {
            if (!msg && s->ready) {
                rlk_ae_timer_del(s->ready);
                s->ready = NULL;
            }
            s->fn(ac, ch->name, msg, len, s->arg);
        }
    if (ac->closing)
        return;     /* everything goes with the client */
    if (--ch->dispatching == 0) {
        for (s = ch->head; s; s = next) {
            next = s->next;
            if (s->dead)
                ae_sub_unlink(ch, s);
        }
        ae_chan_settle(ac, ch);
    }
}

/* ch cannot be subscribed now: its listeners that asked hear it. */
static void ae_chan_down(rlk_async *ac, ae_chan *ch)
{
    if (ch->listeners)
        ae_chan_dispatch(ac, ch, rlk_ae_down, 0);      /* which settles the channel */
    else
        ae_chan_maybe_free(ac, ch);
}

void ae_chans_down(rlk_async *ac, ae_conn *k)
{
    ae_sq_clear(k);     /* no answer will come: the channels below have none to drop */
    /* Its channels, and those waiting for a connection (k's, on one server). */
    AE_CHANS_EACH(ac, i, ch, next) {
        if (ch->conn == k || !ch->conn) {
            ae_chan_detach(ch);
            ae_chan_down(ac, ch);
        }
    }
    if (ac->closing)
        return;
    /* Subscribed again (elsewhere on a cluster, once the map says where). */
    if (ae_routed(ac))
        ae_chans_up(ac);
}

void ae_chans_linger_end(rlk_async *ac)
{
    long long now = rlk_ae_now_ms();

    AE_CHANS_EACH(ac, i, ch, next) {
        if (ac->closing)
            return;
        if (ch->linger_until && now >= ch->linger_until && !ch->listeners)
            ae_chan_settle(ac, ch);
    }
}

void ae_chans_up(rlk_async *ac)
{
    for (size_t i = 0; i < ac->nbuckets; i++)
        for (ae_chan *ch = ac->buckets[i]; ch; ch = ch->bnext)
            if (ch->listeners)
                ae_chan_want(ac, ch);
}

/* ch leaves its connection and is subscribed where it goes now. taken: the
 * server took it away (its slot moved: a sunsubscribe it pushed, or -MOVED
 * to SSUBSCRIBE), so the map is asked again first. */
static void ae_chan_moved(rlk_async *ac, ae_chan *ch, int taken)
{
    ae_chan_detach(ch);
    if (taken)
        ae_route_refresh(ac);
    if (ch->listeners)
        ae_chan_want(ac, ch);
    else
        ae_chan_maybe_free(ac, ch);
}

/* The map changed: a channel subscribed where it does not go any more
 * leaves that connection (UNSUBSCRIBE there, its answer dropped) and is
 * subscribed on its slot's master; its listeners hear fn(NULL) then. */
void ae_chans_reroute(rlk_async *ac)
{
    if (ac->closing)
        return;
    AE_CHANS_EACH(ac, i, ch, next) {
        ae_conn *k = ae_chan_route(ac, ch), *old = ch->conn;

        if (!k || !old || old == k)
            continue;
        if (ch->last_sent == 1 && old->state == AE_UP)
            ae_sub_send(ac, old, ch, 0);    /* its answer dropped: ch leaves old below */
        if (ac->closing)
            return;
        ae_chan_moved(ac, ch, 0);
    }
    ae_chans_up(ac);
}

/* An error reply on a cluster's pub/sub connection k: the answer to the
 * oldest command, a refusal of SUBSCRIBE / SSUBSCRIBE. MOVED: the map
 * learns the slot's owner and the channel goes there; anything else ("not
 * now"): the connection is opened again after a backoff. */
static void ae_sub_refused(rlk_async *ac, ae_conn *k, const redisReply *r)
{
    char host[RLK_SLOTMAP_HOST_MAX];
    int slot, port;
    ae_chan *ch = k->sq ? k->sq->ch : NULL;

    ae_sq_pop(k);       /* (none: nothing) */
    if (!ch)
        return;
    ch->outstanding--;
    if (rlk_sub_moved(r->str, &slot, host, sizeof host, &port) && host[0]) {
        (void)rlk_slotmap_move(&ac->map, slot, rlk_slotmap_node(&ac->map, host, port));
        ae_chan_moved(ac, ch, 1);
        ae_chans_reroute(ac);
        return;
    }
    ae_conn_drop(ac, k, r->str);
}

/* The channel an answer on k is for: on a cluster the oldest command's,
 * when it is that channel's SUBSCRIBE (sub 1) or UNSUBSCRIBE (its entry is
 * taken; NULL: an answer dropped, the channel left k); on one server the
 * channel of that name when k carries it. *own: an answer to a command of
 * k's queue (0 on a cluster: not one, pushed by the server). */
static ae_chan *ae_sub_answered(rlk_async *ac, ae_conn *k, const rlk_sub_frame *f, int sub,
                                int *own)
{
    struct ae_sq *head = k->sq;
    const char *name = head ? (head->ch ? head->ch->name : head->name) : NULL;
    ae_chan *ch;

    *own = 1;
    if (!ae_routed(ac)) {
        ch = ae_chan_find(ac, f->chan);
        return ch && ch->conn == k ? ch : NULL;
    }
    if (!name || head->sub != sub || strcmp(name, f->chan) != 0) {
        *own = 0;
        return NULL;
    }
    ch = head->ch;
    ae_sq_pop(k);
    return ch;
}

/* By the reply's kind (rlk_sub_classify). The set-up's replies come first,
 * AUTH then SELECT (as many as sent), in order: the last one brings k up
 * and its channels with it. A SUBSCRIBE's answer makes the channel live;
 * its listeners hear fn(NULL) when it is the last command sent for it and
 * none is outstanding. */
int ae_sub_reply(rlk_async *ac, ae_conn *k, redisReply *r)
{
    rlk_sub_frame f;
    ae_chan *ch;
    int own, kind, sub, i = k->setup_n - k->setup_left;

    if (k->setup_left > 0) {
        /* The name's reply is the last: an ACL's refusal of it is not fatal. */
        if (ac->sub_name && k->setup_left == 1
                ? r->type == REDIS_REPLY_ERROR && strncmp(r->str, "NOPERM", 6) != 0
                : rlk_conn_check_setup_reply(ac->c, k->ctx, i, r) != RLK_OK)
            ae_conn_drop(ac, k, r->type == REDIS_REPLY_ERROR ? r->str : rlk_errstr(ac->c));
        else if (--k->setup_left == 0)
            ae_conn_up(ac, k);
        return 0;
    }
    switch (kind = rlk_sub_classify(r, &f)) {
    case RLK_SUB_FRAME_ERROR:
        if (ae_routed(ac)) {
            ae_sub_refused(ac, k, r);
            return 0;
        }
        /* One server: the refusal of one of the SUBSCRIBEs still unanswered. */
        AE_CHANS_EACH(ac, j, ch, next) {
            if (ch->conn == k && ch->last_sent == 1 && ch->outstanding)
                ae_chan_down(ac, ch);
        }
        return 0;
    case RLK_SUB_FRAME_MESSAGE:
        AE_SUB_COUNT(ac, sub_messages);
        ch = ae_chan_find(ac, f.chan);
        if (ch && ch->conn == k && ch->live && f.payload)
            ae_chan_dispatch(ac, ch, f.payload, f.len);
        return 1;   /* the dispatch settles the channel */
    case RLK_SUB_FRAME_SUBSCRIBE:
    case RLK_SUB_FRAME_UNSUBSCRIBE:
        sub = kind == RLK_SUB_FRAME_SUBSCRIBE;
        if (!(ch = ae_sub_answered(ac, k, &f, sub, &own))) {
            /* An UNSUBSCRIBE pushed by the server: the channel's slot went to another node. */
            if (!sub && !own && (ch = ae_chan_find(ac, f.chan)) && ch->conn == k)
                ae_chan_moved(ac, ch, 1);
            return 0;
        }
        ch->outstanding--;
        ch->live = (signed char)sub;
        if (sub && rlk_sub_confirmed(ch->last_sent == 1, ch->outstanding))
            ae_chan_dispatch(ac, ch, NULL, 0);      /* which settles the channel */
        else if (!ac->closing)
            ae_chan_settle(ac, ch);
        return 0;
    default:
        return 0;
    }
}

void ae_pubsub_free(rlk_async *ac)
{
    AE_CHANS_EACH(ac, i, ch, next) {
        rlk_ae_sub *s, *sn;

        for (s = ch->head; s; s = sn) {
            sn = s->next;
            free(s);
        }
        free(ch->name);
        free(ch);
    }
    free(ac->buckets);
    ac->buckets = NULL;
    ac->nbuckets = 0;
    for (int i = 0; i < ac->nnodes; i++)
        ae_sq_clear(&ac->nodes[i]->sub);
}
