/*
 * latch.c - the count-down latch API (rlk_latch_*): Redisson's
 * RCountDownLatch on the scripts/latch scripts. A string key `name` holds the
 * remaining count (no key: open). Reaching zero (count_down) or deleting
 * publishes "0" on redisson_countdownlatch__channel__{name}; arming
 * (try_set_count) publishes "1". docs/locks/latch.md describes the data
 * and the API.
 *
 * Waking every awaiter: the subscriber turns a message "0" into one wake
 * permit per client (it is the reentrant lock's "unlock: wake one"). An
 * awaiter that finds the latch open passes a permit on to the channel
 * before it leaves, so each local awaiter wakes the next; every one of
 * them re-reads the count, so a permit is never taken for more than "look
 * again".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "semaphore_wait.h"

#define RLK_LATCH_CHANNEL_PREFIX "redisson_countdownlatch__channel__"

struct rlk_latch {
    rlk_client *c;
    rlk_rt *rt;
    char *name;
    char *channel;
};

/* ---------------------------------------------------------------- handles */

rlk_latch *rlk_latch_new(rlk_client *c, const char *name)
{
    rlk_latch *l;

    if (!c)
        return NULL;
    if (!name || !*name) {
        rlk_set_error(c, RLK_ERR_ARG, "rlk_latch_new: the latch name must not be empty");
        return NULL;
    }
    l = calloc(1, sizeof *l);
    if (!l || !(l->rt = rlk_rt_get(c))) {
        free(l);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_latch_new %s: out of memory", name);
        return NULL;
    }
    l->c = c;
    l->name = strdup(name);
    l->channel = rlk_sync_braced_name(RLK_LATCH_CHANNEL_PREFIX, name);
    if (!l->name || !l->channel) {
        rlk_latch_free(l);
        rlk_set_error(c, RLK_ERR_NOMEM, "rlk_latch_new %s: out of memory", name);
        return NULL;
    }
    return l;
}

void rlk_latch_free(rlk_latch *l)
{
    if (!l)
        return;
    free(l->channel);
    free(l->name);
    free(l);
}

const char *rlk_latch_name(const rlk_latch *l)
{
    return l ? l->name : NULL;
}

const char *rlk_latch_channel(const rlk_latch *l)
{
    return l ? l->channel : NULL;
}

/* ---------------------------------------------------------------- counting */

int rlk_latch_try_set_count(rlk_latch *l, long long count, int *set)
{
    const char *keys[2], *args[1];
    char num[24];
    long long n = 0;
    int rc;

    if (!l)
        return RLK_ERR_ARG;
    rc = rlk_sync_check_range(l->c, "try_set_count", l->name, "count", count, 1, RLK_SYNC_NUM_MAX);
    if (rc != RLK_OK)
        return rc;
    keys[0] = l->name;
    keys[1] = l->channel;
    snprintf(num, sizeof num, "%lld", count);
    args[0] = num;
    rc = rlk_sync_eval_int(l->c, "latch/try_set_count", 2, keys, 1, args, NULL, &n);
    if (rc == RLK_OK && set)
        *set = n == 1;
    return rc;
}

int rlk_latch_count_down(rlk_latch *l, long long *left)
{
    const char *keys[2];
    long long n = 0;
    int rc;

    if (!l)
        return RLK_ERR_ARG;
    keys[0] = l->name;
    keys[1] = l->channel;
    rc = rlk_sync_eval_int(l->c, "latch/count_down", 2, keys, 0, NULL, NULL, &n);
    if (rc == RLK_OK && left)
        *left = n;
    return rc;
}

int rlk_latch_delete(rlk_latch *l, int *deleted)
{
    const char *keys[2];
    long long n = 0;
    int rc;

    if (!l)
        return RLK_ERR_ARG;
    keys[0] = l->name;
    keys[1] = l->channel;
    rc = rlk_sync_eval_int(l->c, "latch/delete", 2, keys, 0, NULL, NULL, &n);
    if (rc == RLK_OK && deleted)
        *deleted = n == 1;
    return rc;
}

int rlk_latch_count(rlk_latch *l, long long *count)
{
    const char *keys[1];

    if (!l || !count)
        return RLK_ERR_ARG;
    keys[0] = l->name;
    return rlk_sync_eval_int(l->c, "latch/count", 1, keys, 0, NULL, NULL, count);
}

/* ---------------------------------------------------------------- awaiting */

/* rlk_sync_attempt_fn: open (count <= 0, or no key) is success. A count
 * changes only by a script that publishes, and never expires: no hint. */
static int rlk_latch_attempt(void *arg, long long *hint_ms)
{
    rlk_latch *l = arg;
    long long count = 0;
    int rc = rlk_latch_count(l, &count);

    *hint_ms = -1;
    if (rc != RLK_OK)
        return rc;
    return count <= 0 ? RLK_OK : RLK_ERR_BUSY;
}

int rlk_latch_await(rlk_latch *l, long long timeout_ms)
{
    long long start = rlk_rt_now_ns(), hint;
    rlk_sync_waiter w;
    int rc;

    if (!l)
        return RLK_ERR_ARG;
    rc = rlk_latch_attempt(l, &hint);    /* open already: no subscription needed */
    if (rc == RLK_ERR_BUSY && timeout_ms != 0) {
        memset(&w, 0, sizeof w);
        w.c = l->c;
        w.rt = l->rt;
        w.channel = l->channel;
        w.attempt = rlk_latch_attempt;
        w.arg = l;
        w.ride_out = 1;         /* a read: retrying it is harmless */
        w.pass_on = 1;
        rc = rlk_sync_wait(&w, rlk_sync_deadline(start, timeout_ms));
    }
    if (rc == RLK_ERR_BUSY)
        return rlk_set_error(l->c, RLK_ERR_BUSY, "latch %s: count still above 0 after %lld ms",
                             l->name, (rlk_rt_now_ns() - start) / 1000000LL);
    return rc;
}
