/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * a_kind.c - a kind's call of kinds/proto.h on the loop (a_kind.h).
 */
#include <stdlib.h>

#include "rlk.h"
#include "kinds/proto.h"
#include "async/a_common.h"
#include "async/a_kind.h"

rlk_ae_call *rlk_a_kind_call(rlk_async *ac, const rlk_proto_call *pc, const char *name,
                             const rlk_proto_argvals *vals, char *const *tail,
                             rlk_ae_reply_fn fn, void *arg)
{
    rlk_proto_argvals v = *vals;
    rlk_proto_built b;
    rlk_ae_call *call = NULL;
    const char **all;
    int n;

    if (!v.publish)
        v.publish = rlk_ae_publish_arg(ac);
    if (rlk_proto_build(pc, name, &v, &b) == 0 && !tail)
        call = rlk_ae_scriptv(ac, pc->script, b.nkeys, b.keys, b.nargs, b.av.v, b.av.len, fn,
                              arg);
    else if (b.nkeys >= 0 && b.nargs >= 0 &&
             (all = rlk_a_common_join(b.av.v, b.nargs, tail, &n)) != NULL) {
        call = rlk_ae_script(ac, pc->script, b.nkeys, b.keys, n, all, fn, arg);
        free(all);
    }
    rlk_proto_built_free(&b);
    return call;
}

rlk_ae_call *rlk_a_values_counts(rlk_async *ac, const char *name, const char *owner,
                                 char *const *values, rlk_ae_reply_fn fn, void *arg)
{
    rlk_proto_argvals v = {.owner = owner};

    return rlk_a_kind_call(ac, &rlk_proto_fastmulti_counts, name, &v, values, fn, arg);
}
