/* SPDX-License-Identifier: BSD-3-Clause */
/* other.c - see other.h. */
#include "low.h"
#include "other.h"

static int other_ping(int x)
{
    return low_value(x) - 2;
}

const low_up other_up = {
    .ping = other_ping,
};

int other_start(int x)
{
    return low_run(&other_up, x);
}
