/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_fairnr.c - the non-reentrant fair lock (rlk_fairlock_set_non_reentrant,
 * `rlk lock --fair --non-reentrant`) across processes, against a real
 * redis-server:
 *   - the invariant: 6 processes x 3 threads acquire and release one lock,
 *     each holder's second acquisition refused (RLK_ERR_REENTRY) while it
 *     holds; the merged event log has no two holds overlapping (0 overlaps);
 *   - its control: the same children, each process on a lock of its own
 *     (the planted fault: no shared lock between processes), must show
 *     overlaps in the same checker;
 *   - the CLI (the rlk binary in $RLK_TEST_CLI): 5 rlk lock --fair
 *     --non-reentrant started together run their commands one at a time
 *     (0 overlapping spans), and the control: the same commands run without
 *     rlk overlap; --non-reentrant --fair in either order; a conflicting
 *     kind refused in one line (exit 2); a nested rlk lock on the same lock
 *     refused at once (exit 2), where the reentrant fair lock re-enters.
 *
 * Child modes (argv[1]): contend URL THREADS ITERS LOGFILE (one lock);
 * own URL THREADS ITERS LOGFILE (the control: a lock per process);
 * span FILE (the command rlk runs: writes "<start ms> <end ms>" after
 * SPAN_MS).
 */
#include "check.h"
#include "fl_util.h"

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PROCS 6
#define THREADS 3
#define ITERS 20
#define SPAN_MS 300         /* a CLI command's span */
#define CLI_PROCS 5

static rlk_fx_server srv;
static char url[128];
static tk_stall stall;
static char self_exe[512];

/* ------------------------------------------------------------ child: contend */

typedef struct contend {
    rlk_fairlock *lock;
    int iters;
    tk_hold *recs;              /* iters per thread */
    int errors;
} contend;

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};

    nanosleep(&ts, NULL);
}

static void contend_once(contend *ct, int idx, int i, unsigned *seed)
{
    tk_hold *r = &ct->recs[idx * ct->iters + i];
    long long lease = (i + idx) % 2 ? 5000 : 0;     /* half leased, half watchdog */

    if (rlk_fairlock_try_lock(ct->lock, 30000, lease) != RLK_OK) {
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
        return;
    }
    r->start_ns = rlk_fx_now_ns();
    /* The holder asking again is refused at once, and still holds it. */
    if (i % 4 == 0 && rlk_fairlock_try_lock(ct->lock, 1000, lease) != RLK_ERR_REENTRY)
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
    sleep_us(1000 + (long)(tk_rand(seed) % 2000));  /* a hold long enough to be overlapped */
    r->end_ns = rlk_fx_now_ns();
    r->pid = (int)getpid();
    r->thread = idx;
    r->seq = i;
    r->kind = TK_HOLD_EXCL;
    if (rlk_fairlock_unlock(ct->lock) != RLK_OK)
        __atomic_add_fetch(&ct->errors, 1, __ATOMIC_RELAXED);
}

static void *contend_main(void *arg)
{
    tk_thread_arg *a = arg;
    contend *ct = a->ctx;
    unsigned seed = (unsigned)getpid() * 31u + (unsigned)a->idx;

    for (int i = 0; i < ct->iters; i++)
        contend_once(ct, a->idx, i, &seed);
    return NULL;
}

/* own: the control, a lock of this process's own. */
static int child_contend(const char *curl, int threads, int iters, const char *logpath, int own)
{
    rlk_client *c = tk_connect(curl, 2000, threads);
    contend ct = {0};
    char name[64];
    size_t n;

    if (own)
        snprintf(name, sizeof name, "fnr:own:%d", (int)getpid());
    else
        snprintf(name, sizeof name, "fnr:contend");
    if (!c || threads > 16 || !(ct.lock = rlk_fairlock_new(c, name)) ||
        rlk_fairlock_set_non_reentrant(ct.lock, 1) != RLK_OK)
        return 2;
    ct.iters = iters;
    ct.recs = calloc((size_t)(threads * iters), sizeof *ct.recs);
    if (!ct.recs)
        return 2;
    if (tk_child_go_threads(threads, contend_main, &ct) != 0)
        return 2;
    n = tk_holds_compact(ct.recs, (size_t)(threads * iters));
    if (tk_holds_save(logpath, ct.recs, n) != 0)
        ct.errors++;
    tk_say("done %zu %d", n, ct.errors);
    free(ct.recs);
    rlk_fairlock_free(ct.lock);
    rlk_free(c);
    return 0;
}

static int child_span(const char *path)
{
    long long start = rlk_fx_now_ms();
    FILE *f;

    rlk_fx_sleep_ms(SPAN_MS);
    if (!(f = fopen(path, "w")))
        return 2;
    fprintf(f, "%lld %lld\n", start, rlk_fx_now_ms());
    return fclose(f) == 0 ? 0 : 2;
}

