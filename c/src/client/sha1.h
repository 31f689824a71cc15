/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sha1.h - SHA-1 (sha1.c): script identities, computed at build time and
 * checked against SCRIPT LOAD and bundle manifests.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_SHA1_H
#define RLK_SHA1_H

#include <stddef.h>

struct evp_md_ctx_st;

typedef struct rlk_sha1_ctx {
    struct evp_md_ctx_st *md;   /* OpenSSL's EVP_MD_CTX; NULL: out of memory */
} rlk_sha1_ctx;

void rlk_sha1_init(rlk_sha1_ctx *s);
void rlk_sha1_update(rlk_sha1_ctx *s, const void *data, size_t len);
/* The digest; frees what rlk_sha1_init took. */
void rlk_sha1_final(rlk_sha1_ctx *s, unsigned char digest[20]);
/* rlk_sha1_final, as 40 lowercase hex digits and a NUL into hex. */
void rlk_sha1_final_hex(rlk_sha1_ctx *s, char hex[41]);
/* The SHA-1 of data, as 40 lowercase hex digits and a NUL into hex. */
void rlk_sha1_hex(const void *data, size_t len, char hex[41]);

#endif /* RLK_SHA1_H */
