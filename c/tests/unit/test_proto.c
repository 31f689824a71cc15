/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pure parts both APIs share (the settle rules are test_acq.c's): the
 * kinds' reply readers (kinds/proto.h), on hand-made replies, and the
 * building of a call with a handle's keys made once: the same KEYS and ARGV,
 * byte for byte, as built per call; and a call's plan (its strings read once):
 * the same call as its strings read every time, from threads racing to publish it,
 * and beyond the plans' table.
 */
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kinds/handle.h"
#include "kinds/lock.h"
#include "client/scripts.h"
#include "kinds/proto.h"
#include "runtime/fam_hold.h"

static void test_readers(void)
{
    redisReply nil = {.type = REDIS_REPLY_NIL}, i5 = {.type = REDIS_REPLY_INTEGER, .integer = 5};
    redisReply m3 = {.type = REDIS_REPLY_INTEGER, .integer = -3};
    redisReply one = {.type = REDIS_REPLY_INTEGER, .integer = 1};
    redisReply zero = {.type = REDIS_REPLY_INTEGER, .integer = 0};
    redisReply two = {.type = REDIS_REPLY_INTEGER, .integer = 2};
    redisReply *q2[2] = {&i5, &one}, *q3[3] = {&i5, &zero, &one}, *t1[1] = {&i5};
    redisReply queue2 = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = q2};
    redisReply queue3 = {.type = REDIS_REPLY_ARRAY, .elements = 3, .element = q3};
    redisReply tok = {.type = REDIS_REPLY_ARRAY, .elements = 1, .element = t1};
    rlk_proto_outcome o;

    CHECK_INT_EQ(rlk_proto_read_acquire(&nil, 0, &o), RLK_PROTO_ACQUIRED);
    CHECK_INT_EQ(rlk_proto_read_acquire(&i5, 0, &o), RLK_PROTO_BUSY);
    CHECK_INT_EQ(o.value, 5);
    CHECK_INT_EQ(rlk_proto_read_acquire(&queue2, 0, &o), RLK_PROTO_BUSY);
    CHECK_INT_EQ(o.first, 1);
    CHECK_INT_EQ(o.in_delay, 0);
    CHECK_INT_EQ(rlk_proto_read_acquire(&queue3, 0, &o), RLK_PROTO_BUSY);
    CHECK_INT_EQ(o.first, 0);
    CHECK_INT_EQ(o.in_delay, 1);
    CHECK_INT_EQ(rlk_proto_read_acquire(&tok, 1, &o), RLK_PROTO_ACQUIRED);
    CHECK_INT_EQ(o.value, 5);
    CHECK_INT_EQ(rlk_proto_read_acquire(&nil, 1, &o), RLK_PROTO_BAD);
    CHECK_INT_EQ(rlk_proto_read_sem(&nil, &o), RLK_PROTO_ACQUIRED);
    CHECK_INT_EQ(rlk_proto_read_sem(&m3, &o), RLK_PROTO_BUSY);
    CHECK_INT_EQ(o.value, -3);
    CHECK_INT_EQ(rlk_proto_read_sem(&queue2, &o), RLK_PROTO_BUSY);
    CHECK_INT_EQ(o.first, 1);
    CHECK_INT_EQ(rlk_proto_read_psem(&nil, 1, &o), RLK_PROTO_BUSY);
    CHECK_INT_EQ(o.value, -1);
    CHECK_INT_EQ(rlk_proto_read_psem(&queue2, 2, &o), RLK_PROTO_BUSY);
    CHECK_INT_EQ(o.value, 1);
    CHECK_INT_EQ(rlk_proto_read_proclaim(&one, &o), RLK_PROTO_ACQUIRED);
    CHECK_INT_EQ(rlk_proto_read_proclaim(&zero, &o), RLK_PROTO_REFUSED);
    CHECK_INT_EQ(o.err, RLK_ERR_NOT_OWNER);
    CHECK_INT_EQ(rlk_fam_release_read(&nil), RLK_REL_NOT_OWNER);
    CHECK_INT_EQ(rlk_fam_release_read(&zero), RLK_REL_STILL_HELD);
    CHECK_INT_EQ(rlk_fam_release_read(&two), RLK_REL_RELEASED);
    CHECK_INT_EQ(rlk_fam_release_read(&i5), RLK_REL_ERROR);
}

