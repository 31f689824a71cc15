/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fence_e2e.c - the fencing token end to end: holders paused past their lease write late, and the
 * resource's check refuses them.
 *
 * WORKERS processes loop: take the fenced lock "{e2e}" (rlk_fenced_try_lock, lease LEASE_MS, no
 * watchdog), then append WRITES entries "<token> <pid> <n>" to the list {e2e}:log, WRITE_GAP_MS
 * apart, then unlock. Meanwhile a nemesis (this program's parent) SIGSTOPs the worker that holds
 * the lock (the workers tell it through shared memory; a random one when none holds) for PAUSE_MS
 * (well past the lease) every NEMESIS_GAP_MS, then SIGCONTs it: the lock expires under the
 * paused holder, another worker takes it with a higher token and writes, and the paused one, once
 * resumed, goes on writing with its old token.
 *
 *   checked run  the writes go through fence/rpush (rlk_fence_write) with fence key {e2e}:fence;
 *                a refused write (RLK_ERR_FENCED) ends that hold. Asserted: stale writes were
 *                attempted and refused (count > 0); the list holds exactly the accepted writes, and
 *                in list order (the server's order) every token is >= every token before it.
 *   control run  the same workers and nemesis, the writes by plain RPUSH: at least one entry's token
 *                is below an earlier entry's (a stale write landed), asserted.
 * Each run lasts RUN_MS; everything is bounded in time.
 */
#include "check.h"
#include "fixture.h"
#include "tk_util.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define WORKERS 4
#define LEASE_MS 300
#define WRITES 8
#define WRITE_GAP_MS 15
#define PAUSE_MS 500
#define NEMESIS_GAP_MS 100
#define RUN_MS 6000

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;
static volatile int *holding; /* shared with the workers: [w] = 1 while worker w holds the lock */

#define LOG_KEY "{e2e}:log"
#define FENCE_KEY "{e2e}:fence"

typedef struct wstats {
    int holds;       /* acquisitions */
    int accepted;    /* writes the resource kept (checked run: accepted by fence/rpush) */
    int refused;     /* writes refused with RLK_ERR_FENCED */
    int errors;      /* anything else */
} wstats;

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

static void worker(int w, int checked, long long deadline_ms, int out)
{
    rlk_client *c = tk_connect(url, 0, 2);
    rlk_fenced *f = c ? rlk_fenced_new(c, "{e2e}") : NULL;
    wstats st = {0, 0, 0, 0};
    char entry[96];

    if (!f)
        _exit(3);
    while (rlk_fx_now_ms() < deadline_ms) {
        long long token = 0;
        int rc = rlk_fenced_try_lock(f, 1000, LEASE_MS, &token);

        if (rc == RLK_ERR_BUSY || rc == RLK_ERR_TIMEOUT) /* still held when the wait ran out */
            continue;
        if (rc != RLK_OK) {
            st.errors++;
            fprintf(stderr, "fence_e2e: worker %d: lock: %s %s\n", (int)getpid(), rlk_strerror(rc), rlk_errstr(c));
            sleep_ms(10);
            continue;
        }
        st.holds++;
        holding[w] = 1;
        for (int n = 0; n < WRITES; n++) {
            const char *args[1] = {entry};

            snprintf(entry, sizeof entry, "%lld %d %d", token, (int)getpid(), n);
            if (checked) {
                rc = rlk_fence_write(c, "rpush", FENCE_KEY, LOG_KEY, (uint64_t)token, 1, args, NULL, NULL,
                                     NULL);
            } else {
                const char *argv[3] = {"RPUSH", LOG_KEY, entry};
                redisReply *r = NULL;
                rc = rlk_command(c, 3, argv, NULL, &r);
                if (r)
                    freeReplyObject(r);
            }
            if (rc == RLK_ERR_FENCED) {
                st.refused++;
                break; /* a newer holder wrote: this hold is over */
            }
            if (rc != RLK_OK) {
                st.errors++;
                fprintf(stderr, "fence_e2e: worker %d: write: %s %s\n", (int)getpid(), rlk_strerror(rc),
                        rlk_errstr(c));
                break;
            }
            st.accepted++;
            sleep_ms(WRITE_GAP_MS);
        }
        holding[w] = 0;
        rc = rlk_fenced_unlock(f); /* RLK_ERR_NOT_OWNER after the lease ran out: expected */
        if (rc != RLK_OK && rc != RLK_ERR_NOT_OWNER) {
            st.errors++;
            fprintf(stderr, "fence_e2e: worker %d: unlock: %s %s\n", (int)getpid(), rlk_strerror(rc),
                    rlk_errstr(c));
        }
    }
    if (write(out, &st, sizeof st) != (ssize_t)sizeof st)
        _exit(4);
    rlk_fenced_free(f);
    rlk_free(c);
    _exit(0);
}

/* One run: workers plus the nemesis; returns the number of list entries whose token is below an
 * earlier entry's, and the workers' totals in *tot. */
static int run(int checked, wstats *tot, long long *entries, int *pauses)
{
    pid_t pids[WORKERS];
    int p[2], back = 0, status;
    long long deadline, max_token = 0;
    rlk_client *c;
    redisReply *r = NULL;
    const char *del[4] = {"DEL", LOG_KEY, FENCE_KEY, NULL};
    const char *lrange[4] = {"LRANGE", LOG_KEY, "0", "-1"};
    unsigned seed = 42u + (unsigned)checked;

    memset(tot, 0, sizeof *tot);
    *entries = 0;
    *pauses = 0;
    c = tk_connect(url, 0, 1);
    if (!c)
        return -1;
    if (rlk_command(c, 3, del, NULL, &r) == RLK_OK && r)
        freeReplyObject(r);
    rlk_free(c); /* no client (and no thread of its) across the forks */
    if (pipe(p) != 0)
        return -1;
    for (int w = 0; w < WORKERS; w++)
        holding[w] = 0;
    deadline = rlk_fx_now_ms() + RUN_MS;
    for (int w = 0; w < WORKERS; w++) {
        pids[w] = fork();
        if (pids[w] == 0) {
            close(p[0]);
            worker(w, checked, deadline, p[1]);
        }
    }
    close(p[1]);
    /* The nemesis: pause the worker that holds the lock (a random one when none does) well past
     * the lease, resume it, wait, again. */
    while (rlk_fx_now_ms() + PAUSE_MS + NEMESIS_GAP_MS < deadline) {
        int pick = (int)(rand_r(&seed) % WORKERS);
        pid_t victim;

        sleep_ms(NEMESIS_GAP_MS);
        for (int i = 0; i < 50; i++) { /* at most 500 ms for a holder to show up */
            int found = -1;
            for (int w = 0; w < WORKERS; w++)
                if (holding[w])
                    found = w;
            if (found >= 0) {
                pick = found;
                break;
            }
            sleep_ms(10);
        }
        victim = pids[pick];
        kill(victim, SIGSTOP);
        sleep_ms(PAUSE_MS);
        kill(victim, SIGCONT);
        (*pauses)++;
    }
    for (int w = 0; w < WORKERS; w++) {
        wstats s;
        if (read(p[0], &s, sizeof s) == (ssize_t)sizeof s) {
            tot->holds += s.holds;
            tot->accepted += s.accepted;
            tot->refused += s.refused;
            tot->errors += s.errors;
        } else {
            tot->errors++;
        }
    }
    close(p[0]);
    for (int w = 0; w < WORKERS; w++) {
        kill(pids[w], SIGCONT);
        waitpid(pids[w], &status, 0);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
            tot->errors++;
    }
    c = tk_connect(url, 0, 1);
    if (!c || rlk_command(c, 4, lrange, NULL, &r) != RLK_OK || !r || r->type != REDIS_REPLY_ARRAY) {
        if (c)
            rlk_free(c);
        return -1;
    }
    *entries = (long long)r->elements;
    for (size_t i = 0; i < r->elements; i++) {
        long long token = atoll(r->element[i]->str);
        if (token < max_token)
            back++;
        if (token > max_token)
            max_token = token;
    }
    freeReplyObject(r);
    rlk_free(c);
    return back;
}

static void test_checked(void)
{
    wstats t;
    long long entries;
    int pauses, back = run(1, &t, &entries, &pauses);

    printf("checked run: %d pauses, %d holds, %d writes accepted, %d stale writes refused, %lld entries, "
           "%d entries below an earlier token, %d errors, longest stall %lld ms\n",
           pauses, t.holds, t.accepted, t.refused, entries, back, t.errors, tk_stall_max_gap_ms(&stall));
    CHECK_INT_EQ(back, 0);
    CHECK(t.refused > 0);
    CHECK_INT_EQ(entries, t.accepted);
    CHECK_INT_EQ(t.errors, 0);
    CHECK(pauses > 0);
}

static void test_control(void)
{
    wstats t;
    long long entries;
    int pauses, back = run(0, &t, &entries, &pauses);

    printf("control run (plain RPUSH, no check): %d pauses, %d holds, %lld entries, %d entries below an "
           "earlier token (must be > 0), %d errors\n", pauses, t.holds, entries, back, t.errors);
    CHECK(back > 0);
    CHECK_INT_EQ(entries, t.accepted);
    CHECK_INT_EQ(t.errors, 0);
}

int main(void)
{
    holding = mmap(NULL, sizeof(int) * WORKERS, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (holding == MAP_FAILED)
        return 1;
    if (tk_suite_start("fence_e2e", &srv, url, sizeof url, &stall) != 0)
        return 1;
    RUN_TEST(test_checked);
    RUN_TEST(test_control);
    tk_suite_stop(&srv, &stall);
    return check_summary("fence_e2e");
}
