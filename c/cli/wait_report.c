/*
 * wait_report.c - the waiting reports of --verbose (wait_report.h).
 *
 * The thread sleeps on a condition variable (CLOCK_MONOTONIC) so that
 * rlk_wr_stop ends it at once; each report reads the holders with plain
 * commands on the thread's own client (inspect_read.c), bounded by the
 * client's command timeout.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "inspect.h"
#include "wait_report.h"

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    int running, stop, reported;
    long long started_ns;
    char what[RLK_LC_WHAT_MAX];
    char *url, *name;
} rlk_wr = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void rlk_wr_holders(rlk_client *c, char *buf, size_t len)
{
    rlk_ik_view v;

    buf[0] = '\0';
    if (rlk_ik_read(c, rlk_wr.name, RLK_IK_AUTO, &v) != RLK_OK) {
        snprintf(buf, len, "; holders unknown (%s)", rlk_errstr(c));
        return;
    }
    if (v.kind == RLK_IK_PSEMAPHORE || v.kind == RLK_IK_SEMAPHORE)
        snprintf(buf, len, "; %lld permits available, %zu held", v.count, v.permits_total);
    else if (v.nholders > 0) {
        char ttl[64];

        /* PTTL -1: a hash without a TTL (a lock always has one): no "ttl -1 ms" */
        if (v.ttl_ms >= 0)
            snprintf(ttl, sizeof ttl, "ttl %lld ms", v.ttl_ms);
        else
            snprintf(ttl, sizeof ttl, "no expiry: it waits for a release or a force unlock");
        snprintf(buf, len, "; held by %.*s%s (%s, %s)%s", (int)v.holders[0].owner_len,
                 v.holders[0].owner, v.holders[0].mode && !strcmp(v.holders[0].mode, "write")
                 ? " (write)" : "", rlk_ik_label(v.kind), ttl,
                 v.nholders > 1 ? " and others" : "");
    } else if (v.kind == RLK_IK_FASTMULTI) {
        size_t held = 0, first = 0;

        for (size_t k = 0; k < v.nvalues; k++)
            if (v.values[k].expire_in_ms > 0 && held++ == 0)
                first = k;
        if (held > 0)
            snprintf(buf, len, "; %zu value%s held: %.*s by %.*s (expires in %lld ms)%s", held,
                     held == 1 ? "" : "s", (int)v.values[first].value_len,
                     v.values[first].value, (int)v.values[first].holder_len,
                     v.values[first].holder, v.values[first].expire_in_ms,
                     held > 1 ? " and others" : "");
        else
            snprintf(buf, len, "; no value held now");
    }
    else if ((v.kind == RLK_IK_NONE || v.kind == RLK_IK_REENTRANT) && v.delay_ttl_ms >= 0)
        snprintf(buf, len, "; free, but in its lock-delay (a holder lost it without releasing "
                 "it): %lld ms left (%s)", v.delay_ttl_ms, v.delay_key);
    else if (v.kind == RLK_IK_NONE)
        snprintf(buf, len, "; free now");
    else
        snprintf(buf, len, "; %s, no holder listed", rlk_ik_label(v.kind));
    rlk_ik_free(&v);
}

static void rlk_wr_report(rlk_client **c, long long waited_ms)
{
    char holders[800] = "", waited[32];

    if (rlk_wr.name && !*c) {
        rlk_options o;

        rlk_options_init(&o);
        if (rlk_cli_conn_options_quiet(rlk_wr.url, &o) < 0) {
            o.pool_size = 1;
            o.no_preload = 1;
            *c = rlk_connect(&o);
        }
    }
    if (rlk_wr.name && *c)
        rlk_wr_holders(*c, holders, sizeof holders);
    rlk_lc_format_seconds(waited_ms / 1000 * 1000, waited, sizeof waited);
    rlk_cli_fail(0, "%s: waiting for %s s%s", rlk_wr.what, waited, holders);
}

static void rlk_wr_deadline(struct timespec *ts, long long at_ns)
{
    ts->tv_sec = at_ns / 1000000000LL;
    ts->tv_nsec = at_ns % 1000000000LL;
}

static void *rlk_wr_main(void *arg)
{
    long long next_ns = rlk_wr.started_ns + RLK_WR_FIRST_MS * 1000000LL;
    rlk_client *c = NULL;
    struct timespec ts;

    (void)arg;
    pthread_mutex_lock(&rlk_wr.mu);
    while (!rlk_wr.stop) {
        rlk_wr_deadline(&ts, next_ns);
        pthread_cond_timedwait(&rlk_wr.cv, &rlk_wr.mu, &ts);
        if (rlk_wr.stop || rlk_lc_now_ns() < next_ns)
            continue;
        pthread_mutex_unlock(&rlk_wr.mu);
        rlk_wr_report(&c, (rlk_lc_now_ns() - rlk_wr.started_ns) / 1000000LL);
        pthread_mutex_lock(&rlk_wr.mu);
        rlk_wr.reported = 1;
        while (next_ns <= rlk_lc_now_ns())
            next_ns += RLK_WR_EVERY_MS * 1000000LL;
    }
    pthread_mutex_unlock(&rlk_wr.mu);
    rlk_free(c);
    return NULL;
}

void rlk_wr_start(const char *what, const char *url, const char *name)
{
    pthread_condattr_t attr;

    if (!rlk_cli_g.verbose || rlk_wr.running)
        return;
    snprintf(rlk_wr.what, sizeof rlk_wr.what, "%s", what);
    rlk_wr.url = url ? strdup(url) : NULL;
    rlk_wr.name = name ? strdup(name) : NULL;
    rlk_wr.stop = 0;
    rlk_wr.reported = 0;
    rlk_wr.started_ns = rlk_lc_now_ns();
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_destroy(&rlk_wr.cv);
    pthread_cond_init(&rlk_wr.cv, &attr);
    pthread_condattr_destroy(&attr);
    if (pthread_create(&rlk_wr.thread, NULL, rlk_wr_main, NULL) == 0)
        rlk_wr.running = 1;
}

void rlk_wr_stop(int acquired)
{
    char waited[32];

    if (!rlk_wr.running)
        return;
    pthread_mutex_lock(&rlk_wr.mu);
    rlk_wr.stop = 1;
    pthread_cond_signal(&rlk_wr.cv);
    pthread_mutex_unlock(&rlk_wr.mu);
    pthread_join(rlk_wr.thread, NULL);
    rlk_wr.running = 0;
    if (acquired && rlk_wr.reported) {
        rlk_lc_format_seconds((rlk_lc_now_ns() - rlk_wr.started_ns) / 1000000LL, waited,
                              sizeof waited);
        rlk_cli_fail(0, "%s: acquired after %s s", rlk_wr.what, waited);
    }
    free(rlk_wr.url);
    free(rlk_wr.name);
    rlk_wr.url = rlk_wr.name = NULL;
}
