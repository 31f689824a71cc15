/* SPDX-License-Identifier: BSD-3-Clause */
/* The control of ctest abi: linked into a copy of librlk.so (rlk_abi_control), this internal
 * function is exported although no installed header declares it; tools/check-abi.lua must
 * report it. */
__attribute__((visibility("default"))) int rlk_abi_planted_internal(void);

int rlk_abi_planted_internal(void)
{
    return 0;
}
