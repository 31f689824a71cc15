/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * low.h - the control of tools/client-calls.lua (ctest calls_table_control): a lower module that
 * calls up through a table of function pointers, as the async engine once did through ae_up. Not
 * part of rlk.
 */
#ifndef RLK_CALLS_FIXTURE_LOW_H
#define RLK_CALLS_FIXTURE_LOW_H

typedef struct low_up {
    int (*ping)(int x);
    int (*pong)(int x);
} low_up;

/* Calls up->ping (the arrow back up that nm does not see). */
int low_run(const low_up *up, int x);
/* What the upper modules call directly. */
int low_value(int x);

#endif
