/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * sha1.c - SHA-1 (FIPS 180-4) by OpenSSL's EVP digests, which the library
 * links for TLS anyway; used to check bundle files against their manifest.
 */
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "client/random.h"
#include "client/sha1.h"

void rlk_sha1_init(rlk_sha1_ctx *s)
{
    /* No atexit cleanup (tls.c's rule): a connection may still be open at exit. */
    (void)OPENSSL_init_crypto(OPENSSL_INIT_NO_ATEXIT, NULL);
    s->md = EVP_MD_CTX_new();
    if (s->md && EVP_DigestInit_ex(s->md, EVP_sha1(), NULL) != 1) {
        EVP_MD_CTX_free(s->md);
        s->md = NULL;
    }
    ERR_clear_error();
}

void rlk_sha1_update(rlk_sha1_ctx *s, const void *data, size_t len)
{
    if (s->md && EVP_DigestUpdate(s->md, data, len) != 1) {
        EVP_MD_CTX_free(s->md);
        s->md = NULL;
        ERR_clear_error();
    }
}

void rlk_sha1_final(rlk_sha1_ctx *s, unsigned char digest[20])
{
    /* Out of memory: twenty zero bytes, which no script's SHA-1 is. */
    memset(digest, 0, 20);
    if (s->md && EVP_DigestFinal_ex(s->md, digest, NULL) != 1)
        memset(digest, 0, 20);
    EVP_MD_CTX_free(s->md);
    s->md = NULL;
    ERR_clear_error();
}

void rlk_sha1_final_hex(rlk_sha1_ctx *s, char hex[41])
{
    unsigned char digest[20];

    rlk_sha1_final(s, digest);
    rlk_hex(hex, digest, sizeof digest);
}

void rlk_sha1_hex(const void *data, size_t len, char hex[41])
{
    rlk_sha1_ctx s;

    rlk_sha1_init(&s);
    rlk_sha1_update(&s, data, len);
    rlk_sha1_final_hex(&s, hex);
}
