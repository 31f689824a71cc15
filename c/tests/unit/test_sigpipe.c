/* SPDX-License-Identifier: BSD-3-Clause */
/* The SIGPIPE guard: a write to a closed socket inside it neither kills the
 * process nor leaves a SIGPIPE pending, and the thread's mask comes back. */
#include <errno.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client/sigpipe.h"
#include "client/transport.h"
#include "check.h"

static int sigpipe_pending(void)
{
    sigset_t p;

    sigpending(&p);
    return sigismember(&p, SIGPIPE);
}

static int sigpipe_blocked(void)
{
    sigset_t cur;

    pthread_sigmask(SIG_BLOCK, NULL, &cur);
    return sigismember(&cur, SIGPIPE);
}

static void write_to_closed_socket_is_harmless(void)
{
    int sv[2];
    rlk_sigpipe_guard g;
    ssize_t n;
    int err;

    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    close(sv[1]);
    CHECK(!sigpipe_blocked());
    rlk_sigpipe_enter(&g);
    CHECK(sigpipe_blocked());
    n = write(sv[0], "x", 1); /* default disposition: this would kill us unblocked */
    err = errno;
    CHECK(n == -1 && err == EPIPE);
    CHECK(sigpipe_pending());
    rlk_sigpipe_leave(&g, 1);
    CHECK(!sigpipe_pending());
    CHECK(!sigpipe_blocked());
    close(sv[0]);
}

/* A request's write on a plain connection whose peer closed fails with EPIPE and raises no
 * SIGPIPE, with no guard around it (the default disposition would end this program): rlk sends
 * with MSG_NOSIGNAL where hiredis writes with write(2), so the blocking requests on plain TCP and
 * unix sockets need no signal mask. A TLS session's writes send with it too (tls/it_tls.c). */
static void plain_write_needs_no_guard(void)
{
    redisContext *ctx;
    int sv[2], rc;

    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    REQUIRE((ctx = redisConnectFd(sv[0])) != NULL && !ctx->err);
    close(sv[1]);
    CHECK(!sigpipe_blocked());
    REQUIRE(redisAppendCommand(ctx, "PING") == REDIS_OK);
    rc = rlk_transport_flush(ctx);
    CHECK(rc == REDIS_ERR && ctx->err == REDIS_ERR_IO);
    CHECK_STR_CONTAINS(ctx->errstr, "Broken pipe");
    CHECK(!sigpipe_pending());
    redisFree(ctx);     /* closes sv[0] */
}

static void mask_set_by_caller_is_kept(void)
{
    sigset_t set;
    rlk_sigpipe_guard g;

    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    rlk_sigpipe_enter(&g);
    rlk_sigpipe_leave(&g, 1);
    CHECK(sigpipe_blocked()); /* the caller blocked it: still blocked */
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    CHECK(!sigpipe_blocked());
}

static void successful_request_restores_mask(void)
{
    rlk_sigpipe_guard g;

    CHECK(!sigpipe_blocked());
    rlk_sigpipe_enter(&g);
    CHECK(sigpipe_blocked());
    rlk_sigpipe_leave(&g, 0);
    CHECK(!sigpipe_blocked());
    CHECK(!sigpipe_pending());
}

int main(void)
{
    RUN_TEST(write_to_closed_socket_is_harmless);
    RUN_TEST(plain_write_needs_no_guard);
    RUN_TEST(mask_set_by_caller_is_kept);
    RUN_TEST(successful_request_restores_mask);
    return check_summary("test_sigpipe");
}
