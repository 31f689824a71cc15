/* SPDX-License-Identifier: BSD-3-Clause */
/* other.h - a second filler of low's table (calls_table_two): the call through it varies, so it is
 * no arrow. */
#ifndef RLK_CALLS_FIXTURE_OTHER_H
#define RLK_CALLS_FIXTURE_OTHER_H

int other_start(int x);

#endif