/* The scripts' refusals, read one way by both APIs. */
static void test_refusal(void)
{
    CHECK_INT_EQ(rlk_proto_refusal("RLK_REENTRY the lock is non-reentrant"), RLK_ERR_REENTRY);
    CHECK_INT_EQ(rlk_proto_refusal("RLK_UPGRADE owner holds a read"), RLK_ERR_UPGRADE);
    CHECK_INT_EQ(rlk_proto_refusal("ERR script: RLK_UPGRADE"), RLK_ERR_UPGRADE);
    CHECK_INT_EQ(rlk_proto_refusal("RLK_REENTRYX"), 0);
    CHECK_INT_EQ(rlk_proto_refusal("XRLK_REENTRY"), 0);
    CHECK_INT_EQ(rlk_proto_refusal("RLK_WRONGTYPE"), 0);
    CHECK_INT_EQ(rlk_proto_refusal("RLK_HELD permit id 1 is held already"), RLK_PROTO_HELD);
    CHECK_INT_EQ(rlk_proto_refusal("RLK_HELDX"), 0);
    CHECK_INT_EQ(rlk_proto_refusal(NULL), 0);
}

/* pc (then opt) on name, with the keys of base (made by its kind) and without: the same. */
static void check_same_call(const rlk_fam_base *base, const char *script, const char *args,
                            const char *opt, const rlk_proto_argvals *v)
{
    rlk_proto_call pc = {script, args};
    rlk_proto_built with, per;
    int no = 0;

    CHECK_INT_EQ(rlk_proto_build_with(&pc, opt, base->keys_of, base->key, base->name, v, &with),
                 0);
    CHECK_INT_EQ(rlk_proto_build(&pc, base->name, v, &per), 0);
    if (opt)
        no = rlk_proto_keys_list(&per.ks, opt, per.keys + per.nkeys, RLK_PROTO_KEYS - per.nkeys);
    CHECK_INT_EQ(with.nkeys, per.nkeys + no);
    for (int i = 0; i < with.nkeys && i < per.nkeys + no; i++)
        CHECK_STR_EQ(with.keys[i], per.keys[i]);
    CHECK_INT_EQ(with.nargs, per.nargs);
    for (int i = 0; i < with.nargs && i < per.nargs; i++) {
        CHECK_INT_EQ((int)with.av.len[i], (int)per.av.len[i]);
        CHECK_INT_EQ(memcmp(with.av.v[i], per.av.v[i], per.av.len[i]), 0);
    }
    rlk_proto_built_free(&with);
    rlk_proto_built_free(&per);
}

static void test_build_with_keys(void)
{
    static const struct { const char *names, *roles, *script, *args, *opt; } calls[] = {
        {"reentrant", "channel waiters grant delay", "reentrant/acquire",
         "lease_ms owner ticket delay_ms", "delay"},
        {"reentrant", "channel waiters grant delay", "reentrant/release",
         "owner lease_ms claim_ms publish", NULL},
        {"reentrant", "channel waiters grant delay", "reentrant/cancel", "ticket claim_ms publish",
         NULL},
        {"nonreentrant", "channel", "reentrant/force_release", "publish named", "delay"},
        {"fair", "channel queue timeouts", "fair/acquire", "lease_ms owner wait_ms", NULL},
        {"fenced", "channel token", "fenced/release", "owner lease_ms publish", NULL},
        {"rwlock", "channel prefix waiters grant", "rwlock/read_release",
         "owner lease_ms claim_ms publish", NULL},
        {"rwlock", "channel prefix waiters grant", "rwlock/force_release", "mode publish", NULL},
        {"semaphore", "channel waiters grant", "semaphore/acquire", "n ticket", NULL},
        {"elect", "token state channel lock_channel", "elect/resign",
         "owner lease_ms publish secret", NULL},
        {"elect", "token state channel lock_channel", "reentrant/release", "owner", NULL},
    };
    static const char *const names[] = {"lk", "a{b}c"};
    static const long long nums[] = {0, 1, -1, 30000, LLONG_MAX, LLONG_MIN};

    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++)
        for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
            rlk_fam_base base = {.name = (char *)names[n]};
            size_t nn = sizeof nums / sizeof nums[0];
            long long x = nums[i % nn], y = nums[(i + 1) % nn];   /* the ticket: another */
            rlk_proto_argvals v = {.lease_ms = x, .owner = "u:1", .ticket = y, .delay_ms = x,
                                   .publish = "publish", .n = x, .secret = "s"};

            CHECK_INT_EQ(rlk_handle_keys(&base, calls[i].names, calls[i].roles), 1);
            check_same_call(&base, calls[i].script, calls[i].args, calls[i].opt, &v);
            for (int k = 0; k < RLK_FAM_KEYS; k++)
                free(base.key[k]);
        }
}

