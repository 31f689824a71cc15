/*
 * test_sub_rule.c - the subscriber's pure rules (runtime/sub.h,
 * sub_rule.c), followed by both subscribers, the blocking thread and the
 * async engine's pub/sub: what a reply on a pub/sub connection is (global
 * and sharded forms, either case, a payload that is not a string, the
 * shapes a subscriber ignores), the command of each mode, which channels
 * need a SUBSCRIBE and when one is confirmed, a refusal naming the slot's
 * new owner, and what a message means (plain and a kind's grant rule). No
 * server needed.
 */
#include <string.h>

#include <hiredis/hiredis.h>

#include "rlk.h"
#include "kinds/lock.h"
#include "runtime/sub.h"
#include "check.h"

static redisReply rs(int type, const char *s)
{
    redisReply r = {.type = type, .str = (char *)s, .len = s ? strlen(s) : 0};

    return r;
}

/* A three-element push: kind, channel, third (a string or an integer). */
static int classify3(const char *kind, const char *chan, redisReply third, rlk_sub_frame *f)
{
    redisReply k = rs(REDIS_REPLY_STRING, kind), c = rs(REDIS_REPLY_STRING, chan);
    redisReply *el[3] = {&k, &c, &third};
    redisReply a = {.type = REDIS_REPLY_ARRAY, .elements = 3, .element = el};

    return rlk_sub_classify(&a, f);
}

static void test_classify(void)
{
    static const struct {
        const char *kind;
        int want, sharded;
    } cases[] = {
        {"message", RLK_SUB_FRAME_MESSAGE, 0},     {"smessage", RLK_SUB_FRAME_MESSAGE, 1},
        {"subscribe", RLK_SUB_FRAME_SUBSCRIBE, 0}, {"ssubscribe", RLK_SUB_FRAME_SUBSCRIBE, 1},
        {"unsubscribe", RLK_SUB_FRAME_UNSUBSCRIBE, 0},
        {"sunsubscribe", RLK_SUB_FRAME_UNSUBSCRIBE, 1},
        {"SMESSAGE", RLK_SUB_FRAME_MESSAGE, 1},    {"pmessage", RLK_SUB_FRAME_OTHER, 0},
        {"psubscribe", RLK_SUB_FRAME_OTHER, 0},    {"messages", RLK_SUB_FRAME_OTHER, 0},
    };
    rlk_sub_frame f;

    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int kind = classify3(cases[i].kind, "ch{x}", rs(REDIS_REPLY_STRING, "0"), &f);

        CHECKF(kind == cases[i].want && f.kind == kind, "%s: kind %d, want %d", cases[i].kind,
               kind, cases[i].want);
        if (kind != RLK_SUB_FRAME_OTHER) {
            CHECKF(f.sharded == cases[i].sharded, "%s: sharded %d", cases[i].kind, f.sharded);
            CHECK(f.chan_len == 5 && memcmp(f.chan, "ch{x}", 5) == 0);
        }
    }
    /* A message's payload; one that is not a string is NULL (the rule reads it as NULL). */
    CHECK_INT_EQ(classify3("message", "c", rs(REDIS_REPLY_STRING, "1234"), &f), RLK_SUB_FRAME_MESSAGE);
    CHECK(f.payload && f.len == 4 && memcmp(f.payload, "1234", 4) == 0);
    {
        redisReply n = {.type = REDIS_REPLY_INTEGER, .integer = 1};

        CHECK_INT_EQ(classify3("message", "c", n, &f), RLK_SUB_FRAME_MESSAGE);
        CHECK(f.payload == NULL && f.len == 0);
        CHECK_INT_EQ(classify3("subscribe", "c", n, &f), RLK_SUB_FRAME_SUBSCRIBE);
    }
    /* Errors, PONGs and shapes a subscriber ignores. */
    {
        redisReply e = rs(REDIS_REPLY_ERROR, "MOVED 1 h:1"), st = rs(REDIS_REPLY_STATUS, "PONG");
        redisReply p = rs(REDIS_REPLY_STRING, "pong"), empty = rs(REDIS_REPLY_STRING, "");
        redisReply *pel[2] = {&p, &empty};
        redisReply pa = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = pel};
        redisReply m = rs(REDIS_REPLY_STRING, "message"), c = rs(REDIS_REPLY_STRING, "c");
        redisReply *two[2] = {&m, &c};
        redisReply short2 = {.type = REDIS_REPLY_ARRAY, .elements = 2, .element = two};
        redisReply n = {.type = REDIS_REPLY_INTEGER, .integer = 3};
        redisReply *badch[3] = {&m, &n, &c};
        redisReply bad = {.type = REDIS_REPLY_ARRAY, .elements = 3, .element = badch};

        CHECK_INT_EQ(rlk_sub_classify(&e, &f), RLK_SUB_FRAME_ERROR);
        CHECK_INT_EQ(rlk_sub_classify(&st, &f), RLK_SUB_FRAME_PONG);
        CHECK_INT_EQ(rlk_sub_classify(&pa, &f), RLK_SUB_FRAME_PONG);
        CHECK_INT_EQ(rlk_sub_classify(&short2, &f), RLK_SUB_FRAME_OTHER);
        CHECK_INT_EQ(rlk_sub_classify(&bad, &f), RLK_SUB_FRAME_OTHER);
        CHECK_INT_EQ(rlk_sub_classify(&n, &f), RLK_SUB_FRAME_OTHER);
    }
}

