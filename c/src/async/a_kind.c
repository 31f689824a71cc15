/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_kind.c - a kind's call of kinds/proto.h on the loop (a_kind.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rlk.h"
#include "kinds/fairlock.h"
#include "kinds/fenced.h"
#include "kinds/lock.h"
#include "kinds/proto.h"
#include "kinds/rwlock.h"
#include "async/a_common.h"
#include "async/a_kind.h"

static const rlk_proto *const rlk_a_kind_rows[RLK_KIND_WRITE + 1] = {
    [RLK_KIND_LOCK] = &rlk_lock_row, [RLK_KIND_FAIR] = &rlk_fairlock_row,
    [RLK_KIND_FENCED] = &rlk_fenced_row, [RLK_KIND_READ] = &rlk_rwlock_read_row,
    [RLK_KIND_WRITE] = &rlk_rwlock_write_row,
};

const rlk_proto *rlk_a_kind_row(int kind)
{
    return kind >= RLK_KIND_LOCK && kind <= RLK_KIND_WRITE ? rlk_a_kind_rows[kind] : NULL;
}

/* The rows of rlk_async_force_unlock_named, made once. */
static rlk_proto rlk_a_kind_named_rows[RLK_KIND_WRITE + 1];
static pthread_once_t rlk_a_kind_named_once = PTHREAD_ONCE_INIT;

static void rlk_a_kind_named_init(void)
{
    for (int k = RLK_KIND_LOCK; k <= RLK_KIND_WRITE; k++) {
        rlk_proto *row = &rlk_a_kind_named_rows[k];

        *row = k == RLK_KIND_LOCK ? rlk_lock_delay_row : *rlk_a_kind_rows[k];
        row->force_args = strcmp(row->force_args, "publish") == 0 ? "publish named"
                          : "mode claim_ms publish named";
    }
}

const rlk_proto *rlk_a_kind_named(int kind)
{
    if (kind < RLK_KIND_LOCK || kind > RLK_KIND_WRITE)
        return NULL;
    pthread_once(&rlk_a_kind_named_once, rlk_a_kind_named_init);
    return &rlk_a_kind_named_rows[kind];
}

const rlk_proto *rlk_a_kind_nr(int kind)
{
    return kind == RLK_KIND_LOCK ? &rlk_lock_nr_row
           : kind == RLK_KIND_FAIR ? &rlk_fairlock_nr_row : NULL;
}

rlk_ae_call *rlk_a_kind_call(rlk_async *ac, const rlk_proto_call *pc, const char *name,
                             const rlk_proto_argvals *vals, char *const *tail,
                             rlk_ae_reply_fn fn, void *arg)
{
    return rlk_a_kind_callo(ac, pc, NULL, name, vals, tail, fn, arg);
}

rlk_ae_call *rlk_a_kind_callo(rlk_async *ac, const rlk_proto_call *pc, const char *opt,
                              const char *name, const rlk_proto_argvals *vals, char *const *tail,
                              rlk_ae_reply_fn fn, void *arg)
{
    rlk_proto_argvals v = *vals;
    rlk_proto_built b;
    rlk_ae_call *call = NULL;
    const char **all;
    int n;

    if (!v.publish)
        v.publish = rlk_ae_publish_arg(ac);
    if (rlk_proto_build_with(pc, opt, NULL, NULL, name, &v, &b) == 0 && !tail)
        call = rlk_ae_scriptv(ac, pc->script, b.nkeys, b.keys, b.nargs, b.av.v, b.av.len, fn,
                              arg);
    else if (b.nkeys >= 0 && b.nargs >= 0 &&
             (all = rlk_a_common_join(b.av.v, b.nargs, tail, &n)) != NULL) {
        call = rlk_ae_scriptv(ac, pc->script, b.nkeys, b.keys, n, all, NULL, fn, arg);
        free(all);
    }
    rlk_proto_built_free(&b);
    return call;
}