static int child_main(int argc, char **argv)
{
    if (argc == 6 && (strcmp(argv[1], "contend") == 0 || strcmp(argv[1], "own") == 0))
        return child_contend(argv[2], atoi(argv[3]), atoi(argv[4]), argv[5],
                             strcmp(argv[1], "own") == 0);
    if (argc == 3 && strcmp(argv[1], "span") == 0)
        return child_span(argv[2]);
    fprintf(stderr, "fl_fairnr: unknown child mode\n");
    return 2;
}

/* ------------------------------------------------------------ invariant and control */

/* Runs PROCS children in mode ("contend" or "own"); the checker's report into *rep. */
static void run_contend(const char *mode, tk_hold_report *rep, int *errors_out, size_t *n_out)
{
    fl_contend_run run;

    REQUIRE(fl_contend_mode(mode, url, PROCS, THREADS, ITERS, 60000, 0, &run) == 0);
    CHECK_INT_EQ(run.spawned, PROCS);
    CHECKF(run.not_ready == 0, "%d children did not get ready", run.not_ready);
    CHECKF(run.unclean == 0, "%d children did not exit cleanly", run.unclean);
    CHECK_INT_EQ(run.done, PROCS);
    CHECK_INT_EQ(run.bad, 0);
    *rep = run.rep;
    *errors_out = run.errors;
    *n_out = run.n;
    free(run.recs);
}

static void test_invariant(void)
{
    tk_hold_report rep;
    int errors = 0;
    size_t n = 0;

    run_contend("contend", &rep, &errors, &n);
    printf("  non-reentrant fair lock: %d processes x %d threads, %zu holds, %ld overlaps, "
           "%d errors\n", PROCS, THREADS, n, rep.conflicts, errors);
    CHECK_INT_EQ(errors, 0);
    CHECK_INT_EQ(n, PROCS * THREADS * ITERS);
    CHECK_INT_EQ(rep.conflicts, 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "fnr:contend"), 0);
    CHECK_INT_EQ(tk_key_exists(&srv, "redisson_lock_queue:{fnr:contend}"), 0);
}

static void test_invariant_control(void)
{
    tk_hold_report rep;
    int errors = 0;
    size_t n = 0;

    run_contend("own", &rep, &errors, &n);
    printf("  control, a lock per process: %zu holds, %ld overlaps (must be > 0)\n", n,
           rep.conflicts);
    CHECK_INT_EQ(errors, 0);
    CHECK_INT_EQ(n, PROCS * THREADS * ITERS);
    CHECKF(rep.conflicts > 0, "the checker saw no overlap between processes on separate locks");
}

/* ------------------------------------------------------------ the CLI */

/* Starts rlk with args (after "rlk"), stdout and stderr to /dev/null, or stderr into the
 * file errpath when given. The pid, or -1. */
static pid_t rlk_start(const char *rlk, const char *const *args, const char *errpath)
{
    const char *argv[40];
    int n = 0;
    pid_t kid;

    argv[n++] = rlk;
    for (int i = 0; args[i] && n < 39; i++)
        argv[n++] = args[i];
    argv[n] = NULL;
    if ((kid = fork()) == 0) {
        int null = open("/dev/null", O_WRONLY);
        int err = errpath ? open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600) : null;

        dup2(null, 1);
        dup2(err, 2);
        execv(rlk, (char *const *)argv);
        _exit(127);
    }
    return kid;
}

