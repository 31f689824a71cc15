/*
 * kind_mark.c - the semaphore / latch marker (kind_mark.h), with plain
 * commands: a check before the first write, not a transaction (two rlk
 * creating the same name as two kinds at the same moment are not told).
 */
#include <stdlib.h>
#include <string.h>

#include "kind_mark.h"
#include "kinds/names.h"
#include "runtime/fam.h"

#define RLK_KM_SUFFIX ":" RLK_KM_SUFFIX_NAME

static char *rlk_km_key(const char *name)
{
    size_t len = strlen(name) + sizeof RLK_KM_SUFFIX + 3;
    char *key = malloc(len);

    if (key)
        snprintf(key, len, "{%s}" RLK_KM_SUFFIX, name);
    return key;
}

/* One command with one key argument; *reply set. RLK_OK or an rlk code. */
static int rlk_km_cmd(rlk_client *c, const char *cmd, const char *key, const char *value,
                      redisReply **reply)
{
    const char *argv[3] = {cmd, key, value};

    return rlk_command(c, value ? 3 : 2, argv, NULL, reply);
}

/* The reply's string, or "" (NULL reply, nil, another type). */
static const char *rlk_km_str(const redisReply *r)
{
    return r && (r->type == REDIS_REPLY_STRING || r->type == REDIS_REPLY_STATUS) ? r->str : "";
}

/* What the key NAME is, as far as the marker and the companion key tell:
 * "semaphore", "latch" or "" (unknown). *exists: NAME is there. */
static int rlk_km_read(rlk_client *c, const char *name, int *exists, char *kind, size_t len)
{
    redisReply *r = NULL;
    char *mark = rlk_km_key(name), *timeouts = rlk_fam_suffix_name(name, RLK_NAMES_PERMITS);
    int rc;

    kind[0] = '\0';
    if (!mark || !timeouts) {
        free(mark);
        free(timeouts);
        return RLK_ERR_NOMEM;
    }
    rc = rlk_km_cmd(c, "EXISTS", name, NULL, &r);
    *exists = rc == RLK_OK && r && r->type == REDIS_REPLY_INTEGER && r->integer > 0;
    if (r)
        freeReplyObject(r);
    r = NULL;
    if (rc == RLK_OK && *exists && (rc = rlk_km_cmd(c, "GET", mark, NULL, &r)) == RLK_OK)
        snprintf(kind, len, "%s", rlk_km_str(r));
    if (r)
        freeReplyObject(r);
    r = NULL;
    if (rc == RLK_OK && *exists && !kind[0] &&
        (rc = rlk_km_cmd(c, "TYPE", timeouts, NULL, &r)) == RLK_OK &&
        strcmp(rlk_km_str(r), "zset") == 0)
        snprintf(kind, len, "%s", RLK_KM_SEMAPHORE);
    if (r)
        freeReplyObject(r);
    free(mark);
    free(timeouts);
    return rc;
}

int rlk_km_check_not_rwlock(rlk_client *c, const char *name, const char *what)
{
    const char *argv[3] = {"HEXISTS", name, "mode"};
    redisReply *r = NULL;
    int rc = rlk_command(c, 3, argv, NULL, &r), rw;

    rw = rc == RLK_OK && r && r->type == REDIS_REPLY_INTEGER && r->integer == 1;
    if (r)
        freeReplyObject(r);
    if (!rw)
        return -1;
    return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: %s is a read-write lock (take it with "
                        "--read or --write); nothing changed", what, name);
}

int rlk_km_check(rlk_client *c, const char *name, const char *kind, const char *what)
{
    char found[32];
    int exists = 0, rc = rlk_km_read(c, name, &exists, found, sizeof found);

    if (rc != RLK_OK)
        return rlk_lc_fail(c, rc, what);
    if (!exists || !found[0] || strcmp(found, kind) == 0)
        return -1;
    if (strcmp(found, RLK_KM_SEMAPHORE) == 0)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: %s is a semaphore (rlk semaphore, "
                            "Redisson's RSemaphore), not a count-down latch; nothing changed",
                            what, name);
    if (strcmp(found, RLK_KM_LATCH) == 0)
        return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: %s is a count-down latch (rlk latch), "
                            "not a semaphore; nothing changed", what, name);
    return rlk_cli_fail(RLK_EXIT_USAGE, "%s: refused: %s is marked as a %s; nothing changed",
                        what, name, found);
}

/* SET / DEL of the marker. */
static int rlk_km_write(rlk_client *c, const char *name, const char *cmd, const char *value)
{
    redisReply *r = NULL;
    char *mark = rlk_km_key(name);
    int rc = mark ? rlk_km_cmd(c, cmd, mark, value, &r) : RLK_ERR_NOMEM;

    if (r)
        freeReplyObject(r);
    free(mark);
    return rc;
}

int rlk_km_mark(rlk_client *c, const char *name, const char *kind)
{
    return rlk_km_write(c, name, "SET", kind);
}

int rlk_km_unmark(rlk_client *c, const char *name)
{
    return rlk_km_write(c, name, "DEL", NULL);
}

/* Whether the marker of name holds kind (a GET); *rc: RLK_OK or an rlk code. */
static int rlk_km_holds(rlk_client *c, const char *mark, const char *kind, int *rc)
{
    redisReply *r = NULL;
    int holds;

    *rc = rlk_km_cmd(c, "GET", mark, NULL, &r);
    holds = *rc == RLK_OK && strcmp(rlk_km_str(r), kind) == 0;
    if (r)
        freeReplyObject(r);
    return holds;
}

/* cmd on name's mark (PEXPIRE arg, or DEL with arg NULL) when the mark says kind; RLK_OK, or the
 * read's or the command's error. */
static int km_when_holds(rlk_client *c, const char *name, const char *kind, const char *cmd,
                         const char *arg)
{
    redisReply *r = NULL;
    char *mark = rlk_km_key(name);
    int rc = RLK_ERR_NOMEM;

    if (mark && rlk_km_holds(c, mark, kind, &rc))
        rc = rlk_km_cmd(c, cmd, mark, arg, &r);
    if (r)
        freeReplyObject(r);
    free(mark);
    return rc;
}

int rlk_km_renew(rlk_client *c, const char *name, const char *kind, long long ttl_ms)
{
    char ms[24];

    snprintf(ms, sizeof ms, "%lld", ttl_ms);
    return km_when_holds(c, name, kind, "PEXPIRE", ms);
}

int rlk_km_mark_for(rlk_client *c, const char *name, const char *kind, long long ttl_ms)
{
    const char *argv[6] = {"SET", NULL, kind, "NX", "PX", NULL};
    redisReply *r = NULL;
    char ms[24];
    int rc, set;

    if (!(argv[1] = rlk_km_key(name)))
        return RLK_ERR_NOMEM;
    snprintf(ms, sizeof ms, "%lld", ttl_ms);
    argv[5] = ms;
    rc = rlk_command(c, 6, argv, NULL, &r);
    set = rc == RLK_OK && r && r->type == REDIS_REPLY_STATUS;
    if (r)
        freeReplyObject(r);
    free((char *)argv[1]);
    return rc == RLK_OK && !set ? rlk_km_renew(c, name, kind, ttl_ms) : rc;
}

int rlk_km_unmark_if(rlk_client *c, const char *name, const char *kind)
{
    return km_when_holds(c, name, kind, "DEL", NULL);
}
