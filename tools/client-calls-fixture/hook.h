/* SPDX-License-Identifier: BSD-3-Clause */
/* hook.h - the upper module of calls_hook_control (low.h): it fills low's hook in code and calls
 * low. */
#ifndef RLK_CALLS_FIXTURE_HOOK_H
#define RLK_CALLS_FIXTURE_HOOK_H

int hook_start(int x);

#endif
