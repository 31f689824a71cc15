/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_acl.c - rlk check's acl finding (check.h): what the user may run per
 * lock kind, asked with ACL DRYRUN for every script of the kind (EVALSHA, or
 * FCALL in functions mode), the commands its body runs on the kind's keys and
 * channels (kinds/names.h), and the client's own calls.
 */
#include <stdlib.h>
#include <string.h>

#include "check_cli.h"
#include "client/client.h"
#include "client/functions.h"
#include "client/native.h"
#include "kinds/names.h"

/* Argument templates for the commands scripts run (K: a key, C: a channel). */
static const struct { const char *cmd; const char *args; } cmd_args[] = {
    {"get", "K"}, {"set", "K v"}, {"del", "K"}, {"exists", "K"}, {"type", "K"},
    {"incr", "K"}, {"incrby", "K 1"}, {"decr", "K"}, {"decrby", "K 1"}, {"pexpire", "K 1"},
    {"persist", "K"}, {"pttl", "K"}, {"hincrby", "K f 1"}, {"hexists", "K f"}, {"hget", "K f"},
    {"hset", "K f v"}, {"hdel", "K f"}, {"hgetall", "K"}, {"hlen", "K"}, {"hmget", "K f"},
    {"zscore", "K m"},
    {"zadd", "K 1 m"}, {"zrem", "K m"}, {"zincrby", "K 1 m"}, {"zrange", "K 0 1"},
    {"zcount", "K 0 1"}, {"zrangebyscore", "K 0 1"}, {"zremrangebyscore", "K 0 1"},
    {"zcard", "K"}, {"rpush", "K v"},
    {"lpop", "K"}, {"lindex", "K 0"}, {"lpos", "K v"}, {"lrem", "K 0 v"}, {"lrange", "K 0 1"},
    {"llen", "K"}, {"strlen", "K"}, {"publish", "C m"}, {"spublish", "C m"}, {"time", ""},
};

typedef struct probe {
    rlk_checker *k;
    const char *user;
    const char *name;
    char denied[512];   /* the first refusal */
    int unknown;        /* DRYRUN itself refused */
} probe;

/* ACL DRYRUN user argv...; 1 allowed, 0 denied (p->denied set), -1 not known. */
static int dryrun(probe *p, int argc, const char *const *argv)
{
    const char *full[16];
    redisReply *r;
    int rc, ok = -1;

    if (argc > 13)
        return -1;
    full[0] = "ACL";
    full[1] = "DRYRUN";
    full[2] = p->user;
    for (int i = 0; i < argc; i++)
        full[3 + i] = argv[i];
    full[3 + argc] = NULL;
    rc = rlk_ck_cmd(p->k, &r, full);
    if (rc == RLK_OK && r && r->type == REDIS_REPLY_STATUS && strcmp(r->str, "OK") == 0) {
        ok = 1;
    } else if (rc == RLK_OK && r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS)) {
        ok = 0;
        if (!p->denied[0]) {
            char cmdline[256] = "";

            for (int i = 0; i < argc && i < 4; i++)
                snprintf(cmdline + strlen(cmdline), sizeof cmdline - strlen(cmdline), "%s%.60s",
                         i ? " " : "", argv[i]);
            snprintf(p->denied, sizeof p->denied, "%.200s (%.200s)", r->str, cmdline);
        }
    } else if (rc != RLK_OK) {
        p->unknown = 1;
    }
    if (r)
        freeReplyObject(r);
    return ok;
}