static void test_modes(void)
{
    CHECK_STR_EQ(rlk_sub_command(RLK_PUBSUB_GLOBAL, 1), "SUBSCRIBE");
    CHECK_STR_EQ(rlk_sub_command(RLK_PUBSUB_GLOBAL, 0), "UNSUBSCRIBE");
    CHECK_STR_EQ(rlk_sub_command(RLK_PUBSUB_SHARDED, 1), "SSUBSCRIBE");
    CHECK_STR_EQ(rlk_sub_command(RLK_PUBSUB_SHARDED, 0), "SUNSUBSCRIBE");
    CHECK(rlk_sub_per_slot(RLK_PUBSUB_SHARDED, 1));
    CHECK(!rlk_sub_per_slot(RLK_PUBSUB_SHARDED, 0));    /* one server: one connection */
    CHECK(!rlk_sub_per_slot(RLK_PUBSUB_GLOBAL, 1));     /* PUBLISH reaches every node */
}

static void test_channel_state(void)
{
    CHECK(rlk_sub_wanted(1, 0));
    CHECK(!rlk_sub_wanted(1, 1));       /* SUBSCRIBE already sent */
    CHECK(!rlk_sub_wanted(0, 0));       /* nobody listens */
    CHECK(rlk_sub_confirmed(1, 0));
    CHECK(!rlk_sub_confirmed(1, 1));    /* an older answer still to come */
    CHECK(!rlk_sub_confirmed(0, 0));    /* the last command was UNSUBSCRIBE */
}

static void test_moved(void)
{
    char host[64];
    int slot = -1, port = -1;

    CHECK(rlk_sub_moved("MOVED 866 [::1]:7001", &slot, host, sizeof host, &port));
    CHECK(slot == 866 && port == 7001 && strcmp(host, "::1") == 0);
    CHECK(!rlk_sub_moved("ASK 866 h:7001", &slot, host, sizeof host, &port));
    CHECK(!rlk_sub_moved("NOPERM this user has no permissions", &slot, host, sizeof host, &port));
    CHECK(!rlk_sub_moved(NULL, &slot, host, sizeof host, &port));
}

/* A rule that reads "g<head>:<next>" as a grant, for the meaning's plumbing. */
static int test_grant_meaning(const char *payload, size_t len, long long *head, long long *next)
{
    (void)len;
    if (payload && payload[0] == 'g') {
        *head = payload[1] - '0';
        *next = payload[3] - '0';
        return RLK_SUB_MSG_GRANT;
    }
    return RLK_SUB_MSG_ALL;
}

static void test_meaning(void)
{
    static const rlk_sub_rule grant = {test_grant_meaning};
    long long head = -1, next = -1;

    CHECK_INT_EQ(rlk_sub_meaning(NULL, "0", 1, &head, &next), RLK_SUB_MSG_ONE);
    CHECK(head == 0 && next == 0);
    CHECK_INT_EQ(rlk_sub_meaning(&rlk_sub_rule_plain, "1", 1, &head, &next), RLK_SUB_MSG_ALL);
    CHECK_INT_EQ(rlk_sub_meaning(NULL, NULL, 0, &head, &next), RLK_SUB_MSG_ALL);
    CHECK_INT_EQ(rlk_sub_meaning(&grant, "g3:4", 4, &head, &next), RLK_SUB_MSG_GRANT);
    CHECK(head == 3 && next == 4);
    CHECK(rlk_sub_grants(&grant, "g3:4", 4, 3, 0, NULL));
    CHECK(!rlk_sub_grants(&grant, "g3:4", 4, 4, 0, NULL));    /* named second: not granted */
    CHECK(!rlk_sub_grants(&rlk_sub_rule_plain, "0", 1, 0, 0, NULL));
}

/* The reentrant lock's grants (kinds/lock.c): t * 2^26 + next reserves for t; "<t * 2^26 +
 * 2^25>[:<wait>] <owner>" with t a wake ticket (>= 2^25) is a held grant of t for that wait of
 * owner (lib/hand_over_held), taken only by a waiter with all three; a plain ticket's grant
 * naming the wake ticket 2^25 second stays a grant; a bare held value (no owner) is claimed as a
 * grant. */
