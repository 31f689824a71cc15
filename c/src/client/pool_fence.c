/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * pool_fence.c - settling a lost reply: which server connection a pool
 * call lost its reply on, and the fence (CLIENT KILL of that connection from
 * another one) after which the lost request has either run or never will.
 * The lock kinds then read their own field to learn which (lock_settle.c).
 * docs/runtime.md "Lost replies" gives the ordering argument.
 */
#include <stdio.h>
#include <string.h>

#include "client/client_t.h"
#include "client/clock.h"
#include "client/conn.h"
#include "client/error.h"
#include "client/pool.h"
#include "client/random.h"

/* The calling thread's last lost reply, per client (by the client's id). */
typedef struct rlk_lost_note {
    uint64_t client_id;             /* 0: none */
    rlk_lost_conn conn;
} rlk_lost_note;

static _Thread_local rlk_lost_note rlk_thread_lost;

void rlk_pool_note_lost(rlk_client *c, const rlk_slot *slot)
{
    if (!slot) {
        if (rlk_thread_lost.client_id == c->id)
            rlk_thread_lost.client_id = 0;
        return;
    }
    rlk_thread_lost.client_id = c->id;
    rlk_thread_lost.conn.via = NULL;
    rlk_thread_lost.conn.id = slot->server_id;
    snprintf(rlk_thread_lost.conn.name, sizeof rlk_thread_lost.conn.name, "%s", slot->conn_name);
}

void rlk_pool_note_lost_conn(rlk_client *c, const rlk_lost_conn *lc)
{
    rlk_thread_lost.client_id = c->id;
    rlk_thread_lost.conn = *lc;
}

int rlk_pool_lost_reply(rlk_client *c, rlk_lost_conn *out)
{
    if (rlk_thread_lost.client_id != c->id || c->id == 0)
        return 0;
    *out = rlk_thread_lost.conn;
    rlk_thread_lost.client_id = 0;
    return 1;
}

/* "rlk-pool-" and 16 hex digits from the kernel's random source. */
static int rlk_pool_conn_name(char *buf, size_t len)
{
    char hex[17];

    if (rlk_random_hex(hex, 8) != 0)
        return -1;
    snprintf(buf, len, "rlk-pool-%s", hex);
    return 0;
}

int rlk_slot_identify(rlk_client *c, rlk_slot *slot)
{
    int rc;

    slot->server_id = 0;
    if (rlk_pool_conn_name(slot->conn_name, sizeof slot->conn_name) != 0) {
        slot->conn_name[0] = '\0';
        return RLK_OK;      /* no name, no fence: lost replies stay unknown */
    }
    /* The first round trip on a new connection: when it fails, to the caller
     * that is the connection failing ("connect ADDR: ..."), not a command it
     * never asked for. A timeout here is a server that accepted the
     * connection (its kernel did) but does not answer: stopped or overloaded. */
    rc = rlk_conn_name_id(c, slot->ctx, "connect", slot->conn_name, &slot->server_id);
    if (rc == RLK_ERR_TIMEOUT)
        rc = rlk_set_error(c, rc, "connect %s: no answer within %d ms (the connection was "
                           "accepted, but the server does not reply: stopped or overloaded?)",
                           c->addr, c->command_timeout_ms);
    return rc;
}

/* One fence step: the lost connection's CLIENT LIST line, or CLIENT KILL of it; RLK_OK
 * with *listed (LIST) or a killed reply (KILL). */
static int rlk_fence_step(rlk_client *c, const rlk_lost_conn *lc, int kill, int *listed)
{
    const char *what = kill ? "CLIENT KILL" : "CLIENT LIST";
    char id[24], listing[48];
    const char *argv[4] = {"CLIENT", kill ? "KILL" : "LIST", "ID", id};
    redisReply *r = NULL;
    int rc;

    snprintf(id, sizeof id, "%lld", lc->id);
    rc = rlk_pool_command(c, what, 4, argv, NULL, &r);
    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_ERROR)
        rc = rlk_set_reply_error(c, r, what, RLK_ERR_SERVER);
    else if (r->type != (kill ? REDIS_REPLY_INTEGER : REDIS_REPLY_STRING))
        rc = rlk_set_error(c, RLK_ERR_PROTOCOL, "%s %s: reply type %d", what, c->addr, r->type);
    else if (!kill) {
        snprintf(listing, sizeof listing, " name=%s ", lc->name);   /* its line, by our name */
        *listed = strstr(r->str, listing) != NULL;
    }
    freeReplyObject(r);
    return rc;
}

int rlk_pool_fence(rlk_client *c, const rlk_lost_conn *lc, long long budget_ms)
{
    long long limit = rlk_time_limit_left_ms(), t0;
    int rc, kill = 0;

    if (lc->via && lc->via != c) {  /* a cluster node's connection: fenced on that node */
        rc = rlk_pool_fence(lc->via, lc, budget_ms);
        return rc == RLK_OK ? rc : rlk_set_error(c, rc, "%s", rlk_errstr(lc->via));
    }
    if (lc->id <= 0 || !lc->name[0])
        return rlk_set_error(c, RLK_ERR_SERVER,
                             "%s: the connection's CLIENT ID is unknown (CLIENT refused?)", c->addr);
    /* Within the caller's time limit (a wait's deadline): past it, the
     * outcome stays unknown and the next acquisition settles it. */
    if (limit >= 0 && limit < budget_ms)
        budget_ms = limit;
    if (budget_ms <= 0)
        return rlk_set_error(c, RLK_ERR_TIMEOUT, "%s: no time left to fence a lost reply", c->addr);
    t0 = rlk_clock_now_ns();
    for (;;) {
        int listed = 0;

        /* Still there under our name (ids are never reused by one server
         * process; a restarted one may give the id to another client): kill
         * it. Not there: it is gone, and its unread input with it. */
        rc = rlk_fence_step(c, lc, kill, &listed);
        if (rc == RLK_OK && !kill && listed) {
            kill = 1;
            continue;
        }
        if (rc == RLK_OK || !rlk_pool_conn_error(rc))
            return rc;
        if ((rlk_clock_now_ns() - t0) / RLK_NS_PER_MS >= budget_ms)
            return rc;
        /* A refused connect fails at once: back off before the next try. */
        rlk_clock_sleep_ns(20 * RLK_NS_PER_MS);
    }
}
