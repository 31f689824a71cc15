/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lock_check.c - the hold checker: a small thread that asks the server whether the hold is
 * still there (rlk_lc_hold.check) whenever a message comes on the lock's channel
 * (rlk_lc_hold.check_channel: a force unlock publishes there) and every check_period_ns, and
 * reports a hold found gone through the lost-report pipe (RLK_LC_LOST_CHECKED), as the
 * watchdog's callback reports a renewal that found it gone.
 *
 * For holds nothing renews: a fixed lease (-l) has no renewal that could find the lock
 * force-unlocked or deleted, so without this its command ran on until the lease's own
 * deadline. The faster MultiLock's watchdog entries do not listen on the group's channel, so
 * its renewed holds get the channel check too (no period: the watchdog's renewal is that).
 *
 * The channel is joined on the client's own subscriber (runtime/sub.h), as a waiter joins
 * it: subscribed first, then checked, then each message (or the period) checks again, so a
 * force unlock between the acquisition and the subscription is found by the first check.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lock_cli.h"
#include "client/clock.h"
#include "runtime/rt.h"

#define RLK_LC_CHECK_SLICE_NS (250 * RLK_NS_PER_MS) /* a wait for the subscription, at most */

static long long rlk_lc_check_until(const rlk_lc_checker *k, long long now)
{
    return k->h->check_period_ns > 0 ? now + k->h->check_period_ns : -1;
}

/* Sleeps on the checker's own condition until until_ns (-1: until stopped) or the stop. */
static void rlk_lc_check_sleep(rlk_lc_checker *k, long long until_ns)
{
    pthread_mutex_lock(&k->mu);
    while (!atomic_load(&k->stop) &&
           (until_ns < 0 || rlk_clock_now_ns() < until_ns)) {
        if (until_ns < 0) {
            pthread_cond_wait(&k->cv, &k->mu);
        } else {
            struct timespec ts;

            clock_gettime(CLOCK_MONOTONIC, &ts);
            long long left = until_ns - rlk_clock_now_ns();
            long long at = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec + (left > 0 ? left : 0);

            ts.tv_sec = (time_t)(at / 1000000000LL);
            ts.tv_nsec = (long)(at % 1000000000LL);
            pthread_cond_timedwait(&k->cv, &k->mu, &ts);
        }
    }
    pthread_mutex_unlock(&k->mu);
}

static void *rlk_lc_check_main(void *arg)
{
    rlk_lc_checker *k = arg;
    unsigned char byte = RLK_LC_LOST_CHECKED;

    while (!atomic_load(&k->stop)) {
        unsigned long long mark = 0;
        long long now = rlk_clock_now_ns(), until;
        int ready = RLK_SUB_DOWN;

        if (k->ch)
            ready = rlk_sub_ready(k->sub, k->ch, now + RLK_LC_CHECK_SLICE_NS, &mark);
        if (atomic_load(&k->stop))
            break;
        if (k->h->check(k->h) == 0) {
            while (write(k->fd, &byte, 1) < 0 && errno == EINTR)
                ;
            break;
        }
        now = rlk_clock_now_ns();
        until = rlk_lc_check_until(k, now);
        if (k->ch && ready == RLK_SUB_READY) {
            rlk_sub_wait(k->sub, k->ch, mark, until, NULL);
        } else if (k->ch) {
            /* Not subscribed (yet, or the subscriber is down): check again soon. */
            if (until < 0 || until > now + RLK_LC_CHECK_SLICE_NS)
                until = now + RLK_LC_CHECK_SLICE_NS;
            rlk_lc_check_sleep(k, until);
        } else {
            rlk_lc_check_sleep(k, until);
        }
    }
    return NULL;
}

void rlk_lc_checker_start(rlk_lc_checker *k, rlk_lc_hold *h, int lost_fd)
{
    rlk_rt *rt;

    memset(k, 0, sizeof *k);
    if (!h->check || !h->client || (!h->check_channel && h->check_period_ns <= 0))
        return;
    k->h = h;
    k->fd = lost_fd;
    k->ch = NULL;
    k->sub = NULL;
    atomic_store(&k->stop, 0);
    if (h->check_channel && (rt = rlk_rt_get(h->client)) != NULL &&
        rlk_sub_join(rt->sub, h->check_channel, NULL, &k->ch) == RLK_OK)
        k->sub = rt->sub;
    else
        k->ch = NULL;
    if (!k->ch && h->check_period_ns <= 0)
        return;
    pthread_mutex_init(&k->mu, NULL);
    pthread_cond_init(&k->cv, NULL);
    k->started = pthread_create(&k->thread, NULL, rlk_lc_check_main, k) == 0;
    if (!k->started) {
        pthread_cond_destroy(&k->cv);
        pthread_mutex_destroy(&k->mu);
        if (k->ch)
            rlk_sub_leave(k->sub, k->ch);
        k->ch = NULL;
    }
}

void rlk_lc_checker_stop(rlk_lc_checker *k)
{
    if (!k->started)
        return;
    atomic_store(&k->stop, 1);
    pthread_mutex_lock(&k->mu);
    pthread_cond_broadcast(&k->cv);
    pthread_mutex_unlock(&k->mu);
    if (k->ch)
        rlk_sub_interrupt(k->sub);  /* its wait sees a wake-all and then the stop */
    pthread_join(k->thread, NULL);
    if (k->ch)
        rlk_sub_leave(k->sub, k->ch);
    pthread_cond_destroy(&k->cv);
    pthread_mutex_destroy(&k->mu);
    k->started = 0;
    k->ch = NULL;
}

int rlk_lc_check_fields(rlk_client *c, const char *key, const char *const *fields, int n,
                        const char *want)
{
    const char *argv[2 + RLK_LC_CHECK_FIELDS_MAX];
    redisReply *r = NULL;
    int held = -1;

    if (n < 1 || n > RLK_LC_CHECK_FIELDS_MAX)
        return -1;
    argv[0] = want ? "HMGET" : "HEXISTS";
    argv[1] = key;
    for (int k = 0; k < n; k++)
        argv[2 + k] = fields[k];
    if (!want && n != 1)
        return -1;
    if (rlk_command(c, 2 + n, argv, NULL, &r) == RLK_OK && r) {
        if (!want && r->type == REDIS_REPLY_INTEGER) {
            held = r->integer == 1;
        } else if (want && r->type == REDIS_REPLY_ARRAY && r->elements == (size_t)n) {
            held = 1;
            for (size_t k = 0; k < r->elements; k++) {
                const redisReply *e = r->element[k];

                if (!e || e->type != REDIS_REPLY_STRING || strcmp(e->str, want) != 0)
                    held = 0;
            }
        }
    }
    if (r)
        freeReplyObject(r);
    return held;
}
