/*
 * pool_fence.c - settling a lost reply: which server connection a pool
 * call lost its reply on, and the fence (CLIENT KILL of that connection from
 * another one) after which the lost request has either run or never will.
 * The lock kinds then read their own field to learn which (lock_settle.c).
 * docs/runtime.md "Lost replies" gives the ordering argument.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "rlk_internal.h"

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
    rlk_thread_lost.conn.id = slot->server_id;
    snprintf(rlk_thread_lost.conn.addr, sizeof rlk_thread_lost.conn.addr, "%s", slot->self_addr);
}

int rlk_pool_lost_reply(rlk_client *c, rlk_lost_conn *out)
{
    if (rlk_thread_lost.client_id != c->id || c->id == 0)
        return 0;
    *out = rlk_thread_lost.conn;
    rlk_thread_lost.client_id = 0;
    return 1;
}

/* "ip:port" of our end of fd, as Redis prints a client's addr. */
static void rlk_self_addr(int fd, char *buf, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    char ip[INET6_ADDRSTRLEN];

    buf[0] = '\0';
    if (getsockname(fd, (struct sockaddr *)&ss, &sl) != 0)
        return;
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;

        if (inet_ntop(AF_INET, &a->sin_addr, ip, sizeof ip))
            snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(a->sin_port));
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

        if (inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof ip))   /* as Redis prints it */
            snprintf(buf, len, "[%s]:%u", ip, (unsigned)ntohs(a->sin6_port));
    }
}

int rlk_slot_identify(rlk_client *c, rlk_slot *slot)
{
    const char *argv[2] = {"CLIENT", "ID"};
    size_t lens[2] = {6, 2};
    redisReply *r = NULL;
    int rc;

    slot->server_id = 0;
    slot->self_addr[0] = '\0';
    rc = rlk_conn_command(c, slot->ctx, "CLIENT ID", 2, argv, lens, &r, NULL);
    if (rc != RLK_OK)
        return rc;
    if (r->type == REDIS_REPLY_INTEGER && r->integer > 0) {
        slot->server_id = r->integer;
        if (!c->url.is_unix)
            rlk_self_addr(slot->ctx->fd, slot->self_addr, sizeof slot->self_addr);
    }
    freeReplyObject(r);
    return RLK_OK;
}

static int rlk_op_fence(rlk_client *c, redisContext *ctx, void *arg, redisReply **reply,
                        int *written)
{
    const rlk_lost_conn *lc = arg;
    char id[24];
    const char *argv[6] = {"CLIENT", "KILL", "ID", id, "ADDR", lc->addr};
    int argc = lc->addr[0] ? 6 : 4;

    snprintf(id, sizeof id, "%lld", lc->id);
    return rlk_conn_command(c, ctx, "CLIENT KILL", argc, argv, NULL, reply, written);
}

int rlk_pool_fence(rlk_client *c, const rlk_lost_conn *lc, long long budget_ms)
{
    struct timespec t0, t;
    int rc;

    if (lc->id <= 0)
        return rlk_set_error(c, RLK_ERR_SERVER,
                             "%s: the connection's CLIENT ID is unknown (CLIENT refused?)", c->addr);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        redisReply *r = NULL;

        rc = rlk_pool_run(c, rlk_op_fence, (void *)lc, 1, &r);
        if (rc == RLK_OK) {
            if (r->type != REDIS_REPLY_INTEGER)
                rc = r->type == REDIS_REPLY_ERROR
                         ? rlk_set_reply_error(c, r, "CLIENT KILL", RLK_ERR_SERVER)
                         : rlk_set_error(c, RLK_ERR_PROTOCOL, "CLIENT KILL %s: reply type %d",
                                         c->addr, r->type);
            freeReplyObject(r);
            return rc;
        }
        if (rc != RLK_ERR_IO && rc != RLK_ERR_TIMEOUT && rc != RLK_ERR_PROTOCOL)
            return rc;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((t.tv_sec - t0.tv_sec) * 1000LL + (t.tv_nsec - t0.tv_nsec) / 1000000 >= budget_ms)
            return rc;
        /* A refused connect fails at once: back off before the next try. */
        nanosleep(&(struct timespec){0, 20000000L}, NULL);
    }
}
