/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psemaphore.c - the permit-expirable semaphore API (rlk_psemaphore_*):
 * Redisson's RPermitExpirableSemaphore on the scripts/psemaphore scripts. The
 * count is a string key `name`; every taken permit is a member of the
 * sorted set {name}:timeout (score: its expiry on the server's clock), and
 * every script first gives expired permits back to the count. Scripts that
 * raise the count above 0 publish it on redisson_sc:{name}.
 *
 * Permit ids: 16 bytes from the kernel's random source (rlk_random_bytes,
 * as the client uuid), stored raw as Redisson stores them and shown to the
 * caller as 32 hex digits. docs/locks/psemaphore.md describes the data and
 * the API; psemaphore_keeper.c renews leases. Besides acquiring and
 * releasing: a permit's lease (update_lease, lease_time), the count
 * (Redisson's setPermits, acquiredPermits, ...), the held permits' list and
 * the object's time to live (RExpirable, kinds/expiry.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "client/random.h"
#include "kinds/expiry.h"
#include "kinds/handle.h"
#include "kinds/names.h"
#include "kinds/proto.h"
#include "kinds/psemaphore.h"
#include "kinds/sem_queue.h"
#include "runtime/fam.h"
#include "runtime/wait.h"

#define RLK_PSEM_LEASELESS 922337203685477LL    /* Redisson's score of a permit without a lease */

/* ---------------------------------------------------------------- handles */

const rlk_proto_call rlk_psem_acquire_call = {"psemaphore/acquire",
                                              "lease_ms ticket claim_ms publish id"};
const rlk_proto_call rlk_psem_release_call = {"psemaphore/release", "claim_ms publish id"};
const rlk_proto_call rlk_psem_lease_time_call = {"psemaphore/lease_time", "id publish"};
const rlk_proto_call rlk_psem_set_permits_call = {"psemaphore/set_permits", "n claim_ms publish"};
const rlk_proto_call rlk_psem_acquired_call = {"psemaphore/acquired", "publish"};
static const rlk_proto_call rlk_psem_add_permits_call = {"psemaphore/add_permits", "n claim_ms publish"};
static const rlk_proto_call rlk_psem_update_lease_call = {"psemaphore/update_lease",
                                                          "lease_ms id publish"};
static const rlk_proto_call rlk_psem_try_set_call = {"psemaphore/try_set_permits", "n publish"};
static const rlk_proto_call rlk_psem_available_call = {"psemaphore/available", "publish"};
static const rlk_proto_call rlk_psem_size_call = {"psemaphore/size", ""};

static const rlk_fam_kind rlk_psemaphore_kind = {
    "rlk_psemaphore_new", "semaphore", RLK_NAMES_CH_SEMAPHORE, rlk_fam_prefix_name, NULL
};

rlk_psemaphore *rlk_psemaphore_new(rlk_client *c, const char *name)
{
    return rlk_handle_new(c, name, sizeof(rlk_psemaphore), &rlk_psemaphore_kind,
                          RLK_HANDLE_WAKE, "psemaphore", "timeouts channel waiters grant");
}

void rlk_psemaphore_free(rlk_psemaphore *s)
{
    rlk_fam_free(s);
}

const char *rlk_psemaphore_name(const rlk_psemaphore *s)
{
    return s ? s->b.name : NULL;
}

const char *rlk_psemaphore_timeouts_key(const rlk_psemaphore *s)
{
    return s ? s->b.key[RLK_PROTO_KEY_TIMEOUTS] : NULL;
}

const char *rlk_psemaphore_channel(const rlk_psemaphore *s)
{
    return s ? s->b.channel : NULL;
}

/* ---------------------------------------------------------------- permit ids */

int rlk_psem_parse_id(const char *what, const char *name, const char *hex, unsigned char *raw,
                      size_t *len, char *msg, size_t msglen)
{
    size_t n = hex ? strlen(hex) : 0;

    if (n < 2 || n % 2 != 0 || n > 2 * RLK_PSEM_RAW_ID_MAX)
        return snprintf(msg, msglen, "%s %s: a permit id is 2..%d hex digits, an even number of "
                        "them", what, name, 2 * RLK_PSEM_RAW_ID_MAX), RLK_ERR_ARG;
    for (size_t i = 0; i < n; i += 2) {
        int hi = rlk_hex_digit((unsigned char)hex[i]), lo = rlk_hex_digit((unsigned char)hex[i + 1]);

        if (hi < 0 || lo < 0)
            return snprintf(msg, msglen, "%s %s: permit id \"%.40s\" is not hex", what, name,
                            hex), RLK_ERR_ARG;
        raw[i / 2] = (unsigned char)(hi << 4 | lo);
    }
    *len = n / 2;
    return RLK_OK;
}

int rlk_psem_decode_id(rlk_psemaphore *s, const char *what, const char *hex, unsigned char *raw,
                       size_t *len)
{
    char msg[RLK_ERRSTR_MAX];

    if (rlk_psem_parse_id(what, s->b.name, hex, raw, len, msg, sizeof msg) != RLK_OK)
        return rlk_set_error(s->b.c, RLK_ERR_ARG, "%s", msg);
    return RLK_OK;
}

/* ---------------------------------------------------------------- acquiring */

/* One call's permits: n random ids, kept across its attempts. */
typedef struct rlk_psem_try {
    rlk_psemaphore *s;
    int n;
    long long lease_ms;
    rlk_sem_queue_try qt;       /* its place in the queue */
    const char **ids;           /* the n raw ids (rlk_psem_ids_new) */
    size_t *lens;
    rlk_acq_sem m;              /* the machine (kinds/acq.h) */
} rlk_psem_try;

/* n raw permit ids of up to size bytes in one block (free the returned
 * list): their pointers, *lens (each size), then their bytes. NULL: out of
 * memory. */
static const char **rlk_psem_ids_new(int n, size_t size, size_t **lens)
{
    const char **ids = malloc((size_t)n * (sizeof *ids + sizeof **lens + size));

    if (!ids)
        return NULL;
    *lens = (size_t *)(ids + n);
    for (int i = 0; i < n; i++) {
        ids[i] = (const char *)(*lens + n) + (size_t)i * size;
        (*lens)[i] = size;
    }
    return ids;
}

/* The call pc (its ARGV by name, ending with id) on s's name with vals, its
 * id the first of the n raw ids and the others after it: as
 * rlk_handle_evalt (*out its integer reply; out NULL: the reply in *r). */
static int rlk_psem_eval_ids(rlk_psemaphore *s, const rlk_proto_call *pc, rlk_proto_argvals v,
                             int n, const char *const *ids, const size_t *lens, long long *out,
                             redisReply **r)
{
    v.id = (const unsigned char *)ids[0];
    v.idlen = lens[0];
    return rlk_handle_evalt(&s->b, pc, NULL, &v, (size_t)n - 1, ids + 1, lens + 1, out, r);
}

/* Releases the n permits of an acquisition too few replicas acknowledged
 * (psemaphore/release of the same ids). */
static int rlk_psem_undo(void *arg)
{
    rlk_psem_try *t = arg;
    rlk_proto_argvals none = {0};
    long long got = 0;
    int rc = rlk_psem_eval_ids(t->s, &rlk_psem_release_call, none, t->n, t->ids, t->lens, &got,
                               NULL);

    return rc != RLK_OK ? rc : got == t->n ? RLK_OK : RLK_ERR_NOT_OWNER;
}

/* rlk_wait_attempt_fn: psemaphore/acquire with the waiter's ticket argument (0 until its wake
 * channel is subscribed), through the machine (rlk_handle_sem_attempt): a lost reply is read
 * back by the first id, and a retry reuses the ids. */
static int rlk_psem_attempt(void *arg, long long *bound_ms)
{
    rlk_psem_try *t = arg;
    rlk_proto_argvals v = {.lease_ms = t->lease_ms, .id = (const unsigned char *)t->ids[0],
                           .idlen = t->lens[0]};

    return rlk_handle_sem_attempt(&t->s->b, &t->m, &t->qt, &rlk_psem_acquire_call, v,
                                  (size_t)t->n - 1, t->ids + 1, t->lens + 1, bound_ms,
                                  rlk_psem_undo, t);
}

/* Outages ridden out: a retry reuses the ids (see rlk_psem_attempt). count_ttl stays 0:
 * the bound is a permit's expiry, not a lock holder's TTL. */
int rlk_psemaphore_try_acquire_n(rlk_psemaphore *s, int n, long long wait_ms, long long lease_ms,
                                 char (*ids)[RLK_PERMIT_ID_SIZE])
{
    rlk_handle_call hc = rlk_handle_call_begin(s ? &s->b : NULL);
    long long start = rlk_clock_now_ns();
    rlk_psem_try t = {.s = s, .n = n, .lease_ms = lease_ms};
    int rc = s && ids ? rlk_fam_check_range(s->b.c, "acquire", s->b.name, "permits", n, 1,
                                            RLK_PERMITS_MAX)
                      : RLK_ERR_ARG;

    for (int i = 0; rc == RLK_OK && i < n; i++)
        ids[i][0] = '\0';
    if (rc == RLK_OK)
        rc = rlk_fam_check_range(s->b.c, "acquire", s->b.name, "lease_ms", lease_ms, 1,
                                 RLK_NUM_MAX);
    if (rc == RLK_OK && !(t.ids = rlk_psem_ids_new(n, RLK_PSEM_NEW_ID_BYTES, &t.lens)))
        rc = rlk_set_error(s->b.c, RLK_ERR_NOMEM, "acquire %s: out of memory", s->b.name);
    if (rc == RLK_OK &&
        rlk_random_bytes((unsigned char *)t.ids[0], (size_t)n * RLK_PSEM_NEW_ID_BYTES) != 0)
        rc = rlk_set_error(s->b.c, RLK_ERR_IO, "acquire %s: no random source for permit ids",
                           s->b.name);
    if (rc == RLK_OK) {
        t.m = (rlk_acq_sem){"semaphore", s->b.name, rlk_psem_acquire_call.script, n, n,
                            .counters = &s->b.rt->counters};
        rc = rlk_sem_queue_acquire(&s->b, &t.qt, n, rlk_psem_attempt, &t, 1, start, wait_ms,
                                   "acquire");
    }
    for (int i = 0; rc == RLK_OK && i < n; i++)
        rlk_hex(ids[i], (const unsigned char *)t.ids[i], RLK_PSEM_NEW_ID_BYTES);
    free((void *)t.ids);
    return rlk_handle_call_end(&hc, RLK_MKIND_PSEMAPHORE, rc);
}

int rlk_psemaphore_try_acquire(rlk_psemaphore *s, long long wait_ms, long long lease_ms,
                               char id[RLK_PERMIT_ID_SIZE])
{
    return rlk_psemaphore_try_acquire_n(s, 1, wait_ms, lease_ms, (char (*)[RLK_PERMIT_ID_SIZE])id);
}

int rlk_psemaphore_acquire(rlk_psemaphore *s, long long lease_ms, char id[RLK_PERMIT_ID_SIZE])
{
    return rlk_psemaphore_try_acquire(s, -1, lease_ms, id);
}

/* ---------------------------------------------------------------- releasing, leases */

/* release_n (strict: a permit that is not held is RLK_ERR_NOT_OWNER) and
 * try_release (Redisson's tryRelease(permitId): it is no error). */
static int rlk_psem_release(rlk_psemaphore *s, int n, const char *const *ids, int *released,
                            int strict)
{
    rlk_proto_argvals none = {0};
    const char **raw = NULL;
    size_t *lens = NULL;
    long long got = 0;
    int rc;

    if (released)
        *released = 0;
    if (!s || !ids || (!strict && !ids[0]))     /* try_release's one id */
        return RLK_ERR_ARG;
    rc = rlk_fam_check_range(s->b.c, "release", s->b.name, "permits", n, 1, RLK_PERMITS_MAX);
    if (rc == RLK_OK && !(raw = rlk_psem_ids_new(n, RLK_PSEM_RAW_ID_MAX, &lens)))
        rc = rlk_set_error(s->b.c, RLK_ERR_NOMEM, "%s %s: out of memory", "release", s->b.name);
    for (int i = 0; rc == RLK_OK && i < n; i++)
        rc = rlk_psem_decode_id(s, "release", ids[i], (unsigned char *)raw[i], &lens[i]);
    if (rc == RLK_OK)   /* got: how many were held (and are now released) */
        rc = rlk_psem_eval_ids(s, &rlk_psem_release_call, none, n, raw, lens, &got, NULL);
    free((void *)raw);
    if (rc != RLK_OK)
        return rc;
    if (released)
        *released = (int)got;
    if (got < n && strict)
        return rlk_set_error(s->b.c, RLK_ERR_NOT_OWNER, "release %s: %lld of %d permit(s) were not "
                             "held (expired, released already or never acquired)", s->b.name,
                             n - got, n);
    return got < n ? RLK_OK : rlk_fam_acks_done(s->b.c, "release", s->b.name, "released");
}

int rlk_psemaphore_release_n(rlk_psemaphore *s, int n, const char *const *ids, int *released)
{
    return rlk_psem_release(s, n, ids, released, 1);
}

int rlk_psemaphore_try_release(rlk_psemaphore *s, const char *id, int *released)
{
    return rlk_psem_release(s, 1, &id, released, 0);
}

int rlk_psemaphore_release(rlk_psemaphore *s, const char *id)
{
    return rlk_psemaphore_release_n(s, 1, &id, NULL);
}

/* pc with v on the permit id (hex): *got its reply (1 held, or the lease
 * left), RLK_ERR_NOT_OWNER "<what> <name>: permit <id> is not held ..."
 * when it is 0. */
static int rlk_psem_id_call(rlk_psemaphore *s, const char *what, const char *id,
                            const rlk_proto_call *pc, rlk_proto_argvals v, long long *got)
{
    unsigned char raw[RLK_PSEM_RAW_ID_MAX];
    int rc = rlk_psem_decode_id(s, what, id, raw, &v.idlen);

    v.id = raw;
    if (rc == RLK_OK)
        rc = rlk_handle_int(&s->b, pc, &v, got);
    if (rc == RLK_OK && *got == 0)
        rc = rlk_set_error(s->b.c, RLK_ERR_NOT_OWNER, "%s %s: permit %.40s is not held (expired, "
                           "released or never acquired)", what, s->b.name, id);
    return rc;
}

int rlk_psemaphore_update_lease(rlk_psemaphore *s, const char *id, long long lease_ms)
{
    long long got = 0;
    int rc = s ? rlk_fam_check_range(s->b.c, "update_lease", s->b.name, "lease_ms", lease_ms, 1,
                                     RLK_NUM_MAX)
               : RLK_ERR_ARG;

    return rc != RLK_OK ? rc : rlk_psem_id_call(s, "update_lease", id, &rlk_psem_update_lease_call,
                                                (rlk_proto_argvals){.lease_ms = lease_ms}, &got);
}

int rlk_psemaphore_lease_time(rlk_psemaphore *s, const char *id, long long *ms)
{
    if (!s || !ms)
        return RLK_ERR_ARG;
    *ms = 0;
    /* it publishes the permits it reclaims */
    return rlk_psem_id_call(s, "lease_time", id, &rlk_psem_lease_time_call,
                            (rlk_proto_argvals){0}, ms);
}

/* ---------------------------------------------------------------- counting */

int rlk_psemaphore_try_set_permits(rlk_psemaphore *s, long long permits, int *set)
{
    long long n = 0;
    int rc = s ? rlk_handle_write(&s->b, "try_set_permits", "permits", permits, 0,
                                  &rlk_psem_try_set_call, &(rlk_proto_argvals){.n = permits}, &n)
               : RLK_ERR_ARG;

    if (rc == RLK_OK && set)
        *set = n == 1;
    return rc;
}

int rlk_psemaphore_add_permits(rlk_psemaphore *s, long long delta, long long *count)
{
    if (!s)
        return RLK_ERR_ARG;
    return rlk_handle_write(&s->b, "add_permits", "delta", delta, -RLK_NUM_MAX,
                            &rlk_psem_add_permits_call, &(rlk_proto_argvals){.n = delta}, count);
}

int rlk_psemaphore_available(rlk_psemaphore *s, long long *count)
{
    return s && count ? rlk_handle_int(&s->b, &rlk_psem_available_call, NULL, count) : RLK_ERR_ARG;
}

int rlk_psemaphore_size(rlk_psemaphore *s, long long *available, long long *held)
{
    redisReply *r = NULL;
    int rc;

    if (!s || !available || !held)
        return RLK_ERR_ARG;
    rc = rlk_handle_eval(&s->b, &rlk_psem_size_call, NULL, &r);
    if (rc == RLK_OK && (r->type != REDIS_REPLY_ARRAY || r->elements != 2 ||
                         r->element[0]->type != REDIS_REPLY_INTEGER ||
                         r->element[1]->type != REDIS_REPLY_INTEGER))
        rc = rlk_set_error(s->b.c, RLK_ERR_PROTOCOL, "size %s: psemaphore/size replied a bad "
                           "array", s->b.name);
    if (rc == RLK_OK) {
        *available = r->element[0]->integer;
        *held = r->element[1]->integer;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}

int rlk_psemaphore_acquired(rlk_psemaphore *s, long long *held)
{
    return s && held ? rlk_handle_int(&s->b, &rlk_psem_acquired_call, NULL, held) : RLK_ERR_ARG;
}

int rlk_psemaphore_set_permits(rlk_psemaphore *s, long long permits, long long *count)
{
    if (!s)
        return RLK_ERR_ARG;
    return rlk_handle_write(&s->b, "set_permits", "permits", permits, 0,
                            &rlk_psem_set_permits_call, &(rlk_proto_argvals){.n = permits}, count);
}

/* ---------------------------------------------------------------- time to live */

/* On both keys of Redisson's object, as its expire and clearExpire take them (name,
 * {name}:timeout) */
int rlk_psemaphore_expire(rlk_psemaphore *s, long long ttl_ms, int *set)
{
    return rlk_expiry_set(s ? &s->b : NULL, RLK_MKIND_PSEMAPHORE, ttl_ms, set);
}

int rlk_psemaphore_clear_expire(rlk_psemaphore *s, int *cleared)
{
    return rlk_expiry_clear(s ? &s->b : NULL, RLK_MKIND_PSEMAPHORE, cleared);
}

int rlk_psemaphore_ttl(rlk_psemaphore *s, long long *ttl_ms)
{
    return rlk_expiry_ttl(s ? &s->b : NULL, RLK_MKIND_PSEMAPHORE, ttl_ms);
}

/* ---------------------------------------------------------------- listing held permits */

/* A command on the pool; RLK_ERR_PROTOCOL unless the reply has type want. */
static int rlk_psem_command(rlk_psemaphore *s, int argc, const char **argv, int want,
                            redisReply **r)
{
    int rc = rlk_command(s->b.c, argc, argv, NULL, r);

    if (rc == RLK_OK && (*r)->type != want) {
        rc = rlk_set_error(s->b.c, RLK_ERR_PROTOCOL, "permits %s: %s replied type %d", s->b.name,
                           argv[0], (*r)->type);
        freeReplyObject(*r);
        *r = NULL;
    }
    return rc;
}

int rlk_psemaphore_permits(rlk_psemaphore *s, rlk_permit_info *out, size_t max, size_t *total)
{
    const char *argv[5] = {"ZRANGE", NULL, "0", "-1", "WITHSCORES"};
    const char *time_argv[1] = {"TIME"};
    redisReply *r = NULL, *t = NULL;
    long long now = 0;      /* the server's clock, in ms */
    int rc;

    if (!s || !total || (max > 0 && !out))
        return RLK_ERR_ARG;
    *total = 0;
    argv[1] = s->b.key[RLK_PROTO_KEY_TIMEOUTS];
    rc = rlk_psem_command(s, 5, argv, REDIS_REPLY_ARRAY, &r);
    if (rc == RLK_OK && (rc = rlk_psem_command(s, 1, time_argv, REDIS_REPLY_ARRAY, &t)) == RLK_OK) {
        if (t->elements == 2 && t->element[0]->type == REDIS_REPLY_STRING &&
            t->element[1]->type == REDIS_REPLY_STRING)
            now = atoll(t->element[0]->str) * 1000 + atoll(t->element[1]->str) / 1000;
        else
            rc = rlk_set_error(s->b.c, RLK_ERR_PROTOCOL, "permits %s: TIME replied a bad array",
                               s->b.name);
        freeReplyObject(t);
    }
    for (size_t i = 0; rc == RLK_OK && i + 1 < r->elements; i += 2) {
        const redisReply *m = r->element[i];
        long long expiry;

        if (m->type != REDIS_REPLY_STRING || r->element[i + 1]->type != REDIS_REPLY_STRING) {
            rc = rlk_set_error(s->b.c, RLK_ERR_PROTOCOL, "permits %s: ZRANGE replied a bad array",
                               s->b.name);
            break;
        }
        expiry = (long long)strtod(r->element[i + 1]->str, NULL);
        if (*total < max) {
            rlk_hex(out[*total].id, (const unsigned char *)m->str,
                    m->len > RLK_PSEM_RAW_ID_MAX ? RLK_PSEM_RAW_ID_MAX : m->len);
            out[*total].ttl_ms = expiry >= RLK_PSEM_LEASELESS ? -1 : expiry - now;
        }
        (*total)++;
    }
    if (r)
        freeReplyObject(r);
    return rc;
}
