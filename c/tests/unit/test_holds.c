/*
 * test_holds.c - the one hold table of both APIs (runtime/holds.h): records
 * found by (kind, name, owner), made with count 0 and numbered in order,
 * taken, dropped, walked (all, or one name's, dropping as it goes), the
 * gauges, and a table of many records (chained buckets). No server needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "runtime/holds.h"
#include "check.h"

static void test_find_get(void)
{
    rlk_holds *t = rlk_holds_new();
    rlk_holds_rec *a, *b, *c;

    REQUIRE(t != NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "o:1") == NULL);
    a = rlk_holds_get(t, RLK_KIND_LOCK, "n", "o:1");
    REQUIRE(a != NULL);
    CHECK(a->count == 0 && a->lease_ms == 0 && a->lease_ns == 0 && a->token == 0);
    CHECK(a->kind_data == 0 && a->acquired_ns == 0 && a->wd == NULL && a->row == NULL);
    CHECK(a->kind == RLK_KIND_LOCK);
    CHECK_STR_EQ(a->name, "n");
    CHECK_STR_EQ(a->owner, "o:1");
    CHECK(rlk_holds_get(t, RLK_KIND_LOCK, "n", "o:1") == a);     /* found, not made again */
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "o:1") == a);
    /* Another kind, owner or name is another hold. */
    b = rlk_holds_get(t, RLK_KIND_FAIR, "n", "o:1");
    c = rlk_holds_get(t, RLK_KIND_LOCK, "n", "o:2");
    REQUIRE(b != NULL && c != NULL);
    CHECK(b != a && c != a && b != c);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "m", "o:1") == NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "o:") == NULL);
    CHECK(a->id < b->id && b->id < c->id);       /* numbered in the order made */
    /* Fields are the driver's: kept as set. */
    a->count = 2;
    a->token = 7;
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "o:1")->token == 7);
    rlk_holds_free(t);      /* with records left in it */
    rlk_holds_free(NULL);
}

static void test_take_drop(void)
{
    rlk_holds *t = rlk_holds_new();
    rlk_holds_rec *a, *b;
    unsigned long long id;

    REQUIRE(t != NULL);
    a = rlk_holds_get(t, RLK_KIND_READ, "x", "o");
    REQUIRE(a != NULL);
    id = a->id;
    rlk_holds_take(t, a);
    CHECK(rlk_holds_find(t, RLK_KIND_READ, "x", "o") == NULL);
    rlk_holds_take(t, a);                        /* not in it: nothing */
    b = rlk_holds_get(t, RLK_KIND_READ, "x", "o");
    REQUIRE(b != NULL);
    CHECK(b->id > id);                           /* a new record, a new number */
    rlk_holds_take(t, a);                        /* the taken one: b stays */
    CHECK(rlk_holds_find(t, RLK_KIND_READ, "x", "o") == b);
    rlk_holds_rec_free(a);
    rlk_holds_drop(t, b);
    CHECK(rlk_holds_find(t, RLK_KIND_READ, "x", "o") == NULL);
    rlk_holds_drop(t, NULL);
    rlk_holds_take(t, NULL);
    rlk_holds_rec_free(NULL);
    rlk_holds_free(t);
}

/* The record found last is compared first (holds.c): it never answers for another kind,
 * name or owner, nor once it left the table, however it left. */
static void test_last_found(void)
{
    rlk_holds *t = rlk_holds_new();
    rlk_holds_iter it = {0};
    rlk_holds_rec *a, *b, *c, *r;
    long long held, wd;

    REQUIRE(t != NULL);
    a = rlk_holds_get(t, RLK_KIND_LOCK, "n", "uuid:1");
    b = rlk_holds_get(t, RLK_KIND_LOCK, "n", "uuid:2");
    c = rlk_holds_get(t, RLK_KIND_LOCK, "m", "uuid:9");      /* stays: the table is not empty */
    REQUIRE(a != NULL && b != NULL && c != NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:1") == a);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:3") == NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:") == NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "nn", "uuid:1") == NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_FAIR, "n", "uuid:1") == NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:2") == b);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:1") == a);
    /* Dropped by a walk while it is the one found last. */
    while ((r = rlk_holds_next(t, NULL, &it)) != NULL)
        if (r == a)
            rlk_holds_drop(t, r);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:1") == NULL);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:2") == b);
    /* Taken while it is the one found last, then made again. */
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:2") == b);
    rlk_holds_take(t, b);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:2") == NULL);
    rlk_holds_take(t, b);                        /* not in it: the count stays */
    rlk_holds_gauges(t, &held, &wd);
    CHECK_INT_EQ(held, 1);
    r = rlk_holds_get(t, RLK_KIND_LOCK, "n", "uuid:2");
    REQUIRE(r != NULL);
    CHECK(r != b && rlk_holds_find(t, RLK_KIND_LOCK, "n", "uuid:2") == r);
    rlk_holds_rec_free(b);
    rlk_holds_gauges(t, &held, &wd);
    CHECK_INT_EQ(held, 2);
    CHECK(rlk_holds_find(t, RLK_KIND_LOCK, "m", "uuid:9") == c);
    rlk_holds_free(t);
}

