/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * nrlock.c - the non-reentrant lock API (rlk_nrlock_*): Redisson's
 * RedissonNonReentrantLock on nonreentrant/{acquire,release}, with the
 * reentrant lock's reentrant/renew(_many) and reentrant/force_release (the
 * same hash `name`, field <owner> -> 1, and channel
 * redisson_lock__channel:{name}; docs/locks/nonreentrant.md).
 *
 * A second acquisition by the holder is refused (RLK_ERR_REENTRY), never
 * counted: from the client's hold registry before any I/O, or from the
 * script (a hold this client does not record: another handle's fixed id,
 * another process with the same id).
 *
 * Holds are recorded as the reentrant lock's (RLK_KIND_LOCK: the data is
 * the same, and the watchdog renews them with the reentrant lock's task).
 * Waiting is the fenced lock's: the process-wide local queue of `name`,
 * only its head subscribed to the channel and retrying.
 */
#include "kinds/handle.h"
#include "kinds/lock.h"
#include "kinds/names.h"
#include "runtime/fam.h"
#include "runtime/fam_hold.h"

struct rlk_nrlock {
    rlk_fam_base b;             /* channel: redisson_lock__channel:{name}; q: the local queue of
                                   name */
};

static const rlk_fam_kind rlk_nrlock_kind = {
    "rlk_nrlock_new", "lock", RLK_NAMES_CH_LOCK, rlk_fam_prefix_name, NULL
};

/* ---------------------------------------------------------------- handles */

rlk_nrlock *rlk_nrlock_new(rlk_client *c, const char *name)
{
    return rlk_handle_new(c, name, sizeof(rlk_nrlock), &rlk_nrlock_kind, RLK_HANDLE_QUEUE_NAME,
                          "nonreentrant", "channel");
}

void rlk_nrlock_free(rlk_nrlock *l)
{
    rlk_fam_free(l);
}

const char *rlk_nrlock_name(const rlk_nrlock *l)
{
    return l ? l->b.name : NULL;
}

int rlk_nrlock_set_owner(rlk_nrlock *l, const char *owner)
{
    return l ? rlk_fam_id_set(l->b.c, &l->b.id, owner, 0, "rlk_nrlock_set_owner") : RLK_ERR_ARG;
}

int rlk_nrlock_owner(const rlk_nrlock *l, char *buf, size_t len)
{
    return l ? rlk_handle_owner(&l->b, buf, len, "rlk_nrlock_owner") : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- locking */

/* Counted in the metrics as a reentrant lock's; a second acquisition by the holder:
 * RLK_ERR_REENTRY (kinds/handle.c's driver) */
int rlk_nrlock_try_lock(rlk_nrlock *l, long long wait_ms, long long lease_ms)
{
    rlk_handle_call hc = rlk_handle_call_begin(l ? &l->b : NULL);
    rlk_handle_acq a;
    int rc = l ? rlk_handle_acq_start(&a, l, &l->b, "rlk_nrlock_owner", &rlk_lock_nr_row,
                                      lease_ms, NULL)
               : RLK_ERR_ARG;

    if (rc == RLK_OK)
        rc = rlk_handle_drive(&a, wait_ms);
    return rlk_handle_call_end(&hc, RLK_KIND_LOCK, rc);
}

int rlk_nrlock_lock(rlk_nrlock *l, long long lease_ms)
{
    return rlk_nrlock_try_lock(l, -1, lease_ms);
}

/* ---------------------------------------------------------------- releasing */

/* The local queue of `name` told */
int rlk_nrlock_unlock(rlk_nrlock *l)
{
    return l ? rlk_handle_unlock(&l->b, &rlk_lock_nr_row, "non-reentrant lock",
                                 "rlk_nrlock_owner", l->b.q, NULL)
             : RLK_ERR_ARG;
}

/* reentrant/force_release, as the reentrant lock's force unlock, with the
 * lock-delay key {name}:rlk_delay: the two locks share the hash, so a lost
 * reentrant hold's delay blocks this lock's name as well, and a force
 * unlock ends it (deleted, message 0 published) as rlk_lock_force_unlock
 * does. */
int rlk_nrlock_force_unlock(rlk_nrlock *l, int *released)
{
    return l ? rlk_handle_force(&l->b, &rlk_lock_nr_row, "delay", NULL, 0, l->b.q, released)
             : RLK_ERR_ARG;
}

int rlk_nrlock_force_unlock_named(rlk_nrlock *l, int *released)
{
    return l ? rlk_handle_force(&l->b, &rlk_lock_nr_row, "delay", NULL, 1, l->b.q, released)
             : RLK_ERR_ARG;
}

/* ---------------------------------------------------------------- queries */

int rlk_nrlock_is_locked(rlk_nrlock *l, int *locked)
{
    return rlk_fam_is_locked(l ? &l->b : NULL, locked);
}

/* The registry's reentrant-lock entries */
int rlk_nrlock_is_held_by_me(rlk_nrlock *l, int *held)
{
    return rlk_fam_is_held(l ? &l->b : NULL, RLK_KIND_LOCK, "rlk_nrlock_owner", held);
}

int rlk_nrlock_lease(rlk_nrlock *l, long long *start_ns, long long *deadline_ns)
{
    return rlk_fam_held_lease(l ? &l->b : NULL, RLK_KIND_LOCK, "rlk_nrlock_owner", start_ns,
                              deadline_ns);
}

int rlk_nrlock_remaining_ttl(rlk_nrlock *l, long long *ttl_ms)
{
    return rlk_fam_remaining_ttl(l ? &l->b : NULL, ttl_ms);
}
