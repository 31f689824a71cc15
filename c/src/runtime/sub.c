/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sub.c - the client's subscriber: its channel table and waiters, and the engine's pub/sub on the
 * client's background loop (bg.h) under them, started on the first wait; its connections are
 * named rlk-sub. docs/runtime.md "The wait algorithm" says why no wake-up is lost.
 *
 * Waiters never touch the loop's state: they change the channel table under s->mu (join: refs + 1,
 * leave: refs - 1) and post the sync, which brings the engine's listeners in line with the table
 * (one per channel with waiters or lingering: rlk_sub_linger_ms after its last waiter left, at
 * most rlk_sub_linger_max channels at once). Joining a confirmed channel, and leaving one to
 * linger while the loop's linger timer is armed, posts nothing: a hold taken and released again
 * and again costs the loop no turn but its release's message. The
 * engine subscribes where a channel goes (the mode, a cluster's slots and moves, reconnects and
 * the keepalive are its own) and calls the listener: the channel is confirmed (again after a
 * reconnect or a move of its slot: its generation is bumped, its waiters retry), down (its
 * connection failed or dropped, or its SUBSCRIBE was refused: its waiters poll), or a message,
 * which on a confirmed channel means what its rule says (sub.h; plain: "0" wakes one, anything
 * else all): "0" adds a wake permit, a grant wakes only the ticket waiter named head (next after
 * its claim window) and makes the "0" after it add none, a wake-all bumps the generation.
 * Permits are counted, not signalled: one that arrives before its waiter sleeps is kept. Waiters
 * for "confirmed" and for permits share the channel's condition variable (a permit is taken by
 * exactly one of them).
 */
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "engine/engine.h"
#include "engine/bg.h"
#include "runtime/sub.h"

struct rlk_sub_chan {
    rlk_sub_chan *next;
    rlk_sub *s;
    char *name;
    size_t len;
    int refs;                   /* waiters between join and leave */
    int holds;                  /* of them, holds (rlk_sub_join_hold) */
    int confirmed;              /* subscribed (the listener heard so, and no down since) */
    int heard;                  /* confirmed before: the next confirmation bumps gen */
    int down;                   /* the engine cannot subscribe it now: RLK_SUB_DOWN */
    unsigned long long permits; /* messages "0" not yet taken */
    unsigned long long gen;     /* bumped by a wake-all */
    int covered;                /* a grant came: the "0" that follows it adds no permit */
    long long linger_until;     /* lingering: stay subscribed until then */
    int lingering;              /* refs == 0 and subscribed on for a while (s->nlinger counts it) */
    long long msg_ns;           /* when the last message was read (the handoff timeline) */
    rlk_sub_ticket *tickets;    /* ticket waiters on this channel */
    const rlk_sub_rule *rule;   /* what its messages mean (never NULL) */
    pthread_cond_t cv;
    /* The loop's (read and written on its thread only). */
    rlk_ae_sub *ls;             /* its listener; NULL: not subscribed */
    int keep;                   /* the sync's decision */
};

