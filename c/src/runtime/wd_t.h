/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * wd_t.h - struct rlk_wd and its entries: not a module's interface, the two
 * files of the wd module share it: wd_reg.c (the hold registry, the lock
 * API's calls on it) and wd.c (the watchdog thread). A struct rlk_hold is
 * the thread's entry of a lease-less hold (its holds.h record's wd) or kept.
 */
#ifndef RLK_WD_T_H
#define RLK_WD_T_H

#include <pthread.h>

#include "runtime/wd.h"

struct rlk_hold {
    rlk_hold *next;
    rlk_holds_rec *rec;         /* its hold's record in the registry (NULL: kept, or lost) */
    rlk_renew_id id;            /* kind, name, owner, its task and its KEYS */
    int inflight;               /* part of a renewal on the wire */
    int failing;                /* the last renewal attempt failed */
    long long last_ok_ns;       /* send time of the acquire or of the last successful renewal */
    long long next_due_ns;
    rlk_sub_chan *sub_ch;       /* watchdog entries: joined to channel while held */
    long long join_ns;          /* when to join channel (0: joined, or not to) */
    char *channel;
    int nudged;                 /* a message came while in flight: renew again at once */
    int leave_now;              /* rlk_hold_spec.leave_now: its channel does not linger */
    long long renew_ms;         /* the lease a renewal sets */
    long long period_ns;        /* renewed this often */
    long long lost_after_ns;    /* lost this long after last_ok_ns, failing or not */
    /* Kept entries (rlk_wd_keep; rec NULL): */
    const void *arg;            /* the task's item.arg */
    rlk_wd_lost_fn lost_fn;     /* its lost hook; NULL: a hold's entry */
    void *lost_ud;
    int lost;                   /* declared lost: the reason (off the thread's list, on the
                                   round's lost entries; a kept one is freed by rlk_wd_unkeep) */
};

struct rlk_wd {
    rlk_client *c;
    rlk_rt_counters *counters;
    rlk_sub *sub;               /* the client's subscriber: held locks' channels */
    rlk_wd_report_fn report;    /* installed by the runtime state (rt.c) */
    void *report_ud;
    pthread_mutex_t mu;
    pthread_cond_t wake;        /* the thread: a new watchdog entry, or stop */
    pthread_cond_t settled;     /* a renewal finished: its entries are out of flight */
    rlk_holds *table;           /* the registry: a record per hold (holds.h) */
    rlk_hold *holds;            /* the thread's entries: of its lease-less holds, and the kept
                                   ones (rlk_wd_keep: renewed, not held) */
    int reporting;              /* the thread is running lost reports */
    rlk_holds *lost;            /* lost marks: a record per hold declared lost, with the lease
                                   it was lost with (lease_ns, lease_ms, kind_data) */
    int started;
    int stop;
    int waiting;                /* the thread waits on wake, until wait_until_ns (-1: no end) */
    long long wait_until_ns;    /* a new entry due later needs no signal: the thread looks then */
    int fresh;                  /* a watchdog hold was taken since the thread's last look */
    pthread_t thread;
    long long lease_ms;
    long long round_period_ns;  /* the shortest period among this round's entries */
    long long round_limit_ns;   /* this round's replies are waited for at most this long (from
                                   the round's start; <= 0: an entry is past due; LLONG_MAX:
                                   no entry) */

    /* Used by the thread only. */
    redisContext *ctx;
    int conn_failed;            /* a connection error in this round: skip its other calls */
    rlk_hold *batch[RLK_WD_BATCH_MAX];
    int results[RLK_WD_BATCH_MAX];
    rlk_renew_item items[RLK_WD_BATCH_MAX]; /* one call's entries, as its task sees them */
    const char *keys[RLK_WD_CALL_KEYS_MAX];
    const char *args[RLK_WD_CALL_ARGS_MAX];
    size_t lens[RLK_WD_CALL_ARGS_MAX];
};

/* wd_reg.c, wd->mu held. */
void rlk_wd_unlink(rlk_wd *wd, rlk_hold *e);
/* Leaves e's channel (if it joined one). */
void rlk_hold_leave(rlk_wd *wd, rlk_hold *e);
void rlk_hold_free(rlk_wd *wd, rlk_hold *e);
/* An entry of h renewed with lease_ms (every lease/3; lost by rlk_renew_lost_after), first on
 * wd->holds; NULL: out of memory. */
rlk_hold *rlk_hold_new(rlk_wd *wd, const rlk_hold_spec *h, long long lease_ms);
void rlk_wd_mark(rlk_wd *wd, const rlk_holds_rec *r);
/* wd.c, wd->mu held: starts the thread once. */
int rlk_wd_start(rlk_wd *wd);

#endif
