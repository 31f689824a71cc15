/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * async_names.h - the short names the async suites (async_cases.c,
 * async_elect.c, async_cluster.c, async_clkinds.c) write their requests with, for the shared
 * request rules and clients of async_procs.h. Included by those files only,
 * after async_procs.h.
 */
#ifndef RLK_TEST_ASYNC_NAMES_H
#define RLK_TEST_ASYNC_NAMES_H

#include "async_procs.h"

#define in_call ap_in_call          /* set around every rlk_async_* request call */
#define freed ap_freed              /* set once rlk_async_free has returned */
#define rule_breaks ap_rule_breaks  /* callbacks from inside a call, after free, or twice */
#define on_res ap_on_res
#define on_info ap_on_info
#define res_clear ap_res_clear
#define res_done ap_res_done
#define REQ AP_REQ
#define wait_res ap_wait_res
typedef ap_res res;

#endif /* RLK_TEST_ASYNC_NAMES_H */