/* The numbers of ARGV as "%lld" writes them. */
static void test_args_numbers(void)
{
    static const long long nums[] = {0, 7, -7, 1000000000000LL, LLONG_MAX, LLONG_MIN};

    for (size_t i = 0; i < sizeof nums / sizeof nums[0]; i++) {
        rlk_proto_argvals v = {.lease_ms = nums[i], .ticket = nums[i], .term = nums[i],
                               .delay_ms = nums[i], .n = nums[i], .ttl_ms = nums[i],
                               .wait_ms = nums[i]};
        rlk_proto_argv av;
        char want[32];

        snprintf(want, sizeof want, "%lld", nums[i]);
        CHECK_INT_EQ(rlk_proto_args("lease_ms ticket term delay_ms n", &v, &av), 5);
        for (int k = 0; k < 5; k++) {
            CHECK_STR_EQ(av.v[k], want);
            CHECK_INT_EQ((int)av.len[k], (int)strlen(want));
        }
        CHECK_INT_EQ(rlk_proto_args("ttl wait_ms", &v, &av), 2);
        CHECK_STR_EQ(av.v[0], want);
        if (nums[i])
            CHECK_STR_EQ(av.v[1], want);
    }
}

/* The reentrant lock's usual calls go in their short forms (scripts/reentrant/: acquire without
 * the ticket 0, release without the claim window and publish): Redis builds KEYS and ARGV for
 * every call, and each argument fewer is server time. Any other value is sent in full. */
static void test_short_forms(void)
{
    rlk_proto_argvals v = {.lease_ms = 30000, .owner = "u:1", .ticket = 0, .publish = "publish"};
    rlk_proto_argv av;
    const rlk_proto *rows[] = {&rlk_lock_row, &rlk_lock_spin_row};

    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        v.ticket = 0;
        CHECK_INT_EQ(rlk_proto_args(rows[i]->acquire_args, &v, &av), 2);
        CHECK_STR_EQ(av.v[0], "30000");
        CHECK_STR_EQ(av.v[1], "u:1");
        v.ticket = 7;
        CHECK_INT_EQ(rlk_proto_args(rows[i]->acquire_args, &v, &av), 3);
        CHECK_STR_EQ(av.v[2], "7");
        v.publish = "publish";
        CHECK_INT_EQ(rlk_proto_args(rows[i]->release_args, &v, &av), 2);
        CHECK_STR_EQ(av.v[0], "u:1");
        CHECK_STR_EQ(av.v[1], "30000");
        v.publish = "spublish";
        CHECK_INT_EQ(rlk_proto_args(rows[i]->release_args, &v, &av), 4);
        CHECK_STR_EQ(av.v[2], RLK_FAM_CLAIM_MS_STR);
        CHECK_STR_EQ(av.v[3], "spublish");
    }
    /* With a lock-delay the acquire names its delay_ms after the ticket: all four go. */
    v.ticket = 0;
    CHECK_INT_EQ(rlk_proto_args(rlk_lock_delay_row.acquire_args, &v, &av), 4);
    CHECK_STR_EQ(av.v[2], "0");
}

/* A call built as its strings read every time (the header's roles, then opt; the ARGV names):
 * 1 when b (built from a plan) is the same. */
static int same_as_strings(const rlk_proto_call *pc, const char *opt, const char *name,
                           const rlk_proto_argvals *v, const rlk_proto_built *b)
{
    rlk_proto_keys ks;
    const char *keys[RLK_PROTO_KEYS];
    rlk_proto_argv av;
    int nk, no = 0, na, same;

    rlk_proto_keys_init(&ks, "reentrant", name);
    nk = rlk_proto_keys_list(&ks, rlk_script_key_roles(pc->script), keys, RLK_PROTO_KEYS);
    if (opt && nk >= 0)
        no = rlk_proto_keys_list(&ks, opt, keys + nk, RLK_PROTO_KEYS - nk);
    na = rlk_proto_args(pc->args, v, &av);
    same = nk >= 0 && no >= 0 && b->nkeys == nk + no && b->nargs == na;
    for (int i = 0; same && i < b->nkeys; i++)
        same = strcmp(b->keys[i], keys[i]) == 0;
    for (int i = 0; same && i < na; i++)
        same = b->av.len[i] == av.len[i] && memcmp(b->av.v[i], av.v[i], av.len[i]) == 0;
    rlk_proto_keys_free(&ks);
    return same;
}

