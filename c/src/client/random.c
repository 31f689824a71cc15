/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * random.c - the kernel's random source (getrandom, else /dev/urandom) and
 * the v4 uuids made from it: client uuids, permit ids, RedLock tokens.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/random.h>
#include <unistd.h>

#include "client/random.h"

/* ---------------------------------------------------------------- randomness */

int rlk_random_bytes(unsigned char *buf, size_t len)
{
    size_t got = 0;
    int fd = -1;

    while (got < len) {
        ssize_t n = fd < 0 ? getrandom(buf + got, len - got, 0) : read(fd, buf + got, len - got);

        if (n > 0) {
            got += (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        /* getrandom failed (ENOSYS and the like): fall back to the device, once */
        if (fd >= 0 || (fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC)) < 0)
            break;
    }
    if (fd >= 0)
        close(fd);
    return got == len ? 0 : -1;
}

unsigned long long rlk_random_below(unsigned long long n)
{
    unsigned long long r = 0;

    (void)rlk_random_bytes((unsigned char *)&r, sizeof r);
    return n ? r % n : 0;
}

/* ---------------------------------------------------------------- hex, uuid */

void rlk_hex(char *out, const unsigned char *b, size_t n)
{
    static const char digits[] = "0123456789abcdef";

    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[b[i] >> 4];
        out[2 * i + 1] = digits[b[i] & 15];
    }
    out[2 * n] = '\0';
}

int rlk_hex_digit(int ch)
{
    return isdigit(ch) ? ch - '0' : isxdigit(ch) ? tolower(ch) - 'a' + 10 : -1;
}

int rlk_random_hex(char *out, size_t n)
{
    unsigned char b[RLK_RANDOM_HEX_MAX];

    if (n > sizeof b || rlk_random_bytes(b, n) != 0)
        return -1;
    rlk_hex(out, b, n);
    return 0;
}

int rlk_random_uuid(char uuid[RLK_UUID_LEN + 1])
{
    unsigned char b[16];
    char h[33];

    if (rlk_random_bytes(b, sizeof b) != 0)
        return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* variant 10xx */
    rlk_hex(h, b, sizeof b);
    snprintf(uuid, RLK_UUID_LEN + 1, "%.8s-%.4s-%.4s-%.4s-%s", h, h + 8, h + 12, h + 16, h + 20);
    return 0;
}
