/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * psemaphore_keeper.c - keeps permits of a permit-expirable semaphore
 * alive (rlk_psemaphore_keep), for code that holds permits for an unknown
 * time (the `rlk semaphore` command). Redisson has no such thing for this
 * semaphore (its permits expire or live forever); it is the reentrant
 * lock's watchdog rule applied to permits, and it runs on the watchdog
 * itself (runtime/wd.h, rlk_wd_keep): each permit is a kept entry renewed
 * with psemaphore/update_lease every lease/3 by the permit task below, on
 * the watchdog's thread and connection (no thread or connection of its
 * own):
 *   - reply 1: renewed; the lease now counts from this round's send time;
 *   - reply 0: the permit is gone (expired and reclaimed, or released by
 *     someone else): never renewed again, reported RLK_LOST_GONE;
 *   - an error: retried a period later; once lease ms (minus the client's
 *     lost margin) have passed since the send time of the last successful
 *     renewal, the permit may have been reclaimed: reported
 *     RLK_LOST_EXPIRED, not renewed again.
 * The keeper never releases; stop it first (no renewal of its permits and
 * no lost report follows), then release the permits.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "client/client.h"
#include "client/clock.h"
#include "client/error.h"
#include "kinds/psemaphore.h"
#include "runtime/fam.h"
#include "runtime/wd.h"

typedef struct rlk_kept {
    struct rlk_psemaphore_keeper *k;
    char *hex;                  /* the id as the caller gave it */
    unsigned char raw[RLK_PSEM_RAW_ID_MAX];
    size_t raw_len;
    const char *publish;        /* the client's publish argument (update_lease's ARGV[3]) */
    rlk_wd_kept *entry;         /* on the watchdog; NULL once stopped */
} rlk_kept;

struct rlk_psemaphore_keeper {
    rlk_psemaphore *s;          /* borrowed */
    int n;
    rlk_kept *ids;
    long long lease_ms;
    rlk_lost_fn fn;
    void *ud;
    atomic_int first_lost;      /* the first loss's reason (0: none): set once, by the watchdog */
};

/* ---------------------------------------------------------------- the task */

/* KEYS (name, timeouts, channel), ARGV (lease, the raw id, publish). */
static int rlk_keeper_build(const rlk_renew_item *items, int m, const char *lease,
                            const char **keys, int *nkeys, const char **args, size_t *lens)
{
    const rlk_kept *p = items[0].arg;

    (void)m;
    for (int k = 0; k < items[0].nkeys; k++)
        keys[k] = items[0].keys[k];
    *nkeys = items[0].nkeys;
    args[0] = lease;
    args[1] = (const char *)p->raw;
    lens[1] = p->raw_len;
    args[2] = p->publish;
    return 3;
}

/* An integer: 1 renewed, else gone; anything else (an error) unknown. */
static int rlk_keeper_reply(int rc, const redisReply *r, int m, int *results)
{
    (void)m;
    results[0] = rc == RLK_OK && r->type == REDIS_REPLY_INTEGER ? r->integer == 1 : -1;
    return 0;
}

/* The watchdog's task for kept permits (runtime/wd.h): one call each. */
static const rlk_renew_task rlk_keeper_task = {
    "psemaphore/update_lease", RLK_RENEW_ALONE, rlk_keeper_build, rlk_keeper_reply, NULL
};

/* On the watchdog thread: permit p was declared lost. */
static void rlk_keeper_lost(void *ud, int reason)
{
    rlk_kept *p = ud;
    rlk_psemaphore_keeper *k = p->k;
    int none = 0;

    atomic_compare_exchange_strong(&k->first_lost, &none, reason);
    if (k->fn)
        k->fn(k->s->b.name, p->hex, reason, k->ud);
}

/* ---------------------------------------------------------------- life cycle */

/* Copies and decodes the ids, renews each once (now: it must be held) and
 * hands it to the watchdog. */