/* Runs DRYRUN for one command with a template: every K over keys, every C over channels. */
static int dryrun_template(probe *p, const char *cmd, const char *args, char keys[][300],
                           int nkeys, char chans[][300], int nchans)
{
    const char *argv[8];
    char words[6][16];
    int nwords = 0, result = 1;
    const char *s = args;

    while (*s && nwords < 6) {
        size_t w = strcspn(s, " ");

        snprintf(words[nwords++], sizeof words[0], "%.*s", (int)w, s);
        s += w + (s[w] == ' ');
    }
    int uses_k = nwords && strcmp(words[0], "K") == 0, uses_c = nwords && strcmp(words[0], "C") == 0;
    int count = uses_k ? nkeys : uses_c ? nchans : 1;

    for (int t = 0; t < count; t++) {
        argv[0] = cmd;
        for (int i = 0; i < nwords; i++)
            argv[1 + i] = i == 0 && uses_k ? keys[t] : i == 0 && uses_c ? chans[t] : words[i];
        int ok = dryrun(p, 1 + nwords, argv);

        if (ok < 0)
            return -1;
        if (ok == 0)
            result = 0;
    }
    return result;
}

/* Checks what one kind needs: 1 all allowed, 0 something denied, -1 not known.
 * The kind's keys and channels come from the library (kinds/names.h), each
 * script's KEYS by the roles its header names (rlk_script_key_roles). */