static void test_walk_gauges(void)
{
    rlk_holds *t = rlk_holds_new();
    rlk_holds_iter it = {0};
    rlk_holds_rec *r;
    long long held = -1, wd = -1;
    int seen = 0, named = 0, entry;

    REQUIRE(t != NULL);
    rlk_holds_gauges(t, &held, &wd);
    CHECK(held == 0 && wd == 0);
    rlk_holds_gauges(NULL, &held, &wd);
    CHECK(held == 0 && wd == 0);
    CHECK(rlk_holds_next(t, NULL, &it) == NULL);
    for (int k = RLK_KIND_LOCK; k <= RLK_KIND_WRITE; k++) {
        REQUIRE(rlk_holds_get(t, k, "a", "o") != NULL);
        REQUIRE((r = rlk_holds_get(t, k, "b", "o")) != NULL);
        r->wd = &entry;                          /* a driver's watchdog entry */
    }
    rlk_holds_gauges(t, &held, &wd);
    CHECK_INT_EQ(held, 10);
    CHECK_INT_EQ(wd, 5);
    memset(&it, 0, sizeof it);
    while ((r = rlk_holds_next(t, NULL, &it)) != NULL)
        seen++;
    CHECK_INT_EQ(seen, 10);
    /* One name's, dropped as the walk goes (a force unlock's forget). */
    memset(&it, 0, sizeof it);
    while ((r = rlk_holds_next(t, "b", &it)) != NULL) {
        CHECK_STR_EQ(r->name, "b");
        rlk_holds_drop(t, r);
        named++;
    }
    CHECK_INT_EQ(named, 5);
    rlk_holds_gauges(t, &held, &wd);
    CHECK(held == 5 && wd == 0);
    memset(&it, 0, sizeof it);
    CHECK(rlk_holds_next(t, "b", &it) == NULL);
    rlk_holds_free(t);
}

/* More records than buckets: chains of several, each found, then all dropped. */
static void test_many(void)
{
    enum { N = 20000 };
    rlk_holds *t = rlk_holds_new();
    rlk_holds_iter it = {0};
    rlk_holds_rec *r;
    char name[32];
    long long held, wd;
    int bad = 0;

    REQUIRE(t != NULL);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "lock:%d", i);
        if (!(r = rlk_holds_get(t, i % 5, name, "uuid:1")))
            bad++;
        else
            r->count = i;
    }
    CHECK_INT_EQ(bad, 0);
    rlk_holds_gauges(t, &held, &wd);
    CHECK_INT_EQ(held, N);
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "lock:%d", i);
        r = rlk_holds_find(t, i % 5, name, "uuid:1");
        bad += !r || r->count != i || rlk_holds_find(t, (i + 1) % 5, name, "uuid:1") != NULL;
    }
    CHECK_INT_EQ(bad, 0);
    while ((r = rlk_holds_next(t, NULL, &it)) != NULL)
        rlk_holds_drop(t, r);
    rlk_holds_gauges(t, &held, &wd);
    CHECK_INT_EQ(held, 0);
    rlk_holds_free(t);
}

int main(void)
{
    RUN_TEST(test_find_get);
    RUN_TEST(test_take_drop);
    RUN_TEST(test_last_found);
    RUN_TEST(test_walk_gauges);
    RUN_TEST(test_many);
    return check_summary("test_holds");
}
