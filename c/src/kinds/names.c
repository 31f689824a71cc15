/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * names.c - every kind's key and channel names (names.h).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/random.h"
#include "kinds/names.h"
#include "runtime/fam.h"

/* The kinds whose scripts rlk embeds (scripts/<kind>/), in a fixed order. */
static const rlk_names_kind rlk_names_kinds[] = {
    {"reentrant", RLK_NAMES_CH_LOCK, 0, RLK_NAMES_WAKE_TICKET},
    {"rwlock", RLK_NAMES_CH_RWLOCK, 0, RLK_NAMES_WAKE_TICKET},
    {"fair", RLK_NAMES_CH_LOCK, 0, RLK_NAMES_WAKE_WAITER},
    {"fenced", RLK_NAMES_CH_LOCK, 0, RLK_NAMES_WAKE_NONE},
    {"nonreentrant", RLK_NAMES_CH_LOCK, 0, RLK_NAMES_WAKE_NONE},
    {"fastmulti", RLK_NAMES_CH_LOCK, 0, RLK_NAMES_WAKE_NONE},
    {"semaphore", RLK_NAMES_CH_SEMAPHORE, 0, RLK_NAMES_WAKE_TICKET},
    {"psemaphore", RLK_NAMES_CH_SEMAPHORE, 0, RLK_NAMES_WAKE_TICKET},
    {"latch", RLK_NAMES_CH_LATCH, 1, RLK_NAMES_WAKE_NONE},
    {"token", NULL, 0, RLK_NAMES_WAKE_NONE},
    {"elect", RLK_NAMES_CH_ELECT, 0, RLK_NAMES_WAKE_NONE},
};

#define RLK_NAMES_NKINDS (sizeof rlk_names_kinds / sizeof rlk_names_kinds[0])

size_t rlk_names_kind_count(void)
{
    return RLK_NAMES_NKINDS;
}

const rlk_names_kind *rlk_names_kind_at(size_t i)
{
    return i < RLK_NAMES_NKINDS ? &rlk_names_kinds[i] : NULL;
}

const rlk_names_kind *rlk_names_kind_find(const char *kind)
{
    for (size_t i = 0; kind && i < RLK_NAMES_NKINDS; i++)
        if (strcmp(rlk_names_kinds[i].kind, kind) == 0)
            return &rlk_names_kinds[i];
    return NULL;
}

char *rlk_names_channel(const rlk_names_kind *k, const char *name)
{
    if (!k || !k->channel_prefix)
        return NULL;
    return k->braced ? rlk_fam_braced_name(k->channel_prefix, name)
                     : rlk_fam_prefix_name(k->channel_prefix, name);
}

char *rlk_names_waiter_channel(const char *name, const char *waiter, size_t len)
{
    char *ch = rlk_fam_prefix_name(RLK_NAMES_CH_LOCK, name), *out;
    size_t n;

    if (!ch)
        return NULL;
    n = strlen(ch) + 1 + len + 1;
    if ((out = malloc(n)) != NULL)
        snprintf(out, n, "%s:%.*s", ch, (int)len, waiter);
    free(ch);
    return out;
}

long long rlk_names_wake_cid(const char *uuid)
{
    return 32768 + (strtol((char[5]){uuid[0], uuid[1], uuid[2], uuid[3], 0}, NULL, 16) & 32767);
}

char *rlk_names_wake_channel(const char *channel, long long cid)
{
    size_t n = strlen(channel) + 32;
    char *out = malloc(n);

    if (out)
        snprintf(out, n, "%s:rlk:%lld", channel, cid);
    return out;
}

long long rlk_names_wake_ticket(long long cid)
{
    return cid * 1024 + (long long)rlk_random_below(1024);
}

long long rlk_names_wake_redraw(long long ticket)
{
    return ticket / 1024 * 1024 + (ticket % 1024 + 1 + (long long)rlk_random_below(1023)) % 1024;
}

static _Atomic unsigned long long rlk_names_waits;   /* the next wait's number; 0: not drawn */

unsigned long long rlk_names_wait_id(void)
{
    unsigned long long id = atomic_load(&rlk_names_waits);

    /* a random start, so that a process forked with a client's holder ids counts apart */
    if (id == 0)
        atomic_compare_exchange_strong(&rlk_names_waits, &id, rlk_random_below(1ULL << 62) + 1);
    return atomic_fetch_add(&rlk_names_waits, 1);
}