struct rlk_sub {
    rlk_client *c;
    rlk_rt_counters *counters;
    const atomic_int *interrupted;  /* the runtime's rlk_interrupt_waits flag */
    pthread_mutex_t mu;         /* guards the channel table */
    rlk_sub_chan *chans;        /* new ones go first; only the loop removes one */
    rlk_bg *bg;
    rlk_bg_op sync, follow;
    rlk_ae_timer *linger;       /* the loop's: the sync when the first lingering channel ends */
    int armed;                  /* a sync comes by the first lingering channel's end (the timer,
                                   or a sync posted): a channel starting to linger posts none */
    int nlinger;                /* channels lingering (at most rlk_sub_linger_max) */
    pthread_mutex_t hook_mu;    /* held while the hook runs; guards hook, hook_arg */
    rlk_sub_hook_fn hook;
    void *hook_arg;
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
    ch->s = s;
    ch->len = strlen(name);
    ch->name = strdup(name);
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

/* ch lingers no more (s->mu held). */
static void rlk_sub_unlinger(rlk_sub *s, rlk_sub_chan *ch)
{
    if (ch->lingering)
        s->nlinger--;
    ch->lingering = 0;
    ch->linger_until = 0;
}

/* Frees the channels nobody waits on and the engine no longer has (all: every one). */
static void rlk_sub_prune(rlk_sub *s, int all)
{
    rlk_sub_chan **pp = &s->chans;

    while (*pp) {
        rlk_sub_chan *ch = *pp;

        if (all || (ch->refs == 0 && !ch->ls)) {
            rlk_sub_unlinger(s, ch);
            *pp = ch->next;
            pthread_cond_destroy(&ch->cv);
            free(ch->name);
            free(ch);
        } else {
            pp = &ch->next;
        }
    }
}

/* ---------------------------------------------------------------- the loop */

/* A message on a confirmed channel (s->mu held): the grant and the "0" after it come from one
 * script, in that order, on one connection. */
static void rlk_sub_message(rlk_sub_chan *ch, const char *payload, size_t len)
{
    long long head = 0, next = 0;
    int meaning = rlk_sub_meaning(ch->rule, payload, len, &head, &next);

    ch->msg_ns = rlk_clock_now_ns();
    if (meaning == RLK_SUB_MSG_ONE) {
        if (ch->covered)
            ch->covered = 0;        /* the grant before it woke whom it concerns */
        else
            ch->permits++;
    } else if (meaning == RLK_SUB_MSG_GRANT || meaning == RLK_SUB_MSG_HELD) {
        /* It names head and next (a held grant: head, and no "0" follows); every other ticket
         * waiter's deferred wake is void (the lock moved on). */
        if (meaning == RLK_SUB_MSG_GRANT)
            ch->covered = 1;
        for (rlk_sub_ticket *t = ch->tickets; t; t = t->next) {
            t->defer_ns = 0;
            if (t->ticket == head && meaning == RLK_SUB_MSG_HELD &&
                !rlk_sub_held_for(payload, len, next, t->wait, t->owner)) {
                continue;   /* another holder's, or another wait's, ticket of the same number */
            } else if (t->ticket == head) {
                t->granted = 1, t->held = meaning == RLK_SUB_MSG_HELD;
                t->grant_ns = ch->msg_ns;   /* it may sleep on the lock's channel, not this one */
                if (t->sleeps && t->sleeps != ch)   /* no "0" may follow (held) to wake it */
                    pthread_cond_broadcast(&t->sleeps->cv);
            } else if (meaning == RLK_SUB_MSG_GRANT && t->ticket == next)
                t->defer_ns = rlk_clock_now_ns() + t->claim_ns;
        }
    } else {
        ch->covered = 0;
        ch->gen++;
    }
}

/* The channel's listener (rlk_ae_msg_fn): confirmed (msg NULL), down, or a message. The hook
 * hears a confirmation while a hold is joined, and a message unless nobody is joined (a
 * lingering channel: no hold of this client is there to be told). */
static void rlk_sub_heard(rlk_async *ac, const char *channel, const char *msg, size_t len,
                          void *arg)
{
    rlk_sub_chan *ch = arg;
    rlk_sub *s = ch->s;
    int hook = 0;

    (void)channel;
    pthread_mutex_lock(&s->mu);
    if (!msg) {
        if (ch->heard)
            ch->gen++;      /* again: a reconnect or a move, messages may have been missed */
        ch->heard = ch->confirmed = 1;
        ch->down = 0;
        hook = ch->holds > 0;   /* a hold joined: messages before this one reached nobody */
    } else if (msg == rlk_ae_down) {
        if (ch->confirmed)
            ch->gen++;      /* its waiters go back to wait for it, or poll */
        ch->confirmed = ch->covered = 0;
        ch->permits = 0;
        ch->down = 1;
    } else if (ch->confirmed) {
        rlk_sub_message(ch, msg, len);
        hook = ch->refs > 0;
    }
    pthread_cond_broadcast(&ch->cv);
    pthread_mutex_unlock(&s->mu);
    (void)ac;
    if (!hook)
        return;
    pthread_mutex_lock(&s->hook_mu);
    if (s->hook)
        s->hook(s->hook_arg, ch->name, ch->len);
    pthread_mutex_unlock(&s->hook_mu);
}

static void rlk_sub_sync(rlk_async *ac, void *arg);

static void rlk_sub_linger_fire(rlk_async *ac, void *arg)
{
    rlk_sub *s = arg;

    s->linger = NULL;
    rlk_sub_sync(ac, s);
}

/* Brings the engine's listeners in line with the table: one on every channel with waiters or
 * lingering, none on the others (which then go); again when the first lingering one ends. The
 * engine is called without s->mu (its listener takes it). */
static void rlk_sub_sync(rlk_async *ac, void *arg)
{
    rlk_sub *s = arg;
    rlk_sub_chan *head;
    long long now = rlk_clock_now_ns(), next = -1;

    pthread_mutex_lock(&s->mu);
    s->armed = 0;   /* until the timer below: a channel that starts to linger posts a sync */
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
        if (ch->lingering && ch->linger_until <= now)
            rlk_sub_unlinger(s, ch);
        ch->keep = ch->refs > 0 || ch->lingering;
        if (!ch->keep && ch->ls) {  /* unsubscribed below: joined again only once resubscribed */
            ch->confirmed = ch->heard = ch->down = ch->covered = 0;
        }
        if (ch->lingering)
            next = rlk_clock_until_min(next, ch->linger_until);
    }
    head = s->chans;
    pthread_mutex_unlock(&s->mu);
    for (rlk_sub_chan *ch = head; ch; ch = ch->next) {
        if (ch->keep && !ch->ls) {
            if ((ch->ls = rlk_ae_subscribe(ac, ch->name, rlk_sub_heard, ch)))
                rlk_ae_sub_downs(ch->ls);
            else
                rlk_sub_heard(ac, ch->name, rlk_ae_down, 0, ch);    /* out of memory */
        } else if (!ch->keep && ch->ls) {
            rlk_ae_unsubscribe(ch->ls);
            ch->ls = NULL;
        }
    }
    pthread_mutex_lock(&s->mu);
    rlk_sub_prune(s, 0);
    pthread_mutex_unlock(&s->mu);
    rlk_ae_timer_del(s->linger);
    s->linger = next < 0 ? NULL
                         : rlk_ae_timer_add(ac, (next - now) / RLK_NS_PER_MS + 1, rlk_sub_linger_fire, s);
    pthread_mutex_lock(&s->mu);
    s->armed = s->linger != NULL;
    pthread_mutex_unlock(&s->mu);
}

