/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The wait-for graph's builder (kinds/waitgraph.h), pure: names with their
 * holders and waiters in, edges and cycles out. Deadlocks (ABBA by thread,
 * by ticket, three names, a mix of both) against controls that must find
 * none: the second waiter waits for a third name, another thread of the
 * same client waits, a client waits for what it holds itself; two clients
 * of one client number both get the number's tickets.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kinds/names.h"
#include "kinds/waitgraph.h"

#define U1 "0a1b2c3d-0000-4000-8000-000000000001"
#define U2 "7f001234-0000-4000-8000-000000000002"
#define U3 "12345678-0000-4000-8000-000000000003"

#define P(id) {id, RLK_WG_THREAD}
#define NAME(n, k, h, w) {n, k, h, sizeof h / sizeof h[0], w, sizeof w / sizeof w[0]}

static char tickets[4][32];

/* A ticket of the client uuid (its number * 1024 + r). */
static const char *ticket(int i, const char *uuid, int r)
{
    snprintf(tickets[i], sizeof tickets[i], "%lld", rlk_names_wake_cid(uuid) * 1024 + r);
    return tickets[i];
}

static rlk_waitgraph *build(const rlk_wg_name *names, size_t n)
{
    rlk_waitgraph *g = NULL;
    int rc = rlk_wg_build(names, n, &g);

    CHECK_INT_EQ(rc, RLK_OK);
    if (!g) {
        fprintf(stderr, "rlk_wg_build failed\n");
        exit(1);
    }
    return g;
}

/* The waiters of cycle i, in the cycle's order, '|'-joined into buf. */
static const char *cycle_waiters(const rlk_waitgraph *g, size_t i, char *buf, size_t len)
{
    buf[0] = '\0';
    for (size_t j = 0; j < rlk_waitgraph_cycle_length(g, i); j++) {
        const char *w, *name, *h;

        rlk_waitgraph_edge(g, (size_t)rlk_waitgraph_cycle_edge(g, i, j), &w, &name, NULL, &h, NULL);
        snprintf(buf + strlen(buf), len - strlen(buf), "%s%s>%s>%s", j ? "|" : "", w, name, h);
    }
    return buf;
}

/* Each cycle edge's holder (or its client) is the next edge's waiter. */
static void check_closed(const rlk_waitgraph *g, size_t i)
{
    size_t n = rlk_waitgraph_cycle_length(g, i);

    CHECK(n >= 2);
    for (size_t j = 0; j < n; j++) {
        const char *h, *w;
        int bc;

        rlk_waitgraph_edge(g, (size_t)rlk_waitgraph_cycle_edge(g, i, j), NULL, NULL, NULL, &h, NULL);
        rlk_waitgraph_edge(g, (size_t)rlk_waitgraph_cycle_edge(g, i, (j + 1) % n), &w, NULL, NULL,
                           NULL, &bc);
        CHECKF(bc ? strncmp(h, w, rlk_wg_client_len(h)) == 0 : strcmp(h, w) == 0,
               "cycle %zu edge %zu: holder %s, next waiter %s", i, j, h, w);
    }
}

static void test_fair_abba(void)
{
    rlk_wg_party ha[] = {P(U1 ":1")}, wa[] = {P(U2 ":2")};
    rlk_wg_party hb[] = {P(U2 ":2")}, wb[] = {P(U1 ":1")};
    rlk_wg_name names[] = {NAME("A", "fair", ha, wa), NAME("B", "fair", hb, wb)};
    rlk_waitgraph *g = build(names, 2);
    char buf[512];

    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    REQUIRE_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
    CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), 0);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_length(g, 0), 2);
    cycle_waiters(g, 0, buf, sizeof buf);
    CHECKF(strcmp(buf, U2 ":2>A>" U1 ":1|" U1 ":1>B>" U2 ":2") == 0 ||
           strcmp(buf, U1 ":1>B>" U2 ":2|" U2 ":2>A>" U1 ":1") == 0, "cycle %s", buf);
    check_closed(g, 0);
    CHECK(rlk_waitgraph_cycle_edge(g, 0, 2) == -1);
    CHECK(rlk_waitgraph_edge(g, 2, NULL, NULL, NULL, NULL, NULL) == RLK_ERR_ARG);
    rlk_waitgraph_free(g);
}

