/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fault_child.c - the command the fault tests run under `rlk lock`: a
 * critical section that stamps itself with CLOCK_MONOTONIC, so the test
 * can count overlaps from the children's own clocks (it_cli_faults.c).
 *
 *   fault_child LOG [--ms N] [--ignore-term | --trap-term | --exit-on-term]
 *
 * Appends to LOG (one write() per line, O_APPEND):
 *   start PID NS ALIVE   ALIVE: how many other holders that started in LOG
 *                        and did not log "end" are still running (not a
 *                        zombie, no SIGKILL pending) at this moment: must be 0
 *   w PID NS             every 5 ms while it runs ("a write")
 *   term PID NS          when SIGTERM arrived (--trap-term, --exit-on-term)
 *   end PID NS           when it finishes on its own (N ms, --exit-on-term)
 * SIGTERM: default action without an option; --ignore-term ignores it;
 * --trap-term notes it and goes on writing (only SIGKILL ends it);
 * --exit-on-term notes it and ends.
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t got_term;
static int log_fd = -1;

static long long now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void on_term(int sig)
{
    (void)sig;
    got_term = 1;
}

static void log_line(const char *what, long long extra, int with_extra)
{
    char line[128];
    int n;

    if (with_extra)
        n = snprintf(line, sizeof line, "%s %ld %lld %lld\n", what, (long)getpid(), now_ns(),
                     extra);
    else
        n = snprintf(line, sizeof line, "%s %ld %lld\n", what, (long)getpid(), now_ns());
    if (n > 0 && write(log_fd, line, (size_t)n) < 0)
        _exit(3);
}

/* 1 when a SIGKILL is pending for pid: it never returns to user space
 * (the kernel may take a while to tear it down on a loaded machine). */
static int kill_pending(long pid)
{
    char path[64], line[128];
    FILE *f;
    int pending = 0;

    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    if (!(f = fopen(path, "r")))
        return 0;
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "SigPnd:", 7) == 0 || strncmp(line, "ShdPnd:", 7) == 0)
            pending |= (strtoull(line + 7, NULL, 16) & (1ULL << (SIGKILL - 1))) != 0;
    }
    fclose(f);
    return pending;
}

/* 1 when pid runs (exists, is not a zombie, has no SIGKILL pending). */
static int running(long pid)
{
    char path[64], buf[256], *p;
    FILE *f;
    size_t n;

    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (!(f = fopen(path, "r")))
        return 0;
    n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X' && !kill_pending(pid);
}

/* Other holders in LOG that started, did not end, and still run. */
static long long others_alive(const char *path)
{
    FILE *f = fopen(path, "r");
    long starts[256], ends[256];
    int ns = 0, ne = 0;
    char kind[16];
    long pid;
    long long alive = 0;

    if (!f)
        return 0;
    while (fscanf(f, "%15s %ld %*[^\n]", kind, &pid) == 2) {
        if (strcmp(kind, "start") == 0 && ns < 256)
            starts[ns++] = pid;
        else if (strcmp(kind, "end") == 0 && ne < 256)
            ends[ne++] = pid;
    }
    fclose(f);
    for (int i = 0; i < ns; i++) {
        int ended = 0;

        if (starts[i] == (long)getpid())
            continue;
        for (int j = 0; j < ne; j++)
            ended |= ends[j] == starts[i];
        if (!ended && running(starts[i]))
            alive++;
    }
    return alive;
}

int main(int argc, char **argv)
{
    long long ms = 1000, until;
    int mode = 0;   /* 0 default, 1 ignore, 2 trap, 3 exit */
    struct sigaction sa;

    if (argc < 2)
        return 2;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--ms") == 0 && i + 1 < argc)
            ms = atoll(argv[++i]);
        else if (strcmp(argv[i], "--ignore-term") == 0)
            mode = 1;
        else if (strcmp(argv[i], "--trap-term") == 0)
            mode = 2;
        else if (strcmp(argv[i], "--exit-on-term") == 0)
            mode = 3;
        else
            return 2;
    }
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = mode == 1 ? SIG_IGN : on_term;
    if (mode != 0)
        sigaction(SIGTERM, &sa, NULL);
    log_fd = open(argv[1], O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (log_fd < 0)
        return 2;
    log_line("start", others_alive(argv[1]), 1);
    until = now_ns() + ms * 1000000LL;
    while (now_ns() < until) {
        struct timespec step = {0, 5000000L};

        if (got_term == 1) {
            got_term = 2;
            log_line("term", 0, 0);
            if (mode == 3)
                break;
        }
        log_line("w", 0, 0);
        nanosleep(&step, NULL);
    }
    log_line("end", 0, 0);
    return 0;
}