static void rlk_sub_follow(rlk_async *ac, void *arg)
{
    (void)arg;
    rlk_ae_follow(ac);
}

/* ---------------------------------------------------------------- life cycle */

rlk_sub *rlk_sub_new(rlk_client *c, rlk_rt_counters *counters, const atomic_int *interrupted)
{
    rlk_sub *s = calloc(1, sizeof *s);

    if (!s || !(s->bg = rlk_bg_new(c, "rlk-sub", counters))) {
        free(s);
        return NULL;
    }
    s->c = c;
    s->counters = counters;
    s->interrupted = interrupted;
    s->sync = (rlk_bg_op){.fn = rlk_sub_sync, .arg = s};
    s->follow = (rlk_bg_op){.fn = rlk_sub_follow, .arg = s};
    pthread_mutex_init(&s->mu, NULL);
    pthread_mutex_init(&s->hook_mu, NULL);
    return s;
}

void rlk_sub_free(rlk_sub *s)
{
    if (!s)
        return;
    rlk_bg_free(s->bg);     /* the loop ends first, the engine's listeners with it */
    rlk_sub_prune(s, 1);
    pthread_mutex_destroy(&s->mu);
    pthread_mutex_destroy(&s->hook_mu);
    free(s);
}

void rlk_sub_set_hook(rlk_sub *s, rlk_sub_hook_fn fn, void *arg)
{
    pthread_mutex_lock(&s->hook_mu);
    s->hook = fn;
    s->hook_arg = arg;
    pthread_mutex_unlock(&s->hook_mu);
}

/* ---------------------------------------------------------------- waiters */

/* One more on ch (s->mu held): a hold, or a waiter. */
static void rlk_sub_ref(rlk_sub_chan *ch, int hold)
{
    if (ch->refs++ == 0)
        rlk_sub_unlinger(ch->s, ch);
    ch->holds += hold;
}

/* Joins channel, as a hold or not; mark: only when it is confirmed (rlk_sub_try_join). */
static int rlk_sub_join_as(rlk_sub *s, const char *channel, const rlk_sub_rule *rule,
                           rlk_sub_chan **out, int hold, unsigned long long *mark)
{
    rlk_sub_chan *ch;
    int rc;

    *out = NULL;
    pthread_mutex_lock(&s->mu);
    ch = rlk_sub_find(s, channel, strlen(channel));
    rc = ch && ch->confirmed ? RLK_OK
         : mark              ? -1
                             : rlk_bg_post(s->bg, &s->sync);   /* the loop starts */
    if (rc == RLK_OK && !ch && !(ch = rlk_sub_chan_new(s, channel)))
        rc = rlk_set_error(s->c, RLK_ERR_NOMEM, "subscribe %s: out of memory", channel);
    if (rc == RLK_OK) {
        rlk_sub_ref(ch, hold);
        ch->rule = rule ? rule : ch->rule;
        if (mark) {
            ch->permits = ch->covered = 0;
            *mark = ch->gen;
        }
        *out = ch;
    }
    pthread_mutex_unlock(&s->mu);
    return rc;
}

int rlk_sub_join(rlk_sub *s, const char *channel, const rlk_sub_rule *rule, rlk_sub_chan **out)
{
    return rlk_sub_join_as(s, channel, rule, out, 0, NULL);
}

int rlk_sub_join_hold(rlk_sub *s, const char *channel, rlk_sub_chan **out)
{
    int rc = rlk_sub_join_as(s, channel, NULL, out, 1, NULL), confirmed;

    if (rc != RLK_OK)
        return -1;
    pthread_mutex_lock(&s->mu);
    confirmed = (*out)->confirmed;
    pthread_mutex_unlock(&s->mu);
    return confirmed;
}

