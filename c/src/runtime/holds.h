/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * holds.h - the one table of a client's holds, for both APIs (holds.c): a
 * hash table of records keyed by (kind, name, owner), with what both APIs
 * record of a hold. Pure: no lock, no I/O. Two drivers: the blocking
 * registry (wd_reg.c, under its wd->mu) and the async client's table
 * (async/a_hold.c, on its loop). Each driver's watchdog entry of a renewed
 * hold is its own (the watchdog thread's struct rlk_hold, wd_t.h; the
 * async rlk_ae_hold), kept in the record's wd, never read here.
 *
 * Times are CLOCK_MONOTONIC ns; the async driver's ms are converted at its edge.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_HOLDS_H
#define RLK_HOLDS_H

#include <stddef.h>

typedef struct rlk_holds_rec {
    struct rlk_holds_rec *next;     /* its bucket's */
    size_t bucket;                  /* the bucket it is in (rlk_holds_get sets it) */
    unsigned long long id;          /* unique in its table (rlk_holds_get numbers them) */
    int kind;                       /* enum rlk_lock_kind */
    char *name;
    char *owner;
    long long count;                /* acquisitions through this client not yet released */
    long long lease_ms;             /* of the last acquisition (a partial release restores it) */
    long long lease_ns;             /* a fixed lease: the send time of the call that set it; the
                                       async driver: 0 after a lease-less acquisition */
    long long token;                /* the token of the latest acquisition (fenced; election) */
    long long kind_data;            /* the kind's datum, never read here (the lock-delay) */
    long long acquired_ns;          /* when the count went from 0 to 1 (the hold metric) */
    const void *row;                /* what the kind took it with (async: its kinds/proto row) */
    void *wd;                       /* the driver's watchdog entry; NULL: not renewed */
} rlk_holds_rec;

typedef struct rlk_holds rlk_holds;

/* A walk over a table: zeroed to start; the record it returned may be dropped. */
typedef struct rlk_holds_iter {
    size_t b;
    rlk_holds_rec *next;
} rlk_holds_iter;

/* An empty table; NULL: out of memory. _free: a table, and every record left in it (their
 * watchdog entries are the driver's to free first); NULL: nothing. */
rlk_holds *rlk_holds_new(void);
void rlk_holds_free(void *table);
/* The record of (kind, name, owner), or NULL. _get: made (count 0, the rest 0) when there is
 * none; NULL: out of memory. */
rlk_holds_rec *rlk_holds_find(const rlk_holds *t, int kind, const char *name, const char *owner);
rlk_holds_rec *rlk_holds_get(rlk_holds *t, int kind, const char *name, const char *owner);
/* Takes r out of t (not freed: rlk_holds_rec_free); _drop: out and freed. NULL: nothing. */
void rlk_holds_take(rlk_holds *t, rlk_holds_rec *r);
void rlk_holds_drop(rlk_holds *t, rlk_holds_rec *r);
void rlk_holds_rec_free(rlk_holds_rec *r);
/* The next record of the walk (name: only those of that name; NULL: all); NULL at the end. */
rlk_holds_rec *rlk_holds_next(const rlk_holds *t, const char *name, rlk_holds_iter *it);
/* The metrics' gauges: records, and of them those with a watchdog entry (t NULL: 0, 0). */
void rlk_holds_gauges(const rlk_holds *t, long long *held, long long *watchdog);

#endif /* RLK_HOLDS_H */
