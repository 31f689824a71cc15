/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * functions.c - the Redis 7 Functions library rlk: the call mode (EVALSHA or
 * FCALL / FCALL_RO) and the head of a call in each (the probe that decides
 * the mode is conn.c's; FUNCTION LOAD / LIST are client.c's).
 */
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "client/client_t.h"
#include "client/functions.h"

const rlk_library_info *rlk_embedded_library(void)
{
    return &rlk_embedded_library_info;
}

int rlk_functions_active(rlk_client *c)
{
    int st;

    if (!c)
        return -1;
    if (c->functions == RLK_FUNCTIONS_OFF)
        return 0;
    if (c->functions == RLK_FUNCTIONS_ON)
        return 1;
    st = atomic_load(&c->fn_state);
    return st == RLK_FN_UNKNOWN ? -1 : st == RLK_FN_FCALL;
}

int rlk_fn_uses_fcall(rlk_client *c)
{
    return rlk_functions_active(c) == 1;
}

/* ---------------------------------------------------------------- call heads */

static int rlk_fn_no_writes(const rlk_script_info *s)
{
    for (int i = 0; rlk_no_writes_sha1[i]; i++)
        if (strcmp(rlk_no_writes_sha1[i], s->sha1) == 0)
            return 1;
    return 0;
}

void rlk_fn_head_known(rlk_client *c, const rlk_script_info *s, rlk_fn_head *h)
{
    h->fcall = rlk_fn_uses_fcall(c);
    if (!h->fcall) {
        h->argv[0] = "EVALSHA";
        h->argv[1] = s->sha1;
        h->lens[0] = 7;
        h->lens[1] = 40;
        return;
    }
    /* rlk_<kind>_<op>: the name tools/gen-functions.lua gives the script's function */
    snprintf(h->fname, sizeof h->fname, "rlk_%s", s->name);
    for (char *p = h->fname; *p; p++)
        if (*p == '/')
            *p = '_';
    h->argv[0] = rlk_fn_no_writes(s) ? "FCALL_RO" : "FCALL";
    h->argv[1] = h->fname;
    h->lens[0] = strlen(h->argv[0]);
    h->lens[1] = strlen(h->fname);
}

int rlk_fn_is_missing(const redisReply *r)
{
    static const char text[] = "ERR Function not found";

    return r->type == REDIS_REPLY_ERROR && r->len >= sizeof text - 1 &&
           memcmp(r->str, text, sizeof text - 1) == 0;
}
