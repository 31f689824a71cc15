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
 * reentrant lock's. Its holder's last release removes the marker (NAME gone); one left by a
 * holder that died is ignored once NAME is gone, and replaced by the next rlk lock --fair. */
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
/* The same, leaving a key that is there already (SET NX) / that holds another value than kind
 * (an application's key of that name is never written or deleted). */
int rlk_km_mark_new(rlk_client *c, const char *name, const char *kind);
int rlk_km_unmark_if(rlk_client *c, const char *name, const char *kind);

#endif /* RLK_KIND_MARK_H */
