/* SPDX-License-Identifier: BSD-3-Clause */
/* The control of ctest abi: a header declaring one function that librlk.so does not define;
 * tools/check-abi.lua must report it. */
#ifndef RLK_ABI_PLANTED_H
#define RLK_ABI_PLANTED_H

#include "rlk_export.h"

RLK_API int rlk_abi_planted_undefined(void);

#endif
