/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pure parts both APIs share: the one settle rule of a lost acquire's
 * reply (runtime/fam_settle.h rlk_fam_settle_rule: adopt one hold, give back
 * the surplus the server counts beyond the client's, at most 8) and the
 * kinds' reply readers (kinds/proto.h), on hand-made replies.
 */
#include <string.h>

#include "check.h"
#include "kinds/proto.h"
#include "runtime/fam_hold.h"
#include "runtime/fam_settle.h"

static void test_settle_rule(void)
{
    rlk_fam_settled d;

    d = rlk_fam_settle_rule(0, 0, 1);       /* it did not run */
    CHECK_INT_EQ(d.ran, 0);
    CHECK_INT_EQ(d.adopt, 0);
    CHECK_INT_EQ(d.give_back, 0);
    d = rlk_fam_settle_rule(2, 1, 1);       /* fewer than known: not run either */
    CHECK_INT_EQ(d.ran + d.adopt + d.give_back, 0);
    d = rlk_fam_settle_rule(0, 1, 1);       /* it ran: adopt, nothing beyond */
    CHECK_INT_EQ(d.ran, 1);
    CHECK_INT_EQ(d.adopt, 1);
    CHECK_INT_EQ(d.give_back, 0);
    d = rlk_fam_settle_rule(1, 4, 1);       /* two earlier lost acquires ran too */
    CHECK_INT_EQ(d.adopt, 1);
    CHECK_INT_EQ(d.give_back, 2);
    d = rlk_fam_settle_rule(0, 50, 1);      /* at most 8 given back */
    CHECK_INT_EQ(d.give_back, RLK_FAM_GIVE_BACK_MAX);
    d = rlk_fam_settle_rule(0, 3, 0);       /* ran, not adoptable: all of it given back */
    CHECK_INT_EQ(d.ran, 1);
    CHECK_INT_EQ(d.adopt, 0);
    CHECK_INT_EQ(d.give_back, 3);
}

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
    CHECK_INT_EQ(rlk_proto_refusal(NULL), 0);
}

int main(void)
{
    RUN_TEST(test_settle_rule);
    RUN_TEST(test_readers);
    RUN_TEST(test_refusal);
    return check_summary("test_proto");
}