const char *rlk_names_held_arg(char *buf, size_t len, unsigned long long wait)
{
    snprintf(buf, len, "held:%llu", wait);
    return buf;
}

long long rlk_names_plain_ticket(void)
{
    return (long long)rlk_random_below(RLK_NAMES_WAKE_TICKET_MIN - 1) + 1;
}

int rlk_names_ticket_wakes(long long ticket)
{
    return ticket >= RLK_NAMES_WAKE_TICKET_MIN;
}

char *rlk_names_rw_timeout(const char *name, const char *owner, int n)
{
    char *tag = rlk_fam_tag(name), *out;
    size_t len;

    if (!tag)
        return NULL;
    len = strlen(tag) + strlen(owner) + sizeof RLK_NAMES_RW_TIMEOUT + 16;
    if ((out = malloc(len)) != NULL)
        snprintf(out, len, "%s:%s:" RLK_NAMES_RW_TIMEOUT ":%d", tag, owner, n);
    free(tag);
    return out;
}

char *rlk_names_key(const rlk_names_kind *k, const char *role, const char *name, int *unknown)
{
    *unknown = 0;
    if (strcmp(role, "channel") == 0 && k && k->channel_prefix)
        return rlk_names_channel(k, name);
    if (strcmp(role, "lock") == 0 || strcmp(role, "locks") == 0 ||
        strcmp(role, "semaphore") == 0 || strcmp(role, "latch") == 0 ||
        strcmp(role, "group") == 0)     /* the faster MultiLock's hash */
        return strdup(name);
    if (strcmp(role, "queue") == 0)
        return rlk_fam_prefix_name(RLK_NAMES_QUEUE, name);
    if (strcmp(role, "timeouts") == 0 && k && strcmp(k->kind, "fair") == 0)
        return rlk_fam_prefix_name(RLK_NAMES_TIMEOUTS, name);
    if (strcmp(role, "timeouts") == 0 && k && strcmp(k->kind, "psemaphore") == 0)
        return rlk_fam_suffix_name(name, RLK_NAMES_PERMITS);
    if (strcmp(role, "token") == 0)
        return rlk_fam_prefix_name(RLK_NAMES_TOKEN, name);
    if (strcmp(role, "prefix") == 0)
        return rlk_fam_tag(name);
    if (strcmp(role, "waiters") == 0)
        return rlk_fam_suffix_name(name, RLK_NAMES_WAITERS);
    if (strcmp(role, "grant") == 0)
        return rlk_fam_suffix_name(name, RLK_NAMES_GRANT);
    if (strcmp(role, "delay") == 0)     /* the reentrant lock's lock-delay */
        return rlk_fam_suffix_name(name, RLK_NAMES_DELAY);
    if (strcmp(role, "who") == 0)       /* the reentrant lock's waiters' records */
        return rlk_fam_suffix_name(name, RLK_NAMES_WHO);
    if (strcmp(role, "state") == 0)     /* the election's record */
        return rlk_fam_suffix_name(name, RLK_NAMES_ELECT_STATE);
    if (strcmp(role, "lock_channel") == 0)  /* the election's lock's channel */
        return rlk_fam_prefix_name(RLK_NAMES_CH_LOCK, name);
    *unknown = 1;
    return NULL;
}

/* Every channel starts with one of these (the kinds' channel prefixes with
 * their separator), each once. */
static const char *const rlk_names_heads[] = {
    RLK_NAMES_CH_LOCK ":", RLK_NAMES_CH_RWLOCK ":", RLK_NAMES_CH_SEMAPHORE ":", RLK_NAMES_CH_LATCH,
};

#define RLK_NAMES_NHEADS (sizeof rlk_names_heads / sizeof rlk_names_heads[0])

const char *rlk_names_channel_head(size_t i)
{
    return i < RLK_NAMES_NHEADS ? rlk_names_heads[i] : NULL;
}

size_t rlk_names_channel_prefix(const char *ch, size_t len)
{
    for (size_t i = 0; i < RLK_NAMES_NHEADS; i++) {
        size_t p = strlen(rlk_names_heads[i]);

        if (len > p && memcmp(ch, rlk_names_heads[i], p) == 0)
            return p;
    }
    return 0;
}
