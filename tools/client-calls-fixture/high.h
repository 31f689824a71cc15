/* SPDX-License-Identifier: BSD-3-Clause */
/* high.h - the upper module of the control (low.h): it fills low's table and calls low. */
#ifndef RLK_CALLS_FIXTURE_HIGH_H
#define RLK_CALLS_FIXTURE_HIGH_H

int high_start(int x);

#endif
