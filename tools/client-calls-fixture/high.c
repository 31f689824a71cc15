/* SPDX-License-Identifier: BSD-3-Clause */
/* high.c - see high.h: the table's one filler (calls_table_control) or one of two
 * (calls_table_two, with other.c). */
#include "high.h"
#include "low.h"

static int high_ping(int x)
{
    return low_value(x) + 2;
}

static const low_up high_up = {
    .ping = high_ping,
};

int high_start(int x)
{
    return low_run(&high_up, x);
}
