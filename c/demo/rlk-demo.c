/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rlk-demo: several processes contend for one reentrant lock through the C
 * library and print who holds it when. The parent collects every holding
 * interval over a pipe and checks that no two overlap.
 *
 *   rlk-demo [--url URL] [--workers N] [--rounds R] [--hold-ms MS] [--name NAME]
 */
#include "rlk.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

typedef struct demo_event {
    int worker;
    int64_t acquired_ns;
    int64_t released_ns;
    int64_t waited_ns;
} demo_event;

static int64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: rlk-demo [--url URL] [--workers N] [--rounds R] [--hold-ms MS] [--name NAME]\n"
            "  N processes (default 6) each take the reentrant lock NAME (default rlk:demo)\n"
            "  R times (default 3) with a blocking wait woken by pub/sub, re-enter it once,\n"
            "  hold it MS ms (default 40), release it twice, then work outside it a while.\n");
}

static int parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) return -1;
    *out = (int)v;
    return 0;
}

/* One worker: its own client (so its own holder id, subscriber and
 * watchdog); takes the lock with the library's blocking wait (woken by the
 * unlock message), re-enters it, holds it, releases twice; reports on fd. */
static int run_worker(int idx, const char *url, const char *name, int rounds, int hold_ms,
                      int64_t t0, int fd) {
    rlk_client *c = rlk_connect_url(url);
    if (!c || rlk_err(c)) {
        fprintf(stderr, "worker %d: %s\n", idx, c ? rlk_errstr(c) : "out of memory");
        rlk_free(c);
        return 1;
    }
    rlk_lock *l = rlk_lock_new(c, name);
    if (!l) {
        fprintf(stderr, "worker %d: %s\n", idx, rlk_errstr(c));
        rlk_free(c);
        return 1;
    }
    char owner[128] = "?";
    rlk_lock_owner(l, owner, sizeof owner);
    int rc = 0;
    srand((unsigned)(getpid() ^ now_ns()));
    for (int r = 0; r < rounds && rc == 0; r++) {
        int64_t asked = now_ns();
        /* lease <= 0: the watchdog lease (30 s, renewed every 10 s until unlock) */
        if (rlk_lock_lock(l, -1) != RLK_OK || rlk_lock_lock(l, -1) != RLK_OK) {
            fprintf(stderr, "worker %d: lock: %s\n", idx, rlk_errstr(c));
            rc = 1;
            break;
        }
        int64_t got_at = now_ns();
        long long count = 0, ttl = 0;
        rlk_lock_hold_count(l, &count);
        rlk_lock_remaining_ttl(l, &ttl);
        printf("%9.3f ms  worker %d  holds %s as %s  (waited %.1f ms, hold count %lld, ttl %lld ms)\n",
               (got_at - t0) / 1e6, idx, name, owner, (got_at - asked) / 1e6, count, ttl);
        fflush(stdout);
        sleep_ms(hold_ms);
        int64_t rel_at = now_ns();
        int locked = 1;
        if (rlk_lock_unlock(l) != RLK_OK || rlk_lock_unlock(l) != RLK_OK) {
            fprintf(stderr, "worker %d: unlock: %s\n", idx, rlk_errstr(c));
            rc = 1;
        }
        rlk_lock_is_held_by_me(l, &locked);
        printf("%9.3f ms  worker %d  released %s%s\n", (now_ns() - t0) / 1e6, idx, name,
               locked ? "  (UNEXPECTED: still held)" : "");
        fflush(stdout);
        demo_event ev = {idx, got_at, rel_at, got_at - asked};
        if (write(fd, &ev, sizeof ev) != (ssize_t)sizeof ev || locked) rc = 1;
        sleep_ms(hold_ms / 2 + rand() % (hold_ms + 1)); /* work outside the lock */
    }
    rlk_lock_free(l);
    rlk_free(c);
    return rc;
}

static int cmp_event(const void *a, const void *b) {
    const demo_event *x = a, *y = b;
    return (x->acquired_ns > y->acquired_ns) - (x->acquired_ns < y->acquired_ns);
}

int main(int argc, char **argv) {
    const char *url = getenv("RLK_URL");
    const char *name = "rlk:demo";
    int workers = 6, rounds = 3, hold_ms = 40;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(a, "--url") && v) {
            url = v, i++;
        } else if (!strcmp(a, "--name") && v && *v) {
            name = v, i++;
        } else if (!strcmp(a, "--workers") && v && parse_int(v, 1, 64, &workers) == 0) {
            i++;
        } else if (!strcmp(a, "--rounds") && v && parse_int(v, 1, 1000, &rounds) == 0) {
            i++;
        } else if (!strcmp(a, "--hold-ms") && v && parse_int(v, 0, 10000, &hold_ms) == 0) {
            i++;
        } else {
            fprintf(stderr, "rlk-demo: bad argument '%s' (try --help)\n", a);
            return 2;
        }
    }
    if (!url) url = "redis://127.0.0.1:6379";

    /* Fail early, in one line, when the server cannot be reached. */
    rlk_client *probe = rlk_connect_url(url);
    if (!probe || rlk_err(probe)) {
        fprintf(stderr, "rlk-demo: %s\n", probe ? rlk_errstr(probe) : "out of memory");
        rlk_free(probe);
        return 3;
    }
    rlk_free(probe);

    printf("rlk-demo: %d processes contend for reentrant lock '%s' on %s, %d rounds each, "
           "holding %d ms\n", workers, name, url, rounds, hold_ms);
    fflush(stdout);
    int pfd[2];
    if (pipe(pfd) != 0) {
        perror("rlk-demo: pipe");
        return 1;
    }
    int64_t t0 = now_ns();
    for (int w = 0; w < workers; w++) {
        pid_t pid = fork();
        if (pid < 0) {
            perror("rlk-demo: fork");
            return 1;
        }
        if (pid == 0) {
            close(pfd[0]);
            _exit(run_worker(w, url, name, rounds, hold_ms, t0, pfd[1]));
        }
    }
    close(pfd[1]);
    int total = workers * rounds, n = 0;
    demo_event *ev = calloc((size_t)total, sizeof *ev);
    if (!ev) return 1;
    while (n < total && read(pfd[0], &ev[n], sizeof ev[n]) == (ssize_t)sizeof ev[n]) n++;
    close(pfd[0]);
    int failed = 0, status;
    while (wait(&status) > 0)
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failed++;

    qsort(ev, (size_t)n, sizeof *ev, cmp_event);
    int overlaps = 0; /* sorted by acquisition: each must start after every earlier release */
    int64_t last_release = 0;
    for (int i = 0; i < n; i++) {
        if (i > 0 && ev[i].acquired_ns < last_release) overlaps++;
        if (ev[i].released_ns > last_release) last_release = ev[i].released_ns;
    }
    printf("rlk-demo: %d acquisitions by %d processes, %d overlapping holds, %d failed workers\n",
           n, workers, overlaps, failed);
    free(ev);
    return (overlaps == 0 && failed == 0 && n == total) ? 0 : 1;
}
