/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cmd_unlock.c - rlk unlock --force NAME
 *
 * Deletes a lock whoever holds it and publishes the unlock message, so
 * waiters try again at once. The kind comes from inspect_read.c's
 * detection: rlk_rwlock_force_unlock (mode any; it also deletes the readers'
 * timeout keys) for a read-write lock, the fair lock's force unlock (wakes
 * the first waiter on its own channel) for a fair lock, the fenced lock's
 * (the token key stays) for a fenced lock, reentrant/force_release for
 * anything else (a key of another type: its RLK_WRONGTYPE error). A plain
 * unlock is not offered: it needs the holder's id, which belongs to the
 * process holding the lock.
 *
 * --kind KIND names the kind instead (the operator knows it): that kind's
 * force unlock with the scripts' 'named' argument (rlk_*_force_unlock_named),
 * so a lock's hash without a TTL goes too. Without it such a hash (which its
 * shape cannot tell from an application's data) is refused: exit 4, one
 * line naming what was found and --kind, the key as it was.
 *
 * --queue empties a fair lock's queue (redisson_lock_queue:{name} and
 * redisson_lock_timeout:{name}) and sends each waiter that was in it the
 * message 0 on its own channel, in one script (fair/clear_queue): a live
 * waiter retries at once and queues again, a dead one is gone. With --force
 * the lock goes too.
 */
#include <stdlib.h>
#include <string.h>

#include "help_gen.h"
#include "inspect.h"
#include "kinds/fairlock.h"
#include "kinds/names.h"

typedef struct unlock_opts {
    const char *name;
    const char *url;
    const char *kind_word;      /* --kind; NULL: detected */
    int kind;                   /* RLK_IK_AUTO, or the kind named by --kind */
    int force;
    int queue;
} unlock_opts;

/* The kinds --kind takes: those whose force unlock rlk unlock runs. */
static int unlock_kind_word(const char *word)
{
    int kind = rlk_ik_from_word(word);

    return kind == RLK_IK_REENTRANT || kind == RLK_IK_RWLOCK || kind == RLK_IK_FAIR ||
           kind == RLK_IK_FENCED ? kind : RLK_IK_NONE;
}

static int unlock_parse(int argc, char **argv, unlock_opts *o)
{
    for (int i = 1; i < argc;) {
        int got = rlk_cli_opt_value("unlock", argc, argv, &i, "--url", &o->url);

        if (got == 0)
            got = rlk_cli_opt_value("unlock", argc, argv, &i, "--kind", &o->kind_word);
        if (got == 0)
            got = rlk_cli_global_opt("unlock", argc, argv, &i);
        if (got == 0 && (got = rlk_cli_opt_value("unlock", argc, argv, &i, "--name",
                                                 &o->name)) > 0 && o->name[0] == '\0')
            return rlk_cli_usage("unlock", "the lock name must not be empty");

        if (got < 0)
            return RLK_EXIT_USAGE;
        if (got > 0)
            continue;
        if (rlk_cli_is_help(argv[i])) {
            fputs(rlk_cli_help_unlock, stdout);
            return RLK_EXIT_OK;
        }
        if (strcmp(argv[i], "--force") == 0 || strcmp(argv[i], "-f") == 0)
            o->force = 1;
        else if (strcmp(argv[i], "--queue") == 0)
            o->queue = 1;
        else if (argv[i][0] == '-' && argv[i][1] != '\0')
            return rlk_cli_unknown_option("unlock", argv[i]);
        else if (o->name)
            return rlk_cli_usage("unlock", "unexpected argument '%s'", argv[i]);
        else
            o->name = argv[i];
        i++;
    }
    if (!o->name)
        return rlk_cli_usage("unlock", "missing the lock NAME");
    if (o->name[0] == '\0')
        return rlk_cli_usage("unlock", "the lock name must not be empty");
    if (!o->force && !o->queue)
        return rlk_cli_usage("unlock", "only 'rlk unlock --force %s' is offered: a plain unlock "
                             "needs the holder's id, which only the holding process has", o->name);
    if (o->kind_word && !o->force)
        return rlk_cli_usage("unlock", "--kind names the kind for --force");
    if (o->kind_word && (o->kind = unlock_kind_word(o->kind_word)) == RLK_IK_NONE)
        return rlk_cli_usage("unlock", "--kind must be reentrant, fair, fenced or rwlock, not '%s'",
                             o->kind_word);
    return -1;
}

