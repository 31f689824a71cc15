/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nest.c - the nesting rule of the holding commands (nest.h): what the
 * enclosing rlk holds, from RLK_LOCK_KIND, RLK_LOCK_NAME and RLK_LOCK_OWNER,
 * and the refusals.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "nest.h"

/* Every RLK_LOCK_KIND an rlk gives, with its family (one key layout under one kind's rules)
 * and the command that gives it. */
static const struct {
    const char *kind, *family, *command;
} rlk_nest_kinds[] = {
    {"lock", "lock", "rlk lock"},
    {"multi", "lock", "rlk lock"},     /* --all: every member a reentrant lock, one holder id */
    {"read", "rw", "rlk lock"},
    {"write", "rw", "rlk lock"},
    {"fair", "fair", "rlk lock"},
    {"nonreentrantfair", "nonreentrantfair", "rlk lock"},
    {"fenced", "fenced", "rlk lock"},
    {"nonreentrant", "nonreentrant", "rlk lock"},
    {"redlock", "redlock", "rlk lock"},
    {"fastmulti", "fastmulti", "rlk fastmulti"},
    {"semaphore", "semaphore", "rlk semaphore"},
    {"elect", "elect", "rlk elect"},
};

#define RLK_NEST_NKINDS (sizeof rlk_nest_kinds / sizeof rlk_nest_kinds[0])

static int rlk_nest_kind_at(const char *kind)
{
    for (size_t k = 0; kind && k < RLK_NEST_NKINDS; k++)
        if (strcmp(kind, rlk_nest_kinds[k].kind) == 0)
            return (int)k;
    return -1;
}

const char *rlk_nest_command(const char *kind)
{
    int k = rlk_nest_kind_at(kind);

    return k < 0 ? "rlk" : rlk_nest_kinds[k].command;
}

/* 1 when the parent's RLK_LOCK_NAME (held as parent_kind) names name: --all's is its
 * members' names separated by spaces, every other kind's one name. */
static int rlk_nest_holds(const char *held, const char *parent_kind, const char *name)
{
    size_t len = strlen(name);

    if (strcmp(parent_kind, "multi") != 0)
        return strcmp(held, name) == 0;
    for (const char *p = held; *p;) {
        size_t word = strcspn(p, " ");

        if (word == len && strncmp(p, name, len) == 0)
            return 1;
        p += word;
        p += *p == ' ';
    }
    return 0;
}

void rlk_nest_find(const char *kind, const char *const *names, int nnames, rlk_nest *n)
{
    const char *env_kind = getenv("RLK_LOCK_KIND"), *env_name = getenv("RLK_LOCK_NAME");
    const char *env_owner = getenv("RLK_LOCK_OWNER");
    int parent = rlk_nest_kind_at(env_kind), mine = rlk_nest_kind_at(kind);

    memset(n, 0, sizeof *n);
    if (!env_name || !env_owner || env_owner[0] == '\0' || parent < 0 || mine < 0)
        return;
    for (int k = 0; k < nnames; k++) {
        if (rlk_nest_holds(env_name, env_kind, names[k])) {
            n->found = 1;
            n->same = strcmp(rlk_nest_kinds[parent].family, rlk_nest_kinds[mine].family) == 0;
            n->kind = env_kind;
            n->owner = env_owner;
            snprintf(n->name, sizeof n->name, "%s", names[k]);
            return;
        }
    }
}

int rlk_nest_refuse_other(const char *what, const rlk_nest *n)
{
    return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: the enclosing %s holds %s as another kind "
                        "(RLK_LOCK_KIND=%s), and this rlk would wait for its own parent for ever "
                        "(or find its key of another kind); ask for the same kind", what,
                        rlk_nest_command(n->kind), rlk_cli_show(n->name), n->kind);
}

int rlk_nest_refuse_same(const char *what, const rlk_nest *n, const char *why)
{
    return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: the enclosing %s holds %s already "
                        "(RLK_LOCK_KIND=%s), and %s", what, rlk_nest_command(n->kind),
                        rlk_cli_show(n->name), n->kind, why);
}

int rlk_nest_owner_words(const rlk_nest *n)
{
    int words = 0;

    for (const char *p = n->owner ? n->owner : ""; *p;) {
        size_t w = strcspn(p, " ");

        words += w > 0;
        p += w;
        p += *p == ' ';
    }
    return words;
}