static void test_lock_grants(void)
{
    const rlk_sub_rule *r = &rlk_lock_sub_rule;
    const char *held = "2251800182784000 u-1:7";    /* 33554437 * 2^26 + 2^25, owner u-1:7 */
    const char *w = "2251800182784000:42 u-1:7";    /* the same, wait 42 */
    long long head, next;

    CHECK_INT_EQ(rlk_sub_meaning(r, held, strlen(held), &head, &next), RLK_SUB_MSG_HELD);
    CHECK(head == 33554437 && next == 16);
    CHECK(rlk_sub_held_for(held, strlen(held), next, 0, "u-1:7"));
    CHECK(!rlk_sub_held_for(held, strlen(held), next, 0, "u-1:70"));
    CHECK(!rlk_sub_held_for(held, strlen(held), next, 0, "u-1:"));
    CHECK(!rlk_sub_held_for(held, strlen(held), next, 0, NULL));
    CHECK(!rlk_sub_held_for(held, strlen(held), next, 42, "u-1:7"));  /* names no wait */
    CHECK_INT_EQ(rlk_sub_grants(r, held, strlen(held), 33554437, 0, "u-1:7"), RLK_SUB_MSG_HELD);
    /* the same ticket drawn by another holder (a task of the same client): not its grant */
    CHECK_INT_EQ(rlk_sub_grants(r, held, strlen(held), 33554437, 0, "u-1:8"), 0);
    CHECK_INT_EQ(rlk_sub_grants(r, held, strlen(held), 33554432, 0, "u-1:7"), 0);
    /* a grant that names its wait: taken by that wait of that owner only; a later wait of the same
     * holder id that drew the same ticket is not the one granted */
    CHECK_INT_EQ(rlk_sub_meaning(r, w, strlen(w), &head, &next), RLK_SUB_MSG_HELD);
    CHECK(head == 33554437 && next == 16);
    CHECK_INT_EQ(rlk_sub_grants(r, w, strlen(w), 33554437, 42, "u-1:7"), RLK_SUB_MSG_HELD);
    CHECK_INT_EQ(rlk_sub_grants(r, w, strlen(w), 33554437, 43, "u-1:7"), 0);
    CHECK_INT_EQ(rlk_sub_grants(r, w, strlen(w), 33554437, 4, "u-1:7"), 0);
    CHECK_INT_EQ(rlk_sub_grants(r, w, strlen(w), 33554437, 0, "u-1:7"), 0);
    CHECK_INT_EQ(rlk_sub_grants(r, w, strlen(w), 33554437, 42, "u-1:8"), 0);
    CHECK_INT_EQ(rlk_sub_grants(r, w, strlen(w), 33554437, 42, "42 u-1:7"), 0);
    CHECK_INT_EQ(rlk_sub_grants(r, w, strlen(w), 33554437, 18446744073709551615ULL, "u-1:7"), 0);
    CHECK_INT_EQ(rlk_sub_meaning(r, "2251800182784000:42", 19, &head, &next), RLK_SUB_MSG_ALL);
    CHECK_INT_EQ(rlk_sub_meaning(r, "2251800182784000:42 ", 20, &head, &next), RLK_SUB_MSG_HELD);
    CHECK_INT_EQ(rlk_sub_grants(r, "2251800182784000:42 ", 20, 33554437, 42, ""), 0);
    CHECK_INT_EQ(rlk_sub_meaning(r, "2251800182784000 ", 17, &head, &next), RLK_SUB_MSG_ALL);
    CHECK_INT_EQ(rlk_sub_meaning(r, "2251800182784006 u-1:7", 22, &head, &next), RLK_SUB_MSG_ALL);
    CHECK_INT_EQ(rlk_sub_meaning(r, "2251800182784000", 16, &head, &next), RLK_SUB_MSG_GRANT);
    CHECK(head == 33554437);
    CHECK_INT_EQ(rlk_sub_meaning(r, "2251800182784006", 16, &head, &next), RLK_SUB_MSG_GRANT);
    CHECK(head == 33554437 && next == 33554438);
    CHECK_INT_EQ(rlk_sub_grants(r, "2251800182784006", 16, 33554437, 0, NULL), RLK_SUB_MSG_GRANT);
    CHECK_INT_EQ(rlk_sub_meaning(r, "369098752", 9, &head, &next), RLK_SUB_MSG_GRANT);
    CHECK(head == 5 && next == 33554432);
    CHECK_INT_EQ(rlk_sub_meaning(r, "0", 1, &head, &next), RLK_SUB_MSG_ONE);
}

int main(void)
{
    RUN_TEST(test_classify);
    RUN_TEST(test_modes);
    RUN_TEST(test_channel_state);
    RUN_TEST(test_moved);
    RUN_TEST(test_meaning);
    RUN_TEST(test_lock_grants);
    return check_summary("test_sub_rule");
}