/* ---------------------------------------------------------------- kinds */

static int unlock_reentrant(rlk_client *c, const char *name, int named, int *released)
{
    rlk_lock *l = rlk_lock_new(c, name);
    int rc;

    if (!l)
        return rlk_err(c);
    rc = named ? rlk_lock_force_unlock_named(l, released) : rlk_lock_force_unlock(l, released);
    rlk_lock_free(l);
    return rc;
}

static int unlock_rwlock(rlk_client *c, const char *name, int named, int *released)
{
    rlk_rwlock *rw = rlk_rwlock_new(c, name);
    int rc;

    if (!rw)
        return rlk_err(c);
    rc = named ? rlk_rwlock_force_unlock_named(rw, RLK_RW_ANY, released)  /* whatever its mode */
               : rlk_rwlock_force_unlock(rw, RLK_RW_ANY, released);
    rlk_rwlock_free(rw);
    return rc;
}

static int unlock_fair(rlk_client *c, const char *name, int named, int *released)
{
    rlk_fairlock *f = rlk_fairlock_new(c, name);
    int rc;

    if (!f)
        return rlk_err(c);
    rc = named ? rlk_fairlock_force_unlock_named(f, released)
               : rlk_fairlock_force_unlock(f, released);
    rlk_fairlock_free(f);
    return rc;
}

static int unlock_fenced(rlk_client *c, const char *name, int named, int *released)
{
    rlk_fenced *f = rlk_fenced_new(c, name);
    int rc;

    if (!f)
        return rlk_err(c);
    rc = named ? rlk_fenced_force_unlock_named(f, released)
               : rlk_fenced_force_unlock(f, released);
    rlk_fenced_free(f);
    return rc;
}

/* ---------------------------------------------------------------- command */

/* The kind as inspect finds it. */
static int unlock_kind(rlk_client *c, const char *name, int *kind)
{
    rlk_ik_view v;
    int rc = rlk_ik_read(c, name, RLK_IK_AUTO, &v);

    *kind = v.kind;
    rlk_ik_free(&v);
    return rc;
}

/* A faster-MultiLock group: fastmulti/force_release of every value the group has (each value
 * and its holder's fields go, the unlock message is published), so its holders' watchdogs find
 * their values gone at their next renewal, not at their own release. */
static int unlock_fastmulti(rlk_client *c, const char *name, int *released)
{
    rlk_ik_view v;
    const char **values = NULL;
    rlk_fastmulti *m = NULL;
    size_t n = 0;
    int rc = rlk_ik_read(c, name, RLK_IK_FASTMULTI, &v);

    *released = 0;
    if (rc == RLK_OK && v.nvalues > 0 && !(values = calloc(v.nvalues, sizeof *values)))
        rc = RLK_ERR_NOMEM;
    for (; rc == RLK_OK && n < v.nvalues; n++)
        if (!(values[n] = strndup(v.values[n].value, v.values[n].value_len)))
            rc = RLK_ERR_NOMEM;
    if (rc == RLK_OK && n > 0 && !(m = rlk_fastmulti_new(c, name, values, n)))
        rc = rlk_err(c);
    if (m)
        rc = rlk_fastmulti_force_unlock(m, released);
    rlk_fastmulti_free(m);
    for (size_t k = 0; k < n; k++)
        free((char *)values[k]);
    free(values);
    rlk_ik_free(&v);
    return rc;
}

/* named: the kind was named (--kind): its force unlock with 'named'. */
static int unlock_by_kind(rlk_client *c, const char *name, int kind, int named, int *released)
{
    switch (kind) {
    case RLK_IK_FASTMULTI:
        return unlock_fastmulti(c, name, released);
    case RLK_IK_RWLOCK:
        return unlock_rwlock(c, name, named, released);
    case RLK_IK_FAIR:
        return unlock_fair(c, name, named, released);
    case RLK_IK_FENCED:
        return unlock_fenced(c, name, named, released);
    default:
        return unlock_reentrant(c, name, named, released);
    }
}