/* Control: the second waiter waits for C, which a third client holds. */
static void test_fair_chain(void)
{
    rlk_wg_party ha[] = {P(U1 ":1")}, wa[] = {P(U2 ":2")};
    rlk_wg_party hc[] = {P(U3 ":3")}, wc[] = {P(U1 ":1")};
    rlk_wg_name names[] = {NAME("A", "fair", ha, wa), NAME("C", "fair", hc, wc)};
    rlk_waitgraph *g = build(names, 2);

    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
}

/* Control: another thread of the holder's client waits: no thread cycle, and
 * the client graph does not overrule what threads tell. */
static void test_fair_other_thread(void)
{
    rlk_wg_party ha[] = {P(U1 ":1")}, wa[] = {P(U2 ":2")};
    rlk_wg_party hb[] = {P(U2 ":2")}, wb[] = {P(U1 ":7")};
    rlk_wg_name names[] = {NAME("A", "fair", ha, wa), NAME("B", "fair", hb, wb)};
    rlk_waitgraph *g = build(names, 2);

    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
}

static void test_ticket_abba(void)
{
    rlk_wg_party ha[] = {P(U1 ":1")}, wa[] = {{ticket(0, U2, 17), RLK_WG_TICKET}};
    rlk_wg_party hb[] = {P(U2 ":9")}, wb[] = {{ticket(1, U1, 1023), RLK_WG_TICKET}};
    rlk_wg_name names[] = {NAME("A", "reentrant", ha, wa), NAME("B", "reentrant", hb, wb)};
    rlk_waitgraph *g = build(names, 2);
    const char *w, *name, *kind, *h;
    int bc = -1;
    char buf[512];

    REQUIRE_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    CHECK_INT_EQ(rlk_waitgraph_edge(g, 0, &w, &name, &kind, &h, &bc), RLK_OK);
    CHECK_STR_EQ(w, U2);
    CHECK_STR_EQ(name, "A");
    CHECK_STR_EQ(kind, "reentrant");
    CHECK_STR_EQ(h, U1 ":1");
    CHECK_INT_EQ(bc, 1);
    REQUIRE_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
    CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), 1);
    cycle_waiters(g, 0, buf, sizeof buf);
    CHECK_STR_CONTAINS(buf, U2 ">A>" U1 ":1");
    CHECK_STR_CONTAINS(buf, U1 ">B>" U2 ":9");
    check_closed(g, 0);
    rlk_waitgraph_free(g);
}

/* Controls: the second waiter waits for C; a client waits for what another of its threads holds. */
static void test_ticket_controls(void)
{
    rlk_wg_party ha[] = {P(U1 ":1")}, wa[] = {{ticket(0, U2, 17), RLK_WG_TICKET}};
    rlk_wg_party hb[] = {P(U2 ":9")};
    rlk_wg_party hc[] = {P(U3 ":1")}, wc[] = {{ticket(1, U1, 3), RLK_WG_TICKET}};
    rlk_wg_name chain[] = {NAME("A", "reentrant", ha, wa), NAME("C", "reentrant", hc, wc)};
    rlk_wg_party wself[] = {{ticket(2, U2, 5), RLK_WG_TICKET}};
    rlk_wg_name self[] = {NAME("B", "reentrant", hb, wself)};
    rlk_wg_party wnone[] = {{"12345", RLK_WG_TICKET}};      /* client 12: no holder's */
    rlk_wg_name none[] = {NAME("B", "reentrant", hb, wnone)};
    rlk_waitgraph *g = build(chain, 2);
    const char *w;

    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
    g = build(self, 1);
    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 0);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
    g = build(none, 1);
    REQUIRE_INT_EQ((long)rlk_waitgraph_edge_count(g), 1);
    rlk_waitgraph_edge(g, 0, &w, NULL, NULL, NULL, NULL);
    CHECK_STR_EQ(w, "cid:12");
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
}