/* The exit code of pid within timeout_ms (SIGKILL after: -1). */
static int rlk_wait(pid_t pid, long long timeout_ms)
{
    long long t0 = rlk_fx_now_ms();
    int status;

    while (waitpid(pid, &status, WNOHANG) != pid) {
        if (rlk_fx_now_ms() - t0 > timeout_ms) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        rlk_fx_sleep_ms(5);
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int rlk_run(const char *rlk, const char *const *args, const char *errpath)
{
    pid_t pid = rlk_start(rlk, args, errpath);

    return pid < 0 ? -1 : rlk_wait(pid, 30000);
}

/* Pairs of the spans in dir/span.<i> (i < n) that overlap; *found: how many spans were read. */
static int spans_overlapping(const char *dir, int n, int *found)
{
    long long s[CLI_PROCS], e[CLI_PROCS];
    int k = 0, overlaps = 0;

    for (int i = 0; i < n; i++) {
        char path[256];
        FILE *f;

        snprintf(path, sizeof path, "%s/span.%d", dir, i);
        if ((f = fopen(path, "r")) != NULL) {
            if (fscanf(f, "%lld %lld", &s[k], &e[k]) == 2)
                k++;
            fclose(f);
        }
        unlink(path);
    }
    for (int i = 0; i < k; i++)
        for (int j = i + 1; j < k; j++)
            overlaps += s[i] < e[j] && s[j] < e[i];
    *found = k;
    return overlaps;
}

/* CLI_PROCS commands "span dir/span.<i>", started together, through rlk (locked) or not. */
static int cli_spans(const char *rlk, const char *dir, int locked, int *found)
{
    pid_t pids[CLI_PROCS];
    int codes_ok = 1;

    for (int i = 0; i < CLI_PROCS; i++) {
        char path[256];
        const char *with[] = {"lock", i % 2 ? "--non-reentrant" : "--fair",
                              i % 2 ? "--fair" : "--non-reentrant", "fnr:cli", "--url", url,
                              "-w", "60", "--", self_exe, "span", path, NULL};
        const char *bare[] = {"span", path, NULL};

        snprintf(path, sizeof path, "%s/span.%d", dir, i);
        pids[i] = locked ? rlk_start(rlk, with, NULL) : rlk_start(self_exe, bare, NULL);
    }
    for (int i = 0; i < CLI_PROCS; i++)
        codes_ok &= pids[i] > 0 && rlk_wait(pids[i], 60000) == 0;
    CHECKF(codes_ok, "a %s command did not exit 0", locked ? "locked" : "bare");
    return spans_overlapping(dir, CLI_PROCS, found);
}

static int file_lines(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, len - 1, f) : 0;
    int lines = 0;

    if (f)
        fclose(f);
    buf[n] = '\0';
    for (size_t i = 0; i < n; i++)
        lines += buf[i] == '\n';
    return lines;
}

static void test_cli(void)
{
    const char *rlk = getenv("RLK_TEST_CLI");
    char dir[] = "/tmp/rlk-fnr-cli-XXXXXX", errpath[256], err[1024];
    int found = 0, overlaps;

    if (!rlk || !*rlk) {
        printf("- test_cli: skipped (RLK_TEST_CLI does not name the rlk binary)\n");
        return;
    }
    REQUIRE(mkdtemp(dir) != NULL);
    snprintf(errpath, sizeof errpath, "%s/err", dir);

    overlaps = cli_spans(rlk, dir, 1, &found);
    printf("  CLI: %d rlk lock --fair --non-reentrant started together: %d spans, %d overlapping "
           "pairs\n", CLI_PROCS, found, overlaps);
    CHECK_INT_EQ(found, CLI_PROCS);
    CHECK_INT_EQ(overlaps, 0);
    overlaps = cli_spans(rlk, dir, 0, &found);
    printf("  CLI control, the same commands without rlk: %d spans, %d overlapping pairs (must be "
           "> 0)\n", found, overlaps);
    CHECK_INT_EQ(found, CLI_PROCS);
    CHECKF(overlaps > 0, "the spans of commands run together did not overlap");

    {   /* Conflicting kinds: one line, exit 2. */
        static const char *const other[] = {"--spin", "--read", "--write", "--fenced"};

        for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
            const char *args[] = {"lock", "--fair", "--non-reentrant", other[k], "fnr:x", "--url",
                                  url, "--", "true", NULL};

            CHECK_INT_EQ(rlk_run(rlk, args, errpath), 2);
            CHECKF(file_lines(errpath, err, sizeof err) == 1 &&
                   strstr(err, "--non-reentrant goes alone or with --fair"), "%s: %s", other[k],
                   err);
        }
    }
    {   /* Nested on the same lock: refused at once (exit 2); the reentrant fair lock re-enters. */
        const char *nested[] = {"lock", "--fair", "--non-reentrant", "fnr:nest", "--url", url,
                                "-w", "10", "--", rlk, "lock", "--fair", "--non-reentrant",
                                "fnr:nest", "--url", url, "-w", "10", "--", "true", NULL};
        const char *reentrant[] = {"lock", "--fair", "fnr:nest", "--url", url, "-w", "10", "--",
                                   rlk, "lock", "--fair", "fnr:nest", "--url", url, "-w", "10",
                                   "--", "true", NULL};
        long long t0 = rlk_fx_now_ms();

        CHECK_INT_EQ(rlk_run(rlk, nested, errpath), 2);
        file_lines(errpath, err, sizeof err);
        CHECK_STR_CONTAINS(err, "non-reentrant");
        CHECKF(rlk_fx_now_ms() - t0 < 8000, "refused after %lld ms (its -w is 10 s)",
               rlk_fx_now_ms() - t0);
        CHECK_INT_EQ(rlk_run(rlk, reentrant, errpath), 0);
        CHECK_INT_EQ(tk_key_exists(&srv, "fnr:nest"), 0);
    }
    unlink(errpath);
    rmdir(dir);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        return child_main(argc, argv);
    if (fl_suite_begin("fl_fairnr", &srv, url, sizeof url, &stall, self_exe, sizeof self_exe) != 0)
        return 1;
    RUN_TEST(test_invariant);
    RUN_TEST(test_invariant_control);
    RUN_TEST(test_cli);
    tk_suite_stop(&srv, &stall);
    return check_summary("fl_fairnr");
}