/* The force_release scripts' refusal of a lock's hash without a TTL unless the kind is
 * named ("RLK_WRONGTYPE lock key holds <what>: name the kind to remove it"): one line
 * naming what was found and --kind (with the kind detected), exit 4. -1: another error. */
static int unlock_unnamed(rlk_client *c, int rc, const char *name, int kind)
{
    static const char tail[] = ": name the kind to remove it";
    const char *err = rlk_errstr(c), *what = strstr(err, "holds "), *end = strstr(err, tail);

    if (rc != RLK_ERR_SCRIPT || !strstr(err, "RLK_WRONGTYPE") || !what || !end || end < what)
        return -1;
    what += strlen("holds ");
    if (kind != RLK_IK_RWLOCK && kind != RLK_IK_FAIR && kind != RLK_IK_FENCED)
        kind = RLK_IK_REENTRANT;
    return rlk_cli_fail(RLK_EXIT_REPLY, "unlock %s: refused: it holds %.*s, which rlk cannot tell "
                        "from an application's data; if it is a %s, name its kind: rlk unlock "
                        "--force --kind %s %s (nothing changed)", rlk_cli_show(name),
                        (int)(end - what), what, rlk_ik_label(kind), rlk_ik_word(kind),
                        rlk_cli_show(name));
}

/* A name that holds no lock (a string: a token lock, a semaphore, a latch) has no force unlock
 * here, named or not: one line saying what it is, exit 4, nothing changed. -1: a lock's kind
 * (or none) goes on. */
static int unlock_not_a_lock(const char *name, int kind)
{
    const char *shown = rlk_cli_show(name);

    switch (kind) {
    case RLK_IK_TOKEN:
        return rlk_cli_fail(RLK_EXIT_REPLY, "unlock %s: refused (RLK_WRONGTYPE): it holds a "
                            "string, as a token lock does (RedLock's, redis-py's) or an "
                            "application's value: token locks have no force unlock; only the "
                            "holder releases one, with its token (nothing changed)", shown);
    case RLK_IK_SEMAPHORE:
    case RLK_IK_PSEMAPHORE:
    case RLK_IK_LATCH:
        return rlk_cli_fail(RLK_EXIT_REPLY, "unlock %s: refused (RLK_WRONGTYPE): it is a %s, "
                            "not a lock: rlk unlock --force removes locks only (nothing changed)",
                            shown, rlk_ik_label(kind));
    default:
        return -1;
    }
}

/* A force unlock of the kind the operator named (--kind) that its script refused, where the
 * name holds a lock of another kind: the refusal, and the --kind it takes. -1: nothing to add
 * (the refusal is said as the library words it). */
static int unlock_wrong_kind(rlk_client *c, int rc, const char *name, int named, int found)
{
    const char *shown = rlk_cli_show(name);

    if (rc != RLK_ERR_SCRIPT || !strstr(rlk_errstr(c), "RLK_WRONGTYPE") || found == named)
        return -1;
    if (found == RLK_IK_FASTMULTI)
        return rlk_cli_fail(RLK_EXIT_REPLY, "unlock %s: refused: %s; it is a faster MultiLock "
                            "group, not a %s: rlk unlock --force %s (no --kind) removes it "
                            "(nothing changed)", shown, rlk_errstr(c), rlk_ik_label(named),
                            shown);
    if (found != RLK_IK_REENTRANT && found != RLK_IK_RWLOCK && found != RLK_IK_FAIR &&
        found != RLK_IK_FENCED)
        return -1;
    return rlk_cli_fail(RLK_EXIT_REPLY, "unlock %s: refused: %s; it is a %s%s, not a %s: rlk "
                        "unlock --force --kind %s %s (nothing changed)", shown, rlk_errstr(c),
                        rlk_ik_label(found), found == RLK_IK_REENTRANT
                        ? " (or a fair or fenced lock: they look the same)" : "",
                        rlk_ik_label(named), rlk_ik_word(found), shown);
}

/* 1 when the reentrant lock's lock-delay key of name ({name}:rlk_delay, the
 * library's rule: a name with a '{' keeps its own tag) is there, else 0. */
