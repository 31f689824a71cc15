/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fence.h - a fenced write's call (fence.c), shared by the blocking
 * rlk_fence_write and the non-blocking rlk_async_fence_write
 * (async/a_fence.c): the checks of the arguments, the script and its keys
 * and arguments, and what a script's refusal "RLK_FENCED <highest>" means.
 * Both APIs count the outcome with rlk_metrics_fence (engine/metrics.h).
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_FENCE_H
#define RLK_FENCE_H

#include <stddef.h>
#include <stdint.h>

/* One fenced write's script call: script "fence/<op>", keys (fence, and the
 * data key unless op is "check"), then the arguments: the token's text
 * first, then the caller's. The keys and arguments are copies (lens is the
 * one block that holds them), valid until rlk_fence_call_free. */
typedef struct rlk_fence_call {
    char script[32];
    char token[24];
    const char *keys[2];
    int nkeys, nargs;
    const char **argv;
    size_t *lens;
} rlk_fence_call;

/* Checks the arguments as rlk_fence_write documents them and builds fc.
 * RLK_OK (free with rlk_fence_call_free), or RLK_ERR_ARG / RLK_ERR_NOMEM
 * with the message, prefixed with who ("rlk_fence_write"), in msg (fc then
 * needs no free). */
int rlk_fence_call_make(rlk_fence_call *fc, const char *who, const char *op, const char *fence,
                        const char *data, uint64_t token, int nargs, const char *const *args,
                        const size_t *arglens, char *msg, size_t msglen);
void rlk_fence_call_free(rlk_fence_call *fc);

/* A script's refusal errstr of fc's call: RLK_ERR_FENCED, *highest set and
 * the message ("<fence>: token <t> is below the highest accepted, <h>
 * (RLK_FENCED <h>)") in msg, when errstr is "RLK_FENCED <h>"; else 0 (not
 * a stale token: the script's other refusals keep their own text). */
int rlk_fence_stale(const rlk_fence_call *fc, const char *errstr, uint64_t *highest, char *msg,
                    size_t msglen);

/* The checks of a claim's arguments (rlk_fence_claim, rlk_async_fence_claim): 1..1024
 * fences, none NULL or empty, token 1..2^53-2. RLK_OK, or RLK_ERR_ARG with the message,
 * prefixed with who, in msg. */
int rlk_fence_claim_args(const char *who, uint64_t token, int nfences, const char *const *fences,
                         char *msg, size_t msglen);

#endif /* RLK_FENCE_H */
