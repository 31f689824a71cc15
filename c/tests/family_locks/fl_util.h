/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fl_util.h - helpers of the lock-family tests (fl_rwlock.c, fl_fair.c,
 * fl_fenced.c): a lost-lock recorder and a fair-queue probe. Hold logs,
 * children, probes and the stall detector come from c/tests/support.
 */
#ifndef RLK_FL_UTIL_H
#define RLK_FL_UTIL_H

#include <stddef.h>

#include "holdlog.h"
#include "tk_util.h"

/* ---------------------------------------------------------------- lost-lock recorder */

typedef struct fl_lost {
    pthread_mutex_t mu;
    tk_latch fired;
    int count;
    int kind;
    int reason;
    int plain_count;        /* calls of the plain (kind-less) callback */
    char name[128];
    char owner[128];
} fl_lost;

void fl_lost_init(fl_lost *g);
void fl_lost_destroy(fl_lost *g);
/* Installs both callbacks on c, recording into g. */
void fl_lost_install(rlk_client *c, fl_lost *g);

/* ---------------------------------------------------------------- probes */

/* Bounded poll until LINDEX key index equals value: 0, or -1 on timeout. */
int fl_wait_lindex(const rlk_fx_server *s, const char *key, long index, const char *value,
                   long long timeout_ms);

#endif /* RLK_FL_UTIL_H */