static int unlock_delay_there(rlk_client *c, const char *name)
{
    size_t len = strlen(name) + sizeof RLK_NAMES_DELAY + 4;
    char *key = malloc(len);
    const char *argv[2] = {"EXISTS", key};
    redisReply *r = NULL;
    int there;

    if (!key)
        return 0;
    snprintf(key, len, strchr(name, '{') ? "%s:%s" : "{%s}:%s", name, RLK_NAMES_DELAY);
    there = rlk_command(c, 2, argv, NULL, &r) == RLK_OK && r->type == REDIS_REPLY_INTEGER &&
            r->integer == 1;
    if (r)
        freeReplyObject(r);
    free(key);
    return there;
}

static int unlock_force(rlk_client *c, const char *name, int named_kind)
{
    int kind = RLK_IK_NONE, released = 0, delay = 0, named = named_kind != RLK_IK_AUTO;
    int rc = unlock_kind(c, name, &kind);

    /* No lock under the name: reentrant/force_release ends a lost lock's
     * delay if its key is there (the script's reply 2, which the library's
     * released flag does not tell from 0: looked at first; a key that runs
     * out in between has ended all the same). */
    int found, code;

    if (rc == RLK_OK && (code = unlock_not_a_lock(name, kind)) >= 0)
        return code;
    found = kind;
    if (rc == RLK_OK && kind == RLK_IK_NONE && (!named || named_kind == RLK_IK_REENTRANT))
        delay = unlock_delay_there(c, name);
    if (rc == RLK_OK && named)
        kind = named_kind;      /* the kind as the operator names it, not as detected */
    if (rc == RLK_OK)
        rc = unlock_by_kind(c, name, kind, named, &released);
    if (rc != RLK_OK && !named && (code = unlock_unnamed(c, rc, name, kind)) >= 0)
        return code;
    if (rc != RLK_OK && named && (code = unlock_wrong_kind(c, rc, name, kind, found)) >= 0)
        return code;
    if (rc != RLK_OK) {
        char what[300];

        snprintf(what, sizeof what, "unlock %s", name);
        return rlk_lc_fail(c, rc, what);
    }
    if (!released && delay)
        printf("%s: no lock; its lock-delay ended\n", rlk_cli_show(name));
    else if (!released)
        printf("%s: no lock to remove\n", rlk_cli_show(name));
    else if (kind == RLK_IK_RWLOCK || kind == RLK_IK_FAIR || kind == RLK_IK_FENCED ||
             kind == RLK_IK_FASTMULTI)
        printf("%s: %s removed (force unlock)\n", rlk_cli_show(name), rlk_ik_label(kind));
    else
        printf("%s: lock removed (force unlock)\n", rlk_cli_show(name));
    return RLK_EXIT_OK;
}

/* Empties the fair lock's queue and wakes each waiter that was in it (fair/clear_queue, one
 * script: kinds/fairlock.h). */
static int unlock_queue(rlk_client *c, const char *name)
{
    rlk_fairlock *f = rlk_fairlock_new(c, name);
    long long n = 0;
    char what[300];
    int rc;

    snprintf(what, sizeof what, "unlock --queue %s", name);
    if (!f)
        return rlk_lc_fail(c, rlk_err(c), what);
    rc = rlk_fairlock_clear_queue(f, &n);
    rlk_fairlock_free(f);
    if (rc != RLK_OK)
        return rlk_lc_fail(c, rc, what);
    printf("%s: fair lock queue cleared (%lld waiter%s)\n", rlk_cli_show(name), n,
           n == 1 ? "" : "s");
    return RLK_EXIT_OK;
}

static int unlock_run(int argc, char **argv)
{
    unlock_opts o = {NULL, NULL, NULL, RLK_IK_AUTO, 0, 0};
    rlk_client *c;
    int rc;

    if ((rc = unlock_parse(argc, argv, &o)) >= 0)
        return rc;
    if ((rc = rlk_cli_check_name("unlock", o.name)) >= 0)
        return rc;
    if (!(c = rlk_cli_connect(o.url, NULL, 1, &rc)))
        return rc;
    rc = o.force ? unlock_force(c, o.name, o.kind) : RLK_EXIT_OK;
    if (rc == RLK_EXIT_OK && o.queue)
        rc = unlock_queue(c, o.name);
    rlk_free(c);
    return rc;
}

const rlk_cli_command rlk_cmd_unlock = {
    "unlock",
    "force-release a lock whoever holds it (rlk unlock --force NAME)",
    rlk_cli_help_unlock,
    unlock_run,
};
