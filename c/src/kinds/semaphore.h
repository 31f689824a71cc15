/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * semaphore.h - what semaphore.c tells beyond the public API: its calls
 * (kinds/proto.h), run by both APIs.
 *
 * Not installed; not a stable API.
 */
#ifndef RLK_KINDS_SEMAPHORE_H
#define RLK_KINDS_SEMAPHORE_H

#include "kinds/proto.h"

extern const rlk_proto_call rlk_semaphore_acquire_call, rlk_semaphore_release_call,
    rlk_semaphore_release_if_exists_call,
    rlk_semaphore_try_set_ttl_call;

#endif /* RLK_KINDS_SEMAPHORE_H */