static int probe_kind(probe *p, const rlk_names_kind *kl)
{
    char keys[8][300], chans[3][300], seen[64][24];
    int nkeys = 0, nchans = 0, nseen = 0, result = 1;
    size_t plen = strlen(kl->kind);
    rlk_client *c = p->k->c;
    char *nm;

#define MERGE(ok) do { int ok_ = (ok); if (ok_ < 0) return -1; if (ok_ == 0) result = 0; } while (0)
    if (kl->wake == RLK_NAMES_WAKE_WAITER && (nm = rlk_names_waiter_channel(p->name, "w", 1)) != NULL) {
        snprintf(chans[nchans++], sizeof chans[0], "%s", nm);
        free(nm);
    }
    if ((nm = rlk_names_channel(kl, p->name)) != NULL) {
        snprintf(chans[nchans++], sizeof chans[0], "%s", nm);
        if (kl->wake == RLK_NAMES_WAKE_TICKET) {    /* a queued waiter's (client id 1) */
            char *wake = rlk_names_wake_channel(nm, 1);

            if (!wake) {
                free(nm);
                return -1;
            }
            snprintf(chans[nchans++], sizeof chans[0], "%s", wake);
            free(wake);
        }
        free(nm);
    }
    if (strcmp(kl->kind, "rwlock") == 0 && (nm = rlk_names_rw_timeout(p->name, "o", 1)) != NULL) {
        snprintf(keys[nkeys++], sizeof keys[0], "%s", nm);  /* a key the scripts derive */
        free(nm);
    }
    for (size_t i = 0; i < rlk_script_count(c); i++) {
        const rlk_script_info *s = rlk_script_at(c, i);
        const char *argv[12], *roles;
        char skeys[6][300], nk[16], fname[96];
        int n = 0;

        if (strncmp(s->name, kl->kind, plen) != 0 || s->name[plen] != '/')
            continue;
        /* The script's KEYS, by role, from its header (generated at build time). */
        roles = rlk_script_key_roles(s->name);
        for (const char *r = roles; r && *r && n < 6; r += strspn(r, " ")) {
            size_t w = strcspn(r, " ");
            char role[32];
            int unknown;

            snprintf(role, sizeof role, "%.*s", (int)w, r);
            r += w;
            if (!(nm = rlk_names_key(kl, role, p->name, &unknown))) {
                if (unknown)
                    continue;
                return -1;
            }
            snprintf(skeys[n], sizeof skeys[0], "%s", nm);
            free(nm);
            if (strcmp(role, "channel") != 0) {
                int dup = 0;

                for (int j = 0; j < nkeys; j++)
                    dup |= strcmp(keys[j], skeys[n]) == 0;
                if (!dup && nkeys < 8)
                    snprintf(keys[nkeys++], sizeof keys[0], "%s", skeys[n]);
            }
            n++;
        }
        snprintf(nk, sizeof nk, "%d", n);
        argv[0] = "evalsha";
        argv[1] = s->sha1;
        if (p->k->fcall) {      /* FCALL rlk_<kind>_<op> (FCALL_RO: a script that only reads) */
            snprintf(fname, sizeof fname, "rlk_%s", s->name);
            fname[strcspn(fname, "/")] = '_';
            argv[0] = "fcall";
            for (int j = 0; rlk_no_writes_sha1[j]; j++)
                if (strcmp(rlk_no_writes_sha1[j], s->sha1) == 0)
                    argv[0] = "fcall_ro";
            argv[1] = fname;
        }
        argv[2] = nk;
        for (int j = 0; j < n; j++)
            argv[3 + j] = skeys[j];
        MERGE(dryrun(p, 3 + n, argv));
        /* The commands the script runs, by name. */
        for (const char *q = s->body; (q = strstr(q, "redis.")) != NULL; q++) {
            const char *open = strncmp(q, "redis.call('", 12) == 0 ? q + 12
                               : strncmp(q, "redis.pcall('", 13) == 0 ? q + 13 : NULL;
            char cmd[24];
            int dup = 0;

            if (!open)
                continue;
            snprintf(cmd, sizeof cmd, "%.*s", (int)strcspn(open, "'"), open);
            for (int j = 0; j < nseen; j++)
                dup |= strcmp(seen[j], cmd) == 0;
            if (!dup && nseen < 64)
                snprintf(seen[nseen++], sizeof seen[0], "%s", cmd);
        }
        /* redis.call(publish, ...): the command this client passes (lib/publish_cmd). */
        if (strstr(s->body, "redis.call(publish,")) {
            const char *cmd = rlk_publish_arg(p->k->c);
            int dup = 0;

            for (int j = 0; j < nseen; j++)
                dup |= strcmp(seen[j], cmd) == 0;
            if (!dup && nseen < 64)
                snprintf(seen[nseen++], sizeof seen[0], "%s", cmd);
        }
    }
    /* What the client sends itself, and its queries. */
    for (int j = 0; j < nseen; j++) {
        const char *args = NULL;

        for (size_t t = 0; t < sizeof cmd_args / sizeof cmd_args[0]; t++)
            if (strcmp(cmd_args[t].cmd, seen[j]) == 0)
                args = cmd_args[t].args;
        if (!args)
            return -1;
        MERGE(dryrun_template(p, seen[j], args, keys, nkeys, chans, nchans));
    }
    MERGE(dryrun(p, 1, (const char *const[]){"ping"}));
    if (!p->k->fcall)   /* FCALL mode loads nothing */
        MERGE(dryrun(p, 3, (const char *const[]){"script", "load", "return 1"}));
    for (int j = 0; j < nchans; j++) {
        int sharded = rlk_client_pubsub(p->k->c) == RLK_PUBSUB_SHARDED;

        MERGE(dryrun(p, 2, (const char *const[]){sharded ? "ssubscribe" : "subscribe", chans[j]}));
        MERGE(dryrun(p, 2, (const char *const[]){sharded ? "sunsubscribe" : "unsubscribe",
                                                  chans[j]}));
    }
    if (strcmp(kl->kind, "psemaphore") == 0)
        MERGE(dryrun_template(p, "zrange", "K 0 1", keys, nkeys, chans, 0));
    else if (strcmp(kl->kind, "token") != 0 && strcmp(kl->kind, "semaphore") != 0 &&
             strcmp(kl->kind, "latch") != 0)
        MERGE(dryrun_template(p, "hgetall", "K", keys, 1, chans, 0));
#undef MERGE
    return result;
}

