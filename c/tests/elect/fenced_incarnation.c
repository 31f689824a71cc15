/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fenced_incarnation.c - a fenced lock's renewal names its hold, on both APIs, against a real
 * server.
 *
 * One holder id in two processes (a child handed the id, an incarnation that restarted): the
 * first holder (a child process, lease-less, watchdog lease 6 s) is stopped (SIGSTOP) while its
 * hold is taken from it (DEL: its lease ran out while it was stopped), and a second process with
 * the same id takes the lock with a fixed 15 s lease (a new token) and exits. The first is
 * continued well inside its own loss deadline: its watchdog's next renewal must tell it
 * RLK_LOST_GONE. While fenced/renew checked the holder id alone, that renewal renewed the
 * second's hold and the first was never told (renew_token, renew_token_async: the first holder
 * on the blocking API, then on the loop).
 *
 * A shared-id nesting keeps renewing: a second process with the same id re-enters the first's
 * hold with its token (rlk_fenced_set_reentry_token, as a nested `rlk lock --fenced` does with
 * RLK_FENCE_TOKEN) on a short fixed lease; the first's watchdog (lease 3 s) must keep the hold
 * past its own first lease and the second's, told nothing (nested_token, nested_token_async).
 *
 * A hold past its loss deadline is lost, whatever its kind (deadline_fenced, deadline_lock and
 * their _async twins): the first holder (watchdog lease 3 s) is stopped until its lease ran out
 * on the server, the same id takes the lock in another process with a fixed 2 s lease and dies,
 * and the first is continued. It must be told RLK_LOST_EXPIRED and send no renewal (one would
 * find its id holding: a reentrant lock's renewal cannot tell the two holds apart), and an
 * unrelated process must get the lock once the dead one's 2 s ran out. Before, the blocking
 * watchdog dropped only failing entries at their deadline: the first renewed the dead process's
 * hold every second, was never told, and the unrelated process got RLK_ERR_BUSY after 10 s (the
 * loop's watchdog already dropped any hold at its deadline).
 *
 *   rlk_fenced_incarnation [case]
 */
#include "check.h"
#include "fixture.h"
#include "aloop.h"
#include "async_procs.h"
#include "tk_util.h"
#include "rlk.h"
#include "rlk_async.h"

#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static rlk_fx_server srv;
static char url[256];

#define GONE_WD_MS 6000         /* renew_token: the first holder's watchdog lease (period 2 s) */
#define SECOND_LEASE_MS 15000   /* renew_token: the second holder's fixed lease */
#define NEST_WD_MS 3000         /* nested_token: the first holder's watchdog lease (period 1 s) */
#define NEST_LEASE_MS 500       /* nested_token: the nested holder's fixed lease */
#define DEADLINE_WD_MS 3000     /* deadline_*: the first holder's watchdog lease (period 1 s) */
#define DEAD_LEASE_MS 2000      /* deadline_*: the second holder's fixed lease; it exits at once */
#define THIRD_WAIT_MS 10000     /* deadline_*: the unrelated process's wait */

/* ---------------------------------------------------------------- child processes */

static atomic_int child_lost;

static void child_on_lost(const char *name, const char *owner, int reason, void *ud)
{
    (void)name;
    (void)owner;
    (void)ud;
    atomic_store(&child_lost, reason);
}

static void child_on_lost_async(int kind, const char *name, const char *owner, int reason,
                                void *ud)
{
    (void)kind;
    child_on_lost(name, owner, reason, ud);
}

/* The first holder on the blocking API: takes the lock name of kind ("fenced": the fenced
 * lock, "lock": the reentrant lock) as owner with a watchdog lease of wd_ms, prints "held
 * <owner> <rc> <token>" (token 0 for the reentrant lock), then, once told of a loss, "lost
 * <reason>". Ends after 60 s at most (the parent kills it sooner). */
static int holder_blocking(const char *u, const char *kind, const char *name, const char *owner,
                           long long wd_ms)
{
    rlk_options o;
    rlk_client *c;
    long long token = 0;
    int rc = 3;

    memset(&o, 0, sizeof o);
    o.url = u;
    o.watchdog_lease_ms = wd_ms;
    if (!(c = rlk_connect(&o)) || rlk_err(c) != RLK_OK)
        return 3;
    rlk_set_lost_callback(c, child_on_lost, NULL);
    if (strcmp(kind, "fenced") == 0) {
        rlk_fenced *f = rlk_fenced_new(c, name);

        if (f && rlk_fenced_set_owner(f, owner) == RLK_OK)
            rc = rlk_fenced_try_lock(f, 0, 0, &token);
    } else {
        rlk_lock *l = rlk_lock_new(c, name);

        if (l && rlk_lock_set_owner(l, owner) == RLK_OK)
            rc = rlk_lock_try_lock(l, 0, 0);
    }
    printf("held %s %d %lld\n", owner, rc, token);
    fflush(stdout);
    for (int i = 0; i < 6000 && !atomic_load(&child_lost); i++)
        usleep(10000);
    printf("lost %d\n", atomic_load(&child_lost));
    fflush(stdout);
    pause();
    return 0;
}

/* The same holder on the loop: task 1 of an async client (its holder id "<uuid>:1"). */
static int holder_async(const char *u, const char *kind, const char *name, long long wd_ms)
{
    int k = strcmp(kind, "fenced") == 0 ? RLK_KIND_FENCED : RLK_KIND_LOCK;
    ap_cl c;
    ap_res a = {0};

    if (ap_cl_open(&c, u, wd_ms, 0, 2000) != 0)
        return 3;
    rlk_async_set_lost_callback(c.ac, child_on_lost_async, NULL);
    if (!AP_REQ(rlk_async_lock(c.ac, k, name, 1, 0, -1, ap_on_res, &a)) ||
        !ap_wait_res(&c, &a, 10000))
        return 3;
    printf("held %s:1 %d %lld\n", rlk_async_uuid(c.ac), a.err,
           k == RLK_KIND_FENCED ? a.value : 0);
    fflush(stdout);
    for (int i = 0; i < 600 && !atomic_load(&child_lost); i++)
        aloop_run_until(c.l, NULL, NULL, 100);
    printf("lost %d\n", atomic_load(&child_lost));
    fflush(stdout);
    pause();
    return 0;
}

/* Takes the lock of kind as owner with a fixed lease, no wait, a fenced lock re-entering with
 * token reentry when it is not 0: prints "<rc> <token>"; the process then ends, its hold left to
 * its lease (a holder that died). */
static int hold_as(const char *u, const char *kind, const char *name, const char *owner,
                   long long lease, long long reentry)
{
    rlk_client *c = rlk_connect_url(u);
    long long token = 0;
    int rc = 3;

    if (c && strcmp(kind, "fenced") == 0) {
        rlk_fenced *f = rlk_fenced_new(c, name);

        if (f && rlk_fenced_set_owner(f, owner) == RLK_OK &&
            (reentry == 0 || rlk_fenced_set_reentry_token(f, reentry) == RLK_OK))
            rc = rlk_fenced_try_lock(f, 0, lease, &token);
    } else if (c) {
        rlk_lock *l = rlk_lock_new(c, name);

        if (l && rlk_lock_set_owner(l, owner) == RLK_OK)
            rc = rlk_lock_try_lock(l, 0, lease);
    }
    printf("%d %lld\n", rc, token);
    fflush(stdout);
    _exit(0);   /* no unlock, no cleanup: it died */
}

/* ---------------------------------------------------------------- the parent's side */

static void child_end(tk_child *ch)
{
    if (ch->pid > 0)
        kill(ch->pid, SIGCONT);
    tk_child_kill(ch);
}

/* The first holder (mode "holder" or "aholder") of name with a watchdog lease of wd_ms: 0 and
 * its owner and token once it holds, else -1 (said). */
static int first_holder(tk_child *a, const char *mode, const char *kind, const char *name,
                        long long wd_ms, char *owner, long long *token)
{
    char wd[24], line[512];
    const char *blocking[] = {"holder", url, kind, name, "web-0", wd, NULL};
    const char *async[] = {"aholder", url, kind, name, wd, NULL};
    int rc = -1;

    snprintf(wd, sizeof wd, "%lld", wd_ms);
    if (tk_child_spawn(a, strcmp(mode, "holder") == 0 ? blocking : async) != 0 ||
        tk_child_read_line(a, line, sizeof line, 15000) != 0 ||
        sscanf(line, "held %299s %d %lld", owner, &rc, token) != 3 || rc != RLK_OK) {
        CHECKF(0, "the first holder did not take %s: '%s'", name, line);
        return -1;
    }
    printf("  the first holder %s holds %s, token %lld\n", owner, name, *token);
    return 0;
}

/* A second process of owner takes name with a fixed lease (re-entering with reentry when not
 * 0): its rc, and its token in *token (-100: no answer). */
static int second_holder(const char *kind, const char *name, const char *owner, long long lease,
                         long long reentry, long long *token)
{
    char ls[24], rs[24], line[256];
    const char *args[] = {"hold-as", url, kind, name, owner, ls, rs, NULL};
    tk_child b;
    int rc = -100;

    snprintf(ls, sizeof ls, "%lld", lease);
    snprintf(rs, sizeof rs, "%lld", reentry);
    if (tk_child_spawn(&b, args) != 0)
        return rc;
    if (tk_child_read_line(&b, line, sizeof line, 15000) != 0 ||
        sscanf(line, "%d %lld", &rc, token) != 2)
        rc = -100;
    tk_child_kill(&b);
    return rc;
}

/* ---------------------------------------------------------------- one id, two holds */

/* The first holder (a child on the API named by mode) stopped, its hold taken from it, the
 * same id holding the lock again with a newer token in another process that then dies; the
 * first continued inside its loss deadline. */
static void renew_gone(const char *mode, const char *name)
{
    char line[512], owner[300] = "";
    long long t1 = 0, t2 = 0, stopped_at, stopped_ms;
    int rc, reason = -1;
    tk_child a;

    if (first_holder(&a, mode, "fenced", name, GONE_WD_MS, owner, &t1) != 0) {
        child_end(&a);
        return;
    }
    REQUIRE(tk_child_stop(&a));
    stopped_at = rlk_fx_now_ms();
    CHECK_INT_EQ(tk_int(&srv, "DEL %s", name), 1);  /* its lease ran out while it was stopped */
    rc = second_holder("fenced", name, owner, SECOND_LEASE_MS, 0, &t2);
    CHECKF(rc == RLK_OK && t2 > t1, "the second holder of the same id: rc %d token %lld (the "
           "first's %lld)", rc, t2, t1);
    stopped_ms = rlk_fx_now_ms() - stopped_at;
    kill(a.pid, SIGCONT);
    printf("  the second holder holds with token %lld; the first was stopped %lld ms\n", t2,
           stopped_ms);
    /* The first's watchdog renews within a period (2 s) of the continue. */
    if (tk_child_read_line(&a, line, sizeof line, 10000) == 0 &&
        sscanf(line, "lost %d", &reason) == 1) {
        printf("  the first holder was told it lost: reason %d\n", reason);
        CHECKF(reason == RLK_LOST_GONE, "the first holder's loss: reason %d, expected "
               "RLK_LOST_GONE (%d)%s", reason, RLK_LOST_GONE,
               reason == RLK_LOST_EXPIRED && stopped_ms > GONE_WD_MS / 2
                   ? "; it was stopped long enough for its loss deadline to pass (a stalled "
                     "machine: this run shows nothing)" : "");
    } else {
        CHECKF(0, "the first holder was not told it lost within 10 s of its continue (its "
               "watchdog renewed the second holder's hold, token %lld)", t2);
    }
    {
        redisReply *r = rlk_fx_command(&srv, "HEXISTS %s %s", name, owner);

        CHECKF(r && r->type == REDIS_REPLY_INTEGER && r->integer == 1,
               "the second holder's hold is gone (its lease is %d ms)", SECOND_LEASE_MS);
        if (r)
            freeReplyObject(r);
    }
    child_end(&a);
    tk_int(&srv, "DEL %s", name);
}

static void renew_token(void)
{
    renew_gone("holder", "finc:gone-b");
}

static void renew_token_async(void)
{
    renew_gone("aholder", "finc:gone-a");
}

/* ---------------------------------------------------------------- one id, one nested hold */

/* The first holder (a child on the API named by mode) re-entered by a second process of its id
 * with its token and a short fixed lease: the first keeps renewing the hold. */
static void nested(const char *mode, const char *name)
{
    char line[512], owner[300] = "";
    long long t1 = 0, t2 = 0, ttl;
    int rc;
    tk_child a;

    if (first_holder(&a, mode, "fenced", name, NEST_WD_MS, owner, &t1) != 0) {
        child_end(&a);
        return;
    }
    rc = second_holder("fenced", name, owner, NEST_LEASE_MS, t1, &t2);
    CHECKF(rc == RLK_OK && t2 == t1, "the nested holder: rc %d token %lld (the enclosing %lld)",
           rc, t2, t1);
    /* Past the first's own first lease and the nested one's: only its renewals keep the hold.
     * A loss report is a line: none may come. */
    line[0] = '\0';
    CHECKF(tk_child_read_line(&a, line, sizeof line, NEST_WD_MS + NEST_WD_MS / 2) != 0,
           "the enclosing holder was told '%s' while a nested holder of its id held with its "
           "token", line);
    {
        redisReply *r = rlk_fx_command(&srv, "HGET %s %s", name, owner);

        CHECKF(r && r->type == REDIS_REPLY_STRING && strcmp(r->str, "2") == 0,
               "the hold's count after %d ms: %s (expected 2: the enclosing hold renewed, the "
               "nested one inside it)", NEST_WD_MS + NEST_WD_MS / 2,
               r && r->type == REDIS_REPLY_STRING ? r->str : "none");
        if (r)
            freeReplyObject(r);
    }
    ttl = tk_int(&srv, "PTTL %s", name);
    CHECKF(ttl > 0, "the hold's PTTL: %lld", ttl);
    child_end(&a);
    tk_int(&srv, "DEL %s", name);
}

static void nested_token(void)
{
    nested("holder", "finc:nest-b");
}

static void nested_token_async(void)
{
    nested("aholder", "finc:nest-a");
}

/* ---------------------------------------------------------------- a hold past its deadline */

/* The first holder (a child on the API named by mode, the lock of kind) stopped until its lease
 * ran out on the server, the same id holding the lock again in another process that then dies;
 * the first continued past its loss deadline. */
static void deadline(const char *mode, const char *kind, const char *name)
{
    char line[512], owner[300] = "";
    long long t1 = 0, t2 = 0, t0, waited;
    int rc, reason = -1;
    rlk_client *c;
    tk_child a;

    if (first_holder(&a, mode, kind, name, DEADLINE_WD_MS, owner, &t1) != 0) {
        child_end(&a);
        return;
    }
    REQUIRE(tk_child_stop(&a));
    /* Its lease (3 s from its last renewal's send) runs out on the server while it is stopped:
     * its loss deadline has passed by then. */
    REQUIRE(tk_key_gone_within(&srv, name, 10000));
    rc = second_holder(kind, name, owner, DEAD_LEASE_MS, 0, &t2);
    CHECKF(rc == RLK_OK, "the second holder of the same id: rc %d", rc);
    kill(a.pid, SIGCONT);
    if (tk_child_read_line(&a, line, sizeof line, 8000) == 0 &&
        sscanf(line, "lost %d", &reason) == 1) {
        printf("  the first holder was told it lost: reason %d\n", reason);
        CHECK_INT_EQ(reason, RLK_LOST_EXPIRED);
    } else {
        CHECKF(0, "the first holder was not told it lost within 8 s (it renewed the second "
               "holder's lock)");
    }
    /* The second died: an unrelated process gets the lock once its 2 s ran out. */
    REQUIRE((c = rlk_connect_url(url)) != NULL);
    t0 = rlk_fx_now_ms();
    if (strcmp(kind, "fenced") == 0) {
        rlk_fenced *f = rlk_fenced_new(c, name);

        REQUIRE(f != NULL);
        if ((rc = rlk_fenced_try_lock(f, THIRD_WAIT_MS, 30000, NULL)) == RLK_OK)
            CHECK_INT_EQ(rlk_fenced_unlock(f), RLK_OK);
        rlk_fenced_free(f);
    } else {
        rlk_lock *l = rlk_lock_new(c, name);

        REQUIRE(l != NULL);
        if ((rc = rlk_lock_try_lock(l, THIRD_WAIT_MS, 30000)) == RLK_OK)
            CHECK_INT_EQ(rlk_lock_unlock(l), RLK_OK);
        rlk_lock_free(l);
    }
    waited = rlk_fx_now_ms() - t0;
    printf("  an unrelated process's try_lock: rc %d after %lld ms (the dead holder's lease: %d "
           "ms)\n", rc, waited, DEAD_LEASE_MS);
    CHECKF(rc == RLK_OK, "an unrelated process: rc %d after %lld ms (the first kept the dead "
           "holder's lock alive)", rc, waited);
    rlk_free(c);
    child_end(&a);
}

static void deadline_fenced(void)
{
    deadline("holder", "fenced", "finc:dl-fb");
}

static void deadline_fenced_async(void)
{
    deadline("aholder", "fenced", "finc:dl-fa");
}

static void deadline_lock(void)
{
    deadline("holder", "lock", "finc:dl-lb");
}

static void deadline_lock_async(void)
{
    deadline("aholder", "lock", "finc:dl-la");
}

int main(int argc, char **argv)
{
    const char *only = argc > 1 ? argv[1] : "all";

    if (argc == 7 && strcmp(argv[1], "holder") == 0)
        return holder_blocking(argv[2], argv[3], argv[4], argv[5], atoll(argv[6]));
    if (argc == 6 && strcmp(argv[1], "aholder") == 0)
        return holder_async(argv[2], argv[3], argv[4], atoll(argv[5]));
    if (argc == 8 && strcmp(argv[1], "hold-as") == 0)
        return hold_as(argv[2], argv[3], argv[4], argv[5], atoll(argv[6]), atoll(argv[7]));
    signal(SIGPIPE, SIG_IGN);
    if (rlk_fx_start(&srv, NULL) != 0 || rlk_fx_url(&srv, -1, url, sizeof url) != 0)
        return 1;
#define CASE(fn) \
    if (strcmp(only, "all") == 0 || strcmp(only, #fn) == 0) \
        RUN_TEST(fn)
    CASE(renew_token);
    CASE(renew_token_async);
    CASE(nested_token);
    CASE(nested_token_async);
    CASE(deadline_fenced);
    CASE(deadline_fenced_async);
    CASE(deadline_lock);
    CASE(deadline_lock_async);
    rlk_fx_stop(&srv);
    return check_summary("fenced_incarnation");
}