/* Three names in a ring; a read-write lock's writer waits for both readers,
 * one of them also the writer (one edge per holder). */
static void test_ring_and_rwlock(void)
{
    rlk_wg_party ha[] = {P(U1 ":1")}, wa[] = {P(U3 ":3")};
    rlk_wg_party hb[] = {P(U2 ":2")}, wb[] = {P(U1 ":1")};
    rlk_wg_party hc[] = {P(U3 ":3")}, wc[] = {P(U2 ":2")};
    rlk_wg_name ring[] = {NAME("A", "fair", ha, wa), NAME("B", "fair", hb, wb),
                          NAME("C", "fair", hc, wc)};
    rlk_wg_party hr[] = {P(U1 ":1"), P(U2 ":2"), P(U1 ":1")}, wr[] = {{ticket(0, U3, 0),
                                                                         RLK_WG_TICKET}};
    rlk_wg_name rw[] = {NAME("R", "rwlock", hr, wr)};
    rlk_waitgraph *g = build(ring, 3);

    REQUIRE_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_length(g, 0), 3);
    check_closed(g, 0);
    rlk_waitgraph_free(g);
    g = build(rw, 1);
    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
}

/* A fair waiter (by thread) and a reentrant one (by ticket) close a cycle of clients. */
static void test_mixed(void)
{
    rlk_wg_party ha[] = {P(U2 ":1")}, wa[] = {P(U1 ":1")};
    rlk_wg_party hb[] = {P(U1 ":1")}, wb[] = {{ticket(0, U2, 1), RLK_WG_TICKET}};
    rlk_wg_name names[] = {NAME("A", "fair", ha, wa), NAME("B", "reentrant", hb, wb)};
    rlk_waitgraph *g = build(names, 2);

    REQUIRE_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
    CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), 1);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_length(g, 0), 2);
    check_closed(g, 0);
    rlk_waitgraph_free(g);
    g = build(names, 0);
    CHECK_INT_EQ((long)rlk_waitgraph_edge_count(g), 0);
    rlk_waitgraph_free(g);
}

/* Two clients of one number (the same first four hex digits): a ticket of that number is
 * either's, an edge from each; a client holding two names is one client. */
static void test_shared_number(void)
{
    rlk_wg_party ha[] = {P(U1 ":1")}, hb[] = {P("0a1b9999-0000-4000-8000-000000000009:4")};
    rlk_wg_party hc[] = {P(U3 ":1")}, wc[] = {{ticket(0, U1, 9), RLK_WG_TICKET}};
    rlk_wg_party hd[] = {P(U1 ":2")};
    rlk_wg_name names[] = {NAME("A", "reentrant", ha, hc), NAME("B", "reentrant", hb, hc),
                           NAME("C", "reentrant", hc, wc), NAME("D", "reentrant", hd, hc)};
    rlk_waitgraph *g;
    const char *w0, *w1;

    names[0].nwaiters = names[1].nwaiters = names[3].nwaiters = 0;
    g = build(names, 4);
    REQUIRE_INT_EQ((long)rlk_waitgraph_edge_count(g), 2);
    rlk_waitgraph_edge(g, 0, &w0, NULL, NULL, NULL, NULL);
    rlk_waitgraph_edge(g, 1, &w1, NULL, NULL, NULL, NULL);
    CHECKF((strcmp(w0, U1) == 0 && strcmp(w1, "0a1b9999-0000-4000-8000-000000000009") == 0) ||
           (strcmp(w1, U1) == 0 && strcmp(w0, "0a1b9999-0000-4000-8000-000000000009") == 0),
           "waiters %s, %s", w0, w1);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
}

/* The clients a ticket of a shared number names come in the order of their ids, not in the
 * order the holders were listed (HGETALL's, the names'): the order numbers the client graph's
 * nodes, and with A2 (listed before A1) first the search closed only the cycle of thread
 * waiters through A1 (not a client deadlock) and missed F -> A2 -> B -> F. */
