/* SPDX-License-Identifier: BSD-3-Clause */
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
#include <stdlib.h>
#include <string.h>

#include "client/clock.h"
#include "client/error.h"
#include "client/slot.h"
#include "client/topo.h"
#include "kinds/expiry.h"
#include "kinds/handle.h"
#include "kinds/latch.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "runtime/wait.h"

const rlk_proto_call rlk_latch_count_call = {"latch/count", ""};
const rlk_proto_call rlk_latch_count_down_call = {"latch/count_down", "publish"};
const rlk_proto_call rlk_latch_try_set_count_call = {"latch/try_set_count", "n publish"};
static const rlk_proto_call rlk_latch_delete_call = {"latch/delete", "publish"};

struct rlk_latch {
    rlk_fam_base b;             /* channel: redisson_countdownlatch__channel__{name} */
};

static const rlk_fam_kind rlk_latch_kind = {
    "rlk_latch_new", "latch", RLK_NAMES_CH_LATCH, rlk_fam_braced_name, NULL
};

/* ---------------------------------------------------------------- handles */

rlk_latch *rlk_latch_new(rlk_client *c, const char *name)
{
    rlk_latch *l = rlk_fam_new(c, name, sizeof(rlk_latch), &rlk_latch_kind);
    int key_slot, chan_slot;

    /* Redisson's channel braces a tagged name again, so it hashes on the text up to the
     * name's first '}' and, on a cluster, mostly lands in another slot than the key: no
     * script can touch both (CROSSSLOT; Redisson's own latch fails there the same way).
     * Refused here, before any call, with the reason. */
    if (!l || !rlk_topo_routed(c) || !strchr(name, '{'))
        return l;
    key_slot = rlk_key_slot(name, strlen(name));
    chan_slot = rlk_key_slot(l->b.channel, strlen(l->b.channel));
    if (key_slot == chan_slot)
        return l;
    rlk_set_error(c, RLK_ERR_ARG, "rlk_latch_new '%s': a latch name with a hash tag cannot be "
                  "used on a cluster: Redisson's latch channel %s hashes to slot %d, the latch "
                  "key to slot %d, and one script cannot touch both (CROSSSLOT); use a name "
                  "without '{' (docs/compat.md)", name, l->b.channel, chan_slot, key_slot);
    rlk_latch_free(l);
    return NULL;
}

void rlk_latch_free(rlk_latch *l)
{
    rlk_fam_free(l);
}

const char *rlk_latch_name(const rlk_latch *l)
{
    return l ? l->b.name : NULL;
}

const char *rlk_latch_channel(const rlk_latch *l)
{
    return l ? l->b.channel : NULL;
}

/* ---------------------------------------------------------------- counting */

int rlk_latch_try_set_count(rlk_latch *l, long long count, int *set)
{
    rlk_proto_argvals v = {.n = count};
    long long n = 0;
    int rc = l ? rlk_handle_write(&l->b, "try_set_count", "count", count, 1,
                                  &rlk_latch_try_set_count_call, &v, &n) : RLK_ERR_ARG;

    if (rc == RLK_OK && set)
        *set = n == 1;
    return rc;
}

int rlk_latch_count_down(rlk_latch *l, long long *left)
{
    return l ? rlk_handle_int(&l->b, &rlk_latch_count_down_call, NULL, left) : RLK_ERR_ARG;
}

int rlk_latch_delete(rlk_latch *l, int *deleted)
{
    long long n = 0;
    int rc = l ? rlk_handle_int(&l->b, &rlk_latch_delete_call, NULL, &n) : RLK_ERR_ARG;

    if (deleted)    /* a key that is not a latch's count is refused (RLK_WRONGTYPE): kept */
        *deleted = rc == RLK_OK && n == 1;
    return rc;
}

int rlk_latch_count(rlk_latch *l, long long *count)
{
    return l && count ? rlk_handle_int(&l->b, &rlk_latch_count_call, NULL, count) : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- time to live */

/* Expire on the name and the channel, with the publish command (an armed latch's awaiters are
 * told); clear_expire on the name */
int rlk_latch_expire(rlk_latch *l, long long ttl_ms, int *set)
{
    return rlk_expiry_set(l ? &l->b : NULL, RLK_MKIND_LATCH, ttl_ms, set);
}

int rlk_latch_clear_expire(rlk_latch *l, int *cleared)
{
    return rlk_expiry_clear(l ? &l->b : NULL, RLK_MKIND_LATCH, cleared);
}

int rlk_latch_ttl(rlk_latch *l, long long *ttl_ms)
{
    return rlk_expiry_ttl(l ? &l->b : NULL, RLK_MKIND_LATCH, ttl_ms);
}

/* ---------------------------------------------------------------- awaiting */

/* rlk_wait_attempt_fn: open (count <= 0, or no key) is success. A count
 * changes only by a script that publishes, or when a time to live set with
 * rlk_latch_expire runs out, which publishes nothing: the bound is that
 * TTL (+1 ms: the key is gone once it has passed), read after the count (a
 * TTL set later publishes "1", which wakes the awaiter to read it). */
static int rlk_latch_attempt(void *arg, long long *bound_ms)
{
    rlk_latch *l = arg;
    long long count = 0, ttl = -1;
    int rc = rlk_latch_count(l, &count);

    *bound_ms = -1;
    if (rc != RLK_OK)
        return rc;
    if (count <= 0)
        return RLK_OK;
    rc = rlk_latch_ttl(l, &ttl);
    if (rc != RLK_OK)
        return rc;
    if (ttl >= 0)
        *bound_ms = ttl + 1;
    else if (ttl == -2)
        *bound_ms = 0;      /* expired between the two reads: look again now */
    return RLK_ERR_BUSY;
}

int rlk_latch_await(rlk_latch *l, long long timeout_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(l ? &l->b : NULL);
    long long start = rlk_clock_now_ns();
    rlk_waiter w;
    rlk_acq_act x;
    int rc = RLK_ERR_ARG;

    if (l) {
        rlk_wait_init(&w, &l->b, "latch", rlk_latch_attempt, l);
        w.ride_out = 1;     /* a read: retrying it is harmless */
        w.pass_on = 1;      /* a "0" wakes one awaiter per client: each wakes the next (see
                               the top) */
        rc = rlk_wait_acquire(&w, start, timeout_ms, 1);    /* open already: not subscribed */
    }
    if (rc == RLK_ERR_BUSY) {
        rlk_acq_waited("latch", l->b.name, RLK_LATCH_BUSY, (rlk_clock_now_ns() - start) /
                       RLK_NS_PER_MS, &x);
        rc = rlk_set_error(l->b.c, x.err, "%s", x.msg);
    }
    return rlk_handle_call_end(&hc, RLK_MKIND_LATCH, rc);
}
