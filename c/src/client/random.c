/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * random.c - the kernel's random source (getrandom, else /dev/urandom) and
 * the v4 uuids made from it: client uuids, permit ids, RedLock tokens.
 */
#include <errno.h>
#include <fcntl.h>
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

/* ---------------------------------------------------------------- uuid */

int rlk_random_uuid(char uuid[RLK_UUID_LEN + 1])
{
    static const char hex[] = "0123456789abcdef";
    unsigned char b[16];
    size_t j = 0;

    if (rlk_random_bytes(b, sizeof b) != 0)
        return -1;
    b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);   /* version 4 */
    b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);   /* variant 10xx */
    for (size_t i = 0; i < sizeof b; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            uuid[j++] = '-';
        uuid[j++] = hex[b[i] >> 4];
        uuid[j++] = hex[b[i] & 0x0f];
    }
    uuid[j] = '\0';
    return 0;
}
