/*
 * kind_mark.h - telling a semaphore from a count-down latch (kind_mark.c).
 *
 * Both are a string key NAME holding an integer (Redisson's layouts), so the
 * data alone cannot tell them apart. rlk adds a marker next to the key it
 * creates: the string {NAME}:rlk_kind holding "semaphore" or "latch" (same
 * hash slot as NAME; Redisson ignores it, so the layout stays compatible).
 * A marker counts only while NAME exists: a stale one (the latch opened, the
 * key deleted) is ignored and overwritten. Without a marker (a key Redisson
 * or an older rlk made) the one sign left is a permit-expirable semaphore's
 * {NAME}:timeout sorted set: a latch never has one.
 */
#ifndef RLK_KIND_MARK_H
#define RLK_KIND_MARK_H

#include "lock_cli.h"

/* The marker's key: "{NAME}:" RLK_KM_SUFFIX_NAME. */
#define RLK_KM_SUFFIX_NAME "rlk_kind"
#define RLK_KM_SEMAPHORE "semaphore"
#define RLK_KM_LATCH "latch"
/* rlk lock --fair marks the fair lock it holds: held with nobody queued, its hash is a
 * reentrant lock's. The marker lives as long as the hold's lease (rlk_km_mark_for), and the
 * holding rlk renews it every third of that while the hold lasts (rlk_km_renew): one left by a
 * holder killed with -9 expires within a lease, as the lock does. Its holder's last release
 * removes it at once (NAME gone). */
#define RLK_KM_FAIR "fair"

/* -1 when NAME may be used as `kind` (no key, a key of that kind, or one that
 * cannot be told); else the exit code (2) after a one-line error naming what
 * NAME is; an error talking to the server: its exit code (message printed). */
int rlk_km_check(rlk_client *c, const char *name, const char *kind, const char *what);
/* For the reentrant, fair and fenced lock: -1 unless NAME is a read-write lock's
 * hash (it has a `mode` field), which they would otherwise wait for as if it were
 * held by another; then exit 2 after a one-line error. Errors (a key of another
 * type) are left to the acquire, whose script names them. */
int rlk_km_check_not_rwlock(rlk_client *c, const char *name, const char *what);
/* Writes the marker ({NAME}:rlk_kind = kind) / removes it. RLK_OK or an rlk code. */
int rlk_km_mark(rlk_client *c, const char *name, const char *kind);
int rlk_km_unmark(rlk_client *c, const char *name);
/* A marker that lives ttl_ms (SET NX PX): a key of that name already there is left alone,
 * unless it holds kind (a marker of the same kind, left by a holder that died or kept by a
 * nested hold of NAME), whose life is then set to ttl_ms too (rlk_km_renew). An application's
 * key of that name is never written. RLK_OK or an rlk code. */
int rlk_km_mark_for(rlk_client *c, const char *name, const char *kind, long long ttl_ms);
/* The marker's life set to ttl_ms (PEXPIRE) when it holds kind; else nothing. RLK_OK or an
 * rlk code. As rlk_km_unmark_if, a read then a write: not one transaction. */
int rlk_km_renew(rlk_client *c, const char *name, const char *kind, long long ttl_ms);
/* Removes the marker when it holds kind (an application's key of that name is never
 * deleted). */
int rlk_km_unmark_if(rlk_client *c, const char *name, const char *kind);

#endif /* RLK_KIND_MARK_H */
