/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * elect_child.c - the command the election tests run under `rlk elect`: a
 * leader's work, stamped with CLOCK_MONOTONIC, each action checked at a
 * fenced resource with the leader's term (it_cli_elect.c).
 *
 *   elect_child LOG FENCE_KEY [--ms N]
 *
 * Reads RLK_ELECT_TERM and RLK_URL (rlk elect sets both); the fence is on
 * ELECT_FENCE_URL when that is set (a resource the leader reaches on its own
 * path, not through the lock service's: a leader cut off from Redis that
 * still reaches its resource), else on RLK_URL. Appends to LOG
 * (one write() per line, O_APPEND):
 *   start PID PPID NS TERM               when it starts (PPID: its rlk elect)
 *   act PID SENT_NS DONE_NS TERM RESULT  every 5 ms: one fence/check of TERM on
 *                                        FENCE_KEY; RESULT ok, fenced or err
 *   end PID NS TERM                      when it finishes on its own after N ms
 * SIGTERM has its default action (rlk elect sends it when leadership is lost).
 */
#define _POSIX_C_SOURCE 200809L

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rlk.h"

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void put(int fd, const char *line, int n)
{
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        _exit(3);
}

int main(int argc, char **argv)
{
    const char *term_s = getenv("RLK_ELECT_TERM"), *url = getenv("ELECT_FENCE_URL");
    long long ms = 1000, until, term;
    rlk_client *c;
    char line[200];
    int fd;

    if (!url || !*url)
        url = getenv("RLK_URL");
    if (argc < 3 || !term_s || !url)
        return 2;
    if (argc == 5 && strcmp(argv[3], "--ms") == 0)
        ms = atoll(argv[4]);
    else if (argc != 3)
        return 2;
    term = atoll(term_s);
    fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0 || term <= 0 || !(c = rlk_connect_url(url)))
        return 2;
    put(fd, line, snprintf(line, sizeof line, "start %ld %ld %lld %lld\n", (long)getpid(),
                           (long)getppid(), now_ns(), term));
    until = now_ns() + ms * 1000000LL;
    while (now_ns() < until) {
        struct timespec step = {0, 5000000L};
        long long sent = now_ns();
        int rc = rlk_fence_write(c, "check", argv[2], NULL, (uint64_t)term, 0, NULL,
                                 NULL, NULL, NULL);

        put(fd, line, snprintf(line, sizeof line, "act %ld %lld %lld %lld %s\n", (long)getpid(),
                               sent, now_ns(), term,
                               rc == RLK_OK ? "ok" : rc == RLK_ERR_FENCED ? "fenced" : "err"));
        nanosleep(&step, NULL);
    }
    put(fd, line, snprintf(line, sizeof line, "end %ld %lld %lld\n", (long)getpid(), now_ns(), term));
    rlk_free(c);
    return 0;
}
