/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * error.h - the per-thread error of a client (error.c): the setters the
 * library's parts record errors with. The getters (rlk_err, rlk_errstr,
 * rlk_strerror) are public (rlk.h).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_ERROR_H
#define RLK_ERROR_H

#include <stddef.h>

#include <hiredis/hiredis.h>

#include "rlk.h"

#define RLK_ERRSTR_MAX 512          /* longest message kept, with its NUL */

/* What an RLK_ERR_AUTH message whose server reply is NOAUTH (or "Protocol error:
 * unauthenticated") or WRONGPASS gets at its end: where the library takes a password from (the
 * rlk CLI puts its own sources, --password-file and the variables, in their place). */
#define RLK_NOAUTH_HINT                                                                    \
    " (the server wants a password and was given none: put it in the URL, "              \
    "redis://:PASSWORD@HOST:PORT or redis://USER:PASSWORD@HOST:PORT, or in "             \
    "rlk_options.password)"
#define RLK_WRONGPASS_HINT                                                                 \
    " (the server refused the user and password: the URL's, or rlk_options.password "    \
    "when the URL has none)"

/* Records (err, printf-style message) as the calling thread's last error on
 * c and returns err. The message is cut to one line of RLK_ERRSTR_MAX - 1
 * bytes (newlines become spaces); an RLK_ERR_AUTH one of NOAUTH or WRONGPASS ends with
 * RLK_NOAUTH_HINT or RLK_WRONGPASS_HINT (once). c may be a client that failed to connect. */
int rlk_set_error(rlk_client *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), cold));

/* Maps a hiredis context error (ctx->err set) to an rlk code and records it
 * as "<what> <addr>: <reason>". Returns the code. */
int rlk_set_ctx_error(rlk_client *c, const redisContext *ctx, const char *what)
    __attribute__((cold));

/* Thread-safe strerror. */
const char *rlk_errno_str(int errnum, char *buf, size_t len);

#endif /* RLK_ERROR_H */
