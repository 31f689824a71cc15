/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sub_rule.c - the subscriber's pure rules (sub.h says which): no I/O, no
 * thread, no lock. Both subscribers follow them, the blocking one's thread
 * (sub.c) and the async engine's pub/sub connection (engine/ae_pubsub.c).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "rlk.h"
#include "client/slotmap.h"
#include "engine/sub_rule.h"

static int rlk_sub_word_is(const redisReply *r, const char *word)
{
    size_t n = strlen(word);

    return r->type == REDIS_REPLY_STRING && r->len == n && strncasecmp(r->str, word, n) == 0;
}

int rlk_sub_classify(const redisReply *r, rlk_sub_frame *f)
{
    const redisReply *k;

    memset(f, 0, sizeof *f);
    if (r->type == REDIS_REPLY_ERROR)
        return f->kind = RLK_SUB_FRAME_ERROR;
    if (r->type == REDIS_REPLY_STATUS)              /* +PONG outside subscribed mode */
        return f->kind = RLK_SUB_FRAME_PONG;
    if (r->type != REDIS_REPLY_ARRAY || r->elements < 2 || r->element[0]->type != REDIS_REPLY_STRING)
        return f->kind = RLK_SUB_FRAME_OTHER;
    k = r->element[0];
    if (rlk_sub_word_is(k, "pong"))
        return f->kind = RLK_SUB_FRAME_PONG;
    if (r->elements != 3 || r->element[1]->type != REDIS_REPLY_STRING)
        return f->kind = RLK_SUB_FRAME_OTHER;
    f->chan = r->element[1]->str;
    f->chan_len = r->element[1]->len;
    if (r->element[2]->type == REDIS_REPLY_STRING) {
        f->payload = r->element[2]->str;
        f->len = r->element[2]->len;
    }
    f->sharded = k->len > 0 && (k->str[0] == 's' || k->str[0] == 'S') &&
                 !rlk_sub_word_is(k, "subscribe");
    if (rlk_sub_word_is(k, "message") || rlk_sub_word_is(k, "smessage"))
        f->kind = RLK_SUB_FRAME_MESSAGE;
    else if (rlk_sub_word_is(k, "subscribe") || rlk_sub_word_is(k, "ssubscribe"))
        f->kind = RLK_SUB_FRAME_SUBSCRIBE;
    else if (rlk_sub_word_is(k, "unsubscribe") || rlk_sub_word_is(k, "sunsubscribe"))
        f->kind = RLK_SUB_FRAME_UNSUBSCRIBE;
    else
        f->kind = RLK_SUB_FRAME_OTHER;
    return f->kind;
}

const char *rlk_sub_command(int mode, int sub)
{
    if (mode == RLK_PUBSUB_SHARDED)
        return sub ? "SSUBSCRIBE" : "SUNSUBSCRIBE";
    return sub ? "SUBSCRIBE" : "UNSUBSCRIBE";
}

int rlk_sub_per_slot(int mode, int routed)
{
    return mode == RLK_PUBSUB_SHARDED && routed;
}

int rlk_sub_wanted(int listeners, int sent_subscribe)
{
    return listeners > 0 && !sent_subscribe;
}

int rlk_sub_confirmed(int sent_subscribe, int outstanding)
{
    return sent_subscribe && outstanding == 0;
}

int rlk_sub_moved(const char *err, int *slot, char *host, size_t hostlen, int *port)
{
    return err && rlk_slotmap_redirect(err, slot, host, hostlen, port) == RLK_SLOTMAP_MOVED;
}

/* "0" wakes one, anything else every waiter. */
static int rlk_sub_plain_meaning(const char *payload, size_t len, long long *head, long long *next)
{
    (void)head;
    (void)next;
    return payload && len == 1 && payload[0] == '0' ? RLK_SUB_MSG_ONE : RLK_SUB_MSG_ALL;
}

const rlk_sub_rule rlk_sub_rule_plain = {rlk_sub_plain_meaning};

int rlk_sub_grant_number(const char *payload, size_t len, unsigned long long *x)
{
    *x = 0;
    if (payload && len == 1 && payload[0] == '0')
        return RLK_SUB_MSG_ONE;
    if (!payload || len < 8 || len > 16)
        return RLK_SUB_MSG_ALL;
    for (size_t i = 0; i < len; i++) {
        if (payload[i] < '0' || payload[i] > '9')
            return RLK_SUB_MSG_ALL;
        *x = *x * 10 + (unsigned long long)(payload[i] - '0');
    }
    return RLK_SUB_MSG_GRANT;
}

int rlk_sub_meaning(const rlk_sub_rule *rule, const char *payload, size_t len, long long *head,
                    long long *next)
{
    *head = 0;
    *next = 0;
    return (rule ? rule : &rlk_sub_rule_plain)->meaning(payload, len, head, next);
}

int rlk_sub_held_for(const char *payload, size_t len, long long at, unsigned long long wait,
                     const char *owner)
{
    char w[24];
    size_t n = wait ? (size_t)snprintf(w, sizeof w, ":%llu ", wait) : (size_t)snprintf(w, sizeof w,
                                                                                       " ");

    if (!owner || !*owner || at <= 0 || (size_t)at > len || len - (size_t)at < n ||
        memcmp(payload + at, w, n) != 0)
        return 0;
    at += (long long)n;
    return strlen(owner) == len - (size_t)at && memcmp(payload + at, owner, len - (size_t)at) == 0;
}

int rlk_sub_grants(const rlk_sub_rule *rule, const char *payload, size_t len, long long ticket,
                   unsigned long long wait, const char *owner)
{
    long long head, next;
    int kind = rlk_sub_meaning(rule, payload, len, &head, &next);

    if (head != ticket)
        return 0;
    if (kind == RLK_SUB_MSG_HELD)
        return rlk_sub_held_for(payload, len, next, wait, owner) ? kind : 0;
    return kind == RLK_SUB_MSG_GRANT ? kind : 0;
}
