/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * low.h - the control of tools/client-calls.lua (ctest calls_table_control): a lower module that
 * calls up through a table of function pointers, as the async engine once did through ae_up, or
 * through a hook that an upper module fills in code (calls_hook_control), as it did through
 * ac->destroy. Not part of rlk.
 */
#ifndef RLK_CALLS_FIXTURE_LOW_H
#define RLK_CALLS_FIXTURE_LOW_H

typedef struct low_up {
    int (*ping)(int x);
    int (*pong)(int x);
} low_up;

/* A hook filled in code (calls_hook_control, with hook.c). */
typedef struct low_state {
    int (*done)(int x);
} low_state;

/* Calls up->ping (the arrow back up that nm does not see). */
int low_run(const low_up *up, int x);
/* Calls s->done, when set (the same, through a hook). */
int low_finish(const low_state *s, int x);
/* What the upper modules call directly. */
int low_value(int x);

#endif