static const rlk_proto_call plan_calls[] = {
    {"reentrant/acquire", "lease_ms owner ticket? delay_ms"},
    {"reentrant/acquire", "lease_ms owner ticket?"},
    {"reentrant/release", "owner lease_ms claim_ms? publish?"},
    {"reentrant/cancel", "ticket claim_ms publish held owner"},
    {"reentrant/renew", "lease_ms owner first"},
};
static const char *const plan_opts[] = {"delay", NULL, NULL, "who", NULL};

/* Builds call i % 5 with values of n: 1 when it is the same as its strings read. */
static int plan_build_once(size_t i, long long n)
{
    rlk_proto_argvals v = {.lease_ms = n, .owner = "u:1", .ticket = n % 3, .delay_ms = n,
                           .publish = n % 2 ? "publish" : "spublish"};
    size_t k = i % (sizeof plan_calls / sizeof plan_calls[0]);
    rlk_proto_built b;
    int ok = rlk_proto_build_with(&plan_calls[k], plan_opts[k], NULL, NULL, "lk", &v, &b) == 0 &&
             same_as_strings(&plan_calls[k], plan_opts[k], "lk", &v, &b);

    rlk_proto_built_free(&b);
    return ok;
}

static void *plan_thread(void *arg)
{
    long long t = (long long)(intptr_t)arg, bad = 0;

    for (long long n = 0; n < 4000; n++)
        bad += !plan_build_once((size_t)(n + t), n * 7 + t);
    return (void *)(intptr_t)bad;
}

/* The first builds of each call race to read and publish its plan: every build is the same
 * call as its strings read. Then calls whose strings are copies (other addresses: plans of
 * their own) beyond the table's 256 slots: each still built right, read every time. */
static void test_plans(void)
{
    pthread_t th[4];
    static char *copies[300];   /* reachable to the end: a plan may name one */
    const char *script = "reentrant/release";

    for (int i = 0; i < 4; i++)
        CHECK_INT_EQ(pthread_create(&th[i], NULL, plan_thread, (void *)(intptr_t)i), 0);
    for (int i = 0; i < 4; i++) {
        void *bad = (void *)1;

        CHECK_INT_EQ(pthread_join(th[i], &bad), 0);
        CHECK_INT_EQ((int)(intptr_t)bad, 0);
    }
    for (int i = 0; i < 300; i++) {
        rlk_proto_argvals v = {.lease_ms = i, .owner = "u:2", .publish = "spublish"};
        rlk_proto_built b;

        copies[i] = strdup(i % 2 ? "owner lease_ms claim_ms? publish?" : "owner lease_ms");
        CHECK(copies[i] != NULL);
        rlk_proto_call pc = {script, copies[i]};
        CHECK_INT_EQ(rlk_proto_build_with(&pc, NULL, NULL, NULL, "lk", &v, &b), 0);
        CHECK(same_as_strings(&pc, NULL, "lk", &v, &b));
        CHECK_INT_EQ(b.nargs, i % 2 ? 4 : 2);
        rlk_proto_built_free(&b);
    }
    CHECK(plan_build_once(0, 30000) && plan_build_once(3, 1));
    {   /* a name no script takes reads no plan */
        rlk_proto_call pc = {"reentrant/acquire", "lease_ms nonsense"};
        rlk_proto_argvals v = {.owner = "u:1"};
        rlk_proto_built b;

        CHECK_INT_EQ(rlk_proto_build_with(&pc, NULL, NULL, NULL, "lk", &v, &b), -1);
        rlk_proto_built_free(&b);
    }
}

int main(void)
{
    RUN_TEST(test_readers);
    RUN_TEST(test_refusal);
    RUN_TEST(test_build_with_keys);
    RUN_TEST(test_args_numbers);
    RUN_TEST(test_short_forms);
    RUN_TEST(test_plans);
    return check_summary("test_proto");
}