long long rlk_sub_linger_ms = RLK_SUB_LINGER_MS;
int rlk_sub_linger_max = RLK_SUB_LINGER_MAX;

/* One waiter fewer; the last one leaves the channel lingering, subscribed for rlk_sub_linger_ms
 * (linger 0, or rlk_sub_linger_max lingering already: unsubscribed by the next sync). A sync is
 * posted unless one comes by the end of the linger anyway (s->armed): leaving a lingering
 * channel again wakes nothing. */
static void rlk_sub_unref(rlk_sub *s, rlk_sub_chan *ch, int linger, int hold)
{
    pthread_mutex_lock(&s->mu);
    ch->holds -= hold;
    if (--ch->refs == 0) {
        int post = 1;

        rlk_sub_unlinger(s, ch);
        if (linger && rlk_sub_linger_ms > 0 && s->nlinger < rlk_sub_linger_max) {
            ch->lingering = 1;
            s->nlinger++;
            ch->linger_until = rlk_clock_now_ns() + rlk_sub_linger_ms * RLK_NS_PER_MS;
            post = !s->armed;
        }
        if (post)
            (void)rlk_bg_post(s->bg, &s->sync);     /* (started by the join) */
    }
    pthread_mutex_unlock(&s->mu);
}

/* Lingers subscribed: the next wait on it (a contended lock is taken again and again) needs no
 * SUBSCRIBE round trip and no second attempt. */
void rlk_sub_leave(rlk_sub *s, rlk_sub_chan *ch)
{
    rlk_sub_unref(s, ch, 1, 0);
}

void rlk_sub_leave_now(rlk_sub *s, rlk_sub_chan *ch)
{
    rlk_sub_unref(s, ch, 0, 0);
}

void rlk_sub_leave_hold(rlk_sub *s, rlk_sub_chan *ch, int linger)
{
    rlk_sub_unref(s, ch, linger, 1);
}

int rlk_sub_try_join(rlk_sub *s, const char *channel, const rlk_sub_rule *rule,
                     rlk_sub_chan **out, unsigned long long *mark)
{
    return rlk_sub_join_as(s, channel, rule, out, 0, mark) == RLK_OK;
}

void rlk_sub_ticket_add(rlk_sub *s, rlk_sub_chan *ch, rlk_sub_ticket *t)
{
    pthread_mutex_lock(&s->mu);
    t->granted = t->held = t->took_held = 0;
    t->sleeps = NULL;
    t->defer_ns = 0;
    t->next = ch->tickets;
    ch->tickets = t;
    pthread_mutex_unlock(&s->mu);
}

void rlk_sub_ticket_redraw(rlk_sub *s, rlk_sub_ticket *t, long long ticket,
                           unsigned long long wait)
{
    pthread_mutex_lock(&s->mu);
    t->ticket = ticket;
    t->wait = wait;
    t->granted = t->held = t->took_held = 0;
    t->defer_ns = 0;
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
    while (!atomic_load(s->interrupted) && !timed_out && !ch->down && !ch->confirmed)
        timed_out = rlk_clock_cond_wait_until(&ch->cv, &s->mu, until_ns);
    /* Interrupted: a timeout (the caller sees the flag, which is never cleared). */
    if (!atomic_load(s->interrupted) && (ch->confirmed || ch->down)) {
        rc = ch->confirmed ? RLK_SUB_READY : RLK_SUB_DOWN;
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
            if (granted || due) {
                t->took_held = granted && t->held;
                t->granted = t->held = 0, t->defer_ns = 0;
            }
            else
                ch->permits--;
            if (t && (granted || !due))
                t->rx_ns = granted ? t->grant_ns : ch->msg_ns;
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
        if (t)
            t->sleeps = ch;
        timed_out = rlk_clock_cond_wait_until(
            &ch->cv, &s->mu, rlk_clock_until_min(until_ns, t && t->defer_ns ? t->defer_ns : -1));
    }
    if (t)
        t->sleeps = NULL;
    pthread_mutex_unlock(&s->mu);
    if (t && rc == RLK_SUB_WOKEN)
        t->woken_ns = rlk_clock_now_ns();
    return rc;
}

void rlk_sub_interrupt(rlk_sub *s)
{
    pthread_mutex_lock(&s->mu);
    for (rlk_sub_chan *ch = s->chans; ch; ch = ch->next) {
        ch->gen++;
        pthread_cond_broadcast(&ch->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

void rlk_sub_reset(rlk_sub *s)
{
    pthread_mutex_lock(&s->mu);
    if (s->chans)   /* (the loop runs): its connections to the old master go now */
        (void)rlk_bg_post(s->bg, &s->follow);
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