static int rlk_keeper_take(rlk_psemaphore_keeper *k, const char *const *ids)
{
    rlk_psemaphore *s = k->s;
    /* not a lock: only its task and keys count (update_lease's: name, timeouts, channel) */
    rlk_hold_spec h = {.kind = -1, .name = s->b.name, .nkeys = 3,
                       .keys = {s->b.name, s->b.key[RLK_PROTO_KEY_TIMEOUTS], s->b.channel}, .task = &rlk_keeper_task};
    int rc = RLK_OK;
    for (int i = 0; i < k->n && rc == RLK_OK; i++) {
        rlk_kept *p = &k->ids[i];
        long long sent = rlk_clock_now_ns();

        p->k = k;
        if (!(p->hex = strdup(ids[i])))
            return rlk_set_error(s->b.c, RLK_ERR_NOMEM, "keep %s: out of memory", s->b.name);
        rc = rlk_psem_decode_id(s, "keep", ids[i], p->raw, &p->raw_len);
        if (rc == RLK_OK)
            rc = rlk_psemaphore_update_lease(s, ids[i], k->lease_ms);
        p->publish = rlk_publish_arg(s->b.c);   /* decided by now: the task does no I/O */
        h.owner = p->hex;
        if (rc == RLK_OK && !(p->entry = rlk_wd_keep(s->b.rt->wd, &h, p, k->lease_ms, sent,
                                                     rlk_keeper_lost, p)))
            rc = rlk_err(s->b.c);
    }
    return rc;
}

rlk_psemaphore_keeper *rlk_psemaphore_keep(rlk_psemaphore *s, int n, const char *const *ids,
                                           long long lease_ms, rlk_lost_fn fn, void *userdata)
{
    rlk_psemaphore_keeper *k;

    if (!s)
        return NULL;
    if (!ids || rlk_fam_check_range(s->b.c, "keep", s->b.name, "permits", n, 1, RLK_PERMITS_MAX) ||
        rlk_fam_check_range(s->b.c, "keep", s->b.name, "lease_ms", lease_ms, 3, RLK_NUM_MAX)) {
        if (!ids)
            rlk_set_error(s->b.c, RLK_ERR_ARG, "keep %s: no permit ids", s->b.name);
        return NULL;
    }
    if (!rlk_script_find(s->b.c, rlk_keeper_task.script)) {
        rlk_set_error(s->b.c, RLK_ERR_NOSUCHSCRIPT, "keep %s: no script psemaphore/update_lease",
                      s->b.name);
        return NULL;
    }
    if (!(k = calloc(1, sizeof *k)) || !(k->ids = calloc((size_t)n, sizeof *k->ids))) {
        free(k);
        rlk_set_error(s->b.c, RLK_ERR_NOMEM, "keep %s: out of memory", s->b.name);
        return NULL;
    }
    atomic_init(&k->first_lost, 0);
    k->s = s;
    k->n = n;
    k->lease_ms = lease_ms;
    k->fn = fn;
    k->ud = userdata;
    if (rlk_keeper_take(k, ids) != RLK_OK) {
        rlk_fam_err e;

        rlk_fam_err_keep(s->b.c, &e);
        rlk_psemaphore_keeper_stop(k);    /* the permits already kept go off the watchdog */
        rlk_fam_err_put(s->b.c, &e, RLK_OK);
        return NULL;
    }
    return k;
}

int rlk_psemaphore_keeper_lost(rlk_psemaphore_keeper *k)
{
    return k ? atomic_load(&k->first_lost) : 0;
}

/* Takes every permit off the watchdog (no renewal or report follows), then frees the keeper. */
void rlk_psemaphore_keeper_stop(rlk_psemaphore_keeper *k)
{
    if (!k)
        return;
    for (int i = 0; i < k->n; i++) {
        rlk_wd_unkeep(k->s->b.rt->wd, k->ids[i].entry);
        free(k->ids[i].hex);
    }
    free(k->ids);
    free(k);
}
