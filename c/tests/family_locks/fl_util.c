/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_util.c - see fl_util.h.
 */
#include "fl_util.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- lost-lock recorder */

void fl_lost_init(fl_lost *g)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    tk_latch_init(&g->fired);
}

void fl_lost_destroy(fl_lost *g)
{
    tk_latch_destroy(&g->fired);
    pthread_mutex_destroy(&g->mu);
}

static void fl_on_lost_plain(const char *name, const char *owner, int reason, void *ud)
{
    fl_lost *g = ud;

    (void)name;
    (void)owner;
    (void)reason;
    pthread_mutex_lock(&g->mu);
    g->plain_count++;
    pthread_mutex_unlock(&g->mu);
}

static void fl_on_lost_kind(int kind, const char *name, const char *owner, int reason, void *ud)
{
    fl_lost *g = ud;

    pthread_mutex_lock(&g->mu);
    g->count++;
    g->kind = kind;
    g->reason = reason;
    snprintf(g->name, sizeof g->name, "%s", name);
    snprintf(g->owner, sizeof g->owner, "%s", owner);
    pthread_mutex_unlock(&g->mu);
    tk_latch_add(&g->fired, 1);
}

void fl_lost_install(rlk_client *c, fl_lost *g)
{
    rlk_set_lost_callback(c, fl_on_lost_plain, g);
    rlk_set_lost_kind_callback(c, fl_on_lost_kind, g);
}

/* ---------------------------------------------------------------- probes */

int fl_wait_lindex(const rlk_fx_server *s, const char *key, long index, const char *value,
                   long long timeout_ms)
{
    long long until = rlk_fx_now_ms() + timeout_ms;

    do {
        redisReply *r = rlk_fx_command(s, "LINDEX %s %ld", key, index);
        int same = r && r->type == REDIS_REPLY_STRING && strcmp(r->str, value) == 0;

        if (r)
            freeReplyObject(r);
        if (same)
            return 0;
        rlk_fx_sleep_ms(2);
    } while (rlk_fx_now_ms() < until);
    return -1;
}