static void test_shared_number_order(void)
{
#define A1 "0a1b0000-0000-4000-8000-000000000001"
#define A2 "0a1b0000-0000-4000-8000-000000000002"
#define B "12340000-0000-4000-8000-000000000004"
#define F "ffff0000-0000-4000-8000-000000000006"
    rlk_wg_party h0[] = {P(U2 ":1")}, w0[] = {{ticket(0, A1, 5), RLK_WG_TICKET}};
    rlk_wg_party h1[] = {P(A2 ":2")}, w1[] = {P(F ":2")};
    rlk_wg_party h2[] = {P(B ":1"), P(A1 ":1")}, w2[] = {P(B ":2"), P(A2 ":2")};
    rlk_wg_party h3[] = {P(F ":0")}, w3[] = {P(A1 ":1"), {B, RLK_WG_CLIENT}};
    rlk_wg_name names[] = {NAME("n0", "reentrant", h0, w0), NAME("n1", "reentrant", h1, w1),
                           NAME("n2", "reentrant", h2, w2), NAME("n3", "reentrant", h3, w3)};
    rlk_waitgraph *g = build(names, 4);
    char buf[1024];

    REQUIRE_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
    CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), 1);
    CHECK_STR_EQ(cycle_waiters(g, 0, buf, sizeof buf),
                 F ":2>n1>" A2 ":2|" A2 ":2>n2>" B ":1|" B ">n3>" F ":0");
    rlk_waitgraph_free(g);
#undef A1
#undef A2
#undef B
#undef F
}

/* A client deadlock through a ticket whose search meets a client pair that is no deadlock:
 * A:5 waits for B:7 and B:1 for A:1 (two clients, no thread cycle), A:1 waits for C:1 and C
 * (by ticket) for B:1. A search from A that closed A -> B -> A first (all waiters by thread:
 * left to the thread graph) saw B done when it came to C -> B, and missed A -> C -> B -> A. */
static void test_hidden_behind_pair(void)
{
#define A "0a1b0000-0000-4000-8000-00000000000a"
#define B "12340000-0000-4000-8000-00000000000b"
#define C "c0de0000-0000-4000-8000-00000000000c"
    rlk_wg_party h0[] = {P(B ":7")}, w0[] = {P(A ":5")};
    rlk_wg_party h1[] = {P(A ":1")}, w1[] = {P(B ":1")};
    rlk_wg_party h2[] = {P(C ":1")}, w2[] = {P(A ":1")};
    rlk_wg_party h3[] = {P(B ":1")}, w3[] = {{ticket(0, C, 3), RLK_WG_TICKET}};
    rlk_wg_name names[] = {NAME("L0", "fair", h0, w0), NAME("L1", "fair", h1, w1),
                           NAME("L2", "fair", h2, w2), NAME("L3", "reentrant", h3, w3)};
    rlk_waitgraph *g = build(names, 4);
    char buf[1024];

    REQUIRE_INT_EQ((long)rlk_waitgraph_edge_count(g), 4);
    REQUIRE_INT_EQ((long)rlk_waitgraph_cycle_count(g), 1);
    CHECK_INT_EQ(rlk_waitgraph_cycle_by_client(g, 0), 1);
    check_closed(g, 0);
    CHECK_STR_EQ(cycle_waiters(g, 0, buf, sizeof buf),
                 B ":1>L1>" A ":1|" A ":1>L2>" C ":1|" C ">L3>" B ":1");
    rlk_waitgraph_free(g);
    names[3].nwaiters = 0;      /* control: without the ticket, no deadlock */
    g = build(names, 4);
    CHECK_INT_EQ((long)rlk_waitgraph_cycle_count(g), 0);
    rlk_waitgraph_free(g);
#undef A
#undef B
#undef C
}

int main(void)
{
    RUN_TEST(test_fair_abba);
    RUN_TEST(test_fair_chain);
    RUN_TEST(test_fair_other_thread);
    RUN_TEST(test_ticket_abba);
    RUN_TEST(test_ticket_controls);
    RUN_TEST(test_ring_and_rwlock);
    RUN_TEST(test_mixed);
    RUN_TEST(test_shared_number);
    RUN_TEST(test_shared_number_order);
    RUN_TEST(test_hidden_behind_pair);
    return check_summary("test_waitgraph");
}
