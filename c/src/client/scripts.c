/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * scripts.c - the embedded script table and script sets (lookup by name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client_t.h"
#include "client/functions.h"
#include "client/scripts.h"
#include "client/sha1.h"

size_t rlk_embedded_count(void)
{
    return rlk_embedded_scripts_count;
}

const rlk_script_info *rlk_embedded_at(size_t i)
{
    return i < rlk_embedded_scripts_count ? &rlk_embedded_scripts[i] : NULL;
}

void rlk_script_set_embedded(rlk_script_set *set)
{
    set->items = rlk_embedded_scripts;
    set->count = rlk_embedded_scripts_count;
    set->owned = NULL;
    snprintf(set->rlk_version, sizeof set->rlk_version, "%s", RLK_VERSION);
}

void rlk_script_set_id(const rlk_script_set *set, char hex[41])
{
    rlk_sha1_ctx ctx;

    rlk_sha1_init(&ctx);
    for (size_t i = 0; i < set->count; i++) {
        const rlk_script_info *s = &set->items[i];
        char nums[64];
        int n = snprintf(nums, sizeof nums, "\t%d\t%d\t", s->version, s->numkeys);

        rlk_sha1_update(&ctx, s->name, strlen(s->name));
        rlk_sha1_update(&ctx, nums, (size_t)n);
        rlk_sha1_update(&ctx, s->sha1, strlen(s->sha1));
        rlk_sha1_update(&ctx, "\n", 1);
    }
    rlk_sha1_final_hex(&ctx, hex);
}

/* bsearch's order of a name against a row whose first member is its name
 * (rlk_script_info, rlk_script_roles). */
static int rlk_by_name(const void *name, const void *row)
{
    return strcmp(name, *(const char *const *)row);
}

const rlk_script_info *rlk_script_set_find(const rlk_script_set *set, const char *name)
{
    if (!name || set->count == 0)
        return NULL;
    return bsearch(name, set->items, set->count, sizeof *set->items, rlk_by_name);
}

void rlk_script_set_free(rlk_script_set *set)
{
    if (set->owned) {
        for (size_t i = 0; i < set->count; i++) {
            free((char *)set->owned[i].name);
            free((char *)set->owned[i].sha1);
            free((char *)set->owned[i].body);
        }
        free(set->owned);
    }
    memset(set, 0, sizeof *set);
}

size_t rlk_script_count(const rlk_client *c)
{
    return c ? c->scripts.count : 0;
}

const rlk_script_info *rlk_script_at(const rlk_client *c, size_t i)
{
    return (c && i < c->scripts.count) ? &c->scripts.items[i] : NULL;
}

const rlk_script_info *rlk_script_find(const rlk_client *c, const char *name)
{
    return c ? rlk_script_set_find(&c->scripts, name) : NULL;
}

const char *rlk_script_key_roles(const char *name)
{
    const rlk_script_roles *r = name ? bsearch(name, rlk_embedded_key_roles,
                                               rlk_embedded_scripts_count,
                                               sizeof *rlk_embedded_key_roles, rlk_by_name)
                                     : NULL;

    return r ? r->roles : NULL;
}

/* The scripts that never write (their includes neither): the ones flagged no-writes, as
 * tools/gen-functions.lua lists them from their bodies. They may run on a replica (role.h),
 * and no WAIT follows them (conn.h). */
int rlk_script_writes(const rlk_script_info *s)
{
    for (int i = 0; rlk_no_writes_name[i]; i++)
        if (strcmp(s->name, rlk_no_writes_name[i]) == 0)
            return 0;
    return 1;
}