void rlk_ck_acl(rlk_checker *k)
{
    redisReply *r;
    char user[128], kinds_json[512] = "", denied_list[256] = "", first_denied[600] = "", a[300];
    int rc = k->o->user ? RLK_OK : RLK_CK_CMD(k, &r, "ACL", "WHOAMI");
    int ndenied = 0, nunknown = 0;
    rlk_ck_finding *f;

    if (k->fatal)
        return;
    if (k->o->user) {
        snprintf(user, sizeof user, "%s", k->o->user);
    } else if (rc != RLK_OK || !r || r->type != REDIS_REPLY_STRING) {
        f = rlk_ck_add(k, "acl", RLK_CF_UNKNOWN, "ACL WHOAMI refused (%s): permissions unknown",
                rc == RLK_OK ? "no user name" : rlk_errstr(k->c));
        rlk_ck_fix(f, "run rlk check as an admin user, or compare the user's rules with docs/acl.md");
        if (r)
            freeReplyObject(r);
        return;
    } else {
        snprintf(user, sizeof user, "%s", r->str);
        freeReplyObject(r);
    }
    for (size_t i = 0; i < rlk_names_kind_count(); i++) {
        const rlk_names_kind *kind = rlk_names_kind_at(i);
        probe p = {k, user, k->o->name, "", 0};
        int ok = probe_kind(&p, kind);

        if (k->fatal)
            return;
        if (ok == 0 && k->native_token && strcmp(kind->kind, "token") == 0) {
            /* Served without scripts (client/native.h): its commands are what counts. */
            probe q = {k, user, k->o->name, "", 0};
            const char *rel = k->native_caps & RLK_NATIVE_DELIFEQ ? "delifeq" : "delex";

            if (dryrun(&q, 3, (const char *const[]){"set", k->o->name, "v"}) == 1 &&
                dryrun(&q, 3, (const char *const[]){rel, k->o->name, "v"}) == 1 &&
                dryrun(&q, 2, (const char *const[]){"pttl", k->o->name}) == 1)
                ok = 2;
        }
        if (ok < 0 && i == 0 && p.unknown) {
            f = rlk_ck_add(k, "acl", RLK_CF_UNKNOWN, "user %s: ACL DRYRUN refused (%s): permissions unknown",
                    user, rlk_errstr(k->c));
            rlk_ck_fix(f, "run rlk check as a user allowed ACL DRYRUN (Redis 7), or compare the "
                       "user's rules with docs/acl.md");
            rlk_ck_json(f, ", \"user\": %s", rlk_ck_jstr(a, sizeof a, user));
            return;
        }
        snprintf(kinds_json + strlen(kinds_json), sizeof kinds_json - strlen(kinds_json),
                 "%s\"%s\": \"%s\"", i ? ", " : "", kind->kind,
                 ok == 2 ? "native" : ok > 0 ? "ok" : ok == 0 ? "denied" : "unknown");
        if (ok == 0) {
            snprintf(denied_list + strlen(denied_list), sizeof denied_list - strlen(denied_list),
                     "%s%s", ndenied ? ", " : "", kind->kind);
            if (!ndenied++)
                snprintf(first_denied, sizeof first_denied, "%s", p.denied);
        } else if (ok < 0) {
            nunknown++;
        }
        if (strcmp(kind->kind, "reentrant") == 0 && ok >= 0) {
            probe q = {k, user, k->o->name, "", 0};

            k->script_load_allowed =
                dryrun(&q, 3, (const char *const[]){"script", "load", "return 1"}) == 1;
        }
    }
    if (ndenied) {
        f = rlk_ck_add(k, "acl", RLK_CF_ERROR, "user %s may not use: %s; first refusal: %s", user,
                denied_list, first_denied);
        rlk_ck_fix(f, "give the user the rules of docs/acl.md (with your lock names' patterns)");
    } else if (nunknown) {
        f = rlk_ck_add(k, "acl", RLK_CF_UNKNOWN, "user %s: %d kinds could not be checked", user, nunknown);
    } else {
        f = rlk_ck_add(k, "acl", RLK_CF_OK, "user %s may use every kind (ACL DRYRUN with lock name %s)", user,
                k->o->name);
    }
    rlk_ck_json(f, ", \"user\": %s, \"kinds\": {%s}", rlk_ck_jstr(a, sizeof a, user), kinds_json);
}
